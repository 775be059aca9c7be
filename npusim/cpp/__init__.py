"""Ascend C kernels in C++, as their users write them, on npusim.

    import npusim.cpp
    from npusim import run_kernel

    kernel = npusim.cpp.load("add_custom.cpp", "add_custom")      # g++, cached
    profile = run_kernel(kernel, 8, (x, y, z, total_length), soc=soc, gm=gm)

The source compiles with the host compiler against the user's own Ascend C headers
(``NPUSIM_ASC_DEVKIT`` or a CANN installation) in their CPU-debug configuration, with npusim's
intrinsic layer standing in for Huawei's closed CPU library (:mod:`npusim.cpp.builder`). Every
CCE intrinsic the kernel calls runs as npusim.ascendc's level-0 instruction on the current
core (:mod:`npusim.cpp.dispatch`): one engine, one checker, one timing model. docs/cpp.md.
"""
from __future__ import annotations

import ctypes
import re
import subprocess

from npusim.ascendc import core as _core
from npusim.cpp.builder import Build, CppBuildError, build, find_compiler, find_devkit
from npusim.cpp.dispatch import HeaderAssertion, KernelRuntime, abort_as_error, run_block
from npusim.cpp import sourceline as _sourceline
from npusim.errors import KernelError

__all__ = ["CppKernel", "CppBuildError", "HeaderAssertion", "HostRun", "load", "run_host", "build", "find_devkit",
           "find_compiler"]

#: C++ parameter types (as c++filt spells them) -> ctypes; any pointer is a device address.
_CTYPES = {
    "bool": ctypes.c_bool, "char": ctypes.c_char, "signed char": ctypes.c_int8,
    "unsigned char": ctypes.c_uint8, "short": ctypes.c_int16, "unsigned short": ctypes.c_uint16,
    "int": ctypes.c_int32, "unsigned int": ctypes.c_uint32, "long": ctypes.c_int64,
    "unsigned long": ctypes.c_uint64, "long long": ctypes.c_int64,
    "unsigned long long": ctypes.c_uint64, "float": ctypes.c_float, "double": ctypes.c_double,
}
_LIBS: dict = {}     # library path -> (CDLL, KernelRuntime): a library loads once per process
_sourceline.install()  # checker messages and profile spans name the kernel's C++ line


def _symbols(lib_path) -> dict:
    """Demangled signature -> mangled name of the library's defined functions."""
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib_path)], capture_output=True,
                         text=True, check=True).stdout
    mangled = [line.split()[-1] for line in out.splitlines() if " T " in line]
    demangled = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True,
                               text=True, check=True).stdout.splitlines()
    return dict(zip(demangled, mangled))


def _open_path(path):
    got = _LIBS.get(str(path))
    if got is None:
        lib = ctypes.CDLL(str(path))
        got = _LIBS[str(path)] = (lib, KernelRuntime(lib))
    return got


def _open(b: Build):
    return _open_path(b.library)


class CppKernel:
    """A ``__global__`` function of a compiled Ascend C source, launchable by
    :func:`npusim.run_kernel` like a Python kernel (it runs one block per call).

    Arguments are those of the C++ signature: a pointer parameter (``GM_ADDR``,
    ``__gm__ T*``) takes a device address (an int from ``GlobalMemory.malloc``) or ``bytes``
    (host memory its scalar code reads, e.g. a tiling struct ``GM_ADDR tiling`` points to:
    the kernel gets a pointer to a copy) or an object with ``__bytes__`` (a TilingData that
    packs itself as its C struct: so a C++ kernel is the ``kernel`` of an
    :class:`aclnn.custom.CustomOp`, whose tiling function returns such an object with its
    ``blockDim``), a scalar a Python number. Struct parameters passed
    by value are not supported yet.
    """

    #: run_kernel runs C++ kernels block after block (no lockstep groups), and only
    #: functionally (C++ scalar code reads UB through host pointers, unseen by the
    #: timing-only mode's tracking of uncomputed bytes)
    npusim_lockstep = False
    npusim_timing_only = False

    def __init__(self, b: Build, name: str, core: str):
        self.build = b
        self.core = core
        self.__name__ = name
        self.lib, self.rt = _open(b)
        syms = _symbols(b.library)
        found = [s for s in syms if s.startswith(name + "(")]
        if len(found) != 1:
            raise CppBuildError(f"kernel {name!r} not found in {b.library.name} (functions: "
                                f"{', '.join(s for s in syms if not s.startswith('npusim'))})")
        sig = found[0]
        self.signature = sig
        params = [p.strip() for p in sig[len(name) + 1:-1].split(",") if p.strip()]
        self.pointers = [p.endswith("*") for p in params]
        argtypes = []
        for p in params:
            if p.endswith("*"):
                argtypes.append(ctypes.c_void_p)
            elif p in _CTYPES:
                argtypes.append(_CTYPES[p])
            else:
                raise CppBuildError(f"{sig}: parameter type {p!r} is not supported yet")
        self.fn = getattr(self.lib, syms[sig])
        self.fn.argtypes = argtypes
        self.fn.restype = None

    def __call__(self, *args):
        """Run one core (inside :func:`npusim.run_kernel`)."""
        ctx = _core.current_core()
        rt, fn = self.rt, self.fn
        if len(args) != len(self.pointers):
            raise KernelError(self.__name__, f"takes {len(self.pointers)} arguments "
                              f"({self.signature}), got {len(args)}")
        rt.map_gm(ctx.gm)
        cargs, keep = [], []
        for a, is_ptr in zip(args, self.pointers):
            if is_ptr and not isinstance(a, (bytes, bytearray)) and hasattr(a, "__bytes__"):
                a = bytes(a)             # a TilingData packing itself as its C struct
            if is_ptr and isinstance(a, (bytes, bytearray)):
                # host bytes the kernel's scalar code reads (a tiling struct, as the
                # runtime places it beside the arguments): a pointer to a copy
                buf = ctypes.create_string_buffer(bytes(a), max(1, len(a)))
                keep.append(buf)
                a = ctypes.addressof(buf)
            elif is_ptr and a:
                a = rt.host_pointer(ctx.gm, int(a))
            cargs.append(a)
        run_block(rt, fn, cargs)

    def __repr__(self):
        return f"<CppKernel {self.signature} from {self.build.library}>"


def load(source, name: str | None = None, *, core: str | None = None, devkit=None, defines=(),
         include=(), force: bool = False) -> CppKernel:
    """Build ``source`` (cached) and return its kernel ``name`` (default: the only
    ``__global__`` function the source defines, found by name in its text). A cube kernel
    (``__cube__``, built for the AIC) launches with
    ``run_kernel(..., kernel_type=KernelMetaType.KERNEL_TYPE_AIC_ONLY)``.

    Raises:
        CppBuildError: no compiler or headers, a compile error, or no such kernel.
    """
    b = build(source, core=core, devkit=devkit, defines=defines, include=include, force=force)
    if name is None:
        text = open(source, errors="replace").read()
        from npusim.cpp.builder import kernel_types, selected_text
        names = list(kernel_types(selected_text(text, defines)))
        if len(set(names)) != 1:
            raise CppBuildError(f"name the kernel to load: {source} defines "
                                f"{sorted(set(names)) or 'no __global__ function'}")
        name = names[0]
    return CppKernel(b, name, b.core)


class HostRun:
    """What a sample's host program did: its exit status and its launches' profiles."""

    def __init__(self, status: int, profiles: list, build: Build):
        self.status = status
        self.profiles = profiles
        self.build = build

    def __repr__(self):
        return f"<HostRun status {self.status}, {len(self.profiles)} launches>"


def run_host(source, *, soc="Ascend910B1", cwd=None, argv=(), core: str | None = None, devkit=None,
             defines=(), include=(), checks=None, force: bool = False) -> HostRun:
    """Build ``source`` (cached) and run its own host ``main`` on a fresh simulated device:
    its aclrt* calls (npusim/cpp/include/acl/acl.h) allocate and copy npusim GM, and each
    ``kernel<<<blockDim, l2ctrl, stream>>>(...)`` (or ``ICPU_RUN_KF``) is a
    :func:`npusim.run_kernel` launch. ``cwd``: the folder it runs in (its relative file
    paths, e.g. the samples' ``./input/*.bin``).

    Raises:
        CppBuildError: as :func:`load`. Any error a launch or an intrinsic raised (the host
        program itself runs to its end first, its later calls doing nothing).
    """
    import os

    from npusim.cpp.dispatch import HostSession
    from npusim.gm import GlobalMemory
    from npusim.soc import get_soc
    b = build(source, core=core, devkit=devkit, defines=defines, include=include, force=force)
    lib, rt = _open(b)
    syms = _symbols(b.library)
    main_sym = [m for s, m in syms.items() if s.startswith("npusim_host_main(")]
    if not main_sym:
        raise CppBuildError(f"{source} has no main()")
    main = getattr(lib, main_sym[0])
    main.restype = ctypes.c_int
    main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    spec = get_soc(soc) if isinstance(soc, str) else soc
    session = HostSession(spec, GlobalMemory(spec.memory_size), checks)
    from npusim.cpp.builder import workspace_parameters
    session.workspace_params = workspace_parameters(open(source, errors="replace").read())
    if b.core == "aic":
        from npusim.ascendc.types import KernelMetaType
        session.kernel_type = KernelMetaType.KERNEL_TYPE_AIC_ONLY
    from npusim.cpp.builder import kernel_types, selected_text
    session.kernel_types = kernel_types(selected_text(open(source, errors="replace").read(),
                                                      defines))
    session.mix = b.core == "mix"
    args = [str(source).encode(), *[str(a).encode() for a in argv]]
    c_argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
    old = os.getcwd()
    rt.host, rt.error = session, None
    try:
        if cwd is not None:
            os.chdir(cwd)
        with abort_as_error():
            status = main(len(args), c_argv)
    finally:
        os.chdir(old)
        rt.host = None
    if rt.error is not None:
        err, rt.error = rt.error, None
        raise err
    return HostRun(status, session.profiles, b)
