"""A MatmulCustom-style cube kernel written with the basic instructions.

C (M x N, float) = A (M x K, half) @ B (K x N, half) on ``mBlocks * nBlocks`` cube cores
(``KERNEL_TYPE_AIC_ONLY``): block g takes the ``singleM x singleN`` tile of C at row block
``g // nBlocks`` and column block ``g % nBlocks``, and walks K in steps of ``baseK``:

    GM --DataCopy(Nd2NzParams), MTE2--> A1/B1 (L1, NZ) --LoadData, MTE1--> A2 (L0A, ZZ) /
    B2 (L0B, ZN) --Mmad, M--> CO1 (L0C, NZ float, accumulated over K) --Fixpipe, FIX--> GM

The A1/B1 and A2/B2 queues hold two buffers each (double buffering): while Mmad multiplies
step k, MTE2 already fetches step k + 1 and MTE1 splits it, and the queue hand-offs are the
flags that keep them apart. The first step starts L0C at zero (``cmatrixInitVal=True``);
the others add onto it (``cmatrixInitVal=False, cmatrixSource=False``); one Fixpipe per
block moves the fp32 result NZ -> ND into C.

Shapes: singleM, singleN and baseK multiples of 16 (no partial fractals: the tail cases are
tests/test_cube_matmul.py's), M = mBlocks * singleM, N = nBlocks * singleN, K a multiple of
baseK. Numerics: products accumulated in fp32 in the cube's k order (npusim.ascendc Mmad).

Sources: the MatmulCustom structure (CopyIn / SplitA / SplitB / Compute / CopyOut) of the
Ascend C basic matmul samples; DataCopy 随路格式转换 (hiascend atlasascendc_api_07_0105,
Nd2NzParams), Load2D.md (LoadData2DParams), Mmad.md, Fixpipe.md (asc-devkit
docs/api/context); docs/tutorial.md §12 and §14.

Run it: ``python examples/matmul_custom.py`` prints the largest error against numpy and
the profile (aic_mte2 / aic_mte1 / aic_mac / aic_fixpipe times).
"""
from dataclasses import dataclass

import numpy as np

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import *  # noqa: F403

FRAC = 16 * 16                 # elements in one 16 x 16 half fractal (512 B)
BUFFER_NUM = 2                 # double buffering


@dataclass
class MatmulTiling:
    """The host's TilingData: the whole problem and one block's share of it."""
    M: int
    N: int
    K: int
    singleM: int
    singleN: int
    baseK: int

    def __post_init__(self):
        # the kernel has no tail blocks or partial fractals (the module docstring's shapes):
        # a tiling outside them would compute a wrong C, so the host refuses it
        for name, value, of in (("singleM", self.singleM, 16), ("singleN", self.singleN, 16),
                                ("baseK", self.baseK, 16), ("M", self.M, self.singleM),
                                ("N", self.N, self.singleN), ("K", self.K, self.baseK)):
            if value <= 0 or value % of:
                raise ValueError(f"{name} = {value} must be a positive multiple of {of}")

    @property
    def blockDim(self) -> int:
        return (self.M // self.singleM) * (self.N // self.singleN)


class MatmulCustom:
    """One block's tile of C; the methods are the stages of the pipeline."""

    def Init(self, a, b, c, tiling: MatmulTiling):
        self.t = t = tiling
        nBlocks = t.N // t.singleN
        mIdx, nIdx = divmod(GetBlockIdx(), nBlocks)
        self.aGm, self.bGm, self.cGm = GlobalTensor(half), GlobalTensor(half), GlobalTensor(float32)
        # A: this block's rows; B: its columns; C: its tile (row stride N)
        self.aGm.SetGlobalBuffer(a + mIdx * t.singleM * t.K * 2, t.singleM * t.K)
        self.bGm.SetGlobalBuffer(b + nIdx * t.singleN * 2, (t.K - 1) * t.N + t.singleN)
        self.cGm.SetGlobalBuffer(c + (mIdx * t.singleM * t.N + nIdx * t.singleN) * 4,
                                 (t.singleM - 1) * t.N + t.singleN)
        self.M1, self.N1, self.K1 = t.singleM // 16, t.singleN // 16, t.baseK // 16
        self.pipe = TPipe()
        self.inQueueA1, self.inQueueB1 = TQue(TPosition.A1, 2), TQue(TPosition.B1, 2)
        self.inQueueA2, self.inQueueB2 = TQue(TPosition.A2, 2), TQue(TPosition.B2, 2)
        self.outQueueCO1 = TQue(TPosition.CO1, 1)
        aBytes, bBytes = t.singleM * t.baseK * 2, t.baseK * t.singleN * 2
        self.pipe.InitBuffer(self.inQueueA1, BUFFER_NUM, aBytes)
        self.pipe.InitBuffer(self.inQueueB1, BUFFER_NUM, bBytes)
        self.pipe.InitBuffer(self.inQueueA2, BUFFER_NUM, aBytes)
        self.pipe.InitBuffer(self.inQueueB2, BUFFER_NUM, bBytes)
        self.pipe.InitBuffer(self.outQueueCO1, 1, t.singleM * t.singleN * 4)

    def Process(self):
        c = self.outQueueCO1.AllocTensor(float32)
        for kIdx in range(self.t.K // self.t.baseK):
            self.CopyIn(kIdx)
            self.SplitA()
            self.SplitB()
            self.Compute(c, kIdx)
        self.outQueueCO1.EnQue(c)
        self.CopyOut()

    def CopyIn(self, kIdx):
        t = self.t
        a1, b1 = self.inQueueA1.AllocTensor(half), self.inQueueB1.AllocTensor(half)
        # singleM rows of baseK from row stride K; NZ column blocks singleM rows tall
        DataCopy(a1, self.aGm[kIdx * t.baseK],
                 Nd2NzParams(1, t.singleM, t.baseK, 0, t.K, t.singleM, 1, 0))
        # baseK rows of singleN from row stride N; NZ column blocks baseK rows tall
        DataCopy(b1, self.bGm[kIdx * t.baseK * t.N],
                 Nd2NzParams(1, t.baseK, t.singleN, 0, t.N, t.baseK, 1, 0))
        self.inQueueA1.EnQue(a1)
        self.inQueueB1.EnQue(b1)

    def SplitA(self):
        """NZ -> ZZ: fractal (i, j) sits at j * M1 + i in L1 and at i * K1 + j in L0A, so
        each column of fractals is one LoadData whose dstGap skips the other columns."""
        a1, a2 = self.inQueueA1.DeQue(half), self.inQueueA2.AllocTensor(half)
        for j in range(self.K1):
            LoadData(a2[j * FRAC], a1[j * self.M1 * FRAC],
                     LoadData2DParams(0, self.M1, 1, 0, self.K1 - 1, False, 0))
        self.inQueueA2.EnQue(a2)
        self.inQueueA1.FreeTensor(a1)

    def SplitB(self):
        """NZ -> ZN: fractal (i, j) sits at j * K1 + i in L1 and, transposed, at
        i * N1 + j in L0B: one transposing LoadData per column of fractals."""
        b1, b2 = self.inQueueB1.DeQue(half), self.inQueueB2.AllocTensor(half)
        for j in range(self.N1):
            LoadData(b2[j * FRAC], b1[j * self.K1 * FRAC],
                     LoadData2DParams(0, self.K1, 1, 0, self.N1 - 1, True, 0))
        self.inQueueB2.EnQue(b2)
        self.inQueueB1.FreeTensor(b1)

    def Compute(self, c, kIdx):
        a2, b2 = self.inQueueA2.DeQue(half), self.inQueueB2.DeQue(half)
        # the first step starts C at 0, the others accumulate onto L0C
        Mmad(c, a2, b2, MmadParams(self.t.singleM, self.t.singleN, self.t.baseK, 0, False,
                                   kIdx == 0))
        self.inQueueA2.FreeTensor(a2)
        self.inQueueB2.FreeTensor(b2)

    def CopyOut(self):
        c = self.outQueueCO1.DeQue(float32)
        t = self.t
        Fixpipe(self.cGm, c, FixpipeParamsV220(t.singleN, t.singleM, t.singleM, t.N,
                                               QuantMode_t.NoQuant))
        self.outQueueCO1.FreeTensor(c)


def matmul_custom(a, b, c, tiling):
    """The kernel entry: GM addresses of A, B and C, then the TilingData."""
    op = MatmulCustom()
    op.Init(a, b, c, tiling)
    op.Process()


def main(M=128, N=128, K=256, singleM=64, singleN=64, baseK=64, soc_name="Ascend910B1",
         keep_spans=False):
    soc = get_soc(soc_name)
    gm = GlobalMemory(soc.memory_size)
    tiling = MatmulTiling(M, N, K, singleM, singleN, baseK)
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((M, K)).astype(np.float16)
    b_host = rng.standard_normal((K, N)).astype(np.float16)
    a, b, c = gm.malloc(a_host.nbytes), gm.malloc(b_host.nbytes), gm.malloc(M * N * 4)
    gm.write(a, a_host)
    gm.write(b, b_host)
    profile = run_kernel(matmul_custom, tiling.blockDim, (a, b, c, tiling), soc=soc, gm=gm,
                         kernel_type=KernelMetaType.KERNEL_TYPE_AIC_ONLY, keep_spans=keep_spans)
    c_host = np.frombuffer(gm.read(c, M * N * 4), np.float32).reshape(M, N)
    exact = a_host.astype(np.float64) @ b_host.astype(np.float64)
    err = np.abs(c_host - exact).max()
    print(f"C = A @ B, {M}x{K} @ {K}x{N} half -> float on {tiling.blockDim} AICs")
    print(f"largest error against float64: {err:.2e}")
    print(profile.summary())
    return c_host, err, profile


if __name__ == "__main__":
    main()
