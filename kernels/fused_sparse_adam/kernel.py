"""Device code of FusedSparseAdam (Atlas A2/A3): one ``KernelFusedSparseAdam`` per block.

The arithmetic is MindSpore's CPU kernel (``sparse_apply_adam_cpu_kernel.cc``, docs/reference/
operators.md §4), in its order, every operation rounded to fp32:

* ``lr_t = (lr * sqrt(1 - beta2Power)) / (1 - beta1Power)`` (scalar unit, in Init);
* every row: ``m = m * beta1``, ``v = v * beta2`` (ComputeMomentum);
* each index: its grad rows summed in their original order, the first copied and the
  others added (``BucketReduceSparseGradient``: "first occurrence memcpy, later ones +=");
  then ``m += (1-beta1)*g`` and ``v += ((1-beta2)*g)*g`` (ComputeAdam), and with
  useNesterov ``m_t = m*beta1 + (1-beta1)*g``;
* every row: ``var = var - (lr_t*M) / (sqrt(v) + epsilon)`` (ComputeWeight), ``M = m`` or,
  with useNesterov, ``m_t``; a row that no index names has ``m_t = 0`` (Duplicate), so its
  var is left unchanged: the CPU kernel's workspace m_t, written for the indexed rows only,
  is zero when fresh -- measured with MindSpore 2.10 (aclnn/ops/fused_sparse_adam.py).

The six scalars (beta1Power, beta2Power, lr, beta1, beta2, epsilon) are one-element fp32
GM tensors, read once per core with ``GlobalTensor::GetValue`` (the aclnn scalar-input
convention, docs/tutorial.md §10).

The duplicate merge runs here on the device, on the output of the shared Sort kernel
(:mod:`npusim.kernels.common.sorted_index`): a core owns the rows ``[rowBegin, rowEnd)`` of var,
finds its stretch of the sorted indices by binary search (scalar reads of GM), and walks it
tile by tile: each run of equal indices is one row's summed gradient. Sorted entries outside
``[0, varRows)`` are dropped (:func:`~npusim.kernels.common.sorted_index.check_index` semantics,
without the error), as the CPU kernel drops them.
"""
from __future__ import annotations

import numpy as np

from npusim.ascendc import (Add, Adds, DataCopyExtParams, DataCopyPad, DataCopyPadExtParams,
                            Div, Duplicate, GetBlockIdx, GetTPipePtr, GlobalTensor, HardEvent,
                            Mul, Muls, SetFlag, Sqrt, Sub, TBuf, TPipe, TPosition, WaitFlag,
                            float32, int32_t)

#: Sorted entries (index, position) read into UB at a time.
ENTRY_WINDOW = 1024
#: Tiles of ``tileRows x rowAlign`` fp32 in UB: var, m, v, scratch, numerator / m_t.
TILES = 5


def _sync(event: HardEvent) -> None:
    eventId = GetTPipePtr().FetchEventID(event)
    SetFlag(event, eventId)
    WaitFlag(event, eventId)


def _as_float(key: int) -> np.float32:
    """The float view of an int32 key: the Sort kernel's order."""
    return np.array([key], np.int32).view(np.float32)[0]


class KernelFusedSparseAdam:
    """One block of FusedSparseAdam (see the module docstring).

    ``fast`` (class attribute, default True): MergeRuns runs as
    :func:`npusim.kernels.fused_sparse_adam.merge.merge_runs_batched` — the same entries,
    the same fp32 operations in the same order (bit-identical results), recorded in batches;
    False runs the entry-by-entry loop below (tests compare the two).
    """

    fast = True

    def Init(self, var, m, v, beta1Power, beta2Power, lr, beta1, beta2, epsilon, grad,
             sortedIndices, posIdx, tiling):
        t = self.tiling = tiling
        self.blockIdx = GetBlockIdx()
        rep = t.formerRowRepTime
        self.rowNum = t.formerRowNum if self.blockIdx < rep else t.tailRowNum
        self.rowBegin = (t.formerRowNum * min(self.blockIdx, rep)
                         + t.tailRowNum * max(self.blockIdx - rep, 0))
        self.rowEnd = self.rowBegin + self.rowNum
        E = t.rowSize
        self.varGm, self.mGm, self.vGm = (GlobalTensor(float32) for _ in range(3))
        for g, addr in ((self.varGm, var), (self.mGm, m), (self.vGm, v)):
            g.SetGlobalBuffer(addr, t.varRows * E)
        self.gradGm = GlobalTensor(float32)
        self.gradGm.SetGlobalBuffer(grad, t.indicesNum * E)
        self.sortedGm, self.posGm = GlobalTensor(int32_t), GlobalTensor(int32_t)
        self.sortedGm.SetGlobalBuffer(sortedIndices, t.indicesNum)
        self.posGm.SetGlobalBuffer(posIdx, t.indicesNum)
        self.pipe = TPipe()
        self.tileBuf = [TBuf(TPosition.VECCALC) for _ in range(TILES)]
        for b in self.tileBuf:
            self.pipe.InitBuffer(b, t.tileRows * t.rowAlign * 4)
        self.accBuf, self.gradRowBuf = TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.accBuf, t.rowAlign * 4)
        self.pipe.InitBuffer(self.gradRowBuf, t.rowAlign * 4)
        self.keyBuf, self.posBuf = TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.keyBuf, ENTRY_WINDOW * 4)
        self.pipe.InitBuffer(self.posBuf, ENTRY_WINDOW * 4)
        # the scalars: one fp32 element each, read through the scalar unit
        values = []
        for addr in (beta1Power, beta2Power, lr, beta1, beta2, epsilon):
            g = GlobalTensor(float32)
            g.SetGlobalBuffer(addr, 1)
            values.append(np.float32(g.GetValue(0)))
        beta1Power, beta2Power, lr, self.beta1, self.beta2, self.epsilon = values
        # scalar unit: lr * sqrt(1 - beta2_power) / (1 - beta1_power), in float; a
        # beta1Power of 1 gives inf (no check on the device, as the arithmetic gives)
        one = np.float32(1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.lrT = (lr * np.sqrt(one - beta2Power)) / (one - beta1Power)
        self.oneMinusBeta1 = one - self.beta1
        self.oneMinusBeta2 = one - self.beta2
        self.windowStart = None

    # -- the stretch of sorted indices this core owns ------------------------------------------
    def LowerBound(self, target: int) -> int:
        """First sorted entry whose key is not below ``target`` (float view order, NaN
        patterns last), by binary search with scalar GM reads."""
        lo, hi = 0, self.tiling.indicesNum
        tf = _as_float(target)
        while lo < hi:
            mid = (lo + hi) // 2
            if _as_float(int(self.sortedGm.GetValue(mid))) < tf:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def LoadWindow(self, e: int) -> None:
        """Load the sorted entries from ``e`` on (up to ENTRY_WINDOW) into the UB windows,
        unless entry ``e`` is in the window already."""
        if self.windowStart is None or not self.windowStart <= e < self.windowStart + ENTRY_WINDOW:
            self.windowStart = e
            n = min(ENTRY_WINDOW, self.tiling.indicesNum - e)
            _sync(HardEvent.S_MTE2)
            params = DataCopyExtParams(1, 4 * n, 0, 0, 0)
            pad = DataCopyPadExtParams(False, 0, 0, 0)
            DataCopyPad(self.keyBuf.Get(int32_t), self.sortedGm[e], params, pad)
            DataCopyPad(self.posBuf.Get(int32_t), self.posGm[e], params, pad)
            _sync(HardEvent.MTE2_S)

    def Entry(self, e: int) -> tuple[int, int]:
        """(index, position) of sorted entry ``e``, through a UB window of entries."""
        self.LoadWindow(e)
        k = e - self.windowStart
        return int(self.keyBuf.Get(int32_t).GetValue(k)), int(self.posBuf.Get(int32_t).GetValue(k))

    # -- main loop ------------------------------------------------------------------------------
    def Process(self):
        t = self.tiling
        s0 = s1 = 0
        if t.indicesNum:
            s0, s1 = self.LowerBound(self.rowBegin), self.LowerBound(self.rowEnd)
        for col in range(0, t.rowSize, t.colChunk):
            w = min(t.colChunk, t.rowSize - col)
            e = s0
            for t0 in range(self.rowBegin, self.rowEnd, t.tileRows):
                k = min(t.tileRows, self.rowEnd - t0)
                e = self.ProcessTile(t0, k, col, w, e, s1)

    def _tile(self, i: int, row: int = 0):
        t = self.tiling
        return self.tileBuf[i].Get(float32)[row * t.rowAlign]

    def ProcessTile(self, t0: int, k: int, col: int, w: int, e: int, s1: int) -> int:
        t = self.tiling
        E, wp = t.rowSize, t.rowAlign
        var, m, v, tmp, num = (self._tile(i) for i in range(TILES))
        gap = (wp - -(-w // 8) * 8) * 4 // 32               # UB blocks between rows
        if gap:                                             # a narrower last column chunk
            for tile in (var, m, v):
                Duplicate(tile, 0.0, k * wp)
            _sync(HardEvent.V_MTE2)
        load = DataCopyExtParams(k, 4 * w, 4 * (E - w), gap, 0)
        pad = DataCopyPadExtParams(True, 0, -(-w // 8) * 8 - w, 0.0)
        for tile, gm in ((var, self.varGm), (m, self.mGm), (v, self.vGm)):
            DataCopyPad(tile, gm[t0 * E + col], load, pad)
        _sync(HardEvent.MTE2_V)
        n = k * wp
        # ComputeMomentum: every row
        Muls(m, m, self.beta1, n)
        Muls(v, v, self.beta2, n)
        if t.useNesterov:                                  # rows without an index: m_t = 0
            Duplicate(num, 0.0, n)
        # ComputeAdam: the runs of equal indices that fall in this tile
        e = self.MergeRuns(t0, k, col, w, e, s1)
        # ComputeWeight: var = var - (lr_t * M) / (sqrt(v) + epsilon)
        Muls(num, num if t.useNesterov else m, self.lrT, n)
        Sqrt(tmp, v, n)
        Adds(tmp, tmp, self.epsilon, n)
        Div(num, num, tmp, n)
        Sub(var, var, num, n)
        _sync(HardEvent.V_MTE3)
        store = DataCopyExtParams(k, 4 * w, gap, 4 * (E - w), 0)
        for tile, gm in ((var, self.varGm), (m, self.mGm), (v, self.vGm)):
            DataCopyPad(gm[t0 * E + col], tile, store)
        _sync(HardEvent.MTE3_MTE2)
        _sync(HardEvent.MTE3_V)
        return e

    def MergeRuns(self, t0: int, k: int, col: int, w: int, e: int, s1: int) -> int:
        """Sum each run of equal sorted indices in ``[t0, t0 + k)`` and apply it (ComputeAdam);
        return the first entry after the tile."""
        if self.fast:
            from npusim.kernels.fused_sparse_adam.merge import merge_runs_batched
            return merge_runs_batched(self, t0, k, col, w, e, s1)
        t = self.tiling
        acc, gradRow = self.accBuf.Get(float32), self.gradRowBuf.Get(float32)
        cur = None
        while e < s1:
            key, pos = self.Entry(e)
            if key >= t0 + k:
                break
            e += 1
            if not 0 <= key < t.varRows:                   # dropped, as the CPU kernel does
                continue
            if key != cur:
                if cur is not None:
                    self.ApplyRun(cur - t0, w, acc)
                cur = key
                dst = acc                                  # the first row is copied
            else:
                dst = gradRow
            _sync(HardEvent.V_MTE2)
            DataCopyPad(dst, self.gradGm[pos * t.rowSize + col],
                        DataCopyExtParams(1, 4 * w, 0, 0, 0),
                        DataCopyPadExtParams(True, 0, -(-w // 8) * 8 - w, 0.0))
            _sync(HardEvent.MTE2_V)
            if dst is gradRow:
                Add(acc, acc, gradRow, w)
        if cur is not None:
            self.ApplyRun(cur - t0, w, acc)
        return e

    def ApplyRun(self, r: int, w: int, g):
        """m += (1-beta1)*g; v += ((1-beta2)*g)*g; m_t = m*beta1 + (1-beta1)*g (Nesterov)."""
        t = self.tiling
        tmp = self._tile(3)
        mRow, vRow = self._tile(1, r), self._tile(2, r)
        Muls(tmp, g, self.oneMinusBeta1, w)
        Add(mRow, mRow, tmp, w)
        Muls(tmp, g, self.oneMinusBeta2, w)
        Mul(tmp, tmp, g, w)
        Add(vRow, vRow, tmp, w)
        if t.useNesterov:
            mtRow = self._tile(4, r)
            Muls(mtRow, mRow, self.beta1, w)
            Muls(tmp, g, self.oneMinusBeta1, w)
            Add(mtRow, mtRow, tmp, w)


def fused_sparse_adam(var, m, v, beta1Power, beta2Power, lr, beta1, beta2, epsilon, grad,
                      sortedIndices, posIdx, tiling):
    """Kernel entry: updates ``var``, ``m``, ``v`` (device addresses, fp32 [varRows,
    rowSize]) in place from the six one-element fp32 scalars, ``grad`` ([indicesNum,
    rowSize]) and the Sort kernel's outputs (int32 sorted indices and their positions).
    Launch with ``blockDim = tiling.blockDim``.
    """
    op = KernelFusedSparseAdam()
    op.Init(var, m, v, beta1Power, beta2Power, lr, beta1, beta2, epsilon, grad, sortedIndices,
            posIdx, tiling)
    op.Process()
