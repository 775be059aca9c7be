"""Benchmark: the Add study's case 4 (z = x + y, half, rows x 8192, double buffering, 48
cores; examples/add_study.py) on Ascend910B1.

It prints the simulated kernel time (Task Duration, µs), the simulator's host time of the
launch (``run_kernel``: functional run and timing replay, shown apart) next to what a user
would otherwise run on the same half arrays (baselines.py): numpy's half add
(``np.add(x, y, out=z)``) and torch's (``torch.add(x, y, out=z)``, CPU), timed in one
process, interleaved (sim, numpy, torch, ...), the fastest of ``--repeats`` runs each; the
ratios (target: at most 2x numpy at 8192 rows); the peak resident memory of the
simulator's run next to its device bytes plus host arrays; and whether the simulator's z
equals ``x + y`` (the golden: numpy's half add rounds each float32 sum once, as the
vector unit's half Add does).

Run: ``python benchmarks/bench_add.py [--rows 8192] [--repeats 5] [--json FILE]``
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import baselines  # noqa: E402
import harness  # noqa: E402

CASE = 4


def _study():
    spec = importlib.util.spec_from_file_location("add_study",
                                                  HERE.parent / "examples" / "add_study.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def warm_bytes(rows: int) -> int:
    """Bytes a measurement's process touches by the end of the simulator's first run."""
    return 10 * rows * 8192 * 2


def measure(rows: int, repeats: int = 5, cores: int | None = None,
            with_baselines: bool = True) -> dict:
    """Case 4 on ``rows`` x 8192 half and its baselines on the same arrays, interleaved.

    Args:
        rows: rows of the 8192-column inputs. cores: blocks to launch (default the case's
            48). with_baselines: time numpy and torch too (the blockDim sweep does not).

    Returns:
        A dict of figures: seconds (``sim_wall_s``, ``numpy_s``, ``torch_s`` fastest; None
        where not run or torch is missing), the best run's functional / timing split,
        ``kernel_us``, bytes.

    Raises:
        AssertionError: the simulator's z differs from numpy's ``x + y``.
    """
    from npusim import GlobalMemory, get_soc, run_kernel
    study = _study()
    threads = harness.torch_threads()
    soc = get_soc("Ascend910B1")
    n = rows * study.COLS
    rng = np.random.default_rng(CASE)           # the study's data for case 4
    xs = rng.standard_normal(n, dtype=np.float32).astype(np.float16)
    ys = rng.standard_normal(n, dtype=np.float32).astype(np.float16)
    gm = GlobalMemory(soc.memory_size)
    x, y, z = gm.malloc(n * 2), gm.malloc(n * 2), gm.malloc(n * 2)
    gm.write(x, xs)
    gm.write(y, ys)
    blocks = min(study.CASES[CASE][0], soc.vector_block_num) if cores is None else cores
    sim, work = {"profs": []}, {}

    def sim_run():
        # static tensors use the whole physical UB, as the official example does
        sim["profs"].append(run_kernel(study.add_kernel, blocks, (x, y, z, rows, CASE),
                                       soc=soc, gm=gm, name=f"add_case{CASE}",
                                       reserve_ub=False))

    def after_first():
        sim["peak"] = harness.peak()
        out = np.frombuffer(gm.view(z, n * 2), np.float16)
        assert np.array_equal(out, xs + ys), "z != x + y"
        if with_baselines:
            work["z"] = np.empty_like(xs)

    runners = {"sim": (None, sim_run)}
    if with_baselines:
        runners.update(
            numpy=(None, lambda: baselines.add_numpy(xs, ys, work["z"])),
            torch=(None, (lambda: baselines.add_torch(xs, ys, work["z"]))
                   if threads is not None else None))
    times = harness.interleave(harness.with_kept_replays(runners), repeats,
                               after_first=after_first)
    prof, kept = harness.fastest_sim_runs(times, sim["profs"])
    sim_s = min(times["sim"])
    numpy_s = harness.fastest(times.get("numpy", []))
    torch_s = harness.fastest(times.get("torch", []))
    return {"rows": rows, "repeats": repeats, "block_dim": blocks,
            "kernel_us": prof.duration_us, "sim_wall_s": sim_s, "sim_runs": times["sim"],
            "functional_s": prof.host_functional_s, "timing_s": prof.host_timing_s,
            "numpy_s": numpy_s, "numpy_runs": times.get("numpy", []),
            "torch_s": torch_s, "torch_runs": times.get("torch", []),
            "torch_version": baselines.torch_version(), "torch_threads": threads,
            "ratio_numpy": harness.ratio(sim_s, numpy_s),
            "ratio_torch": harness.ratio(sim_s, torch_s), "peak_rss_bytes": sim["peak"],
            **harness.kept_figures(times, kept.host_timing_s, numpy_s),
            # x, y, z on the device (each with its 32-byte allocation header) and xs, ys
            "device_plus_host_bytes": 3 * (n * 2 + 32) + 2 * n * 2}


def report(r: dict) -> str:
    torch_s = (f"{r['torch_s']:8.3f} s -> ratio {r['ratio_torch']:.2f}x"
               if r["torch_s"] is not None else harness.NOT_INSTALLED)
    return "\n".join([
        f"Add case {CASE}: {r['rows']} x 8192 half, blockDim {r['block_dim']}, Ascend910B1; "
        f"fastest of {r['repeats']} interleaved runs",
        f"  simulated kernel time {r['kernel_us']:10.1f} us",
        f"  simulator host time   {r['sim_wall_s']:8.3f} s (functional {r['functional_s']:.3f} "
        f"s, timing {r['timing_s']:.3f} s)",
        f"  repeated launch       {r['sim_kept_s']:8.3f} s (kept replay: timing "
        f"{r['timing_kept_s']:.3f} s)",
        f"  numpy half add        {r['numpy_s']:8.3f} s -> ratio {r['ratio_numpy']:.2f}x "
        f"(target <= 2x), repeated launch {harness.fmt_x(r['ratio_numpy_kept'])}",
        f"  torch half add        {torch_s}",
        f"  peak resident memory  {r['peak_rss_bytes'] / 2**20:8.1f} MiB (device + host arrays "
        f"{r['device_plus_host_bytes'] / 2**20:.1f} MiB)"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved runs")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    harness.prepare(warm_bytes(args.rows))
    r = measure(args.rows, args.repeats)
    print(report(r))
    harness.write_json(args.json, r)
    return r


if __name__ == "__main__":
    main()
