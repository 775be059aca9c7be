"""The ``npusim`` command: SoC presets, operator runs, sweeps and timelines.

::

    npusim socs
    npusim ops [--plugin FILE.py]
    npusim run OP --shape 1048576 [--dtype float32] [--soc Ascend910B1] [--cores N]
                  [--trace FILE] [--op-summary FILE] [--seed N] [--plugin FILE.py]
    npusim sweep OP --cores 1,2,4,8,16,32,48 | --tile 1024,2048,4096 | --dtype fp32,fp16
                  | --soc Ascend910B1,Ascend910B4 | --axis NAME=V1,V2 [--shape ...]
                  [--plot FILE.png] [--csv FILE] [--jobs N | --scheduler ADDRESS | --serial]
                  [--no-progress] [--plugin FILE.py]
    npusim timeline TRACE.json --plot FILE.png [--cores 0-3,aic0-1] [--window START,END]
                  [--copies]

``--plugin`` imports a module or file that registers operators of your own
(``npusim_tools.registry.register_custom``, e.g. ``examples/custom_aclnn_op.py``);
``--axis NAME=V1,V2`` sweeps an attribute of the operator. ``timeline`` frames the kernels
(copies over the host link, often much longer, are left out unless ``--copies``) and
draws a legend of its colours; its rows are named as msprof names the cores, ``AIC c``
(cube) and ``AIV c`` (vector; ``AI Core c`` on 910A/310P), and ``--cores`` selects them:
``0-3`` or ``aiv0-3`` vector cores, ``aic0-1`` cube cores.
    npusim pyasc [--soc NAME] [--trace FILE] [--op-summary FILE] SCRIPT.py [ARGS...]

Exit status: 0 on success; 1 when a run fails its golden check, an operator call fails or
a pyasc script fails; 2 for a bad argument (an option's value, a shape or ``--axis``
attribute the operator does not take, a missing file, pyasc not installed): a one-line
``npusim: error: ...`` on stderr, never a traceback. ``--trace`` turns profiling on (the
acl.init ``"npusim": {"profiling": true, "trace": FILE}`` switch); without it nothing is
traced.

Lists take commas and ranges: ``--cores 1-8,16,32,48`` (``a-b`` is every integer from a
to b), shapes take commas or ``x``: ``--shape 1024x1024``.
"""
from __future__ import annotations

import argparse
import os
import sys

import npusim
from npusim.profiling import format_table
from npusim.sweeps import sweep as run_sweep

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A bad argument: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block)."""

    def error(self, message):
        raise UsageError(message)


def parse_int_list(text: str, what: str) -> list[int]:
    """``"1,2,4"`` / ``"1-8,16"`` -> ints (ranges inclusive).

    Raises:
        UsageError: not integers, an empty or reversed range.
    """
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part[1:]:
                a, b = part.split("-", 1) if not part.startswith("-") else (part, "")
                lo, hi = int(a), int(b)
                if hi < lo:
                    raise UsageError(f"{what}: empty range {part!r}")
                out.extend(range(lo, hi + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise UsageError(f"{what}: {part!r} is not an integer or a range a-b") from None
    if not out:
        raise UsageError(f"{what}: no values in {text!r}")
    return out


def parse_core_list(text: str) -> tuple[list[int], list[int]]:
    """``--cores`` of ``npusim timeline`` -> (vector core indices, cube core indices).

    Items are separated by commas; ``aic0-3`` / ``aic5`` select cube cores (the trace's
    ``AIC c`` rows), ``aiv0-7`` or a bare ``0-7`` vector cores (``AIV c`` on A2/A3, ``AI
    Core c`` on 910A/310P). A bare number >= 400 keeps its old meaning, cube core
    ``n - 400`` (the offset of the AIC rows in earlier plots).

    Raises:
        UsageError: an item that is none of these.
    """
    vector, cube = [], []
    for part in text.split(","):
        item = part.strip().lower()
        if not item:
            continue
        kind = item[:3] if item[:3] in ("aic", "aiv") else None
        try:
            numbers = parse_int_list(item[3:] if kind else item, "--cores")
        except UsageError:
            raise UsageError(f"--cores: {part.strip()!r} is not a core or range (0-3), "
                             "aivN[-M] or aicN[-M]") from None
        if kind == "aic":
            cube.extend(numbers)
        elif kind == "aiv":
            vector.extend(numbers)
        else:
            vector.extend(n for n in numbers if n < _LEGACY_CUBE_OFFSET)
            cube.extend(n - _LEGACY_CUBE_OFFSET for n in numbers if n >= _LEGACY_CUBE_OFFSET)
    if not vector and not cube:
        raise UsageError(f"--cores: no cores in {text!r}")
    return vector, cube


#: Earlier timelines numbered cube core c as 400 + c; a bare number >= 400 still means that.
_LEGACY_CUBE_OFFSET = 400


def parse_shape(text: str) -> tuple:
    """``"1048576"``, ``"64,128"`` or ``"64x128"`` -> a tuple of ints >= 1.

    Raises:
        UsageError: not positive integers.
    """
    parts = [p for p in text.replace("x", ",").replace("X", ",").split(",") if p.strip()]
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise UsageError(f"--shape: {text!r} is not a list of integers (e.g. 1048576 or "
                         "64x128)") from None
    if not dims or any(d < 1 for d in dims):
        raise UsageError(f"--shape: {text!r}: every dimension must be >= 1")
    if len(dims) > 8:
        raise UsageError(f"--shape: {len(dims)} dimensions; aclnn tensors have at most 8")
    return dims


def _load_plugins(args) -> tuple:
    """Import the ``--plugin`` modules / files (they register operators of their own)."""
    from npusim_tools import registry
    plugins = tuple(getattr(args, "plugin", None) or ())
    for spec in plugins:
        try:
            registry.load_plugin(spec)
        except registry.RunError as exc:
            raise UsageError(f"--plugin: {exc}") from None
    return plugins


def _case(entry, shape, dtype, seed):
    """The operator's case for ``shape``: a shape the operator cannot take is a bad
    ``--shape`` (exit 2), not a failed run."""
    from npusim_tools import registry
    try:
        return registry.make_case(entry, shape, dtype, seed)
    except registry.RunError as exc:
        raise UsageError(f"--shape {'x'.join(map(str, shape))}: {exc}") from None


def _entry(name: str):
    from npusim_tools import registry
    try:
        return registry.get(name)
    except KeyError as exc:
        raise UsageError(exc.args[0] + " (an operator of your own: --plugin FILE.py)") from None


def _check_dtype_soc(entry, dtypes, socs) -> None:
    """Every (dtype, SoC) pair is one the operator takes (e.g. no bfloat16 on Ascend910A)."""
    for soc in socs:
        allowed = entry.dtypes_on(soc.short_soc_version)
        for dt in dtypes:
            if dt not in allowed:
                raise UsageError(f"--dtype: {entry.name} does not take {dt} on "
                                 f"{soc.soc_version}; there it takes {', '.join(allowed)}")


def parse_axis(text: str) -> tuple:
    """``"tileLength=1024,2048"`` -> ("tileLength", [1024, 2048]) (ints, else floats).

    Raises:
        UsageError: not NAME=VALUES, or a value that is not a number.
    """
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise UsageError(f"--axis: {text!r} is not NAME=V1,V2,... (e.g. tileLength=1024,2048)")
    if name in ("cores", "tile", "dtype", "soc", "shape", "seed"):
        raise UsageError(f"--axis: {name} has its own option (--{name})")
    out = []
    for part in (p.strip() for p in values.split(",") if p.strip()):
        try:
            out.append(int(part))
        except ValueError:
            try:
                out.append(float(part))
            except ValueError:
                raise UsageError(f"--axis {name}: {part!r} is not a number") from None
    if not out:
        raise UsageError(f"--axis {name}: no values")
    return name, out


def _dtypes(entry, text: str) -> list[str]:
    from npusim_tools import registry
    out = []
    for name in (p.strip() for p in text.split(",") if p.strip()):
        try:
            dt = registry.dtype_name(registry.resolve_dtype(name))
        except ValueError as exc:
            raise UsageError(f"--dtype: {exc}") from None
        if dt not in entry.dtypes:
            raise UsageError(f"--dtype: {entry.name} does not take {dt}; it takes "
                             f"{', '.join(entry.dtypes)}")
        out.append(dt)
    if not out:
        raise UsageError(f"--dtype: no values in {text!r}")
    return out


def _socs(entry, text: str) -> list:
    out = []
    for name in (p.strip() for p in text.split(",") if p.strip()):
        try:
            soc = npusim.get_soc(name)
        except npusim.UnknownSocError as exc:
            raise UsageError(f"--soc: {exc}") from None
        if soc.short_soc_version not in entry.socs:
            raise UsageError(f"--soc: {entry.name} does not run on {soc.soc_version}; it runs "
                             f"on {', '.join(entry.socs)} SoCs")
        out.append(soc)
    if not out:
        raise UsageError(f"--soc: no values in {text!r}")
    return out


def _check_cores(cores, socs) -> None:
    for c in cores:
        for soc in socs:
            if not 1 <= c <= soc.vector_block_num:
                raise UsageError(f"--cores: {c} is outside [1, {soc.vector_block_num}], the "
                                 f"vector cores of {soc.soc_version}")


def _check_output_path(path, what: str) -> None:
    if path is None:
        return
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"{what}: directory {directory!r} does not exist")


# -- commands --------------------------------------------------------------------------------
def cmd_socs(args) -> int:
    rows = []
    for name in npusim.list_socs():
        s = npusim.get_soc(name)
        rows.append({"SoC": s.soc_version, "short": s.short_soc_version, "arch": s.npu_arch,
                     "AIC": s.cube_core_cnt or s.ai_core_cnt, "vector cores": s.vector_block_num,
                     "MHz": s.cube_freq, "UB KiB": s.ub_size // 1024,
                     "L2 MiB": s.l2_size // (1 << 20),
                     "HBM GiB": round(s.memory_size / (1 << 30), 1),
                     "HBM TB/s": s.hbm_bandwidth / 1e12})
    print(format_table(rows, list(rows[0])))
    return EXIT_OK


def cmd_ops(args) -> int:
    from npusim_tools import registry
    _load_plugins(args)
    rows = [{"operator": e.name, "aclnn API": e.api, "dtypes": ",".join(e.dtypes),
             "SoCs": ",".join(e.socs), "tile field": e.tile_field, "what": e.summary}
            for e in (registry.get(n) for n in registry.names())]
    print(format_table(rows, list(rows[0])))
    return EXIT_OK


def cmd_run(args) -> int:
    from npusim_tools import registry
    _load_plugins(args)
    entry = _entry(args.op)
    shape = parse_shape(args.shape) if args.shape else entry.default_shape
    dtypes, socs = _dtypes(entry, args.dtype), _socs(entry, args.soc)
    if len(dtypes) != 1 or len(socs) != 1:
        raise UsageError("run takes one --dtype and one --soc (sweep takes several)")
    _check_dtype_soc(entry, dtypes, socs)
    dtype, soc = dtypes[0], socs[0]
    if args.cores is not None:
        _check_cores([args.cores], [soc])
    if args.seed < 0:
        raise UsageError("--seed must be >= 0")
    _check_output_path(args.trace, "--trace")
    _check_output_path(args.op_summary, "--op-summary")
    case = _case(entry, shape, dtype, args.seed)
    try:
        res = registry.run_aclnn(entry, case, soc.soc_version, args.cores, trace=args.trace,
                                 op_summary=args.op_summary,
                                 timing_only=True if args.timing_only else None)
    except registry.RunError as exc:
        print(f"npusim run: {exc}", file=sys.stderr)
        return EXIT_FAIL
    n = res.soc.vector_block_num
    print(f"{entry.api} shape {list(shape)} {dtype} on {res.soc.soc_version} "
          f"({n} vector core{'s' if n != 1 else ''}), seed {args.seed}")
    if args.timing_only:
        verdict = {"check": "ok"}
        print("golden check: skipped (timing-only: the outputs are not computed)")
    else:
        verdict = registry.check(entry, case, res.outputs)
        tol = entry.tolerance.get(dtype, (0.0, 0.0))
        print(f"golden check: {verdict['check']} (max abs error {verdict['max_abs_err']:.3g}, "
              f"{verdict['mismatches']} element(s) outside rtol {tol[0]:g}, atol {tol[1]:g})")
    for p in res.profiles:
        print(p.summary())
    if args.trace:
        print(f"trace: {args.trace} (open in https://ui.perfetto.dev or chrome://tracing)")
    if args.op_summary:
        print(f"op summary: {args.op_summary}")
    return EXIT_OK if verdict["check"] == "ok" else EXIT_FAIL


def cmd_sweep(args) -> int:
    from npusim_tools import registry
    plugins = _load_plugins(args)
    entry = _entry(args.op)
    axes = {}
    socs = _socs(entry, args.soc)
    axes["soc"] = [s.soc_version for s in socs]
    axes["dtype"] = _dtypes(entry, args.dtype)
    _check_dtype_soc(entry, axes["dtype"], socs)
    shape = parse_shape(args.shape) if args.shape else entry.default_shape
    axes["shape"] = shape
    if args.cores:
        cores = parse_int_list(args.cores, "--cores")
        _check_cores(cores, socs)
        axes["cores"] = cores
    if args.tile:
        tiles = parse_int_list(args.tile, "--tile")
        if any(t < 1 for t in tiles):
            raise UsageError("--tile: tile lengths must be >= 1 element")
        axes["tile"] = tiles
    own = []
    for text in args.axis or ():
        name, values = parse_axis(text)
        axes[name] = values
        own.append(name)
    swept = [k for k in ("cores", "tile", "dtype", "soc", *own) if k in axes and len(axes[k]) > 1]
    if not swept:
        raise UsageError("nothing to sweep: give several values to one of --cores, --tile, "
                         "--dtype, --soc or --axis NAME=... (e.g. --cores 1,2,4,8)")
    if args.scheduler and args.serial:
        raise UsageError("--scheduler and --serial exclude each other")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be >= 1")
    _check_output_path(args.plot, "--plot")
    _check_output_path(args.csv, "--csv")
    if args.seed < 0:
        raise UsageError("--seed must be >= 0")
    case = _case(entry, shape, axes["dtype"][0], args.seed)   # the same for every point
    unknown = sorted(set(own) - set(case.attrs))
    if unknown:
        raise UsageError(f"--axis: {entry.name} has no attribute {', '.join(unknown)}; its "
                         f"attributes: {', '.join(sorted(case.attrs)) or 'none'}")
    executor = "serial" if args.serial else None
    result = run_sweep(registry.runner(entry.name, args.seed, plugins=plugins,
                                       timing_only=args.timing_only),
                       executor=executor, scheduler=args.scheduler, jobs=args.jobs,
                       progress=not args.no_progress, desc=entry.name,
                       timing_only=args.timing_only, **axes)
    print(f"{entry.api} shape {list(shape)}: {len(result)} points in {result.wall_s:.1f} s "
          f"({result.executor})")
    print(result.table())
    for r in result.errors:
        print(f"point {', '.join(f'{k}={r.get(k)}' for k in swept)} failed: {r['error']}",
              file=sys.stderr)
    if args.csv:
        result.to_csv(args.csv)
        print(f"csv: {args.csv}")
    if args.plot and len(result.errors) < len(result):
        result.plot(args.plot, x=swept[0])
        print(f"plot: {args.plot}")
    failed = [r for r in result.records if r.get("error") or r.get("check") == "FAIL"]
    return EXIT_FAIL if failed else EXIT_OK


def cmd_timeline(args) -> int:
    from npusim.plot import plot_timeline
    from npusim.trace import TraceFormatError, load_trace
    _check_output_path(args.plot, "--plot")
    try:
        trace = load_trace(args.trace)
    except FileNotFoundError:
        raise UsageError(f"{args.trace}: no such file") from None
    except (OSError, TraceFormatError) as exc:
        raise UsageError(f"{args.trace}: {exc}") from None
    cores, cube_cores = parse_core_list(args.cores) if args.cores else (None, None)
    window = None
    if args.window:
        try:
            window = tuple(float(v) for v in args.window.split(","))
        except ValueError:
            window = ()
        if len(window) != 2 or not window[0] < window[1]:
            raise UsageError(f"--window: {args.window!r} is not START,END in µs with START < END")
    fig = plot_timeline(trace, args.plot, cores=cores, cube_cores=cube_cores, window=window,
                        copies=args.copies)
    n_rows = len(fig.axes[0].get_yticks())
    print(f"timeline: {args.plot} ({n_rows} rows)")
    return EXIT_OK


def cmd_pyasc(args) -> int:
    """``npusim pyasc``: the script and pyasc itself are checked first (exit 2), so that
    status 1 means the script ran and failed."""
    import importlib.util
    from npusim.pyasc import __main__ as pyasc_main
    if not os.path.isfile(args.script):
        raise UsageError(f"{args.script}: no such file")
    if importlib.util.find_spec("asc") is None:
        raise UsageError("npusim pyasc needs pyasc: pip install '.[pyasc]' in the npusim "
                         "checkout (pyasc has wheels for CPython 3.9-3.12)")
    _check_output_path(args.trace, "--trace")
    _check_output_path(args.op_summary, "--op-summary")
    return pyasc_main.run(args)


def cmd_cpp(args) -> int:
    """``npusim cpp SOURCE``: build an Ascend C source (cached) against the user's headers and
    run its own host ``main`` on a simulated device in ``--cwd``; print each launch's
    profile. Exit 0 when main returned 0, 1 otherwise."""
    import npusim.cpp as cpp
    if not os.path.isfile(args.source):
        raise UsageError(f"{args.source}: no such file")
    try:
        cpp.find_compiler()
        cpp.find_devkit(args.devkit)
    except cpp.CppBuildError as exc:
        raise UsageError(str(exc)) from None
    from npusim.soc import list_socs
    if args.soc not in list_socs():
        raise UsageError(f"--soc {args.soc!r}: not a preset ({', '.join(list_socs())})")
    if not args.soc.startswith(cpp.builder.A2_SOCS):
        raise UsageError(f"--soc {args.soc}: the C++ front end builds for Atlas A2/A3 "
                         "(dav-c220) only")
    run = cpp.run_host(args.source, soc=args.soc, cwd=args.cwd, argv=args.args,
                       devkit=args.devkit, defines=args.define or ())
    for prof in run.profiles:
        print(prof.summary())
    print(f"main returned {run.status}, {len(run.profiles)} launch(es)")
    return EXIT_OK if run.status == 0 else EXIT_FAIL


_PLUGIN_HELP = ("a module or .py file to import first: it registers operators of your own "
                "(npusim_tools.registry.register_custom); repeatable")


_TIMING_ONLY_HELP = ("run the kernels timing-only: the same timing and profiles, the "
                     "results not computed (no golden check), in a fraction of the time")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="npusim", description="Study tools of the simulated Ascend NPU.")
    p.add_argument("--version", action="version", version=f"npusim {npusim.__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    sub.add_parser("socs", help="the SoC presets").set_defaults(func=cmd_socs)
    o = sub.add_parser("ops", help="the operators run and sweep know")
    o.add_argument("--plugin", action="append", help=_PLUGIN_HELP)
    o.set_defaults(func=cmd_ops)

    r = sub.add_parser("run", help="run an operator on random data and check it")
    r.add_argument("op")
    r.add_argument("--shape", help="e.g. 1048576 or 64x128 (default: the op's)")
    r.add_argument("--dtype", default="float32")
    r.add_argument("--soc", default=npusim.DEFAULT_SOC)
    r.add_argument("--cores", type=int, help="vector cores to use (max_cores)")
    r.add_argument("--trace", help="write a Chrome trace JSON (turns profiling on)")
    r.add_argument("--op-summary", dest="op_summary", help="write the op summary CSV")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--timing-only", dest="timing_only", action="store_true",
                   help=_TIMING_ONLY_HELP)
    r.add_argument("--plugin", action="append", help=_PLUGIN_HELP)
    r.set_defaults(func=cmd_run)

    s = sub.add_parser("sweep", help="sweep cores, tile length, dtype or SoC")
    s.add_argument("op")
    s.add_argument("--cores", help="e.g. 1,2,4,8,16,32,48 or 1-48")
    s.add_argument("--tile", help="UB tile lengths in elements, e.g. 1024,2048,4096")
    s.add_argument("--dtype", default="float32", help="one or several, e.g. float32,float16")
    s.add_argument("--soc", default=npusim.DEFAULT_SOC, help="one or several SoC names")
    s.add_argument("--shape", help="e.g. 1048576 or 64x128 (default: the op's)")
    s.add_argument("--plot", help="write the plot (PNG)")
    s.add_argument("--csv", help="write every record as CSV")
    s.add_argument("--jobs", type=int, help="local worker processes (default: CPUs)")
    s.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786")
    s.add_argument("--serial", action="store_true", help="run the points in this process")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--timing-only", dest="timing_only", action="store_true",
                   help=_TIMING_ONLY_HELP)
    s.add_argument("--axis", action="append", metavar="NAME=V1,V2",
                   help="sweep an attribute of the operator (an axis of your own), e.g. "
                        "tileLength=1024,4096; repeatable")
    s.add_argument("--plugin", action="append", help=_PLUGIN_HELP)
    s.set_defaults(func=cmd_sweep)

    t = sub.add_parser("timeline", help="Gantt chart of a trace")
    t.add_argument("trace")
    t.add_argument("--plot", required=True, help="the PNG to write")
    t.add_argument("--cores", help="cores to show (default: all): vector cores as 0-3 or "
                                   "aiv0-3 (the AIV rows; AI Core on 910A/310P), cube cores "
                                   "as aic0-1 (the AIC rows); e.g. aic0-1,aiv0-3")
    t.add_argument("--window", help="START,END: the part of the device clock to show (µs; "
                                    "default: the kernels' span)")
    t.add_argument("--copies", action="store_true",
                   help="show the host<->device copy rows and frame the whole trace")
    t.set_defaults(func=cmd_timeline)

    from npusim.pyasc import __main__ as pyasc_main      # no pyasc import until it runs
    y = sub.add_parser("pyasc", help="run a pyasc (import asc) script on npusim")
    pyasc_main.add_arguments(y)
    y.set_defaults(func=cmd_pyasc)

    c = sub.add_parser("cpp", help="build an Ascend C (C++) program and run its main on npusim")
    c.add_argument("source", help="the .cpp/.asc file holding the kernel and its host main")
    c.add_argument("args", nargs="*", help="arguments passed to its main")
    c.add_argument("--soc", default="Ascend910B1", help="an A2/A3 SoC preset")
    c.add_argument("--cwd", help="folder main runs in (its relative paths; default: here)")
    c.add_argument("--devkit", help="asc-devkit or CANN Ascend C headers "
                                    "(default: $NPUSIM_ASC_DEVKIT, then CANN)")
    c.add_argument("-D", dest="define", action="append", metavar="NAME=VALUE",
                   help="a preprocessor definition, e.g. -D SCENARIO_NUM=1; repeatable")
    c.set_defaults(func=cmd_cpp)
    return p


def main(argv=None) -> int:
    """Run the command; return the exit status (see the module docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except UsageError as exc:
        print(f"npusim: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("npusim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:              # output piped into head & co.
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:              # one line, never a traceback
        if os.environ.get("NPUSIM_DEBUG"):
            raise
        print(f"npusim: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
