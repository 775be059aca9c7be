"""examples/data_copy_study.py: the measured table is the README's, every scenario runs, the
effect ratios are computed right, and docs/calibration.md shows the module's figures."""
import math
import re
from pathlib import Path

import numpy as np
import pytest

from aclnn_helpers import load_example
from npusim import lockstep

ROOT = Path(__file__).resolve().parents[1]
study = load_example("data_copy_study")
M = study.MEASURED


def test_measured_figures_are_the_readmes():
    """Transcribed by hand from the README's Atlas A2/A3 rows (asc-devkit data_copy/README.md):
    "GM 到 UB 性能数据" scenario 1: 564.84 µs, aiv_total_cycles 49222116, aiv_mte2_time 548.161;
    "GM 到 L1 性能数据" scenario 3 (Tensor=[12288,12287]): 438.76 µs, aic_mte2_time 422.515;
    "GM 到 UB L2Cache 性能数据" scenario 6: 365.74 µs, r0 hit 3539159, r0 miss_allocate 1179644;
    "GM 到 L1" scenario 7 (offset addr): 221.34 µs, aic_mte2_time 209.8."""
    assert (M["U1"]["task"], M["U1"]["cycles"], M["U1"]["mte2"]) == (564.84, 49222116, 548.161)
    assert (M["L3"]["task"], M["L3"]["mte2"]) == (438.76, 422.515)
    assert (M["U6"]["task"], M["U6"]["r0_hit"], M["U6"]["r0_miss"]) == (365.74, 3539159, 1179644)
    assert (M["L7"]["task"], M["L7"]["mte2"]) == (221.34, 209.8)
    assert set(M) == set(study.SCENARIOS)


@pytest.mark.parametrize("derived,expected", [
    # the README's own derived figures, recomputed from the transcribed ones: a wrong digit
    # anywhere in these shows. "相对基线MTE2性能提升" is baseline MTE2 / MTE2 - 1:
    (lambda: M["U1"]["mte2"] / M["U2"]["mte2"] - 1, 1.483),      # "+148.3%"
    (lambda: M["U1"]["mte2"] / M["U3"]["mte2"] - 1, 1.705),      # "+170.5%"
    (lambda: M["L1"]["mte2"] / M["L2"]["mte2"] - 1, 0.322),      # "+32.2%"
    # "相对对齐场景性能变化" on Task Duration:
    (lambda: M["U3"]["task"] / M["U4"]["task"] - 1, -0.216),     # "-21.6%"
    (lambda: M["L2"]["task"] / M["L3"]["task"] - 1, -0.475),     # "-47.5%"
    # "优化效果分析": end to end
    (lambda: M["U1"]["task"] / M["U3"]["task"] - 1, 1.617),      # "约 161.7%"
    (lambda: M["U7"]["task"] / M["U8"]["task"] - 1, 0.640),      # "约 64.0%"
    # "L2Cache命中率" from the r0/r1 counts
    (lambda: study.measured_hit_rate("U5"), 0.005),              # "0.005%"
    (lambda: study.measured_hit_rate("L4"), 0.006),              # "0.006%"
    (lambda: study.measured_hit_rate("U6"), 75.00),              # "75.00%"
    (lambda: study.measured_hit_rate("L5"), 75.00),              # "75.00%"
])
def test_the_readmes_derived_figures_follow_from_the_table(derived, expected):
    assert derived() == pytest.approx(expected, abs=0.0006 if abs(expected) < 3 else 0.006)


def test_the_scenarios_are_the_examples():
    """data_copy.asc: UB on 48 AIV, L1 on 24 AIC; U1 is 256 rows x 192 tiles of [1,64] =
    49,152 copies per block; U4 ends each row with a 1023-column tile (blockLen 2046 B)."""
    sc = study.SCENARIOS
    assert {s.blocks for k, s in sc.items() if k[0] == "U"} == {48}
    assert {s.blocks for k, s in sc.items() if k[0] == "L"} == {24}
    for name, s in sc.items():
        assert study.scaled_shape(s, 1.0) == (s.m, s.n), name
    assert sum(1 for _ in study.tile_origins(sc["U1"], 12288, 12288, 0)) == 49152
    tiles = list(study.tile_origins(sc["U4"], 12288, 12287, 47))
    assert len(tiles) == 4 * 12 and tiles[0] == (47 * 256, 0, 1024) and tiles[11] == (47 * 256, 11264, 1023)
    # staggered: block 5 starts at row block 5 and wraps; same order starts at 0
    assert next(study.tile_origins(sc["U8"], 6144, 512, 5))[0] == 5 * 128
    assert next(study.tile_origins(sc["U7"], 6144, 512, 5))[0] == 0


def test_a_scaled_tiles_run_covers_the_matrix_once():
    """L3 at scale 0.05: 24 blocks of 64 rows, 511 columns (one full 256 tile, one of 255);
    the blocks' tiles cover every element exactly once."""
    sc = study.SCENARIOS["L3"]
    m, n = study.scaled_shape(sc, 0.05)
    assert (m, n) == (24 * 64, 511)
    count = np.zeros((m, n), np.int32)
    for b in range(sc.blocks):
        for r, c, cols in study.tile_origins(sc, m, n, b):
            count[r:r + sc.tile_m, c:c + cols] += 1
    assert (count == 1).all()


@pytest.mark.parametrize("name", list(study.SCENARIOS))
def test_each_scenario_runs_at_a_tiny_scale(name):
    fig = study.run_scenario(name, 0.01, blocks=2)
    assert math.isfinite(fig["task_duration_us"]) and fig["task_duration_us"] > 0
    side = "aiv" if name[0] == "U" else "aic"
    assert fig[f"{side}_mte2_time_us"] > 0
    assert fig["bytes_read"] > 0 and 0 <= fig["l2_hit_rate_pct"] <= 100
    assert not study.full_size(fig)


@pytest.mark.parametrize("name", ["U1", "U8", "L7"])
def test_the_blocks_run_as_one_lockstep_group(name, monkeypatch):
    """The kernel's loops have the same bounds on every block (only the rows it copies
    depend on GetBlockIdx()), so the launch runs the kernel's Python once for all blocks
    (npusim.lockstep), with the figures of a run block after block."""
    calls = []
    real = study.data_copy_kernel
    monkeypatch.setattr(study, "data_copy_kernel", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(lockstep, "PROBE", False)   # the cube launches' first runs alone
    fig = study.run_scenario(name, 0.01, blocks=4)
    assert len(calls) == 1
    monkeypatch.setenv("NPUSIM_LOCKSTEP", "0")
    alone = study.run_scenario(name, 0.01, blocks=4)
    assert len(calls) == 5
    fig.pop("host_seconds"), alone.pop("host_seconds")
    assert fig == alone


def test_main_prints_without_errors_when_scaled(capsys, tmp_path):
    study.main(["--case", "u3,U4", "--scale", "0.01", "--plot", str(tmp_path / "e.png")])
    out = capsys.readouterr().out
    assert "(scaled)" in out and "measured" not in out and (tmp_path / "e.png").stat().st_size
    with pytest.raises(SystemExit):
        study.main(["--case", "U9"])


def test_effect_ratios_from_a_hand_made_table():
    tasks = {"U1": 500.0, "U3": 200.0, "U2": 220.0, "U6": 100.0, "U5": 400.0, "L7": 30.0,
             "L6": 40.0}
    got = dict(study.effects(tasks))
    assert got["small / large blocks (UB)"] == 2.5
    assert got["medium / large blocks (UB)"] == pytest.approx(1.1)
    assert got["L2 reuse: sliced / whole (UB)"] == 0.25
    assert got["staggered / same order (L1)"] == 0.75
    assert got["unaligned / aligned (UB)"] is None       # U4 missing
    measured = dict(study.effects({k: v["task"] for k, v in M.items()}))
    assert measured["L2 reuse: sliced / whole (L1)"] == pytest.approx(414.96 / 899.34)


def test_the_calibration_docs_show_the_modules_measured_figures():
    text = (ROOT / "docs" / "calibration.md").read_text()
    section = text.split("## DataCopy best practice (fitted and predicted)")[1].split("\n## ")[0]
    rows = re.findall(r"^\| (U\d|L\d) [^|]*\| ([\d.]+) \| ([\d.]+) \| ([+−-][\d.]+)% \| (\w+) \|",
                      section, flags=re.M)
    assert {r[0] for r in rows} == set(study.SCENARIOS)
    for name, sim, meas, err, role in rows:
        assert float(meas) == M[name]["task"], name
        assert role == ("fitted" if name in study.FITTED else "prediction"), name
        err = float(err.replace("−", "-"))
        assert err == pytest.approx(study.error_pct(float(sim), float(meas)), abs=0.15), name
