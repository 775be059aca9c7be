"""Matmul + LeakyRelu as one mixed kernel (``KERNEL_TYPE_MIX_AIC_1_2``).

out (M x N, float) = LeakyRelu(A (M x K, half) @ B (K x N, half) + bias (N, float), alpha)

Each block is one AIC and two AIVs, and they share nothing but GM:

* the AIC computes the block's ``singleCoreM`` rows of A @ B + bias with the high-level
  Matmul API, which it drives itself (``REGIST_MATMUL_OBJ`` with ``ASCENDC_CUBE_ONLY``,
  ``SetTensorA/B``, ``SetBias``, ``IterateAll``) into
  the user workspace, laid out like ``out``, then ``CrossCoreSetFlag`` in mode 2 on
  PIPE_FIX: the flag fires when the Fixpipe writes are done, and releases both AIVs of the
  block;
* each AIV ``CrossCoreWaitFlag``s, copies its half of those rows from the workspace into
  UB, applies ``LeakyRelu`` (float, one rounding) and copies them out.

The host side is ``MultiCoreMatmulTiling`` -> ``TCubeTiling``; ``SetSingleShape`` makes the
blocks split M only, so that each core's rows are one contiguous range of GM and each AIV
copies its half with one contiguous DataCopy (a column split, as in Ascend C's
matmul_leakyrelu sample, works too: the checker compares cross-core GM accesses row by
row, so column tiles whose rows interleave are not races). The workspace is the user's
``M * N * 4`` bytes plus the system workspace the library reserves
(``soc.lib_api_workspace_size``). Shapes here: M a multiple of ``2 * blocks`` (no tail
blocks, even halves), N a multiple of 8 (whole 32 B blocks of float).

Sources: hiascend "Mix融合算子 算子实现" (Ascendcopdevg atlas_ascendc_10_0050:
c = LeakyRelu(a * b + bias, alpha), half inputs, float bias and output); asc-devkit
examples/00_introduction/03_matmulleakyrelu README; CrossCoreSetFlag(ISASI).md,
LeakyRelu.md (atlasascendc_api_07_0060), GetUserWorkspace (atlasascendc_api_07_0165);
docs/tutorial.md §13 and §14.

Run it: ``python examples/matmul_leakyrelu.py`` prints the largest error against numpy and
the profile (the AIC's aic_* times and the AIVs' aiv_* times).
"""
from dataclasses import dataclass

import numpy as np

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import *  # noqa: F403

FLAG_C_READY = 0               # cross-core flag: the AIC's tile of C is in the workspace
ND = CubeFormat.ND


@dataclass
class LeakyTiling:
    """The host's TilingData: the cube tiling and the activation's slope."""
    cube: TCubeTiling
    alpha: float


def host_tiling(soc, M, N, K, blocks, alpha) -> LeakyTiling:
    """MultiCoreMatmulTiling for half x half + float bias -> float on ``blocks`` cores."""
    mm = MultiCoreMatmulTiling(soc)
    mm.SetDim(blocks)
    mm.SetAType(TPosition.GM, ND, half)
    mm.SetBType(TPosition.GM, ND, half)
    mm.SetCType(TPosition.GM, ND, float32)
    mm.SetBiasType(TPosition.GM, ND, float32)
    mm.SetOrgShape(M, N, K)
    mm.SetShape(M, N, K)
    mm.SetSingleShape(M // blocks, N, K)          # blocks take whole rows: M is split
    mm.SetBias(True)
    cube = TCubeTiling()
    if mm.GetTiling(cube) != 0:
        raise ValueError(f"no tiling for {M}x{N}x{K}: {mm.error}")
    if M % (2 * blocks) or N % 8 or cube.usedCoreNum != blocks:
        raise ValueError("this example takes no tail blocks: see its docstring")
    return LeakyTiling(cube, alpha)


class MatmulLeakyKernel:
    """One core of a block (the AIC or one of its AIVs); Process picks the half."""

    def Init(self, a, b, bias, c, workspace, tiling: LeakyTiling):
        self.t, self.alpha = tiling.cube, tiling.alpha
        t = self.t
        SetSysWorkspace(workspace)
        self.ws = GetUserWorkspace(workspace)         # past the library's system workspace
        # on an AIC GetBlockIdx() is the block; on an AIV it is block * 2 + sub-block
        block = GetBlockIdx() // GetTaskRation()
        self.offsetA, self.offsetC = block * t.singleCoreM * t.Ka, block * t.singleCoreM * t.N
        self.aGm, self.bGm = GlobalTensor(half), GlobalTensor(half)
        self.biasGm, self.cGm, self.wsGm = GlobalTensor(float32), GlobalTensor(float32), \
            GlobalTensor(float32)
        self.aGm.SetGlobalBuffer(a, t.M * t.Ka)
        self.bGm.SetGlobalBuffer(b, t.Kb * t.N)
        self.biasGm.SetGlobalBuffer(bias, t.N)
        self.cGm.SetGlobalBuffer(c, t.M * t.N)
        self.wsGm.SetGlobalBuffer(self.ws, t.M * t.N)
        self.pipe = TPipe()

    def Process(self):
        if ASCEND_IS_AIC():
            self.MatmulCompute()
        if ASCEND_IS_AIV():
            self.LeakyReluCompute()

    def MatmulCompute(self):
        """The AIC: A @ B + bias for the block's tile, into the workspace; then the flag."""
        mm = Matmul(MatmulType(TPosition.GM, ND, half), MatmulType(TPosition.GM, ND, half),
                    MatmulType(TPosition.GM, ND, float32), MatmulType(TPosition.GM, ND, float32))
        # ASCENDC_CUBE_ONLY: this AIC drives the API itself (without it, REGIST_MATMUL_OBJ
        # would make the AIC a server of its AIVs' calls: examples/matmul_leakyrelu_mix.py)
        REGIST_MATMUL_OBJ(self.pipe, GetSysWorkSpacePtr(), mm, self.t, ASCENDC_CUBE_ONLY=True)
        mm.SetTensorA(self.aGm[self.offsetA])
        mm.SetTensorB(self.bGm)
        mm.SetBias(self.biasGm)
        mm.IterateAll(self.wsGm[self.offsetC])
        mm.End()
        CrossCoreSetFlag(FLAG_C_READY, modeId=2, pipe=PIPE_FIX)   # after the last Fixpipe

    def LeakyReluCompute(self):
        """An AIV: half of the block's rows, workspace -> UB -> LeakyRelu -> out."""
        count = self.t.singleCoreM // GetTaskRation() * self.t.N
        offset = self.offsetC + GetSubBlockIdx() * count
        inQueue, outQueue = TQue(TPosition.VECIN, 1), TQue(TPosition.VECOUT, 1)
        self.pipe.InitBuffer(inQueue, 1, count * 4)
        self.pipe.InitBuffer(outQueue, 1, count * 4)
        CrossCoreWaitFlag(FLAG_C_READY)              # the AIC's Fixpipe has written C
        x = inQueue.AllocTensor(float32)
        DataCopy(x, self.wsGm[offset], count)
        inQueue.EnQue(x)
        x, y = inQueue.DeQue(float32), outQueue.AllocTensor(float32)
        LeakyRelu(y, x, self.alpha, count)
        outQueue.EnQue(y)
        inQueue.FreeTensor(x)
        y = outQueue.DeQue(float32)
        DataCopy(self.cGm[offset], y, count)
        outQueue.FreeTensor(y)


def matmul_leakyrelu_custom(a, b, bias, c, workspace, tiling):
    """The kernel entry, run by every core of every block (AIC and AIVs alike)."""
    op = MatmulLeakyKernel()
    op.Init(a, b, bias, c, workspace, tiling)
    op.Process()


def main(M=256, N=128, K=128, blocks=4, alpha=0.001, soc_name="Ascend910B1",
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
    workspace = gm.malloc(soc.lib_api_workspace_size + M * N * 4)
    profile = run_kernel(matmul_leakyrelu_custom, tiling.cube.usedCoreNum,
                         (a, b, bias, c, workspace, tiling), soc=soc, gm=gm,
                         kernel_type=KernelMetaType.KERNEL_TYPE_MIX_AIC_1_2,
                         keep_spans=keep_spans)
    c_host = np.frombuffer(gm.read(c, M * N * 4), np.float32).reshape(M, N)
    exact = a_host.astype(np.float64) @ b_host.astype(np.float64) + bias_host
    exact = np.where(exact < 0, exact * alpha, exact)
    err = np.abs(c_host - exact).max()
    print(f"LeakyRelu(A @ B + bias, {alpha}), {M}x{K} @ {K}x{N} on "
          f"{tiling.cube.usedCoreNum} blocks (1 AIC + 2 AIVs each)")
    print(f"largest error against float64: {err:.2e}")
    print(profile.summary())
    return c_host, err, profile


if __name__ == "__main__":
    main()
