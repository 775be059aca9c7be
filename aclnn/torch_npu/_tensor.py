"""Tensors of device "npu": torch metadata over simulated device memory.

A tensor of device ``npu:i`` is an :class:`NpuTensor`: a torch "wrapper subclass"
(``torch.Tensor._make_wrapper_subclass``: sizes, strides, storage offset, dtype and
device, and no host storage) holding an :class:`NpuStorage`, one ``acl.rt.malloc``
allocation on device ``i``. Views share the storage; the memory is freed with
``acl.rt.free`` when the last tensor using it goes. ``data_ptr()`` is the device address
of the first element, so a pyasc kernel given the tensor reads and writes it in place
(pyasc's ``TorchNpuTensorArgument``).

Why a wrapper subclass: torch 2.13 lets a Python backend register its device (hooks,
device guard, the ``torch.npu`` module: ``_setup_privateuseone_for_python_backend``) and its
operators (``torch.library`` for the PrivateUse1 key), but a tensor with real storage
on a PrivateUse1 device needs an allocator registered from C++ (``REGISTER_ALLOCATOR``).
A wrapper subclass is the Python route torch keeps for tensors whose data live elsewhere
(its ``__torch_dispatch__`` sees every aten operator), so no C++ is built.

:func:`to_host` and :func:`write` move the bytes with ``acl.rt.memcpy``.
"""
from __future__ import annotations

import weakref

import numpy as np

import aclnn
from aclnn import acl, runtime
from aclnn.torch_npu import _allocator, _runtime

import torch

#: torch dtype -> aclDataType of the same bytes.
ACL_DTYPES = {torch.float32: aclnn.ACL_FLOAT, torch.float16: aclnn.ACL_FLOAT16,
              torch.bfloat16: aclnn.ACL_BF16, torch.float64: aclnn.ACL_DOUBLE,
              torch.int8: aclnn.ACL_INT8, torch.int16: aclnn.ACL_INT16,
              torch.int32: aclnn.ACL_INT32, torch.int64: aclnn.ACL_INT64,
              torch.uint8: aclnn.ACL_UINT8, torch.bool: aclnn.ACL_BOOL}


def _free(dev, ptr: int, size: int) -> None:
    # The runtime may have been finalised or the device reset since: its memory is gone
    # with it, so there is nothing left to give back.
    if runtime.state.devices.get(dev.device_id) is dev:
        _allocator.allocator(dev).free(ptr, size)


class NpuStorage:
    """One block of device memory (:mod:`aclnn.torch_npu._allocator`): ``ptr`` (device
    address), ``nbytes`` (what the tensor asked for), ``device_index``."""

    __slots__ = ("ptr", "nbytes", "device_index", "__weakref__")

    def __init__(self, nbytes: int, device_index: int):
        dev = _runtime.ensure(device_index)
        ptr, size = _allocator.allocator(dev).malloc(max(int(nbytes), 1))
        self.ptr, self.nbytes, self.device_index = ptr, int(nbytes), device_index
        weakref.finalize(self, _free, dev, ptr, size)


class NpuTensor(torch.Tensor):
    """A tensor on device "npu" (module doc). Build one with :func:`empty` or the torch
    factories (``torch.empty(..., device="npu")``), not directly."""

    npu_storage: NpuStorage

    @staticmethod
    def __new__(cls, storage: NpuStorage, size, stride, offset: int, dtype: torch.dtype,
                requires_grad: bool = False):
        t = torch.Tensor._make_wrapper_subclass(
            cls, tuple(size), strides=tuple(stride), storage_offset=int(offset), dtype=dtype,
            device=torch.device("npu", storage.device_index), requires_grad=requires_grad)
        t.npu_storage = storage
        return t

    def data_ptr(self) -> int:
        """The device address of the first element."""
        return self.npu_storage.ptr + self.storage_offset() * self.element_size()

    def untyped_storage(self):
        raise RuntimeError("npu tensors keep their data in simulated device memory: use "
                           ".cpu() for a host copy, or data_ptr() for the device address")

    def __repr__(self, *, tensor_contents=None) -> str:
        return repr(to_host(self))[:-1] + f", device='{self.device}')"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        from aclnn.torch_npu import _ops
        return _ops.dispatch(func, args, kwargs or {})


def contiguous_strides(size) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(tuple(size)):
        strides.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(strides))


def empty(size, dtype: torch.dtype, device_index: int | None = None, stride=None) -> NpuTensor:
    """A new tensor of ``size`` on ``npu:device_index`` (None: the current device),
    contiguous unless ``stride`` is given; its bytes are whatever the memory held."""
    if device_index is None:
        device_index = _runtime.ensure().device_id
    size = tuple(int(n) for n in size)
    stride = contiguous_strides(size) if stride is None else tuple(int(s) for s in stride)
    numel = _extent(size, stride, 0)
    storage = NpuStorage(numel * _itemsize(dtype), device_index)
    return NpuTensor(storage, size, stride, 0, dtype)


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def _extent(size, stride, offset: int) -> int:
    """Elements from the storage start to one past the last element the view touches."""
    if any(int(n) == 0 for n in size):
        return int(offset)
    return int(offset) + 1 + sum((int(n) - 1) * int(s) for n, s in zip(size, stride))


def _device_bytes(t: NpuTensor, first: int, count: int) -> torch.Tensor:
    """``count`` bytes of ``t``'s storage from byte ``first``, as a host uint8 tensor."""
    _runtime.ensure(t.npu_storage.device_index)
    out = np.empty(count, np.uint8)
    if count:
        _runtime.check(acl.rt.memcpy(acl.util.numpy_to_ptr(out), count,
                                     t.npu_storage.ptr + first, count,
                                     aclnn.ACL_MEMCPY_DEVICE_TO_HOST), "acl.rt.memcpy")
    return torch.from_numpy(out)


def _put_bytes(t: NpuTensor, first: int, data: torch.Tensor) -> None:
    _runtime.ensure(t.npu_storage.device_index)
    arr = np.ascontiguousarray(data.numpy())
    if arr.nbytes:
        _runtime.check(acl.rt.memcpy(t.npu_storage.ptr + first, arr.nbytes,
                                     acl.util.numpy_to_ptr(arr), arr.nbytes,
                                     aclnn.ACL_MEMCPY_HOST_TO_DEVICE), "acl.rt.memcpy")


def _window(t: NpuTensor) -> tuple[int, int, int]:
    """(first element, element count, offset in the window) of the storage ``t`` views."""
    size, stride, offset = t.shape, t.stride(), t.storage_offset()
    lo = offset + sum((int(n) - 1) * int(s) for n, s in zip(size, stride) if s < 0 and n)
    hi = _extent(size, [abs(s) for s in stride], offset)
    return lo, max(hi - lo, 0), offset - lo


def to_host(t: NpuTensor) -> torch.Tensor:
    """A new host (CPU) tensor with ``t``'s values, shape and dtype (contiguous)."""
    isz = t.element_size()
    lo, count, rel = _window(t)
    raw = _device_bytes(t, lo * isz, count * isz)
    if t.numel() == 0:
        return torch.empty(tuple(t.shape), dtype=t.dtype)
    flat = raw.view(t.dtype)
    return flat.as_strided(tuple(t.shape), t.stride(), rel).clone(
        memory_format=torch.contiguous_format)


def write(t: NpuTensor, value: torch.Tensor) -> None:
    """Store host tensor ``value`` (broadcast and converted to ``t``'s dtype) into ``t``."""
    value = value.to(dtype=t.dtype).expand(tuple(t.shape))
    isz = t.element_size()
    if t.is_contiguous():
        _put_bytes(t, t.storage_offset() * isz, value.contiguous().reshape(-1).view(torch.uint8))
        return
    lo, count, rel = _window(t)                 # read, modify the viewed elements, write back
    raw = _device_bytes(t, lo * isz, count * isz)
    raw.view(t.dtype).as_strided(tuple(t.shape), t.stride(), rel).copy_(value)
    _put_bytes(t, lo * isz, raw)


def from_host(value: torch.Tensor, device_index: int | None = None) -> NpuTensor:
    """A new npu tensor holding host tensor ``value`` (contiguous)."""
    out = empty(value.shape, value.dtype, device_index)
    write(out, value)
    return out


def acl_tensor(t: NpuTensor):
    """An aclTensor describing ``t`` in place (its view over the whole storage); the
    caller destroys it."""
    if t.dtype not in ACL_DTYPES:
        return None
    isz = t.element_size()
    shape = [int(n) for n in t.shape]
    return aclnn.aclCreateTensor(shape, ACL_DTYPES[t.dtype], [int(s) for s in t.stride()],
                                 int(t.storage_offset()), aclnn.ACL_FORMAT_ND,
                                 [max(t.npu_storage.nbytes // isz, 1)], t.npu_storage.ptr)
