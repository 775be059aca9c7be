"""Process-wide state of the simulated AscendCL runtime.

``acl.*`` (``aclnn.acl``) and the aclnn operators share one :class:`Runtime` object,
:data:`state`; the module-level functions below are the interface the operators use:

* :func:`current_device` -- the :class:`npusim.Device` of this thread's current context;
* :func:`resolve_stream` / :func:`resolve_event` -- int handle -> npusim object
  (a NULL stream, ``None`` or ``0``, is the current device's default stream:
  ``docs/reference/api.md`` §6 "NULL is the default stream");
* :func:`deterministic` -- the ``ACL_OPT_DETERMINISTIC`` system parameter;
* :func:`sync_error_code` -- the status code for errors collected from a stream.

Devices are created lazily per device id as ``npusim.Device(soc, device_id)``; the SoC
and the number of devices come from the ``"npusim"`` section of the ``acl.init`` JSON::

    {"npusim": {"soc": "Ascend910B1", "device_count": 1, "profiling": false,
                "trace": "trace.json", "op_summary": "op_summary.csv", "max_cores": 8,
                "keep_records": 1000}}

Profiling (:func:`set_profiling`, :func:`write_trace`, :func:`write_op_summary`):

* ``"profiling": true`` turns tracing on for every device this runtime creates
  (``npusim.Device(profiling=True)``: every kernel keeps its instruction spans). Off by
  default: a normal run pays nothing for it.
* Records (each device's task records, kernel profiles and copies, ``npusim.Device``):
  all of them while profiling is on (what the trace and op summary are made of);
  otherwise the last ``"keep_records"`` of each (default
  ``npusim.device.KEEP_RECORDS``, 1000; ``null`` keeps all; :func:`set_keep_records`
  changes it), so a long run's memory stays flat. :func:`clear_records` forgets them;
  ``acl.rt.reset_device`` releases those of a device it drops that was not profiling,
  ``acl.finalize`` (after writing the files) those of every device.
* ``"trace"`` / ``"op_summary"``: file paths (they need ``"profiling": true``). The
  Chrome trace (:mod:`npusim.trace`) and the msprof-style op summary CSV
  (:mod:`npusim.profiling`) of every device profiled since ``acl.init`` are written when
  a device is released by its last ``acl.rt.reset_device`` and at ``acl.finalize``
  (each write holds all of them, so the last one is complete). A file that cannot be
  written leaves a message (``acl.get_recent_err_msg``) and is otherwise ignored.

``"timing_only"`` (true/false, default null: the environment's ``NPUSIM_TIMING_ONLY``) runs
every kernel timing-only: the same timing, profiles and checker findings, the results not
computed (:func:`set_timing_only`, :mod:`npusim.ascendc.timing_only`).

``"max_cores"`` (int >= 1) limits every device to that many vector cores, as
``aclrtSetDeviceResLimit`` / torchair ``limit_core_num`` do: the operators' tilings
(``GetCoreNumAiv``) and the timing model see that many cores; a value above the SoC's
count means all cores (``npusim.device.limit_cores``). It is how ``npusim sweep --cores``
runs an operator through the aclnn API on fewer cores.

Threads (``docs/tutorial.md`` "Threads and contexts"): the current context, and so the
current device, is per thread, as CANN documents it: ``aclrtSetDevice`` "指定当前线程中用于
运算的Device" and binds the device's default context, the same one in every thread that
sets that device (aclpythondevg set_device: "在同一个进程中的多个线程中，如果调用
acl.rt.set_device接口指定同一个Device用于运算，这时隐式创建的默认Context是同一个");
``aclrtCreateContext`` binds the new context to the calling thread and
``aclrtSetCurrentContext`` "设置线程的Context", the last call winning (aclcppdevg
aclrtSetCurrentContext). A thread that has done none of these has no current context. The
rest of the runtime (devices, streams, events, contexts, host buffers) is shared by the
threads of the process; every host API call runs under :data:`npusim.runlock.LOCK`
(:func:`serialize_api`), so the calls of several threads take effect one at a time, in
some serial order.

Handles are plain ints as in pyACL: streams count up from :data:`STREAM_HANDLE_BASE`,
events from :data:`EVENT_HANDLE_BASE`, and a handle is never reused within a process
(until :func:`reset`, which is for tests).

Host buffers handed out by ``acl.util.numpy_to_ptr`` / ``bytes_to_ptr`` are registered
here by address so that memcpy can bounds-check a host pointer that falls inside one.
The registry holds a reference to each array, so an inline temporary stays valid for the
call it is passed to; an entry is dropped at a later registration once the registry's
reference is the only one left, so a training loop that registers a new array per step
does not grow without bound. A pending asynchronous copy pins the buffers it uses.
"""
from __future__ import annotations

import itertools
import sys
import threading

import numpy as np

import npusim
from npusim import profiling as _profiling
from npusim import trace as _trace
from npusim.device import DeadlockError
from npusim.gm import GM_BASE_ADDRESS
from npusim.runlock import serialized

from aclnn import errmsg
from aclnn.constants import (
    ACL_ERROR_PARSE_FILE,
    ACL_ERROR_RT_AICORE_EXCEPTION,
    ACL_ERROR_RT_INTERNAL_ERROR,
    ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
    ACL_ERROR_WRITE_FILE,
    ACL_SUCCESS,
)

#: First stream handle; each new stream takes the next int.
STREAM_HANDLE_BASE = 0x5A0000
#: First event handle; each new event takes the next int.
EVENT_HANDLE_BASE = 0x5E0000
#: First context handle (acl.rt.create_context and the default context of each device).
CONTEXT_HANDLE_BASE = 0x5C0000
#: Device virtual addresses are at and above GM_BASE_ADDRESS; this span (16 TiB) is
#: treated as device address space, so a stale device pointer used as a host pointer is
#: refused instead of being dereferenced on the host.
DEVICE_VA_SPAN = 1 << 44
#: Keys of the "npusim" section of the acl.init JSON.
CONFIG_KEYS = ("soc", "device_count", "profiling", "trace", "op_summary", "max_cores",
               "keep_records", "timing_only")


class HostBuffer:
    """A registered host buffer ``[addr, addr + nbytes)`` owned by ``obj``."""

    __slots__ = ("addr", "nbytes", "obj", "pinned")

    def __init__(self, addr: int, nbytes: int, obj, pinned: bool = False):
        self.addr = addr
        self.nbytes = nbytes
        self.obj = obj
        self.pinned = pinned

    @property
    def end(self) -> int:
        return self.addr + self.nbytes


# sys.getrefcount of a HostBuffer's object that nothing else references (calibrated here
# with the same expression _prune uses, so it holds on any CPython version).
_probe = HostBuffer(0, 0, object())
_ONLY_REGISTRY = sys.getrefcount(_probe.obj)
del _probe


class Runtime:
    """The runtime state of one process. Use the module functions, not this directly.

    Attributes:
        initialized: between a successful ``acl.init`` and ``acl.finalize``.
        ever_initialized: ``acl.init`` succeeded at least once (finalize before any init
            returns ACL_ERROR_UNINITIALIZE, a repeated finalize ACL_ERROR_REPEAT_FINALIZE).
        soc: the SocSpec every device is built with; device_count: number of device ids;
        profiling: the "profiling" config flag: devices are created with tracing on.
        trace_path, op_summary_path: the "trace" / "op_summary" files, or None.
        max_cores: the "max_cores" limit, or None.
        keep_records: records of each kind a device keeps while not profiling (None: all).
        profiled: devices with profiling on that were released since acl.init (their
            records go into the trace and op summary too).
        devices: device id -> npusim.Device, created on first set_device.
        device_refs: device id -> set_device calls not yet matched by reset_device.
        streams, events: handle -> npusim.Stream / npusim.Event.
        contexts: handle -> Context; default_contexts: device id -> its default context.
        generation: counts clear_devices calls; a thread's binding from an earlier
            generation is void (every thread's current context is dropped at once).
        bindings: per thread, ``bindings.context = (generation, handle)`` of its current
            context. Each Runtime has its own, so swapping ``state`` for another Runtime
            (a tool's private session) and back leaves every thread's binding as it was.
        deterministic: ACL_OPT_DETERMINISTIC value, or None when never set.
        host_buffers: address -> HostBuffer (see the module docstring).

    The current context is per thread (:func:`current_context`), not an attribute.
    """

    def __init__(self):
        self.generation = 0             # only ever grows: reset() must void old bindings too
        self.bindings = threading.local()   # each thread's current context (_bind)
        self.reset()

    def reset(self) -> None:
        """Drop every piece of state, as in a fresh process."""
        self.ever_initialized = False
        self.host_buffers: dict[int, HostBuffer] = {}
        self._stream_handles = itertools.count(STREAM_HANDLE_BASE)
        self._event_handles = itertools.count(EVENT_HANDLE_BASE)
        self._context_handles = itertools.count(CONTEXT_HANDLE_BASE)
        self.clear_devices()

    def clear_devices(self) -> None:
        """Drop the configuration, devices, streams and events (acl.finalize)."""
        self.initialized = False
        self.soc = npusim.get_soc()
        self.device_count = 1
        self.profiling = False
        self.trace_path: str | None = None
        self.op_summary_path: str | None = None
        self.max_cores: int | None = None
        self.keep_records: int | None = npusim.device.KEEP_RECORDS
        self.timing_only: bool | None = None
        self.profiled: list[npusim.Device] = []
        self.devices: dict[int, npusim.Device] = {}
        self.device_refs: dict[int, int] = {}
        self.streams: dict[int, npusim.Stream] = {}
        self.events: dict[int, npusim.Event] = {}
        self.deterministic: int | None = None
        self.contexts: dict[int, Context] = {}
        self.default_contexts: dict[int, int] = {}     # device id -> its default context
        self.generation += 1            # unbinds every thread's current context


class Context:
    """An ACL context: a device and the default stream of work submitted with a NULL
    stream while the context is current.

    The default context of a device (made by its first ``set_device``) uses the device's
    own default stream; a context from ``acl.rt.create_context`` has a default stream of
    its own ("调用本接口创建的Context中包含1个默认Stream", aclrtCreateContext) and holds one
    reference on its device until ``acl.rt.destroy_context``.
    """

    def __init__(self, device: npusim.Device, default_stream: npusim.Stream, created: bool):
        self.device = device
        self.default_stream = default_stream
        self.created = created


#: The one runtime of this process.
state = Runtime()

def _bind(handle: int) -> None:
    """Make context ``handle`` (a live one) this thread's current context. Only ints are
    kept, so a stale binding holds no released device alive."""
    state.bindings.context = (state.generation, handle)


def _binding() -> tuple[int, Context] | None:
    """(handle, Context) of this thread's current context while it is still live, else None.

    A context stops being live when it is destroyed, when its device is released by its
    last reset_device, and at acl.finalize; a thread bound to it then has none. Handles
    are never reused within a generation, so a live handle is the context that was bound.
    """
    bound = getattr(state.bindings, "context", None)
    if bound is None or bound[0] != state.generation:
        return None
    ctx = state.contexts.get(bound[1])
    return (bound[1], ctx) if ctx is not None else None


def serialize_api(namespace: dict, names=None) -> None:
    """Replace each function ``namespace[name]`` by one that runs it under
    :data:`npusim.runlock.LOCK`, so that host API calls from several threads take effect
    one at a time (each call as a whole: its checks, its changes of the runtime's tables
    and device memory, its enqueues and the device time it runs).

    ``namespace`` is a module's ``globals()``; ``names`` defaults to the functions defined
    in that module whose names start with "acl" (aclnnXxx, aclnnXxxGetWorkspaceSize,
    aclSetAclOpExecutorRepeatable...). Classes and other objects are left alone. A module
    of the host API calls it last, once its functions and their docstrings are final.
    """
    if names is None:
        module = namespace["__name__"]
        names = [n for n, v in namespace.items()
                 if n.startswith("acl") and getattr(v, "__module__", None) == module]
    for name in names:
        fn = namespace.get(name)
        if callable(fn) and not isinstance(fn, type) and not hasattr(fn, "__wrapped__"):
            namespace[name] = serialized(fn)


def __getattr__(name):
    # ``runtime.initialized`` reads the live flag.
    if name == "initialized":
        return state.initialized
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def reset() -> None:
    """Drop all runtime state and pending error messages (for tests only)."""
    state.reset()
    errmsg.clear()


# -- init / finalize -------------------------------------------------------------------
def init(config: dict | None) -> int:
    """Initialise from a parsed acl.init JSON object; return a status code.

    Reads the optional ``"npusim"`` section (keys :data:`CONFIG_KEYS`); other top-level
    keys are ignored. A bad section returns ACL_ERROR_PARSE_FILE (100006) with a message.
    The caller (``acl.init``) has checked for a repeated init.
    """
    section = (config or {}).get("npusim", {})
    if not isinstance(section, dict):
        return _config_error(f'"npusim" must be a JSON object, got {section!r}')
    unknown = sorted(set(section) - set(CONFIG_KEYS))
    if unknown:
        return _config_error(f'unknown key(s) {", ".join(map(repr, unknown))} in "npusim"; '
                             f'known keys: {", ".join(CONFIG_KEYS)}')
    soc_name = section.get("soc", npusim.DEFAULT_SOC)
    if not isinstance(soc_name, str):
        return _config_error(f'"npusim.soc" must be a SoC name string, got {soc_name!r}')
    try:
        soc = npusim.get_soc(soc_name)
    except npusim.UnknownSocError as exc:
        return _config_error(f'"npusim.soc": {exc}')
    count = section.get("device_count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        return _config_error(f'"npusim.device_count" must be an integer >= 1, got {count!r}')
    profiling = section.get("profiling", False)
    if not isinstance(profiling, bool):
        return _config_error(f'"npusim.profiling" must be true or false, got {profiling!r}')
    paths = {}
    for key in ("trace", "op_summary"):
        path = section.get(key)
        if path is not None and (not isinstance(path, str) or not path):
            return _config_error(f'"npusim.{key}" must be a file path string, got {path!r}')
        if path is not None and not profiling:
            return _config_error(f'"npusim.{key}" needs "npusim.profiling": true')
        paths[key] = path
    max_cores = section.get("max_cores")
    if max_cores is not None and (isinstance(max_cores, bool) or not isinstance(max_cores, int)
                                  or max_cores < 1):
        return _config_error(f'"npusim.max_cores" must be an integer >= 1, got {max_cores!r}')
    keep = section.get("keep_records", npusim.device.KEEP_RECORDS)
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 0):
        return _config_error(f'"npusim.keep_records" must be an integer >= 0 or null, '
                             f'got {keep!r}')
    timing_only = section.get("timing_only")
    if timing_only is not None and not isinstance(timing_only, bool):
        return _config_error(f'"npusim.timing_only" must be true, false or null, got '
                             f'{timing_only!r}')
    state.clear_devices()
    state.keep_records = keep
    state.timing_only = timing_only
    state.soc, state.device_count, state.profiling = soc, count, profiling
    state.trace_path, state.op_summary_path = paths["trace"], paths["op_summary"]
    state.max_cores = max_cores
    state.initialized = state.ever_initialized = True
    return ACL_SUCCESS


def _config_error(message: str) -> int:
    return errmsg.report_error(ACL_ERROR_PARSE_FILE, f"acl.init: config file: {message}")


def finalize() -> None:
    """Write the profiling files (if configured), then release every device's records and
    drop the devices, streams and events; the host-buffer registry is kept."""
    _write_profiling_files()
    for dev in profiled_devices():
        dev.clear_records()
    state.clear_devices()


# -- devices ---------------------------------------------------------------------------
def current_device() -> npusim.Device | None:
    """This thread's current device (that of its current context), or None."""
    bound = _binding()
    return bound[1].device if bound is not None else None


def set_device(device_id: int) -> npusim.Device:
    """Make ``device_id`` this thread's current device, creating its Device on first use,
    and bind its default context to this thread (no checks)."""
    dev = state.devices.get(device_id)
    if dev is None:
        dev = state.devices[device_id] = npusim.Device(state.soc, device_id,
                                                       profiling=state.profiling,
                                                       max_cores=state.max_cores,
                                                       keep_records=state.keep_records,
                                                       timing_only=state.timing_only)
    state.device_refs[device_id] = state.device_refs.get(device_id, 0) + 1
    handle = state.default_contexts.get(device_id)
    if handle is None:
        handle = state.default_contexts[device_id] = next(state._context_handles)
        state.contexts[handle] = Context(dev, dev.default_stream, created=False)
    _bind(handle)
    if state.deterministic is not None:
        dev.deterministic = bool(state.deterministic)
    return dev


def create_context(device_id: int) -> int:
    """A new context on ``device_id`` (the device is set if it was not), made this
    thread's current one; returns its handle (no checks: acl.rt.create_context checks the
    id)."""
    dev = set_device(device_id)
    handle = next(state._context_handles)
    state.contexts[handle] = Context(dev, npusim.Stream(dev), created=True)
    _bind(handle)
    return handle


def set_current_context(handle: int) -> None:
    """Make context ``handle`` (a live one) this thread's current context, and so its
    device this thread's current device."""
    _bind(handle)


def destroy_context(handle: int) -> None:
    """Drop a created context (after its default stream drained) and its device reference;
    a thread whose current context it was has none (and no current device) after."""
    ctx = state.contexts.pop(handle)
    ctx.default_stream.destroyed = True
    release_device(ctx.device.device_id)


def current_context() -> int | None:
    """The handle of this thread's current context, or None."""
    bound = _binding()
    return bound[0] if bound is not None else None


def no_context_reason() -> str:
    """Why this thread has no current context (for the message of a 107002 / 361001)."""
    if not state.initialized:
        return "acl.init has not been called and no device is set"
    if state.devices:
        return ("this thread has no current context (the current context, and so the current "
                "device, is per thread): call acl.rt.set_device(device_id) or "
                "acl.rt.set_context(context) in this thread first")
    return "no device is set: call acl.rt.set_device(device_id) first"


def release_device(device_id: int) -> None:
    """Undo one set_device; the last one drops the device, its streams and events, and
    releases its records unless it was profiling (those stay for the profiling files
    until acl.finalize)."""
    refs = state.device_refs.get(device_id, 0) - 1
    if refs > 0:
        state.device_refs[device_id] = refs
        return
    state.device_refs.pop(device_id, None)
    dev = state.devices.pop(device_id, None)
    if dev is None:
        return
    if dev.profiling:
        state.profiled.append(dev)
        _write_profiling_files()
    else:
        dev.clear_records()
    for table in (state.streams, state.events, state.contexts):
        for handle in [h for h, obj in table.items() if obj.device is dev]:
            del table[handle]
    state.default_contexts.pop(device_id, None)


def device_streams(dev: npusim.Device) -> list[npusim.Stream]:
    """The default stream and every live user stream of ``dev``."""
    own = [c.default_stream for c in state.contexts.values() if c.created and c.device is dev]
    return [dev.default_stream] + own + [s for s in state.streams.values() if s.device is dev]


def is_device_address(addr: int) -> bool:
    """Whether ``addr`` is (or looks like) device memory of any device."""
    if GM_BASE_ADDRESS <= addr < GM_BASE_ADDRESS + DEVICE_VA_SPAN:
        return True
    return any(dev.gm.find(addr) is not None for dev in state.devices.values())


# -- handles ---------------------------------------------------------------------------
def add_stream(stream: npusim.Stream) -> int:
    """Register ``stream`` and return its new handle. The stream belongs to the calling
    thread's current context (:func:`foreign_stream`)."""
    handle = next(state._stream_handles)
    state.streams[handle] = stream
    bound = _binding()
    stream.acl_context = bound[0] if bound is not None else None
    return handle


def other_device(name: str, handle, owner: npusim.Device, dev: npusim.Device) -> str:
    """The message for ``handle`` (a stream or event of device ``owner``) used by a thread
    whose current device is ``dev``."""
    return (f"{name}=0x{int(handle):x} belongs to device {owner.device_id}, but this "
            f"thread's current device is {dev.device_id} (the current context is per thread: "
            f"acl.rt.set_device({owner.device_id}) or acl.rt.set_context in this thread "
            f"selects device {owner.device_id})")


def foreign_stream(name: str, handle, stream: npusim.Stream) -> str | None:
    """Why ``stream`` (of ``handle``) may not be used by the calling thread, or None.

    A stream belongs to the context that was current when it was created (aclrtCreateStream
    creates it "in the current context"), and a runtime call may use it only while that
    context is the calling thread's current one: CANN's runtime refuses it otherwise with
    ACL_ERROR_RT_STREAM_CONTEXT (107003, "stream not in current context",
    rt_error_codes.h; EE1010 "stream ... does not belong to the current context"). A stream
    of another device is the same error. The default stream (NULL) is always the current
    context's own.
    """
    bound = _binding()
    mine = bound[0] if bound is not None else None
    owner = getattr(stream, "acl_context", None)
    if bound is not None and stream.device is not bound[1].device:
        return other_device(name, handle, stream.device, bound[1].device)
    if owner is None or owner == mine:
        return None
    return (f"{name}=0x{int(handle):x} was created in context 0x{owner:x}, but this thread's "
            f"current context is 0x{mine:x} on the same device: a stream belongs to the "
            f"context current when it was created (acl.rt.set_context(0x{owner:x}) in this "
            "thread makes it usable)")


def remove_stream(handle: int) -> None:
    stream = state.streams.pop(handle, None)
    if stream is not None:
        stream.destroyed = True


def add_event(event: npusim.Event) -> int:
    """Register ``event`` and return its new handle."""
    handle = next(state._event_handles)
    state.events[handle] = event
    return handle


def remove_event(handle: int) -> None:
    state.events.pop(handle, None)


def _is_handle(handle) -> bool:
    return isinstance(handle, (int, np.integer)) and not isinstance(handle, bool)


def resolve_stream(handle) -> npusim.Stream | None:
    """The stream of ``handle``; None or 0 is the current device's default stream.

    Returns None for an unknown or destroyed handle (or a NULL stream with no device).
    """
    if handle is None or (_is_handle(handle) and int(handle) == 0):
        bound = _binding()
        return bound[1].default_stream if bound is not None else None
    if not _is_handle(handle):
        return None
    return state.streams.get(int(handle))


def resolve_event(handle) -> npusim.Event | None:
    """The event of ``handle``, or None (NULL, unknown or destroyed)."""
    if not _is_handle(handle):
        return None
    return state.events.get(int(handle))


# -- profiling -------------------------------------------------------------------------
def set_profiling(on: bool) -> None:
    """Turn tracing on or off for every live device and the devices created later."""
    state.profiling = bool(on)
    for dev in state.devices.values():
        dev.profiling = bool(on)


def set_keep_records(n: int | None) -> None:
    """Keep the last ``n`` records of each kind (an int >= 0; None: all) on every live
    device not profiling and the devices created later (the ``"keep_records"`` config).

    Raises:
        ValueError: ``n`` is not an int >= 0 or None.
    """
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise ValueError(f"keep_records must be an int >= 0 or None, got {n!r}")
    state.keep_records = n
    for dev in state.devices.values():
        dev.keep_records = n


def set_timing_only(on: bool | None) -> None:
    """Run the kernels of every live device and of the devices created later timing-only
    (True), functionally (False), or as ``NPUSIM_TIMING_ONLY`` says at each launch (None,
    the default); the ``"timing_only"`` config key sets the same.

    Timing-only launches give the timing, profiles, traces and checker findings of
    functional ones without computing the results: what the operators write to GM is not
    their output (:mod:`npusim.ascendc.timing_only`). A kernel whose control flow reads a
    value it did not compute fails with a TimingOnlyError (the stream's error status).

    Raises:
        ValueError: ``on`` is not True, False or None.
    """
    if on is not None and not isinstance(on, bool):
        raise ValueError(f"timing_only must be True, False or None, got {on!r}")
    state.timing_only = on
    for dev in state.devices.values():
        dev.timing_only = on


def clear_records() -> None:
    """Forget the task records, kernel profiles and copies of every live device, and the
    devices released while profiling (so the next trace / op summary starts here)."""
    for dev in state.devices.values():
        dev.clear_records()
    state.profiled = []


def profiled_devices() -> list[npusim.Device]:
    """Devices whose records go into the trace and op summary: those released since
    acl.init with profiling on, then the live ones, by device id."""
    return state.profiled + [state.devices[i] for i in sorted(state.devices)]


def write_trace(path) -> None:
    """Write the Chrome trace of :func:`profiled_devices` to ``path`` (npusim.trace).

    Raises:
        OSError: the file cannot be written.
    """
    _trace.write_trace(path, profiled_devices())


def write_op_summary(path) -> int:
    """Write the op summary CSV of :func:`profiled_devices` to ``path``; return the rows.

    Raises:
        OSError: the file cannot be written.
    """
    return _profiling.write_op_summary(path, profiled_devices())


def _write_profiling_files() -> None:
    """Write the configured trace / op summary; a failure leaves a message only."""
    if not state.profiling and not state.profiled:
        return
    for path, write in ((state.trace_path, write_trace),
                        (state.op_summary_path, write_op_summary)):
        if path is None:
            continue
        try:
            write(path)
        except OSError as exc:
            errmsg.report_error(ACL_ERROR_WRITE_FILE, f"npusim profiling: cannot write "
                                f"{path!r}: {exc}")


# -- system parameters -------------------------------------------------------------------
def deterministic() -> bool:
    """The ACL_OPT_DETERMINISTIC system parameter (False when never set)."""
    return bool(state.deterministic)


def set_deterministic(value: int) -> None:
    """Set ACL_OPT_DETERMINISTIC and mirror it onto the current device."""
    state.deterministic = int(value)
    dev = current_device()
    if dev is not None:
        dev.deterministic = bool(value)


# -- errors ----------------------------------------------------------------------------
def sync_error_code(errors: list[Exception]) -> int:
    """Map errors collected from a stream to a status code (0 when there are none).

    npusim.KernelError -> ACL_ERROR_RT_AICORE_EXCEPTION (507015), DeadlockError ->
    ACL_ERROR_RT_STREAM_SYNC_TIMEOUT (507046), anything else ACL_ERROR_RT_INTERNAL_ERROR
    (507000). Every error's text is reported (errmsg.report_error); the code of the first
    one is returned.
    """
    code = ACL_SUCCESS
    for exc in errors:
        if isinstance(exc, DeadlockError):
            this = ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
        elif isinstance(exc, npusim.KernelError):
            this = ACL_ERROR_RT_AICORE_EXCEPTION
        else:
            this = ACL_ERROR_RT_INTERNAL_ERROR
        errmsg.report_error(this, str(exc))
        if code == ACL_SUCCESS:
            code = this
    return code


# -- host buffers ----------------------------------------------------------------------
def register_host_buffer(obj, addr: int, nbytes: int, pinned: bool = False) -> None:
    """Register ``[addr, addr + nbytes)`` as host memory owned by ``obj``.

    A pinned buffer (acl.rt.malloc_host) stays until :func:`unregister_host_buffer`.
    Re-registering an address replaces its entry.
    """
    _prune()
    state.host_buffers.pop(addr, None)  # re-insert last: the newest registration wins
    state.host_buffers[addr] = HostBuffer(addr, nbytes, obj, pinned)


def unregister_host_buffer(addr: int) -> HostBuffer | None:
    return state.host_buffers.pop(addr, None)


def find_host_buffer(addr: int) -> HostBuffer | None:
    """The registered buffer holding byte ``addr`` (the newest when several do), or None."""
    for buf in reversed(state.host_buffers.values()):
        if buf.addr <= addr < buf.end or addr == buf.addr:
            return buf
    return None


def _prune() -> None:
    """Drop unpinned entries whose object only the registry still references."""
    dead = [addr for addr, buf in state.host_buffers.items()
            if not buf.pinned and sys.getrefcount(buf.obj) <= _ONLY_REGISTRY]
    for addr in dead:
        del state.host_buffers[addr]
