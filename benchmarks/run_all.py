"""Run every simulator benchmark and write ``benchmarks/RESULTS.md``.

One command (``python benchmarks/run_all.py``) measures, each run in a fresh process so
that its peak resident memory is its own:

* ApplyFusedEmaAdam fp32 (Ascend910B1, mode 1, all cores) at 2^20 .. 2^25 elements, and
  EmbeddingDenseBackward (grad [rows, 1024] fp32, Zipf indices over 50000 rows) at 16384,
  32768 and 65536 rows: the simulator's host time (functional run and timing replay
  reported apart) next to the operator's numpy golden on the same data;
* the Add study's case 4 (z = x + y, half, rows x 8192; examples/add_study.py) at 2048,
  4096 and 8192 rows, next to numpy's half add;
* for each operator the ratio of host time per doubling of the data (N, 2N, 4N), next to
  the golden's and the simulated kernel's, and each operator's host time against
  blockDim 1..48 at a fixed N;
* what a launch records and what its replay schedules;
* peak resident memory of each run next to the bytes it allocated on the device plus its
  host arrays, with the baseline (interpreter and libraries, before any data) apart.

The embedding's scaling series grows the table with the rows (grad [N, 1024] over N x
50000/65536 weights), since doubling only the rows leaves the [50000, 1024] output's
ZerosLike and ViewCopy as they are. Simulator figures are the fastest of ``REPEATS`` runs,
each in a fresh process that first warms as much memory as it will touch (see
:func:`_prepare`).

Targets: simulator host time at most 2x the golden at the largest size (2^24 elements,
grad [65536, 1024]); each doubling of N between 1.8x and 2.2x; peak memory at most 1.5x
the device bytes plus host arrays. Takes about 5 minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _rss() -> int:
    """Resident bytes now (Linux /proc; elsewhere the peak so far)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return _peak()


def _prepare(warm_bytes: int) -> int:
    """Get a simulator child ready to measure; return its baseline resident bytes.

    Imports the simulator first, so that the baseline holds the interpreter and the
    libraries. Then, where Linux lets the peak be reset (``/proc/self/clear_refs``), touches
    and frees ``warm_bytes`` and resets the peak: on a virtual machine, memory nobody used
    for a few seconds can cost ten times more to touch the first time (measured here
    2026-11-21: 1.2 ms/MiB against 0.13 ms/MiB), which would be charged to whichever run
    first writes fresh device memory.
    """
    import aclnn  # noqa: F401  (the code under test, loaded before the baseline)
    import kernels.add  # noqa: F401
    import kernels.apply_fused_ema_adam.kernel  # noqa: F401
    import kernels.embedding_dense_backward  # noqa: F401
    import simpy  # noqa: F401
    try:
        with open("/proc/self/clear_refs", "w") as f:
            if warm_bytes:
                np.ones(warm_bytes, np.uint8)           # touched, then freed at once
            f.write("5")                                # reset the peak to the current RSS
    except OSError:
        pass
    return _rss()


#: bytes each simulator child touches and frees before it measures: more than its setup
#: (host data, with its float32 temporaries) and its run (device memory) touch together
WARM = {"adam_sim": lambda k: 60 << k,
        "embedding_sim": lambda rows, weights=50000: 4 * (rows + weights) * 4096,
        "add_case4": lambda rows: 10 * rows * 8192 * 2}


# -- one measurement per child process --------------------------------------------------------
def adam_sim(log2n: int) -> dict:
    bench = _module("bench_adam", HERE / "bench_apply_fused_ema_adam.py")
    r = bench.run_sim(log2n)
    return {"host_s": r["sim_wall_s"], "functional_s": r["functional_s"],
            "timing_s": r["timing_s"], "kernel_us": r["kernel_us"],
            "peak": r["peak_rss_bytes"], "bytes": r["device_plus_host_bytes"]}


def adam_golden(log2n: int) -> dict:
    bench = _module("bench_adam", HERE / "bench_apply_fused_ema_adam.py")
    return {"golden_s": bench.run_golden(log2n)["golden_wall_s"]}


def embedding_args(rows: int, weights: int = 50000):
    return argparse.Namespace(rows=rows, dim=1024, weights=weights, zipf=1.0)


def embedding_sim(rows: int, weights: int = 50000) -> dict:
    bench = _module("bench_emb", HERE / "bench_embedding_dense_backward.py")
    r = bench.run_sim(embedding_args(rows, weights))
    return {"host_s": r["sim_wall_s"], "functional_s": r["functional_s"],
            "timing_s": r["timing_s"], "kernel_us": r["graph_us"],
            "peak": r["peak_rss_bytes"], "bytes": r["device_plus_host_bytes"]}


def embedding_golden(rows: int, weights: int = 50000) -> dict:
    bench = _module("bench_emb", HERE / "bench_embedding_dense_backward.py")
    return {"golden_s": bench.run_golden(embedding_args(rows, weights))["golden_wall_s"]}


def add_case4(rows: int) -> dict:
    study = _module("add_study", ROOT / "examples" / "add_study.py")
    t0 = time.perf_counter()
    fig, prof = study.run_case(4, rows=rows, check=False)
    total = time.perf_counter() - t0
    n = rows * 8192
    return {"host_s": fig["host_seconds"], "setup_s": total - fig["host_seconds"],
            "functional_s": prof.host_functional_s, "timing_s": prof.host_timing_s,
            "kernel_us": fig["task_duration_us"], "peak": _peak(),
            "bytes": 3 * (n * 2 + 32) + 2 * n * 2}


def embedding_cores(cores: int) -> dict:
    """EmbeddingDenseBackward, grad [16384, 1024] over 12500 weights, on a device limited to
    ``cores`` vector cores (the tiling takes the limit as its core count)."""
    bench = _module("bench_emb", HERE / "bench_embedding_dense_backward.py")
    args = embedding_args(16384, 12500)
    args.max_cores = cores
    r = bench.run_sim(args)
    return {"host_s": r["sim_wall_s"], "functional_s": r["functional_s"],
            "timing_s": r["timing_s"], "kernel_us": r["graph_us"], "block_dim": r["block_dim"]}


def add_cores(cores: int) -> dict:
    """Add case 4 kernel, 2048 x 8192 half, launched on ``cores`` blocks."""
    study = _module("add_study", ROOT / "examples" / "add_study.py")
    from npusim import GlobalMemory, get_soc, run_kernel
    soc, rows = get_soc("Ascend910B1"), 2048
    n = rows * study.COLS
    gm = GlobalMemory(soc.memory_size)
    rng = np.random.default_rng(4)
    x, y, z = gm.malloc(n * 2), gm.malloc(n * 2), gm.malloc(n * 2)
    gm.write(x, rng.standard_normal(n, dtype=np.float32).astype(np.float16))
    gm.write(y, rng.standard_normal(n, dtype=np.float32).astype(np.float16))
    gm.view(z, n * 2)[:] = 0
    t0 = time.perf_counter()
    prof = run_kernel(study.add_kernel, cores, (x, y, z, rows, 4), soc=soc, gm=gm,
                      reserve_ub=False)
    return {"host_s": time.perf_counter() - t0, "functional_s": prof.host_functional_s,
            "timing_s": prof.host_timing_s, "kernel_us": prof.duration_us, "block_dim": cores}


def replay_stats(log2n: int) -> dict:
    """ApplyFusedEmaAdam 2^log2n: what a launch records and what the replay schedules.

    Records: how many, and the Python memory a launch holds when its replay starts, per
    record (tracemalloc). Replay: the items the per-pipe lists hold after consecutive
    vector/scalar instructions are merged into one simpy timeout each.
    """
    import tracemalloc

    import npusim.launch as launch
    from npusim.ascendc.core import DMA_IN, DMA_OUT, OP
    from npusim.timing import _split
    args, kwargs = _adam_launch(log2n)
    n = 1 << log2n
    seen = {}
    simulate = launch.simulate

    def spy(blocks, soc, keep_spans=False):
        seen["blocks"] = blocks
        seen["held"] = tracemalloc.get_traced_memory()[0]
        return simulate(blocks, soc, keep_spans)

    launch.simulate = spy
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    launch.run_kernel(*args, **kwargs)
    tracemalloc.stop()
    blocks = seen["blocks"]
    records = sum(len(b) for b in blocks)
    ops = sum(1 for b in blocks for r in b if r[0] == OP)
    dmas = sum(1 for b in blocks for r in b if r[0] in (DMA_IN, DMA_OUT))
    items = op_items = 0
    for b in blocks:
        for lst in _split(b, {r[1] for r in b}).values():
            items += len(lst)
            op_items += sum(1 for it in lst if it[0] == OP)
    return {"records": records, "bytes_per_record": (seen["held"] - base) / records,
            "data_bytes": 5 * n * 4, "ops": ops, "op_items": op_items, "dmas": dmas,
            "items": items}


def add_golden(rows: int) -> dict:
    """z = x + y in numpy half on the study's data (best of 3)."""
    rng = np.random.default_rng(4)
    n = rows * 8192
    xs = rng.standard_normal(n, dtype=np.float32).astype(np.float16)
    ys = rng.standard_normal(n, dtype=np.float32).astype(np.float16)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        np.add(xs, ys)
        best = min(best, time.perf_counter() - t0)
    return {"golden_s": best}


def _adam_launch(log2n: int, cores: int | None = None):
    """``run_kernel`` arguments of one ApplyFusedEmaAdam fp32 launch (mode 1) on zeroed
    tensors of 2^log2n elements, all cores or ``cores``."""
    from kernels.apply_fused_ema_adam.kernel import apply_fused_ema_adam
    from kernels.apply_fused_ema_adam.tiling import tiling
    from npusim import GlobalMemory, get_soc
    soc, n = get_soc("Ascend910B1"), 1 << log2n
    gm = GlobalMemory(soc.memory_size)
    addrs = [gm.malloc(n * 4) for _ in range(5)]
    for a in addrs:
        gm.view(a, n * 4)[:] = 0
    step = gm.malloc(8)
    gm.write(step, np.array([1], np.int64))
    td = tiling(soc, n, np.float32, mode=1, core_num=cores)
    return (apply_fused_ema_adam, td.blockDim, (*addrs, step, 0, td, np.dtype(np.float32))), \
        dict(soc=soc, gm=gm, reserve_ub=False)


def adam_cores(cores: int) -> dict:
    from npusim import run_kernel
    args, kwargs = _adam_launch(20, cores)
    t0 = time.perf_counter()
    prof = run_kernel(*args, **kwargs)
    return {"host_s": time.perf_counter() - t0, "functional_s": prof.host_functional_s,
            "timing_s": prof.host_timing_s, "kernel_us": prof.duration_us}


def adam_profile(log2n: int) -> dict:
    """Where the simulator's host time goes: cProfile of one launch, by own time."""
    import cProfile
    import pstats
    from npusim import run_kernel
    args, kwargs = _adam_launch(log2n)
    prof = cProfile.Profile()
    prof.enable()
    run_kernel(*args, **kwargs)
    prof.disable()
    stats = pstats.Stats(prof).stats
    total = sum(v[2] for v in stats.values())
    top = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:12]
    return {"total_s": total, "top": [
        {"function": f"{Path(k[0]).name}:{k[1]}({k[2]})", "calls": v[1], "own_s": v[2]}
        for k, v in top]}


CHILDREN = {f.__name__: f for f in (adam_sim, adam_golden, embedding_sim, embedding_golden,
                                     add_case4, add_golden, adam_cores, embedding_cores,
                                     add_cores, adam_profile, replay_stats)}

#: runs of each simulator measurement; the fastest is reported (as the goldens' best of 3),
#: with the highest peak memory of all runs
REPEATS = 5


def child(name: str, *args: int, repeats: int = 1) -> dict:
    """Run ``name(*args)`` in a fresh process ``repeats`` times; keep the fastest run."""
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, __file__, "--child", name, *map(str, args)],
                             check=True, capture_output=True, text=True, cwd=ROOT).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    best = min(runs, key=lambda r: r.get("host_s", 0.0))
    if "peak" in best:
        best = {**best, "peak": max(r["peak"] for r in runs)}
    if "host_s" in best:
        best = {**best, "host_s_slowest": max(r["host_s"] for r in runs)}
    return best


# -- the report ---------------------------------------------------------------------------------
#: Benchmarks whose printed figures go into RESULTS.md as they are.
FLOOR_BENCHES = ("bench_softmax_rms_norm.py",)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args(argv)
    if args.child:
        name, *rest = args.child
        rest = [int(x) for x in rest]
        baseline = _prepare(WARM[name](*rest)) if name in WARM else None
        r = CHILDREN[name](*rest)
        if baseline is not None:
            r["baseline"] = baseline
        print(json.dumps(r))
        return

    t_start = time.perf_counter()
    adam = {k: {**child("adam_sim", k, repeats=REPEATS), **child("adam_golden", k)}
            for k in (20, 21, 22, 23, 24, 25)}
    emb = {r: {**child("embedding_sim", r, repeats=REPEATS), **child("embedding_golden", r)}
           for r in (16384, 32768, 65536)}
    # the whole problem scaled: rows of grad and rows of the table together
    emb_n = {(r, w): {**child("embedding_sim", r, w, repeats=REPEATS),
                      **child("embedding_golden", r, w)}
             for r, w in ((16384, 12500), (32768, 25000))}
    emb_n[(65536, 50000)] = emb[65536]
    add = {r: {**child("add_case4", r, repeats=REPEATS), **child("add_golden", r)}
           for r in (2048, 4096, 8192)}
    core_counts = (1, 2, 4, 8, 16, 24, 32, 40, 48)
    cores = {op: {c: child(op, c, repeats=REPEATS) for c in core_counts}
             for op in ("adam_cores", "embedding_cores", "add_cores")}
    profile = child("adam_profile", 24)
    replay = child("replay_stats", 24)
    floors = {name: subprocess.run([sys.executable, str(HERE / name)], capture_output=True,
                                   text=True, check=True).stdout.rstrip()
              for name in FLOOR_BENCHES}
    elapsed = time.perf_counter() - t_start

    lines = ["# Simulator benchmarks", "",
             f"Written by `python benchmarks/run_all.py` on {datetime.date.today().isoformat()} "
             f"in {elapsed:.0f} s.", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
             f"{platform.system()} {platform.release()}; Python {platform.python_version()}, "
             f"numpy {np.__version__}. Every figure comes from its own process. Simulator "
             f"times are the fastest of {REPEATS} runs, golden times the best of three; peak "
             f"memory is the highest of the {REPEATS} runs.", "",
             "Targets: simulator host time at most 2x the numpy golden at the largest size; "
             "each doubling of N costs 1.8x-2.2x; peak memory at most 1.5x the device bytes "
             "plus host arrays.", ""]

    def table(title, rows, label, note=None):
        lines.extend([f"## {title}", ""] + ([note, ""] if note else []) + [
                      f"| {label} | simulated kernel (µs) | simulator host (s) | slowest run (s) "
                      "| functional (s) "
                      "| timing (s) | golden (s) | host / golden | peak RSS (MiB) | baseline "
                      "(MiB) | device + host (MiB) | peak / bytes | (peak - baseline) / bytes |",
                      "|---|---|---|---|---|---|---|---|---|---|---|---|---|"])
        for key, r in rows.items():
            golden = r.get("golden_s")
            ratio = f"{r['host_s'] / golden:.2f}x" if golden else "—"
            lines.append(
                f"| {key} | {r['kernel_us']:.1f} | {r['host_s']:.3f} | "
                f"{r['host_s_slowest']:.3f} | {r['functional_s']:.3f} "
                f"| {r['timing_s']:.3f} | {f'{golden:.3f}' if golden else '—'} | {ratio} | "
                f"{r['peak'] / 2**20:.0f} | {r['baseline'] / 2**20:.0f} | "
                f"{r['bytes'] / 2**20:.0f} | {r['peak'] / r['bytes']:.2f} | "
                f"{(r['peak'] - r['baseline']) / r['bytes']:.2f} |")
        lines.append("")

    table("ApplyFusedEmaAdam fp32, Ascend910B1, 48 cores",
          {f"2^{k}": v for k, v in adam.items()}, "elements")
    table("EmbeddingDenseBackward, grad [rows, 1024] fp32, Zipf indices over 50000 rows",
          {f"{k}": v for k, v in emb.items()}, "rows",
          "The whole graph: Sort, ZerosLike, EmbeddingDenseGradV2, ViewCopy. The golden is the "
          "project's float64 `np.add.at` reference.")
    table("EmbeddingDenseBackward, the whole problem scaled: grad [rows, 1024], Zipf indices "
          "over a table of `weights` rows", {f"{r} x {w}": v for (r, w), v in emb_n.items()},
          "rows x weights",
          "Doubling only the rows of grad leaves the [50000, 1024] output (its ZerosLike and "
          "ViewCopy, 195 MiB each) as it is, so that series does not double the work; here the "
          "table grows with the rows, so N doubles all of it.")
    table("Add study case 4 (half, rows x 8192, double buffering, 48 cores)",
          {f"{k}": v for k, v in add.items()}, "rows",
          "The golden is `np.add` of the two half arrays.")

    def ratios(points, key):
        sizes = sorted(points)
        return [points[b][key] / points[a][key] for a, b in zip(sizes, sizes[1:])]

    def met(rs):
        return all(1.8 <= r <= 2.2 for r in rs)

    lines.extend(["## Scaling: host time per doubling of N", "",
                  "Each doubling of the data: the simulator's host time, the golden's, and the "
                  "simulated kernel's own time (what the modelled machine does more of).", "",
                  "| operator | N -> 2N | simulator | target | golden | simulated kernel |",
                  "|---|---|---|---|---|---|"])
    scal = {"ApplyFusedEmaAdam": ({f"2^{k}": adam[k] for k in (22, 23, 24, 25)}, 2),
            "EmbeddingDenseBackward, whole problem": (
                {f"{r} x {w}": v for (r, w), v in emb_n.items()}, 1),
            "Add case 4": ({f"{k} rows": v for k, v in add.items()}, 1)}
    l2_steps = []
    for name, (pts, _) in scal.items():
        keys = list(pts)
        for a, b in zip(keys, keys[1:]):
            sim = pts[b]["host_s"] / pts[a]["host_s"]
            gold = pts[b]["golden_s"] / pts[a]["golden_s"]
            kern = pts[b]["kernel_us"] / pts[a]["kernel_us"]
            ok = 1.8 <= sim <= 2.2
            lines.append(f"| {name} | {a} -> {b} | {sim:.2f}x | {'met' if ok else 'missed'} | "
                         f"{gold:.2f}x | {kern:.2f}x |")
            if kern > 2.1:
                l2_steps.append((name, a, b, sim, kern))
    if l2_steps:
        lines.extend(["", "Where the simulated kernel itself costs more than 2x per doubling ("
                      + "; ".join(f"{n} {a} -> {b}: kernel {k:.2f}x, simulator {s:.2f}x"
                                  for n, a, b, s, k in l2_steps)
                      + "), the tensors outgrow the 192 MiB L2: transfers evict lines and "
                      "write dirty ones back, so the simulated device slows per byte, and the "
                      "replay does more per transfer as well (the eviction bookkeeping), which is "
                      "what lifts the simulator above 2x where it is."])
    emb_rows = ratios(emb, "host_s")
    emb_rows_golden = ratios(emb, "golden_s")
    lines.extend(["", f"Rows of grad only (16384, 32768, 65536 over 50000 weights): simulator "
                  f"{emb_rows[0]:.2f}x, {emb_rows[1]:.2f}x; golden {emb_rows_golden[0]:.2f}x, "
                  f"{emb_rows_golden[1]:.2f}x per doubling — neither doubles, since the output "
                  "does not grow.", ""])

    lines.extend(["## Host time against blockDim at fixed N", "",
                  "ApplyFusedEmaAdam 2^20 fp32; EmbeddingDenseBackward grad [16384, 1024] over "
                  "12500 weights on a device limited to that many cores (the tiling picks the "
                  "blockDim, shown); Add case 4 on 2048 x 8192 half. Each cell: simulator host "
                  "time in s (functional + timing), then the simulated time in µs.", "",
                  "| cores | ApplyFusedEmaAdam | EmbeddingDenseBackward (blockDim) | Add case 4 |",
                  "|---|---|---|---|"])

    def cell(r):
        return (f"{r['host_s']:.3f} ({r['functional_s']:.3f} + {r['timing_s']:.3f}); "
                f"{r['kernel_us']:.1f} µs")

    for c in core_counts:
        a, e, d = cores["adam_cores"][c], cores["embedding_cores"][c], cores["add_cores"][c]
        lines.append(f"| {c} | {cell(a)} | {cell(e)} ({e['block_dim']}) | {cell(d)} |")
    lines.extend(["", "The checker tracks races and uninitialised reads on the first and the "
                  "last block, which costs several times a block's plain run: with one or two "
                  "blocks every tile is tracked, so host time falls as blockDim grows, and "
                  "levels off once the two tracked blocks are a small share of the tiles; the "
                  "timing replay's cost grows slowly with the blocks it schedules.", ""])
    lines.extend(["", "## Against the targets", ""])
    misses = []
    worst = {"ApplyFusedEmaAdam 2^24": adam[24], "EmbeddingDenseBackward 65536 rows": emb[65536]}
    for name, r in worst.items():
        ratio = r["host_s"] / r["golden_s"]
        verdict = "met" if ratio <= 2 else f"missed by {ratio / 2 - 1:.0%}"
        if ratio > 2:
            misses.append(name)
        lines.append(f"* {name}: simulator {r['host_s']:.3f} s against golden "
                     f"{r['golden_s']:.3f} s = {ratio:.2f}x (target 2x: {verdict}); functional "
                     f"{r['functional_s']:.3f} s, timing {r['timing_s']:.3f} s.")
    for name, (pts, _) in scal.items():
        rs = ratios(pts, "host_s")
        if not met(rs):
            misses.append(f"{name} per doubling")
        lines.append(f"* {name} ({', '.join(pts)}): {', '.join(f'{x:.2f}x' for x in rs)} per "
                     f"doubling ({'met' if met(rs) else 'missed'}).")
    peaks = [(f"ApplyFusedEmaAdam 2^{k}", v) for k, v in adam.items()] + \
        [(f"EmbeddingDenseBackward {k} rows", v) for k, v in emb.items()] + \
        [(f"EmbeddingDenseBackward {r} x {w}", v) for (r, w), v in emb_n.items()] + \
        [(f"Add case 4, {k} rows", v) for k, v in add.items()]
    def own(r):
        return (r["peak"] - r["baseline"]) / r["bytes"]

    worst_peak = max(peaks, key=lambda kv: kv[1]["peak"] / kv[1]["bytes"])
    worst_own = max(peaks, key=lambda kv: own(kv[1]))
    peak_ok = own(worst_own[1]) <= 1.5
    if not peak_ok:
        misses.append("peak memory")
    base = min(r["baseline"] for _, r in peaks) / 2**20
    lines.append(f"* Peak memory of the run (peak RSS less the {base:.0f} MiB or more the "
                 "interpreter and the libraries hold before any data exists): at most "
                 f"{own(worst_own[1]):.2f}x the device bytes plus host arrays ({worst_own[0]}; "
                 f"target 1.5x: {'met' if peak_ok else 'missed'}). Counting that baseline too, "
                 f"at most {worst_peak[1]['peak'] / worst_peak[1]['bytes']:.2f}x "
                 f"({worst_peak[0]})" + ("; above 1.5x that way: " + ", ".join(
                     f"{name} ({r['peak'] / r['bytes']:.2f}x)" for name, r in peaks
                     if r["peak"] > 1.5 * r["bytes"]) + ", where the data is smallest and the "
                     "baseline weighs most." if worst_peak[1]["peak"] > 1.5 *
                     worst_peak[1]["bytes"] else "."))
    lines.append(f"* Noise: the {REPEATS} runs of one configuration differ by up to "
                 f"{max(r['host_s_slowest'] / r['host_s'] for _, r in peaks) - 1:.0%} "
                 "(fastest against slowest, tables above), and the golden's own ratios per "
                 "doubling stray from 2x as far; a scaling verdict close to 1.8x or 2.2x can "
                 "change from one run of this script to the next.")
    lines.extend(["", f"Targets missed: {', '.join(misses) if misses else 'none'}.", ""])
    held = replay["records"] * replay["bytes_per_record"]
    lines.extend(["", "## Instruction records and their replay", "",
                  f"One ApplyFusedEmaAdam launch of 2^24 fp32 elements records "
                  f"{replay['records']} instructions, one tuple each: with everything else the "
                  f"launch holds when its replay starts, {replay['bytes_per_record']:.0f} B per "
                  f"record, {held / 2**20:.1f} MiB in all, {held / replay['data_bytes']:.1%} of "
                  f"the {replay['data_bytes'] / 2**20:.0f} MiB of tensors. The replay merges each "
                  "run of vector or scalar instructions with no sync between them into one simpy "
                  f"timeout: {replay['ops']} such instructions become {replay['op_items']} "
                  f"timeouts, and the {replay['dmas']} DMAs stay one event each (every transfer "
                  "takes its turn at the shared L2 and HBM bandwidth when it starts, so two "
                  "copies in a row cannot be costed ahead of the other cores' copies without "
                  f"changing the timeline). {replay['items']} items in all for "
                  f"{replay['records']} records. Device memory is never copied on the hot path: "
                  "DataCopy and DataCopyPad move bytes between views of the GM allocation's "
                  "buffer and of the UB.", ""])
    lines.extend(["", "## Where the time goes", "",
                  "cProfile of one ApplyFusedEmaAdam launch of 2^24 fp32 elements "
                  f"({profile['total_s']:.2f} s under the profiler), functions by own time:", "",
                  "| function | calls | own time (s) | share |", "|---|---|---|---|"])
    for row in profile["top"]:
        lines.append(f"| `{row['function']}` | {row['calls']} | {row['own_s']:.3f} | "
                     f"{row['own_s'] / profile['total_s']:.0%} |")
    lines.extend(["", "The functional run costs about two microseconds of Python per Ascend C call "
                  "on top of numpy's own work on the tile (the kernel makes about 20 vector "
                  "calls and 9 copies per UB tile, 2784 tiles at 2^24); the first and the last "
                  "block also pay for the checker's race and uninitialised-read tracking. The "
                  "timing replay costs one simpy event per DMA and per run of vector "
                  "instructions, and the L2 model's bookkeeping per transfer. Both grow with "
                  "the number of tiles, i.e. linearly in N.", ""])
    lines.extend(["", "## Simulated kernels against their floors", "",
                  "Each operator's simulated kernel time next to its HBM floor (bytes moved / "
                  "HBM bandwidth) and its vector floor (its instructions' cycles at the "
                  "published rates over the cores), as the benchmark prints them:", ""])
    for name, text in floors.items():
        lines.extend([f"`python benchmarks/{name}`:", "", "```", text, "```", ""])
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
