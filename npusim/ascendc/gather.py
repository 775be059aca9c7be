"""Vector data gathering on PIPE_V: Brcb, Gather, Gatherb and GatherMask.

Sources (Ascend C API reference; asc-devkit ``docs/zh/api/SIMD-API/基础API/Memory矢量计算/``
and ``docs/api/context/``, Atlas A2/A3 rows):

* ``数据填充/Brcb.md`` — each of 8 source elements per repeat fills one 32 B block.
* ``离散与聚合/Gather.md`` — element gather by **byte** offsets (uint32) relative to
  ``src + srcBaseAddr``: ``dst[i] = src[(srcBaseAddr + srcOffset[i]) / sizeof(T)]``.
* ``离散与聚合/Gatherb_ISASI.md`` — 32 B block gather by uint32 byte offsets.
* ``docs/api/context/GatherMask.md`` (and its A2 implementation, vreducev2) — keeps the
  source elements whose pattern bit is 1, packed at the start of dst; the count kept is
  the ``rsvdCnt`` output and the register GetGatherMaskRemainCount reads.

Costs (docs/reference/hardware.md §2.1, elements per cycle per AIV): Brcb 8 elements in per
cycle (one repeat); Gather 5; Gatherb 42 (uint16) / 21 (uint32); GatherMask 64 (16-bit) /
32 (32-bit). A level-0 call costs per repeat whatever its mask (:func:`issue_vector`).

The helpers at the top (dtype tables per SoC, alignment, ranges, overlap) are shared with
:mod:`npusim.ascendc.transpose` and :mod:`npusim.ascendc.datacopy`.

Shared rules (the two forms, 32 B UB alignment, address overlap, the cost terms — head,
repeats, UB bank conflicts — and the common errors): the :mod:`npusim.ascendc.vector` module
docstring. The helpers below apply those rules with this family's exceptions (dtype tables
per SoC, no overlap between source and destination at all).
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from npusim.ascendc import checker
from npusim.ascendc import core as _core
from npusim.ascendc import repeat as _repeat
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.types import MAX_REPEAT_TIMES, ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE, PIPE_S
from npusim.ascendc.vector import issue_vector, level2_done, same_dtype
from npusim.errors import AlignmentError, DtypeError, KernelError, LimitError, UbError

__all__ = ["BrcbRepeatParams", "GatherRepeatParams", "GatherMaskParams", "Brcb", "Gather",
           "Gatherb", "GatherMask", "GetGatherMaskRemainCount"]

I8, U8 = np.dtype(np.int8), np.dtype(np.uint8)
I16, U16 = np.dtype(np.int16), np.dtype(np.uint16)
I32, U32 = np.dtype(np.int32), np.dtype(np.uint32)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)
U64 = np.dtype(np.uint64)

#: short_soc_version of the Atlas A2 and A3 parts.
A2A3 = ("Ascend910B", "Ascend910_93")
_B16_B32 = (I16, U16, I32, U32, F16, F32)

#: Brcb / Gather dtypes per SoC family (Brcb.md, Gather.md 数据类型).
BRCB_TYPES = {"Ascend910B": (*_B16_B32, BF16), "Ascend910_93": (*_B16_B32, BF16),
              "Ascend310P": _B16_B32}
GATHER_TYPES = BRCB_TYPES
#: Gatherb: uint16/uint32 on A2/A3 only (Gatherb_ISASI.md).
GATHERB_TYPES = {"Ascend910B": (U16, U32), "Ascend910_93": (U16, U32)}
#: GatherMask: A2/A3 (GatherMask.md).
GATHER_MASK_TYPES = {"Ascend910B": (*_B16_B32, BF16), "Ascend910_93": (*_B16_B32, BF16)}

#: Elements per cycle (docs/reference/hardware.md §2.1).
BRCB_RATE = 8                      # source elements: one repeat per cycle
GATHER_RATE = 5
GATHERB_RATE = {2: 42, 4: 21}
GATHER_MASK_RATE = {2: 64, 4: 32}

_WORD = (1 << 64) - 1


# -- shared checks ------------------------------------------------------------------------
def check_types(ctx, name: str, dtype: np.dtype, table: dict) -> None:
    """Raise unless ``dtype`` is one of ``table[soc family]``.

    Raises:
        KernelError: the instruction does not exist on this SoC.
        DtypeError: the dtype is not one the page lists for this SoC.
    """
    family = ctx.soc.short_soc_version
    allowed = table.get(family)
    if allowed is None:
        raise KernelError(name, f"{name} is not supported on {ctx.soc.soc_version} (supported "
                          f"on: {', '.join(table)})", pipe="PIPE_V")
    if np.dtype(dtype) not in allowed:
        raise DtypeError(name, f"{np.dtype(dtype).name} is not a supported type of {name} on "
                         f"{family} (supported: {', '.join(d.name for d in allowed)})",
                         pipe="PIPE_V")


def check_aligned(name: str, *tensors: LocalTensor) -> None:
    """UB operands start 32 B aligned (通用说明和约束.md; docs/reference/hardware.md §3)."""
    for t in tensors:
        if t.offset % ONE_BLK_SIZE:
            raise AlignmentError(name, f"UB operand at 0x{t.offset:x} is not 32 B aligned "
                                 "(docs/reference/hardware.md §3)", pipe="PIPE_V")


def check_range(name: str, what: str, value, hi: int, lo: int = 0) -> int:
    """``value`` as an int in [lo, hi], else LimitError naming the field."""
    v = int(value)
    if not lo <= v <= hi:
        raise LimitError(name, f"{what} = {v} is outside [{lo}, {hi}]", pipe="PIPE_V")
    return v


def repeat_times(name: str, value) -> int:
    """A repeatTime in [0, MAX_REPEAT_TIMES] (0 is a NOP that still costs its head)."""
    return check_range(name, "repeatTime", value, MAX_REPEAT_TIMES)


def full(repeat: int, lanes: int) -> _repeat.Level0:
    """A call whose every lane takes part."""
    return _repeat.Level0(repeat, lanes, np.ones((repeat, lanes), dtype=bool))


def touched(t: LocalTensor, idx: np.ndarray, call: _repeat.Level0) -> tuple[int, int]:
    """[lo, hi) UB bytes the active lanes of ``idx`` cover (empty: (0, 0))."""
    act = idx[call.active]
    if act.size == 0:
        return 0, 0
    isz = t.dtype.itemsize
    return t.offset + int(act.min()) * isz, t.offset + (int(act.max()) + 1) * isz


def report_same_memory(ctx, name: str, a: tuple[int, int], b: tuple[int, int]) -> None:
    """A checker finding when the source and destination ranges meet: these instructions
    do not support src and dst in the same memory (the pages' 约束说明)."""
    if a[0] < a[1] and b[0] < b[1] and a[0] < b[1] and b[0] < a[1]:
        checker.report(ctx, UbError(name, f"source UB [{b[0]}, {b[1]}) and destination "
                                    f"[{a[0]}, {a[1]}) overlap: {name} does not support src "
                                    f"and dst in the same memory ({name}.md 约束说明)",
                                    pipe="PIPE_V"))


# -- parameter structs ---------------------------------------------------------------------
@dataclass
class BrcbRepeatParams:
    """``BrcbRepeatParams(dstBlkStride, dstRepStride)`` in 32 B blocks (uint16_t fields;
    a dstBlkStride of 0 counts as 1). The other fields of the C++ struct are reserved."""

    dstBlkStride: int = 1
    dstRepStride: int = 8


@dataclass
class GatherRepeatParams:
    """``GatherRepeatParams(dstBlkStride, dstRepStride)`` of Gatherb, in 32 B blocks
    (dstBlkStride uint8_t, 0 counts as 1; dstRepStride uint16_t)."""

    dstBlkStride: int = 1
    dstRepStride: int = 8


@dataclass
class GatherMaskParams:
    """``GatherMaskParams(src0BlockStride, repeatTimes, src0RepeatStride,
    src1RepeatStride)``: strides in 32 B blocks (uint8_t, uint16_t, uint16_t, uint8_t)."""

    src0BlockStride: int = 1
    repeatTimes: int = 0
    src0RepeatStride: int = 8
    src1RepeatStride: int = 8


# -- Brcb ----------------------------------------------------------------------------------
def Brcb(dst: LocalTensor, src0: LocalTensor, repeatTime: int,
         repeatParams: BrcbRepeatParams) -> None:
    """Broadcast each source element to one 32 B block: repeat ``r`` reads
    ``src0[8r : 8r + 8]`` and fills block ``j`` of the repeat (at ``r * dstRepStride +
    j * dstBlkStride`` blocks from dst) with ``src0[8r + j]``.

    Source: Brcb.md (Atlas A2/A3: int16/uint16/int32/uint32/half/bfloat16/float; 310P
    without bfloat16). Cost: 8 source elements per cycle, i.e. one cycle per repeat.

    Args:
        dst, src0: LocalTensors of one dtype, 32 B aligned; src0 holds ``8 * repeatTime``
            elements.
        repeatTime: [0, 255].
        repeatParams: :class:`BrcbRepeatParams` (dstBlkStride 0 counts as 1).

    Raises:
        DtypeError / KernelError: dtype or SoC not supported. AlignmentError: an operand
        not 32 B aligned. LimitError: repeatTime or a stride out of range. UbError: an
        operand too short; src0 and dst in the same memory (a checker finding).
    """
    name = "Brcb"
    ctx = _core.current_core()
    dt = same_dtype(name, dst, src0)
    check_types(ctx, name, dt, BRCB_TYPES)
    check_aligned(name, dst, src0)
    repeat = repeat_times(name, repeatTime)
    blk = check_range(name, "dstBlkStride", repeatParams.dstBlkStride, 65535) or 1
    rep = check_range(name, "dstRepStride", repeatParams.dstRepStride, 65535)
    epb = ONE_BLK_SIZE // dt.itemsize
    s_call, d_call = full(repeat, 8), full(repeat, 8 * epb)
    s_idx = np.arange(repeat * 8).reshape(repeat, 8)
    d_idx = _repeat.lane_index(dt.itemsize, d_call, blk, rep)
    ctx.batch_ok = ctx.is_group        # lane by lane: a lockstep group runs it at once
    try:
        for t, idx, call in ((src0, s_idx, s_call), (dst, d_idx, d_call)):
            _repeat.lanes_view(t, idx, call, name)      # bounds first
        report_same_memory(ctx, name, touched(dst, d_idx, d_call), touched(src0, s_idx, s_call))
        vals = _repeat.read(src0, s_idx, s_call, name)  # ([G,] repeat, 8)
        _repeat.write(dst, d_idx, d_call, np.repeat(vals, epb, axis=-1), name)
    finally:
        ctx.batch_ok = False
    # no source operand for the bank-conflict model: its rule is for 256 B source repeats,
    # and Brcb reads one 32 B block a repeat
    issue_vector(ctx, name, 8 * repeat, BRCB_RATE, dst, (), repeats=repeat, lanes=8,
                 tracked=True)


# -- Gather --------------------------------------------------------------------------------
def Gather(dst: LocalTensor, src: LocalTensor, srcOffset: LocalTensor, srcBaseAddr: int,
           *args) -> None:
    """dst[i] = the element of ``src`` at byte ``srcBaseAddr + srcOffset[i]``.

    Forms (Gather.md): ``Gather(dst, src, srcOffset, srcBaseAddr, count)`` — the first
    ``count`` elements; ``Gather(dst, src, srcOffset, srcBaseAddr, mask, repeatTime,
    dstRepStride)`` — level 0: 256 B of dst per repeat (128 16-bit / 64 32-bit lanes),
    repeats ``dstRepStride`` blocks apart, a continuous or bit ``mask`` (Counter mode
    honoured). The offsets are read contiguously, one uint32 per lane in lane order
    across repeats ([R]: the page does not draw the offset layout of a multi-repeat call).

    Args:
        dst, src: one dtype (A2/A3: int16/uint16/int32/uint32/half/bfloat16/float), 32 B
            aligned.
        srcOffset: uint32 LocalTensor of byte offsets, each a multiple of sizeof(T).
        srcBaseAddr: bytes added to every offset, a multiple of sizeof(T).

    Raises:
        DtypeError: dtypes not supported, or srcOffset not uint32. AlignmentError: an
            operand not 32 B aligned, or an offset/base not a multiple of sizeof(T).
        LimitError: repeatTime, dstRepStride or the mask out of range. UbError: an operand
            too short, or a gathered address outside src's buffer; src and dst in the same
            memory (a checker finding).
    Cost: 5 elements per cycle (§2.1); a level-0 call per 256 B repeat.
    """
    name = "Gather"
    ctx = _core.current_core()
    dt = same_dtype(name, dst, src)
    check_types(ctx, name, dt, GATHER_TYPES)
    if srcOffset.dtype != U32:
        raise DtypeError(name, f"srcOffset must be uint32_t, not {srcOffset.dtype.name}",
                         pipe="PIPE_V")
    check_aligned(name, dst, src, srcOffset)
    isz = dt.itemsize
    base = check_range(name, "srcBaseAddr", srcBaseAddr, 2**32 - 1)
    if base % isz:
        raise AlignmentError(name, f"srcBaseAddr = {base} is not a multiple of sizeof(T) = "
                             f"{isz} (Gather.md)", pipe="PIPE_V")
    if len(args) == 1:                                   # the first count elements
        count = int(args[0])
        dst.elements(count, name)                        # bounds before any lane arrays
        call = full(1, count)
        d_idx = np.arange(count).reshape(1, count)
        lanes, repeats = count, None
    elif len(args) == 3:                                 # level 0
        mask, repeat_time, dst_rep = args
        lanes = ONE_REPEAT_BYTE_SIZE // isz
        call = _repeat.resolve(ctx, name, lanes, mask, repeat_time)
        d_idx = _repeat.lane_index(isz, call, 1, check_range(name, "dstRepStride", dst_rep,
                                                              65535))
        repeats = call.repeat
    else:
        raise KernelError(name, "takes (count) or (mask, repeatTime, dstRepStride)",
                          pipe="PIPE_V")
    o_idx = np.arange(call.repeat * call.lanes).reshape(call.repeat, call.lanes)
    for t, idx in ((dst, d_idx), (srcOffset, o_idx)):
        _repeat.lanes_view(t, idx, call, name)
    offsets = _repeat.read(srcOffset, o_idx, call, name).astype(np.int64) + base
    misaligned = call.active & (offsets % isz != 0)
    if misaligned.any():
        raise AlignmentError(name, f"srcBaseAddr + srcOffset = {int(offsets[misaligned][0])} "
                             f"is not a multiple of sizeof(T) = {isz} (Gather.md 约束说明)",
                             pipe="PIPE_V")
    s_idx = offsets // isz
    _repeat.lanes_view(src, s_idx, call, name)           # gathered addresses stay in src
    report_same_memory(ctx, name, touched(dst, d_idx, call), touched(src, s_idx, call))
    _repeat.write(dst, d_idx, call, _repeat.read(src, s_idx, call, name), name)
    # scattered reads: the 256 B bank-conflict model does not apply (5 elements a cycle
    # bound the instruction anyway)
    if repeats is None:
        level2_done(ctx)
        issue_vector(ctx, name, count, GATHER_RATE, dst, (), tracked=True)
    else:
        issue_vector(ctx, name, call.count, GATHER_RATE, dst, (), repeats=repeats, lanes=lanes,
                     tracked=True)


# -- Gatherb -------------------------------------------------------------------------------
def Gatherb(dst: LocalTensor, src: LocalTensor, offset: LocalTensor, repeatTime: int,
            repeatParams: GatherRepeatParams) -> None:
    """Gather 32 B blocks: block ``j`` of repeat ``r`` of dst (at ``r * dstRepStride +
    j * dstBlkStride`` blocks) is the 32 B of ``src`` at byte ``offset[8r + j]``.

    Source: Gatherb_ISASI.md (A2/A3: uint16/uint32). The API resets the mask register
    (ResetMask) before the instruction, so the register is full afterwards.

    Raises:
        DtypeError / KernelError: dtype or SoC not supported; offset not uint32.
        AlignmentError: an operand not 32 B aligned, or an offset not a multiple of 32 B.
        LimitError: repeatTime or a stride out of range. UbError: an operand too short, a
            block outside src's buffer; src and dst in the same memory (a checker finding).
    Cost: 42 (uint16) / 21 (uint32) elements per cycle: 4 cycles per 256 B repeat.
    """
    name = "Gatherb"
    ctx = _core.current_core()
    dt = same_dtype(name, dst, src)
    check_types(ctx, name, dt, GATHERB_TYPES)
    if offset.dtype != U32:
        raise DtypeError(name, f"offset must be uint32_t, not {offset.dtype.name}",
                         pipe="PIPE_V")
    check_aligned(name, dst, src, offset)
    repeat = repeat_times(name, repeatTime)
    blk = check_range(name, "dstBlkStride", repeatParams.dstBlkStride, 255) or 1
    rep = check_range(name, "dstRepStride", repeatParams.dstRepStride, 65535)
    epb = ONE_BLK_SIZE // dt.itemsize
    o_call, call = full(repeat, 8), full(repeat, 8 * epb)
    o_idx = np.arange(repeat * 8).reshape(repeat, 8)
    d_idx = _repeat.lane_index(dt.itemsize, call, blk, rep)
    for t, idx, c in ((offset, o_idx, o_call), (dst, d_idx, call)):
        _repeat.lanes_view(t, idx, c, name)
    offs = _repeat.read(offset, o_idx, o_call, name).astype(np.int64)
    if (offs % ONE_BLK_SIZE).any():
        bad = int(offs[offs % ONE_BLK_SIZE != 0][0])
        raise AlignmentError(name, f"offset {bad} is not 32 B aligned (Gatherb_ISASI.md "
                             "约束说明)", pipe="PIPE_V")
    # element e of the gathered block j of repeat r
    s_idx = (np.repeat(offs // dt.itemsize, epb, axis=1)
             + np.tile(np.arange(epb), 8)[None, :])
    _repeat.lanes_view(src, s_idx, call, name)
    report_same_memory(ctx, name, touched(dst, d_idx, call), touched(src, s_idx, call))
    _repeat.write(dst, d_idx, call, _repeat.read(src, s_idx, call, name), name)
    ctx.vector_mask = _core.FULL_MASK
    issue_vector(ctx, name, repeat * 8 * epb, GATHERB_RATE[dt.itemsize], dst, (),
                 repeats=repeat, lanes=8 * epb, tracked=True)     # scattered: no bank model


# -- GatherMask ----------------------------------------------------------------------------
def _builtin_pattern(mode: int, lanes: int) -> np.ndarray:
    """Bits of built-in pattern 1-7 over the lanes of a repeat (GatherMask.md: 1 even
    lanes, 2 odd lanes, 3-6 lane ``mode - 3`` of every 4, 7 all)."""
    lane = np.arange(lanes)
    if mode == 7:
        return np.ones(lanes, dtype=bool)
    if mode in (1, 2):
        return lane % 2 == mode - 1
    return lane % 4 == mode - 3


def _user_pattern(pattern: LocalTensor, repeat: int, lanes: int, rep_stride: int,
                  name: str) -> np.ndarray:
    """Pattern bits (repeat, lanes) from a uint16/uint32 tensor: consumed continuously
    within a repeat (bit ``l % W`` of word ``l // W``), each repeat starting
    ``src1RepeatStride`` blocks after the previous one."""
    bits_per_word = pattern.dtype.itemsize * 8
    words = -(-lanes // bits_per_word)
    call = full(repeat, words)
    idx = (np.arange(repeat)[:, None] * (rep_stride * ONE_BLK_SIZE // pattern.dtype.itemsize)
           + np.arange(words)[None, :])
    raw = _repeat.read(pattern, idx, call, name)
    bits = np.unpackbits(np.ascontiguousarray(raw).view(np.uint8).reshape(repeat, -1),
                         axis=1, bitorder="little")
    return bits[:, :lanes].astype(bool)


def GatherMask(dst: LocalTensor, src0: LocalTensor, src1Pattern, reduceMode: bool, mask: int,
               gatherMaskParams: GatherMaskParams, rsvdCnt=None) -> int:
    """Keep the elements of ``src0`` whose pattern bit is 1, packed at the start of dst.

    Source: docs/api/context/GatherMask.md (Atlas A2/A3) and its A2 implementation.

    Args:
        dst, src0: one dtype (half/bfloat16/uint16/int16/float/uint32/int32), 32 B aligned.
        src1Pattern: a built-in pattern 1-7 (1: even lanes, 2: odd lanes, 3/4/5/6: lane
            0/1/2/3 of every 4, 7: all; the same for every repeat) or a LocalTensor of
            uint16 (16-bit T) / uint32 (32-bit T) pattern bits, read continuously within a
            repeat, repeats ``src1RepeatStride`` blocks apart.
        reduceMode: False — Normal mode: each repeat covers 256 B of src0 (128 / 64 lanes)
            and ``mask`` is ignored; True — Counter mode (configuration 1, the only one on
            A2/A3): each repeat covers ``mask`` elements, ``mask`` in [1, 2^32 - 1].
        gatherMaskParams: :class:`GatherMaskParams` (src0 strides and repeatTimes, [0, 255]).
        rsvdCnt: the C++ ``uint64_t&`` output. Pass a one-element list or numpy array to
            receive the count; the count is also returned.

    Returns:
        The number of elements kept (also in the register GetGatherMaskRemainCount reads).

    Afterwards the vector unit is in Normal mode with the mask register holding
    ``(mask, 0)`` (the API sets it for the instruction and leaves it; A2 implementation):
    a caller in Counter mode must call SetMaskCount again (GatherMask.md 约束说明).
    Only the selected source lanes are read as far as the checker is concerned (the others
    do not affect the result). dst elements past the count are not written.

    Raises:
        DtypeError / KernelError: dtype, pattern dtype or SoC not supported.
        AlignmentError: an operand not 32 B aligned. LimitError: pattern mode, repeatTimes,
        a stride or the Counter-mode mask out of range. UbError: an operand too short.
    Cost: 64 (16-bit) / 32 (32-bit) elements per cycle, per repeat of the source (§2.1).
    """
    name = "GatherMask"
    ctx = _core.current_core()
    dt = same_dtype(name, dst, src0)
    check_types(ctx, name, dt, GATHER_MASK_TYPES)
    user = isinstance(src1Pattern, LocalTensor)
    check_aligned(name, dst, src0, *((src1Pattern,) if user else ()))
    p = gatherMaskParams
    repeat = check_range(name, "repeatTimes", p.repeatTimes, MAX_REPEAT_TIMES)
    blk = check_range(name, "src0BlockStride", p.src0BlockStride, 255)
    rep = check_range(name, "src0RepeatStride", p.src0RepeatStride, 65535)
    rep1 = check_range(name, "src1RepeatStride", p.src1RepeatStride, 255)
    mask = int(mask)
    if reduceMode:
        lanes = check_range(name, "mask (Counter mode)", mask, 2**32 - 1, lo=1)
        if lanes * dt.itemsize > ctx.soc.ub_size:
            raise UbError(name, f"a Counter-mode repeat of {lanes} elements is larger than "
                          f"the {ctx.soc.ub_size} B UB", pipe="PIPE_V")
    else:
        lanes = ONE_REPEAT_BYTE_SIZE // dt.itemsize
    if user:
        want = U16 if dt.itemsize == 2 else U32
        if src1Pattern.dtype != want:
            raise DtypeError(name, f"a {dt.name} GatherMask takes a {want.name} pattern tensor, "
                             f"not {src1Pattern.dtype.name}", pipe="PIPE_V")
        bits = _user_pattern(src1Pattern, repeat, lanes, rep1, name)
    else:
        mode = check_range(name, "src1Pattern", src1Pattern, 7, lo=1)
        bits = np.broadcast_to(_builtin_pattern(mode, lanes), (repeat, lanes))
    call = _repeat.Level0(repeat, lanes, bits)
    s_idx = _repeat.lane_index(dt.itemsize, call, blk, rep)
    kept = _repeat.read(src0, s_idx, call, name)[bits]   # row-major: repeat, then lane order
    count = int(kept.size)
    if count:
        _repeat.write(dst, np.arange(count).reshape(1, count), full(1, count), kept[None, :],
                      name)
    ctx.rsvd_cnt = count
    ctx.mask_counter = False
    ctx.vector_mask = (mask & _WORD, 0)
    if isinstance(rsvdCnt, (list, np.ndarray)):
        rsvdCnt[0] = count
    issue_vector(ctx, name, repeat * lanes, GATHER_MASK_RATE[dt.itemsize], dst, (src0,),
                 repeats=repeat, lanes=lanes, tracked=True)
    return count


def GetGatherMaskRemainCount() -> int:
    """Elements the last GatherMask of this core kept (its rsvdCnt register; PIPE_S,
    1 cycle).

    Returns 0 before any GatherMask. Cost: one PIPE_S record of 1 cycle (a register
    read; docs/reference/hardware.md §2.1 "Mask/scalar setup ops cost 1 cycle"). Raises
    nothing.
    """
    ctx = _core.current_core()
    ctx.record(_core.OP, PIPE_S, 1, 0, None, "GetGatherMaskRemainCount")
    return int(ctx.rsvd_cnt)
