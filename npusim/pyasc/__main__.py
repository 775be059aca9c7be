"""``python -m npusim.pyasc script.py [args...]``: run a pyasc script on npusim.

Options (before the script): ``--soc NAME`` (default Ascend910B1), ``--no-frontend``
(skip pyasc's code generator), ``--trace FILE`` (a Chrome/Perfetto trace of every device:
kernels per core and pipe, copies), ``--op-summary FILE`` (msprof-style op summary CSV),
``--quiet`` (no report). After the script the launches' profiles and the host-time split
are printed (:func:`npusim.pyasc.report`).
"""
from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options and arguments (shared with ``npusim pyasc``)."""
    parser.add_argument("--soc", default="Ascend910B1", help="simulated SoC (pyasc Platform name)")
    parser.add_argument("--no-frontend", action="store_true",
                        help="do not run pyasc's code generator and passes at each launch")
    parser.add_argument("--trace", help="write a Chrome trace JSON (turns profiling on)")
    parser.add_argument("--op-summary", dest="op_summary", help="write the op summary CSV")
    parser.add_argument("--quiet", action="store_true", help="print no profile report")
    parser.add_argument("script", help="the pyasc script")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")


def run(ns: argparse.Namespace) -> int:
    """Run the script of parsed arguments ``ns``; print the report; write the files."""
    import npusim.pyasc as pyasc
    records = pyasc.run_script(ns.script, ns.args, soc=ns.soc, frontend=not ns.no_frontend,
                               profiling=bool(ns.trace))
    devices = list(pyasc.session().devices.values())
    if not ns.quiet:
        print(pyasc.report(records))
    if ns.trace:
        from npusim.trace import write_trace
        write_trace(ns.trace, devices)
        print(f"trace: {ns.trace} (open in https://ui.perfetto.dev or chrome://tracing)")
    if ns.op_summary:
        from npusim.profiling import write_op_summary
        write_op_summary(ns.op_summary, devices)
        print(f"op summary: {ns.op_summary}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npusim.pyasc",
                                     description="Run a pyasc (import asc) script on npusim.")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
