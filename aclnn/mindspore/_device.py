"""The simulated device under the front end, and the copies to and from it.

:func:`device` attaches to the current aclnn device, or initialises the runtime with its
defaults and sets device 0 (the module docstring of :mod:`aclnn.mindspore`). A
:class:`Launch` holds the device memory of one operator call and frees it on exit::

    with Launch() as launch:
        var_t = launch.put(var_array)
        launch.run(aclnnXxxGetWorkspaceSize, aclnnXxx, var_t, ...)
        new_var = launch.get(var_t)

A failed runtime call or a nonzero aclnn status raises RuntimeError with the status and
``acl.get_recent_err_msg()`` (the front end has checked the user's arguments before, so
this is the simulator refusing, e.g. an unsupported SoC).
"""
from __future__ import annotations

import numpy as np

import aclnn
from aclnn import acl, runtime


def check(ret: int, what: str) -> None:
    if ret != aclnn.ACL_SUCCESS:
        raise RuntimeError(f"{what} failed with {ret}: {acl.get_recent_err_msg()}")


def device():
    """The npusim Device the front end runs on (see the module docstring)."""
    if runtime.current_device() is None:
        if not runtime.state.initialized:
            check(acl.init(), "acl.init")
        check(acl.rt.set_device(0), "acl.rt.set_device")
    return runtime.current_device()


def to_device(arr: np.ndarray):
    """``(aclTensor, device address)`` of a new contiguous ND copy of ``arr``."""
    arr = np.ascontiguousarray(arr)
    ptr, ret = acl.rt.malloc(max(arr.nbytes, 1), aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    check(ret, "acl.rt.malloc")
    if arr.nbytes:
        check(acl.rt.memcpy(ptr, arr.nbytes, acl.util.numpy_to_ptr(arr), arr.nbytes,
                            aclnn.ACL_MEMCPY_HOST_TO_DEVICE), "acl.rt.memcpy")
    shape = list(arr.shape)
    t = aclnn.aclCreateTensor(shape, aclnn.numpy_to_acl_dtype(arr.dtype),
                              list(aclnn.contiguous_strides(shape)), 0, aclnn.ACL_FORMAT_ND,
                              shape, ptr)
    return t, ptr


def upload(arr: np.ndarray, t) -> None:
    """Copy ``arr`` over the device data of aclTensor ``t`` (same size)."""
    arr = np.ascontiguousarray(arr)
    if arr.nbytes:
        check(acl.rt.memcpy(t.tensor_data, arr.nbytes, acl.util.numpy_to_ptr(arr), arr.nbytes,
                            aclnn.ACL_MEMCPY_HOST_TO_DEVICE), "acl.rt.memcpy")


def from_device(t) -> np.ndarray:
    """The data of contiguous aclTensor ``t`` copied to a new host array."""
    out = np.empty(tuple(t.view_dims), t.np_dtype)
    if out.nbytes:
        check(acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, t.tensor_data, out.nbytes,
                            aclnn.ACL_MEMCPY_DEVICE_TO_HOST), "acl.rt.memcpy")
    return out


class Launch:
    """The device memory of one operator call: tensors put, workspace; freed on exit."""

    def __enter__(self) -> "Launch":
        device()
        self._tensors, self._ptrs = [], []
        return self

    def __exit__(self, *exc) -> None:
        for t in self._tensors:
            aclnn.aclDestroyTensor(t)
        for p in self._ptrs:
            acl.rt.free(p)

    def put(self, arr: np.ndarray):
        t, ptr = to_device(arr)
        self._tensors.append(t)
        self._ptrs.append(ptr)
        return t

    get = staticmethod(from_device)

    def run(self, first, second, *args) -> None:
        """Both phases of an aclnn operator on the default stream, then wait for it."""
        ws, executor, ret = first(*args)
        check(ret, first.__name__)
        wptr = 0
        if ws:
            wptr, ret = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
            check(ret, "acl.rt.malloc (workspace)")
            self._ptrs.append(wptr)
        check(second(wptr, ws, executor, None), second.__name__)
        check(acl.rt.synchronize_stream(None), "acl.rt.synchronize_stream")
