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
  pipes ``aic_mac_time(us), aic_mac_ratio, aic_mte1_time(us), aic_mte1_ratio,
  aic_fixpipe_time(us), aic_fixpipe_ratio`` when some kernel used them, then columns of
  our own (:data:`NPUSIM_COLUMNS`): bytes, bandwidths, the HBM floor and the bound.
* **task list** (:func:`task_rows`, :func:`write_task_time`): every stream task —
  kernels, copies, memsets, event records and waits — in the spirit of msprof's
  ``task_time_*.csv``.

Definitions (where msprof's documents are silent they are ours, marked [R]):

* Task Duration: the kernel's ``duration_us`` (launch overhead + first to last
  instruction). Task Wait Time: from the end of the previous task of the same stream to
  this task's start (0 for a stream's first task) [R].
* aiv_time(us): a block's time from its first to its last instruction, averaged over the
  blocks [R]; aiv_total_cycles: the sum over the blocks, in cycles [R]. ``aiv_*_time``:
  the pipe's busy time averaged over the blocks (msprof names, KernelProfile.pipe_time_us);
  ``aiv_*_ratio``: that time over aiv_time [R].
* Task Type: ``AI_VECTOR_CORE`` on the split A2/A3 (vector kernels run on the AIVs),
  ``AI_CORE`` on the coupled 910A/310P (the types of msprof's task_time page).
* Bound and Bound(%): :func:`npusim.launch._bound` — HBM bandwidth, vector, scalar or
  latency, and the percentage of that limit reached.
"""
from __future__ import annotations

import csv
import os

import numpy as np

from npusim.ascendc.types import Pipe
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
#: msprof's cube-pipe columns, present when a kernel issued work on PIPE_M/MTE1/FIX.
CUBE_COLUMNS = ("aic_mac_time(us)", "aic_mac_ratio", "aic_mte1_time(us)", "aic_mte1_ratio",
                "aic_fixpipe_time(us)", "aic_fixpipe_ratio")
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


def kernel_task_type(soc) -> str:
    """msprof Task Type of a vector kernel on ``soc``: AI_VECTOR_CORE or AI_CORE."""
    return "AI_VECTOR_CORE" if soc.is_split else "AI_CORE"


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
    timing = profile.timing
    if timing is not None and profile.block_dim:
        block_cycles = np.asarray(timing.block_end) - np.asarray(timing.block_start)
        aiv_time = float(block_cycles.mean()) * to_us
        total_cycles = float(block_cycles.sum())
    else:
        aiv_time, total_cycles = 0.0, 0.0

    def ratio(t):
        return t / aiv_time if aiv_time else 0.0

    row = {
        "Device_id": device_id, "Stream ID": stream_id, "Task ID": task_id,
        "Op Name": profile.op_name, "OP Type": profile.op_name,
        "Task Type": kernel_task_type(soc), "Task Start Time(us)": profile.start_us,
        "Task Duration(us)": profile.duration_us, "Task Wait Time(us)": wait_us,
        "Block Dim": profile.block_dim, "aiv_time(us)": aiv_time,
        "aiv_total_cycles": int(round(total_cycles)),
    }
    for short in ("vec", "scalar", "mte2", "mte3"):
        t = float(profile.pipe_time_us.get(f"aiv_{short}_time", 0.0))
        row[f"aiv_{short}_time(us)"] = t
        row[f"aiv_{short}_ratio"] = ratio(t)
    for name, t in _cube_times(profile, to_us).items():
        row[f"{name}_time(us)"] = t
        row[f"{name}_ratio"] = ratio(t)
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
    """The columns of ``rows``: msprof's, the cube ones if any row has them, then ours."""
    cube = [c for c in CUBE_COLUMNS if any(c in r for r in rows)]
    return list(MSPROF_COLUMNS) + cube + list(NPUSIM_COLUMNS)


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
            kind = kernel_task_type(dev.soc) if rec.kind == KERNEL else _TASK_TYPES.get(
                rec.kind, rec.kind)
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


__all__ = ["MSPROF_COLUMNS", "CUBE_COLUMNS", "NPUSIM_COLUMNS", "TASK_COLUMNS",
           "kernel_task_type", "kernel_row", "op_summary_rows",
           "op_summary_columns", "write_op_summary", "read_op_summary", "task_rows",
           "write_task_time", "format_table"]
