"""The ``npusim`` command (npusim_tools/cli.py): output, files, exit codes, and one-line
messages for bad arguments (never a traceback)."""
import csv
import dataclasses
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import npusim
from npusim_tools import cli, registry

ROOT = Path(__file__).resolve().parents[1]


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_console_script_is_declared():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["scripts"]["npusim"] == "npusim_tools.cli:main"
    assert "npusim_tools*" in meta["tool"]["setuptools"]["packages"]["find"]["include"]


def test_socs_lists_every_preset(capsys):
    code, out, _ = run(capsys, "socs")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["SoC", "short"]
    assert len(lines) == 2 + len(npusim.list_socs())
    b1 = next(line for line in lines if line.startswith("Ascend910B1 ")).split()
    # Ascend910B1: 24 AIC, 48 AIV, 1850 MHz, UB 192 KiB, L2 192 MiB, HBM 1.6 TB/s
    assert b1[3:8] == ["24", "48", "1850", "192", "192"] and b1[-1] == "1.600"


def test_ops_lists_the_registry(capsys):
    code, out, _ = run(capsys, "ops")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()[2:]] == registry.names()


def test_run_checks_the_golden_and_writes_trace_and_summary(capsys, tmp_path):
    trace, summary = tmp_path / "t.json", tmp_path / "o.csv"
    code, out, err = run(capsys, "run", "ApplyFusedEmaAdam", "--shape", "64x64", "--cores", "4",
                         "--trace", str(trace), "--op-summary", str(summary), "--seed", "3")
    assert code == 0, err
    assert "aclnnApplyFusedEmaAdam shape [64, 64] float32 on Ascend910B1 (4 vector cores)" in out
    assert "golden check: ok" in out and "blockDim 4, Task Duration" in out
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(1 for e in events if e["ph"] == "M" and "AIV" in str(e["args"].get("name"))) == 4
    with open(summary, newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert row["OP Type"] == "ApplyFusedEmaAdam" and row["Block Dim"] == "4"


def test_run_exits_1_when_the_golden_disagrees(capsys, monkeypatch):
    entry = registry.get("Add")

    def wrong(case):
        return {"out": entry.golden(case)["out"] + np.float32(1.0)}
    monkeypatch.setitem(registry.REGISTRY, "Add", dataclasses.replace(entry, golden=wrong))
    code, out, _ = run(capsys, "run", "Add", "--shape", "1024")
    assert code == 1
    assert "golden check: FAIL" in out and "1024 element(s) outside" in out


@pytest.mark.parametrize("argv,words", [
    ([], ["required", "COMMAND"]),
    (["frobnicate"], ["invalid choice", "frobnicate"]),
    (["run"], ["required", "op"]),
    (["run", "Conv2D"], ["unknown operator 'Conv2D'", "ApplyFusedEmaAdam"]),
    (["run", "Add", "--dtype", "float64"], ["--dtype", "unknown dtype 'float64'"]),
    (["run", "ApplyAddSign", "--dtype", "bf16"], ["--dtype", "does not take bfloat16"]),
    (["run", "Add", "--dtype", "fp32,fp16"], ["run takes one --dtype"]),
    (["run", "Add", "--soc", "Ascend999"], ["--soc", "unknown SoC 'Ascend999'"]),
    (["run", "ApplyFusedEmaAdam", "--soc", "Ascend910A"], ["does not run on Ascend910A"]),
    (["run", "Add", "--cores", "0"], ["--cores", "outside [1, 48]"]),
    (["run", "Add", "--cores", "49"], ["--cores", "49", "Ascend910B1"]),
    (["run", "Add", "--cores", "four"], ["--cores", "invalid int value"]),
    (["run", "Add", "--shape", "abc"], ["--shape", "not a list of integers"]),
    (["run", "Add", "--shape", "16x0"], ["--shape", ">= 1"]),
    (["run", "Add", "--shape", "1,1,1,1,1,1,1,1,1"], ["--shape", "9 dimensions"]),
    (["run", "Add", "--seed", "-1"], ["--seed"]),
    (["run", "Add", "--trace", "/no/such/dir/t.json"], ["--trace", "does not exist"]),
    (["sweep", "Add"], ["nothing to sweep"]),
    (["sweep", "Add", "--cores", "4"], ["nothing to sweep"]),
    (["sweep", "Add", "--cores", "1-"], ["--cores", "'1-'"]),
    (["sweep", "Add", "--cores", "8-2"], ["--cores", "empty range"]),
    (["sweep", "Add", "--cores", "1,2,64"], ["--cores", "64"]),
    (["sweep", "Add", "--tile", "0,512"], ["--tile", ">= 1"]),
    (["sweep", "Add", "--cores", "1,2", "--jobs", "0"], ["--jobs"]),
    (["sweep", "Add", "--cores", "1,2", "--serial", "--scheduler", "tcp://x:1"], ["exclude"]),
    (["sweep", "Add", "--cores", "1,2", "--plot", "/no/such/dir/p.png"], ["--plot"]),
    (["timeline"], ["required", "trace"]),
    (["timeline", "missing.json", "--plot", "x.png"], ["missing.json", "no such file"]),
    (["timeline", "{tmp}/bad.json", "--plot", "{tmp}/x.png"], ["not a trace"]),
    (["timeline", "{tmp}/ok.json"], ["--plot", "required"]),
    (["timeline", "{tmp}/ok.json", "--plot", "{tmp}/x.png", "--window", "5,1"], ["--window"]),
    (["timeline", "{tmp}/ok.json", "--plot", "{tmp}/x.png", "--cores", "aicx"],
     ["--cores", "'aicx'", "aicN"]),
    # a shape or attribute the operator cannot take is a bad argument, not a failed run
    (["run", "EmbeddingDenseBackward", "--shape", "1024"], ["--shape 1024", "at least 2-D"]),
    (["run", "Matmul", "--shape", "64x64"], ["--shape 64x64", "M x K x N"]),
    (["sweep", "Matmul", "--shape", "64x64", "--cores", "1,2", "--serial"], ["--shape 64x64"]),
    (["sweep", "Add", "--axis", "foo=1,2", "--serial"], ["--axis", "no attribute foo", "alpha"]),
    (["pyasc", "{tmp}/missing.py"], ["missing.py", "no such file"]),
])
def test_bad_arguments_give_one_line_and_exit_2(capsys, tmp_path, argv, words):
    (tmp_path / "bad.json").write_text(json.dumps({"events": []}))
    (tmp_path / "ok.json").write_text(json.dumps({"traceEvents": []}))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("npusim: error: "), err
    assert all(w in lines[0] for w in words), lines[0]
    assert "Traceback" not in err + out


def test_a_failing_point_is_reported_and_exits_1(capsys):
    code, out, err = run(capsys, "sweep", "ApplyFusedEmaAdam", "--shape", "65536", "--tile",
                         "1024,100000", "--serial", "--no-progress")
    assert code == 1 and "Traceback" not in err
    assert "tile=100000 failed: RunError: tile 100000 is longer than" in err
    assert "at most 6128 elements" in err


def test_sweep_writes_table_csv_and_plot(capsys, tmp_path):
    csv_path, png = tmp_path / "s.csv", tmp_path / "s.png"
    code, out, err = run(capsys, "sweep", "ApplyAddSign", "--shape", "20000", "--cores", "1-2,4",
                         "--csv", str(csv_path), "--plot", str(png), "--jobs", "2",
                         "--no-progress")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("aclnnApplyAddSign shape [20000]: 3 points in ")
    assert lines[1].split()[:3] == ["cores", "dtype", "soc"]
    assert [line.split()[0] for line in lines[3:6]] == ["1", "2", "4"]
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["block_dim"] for r in rows] == ["1", "2", "4"]
    assert {"duration_us", "speedup", "hbm_floor_us", "bound", "bound_percent",
            "check"} <= set(rows[0])
    assert all(r["check"] == "ok" for r in rows)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_tile_sweep_through_the_command(capsys):
    code, out, err = run(capsys, "sweep", "Add", "--shape", "65536", "--tile", "512,2048",
                         "--cores", "8", "--serial")
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()[3:5]]
    assert [r[1] for r in rows] == ["512", "2048"]                    # the tile column
    assert [r[5] for r in rows] == ["512", "2048"]                    # tile_len from the tiling


def test_timeline_command_writes_a_png(capsys, tmp_path):
    trace, png = tmp_path / "t.json", tmp_path / "g.png"
    assert cli.main(["run", "Add", "--shape", "4096", "--cores", "2", "--trace", str(trace)]) == 0
    code, out, _ = run(capsys, "timeline", str(trace), "--plot", str(png), "--cores", "1")
    assert code == 0 and png.read_bytes()[:4] == b"\x89PNG"
    # by default the kernels: streams (1) + core 1: blocks, MTE2, V, MTE3, S (the scalar
    # unit's issue work)
    assert out.strip().endswith("(6 rows)"), out
    code, out, _ = run(capsys, "timeline", str(trace), "--plot", str(png), "--cores", "1",
                       "--copies")
    # with the copy engines H2D, D2H (2)
    assert code == 0 and out.strip().endswith("(8 rows)"), out


def test_the_command_runs_as_a_program():
    proc = subprocess.run([sys.executable, "-m", "npusim_tools", "run", "Add", "--shape", "2048",
                           "--cores", "2"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and "golden check: ok" in proc.stdout, proc.stderr
    proc = subprocess.run([sys.executable, "-m", "npusim_tools", "run", "Add", "--cores", "x"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
