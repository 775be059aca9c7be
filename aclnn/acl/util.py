"""``acl.util``: host pointers for numpy arrays and bytes (``docs/reference/api.md`` §5).

A pointer is the real host address of the data, as in pyACL. ``numpy_to_ptr`` and
``bytes_to_ptr`` also register the buffer with :mod:`aclnn.runtime`, which keeps it
alive while it is in use and lets ``acl.rt.memcpy`` bounds-check host pointers inside
it.

These functions return values only: pyACL gives them no status (``docs/reference/api.md`` §5,
"ptr only, no ret"), so a bad argument cannot be answered with a code. It raises
``TypeError`` (wrong Python type) or ``ValueError`` (bad value), whose message names the
argument -- the only two exceptions that leave this module -- and nothing is read,
written or registered. A raw host address (one that no registered buffer holds) is
dereferenced only after :func:`host_range_mapped` has confirmed that the process maps it,
so a stale or made-up pointer is an error, not a crash of the interpreter [R: the real
pyACL would fault there].
"""
from __future__ import annotations

import ctypes
import math

import ml_dtypes
import numpy as np

from aclnn import runtime

__all__ = ["numpy_to_ptr", "bytes_to_ptr", "ptr_to_numpy", "ptr_to_bytes"]

#: Largest host address (64-bit address space).
_ADDR_MAX = (1 << 64) - 1

# numpy type number -> dtype (numpy's own types plus the ml_dtypes ones).
_TYPE_NUMS = {np.dtype(t).num: np.dtype(t) for t in set(np.sctypeDict.values())}
_TYPE_NUMS.update({np.dtype(t).num: np.dtype(t)
                   for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2)})


def numpy_to_ptr(arr: np.ndarray) -> int:
    """The host address of ``arr``'s data. Mirrors pyACL ``acl.util.numpy_to_ptr``.

    Args:
        arr: a C-contiguous numpy array (it must stay alive while the pointer is used,
            as in pyACL; the runtime also holds it while a call or pending copy uses it).

    Returns:
        ptr (int), no status (``docs/reference/api.md`` §5).

    Raises:
        TypeError: ``arr`` is not a numpy array. ValueError: it is not C-contiguous.
    """
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"numpy_to_ptr: arr must be a numpy.ndarray, got {type(arr).__name__}")
    if not arr.flags.c_contiguous:
        raise ValueError("numpy_to_ptr: arr must be C-contiguous "
                         "(use numpy.ascontiguousarray)")
    addr = arr.ctypes.data
    runtime.register_host_buffer(arr, addr, arr.nbytes)
    return addr


def bytes_to_ptr(b: bytes | bytearray) -> int:
    """The host address of the contents of ``b``. Mirrors pyACL ``acl.util.bytes_to_ptr``.

    As in pyACL, a device-to-host copy into the pointer writes into the bytes object.

    Args:
        b: a bytes or bytearray object.

    Returns:
        ptr (int), no status (``docs/reference/api.md`` §5).

    Raises:
        TypeError: ``b`` is neither bytes nor bytearray.
    """
    if isinstance(b, bytes):
        addr = ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p).value
    elif isinstance(b, bytearray):
        addr = ctypes.addressof((ctypes.c_char * len(b)).from_buffer(b))
    else:
        raise TypeError(f"bytes_to_ptr: b must be bytes or bytearray, got {type(b).__name__}")
    runtime.register_host_buffer(b, addr, len(b))
    return addr


def host_range_mapped(addr: int, nbytes: int, writable: bool = False) -> bool:
    """Whether the process maps ``[addr, addr + nbytes)`` readable (and writable).

    Read from ``/proc/self/maps`` (Linux), whose regions are sorted by address: the
    range must be covered by consecutive regions, each with ``r`` (and ``w`` when
    ``writable``) permission. Used before the simulator dereferences a raw host address,
    so that a bad pointer is an error status instead of a segmentation fault. Where the
    maps file cannot be read (not Linux) it returns True: the address is trusted, as the
    real runtime would [R].

    Args:
        addr: host address (int >= 0); nbytes: bytes (>= 0; 0 is always mapped).
        writable: also require write permission.
    """
    if nbytes <= 0:
        return True
    end = addr + nbytes
    if addr <= 0 or end - 1 > _ADDR_MAX:
        return False
    try:
        with open("/proc/self/maps", "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return True
    pos = addr
    for line in lines:
        fields = line.split(None, 2)
        if len(fields) < 2:
            continue
        lo, _, hi = fields[0].partition(b"-")
        lo, hi = int(lo, 16), int(hi, 16)
        if hi <= pos:
            continue
        if lo > pos:
            return False                 # a hole before the next region
        perms = fields[1]
        if perms[:1] != b"r" or (writable and perms[1:2] != b"w"):
            return False
        pos = hi
        if pos >= end:
            return True
    return False


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _dtype(npy_type) -> np.dtype:
    """``npy_type`` (a numpy type number or anything ``np.dtype`` takes) as a plain dtype."""
    if _is_int(npy_type):
        try:
            return _TYPE_NUMS[int(npy_type)]
        except KeyError:
            raise ValueError(f"ptr_to_numpy: npy_type {int(npy_type)} is not a numpy type "
                             "number") from None
    if npy_type is None or isinstance(npy_type, (bool, np.bool_)):
        raise TypeError(f"ptr_to_numpy: npy_type must be a numpy type number or dtype, "
                        f"got {npy_type!r}")
    try:
        dtype = np.dtype(npy_type)
    except Exception:  # numpy raises several types for what it cannot parse
        raise TypeError(f"ptr_to_numpy: npy_type must be a numpy type number or dtype, got "
                        f"{type(npy_type).__name__} {npy_type!r}") from None
    if dtype.hasobject or dtype.itemsize == 0:
        # Python object references cannot be read from raw memory.
        raise ValueError(f"ptr_to_numpy: npy_type {dtype} holds no plain data")
    return dtype


def _shape(shape) -> tuple[int, ...]:
    """``shape`` (an int or a tuple/list of ints >= 0) as a tuple of ints."""
    if _is_int(shape):
        dims = (int(shape),)
    elif isinstance(shape, (tuple, list)) and all(_is_int(d) for d in shape):
        dims = tuple(int(d) for d in shape)
    else:
        raise TypeError(f"ptr_to_numpy: shape must be an int or a tuple of ints, got {shape!r}")
    if any(d < 0 for d in dims):
        raise ValueError(f"ptr_to_numpy: shape {dims} has a negative dimension")
    return dims


def _host_address(ptr, func: str) -> int:
    if not _is_int(ptr):
        raise TypeError(f"{func}: ptr must be an int address, got {type(ptr).__name__}")
    ptr = int(ptr)
    if not 0 < ptr <= _ADDR_MAX:
        raise ValueError(f"{func}: ptr must be a non-null host address, got {ptr}")
    if runtime.is_device_address(ptr):
        raise ValueError(f"{func}: ptr 0x{ptr:x} is device memory; copy it to the host "
                         "with acl.rt.memcpy first")
    return ptr


def _check_registered(ptr: int, nbytes: int, func: str):
    """The registered buffer holding ``ptr`` (the range must end inside it), or None
    after checking that the raw range is mapped host memory."""
    buf = runtime.find_host_buffer(ptr)
    if buf is not None and ptr + nbytes > buf.end:
        raise ValueError(f"{func}: {nbytes} B at ptr 0x{ptr:x} run {ptr + nbytes - buf.end} B "
                         f"past the end of the host buffer of {buf.nbytes} B registered at "
                         f"0x{buf.addr:x}")
    if buf is None and not host_range_mapped(ptr, nbytes):
        raise ValueError(f"{func}: ptr 0x{ptr:x} + {nbytes} B is not mapped host memory of "
                         "this process")
    return buf


def ptr_to_numpy(ptr: int, shape, npy_type) -> np.ndarray:
    """A numpy array over host memory at ``ptr``. Mirrors pyACL ``acl.util.ptr_to_numpy``.

    The array aliases the memory (no copy): it is a view of the registered array when
    ``ptr`` lies inside one, else it is built from the raw address.

    Args:
        ptr: host address (int).
        shape: int or tuple of ints, in elements.
        npy_type: a numpy type number (e.g. ``np.dtype(np.float32).num``) or a dtype.

    Returns:
        the array, no status (``docs/reference/api.md`` §5).

    Raises:
        TypeError: an argument of the wrong Python type. ValueError: a NULL or device
        address, a negative size, a range that runs past the end of the registered
        buffer holding ``ptr``, or a raw range this process does not map
        (:func:`host_range_mapped`). The message names the argument.
    """
    ptr = _host_address(ptr, "ptr_to_numpy")
    dtype = _dtype(npy_type)
    shape = _shape(shape)
    nbytes = math.prod(shape) * dtype.itemsize     # Python ints: no int64 overflow
    buf = _check_registered(ptr, nbytes, "ptr_to_numpy")
    if buf is not None and isinstance(buf.obj, np.ndarray):
        off = ptr - buf.addr
        flat = buf.obj.reshape(-1).view(np.uint8)
        return flat[off:off + nbytes].view(dtype).reshape(shape)
    raw = (ctypes.c_ubyte * nbytes).from_address(ptr)
    if buf is not None:
        raw._owner = buf.obj  # keep the bytes object alive as long as the array
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def ptr_to_bytes(ptr: int, size: int) -> bytes:
    """A copy of ``size`` bytes of host memory at ``ptr``. Mirrors ``acl.util.ptr_to_bytes``.

    Args:
        ptr: host address (int); size: bytes to read.

    Returns:
        a new bytes object, no status (``docs/reference/api.md`` §5).

    Raises:
        TypeError: an argument of the wrong Python type. ValueError: a NULL or device
        address, a negative size, a range that runs past the end of the registered
        buffer holding ``ptr``, or a raw range this process does not map
        (:func:`host_range_mapped`). The message names the argument.
    """
    ptr = _host_address(ptr, "ptr_to_bytes")
    if not _is_int(size):
        raise TypeError(f"ptr_to_bytes: size must be an int number of bytes, got {size!r}")
    if size < 0:
        raise ValueError(f"ptr_to_bytes: size must be >= 0 bytes, got {int(size)}")
    _check_registered(ptr, int(size), "ptr_to_bytes")
    return ctypes.string_at(ptr, int(size))


# Calls from several threads take effect one at a time (aclnn.runtime.serialize_api).
runtime.serialize_api(globals(), __all__)
