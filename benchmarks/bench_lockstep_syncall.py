"""Benchmark: host time of a SyncAll launch run per core (greenlet coroutines that take turns
at each SyncAll) and in lockstep (every block in one group that meets each SyncAll at once,
npusim.lockstep), on Ascend910B1.

The kernel is two phases over a float32 vector split in ``blocks`` equal chunks, tiled
through UB: phase 0 scales each chunk into a workspace (x * 2 + 1); after SyncAll each block
adds its right neighbour's workspace chunk to its own x and stores the result. Both ways
give the same bytes, the same records and the same Task Duration (checked here); the figure
is the host time of the launch (functional run and timing replay), the fastest of
``--repeats`` runs, after one warm-up run each way.

Run: ``python benchmarks/bench_lockstep_syncall.py [--n 3145728] [--blocks 48] [--tile 4096]
[--repeats 3]``
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import (Add, Adds, DataCopy, GetBlockIdx, GetBlockNum, GlobalTensor,
                            HardEvent, Muls, SetFlag, TBuf, TPipe, WaitFlag, float32)
from npusim.ascendc.syncall import SyncAll


def two_phase(x, work, out, chunk, tile):
    b, nb = GetBlockIdx(), GetBlockNum()
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 2 * tile * 4)
    t = buf.Get(float32)
    a, c = t, t[tile]
    xg, wg, og = GlobalTensor(float32), GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x, chunk * nb)
    wg.SetGlobalBuffer(work, chunk * nb)
    og.SetGlobalBuffer(out, chunk * nb)
    right = (b + 1) % nb
    for i in range(chunk // tile):
        DataCopy(a, xg[chunk * b + i * tile], tile)
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        Muls(a, a, 2.0, tile)
        Adds(a, a, 1.0, tile)
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        DataCopy(wg[chunk * b + i * tile], a, tile)
        SetFlag(HardEvent.MTE3_MTE2, 0)
        WaitFlag(HardEvent.MTE3_MTE2, 0)
    SyncAll()
    for i in range(chunk // tile):
        DataCopy(a, wg[chunk * right + i * tile], tile)
        DataCopy(c, xg[chunk * b + i * tile], tile)
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        Add(a, a, c, tile)
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        DataCopy(og[chunk * b + i * tile], a, tile)
        SetFlag(HardEvent.MTE3_MTE2, 0)
        WaitFlag(HardEvent.MTE3_MTE2, 0)


def run(n: int, blocks: int, tile: int, lockstep: bool):
    soc = get_soc("Ascend910B1")
    gm = GlobalMemory(4 * n * 4 + (1 << 22))
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    xa, wa, oa = gm.malloc(x.nbytes), gm.malloc(x.nbytes), gm.malloc(x.nbytes)
    gm.write(xa, x)
    t0 = time.perf_counter()
    prof = run_kernel(two_phase, blocks, (xa, wa, oa, n // blocks, tile), soc=soc, gm=gm,
                      sync_all=True, lockstep=lockstep)
    wall = time.perf_counter() - t0
    out = np.frombuffer(gm.read(oa, x.nbytes), np.float32).copy()
    want = np.roll((x * 2 + 1).reshape(blocks, -1), -1, axis=0).ravel() + x
    assert np.array_equal(out, want)
    return wall, prof, out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=3 << 20)
    ap.add_argument("--blocks", type=int, default=48)
    ap.add_argument("--tile", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    assert a.n % (a.blocks * a.tile) == 0, "n must be a multiple of blocks * tile"
    seen = {}
    for lockstep in (False, True):          # warm-up: kept replays, pools, caches
        _, prof, out = run(a.n, a.blocks, a.tile, lockstep)
        seen[lockstep] = (prof.duration_us, out)
    assert seen[False][0] == seen[True][0] and np.array_equal(seen[False][1], seen[True][1])
    best = harness.fastest_per_core_and_lockstep(
        lambda lockstep: run(a.n, a.blocks, a.tile, lockstep), a.repeats)
    print(f"SyncAll two-phase kernel, {a.n} float32 over {a.blocks} blocks, tile {a.tile}: "
          f"Task Duration {seen[True][0]:.3f} us both ways, bytes identical")
    harness.print_per_core_and_lockstep(best, "lockstep (one group)")


if __name__ == "__main__":
    main()
