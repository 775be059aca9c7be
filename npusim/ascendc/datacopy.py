"""DataCopy and DataCopyPad between GM and UB, DataCopy and Copy from UB to UB.

Rules (docs/reference/hardware.md §3 "Memory and alignment"; asc-devkit
``docs/zh/api/SIMD-API/基础API/Memory矢量计算/数据搬运/``):

* GM -> UB runs on PIPE_MTE2, UB -> GM on PIPE_MTE3, UB -> UB (DataCopy, Copy) on PIPE_V.
* The UB address must be 32 B aligned.
* Contiguous DataCopy moves whole 32 B blocks: ``count * sizeof(T)`` that is not a
  multiple of 32 is silently rounded *down*, as on hardware; the checker reports it.
* DataCopyParams: blockCount [0, 4095], blockLen and gaps [0, 65535], in 32 B units
  (GM <-> UB and UB -> UB alike).
* DataCopyPad: blockLen in bytes [0, 2097151]; each GM->UB row is padded to 32 B in UB
  (left/right padding, then "dummy" bytes: see :func:`DataCopyPad`).
* Copy: the level-0 vector copy with masks and block strides (Copy.md).

The UB -> UB forms are PIPE_V instructions: Shared rules (the two forms, 32 B UB alignment, address overlap, the cost terms —
head, repeats, UB bank conflicts — and the common errors): the
:mod:`npusim.ascendc.vector` module docstring. DataCopy UB -> UB costs
``vec_head_cycles + ceil(bytes / 256)`` cycles (256 B a cycle, docs/reference/hardware.md
§2.1 pipe table; docs/calibration.md "Costs of instruction classes"), with no bank-conflict
term; Copy is costed as a level-0 instruction at the Duplicate rates.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npusim import lockstep as _lockstep
from npusim.ascendc import checker
from npusim.ascendc import timing_only as _timing_only
from npusim.ascendc import core as _core
from npusim.ascendc import nans as _nans
from npusim.ascendc import repeat as _repeat
from npusim.ascendc.gather import (BF16, F16, F32, I16, I32, U16, U32, check_aligned,
                                   check_range, check_types, repeat_times)
from npusim.ascendc.tensor import GlobalTensor, LocalTensor
from npusim.ascendc.types import Nd2NzParams
from npusim.ascendc.types import (PIPE_MTE2, PIPE_MTE3, PIPE_S, PIPE_V, CacheMode,
                                  DataCopyExtParams, DataCopyPadExtParams, DataCopyParams,
                                  TPosition)
from npusim.ascendc.vector import RATE_SIMPLE, run_level0, same_dtype
from npusim.errors import AlignmentError, KernelError, LimitError

__all__ = ["DataCopy", "DataCopyPad", "SetPadValue", "Copy", "CopyRepeatParams"]

#: UB -> UB copy rate on PIPE_V, bytes per cycle (docs/reference/hardware.md §2.1 pipe table).
_UB_TO_UB_BYTES_PER_CYCLE = 256


def _check_ub_aligned(t: LocalTensor, instruction: str, pipe: str) -> None:
    if t.offset % 32:
        raise AlignmentError(instruction, f"UB address 0x{t.offset:x} is not 32 B aligned "
                             "(docs/reference/hardware.md §3)", pipe=pipe)


def _check_range(name: str, value: int, hi: int, instruction: str) -> None:
    """LimitError naming the field unless ``0 <= value <= hi``."""
    if not 0 <= int(value) <= hi:
        raise LimitError(instruction, f"{name} = {value} is outside [0, {hi}] "
                         f"(docs/reference/hardware.md §3 {instruction} parameters)")


def _track(ctx, src_is_gm: bool, ub: LocalTensor, rows: int, row: int, ub_pitch: int,
           lead: int, name: str) -> None:
    """Tell the checker what this copy did to the UB: the rows it wrote (MTE2) or read
    (MTE3). ``lead`` skips padding at the start of each row."""
    tracker = ctx.tracker
    if tracker is None:
        return
    start = ub.offset + lead
    span = (rows - 1) * ub_pitch + row
    if src_is_gm:
        view = tracker.init[start:start + span]
        view = _strided(view, rows, row, ub_pitch) if rows > 1 else view
        tracker.write(ctx, int(PIPE_MTE2), start, span, name, init_view=view)
    elif rows == 1:
        tracker.read(ctx, int(PIPE_MTE3), start, row, name)
    else:
        for r in range(rows):
            tracker.read(ctx, int(PIPE_MTE3), start + r * ub_pitch, row, name)


def _strided(buf: np.ndarray, rows: int, row_bytes: int, pitch: int) -> np.ndarray:
    """rows x row_bytes view of ``buf`` with ``pitch`` bytes between row starts."""
    if rows == 1:
        return buf[:row_bytes].reshape(1, row_bytes)
    return _lockstep.strided_view(buf, (rows, row_bytes), (pitch, 1))


def _write_gm(ctx, gm_bytes: np.ndarray, ub_bytes: np.ndarray) -> None:
    """Store UB bytes to GM; with SetAtomicAdd<T> in force, add them as T instead."""
    dt = ctx.atomic_dtype
    if dt is None:
        gm_bytes[...] = ub_bytes
        return
    g = np.ascontiguousarray(gm_bytes).reshape(-1).view(dt)
    u = np.ascontiguousarray(ub_bytes).reshape(-1).view(dt)
    with np.errstate(all="ignore"):
        total = g + u
    _nans.canonical(total)          # an inf + -inf: the one NaN of T (npusim.ascendc.nans)
    gm_bytes[...] = total.view(np.uint8).reshape(gm_bytes.shape)


def _group_copy(ctx, src_is_gm: bool, ub: LocalTensor, gm: GlobalTensor, rows: int, row: int,
                gm_pitch: int, ub_row: int, ub_pitch: int, lead: int, name: str, pipe: str,
                fill=None) -> None:
    """The bytes of a GM <-> UB copy for every member of a lockstep group at once: ``rows``
    rows of ``row`` GM bytes ``gm_pitch`` apart, landing ``lead`` bytes into UB rows of
    ``ub_row`` bytes ``ub_pitch`` apart (``fill``: DataCopyPad's row padding). Atomic
    stores run per block (their accumulation order is per-block's)."""
    if not src_is_gm and ctx.atomic_dtype is not None:
        ctx.split()
    ctx.batch_ok = True
    try:
        ub_all = _lockstep.ub_rows(ub.bytes_view((rows - 1) * ub_pitch + ub_row, name, pipe),
                                   rows, ub_row, ub_pitch)
    finally:
        ctx.batch_ok = False
    ub_data = ub_all[..., lead:lead + row] if (lead or ub_row != row) else ub_all
    gm_rows = _lockstep.gm_rows(ctx, gm, rows, row, gm_pitch, not src_is_gm)
    _lockstep.transfer(src_is_gm, gm_rows, ub_data)
    if fill is not None:
        _fill_row_padding(ub_all, fill, lead, lead + row, ub.dtype.itemsize)


def strided_runs(rows: int, row: int, pitch: int):
    """The GM bytes of ``rows`` rows of ``row`` bytes ``pitch`` apart as the runs
    :func:`_dma` takes, or None when they are one contiguous span."""
    return ((0, row, pitch, rows),) if rows > 1 and pitch != row else None


def gm_key(ctx, gm: GlobalTensor, span: int, runs=None) -> tuple:
    """The key of a GM transfer record (npusim.timing._Memory.transfer): ``(address, span,
    bypass)`` for bytes that cover every L2 line of their span, ``(address, span, bypass,
    runs)`` for rows with lines untouched between them, ``runs`` as (offset from ``gm``,
    row bytes, pitch, count) (the checker's form, :func:`checker.note_gm`): the L2 counts
    the lines the rows touch, not the gaps. One run whose gaps (pitch - row) are shorter
    than what the L2 fills (a sector, ``l2_sector_bytes``) touches every sector of its span,
    and is kept as a span."""
    bypass = gm.cache_mode is CacheMode.CACHE_MODE_DISABLE
    soc = ctx.soc
    if runs is None or (len(runs) == 1 and (runs[0][3] <= 1 or runs[0][2] - runs[0][1]
                                            < (soc.l2_sector_bytes or soc.l2_line_bytes))):
        return (gm.address, span, bypass)
    return (gm.address, span, bypass, tuple(map(tuple, runs)))


def _dma(ctx, src_is_gm: bool, nbytes: int, name: str, gm: GlobalTensor, span: int,
         runs=None) -> None:
    """Record a transfer: ``nbytes`` moved within ``span`` bytes of GM from ``gm``'s start;
    ``runs``: the bytes it touches as (offset from ``gm``, row bytes, pitch, count) runs
    (:func:`strided_runs`; None: the whole span), which the checker compares across cores
    (:func:`checker.note_gm`).

    The key carries what the timing model needs for L2 and alignment: the GM address, the
    span touched and the tensor's L2 cache mode, and, when the rows leave whole L2 lines
    untouched between them, the runs (:func:`gm_key`).
    """
    if ctx.gm_access is not None:
        checker.note_gm(ctx, not src_is_gm, gm.address, runs or ((0, span, span, 1),), name,
                        PIPE_MTE2 if src_is_gm else PIPE_MTE3)
    key = gm_key(ctx, gm, span, runs)
    if src_is_gm:
        ctx.bytes_read += nbytes
        ctx.record(_core.DMA_IN, PIPE_MTE2, 0.0, nbytes, key, name)
    else:
        ctx.bytes_written += nbytes
        ctx.record(_core.DMA_OUT, PIPE_MTE3, 0.0, nbytes, key, name)


def DataCopy(dst, src, count_or_params) -> None:
    """Copy between GM and UB, or UB to UB.

    ``DataCopy(dst, src, count)`` copies ``count`` elements (rounded down to whole 32 B
    blocks); ``DataCopy(dst, src, DataCopyParams(...))`` copies ``blockCount`` blocks of
    ``blockLen`` x 32 B with gaps of ``srcStride`` / ``dstStride`` x 32 B.

    Raises:
        AlignmentError: the UB address is not 32 B aligned.
        LimitError: a DataCopyParams field is out of range.
        UbError / GmAccessError: the copy leaves its buffer or allocation.
        A length that is not a whole number of 32 B blocks is a checker finding
        (category Alignment): the copy is rounded down, as on hardware.

    UB -> UB (two LocalTensors; DataCopy_UBToUB_continuous.md / _highdim_split.md): one
    PIPE_V record of ``vec_head_cycles + ceil(bytes / 256)`` cycles, bytes = the whole
    blocks copied (``blockCount * blockLen * 32`` for DataCopyParams; module docstring).
    Both addresses 32 B aligned; DataCopyParams ranges as for GM. The whole source is read
    before the destination is written, so overlapping operands copy as a memmove would
    (the page sets no overlap rule; the simulator does not check one). ``blockCount`` or
    ``blockLen`` 0 is a NOP and records nothing. Any dtype (a byte copy).
    """
    if (getattr(dst, "mem", None) in _core.CUBE_MEMORIES or isinstance(count_or_params, Nd2NzParams)
            or getattr(src, "mem", None) in _core.CUBE_MEMORIES):   # L1/BT or ND->NZ: the cube's
        from npusim.ascendc.cube import datamove                   # paths (npusim.ascendc.cube)
        datamove.data_copy(dst, src, count_or_params)
        return
    ctx = _core.current_core()
    if isinstance(dst, LocalTensor) and isinstance(src, GlobalTensor):
        pipe, ub, gm, src_is_gm = "PIPE_MTE2", dst, src, True
    elif isinstance(dst, GlobalTensor) and isinstance(src, LocalTensor):
        pipe, ub, gm, src_is_gm = "PIPE_MTE3", src, dst, False
    elif isinstance(dst, LocalTensor) and isinstance(src, LocalTensor):
        _copy_ub_to_ub(ctx, dst, src, count_or_params)
        return
    else:
        raise KernelError("DataCopy", "one side must be a LocalTensor (GM -> GM is not a DataCopy)")
    _check_ub_aligned(ub, "DataCopy", pipe)
    isz = ub.dtype.itemsize
    if isinstance(count_or_params, DataCopyParams):
        p = count_or_params
        _check_range("blockCount", p.blockCount, 4095, "DataCopy")
        for name in ("blockLen", "srcStride", "dstStride"):
            _check_range(name, getattr(p, name), 65535, "DataCopy")
        rows, row = int(p.blockCount), int(p.blockLen) * 32
        if rows == 0 or row == 0:      # a NOP on A2/A3
            return
        gm_gap, ub_gap = (p.srcStride, p.dstStride) if src_is_gm else (p.dstStride, p.srcStride)
        gm_pitch, ub_pitch = row + int(gm_gap) * 32, row + int(ub_gap) * 32
        if ctx.is_group:
            _group_copy(ctx, src_is_gm, ub, gm, rows, row, gm_pitch, row, ub_pitch, 0,
                        "DataCopy", pipe)
        else:
            gm_span = (rows - 1) * gm_pitch + row
            if ctx.gm_log is not None and not src_is_gm and rows > 1 and gm_pitch != row:
                # a block alone in a lockstep launch logs the rows it stores, as a group
                # does: blocks storing interleaved tiles of one matrix do not touch
                gm_bytes = _lockstep.gm_spans(ctx, gm, gm_span, "DataCopy", pipe, True,
                                              [(0, row, gm_pitch, rows)])[0]
            else:
                gm_bytes = gm.bytes_view(gm_span, "DataCopy", pipe)
            gm_view = _strided(gm_bytes, rows, row, gm_pitch)
            ub_view = _strided(ub.bytes_view((rows - 1) * ub_pitch + row, "DataCopy", pipe),
                               rows, row, ub_pitch)
        nbytes = rows * row
        span = (rows - 1) * gm_pitch + row
        ub_span = (rows - 1) * ub_pitch + row
        _track(ctx, src_is_gm, ub, rows, row, ub_pitch, 0, "DataCopy")
    else:
        count = int(count_or_params)
        want = count * isz
        nbytes = want // 32 * 32
        if nbytes != want:
            checker.tolerated(ctx, AlignmentError(
                "DataCopy", f"{count} x {ub.dtype.name} = {want} B is not a whole number of 32 B "
                f"blocks: only {nbytes} B are copied, as on hardware; use DataCopyPad for the "
                "tail (docs/reference/hardware.md §3)", pipe=pipe), reported=True)
        if nbytes == 0:
            return
        if ctx.is_group:
            _group_copy(ctx, src_is_gm, ub, gm, 1, nbytes, nbytes, nbytes, nbytes, 0,
                        "DataCopy", pipe)
        else:
            gm_view = gm.bytes_view(nbytes, "DataCopy", pipe)
            ub_view = ub.bytes_view(nbytes, "DataCopy", pipe)
        span = ub_span = nbytes
        rows, row, gm_pitch = 1, nbytes, nbytes
        _track(ctx, src_is_gm, ub, 1, nbytes, nbytes, 0, "DataCopy")
    if ctx.is_group:
        pass
    elif src_is_gm:
        ub_view[...] = gm_view
    else:
        _write_gm(ctx, gm_view, ub_view)
    if _timing_only.ACTIVE:
        _timing_only.copy_gm_ub(ctx, src_is_gm, gm, span, ub.offset, ub.offset + ub_span)
    _dma(ctx, src_is_gm, nbytes, "DataCopy", gm, span, strided_runs(rows, row, gm_pitch))


def _copy_ub_to_ub(ctx, dst: LocalTensor, src: LocalTensor, count) -> None:
    """DataCopy UB -> UB on PIPE_V (DataCopy_UBToUB_continuous.md / _highdim_split.md): a
    count (rounded down to whole 32 B blocks, as for GM) or DataCopyParams — blockCount
    rows of blockLen x 32 B, ``srcStride`` / ``dstStride`` blocks between rows."""
    _check_ub_aligned(dst, "DataCopy", "PIPE_V")
    _check_ub_aligned(src, "DataCopy", "PIPE_V")
    if isinstance(count, DataCopyParams):
        p = count
        _check_range("blockCount", p.blockCount, 4095, "DataCopy")
        for name in ("blockLen", "srcStride", "dstStride"):
            _check_range(name, getattr(p, name), 65535, "DataCopy")
        rows, row = int(p.blockCount), int(p.blockLen) * 32
        src_pitch, dst_pitch = row + int(p.srcStride) * 32, row + int(p.dstStride) * 32
        if rows == 0 or row == 0:      # a NOP on A2/A3
            return
    else:
        want = int(count) * src.dtype.itemsize
        rows, row = 1, want // 32 * 32
        src_pitch = dst_pitch = row
        if row != want:
            checker.tolerated(ctx, AlignmentError(
                "DataCopy", f"{count} x {src.dtype.name} = {want} B is not a whole number of "
                f"32 B blocks: only {row} B are copied, as on hardware", pipe="PIPE_V"), reported=True)
    if ctx.is_group:            # a lockstep group: [G, rows, row] views
        ctx.batch_ok = True
        try:
            src_view = _lockstep.ub_rows(src.bytes_view((rows - 1) * src_pitch + row, "DataCopy",
                                                        "PIPE_V"), rows, row, src_pitch)
            dst_view = _lockstep.ub_rows(dst.bytes_view((rows - 1) * dst_pitch + row, "DataCopy",
                                                        "PIPE_V"), rows, row, dst_pitch)
        finally:
            ctx.batch_ok = False
    else:
        src_view = _strided(src.bytes_view((rows - 1) * src_pitch + row, "DataCopy", "PIPE_V"),
                            rows, row, src_pitch)
        dst_view = _strided(dst.bytes_view((rows - 1) * dst_pitch + row, "DataCopy", "PIPE_V"),
                            rows, row, dst_pitch)
    dst_view[...] = src_view.copy()          # read everything first, as the unit does
    if _timing_only.ACTIVE:
        _timing_only.set_ub(ctx, dst.offset, dst.offset + (rows - 1) * dst_pitch + row,
                            _timing_only.ub_flagged(ctx, src.offset,
                                                    src.offset + (rows - 1) * src_pitch + row))
    if ctx.tracker is not None:
        _track_rows(ctx, src.offset, rows, row, src_pitch, "DataCopy", write=False)
        _track_rows(ctx, dst.offset, rows, row, dst_pitch, "DataCopy", write=True)
    nbytes = rows * row
    ctx.record(_core.OP, PIPE_V, ctx.soc.vec_head_cycles + -(-nbytes // _UB_TO_UB_BYTES_PER_CYCLE),
               0, None, "DataCopy")


def _track_rows(ctx, offset: int, rows: int, row: int, pitch: int, name: str,
                write: bool) -> None:
    """Tell the checker about ``rows`` rows of ``row`` bytes, ``pitch`` apart, on PIPE_V."""
    tracker = ctx.tracker
    if rows == 1 or pitch == row:
        (tracker.write if write else tracker.read)(ctx, int(PIPE_V), offset, rows * row, name)
        return
    addr = (offset + np.arange(rows)[:, None] * pitch + np.arange(row)[None, :]).reshape(-1)
    (tracker.write_at if write else tracker.read_at)(ctx, int(PIPE_V), addr, name)


def DataCopyPad(dst, src, params: DataCopyExtParams,
                pad_params: DataCopyPadExtParams | None = None) -> None:
    """Copy rows whose length is not a multiple of 32 B.

    GM -> UB: ``blockCount`` rows of ``blockLen`` bytes, ``srcStride`` bytes apart in GM;
    each row lands 32 B aligned in UB (after ``leftPadding`` elements), rows separated
    by ``dstStride`` 32 B blocks. What fills a row's 32 B around its data
    (DataCopyPad_GMToUB.md "参数解释"): with no left/right padding, the "dummy" bytes up to
    32 B repeat the row's first element; with padding, the padding and the dummy are
    ``paddingValue`` when ``isPad``, else the :func:`SetPadValue` value if one was set,
    else random — the simulator leaves them unwritten, so the checker calls a read of
    them uninitialised. UB -> GM: the reverse, writing exactly ``blockLen`` bytes per row
    (``srcStride`` in 32 B blocks, ``dstStride`` in bytes); the dummy tail is read and
    dropped. The MTE2/MTE3 cost is the GM bytes moved, padding or not.

    Raises:
        LimitError: parameters out of range (docs/reference/hardware.md §3 DataCopyPad).
        AlignmentError: the UB address is not 32 B aligned, or blockLen is not a multiple
            of sizeof(T).
        LimitError: a non-zero paddingValue for a 64-bit type.
        KernelError: two LocalTensors (UB -> UB is not a DataCopyPad path on A2/A3; the
            VECIN/VECOUT -> TSCM form with Nd2NzParams is not simulated).
    """
    ctx = _core.current_core()
    p = params
    rows, row = int(p.blockCount), int(p.blockLen)
    src_stride, dst_stride = int(p.srcStride), int(p.dstStride)
    if not (0 <= rows <= 4095 and 0 <= row <= 2097151 and 0 <= src_stride < 2**32
            and 0 <= dst_stride < 2**32):
        _check_range("blockCount", rows, 4095, "DataCopyPad")
        _check_range("blockLen", row, 2097151, "DataCopyPad")
        _check_range("srcStride", src_stride, 2**32 - 1, "DataCopyPad")
        _check_range("dstStride", dst_stride, 2**32 - 1, "DataCopyPad")
    if isinstance(dst, LocalTensor) and isinstance(src, GlobalTensor):
        ub, gm, src_is_gm, pipe = dst, src, True, "PIPE_MTE2"
    elif isinstance(dst, GlobalTensor) and isinstance(src, LocalTensor):
        ub, gm, src_is_gm, pipe = src, dst, False, "PIPE_MTE3"
    elif isinstance(dst, LocalTensor) and isinstance(src, LocalTensor):
        raise KernelError("DataCopyPad", "UB -> UB is not a DataCopyPad path on A2/A3 (the "
                          "LocalTensor -> LocalTensor form with Nd2NzParams moves VECIN/VECOUT to "
                          "TSCM through GM and is not simulated); use DataCopy or Copy")
    else:
        raise KernelError("DataCopyPad", "copies between GM and UB only")
    if ub.offset & 31:
        _check_ub_aligned(ub, "DataCopyPad", pipe)
    isz = ub.dtype.itemsize
    if row % isz:
        raise AlignmentError("DataCopyPad", f"blockLen {row} B is not a multiple of "
                             f"sizeof({ub.dtype.name}) = {isz}", pipe=pipe)
    if rows == 0 or row == 0:
        return
    left = right = 0
    if src_is_gm and pad_params is not None:
        left, right = int(pad_params.leftPadding), int(pad_params.rightPadding)
        if left * isz > 32 or right * isz > 32 or left < 0 or right < 0:
            raise LimitError("DataCopyPad", f"leftPadding {left} / rightPadding {right} elements "
                             "are outside [0, 32 B] (docs/reference/hardware.md §3 DataCopyPad)")
    ub_row = -(-(left * isz + row + right * isz) // 32) * 32
    if src_is_gm:
        gm_pitch, ub_pitch = row + src_stride, ub_row + dst_stride * 32
    else:
        gm_pitch, ub_pitch = row + dst_stride, ub_row + src_stride * 32
    if ctx.is_group:     # a lockstep group: every member's rows at once
        fill = _pad_fill(ctx, ub.dtype, left, right, row, ub_row, pad_params) if src_is_gm \
            else None
        _track(ctx, src_is_gm, ub, rows, row if fill is None else ub_row, ub_pitch,
               left * isz if fill is None else 0, "DataCopyPad")
        _group_copy(ctx, src_is_gm, ub, gm, rows, row, gm_pitch, ub_row, ub_pitch, left * isz,
                    "DataCopyPad", pipe, fill)
        if _timing_only.ACTIVE:
            _timing_only.copy_gm_ub(ctx, src_is_gm, gm, (rows - 1) * gm_pitch + row, ub.offset,
                                    ub.offset + (rows - 1) * ub_pitch + ub_row)
        _dma(ctx, src_is_gm, rows * row, "DataCopyPad", gm, (rows - 1) * gm_pitch + row,
             strided_runs(rows, row, gm_pitch))
        return
    if rows == 1:        # one row: plain 1-D views (most copies)
        gm_view = gm.bytes_view(row, "DataCopyPad", pipe)
        ub_all = ub.bytes_view(ub_row, "DataCopyPad", pipe)
        ub_data = ub_all[left * isz:left * isz + row]
    else:
        gm_view = _strided(gm.bytes_view((rows - 1) * gm_pitch + row, "DataCopyPad", pipe),
                           rows, row, gm_pitch)
        ub_all = _strided(ub.bytes_view((rows - 1) * ub_pitch + ub_row, "DataCopyPad", pipe),
                          rows, ub_row, ub_pitch)
        ub_data = ub_all[:, left * isz:left * isz + row]
    fill = _pad_fill(ctx, ub.dtype, left, right, row, ub_row, pad_params) if src_is_gm else None
    _track(ctx, src_is_gm, ub, rows, row if fill is None else ub_row, ub_pitch,
           left * isz if fill is None else 0, "DataCopyPad")
    if src_is_gm:
        ub_data[...] = gm_view
        if fill is not None:
            _fill_row_padding(ub_all, fill, left * isz, left * isz + row, isz)
    else:
        _write_gm(ctx, gm_view, ub_data)
    if _timing_only.ACTIVE:
        _timing_only.copy_gm_ub(ctx, src_is_gm, gm, (rows - 1) * gm_pitch + row, ub.offset,
                                ub.offset + (rows - 1) * ub_pitch + ub_row)
    _dma(ctx, src_is_gm, rows * row, "DataCopyPad", gm, (rows - 1) * gm_pitch + row,
         strided_runs(rows, row, gm_pitch))


def _pad_fill(ctx, dtype: np.dtype, left: int, right: int, row: int, ub_row: int,
              pad_params: DataCopyPadExtParams | None):
    """What DataCopyPad GM -> UB writes around each row's data (DataCopyPad_GMToUB.md,
    "参数解释"): None — nothing (the row fills its 32 B, or the padding is "random": left
    unwritten, so reading it is an uninitialised read); "first" — no left/right padding
    but an unaligned row: the dummy bytes up to 32 B repeat the row's first element; or
    the element's bytes that fill the left/right padding and the dummy — paddingValue with
    isPad, else the SetPadValue value if one was set.

    Raises:
        LimitError: a non-zero paddingValue for a 64-bit type (only 0 is allowed).
    """
    if ub_row == row:
        return None
    if left == 0 and right == 0:
        return "first"
    if pad_params is not None and pad_params.isPad:
        value = pad_params.paddingValue
        if dtype.itemsize == 8 and value != 0:
            raise LimitError("DataCopyPad", f"paddingValue = {value}: a 64-bit type pads with "
                             "0 only (DataCopyPad_GMToUB.md)", pipe="PIPE_MTE2")
    elif ctx.pad_value is not None:
        value = ctx.pad_value
    else:
        return None
    return np.array([value], dtype=dtype).view(np.uint8)


def _fill_row_padding(ub_all: np.ndarray, fill, start: int, end: int, isz: int) -> None:
    """Write ``fill`` (an element's bytes, or "first") over each row's bytes before
    ``start`` and from ``end`` (rows along the last axis of ``ub_all``)."""
    pattern = ub_all[..., start:start + isz].copy() if isinstance(fill, str) else fill
    reps = (1,) * (pattern.ndim - 1)
    if start:
        ub_all[..., :start] = np.tile(pattern, reps + (start // isz,))
    tail = ub_all.shape[-1] - end
    if tail:
        ub_all[..., end:] = np.tile(pattern, reps + (tail // isz,))


def SetPadValue(paddingValue, pos: TPosition = TPosition.VECIN) -> None:
    """``SetPadValue<T, pos>(paddingValue)``: the value DataCopyPad GM -> UB pads with when
    ``isPad`` is false and left/right padding is requested (SetPadValue_ISASI.md; A2/A3).

    The value is converted to the copy's element type when DataCopyPad uses it; ``pos``
    (VECIN/VECOUT) is accepted for source compatibility. 1 cycle on PIPE_S.
    """
    ctx = _core.current_core()
    ctx.pad_value = paddingValue
    ctx.record(_core.OP, PIPE_S, 1, 0, None, "SetPadValue")


# -- Copy: UB -> UB on the vector unit, with masks and block strides ------------------------
#: Copy dtypes (Copy.md: Atlas A2/A3 only).
COPY_TYPES = {f: (U16, I16, F16, BF16, U32, I32, F32) for f in ("Ascend910B", "Ascend910_93")}


@dataclass
class CopyRepeatParams:
    """``CopyRepeatParams(dstStride, srcStride, dstRepeatSize, srcRepeatSize)``, in 32 B
    blocks: block strides within a repeat in [0, 65535], repeat strides in [0, 4095]
    (Copy.md 表3)."""

    dstStride: int = 1
    srcStride: int = 1
    dstRepeatSize: int = 8
    srcRepeatSize: int = 8

    def strides(self):
        """(blkStride, repStride) of dst and src."""
        return ((self.dstStride, self.dstRepeatSize), (self.srcStride, self.srcRepeatSize))


def Copy(dst: LocalTensor, src: LocalTensor, mask, repeatTime: int,
         repeatParams: CopyRepeatParams, isSetMask: bool = True) -> None:
    """UB -> UB copy on PIPE_V with a mask and block strides (level 0 only).

    ``Copy(dst, src, mask, repeatTime, CopyRepeatParams)``: repeat ``r``, lane ``l`` of
    256 B (128 16-bit / 64 32-bit lanes) copies the element at ``r * srcRepeatSize + (l //
    epb) * srcStride`` blocks (+ ``l % epb``) to the same place after dst's strides; masked
    lanes keep their bytes. In Counter mode (SetMaskCount) the mask is the element count
    of *each* repeat and repeatTime counts — unlike the other level-0 APIs (Copy.md
    约束说明); a count above the lanes of a repeat is clamped [R].

    Source: Copy.md (Atlas A2/A3: uint16/int16/half/bfloat16/uint32/int32/float).
    Cost: one 256 B repeat per cycle (128 / 64 elements, as Duplicate; §2.1), plus the
    head and bank conflicts (:mod:`npusim.ascendc.vector` module docstring). Strides:
    dstStride/srcStride in 32 B blocks [0, 65535], dstRepeatSize/srcRepeatSize in 32 B
    blocks [0, 4095]; overlap rules of the level-0 form (module docstring of vector).

    Raises:
        DtypeError / KernelError: dtype or SoC not supported. AlignmentError: an operand
        not 32 B aligned. LimitError: repeatTime, a stride or the mask out of range.
        UbError: a lane outside its buffer; a forbidden address overlap (a checker finding).
    """
    name = "Copy"
    ctx = _core.current_core()
    dt = same_dtype(name, dst, src)
    check_types(ctx, name, dt, COPY_TYPES)
    check_aligned(name, dst, src)
    p = repeatParams
    for what, value, hi in (("dstStride", p.dstStride, 65535), ("srcStride", p.srcStride, 65535),
                            ("dstRepeatSize", p.dstRepeatSize, 4095),
                            ("srcRepeatSize", p.srcRepeatSize, 4095)):
        check_range(name, what, value, hi)
    lanes = 256 // dt.itemsize
    if ctx.mask_counter:
        call = _counter_per_repeat(ctx, name, lanes, mask, repeatTime, isSetMask)
    else:
        call = _repeat.resolve(ctx, name, lanes, mask, repeatTime, isSetMask)
    run_level0(ctx, name, lambda x, out: np.copyto(out, x), dst, (src,), (mask, repeatTime, p),
               RATE_SIMPLE[dt.itemsize], isSetMask, call=call)


def _counter_per_repeat(ctx, name: str, lanes: int, mask, repeat_time,
                        is_set_mask: bool) -> _repeat.Level0:
    """Copy in Counter mode: the first ``mask`` lanes of every one of ``repeatTime``
    repeats (the register's low word when ``isSetMask`` is false)."""
    repeat = repeat_times(name, repeat_time)
    if is_set_mask:
        n = int(mask[0] if isinstance(mask, (list, tuple)) else mask)
        if n < 0:
            raise LimitError(name, f"mask = {n} is negative", pipe="PIPE_V")
        ctx.vector_mask = (n, 0)
    row = np.arange(lanes) < min(int(ctx.vector_mask[0]), lanes)
    return _repeat.Level0(repeat, lanes, np.broadcast_to(row, (repeat, lanes)))

