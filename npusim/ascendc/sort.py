"""Sort and index instructions of the vector unit (PIPE_V): CreateVecIndex, Sort32, MrgSort,
GetMrgSortResult, Extract, the library routine Sort, and IndexCast.

Sources: the Ascend C API pages Sort32, MrgSort, GetMrgSortResult, Extract, Sort and
CreateVecIndex (atlasascendc_api_07_0231..0233 and neighbours, hiascend.com) and
``docs/reference/hardware.md`` §2.1 for the rates:

* Sort32 and MrgSort run at **2 elements per cycle** per AIV; CreateVecIndex at 128
  (16-bit) / 64 (32-bit); GetMrgSortResult is a PIPE_S instruction.
* Extract has no rate in §2.1; it is costed as two GatherMask passes at the GatherMask
  rates (64 elements/cycle for 16-bit, 32 for 32-bit) **[R]**.

Layout (A2/A3, "排布方式一"): Sort32 and MrgSort work on 8-byte (score, index) structures;
for float scores the score is the low 4 bytes and the uint32 index the high 4 bytes; for
half scores the score takes the low 2 bytes, 2 bytes are reserved (written as 0 here), and
the index takes the high 4 bytes. Scores sort in **descending** order.

Order rules:

* Sort32, documented: equal scores keep their source order ("score[i] == score[j] and
  i > j: score[j] is selected first").
* MrgSort: equal scores are taken from the lower-numbered queue first, then in queue order
  **[R]** (not documented; this is what keeps a merge of stable sorts stable).
* NaN scores are selected after every other score (-inf included) and keep their source
  order among themselves **[R]** (not documented).

Support: Sort32, MrgSort, GetMrgSortResult and Extract exist on Atlas A2/A3 (NpuArch 2201)
only; on the first-generation 910 and the 310P ("Atlas 训练系列产品" / "Atlas 推理系列产品"
Vector Core: x in the support tables) they raise :class:`DtypeError`.

Shared rules (32 B UB alignment, the cost terms — head and UB bank conflicts — and the
common errors): the :mod:`npusim.ascendc.vector` module docstring. These instructions take
``repeatTimes`` groups of 32 elements (no mask, no strides): a repeat costs 32 / rate
cycles, the head once per call; operands given as (score, index) structures count 8 B per
element for the bank-conflict term.

IndexCast is Ascend C ``Cast`` for the index conversions ``l0op::Cast(indices, DT_INT32)``
performs (docs/reference/operators.md §2 "indices ... are cast to int32 for V2"), for the source
types ``vector.Cast`` does not cover; see its docstring.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.types import PIPE_S, PIPE_V
from npusim.ascendc.vector import issue_vector
from npusim.errors import DtypeError, KernelError, LimitError

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_U32 = np.dtype(np.uint32)
_I32 = np.dtype(np.int32)

#: Elements per cycle of Sort32 and MrgSort (docs/reference/hardware.md §2.1).
RATE_SORT = 2
#: GatherMask elements per cycle, by operand size: the cost basis of Extract [R].
RATE_GATHER_MASK = {2: 64, 4: 32}
#: CreateVecIndex elements per cycle, by operand size (§2.1: 128 for 16-bit, 64 for 32-bit).
RATE_CREATE_INDEX = {2: 128, 4: 64}
#: Elements sorted by one Sort32 repeat.
SORT32_ELEMENTS = 32
#: Bytes of one (score, index) structure.
STRUCT_BYTES = 8
#: Largest element count of one MrgSort queue (elementCountList entries are in [0, 4095]).
MRGSORT_MAX_QUEUE = 4095

_STRUCT = {
    _F32: np.dtype([("score", "<f4"), ("index", "<u4")]),
    _F16: np.dtype([("score", "<f2"), ("rsv", "<u2"), ("index", "<u4")]),
}


def _check_sort_support(ctx, name: str) -> None:
    if ctx.soc.npu_arch != "2201":
        raise DtypeError(name, f"{name} is not supported on {ctx.soc.soc_version}: the sort "
                         "instructions exist on Atlas A2/A3 only (Ascend C API support table)",
                         pipe="PIPE_V")


def _check_score_dtype(name: str, t: LocalTensor) -> np.dtype:
    if t.dtype not in _STRUCT:
        raise DtypeError(name, f"{t.dtype.name} scores are not supported (half or float)",
                         pipe="PIPE_V")
    return t.dtype


def _check_repeat(name: str, repeat: int, lo: int = 0) -> int:
    repeat = int(repeat)
    if not lo <= repeat <= 255:
        raise LimitError(name, f"repeatTimes {repeat} is outside [{lo}, 255] "
                         "(docs/reference/hardware.md §3 vector instructions)", pipe="PIPE_V")
    return repeat


def _structs(t: LocalTensor, count: int, name: str) -> np.ndarray:
    """The first ``count`` (score, index) structures of ``t`` as a structured view."""
    raw = t.bytes_view(int(count) * STRUCT_BYTES, name, "PIPE_V")
    return raw.view(_STRUCT[t.dtype])


def _words(t: LocalTensor, count: int, name: str) -> np.ndarray:
    """The first ``count`` structures of ``t`` as uint64 words. Every byte of a structure
    belongs to a field, so moving words moves the same bytes as moving the structures field
    by field, without numpy's per-field work on structured arrays (MrgSort's merges)."""
    return t.bytes_view(int(count) * STRUCT_BYTES, name, "PIPE_V").view(np.uint64)


def _descending_order(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Stable descending order with NaN last (see the module's order rules)."""
    key = -scores.astype(np.float32)       # negation keeps NaN; argsort puts NaN last
    return np.argsort(key, axis=axis, kind="stable")


# -- CreateVecIndex ------------------------------------------------------------------------
def CreateVecIndex(dst: LocalTensor, firstValue, count: int) -> None:
    """``CreateVecIndex(dst, firstValue, count)``: dst[i] = firstValue + i for i < count.

    dst: int16, int32, half or float (the value is computed exactly, then converted to
    dst's type: a half index above 2048 rounds). Count form only. Cost: ``vec_head_cycles +
    ceil(count / rate)`` + bank conflicts, rate 128 (16-bit) / 64 (32-bit) elements per
    cycle (docs/reference/hardware.md §2.1). dst 32 B aligned. Source: CreateVecIndex page
    (atlasascendc_api_07_0231 and neighbours).

    Raises:
        DtypeError: another dtype. AlignmentError: dst not 32 B aligned. UbError: count
            elements overrun dst's buffer.
    """
    ctx = _core.current_core()
    if dst.dtype not in (np.dtype(np.int16), _I32, _F16, _F32):
        raise DtypeError("CreateVecIndex", f"{dst.dtype.name} is not supported "
                         "(int16, int32, half, float)", pipe="PIPE_V")
    count = int(count)
    out = dst.elements(count, "CreateVecIndex")
    with np.errstate(all="ignore"):
        out[...] = (np.arange(count, dtype=np.int64) + int(firstValue)).astype(dst.dtype)
    issue_vector(ctx, "CreateVecIndex", count, RATE_CREATE_INDEX[dst.dtype.itemsize], dst)


# -- Sort32 --------------------------------------------------------------------------------
def Sort32(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, repeatTimes: int) -> None:
    """``Sort32<T>(dst, src0, src1, repeatTimes)``: sort each group of 32 scores, descending.

    Args:
        dst: T (half/float) tensor receiving ``32 * repeatTimes`` (score, index) structures
            of 8 bytes each.
        src0: the T scores (32 per repeat). src1: uint32 indices carried with the scores.
        repeatTimes: [0, 255]; groups are sorted independently.

    Costs ``32 * repeatTimes / 2`` cycles plus the instruction head (§2.1: 2 elements/cycle).

    Raises:
        DtypeError: not an A2/A3 SoC, or dtypes other than half/float scores and uint32
            indices.
    """
    ctx = _core.current_core()
    _check_sort_support(ctx, "Sort32")
    dt = _check_score_dtype("Sort32", src0)
    if dst.dtype != dt:
        raise DtypeError("Sort32", f"dst is {dst.dtype.name} but src0 is {dt.name}", pipe="PIPE_V")
    if src1.dtype != _U32:
        raise DtypeError("Sort32", f"src1 must be uint32, got {src1.dtype.name}", pipe="PIPE_V")
    repeat = _check_repeat("Sort32", repeatTimes)
    n = SORT32_ELEMENTS * repeat
    scores = src0.elements(n, "Sort32").reshape(repeat, SORT32_ELEMENTS).copy()
    index = src1.elements(n, "Sort32").reshape(repeat, SORT32_ELEMENTS).copy()
    order = _descending_order(scores, axis=1)
    out = _structs(dst, n, "Sort32").reshape(repeat, SORT32_ELEMENTS)
    out["score"] = np.take_along_axis(scores, order, axis=1)
    out["index"] = np.take_along_axis(index, order, axis=1)
    if "rsv" in out.dtype.names:
        out["rsv"] = 0
    issue_vector(ctx, "Sort32", n, RATE_SORT, dst, (src0, src1), dst_nbytes=n * STRUCT_BYTES)


# -- MrgSort -------------------------------------------------------------------------------
@dataclass
class MrgSortSrcList:
    """``MrgSortSrcList<T>``: up to four sorted queues of (score, index) structures."""

    src1: LocalTensor
    src2: LocalTensor | None = None
    src3: LocalTensor | None = None
    src4: LocalTensor | None = None

    def queues(self) -> list:
        return [self.src1, self.src2, self.src3, self.src4]


_VALID_BITS = {0b11: 2, 0b111: 3, 0b1111: 4}


def MrgSort(dst: LocalTensor, sortList: MrgSortSrcList, elementCountList, sortedNum,
            validBit: int, repeatTime: int = 1, isExhaustedSuspension: bool = False) -> None:
    """``MrgSort<T, isExhaustedSuspension>(dst, sortList, elementCountList, sortedNum,
    validBit, repeatTime)``: merge 2-4 sorted queues into one, descending by score.

    Args:
        dst: T tensor receiving the merged structures.
        sortList: the queues (:class:`MrgSortSrcList`); each queue is sorted descending.
        elementCountList: four queue lengths in structures, each in [0, 4095].
        sortedNum: a list of four ints; in exhausted mode it receives how many structures of
            each queue were merged (also what GetMrgSortResult returns).
        validBit: 0b11, 0b111 or 0b1111 (2, 3 or 4 queues).
        repeatTime: [1, 255]. Above 1, four queues of equal length stored back to back
            (src2 = src1 + L, ...) are merged per repeat and the next repeat starts 4L
            structures further on (the documented conditions of repeatTime).
        isExhaustedSuspension: stop as soon as one queue is used up.

    Ties and NaN: see the module docstring. Costs (structures written) / 2 cycles plus the
    head.
    """
    ctx = _core.current_core()
    _check_sort_support(ctx, "MrgSort")
    dt = _check_score_dtype("MrgSort", dst)
    k = _VALID_BITS.get(int(validBit))
    if k is None:
        raise KernelError("MrgSort", f"validBit {validBit:#b} must be 0b11, 0b111 or 0b1111",
                          pipe="PIPE_V")
    repeat = _check_repeat("MrgSort", repeatTime, lo=1)
    counts = [int(c) for c in list(elementCountList)[:4]] + [0] * (4 - len(elementCountList))
    for c in counts:
        if not 0 <= c <= MRGSORT_MAX_QUEUE:
            raise LimitError("MrgSort", f"elementCountList entry {c} is outside [0, 4095]",
                             pipe="PIPE_V")
    queues = sortList.queues()[:k]
    for i, q in enumerate(queues):
        if q is None:
            raise KernelError("MrgSort", f"queue {i + 1} is empty but validBit names it",
                              pipe="PIPE_V")
        if q.dtype != dt:
            raise DtypeError("MrgSort", f"queue {i + 1} is {q.dtype.name}, dst is {dt.name}",
                             pipe="PIPE_V")
    if repeat > 1:
        length = counts[0]
        ok = k == 4 and all(c == length for c in counts) and all(
            queues[i].offset == queues[0].offset + i * length * STRUCT_BYTES for i in range(4))
        if not ok:
            raise KernelError("MrgSort", "repeatTime > 1 needs four queues of equal length "
                              "stored back to back", pipe="PIPE_V")
        data = _words(queues[0], 4 * length * repeat, "MrgSort").reshape(repeat, 4 * length)
        data = data.copy()
        order = _descending_order(data.view(_STRUCT[dt])["score"], axis=1)
        merged = np.take_along_axis(data, order, axis=1)
        _words(dst, 4 * length * repeat, "MrgSort")[...] = merged.reshape(-1)
        total = 4 * length * repeat
        taken = [length * repeat] * 4
    else:
        # the queues laid end to end: a new array, read before dst is written
        data = np.concatenate([_words(q, counts[i], "MrgSort") for i, q in enumerate(queues)])
        queue_of = np.repeat(np.arange(k), counts[:k])
        # a merge of sorted queues with lower-queue-first ties is a stable sort of the
        # queues laid end to end
        order = _descending_order(data.view(_STRUCT[dt])["score"])
        total = len(order)
        if isExhaustedSuspension and total:
            q_sorted = queue_of[order]
            last = [np.flatnonzero(q_sorted == q)[-1] for q in range(k) if counts[q] > 0]
            total = int(min(last)) + 1 if len(last) == k else 0
        merged = data[order[:total]]
        _words(dst, total, "MrgSort")[...] = merged
        taken = np.bincount(queue_of[order[:total]], minlength=k).tolist()
        taken += [0] * (4 - k)
    if sortedNum is not None:
        sortedNum[:4] = taken
    ctx.mrg_sort_result = tuple(taken)
    if ctx.tracker is not None:       # each queue is read over its own length
        spans = ([(queues[0], 4 * counts[0] * repeat)] if repeat > 1
                 else [(q, counts[i]) for i, q in enumerate(queues)])
        for q, n in spans:
            ctx.tracker.read(ctx, int(PIPE_V), q.offset, n * STRUCT_BYTES, "MrgSort")
    issue_vector(ctx, "MrgSort", total, RATE_SORT, dst, (), dst_nbytes=total * STRUCT_BYTES)


def GetMrgSortResult() -> tuple[int, int, int, int]:
    """``GetMrgSortResult(list1, list2, list3, list4)``: structures of each queue merged by the
    last exhausted-mode MrgSort, returned as a tuple (PIPE_S, one scalar instruction).

    Returns (0, 0, 0, 0) before any MrgSort. Cost: one PIPE_S record of ``scalar_cycles``.

    Raises:
        DtypeError: the SoC has no sort instructions (A2/A3 only; module docstring).
    """
    ctx = _core.current_core()
    _check_sort_support(ctx, "GetMrgSortResult")
    ctx.record(_core.OP, PIPE_S, ctx.soc.scalar_cycles, 0, None, "GetMrgSortResult")
    return tuple(getattr(ctx, "mrg_sort_result", (0, 0, 0, 0)))


# -- Extract -------------------------------------------------------------------------------
def Extract(dstValue: LocalTensor, dstIndex: LocalTensor, sorted_: LocalTensor,
            repeatTimes: int) -> None:
    """``Extract(dstValue, dstIndex, sorted, repeatTimes)``: split ``32 * repeatTimes``
    (score, index) structures into a score tensor (half/float) and a uint32 index tensor.

    Cost [R]: two GatherMask passes (see the module docstring): ``Extract.GatherMask``
    at the score's GatherMask rate (64 half / 32 float elements per cycle) and again at
    32 for the indices, each with its head. All three tensors 32 B aligned.

    Raises:
        DtypeError: no sort instructions on the SoC; scores not half/float; dstValue of
            another dtype than the scores; dstIndex not 4 bytes. LimitError: repeatTimes
            outside its range. AlignmentError, UbError: common rules.
    """
    ctx = _core.current_core()
    _check_sort_support(ctx, "Extract")
    dt = _check_score_dtype("Extract", sorted_)
    if dstValue.dtype != dt:
        raise DtypeError("Extract", f"dstValue is {dstValue.dtype.name}, sorted is {dt.name}",
                         pipe="PIPE_V")
    if dstIndex.dtype.itemsize != 4:
        raise DtypeError("Extract", f"dstIndex must be uint32, got {dstIndex.dtype.name}",
                         pipe="PIPE_V")
    repeat = _check_repeat("Extract", repeatTimes)
    n = SORT32_ELEMENTS * repeat
    data = _structs(sorted_, n, "Extract").copy()
    dstValue.elements(n, "Extract")[...] = data["score"]
    dstIndex.elements(n, "Extract")[...] = data["index"].view(dstIndex.dtype)
    issue_vector(ctx, "Extract.GatherMask", n, RATE_GATHER_MASK[dt.itemsize], dstValue, (sorted_,),
                 src_nbytes=n * STRUCT_BYTES)
    issue_vector(ctx, "Extract.GatherMask", n, RATE_GATHER_MASK[4], dstIndex, (sorted_,),
                 src_nbytes=n * STRUCT_BYTES)


# -- Sort (library routine) ----------------------------------------------------------------
def Sort(dst: LocalTensor, concat: LocalTensor, index: LocalTensor, tmp: LocalTensor,
         repeatTimes: int, isFullSort: bool = True) -> None:
    """``Sort<T, isFullSort>(dst, concat, index, tmp, repeatTimes)``: sort ``32 * repeatTimes``
    scores descending with their uint32 indices into (score, index) structures in ``dst``.

    A library routine: Sort32 on every group of 32, then (isFullSort) rounds of four-queue
    MrgSort between ``dst`` and ``tmp`` until one queue is left, each instruction costed as
    itself. ``tmp`` must hold as many structures as ``dst``. Stable (module docstring).
    """
    repeat = _check_repeat("Sort", repeatTimes)
    Sort32(dst, concat, index, repeat)
    if not isFullSort or repeat <= 1:
        return
    n = SORT32_ELEMENTS * repeat
    run = SORT32_ELEMENTS
    src, out = dst, tmp
    words = STRUCT_BYTES // dst.dtype.itemsize        # elements of T per structure
    while run < n:
        groups = n // (4 * run)
        if groups:                                      # full groups of four queues
            reps = groups
            while reps:
                r = min(reps, 255)
                base = (groups - reps) * 4 * run
                lst = MrgSortSrcList(*(src[(base + q * run) * words] for q in range(4)))
                MrgSort(out[base * words], lst, [run] * 4, None, 0b1111, r)
                reps -= r
        rest = n - groups * 4 * run
        if rest:                                        # 1-3 queues left over
            base = groups * 4 * run
            lens = [min(run, rest - q * run) for q in range(-(-rest // run))]
            if len(lens) == 1:
                _copy_structs(out[base * words], src[base * words], lens[0])
            else:
                lst = MrgSortSrcList(*(src[(base + q * run) * words] for q in range(len(lens))))
                MrgSort(out[base * words], lst, lens + [0] * (4 - len(lens)), None,
                        (1 << len(lens)) - 1, 1)
        src, out = out, src
        run *= 4
    if src is not dst:
        _copy_structs(dst, src, n)


def _copy_structs(dst: LocalTensor, src: LocalTensor, count: int) -> None:
    """UB -> UB DataCopy of ``count`` structures (PIPE_V)."""
    from npusim.ascendc.datacopy import DataCopy
    words = STRUCT_BYTES // src.dtype.itemsize
    DataCopy(dst, src, count * words)


# -- IndexCast -----------------------------------------------------------------------------
#: Cast chain (instruction, elements/cycle) per source type, from the §2.1 Cast rows: int64
#: 32/cycle; int8/uint8/bool and int16 go through half or float at 128/64; double has no
#: vector Cast on A2 (an AI CPU task in CANN) and is costed like int64 [R].
_INDEX_CAST_CHAIN = {
    "int32": (),
    "int64": (("Cast.s642s32", 32),),
    "float64": (("Cast.f642s32", 32),),
    "float32": (("Cast.f322s32", 64),),
    "float16": (("Cast.f162s32", 64),),
    "int16": (("Cast.s162f32", 64), ("Cast.f322s32", 64)),
    "int8": (("Cast.s82f16", 128), ("Cast.f162s32", 64)),
    "uint8": (("Cast.u82f16", 128), ("Cast.f162s32", 64)),
    "bool": (("Cast.u82f16", 128), ("Cast.f162s32", 64)),
}

_I32_MIN, _I32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


def index_cast_values(x: np.ndarray) -> np.ndarray:
    """Host form of IndexCast's arithmetic (for goldens): ``x`` converted to int32."""
    x = np.asarray(x)
    if x.dtype.kind == "f" or x.dtype == np.dtype(ml_dtypes.bfloat16):
        xd = x.astype(np.float64)
        y = np.trunc(np.nan_to_num(xd, nan=0.0, posinf=_I32_MAX, neginf=_I32_MIN))
        return np.clip(y, _I32_MIN, _I32_MAX).astype(np.int32)
    return np.clip(x.astype(np.int64), _I32_MIN, _I32_MAX).astype(np.int32)


def IndexCast(dst: LocalTensor, src: LocalTensor, count: int) -> None:
    """Cast ``count`` indices of any aclnn index type to int32 (``dst``).

    This is Ascend C ``Cast`` for the conversions ``l0op::Cast(indices, DT_INT32)`` performs
    on embedding indices. It has its own name only because ``vector.Cast`` covers float and
    half sources but not int64, int16, int8, uint8, bool or double; it should be folded into
    ``vector.Cast``.

    Arithmetic: floats are truncated toward zero (C conversion) and NaN gives 0 [R];
    every source saturates to the int32 range [R: the saturation of Cast to int32 on A2 is
    not documented; saturation keeps an out-of-range index out of range]. Cost: the §2.1
    Cast rows of the chain in ``_INDEX_CAST_CHAIN``.
    """
    ctx = _core.current_core()
    if dst.dtype != _I32:
        raise DtypeError("IndexCast", f"dst must be int32, got {dst.dtype.name}", pipe="PIPE_V")
    name = "bool" if src.dtype == np.dtype(np.bool_) else src.dtype.name
    chain = _INDEX_CAST_CHAIN.get(name)
    if chain is None:
        raise DtypeError("IndexCast", f"no Cast from {src.dtype.name} to int32", pipe="PIPE_V")
    count = int(count)
    ctx.batch_ok = ctx.is_group        # element by element: a lockstep group runs it at once
    try:
        dst.elements(count, "IndexCast")[...] = index_cast_values(src.elements(count,
                                                                                "IndexCast"))
    finally:
        ctx.batch_ok = False
    for step, rate in chain:
        issue_vector(ctx, step, count, rate, dst, (src,))


__all__ = ["CreateVecIndex", "Sort32", "MrgSort", "MrgSortSrcList", "GetMrgSortResult",
           "Extract", "Sort", "IndexCast", "index_cast_values", "RATE_SORT", "STRUCT_BYTES",
           "SORT32_ELEMENTS", "MRGSORT_MAX_QUEUE"]
