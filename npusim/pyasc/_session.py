"""The npusim backend of pyasc: devices, streams and ``kernel[core_num, stream](...)``.

A :class:`Session` holds the simulated devices pyasc's runtime sees and runs the launches
of ``@asc.jit`` functions (:meth:`Session.launch`), as pyasc's ``JITFunction._run`` and
``Launcher`` do on hardware:

1. split the arguments into runtime ones and ``ConstExpr`` ones (pyasc's ``split_args``);
2. run pyasc's front end — its code generator to ASC-IR and its lowering passes — on them
   (unless ``frontend=False``): pyasc's own errors (unsupported syntax, type mismatches)
   reach the user as on hardware, and the passes tell the kernel type (``AIV_ONLY``, or
   ``MIX_AIC_1_2``/``AIC_ONLY`` for cube code, as pyasc's ``detect_kernel_type`` decides);
3. copy each tensor argument (numpy array, torch CPU tensor, bytes) and each ``Struct`` to
   device memory through pyasc's own memory handles (``resolve_memory_handle``), which call
   the runtime library (:mod:`npusim.pyasc._runtime`);
4. launch the kernel body (:mod:`npusim.pyasc._exec`) on ``core_num`` blocks of the
   stream's device, synchronise, copy the tensors back and free them.

A kernel error (:class:`npusim.errors.KernelError`: the checker's findings, a missing API)
is raised at the launch with the kernel's file and line; a Python error in the kernel body
(a typo, a wrong argument) is raised as itself, with its traceback through the kernel.
"""
from __future__ import annotations

import copy
import inspect
import os
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from npusim.ascendc import checker
from npusim.ascendc import core as _core
from npusim.ascendc.types import KernelMetaType
from npusim.device import Device
from npusim.errors import KernelError, NpuSimError
from npusim.launch import KernelProfile
from npusim.pyasc import _exec
from npusim.pyasc import _values as V
from npusim.soc import get_soc


@dataclass
class Launch:
    """One ``kernel[core_num, stream](...)`` on npusim.

    Attributes:
        name: the kernel function's name.
        block_dim: core_num of the launch.
        kernel_type: the npusim KernelMetaType it ran as.
        auto_sync: whether the flags pyasc's compiler would insert were inserted
            (``auto_sync=True``, pyasc's default); ``auto_flags`` how many pairs.
        frontend_s: host seconds in pyasc's front end (code generation and passes).
        npusim_s: host seconds in npusim (copies, the kernel's functional run, timing).
        profile: the kernel's :class:`npusim.launch.KernelProfile` (simulated time).
        ascendc: the Ascend C source pyasc generated (when the front end ran).
    """

    name: str
    block_dim: int
    kernel_type: KernelMetaType
    auto_sync: bool
    frontend_s: float
    npusim_s: float
    profile: KernelProfile | None = None
    ascendc: str | None = None
    auto_flags: int = 0


#: pyasc KernelType name -> npusim KernelMetaType.
KERNEL_TYPES = {"AIV_ONLY": KernelMetaType.KERNEL_TYPE_AIV_ONLY,
                "AIC_ONLY": KernelMetaType.KERNEL_TYPE_AIC_ONLY,
                "MIX_AIV_1_0": KernelMetaType.KERNEL_TYPE_MIX_AIV_1_0,
                "MIX_AIC_1_0": KernelMetaType.KERNEL_TYPE_MIX_AIC_1_0,
                "MIX_AIC_1_1": KernelMetaType.KERNEL_TYPE_MIX_AIC_1_1,
                "MIX_AIC_1_2": KernelMetaType.KERNEL_TYPE_MIX_AIC_1_2}


class AutoSyncShadow(checker.MemoryShadow):
    """A memory shadow that, where the checker finds two pipes unsynchronised, inserts the
    flag pair instead of reporting: what pyasc's ``auto_sync=True`` asks the compiler for
    (``bisheng --cce-auto-sync``: set_flag after the producer, wait_flag before the
    consumer)."""

    def on_race(self, ctx, pipe: int, other: int, exc) -> None:
        n = getattr(ctx, "auto_flags", 0)
        ctx.auto_flags = n + 1
        key = ("auto_sync", n)
        ctx.record(_core.SET, other, 0.0, 0, key, "SetFlag(auto_sync)")
        ctx.record(_core.WAIT, pipe, 0.0, 0, key, "WaitFlag(auto_sync)")


class AutoSyncTracker(AutoSyncShadow, checker.UbTracker):
    """The checker state of a block launched with ``auto_sync=True`` (every block)."""

    shadow_type = AutoSyncShadow


class Session:
    """npusim answering pyasc: devices of one SoC, their streams, the launches so far.

    Args:
        soc: the SoC every device simulates (pyasc ``Platform`` names: Ascend910B1..B4,
            Ascend910_93xx).
        frontend: run pyasc's front end at each launch (module doc).
        profiling: keep instruction spans for traces (``npusim.trace``).
        checks: the checker's :class:`npusim.ascendc.checker.CheckerConfig` (default: on).
        device_count: how many devices ``asc.lib.runtime.device_count()`` reports.
    """

    def __init__(self, soc: str = "Ascend910B1", *, frontend: bool = True,
                 profiling: bool = False, checks: checker.CheckerConfig | None = None,
                 device_count: int = 1):
        self.soc = get_soc(soc).soc_version
        self.frontend = frontend
        self.profiling = profiling
        self.checks = checks
        self.device_count = device_count
        self.devices: dict[int, Device] = {}
        self.streams: dict[int, tuple] = {}     # handle -> (device id, npusim Stream)
        self._current = threading.local()       # per thread, as aclrtSetDevice binds it
        self.launches: list[Launch] = []
        #: device id -> Device, when another front end owns the devices (torch's "npu"
        #: device: its tensors and the kernels launched on them share one memory); taken
        #: once per session and device, where its SoC is the one asked for
        self.device_provider = None

    @property
    def current_id(self) -> int:
        """This thread's current device (``asc.lib.runtime.set_device`` sets it per thread,
        as pyACL's ``aclrtSetDevice`` does; 0 in a thread that set none)."""
        return getattr(self._current, "device_id", 0)

    @current_id.setter
    def current_id(self, device_id: int) -> None:
        self._current.device_id = device_id

    # -- devices and streams (used by the runtime library) ------------------------------------
    def soc_name(self) -> str:
        return self.soc

    def device(self, device_id: int | None = None) -> Device:
        device_id = self.current_id if device_id is None else device_id
        dev = self.devices.get(device_id)
        if dev is None:
            from asc.lib.runtime import state
            soc = state.soc_verison.value if state.model else self.soc
            if self.device_provider is not None:     # the other front end's, if its SoC
                shared = self.device_provider(device_id)
                if get_soc(shared.soc.soc_version).soc_version == get_soc(soc).soc_version:
                    dev = self.devices[device_id] = shared
                    return dev
            # every record kept, as the session keeps every launch: its report, trace and
            # op summary cover the whole script
            dev = self.devices[device_id] = Device(soc, device_id, profiling=self.profiling,
                                                   keep_records=None)
        return dev

    def set_device(self, device_id: int) -> None:
        if not 0 <= device_id < self.device_count:
            raise RuntimeError(f"device {device_id} does not exist (npusim.pyasc has "
                               f"{self.device_count})")
        self.current_id = device_id
        self.device(device_id)

    def reset_device(self, device_id: int) -> None:
        self.devices.pop(device_id, None)
        for handle in [h for h, (d, _) in self.streams.items() if d == device_id]:
            del self.streams[handle]

    def create_stream(self) -> int:
        dev = self.device()
        stream = dev.default_stream if not self.streams else _new_stream(dev)
        self.streams[stream.id] = (dev.device_id, stream)
        return stream.id

    def destroy_stream(self, handle) -> None:
        self.streams.pop(int(handle), None)

    def stream(self, handle):
        """(device, npusim Stream) of a pyasc stream handle (None: the current stream)."""
        if handle is None:
            from asc.lib import runtime as rt
            handle = rt.current_stream()
        key = int(handle.value if hasattr(handle, "value") else handle)
        if key not in self.streams:
            raise RuntimeError(f"stream handle {key} is not a stream of npusim.pyasc")
        dev_id, stream = self.streams[key]
        return self.device(dev_id), stream

    def synchronize(self, handle) -> None:
        dev, stream = self.stream(handle)
        errors = dev.synchronize_stream(stream)
        if errors:
            raise errors[0]

    def synchronize_device(self) -> None:
        dev = self.device()
        errors = dev.synchronize([s for d, s in self.streams.values() if d == dev.device_id])
        if errors:
            raise errors[0]

    # -- launches -------------------------------------------------------------------------------
    def launch(self, jit_fn, args: tuple, kwargs: dict) -> None:
        """``jit_fn[core_num, stream](*args, **kwargs)`` on npusim (module doc)."""
        from asc.codegen.function_visitor import CodegenOptions
        from asc.common.compat import get_annotations, merge_dict
        from asc.runtime.compiler import CompileOptions
        kwargs = merge_dict(jit_fn.default_options, kwargs)
        codegen_options = jit_fn.extract_kwargs(CodegenOptions, kwargs)
        compile_options = jit_fn.extract_kwargs(CompileOptions, kwargs)
        call_args = inspect.signature(jit_fn.fn).bind(*args, **kwargs).arguments
        runtime_args, constexprs = jit_fn.split_args(call_args, get_annotations(jit_fn.fn))
        t0 = time.perf_counter()
        kernel_type, source, sync_all = _front_end(jit_fn, runtime_args, constexprs,
                                                   codegen_options, compile_options,
                                                   self.frontend)
        t1 = time.perf_counter()
        if os.environ.get("DRY_RUN"):          # pyasc's Launcher: code generation only
            return
        opts = jit_fn.launch_options
        if opts.core_num <= 0:
            raise ValueError("Core number should be large than 0")
        dev, stream = self.stream(opts.stream)
        auto_sync = bool(compile_options.auto_sync)
        record = Launch(jit_fn.fn.__name__, opts.core_num, kernel_type, auto_sync, t1 - t0, 0.0,
                        ascendc=source)
        handles, kernel_args = [], []
        try:
            binder = _exec.Binder()
            for name in call_args:             # ConstExpr arguments are Python values
                kernel_args.append(binder.rebind(constexprs[name].value) if name in constexprs
                                   else _kernel_arg(jit_fn, runtime_args[name], handles))
            body = binder.function(jit_fn)
            entry = _Entry(body, tuple(kernel_args), auto_sync, self.checks)
            n_profiles = dev.profiles.total
            dev.launch(stream, entry, opts.core_num, (), name=record.name,
                       kernel_type=kernel_type, sync_all=sync_all)
            errors = dev.synchronize_stream(stream)
            if errors:
                raise entry.python_error or errors[0]
            new = dev.profiles.since(n_profiles)
            record.profile = new[0] if new else None
            record.auto_flags = entry.auto_flags
            for h in handles:
                h.copy_from_device()
        finally:
            for h in handles:
                h.release_memory()
            record.npusim_s = time.perf_counter() - t1
        self.launches.append(record)


def _new_stream(dev: Device):
    from npusim.device import Stream
    return Stream(dev)


def _front_end(jit_fn, runtime_args, constexprs, codegen_options, compile_options, enabled):
    """pyasc's code generation and passes: (KernelMetaType, Ascend C source, uses SyncAll)."""
    kernel_type = compile_options.kernel_type
    if not enabled:
        name = kernel_type.name if kernel_type is not None else (
            "AIC_ONLY" if compile_options.matmul_cube_only else "AIV_ONLY")
        src = inspect.getsource(jit_fn.fn)
        return _kernel_type(name), None, "sync_all" in src
    from asc.codegen.specialization import Specialization
    from asc.runtime.compiler import Compiler
    from asc._C import translation
    arg_types = {name: jit_fn.get_arg_type(value) for name, value in runtime_args.items()}
    mod = jit_fn._run_codegen(Specialization(arg_types, constexprs), codegen_options)
    compiler = Compiler.__new__(Compiler)      # its __init__ looks for bisheng: not needed here
    compiler.options = copy.copy(compile_options)
    try:
        compiler.run_passes(mod)
    except RuntimeError as exc:
        # e.g. a kernel written for another pyasc release than the one installed (the
        # tutorials' register_matmul(pipe, matmul, tiling) is newer than 1.1.1's
        # (pipe, workspace, matmul, tiling)): run it, saying so, with the kernel type its
        # generated IR implies
        ir = str(mod)
        warnings.warn(f"pyasc's passes failed on {jit_fn.fn.__name__} ({exc}); npusim runs it "
                      "anyway, with the kernel type its operations imply", RuntimeWarning)
        cube = any(op in ir for op in ("ascendc.matmul", "ascendc.mmad", "ascendc.load_data",
                                       "ascendc.fixpipe", "regist_matmul"))
        name = compile_options.kernel_type.name if compile_options.kernel_type else (
            "AIV_ONLY" if not cube else "AIC_ONLY" if compile_options.matmul_cube_only
            else "MIX_AIC_1_2")
        return _kernel_type(name), None, "sync_all" in ir
    ir = str(mod)
    source = translation.ir_to_ascendc(mod)
    dump = os.environ.get("PYASC_DUMP_PATH")
    if dump:                                   # as pyasc's Compiler dumps them
        Path(dump).mkdir(parents=True, exist_ok=True)
        (Path(dump) / "ascir.mlir").write_text(ir)
        (Path(dump) / "ascendc.cpp").write_text(source)
    return _kernel_type(compiler.options.kernel_type.name), source, "sync_all" in ir


def _kernel_type(name: str) -> KernelMetaType:
    if name not in KERNEL_TYPES:
        raise KernelError("<<<blockDim>>>", f"pyasc kernel type {name} is not modelled by npusim "
                          f"(modelled: {', '.join(KERNEL_TYPES)})", core=-1, line="?")
    return KERNEL_TYPES[name]


def _kernel_arg(jit_fn, value, handles: list):
    """A host argument as the kernel receives it, copying tensors to the device as pyasc's
    Launcher does (``expand_kernel_args``, ``resolve_memory_handle``)."""
    from asc.language.core.struct import Struct
    from asc.runtime.memory_handle import ByteArrayHandle, resolve_memory_handle
    if isinstance(value, (bool, int, float, np.generic)):
        return V.scalar_arg(value)
    if isinstance(value, Struct):
        handle = ByteArrayHandle(value.pack())
        handle.copy_to_device()
        handles.append(handle)
        return V.StructView(value)
    handle = resolve_memory_handle(value)
    address = handle.copy_to_device()
    handles.append(handle)
    return V.GlobalAddress(address, jit_fn.get_arg_type(value).dtype)


class _Entry:
    """The kernel function npusim runs on each block."""

    def __init__(self, body, args: tuple, auto_sync: bool, checks):
        self.body, self.args = body, args
        self.auto_sync, self.checks = auto_sync, checks
        self.python_error: BaseException | None = None
        self.auto_flags = 0
        self.__name__ = body.__name__

    def __call__(self):
        ctx = _core.current_core()
        if self.checks is not None:
            ctx.checker_config = self.checks
        if self.auto_sync:
            ctx.tracker = AutoSyncTracker(ctx.soc.ub_size, ctx.soc)
        try:
            self.body(*self.args)
        except NpuSimError:
            raise
        except Exception as exc:        # a Python error in the kernel: stop the stream, keep it
            self.python_error = exc
            raise KernelError(self.__name__, f"{type(exc).__name__}: {exc}") from exc
        finally:
            self.auto_flags += getattr(ctx, "auto_flags", 0)


__all__ = ["Session", "Launch", "KERNEL_TYPES"]
