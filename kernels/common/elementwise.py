"""The small tiled kernels an aclnn graph puts around an operator, and Ascend C's InitOutput.

* ``ZerosLike`` (``l0op::ZerosLike``): fills a tensor with zeros.
* ``ViewCopy`` (``l0op::ViewCopy``): copies a contiguous tensor to the output.
* ``Cast`` (``l0op::Cast``): float16/bfloat16 -> float32 (``CAST_NONE``, exact),
  float32 -> float16/bfloat16 (``CAST_RINT``, as the aclnn Cast rounds), and any index
  type -> int32 (``IndexCast``, npusim/ascendc/sort.py).

These ops are not in the public sources the project follows; their tiling is ours [R]:
each core takes a contiguous slice of ``blockLength`` elements (a multiple of 64), moved in
UB tiles of ``tileLength`` elements with DataCopyPad, double-buffered (BUFFER_NUM = 2).

``InitOutput(gm, size, value)`` is the Ascend C library call that fills GM with a value; it
works through the UB the Ascend C library keeps for itself (the 8 KiB reserve of
docs/reference/hardware.md §1.7), so a kernel that calls it must be launched with
``reserve_ub=True``.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from npusim.ascendc import (Cast, DataCopyExtParams, DataCopyPad, DataCopyPadExtParams,
                            Duplicate, GetBlockIdx, GetTPipePtr, GlobalTensor, HardEvent,
                            LocalTensor, RoundMode, SetFlag, TBuf, TPipe, TPosition, TQue,
                            WaitFlag, int32_t)
from npusim.ascendc import core as _core
from npusim.ascendc.sort import IndexCast
from npusim.ascendc.sync import library_event_ids
from npusim.errors import KernelError

BUFFER_NUM = 2
#: Elements of a core's slice are a multiple of this (256 B of float32) [R].
BLOCK_ALIGN = 64

_F32 = np.dtype(np.float32)
_FLOAT_CASTS = {
    (np.dtype(np.float16), _F32): RoundMode.CAST_NONE,
    (np.dtype(ml_dtypes.bfloat16), _F32): RoundMode.CAST_NONE,
    (_F32, np.dtype(np.float16)): RoundMode.CAST_RINT,
    (_F32, np.dtype(ml_dtypes.bfloat16)): RoundMode.CAST_RINT,
}


@dataclass(frozen=True)
class ElementwiseTilingData:
    """Split of ``totalLength`` elements: ``blockLength`` per core (the last core takes the
    rest), ``tileLength`` per UB tile; ``blockDim`` cores; no workspace."""

    totalLength: int
    blockLength: int
    tileLength: int
    blockDim: int
    workspaceSize: int = 0


def elementwise_tiling(soc, total: int, in_bytes: int, out_bytes: int, *,
                       core_num: int | None = None) -> ElementwiseTilingData:
    """Tiling of a one-input one-output elementwise kernel.

    Args:
        soc: the SocSpec (cores: ``vector_block_num``; UB: ``ub_usable`` less the 8 KiB
            Ascend C reserve).
        total: elements (>= 0). in_bytes / out_bytes: element sizes of source and result
            (``in_bytes = 0`` for a kernel without input, e.g. ZerosLike).

    Returns:
        The TilingData; ``blockDim`` is 0 for an empty tensor.
    """
    core_num = soc.vector_block_num if core_num is None else int(core_num)
    total = int(total)
    if total == 0:
        return ElementwiseTilingData(0, 0, 0, 0)
    per = -(-total // core_num)
    per = -(-per // BLOCK_ALIGN) * BLOCK_ALIGN
    block_dim = -(-total // per)
    ub = soc.ub_usable - soc.ascendc_reserved_ub
    tile = ub // (BUFFER_NUM * (in_bytes + out_bytes)) // BLOCK_ALIGN * BLOCK_ALIGN
    return ElementwiseTilingData(total, per, min(per, tile), block_dim)


def _slice(t: ElementwiseTilingData) -> tuple[int, int]:
    """(first element, element count) of this core's slice."""
    start = GetBlockIdx() * t.blockLength
    return start, min(t.blockLength, t.totalLength - start)


def _params(count: int, itemsize: int) -> DataCopyExtParams:
    return DataCopyExtParams(1, count * itemsize, 0, 0, 0)


class KernelZerosLike:
    """Every core writes zeros over its slice from one zeroed UB tile."""

    def Init(self, dst, tiling: ElementwiseTilingData, dtype):
        self.t = tiling
        self.dtype = np.dtype(dtype)
        self.start, self.count = _slice(tiling)
        self.dstGm = GlobalTensor(self.dtype)
        self.dstGm.SetGlobalBuffer(dst + self.start * self.dtype.itemsize, self.count)
        self.pipe = TPipe()
        self.zeroBuf = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.zeroBuf, tiling.tileLength * self.dtype.itemsize)

    def Process(self):
        isz = self.dtype.itemsize
        words = self.t.tileLength * isz // 4
        zero = self.zeroBuf.Get(int32_t)
        Duplicate(zero, 0, words)                      # all-zero bits are 0 in every type
        eventId = GetTPipePtr().FetchEventID(HardEvent.V_MTE3)
        SetFlag(HardEvent.V_MTE3, eventId)
        WaitFlag(HardEvent.V_MTE3, eventId)
        src = zero.ReinterpretCast(self.dtype)
        for off in range(0, self.count, self.t.tileLength):
            n = min(self.t.tileLength, self.count - off)
            DataCopyPad(self.dstGm[off], src, _params(n, isz))


def zeros_like(dst, tiling, dtype):
    """Kernel entry of ZerosLike: ``dst`` (device address) of ``tiling.totalLength`` x dtype."""
    op = KernelZerosLike()
    op.Init(dst, tiling, dtype)
    op.Process()


class KernelViewCopy:
    """GM -> UB -> GM copy with two ping-pong buffers (MTE2/MTE3 overlap)."""

    def Init(self, src, dst, tiling: ElementwiseTilingData, dtype):
        self.t = tiling
        self.dtype = np.dtype(dtype)
        self.start, self.count = _slice(tiling)
        isz = self.dtype.itemsize
        self.srcGm, self.dstGm = GlobalTensor(self.dtype), GlobalTensor(self.dtype)
        self.srcGm.SetGlobalBuffer(src + self.start * isz, self.count)
        self.dstGm.SetGlobalBuffer(dst + self.start * isz, self.count)
        self.pipe = TPipe()
        self.bufs = [TBuf(TPosition.VECCALC) for _ in range(BUFFER_NUM)]
        for b in self.bufs:
            self.pipe.InitBuffer(b, tiling.tileLength * isz)

    def Process(self):
        isz = self.dtype.itemsize
        pad = DataCopyPadExtParams(False, 0, 0, 0)
        pending = []
        for i, off in enumerate(range(0, self.count, self.t.tileLength)):
            b = i % BUFFER_NUM
            n = min(self.t.tileLength, self.count - off)
            local = self.bufs[b].Get(self.dtype)
            if i >= BUFFER_NUM:                          # the store from this buffer is done
                WaitFlag(HardEvent.MTE3_MTE2, b)
                pending.remove(b)
            DataCopyPad(local, self.srcGm[off], _params(n, isz), pad)
            SetFlag(HardEvent.MTE2_MTE3, b)
            WaitFlag(HardEvent.MTE2_MTE3, b)
            DataCopyPad(self.dstGm[off], local, _params(n, isz))
            SetFlag(HardEvent.MTE3_MTE2, b)
            pending.append(b)
        for b in pending:
            WaitFlag(HardEvent.MTE3_MTE2, b)


def view_copy(src, dst, tiling, dtype):
    """Kernel entry of ViewCopy."""
    op = KernelViewCopy()
    op.Init(src, dst, tiling, dtype)
    op.Process()


class KernelCast:
    """CopyIn / Compute / CopyOut over tiles, double-buffered through two TQues."""

    def Init(self, src, dst, tiling: ElementwiseTilingData, src_dtype, dst_dtype):
        self.t = tiling
        self.srcType, self.dstType = np.dtype(src_dtype), np.dtype(dst_dtype)
        key = (self.srcType, self.dstType)
        if self.dstType == np.dtype(np.int32):
            self.roundMode = None                        # IndexCast
        elif key in _FLOAT_CASTS:
            self.roundMode = _FLOAT_CASTS[key]
        else:
            raise KernelError("Cast", f"no Cast kernel from {self.srcType.name} to "
                              f"{self.dstType.name}")
        self.start, self.count = _slice(tiling)
        self.srcGm, self.dstGm = GlobalTensor(self.srcType), GlobalTensor(self.dstType)
        self.srcGm.SetGlobalBuffer(src + self.start * self.srcType.itemsize, self.count)
        self.dstGm.SetGlobalBuffer(dst + self.start * self.dstType.itemsize, self.count)
        self.pipe = TPipe()
        self.inQue = TQue(TPosition.VECIN, 1)
        self.outQue = TQue(TPosition.VECOUT, 1)
        self.pipe.InitBuffer(self.inQue, BUFFER_NUM, tiling.tileLength * self.srcType.itemsize)
        self.pipe.InitBuffer(self.outQue, BUFFER_NUM, tiling.tileLength * self.dstType.itemsize)

    def Process(self):
        for off in range(0, self.count, self.t.tileLength):
            n = min(self.t.tileLength, self.count - off)
            self.CopyIn(off, n)
            self.Compute(n)
            self.CopyOut(off, n)

    def CopyIn(self, off, n):
        local = self.inQue.AllocTensor(self.srcType)
        DataCopyPad(local, self.srcGm[off], _params(n, self.srcType.itemsize),
                    DataCopyPadExtParams(False, 0, 0, 0))
        self.inQue.EnQue(local)

    def Compute(self, n):
        x = self.inQue.DeQue(self.srcType)
        y = self.outQue.AllocTensor(self.dstType)
        if self.roundMode is None:
            IndexCast(y, x, n)
        else:
            Cast(y, x, self.roundMode, n)
        self.outQue.EnQue(y)
        self.inQue.FreeTensor(x)

    def CopyOut(self, off, n):
        y = self.outQue.DeQue(self.dstType)
        DataCopyPad(self.dstGm[off], y, _params(n, self.dstType.itemsize))
        self.outQue.FreeTensor(y)


def cast(src, dst, tiling, src_dtype, dst_dtype):
    """Kernel entry of Cast: ``tiling.totalLength`` elements of src_dtype -> dst_dtype."""
    op = KernelCast()
    op.Init(src, dst, tiling, src_dtype, dst_dtype)
    op.Process()


# -- InitOutput (Ascend C library call) ----------------------------------------------------
def InitOutput(gmTensor: GlobalTensor, size: int, value) -> None:
    """``InitOutput(gmWorkspaceAddr, size, value)``: set ``size`` elements of ``gmTensor`` to
    ``value``, through the UB the Ascend C library reserves for itself (8 KiB; the kernel
    must be launched with ``reserve_ub=True``).

    Costs one Duplicate and one DataCopyPad per 8 KiB, with the V -> MTE3 flag between them.
    """
    ctx = _core.current_core()
    reserved_start = ctx.ub_capacity
    reserved = ctx.soc.ub_usable - reserved_start
    if reserved < 32:
        raise KernelError("InitOutput", "the Ascend C library UB reserve is not available: "
                          "launch the kernel with reserve_ub=True (docs/reference/hardware.md §1.7)")
    dtype = gmTensor.dtype
    size = int(size)
    if size <= 0:
        return
    chunk = reserved // 32 * 32 // dtype.itemsize
    local = LocalTensor(ctx, dtype, reserved_start, chunk, ctx.soc.ub_usable)
    Duplicate(local, value, min(chunk, size))
    with library_event_ids():             # eventID 7: the library's own (hardware.md §3)
        SetFlag(HardEvent.V_MTE3, 7)
        WaitFlag(HardEvent.V_MTE3, 7)
    for off in range(0, size, chunk):
        n = min(chunk, size - off)
        DataCopyPad(gmTensor[off], local, _params(n, dtype.itemsize))
    with library_event_ids():
        SetFlag(HardEvent.MTE3_V, 7)
        WaitFlag(HardEvent.MTE3_V, 7)


__all__ = ["ElementwiseTilingData", "elementwise_tiling", "zeros_like", "view_copy", "cast",
           "InitOutput", "KernelZerosLike", "KernelViewCopy", "KernelCast"]
