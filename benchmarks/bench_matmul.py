"""Benchmark: aclnnMatmul fp16 4096^3 and 8192^3 and fp32 4096^3 on Ascend910B2, all AICs.

For each case it prints

* the simulated kernel time (Task Duration of the MatMulV3 launch, µs) and the simulated
  TFLOPS (``2 M N K`` over it), next to the cube's peak (reference/hardware.md §1.6:
  ``AIC x f x 16 x 16 x k-per-cycle x 2``, 353.9 TFLOPS fp16 and 88.5 fp32 on 910B2) and to
  the measured figure of §4.2 (910B2 via torch: 314.5 fp16 4096^3, 305.5 fp16 8192^3, 84.5
  fp32 4096^3 — native fp32, cubeMathType 0), with the deviation (target: within 10 %);
* the busiest AIC's pipe times (MTE2, MTE1, M, FIX), which say what the kernel waits for;
* for fp16 4096^3, the simulator's host wall time (first phase, launch, functional run,
  timing replay) next to numpy's float32 matmul of the same operands (target: at most
  20x), with the functional run and the replay apart.

Why a case is off the measured figure (printed with it): the simulated kernel is the
basic-block MatMulV3 of kernels/matmul (256 x 128 x 64 half / x 32 float base blocks,
dealt round-robin over the 24 AICs, L1 and L0 double-buffered, L0C single-buffered at
this block size); its losses are the Mmad head (22 cycles [R] per 512-cycle step), the
Fixpipe of a block not overlapping the next block's first Mmad, the last round of blocks
(512 / 24 = 21.3 rounds -> 22), and MTE2 close to the per-core L2 rate (110 B/cycle) that
this block shape needs (96 B/cycle for half).

Host time (measured 2026-11-23 on the 2-core host: about 21 s for fp16 4096^3 against
0.7 s for numpy, ~30x; ~17 s with the checker off): the functional run executes 32768
Mmads (each a float64 product per k fractal, rounded to float32 in order: the cube's
documented numerics, ~150 µs), ~260000 LoadData and 16000 ND->NZ DataCopy calls one block
after another, and the checker shadows the first and last block (~20 %). The 20x target
needs the engine's lockstep execution (DESIGN.md: one instruction for all blocks, stacked
operands), which is not implemented.

Run: ``python benchmarks/bench_matmul.py [--cases fp16-4096,fp16-8192,fp32-4096] [--json F]``
(8192^3 takes several minutes of host time).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

SOC = "Ascend910B2"
#: case -> (dtype, size, measured TFLOPS on 910B2, reference/hardware.md §4.2)
CASES = {"fp16-4096": ("float16", 4096, 314.5), "fp16-8192": ("float16", 8192, 305.5),
         "fp32-4096": ("float32", 4096, 84.5)}


def cube_peak_tflops(soc, dtype) -> float:
    """AIC count x clock x (16 x 16 x k per cycle) MACs x 2 (§1.6, §2.1)."""
    return soc.cube_block_num * soc.freq_hz * 16 * 16 * soc.cube_rate(np.dtype(dtype)) * 2 / 1e12


def _best(fn, repeats=3):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run_sim(a: np.ndarray, b: np.ndarray) -> dict:
    """One aclnnMatmul (cubeMathType 0) on a fresh Ascend910B2 runtime."""
    import aclnn
    from aclnn import acl, runtime
    from aclnn.ops.matmul import aclnnMatmul, aclnnMatmulGetWorkspaceSize
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
        at, bt = tensor(a), tensor(b)
        out = tensor(np.zeros((a.shape[0], b.shape[1]), a.dtype))
        t0 = time.perf_counter()
        ws, ex, ret = aclnnMatmulGetWorkspaceSize(at, bt, out, 0)
        assert ret == 0, acl.get_recent_err_msg()
        wptr = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0] if ws else 0
        assert aclnnMatmul(wptr, ws, ex, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
        wall = time.perf_counter() - t0
        prof, soc, td = dev.profiles[-1], dev.soc, ex.tiling
        c = np.empty((a.shape[0], b.shape[1]), a.dtype)
        acl.rt.memcpy(acl.util.numpy_to_ptr(c), c.nbytes, out.tensor_data, c.nbytes,
                      aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
    t = td.matmulTiling
    flops = 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
    return {"kernel_us": prof.duration_us, "tflops": flops / (prof.duration_us * 1e-6) / 1e12,
            "peak_tflops": cube_peak_tflops(soc, a.dtype), "blockDim": td.blockDim,
            "base": (t.baseM, t.baseN, t.baseK), "stepK": t.stepKa, "dbL0C": t.dbL0C,
            "busy_us": {p: float(v.max()) for p, v in prof.core_pipe_time_us.items()},
            "bound": prof.bound, "hbm_bytes": prof.hbm_bytes, "sim_wall_s": wall,
            "functional_s": prof.host_functional_s, "timing_s": prof.host_timing_s, "c": c}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    rows = []
    for name in args.cases.split(","):
        dtype, size, measured = CASES[name]
        rng = np.random.default_rng(0)
        a = rng.standard_normal((size, size), dtype=np.float32).astype(dtype)
        b = rng.standard_normal((size, size), dtype=np.float32).astype(dtype)
        r = run_sim(a, b)
        c = r.pop("c")
        r.update(case=name, measured_tflops=measured,
                 deviation=r["tflops"] / measured - 1)
        # numpy's float32 matmul of the same operands, and the result's agreement with it
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        ref = a32 @ b32
        r["max_rel_err"] = float(np.abs(c.astype(np.float32) - ref).max() / np.abs(ref).max())
        if name == "fp16-4096":
            r["numpy_s"] = _best(lambda: a32 @ b32)
            r["host_ratio"] = r["sim_wall_s"] / r["numpy_s"]
        rows.append(r)
        _print(r, size, dtype)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2, default=str)
    return rows


def _print(r: dict, size: int, dtype: str) -> None:
    b = r["busy_us"]
    ok = "within" if abs(r["deviation"]) <= 0.10 else "OUTSIDE"
    print(f"\naclnnMatmul {dtype} {size}^3 on {SOC} (blockDim {r['blockDim']}, base "
          f"{'x'.join(map(str, r['base']))}, stepK {r['stepK']}, dbL0C {r['dbL0C']})")
    print(f"  simulated kernel {r['kernel_us']:10.1f} us = {r['tflops']:6.1f} TFLOPS; cube peak "
          f"{r['peak_tflops']:.1f} ({r['tflops'] / r['peak_tflops']:.0%}); measured "
          f"{r['measured_tflops']} -> {r['deviation']:+.1%} ({ok} 10 %)")
    print(f"  busiest AIC: MTE2 {b['PIPE_MTE2']:.1f} us, MTE1 {b['PIPE_MTE1']:.1f} us, "
          f"M {b['PIPE_M']:.1f} us, FIX {b['PIPE_FIX']:.1f} us; bound: {r['bound']}; "
          f"HBM {r['hbm_bytes'] / 2**20:.0f} MiB (the rest of A and B hit the L2)")
    print(f"  max |sim - numpy fp32| / max |numpy| = {r['max_rel_err']:.2e}")
    print(f"  host: simulator {r['sim_wall_s']:.1f} s (functional {r['functional_s']:.1f} s, "
          f"timing {r['timing_s']:.1f} s)" + (
              f"; numpy float32 matmul {r['numpy_s']:.3f} s -> {r['host_ratio']:.1f}x "
              f"(target <= 20x)" if "numpy_s" in r else ""))


if __name__ == "__main__":
    main()
