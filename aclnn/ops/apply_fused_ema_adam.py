"""aclnnApplyFusedEmaAdam: fused Adam/AdamW with EMA weights, in place on var, m, v, s.

Source: the CANN aclnn API document aclnnApplyFusedEmaAdam (hiascend.com) and ``docs/reference/operators.md`` §1;
the calling convention is pyACL's (values first, status last, ``docs/reference/api.md`` §5)::

    workspaceSize, executor, ret = aclnnApplyFusedEmaAdamGetWorkspaceSize(
        grad, varRef, mRef, vRef, sRef, step, lr, emaDecay, beta1, beta2, eps,
        mode, biasCorrection, weightDecay)
    ret = aclnnApplyFusedEmaAdam(workspace, workspaceSize, executor, stream)

Aliasing: varRef, mRef, vRef and sRef are the operator's in-place outputs and may share
no byte with one another; grad may be exactly one of them (each tile, and in mode 1 var
again, is read before the tile is written) but may not partially overlap them; step is
read once per core while other cores write, so it may share no byte with them. Anything
else is 161002 naming both arguments (:func:`aclnn.ops._check.no_aliasing`) [R].
"""
from __future__ import annotations

import numpy as np

from aclnn import runtime
from aclnn.constants import (ACL_BF16, ACL_FLOAT, ACL_FLOAT16, ACL_INT64,
                             ACLNN_ERR_PARAM_INVALID, ACLNN_SUCCESS)
from aclnn.errmsg import report_error
from aclnn.executor import aclOpExecutor, run_executor
from aclnn.ops import _check
from aclnn.ops._check import ParamError
from npusim.kernels.apply_fused_ema_adam.kernel import apply_fused_ema_adam
from npusim.kernels.apply_fused_ema_adam.tiling import tiling

OP_TYPE = "ApplyFusedEmaAdam"
_DTYPES = (ACL_FLOAT, ACL_FLOAT16, ACL_BF16)
#: Products the seed lists as supported: Atlas A2 and A3 training series.
_SUPPORTED_SHORT_SOC = ("Ascend910B", "Ascend910_93")


def aclnnApplyFusedEmaAdamGetWorkspaceSize(grad, varRef, mRef, vRef, sRef, step, lr, emaDecay,
                                           beta1, beta2, eps, mode, biasCorrection, weightDecay):
    """First phase: validate, tile, and build the executor.

    Args:
        grad: aclTensor, FLOAT/FLOAT16/BF16, 1-8 dims, ND, contiguous.
        varRef, mRef, vRef, sRef: aclTensors of grad's shape and dtype, updated in place.
        step: aclTensor INT64 of shape [1] on the device: the optimizer step (1 on the
            first update).
        lr, emaDecay, beta1, beta2, eps, weightDecay: floats (stored as float32 in the tiling).
        mode: 0 (L2: grad += weightDecay*var) or 1 (AdamW: update += weightDecay*var).
        biasCorrection: bool (or the ints 0/1), divide m and v by (1 - beta^step).

    Returns:
        ``(workspaceSize, executor, ret)``: workspaceSize in bytes (16 MiB, the Ascend C
        system workspace on A2/A3; 0 for empty tensors), the aclOpExecutor, and
        ``ACLNN_SUCCESS``; or ``(0, None, code)`` with code 161001 (a null tensor),
        161002 (dtype, shape, dims, format, mode, step, unsupported SoC, non-contiguous or
        non-device data -- a freed or foreign pointer --, a view reaching outside its
        storage, a destroyed tensor, memory shared where the aliasing rule of the module
        docstring forbids it -- two of varRef/mRef/vRef/sRef, grad partially with one,
        step with one --; and [R] Python-only mistakes: an object that is not an
        aclTensor, an attribute of the wrong type) or 361001 (no device set). The
        message names the argument (``acl.get_recent_err_msg()``). A failed call
        changes nothing.
    """
    api = "aclnnApplyFusedEmaAdamGetWorkspaceSize"
    try:
        _check.not_null(grad=grad, varRef=varRef, mRef=mRef, vRef=vRef, sRef=sRef, step=step)
        dev = _check.device()
        soc = dev.soc
        if soc.short_soc_version not in _SUPPORTED_SHORT_SOC:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"ApplyFusedEmaAdam is not supported on "
                             f"{soc.soc_version}: the operator runs on Atlas A2/A3 training "
                             "products (seed aclnnApplyFusedEmaAdam, 产品支持情况)")
        _check.dtype_in("grad", grad, _DTYPES)
        _check.same_dtype_shape("grad", grad, varRef=varRef, mRef=mRef, vRef=vRef, sRef=sRef)
        _check.ndim_between("grad", grad, 1, 8)
        tensors = dict(grad=grad, varRef=varRef, mRef=mRef, vRef=vRef, sRef=sRef)
        # every tensor, step too, is ND (docs/reference/operators.md §1 "Interface": "all ND")
        for name, t in dict(tensors, step=step).items():
            _check.nd_format(name, t)
        _check.dtype_in("step", step, (ACL_INT64,))
        if step.view_dims != (1,):
            raise ParamError(ACLNN_ERR_PARAM_INVALID,
                             f"step has shape {list(step.view_dims)}; expected [1]")
        if isinstance(mode, bool) or not isinstance(mode, (int, np.integer)) or mode not in (0, 1):
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"mode must be 0 (L2) or 1 (AdamW), got {mode!r}")
        attrs = {name: _check.number(name, value) for name, value in (
            ("lr", lr), ("emaDecay", emaDecay), ("beta1", beta1), ("beta2", beta2),
            ("eps", eps), ("weightDecay", weightDecay))}
        # C's bool holds only true/false: other Python values are a parameter error [R]
        biasCorrection = _check.boolean("biasCorrection", biasCorrection)
        for name, t in dict(tensors, step=step).items():
            _check.contiguous_on_device(name, t, dev)
        alias = _check.aliasing(dict(varRef=varRef, mRef=mRef, vRef=vRef, sRef=sRef),
                                elementwise={"grad": grad}, whole={"step": step})
        _check.check_aliasing(alias)
    except ParamError as exc:
        return 0, None, report_error(exc.code, f"{api}: {exc}")

    dtype = grad.np_dtype
    td = tiling(soc, grad.numel(), dtype, lr=attrs["lr"], ema_decay=attrs["emaDecay"],
                beta1=attrs["beta1"], beta2=attrs["beta2"], eps=attrs["eps"], mode=int(mode),
                bias_correction=bool(biasCorrection), weight_decay=attrs["weightDecay"])
    inputs = [grad, varRef, mRef, vRef, sRef, step]

    def launch(device, stream, workspace):
        if td.blockDim == 0:        # empty tensors: nothing to compute
            return
        args = tuple(t.data_address() for t in inputs) + (workspace, td, dtype)
        # The operator's tiling hands the whole GetCoreMemSize(UB) to its buffers (9 slots
        # of coreCalcMax elements fill it), so it is built without Ascend C's 8 KiB UB
        # reserve (docs/reference/hardware.md §1.7).
        device.launch(stream, apply_fused_ema_adam, td.blockDim, args, name=OP_TYPE,
                      reserve_ub=False)

    workspace_size = td.workspaceSize if td.blockDim else 0
    executor = aclOpExecutor("aclnnApplyFusedEmaAdam", workspace_size, launch, dev,
                             inputs=inputs, outputs=[varRef, mRef, vRef, sRef],
                             input_names=["grad", "varRef", "mRef", "vRef", "sRef", "step"],
                             output_names=["varRef", "mRef", "vRef", "sRef"])
    executor.tiling = td
    executor.alias_check = alias
    return workspace_size, executor, ACLNN_SUCCESS


def aclnnApplyFusedEmaAdam(workspace, workspaceSize, executor, stream):
    """Second phase: enqueue the kernel on ``stream`` (None or 0: the default stream).

    Args:
        workspace: device address of at least ``workspaceSize`` bytes (0 when it is 0).
        workspaceSize: the value the first phase returned (bytes).
        executor: the first phase's executor; released after this call unless repeatable.
        stream: a stream handle from ``acl.rt.create_stream``.

    Returns:
        ``ret``: 0 when enqueued (results appear after ``acl.rt.synchronize_stream``);
        161001 null executor or workspace; 161002 released executor, too-small or
        non-device workspace, or a tensor whose memory was freed since the first phase;
        361001 invalid stream (``docs/reference/api.md`` §4; see
        :func:`aclnn.executor.run_executor`).
    """
    return run_executor("aclnnApplyFusedEmaAdam", workspace, workspaceSize, executor, stream)


# Calls from several threads take effect one at a time (aclnn.runtime.serialize_api).
runtime.serialize_api(globals())
