"""aclnnEmbeddingDenseBackward: the gradient of an embedding lookup, ``out[k] = sum of the
grad rows whose index is k`` (optionally divided by k's count), ``out`` zero elsewhere.

Source: the seed ``aclnnEmbeddingDenseBackward.txt``, docs/reference/api.md §1 and §3 (status
codes, the official sample) and docs/reference/operators.md §2 (the op_api graph, the kernels,
the constraints); pyACL calling convention (values first, status last)::

    workspaceSize, executor, ret = aclnnEmbeddingDenseBackwardGetWorkspaceSize(
        grad, indices, numWeights, paddingIdx, scaleGradByFreq, out)
    ret = aclnnEmbeddingDenseBackward(workspace, workspaceSize, executor, stream)

The graph the first phase builds (op_api ``aclnn_embedding_dense_backward.cpp``), each step
a kernel launch on the stream:

* Atlas A2/A3, EmbeddingDenseGradV2 (flattened grad rows and numWeights <= INT32_MAX):
  ``Cast`` of the indices to int32 (when they are not int32) -> ``Cast`` of fp16/bf16 grad
  to fp32 (when ``IsNeedCast``) -> ``Sort`` of the indices with their positions (not for the
  small-dim kernel) -> ``ZerosLike`` of the result -> ``EmbeddingDenseGradV2`` -> ``Cast``
  to out's dtype, or ``ViewCopy`` to out.
* Atlas training (Ascend910A family), and A2/A3 beyond INT32_MAX: EmbeddingDenseGrad (V1):
  ``Cast`` of grad to fp32 -> ``Cast`` of indices other than int32/int64 -> the V1 kernel
  (it writes every row of its result) -> ``Cast`` / ``ViewCopy`` to out.

The result is built in the workspace (the op's ``AllocTensor``) and copied to ``out`` by the
last kernel; the kernels run as a chain that stops at the first failure, so a failed launch
leaves ``out`` as it was (kernels/common/chain.py).

Aliasing: ``out`` may overlap grad or indices, in any way. The result is built in the
workspace, and the kernel that writes ``out`` (the last Cast or ViewCopy) runs after every
kernel that reads grad and indices has finished, so the values are those of the inputs
as they were; an empty grad or indices reads nothing (ZerosLike writes ``out``). Nothing
is refused for aliasing [R: the order of the graph above].

Indices outside ``[0, numWeights)`` (the doc: "indices ... 取值范围 [0, numWeights-1]";
the V2 kernel itself has no check and would write outside its output) stop the kernel that
reads them: ``acl.rt.synchronize_stream`` returns ACL_ERROR_RT_AICORE_EXCEPTION (507015)
and ``acl.get_recent_err_msg()`` names the index and its position.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from aclnn import runtime
from aclnn.constants import (ACL_BF16, ACL_BOOL, ACL_DOUBLE, ACL_FLOAT, ACL_FLOAT16, ACL_INT8,
                             ACL_INT16, ACL_INT32, ACL_INT64, ACL_UINT8,
                             ACLNN_ERR_PARAM_INVALID, ACLNN_SUCCESS)
from aclnn.errmsg import report_error
from aclnn.executor import aclOpExecutor, run_executor
from aclnn.ops import _check
from aclnn.ops._check import ParamError
from aclnn.ops._workspace import Workspace
from npusim.kernels.common.chain import KernelLaunch, enqueue_chain
from npusim.kernels.common.elementwise import cast, elementwise_tiling, view_copy, zeros_like
from npusim.kernels.common.sorted_index import sort_tiling, sort_with_index
from npusim.kernels.embedding_dense_backward import tiling as edb
from npusim.kernels.embedding_dense_backward.kernel_910 import embedding_dense_grad
from npusim.kernels.embedding_dense_backward.kernel_v2 import embedding_dense_grad_v2

API = "aclnnEmbeddingDenseBackward"
_GRAD_DTYPES_2201 = (ACL_FLOAT, ACL_FLOAT16, ACL_BF16)
_GRAD_DTYPES_910 = (ACL_FLOAT, ACL_FLOAT16)
_INDEX_DTYPES = (ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE, ACL_INT32, ACL_INT64, ACL_INT16, ACL_INT8,
                 ACL_UINT8, ACL_BOOL)
#: Products of the seed (Atlas training, Atlas A2) and of the later ops-nn doc (A3).
_SUPPORTED_SHORT_SOC = ("Ascend910B", "Ascend910_93", "Ascend910")
_F32 = np.dtype(np.float32)


class PrecisionCaveatWarning(UserWarning):
    """A documented Atlas A2/A3 caveat applies to this call (the op still computes)."""


def _uint64(name: str, value, lo: int = 0) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} must be an integer (uint64_t), "
                         f"got {value!r}")
    value = int(value)
    if not lo <= value < 1 << 64:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} = {value} does not fit uint64_t")
    return value


def _check_params(grad, indices, out, numWeights, paddingIdx, scaleGradByFreq):
    """CheckParams of the op_api, then the rules of the doc; returns (dev, attrs)."""
    _check.not_null(grad=grad, indices=indices, out=out)
    dev = _check.device()
    soc = dev.soc
    if soc.short_soc_version not in _SUPPORTED_SHORT_SOC:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"aclnnEmbeddingDenseBackward is not supported "
                         f"on {soc.soc_version}: it runs on Atlas training and Atlas A2/A3 "
                         "products (seed aclnnEmbeddingDenseBackward, 支持的产品型号)")
    num_weights = _uint64("numWeights", numWeights)
    padding = _uint64("paddingIdx", paddingIdx, lo=-(1 << 63)) % (1 << 64)
    scale = _check.boolean("scaleGradByFreq", scaleGradByFreq)
    grad_types = _GRAD_DTYPES_2201 if soc.npu_arch == "2201" else _GRAD_DTYPES_910
    _check.dtype_in("grad", grad, grad_types)
    _check.dtype_in("indices", indices, _INDEX_DTYPES)
    _check.dtype_in("out", out, grad_types)
    _check.ndim_between("grad", grad, 2, edb.MAX_SUPPORT_DIM)
    _check.ndim_between("indices", indices, 1, edb.MAX_SUPPORT_DIM)
    _check.ndim_between("out", out, 1, edb.MAX_SUPPORT_DIM)
    E = grad.view_dims[-1]
    rows = int(np.prod(grad.view_dims[:-1], dtype=np.int64))
    if E != 0 and rows != indices.numel():
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"grad shape {list(grad.view_dims)} is not "
                         f"match with indices shape {list(indices.view_dims)}: grad's dims "
                         f"except the last flatten to {rows} rows, indices hold "
                         f"{indices.numel()} elements")
    if out.ndim != 2:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"out has {out.ndim} dimensions; it must be "
                         "2-D [numWeights, grad.shape[-1]]")
    if list(out.view_dims) != [num_weights, E]:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"out shape {list(out.view_dims)} is not match "
                         f"with infershape [{num_weights}, {E}] ([numWeights, grad.shape[-1]])")
    if out.data_type != grad.data_type:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"out has dtype {out.data_type.name} but grad "
                         f"has {grad.data_type.name}; they must be equal")
    for name, t in (("grad", grad), ("indices", indices), ("out", out)):
        _check.nd_format(name, t)
    for name, t in (("grad", grad), ("indices", indices), ("out", out)):
        _check.contiguous_on_device(name, t, dev)
    return dev, dict(num_weights=num_weights, padding=padding, scale=scale, rows=rows, E=E)


def aclnnEmbeddingDenseBackwardGetWorkspaceSize(grad, indices, numWeights, paddingIdx,
                                               scaleGradByFreq, out):
    """First phase: validate, choose the kernels, tile, and build the executor.

    Args:
        grad: aclTensor, 2-8 dims, FLOAT/FLOAT16 (and BF16 on Atlas A2/A3), ND, contiguous;
            its dims but the last flatten to ``indices``'s element count.
        indices: aclTensor, 1-8 dims, FLOAT, FLOAT16, DOUBLE, INT32, INT64, INT16, INT8,
            UINT8 or BOOL, values in ``[0, numWeights)`` (floats are truncated toward zero
            when cast to int32 [R]).
        numWeights: uint64, rows of ``out``.
        paddingIdx: uint64; the row that receives nothing. A negative Python int is taken as
            the uint64 it converts to in C (2^64 + paddingIdx) and matches no index (seed:
            "如果paddingIdx为负数则不进行处理").
        scaleGradByFreq: bool; divide each contribution by its index's count over all
            indices.
        out: aclTensor, 2-D ``[numWeights, grad.shape[-1]]``, grad's dtype, ND, contiguous.
            Written by the second phase.

    Returns:
        ``(workspaceSize, executor, ret)``. workspaceSize (bytes): 0 for an empty grad or
        indices (``out`` is zeroed); otherwise the 16 MiB system workspace, the V2 kernel's
        own part (counts ``align8(numWeights)*4`` with scaleGradByFreq; fp16/bf16 staging),
        the Sort kernel's merge buffers and the tensors of the graph (int32 indices, sorted
        indices and positions, fp32 grad, the result), each 512 B aligned [R for the
        layout]. ``ret``: 0; 161001 when grad, indices or out is None; 161002 for a dtype,
        dimension count, shape, format or attribute the doc does not allow, out's dtype
        differing from grad's, an unsupported SoC, non-contiguous or non-device data, and
        on Atlas training products with scaleGradByFreq when ``embeddingDim`` is not below
        ``(180192 - countsSize*4)/36`` (int32 indices) or ``(180192 - countsSize*8)/20``
        (int64), ``countsSize = numWeights/coreNum + numWeights%coreNum`` (seed 约束与限制);
        361001 when no device is set. The message names the argument.

    The deterministic setting (``acl.rt.ctx_set_sys_param_opt(ACL_OPT_DETERMINISTIC, 1)``)
    is read here, as the op's tiling reads it. On Atlas A2/A3 the documented caveats (grad's
    last axis above 14336; flattened grad rows or numWeights above INT32_MAX; indices above
    2139095040) do not reject the call: the run reports them as a
    :class:`PrecisionCaveatWarning` and in ``KernelProfile.warnings``.
    """
    api = API + "GetWorkspaceSize"
    try:
        dev, a = _check_params(grad, indices, out, numWeights, paddingIdx, scaleGradByFreq)
        soc = dev.soc
        rows, E, nw = a["rows"], a["E"], a["num_weights"]
        empty = grad.numel() == 0 or indices.numel() == 0 or out.numel() == 0
        v2 = edb.is_compute_by_v2(soc, rows, nw)
        if not empty and not v2 and a["scale"] and soc.npu_arch != "2201":
            bound, cs = edb.embedding_dim_bound_910(nw, soc.vector_block_num, indices.np_dtype)
            if E >= bound:
                int64 = indices.np_dtype == np.int64
                formula = ("(180192 - countsSize*8)/20" if int64 else "(180192 - countsSize*4)/36")
                raise ParamError(ACLNN_ERR_PARAM_INVALID, f"grad's last dimension "
                                 f"(embeddingDim) {E} must be less than {formula} = {bound:.4f} "
                                 f"on Atlas training products with scaleGradByFreq "
                                 f"({'int64' if int64 else 'int32'} indices; countsSize = "
                                 f"numWeights/coreNum + numWeights%coreNum = {nw}/"
                                 f"{soc.vector_block_num} + {nw}%{soc.vector_block_num} = {cs})")
    except ParamError as exc:
        return 0, None, report_error(exc.code, f"{api}: {exc}")

    if empty:
        return _empty_executor(dev, grad, indices, out)
    if v2:
        return _v2_executor(dev, grad, indices, out, a)
    return _v1_executor(dev, grad, indices, out, a)


def _caveat_hook(notes: list[str]):
    """on_done of the main kernel: put the caveats in the profile and warn."""
    def on_done(profile):
        for note in notes:
            msg = f"{API}: {note} (seed aclnnEmbeddingDenseBackward, 约束与限制, Atlas A2)"
            profile.warnings.append(msg)
            warnings.warn(msg, PrecisionCaveatWarning, stacklevel=2)
    return on_done if notes else None


def _elementwise(soc, name, total, src_dtype, dst_dtype, src_addr, dst_addr):
    """A Cast / ViewCopy launch of ``total`` elements (None when there is nothing to do)."""
    src_dtype, dst_dtype = np.dtype(src_dtype), np.dtype(dst_dtype)
    same = src_dtype == dst_dtype               # ViewCopy: one UB buffer per tile
    t = elementwise_tiling(soc, total, src_dtype.itemsize, 0 if same else dst_dtype.itemsize)
    if t.blockDim == 0:
        return None
    if src_dtype == dst_dtype:
        return KernelLaunch(view_copy, t.blockDim, (src_addr, dst_addr, t, src_dtype), "ViewCopy")
    return KernelLaunch(cast, t.blockDim, (src_addr, dst_addr, t, src_dtype, dst_dtype), name)


def _enqueue(device, stream, steps, kernels: list) -> None:
    """Enqueue the graph's kernels (None: a step this call does not need) as one chain;
    ``kernels`` receives their names."""
    steps = [s for s in steps if s is not None]
    kernels[:] = [s.name for s in steps]
    enqueue_chain(device, stream, steps, API)


def _executor(dev, ws: Workspace, launch, tensors, td, path: str, caveats, kernels):
    """The executor of a graph: its workspace layout, tiling, path, caveats and kernels."""
    grad, indices, out = tensors
    executor = aclOpExecutor(API, ws.size, launch, dev, inputs=[grad, indices], outputs=[out],
                             input_names=["grad", "indices"], output_names=["out"])
    executor.tiling = td
    executor.path = path
    executor.caveats = caveats
    executor.kernels = kernels
    executor.workspace_parts = dict(ws.parts)
    return executor


def _empty_executor(dev, grad, indices, out):
    """Empty grad or indices: ``out`` = zeros (ZerosLike + ViewCopy of the op_api; here one
    ZerosLike on out). An empty ``out`` (numWeights or embeddingDim 0) launches nothing [R]."""
    soc = dev.soc
    t = elementwise_tiling(soc, out.numel(), 0, out.itemsize)

    def launch(device, stream, workspace):
        if t.blockDim:
            enqueue_chain(device, stream, [KernelLaunch(
                zeros_like, t.blockDim, (out.data_address(), t, out.np_dtype), "ZerosLike")], API)

    executor = aclOpExecutor(API, 0, launch, dev, inputs=[grad, indices], outputs=[out],
                             input_names=["grad", "indices"], output_names=["out"])
    executor.path = "empty"
    executor.kernels = ["ZerosLike"] if t.blockDim else []
    executor.tiling = None
    return 0, executor, ACLNN_SUCCESS


def _v2_executor(dev, grad, indices, out, a):
    soc = dev.soc
    rows, E, nw = a["rows"], a["E"], a["num_weights"]
    det = runtime.deterministic()
    grad_dtype, idx_dtype = grad.np_dtype, indices.np_dtype
    need_cast = edb.is_need_cast(soc, grad.numel(), out.numel(), rows, a["scale"])
    kdtype = _F32 if need_cast else grad_dtype
    small = edb.check_is_small_dim_mode(det, grad_dtype, E, nw)
    td = edb.tiling(soc, rows, E, nw, a["padding"], a["scale"], kdtype, deterministic=det,
                    small_dim=small)
    caveats = edb.a2_caveats(E, rows, nw, indices.numel())
    st = None if small else sort_tiling(soc, rows)
    ws = Workspace(edb.SYS_WORKSPACE_SIZE)
    ws.take("v2", td.userWorkspaceSize)
    if st is not None:
        ws.take("sort", st.workspaceSize)
        ws.take("sorted", 4 * rows)
        ws.take("pos", 4 * rows)
    if idx_dtype != np.int32:
        ws.take("indices", 4 * rows)
    if kdtype != grad_dtype:
        ws.take("grad", 4 * rows * E)
    ws.take("result", nw * E * kdtype.itemsize)
    kernels = []

    def launch(device, stream, workspace):
        at = {k: workspace + off for k, off in ws.parts.items()}
        g_addr, i_addr, o_addr = grad.data_address(), indices.data_address(), out.data_address()
        steps = []
        if idx_dtype != np.int32:
            steps.append(_elementwise(soc, "Cast", rows, idx_dtype, np.int32, i_addr, at["indices"]))
            i_addr = at["indices"]
        if kdtype != grad_dtype:
            steps.append(_elementwise(soc, "Cast", rows * E, grad_dtype, kdtype, g_addr, at["grad"]))
            g_addr = at["grad"]
        pos_addr = 0
        if st is not None:
            steps.append(KernelLaunch(sort_with_index, st.blockDim,
                                      (i_addr, at["sorted"], at["pos"], at["sort"], st), "Sort",
                                      sync_all=st.chunkNum > 1))
            i_addr, pos_addr = at["sorted"], at["pos"]
        zt = elementwise_tiling(soc, nw * E, 0, kdtype.itemsize)
        steps.append(KernelLaunch(zeros_like, zt.blockDim, (at["result"], zt, kdtype), "ZerosLike"))
        steps.append(KernelLaunch(embedding_dense_grad_v2, td.blockDim,
                                  (g_addr, i_addr, pos_addr, at["result"], at["v2"], td, kdtype),
                                  "EmbeddingDenseGradV2", sync_all=td.needSyncAll,
                                  on_done=_caveat_hook(caveats)))
        steps.append(_elementwise(soc, "Cast", nw * E, kdtype, out.np_dtype, at["result"], o_addr))
        _enqueue(device, stream, steps, kernels)

    executor = _executor(dev, ws, launch, (grad, indices, out), td,
                         "V2-small-dim" if small else "V2", caveats, kernels)
    executor.sort_tiling = st
    return ws.size, executor, ACLNN_SUCCESS


def _v1_executor(dev, grad, indices, out, a):
    soc = dev.soc
    rows, E, nw = a["rows"], a["E"], a["num_weights"]
    grad_dtype, idx_dtype = grad.np_dtype, indices.np_dtype
    kidx = idx_dtype if idx_dtype in (np.dtype(np.int32), np.dtype(np.int64)) else np.dtype(np.int32)
    td = edb.tiling_910(soc, rows, E, nw, a["padding"], a["scale"], kidx)
    caveats = edb.a2_caveats(E, rows, nw, indices.numel()) if soc.npu_arch == "2201" else []
    ws = Workspace(td.workspaceSize)
    if grad_dtype != _F32:
        ws.take("grad", 4 * rows * E)
    if kidx != idx_dtype:
        ws.take("indices", 4 * rows)
    ws.take("result", 4 * nw * E)
    kernels = []

    def launch(device, stream, workspace):
        at = {k: workspace + off for k, off in ws.parts.items()}
        g_addr, i_addr, o_addr = grad.data_address(), indices.data_address(), out.data_address()
        steps = []
        if grad_dtype != _F32:
            steps.append(_elementwise(soc, "Cast", rows * E, grad_dtype, _F32, g_addr, at["grad"]))
            g_addr = at["grad"]
        if kidx != idx_dtype:
            steps.append(_elementwise(soc, "Cast", rows, idx_dtype, np.int32, i_addr, at["indices"]))
            i_addr = at["indices"]
        steps.append(KernelLaunch(embedding_dense_grad, td.blockDim,
                                  (g_addr, i_addr, at["result"], td, kidx), "EmbeddingDenseGrad",
                                  reserve_ub=False, on_done=_caveat_hook(caveats)))
        steps.append(_elementwise(soc, "Cast", nw * E, _F32, out.np_dtype, at["result"], o_addr))
        _enqueue(device, stream, steps, kernels)

    executor = _executor(dev, ws, launch, (grad, indices, out), td, "V1", caveats, kernels)
    return ws.size, executor, ACLNN_SUCCESS


def aclnnEmbeddingDenseBackward(workspace, workspaceSize, executor, stream):
    """Second phase: enqueue the graph's kernels on ``stream`` (None or 0: default stream).

    Args:
        workspace: device address of at least ``workspaceSize`` bytes (0 when it is 0).
        workspaceSize: the first phase's value (bytes).
        executor: the first phase's executor; released after this call unless repeatable.
        stream: a stream handle from ``acl.rt.create_stream``.

    Returns:
        ``ret``: 0 when enqueued (``out`` is written when the stream is synchronised);
        161001 null executor or workspace; 161002 released executor or too-small workspace;
        361001 invalid stream (docs/reference/api.md §4). A bad index surfaces at
        ``acl.rt.synchronize_stream`` as 507015 with ``out`` unchanged.
    """
    return run_executor(API, workspace, workspaceSize, executor, stream)


# Calls from several threads take effect one at a time (aclnn.runtime.serialize_api).
runtime.serialize_api(globals())
