"""DataCopy and DataCopyPad between GM and UB (and UB to UB).

Rules (reference/hardware.md §3 "Memory and alignment"):

* GM -> UB runs on PIPE_MTE2, UB -> GM on PIPE_MTE3, UB -> UB on PIPE_V.
* The UB address must be 32 B aligned.
* Contiguous DataCopy moves whole 32 B blocks: ``count * sizeof(T)`` that is not a
  multiple of 32 is silently rounded *down*, as on hardware; the core keeps a warning.
* DataCopyParams: blockCount [0, 4095], blockLen and gaps [0, 65535], in 32 B units.
* DataCopyPad: blockLen in bytes [0, 2097151]; each GM->UB row is padded to 32 B in UB.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from npusim.ascendc import checker
from npusim.ascendc import core as _core
from npusim.ascendc.tensor import GlobalTensor, LocalTensor
from npusim.ascendc.types import (PIPE_MTE2, PIPE_MTE3, PIPE_V, CacheMode, DataCopyExtParams,
                                  DataCopyPadExtParams, DataCopyParams)
from npusim.errors import AlignmentError, KernelError

#: UB -> UB copy rate on PIPE_V, bytes per cycle (reference/hardware.md §2.1 pipe table).
_UB_TO_UB_BYTES_PER_CYCLE = 256


def _check_ub_aligned(t: LocalTensor, instruction: str, pipe: str) -> None:
    if t.offset % 32:
        raise AlignmentError(instruction, f"UB address 0x{t.offset:x} is not 32 B aligned "
                             "(reference/hardware.md §3)", pipe=pipe)


def _check_range(name: str, value: int, hi: int, instruction: str) -> None:
    if not 0 <= int(value) <= hi:
        raise AlignmentError(instruction, f"{name} = {value} is outside [0, {hi}] "
                             "(reference/hardware.md §3)")


def _track(ctx, src_is_gm: bool, ub: LocalTensor, rows: int, row: int, ub_pitch: int,
           lead: int, gm: GlobalTensor, gm_pitch: int, name: str) -> None:
    """Tell the checker what this copy did: the UB rows it wrote (MTE2) or read (MTE3),
    and the GM bytes a plain store wrote. ``lead`` skips padding at the start of each row."""
    tracker = ctx.tracker
    start = ub.offset + lead
    span = (rows - 1) * ub_pitch + row
    if tracker is not None:
        if src_is_gm:
            view = tracker.init[start:start + span]
            view = _strided(view, rows, row, ub_pitch) if rows > 1 else view
            tracker.write(ctx, int(PIPE_MTE2), start, span, name, init_view=view)
        elif rows == 1:
            tracker.read(ctx, int(PIPE_MTE3), start, row, name)
        else:
            for r in range(rows):
                tracker.read(ctx, int(PIPE_MTE3), start + r * ub_pitch, row, name)
    if not src_is_gm and ctx.atomic_dtype is None:
        ctx.gm_writes.append((gm.address, row, gm_pitch, rows, ctx.sync_all_count))


def _strided(buf: np.ndarray, rows: int, row_bytes: int, pitch: int) -> np.ndarray:
    """rows x row_bytes view of ``buf`` with ``pitch`` bytes between row starts."""
    if rows == 1:
        return buf[:row_bytes].reshape(1, row_bytes)
    return as_strided(buf, shape=(rows, row_bytes), strides=(pitch, 1), writeable=True)


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
    gm_bytes[...] = total.view(np.uint8).reshape(gm_bytes.shape)


def _dma(ctx, src_is_gm: bool, nbytes: int, name: str, gm: GlobalTensor, span: int) -> None:
    """Record a transfer: ``nbytes`` moved within ``span`` bytes of GM from ``gm``'s start.

    The key carries what the timing model needs for L2 and alignment: the GM address, the
    span touched and the tensor's L2 cache mode.
    """
    key = (gm.address, span, gm.cache_mode is CacheMode.CACHE_MODE_DISABLE)
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
        AlignmentError: a DataCopyParams field is out of range.
        UbError / GmAccessError: the copy leaves its buffer or allocation.
        A length that is not a whole number of 32 B blocks is a checker finding
        (category Alignment): the copy is rounded down, as on hardware.
    """
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
        gm_view = _strided(gm.bytes_view((rows - 1) * gm_pitch + row, "DataCopy", pipe),
                           rows, row, gm_pitch)
        ub_view = _strided(ub.bytes_view((rows - 1) * ub_pitch + row, "DataCopy", pipe),
                           rows, row, ub_pitch)
        nbytes = rows * row
        span = (rows - 1) * gm_pitch + row
        _track(ctx, src_is_gm, ub, rows, row, ub_pitch, 0, gm, gm_pitch, "DataCopy")
    else:
        count = int(count_or_params)
        want = count * isz
        nbytes = want // 32 * 32
        if nbytes != want:
            checker.report(ctx, AlignmentError(
                "DataCopy", f"{count} x {ub.dtype.name} = {want} B is not a whole number of 32 B "
                f"blocks: only {nbytes} B are copied, as on hardware; use DataCopyPad for the "
                "tail (reference/hardware.md §3)", pipe=pipe))
        if nbytes == 0:
            return
        gm_view = gm.bytes_view(nbytes, "DataCopy", pipe)
        ub_view = ub.bytes_view(nbytes, "DataCopy", pipe)
        span = nbytes
        _track(ctx, src_is_gm, ub, 1, nbytes, nbytes, 0, gm, nbytes, "DataCopy")
    if src_is_gm:
        ub_view[...] = gm_view
    else:
        _write_gm(ctx, gm_view, ub_view)
    _dma(ctx, src_is_gm, nbytes, "DataCopy", gm, span)


def _copy_ub_to_ub(ctx, dst: LocalTensor, src: LocalTensor, count) -> None:
    _check_ub_aligned(dst, "DataCopy", "PIPE_V")
    _check_ub_aligned(src, "DataCopy", "PIPE_V")
    if isinstance(count, DataCopyParams):
        raise KernelError("DataCopy", "UB -> UB copies take a count in this simulator")
    nbytes = int(count) * src.dtype.itemsize // 32 * 32
    data = src.bytes_view(nbytes, "DataCopy", "PIPE_V").copy()
    dst.bytes_view(nbytes, "DataCopy", "PIPE_V")[...] = data
    if ctx.tracker is not None:
        ctx.tracker.read(ctx, int(PIPE_V), src.offset, nbytes, "DataCopy")
        ctx.tracker.write(ctx, int(PIPE_V), dst.offset, nbytes, "DataCopy")
    ctx.record(_core.OP, PIPE_V, ctx.soc.vec_head_cycles + -(-nbytes // _UB_TO_UB_BYTES_PER_CYCLE),
               0, None, "DataCopy")


def DataCopyPad(dst, src, params: DataCopyExtParams,
                pad_params: DataCopyPadExtParams | None = None) -> None:
    """Copy rows whose length is not a multiple of 32 B.

    GM -> UB: ``blockCount`` rows of ``blockLen`` bytes, ``srcStride`` bytes apart in GM;
    each row lands 32 B aligned in UB (after ``leftPadding`` elements), rows separated
    by ``dstStride`` 32 B blocks; with ``isPad`` the left/right padding elements are set to
    ``paddingValue``. UB -> GM: the reverse, writing exactly ``blockLen`` bytes per row
    (``srcStride`` in 32 B blocks, ``dstStride`` in bytes).

    Raises:
        AlignmentError: parameters out of range (reference/hardware.md §3 DataCopyPad).
        AlignmentError: the UB address is not 32 B aligned, or blockLen is not a multiple
            of sizeof(T).
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
            raise AlignmentError("DataCopyPad", f"leftPadding {left} / rightPadding {right} elements "
                             "exceed 32 B (reference/hardware.md §3 DataCopyPad)")
    ub_row = -(-(left * isz + row + right * isz) // 32) * 32
    if src_is_gm:
        gm_pitch, ub_pitch = row + src_stride, ub_row + dst_stride * 32
    else:
        gm_pitch, ub_pitch = row + dst_stride, ub_row + src_stride * 32
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
    pad = pad_params is not None and pad_params.isPad and (left or right)
    if ctx.tracker is not None or not src_is_gm:
        _track(ctx, src_is_gm, ub, rows, (left + right) * isz + row if pad else row, ub_pitch,
               0 if pad else left * isz, gm, gm_pitch, "DataCopyPad")
    if src_is_gm:
        ub_data[...] = gm_view
        if pad:
            fill = np.array([pad_params.paddingValue], dtype=ub.dtype).view(np.uint8)
            if left:
                ub_all[..., :left * isz] = np.tile(fill, left)
            if right:
                ub_all[..., left * isz + row:left * isz + row + right * isz] = np.tile(fill, right)
    else:
        _write_gm(ctx, gm_view, ub_data)
    _dma(ctx, src_is_gm, rows * row, "DataCopyPad", gm, (rows - 1) * gm_pitch + row)
