"""Micro-benchmark: Mmad's step sums alone (:mod:`npusim.ascendc.cube.step_sums_numba`'s
compiled loop, and the numpy rendering of :mod:`npusim.ascendc.cube.step_sums`), on the tile a
lockstep group of the basic-API cube kernel (benchmarks/bench_cube_kernel.py) hands Mmad:
24 members x K 64 (4 steps of k0 = 16 for half and bfloat16, 8 of k0 = 8 for float) x M 128
x N 256, accumulating onto L0C (the start is the output itself).

Printed per type and rendering: the CPU time of one call (the fastest of ``--repeats``), in
ns per element of C and k step (G x S x M x N element-steps; a step is k0 products), and the
first 16 hex digits of the result's sha256 (the renderings give the same bytes). ``loop``
is the compiled loop on operands already in its float64 layout; ``fractals`` adds gathering
them from L0A/L0B's fractal orders (:func:`.step_sums_numba.mmad_fractals_fused`, what Mmad
calls); ``numpy`` is the numpy rendering (``NPUSIM_NUMBA=0``'s path).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_step_sums.py [--repeats 5]
[--dtypes half,bfloat16,float] [--paths loop,fractals,numpy]``.
"""
from __future__ import annotations

import argparse
import hashlib
import time

import ml_dtypes
import numpy as np

from npusim.ascendc.cube import step_sums as ss
from npusim.ascendc.cube import step_sums_numba as fused
from npusim.ascendc.cube.mmad import _zn_steps, _zz_steps

G, K, M, N = 24, 64, 128, 256
DTYPES = {"half": np.float16, "bfloat16": ml_dtypes.bfloat16, "float": np.float32}


def fractal_operands(dtype, seed=0):
    """L0A's ZZ and L0B's ZN bytes of one member per row (standard normal data), and k0."""
    k0 = 8 if dtype == np.float32 else 16
    rng = np.random.default_rng(seed)
    zz = rng.standard_normal((G, M * K), dtype=np.float32).astype(dtype)
    zn = rng.standard_normal((G, K * N), dtype=np.float32).astype(dtype)
    return zz, zn, k0


def best_cpu(fn, repeats):
    """The fastest CPU time of ``repeats`` calls of ``fn`` (after one untimed call)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dtypes", default="half,bfloat16,float")
    parser.add_argument("--paths", default="loop,fractals,numpy")
    args = parser.parse_args(argv)
    paths = args.paths.split(",")
    if not fused.AVAILABLE:
        paths = [p for p in paths if p == "numpy"]
    print(f"G {G} x K {K} x M {M} x N {N}, accumulating; CPU time, fastest of {args.repeats}")
    for name in args.dtypes.split(","):
        zz, zn, k0 = fractal_operands(DTYPES[name])
        M1, K1, N1 = M // 16, K // k0, N // 16
        init = np.random.default_rng(1).standard_normal((G, N1, M, 16)).astype(np.float32)
        a_s, b_s = _zz_steps(zz, M1, K1, k0), _zn_steps(zn, K1, N1, k0)
        out = np.empty_like(init)
        steps = G * K1 * M * N
        for path in paths:
            def call():
                out[...] = init
                if path == "loop":
                    a64, b64, mbits, emin, by_bits, lk = fused._operands(a_s, b_s)
                    run = lambda: fused.kernels()._accumulate(  # noqa: E731
                        a64, b64, out, True, out, mbits, emin, by_bits, lk, fused._POW2)
                    return run
                if path == "fractals":
                    return lambda: fused.mmad_fractals_fused(zz, zn, M1, K1, N1, k0, out, out)
                return lambda: ss.mmad_steps(a_s, b_s, out, out)
            run = call()
            enabled = fused.ENABLED
            fused.ENABLED = path != "numpy" and fused.AVAILABLE
            try:
                t = best_cpu(run, args.repeats)      # onto the last result: no copy timed
                out[...] = init
                run()
            finally:
                fused.ENABLED = enabled
            digest = hashlib.sha256(out.tobytes()).hexdigest()[:16]
            print(f"  {name:8s} k0 {k0:2d} {path:8s}: {t * 1e3:8.2f} ms, "
                  f"{t / steps * 1e9:5.2f} ns per element and k step, sha256 {digest}",
                  flush=True)


if __name__ == "__main__":
    main()
