"""aclnnFusedSparseAdam: Adam on a sparse gradient (MindSpore ``ops.FusedSparseAdam``), in
place on varRef, mRef and vRef, on the simulated Atlas A2/A3.

Sources: the seed ``mindspore.ops.FusedSparseAdam.txt`` and docs/reference/operators.md §4 (the
CPU kernel ``sparse_apply_adam_cpu_kernel.cc``). MindSpore runs the operator on the CPU;
this two-phase API is the project's, in the aclnn conventions (values first, status
last)::

    workspaceSize, executor, ret = aclnnFusedSparseAdamGetWorkspaceSize(
        varRef, mRef, vRef, beta1Power, beta2Power, lr, beta1, beta2, epsilon, grad,
        indices, useNesterov)
    ret = aclnnFusedSparseAdam(workspace, workspaceSize, executor, stream)

Semantics (not lazy): duplicate indices are summed first and indices outside
``[0, varRef.shape[0])`` are dropped; then every row has ``m = beta1*m`` and ``v = beta2*v``,
the indexed rows ``m += (1-beta1)*g`` and ``v += (1-beta2)*g*g``, and every row
``var -= lr*sqrt(1-beta2Power)/(1-beta1Power) * M / (sqrt(v) + epsilon)`` (epsilon added to
``sqrt(v)``, not to the bias-corrected v), ``M = m``. With useNesterov,
``M = beta1*m + (1-beta1)*g`` on the indexed rows and ``M = 0`` on the rows no index names:
their m and v decay but their var is left unchanged (``var - 0``; NaN only where
``sqrt(v) + epsilon`` is 0 or NaN). That is MindSpore 2.10's CPU kernel as measured
(``pip install mindspore``, CPU, PyNative, first launch in a process: var of those rows
bit-identical, m = m*beta1, v = v*beta2, NaN for v = 0 with epsilon = 0): its Nesterov
moment is a workspace written for the indexed rows only, zero when fresh (docs/reference/
operators.md §4 flags it as undefined; in a process that has launched before, the
workspace holds stale values and those rows move by amounts that follow no formula).

Scalar inputs: beta1Power, beta2Power, lr, beta1, beta2 and epsilon are one-element
aclTensors (shape [1]) of varRef's dtype (FLOAT) in device memory, read by the kernel --
the convention of the aclnn optimizers whose graph operator takes its scalars as inputs
(aclnnApplyAdamW, ops-nn ``optim/apply_adam_w/docs/aclnnApplyAdamW.md``: "shape要求为[1]",
dtype "与varRef保持一致"), shared with aclnnApplyAddSign (docs/tutorial.md §10). A number
or an aclScalar in their place is 161002, and the message says what to pass. Since the
values are on the device, the first phase cannot see them: ``beta1Power == 1`` is not a
parameter error here (lr_t is then infinite and var becomes inf/NaN, as the arithmetic
gives); the MindSpore front end (:mod:`aclnn.mindspore`) refuses it before launching, as
MindSpore's CPU kernel does.

Aliasing: varRef, mRef and vRef are updated in place and may share no byte with one
another; grad's rows are read by index while every row of the outputs is written, and the
scalars once per core, so neither may share a byte with an output. indices is read only
by the Cast and Sort kernels that run before the update, so it may overlap the outputs.
A violation is 161002 naming both arguments (:func:`aclnn.ops._check.no_aliasing`) [R].

The graph: ``Cast`` of int64 indices to int32 (saturating, so an index beyond the int32
range stays out of range and is dropped) -> the shared ``Sort`` kernel (indices with their
positions) -> the ``FusedSparseAdam`` kernel, which merges the duplicates from the sorted
order on the device (kernels/fused_sparse_adam/kernel.py).
"""
from __future__ import annotations

import numpy as np

from aclnn import runtime
from aclnn.constants import ACL_FLOAT, ACL_INT32, ACL_INT64, ACLNN_ERR_PARAM_INVALID, ACLNN_SUCCESS
from aclnn.errmsg import report_error
from aclnn.executor import aclOpExecutor, run_executor
from aclnn.ops import _check
from aclnn.ops._check import ParamError
from aclnn.ops._workspace import Workspace
from npusim.kernels.common.chain import KernelLaunch, enqueue_chain
from npusim.kernels.common.elementwise import cast, elementwise_tiling
from npusim.kernels.common.sorted_index import sort_tiling, sort_with_index
from npusim.kernels.fused_sparse_adam.kernel import fused_sparse_adam
from npusim.kernels.fused_sparse_adam.tiling import tiling

API = "aclnnFusedSparseAdam"
#: The Sort and MrgSort instructions the duplicate merge uses exist on A2/A3 only.
_SUPPORTED_SHORT_SOC = ("Ascend910B", "Ascend910_93")
_SCALARS = ("beta1Power", "beta2Power", "lr", "beta1", "beta2", "epsilon")


def aclnnFusedSparseAdamGetWorkspaceSize(varRef, mRef, vRef, beta1Power, beta2Power, lr, beta1,
                                         beta2, epsilon, grad, indices, useNesterov):
    """First phase: validate, tile, and build the executor.

    Args:
        varRef, mRef, vRef: aclTensors, FLOAT, same shape, >= 1 dim, ND, contiguous;
            updated in place.
        beta1Power, beta2Power, lr, beta1, beta2, epsilon: one-element aclTensors (shape
            [1]; [] or up to 8 dims of one element also do) of varRef's dtype, FLOAT, on the
            device (the seed's float32 scalar tensors; the scalar-input convention of the
            module docstring). beta1Power == 1 is not detected (see the module docstring).
        grad: aclTensor, FLOAT, ``grad.shape[0] == indices`` count and ``grad.shape[1:] ==
            varRef.shape[1:]``.
        indices: aclTensor, INT32 or INT64, 1-D. Values outside ``[0, varRef.shape[0])`` are
            dropped.
        useNesterov: bool.

    Returns:
        ``(workspaceSize, executor, ret)``: workspaceSize in bytes (the 16 MiB system
        workspace, the Sort kernel's merge buffers, the sorted indices and positions and the
        int32 indices of int64 input, each 512 B aligned; 0 when var is empty); ret 0,
        161001 for a null tensor or scalar, 161002 for a dtype, shape, dimension count,
        format or useNesterov the rules do not allow, a scalar input that is not a
        one-element aclTensor of varRef's dtype (a number or an aclScalar included: the
        message says what to pass), an unsupported SoC, non-contiguous or non-device data,
        memory shared where the aliasing rule of the module docstring forbids it (two of
        varRef/mRef/vRef, grad or a scalar with one of them);
        361001 with no device. The message names the argument. A failed call changes
        nothing.
    """
    api = API + "GetWorkspaceSize"
    try:
        scalars = dict(zip(_SCALARS, (beta1Power, beta2Power, lr, beta1, beta2, epsilon)))
        tensors = dict(varRef=varRef, mRef=mRef, vRef=vRef, **scalars, grad=grad,
                       indices=indices)
        _check.not_null(_SCALARS, **tensors)
        dev = _check.device()
        soc = dev.soc
        if soc.short_soc_version not in _SUPPORTED_SHORT_SOC:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"FusedSparseAdam is not supported on "
                             f"{soc.soc_version}: its duplicate merge uses the Sort32/MrgSort "
                             "instructions of Atlas A2/A3")
        for name, t in (("varRef", varRef), ("mRef", mRef), ("vRef", vRef), ("grad", grad)):
            _check.dtype_in(name, t, (ACL_FLOAT,))
        _check.dtype_in("indices", indices, (ACL_INT32, ACL_INT64))
        _check.ndim_between("varRef", varRef, 1, 8)
        _check.same_dtype_shape("varRef", varRef, mRef=mRef, vRef=vRef)
        if indices.ndim != 1:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"indices has {indices.ndim} dimensions; "
                             "it must be 1-D")
        if grad.ndim != varRef.ndim:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"grad has {grad.ndim} dimensions but "
                             f"varRef has {varRef.ndim}; they must be equal")
        if grad.view_dims[0] != indices.view_dims[0]:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"grad.shape[0] = {grad.view_dims[0]} must "
                             f"equal the number of indices, {indices.view_dims[0]}")
        if grad.view_dims[1:] != varRef.view_dims[1:]:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"grad.shape[1:] = {list(grad.view_dims[1:])}"
                             f" must equal varRef.shape[1:] = {list(varRef.view_dims[1:])}")
        _check.scalar_tensors("varRef", varRef, **scalars)
        nesterov = _check.boolean("useNesterov", useNesterov)
        for name, t in tensors.items():
            _check.nd_format(name, t)
        for name, t in tensors.items():
            _check.contiguous_on_device(name, t, dev)
        alias = _check.aliasing(dict(varRef=varRef, mRef=mRef, vRef=vRef),
                                whole=dict(scalars, grad=grad))
        _check.check_aliasing(alias)
    except ParamError as exc:
        return 0, None, report_error(exc.code, f"{api}: {exc}")

    rows = varRef.view_dims[0]
    E = int(np.prod(varRef.view_dims[1:], dtype=np.int64)) if varRef.ndim > 1 else 1
    n = indices.numel()
    td = tiling(soc, rows, E, n, use_nesterov=nesterov)
    st = sort_tiling(soc, n)
    layout = Workspace(td.workspaceSize)
    for name, nbytes in (("sort", st.workspaceSize), ("sorted", 4 * n), ("pos", 4 * n),
                         ("indices", 4 * n if indices.np_dtype == np.int64 else 0)):
        layout.take(name, nbytes)
    parts = layout.parts
    ws = layout.size if td.blockDim else 0
    kernels = []

    def launch(device, stream, workspace):
        if td.blockDim == 0:
            return
        at = {k: workspace + off for k, off in parts.items()}
        i_addr = indices.data_address()
        steps = []
        if n and indices.np_dtype == np.int64:
            ct = elementwise_tiling(soc, n, 8, 4)
            steps.append(KernelLaunch(cast, ct.blockDim, (i_addr, at["indices"], ct,
                                                          np.dtype(np.int64), np.dtype(np.int32)),
                                      "Cast"))
            i_addr = at["indices"]
        if n:
            steps.append(KernelLaunch(sort_with_index, st.blockDim,
                                      (i_addr, at["sorted"], at["pos"], at["sort"], st), "Sort",
                                      sync_all=st.chunkNum > 1))
        steps.append(KernelLaunch(fused_sparse_adam, td.blockDim,
                                  (varRef.data_address(), mRef.data_address(), vRef.data_address(),
                                   *(s.data_address() for s in scalars.values()),
                                   grad.data_address(), at["sorted"], at["pos"], td),
                                  "FusedSparseAdam"))
        kernels[:] = [s.name for s in steps]
        enqueue_chain(device, stream, steps, API)

    executor = aclOpExecutor(API, ws, launch, dev, inputs=[*scalars.values(), grad, indices],
                             outputs=[varRef, mRef, vRef],
                             input_names=[*_SCALARS, "grad", "indices"],
                             output_names=["varRef", "mRef", "vRef"])
    executor.tiling = td
    executor.sort_tiling = st
    executor.kernels = kernels
    executor.alias_check = alias
    return ws, executor, ACLNN_SUCCESS


def aclnnFusedSparseAdam(workspace, workspaceSize, executor, stream):
    """Second phase: enqueue the kernels on ``stream`` (None or 0: the default stream).

    Returns:
        ``ret``: 0 when enqueued (varRef, mRef, vRef are updated when the stream is
        synchronised); 161001 null executor or workspace; 161002 released executor or
        too-small workspace; 361001 invalid stream (docs/reference/api.md §4).
    """
    return run_executor(API, workspace, workspaceSize, executor, stream)


# Calls from several threads take effect one at a time (aclnn.runtime.serialize_api).
runtime.serialize_api(globals())
