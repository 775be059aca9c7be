"""Device code of RmsNorm: one ``KernelRmsNorm`` per block (AIV), ``blockFactor`` rows each.

Every mode computes in float32 (x and gamma are Cast to float first: A2 has no bf16
vector arithmetic), per row, in the order of the published ``ComputeSingleRow``
(``op_kernel/rms_norm_merge_n.h``)::

    sqx = x * x;  sum = ReduceSumHalfInterval(sqx)
    rstd = 1 / sqrt(sum * avgFactor + epsilon)                     (on the scalar unit)
    y = Cast((x * rstd) * gamma)

``rstd`` is computed on the scalar unit from the sum read after a V->S flag, written into
the rstd output buffer with ``SetValue`` and copied out once per tile (64 rows at a time in
SPLIT_D).

* NORMAL / MERGE_N / SINGLE_ROW: ``rowsPerTile`` rows per DataCopyPad, x and y queues
  double-buffered, the next tile's CopyIn issued before this tile's Compute; gamma is
  loaded (and cast) once per core (``CopyInGamma``: MTE2 -> V flag).
* SPLIT_D (the long-row path): each row is read twice in ``ubFactor`` chunks: pass 1 sums
  the squares (``ReduceSumHalfInterval`` per chunk, ``Add`` into a running float in UB),
  pass 2 reads x and the gamma chunk again and writes y.
"""
from __future__ import annotations

import numpy as np

from npusim.kernels.common.reduce import ReduceSumHalfInterval
from npusim.kernels.rms_norm import tiling as _t
from npusim.ascendc import (Add, Cast, DataCopyExtParams, DataCopyPad, DataCopyPadExtParams,
                            Duplicate, GetBlockIdx, GetTPipePtr, GlobalTensor, HardEvent, Mul,
                            Muls, RoundMode, SetFlag, TBuf, TPipe, TPosition, TQue,
                            WaitFlag)

BUFFER_NUM = _t.BUFFER_NUM
F32 = np.dtype(np.float32)
ONE_BLK_SIZE = 32


def _pad(count: int, isz: int) -> DataCopyPadExtParams:
    right = (-(count * isz) % ONE_BLK_SIZE) // isz
    return DataCopyPadExtParams(bool(right), 0, right, 0)


class KernelRmsNorm:
    def __init__(self):
        self.pipe = TPipe()
        self.inQueueX = TQue(TPosition.VECIN, BUFFER_NUM)
        self.inQueueGamma = TQue(TPosition.VECIN, BUFFER_NUM)
        self.outQueueY = TQue(TPosition.VECOUT, BUFFER_NUM)
        self.outQueueRstd = TQue(TPosition.VECOUT, BUFFER_NUM)
        self.xFp32Buf = TBuf(TPosition.VECCALC)
        self.sqxBuf = TBuf(TPosition.VECCALC)
        self.gammaFp32Buf = TBuf(TPosition.VECCALC)
        self.reduceBuf = TBuf(TPosition.VECCALC)

    def Init(self, x, gamma, y, rstd, tiling):
        t = self.t = tiling
        self.xType, self.gType = t.xDtype, t.gammaDtype
        self.xs, self.gs = self.xType.itemsize, self.gType.itemsize
        self.rowStart, self.rowNum = t.core_rows(GetBlockIdx())
        n = t.numCol
        self.xGm, self.yGm = GlobalTensor(self.xType), GlobalTensor(self.xType)
        self.gammaGm, self.rstdGm = GlobalTensor(self.gType), GlobalTensor(F32)
        self.xGm.SetGlobalBuffer(x + self.rowStart * n * self.xs, self.rowNum * n)
        self.yGm.SetGlobalBuffer(y + self.rowStart * n * self.xs, self.rowNum * n)
        self.gammaGm.SetGlobalBuffer(gamma, n)
        self.rstdGm.SetGlobalBuffer(rstd + self.rowStart * 4, self.rowNum)
        self.splitD = t.modeKey == _t.MODE_SPLIT_D
        width = t.ubFactor if self.splitD else t.rowsPerTile * t.numColAlign
        cols = t.ubFactor if self.splitD else t.numColAlign
        self.pipe.InitBuffer(self.inQueueX, BUFFER_NUM, width * self.xs)
        self.pipe.InitBuffer(self.outQueueY, BUFFER_NUM, width * self.xs)
        rstdRows = t.rowFactor if self.splitD else t.rowsPerTile
        self.pipe.InitBuffer(self.outQueueRstd, BUFFER_NUM, -(-rstdRows * 4 // 32) * 32)
        if self.splitD:
            self.pipe.InitBuffer(self.inQueueGamma, BUFFER_NUM, cols * self.gs)
        self.pipe.InitBuffer(self.gammaFp32Buf, cols * 4)
        self.pipe.InitBuffer(self.sqxBuf, cols * 4)
        if self.xType != F32:
            self.pipe.InitBuffer(self.xFp32Buf, cols * 4)
        # [acc (SPLIT_D running sum) | the ReduceSumHalfInterval result]
        self.pipe.InitBuffer(self.reduceBuf, 2 * ONE_BLK_SIZE)
        self.eventV2S = GetTPipePtr().FetchEventID(HardEvent.V_S)

    # -- helpers ------------------------------------------------------------------------------
    def ToFloat(self, local, dtype, offset, count, buf):
        if dtype == F32:
            return local[offset]
        w = buf.Get(F32)
        Cast(w, local[offset], RoundMode.CAST_NONE, count)
        return w

    def SumSquares(self, xf, count):
        """sum(x * x) into the result block: ``Mul`` then the halving fold of
        ``ReduceSumHalfIntervalToRepeat`` (``rms_norm_base.h``) in place on the squares."""
        sqx = self.sqxBuf.Get(F32)
        buf = self.reduceBuf.Get(F32)
        red = buf[ONE_BLK_SIZE // 4]
        Mul(sqx, xf, xf, count)
        ReduceSumHalfInterval(red, sqx, sqx, count)
        return red

    def Rstd(self, red):
        """The scalar ``1 / sqrt(sum * avgFactor + epsilon)`` (float32) after a V->S flag."""
        SetFlag(HardEvent.V_S, self.eventV2S)
        WaitFlag(HardEvent.V_S, self.eventV2S)
        total = red.GetValue(0)                      # float (red is a float tensor)
        t = self.t
        with np.errstate(all="ignore"):
            return np.float32(1) / np.sqrt(total * np.float32(t.avgFactor) + np.float32(t.epsilon))

    def Output(self, xf, gammaF, rstd, yLocal, offset, count):
        """y = Cast((x * rstd) * gamma)."""
        if self.xType == F32:
            Muls(yLocal[offset], xf, rstd, count)
            Mul(yLocal[offset], yLocal[offset], gammaF, count)
            return
        sqx = self.sqxBuf.Get(F32)
        Muls(sqx, xf, rstd, count)
        Mul(sqx, sqx, gammaF, count)
        Cast(yLocal[offset], sqx, RoundMode.CAST_RINT, count)

    # -- NORMAL / MERGE_N / SINGLE_ROW ----------------------------------------------------------
    def Process(self):
        if self.splitD:
            self.ProcessSplitD()
            return
        t = self.t
        self.CopyInGamma()
        tiles = [(i, min(t.rowsPerTile, self.rowNum - i))
                 for i in range(0, self.rowNum, t.rowsPerTile)]
        self.CopyIn(*tiles[0])
        for k, (row0, rows) in enumerate(tiles):
            if k + 1 < len(tiles):
                self.CopyIn(*tiles[k + 1])
            self.Compute(rows)
            self.CopyOut(row0, rows)

    def CopyInGamma(self):
        """gamma -> UB once per core, as float (``CopyInGamma``: MTE2 -> V flag, Cast)."""
        n = self.t.numCol
        gammaF = self.gammaFp32Buf.Get(F32)
        land = gammaF if self.gType == F32 else self.sqxBuf.Get(self.gType)
        DataCopyPad(land, self.gammaGm, DataCopyExtParams(1, n * self.gs, 0, 0, 0),
                    _pad(n, self.gs))
        eventId = GetTPipePtr().FetchEventID(HardEvent.MTE2_V)
        SetFlag(HardEvent.MTE2_V, eventId)
        WaitFlag(HardEvent.MTE2_V, eventId)
        if self.gType != F32:
            Cast(gammaF, land, RoundMode.CAST_NONE, n)

    def CopyIn(self, row0, rows):
        t = self.t
        xLocal = self.inQueueX.AllocTensor(self.xType)
        DataCopyPad(xLocal, self.xGm[row0 * t.numCol],
                    DataCopyExtParams(rows, t.numCol * self.xs, 0, 0, 0), _pad(t.numCol, self.xs))
        self.inQueueX.EnQue(xLocal)

    def Compute(self, rows):
        t = self.t
        n, pitch = t.numCol, t.numColAlign
        xLocal = self.inQueueX.DeQue(self.xType)
        yLocal = self.outQueueY.AllocTensor(self.xType)
        rstdLocal = self.outQueueRstd.AllocTensor(F32)
        gammaF = self.gammaFp32Buf.Get(F32)
        for i in range(rows):
            off = i * pitch
            xf = self.ToFloat(xLocal, self.xType, off, n, self.xFp32Buf)
            rstd = self.Rstd(self.SumSquares(xf, n))
            rstdLocal.SetValue(i, rstd)
            self.Output(xf, gammaF, rstd, yLocal, off, n)
        self.outQueueRstd.EnQue(rstdLocal)
        self.outQueueY.EnQue(yLocal)
        self.inQueueX.FreeTensor(xLocal)

    def CopyOut(self, row0, rows):
        t = self.t
        yLocal = self.outQueueY.DeQue(self.xType)
        DataCopyPad(self.yGm[row0 * t.numCol], yLocal,
                    DataCopyExtParams(rows, t.numCol * self.xs, 0, 0, 0))
        self.outQueueY.FreeTensor(yLocal)
        self.CopyOutRstd(row0, rows)

    def CopyOutRstd(self, row0, rows):
        rstdLocal = self.outQueueRstd.DeQue(F32)
        DataCopyPad(self.rstdGm[row0], rstdLocal, DataCopyExtParams(1, rows * 4, 0, 0, 0))
        self.outQueueRstd.FreeTensor(rstdLocal)

    # -- SPLIT_D: two passes over chunks of each row --------------------------------------------
    def ProcessSplitD(self):
        t = self.t
        chunks = [(c, min(t.ubFactor, t.numCol - c)) for c in range(0, t.numCol, t.ubFactor)]
        tasks = [(row, p, c, n) for row in range(self.rowNum) for p in range(2)
                 for c, n in chunks]
        acc = self.reduceBuf.Get(F32)          # the running sum of squares of a row
        self.CopyInChunk(*tasks[0])
        rstd, rstdLocal, batch0 = None, None, 0
        for k, (row, p, c, n) in enumerate(tasks):
            if k + 1 < len(tasks):
                self.CopyInChunk(*tasks[k + 1])
            xLocal = self.inQueueX.DeQue(self.xType)
            xf = self.ToFloat(xLocal, self.xType, 0, n, self.xFp32Buf)
            if p == 0:
                if c == 0:
                    Duplicate(acc, 0.0, 1)
                red = self.SumSquares(xf, n)
                Add(acc, acc, red, 1)
                if c + n == t.numCol:
                    rstd = self.Rstd(acc)
                    if rstdLocal is None:
                        rstdLocal, batch0 = self.outQueueRstd.AllocTensor(F32), row
                    rstdLocal.SetValue(row - batch0, rstd)
                    if row - batch0 + 1 == t.rowFactor:
                        self.outQueueRstd.EnQue(rstdLocal)
                        self.CopyOutRstd(batch0, t.rowFactor)
                        rstdLocal = None
            else:
                gLocal = self.inQueueGamma.DeQue(self.gType)
                gammaF = self.ToFloat(gLocal, self.gType, 0, n, self.gammaFp32Buf)
                yLocal = self.outQueueY.AllocTensor(self.xType)
                self.Output(xf, gammaF, rstd, yLocal, 0, n)
                self.outQueueY.EnQue(yLocal)
                self.inQueueGamma.FreeTensor(gLocal)
                yLocal = self.outQueueY.DeQue(self.xType)
                DataCopyPad(self.yGm[row * t.numCol + c], yLocal,
                            DataCopyExtParams(1, n * self.xs, 0, 0, 0))
                self.outQueueY.FreeTensor(yLocal)
            self.inQueueX.FreeTensor(xLocal)
        if rstdLocal is not None:
            self.outQueueRstd.EnQue(rstdLocal)
            self.CopyOutRstd(batch0, self.rowNum - batch0)

    def CopyInChunk(self, row, p, c, n):
        t = self.t
        xLocal = self.inQueueX.AllocTensor(self.xType)
        DataCopyPad(xLocal, self.xGm[row * t.numCol + c],
                    DataCopyExtParams(1, n * self.xs, 0, 0, 0), _pad(n, self.xs))
        self.inQueueX.EnQue(xLocal)
        if p == 1:
            gLocal = self.inQueueGamma.AllocTensor(self.gType)
            DataCopyPad(gLocal, self.gammaGm[c], DataCopyExtParams(1, n * self.gs, 0, 0, 0),
                        _pad(n, self.gs))
            self.inQueueGamma.EnQue(gLocal)


def rms_norm(x, gamma, y, rstd, workspace, tiling):
    """Kernel entry (``extern "C" __global__ __aicore__ void rms_norm(GM_ADDR x, GM_ADDR gamma,
    GM_ADDR y, GM_ADDR rstd, GM_ADDR workspace, GM_ADDR tiling)``).

    Args:
        x, gamma: device addresses of the contiguous inputs.
        y, rstd: device addresses of the contiguous outputs (x's dtype; float32).
        workspace: the workspace (unused by the kernel itself).
        tiling: :class:`npusim.kernels.rms_norm.tiling.RmsNormTilingData`.
    """
    op = KernelRmsNorm()
    op.Init(x, gamma, y, rstd, tiling)
    op.Process()
