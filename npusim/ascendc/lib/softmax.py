"""Ascend C's high-level SoftMax (ND, the [m, k] form with per-row max and sum) and its
host tiling, built from the basic instructions in the order the library issues them on
Atlas A2/A3 (NpuArch 2201).

Sources: hiascend "SoftMax" (atlasascendc_api_07_0753, CANN 8.5) and "SoftMax/SimpleSoftMax
Tiling" (atlasascendc_api_07_0762); the instruction sequence, workspace layout and tiling
formulas of asc-devkit ``impl/adv_api/detail/activation/softmax/membase/{v220,common}/`` and
``impl/adv_api/tiling/activation/softmax_tiling.cpp`` (facts re-expressed, not copied).

Per split of ``tiling.splitM`` rows (then one of ``tiling.tailM`` rows), all on PIPE_V:

1. (half input) Cast to float in the workspace;
2. row max: k < 64 — WholeReduceMax (ORDER_ONLY_VALUE), one repeat per row; k >= 64 — the
   row's 64-wide chunks folded elementwise into 64 lanes per row (Copy, or Max over chunk
   pairs; for k >= 512 a BlockReduceMax of the first 512 columns, then Max accumulation),
   the tail chunk under a mask, then BlockReduceMax twice (64 -> 8 -> 1 per row; one row:
   a WholeReduceMax repeated over the row's output block);
3. broadcast: Brcb puts each row's value in a 32 B block (two Brcb with block stride 2 for
   the 16-float blocks of the half form); rows past the last multiple of 8 are read by the
   scalar unit and written with Duplicate; this block is ``maxTensor`` (half: Cast with
   CAST_ROUND, the library's FLOAT2HALF_ROUND_MODE);
4. Sub of the row's max block (src1 block stride 0), one instruction per 8-float column
   block over all rows when k < 192, else one per row; Exp over the whole split;
5. row sum as in 2 with Add/BlockReduceSum/WholeReduceSum, broadcast into ``sumTensor``;
6. Div by the sum block as in 4; (half) Cast back with CAST_ROUND.

Numerics follow: float arithmetic rounds per instruction; a half input is computed in
float (steps 1 and 6 cast). Sums are 64 sequential lane accumulators folded by binary
trees (BlockReduceSum), max is exact.

Not modelled: the NZ format (``isDataFormatNZ``), the basic-block instruction sequence
(``isBasicBlock=True`` checks the documented shape rules, then runs the sequence above [R]),
the overloads without sumTensor/maxTensor, and SoftmaxConfig's constant shapes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import repeat as _repeat
from npusim.ascendc import vector as _vec
from npusim.ascendc.datacopy import Copy, CopyRepeatParams
from npusim.ascendc.gather import Brcb, BrcbRepeatParams
from npusim.ascendc.lib._common import chunks, shape_size, tmp_buffer, type_size
from npusim.ascendc.reduce import (BlockReduceMax, BlockReduceSum, ReduceOrder, WholeReduceMax,
                                   WholeReduceSum, handoff, set_counter)
from npusim.ascendc.repeat import MASK_PLACEHOLDER, BinaryRepeatParams, UnaryRepeatParams
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.types import MAX_REPEAT_TIMES, HardEvent, RoundMode
from npusim.errors import AlignmentError, DtypeError, KernelError, UbError

__all__ = ["SoftMaxTiling", "SoftMaxShapeInfo", "SoftMax", "SoftMaxTilingFunc",
           "GetSoftMaxMaxTmpSize", "GetSoftMaxMinTmpSize"]

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_LANES = 64                 # float lanes of one repeat (SOFTMAX_BASICBLOCK_UNIT)
_ROWS_PER_BRCB = 8          # one Brcb repeat: 8 values -> 8 blocks
_BIG_K = 512                # from this k the library block-reduces the first 512 columns
_ROW_WISE_K = 192           # SOFTMAX_SUB_DIV_ROW_COLUMN_SIZE: Sub/Div per row from here
_FLOAT_TO_HALF = RoundMode.CAST_ROUND


# -- host side ------------------------------------------------------------------------------
@dataclass
class SoftMaxTiling:
    """``SoftMaxTiling`` (kernel_tiling.h), the fields SoftMaxTilingFunc fills."""

    srcM: int = 0
    srcK: int = 0
    srcSize: int = 0
    outMaxM: int = 0
    outMaxK: int = 0
    outMaxSize: int = 0
    splitM: int = 0
    splitK: int = 0
    splitSize: int = 0
    reduceM: int = 0
    reduceK: int = 0
    reduceSize: int = 0
    rangeM: int = 0
    tailM: int = 0
    tailSplitSize: int = 0
    tailReduceSize: int = 0


@dataclass
class SoftMaxShapeInfo:
    """``SoftMaxShapeInfo {srcM, srcK, oriSrcM, oriSrcK}``: srcK is the (32 B aligned) row
    pitch, oriSrcK the columns that take part in the reductions."""

    srcM: int = 0
    srcK: int = 0
    oriSrcM: int = 0
    oriSrcK: int = 0


def _last_axis(name: str, srcShape, dataTypeSize) -> tuple[int, int, int]:
    """(m, k, elements per 32 B block of the max/sum type), with the host checks."""
    dims = [int(d) for d in (srcShape.GetDims() if hasattr(srcShape, "GetDims") else srcShape)]
    size = shape_size(name, dims)
    ts = type_size(name, dataTypeSize)
    k = dims[-1]
    if k * ts % 32:
        raise ValueError(f"{name}: the last axis ({k} x {ts} B) must be 32 B aligned "
                         "(SoftMax/SimpleSoftMax Tiling)")
    return size // k, k, 32 // ts


def GetSoftMaxMaxTmpSize(srcShape, dataTypeSize, isReuseSource=False) -> int:
    """Bytes of workspace for one pass over all rows: ``srcM * (32/dataTypeSize + srcK +
    64) * 4`` (A2/A3). ``dataTypeSize`` is the size of maxTensor/sumTensor's type.

    Raises ValueError: empty shape, dataTypeSize not 2/4, last axis not 32 B aligned."""
    m, k, epb = _last_axis("GetSoftMaxMaxTmpSize", srcShape, dataTypeSize)
    return m * (epb + k + _LANES) * 4


def GetSoftMaxMinTmpSize(srcShape, dataTypeSize, isReuseSource=False) -> int:
    """Bytes of workspace for one row at a time: ``(32/dataTypeSize + srcK + 64) * 4``."""
    _, k, epb = _last_axis("GetSoftMaxMinTmpSize", srcShape, dataTypeSize)
    return (epb + k + _LANES) * 4


def SoftMaxTilingFunc(srcShape, dataTypeSize, localWorkSpaceSize,
                      softmaxTiling: SoftMaxTiling | None = None) -> SoftMaxTiling:
    """``SoftMaxTilingFunc(srcShape, dataTypeSize, localWorkSpaceSize, softmaxTiling)``: the
    rows per split ``splitM`` that the workspace (bytes) holds, rounded down to a multiple
    of 8 when splitting, and for basic-block shapes (srcM % 8 == 0, srcK % 64 == 0) to a
    divisor of srcM with splitM * srcK < 16384. Fills and returns ``softmaxTiling``.

    Raises ValueError as :func:`GetSoftMaxMaxTmpSize`, or a workspace below one row.
    """
    m, k, epb = _last_axis("SoftMaxTilingFunc", srcShape, dataTypeSize)
    per_row = epb + k + _LANES
    base = min(int(localWorkSpaceSize) // 4 // per_row, m)
    if base == 0:
        raise ValueError(f"SoftMaxTilingFunc: localWorkSpaceSize {localWorkSpaceSize} B holds "
                         f"no row (GetSoftMaxMinTmpSize gives {per_row * 4} B)")
    if base < m and base > 8:
        base = base // 8 * 8
    if base > 8 and m % 8 == 0 and k % _LANES == 0:      # basic block: a divisor of m
        base = base // 8 * 8
        while m % base:
            base -= 8
        while base * k >= _LANES * 256:
            base //= 2
    t = softmaxTiling if softmaxTiling is not None else SoftMaxTiling()
    tail = m % base
    t.srcM, t.srcK, t.srcSize = m, k, m * k
    t.outMaxM, t.outMaxK, t.outMaxSize = m, epb, m * epb
    t.splitM, t.splitK, t.splitSize = base, k, base * k
    t.reduceM, t.reduceK, t.reduceSize = base, epb, base * epb
    t.rangeM, t.tailM = m // base, tail
    t.tailSplitSize, t.tailReduceSize = tail * k, tail * epb
    return t


# -- row reductions and row-wise arithmetic (float) ----------------------------------------
_R = MAX_REPEAT_TIMES


def _fold_chunks(op: str, acc, src, rows: int, src_k: int, k: int) -> None:
    """acc[i, :64] = the 64-wide column chunks of row i folded with ``op`` (Add/Max)."""
    binary = _vec.Add if op == "sum" else _vec.Max
    block = BlockReduceSum if op == "sum" else BlockReduceMax
    full, tail = divmod(k, _LANES)
    rep = src_k // 8
    if k >= _BIG_K:           # the first 512 columns as block results, then the rest
        for i in range(rows):
            block(acc[i * _LANES], src[i * src_k], 8, _LANES, 1, 1, 8)
        for i in range(rows):
            for c0, n in chunks(full - 8, _R):
                binary(acc[i * _LANES], src[i * src_k + _BIG_K + c0 * _LANES], acc[i * _LANES],
                       _LANES, n, BinaryRepeatParams(1, 1, 1, 0, 8, 0))
    elif k >= 2 * _LANES:     # chunk 0 op chunk 1, then the next chunks one by one
        for r0, n in chunks(rows, _R):
            a, s = acc[r0 * _LANES], src[r0 * src_k]
            binary(a, s, src[r0 * src_k + _LANES], _LANES, n,
                   BinaryRepeatParams(1, 1, 1, 8, rep, rep))
            for c in range(2, full):
                binary(a, a, src[r0 * src_k + c * _LANES], _LANES, n,
                       BinaryRepeatParams(1, 1, 1, 8, 8, rep))
    else:                     # one full chunk: copied
        for r0, n in chunks(rows, _R):
            Copy(acc[r0 * _LANES], src[r0 * src_k], _LANES, n, CopyRepeatParams(1, 1, 8, rep))
    if tail:
        for r0, n in chunks(rows, _R):
            a = acc[r0 * _LANES]
            binary(a, a, src[r0 * src_k + full * _LANES], tail, n,
                   BinaryRepeatParams(1, 1, 1, 8, 8, rep))


def reduce_rows(op: str, out, src, scratch, rows: int, src_k: int, k: int, out_k: int) -> None:
    """out[i, 0:out_k] = op over src[i, 0:k] for each of ``rows`` rows (float).

    ``op`` is "sum" or "max"; ``src_k`` the row pitch (elements, a multiple of 8); ``out_k``
    8 or 16 floats per row (one or two 32 B blocks); ``scratch`` a float tensor of at least
    ``rows * 64`` elements. The library's SoftMax reduction (module docstring, step 2).
    """
    whole = (lambda d, s, m, n, dr, sb, sr: WholeReduceSum(d, s, m, n, dr, sb, sr)) \
        if op == "sum" else \
        (lambda d, s, m, n, dr, sb, sr: WholeReduceMax(d, s, m, n, dr, sb, sr,
                                                       ReduceOrder.ORDER_ONLY_VALUE))
    block = BlockReduceSum if op == "sum" else BlockReduceMax
    if k < _LANES:
        for r0, n in chunks(rows, _R):
            whole(scratch[r0], src[r0 * src_k], k, n, 1, 1, src_k // 8)
    else:
        _fold_chunks(op, scratch, src, rows, src_k, k)
        if rows == 1:          # one row: its output block written by repeating the reduction
            whole(out, scratch, _LANES, out_k, 1, 1, 0)
            return
        for count in (rows * _LANES, rows * 8):          # 64 -> 8 -> 1 per row, in place
            set_counter(count)
            block(scratch, scratch, 1, MASK_PLACEHOLDER, 1, 1, 8, isSetMask=False)
        _repeat.SetMaskNorm()
        _repeat.ResetMask()
    broadcast_rows(out, scratch, rows, out_k)


def broadcast_rows(out, values, rows: int, out_k: int) -> None:
    """out[i, 0:out_k] = values[i]: Brcb for each group of 8 rows (two interleaved Brcb for
    16-float rows), the scalar unit and Duplicate for the rows after the last group."""
    full, tail = divmod(rows, _ROWS_PER_BRCB)
    for g0, n in chunks(full, _R):
        first = g0 * _ROWS_PER_BRCB
        if out_k == 16:
            for half in (0, 8):
                Brcb(out[first * out_k + half], values[first], n, BrcbRepeatParams(2, 16))
        else:
            Brcb(out[first * out_k], values[first], n, BrcbRepeatParams(1, 8))
    if tail:
        ctx = _core.current_core()
        handoff(ctx, HardEvent.V_S)
        first = full * _ROWS_PER_BRCB
        scalars = [values.GetValue(first + j) for j in range(tail)]
        handoff(ctx, HardEvent.S_V)
        for j, value in enumerate(scalars):
            _vec.Duplicate(out[(first + j) * out_k], value, out_k, 1, 1, 8)


def rowwise(op: str, dst, src0, blocks, rows: int, src_k: int, block_k: int,
            scalar=None) -> None:
    """dst[i, :] = src0[i, :] op blocks[i] (op "sub", "div" or "mul"), or dst[i, :] =
    blocks[i] + scalar (op "adds", src0 unused), over ``src_k`` columns, where ``blocks``
    holds each row's value as a ``block_k``-float block read with block stride 0: one
    instruction per 8-float column block over all rows when src_k < 192, else one per row
    (the library's GenericSubNDImpl/GenericDivNDImpl)."""
    if src_k < _ROW_WISE_K:
        set_counter(rows * 8)
        bs = src_k // 8
        for j in range(bs):
            _row_op(op, dst[j * 8], src0[j * 8] if src0 is not None else None, blocks,
                    (bs, bs, block_k // 8, src_k, src_k, block_k), scalar)
    else:
        set_counter(src_k)
        for i in range(rows):
            _row_op(op, dst[i * src_k], src0[i * src_k] if src0 is not None else None,
                    blocks[i * block_k], (1, 1, 0, 8, 8, 0), scalar)
    _repeat.SetMaskNorm()
    _repeat.ResetMask()


def _row_op(op, dst, src0, blocks, strides, scalar) -> None:
    """One Counter-mode instruction of :func:`rowwise`; ``strides`` are (dst, src0, blocks)
    block strides then repeat strides."""
    if op == "adds":
        params = UnaryRepeatParams(strides[0], strides[2], strides[3], strides[5])
        _vec.Adds(dst, blocks, scalar, MASK_PLACEHOLDER, 1, params, isSetMask=False)
        return
    binary = {"sub": _vec.Sub, "div": _vec.Div, "mul": _vec.Mul}[op]
    binary(dst, src0, blocks, MASK_PLACEHOLDER, 1, BinaryRepeatParams(*strides),
           isSetMask=False)


# -- SoftMax -----------------------------------------------------------------------------------
def _parse(args):
    """(sharedTmpBuffer or None, tiling, shape info or None) from the overloads' arguments."""
    args = list(args)
    tmp = args.pop(0) if args and isinstance(args[0], LocalTensor) else None
    if not args or not isinstance(args[0], SoftMaxTiling):
        raise TypeError("SoftMax: expected (dst, sum, max, src[, sharedTmpBuffer], tiling"
                        "[, softmaxShapeInfo])")
    tiling = args.pop(0)
    shape = args.pop(0) if args else None
    if isinstance(shape, (tuple, list)):
        shape = SoftMaxShapeInfo(*shape)
    return tmp, tiling, shape


def _check_types(ctx, dst, red, src) -> None:
    """(T, T, T, T) with T half/float, or half dst/src with float sum/max (A2/A3)."""
    name = "SoftMax"
    if ctx.soc.npu_arch != "2201":
        raise KernelError(name, f"the simulator models the Atlas A2/A3 (NpuArch 2201) build of "
                          f"SoftMax, not {ctx.soc.soc_version}", pipe="PIPE_V")
    same = _vec.same_dtype(name, dst, src)
    _vec.check_dtype(ctx, name, same, (_F16, _F32))
    _vec.same_dtype(name, *red)                           # sumTensor and maxTensor agree
    if red[0].dtype != same and not (same == _F16 and red[0].dtype == _F32):
        raise DtypeError(name, f"sumTensor/maxTensor {red[0].dtype.name} with {same.name} "
                         "data: they are T, or float with half data", pipe="PIPE_V")


def _resolve_shape(tiling: SoftMaxTiling, shape: SoftMaxShapeInfo | None,
                   src=None) -> SoftMaxShapeInfo:
    """The [srcM, srcK] SoftMax works on: the SoftMaxShapeInfo's when its srcM and srcK are
    non-zero; else, as the library does (softmax_base_impl.h SoftMaxImpl), the source
    tensor's ShapeInfo (last dimension K, the others M; the original shape likewise) when
    one was set (SetShapeInfo); else the tiling's [srcM, srcK]."""
    if shape is None or shape.srcM == 0 or shape.srcK == 0:
        info = src.GetShapeInfo() if src is not None else None
        if info is not None and info.last_axis_nd()[1]:
            (m, k), (ori_m, ori_k) = info.last_axis_nd(), info.last_axis_nd(original=True)
            return SoftMaxShapeInfo(m, k, ori_m or m, ori_k or k)
        return SoftMaxShapeInfo(tiling.srcM, tiling.srcK, tiling.srcM, tiling.srcK)
    return SoftMaxShapeInfo(shape.srcM, shape.srcK, shape.oriSrcM or shape.srcM,
                            shape.oriSrcK or shape.srcK)


def SoftMax(dstTensor, sumTensor, maxTensor, srcTensor, *args, isReuseSource=False,
            isBasicBlock=False, isDataFormatNZ=False) -> None:
    """``SoftMax<T, isReuseSource, isBasicBlock, isDataFormatNZ>(dstTensor, sumTensor,
    maxTensor, srcTensor[, sharedTmpBuffer], tiling[, softmaxShapeInfo])``.

    dst[i, j] = exp(src[i, j] - max_i) / sum_i over the [srcM, srcK] rows, with max_i and
    sum_i over the first oriSrcK columns (the padding columns are computed too, as the page
    says). maxTensor/sumTensor receive each row's value repeated over one 32 B block: [srcM,
    8] float or [srcM, 16] half.

    Args:
        dstTensor, srcTensor: LocalTensor<T> of srcM * srcK elements, T half or float (may
            be the same tensor).
        sumTensor, maxTensor: LocalTensor<T> (or float with half data) of srcM * 32 B.
        sharedTmpBuffer: LocalTensor<uint8_t> of at least GetSoftMaxMinTmpSize bytes, not
            overlapping the operands; omitted, the 8 KiB Ascend C reserve is used.
        tiling: SoftMaxTiling from SoftMaxTilingFunc (recomputed for this shape and buffer
            when its srcM/srcK/reduceK disagree: SoftmaxConfig.isCheckTiling).
        softmaxShapeInfo: SoftMaxShapeInfo or (srcM, srcK, oriSrcM, oriSrcK); default the
            tiling's shape.

    Accuracy against float64 (tests/test_lib_softmax_norm.py): float dst within
    y * 2^-23 * (|x - max| + 8) + 2^-126 (x - max rounds once, then Exp, the sum and Div);
    half dst within 0.6 ulp (computed in float, rounded once); max exact; float sum within
    2 ulp, half sum within 0.6 ulp.

    Raises:
        DtypeError: types other than the two combinations above; bf16.
        AlignmentError: srcK * sizeof(T) not a multiple of 32 B.
        UbError: a tensor too small for the shape; sharedTmpBuffer too small or overlapping.
        KernelError: NZ format; isBasicBlock with a shape outside the basic-block rules
            (srcK % 64 == 0, 256/sizeof(T) <= srcK < 2048, srcM % 8 == 0); not A2/A3.
    """
    name = "SoftMax"
    ctx = _core.current_core()
    tmp, tiling, shape = _parse(args)
    _check_types(ctx, dstTensor, (sumTensor, maxTensor), srcTensor)
    if isDataFormatNZ:
        raise KernelError(name, "the NZ data format is not modelled by the simulator",
                          pipe="PIPE_V")
    dt, red_dt = srcTensor.dtype, sumTensor.dtype
    shape = _resolve_shape(tiling, shape, srcTensor)
    m, k = shape.srcM, shape.srcK
    if k * dt.itemsize % 32 or not 0 < shape.oriSrcK <= k or not 0 < shape.oriSrcM <= m:
        raise AlignmentError(name, f"srcK {k} x {dt.itemsize} B must be 32 B aligned and hold "
                             f"oriSrcK {shape.oriSrcK} (SoftMaxShapeInfo)", pipe="PIPE_V")
    if isBasicBlock and (k % 64 or not 256 // dt.itemsize <= k < 2048 or m % 8):
        raise KernelError(name, f"isBasicBlock needs srcK % 64 == 0, {256 // dt.itemsize} <= "
                          f"srcK < 2048 and srcM % 8 == 0, not [{m}, {k}] (SoftMax page, "
                          "isBasicBlock)", pipe="PIPE_V")
    red_k = 32 // red_dt.itemsize
    for what, t, n in (("srcTensor", srcTensor, m * k), ("dstTensor", dstTensor, m * k),
                       ("sumTensor", sumTensor, m * red_k), ("maxTensor", maxTensor, m * red_k)):
        if t.GetSize() < n:
            raise UbError(name, f"{what} holds {t.GetSize()} elements; [{m}, {k}] needs {n}",
                          pipe="PIPE_V")
    operands = (("srcTensor", srcTensor, m * k), ("dstTensor", dstTensor, m * k),
                ("sumTensor", sumTensor, m * red_k), ("maxTensor", maxTensor, m * red_k))
    tmp = tmp_buffer(name, tmp, GetSoftMaxMinTmpSize([m, k], red_dt.itemsize), "GetSoftMaxMinTmpSize",
               operands)
    if (tiling.srcM, tiling.srcK, tiling.reduceK) != (m, k, red_k):
        tiling = SoftMaxTilingFunc([m, k], red_dt.itemsize, tmp.GetSize())
    work = tmp.ReinterpretCast(_F32)
    _repeat.SetMaskNorm()
    _repeat.ResetMask()
    splits = [(i * tiling.splitM, tiling.splitM) for i in range(tiling.rangeM)]
    if tiling.tailM:
        splits.append((tiling.rangeM * tiling.splitM, tiling.tailM))
    split = _split_float if dt == _F32 else _split_half
    for row0, rows in splits:
        split(dstTensor[row0 * k], sumTensor[row0 * red_k], maxTensor[row0 * red_k],
              srcTensor[row0 * k], work, tiling, rows, k, shape.oriSrcK)


def _split_float(dst, sum_t, max_t, src, work, tiling, rows, k, ori_k) -> None:
    """One split, float data: the workspace is only the reduction scratch."""
    n = rows * k
    reduce_rows("max", max_t, src, work, rows, k, ori_k, 8)
    rowwise("sub", dst, src, max_t, rows, k, 8)
    _vec.Exp(dst, dst, n)
    reduce_rows("sum", sum_t, dst, work, rows, k, ori_k, 8)
    rowwise("div", dst, dst, sum_t, rows, k, 8)


def _split_half(dst, sum_t, max_t, src, work, tiling, rows, k, ori_k) -> None:
    """One split, half data, computed in float in the workspace: [splitSize] the data, then
    (half max/sum) [reduceSize] the [rows, 16] float blocks, then the reduction scratch.
    Float max/sum tensors receive the [rows, 8] blocks directly."""
    n = rows * k
    data = work
    _vec.Cast(data, src, RoundMode.CAST_NONE, n)
    if sum_t.dtype == _F32:
        scratch = work[tiling.splitSize]
        reduce_rows("max", max_t, data, scratch, rows, k, ori_k, 8)
        rowwise("sub", data, data, max_t, rows, k, 8)
        _vec.Exp(data, data, n)
        reduce_rows("sum", sum_t, data, scratch, rows, k, ori_k, 8)
        rowwise("div", data, data, sum_t, rows, k, 8)
    else:
        blocks, scratch = work[tiling.splitSize], work[tiling.splitSize + tiling.reduceSize]
        reduce_rows("max", blocks, data, scratch, rows, k, ori_k, 16)
        _vec.Cast(max_t, blocks, _FLOAT_TO_HALF, rows * 16)
        rowwise("sub", data, data, blocks, rows, k, 16)
        _vec.Exp(data, data, n)
        reduce_rows("sum", blocks, data, scratch, rows, k, ori_k, 16)
        _vec.Cast(sum_t, blocks, _FLOAT_TO_HALF, rows * 16)
        rowwise("div", data, data, blocks, rows, k, 16)
    _vec.Cast(dst, data, _FLOAT_TO_HALF, n)
