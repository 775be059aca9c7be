"""aclnnSoftmax: ``out = exp(self - max) / sum(exp(self - max))`` along ``dim``.

Sources: ``hicann/ops-nn: activation/softmax_v2/docs/aclnnSoftmax.md`` (signature, dtypes per
product, 0-8 dims, status codes, the official sample) and ``op_api/aclnn_softmax.cpp`` (the
order of the checks and the l0 chain); hiascend.com "aclnnSoftmax" (CANN 8.x aolapi). The
calling convention is pyACL's (values first, status last, ``docs/reference/api.md`` §5)::

    workspaceSize, executor, ret = aclnnSoftmaxGetWorkspaceSize(self, dim, out)
    ret = aclnnSoftmax(workspace, workspaceSize, executor, stream)

The executor runs the l0 chain of aclnn_softmax.cpp in stream order:

1. ``Contiguous`` (:func:`npusim.kernels.add.kernel.broadcast_to`, the strided gather Add uses) when
   self is not a contiguous tensor: self is written contiguously into the workspace;
2. ``SoftmaxV2`` (:mod:`npusim.kernels.softmax`): the softmax in self's dtype, into out when out
   has self's dtype, else into the workspace;
3. ``Cast`` to out's dtype (:func:`npusim.kernels.common.elementwise.cast`, through float32 when
   there is no direct Cast: FLOAT16 <-> BF16), when the dtypes differ.

``ViewCopy`` into a non-contiguous out is not modelled: out must be contiguous [R].

Aliasing: every SoftmaxV2 template reads a tile of self (AR: whole rows; ARA: a column
tile of [R, A0]; the RECOMPUTE templates: every chunk of a row, or of a column tile,
once per pass) before it writes that tile of out, and never reads a tile again once it
is written, so out may be exactly self (same address, shape and dtype: softmax in
place). A partial overlap (a shifted view) would read rows another core has already
written: 161002 naming both, in the first phase (and in the second after
``aclSetInputTensorAddr``/``aclSetOutputTensorAddr``). When self goes through Contiguous
or the result through Cast, the workspace holds the data in between and any overlap is
accepted [R: CANN does not check aliasing] (:func:`aclnn.ops._check.no_aliasing`).

Empty self: every check runs first, as ``CheckParams`` precedes "空tensor直接返回" in
aclnn_softmax.cpp, so an empty self gets the code a non-empty one would; then nothing is
launched.

Workspace: the SoftmaxV2 tiling's (the 16 MiB Ascend C system workspace on A2/A3) plus the
Contiguous and Cast buffers, each 512 B aligned; 0 for an empty self (nothing is launched).
"""
from __future__ import annotations

import numbers

import numpy as np

from aclnn import runtime
from aclnn.constants import (ACL_BF16, ACL_DOUBLE, ACL_FLOAT, ACL_FLOAT16,
                             ACLNN_ERR_INNER_TILING_ERROR, ACLNN_ERR_PARAM_INVALID, ACLNN_SUCCESS)
from aclnn.errmsg import report_error
from aclnn.executor import aclOpExecutor, run_executor
from aclnn.ops import _check
from aclnn.ops._check import ParamError
from aclnn.ops._workspace import Workspace
from aclnn.ops.add import _check_view_on_device
from aclnn.tensor import aclTensor
from npusim.kernels.add import tiling as _add_tiling
from npusim.kernels.add.kernel import broadcast_to
from npusim.kernels.common.chain import KernelLaunch, enqueue_chain
from npusim.kernels.common.elementwise import cast, elementwise_tiling
from npusim.kernels.softmax import tiling as _tiling
from npusim.kernels.softmax.kernel import softmax_v2

API = "aclnnSoftmaxGetWorkspaceSize"
OP_TYPE = "SoftmaxV2"
#: "数据维度不支持8维以上" / ``AXIS_LIMIT = 8``.
MAX_DIM = 8
#: ``ASCEND910B_DTYPE_SUPPORT_LIST`` (Atlas A2/A3) and ``ASCEND910_DTYPE_SUPPORT_LIST``
#: (Atlas training and inference products: no BFLOAT16) of aclnn_softmax.cpp.
A2_DTYPES = (ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE, ACL_BF16)
TRAINING_DTYPES = (ACL_FLOAT, ACL_FLOAT16, ACL_DOUBLE)
#: Products of the doc's support table the simulator runs, by short SoC version. The doc
#: also lists Atlas training (910) and inference (310P) products; their lists are kept
#: above, but the kernel's float32 reductions (WholeReduceMax/Sum) are half-only on the
#: first-generation 910 and the 310P tiling branches are not modelled, so those SoCs are
#: refused (161002) [R].
SUPPORTED_SHORT_SOC = {"Ascend910B": A2_DTYPES, "Ascend910_93": A2_DTYPES}
_F32 = np.dtype(np.float32)


def contiguous_launch(t: aclTensor, layout: Workspace, key, soc):
    """The l0 ``Contiguous`` of one input: ``(tiling, workspace offset)`` of the BroadcastTo
    kernel that writes ``t``'s strided view contiguously into the workspace, or
    ``(None, 0)`` when ``t`` is already contiguous (takes ``layout`` space only then)."""
    shape = tuple(t.view_dims)
    if not _add_tiling.needs_gather(shape, t.strides, shape):
        return None, 0
    bt = _add_tiling.broadcast_to_tiling(soc, shape, shape, t.strides, t.np_dtype)
    return bt, layout.take(key, t.numel() * t.itemsize)


def cast_steps(src, dst, total: int, soc, layout: Workspace, key):
    """The l0 ``Cast`` kernels from dtype ``src`` to ``dst`` over ``total`` elements: a
    list of ``(src dtype, dst dtype, tiling, workspace offset of the result or None for the
    final output)``; through float32 when there is no direct Cast kernel."""
    src, dst = np.dtype(src), np.dtype(dst)
    hops = [(src, dst)] if _F32 in (src, dst) else [(src, _F32), (_F32, dst)]
    steps = []
    for i, (a, b) in enumerate(hops):
        t = elementwise_tiling(soc, total, a.itemsize, b.itemsize)
        last = i == len(hops) - 1
        steps.append((a, b, t, None if last else layout.take((key, i), total * b.itemsize)))
    return steps


def _dim_value(dim, ndim: int) -> int:
    """161002 unless ``dim`` is an int in ``[-n, n)``, n = max(ndim, 1) (``CheckDim``)."""
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, numbers.Integral):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"dim must be an int (int64_t), got {dim!r}")
    n = max(ndim, 1)
    if not -n <= int(dim) < n:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"provided dim {int(dim)} not in the range of "
                         f"input size {n} (dim must be in [{-n}, {n - 1}])")
    return int(dim)


def _validate(self, dim, out):
    """``CheckParams`` of aclnn_softmax.cpp, in its order, then the simulator's checks."""
    _check.objects(("self", self, aclTensor), ("out", out, aclTensor))
    dev = _check.device()
    soc = dev.soc
    supported = SUPPORTED_SHORT_SOC.get(soc.short_soc_version)
    if supported is None:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"Softmax is not supported on "
                         f"{soc.soc_version}: this simulator runs aclnnSoftmax on Atlas A2/A3 "
                         "only")
    _check.dtype_in("self", self, supported)
    _check.dtype_in("out", out, supported)
    dim = _dim_value(dim, self.ndim)
    if self.ndim > MAX_DIM:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"self has {self.ndim} dimensions; at most "
                         f"{MAX_DIM} are supported")
    if tuple(out.view_dims) != tuple(self.view_dims):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"Shape of out should be "
                         f"{list(self.view_dims)} (self's), but current is {list(out.view_dims)}")
    for name, t in (("self", self), ("out", out)):
        _check.nd_format(name, t)
    for name, t in (("self", self), ("out", out)):
        if t.data_type == ACL_DOUBLE:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} is DOUBLE: CANN computes it on the "
                             "AI CPU; the simulated vector unit has no 64-bit float arithmetic")
    _check.in_storage("self", self)
    _check_view_on_device("self", self, dev)
    _check.contiguous_on_device("out", out, dev)
    if self.is_empty():               # "空tensor直接返回", after CheckParams as in CANN
        return dev, None
    return dev, dim


def aclnnSoftmaxGetWorkspaceSize(self, dim, out):
    """First phase of aclnnSoftmax: validate, tile, build the executor.

    Args:
        self: aclTensor, ND, 0-8 dims; FLOAT, FLOAT16, BF16 (Atlas A2/A3 only) or DOUBLE
            (see Returns); non-contiguous views (strides >= 0) are read through Contiguous.
        dim: int, the softmax axis, in ``[-n, n)`` with n = max(self.ndim, 1).
        out: aclTensor of self's shape, contiguous, of a dtype of the same list.

    Returns:
        ``(workspaceSize, executor, ret)``: workspaceSize in bytes (0 for an empty self),
        the aclOpExecutor and ``ACLNN_SUCCESS``; or ``(0, None, code)``:

        * 161001 ACLNN_ERR_PARAM_NULLPTR: self or out is null;
        * 161002 ACLNN_ERR_PARAM_INVALID: "dim的类型不是int" (dim not an int), "dim值不在
          self维度范围内" (dim out of range), "self的数据类型不在支持的范围内" (self's or
          out's dtype not in the SoC's list), more than 8 dims, out's shape not self's, a
          non-ND format, an unsupported SoC (the simulator runs Atlas A2/A3 only); and,
          as simulator checks [R], DOUBLE (CANN runs it on the AI CPU), an object that
          is not an aclTensor, a destroyed one, a view reaching outside its storage, a
          non-contiguous out, negative strides, data outside device memory, out
          partially overlapping self (see "Aliasing" in the module docstring). An empty
          self is checked as any other;
        * 561002 ACLNN_ERR_INNER_TILING_ERROR: no SoftmaxV2 template fits the UB;
        * 361001: no device set.

        The message names the argument (``acl.get_recent_err_msg()``); a failed call
        changes no device memory.
    """
    try:
        dev, dim = _validate(self, dim, out)
        soc = dev.soc
        if dim is None:                       # empty self: nothing to launch
            td = None
        else:
            x_dtype = self.np_dtype
            td = _tiling.tiling(soc, self.view_dims, dim, x_dtype)
    except ParamError as exc:
        return 0, None, report_error(exc.code, f"{API}: {exc}")
    except _tiling.TilingError as exc:
        return 0, None, report_error(ACLNN_ERR_INNER_TILING_ERROR, f"{API}: {exc}")

    if td is None:
        executor = aclOpExecutor("aclnnSoftmax", 0, lambda device, stream, ws: None, dev,
                                 inputs=[self], outputs=[out], input_names=["self"],
                                 output_names=["out"])
        executor.tiling = None
        return 0, executor, ACLNN_SUCCESS

    layout = Workspace(td.workspaceSize)
    gather, gather_off = contiguous_launch(self, layout, "self", soc)
    total = self.numel()
    same = out.np_dtype == td.yDtype
    y_off = None if same else layout.take("y", total * td.yDtype.itemsize)
    casts = [] if same else cast_steps(td.yDtype, out.np_dtype, total, soc, layout, "cast")
    workspace_size = layout.size
    # SoftmaxV2 reads self in place and writes out directly only with no Contiguous and
    # no Cast; then out may be exactly self, but not partially overlap it
    alias = (_check.aliasing({"out": out}, elementwise={"self": self})
             if gather is None and same else None)
    problem = alias() if alias is not None else None
    if problem is not None:
        return 0, None, report_error(ACLNN_ERR_PARAM_INVALID, f"{API}: {problem}")

    def launch(device, stream, workspace):
        steps = []
        x = self.data_address()
        if gather is not None:
            steps.append(KernelLaunch(broadcast_to, gather.blockDim,
                                      (x, workspace + gather_off, workspace, gather),
                                      "Contiguous"))
            x = workspace + gather_off
        y = out.data_address() if same else workspace + y_off
        steps.append(KernelLaunch(softmax_v2, td.blockDim, (x, y, workspace, td), OP_TYPE,
                                  reserve_ub=False))
        src = y
        for a, b, ct, off in casts:
            dst = out.data_address() if off is None else workspace + off
            steps.append(KernelLaunch(cast, ct.blockDim, (src, dst, ct, a, b), "Cast"))
            src = dst
        enqueue_chain(device, stream, steps, "aclnnSoftmax")

    executor = aclOpExecutor("aclnnSoftmax", workspace_size, launch, dev, inputs=[self],
                             outputs=[out], input_names=["self"], output_names=["out"])
    executor.tiling = td
    executor.alias_check = alias
    return workspace_size, executor, ACLNN_SUCCESS


def aclnnSoftmax(workspace, workspaceSize, executor, stream):
    """Second phase of aclnnSoftmax: enqueue the kernels on ``stream`` (None or 0: default).

    Returns 0 when enqueued (results after ``acl.rt.synchronize_stream``); 161001 null
    executor or null workspace with workspaceSize > 0; 161002 released executor, a
    workspace smaller than the first phase asked for or not device memory, or a tensor
    whose memory was freed since the first phase; 361001 invalid stream
    (``docs/reference/api.md`` §4; see :func:`aclnn.executor.run_executor`).
    """
    return run_executor("aclnnSoftmax", workspace, workspaceSize, executor, stream)


# Calls from several threads take effect one at a time (aclnn.runtime.serialize_api).
runtime.serialize_api(globals())
