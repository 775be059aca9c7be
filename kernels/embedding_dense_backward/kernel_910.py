"""Device code of EmbeddingDenseGrad on Atlas training products (Ascend910A family): the
algorithm of the TBE kernel ``embedding_dense_grad.py`` (docs/reference/operators.md §2 "The
910 formula"), written as an Ascend C style kernel.

* The rows of ``out`` are split over the cores: core ``b`` owns ``[b * rowsPerCore,
  min(numWeights, (b + 1) * rowsPerCore))``.
* **Pass 1** scans **all** indices, a UB tile at a time, with the scalar unit: every index
  is checked against ``[0, numWeights)`` (the simulator's rule 5: the kernel stops with
  :class:`~npusim.kernels.common.sorted_index.IndexOutOfRangeError` before any write; the TBE
  non-scale branch skips such indices instead [R]) and, with scaleGradByFreq, the indices
  in the core's range (padding excluded) are counted in a UB array of ``countsSize``
  entries of the index type — the array whose size gives the seed's embeddingDim bound.
* The core zeroes its rows of ``out`` (the V1 op's output is not zeroed by the aclnn graph).
* **Pass 2** scans all indices again; a tile with an index in the core's range loads its
  grad rows (one DataCopyPad of ``indicesTile`` rows), and each such row is atomically
  added to ``out`` (``SetAtomicAdd<float>``), multiplied first by ``1/count`` (a scalar
  reciprocal, then Muls into the fp32 add row) with scaleGradByFreq. Padding rows are
  skipped. Wide rows without scaleGradByFreq go in column chunks (``colChunk``) [R].

The scalar loops over an index tile (one GetValue, compares and a count update per entry)
are recorded as one PIPE_S span of ``SCALAR_CYCLES_PER_INDEX`` cycles per entry and run on
numpy (:func:`_scalar_scan`); the per-row work of pass 2 is issued instruction by
instruction. The kernel always sees fp32 grad (the op casts it on these products).
"""
from __future__ import annotations

import numpy as np

from npusim.ascendc import (DataCopyExtParams, DataCopyPad, DataCopyPadExtParams, Duplicate,
                            GetBlockIdx, GlobalTensor, HardEvent, Muls,
                            SetAtomicAdd, SetAtomicNone, SetFlag, TBuf, TPipe, TPosition, TQue,
                            WaitFlag, float32, int32_t)
from npusim.ascendc import core as _core
from npusim.ascendc.types import PIPE_S
from npusim.kernels.common.sorted_index import check_index

#: Scalar cycles of one entry of the index loops: GetValue, two compares, a branch and,
#: in pass 1, the count update [R: the scalar unit's per-instruction cost is not published;
#: one cycle per scalar instruction, as ``soc.scalar_cycles``].
SCALAR_CYCLES_PER_INDEX = 5

_PAD = DataCopyPadExtParams(False, 0, 0, 0)


def _sync(event: HardEvent) -> None:
    """SetFlag + WaitFlag. eventID 0: the pair completes at once, and the first-generation
    910 has only eventIDs 0-3 (TPipe.FetchEventID hands out 0-5)."""
    SetFlag(event, 0)
    WaitFlag(event, 0)


def _scalar_scan(local, count: int, name: str) -> np.ndarray:
    """The scalar unit reads ``count`` entries of ``local`` one by one: record that loop as
    one PIPE_S span and return the values (numpy, no Python loop per entry)."""
    ctx = _core.current_core()
    values = local.elements(count, name, "PIPE_S").astype(np.int64)
    if ctx.tracker is not None:
        ctx.tracker.read(ctx, int(PIPE_S), local.offset, count * local.dtype.itemsize, name)
    ctx.record(_core.OP, PIPE_S, float(SCALAR_CYCLES_PER_INDEX * ctx.soc.scalar_cycles * count),
               0, None, name)
    return values


class KernelEmbeddingDenseGrad:
    """One block of the Atlas training kernel (see the module docstring)."""

    def __init__(self, indexDtype):
        self.IT = np.dtype(indexDtype)

    def Init(self, grad, indices, out, tiling):
        t = self.tiling = tiling
        self.blockIdx = GetBlockIdx()
        self.rowBegin = self.blockIdx * t.rowsPerCore
        self.rowEnd = min(t.numWeights, self.rowBegin + t.rowsPerCore)
        self.gradGm = GlobalTensor(float32)
        self.gradGm.SetGlobalBuffer(grad, t.gradRow * t.embeddingDim)
        self.indicesGm = GlobalTensor(self.IT)
        self.indicesGm.SetGlobalBuffer(indices, t.gradRow)
        self.outGm = GlobalTensor(float32)
        self.outGm.SetGlobalBuffer(out, t.numWeights * t.embeddingDim)
        self.pipe = TPipe()
        self.idxQue = TQue(TPosition.VECIN, 1)
        self.gradQue = TQue(TPosition.VECIN, 1)
        self.addQue = TQue(TPosition.VECOUT, 1)
        self.countsBuf = TBuf(TPosition.VECCALC)
        if t.scaleGradByFreq:
            self.pipe.InitBuffer(self.countsBuf, t.countsSize * t.indexBytes)
        self.pipe.InitBuffer(self.idxQue, 1, t.indicesTile * t.indexBytes)
        self.rowStride = -(-t.colChunk // 8) * 8         # grad rows land 32 B aligned in UB
        self.pipe.InitBuffer(self.gradQue, 1, t.indicesTile * self.rowStride * 4)
        self.pipe.InitBuffer(self.addQue, 1, t.colChunk * 4)

    def Process(self):
        self.CountAndCheck()
        self.ZeroRows()
        for col in range(0, self.tiling.embeddingDim, self.tiling.colChunk):
            self.Accumulate(col, min(self.tiling.colChunk, self.tiling.embeddingDim - col))

    def NotPadding(self, values: np.ndarray) -> np.ndarray:
        """``index != paddingIdx`` compared as uint64 (a negative paddingIdx matches none)."""
        pad = self.tiling.paddingIdx
        if pad >= 1 << 63:
            return np.ones(values.shape, bool)
        return values != pad

    def _tiles(self):
        t = self.tiling
        for start in range(0, t.gradRow, t.indicesTile):
            yield start, min(t.indicesTile, t.gradRow - start)

    def CopyInIndices(self, start: int, n: int):
        _sync(HardEvent.S_MTE2)       # the scalar loop over the last tile is done [R]
        local = self.idxQue.AllocTensor(self.IT)
        DataCopyPad(local, self.indicesGm[start], DataCopyExtParams(1, n * self.IT.itemsize, 0, 0, 0),
                    _PAD)
        self.idxQue.EnQue(local)
        local = self.idxQue.DeQue(self.IT)
        _sync(HardEvent.MTE2_S)
        return local

    def CountAndCheck(self):
        """Pass 1: check every index; count this core's (scaleGradByFreq)."""
        t = self.tiling
        if t.scaleGradByFreq:
            counts = self.countsBuf.Get(self.IT)
            Duplicate(counts.ReinterpretCast(int32_t), 0, t.countsSize * t.indexBytes // 4)
            _sync(HardEvent.V_S)
            self.counts = np.zeros(max(self.rowEnd - self.rowBegin, 0), np.int64)
        for start, n in self._tiles():
            local = self.CopyInIndices(start, n)
            values = _scalar_scan(local, n, "GetValue")
            bad = np.flatnonzero((values < 0) | (values >= t.numWeights))
            if bad.size:
                i = int(bad[0])
                check_index(int(values[i]), start + i, t.numWeights, "numWeights", "GetValue")
            if t.scaleGradByFreq:
                mine = values[(values >= self.rowBegin) & (values < self.rowEnd)
                              & self.NotPadding(values)]
                self.counts += np.bincount(mine - self.rowBegin,
                                           minlength=len(self.counts))[:len(self.counts)]
            self.idxQue.FreeTensor(local)
        if t.scaleGradByFreq and len(self.counts):   # the counts the scalar loop kept in UB
            counts = self.countsBuf.Get(self.IT)
            counts.elements(len(self.counts), "SetValue", "PIPE_S")[...] = self.counts
            ctx = _core.current_core()
            if ctx.tracker is not None:
                ctx.tracker.write(ctx, int(PIPE_S), counts.offset,
                                  len(self.counts) * t.indexBytes, "SetValue")

    def ZeroRows(self):
        """Write zeros over this core's rows of ``out``, ``indicesTile`` rows per copy."""
        t = self.tiling
        rows = self.rowEnd - self.rowBegin
        if rows <= 0:
            return
        zero = self.gradQue.AllocTensor(float32)
        Duplicate(zero, 0.0, t.indicesTile * self.rowStride)
        _sync(HardEvent.V_MTE3)
        for col in range(0, t.embeddingDim, t.colChunk):
            w = min(t.colChunk, t.embeddingDim - col)
            gap = (self.rowStride - -(-w // 8) * 8) * 4 // 32     # UB blocks between rows
            for r0 in range(0, rows, t.indicesTile):
                k = min(t.indicesTile, rows - r0)
                params = DataCopyExtParams(k, w * 4, gap, (t.embeddingDim - w) * 4, 0)
                DataCopyPad(self.outGm[(self.rowBegin + r0) * t.embeddingDim + col], zero, params)
        _sync(HardEvent.MTE3_MTE2)
        _sync(HardEvent.MTE3_V)
        self.gradQue.FreeTensor(zero)

    def Accumulate(self, col: int, w: int):
        """Pass 2 for the columns ``[col, col + w)``."""
        t = self.tiling
        for start, n in self._tiles():
            local = self.CopyInIndices(start, n)
            values = _scalar_scan(local, n, "GetValue")
            self.idxQue.FreeTensor(local)
            mine = np.flatnonzero((values >= self.rowBegin) & (values < self.rowEnd)
                                  & self.NotPadding(values))
            if mine.size == 0:
                continue
            gradLocal = self.gradQue.AllocTensor(float32)
            gap = (self.rowStride - -(-w // 8) * 8) * 4 // 32
            params = DataCopyExtParams(n, w * 4, (t.embeddingDim - w) * 4, gap, 0)
            DataCopyPad(gradLocal, self.gradGm[start * t.embeddingDim + col], params, _PAD)
            self.gradQue.EnQue(gradLocal)
            gradLocal = self.gradQue.DeQue(float32)
            if not t.scaleGradByFreq:
                _sync(HardEvent.MTE2_MTE3)            # MTE3 copies the rows straight out
            rowStride = self.rowStride
            for i in mine.tolist():
                k = int(values[i])
                row = gradLocal[i * rowStride]
                if t.scaleGradByFreq:
                    count = np.float32(self.counts[k - self.rowBegin])
                    reci = np.float32(1.0) / count
                    addLocal = self.addQue.AllocTensor(float32)
                    Muls(addLocal, row, reci, w)
                    self.addQue.EnQue(addLocal)
                    src = self.addQue.DeQue(float32)
                else:
                    src = row
                SetAtomicAdd(float32)
                DataCopyPad(self.outGm[k * t.embeddingDim + col], src,
                            DataCopyExtParams(1, w * 4, 0, 0, 0))
                SetAtomicNone()
                if t.scaleGradByFreq:
                    self.addQue.FreeTensor(src)
            _sync(HardEvent.MTE3_MTE2)
            self.gradQue.FreeTensor(gradLocal)


def embedding_dense_grad(grad, indices, out, tiling, indexDtype):
    """Kernel entry of the Atlas training EmbeddingDenseGrad.

    Args:
        grad: device address of fp32 grad [gradRow, embeddingDim].
        indices: device address of the int32 or int64 indices (``indexDtype``).
        out: device address of fp32 out [numWeights, embeddingDim] (written in full).
        tiling: :class:`~npusim.kernels.embedding_dense_backward.tiling.EmbeddingDenseGradTilingData`.

    Launch with ``blockDim = tiling.blockDim`` and ``reserve_ub=False`` (a TBE kernel: its
    UB budget is the tiling's).
    """
    op = KernelEmbeddingDenseGrad(indexDtype)
    op.Init(grad, indices, out, tiling)
    op.Process()


__all__ = ["KernelEmbeddingDenseGrad", "embedding_dense_grad"]
