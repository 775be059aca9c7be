"""Device code of MatMulV3 / BatchMatMulV3: a cube-only (AIC_ONLY) basic-block matmul
written with the basic cube instructions (not the high-level Matmul API).

Per base block of C (``baseM x baseN``, :mod:`npusim.kernels.matmul.tiling`) the data path is
(docs/tutorial.md §12; docs/reference/hardware.md §2.1 pipe assignment)::

    GM --DataCopy(Nd2NzParams), MTE2--> L1 (A1/B1: NZ chunks of stepK*baseK, 2 buffers)
       --LoadData / LoadDataWithTranspose, MTE1--> L0A (ZZ) / L0B (ZN) (baseK steps, 2 buffers)
       --Mmad, M--> L0C (CO1, float; the first step starts at 0, the others accumulate)
       --Fixpipe, FIX--> GM (NZ -> ND; float -> half/bf16 (F322F16 / F322BF16), or kept)

The queues' EnQue/DeQue and FreeTensor/AllocTensor are the MTE2 -> MTE1 -> M -> FIX
hand-offs, so the next L1 chunk is fetched while this one is computed and the next L0
step loaded while this one is multiplied (double buffering; the replay runs each pipe on
its own and only the hand-offs order them).

Layouts, by dtype and transposition (fractal: 16 rows of 32 B, ``c0 = 32 / sizeof(T)``
columns; Mmad.md, Load2D.md, LoadDataWithTranspose page; the L1 layouts are those of
``DataCopy`` with ``Nd2NzParams``):

* A (``M x K``) into L0A's ZZ (fractal (mb, kb) at ``mb * K1 + kb``): from L1's NZ of A
  (fractal (mb, kb) at ``kb * M1 + mb``), one ``LoadData`` per k fractal column with
  ``dstGap = K1 - 1``. Transposed A (stored ``K x M``): from L1's NZ of A^T, half/bf16
  transpose each fractal on the way (``ifTranspose``); float has ``LoadDataWithTranspose``,
  whose 16 x 16 squares are two 16 x 8 fractals side by side, so A^T is copied to L1 in
  16-row slabs (``ndNum``) and Mmad counts A's k fractals in pairs (``kDirectionAlign``).
* B (``K x N``) into L0B's ZN (fractal (kb, nb) at ``kb * N1 + nb``, each stored column by
  column): from L1's NZ of B, half/bf16 one transposing ``LoadData`` per k fractal row;
  float ``LoadDataWithTranspose`` per 16-row slab (the slab layout again). Transposed B
  (stored ``N x K``): L1's NZ of B^T is already ZN, one ``LoadData`` per step.

A block of one row is multiplied with ``m = 16`` and its fractal's other rows filled
(:meth:`KernelMatmul.FillOneRow`): ``m = 1`` would switch the cube to GEMV, which reads A
as a plain row (Mmad.md). GM rows longer than ``Nd2NzParams.srcDValue`` allows (65535
elements) are copied row by row, as the Matmul API's ``intrinsicsCheck`` does (TCubeTiling
page: Ka > 65535).
"""
from __future__ import annotations

import numpy as np

from npusim.ascendc import (CFG_ROW_MAJOR, DataCopy, Fixpipe, FixpipeParamsV220,
                            GetBlockIdx, GlobalTensor, LoadData, LoadData2DParams,
                            LoadData2dTransposeParams, LoadDataWithTranspose, Mmad, MmadParams,
                            Nd2NzParams, QuantMode_t, TPipe, TPosition, TQue, bfloat16_t,
                            float32, half)

BLOCK_CUBE = 16
#: Nd2NzParams.srcDValue / srcNdMatrixStride / dstNzMatrixStride upper bound (elements)
MAX_ND_STRIDE = 65535
_QUANT = {np.dtype(half): QuantMode_t.F322F16, np.dtype(bfloat16_t): QuantMode_t.F322BF16,
          np.dtype(float32): QuantMode_t.NoQuant}


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _nd2nz(dst, src, rows: int, cols: int, ld: int, dst_rows: int, c0: int) -> None:
    """``rows x cols`` of an ND matrix (``ld`` elements per row) into NZ at ``dst``, with
    ``dst_rows`` rows per 32 B column block; row by row when ``ld`` exceeds srcDValue."""
    if ld <= MAX_ND_STRIDE:
        DataCopy(dst, src, Nd2NzParams(1, rows, cols, 0, ld, dst_rows, 1, 0))
        return
    for j in range(rows):
        DataCopy(dst[j * c0], src[j * ld], Nd2NzParams(1, 1, cols, 0, cols, dst_rows, 1, 0))


def _nd2nz_slabs(dst, src, rows: int, cols: int, ld: int, cols_al: int, c0: int) -> None:
    """``rows x cols`` into 16-row slabs, each its own NZ matrix of ``16 x cols_al``
    (column blocks of 16 rows, side by side): the layout LoadDataWithTranspose squares of
    32-bit types need. One DataCopy with ``ndNum`` when the strides fit."""
    full, tail = divmod(rows, BLOCK_CUBE)
    slab = BLOCK_CUBE * cols_al
    if full and BLOCK_CUBE * ld <= MAX_ND_STRIDE and slab <= MAX_ND_STRIDE:
        DataCopy(dst, src, Nd2NzParams(full, BLOCK_CUBE, cols, BLOCK_CUBE * ld, ld, BLOCK_CUBE,
                                       1, slab))
    else:
        for s in range(full):
            _nd2nz(dst[s * slab], src[s * BLOCK_CUBE * ld], BLOCK_CUBE, cols, ld, BLOCK_CUBE, c0)
    if tail:
        _nd2nz(dst[full * slab], src[full * BLOCK_CUBE * ld], tail, cols, ld, BLOCK_CUBE, c0)


class KernelMatmul:
    """One AIC: the base blocks ``tiling.tiles(GetBlockIdx())``, one after another."""

    def __init__(self):
        self.pipe = TPipe()
        self.inQueueA1 = TQue(TPosition.A1, 1)
        self.inQueueB1 = TQue(TPosition.B1, 1)
        self.inQueueA2 = TQue(TPosition.A2, 1)
        self.inQueueB2 = TQue(TPosition.B2, 1)
        self.outQueueCO1 = TQue(TPosition.CO1, 1)

    def Init(self, a, b, c, tiling):
        t = self.mm = tiling.matmulTiling
        self.tiling = tiling
        self.dt, self.outDt = np.dtype(tiling.aDtype), np.dtype(tiling.cDtype)
        self.transA, self.transB = tiling.transposeA, tiling.transposeB
        isz = self.dt.itemsize
        self.c0 = 32 // isz
        self.frac = BLOCK_CUBE * self.c0              # elements of one fractal
        self.isFloat = isz == 4
        self.kL1 = t.stepKa * t.baseK             # stepKa == stepKb: one chunk of A and B
        self.pipe.InitBuffer(self.inQueueA1, t.depthA1 // t.stepKa, t.baseM * self.kL1 * isz)
        self.pipe.InitBuffer(self.inQueueB1, t.depthB1 // t.stepKb, self.kL1 * t.baseN * isz)
        self.pipe.InitBuffer(self.inQueueA2, t.dbL0A, t.baseM * t.baseK * isz)
        self.pipe.InitBuffer(self.inQueueB2, t.dbL0B, t.baseK * t.baseN * isz)
        self.pipe.InitBuffer(self.outQueueCO1, t.dbL0C, t.baseM * t.baseN * 4)
        span_a = sum((d - 1) * s for d, s in zip(tiling.batchShape, tiling.aBatchStrides))
        span_b = sum((d - 1) * s for d, s in zip(tiling.batchShape, tiling.bBatchStrides))
        self.aGm, self.bGm, self.cGm = (GlobalTensor(self.dt), GlobalTensor(self.dt),
                                        GlobalTensor(self.outDt))
        self.aGm.SetGlobalBuffer(a, span_a + t.M * t.Ka)
        self.bGm.SetGlobalBuffer(b, span_b + t.Kb * t.N)
        self.cGm.SetGlobalBuffer(c, tiling.batchNum * t.M * t.N)
        # row strides (elements) of A and B as stored
        self.lda = t.M if self.transA else t.Ka
        self.ldb = t.Kb if self.transB else t.N

    def Process(self):
        """The base blocks ``GetBlockIdx() + i * usedCoreNum`` (``tiling.tiles``), written as
        the C++ loop ``for (tile = GetBlockIdx(); tile < totalTiles; tile += usedCoreNum)``:
        blocks with as many base blocks of the same shape run in lockstep
        (:mod:`npusim.lockstep`)."""
        tiling, t = self.tiling, self.mm
        tile = GetBlockIdx()
        while tile < tiling.totalTiles:
            batch, m0, n0 = tiling.tile_origin(tile)
            aOff, bOff = tiling.batch_offsets(batch)
            mAct, nAct = min(t.baseM, t.M - m0), min(t.baseN, t.N - n0)
            self.ComputeTile(aOff, bOff, batch * t.M * t.N, m0, n0, mAct, nAct)
            tile += t.usedCoreNum

    def ComputeTile(self, aOff, bOff, cOff, m0, n0, mAct, nAct):
        """One base block: K in L1 chunks, each in L0 steps, then Fixpipe."""
        t = self.mm
        c = self.outQueueCO1.AllocTensor(float32)
        first = True
        for k0 in range(0, t.Ka, self.kL1):
            kLen = min(self.kL1, t.Ka - k0)
            self.CopyInA(aOff, m0, k0, mAct, kLen)
            self.CopyInB(bOff, n0, k0, nAct, kLen)
            a1, b1 = self.inQueueA1.DeQue(self.dt), self.inQueueB1.DeQue(self.dt)
            for kk in range(0, kLen, t.baseK):
                kStep = min(t.baseK, kLen - kk)
                a2 = self.SplitA(a1, kk, kStep, mAct, kLen)
                b2 = self.SplitB(b1, kk, kStep, nAct, kLen)
                self.Compute(c, a2, b2, mAct, nAct, kStep, first)
                first = False
            self.inQueueA1.FreeTensor(a1)
            self.inQueueB1.FreeTensor(b1)
        self.outQueueCO1.EnQue(c)
        self.CopyOut(cOff, m0, n0, mAct, nAct)

    # -- GM -> L1 --------------------------------------------------------------------------
    def CopyInA(self, aOff, m0, k0, mAct, kLen):
        a1 = self.inQueueA1.AllocTensor(self.dt)
        mAl = _ceil_div(mAct, BLOCK_CUBE) * BLOCK_CUBE
        if not self.transA:                       # NZ of A: mAl rows per column block
            _nd2nz(a1, self.aGm[aOff + m0 * self.lda + k0], mAct, kLen, self.lda, mAl, self.c0)
        elif not self.isFloat:                    # NZ of A^T (k rows)
            _nd2nz(a1, self.aGm[aOff + k0 * self.lda + m0], kLen, mAct, self.lda,
                   _ceil_div(kLen, BLOCK_CUBE) * BLOCK_CUBE, self.c0)
        else:                                     # A^T in 16-row slabs (float squares)
            _nd2nz_slabs(a1, self.aGm[aOff + k0 * self.lda + m0], kLen, mAct, self.lda, mAl,
                         self.c0)
        if mAct == 1:
            self.FillOneRow(a1, aOff + m0 * (1 if self.transA else self.lda) + k0 * (
                self.lda if self.transA else 1), kLen)
        self.inQueueA1.EnQue(a1)

    def FillOneRow(self, a1, src, kLen):
        """A block of one row is multiplied with m = 16 (m = 1 switches the cube to GEMV,
        which reads A as a plain row; the library's kernels avoid it): the fractal's other
        15 rows must hold data. Non-transposed A: copies of the row (``ndNum`` 15 with
        ``srcNdMatrixStride`` 0); half/bf16 A^T: its zero-padded 32 B blocks already are;
        float A^T: the second 16 x 8 fractal of each square (never written) gets the zero-
        padded column."""
        if not self.transA:
            DataCopy(a1[self.c0], self.aGm[src],
                     Nd2NzParams(BLOCK_CUBE - 1, 1, kLen, 0, kLen, BLOCK_CUBE, 1, self.c0))
        elif self.isFloat:
            _nd2nz_slabs(a1[BLOCK_CUBE * self.c0], self.aGm[src], kLen, 1, self.lda,
                         BLOCK_CUBE, self.c0)

    def CopyInB(self, bOff, n0, k0, nAct, kLen):
        b1 = self.inQueueB1.AllocTensor(self.dt)
        nAl = _ceil_div(nAct, BLOCK_CUBE) * BLOCK_CUBE
        if self.transB:                           # NZ of B^T: already ZN
            _nd2nz(b1, self.bGm[bOff + n0 * self.ldb + k0], nAct, kLen, self.ldb, nAl, self.c0)
        elif not self.isFloat:                    # NZ of B (k rows)
            _nd2nz(b1, self.bGm[bOff + k0 * self.ldb + n0], kLen, nAct, self.ldb,
                   _ceil_div(kLen, BLOCK_CUBE) * BLOCK_CUBE, self.c0)
        else:                                     # B in 16-row slabs (float squares)
            _nd2nz_slabs(b1, self.bGm[bOff + k0 * self.ldb + n0], kLen, nAct, self.ldb, nAl,
                         self.c0)
        self.inQueueB1.EnQue(b1)

    # -- L1 -> L0 ----------------------------------------------------------------------------
    def SplitA(self, a1, kk, kStep, mAct, kLen):
        """A's step ``[kk, kk + kStep)`` of the chunk into L0A, ZZ."""
        a2 = self.inQueueA2.AllocTensor(self.dt)
        M1, frac, c0 = _ceil_div(mAct, BLOCK_CUBE), self.frac, self.c0
        if self.transA and self.isFloat:          # squares of two 16 x 8 fractals
            s0, K1a = kk // BLOCK_CUBE, 2 * _ceil_div(kStep, BLOCK_CUBE)
            for sr in range(K1a // 2):
                LoadDataWithTranspose(a2[2 * sr * frac], a1, LoadData2dTransposeParams(
                    (s0 + sr) * M1, M1, 1, K1a - 1, 0))
        else:
            kb0, K1 = kk // c0, _ceil_div(kStep, c0)
            KB1 = _ceil_div(kLen, BLOCK_CUBE)     # 16-row blocks of the A^T chunk
            for j in range(K1):
                if self.transA:                   # fractal (kb, mb) of A^T at mb*KB1 + kb
                    src, params = a1[(kb0 + j) * frac], LoadData2DParams(0, M1, KB1, 0, K1 - 1,
                                                                         True)
                else:                             # fractal (mb, kb) of A at kb*M1 + mb
                    src, params = a1[(kb0 + j) * M1 * frac], LoadData2DParams(0, M1, 1, 0,
                                                                              K1 - 1)
                LoadData(a2[j * frac], src, params)
        self.inQueueA2.EnQue(a2)
        return self.inQueueA2.DeQue(self.dt)

    def SplitB(self, b1, kk, kStep, nAct, kLen):
        """B's step ``[kk, kk + kStep)`` of the chunk into L0B, ZN."""
        b2 = self.inQueueB2.AllocTensor(self.dt)
        N1, frac, c0 = _ceil_div(nAct, BLOCK_CUBE), self.frac, self.c0
        if self.transB:                           # fractal (nb, kb) of B^T at kb*N1 + nb
            kb0, K1 = kk // c0, _ceil_div(kStep, c0)
            LoadData(b2, b1[kb0 * N1 * frac], LoadData2DParams(0, K1 * N1, 1, 0, 0))
        elif self.isFloat:                        # squares -> fractals (2s, t), (2s+1, t)
            s0 = kk // BLOCK_CUBE
            for sr in range(_ceil_div(kStep, BLOCK_CUBE)):
                LoadDataWithTranspose(b2[2 * sr * N1 * frac], b1, LoadData2dTransposeParams(
                    (s0 + sr) * N1, N1, 1, 0, N1 - 1))
        else:                                     # fractal (kb, nb) of B at nb*KB1 + kb
            kb0, K1, KB1 = kk // c0, _ceil_div(kStep, c0), _ceil_div(kLen, BLOCK_CUBE)
            for j in range(K1):
                LoadData(b2[j * N1 * frac], b1[(kb0 + j) * frac],
                         LoadData2DParams(0, N1, KB1, 0, 0, True))
        self.inQueueB2.EnQue(b2)
        return self.inQueueB2.DeQue(self.dt)

    # -- Mmad and Fixpipe --------------------------------------------------------------------
    def Compute(self, c, a2, b2, mAct, nAct, kStep, first):
        m = BLOCK_CUBE if mAct == 1 else mAct     # not GEMV (FillOneRow)
        Mmad(c, a2, b2, MmadParams(m, nAct, kStep, 0, False, first,
                                   kDirectionAlign=self.transA and self.isFloat))
        self.inQueueA2.FreeTensor(a2)
        self.inQueueB2.FreeTensor(b2)

    def CopyOut(self, cOff, m0, n0, mAct, nAct):
        c = self.outQueueCO1.DeQue(float32)
        mAl = _ceil_div(mAct, BLOCK_CUBE) * BLOCK_CUBE
        quant = _QUANT[self.outDt]
        Fixpipe(self.cGm[cOff + m0 * self.mm.N + n0], c,
                FixpipeParamsV220(nAct, mAct, mAl, self.mm.N, quant), config=CFG_ROW_MAJOR)
        self.outQueueCO1.FreeTensor(c)


def mat_mul_v3(a, b, c, workspace, tiling):
    """Kernel entry (``extern "C" __global__ __aicore__ void mat_mul_v3(GM_ADDR aGM, GM_ADDR
    bGM, GM_ADDR cGM, GM_ADDR workspaceGM, GM_ADDR tilingGM)``), launched AIC_ONLY.

    Args:
        a: device address of A (``batch x M x K`` or, transposed, ``batch x K x M``, at the
            tiling's batch strides) of ``tiling.aDtype``.
        b: device address of B (``K x N`` or, transposed, ``N x K``) likewise.
        c: device address of the contiguous ``batch x M x N`` output of ``tiling.cDtype``.
        workspace: the system workspace (unused by the kernel itself).
        tiling: :class:`npusim.kernels.matmul.tiling.MatmulTilingData`.
    """
    op = KernelMatmul()
    op.Init(a, b, c, tiling)
    op.Process()
