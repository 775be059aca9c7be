"""Reduction instructions (归约计算) and the library reductions built from them.

Instructions (one PIPE_V instruction each, level-0 form only — Ascend C has no "first n
elements" form of them):

* ``WholeReduceSum/Max/Min`` (vcadd/vcmax/vcmin): one result per repeat;
* ``RepeatReduceSum`` (vcadd, continuous mask only; A2, not A3);
* ``BlockReduceSum/Max/Min`` (vcgadd/vcgmax/vcgmin): one result per 32 B block;
* ``PairReduceSum`` (vcpadd): one result per pair of adjacent elements.

Library routines (software-emulated: "软仿指令", no rate of their own; they cost the
instructions they issue), level 2 ``ReduceSum/Max/Min(dst, src, sharedTmpBuffer, count)``
and their level-0 form ``(..., mask, repeatTime, srcRepStride)``.

Sources: asc-devkit ``docs/api/context/WholeReduceSum.md``, ``WholeReduceMax.md``,
``BlockReduceSum.md``; hiascend pages atlasascendc_api_07_0075..0086 (ReduceMax, ReduceMin,
ReduceSum, WholeReduce*, BlockReduce*, PairReduceSum, RepeatReduceSum), CANN 8.5;
``Memory矢量计算接口边界值汇总.md`` tables 33-41 (inf/NaN results); the A2 (dav_c220)
instruction sequence of the library routines is the one the asc-devkit implementation
issues (facts only, re-expressed here).

Numerics:

* Sums add **pairwise as a binary tree** (lane 0+1, 2+3, ... then the partial sums pairwise,
  as the WholeReduceSum/BlockReduceSum pages draw it); lanes that the mask switches off
  count as 0. Every addition rounds to the operand type (half rounds per step). Overflow
  gives inf and NaN propagates (INF/NAN mode: boundary-value table 38, "全为65504 → inf");
  with ``SetSaturationFlag(True)`` each half step saturates (inf → ±65504, NaN → 0), which
  reproduces the table's saturation column (127 ones and a NaN → 126.0) and the pages'
  "大于65504时结果保存为65504" example.
* Max/Min propagate NaN (tables 36/37/39/40); the index of Max/Min is the first lane that
  holds the result ("如果存在多个最大值，返回第一个最大值的索引"; a NaN result gives the first
  NaN). In saturation mode a half result is saturated once at the end [R: the table's
  saturation rows for NaN mixed with inf are not reproduced].
* A NaN result is the canonical positive quiet NaN of its type (0x7FC00000, 0x7E00),
  whatever the host's adds or the inputs' NaNs carried (:mod:`npusim.ascendc.nans`; an
  ``inf + -inf`` is negative on x86-64).
* Lanes of a group that is entirely masked off leave their destination unchanged (the
  PairReduceSum page for A2/A3; assumed for BlockReduce*).

Cost (docs/reference/hardware.md §2.1, from the appendix Vector指令理论性能汇总.md 表6):
ReduceRepeat (Whole*/RepeatReduceSum) 128/7 (half) and 64/7 (float) elements per cycle,
i.e. 7 cycles per repeat; ReduceDataBlock (BlockReduce*) 128/7 and 64; ReducePairElem
(PairReduceSum) 128 and 64; a repeat costs its 256 B whatever the mask.

Shared rules (the two forms, 32 B UB alignment, address overlap, the cost terms —
head, repeats, UB bank conflicts — and the common errors): the
:mod:`npusim.ascendc.vector` module docstring. Specific to this family: the instructions
take only the level-0 form, with the strides as separate arguments (no RepeatParams);
the source is 32 B aligned but the destination only to its result's size (stated per
instruction); a destination overlapping the source runs repeat by repeat, as the unit
issues them.
"""
from __future__ import annotations

import enum
from fractions import Fraction

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import timing_only as _timing_only
from npusim.ascendc import nans as _nans
from npusim.ascendc import repeat as _repeat
from npusim.ascendc.sync import SetFlag, WaitFlag
from npusim.ascendc.types import ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE, MAX_REPEAT_TIMES, HardEvent
from npusim.ascendc.vector import check_dtype, issue_vector, same_dtype
from npusim.errors import AlignmentError, KernelError, LimitError, UbError

__all__ = ["ReduceOrder", "WholeReduceSum", "WholeReduceMax", "WholeReduceMin",
           "RepeatReduceSum", "BlockReduceSum", "BlockReduceMax", "BlockReduceMin",
           "PairReduceSum", "ReduceSum", "ReduceMax", "ReduceMin"]

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_RAW = {2: np.dtype(np.uint16), 4: np.dtype(np.uint32)}
_HALF_MAX = 65504.0

# elements per cycle (docs/reference/hardware.md §2.1); Fractions keep 7 cycles a repeat exact
RATE_REDUCE_REPEAT = {2: Fraction(128, 7), 4: Fraction(64, 7)}
RATE_REDUCE_BLOCK = {2: Fraction(128, 7), 4: 64}
RATE_REDUCE_PAIR = {2: 128, 4: 64}


class ReduceOrder(enum.IntEnum):
    """Where WholeReduceMax/Min put the value and the index of each result."""

    ORDER_VALUE_INDEX = 0
    ORDER_INDEX_VALUE = 1
    ORDER_ONLY_VALUE = 2
    ORDER_ONLY_INDEX = 3


# -- checks ---------------------------------------------------------------------------------
def _check_types(ctx, name: str, dst, src, a3_unsupported: bool = False) -> np.dtype:
    """half/float on A2/A3/310P, half only on the first-generation 910 (the pages' tables)."""
    dt = same_dtype(name, dst, src)
    soc = ctx.soc.short_soc_version
    if a3_unsupported and soc == "Ascend910_93":
        raise KernelError(name, f"{name} is not supported on Atlas A3 ({ctx.soc.soc_version}); "
                          "use WholeReduceSum (atlasascendc_api_07_0086)", pipe="PIPE_V")
    check_dtype(ctx, name, dt, (_F16,) if soc == "Ascend910" else (_F16, _F32))
    return dt


def _check_align(name: str, t, nbytes: int, what: str) -> None:
    if t.offset % nbytes:
        raise AlignmentError(name, f"{what} at UB 0x{t.offset:x} is not {nbytes} B aligned "
                             f"({name} page, 参数说明)", pipe="PIPE_V")


# -- the arithmetic of one group ------------------------------------------------------------
def _saturate(x: np.ndarray) -> np.ndarray:
    """Saturation mode for half: NaN -> 0, inf -> ±65504 (SetSaturationFlag)."""
    return np.nan_to_num(x, nan=0.0, posinf=_HALF_MAX, neginf=-_HALF_MAX)


def tree_sum(x: np.ndarray, saturate: bool = False) -> np.ndarray:
    """Sum over the last axis (a power of two long) as a binary tree of adjacent pairs,
    rounding each addition to ``x``'s dtype; with ``saturate`` each step saturates."""
    while x.shape[-1] > 1:
        x = x[..., 0::2] + x[..., 1::2]
        if saturate:
            x = _saturate(x)
    return x[..., 0]


def _reduce_groups(vals, active, group: int, op: str, saturate: bool):
    """Reduce (R, L) lanes in groups of ``group`` adjacent lanes: (values, index, written),
    each (R, L // group); ``index`` is the lane within the group (Max/Min) or None."""
    r, lanes = vals.shape
    shape = (r, lanes // group, group)
    x, on = vals.reshape(shape), active.reshape(shape)
    written = on.any(axis=-1)
    if op == "sum":
        with np.errstate(all="ignore"):
            total = tree_sum(np.where(on, x, x.dtype.type(0)), saturate)
        return _nans.canonical(total), None, written
    fill = x.dtype.type(-np.inf if op == "max" else np.inf)
    x = np.where(on, x, fill)
    with np.errstate(all="ignore"):
        val = (np.max if op == "max" else np.min)(x, axis=-1)
    hit = on & ((x == val[..., None]) | (np.isnan(x) & np.isnan(val)[..., None]))
    index = np.argmax(hit, axis=-1)
    if saturate:
        val = _saturate(val)
    return _nans.canonical(val), index, written


def _layout(values, index, order, itemsize: int) -> np.ndarray:
    """The raw bits of each result as stored: (R, G * width) of the raw integer type.

    The index is stored in the destination's type (uint16/uint32 bits); ORDER_ONLY_INDEX
    stores it as uint32 on A2/A3 (WholeReduceMax.md 约束说明).
    """
    raw = _RAW[itemsize]
    v = values.view(raw) if values.dtype.itemsize == itemsize else values.astype(raw)
    if order is None or order == ReduceOrder.ORDER_ONLY_VALUE:
        return v
    idx = index.astype(np.uint32)
    if order == ReduceOrder.ORDER_ONLY_INDEX:
        if itemsize == 4:
            return idx
        return np.stack([idx & 0xFFFF, idx >> 16], axis=-1).astype(raw).reshape(v.shape[0], -1)
    pair = (v, idx.astype(raw)) if order == ReduceOrder.ORDER_VALUE_INDEX else (idx.astype(raw), v)
    return np.stack(pair, axis=-1).reshape(v.shape[0], -1)


def _width(order, itemsize: int) -> int:
    """Elements one result occupies in dst."""
    if order is None or order == ReduceOrder.ORDER_ONLY_VALUE:
        return 1
    if order == ReduceOrder.ORDER_ONLY_INDEX:
        return 4 // itemsize
    return 2


# -- one reduction instruction ----------------------------------------------------------------
def _reduce_instruction(name: str, op: str, dst, src, mask, repeat_time, dst_rep_stride,
                        src_blk_stride, src_rep_stride, group, rate_table, order=None,
                        is_set_mask=True, dst_align=None, a3_unsupported=False) -> None:
    """Run one level-0 reduction: each repeat's lanes reduce in groups of ``group`` (``None``:
    the whole repeat) and result ``g`` of repeat ``r`` goes to dst element
    ``(r * dstRepStride + g) * width`` (dstRepStride in units of one repeat's results).

    A destination that overlaps the source is processed repeat by repeat, as the unit
    issues them, so a repeat reads what an earlier one wrote (the pages allow dst and src
    to share a tensor "需要注意...不能覆盖未参与计算的源操作数").
    """
    ctx = _core.current_core()
    dt = _check_types(ctx, name, dst, src, a3_unsupported)
    isz = dt.itemsize
    _repeat.check_strides(name, ((1, 0), (src_blk_stride, src_rep_stride)))
    if not 0 <= int(dst_rep_stride) <= 0xFFFF:
        raise LimitError(name, f"dstRepStride = {dst_rep_stride} is outside [0, 65535]",
                         pipe="PIPE_V")
    lanes = ONE_REPEAT_BYTE_SIZE // isz
    group = group or lanes
    width = _width(order, isz)
    per_repeat = lanes // group * width                     # dst elements of one repeat
    _check_align(name, dst, dst_align or min(ONE_BLK_SIZE, per_repeat * isz), "dst")
    call = _repeat.resolve(ctx, name, lanes, mask, repeat_time, is_set_mask)
    s_idx = _repeat.lane_index(isz, call, src_blk_stride, src_rep_stride)
    d_idx = (np.arange(call.repeat)[:, None] * (int(dst_rep_stride) * per_repeat)
             + np.arange(per_repeat)[None, :])
    raw_dst = dst.ReinterpretCast(_RAW[isz])
    saturate = ctx.saturation and dt == _F16
    # a lockstep group reduces its members' stacked repeats at once: each repeat is reduced
    # on its own, so the members' repeats are simply more rows
    ctx.batch_ok = ctx.is_group
    try:
        for rows in _repeat_batches(call, dst, d_idx, src, s_idx):
            sub = _repeat.Level0(rows.stop - rows.start, lanes, call.active[rows])
            if _timing_only.ACTIVE:
                _skip_repeats(ctx, name, raw_dst, d_idx[rows], src, s_idx[rows], sub, group,
                              width, per_repeat)
                continue
            vals = _repeat.read(src, s_idx[rows], sub, name)         # ([G,] repeat, lanes)
            lead = vals.shape[:-2]
            active = np.broadcast_to(sub.active, vals.shape).reshape(-1, lanes)
            value, index, written = _reduce_groups(vals.reshape(-1, lanes), active, group, op,
                                                   saturate)
            out = _layout(value, index, order, isz).reshape(*lead, sub.repeat, per_repeat)
            written = written[:sub.repeat]         # the mask's: the same for every member
            out_call = _repeat.Level0(sub.repeat, per_repeat, np.repeat(written, width, axis=1))
            if out_call.active.any():
                _repeat.write(raw_dst, d_idx[rows], out_call, out, name)
    finally:
        ctx.batch_ok = False
    # the source's strides decide which UB bank groups a repeat reads (ubbank.py)
    issue_vector(ctx, name, call.count, rate_table[isz], None, (src,), repeats=call.repeat,
                 lanes=lanes, tracked=True, strides=((1, 8), (src_blk_stride, src_rep_stride)))


def _skip_repeats(ctx, name, raw_dst, d_idx, src, s_idx, sub, group, width, per_repeat):
    """A reduction's repeats in a timing-only launch: the bounds and the checker's reads
    and writes of a functional run (the results written where the mask leaves a group a
    lane), no arithmetic; the results are flagged not computed."""
    _repeat.lanes_view(src, s_idx, sub, name)
    _repeat._track(ctx, src, s_idx, sub, name, write=False)
    written = sub.active.reshape(sub.repeat, -1, group).any(axis=-1)
    out_call = _repeat.Level0(sub.repeat, per_repeat, np.repeat(written, width, axis=1))
    if out_call.active.any():
        _repeat.lanes_view(raw_dst, d_idx, out_call, name)
        _repeat._track(ctx, raw_dst, d_idx, out_call, name, write=True)
        _timing_only.flag_index(ctx, raw_dst, d_idx[out_call.active])


def _repeat_batches(call, dst, d_idx, src, s_idx):
    """All repeats at once, or one at a time when dst bytes overlap src bytes."""
    if call.repeat == 0:
        return []
    act = call.active
    s_addr = src.offset + s_idx[act] * src.dtype.itemsize
    d_lo = dst.offset + int(d_idx.min()) * dst.dtype.itemsize
    d_hi = dst.offset + (int(d_idx.max()) + 1) * dst.dtype.itemsize
    if s_addr.size == 0 or int(s_addr.max()) + src.dtype.itemsize <= d_lo or s_addr.min() >= d_hi:
        return [slice(0, call.repeat)]
    return [slice(r, r + 1) for r in range(call.repeat)]


# -- the instructions -----------------------------------------------------------------------
def WholeReduceSum(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride, *,
                   isSetMask=True) -> None:
    """``WholeReduceSum<T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride,
    srcRepStride)``: dst[r * dstRepStride] = sum of the active lanes of repeat r.

    Args:
        dst: half/float LocalTensor (A2/A3/310P; half only on the first-generation 910),
            2 B (half) / 4 B (float) aligned; dstRepStride in elements.
        src: same dtype, 32 B aligned; srcBlkStride/srcRepStride in 32 B blocks.
        mask: continuous count or ``[low, high]`` bit mask; ``MASK_PLACEHOLDER`` with
            ``isSetMask=False``. repeatTime ∈ [0, 255].

    Binary tree of adjacent lanes within a repeat, rounded per step (WholeReduceSum.md
    约束说明). 7 cycles per repeat (ReduceRepeat 128/7, 64/7).

    Raises:
        DtypeError, AlignmentError, LimitError (repeatTime, strides, mask), UbError.
    """
    _reduce_instruction("WholeReduceSum", "sum", dst, src, mask, repeatTime, dstRepStride,
                        srcBlkStride, srcRepStride, None, RATE_REDUCE_REPEAT,
                        is_set_mask=isSetMask)


def WholeReduceMax(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                   order=ReduceOrder.ORDER_VALUE_INDEX, *, isSetMask=True) -> None:
    """``WholeReduceMax<T, isSetMask>(dst, src, mask, repeatTime, dstRepStride, srcBlkStride,
    srcRepStride, order)``: the maximum of each repeat and its lane index.

    ``order`` (ReduceOrder): [value, index] (default), [index, value], [value] or [index]; the
    index is the lane within the repeat, stored as the bits of a uint16 (half) / uint32
    (float) in dst's type (read it with ``ReinterpretCast(uint16_t/uint32_t)``), and as a
    uint32 (two halves) with ORDER_ONLY_INDEX. dstRepStride is in units of one result
    (2 elements with value and index). dst must be 4 B (half) / 8 B (float) aligned.
    Ties give the first lane; NaN propagates (WholeReduceMax.md, atlasascendc_api_07_0079).
    Other arguments, cost (7 cycles per repeat) and source alignment: as
    :func:`WholeReduceSum`.

    Raises:
        DtypeError, AlignmentError (src 32 B; dst 4 B / 8 B), LimitError (repeatTime,
        strides, mask), UbError.
    """
    _reduce_instruction("WholeReduceMax", "max", dst, src, mask, repeatTime, dstRepStride,
                        srcBlkStride, srcRepStride, None, RATE_REDUCE_REPEAT,
                        order=ReduceOrder(order), is_set_mask=isSetMask,
                        dst_align=2 * dst.dtype.itemsize)


def WholeReduceMin(dst, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride,
                   order=ReduceOrder.ORDER_VALUE_INDEX, *, isSetMask=True) -> None:
    """``WholeReduceMin``: as :func:`WholeReduceMax` with the minimum
    (atlasascendc_api_07_0080)."""
    _reduce_instruction("WholeReduceMin", "min", dst, src, mask, repeatTime, dstRepStride,
                        srcBlkStride, srcRepStride, None, RATE_REDUCE_REPEAT,
                        order=ReduceOrder(order), is_set_mask=isSetMask,
                        dst_align=2 * dst.dtype.itemsize)


def RepeatReduceSum(dst, src, repeatTime, mask, dstBlkStride, srcBlkStride, dstRepStride,
                    srcRepStride, *, isSetMask=True) -> None:
    """``RepeatReduceSum<T, isSetMask>(dst, src, repeatTime, mask, dstBlkStride, srcBlkStride,
    dstRepStride, srcRepStride)``: WholeReduceSum with a continuous mask only;
    ``dstBlkStride`` is ignored. Atlas A2 (and 310P, 910), not Atlas A3
    (atlasascendc_api_07_0086).

    Raises:
        KernelError: on Atlas A3. DtypeError: a dtype other than half/float.
        LimitError: a bit mask (only the continuous form exists).
    """
    if isinstance(mask, (list, tuple, np.ndarray)):
        raise LimitError("RepeatReduceSum", "mask must be a count (no bit mask form; "
                         "atlasascendc_api_07_0086)", pipe="PIPE_V")
    _reduce_instruction("RepeatReduceSum", "sum", dst, src, mask, repeatTime, dstRepStride,
                        srcBlkStride, srcRepStride, None, RATE_REDUCE_REPEAT,
                        is_set_mask=isSetMask, a3_unsupported=True)


def library_repeat_reduce_sum(dst, src, mask, repeatTime, dstRepStride, srcBlkStride,
                              srcRepStride, *, isSetMask=True) -> None:
    """The vcadd instruction as library code issues it (RmsNorm's RepeatReduceSum): the same
    instruction and record as :func:`RepeatReduceSum`, without the API's Atlas A3
    restriction (the library's RmsNorm runs on A3)."""
    _reduce_instruction("RepeatReduceSum", "sum", dst, src, mask, repeatTime, dstRepStride,
                        srcBlkStride, srcRepStride, None, RATE_REDUCE_REPEAT,
                        is_set_mask=isSetMask)


def _block_reduce(name, op, dst, src, repeatTime, mask, dstRepStride, srcBlkStride,
                  srcRepStride, isSetMask):
    group = ONE_BLK_SIZE // dst.dtype.itemsize
    _reduce_instruction(name, op, dst, src, mask, repeatTime, dstRepStride, srcBlkStride,
                        srcRepStride, group, RATE_REDUCE_BLOCK, is_set_mask=isSetMask)


def BlockReduceSum(dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride, *,
                   isSetMask=True) -> None:
    """``BlockReduceSum<T, isSetMask>(dst, src, repeatTime, mask, dstRepStride, srcBlkStride,
    srcRepStride)``: one sum per 32 B block, 8 results per repeat; dst[(r * dstRepStride) * 8
    + b] = sum of block b of repeat r (dstRepStride in units of 8 elements: 16 B half, 32 B
    float; dst 16 B / 32 B aligned). Binary tree within a block (atlasascendc_api_07_0084);
    a block with no active lane keeps its dst element. ReduceDataBlock rate 128/7, 64.
    """
    _block_reduce("BlockReduceSum", "sum", dst, src, repeatTime, mask, dstRepStride,
                  srcBlkStride, srcRepStride, isSetMask)


def BlockReduceMax(dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride, *,
                   isSetMask=True) -> None:
    """``BlockReduceMax``: the maximum of each 32 B block (no index); as
    :func:`BlockReduceSum` (atlasascendc_api_07_0082)."""
    _block_reduce("BlockReduceMax", "max", dst, src, repeatTime, mask, dstRepStride,
                  srcBlkStride, srcRepStride, isSetMask)


def BlockReduceMin(dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride, *,
                   isSetMask=True) -> None:
    """``BlockReduceMin``: the minimum of each 32 B block; as :func:`BlockReduceSum`
    (atlasascendc_api_07_0083)."""
    _block_reduce("BlockReduceMin", "min", dst, src, repeatTime, mask, dstRepStride,
                  srcBlkStride, srcRepStride, isSetMask)


def PairReduceSum(dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride, *,
                  isSetMask=True) -> None:
    """``PairReduceSum<T, isSetMask>(dst, src, repeatTime, mask, dstRepStride, srcBlkStride,
    srcRepStride)``: dst[r * dstRepStride * L/2 + i] = lane 2i + lane 2i+1 of repeat r
    (L lanes per repeat; dstRepStride in units of 128 B; dst 32 B aligned). A pair with
    neither lane active keeps its dst element on A2/A3; a single active lane is the sum
    (the other counts as 0). ReducePairElem rate 128 (half), 64 (float)
    (atlasascendc_api_07_0085).
    """
    _reduce_instruction("PairReduceSum", "sum", dst, src, mask, repeatTime, dstRepStride,
                        srcBlkStride, srcRepStride, 2, RATE_REDUCE_PAIR, is_set_mask=isSetMask)


# -- library routines: ReduceSum / ReduceMax / ReduceMin ---------------------------------------
def handoff(ctx, event: HardEvent) -> None:
    """SetFlag + WaitFlag with an eventID from the TPipe, as the library does between its
    vector instructions and its scalar reads/writes."""
    event_id = ctx.pipe.FetchEventID(event) if ctx.pipe is not None else 0
    SetFlag(event, event_id)
    WaitFlag(event, event_id)


def _scalar_done(ctx) -> None:
    """After the library's scalar stores: S->V and S->MTE3 hand-offs."""
    handoff(ctx, HardEvent.S_V)
    handoff(ctx, HardEvent.S_MTE3)


def _align_elems(n: int, itemsize: int) -> int:
    epb = ONE_BLK_SIZE // itemsize
    return -(-n // epb) * epb


def _split_args(name: str, args, with_index: bool):
    """(level, count-or-(mask, repeatTime, srcRepStride), calIndex) from the trailing args."""
    if len(args) in (1, 2) and (with_index or len(args) == 1):
        return 2, int(args[0]), bool(args[1]) if len(args) > 1 else None
    if len(args) in (3, 4) and (with_index or len(args) == 3):
        return 0, (args[0], int(args[1]), int(args[2])), bool(args[3]) if len(args) > 3 else None
    raise LimitError(name, f"takes (count{', calIndex' if with_index else ''}) or (mask, "
                     f"repeatTime, srcRepStride{', calIndex' if with_index else ''})",
                     pipe="PIPE_V")


def ReduceSum(dst, src, sharedTmpBuffer, *args, isSetMask=True) -> None:
    """Sum of all the input data: ``ReduceSum<T>(dst, src, sharedTmpBuffer, count)`` or
    ``ReduceSum<T>(dst, src, sharedTmpBuffer, mask, repeatTime, srcRepStride)``.

    dst[0] receives the sum (dst 2 B / 4 B aligned; src and sharedTmpBuffer 32 B aligned;
    half/float). As the library runs on Atlas A2/A3 (ReduceSum page, 相加方式):

    * count form ("方式二"): one Counter-mode vcadd whose per-repeat tree sums accumulate in
      order (((r0 + r1) + r2) ...), rounded per step; the result is stored by the scalar
      unit (V->S hand-off). sharedTmpBuffer is not touched.
    * level-0 form ("方式一"): repeats tree-summed into sharedTmpBuffer (repeatTime may
      exceed 255: the library issues 255 at a time), the repeat results tree-summed again
      by a Counter-mode vcadd, then one last vcadd (or a scalar copy) into dst.
      sharedTmpBuffer needs ceil(repeatTime / elementsPerBlock) blocks.

    Raises:
        UbError: sharedTmpBuffer below the page's minimum; LimitError: more repeat results
        than two passes reduce (level 0).
    """
    ctx = _core.current_core()
    level, what, _ = _split_args("ReduceSum", args, with_index=False)
    dt = _check_types(ctx, "ReduceSum", dst, src)
    _check_align("ReduceSum", dst, dt.itemsize, "dst")
    lanes = ONE_REPEAT_BYTE_SIZE // dt.itemsize
    if level == 2:
        _reduce_sum_count(ctx, dst, src, what, lanes, isSetMask)
        return
    mask, repeat, src_rep = what
    if repeat <= 0:
        return
    _check_tmp("ReduceSum", sharedTmpBuffer, _align_elems(repeat, dt.itemsize))
    if repeat == 1:
        WholeReduceSum(sharedTmpBuffer, src, mask, 1, 1, 1, src_rep)
        _copy_scalars(ctx, dst, sharedTmpBuffer, 1)
        return
    _first_pass(WholeReduceSum, sharedTmpBuffer, src, mask, repeat, src_rep, 1)
    if -(-repeat // lanes) > lanes:
        raise LimitError("ReduceSum", f"repeatTime {repeat} gives {-(-repeat // lanes)} second-"
                         f"pass results, more than one repeat of {lanes} the library's last "
                         "pass sums", pipe="PIPE_V")
    _counter_pass(ctx, WholeReduceSum, sharedTmpBuffer, sharedTmpBuffer, repeat)
    second = -(-repeat // lanes)
    if second == 1:
        _copy_scalars(ctx, dst, sharedTmpBuffer, 1)
    else:
        WholeReduceSum(dst, sharedTmpBuffer, second, 1, 1, 1, 8)


def _reduce_sum_count(ctx, dst, src, count: int, lanes: int, is_set_mask: bool) -> None:
    """The count form: one vcadd in Counter mode, accumulating repeat results in order."""
    name = "ReduceSum"
    if count <= 0:
        return
    if is_set_mask:
        set_counter(count)
    call = _repeat.resolve(ctx, name, lanes, _repeat.MASK_PLACEHOLDER, 1, False)
    s_idx = _repeat.lane_index(src.dtype.itemsize, call, 1, 8)
    vals = _repeat.read(src, s_idx, call, name)
    saturate = ctx.saturation and src.dtype == _F16
    per_repeat, _, _ = _reduce_groups(vals, call.active, lanes, "sum", saturate)
    acc = per_repeat[:, 0][0]
    with np.errstate(all="ignore"):
        for part in per_repeat[1:, 0]:      # the accumulator adds repeat results in order
            acc = acc + part
            if saturate:
                acc = _saturate(acc)
    acc = _nans.canonical_scalar(acc)
    issue_vector(ctx, name, call.count, RATE_REDUCE_REPEAT[src.dtype.itemsize], None, (src,),
                 repeats=call.repeat, lanes=lanes, tracked=True)
    handoff(ctx, HardEvent.V_S)
    dst.SetValue(0, acc)                     # get_acc_val() stored by the scalar unit
    _scalar_done(ctx)
    if is_set_mask:
        _repeat.SetMaskNorm()
        _repeat.ResetMask()


def _check_tmp(name: str, tmp, need: int) -> None:
    if tmp.length < need:
        raise UbError(name, f"sharedTmpBuffer holds {tmp.length} elements; the computation "
                      f"needs at least {need} ({name} page, sharedTmpBuffer 最小所需空间)",
                      pipe="PIPE_V")


def _first_pass(instr, tmp, src, mask, repeat: int, src_rep: int, width: int, **kw) -> None:
    """Reduce ``repeat`` repeats of src into consecutive results of tmp, 255 at a time."""
    step = src_rep * ONE_BLK_SIZE // src.dtype.itemsize
    for start in range(0, repeat, MAX_REPEAT_TIMES):
        n = min(MAX_REPEAT_TIMES, repeat - start)
        instr(tmp[start * width], src[start * step], mask, n, 1, 1, src_rep, **kw)


def set_counter(count: int) -> None:
    """SetMaskCount + SetVectorMask(0, count): the next call reduces ``count`` elements."""
    _repeat.SetMaskCount()
    _repeat.SetVectorMask(0, count, mode=_repeat.MaskMode.COUNTER)


def _counter_pass(ctx, instr, dst, src, count: int, **kw) -> None:
    """One Counter-mode reduction of ``count`` elements of src (repeat results to dst);
    the library leaves Normal mode on afterwards."""
    set_counter(count)
    instr(dst, src, _repeat.MASK_PLACEHOLDER, 1, 1, 1, 8, isSetMask=False, **kw)
    _repeat.SetMaskNorm()


def _copy_scalars(ctx, dst, src, n: int) -> None:
    """dst[i] = src[i] for i < n through the scalar unit, after a V->S hand-off."""
    handoff(ctx, HardEvent.V_S)
    for i in range(n):
        dst.SetValue(i, src.GetValue(i))
    _scalar_done(ctx)


_PAIR_MASK = 0x5555555555555555          # every other lane: the values of (value, index) pairs


def _pairs_mask(pairs: int, itemsize: int):
    """The bit mask that selects the values of ``pairs`` (value, index) pairs."""
    bits = sum(1 << (2 * i) for i in range(pairs))
    return [bits & ((1 << 64) - 1), (bits >> 64) if itemsize == 2 else 0]


def _extreme(name: str, op: str, dst, src, tmp, args) -> None:
    """ReduceMax/ReduceMin: the library's passes of WholeReduceMax/Min over (value, index)
    pairs, then the scalar unit stores the value (and rebuilds the index)."""
    ctx = _core.current_core()
    level, what, cal_index = _split_args(name, args, with_index=True)
    cal_index = bool(cal_index)
    dt = _check_types(ctx, name, dst, src)
    isz, lanes = dt.itemsize, ONE_REPEAT_BYTE_SIZE // dt.itemsize
    _check_align(name, dst, 2 * isz, "dst")
    instr = WholeReduceMax if op == "max" else WholeReduceMin
    if level == 2:
        count = what
        if count <= 0:
            return
        if cal_index and dt == _F16 and count > 65536:
            raise LimitError(name, f"count {count}: a half index cannot exceed 65535 "
                             f"({name} page 约束说明)", pipe="PIPE_V")
        repeat, tail = divmod(count, lanes)
        body = lanes if repeat else count
        _check_tmp(name, tmp, _extreme_tmp(max(repeat, 1), isz, cal_index))
        _extreme_passes(ctx, instr, dst, src, tmp, body, max(repeat, 1), 8, cal_index)
        if repeat and tail:
            _extreme_tail(ctx, instr, dst, src, tmp, repeat * lanes, tail, cal_index)
        return
    mask, repeat, src_rep = what
    if repeat <= 0:
        return
    if cal_index and dt == _F16 and (repeat - 1) * src_rep * 16 + lanes > 65536:
        raise LimitError(name, f"repeatTime {repeat} x srcRepStride {src_rep}: a half index "
                         f"cannot exceed 65535 ({name} page 约束说明)", pipe="PIPE_V")
    _check_tmp(name, tmp, _extreme_tmp(repeat, isz, cal_index))
    _extreme_passes(ctx, instr, dst, src, tmp, mask, repeat, src_rep, cal_index)


def _extreme_tmp(repeat: int, itemsize: int, cal_index: bool) -> int:
    """Minimum sharedTmpBuffer elements (ReduceMax page, 计算最小所需空间的算法)."""
    lanes = ONE_REPEAT_BYTE_SIZE // itemsize
    out1 = 2 * repeat
    if not cal_index:
        return _align_elems(out1, itemsize)
    out2 = -(-out1 // lanes) * 2
    out3 = -(-out2 // lanes) * 2
    return _align_elems(out1, itemsize) + _align_elems(out2, itemsize) + \
        _align_elems(out3, itemsize)


def _extreme_passes(ctx, instr, dst, src, tmp, mask, repeat: int, src_rep: int,
                    cal_index: bool) -> None:
    """The passes of one ReduceMax/Min over ``repeat`` repeats of src (value -> dst[0] and,
    with ``cal_index``, the element index -> dst[1] as the bits of an integer)."""
    isz = src.dtype.itemsize
    lanes = ONE_REPEAT_BYTE_SIZE // isz
    if repeat == 1 and cal_index:                   # one repeat: straight into dst
        instr(dst, src, mask, 1, 1, 1, src_rep)
        return
    _first_pass(instr, tmp, src, mask, repeat, src_rep, 2)
    starts, n = [0], 2 * repeat                     # level start offsets in tmp, pair count*2
    while n > 2:                                    # reduce the pairs' values, level by level
        src_pos = starts[-1]
        out = _align_elems(src_pos + n, isz) if cal_index else 0
        full, left = divmod(n, lanes)
        if full:
            instr(tmp[out], tmp[src_pos], [_PAIR_MASK, _PAIR_MASK if isz == 2 else 0], full,
                  1, 1, 8)
        if left:
            instr(tmp[out + 2 * full], tmp[src_pos + full * lanes], _pairs_mask(left // 2, isz),
                  1, 1, 1, 8)
        starts.append(out)
        n = 2 * (full + (1 if left else 0))
    handoff(ctx, HardEvent.V_S)
    dst.SetValue(0, tmp.GetValue(starts[-1]))
    if cal_index:
        dst.ReinterpretCast(_RAW[isz]).SetValue(1, _rebuild_index(tmp, starts, src_rep, isz))
    _scalar_done(ctx)


def _rebuild_index(tmp, starts, src_rep: int, itemsize: int) -> int:
    """Walk the levels back: the lane found at each level names the pair of the level
    below; level 1 pairs are src repeats (index = repeat * srcRepStride * epb + lane)."""
    raw = tmp.ReinterpretCast(_RAW[itemsize])
    lanes = ONE_REPEAT_BYTE_SIZE // itemsize
    pair = 0
    lost = False        # timing-only: a lane not computed (the walk reads as many values)
    for level in range(len(starts) - 1, 0, -1):     # levels above the first
        lane = raw.GetValue(starts[level] + 2 * pair + 1)
        lost = lost or lane is _timing_only.UNCOMPUTED
        pair = (pair * lanes + (0 if lost else int(lane))) // 2
    lane = raw.GetValue(starts[0] + 2 * pair + 1)
    if lost or lane is _timing_only.UNCOMPUTED:
        return _timing_only.UNCOMPUTED
    return (pair * src_rep * ONE_BLK_SIZE // itemsize + int(lane)) & (
        0xFFFF if itemsize == 2 else 0xFFFFFFFF)


def _extreme_tail(ctx, instr, dst, src, tmp, offset: int, tail: int, cal_index: bool) -> None:
    """The count form's last partial repeat: reduce it alone, then compare the body's and
    the tail's results with one more 2-lane instruction (the library's ReduceTailCompute)."""
    raw_dst = dst.ReinterpretCast(_RAW[src.dtype.itemsize])
    handoff(ctx, HardEvent.V_S)
    body_value = dst.GetValue(0)
    body_index = raw_dst.GetValue(1) if cal_index else None
    _extreme_passes(ctx, instr, dst, src[offset], tmp, tail, 1, 8, cal_index)
    handoff(ctx, HardEvent.V_S)
    tail_value = dst.GetValue(0)
    tail_index = raw_dst.GetValue(1) if cal_index else 0
    if tail_index is not _timing_only.UNCOMPUTED:
        tail_index = int(tail_index)
    tmp.SetValue(0, body_value)
    tmp.SetValue(1, tail_value)
    handoff(ctx, HardEvent.S_V)
    _extreme_passes(ctx, instr, dst, tmp, tmp, 2, 1, 8, cal_index)
    if cal_index:
        handoff(ctx, HardEvent.V_S)
        which = raw_dst.GetValue(1)
        if which is _timing_only.UNCOMPUTED:      # timing-only: the index is not computed
            raw_dst.SetValue(1, which)
        else:
            raw_dst.SetValue(1, offset + tail_index if int(which) == 1 else body_index)
        _scalar_done(ctx)


def ReduceMax(dst, src, sharedTmpBuffer, *args, calIndex=False) -> None:
    """The maximum of all the input data and (``calIndex``) its index:
    ``ReduceMax<T>(dst, src, sharedTmpBuffer, count, calIndex=false)`` or
    ``ReduceMax<T>(dst, src, sharedTmpBuffer, mask, repeatTime, srcRepStride, calIndex)``.

    dst[0] = the maximum; with calIndex, dst[1] holds the index of its first occurrence as
    the bits of a uint16 (half) / uint32 (float): read it with ``dst.ReinterpretCast(
    uint16_t/uint32_t).GetValue(1)``. In the level-0 form the index counts elements from
    src's start (repeat * srcRepStride * elementsPerBlock + lane). half/float; dst 4 B /
    8 B aligned; repeatTime may exceed 255. Built as the library does on A2: WholeReduceMax
    passes over (value, index) pairs in sharedTmpBuffer (sized as the page's formula), a
    scalar read-back of the indices; the count form reduces its partial last repeat apart
    and compares the two results (ReduceMax page, atlasascendc_api_07_0075).

    Raises:
        UbError: sharedTmpBuffer smaller than the page's minimum. LimitError: a half index
        beyond 65535. DtypeError, AlignmentError as the instructions.
    """
    if len(args) in (2, 4) and calIndex is False:
        args, calIndex = args[:-1], args[-1]
    _extreme("ReduceMax", "max", dst, src, sharedTmpBuffer, (*args, calIndex))


def ReduceMin(dst, src, sharedTmpBuffer, *args, calIndex=False) -> None:
    """The minimum and (``calIndex``) its index; as :func:`ReduceMax`
    (atlasascendc_api_07_0076)."""
    if len(args) in (2, 4) and calIndex is False:
        args, calIndex = args[:-1], args[-1]
    _extreme("ReduceMin", "min", dst, src, sharedTmpBuffer, (*args, calIndex))
