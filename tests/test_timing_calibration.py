"""The calibration guard: the Ascend910B1 preset holds what benchmarks/calibrate_add.py
fitted (docs/calibration.md "Fit"), the stored fit chose the best of its own evaluations,
the closed-form part re-runs, and the preset replays case 3 of the Add study to the errors
the fit recorded (so a change of the model that moves the fitted figures fails here until
the fit is run again)."""
import importlib.util
import json
from pathlib import Path

import pytest

from npusim import get_soc

# records, timelines and cycle counts as they were before the scalar unit charged its
# issue work (tests/conftest.py scalar_issue_off)
pytestmark = pytest.mark.usefixtures("scalar_issue_off")

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("calibrate_add",
                                               ROOT / "benchmarks" / "calibrate_add.py")
calibrate_add = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(calibrate_add)
FIT = json.loads(calibrate_add.FIT_FILE.read_text())


def test_the_preset_equals_the_fit():
    assert calibrate_add.preset_matches(FIT) == []
    soc = get_soc(FIT["soc"])
    for name, value in FIT["params"].items():       # and none of them was typed in apart
        assert getattr(soc, name) == value, name


def test_the_fit_chose_the_least_cost_of_its_evaluations():
    evs = FIT["evaluations"]
    assert len(evs) > 10
    for ev in evs:      # every recorded cost is the objective of its recorded errors
        assert ev["cost"] == pytest.approx(calibrate_add.cost(ev["errors"]), rel=1e-12)
    best = calibrate_add.choose(evs)
    assert best["params"] == FIT["params"]
    assert best["cost"] == FIT["cost"]
    # every coordinate of the choice was tried on both sides where its grid has them
    tried = {tuple(sorted(ev["params"].items())) for ev in evs}
    for name, grid in calibrate_add.GRID.items():
        i = grid.index(FIT["params"][name])
        for j in (i - 1, i + 1):
            if 0 <= j < len(grid):
                assert tuple(sorted({**FIT["params"], name: grid[j]}.items())) in tried


def test_the_latencies_come_from_case_1_in_closed_form():
    # 6208.762 us of MTE2 for 16384 iterations: 701 cycles - 2 x (12.5 + 256) = 164
    assert calibrate_add.latencies(get_soc("Ascend910B1")) == FIT["fixed"]
    assert FIT["fixed"] == {"dma_latency_cycles": 164, "dma_write_latency_cycles": 27}


def test_case_3_replays_to_the_errors_of_the_fit():
    soc = get_soc(FIT["soc"])
    errs = calibrate_add.errors(calibrate_add.replay(soc, calibrate_add.record(3)), 3)
    for k, v in FIT["errors"]["3"].items():
        assert errs[k] == pytest.approx(v, abs=1e-9), k
