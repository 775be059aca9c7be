"""Device code of SoftmaxV2 (aclnnSoftmax's l0 kernel): one instance per block (AIV).

Every template computes in float32: fp16/bf16 tiles are Cast to float first (A2 has no
bf16 vector arithmetic) and the result is Cast back with CAST_RINT. The math per row (or
per column of an [R, tileA0] tile) is the documented one with the maximum subtracted::

    m = max(x);  e = exp(x - m);  s = sum(e);  y = e * (1 / s)

Reductions are folds by halving (:mod:`npusim.kernels.common.reduce`, after
``ReduceSumHalfIntervalToRepeat`` of ops-nn's ``rms_norm_base.h``): level-2 ``Max`` / ``Add``
of the upper half onto the lower half until one repeat is left, then ``WholeReduceMax`` /
``WholeReduceSum``; the result is read on PIPE_S after a V->S flag.

**AR** (``TILINGKEY_AR``): ``ubFactor`` rows per UB tile, x and y queues double-buffered,
the next tile's CopyIn issued before this tile's Compute (software pipelining, so that the
scalar reads of the row results do not hold back the next transfer). Per row: Cast, the
max (folded out of the row into a half-row buffer, the row is kept), ``Adds(-m)``,
``Exp``, the sum (likewise), ``Muls(1/s)``, Cast: the published single-row order of the
RmsNorm kernel (``ComputeSingleRow``: reduce, scalar read, ``Muls``).

**AR_RECOMPUTE**: a row longer than the UB is read three times in ``ubFactor`` chunks
(``softmax_v2_ar_recompute.h``): pass 1 keeps a running max in UB (each chunk folded in
place, then ``Max`` into the accumulator), pass 2 a running sum of ``exp(x - m)`` (in
place, then ``Add``), pass 3 writes ``exp(x - m) * (1/s)``. One scalar read per pass.

**ARA** / **ARA_RECOMPUTE**: a tile is ``rFactor`` rows of R by ``tileA0Len`` columns of A0
(one strided DataCopyPad: ``blockCount`` rows, ``srcStride`` the rest of A0). The column
max and sum fold the rows by halving (:func:`npusim.kernels.common.reduce.TreeFold` with a block
of one row) and go into per-column accumulators; the max is subtracted and ``1/s``
multiplied with level-0 ``Sub`` / ``Mul`` whose src1 has ``src1RepStride = 0`` (one row
broadcast to every repeat, one repeat a row). A tile wider than a level-0 repeat stride
allows (more than 255 blocks) does those two row by row with level-2 calls. ARA has all
of R in UB (one read; the fold goes to a half-tile buffer); ARA_RECOMPUTE makes three
passes over chunks of 128 rows and folds in place.
"""
from __future__ import annotations

import numpy as np

from npusim.kernels.common.reduce import (ReduceMaxHalfInterval, ReduceSumHalfInterval, TreeFold,
                                   fold_buffer_elements)
from npusim.kernels.softmax import tiling as _t
from npusim.ascendc import (Add, Adds, BinaryRepeatParams, Cast, DataCopy, DataCopyExtParams,
                            DataCopyPad, DataCopyPadExtParams, Div, Duplicate, Exp,
                            GetBlockIdx, GetTPipePtr, GlobalTensor, HardEvent, Max, Mul, Muls,
                            RoundMode, SetFlag, Sub, TBuf, TPipe, TPosition, TQue, WaitFlag)

BUFFER_NUM = 2
F32 = np.dtype(np.float32)
NEG_INF = float("-inf")
ONE_BLK_SIZE = 32
MAX_REPEAT_TIMES = 255
MAX_REP_STRIDE = 255
def _pad_params(count: int, isz: int) -> DataCopyPadExtParams:
    """Pad a row of ``count`` elements up to 32 B with zeros (so that whole-row vector
    calls never read undefined UB)."""
    right = (-(count * isz) % ONE_BLK_SIZE) // isz
    return DataCopyPadExtParams(bool(right), 0, right, 0)


class _V2S:
    """A V -> S hand-off (``SetFlag<V_S>`` / ``WaitFlag<V_S>``) before a scalar read."""

    def __init__(self):
        self.eventId = GetTPipePtr().FetchEventID(HardEvent.V_S)

    def __call__(self):
        SetFlag(HardEvent.V_S, self.eventId)
        WaitFlag(HardEvent.V_S, self.eventId)


class KernelSoftmaxAR:
    """AR and AR_RECOMPUTE: rows of R contiguous elements, ``aBlockFactor`` rows a core."""

    def __init__(self):
        self.pipe = TPipe()
        self.inQueueX = TQue(TPosition.VECIN, BUFFER_NUM)
        self.outQueueY = TQue(TPosition.VECOUT, BUFFER_NUM)
        self.xFp32Buf = TBuf(TPosition.VECCALC)
        self.reduceBuf = TBuf(TPosition.VECCALC)     # the reduction's result (one block)
        self.foldBuf = TBuf(TPosition.VECCALC)       # half a row: the fold that keeps its source
        self.accBuf = TBuf(TPosition.VECCALC)        # running max and sum (recompute)

    def Init(self, x, y, tiling):
        t = self.t = tiling
        self.xType, self.yType = t.xDtype, t.yDtype
        self.xs, self.ys = self.xType.itemsize, self.yType.itemsize
        self.rowStart, self.rowNum = t.core_rows(GetBlockIdx())
        r = t.r
        self.xGm, self.yGm = GlobalTensor(self.xType), GlobalTensor(self.yType)
        self.xGm.SetGlobalBuffer(x + self.rowStart * r * self.xs, self.rowNum * r)
        self.yGm.SetGlobalBuffer(y + self.rowStart * r * self.ys, self.rowNum * r)
        self.recompute = t.tilingKey == _t.TILINGKEY_AR_RECOMPUTE
        if self.recompute:
            width = t.ubFactor                         # one chunk of a row
            self.pipe.InitBuffer(self.inQueueX, _t.TRIPLE_BUFFER, width * self.xs)
            self.pipe.InitBuffer(self.accBuf, 2 * ONE_BLK_SIZE)
        else:
            width = t.ubFactor * t.rAligned            # ubFactor whole rows
            self.pipe.InitBuffer(self.inQueueX, BUFFER_NUM, width * self.xs)
        self.pipe.InitBuffer(self.outQueueY, BUFFER_NUM, width * self.ys)
        if self.xType != F32:
            self.pipe.InitBuffer(self.xFp32Buf, width * 4)
        self.pipe.InitBuffer(self.reduceBuf, ONE_BLK_SIZE)
        if not self.recompute:                         # recompute folds its chunks in place
            self.pipe.InitBuffer(self.foldBuf, fold_buffer_elements(t.r) * 4)
        self.v2s = _V2S()

    # -- pieces shared by both modes --------------------------------------------------------
    def ToFloat(self, xLocal, offset, count):
        """The fp32 view of ``count`` elements of x at ``offset`` (Cast for fp16/bf16)."""
        if self.xType == F32:
            return xLocal[offset]
        w = self.xFp32Buf.Get(F32)[offset]
        Cast(w, xLocal[offset], RoundMode.CAST_NONE, count)
        return w

    def Reduce(self, op, src, count, inPlace=False):
        """``op`` (ReduceMaxHalfInterval / ReduceSumHalfInterval) of ``count`` floats into
        the result block; ``inPlace`` folds src itself (it is not needed afterwards)."""
        buf = self.reduceBuf.Get(F32)
        op(buf, src, src if inPlace else self.foldBuf.Get(F32), count)
        return buf

    def ReadScalar(self, local):
        self.v2s()
        return local.GetValue(0)                     # float (local is a float tensor)

    def Finish(self, w, yLocal, offset, count):
        """y = Cast(w) (or w itself for fp32 y)."""
        if self.yType == F32:
            return
        Cast(yLocal[offset], w, RoundMode.CAST_RINT, count)

    # -- AR full load ---------------------------------------------------------------------------
    def Process(self):
        if self.rowNum == 0:
            return
        if self.recompute:
            self.ProcessRecompute()
            return
        t = self.t
        tiles = [(i, min(t.ubFactor, self.rowNum - i)) for i in range(0, self.rowNum, t.ubFactor)]
        self.CopyIn(*tiles[0])
        for k, (row0, rows) in enumerate(tiles):
            if k + 1 < len(tiles):
                self.CopyIn(*tiles[k + 1])
            self.Compute(rows)
            self.CopyOut(row0, rows)

    def CopyIn(self, row0, rows):
        t = self.t
        xLocal = self.inQueueX.AllocTensor(self.xType)
        DataCopyPad(xLocal, self.xGm[row0 * t.r], DataCopyExtParams(rows, t.r * self.xs, 0, 0, 0),
                    _pad_params(t.r, self.xs))
        self.inQueueX.EnQue(xLocal)

    def Compute(self, rows):
        t = self.t
        r, pitch = t.r, t.rAligned
        xLocal = self.inQueueX.DeQue(self.xType)
        yLocal = self.outQueueY.AllocTensor(self.yType)
        for i in range(rows):
            off = i * pitch
            w = self.ToFloat(xLocal, off, r)
            e = yLocal[off] if self.xType == F32 else w     # exp(x - m), in place for fp16/bf16
            self.RowSoftmax(w, e, r)
            self.Finish(e, yLocal, off, r)
        self.outQueueY.EnQue(yLocal)
        self.inQueueX.FreeTensor(xLocal)

    def RowSoftmax(self, w, e, n):
        """e = softmax(w) over one row of ``n`` floats (e may be w)."""
        m = self.ReadScalar(self.Reduce(ReduceMaxHalfInterval, w, n))
        Adds(e, w, -m, n)
        Exp(e, e, n)
        s = self.ReadScalar(self.Reduce(ReduceSumHalfInterval, e, n))
        Muls(e, e, np.float32(1) / s, n)

    def CopyOut(self, row0, rows):
        t = self.t
        yLocal = self.outQueueY.DeQue(self.yType)
        DataCopyPad(self.yGm[row0 * t.r], yLocal, DataCopyExtParams(rows, t.r * self.ys, 0, 0, 0))
        self.outQueueY.FreeTensor(yLocal)

    # -- AR recompute: three passes over chunks of each row ------------------------------------
    def ProcessRecompute(self):
        t = self.t
        chunks = [(c, min(t.ubFactor, t.r - c)) for c in range(0, t.r, t.ubFactor)]
        tasks = [(row, p, c, n) for row in range(self.rowNum) for p in range(3)
                 for c, n in chunks]
        self.CopyInChunk(*tasks[0])
        acc = self.accBuf.Get(F32)
        accMax, accSum = acc, acc[ONE_BLK_SIZE // 4]
        m = s = None
        for k, (row, p, c, n) in enumerate(tasks):
            if k + 1 < len(tasks):
                self.CopyInChunk(*tasks[k + 1])
            first, last = c == 0, c + n == t.r
            xLocal = self.inQueueX.DeQue(self.xType)
            w = self.ToFloat(xLocal, 0, n)
            if p == 0:                                  # running max
                if first:
                    Duplicate(accMax, NEG_INF, 8)
                red = self.Reduce(ReduceMaxHalfInterval, w, n, inPlace=True)
                Max(accMax, accMax, red, 1)
                if last:
                    m = self.ReadScalar(accMax)
            elif p == 1:                                # running sum of exp(x - m)
                if first:
                    Duplicate(accSum, 0.0, 8)
                Adds(w, w, -m, n)                       # in place: x is not needed again
                Exp(w, w, n)
                red = self.Reduce(ReduceSumHalfInterval, w, n, inPlace=True)
                Add(accSum, accSum, red, 1)
                if last:
                    s = self.ReadScalar(accSum)
            else:                                       # output
                yLocal = self.outQueueY.AllocTensor(self.yType)
                e = yLocal if self.xType == F32 else w
                Adds(e, w, -m, n)
                Exp(e, e, n)
                Muls(e, e, np.float32(1) / s, n)
                self.Finish(e, yLocal, 0, n)
                self.outQueueY.EnQue(yLocal)
                yLocal = self.outQueueY.DeQue(self.yType)
                DataCopyPad(self.yGm[row * t.r + c], yLocal,
                            DataCopyExtParams(1, n * self.ys, 0, 0, 0))
                self.outQueueY.FreeTensor(yLocal)
            self.inQueueX.FreeTensor(xLocal)

    def CopyInChunk(self, row, p, c, n):
        xLocal = self.inQueueX.AllocTensor(self.xType)
        DataCopyPad(xLocal, self.xGm[row * self.t.r + c],
                    DataCopyExtParams(1, n * self.xs, 0, 0, 0), _pad_params(n, self.xs))
        self.inQueueX.EnQue(xLocal)


class KernelSoftmaxARA:
    """ARA and ARA_RECOMPUTE: tiles of [rFactor, tileA0Len] of the [A1, R, A0] view."""

    def __init__(self):
        self.pipe = TPipe()
        self.inQueueX = TQue(TPosition.VECIN, BUFFER_NUM)
        self.outQueueY = TQue(TPosition.VECOUT, BUFFER_NUM)
        self.xFp32Buf = TBuf(TPosition.VECCALC)
        self.foldBuf = TBuf(TPosition.VECCALC)       # ARA: the row fold that keeps its rows
        self.statBuf = TBuf(TPosition.VECCALC)       # column max; column sum, then 1/sum

    def Init(self, x, y, tiling):
        t = self.t = tiling
        self.xType, self.yType = t.xDtype, t.yDtype
        self.xs, self.ys = self.xType.itemsize, self.yType.itemsize
        self.tileStart, self.tileNum = t.core_tiles(GetBlockIdx())
        total = t.a1 * t.r * t.a0
        self.xGm, self.yGm = GlobalTensor(self.xType), GlobalTensor(self.yType)
        self.xGm.SetGlobalBuffer(x, total)
        self.yGm.SetGlobalBuffer(y, total)
        self.colAlign = ONE_BLK_SIZE // self.xs
        self.pitchMax = -(-t.tileA0Len // self.colAlign) * self.colAlign
        self.fullLoad = t.tilingKey == _t.TILINGKEY_ARA
        width = t.rFactor * self.pitchMax
        self.pipe.InitBuffer(self.inQueueX, BUFFER_NUM, width * self.xs)
        self.pipe.InitBuffer(self.outQueueY, BUFFER_NUM, width * self.ys)
        if self.xType != F32:
            self.pipe.InitBuffer(self.xFp32Buf, width * 4)
        if self.fullLoad:
            self.pipe.InitBuffer(self.foldBuf, fold_buffer_elements(width, self.pitchMax) * 4)
        self.pipe.InitBuffer(self.statBuf, 2 * self.pitchMax * 4)

    def Process(self):
        t = self.t
        passes = 1 if self.fullLoad else 3
        chunks = [(c, min(t.rFactor, t.r - c)) for c in range(0, t.r, t.rFactor)]
        tasks = []
        # the C++ loop ``for (tile = tileStart; tile < tileEnd; tile++)``: blocks with as many
        # tiles (at the same column tile) run it together in lockstep, where a range() over
        # the per-block bounds would need one value
        tile, tileEnd = self.tileStart, self.tileStart + self.tileNum
        while tile < tileEnd:
            i1, j = divmod(tile, t.a0Outer)
            col0 = j * t.tileA0Len
            cols = t.tileA0Len if j < t.a0Outer - 1 else t.tileA0Tail
            for p in range(passes):
                for c, rows in chunks:
                    tasks.append((i1, col0, cols, p, c, rows))
            tile += 1
        if not tasks:
            return
        self.CopyIn(*tasks[0])
        for k, task in enumerate(tasks):
            if k + 1 < len(tasks):
                self.CopyIn(*tasks[k + 1])
            self.Compute(*task)

    def Compute(self, i1, col0, cols, p, c, rows):
        t = self.t
        pitch = -(-cols // self.colAlign) * self.colAlign
        stat = self.statBuf.Get(F32)
        maxT, sumT = stat, stat[self.pitchMax]
        xLocal = self.inQueueX.DeQue(self.xType)
        w = xLocal if self.xType == F32 else self.xFp32Buf.Get(F32)
        if self.xType != F32:
            Cast(w, xLocal, RoundMode.CAST_NONE, rows * pitch)
        first, last = c == 0, c + rows == t.r
        # the fold keeps w in the full-load template (w is used again), else it folds w
        fold = self.foldBuf.Get(F32) if self.fullLoad else w
        if self.fullLoad or p == 0:                     # column max
            TreeFold(Max, fold, w, rows * pitch, pitch)
            if first:
                DataCopy(maxT, fold, pitch)
            else:
                Max(maxT, maxT, fold, pitch)
        if self.fullLoad or p == 1:                     # column sum of exp(x - max)
            self.RowsBroadcast(Sub, w, w, maxT, rows, cols, pitch)
            Exp(w, w, rows * pitch)
            TreeFold(Add, fold, w, rows * pitch, pitch)
            if first:
                DataCopy(sumT, fold, pitch)
            else:
                Add(sumT, sumT, fold, pitch)
            if last:                                    # sumT := 1 / sum (fold is free)
                Duplicate(fold, 1.0, pitch)
                Div(sumT, fold, sumT, pitch)
        if self.fullLoad or p == 2:                     # output
            yLocal = self.outQueueY.AllocTensor(self.yType)
            if not self.fullLoad:
                self.RowsBroadcast(Sub, w, w, maxT, rows, cols, pitch)
                Exp(w, w, rows * pitch)
            self.RowsBroadcast(Mul, yLocal if self.yType == F32 else w, w, sumT, rows, cols,
                               pitch)
            if self.yType != F32:
                Cast(yLocal, w, RoundMode.CAST_RINT, rows * pitch)
            self.outQueueY.EnQue(yLocal)
            self.CopyOut(i1, col0, cols, c, rows)
        self.inQueueX.FreeTensor(xLocal)

    def RowsBroadcast(self, op, dst, src, vec, rows, cols, pitch):
        """dst[i, c] = op(src[i, c], vec[c]) for every row: level 0, one repeat a row, src1
        repeat stride 0 (vec re-read by every repeat); level 2 row by row when a row is
        more than 255 blocks apart from the next or one call per row is cheaper."""
        blocks = -(-cols // 64)
        if pitch // 8 > MAX_REP_STRIDE or blocks * -(-rows // MAX_REPEAT_TIMES) >= rows:
            for i in range(rows):
                op(dst[i * pitch], src[i * pitch], vec, cols)
            return
        params = BinaryRepeatParams(1, 1, 1, pitch // 8, pitch // 8, 0)
        for b in range(0, cols, 64):
            mask = min(64, cols - b)
            for r0 in range(0, rows, MAX_REPEAT_TIMES):
                n = min(MAX_REPEAT_TIMES, rows - r0)
                op(dst[r0 * pitch + b], src[r0 * pitch + b], vec[b], mask, n, params)

    def CopyIn(self, i1, col0, cols, p, c, rows):
        t = self.t
        xLocal = self.inQueueX.AllocTensor(self.xType)
        src = self.xGm[(i1 * t.r + c) * t.a0 + col0]
        DataCopyPad(xLocal, src, DataCopyExtParams(rows, cols * self.xs, (t.a0 - cols) * self.xs,
                                                   0, 0), _pad_params(cols, self.xs))
        self.inQueueX.EnQue(xLocal)

    def CopyOut(self, i1, col0, cols, c, rows):
        t = self.t
        yLocal = self.outQueueY.DeQue(self.yType)
        dst = self.yGm[(i1 * t.r + c) * t.a0 + col0]
        DataCopyPad(dst, yLocal,
                    DataCopyExtParams(rows, cols * self.ys, 0, (t.a0 - cols) * self.ys, 0))
        self.outQueueY.FreeTensor(yLocal)


def softmax_v2(x, y, workspace, tiling):
    """Kernel entry (``extern "C" __global__ __aicore__ void softmax_v2(GM_ADDR x, GM_ADDR y,
    GM_ADDR workspace, GM_ADDR tiling)``).

    Args:
        x: device address of the contiguous input ([A1, R, A0] of ``tiling.xDtype``).
        y: device address of the contiguous output (``tiling.yDtype``).
        workspace: the system workspace (unused by the kernel itself).
        tiling: :class:`npusim.kernels.softmax.tiling.SoftmaxTilingData`.
    """
    if tiling.tilingKey in (_t.TILINGKEY_AR, _t.TILINGKEY_AR_RECOMPUTE):
        op = KernelSoftmaxAR()
    else:
        op = KernelSoftmaxARA()
    op.Init(x, y, tiling)
    op.Process()
