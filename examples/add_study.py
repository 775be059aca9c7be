"""The official Add best-practice progression, case by case, on the simulated Ascend910B1.

z = x + y on half tensors of 8192 x 8192, as in the Ascend C example
``examples/01_simd_cpp_api/05_best_practices/00_vector_compute/add_high_performance``
(docs/reference/hardware.md §4.1). Each case is its own kernel, written with static tensors
(``LocalTensor.at``) and explicit SetFlag/WaitFlag like the official ``add.asc``:

* case 1 — one core, vector Add, 8 KB copies (dataCopyLen 4096);
* case 2 — 48 cores (rows split evenly, remainder to the first cores), 8 KB copies;
* case 3 — 48 cores, 32 KB copies (dataCopyLen 16384);
* case 4 — case 3 with ping-pong double buffering (6 buffers fill the 192 KiB UB);
* case 5 — case 4 with the L2 cache bypassed for the inputs
  (``SetL2CacheHint(CACHE_MODE_DISABLE)`` on xGm and yGm);
* case 6 — case 5 with the ping and pong buffers placed so that the operands of one
  repeat fall in different UB bank groups (dataCopyLen 16256: y starts 256 B after
  where it would, docs/reference/hardware.md §2 "UB banks").

Each case's figures are those of a launch that follows a launch of the same kernel (the L2
as the previous run left it), as msprof measures a kernel run repeatedly (``--cold``: a
first launch; docs/calibration.md "The model"). It prints what msprof op reports: Task Duration, aiv_mte2_time, aiv_mte3_time,
aiv_vec_time, aiv_scalar_time (µs), and the example's bandwidths (read = bytes read /
aiv_mte2_time; read-write = all bytes / aiv_mte2_time), next to the measured figures of
the official example.

Run: ``python examples/add_study.py --case 3`` (or ``--case all``, which ends with a table
of every figure next to msprof's and the signed error; ``--rows 1024`` for a smaller
shape; ``--json FILE`` writes the figures as JSON).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc.types import Pipe
from npusim.timing import L2Cache, simulate
from npusim.ascendc import (Add, CacheMode, DataCopy, GetBlockIdx, GetBlockNum, GlobalTensor,
                            HardEvent, LocalTensor, SetFlag, TPosition, WaitFlag, half)

COLS = 8192
#: Measured on Atlas A2 by the official example (msprof op), µs; docs/reference/hardware.md §4.1
#: for cases 1-3 and the example's README for cases 4-6. Shown next to the simulation,
#: never used by it.
MEASURED = {
    1: dict(task=6909.6, mte2=6208.762, mte3=2613.205, vec=761.65, scalar=231.166),
    2: dict(task=306.58, mte2=215.485, mte3=54.33, vec=15.885, scalar=8.219),
    3: dict(task=268.5, mte2=184.369, mte3=57.354, vec=12.845, scalar=2.833),
    4: dict(task=264.02, mte2=250.528, mte3=84.988, vec=12.846, scalar=2.796),
    5: dict(task=187.68, mte2=175.997, mte3=160.291, vec=12.846, scalar=4.479),
    6: dict(task=184.52, mte2=171.611, mte3=121.442, vec=6.954, scalar=3.424),
}
CASES = {  # case -> (cores, dataCopyLen, double buffer, L2 bypass for inputs, bank-aware layout)
    1: (1, 4096, False, False, False),
    2: (48, 4096, False, False, False),
    3: (48, 16384, False, False, False),
    4: (48, 16384, True, False, False),
    5: (48, 16384, True, True, False),
    6: (48, 16256, True, True, True),
}
MAX_DATA_COPY_LEN = 16384


class KernelAdd:
    """One block: its share of the rows, processed in chunks of ``dataCopyLen`` halves."""

    def __init__(self, x, y, z, rows, data_copy_len, bypass_l2):
        blockIdx, blockNum = GetBlockIdx(), GetBlockNum()
        baseM, remainderM = divmod(rows, blockNum)       # even split, remainder first
        if blockIdx < remainderM:
            coreM = baseM + 1
            startM = blockIdx * coreM
        else:
            coreM = baseM
            startM = remainderM * (baseM + 1) + (blockIdx - remainderM) * baseM
        self.total = coreM * COLS
        self.len = data_copy_len
        off = startM * COLS * 2
        self.xGm, self.yGm, self.zGm = GlobalTensor(half), GlobalTensor(half), GlobalTensor(half)
        self.xGm.SetGlobalBuffer(x + off, self.total)
        self.yGm.SetGlobalBuffer(y + off, self.total)
        self.zGm.SetGlobalBuffer(z + off, self.total)
        if bypass_l2:                                   # case 5, 6: inputs are read once
            self.xGm.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
            self.yGm.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)

    def chunks(self):
        for start in range(0, self.total, self.len):
            yield start, min(self.len, self.total - start)

    def ProcessSingle(self, wait_copy_out=False):
        """Cases 1-3: one buffer each for x, y, z; MTE2 -> V -> MTE3 ordered by flags.

        Case 1 (the official ``ProcessSingle``) lets the copy-out of one chunk overlap the
        copy-in of the next. For the multi-core ``Process`` of cases 2 and 3
        (``wait_copy_out``) the next copy-in waits for the copy-out (MTE3 -> MTE2): the
        example's source is not part of our references, but its published times say so —
        Task Duration = aiv_mte2 + aiv_vec + aiv_mte3 (+5%) in cases 2 and 3, against
        Task Duration = aiv_mte2 + aiv_vec in case 1 [R].
        """
        n = self.len
        x = LocalTensor.at(half, TPosition.VECIN, 0, n)
        y = LocalTensor.at(half, TPosition.VECIN, n * 2, n)
        z = LocalTensor.at(half, TPosition.VECOUT, n * 4, n)
        for i, (start, cur) in enumerate(self.chunks()):
            if i > 0:
                WaitFlag(HardEvent.V_MTE2, 0)      # the previous Add has read x and y
            DataCopy(x, self.xGm[start], cur)
            DataCopy(y, self.yGm[start], cur)
            SetFlag(HardEvent.MTE2_V, 0)
            WaitFlag(HardEvent.MTE2_V, 0)
            if i > 0:
                WaitFlag(HardEvent.MTE3_V, 0)      # the previous z has been copied out
            Add(z, x, y, cur)
            SetFlag(HardEvent.V_MTE2, 0)
            SetFlag(HardEvent.V_MTE3, 0)
            WaitFlag(HardEvent.V_MTE3, 0)
            DataCopy(self.zGm[start], z, cur)
            SetFlag(HardEvent.MTE3_V, 0)
            if wait_copy_out:
                SetFlag(HardEvent.MTE3_MTE2, 0)
                WaitFlag(HardEvent.MTE3_MTE2, 0)
        WaitFlag(HardEvent.V_MTE2, 0)
        WaitFlag(HardEvent.MTE3_V, 0)

    def ProcessDoubleBuffer(self, bank_aware):
        """Cases 4-6: ping-pong x/y/z buffers, eventID 0 for ping and 1 for pong."""
        n = MAX_DATA_COPY_LEN
        if bank_aware:      # the official case-6 layout: y 256 B closer to x, z apart
            step = self.len * 2
            addrs = [(0, step, n * 2 * 4), (n * 2 * 2, n * 2 * 2 + step, n * 2 * 4 + step)]
        else:               # xPing yPing zPing xPong yPong zPong, 32 KB each
            addrs = [(0, n * 2, n * 4), (n * 6, n * 8, n * 10)]
        bufs = [tuple(LocalTensor.at(half, pos, a, self.len)
                      for pos, a in zip((TPosition.VECIN, TPosition.VECIN, TPosition.VECOUT), ab))
                for ab in addrs]
        for i, (start, cur) in enumerate(self.chunks()):
            ev = i % 2
            x, y, z = bufs[ev]
            if i > 1:
                WaitFlag(HardEvent.V_MTE2, ev)
            DataCopy(x, self.xGm[start], cur)
            DataCopy(y, self.yGm[start], cur)
            SetFlag(HardEvent.MTE2_V, ev)
            WaitFlag(HardEvent.MTE2_V, ev)
            if i > 1:
                WaitFlag(HardEvent.MTE3_V, ev)
            Add(z, x, y, cur)
            SetFlag(HardEvent.V_MTE2, ev)
            SetFlag(HardEvent.V_MTE3, ev)
            WaitFlag(HardEvent.V_MTE3, ev)
            DataCopy(self.zGm[start], z, cur)
            SetFlag(HardEvent.MTE3_V, ev)
        for ev in range(min(2, i + 1)):
            WaitFlag(HardEvent.V_MTE2, ev)
            WaitFlag(HardEvent.MTE3_V, ev)


def add_kernel(x, y, z, rows, case, data_copy_len=None):
    cores, length, double, bypass, bank_aware = CASES[case]
    op = KernelAdd(x, y, z, rows, length if data_copy_len is None else data_copy_len, bypass)
    if double:
        op.ProcessDoubleBuffer(bank_aware)
    else:
        op.ProcessSingle(wait_copy_out=cores > 1)


def replay_warm(blocks, soc, previous: int = 1):
    """Replay a launch's records after ``previous`` launches of the same records, on one L2.

    msprof op reports a launch that follows others of the same kernel (the Add example's
    figures are of repeated runs): its L2 holds what the previous launch left, dirty lines
    included, so every byte a launch writes is written back to HBM by that launch or the
    next. A single simulated launch starts from a cold L2; this is the steady state.
    Returns the measured launch's KernelTiming (cycles).
    """
    l2 = L2Cache(soc)
    for _ in range(previous):
        simulate(blocks, soc, l2=l2)
    return simulate(blocks, soc, l2=l2)


def figures(timing, soc) -> dict:
    """msprof's figures of a vector launch from its timing: Task Duration and the per-pipe
    busy times averaged over the cores (µs)."""
    us = 1e6 / soc.freq_hz
    busy = timing.pipe_busy
    return {"task_duration_us": soc.launch_overhead_us + timing.cycles * us,
            "aiv_mte2_time_us": float(busy[Pipe.PIPE_MTE2].mean() * us),
            "aiv_mte3_time_us": float(busy[Pipe.PIPE_MTE3].mean() * us),
            "aiv_vec_time_us": float(busy[Pipe.PIPE_V].mean() * us),
            "aiv_scalar_time_us": float(busy[Pipe.PIPE_S].mean() * us)}


def run_case(case: int, rows: int = 8192, soc_name="Ascend910B1", check: bool = True,
             warm: bool = True, data_copy_len: int | None = None):
    """Simulate one case; return (figures dict, KernelProfile).

    ``warm``: the figures are those of a launch that follows one launch of the same kernel
    (:func:`replay_warm`, as msprof measures); otherwise those of the profile, a first
    launch on a cold L2. The profile is always the first launch's (its ``records`` are the
    instructions replayed). ``data_copy_len`` replaces the case's dataCopyLen (halves).
    """
    soc = get_soc(soc_name)
    gm = GlobalMemory(soc.memory_size)
    n = rows * COLS
    rng = np.random.default_rng(case)
    xs = rng.standard_normal(n, dtype=np.float32).astype(np.float16)
    ys = rng.standard_normal(n, dtype=np.float32).astype(np.float16)
    x, y, z = gm.malloc(n * 2), gm.malloc(n * 2), gm.malloc(n * 2)
    gm.write(x, xs)
    gm.write(y, ys)
    cores = min(CASES[case][0], soc.vector_block_num)
    length = CASES[case][1] if data_copy_len is None else int(data_copy_len)
    t0 = time.perf_counter()
    # static tensors use the whole physical UB, as the official example does
    prof = run_kernel(add_kernel, cores, (x, y, z, rows, case, length), soc=soc, gm=gm,
                      name=f"add_case{case}", reserve_ub=False, keep_spans=True)
    host_s = time.perf_counter() - t0
    if check:
        out = np.frombuffer(gm.view(z, n * 2), np.float16)
        if not np.array_equal(out, xs + ys):
            raise AssertionError(f"case {case}: z != x + y")
    if warm:
        t = figures(replay_warm(prof.records, soc), soc)
    else:
        t = figures(prof.timing, soc)
    read, written = prof.bytes_read, prof.bytes_written
    fig = {
        "case": case, "rows": rows, "cols": COLS, "blockDim": cores,
        "dataCopyLen": length, "warm": warm, **t,
        "bytes_read": read, "bytes_written": written,
        "read_bandwidth_TBps": read / (t["aiv_mte2_time_us"] * 1e-6) / 1e12,
        "read_write_bandwidth_TBps": (read + written) / (t["aiv_mte2_time_us"] * 1e-6) / 1e12,
        "host_seconds": host_s,
    }
    return fig, prof


def _print(fig):
    m = MEASURED.get(fig["case"]) if fig["rows"] == 8192 else None
    print(f"case {fig['case']}: blockDim {fig['blockDim']}, dataCopyLen {fig['dataCopyLen']}, "
          f"{fig['rows']} x {fig['cols']} half  (host {fig['host_seconds']:.1f} s)")
    rows = (("Task Duration", "task_duration_us", "task"), ("aiv_mte2_time", "aiv_mte2_time_us", "mte2"),
            ("aiv_mte3_time", "aiv_mte3_time_us", "mte3"), ("aiv_vec_time", "aiv_vec_time_us", "vec"),
            ("aiv_scalar_time", "aiv_scalar_time_us", "scalar"))
    for label, key, mkey in rows:
        line = f"  {label:<16}{fig[key]:12.3f} us"
        if m and mkey:
            line += f"   measured {m[mkey]:10.3f} us  ({(fig[key] / m[mkey] - 1) * 100:+.1f}%)"
        print(line)
    print(f"  read bandwidth {fig['read_bandwidth_TBps']:.4f} TB/s, read-write "
          f"{fig['read_write_bandwidth_TBps']:.4f} TB/s (bytes / aiv_mte2_time)")


def table(figs) -> str:
    """The figures of several cases next to msprof's, with the signed error of each
    (cases 1-3 are the calibration data of docs/calibration.md, 4-6 predictions)."""
    head = (f"{'case':<16}" + "".join(f"{label:>30}" for label, _, _ in _TABLE))
    lines = [head, f"{'':<16}" + "".join(f"{'sim / msprof (error)':>30}" for _ in _TABLE)]
    for fig in figs:
        m = MEASURED.get(fig["case"]) if fig["rows"] == 8192 else None
        role = "calibration" if fig["case"] in (1, 2, 3) else "prediction"
        cells = []
        for _, key, mkey in _TABLE:
            if m:
                cells.append(f"{fig[key]:.1f} / {m[mkey]:.1f} ({(fig[key] / m[mkey] - 1) * 100:+.1f}%)")
            else:
                cells.append(f"{fig[key]:.1f}")
        lines.append(f"{fig['case']} {role:<14}" + "".join(f"{c:>30}" for c in cells))
    return "\n".join(lines)


_TABLE = (("Task Duration (us)", "task_duration_us", "task"),
          ("aiv_mte2_time (us)", "aiv_mte2_time_us", "mte2"),
          ("aiv_mte3_time (us)", "aiv_mte3_time_us", "mte3"),
          ("aiv_vec_time (us)", "aiv_vec_time_us", "vec"),
          ("aiv_scalar_time (us)", "aiv_scalar_time_us", "scalar"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="all", help="1-6 or 'all'")
    parser.add_argument("--rows", type=int, default=8192, help="rows of the 8192-column inputs")
    parser.add_argument("--soc", default="Ascend910B1")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--cold", action="store_true",
                        help="figures of a first launch (cold L2) instead of a repeated one")
    args = parser.parse_args(argv)
    if args.case == "all":
        cases = sorted(CASES)
    elif args.case.isdigit() and int(args.case) in CASES:
        cases = [int(args.case)]
    else:
        parser.error(f"--case must be one of 1-6 or 'all', got {args.case!r}")
    if args.rows < 1:
        parser.error("--rows must be positive")
    figs = []
    for c in cases:
        fig, _ = run_case(c, args.rows, args.soc, warm=not args.cold)
        _print(fig)
        figs.append(fig)
    if len(figs) > 1:
        print()
        print(table(figs))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figs, f, indent=2)
    return figs


if __name__ == "__main__":
    main()
    sys.exit(0)
