"""Matmul + LeakyRelu in the MIX form of the Matmul API (``KERNEL_TYPE_MIX_AIC_1_2``).

out (M x N, float) = LeakyRelu(A (M x K, half) @ B (K x N, half) + bias (N, float), alpha)

The kernel is written for the vector cores, as Ascend C's Mix operator sample is: every core
of a block (one AIC, two AIVs) runs the same function, and ``REGIST_MATMUL_OBJ`` splits them.
On the AIC it makes the Matmul object the block's server and returns; on each AIV it makes
the object a client, whose calls are messages the AIC executes on the cube. Each AIV then
owns one ``singleCoreM x singleCoreN`` tile of C (the host tiling counts AIVs:
``SetDim(2 * blocks)``) and loops over it a base block at a time:

* ``Iterate()``: the AIC computes the next ``baseM x baseN`` block of A @ B + bias in L0C;
* ``GetTensorC(reluOutLocal, false, true)``: the AIC's Fixpipe writes the block into the
  AIV's part of the system workspace and the AIV copies it into its UB (a VECCALC C);
* ``LeakyRelu`` on the tile, then a strided ``DataCopy`` to its place in ``out``.

From the first Iterate to its End the AIC serves one AIV, so the two AIVs of a block take
turns on their cube. The workspace is the library's system workspace only
(``soc.lib_api_workspace_size``): it holds each AIV's message queue and the GM copy of its UB.
Shapes here: M a multiple of the tiles' singleCoreM and N of singleCoreN (no tail tiles).

Sources: hiascend "Mix融合算子 算子实现" (Ascendcopdevg atlas_ascendc_10_0050: the
MatmulLeakyKernel with Iterate / GetTensorC(reluOutLocal, false, true) / LeakyRelu /
CopyOut); REGIST_MATMUL_OBJ (atlasascendc_api_07_0628), GetTensorC (atlasascendc_api_07_0639),
LeakyRelu (atlasascendc_api_07_0060); docs/tutorial.md §14.

Run it: ``python examples/matmul_leakyrelu_mix.py`` prints the largest error against numpy
and the profile.
"""
from dataclasses import dataclass

import numpy as np

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import *  # noqa: F403

ND = CubeFormat.ND


@dataclass
class LeakyTiling:
    """The host's TilingData: the cube tiling and the activation's slope."""
    cube: TCubeTiling
    alpha: float


def host_tiling(soc, M, N, K, blocks, alpha, base=(64, 128)) -> LeakyTiling:
    """MultiCoreMatmulTiling for half x half + float bias -> a float C in VECCALC, over the
    ``2 * blocks`` AIVs of ``blocks`` blocks; baseM x baseN = ``base``."""
    mm = MultiCoreMatmulTiling(soc)
    mm.SetDim(2 * blocks)                          # the MIX form: one part per AIV
    mm.SetAType(TPosition.GM, ND, half)
    mm.SetBType(TPosition.GM, ND, half)
    mm.SetCType(TPosition.VECCALC, ND, float32)    # C comes to the AIV's UB
    mm.SetBiasType(TPosition.GM, ND, float32)
    mm.SetOrgShape(M, N, K)
    mm.SetShape(M, N, K)
    mm.SetBias(True)
    mm.SetFixSplit(*base)
    cube = TCubeTiling()
    if mm.GetTiling(cube) != 0:
        raise ValueError(f"no tiling for {M}x{N}x{K}: {mm.error}")
    if (cube.usedCoreNum != 2 * blocks or M % cube.singleCoreM or N % cube.singleCoreN
            or cube.singleCoreM % cube.baseM or cube.singleCoreN % cube.baseN):
        raise ValueError("this example takes whole tiles and base blocks: see its docstring")
    return LeakyTiling(cube, alpha)


class MatmulLeakyKernel:
    """One AIV's tile: the Matmul client, its output queue and its offsets."""

    def __init__(self):
        self.matmulObj = Matmul(MatmulType(TPosition.GM, ND, half),
                                MatmulType(TPosition.GM, ND, half),
                                MatmulType(TPosition.VECCALC, ND, float32),
                                MatmulType(TPosition.GM, ND, float32))
        self.reluOutQueue = TQue(TPosition.VECOUT, 1)

    def Init(self, a, b, bias, c, tiling: LeakyTiling, pipe):
        self.t, self.alpha = tiling.cube, tiling.alpha
        t = self.t
        mBlocks = t.M // t.singleCoreM
        mIdx, nIdx = GetBlockIdx() % mBlocks, GetBlockIdx() // mBlocks   # this AIV's tile
        self.aGm, self.bGm = GlobalTensor(half), GlobalTensor(half)
        self.biasGm, self.cGm = GlobalTensor(float32), GlobalTensor(float32)
        self.aGm.SetGlobalBuffer(a + mIdx * t.singleCoreM * t.Ka * 2, t.singleCoreM * t.Ka)
        self.bGm.SetGlobalBuffer(b + nIdx * t.singleCoreN * 2, t.Kb * t.N)
        self.biasGm.SetGlobalBuffer(bias + nIdx * t.singleCoreN * 4, t.singleCoreN)
        self.cGm.SetGlobalBuffer(c + (mIdx * t.singleCoreM * t.N + nIdx * t.singleCoreN) * 4,
                                 t.singleCoreM * t.N)
        pipe.InitBuffer(self.reluOutQueue, 1, t.baseM * t.baseN * 4)

    def Process(self):
        self.matmulObj.SetTensorA(self.aGm)
        self.matmulObj.SetTensorB(self.bGm)
        self.matmulObj.SetBias(self.biasGm)
        count = 0
        while self.matmulObj.Iterate():
            self.MatmulCompute()
            self.LeakyReluCompute()
            self.CopyOut(count)
            count += 1
        self.matmulObj.End()

    def MatmulCompute(self):
        """The AIC's block into the UB: a dense baseM x baseN tile (enSequentialWrite)."""
        self.reluOutLocal = self.reluOutQueue.AllocTensor(float32)
        self.matmulObj.GetTensorC(self.reluOutLocal, False, True)

    def LeakyReluCompute(self):
        LeakyRelu(self.reluOutLocal, self.reluOutLocal, self.alpha, self.t.baseM * self.t.baseN)
        self.reluOutQueue.EnQue(self.reluOutLocal)

    def CopyOut(self, count: int):
        """Block ``count`` of the M-first walk, baseM rows of baseN, to its place in out."""
        t = self.t
        roundM = t.singleCoreM // t.baseM
        startOffset = count % roundM * t.baseM * t.N + count // roundM * t.baseN
        reluOutLocal = self.reluOutQueue.DeQue(float32)
        DataCopy(self.cGm[startOffset], reluOutLocal,
                 DataCopyParams(t.baseM, t.baseN * 4 // 32, 0, (t.N - t.baseN) * 4 // 32))
        self.reluOutQueue.FreeTensor(reluOutLocal)


def matmul_leakyrelu_custom(a, b, bias, c, workspace, tiling):
    """The kernel entry, run by every core of every block."""
    SetSysWorkspace(workspace)
    op = MatmulLeakyKernel()
    pipe = TPipe()
    # the AIC serves its AIVs from here and returns; the AIVs go on as clients
    REGIST_MATMUL_OBJ(pipe, GetSysWorkSpacePtr(), op.matmulObj, tiling.cube)
    op.Init(a, b, bias, c, tiling, pipe)
    op.Process()


def main(M=256, N=256, K=128, blocks=2, alpha=0.001, soc_name="Ascend910B1",
         keep_spans=False):
    soc = get_soc(soc_name)
    gm = GlobalMemory(soc.memory_size)
    tiling = host_tiling(soc, M, N, K, blocks, alpha)
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((M, K)).astype(np.float16)
    b_host = rng.standard_normal((K, N)).astype(np.float16)
    bias_host = rng.standard_normal(N).astype(np.float32)
    a, b, bias = (gm.malloc(x.nbytes) for x in (a_host, b_host, bias_host))
    for addr, x in ((a, a_host), (b, b_host), (bias, bias_host)):
        gm.write(addr, x)
    c = gm.malloc(M * N * 4)
    workspace = gm.malloc(soc.lib_api_workspace_size)
    profile = run_kernel(matmul_leakyrelu_custom, tiling.cube.usedCoreNum // 2,
                         (a, b, bias, c, workspace, tiling), soc=soc, gm=gm,
                         kernel_type=KernelMetaType.KERNEL_TYPE_MIX_AIC_1_2,
                         keep_spans=keep_spans)
    c_host = np.frombuffer(gm.read(c, M * N * 4), np.float32).reshape(M, N)
    exact = a_host.astype(np.float64) @ b_host.astype(np.float64) + bias_host
    exact = np.where(exact < 0, exact * alpha, exact)
    err = np.abs(c_host - exact).max()
    print(f"LeakyRelu(A @ B + bias, {alpha}), {M}x{K} @ {K}x{N}: {tiling.cube.usedCoreNum} "
          f"AIVs on {tiling.cube.usedCoreNum // 2} blocks call the Matmul API, their AICs "
          "compute")
    print(f"largest error against float64: {err:.2e}")
    print(profile.summary())
    return c_host, err, profile


if __name__ == "__main__":
    main()
