"""``acl.util``: host pointers for numpy arrays and bytes (``reference/api.md`` §5).

A pointer is the real host address of the data, as in pyACL. ``numpy_to_ptr`` and
``bytes_to_ptr`` also register the buffer with :mod:`aclnn.runtime`, which keeps it
alive while it is in use and lets ``acl.rt.memcpy`` bounds-check host pointers inside
it. These functions return values only (no status), so bad arguments raise
``TypeError`` / ``ValueError``.
"""
from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np

from aclnn import runtime

__all__ = ["numpy_to_ptr", "bytes_to_ptr", "ptr_to_numpy", "ptr_to_bytes"]

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
        ptr (int), no status (``reference/api.md`` §5).

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
        ptr (int), no status (``reference/api.md`` §5).

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


def _dtype(npy_type) -> np.dtype:
    if isinstance(npy_type, (int, np.integer)) and not isinstance(npy_type, bool):
        try:
            return _TYPE_NUMS[int(npy_type)]
        except KeyError:
            raise ValueError(f"ptr_to_numpy: {npy_type} is not a numpy type number") from None
    return np.dtype(npy_type)


def _host_address(ptr, func: str) -> int:
    if isinstance(ptr, bool) or not isinstance(ptr, (int, np.integer)):
        raise TypeError(f"{func}: ptr must be an int address, got {type(ptr).__name__}")
    ptr = int(ptr)
    if ptr <= 0:
        raise ValueError(f"{func}: ptr must be a non-null host address, got {ptr}")
    if runtime.is_device_address(ptr):
        raise ValueError(f"{func}: ptr 0x{ptr:x} is device memory; copy it to the host "
                         "with acl.rt.memcpy first")
    return ptr


def _check_registered(ptr: int, nbytes: int, func: str):
    buf = runtime.find_host_buffer(ptr)
    if buf is not None and ptr + nbytes > buf.end:
        raise ValueError(f"{func}: {nbytes} B at 0x{ptr:x} run {ptr + nbytes - buf.end} B past "
                         f"the end of the host buffer of {buf.nbytes} B registered at "
                         f"0x{buf.addr:x}")
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
        the array, no status (``reference/api.md`` §5).

    Raises:
        TypeError / ValueError: a bad argument, a device address, or a range that runs
        past the end of the registered buffer holding ``ptr``.
    """
    ptr = _host_address(ptr, "ptr_to_numpy")
    dtype = _dtype(npy_type)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))
    if any(d < 0 for d in shape):
        raise ValueError(f"ptr_to_numpy: negative dimension in shape {shape}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
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
        a new bytes object, no status (``reference/api.md`` §5).

    Raises:
        TypeError / ValueError: a bad argument, a device address, or a range that runs
        past the end of the registered buffer holding ``ptr``.
    """
    ptr = _host_address(ptr, "ptr_to_bytes")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise ValueError(f"ptr_to_bytes: size must be an int >= 0 bytes, got {size!r}")
    _check_registered(ptr, int(size), "ptr_to_bytes")
    return ctypes.string_at(ptr, int(size))
