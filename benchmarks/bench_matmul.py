"""Benchmark: aclnnMatmul fp16 4096^3 and 8192^3 and fp32 4096^3 on Ascend910B2, all AICs.

For each case it prints

* the simulated kernel time (Task Duration of the MatMulV3 launch, µs) and the simulated
  TFLOPS (``2 M N K`` over it), next to the cube's peak (docs/reference/hardware.md §1.6:
  ``AIC x f x 16 x 16 x k-per-cycle x 2``, 353.9 TFLOPS fp16 and 88.5 fp32 on 910B2) and to
  the measured figure of §4.2 (910B2 via torch: 314.5 fp16 4096^3, 305.5 fp16 8192^3, 84.5
  fp32 4096^3 — native fp32, cubeMathType 0), with the deviation (target: within 10 %);
* the busiest AIC's pipe times (MTE2, MTE1, M, FIX), which say what the kernel waits for;
* the simulator's host wall time (first phase, launch, functional run, timing replay)
  next to what a user would otherwise run on the same operands (baselines.py): numpy's
  float32 matmul and ``torch.matmul`` (CPU, float32), timed in one process, interleaved
  (sim, numpy, torch, ...), the fastest of ``--repeats`` runs each (target for fp16
  4096^3: at most 20x numpy), with the functional run and the replay apart; the float64
  golden checks the simulator's result (not timed).

Why a case is off the measured figure (printed with it): the simulated kernel is the
basic-block MatMulV3 of kernels/matmul (256 x 128 x 64 half / x 32 float base blocks,
dealt round-robin over the 24 AICs, L1 and L0 double-buffered, L0C single-buffered at
this block size); its losses are the Mmad head (22 cycles [R] per 512-cycle step), the
Fixpipe of a block not overlapping the next block's first Mmad, the last round of blocks
(512 / 24 = 21.3 rounds -> 22), and MTE2 close to the per-core L2 rate (110 B/cycle) that
this block shape needs (96 B/cycle for half).

Host time: the functional run executes 32768 Mmads (each the float64 product of all its k
fractal steps, every element shown to round as its exact sum does, rounded to float32 and
added in k order: the cube's documented numerics, npusim/ascendc/cube/step_sums.py),
~262000 LoadData calls and 16000 ND->NZ DataCopy calls; blocks with as many base blocks
run in lockstep groups (npusim/lockstep.py), so each instruction's Python runs once per
group and Mmad multiplies two members' tiles per BLAS call. RESULTS.md has the latest
figures.

Run: ``python benchmarks/bench_matmul.py [--cases fp16-4096,fp16-8192,fp32-4096]
[--repeats N] [--json F]`` (8192^3 takes several minutes of host time per run).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baselines  # noqa: E402
import harness  # noqa: E402

SOC = "Ascend910B2"
#: case -> (dtype, size, measured TFLOPS on 910B2, docs/reference/hardware.md §4.2)
CASES = {"fp16-4096": ("float16", 4096, 314.5), "fp16-8192": ("float16", 8192, 305.5),
         "fp32-4096": ("float32", 4096, 84.5)}


def cube_peak_tflops(soc, dtype) -> float:
    """AIC count x clock x (16 x 16 x k per cycle) MACs x 2 (§1.6, §2.1)."""
    return soc.cube_block_num * soc.freq_hz * 16 * 16 * soc.cube_rate(np.dtype(dtype)) * 2 / 1e12


#: interleaved runs per case by default: the slow cases fewer (8192^3 takes minutes a run)
REPEATS = {"fp16-4096": 3, "fp16-8192": 1, "fp32-4096": 2}


def case_spec(case: str):
    """``(dtype, size, measured TFLOPS or None)`` of a CASES key, or of any ``fp16-N`` /
    ``fp32-N`` (N x N x N, no measured figure). Raises KeyError for other names."""
    if case in CASES:
        return CASES[case]
    kind, _, size = case.partition("-")
    if kind not in ("fp16", "fp32") or not size.isdigit():
        raise KeyError(case)
    return ("float16" if kind == "fp16" else "float32"), int(size), None


def operands(case: str):
    """The two seeded square operands of ``case`` (:func:`case_spec`)."""
    dtype, size, _ = case_spec(case)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32).astype(dtype)
    b = rng.standard_normal((size, size), dtype=np.float32).astype(dtype)
    return a, b


def measure(a: np.ndarray, b: np.ndarray, repeats: int = 3) -> dict:
    """aclnnMatmul (cubeMathType 0) of ``a @ b`` on a fresh Ascend910B2 runtime, and its
    baselines on the same operands, interleaved (sim, numpy, torch, ...).

    The baselines (baselines.py) multiply float32 copies of the operands, made once before
    the timing (numpy has no fast half matmul; half operands are exact in float32):
    ``np.matmul(a32, b32, out=c)`` (OpenBLAS, its default threads) and ``torch.matmul``
    (CPU, harness.TORCH_THREADS threads).

    Returns:
        A dict of figures: simulated µs, TFLOPS and pipe times; seconds (``sim_wall_s``,
        ``numpy_s``, ``torch_s`` fastest; ``*_runs`` all; ``torch_s`` None without torch);
        ``max_rel_err`` of the first result against numpy's float32 product and
        ``golden_max_rel_err`` against the float64 golden (the correctness check).
    """
    import aclnn
    from aclnn import acl, runtime
    from aclnn.ops.matmul import aclnnMatmul, aclnnMatmulGetWorkspaceSize
    from npusim.kernels.matmul.golden import matmul_golden
    from npusim_tools.registry import acl_session

    threads = harness.torch_threads()

    tensor = harness.to_device      # C-contiguous operands: their strides are contiguous

    with acl_session({"npusim": {"soc": SOC}}) as stream:
        dev = runtime.current_device()
        at, bt = tensor(a), tensor(b)
        out = tensor(np.zeros((a.shape[0], b.shape[1]), a.dtype))
        sim, work = {"runs": []}, {}

        def sim_run():
            ws, ex, ret = aclnnMatmulGetWorkspaceSize(at, bt, out, 0)
            assert ret == 0, acl.get_recent_err_msg()
            harness.second_phase(aclnnMatmul, ws, ex, stream)
            sim["ex"] = ex
            sim["runs"].append(dev.profiles[-1])

        def after_first():
            c = np.empty((a.shape[0], b.shape[1]), a.dtype)
            acl.rt.memcpy(acl.util.numpy_to_ptr(c), c.nbytes, out.tensor_data, c.nbytes,
                          aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
            work["a32"], work["b32"] = a.astype(np.float32), b.astype(np.float32)
            work["c32"] = np.empty((a.shape[0], b.shape[1]), np.float32)
            ref = work["a32"] @ work["b32"]
            sim["max_rel_err"] = float(np.abs(c.astype(np.float32) - ref).max()
                                       / np.abs(ref).max())
            gold = matmul_golden(a, b, out_dtype=np.float64)
            sim["golden_max_rel_err"] = float(np.abs(c.astype(np.float64) - gold).max()
                                              / np.abs(gold).max())

        times = harness.interleave(
            {"sim": (None, sim_run),
             "numpy": (None, lambda: baselines.matmul_numpy(work["a32"], work["b32"],
                                                            out=work["c32"])),
             "torch": (None, (lambda: baselines.matmul_torch(work["a32"], work["b32"],
                                                             out=work["c32"]))
                       if threads is not None else None)},
            repeats, after_first=after_first)
        prof = sim["runs"][int(np.argmin(times["sim"]))]
        soc, td = dev.soc, sim["ex"].tiling
    t = td.matmulTiling
    flops = 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
    sim_s, numpy_s = min(times["sim"]), min(times["numpy"])
    torch_s = harness.fastest(times["torch"])
    return {"kernel_us": prof.duration_us, "tflops": flops / (prof.duration_us * 1e-6) / 1e12,
            "peak_tflops": cube_peak_tflops(soc, a.dtype), "blockDim": td.blockDim,
            "base": (t.baseM, t.baseN, t.baseK), "stepK": t.stepKa, "dbL0C": t.dbL0C,
            "busy_us": {p: float(v.max()) for p, v in prof.core_pipe_time_us.items()},
            "bound": prof.bound, "hbm_bytes": prof.hbm_bytes, "repeats": repeats,
            "sim_wall_s": sim_s, "sim_runs": times["sim"],
            "functional_s": prof.host_functional_s, "timing_s": prof.host_timing_s,
            "numpy_s": numpy_s, "numpy_runs": times["numpy"], "torch_s": torch_s,
            "torch_runs": times["torch"], "torch_version": baselines.torch_version(),
            "torch_threads": threads, "host_ratio": sim_s / numpy_s,
            "ratio_numpy": sim_s / numpy_s, "ratio_torch": harness.ratio(sim_s, torch_s),
            "max_rel_err": sim["max_rel_err"],
            "golden_max_rel_err": sim["golden_max_rel_err"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated, of {', '.join(CASES)} (or fp16-N, fp32-N)")
    parser.add_argument("--repeats", type=int,
                        help="interleaved runs per case (default: "
                             + ", ".join(f"{k} {v}" for k, v in REPEATS.items()) + ")")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    rows = []
    for name in args.cases.split(","):
        dtype, size, measured = case_spec(name)
        a, b = operands(name)
        r = measure(a, b, args.repeats or REPEATS.get(name, 1))
        r.update(case=name, measured_tflops=measured,
                 deviation=r["tflops"] / measured - 1 if measured else None)
        rows.append(r)
        _print(r, size, dtype)
    harness.write_json(args.json, rows, default=str)
    return rows


def _print(r: dict, size: int, dtype: str) -> None:
    b = r["busy_us"]
    if r["deviation"] is None:
        measured = "no measured figure"
    else:
        ok = "within" if abs(r["deviation"]) <= 0.10 else "OUTSIDE"
        measured = f"measured {r['measured_tflops']} -> {r['deviation']:+.1%} ({ok} 10 %)"
    print(f"\naclnnMatmul {dtype} {size}^3 on {SOC} (blockDim {r['blockDim']}, base "
          f"{'x'.join(map(str, r['base']))}, stepK {r['stepK']}, dbL0C {r['dbL0C']})")
    print(f"  simulated kernel {r['kernel_us']:10.1f} us = {r['tflops']:6.1f} TFLOPS; cube peak "
          f"{r['peak_tflops']:.1f} ({r['tflops'] / r['peak_tflops']:.0%}); {measured}")
    print(f"  busiest AIC: MTE2 {b['PIPE_MTE2']:.1f} us, MTE1 {b['PIPE_MTE1']:.1f} us, "
          f"M {b['PIPE_M']:.1f} us, FIX {b['PIPE_FIX']:.1f} us; bound: {r['bound']}; "
          f"HBM {r['hbm_bytes'] / 2**20:.0f} MiB (the rest of A and B hit the L2)")
    print(f"  max |sim - numpy fp32| / max |numpy| = {r['max_rel_err']:.2e}; against the "
          f"float64 golden {r['golden_max_rel_err']:.2e}")
    torch_s = (f"{r['torch_s']:.3f} s -> {r['ratio_torch']:.1f}x" if r["torch_s"] is not None
               else harness.NOT_INSTALLED)
    print(f"  host (fastest of {r['repeats']} interleaved runs): simulator {r['sim_wall_s']:.1f} s "
          f"(functional {r['functional_s']:.1f} s, timing {r['timing_s']:.1f} s); numpy "
          f"float32 matmul {r['numpy_s']:.3f} s -> {r['ratio_numpy']:.1f}x"
          + (" (target <= 20x)" if r.get("case") == "fp16-4096" else "")
          + f"; torch.matmul float32 {torch_s}")


if __name__ == "__main__":
    main()
