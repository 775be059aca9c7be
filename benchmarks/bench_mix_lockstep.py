"""Benchmark: host time of a mixed AIC/AIV launch run per core (every core its own greenlet
coroutine) and in lockstep groups (npusim.mixgroups: the AICs, and the AIVs of each
sub-block, of the untracked blocks as one group each), on Ascend910B1.

The kernel is examples/matmul_leakyrelu_mix.py: KERNEL_TYPE_MIX_AIC_1_2 on ``blocks``
blocks, the Matmul API's MIX form (each AIC serves its two AIVs' Iterate / GetTensorC calls
on the cube) and a LeakyRelu epilogue on the AIVs. Both ways give the same output bytes,
the same per-core records and the same Task Duration (checked here); the figure is the
host time of the launch (functional run and timing replay), the fastest of ``--repeats``
runs, after one warm-up run each way (numba compilation, kept replays, pools).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_mix_lockstep.py [--m 3072] [--n 512]
[--k 512] [--blocks 24] [--repeats 3]``
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import matmul_leakyrelu_mix as example  # noqa: E402

from npusim import run_kernel  # noqa: E402


def run(m: int, n: int, k: int, blocks: int, lockstep: bool):
    """One launch of the example; (host seconds of run_kernel, profile, C)."""
    spent = {}

    def timed(*args, **kw):
        t0 = time.perf_counter()
        prof = run_kernel(*args, **{**kw, "lockstep": lockstep, "keep_spans": True})
        spent["wall"] = time.perf_counter() - t0
        return prof

    example.run_kernel = timed
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            c, err, prof = example.main(M=m, N=n, K=k, blocks=blocks)
    finally:
        example.run_kernel = run_kernel
    assert err < 1e-2, err
    return spent["wall"], prof, c


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, default=3072)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--k", type=int, default=512)
    ap.add_argument("--blocks", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    seen = {}
    for lockstep in (False, True):          # warm-up, and the identity check
        _, prof, c = run(a.m, a.n, a.k, a.blocks, lockstep)
        seen[lockstep] = (prof, c)
    (p0, c0), (p1, c1) = seen[False], seen[True]
    assert np.array_equal(c0.view(np.uint32), c1.view(np.uint32))
    assert p0.duration_us == p1.duration_us and p0.pipe_time_us == p1.pipe_time_us
    assert [list(r) for r in p0.records] == [list(r) for r in p1.records]
    grouped = sum(hasattr(r, "template") for r in p1.records)
    best = harness.fastest_per_core_and_lockstep(
        lambda lockstep: run(a.m, a.n, a.k, a.blocks, lockstep), a.repeats)
    cores = len(p1.records)
    print(f"Matmul API (MIX_AIC_1_2) + LeakyRelu, {a.m}x{a.k} @ {a.k}x{a.n} on {a.blocks} "
          f"blocks ({cores} cores, {grouped} of them in lockstep groups): Task Duration "
          f"{p1.duration_us:.3f} us both ways, bytes and records identical")
    harness.print_per_core_and_lockstep(best, "lockstep groups")


if __name__ == "__main__":
    main()
