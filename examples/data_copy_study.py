"""Huawei's DataCopy best practice, scenario by scenario, on the simulated Ascend910B1.

The asc-devkit example ``examples/01_simd_cpp_api/05_best_practices/04_memory_access/data_copy``
copies a half matrix from GM into a core's local memory and does nothing else, to show what
makes MTE2 fast: the size of each copy, the alignment of its rows, L2 reuse, and many cores
reading the same GM lines at once. Its README measures each scenario with msprof on Atlas
A2/A3; this module renders each scenario as an Ascend C kernel of our own (npusim.ascendc)
and prints the simulated figures next to the measured ones.

* U1-U8, ``COPY_DST=UB``: 48 AIV blocks, ``DataCopyPad`` GM -> UB (``DataCopyExtParams``:
  ``blockCount`` = tile rows, ``blockLen`` = tile columns x 2 B, ``srcStride`` = the rest of
  the GM row), every copy into the same UB buffer, no flags;
* L1-L7, ``COPY_DST=L1``: 24 AIC blocks, ``DataCopy`` GM -> L1 with ``Nd2NzParams``
  (ND -> NZ on the way, ``dstNzC0Stride`` = tile rows rounded up to 16).

The scenarios (:data:`SCENARIOS`): the matrix is cut in M among the blocks; each block copies
its rows tile by tile (U1-U4, L1-L3), or copies its rows 4 times (U5, L4: the whole width per
pass; U6, L5: the width cut in 4 slices, each copied 4 times before the next, so a slice
can stay in L2). In U7/U8 and L6/L7 every block copies the whole [6144, 512] matrix with the L2
bypassed (``CACHE_MODE_DISABLE``): in the same order as the other blocks (U7, L6), or
starting at its own block of rows (U8, L7: row block ``(i + blockIdx) % blockNum`` at step i).

Each scenario runs as one cold launch (a first launch, the L2 empty), as the example's
``demo`` runs it once. Printed: Task Duration, the busy time of each pipe averaged over the
cores (msprof's ``aiv_*_time`` / ``aic_*_time``), GM bytes read, and the L2 hit rate (bytes
read from L2 hits / bytes read), next to msprof's figures from the example's README
(:data:`MEASURED`, Atlas A2) with the signed error. Five scenarios (:data:`FITTED`: U1, U2,
U7, U8, L7) fixed one parameter each of the MTE issue model; the other ten are predictions
(docs/calibration.md, "The MTE issue model" and "DataCopy best practice").

Run: ``python examples/data_copy_study.py --case U3`` (or ``--case U1,U3,L2``, or
``--case all``, which ends with a table and the mean |error|); ``--plot effects.png`` draws
the effects the best practice teaches, as simulated / measured ratios of Task Duration;
``--scale 0.25`` runs a smaller problem (the rows of each block and the columns scaled, in
whole tiles): the measured figures are at full size only, so a scaled run prints no errors.
At full size U1 issues 49,152 copies per block (2.4 million in all) and takes about
20 s of host CPU time, 70% of it the timing replay, which replays the 48 blocks as
one lockstep group (npusim.group_replay; benchmarks/bench_small_copies.py).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import NamedTuple

import numpy as np

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import (CacheMode, DataCopy, DataCopyExtParams, DataCopyPad,
                            DataCopyPadExtParams, GetBlockIdx, GlobalTensor, KernelMetaType,
                            Nd2NzParams, PipeBarrier, PIPE_ALL, TBuf, TPipe, TPosition, half)

#: Where the measured figures come from (the example's README, Atlas A2/A3 rows).
SOURCE = ("asc-devkit examples/01_simd_cpp_api/05_best_practices/04_memory_access/data_copy/"
          "README.md")


class Scenario(NamedTuple):
    """One scenario of the example (data_copy.asc's UbScenario / L1Scenario).

    dst: "UB" (AIV blocks, DataCopyPad) or "L1" (AIC blocks, DataCopy with Nd2NzParams).
    m, n: the half matrix [m, n] in GM. blocks: blockDim. tile_m, tile_n: one copy's tile.
    mode: "tiles" — each block's rows, tile by tile, once; "whole4" — each block's rows,
    the whole width, 4 times; "split4" — the width in 4 slices, each slice 4 times;
    "same" / "staggered" — every block copies the whole matrix, L2 bypassed, row blocks in
    the same order / starting at its own.
    """
    dst: str
    m: int
    n: int
    blocks: int
    tile_m: int
    tile_n: int
    mode: str
    what: str


SCENARIOS = {
    "U1": Scenario("UB", 12288, 12288, 48, 1, 64, "tiles", "small copies: Tile [1,64], 128 B"),
    "U2": Scenario("UB", 12288, 12288, 48, 64, 64, "tiles", "medium copies: Tile [64,64]"),
    "U3": Scenario("UB", 12288, 12288, 48, 64, 1024, "tiles", "large copies: Tile [64,1024]"),
    "U4": Scenario("UB", 12288, 12287, 48, 64, 1024, "tiles", "as U3, rows of 2046 B (N 12287)"),
    "U5": Scenario("UB", 12288, 12288, 48, 64, 1024, "whole4", "whole matrix copied 4 times"),
    "U6": Scenario("UB", 12288, 12288, 48, 64, 1024, "split4", "4 N slices, each 4 times"),
    "U7": Scenario("UB", 6144, 512, 48, 128, 64, "same", "every block loads all, same order"),
    "U8": Scenario("UB", 6144, 512, 48, 128, 64, "staggered", "as U7, order staggered by block"),
    "L1": Scenario("L1", 12288, 12288, 24, 64, 64, "tiles", "Nd2Nz, Tile [64,64]"),
    "L2": Scenario("L1", 12288, 12288, 24, 64, 256, "tiles", "Nd2Nz, Tile [64,256]"),
    "L3": Scenario("L1", 12288, 12287, 24, 64, 256, "tiles", "as L2, N 12287"),
    "L4": Scenario("L1", 12288, 12288, 24, 64, 1024, "whole4", "whole matrix copied 4 times"),
    "L5": Scenario("L1", 12288, 12288, 24, 64, 1024, "split4", "4 N slices, each 4 times"),
    "L6": Scenario("L1", 6144, 512, 24, 256, 64, "same", "every block loads all, same order"),
    "L7": Scenario("L1", 6144, 512, 24, 256, 64, "staggered", "as L6, order staggered by block"),
}

#: msprof on Atlas A2 (Atlas A2/A3 rows of the README's tables, :data:`SOURCE`): Task
#: Duration (µs), total cycles, and the MTE2 time (µs) where the README gives it; for the
#: L2 scenarios (U5, U6, L4, L5) the core time (aiv_time / aicore_time, µs), the read
#: hit and miss-allocate counts of the r0 and r1 channels and the README's hit rate (%).
#: Shown next to the simulation, never used by it.
MEASURED = {
    "U1": dict(task=564.84, cycles=49222116, mte2=548.161),
    "U2": dict(task=233.54, cycles=20167322, mte2=220.772),
    "U3": dict(task=215.82, cycles=18563430, mte2=202.657),
    "U4": dict(task=275.3, cycles=23648813, mte2=259.047),
    "U5": dict(task=828.06, cycles=72465129, core=816.05, r0_hit=212, r0_miss=4718595,
               r1_hit=217, r1_miss=4718592, l2_hit_pct=0.005),
    "U6": dict(task=365.74, cycles=31484525, core=354.56, r0_hit=3539159, r0_miss=1179644,
               r1_hit=3539158, r1_miss=1179655, l2_hit_pct=75.00),
    "U7": dict(task=539.42, cycles=42823246, mte2=474.717),
    "U8": dict(task=328.88, cycles=28054500, mte2=307.38),
    "L1": dict(task=300.7, cycles=12870910, mte2=283.508),
    "L2": dict(task=230.24, cycles=9795512, mte2=214.519),
    "L3": dict(task=438.76, cycles=19020328, mte2=422.515),
    "L4": dict(task=899.34, cycles=38725327, core=872.19, r0_hit=305, r0_miss=4718591,
               r1_hit=287, r1_miss=4718601, l2_hit_pct=0.006),
    "L5": dict(task=414.96, cycles=17662155, core=397.8, r0_hit=3539061, r0_miss=1179684,
               r1_hit=3539133, r1_miss=1179616, l2_hit_pct=75.00),
    "L6": dict(task=278.56, cycles=10880150, mte2=240.198),
    "L7": dict(task=221.34, cycles=9532153, mte2=209.8),
}

#: The scenarios whose MTE2 time fixed a parameter of the MTE issue model (each in closed
#: form, docs/calibration.md "The MTE issue model"): U1 the issue cost, U2 the burst cost
#: through L2, U8 the burst cost around it, L7 the AIC's factor, U7 the same-address
#: bandwidth. The others are predictions.
FITTED = ("U1", "U2", "U7", "U8", "L7")

#: The effects the best practice teaches, each a ratio of two scenarios' Task Durations.
EFFECTS = (
    ("small / large blocks (UB)", "U1", "U3"),
    ("medium / large blocks (UB)", "U2", "U3"),
    ("unaligned / aligned (UB)", "U4", "U3"),
    ("unaligned / aligned (L1)", "L3", "L2"),
    ("L2 reuse: sliced / whole (UB)", "U6", "U5"),
    ("L2 reuse: sliced / whole (L1)", "L5", "L4"),
    ("staggered / same order (UB)", "U8", "U7"),
    ("staggered / same order (L1)", "L7", "L6"),
)

BLOCK_CUBE = 16          # rows of an NZ fractal: dstNzC0Stride is tile_m rounded up to it


def measured_hit_rate(name: str) -> float | None:
    """The README's L2 hit rate of a scenario, (r0_hit + r1_hit) / (hits + miss-allocates),
    in %, from its counts; None where the README gives no L2 counts."""
    m = MEASURED[name]
    if "r0_hit" not in m:
        return None
    hits = m["r0_hit"] + m["r1_hit"]
    return 100.0 * hits / (hits + m["r0_miss"] + m["r1_miss"])


def scaled_shape(sc: Scenario, scale: float) -> tuple[int, int]:
    """The [m, n] of a scenario run at ``scale``: each block's rows and the columns scaled
    by ``scale`` and rounded down to whole tiles (at least one; the width of the split
    scenarios to a multiple of 4 tiles). In U7/U8 and L6/L7 a block's rows are one tile
    already, so only the columns shrink. An unaligned scenario keeps its width one column
    short of whole tiles. ``scale`` 1 gives the example's shape."""
    aligned_n = -(-sc.n // sc.tile_n) * sc.tile_n
    unit_n = sc.tile_n * (4 if sc.mode == "split4" else 1)
    n = max(unit_n, int(aligned_n * scale) // unit_n * unit_n) - (aligned_n - sc.n)
    if sc.mode in ("same", "staggered"):
        return sc.m, n
    rows = sc.m // sc.blocks
    rows = max(sc.tile_m, int(rows * scale) // sc.tile_m * sc.tile_m)
    return rows * sc.blocks, n


def tile_origins(sc: Scenario, m: int, n: int, block: int):
    """The (row, column, columns) of each tile a block copies, in its order.

    ``block`` may be ``GetBlockIdx()`` in a lockstep group (npusim.lockstep): the loops'
    bounds are the same for every block and only the rows depend on it, as in the
    example's kernel (the block's first row is an offset, not a loop bound), so the
    blocks run as one group."""
    rows = m // sc.blocks

    def sweep(first_row, col0, width):
        for r in range(0, rows, sc.tile_m):
            for c in range(col0, col0 + width, sc.tile_n):
                yield first_row + r, c, min(sc.tile_n, col0 + width - c)

    if sc.mode == "tiles":
        yield from sweep(block * rows, 0, n)
    elif sc.mode == "whole4":
        for _ in range(4):
            yield from sweep(block * rows, 0, n)
    elif sc.mode == "split4":
        quarter = n // 4
        for s in range(4):
            for _ in range(4):
                yield from sweep(block * rows, s * quarter, quarter)
    else:       # every block copies every row block; "staggered" starts at its own
        shift = block if sc.mode == "staggered" else 0
        for i in range(sc.blocks):
            yield from sweep((i + shift) % sc.blocks * rows, 0, n)


def data_copy_kernel(src, sc: Scenario, m: int, n: int):
    """One block of a scenario: every tile of :func:`tile_origins` copied into one buffer
    of local memory (UB or L1), no compute, no flags.

    The buffer is a TBuf (no queue, no implicit sync), as the example's static tensor at
    address 0: each copy overwrites the last, and MTE2 runs them back to back."""
    block = GetBlockIdx()
    pipe = TPipe()
    src_gm = GlobalTensor(half)
    src_gm.SetGlobalBuffer(src, m * n)
    if sc.mode in ("same", "staggered"):    # the example keeps L2 out of these
        src_gm.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
    if sc.dst == "UB":
        buf = TBuf(TPosition.VECIN)
        pipe.InitBuffer(buf, sc.tile_m * sc.tile_n * 2)
        ub = buf.Get(half)
        no_pad = DataCopyPadExtParams(False, 0, 0, 0)
        for row, col, cols in tile_origins(sc, m, n, block):
            params = DataCopyExtParams(sc.tile_m, cols * 2, (n - cols) * 2, 0)
            DataCopyPad(ub, src_gm[row * n + col], params, no_pad)
    else:
        c0_stride = -(-sc.tile_m // BLOCK_CUBE) * BLOCK_CUBE
        buf = TBuf(TPosition.A1)
        pipe.InitBuffer(buf, c0_stride * (-(-sc.tile_n // 16) * 16) * 2)
        l1 = buf.Get(half)
        for row, col, cols in tile_origins(sc, m, n, block):
            DataCopy(l1, src_gm[row * n + col],
                     Nd2NzParams(1, sc.tile_m, cols, 0, n, c0_stride, 1, 0))
    PipeBarrier(PIPE_ALL)


def run_scenario(name: str, scale: float = 1.0, soc_name: str = "Ascend910B1",
                 blocks: int | None = None) -> dict:
    """Simulate one scenario (a cold launch); return its figures.

    ``blocks`` launches fewer blocks than the example (each with the rows it would have:
    a quick check that a scenario runs; the measured figures are at the example's blockDim).

    Keys: scenario, m, n, blockDim, scale, task_duration_us, the profile's pipe times
    (``aiv_mte2_time_us`` ... or ``aic_mte2_time_us`` ...), bytes_read, hbm_bytes,
    l2_hit_rate_pct (bytes read from L2 hits / bytes read, %), copies (per block),
    host_seconds.

    Raises:
        KeyError: an unknown scenario name.
    """
    sc = SCENARIOS[name]
    if blocks is not None and blocks != sc.blocks:
        sc = sc._replace(blocks=int(blocks), m=sc.m // sc.blocks * int(blocks))
    soc = get_soc(soc_name)
    m, n = scaled_shape(sc, scale)
    gm = GlobalMemory(soc.memory_size)
    src = gm.malloc(m * n * 2)
    # the data does not change the timing; a ramp makes a wrong copy visible in a debugger
    gm.write(src, np.resize(np.arange(2048, dtype=np.float16), m * n))   # 0..2047 repeated
    kt = KernelMetaType.KERNEL_TYPE_AIV_ONLY if sc.dst == "UB" else \
        KernelMetaType.KERNEL_TYPE_AIC_ONLY
    t0 = time.perf_counter()
    prof = run_kernel(data_copy_kernel, sc.blocks, (src, sc, m, n), soc=soc, gm=gm,
                      name=f"data_copy_{name}", kernel_type=kt)
    host = time.perf_counter() - t0
    fig = {"scenario": name, "m": m, "n": n, "blockDim": sc.blocks, "scale": scale,
           "task_duration_us": prof.duration_us}
    for pipe, us in prof.pipe_time_us.items():
        fig[f"{pipe}_us"] = float(us)
    read = prof.bytes_read
    hit = prof.timing.l2_hit_bytes if prof.timing is not None else 0.0
    fig.update(bytes_read=read, hbm_bytes=float(prof.hbm_bytes),
               l2_hit_rate_pct=100.0 * hit / read if read else 0.0,
               copies=sum(1 for _ in tile_origins(sc, m, n, 0)), host_seconds=host)
    return fig


def full_size(fig: dict) -> bool:
    """Whether a run is the example's problem (its shape and blockDim): only then is it
    compared with msprof."""
    sc = SCENARIOS[fig["scenario"]]
    return (fig["m"], fig["n"], fig["blockDim"]) == (sc.m, sc.n, sc.blocks)


def error_pct(sim: float, measured: float) -> float:
    """Signed error of a simulated figure against the measured one (%)."""
    return (sim / measured - 1.0) * 100.0


def effects(tasks: dict) -> list[tuple[str, float | None]]:
    """The :data:`EFFECTS` ratios from ``tasks`` (scenario -> Task Duration); None where a
    scenario of the pair is missing."""
    out = []
    for label, num, den in EFFECTS:
        ok = num in tasks and den in tasks
        out.append((label, tasks[num] / tasks[den] if ok else None))
    return out


def _print(fig: dict) -> None:
    sc = SCENARIOS[fig["scenario"]]
    m = MEASURED[fig["scenario"]] if full_size(fig) else None
    side = "aiv" if sc.dst == "UB" else "aic"
    print(f"{fig['scenario']}: GM -> {sc.dst}, {sc.what}; half [{fig['m']},{fig['n']}], "
          f"Tile [{sc.tile_m},{sc.tile_n}], blockDim {fig['blockDim']}, {fig['copies']} copies "
          f"per block  (host {fig['host_seconds']:.1f} s)")

    def line(label, value, measured=None, unit="us"):
        s = f"  {label:<22}{value:12.3f} {unit}"
        if measured is not None:
            s += f"   measured {measured:10.3f} {unit}  ({error_pct(value, measured):+.1f}%)"
        print(s)

    line("Task Duration", fig["task_duration_us"], m and m["task"])
    for key in sorted(k for k in fig if k.startswith(side) and k.endswith("_time_us")):
        if fig[key] == 0 and key != f"{side}_mte2_time_us":
            continue        # pipes the kernel never uses
        mkey = "mte2" if key == f"{side}_mte2_time_us" else None
        line(key[:-3], fig[key], m.get(mkey) if m and mkey else None)
    print(f"  {'bytes read':<22}{fig['bytes_read']:12d} B    (HBM {fig['hbm_bytes']:.0f} B)")
    hit = measured_hit_rate(fig["scenario"]) if m else None
    s = f"  {'L2 hit rate':<22}{fig['l2_hit_rate_pct']:12.3f} %"
    if hit is not None:
        s += f"    measured {hit:10.3f} %  ((r0+r1 hit) / (hit + miss_allocate))"
    print(s)


def table(figs: list[dict]) -> str:
    """Task Duration of each scenario next to msprof's with the signed error, then the
    mean |error| over the full-size scenarios."""
    lines = [f"{'scenario':<9}{'simulated (us)':>16}{'msprof (us)':>14}{'error':>10}"]
    errs, pred = [], []
    for fig in figs:
        sim = fig["task_duration_us"]
        name = fig["scenario"]
        if full_size(fig):
            meas = MEASURED[name]["task"]
            errs.append(error_pct(sim, meas))
            if name not in FITTED:
                pred.append(errs[-1])
            lines.append(f"{name:<9}{sim:16.1f}{meas:14.2f}{errs[-1]:+9.1f}%  "
                         + ("fitted" if name in FITTED else "prediction"))
        else:
            lines.append(f"{name:<9}{sim:16.1f}{'(scaled)':>14}{'':>10}")
    if errs:
        lines.append(f"mean |error| {np.mean(np.abs(errs)):.1f}% over {len(errs)} scenarios "
                     "(Task Duration)")
    if pred:
        lines.append(f"mean |error| {np.mean(np.abs(pred)):.1f}% over the {len(pred)} "
                     "predictions")
    return "\n".join(lines)


def effects_table(figs: list[dict]) -> str:
    sim = effects({f["scenario"]: f["task_duration_us"] for f in figs})
    meas = effects({k: v["task"] for k, v in MEASURED.items()})
    lines = [f"{'effect (Task Duration ratio)':<32}{'simulated':>10}{'msprof':>8}"]
    for (label, s), (_, r) in zip(sim, meas):
        if s is not None:
            lines.append(f"{label:<32}{s:10.2f}{r:8.2f}")
    return "\n".join(lines)


def plot(figs: list[dict], path: str) -> None:
    """Draw the effects: simulated and measured ratio of each pair, side by side (log)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    sim = effects({f["scenario"]: f["task_duration_us"] for f in figs})
    meas = effects({k: v["task"] for k, v in MEASURED.items()})
    rows = [(label, s, r) for (label, s), (_, r) in zip(sim, meas) if s is not None]
    if not rows:
        raise SystemExit("--plot needs both scenarios of at least one effect (e.g. --case all)")
    y = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(rows) + 1.5))
    # each bar runs from 1 (no effect) to the ratio, so its direction is the effect's
    for dy, col, label in ((-0.2, 1, "simulated"), (0.2, 2, "msprof (Atlas A2)")):
        vals = np.array([row[col] for row in rows])
        ax.barh(y + dy, vals - 1.0, 0.4, left=1.0, label=label)
        for yy, v in zip(y + dy, vals):
            ax.annotate(f"{v:.2f}", (v, yy), va="center", fontsize=8,
                        ha="left" if v >= 1 else "right",
                        xytext=(3 if v >= 1 else -3, 0), textcoords="offset points")
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log")
    lo = min(min(r[1], r[2]) for r in rows)
    hi = max(max(r[1], r[2]) for r in rows)
    ax.set_xlim(min(lo, 1.0) / 1.6, max(hi, 1.0) * 1.6)
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=2))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_yticks(y, [label for label, _, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("Task Duration ratio (log scale; 1 = no effect)")
    scaled = any(not full_size(f) for f in figs)
    ax.set_title("DataCopy best practice: the effects" + (" (simulated at reduced scale)"
                                                          if scaled else ""))
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_cases(text: str) -> list[str]:
    """``all``, one scenario name or a comma-separated list (case-insensitive)."""
    if text.strip().lower() == "all":
        return list(SCENARIOS)
    names = [t.strip().upper() for t in text.split(",") if t.strip()]
    bad = [t for t in names if t not in SCENARIOS]
    if bad or not names:
        raise ValueError(f"--case must be 'all' or names among {', '.join(SCENARIOS)}, "
                         f"got {text!r}")
    return names


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="all", help="U1-U8, L1-L7, a comma list, or 'all'")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="problem size factor in (0, 1] (measured figures: 1 only)")
    parser.add_argument("--soc", default="Ascend910B1")
    parser.add_argument("--plot", help="draw the effects to this PNG file")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    try:
        names = parse_cases(args.case)
    except ValueError as e:
        parser.error(str(e))
    if not (0 < args.scale <= 1) or not math.isfinite(args.scale):
        parser.error(f"--scale must be in (0, 1], got {args.scale}")
    figs = []
    for name in names:
        fig = run_scenario(name, args.scale, args.soc)
        _print(fig)
        figs.append(fig)
    if len(figs) > 1:
        print()
        print(table(figs))
        print()
        print(effects_table(figs))
    if args.plot:
        plot(figs, args.plot)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figs, f, indent=2)
    return figs


if __name__ == "__main__":
    main()
    sys.exit(0)
