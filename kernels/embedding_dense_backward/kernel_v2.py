"""Device code of EmbeddingDenseGradV2 (Atlas A2/A3): the kernels the tiling key selects.

Read next to ``index/embedding_dense_grad_v2/op_kernel/`` of ops-nn
(``embedding_dense_grad_v2.cpp`` and the ``.h`` files named below) and docs/reference/
operators.md §2 "How duplicates are merged" and "scale_grad_by_freq":

* **key 0** — :class:`KernelEmbeddingDenseGradV2` (``embedding_dense_grad_v2.h``). Each
  core walks its contiguous range of the *sorted* rows (``formerRowNum`` rows on the first
  ``formerRowRepTime`` cores, ``tailRowNum`` on the others), one row at a time: CopyIn
  loads the sorted index, its original position ``posIdx`` and that grad row (one column
  chunk of ``formerEmbeddingDim``); ComputeAndCopyOut adds it into one of two ping-pong UB
  accumulators (``addResQue_[2]``, switched when the index changes) and flushes an
  accumulator to ``out`` with ``SetAtomicAdd`` + DataCopyPad when the index changes, when
  it already held ``LIMIT_COUNT_NUM = 10`` rows before this add (checked before the add,
  so a flush holds up to 11 rows), at the core's last row, and when a padding row is hit.
  Padding rows are skipped. fp32 only here (``ProcessForFp32``).
* **fp16/bf16 without the op's cast** (large tensors, ``ProcessForHalf``): rows are cast to
  fp32 (CAST_NONE) and summed in fp32; flushes go to an fp32 UB cache; an index strictly
  inside the core's range is cast (CAST_RINT) and written directly; the core's first and
  last index go to the fp32 ``outStage`` workspace (two slots per core, with ``outIndex``);
  after SyncAll, ``ProcessGmData`` merges the staged sums of equal indices (handed out
  round-robin to cores), casts and writes them.
* **key 10** — :class:`KernelEmbeddingDenseGradV2Determinist`
  (``embedding_dense_grad_v2_determinist.h``, fp32 only): each core walks its range
  **backwards** and stops at rows whose index equals ``sorted[start-1]`` (the previous
  core's run), then continues **past** its end while the index equals its last index: every
  index is reduced by exactly one core, in a fixed order. Flushes at 10 rows (count checked
  after the add).
* **key 100** — :class:`KernelEmbeddingDenseGradV2SmallDim`
  (``embedding_dense_grad_v2_small_dim.h``): contiguous ranges of **unsorted** rows; each UB
  chunk of ``maxRowInUb`` rows is sorted in UB (indices cast to fp32, ``Sort<float, true>``,
  Extract; descending, stable) and each run of equal indices is summed in UB and written
  with one atomic add (fp16/bf16: into an fp32 workspace zeroed first, cast to ``out``
  after SyncAll).
* **keys 1, 11, 101** — the above with scaleGradByFreq (``ProcessAndScale``): the counts in
  the workspace are zeroed per core (``InitWorkspace``), SyncAll, every flush (first column
  chunk only) atomically adds its row count to ``counts[index]`` (``AddFreq``), SyncAll,
  then :class:`KernelEmbeddingDenseGradV2Scale` splits the rows of ``out`` over the cores
  and multiplies each by ``1/count`` (``reciScale``, a scalar division, then Muls; a zero
  count gives 1).

Deviations, all marked [R] where they are choices:

* The real kernel has no bounds check: an index outside ``[0, numWeights)`` makes it write
  outside ``out``. Here every index is checked when the kernel reads it (no cost) and the
  kernel stops with :class:`~npusim.kernels.common.sorted_index.IndexOutOfRangeError` before that
  write, naming the index and its position.
* ``ProcessForHalf`` in ops-nn calls ``CopyToOutStage(paddingIdx)`` on every row when the
  padding index is the core's first or last index; that call also empties the fp32 UB
  cache of the run in progress (moving its partial sum into the padding slot). The
  simulator stages the padding slot once per column chunk without touching the cache, so
  the results follow the documented formula.
* The small-dim kernel casts the int32 indices to fp32 with ``CAST_ROUND``; ``vector.Cast``
  accepts CAST_NONE/CAST_RINT for that pair, which give the same value below 2^24 (the
  small-dim kernel's numWeights limit).
* Simulator fast path (``fast=True``, the default): for the fp32 row walks (keys 0/1 and
  10/11) and the small-dim kernel's walk over each sorted UB chunk (keys 100/101, every
  dtype) the per-row loop is executed by :mod:`npusim.kernels.common.row_walk` — the same
  state machine, the same fp32 additions in the same order (bit-identical results), and
  the instructions recorded in batches whose per-pipe costs add up to the per-row ones.
  ``fast=False`` runs the row-by-row code below; tests compare the two.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npusim.ascendc import (PIPE_ALL, Add, Cast, DataCopyExtParams, DataCopyPad,
                            DataCopyPadExtParams, Duplicate, GetBlockIdx, GetBlockNum,
                            GetTPipePtr, GlobalTensor, HardEvent, Muls, PipeBarrier, RoundMode,
                            SetAtomicAdd, SetAtomicNone, SetFlag, SyncAll, TBuf, TPipe,
                            TPosition, TQue, WaitFlag, float32, int32_t, uint32_t)
from npusim.ascendc.sort import CreateVecIndex, Extract, Sort
from npusim.kernels.common.elementwise import InitOutput
from npusim.kernels.common.sorted_index import check_index

BUFFER_NUM = 1
DOUBLE_BUFFER = 1
INIT_PARAM = 0
INDICE_INIT_PARAM = -1
LIMIT_COUNT_NUM = 10
COPY_ROW_NUM = 1
BLOCK_SIZE = 32
BLOCK_SIZE_GRAD = 64
DOUBLE_PRE_CORE = 2
SORT_QUE_NUM = 3

_F32 = np.dtype(np.float32)
_PAD = DataCopyPadExtParams(True, 0, 0, 0)


@dataclass
class AddParam:
    mask: int = 64
    repeatTime: int = 0
    computeFormerNum: int = 0
    computeTailNum: int = 0
    lastIndices: int = INDICE_INIT_PARAM
    switchId: int = 0
    tailRepeatTime: int = 0
    tailComputeFormerNum: int = 0
    tailComputeTailNum: int = 0
    formerRepeatTime: int = 0
    formerComputeFormerNum: int = 0
    formerComputeTailNum: int = 0


def _sync(event: HardEvent) -> None:
    """SetFlag + WaitFlag (the PIPE_X_Y helpers of the ops-nn kernels)."""
    eventId = GetTPipePtr().FetchEventID(event)
    SetFlag(event, eventId)
    WaitFlag(event, eventId)


def _scalar_reads_done(event: HardEvent = HardEvent.S_MTE2) -> None:
    """Order the scalar reads (GetValue) of a UB buffer before the DataCopy or vector
    instruction that overwrites it. On hardware the scalar unit issues every later
    instruction after its own loads, so the ops-nn kernels have no flag here; the
    simulator's race checker needs the edge explicit [R]."""
    _sync(event)


def _params(nbytes: int, rows: int = 1) -> DataCopyExtParams:
    return DataCopyExtParams(rows, int(nbytes), 0, 0, 0)


def _signed(value) -> int:
    """An index read as uint32, as the int32 the user passed."""
    v = int(value)
    return v - (1 << 32) if v >= 1 << 31 else v


def _add_param_from(tiling, former, tail) -> AddParam:
    """AddParam from the (formerRepTime, formerFormerNum, formerTailNum) and tail triples."""
    p = AddParam(mask=tiling.computeMask)
    p.formerRepeatTime, p.formerComputeFormerNum, p.formerComputeTailNum = former
    p.tailRepeatTime, p.tailComputeFormerNum, p.tailComputeTailNum = tail
    return p


def _vec_add(dst, src, p: AddParam) -> None:
    """``Add(dst, dst, src, mask, repeatTime, {1,1,1,8,8,8})`` then the tail ``Add``."""
    if p.computeFormerNum > 0:
        Add(dst, dst, src, p.computeFormerNum)
    if p.computeTailNum > 0:
        f = p.computeFormerNum
        Add(dst[f], dst[f], src[f], p.computeTailNum)


class _RowRange:
    """What a row-walk kernel shares: params, the column chunk, the index check and the
    accumulator switch."""

    def UpdateParams(self, dimJ: int) -> None:
        t, p = self.tiling, self.addParam
        if dimJ == t.formerDimRepTime:
            self.curEmbeddingDim = t.tailEmbeddingDim
            p.repeatTime, p.computeFormerNum, p.computeTailNum = (
                p.tailRepeatTime, p.tailComputeFormerNum, p.tailComputeTailNum)
        else:
            self.curEmbeddingDim = t.formerEmbeddingDim
            p.repeatTime, p.computeFormerNum, p.computeTailNum = (
                p.formerRepeatTime, p.formerComputeFormerNum, p.formerComputeTailNum)

    def CheckIndex(self, currentId: int) -> None:
        """Simulator check (no cost): the row ``currentId`` must exist in ``out``."""
        check_index(_signed(currentId), self.curPos, self.tiling.numWeights, "numWeights",
                    "DataCopyPad")

    def CheckIsNeedSwitchAddQue(self, currentId: int) -> bool:
        """A new index: switch to the other accumulator (the same in both kernels)."""
        p = self.addParam
        if p.lastIndices != INDICE_INIT_PARAM and currentId != p.lastIndices:
            p.switchId = 1 - p.switchId
            self.addCount[p.switchId] = INIT_PARAM
            return True
        return False


class KernelEmbeddingDenseGradV2(_RowRange):
    """``EmbeddingDenseGradV2Kernel<MT, CT = float>``: tiling keys 0 and 1."""

    def __init__(self, gradDtype, fast: bool = True):
        self.MT = np.dtype(gradDtype)
        self.CT = _F32
        self.isDifferentDtype = self.MT != self.CT
        self.fast = fast

    def Init(self, grad, sortIndices, posIdx, backProps, workSpace, tiling, pipe: TPipe):
        self.InitParams(tiling)
        self.InitBuffers(pipe)
        self.SetGmAddr(grad, sortIndices, posIdx, backProps, workSpace, tiling)

    def Process(self):
        self.InitQue()
        self.firstIndex = int(self.indiceGm.GetValue(0))
        self.endIndex = int(self.indiceGm.GetValue(self.rowNum - 1))
        if self.isDifferentDtype:
            self.ProcessForHalf()
        else:
            self.ProcessForFp32()
        self.FreeQue()

    def ProcessForFp32(self):
        t = self.tiling
        for dimJ in range(t.formerDimRepTime + 1):
            self.UpdateParams(dimJ)
            if self.curEmbeddingDim == 0:
                continue
            if self.fast:
                from npusim.kernels.common.row_walk import walk_base_rows
                walk_base_rows(self, dimJ)
                continue
            for i in range(self.rowNum):
                self.CopyIn(i, dimJ)
                self.ComputeAndCopyOut(i, dimJ)

    def ProcessForHalf(self):
        t = self.tiling
        for dimJ in range(t.formerDimRepTime + 1):
            self.UpdateParams(dimJ)
            if self.curEmbeddingDim == 0:
                continue
            # the padding slots are staged once per column chunk (module docstring, [R])
            if t.paddingIdx == self.firstIndex:
                self.CopyToOutStage(t.paddingIdx, False)
            if t.paddingIdx == self.endIndex:
                self.CopyToOutStage(t.paddingIdx, True)
            for i in range(self.rowNum):
                self.CopyIn(i, dimJ)
                self.ComputeUbCache(i, dimJ)
            _sync(HardEvent.MTE3_S)
            SyncAll()
            self.ProcessGmData(dimJ)
            SyncAll()

    # -- init ----------------------------------------------------------------------------
    def InitParams(self, tiling):
        t = self.tiling = tiling
        self.blockIdx = GetBlockIdx()
        self.rowNum = t.tailRowNum if self.blockIdx >= t.formerRowRepTime else t.formerRowNum
        self.addParam = _add_param_from(
            t, (t.formerComputeRepTime, t.formerComputeFormerNum, t.formerComputeTailNum),
            (t.tailComputeRepTime, t.tailComputeFormerNum, t.tailComputeTailNum))
        self.addCount = [INIT_PARAM, INIT_PARAM]
        self.curEmbeddingDim = t.formerEmbeddingDim
        self.coreNum = t.coreNum
        self.curPos = 0

    def InitBuffers(self, pipe: TPipe):
        t = self.tiling
        idxAlignNum = BLOCK_SIZE // 4
        gradAlignNum = BLOCK_SIZE_GRAD // self.CT.itemsize
        gradAlignNum = -(-t.formerEmbeddingDim // gradAlignNum) * gradAlignNum
        self.gradAlignNum = gradAlignNum
        self.indiceQue = TQue(TPosition.VECIN, DOUBLE_BUFFER)
        self.posIdxQue = TQue(TPosition.VECIN, DOUBLE_BUFFER)
        self.gradQue = TQue(TPosition.VECIN, DOUBLE_BUFFER)
        self.tmpQue = TQue(TPosition.VECIN, BUFFER_NUM)
        self.addResQue = [TQue(TPosition.VECOUT, BUFFER_NUM), TQue(TPosition.VECOUT, BUFFER_NUM)]
        pipe.InitBuffer(self.indiceQue, DOUBLE_BUFFER, idxAlignNum * COPY_ROW_NUM * 4)
        pipe.InitBuffer(self.posIdxQue, DOUBLE_BUFFER, idxAlignNum * COPY_ROW_NUM * 4)
        pipe.InitBuffer(self.gradQue, DOUBLE_BUFFER, gradAlignNum * self.CT.itemsize)
        pipe.InitBuffer(self.tmpQue, BUFFER_NUM, idxAlignNum * COPY_ROW_NUM * 4)
        pipe.InitBuffer(self.addResQue[0], BUFFER_NUM, gradAlignNum * self.CT.itemsize)
        pipe.InitBuffer(self.addResQue[1], BUFFER_NUM, gradAlignNum * self.CT.itemsize)
        if self.isDifferentDtype:
            self.cacheQue = TQue(TPosition.VECOUT, DOUBLE_BUFFER)
            pipe.InitBuffer(self.cacheQue, BUFFER_NUM, gradAlignNum * self.CT.itemsize)

    def SetGmAddr(self, grad, sortIndices, posIdx, backProps, workSpace, tiling):
        t = tiling
        formerLoops = min(self.blockIdx, t.formerRowRepTime)
        tailLoops = 0 if self.blockIdx < t.formerRowRepTime else self.blockIdx - t.formerRowRepTime
        self.rowOffset = t.formerRowNum * formerLoops + t.tailRowNum * tailLoops
        self.gradGm = GlobalTensor(self.MT)
        self.gradGm.SetGlobalBuffer(grad, t.gradRow * t.embeddingDim)
        self.indiceGm, self.posIdxGm = GlobalTensor(uint32_t), GlobalTensor(uint32_t)
        self.indiceGm.SetGlobalBuffer(sortIndices + 4 * self.rowOffset, self.rowNum)
        self.posIdxGm.SetGlobalBuffer(posIdx + 4 * self.rowOffset, self.rowNum)
        self.outputGm = GlobalTensor(self.MT)
        self.outputGm.SetGlobalBuffer(backProps, t.numWeights * t.embeddingDim)
        self.idxNumGm = GlobalTensor(float32)
        self.idxNumGm.SetGlobalBuffer(workSpace, t.scaleWorkspaceLength)
        if self.isDifferentDtype:
            base = workSpace + 4 * t.scaleWorkspaceLength
            self.outIndexGm = GlobalTensor(uint32_t)
            self.outIndexGm.SetGlobalBuffer(base, t.outIndexWorkspaceLength)
            self.outStageGm = GlobalTensor(float32)
            self.outStageGm.SetGlobalBuffer(base + 4 * t.outIndexWorkspaceLength,
                                            t.outStageWorkspaceLength)

    def InitQue(self):
        for q in self.addResQue:
            local = q.AllocTensor(self.CT)
            self.ResetQue(local)
            q.EnQue(local)
        if self.isDifferentDtype:
            cache = self.cacheQue.AllocTensor(self.CT)
            self.ResetQue(cache)
            self.cacheQue.EnQue(cache)

    def FreeQue(self):
        for q in self.addResQue:
            q.FreeTensor(q.DeQue(self.CT))
        if self.isDifferentDtype:
            self.cacheQue.FreeTensor(self.cacheQue.DeQue(self.CT))

    def ResetQue(self, local):
        Duplicate(local, 0.0, local.GetSize())
        _sync(HardEvent.V_S)

    # -- one row ---------------------------------------------------------------------------
    def CopyIn(self, progress: int, dimJ: int):
        t = self.tiling
        _scalar_reads_done()
        gradLocal = self.gradQue.AllocTensor(self.CT)
        gradLocalCasted = gradLocal.ReinterpretCast(self.MT)
        indiceLocal = self.indiceQue.AllocTensor(uint32_t)
        posIdxLocal = self.posIdxQue.AllocTensor(uint32_t)
        DataCopyPad(posIdxLocal, self.posIdxGm[progress], _params(4), _PAD)
        DataCopyPad(indiceLocal, self.indiceGm[progress], _params(4), _PAD)
        _sync(HardEvent.MTE2_S)
        self.curPos = int(posIdxLocal.GetValue(0))
        gradAddrOffset = self.curPos * t.embeddingDim + t.formerEmbeddingDim * dimJ
        gradBytes = self.curEmbeddingDim * self.MT.itemsize
        if self.isDifferentDtype:
            off = gradLocalCasted.GetSize() // 2
            DataCopyPad(gradLocalCasted[off], self.gradGm[gradAddrOffset], _params(gradBytes), _PAD)
            _sync(HardEvent.MTE2_V)
            Cast(gradLocal, gradLocalCasted[off], RoundMode.CAST_NONE, self.curEmbeddingDim)
        else:
            DataCopyPad(gradLocalCasted, self.gradGm[gradAddrOffset], _params(gradBytes), _PAD)
        self.gradQue.EnQue(gradLocal)
        self.indiceQue.EnQue(indiceLocal)
        self.posIdxQue.FreeTensor(posIdxLocal)

    def ComputeAndCopyOut(self, progress: int, dimJ: int):
        t, p = self.tiling, self.addParam
        indiceLocal = self.indiceQue.DeQue(uint32_t)
        gradLocal = self.gradQue.DeQue(self.CT)
        currentId = int(indiceLocal.GetValue(0))
        self.CheckIndex(currentId)
        isLastRow = progress == self.rowNum - 1
        if currentId != t.paddingIdx:
            isNeedSwitch = self.CheckIsNeedSwitchAddQue(currentId)
            isLimite = self.addCount[p.switchId] == LIMIT_COUNT_NUM
            self.AtomicAddInUb(gradLocal)
            if isLimite or isLastRow:
                self.CopyOut(p.switchId, currentId, dimJ)
            if isNeedSwitch:
                self.CopyOut(1 - p.switchId, p.lastIndices, dimJ)
            p.lastIndices = currentId
        elif p.lastIndices != INDICE_INIT_PARAM:
            self.CopyOut(p.switchId, p.lastIndices, dimJ)
            p.lastIndices = INDICE_INIT_PARAM
        self.gradQue.FreeTensor(gradLocal)
        self.indiceQue.FreeTensor(indiceLocal)

    def AtomicAddInUb(self, gradLocal):
        p = self.addParam
        q = self.addResQue[p.switchId]
        addLocal = q.DeQue(self.CT)
        _vec_add(addLocal, gradLocal, p)
        _sync(HardEvent.V_S)
        q.EnQue(addLocal)
        self.addCount[p.switchId] += 1

    def CopyOut(self, addAddrOffset: int, indice: int, dimJ: int):
        t = self.tiling
        q = self.addResQue[addAddrOffset]
        addResLocal = q.DeQue(self.CT)
        addResLocalCasted = addResLocal.ReinterpretCast(self.MT)
        gmAddrOffset = indice * t.embeddingDim + t.formerEmbeddingDim * dimJ
        SetAtomicAdd(self.MT)
        DataCopyPad(self.outputGm[gmAddrOffset], addResLocalCasted,
                    _params(self.curEmbeddingDim * self.MT.itemsize))
        SetAtomicNone()
        self.AddFreq(addAddrOffset, indice, dimJ)
        PipeBarrier(PIPE_ALL)
        self.ResetQue(addResLocal)
        self.addCount[addAddrOffset] = INIT_PARAM
        q.EnQue(addResLocal)

    def AddFreq(self, addAddrOffset: int, indice: int, dimJ: int):
        if self.tiling.scaleGradByFreq and dimJ == 0:
            tmpLocal = self.tmpQue.AllocTensor(float32)
            tmpLocal.SetValue(0, float(self.addCount[addAddrOffset]))
            _sync(HardEvent.S_MTE3)
            SetAtomicAdd(float32)
            DataCopyPad(self.idxNumGm[indice], tmpLocal, _params(4))
            SetAtomicNone()
            self.tmpQue.FreeTensor(tmpLocal)

    # -- fp16/bf16 (ProcessForHalf) --------------------------------------------------------
    def ComputeUbCache(self, progress: int, dimJ: int):
        t, p = self.tiling, self.addParam
        indiceLocal = self.indiceQue.DeQue(uint32_t)
        gradLocal = self.gradQue.DeQue(self.CT)
        currentId = int(indiceLocal.GetValue(0))
        self.CheckIndex(currentId)
        isLastRow = progress == self.rowNum - 1
        if currentId != t.paddingIdx:
            isNeedSwitch = self.CheckIsNeedSwitchAddQue(currentId)
            isLimite = self.addCount[p.switchId] == LIMIT_COUNT_NUM
            self.AtomicAddInUb(gradLocal)
            if isLimite:
                self.CopyToUbCache(p.switchId, currentId, dimJ)
            if isNeedSwitch:
                self.CopyToUbCache(1 - p.switchId, p.lastIndices, dimJ)
                self.CopyUbCacheOut(p.lastIndices, dimJ)
            if isLastRow:
                self.CopyToUbCache(p.switchId, currentId, dimJ)
            p.lastIndices = currentId
        elif p.lastIndices != INDICE_INIT_PARAM:
            self.CopyToUbCache(p.switchId, p.lastIndices, dimJ)
            self.CopyUbCacheOut(p.lastIndices, dimJ)
            p.lastIndices = INDICE_INIT_PARAM
        if isLastRow:
            self.CopyUbCacheOut(currentId, dimJ)
        self.gradQue.FreeTensor(gradLocal)
        self.indiceQue.FreeTensor(indiceLocal)

    def CopyToUbCache(self, addAddrOffset: int, indice: int, dimJ: int):
        q = self.addResQue[addAddrOffset]
        addResLocal = q.DeQue(self.CT)
        cacheLocal = self.cacheQue.DeQue(self.CT)
        _vec_add(cacheLocal, addResLocal, self.addParam)
        self.AddFreq(addAddrOffset, indice, dimJ)
        PipeBarrier(PIPE_ALL)
        self.cacheQue.EnQue(cacheLocal)
        self.ResetQue(addResLocal)
        self.addCount[addAddrOffset] = INIT_PARAM
        q.EnQue(addResLocal)

    def CopyUbCacheOut(self, indice: int, dimJ: int):
        t = self.tiling
        if indice == t.paddingIdx:
            cacheLocal = self.cacheQue.DeQue(self.CT)
            self.ResetQue(cacheLocal)
            self.cacheQue.EnQue(cacheLocal)
            return
        if self.firstIndex == self.endIndex:
            self.CopyToOutStage(indice, False)
            self.CopyToOutStage(indice, indice == self.endIndex)
        elif indice == self.firstIndex or indice == self.endIndex:
            self.CopyToOutStage(indice, indice == self.endIndex)
        else:
            self.CopyToOutPut(indice, dimJ)

    def CopyToOutStage(self, indice: int, isEndIndex: bool):
        t = self.tiling
        tmpLocal = self.tmpQue.AllocTensor(uint32_t)
        cacheLocal = self.cacheQue.DeQue(self.CT)
        tmpLocal.SetValue(0, int(indice) & 0xFFFFFFFF)
        _sync(HardEvent.S_MTE3)
        stageOffset = self.blockIdx * DOUBLE_PRE_CORE * t.formerEmbeddingDim + \
            int(isEndIndex) * t.formerEmbeddingDim
        indexOffset = self.blockIdx * DOUBLE_PRE_CORE + int(isEndIndex)
        DataCopyPad(self.outStageGm[stageOffset], cacheLocal, _params(self.curEmbeddingDim * 4))
        DataCopyPad(self.outIndexGm[indexOffset], tmpLocal, _params(4))
        _sync(HardEvent.MTE3_S)
        _sync(HardEvent.MTE3_V)      # [R] explicit for the checker: the S wait orders it on hardware
        self.tmpQue.FreeTensor(tmpLocal)
        self.ResetQue(cacheLocal)
        self.cacheQue.EnQue(cacheLocal)

    def CopyToOutPut(self, indice: int, dimJ: int):
        t = self.tiling
        cacheLocal = self.cacheQue.DeQue(self.CT)
        cacheLocalCasted = cacheLocal.ReinterpretCast(self.MT)
        gmAddrOffset = indice * t.embeddingDim + t.formerEmbeddingDim * dimJ
        Cast(cacheLocalCasted, cacheLocal, RoundMode.CAST_RINT, self.curEmbeddingDim)
        _sync(HardEvent.V_MTE3)
        DataCopyPad(self.outputGm[gmAddrOffset], cacheLocalCasted,
                    _params(self.curEmbeddingDim * self.MT.itemsize))
        _sync(HardEvent.MTE3_S)
        _sync(HardEvent.MTE3_V)      # [R] explicit for the checker: the S wait orders it on hardware
        self.ResetQue(cacheLocal)
        self.cacheQue.EnQue(cacheLocal)

    def ProcessGmData(self, dimJ: int):
        pre, coreId = 0, 0
        preIndex = int(self.outIndexGm.GetValue(0))
        loopNum = DOUBLE_PRE_CORE * self.coreNum
        for i in range(1, loopNum + 1):
            curIndex = int(self.outIndexGm.GetValue(i)) if i < loopNum else None
            if curIndex is not None and curIndex == preIndex:
                continue
            coreId = (coreId + 1) % self.coreNum           # GetFreeCore
            if self.blockIdx == coreId:
                self.ProcessSameIndex(pre, i, preIndex, dimJ)
            pre, preIndex = i, curIndex

    def ProcessSameIndex(self, start: int, end: int, handleIndex: int, dimJ: int):
        for i in range(start, end):
            self.CopyStageIn(i)
            self.ComputeStage(handleIndex, dimJ, i == end - 1)

    def CopyStageIn(self, indexId: int):
        t = self.tiling
        _scalar_reads_done()
        gradLocal = self.gradQue.AllocTensor(self.CT)
        DataCopyPad(gradLocal, self.outStageGm[indexId * t.formerEmbeddingDim],
                    _params(self.curEmbeddingDim * 4), _PAD)
        self.gradQue.EnQue(gradLocal)

    def ComputeStage(self, handleIndex: int, dimJ: int, isEndIndexId: bool):
        p = self.addParam
        gradLocal = self.gradQue.DeQue(self.CT)
        isLimite = self.addCount[p.switchId] == LIMIT_COUNT_NUM
        self.AtomicAddInUb(gradLocal)
        if isLimite:
            self.CopyToUbCache(p.switchId, handleIndex, dimJ)
        if isEndIndexId:
            self.CopyToUbCache(p.switchId, handleIndex, dimJ)
            self.CopyToOutPut(handleIndex, dimJ)
        self.gradQue.FreeTensor(gradLocal)


class KernelEmbeddingDenseGradV2Determinist(_RowRange):
    """``EmbeddingDenseGradV2DeterministKernel<float>``: tiling keys 10 and 11."""

    CT = MT = _F32

    def __init__(self, fast: bool = True):
        self.fast = fast

    def Init(self, grad, sortIndices, posIdx, backProps, workSpace, tiling, pipe: TPipe):
        t = self.tiling = tiling
        self.blockIdx = GetBlockIdx()
        self.processRowNum = (t.determinTailRowNum if self.blockIdx >= t.determinFormerRowNumRepTime
                              else t.determinFormerRowNum)
        self.addParam = _add_param_from(
            t, (t.formerComputeRepTime, t.formerComputeFormerNum, t.formerComputeTailNum),
            (t.tailComputeRepTime, t.tailComputeFormerNum, t.tailComputeTailNum))
        self.addCount = [INIT_PARAM, INIT_PARAM]
        self.curEmbeddingDim = t.formerEmbeddingDim
        self.standIdice = INDICE_INIT_PARAM
        self.curPos = 0
        formerLoops = min(self.blockIdx, t.determinFormerRowNumRepTime)
        tailLoops = max(self.blockIdx - t.determinFormerRowNumRepTime, 0)
        self.indicesAddrOffset = t.determinFormerRowNum * formerLoops + \
            t.determinTailRowNum * tailLoops
        # InitBuffers
        idxAlignNum = BLOCK_SIZE // 4
        gradAlignNum = -(-t.formerEmbeddingDim // 8) * 8
        self.indiceQue = TQue(TPosition.VECIN, BUFFER_NUM)
        self.posIdxQue = TQue(TPosition.VECIN, BUFFER_NUM)
        self.tmpQue = TQue(TPosition.VECIN, BUFFER_NUM)
        self.gradQue = TQue(TPosition.VECIN, BUFFER_NUM)
        self.addResQue = [TQue(TPosition.VECOUT, BUFFER_NUM), TQue(TPosition.VECOUT, BUFFER_NUM)]
        pipe.InitBuffer(self.indiceQue, BUFFER_NUM, idxAlignNum * 4)
        pipe.InitBuffer(self.posIdxQue, BUFFER_NUM, idxAlignNum * 4)
        pipe.InitBuffer(self.tmpQue, BUFFER_NUM, idxAlignNum * 4)
        pipe.InitBuffer(self.gradQue, BUFFER_NUM, gradAlignNum * 4)
        pipe.InitBuffer(self.addResQue[0], BUFFER_NUM, gradAlignNum * 4)
        pipe.InitBuffer(self.addResQue[1], BUFFER_NUM, gradAlignNum * 4)
        self.gradAlignNum = gradAlignNum
        # SetGmAddr
        self.gradGm = GlobalTensor(float32)
        self.gradGm.SetGlobalBuffer(grad, t.gradRow * t.embeddingDim)
        self.indiceGlobalGm = GlobalTensor(int32_t)
        self.indiceGlobalGm.SetGlobalBuffer(sortIndices, t.gradRow)
        self.indiceGm = self.indiceGlobalGm[self.indicesAddrOffset]
        self.posIdxGm = GlobalTensor(int32_t)
        self.posIdxGm.SetGlobalBuffer(posIdx + 4 * self.indicesAddrOffset,
                                      t.gradRow - self.indicesAddrOffset)
        self.outputGm = GlobalTensor(float32)
        self.outputGm.SetGlobalBuffer(backProps, t.numWeights * t.embeddingDim)
        self.idxNumGm = GlobalTensor(float32)
        self.idxNumGm.SetGlobalBuffer(workSpace, t.scaleWorkspaceLength)

    def Process(self):
        t = self.tiling
        self.InitAddQue()
        for dimJ in range(t.formerDimRepTime + 1):
            self.UpdateParams(dimJ)
            if self.curEmbeddingDim == 0:
                continue
            self.standIdice = INDICE_INIT_PARAM
            if self.blockIdx != 0:
                self.InitStandIndice(0)
            if self.fast:
                from npusim.kernels.common.row_walk import walk_determinist_rows
                walk_determinist_rows(self, dimJ)
                continue
            if self.SubProcess(dimJ):
                self.ContinueCompute(dimJ)
        self.FreeAddQue()

    def SubProcess(self, dimJ: int) -> bool:
        isNeedContinueCopy = True
        for j in range(self.processRowNum - 1, -1, -1):
            if not self.CopyIn(j, True, dimJ):
                # the last row is the previous core's run: nothing left for this core
                isNeedContinueCopy = j != self.processRowNum - 1
                if self.addParam.lastIndices != INDICE_INIT_PARAM:
                    self.CopyOut(self.addParam.switchId, self.addParam.lastIndices, dimJ)
                break
            self.ComputeAndCopyOut(j, 0, dimJ)
        return isNeedContinueCopy

    def InitStandIndice(self, offset: int):
        _scalar_reads_done()
        indiceLocal = self.indiceQue.AllocTensor(int32_t)
        DataCopyPad(indiceLocal, self.indiceGlobalGm[self.indicesAddrOffset + offset - 1],
                    _params(4), _PAD)
        _sync(HardEvent.MTE2_S)
        self.standIdice = int(indiceLocal.GetValue(0))
        self.indiceQue.FreeTensor(indiceLocal)

    def CopyIn(self, progress: int, flag: bool, dimJ: int) -> bool:
        t = self.tiling
        _scalar_reads_done()
        indiceLocal = self.indiceQue.AllocTensor(int32_t)
        DataCopyPad(indiceLocal, self.indiceGm[progress], _params(4), _PAD)
        _sync(HardEvent.MTE2_S)
        if (int(indiceLocal.GetValue(0)) == self.standIdice) == flag:
            self.indiceQue.FreeTensor(indiceLocal)
            return False
        self.indiceQue.EnQue(indiceLocal)
        gradLocal = self.gradQue.AllocTensor(float32)
        posIdxLocal = self.posIdxQue.AllocTensor(int32_t)
        DataCopyPad(posIdxLocal, self.posIdxGm[progress], _params(4), _PAD)
        _sync(HardEvent.MTE2_S)
        self.curPos = int(posIdxLocal.GetValue(0))
        gradAddrOffset = self.curPos * t.embeddingDim + t.formerEmbeddingDim * dimJ
        DataCopyPad(gradLocal, self.gradGm[gradAddrOffset], _params(self.curEmbeddingDim * 4), _PAD)
        self.gradQue.EnQue(gradLocal)
        self.posIdxQue.FreeTensor(posIdxLocal)
        return True

    def ComputeAndCopyOut(self, progress: int, loopLimit: int, dimJ: int):
        t, p = self.tiling, self.addParam
        indiceLocal = self.indiceQue.DeQue(int32_t)
        gradLocal = self.gradQue.DeQue(float32)
        currentId = int(indiceLocal.GetValue(0)) & 0xFFFFFFFF
        self.CheckIndex(currentId)
        if currentId != t.paddingIdx:
            isCopyOut = self.CheckIsNeedSwitchAddQue(currentId)
            self.AtomicAddInUb(gradLocal)
            if self.addCount[p.switchId] == LIMIT_COUNT_NUM or progress == loopLimit:
                self.CopyOut(p.switchId, currentId, dimJ)
            if isCopyOut:
                self.CopyOut(1 - p.switchId, p.lastIndices, dimJ)
            p.lastIndices = currentId
        elif p.lastIndices != INDICE_INIT_PARAM:
            self.CopyOut(p.switchId, p.lastIndices, dimJ)
            p.lastIndices = INDICE_INIT_PARAM
        self.gradQue.FreeTensor(gradLocal)
        self.indiceQue.FreeTensor(indiceLocal)

    def AtomicAddInUb(self, gradLocal):
        p = self.addParam
        q = self.addResQue[p.switchId]
        addLocal = q.DeQue(float32)
        _vec_add(addLocal, gradLocal, p)
        q.EnQue(addLocal)
        self.addCount[p.switchId] += 1

    def CopyOut(self, addrOffset: int, indice: int, dimJ: int):
        t = self.tiling
        q = self.addResQue[addrOffset]
        addResLocal = q.DeQue(float32)
        gmAddrOffset = indice * t.embeddingDim + t.formerEmbeddingDim * dimJ
        SetAtomicAdd(float32)
        DataCopyPad(self.outputGm[gmAddrOffset], addResLocal, _params(self.curEmbeddingDim * 4))
        SetAtomicNone()
        if t.scaleGradByFreq and dimJ == 0:
            tmpLocal = self.tmpQue.AllocTensor(float32)
            tmpLocal.SetValue(0, float(self.addCount[addrOffset]))
            _sync(HardEvent.S_MTE3)              # [R] not in the ops-nn determinist kernel
            SetAtomicAdd(float32)
            DataCopyPad(self.idxNumGm[indice], tmpLocal, _params(4))
            SetAtomicNone()
            self.tmpQue.FreeTensor(tmpLocal)
        PipeBarrier(PIPE_ALL)
        Duplicate(addResLocal, 0.0, t.formerEmbeddingDim)
        self.addCount[addrOffset] = INIT_PARAM
        q.EnQue(addResLocal)

    def ContinueCompute(self, dimJ: int):
        t = self.tiling
        self.addParam.lastIndices = INDICE_INIT_PARAM
        self.InitStandIndice(self.processRowNum)
        pre = self.indicesAddrOffset
        for i in range(self.processRowNum, t.gradRow - pre):
            if not self.CopyIn(i, False, dimJ):
                if self.addParam.lastIndices != INDICE_INIT_PARAM:
                    self.CopyOut(self.addParam.switchId, self.addParam.lastIndices, dimJ)
                break
            self.ComputeAndCopyOut(i, t.gradRow - pre - 1, dimJ)

    def InitAddQue(self):
        for q in self.addResQue:
            local = q.AllocTensor(float32)
            Duplicate(local, 0.0, self.tiling.formerEmbeddingDim)
            q.EnQue(local)

    def FreeAddQue(self):
        for q in self.addResQue:
            q.FreeTensor(q.DeQue(float32))


class KernelEmbeddingDenseGradV2SmallDim:
    """``EmbeddingDenseGradV2SmallDimKernel<MT, CT = float>``: tiling keys 100 and 101."""

    def __init__(self, gradDtype, fast: bool = True):
        self.MT = np.dtype(gradDtype)
        self.CT = _F32
        self.fast = fast
        self.isDifferentDtype = self.MT != self.CT

    def Init(self, grad, indices, backProps, workSpace, tiling, pipe: TPipe):
        t = self.tiling = tiling
        self.coreIdx = GetBlockIdx()
        self.scaleCount = 0
        if self.coreIdx < GetBlockNum() - 1:
            self.rowNum, self.copyTime, self.lastRowNum = (t.formerCopyRow, t.formerCopyTime,
                                                           t.formerLastRow)
        else:
            self.rowNum, self.copyTime, self.lastRowNum = (t.tailCopyRow, t.tailCopyTime,
                                                           t.tailLastRow)
        self.copyRowNum = min(t.maxRowInUb, self.rowNum)
        # InitBuffers
        alignNum = BLOCK_SIZE_GRAD // self.CT.itemsize
        align = BLOCK_SIZE // self.MT.itemsize
        self.embeddingDimAlign = -(-t.embeddingDim // align) * align
        self.gradAlignNum = -(-(self.embeddingDimAlign * self.copyRowNum) // alignNum) * alignNum
        self.idxAlignNum = -(-self.copyRowNum // BLOCK_SIZE) * BLOCK_SIZE
        self.indicesQue = TQue(TPosition.VECIN, BUFFER_NUM)
        self.idxBuf = TBuf(TPosition.VECCALC)
        self.tmp2Que = TQue(TPosition.VECIN, BUFFER_NUM)
        self.tmpQue = TQue(TPosition.VECIN, BUFFER_NUM)
        self.sortIndicesQue = TQue(TPosition.VECIN, BUFFER_NUM)
        self.gradQue = TQue(TPosition.VECIN, BUFFER_NUM)
        self.addResQue = TQue(TPosition.VECOUT, BUFFER_NUM)
        pipe.InitBuffer(self.indicesQue, BUFFER_NUM, self.idxAlignNum * 4)
        pipe.InitBuffer(self.idxBuf, self.idxAlignNum * 4)
        pipe.InitBuffer(self.tmp2Que, BUFFER_NUM, self.idxAlignNum * 4)
        pipe.InitBuffer(self.tmpQue, BUFFER_NUM, self.idxAlignNum * SORT_QUE_NUM * 4)
        pipe.InitBuffer(self.sortIndicesQue, BUFFER_NUM, self.idxAlignNum * SORT_QUE_NUM * 4)
        pipe.InitBuffer(self.gradQue, BUFFER_NUM, self.gradAlignNum * 4)
        pipe.InitBuffer(self.addResQue, BUFFER_NUM, t.embeddingDim * 4)
        # SetGmAddr
        self.rowOffset = t.formerCopyRow * self.coreIdx
        self.gradGm = GlobalTensor(self.MT)
        self.gradGm.SetGlobalBuffer(grad + self.rowOffset * t.embeddingDim * self.MT.itemsize,
                                    self.rowNum * t.embeddingDim)
        self.indicesGm = GlobalTensor(int32_t)
        self.indicesGm.SetGlobalBuffer(indices + 4 * self.rowOffset, self.rowNum)
        self.outputGm = GlobalTensor(self.MT)
        self.outputGm.SetGlobalBuffer(backProps, t.numWeights * t.embeddingDim)
        self.idxNumGm = GlobalTensor(float32)
        self.idxNumGm.SetGlobalBuffer(workSpace, t.scaleWorkspaceLength)
        if self.isDifferentDtype:
            self.outCastedGm = GlobalTensor(float32)
            self.outCastedGm.SetGlobalBuffer(workSpace + 4 * t.scaleWorkspaceLength,
                                             t.outCastedWorkspaceLength)
            blockLength = t.outCastedWorkspaceLength // t.coreNum
            blockLeft = t.outCastedWorkspaceLength % t.coreNum
            InitOutput(self.outCastedGm[blockLength * self.coreIdx], blockLength, 0.0)
            if self.coreIdx == 0 and blockLeft:
                InitOutput(self.outCastedGm[blockLength * t.coreNum], blockLeft, 0.0)
            _sync(HardEvent.S_MTE3)
            SyncAll()

    def Process(self):
        for i in range(self.copyTime - 1):
            self.CopyIn(i, True)
            self.ComputeAndCopyOut(i, True)
        self.CopyIn(self.copyTime - 1, False)
        self.ComputeAndCopyOut(self.copyTime - 1, False)
        _sync(HardEvent.MTE3_S)
        SyncAll()
        if self.isDifferentDtype:
            self.SplitOutCasted()
            for i in range(self.formLoopNum):
                self.CopyCastedOut(self.startOutId + i * self.gradAlignNum, self.gradAlignNum)
            if self.tailLoopLength:
                self.CopyCastedOut(self.startOutId + self.formLoopNum * self.gradAlignNum,
                                   self.tailLoopLength)

    def CopyIn(self, progress: int, formerFlag: bool):
        t = self.tiling
        _scalar_reads_done()
        indicesLocal = self.indicesQue.AllocTensor(int32_t)
        gradLocal = self.gradQue.AllocTensor(self.CT)
        gradLocalCasted = gradLocal.ReinterpretCast(self.MT)
        idxAddrOffset = self.copyRowNum * progress
        gradAddrOffset = self.copyRowNum * t.embeddingDim * progress
        copyRow = self.copyRowNum if formerFlag else self.lastRowNum
        self.chunkStart, self.chunkRows = idxAddrOffset, copyRow
        padParams = DataCopyPadExtParams(True, 0, self.embeddingDimAlign - t.embeddingDim, 0)
        DataCopyPad(indicesLocal, self.indicesGm[idxAddrOffset], _params(4 * copyRow), _PAD)
        gradParams = _params(t.embeddingDim * self.MT.itemsize, copyRow)
        if self.isDifferentDtype:
            off = gradLocalCasted.GetSize() // 2
            DataCopyPad(gradLocalCasted[off], self.gradGm[gradAddrOffset], gradParams, padParams)
            _sync(HardEvent.MTE2_V)
            Cast(gradLocal, gradLocalCasted[off], RoundMode.CAST_NONE, off)
        else:
            DataCopyPad(gradLocalCasted, self.gradGm[gradAddrOffset], gradParams, padParams)
        self.indicesQue.EnQue(indicesLocal)
        self.gradQue.EnQue(gradLocal)

    def SortIndices(self, formerFlag: bool):
        _scalar_reads_done(HardEvent.S_V)
        indicesLocal = self.indicesQue.DeQue(int32_t)
        idxLocal = self.idxBuf.Get(int32_t)
        tmpLocal = self.tmpQue.AllocTensor(float32)
        tmp2Local = self.tmp2Que.AllocTensor(float32)
        sortResLocal = self.sortIndicesQue.AllocTensor(float32)
        idxNum = self.copyRowNum if formerFlag else self.lastRowNum
        idxAlign32 = -(-idxNum // BLOCK_SIZE) * BLOCK_SIZE
        sortRepeatTimes = idxAlign32 // BLOCK_SIZE
        Duplicate(tmp2Local, -1.0, idxAlign32)
        Cast(tmp2Local, indicesLocal, RoundMode.CAST_RINT, idxNum)       # [R] CAST_ROUND
        CreateVecIndex(idxLocal, 0, idxAlign32)     # [R] ops-nn: idxNum (the pad slots unset)
        idxULocal = idxLocal.ReinterpretCast(uint32_t)
        Sort(sortResLocal, tmp2Local, idxULocal, tmpLocal, sortRepeatTimes, True)
        Extract(tmp2Local, idxULocal, sortResLocal, sortRepeatTimes)
        Cast(indicesLocal, tmp2Local, RoundMode.CAST_ROUND, idxNum)
        self.indicesQue.EnQue(indicesLocal)
        self.tmpQue.FreeTensor(tmpLocal)
        self.tmp2Que.FreeTensor(tmp2Local)
        self.sortIndicesQue.FreeTensor(sortResLocal)

    def ResetAddQue(self):
        addLocal = self.addResQue.AllocTensor(self.CT)
        Duplicate(addLocal, 0.0, self.tiling.embeddingDim)
        self.addResQue.EnQue(addLocal)

    def AtomicAddInUb(self, gradLocal, addrOffset: int):
        self.scaleCount += 1
        offset = addrOffset * self.embeddingDimAlign
        addLocal = self.addResQue.DeQue(self.CT)
        Add(addLocal, addLocal, gradLocal[offset], self.tiling.embeddingDim)
        self.addResQue.EnQue(addLocal)

    def ComputeAndCopyOut(self, progress: int, formerFlag: bool):
        t = self.tiling
        self.SortIndices(formerFlag)
        _sync(HardEvent.V_S)      # [R] the scalar unit reads the sorted entries; not in ops-nn
        indicesLocal = self.indicesQue.DeQue(int32_t)
        idxLocal = self.idxBuf.Get(int32_t)
        gradLocal = self.gradQue.DeQue(self.CT)
        processRowNum = self.copyRowNum if formerFlag else self.lastRowNum
        self.ResetAddQue()
        self.scaleCount = 0
        if self.fast:
            from npusim.kernels.common.row_walk import walk_small_dim_chunk
            walk_small_dim_chunk(self, indicesLocal, idxLocal, gradLocal, processRowNum)
            processRowNum = 0
        i = 0
        while i < processRowNum:
            posIdx = int(idxLocal.GetValue(i))
            currentId = int(indicesLocal.GetValue(i))
            self.CheckChunkIndex(currentId, posIdx)
            if (currentId & 0xFFFFFFFFFFFFFFFF) == t.paddingIdx:
                i += 1
                continue
            self.AtomicAddInUb(gradLocal, posIdx)
            rightPtr = i + 1
            while rightPtr < processRowNum:
                nextId = int(indicesLocal.GetValue(rightPtr))
                if currentId != nextId:
                    break
                self.AtomicAddInUb(gradLocal, int(idxLocal.GetValue(rightPtr)))
                rightPtr += 1
            i = rightPtr
            self.CopyOut(currentId)
        self.addResQue.FreeTensor(self.addResQue.DeQue(self.CT))
        self.indicesQue.FreeTensor(indicesLocal)
        self.gradQue.FreeTensor(gradLocal)

    def CheckChunkIndex(self, currentId: int, posIdx: int) -> None:
        """Simulator check (no cost). When it fails, the message names the first bad index
        of the chunk in its original order (the sorted entry may be a padding slot)."""
        t = self.tiling
        if 0 <= currentId < t.numWeights:
            return
        raw = self.indicesGm[self.chunkStart].bytes_view(4 * self.chunkRows, "Check", None)
        values = raw.view(np.int32)
        bad = np.flatnonzero((values < 0) | (values >= t.numWeights))
        first = int(bad[0]) if bad.size else posIdx
        value = int(values[first]) if bad.size else currentId
        check_index(value, self.rowOffset + self.chunkStart + first, t.numWeights,
                    "numWeights", "DataCopyPad")

    def CopyOut(self, indice: int):
        t = self.tiling
        addLocal = self.addResQue.DeQue(self.CT)
        gmAddrOffset = indice * t.embeddingDim
        SetAtomicAdd(self.CT)
        if self.isDifferentDtype:
            DataCopyPad(self.outCastedGm[gmAddrOffset], addLocal, _params(t.embeddingDim * 4))
        else:
            DataCopyPad(self.outputGm[gmAddrOffset], addLocal, _params(t.embeddingDim * 4))
        SetAtomicNone()
        if t.scaleGradByFreq:
            tmpLocal = self.tmpQue.AllocTensor(float32)
            _sync(HardEvent.MTE3_S)   # [R] the last count's DataCopyPad has read tmpLocal
            tmpLocal.SetValue(0, float(self.scaleCount))
            _sync(HardEvent.S_MTE3)
            SetAtomicAdd(float32)
            DataCopyPad(self.idxNumGm[indice], tmpLocal, _params(4))
            SetAtomicNone()
            self.tmpQue.FreeTensor(tmpLocal)
        self.addResQue.FreeTensor(addLocal)
        self.ResetAddQue()
        self.scaleCount = 0

    def SplitOutCasted(self):
        t = self.tiling
        total = t.numWeights * t.embeddingDim
        tailLength = total // t.coreNum
        formLength = tailLength + 1
        formBlockNum = total % t.coreNum
        if self.coreIdx < formBlockNum:
            length = formLength
            self.startOutId = self.coreIdx * formLength
        else:
            length = tailLength
            self.startOutId = formBlockNum * formLength + (self.coreIdx - formBlockNum) * tailLength
        self.formLoopNum = length // self.gradAlignNum
        self.tailLoopLength = length % self.gradAlignNum

    def CopyCastedOut(self, offset: int, opLength: int):
        gradLocal = self.gradQue.AllocTensor(self.CT)
        gradLocalCasted = gradLocal.ReinterpretCast(self.MT)
        DataCopyPad(gradLocal, self.outCastedGm[offset], _params(opLength * 4), _PAD)
        _sync(HardEvent.MTE2_V)
        Cast(gradLocalCasted, gradLocal, RoundMode.CAST_RINT, opLength)
        _sync(HardEvent.V_MTE3)
        DataCopyPad(self.outputGm[offset], gradLocalCasted, _params(opLength * self.MT.itemsize))
        _sync(HardEvent.MTE3_S)
        self.gradQue.FreeTensor(gradLocal)


class KernelEmbeddingDenseGradV2Scale:
    """``EmbeddingDenseGradV2ScaleKernel<float>``: ``out[r] *= 1/count[r]`` over the rows of
    ``out`` split across the cores (``scaleTiling``)."""

    def Init(self, backProps, workSpace, tiling, pipe: TPipe):
        t = self.tiling = tiling
        self.blockIdx = GetBlockIdx()
        self.scaleRowNum = (t.tailCoreRowNum if self.blockIdx >= t.formerCoreRowRepTime
                            else t.formerCoreRowNum)
        self.param = _add_param_from(
            t, (t.formerComputeRepTime, t.formerComputeFormerNum, t.formerComputeTailNum),
            (t.tailComputeRepTime, t.tailComputeFormerNum, t.tailComputeTailNum))
        self.curEmbeddingDim = t.formerEmbeddingDim
        gradAlign = -(-t.formerEmbeddingDim // 8) * 8
        self.gradInQue = TQue(TPosition.VECIN, DOUBLE_BUFFER)
        self.scaleQue = TQue(TPosition.VECIN, DOUBLE_BUFFER)
        self.gradOutQue = TQue(TPosition.VECOUT, DOUBLE_BUFFER)
        pipe.InitBuffer(self.gradInQue, DOUBLE_BUFFER, gradAlign * 4)
        pipe.InitBuffer(self.scaleQue, DOUBLE_BUFFER, 32)
        pipe.InitBuffer(self.gradOutQue, DOUBLE_BUFFER, gradAlign * 4)
        formerLoops = min(self.blockIdx, t.formerCoreRowRepTime)
        tailLoops = max(self.blockIdx - t.formerCoreRowRepTime, 0)
        addrOffset = t.formerCoreRowNum * formerLoops + t.tailCoreRowNum * tailLoops
        self.backPropGm = GlobalTensor(float32)
        self.backPropGm.SetGlobalBuffer(backProps + 4 * addrOffset * t.embeddingDim,
                                        self.scaleRowNum * t.embeddingDim)
        self.indexCountGm = GlobalTensor(float32)
        self.indexCountGm.SetGlobalBuffer(workSpace + 4 * addrOffset, self.scaleRowNum)

    def UpdateParams(self, dimJ: int):
        _RowRange.UpdateParams(self, dimJ)

    @property
    def addParam(self):
        return self.param

    def Process(self):
        for dimJ in range(self.tiling.formerDimRepTime + 1):
            self.UpdateParams(dimJ)
            if self.curEmbeddingDim == 0:
                continue
            for i in range(self.scaleRowNum):
                self.CopyIn(i, dimJ)
                self.Compute()
                self.CopyOut(i, dimJ)

    def CopyIn(self, progress: int, dimJ: int):
        t = self.tiling
        _scalar_reads_done()
        gradLocal = self.gradInQue.AllocTensor(float32)
        scaleLocal = self.scaleQue.AllocTensor(float32)
        off = progress * t.embeddingDim + t.formerEmbeddingDim * dimJ
        DataCopyPad(gradLocal, self.backPropGm[off], _params(self.curEmbeddingDim * 4), _PAD)
        DataCopyPad(scaleLocal, self.indexCountGm[progress], _params(4), _PAD)
        self.gradInQue.EnQue(gradLocal)
        self.scaleQue.EnQue(scaleLocal)

    def Compute(self):
        p = self.param
        gradInLocal = self.gradInQue.DeQue(float32)
        scaleLocal = self.scaleQue.DeQue(float32)
        gradOutLocal = self.gradOutQue.AllocTensor(float32)
        _sync(HardEvent.MTE2_S)        # [R] the count is read by the scalar unit; not in ops-nn
        scale = np.float32(scaleLocal.GetValue(0))
        reciScale = np.float32(1.0) if scale == 0 else np.float32(1.0) / scale
        if p.computeFormerNum > 0:
            Muls(gradOutLocal, gradInLocal, reciScale, p.computeFormerNum)
        if p.computeTailNum > 0:
            f = p.computeFormerNum
            Muls(gradOutLocal[f], gradInLocal[f], reciScale, p.computeTailNum)
        self.gradInQue.FreeTensor(gradInLocal)
        self.scaleQue.FreeTensor(scaleLocal)
        self.gradOutQue.EnQue(gradOutLocal)

    def CopyOut(self, progress: int, dimJ: int):
        t = self.tiling
        gradOutLocal = self.gradOutQue.DeQue(float32)
        off = progress * t.embeddingDim + t.formerEmbeddingDim * dimJ
        DataCopyPad(self.backPropGm[off], gradOutLocal, _params(self.curEmbeddingDim * 4))
        self.gradOutQue.FreeTensor(gradOutLocal)


def InitWorkspace(tiling, workSpace) -> None:
    """Zero this core's slice of the counts (``scaleTiling`` split of numWeights)."""
    t = tiling
    blockIdx = GetBlockIdx()
    formerLoops = min(blockIdx, t.formerCoreRowRepTime)
    tailLoops = max(blockIdx - t.formerCoreRowRepTime, 0)
    addrOffset = t.formerCoreRowNum * formerLoops + t.tailCoreRowNum * tailLoops
    rows = t.tailCoreRowNum if blockIdx >= t.formerCoreRowRepTime else t.formerCoreRowNum
    indexCountGm = GlobalTensor(float32)
    indexCountGm.SetGlobalBuffer(workSpace + 4 * addrOffset, rows)
    InitOutput(indexCountGm, rows, 0.0)


def _make_kernel(kind: str, gradDtype, fast: bool):
    if kind == "small":
        return KernelEmbeddingDenseGradV2SmallDim(gradDtype, fast)
    if kind == "det":
        return KernelEmbeddingDenseGradV2Determinist(fast)
    return KernelEmbeddingDenseGradV2(gradDtype, fast)


def embedding_dense_grad_v2(grad, sortIndices, posIdx, backProps, workSpace, tiling,
                            gradDtype, fast: bool = True):
    """Kernel entry (``extern "C" __global__ __aicore__ void embedding_dense_grad_v2``).

    Args:
        grad: device address of grad ([gradRow, embeddingDim] of ``gradDtype``).
        sortIndices, posIdx: int32 sorted indices and original positions (the Sort kernel's
            outputs); for the small-dim keys, ``sortIndices`` is the unsorted int32 indices
            and ``posIdx`` is unused.
        backProps: ``out`` ([numWeights, embeddingDim] of ``gradDtype``), zeroed before.
        workSpace: the user workspace (after the 16 MiB system workspace):
            counts (scale), outIndex + outStage (fp16/bf16), or outCasted (fp16/bf16
            small-dim).
        tiling: :class:`~npusim.kernels.embedding_dense_backward.tiling.EmbeddingDenseGradV2TilingData`.
        gradDtype: the template type (the real operator selects it at compile time).
        fast: use the batched row walks (module docstring).

    Launch with ``blockDim = tiling.blockDim``, ``sync_all = tiling.needSyncAll`` and the
    Ascend C UB reserve (InitOutput uses it).

    The scale pass (keys 1, 11, 101) is ``EmbeddingDenseGradV2ScaleKernel<float>`` whatever
    ``gradDtype`` is (ops-nn ``embedding_dense_grad_v2.cpp``): it reads and writes
    ``backProps`` as fp32. aclnn therefore casts fp16/bf16 grad to fp32 whenever
    scaleGradByFreq is set (``IsNeedCast``, tiling module); a direct launch with a half
    ``out`` and scaleGradByFreq runs past ``out`` and the checker stops it with a ``GM``
    error, where hardware would corrupt the memory after it.
    """
    key = tiling.tilingKey
    kind = "small" if key >= 100 else ("det" if key >= 10 else "base")
    tpipe = TPipe()
    if key in (0, 10, 100):
        op = _make_kernel(kind, gradDtype, fast)
        if kind == "small":
            op.Init(grad, sortIndices, backProps, workSpace, tiling, tpipe)
        else:
            op.Init(grad, sortIndices, posIdx, backProps, workSpace, tiling, tpipe)
        op.Process()
        return
    # ProcessAndScale<isSmallDim, isDetermin>
    InitWorkspace(tiling, workSpace)
    SyncAll()
    op = _make_kernel(kind, gradDtype, fast)
    if kind == "small":
        op.Init(grad, sortIndices, backProps, workSpace, tiling, tpipe)
    else:
        op.Init(grad, sortIndices, posIdx, backProps, workSpace, tiling, tpipe)
    op.Process()
    SyncAll()
    tpipe.Destroy()
    pipe = TPipe()
    scaleOp = KernelEmbeddingDenseGradV2Scale()
    scaleOp.Init(backProps, workSpace, tiling, pipe)
    scaleOp.Process()
