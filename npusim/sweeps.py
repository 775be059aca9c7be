"""Sweeps: run a study point by point — locally in parallel, or on a Dask cluster.

A sweep is the cartesian product of its axes (``cores``, ``tile``, ``dtype``, ``soc``,
``shape``, or any other keyword), each point handed to a *runner*: a picklable callable
``runner(point: dict) -> dict`` that returns the point's record (plain numbers and
strings). npusim does not know operators (it imports neither ``kernels`` nor ``aclnn``);
the operator runners live in :mod:`npusim_tools.registry`, and a kernel of your own can
be swept with a runner that calls :func:`npusim.run_kernel` and returns
:func:`profile_record` of its profile. :func:`sweep` is ``npusim.sweep`` (re-exported by
the package)::

    import npusim
    from npusim_tools.registry import runner
    result = npusim.sweep(runner("ApplyFusedEmaAdam"), cores=[1, 2, 4, 8, 16, 32, 48],
                          shape=(1 << 20,), dtype="float32")
    result.records          # list of dicts, one per point, in point order
    fig = result.plot()     # matplotlib Figure (npusim.plot.plot_sweep)

Where the points run (the records are identical either way: the simulator is
deterministic and a record holds simulated figures only, not host times):

* ``executor=None`` (default): a local ``concurrent.futures.ProcessPoolExecutor`` with
  ``jobs`` workers (default: the machine's CPUs);
* ``executor="serial"``: one after another in this process;
* ``executor=`` any ``concurrent.futures.Executor`` (e.g. a ThreadPoolExecutor), or a
  ``dask.distributed.Client`` (its ``get_executor()`` is used);
* ``scheduler="tcp://host:8786"``: a Dask distributed cluster at that address (needs
  ``pip install 'npusim[dask]'``); the workers must have npusim installed.

A point whose runner raises leaves a record with the point, ``error`` set to the
exception's text, and no figures; the other points go on.

A runner of your own returns a plain dict; the table, CSV and plot read these fields
when present (none is required but ``duration_us`` for the plot):

* ``duration_us`` — simulated time of the point (µs; Task Duration, summed over the
  launches of the point);
* ``hbm_floor_us`` — the HBM roofline: HBM bytes / ``soc.hbm_bandwidth`` (µs); drawn
  as a dashed line per series when present;
* ``tflops`` — simulated TFLOPS (adds a TFLOPS panel);
* ``bound``, ``bound_percent``, ``bytes_read``, ``bytes_written``, ``bandwidth_GBps``,
  ``aiv_*_time_us`` — shown by ``table()`` and written by ``to_csv()``.

:func:`profile_record` makes them from KernelProfiles. Axes may be any keyword
(``cols=[64, 128, 256]``, ``tile=[...]``): a sweep over ``cores`` and another axis has one
series per value of the other axes, each with its own speed-up (against the series'
first point) and roofline.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import itertools
import os
import sys
import time
from dataclasses import dataclass, field

from npusim.profiling import write_csv

#: Columns a sweep record usually has, in table order (others follow).
RECORD_COLUMNS = (
    "op", "shape", "dtype", "soc", "cores", "tile", "block_dim", "tile_len", "duration_us",
    "speedup", "tflops", "aiv_mte2_time_us", "aiv_vec_time_us", "aiv_mte3_time_us",
    "aiv_scalar_time_us", "bytes_read", "bytes_written", "hbm_bytes", "bandwidth_GBps",
    "hbm_bandwidth_GBps", "hbm_floor_us", "bound", "bound_percent", "check", "max_abs_err",
    "error",
)
#: Columns of the printed table (``SweepResult.table``).
TABLE_COLUMNS = ("cores", "tile", "dtype", "soc", "block_dim", "tile_len", "duration_us",
                 "speedup", "tflops", "hbm_bandwidth_GBps", "hbm_floor_us", "bound", "bound_percent",
                 "check")


def profile_record(profiles, soc) -> dict:
    """The figures of one point from the KernelProfile(s) it launched.

    Args:
        profiles: a KernelProfile or a list of them (an operator's chain of kernels).
        soc: the SocSpec they ran on (for ``hbm_floor_us``).

    Returns:
        ``duration_us`` (sum of Task Durations), ``block_dim`` and the per-pipe times
        (``aiv_*_time_us``, µs) of the longest launch, ``bytes_read``,
        ``bytes_written``, ``hbm_bytes`` (sums, bytes), ``bandwidth_GBps`` (GM bytes per
        second of duration, GB/s), ``hbm_bandwidth_GBps``, ``hbm_floor_us`` (HBM bytes /
        ``soc.hbm_bandwidth``: the roofline), ``bound`` and ``bound_percent`` (of the
        longest launch), ``launches``.
    """
    if not isinstance(profiles, (list, tuple)):
        profiles = [profiles]
    if not profiles:
        return {"launches": 0, "duration_us": 0.0, "block_dim": 0, "bytes_read": 0,
                "bytes_written": 0, "hbm_bytes": 0, "bandwidth_GBps": 0.0,
                "hbm_bandwidth_GBps": 0.0, "hbm_floor_us": 0.0, "bound": "",
                "bound_percent": 0.0}
    main = max(profiles, key=lambda p: p.duration_us)
    dur = sum(p.duration_us for p in profiles)
    nread = sum(p.bytes_read for p in profiles)
    nwritten = sum(p.bytes_written for p in profiles)
    hbm = sum(p.hbm_bytes for p in profiles)
    rec = {"launches": len(profiles), "duration_us": dur, "block_dim": main.block_dim}
    for name, value in main.pipe_time_us.items():
        rec[f"{name}_us"] = float(value)
    rec.update({
        "bytes_read": int(nread), "bytes_written": int(nwritten), "hbm_bytes": int(round(hbm)),
        "bandwidth_GBps": (nread + nwritten) / (dur * 1e-6) / 1e9 if dur else 0.0,
        "hbm_bandwidth_GBps": hbm / (dur * 1e-6) / 1e9 if dur else 0.0,
        "hbm_floor_us": hbm / soc.hbm_bandwidth * 1e6,
        "bound": main.bound, "bound_percent": float(main.bound_percent),
    })
    return rec


def points(**axes) -> list[dict]:
    """The cartesian product of ``axes`` (name -> list of values, or one value), in
    order: the first axis varies slowest."""
    names = list(axes)
    values = [v if isinstance(v, (list, tuple, range)) and not _is_shape(k, v) else [v]
              for k, v in axes.items()]
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def _is_shape(name: str, value) -> bool:
    """A ``shape`` given as one tuple of ints is one value, not a list of shapes."""
    return name == "shape" and isinstance(value, tuple) and all(
        isinstance(d, int) for d in value)


@dataclass
class SweepResult:
    """The records of a sweep.

    Attributes:
        records: one dict per point, in point order (:data:`RECORD_COLUMNS` and any other
            keys the runner returned).
        axes: axis name -> the values swept.
        wall_s: host wall time of the sweep (seconds).
        executor: where it ran ("serial", "process pool (N workers)", "dask ...").
    """

    records: list
    axes: dict
    wall_s: float = 0.0
    executor: str = ""
    _columns: list = field(default_factory=list, repr=False)

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    @property
    def errors(self) -> list[dict]:
        """The records of the points that failed."""
        return [r for r in self.records if r.get("error")]

    def columns(self) -> list[str]:
        """Every key of the records: :data:`RECORD_COLUMNS` order first."""
        keys = []
        for r in self.records:
            keys += [k for k in r if k not in keys]
        return [c for c in RECORD_COLUMNS if c in keys] + [k for k in keys
                                                           if k not in RECORD_COLUMNS]

    def table(self, columns=None) -> str:
        """A plain-text table (default columns: the swept axes (several values) that are
        not in :data:`TABLE_COLUMNS`, then the :data:`TABLE_COLUMNS` that are present)."""
        from npusim.profiling import format_table
        present = self.columns()
        if columns is None:
            columns = [a for a, v in self.axes.items()
                       if a not in TABLE_COLUMNS and len(v) > 1] + list(TABLE_COLUMNS)
        cols = [c for c in columns if c in present
                and any(r.get(c) not in (None, "") for r in self.records)]
        rows = [{c: ("" if r.get(c) is None else r.get(c)) for c in cols} for r in self.records]
        return format_table(rows, cols)

    def to_csv(self, path) -> None:
        """Write every record to ``path`` as CSV (all columns, floats unrounded)."""
        write_csv(path, self.columns(), self.records, lambda v: "" if v is None else v)

    def plot(self, path=None, *, x: str | None = None):
        """The sweep's figure (:func:`npusim.plot.plot_sweep`), saved to ``path`` if given.

        ``x`` defaults to the first swept axis of cores, tile, dtype, soc, shape, else the
        first axis swept (one of the caller's own, e.g. ``cols``); every other swept axis
        makes series (one line per value). Failed points are left out.

        Raises:
            ValueError: every point failed (the message has the first point's error), or
                ``x`` is not an axis of the records.
        """
        from npusim.plot import plot_sweep
        ok = [r for r in self.records if not r.get("error")]
        if not ok and self.records:
            first = self.records[0]
            point = ", ".join(f"{k}={first.get(k)}" for k in self.axes)
            raise ValueError(f"nothing to plot: all {len(self.records)} points failed; the "
                             f"first ({point}): {first['error']}")
        swept = [a for a, values in self.axes.items() if len(values) > 1]
        return plot_sweep(ok, path, x=x, axes=swept)


def _call(runner, point, timing_only: bool = False):
    try:
        if timing_only:
            with _timing_only_env():
                return runner(point)
        return runner(point)
    except Exception as exc:          # a failed point is a record, the sweep goes on
        return {"error": f"{type(exc).__name__}: {exc}"}


@contextlib.contextmanager
def _timing_only_env():
    """``NPUSIM_TIMING_ONLY=1`` while the block runs (in this process; the local pool's
    workers inherit it when they start). A runner's launches then run timing-only unless
    it asks otherwise (:mod:`npusim.ascendc.timing_only`)."""
    from npusim.ascendc.timing_only import ENV
    saved = os.environ.get(ENV)
    os.environ[ENV] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = saved


def series_key(record: dict, axes) -> tuple:
    """The series a record belongs to: its values of ``axes`` (every swept axis but the
    one plotted) and of ``op`` (records of several operators never mix)."""
    return tuple((k, str(record.get(k))) for k in ("op", *axes) if k in record)


def _add_speedup(records: list[dict], others) -> None:
    """``speedup = T(first point of the series) / T``: a series is the records with equal
    values of ``others`` (every axis but ``cores``: the SoC, dtype, tile, or an axis of the
    caller's own such as ``cols``), its first point the first in point order (the fewest
    cores when they are given in increasing order). Points that failed get none."""
    groups: dict = {}
    for r in records:
        if r.get("error") or not r.get("duration_us"):
            continue
        groups.setdefault(series_key(r, others), []).append(r)
    for rs in groups.values():
        base = rs[0]
        for r in rs:
            r["speedup"] = base["duration_us"] / r["duration_us"]


def _progress_bar(total: int, enabled, desc: str):
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:               # the bar is a convenience: run without it
        return None
    return tqdm(total=total, desc=desc, unit="point", file=sys.stderr)


def sweep(runner, *, executor=None, scheduler: str | None = None, jobs: int | None = None,
          progress: bool | None = None, desc: str = "sweep", timing_only: bool = False,
          **axes) -> SweepResult:
    """Run ``runner`` on every point of ``axes``; return the records.

    Args:
        runner: a picklable callable ``runner(point) -> dict`` (module-level function,
            ``functools.partial`` of one, or an instance of a module-level class).
        executor: None (local process pool), "serial", a ``concurrent.futures.Executor``
            or a ``dask.distributed.Client`` (see the module docstring).
        scheduler: address of a Dask distributed scheduler (instead of ``executor``).
        jobs: workers of the local process pool (default ``os.cpu_count()``).
        progress: show a tqdm progress bar on stderr (default: when stderr is a TTY).
        desc: the progress bar's label.
        timing_only: run every point's launches timing-only (``NPUSIM_TIMING_ONLY=1`` around
            each point, wherever it runs; :mod:`npusim.ascendc.timing_only`): the same
            simulated figures, the results not computed (the operator runners then skip
            their golden check), in a fraction of the host time.
        **axes: axis name -> list of values (or one value); ``shape`` may be one tuple.

    Returns:
        A :class:`SweepResult`; each record is ``{**point, **runner(point)}`` plus
        ``speedup`` when ``cores`` varies.

    Raises:
        ValueError: no points, or both ``executor`` and ``scheduler``.
        RuntimeError: ``scheduler`` given but dask.distributed is not installed.
    """
    pts = points(**axes)
    if not pts:
        raise ValueError("the sweep has no points: give at least one value per axis")
    if executor is not None and scheduler is not None:
        raise ValueError("give an executor or a scheduler address, not both")
    t0 = time.perf_counter()
    results: list = [None] * len(pts)
    bar = _progress_bar(len(pts), progress, desc)
    client = owned = None
    try:
        if scheduler is not None:
            try:
                from dask.distributed import Client
            except ImportError:
                raise RuntimeError("a Dask scheduler needs dask.distributed: "
                                   "pip install 'npusim[dask]'") from None
            client = Client(scheduler)
            executor = client
        if executor == "serial" or (executor is None and (jobs == 1 or len(pts) == 1)):
            where = "serial"
            for i, p in enumerate(pts):
                results[i] = _call(runner, p, timing_only)
                if bar is not None:
                    bar.update(1)
        else:
            if executor is None:
                n = max(1, min(jobs or os.cpu_count() or 1, len(pts)))
                pool = owned = cf.ProcessPoolExecutor(max_workers=n)
                where = f"process pool ({n} workers)"
            elif hasattr(executor, "get_executor"):     # a dask.distributed.Client
                pool = executor.get_executor()
                where = "dask distributed"
            else:
                pool = executor
                where = type(executor).__name__
            futures = {pool.submit(_call, runner, p, timing_only): i for i, p in enumerate(pts)}
            for fut in cf.as_completed(futures):
                results[futures[fut]] = fut.result()
                if bar is not None:
                    bar.update(1)
    finally:
        if owned is not None:
            owned.shutdown()
        if client is not None:
            client.close()
        if bar is not None:
            bar.close()
    records = [{**p, **r} for p, r in zip(pts, results)]
    if len({str(p.get("cores")) for p in pts}) > 1:      # a core sweep
        _add_speedup(records, [k for k in axes if k != "cores"])
    axes_values = {k: [p[k] for p in pts] for k in axes}
    axes_values = {k: list(dict.fromkeys(map(_hashable, v))) for k, v in axes_values.items()}
    return SweepResult(records, axes_values, time.perf_counter() - t0, where)


def _hashable(v):
    return tuple(v) if isinstance(v, list) else v


__all__ = ["sweep", "points", "profile_record", "series_key", "SweepResult", "RECORD_COLUMNS",
           "TABLE_COLUMNS"]
