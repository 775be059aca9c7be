"""Benchmark: the L2 counting the lines a strided copy's rows touch, against counting the
whole span the copy crosses (the model before transfers carried their rows).

For each case it prints, both ways: the L2 hit rate (hit bytes / bytes read), the HBM
bytes, the simulated Task time (µs, replay only) and the host time of the timing replay
(fastest of ``--repeats``):

* ``tiles``: DataCopy best practice scenario U3 (asc-devkit ``examples/01_simd_cpp_api/
  05_best_practices/04_memory_access/data_copy``): a half [12288, 12288] matrix read once
  GM -> UB in [64, 1024] tiles (blockCount 64, blockLen 2048 B, rows 24576 B apart) by 48
  AIVs, each core its 256 rows, tile after tile along them. Every byte is read once: msprof
  reports a 0.005% L2 hit rate on Atlas A2; the span model marks all 12288 columns of a
  tile's 64 rows as read.
* ``matmul``: the records of aclnnMatmul fp16 ``--matmul N``^3 on Ascend910B2 (Nd2Nz loads of A
  and B tiles, Fixpipe stores of C tiles: rows with whole lines between them).
* ``ema``: ApplyFusedEmaAdam on 2^``--ema`` float32 elements (contiguous copies only:
  both ways replay the same records).

The "span" replay is the same records with the rows taken out of their keys, which is what
the records were before; the host times compare the replay's cost per transfer.

Run: ``python benchmarks/bench_l2_rows.py [--cases tiles,matmul,ema] [--repeats N]``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from npusim import get_soc, timing  # noqa: E402
from npusim.ascendc.core import DMA_IN, DMA_OUT  # noqa: E402
from npusim.ascendc.types import Pipe  # noqa: E402


def tile_records(n=12288, tile_m=64, tile_n=1024, cores=48, isz=2, base=1 << 32):
    """Scenario U3's GM -> UB reads: each core its n / cores rows, tile after tile."""
    row, pitch = tile_n * isz, n * isz
    per = n // cores
    blocks = []
    for c in range(cores):
        recs = []
        for r in range(c * per, (c + 1) * per, tile_m):
            for col in range(0, n, tile_n):
                addr = base + r * pitch + col * isz
                recs.append((DMA_IN, Pipe.PIPE_MTE2, 0.0, tile_m * row,
                             (addr, (tile_m - 1) * pitch + row, False,
                              ((0, row, pitch, tile_m),)), "DataCopy"))
        blocks.append(recs)
    return blocks


def captured(run) -> list:
    """The (blocks, soc, keyword arguments) of every replay ``run()`` asks for."""
    from npusim import launch
    seen = []
    orig = launch.simulate

    def spy(blocks, soc, **kw):
        seen.append(([list(b) for b in blocks], soc, (), kw))
        return orig(blocks, soc, **kw)
    launch.simulate = spy
    try:
        run()
    finally:
        launch.simulate = orig
    return seen


def matmul_records(size):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import aclnn
    from aclnn import acl, runtime
    from aclnn.ops import matmul as mm
    from aclnn_helpers import open_stream, to_device
    import tempfile

    def run():
        open_stream(Path(tempfile.mkdtemp()), soc="Ascend910B2")
        try:
            rng = np.random.default_rng(0)
            a = rng.standard_normal((size, size)).astype(np.float16)
            b = rng.standard_normal((size, size)).astype(np.float16)
            at, bt, out = to_device(a), to_device(b), to_device(np.zeros((size, size),
                                                                          np.float16))
            ws, ex, ret = mm.aclnnMatmulGetWorkspaceSize(at, bt, out, 0)
            assert ret == 0
            wptr = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0] if ws else 0
            assert mm.aclnnMatmul(wptr, ws, ex, None) == 0
            assert acl.rt.synchronize_device() == 0
        finally:
            runtime.reset()
    return captured(run)


def ema_records(log2n):
    import bench_apply_fused_ema_adam as ema
    return captured(lambda: ema.measure(log2n, repeats=1, check=False))


def spans(blocks):
    """The records as they were before: every transfer keyed by its span alone."""
    return [[r[:4] + (r[4][:3],) + r[5:] if r[0] in (DMA_IN, DMA_OUT) and len(r[4]) == 4
             else r for r in b] for b in blocks]


def replay(blocks, soc, args, kw, repeats):
    best, t = float("inf"), None
    for _ in range(repeats):
        timing._ROW_LINES.clear()
        start = time.perf_counter()
        t = timing._replay(blocks, soc, False, kw.get("cores"), kw.get(
            "profile_pipes", timing.PROFILE_PIPES), None)
        best = min(best, time.perf_counter() - start)
    return t, best


def report(name, launches, repeats):
    for blocks, soc, args, kw in launches:
        n = sum(1 for b in blocks for r in b if r[0] in (DMA_IN, DMA_OUT))
        rows = sum(1 for b in blocks for r in b if r[0] in (DMA_IN, DMA_OUT) and len(r[4]) == 4)
        read = sum(r[3] for b in blocks for r in b if r[0] == DMA_IN)
        print(f"{name}: {len(blocks)} cores, {n} transfers ({rows} with rows), "
              f"{read / 2**20:.1f} MiB read")
        for how, recs in (("span", spans(blocks)), ("rows", blocks)):
            t, s = replay(recs, soc, args, kw, repeats)
            print(f"  {how:4s}: L2 hit rate {100 * t.l2_hit_bytes / max(read, 1):7.3f}%, "
                  f"HBM {t.hbm_bytes / 2**20:9.1f} MiB, replay {t.cycles / soc.freq_hz * 1e6:9.1f}"
                  f" µs; host {s * 1e3:8.1f} ms ({s / max(n, 1) * 1e6:.2f} µs per transfer)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="tiles,matmul,ema")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--matmul", type=int, default=2048)
    p.add_argument("--ema", type=int, default=22)
    a = p.parse_args(argv)
    for case in a.cases.split(","):
        if case == "tiles":
            report("tiles U3 [64,1024] of [12288,12288] half",
                   [(tile_records(), get_soc("Ascend910B1"), (), {})], a.repeats)
        elif case == "matmul":
            report(f"aclnnMatmul fp16 {a.matmul}^3 Ascend910B2", matmul_records(a.matmul)[-1:],
                   a.repeats)
        elif case == "ema":
            report(f"ApplyFusedEmaAdam 2^{a.ema} float32", ema_records(a.ema)[-1:], a.repeats)


if __name__ == "__main__":
    main()
