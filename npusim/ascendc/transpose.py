"""Layout changes in the unified buffer on PIPE_V: Transpose and TransDataTo5HD.

Sources (asc-devkit ``docs/zh/api/SIMD-API/基础API/Memory矢量计算/数据排布转换/``):

* ``Transpose.md`` — the plain form transposes one 16 x 16 matrix of 2-byte elements
  (int16/uint16/half); the extended form takes a ``TransposeParamsExt``: on Atlas A2/A3
  ``TRANSPOSE_ND2ND_B16`` (the same 16 x 16 transpose, uint16 only) and
  ``TRANSPOSE_NCHW2NHWC`` / ``TRANSPOSE_NHWC2NCHW`` (int8/uint8/int16/uint16/half/int32/
  uint32/float; nSize ≤ 65535, cSize ≤ 4095, hSize * wSize ≤ 4095 and a multiple of 32 B;
  src and dst may not share memory; a sharedTmpBuffer of at least ``(cSize + 2)`` resp.
  ``(2 * cSize + 1)`` x ``h0 * w0 * sizeof(T)`` bytes, h0 = 16 (32 for 8-bit), w0 =
  32 / sizeof(T)). The other TransposeType values are documented as not supported
  ("当前不支持") and raise; TRANSPOSE_TYPE_NONE does nothing.
* ``TransDataTo5HD.md`` — one repeat reads 16 data blocks (one per ``srcList`` address)
  and writes 16: for 16-bit types dst block ``j`` element ``i`` = src block ``i`` element
  ``j``; for 32-bit types dst blocks ``2j`` and ``2j + 1`` hold element ``j`` of src blocks
  0-7 and 8-15; for 8-bit types the half block ``dstHighHalf`` of dst block ``j`` holds
  element ``16 * srcHighHalf + j`` of the 16 src blocks. Repeat ``r`` adds ``r *
  RepStride`` blocks to every address — except that with ``repeatTimes == 1`` the single
  repeat already starts one ``RepStride`` on (the page's note; set the strides to 0).

Costs [R]: §2.1 gives Transpose 16-bit 128 elements per cycle (256 B a cycle): the plain
Transpose costs 2 cycles, a TransDataTo5HD repeat (512 B read) 2 cycles. The extended
NCHW<->NHWC Transpose is a library routine (TransDataTo5HD into the temporary buffer, block
copies, TransDataTo5HD out); it is costed as those three passes over the data at 256 B per
cycle each.

Shared rules (the two forms, 32 B UB alignment, address overlap, the cost terms — head,
repeats, UB bank conflicts — and the common errors): the :mod:`npusim.ascendc.vector` module
docstring. Specific to this family: whole 512 B repeats (16 x 32 B blocks), addresses given
as lists in the TransDataTo5HD forms (each 32 B aligned).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import repeat as _repeat
from npusim.ascendc.gather import (A2A3, F16, F32, I8, I16, I32, U8, U16, U32, U64,
                                   check_aligned, check_range, check_types, report_same_memory,
                                   repeat_times)
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.types import ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE, PIPE_V
from npusim.ascendc.vector import issue_vector, same_dtype
from npusim.errors import AlignmentError, DtypeError, KernelError, LimitError, UbError

__all__ = ["TransposeType", "TransposeParamsExt", "TransDataTo5HDParams", "Transpose",
           "TransDataTo5HD", "NCHW_CONV_ADDR_LIST_SIZE"]

#: Addresses in each list of TransDataTo5HD.
NCHW_CONV_ADDR_LIST_SIZE = 16

_B16 = (I16, U16, F16)
_ALL_B = (I8, U8, I16, U16, F16, I32, U32, F32)
#: Plain Transpose: int16/uint16/half on every SoC the page lists.
TRANSPOSE_TYPES = {f: _B16 for f in (*A2A3, "Ascend310P", "Ascend910")}
#: Extended Transpose, by transposeType (A2/A3 and 310P rows).
ND2ND_B16_TYPES = {f: (U16,) for f in (*A2A3, "Ascend310P")}
NCHW_TYPES = {f: _ALL_B for f in (*A2A3, "Ascend310P")}
#: TransDataTo5HD (the first-generation 910 has no 32-bit types).
TRANS_5HD_TYPES = {**{f: _ALL_B for f in (*A2A3, "Ascend310P")},
                   "Ascend910": (I8, U8, I16, U16, F16)}


class TransposeType(enum.IntEnum):
    """``enum class TransposeType : uint8_t`` (kernel_struct_transpose.h)."""

    TRANSPOSE_TYPE_NONE = 0
    TRANSPOSE_NZ2ND_0213 = 1
    TRANSPOSE_NZ2NZ_0213 = 2
    TRANSPOSE_NZ2NZ_012_WITH_N = 3
    TRANSPOSE_NZ2ND_012_WITH_N = 4
    TRANSPOSE_NZ2ND_012_WITHOUT_N = 5
    TRANSPOSE_NZ2NZ_012_WITHOUT_N = 6
    TRANSPOSE_ND2ND_ONLY = 7
    TRANSPOSE_ND_UB_GM = 8
    TRANSPOSE_GRAD_ND_UB_GM = 9
    TRANSPOSE_ND2ND_B16 = 10
    TRANSPOSE_NCHW2NHWC = 11
    TRANSPOSE_NHWC2NCHW = 12


@dataclass
class TransposeParamsExt:
    """``TransposeParamsExt(nSize, cSize, hSize, wSize, transposeType)`` (uint16_t sizes)."""

    nSize: int = 0
    cSize: int = 0
    hSize: int = 0
    wSize: int = 0
    transposeType: TransposeType = TransposeType.TRANSPOSE_ND2ND_B16


@dataclass
class TransDataTo5HDParams:
    """``TransDataTo5HDParams(dstHighHalf, srcHighHalf, repeatTimes, dstRepStride,
    srcRepStride)``: the half-block flags apply to 8-bit types only; strides in 32 B
    blocks (uint16_t); repeatTimes in [0, 255]."""

    dstHighHalf: bool = False
    srcHighHalf: bool = False
    repeatTimes: int = 1
    dstRepStride: int = 0
    srcRepStride: int = 0


# -- Transpose -----------------------------------------------------------------------------
def Transpose(dst: LocalTensor, src: LocalTensor, sharedTmpBuffer: LocalTensor | None = None,
              transposeParams: TransposeParamsExt | None = None) -> None:
    """``Transpose(dst, src)`` — one 16 x 16 matrix of 2-byte elements (dst may be src);
    ``Transpose(dst, src, sharedTmpBuffer, transposeParams)`` — the extended form.

    Extended form: ``TRANSPOSE_NCHW2NHWC`` turns src ``[N, C, H, W]`` into dst ``[N, H, W,
    C]``, ``TRANSPOSE_NHWC2NCHW`` src ``[N, H, W, C]`` into dst ``[N, C, H, W]`` (compact
    row-major, ``nSize * cSize * hSize * wSize`` elements each; a zero size is a NOP);
    ``TRANSPOSE_ND2ND_B16`` is the 16 x 16 transpose (uint16); ``TRANSPOSE_TYPE_NONE`` does
    nothing. sharedTmpBuffer is a uint8 LocalTensor of at least the documented size.

    Raises:
        DtypeError / KernelError: dtype not supported for the form / SoC; a transposeType
            the page marks as not supported.
        AlignmentError: an operand not 32 B aligned, or hSize * wSize * sizeof(T) not a
            multiple of 32 B. LimitError: a size out of range. UbError: an operand or the
            temporary buffer too small; src and dst overlapping in the NCHW forms (a
            checker finding).
    """
    ctx = _core.current_core()
    name = "Transpose"
    if transposeParams is None:
        _transpose16(ctx, dst, src, TRANSPOSE_TYPES)
        return
    kind = TransposeType(transposeParams.transposeType)
    if kind == TransposeType.TRANSPOSE_TYPE_NONE:
        return                                          # "API不做任何处理"
    if kind == TransposeType.TRANSPOSE_ND2ND_B16:
        if (transposeParams.hSize, transposeParams.wSize) != (16, 16):
            raise LimitError(name, f"TRANSPOSE_ND2ND_B16 takes hSize = wSize = 16, not "
                             f"{transposeParams.hSize} x {transposeParams.wSize} (Transpose.md)",
                             pipe="PIPE_V")
        _transpose16(ctx, dst, src, ND2ND_B16_TYPES)
        return
    if kind not in (TransposeType.TRANSPOSE_NCHW2NHWC, TransposeType.TRANSPOSE_NHWC2NCHW):
        raise KernelError(name, f"transposeType {kind.name} is not supported (Transpose.md: "
                          "当前不支持)", pipe="PIPE_V")
    _transpose_4d(ctx, dst, src, sharedTmpBuffer, transposeParams, kind)


def _transpose16(ctx, dst: LocalTensor, src: LocalTensor, table: dict) -> None:
    name = "Transpose"
    dt = same_dtype(name, dst, src)
    check_types(ctx, name, dt, table)
    check_aligned(name, dst, src)
    block = src.elements(256, name).reshape(16, 16).T.copy()     # in place is allowed
    dst.elements(256, name)[...] = block.reshape(-1)
    issue_vector(ctx, name, 256, ONE_REPEAT_BYTE_SIZE // dt.itemsize, dst, (src,))


def _transpose_4d(ctx, dst, src, tmp, p: TransposeParamsExt, kind: TransposeType) -> None:
    name = "Transpose"
    dt = same_dtype(name, dst, src)
    check_types(ctx, name, dt, NCHW_TYPES)
    if tmp is None:
        raise KernelError(name, f"{kind.name} needs a sharedTmpBuffer", pipe="PIPE_V")
    check_aligned(name, dst, src, tmp)
    n = check_range(name, "nSize", p.nSize, 65535)
    c = check_range(name, "cSize", p.cSize, 4095)
    h = check_range(name, "hSize", p.hSize, 65535)
    w = check_range(name, "wSize", p.wSize, 65535)
    hw = check_range(name, "hSize * wSize", h * w, 4095)
    isz = dt.itemsize
    if hw * isz % ONE_BLK_SIZE:
        raise AlignmentError(name, f"hSize * wSize * sizeof(T) = {hw * isz} B is not a "
                             "multiple of 32 B (Transpose.md 约束说明)", pipe="PIPE_V")
    if n * c * hw == 0:
        return                                          # zero sizes: nothing is written
    # the documented minimum temporary buffer (Transpose.md, A2/A3 table)
    unit = (32 if isz == 1 else 16) * (ONE_BLK_SIZE // isz) * isz
    need = (c + 2 if kind == TransposeType.TRANSPOSE_NCHW2NHWC else 2 * c + 1) * unit
    if tmp.length * tmp.dtype.itemsize < need:
        raise UbError(name, f"sharedTmpBuffer holds {tmp.length * tmp.dtype.itemsize} B; "
                      f"{kind.name} with cSize = {c} needs {need} B (Transpose.md)",
                      pipe="PIPE_V")
    total = n * c * hw
    x = src.elements(total, name)
    y = dst.elements(total, name)
    lo_d, lo_s = dst.offset, src.offset
    report_same_memory(ctx, name, (lo_d, lo_d + total * isz), (lo_s, lo_s + total * isz))
    if kind == TransposeType.TRANSPOSE_NCHW2NHWC:
        out = x.reshape(n, c, hw).transpose(0, 2, 1)
    else:
        out = x.reshape(n, hw, c).transpose(0, 2, 1)
    y[...] = out.reshape(-1)
    tmp.bytes_view(need, name, "PIPE_V")
    if ctx.tracker is not None:                        # the library writes its scratch
        ctx.tracker.write(ctx, PIPE_V, tmp.offset, need, name)
    rate = ONE_REPEAT_BYTE_SIZE // isz
    for step in ("Transpose.TransDataTo5HD", "Transpose.DataCopy", "Transpose.TransDataTo5HD"):
        issue_vector(ctx, step, total, rate, dst, (src,))


# -- TransDataTo5HD ------------------------------------------------------------------------
def _addresses(ctx, lst, name: str, what: str):
    """(UB byte addresses, buffer limits, dtype or None) of one address list: 16
    LocalTensors, 16 ints (GetPhyAddr values), or a uint64 LocalTensor holding 16."""
    if isinstance(lst, LocalTensor):
        if lst.dtype != U64:
            raise KernelError(name, f"{what} as a LocalTensor must be uint64_t addresses, not "
                              f"{lst.dtype.name}", pipe="PIPE_V")
        check_aligned(name, lst)
        addr = lst.elements(NCHW_CONV_ADDR_LIST_SIZE, name).astype(np.int64)
        if ctx.tracker is not None:                    # the unit loads the list from UB
            ctx.tracker.read(ctx, PIPE_V, lst.offset, NCHW_CONV_ADDR_LIST_SIZE * 8, name)
        return addr, np.full(NCHW_CONV_ADDR_LIST_SIZE, ctx.soc.ub_size), None
    lst = list(lst)
    if len(lst) != NCHW_CONV_ADDR_LIST_SIZE:
        raise KernelError(name, f"{what} has {len(lst)} entries, not "
                          f"{NCHW_CONV_ADDR_LIST_SIZE} (NCHW_CONV_ADDR_LIST_SIZE)", pipe="PIPE_V")
    if all(isinstance(t, LocalTensor) for t in lst):
        dt = same_dtype(name, *lst)
        return (np.array([t.offset for t in lst], dtype=np.int64),
                np.array([t.limit for t in lst], dtype=np.int64), dt)
    return (np.array([int(a) for a in lst], dtype=np.int64),
            np.full(NCHW_CONV_ADDR_LIST_SIZE, ctx.soc.ub_size), None)


def _block_bytes(name: str, addr, limit, starts, width: int, what: str) -> np.ndarray:
    """Byte addresses (repeat, 16, width) of the blocks each list entry covers per repeat,
    checked against the entry's buffer."""
    if (addr % ONE_BLK_SIZE).any():
        bad = int(addr[addr % ONE_BLK_SIZE != 0][0])
        raise AlignmentError(name, f"{what} address 0x{bad:x} is not 32 B aligned "
                             "(TransDataTo5HD.md)", pipe="PIPE_V")
    first = addr[None, :] + starts[:, None]                      # (repeat, 16)
    if first.size and ((first + ONE_BLK_SIZE).max(axis=0) > limit).any():
        i = int(np.argmax((first + ONE_BLK_SIZE).max(axis=0) > limit))
        raise UbError(name, f"{what}[{i}] at UB 0x{int(addr[i]):x}: its last block ends past "
                      f"its buffer at {int(limit[i])} (check repeatTimes and the RepStride)",
                      pipe="PIPE_V")
    return first[:, :, None] + np.arange(width)[None, None, :]


def TransDataTo5HD(dstList, srcList, nchwconvParams: TransDataTo5HDParams, *,
                   dtype=None) -> None:
    """Transpose 16 data blocks per repeat (NCHW -> NC1HWC0 and block transposes).

    Forms (TransDataTo5HD.md): ``dstList``/``srcList`` are 16 LocalTensors of T each, or
    16 UB addresses (``t.GetPhyAddr()``), or a uint64 LocalTensor holding the 16
    addresses; with addresses, pass the template type as ``dtype=`` (``TransDataTo5HD<T>``).
    Semantics and the repeat addressing are in the module docstring.

    Raises:
        DtypeError / KernelError: dtype or SoC not supported; a list that is not 16 long;
            no dtype for an address form. AlignmentError: an address not 32 B aligned.
        LimitError: repeatTimes or a stride out of range. UbError: a block outside its
            buffer (or the UB, for raw addresses); src and dst blocks partly overlapping
            (a checker finding).
    Cost [R]: 2 cycles per repeat (512 B at Transpose's 256 B per cycle).
    """
    name = "TransDataTo5HD"
    ctx = _core.current_core()
    d_addr, d_lim, d_dt = _addresses(ctx, dstList, name, "dstList")
    s_addr, s_lim, s_dt = _addresses(ctx, srcList, name, "srcList")
    dt = np.dtype(dtype) if dtype is not None else (d_dt or s_dt)
    if dt is None:
        raise KernelError(name, "the address-list forms need the template type: pass dtype=",
                          pipe="PIPE_V")
    for got in (d_dt, s_dt):
        if got is not None and got != dt:
            raise DtypeError(name, f"the lists mix {got.name} and {dt.name}", pipe="PIPE_V")
    check_types(ctx, name, dt, TRANS_5HD_TYPES)
    p = nchwconvParams
    repeat = repeat_times(name, p.repeatTimes)
    d_rep = check_range(name, "dstRepStride", p.dstRepStride, 65535)
    s_rep = check_range(name, "srcRepStride", p.srcRepStride, 65535)
    # repeat r starts r strides on; a single repeat already starts one stride on (page note)
    steps = np.arange(repeat) if repeat > 1 else np.ones(repeat, dtype=np.int64)
    isz = dt.itemsize
    half = isz == 1
    s_bytes = _block_bytes(name, s_addr, s_lim, steps * s_rep * ONE_BLK_SIZE, ONE_BLK_SIZE,
                           "srcList")
    d_bytes = _block_bytes(name, d_addr, d_lim, steps * d_rep * ONE_BLK_SIZE, ONE_BLK_SIZE,
                           "dstList")
    if half:                     # 8-bit: only one half of each dst block is written
        d_bytes = d_bytes[:, :, 16 * bool(p.dstHighHalf):][:, :, :16]
    ub = ctx.ub
    src = ub[s_bytes].view(dt).reshape(repeat, 16, ONE_BLK_SIZE // isz)   # [r, block, elem]
    if isz == 2:
        out = src.transpose(0, 2, 1)                   # dst block j, elem i = src i, elem j
    elif isz == 4:                                     # dst 2j+k, elem m = src 8k+m, elem j
        out = src.reshape(repeat, 2, 8, 8).transpose(0, 3, 1, 2).reshape(repeat, 16, 8)
    else:                                              # dst j half, byte i = src i, 16h+j
        lo = 16 * bool(p.srcHighHalf)
        out = src[:, :, lo:lo + 16].transpose(0, 2, 1)
    out = np.ascontiguousarray(out).view(np.uint8).reshape(d_bytes.shape)
    _check_overlap(ctx, name, s_bytes, d_bytes, repeat)
    ub[d_bytes] = out
    if ctx.tracker is not None and repeat:
        ctx.tracker.read_at(ctx, PIPE_V, s_bytes.reshape(-1), name)
        ctx.tracker.write_at(ctx, PIPE_V, d_bytes.reshape(-1), name)
    lanes = 2 * ONE_REPEAT_BYTE_SIZE // isz
    issue_vector(ctx, name, repeat * lanes, ONE_REPEAT_BYTE_SIZE // isz, None, (),
                 repeats=repeat, lanes=lanes, tracked=True)


def _check_overlap(ctx, name: str, s_bytes, d_bytes, repeat: int) -> None:
    """Sources and destinations overlap completely (a single in-place repeat) or not at
    all (通用说明和约束.md 地址重叠约束); anything else is a checker finding."""
    if not repeat or not np.isin(d_bytes, s_bytes).any():
        return
    if repeat == 1 and d_bytes.shape == s_bytes.shape and \
            np.array_equal(np.sort(d_bytes, axis=None), np.sort(s_bytes, axis=None)):
        return
    _repeat.report_overlap(ctx, name, "partial")
