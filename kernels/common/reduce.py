"""Reductions of float32 data by halving, as the ops-nn Ascend C kernels write them.

``ReduceSumHalfInterval`` follows ``ReduceSumHalfIntervalToRepeat`` of ``hicann/ops-nn:
norm/rms_norm/op_kernel/rms_norm_base.h``: the data is folded onto its first half with one
level-2 ``Add`` (``Add(src, src, src[half], half)``), again and again, until one 256 B
repeat (64 floats) is left, which one ``WholeReduceSum`` adds up; ``ReduceMaxHalfInterval``
is the same with ``Max`` and ``WholeReduceMax`` (value only). :func:`TreeFold` is the
folding step on its own, over blocks of any 32 B multiple (the rows of an [R, A0] tile).

Each fold is one vector instruction over half of what is left, so a row of n floats costs
about n/64 cycles at the §2.1 rate (64 floats/cycle) in log2(n/64) instructions, plus one
WholeReduce repeat (7 cycles) — against 7 cycles per repeat for a WholeReduce over every
repeat (the count form of the library ReduceSum/ReduceMax).

Numerics: pairwise (tree) summation — block ``b`` adds block ``b + h`` at each level —
then WholeReduceSum's binary tree over the 64 lanes; each addition rounds to float32.

Where this module chooses on its own [R]: the published routine halves a power-of-two
count after adding the ``leftNum`` tail onto the body; here a fold keeps the middle block
of an odd block count in place (or copies it UB -> UB with DataCopy when folding out of
the source), and a tail shorter than one block is folded onto the first block, so any
count works without padding.
"""
from __future__ import annotations

from npusim.ascendc import Add, DataCopy, Max, WholeReduceMax, WholeReduceSum
from npusim.ascendc.reduce import ReduceOrder

#: float lanes of one 256 B repeat.
NUM_PER_REP_FP32 = 64


def fold_buffer_elements(count: int, block: int = NUM_PER_REP_FP32) -> int:
    """Floats a separate ``dst`` of :func:`TreeFold` needs for ``count`` elements folded in
    blocks of ``block``: half the blocks, rounded up (at least one block)."""
    blocks = int(count) // block
    return max(1, -(-blocks // 2)) * block


def TreeFold(op, dst, src, count: int, block: int) -> None:
    """dst[0:block] = op-fold of src[0:count] in blocks of ``block`` elements.

    ``op`` is a level-2 binary vector instruction (Add, Max, Min); ``block`` a multiple of
    8 floats (32 B). ``dst`` is either ``src`` itself (folded in place; src is destroyed)
    or a separate buffer of :func:`fold_buffer_elements` floats (src is kept). Elements of
    ``count`` beyond the last whole block (fewer than ``block``) are folded onto the first
    block. With fewer than one whole block, dst[0:count] = src[0:count] when dst is not
    src, and the lanes ``count..block`` of dst are left as they are.
    """
    count, block = int(count), int(block)
    blocks, tail = divmod(count, block)
    in_place = dst.offset == src.offset
    if blocks == 0:
        if not in_place:
            op(dst, dst, src, count)           # the caller filled dst with the identity
        return
    cur = src
    if not in_place:                           # first level: out of src into dst
        keep = -(-blocks // 2)
        pairs = blocks - keep
        if pairs:
            op(dst, src, src[keep * block], pairs * block)
        if keep > pairs:                       # odd: the middle block is copied over
            DataCopy(dst[pairs * block], src[pairs * block], block)
        blocks, cur = keep, dst
    if tail:
        op(cur, cur, src[(count - tail)], tail)
    while blocks > 1:
        keep = -(-blocks // 2)
        pairs = blocks - keep
        op(cur, cur, cur[keep * block], pairs * block)
        blocks = keep
    if cur.offset != dst.offset:               # pragma: no cover - in place: cur is dst
        DataCopy(dst, cur, block)


def _reduce(op, whole, dst, src, work, count: int, **kw) -> None:
    count = int(count)
    if count <= NUM_PER_REP_FP32:             # one (partial) repeat: the mask does it
        whole(dst, src, count, 1, 1, 1, 8, **kw)
        return
    TreeFold(op, work, src, count, NUM_PER_REP_FP32)
    whole(dst, work, NUM_PER_REP_FP32, 1, 1, 1, 8, **kw)


def ReduceSumHalfInterval(dst, src, work, count: int) -> None:
    """dst[0] = sum(src[0:count]) (float32). ``work``: src itself (src is destroyed) or a
    separate buffer of ``fold_buffer_elements(count)`` floats (src is kept)."""
    _reduce(Add, WholeReduceSum, dst, src, work, count)


def ReduceMaxHalfInterval(dst, src, work, count: int) -> None:
    """dst[0] = max(src[0:count]) (float32; NaN propagates). ``work`` as
    :func:`ReduceSumHalfInterval`."""
    _reduce(Max, WholeReduceMax, dst, src, work, count, order=ReduceOrder.ORDER_ONLY_VALUE)
