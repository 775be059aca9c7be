"""Compare, CompareScalar and Select on PIPE_V (the "first n elements" form).

Ascend C's compare instructions write one *bit* per element into a ``uint8_t`` tensor
(the select mask); ``Select`` reads such a mask and picks, per element, from ``src0``
where the bit is 1 and from ``src1`` (a tensor or a scalar) where it is 0. Together they
make the branch-free ``x > 0 ? a : b`` of vector code, e.g. ``sign(x)``::

    CompareScalar(mask, x, half(0), CMPMODE.GT, alignedCount)
    Select(pos, mask, ones, half(0), SELMODE.VSEL_TENSOR_SCALAR_MODE, count)

Rules (asc-devkit ``docs/api/context/CompareScalar.md``, ``Compare.md``, ``Select.md``,
Atlas A2/A3 rows):

* Compare/CompareScalar: sources half or float (int32_t only with ``CMPMODE.EQ``); the
  destination is ``uint8_t``; bit ``i % 8`` of byte ``i // 8`` holds element ``i``
  ("dst按照小端顺序排序"); **``count * sizeof(T)`` must be a multiple of 256 B**, so a
  kernel compares whole repeats (round the count up: the extra bits are ignored later).
  Comparisons follow IEEE 754: every comparison with NaN is false except NE
  (reference/hardware.md §2.1 "Float always follows INF/NAN semantics").
* Select: dst/src half or float, selMask ``uint8_t``/``uint16_t``/``uint32_t``/``uint64_t``.
  ``VSEL_CMPMASK_SPR`` (mode 0) uses only the first ``256 / sizeof(T)`` mask bits, the
  same for every 256 B repeat; ``VSEL_TENSOR_SCALAR_MODE`` (1) and
  ``VSEL_TENSOR_TENSOR_MODE`` (2) consume the mask bits continuously. On Atlas A2/A3,
  modes 1 and 2 need the 8 KiB of UB that Ascend C reserves for its APIs ("需要预留8K的
  Unified Buffer空间"); a kernel launched without that reserve gets a :class:`UbError`.
* The UB operands start 32 B aligned (general rule, reference/hardware.md §3).

Cost: Compare/CompareScalar (hardware.md §2.1 "Compare/Compares") and Select at 128
elements per cycle for half, 64 for float (and int32), through
:func:`npusim.ascendc.vector.issue_vector`.
"""
from __future__ import annotations

import enum

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.types import ONE_REPEAT_BYTE_SIZE
from npusim.ascendc.vector import RATE_SIMPLE, check_dtype, issue_vector, same_dtype
from npusim.errors import AlignmentError, DtypeError, UbError

__all__ = ["CMPMODE", "SELMODE", "Compare", "CompareScalar", "Select"]

_F16, _F32, _I32 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int32)
_U8 = np.dtype(np.uint8)
_MASK_DTYPES = (_U8, np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))
#: SoCs whose Select modes 1/2 use the 8 KiB Ascend C UB reserve (Select.md 约束说明).
_SELECT_NEEDS_RESERVE = ("Ascend910B", "Ascend910_93")


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


def _check_aligned(name: str, *tensors: LocalTensor) -> None:
    for t in tensors:
        if t.offset % 32:
            raise AlignmentError(name, f"UB address 0x{t.offset:x} is not 32 B aligned "
                                 "(reference/hardware.md §3)", pipe="PIPE_V")


def _compare(name: str, dst: LocalTensor, src0: LocalTensor, src1, mode, count) -> None:
    """Shared body: ``src1`` is a LocalTensor (Compare) or a scalar of src0's type."""
    ctx = _core.current_core()
    mode = CMPMODE(mode)
    dt = src0.dtype
    if dt == _I32 and mode != CMPMODE.EQ:
        raise DtypeError(name, f"int32_t sources support only CMPMODE.EQ, not {mode.name} "
                         f"({name}.md, Atlas A2/A3)", pipe="PIPE_V")
    check_dtype(ctx, name, dt, (_F16, _F32, _I32))
    if dst.dtype != _U8:
        raise DtypeError(name, f"the destination must be uint8_t (one bit per element), "
                         f"not {dst.dtype.name}", pipe="PIPE_V")
    count = int(count)
    if count < 0 or (count * dt.itemsize) % ONE_REPEAT_BYTE_SIZE:
        raise AlignmentError(name, f"count {count} x {dt.itemsize} B = {count * dt.itemsize} B "
                             f"is not a multiple of {ONE_REPEAT_BYTE_SIZE} B: the count form "
                             f"needs whole 256 B repeats ({name}.md 约束说明)", pipe="PIPE_V")
    if isinstance(src1, LocalTensor):
        same_dtype(name, src0, src1)
        _check_aligned(name, dst, src0, src1)
        rhs = src1.elements(count, name)
    else:
        _check_aligned(name, dst, src0)
        rhs = src1
    a = src0.elements(count, name)
    with np.errstate(invalid="ignore"):
        bits = _CMP_UFUNC[mode](a, rhs)
    dst.elements(count // 8, name)[...] = np.packbits(bits, bitorder="little")
    srcs = (src0, src1) if isinstance(src1, LocalTensor) else (src0,)
    issue_vector(ctx, name, count, RATE_SIMPLE[dt.itemsize], dst, srcs, dst_nbytes=count // 8)


def Compare(dst: LocalTensor, src0: LocalTensor, src1: LocalTensor, cmpMode: CMPMODE,
            count: int) -> None:
    """dst bit i = (src0[i] <cmpMode> src1[i]) for i < count.

    Args:
        dst: ``uint8_t`` LocalTensor of at least ``count / 8`` bytes.
        src0, src1: half or float (int32_t with EQ only), same dtype.
        cmpMode: a :class:`CMPMODE`.
        count: elements; ``count * sizeof(T)`` must be a multiple of 256 B.

    Raises:
        AlignmentError: count not whole 256 B repeats, or a UB address not 32 B aligned.
        DtypeError: unsupported dtype (bf16 included), mixed dtypes, non-uint8 dst.
        UbError: an operand too short for ``count``.
    """
    _compare("Compare", dst, src0, src1, cmpMode, count)


def CompareScalar(dst: LocalTensor, src0: LocalTensor, src1Scalar, cmpMode: CMPMODE,
                  count: int) -> None:
    """dst bit i = (src0[i] <cmpMode> src1Scalar) for i < count.

    ``src1Scalar`` is converted to src0's type first (the C++ parameter is ``const T``).
    Other arguments and errors as :func:`Compare`.
    """
    scalar = src0.dtype.type(src1Scalar)
    _compare("CompareScalar", dst, src0, scalar, cmpMode, count)


def _mask_bits(selMask: LocalTensor, nbits: int, name: str) -> np.ndarray:
    """The first ``nbits`` bits of the mask, element order (little-endian in each byte)."""
    if selMask.dtype not in _MASK_DTYPES:
        raise DtypeError(name, f"selMask must be uint8_t/uint16_t/uint32_t/uint64_t, not "
                         f"{selMask.dtype.name}", pipe="PIPE_V")
    nbytes = -(-nbits // 8)
    raw = selMask.bytes_view(nbytes, name, "PIPE_V")
    return np.unpackbits(raw, count=nbits, bitorder="little").astype(bool)


def Select(dst: LocalTensor, selMask: LocalTensor, src0: LocalTensor, src1, selMode: SELMODE,
           count: int) -> None:
    """dst[i] = src0[i] where mask bit i is 1, else src1[i] (or the scalar src1).

    Args:
        dst, src0: half or float LocalTensors of one dtype.
        selMask: uint8/16/32/64 LocalTensor of mask bits (from Compare/CompareScalar).
        src1: a LocalTensor of dst's dtype (modes 0 and 2) or a scalar, converted to
            dst's type (mode 1, ``VSEL_TENSOR_SCALAR_MODE``).
        selMode: a :class:`SELMODE`. Mode 0 repeats the first ``256 / sizeof(T)`` mask
            bits for every 256 B repeat; modes 1 and 2 read ``count`` consecutive bits.
        count: elements (no alignment rule for Select's count form).

    Raises:
        DtypeError: dtypes not supported or mixed; a tensor src1 in mode 1 or a scalar in
            modes 0/2.
        UbError: an operand too short, or (A2/A3) modes 1/2 in a kernel launched without
            the 8 KiB Ascend C UB reserve (``reserve_ub=False``).
        AlignmentError: a UB operand not 32 B aligned.
    """
    name = "Select"
    ctx = _core.current_core()
    mode = SELMODE(selMode)
    scalar_mode = mode == SELMODE.VSEL_TENSOR_SCALAR_MODE
    if scalar_mode == isinstance(src1, LocalTensor):
        want = "a scalar" if scalar_mode else "a LocalTensor"
        raise DtypeError(name, f"{mode.name} takes {want} as src1", pipe="PIPE_V")
    srcs = (src0,) if scalar_mode else (src0, src1)
    dt = same_dtype(name, dst, *srcs)
    check_dtype(ctx, name, dt, (_F16, _F32))
    _check_aligned(name, dst, selMask, *srcs)
    if mode != SELMODE.VSEL_CMPMASK_SPR and ctx.soc.short_soc_version in _SELECT_NEEDS_RESERVE:
        if ctx.ub_capacity > ctx.soc.ub_usable - ctx.soc.ascendc_reserved_ub:
            raise UbError(name, f"{mode.name} keeps temporary data in the 8 KiB UB that Ascend "
                          f"C reserves, but this kernel was built without the reserve "
                          f"(Select.md 约束说明, reference/hardware.md §1.7)", pipe="PIPE_V")
    count = int(count)
    if mode == SELMODE.VSEL_CMPMASK_SPR:
        per_repeat = ONE_REPEAT_BYTE_SIZE // dt.itemsize
        bits = np.resize(_mask_bits(selMask, per_repeat, name), count)
    else:
        bits = _mask_bits(selMask, count, name)
    a = src0.elements(count, name)
    b = dt.type(src1) if scalar_mode else src1.elements(count, name)
    dst.elements(count, name)[...] = np.where(bits, a, b)
    issue_vector(ctx, name, count, RATE_SIMPLE[dt.itemsize], dst, tuple(srcs))
