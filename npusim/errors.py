"""Errors raised by the simulated machine.

Two families, as on real hardware:

* :class:`KernelError` and its subclasses: kernel code broke a hardware or Ascend C rule
  (UB overflow, misaligned copy, GM out of bounds, a bad eventID...). The message names
  the core, the pipe, the instruction, the rule and the kernel source line, in the
  spirit of Ascend C's CPU-debug checker. At the host API such an error surfaces as an
  AI-core exception status (``ACL_ERROR_RT_AICORE_EXCEPTION``, 507015) at synchronize.
* :class:`DeviceError` and its subclasses: a runtime-level failure outside a kernel
  (out of device memory, an unknown pointer). The host API maps them to ``ACL_ERROR_RT_*``
  status codes (``docs/reference/api.md`` §6); it never lets them escape to the user.
"""
from __future__ import annotations

import os
import sys
import types

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
#: the operators' kernels (npusim.kernels: tiling, kernel, golden per operator) are kernel
#: code, not the simulator's: their lines are the ones an error or a span names; their
#: shared helpers (npusim.kernels.common) are library code, like Ascend C's own
_KERNELS_DIR = os.path.join(_PKG_DIR, "kernels")
_KERNELS_COMMON = os.path.join(_KERNELS_DIR, "common")


class NpuSimError(Exception):
    """Base class of every simulator error."""


class DeviceError(NpuSimError):
    """A runtime failure outside kernel code."""


class OutOfDeviceMemory(DeviceError):
    """Global memory cannot hold the requested allocation (maps to 207001)."""


class InvalidDevicePointer(DeviceError):
    """A pointer that is not the start of a live allocation was freed (maps to 207002)."""


#: (code object, its file) -> the file's base name if it lies outside the ``npusim``
#: package, else None (kernel_source_line runs on every SetFlag; resolving paths once per
#: function keeps it cheap). The file is part of the key because code objects compare equal
#: without it: the same function at the same line of two files would share one entry.
_OUTSIDE: dict = {}


def _outside_name(code) -> str | None:
    key = (code, code.co_filename)
    name = _OUTSIDE.get(key, False)
    if name is False:
        path = os.path.abspath(code.co_filename)
        inside = (path.startswith(_PKG_DIR + os.sep)
                  and not (path.startswith(_KERNELS_DIR + os.sep)
                           and not path.startswith(_KERNELS_COMMON + os.sep)))
        name = None if inside else os.path.basename(path)
        _OUTSIDE[key] = name
    return name


def kernel_source_line() -> str:
    """Return ``file:line`` of the innermost frame outside the ``npusim`` package (an
    operator's own files under ``npusim.kernels`` count as outside: they are kernel code).

    That frame is the kernel statement that issued the current instruction.
    """
    frame = sys._getframe(1)
    known = _OUTSIDE.get
    while frame is not None:
        code = frame.f_code
        name = known((code, code.co_filename), False)   # _outside_name, without a call
        if name is False:
            name = _outside_name(code)
        if name is not None:
            if name.__class__ is str:
                return f"{name}:{frame.f_lineno}"
            line = name(frame)              # another front end's frame (register_native_frame)
            if line is not None:
                return line
        frame = frame.f_back
    return "?"


def register_native_frame(code, resolver) -> None:
    """Let :func:`kernel_source_line` ask ``resolver(frame)`` for the kernel line when its
    walk reaches a frame running ``code``: the entry of a front end whose kernel code is not
    Python (the C++ front end's intrinsic callback, npusim.cpp.sourceline). The resolver
    returns ``file:line``, or None to go on with the frames outside."""
    _OUTSIDE[(code, code.co_filename)] = resolver


def full_tracebacks() -> bool:
    """Whether simulator errors keep the simulator's own frames in their tracebacks: the
    environment variable ``NPUSIM_FULL_TRACEBACK`` set to 1 (read at each error)."""
    return os.environ.get("NPUSIM_FULL_TRACEBACK", "").strip().lower() in ("1", "true", "yes",
                                                                           "on")


def trim_traceback(exc: BaseException) -> BaseException:
    """Drop the frames of the ``npusim`` package from the traceback of ``exc`` and of the
    exceptions chained to it, keeping the caller's and the kernel's (outside the package),
    innermost last: a kernel error then reads as the kernel's lines leading to the
    instruction that broke the rule. Unchanged when :func:`full_tracebacks` is on.
    Returns ``exc``; re-raise it with a bare ``raise`` so that no frame is added."""
    if full_tracebacks():
        return exc
    seen = set()
    link = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        kept = []
        tb = link.__traceback__
        while tb is not None:
            if _outside_name(tb.tb_frame.f_code) is not None:
                kept.append(tb)
            tb = tb.tb_next
        new = None
        for tb in reversed(kept):
            new = types.TracebackType(new, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
        link.__traceback__ = new
        link = link.__cause__ or link.__context__
    return exc


class KernelError(NpuSimError):
    """Kernel code broke a rule of the machine or of Ascend C.

    Attributes:
        category: short rule family ("UB", "Alignment", "GM", "Sync", "Dtype", "Limit").
        core: block index of the offending core, or None outside a kernel.
        pipe: pipe name ("PIPE_V", "PIPE_MTE2", ...), or None.
        instruction: the Ascend C call ("DataCopy", "Add", "InitBuffer", ...).
        rule: what was violated, with the source document section.
        line: ``file:line`` of the kernel statement.
    """

    category = "Kernel"

    def __init__(self, instruction: str, rule: str, *, pipe: str | None = None,
                 core: int | None = None, line: str | None = None):
        if core is None:
            from npusim.ascendc import core as _core  # local: avoid an import cycle
            cur = _core.current_core_or_none()
            core = cur.block_idx if cur is not None else None
        self.instruction = instruction
        self.rule = rule
        self.pipe = pipe
        self.core = core
        self.line = line if line is not None else kernel_source_line()
        where = f"core {core}" if core is not None else "host"
        pipe_s = f", {pipe}" if pipe else ""
        super().__init__(f"[{self.category}] {where}{pipe_s}, {instruction} at {self.line}: {rule}")


class UbError(KernelError):
    """Unified-buffer capacity or bounds violated."""

    category = "UB"


class AlignmentError(KernelError):
    """An address or length breaks an alignment rule."""

    category = "Alignment"


class GmAccessError(KernelError):
    """A global-memory access falls outside the allocation it was built on."""

    category = "GM"


class SyncError(KernelError):
    """Pipe synchronisation misuse (unpaired flags, a reserved eventID, a missing hand-off)."""

    category = "Sync"


class DtypeError(KernelError):
    """An instruction used a data type the SoC's vector unit does not support."""

    category = "Dtype"


class LimitError(KernelError):
    """A documented count limit or parameter range was exceeded (buffers, repeatTime,
    blockDim, an eventID, a DataCopy/LoadData/Fixpipe/Mmad field...): the message names the
    field, its range and the page that documents it."""

    category = "Limit"
