"""aclnnAdd and aclnnInplaceAdd: ``out = self + alpha * other`` with broadcasting and type
promotion.

Source: ``hicann/ops-math: math/add/docs/aclnnAdd&aclnnInplaceAdd_en.md`` (the API, dtypes,
status codes and the official sample) and ``math/add/op_api/aclnn_add.cpp`` (the order of
the checks and the l0 chain); the calling convention is pyACL's (values first, status last,
``docs/reference/api.md`` §5)::

    workspaceSize, executor, ret = aclnnAddGetWorkspaceSize(self, other, alpha, out)
    ret = aclnnAdd(workspace, workspaceSize, executor, stream)
    workspaceSize, executor, ret = aclnnInplaceAddGetWorkspaceSize(selfRef, other, alpha)
    ret = aclnnInplaceAdd(workspace, workspaceSize, executor, stream)

The executor runs, in stream order, the l0 chain of the operator on Atlas A2:

1. ``BroadcastTo`` (:func:`npusim.kernels.add.kernel.broadcast_to`) for each input that is not
   already a contiguous tensor of the output's shape: it writes the broadcast (or strided)
   input contiguously into the workspace. Non-contiguous inputs are supported this way,
   as ``l0op::Contiguous`` does on A2.
2. ``Add`` / ``Axpy`` / ``Mul+Add`` (:func:`npusim.kernels.add.kernel.add`): the elementwise kernel,
   with the promotion casts and the final cast to ``out``'s dtype fused in (the real chain
   launches separate ``Cast`` kernels; the values are the same, see
   :mod:`npusim.kernels.add.tiling` for the recipe and its order of operations).

The elementwise kernel is the Python one unless the kernel implementation of "Add" is "cpp"
(:func:`aclnn.kernel_impl.set_kernel_impl`, ``NPUSIM_KERNEL_IMPL=Add=cpp``): then a recipe
without casts runs ``kernels/add/add_kernel.cpp`` (Ascend C, built in the first phase against
the user's headers, which raises :class:`npusim.cpp.CppBuildError` without them), the same
tiling and bytes; ``executor.kernel_impl`` says which (docs/cpp.md).

Aliasing: the Add kernel reads each tile of self and other before it writes that tile
of out, so out may be exactly self or other (same address, dtype size, shape and
strides: ``aclnnAdd(x, y, out=x)`` is aclnnInplaceAdd) but may not partially overlap an
input it reads in place -- a shifted view, or one of another dtype size, would read
bytes another tile or core has already written: 161002 naming both, in the first phase
(and in the second after ``aclSetInputTensorAddr``/``aclSetOutputTensorAddr``). An input
gathered by BroadcastTo is read before Add starts, so any overlap with it is accepted
[R: CANN does not check aliasing] (:func:`aclnn.ops._check.no_aliasing`).

Workspace: the BroadcastTo buffers only, each rounded up to 512 B [R]. No Ascend C system
workspace is added: the real A2 Add/Axpy kernels are TBE kernels, and the simulated ones
call no library API that uses it (no SyncAll, no Matmul), so ``workspaceSize`` is 0 when
no input needs broadcasting, as the official sample's ``if (workspaceSize > 0)`` allows.
"""
from __future__ import annotations

import numpy as np

from aclnn import runtime
from aclnn.constants import (ACL_BF16, ACL_BOOL, ACL_COMPLEX64, ACL_COMPLEX128, ACL_DOUBLE,
                             ACL_FLOAT, ACL_FLOAT16, ACL_INT8, ACL_INT16, ACL_INT32, ACL_INT64,
                             ACL_UINT8, ACLNN_ERR_PARAM_INVALID, ACLNN_SUCCESS)
from aclnn.errmsg import report_error
from aclnn.executor import aclOpExecutor, run_executor
from aclnn.kernel_impl import kernel_impl
from aclnn.ops import _check
from aclnn.ops._check import ParamError
from aclnn.ops._workspace import Workspace
from aclnn.tensor import aclScalar, aclTensor
from npusim.kernels.add import cpp as _cpp
from npusim.kernels.add import tiling as _tiling
from npusim.kernels.add.kernel import add, broadcast_to

#: Dimensions of self, other and out: "The dimensions cannot exceed 8" (doc, parameter table).
MAX_DIM = 8
#: ``ASCEND910B_DTYPE_SUPPORT_LIST`` of aclnn_add.cpp (NpuArch 2201: Atlas A2/A3).
A2_DTYPES = (ACL_FLOAT, ACL_INT32, ACL_INT64, ACL_FLOAT16, ACL_INT16, ACL_INT8, ACL_UINT8,
             ACL_DOUBLE, ACL_BOOL, ACL_BF16, ACL_COMPLEX64, ACL_COMPLEX128)
#: ``ASCEND910_DTYPE_SUPPORT_LIST`` (Atlas training products: no BFLOAT16).
TRAINING_DTYPES = tuple(d for d in A2_DTYPES if d != ACL_BF16)
#: Products of the doc's support table, by short SoC version.
SUPPORTED_SHORT_SOC = {"Ascend910B": A2_DTYPES, "Ascend910_93": A2_DTYPES,
                       "Ascend910": TRAINING_DTYPES}


def can_cast(src, dst) -> bool:
    """``op::CanCast(src, dst)`` (PyTorch's ``canCast``) on numpy dtypes: a complex value
    cannot become a real one, a floating value cannot become an integer or bool, and only a
    bool can become a bool."""
    src, dst = np.dtype(src), np.dtype(dst)
    bf16 = _tiling.BF16

    def kind(d):
        if d == np.bool_:
            return 0
        if d.kind in "iu":
            return 1
        if d.kind == "f" or d == bf16:
            return 2
        return 3 if d.kind == "c" else 4
    ks, kd = kind(src), kind(dst)
    if 4 in (ks, kd):
        return False
    if ks == 3 and kd != 3:
        return False
    if ks == 2 and kd < 2:
        return False
    if ks != 0 and kd == 0:
        return False
    return True


def broadcast_shape(a, b):
    """numpy broadcasting of two shapes, or None when they do not broadcast."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def _np_dtype(name: str, t):
    try:
        return t.np_dtype
    except ValueError:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has dtype {t.data_type.name}, which "
                         "has no element type in this simulator") from None


def _check_view_on_device(name: str, t, dev) -> None:
    """Strides >= 0 and every byte the view addresses inside one live device allocation
    (161002 otherwise: a freed or foreign pointer)."""
    if t.numel() == 0:
        return
    if any(s < 0 for s in t.strides):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has negative strides "
                         f"{list(t.strides)}; this simulator reads non-negative strides only")
    span = 1 + sum((d - 1) * s for d, s in zip(t.view_dims, t.strides))
    nbytes = span * t.itemsize
    if not t.tensor_data or not dev.gm.contains(t.data_address(), nbytes):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name}'s data 0x{t.data_address():x} + "
                         f"{nbytes} B is not inside one device allocation (aclrtMalloc)")


def _validate(api, self, other, alpha, out, names):
    """The checks of ``CheckParams`` in aclnn_add.cpp, in its order; returns the plan."""
    sn, on, zn = names
    _check.objects((sn, self, aclTensor), (on, other, aclTensor), ("alpha", alpha, aclScalar),
                   (zn, out, aclTensor))
    dev = _check.device()
    soc = dev.soc
    supported = SUPPORTED_SHORT_SOC.get(soc.short_soc_version)
    if supported is None:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"Add is not supported on {soc.soc_version}: "
                         "aclnnAdd runs on Atlas A2/A3 and Atlas training products (doc, "
                         "Supported Products)")
    _check.dtype_in(sn, self, supported)
    _check.dtype_in(on, other, supported)
    xs, ys = self.np_dtype, other.np_dtype
    promote = _tiling.promote_types(xs, ys)
    alpha_dt = alpha.np_dtype
    if promote == np.bool_:
        if alpha_dt != np.bool_ and alpha_dt.kind not in "iu":
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"alpha dtype {alpha.data_type.name} can't "
                             f"be cast to the promote dtype BOOL of {sn} and {on}: it must be an "
                             "integral or bool scalar")
    elif not can_cast(alpha_dt, promote):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"alpha dtype {alpha.data_type.name} can't be "
                         f"cast to the promote dtype {promote.name} of {sn} and {on}")
    zs = _np_dtype(zn, out)
    if not can_cast(promote, zs):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"Promote dtype {promote.name} of {sn} and {on} "
                         f"can't be cast to the desired output type {out.data_type.name} of {zn}")
    for name, t in ((sn, self), (on, other)):
        if t.ndim > MAX_DIM:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has {t.ndim} dimensions; at most "
                             f"{MAX_DIM} are supported")
    shape = broadcast_shape(self.view_dims, other.view_dims)
    if shape is None:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"the shapes of {sn} {list(self.view_dims)} and "
                         f"{on} {list(other.view_dims)} cannot broadcast")
    if tuple(out.view_dims) != shape:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"Shape of {zn} should be {list(shape)}, but "
                         f"current is {list(out.view_dims)}")
    for name, t in ((sn, self), (on, other), (zn, out)):
        _check.nd_format(name, t)
    try:
        recipe = _tiling.add_recipe(xs, ys, zs, alpha.value, promote)
    except _tiling.NotSupportedOnSimulator as exc:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{sn} {xs.name} + alpha * {on} {ys.name} -> "
                         f"{zn} {zs.name}: {exc}") from None
    for name, t in ((sn, self), (on, other), (zn, out)):
        _check.in_storage(name, t)      # before contiguity: the more basic descriptor error
    if not out.is_contiguous():
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{zn} is not contiguous (strides "
                         f"{list(out.strides)} for shape {list(out.view_dims)}); this simulator "
                         "writes contiguous outputs only")
    for name, t in ((sn, self), (on, other), (zn, out)):
        _check_view_on_device(name, t, dev)
    return dev, shape, recipe


def _build(api, op_name, self, other, alpha, out, names):
    try:
        dev, shape, recipe = _validate(api, self, other, alpha, out, names)
        # inputs the Add kernel reads in place, tile for tile with out (the others are
        # gathered into the workspace by BroadcastTo first): out may be one of them
        # exactly, or share no byte with it
        direct = {name: t for name, t in zip(names[:2], (self, other))
                  if not _tiling.needs_gather(t.view_dims, t.strides, shape)}
        alias = _check.aliasing({names[2]: out}, elementwise=direct)
        _check.check_aliasing(alias)
    except ParamError as exc:
        return 0, None, report_error(exc.code, f"{api}: {exc}")
    soc = dev.soc
    total = int(np.prod(shape)) if shape else 1
    empty = self.is_empty() or other.is_empty()
    xs, ys, zs = self.np_dtype, other.np_dtype, out.np_dtype
    td = _tiling.tiling(soc, 0 if empty else total, xs, ys, zs, recipe=recipe)
    gathers, layout = [], Workspace()
    if not empty:
        for i, t in enumerate((self, other)):
            if _tiling.needs_gather(t.view_dims, t.strides, shape):
                bt = _tiling.broadcast_to_tiling(soc, shape, t.view_dims, t.strides, t.np_dtype)
                gathers.append((t, bt, layout.take(i, total * t.itemsize)))
            else:
                gathers.append((t, None, 0))
    workspace_size = layout.size
    # the C++ kernel when asked for and the recipe is one it computes (else the Python one)
    # (built here, in the first phase: CppBuildError when no compiler or headers)
    use_cpp = not empty and kernel_impl("Add") == "cpp" and _cpp.covers(td)
    cpp_kernel = _cpp.kernel() if use_cpp else None

    def launch(device, stream, workspace):
        if empty:                       # the kernel handles empty tensors: nothing to launch
            return
        addrs = []
        for t, bt, off in gathers:
            if bt is None:
                addrs.append(t.data_address())
                continue
            device.launch(stream, broadcast_to, bt.blockDim,
                          (t.data_address(), workspace + off, workspace, bt), name="BroadcastTo")
            addrs.append(workspace + off)
        if use_cpp:                     # the Ascend C twin, same tiling (kernels/add/cpp.py)
            device.launch(stream, cpp_kernel, td.blockDim,
                          (addrs[0], addrs[1], out.data_address(), workspace,
                           _cpp.tiling_bytes(td)), name=td.opType)
            return
        device.launch(stream, add, td.blockDim, (addrs[0], addrs[1], out.data_address(),
                                                 workspace, td), name=td.opType)

    executor = aclOpExecutor(op_name, workspace_size, launch, dev, inputs=[self, other],
                             outputs=[out], input_names=names[:2], output_names=names[2:])
    executor.tiling = td
    executor.kernel_impl = "cpp" if use_cpp else "python"
    executor.broadcast_tilings = tuple(bt for _, bt, _ in gathers)
    executor.alias_check = alias
    return workspace_size, executor, ACLNN_SUCCESS


def aclnnAddGetWorkspaceSize(self, other, alpha, out):
    """First phase of aclnnAdd: validate, plan the l0 chain, build the executor.

    Args:
        self, other: aclTensors of FLOAT, FLOAT16, BF16, INT32, INT16 (and, per the doc,
            INT64, INT8, UINT8, BOOL, DOUBLE, COMPLEX64, COMPLEX128 — see Returns), ND,
            0-8 dims, shapes that broadcast (numpy rules). Non-contiguous views (strides
            >= 0) are read through the BroadcastTo kernel.
        alpha: aclScalar whose dtype can be cast to the promote type of self and other
            (an integral or bool scalar when that type is BOOL).
        out: aclTensor of the broadcast shape, contiguous, of a dtype the promote type
            can be cast to (no float -> integer, no complex -> real, only bool -> bool).

    Returns:
        ``(workspaceSize, executor, ret)``: workspaceSize in bytes (0 without broadcasting or
        for empty tensors), the aclOpExecutor and ``ACLNN_SUCCESS``; or ``(0, None, code)``:

        * 161001 ACLNN_ERR_PARAM_NULLPTR: self, other, alpha or out is null;
        * 161002 ACLNN_ERR_PARAM_INVALID: a dtype of self/other outside the SoC's list;
          alpha or the promote type not castable (to the promote type / to out); more than
          8 dims; shapes that do not broadcast; out's shape not the broadcast shape; a
          non-ND format; an unsupported SoC (310P); and, as simulator checks [R], an
          object that is not an aclTensor/aclScalar, a destroyed one, a view reaching
          outside its storage, a non-contiguous out, negative strides, data outside
          device memory (a freed or foreign pointer), out partially overlapping self or
          other (see "Aliasing" in the module docstring), and dtype
          combinations the simulated vector unit cannot compute (INT64/DOUBLE/COMPLEX
          promote types; INT8/UINT8/BOOL and some promotions until the vector Cast table
          has the needed pairs) — the message says which;
        * 361001: no device set.

        The message names the argument (``acl.get_recent_err_msg()``).
    """
    return _build("aclnnAddGetWorkspaceSize", "aclnnAdd", self, other, alpha, out,
                  ("self", "other", "out"))


def aclnnAdd(workspace, workspaceSize, executor, stream):
    """Second phase of aclnnAdd: enqueue the kernels on ``stream`` (None or 0: default stream).

    Returns 0 when enqueued (results after ``acl.rt.synchronize_stream``); 161001 null
    executor or null workspace with workspaceSize > 0; 161002 released executor, a
    workspace smaller than the first phase asked for or not device memory, or a tensor
    whose memory was freed since the first phase; 361001 invalid stream
    (``docs/reference/api.md`` §4; see :func:`aclnn.executor.run_executor`).
    """
    return run_executor("aclnnAdd", workspace, workspaceSize, executor, stream)


def aclnnInplaceAddGetWorkspaceSize(selfRef, other, alpha):
    """First phase of aclnnInplaceAdd: ``selfRef = selfRef + alpha * other``, in place.

    ``CheckInplace`` first (aclnn_add.cpp): selfRef or other null -> 161001; shapes that do
    not broadcast, or a broadcast shape other than selfRef's -> 161002; then every check of
    :func:`aclnnAddGetWorkspaceSize` with ``out = selfRef`` (so the promote type must be
    castable to selfRef's dtype, alpha must not be null, selfRef must be contiguous).

    Returns:
        ``(workspaceSize, executor, ret)`` as :func:`aclnnAddGetWorkspaceSize`.
    """
    api = "aclnnInplaceAddGetWorkspaceSize"
    try:
        _check.not_null(selfRef=selfRef, other=other)
        shape = broadcast_shape(selfRef.view_dims, other.view_dims)
        if shape is None:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"the shapes of selfRef "
                             f"{list(selfRef.view_dims)} and other {list(other.view_dims)} "
                             "cannot broadcast")
        if shape != tuple(selfRef.view_dims):
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"Expected shape of selfRef should be "
                             f"{list(shape)} (the broadcast of selfRef and other "
                             f"{list(other.view_dims)}), but got {list(selfRef.view_dims)}")
    except ParamError as exc:
        return 0, None, report_error(exc.code, f"{api}: {exc}")
    return _build(api, "aclnnInplaceAdd", selfRef, other, alpha, selfRef,
                  ("selfRef", "other", "selfRef"))


def aclnnInplaceAdd(workspace, workspaceSize, executor, stream):
    """Second phase of aclnnInplaceAdd; as :func:`aclnnAdd`."""
    return run_executor("aclnnInplaceAdd", workspace, workspaceSize, executor, stream)


# Calls from several threads take effect one at a time (aclnn.runtime.serialize_api).
runtime.serialize_api(globals())
