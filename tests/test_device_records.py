"""What a device keeps of its past (npusim/device.py Records, aclnn/runtime.py): every task
record, kernel profile and copy while profiling is on; otherwise the last ``keep_records``
of each, so a long run's memory stays flat; released by clear_records, reset_device and
finalize."""
import csv
import json

import numpy as np
import pytest

import aclnn
import npusim
from aclnn import acl, runtime
from npusim.ascendc import DataCopy, GlobalTensor, TBuf, TPipe, float32
from npusim.device import KEEP_RECORDS, Records


@pytest.fixture(autouse=True)
def fresh_runtime():
    runtime.reset()
    yield
    runtime.reset()


def load(src):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 256)
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(src, 64)
    DataCopy(buf.Get(float32), g, 64)


def launches(dev, n, first=0):
    """``n`` launches named k<i>, and a copy after each, then synchronise."""
    ptr = dev.gm.malloc(256)
    stream = dev.default_stream
    for i in range(first, first + n):
        dev.launch(stream, load, 1, (ptr,), name=f"k{i}")
        dev.copy_async(stream, "D2H", 256, lambda: None)
    assert not dev.synchronize_stream(stream)


def names(records):
    return [r.op_name if hasattr(r, "op_name") else r.name for r in records]


def test_records_count_everything_and_give_what_came_after_a_mark():
    r = Records()
    for i in range(5):
        r.append(i)
    mark = r.total
    r.append(5)
    r.append(6)
    assert r.since(mark) == [5, 6] and r.since(r.total) == [] and r.since(0) == list(range(7))
    del r[:4]                                 # trimmed: what is kept of the stretch
    assert r.since(0) == [4, 5, 6] and r.since(mark) == [5, 6] and r.total == 7
    r.clear()
    assert r.total == 7 and r.since(mark) == []


def test_a_device_not_profiling_keeps_the_last_records_of_each_kind():
    dev = npusim.Device(keep_records=4)
    launches(dev, 10)
    assert names(dev.profiles) == ["k6", "k7", "k8", "k9"]
    assert len(dev.tasks) == 4 and len(dev.copies) == 4
    assert [t.kind for t in dev.tasks] == ["KERNEL", "MEMCPY"] * 2       # the last four
    assert (dev.profiles.total, dev.tasks.total, dev.copies.total) == (10, 20, 10)
    mark = dev.profiles.total
    launches(dev, 2, first=10)
    assert names(dev.profiles.since(mark)) == ["k10", "k11"]
    assert KEEP_RECORDS == npusim.Device().keep_records == 1000


def test_a_profiling_device_keeps_every_record_and_trims_once_it_stops():
    dev = npusim.Device(profiling=True, keep_records=3)
    launches(dev, 6)
    assert names(dev.profiles) == [f"k{i}" for i in range(6)] and len(dev.tasks) == 12
    dev.profiling = False
    launches(dev, 1, first=6)
    assert names(dev.profiles) == ["k4", "k5", "k6"] and len(dev.tasks) == 3
    everything = npusim.Device(keep_records=None)
    launches(everything, 5)
    assert len(everything.profiles) == 5


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_keep_records_must_be_a_count(bad, tmp_path):
    with pytest.raises(ValueError, match="keep_records"):
        npusim.Device(keep_records=bad)
    with pytest.raises(ValueError, match="keep_records"):
        runtime.set_keep_records(bad)
    path = tmp_path / "acl.json"
    path.write_text(json.dumps({"npusim": {"keep_records": bad}}))
    assert acl.init(str(path)) == aclnn.ACL_ERROR_PARSE_FILE
    assert "keep_records" in acl.get_recent_err_msg()


def test_the_host_api_sets_clears_and_releases_the_records(tmp_path):
    path = tmp_path / "acl.json"
    path.write_text(json.dumps({"npusim": {"keep_records": 3}}))
    assert acl.init(str(path)) == 0 and acl.rt.set_device(0) == 0
    dev = runtime.current_device()
    assert dev.keep_records == 3
    launches(dev, 5)
    assert names(dev.profiles) == ["k2", "k3", "k4"]
    runtime.set_keep_records(None)
    launches(dev, 4, first=5)
    assert len(dev.profiles) == 7
    runtime.clear_records()
    assert not dev.profiles and not dev.tasks and not dev.copies and dev.profiles.total == 9
    launches(dev, 1)
    assert acl.rt.reset_device(0) == 0                     # released with the device
    assert not dev.profiles and not dev.tasks and not dev.copies
    assert acl.finalize() == 0


def test_profiled_records_reach_the_op_summary_and_are_released_at_finalize(tmp_path):
    summary = tmp_path / "op_summary.csv"
    path = tmp_path / "acl.json"
    path.write_text(json.dumps({"npusim": {"profiling": True, "keep_records": 2,
                                           "op_summary": str(summary)}}))
    assert acl.init(str(path)) == 0 and acl.rt.set_device(0) == 0
    dev = runtime.current_device()
    launches(dev, 5)
    assert acl.rt.reset_device(0) == 0
    assert len(dev.profiles) == 5                     # kept for the files until finalize
    assert acl.finalize() == 0
    with open(summary, newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    assert [r["Op Name"] for r in rows if r["Op Name"].startswith("k")] == [
        f"k{i}" for i in range(5)]
    assert not dev.profiles and not dev.tasks           # released at finalize
