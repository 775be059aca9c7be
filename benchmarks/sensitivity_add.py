"""Sensitivity of the Add study's figures to each fitted timing parameter.

For every parameter of the Ascend910B1 preset that is fitted (not published), and for the
HBM write queue's marks and batch (published, but for gem5's controller, not Ascend's),
this script
moves it by -20% and +20% (one at a time, the others at their preset values), replays the
six Add cases of docs/reference/hardware.md §4.1 at full size (8192 x 8192 half) and reports how
much Task Duration and aiv_mte2/mte3/vec_time move, in percent of their preset value. It
plots the result, one panel per figure, to the PNG given, and can write the numbers as
JSON. A figure that barely moves when a parameter moves by a fifth does not depend on that
parameter's exact value; one that moves by as much as the parameter rests on it.

Each case's kernel runs once to record its instructions (as in calibrate_add.py); every
point after that is a replay of the records.

Run: ``python benchmarks/sensitivity_add.py docs/sensitivity_add.png [--json FILE]``
(about 5 minutes on one core).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate_add  # noqa: E402  (the recorder and replayer of the fit)

from npusim import get_soc  # noqa: E402

#: The fitted parameters (docs/calibration.md "Parameters"), SocSpec field -> label.
PARAMETERS = {
    "noc_bandwidth": "noc_bandwidth",
    "hbm_mixed_efficiency": "hbm_mixed_efficiency",
    "hbm_write_queue_bytes": "hbm_write_queue_bytes",
    "hbm_transfer_overhead_cycles": "hbm_transfer_overhead_cycles",
    "dma_latency_cycles": "dma_latency_cycles",
    "dma_write_latency_cycles": "dma_write_latency_cycles",
    "hbm_write_high_thresh_perc": "hbm_write_high_thresh_perc (gem5)",
    "hbm_write_low_thresh_perc": "hbm_write_low_thresh_perc (gem5)",
    "hbm_min_writes_per_switch_bytes": "hbm_min_writes_per_switch_bytes (gem5)",
}
# The vector-cost parameters (vec_head_cycles, the bank-conflict costs) are applied when a
# kernel runs, not in the replay, so they are not moved here: aiv_vec_time moves with them
# in proportion to the head's share of each instruction (docs/calibration.md).
FIGURES = calibrate_add.FIGURES
CASES = (1, 2, 3, 4, 5, 6)
STEP = 0.2


def moved(soc, name: str, factor: float):
    """``soc`` with parameter ``name`` multiplied by ``factor`` (integers rounded; a
    parameter at 0 moves by +-1 instead, so that it moves at all)."""
    value = getattr(soc, name)
    new = value * factor if value else (factor - 1) / STEP
    if isinstance(value, int) and not isinstance(value, bool):
        new = int(round(new))
    if name == "hbm_mixed_efficiency":
        new = min(new, 1.0)                  # an efficiency above 1 has no meaning
    if name.endswith("_perc"):
        new = min(new, 100.0)                # a mark above the whole queue has no meaning
    return replace(soc, **{name: new})


def sweep(launches: dict, log=print) -> dict:
    """``{param: {"-20%"/"+20%": {case: {figure: relative change}}}}`` and the base."""
    soc = get_soc(calibrate_add.SOC_NAME)
    base = {c: calibrate_add.replay(soc, launches[c]) for c in CASES}
    out = {"base": base, "params": {}}
    for name in PARAMETERS:
        out["params"][name] = {}
        for label, factor in (("-20%", 1 - STEP), ("+20%", 1 + STEP)):
            s = moved(soc, name, factor)
            ch = {}
            for c in CASES:
                fig = calibrate_add.replay(s, launches[c])
                ch[c] = {k: fig[k] / base[c][k] - 1 for k, _ in FIGURES}
            out["params"][name][label] = {"value": getattr(s, name), "change": ch}
            worst = max(abs(v) for e in ch.values() for v in e.values())
            log(f"{name} {label} ({getattr(s, name)!r}): largest change {worst * 100:.1f}%")
    return out


def plot(result: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(PARAMETERS)
    fig, axes = plt.subplots(2, 2, figsize=(13, 8), sharex=True)
    width = 0.8 / len(names)
    for ax, (key, title) in zip(axes.flat, FIGURES):
        for j, name in enumerate(names):
            x = [c - 0.4 + (j + 0.5) * width for c in CASES]
            lo = [result["params"][name]["-20%"]["change"][c][key] * 100 for c in CASES]
            hi = [result["params"][name]["+20%"]["change"][c][key] * 100 for c in CASES]
            color = f"C{j}"
            ax.vlines(x, lo, hi, color=color, lw=3, label=PARAMETERS[name])
            ax.plot(x, hi, "^", color=color, ms=4)
            ax.plot(x, lo, "v", color=color, ms=4)
        ax.axhline(0, color="k", lw=0.5)
        for y in (-20, 20):
            ax.axhline(y, color="grey", lw=0.5, ls=":")
        ax.set_title(title)
        ax.set_ylabel("% of the preset's figure")
        ax.set_xticks(CASES)
        ax.set_xticklabels([f"case {c}" for c in CASES])
    axes.flat[0].legend(fontsize=7, ncol=2)
    fig.suptitle("Add study (Ascend910B1, 8192 x 8192 half): change of each figure when one "
                 "parameter moves by -20% (v) or +20% (^)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("png", help="where to write the plot")
    parser.add_argument("--json", help="also write the changes to this file")
    parser.add_argument("--from-json", help="only plot the changes a previous run wrote")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text())
        result["params"] = {k: {lab: {"value": v["value"], "change": {
            int(c): e for c, e in v["change"].items()}} for lab, v in d.items()}
            for k, d in result["params"].items() if k in PARAMETERS}
    else:
        launches = {c: calibrate_add.record(c) for c in CASES}
        result = sweep(launches)
    plot(result, args.png)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.png} ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
