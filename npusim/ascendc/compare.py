"""Compare, CompareScalar, Select and the CMPMASK register on PIPE_V, in all their forms.

Ascend C's compare instructions write one *bit* per element into a ``uint8_t`` tensor
(the select mask) or into the 128-bit CMPMASK register; ``Select`` reads such a mask and
picks, per element, from ``src0`` where the bit is 1 and from ``src1`` (a tensor or a
scalar) where it is 0. Together they make the branch-free ``x > 0 ? a : b`` of vector
code, e.g. ``sign(x)``::

    CompareScalar(mask, x, half(0), CMPMODE.GT, alignedCount)
    Select(pos, mask, ones, half(0), SELMODE.VSEL_TENSOR_SCALAR_MODE, count)

Rules (asc-devkit ``docs/api/context/Compare.md``, ``CompareScalar.md``,
``Compare（结果存入寄存器）.md``, ``Select.md``, ``GetCmpMask(ISASI).md``,
``SetCmpMask(ISASI).md``; the intrinsics vcmpv/vcmpvs/vcmp, hiascend cceintrinsicapi
cceapi_0119/0043/0118; Atlas A2/A3 rows):

* Compare/CompareScalar: sources half or float (all CMPMODEs) or int32_t (``EQ`` only);
  the destination is ``uint8_t`` or ``int8_t``; bit ``i % 8`` of byte ``i // 8`` holds
  element ``i`` ("dst按照小端顺序排序"). Comparisons follow IEEE 754: every comparison with
  NaN is false except NE (docs/reference/hardware.md §2.1 "Float always follows INF/NAN").
* Count form: **``count * sizeof(T)`` must be a multiple of 256 B** (whole repeats).
* Level-0 form (mask, repeatTime, repeatParams): on A2/A3 the mask is a reserved
  parameter ("保留参数，设置无效") — vcmpv/vcmpvs have no mask ("该接口无MASK参数"):
  every lane of every repeat is compared. The source strides apply; the bits are packed:
  repeat ``r`` writes ``256 / sizeof(T)`` bits at byte ``r * 32 / sizeof(T)`` of dst
  ("重复计算时，新的dst = dst + 16Bytes" for half, 8 B for float), whatever the dst strides.
* Register form ``Compare(src0, src1, cmpMode, mask, repeatParams)``: one repeat, half or
  float; the bits go to CMPMASK (float: its low 64 bits) and a lane the mask switches off
  leaves its CMPMASK bit unchanged (cceapi_0118). ``GetCmpMask(dst)`` stores the 128 bits
  (dst 16 B aligned, at least 128 B of space); ``SetCmpMask(src)`` loads them.
* Select: dst/src half or float, selMask ``uint8_t``/``uint16_t``/``uint32_t``/``uint64_t``.
  ``VSEL_CMPMASK_SPR`` (mode 0) uses only the first ``256 / sizeof(T)`` mask bits, the
  same for every repeat; ``VSEL_TENSOR_SCALAR_MODE`` (1) and ``VSEL_TENSOR_TENSOR_MODE``
  (2) consume ``256 / sizeof(T)`` bits per repeat, continuously. In the level-0 form the
  mask then filters the selection: lanes it switches off keep dst's old value. The count
  form runs in Counter mode (as the library does: SetMaskCount, one vsel, ResetMask).
  The selMask forms load CMPMASK themselves (mode 0: the selMask's first 128 bits; mode
  1: the scalar; mode 2: the selMask's UB address), the register forms use what
  SetCmpMask left there. On Atlas A2/A3, modes 1 and 2 with a selMask tensor need the
  8 KiB of UB that Ascend C reserves ("需要预留8K的Unified Buffer空间"); a kernel launched
  without that reserve gets a :class:`UbError`.
* The UB operands start 32 B aligned (general rule, docs/reference/hardware.md §3).

Cost: Compare/CompareScalar (hardware.md §2.1 "Compare/Compares") and Select at 128
elements per cycle for half, 64 for float (and int32), per 256 B repeat, through
:func:`npusim.ascendc.vector.issue_vector`; Get/SetCmpMask one cycle after the head.

Shared rules (the two forms, 32 B UB alignment, address overlap, the cost terms —
head, repeats, UB bank conflicts — and the common errors): the
:mod:`npusim.ascendc.vector` module docstring. Specific to this family: the count form of
Compare/CompareScalar needs whole 256 B repeats, the level-0 mask of Compare is reserved,
and Get/SetCmpMask need 16 B (not 32 B) alignment.
"""
from __future__ import annotations

import enum

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import timing_only as _timing_only
from npusim.ascendc import repeat as _repeat
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.types import ONE_REPEAT_BYTE_SIZE, PIPE_V
from npusim.ascendc.vector import (RATE_SIMPLE, check_dtype, issue_vector, level2_done,
                                   run_level0, same_dtype)
from npusim.errors import AlignmentError, DtypeError, LimitError, UbError

__all__ = ["CMPMODE", "SELMODE", "Compare", "CompareScalar", "Select", "GetCmpMask",
           "SetCmpMask"]

_F16, _F32, _I32 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int32)
_U8, _I8 = np.dtype(np.uint8), np.dtype(np.int8)
_MASK_DTYPES = (_U8, np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))
#: SoCs whose Select modes 1/2 use the 8 KiB Ascend C UB reserve (Select.md 约束说明).
_SELECT_NEEDS_RESERVE = ("Ascend910B", "Ascend910_93")
#: Bytes of the CMPMASK register (128 bits).
_CMPMASK_BYTES = 16
#: Space GetCmpMask's dst must offer (GetCmpMask(ISASI).md 约束说明: "不能少于128字节").
_GET_CMPMASK_SPACE = 128


class CMPMODE(enum.IntEnum):
    """``enum class CMPMODE : uint8_t`` of Ascend C (values as in the header)."""

    LT = 0
    GT = 1
    EQ = 2
    LE = 3
    GE = 4
    NE = 5


class SELMODE(enum.IntEnum):
    """``enum class SELMODE : uint8_t`` of Ascend C."""

    VSEL_CMPMASK_SPR = 0
    VSEL_TENSOR_SCALAR_MODE = 1
    VSEL_TENSOR_TENSOR_MODE = 2


_CMP_UFUNC = {CMPMODE.LT: np.less, CMPMODE.GT: np.greater, CMPMODE.EQ: np.equal,
              CMPMODE.LE: np.less_equal, CMPMODE.GE: np.greater_equal,
              CMPMODE.NE: np.not_equal}


def _check_aligned(name: str, *tensors: LocalTensor, align: int = 32) -> None:
    for t in tensors:
        if t.offset % align:
            raise AlignmentError(name, f"UB address 0x{t.offset:x} is not {align} B aligned "
                                 "(docs/reference/hardware.md §3)", pipe="PIPE_V")


def _lanes(dt: np.dtype) -> int:
    """Elements of one 256 B repeat (= bits of compare result per repeat)."""
    return ONE_REPEAT_BYTE_SIZE // dt.itemsize


# -- Compare / CompareScalar ---------------------------------------------------------------
def _check_compare(ctx, name: str, dt: np.dtype, mode, dst: LocalTensor | None,
                   types=(_F16, _F32, _I32)) -> CMPMODE:
    mode = CMPMODE(mode)
    if dt == _I32 and mode != CMPMODE.EQ:
        raise DtypeError(name, f"int32_t sources support only CMPMODE.EQ, not {mode.name} "
                         f"({name}.md, Atlas A2/A3)", pipe="PIPE_V")
    check_dtype(ctx, name, dt, types)
    if dst is not None and dst.dtype not in (_U8, _I8):
        raise DtypeError(name, f"the destination must be uint8_t or int8_t (one bit per "
                         f"element), not {dst.dtype.name}", pipe="PIPE_V")
    return mode


def _compare_bits(ctx, name, mode, src0, src1, call, strides) -> np.ndarray:
    """The compare result (repeat, lanes) of the lanes ``call`` switches on, reading each
    source tensor through its (blkStride, repStride) (the checker sees those lanes)."""
    a = _repeat.read(src0, _repeat.lane_index(src0.dtype.itemsize, call, *strides[0]), call,
                     name)
    if isinstance(src1, LocalTensor):
        b = _repeat.read(src1, _repeat.lane_index(src1.dtype.itemsize, call, *strides[1]),
                         call, name)
    else:
        b = src1
    with np.errstate(invalid="ignore"):
        return _CMP_UFUNC[mode](a, b)


def _compare_repeats(name: str, dt: np.dtype, rest: tuple, tensor: bool):
    """``(repeatTime, repeat params)`` of a tensor-destination compare: ``rest`` is
    ``(count,)`` — whole contiguous repeats — or ``(mask, repeatTime[, params])``."""
    if len(rest) == 1:
        count = int(rest[0])
        if count < 0 or (count * dt.itemsize) % ONE_REPEAT_BYTE_SIZE:
            raise AlignmentError(name, f"count {count} x {dt.itemsize} B = "
                                 f"{count * dt.itemsize} B is not a multiple of "
                                 f"{ONE_REPEAT_BYTE_SIZE} B: the count form needs whole 256 B "
                                 f"repeats ({name}.md 约束说明)", pipe="PIPE_V")
        repeat, params = count // _lanes(dt), None   # (the library splits at 252 repeats)
    elif len(rest) in (2, 3):
        repeat = _repeat.check_repeat_time(name, rest[1])   # rest[0], the mask: reserved
        params = rest[2] if len(rest) == 3 else None
    else:
        raise LimitError(name, "takes (count) or (mask, repeatTime, repeatParams) after "
                         "cmpMode", pipe="PIPE_V")
    if params is None:
        params = _repeat.BinaryRepeatParams() if tensor else _repeat.UnaryRepeatParams()
    return repeat, params


def _compare_to_tensor(name: str, dst, src0, src1, mode, rest: tuple) -> None:
    """Both tensor-destination forms; ``src1`` is a LocalTensor (Compare) or a scalar of
    src0's type (CompareScalar)."""
    ctx = _core.current_core()
    dt = src0.dtype
    mode = _check_compare(ctx, name, dt, mode, dst)
    tensor = isinstance(src1, LocalTensor)
    srcs = (src0, src1) if tensor else (src0,)
    if tensor:
        same_dtype(name, src0, src1)
    _check_aligned(name, dst, *srcs)
    repeat, params = _compare_repeats(name, dt, rest, tensor)
    strides = params.strides()
    _repeat.check_strides(name, strides)
    lanes = _lanes(dt)
    call = _repeat.Level0(repeat, lanes, np.ones((repeat, lanes), dtype=bool))
    nbytes = repeat * lanes // 8
    out = dst.bytes_view(nbytes, name, "PIPE_V")          # bounds first: UbError
    bits = _compare_bits(ctx, name, mode, src0, src1, call, strides[1:])
    _report_overlap_with_bits(ctx, name, dst, nbytes, srcs, call, strides[1:])
    out[...] = np.packbits(bits.reshape(-1), bitorder="little")
    if ctx.tracker is not None and nbytes:
        ctx.tracker.write(ctx, int(PIPE_V), dst.offset, nbytes, name)
    # the bank model sees the mask as written lanes/8 bytes a repeat (ubbank.py) [R: how a
    # compare's part-row write meets the UB banks is not published]
    per_repeat = dict(repeats=repeat, lanes=lanes) if len(rest) > 1 else {}
    issue_vector(ctx, name, repeat * lanes, RATE_SIMPLE[dt.itemsize], dst, srcs, tracked=True,
                 dst_nbytes=nbytes, **per_repeat)


def _report_overlap_with_bits(ctx, name, dst, nbytes, srcs, call, strides) -> None:
    """The packed result may not land on bytes a source lane reads (通用说明和约束.md)."""
    lo, hi = dst.offset, dst.offset + nbytes
    for s, st in zip(srcs, strides):
        addr = s.offset + _repeat.lane_index(s.dtype.itemsize, call, *st) * s.dtype.itemsize
        if np.any((addr + s.dtype.itemsize > lo) & (addr < hi)):
            _repeat.report_overlap(ctx, name, "partial")
            return


def _compare_to_register(src0, src1, cmpMode, mask, repeatParams=None,
                         is_set_mask: bool = True) -> None:
    """``Compare(src0, src1, cmpMode, mask, repeatParams)``: one repeat into CMPMASK."""
    name = "Compare"
    ctx = _core.current_core()
    dt = same_dtype(name, src0, src1)
    mode = _check_compare(ctx, name, dt, cmpMode, None, types=(_F16, _F32))
    _check_aligned(name, src0, src1)
    lanes = _lanes(dt)
    params = repeatParams if repeatParams is not None else _repeat.BinaryRepeatParams()
    strides = params.strides()
    _repeat.check_strides(name, strides)
    # the instruction runs one repeat: in Counter mode only the first repeat's lanes count
    full = _repeat.resolve(ctx, name, lanes, mask, 1, is_set_mask)
    row = full.active[0] if full.repeat else np.zeros(lanes, dtype=bool)
    call = _repeat.Level0(1, lanes, row[None, :])
    bits = _compare_bits(ctx, name, mode, src0, src1, call, strides[1:])[0]
    reg = np.unpackbits(ctx.cmp_mask, bitorder="little").astype(bool)
    reg[:lanes][row] = bits[row]             # lanes the mask switches off keep their bit
    ctx.cmp_mask = np.packbits(reg, bitorder="little")
    issue_vector(ctx, name, int(row.sum()), RATE_SIMPLE[dt.itemsize], None, (src0, src1),
                 repeats=1, lanes=lanes, tracked=True)


def Compare(*args, isSetMask: bool = True) -> None:
    """Element-wise compare; the result is one bit per element.

    Forms (Ascend C order; Compare.md, Compare（结果存入寄存器）.md):

    * ``Compare(dst, src0, src1, cmpMode, count)`` — the first ``count`` elements;
      ``count * sizeof(T)`` must be a multiple of 256 B.
    * ``Compare(dst, src0, src1, cmpMode, mask, repeatTime, repeatParams)`` — level 0:
      ``repeatTime`` <= 255 repeats of ``256 / sizeof(T)`` lanes read through the
      BinaryRepeatParams source strides; the mask (and ``isSetMask``) is reserved on A2/A3
      (every lane is compared); the bits are packed, ``32 / sizeof(T)`` bytes per repeat.
    * ``Compare(src0, src1, cmpMode, mask, repeatParams)`` — one repeat into the CMPMASK
      register (half/float); lanes the mask (Normal or Counter mode, or the mask register
      with ``isSetMask=False``) switches off keep their CMPMASK bit. Read it with
      :func:`GetCmpMask`, or Select with ``VSEL_CMPMASK_SPR`` without a selMask.

    Args:
        dst: ``uint8_t``/``int8_t`` LocalTensor: bit ``i % 8`` of byte ``i // 8`` is
            element ``i`` (at least ``count / 8`` or ``repeatTime * 32 / sizeof(T)`` bytes).
        src0, src1: half or float (any CMPMODE), int32_t (EQ only), one dtype.
        cmpMode: a :class:`CMPMODE`; NaN compares false except under NE.

    Raises:
        AlignmentError: count not whole 256 B repeats; a UB address not 32 B aligned.
        DtypeError: unsupported dtype (bf16 included), mixed dtypes, a non-8-bit dst,
            int32 with a mode other than EQ, int32 in the register form.
        LimitError: repeatTime > 255, strides > 255, a mask out of range (register form).
        UbError: an operand too short; dst bytes overlapping a source lane (checker).
    """
    if len(args) >= 3 and not isinstance(args[2], LocalTensor):
        _compare_to_register(*args, is_set_mask=isSetMask)
        return
    dst, src0, src1, cmp_mode, *rest = args
    _compare_to_tensor("Compare", dst, src0, src1, cmp_mode, tuple(rest))


def CompareScalar(dst: LocalTensor, src0: LocalTensor, src1Scalar, cmpMode: CMPMODE, *args,
                  isSetMask: bool = True) -> None:
    """dst bit i = (src0[i] <cmpMode> src1Scalar).

    Forms: ``CompareScalar(dst, src0, src1Scalar, cmpMode, count)`` and level 0
    ``CompareScalar(dst, src0, src1Scalar, cmpMode, mask, repeatTime, repeatParams)``
    with UnaryRepeatParams (only the source strides matter; the mask is reserved: every
    lane is compared; the bits are packed as for :func:`Compare`). ``src1Scalar`` is
    converted to src0's type first (the C++ parameter is ``const T``). Dtypes, errors:
    as :func:`Compare` (CompareScalar.md; vcmpvs, cceapi_0043). Cost: as Compare, 128 half
    / 64 float elements per cycle over whole 256 B repeats, plus head and bank conflicts
    (:mod:`npusim.ascendc.vector` module docstring).
    """
    scalar = src0.dtype.type(src1Scalar)
    _compare_to_tensor("CompareScalar", dst, src0, scalar, cmpMode, tuple(args))


def GetCmpMask(dst: LocalTensor) -> None:
    """Store the 128-bit CMPMASK register in dst's first 16 bytes (GetCmpMask(ISASI).md).

    Raises:
        AlignmentError: dst not 16 B aligned. UbError: less than 128 B of dst's buffer
        from its start (the page's "dst的空间大小不能少于128字节").

    Cost: one PIPE_V record, ``vec_head_cycles + 1`` cycles. The checker sees a write of
    dst's first 16 bytes.
    """
    name = "GetCmpMask"
    ctx = _core.current_core()
    _check_aligned(name, dst, align=16)
    if dst.limit - dst.offset < _GET_CMPMASK_SPACE:
        raise UbError(name, f"dst offers {dst.limit - dst.offset} B; GetCmpMask needs at least "
                      f"{_GET_CMPMASK_SPACE} B (GetCmpMask(ISASI).md 约束说明)", pipe="PIPE_V")
    dst.bytes_view(_CMPMASK_BYTES, name, "PIPE_V")[...] = ctx.cmp_mask
    if ctx.tracker is not None:
        ctx.tracker.write(ctx, int(PIPE_V), dst.offset, _CMPMASK_BYTES, name)
    issue_vector(ctx, name, 1, 1)


def SetCmpMask(src: LocalTensor) -> None:
    """Load the 128-bit CMPMASK register from src's first 16 bytes, for the Select forms
    without a selMask (SetCmpMask(ISASI).md): mode 0 — the select bits; mode 1 — the
    scalar (src holds it, as T, in its first element); mode 2 — a UB address (src's first
    four bytes: the selMask's UB byte offset, ``selMask.GetPhyAddr()``).

    Raises:
        AlignmentError: src not 16 B aligned. UbError: src's buffer shorter than 16 B.

    Cost: one PIPE_V record, ``vec_head_cycles + 1`` cycles. The checker sees a read of
    src's first 16 bytes (they must have been written: an uninitialised-read finding
    otherwise).
    """
    name = "SetCmpMask"
    ctx = _core.current_core()
    _check_aligned(name, src, align=16)
    raw = src.bytes_view(_CMPMASK_BYTES, name, "PIPE_V")
    if ctx.tracker is not None:
        ctx.tracker.read(ctx, int(PIPE_V), src.offset, _CMPMASK_BYTES, name)
    ctx.cmp_mask = raw.copy()
    issue_vector(ctx, name, 1, 1)


# -- Select -------------------------------------------------------------------------------
def _select_bits(ctx, name: str, sel: LocalTensor | None, mode: SELMODE,
                 call: _repeat.Level0) -> np.ndarray:
    """The select bit of every lane (repeat, lanes): mode 0 — the first ``lanes`` bits for
    every repeat; modes 1/2 — bit ``r * lanes + l``. ``sel`` None: mode 0 from CMPMASK.
    The checker sees the mask bytes holding the bits of the lanes that are on."""
    lanes = call.lanes
    if sel is None:
        row = np.unpackbits(ctx.cmp_mask, bitorder="little")[:lanes].astype(bool)
        return np.broadcast_to(row, call.active.shape)
    act = call.active
    pos = np.broadcast_to(np.arange(lanes), act.shape)[act] if mode == SELMODE.VSEL_CMPMASK_SPR \
        else (np.arange(call.repeat)[:, None] * lanes + np.arange(lanes))[act]
    if pos.size == 0:
        return np.zeros(act.shape, dtype=bool)
    used = np.unique(pos // 8)
    raw = sel.bytes_view(int(used[-1]) + 1, name, "PIPE_V")      # bounds: UbError
    if ctx.tracker is not None:
        ctx.tracker.read_at(ctx, int(PIPE_V), sel.offset + used, name)
    width = lanes if mode == SELMODE.VSEL_CMPMASK_SPR else call.repeat * lanes
    bits = np.zeros(width, dtype=bool)
    unpacked = np.unpackbits(raw, bitorder="little")[:width].astype(bool)
    bits[:unpacked.size] = unpacked
    if mode == SELMODE.VSEL_CMPMASK_SPR:
        return np.broadcast_to(bits, act.shape)
    return bits.reshape(call.repeat, lanes)


def _load_cmpmask(ctx, mode: SELMODE, sel: LocalTensor, scalar) -> None:
    """What a selMask form of Select leaves in CMPMASK (it loads it before vsel;
    kernel_operator_vec_cmpsel_impl.h): the selMask's first 128 bits, the scalar, or the
    selMask's UB address."""
    if mode == SELMODE.VSEL_CMPMASK_SPR:
        end = min(sel.offset + _CMPMASK_BYTES, sel.limit)
        reg = np.zeros(_CMPMASK_BYTES, dtype=np.uint8)
        reg[:end - sel.offset] = ctx.ub[sel.offset:end]
    elif mode == SELMODE.VSEL_TENSOR_SCALAR_MODE:
        reg = np.full(_CMPMASK_BYTES // scalar.dtype.itemsize, scalar).view(np.uint8)
    else:
        reg = np.full(_CMPMASK_BYTES // 4, sel.offset, dtype=np.uint32).view(np.uint8)
    ctx.cmp_mask = reg.copy()


def _select(ctx, dst, sel, src0, src1, mode: SELMODE, mask, repeat_time, params,
            is_set_mask: bool, count_form: bool = False) -> None:
    """Select's common body. ``sel``: the selMask tensor, or None for mode 0 from
    CMPMASK; ``src1``: a LocalTensor or (mode 1) a scalar of dst's type."""
    name = "Select"
    scalar_mode = mode == SELMODE.VSEL_TENSOR_SCALAR_MODE
    srcs = (src0,) if scalar_mode else (src0, src1)
    dt = same_dtype(name, dst, *srcs)
    check_dtype(ctx, name, dt, (_F16, _F32))
    if sel is not None and sel.dtype not in _MASK_DTYPES:
        raise DtypeError(name, f"selMask must be uint8_t/uint16_t/uint32_t/uint64_t, not "
                         f"{sel.dtype.name}", pipe="PIPE_V")
    _check_aligned(name, dst, *srcs, *((sel,) if sel is not None else ()))
    p = params if params is not None else _repeat.BinaryRepeatParams()
    strides = p.strides()[:len(srcs) + 1]      # mode 1 has no src1 operand
    _repeat.check_strides(name, strides)
    # the mask stream depends on how many repeats run: resolve the call here
    call = _repeat.resolve(ctx, name, _lanes(dt), mask, repeat_time, is_set_mask)
    bits = _select_bits(ctx, name, sel, mode, call)
    other = _timing_only.scalar(dt, src1) if scalar_mode else None   # UNCOMPUTED: timing-only

    def pick(a, *b, out, rows):
        np.copyto(out, np.where(bits[rows], a, other if scalar_mode else b[0]))

    run_level0(ctx, name, pick, dst, srcs, (mask, repeat_time, strides), RATE_SIMPLE[dt.itemsize],
               is_set_mask, pass_rows=True, call=call)
    if count_form:
        level2_done(ctx)


def _needs_reserve(ctx, mode: SELMODE) -> None:
    """Modes 1 and 2 with a selMask keep temporary data in the Ascend C UB reserve."""
    if mode != SELMODE.VSEL_CMPMASK_SPR and ctx.soc.short_soc_version in _SELECT_NEEDS_RESERVE:
        if ctx.ub_capacity > ctx.soc.ub_usable - ctx.soc.ascendc_reserved_ub:
            raise UbError("Select", f"{mode.name} keeps temporary data in the 8 KiB UB that "
                          f"Ascend C reserves, but this kernel was built without the reserve "
                          f"(Select.md 约束说明, docs/reference/hardware.md §1.7)", pipe="PIPE_V")


def Select(dst: LocalTensor, *args, selMode: SELMODE | None = None,
           isSetMask: bool = True) -> None:
    """dst[i] = src0[i] where the select bit of element i is 1, else src1[i] (or a scalar).

    Forms (Ascend C order; Select.md):

    * ``Select(dst, selMask, src0, src1, selMode, count)`` — the first ``count``
      elements (Counter mode; no alignment rule on count).
    * ``Select(dst, selMask, src0, src1, selMode, mask, repeatTime, repeatParams)`` —
      level 0 with BinaryRepeatParams strides (src1's are unused in mode 1); lanes the
      mask switches off keep dst's old value. ``isSetMask`` is reserved (kept for the
      signature; the mask argument always applies).
    * ``Select(dst, selMask, src0, repeatTime, repeatParams)`` — mode 1 with the scalar
      SetCmpMask loaded and the mask register (SetVectorMask) as the mask.
    * ``Select(dst, src0, src1, repeatTime, repeatParams, selMode=mode)`` — the template
      ``selMode`` 0 (bits from CMPMASK: SetCmpMask or Compare's register form) or 2
      (CMPMASK holds the selMask's UB address), with the mask register as the mask.

    Args:
        dst, src0: half or float LocalTensors of one dtype.
        selMask: uint8/16/32/64 LocalTensor of bits (from Compare/CompareScalar); bit
            ``i % 8`` of byte ``i // 8``. Mode 0 uses its first ``256 / sizeof(T)`` bits for
            every repeat; modes 1/2 ``256 / sizeof(T)`` bits per repeat, continuously.
        src1: a LocalTensor of dst's dtype (modes 0 and 2) or a scalar, converted to
            dst's type (mode 1, ``VSEL_TENSOR_SCALAR_MODE``).
        selMode: a :class:`SELMODE`.

    Raises:
        DtypeError: dtypes not supported or mixed; a tensor src1 in mode 1 or a scalar in
            modes 0/2; a selMode keyword with another form.
        UbError: an operand (or the mask stream) too short; (A2/A3) modes 1/2 with a
            selMask in a kernel launched without the 8 KiB Ascend C UB reserve
            (``reserve_ub=False``).
        AlignmentError: a UB operand not 32 B aligned (the mode-2 address included).
        LimitError: repeatTime > 255, strides > 255, a mask out of range.
    """
    ctx = _core.current_core()
    if len(args) == 4:
        _select_register_form(ctx, dst, args, selMode)
        return
    if selMode is not None or len(args) not in (5, 7):
        raise DtypeError("Select", "takes (selMask, src0, src1, selMode, count), (selMask, src0, "
                         "src1, selMode, mask, repeatTime, repeatParams), (selMask, src0, "
                         "repeatTime, repeatParams) or (src0, src1, repeatTime, repeatParams, "
                         "selMode=...)", pipe="PIPE_V")
    sel, src0, src1, mode = args[0], args[1], args[2], SELMODE(args[3])
    scalar_mode = mode == SELMODE.VSEL_TENSOR_SCALAR_MODE
    if scalar_mode == isinstance(src1, LocalTensor):
        want = "a scalar" if scalar_mode else "a LocalTensor"
        raise DtypeError("Select", f"{mode.name} takes {want} as src1", pipe="PIPE_V")
    _needs_reserve(ctx, mode)
    if len(args) == 5:                       # count form: one vsel in Counter mode
        ctx.mask_counter = True
        _select(ctx, dst, sel, src0, src1, mode, int(args[4]), 1, None, True, count_form=True)
    else:
        _select(ctx, dst, sel, src0, src1, mode, args[4], args[5], args[6], True)
    _load_cmpmask(ctx, mode, sel, dst.dtype.type(src1) if scalar_mode else None)


def _select_register_form(ctx, dst, args, sel_mode) -> None:
    """The Select forms without a selMask: CMPMASK set by SetCmpMask (or Compare), the
    mask register set by SetVectorMask."""
    if sel_mode is None:                     # mode 1: (selMask, src0, repeatTime, params)
        sel, src0, repeat_time, params = args
        scalar = np.frombuffer(ctx.cmp_mask.tobytes(), dtype=src0.dtype)[0]
        _select(ctx, dst, sel, src0, scalar, SELMODE.VSEL_TENSOR_SCALAR_MODE,
                _repeat.MASK_PLACEHOLDER, repeat_time, params, False)
        return
    mode = SELMODE(sel_mode)
    src0, src1, repeat_time, params = args
    if mode == SELMODE.VSEL_TENSOR_SCALAR_MODE:
        raise DtypeError("Select", "mode 1 without a selMask is Select(dst, selMask, src0, "
                         "repeatTime, repeatParams) with the scalar in CMPMASK", pipe="PIPE_V")
    sel = None
    if mode == SELMODE.VSEL_TENSOR_TENSOR_MODE:
        # CMPMASK holds the selMask's UB address: a view of UB from there
        addr = int(np.frombuffer(ctx.cmp_mask.tobytes(), dtype=np.uint32)[0])
        if addr >= ctx.ub.size:
            raise UbError("Select", f"CMPMASK holds UB address 0x{addr:x}, outside the "
                          f"{ctx.ub.size} B UB (SetCmpMask with the selMask's address)",
                          pipe="PIPE_V")
        sel = LocalTensor(ctx, np.uint8, addr, ctx.ub.size - addr, ctx.ub.size)
    _select(ctx, dst, sel, src0, src1, mode, _repeat.MASK_PLACEHOLDER, repeat_time, params,
            False)
