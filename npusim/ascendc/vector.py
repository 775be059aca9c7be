"""Vector instructions on PIPE_V (the "first n elements" form of each Ascend C API).

This docstring holds the rules every PIPE_V instruction of :mod:`npusim.ascendc` shares
(this module, :mod:`~npusim.ascendc.arith`, :mod:`~npusim.ascendc.compare`,
:mod:`~npusim.ascendc.reduce`, :mod:`~npusim.ascendc.gather`,
:mod:`~npusim.ascendc.transpose`, :mod:`~npusim.ascendc.broadcast`,
:mod:`~npusim.ascendc.sort`, UB -> UB :func:`~npusim.ascendc.datacopy.DataCopy` and
:func:`~npusim.ascendc.datacopy.Copy`); each instruction's docstring states only what
differs.

Forms. ``Xxx(dst, src..., count)`` (level 2) works on the first ``count`` elements of
each operand (``count * sizeof(T)`` bytes from the tensor's start) and leaves the mask
register in Normal mode with every lane on (掩码.md: the level-2 APIs switch to Counter
mode internally and restore it; :func:`level2_done`). ``Xxx(dst, src..., mask,
repeatTime[, repeatParams])`` (level 0) walks UB in repeats of 256 B with block and repeat
strides in 32 B units, under a continuous or ``[low, high]`` bit mask, or the mask
register when ``isSetMask=False``: the rules are those of :mod:`npusim.ascendc.repeat`
(高维切分.md, 掩码.md; docs/reference/hardware.md §3 "Vector instructions").
``repeatParams`` is a BinaryRepeatParams (two sources) or UnaryRepeatParams (one),
contiguous (blkStride 1, repStride 8) when omitted.

Dtypes. Every operand of an element-wise instruction has one dtype, the tensor's
(operands that mix dtypes raise :class:`DtypeError`). The tables below are those of
Atlas A2/A3 (Add.md and the other API pages; docs/reference/hardware.md §1.1
"Intrinsic"); bfloat16 has no vector arithmetic on A2/A3, the first-generation 910 or the
310P: such a call raises :class:`DtypeError` — Cast it to float first, as real kernels do.

Alignment. Every UB operand starts 32 B aligned (通用说明和约束.md; docs/reference/hardware.md
§3 "Memory and alignment"), for a LocalTensor view too (``t[3]`` of a float tensor is
not): :class:`AlignmentError` otherwise (:func:`issue_vector`). The element count of the
level-2 form needs no alignment. Each operand's lanes stay inside its tensor's buffer:
:class:`UbError` otherwise.

Overlap (通用说明和约束.md "地址重叠约束"; docs/reference/hardware.md §3). A source and the
destination overlap completely (in place: ``Add(x, x, y, n)``) or not at all. In the
level-0 form the simulator checks it lane by lane: a partial overlap within a repeat, or
a later repeat reading what an earlier one wrote, is a checker finding (:class:`UbError`,
:func:`npusim.ascendc.repeat.report_overlap`), except the accumulation idiom of
Add/Sub/Mul/Max/Min/AddRelu/SubRelu (dst on src1, src1RepStride or dstRepStride 0), which
runs repeat by repeat as the unit issues them. A call with a finding also runs repeat by
repeat, each repeat reading its blocks before writing its results — the unit's steps as
通用说明和约束.md describes them — which is what the device-like checker
(``CheckerConfig.device_like``) lets it do, with a warning. The level-2 form is not checked
for overlap; use it in place or on disjoint buffers.

Numerics: every instruction rounds its result to the destination dtype, as the vector
unit does; fp16 arithmetic is done by numpy's float16 loops, which round each result
once (float32 carries enough bits that the intermediate is exact for + - * / sqrt).
Exp, Ln and Power, which IEEE 754 does not round correctly and numpy computes by a SIMD
path chosen by the host's CPU, are computed by :mod:`npusim.ascendc.portable_math` from
basic operations in float64 and rounded once: every result is the same bytes on every
host. Floating-point exceptions are ignored (inf and NaN propagate); with
``SetSaturationFlag(true)`` half results clamp inf to ±65504 and NaN to 0 and int16/int32
results saturate (:func:`_compute`; docs/reference/hardware.md §2.1 "Numerics").

NaN results [R: the hardware's NaN encoding is not published; this is the simulator's
choice]: every float result an arithmetic or conversion instruction writes (float32,
half, bfloat16) has its NaNs replaced by the one positive quiet NaN of its type — float32
0x7FC00000, half 0x7E00, bfloat16 0x7FC0 — whatever sign and payload the host's
floating-point unit gave it (x86-64 makes 0xFFC00000 for ``inf - inf``, arm64
0x7FC00000). This covers the element-wise instructions (Max, Min, Abs and Relu of a NaN
included), Cast, the reductions, Mmad and Fixpipe's conversions, and atomic adds into GM
(:mod:`npusim.ascendc.nans`). Data movement keeps a NaN's bytes: DataCopy, Copy,
DataCopyPad, Gather, Brcb, Transpose, Select, Sort, Duplicate and GetValue/SetValue move
bits unchanged.

Pipe and cost (docs/reference/hardware.md §2.1; docs/calibration.md "Costs of instruction
classes", "UB bank conflicts"). Every instruction is one record on PIPE_V costing::

    vec_head_cycles + ceil(count / rate) + conflicts          (level 2)
    vec_head_cycles + repeatTime * ceil(lanes / rate) + conflicts   (level 0)

``rate`` is the published elements per cycle per AIV of the instruction and dtype
(:data:`RATE_SIMPLE` 128 for 16-bit / 64 for 32-bit types, :data:`RATE_SLOW` 32,
:data:`RATE_CAST` 64, and the rates each module lists); ``lanes`` the lanes of one 256 B
repeat of the widest operand: a level-0 repeat costs its 256 B whatever the mask.
``vec_head_cycles`` is the SoC's fixed head (22 on A2/A3, assumed: calibration.md).
``conflicts`` are the cycles by which the repeats' UB bank accesses outlast their
compute (:mod:`npusim.ascendc.ubbank`: read-read and write-write in a bank group,
read-write in a bank, the delayed-write exemption): lay operands out in different bank
groups to avoid them. ``count = 0`` or ``repeatTime = 0`` is a NOP that still costs the
head (§2.1).

Errors, common to all: :class:`DtypeError` (dtype not in the table, mixed dtypes,
bfloat16 arithmetic); :class:`AlignmentError` (an operand not 32 B aligned);
:class:`UbError` (a lane beyond its buffer; a forbidden overlap, a checker finding);
:class:`LimitError` (level 0: repeatTime outside [0, 255], a stride outside [0, 255], a
mask out of range, repeat params that do not fit the number of sources;
:mod:`npusim.ascendc.repeat`). Race and uninitialised-read findings come from the
checker (:mod:`npusim.ascendc.checker`).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from npusim import lockstep as _lockstep
from npusim.ascendc import core as _core
from npusim.ascendc import nans as _nans
from npusim.ascendc import portable_math as _pmath
from npusim.ascendc import repeat as _repeat
from npusim.ascendc import timing_only as _timing_only
from npusim.ascendc import ubbank as _ubbank
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.types import PIPE_V, RoundMode
from npusim.errors import AlignmentError, DtypeError, LimitError

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_BF16 = np.dtype(ml_dtypes.bfloat16)
_I16, _I32 = np.dtype(np.int16), np.dtype(np.int32)

_I8, _U8 = np.dtype(np.int8), np.dtype(np.uint8)

_FLOATS = (_F16, _F32)
#: dtypes of the arithmetic vector instructions on A2/A3 (Add: int16, half, int32, float;
#: docs/reference/hardware.md §1.1).
ARITH_TYPES = (_F16, _F32, _I16, _I32)

# elements per cycle for 16-bit and 32-bit operands (docs/reference/hardware.md §2.1)
RATE_SIMPLE = {2: 128, 4: 64}      # Add/Sub/Mul/Max/Min/Adds/Muls/Abs/Duplicate...
RATE_SLOW = {2: 32, 4: 32}         # Exp, Ln, Sqrt, Div
RATE_CAST = 64                     # half<->float, float<->bf16/int32


def issue_vector(ctx, name: str, count: int, rate: float, dst: LocalTensor | None = None,
                 srcs: tuple = (), dst_nbytes: int | None = None,
                 src_nbytes: int | None = None, repeats: int | None = None,
                 lanes: int | None = None, tracked: bool = False,
                 strides: tuple | None = None) -> None:
    """Record one PIPE_V instruction over ``count`` elements at ``rate`` elements/cycle.

    ``dst`` and ``srcs`` are the UB operands (used for the UB bank-conflict cost). Other
    instruction modules (compare, sort...) call this so every vector instruction is costed
    the same way.

    Cost: ``vec_head_cycles + ceil(count / rate) + conflicts``. A level-0 call (``repeats``
    given, ``lanes`` elements per repeat) costs what its repeats do whatever the mask:
    ``repeats * ceil(lanes / rate)`` (a repeat moves its 256 B however many lanes are on;
    docs/reference/hardware.md §2.1, §3). ``conflicts`` are the cycles by which the repeats'
    UB bank accesses outlast their compute (:mod:`npusim.ascendc.ubbank`: read-read and
    write-write in a bank group, read-write in a bank, with the delayed-write exemption);
    ``strides`` are the level-0 ``(blkStride, repStride)`` of dst and each source in 32 B
    blocks (contiguous when None). Operands given by ``dst_nbytes`` / ``src_nbytes`` span
    those bytes evenly over the repeats.

    Checks: every operand starts 32 B aligned in UB (docs/reference/hardware.md §3); the
    checker's race and uninitialised-read tracking sees ``count`` elements of each operand
    (or ``dst_nbytes`` / ``src_nbytes`` bytes, for instructions whose operands are not
    element-for-element, such as a compare's bit mask) unless the caller ``tracked`` the
    exact lanes itself (:mod:`npusim.ascendc.repeat`).
    """
    if dst is not None and dst.offset & 31:
        _misaligned(name, dst)
    for t in srcs:
        if t.offset & 31:
            _misaligned(name, t)
    tracker = ctx.tracker
    if tracker is not None and not tracked:
        for t in srcs:
            tracker.read(ctx, PIPE_V, t.offset,
                         src_nbytes if src_nbytes is not None else count * t.dtype.itemsize, name)
        if dst is not None:
            tracker.write(ctx, PIPE_V, dst.offset,
                          dst_nbytes if dst_nbytes is not None else count * dst.dtype.itemsize, name)
    ctx.record(_core.OP, PIPE_V, _cycles(ctx.soc, count, rate, dst, srcs, dst_nbytes,
                                         src_nbytes, repeats, lanes, strides), 0, None, name)


#: _cycles' results by what they read (the SoC's, :func:`cost_key`; the operands' UB
#: offsets and element sizes; the form's numbers); cleared when full
_CYCLES_KEPT: dict = {}
_CYCLES_KEEP = 1 << 14


def _cycles(soc, count, rate, dst, srcs, dst_nbytes=None, src_nbytes=None, repeats=None,
            lanes=None, strides=None):
    """The cost :func:`issue_vector` records (its docstring): head + compute + conflicts.
    A kernel issues the same few instructions on the same UB offsets tile after tile, so
    the cost is kept by what it reads (the bank model's own memo still builds its operands
    first, which costs more than the lookup)."""
    try:
        # the types too: the cost is an int or a float, a numpy or a Python number, as
        # the count and the rate are
        key = (cost_key(soc), count, rate, type(count), type(rate),
               None if dst is None else (dst.offset, dst.dtype.itemsize),
               tuple([(t.offset, t.dtype.itemsize) for t in srcs]), dst_nbytes, src_nbytes,
               repeats, lanes, strides)
        kept = _CYCLES_KEPT.get(key)
    except TypeError:               # an argument that cannot be a key (a list of strides)
        return _cost(soc, count, rate, dst, srcs, dst_nbytes, src_nbytes, repeats, lanes,
                     strides)
    if kept is None:
        if len(_CYCLES_KEPT) >= _CYCLES_KEEP:
            _CYCLES_KEPT.clear()
        kept = _CYCLES_KEPT[key] = _cost(soc, count, rate, dst, srcs, dst_nbytes, src_nbytes,
                                         repeats, lanes, strides)
    return kept


def _cost(soc, count, rate, dst, srcs, dst_nbytes, src_nbytes, repeats, lanes, strides):
    """:func:`_cycles`, computed."""
    if repeats is None:
        cycles = -(-count // rate)
    else:
        cycles = repeats * -(-lanes // rate)
    if dst is not None or srcs:
        cycles += _conflict_cost(soc, count, rate, dst, srcs, dst_nbytes, src_nbytes,
                                 repeats, lanes, strides)
    return soc.vec_head_cycles + cycles


def level2_cycles(soc, count: int, rate: float, dst: LocalTensor | None,
                  srcs: tuple = ()) -> int:
    """Cycles :func:`issue_vector` records for a level-2 instruction over the first ``count``
    elements of contiguous operands (head + compute + UB bank conflicts), without recording
    it: for simulator fast paths that cost a batch of such instructions at once."""
    return _cycles(soc, int(count), rate, dst, srcs)


def cost_key(soc) -> tuple:
    """What :func:`level2_cycles` (and :func:`issue_vector`'s cost) reads of a SoC: the
    vector head cycles and the UB bank layout. Memos of those costs key on it rather than on
    the SoC's id, which a SoC made for one launch (``dataclasses.replace``) can leave to
    another with other banks."""
    return (soc.vec_head_cycles, *_ubbank.layout(soc))


def _conflict_cost(soc, count, rate, dst, srcs, dst_nbytes, src_nbytes, repeats, lanes,
                   strides) -> int:
    """Cycles the UB bank conflicts of one instruction add (:mod:`npusim.ascendc.ubbank`).

    A repeat covers 256 B of the widest element-for-element operand; an operand given in
    bytes (a compare's bit mask, sort structures) spans its bytes evenly over the repeats.
    """
    ops = ([(dst, dst_nbytes)] if dst is not None else []) + [(s, src_nbytes) for s in srcs]
    sized = [t.dtype.itemsize for t, nb in ops if nb is None]
    if repeats is None:
        lanes = 256 // max(sized) if sized else 256
        repeats = -(-count // lanes)
        per_repeat = lanes / rate
    else:
        per_repeat = float(-(-lanes // rate))
    if repeats <= 0:
        return 0

    def spec(t, nbytes, st):
        if nbytes is not None:
            span = -(-nbytes // repeats)
            return _ubbank.operand(t.offset, -(-span // 32), 32, span)
        blocks = -(-lanes * t.dtype.itemsize // 32)
        if st is None:
            return _ubbank.operand(t.offset, blocks)
        return _ubbank.operand(t.offset, blocks, int(st[0]) * 32, int(st[1]) * 32)

    st = strides or (None,) * (len(srcs) + 1)
    extra = _ubbank.conflict_cycles(
        _ubbank.layout(soc), int(repeats), per_repeat,
        spec(dst, dst_nbytes, st[0]) if dst is not None else None,
        tuple([spec(s, src_nbytes, x) for s, x in zip(srcs, st[1:])]))
    return int(-(-extra // 1))


def _misaligned(name: str, t: LocalTensor):
    raise AlignmentError(name, f"UB operand at 0x{t.offset:x} is not 32 B aligned "
                         "(docs/reference/hardware.md §3)", pipe="PIPE_V")


def _bank_conflict(banks: int, groups: int, dst_offset: int, src_offsets: tuple,
                   repeats: int = 1) -> bool:
    """Whether a contiguous 256 B-per-repeat instruction's operands collide in the UB banks.

    ``banks`` / ``groups``: the SoC's UB banks and bank groups (48 / 16 on A2/A3, 128 rows
    of 32 B each); UB byte offsets of the destination and the sources; ``repeats`` the
    repeats to look at. The rules and the exemption are those of
    :mod:`npusim.ascendc.ubbank` (docs/reference/hardware.md §2 "UB banks (2201)"); the cost is
    :func:`npusim.ascendc.ubbank.conflict_cycles`.
    """
    lay = (groups, groups * 128)
    extra = _ubbank.conflict_cycles(lay, repeats, 1.0, _ubbank.operand(dst_offset, 8),
                                    tuple(_ubbank.operand(o, 8) for o in src_offsets))
    return extra > 0


def check_dtype(ctx, name: str, dtype: np.dtype, allowed) -> None:
    if dtype == _BF16 and not ctx.soc.supports_bf16_vector:
        raise DtypeError(name, f"bfloat16 arithmetic is not supported by the vector unit of "
                         f"{ctx.soc.soc_version} (docs/reference/hardware.md §1.1); Cast to float first",
                         pipe="PIPE_V")
    if dtype not in allowed:
        raise DtypeError(name, f"{dtype.name} is not a supported type of {name} "
                         f"(supported: {', '.join(d.name for d in allowed)})", pipe="PIPE_V")


def same_dtype(name: str, *tensors: LocalTensor) -> np.dtype:
    dt = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype != dt:
            raise DtypeError(name, f"operands mix {dt.name} and {t.dtype.name}", pipe="PIPE_V")
    return dt


def elementwise(name, ufunc, allowed, rate_table, dst, srcs, args, scalar=None,
                isSetMask: bool = True):
    """dst = ufunc(*srcs[, scalar]), rounded to dst's type, in either Ascend C form.

    ``args`` are the call's trailing arguments: ``(count,)`` (or a bare count) — the first
    ``count`` elements (level 2) — or ``(mask, repeatTime[, repeatParams])`` — the level-0
    form (:mod:`npusim.ascendc.repeat`; params default to contiguous).
    """
    ctx = _core.current_core()
    dt = dst.dtype
    for src in srcs:
        if src.dtype != dt:
            same_dtype(name, dst, *srcs)            # raises, naming both dtypes
    if dt not in allowed or dt == _BF16:
        check_dtype(ctx, name, dt, allowed)         # raises unless the SoC allows it
    # floating-point exceptions are ignored for the whole launch (npusim.launch), as the
    # vector unit does: inf and NaN propagate
    run_forms(ctx, name, lambda *v, out: _compute(ctx, ufunc, v, scalar, dt, out), dst, srcs,
              args, rate_table[dt.itemsize], isSetMask, batch=True)


def run_forms(ctx, name: str, fn, dst: LocalTensor, srcs: tuple, args, rate: float,
              is_set_mask: bool = True, batch: bool = False) -> None:
    """Run ``dst = fn(*srcs)`` in the form ``args`` selects, and record it.

    ``args``: ``(count,)`` (or a bare count) — the first ``count`` elements of every
    operand (level 2) — or ``(mask, repeatTime[, params])`` — the level-0 form, through
    :func:`run_level0` (``params`` may also be the ``(blkStride, repStride)`` pairs of dst
    and each source, for instructions whose operands do not map onto Binary/
    UnaryRepeatParams one to one). ``fn(*values, out=array)`` computes one array.

    ``batch``: ``fn`` is element by element, so in a lockstep group (:mod:`npusim.lockstep`)
    either form runs once on the members' stacked views (``[G, count]``, or ``[G, repeat,
    lanes]`` at level 0); otherwise a group splits into single blocks here.
    """
    if type(args) is tuple and len(args) > 1:
        run_level0(ctx, name, fn, dst, srcs, args, rate, is_set_mask, batch=batch)
        return
    count = int(args[0] if type(args) is tuple else args)
    if _timing_only.ACTIVE:           # the operands' bounds checked, the arithmetic skipped
        _skip_level2(ctx, name, dst, srcs, count, batch)
    elif ctx.is_group and batch:
        ctx.batch_ok = True
        try:
            fn(*[src.elements(count, name) for src in srcs], out=dst.elements(count, name))
        finally:
            ctx.batch_ok = False
    else:
        fn(*[src.elements(count, name) for src in srcs], out=dst.elements(count, name))
    level2_done(ctx)
    issue_vector(ctx, name, count, rate, dst, srcs)


def _skip_level2(ctx, name: str, dst: LocalTensor, srcs: tuple, count: int, batch: bool):
    """A timing-only level-2 call: the operands' views (their bounds checks; a group that
    is not batch-aware splits as a functional run would), no arithmetic; dst's elements
    are flagged not computed."""
    if ctx.is_group and batch:
        ctx.batch_ok = True
    try:
        for t in (*srcs, dst):
            t.elements(count, name)
    finally:
        ctx.batch_ok = False
    _timing_only.flag_elements(ctx, dst, count)


def _compute(ctx, ufunc, ins, scalar, dt, out) -> None:
    """out = ufunc(*ins[, scalar]) in dt; with SetSaturationFlag(true) half results clamp
    inf to ±65504 and NaN to 0, and int16/int32 results saturate instead of wrapping
    (Memory矢量计算接口边界值汇总.md; docs/reference/hardware.md §2.1 "Numerics"); float NaN
    results are the canonical NaN of dt (:mod:`npusim.ascendc.nans`)."""
    if scalar is not None:
        # the instruction takes a scalar of type T: rounded first (one per member in a group
        # whose members read different values)
        ins = [*ins, _lockstep.member_scalar(dt, scalar, out.ndim)]
    if not ctx.saturation:
        ufunc(*ins, out=out)
        if dt.kind == "f":
            _nans.canonical(out)            # the one NaN of T, whatever the host made
        return
    if dt.kind == "i":
        wide = np.empty(out.shape, dtype=np.int64)
        ufunc(*[np.asarray(x).astype(np.int64) for x in ins], out=wide)
        info = np.iinfo(dt)
        out[...] = np.clip(wide, info.min, info.max)
        return
    ufunc(*ins, out=out)
    if dt == _F16:
        np.nan_to_num(out, copy=False, nan=0.0, posinf=65504.0, neginf=-65504.0)
    elif dt.kind == "f":
        _nans.canonical(out)


def level2_done(ctx) -> None:
    """A level-2 ("first n elements") API runs in Counter mode and restores Normal mode
    and a full mask afterwards (掩码.md), so the mask register is reset by it."""
    if ctx.mask_counter or ctx.vector_mask != _core.FULL_MASK:
        ctx.mask_counter = False
        ctx.vector_mask = _core.FULL_MASK


#: Instructions allowed to accumulate into src1 across repeats (通用说明和约束.md).
_ACCUMULATE = frozenset({"Add", "Sub", "Mul", "Max", "Min", "AddRelu", "SubRelu"})


def run_level0(ctx, name: str, fn, dst: LocalTensor, srcs: tuple, args: tuple, rate: float,
               is_set_mask: bool = True, lanes: int | None = None,
               pass_rows: bool = False, call: _repeat.Level0 | None = None,
               batch: bool = False) -> _repeat.Level0:
    """Run ``dst = fn(*srcs)`` as a level-0 call and record it.

    ``args`` is ``(mask, repeatTime[, repeatParams])`` with Binary- or UnaryRepeatParams
    (as the number of sources says), or the ``(blkStride, repStride)`` pairs of dst and
    each source; ``fn(*values, out=array)`` computes one array of
    lanes. ``lanes`` per repeat defaults to 256 B of the widest operand. With
    ``pass_rows``, ``fn`` also gets ``rows=``, the slice of repeats its arrays hold (for
    instructions whose operands vary per repeat beyond the sources, e.g. Select's mask).
    ``call``: the active lanes, resolved by the caller (for instructions whose mask or
    stride rules differ from the common ones, e.g. Copy); the caller checks the strides.
    ``batch``: ``fn`` is element by element (and takes no ``rows``), so a lockstep group
    runs the call once on its members' stacked ``[G, repeat, lanes]`` values; otherwise a
    group splits into single blocks at the first UB access.

    Raises:
        LimitError: repeatTime > 255, strides > 255, a mask out of range.
        UbError: a lane beyond its operand's buffer; an address overlap the Ascend C
            rules forbid (a checker finding).
    """
    if batch and ctx.is_group and not pass_rows:
        ctx.batch_ok = True
        try:
            return _level0(ctx, name, fn, dst, srcs, args, rate, is_set_mask, lanes, pass_rows,
                           call)
        finally:
            ctx.batch_ok = False
    return _level0(ctx, name, fn, dst, srcs, args, rate, is_set_mask, lanes, pass_rows, call)


def _level0(ctx, name, fn, dst, srcs, args, rate, is_set_mask, lanes, pass_rows, call):
    """:func:`run_level0`, in a group with its UB reachable when batched."""
    mask, repeat_time = args[0], args[1]
    params = args[2] if len(args) > 2 else (
        _repeat.BinaryRepeatParams() if len(srcs) > 1 else _repeat.UnaryRepeatParams())
    strides = params.strides() if hasattr(params, "strides") else tuple(params)
    if len(strides) != len(srcs) + 1:
        raise LimitError(name, f"{type(params).__name__} does not fit a {len(srcs)}-source "
                         "instruction", pipe="PIPE_V")
    if call is None:
        _repeat.check_strides(name, strides)
    widest = max([dst.dtype.itemsize, *[s.dtype.itemsize for s in srcs]])
    lanes = lanes or _repeat._lanes_of(np.dtype(f"u{widest}"))
    if call is None:
        call = _repeat.resolve(ctx, name, lanes, mask, repeat_time, is_set_mask)
    d_idx = _repeat.lane_index(dst.dtype.itemsize, call, *strides[0])
    s_idx = [_repeat.lane_index(s.dtype.itemsize, call, *st) for s, st in zip(srcs, strides[1:])]
    for t, idx in ((dst, d_idx), *zip(srcs, s_idx)):
        _repeat.lanes_view(t, idx, call, name)      # bounds first: UbError names the operand
    kind = _repeat.overlap(dst, d_idx, srcs, s_idx, call) if call.repeat else None
    if kind == "partial" or (kind == "sequential" and
                             (name not in _ACCUMULATE or len(srcs) < 2)):
        _repeat.report_overlap(ctx, name, kind, ordered=True)   # run by _steps below
    if _timing_only.ACTIVE:           # bounds and overlap checked above: no arithmetic
        _level0_timing_only(name, dst, d_idx, srcs, s_idx, call, lanes, kind,
                            kind == "sequential" and not pass_rows
                            and _accumulates(dst, d_idx, srcs, s_idx, call))
        issue_vector(ctx, name, call.count, rate, dst, srcs, repeats=call.repeat, lanes=lanes,
                     tracked=True, strides=strides)
        return call
    if kind == "sequential" and not pass_rows and _accumulates(dst, d_idx, srcs, s_idx, call):
        _accumulate(name, fn, dst, d_idx, srcs[0], s_idx[0], call)
        issue_vector(ctx, name, call.count, rate, dst, srcs, repeats=call.repeat, lanes=lanes,
                     tracked=True, strides=strides)
        return call
    for sub, rows in _steps(call, lanes, kind):
        if not sub.active.any():
            continue
        vals = [_repeat.read(s, i[rows], sub, name) for s, i in zip(srcs, s_idx)]
        lead = (ctx.size,) if ctx.is_group else ()       # the members' axis (batched)
        out = np.empty(lead + d_idx[rows].shape, dtype=dst.dtype)
        if pass_rows:
            fn(*vals, out=out, rows=rows)
        else:
            fn(*vals, out=out)
        _repeat.write(dst, d_idx[rows], sub, out, name)
    issue_vector(ctx, name, call.count, rate, dst, srcs, repeats=call.repeat, lanes=lanes,
                 tracked=True, strides=strides)
    return call


def _steps(call, lanes, kind) -> list:
    """(call, rows) pieces a level-0 call runs in: the whole call at once, or, when a later
    repeat reads an earlier one's result (``kind`` not None), repeat by repeat, as the unit
    issues them."""
    if kind is None:
        return [(call, slice(None))]
    return [(_repeat.Level0(1, lanes, call.active[r:r + 1]), slice(r, r + 1))
            for r in range(call.repeat)]


def _level0_timing_only(name, dst, d_idx, srcs, s_idx, call, lanes, kind,
                        accumulates) -> None:
    """What a level-0 call does in a timing-only launch: the checker sees the lanes read
    and written in the order the functional run reads and writes them (repeat by repeat
    when a later repeat reads an earlier one's result); dst's lanes are flagged not
    computed."""
    track = _repeat._track
    if accumulates:
        first = _repeat.Level0(1, call.lanes, call.active[:1])
        track(dst.ctx, dst, d_idx[:1], first, name, write=False)
        track(srcs[0].ctx, srcs[0], s_idx[0], call, name, write=False)
        track(dst.ctx, dst, d_idx[:1], first, name, write=True)
    elif dst.ctx.tracker is not None:
        for sub, rows in _steps(call, lanes, kind):
            if not sub.active.any():
                continue
            for s, i in zip(srcs, s_idx):
                track(s.ctx, s, i[rows], sub, name, write=False)
            track(dst.ctx, dst, d_idx[rows], sub, name, write=True)
    if call.active.any():
        _timing_only.flag_index(dst.ctx, dst, d_idx[call.active])


def _accumulates(dst, d_idx, srcs, s_idx, call) -> bool:
    """Whether a sequential call is the accumulation idiom: src1 is the destination, every
    repeat reads and writes the same lanes (dstRepStride = src1RepStride = 0) with the same
    mask, and src0 stays clear of the destination."""
    if len(srcs) != 2 or srcs[1].offset != dst.offset or srcs[1].dtype != dst.dtype:
        return False
    if not (np.array_equal(s_idx[1], d_idx) and (d_idx == d_idx[0]).all()
            and (call.active == call.active[0]).all()):
        return False
    isz = dst.dtype.itemsize
    d_lo, d_hi = dst.offset + int(d_idx.min()) * isz, dst.offset + (int(d_idx.max()) + 1) * isz
    s0 = srcs[0].offset + s_idx[0] * srcs[0].dtype.itemsize
    return int(s0.max()) + srcs[0].dtype.itemsize <= d_lo or int(s0.min()) >= d_hi


def _accumulate(name, fn, dst, d_idx, src0, s0_idx, call) -> None:
    """dst = fn(src0[r], dst) for r = 0, 1, ... in order — each step rounded to dst's type,
    as the repeats issue one after another — read and written once."""
    first = _repeat.Level0(1, call.lanes, call.active[:1])
    acc = _repeat.read(dst, d_idx[:1], first, name).copy()
    rows = _repeat.read(src0, s0_idx, call, name)
    step = np.empty_like(acc)
    for r in range(call.repeat):
        fn(rows[..., r:r + 1, :], acc, out=step)
        acc, step = step, acc
    _repeat.write(dst, d_idx[:1], first, acc, name)


def Add(dst, src0, src1, *args, isSetMask=True):
    """dst[i] = src0[i] + src1[i] for i < count.

    Forms: ``Add(dst, src0, src1, count)``; ``Add(dst, src0, src1, mask, repeatTime,
    BinaryRepeatParams)``. Dtypes: half, float, int16, int32 (A2/A3). Cost: 128 (16-bit) /
    64 (32-bit) elements per cycle. May accumulate into src1 across repeats (dst on src1,
    src1RepStride or dstRepStride 0; 通用说明和约束.md lists it for half/int32/float), run repeat
    by repeat with one rounding each. Alignment, overlap, cost terms and errors: the module
    docstring. Source: Ascend C API page Add (Add.md, 双目指令; docs/reference/hardware.md §2.1,
    §3).
    """
    elementwise("Add", np.add, ARITH_TYPES, RATE_SIMPLE, dst, (src0, src1), args,
                isSetMask=isSetMask)


def Sub(dst, src0, src1, *args, isSetMask=True):
    """dst[i] = src0[i] - src1[i].

    Forms: ``Sub(dst, src0, src1, count)``; ``Sub(dst, src0, src1, mask, repeatTime,
    BinaryRepeatParams)``. Dtypes: half, float, int16, int32 (A2/A3). Cost: 128 (16-bit) /
    64 (32-bit) elements per cycle. May accumulate into src1 across repeats (dst on src1,
    src1RepStride or dstRepStride 0; 通用说明和约束.md lists it for half/int32/float), run repeat
    by repeat with one rounding each. Alignment, overlap, cost terms and errors: the module
    docstring. Source: Ascend C API page Sub (Sub.md, 双目指令; docs/reference/hardware.md §2.1,
    §3).
    """
    elementwise("Sub", np.subtract, ARITH_TYPES, RATE_SIMPLE, dst, (src0, src1), args,
                isSetMask=isSetMask)


def Mul(dst, src0, src1, *args, isSetMask=True):
    """dst[i] = src0[i] * src1[i].

    Forms: ``Mul(dst, src0, src1, count)``; ``Mul(dst, src0, src1, mask, repeatTime,
    BinaryRepeatParams)``. Dtypes: half, float, int16, int32 (A2/A3). Cost: 128 (16-bit) /
    64 (32-bit) elements per cycle. May accumulate into src1 across repeats (dst on src1,
    src1RepStride or dstRepStride 0; 通用说明和约束.md lists it for half/int32/float), run repeat
    by repeat with one rounding each. Alignment, overlap, cost terms and errors: the module
    docstring. Source: Ascend C API page Mul (Mul.md, 双目指令; docs/reference/hardware.md §2.1,
    §3).
    """
    elementwise("Mul", np.multiply, ARITH_TYPES, RATE_SIMPLE, dst, (src0, src1), args,
                isSetMask=isSetMask)


def Div(dst, src0, src1, *args, isSetMask=True):
    """dst[i] = src0[i] / src1[i].

    Forms: ``Div(dst, src0, src1, count)``; ``Div(dst, src0, src1, mask, repeatTime,
    BinaryRepeatParams)``. Dtypes: half, float (A2/A3). Cost: 32 elements per cycle for half
    and float (§2.1). Alignment, overlap, cost terms and errors: the module docstring.
    Source: Ascend C API page Div (Div.md, 双目指令; docs/reference/hardware.md §2.1, §3).
    """
    elementwise("Div", np.divide, _FLOATS, RATE_SLOW, dst, (src0, src1), args,
                isSetMask=isSetMask)


def Max(dst, src0, src1, *args, isSetMask=True):
    """dst[i] = max(src0[i], src1[i]).

    Forms: ``Max(dst, src0, src1, count)``; ``Max(dst, src0, src1, mask, repeatTime,
    BinaryRepeatParams)``. Dtypes: half, float, int16, int32 (A2/A3). Cost: 128 (16-bit) /
    64 (32-bit) elements per cycle. May accumulate into src1 across repeats (dst on src1,
    src1RepStride or dstRepStride 0; 通用说明和约束.md lists it for half/int32/float), run repeat
    by repeat with one rounding each. Alignment, overlap, cost terms and errors: the module
    docstring. Source: Ascend C API page Max (Max.md, 双目指令; docs/reference/hardware.md §2.1,
    §3).
    """
    elementwise("Max", np.maximum, ARITH_TYPES, RATE_SIMPLE, dst, (src0, src1), args,
                isSetMask=isSetMask)


def Min(dst, src0, src1, *args, isSetMask=True):
    """dst[i] = min(src0[i], src1[i]).

    Forms: ``Min(dst, src0, src1, count)``; ``Min(dst, src0, src1, mask, repeatTime,
    BinaryRepeatParams)``. Dtypes: half, float, int16, int32 (A2/A3). Cost: 128 (16-bit) /
    64 (32-bit) elements per cycle. May accumulate into src1 across repeats (dst on src1,
    src1RepStride or dstRepStride 0; 通用说明和约束.md lists it for half/int32/float), run repeat
    by repeat with one rounding each. Alignment, overlap, cost terms and errors: the module
    docstring. Source: Ascend C API page Min (Min.md, 双目指令; docs/reference/hardware.md §2.1,
    §3).
    """
    elementwise("Min", np.minimum, ARITH_TYPES, RATE_SIMPLE, dst, (src0, src1), args,
                isSetMask=isSetMask)


def Adds(dst, src, scalar, *args, isSetMask=True):
    """dst[i] = src[i] + scalar (scalar rounded to the tensor's type).

    ``scalar`` is converted to T before the operation (so 0.1 becomes half(0.1) for a half
    tensor). Forms: ``Adds(dst, src, scalar, count)``; ``Adds(dst, src, scalar, mask,
    repeatTime, UnaryRepeatParams)``. Dtypes: half, float, int16, int32 (A2/A3). Cost: 128
    (16-bit) / 64 (32-bit) elements per cycle. Alignment, overlap, cost terms and errors:
    the module docstring. Source: Ascend C API page Adds (Adds.md, 标量双目指令;
    docs/reference/hardware.md §2.1, §3).
    """
    elementwise("Adds", np.add, ARITH_TYPES, RATE_SIMPLE, dst, (src,), args, scalar, isSetMask)


def Muls(dst, src, scalar, *args, isSetMask=True):
    """dst[i] = src[i] * scalar (scalar rounded to the tensor's type).

    ``scalar`` is converted to T before the operation (so 0.1 becomes half(0.1) for a half
    tensor). Forms: ``Muls(dst, src, scalar, count)``; ``Muls(dst, src, scalar, mask,
    repeatTime, UnaryRepeatParams)``. Dtypes: half, float, int16, int32 (A2/A3). Cost: 128
    (16-bit) / 64 (32-bit) elements per cycle. Alignment, overlap, cost terms and errors:
    the module docstring. Source: Ascend C API page Muls (Muls.md, 标量双目指令;
    docs/reference/hardware.md §2.1, §3).
    """
    elementwise("Muls", np.multiply, ARITH_TYPES, RATE_SIMPLE, dst, (src,), args, scalar, isSetMask)


def Maxs(dst, src, scalar, *args, isSetMask=True):
    """dst[i] = max(src[i], scalar).

    ``scalar`` is converted to T before the operation (so 0.1 becomes half(0.1) for a half
    tensor). Forms: ``Maxs(dst, src, scalar, count)``; ``Maxs(dst, src, scalar, mask,
    repeatTime, UnaryRepeatParams)``. Dtypes: half, float, int16, int32 (A2/A3). Cost: 128
    (16-bit) / 64 (32-bit) elements per cycle. Alignment, overlap, cost terms and errors:
    the module docstring. Source: Ascend C API page Maxs (Maxs.md, 标量双目指令;
    docs/reference/hardware.md §2.1, §3).
    """
    elementwise("Maxs", np.maximum, ARITH_TYPES, RATE_SIMPLE, dst, (src,), args, scalar, isSetMask)


def Mins(dst, src, scalar, *args, isSetMask=True):
    """dst[i] = min(src[i], scalar).

    ``scalar`` is converted to T before the operation (so 0.1 becomes half(0.1) for a half
    tensor). Forms: ``Mins(dst, src, scalar, count)``; ``Mins(dst, src, scalar, mask,
    repeatTime, UnaryRepeatParams)``. Dtypes: half, float, int16, int32 (A2/A3). Cost: 128
    (16-bit) / 64 (32-bit) elements per cycle. Alignment, overlap, cost terms and errors:
    the module docstring. Source: Ascend C API page Mins (Mins.md, 标量双目指令;
    docs/reference/hardware.md §2.1, §3).
    """
    elementwise("Mins", np.minimum, ARITH_TYPES, RATE_SIMPLE, dst, (src,), args, scalar, isSetMask)


def Sqrt(dst, src, *args, isSetMask=True):
    """dst[i] = sqrt(src[i]).

    Forms: ``Sqrt(dst, src, count)``; ``Sqrt(dst, src, mask, repeatTime,
    UnaryRepeatParams)``. Dtypes: half, float (A2/A3). Cost: 32 elements per cycle for half
    and float (§2.1). Alignment, overlap, cost terms and errors: the module docstring.
    Source: Ascend C API page Sqrt (Sqrt.md, 单目指令; docs/reference/hardware.md §2.1, §3).
    """
    elementwise("Sqrt", np.sqrt, _FLOATS, RATE_SLOW, dst, (src,), args,
                isSetMask=isSetMask)


def Exp(dst, src, *args, isSetMask=True):
    """dst[i] = exp(src[i]).

    Forms: ``Exp(dst, src, count)``; ``Exp(dst, src, mask, repeatTime, UnaryRepeatParams)``.
    Dtypes: half, float (A2/A3). Cost: 32 elements per cycle for half and float (§2.1).
    Alignment, overlap, cost terms and errors: the module docstring. Source: Ascend C API
    page Exp (Exp.md, 单目指令; docs/reference/hardware.md §2.1, §3).

    Numerics [R: the unit's exp rounding is not published]: computed in float64 by
    :func:`npusim.ascendc.portable_math.exp64` (IEEE-754 basic operations only, within
    1.2 float64 ulp) and rounded once to T: the correctly rounded result except within
    ~2**-50 of a midpoint (then 1 ulp off), the same bytes on every host. exp(+inf) = inf,
    exp(-inf) = 0, NaN -> NaN (0x7FC00000 / 0x7E00), overflow -> inf, underflow through
    the subnormals to 0.
    """
    elementwise("Exp", _pmath.exp, _FLOATS, RATE_SLOW, dst, (src,), args,
                isSetMask=isSetMask)


def Ln(dst, src, *args, isSetMask=True):
    """dst[i] = ln(src[i]).

    Forms: ``Ln(dst, src, count)``; ``Ln(dst, src, mask, repeatTime, UnaryRepeatParams)``.
    Dtypes: half, float (A2/A3). Cost: 32 elements per cycle for half and float (§2.1).
    Alignment, overlap, cost terms and errors: the module docstring. Source: Ascend C API
    page Ln (Ln.md, 单目指令; docs/reference/hardware.md §2.1, §3).

    Numerics [R: the unit's ln rounding is not published]: computed in float64 by
    :func:`npusim.ascendc.portable_math.log64` (IEEE-754 basic operations only, within
    1 float64 ulp) and rounded once to T: the correctly rounded result except within
    ~2**-50 of a midpoint (then 1 ulp off), the same bytes on every host. ln(+-0) = -inf,
    ln(x < 0) = NaN, ln(+inf) = inf, ln(1) = 0, subnormal inputs exact.
    """
    elementwise("Ln", _pmath.ln, _FLOATS, RATE_SLOW, dst, (src,), args,
                isSetMask=isSetMask)


def Abs(dst, src, *args, isSetMask=True):
    """dst[i] = |src[i]|.

    Forms: ``Abs(dst, src, count)``; ``Abs(dst, src, mask, repeatTime, UnaryRepeatParams)``.
    Dtypes: half, float (A2/A3). Cost: 128 (16-bit) / 64 (32-bit) elements per cycle.
    Alignment, overlap, cost terms and errors: the module docstring. Source: Ascend C API
    page Abs (Abs.md, 单目指令; docs/reference/hardware.md §2.1, §3).
    """
    elementwise("Abs", np.abs, _FLOATS, RATE_SIMPLE, dst, (src,), args,
                isSetMask=isSetMask)


def Reciprocal(dst, src, *args, isSetMask=True):
    """dst[i] = 1 / src[i].

    Forms: ``Reciprocal(dst, src, count)``; ``Reciprocal(dst, src, mask, repeatTime,
    UnaryRepeatParams)``. Dtypes: half, float (A2/A3). Cost: 128 (16-bit) / 64 (32-bit)
    elements per cycle. Alignment, overlap, cost terms and errors: the module docstring.
    Source: Ascend C API page Reciprocal (Reciprocal.md, 单目指令; docs/reference/hardware.md
    §2.1, §3).
    """
    elementwise("Reciprocal", np.reciprocal, _FLOATS, RATE_SIMPLE, dst, (src,), args,
                isSetMask=isSetMask)


def Relu(dst, src, *args, isSetMask=True):
    """dst[i] = max(src[i], 0).

    Forms: ``Relu(dst, src, count)``; ``Relu(dst, src, mask, repeatTime,
    UnaryRepeatParams)``. Dtypes: half, float, int32 (A2/A3). Cost: 128 (16-bit) / 64
    (32-bit) elements per cycle. Alignment, overlap, cost terms and errors: the module
    docstring. Source: Ascend C API page Relu (Relu.md, 单目指令; docs/reference/hardware.md
    §2.1, §3).
    """
    elementwise("Relu", lambda x, out: np.maximum(x, x.dtype.type(0), out=out),
                 (_F16, _F32, _I32), RATE_SIMPLE, dst, (src,), args,
                isSetMask=isSetMask)


def Duplicate(dst, scalar, *args, isSetMask=True):
    """dst[i] = scalar (16- and 32-bit types, bfloat16 included).

    ``scalar`` is converted to dst's type first. Forms: ``Duplicate(dst, scalar, count)``;
    level 0 ``Duplicate(dst, scalar, mask, repeatTime, dstBlockStride, dstRepeatStride)``
    (strides in 32 B blocks, 1 and 8 when omitted; no source, so no overlap rule). Dtypes:
    any 2- or 4-byte type, bfloat16 included (a fill needs no arithmetic). Cost: 128
    (16-bit) / 64 (32-bit) elements per cycle. Alignment, cost terms and errors: the module
    docstring. Source: Duplicate page (atlasascendc_api_07_0080 family);
    docs/reference/hardware.md §2.1, §3.

    Raises:
        DtypeError: dst is not a 2- or 4-byte type. AlignmentError, UbError, LimitError:
            the module docstring's common rules.
    """
    ctx = _core.current_core()
    if dst.dtype.itemsize not in (2, 4):
        raise DtypeError("Duplicate", f"{dst.dtype.name} is not a 16- or 32-bit type", pipe="PIPE_V")
    level0 = len(args) > 1
    rate = RATE_SIMPLE[dst.dtype.itemsize]
    if _timing_only.ACTIVE and _timing_only.holds_uncomputed(scalar):
        value = None                   # a fill with a value not computed: skipped below
    else:
        # (G, 1[, 1]) in a group whose members read different values: it broadcasts over
        # the stacked [G, count] (level 2) or [G, repeat, lanes] (level 0) lanes
        value = _lockstep.member_scalar(dst.dtype, scalar, 3 if level0 else 2)
    if level0:
        mask, repeat_time = args[0], args[1]
        blk, rep = (int(args[2]), int(args[3])) if len(args) > 3 else (1, 8)
        run_level0(ctx, "Duplicate", lambda out: np.copyto(out, value), dst, (),
                   (mask, repeat_time, ((blk, rep),)), rate, isSetMask, batch=True)
        return
    count = int(args[0])
    if value is None:
        _skip_level2(ctx, "Duplicate", dst, (), count, True)
    else:
        ctx.batch_ok = ctx.is_group    # element by element: a lockstep group runs it at once
        try:
            dst.elements(count, "Duplicate")[...] = value
        finally:
            ctx.batch_ok = False
    level2_done(ctx)
    issue_vector(ctx, "Duplicate", count, rate, dst)


def Power(dst, src, exponent, count=None):
    """dst[i] = src[i] ** exponent (float, scalar exponent).

    Ascend C's ``Power<float, false>`` is a library routine over Ln/Mul/Exp; it is costed
    as those three instructions. Its result [R: the library's exact rounding is not
    published] is ``exp(exponent * ln|src|)`` in float64
    (:func:`npusim.ascendc.portable_math.pow64`, IEEE-754 basic operations only; exponent
    2 is ``src * src``, exact) rounded once to T: within 2**-44 relative before that
    rounding, so correctly rounded except near a midpoint (then 1 ulp off), the same bytes
    on every host. Special cases are C99 ``pow``'s (F.10.4.4): ``x**0 = 1``, ``1**y = 1``,
    a negative base keeps its sign for an odd integer exponent and gives NaN for a
    non-integer one, ``0**-y = inf``, and so on.

    Form: ``Power(dst, src, exponent[, count])`` only (``count`` defaults to src's
    length; no level-0 form, and the mask register is left as it is). Dtypes: half or
    float, dst and src alike (``exponent`` is converted to T). Cost: three PIPE_V records,
    ``Power.Ln`` and ``Power.Exp`` at 32 elements per cycle and ``Power.Muls`` at 128
    (half) / 64 (float), each with its own head and bank conflicts (module docstring).
    Alignment and errors: the module docstring.

    Raises:
        DtypeError: not half/float, or mixed. AlignmentError, UbError: common rules.
    """
    ctx = _core.current_core()
    dt = same_dtype("Power", dst, src)
    check_dtype(ctx, "Power", dt, _FLOATS)
    count = src.length if count is None else int(count)
    if _timing_only.ACTIVE:
        _skip_level2(ctx, "Power", dst, (src,), count, True)
    else:
        exponent = _lockstep.member_scalar(dt, exponent, 2)
        ctx.batch_ok = ctx.is_group    # element by element: a lockstep group runs it at once
        try:
            with np.errstate(all="ignore"):
                _pmath.power(src.elements(count, "Power"), exponent,
                             out=dst.elements(count, "Power"))
        finally:
            ctx.batch_ok = False
    issue_vector(ctx, "Power.Ln", count, RATE_SLOW[dt.itemsize], dst, (src,))
    issue_vector(ctx, "Power.Muls", count, RATE_SIMPLE[dt.itemsize], dst, (src,))
    issue_vector(ctx, "Power.Exp", count, RATE_SLOW[dt.itemsize], dst, (src,))


# -- Cast ------------------------------------------------------------------------------
_TO_INT = {RoundMode.CAST_RINT, RoundMode.CAST_FLOOR, RoundMode.CAST_CEIL, RoundMode.CAST_ROUND,
           RoundMode.CAST_TRUNC}
#: (src, dst) -> round modes accepted (docs/reference/hardware.md §2.1 Cast rows).
CAST_MODES = {
    (_F16, _F32): {RoundMode.CAST_NONE},
    (_BF16, _F32): {RoundMode.CAST_NONE},
    (_F32, _F16): {RoundMode.CAST_NONE, RoundMode.CAST_RINT, RoundMode.CAST_FLOOR,
                   RoundMode.CAST_CEIL, RoundMode.CAST_ROUND, RoundMode.CAST_TRUNC,
                   RoundMode.CAST_ODD},
    (_F32, _BF16): {RoundMode.CAST_RINT, RoundMode.CAST_FLOOR, RoundMode.CAST_CEIL,
                    RoundMode.CAST_ROUND, RoundMode.CAST_TRUNC},
    (_F32, _I32): {RoundMode.CAST_RINT, RoundMode.CAST_FLOOR, RoundMode.CAST_CEIL,
                   RoundMode.CAST_ROUND, RoundMode.CAST_TRUNC},
    (_I32, _F32): {RoundMode.CAST_NONE, RoundMode.CAST_RINT},
    (_F16, _I32): {RoundMode.CAST_RINT, RoundMode.CAST_FLOOR, RoundMode.CAST_CEIL,
                   RoundMode.CAST_ROUND, RoundMode.CAST_TRUNC},
    (_I32, _F16): {RoundMode.CAST_NONE},
    (_I8, _F16): {RoundMode.CAST_NONE},
    (_U8, _F16): {RoundMode.CAST_NONE},
    # CAST_NONE too: dav_c220's Cast issues vconv_f162s8/u8 (no rounding suffix) for it, and
    # RoundMode's CAST_NONE is CAST_RINT when the conversion loses precision (RoundMode, Ascend
    # C API reference "Cast(float转half/int32_t)" atlasascendc_api_07_0018)
    (_F16, _I8): _TO_INT | {RoundMode.CAST_NONE},
    (_F16, _U8): _TO_INT | {RoundMode.CAST_NONE},
    (_F32, _F32): {RoundMode.CAST_RINT, RoundMode.CAST_FLOOR, RoundMode.CAST_CEIL,
                   RoundMode.CAST_ROUND, RoundMode.CAST_TRUNC},
}


def _bits_step(r: np.ndarray, up: np.ndarray) -> np.ndarray:
    """The neighbour of each 16-bit float ``r`` toward +inf (``up``) or -inf."""
    bits = r.view(np.uint16).astype(np.int32)
    neg = (bits & 0x8000) != 0
    zero = (bits & 0x7FFF) == 0
    away = up != neg                       # moving away from zero in magnitude
    out = np.where(away, bits + 1, bits - 1)
    out = np.where(zero, np.where(up, 0x0001, 0x8001), out)
    return out.astype(np.uint16).view(r.dtype)


def _round_float(x: np.ndarray, dt: np.dtype, mode: RoundMode) -> np.ndarray:
    r = x.astype(dt)                        # round to nearest, ties to even
    if mode in (RoundMode.CAST_NONE, RoundMode.CAST_RINT):
        return r
    back = r.astype(np.float64)
    xd = x.astype(np.float64)
    finite = np.isfinite(xd) & np.isfinite(back)
    if mode == RoundMode.CAST_FLOOR:
        fix = finite & (back > xd)
        return np.where(fix, _bits_step(r, np.zeros_like(fix)), r)
    if mode == RoundMode.CAST_CEIL:
        fix = finite & (back < xd)
        return np.where(fix, _bits_step(r, np.ones_like(fix)), r)
    if mode == RoundMode.CAST_TRUNC:
        fix = finite & (np.abs(back) > np.abs(xd))
        return np.where(fix, _bits_step(r, back < 0), r)
    if mode == RoundMode.CAST_ROUND:       # ties away from zero
        other = _bits_step(r, xd > back)
        od = other.astype(np.float64)
        tie = finite & (np.abs(od - xd) == np.abs(back - xd)) & (np.abs(od) > np.abs(back))
        return np.where(tie, other, r)
    if mode == RoundMode.CAST_ODD:         # truncate, then force the last bit to 1 if inexact
        t = _round_float(x, dt, RoundMode.CAST_TRUNC)
        inexact = finite & (t.astype(np.float64) != xd)
        even = (t.view(np.uint16) & 1) == 0
        return np.where(inexact & even, _bits_step(t, xd > 0), t)
    raise ValueError(mode)


def _round_int(x: np.ndarray, dt: np.dtype, mode: RoundMode) -> np.ndarray:
    xd = x.astype(np.float64)
    if mode in (RoundMode.CAST_RINT, RoundMode.CAST_NONE):    # CAST_NONE: RINT when lossy
        y = np.rint(xd)
    elif mode == RoundMode.CAST_FLOOR:
        y = np.floor(xd)
    elif mode == RoundMode.CAST_CEIL:
        y = np.ceil(xd)
    elif mode == RoundMode.CAST_TRUNC:
        y = np.trunc(xd)
    else:                                   # CAST_ROUND: ties away from zero
        y = np.sign(xd) * np.floor(np.abs(xd) + 0.5)
    lo, hi = _int_range(dt)
    # saturating conversion: clipped to dt's range (infinities to its ends), NaN to 0 (as
    # np.nan_to_num then np.clip, with fewer calls on the small arrays a kernel casts)
    y = np.minimum(np.maximum(y, lo), hi)
    out = np.where(np.isnan(y), 0.0, y).astype(dt)
    return out[()] if out.ndim == 0 else out       # a scalar for a scalar, as before


_INT_RANGES: dict = {}


def _int_range(dt: np.dtype) -> tuple:
    """(min, max) of integer dtype ``dt`` (np.iinfo, kept per dtype)."""
    r = _INT_RANGES.get(dt)
    if r is None:
        info = np.iinfo(dt)
        r = _INT_RANGES[dt] = (info.min, info.max)
    return r


def Cast(dst, src, round_mode: RoundMode, *args, isSetMask=True):
    """dst[i] = convert(src[i]) with ``round_mode`` (Ascend C ``RoundMode``).

    Supported pairs and modes (:data:`CAST_MODES`): half/bf16 -> float (exact, CAST_NONE);
    float -> half (CAST_NONE = CAST_RINT, FLOOR, CEIL, ROUND, TRUNC, ODD); float -> bf16
    (RINT, FLOOR, CEIL, ROUND, TRUNC); float/half <-> int32; int8/uint8 <-> half; float ->
    float (rounding to an integral value). 128 elements/cycle between 8-bit integers and
    half, 64 otherwise.

    Forms: ``Cast(dst, src, roundMode, count)``; level 0 ``Cast(dst, src, roundMode, mask,
    repeatTime, UnaryRepeatParams)`` — a repeat covers 256 B of the wider type (e.g. 64
    half -> float lanes: the half source advances 128 B, so ``srcRepStride`` is 4). Cost:
    the rate above (docs/reference/hardware.md §2.1 Cast rows), the head and bank conflicts
    as the module docstring says; the level-0 form costs ``repeatTime`` repeats of the
    wider type's lanes. Alignment and overlap: the module docstring (src and dst of
    different widths cannot overlap in place). Source: Cast page (Cast.md, 精度转换指令);
    docs/reference/hardware.md §2.1, §3.

    Raises:
        DtypeError: the pair or the round mode is not supported.
        AlignmentError, UbError, LimitError: the module docstring's common rules.
    """
    ctx = _core.current_core()
    key = (src.dtype, dst.dtype)
    modes = CAST_MODES.get(key)
    if modes is None:
        raise DtypeError("Cast", f"no Cast from {src.dtype.name} to {dst.dtype.name}", pipe="PIPE_V")
    if round_mode not in modes:
        raise DtypeError("Cast", f"{round_mode.name} is not a mode of Cast {src.dtype.name} -> "
                         f"{dst.dtype.name} (accepted: {', '.join(sorted(m.name for m in modes))})",
                         pipe="PIPE_V")
    # 128/cycle between 8/16-bit integers and half, 64 for the other pairs (§2.1)
    fast = (src.dtype == _F16 and dst.dtype.kind in "iu" and dst.dtype.itemsize <= 2) or \
        (dst.dtype == _F16 and src.dtype.kind in "iu" and src.dtype.itemsize <= 2)
    rate = 128 if fast else RATE_CAST

    to_float = dst.dtype in _nans.CANONICAL_BITS

    def convert(x, out):
        out[...] = _convert(x, src.dtype, dst.dtype, round_mode)
        if to_float:
            _nans.canonical(out)        # a NaN's sign and payload: host-dependent (nans.py)

    if len(args) > 1:
        run_level0(ctx, "Cast", convert, dst, (src,), args, rate, isSetMask, batch=True)
        return
    count = int(args[0])
    if _timing_only.ACTIVE:
        _skip_level2(ctx, "Cast", dst, (src,), count, True)
    else:
        ctx.batch_ok = ctx.is_group    # element by element: a lockstep group runs it at once
        try:
            convert(src.elements(count, "Cast"), dst.elements(count, "Cast"))
        finally:
            ctx.batch_ok = False
    level2_done(ctx)
    issue_vector(ctx, "Cast", count, rate, dst, (src,))


def _convert(x: np.ndarray, src_dt: np.dtype, dst_dt: np.dtype, round_mode) -> np.ndarray:
    """The values of Cast src_dt -> dst_dt with ``round_mode``."""
    with np.errstate(all="ignore"):
        if (src_dt, dst_dt) == (_F32, _F32):
            y = _round_int(x, np.dtype(np.int64), round_mode).astype(np.float32)
            return np.where(np.isfinite(x), np.copysign(y, x), x)    # -0.3 -> -0, as IEEE
        if dst_dt.kind == "f" or dst_dt == _BF16:
            return _round_float(x, dst_dt, round_mode) if src_dt.itemsize > dst_dt.itemsize \
                else x.astype(dst_dt)
        return _round_int(x, dst_dt, round_mode)


def cast_to(x: np.ndarray, dtype, round_mode: RoundMode = RoundMode.CAST_RINT) -> np.ndarray:
    """Host-side helper: round a float array to ``dtype`` with an Ascend C round mode."""
    x = np.asarray(x)
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return _round_int(x, dtype, round_mode)
    if x.dtype.itemsize > dtype.itemsize:
        return _round_float(x, dtype, round_mode)
    return x.astype(dtype)


