"""Chrome traces (npusim/trace.py) and the timeline plot (npusim/plot.py).

The trace is checked against the Trace Event Format with checks written here, not with
npusim.trace.validate_trace: required keys per phase, timestamps that rise along every
thread, spans that do not overlap within a thread, every core span inside its kernel's
Task Duration, and span bytes that add up to the profile's GM traffic."""
import inspect
import json
import math
import re

import numpy as np
import pytest

import npusim
from npusim import Device, GlobalMemory, run_kernel, trace
from npusim.ascendc import (DataCopy, GetBlockIdx, GlobalTensor, Muls, TPipe, TPosition, TQue,
                            float32)
from npusim.plot import plot_timeline

SOC = npusim.get_soc("Ascend910B1")
TILE = 2048
#: Trace Event Format: keys every event of a phase must carry.
REQUIRED = {"X": {"name", "ph", "ts", "dur", "pid", "tid"},
            "i": {"name", "ph", "ts", "pid", "tid", "s"}, "M": {"name", "ph", "pid", "args"}}


def scale_kernel(x, z, n_tiles):
    """Per block: n_tiles x (DataCopy in, Muls, DataCopy out) of TILE floats."""
    pipe = TPipe()
    qi, qo = TQue(TPosition.VECIN), TQue(TPosition.VECOUT)
    pipe.InitBuffer(qi, 2, TILE * 4)
    pipe.InitBuffer(qo, 2, TILE * 4)
    per = TILE * n_tiles
    xg, zg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x + GetBlockIdx() * per * 4, per)
    zg.SetGlobalBuffer(z + GetBlockIdx() * per * 4, per)
    for i in range(n_tiles):
        a = qi.AllocTensor(float32)
        DataCopy(a, xg[i * TILE], TILE)                      # LINE_IN
        qi.EnQue(a)
        a = qi.DeQue(float32)
        b = qo.AllocTensor(float32)
        Muls(b, a, 2.0, TILE)                                # LINE_MULS
        qo.EnQue(b)
        qi.FreeTensor(a)
        b = qo.DeQue(float32)
        DataCopy(zg[i * TILE], b, TILE)                      # LINE_OUT
        qo.FreeTensor(b)


def _line_of(marker):
    src, first = inspect.getsourcelines(scale_kernel)
    (i,) = [k for k, text in enumerate(src) if marker in text]
    return f"test_trace.py:{first + i}"


@pytest.fixture(scope="module")
def traced_device():
    """A profiling device: an H2D copy, scale_kernel on 50 blocks (48 cores: two waves on
    cores 0 and 1), a D2H copy, an event record, on two streams."""
    dev = Device(SOC, profiling=True)
    s1, s2 = dev.default_stream, npusim.Stream(dev)
    blocks, n_tiles = 50, 3
    n = blocks * n_tiles * TILE
    x, z = dev.gm.malloc(n * 4), dev.gm.malloc(n * 4)
    host = np.arange(n, dtype=np.float32)
    dev.copy_async(s1, "H2D", n * 4, lambda: dev.gm.write(x, host))
    ev = npusim.Event(dev)
    dev.record_event(s1, ev)
    dev.wait_event(s2, ev)
    dev.launch(s2, scale_kernel, blocks, (x, z, n_tiles), name="Scale")
    dev.copy_async(s2, "D2H", n * 4, lambda: None)
    assert dev.synchronize([s1, s2]) == []
    return dev


@pytest.fixture(scope="module")
def trace_obj(traced_device, tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "trace.json"
    n = trace.write_trace(path, traced_device)
    obj = json.loads(path.read_text())
    assert len(obj["traceEvents"]) == n
    return obj


def test_every_event_has_the_keys_of_its_phase(trace_obj):
    assert isinstance(trace_obj["traceEvents"], list) and trace_obj["displayTimeUnit"] == "ns"
    for ev in trace_obj["traceEvents"]:
        assert ev["ph"] in REQUIRED
        assert REQUIRED[ev["ph"]] <= set(ev), ev
        assert isinstance(ev["pid"], int) and isinstance(ev.get("tid", 0), int)
        if ev["ph"] == "X":
            assert math.isfinite(ev["ts"]) and ev["dur"] >= 0 and ev["ts"] >= 0
        if ev["ph"] == "M":
            assert ev["name"] in ("process_name", "thread_name", "process_sort_index",
                                  "thread_sort_index")


def _threads(trace_obj):
    threads = {}
    for ev in trace_obj["traceEvents"]:
        if ev["ph"] == "X":
            threads.setdefault((ev["pid"], ev["tid"]), []).append(ev)
    return threads


def test_timestamps_rise_and_spans_do_not_overlap_along_each_thread(trace_obj):
    for key, evs in _threads(trace_obj).items():
        ts = [e["ts"] for e in evs]
        assert ts == sorted(ts), key
        for a, b in zip(evs, evs[1:]):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-9, (key, a, b)


def _names(trace_obj):
    procs, threads = {}, {}
    for ev in trace_obj["traceEvents"]:
        if ev["ph"] == "M" and ev["name"] == "process_name":
            procs[ev["pid"]] = ev["args"]["name"]
        if ev["ph"] == "M" and ev["name"] == "thread_name":
            threads[(ev["pid"], ev["tid"])] = ev["args"]["name"]
    return procs, threads


def test_one_process_per_core_one_thread_per_pipe(trace_obj):
    procs, threads = _names(trace_obj)
    cores = sorted(name for name in procs.values() if "AIV" in name)
    assert len(cores) == 48 and "NPU 0 AIV 47" in cores
    core0 = next(pid for pid, name in procs.items() if name == "NPU 0 AIV 0")
    assert {name for (pid, _), name in threads.items() if pid == core0} == {
        "blocks", "PIPE_MTE2", "PIPE_V", "PIPE_MTE3", "PIPE_S"}     # PIPE_S: the scalar unit
    assert {"NPU 0 streams", "NPU 0 host<->device copies"} <= set(procs.values())
    # 50 blocks on 48 cores: core 0 runs blocks 0 and 48, one after the other
    blocks = [e["args"]["block"] for e in _threads(trace_obj)[(core0, trace.BLOCKS_TID)]]
    assert blocks == [0, 48]


def test_core_spans_lie_inside_the_kernel_and_carry_instruction_bytes_line(trace_obj,
                                                                            traced_device):
    prof = traced_device.profiles[-1]
    start, end = prof.start_us, prof.start_us + prof.duration_us
    procs, threads = _names(trace_obj)
    core_pids = {pid for pid, name in procs.items() if "AIV" in name}
    spans = [e for e in trace_obj["traceEvents"] if e["ph"] == "X" and e["pid"] in core_pids]
    assert spans
    for e in spans:
        assert start - 1e-9 <= e["ts"] and e["ts"] + e["dur"] <= end + 1e-9, e
    # the scalar unit's kernel entry and issue work apart (npusim/ascendc/scalar.py)
    pipe_spans = [e for e in spans if e["cat"] != "block"
                  and e["name"] not in ("KernelEntry", "scalar")]
    # 50 blocks x 3 tiles x (DataCopy in, Muls, DataCopy out)
    assert len(pipe_spans) == 50 * 3 * 3
    lines = {e["args"]["line"] for e in pipe_spans}
    assert lines == {_line_of("LINE_IN"), _line_of("LINE_MULS"), _line_of("LINE_OUT")}
    by_name = {}
    for e in pipe_spans:
        assert re.fullmatch(r"\w+\.py:\d+", e["args"]["line"])
        key = (e["name"], threads[(e["pid"], e["tid"])])
        by_name.setdefault(key, []).append(e["args"]["bytes"])
    assert set(by_name) == {("DataCopy", "PIPE_MTE2"), ("Muls", "PIPE_V"),
                            ("DataCopy", "PIPE_MTE3")}
    assert set(by_name[("DataCopy", "PIPE_MTE2")]) == {TILE * 4}
    assert set(by_name[("Muls", "PIPE_V")]) == {0}
    # the DMA bytes of the spans add up to the profile's GM traffic
    dma = sum(e["args"]["bytes"] for e in pipe_spans)
    assert dma == prof.bytes_read + prof.bytes_written == 2 * 50 * 3 * TILE * 4


def test_stream_and_copy_rows(trace_obj, traced_device):
    procs, threads = _names(trace_obj)
    copies = next(pid for pid, name in procs.items() if name.endswith("copies"))
    rows = _threads(trace_obj)
    h2d = rows[(copies, trace.COPY_TIDS["H2D"])]
    d2h = rows[(copies, trace.COPY_TIDS["D2H"])]
    n = 50 * 3 * TILE * 4
    assert [e["args"]["bytes"] for e in h2d] == [n] and [e["args"]["bytes"] for e in d2h] == [n]
    streams = next(pid for pid, name in procs.items() if name.endswith("streams"))
    s2 = [e for (pid, tid), evs in rows.items() if pid == streams for e in evs
          if e["name"] == "Scale"]
    (kernel,) = s2
    prof = traced_device.profiles[-1]
    assert kernel["ts"] == prof.start_us and kernel["dur"] == pytest.approx(prof.duration_us)
    assert kernel["args"]["blockDim"] == 50
    assert h2d[0]["ts"] + h2d[0]["dur"] <= kernel["ts"]           # the wait held the kernel
    instants = [e for e in trace_obj["traceEvents"] if e["ph"] == "i"]
    assert [e["name"] for e in instants] == ["EVENT_RECORD"] and instants[0]["s"] == "t"


def test_load_trace_round_trip_and_rejects_what_is_not_a_trace(tmp_path, trace_obj):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace_obj))
    assert trace.load_trace(path)["traceEvents"] == trace_obj["traceEvents"]
    spans, porder, torder = trace.trace_spans(trace_obj)
    assert any(s.process == "NPU 0 AIV 3" and s.thread == "PIPE_V" for s in spans)
    bad = [({"events": []}, "traceEvents"),
           ({"traceEvents": [{"ph": "X", "name": "a", "ts": 0, "pid": 1, "tid": 1}]}, "dur"),
           ({"traceEvents": [{"ph": "X", "name": "a", "ts": 0, "dur": -1, "pid": 1, "tid": 1}]},
            "negative"),
           ({"traceEvents": [{"ph": "Q", "name": "a"}]}, "phase"),
           ({"traceEvents": [{"ph": "X", "name": "a", "ts": 0, "dur": 1, "pid": "1", "tid": 1}]},
            "pid")]
    for obj, word in bad:
        with pytest.raises(trace.TraceFormatError, match=word):
            trace.validate_trace(obj)
    path.write_text("{not json")
    with pytest.raises(trace.TraceFormatError, match="not JSON"):
        trace.load_trace(path)


def test_a_device_without_profiling_has_stream_rows_only():
    dev = Device(SOC)
    x, z = dev.gm.malloc(TILE * 4), dev.gm.malloc(TILE * 4)
    dev.launch(dev.default_stream, scale_kernel, 1, (x, z, 1), name="Scale")
    dev.synchronize_stream(dev.default_stream)
    events = trace.build_trace(dev)["traceEvents"]
    assert [e["name"] for e in events if e["ph"] == "X"] == ["Scale"]
    assert not any("AIV" in str(e.get("args", {}).get("name")) for e in events)


def test_trace_of_a_bare_run_kernel_profile(scalar_issue_off):
    gm = GlobalMemory(1 << 20)
    x, z = gm.malloc(2 * TILE * 4), gm.malloc(2 * TILE * 4)
    prof = run_kernel(scale_kernel, 2, (x, z, 1), soc=SOC, gm=gm, keep_spans=True)
    events = trace.build_trace(prof)["traceEvents"]
    trace.validate_trace(events)
    spans = [e for e in events if e["ph"] == "X"]
    assert len(spans) == 2 * (1 + 3)                      # per block: the block row + 3
    assert min(e["ts"] for e in spans) == pytest.approx(SOC.launch_overhead_us)
    assert max(e["ts"] + e["dur"] for e in spans) == pytest.approx(prof.duration_us)


def test_timeline_plot_rows_and_axes(tmp_path, trace_obj, traced_device):
    path = tmp_path / "timeline.png"
    path.write_bytes(b"")
    tpath = tmp_path / "t.json"
    tpath.write_text(json.dumps(trace_obj))
    fig = plot_timeline(tpath, path, cores=[0, 1], copies=True)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (ax,) = fig.axes
    assert ax.get_xlabel() == "time (µs)"
    labels = [t.get_text() for t in ax.get_yticklabels()]
    ids = sorted({r.stream_id for r in traced_device.tasks})
    assert labels[:4] == [f"stream {ids[0]}", f"stream {ids[1]}", "copy H2D", "copy D2H"]
    assert {"AIV 0 PIPE_MTE2", "AIV 0 PIPE_V", "AIV 1 PIPE_MTE3", "AIV 1 blocks"} <= set(labels)
    assert not any(lbl.startswith("AIV 2 ") for lbl in labels)
    # one bar collection per row, bars where the trace has spans
    assert len(ax.collections) == len(labels)
    row = labels.index("AIV 0 PIPE_V")
    assert len(ax.collections[row].get_paths()) == 2 * 3          # blocks 0 and 48, 3 tiles
    fig2 = plot_timeline(trace_obj, None, streams=False, window=(0.0, 1.0))
    assert fig2.axes[0].get_xlim() == (0.0, 1.0)
    assert all(lbl.get_text().startswith("AIV ") for lbl in fig2.axes[0].get_yticklabels())


def test_timeline_frames_the_kernels_and_has_a_colour_legend(trace_obj):
    """By default the x range is the kernels' (the copies over the host link, far longer,
    are not drawn); ``copies=True`` draws them and frames the whole trace. The legend names
    each colour: the pipes and the stream task kinds."""
    from npusim import trace as npusim_trace
    spans, _, _ = npusim_trace.trace_spans(trace_obj)
    cores = [s for s in spans if s.pid % 1000 >= npusim_trace.CORE_PID]
    lo = min(s.start_us for s in cores)
    hi = max(s.start_us + s.dur_us for s in cores)
    ax = plot_timeline(trace_obj, None).axes[0]
    x0, x1 = ax.get_xlim()
    assert x0 == pytest.approx(lo - 0.02 * (hi - lo)) and x1 == pytest.approx(hi + 0.02 * (hi - lo))
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert not any(lbl.startswith("copy ") for lbl in labels)
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    assert {"PIPE_MTE2", "PIPE_V", "PIPE_MTE3", "stream task KERNEL"} <= legend
    ax = plot_timeline(trace_obj, None, copies=True).axes[0]
    assert {"copy H2D", "copy D2H"} <= {t.get_text() for t in ax.get_yticklabels()}
    assert ax.get_xlim()[1] > x1 and "H2D" in {t.get_text() for t in ax.get_legend().get_texts()}
