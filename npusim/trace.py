"""Chrome Trace Event JSON of a simulated run, and reading it back.

The file opens in Perfetto (ui.perfetto.dev) and chrome://tracing. Format: Google's
"Trace Event Format" document — a JSON object ``{"traceEvents": [...],
"displayTimeUnit": "ns", "otherData": {...}}`` whose events are complete events
(``"ph": "X"``, ``ts`` and ``dur`` in µs), instant events (``"ph": "i"``, scope ``"s"``)
and metadata events (``"ph": "M"``: process_name, thread_name, process_sort_index,
thread_sort_index). The clock is the device clock (µs since the device was created), as
msprof's timeline shows device time.

Layout, for device ``d`` (pids are ``1000*d + ...`` so several devices share a file):

* ``NPU d streams`` (pid ``1000d+1``): one thread per stream (tid = ``Stream.id``) with
  every task of that stream: kernels (named by their op), copies, memsets, event waits
  (complete events) and event records (instant events).
* ``NPU d host<->device copies`` (pid ``1000d+2``): threads H2D, D2H and D2D (one copy
  engine each) with every asynchronous copy.
* ``NPU d AIV c`` (pid ``1000d+100+c``), one process per vector core a traced kernel used
  (``NPU d AI Core c`` on the coupled 910A/310P, whose AI cores are not split; block ``b``
  runs on core ``b % cores``, cores = the device's vector core count), and ``NPU d AIC c``
  (pid ``1000d+500+c``) per cube core (AIC_ONLY blocks modulo the cube core count; in a
  mixed launch the AIC of block ``g`` on ``AIC g``, its AIVs on ``AIV 2g`` and ``2g+1``).
  AIC and AIV are msprof's names of the A2/A3 cube and vector cores (op_summary's aic_* /
  aiv_* columns); in a mixed launch msprof op simulator's ``core g.cubecore0`` and
  ``core g.veccore0`` / ``veccore1`` are ``AIC g`` and ``AIV 2g`` / ``2g+1`` here. Each has a
  thread ``blocks`` (which block of which kernel the core runs) and one thread per pipe,
  in msprof's order (PIPE_MTE2, PIPE_V, PIPE_MTE3, PIPE_S, then the cube's), with one span
  per instruction. A span's ``args`` carry the ``instruction``, the ``bytes`` it moved
  (DMA) or 0, the kernel ``line`` (``file.py:123``) that issued it, the ``block`` (the
  core's GetBlockIdx), the ``core`` kind, the ``op`` and its ``cycles``.

A kernel's spans lie inside its Task Duration: the launch overhead comes first, then the
instructions from cycle 0 (``soc.freq_hz`` converts cycles to µs). Only kernels run with
spans (``Device(profiling=True)``, ``run_kernel(keep_spans=True)``) have core rows; the
stream and copy rows are there for every run.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

from npusim.ascendc.core import DMA_IN, DMA_OUT
from npusim.ascendc.types import Pipe
from npusim.device import EVENT_RECORD, KERNEL, MEMCPY
from npusim.soc import get_soc

#: Pipe rows in msprof's order; other pipes follow by number.
PIPE_ORDER = (Pipe.PIPE_MTE2, Pipe.PIPE_V, Pipe.PIPE_MTE3, Pipe.PIPE_S, Pipe.PIPE_MTE1,
              Pipe.PIPE_M, Pipe.PIPE_FIX)
STREAMS_PID, COPIES_PID, CORE_PID, CUBE_PID = 1, 2, 100, 500
BLOCKS_TID = 1
COPY_TIDS = {"H2D": 1, "D2H": 2, "D2D": 3}
#: Keys every event of a phase must have (Trace Event Format).
REQUIRED_KEYS = {"X": ("name", "ph", "ts", "dur", "pid", "tid"),
                 "B": ("name", "ph", "ts", "pid", "tid"), "E": ("ph", "ts", "pid", "tid"),
                 "i": ("name", "ph", "ts", "pid", "tid"), "I": ("name", "ph", "ts", "pid", "tid"),
                 "C": ("name", "ph", "ts", "pid", "args"), "M": ("name", "ph", "pid", "args")}


class TraceFormatError(ValueError):
    """A file or object that is not a Trace Event Format trace."""


def _pipe_tid(pipe) -> int:
    return 10 + int(pipe)


def _meta(pid, name, sort, tid=None):
    if tid is None:
        return [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}},
                {"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": sort}}]
    return [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}},
            {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
             "args": {"sort_index": sort}}]


def kernel_events(profile, soc=None, *, device_id: int = 0, start_us: float | None = None,
                  meta: set | None = None) -> list[dict]:
    """The AI-core rows of one kernel launch (empty when it kept no spans).

    Args:
        profile: a KernelProfile from ``run_kernel(..., keep_spans=True)`` (or a traced
            device).
        soc: the SocSpec it ran on (core count and clock); default: the preset named by
            ``profile.soc_version``.
        device_id: the device (pid base ``1000 * device_id``).
        start_us: the kernel's start on the device clock (default ``profile.start_us``).
        meta: (pid, tid) pairs already named, updated; metadata events are added for the
            others.
    """
    timing = profile.timing
    if timing is None or not timing.spans:
        return []
    soc = get_soc(profile.soc_version) if soc is None else soc
    meta = set() if meta is None else meta
    to_us = 1e6 / soc.freq_hz
    base = (profile.start_us if start_us is None else start_us) + soc.launch_overhead_us
    n_vec, n_cube = max(1, soc.vector_block_num), max(1, soc.cube_block_num)
    vec_row = "AIV" if soc.is_split else "AI Core"     # msprof's names: AIV / AIC on A2/A3
    records, lines = profile.records, profile.lines
    kinds = profile.core_kinds or ["AIV"] * len(timing.spans)
    ids = profile.core_ids or list(range(len(timing.spans)))
    events = []
    for b, spans in enumerate(timing.spans):
        if kinds[b] == "AIC":      # a cube core's row; a vector (or coupled) core's
            core, pid0, row = ids[b] % n_cube, CUBE_PID, "AIC"
        else:
            core, pid0, row = ids[b] % n_vec, CORE_PID, vec_row
        pid = 1000 * device_id + pid0 + core
        if (pid, None) not in meta:
            meta.add((pid, None))
            events += _meta(pid, f"NPU {device_id} {row} {core}", pid0 + core)
        if (pid, BLOCKS_TID) not in meta:
            meta.add((pid, BLOCKS_TID))
            events += _meta(pid, "blocks", 0, BLOCKS_TID)
        t0 = float(timing.block_start[b])
        t1 = float(timing.block_end[b])
        events.append({"name": f"{profile.op_name} block {ids[b]}", "cat": "block", "ph": "X",
                       "ts": base + t0 * to_us, "dur": (t1 - t0) * to_us, "pid": pid,
                       "tid": BLOCKS_TID, "args": {"op": profile.op_name, "block": ids[b],
                                                   "core": kinds[b],
                                                   "blockDim": profile.block_dim}})
        for pipe, s, e, label, idx in spans:
            tid = _pipe_tid(pipe)
            if (pid, tid) not in meta:
                meta.add((pid, tid))
                order = (PIPE_ORDER.index(pipe) if pipe in PIPE_ORDER
                         else len(PIPE_ORDER) + int(pipe))
                events += _meta(pid, Pipe(pipe).name, 1 + order, tid)
            rec = records[b][idx] if records is not None else None
            dma = rec is not None and rec[0] in (DMA_IN, DMA_OUT)
            events.append({
                "name": label, "cat": "DMA" if dma else "instruction", "ph": "X",
                "ts": base + s * to_us, "dur": (e - s) * to_us, "pid": pid, "tid": tid,
                "args": {"instruction": label, "bytes": int(rec[3]) if dma else 0,
                         "line": lines[b][idx] if lines is not None else "?",
                         "block": ids[b], "core": kinds[b], "op": profile.op_name,
                         "cycles": e - s}})
    return events


def device_events(device, meta: set | None = None) -> list[dict]:
    """Every event of one :class:`npusim.Device`: stream rows, copy rows, AI-core rows."""
    meta = set() if meta is None else meta
    d = device.device_id
    spid, cpid = 1000 * d + STREAMS_PID, 1000 * d + COPIES_PID
    events = _meta(spid, f"NPU {d} streams", 1) + _meta(cpid, f"NPU {d} host<->device copies", 2)
    for link, tid in COPY_TIDS.items():
        events += _meta(cpid, link, tid, tid)
    named = set()
    for rec in device.tasks:
        if rec.stream_id not in named:
            named.add(rec.stream_id)
            events += _meta(spid, f"stream {rec.stream_id}", rec.stream_id, rec.stream_id)
        args = {"task_id": rec.task_id, "kind": rec.kind, "bytes": rec.nbytes}
        if rec.error:
            args["error"] = rec.error
        name = rec.name
        if rec.kind == KERNEL and rec.profile is not None:
            p = rec.profile
            args.update({"blockDim": p.block_dim, "Task Duration(us)": p.duration_us,
                         "bound": p.bound, "bound_percent": p.bound_percent,
                         "hbm_bytes": p.hbm_bytes})
        elif rec.kind == MEMCPY:
            name = f"MEMCPY_ASYNC {rec.name}"
        if rec.kind == EVENT_RECORD:
            events.append({"name": name, "cat": rec.kind, "ph": "i", "s": "t",
                           "ts": rec.start_us, "pid": spid, "tid": rec.stream_id, "args": args})
        else:
            events.append({"name": name, "cat": rec.kind, "ph": "X", "ts": rec.start_us,
                           "dur": rec.duration_us, "pid": spid, "tid": rec.stream_id,
                           "args": args})
        if rec.kind == MEMCPY and rec.name in COPY_TIDS:
            events.append({"name": name, "cat": "copy", "ph": "X", "ts": rec.start_us,
                           "dur": rec.duration_us, "pid": cpid, "tid": COPY_TIDS[rec.name],
                           "args": {"bytes": rec.nbytes, "stream": rec.stream_id,
                                    "task_id": rec.task_id}})
        if rec.kind == KERNEL and rec.profile is not None:
            events += kernel_events(rec.profile, device.soc, device_id=d,
                                    start_us=rec.start_us, meta=meta)
    return events


def _sorted(events: list[dict]) -> list[dict]:
    """Metadata first, then by (pid, tid, ts): timestamps rise along every thread."""
    metas = [e for e in events if e["ph"] == "M"]
    rest = [e for e in events if e["ph"] != "M"]
    rest.sort(key=lambda e: (e["pid"], e.get("tid", 0), e["ts"]))
    return metas + rest


def build_trace(source, soc=None) -> dict:
    """The trace object of ``source``: a Device, a list of Devices, or one KernelProfile
    with spans (then ``soc`` is the SocSpec it ran on; default its preset)."""
    meta: set = set()
    if hasattr(source, "timing") and hasattr(source, "op_name"):
        events = kernel_events(source, soc, meta=meta)
        socs = [source.soc_version]
    else:
        devices = [source] if hasattr(source, "tasks") else list(source)
        events = [e for dev in devices for e in device_events(dev, meta)]
        socs = sorted({dev.soc.soc_version for dev in devices})
    return {"traceEvents": _sorted(events), "displayTimeUnit": "ns",
            "otherData": {"generator": "npusim", "clock": "device time, us",
                          "soc": ", ".join(socs)}}


def write_trace(path, source, soc=None) -> int:
    """Write :func:`build_trace` of ``source`` to ``path`` as JSON; return the number of
    events.

    Raises:
        OSError: the file cannot be written.
    """
    trace = build_trace(source, soc)
    directory = os.path.dirname(os.fspath(path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(trace, f, separators=(",", ":"))
    return len(trace["traceEvents"])


def validate_trace(obj) -> list[dict]:
    """Check ``obj`` against the Trace Event Format; return its event list.

    Checks: a JSON object with a ``traceEvents`` list (or a bare list of events); every
    event an object with a known ``ph`` and that phase's required keys
    (:data:`REQUIRED_KEYS`); ``ts`` and ``dur`` finite numbers, ``dur >= 0``; ``pid`` and
    ``tid`` integers; instant events with scope ``g``, ``p`` or ``t`` when given.

    Raises:
        TraceFormatError: naming the first event that breaks a rule.
    """
    events = obj.get("traceEvents") if isinstance(obj, dict) else obj
    if not isinstance(events, list):
        raise TraceFormatError("not a trace: expected a JSON object with a \"traceEvents\" list")
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise TraceFormatError(f"event {i} is not a JSON object")
        ph = ev.get("ph")
        if ph not in REQUIRED_KEYS:
            raise TraceFormatError(f"event {i} has an unknown phase {ph!r}")
        missing = [k for k in REQUIRED_KEYS[ph] if k not in ev]
        if missing:
            raise TraceFormatError(f"event {i} ({ph!r}) lacks {', '.join(missing)}")
        for key in ("ts", "dur"):
            if key in ev and (isinstance(ev[key], bool) or not isinstance(ev[key], (int, float))
                              or not math.isfinite(ev[key])):
                raise TraceFormatError(f"event {i}: {key} must be a finite number, got {ev[key]!r}")
        if ev.get("dur", 0) < 0:
            raise TraceFormatError(f"event {i}: negative duration {ev['dur']}")
        for key in ("pid", "tid"):
            if key in ev and (isinstance(ev[key], bool) or not isinstance(ev[key], int)):
                raise TraceFormatError(f"event {i}: {key} must be an integer, got {ev[key]!r}")
        if ph in ("i", "I") and ev.get("s", "t") not in ("g", "p", "t"):
            raise TraceFormatError(f"event {i}: instant scope must be g, p or t")
    return events


def load_trace(path) -> dict:
    """Read and validate a trace file; return the trace object (``traceEvents`` list).

    Raises:
        OSError: the file cannot be read. TraceFormatError: it is not JSON or not a trace.
    """
    with open(path, encoding="utf-8") as f:
        try:
            obj = json.load(f)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(f"{os.fspath(path)} is not JSON: {exc}") from None
    events = validate_trace(obj)
    return obj if isinstance(obj, dict) else {"traceEvents": events}


@dataclass(frozen=True)
class Span:
    """One complete event of a trace, with its process and thread names."""

    process: str
    thread: str
    pid: int
    tid: int
    name: str
    start_us: float
    dur_us: float
    args: dict


def trace_spans(trace) -> tuple[list[Span], dict, dict]:
    """The complete events of a trace object, with names resolved.

    Returns:
        ``(spans, process_order, thread_order)``: the spans; pid -> sort index; and
        (pid, tid) -> sort index (metadata sort indices, else the ids).
    """
    events = validate_trace(trace)
    pnames, tnames, porder, torder = {}, {}, {}, {}
    for ev in events:
        if ev["ph"] != "M":
            continue
        if ev["name"] == "process_name":
            pnames[ev["pid"]] = ev["args"].get("name", str(ev["pid"]))
        elif ev["name"] == "thread_name":
            tnames[(ev["pid"], ev.get("tid", 0))] = ev["args"].get("name", "")
        elif ev["name"] == "process_sort_index":
            porder[ev["pid"]] = ev["args"].get("sort_index", ev["pid"])
        elif ev["name"] == "thread_sort_index":
            torder[(ev["pid"], ev.get("tid", 0))] = ev["args"].get("sort_index", 0)
    spans = []
    for ev in events:
        if ev["ph"] != "X":
            continue
        pid, tid = ev["pid"], ev["tid"]
        spans.append(Span(pnames.get(pid, f"pid {pid}"), tnames.get((pid, tid), f"tid {tid}"),
                          pid, tid, ev["name"], float(ev["ts"]), float(ev["dur"]),
                          ev.get("args", {})))
        porder.setdefault(pid, pid)
        torder.setdefault((pid, tid), tid)
    return spans, porder, torder


__all__ = ["TraceFormatError", "Span", "kernel_events", "device_events", "build_trace",
           "write_trace", "validate_trace", "load_trace", "trace_spans", "REQUIRED_KEYS",
           "PIPE_ORDER"]
