"""Op summary and task list of a device, with msprof's column names.

What msprof writes after ``msprof op`` / ``msprof --application`` on hardware, npusim
writes from the records every device keeps (:class:`npusim.device.TaskRecord`):

* **op summary** (:func:`op_summary_rows`, :func:`write_op_summary`): one row per
  kernel launch. Column names are those of msprof's ``op_summary_*.csv`` where it has
  the figure (CANN 8.5 Profiling guide, "op_summary (Operator Details)",
  atlasprofiling_16_0067; the pipe fields as in msopprof's PipeUtilization.csv):
  ``Device_id, Stream ID, Task ID, Op Name, OP Type, Task Type, Task Start Time(us),
  Task Duration(us), Task Wait Time(us), Block Dim, aiv_time(us), aiv_total_cycles,
  aiv_vec_time(us), aiv_vec_ratio, aiv_scalar_time(us), aiv_scalar_ratio,
  aiv_mte2_time(us), aiv_mte2_ratio, aiv_mte3_time(us), aiv_mte3_ratio``, then the cube
  core's ``aic_time(us), aic_total_cycles, aic_mac_time(us), aic_mac_ratio, ...``
  (:data:`CUBE_COLUMNS`, with ``aicore_time(us)``, the cube cores' time as msprof's A2
  L2Cache tables name it, beside ``aic_time(us)``) when some kernel used the cube, then
  msprof's A2 L2Cache columns (:data:`L2_COLUMNS`: ``aiv_r0_read_cache_hit``,
  ``aiv_r0_read_cache_miss_allocate``, ``aiv_r1_...``, ``aiv_write_cache_hit``, ... and the
  hit rates; ``aic_*`` for the cube cores; :func:`l2_counts`), then columns of our own
  (:data:`NPUSIM_COLUMNS`): bytes, bandwidths, the HBM floor and the bound. ``Mix Block
  Dim`` (the AIVs of a mixed launch) follows ``Block Dim`` when some launch was mixed.
* **task list** (:func:`task_rows`, :func:`write_task_time`): every stream task —
  kernels, copies, memsets, event records and waits — in the spirit of msprof's
  ``task_time_*.csv``.

Definitions (where msprof's documents are silent they are ours, marked [R]):

* Task Duration: the kernel's ``duration_us`` (launch overhead + first to last
  instruction). Task Wait Time: from the end of the previous task of the same stream to
  this task's start (0 for a stream's first task) [R].
* aiv_time(us): a vector core's time from its first to its last instruction, averaged over
  the vector cores [R]; aiv_total_cycles: the sum over them, in cycles [R]. ``aiv_*_time``:
  the pipe's busy time averaged over those cores (msprof names, KernelProfile.pipe_time_us);
  ``aiv_*_ratio``: that time over aiv_time [R]. ``aic_*`` the same over the cube cores of an
  AIC_ONLY or mixed launch (a coupled 910A/310P core is counted as a vector core, its cube
  pipes, if traced, as ``aic_*`` over aiv_time).
* Task Type: ``AI_VECTOR_CORE`` for a vector kernel on the split A2/A3, ``AI_CORE`` for a
  cube (AIC_ONLY) kernel there and for every kernel of the coupled 910A/310P, ``MIX_AIC``
  for a mixed launch with cube cores (``MIX_AIV`` for MIX_AIV_1_0) — msprof's task types
  (atlasprofiling_16_0067: a MatMul "由原来的AI_Core转变为MIX_AIC").
* Mix Block Dim: the AIVs a mixed launch started (blockDim x 2 for MIX_AIC_1_2).
* Bound and Bound(%): :func:`npusim.launch._bound` — HBM bandwidth, vector, scalar or
  latency, and the percentage of that limit reached.
"""
from __future__ import annotations

import csv
import os

import numpy as np

from npusim.ascendc.types import KernelMetaType, Pipe
from npusim.device import KERNEL
from npusim.soc import get_soc

#: msprof op_summary columns npusim fills, in msprof's order.
MSPROF_COLUMNS = (
    "Device_id", "Stream ID", "Task ID", "Op Name", "OP Type", "Task Type",
    "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Dim",
    "aiv_time(us)", "aiv_total_cycles", "aiv_vec_time(us)", "aiv_vec_ratio",
    "aiv_scalar_time(us)", "aiv_scalar_ratio", "aiv_mte2_time(us)", "aiv_mte2_ratio",
    "aiv_mte3_time(us)", "aiv_mte3_ratio",
)
#: msprof's cube-core columns, present when a kernel ran on cube cores or issued work on
#: PIPE_M/MTE1/FIX. ``aicore_time(us)`` is the name msprof's A2 L2Cache tables give the
#: cube cores' time (the DataCopy best practice's GM -> L1 tables); ``aic_time(us)``, the
#: op summary's, is kept beside it with the same value.
CUBE_COLUMNS = ("aic_time(us)", "aic_total_cycles", "aicore_time(us)", "aic_mac_time(us)",
                "aic_mac_ratio",
                "aic_scalar_time(us)", "aic_scalar_ratio", "aic_mte1_time(us)",
                "aic_mte1_ratio", "aic_mte2_time(us)", "aic_mte2_ratio",
                "aic_fixpipe_time(us)", "aic_fixpipe_ratio")
#: Bytes of one L2 request as msprof counts them on A2: the DataCopy best practice's U5
#: reads a [12288, 12288] half matrix 4 times and reports 9,437,187 read miss-allocates,
#: the 1,207,959,552 bytes / 128 B (docs/calibration.md "DataCopy best practice").
L2_REQUEST_BYTES = 128


def l2_columns(kind: str) -> tuple:
    """msprof's A2 L2Cache columns of the ``kind`` cores ("aiv" or "aic"), in the order of
    its L2Cache.csv (msOpProf "L2Cache (L2 Cache Hit Ratio)", atlasopdev_16_0094): the
    write hits and miss-allocates, the read hits and miss-allocates of channels r0 and r1,
    then the hit rates (%)."""
    return (f"{kind}_write_cache_hit", f"{kind}_write_cache_miss_allocate",
            f"{kind}_r0_read_cache_hit", f"{kind}_r0_read_cache_miss_allocate",
            f"{kind}_r1_read_cache_hit", f"{kind}_r1_read_cache_miss_allocate",
            f"{kind}_write_hit_rate(%)", f"{kind}_read_hit_rate(%)",
            f"{kind}_total_hit_rate(%)")


#: The L2 columns, after the pipe columns, when the launch has cores of that kind.
L2_COLUMNS = l2_columns("aiv") + l2_columns("aic")


def l2_counts(l2_bytes, kind: str) -> dict:
    """msprof's L2Cache figures of one kind of core from the replay's L2 traffic
    (``KernelTiming.l2_bytes``: read hit, read miss, write hit, write miss bytes, the
    vector cores' then the cube cores').

    Counts are requests of :data:`L2_REQUEST_BYTES`, rounded. msprof splits reads over two
    channels, r0 and r1, and the best practice adds them ("分析总读命中次数时需将两个通道累加");
    which channel serves which request is not published, so r0 takes half (rounded up)
    and r1 the rest [R]. The read hit rate is the best practice's
    ``(r0_hit + r1_hit) / (r0_hit + r1_hit + r0_miss_allocate + r1_miss_allocate)``
    (data_copy README, "GM 到 UB L2Cache 性能数据"), the write rate the same over the
    writes, the total over both; in %, 0 with no request.
    """
    at = 4 if kind == "aic" else 0
    rh, rm, wh, wm = (int(round(float(b) / L2_REQUEST_BYTES)) for b in l2_bytes[at:at + 4])

    def rate(hit, miss):
        return 100.0 * hit / (hit + miss) if hit + miss else 0.0
    return {f"{kind}_write_cache_hit": wh, f"{kind}_write_cache_miss_allocate": wm,
            f"{kind}_r0_read_cache_hit": rh - rh // 2,
            f"{kind}_r0_read_cache_miss_allocate": rm - rm // 2,
            f"{kind}_r1_read_cache_hit": rh // 2, f"{kind}_r1_read_cache_miss_allocate": rm // 2,
            f"{kind}_write_hit_rate(%)": rate(wh, wm), f"{kind}_read_hit_rate(%)": rate(rh, rm),
            f"{kind}_total_hit_rate(%)": rate(rh + wh, rm + wm)}


#: msprof's column of the AIVs of a mixed launch, after Block Dim.
MIX_BLOCK_DIM = "Mix Block Dim"
#: Columns of our own, after msprof's.
NPUSIM_COLUMNS = (
    "SoC", "Bytes Read(B)", "Bytes Written(B)", "HBM Bytes(B)", "Read Bandwidth(GB/s)",
    "Write Bandwidth(GB/s)", "HBM Bandwidth(GB/s)", "HBM Floor(us)", "Bound", "Bound(%)",
    "Warnings",
)
#: Columns of the task list.
TASK_COLUMNS = ("Device_id", "Stream ID", "Task ID", "Task Type", "Name",
                "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Bytes",
                "Error")

_CUBE_PIPES = ((Pipe.PIPE_M, "aic_mac"), (Pipe.PIPE_MTE1, "aic_mte1"),
               (Pipe.PIPE_FIX, "aic_fixpipe"))
#: Stream-task kinds as task types [R: msprof's runtime task names].
_TASK_TYPES = {"MEMCPY": "MEMCPY_ASYNC", "MEMSET": "MEMSET_ASYNC", "EVENT_RECORD": "EVENT_RECORD",
               "EVENT_WAIT": "EVENT_WAIT", "TASK": "TASK"}


def kernel_task_type(soc, kernel_type=None) -> str:
    """msprof Task Type of a kernel of ``kernel_type`` (default: a vector kernel) on ``soc``:
    AI_VECTOR_CORE, AI_CORE, MIX_AIC or MIX_AIV (see the module docstring)."""
    K = KernelMetaType
    if not soc.is_split:
        return "AI_CORE"
    if kernel_type is None or kernel_type == K.KERNEL_TYPE_AIV_ONLY:
        return "AI_VECTOR_CORE"
    if kernel_type == K.KERNEL_TYPE_AIC_ONLY:
        return "AI_CORE"
    return "MIX_AIV" if kernel_type == K.KERNEL_TYPE_MIX_AIV_1_0 else "MIX_AIC"


def _is_mix(kernel_type) -> bool:
    return kernel_type is not None and KernelMetaType(kernel_type).name.startswith(
        "KERNEL_TYPE_MIX_")


def _cube_times(profile, to_us: float) -> dict:
    """Per cube pipe, busy µs averaged over the blocks; empty without spans or cube work."""
    spans = profile.timing.spans if profile.timing is not None else None
    if not spans:
        return {}
    out = {}
    for pipe, name in _CUBE_PIPES:
        total = sum(e - s for block in spans for p, s, e, _, _ in block if p == pipe)
        if total:
            out[name] = total * to_us / len(spans)
    return out


def _core_times(profile, to_us: float):
    """(vector cores' mean µs and total cycles, cube cores' mean µs and total cycles, number
    of cube cores): each core's time from its first to its last instruction."""
    timing = profile.timing
    if timing is None or not profile.block_dim:
        return 0.0, 0.0, 0.0, 0.0, 0
    cycles = np.asarray(timing.block_end) - np.asarray(timing.block_start)
    kinds = profile.core_kinds
    cube = (np.array([k == "AIC" for k in kinds], dtype=bool) if kinds is not None
            else np.zeros(len(cycles), dtype=bool))

    def mean_sum(sel):
        return (float(cycles[sel].mean()) * to_us, float(cycles[sel].sum())) if sel.any() \
            else (0.0, 0.0)
    return (*mean_sum(~cube), *mean_sum(cube), int(cube.sum()))


def kernel_row(profile, soc=None, *, device_id: int = 0, stream_id="N/A", task_id="N/A",
               wait_us: float = 0.0) -> dict:
    """The op-summary row of one KernelProfile.

    Args:
        profile: a :class:`npusim.launch.KernelProfile`.
        soc: the SocSpec it ran on (default: the preset named by ``profile.soc_version``;
            pass the device's own, core-limited, record when there is one).
        device_id, stream_id, task_id, wait_us: the task's place (``N/A`` outside a device).

    Returns:
        column name -> value (numbers unformatted; µs, bytes, GB/s, %).
    """
    soc = get_soc(profile.soc_version) if soc is None else soc
    to_us = 1e6 / soc.freq_hz
    aiv_time, total_cycles, aic_time, aic_cycles, n_aic = _core_times(profile, to_us)

    def ratio(t, whole):
        return t / whole if whole else 0.0

    row = {
        "Device_id": device_id, "Stream ID": stream_id, "Task ID": task_id,
        "Op Name": profile.op_name, "OP Type": profile.op_name,
        "Task Type": kernel_task_type(soc, profile.kernel_type),
        "Task Start Time(us)": profile.start_us,
        "Task Duration(us)": profile.duration_us, "Task Wait Time(us)": wait_us,
        "Block Dim": profile.block_dim,
    }
    if _is_mix(profile.kernel_type):
        row[MIX_BLOCK_DIM] = sum(k == "AIV" for k in profile.core_kinds or ())
    row.update({"aiv_time(us)": aiv_time, "aiv_total_cycles": int(round(total_cycles))})
    for short in ("vec", "scalar", "mte2", "mte3"):
        t = float(profile.pipe_time_us.get(f"aiv_{short}_time", 0.0))
        row[f"aiv_{short}_time(us)"] = t
        row[f"aiv_{short}_ratio"] = ratio(t, aiv_time)
    if n_aic:                 # cube cores: msprof's aic_* figures over aic_time
        row.update({"aic_time(us)": aic_time, "aic_total_cycles": int(round(aic_cycles)),
                    "aicore_time(us)": aic_time})
        for short in ("mac", "scalar", "mte1", "mte2", "fixpipe"):
            t = float(profile.pipe_time_us.get(f"aic_{short}_time", 0.0))
            row[f"aic_{short}_time(us)"] = t
            row[f"aic_{short}_ratio"] = ratio(t, aic_time)
    else:                     # a coupled core's cube pipes, from its spans
        for name, t in _cube_times(profile, to_us).items():
            row[f"{name}_time(us)"] = t
            row[f"{name}_ratio"] = ratio(t, aiv_time)
    timing = profile.timing
    l2_bytes = getattr(timing, "l2_bytes", None)
    if l2_bytes is not None:
        if len(profile.core_kinds or ()) > n_aic or not n_aic:
            row.update(l2_counts(l2_bytes, "aiv"))
        if n_aic:
            row.update(l2_counts(l2_bytes, "aic"))
    row.update({
        "SoC": profile.soc_version, "Bytes Read(B)": profile.bytes_read,
        "Bytes Written(B)": profile.bytes_written, "HBM Bytes(B)": int(round(profile.hbm_bytes)),
        "Read Bandwidth(GB/s)": profile.read_bandwidth / 1e9,
        "Write Bandwidth(GB/s)": profile.write_bandwidth / 1e9,
        "HBM Bandwidth(GB/s)": profile.hbm_bandwidth / 1e9,
        "HBM Floor(us)": profile.hbm_bytes / soc.hbm_bandwidth * 1e6,
        "Bound": profile.bound, "Bound(%)": profile.bound_percent,
        "Warnings": "; ".join(profile.warnings),
    })
    return row


def _as_devices(devices) -> list:
    if devices is None:
        return []
    if hasattr(devices, "tasks"):
        return [devices]
    return list(devices)


def _wait_times(tasks) -> dict:
    """task_id -> µs since the previous task of its stream ended."""
    last_end: dict = {}
    out = {}
    for rec in sorted(tasks, key=lambda r: (r.start_us, r.task_id)):
        prev = last_end.get(rec.stream_id)
        out[rec.task_id] = max(0.0, rec.start_us - prev) if prev is not None else 0.0
        last_end[rec.stream_id] = max(rec.end_us, prev or 0.0)
    return out


def op_summary_rows(devices) -> list[dict]:
    """One row per kernel launch that ran cleanly on ``devices`` (a Device or a list),
    in start-time order per device (see the module docstring for the columns)."""
    rows = []
    for dev in _as_devices(devices):
        waits = _wait_times(dev.tasks)
        for rec in sorted(dev.tasks, key=lambda r: (r.start_us, r.task_id)):
            if rec.kind == KERNEL and rec.profile is not None:
                rows.append(kernel_row(rec.profile, dev.soc, device_id=dev.device_id,
                                       stream_id=rec.stream_id, task_id=rec.task_id,
                                       wait_us=waits[rec.task_id]))
    return rows


def op_summary_columns(rows) -> list[str]:
    """The columns of ``rows``: msprof's (with Mix Block Dim after Block Dim if a launch
    was mixed), the cube ones if any row has them, then ours."""
    cube = [c for c in CUBE_COLUMNS if any(c in r for r in rows)]
    l2 = [c for c in L2_COLUMNS if any(c in r for r in rows)]
    head = list(MSPROF_COLUMNS)
    if any(MIX_BLOCK_DIM in r for r in rows):
        head.insert(head.index("Block Dim") + 1, MIX_BLOCK_DIM)
    return head + cube + l2 + list(NPUSIM_COLUMNS)


def _fmt(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.3f}"           # msprof prints µs with 3 decimals
    return str(value)


def write_csv(path, columns, rows, fmt=_fmt) -> None:
    """Write ``rows`` (dicts) to ``path`` as CSV with the header ``columns``, each value
    through ``fmt`` (default: msprof's style, 3 decimals); missing keys are empty. The
    directory is created if needed."""
    directory = os.path.dirname(os.fspath(path))
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow([fmt(r.get(c, "")) for c in columns])


def write_op_summary(path, devices) -> int:
    """Write the op summary CSV of ``devices`` (a Device, a list of them, or rows from
    :func:`op_summary_rows`) to ``path``; return the number of rows.

    Raises:
        OSError: the file cannot be written.
    """
    items = devices if isinstance(devices, list) and devices and isinstance(devices[0], dict) \
        else op_summary_rows(devices)
    write_csv(path, op_summary_columns(items), items)
    return len(items)


def read_op_summary(path) -> list[dict]:
    """Read an op summary CSV back: a list of column -> string dicts."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def task_rows(devices) -> list[dict]:
    """One row per stream task of ``devices`` (kernels, copies, memsets, events, other
    tasks), in start-time order per device; columns :data:`TASK_COLUMNS`."""
    rows = []
    for dev in _as_devices(devices):
        waits = _wait_times(dev.tasks)
        for rec in sorted(dev.tasks, key=lambda r: (r.start_us, r.task_id)):
            kind = kernel_task_type(dev.soc, getattr(rec.profile, "kernel_type", None)) \
                if rec.kind == KERNEL else _TASK_TYPES.get(rec.kind, rec.kind)
            rows.append({"Device_id": dev.device_id, "Stream ID": rec.stream_id,
                         "Task ID": rec.task_id, "Task Type": kind, "Name": rec.name,
                         "Task Start Time(us)": rec.start_us,
                         "Task Duration(us)": rec.duration_us,
                         "Task Wait Time(us)": waits[rec.task_id], "Bytes": rec.nbytes,
                         "Error": rec.error or ""})
    return rows


def write_task_time(path, devices) -> int:
    """Write :func:`task_rows` of ``devices`` as CSV; return the number of rows.

    Raises:
        OSError: the file cannot be written.
    """
    rows = task_rows(devices)
    write_csv(path, TASK_COLUMNS, rows)
    return len(rows)


def format_table(rows, columns, headers=None) -> str:
    """A plain-text table of ``rows`` (dicts) for a terminal: floats with 3 decimals."""
    headers = list(headers or columns)
    cells = [[_fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
    # numbers right-aligned, text left-aligned
    numeric = [all(isinstance(r.get(c), (int, float, np.integer, np.floating))
                   and not isinstance(r.get(c), bool) for r in rows) for c in columns]

    def line(items):
        return "  ".join(x.rjust(w) if num else x.ljust(w)
                         for x, w, num in zip(items, widths, numeric)).rstrip()
    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(row) for row in cells]
    return "\n".join(out)


__all__ = ["MSPROF_COLUMNS", "CUBE_COLUMNS", "L2_COLUMNS", "L2_REQUEST_BYTES", "l2_columns",
           "l2_counts", "MIX_BLOCK_DIM", "NPUSIM_COLUMNS", "TASK_COLUMNS",
           "kernel_task_type", "kernel_row", "op_summary_rows",
           "op_summary_columns", "write_op_summary", "read_op_summary", "task_rows",
           "write_task_time", "format_table"]
