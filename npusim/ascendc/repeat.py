"""Level-0 vector calls: the mask register, repeats and block/repeat strides.

Every vector instruction of Ascend C has, beside the "first n elements" form
(``Add(dst, src0, src1, count)``, level 2), a level-0 form (高维切分计算)::

    Add(dst, src0, src1, mask, repeatTime, BinaryRepeatParams(...))
    Exp(dst, src, mask, repeatTime, UnaryRepeatParams(...))

How the vector unit walks UB in that form (docs/reference/hardware.md §3 "Vector
instructions"; Ascend C pages 高维切分.md, 掩码.md, 通用说明和约束.md):

* One **repeat** reads and writes 8 data blocks of 32 B per operand: 256 B, i.e. 128
  half, 64 float or 32 64-bit elements ("lanes"). ``repeatTime`` repeats run one after
  another, at most ``MAX_REPEAT_TIMES`` = 255; 0 is a NOP.
* Within a repeat, block ``b`` of an operand starts ``b * blkStride`` blocks after the
  repeat's first block; repeat ``r`` starts ``r * repStride`` blocks after the operand's
  start (both in 32 B units). ``repStride = 8, blkStride = 1`` is contiguous; 0 re-reads
  the same blocks (a source broadcast); a larger stride leaves gaps.
* The **mask** says which lanes of each repeat take part. Normal mode: a continuous
  count (the first ``mask`` lanes, clamped to the lanes of a repeat) or two 64-bit words
  (``[low, high]``: bit ``i`` of the 128-bit value switches lane ``i``; 32-bit types use
  the low word only, 64-bit types its low 32 bits). Counter mode (``SetMaskCount``):
  the mask is the total element count and ``repeatTime`` is ignored. Lanes that are off
  keep their old destination bytes.
* ``isSetMask=False`` (the template parameter): the instruction uses the mask register
  that ``SetVectorMask`` set, and the ``mask`` argument (``MASK_PLACEHOLDER``) is ignored.
* Address overlap: within a repeat a source and the destination overlap completely or
  not at all; a destination feeding a later repeat's source is allowed only for
  Add/Sub/Mul/Max/Min/AddRelu/SubRelu (half/int32/float) with the destination on src1
  and ``src1RepStride`` or ``dstRepStride`` 0 — the accumulation idiom. The simulator
  runs such a call repeat by repeat, as the hardware issues them, and reports any other
  overlap (通用说明和约束.md "地址重叠约束").

Functions here are written as functions of the operands' views and the parameters, with
the per-core mask register as the only state (DESIGN.md "Lockstep execution").
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from npusim.ascendc import checker
from npusim.ascendc import core as _core
from npusim.ascendc.types import (MAX_REPEAT_TIMES, ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE, PIPE_S,
                                  PIPE_V)
from npusim.errors import LimitError, UbError

__all__ = ["BinaryRepeatParams", "UnaryRepeatParams", "MaskMode", "MASK_PLACEHOLDER",
           "FULL_MASK", "SetMaskCount", "SetMaskNorm", "SetVectorMask", "ResetMask",
           "GetMaskMode", "SetSaturationFlag"]

#: The ``mask`` argument of a call with ``isSetMask=False`` (ignored).
MASK_PLACEHOLDER = 0
_WORD = (1 << 64) - 1
FULL_MASK = _core.FULL_MASK
#: Largest block or repeat stride of a level-0 call (uint8_t fields on A2/A3).
MAX_STRIDE = 255


class MaskMode(enum.IntEnum):
    """``enum class MaskMode : uint8_t`` of Ascend C."""

    NORMAL = 0
    COUNTER = 1


@dataclass
class BinaryRepeatParams:
    """Strides of a two-source level-0 call, in 32 B blocks (Ascend C defaults: 1 within a
    repeat, 8 between repeats — contiguous)."""

    dstBlkStride: int = 1
    src0BlkStride: int = 1
    src1BlkStride: int = 1
    dstRepStride: int = 8
    src0RepStride: int = 8
    src1RepStride: int = 8

    def strides(self):
        """(blkStride, repStride) of dst, src0, src1."""
        return ((self.dstBlkStride, self.dstRepStride), (self.src0BlkStride, self.src0RepStride),
                (self.src1BlkStride, self.src1RepStride))


@dataclass
class UnaryRepeatParams:
    """Strides of a one-source level-0 call, in 32 B blocks (defaults contiguous)."""

    dstBlkStride: int = 1
    srcBlkStride: int = 1
    dstRepStride: int = 8
    srcRepStride: int = 8

    def strides(self):
        """(blkStride, repStride) of dst, src."""
        return ((self.dstBlkStride, self.dstRepStride), (self.srcBlkStride, self.srcRepStride))


# -- the mask register ------------------------------------------------------------------
def _scalar_op(ctx, name: str) -> None:
    """Mask/scalar setup instructions cost one cycle on PIPE_S (hardware.md §2.1)."""
    ctx.record(_core.OP, PIPE_S, 1, 0, None, name)


def SetMaskCount() -> None:
    """Switch the mask register to Counter mode: a level-0 call's mask is then the total
    number of elements and its ``repeatTime`` is ignored (Ascend C SetMaskCount)."""
    ctx = _core.current_core()
    ctx.mask_counter = True
    _scalar_op(ctx, "SetMaskCount")


def SetMaskNorm() -> None:
    """Switch the mask register back to Normal mode (the default; Ascend C SetMaskNorm)."""
    ctx = _core.current_core()
    ctx.mask_counter = False
    _scalar_op(ctx, "SetMaskNorm")


def GetMaskMode() -> MaskMode:
    """The mask register's mode (simulator helper, for tests and debugging)."""
    return MaskMode.COUNTER if _core.current_core().mask_counter else MaskMode.NORMAL


def SetVectorMask(*mask, dtype=None, mode: MaskMode = MaskMode.NORMAL) -> None:
    """``SetVectorMask<T, mode>(maskHigh, maskLow)`` or ``SetVectorMask<T, mode>(len)``.

    Sets the mask register that level-0 calls with ``isSetMask=False`` use.

    Args:
        mask: ``(maskHigh, maskLow)`` — the bit mode (Normal) or ``(0, count)``
            (Counter); or ``(len,)`` — the first ``len`` lanes (Normal) or the count
            (Counter). Note Ascend C's order: the high word first.
        dtype: the template type T (its size bounds ``len`` in Normal mode).
        mode: MaskMode.NORMAL or MaskMode.COUNTER (must match the register's mode).

    Raises:
        LimitError: a value outside the documented ranges (SetVectorMask page,
            atlasascendc_api_07_0096: len ∈ [1, 128/64/32] for 16/32/64-bit types in
            Normal mode; maskHigh = 0 for 32- and 64-bit types).
    """
    ctx = _core.current_core()
    mode = MaskMode(mode)
    if len(mask) == 1:
        n = int(mask[0])
        if mode == MaskMode.COUNTER:
            ctx.vector_mask = (n, 0)
        else:
            lanes = _lanes_of(dtype)
            if not 1 <= n <= lanes:
                raise LimitError("SetVectorMask", f"len = {n} is outside [1, {lanes}] for a "
                                 f"{np.dtype(dtype).itemsize * 8}-bit type in Normal mode "
                                 "(SetVectorMask, atlasascendc_api_07_0096)", pipe="PIPE_S")
            ctx.vector_mask = _continuous_bits(n)
    elif len(mask) == 2:
        high, low = int(mask[0]) & _WORD, int(mask[1]) & _WORD
        if mode == MaskMode.NORMAL and dtype is not None and np.dtype(dtype).itemsize >= 4 \
                and high:
            raise LimitError("SetVectorMask", "maskHigh must be 0 for 32- and 64-bit types "
                             "(SetVectorMask, atlasascendc_api_07_0096)", pipe="PIPE_S")
        ctx.vector_mask = (low, high)
    else:
        raise LimitError("SetVectorMask", "takes (maskHigh, maskLow) or (len)", pipe="PIPE_S")
    _scalar_op(ctx, "SetVectorMask")


def ResetMask() -> None:
    """Restore the mask register to every lane on (Ascend C ResetMask)."""
    ctx = _core.current_core()
    ctx.vector_mask = FULL_MASK
    _scalar_op(ctx, "ResetMask")


def SetSaturationFlag(flag: bool) -> None:
    """Switch the vector unit's saturation mode (1 cycle on PIPE_S).

    With it on, half results clamp inf to ±65504 and NaN to 0, and int16/int32 arithmetic
    saturates instead of wrapping; float keeps IEEE inf/NaN semantics either way
    (docs/reference/hardware.md §2.1 "Numerics", from Memory矢量计算接口边界值汇总.md).
    """
    ctx = _core.current_core()
    ctx.saturation = bool(flag)
    _scalar_op(ctx, "SetSaturationFlag")


def _lanes_of(dtype) -> int:
    """Lanes of one 256 B repeat for an element size (at most 128: the mask is 128 bits)."""
    return min(ONE_REPEAT_BYTE_SIZE // np.dtype(dtype).itemsize, 128) if dtype is not None else 128


def _continuous_bits(n: int) -> tuple[int, int]:
    n = max(0, min(int(n), 128))
    bits = (1 << n) - 1
    return bits & _WORD, bits >> 64


def _bits_to_lanes(low: int, high: int, lanes: int) -> np.ndarray:
    """The lanes a (low, high) bit mask switches on, as a bool array of ``lanes``."""
    words = np.array([low, high], dtype=np.uint64).view(np.uint8)   # little-endian bytes
    return np.unpackbits(words, bitorder="little")[:lanes].astype(bool)


# -- resolving a level-0 call -----------------------------------------------------------
@dataclass(frozen=True)
class Level0:
    """A level-0 call, resolved: ``active[r, l]`` says whether lane ``l`` of repeat ``r``
    takes part; ``lanes`` is the elements of one repeat."""

    repeat: int
    lanes: int
    active: np.ndarray

    @property
    def count(self) -> int:
        """Elements that take part."""
        return int(self.active.sum())


def is_level0(args) -> bool:
    """Whether an instruction's trailing arguments are ``(mask, repeatTime, params...)``
    rather than ``(count,)``."""
    return len(args) >= 2


def resolve(ctx, name: str, lanes: int, mask, repeat_time, is_set_mask: bool = True) -> Level0:
    """The active lanes of a level-0 call with ``lanes`` elements per repeat.

    Raises:
        LimitError: ``repeatTime`` outside [0, 255] (MAX_REPEAT_TIMES), a continuous mask
            that is negative, or a mask with bits beyond the repeat's lanes (e.g. a high
            word for a 32-bit type; 掩码.md).
    """
    if ctx.mask_counter:
        # Counter mode: the mask (or the register's low word) is the element count
        if is_set_mask:
            total = int(mask[0]) if isinstance(mask, (list, tuple)) else int(mask)
            ctx.vector_mask = (total, 0)
        total = int(ctx.vector_mask[0])
        repeat = -(-total // lanes)
        if repeat > MAX_REPEAT_TIMES * 4095:      # far beyond any UB
            raise LimitError(name, f"Counter-mode count {total} exceeds the UB", pipe="PIPE_V")
        active = np.arange(repeat * lanes).reshape(repeat, lanes) < total
        return Level0(repeat, lanes, active)
    repeat = check_repeat_time(name, repeat_time)
    if is_set_mask:
        if isinstance(mask, (list, tuple, np.ndarray)):
            low, high = (int(mask[0]) & _WORD, int(mask[1]) & _WORD) if len(mask) > 1 \
                else (int(mask[0]) & _WORD, 0)
            if lanes == 64 and high and ctx.checker_config.device_like:
                # 32-bit operands: the register's low 64 bits take effect (CCE intrinsics,
                # "Mask规则说明"); Ascend C's pages ask for mask[1] = 0
                checker.tolerated(ctx, LimitError(
                    name, f"mask [{low:#x}, {high:#x}] sets the high word for a 32-bit "
                    "type (掩码.md: mask[1] = 0); the hardware ignores it", pipe="PIPE_V"))
                high = 0
            if lanes <= 64:
                limit = (1 << lanes) - 1
                if high or low & ~limit:
                    raise LimitError(name, f"mask [{low:#x}, {high:#x}] switches lanes beyond "
                                     f"the {lanes} of a repeat of this type (掩码.md: mask[1] = 0 "
                                     "for 32-bit types, mask[0] < 2^32 for 64-bit)", pipe="PIPE_V")
        else:
            n = int(mask)
            if n < 0:
                raise LimitError(name, f"mask = {n} is negative", pipe="PIPE_V")
            low, high = _continuous_bits(min(n, lanes))    # larger values clamp (掩码.md)
        ctx.vector_mask = (low, high)
    low, high = ctx.vector_mask
    row = _bits_to_lanes(low, high, lanes)
    return Level0(repeat, lanes, np.broadcast_to(row, (repeat, lanes)))


def check_repeat_time(name: str, repeat_time) -> int:
    """``repeatTime`` as an int; LimitError outside [0, MAX_REPEAT_TIMES] (hardware.md §3)."""
    repeat = int(repeat_time)
    if not 0 <= repeat <= MAX_REPEAT_TIMES:
        raise LimitError(name, f"repeatTime = {repeat} is outside [0, {MAX_REPEAT_TIMES}] "
                         "(MAX_REPEAT_TIMES; docs/reference/hardware.md §3 \"Vector instructions\")",
                         pipe="PIPE_V")
    return repeat


def check_strides(name: str, strides) -> None:
    """Block and repeat strides are uint8_t fields: [0, 255]; a destination block stride
    of 0 is undefined (高维切分.md)."""
    for i, (blk, rep) in enumerate(strides):
        for what, v in (("BlkStride", blk), ("RepStride", rep)):
            if not 0 <= int(v) <= MAX_STRIDE:
                raise LimitError(name, f"{'dst' if i == 0 else 'src'}{what} = {v} is outside "
                                 f"[0, {MAX_STRIDE}] (高维切分.md)", pipe="PIPE_V")


def lane_index(itemsize: int, call: Level0, blk_stride: int, rep_stride: int) -> np.ndarray:
    """Element offset from an operand's start of every lane: int64 array (repeat, lanes).

    Lane ``l`` lies in block ``l // epb`` (``epb`` = elements of one 32 B block of this
    operand's type) at position ``l % epb``.
    """
    epb = ONE_BLK_SIZE // itemsize
    lanes = np.arange(call.lanes)
    within = (lanes // epb) * (int(blk_stride) * epb) + lanes % epb
    return np.arange(call.repeat)[:, None] * (int(rep_stride) * epb) + within[None, :]


def lanes_view(t, idx: np.ndarray, call: Level0, name: str) -> np.ndarray:
    """The elements of ``t`` up to the last active lane, bounds-checked: ``[n]``, or
    ``[G, n]`` for a lockstep group's stacked UB (while a batch-aware instruction runs)."""
    isz = t.dtype.itemsize
    hi = int(idx[call.active].max()) + 1 if call.active.any() else 0
    end = t.offset + hi * isz
    if end > t.limit and end <= t.ctx.ub.shape[-1]:
        # within the core's UB: the instruction addresses UB, not the tensor (device-like)
        checker.tolerated(t.ctx, UbError(
            name, f"lane at element {hi - 1} of {t.dtype.name} from UB offset {t.offset} "
            f"ends at {end}, past the end of its buffer at {t.limit}: the lanes touch the "
            "next UB bytes", pipe="PIPE_V"))
    elif end > t.limit:
        raise UbError(name, f"lane at element {hi - 1} of {t.dtype.name} from UB offset "
                      f"{t.offset} ends at {end}, past the end of its buffer at {t.limit} "
                      "(check repeatTime and the strides)", pipe="PIPE_V")
    return t.ctx.ub[..., t.offset:end].view(t.dtype)


def _track(ctx, t, idx: np.ndarray, call: Level0, name: str, write: bool) -> None:
    tracker = ctx.tracker
    if tracker is None:
        return
    isz = t.dtype.itemsize
    addr = t.offset + idx[call.active] * isz
    if addr.size == 0:
        return
    lo, hi = int(addr.min()), int(addr.max()) + isz
    if hi - lo == addr.size * isz:        # dense: one contiguous range
        (tracker.write if write else tracker.read)(ctx, int(PIPE_V), lo, hi - lo, name)
    else:
        byte_addr = (addr[:, None] + np.arange(isz)).reshape(-1)
        (tracker.write_at if write else tracker.read_at)(ctx, int(PIPE_V), byte_addr, name)


def read(t, idx: np.ndarray, call: Level0, name: str) -> np.ndarray:
    """The values of ``t`` at ``idx`` (repeat, lanes), with a leading member axis in a
    lockstep group; lanes that are off read as whatever UB holds (they are never written
    back)."""
    view = lanes_view(t, idx, call, name)
    _track(t.ctx, t, idx, call, name, write=False)
    n = view.shape[-1]
    if n == 0:
        return np.zeros(view.shape[:-1] + idx.shape, dtype=t.dtype)
    return view[..., np.minimum(idx, n - 1)]


def write(t, idx: np.ndarray, call: Level0, values: np.ndarray, name: str) -> None:
    """Store ``values`` (repeat, lanes; a leading member axis in a group), or the values of
    the active lanes alone, at ``idx`` in the active lanes only."""
    view = lanes_view(t, idx, call, name)
    _track(t.ctx, t, idx, call, name, write=True)
    act = call.active
    view[..., idx[act]] = values[..., act] if values.shape[-idx.ndim:] == idx.shape else values


def overlap(dst, d_idx: np.ndarray, srcs, s_idxs, call: Level0) -> str | None:
    """How the destination overlaps the sources: None (disjoint, or each repeat in place),
    "sequential" (a later repeat reads what an earlier one wrote), or "partial" (a repeat
    reads bytes its own destination partly covers)."""
    isz = dst.dtype.itemsize
    act = call.active
    if not act.any():
        return None
    d_addr = dst.offset + d_idx * isz
    d_lo, d_hi = int(d_addr[act].min()), int(d_addr[act].max()) + isz
    verdict = None
    for s, s_idx in zip(srcs, s_idxs):
        s_addr = s.offset + s_idx * s.dtype.itemsize
        s_lo, s_hi = int(s_addr[act].min()), int(s_addr[act].max()) + s.dtype.itemsize
        if s_hi <= d_lo or d_hi <= s_lo:
            continue
        if s.dtype.itemsize == isz and np.array_equal(s_addr[act], d_addr[act]):
            # in place lane for lane: fine unless a later repeat reads an earlier write
            if len(np.unique(d_addr[act])) == int(act.sum()):
                continue
        # the first repeat that writes each address, against the repeat that reads it
        reps = np.broadcast_to(np.arange(call.repeat)[:, None], act.shape)
        d_flat, d_rep = d_addr[act], reps[act]
        written, first = np.unique(d_flat, return_index=True)   # row-major: first = min r
        s_flat, s_rep = s_addr[act], reps[act]
        pos = np.minimum(np.searchsorted(written, s_flat), written.size - 1)
        hit = written[pos] == s_flat
        w = d_rep[first[pos]]
        if np.any(hit & (w < s_rep)):
            verdict = "sequential"
        # within one repeat: the source's lanes must be the destination's, or miss them all
        span = int(max(d_addr.max(), s_addr.max())) + 1
        same = np.isin(s_rep * span + s_flat, d_rep * span + d_flat)
        for r in np.unique(s_rep[same]).tolist():
            if not np.array_equal(s_addr[r][act[r]], d_addr[r][act[r]]):
                return "partial"
    return verdict


def report_overlap(ctx, name: str, kind: str, ordered: bool = False) -> None:
    """Report an address overlap the Ascend C rules do not allow (a checker finding).

    ``ordered``: the caller computes the call in the order the documentation gives the
    unit's work (repeat after repeat, each taking its data blocks out of UB, computing and
    writing its result blocks: 通用说明和约束.md "如何使用高维切分计算API"; a later repeat
    reads what an earlier one wrote: its "地址重叠约束" example). The finding is then one the
    device-like run tolerates (:func:`npusim.ascendc.checker.tolerated`); the message says
    which lanes the device may compute otherwise."""
    what = ("a source partly overlaps the destination within a repeat" if kind == "partial"
            else "a later repeat reads a destination an earlier repeat wrote")
    exc = UbError(name, f"{what}; sources and the destination must overlap completely or "
                  "not at all (通用说明和约束.md 地址重叠约束)", pipe="PIPE_V")
    if ordered and ctx.checker_config.device_like:
        exc = UbError(name, f"{what} (通用说明和约束.md 地址重叠约束: not supported, "
                      "\"计算结果可能不满足预期\"); run repeat after repeat, each reading its "
                      "blocks before writing, as the unit's steps are documented: lanes that "
                      "read bytes this call writes may differ on the device", pipe="PIPE_V")
    if ordered:
        checker.tolerated(ctx, exc, reported=True)
    else:
        checker.report(ctx, exc)
