"""``acl.rt``: devices, streams, events and memory of the simulated NPU (pyACL style).

Every function mirrors an ``aclrt*`` C API of ``docs/reference/api.md`` §6 with pyACL's
calling convention (§5): values first, the status ``ret`` last, pointers, streams and
events as plain ints. No function raises on bad user input: it returns the status code
and leaves a message naming the argument for ``acl.get_recent_err_msg()``; a call that
fails changes no device memory.

The device runs only when the host waits for it (synchronize_stream / _event / _device,
query_event_status, destroy_stream, reset_device); asynchronous copies and memsets are
tasks on a stream, and the host memory of an asynchronous copy is read or written when
its task runs. A synchronous memcpy/memset acts at once and does not wait for pending
stream work, so read results back only after synchronising, as on the real device.

"The current device" is the device of the calling thread's current context: the current
context is per thread (set_device, create_context and set_context bind one for the
calling thread; a thread that called none of them has none), while devices, memory,
streams, events and contexts are shared by the threads of the process. Each call runs
under one process-wide lock (``npusim.runlock``), so the calls of several threads take
effect in one serial order; a synchronisation runs only work already enqueued and never
waits for another thread (``docs/tutorial.md`` "Threads and contexts").

Status codes used, beyond ACL_SUCCESS (0), and when:

* ACL_ERROR_INVALID_PARAM (100000): a NULL or non-int pointer/handle/size, size 0,
  an invalid enum value (memcpy kind, malloc policy, mem attr, event flag, sys opt);
* ACL_ERROR_UNINITIALIZE (100001): set_device / reset_device / get_device_count before
  acl.init;
* ACL_ERROR_RT_PARAM_INVALID (107000): count > dest_max, a range outside its
  allocation or registered host buffer, a raw host address this process does not map
  (checked before it is dereferenced, so a bad pointer never crashes the interpreter
  [R]), a copy destination inside a read-only numpy array (nothing is written), an
  unknown or destroyed stream/event handle;
* ACL_ERROR_RT_INVALID_DEVICEID (107001): device id outside [0, device_count);
* ACL_ERROR_RT_CONTEXT_NULL (107002): the calling thread has no current context
  (neither set_device nor create_context nor set_context called in it) [R];
* ACL_ERROR_RT_STREAM_CONTEXT (107003): a stream of another device than the calling
  thread's current one, or of another context on the same device (a stream belongs to
  the context current when it was created: :func:`aclnn.runtime.foreign_stream`);
* ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID (107006) / _REVERSAL (107007): elapsed time of a
  never-recorded event / of an end event recorded before the start event;
* ACL_ERROR_RT_SYSPARAMOPT_NOT_SET (107021): ctx_get_sys_param_opt of an unset option;
* ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000): ACL_MEMCPY_INTER_DEVICE_TO_DEVICE;
* ACL_ERROR_RT_MEMORY_ALLOCATION (207001): out of device memory (and, [R], a
  malloc_host the host cannot satisfy);
* ACL_ERROR_RT_MEMORY_FREE (207002): freeing what is not a live allocation start;
* ACL_ERROR_RT_EVENT_NOT_COMPLETE (507006): elapsed time of an event not yet executed;
* ACL_ERROR_RT_AICORE_EXCEPTION (507015): a task of the stream failed (kernel error,
  or an asynchronous copy whose device memory was freed before it ran); the stream then
  runs no more copies, memsets or kernels until this synchronisation reports it
  (npusim.device);
* ACL_ERROR_RT_STREAM_SYNC_TIMEOUT (507046) / ACL_ERROR_RT_EVENT_SYNC_TIMEOUT (507047):
  the awaited work can never run (a stream waits for an event nobody records).
"""
from __future__ import annotations

import ctypes

import numpy as np

import npusim
from npusim.ascendc import timing_only as _timing_only
from npusim.device import DeadlockError
from npusim.errors import DeviceError, InvalidDevicePointer, OutOfDeviceMemory

from aclnn import errmsg, runtime
from aclnn.acl.util import host_range_mapped
from aclnn.constants import (
    ACL_ERROR_INVALID_PARAM,
    ACL_ERROR_RT_CONTEXT_NULL,
    ACL_ERROR_RT_EVENT_NOT_COMPLETE,
    ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
    ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID,
    ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL,
    ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
    ACL_ERROR_RT_INVALID_DEVICEID,
    ACL_ERROR_RT_MEMORY_ALLOCATION,
    ACL_ERROR_RT_MEMORY_FREE,
    ACL_ERROR_RT_PARAM_INVALID,
    ACL_ERROR_RT_STREAM_CONTEXT,
    ACL_ERROR_RT_SYSPARAMOPT_NOT_SET,
    ACL_ERROR_UNINITIALIZE,
    ACL_EVENT_CAPTURE_STREAM_PROGRESS,
    ACL_EVENT_DEVICE_USE_ONLY,
    ACL_EVENT_EXTERNAL,
    ACL_EVENT_IPC,
    ACL_EVENT_SYNC,
    ACL_EVENT_TIME_LINE,
    ACL_SUCCESS,
    aclrtEventRecordedStatus,
    aclrtRunMode,
    aclrtMemAttr,
    aclrtMemcpyKind,
    aclrtMemMallocPolicy,
    aclSysParamOpt,
)

__all__ = [
    "set_device", "reset_device", "get_device", "get_device_count", "synchronize_device",
    "create_stream", "destroy_stream", "synchronize_stream",
    "malloc", "free", "malloc_host", "free_host", "memcpy", "memcpy_async", "memset",
    "memset_async", "get_mem_info",
    "create_event", "create_event_with_flag", "destroy_event", "record_event",
    "stream_wait_event", "synchronize_event", "query_event_status", "event_elapsed_time",
    "ctx_set_sys_param_opt", "ctx_get_sys_param_opt",
    "create_context", "destroy_context", "set_context", "set_current_context", "get_context",
    "get_run_mode",
]

_K = aclrtMemcpyKind
#: kind -> (dst is device memory, src is device memory); DEFAULT is inferred.
_KIND_SIDES = {
    _K.ACL_MEMCPY_HOST_TO_HOST: (False, False),
    _K.ACL_MEMCPY_HOST_TO_DEVICE: (True, False),
    _K.ACL_MEMCPY_DEVICE_TO_HOST: (False, True),
    _K.ACL_MEMCPY_DEVICE_TO_DEVICE: (True, True),
    _K.ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: (True, False),
    _K.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE: (True, True),
}
_POLICY_FLAGS = (aclrtMemMallocPolicy.ACL_MEM_TYPE_LOW_BAND_WIDTH
                 | aclrtMemMallocPolicy.ACL_MEM_TYPE_HIGH_BAND_WIDTH
                 | aclrtMemMallocPolicy.ACL_MEM_ACCESS_USER_SPACE_READONLY)
#: The policies granted in whole 2 MiB pages (aclrtMemMallocPolicy: "内存申请粒度为2M").
_HUGE_ONLY = int(aclrtMemMallocPolicy.ACL_MEM_MALLOC_HUGE_ONLY)
_HUGE_ONLY_P2P = int(aclrtMemMallocPolicy.ACL_MEM_MALLOC_HUGE_ONLY_P2P)
_EVENT_FLAGS = (ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE
                | ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_EXTERNAL | ACL_EVENT_IPC)
_MEM_ATTRS = {int(a) for a in aclrtMemAttr}
_NOT_READY = int(aclrtEventRecordedStatus.ACL_EVENT_RECORDED_STATUS_NOT_READY)


# -- helpers ---------------------------------------------------------------------------
def _fail(code: int, api: str, message: str) -> int:
    return errmsg.report_error(code, f"acl.rt.{api}: {message}")


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _as_ptr(x) -> int | None:
    """An address argument as an int (None is NULL = 0); None when it is no address."""
    if x is None:
        return 0
    if _is_int(x) and x >= 0:
        return int(x)
    return None


def _bad_int(api: str, name: str, value, what: str = "an int >= 0") -> int:
    return _fail(ACL_ERROR_INVALID_PARAM, api, f"{name} must be {what}, got {value!r}")


def _context(api: str):
    """(this thread's current device, ACL_SUCCESS) or (None, ACL_ERROR_RT_CONTEXT_NULL)."""
    dev = runtime.current_device()
    if dev is not None:
        return dev, ACL_SUCCESS
    return None, _fail(ACL_ERROR_RT_CONTEXT_NULL, api, runtime.no_context_reason())


def _stream(api: str, dev, handle, name: str = "stream"):
    """(npusim.Stream, ACL_SUCCESS) or (None, status); NULL is the default stream."""
    if handle is not None and not _is_int(handle):
        return None, _bad_int(api, name, handle, "an int stream handle (0 = default stream)")
    stream = runtime.resolve_stream(handle)
    if stream is None:
        return None, _fail(ACL_ERROR_RT_PARAM_INVALID, api,
                           f"{name}=0x{int(handle):x} is not a live stream "
                           "(never created or already destroyed)")
    problem = runtime.foreign_stream(name, handle, stream)
    if problem is not None:
        return None, _fail(ACL_ERROR_RT_STREAM_CONTEXT, api, problem)
    return stream, ACL_SUCCESS


def _event(api: str, dev, handle, name: str = "event"):
    """(npusim.Event, ACL_SUCCESS) or (None, status)."""
    if handle is None or (_is_int(handle) and handle == 0):
        return None, _fail(ACL_ERROR_INVALID_PARAM, api, f"{name} must not be NULL")
    if not _is_int(handle):
        return None, _bad_int(api, name, handle, "an int event handle")
    event = runtime.resolve_event(handle)
    if event is None:
        return None, _fail(ACL_ERROR_RT_PARAM_INVALID, api,
                           f"{name}=0x{int(handle):x} is not a live event "
                           "(never created or already destroyed)")
    if event.device is not dev:
        return None, _fail(ACL_ERROR_RT_PARAM_INVALID, api,
                           runtime.other_device(name, handle, event.device, dev))
    return event, ACL_SUCCESS


def _device_id(api: str, device_id) -> int:
    """Check acl.init and the device id; return ACL_SUCCESS or the status."""
    if not runtime.state.initialized:
        return _fail(ACL_ERROR_UNINITIALIZE, api, "acl.init has not been called")
    if not _is_int(device_id):
        return _bad_int(api, "device_id", device_id, "an int")
    count = runtime.state.device_count
    if not 0 <= device_id < count:
        return _fail(ACL_ERROR_RT_INVALID_DEVICEID, api,
                     f"device_id={int(device_id)} is out of range [0, {count}): the acl.init "
                     f"config sets npusim.device_count = {count}")
    return ACL_SUCCESS


def _sync_stream(dev, stream) -> int:
    try:
        errors = dev.synchronize_stream(stream)
    except DeadlockError as exc:
        errors = [exc]
    return runtime.sync_error_code(errors)


def _sync_device(dev) -> int:
    errors = []
    for stream in runtime.device_streams(dev):
        try:
            errors.extend(dev.synchronize_stream(stream))
        except DeadlockError as exc:
            errors.append(exc)
            break
    return runtime.sync_error_code(errors)


# -- devices ---------------------------------------------------------------------------
def set_device(device_id: int) -> int:
    """Make a device the calling thread's current device, creating it on first use.
    Mirrors ``aclrtSetDevice`` ("指定当前线程中用于运算的Device").

    The device's default context becomes the thread's current context; every thread that
    sets the same device gets the same default context (aclpythondevg set_device).

    Args:
        device_id: device index in ``[0, device_count)`` (``"npusim.device_count"`` of the
            acl.init config, default 1).

    Returns:
        ret: ACL_SUCCESS; ACL_ERROR_UNINITIALIZE (100001) before acl.init;
        ACL_ERROR_INVALID_PARAM (100000) for a non-int id; ACL_ERROR_RT_INVALID_DEVICEID
        (107001) for an id out of range.

    Source: ``docs/reference/api.md`` §5 (``ret = acl.rt.set_device(device_id)``), §6.
    """
    code = _device_id("set_device", device_id)
    if code == ACL_SUCCESS:
        runtime.set_device(int(device_id))
    return code


def reset_device(device_id: int) -> int:
    """Undo one set_device. Mirrors ``aclrtResetDevice``.

    The last reset of a device first runs its pending work (errors are dropped), then
    releases its memory, streams, events and contexts; a thread whose current context was
    one of them has no current context after.
    Resetting a device that is not set does nothing.

    Args:
        device_id: device index in ``[0, device_count)``.

    Returns:
        ret: ACL_SUCCESS; ACL_ERROR_UNINITIALIZE (100001) before acl.init;
        ACL_ERROR_INVALID_PARAM (100000) for a non-int id; ACL_ERROR_RT_INVALID_DEVICEID
        (107001) for an id out of range.

    Source: ``docs/reference/api.md`` §5 ("reset_device ... returns ret"), §6 ("destroy events
    and streams first").
    """
    code = _device_id("reset_device", device_id)
    if code != ACL_SUCCESS:
        return code
    device_id = int(device_id)
    dev = runtime.state.devices.get(device_id)
    if dev is not None and runtime.state.device_refs.get(device_id, 0) == 1:
        for stream in runtime.device_streams(dev):  # finish pending work, drop its errors
            try:
                dev.synchronize_stream(stream)
            except DeadlockError:
                break
    runtime.release_device(device_id)
    return ACL_SUCCESS


def get_device() -> tuple[int, int]:
    """The calling thread's current device id. Mirrors ``aclrtGetDevice``.

    Returns:
        (device_id, ret): ret is ACL_SUCCESS, or ACL_ERROR_RT_CONTEXT_NULL (107002) with
        device_id -1 when this thread has no current context.

    Source: ``docs/reference/api.md`` §6.
    """
    dev, code = _context("get_device")
    return (dev.device_id, code) if dev is not None else (-1, code)


def get_device_count() -> tuple[int, int]:
    """Number of simulated devices. Mirrors ``aclrtGetDeviceCount``.

    Returns:
        (count, ret): count is ``"npusim.device_count"`` of the acl.init config (default
        1); ret is ACL_SUCCESS, or ACL_ERROR_UNINITIALIZE (100001) with count 0 before
        acl.init [R].

    Source: ``docs/reference/api.md`` §5 (``count, ret = acl.rt.get_device_count()``), §6.
    """
    if not runtime.state.initialized:
        return 0, _fail(ACL_ERROR_UNINITIALIZE, "get_device_count",
                        "acl.init has not been called")
    return runtime.state.device_count, ACL_SUCCESS


def synchronize_device() -> int:
    """Run the current device until all its streams drain. Mirrors ``aclrtSynchronizeDevice``.

    Returns:
        ret: ACL_SUCCESS; ACL_ERROR_RT_CONTEXT_NULL (107002) with no device;
        ACL_ERROR_RT_AICORE_EXCEPTION (507015) when a task failed (the error text is
        reported); ACL_ERROR_RT_STREAM_SYNC_TIMEOUT (507046) when a stream waits for an
        event that no stream will record.

    Source: ``docs/reference/api.md`` §6.
    """
    dev, code = _context("synchronize_device")
    return _sync_device(dev) if dev is not None else code


# -- streams ---------------------------------------------------------------------------
def create_stream() -> tuple[int, int]:
    """Create a stream on the current device. Mirrors ``aclrtCreateStream``.

    Returns:
        (stream, ret): a new int handle (never reused), or 0 with
        ACL_ERROR_RT_CONTEXT_NULL (107002) when no device is set.

    Source: ``docs/reference/api.md`` §5 (``stream, ret = acl.rt.create_stream()``), §6.
    """
    dev, code = _context("create_stream")
    if dev is None:
        return 0, code
    return runtime.add_stream(npusim.Stream(dev)), ACL_SUCCESS


def destroy_stream(stream: int) -> int:
    """Synchronise a stream, then destroy it. Mirrors ``aclrtDestroyStream``.

    Args:
        stream: a handle from create_stream (the default stream cannot be destroyed).

    Returns:
        ret: ACL_SUCCESS; ACL_ERROR_INVALID_PARAM (100000) for NULL or a non-int;
        ACL_ERROR_RT_PARAM_INVALID (107000) for an unknown or destroyed handle;
        ACL_ERROR_RT_STREAM_CONTEXT (107003) for a stream of another device;
        ACL_ERROR_RT_CONTEXT_NULL (107002) with no device. When the synchronisation
        finds a failed task, the stream is still destroyed and its status (507015 or
        507046, see synchronize_stream) is returned.

    Source: ``docs/reference/api.md`` §5, §6 ("aclrtDestroyStream: synchronise first").
    """
    dev, code = _context("destroy_stream")
    if dev is None:
        return code
    if stream is None or (_is_int(stream) and stream == 0):
        return _fail(ACL_ERROR_INVALID_PARAM, "destroy_stream",
                     "stream must not be NULL (the default stream cannot be destroyed)")
    s, code = _stream("destroy_stream", dev, stream)
    if s is None:
        return code
    code = _sync_stream(dev, s)
    runtime.remove_stream(int(stream))
    return code


def synchronize_stream(stream: int) -> int:
    """Run the device until ``stream`` drains. Mirrors ``aclrtSynchronizeStream``.

    Args:
        stream: a stream handle; None or 0 is the default stream.

    Returns:
        ret: ACL_SUCCESS; ACL_ERROR_RT_AICORE_EXCEPTION (507015) when a task of the
        stream failed since the last synchronisation (the error text is reported);
        ACL_ERROR_RT_STREAM_SYNC_TIMEOUT (507046) when the stream waits for an event no
        stream will record; ACL_ERROR_RT_PARAM_INVALID (107000) for an unknown handle;
        ACL_ERROR_RT_STREAM_CONTEXT (107003); ACL_ERROR_RT_CONTEXT_NULL (107002).

    Source: ``docs/reference/api.md`` §5, §6 ("the stream argument ... is NOT null-checked:
    NULL is the default stream").
    """
    dev, code = _context("synchronize_stream")
    if dev is None:
        return code
    s, code = _stream("synchronize_stream", dev, stream)
    return _sync_stream(dev, s) if s is not None else code


# -- memory ----------------------------------------------------------------------------
def malloc(size: int, policy: int) -> tuple[int, int]:
    """Allocate device memory. Mirrors ``aclrtMalloc``.

    The reservation is ``size`` rounded up to 32 B plus 32 B; the address is 64 B
    aligned; the memory is not initialised. ``ACL_MEM_MALLOC_HUGE_ONLY`` (and its P2P
    form) reserves whole 2 MiB pages, 2 MiB aligned: "内存申请粒度为2M,不足2M的倍数,向上2M
    对齐" (aclrtMemMallocPolicy), so the rest of the last page belongs to the allocation.
    The other policies keep the 32 B rounding (``HUGE_FIRST`` takes huge pages only above
    1 MiB, on the same page; npusim does not round those, keeping the GM bounds checks of
    aclnn tensors tight).

    Args:
        size: bytes, > 0. policy: an aclrtMemMallocPolicy value 0-7, optionally OR-ed
            with ACL_MEM_TYPE_* / ACL_MEM_ACCESS_* flags (which behave the same here).

    Returns:
        (dev_ptr, ret): dev_ptr is 0 on failure. ret: ACL_SUCCESS;
        ACL_ERROR_INVALID_PARAM (100000) for size <= 0 or a non-int, or an unknown
        policy; ACL_ERROR_RT_CONTEXT_NULL (107002) with no device [R];
        ACL_ERROR_RT_MEMORY_ALLOCATION (207001) when device memory is exhausted.

    Source: ``docs/reference/api.md`` §5 ("size不能为0"), §6 (documented semantics,
    ``ACL_REQUIRES_POSITIVE_REPORT``, suggested mapping: OOM -> 207001).
    """
    if not _is_int(size) or size <= 0:
        return 0, _bad_int("malloc", "size", size,
                           "a positive int number of bytes (size must not be 0)")
    if not _is_int(policy) or policy < 0 or (policy & ~_POLICY_FLAGS) > 7:
        return 0, _bad_int("malloc", "policy", policy,
                           "an aclrtMemMallocPolicy (0-7, optionally OR-ed with "
                           "ACL_MEM_TYPE_*/ACL_MEM_ACCESS_* flags)")
    dev, code = _context("malloc")
    if dev is None:
        return 0, code
    try:
        huge = (policy & ~_POLICY_FLAGS) in (_HUGE_ONLY, _HUGE_ONLY_P2P)
        return dev.gm.malloc(int(size), huge_page=huge), ACL_SUCCESS
    except OutOfDeviceMemory as exc:
        return 0, _fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "malloc",
                        f"size={int(size)} B: out of device memory on device "
                        f"{dev.device_id}: {exc}")


def free(dev_ptr: int) -> int:
    """Free device memory. Mirrors ``aclrtFree``.

    Args:
        dev_ptr: an address returned by malloc (the start of a live allocation).

    Returns:
        ret: ACL_SUCCESS; ACL_ERROR_INVALID_PARAM (100000) for NULL or a non-int;
        ACL_ERROR_RT_CONTEXT_NULL (107002) with no device; ACL_ERROR_RT_MEMORY_FREE
        (207002) when dev_ptr is not the start of a live allocation.

    Source: ``docs/reference/api.md`` §5, §6 (NULL devPtr -> 100000; suggested mapping:
    unknown pointer -> 207002).
    """
    ptr = _as_ptr(dev_ptr)
    if not ptr:
        return _bad_int("free", "dev_ptr", dev_ptr, "a non-NULL device address")
    dev, code = _context("free")
    if dev is None:
        return code
    try:
        dev.gm.free(ptr)
    except InvalidDevicePointer as exc:
        return _fail(ACL_ERROR_RT_MEMORY_FREE, "free", f"dev_ptr: {exc}")
    return ACL_SUCCESS


def malloc_host(size: int) -> tuple[int, int]:
    """Allocate host memory (kept alive until free_host). Mirrors ``aclrtMallocHost``.

    Args:
        size: bytes, > 0.

    Returns:
        (host_ptr, ret): ret is ACL_SUCCESS, or, with host_ptr 0, ACL_ERROR_INVALID_PARAM
        (100000) for size <= 0 or a non-int, ACL_ERROR_RT_MEMORY_ALLOCATION (207001) when
        the host cannot provide ``size`` bytes [R: the runtime's out-of-memory code].

    Source: ``docs/reference/api.md`` §6 (MallocHost has the same positive-size check).
    """
    if not _is_int(size) or size <= 0:
        return 0, _bad_int("malloc_host", "size", size, "a positive int number of bytes")
    try:
        buf = np.empty(int(size), dtype=np.uint8)
    except (MemoryError, ValueError) as exc:   # numpy: too large for the host / for an array
        return 0, _fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "malloc_host",
                        f"size={int(size)} B cannot be allocated on the host: {exc}")
    runtime.register_host_buffer(buf, buf.ctypes.data, buf.nbytes, pinned=True)
    return buf.ctypes.data, ACL_SUCCESS


def free_host(host_ptr: int) -> int:
    """Free memory from malloc_host. Mirrors ``aclrtFreeHost``.

    Returns:
        ret: ACL_SUCCESS; ACL_ERROR_INVALID_PARAM (100000) for NULL or a non-int;
        ACL_ERROR_RT_MEMORY_FREE (207002) when host_ptr is not from malloc_host [R].

    Source: ``docs/reference/api.md`` §6.
    """
    ptr = _as_ptr(host_ptr)
    if not ptr:
        return _bad_int("free_host", "host_ptr", host_ptr, "a non-NULL host address")
    buf = runtime.state.host_buffers.get(ptr)
    if buf is None or not buf.pinned:
        return _fail(ACL_ERROR_RT_MEMORY_FREE, "free_host",
                     f"host_ptr=0x{ptr:x} was not returned by acl.rt.malloc_host "
                     "(or is already freed)")
    runtime.unregister_host_buffer(ptr)
    return ACL_SUCCESS


def _check_range(api: str, dev, name: str, addr: int, count: int, on_device: bool,
                 writable: bool = False):
    """Check ``[addr, addr + count)``; return (status, registered host buffer or None).

    A host range outside every registered buffer is a raw address: it must be mapped by
    this process (readable, and writable when ``writable``), so that a stale or made-up
    pointer is refused with 107000 instead of crashing the interpreter [R].
    """
    if on_device:
        alloc = dev.gm.find(addr)
        if alloc is None:
            why = f"is not inside a live allocation of device {dev.device_id}"
        elif addr + count > alloc.end:
            why = (f"+ {count} B runs {addr + count - alloc.end} B past the end of its "
                   f"allocation [0x{alloc.base:x}, 0x{alloc.end:x}) of {alloc.alloc_size} B")
        else:
            return ACL_SUCCESS, None
        return _fail(ACL_ERROR_RT_PARAM_INVALID, api, f"{name}=0x{addr:x} {why}"), None
    if runtime.is_device_address(addr):
        return _fail(ACL_ERROR_RT_PARAM_INVALID, api,
                     f"{name}=0x{addr:x} is device memory, but the copy kind says host "
                     "memory"), None
    buf = runtime.find_host_buffer(addr)
    if buf is not None and addr + count > buf.end:
        return _fail(ACL_ERROR_RT_PARAM_INVALID, api,
                     f"{name}=0x{addr:x} + {count} B runs {addr + count - buf.end} B past the "
                     f"end of the host buffer of {buf.nbytes} B registered at 0x{buf.addr:x}"
                     ), None
    if writable and buf is not None and _read_only(buf.obj):
        return _fail(ACL_ERROR_RT_PARAM_INVALID, api,
                     f"{name}=0x{addr:x} is inside a read-only numpy array (its "
                     "flags.writeable is False): a copy may not write into it; pass a "
                     "writable array to acl.util.numpy_to_ptr"), None
    if buf is None and not host_range_mapped(addr, count, writable):
        access = "writable" if writable else "readable"
        return _fail(ACL_ERROR_RT_PARAM_INVALID, api,
                     f"{name}=0x{addr:x} + {count} B is not {access} host memory of this "
                     "process (not device memory either)"), None
    return ACL_SUCCESS, buf


def _read_only(obj) -> bool:
    """Whether a registered host buffer's owner refuses writes (a numpy array whose
    ``flags.writeable`` is False). A ``bytes`` object is written as pyACL does
    (``acl.util.bytes_to_ptr``)."""
    return isinstance(obj, np.ndarray) and not obj.flags.writeable


def _prepare_copy(api: str, dst, dest_max, src, count, kind):
    """Check a copy. Returns (status, plan); plan is None when there is nothing to copy,
    else (device, link, apply) with link "H2D", "D2H", "D2D" or None (host to host)."""
    dst_p, src_p = _as_ptr(dst), _as_ptr(src)
    if dst_p is None:
        return _bad_int(api, "dst", dst, "an int address"), None
    if src_p is None:
        return _bad_int(api, "src", src, "an int address"), None
    for name, value in (("dest_max", dest_max), ("count", count)):
        if not _is_int(value) or value < 0:
            return _bad_int(api, name, value, "an int >= 0 (bytes)"), None
    count, dest_max = int(count), int(dest_max)
    if count == 0:
        return ACL_SUCCESS, None
    if count > dest_max:
        return _fail(ACL_ERROR_RT_PARAM_INVALID, api,
                     f"count={count} B exceeds dest_max={dest_max} B"), None
    for name, value in (("dst", dst_p), ("src", src_p)):
        if value == 0:
            return _fail(ACL_ERROR_INVALID_PARAM, api,
                         f"{name} must not be NULL when count={count} B > 0"), None
    if not _is_int(kind) or not 0 <= kind <= max(aclrtMemcpyKind):
        return _bad_int(api, "kind", kind, "an aclrtMemcpyKind (0 H2H, 1 H2D, 2 D2H, 3 D2D, "
                        "4 DEFAULT, 5 H2BUF2D, 6 INNER D2D, 7 INTER D2D)"), None
    kind = aclrtMemcpyKind(int(kind))
    if kind == aclrtMemcpyKind.ACL_MEMCPY_INTER_DEVICE_TO_DEVICE:
        return _fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, api,
                     "kind=ACL_MEMCPY_INTER_DEVICE_TO_DEVICE: copies between devices are "
                     "not simulated"), None
    dev, code = _context(api)
    if dev is None:
        return code, None
    if kind == aclrtMemcpyKind.ACL_MEMCPY_DEFAULT:
        sides = (dev.gm.find(dst_p) is not None, dev.gm.find(src_p) is not None)
    else:
        sides = _KIND_SIDES[kind]
    pins, raw = [], []
    for name, addr, on_device in (("dst", dst_p, sides[0]), ("src", src_p, sides[1])):
        code, buf = _check_range(api, dev, name, addr, count, on_device, name == "dst")
        if code != ACL_SUCCESS:
            return code, None
        pins.append(buf)
        if not on_device and buf is None:
            raw.append((name, addr, name == "dst"))
    dst_dev, src_dev = sides
    link = "D2D" if dst_dev and src_dev else "H2D" if dst_dev else "D2H" if src_dev else None
    gm = dev.gm

    def apply():
        _ = pins  # the registered host buffers stay alive until the copy has run
        for name, addr, writable in raw:
            # an asynchronous copy runs later: raw host memory may be gone by then
            if not host_range_mapped(addr, count, writable):
                raise DeviceError(f"acl.rt.{api}: {name}=0x{addr:x} + {count} B is no longer "
                                  "mapped host memory when the copy runs")
        if pins[0] is not None and _read_only(pins[0].obj):
            # an asynchronous copy runs later: the array may have been made read-only
            raise DeviceError(f"acl.rt.{api}: dst=0x{dst_p:x} is inside a numpy array made "
                              "read-only before the copy ran")
        if dst_dev and src_dev:
            gm.view(dst_p, count)[:] = gm.view(src_p, count)
            _timing_only.device_copied(gm, dst_p, src_p, count)
        elif dst_dev:
            ctypes.memmove(gm.view(dst_p, count).ctypes.data, src_p, count)
            _timing_only.host_wrote(gm, dst_p, dst_p + count)
        elif src_dev:
            ctypes.memmove(dst_p, gm.view(src_p, count).ctypes.data, count)
        else:
            ctypes.memmove(dst_p, src_p, count)
    return ACL_SUCCESS, (dev, link, apply)


def memcpy(dst: int, dest_max: int, src: int, count: int, kind: int) -> int:
    """Copy memory synchronously. Mirrors ``aclrtMemcpy``.

    The copy happens at once; it does not wait for pending stream tasks.

    Args:
        dst, src: addresses (device addresses from malloc, host addresses from
            acl.util.numpy_to_ptr / bytes_to_ptr or any real host address).
        dest_max: bytes available at dst. count: bytes to copy.
        kind: aclrtMemcpyKind: 0 H2H, 1 H2D, 2 D2H, 3 D2D, 4 DEFAULT (direction taken
            from whether each address is live device memory), 5 as H2D, 6 as D2D.

    Returns:
        ret: ACL_SUCCESS (also for count == 0, without copying);
        ACL_ERROR_RT_PARAM_INVALID (107000) for count > dest_max [R], a device range not
        inside one live allocation, a host range past the end of its registered buffer,
        a host dst inside a read-only numpy array (``flags.writeable`` False) or in
        memory the process does not map writable, or a device address where the kind
        says host; ACL_ERROR_INVALID_PARAM (100000)
        for a NULL dst/src with count > 0, a non-int argument or an invalid kind;
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000) for kind 7 (between devices);
        ACL_ERROR_RT_CONTEXT_NULL (107002) with no device. Nothing is copied on failure.

    Source: ``docs/reference/api.md`` §5 (kinds), §6 (implementation behaviour; suggested
    mapping: count > destMax -> 107000).
    """
    code, plan = _prepare_copy("memcpy", dst, dest_max, src, count, kind)
    if plan is not None:
        plan[2]()
    return code


def memcpy_async(dst: int, dest_max: int, src: int, count: int, kind: int,
                 stream: int) -> int:
    """Enqueue a copy on a stream. Mirrors ``aclrtMemcpyAsync``.

    All checks of memcpy are made at once; the bytes move when the task runs (host
    memory is read or written then, so keep it alive until synchronize_stream). H2D
    and D2H take ``host_link_latency_us + count / host_link_bandwidth`` of device time
    on the host link of their direction, D2D ``2 * count / hbm_bandwidth`` (SoC preset);
    H2H takes no device time. The 64 B alignment pyACL asks for is not enforced.

    Args:
        dst, dest_max, src, count, kind: as memcpy (bytes).
        stream: a stream handle; None or 0 is the default stream.

    Returns:
        ret: as memcpy, plus ACL_ERROR_RT_PARAM_INVALID (107000) for an unknown stream
        and ACL_ERROR_RT_STREAM_CONTEXT (107003) for a stream of another device. A
        failure while the task runs (device memory freed meanwhile) is returned by the
        next synchronisation of the stream.

    Source: ``docs/reference/api.md`` §5 ("must call synchronize_stream afterwards"), §6.
    """
    code, plan = _prepare_copy("memcpy_async", dst, dest_max, src, count, kind)
    if code != ACL_SUCCESS:
        return code
    dev = runtime.current_device()
    if dev is None:  # count == 0 without a device: nothing to enqueue
        return code
    s, code = _stream("memcpy_async", dev, stream)
    if s is None or plan is None:
        return code
    _, link, apply = plan
    if link is None:
        s.enqueue(dev.timed_task(apply, 0.0), name="memcpy_async host to host")
    else:
        dev.copy_async(s, link, int(count), apply)
    return ACL_SUCCESS


def _prepare_memset(api: str, dev_ptr, max_count, value, count):
    """Check a memset. Returns (status, plan): None or (device, apply)."""
    ptr = _as_ptr(dev_ptr)
    if ptr is None:
        return _bad_int(api, "dev_ptr", dev_ptr, "an int device address"), None
    for name, v in (("max_count", max_count), ("count", count)):
        if not _is_int(v) or v < 0:
            return _bad_int(api, name, v, "an int >= 0 (bytes)"), None
    if not _is_int(value):
        return _bad_int(api, "value", value, "an int (its low byte is written)"), None
    count = int(count)
    if count == 0:
        return ACL_SUCCESS, None
    if count > max_count:
        return _fail(ACL_ERROR_RT_PARAM_INVALID, api,
                     f"count={count} B exceeds max_count={int(max_count)} B"), None
    if ptr == 0:
        return _fail(ACL_ERROR_INVALID_PARAM, api, "dev_ptr must not be NULL"), None
    dev, code = _context(api)
    if dev is None:
        return code, None
    code, _ = _check_range(api, dev, "dev_ptr", ptr, count, True)
    if code != ACL_SUCCESS:
        return code, None
    byte = int(value) & 0xFF

    def apply():
        dev.gm.view(ptr, count)[:] = byte
        _timing_only.host_wrote(dev.gm, ptr, ptr + count)
    return ACL_SUCCESS, (dev, apply)


def memset(dev_ptr: int, max_count: int, value: int, count: int) -> int:
    """Fill device memory with a byte value. Mirrors ``aclrtMemset``.

    Args:
        dev_ptr: device address. max_count: bytes available at dev_ptr.
        value: int; its low byte is written (as C memset). count: bytes to set.

    Returns:
        ret: ACL_SUCCESS (also for count == 0); ACL_ERROR_RT_PARAM_INVALID (107000) for
        count > max_count or a range not inside one live allocation;
        ACL_ERROR_INVALID_PARAM (100000) for NULL or non-int arguments;
        ACL_ERROR_RT_CONTEXT_NULL (107002) with no device.

    Source: ``docs/reference/api.md`` §6 (signature; codes follow memcpy [R]).
    """
    code, plan = _prepare_memset("memset", dev_ptr, max_count, value, count)
    if plan is not None:
        plan[1]()
    return code


def memset_async(dev_ptr: int, max_count: int, value: int, count: int, stream: int) -> int:
    """Enqueue a memset on a stream. Mirrors ``aclrtMemsetAsync``.

    Takes ``count / hbm_bandwidth`` of device time [R]. Arguments and codes as memset,
    plus ``stream`` (None or 0 = default stream; 107000 unknown, 107003 other device).

    Source: ``docs/reference/api.md`` §6.
    """
    code, plan = _prepare_memset("memset_async", dev_ptr, max_count, value, count)
    if code != ACL_SUCCESS:
        return code
    dev = runtime.current_device()
    if dev is None:
        return code
    s, code = _stream("memset_async", dev, stream)
    if s is None or plan is None:
        return code
    dev.memset_async(s, int(count), plan[1])
    return ACL_SUCCESS


def get_mem_info(attr: int) -> tuple[int, int, int]:
    """Free and total device memory. Mirrors ``aclrtGetMemInfo``.

    Every aclrtMemAttr (ACL_DDR_MEM, ACL_HBM_MEM and their huge/normal page variants)
    reports the current device's global memory: page kinds are not modelled.

    Args:
        attr: an aclrtMemAttr value.

    Returns:
        (free, total, ret): bytes; free is the capacity minus every reservation
        (``ceil32(size) + 32`` per malloc). ret: ACL_SUCCESS; ACL_ERROR_INVALID_PARAM
        (100000) for an unknown attr; ACL_ERROR_RT_CONTEXT_NULL (107002) with no device.
        free and total are 0 on failure.

    Source: ``docs/reference/api.md`` §5 (``free, total, ret = acl.rt.get_mem_info(attr)``), §6.
    """
    if not _is_int(attr) or int(attr) not in _MEM_ATTRS:
        return 0, 0, _bad_int("get_mem_info", "attr", attr,
                              "an aclrtMemAttr (0 ACL_DDR_MEM, 1 ACL_HBM_MEM, ...)")
    dev, code = _context("get_mem_info")
    if dev is None:
        return 0, 0, code
    return dev.gm.free_bytes, dev.gm.capacity, ACL_SUCCESS


# -- events ----------------------------------------------------------------------------
def create_event() -> tuple[int, int]:
    """Create an event on the current device. Mirrors ``aclrtCreateEvent``.

    Returns:
        (event, ret): a new int handle (never reused), or 0 with
        ACL_ERROR_RT_CONTEXT_NULL (107002) when no device is set.

    Source: ``docs/reference/api.md`` §5 (``event, ret = acl.rt.create_event()``), §6.
    """
    return create_event_with_flag(0)


def create_event_with_flag(flag: int) -> tuple[int, int]:
    """Create an event with flags. Mirrors ``aclrtCreateEventWithFlag``.

    The flags are kept on the event (``npusim.Event.flags``); every event can be
    recorded, waited for and timed.

    Args:
        flag: 0 or an OR of ACL_EVENT_SYNC 0x1, ACL_EVENT_CAPTURE_STREAM_PROGRESS 0x2,
            ACL_EVENT_TIME_LINE 0x8, ACL_EVENT_DEVICE_USE_ONLY 0x10, ACL_EVENT_EXTERNAL
            0x20, ACL_EVENT_IPC 0x40.

    Returns:
        (event, ret): event is 0 on failure. ret: ACL_SUCCESS; ACL_ERROR_INVALID_PARAM
        (100000) for other bits; ACL_ERROR_RT_CONTEXT_NULL (107002) with no device.

    Source: ``docs/reference/api.md`` §5, §6 (event flags).
    """
    if not _is_int(flag) or flag < 0 or flag & ~_EVENT_FLAGS:
        return 0, _bad_int("create_event_with_flag", "flag", flag,
                           f"an OR of the ACL_EVENT_* flags (mask 0x{_EVENT_FLAGS:x})")
    dev, code = _context("create_event_with_flag" if flag else "create_event")
    if dev is None:
        return 0, code
    return runtime.add_event(npusim.Event(dev, flags=int(flag))), ACL_SUCCESS


def destroy_event(event: int) -> int:
    """Destroy an event. Mirrors ``aclrtDestroyEvent``.

    Returns:
        ret: ACL_SUCCESS; ACL_ERROR_INVALID_PARAM (100000) for NULL or a non-int;
        ACL_ERROR_RT_PARAM_INVALID (107000) for an unknown or destroyed handle;
        ACL_ERROR_RT_CONTEXT_NULL (107002) with no device.

    Source: ``docs/reference/api.md`` §5 ("destroy_event(event) returns ret"), §6.
    """
    dev, code = _context("destroy_event")
    if dev is None:
        return code
    ev, code = _event("destroy_event", dev, event)
    if ev is not None:
        runtime.remove_event(int(event))
    return code


def record_event(event: int, stream: int) -> int:
    """Enqueue a record of ``event`` on ``stream``. Mirrors ``aclrtRecordEvent``.

    The event takes the device time (µs clock) at which the stream reaches the record.

    Args:
        event: an event handle. stream: a stream handle; None or 0 is the default stream.

    Returns:
        ret: ACL_SUCCESS; ACL_ERROR_INVALID_PARAM (100000) for a NULL event;
        ACL_ERROR_RT_PARAM_INVALID (107000) for an unknown handle;
        ACL_ERROR_RT_STREAM_CONTEXT (107003); ACL_ERROR_RT_CONTEXT_NULL (107002).

    Source: ``docs/reference/api.md`` §5 ("stream 0 = default stream"), §6 (NULL event ->
    100000).
    """
    dev, code = _context("record_event")
    if dev is None:
        return code
    ev, code = _event("record_event", dev, event)
    if ev is None:
        return code
    s, code = _stream("record_event", dev, stream)
    if s is not None:
        dev.record_event(s, ev)
    return code


def stream_wait_event(stream: int, event: int) -> int:
    """Make ``stream`` wait for the latest record of ``event``. Mirrors
    ``aclrtStreamWaitEvent``.

    Tasks enqueued on ``stream`` after this call start only once the record enqueued
    last before this call has executed; a never-recorded event does not block.

    Args:
        stream: a stream handle; None or 0 is the default stream. event: an event handle.

    Returns:
        ret: as record_event.

    Source: ``docs/reference/api.md`` §5, §6 ("If using the default Stream, set NULL").
    """
    dev, code = _context("stream_wait_event")
    if dev is None:
        return code
    ev, code = _event("stream_wait_event", dev, event)
    if ev is None:
        return code
    s, code = _stream("stream_wait_event", dev, stream)
    if s is not None:
        dev.wait_event(s, ev)
    return code


def synchronize_event(event: int) -> int:
    """Run the device until the latest record of ``event`` has executed. Mirrors
    ``aclrtSynchronizeEvent``.

    Task errors stay with their streams and are returned by synchronize_stream.

    Returns:
        ret: ACL_SUCCESS (also for a never-recorded event); ACL_ERROR_RT_EVENT_SYNC_TIMEOUT
        (507047) when the record can never run [R]; 100000 / 107000 / 107002 as
        record_event.

    Source: ``docs/reference/api.md`` §5 (pyACL event-synchronisation sample), §6.
    """
    dev, code = _context("synchronize_event")
    if dev is None:
        return code
    ev, code = _event("synchronize_event", dev, event)
    if ev is None:
        return code
    try:
        dev.synchronize_event(ev)
    except DeadlockError as exc:
        return _fail(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, "synchronize_event", str(exc))
    return ACL_SUCCESS


def query_event_status(event: int) -> tuple[int, int]:
    """Whether ``event`` has been recorded. Mirrors ``aclrtQueryEventStatus``.

    The simulated device runs as far as the host could wait for it: the call first runs
    the device up to the latest record of the event (as synchronize_event, without
    failing), so a polling loop ends. [R]

    Returns:
        (status, ret): status ACL_EVENT_RECORDED_STATUS_COMPLETE (1) when the latest
        record has executed, else ACL_EVENT_RECORDED_STATUS_NOT_READY (0) (never recorded,
        or blocked behind a wait no stream will satisfy). ret: ACL_SUCCESS, or
        100000 / 107000 / 107002 as record_event with status 0.

    Source: ``docs/reference/api.md`` §6 (aclrtEventRecordedStatus).
    """
    dev, code = _context("query_event_status")
    if dev is None:
        return _NOT_READY, code
    ev, code = _event("query_event_status", dev, event)
    if ev is None:
        return _NOT_READY, code
    try:
        dev.synchronize_event(ev)
    except DeadlockError:
        pass
    return int(ev.complete), ACL_SUCCESS  # 1 = COMPLETE, 0 = NOT_READY


def event_elapsed_time(start: int, end: int) -> tuple[float, int]:
    """Device time between two executed records. Mirrors ``aclrtEventElapsedTime``.

    Documented order: create both, record start and end on the same stream, synchronise
    the stream, then call this. The value is rounded to a C float, as the C API returns.

    Args:
        start, end: event handles.

    Returns:
        (ms, ret): milliseconds of simulated device time, 0.0 on failure. ret:
        ACL_SUCCESS; ACL_ERROR_INVALID_PARAM (100000) for a NULL event;
        ACL_ERROR_RT_PARAM_INVALID (107000) for an unknown one;
        ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID (107006) when an event was never recorded;
        ACL_ERROR_RT_EVENT_NOT_COMPLETE (507006) when its latest record has not
        executed yet (synchronise first); ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL (107007)
        when end executed before start; ACL_ERROR_RT_CONTEXT_NULL (107002).

    Source: ``docs/reference/api.md`` §5 (``ms, ret = acl.rt.event_elapsed_time(start, end)``),
    §6 (documented order; suggested mapping: 107006 / 507006).
    """
    api = "event_elapsed_time"
    dev, code = _context(api)
    if dev is None:
        return 0.0, code
    events = []
    for name, handle in (("start", start), ("end", end)):
        ev, code = _event(api, dev, handle, name)
        if ev is None:
            return 0.0, code
        events.append(ev)
    for name, ev in zip(("start", "end"), events):
        if ev.record_count == 0:
            return 0.0, _fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, api,
                              f"{name} event has never been recorded (acl.rt.record_event)")
        if not ev.complete:
            return 0.0, _fail(ACL_ERROR_RT_EVENT_NOT_COMPLETE, api,
                              f"{name} event's record has not executed yet: synchronise "
                              "the stream (or the event) first")
    elapsed_us = events[1].timestamp_us - events[0].timestamp_us
    if elapsed_us < 0:
        return 0.0, _fail(ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL, api,
                          f"end event executed {-elapsed_us} us before start event")
    return float(np.float32(elapsed_us / 1000.0)), ACL_SUCCESS


# -- system parameters -------------------------------------------------------------------
def ctx_set_sys_param_opt(opt: int, value: int) -> int:
    """Set a system parameter of the current context. Mirrors ``aclrtCtxSetSysParamOpt``.

    ACL_OPT_DETERMINISTIC (0) with value 1 asks operators for deterministic results;
    they read it with ``aclnn.runtime.deterministic()`` (also ``Device.deterministic``).
    The value is kept per process.

    Args:
        opt: ACL_OPT_DETERMINISTIC (0). value: 0 or 1.

    Returns:
        ret: ACL_SUCCESS; ACL_ERROR_INVALID_PARAM (100000) for another opt or value;
        ACL_ERROR_RT_CONTEXT_NULL (107002) with no device.

    Source: ``docs/reference/api.md`` §6 (``aclrtCtxSetSysParamOpt``, ACL_OPT_DETERMINISTIC = 0).
    """
    api = "ctx_set_sys_param_opt"
    if not _is_int(opt) or opt != aclSysParamOpt.ACL_OPT_DETERMINISTIC:
        return _bad_int(api, "opt", opt, "ACL_OPT_DETERMINISTIC (0)")
    if not _is_int(value) or value not in (0, 1):
        return _bad_int(api, "value", value, "0 or 1 for ACL_OPT_DETERMINISTIC")
    dev, code = _context(api)
    if dev is None:
        return code
    runtime.set_deterministic(int(value))
    return ACL_SUCCESS


def ctx_get_sys_param_opt(opt: int) -> tuple[int, int]:
    """Read a system parameter. Mirrors ``aclrtCtxGetSysParamOpt``.

    Returns:
        (value, ret): ret is ACL_SUCCESS; ACL_ERROR_RT_SYSPARAMOPT_NOT_SET (107021) with
        value 0 when the option was never set [R]; ACL_ERROR_INVALID_PARAM (100000) for
        an unknown opt; ACL_ERROR_RT_CONTEXT_NULL (107002) with no device.

    Source: ``docs/reference/api.md`` §6 (aclSysParamOpt, runtime error codes).
    """
    api = "ctx_get_sys_param_opt"
    if not _is_int(opt) or opt != aclSysParamOpt.ACL_OPT_DETERMINISTIC:
        return 0, _bad_int(api, "opt", opt, "ACL_OPT_DETERMINISTIC (0)")
    dev, code = _context(api)
    if dev is None:
        return 0, code
    if runtime.state.deterministic is None:
        return 0, _fail(ACL_ERROR_RT_SYSPARAMOPT_NOT_SET, api,
                        "ACL_OPT_DETERMINISTIC has not been set (ctx_set_sys_param_opt)")
    return runtime.state.deterministic, ACL_SUCCESS


# -- contexts ------------------------------------------------------------------------------
# pyACL: ``context, ret = acl.rt.create_context(device_id)``, ``ret =
# acl.rt.destroy_context(context)``, ``ret = acl.rt.set_context(context)``, ``context, ret =
# acl.rt.get_context()`` (hiascend aclpythondevg "Context管理": create_context, destroy_context,
# set_context, get_context; C: aclrtCreateContext, aclrtDestroyContext, aclrtSetCurrentContext,
# aclrtGetCurrentContext).
def _context_handle(api: str, context):
    """(Context, ACL_SUCCESS) for a live context handle, else (None, status)."""
    if context is None or (_is_int(context) and context == 0):
        return None, _fail(ACL_ERROR_INVALID_PARAM, api, "context must not be NULL")
    if not _is_int(context):
        return None, _bad_int(api, "context", context, "an int context handle")
    ctx = runtime.state.contexts.get(int(context))
    if ctx is None:
        return None, _fail(ACL_ERROR_INVALID_PARAM, api, f"context=0x{int(context):x} is not a "
                           "live context (never created or already destroyed)")
    return ctx, ACL_SUCCESS


def create_context(device_id: int) -> tuple[int, int]:
    """Create a context on a device and make it the calling thread's current context.
    Mirrors ``aclrtCreateContext``.

    The device is set if it was not (the context holds one set_device reference until
    destroy_context). The context has a default stream of its own: a NULL stream
    (None or 0) means it while the context is current.

    Returns:
        (context, ret): a new int handle; or 0 with ACL_ERROR_UNINITIALIZE (100001) before
        acl.init, ACL_ERROR_INVALID_PARAM (100000) for a non-int id,
        ACL_ERROR_RT_INVALID_DEVICEID (107001) for an id outside [0, device_count).

    Source: hiascend aclpythondevg "create_context" (``context, ret =
    acl.rt.create_context(device_id)``), aclrtCreateContext.
    """
    code = _device_id("create_context", device_id)
    if code != ACL_SUCCESS:
        return 0, code
    return runtime.create_context(int(device_id)), ACL_SUCCESS


def destroy_context(context: int) -> int:
    """Destroy a context made by create_context. Mirrors ``aclrtDestroyContext``.

    Its default stream is drained first (errors are dropped); the device reference it
    held is released. A thread whose current context it was has none (and no current
    device) after, whichever thread destroys it.

    Returns:
        ret: ACL_SUCCESS; ACL_ERROR_INVALID_PARAM (100000) for NULL, a non-int, an unknown
        or destroyed handle, or a device's default context ("只能销毁通过aclrtCreateContext
        接口创建的Context", aclrtDestroyContext).
    """
    api = "destroy_context"
    ctx, code = _context_handle(api, context)
    if ctx is None:
        return code
    if not ctx.created:
        return _fail(ACL_ERROR_INVALID_PARAM, api, f"context=0x{int(context):x} is the default "
                     "context of device {}: only a context made by create_context can be "
                     "destroyed (reset_device releases the default one)".format(
                         ctx.device.device_id))
    try:
        ctx.device.synchronize_stream(ctx.default_stream)
    except DeadlockError:
        pass
    runtime.destroy_context(int(context))
    return ACL_SUCCESS


def set_context(context: int) -> int:
    """Make a context the calling thread's current context (and its device the thread's
    current device). Mirrors ``aclrtSetCurrentContext`` ("设置线程的Context"; the last
    call wins); pyACL's name is ``acl.rt.set_context``. Any live context can be bound,
    also one another thread created; the order of work two threads submit to it is
    theirs to keep (aclcppdevg aclrtSetCurrentContext).

    Returns:
        ret: ACL_SUCCESS; ACL_ERROR_INVALID_PARAM (100000) for NULL, a non-int, an unknown
        or destroyed handle.
    """
    return _set_context("set_context", context)


def set_current_context(context: int) -> int:
    """:func:`set_context` under the C API's name (``aclrtSetCurrentContext``)."""
    return _set_context("set_current_context", context)


def _set_context(api: str, context) -> int:
    ctx, code = _context_handle(api, context)
    if ctx is None:
        return code
    runtime.set_current_context(int(context))
    return ACL_SUCCESS


def get_context() -> tuple[int, int]:
    """The calling thread's current context. Mirrors ``aclrtGetCurrentContext`` (pyACL
    ``context, ret = acl.rt.get_context()``).

    Returns:
        (context, ret): the handle (a device's default context after set_device, or the
        context this thread created or set last); 0 with ACL_ERROR_RT_CONTEXT_NULL
        (107002) when this thread has none.
    """
    handle = runtime.current_context()
    if handle is None:
        return 0, _fail(ACL_ERROR_RT_CONTEXT_NULL, "get_context", runtime.no_context_reason())
    return handle, ACL_SUCCESS


def get_run_mode() -> tuple[int, int]:
    """Where the software stack runs. Mirrors ``aclrtGetRunMode`` (pyACL ``run_mode, ret =
    acl.rt.get_run_mode()``).

    Returns:
        (ACL_HOST (1), ACL_SUCCESS): the simulator runs on the host CPU, as an A2/A3 or
        Atlas training card's stack does (ACL_DEVICE is not supported there; hiascend
        "aclrtRunMode").
    """
    return int(aclrtRunMode.ACL_HOST), ACL_SUCCESS


# Calls from several threads take effect one at a time (aclnn.runtime.serialize_api).
runtime.serialize_api(globals(), __all__)
