"""The fit of the memory-system parameters to cases 1-3 of the official Add example.

Cases 1-3 of docs/reference/hardware.md §4.1 (z = x + y, half, 8192 x 8192, msprof op on
Atlas A2) are the calibration data; cases 4-6 (and 0) are never looked at here. Each case's
kernel runs once at full size to record its instructions; the fit then replays the records
(:func:`npusim.timing.simulate`) under each candidate set of parameters, so an evaluation
costs two replays (the warm-up launch and the measured one), not a kernel run.

What is fitted, and to what (docs/calibration.md "Fit"):

* ``dma_latency_cycles`` and ``dma_write_latency_cycles`` in closed form from case 1 (one
  core, so nothing is shared): cycles per 8 KB DataCopy minus 8192 B at the per-core ini
  rate (``ddr_read_rate``, ``ddr_write_rate``).
* ``noc_bandwidth``, ``hbm_mixed_efficiency``, ``hbm_write_queue_bytes`` and
  ``hbm_transfer_overhead_cycles`` by coordinate descent over the grids :data:`GRID`, to
  the least sum of squared relative errors of Task Duration, aiv_mte2_time and
  aiv_mte3_time of cases 2 and 3 (aiv_vec_time does not depend on them), each case
  replayed as msprof measures it, after one launch of the same kernel (the L2 warm).

``hbm_bandwidth`` (1.6 TB/s, "GM的带宽约为1.6TB/s", §2), the per-core rates and the write
queue's marks and batch (``hbm_write_high_thresh_perc`` 85, ``hbm_write_low_thresh_perc`` 50,
``hbm_min_writes_per_switch_bytes`` 16 bursts of 32 B: gem5's ``MemCtrl`` and HBM2 defaults,
docs/calibration.md "Write draining") are published and not fitted (cases 2-3 cannot tell
batches of 1 KiB from 1 MiB apart: the cost is the same to 0.1%).

Run: ``python benchmarks/calibrate_add.py`` (about 2 minutes: prints every evaluation and
writes :data:`FIT_FILE`, which the Ascend910B1 preset in npusim/soc.py must equal:
``tests/test_timing_calibration.py`` checks it); ``--check`` only compares the preset with
the file and re-runs the chosen point.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from npusim import get_soc

ROOT = Path(__file__).resolve().parents[1]
FIT_FILE = ROOT / "benchmarks" / "calibration_fit.json"

_spec = importlib.util.spec_from_file_location("add_study", ROOT / "examples" / "add_study.py")
add_study = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(add_study)

#: The figures compared, msprof name -> key of add_study.MEASURED.
FIGURES = (("task", "Task Duration"), ("mte2", "aiv_mte2_time"), ("mte3", "aiv_mte3_time"),
           ("vec", "aiv_vec_time"))
#: Candidate values of the fitted parameters (SocSpec field -> grid, in the field's unit):
#: the neighbourhood of the choice of the descent over the wider grids (noc 2.2-2.6 TB/s,
#: mixed 0.8-1.0, queue 1-64 MiB, overhead 1.0-3.0 cycles; docs/calibration.md "Fit"),
#: searched again with the MTE issue model.
GRID = {
    "noc_bandwidth": [2.3e12, 2.35e12, 2.4e12, 2.45e12],
    "hbm_mixed_efficiency": [0.95, 1.0],
    "hbm_write_queue_bytes": [1 << 22, 1 << 23, 1 << 24, 1 << 25],
    "hbm_transfer_overhead_cycles": [1.5, 2.0, 2.5, 3.0],
}
#: The starting point of the descent: the wider grids' choice.
START = {"noc_bandwidth": 2.4e12, "hbm_mixed_efficiency": 1.0,
         "hbm_write_queue_bytes": 1 << 24, "hbm_transfer_overhead_cycles": 2.5}
FIT_CASES = (2, 3)
SOC_NAME = "Ascend910B1"


def record(case: int, rows: int = 8192):
    """Run one Add case once; return the instruction records of its blocks."""
    _, prof = add_study.run_case(case, rows=rows, soc_name=SOC_NAME, check=False, warm=False)
    return prof.records


def replay(soc, blocks) -> dict:
    """msprof's figures (µs) of a recorded Add launch replayed under ``soc``, as measured:
    after one launch of the same kernel (add_study.replay_warm)."""
    fig = add_study.figures(add_study.replay_warm(blocks, soc), soc)
    return {"task": fig["task_duration_us"], "mte2": fig["aiv_mte2_time_us"],
            "mte3": fig["aiv_mte3_time_us"], "vec": fig["aiv_vec_time_us"]}


def errors(fig: dict, case: int) -> dict:
    """Signed relative errors of ``fig`` against the measurement of ``case``."""
    m = add_study.MEASURED[case]
    return {k: fig[k] / m[k] - 1 for k, _ in FIGURES}


def own_cycles(base, nbytes: int, rate: float) -> float:
    """One core's own time for a contiguous, 512 B aligned copy of ``nbytes`` through L2
    (the MTE issue model, docs/calibration.md): the issue, then the larger of its bursts
    at the burst rate and its bytes at the per-core rate."""
    bursts = -(-nbytes // base.mte_burst_bytes) if base.mte_burst_bytes else 1
    return base.mte_issue_cycles + max(nbytes / rate, bursts * base.mte_burst_cycles)


def latencies(base) -> dict:
    """Closed-form DMA latencies from case 1 (one core, nothing shared). Each iteration
    copies x and y in back to back (the second issued once the first one's bytes are
    through) and the flag after them waits for the second to complete: the MTE2 time of
    an iteration is two copies' own time plus one latency. The copy-out is one copy: its
    own time plus the write latency."""
    m = add_study.MEASURED[1]
    n = 8192 * 8192 // 4096                    # DataCopies of 4096 halves per tensor
    read = m["mte2"] * 1e-6 * base.freq_hz / n - 2 * own_cycles(base, 8192, base.ddr_read_rate)
    write = m["mte3"] * 1e-6 * base.freq_hz / n - own_cycles(base, 8192, base.ddr_write_rate)
    return {"dma_latency_cycles": int(round(read)), "dma_write_latency_cycles": int(round(write))}


def cost(errs: dict) -> float:
    """The fit's objective: sum of squared relative errors of task, mte2 and mte3."""
    return float(sum(e[k] ** 2 for e in errs.values() for k in ("task", "mte2", "mte3")))


def choose(evaluations: list) -> dict:
    """The evaluation with the least cost (the first of equals, in evaluation order)."""
    return min(evaluations, key=lambda ev: ev["cost"])


def fit(launches: dict, log=print) -> dict:
    """Coordinate descent over :data:`GRID`; returns the fit record written to FIT_FILE."""
    base = get_soc(SOC_NAME)
    fixed = latencies(base)
    base = replace(base, **fixed)
    seen: dict = {}
    evaluations = []

    def evaluate(point):
        key = tuple(point[k] for k in GRID)
        if key not in seen:
            soc = replace(base, **point)
            errs = {c: errors(replay(soc, launches[c]), c) for c in FIT_CASES}
            ev = {"params": dict(point), "errors": errs, "cost": cost(errs)}
            seen[key] = ev
            evaluations.append(ev)
            log(_line(ev))
        return seen[key]

    point = dict(START)
    best = evaluate(point)
    for _ in range(4):                         # passes until no coordinate moves
        moved = False
        for name, values in GRID.items():
            for v in values:
                ev = evaluate({**point, name: v})
                if ev["cost"] < best["cost"]:
                    best, moved = ev, True
            point = dict(best["params"])
        if not moved:
            break
    chosen = choose(evaluations)
    return {"soc": SOC_NAME, "fixed": fixed, "params": chosen["params"],
            "cost": chosen["cost"], "errors": chosen["errors"],
            "evaluations": evaluations}


def _line(ev) -> str:
    p = ev["params"]
    head = (f"noc {p['noc_bandwidth'] / 1e12:.2f} TB/s, mixed {p['hbm_mixed_efficiency']:.2f}, "
            f"queue {p['hbm_write_queue_bytes'] / 2 ** 20:g} MiB, "
            f"ovh {p['hbm_transfer_overhead_cycles']:g}")
    cells = "  ".join(f"c{c} " + " ".join(f"{k} {v * 100:+5.1f}%" for k, v in e.items()
                                          if k != "vec")
                      for c, e in ev["errors"].items())
    return f"{head:<58} {cells}   cost {ev['cost']:.4f}"


def preset_matches(fit_record: dict) -> list[str]:
    """Fields of the preset that differ from the fit record (empty when they agree)."""
    soc = get_soc(fit_record["soc"])
    want = {**fit_record["fixed"], **fit_record["params"]}
    return [f"{k}: preset {getattr(soc, k)!r}, fit {v!r}" for k, v in want.items()
            if getattr(soc, k) != v]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare the preset with the stored fit; re-run the chosen point")
    parser.add_argument("--out", default=str(FIT_FILE), help="where to write the fit")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    if args.check:
        rec = json.loads(Path(args.out).read_text())
        diff = preset_matches(rec)
        print("preset equals the fit" if not diff else "preset differs: " + "; ".join(diff))
        soc = get_soc(SOC_NAME)
        for c in FIT_CASES:
            e = errors(replay(soc, record(c)), c)
            print(f"case {c}: " + " ".join(f"{k} {v * 100:+.2f}%" for k, v in e.items()))
        return 1 if diff else 0
    launches = {c: record(c) for c in FIT_CASES}
    rec = fit(launches)
    Path(args.out).write_text(json.dumps(rec, indent=1) + "\n")
    print(f"chosen: {_line({**rec, 'params': rec['params']})}")
    print(f"fixed from case 1: {rec['fixed']}")
    print(f"wrote {args.out} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
