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
    of reference/hardware.md §2.1 (no issue overhead, no bank conflicts), for the core
    with the most rows, at the preset's clock (:func:`vector_floor_cycles` lists them);
  and the ratio of the kernel time to the larger floor (target: at most 1.5x), with the
  busiest core's simulated PIPE_V / MTE2 / MTE3 time, which says what the kernel waits for;
* the simulator's host wall time (first phase, launch, functional run and timing replay)
  next to numpy computing the same operator in float32 on the same data and, if torch is
  installed, torch (CPU, float32).

Run: ``python benchmarks/bench_softmax_rms_norm.py [--rows 8192] [--cols 4096] [--json FILE]``
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

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


def _numpy(op, x, gamma):
    xf = x.astype(np.float32)
    if op == "Softmax":
        e = np.exp(xf - xf.max(axis=-1, keepdims=True))
        return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)
    rstd = 1 / np.sqrt((xf * xf).mean(axis=-1, keepdims=True) + EPS)
    return (xf * rstd * gamma.astype(np.float32)).astype(x.dtype)


def _torch(op, x, gamma):
    try:
        import torch
    except ImportError:
        return None
    xt, gt = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(gamma.astype(np.float32))

    def run():
        if op == "Softmax":
            return torch.softmax(xt, dim=-1)
        return xt * torch.rsqrt(xt.pow(2).mean(-1, keepdim=True) + EPS) * gt
    run()
    return _best(run)


def _best(fn, repeats=3):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run_sim(op: str, x: np.ndarray, gamma: np.ndarray) -> dict:
    """One aclnn call on a fresh Ascend910B1 runtime; the main kernel's profile."""
    import aclnn
    from aclnn import acl, runtime
    from aclnn.ops.rms_norm import aclnnRmsNorm, aclnnRmsNormGetWorkspaceSize
    from aclnn.ops.softmax import aclnnSoftmax, aclnnSoftmaxGetWorkspaceSize
    from npusim_tools.registry import acl_session

    def tensor(host):
        ptr, ret = acl.rt.malloc(host.nbytes, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        assert ret == 0
        assert acl.rt.memcpy(ptr, host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes,
                             aclnn.ACL_MEMCPY_HOST_TO_DEVICE) == 0
        shape = list(host.shape)
        return aclnn.aclCreateTensor(shape, aclnn.numpy_to_acl_dtype(host.dtype),
                                     list(aclnn.contiguous_strides(shape)), 0,
                                     aclnn.ACL_FORMAT_ND, shape, ptr)

    with acl_session({"npusim": {"soc": SOC}}) as stream:
        dev = runtime.current_device()
        xt = tensor(x)
        y = tensor(np.zeros_like(x))
        t0 = time.perf_counter()
        if op == "Softmax":
            ws, ex, ret = aclnnSoftmaxGetWorkspaceSize(xt, -1, y)
            second = aclnnSoftmax
        else:
            rstd = tensor(np.zeros((x.shape[0], 1), np.float32))
            ws, ex, ret = aclnnRmsNormGetWorkspaceSize(xt, tensor(gamma), EPS, y, rstd)
            second = aclnnRmsNorm
        assert ret == 0, acl.get_recent_err_msg()
        wptr = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0] if ws else 0
        assert second(wptr, ws, ex, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
        wall = time.perf_counter() - t0
        prof = dev.profiles[-1]
        soc, td = dev.soc, ex.tiling
        rows_max = max(td.core_rows(b)[1] for b in range(td.blockDim))
        out = np.empty_like(x)
        acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, y.tensor_data, out.nbytes,
                      aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
    moved = prof.bytes_read + prof.bytes_written
    busy = {p: float(v.max()) for p, v in prof.core_pipe_time_us.items()}
    return {
        "op": op, "mode": td.mode, "blockDim": td.blockDim, "kernel_us": prof.duration_us,
        "gm_bytes": moved, "hbm_bytes": prof.hbm_bytes,
        "hbm_floor_us": moved / soc.hbm_bandwidth * 1e6,
        "vector_floor_us": vector_floor_cycles(op, x.shape[1]) * rows_max / soc.freq_hz * 1e6,
        "busy_us": busy, "bound": prof.bound, "sim_wall_s": wall,
        "functional_s": prof.host_functional_s, "timing_s": prof.host_timing_s,
        "max_err": float(np.abs(out.astype(np.float64) -
                                _numpy(op, x, gamma).astype(np.float64)).max()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--cols", type=int, default=4096)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.rows, args.cols), dtype=np.float32).astype(np.float16)
    gamma = rng.standard_normal(args.cols, dtype=np.float32).astype(np.float16)
    rows = []
    for op in ("Softmax", "RmsNorm"):
        r = run_sim(op, x, gamma)
        r["numpy_s"] = _best(lambda: _numpy(op, x, gamma))
        r["torch_s"] = _torch(op, x, gamma)
        rows.append(r)
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
        torch_s = f"{r['torch_s']:.3f} s" if r["torch_s"] is not None else "not installed"
        print(f"  host: simulator {r['sim_wall_s']:.2f} s (functional {r['functional_s']:.2f} s, "
              f"timing {r['timing_s']:.2f} s); numpy fp32 {r['numpy_s']:.3f} s; torch "
              f"{torch_s}; max |sim - numpy| {r['max_err']:.2e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return rows


if __name__ == "__main__":
    main()
