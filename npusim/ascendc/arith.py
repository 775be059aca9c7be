"""More vector arithmetic on PIPE_V: Rsqrt, LeakyRelu, Axpy, FusedMulAdd, MulAddDst,
AddRelu, SubRelu, the bitwise Not/And/Or and the scalar shifts ShiftLeft/ShiftRight.

Every instruction takes both Ascend C forms, like :func:`npusim.ascendc.vector.Add`:
``Xxx(dst, ..., count)`` (the first ``count`` elements) and the level-0 form ``Xxx(dst,
..., mask, repeatTime, repeatParams)`` (:mod:`npusim.ascendc.repeat`; a continuous or
``[low, high]`` bit mask, ``isSetMask=False`` for the mask register).

Numerics (how the vector unit rounds):

* Each arithmetic step rounds to the destination type, as a separate instruction would:
  FusedMulAdd, MulAddDst and Axpy round the product, then the sum (two roundings, not a
  fused multiply-add). This is what the FusedMulAdd page's half example shows: all its
  printed results are ``half(half(src0*dst) + src1)``, 15 of the first 78 differ from the
  singly rounded value (docs/api/context/FusedMulAdd.md "调用示例"); MulAddDst and Axpy
  are taken to work the same way [R]. In the half -> float forms the half operands are
  widened first, so the product is exact and only the sum rounds (the MulAddDst page's
  example agrees).
* With SetSaturationFlag(true), each step of a half result clamps inf to ±65504 and NaN
  to 0, and int16 results saturate (vector._compute, docs/reference/hardware.md §2.1).
  Not/And/Or and the shifts are bit operations: they never overflow, and the shifts
  ignore the flag [R: the pages say nothing of saturating shifts].
* Rsqrt is ``1 / sqrt(x)`` rounded once to T (0 -> inf, negative -> NaN) [R: the
  hardware's approximation error is not published; this is the correctly rounded value].

Cost: published elements per cycle per AIV (docs/reference/hardware.md §2.1): 128 for 16-bit
(Rsqrt/LeakyRelu/Axpy/FusedMulAdd/AddRelu/SubRelu half, Not/And/Or int16, 16-bit shifts)
and 64 for 32-bit types and Axpy half -> float; MulAddDst 64 (half) and 32 (float, and
half -> float [R]). A level-0 call costs its repeats (256 B each).

Dtypes are those of Atlas A2/A3 (the asc-devkit ``docs/api/context/<Name>.md`` pages);
bfloat16 raises :class:`DtypeError` as for every vector instruction.

Shared rules (the two forms, 32 B UB alignment, address overlap, the cost terms —
head, repeats, UB bank conflicts — and the common errors): the
:mod:`npusim.ascendc.vector` module docstring. The docstrings here give each instruction's
forms, dtypes, rate and the errors of its own; "LimitError/UbError: level-0 limits,
bounds" refers to those common rules. Axpy, FusedMulAdd and MulAddDst read dst as an
operand too, so dst follows the source overlap rules.
"""
from __future__ import annotations

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import timing_only as _timing_only
from npusim.ascendc.repeat import BinaryRepeatParams, UnaryRepeatParams
from npusim.ascendc.vector import (RATE_SIMPLE, _compute, check_dtype, elementwise, run_forms,
                                   same_dtype)
from npusim.errors import DtypeError, LimitError

__all__ = ["Rsqrt", "LeakyRelu", "Axpy", "FusedMulAdd", "MulAddDst", "AddRelu", "SubRelu",
           "Not", "And", "Or", "ShiftLeft", "ShiftRight"]

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_I16, _U16 = np.dtype(np.int16), np.dtype(np.uint16)
_I32, _U32 = np.dtype(np.int32), np.dtype(np.uint32)
_FLOATS = (_F16, _F32)
_RELU_TYPES = (_F16, _F32, _I16)                 # AddRelu/SubRelu on A2/A3
_BIT_TYPES = (_I16, _U16)                        # Not/And/Or on A2/A3
_SHIFT_TYPES = (_U16, _I16, _U32, _I32)          # ShiftLeft/ShiftRight on A2/A3
#: (dst, src) dtypes of Axpy and MulAddDst: same type, or half sources into float.
_FMA_PAIRS = ((_F16, _F16), (_F32, _F32), (_F32, _F16))
#: MulAddDst elements/cycle by destination size (hardware.md §2.1: half 64, float 32).
RATE_MULADDDST = {2: 64, 4: 32}


# -- helpers -------------------------------------------------------------------------------
def _level0_strides(args: tuple, layout, default) -> tuple:
    """Level-0 ``args`` with the repeat params (``default()`` when omitted) mapped onto the
    operands the computation reads: ``layout(params)`` -> the (blkStride, repStride) pairs
    of dst and each source (dst again where the instruction reads it). A count passes."""
    if not (type(args) is tuple and len(args) > 1):
        return args
    params = args[2] if len(args) > 2 else default()
    return (args[0], args[1], layout(params))


def _unary_dst(p):
    """UnaryRepeatParams of ``dst = f(src, dst)``: sources src, dst."""
    d = (p.dstBlkStride, p.dstRepStride)
    return d, (p.srcBlkStride, p.srcRepStride), d


def _check_fma_pair(ctx, name: str, dst, src) -> np.dtype:
    """Axpy/MulAddDst dtypes: (half, half), (float, float) or half sources into float."""
    if (dst.dtype, src.dtype) not in _FMA_PAIRS:
        check_dtype(ctx, name, src.dtype, _FLOATS)            # bf16 and others: DtypeError
        raise DtypeError(name, f"{src.dtype.name} sources into a {dst.dtype.name} destination "
                         "is not a supported combination (half->half, float->float, "
                         f"half->float; {name}.md 表3)", pipe="PIPE_V")
    return dst.dtype


def _mul_add(ctx, dt, a, b, c, out) -> None:
    """out = round(round(a * b) + c) in dt: the product rounds before the sum (see the
    module notes); the saturation flag applies to each step."""
    prod = np.empty(out.shape, dtype=dt)
    _compute(ctx, np.multiply, [np.asarray(a).astype(dt, copy=False),
                                np.asarray(b).astype(dt, copy=False)], None, dt, prod)
    _compute(ctx, np.add, [prod, c], None, dt, out)


# -- unary and binary element-wise ---------------------------------------------------------
def _rsqrt(x, out):
    np.divide(1.0, np.sqrt(x, dtype=np.float64), out=out)     # one rounding, to out's type


def Rsqrt(dst, src, *args, isSetMask=True):
    """dst[i] = 1 / sqrt(src[i]), rounded once to T (half/float; 0 -> inf, < 0 -> NaN).

    Forms: ``Rsqrt(dst, src, count)``; ``Rsqrt(dst, src, mask, repeatTime,
    UnaryRepeatParams)``. 128 half / 64 float elements per cycle. Source: asc-devkit
    docs/api/context/Rsqrt.md (hiascend atlasascendc_api_07_0030).

    Raises:
        DtypeError: not half/float, or mixed. LimitError/UbError: level-0 limits, bounds.
    """
    elementwise("Rsqrt", _rsqrt, _FLOATS, RATE_SIMPLE, dst, (src,), args, isSetMask=isSetMask)


def _leaky(x, s, out):
    neg = x < 0
    np.copyto(out, np.where(neg, x * s, x))     # x * s rounds to T (s is already T)


def LeakyRelu(dst, src, scalarValue, *args, isSetMask=True):
    """dst[i] = src[i] if src[i] >= 0 else src[i] * scalarValue (half/float).

    ``scalarValue`` is converted to T first; the product rounds to T; NaN stays NaN.
    Forms: ``LeakyRelu(dst, src, scalarValue, count)``; ``LeakyRelu(dst, src,
    scalarValue, mask, repeatTime, UnaryRepeatParams)``. 128 half / 64 float per cycle.
    Source: docs/api/context/LeakyRelu.md (atlasascendc_api_07_0060).

    Raises:
        DtypeError: not half/float, or mixed. LimitError/UbError: level-0 limits, bounds.
    """
    elementwise("LeakyRelu", _leaky, _FLOATS, RATE_SIMPLE, dst, (src,), args, scalarValue,
                isSetMask)


def _add_relu(a, b, out):
    np.add(a, b, out=out)
    np.maximum(out, out.dtype.type(0), out=out)


def _sub_relu(a, b, out):
    np.subtract(a, b, out=out)
    np.maximum(out, out.dtype.type(0), out=out)


def AddRelu(dst, src0, src1, *args, isSetMask=True):
    """dst[i] = max(src0[i] + src1[i], 0): the sum rounds (int16 wraps, or saturates with
    SetSaturationFlag), then Relu. half/float/int16; 128 (half, int16) / 64 (float) per
    cycle. Like Add, it may accumulate into src1 across repeats (src1 or dst repeat
    stride 0; 通用说明和约束.md). Forms: ``(dst, src0, src1, count)`` and ``(dst, src0,
    src1, mask, repeatTime, BinaryRepeatParams)``. Source: docs/api/context/AddRelu.md
    (atlasascendc_api_07_0043).

    Raises:
        DtypeError: another dtype, or mixed. LimitError/UbError: level-0 limits, bounds.
    """
    elementwise("AddRelu", _add_relu, _RELU_TYPES, RATE_SIMPLE, dst, (src0, src1), args,
                isSetMask=isSetMask)


def SubRelu(dst, src0, src1, *args, isSetMask=True):
    """dst[i] = max(src0[i] - src1[i], 0); as :func:`AddRelu` otherwise.
    Source: docs/api/context/SubRelu.md."""
    elementwise("SubRelu", _sub_relu, _RELU_TYPES, RATE_SIMPLE, dst, (src0, src1), args,
                isSetMask=isSetMask)


def Not(dst, src, *args, isSetMask=True):
    """dst[i] = ~src[i], bitwise (int16/uint16; 128 per cycle). Forms: ``(dst, src,
    count)``, ``(dst, src, mask, repeatTime, UnaryRepeatParams)``. Source:
    docs/api/context/Not.md.

    Raises:
        DtypeError: not int16/uint16, or mixed. LimitError/UbError: level-0 limits, bounds.
    """
    elementwise("Not", np.invert, _BIT_TYPES, RATE_SIMPLE, dst, (src,), args,
                isSetMask=isSetMask)


def And(dst, src0, src1, *args, isSetMask=True):
    """dst[i] = src0[i] & src1[i] (int16/uint16; 128 per cycle). Forms as :func:`Add`.
    Source: docs/api/context/And.md (atlasascendc_api_07_0041)."""
    elementwise("And", np.bitwise_and, _BIT_TYPES, RATE_SIMPLE, dst, (src0, src1), args,
                isSetMask=isSetMask)


def Or(dst, src0, src1, *args, isSetMask=True):
    """dst[i] = src0[i] | src1[i] (int16/uint16; 128 per cycle). Forms as :func:`Add`.
    Source: docs/api/context/Or.md."""
    elementwise("Or", np.bitwise_or, _BIT_TYPES, RATE_SIMPLE, dst, (src0, src1), args,
                isSetMask=isSetMask)


# -- multiply-add --------------------------------------------------------------------------
def Axpy(dst, src, scalarValue, *args, isSetMask=True):
    """dst[i] = src[i] * scalarValue + dst[i]: the product rounds to dst's type, then the
    sum (two roundings; see the module notes).

    Dtypes (dst, src = scalar type): half/half, float/float, float/half. ``scalarValue``
    is converted to src's type first. In the half -> float level-0 form a repeat has 64
    lanes: the first 4 data blocks of src (Axpy.md 约束说明), so srcRepStride is usually 4.
    Forms: ``Axpy(dst, src, scalarValue, count)``; ``Axpy(dst, src, scalarValue, mask,
    repeatTime, UnaryRepeatParams)``. 128 (half) / 64 (float, half -> float) per cycle.
    Source: docs/api/context/Axpy.md.

    Raises:
        DtypeError: another combination. LimitError/UbError: level-0 limits, bounds, a
            src overlapping dst (only complete in-place overlap is allowed).
    """
    ctx = _core.current_core()
    dt = _check_fma_pair(ctx, "Axpy", dst, src)
    scalar = _timing_only.scalar(src.dtype, scalarValue)   # UNCOMPUTED: timing-only

    def axpy(s, d, out):
        _mul_add(ctx, dt, s, scalar, d, out)

    run_forms(ctx, "Axpy", axpy, dst, (src, dst),
              _level0_strides(args, _unary_dst, UnaryRepeatParams), RATE_SIMPLE[dt.itemsize],
              isSetMask)


def FusedMulAdd(dst, src0, src1, *args, isSetMask=True):
    """dst[i] = src0[i] * dst[i] + src1[i] (half/float, one dtype), rounded twice: the
    product, then the sum — as the page's half example shows (module notes).

    Forms: ``FusedMulAdd(dst, src0, src1, count)``; ``FusedMulAdd(dst, src0, src1, mask,
    repeatTime, BinaryRepeatParams)`` (dst is read and written through the dst strides).
    128 half / 64 float per cycle. Source: docs/api/context/FusedMulAdd.md.

    Raises:
        DtypeError: not half/float, or mixed. LimitError/UbError: level-0 limits, bounds.
    """
    ctx = _core.current_core()
    dt = same_dtype("FusedMulAdd", dst, src0, src1)
    check_dtype(ctx, "FusedMulAdd", dt, _FLOATS)

    def fma(a, d, c, out):
        _mul_add(ctx, dt, a, d, c, out)

    def layout(p):
        d = (p.dstBlkStride, p.dstRepStride)
        return d, (p.src0BlkStride, p.src0RepStride), d, (p.src1BlkStride, p.src1RepStride)

    run_forms(ctx, "FusedMulAdd", fma, dst, (src0, dst, src1),
              _level0_strides(args, layout, BinaryRepeatParams),
              RATE_SIMPLE[dt.itemsize], isSetMask)


def MulAddDst(dst, src0, src1, *args, isSetMask=True):
    """dst[i] = src0[i] * src1[i] + dst[i], rounded twice (product, then sum).

    Dtypes (dst, sources): half/half, float/float, float/half (half sources widened: the
    product is exact); the sources share one dtype. A half -> float repeat has 64 lanes
    (the sources' first 4 data blocks, srcRepStride usually 4); that form may not overlap
    its operands (MulAddDst.md 约束说明). Forms: ``MulAddDst(dst, src0, src1, count)``;
    ``MulAddDst(dst, src0, src1, mask, repeatTime, BinaryRepeatParams)``. 64 half / 32
    float (and half -> float [R]) per cycle. Source: docs/api/context/MulAddDst.md.

    Raises:
        DtypeError: another combination. LimitError/UbError: level-0 limits, bounds,
            overlap.
    """
    ctx = _core.current_core()
    same_dtype("MulAddDst", src0, src1)
    dt = _check_fma_pair(ctx, "MulAddDst", dst, src0)

    def mad(a, b, d, out):
        _mul_add(ctx, dt, a, b, d, out)

    def layout(p):
        d = (p.dstBlkStride, p.dstRepStride)
        return d, (p.src0BlkStride, p.src0RepStride), (p.src1BlkStride, p.src1RepStride), d

    run_forms(ctx, "MulAddDst", mad, dst, (src0, src1, dst),
              _level0_strides(args, layout, BinaryRepeatParams),
              RATE_MULADDDST[dt.itemsize], isSetMask)


# -- shifts -------------------------------------------------------------------------------
def _shift_args(name: str, dst, src, scalarValue) -> tuple[np.dtype, int]:
    ctx = _core.current_core()
    dt = same_dtype(name, dst, src)
    check_dtype(ctx, name, dt, _SHIFT_TYPES)
    n = int(scalarValue)
    bits = dt.itemsize * 8
    if not 0 <= n <= bits:
        raise LimitError(name, f"shift {n} is outside [0, {bits}] for {dt.name} "
                         f"({name}.md: scalarValue range on Atlas A2/A3)", pipe="PIPE_V")
    return dt, n


def ShiftLeft(dst, src, scalarValue, *args, isSetMask=True):
    """dst[i] = src[i] << scalarValue, the bits shifted out dropped (a shift by the full
    width gives 0). uint16/int16/uint32/int32; scalarValue in [0, 16] (16-bit) or
    [0, 32] (32-bit). Forms: ``(dst, src, scalarValue, count)``, ``(dst, src, scalarValue,
    mask, repeatTime, UnaryRepeatParams)``. 128 (16-bit) / 64 (32-bit) per cycle. Not
    affected by SetSaturationFlag [R]. Source: docs/api/context/ShiftLeft.md.

    Raises:
        DtypeError: another dtype, or mixed. LimitError: scalarValue out of range;
            level-0 limits. UbError: bounds.
    """
    dt, n = _shift_args("ShiftLeft", dst, src, scalarValue)

    def shl(x, out):
        # in uint64 (two's complement bits for signed types), then back to the width: the
        # bits shifted out drop
        out[...] = (x.astype(np.uint64) << np.uint64(n)).astype(dt)

    run_forms(_core.current_core(), "ShiftLeft", shl, dst, (src,), args,
              RATE_SIMPLE[dt.itemsize], isSetMask)


def ShiftRight(dst, src, scalarValue, *args, isSetMask=True, roundEn=False):
    """dst[i] = src[i] >> scalarValue: logical for unsigned types (zeros shift in),
    arithmetic for signed ones (the sign bit is copied).

    ``roundEn`` (level-0 form only, the C++ parameter after repeatParams; positional or
    keyword): for int16/int32 the result is rounded — the last bit shifted out is added
    (``(x >> n) + ((x >> (n - 1)) & 1)``: 17 >> 5 gives 1); it has no effect on unsigned
    types or n = 0. Dtypes, scalar range and cost as :func:`ShiftLeft`.
    Forms: ``(dst, src, scalarValue, count)``, ``(dst, src, scalarValue, mask, repeatTime,
    UnaryRepeatParams[, roundEn])``. Source: docs/api/context/ShiftRight.md.

    Raises:
        DtypeError: another dtype, or mixed. LimitError: scalarValue out of range;
            roundEn with the count form; level-0 limits. UbError: bounds.
    """
    dt, n = _shift_args("ShiftRight", dst, src, scalarValue)
    level0 = type(args) is tuple and len(args) > 1
    if len(args) > 3:
        args, roundEn = args[:3], args[3]
    if roundEn and not level0:
        raise LimitError("ShiftRight", "roundEn is a parameter of the level-0 form only "
                         "(ShiftRight.md 函数原型)", pipe="PIPE_V")
    round_bit = bool(roundEn) and dt.kind == "i" and n > 0

    def shr(x, out):
        wide = x.astype(np.int64)              # int64 keeps uint32 non-negative: logical
        res = wide >> n
        if round_bit:
            res += (wide >> (n - 1)) & 1
        out[...] = res.astype(dt)

    run_forms(_core.current_core(), "ShiftRight", shr, dst, (src,), args,
              RATE_SIMPLE[dt.itemsize], isSetMask)
