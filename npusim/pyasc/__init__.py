"""Run pyasc kernels (Huawei's Python Ascend C, ``import asc``) on npusim.

A pyasc script runs unchanged::

    npusim pyasc path/to/add.py              # or: python -m npusim.pyasc path/to/add.py

or opts in from Python before it launches anything::

    import npusim.pyasc
    npusim.pyasc.enable(soc="Ascend910B1")
    ...                                      # asc.jit kernels, kernel[core_num, stream](...)
    for launch in npusim.pyasc.launches():
        print(launch.profile.summary())

Both of pyasc's backends (``config.Backend.Model`` and ``config.Backend.NPU``) then run on
simulated devices: ``asc.lib.runtime`` (devices, streams, ``current_stream``, memory,
device information) answers from npusim (:mod:`npusim.pyasc._runtime`), ``config.set_platform``
takes npusim's SoC, ``asc.lib.host`` (the platform and the Matmul tiling classes) is
npusim's (:mod:`npusim.pyasc._host`), and ``kernel[core_num, stream](x, y, ...)`` copies
numpy arrays and torch CPU tensors to device memory and back, as pyasc does
(:mod:`npusim.pyasc._session`).

Design: how a kernel runs
-------------------------
Two designs were possible: interpret pyasc's own ASC-IR, or execute the
decorated Python functions with an ``asc`` namespace bound to npusim's implementations.
npusim does the second, and still runs pyasc's front end first:

* **Execution** is the decorated function's own Python body, recompiled at its own file
  and line numbers, with ``asc`` bound to :mod:`npusim.pyasc._api` (every ``asc.language``
  name mapped to npusim's Ascend C function of the same API, pyasc's argument order mapped
  to the C++ one) and ``with`` blocks given pyasc's loop meaning (:mod:`npusim.pyasc._exec`).
  Reasons: (1) pyasc 1.1.1's IR bindings expose no way to walk a module's operations, read
  their attributes or their locations (``Operation`` has ``get_name``/``get_operand`` and a
  few typed attribute getters by name, ``Block`` no operation list), so interpreting the IR
  would mean parsing MLIR text for some four hundred ``ascendc`` operations; (2) running the
  Python itself makes every error — npusim's checker findings, a missing API, a Python
  mistake — point at the user's own line with a normal traceback, and lets a
  user step through a kernel in a debugger; (3) it adds no interpretation layer, so a
  launch costs what the same kernel costs written against :mod:`npusim.ascendc`.
* **pyasc's front end** (its code generator to ASC-IR and its lowering passes, which need
  no CANN) runs at every launch unless ``enable(frontend=False)``: a kernel pyasc would
  reject is rejected with pyasc's own error, the kernel type is the one pyasc's passes
  decide (``AIV_ONLY``; ``MIX_AIC_1_2``, or ``AIC_ONLY`` with ``matmul_cube_only=True``, for
  cube code), and ``PYASC_DUMP_PATH`` receives the ASC-IR and the Ascend C source.
  ``Launch.frontend_s`` and ``Launch.npusim_s`` give the split of host time.
* The trade-off: Python control flow on runtime values is Python's (pyasc turns it into
  ``scf`` ops with the same meaning), and integer scalars follow pyasc's C semantics only
  through :class:`npusim.pyasc._values.Int` (``//`` truncates toward zero); the IR is
  checked, not executed.

``auto_sync=True`` (pyasc's default, ``bisheng --cce-auto-sync``) is honoured: where the
checker finds two pipes of a core touching the same bytes with no flag, queue hand-off or
barrier in between, the flag pair the compiler would insert is recorded instead of a
finding (:class:`npusim.pyasc._session.AutoSyncTracker`), so the timeline pays for it;
``auto_sync=False`` gets the checker's Sync findings.

What is not supported fails clearly: an ``asc`` API npusim lacks raises
:class:`PyascNotSupported` naming it (:func:`coverage` lists both sides); kernel types
npusim cannot launch are refused at the launch.
"""
from __future__ import annotations

import runpy
import sys

from npusim.ascendc.checker import CheckerConfig
from npusim.pyasc._api import PyascNotSupported

_state: dict = {"session": None, "saved": None}


def _require_asc():
    try:
        import asc  # noqa: F401
    except ImportError as exc:
        raise ImportError("npusim.pyasc needs pyasc: pip install '.[pyasc]' in the npusim "
                          "checkout (pyasc has wheels for CPython 3.9-3.12 on manylinux "
                          "x86_64/aarch64)") from exc


def enable(soc: str = "Ascend910B1", *, frontend: bool = True, profiling: bool = False,
           checks: CheckerConfig | None = None, device_count: int = 1):
    """Make pyasc run on npusim from now on (idempotent: a second call starts afresh).

    Args:
        soc: the SoC the simulated devices are (a pyasc ``Platform`` name; ``set_platform``
            with the Model backend and no SoC uses it too).
        frontend: run pyasc's code generator and passes at each launch (module doc).
        profiling: keep every instruction's span, for ``npusim.trace`` timelines.
        checks: the kernel checker's configuration (default: every category an error).
        device_count: devices ``asc.lib.runtime.device_count()`` reports.

    Returns:
        The :class:`npusim.pyasc._session.Session` (devices, streams, launches).

    Raises:
        ImportError: pyasc is not installed.
    """
    _require_asc()
    from npusim.pyasc import _patch
    from npusim.pyasc._session import Session
    if _state["session"] is not None:
        disable()
    session = Session(soc, frontend=frontend, profiling=profiling, checks=checks,
                      device_count=device_count)
    _state["saved"] = _patch.install(session)
    _state["session"] = session
    _attach_torch(session, soc, device_count, profiling)
    return session


def _attach_torch(session, soc: str, device_count: int, profiling: bool) -> None:
    """Where torch is installed, register its device "npu" (``aclnn.torch_npu``) and run
    the session on its devices, so that a kernel given an npu tensor works on it in
    place, as pyasc's tests and tutorials do on hardware with torch_npu."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    import importlib
    torch_npu = importlib.import_module("aclnn.torch_npu")
    torch_npu.enable(soc, device_count=device_count, profiling=profiling)
    from aclnn.torch_npu import _runtime
    session.device_provider = _runtime.device_of


def disable() -> None:
    """Give pyasc back its own runtime, compiler and launcher."""
    from npusim.pyasc import _patch
    if _state["session"] is not None:
        _patch.uninstall(_state["saved"])
    _state["session"] = _state["saved"] = None


def session():
    """The active session, or None."""
    return _state["session"]


def launches() -> list:
    """The :class:`npusim.pyasc._session.Launch` records of the active session, in order."""
    s = _state["session"]
    return list(s.launches) if s is not None else []


def coverage() -> dict:
    """{"mapped": [...], "missing": [...]}: the pyasc APIs npusim runs and those it lacks."""
    _require_asc()
    from npusim.pyasc import _api
    return _api.coverage()


def run_script(path: str, argv: list[str] | None = None, **options) -> list:
    """Run the pyasc script at ``path`` as ``__main__`` on npusim; return its launches.

    ``options`` go to :func:`enable`; ``argv`` becomes the script's ``sys.argv[1:]``.
    """
    enable(**options)
    saved_argv = sys.argv
    sys.argv = [str(path), *(argv or [])]
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        sys.argv = saved_argv
    return launches()


def report(records: list | None = None) -> str:
    """A text report of launches: the msprof-style profile and the host-time split."""
    records = launches() if records is None else records
    out = []
    for r in records:
        out.append(f"{r.name}[{r.block_dim}] {r.kernel_type.name}, auto_sync={r.auto_sync}"
                   + (f" ({r.auto_flags} flag pairs inserted)" if r.auto_flags else ""))
        if r.profile is not None:
            out.append("  " + r.profile.summary().replace("\n", "\n  "))
        out.append(f"  host time: pyasc front end {r.frontend_s:.3f} s, npusim {r.npusim_s:.3f} s")
    return "\n".join(out)


__all__ = ["enable", "disable", "session", "launches", "coverage", "run_script", "report",
           "PyascNotSupported"]
