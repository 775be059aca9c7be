"""Benchmark: aclnnSoftmax (last dim) and aclnnRmsNorm (gamma over the last dim) at
[8192, 4096] fp16 on Ascend910B1, all cores.

For each operator it prints

* the simulated kernel time (Task Duration of the SoftmaxV2 / RmsNorm launch, µs) next to
  two floors no kernel of this design can beat:
  - the **HBM floor**: the bytes the kernel moves (GM read + written) over the SoC preset's
    HBM bandwidth (``soc.hbm_bandwidth``) — with a cold L2; the bytes that actually
    reached HBM (the simulator's L2 model keeps what the host copy just wrote) are shown
    beside it;
  - the **vector floor**: the kernel's vector instructions at the elements-per-cycle rates
    of docs/reference/hardware.md §2.1 (no issue overhead, no bank conflicts), for the core
    with the most rows, at the preset's clock (:func:`vector_floor_cycles` lists them);
  and the ratio of the kernel time to the larger floor (target: at most 1.5x), with the
  busiest core's simulated PIPE_V / MTE2 / MTE3 time, which says what the kernel waits for;
* the simulator's host wall time (first phase, launch, functional run and timing replay)
  next to what a user would otherwise run on the same data (baselines.py): numpy computing
  the operator in float32 and torch (CPU: ``torch.softmax``,
  ``torch.nn.functional.rms_norm``; "not installed" without torch), timed in one process,
  interleaved (sim, numpy, torch, ...), the fastest of ``--repeats`` runs each, and the
  ratios; the float64 golden checks the simulator's result (not timed).

Run: ``python benchmarks/bench_softmax_rms_norm.py [--rows 8192] [--cols 4096] [--repeats 5]
[--json FILE]``
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baselines  # noqa: E402
import harness  # noqa: E402

SOC = "Ascend910B1"
EPS = 1e-6


def vector_floor_cycles(op: str, cols: int) -> float:
    """Vector cycles of one fp16 row of ``cols`` elements at the §2.1 rates (elements per
    cycle per AIV: Cast half<->float, Add/Sub/Mul/Max/Adds/Muls float 64; Exp float 32;
    Duplicate float 64; WholeReduceSum/Max float 64/7, i.e. 7 cycles per repeat).

    Softmax (kernels/softmax/kernel.py, AR): Cast, Duplicate + Max accumulate +
    WholeReduceMax, Adds, Exp, Duplicate + Add accumulate + WholeReduceSum, Muls, Cast.
    RmsNorm (kernels/rms_norm/kernel.py, NORMAL): Cast, Mul (x^2), Duplicate + Add
    accumulate + WholeReduceSum, Muls (rstd), Mul (gamma), Cast.
    """
    simple = cols / 64                      # one 64-element/cycle instruction over the row
    dup, whole = 64 / 64, 7                 # the 64-lane work repeat, one WholeReduce repeat
    if op == "Softmax":
        return 6 * simple + cols / 32 + 2 * (dup + whole)
    return 6 * simple + dup + whole


def warm_bytes(rows: int, cols: int) -> int:
    """Bytes a measurement's process touches by the end of the simulator's first run."""
    return 16 * rows * cols


def measure(op: str, x: np.ndarray, gamma: np.ndarray, repeats: int = 5) -> dict:
    """One operator through aclnn on a fresh Ascend910B1 runtime and its baselines on the
    same arrays, interleaved (sim, numpy, torch, ...); the main kernel's profile.

    The baselines (baselines.py): numpy computes in float32 from x cast once to float32 and
    leaves the result in float32 (rounding it to half would add numpy's float32 -> float16
    cast, whose subnormal path dominates for softmax rows of 4096: 0.08-0.6 s measured
    2026-11-24); torch runs ``torch.softmax`` / ``torch.nn.functional.rms_norm`` on the half
    tensor (CPU kernels that compute in float32).

    Returns:
        A dict of figures: simulated µs and floors, seconds (``sim_wall_s``, ``numpy_s``,
        ``torch_s`` fastest; ``torch_s`` None without torch), ``max_err`` of the first
        result against the float64 golden.

    Raises:
        AssertionError: an aclnn call fails, or the result differs from the golden by more
            than half's rounding (2^-10 relative, plus 1e-3 absolute).
    """
    import aclnn
    from aclnn import acl, runtime
    from aclnn.ops.rms_norm import aclnnRmsNorm, aclnnRmsNormGetWorkspaceSize
    from aclnn.ops.softmax import aclnnSoftmax, aclnnSoftmaxGetWorkspaceSize
    from npusim.kernels.rms_norm.golden import rms_norm_golden
    from npusim.kernels.softmax.golden import softmax_golden
    from npusim_tools.registry import acl_session

    threads = harness.torch_threads()

    tensor = harness.to_device      # C-contiguous operands: their strides are contiguous

    with acl_session({"npusim": {"soc": SOC}}) as stream:
        dev = runtime.current_device()
        xt = tensor(x)
        y = tensor(np.zeros_like(x))
        gt = tensor(gamma) if op == "RmsNorm" else None
        rstd = tensor(np.zeros((x.shape[0], 1), np.float32)) if op == "RmsNorm" else None
        sim, work = {"runs": []}, {}

        def sim_run():
            if op == "Softmax":
                ws, ex, ret = aclnnSoftmaxGetWorkspaceSize(xt, -1, y)
                second = aclnnSoftmax
            else:
                ws, ex, ret = aclnnRmsNormGetWorkspaceSize(xt, gt, EPS, y, rstd)
                second = aclnnRmsNorm
            assert ret == 0, acl.get_recent_err_msg()
            harness.second_phase(second, ws, ex, stream)
            sim["ex"] = ex
            sim["runs"].append(dev.profiles[-1])

        def after_first():
            out = np.empty_like(x)
            acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, y.tensor_data, out.nbytes,
                          aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
            ref = (softmax_golden(x, -1) if op == "Softmax"
                   else rms_norm_golden(x, gamma, EPS)[0]).astype(np.float64)
            diff = np.abs(out.astype(np.float64) - ref)
            assert (diff <= 2.0 ** -10 * np.abs(ref) + 1e-3).all(), float(diff.max())
            sim["max_err"] = float(diff.max())
            work["scratch"] = np.empty(x.shape, np.float32)

        def numpy_run():
            if op == "Softmax":
                baselines.softmax_numpy(x, -1, scratch=work["scratch"])
            else:
                baselines.rms_norm_numpy(x, gamma, EPS, scratch=work["scratch"])

        def torch_run():
            if op == "Softmax":
                baselines.softmax_torch(x, -1)
            else:
                baselines.rms_norm_torch(x, gamma, EPS)

        times = harness.interleave(
            {"sim": (None, sim_run), "numpy": (None, numpy_run),
             "torch": (None, torch_run if threads is not None else None)},
            repeats, after_first=after_first)
        prof = sim["runs"][int(np.argmin(times["sim"]))]
        soc, td = dev.soc, sim["ex"].tiling
        rows_max = max(td.core_rows(b)[1] for b in range(td.blockDim))
    moved = prof.bytes_read + prof.bytes_written
    busy = {p: float(v.max()) for p, v in prof.core_pipe_time_us.items()}
    sim_s, numpy_s = min(times["sim"]), min(times["numpy"])
    torch_s = harness.fastest(times["torch"])
    return {
        "op": op, "shape": list(x.shape), "repeats": repeats, "mode": td.mode,
        "blockDim": td.blockDim, "kernel_us": prof.duration_us,
        "gm_bytes": moved, "hbm_bytes": prof.hbm_bytes,
        "hbm_floor_us": moved / soc.hbm_bandwidth * 1e6,
        "vector_floor_us": vector_floor_cycles(op, x.shape[1]) * rows_max / soc.freq_hz * 1e6,
        "busy_us": busy, "bound": prof.bound, "sim_wall_s": sim_s, "sim_runs": times["sim"],
        "functional_s": prof.host_functional_s, "timing_s": prof.host_timing_s,
        "numpy_s": numpy_s, "numpy_runs": times["numpy"], "torch_s": torch_s,
        "torch_runs": times["torch"], "torch_version": baselines.torch_version(),
        "torch_threads": threads, "ratio_numpy": sim_s / numpy_s,
        "ratio_torch": harness.ratio(sim_s, torch_s), "max_err": sim["max_err"],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--cols", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved runs")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    harness.prepare(warm_bytes(args.rows, args.cols))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.rows, args.cols), dtype=np.float32).astype(np.float16)
    gamma = rng.standard_normal(args.cols, dtype=np.float32).astype(np.float16)
    rows = []
    for op in ("Softmax", "RmsNorm"):
        rows.append(measure(op, x, gamma, args.repeats))
    print(f"[{args.rows}, {args.cols}] float16 on {SOC}, all cores")
    for r in rows:
        floor = max(r["hbm_floor_us"], r["vector_floor_us"])
        b = r["busy_us"]
        print(f"\naclnn{r['op']} ({r['mode']}, blockDim {r['blockDim']})")
        print(f"  simulated kernel time {r['kernel_us']:9.1f} us   HBM floor {r['hbm_floor_us']:.1f} us "
              f"({r['gm_bytes'] / 2**20:.0f} MiB), vector floor {r['vector_floor_us']:.1f} us "
              f"-> {r['kernel_us'] / floor:.2f}x the larger (target <= 1.5x)")
        print(f"  of the {r['gm_bytes'] / 2**20:.0f} MiB, {r['hbm_bytes'] / 2**20:.0f} MiB reached HBM "
              f"(the rest hit the L2, where the H2D copy left x): the HBM floor is the "
              f"floor of a cold L2")
        print(f"  busiest core: PIPE_V {b['PIPE_V']:.1f} us, MTE2 {b['PIPE_MTE2']:.1f} us, "
              f"MTE3 {b['PIPE_MTE3']:.1f} us, S {b['PIPE_S']:.1f} us; bound: {r['bound']}")
        torch_s = (f"{r['torch_s']:.3f} s ({r['ratio_torch']:.1f}x)" if r["torch_s"] is not None
                   else harness.NOT_INSTALLED)
        print(f"  host (fastest of {r['repeats']} interleaved runs): simulator "
              f"{r['sim_wall_s']:.2f} s (functional {r['functional_s']:.2f} s, timing "
              f"{r['timing_s']:.2f} s); numpy fp32 {r['numpy_s']:.3f} s "
              f"({r['ratio_numpy']:.1f}x); torch {torch_s}; max |sim - float64 golden| "
              f"{r['max_err']:.2e}")
    harness.write_json(args.json, rows)
    return rows


if __name__ == "__main__":
    main()
