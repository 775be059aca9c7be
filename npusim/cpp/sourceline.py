"""The C++ source line of the intrinsic a kernel is running, for checker messages and profile
spans (:func:`npusim.errors.kernel_source_line`), as the Python surface names a Python
kernel's line.

An intrinsic is called from the Ascend C headers (``DataCopy`` -> ``DataCopyImpl`` ->
``copy_gm_to_ubuf``), most of them inlined into the kernel, so the user's line is found in
the call chain: the runtime (include/npusim_runtime.cpp) notes, at each intrinsic, the return
addresses of the library's frames, following the frame pointers up to the kernel function
that Python called. When a line is asked for, each address is mapped once (then cached per
library and address) to its chain of inlined calls by ``addr2line -i`` with the library's
line tables (``-g1``); the line is the innermost call in the user's own files: the folder of
the source that defines the kernel function (or ``main``), npusim's layer excluded. A
library built without line tables or frame pointers gives None, and the message falls back
to the Python line that launched the kernel.
"""
from __future__ import annotations

import ctypes
import os
import re
import struct
import subprocess

from npusim import errors
from npusim.cpp import corestate
from npusim.cpp.builder import INCLUDE_DIR

MAX_FRAMES = 24
_INCLUDE = str(INCLUDE_DIR) + os.sep
_LOC = re.compile(r"^(.*):(\d+)(?: \(discriminator \d+\))?$")


class LineTable:
    """Address -> inlined call chain ((file, line), innermost first) of one library."""

    def __init__(self, lib: ctypes.CDLL):
        self.path = lib._name
        self.chains: dict[int, tuple] = {}
        self.lines: dict[bytes, str | None] = {}      # a whole call chain -> its answer
        try:                             # the runtime's noted frames (include/npusim_runtime.cpp)
            self.count = ctypes.c_int32.in_dll(lib, "npusim_frame_count")
            self.pcs = ctypes.addressof(ctypes.c_uint64.in_dll(lib, "npusim_frame_pc"))
            self.raw = memoryview((ctypes.c_uint8 * (8 * MAX_FRAMES)).from_address(self.pcs))
            self.bias = ctypes.c_uint64.in_dll(lib, "npusim_load_bias")
        except ValueError:               # a library of an older layer
            self.count = None

    def resolve(self, addrs) -> None:
        """Map the addresses not seen yet (one addr2line run for all of them)."""
        todo = [a for a in addrs if a not in self.chains]
        if not todo:
            return
        try:
            out = subprocess.run(["addr2line", "-i", "-a", "-e", self.path,
                                  *[f"0x{a:x}" for a in todo]],
                                 capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        got, cur = {}, None
        for row in out.splitlines():
            if row.startswith("0x"):
                cur = int(row, 16)
                got[cur] = []
                continue
            m = _LOC.match(row.strip())
            if cur is not None and m and m.group(1) != "??":
                got[cur].append((m.group(1), int(m.group(2))))
        for a in todo:
            self.chains[a] = tuple(got.get(a, ()))

    def line(self) -> str | None:
        """``file:line`` of the current intrinsic's call in the user's files, or None."""
        if self.count is None:
            return None
        n = self.count.value
        if n <= 0:
            return None
        key = self.raw[:8 * n].tobytes()              # read in place: no foreign call
        got = self.lines.get(key, False)
        if got is not False:
            return got
        bias = self.bias.value
        addrs = [pc - bias - 1 for pc in struct.unpack(f"<{n}Q", key)]   # inside each call
        self.resolve(addrs)
        chain = [loc for a in addrs for loc in self.chains[a]]      # innermost first
        got = None
        if chain:
            home = os.path.dirname(chain[-1][0]) + os.sep           # the kernel's own folder
            for path, lineno in chain:
                if path.startswith(home) and not path.startswith(_INCLUDE) and lineno:
                    got = f"{os.path.basename(path)}:{lineno}"
                    break
        self.lines[key] = got
        return got


_TABLES: dict = {}


def _table(rt) -> LineTable:
    t = _TABLES.get(id(rt.lib))
    if t is None or t.path != rt.lib._name:
        t = _TABLES[id(rt.lib)] = LineTable(rt.lib)
    return t


def dispatch_line(frame) -> str | None:
    """The resolver of the intrinsic callback's frame (KernelRuntime._dispatch)."""
    rt = frame.f_locals.get("self")
    if rt is None or getattr(rt, "lib", None) is None:
        return None
    from npusim.ascendc import core as _core
    ctx = _core._current
    if ctx is not None:
        corestate.ensure(ctx)          # this core's C++ state (its noted frames) is loaded
    return _table(rt).line()


def install() -> None:
    """Name C++ lines in kernel_source_line (done when npusim.cpp is imported)."""
    from npusim.cpp.dispatch import KernelRuntime
    errors.register_native_frame(KernelRuntime._dispatch.__code__, dispatch_line)
