"""Calibration of the DMA/HBM timing parameters against the official Add example.

Cases 1-3 of reference/hardware.md §4.1 (measured with msprof on Atlas A2) are the
calibration data. For a small grid of the fitted parameters this script simulates the
three cases at full size (8192 x 8192 half) and prints the relative error of Task
Duration and of aiv_mte2/mte3/vec for each point, then the errors of the preset values.
The presets in npusim/soc.py hold the chosen values; docs/calibration.md records why.

Run: ``python benchmarks/calibrate_add.py [--grid]``  (the grid takes about a minute per
point on a laptop core).
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import sys
from dataclasses import replace
from pathlib import Path

from npusim import get_soc

_spec = importlib.util.spec_from_file_location(
    "add_study", Path(__file__).resolve().parents[1] / "examples" / "add_study.py")
add_study = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(add_study)

KEYS = (("task", "task_duration_us"), ("mte2", "aiv_mte2_time_us"),
        ("mte3", "aiv_mte3_time_us"), ("vec", "aiv_vec_time_us"))


def errors(soc, cases=(1, 2, 3)):
    out = {}
    for c in cases:
        fig, _ = add_study.run_case(c, soc_name=soc, check=False)
        out[c] = {k: fig[f] / add_study.MEASURED[c][k] - 1 for k, f in KEYS}
    return out


def show(label, errs):
    cells = "  ".join(f"c{c} " + " ".join(f"{k} {v * 100:+5.1f}%" for k, v in e.items())
                      for c, e in errs.items())
    worst = max(abs(v) for e in errs.values() for v in e.values())
    print(f"{label:<34} {cells}   worst {worst * 100:.1f}%")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", action="store_true", help="also sweep the fitted parameters")
    args = parser.parse_args(argv)
    base = get_soc("Ascend910B1")
    if args.grid:
        for bw, ovh in itertools.product((1.5e12, 1.6e12, 1.7e12), (0.0, 2.0, 4.0)):
            soc = replace(base, hbm_bandwidth=bw, hbm_transfer_overhead_cycles=ovh)
            show(f"hbm {bw / 1e12:.1f} TB/s, overhead {ovh:.0f} cyc", errors(soc))
    show("preset Ascend910B1", errors(base))


if __name__ == "__main__":
    main()
    sys.exit(0)
