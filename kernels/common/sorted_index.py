"""The device sort of indices with their original positions, shared by
aclnnEmbeddingDenseBackward and FusedSparseAdam.

What the real operator does (docs/reference/operators.md §2 "Sorting", aclnn_embedding_dense_
backward.cpp ``PorcessIndices``): before EmbeddingDenseGradV2 it launches a **separate Sort
kernel** (``l0op::Sort(indices, dim=-1, descending=false, stable=true, DT_INT32)``) that
returns the sorted indices and ``posIdx``, the original row of each sorted entry; the
int32 indices are re-viewed as FLOAT for that sort, since non-negative int32 bit patterns
keep their order as floats. This module models that Sort as its own kernel launch, built
from the Ascend C sort instructions of :mod:`npusim.ascendc.sort` (Sort32 / MrgSort /
Extract, costed at their §2.1 rate of 2 elements per cycle). The Sort op's own source is
not public; its tiling here is ours [R]:

* **Phase 1** (every core): chunks of ``chunkLength`` keys are sorted in UB with the Sort
  library routine (Sort32 on groups of 32, then four-queue MrgSort rounds). Ascending order
  comes from a descending sort of the keys with their sign bit flipped (an int32 Adds of
  INT32_MIN: the float view of x becomes -x exactly, NaN bit patterns included). The
  positions are CreateVecIndex values. A lone chunk is extracted and written straight to
  the outputs; otherwise each sorted run of (score, index) structures goes to a workspace.
* **Phase 2** (after SyncAll): levels of four-way merges, each group of four runs merged by
  one core in a streaming loop: load a window of ``mergeWindow`` structures per run,
  MrgSort with exhausted suspension, GetMrgSortResult, write what was merged, reload. The
  last level Extracts, flips the sign bit back and writes the sorted keys and positions.

The order is ascending by the float view of the keys, **stable** (equal keys keep their
original order), NaN bit patterns last (see npusim/ascendc/sort.py). For valid indices
(0 <= x < 2139095040) that is ascending integer order. Negative or NaN-pattern keys land at
the ends (and INT32_MIN, whose float view is -0.0, among the zeros): a consumer checks every
index it uses, with :func:`check_index`.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np

from npusim.ascendc import (Adds, DataCopyExtParams, DataCopyPad, DataCopyPadExtParams,
                            Duplicate, GetBlockIdx, GetBlockNum, GetTPipePtr, GlobalTensor,
                            HardEvent, SetFlag, SyncAll, TBuf, TPipe, TPosition, WaitFlag,
                            float32, int32_t, uint32_t)
from npusim.ascendc.sort import (CreateVecIndex, Extract, GetMrgSortResult, MrgSort,
                                 MrgSortSrcList, Sort, STRUCT_BYTES)
from npusim.errors import GmAccessError

#: Keys sorted in UB per chunk (a multiple of 32) [R].
CHUNK_LENGTH = 4096
#: Structures per run loaded for one streaming MrgSort step (at most 4095) [R].
MERGE_WINDOW = 1024
#: int32 whose addition flips the sign bit (wrapping add).
SIGN_FLIP = -(1 << 31)
#: Keys of the padding slots of a partial group of 32: a NaN bit pattern, which sorts
#: after every real key (ties with real NaN keys go by position: pads come last).
PAD_KEY = 0x7FC00000
#: Highest key count the float-view sort is used for (INT32_INF, operators.md §2).
INT32_INF = 2139095040


class IndexOutOfRangeError(GmAccessError):
    """An index outside ``[0, bound)``: on hardware the kernel would write outside its
    output (EmbeddingDenseGradV2 has no bounds check, docs/reference/operators.md §2), which
    surfaces as an AI core exception (ACL_ERROR_RT_AICORE_EXCEPTION, 507015) or silently
    corrupts memory; the simulator stops the kernel before that write."""


def check_index(value: int, position: int, bound: int, what: str, instruction: str) -> None:
    """Raise :class:`IndexOutOfRangeError` unless ``0 <= value < bound``.

    ``value`` is the int32 index (negative values are negative), ``position`` its place in
    the flattened indices, ``what`` the bound's name (e.g. "numWeights").
    """
    if not 0 <= int(value) < int(bound):
        raise IndexOutOfRangeError(instruction, f"indices[{int(position)}] = {int(value)} is "
                                   f"outside [0, {what} = {int(bound)}): the kernel would "
                                   "write outside its output (indices must lie in "
                                   f"[0, {what} - 1], docs/reference/api.md §3)", pipe="PIPE_S",
                                   line=_kernel_line())


_SHARED_DIRS = (os.path.dirname(os.path.abspath(__file__)),
                os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
                + os.sep + "npusim")


def _kernel_line() -> str:
    """``file:line`` of the kernel statement: the innermost frame outside npusim and this
    shared package."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not any(path.startswith(d + os.sep) for d in _SHARED_DIRS):
            return f"{os.path.basename(path)}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


@dataclass(frozen=True)
class SortTilingData:
    """Tiling of the Sort kernel (all lengths in elements unless stated).

    totalLength: keys to sort. chunkLength: keys sorted in UB at once (multiple of 32).
    chunkNum: ceil(totalLength / chunkLength). mergeWindow: structures per run per merge
    step. levelNum: four-way merge levels (ceil(log4(chunkNum))). blockDim: cores.
    scratchOffset: bytes of one structure buffer in the workspace (512 B aligned).
    workspaceSize: bytes of user workspace: ``levelNum`` structure buffers, one for the
    runs of phase 1 and one per merge level but the last (0 for one chunk). Levels do
    not reuse a buffer another core wrote before a SyncAll, so every GM byte has one
    writer per launch.
    ubBytes: bytes of the kernel's one UB buffer.
    """

    totalLength: int
    chunkLength: int
    chunkNum: int
    mergeWindow: int
    levelNum: int
    blockDim: int
    scratchOffset: int
    workspaceSize: int
    ubBytes: int


def _align(n: int, a: int = 512) -> int:
    return -(-int(n) // a) * a


def sort_tiling(soc, total: int, *, chunk_length: int = CHUNK_LENGTH,
                merge_window: int = MERGE_WINDOW, core_num: int | None = None) -> SortTilingData:
    """Tiling of the Sort kernel for ``total`` int32 keys on ``soc``.

    Returns a TilingData whose ``blockDim`` is 0 when there is nothing to sort.
    """
    if chunk_length % 32 or chunk_length <= 0:
        raise ValueError(f"chunk_length must be a positive multiple of 32, got {chunk_length}")
    if not 32 <= merge_window <= 4095 or merge_window % 32:
        raise ValueError(f"merge_window must be a multiple of 32 in [32, 4064], got {merge_window}")
    core_num = soc.vector_block_num if core_num is None else int(core_num)
    total = int(total)
    chunks = -(-total // chunk_length) if total else 0
    levels = 0
    while 4 ** levels < chunks:
        levels += 1
    block_dim = min(core_num, chunks)
    scratch = _align(total * STRUCT_BYTES) if chunks > 1 else 0
    ub_bytes = max(24 * chunk_length, 96 * merge_window)
    return SortTilingData(total, chunk_length, chunks, merge_window, levels, block_dim,
                          scratch, levels * scratch, ub_bytes)


def _sync(event: HardEvent) -> None:
    """SetFlag + WaitFlag of ``event`` with a fresh eventID (the PIPE_X_Y helpers of ops-nn)."""
    eventId = GetTPipePtr().FetchEventID(event)
    SetFlag(event, eventId)
    WaitFlag(event, eventId)


def _params(nbytes: int) -> DataCopyExtParams:
    return DataCopyExtParams(1, int(nbytes), 0, 0, 0)


_NO_PAD = DataCopyPadExtParams(False, 0, 0, 0)


class KernelSortWithIndex:
    """One block of the Sort kernel (see the module docstring)."""

    def Init(self, keys, sortedKeys, posIdx, workspace, tiling: SortTilingData):
        self.t = t = tiling
        self.keysGm, self.sortedGm, self.posGm = (GlobalTensor(int32_t) for _ in range(3))
        self.keysGm.SetGlobalBuffer(keys, t.totalLength)
        self.sortedGm.SetGlobalBuffer(sortedKeys, t.totalLength)
        self.posGm.SetGlobalBuffer(posIdx, t.totalLength)
        self.scratchGm = []                     # one per level, 2 floats per structure
        for level in range(t.levelNum):
            g = GlobalTensor(float32)
            g.SetGlobalBuffer(workspace + level * t.scratchOffset, 2 * t.totalLength)
            self.scratchGm.append(g)
        self.pipe = TPipe()
        self.buf = TBuf(TPosition.VECCALC)
        self.pipe.InitBuffer(self.buf, t.ubBytes)
        # clear the buffer once: Extract works on whole groups of 32 structures, so it
        # reads the unused tail of the last group
        Duplicate(self.buf.Get(int32_t), 0, t.ubBytes // 4)

    def Process(self):
        t = self.t
        for c in range(GetBlockIdx(), t.chunkNum, GetBlockNum()):
            self.SortChunk(c)
        for level in range(1, t.levelNum + 1):
            SyncAll()
            run = t.chunkLength * 4 ** (level - 1)
            groups = -(-t.totalLength // (4 * run))
            final = level == t.levelNum
            for g in range(GetBlockIdx(), groups, GetBlockNum()):
                self.MergeGroup(g, run, level - 1, final)

    # -- phase 1 -------------------------------------------------------------------------
    def SortChunk(self, c: int):
        t = self.t
        C = t.chunkLength
        start = c * C
        L = min(C, t.totalLength - start)
        Lp = -(-L // 32) * 32
        keys = self.buf.GetWithOffset(C, 0, int32_t)
        index = self.buf.GetWithOffset(C, 4 * C, uint32_t)
        sorted_ = self.buf.GetWithOffset(2 * C, 8 * C, float32)
        tmp = self.buf.GetWithOffset(2 * C, 16 * C, float32)
        Duplicate(keys, PAD_KEY, Lp)                    # pad slots: NaN pattern, sorts last
        _sync(HardEvent.V_MTE2)
        # pad the row to 32 B with PAD_KEY: without padding, DataCopyPad would fill the rest
        # of its last 32 B block with the first key (the "dummy", DataCopyPad_GMToUB.md)
        DataCopyPad(keys, self.keysGm[start], _params(4 * L),
                    DataCopyPadExtParams(True, 0, -L % 8, PAD_KEY))
        _sync(HardEvent.MTE2_V)
        Adds(keys, keys, SIGN_FLIP, Lp)                 # float view x -> -x: ascending order
        CreateVecIndex(index.ReinterpretCast(int32_t), start, Lp)
        Sort(sorted_, keys.ReinterpretCast(float32), index, tmp, Lp // 32, True)
        if t.chunkNum == 1:
            self.WriteResult(sorted_, start, L)
        else:
            _sync(HardEvent.V_MTE3)
            DataCopyPad(self.scratchGm[0][2 * start], sorted_, _params(STRUCT_BYTES * L))
            _sync(HardEvent.MTE3_V)

    # -- phase 2 -------------------------------------------------------------------------
    def MergeGroup(self, g: int, run: int, src: int, final: bool):
        t = self.t
        W = t.mergeWindow
        base = g * 4 * run
        starts = [base + q * run for q in range(4) if base + q * run < t.totalLength]
        lens = [min(run, t.totalLength - s) for s in starts]
        k = len(starts)
        windows = [self.buf.GetWithOffset(2 * W, q * STRUCT_BYTES * W, float32) for q in range(4)]
        merged = self.buf.GetWithOffset(8 * W, 32 * W, float32)
        consumed = [0] * k
        outOff = base
        while True:
            active = [q for q in range(k) if consumed[q] < lens[q]]
            if not active:
                break
            cnt = {q: min(W, lens[q] - consumed[q]) for q in active}
            for q in active:
                DataCopyPad(windows[q], self.scratchGm[src][2 * (starts[q] + consumed[q])],
                            _params(STRUCT_BYTES * cnt[q]), _NO_PAD)
            _sync(HardEvent.MTE2_V)
            if len(active) == 1:
                q = active[0]
                taken, res = {q: cnt[q]}, windows[q]
            else:
                exhausted = any(cnt[q] < lens[q] - consumed[q] for q in active)
                counts = [cnt[q] for q in active] + [0] * (4 - len(active))
                sortedNum = [0, 0, 0, 0]
                lst = MrgSortSrcList(*[windows[q] for q in active])
                MrgSort(merged, lst, counts, sortedNum, (1 << len(active)) - 1, 1, exhausted)
                if exhausted:
                    _sync(HardEvent.V_S)
                    got = GetMrgSortResult()
                else:
                    got = counts
                taken = {q: int(got[i]) for i, q in enumerate(active)}
                res = merged
            nOut = sum(taken.values())
            if final:
                self.WriteResult(res, outOff, nOut)
            else:
                _sync(HardEvent.V_MTE3)
                _sync(HardEvent.MTE2_MTE3)
                DataCopyPad(self.scratchGm[src + 1][2 * outOff], res, _params(STRUCT_BYTES * nOut))
                _sync(HardEvent.MTE3_MTE2)
                _sync(HardEvent.MTE3_V)
            for q, n in taken.items():
                consumed[q] += n
            outOff += nOut

    def WriteResult(self, structs, outOff: int, n: int):
        """Extract ``n`` structures, flip the sign bit back, write keys and positions.

        The extraction buffers are the Sort tmp area for a lone chunk, and the area after
        the merge windows and the merged queue otherwise.
        """
        C, W = self.t.chunkLength, self.t.mergeWindow
        if self.t.chunkNum == 1:
            values = self.buf.GetWithOffset(C, 16 * C, float32)
            index = self.buf.GetWithOffset(C, 20 * C, uint32_t)
        else:
            values = self.buf.GetWithOffset(4 * W, 64 * W, float32)
            index = self.buf.GetWithOffset(4 * W, 80 * W, uint32_t)
        Extract(values, index, structs, -(-n // 32))
        keys = values.ReinterpretCast(int32_t)
        Adds(keys, keys, SIGN_FLIP, n)
        _sync(HardEvent.V_MTE3)
        DataCopyPad(self.sortedGm[outOff], keys, _params(4 * n))
        DataCopyPad(self.posGm[outOff], index.ReinterpretCast(int32_t), _params(4 * n))
        _sync(HardEvent.MTE3_V)
        _sync(HardEvent.MTE3_MTE2)


def sort_with_index(keys, sortedKeys, posIdx, workspace, tiling: SortTilingData):
    """Kernel entry of Sort: ``tiling.totalLength`` int32 keys at ``keys`` -> ascending keys
    at ``sortedKeys`` and their original positions (int32) at ``posIdx``.

    Launch with ``blockDim = tiling.blockDim`` and ``sync_all = tiling.chunkNum > 1``; the
    workspace holds ``tiling.workspaceSize`` bytes.
    """
    op = KernelSortWithIndex()
    op.Init(keys, sortedKeys, posIdx, workspace, tiling)
    op.Process()


def sorted_order_golden(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Host reference of the kernel's order: (sorted keys, positions), stable, ascending by
    the float view of the int32 keys with NaN patterns last."""
    keys = np.ascontiguousarray(keys, dtype=np.int32)
    f = keys.view(np.float32)
    pos = np.argsort(f, kind="stable").astype(np.int32)
    return keys[pos], pos


__all__ = ["IndexOutOfRangeError", "check_index", "SortTilingData", "sort_tiling",
           "sort_with_index", "KernelSortWithIndex", "sorted_order_golden", "CHUNK_LENGTH",
           "MERGE_WINDOW", "INT32_INF"]
