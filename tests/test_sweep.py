"""Sweeps (npusim/sweeps.py), the operator registry (npusim_tools/registry.py) and the
sweep plots (npusim/plot.py): points, executors (serial, threads, processes, Dask) giving
identical records, speed-ups computed by hand, golden checks, the tile -> UB budget
search, and the figures' axes."""
import concurrent.futures as cf
import csv

import numpy as np
import pytest

import npusim
from aclnn import acl, runtime
from npusim.plot import plot_sweep
from npusim.sweeps import SweepResult, points, profile_record, sweep
from npusim_tools import registry
from npusim_tools import sweep as op_sweep

SOC = npusim.get_soc("Ascend910B1")


def fake_runner(point):
    """A model kernel: 100/cores + 10 us, 1 MB through HBM; fails for cores == 3."""
    if point.get("cores") == 3:
        raise ValueError("three is not allowed")
    return {"duration_us": 100.0 / point["cores"] + 10.0, "hbm_floor_us": 0.625,
            "hbm_bytes": 1_000_000}


def test_points_are_the_product_of_the_axes_first_axis_slowest():
    assert points(cores=[1, 2], dtype=["a", "b"], shape=(4, 8)) == [
        {"cores": 1, "dtype": "a", "shape": (4, 8)}, {"cores": 1, "dtype": "b", "shape": (4, 8)},
        {"cores": 2, "dtype": "a", "shape": (4, 8)}, {"cores": 2, "dtype": "b", "shape": (4, 8)}]
    assert points(shape=[(4,), (8,)], soc="x") == [{"shape": (4,), "soc": "x"},
                                                   {"shape": (8,), "soc": "x"}]


def test_speedup_and_errors_by_hand():
    res = sweep(fake_runner, executor="serial", cores=[1, 2, 3, 4, 10])
    assert [r["cores"] for r in res.records] == [1, 2, 3, 4, 10]
    # T(1) = 110, T(2) = 60, T(4) = 35, T(10) = 20 us
    assert [r.get("speedup") for r in res.records] == [
        1.0, pytest.approx(110 / 60), None, pytest.approx(110 / 35), pytest.approx(110 / 20)]
    (bad,) = res.errors
    assert bad["cores"] == 3 and bad["error"] == "ValueError: three is not allowed"
    with pytest.raises(ValueError, match="no points"):
        sweep(fake_runner, executor="serial", cores=[])
    with pytest.raises(ValueError, match="not both"):
        sweep(fake_runner, executor="serial", scheduler="tcp://x:1", cores=[1])


@pytest.mark.parametrize("executor", [None, "threads"])
def test_pools_give_the_serial_records(executor):
    serial = sweep(fake_runner, executor="serial", cores=[1, 2, 3, 4], dtype=["a", "b"])
    if executor == "threads":
        with cf.ThreadPoolExecutor(2) as pool:
            other = sweep(fake_runner, executor=pool, cores=[1, 2, 3, 4], dtype=["a", "b"])
        assert other.executor == "ThreadPoolExecutor"
    else:
        other = sweep(fake_runner, jobs=2, cores=[1, 2, 3, 4], dtype=["a", "b"])
        assert other.executor == "process pool (2 workers)"
    assert other.records == serial.records


def test_result_table_and_csv(tmp_path):
    res = sweep(fake_runner, executor="serial", cores=[1, 2])
    text = res.table()
    assert text.splitlines()[0].split() == ["cores", "duration_us", "speedup", "hbm_floor_us"]
    res.to_csv(tmp_path / "s.csv")
    with open(tmp_path / "s.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [float(r["duration_us"]) for r in rows] == [110.0, 60.0]
    assert list(rows[0])[:3] == ["cores", "duration_us", "speedup"]


# -- the registry ----------------------------------------------------------------------------
@pytest.mark.parametrize("op,dtype", [("ApplyFusedEmaAdam", "float32"),
                                      ("ApplyFusedEmaAdam", "bf16"),
                                      ("ApplyAddSign", "float16"), ("Add", "float32")])
def test_every_operator_runs_through_aclnn_and_matches_its_golden(op, dtype):
    rec = registry.run_point(registry.get(op), shape=(3, 2000), dtype=dtype, cores=5, seed=1)
    assert rec["check"] == "ok" and rec["mismatches"] == 0, rec
    assert rec["cores"] == 5 and rec["block_dim"] == 5 and rec["path"] == "aclnn"
    assert rec["shape"] == "3x2000" and rec["duration_us"] > 0


@pytest.mark.parametrize("op,shape,dtype", [("EmbeddingDenseBackward", (512, 40), "float16"),
                                            ("FusedSparseAdam", (300, 16), "float32")])
def test_chained_operators_run_through_aclnn_only(op, shape, dtype):
    module = "embedding_dense_backward" if op.startswith("Embedding") else "fused_sparse_adam"
    pytest.importorskip(f"aclnn.ops.{module}")
    entry = registry.get(op)
    rec = registry.run_point(entry, shape=shape, dtype=dtype, cores=6, seed=4)
    assert rec["check"] == "ok" and rec["mismatches"] == 0, rec
    assert rec["cores"] == 6 and rec["launches"] >= 2 and rec["tile_len"] is None
    with pytest.raises(registry.RunError, match="no kernel-level driver"):
        registry.run_point(entry, shape=shape, dtype=dtype, tile=256)


def test_check_catches_a_wrong_output():
    entry = registry.get("ApplyFusedEmaAdam")
    case = registry.make_case(entry, (64,), "float32", seed=2)
    expected = entry.golden(case)
    outputs = {k: v.copy() for k, v in expected.items()}
    assert registry.check(entry, case, outputs, expected)["check"] == "ok"
    outputs["v"][7] += 1e-3                              # rtol 1e-5 * |v| + 1e-6 < 1e-3
    verdict = registry.check(entry, case, outputs, expected)
    assert verdict == {"check": "FAIL", "max_abs_err": pytest.approx(1e-3, rel=1e-3),
                       "mismatches": 1}


def test_same_seed_same_case_and_names():
    e = registry.get("aclnnApplyAddSign")
    a, b = (registry.make_case(e, (16,), "fp16", seed=7) for _ in range(2))
    assert all(np.array_equal(a.tensors[k], b.tensors[k]) for k in a.tensors)
    assert a.tensors["var"].dtype == np.float16 and a.outputs == ("var", "m")
    with pytest.raises(KeyError, match="known: Add, ApplyAddSign, ApplyFusedEmaAdam, "
                       "BatchMatMul, EmbeddingDenseBackward, FusedSparseAdam"):
        registry.get("Nope")


def test_kernel_level_and_aclnn_paths_agree():
    entry = registry.get("ApplyFusedEmaAdam")
    case = registry.make_case(entry, (40000,), "float32")
    via_api = registry.run_aclnn(entry, case, "Ascend910B1", cores=7)
    direct = registry.run_kernel_level(entry, case, "Ascend910B1", cores=7)
    (p1,), (p2,) = via_api.profiles, direct.profiles
    assert (p1.block_dim, p1.duration_us, p1.hbm_bytes) == (p2.block_dim, p2.duration_us,
                                                            p2.hbm_bytes)
    for k in case.outputs:
        assert np.array_equal(via_api.outputs[k], direct.outputs[k])


def test_tile_to_ub_budget():
    entry = registry.get("ApplyFusedEmaAdam")
    case = registry.make_case(entry, (1 << 16,), "float32")
    # fp32 mode 1: 32 B per element (4 in + 4 out slots of 4 B) + 64 B of TBufs
    assert registry.ub_for_tile(entry, SOC, case, 1024, 48) == 1024 * 32 + 64
    rec = registry.run_point(entry, shape=(1 << 16,), cores=4, tile=1000)
    assert rec["tile"] == 1000 and rec["tile_len"] == 1000 and rec["path"] == "kernel"
    assert rec["check"] == "ok"
    with pytest.raises(registry.RunError, match="at most 6128 elements"):
        registry.ub_for_tile(entry, SOC, registry.make_case(entry, (1 << 20,), "float32"),
                             8192, 48)


def test_the_callers_acl_session_is_left_alone():
    runtime.reset()
    try:
        assert acl.init() == 0 and acl.rt.set_device(0) == 0
        dev = runtime.current_device()
        registry.run_point(registry.get("Add"), shape=(256,), cores=2)
        assert runtime.current_device() is dev and runtime.state.initialized
        assert dev.profiles == []
    finally:
        runtime.reset()


def test_operator_sweep_over_cores_threads_and_processes_agree():
    kw = dict(cores=[1, 2, 4], shape=(8192,), dtype="float32")
    serial = op_sweep("ApplyFusedEmaAdam", executor="serial", **kw)
    with cf.ThreadPoolExecutor(2) as pool:           # runs take turns in one process
        threaded = op_sweep("ApplyFusedEmaAdam", executor=pool, **kw)
    pooled = op_sweep("ApplyFusedEmaAdam", jobs=2, **kw)
    assert serial.records == threaded.records == pooled.records
    assert [r["block_dim"] for r in serial.records] == [1, 2, 4]
    assert all(r["check"] == "ok" for r in serial.records)
    t = [r["duration_us"] for r in serial.records]
    assert t[0] > t[1] > t[2] and serial.records[0]["speedup"] == 1.0


def test_sweep_on_a_dask_cluster_equals_the_local_run():
    distributed = pytest.importorskip("dask.distributed")
    kw = dict(cores=[1, 3, 8], dtype=["float32", "float16"], shape=(4096,))
    local = op_sweep("ApplyFusedEmaAdam", jobs=2, **kw)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            on_client = op_sweep("ApplyFusedEmaAdam", executor=client, **kw)
        on_address = op_sweep("ApplyFusedEmaAdam", scheduler=cluster.scheduler_address, **kw)
    assert on_client.executor == on_address.executor == "dask distributed"
    assert on_client.records == local.records == on_address.records
    assert len(local.records) == 6 and not local.errors


# -- plots -----------------------------------------------------------------------------------
def _lines(ax):
    return {line.get_label(): line for line in ax.get_lines()}


def test_cores_plot_has_time_speedup_and_the_hbm_roofline(tmp_path):
    res = sweep(fake_runner, executor="serial", cores=[1, 2, 4, 10])
    path = tmp_path / "cores.png"
    fig = res.plot(path)
    assert path.read_bytes()[:4] == b"\x89PNG"
    ax_t, ax_s = fig.axes
    assert (ax_t.get_xlabel(), ax_t.get_ylabel()) == ("cores", "simulated time (µs)")
    assert (ax_s.get_xlabel(), ax_s.get_ylabel()) == ("cores", "speed-up")
    t, s = _lines(ax_t), _lines(ax_s)
    assert list(t["simulated"].get_ydata()) == [110.0, 60.0, 35.0, 20.0]
    assert list(t["HBM roofline"].get_ydata()) == [0.625] * 4
    assert list(s["ideal (linear)"].get_ydata()) == [1.0, 2.0, 4.0, 10.0]
    assert list(s["simulated"].get_ydata()) == pytest.approx([1.0, 110 / 60, 110 / 35, 5.5])
    # roofline speed-up: min(n, T(1) / floor) = min(n, 176)
    assert list(s["HBM roofline"].get_ydata()) == [1.0, 2.0, 4.0, 10.0]


def test_tile_and_dtype_plots():
    recs = [{"tile": t, "tile_len": t, "duration_us": 1000.0 / t + 5, "hbm_floor_us": 2.0,
             "cores": 48} for t in (256, 1024, 4096)]
    fig = plot_sweep(recs)
    (ax,) = fig.axes
    assert ax.get_xlabel() == "tile length (elements)" and ax.get_xscale() == "log"
    assert ax.get_ylabel() == "simulated time (µs)"
    assert list(_lines(ax)["simulated"].get_xdata()) == [256, 1024, 4096]
    recs = [{"dtype": d, "duration_us": v, "hbm_floor_us": 1.0} for d, v in
            (("float32", 30.0), ("float16", 20.0))]
    (ax,) = plot_sweep(recs).axes
    assert ax.get_xlabel() == "dtype"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["float32", "float16"]
    assert [p.get_height() for p in ax.patches] == [30.0, 20.0]
    with pytest.raises(ValueError, match="no sweep records"):
        plot_sweep([])


def soc_runner(point):
    """Cores follow the SoC, as a real device's would."""
    cores = {"A": 48, "B": 40}[point["soc"]]
    return {"cores": cores, "duration_us": 4800.0 / cores, "hbm_floor_us": 1.0}


def test_an_axis_that_follows_another_is_not_swept():
    res = sweep(soc_runner, executor="serial", soc=["A", "B"], dtype=["x", "y"])
    assert [r["cores"] for r in res.records] == [48, 48, 40, 40]
    assert all("speedup" not in r for r in res.records)           # cores were not swept
    (ax,) = res.plot().axes               # x: the first swept axis (cores, tile, dtype, soc)
    assert ax.get_xlabel() == "dtype"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x", "y"]
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == [
        "HBM roofline", "soc=A", "soc=B"]
    assert sorted(p.get_height() for p in ax.patches) == [100.0, 100.0, 120.0, 120.0]


def test_profile_record_of_two_launches():
    entry = registry.get("Add")
    case = registry.make_case(entry, (1 << 14,), "float32")
    res = registry.run_kernel_level(entry, case, "Ascend910B1", cores=4)
    (p,) = res.profiles
    rec = profile_record([p, p], SOC)
    assert rec["launches"] == 2 and rec["duration_us"] == 2 * p.duration_us
    assert rec["bytes_read"] == 2 * p.bytes_read == 2 * 2 * 4 * (1 << 14)
    assert rec["hbm_floor_us"] == pytest.approx(2 * p.hbm_bytes / 1.6e12 * 1e6)
    assert rec["aiv_mte2_time_us"] == p.pipe_time_us["aiv_mte2_time"]
    assert isinstance(SweepResult([rec], {}).columns(), list)
