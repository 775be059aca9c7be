"""Ascend C's high-level math APIs (高阶API "数学计算" and the activations Sigmoid/Gelu),
built from the basic vector instructions in the order the library issues them, so that
the numerics (one rounding per instruction) and the cost (one PIPE_V record per
instruction, via :func:`npusim.ascendc.vector.issue_vector`) come out of the model.

Sources. The sequences, constants, temporary-buffer layouts and ``GetXxxMaxMinTmpSize``
formulas are those of the Ascend C library for Atlas A2/A3 (NpuArch 2201), read in
asc-devkit ``impl/adv_api/detail/math/<api>/*_common_impl.h`` / ``*_v220_impl.h``,
``impl/adv_api/detail/activation/{sigmoid,gelu}/``, ``impl/adv_api/tiling/{math,
activation}/*_tiling*.cpp`` and ``include/adv_api/math/log.h``; the signatures and
constraints on the hiascend.com "Ascend C算子开发接口" pages cited in each docstring
(asc-devkit ``docs/api/context/<Api>.md``). Facts and constants carry over; the code is
ours.

Common to every API here:

* **Form.** Python keeps the C++ argument order: ``Xxx(dst, src, sharedTmpBuffer,
  calCount)``, ``Xxx(dst, src, sharedTmpBuffer)`` (calCount = src.GetSize()),
  ``Xxx(dst, src, calCount)`` and ``Xxx(dst, src)``; template parameters are keyword
  arguments (``isReuseSource=False``, ``highPrecision=False``...). Without a
  ``sharedTmpBuffer`` the API takes the 8 KiB of UB that Ascend C reserves for its library
  ("接口框架申请临时空间", PopStackBuffer): a kernel launched with ``reserve_ub=False``
  then gets a :class:`UbError`.
* **Temporary buffer.** ``sharedTmpBuffer`` is a ``uint8_t`` LocalTensor of at least the
  ``minValue`` the API's ``GetXxxMaxMinTmpSize`` returns (the pages: "预留/申请的临时空
  间大小不能小于最小临时空间大小"), else :class:`UbError`; it may not overlap src or dst
  (:class:`UbError`). The intermediates live in sub-views of it, and the work is split
  into chunks that fit it, exactly as the library does — a larger buffer means fewer,
  longer instructions (less head cost), as the pages promise.
* **Types and SoCs.** half and float (``T`` of dst and src alike) on Atlas A2/A3; bf16
  raises :class:`DtypeError` (no bf16 vector arithmetic on A2/A3), as does any other type.
  The library's builds for other architectures (NpuArch 1001/2002: ``*_v100_impl.h``,
  ``*_v200_impl.h``) are not modelled: calling these APIs on such a SoC raises
  :class:`KernelError`.
* **Errors** measured against float64 math (tests/test_lib_math.py) are stated per API
  in ulp of the output type.
"""
from __future__ import annotations

import numpy as np

from npusim.ascendc import compare as _cmp
from npusim.ascendc import core as _core
from npusim.ascendc import vector as _vec
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.lib._common import chunks, shape_size, tmp_buffer, type_size
from npusim.ascendc.types import ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE, RoundMode
from npusim.errors import KernelError, LimitError, UbError

__all__ = [
    "Sigmoid", "GetSigmoidMaxMinTmpSize",
    "Tanh", "GetTanhMaxMinTmpSize",
    "Gelu", "FasterGelu", "GetGeluMaxMinTmpSize", "GetGeluMaxTmpSize", "GetGeluMinTmpSize",
    "Erf", "GetErfMaxMinTmpSize",
    "Exp", "GetExpMaxMinTmpSize",
    "Log", "Log2", "Log10", "GetLogMaxMinTmpSize", "GetLog2MaxMinTmpSize",
    "GetLog10MaxMinTmpSize",
    "Sign", "GetSignMaxMinTmpSize",
    "Sin", "GetSinMaxMinTmpSize", "Cos", "GetCosMaxMinTmpSize",
    "Floor", "GetFloorMaxMinTmpSize", "Ceil", "GetCeilMaxMinTmpSize",
    "Round", "GetRoundMaxMinTmpSize", "Trunc", "GetTruncMaxMinTmpSize",
]

_F16, _F32, _U8 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.uint8)
_FLOATS = (_F16, _F32)
_REPEAT = ONE_REPEAT_BYTE_SIZE          # 256 B: the unit of the GetXxxMaxMinTmpSize minima


# ======================================================================================
# shared machinery
# ======================================================================================
def _parse(name: str, src: LocalTensor, args: tuple):
    """(sharedTmpBuffer or None, calCount) from the C++ overloads' trailing arguments."""
    args = list(args)
    tmp = args.pop(0) if args and isinstance(args[0], LocalTensor) else None
    count = int(args.pop(0)) if args else None
    if args:
        raise TypeError(f"{name}: unexpected arguments {args!r} (forms: (dst, src"
                        "[, sharedTmpBuffer][, calCount]))")
    return tmp, src.GetSize() if count is None else count


def _check(name: str, dst: LocalTensor, src: LocalTensor, count: int) -> np.dtype:
    """The checks every API here makes: SoC, dtype, calCount."""
    ctx = _core.current_core()
    if ctx.soc.npu_arch != "2201":
        raise KernelError(name, f"the simulator models the Atlas A2/A3 build (NpuArch 2201) of "
                          f"the Ascend C library; {name} on {ctx.soc.soc_version} (NpuArch "
                          f"{ctx.soc.npu_arch}) uses another implementation that is not "
                          "modelled", pipe="PIPE_V")
    dt = _vec.same_dtype(name, dst, src)
    if dt not in _FLOATS:
        _vec.check_dtype(ctx, name, dt, _FLOATS)      # raises, bf16 with its own message
    if count < 0 or count > src.GetSize() or count > dst.GetSize():
        raise UbError(name, f"calCount {count} exceeds srcTensor ({src.GetSize()}) or "
                      f"dstTensor ({dst.GetSize()}) elements", pipe="PIPE_V")
    return dt


def _floor32(n: int) -> int:
    return n // ONE_BLK_SIZE * ONE_BLK_SIZE


def _ops(dst, src, count):
    return (("srcTensor", src, count), ("dstTensor", dst, count))


# ======================================================================================
# Sigmoid
# ======================================================================================
def GetSigmoidMaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetSigmoidMaxMinTmpSize(srcShape, typeSize, isReuseSource, maxValue, minValue)`` ->
    ``(maxValue, minValue)`` in bytes: ``(max(n * typeSize, 256), 256)``.

    Source: hiascend "GetSigmoidMaxMinTmpSize" (atlasascendc_api_07_0794);
    ``impl/adv_api/tiling/activation/sigmoid_tiling_impl.cpp``.
    Raises ValueError for an empty shape or a typeSize other than 2/4.
    """
    n, ts = shape_size("GetSigmoidMaxMinTmpSize", srcShape), \
        type_size("GetSigmoidMaxMinTmpSize", typeSize)
    return max(n * ts, _REPEAT), _REPEAT


def Sigmoid(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Sigmoid<T, isReuseSource>(dst, src[, sharedTmpBuffer][, calCount])``:
    dst = 1 / (1 + exp(-src)), computed in T (half stays half).

    Per chunk of ``sharedTmpBuffer bytes / sizeof(T)`` elements the library issues
    ``Muls(-1) -> Exp -> Adds(1) -> Duplicate(tmp, 1) -> Div(tmp / dst)``
    (``impl/adv_api/detail/activation/sigmoid/sigmoid_impl.h``).

    Measured error vs float64 (tests/test_lib_math.py): float <= 2.2 ulp on [-87, 80];
    half <= 1.9 ulp on [-9, 12]. Where e^-x overflows (float x < -88.7, half x < -11.1)
    the result is 0, as the instruction sequence gives (absolute error < 1.6e-5 in half).
    +-inf -> 1/0, NaN -> NaN.
    Source: hiascend "Sigmoid" (atlasascendc_api_07_0793). Tmp minimum 256 B.
    """
    name = "Sigmoid"
    tmp, count = _parse(name, srcTensor, args)
    dt = _check(name, dstTensor, srcTensor, count)
    tmp = tmp_buffer(name, tmp, _REPEAT, "GetSigmoidMaxMinTmpSize", _ops(dstTensor, srcTensor, count))
    split = tmp.GetSize() // dt.itemsize
    ones = tmp.ReinterpretCast(dt)
    for off, n in chunks(count, split):
        d, s = dstTensor[off], srcTensor[off]
        _vec.Muls(d, s, -1.0, n)
        _vec.Exp(d, d, n)
        _vec.Adds(d, d, 1.0, n)
        _vec.Duplicate(ones, 1.0, n)
        _vec.Div(d, ones, d, n)


# ======================================================================================
# Tanh
# ======================================================================================
def GetTanhMaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetTanhMaxMinTmpSize`` -> ``(maxValue, minValue)``: k = 1 (float) or 4 (half);
    ``min = 256 k``, ``max = k * n * typeSize`` (or ``min`` when ``n * typeSize <= 256``).

    Source: ``impl/adv_api/tiling/math/tanh_tiling_impl.cpp``; hiascend
    "GetTanhMaxMinTmpSize". Raises ValueError for an empty shape or a bad typeSize.
    """
    n, ts = shape_size("GetTanhMaxMinTmpSize", srcShape), \
        type_size("GetTanhMaxMinTmpSize", typeSize)
    k = 1 if ts == 4 else 4
    return (k * n * ts if n * ts > _REPEAT else k * _REPEAT), k * _REPEAT


def Tanh(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Tanh<T, isReuseSource>(dst, src[, sharedTmpBuffer][, calCount])``:
    dst = (e^(2x) - 1) / (e^(2x) + 1) with x clipped to [-8.8, 8.8], computed in float.

    Per chunk: [half: Cast to float] -> Mins(8.8) -> Maxs(-8.8) -> Muls(2) -> Exp ->
    Adds(dst, -1) -> Adds(tmp, +1) -> Div -> [half: Cast back] (``impl/adv_api/detail/
    math/tanh/tanh_common_impl.h``). Chunk: tmp floats / (2 half, 1 float), 32-aligned.

    Measured error vs float64: float <= 2.3 ulp for |x| >= 0.5; below, the e^(2x) - 1
    cancellation leaves an absolute error <= 8.5e-8 (over 1500 ulp of tanh x near 0);
    half <= 0.51 ulp (the float result rounded once more). |x| >= 8.8 and +-inf give
    +-1; NaN -> NaN.
    Source: hiascend "Tanh" (asc-devkit docs/api/context/Tanh.md). Tmp minimum 256 B
    (float) / 1024 B (half).
    """
    name = "Tanh"
    tmp, count = _parse(name, srcTensor, args)
    dt = _check(name, dstTensor, srcTensor, count)
    _, min_b = GetTanhMaxMinTmpSize([1], dt.itemsize)
    tmp = tmp_buffer(name, tmp, min_b, "GetTanhMaxMinTmpSize", _ops(dstTensor, srcTensor, count))
    ftmp = tmp.ReinterpretCast(_F32)
    half = dt == _F16
    stack = _floor32(ftmp.GetSize() // (2 if half else 1))
    conv, clip = (ftmp, ftmp[stack]) if half else (None, ftmp)
    for off, n in chunks(count, stack):
        d, s = dstTensor[off], srcTensor[off]
        if half:
            _vec.Cast(conv, s, RoundMode.CAST_NONE, n)
            fd = fs = conv
        else:
            fd, fs = d, s
        _vec.Mins(clip, fs, 8.8, n)
        _vec.Maxs(clip, clip, -8.8, n)
        _vec.Muls(clip, clip, 2.0, n)
        _vec.Exp(clip, clip, n)
        _vec.Adds(fd, clip, -1.0, n)
        _vec.Adds(clip, clip, 1.0, n)
        _vec.Div(fd, fd, clip, n)
        if half:
            _vec.Cast(d, conv, RoundMode.CAST_NONE, n)


# ======================================================================================
# Gelu, FasterGelu
# ======================================================================================
def GetGeluMaxTmpSize(srcShape, typeSize):
    """``GetGeluMaxTmpSize``: ``max(3 * n * 4, 768)`` bytes (all three Gelu temporaries in
    float). Source: ``impl/adv_api/tiling/activation/gelu_tiling_impl.cpp``."""
    n = shape_size("GetGeluMaxTmpSize", srcShape)
    type_size("GetGeluMaxTmpSize", typeSize)
    return max(3 * n * 4, 3 * _REPEAT)


def GetGeluMinTmpSize(srcShape, typeSize):
    """``GetGeluMinTmpSize``: 768 bytes (three 256 B repeats)."""
    shape_size("GetGeluMinTmpSize", srcShape)
    type_size("GetGeluMinTmpSize", typeSize)
    return 3 * _REPEAT


def GetGeluMaxMinTmpSize(srcShape, typeSize):
    """``GetGeluMaxMinTmpSize(srcShape, typeSize, maxValue, minValue)`` ->
    ``(maxValue, minValue)``, shared by Gelu and FasterGelu (hiascend
    "GetGeluMaxMinTmpSize", atlasascendc_api_07_0774). ValueError for an empty shape or a
    typeSize other than 2/4."""
    return GetGeluMaxTmpSize(srcShape, typeSize), GetGeluMinTmpSize(srcShape, typeSize)


def _gelu_tanh_body(d, x, a, b, n, highPerformance):
    """x / (1 + e^-|y|) * e^min(y, 0) with y = 1.5957691216057308 (x + 0.044715 x^3)."""
    _vec.Mul(a, x, x, n)
    _vec.Mul(b, x, a, n)
    _vec.Muls(a, b, 0.044715, n)
    _vec.Add(b, x, a, n)
    _vec.Muls(a, b, 1.5957691216057308, n)
    _vec.Mins(b, a, 0.0, n)
    _vec.Exp(b, b, n)
    _vec.Abs(a, a, n)
    _vec.Muls(a, a, -1.0, n)
    _vec.Exp(a, a, n)
    _vec.Adds(a, a, 1.0, n)
    if highPerformance:
        _vec.Reciprocal(a, a, n)
        _vec.Mul(a, x, a, n)
    else:
        _vec.Div(a, x, a, n)
    _vec.Mul(d, a, b, n)


def _faster_gelu_body(d, x, a, b, n, highPerformance):
    """x / (1 + e^(-1.702 x))."""
    _vec.Muls(a, x, -1.702, n)
    _vec.Exp(a, a, n)
    _vec.Adds(a, a, 1.0, n)
    if highPerformance:
        _vec.Reciprocal(a, a, n)
        _vec.Mul(d, x, a, n)
    else:
        _vec.Div(d, x, a, n)


def _gelu_family(name, body, nbuf, dst, src, args, highPrecision, highPerformance):
    tmp, count = _parse(name, src, args)
    dt = _check(name, dst, src, count)
    tmp = tmp_buffer(name, tmp, 3 * _REPEAT, "GetGeluMaxMinTmpSize", _ops(dst, src, count))
    up = highPrecision and dt == _F16          # computed in float, with a conversion buffer
    ct = _F32 if up else dt
    units = tmp.ReinterpretCast(ct)
    stack = _floor32(units.GetSize() // (nbuf + (1 if up else 0)))
    a = units
    b = units[stack] if nbuf > 1 else None
    conv = units[stack * nbuf] if up else None
    for off, n in chunks(count, stack):
        d, s = dst[off], src[off]
        if up:
            _vec.Cast(conv, s, RoundMode.CAST_NONE, n)
            body(conv, conv, a, b, n, highPerformance)
            _vec.Cast(d, conv, RoundMode.CAST_NONE, n)
        else:
            body(d, s, a, b, n, highPerformance)


def Gelu(dstLocal, srcLocal, *args, highPrecision=False, highPerformance=False):
    """``Gelu<T, highPrecision, highPerformance>(dst, src[, sharedTmpBuffer], dataSize)``:
    the tanh form of GELU, dst = x / (1 + exp(-1.5957691216057308 (x + 0.044715 x^3))),
    evaluated as ``x / (1 + e^-|y|) * e^min(y, 0)`` so that no exponential overflows.

    Sequence per chunk (``impl/adv_api/detail/activation/gelu/gelu_impl.h``): Mul, Mul,
    Muls(0.044715), Add, Muls(1.5957691), Mins(0), Exp, Abs, Muls(-1), Exp, Adds(1),
    Div (highPerformance: Reciprocal + Mul), Mul. T=half computes in half unless
    ``highPrecision`` (then Cast to float first and back after). Two temporaries (three
    with highPrecision half) of tmp/(buffers)/32*32 elements each.

    Measured error vs float64 of that formula: float <= 9.9 ulp on [-3, 3] and <= 40 ulp
    on [-5.5, 8], where the output is an exponentially small tail (absolute <= 5e-7);
    half with highPrecision <= 0.51 ulp; plain half <= 16.5 ulp on [-8, 8]. -inf gives
    NaN (-inf * e^-inf), as the sequence does; +inf -> +inf. Source: hiascend "Gelu"
    (asc-devkit docs/api/context/Gelu.md). Tmp minimum 768 B (GetGeluMaxMinTmpSize).
    """
    _gelu_family("Gelu", _gelu_tanh_body, 2, dstLocal, srcLocal, args, highPrecision,
                 highPerformance)


def FasterGelu(dstLocal, srcLocal, *args, highPrecision=False, highPerformance=False):
    """``FasterGelu<T, highPrecision, highPerformance>(dst, src[, sharedTmpBuffer],
    dataSize)``: dst = x / (1 + exp(-1.702 x)).

    Sequence per chunk: Muls(-1.702), Exp, Adds(1), Div (highPerformance: Reciprocal +
    Mul); half with ``highPrecision`` is cast to float around it. One temporary (two
    with highPrecision half).

    Measured error vs float64 of that formula: float <= 6 ulp on [-3, 3], <= 10.7 ulp on
    [-8, 8]; half highPrecision <= 0.51 ulp; plain half <= 9.7 ulp on [-6.4, 8] — below
    -6.5, e^(1.702|x|) overflows half and the result is -0 (absolute error < 1e-4).
    -inf gives NaN (-inf / inf); +inf -> +inf. Source: hiascend "FasterGelu" (asc-devkit
    docs/api/context/FasterGelu.md); ``gelu_impl.h`` FastGeluCalcSimplified. Tmp minimum
    768 B (GetGeluMaxMinTmpSize).
    """
    _gelu_family("FasterGelu", _faster_gelu_body, 1, dstLocal, srcLocal, args,
                 highPrecision, highPerformance)


# ======================================================================================
# Erf
# ======================================================================================
def GetErfMaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetErfMaxMinTmpSize`` -> ``(maxValue, minValue)``: k = 3 (float) or 8 (half);
    ``min = 256 k``, ``max = k * max(n * typeSize, 256)``.

    Source: ``impl/adv_api/tiling/math/erf_tiling_impl.cpp``; hiascend
    "GetErfMaxMinTmpSize". ValueError for an empty shape or a bad typeSize.
    """
    n, ts = shape_size("GetErfMaxMinTmpSize", srcShape), \
        type_size("GetErfMaxMinTmpSize", typeSize)
    k = 3 if ts == 4 else 8
    return k * max(n * ts, _REPEAT), k * _REPEAT


#: Erf(x) ~ x P(x^2) / Q(x^2) on x clipped to [-3.92, 3.92] (erf_common_impl.h).
_ERF_P = (0.053443748819, 0.75517016694e1, 0.10162808918e3, 0.13938061484e4,
          0.50637915060e4, 0.29639384698e5)
_ERF_Q = (0.31212858877e2, 0.39856963806e3, 0.30231248150e4, 0.13243365831e5,
          0.26267224157e5)


def Erf(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Erf<T, isReuseSource>(dst, src[, sharedTmpBuffer][, calCount])``: the error
    function by the library's rational approximation ``erf(x) = x P(x^2) / Q(x^2)`` on x
    clipped to [-3.92, 3.92], P of degree 5 and Q of degree 5 (monic) in x^2, with the
    coefficients of ``impl/adv_api/detail/math/erf/erf_common_impl.h``.

    Sequence per chunk: [half: Cast to float] Mins(3.92), Maxs(-3.92); P: Mul, Muls,
    then 5 x (Adds, Mul); Q: 5 x Adds and 4 Mul interleaved; Div; [half: Cast back with
    CAST_ROUND, the 2201 build's mode]. Temporaries: 3 float (float) or 4 float (half) of
    tmp/(3 or 8 units)/32*32 each.

    Measured error vs float64 erf: float <= 4.2 ulp on [-6, 6] (the approximation's own
    error; the result can exceed 1 in magnitude by one ulp, e.g. Erf(-3.75) =
    -1.0000001); half <= 0.51 ulp. erf(+-inf) = +-1; NaN stays NaN.
    Source: hiascend "Erf" (asc-devkit docs/api/context/Erf.md). Tmp minimum 768 B
    (float) / 2048 B (half).
    """
    name = "Erf"
    tmp, count = _parse(name, srcTensor, args)
    dt = _check(name, dstTensor, srcTensor, count)
    half = dt == _F16
    _, min_b = GetErfMaxMinTmpSize([1], dt.itemsize)
    tmp = tmp_buffer(name, tmp, min_b, "GetErfMaxMinTmpSize", _ops(dstTensor, srcTensor, count))
    cal = _floor32(tmp.GetSize() // dt.itemsize // (8 if half else 3))
    f = tmp.ReinterpretCast(_F32)
    t1, t2, t3 = f, f[cal], f[2 * cal]
    t4 = f[3 * cal] if half else None
    for off, n in chunks(count, cal):
        d, s = dstTensor[off], srcTensor[off]
        if half:
            _vec.Cast(t4, s, RoundMode.CAST_NONE, n)
            x = t4
            _vec.Mins(t1, t4, 3.92, n)
        else:
            x = d
            _vec.Mins(t1, s, 3.92, n)
        _vec.Maxs(x, t1, -3.92, n)
        # P(x) = x (((((P5 x^2 + P4) x^2 + P3) x^2 + P2) x^2 + P1) x^2 + P0) -> t2
        _vec.Mul(t1, x, x, n)
        _vec.Muls(t2, t1, _ERF_P[0], n)
        for c in _ERF_P[1:-1]:
            _vec.Adds(t3, t2, c, n)
            _vec.Mul(t2, t1, t3, n)
        _vec.Adds(t3, t2, _ERF_P[-1], n)
        _vec.Mul(t2, x, t3, n)
        # Q(x) = ((((x^2 + Q4) x^2 + Q3) x^2 + Q2) x^2 + Q1) x^2 + Q0 -> t3 (x reused)
        _vec.Adds(t3, t1, _ERF_Q[0], n)
        for c in _ERF_Q[1:]:
            _vec.Mul(x, t1, t3, n)
            _vec.Adds(t3, x, c, n)
        if half:
            _vec.Div(t1, t2, t3, n)
            _vec.Cast(d, t1, RoundMode.CAST_ROUND, n)
        else:
            _vec.Div(d, t2, t3, n)


# ======================================================================================
# Exp (high precision)
# ======================================================================================
def GetExpMaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetExpMaxMinTmpSize(srcShape, typeSize, isReuseSource, maxValue, minValue)`` ->
    ``(maxValue, minValue)`` (the C++ also returns true): k float temporaries, k = 4
    (half), 3 (float) or 2 (float with isReuseSource); ``min = 256 k``,
    ``max = k * max(4 n, 256)``.

    Source: ``impl/adv_api/tiling/math/exp_tiling_impl.cpp``; hiascend
    "GetExpMaxMinTmpSize". ValueError for an empty shape or a bad typeSize.
    """
    n, ts = shape_size("GetExpMaxMinTmpSize", srcShape), \
        type_size("GetExpMaxMinTmpSize", typeSize)
    k = 4 if ts == 2 else (2 if isReuseSource else 3)
    return k * max(n * 4, _REPEAT), k * _REPEAT


def _exp_high(dst, src, args, taylorExpandLevel, isReuseSource):
    name = "Exp"
    level = int(taylorExpandLevel)
    if not 0 <= level <= 255:
        raise LimitError(name, f"taylorExpandLevel {level} is outside [0, 255] (uint8_t; "
                         "hiascend Exp page)", pipe="PIPE_V")
    tmp, count = _parse(name, src, args)
    dt = _check(name, dst, src, count)
    if level == 0:                         # no Taylor expansion: the basic instruction
        _vec.Exp(dst, src, count)
        return
    reuse = bool(isReuseSource) and dt == _F32
    _, min_b = GetExpMaxMinTmpSize([1], dt.itemsize, reuse)
    tmp = tmp_buffer(name, tmp, min_b, "GetExpMaxMinTmpSize", _ops(dst, src, count))
    f = tmp.ReinterpretCast(_F32)
    k = 4 if dt == _F16 else (2 if reuse else 3)
    align = ONE_BLK_SIZE // dt.itemsize
    one = f.GetSize() // k // align * align
    half = dt == _F16
    # FP16: FloorX, FloorXPow, Res, IntPart; FP32: FloorX (src if reused), FloorXPow, IntPart
    if half:
        floor_x, x_pow, res, int_part = f, f[one], f[2 * one], f[3 * one]
    elif reuse:
        floor_x, x_pow, int_part = src, f, f[one]
    else:
        floor_x, x_pow, int_part = f, f[one], f[2 * one]
    for off, n in chunks(count, one):
        s = src[off]
        if half:
            _vec.Cast(floor_x, s, RoundMode.CAST_NONE, n)
            r = res
        else:
            _vec.Adds(floor_x, s, 0.0, n)                           # copy
            r = dst[off]
        _vec.Cast(int_part, floor_x, RoundMode.CAST_FLOOR, n)        # floor(x)
        _vec.Sub(floor_x, floor_x, int_part, n)                      # x - floor(x)
        _vec.Exp(int_part, int_part, n)                              # e^floor(x)
        _vec.Adds(x_pow, floor_x, 0.0, n)
        _vec.Adds(r, floor_x, 0.0, n)
        _vec.Adds(r, r, 1.0, n)                                      # 1 + b
        for i in range(2, level + 1):                                # + b^i / i!
            _vec.Mul(x_pow, floor_x, x_pow, n)
            _vec.Muls(x_pow, x_pow, float(np.float32(1.0) / np.float32(i)), n)
            _vec.Add(r, r, x_pow, n)
        _vec.Mul(r, r, int_part, n)
        if half:
            _vec.Cast(dst[off], res, RoundMode.CAST_NONE, n)


def Exp(dstLocal, srcLocal, *args, taylorExpandLevel=None, isReuseSource=False, **kwargs):
    """``Exp``: the basic instruction, or Ascend C's high-level
    ``Exp<T, taylorExpandLevel, isReuseSource>`` when ``taylorExpandLevel`` is given.

    * ``Exp(dst, src, count)`` (and any other form of the basic instruction, its keyword
      arguments included): :func:`npusim.ascendc.vector.Exp`, unchanged.
    * ``Exp(dst, src[, sharedTmpBuffer], calCount, taylorExpandLevel=L,
      isReuseSource=False)``: the high-precision form. L = 0 is the basic Exp; otherwise
      ``e^x = e^floor(x) * sum_{i<=L} b^i / i!`` with ``b = x - floor(x)`` in float, as
      ``impl/adv_api/detail/math/exp/exp_common_impl.h`` builds it: [half: Cast to float |
      float: Adds(0) copy], Cast(CAST_FLOOR), Sub, Exp, Adds(0), Adds(0), Adds(1),
      (L-1) x (Mul, Muls(1/i), Add), Mul, [half: Cast back]. ``isReuseSource`` (float
      only) keeps floor(x)'s fraction in srcLocal, which is overwritten.

    Measured error vs float64 with L = 10: float <= 4.8 ulp on [-87, 88] (L = 15 the
    same; L = 3 is off by 3e-3 relative), half <= 0.51 ulp on [-17, 11]. +-inf and NaN
    give NaN (x - floor(x) = inf - inf), as the instruction sequence does; overflow gives
    +inf. Source: hiascend "Exp" (atlasascendc_api_07_0588/0589; A2/A3 only).
    Tmp minimum: GetExpMaxMinTmpSize (1024 B half, 768 B float, 512 B float reuse).

    Raises:
        TypeError: a sharedTmpBuffer without taylorExpandLevel.
        KernelError: taylorExpandLevel outside [0, 255]; plus the module's common errors.
    """
    if taylorExpandLevel is None:
        if args and isinstance(args[0], LocalTensor):
            raise TypeError("Exp with a sharedTmpBuffer is the high-level Exp: give "
                            "taylorExpandLevel (Exp<T, taylorExpandLevel, isReuseSource>)")
        return _vec.Exp(dstLocal, srcLocal, *args, **kwargs)
    if kwargs:
        raise TypeError(f"Exp: unexpected keyword arguments {sorted(kwargs)}")
    return _exp_high(dstLocal, srcLocal, args, taylorExpandLevel, isReuseSource)


# ======================================================================================
# Log, Log2, Log10
# ======================================================================================
def GetLogMaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetLogMaxMinTmpSize`` -> ``(0, 0)``: Log needs no temporary space
    (``impl/adv_api/tiling/math/log_tiling.cpp``)."""
    return 0, 0


def GetLog10MaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetLog10MaxMinTmpSize`` -> ``(0, 0)``: Log10 needs no temporary space."""
    return 0, 0


def GetLog2MaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetLog2MaxMinTmpSize`` -> ``(maxValue, minValue)``: half ``(max(4 n, 256), 256)``
    (one float buffer), float ``(0, 0)``. Source: ``log_tiling.cpp``. ValueError for an
    empty shape."""
    n = shape_size("GetLog2MaxMinTmpSize", srcShape)
    if int(typeSize) == 2:
        return max(n * 4, _REPEAT), _REPEAT
    return 0, 0


def Log(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Log<T, isReuseSource>(dst, src[, calCount])``: the natural logarithm, one Ln
    instruction over calCount (``log_common_impl.h`` LogImpl). Error: that of the Ln
    model (measured <= 1.8 ulp float, 0.51 ulp half). x < 0 -> NaN, 0 -> -inf.
    Source: hiascend "Log" (asc-devkit docs/api/context/Log.md)."""
    name = "Log"
    tmp, count = _parse(name, srcTensor, args)
    if tmp is not None:
        raise TypeError("Log takes no sharedTmpBuffer (forms: (dst, src[, calCount]))")
    _check(name, dstTensor, srcTensor, count)
    _vec.Ln(dstTensor, srcTensor, count)


def Log2(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Log2<T, isReuseSource>(dst, src[, sharedTmpBuffer][, calCount])``:
    log2(x) = ln(x) * 1.4426950408889634.

    float: Ln, Muls on dst (no temporary). half: per chunk of tmp/4/32*32 elements,
    Cast to float, Ln, Muls, Cast back (``log_common_impl.h`` Log2Compute).
    Measured error vs float64: float <= 2.5 ulp, half <= 0.51 ulp. Source: hiascend "Log"
    page (Log2). Tmp minimum: 256 B for half, none for float.
    """
    name = "Log2"
    tmp, count = _parse(name, srcTensor, args)
    dt = _check(name, dstTensor, srcTensor, count)
    inv_ln2 = 1.4426950408889634
    if dt == _F32:
        _vec.Ln(dstTensor, srcTensor, count)
        _vec.Muls(dstTensor, dstTensor, inv_ln2, count)
        return
    tmp = tmp_buffer(name, tmp, _REPEAT, "GetLog2MaxMinTmpSize", _ops(dstTensor, srcTensor, count))
    f = tmp.ReinterpretCast(_F32)
    split = _floor32(f.GetSize())
    for off, n in chunks(count, split):
        _vec.Cast(f, srcTensor[off], RoundMode.CAST_NONE, n)
        _vec.Ln(f, f, n)
        _vec.Muls(f, f, inv_ln2, n)
        _vec.Cast(dstTensor[off], f, RoundMode.CAST_NONE, n)


def Log10(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Log10<T, isReuseSource>(dst, src[, calCount])``: Ln then Muls by
    0.43429448190325176 rounded to T — in half the whole computation is half
    (``log_common_impl.h`` Log10Impl). Measured error vs float64: float <= 3.3 ulp, half
    <= 1.5 ulp. Source: hiascend "Log" page (Log10). No temporary space."""
    name = "Log10"
    tmp, count = _parse(name, srcTensor, args)
    if tmp is not None:
        raise TypeError("Log10 takes no sharedTmpBuffer (forms: (dst, src[, calCount]))")
    _check(name, dstTensor, srcTensor, count)
    _vec.Ln(dstTensor, srcTensor, count)
    _vec.Muls(dstTensor, dstTensor, 0.43429448190325176, count)


# ======================================================================================
# Sign
# ======================================================================================
def GetSignMaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetSignMaxMinTmpSize`` -> ``(max(3 n typeSize, 768), 768)`` bytes.
    Source: hiascend "GetSignMaxMinTmpSize" (atlasascendc_api_07_0553);
    ``impl/adv_api/tiling/math/sign_tiling.cpp``. ValueError for an empty shape."""
    n = shape_size("GetSignMaxMinTmpSize", srcShape)
    ts = int(typeSize)
    return max(3 * n * ts, 3 * _REPEAT), 3 * _REPEAT


_CMP = {_cmp.CMPMODE.LT: np.less, _cmp.CMPMODE.GT: np.greater}


def _compare_counter(mask, src0, src1, mode, n):
    """Compare in Counter mode, as the library issues it inside Sign on 2201 (the mask
    register holds the element count, so no whole-repeat rule). Whole repeats go through
    the public count form; a count that is not whole 256 B repeats is evaluated here with
    the same numerics and cost [R: until compare.py offers the counter/level-0 form]."""
    dt = src0.dtype
    if (n * dt.itemsize) % ONE_REPEAT_BYTE_SIZE == 0:
        _cmp.Compare(mask, src0, src1, mode, n)
        return
    ctx = _core.current_core()
    with np.errstate(invalid="ignore"):
        bits = _CMP[mode](src0.elements(n, "Compare"), src1.elements(n, "Compare"))
    nbytes = -(-n // 8)
    mask.elements(nbytes, "Compare")[...] = np.packbits(bits, bitorder="little")
    _vec.issue_vector(ctx, "Compare", n, _vec.RATE_SIMPLE[dt.itemsize], mask, (src0, src1),
                      dst_nbytes=nbytes)


def Sign(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Sign<T, isReuseSource>(dst, src[, sharedTmpBuffer][, calCount])``: -1, 0 or 1
    (0 for +-0 and NaN).

    Sequence per chunk (``impl/adv_api/detail/math/sign/sign_common_impl.h``):
    Duplicate(dst, 0), Compare(LT) and Compare(GT) of src against dst into two bit masks,
    Duplicate(tmp, 1), Select(mask_lt ? 0 : 1), Duplicate(tmp, -1), Select(mask_gt ? 0 :
    -1), Add. The library's Select takes its scalar from the register SetCmpMask loads
    from the duplicated tensor; here the Select is VSEL_TENSOR_SCALAR_MODE with that
    scalar, and the Duplicate is kept for its cost. Chunk: tmp / sizeof(T) / 3, 32-aligned.
    Exact (no rounding). Select's scalar mode needs the 8 KiB UB reserve on A2/A3.
    Source: hiascend "Sign" (atlasascendc_api_07_0552). Tmp minimum 768 B.
    """
    name = "Sign"
    tmp, count = _parse(name, srcTensor, args)
    dt = _check(name, dstTensor, srcTensor, count)
    tmp = tmp_buffer(name, tmp, 3 * _REPEAT, "GetSignMaxMinTmpSize", _ops(dstTensor, srcTensor, count))
    split = _floor32(tmp.GetSize() // dt.itemsize // 3)
    tmp_len = -(-(split // 8) // ONE_BLK_SIZE) * ONE_BLK_SIZE
    lt_mask, gt_mask = tmp, tmp[tmp_len]
    stack = tmp[2 * tmp_len].ReinterpretCast(dt)
    t3, t4 = stack, stack[split]
    sel = _cmp.SELMODE.VSEL_TENSOR_SCALAR_MODE
    for off, n in chunks(count, split):
        d, s = dstTensor[off], srcTensor[off]
        _vec.Duplicate(d, 0.0, n)
        _compare_counter(lt_mask, s, d, _cmp.CMPMODE.LT, n)
        _compare_counter(gt_mask, s, d, _cmp.CMPMODE.GT, n)
        _vec.Duplicate(t3, 1.0, n)
        _cmp.Select(t4, lt_mask, d, 1.0, sel, n)          # x < 0 ? 0 : 1
        _vec.Duplicate(t3, -1.0, n)
        _cmp.Select(d, gt_mask, d, -1.0, sel, n)          # x > 0 ? 0 : -1
        _vec.Add(d, t4, d, n)


# ======================================================================================
# Sin, Cos
# ======================================================================================
def _sincos_sizes(name, srcShape, typeSize, isReuseSource):
    n = shape_size(name, srcShape)
    ts = type_size(name, typeSize)
    if ts == 2 and isReuseSource:
        raise ValueError(f"{name}: isReuseSource is not supported for half")
    k = 8 if ts == 2 else (2 if isReuseSource else 3)
    return k * max(n * ts, _REPEAT), k * _REPEAT


def GetSinMaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetSinMaxMinTmpSize(srcShape, typeSize, isReuseSource, maxValue, minValue)`` ->
    ``(maxValue, minValue)``: k = 8 (half), 3 (float), 2 (float with isReuseSource);
    ``min = 256 k``, ``max = max(k n typeSize, min)``.

    Source: hiascend "GetSinMaxMinTmpSize"; ``impl/adv_api/tiling/math/
    sin_tiling_impl.cpp``. ValueError for an empty shape, a bad typeSize or half with
    isReuseSource.
    """
    return _sincos_sizes("GetSinMaxMinTmpSize", srcShape, typeSize, isReuseSource)


def GetCosMaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetCosMaxMinTmpSize`` -> ``(maxValue, minValue)``, the same factors as Sin
    (``impl/adv_api/tiling/math/cos_tiling_impl.cpp``)."""
    return _sincos_sizes("GetCosMaxMinTmpSize", srcShape, typeSize, isReuseSource)


_INV_PI = 0.3183098733425140380859375
# pi split so that k * pi_i is exact for the k the input range allows (sin/cos_common_impl.h)
_SIN_PI = (3.140625, 0.0009670257568359375, 6.2771141529083251953125e-7,
           1.21644916362129151821136474609375e-10)
_COS_PI4 = -1.0290623200529979163359041220560e-13
_COS_HALF_PI = 1.57079637050628662109375
_COS_HALF_PI_LO = -0.00000004371139000189375
_SIN_R = (2.604926501e-6, -0.0001980894471, 0.008333049340, -0.1666665792)


def _sin_poly(dst, x, rnd, kpi, n):
    """dst = (-1)^k x (1 + x^2 (R3 + x^2 (R2 + x^2 (R1 + x^2 R0)))) for k in rnd."""
    _vec.Mul(kpi, x, x, n)                                   # x^2
    _vec.Muls(dst, rnd, 0.5, n)                              # (-1)^k = 4 floor(k/2) - 2k + 1
    _vec.Cast(dst, dst, RoundMode.CAST_FLOOR, n)
    _vec.Muls(dst, dst, 4.0, n)
    _vec.Muls(rnd, rnd, -2.0, n)
    _vec.Add(dst, dst, rnd, n)
    _vec.Adds(dst, dst, 1.0, n)
    _vec.Muls(rnd, kpi, _SIN_R[0], n)
    _vec.Adds(rnd, rnd, _SIN_R[1], n)
    for c in _SIN_R[2:]:
        _vec.Mul(rnd, rnd, kpi, n)
        _vec.Adds(rnd, rnd, c, n)
    _vec.Mul(rnd, rnd, kpi, n)
    _vec.Adds(rnd, rnd, 1.0, n)
    _vec.Mul(rnd, rnd, x, n)
    _vec.Mul(dst, rnd, dst, n)


def _sin_reduce(x, src, rnd, kpi, n):
    """k = round(x / pi) (ties away), x0 = x - k pi in four exact steps."""
    _vec.Muls(rnd, src, _INV_PI, n)
    _vec.Cast(rnd, rnd, RoundMode.CAST_ROUND, n)
    _vec.Muls(kpi, rnd, _SIN_PI[0], n)
    _vec.Sub(x, src, kpi, n)
    for p in _SIN_PI[1:]:
        _vec.Muls(kpi, rnd, p, n)
        _vec.Sub(x, x, kpi, n)


def _cos_reduce(x, src, rnd, kpi, n):
    """k = rint(x / pi + 1/2), x0 = x - k pi + pi/2 (pi in five parts, pi/2 in two)."""
    _vec.Muls(rnd, src, _INV_PI, n)
    _vec.Adds(rnd, rnd, 0.5, n)
    _vec.Cast(rnd, rnd, RoundMode.CAST_RINT, n)
    _vec.Muls(kpi, rnd, _SIN_PI[0], n)
    _vec.Sub(x, src, kpi, n)
    _vec.Muls(kpi, rnd, _SIN_PI[1], n)
    _vec.Sub(x, x, kpi, n)
    _vec.Adds(x, x, _COS_HALF_PI, n)
    for p in (*_SIN_PI[2:], _COS_PI4):
        _vec.Muls(kpi, rnd, p, n)
        _vec.Sub(x, x, kpi, n)
    _vec.Adds(x, x, _COS_HALF_PI_LO, n)


def _sincos(name, getter, reduce, clamp, dst, src, args, isReuseSource):
    tmp, count = _parse(name, src, args)
    dt = _check(name, dst, src, count)
    half = dt == _F16
    reuse = bool(isReuseSource) and not half
    _, min_b = _sincos_sizes(getter, [1], dt.itemsize, reuse)
    tmp = tmp_buffer(name, tmp, min_b, getter, _ops(dst, src, count))
    f = tmp.ReinterpretCast(_F32)
    cal = _floor32(f.GetSize() // (4 if half else (2 if reuse else 3)))
    if half:
        conv, rnd, kpi, xbuf = f, f[cal], f[2 * cal], f[3 * cal]
    else:
        rnd, kpi = f, f[cal]
        xbuf = None if reuse else f[2 * cal]
    for off, n in chunks(count, cal):
        d, s = dst[off], src[off]
        if half:
            _vec.Cast(conv, s, RoundMode.CAST_NONE, n)
            fs = fd = conv
            x = xbuf
        else:
            fs, fd = s, d
            x = s if reuse else xbuf
        reduce(x, fs, rnd, kpi, n)
        _sin_poly(fd, x, rnd, kpi, n)
        if clamp:
            _vec.Mins(fd, fd, 1.0, n)
            _vec.Maxs(fd, fd, -1.0, n)
        if half:
            _vec.Cast(d, conv, RoundMode.CAST_NONE, n)


def Sin(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Sin<T, isReuseSource>(dst, src[, sharedTmpBuffer][, calCount])``: sine in float.

    Range reduction ``k = round(x / pi)`` (Muls, Cast CAST_ROUND), ``x0 = x - k pi`` with
    pi split in four parts (4 x Muls + Sub); sign ``(-1)^k = 4 floor(k/2) - 2k + 1``
    (Mul x0^2, Muls, Cast CAST_FLOOR, Muls, Muls, Add, Adds); ``sin x0 = x0 P(x0^2)`` with
    P of degree 4 (Muls, Adds, 3 x (Mul, Adds), Mul, Adds, Mul) and a final Mul; half is
    cast to float around it (``impl/adv_api/detail/math/sin/sin_common_impl.h``).
    Temporaries: 3 float (float), 2 with ``isReuseSource`` (srcTensor then holds x0 and
    is overwritten), 4 (half). Documented input range [-65504, 65504].

    Measured error vs float64 sin: float <= 2 ulp on [-4, 4] and <= 1.2e-7 absolute over
    [-65504, 65504] (ulp error is large only where sin x is near 0 far from the origin);
    half <= 0.51 ulp. sin(+-inf) and sin(NaN) are NaN.
    Source: hiascend "Sin" (asc-devkit docs/api/context/Sin.md).
    Tmp minimum 768 B (float), 512 B (float, isReuseSource), 2048 B (half).
    """
    _sincos("Sin", "GetSinMaxMinTmpSize", _sin_reduce, False, dstTensor, srcTensor, args,
            isReuseSource)


def Cos(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Cos<T, isReuseSource>(dst, src[, sharedTmpBuffer][, calCount])``: cosine in float
    as ``(-1)^k sin(x - k pi + pi/2)`` with ``k = rint(x / pi + 1/2)`` (pi in five
    parts, pi/2 in two), Sin's polynomial, then Mins(1), Maxs(-1)
    (``impl/adv_api/detail/math/cos/cos_common_impl.h``). Temporaries as Sin.

    Measured error vs float64 cos: float <= 4.7 ulp on [-4, 4] and <= 1.4e-7 absolute
    over [-65504, 65504]; half <= 0.51 ulp. cos(+-inf)/NaN -> NaN.
    Source: hiascend "Cos" (asc-devkit
    docs/api/context/Cos.md). Tmp minimum as Sin.
    """
    _sincos("Cos", "GetCosMaxMinTmpSize", _cos_reduce, True, dstTensor, srcTensor, args,
            isReuseSource)


# ======================================================================================
# Floor, Ceil, Round, Trunc
# ======================================================================================
def _round_sizes(name, srcShape, typeSize, half_k, float_k):
    n = shape_size(name, srcShape)
    ts = type_size(name, typeSize)
    k = half_k if ts == 2 else float_k
    return k * max(n * ts, _REPEAT), k * _REPEAT


def GetFloorMaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetFloorMaxMinTmpSize`` -> half ``(2 max(2n, 256), 512)``, float ``(0, 0)``
    (``impl/adv_api/tiling/math/floor_tiling_impl.cpp``)."""
    return _round_sizes("GetFloorMaxMinTmpSize", srcShape, typeSize, 2, 0)


def GetCeilMaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetCeilMaxMinTmpSize`` -> k = 2 (half) or 1 (float): ``(k max(n typeSize, 256),
    256 k)`` (``ceil_tiling_impl.cpp``)."""
    return _round_sizes("GetCeilMaxMinTmpSize", srcShape, typeSize, 2, 1)


def GetTruncMaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetTruncMaxMinTmpSize`` -> as Ceil (``trunc_tiling_impl.cpp``)."""
    return _round_sizes("GetTruncMaxMinTmpSize", srcShape, typeSize, 2, 1)


def GetRoundMaxMinTmpSize(ascendcPlatform, srcShape, typeSize, isReuseSource=False):
    """``GetRoundMaxMinTmpSize(ascendcPlatform, srcShape, typeSize, isReuseSource, maxValue,
    minValue)`` -> ``(maxValue, minValue)``; ``ascendcPlatform`` is the SocSpec. NpuArch
    2201: float ``(0, 0)``, half ``(max(2n, 256), 256)``; 2002: float ``(max(4n, 256),
    256)``, half ``(2 max(2n, 256), 512)`` (``round_tiling_impl.cpp``)."""
    arch = getattr(ascendcPlatform, "npu_arch", "2201")
    if arch == "2002":
        return _round_sizes("GetRoundMaxMinTmpSize", srcShape, typeSize, 2, 1)
    return _round_sizes("GetRoundMaxMinTmpSize", srcShape, typeSize, 1, 0)


def _rounding(name, getter, mode, half_div, float_chunked, dst, src, args):
    """Cast(float <- half), Cast(float, mode), Cast(half <- float) per chunk for half; one
    float->float Cast (chunked by the tmp buffer when the library chunks it) for float."""
    tmp, count = _parse(name, src, args)
    dt = _check(name, dst, src, count)
    _, min_b = getter([1], dt.itemsize)
    tmp = tmp_buffer(name, tmp, min_b, getter.__name__, _ops(dst, src, count))
    if dt == _F32:
        if not float_chunked:
            _vec.Cast(dst, src, mode, count)
            return
        split = _floor32(tmp.GetSize() // 4)
        for off, n in chunks(count, split):
            _vec.Cast(dst[off], src[off], mode, n)
        return
    f = tmp.ReinterpretCast(_F32)
    split = _floor32(tmp.GetSize() // 2 // half_div) if half_div else _floor32(f.GetSize())
    for off, n in chunks(count, split):
        _vec.Cast(f, src[off], RoundMode.CAST_NONE, n)
        _vec.Cast(f, f, mode, n)
        _vec.Cast(dst[off], f, RoundMode.CAST_NONE, n)


def Floor(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Floor<T, isReuseSource>(dst, src[, sharedTmpBuffer][, calCount])``: largest
    integer <= x. float: one Cast(CAST_FLOOR) float->float over calCount (any tmp buffer is
    ignored); half: per chunk of tmp/4/32*32, Cast to float, Cast(CAST_FLOOR), Cast back
    (``impl/adv_api/detail/math/floor/floor_v220_impl.h``). Exact; +-inf and NaN pass
    through (a zero result is +0, as the Cast model gives). Source: hiascend "Floor"
    (asc-devkit docs/api/context/Floor.md). Tmp minimum
    512 B (half), none (float)."""
    _rounding("Floor", GetFloorMaxMinTmpSize, RoundMode.CAST_FLOOR, 0, False, dstTensor,
              srcTensor, args)


def Ceil(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Ceil<T, isReuseSource>(dst, src[, sharedTmpBuffer][, calCount])``: smallest integer
    >= x. Per chunk (float: tmp/4/32*32 elements, one Cast(CAST_CEIL); half: tmp/2/2/32*32,
    Cast to float, Cast(CAST_CEIL), Cast back; ``ceil_common_impl.h``, ``ceil_v220_impl.h``).
    Exact. Source: hiascend "Ceil" (asc-devkit docs/api/context/Ceil.md). Tmp minimum 256 B
    (float), 512 B (half)."""
    _rounding("Ceil", GetCeilMaxMinTmpSize, RoundMode.CAST_CEIL, 2, True, dstTensor,
              srcTensor, args)


def Round(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Round<T, isReuseSource>(dst, src[, sharedTmpBuffer][, calCount])``: nearest
    integer, ties to even (the 2201 build casts with CAST_RINT: Round(2.5) = 2,
    Round(-0.5) = -0). float: one Cast(CAST_RINT) over calCount; half: per chunk of
    tmp/4/32*32, Cast, Cast(CAST_RINT), Cast back (``round_v220_impl.h``). Exact. Source:
    hiascend "Round" (asc-devkit docs/api/context/Round.md). Tmp minimum 256 B (half),
    none (float)."""
    _rounding("Round", _round_getter, RoundMode.CAST_RINT, 0, False, dstTensor, srcTensor,
              args)


def _round_getter(srcShape, typeSize):
    return GetRoundMaxMinTmpSize(_core.current_core().soc, srcShape, typeSize)


_round_getter.__name__ = "GetRoundMaxMinTmpSize"


def Trunc(dstTensor, srcTensor, *args, isReuseSource=False):
    """``Trunc<T, isReuseSource>(dst, src[, sharedTmpBuffer][, calCount])``: the integer
    part (toward zero). Chunked like Ceil, with CAST_TRUNC (``trunc_common_impl.h``,
    ``trunc_v220_impl.h``). Exact. Source: hiascend "Trunc" (asc-devkit
    docs/api/context/Trunc.md). Tmp minimum 256 B (float), 512 B (half)."""
    _rounding("Trunc", GetTruncMaxMinTmpSize, RoundMode.CAST_TRUNC, 2, True, dstTensor,
              srcTensor, args)
