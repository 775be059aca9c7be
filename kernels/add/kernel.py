"""Device code of aclnnAdd: ``KernelAdd`` (the elementwise l0 Add/Axpy/Mul+Add) and
``KernelBroadcastTo`` (the l0 BroadcastTo/Contiguous that materialises a broadcast or
strided input in the output's shape in the workspace). One instance per block (AIV).

``KernelAdd`` per UB tile, with double-buffered VECIN/VECOUT queues::

    CopyIn:  x, y tiles GM -> UB (DataCopy; DataCopyPad for a tile that is not 32 B whole)
    Compute: x, y -> compute dtype (Cast chains), [Muls(y, alpha)], Add(z, x, y),
             [wrap to 8 bits / clamp bool], z -> out dtype (Cast chain)
    CopyOut: z tile UB -> GM

The recipe (compute dtype, cast chains, alpha, wrap) comes from the host
(:func:`npusim.kernels.add.tiling.add_recipe`, whose docstring gives the sources and the order of
operations). ``KernelBroadcastTo`` is described in :func:`npusim.kernels.add.tiling.broadcast_to_tiling`.
"""
from __future__ import annotations

import numpy as np

from npusim.kernels.add import tiling as _t
from npusim.ascendc import (Add, Adds, Cast, DataCopy, DataCopyExtParams, DataCopyPad,
                            DataCopyPadExtParams, GetBlockIdx, GlobalTensor, Mins, Muls,
                            RoundMode, Sub, TBuf, TPipe, TPosition, TQue, int32_t)
from npusim.ascendc.broadcast import Broadcast

BUFFER_NUM = _t.BUFFER_NUM


def _copy_in(local, gm, count):
    """GM -> UB: DataCopy for whole 32 B blocks, DataCopyPad for a ragged tail."""
    nbytes = count * local.dtype.itemsize
    if nbytes % 32 == 0:
        DataCopy(local, gm, count)
    else:
        DataCopyPad(local, gm, DataCopyExtParams(1, nbytes, 0, 0, 0),
                    DataCopyPadExtParams(False, 0, 0, 0))


def _copy_out(gm, local, count):
    """UB -> GM: DataCopy for whole 32 B blocks, DataCopyPad (exact bytes) otherwise."""
    nbytes = count * local.dtype.itemsize
    if nbytes % 32 == 0:
        DataCopy(gm, local, count)
    else:
        DataCopyPad(gm, local, DataCopyExtParams(1, nbytes, 0, 0, 0))


class KernelAdd:
    """One block of ``z = cast(x + alpha * y)`` over contiguous, same-length x, y and z."""

    def __init__(self):
        self.pipe = TPipe()
        self.inQueueX = TQue(TPosition.VECIN, BUFFER_NUM)
        self.inQueueY = TQue(TPosition.VECIN, BUFFER_NUM)
        self.outQueueZ = TQue(TPosition.VECOUT, BUFFER_NUM)
        self.xCalcBuf = TBuf(TPosition.VECCALC)
        self.yCalcBuf = TBuf(TPosition.VECCALC)
        self.zCalcBuf = TBuf(TPosition.VECCALC)
        self.scratchBufs = (TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC))

    def Init(self, x, y, z, tiling):
        t = tiling
        self.tiling = t
        blockIdx = GetBlockIdx()
        offset = blockIdx * t.blockFactor
        self.blockLength = t.blockFactor if blockIdx < t.blockDim - 1 else t.tailBlockFactor
        self.xGm, self.yGm, self.zGm = (GlobalTensor(t.selfDtype), GlobalTensor(t.otherDtype),
                                        GlobalTensor(t.outDtype))
        self.xGm.SetGlobalBuffer(x + offset * t.selfDtype.itemsize, self.blockLength)
        self.yGm.SetGlobalBuffer(y + offset * t.otherDtype.itemsize, self.blockLength)
        self.zGm.SetGlobalBuffer(z + offset * t.outDtype.itemsize, self.blockLength)
        n, cs = t.ubFactor, t.computeDtype.itemsize
        self.pipe.InitBuffer(self.inQueueX, BUFFER_NUM, n * t.selfDtype.itemsize)
        self.pipe.InitBuffer(self.inQueueY, BUFFER_NUM, n * t.otherDtype.itemsize)
        self.pipe.InitBuffer(self.outQueueZ, BUFFER_NUM, n * t.outDtype.itemsize)
        for buf, casts in ((self.xCalcBuf, t.selfCasts), (self.yCalcBuf, t.otherCasts),
                           (self.zCalcBuf, t.outCasts)):
            if casts:
                self.pipe.InitBuffer(buf, n * cs)
        for k in range(t.scratchNum):
            self.pipe.InitBuffer(self.scratchBufs[k], n * _t.SCRATCH_BYTES)

    def Process(self):
        n = self.tiling.ubFactor
        loops = -(-self.blockLength // n)
        for i in range(loops):
            count = min(n, self.blockLength - i * n)
            self.CopyIn(i * n, count)
            self.Compute(count)
            self.CopyOut(i * n, count)

    def CopyIn(self, offset, count):
        t = self.tiling
        xLocal = self.inQueueX.AllocTensor(t.selfDtype)
        yLocal = self.inQueueY.AllocTensor(t.otherDtype)
        _copy_in(xLocal, self.xGm[offset], count)
        _copy_in(yLocal, self.yGm[offset], count)
        self.inQueueX.EnQue(xLocal)
        self.inQueueY.EnQue(yLocal)

    def CastChain(self, src, steps, final, count):
        """Apply ``steps`` ((dtype, RoundMode), ...) to ``src``: intermediates in the scratch
        buffers, the last Cast into ``final`` (a TBuf, or a LocalTensor). Returns the result."""
        cur = src
        for k, (dtype, mode) in enumerate(steps):
            if k == len(steps) - 1:
                dst = final if not isinstance(final, TBuf) else final.Get(dtype)
            else:
                dst = self.scratchBufs[k % 2].Get(dtype)
            Cast(dst, cur, mode, count)
            cur = dst
        return cur

    def Compute(self, count):
        t = self.tiling
        xLocal = self.inQueueX.DeQue(t.selfDtype)
        yLocal = self.inQueueY.DeQue(t.otherDtype)
        zLocal = self.outQueueZ.AllocTensor(t.outDtype)
        x = self.CastChain(xLocal, t.selfCasts, self.xCalcBuf, count)
        y = self.CastChain(yLocal, t.otherCasts, self.yCalcBuf, count)
        z = self.zCalcBuf.Get(t.computeDtype) if t.outCasts else zLocal
        if t.alpha is not None:
            Muls(y, y, t.alpha, count)                      # alpha * other, rounded to cT
            if t.productDtype is not None:                  # Mul's output tensor is bf16
                p = self.scratchBufs[0].Get(t.productDtype)
                Cast(p, y, RoundMode.CAST_RINT, count)
                Cast(y, p, RoundMode.CAST_NONE, count)
        Add(z, x, y, count)
        if t.wrap == "bool":
            Mins(z, z, 1, count)                            # True + True is True
        elif t.wrap is not None:
            self.Wrap8(z, y, count)
        if t.outCasts:
            self.CastChain(z, t.outCasts, zLocal, count)
        self.outQueueZ.EnQue(zLocal)
        self.inQueueX.FreeTensor(xLocal)
        self.inQueueY.FreeTensor(yLocal)

    def Wrap8(self, z, work, count):
        """z := z modulo 256 into [-128, 127] (int8) or [0, 255] (uint8), exactly, in float:
        ``z - 256 * floor((z + off) / 256)`` with ``off`` 128 for int8 (TBE's
        ``uint8_int8_overflow_proc``). ``work`` is a compute-dtype buffer that is free."""
        off = 128 if self.tiling.wrap == "int8" else 0
        k = self.scratchBufs[0].Get(int32_t)
        if off:
            Adds(z, z, off, count)
        Muls(work, z, 1.0 / 256, count)                     # exact: a power of two
        Cast(k, work, RoundMode.CAST_FLOOR, count)
        Cast(work, k, RoundMode.CAST_NONE, count)
        Muls(work, work, 256, count)
        Sub(z, z, work, count)
        if off:
            Adds(z, z, -off, count)

    def CopyOut(self, offset, count):
        zLocal = self.outQueueZ.DeQue(self.tiling.outDtype)
        _copy_out(self.zGm[offset], zLocal, count)
        self.outQueueZ.FreeTensor(zLocal)


def add(x, y, z, workspace, tiling):
    """Kernel entry (``extern "C" __global__ __aicore__ void add(GM_ADDR x1, GM_ADDR x2,
    GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)``).

    Args:
        x, y: device addresses of the contiguous self/other data (``totalLength`` elements
            each, already broadcast to the output shape).
        z: device address of the contiguous output.
        workspace: unused (0 is fine).
        tiling: :class:`npusim.kernels.add.tiling.AddTilingData`.
    """
    op = KernelAdd()
    op.Init(x, y, z, tiling)
    op.Process()


class KernelBroadcastTo:
    """One block of the strided/broadcast gather ``y[o, r, c] = x[o, r, c]`` (see
    :class:`npusim.kernels.add.tiling.BroadcastToTilingData` for the index map)."""

    def __init__(self):
        self.pipe = TPipe()
        self.inQueue = TQue(TPosition.VECIN, BUFFER_NUM)
        self.outQueue = TQue(TPosition.VECOUT, BUFFER_NUM)

    def Init(self, x, y, tiling):
        t = tiling
        self.tiling = t
        blockIdx = GetBlockIdx()
        if blockIdx < t.frontCoreNum:
            self.taskNum = t.coreTaskNum
            self.taskStart = t.coreTaskNum * blockIdx
        else:
            self.taskNum = t.coreTaskNum - 1
            self.taskStart = t.coreTaskNum * t.frontCoreNum + (blockIdx - t.frontCoreNum) * self.taskNum
        self.xGm, self.yGm = GlobalTensor(t.dtype), GlobalTensor(t.dtype)
        self.xGm.SetGlobalBuffer(x)                 # a strided view: bounds come from its allocation
        self.yGm.SetGlobalBuffer(y, int(np.prod(t.outerDims)) * t.rowNum * t.colNum)
        self.pipe.InitBuffer(self.inQueue, BUFFER_NUM, t.bufferBytes)
        self.pipe.InitBuffer(self.outQueue, BUFFER_NUM, t.bufferBytes)

    def Process(self):
        t = self.tiling
        # the C++ loop ``for (task = taskStart; task < taskEnd; task++)``: blocks with as many
        # tasks of one shape run it together in lockstep (a range() needs one value)
        task, taskEnd = self.taskStart, self.taskStart + self.taskNum
        while task < taskEnd:
            rest, ct = divmod(task, t.colTiles)
            o, rt = divmod(rest, t.rowTiles)
            srcOffset, dstOffset = 0, o * t.rowNum * t.colNum
            for dim, stride in zip(reversed(t.outerDims), reversed(t.outerStrides)):
                o, i = divmod(o, dim)
                srcOffset += i * stride
            row0, col0 = rt * t.tileRows, ct * t.tileCols
            rows = min(t.tileRows, t.rowNum - row0)
            cols = min(t.tileCols, t.colNum - col0)
            srcOffset += row0 * t.rowStride + col0 * t.colStride
            dstOffset += row0 * t.colNum + col0
            self.CopyIn(srcOffset, rows, cols)
            self.Compute(rows, cols)
            self.CopyOut(dstOffset, rows, cols)
            task += 1

    def CopyIn(self, srcOffset, rows, cols):
        t = self.tiling
        isz = t.dtype.itemsize
        pitch = t.tileColsPad * isz
        rowBytes = -(-cols * isz // 32) * 32
        pad = DataCopyPadExtParams(False, 0, 0, 0)
        # each row lands 32 B aligned: zero its tail up to the next 32 B so that Compute never
        # reads undefined bytes (the checker's rule)
        rowPad = DataCopyPadExtParams(True, 0, (rowBytes - cols * isz) // isz, 0)
        xLocal = self.inQueue.AllocTensor(t.dtype)
        if t.mode == _t.ROWS:             # rows rowStride apart in GM, pitch-aligned in UB
            DataCopyPad(xLocal, self.xGm[srcOffset], DataCopyExtParams(
                rows, cols * isz, (t.rowStride - cols) * isz, (pitch - rowBytes) // 32, 0), rowPad)
        elif t.mode == _t.ROWS_EACH:      # overlapping (or very distant) rows: one copy each
            for r in range(rows):
                DataCopyPad(xLocal[r * t.tileColsPad], self.xGm[srcOffset + r * t.rowStride],
                            DataCopyExtParams(1, cols * isz, 0, 0, 0), rowPad)
        elif t.mode == _t.ROW_BROADCAST:  # one row, broadcast in UB
            DataCopyPad(xLocal, self.xGm[srcOffset], DataCopyExtParams(1, cols * isz, 0, 0, 0),
                        rowPad)
        elif t.mode == _t.SPLAT:          # one contiguous column of `rows` values
            DataCopyPad(xLocal, self.xGm[srcOffset], DataCopyExtParams(1, rows * isz, 0, 0, 0),
                        pad)
        else:                             # SPLAT_EACH: values rowStride apart, one per 32 B block
            DataCopyPad(xLocal, self.xGm[srcOffset], DataCopyExtParams(
                rows, isz, (t.rowStride - 1) * isz, 0, 0), pad)
        self.inQueue.EnQue(xLocal)

    def Compute(self, rows, cols):
        t = self.tiling
        P = t.tileColsPad
        xLocal = self.inQueue.DeQue(t.dtype)
        yLocal = self.outQueue.AllocTensor(t.dtype)
        rowLen = -(-cols * t.dtype.itemsize // 32) * 32 // t.dtype.itemsize   # cols up to 32 B
        if t.mode in (_t.ROWS, _t.ROWS_EACH):
            if rowLen == P:
                DataCopy(yLocal, xLocal, rows * P)
            else:                         # a narrower last column tile: copy the rows only
                for r in range(rows):
                    DataCopy(yLocal[r * P], xLocal[r * P], rowLen)
        elif t.mode == _t.ROW_BROADCAST:
            if rowLen == P:
                Broadcast(yLocal, xLocal, [rows, P], [1, P])
            else:
                for r in range(rows):
                    DataCopy(yLocal[r * P], xLocal, rowLen)
        elif t.mode == _t.SPLAT:
            Broadcast(yLocal, xLocal, [rows, P], [rows, 1])
        else:
            blk = 32 // t.dtype.itemsize
            for r in range(rows):
                Broadcast(yLocal[r * P], xLocal[r * blk], [P], [1])
        self.outQueue.EnQue(yLocal)
        self.inQueue.FreeTensor(xLocal)

    def CopyOut(self, dstOffset, rows, cols):
        t = self.tiling
        isz = t.dtype.itemsize
        rowBytes = -(-cols * isz // 32) * 32
        yLocal = self.outQueue.DeQue(t.dtype)
        DataCopyPad(self.yGm[dstOffset], yLocal, DataCopyExtParams(
            rows, cols * isz, (t.tileColsPad * isz - rowBytes) // 32, (t.colNum - cols) * isz, 0))
        self.outQueue.FreeTensor(yLocal)


def broadcast_to(x, y, workspace, tiling):
    """Kernel entry of BroadcastTo: ``x`` the input view's first element (device address),
    ``y`` the contiguous output; ``tiling`` a :class:`npusim.kernels.add.tiling.BroadcastToTilingData`."""
    op = KernelBroadcastTo()
    op.Init(x, y, tiling)
    op.Process()

