"""aclnnMatmul, aclnnMm and aclnnBatchMatMul: ``out = self @ mat2`` on the cube unit.

Sources: ``hicann/ops-nn: matmul/mat_mul_v3/docs/aclnnMatmul.md``, ``aclnnMm.md``,
``matmul/batch_mat_mul_v3/docs/aclnnBatchMatMul.md`` (signatures, dtypes per product,
cubeMathType and its per-product notes, the 161001/161002 tables, the 1-D shape rules);
``op_host/op_api/aclnn_matmul.cpp`` and ``matmul/common/op_host/op_api/matmul_util.cpp`` /
``cube_util.cpp`` (the order of the checks, the graph per input rank, the transposed-view
detection ``IsTransposeLastTwoDims`` + ``ContiguousAndCast``, the cubeMathType -> compute
dtype rules ``CalcPromoteTypeCubemathtype``, at most 8 dims on DAV_2201); hiascend.com
"aclnnMatmul" / "aclnnMm" / "aclnnBatchMatMul" (CANN 8.x aolapi). The calling convention is
pyACL's (values first, status last, ``docs/reference/api.md`` §5)::

    workspaceSize, executor, ret = aclnnMatmulGetWorkspaceSize(self, mat2, out, cubeMathType)
    ret = aclnnMatmul(workspace, workspaceSize, executor, stream)

The executor runs, in stream order (a failed kernel stops the rest, :mod:`npusim.kernels.common.chain`):

1. per input, ``Contiguous`` (the BroadcastTo gather of aclnnAdd) unless the view is
   contiguous or the transpose of a contiguous tensor in its last two dims — a transposed
   view is read in place with the kernel's transpose flag, as ``IsTransposeLastTwoDims``
   routes it — then ``Cast`` to the compute dtype when it differs;
2. ``MatMulV3`` / ``BatchMatMulV3`` (:mod:`npusim.kernels.matmul`, a cube-only AIC_ONLY launch)
   into ``out`` — directly in float32 when the compute dtype is half/bf16 and ``out`` is
   float32 (the Fp162Fp32 kernel: one rounding) — or into the workspace;
3. ``Cast`` to ``out``'s dtype when the kernel's output dtype differs.

Shapes (aclnnMatmul, as torch.matmul; aclnnMatmul.md 约束说明): a 1-D ``self (K)`` is
``(1, K)``, a 1-D ``mat2 (K)`` is ``(K, 1)``, and the added dims are removed from the
result; batch dims broadcast. ``self`` of 3+ dims with ``mat2`` of 1-2 folds its batch into
M (``MatMulDimNumMatAGe3Graph``: Contiguous + Reshape). aclnnMm takes 2-D tensors only,
aclnnBatchMatMul 3-D ones whose batch dims are equal or 1.

Compute dtype (``CalcPromoteTypeCubemathtype``, A2/A3): the promoted dtype of self and mat2
(float16 + float32 -> float32; bf16 with float16 or float32 is refused on A2/A3), except
``USE_FP16`` (float32 inputs, and float16, computed in float16). ``ALLOW_FP32_DOWN_PRECISION``
and ``USE_HF32`` compute float32 in HFLOAT32 on hardware; the cube's HF32 mode (SetHF32Mode)
is not modelled, so float32 is computed at full float32 precision and rate and a
:class:`HF32NotModelledWarning` says so [R]. ``USE_FP32_ADD`` (4, aclnnMatmul/aclnnMm) is
documented as grouped accumulation for float32 with k > 2048 on A2/A3: not modelled, the
float32 path runs as KEEP_DTYPE [R]. Two 1-D inputs (a dot product): cubeMathType has no
effect (doc) and the product runs on the cube too [R: CANN runs l0 Dot on the vector unit].

Aliasing: the MatMul kernel reads the blocks of self and mat2 that each base block of
out needs while other cores already write theirs, so out may share no byte with an
input the kernel reads in place (a contiguous or transposed view of the compute dtype):
161002, naming both, in the first phase (and in the second after
``aclSetInputTensorAddr``/``aclSetOutputTensorAddr``). Any overlap is harmless, and
accepted, where the input reaches the kernel through the workspace (Contiguous or
Cast) or the result does (Cast to out's dtype): those copies are made before, or after,
the product [R: CANN does not check; ``out == self`` of 256 x 256 float32 would
otherwise return 0 with wrong values]. Views of one allocation that share no byte
(disjoint rows, interleaved columns) are accepted (:func:`aclnn.ops._check.overlap`).

Workspace: the MatMulV3 tiling's (the 16 MiB Ascend C system workspace on A2/A3) plus the
Contiguous / Cast buffers and the pre-cast output, each 512 B aligned; 0 when nothing is
launched (an empty ``out``). ``out`` must be contiguous (ViewCopy into a strided ``out`` is
not modelled) [R].
"""
from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass
from math import prod

import numpy as np

from aclnn import runtime
from aclnn.constants import (ACL_BF16, ACL_FLOAT, ACL_FLOAT16, ACLNN_ERR_INNER_TILING_ERROR,
                             ACLNN_ERR_PARAM_INVALID, ACLNN_SUCCESS)
from aclnn.errmsg import report_error
from aclnn.executor import aclOpExecutor, run_executor
from aclnn.ops import _check
from aclnn.ops._check import ParamError
from aclnn.ops._workspace import Workspace
from aclnn.ops.add import _check_view_on_device
from aclnn.ops.softmax import cast_steps, contiguous_launch
from aclnn.tensor import aclTensor
from npusim.kernels.add.kernel import broadcast_to
from npusim.kernels.common.chain import KernelLaunch, enqueue_chain
from npusim.kernels.common.elementwise import cast, elementwise_tiling, zeros_like
from npusim.kernels.matmul import tiling as _tiling
from npusim.kernels.matmul.kernel import mat_mul_v3
from npusim.ascendc.types import KernelMetaType

#: cubeMathType values (aclnnMatmul.md; cube_util.cpp CheckCubeMathType).
KEEP_DTYPE = 0
ALLOW_FP32_DOWN_PRECISION = 1
USE_FP16 = 2
USE_HF32 = 3
USE_FP32_ADD = 4
CUBE_MATH_TYPES = {KEEP_DTYPE: "KEEP_DTYPE", ALLOW_FP32_DOWN_PRECISION: "ALLOW_FP32_DOWN_PRECISION",
                   USE_FP16: "USE_FP16", USE_HF32: "USE_HF32", USE_FP32_ADD: "USE_FP32_ADD"}
#: Dtypes of self, mat2 and out on Atlas A2/A3 (the docs' BFLOAT16, FLOAT16, FLOAT32).
A2_DTYPES = (ACL_FLOAT, ACL_FLOAT16, ACL_BF16)
#: Products the simulator runs these operators on (Atlas A2/A3). The docs also list Atlas
#: training (910) and inference (310P) products, whose cube has no float32/bf16 path
#: (cubeMathType 0 with float32 is refused there, 1 computes in float16); their graphs
#: (NZ TransData) are not modelled, so those SoCs are refused (161002) [R].
SUPPORTED_SHORT_SOC = ("Ascend910B", "Ascend910_93")
#: ``GetMaxSupportMatmulDims``: 8 dims on DAV_2201 (A2/A3; the doc's table says 1-6).
MAX_DIMS = 8
_F16 = np.dtype(np.float16)
_AIC = KernelMetaType.KERNEL_TYPE_AIC_ONLY


class HF32NotModelledWarning(UserWarning):
    """cubeMathType asks for HFLOAT32 (float32 inputs): the simulator computes float32."""


@dataclass(frozen=True)
class _Op:
    """What distinguishes the three APIs."""

    api: str               # the aclnn name
    ranks: tuple | None    # the allowed ranks of self and mat2 (None: 1..MAX_DIMS)
    math_types: tuple      # the documented cubeMathType values
    fp16_for_bf16: bool    # USE_FP16 with bf16: refused (Matmul/Mm doc) or left (BMM doc)
    hf32_strict: bool      # USE_HF32 with float16/bf16: refused (Matmul/Mm) or left (BMM)
    out_exact: bool        # out must be the promoted dtype (or float32 from float16): Mm


MATMUL = _Op("aclnnMatmul", None, (0, 1, 2, 3, 4), True, True, False)
MM = _Op("aclnnMm", (2,), (0, 1, 2, 3, 4), True, True, True)
BATCH_MATMUL = _Op("aclnnBatchMatMul", (3,), (0, 1, 2, 3), False, False, False)


@dataclass
class _Operand:
    """One input as the kernel reads it: its (unsqueezed) shape, whether it is read as the
    transpose of a contiguous tensor, and the kernels that prepare it."""

    tensor: aclTensor
    shape: tuple
    transposed: bool
    gather: object = None          # the Contiguous tiling, or None
    gather_off: int = 0
    casts: list = None             # the Cast steps, or []


# -- checks ----------------------------------------------------------------------------------
def _math_type(op: _Op, value) -> int:
    """161002 unless cubeMathType is an int8_t among the op's documented values."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"cubeMathType must be an int (int8_t), got "
                         f"{value!r}")
    value = int(value)
    if value not in op.math_types:
        known = ", ".join(f"{v}: {CUBE_MATH_TYPES[v]}" for v in op.math_types)
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"The value of cubeMathType only support "
                         f"{{{known}}}, but got {value}")
    return value


def _promote(self, mat2):
    """The promoted dtype of self and mat2 (A2/A3: bf16 pairs only with bf16)."""
    a, b = self.data_type, mat2.data_type
    if a == b:
        return a
    if ACL_BF16 in (a, b):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"self's dtype {a.name} and mat2's dtype "
                         f"{b.name} cannot be promoted: Atlas A2/A3 do not support BFLOAT16 with "
                         "FLOAT16 or FLOAT32 (aclnnMatmul.md 约束说明)")
    return ACL_FLOAT


def _check_dtypes(op: _Op, self, mat2, out, math_type: int):
    """The dtype rules (CheckDtypeValid, CheckCubeMathTypeForMm and the docs' notes);
    returns the promoted aclDataType."""
    for name, t in (("self", self), ("mat2", mat2), ("out", out)):
        _check.dtype_in(name, t, A2_DTYPES)
    promoted = _promote(self, mat2)
    if math_type == KEEP_DTYPE and out.data_type == ACL_FLOAT16 and self.data_type == ACL_FLOAT:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, "out has dtype FLOAT16 but self is FLOAT: "
                         "cubeMathType 0 (KEEP_DTYPE) keeps FLOAT (\"Input tensor's dtype"
                         "[DT_FLOAT] should be same with output's dtype[DT_FLOAT16]\")")
    if op.out_exact and out.data_type != promoted and not (
            promoted == ACL_FLOAT16 and out.data_type == ACL_FLOAT):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"out has dtype {out.data_type.name}; it must "
                         f"be the promoted dtype of self and mat2 ({promoted.name}), or FLOAT "
                         "for FLOAT16 (aclnnMm.md)")
    if op.fp16_for_bf16 and math_type == USE_FP16 and promoted == ACL_BF16:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, "cubeMathType 2 (USE_FP16) is not supported "
                         f"when the inputs are BFLOAT16 ({op.api}.md, Atlas A2/A3)")
    if op.hf32_strict and math_type == USE_HF32 and promoted != ACL_FLOAT:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, "cubeMathType 3 (USE_HF32) is supported only "
                         f"when the inputs are FLOAT, not {promoted.name} ({op.api}.md, A2/A3)")
    return promoted


def _out_shape(op: _Op, a_shape, b_shape):
    """The result's shape (torch.matmul rules) after the rank, k and broadcast checks of
    CheckShapeValid, in its order."""
    for name, shape in (("self", a_shape), ("mat2", b_shape)):
        if op.ranks is not None and len(shape) not in op.ranks:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has {len(shape)} dimensions; "
                             f"{op.api} takes {op.ranks[0]}-D tensors")
        if not 1 <= len(shape) <= MAX_DIMS:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has {len(shape)} dimensions; "
                             f"{op.api} takes 1 to {MAX_DIMS} (Atlas A2/A3)")
    k_b = b_shape[0] if len(b_shape) <= 2 else b_shape[-2]
    if a_shape[-1] != k_b:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"The k-axis of the two inputs are different: "
                         f"self's shape {list(a_shape)} (k {a_shape[-1]}), mat2's shape "
                         f"{list(b_shape)} (k {k_b})")
    batch = ()
    if len(a_shape) >= 2 and len(b_shape) >= 2:
        try:
            batch = tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
        except ValueError:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"Broadcast self {list(a_shape)} and "
                             f"mat2 {list(b_shape)} failed: the batch dims do not broadcast"
                             ) from None
    elif len(a_shape) > 2 or len(b_shape) > 2:
        batch = tuple(a_shape[:-2]) if len(a_shape) > 2 else tuple(b_shape[:-2])
    m = (a_shape[-2],) if len(a_shape) >= 2 else ()
    n = (b_shape[-1],) if len(b_shape) >= 2 else ()
    return batch + m + n


def _validate(op: _Op, self, mat2, out, cubeMathType):
    """CheckInputParams of aclnn_matmul.cpp in its order (nulls, dtypes and cubeMathType,
    shapes, formats), then the simulator's checks; returns (device, math type, promoted
    dtype, out shape)."""
    _check.objects(("self", self, aclTensor), ("mat2", mat2, aclTensor), ("out", out, aclTensor))
    dev = _check.device()
    soc = dev.soc
    if soc.short_soc_version not in SUPPORTED_SHORT_SOC:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{op.api} is not supported on "
                         f"{soc.soc_version}: this simulator runs it on Atlas A2/A3 only")
    math_type = _math_type(op, cubeMathType)
    promoted = _check_dtypes(op, self, mat2, out, math_type)
    shape = _out_shape(op, tuple(self.view_dims), tuple(mat2.view_dims))
    for name, t in (("self", self), ("mat2", mat2), ("out", out)):
        _check.nd_format(name, t)
    if tuple(out.view_dims) != shape:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"Shape of out should be {list(shape)} (self "
                         f"{list(self.view_dims)} @ mat2 {list(mat2.view_dims)}), but current is "
                         f"{list(out.view_dims)}")
    for name, t in (("self", self), ("mat2", mat2)):
        _check.in_storage(name, t)
        _check_view_on_device(name, t, dev)
    _check.contiguous_on_device("out", out, dev)
    return dev, math_type, promoted, shape


# -- the plan --------------------------------------------------------------------------------
def _compute_dtype(op: _Op, math_type: int, promoted, dot: bool) -> np.dtype:
    """The dtype the cube multiplies in (module docstring)."""
    p = np.dtype(_tiling.F32) if promoted == ACL_FLOAT else (
        _F16 if promoted == ACL_FLOAT16 else _tiling.BF16)
    if dot or math_type != USE_FP16:
        return p
    if p == _tiling.BF16:              # BMM: "当输入为其他数据类型时不做处理"
        return p
    return _F16


def _is_transposed(shape, strides) -> bool:
    """The view is the transpose of a contiguous tensor in its last two dims (and not
    contiguous itself): IsTransposeLastTwoDims."""
    if len(shape) < 2:
        return False
    sw_shape = tuple(shape[:-2]) + (shape[-1], shape[-2])
    sw_strides = tuple(strides[:-2]) + (strides[-1], strides[-2])
    return _contiguous(sw_shape, sw_strides) and not _contiguous(shape, strides)


def _contiguous(shape, strides) -> bool:
    expected = 1
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1:
            if s != expected:
                return False
            expected *= d
    return True


def _operand(t: aclTensor, shape, transposed: bool, compute, layout: Workspace, key, soc):
    """How input ``t`` (viewed as ``shape``) reaches the kernel: read in place (contiguous,
    or ``transposed``), or through Contiguous into the workspace; then Cast into the
    workspace when its dtype is not the compute dtype."""
    gather, off = (None, 0) if transposed else contiguous_launch(t, layout, key, soc)
    casts = []
    if t.np_dtype != compute:
        steps = cast_steps(t.np_dtype, compute, t.numel(), soc, layout, (key, "cast"))
        last = layout.take((key, "cast-out"), t.numel() * compute.itemsize)
        casts = steps[:-1] + [steps[-1][:3] + (last,)]
    return _Operand(t, tuple(shape), transposed, gather, off, casts)


def _batch_strides(batch: tuple, shape: tuple) -> tuple:
    """Element strides of a contiguous ``shape`` (batch dims then a matrix) along the output
    batch dims ``batch`` (right-aligned), 0 where the operand broadcasts."""
    own = shape[:-2]
    pad = (1,) * (len(batch) - len(own)) + tuple(own)
    return _tiling.contiguous_batch_strides(pad, shape[-2], shape[-1])


def _plan(op: _Op, dev, self, mat2, out, math_type: int, promoted, shape):
    """The kernels of the call (module docstring): (tiling, operands, output plan, layout)."""
    soc = dev.soc
    a_shape, b_shape = tuple(self.view_dims), tuple(mat2.view_dims)
    a_strides, b_strides = tuple(self.strides), tuple(mat2.strides)
    compute = _compute_dtype(op, math_type, promoted, len(a_shape) == 1 and len(b_shape) == 1)
    if len(a_shape) == 1:                               # (K) -> (1, K)
        a_shape, a_strides = (1,) + a_shape, (a_shape[0],) + a_strides
    b_vector = len(b_shape) == 1                        # (K) -> (K, 1), read as B^T (1, K)
    if b_vector:
        b_shape, b_strides = (1,) + b_shape, (b_shape[0],) + b_strides
    fold = len(a_shape) >= 3 and len(b_shape) == 2      # self's batch folded into M
    trans_a = not fold and _is_transposed(a_shape, a_strides)
    trans_b = b_vector or _is_transposed(b_shape, b_strides)
    k = a_shape[-1]
    m = prod(a_shape[:-1]) if fold else a_shape[-2]
    n = 1 if b_vector else b_shape[-1]
    batch = () if fold else tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    a_store = a_shape[:-2] + ((k, a_shape[-2]) if trans_a else (a_shape[-2], k))
    b_store = b_shape[:-2] + ((n, k) if trans_b else (k, n))
    c_dtype = out.np_dtype if out.np_dtype in (compute, _tiling.F32) else compute
    # a device limited to n cores (acl.init "max_cores": its AIVs) runs at most n AICs [R]
    cores = min(soc.cube_block_num, soc.vector_block_num)
    td = _tiling.tiling(soc, m, n, k, compute, c_dtype, transpose_a=trans_a,
                        transpose_b=trans_b, batch_shape=batch, core_num=cores,
                        a_batch_strides=_batch_strides(batch, a_store) if batch else (),
                        b_batch_strides=_batch_strides(batch, b_store) if batch else ())
    layout = Workspace(td.workspaceSize)
    operands = (_operand(self, a_shape, trans_a, compute, layout, "self", soc),
                _operand(mat2, b_shape, trans_b and not b_vector, compute, layout, "mat2", soc))
    total = prod(shape)
    c_off = None if c_dtype == out.np_dtype else layout.take("c", total * c_dtype.itemsize)
    out_casts = [] if c_off is None else cast_steps(c_dtype, out.np_dtype, total, soc, layout,
                                                    "out-cast")
    return td, operands, (c_off, out_casts), layout


def _aliasing(out, plan):
    """The aliasing rule (module docstring, "Aliasing"): None when the MatMul kernel
    writes its result into the workspace (a Cast writes out after the product is done),
    else out against the inputs the kernel reads in place."""
    td, operands, (c_off, _), _ = plan
    if c_off is not None:
        return None
    in_place = {name: o.tensor for name, o in zip(("self", "mat2"), operands)
                if o.gather is None and not o.casts}
    return _check.aliasing({"out": out}, whole=in_place) if in_place else None


def _prepare(step_list, op: _Operand, workspace: int) -> int:
    """Append the Contiguous and Cast launches of one operand; return the address the
    kernel reads it at."""
    addr = op.tensor.data_address()
    if op.gather is not None:
        dst = workspace + op.gather_off
        step_list.append(KernelLaunch(broadcast_to, op.gather.blockDim,
                                      (addr, dst, workspace, op.gather), "Contiguous"))
        addr = dst
    for a, b, ct, off in op.casts:
        dst = workspace + off
        step_list.append(KernelLaunch(cast, ct.blockDim, (addr, dst, ct, a, b), "Cast"))
        addr = dst
    return addr


def _first_phase(op: _Op, self, mat2, out, cubeMathType):
    """The shared first phase (see :func:`aclnnMatmulGetWorkspaceSize`)."""
    api = f"{op.api}GetWorkspaceSize"
    try:
        dev, math_type, promoted, shape = _validate(op, self, mat2, out, cubeMathType)
        empty_out = out.is_empty()
        zero_k = not empty_out and (self.is_empty() or mat2.is_empty())
        plan = None if (empty_out or zero_k) else _plan(op, dev, self, mat2, out, math_type,
                                                        promoted, shape)
        alias = None if plan is None else _aliasing(out, plan)
        if alias is not None:
            _check.check_aliasing(alias)
    except ParamError as exc:
        return 0, None, report_error(exc.code, f"{api}: {exc}")
    except _tiling.TilingError as exc:
        return 0, None, report_error(ACLNN_ERR_INNER_TILING_ERROR, f"{api}: {exc}")

    if plan is None:
        return _empty_executor(op, dev, self, mat2, out, zero_k)
    td, operands, (c_off, out_casts), layout = plan
    hf32 = (math_type in (ALLOW_FP32_DOWN_PRECISION, USE_HF32) and td.aDtype == _tiling.F32
            and not (self.ndim == 1 and mat2.ndim == 1))
    if hf32:
        warnings.warn(f"{op.api}: cubeMathType {math_type} ({CUBE_MATH_TYPES[math_type]}) "
                      "computes FLOAT in HFLOAT32 on Atlas A2/A3; the simulator does not model "
                      "the cube's HF32 mode and computes float32 (more precise, and at the "
                      "float32 rate)", HF32NotModelledWarning,
                      stacklevel=4)     # the caller of the (serialised) first phase

    def launch(device, stream, workspace):
        steps = []
        a = _prepare(steps, operands[0], workspace)
        b = _prepare(steps, operands[1], workspace)
        c = out.data_address() if c_off is None else workspace + c_off
        steps.append(KernelLaunch(mat_mul_v3, td.blockDim, (a, b, c, workspace, td), td.opType,
                                  reserve_ub=False, kernel_type=_AIC))
        src = c
        for a_dt, b_dt, ct, off in out_casts:
            dst = out.data_address() if off is None else workspace + off
            steps.append(KernelLaunch(cast, ct.blockDim, (src, dst, ct, a_dt, b_dt), "Cast"))
            src = dst
        enqueue_chain(device, stream, steps, op.api)

    executor = aclOpExecutor(op.api, layout.size, launch, dev, inputs=[self, mat2],
                             outputs=[out], input_names=["self", "mat2"], output_names=["out"])
    executor.tiling = td
    executor.alias_check = alias
    return layout.size, executor, ACLNN_SUCCESS


def _empty_executor(op: _Op, dev, self, mat2, out, zero_k: bool):
    """An empty out launches nothing; k = 0 fills out with zeros (l0 Fill)."""
    if not zero_k:
        def launch(device, stream, workspace):
            return None
        td = None
    else:
        td = elementwise_tiling(dev.soc, out.numel(), 0, out.itemsize)

        def launch(device, stream, workspace):
            enqueue_chain(device, stream, [KernelLaunch(zeros_like, td.blockDim,
                                                        (out.data_address(), td, out.np_dtype),
                                                        "Fill")], op.api)
    executor = aclOpExecutor(op.api, 0, launch, dev, inputs=[self, mat2], outputs=[out],
                             input_names=["self", "mat2"], output_names=["out"])
    executor.tiling = td
    return 0, executor, ACLNN_SUCCESS


_DOC = """First phase of {api}: validate, tile, build the executor.

    Args:
        self: aclTensor, ND, {ranks}; FLOAT, FLOAT16 or BFLOAT16; any non-negative strides
            (a transposed view is read in place, other views through Contiguous).
        mat2: aclTensor of the same rules; its reduction dim equals self's last dim{bcast}.
        out: aclTensor of the result's shape, contiguous, FLOAT/FLOAT16/BFLOAT16{outrule}.
        cubeMathType: int (int8_t): {values}.

    Returns:
        ``(workspaceSize, executor, ret)``: workspaceSize in bytes (0 when nothing is
        launched), the aclOpExecutor and ``ACLNN_SUCCESS``; or ``(0, None, code)``:

        * 161001 ACLNN_ERR_PARAM_NULLPTR: self, mat2 or out is null;
        * 161002 ACLNN_ERR_PARAM_INVALID: a dtype outside the list, self and mat2 that
          cannot be promoted (BFLOAT16 with FLOAT16/FLOAT32 on A2/A3), an out dtype the
          promoted dtype cannot become (KEEP_DTYPE: FLOAT self into FLOAT16 out{mmout}),
          a cubeMathType outside the documented values or not allowed for the dtype
          ({mathnotes}), a rank outside {rankrule}, different k dims, batch dims that do
          not broadcast, a non-ND format, out's shape not the result's; and, as simulator
          checks [R], an unsupported SoC (Atlas A2/A3 only), an object that is not a live
          aclTensor, a view reaching outside its storage, negative strides, a
          non-contiguous out, data outside device memory, out sharing a byte with self or
          mat2 where the kernel reads that input in place (see "Aliasing" in the module
          docstring; the message names both);
        * 561002 ACLNN_ERR_INNER_TILING_ERROR: no base block fits;
        * 361001: no device set.

        The message names the argument (``acl.get_recent_err_msg()``); a failed call
        changes no device memory. cubeMathType 1/3 with FLOAT inputs warns
        :class:`HF32NotModelledWarning` (see the module docstring).
    """


def aclnnMatmulGetWorkspaceSize(self, mat2, out, cubeMathType):
    return _first_phase(MATMUL, self, mat2, out, cubeMathType)


def aclnnMmGetWorkspaceSize(self, mat2, out, cubeMathType):
    return _first_phase(MM, self, mat2, out, cubeMathType)


def aclnnBatchMatMulGetWorkspaceSize(self, mat2, out, cubeMathType):
    return _first_phase(BATCH_MATMUL, self, mat2, out, cubeMathType)


_MM_NOTES = "USE_FP16 with BFLOAT16, USE_HF32 with FLOAT16/BFLOAT16"
aclnnMatmulGetWorkspaceSize.__doc__ = _DOC.format(
    api="aclnnMatmul", ranks="1-8 dims (torch.matmul rules)",
    bcast=", batch dims broadcast", outrule="", values="0 KEEP_DTYPE, 1 "
    "ALLOW_FP32_DOWN_PRECISION, 2 USE_FP16, 3 USE_HF32, 4 USE_FP32_ADD", mmout="",
    mathnotes=_MM_NOTES, rankrule="1-8")
aclnnMmGetWorkspaceSize.__doc__ = _DOC.format(
    api="aclnnMm", ranks="2-D", bcast="", outrule=" of the promoted dtype (FLOAT also for "
    "FLOAT16)", values="0 KEEP_DTYPE, 1 ALLOW_FP32_DOWN_PRECISION, 2 USE_FP16, 3 USE_HF32, 4 "
    "USE_FP32_ADD", mmout="; any other than the promoted dtype or FLOAT for FLOAT16",
    mathnotes=_MM_NOTES, rankrule="2")
aclnnBatchMatMulGetWorkspaceSize.__doc__ = _DOC.format(
    api="aclnnBatchMatMul", ranks="3-D", bcast=", batch dims equal or 1", outrule="",
    values="0 KEEP_DTYPE, 1 ALLOW_FP32_DOWN_PRECISION, 2 USE_FP16, 3 USE_HF32", mmout="",
    mathnotes="none beyond the values", rankrule="3")


def _second_phase_doc(api: str) -> str:
    return f"""Second phase of {api}: enqueue the kernels on ``stream`` (None or 0: default).

    Returns 0 when enqueued (results after ``acl.rt.synchronize_stream``); 161001 null
    executor or null workspace with workspaceSize > 0; 161002 released executor, a
    workspace smaller than the first phase asked for or not device memory, or a tensor
    whose memory was freed since the first phase; 361001 invalid stream
    (``docs/reference/api.md`` §4; see :func:`aclnn.executor.run_executor`).
    """


def aclnnMatmul(workspace, workspaceSize, executor, stream):
    return run_executor("aclnnMatmul", workspace, workspaceSize, executor, stream)


def aclnnMm(workspace, workspaceSize, executor, stream):
    return run_executor("aclnnMm", workspace, workspaceSize, executor, stream)


def aclnnBatchMatMul(workspace, workspaceSize, executor, stream):
    return run_executor("aclnnBatchMatMul", workspace, workspaceSize, executor, stream)


aclnnMatmul.__doc__ = _second_phase_doc("aclnnMatmul")
aclnnMm.__doc__ = _second_phase_doc("aclnnMm")
aclnnBatchMatMul.__doc__ = _second_phase_doc("aclnnBatchMatMul")


# Calls from several threads take effect one at a time (aclnn.runtime.serialize_api).
runtime.serialize_api(globals())
