"""Ascend C's high-level LayerNorm (the [B, S, H] form that outputs mean and variance) and
RmsNorm, with their host tilings, built from the basic instructions in the order the
library issues them on Atlas A2/A3 (NpuArch 2201).

Sources: hiascend "LayerNorm" (atlasascendc_api_07_0795/0797), "LayerNorm Tiling",
"RmsNorm" and "RmsNorm Tiling" (CANN 8.x); the sequences, workspace layouts and tiling
formulas of asc-devkit ``impl/adv_api/detail/normalization/{layernorm,rmsnorm}/`` and
``impl/adv_api/tiling/normalization/{layernorm,rmsnorm}_tiling*.cpp`` (facts re-expressed,
not copied). Everything is computed in float: half data is cast up first and the result
cast back (CAST_NONE, i.e. round to nearest even).

LayerNorm, per chunk of ``tiling.bsCurLength`` rows of H (storage) elements:
mean = sum(x * (1/H_orig)) — Muls, then each row's 64-wide chunks added into its first 64
lanes (Add with a repeat stride 0 destination), then WholeReduceSum per row; variance =
sum((x - mean)^2 * (1/H_orig)) the same way; y = (x - mean) * (1 / Sqrt(variance + eps)) *
gamma + beta (Adds, Sqrt, Duplicate(1), Div, Mul, then Mul/Add by gamma/beta row by row).
The library broadcasts mean and variance over each row with SetCmpMask + Select per row;
here Brcb puts them in 32 B blocks read with block stride 0 by the Sub and the Adds (the
values are the same; the Select's read of the 12 bytes after each row's value, which
nothing wrote, is avoided) [R]. The page's "Adds, Ln, Muls, Exp" for the reciprocal square
root is the older library; the A2 build issues Sqrt and Div.

RmsNorm, per chunk of ``tiling.mainBsLength`` rows: x^2 (Mul), each row summed by Counter-
mode RepeatReduceSum passes over 64-element repeats until one value is left, * 1/H_orig
(Muls), + eps (Adds), then exp(-0.5 * ln(.)) (the library's "high precision" rsqrt: Ln,
Muls, Exp), each row scaled by its value (Muls with the value read by the scalar unit), and
the rows multiplied by gamma (one Mul per row, per 64-column block or masked, by H).

Not modelled: the basic-block sequences (``isBasicBlock`` checks the documented shapes and
runs the general sequence [R]), LayerNorm's [A, R] "rstd" form, and Atlas A3's LayerNorm
differences, if any (the A2 build is used).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import repeat as _repeat
from npusim.ascendc import vector as _vec
from npusim.ascendc.lib._common import chunks, tmp_buffer, type_size
from npusim.ascendc.lib.softmax import broadcast_rows, rowwise
from npusim.ascendc.reduce import WholeReduceSum, handoff, library_repeat_reduce_sum, set_counter
from npusim.ascendc.repeat import MASK_PLACEHOLDER, BinaryRepeatParams
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.types import MAX_REPEAT_TIMES, HardEvent, RoundMode
from npusim.errors import AlignmentError, KernelError, UbError

__all__ = ["LayerNormTiling", "LayerNorm", "GetLayerNormMaxMinTmpSize", "GetLayerNormNDTilingInfo",
           "RmsNormTiling", "RmsNorm", "GetRmsNormMaxMinTmpSize", "GetRmsNormTilingInfo"]

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_LANES = 64


def _align(n: int, unit: int) -> int:
    return -(-int(n) // unit) * unit


def _dims(name: str, shape, ndim: int) -> list[int]:
    dims = [int(d) for d in (shape.GetDims() if hasattr(shape, "GetDims") else shape)]
    if len(dims) != ndim or any(d <= 0 for d in dims):
        raise ValueError(f"{name}: the shape must have {ndim} positive dims, not {dims}")
    return dims


def _check_arch(ctx, name: str) -> None:
    if ctx.soc.npu_arch != "2201":
        raise KernelError(name, f"the simulator models the Atlas A2/A3 (NpuArch 2201) build of "
                          f"{name}, not {ctx.soc.soc_version}", pipe="PIPE_V")


def _split_args(name: str, args):
    """(sharedTmpBuffer or None, epsilon, tiling) from ([sharedTmpBuffer,] epsilon, tiling)."""
    args = list(args)
    tmp = args.pop(0) if args and isinstance(args[0], LocalTensor) else None
    if len(args) != 2:
        raise TypeError(f"{name}: expected ([sharedTmpBuffer,] epsilon, tiling) after the tensors")
    return tmp, args[0], args[1]


def _check_sizes(name: str, tensors) -> None:
    for what, t, n in tensors:
        if t.GetSize() < n:
            raise UbError(name, f"{what} holds {t.GetSize()} elements; the tiling needs {n}",
                          pipe="PIPE_V")


# == LayerNorm ==================================================================================
@dataclass
class LayerNormTiling:
    """``LayerNormTiling`` (kernel_tiling.h) as GetLayerNormNDTilingInfo fills it; positions
    and sizes in floats of the shared temporary buffer."""

    bLength: int = 0
    sLength: int = 0
    hLength: int = 0
    originalHLength: int = 0
    inputXSize: int = 0
    meanVarSize: int = 0
    numberOfTmpBuf: int = 0
    meanTmpTensorPos: int = 0
    meanTmpTensorSize: int = 0
    varianceTmpTensorPos: int = 0
    varianceTmpTensorSize: int = 0
    tmpBufSize: int = 0
    oneTmpSize: int = 0
    firstTmpStartPos: int = 0
    secondTmpStartPos: int = 0
    thirdTmpStartPos: int = 0
    loopRound: int = 0
    inputRoundSize: int = 0
    inputTailSize: int = 0
    inputTailPos: int = 0
    meanVarRoundSize: int = 0
    meanVarTailSize: int = 0
    meanVarTailPos: int = 0
    bshCurLength: int = 0
    bsCurLength: int = 0
    lastDimValueBack: float = 0.0


def _buffers(typeSize: int, isReuseSource: bool) -> int:
    """Full-size float temporaries: 3, or 2 when float input may be overwritten."""
    return 2 if isReuseSource and typeSize == 4 else 3


def GetLayerNormMaxMinTmpSize(srcShape, typeSize, isReuseSource=False) -> tuple[int, int]:
    """``GetLayerNormMaxMinTmpSize(srcShape [B, S, H, originH], typeSize, isReuseSource,
    maxValue, minValue)`` -> ``(maxValue, minValue)`` bytes: n * 32-aligned(B*S*H*4) (max) or
    n * 32-aligned(H*4) (min, one row at a time), plus 2 * 32-aligned(B*S*4) for mean and
    variance, with n = 3 temporaries (2 for float with isReuseSource).

    Raises ValueError: not 4 positive dims, typeSize not 2/4."""
    b, s, h, _ = _dims("GetLayerNormMaxMinTmpSize", srcShape, 4)
    n = _buffers(type_size("GetLayerNormMaxMinTmpSize", typeSize), isReuseSource)
    mean_var = 2 * _align(b * s * 4, 32)
    return n * _align(b * s * h * 4, 32) + mean_var, n * _align(h * 4, 32) + mean_var


def GetLayerNormNDTilingInfo(srcShape, stackBufferSize, typeSize, isReuseSource=False,
                             tiling: LayerNormTiling | None = None) -> LayerNormTiling:
    """``GetLayerNormNDTilingInfo(srcShape [B, S, H, originH], stackBufferSize, typeSize,
    isReuseSource, tiling)``: the rows per chunk that ``stackBufferSize`` bytes hold (after
    the float mean/variance staging that half needs), and the chunk/tail positions.

    Raises ValueError: bad shape/typeSize, or a buffer that holds no row (the C++ leaves
    the tiling empty, which the kernel then rejects: "oneTmpSize must > 0")."""
    b, s, h, ori_h = _dims("GetLayerNormNDTilingInfo", srcShape, 4)
    ts = type_size("GetLayerNormNDTilingInfo", typeSize)
    t = tiling if tiling is not None else LayerNormTiling()
    size, mv = b * s * h, b * s
    n_buf = _buffers(ts, isReuseSource)
    mv_tmp = _align(mv, 8)
    mv_total = 0 if ts == 4 else 2 * mv_tmp
    total = int(stackBufferSize) // 4
    one = min((total - mv_total) // n_buf // h * h, size) if total > mv_total else 0
    if one <= 0:
        raise ValueError(f"GetLayerNormNDTilingInfo: stackBufferSize {stackBufferSize} B holds "
                         f"no row of H = {h} (GetLayerNormMaxMinTmpSize gives the minimum)")
    tail = size % one
    t.bLength, t.sLength, t.hLength, t.originalHLength = b, s, h, ori_h
    t.inputXSize, t.meanVarSize, t.numberOfTmpBuf = size, mv, n_buf
    t.meanTmpTensorPos, t.meanTmpTensorSize = 0, mv_tmp
    t.varianceTmpTensorPos, t.varianceTmpTensorSize = mv_tmp, mv_tmp
    t.tmpBufSize, t.oneTmpSize = total, one
    t.firstTmpStartPos = mv_total
    t.secondTmpStartPos, t.thirdTmpStartPos = mv_total + one, mv_total + 2 * one
    t.loopRound, t.inputRoundSize, t.inputTailSize = size // one, one, tail
    t.inputTailPos = size - tail
    t.meanVarRoundSize, t.meanVarTailSize = one // h, tail // h
    t.meanVarTailPos = mv - tail // h
    t.bshCurLength, t.bsCurLength = one, one // h
    t.lastDimValueBack = float(np.float32(1.0) / np.float32(ori_h))
    return t


def LayerNorm(output, outputMean, outputVariance, inputX, gamma, beta, *args,
              isReuseSource=False) -> None:
    """``LayerNorm<T, isReuseSource>(output, outputMean, outputVariance, inputX, gamma, beta
    [, sharedTmpBuffer], epsilon, tiling)`` over inputX [B, S, H].

    output = (x - mean) / sqrt(variance + epsilon) * gamma + beta, with mean and variance
    (population) over the originalHLength elements of each row, written to outputMean and
    outputVariance [B, S]; the H - originalHLength padding elements (zero-padded by the
    caller) take part in the sums.

    Args:
        output, inputX: LocalTensor<T> of B*S*H, T half or float, H * sizeof(T) 32 B aligned.
        outputMean, outputVariance: LocalTensor<T> of B*S.
        gamma, beta: LocalTensor<T> of H.
        sharedTmpBuffer: LocalTensor<uint8_t> of tiling.tmpBufSize floats; omitted, the 8 KiB
            Ascend C reserve is used.
        epsilon: T (converted to T, then float).
        tiling: LayerNormTiling from GetLayerNormNDTilingInfo. With isReuseSource (float),
            inputX serves as one temporary and is overwritten.

    Accuracy against float64 (tests/test_lib_softmax_norm.py): |error| <= half an ulp of T
    + 4 * 2^-23 * (|gamma| * (max|x| / sigma + |z|) + |beta|), z = (x - mean) / sigma
    (x - mean cancels in float); float mean within 4 * 2^-23 * max|x|, float variance
    within 4 * 2^-23 * (variance + mean^2); half mean and variance within 0.6 ulp.

    Raises:
        DtypeError: mixed or unsupported types. AlignmentError: H not 32 B aligned.
        UbError: a tensor smaller than the tiling's shape, a temporary buffer smaller than
        tmpBufSize. KernelError: an empty tiling (oneTmpSize 0); not A2/A3.
    """
    name = "LayerNorm"
    ctx = _core.current_core()
    _check_arch(ctx, name)
    tmp, epsilon, tiling = _split_args(name, args)
    dt = _vec.same_dtype(name, output, outputMean, outputVariance, inputX, gamma, beta)
    _vec.check_dtype(ctx, name, dt, (_F16, _F32))
    if tiling.oneTmpSize <= 0:
        raise KernelError(name, "tiling.oneTmpSize must be > 0 (GetLayerNormNDTilingInfo)",
                          pipe="PIPE_V")
    h = tiling.hLength
    if h * dt.itemsize % 32:
        raise AlignmentError(name, f"H = {h} x {dt.itemsize} B is not 32 B aligned",
                             pipe="PIPE_V")
    sizes = (("inputX", inputX, tiling.inputXSize), ("output", output, tiling.inputXSize),
             ("outputMean", outputMean, tiling.meanVarSize),
             ("outputVariance", outputVariance, tiling.meanVarSize), ("gamma", gamma, h),
             ("beta", beta, h))
    _check_sizes(name, sizes)
    stack = tmp_buffer(name, tmp, tiling.tmpBufSize * 4, "GetLayerNormNDTilingInfo (tmpBufSize)",
                 sizes[:4]).ReinterpretCast(_F32)
    reuse = isReuseSource and dt == _F32
    a = inputX if reuse else stack[tiling.firstTmpStartPos]
    b = stack[tiling.secondTmpStartPos if not reuse else tiling.firstTmpStartPos]
    c = stack[tiling.thirdTmpStartPos if not reuse else tiling.secondTmpStartPos]
    means, variances = (outputMean, outputVariance) if dt == _F32 else \
        (stack[tiling.meanTmpTensorPos], stack[tiling.varianceTmpTensorPos])
    eps = float(dt.type(epsilon))
    chunks = [(i * tiling.inputRoundSize, i * tiling.meanVarRoundSize, tiling.bsCurLength)
              for i in range(tiling.loopRound)]
    if tiling.inputTailSize:
        chunks.append((tiling.inputTailPos, tiling.meanVarTailPos, tiling.meanVarTailSize))
    for x_off, mv_off, rows in chunks:
        _layer_norm_rows(output[x_off], inputX[x_off], means[mv_off], variances[mv_off], gamma,
                         beta, (a, b, c), rows, h, tiling.lastDimValueBack, eps)
    if dt == _F16:
        for out, staged in ((outputMean, means), (outputVariance, variances)):
            _vec.Cast(out, staged, RoundMode.CAST_NONE, tiling.meanVarSize)


def _layer_norm_rows(out, x, mean, var, gamma, beta, temps, rows: int, h: int, inv_h: float,
                     eps: float) -> None:
    """One chunk of ``rows`` rows; ``temps`` are the library's float temporaries A, B, C."""
    a, b, c = temps
    n = rows * h
    xf = x
    if x.dtype == _F16:
        _vec.Cast(a, x, RoundMode.CAST_NONE, n)
        xf = a
    _vec.Muls(c, xf, inv_h, n)                       # mean = sum(x / H)
    _row_sums(mean, c, rows, h)
    broadcast_rows(c, mean, rows, 8)
    rowwise("sub", b, xf, c, rows, h, 8)             # b = x - mean
    _vec.Mul(c, b, b, n)
    _vec.Muls(a, c, inv_h, n)                        # variance = sum((x - mean)^2 / H)
    _row_sums(var, a, rows, h)
    broadcast_rows(a, var, rows, 8)
    rowwise("adds", c, None, a, rows, h, 8, scalar=eps)
    _vec.Sqrt(a, c, n)
    _vec.Duplicate(c, 1.0, 8)
    set_counter(n)                                    # a = 1 / sqrt(variance + eps)
    _vec.Div(a, c, a, MASK_PLACEHOLDER, 1, BinaryRepeatParams(1, 0, 1, 8, 0, 8), isSetMask=False)
    _repeat.SetMaskNorm()
    _vec.Mul(c, a, b, n)                             # c = (x - mean) * rstd
    if out.dtype == _F16:                            # gamma and beta cast to float first
        _vec.Cast(a, gamma, RoundMode.CAST_NONE, h)
        _rows_by(_vec.Mul, b, c, a, rows, h)
        _vec.Cast(c, beta, RoundMode.CAST_NONE, h)
        _rows_by(_vec.Add, a, b, c, rows, h)
        _vec.Cast(out, a, RoundMode.CAST_NONE, n)
    else:
        _rows_by(_vec.Mul, a, c, gamma, rows, h)
        _rows_by(_vec.Add, out, a, beta, rows, h)


def _rows_by(binary, dst, src0, vec, rows: int, h: int) -> None:
    """dst[i, :] = src0[i, :] op vec for each row: one instruction per row (the library's
    DuplicateMulImpl/DuplicateAddImpl)."""
    for i in range(rows):
        binary(dst[i * h], src0[i * h], vec, h)


def _row_sums(out, src, rows: int, h: int) -> None:
    """out[i] = sum of row i of src (folded in place): the 64-wide chunks added into the
    first 64 lanes in order, then a WholeReduceSum tree (LayerNormReduceSumImpl)."""
    _repeat.ResetMask()
    _repeat.SetMaskNorm()
    full, tail = divmod(h, _LANES)
    if h > _LANES:
        params = BinaryRepeatParams(1, 1, 1, 0, 8, 0)
        for i in range(rows):
            row = src[i * h]
            if full > 1:
                _vec.Add(row, row[_LANES], row, _LANES, full - 1, params)
            if tail:
                _vec.Add(row, row[full * _LANES], row, tail, 1, params)
    for r0, n in chunks(rows, MAX_REPEAT_TIMES):
        WholeReduceSum(out[r0], src[r0 * h], min(h, _LANES), n, 1, 1, h // 8)


# == RmsNorm ====================================================================================
@dataclass
class RmsNormTiling:
    """``RmsNormTiling`` (kernel_tiling.h) as GetRmsNormTilingInfo fills it."""

    bLength: int = 0
    sLength: int = 0
    hLength: int = 0
    originalHLength: int = 0
    reciprocalOfHLength: float = 0.0
    mainBshLength: int = 0
    mainBsLength: int = 0
    mainBsLengthAlign: int = 0
    loopRound: int = 0
    inputTailPos: int = 0
    tailBshLength: int = 0
    tailBsLength: int = 0


def _basic_block_ok(b: int, s: int, h: int) -> bool:
    """The basic-block shape rule: H % 64 == 0, B*S % 8 == 0, H < 2048."""
    return h % _LANES == 0 and b * s % 8 == 0 and h < 2048


def GetRmsNormMaxMinTmpSize(srcShape, typeSize, isBasicBlock=False) -> tuple[int, int]:
    """``GetRmsNormMaxMinTmpSize(srcShape [B, S, H], typeSize, maxValue, minValue,
    isBasicBlock)`` -> ``(maxValue, minValue)`` bytes: float (B*S*H + align8(B*S)) or half
    (2*B*S*H + align8(B*S)) for the max, (H + 8) / (2*H + 8) floats for the min.

    Raises ValueError where the C++ returns false (isBasicBlock with a shape outside the
    basic-block rule), or for a bad shape/typeSize."""
    b, s, h = _dims("GetRmsNormMaxMinTmpSize", srcShape, 3)
    coeff = 2 if type_size("GetRmsNormMaxMinTmpSize", typeSize) == 2 else 1
    if isBasicBlock and not _basic_block_ok(b, s, h):
        raise ValueError(f"GetRmsNormMaxMinTmpSize: [{b}, {s}, {h}] is not a basic block "
                         "(H % 64 == 0, B*S % 8 == 0, H < 2048)")
    bs_align = _align(b * s, 32 // int(typeSize))
    return (coeff * b * s * h + bs_align) * 4, (coeff * h + 8) * 4


def GetRmsNormTilingInfo(srcShape, originSrcShape, stackBufferByteSize, typeSize,
                         tiling: RmsNormTiling | None = None, isBasicBlock=False) -> RmsNormTiling:
    """``GetRmsNormTilingInfo(srcShape, originSrcShape, stackBufferByteSize, typeSize, tiling,
    isBasicBlock)``: the largest rows per chunk whose temporaries (H floats per row, twice
    for half, plus the 8-aligned row results) fit the buffer, at most 255 (a multiple of 8
    with isBasicBlock).

    Raises ValueError where the C++ returns false: shapes that are not [B, S, H] with the
    same B, S and originH <= H, H not 32 B aligned, a basic-block shape rule broken, or a
    buffer below GetRmsNormMaxMinTmpSize's minimum.
    """
    name = "GetRmsNormTilingInfo"
    b, s, h = _dims(name, srcShape, 3)
    ob, os_, ori_h = _dims(name, originSrcShape, 3)
    ts = type_size(name, typeSize)
    if (b, s) != (ob, os_) or ori_h > h or h * ts % 32:
        raise ValueError(f"{name}: srcShape {[b, s, h]} and originSrcShape {[ob, os_, ori_h]} "
                         "must share B and S, with originH <= H and H * typeSize 32 B aligned")
    _, minimum = GetRmsNormMaxMinTmpSize([b, s, h], ts, isBasicBlock)
    if stackBufferByteSize < minimum:
        raise ValueError(f"{name}: stackBufferByteSize {stackBufferByteSize} B is below the "
                         f"minimum {minimum} B")
    coeff = 1 if ts == 4 else 2
    total = int(stackBufferByteSize) // 4

    def fits(rows):
        return total >= rows * h * coeff + _align(rows, 8)

    rows = max(1, total // (h * coeff + 1))
    while rows > 1 and not fits(rows):
        rows -= 1
    while fits(rows + 1):
        rows += 1
    rows = min(rows * h, b * s * h) // h
    if isBasicBlock:
        rows = rows if rows < 8 else rows // 8 * 8
    else:
        rows = min(rows, MAX_REPEAT_TIMES)
    t = tiling if tiling is not None else RmsNormTiling()
    size = b * s * h
    main = rows * h
    tail = size % main
    t.bLength, t.sLength, t.hLength, t.originalHLength = b, s, h, ori_h
    t.reciprocalOfHLength = float(np.float32(1.0 / ori_h))
    t.mainBshLength, t.mainBsLength, t.mainBsLengthAlign = main, rows, _align(rows, 8)
    t.loopRound, t.tailBshLength = size // main, tail
    t.inputTailPos, t.tailBsLength = size - tail, tail // h
    return t


def RmsNorm(dstLocal, srcLocal, gammaLocal, *args, isBasicBlock=False) -> None:
    """``RmsNorm<T, isBasicBlock>(dstLocal, srcLocal, gammaLocal[, sharedTmpBuffer], epsilon,
    tiling)`` over srcLocal [B, S, H]: dst = x / sqrt(mean(x^2) + epsilon) * gamma, the mean
    over the originalHLength elements of each row (the padding, zero-filled by the caller,
    is summed too), computed in float.

    Args:
        dstLocal, srcLocal: LocalTensor<T> of B*S*H, T half or float, H * sizeof(T) 32 B
            aligned. gammaLocal: LocalTensor<T> of H.
        sharedTmpBuffer: LocalTensor<uint8_t> of at least (mainBsLengthAlign + mainBshLength
            (x2 for half)) floats, not overlapping the operands; omitted, the 8 KiB Ascend C
            reserve is used.
        epsilon: T. tiling: RmsNormTiling from GetRmsNormTilingInfo.

    Accuracy against float64 (tests/test_lib_softmax_norm.py): float within 8 ulp
    (relative 8 * 2^-23), half within 0.6 ulp.

    Raises:
        DtypeError: mixed or unsupported types. AlignmentError: H not 32 B aligned.
        UbError: a tensor smaller than the tiling's shape; a temporary buffer too small.
        KernelError: isBasicBlock with a shape outside the basic-block rule; not A2/A3.
    """
    name = "RmsNorm"
    ctx = _core.current_core()
    _check_arch(ctx, name)
    tmp, epsilon, tiling = _split_args(name, args)
    dt = _vec.same_dtype(name, dstLocal, srcLocal, gammaLocal)
    _vec.check_dtype(ctx, name, dt, (_F16, _F32))
    h, ori_h = tiling.hLength, tiling.originalHLength
    if h == 0 or h * dt.itemsize % 32:
        raise AlignmentError(name, f"H = {h} x {dt.itemsize} B is not 32 B aligned",
                             pipe="PIPE_V")
    if isBasicBlock and not _basic_block_ok(tiling.bLength, tiling.sLength, h):
        raise KernelError(name, "isBasicBlock needs H % 64 == 0, B*S % 8 == 0 and H < 2048 "
                          "(RmsNorm page, isBasicBlock)", pipe="PIPE_V")
    size = tiling.bLength * tiling.sLength * h
    sizes = (("srcLocal", srcLocal, size), ("dstLocal", dstLocal, size), ("gammaLocal",
             gammaLocal, h))
    _check_sizes(name, sizes)
    need = tiling.mainBsLengthAlign + tiling.mainBshLength * (2 if dt == _F16 else 1)
    work = tmp_buffer(name, tmp, need * 4, "GetRmsNormTilingInfo (mainBsLengthAlign + "
                "mainBshLength)", sizes[:2]).ReinterpretCast(_F32)
    reduced = work
    squares = work[tiling.mainBsLengthAlign]
    src_f32 = work[tiling.mainBsLengthAlign + tiling.mainBshLength] if dt == _F16 else None
    eps = float(dt.type(epsilon))
    chunks = [(i * tiling.mainBshLength, tiling.mainBsLength) for i in range(tiling.loopRound)]
    if tiling.tailBshLength:
        chunks.append((tiling.inputTailPos, tiling.tailBsLength))
    for off, rows in chunks:
        _rms_norm_rows(dstLocal[off], srcLocal[off], gammaLocal, (reduced, squares, src_f32),
                       rows, h, ori_h, tiling.reciprocalOfHLength, eps)
    _repeat.SetMaskNorm()
    _repeat.ResetMask()


def _rms_norm_rows(dst, src, gamma, temps, rows: int, h: int, ori_h: int, inv_h: float,
                   eps: float) -> None:
    """One chunk of ``rows`` rows: temps are the row results, x^2 and (half) float x."""
    reduced, squares, src_f32 = temps
    n = rows * h
    xf = src
    if src.dtype == _F16:
        _vec.Cast(src_f32, src, RoundMode.CAST_NONE, n)
        xf = src_f32
    _vec.Mul(squares, xf, xf, n)
    for i in range(rows):
        _row_sum_passes(reduced[i], squares[i * h], ori_h)
    _vec.Muls(reduced, reduced, inv_h, rows)
    _vec.Adds(reduced, reduced, eps, rows)
    _vec.Ln(reduced, reduced, rows)                  # rsqrt as exp(-0.5 * ln(.))
    _vec.Muls(reduced, reduced, -0.5, rows)
    _vec.Exp(reduced, reduced, rows)
    handoff(_core.current_core(), HardEvent.V_S)
    for i in range(rows):                            # the scalar unit reads each row's factor
        _vec.Muls(squares[i * h], xf[i * h], reduced.GetValue(i), h)
    if src.dtype == _F16:
        _vec.Cast(src_f32, gamma, RoundMode.CAST_NONE, h)
        _rows_by_gamma(squares, squares, src_f32, rows, h)
        _vec.Cast(dst, squares, RoundMode.CAST_NONE, n)
    else:
        _rows_by_gamma(dst, squares, gamma, rows, h)


def _row_sum_passes(out, row, count: int) -> None:
    """Sum ``count`` elements of row: Counter-mode RepeatReduceSum over 64-element repeats,
    in place, until one value is left (written to ``out``)."""
    while count > 1:
        target = out if count <= _LANES else row
        set_counter(count)
        library_repeat_reduce_sum(target, row, MASK_PLACEHOLDER, 1, 1, 1, 8, isSetMask=False)
        count = -(-count // _LANES)
    _repeat.SetMaskNorm()


def _rows_by_gamma(dst, src0, gamma, rows: int, h: int) -> None:
    """dst = src0 * gamma row by row (RmsNormLastAxisBrcMul): one Counter-mode Mul over all
    rows for H == 64; a masked Mul repeated over the rows for H < 64; else one Mul per row
    when H/64 >= rows, or one per 64-column block over all rows plus a masked tail."""
    loop, tail = divmod(h, _LANES)
    rep = h // 8
    if h == _LANES:
        set_counter(rows * h)
        _vec.Mul(dst, src0, gamma, MASK_PLACEHOLDER, 1, BinaryRepeatParams(1, 1, 1, 8, 8, 0),
                 isSetMask=False)
    elif h < _LANES:
        _vec.Mul(dst, src0, gamma, [(1 << h) - 1, 0], rows, BinaryRepeatParams(1, 1, 1, rep,
                                                                                rep, 0))
    elif loop >= rows:
        _rows_by(_vec.Mul, dst, src0, gamma, rows, h)
    else:
        set_counter(rows * _LANES)
        for c in range(loop):
            _vec.Mul(dst[c * _LANES], src0[c * _LANES], gamma[c * _LANES], MASK_PLACEHOLDER, 1,
                     BinaryRepeatParams(1, 1, 1, rep, rep, 0), isSetMask=False)
        _repeat.SetMaskNorm()
        if tail:
            off = loop * _LANES
            _vec.Mul(dst[off], src0[off], gamma[off], [(1 << tail) - 1, 0], rows,
                     BinaryRepeatParams(1, 1, 1, rep, rep, 0))
    _repeat.SetMaskNorm()
