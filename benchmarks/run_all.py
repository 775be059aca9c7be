"""Run every simulator benchmark and write ``benchmarks/RESULTS.md``.

Speed is measured against what users would otherwise run: fp32 numpy and torch (CPU) on the
same data, side by side in one process (baselines.py, harness.py). One command
(``python benchmarks/run_all.py``) measures, each configuration in a fresh process (so that
its peak resident memory is its own) that first warms the memory it will touch:

* ApplyFusedEmaAdam fp32 (Ascend910B1, mode 1, all cores) at 2^18 and 2^20 .. 2^25
  elements; EmbeddingDenseBackward (grad [rows, 1024] fp32, Zipf indices over 50000 rows)
  at 16384, 32768 and 65536 rows, the whole problem scaled (rows and table together), and
  the small-dim path (grad [16384, 64]); the Add study's case 4 (z = x + y, half, rows x
  8192; examples/add_study.py) at 2048, 4096 and 8192 rows: the simulator's host time
  through the operator's API (functional run and timing replay apart) next to fp32 numpy
  and torch on the same arrays, interleaved (sim, numpy, torch, sim, ...), the fastest of
  ``REPEATS`` runs each;
* aclnnSoftmax and aclnnRmsNorm ([8192, 4096] half), aclnnMatmul (fp16 4096^3) and
  aclnnFusedSparseAdam (var [50000, 64], 16384 Zipf indices) the same way, through their
  benchmarks (bench_softmax_rms_norm.py, bench_matmul.py, bench_fused_sparse_adam.py), whose
  printed figures (simulated kernels against their floors and measured TFLOPS) go in as
  they are; so do bench_cube_kernel.py's (a hand-written static-buffer cube kernel, fp16
  2048^3, against numpy's single-thread fp32 matmul: the 5x target);
* the targets (host time / fp32 numpy at the stated sizes; 1.8x-2.2x per doubling of N;
  peak memory at most 1.5x the device bytes plus host arrays), each met, missed within its
  bar, or missed beyond it; for each missed host-time target, a cProfile of one simulator
  run (top functions by own time) and what is left;
* host time per doubling of N (simulator, numpy, torch, simulated kernel), host time
  against blockDim 1..48 at a fixed N, what a launch records and what its replay
  schedules, and peak resident memory against the bytes allocated (with the baseline of
  the interpreter and the libraries apart).

The float64 goldens check each configuration's first simulator result; they are never a
speed baseline. Takes about 10 minutes of both cores.
"""
from __future__ import annotations

import argparse
import cProfile
import datetime
import json
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import baselines  # noqa: E402
import bench_add  # noqa: E402
import bench_apply_fused_ema_adam as bench_adam  # noqa: E402
import bench_embedding_dense_backward as bench_emb  # noqa: E402
import harness  # noqa: E402

#: interleaved runs of each configuration (the fastest is reported); the matmul, at ~20 s
#: a simulator run, gets MATMUL_REPEATS
REPEATS = 5
MATMUL_REPEATS = 3

ADAM_SIZES = (18, 20, 21, 22, 23, 24, 25)
EMB_ROWS = (16384, 32768, 65536)
EMB_SCALED = ((16384, 12500), (32768, 25000), (65536, 50000))
EMB_SMALL = (16384, 50000, 64)            # rows, weights, dim: the small-dim path
ADD_ROWS = (2048, 4096, 8192)
CORE_COUNTS = (1, 2, 4, 8, 16, 24, 32, 40, 48)
SOFTMAX_ARGS = ()                   # bench_softmax_rms_norm.py's defaults: [8192, 4096] half
MATMUL_CASE = "fp16-4096"
CUBE_KERNEL_SIZES = "2048"          # bench_cube_kernel.py: N of the N^3 kernel (8192: minutes)
REPLAY_LOG2N = 24                   # ApplyFusedEmaAdam size of the replay figures and profile

#: host time / fp32 numpy: (label, key of the measurement, target, bar)
HOST_TARGETS = (
    ("ApplyFusedEmaAdam fp32 2^18", ("adam", 18), 6.0, 8.0),
    ("ApplyFusedEmaAdam fp32 2^22", ("adam", 22), 3.0, 4.0),
    ("ApplyFusedEmaAdam fp32 2^24", ("adam", 24), 3.0, 4.0),
    ("EmbeddingDenseBackward grad [65536, 1024] over 50000 rows", ("emb", 65536, 50000, 1024),
     2.0, 3.0),
    ("EmbeddingDenseBackward small-dim grad [16384, 64] over 50000 rows",
     ("emb", *EMB_SMALL), 8.0, 10.0),
    ("Add case 4, 8192 x 8192 half (numpy's half add)", ("add", 8192), 2.0, 3.0),
    ("aclnnMatmul fp16 4096^3 (numpy float32 matmul)", ("matmul",), 20.0, None),
)
SCALING_RANGE = (1.8, 2.2)
PEAK_TARGET = 1.5


def verdict(x: float, target: float, bar: float | None) -> str:
    """"met" (x <= target), "missed, within bar" (target < x <= bar) or "missed" (beyond the
    bar, or no bar)."""
    if x <= target:
        return "met"
    if bar is not None and x <= bar:
        return "missed, within bar"
    return "missed"


# -- one measurement per child process --------------------------------------------------------
def _row(r: dict) -> dict:
    """A benchmark's figures under the report's names."""
    runs = r["sim_runs"]
    return {"host_s": r["sim_wall_s"], "host_s_slowest": max(runs),
            "functional_s": r["functional_s"], "timing_s": r["timing_s"],
            "kernel_us": r.get("graph_us", r["kernel_us"]), "numpy_s": r["numpy_s"],
            "torch_s": r["torch_s"], "peak": r.get("peak_rss_bytes"),
            "bytes": r.get("device_plus_host_bytes"), "block_dim": r.get("block_dim"),
            "max_abs_err": r.get("max_abs_err"), "kept_s": r.get("sim_kept_s"),
            "timing_kept_s": r.get("timing_kept_s")}


def adam(log2n: int) -> dict:
    return _row(bench_adam.measure(log2n, REPEATS))


def emb_args(rows: int, weights: int = 50000, dim: int = 1024):
    return argparse.Namespace(rows=rows, dim=dim, weights=weights, zipf=1.0)


def embedding(rows: int, weights: int = 50000, dim: int = 1024) -> dict:
    return _row(bench_emb.measure(emb_args(rows, weights, dim), REPEATS))


def add(rows: int) -> dict:
    return _row(bench_add.measure(rows, REPEATS))


def embedding_cores(cores: int) -> dict:
    """EmbeddingDenseBackward, grad [16384, 1024] over 12500 weights, on a device limited to
    ``cores`` vector cores (the tiling takes the limit as its core count); simulator only."""
    args = emb_args(16384, 12500)
    args.max_cores = cores
    return _row(bench_emb.measure(args, REPEATS, with_baselines=False, check=False))


def add_cores(cores: int) -> dict:
    """Add case 4 kernel, 2048 x 8192 half, launched on ``cores`` blocks; simulator only."""
    return _row(bench_add.measure(2048, REPEATS, cores=cores, with_baselines=False))


def _adam_launch(log2n: int, cores: int | None = None):
    """``run_kernel`` arguments of one ApplyFusedEmaAdam fp32 launch (mode 1) on zeroed
    tensors of 2^log2n elements, all cores or ``cores``."""
    from npusim.kernels.apply_fused_ema_adam.kernel import apply_fused_ema_adam
    from npusim.kernels.apply_fused_ema_adam.tiling import tiling
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
    """ApplyFusedEmaAdam 2^20 fp32 on ``cores`` blocks (run_kernel; fastest of REPEATS)."""
    from npusim import run_kernel
    args, kwargs = _adam_launch(20, cores)
    best = None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        prof = run_kernel(*args, **kwargs)
        host = time.perf_counter() - t0
        if best is None or host < best["host_s"]:
            best = {"host_s": host, "functional_s": prof.host_functional_s,
                    "timing_s": prof.host_timing_s, "kernel_us": prof.duration_us}
    return best


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

    def spy(blocks, *args, **kwargs):
        seen["blocks"] = blocks
        seen["held"] = tracemalloc.get_traced_memory()[0]
        return simulate(blocks, *args, **kwargs)

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




#: the functions whose own time is numpy work on the tensors' bytes (not Python per
#: instruction): a lockstep group's GM <-> UB copies, the undo log's copies of the bytes
#: stores overwrite, and the vector unit's arithmetic
DATA_WORK = {("lockstep.py", "transfer"): "GM <-> UB copies",
             ("lockstep.py", "save"): "undo-log copies",
             ("vector.py", "_compute"): "vector arithmetic"}


def profile(kind: str, *args) -> dict:
    """Where the simulator's host time goes: cProfile of one warm simulator run (the third) of a
    configuration (``adam LOG2N``, ``embedding ROWS WEIGHTS DIM``, ``add ROWS``,
    ``matmul``), functions by own time (the top 12)."""
    prof = cProfile.Profile()
    harness.SIM_PROFILER = prof
    if kind == "adam":
        bench_adam.measure(args[0], 3, check=False, with_baselines=False)
    elif kind == "embedding":
        bench_emb.measure(emb_args(*args), 3, with_baselines=False, check=False)
    elif kind == "add":
        bench_add.measure(args[0], 3, with_baselines=False)
    elif kind == "matmul":
        import bench_matmul
        bench_matmul.measure(*bench_matmul.operands(MATMUL_CASE), 3)
    else:
        raise ValueError(f"no profile for {kind!r}")
    harness.SIM_PROFILER = None
    stats = pstats.Stats(prof).stats
    total = sum(v[2] for v in stats.values())
    top = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:12]
    data = {what: sum(v[2] for k, v in stats.items() if (Path(k[0]).name, k[2]) == fn)
            for fn, what in DATA_WORK.items()}
    return {"total_s": total, "data_s": data, "top": [
        {"function": f"{Path(k[0]).name}:{k[1]}({k[2]})", "calls": v[1], "own_s": v[2]}
        for k, v in top]}


CHILDREN = {f.__name__: f for f in (adam, embedding, add, adam_cores, embedding_cores,
                                     add_cores, profile, replay_stats)}

#: bytes each child touches and frees before it measures (harness.prepare): more than its
#: setup and its first simulator run touch together
WARM = {"adam": bench_adam.warm_bytes, "embedding": bench_emb.warm_bytes,
        "add": bench_add.warm_bytes}


def child(name: str, *args) -> dict:
    """Run ``name(*args)`` in a fresh process; its figures."""
    out = subprocess.run([sys.executable, __file__, "--child", name, *map(str, args)],
                         check=True, capture_output=True, text=True, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def bench_script(name: str, *argv: str) -> tuple[str, object]:
    """Run ``benchmarks/name`` with ``--json``; its printed text and its figures."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.json"
        text = subprocess.run([sys.executable, str(HERE / name), *argv, "--json", str(out)],
                              capture_output=True, text=True, check=True, cwd=ROOT).stdout
        return text.rstrip(), json.loads(out.read_text())


def _int(x: str):
    try:
        return int(x)
    except ValueError:
        return x


# -- the report ---------------------------------------------------------------------------------
def _s(x, digits=3):
    return harness.fmt_s(x, digits)


def _x(a, b):
    return harness.fmt_x(harness.ratio(a, b))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--raw", help="also write every measurement to this JSON file")
    parser.add_argument("--from-raw", help="write the report from a --raw file, measuring "
                                           "nothing")
    args = parser.parse_args(argv)
    if args.child:
        name, *rest = args.child
        rest = [_int(x) for x in rest]
        baseline = harness.prepare(WARM[name](*rest)) if name in WARM else None
        harness.torch_threads()
        # every launch replayed unless a runner says otherwise (harness.SIM_REPLAYS): the
        # blockDim series repeat a launch and time each
        from npusim import timing
        timing.REPLAY_MEMO = False
        r = CHILDREN[name](*rest)
        if baseline is not None:
            r["baseline"] = baseline
        print(json.dumps(r))
        return

    if args.from_raw:
        raw = json.loads(Path(args.from_raw).read_text())
        raw["res"] = {tuple(_int(x) for x in k.split(":")): v for k, v in raw["res"].items()}
        raw["profiles"] = {tuple(_int(x) for x in k.split(":")): v
                           for k, v in raw["profiles"].items()}
        raw["cores"] = {op: {int(c): v for c, v in d.items()} for op, d in raw["cores"].items()}
        lines = report(**raw)
        Path(args.out).write_text("\n".join(lines))
        print("\n".join(lines))
        return

    t_start = time.perf_counter()
    res = {("adam", k): child("adam", k) for k in ADAM_SIZES}
    for r in EMB_ROWS:
        res[("emb", r, 50000, 1024)] = child("embedding", r)
    for r, w in EMB_SCALED:
        if ("emb", r, w, 1024) not in res:
            res[("emb", r, w, 1024)] = child("embedding", r, w)
    res[("emb", *EMB_SMALL)] = child("embedding", *EMB_SMALL)
    for r in ADD_ROWS:
        res[("add", r)] = child("add", r)
    cores = {op: {c: child(op, c) for c in CORE_COUNTS}
             for op in ("adam_cores", "embedding_cores", "add_cores")}
    replay = child("replay_stats", REPLAY_LOG2N)
    sm_text, sm = bench_script("bench_softmax_rms_norm.py", *SOFTMAX_ARGS)
    mm_text, mm = bench_script("bench_matmul.py", "--cases", MATMUL_CASE, "--repeats",
                               str(MATMUL_REPEATS))
    mm = mm[0]
    fsa_text, fsa = bench_script("bench_fused_sparse_adam.py", "--repeats", str(REPEATS))
    cube_text, _ = bench_script("bench_cube_kernel.py", "--sizes", CUBE_KERNEL_SIZES,
                                "--repeats", str(MATMUL_REPEATS))
    cpp_text, _ = bench_script("bench_cpp_add.py")
    res[("matmul",)] = {"host_s": mm["sim_wall_s"], "numpy_s": mm["numpy_s"],
                        "torch_s": mm["torch_s"], "functional_s": mm["functional_s"],
                        "timing_s": mm["timing_s"]}
    profiles = {("adam", REPLAY_LOG2N): child("profile", "adam", REPLAY_LOG2N)}
    for label, key, target, bar in HOST_TARGETS:
        r = res[key]
        if r["host_s"] / r["numpy_s"] > target and key not in profiles:
            kind = {"adam": "adam", "emb": "embedding", "add": "add", "matmul": "matmul"}
            profiles[key] = child("profile", kind[key[0]], *key[1:])
    elapsed = time.perf_counter() - t_start
    if args.raw:
        def keyed(d):
            return {":".join(map(str, k)): v for k, v in d.items()}
        Path(args.raw).write_text(json.dumps(dict(
            res=keyed(res), cores=cores, replay=replay, profiles=keyed(profiles),
            sm_text=sm_text, sm=sm, mm_text=mm_text, fsa_text=fsa_text, fsa=fsa,
            cube_text=cube_text, cpp_text=cpp_text, elapsed=elapsed)))
    lines = report(res, cores, replay, profiles, sm_text, sm, mm_text, fsa_text, fsa, elapsed,
                   cube_text, cpp_text)
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


def report(res, cores, replay, profiles, sm_text, sm, mm_text, fsa_text, fsa,
           elapsed, cube_text=None, cpp_text=None) -> list[str]:
    torch_v = baselines.torch_version()
    torch_note = (f"torch {torch_v} (CPU, {harness.TORCH_THREADS} intra-op thread: the "
                  "simulator and numpy's ufuncs use one core, and on this shared 2-core host "
                  "torch's second OpenMP thread waits for a busy core)"
                  if torch_v else "torch not installed")
    lines = ["# Simulator benchmarks", "",
             f"Written by `python benchmarks/run_all.py` on {datetime.date.today().isoformat()} "
             f"in {elapsed:.0f} s.", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
             f"{platform.system()} {platform.release()}; Python {platform.python_version()}, "
             f"numpy {np.__version__}, {torch_note}.", "",
             "Speed is measured against what users would otherwise run: fp32 numpy and torch "
             "on the same data (`benchmarks/baselines.py`, each checked against the float64 "
             "golden by `tests/test_baselines.py`). Each configuration runs in its own "
             "process, which first touches as much memory as it will use; in it the "
             "simulator (through the operator's API), numpy and torch run in turn on the same "
             f"arrays (sim, numpy, torch, sim, ...), {REPEATS} times each "
             f"({MATMUL_REPEATS} for the matmul), each run from the same inputs, and the "
             "fastest run of each is reported. The float64 goldens check the simulator's "
             "first result of each configuration; they are not timed. Peak memory is read "
             "after the simulator's first run, before the baselines allocate.", "",
             "numpy baselines: ApplyFusedEmaAdam as 17 in-place `out=` ufunc passes; "
             "EmbeddingDenseBackward as `np.add.at` on the flattened output with element "
             "indices, 1024 rows at a time (the fastest fp32 numpy way measured: 2-D "
             "`np.add.at` on rows is about 4x slower, argsort + `np.add.reduceat` 8x); Add "
             "as numpy's half add; Softmax and RmsNorm in float32 from the half input, the "
             "result left in float32; Matmul as `np.matmul` of float32 copies (OpenBLAS, "
             "its default threads); FusedSparseAdam as `np.add.at` of the duplicates into a "
             "dense gradient, then in-place `out=` ufuncs over whole arrays. torch: "
             "`torch.optim.AdamW(foreach=True)` + "
             "`torch._foreach_lerp_` for the EMA, `torch.ops.aten.embedding_dense_backward`, "
             "`torch.add` on half, `torch.softmax` and `torch.nn.functional.rms_norm` on the "
             "half tensor, `torch.matmul` on float32; torch has no FusedSparseAdam "
             "(`torch.optim.SparseAdam` neither decays the rows no index names nor sums "
             "duplicates first).", ""]

    # the targets
    lines.extend(["## Targets", "",
                  "Host time of the simulator over fp32 numpy's on the same data (the "
                  "`bar` is the limit beyond which a miss is a failure rather than a gap). "
                  "The simulator's figure replays the timing of every launch: what a launch "
                  "the simulator has not seen costs. The repeated launch's figure is the "
                  "same launch run again, which takes the kept replay of the launch before "
                  "(`npusim.timing.REPLAY_MEMO`, the default): what each step of a loop that "
                  "repeats a launch costs, as a training loop's optimizer update does. The "
                  "verdict is on the first; the second is shown next to it.", "",
                  "| case | simulator (s) | numpy (s) | torch (s) | host / numpy | host / torch "
                  "| target | bar | verdict | repeated launch (s) | repeated / numpy "
                  "| verdict, repeated |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"])
    misses = []
    for label, key, target, bar in HOST_TARGETS:
        r = res[key]
        x = r["host_s"] / r["numpy_s"]
        v = verdict(x, target, bar)
        if v != "met":
            misses.append((label, key, x, target, bar, v))
        kept = r.get("kept_s")
        rep = ("| — | — | — |" if kept is None else
               f"| {kept:.3f} | {kept / r['numpy_s']:.2f}x | "
               f"{verdict(kept / r['numpy_s'], target, bar)} |")
        lines.append(f"| {label} | {r['host_s']:.3f} | {r['numpy_s']:.3f} | "
                     f"{_s(r['torch_s'])} | {x:.2f}x | {_x(r['host_s'], r['torch_s'])} | "
                     f"{target:g}x | {f'{bar:g}x' if bar else '—'} | {v} " + rep)
    for r in sm:
        lines.append(f"| aclnn{r['op']} [{r['shape'][0]}, {r['shape'][1]}] half | "
                     f"{r['sim_wall_s']:.3f} | {r['numpy_s']:.3f} | {_s(r['torch_s'])} | "
                     f"{r['ratio_numpy']:.2f}x | {_x(r['sim_wall_s'], r['torch_s'])} | — | — "
                     "| (no target) | — | — | — |")
    lines.append(f"| aclnnFusedSparseAdam var [{fsa['rows']}, {fsa['dim']}], {fsa['indices']} "
                 f"Zipf indices | {fsa['sim_wall_s']:.3f} | {fsa['numpy_s']:.3f} | — | "
                 f"{fsa['ratio_numpy']:.2f}x | — | — | — | (no target) | — | — | — |")
    lines.extend(["", "A repeated launch takes a kept replay only when it records what the "
                  "launch before recorded: the same kernel and tiling (the data may differ), "
                  "on the same GM addresses or, for a launch of up to 2^16 transfers, on "
                  "tensors allocated anew at addresses the replay cannot tell apart (the same "
                  "alignment and shared L2 lines). ApplyFusedEmaAdam and the Add study launch "
                  "on the same tensors each time and take it. EmbeddingDenseBackward "
                  "allocates its workspace anew at each call (the simulator's `aclrtMalloc` "
                  "never hands out a freed address again) and takes it too with the same "
                  "indices (the benchmark's repeated launch); in training its records change "
                  "with the indices, and each launch is replayed."])

    scal = {"ApplyFusedEmaAdam": [(f"2^{k}", res[("adam", k)]) for k in ADAM_SIZES[-4:]],
            "EmbeddingDenseBackward, whole problem": [
                (f"{r} x {w}", res[("emb", r, w, 1024)]) for r, w in EMB_SCALED],
            "Add case 4": [(f"{k} rows", res[("add", k)]) for k in ADD_ROWS]}
    lo, hi = SCALING_RANGE
    lines.extend(["", "Host time per doubling of N (target 1.8x-2.2x):", "",
                  "| operator | N -> 2N | simulator | verdict |", "|---|---|---|---|"])
    for name, pts in scal.items():
        for (a, ra), (b, rb) in zip(pts, pts[1:]):
            x = rb["host_s"] / ra["host_s"]
            ok = lo <= x <= hi
            if not ok:
                misses.append((f"{name} {a} -> {b} per doubling", None, x, None, None,
                               "missed"))
            lines.append(f"| {name} | {a} -> {b} | {x:.2f}x | {'met' if ok else 'missed'} |")
    mem = [(f"ApplyFusedEmaAdam 2^{k[1]}", v) for k, v in res.items() if k[0] == "adam"] + \
        [(f"EmbeddingDenseBackward [{k[1]}, {k[3]}] over {k[2]}", v) for k, v in res.items()
         if k[0] == "emb"] + \
        [(f"Add case 4, {k[1]} rows", v) for k, v in res.items() if k[0] == "add"]

    def own(r):
        return (r["peak"] - r["baseline"]) / r["bytes"]

    worst_own = max(mem, key=lambda kv: own(kv[1]))
    worst_peak = max(mem, key=lambda kv: kv[1]["peak"] / kv[1]["bytes"])
    peak_ok = own(worst_own[1]) <= PEAK_TARGET
    if not peak_ok:
        misses.append(("peak memory", None, own(worst_own[1]), PEAK_TARGET, None, "missed"))
    base = min(r["baseline"] for _, r in mem) / 2**20
    lines.extend(["", f"Peak memory (target {PEAK_TARGET}x the device bytes plus host arrays): "
                  f"peak RSS less the {base:.0f} MiB or more the interpreter and the libraries "
                  f"(torch included) hold before any data exists is at most "
                  f"{own(worst_own[1]):.2f}x ({worst_own[0]}: "
                  f"{'met' if peak_ok else 'missed'}); counting that baseline too, at most "
                  f"{worst_peak[1]['peak'] / worst_peak[1]['bytes']:.2f}x ({worst_peak[0]}, "
                  "where the data is smallest and the baseline weighs most).", ""])
    noise = max(r["host_s_slowest"] / r["host_s"] for _, r in mem) - 1
    lines.extend([f"Noise: the {REPEATS} simulator runs of one configuration differ by up to "
                  f"{noise:.0%} (fastest against slowest, tables below); the machine is shared, "
                  "so a verdict close to its limit can change from one run of this script to "
                  "the next.", "",
                  "Targets missed: " + (", ".join(f"{m[0]} ({m[2]:.2f}x, {m[5]})"
                                                  for m in misses) or "none") + ".", ""])

    # the operators' tables
    def table(title, rows, label, note=None):
        lines.extend([f"## {title}", ""] + ([note, ""] if note else []) + [
            f"| {label} | simulated kernel (µs) | simulator host (s) | slowest run (s) "
            "| functional (s) | timing (s) | numpy fp32 (s) | torch (s) | host / numpy "
            "| host / torch | peak RSS (MiB) | baseline (MiB) | device + host (MiB) "
            "| peak / bytes | (peak - baseline) / bytes |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"])
        for key, r in rows:
            lines.append(
                f"| {key} | {r['kernel_us']:.1f} | {r['host_s']:.3f} | "
                f"{r['host_s_slowest']:.3f} | {r['functional_s']:.3f} | {r['timing_s']:.3f} "
                f"| {r['numpy_s']:.3f} | {_s(r['torch_s'])} | {_x(r['host_s'], r['numpy_s'])} "
                f"| {_x(r['host_s'], r['torch_s'])} | {r['peak'] / 2**20:.0f} | "
                f"{r['baseline'] / 2**20:.0f} | {r['bytes'] / 2**20:.0f} | "
                f"{r['peak'] / r['bytes']:.2f} | {own(r):.2f} |")
        lines.append("")

    table("ApplyFusedEmaAdam fp32, Ascend910B1, 48 cores",
          [(f"2^{k}", res[("adam", k)]) for k in ADAM_SIZES], "elements",
          "numpy: `baselines.ema_adam_numpy`; torch: `torch.optim.AdamW(foreach=True)` step + "
          "`torch._foreach_lerp_` (the EMA). Every run starts from the same var, m, v, s.")
    table("EmbeddingDenseBackward, grad [rows, 1024] fp32, Zipf indices over 50000 rows",
          [(f"{r}", res[("emb", r, 50000, 1024)]) for r in EMB_ROWS], "rows",
          "The whole graph: Sort, ZerosLike, EmbeddingDenseGradV2, ViewCopy (and the Cast of "
          "the indices). numpy: `baselines.embedding_dense_backward_numpy`; torch: "
          "`torch.ops.aten.embedding_dense_backward`.")
    table("EmbeddingDenseBackward, the whole problem scaled: grad [rows, 1024], Zipf indices "
          "over a table of `weights` rows",
          [(f"{r} x {w}", res[("emb", r, w, 1024)]) for r, w in EMB_SCALED], "rows x weights",
          "Doubling only the rows of grad leaves the [50000, 1024] output (its ZerosLike and "
          "ViewCopy, 195 MiB each) as it is, so that series does not double the work; here the "
          "table grows with the rows, so N doubles all of it.")
    table("EmbeddingDenseBackward small-dim: grad [16384, 64], Zipf indices over 50000 rows",
          [(f"{EMB_SMALL[0]} x {EMB_SMALL[2]}", res[("emb", *EMB_SMALL)])], "rows x dim",
          "The small-dim path (dim <= 512): the kernel sorts each UB chunk itself.")
    table("Add study case 4 (half, rows x 8192, double buffering, 48 cores)",
          [(f"{k}", res[("add", k)]) for k in ADD_ROWS], "rows",
          "The simulator runs the study's kernel (`run_kernel`); numpy: `np.add(x, y, out=z)` "
          "on the half arrays; torch: `torch.add(x, y, out=z)` on half.")

    # scaling
    lines.extend(["## Scaling: host time per doubling of N", "",
                  "Each doubling of the data: the simulator's host time, numpy's and torch's, "
                  "and the simulated kernel's own time (what the modelled machine does more "
                  "of).", "",
                  "| operator | N -> 2N | simulator | target | numpy | torch | simulated kernel |",
                  "|---|---|---|---|---|---|---|"])
    l2_steps = []
    for name, pts in scal.items():
        for (a, ra), (b, rb) in zip(pts, pts[1:]):
            sim = rb["host_s"] / ra["host_s"]
            kern = rb["kernel_us"] / ra["kernel_us"]
            lines.append(f"| {name} | {a} -> {b} | {sim:.2f}x | "
                         f"{'met' if lo <= sim <= hi else 'missed'} | "
                         f"{_x(rb['numpy_s'], ra['numpy_s'])} | "
                         f"{_x(rb['torch_s'], ra['torch_s'])} | {kern:.2f}x |")
            if kern > 2.1:
                l2_steps.append((name, a, b, sim, kern))
    if l2_steps:
        lines.extend(["", "Where the simulated kernel itself costs more than 2x per doubling ("
                      + "; ".join(f"{n} {a} -> {b}: kernel {k:.2f}x, simulator {s:.2f}x"
                                  for n, a, b, s, k in l2_steps)
                      + "), the tensors outgrow the 192 MiB L2: transfers evict lines and "
                      "write dirty ones back, so the simulated device slows per byte, and the "
                      "replay does more per transfer as well (the eviction bookkeeping)."])
    e = [res[("emb", r, 50000, 1024)] for r in EMB_ROWS]
    lines.extend(["", "Rows of grad only (16384, 32768, 65536 over 50000 weights): simulator "
                  + ", ".join(f"{b['host_s'] / a['host_s']:.2f}x" for a, b in zip(e, e[1:]))
                  + "; numpy " + ", ".join(_x(b["numpy_s"], a["numpy_s"])
                                           for a, b in zip(e, e[1:]))
                  + " per doubling — the output does not grow with them.", ""])

    # blockDim
    lines.extend(["## Host time against blockDim at fixed N", "",
                  "ApplyFusedEmaAdam 2^20 fp32; EmbeddingDenseBackward grad [16384, 1024] over "
                  "12500 weights on a device limited to that many cores (the tiling picks the "
                  "blockDim, shown); Add case 4 on 2048 x 8192 half. Each cell: simulator host "
                  f"time in s, fastest of {REPEATS} runs in one process (functional + timing), "
                  "then the simulated time in µs.", "",
                  "| cores | ApplyFusedEmaAdam | EmbeddingDenseBackward (blockDim) | Add case 4 |",
                  "|---|---|---|---|"])

    def cell(r):
        return (f"{r['host_s']:.3f} ({r['functional_s']:.3f} + {r['timing_s']:.3f}); "
                f"{r['kernel_us']:.1f} µs")

    for c in CORE_COUNTS:
        a, em, d = cores["adam_cores"][c], cores["embedding_cores"][c], cores["add_cores"][c]
        lines.append(f"| {c} | {cell(a)} | {cell(em)} ({em['block_dim']}) | {cell(d)} |")
    lines.extend(["", "The checker tracks races and uninitialised reads on the first and the "
                  "last block; a lockstep group that holds one of them carries one tracker for "
                  "it, so the tracking costs once per instruction of the group, however many "
                  "blocks the group holds.", ""])

    # missed targets: profiles and what is left
    lines.extend(["## Where the time goes", ""])
    for key, prof in profiles.items():
        label = next((lb for lb, k, *_ in HOST_TARGETS if k == key), None) or \
            f"ApplyFusedEmaAdam fp32 2^{key[1]}"
        r = res[key]
        miss = next((m for m in misses if m[1] == key), None)
        lines.extend([f"### {label}", "",
                      f"cProfile of one warm simulator run ({prof['total_s']:.2f} s under the "
                      "profiler), functions by own time:", "",
                      "| function | calls | own time (s) | share |", "|---|---|---|---|"])
        for row in prof["top"]:
            lines.append(f"| `{row['function']}` | {row['calls']} | {row['own_s']:.3f} | "
                         f"{row['own_s'] / prof['total_s']:.0%} |")
        top_share = sum(x["own_s"] for x in prof["top"]) / prof["total_s"]
        lines.append("")
        if miss is not None:
            _, _, x, target, bar, v = miss
            need = target * r["numpy_s"]
            lines.append(
                f"What is left: the simulator takes {r['host_s']:.3f} s (functional run "
                f"{r['functional_s']:.3f} s, timing replay {r['timing_s']:.3f} s) against "
                f"numpy's {r['numpy_s']:.3f} s; {target:g}x needs at most {need:.3f} s, i.e. "
                f"{1 - need / r['host_s']:.0%} less host time. The twelve functions above hold "
                f"{top_share:.0%} of the profiled time, the other functions the rest. "
                + LEFT.get(key[0], "") + _data_floor(prof, r))
        else:
            lines.append(f"Target met ({r['host_s'] / r['numpy_s']:.2f}x numpy); shown for "
                         "reference. " + LEFT.get(key[0], ""))
        lines.append("")

    held = replay["records"] * replay["bytes_per_record"]
    lines.extend(["## Instruction records and their replay", "",
                  f"One ApplyFusedEmaAdam launch of 2^{REPLAY_LOG2N} fp32 elements records "
                  f"{replay['records']} instructions, one tuple each: with everything else the "
                  f"launch holds when its replay starts, {replay['bytes_per_record']:.0f} B per "
                  f"record, {held / 2**20:.1f} MiB in all, {held / replay['data_bytes']:.1%} of "
                  f"the {replay['data_bytes'] / 2**20:.0f} MiB of tensors. The replay merges each "
                  "run of vector or scalar instructions with no sync between them into one "
                  f"timed event: {replay['ops']} such instructions become {replay['op_items']} "
                  f"events, and the {replay['dmas']} DMAs stay one event each (every transfer "
                  "takes its turn at the shared L2 and HBM bandwidth when it starts). "
                  f"{replay['items']} items in all for {replay['records']} records.", ""])
    lines.extend(["## Softmax and RmsNorm: simulated kernels against their floors", "",
                  f"`python benchmarks/bench_softmax_rms_norm.py{''.join(' ' + a for a in SOFTMAX_ARGS)}`:",
                  "", "```", sm_text, "```",
                  "", "## Matmul", "",
                  f"`python benchmarks/bench_matmul.py --cases {MATMUL_CASE} --repeats "
                  f"{MATMUL_REPEATS}`:", "", "```", mm_text, "```", ""])
    if cube_text:        # absent from a --raw file written before it was measured
        lines.extend(["## A hand-written cube kernel against numpy's fp32 matmul", "",
                      f"`python benchmarks/bench_cube_kernel.py --sizes {CUBE_KERNEL_SIZES} "
                      f"--repeats {MATMUL_REPEATS}` (target: within 5x numpy's single-thread "
                      "fp32 matmul):", "", "```", cube_text, "```", ""])
    if cpp_text:         # likewise
        lines.extend(["## Add in C++ (Ascend C) against its Python kernel", "",
                      "`python benchmarks/bench_cpp_add.py` (the same aclnnAdd call, "
                      "`set_kernel_impl(\"Add\", \"cpp\")`; docs/cpp.md):", "", cpp_text, ""])
    lines.extend(["## FusedSparseAdam", "",
                  f"`python benchmarks/bench_fused_sparse_adam.py --repeats {REPEATS}`:", "",
                  "```", fsa_text, "```", ""])
    return lines


def _data_floor(prof: dict, r: dict) -> str:
    """The profiled run's numpy work on the tensors' bytes, against numpy's whole run."""
    data = prof.get("data_s", {})
    total = sum(data.values())
    if not total:
        return ""
    parts = ", ".join(f"{what} {t:.3f} s" for what, t in data.items())
    return (f" Of the profiled run, {total:.3f} s is numpy work on the tensors' bytes ({parts}), "
            f"{total / r['numpy_s']:.1f}x numpy's whole run: a floor for any simulator that "
            "moves the bytes through UB tile by tile as the kernel does and can undo a "
            "lockstep launch (npusim.lockstep), before the Python each instruction and transfer "
            "costs and the timing replay.")


#: what each operator's simulator run is made of, for the notes under its profile
LEFT = {
    "adam": "numpy's baseline makes 17 passes over whole arrays; the simulator runs the "
            "kernel's instruction stream tile by tile (about 20 vector instructions and 9 "
            "copies per UB tile of up to 6136 elements, at least one tile per core), "
            "functionally and then through the timing replay, so each tile carries a fixed "
            "host cost that weighs most where the tiles are small.",
    "emb": "The simulated graph is four or five launches (Cast of the indices, Sort unless "
           "small-dim, ZerosLike, EmbeddingDenseGradV2, ViewCopy), each with its functional "
           "run and timing replay; numpy's baseline is one `np.add.at` pass over grad plus "
           "the zeroing of the output, and torch's a sort and an index_add.",
    "add": "Case 4 is four instructions per tile (two copies in, an Add, a copy out) over "
           "double-buffered tiles on 48 cores; numpy's half add is a single pass.",
    "matmul": "The functional run executes every Mmad (a float64 product per k fractal, "
              "rounded to float32 in order: the cube's numerics), LoadData and Nd2Nz copy of "
              "every block; numpy's and torch's float32 matmuls are blocked BLAS kernels.",
}


if __name__ == "__main__":
    main()
