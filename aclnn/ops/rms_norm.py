"""aclnnRmsNorm: ``yOut = x * rstd * gamma``, ``rstdOut = 1 / sqrt(mean(x^2) + epsilon)`` over
the last ``gamma.ndim`` dims of x.

Sources: ``hicann/ops-nn: norm/rms_norm/docs/aclnnRmsNorm.md`` (signature, the formula,
dtypes per product, rstdOut's shape and dtype, status codes, the official sample) and
``op_host/rms_norm_tiling.cpp`` (``CheckInputShape4RmsNorm``, the epsilon check); hiascend.com
"aclnnRmsNorm" (CANN 8.x aolapi). The calling convention is pyACL's (values first,
status last, ``docs/reference/api.md`` §5)::

    workspaceSize, executor, ret = aclnnRmsNormGetWorkspaceSize(x, gamma, epsilon, yOut, rstdOut)
    ret = aclnnRmsNorm(workspace, workspaceSize, executor, stream)

Status codes, as the document lists them: 161001 for a null x/gamma/yOut/rstdOut; 161002
for a dtype outside the table ("输入或输出的数据类型不在支持范围之内"); 561002
(ACLNN_ERR_INNER_TILING_ERROR) for the other parameter rules ("参数不满足参数说明中的要求"):
the shapes (checked by ``CheckInputShape4RmsNorm`` in the tiling) and ``epsilon < 0``
(and NaN, which the tiling's check refuses too). These checks run for an empty x as well,
so an empty x gets the code a non-empty one would.

Aliasing: yOut and rstdOut may share no byte. The kernel reads each tile of x (every
chunk of a long row, twice in SPLIT_D) before it writes that tile of yOut and rstdOut and
never reads it again afterwards, so an output may be exactly x (same address, dtype size,
shape: RmsNorm in place) but may not partially overlap it; gamma is read by every core,
so no output may share a byte with it. An input gathered by Contiguous is read before the
kernel starts, so any overlap with it is accepted. A violation is 161002 naming both
arguments, in the first phase (and in the second after ``aclSetInputTensorAddr``/
``aclSetOutputTensorAddr``) [R: CANN does not check aliasing].

The executor runs ``Contiguous`` (:func:`npusim.kernels.add.kernel.broadcast_to`) for a
non-contiguous x or gamma (into the workspace), then the RmsNorm kernel
(:mod:`npusim.kernels.rms_norm`). Outputs must be contiguous [R]. Workspace: the tiling's (256 B +
the 16 MiB system workspace) plus the Contiguous buffers.
"""
from __future__ import annotations

from aclnn import runtime
from aclnn.constants import (ACL_BF16, ACL_FLOAT, ACL_FLOAT16, ACLNN_ERR_INNER_TILING_ERROR,
                             ACLNN_ERR_PARAM_INVALID, ACLNN_SUCCESS)
from aclnn.errmsg import report_error
from aclnn.executor import aclOpExecutor, run_executor
from aclnn.ops import _check
from aclnn.ops._check import ParamError
from aclnn.ops._workspace import Workspace
from aclnn.ops.add import _check_view_on_device
from aclnn.ops.softmax import contiguous_launch
from aclnn.tensor import aclTensor
from npusim.kernels.add.kernel import broadcast_to
from npusim.kernels.common.chain import KernelLaunch, enqueue_chain
from npusim.kernels.rms_norm import tiling as _tiling
from npusim.kernels.rms_norm.golden import rstd_shape
from npusim.kernels.rms_norm.kernel import rms_norm

API = "aclnnRmsNormGetWorkspaceSize"
OP_TYPE = "RmsNorm"
MAX_DIM = 8
#: (x, gamma, yOut, rstdOut) dtypes of the doc's table for Atlas A2/A3 ("各平台支持数据类型说明").
A2_DTYPE_TABLE = frozenset({
    (ACL_FLOAT16, ACL_FLOAT, ACL_FLOAT16, ACL_FLOAT),
    (ACL_BF16, ACL_FLOAT, ACL_BF16, ACL_FLOAT),
    (ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT),
    (ACL_BF16, ACL_BF16, ACL_BF16, ACL_FLOAT),
    (ACL_FLOAT, ACL_FLOAT, ACL_FLOAT, ACL_FLOAT),
})
#: Products the simulator runs (the doc also lists Atlas inference products, 310P, whose
#: branches of the tiling are not modelled; Atlas training products are "不支持").
SUPPORTED_SHORT_SOC = ("Ascend910B", "Ascend910_93")


class _ShapeError(ParamError):
    def __init__(self, message):
        super().__init__(ACLNN_ERR_INNER_TILING_ERROR, message)


def _check_shapes(x, gamma, yOut, rstdOut):
    """``CheckInputShape4RmsNorm`` and the documented rstdOut shape (561002)."""
    xs, gs, ys, rs = (tuple(t.view_dims) for t in (x, gamma, yOut, rstdOut))
    for name, shape in (("x", xs), ("gamma", gs)):
        if not 1 <= len(shape) <= MAX_DIM:
            raise _ShapeError(f"{name} has {len(shape)} dimensions; it must have 1 to {MAX_DIM}")
    if len(gs) > len(xs):
        raise _ShapeError(f"gamma {list(gs)} has more dimensions than x {list(xs)}: gamma's "
                          "shape must be the last dims of x's (gamma_shape = x_shape[n:])")
    if 0 in gs:
        raise _ShapeError(f"gamma {list(gs)} is empty: gamma does not support empty tensors")
    if xs[len(xs) - len(gs):] != gs:
        raise _ShapeError(f"The shape of gamma {list(gs)} must be the same as the shape "
                          f"consisting of the last {len(gs)} axes of x {list(xs)}")
    if ys != xs:
        raise _ShapeError(f"The shape of yOut {list(ys)} must be x's {list(xs)}")
    want = rstd_shape(xs, len(gs))
    if rs != want:
        raise _ShapeError(f"The shape of rstdOut {list(rs)} must be {list(want)}: x's dims "
                          f"with the {len(gs)} normalised dims set to 1")


def _validate(x, gamma, epsilon, yOut, rstdOut):
    names = (("x", x), ("gamma", gamma), ("yOut", yOut), ("rstdOut", rstdOut))
    _check.objects(*((n, t, aclTensor) for n, t in names))
    dev = _check.device()
    soc = dev.soc
    if soc.short_soc_version not in SUPPORTED_SHORT_SOC:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"RmsNorm is not supported on "
                         f"{soc.soc_version}: this simulator runs aclnnRmsNorm on Atlas A2/A3")
    eps = _check.number("epsilon", epsilon)
    combo = (x.data_type, gamma.data_type, yOut.data_type, rstdOut.data_type)
    if combo not in A2_DTYPE_TABLE:
        table = "; ".join("/".join(d.name for d in row) for row in sorted(
            A2_DTYPE_TABLE, key=lambda r: [d.value for d in r]))
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"the dtypes of x, gamma, yOut, rstdOut "
                         f"({'/'.join(d.name for d in combo)}) are not a supported combination "
                         f"({table})")
    _check_shapes(x, gamma, yOut, rstdOut)
    if eps < 0 or eps != eps:         # NaN fails the tiling's check too (rms_norm tiling)
        raise _ShapeError(f"epsilon = {eps} is less than zero or NaN; it must be >= 0")
    for name, t in names:
        _check.nd_format(name, t)
    for name, t in (("x", x), ("gamma", gamma)):
        _check.in_storage(name, t)
        _check_view_on_device(name, t, dev)
    for name, t in (("yOut", yOut), ("rstdOut", rstdOut)):
        _check.contiguous_on_device(name, t, dev)
    return dev, eps


def aclnnRmsNormGetWorkspaceSize(x, gamma, epsilon, yOut, rstdOut):
    """First phase of aclnnRmsNorm: validate, tile, build the executor.

    Args:
        x: aclTensor, ND, 1-8 dims, FLOAT / FLOAT16 / BF16; may be empty (nothing is
            launched); non-contiguous views are read through Contiguous.
        gamma: aclTensor whose shape is the last dims of x's (``gamma_shape =
            x_shape[n:]``), not empty; FLOAT, or x's dtype.
        epsilon: float (double), >= 0 (the API's default is 1e-6).
        yOut: aclTensor of x's shape and dtype, contiguous.
        rstdOut: aclTensor FLOAT of x's rank, the normalised dims 1 (x (2,3,4,8), gamma (8)
            -> (2,3,4,1)), contiguous.

    Returns:
        ``(workspaceSize, executor, ret)``: workspaceSize in bytes (0 for an empty x), the
        executor and ``ACLNN_SUCCESS``; or ``(0, None, code)``:

        * 161001 ACLNN_ERR_PARAM_NULLPTR: x, gamma, yOut or rstdOut is null;
        * 161002 ACLNN_ERR_PARAM_INVALID: the dtypes are not a row of the doc's table
          (FLOAT16/FLOAT, BF16/FLOAT, FLOAT16/FLOAT16, BF16/BF16, FLOAT/FLOAT for x/gamma,
          yOut = x, rstdOut FLOAT); epsilon not a number; an unsupported SoC; and, as
          simulator checks [R], a non-ND format, an object that is not an aclTensor, a
          destroyed one, a view outside its storage, non-contiguous outputs, data
          outside device memory, memory shared where the aliasing rule of the module
          docstring forbids it (yOut with rstdOut, an output partially with x, or with
          gamma);
        * 561002 ACLNN_ERR_INNER_TILING_ERROR: the shape rules (x/gamma 1-8 dims, gamma
          the last dims of x and not empty, yOut = x's shape, rstdOut's documented shape),
          ``epsilon < 0`` or NaN (for an empty x too), or no tile fits the UB;
        * 361001: no device set.

        The message names the argument; a failed call changes no device memory.
    """
    try:
        dev, eps = _validate(x, gamma, epsilon, yOut, rstdOut)
        soc = dev.soc
        td = None if x.is_empty() else _tiling.tiling(
            soc, x.view_dims, gamma.view_dims, x.np_dtype, gamma.np_dtype, eps)
    except ParamError as exc:
        return 0, None, report_error(exc.code, f"{API}: {exc}")
    except _tiling.TilingError as exc:
        return 0, None, report_error(ACLNN_ERR_INNER_TILING_ERROR, f"{API}: {exc}")

    inputs, outputs = [x, gamma], [yOut, rstdOut]
    names = dict(input_names=["x", "gamma"], output_names=["yOut", "rstdOut"])
    if td is None:
        executor = aclOpExecutor("aclnnRmsNorm", 0, lambda device, stream, ws: None, dev,
                                 inputs=inputs, outputs=outputs, **names)
        executor.tiling = None
        return 0, executor, ACLNN_SUCCESS
    layout = Workspace(td.workspaceSize)
    gathers = [contiguous_launch(t, layout, name, soc) for name, t in (("x", x), ("gamma", gamma))]
    workspace_size = layout.size
    # inputs the RmsNorm kernel reads in place (not gathered by Contiguous first): x tile
    # for tile with the outputs, gamma by every core and row
    (x_gather, _), (g_gather, _) = gathers
    alias = _check.aliasing({"yOut": yOut, "rstdOut": rstdOut},
                            elementwise={} if x_gather else {"x": x},
                            whole={} if g_gather else {"gamma": gamma})
    problem = alias()
    if problem is not None:
        return 0, None, report_error(ACLNN_ERR_PARAM_INVALID, f"{API}: {problem}")

    def launch(device, stream, workspace):
        steps, addrs = [], []
        for t, (bt, off) in zip((x, gamma), gathers):
            if bt is None:
                addrs.append(t.data_address())
                continue
            steps.append(KernelLaunch(broadcast_to, bt.blockDim,
                                      (t.data_address(), workspace + off, workspace, bt),
                                      "Contiguous"))
            addrs.append(workspace + off)
        steps.append(KernelLaunch(rms_norm, td.blockDim,
                                  (*addrs, yOut.data_address(), rstdOut.data_address(),
                                   workspace, td), OP_TYPE, reserve_ub=False))
        enqueue_chain(device, stream, steps, "aclnnRmsNorm")

    executor = aclOpExecutor("aclnnRmsNorm", workspace_size, launch, dev, inputs=inputs,
                             outputs=outputs, **names)
    executor.tiling = td
    executor.alias_check = alias
    return workspace_size, executor, ACLNN_SUCCESS


def aclnnRmsNorm(workspace, workspaceSize, executor, stream):
    """Second phase of aclnnRmsNorm: enqueue the kernels on ``stream`` (None or 0: default).

    Returns 0 when enqueued (results after ``acl.rt.synchronize_stream``); 161001 null
    executor or null workspace with workspaceSize > 0; 161002 released executor, a
    workspace smaller than the first phase asked for or not device memory, or a tensor
    whose memory was freed since the first phase; 361001 invalid stream
    (``docs/reference/api.md`` §4; see :func:`aclnn.executor.run_executor`).
    """
    return run_executor("aclnnRmsNorm", workspace, workspaceSize, executor, stream)


# Calls from several threads take effect one at a time (aclnn.runtime.serialize_api).
runtime.serialize_api(globals())
