"""Plots of traces and sweeps, with matplotlib (no pyplot: figures are built on the Agg
canvas, so plotting works without a display and leaves no global state).

* :func:`plot_timeline` — a Gantt chart of a trace (:mod:`npusim.trace`): one row per AI
  core and pipe (and per stream and copy engine), one bar per instruction or task,
  coloured by pipe; x is device time in µs.
* :func:`plot_sweep` — the records of a sweep (:func:`npusim.sweeps.sweep`): against core
  count, simulated time with the HBM roofline (``HBM bytes / soc.hbm_bandwidth``, the
  time no kernel moving those bytes can beat) and the speed-up with its ideal and
  roofline bounds; against tile length, simulated time; against dtype or SoC, a bar chart.
"""
from __future__ import annotations

import os

from matplotlib.figure import Figure

from npusim import trace as _trace

#: Colours of the rows, by thread name (pipes as in msprof's PipeUtilization colours are
#: not published; these are ours).
PIPE_COLOURS = {"PIPE_MTE2": "tab:blue", "PIPE_V": "tab:green", "PIPE_MTE3": "tab:orange",
                "PIPE_S": "tab:gray", "PIPE_MTE1": "tab:cyan", "PIPE_M": "tab:red",
                "PIPE_FIX": "tab:pink", "blocks": "tab:olive", "H2D": "tab:purple",
                "D2H": "tab:brown", "D2D": "tab:pink"}
#: Colours of stream-row tasks, by kind (``TaskRecord.kind``).
TASK_COLOURS = {"KERNEL": "tab:red", "MEMCPY": "tab:purple", "MEMSET": "tab:brown",
                "EVENT_WAIT": "tab:gray", "TASK": "tab:olive"}
TIME_LABEL = "time (µs)"
SIM_TIME_LABEL = "simulated time (µs)"


def _save(fig: Figure, path) -> None:
    if path is not None:
        directory = os.path.dirname(os.fspath(path))
        if directory:
            os.makedirs(directory, exist_ok=True)
        fig.savefig(path, dpi=100)


#: The two kinds of core process of a trace (npusim.trace): cube cores ("AIC c", msprof's
#: name) and vector cores ("AIV c" on A2/A3, "AI Core c" on the coupled 910A/310P).
AIC, VECTOR = "AIC", "vector"


def _core_of(pid: int) -> tuple[str, int] | None:
    """(kind, index) of a core process's pid: ("AIC", c) or ("vector", c); None for the
    stream and copy rows."""
    local = pid % 1000
    if local >= _trace.CUBE_PID:
        return AIC, local - _trace.CUBE_PID
    if local >= _trace.CORE_PID:
        return VECTOR, local - _trace.CORE_PID
    return None


def _row_label(span) -> str:
    if _core_of(span.pid) is not None:       # the trace's process name without "NPU d "
        return f"{span.process.split(' ', 2)[-1]} {span.thread}"
    if span.pid % 1000 == _trace.COPIES_PID:
        return f"copy {span.thread}"
    return span.thread


def plot_timeline(trace, path=None, *, cores=None, streams: bool = True,
                  window=None, title: str | None = None, copies: bool = False,
                  cube_cores=None) -> Figure:
    """Gantt chart of a trace: rows (core, pipe), bars per instruction.

    Args:
        trace: a trace object (:func:`npusim.trace.build_trace`) or a path to a trace file.
        path: where to save the figure (PNG by its extension), or None.
        cores: indices of the vector cores to show (the trace's "AIV c" on A2/A3, "AI
            Core c" on 910A/310P). cube_cores: indices of the cube cores to show (the
            trace's "AIC c"). With neither, every core is shown; with one or both,
            only the cores they name.
        streams: also show the stream rows (and, with ``copies``, the copy engines).
        window: ``(start_us, end_us)`` to show only that part of the device clock.
            Default: the kernels' span (first kernel instruction to last, plus 2 %), so
            that host<->device copies, which often take far longer, do not squeeze the
            kernels into a sliver; with ``copies``, the whole trace.
        title: the figure title (default: the number of spans and of cores).
        copies: show the copy-engine rows (H2D, D2H, D2D) and frame the whole trace.

    Returns:
        The matplotlib Figure: one Axes, x label "time (µs)", one y tick per row labelled
        ``"AIV C PIPE_X"`` (``"AI Core C PIPE_X"`` on 910A/310P), ``"AIC C PIPE_M"``,
        ``"AIV C blocks"``, ``"stream N"`` or ``"copy H2D"``, and a
        legend of the colours used (one entry per pipe, copy link and stream task kind).

    Raises:
        TraceFormatError: ``trace`` is not a valid trace. OSError: a file problem.
    """
    from matplotlib.patches import Patch
    if isinstance(trace, (str, os.PathLike)):
        trace = _trace.load_trace(trace)
    spans, porder, torder = _trace.trace_spans(trace)
    keep = None
    if cores is not None or cube_cores is not None:
        keep = {(VECTOR, int(c)) for c in cores or ()} | {(AIC, int(c)) for c in cube_cores or ()}
    rows: dict = {}
    legend: dict = {}
    for sp in spans:
        core = _core_of(sp.pid)
        if core is None and not streams:
            continue
        if core is None and not copies and sp.pid % 1000 == _trace.COPIES_PID:
            continue
        if core is not None and keep is not None and core not in keep:
            continue
        rows.setdefault((porder.get(sp.pid, sp.pid), sp.pid, torder.get((sp.pid, sp.tid), sp.tid),
                         sp.tid), []).append(sp)
    keys = sorted(rows)
    height = min(40.0, max(3.0, 0.25 * len(keys) + 1.5))
    fig = Figure(figsize=(12, height))
    ax = fig.add_subplot(1, 1, 1)
    labels = []
    for y, key in enumerate(keys):
        row = rows[key]
        labels.append(_row_label(row[0]))
        if row[0].pid % 1000 == _trace.STREAMS_PID:      # colour stream tasks by kind
            kinds = [s.args.get("kind") for s in row]
            colours = [TASK_COLOURS.get(k, "tab:purple") for k in kinds]
            for k, c in zip(kinds, colours):
                legend.setdefault(f"stream task {k}", c)
            edges = dict(edgecolor="white", linewidth=0.3)   # adjacent tasks stay apart
        else:
            colours = PIPE_COLOURS.get(row[0].thread, "tab:purple")
            legend.setdefault(row[0].thread, colours)
            edges = dict(linewidth=0)
        ax.broken_barh([(s.start_us, max(s.dur_us, 1e-6)) for s in row], (y - 0.4, 0.8),
                       facecolors=colours, **edges)
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_ylim(len(keys) - 0.5, -0.5)          # first row at the top
    ax.set_xlabel(TIME_LABEL)
    if window is None and not copies:
        kernel_spans = [sp for key in keys for sp in rows[key] if _core_of(sp.pid) is not None]
        if kernel_spans:
            lo = min(sp.start_us for sp in kernel_spans)
            hi = max(sp.start_us + sp.dur_us for sp in kernel_spans)
            pad = 0.02 * (hi - lo) or 0.01
            window = (lo - pad, hi + pad)
    if window is not None:
        ax.set_xlim(*window)
    if legend:
        ax.legend(handles=[Patch(facecolor=c, label=label) for label, c in legend.items()],
                  fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="colours",
                  title_fontsize=7)
    shown = {_core_of(k[1]) for k in keys if _core_of(k[1]) is not None}
    n_cube = sum(1 for kind, _ in shown if kind == AIC)
    ax.set_title(title or f"npusim timeline: {sum(len(r) for r in rows.values())} spans, "
                 f"{len(shown) - n_cube} vector cores" + (f", {n_cube} AIC" if n_cube else ""))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    _save(fig, path)
    return fig


#: Sweep axes, in the order a plot picks its x axis.
SWEEP_AXES = ("cores", "tile", "dtype", "soc", "shape")


def _varying(records) -> list[str]:
    return [a for a in SWEEP_AXES if len({str(r.get(a)) for r in records}) > 1]


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _roofline(rs) -> list | None:
    """The series' HBM roofline (``hbm_floor_us``), or None when a record has none."""
    floor = [r.get("hbm_floor_us") for r in rs]
    return None if any(f is None for f in floor) else floor


def _groups(records, x: str, varying) -> dict:
    others = [a for a in varying if a != x]
    groups: dict = {}
    for r in records:
        label = ", ".join(f"{a}={r.get(a)}" for a in others)
        groups.setdefault(label, []).append(r)
    return groups


def _plot_tflops(ax, groups: dict, key: str, xlabel: str | None):
    """The simulated TFLOPS (records' ``tflops``) of each group against ``key`` on ``ax``."""
    for i, (label, rs) in enumerate(groups.items()):
        rs = sorted(rs, key=lambda r: r[key])
        xs = [r.get("tile_len") or r[key] for r in rs] if key == "tile" else [r[key] for r in rs]
        ax.plot(xs, [r["tflops"] for r in rs], "s-", color=f"C{3 + i}",
                label="TFLOPS" + (f" ({label})" if label else ""))
    ax.set_ylabel("simulated TFLOPS")
    if xlabel:
        ax.set_xlabel(xlabel)
        ax.set_title(f"TFLOPS against {xlabel}")
    return ax


def plot_sweep(records, path=None, *, x: str | None = None, axes=None,
               title: str | None = None) -> Figure:
    """Plot sweep records (dicts with the axes and ``duration_us``, ``hbm_floor_us``).

    Args:
        records: the sweep's records (``SweepResult.records``).
        path: where to save the figure, or None.
        x: the axis to plot against: "cores", "tile", "dtype", "soc", "shape" or an axis
            of the caller's own that every record has (default: the first swept axis).
        axes: the swept axes, any names (default: those of "cores", "tile", "dtype",
            "soc", "shape" whose values differ between records; pass the swept ones when
            another follows them, as cores follow the SoC). Every one but ``x`` makes
            series: one line (one colour) per combination of their values, each with its
            own roofline and speed-up.
        title: the figure title (default: the operator and the axes that do not vary).

    Returns:
        The Figure. Against "cores": two Axes — x "cores", y "simulated time (µs)" with
        the measured time and the HBM roofline; x "cores", y "speed-up" with the measured
        speed-up over the fewest cores, the ideal (linear) and the roofline bound
        ``min(n / n0, T(n0) / floor)``; records with ``tflops`` (cube operators) add a
        third, x "cores", y "simulated TFLOPS". Against "tile": one Axes, x "tile length
        (elements)" (log2), y "simulated time (µs)" with the HBM roofline (and, with
        ``tflops``, a second y axis "simulated TFLOPS"). Against another numeric axis:
        one Axes, x the axis name, y "simulated time (µs)" with the roofline per series.
        Otherwise one bar chart, y "simulated time (µs)". Lines of several series (other
        axes that vary) carry their labels (``"cols=128"``) in the legend. The speed-up of
        a series is against its first record (its first point in sweep order). Records
        without ``hbm_floor_us`` are drawn without the roofline.

    Raises:
        ValueError: no records, a record without ``duration_us``, or ``x`` not a sweep
        axis.
    """
    records = list(records)
    if not records:
        raise ValueError("no sweep records to plot")
    if axes is None:
        varying = _varying(records)
    else:                             # ours in SWEEP_AXES order, then the caller's own
        varying = [a for a in SWEEP_AXES if a in axes] + [a for a in axes
                                                           if a not in SWEEP_AXES]
    if x is None:
        x = varying[0] if varying else "cores"
    if x not in SWEEP_AXES and not all(x in r for r in records):
        raise ValueError(f"x must be one of {', '.join(SWEEP_AXES)} or an axis every record "
                         f"has, got {x!r}")
    if any(r.get("duration_us") is None for r in records):
        raise ValueError("every record needs duration_us (µs) to be plotted")
    first = records[0]
    fixed = [f"{a} {first[a]}" for a in ("shape", "dtype", "soc")
             if a in first and a not in varying and a != x]
    title = title or " ".join([str(first.get("op", ""))] + fixed).strip()
    groups = _groups(records, x, varying)
    tflops = all(r.get("tflops") is not None for r in records)    # a cube operator's records
    if x == "cores":
        fig = Figure(figsize=(18 if tflops else 12, 4.8))
        ax_t = fig.add_subplot(1, 3 if tflops else 2, 1)
        ax_s = fig.add_subplot(1, 3 if tflops else 2, 2)
        for i, (label, rs) in enumerate(groups.items()):
            base_t, base_n = rs[0]["duration_us"], rs[0]["cores"]   # the series' first point
            rs = sorted(rs, key=lambda r: r["cores"])
            n = [r["cores"] for r in rs]
            t = [r["duration_us"] for r in rs]
            floor = _roofline(rs)
            suffix = f" ({label})" if label else ""
            colour = f"C{i % 10}"           # one colour per series, on both panels
            ax_t.plot(n, t, "o-", color=colour, label="simulated" + suffix)
            if floor is not None:
                ax_t.plot(n, floor, "--", color=colour, label="HBM roofline" + suffix)
            speed = [base_t / v if v else 0.0 for v in t]
            ideal = [k / base_n for k in n]
            ax_s.plot(n, speed, "o-", color=colour, label="simulated" + suffix)
            ax_s.plot(n, ideal, ":", color=colour, label="ideal (linear)" + suffix)
            if floor is not None:
                bound = [min(k / base_n, base_t / f) if f else k / base_n
                         for k, f in zip(n, floor)]
                ax_s.plot(n, bound, "--", color=colour, label="HBM roofline" + suffix)
        ax_t.set_xlabel("cores")
        ax_t.set_ylabel(SIM_TIME_LABEL)
        ax_t.set_yscale("log")
        ax_t.set_title("time against cores")
        ax_s.set_xlabel("cores")
        ax_s.set_ylabel("speed-up")
        firsts = sorted({rs[0]["cores"] for rs in groups.values()})
        ax_s.set_title("speed-up over " + (f"{firsts[0]} core(s)" if len(firsts) == 1 else
                                           "the first point of each series"))
        axes_ = [ax_t, ax_s]
        if tflops:
            axes_.append(_plot_tflops(fig.add_subplot(1, 3, 3), groups, "cores", "cores"))
        for ax in axes_:
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    elif x == "tile":
        fig = Figure(figsize=(8, 4.8))
        ax = fig.add_subplot(1, 1, 1)
        for label, rs in groups.items():
            rs = sorted(rs, key=lambda r: r["tile"])
            tiles = [r["tile_len"] if r.get("tile_len") else r["tile"] for r in rs]
            suffix = f" ({label})" if label else ""
            ax.plot(tiles, [r["duration_us"] for r in rs], "o-", label="simulated" + suffix)
            floor = _roofline(rs)
            if floor is not None:
                ax.plot(tiles, floor, "--", label="HBM roofline" + suffix)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("tile length (elements)")
        ax.set_ylabel(SIM_TIME_LABEL)
        ax.set_title("time against tile length")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        if tflops:
            _plot_tflops(ax.twinx(), groups, "tile", None).legend(fontsize=7, loc="upper right")
    elif _numeric([r.get(x) for r in records]):     # an axis of the caller's own
        fig = Figure(figsize=(8, 4.8))
        ax = fig.add_subplot(1, 1, 1)
        for i, (label, rs) in enumerate(groups.items()):
            rs = sorted(rs, key=lambda r: r[x])
            xs = [r[x] for r in rs]
            suffix = f" ({label})" if label else ""
            colour = f"C{i % 10}"
            ax.plot(xs, [r["duration_us"] for r in rs], "o-", color=colour,
                    label="simulated" + suffix)
            floor = _roofline(rs)
            if floor is not None:
                ax.plot(xs, floor, "--", color=colour, label="HBM roofline" + suffix)
        values = sorted({r[x] for r in records})
        if values[0] > 0 and values[-1] / values[0] >= 8:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(x)
        ax.set_ylabel(SIM_TIME_LABEL)
        ax.set_title(f"time against {x}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    else:                             # categories: grouped bars, one series per group
        fig = Figure(figsize=(8, 4.8))
        ax = fig.add_subplot(1, 1, 1)
        cats = list(dict.fromkeys(str(r.get(x)) for r in records))
        width = 0.8 / len(groups)
        for g, (label, rs) in enumerate(groups.items()):
            by_cat = {str(r.get(x)): r for r in rs}
            pos = [cats.index(c) - 0.4 + width * (g + 0.5) for c in cats if c in by_cat]
            rows = [by_cat[c] for c in cats if c in by_cat]
            ax.bar(pos, [r["duration_us"] for r in rows], width=width * 0.9,
                   label=label or "simulated")
            floor = _roofline(rows)
            if floor is not None:
                ax.plot(pos, floor, "k_", markersize=12, label="HBM roofline" if g == 0 else None)
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels(cats)
        ax.set_xlabel(x)
        ax.set_ylabel(SIM_TIME_LABEL)
        ax.set_title(f"time against {x}")
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    _save(fig, path)
    return fig


__all__ = ["plot_timeline", "plot_sweep", "PIPE_COLOURS", "SWEEP_AXES"]
