"""aclnnApplyAddSign: the AddSign optimizer step, in place on var and m.

Semantics: MindSpore ``ops.ApplyAddSign`` (the MindSpore API document mindspore.ops.ApplyAddSign (mindspore.cn),
``docs/reference/operators.md`` §3)::

    m   = beta*m + (1 - beta)*grad
    var = var - lr*(alpha + signDecay*sign(grad)*sign(m))*grad      # the updated m
    sign(0) = sign(NaN) = 0                                          # CPU and TBE kernels

CANN publishes no aclnn API for this operator (the Ascend kernel is the TBE
``ApplyAddSignD``; ops-nn has no add_sign op), so the interface is modelled on the aclnn
optimizer that takes the same kind of arguments, ``aclnnApplyAdamW`` (ops-nn
``optim/apply_adam_w/docs/aclnnApplyAdamW.md``): ``Ref`` tensors updated in place,
statuses 161001/161002 [R for carrying that convention over].

Scalar inputs: lr, alpha, signDecay and beta are one-element aclTensors (shape [1]) of
varRef's dtype in device memory -- the convention of the aclnn optimizers whose graph
operator takes its scalars as inputs (aclnnApplyAdamW: beta1Power ... eps "shape要求为[1]",
dtype "与varRef保持一致"), shared with aclnnFusedSparseAdam (docs/tutorial.md §10). A
number or an aclScalar in their place is 161002, and the message says what to pass.

Aliasing: varRef and mRef are updated in place and may share no byte with each other;
grad may be exactly varRef or mRef (each tile is read before it is written) but may not
partially overlap them; the scalars are read once per core while other cores write, so
they may share no byte with varRef or mRef. Anything else is 161002 naming both
arguments (:func:`aclnn.ops._check.no_aliasing`) [R].

The calling convention is pyACL's (values first, status last, ``docs/reference/api.md`` §5)::

    workspaceSize, executor, ret = aclnnApplyAddSignGetWorkspaceSize(
        varRef, mRef, lr, alpha, signDecay, beta, grad)
    ret = aclnnApplyAddSign(workspace, workspaceSize, executor, stream)
"""
from __future__ import annotations

from aclnn import runtime
from aclnn.constants import ACL_FLOAT, ACL_FLOAT16, ACLNN_ERR_PARAM_INVALID, ACLNN_SUCCESS
from aclnn.errmsg import report_error
from aclnn.executor import aclOpExecutor, run_executor
from aclnn.ops import _check
from aclnn.ops._check import ParamError
from npusim.kernels.apply_add_sign.kernel import apply_add_sign
from npusim.kernels.apply_add_sign.tiling import tiling

OP_TYPE = "ApplyAddSign"
#: The seed: var "数据类型为float32或float16"; scalars likewise (TypeError otherwise).
_DTYPES = (ACL_FLOAT, ACL_FLOAT16)
#: SoCs the kernel is built for: its Select tensor/scalar mode is documented for Atlas
#: A2/A3 (asc-devkit Select.md) [R: the operator's product list is ours].
_SUPPORTED_SHORT_SOC = ("Ascend910B", "Ascend910_93")
#: aclnn tensors have at most 8 dimensions (docs/reference/api.md §1, 161002 "more than 8").
_MAX_DIMS = 8
_SCALARS = ("lr", "alpha", "signDecay", "beta")


def aclnnApplyAddSignGetWorkspaceSize(varRef, mRef, lr, alpha, signDecay, beta, grad):
    """First phase: validate, tile, and build the executor.

    Args:
        varRef: aclTensor FLOAT or FLOAT16, 0-8 dims ("任意维度" in the seed, up to aclnn's
            8), ND, contiguous, on the device; updated in place.
        mRef: aclTensor of varRef's shape and dtype; updated in place.
        lr, alpha, signDecay, beta: aclTensors of one element (shape [1], or [] / [1, 1]...
            up to 8 dims) with varRef's dtype, on the device (the seed: "必须是Scalar",
            float32/float16; the scalar-input convention of the module docstring).
        grad: aclTensor of varRef's shape and dtype.

    Returns:
        ``(workspaceSize, executor, ret)``: workspaceSize in bytes (16 MiB, the Ascend C
        system workspace on A2/A3; 0 for empty tensors), the aclOpExecutor and
        ``ACLNN_SUCCESS``; or ``(0, None, code)`` with code
        161001 (ACLNN_ERR_PARAM_NULLPTR) when an argument is None;
        161002 (ACLNN_ERR_PARAM_INVALID) for a dtype other than FLOAT/FLOAT16, dtypes or
        shapes that differ from varRef's, a scalar with other than one element or given
        as a number or aclScalar instead of an aclTensor, more than 8 dims, a non-ND
        format, a non-contiguous tensor, a view reaching outside its storage, data
        outside device memory (a freed or foreign pointer), a destroyed tensor, an
        object that is not an aclTensor [R], a SoC other than Atlas A2/A3, or memory
        shared where the aliasing rule of the module docstring forbids it (varRef with
        mRef, grad partially with either, a scalar with either);
        361001 (ACLNN_ERR_RUNTIME_ERROR) when no device is set.
        The message names the argument (``acl.get_recent_err_msg()``). A failed call
        changes nothing.
    """
    api = "aclnnApplyAddSignGetWorkspaceSize"
    scalars = dict(zip(_SCALARS, (lr, alpha, signDecay, beta)))
    tensors = dict(varRef=varRef, mRef=mRef, **scalars, grad=grad)
    try:
        _check.not_null(_SCALARS, **tensors)
        dev = _check.device()
        soc = dev.soc
        if soc.short_soc_version not in _SUPPORTED_SHORT_SOC:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"ApplyAddSign is not supported on "
                             f"{soc.soc_version}: the kernel is built for Atlas A2/A3")
        _check.dtype_in("varRef", varRef, _DTYPES)
        _check.same_dtype_shape("varRef", varRef, mRef=mRef, grad=grad)
        _check.ndim_between("varRef", varRef, 0, _MAX_DIMS)
        _check.scalar_tensors("varRef", varRef, **scalars)
        for name, t in tensors.items():
            _check.nd_format(name, t)
        for name, t in tensors.items():
            _check.contiguous_on_device(name, t, dev)
        alias = _check.aliasing({"varRef": varRef, "mRef": mRef}, elementwise={"grad": grad},
                                whole=scalars)
        _check.check_aliasing(alias)
    except ParamError as exc:
        return 0, None, report_error(exc.code, f"{api}: {exc}")

    dtype = varRef.np_dtype
    td = tiling(soc, varRef.numel(), dtype)
    inputs = [varRef, mRef, lr, alpha, signDecay, beta, grad]

    def launch(device, stream, workspace):
        if td.blockDim == 0:        # empty tensors: nothing to compute
            return
        args = tuple(t.data_address() for t in inputs) + (workspace, td, dtype)
        # Select's tensor/scalar mode uses the 8 KiB Ascend C UB reserve: keep it.
        device.launch(stream, apply_add_sign, td.blockDim, args, name=OP_TYPE, reserve_ub=True)

    executor = aclOpExecutor("aclnnApplyAddSign", td.workspaceSize, launch, dev,
                             inputs=inputs, outputs=[varRef, mRef],
                             input_names=["varRef", "mRef", *_SCALARS, "grad"],
                             output_names=["varRef", "mRef"])
    executor.tiling = td
    executor.alias_check = alias
    return td.workspaceSize, executor, ACLNN_SUCCESS


def aclnnApplyAddSign(workspace, workspaceSize, executor, stream):
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
    return run_executor("aclnnApplyAddSign", workspace, workspaceSize, executor, stream)


# Calls from several threads take effect one at a time (aclnn.runtime.serialize_api).
runtime.serialize_api(globals())
