"""Profiles: every stream task leaves a record, the tracing switch (Device, acl.init JSON),
max_cores, and the msprof-style op summary CSV (npusim/profiling.py, npusim/device.py,
aclnn/runtime.py).

Expected values are computed by hand in the comments from the SoC preset (Ascend910B1:
host link 25e9 B/s + 10 µs, HBM 1.6e12 B/s, 48 AIV) or typed in from the msprof
op_summary page (column names)."""
import csv
import json

import numpy as np
import pytest

import aclnn
import npusim
from aclnn import acl, errmsg, runtime
from npusim import Device, profiling
from npusim.ascendc import DataCopy, GlobalTensor, TBuf, TPipe, float32
from npusim.device import (EVENT_RECORD, EVENT_WAIT, KERNEL, MEMCPY, MEMSET, TASK, Event,
                           Stream, limit_cores)

SOC = npusim.get_soc("Ascend910B1")
PARSE_FILE, WRITE_FILE = 100006, 100004


@pytest.fixture(autouse=True)
def fresh_runtime():
    runtime.reset()
    yield
    runtime.reset()


def read_kernel(src, n):
    """Reads n float32 from GM in 8192-element DataCopies (n * 4 bytes read)."""
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 32768)
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(src, n)
    for i in range(n // 8192):
        DataCopy(buf.Get(float32), g[i * 8192], 8192)


def copy_us(nbytes):
    return SOC.host_link_latency_us + nbytes / SOC.host_link_bandwidth * 1e6


# -- stream-task records -------------------------------------------------------------------
def test_every_stream_task_leaves_a_record():
    dev = Device(SOC)
    s1, s2 = dev.default_stream, Stream(dev)
    n = 8192 * 4
    src = dev.gm.malloc(n * 4)
    host = np.arange(n, dtype=np.float32)
    ev = Event(dev)
    dev.copy_async(s1, "H2D", n * 4, lambda: dev.gm.write(src, host))
    dev.record_event(s1, ev)
    dev.wait_event(s2, ev)
    dev.launch(s2, read_kernel, 1, (src, n), name="reader")
    dev.memset_async(s2, 1024, lambda: None)

    def custom(s):
        yield from ()
    s2.enqueue(custom)
    assert dev.synchronize([s1, s2]) == []
    kinds = [(r.kind, r.stream_id) for r in sorted(dev.tasks, key=lambda r: r.task_id)]
    assert sorted(kinds) == sorted([(MEMCPY, s1.id), (EVENT_RECORD, s1.id), (EVENT_WAIT, s2.id),
                                    (KERNEL, s2.id), (MEMSET, s2.id), (TASK, s2.id)])
    by_kind = {r.kind: r for r in dev.tasks}
    c = by_kind[MEMCPY]
    assert (c.name, c.nbytes, c.start_us) == ("H2D", n * 4, 0.0)
    assert c.end_us == pytest.approx(copy_us(n * 4))                 # 10 + 131072/25e9 s
    assert dev.copies[-1][:4] == ("H2D", c.start_us, c.end_us, n * 4)
    # the wait ends when the record runs, right after the copy; the kernel starts then
    assert by_kind[EVENT_RECORD].start_us == by_kind[EVENT_RECORD].end_us == c.end_us
    assert by_kind[EVENT_WAIT].end_us == c.end_us
    k = by_kind[KERNEL]
    assert k.profile is dev.profiles[-1] and k.name == "reader"
    assert k.start_us == k.profile.start_us == c.end_us
    assert k.duration_us == pytest.approx(k.profile.duration_us)
    m = by_kind[MEMSET]                                               # 1024 B / 1.6e12 B/s
    assert m.start_us == pytest.approx(k.end_us) and m.nbytes == 1024
    assert m.duration_us == pytest.approx(1024 / 1.6e12 * 1e6)
    assert by_kind[TASK].name == "test_every_stream_task_leaves_a_record.custom"


def test_a_failing_kernel_is_recorded_with_its_error():
    dev = Device(SOC)

    def overflow(src):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 64)
        g = GlobalTensor(float32)
        g.SetGlobalBuffer(src, 64)
        DataCopy(buf.Get(float32), g, 64)          # 256 B into a 64 B buffer
    dev.launch(dev.default_stream, overflow, 1, (dev.gm.malloc(4096),), name="overflow")
    errors = dev.synchronize_stream(dev.default_stream)
    (rec,) = dev.tasks
    assert len(errors) == 1 and rec.kind == KERNEL and rec.profile is None
    assert rec.error == str(errors[0]) and rec.duration_us == 0.0


def test_task_wait_time_is_the_gap_since_the_stream_s_previous_task():
    # s2's copy queues behind s1's on the one H2D engine: it starts c after its stream's
    # previous task (an event record at 0) ended, c = 10 us + 1 MiB / 25 GB/s
    dev = Device(SOC)
    s1, s2 = dev.default_stream, Stream(dev)
    nbytes = 1 << 20
    dev.copy_async(s1, "H2D", nbytes, lambda: None)
    dev.record_event(s2, Event(dev))
    dev.copy_async(s2, "H2D", nbytes, lambda: None)
    dev.synchronize([s1, s2])
    rows = {(r["Stream ID"], r["Task Type"]): r for r in profiling.task_rows(dev)}
    c = copy_us(nbytes)
    assert rows[(s2.id, "MEMCPY_ASYNC")]["Task Start Time(us)"] == pytest.approx(c)
    assert rows[(s2.id, "MEMCPY_ASYNC")]["Task Wait Time(us)"] == pytest.approx(c)
    assert rows[(s1.id, "MEMCPY_ASYNC")]["Task Wait Time(us)"] == 0.0
    assert rows[(s2.id, "EVENT_RECORD")]["Task Duration(us)"] == 0.0


def test_a_kernel_waiting_for_the_ai_cores_has_a_wait_time():
    # k1 (s1) and k2 (s2) are both ready at 0 after an instant event record; k2 waits
    # for the cores until k1 ends
    dev = Device(SOC)
    s1, s2 = dev.default_stream, Stream(dev)
    a = dev.gm.malloc(8192 * 4)
    for s, name in ((s1, "k1"), (s2, "k2")):
        dev.record_event(s, Event(dev))
        dev.launch(s, read_kernel, 1, (a, 8192), name=name)
    dev.synchronize([s1, s2])
    summary = {r["Op Name"]: r for r in profiling.op_summary_rows(dev)}
    d = dev.profiles[0].duration_us
    assert summary["k1"]["Task Wait Time(us)"] == 0.0
    assert summary["k2"]["Task Start Time(us)"] == pytest.approx(d)
    assert summary["k2"]["Task Wait Time(us)"] == pytest.approx(d)


# -- the tracing switch ------------------------------------------------------------------------
def test_tracing_is_off_by_default_and_costs_no_spans():
    dev = Device(SOC)
    src = dev.gm.malloc(8192 * 4)
    dev.launch(dev.default_stream, read_kernel, 1, (src, 8192), name="r")
    dev.synchronize_stream(dev.default_stream)
    p = dev.profiles[-1]
    assert not dev.profiling and p.timing.spans is None and p.records is None and p.lines is None
    dev.profiling = True
    dev.launch(dev.default_stream, read_kernel, 1, (src, 8192), name="r")
    dev.synchronize_stream(dev.default_stream)
    p2 = dev.profiles[-1]
    # the DataCopy, and the scalar unit's kernel entry and issue work (PIPE_S)
    assert [sp[3] for sp in p2.timing.spans[0]] == ["KernelEntry", "scalar", "DataCopy"]
    assert p2.lines[0][0].startswith("test_profiling.py:")
    assert p2.duration_us == p.duration_us                  # tracing changes no figure


def write_config(tmp_path, section):
    path = tmp_path / "acl.json"
    path.write_text(json.dumps({"npusim": section}))
    return str(path)


def test_profiling_switch_in_the_acl_init_json(tmp_path):
    assert acl.init(write_config(tmp_path, {"profiling": True})) == 0
    assert acl.rt.set_device(0) == 0
    assert runtime.current_device().profiling
    acl.rt.reset_device(0)
    acl.finalize()
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    assert not runtime.current_device().profiling                  # off by default
    runtime.set_profiling(True)
    assert runtime.current_device().profiling


@pytest.mark.parametrize("section,words", [
    ({"trace": "t.json"}, ['"npusim.trace"', "profiling"]),
    ({"profiling": True, "op_summary": 3}, ['"npusim.op_summary"', "file path"]),
    ({"profiling": True, "trace": ""}, ['"npusim.trace"']),
    ({"max_cores": 0}, ['"npusim.max_cores"', ">= 1"]),
    ({"max_cores": "8"}, ['"npusim.max_cores"']),
    ({"max_cores": True}, ['"npusim.max_cores"']),
    ({"tracing": True}, ["unknown key", "'tracing'"]),
])
def test_bad_profiling_config_is_a_parse_error(tmp_path, section, words):
    assert acl.init(write_config(tmp_path, section)) == PARSE_FILE
    msg = acl.get_recent_err_msg()
    assert all(w in msg for w in words), msg
    assert not runtime.state.initialized


# -- max_cores ---------------------------------------------------------------------------------
def test_limit_cores_on_split_and_coupled_socs():
    assert limit_cores(SOC, 4).vector_block_num == 4
    assert limit_cores(SOC, 4).cube_core_cnt == SOC.cube_core_cnt
    assert limit_cores(SOC, 64) is SOC and limit_cores(SOC, None) is SOC     # clamped
    a = npusim.get_soc("Ascend910A")
    assert limit_cores(a, 5).ai_core_cnt == 5 and limit_cores(a, 5).vector_block_num == 5
    with pytest.raises(ValueError, match="max_cores"):
        limit_cores(SOC, 0)


def _ema_once(n, stream):
    """aclnnApplyFusedEmaAdam on n fp32 zeros-ish elements; returns the profile."""
    tensors = []
    for _ in range(5):
        host = np.full(n, 0.5, np.float32)
        ptr, _ = acl.rt.malloc(host.nbytes, 0)
        acl.rt.memcpy(ptr, host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes, 1)
        tensors.append(aclnn.aclCreateTensor([n], aclnn.ACL_FLOAT, [1], 0, aclnn.ACL_FORMAT_ND,
                                             [n], ptr))
    step = np.array([1], np.int64)
    sp, _ = acl.rt.malloc(8, 0)
    acl.rt.memcpy(sp, 8, acl.util.numpy_to_ptr(step), 8, 1)
    st = aclnn.aclCreateTensor([1], aclnn.ACL_INT64, [1], 0, aclnn.ACL_FORMAT_ND, [1], sp)
    ws, ex, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(
        *tensors, st, 1e-3, 0.9999, 0.9, 0.999, 1e-8, 1, True, 0.0)
    assert ret == 0
    w, _ = acl.rt.malloc(ws, 0)
    assert aclnn.aclnnApplyFusedEmaAdam(w, ws, ex, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    return runtime.current_device().profiles[-1]


@pytest.mark.parametrize("max_cores,expect", [(4, 4), (1, 1), (1000, 48)])
def test_max_cores_limits_the_operators_block_dim(tmp_path, max_cores, expect):
    assert acl.init(write_config(tmp_path, {"max_cores": max_cores})) == 0
    assert acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    prof = _ema_once(48 * 64, stream)
    assert runtime.current_device().soc.vector_block_num == expect
    assert prof.block_dim == expect
    assert runtime.current_device().full_soc is SOC


# -- the op summary ----------------------------------------------------------------------------
#: msprof op_summary names typed in from the CANN 8.5 profiling guide (atlasprofiling_16_0067)
MSPROF_NAMES = ["Device_id", "Stream ID", "Task ID", "Op Name", "OP Type", "Task Type",
                "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Dim",
                "aiv_time(us)", "aiv_total_cycles", "aiv_vec_time(us)", "aiv_vec_ratio",
                "aiv_scalar_time(us)", "aiv_scalar_ratio", "aiv_mte2_time(us)",
                "aiv_mte2_ratio", "aiv_mte3_time(us)", "aiv_mte3_ratio"]


def test_op_summary_csv_columns_and_values(tmp_path):
    dev = Device(SOC, device_id=3)
    n = 8192 * 6
    src = dev.gm.malloc(n * 4)
    dev.launch(dev.default_stream, read_kernel, 2, (src, n), name="reader")
    dev.synchronize_stream(dev.default_stream)
    path = tmp_path / "sub" / "op_summary.csv"
    assert profiling.write_op_summary(path, dev) == 1
    with open(path, newline="") as f:
        header = next(csv.reader(f))
    assert header[:len(MSPROF_NAMES)] == MSPROF_NAMES
    assert not any(h.startswith("aic_") for h in header)          # no cube work: no cube columns
    assert {"Bytes Read(B)", "HBM Bandwidth(GB/s)", "HBM Floor(us)", "Bound",
            "Bound(%)"} <= set(header)
    (row,) = profiling.read_op_summary(path)
    p = dev.profiles[-1]
    assert row["Device_id"] == "3" and row["Stream ID"] == str(dev.default_stream.id)
    assert (row["Op Name"], row["Task Type"], row["Block Dim"]) == ("reader", "AI_VECTOR_CORE", "2")
    assert row["Task Duration(us)"] == f"{p.duration_us:.3f}"
    assert row["aiv_mte2_time(us)"] == f"{p.pipe_time_us['aiv_mte2_time']:.3f}"
    # both blocks read the same n floats: 2 * 196608 B from GM, but HBM sees them once
    # (the other block's reads hit L2): floor 196608 B / 1.6e12 B/s = 0.123 us
    assert row["Bytes Read(B)"] == str(2 * n * 4) and row["Bytes Written(B)"] == "0"
    assert row["HBM Bytes(B)"] == str(n * 4)
    assert row["HBM Floor(us)"] == "0.123"
    # a block reads 6 DataCopies back to back: MTE2 is busy the whole block but for the
    # scalar unit's kernel entry and first address, before the first copy is issued
    head_us = (SOC.scalar_entry_cycles + SOC.scalar_gm_offset_cycles) / SOC.freq_hz * 1e6
    assert float(row["aiv_time(us)"]) == pytest.approx(
        float(row["aiv_mte2_time(us)"]) + head_us, abs=2e-3)
    assert row["Bound"] == p.bound


def test_op_summary_on_a_coupled_soc_is_ai_core():
    dev = Device("Ascend910A")
    src = dev.gm.malloc(8192 * 4)
    dev.launch(dev.default_stream, read_kernel, 1, (src, 8192), name="r")
    dev.synchronize_stream(dev.default_stream)
    (row,) = profiling.op_summary_rows(dev)
    assert row["Task Type"] == "AI_CORE" and row["SoC"] == "Ascend910A"


def test_acl_writes_trace_and_op_summary_at_reset_and_finalize(tmp_path):
    trace, summary = tmp_path / "t.json", tmp_path / "o.csv"
    cfg = write_config(tmp_path, {"profiling": True, "trace": str(trace),
                                  "op_summary": str(summary), "max_cores": 2})
    assert acl.init(cfg) == 0 and acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    _ema_once(2 * 64, stream)
    assert not trace.exists()
    acl.rt.destroy_stream(stream)
    assert acl.rt.reset_device(0) == 0                    # the last reset writes the files
    rows = profiling.read_op_summary(summary)
    assert [r["Op Name"] for r in rows] == ["ApplyFusedEmaAdam"] and rows[0]["Block Dim"] == "2"
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("args", {}).get("name") == "NPU 0 AIV 1" for e in events)
    trace.unlink()
    assert acl.finalize() == 0                            # finalize writes them again
    assert trace.exists() and len(profiling.read_op_summary(summary)) == 1


def test_an_unwritable_profiling_file_leaves_a_message_only(tmp_path):
    bad = tmp_path / "missing-dir" / "x" / "t.json"
    (tmp_path / "missing-dir").write_text("a file, not a directory")
    cfg = write_config(tmp_path, {"profiling": True, "trace": str(bad)})
    assert acl.init(cfg) == 0 and acl.rt.set_device(0) == 0
    errmsg.clear()
    assert acl.finalize() == 0
    msg = acl.get_recent_err_msg()
    assert "cannot write" in msg and str(bad) in msg


def test_python_functions_write_the_files(tmp_path):
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    runtime.set_profiling(True)
    stream, _ = acl.rt.create_stream()
    _ema_once(64, stream)
    assert runtime.write_op_summary(tmp_path / "o.csv") == 1
    runtime.write_trace(tmp_path / "t.json")
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert any(e.get("cat") == "DMA" for e in events)


L2_NAMES = ["aiv_write_cache_hit", "aiv_write_cache_miss_allocate", "aiv_r0_read_cache_hit",
            "aiv_r0_read_cache_miss_allocate", "aiv_r1_read_cache_hit",
            "aiv_r1_read_cache_miss_allocate", "aiv_write_hit_rate(%)", "aiv_read_hit_rate(%)",
            "aiv_total_hit_rate(%)"]          # msOpProf L2Cache.csv, atlasopdev_16_0094


def test_op_summary_has_msprof_s_l2_counts(tmp_path):
    dev = Device(SOC)
    n = 8192 * 6
    src = dev.gm.malloc(n * 4)
    dev.launch(dev.default_stream, read_kernel, 2, (src, n), name="reader")
    dev.synchronize_stream(dev.default_stream)
    path = tmp_path / "op_summary.csv"
    profiling.write_op_summary(path, dev)
    with open(path, newline="") as f:
        header = next(csv.reader(f))
    i = header.index("aiv_mte3_ratio")
    assert header[i + 1:i + 1 + len(L2_NAMES)] == L2_NAMES
    assert not any(h.startswith("aic_") for h in header)
    (row,) = profiling.read_op_summary(path)
    # one block's 196608 B miss, the other's hit (HBM Bytes above): 1536 requests of
    # 128 B each, split between the channels r0 and r1; nothing written
    assert (row["aiv_r0_read_cache_hit"], row["aiv_r1_read_cache_hit"]) == ("768", "768")
    assert (row["aiv_r0_read_cache_miss_allocate"],
            row["aiv_r1_read_cache_miss_allocate"]) == ("768", "768")
    assert row["aiv_write_cache_hit"] == row["aiv_write_cache_miss_allocate"] == "0"
    # the DataCopy best practice's rate: (r0_hit + r1_hit) / (hits + miss-allocates)
    assert row["aiv_read_hit_rate(%)"] == "50.000" == row["aiv_total_hit_rate(%)"]
    assert row["aiv_write_hit_rate(%)"] == "0.000"


def test_l2_counts_from_bytes_split_over_the_channels():
    c = profiling.l2_counts((1280.0, 3 * 128.0, 256.0, 0.0, 0, 0, 0, 0), "aiv")
    assert (c["aiv_r0_read_cache_hit"], c["aiv_r1_read_cache_hit"]) == (5, 5)
    assert (c["aiv_r0_read_cache_miss_allocate"], c["aiv_r1_read_cache_miss_allocate"]) == (2, 1)
    assert (c["aiv_write_cache_hit"], c["aiv_write_cache_miss_allocate"]) == (2, 0)
    assert c["aiv_read_hit_rate(%)"] == pytest.approx(100 * 10 / 13)
    assert c["aiv_write_hit_rate(%)"] == 100.0
    assert c["aiv_total_hit_rate(%)"] == pytest.approx(100 * 12 / 15)
    empty = profiling.l2_counts((0.0,) * 8, "aic")
    assert empty["aic_read_hit_rate(%)"] == 0.0 and empty["aic_r0_read_cache_hit"] == 0


def test_cube_launch_has_aicore_time_and_aic_l2_counts():
    from npusim.ascendc import KernelMetaType, LocalTensor, TPosition, half

    def kernel(src):
        g = GlobalTensor(half)
        g.SetGlobalBuffer(src, 4096)
        a = LocalTensor.at(half, TPosition.A1, 0, 4096)
        DataCopy(a, g, 4096)
        DataCopy(a, g, 4096)        # the same 8 KiB again: L2 hits

    dev = Device(SOC)
    src = dev.gm.malloc(8192)
    dev.launch(dev.default_stream, kernel, 1, (src,), name="cube",
               kernel_type=KernelMetaType.KERNEL_TYPE_AIC_ONLY)
    dev.synchronize_stream(dev.default_stream)
    (row,) = profiling.op_summary_rows(dev)
    assert row["aicore_time(us)"] == row["aic_time(us)"] > 0
    assert row["aic_r0_read_cache_miss_allocate"] + row["aic_r1_read_cache_miss_allocate"] == 64
    assert row["aic_r0_read_cache_hit"] + row["aic_r1_read_cache_hit"] == 64
    assert row["aic_read_hit_rate(%)"] == 50.0
    assert not any(k.startswith("aiv_r0") for k in row)
    cols = profiling.op_summary_columns([row])
    assert cols.index("aicore_time(us)") == cols.index("aic_total_cycles") + 1
