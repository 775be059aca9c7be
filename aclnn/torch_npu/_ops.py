"""What an aten operator does on npu tensors (``NpuTensor.__torch_dispatch__``).

In this order:

1. **aclnn operators** (:data:`ACLNN`): ``aten.add.Tensor`` -> ``aclnnAdd``, ``add_`` ->
   ``aclnnInplaceAdd``, ``aten.addmm`` (``nn.Linear``) -> ``aclnnMm`` + ``aclnnAdd``, ``aten.mm`` ->
   ``aclnnMm``, ``aten.bmm`` -> ``aclnnBatchMatMul`` (``torch.matmul`` and ``@`` reach
   these), ``aten._softmax`` -> ``aclnnSoftmax`` (``torch.softmax``,
   ``F.softmax``), ``aten.rms_norm`` -> ``aclnnRmsNorm`` (``F.rms_norm``),
   ``aten.embedding_dense_backward`` -> ``aclnnEmbeddingDenseBackward`` (the backward of
   ``F.embedding``). The operator runs on the tensors' device memory in place of their
   views (aclTensors with the tensors' strides and offsets), on the current device's
   default stream, and the host waits for it, so its profile is in the device's records
   (the op summary). Where the aclnn operator refuses the arguments (a dtype it does not
   take, a shape it does not support: its status and message), the call takes the
   host fallback below, and the warning says why.
2. **Views** (operators whose schema returns an alias of ``self``: ``view``,
   ``transpose``, slicing, ``expand``, ``detach``...): new metadata over the same device
   memory, computed by running the operator on meta tensors.
3. **Copies**: ``copy_`` (host <-> device and device <-> device), ``_to_copy``
   (``.to()``, ``.cpu()``, ``.npu()``, dtype conversions), ``clone``.
4. **The host fallback**, for every other operator: the npu arguments are copied to the
   host, the operator runs there, the arguments it writes are copied back, and its
   tensor results are copied to the device of its first npu argument. One
   :class:`NpuFallbackWarning` per operator name says so; operators that compute nothing
   (allocation, fill, ``item()``: :data:`QUIET`) do not warn.
"""
from __future__ import annotations

import warnings

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

import aclnn
from aclnn import acl
from aclnn.torch_npu import _runtime
from aclnn.torch_npu._tensor import NpuTensor, acl_tensor, empty, from_host, to_host, write

aten = torch.ops.aten


class NpuFallbackWarning(UserWarning):
    """An aten operator on npu tensors ran on the host over a copy (no aclnn operator)."""


#: Operators that allocate, fill, copy or read a scalar: the host path, without a warning.
QUIET = {"empty_like", "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full",
         "zeros_like", "ones_like", "full_like", "fill_", "zero_", "_local_scalar_dense",
         "lift_fresh", "clone", "resize_", "is_pinned", "_has_compatible_shallow_copy_type",
         "equal", "result_type"}

_warned: set[str] = set()
#: aclnn operators run, by name, since the backend was enabled (tests and examples read it).
ran: list[str] = []


def reset_warnings() -> None:
    """Warn again for every operator (each warns once per process otherwise)."""
    _warned.clear()


def _warn(name: str, why: str = "") -> None:
    if name in _warned:
        return
    _warned.add(name)
    warnings.warn(f"aten.{name} on device 'npu' runs on the host over a copy of its npu "
                  f"tensors ({why or 'npusim has no aclnn operator for it'})",
                  NpuFallbackWarning, stacklevel=5)


# -- dispatch ------------------------------------------------------------------------------
def dispatch(func, args, kwargs):
    handler = ACLNN.get(func)
    if handler is not None:
        result = handler(*args, **kwargs)
        if not isinstance(result, _Refused):
            return result
        return fallback(func, args, kwargs, why=result.why)
    handler = COPIES.get(func)
    if handler is not None:
        return handler(*args, **kwargs)
    if func.is_view or func.overloadpacket in _VIEW_LIKE:
        return _view(func, args, kwargs)
    return fallback(func, args, kwargs)


#: Operators whose schema says "new tensor" but which torch only calls where a view is
#: possible (``reshape``'s and ``matmul``'s own building blocks).
_VIEW_LIKE = {aten._unsafe_view, aten._reshape_alias}


def _device_index(flat) -> int:
    for a in flat:
        if isinstance(a, NpuTensor):
            return a.npu_storage.device_index
    return _runtime.ensure().device_id


def _as_meta(t: NpuTensor) -> torch.Tensor:
    elems = t.npu_storage.nbytes // t.element_size()
    base = torch.empty(max(elems, 1), dtype=t.dtype, device="meta")
    return base.as_strided(tuple(t.shape), t.stride(), t.storage_offset())


def _view(func, args, kwargs):
    """A view operator: the same storage under the metadata torch computes for it."""
    flat, spec = tree_flatten((args, kwargs))
    base = next(a for a in flat if isinstance(a, NpuTensor))
    metas = [_as_meta(a) if isinstance(a, NpuTensor) else a for a in flat]
    margs, mkwargs = tree_unflatten(metas, spec)
    out = func(*margs, **mkwargs)

    def wrap(m):
        if isinstance(m, torch.Tensor):
            return NpuTensor(base.npu_storage, m.shape, m.stride(), m.storage_offset(), m.dtype,
                             requires_grad=m.requires_grad)
        return m
    if isinstance(out, (list, tuple)):
        return type(out)(wrap(m) for m in out)
    return wrap(out)


def fallback(func, args, kwargs, why: str = ""):
    """Run ``func`` on the host over copies (module doc, 4)."""
    name = func.overloadpacket.__name__
    if name not in QUIET:
        _warn(name, why)
    flat, spec = tree_flatten((args, kwargs))
    index = _device_index(flat)
    hosts = [to_host(a) if isinstance(a, NpuTensor) else a for a in flat]
    hargs, hkwargs = tree_unflatten(hosts, spec)
    if isinstance(hkwargs.get("device"), (torch.device, str)):
        hkwargs["device"] = "cpu"
    out = func(*hargs, **hkwargs)
    schema = func._schema
    originals, host_of = {}, {}
    for i, arg in enumerate(schema.arguments):
        value = args[i] if i < len(args) else kwargs.get(arg.name)
        hvalue = hargs[i] if i < len(hargs) else hkwargs.get(arg.name)
        info = arg.alias_info
        if info is None or not isinstance(value, NpuTensor):
            continue
        if info.is_write:
            if tuple(hvalue.shape) == tuple(value.shape):
                write(value, hvalue)
            else:                       # resized by the operator (an out= result): a new one
                continue
        for key in info.before_set:
            originals[key], host_of[key] = value, hvalue

    def result(ret, value):
        info = ret.alias_info
        if info is not None:
            for key in info.before_set:
                original = originals.get(key)
                if original is not None and isinstance(value, torch.Tensor) and \
                        tuple(original.shape) == tuple(value.shape):
                    return original
        if isinstance(value, torch.Tensor):
            return from_host(value, index)
        if isinstance(value, (list, tuple)):
            return type(value)(from_host(v, index) if isinstance(v, torch.Tensor) else v
                               for v in value)
        return value
    if len(schema.returns) == 1:
        return result(schema.returns[0], out)
    if isinstance(out, tuple) and len(out) == len(schema.returns):
        return tuple(result(r, v) for r, v in zip(schema.returns, out))
    return out


# -- copies ----------------------------------------------------------------------------------
def _copy_(dst, src, non_blocking=False):
    if isinstance(dst, NpuTensor):
        if isinstance(src, NpuTensor) and src.dtype == dst.dtype and src.shape == dst.shape \
                and src.is_contiguous() and dst.is_contiguous() \
                and src.npu_storage.device_index == dst.npu_storage.device_index:
            n = dst.numel() * dst.element_size()
            if n:
                _runtime.ensure(dst.npu_storage.device_index)
                _runtime.check(acl.rt.memcpy(dst.data_ptr(), n, src.data_ptr(), n,
                                             aclnn.ACL_MEMCPY_DEVICE_TO_DEVICE), "acl.rt.memcpy")
            return dst
        write(dst, to_host(src) if isinstance(src, NpuTensor) else src)
        return dst
    dst.copy_(to_host(src))                     # device -> host
    return dst


def _to_copy(x, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    host = to_host(x) if isinstance(x, NpuTensor) else x
    if dtype is not None:
        host = host.to(dtype)
    target = torch.device(device) if device is not None else x.device
    if target.type == "cpu":
        return host.clone() if host is x else host
    index = target.index if target.index is not None else _runtime.ensure().device_id
    return from_host(host, index)


def _clone(x, *, memory_format=None):
    out = empty(x.shape, x.dtype, x.npu_storage.device_index)
    return _copy_(out, x) if x.is_contiguous() else (write(out, to_host(x)) or out)


COPIES = {aten.copy_.default: _copy_, aten._to_copy.default: _to_copy,
          aten.clone.default: _clone}


# -- aclnn operators ----------------------------------------------------------------------------
class _Refused:
    """An aclnn operator's refusal: the host fallback runs, the warning gives ``why``."""

    def __init__(self, why: str):
        self.why = why


def _run(name: str, first, second, *args) -> _Refused | None:
    """Both phases of aclnn operator ``name`` on the current default stream, then wait."""
    ws, executor, ret = first(*args)
    if ret != aclnn.ACL_SUCCESS:
        return _Refused(f"{name} refused it: {ret} {acl.get_recent_err_msg()}")
    wptr = 0
    try:
        if ws:
            wptr, ret = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
            _runtime.check(ret, "acl.rt.malloc (workspace)")
        _runtime.check(second(wptr, ws, executor, 0), name)
        _runtime.check(acl.rt.synchronize_stream(0), "acl.rt.synchronize_stream")
    finally:
        if wptr:
            acl.rt.free(wptr)
    ran.append(name)
    return None


def _on_one_device(*tensors) -> int | None:
    """The device index of ``tensors`` if all are npu tensors of one device, else None."""
    if not all(isinstance(t, NpuTensor) for t in tensors):
        return None
    indices = {t.npu_storage.device_index for t in tensors}
    return indices.pop() if len(indices) == 1 else None


def _call(name, first, second, inputs, outputs, make_args):
    """Run aclnn ``name`` over npu ``inputs`` into new ``outputs`` (aclTensors made
    for all of them; ``make_args(*acl_tensors)`` gives the first phase's arguments)."""
    index = _on_one_device(*inputs)
    if index is None:
        return _Refused(f"{name} takes npu tensors of one device")
    _runtime.ensure(index)
    tensors = [acl_tensor(t) for t in (*inputs, *outputs)]
    if any(t is None for t in tensors):
        return _Refused(f"{name}: a dtype aclnn has no aclDataType for")
    try:
        refused = _run(name, first, second, *make_args(*tensors))
    finally:
        for t in tensors:
            aclnn.aclDestroyTensor(t)
    return refused


def _add(self, other, *, alpha=1):
    if not isinstance(other, NpuTensor) or not isinstance(self, NpuTensor):
        return _Refused("aclnnAdd takes two npu tensors here (a scalar or host operand is not "
                        "one)")
    dtype = torch.result_type(_as_meta(self), _as_meta(other))
    out = empty(torch.broadcast_shapes(self.shape, other.shape), dtype,
                self.npu_storage.device_index)
    alpha_dtype = aclnn.ACL_FLOAT if dtype.is_floating_point else aclnn.ACL_INT64
    scalar = aclnn.aclCreateScalar(alpha, alpha_dtype)
    try:
        refused = _call("aclnnAdd", aclnn.aclnnAddGetWorkspaceSize, aclnn.aclnnAdd,
                        (self, other), (out,), lambda a, b, o: (a, b, scalar, o))
    finally:
        aclnn.aclDestroyScalar(scalar)
    return refused or out


def _add_(self, other, *, alpha=1):
    """``x.add_(y)`` (the optimisers' and the gradient accumulation's): aclnnInplaceAdd."""
    if not isinstance(other, NpuTensor) or not isinstance(self, NpuTensor):
        return _Refused("aclnnInplaceAdd takes two npu tensors here")
    if torch.result_type(_as_meta(self), _as_meta(other)) != self.dtype:
        return _Refused("aclnnInplaceAdd: the result type is not self's")
    alpha_dtype = aclnn.ACL_FLOAT if self.dtype.is_floating_point else aclnn.ACL_INT64
    scalar = aclnn.aclCreateScalar(alpha, alpha_dtype)
    try:
        refused = _call("aclnnInplaceAdd", aclnn.aclnnInplaceAddGetWorkspaceSize,
                        aclnn.aclnnInplaceAdd, (self, other), (),
                        lambda a, b: (a, b, scalar))
    finally:
        aclnn.aclDestroyScalar(scalar)
    return refused or self


def _addmm(self, mat1, mat2, *, beta=1, alpha=1):
    """``bias + mat1 @ mat2`` (``nn.Linear``): aclnnMm, then aclnnAdd."""
    if beta != 1 or alpha != 1:
        return _Refused("addmm with beta or alpha other than 1 has no aclnn path here")
    product = ACLNN[aten.mm.default](mat1, mat2)
    if isinstance(product, _Refused):
        return product
    return _add(product, self)


def _matmul_like(name, first, second, shape):
    def op(self, mat2):
        if not isinstance(self, NpuTensor) or not isinstance(mat2, NpuTensor):
            return _Refused(f"{name} takes npu tensors")
        if self.dtype != mat2.dtype:
            return _Refused(f"{name}: self is {self.dtype}, mat2 {mat2.dtype}")
        out = empty(shape(self, mat2), self.dtype, self.npu_storage.device_index)
        # cubeMathType 0 (KEEP_DTYPE): torch_npu's default, torch.npu.matmul.allow_hf32
        # False
        return _call(name, first, second, (self, mat2), (out,),
                     lambda a, b, o: (a, b, o, 0)) or out
    return op


def _softmax(self, dim, half_to_float):
    if half_to_float:
        return _Refused("aclnnSoftmax: half_to_float is not modelled")
    out = empty(self.shape, self.dtype, self.npu_storage.device_index)
    return _call("aclnnSoftmax", aclnn.aclnnSoftmaxGetWorkspaceSize, aclnn.aclnnSoftmax,
                 (self,), (out,), lambda x, o: (x, int(dim), o)) or out


def _rms_norm(input, normalized_shape, weight=None, eps=None):     # noqa: A002 (torch's name)
    if weight is None:
        return _Refused("aclnnRmsNorm needs a weight (gamma)")
    n = len(normalized_shape)
    if tuple(weight.shape) != tuple(normalized_shape):
        return _Refused("aclnnRmsNorm: weight must have normalized_shape")
    if eps is None:
        eps = torch.finfo(input.dtype).eps if input.dtype.is_floating_point else 1e-6
    y = empty(input.shape, input.dtype, input.npu_storage.device_index)
    rstd_shape = tuple(input.shape[:input.dim() - n]) + (1,) * n
    rstd = empty(rstd_shape, torch.float32, input.npu_storage.device_index)
    return _call("aclnnRmsNorm", aclnn.aclnnRmsNormGetWorkspaceSize, aclnn.aclnnRmsNorm,
                 (input, weight), (y, rstd), lambda x, g, yo, r: (x, g, float(eps), yo, r)) or y


def _embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                              scale_grad_by_freq):
    out = empty((int(num_weights), grad_output.shape[-1]), grad_output.dtype,
                grad_output.npu_storage.device_index)
    return _call("aclnnEmbeddingDenseBackward", aclnn.aclnnEmbeddingDenseBackwardGetWorkspaceSize,
                 aclnn.aclnnEmbeddingDenseBackward, (grad_output, indices), (out,),
                 lambda g, i, o: (g, i, int(num_weights), int(padding_idx),
                                  bool(scale_grad_by_freq), o)) or out


ACLNN = {
    aten.add.Tensor: _add,
    aten.mm.default: _matmul_like("aclnnMm", aclnn.aclnnMmGetWorkspaceSize, aclnn.aclnnMm,
                                  lambda a, b: (a.shape[0], b.shape[1])),
    aten.bmm.default: _matmul_like("aclnnBatchMatMul", aclnn.aclnnBatchMatMulGetWorkspaceSize,
                                   aclnn.aclnnBatchMatMul,
                                   lambda a, b: (a.shape[0], a.shape[1], b.shape[2])),
    aten.add_.Tensor: _add_,
    aten.addmm.default: _addmm,
    aten._softmax.default: _softmax,
    aten.rms_norm.default: _rms_norm,
    aten.embedding_dense_backward.default: _embedding_dense_backward,
}
