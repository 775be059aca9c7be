"""A half matmul written the tuned way, with the basic instructions and static buffers.

C (M x N, half) = A (M x K, half) @ B (K x N, half) on cube cores
(``KERNEL_TYPE_AIC_ONLY``), as the A2 performance guides teach it, where
examples/matmul_custom.py uses TQue hand-offs and one LoadData per column of fractals:

* **Static L1 / L0 buffers at fixed addresses, ping-pong.** L1 holds two A chunks and two
  B chunks (``baseM x kL1`` and ``kL1 x baseN``), L0A / L0B two base slices each
  (``baseM x baseK``, ``baseK x baseN``), L0C two C tiles. Nothing is allocated: the
  tensors are C++'s ``LocalTensor<half>(TPosition::A1, addr, len)``.
* **SetFlag / WaitFlag with EVENT_IDs** keep the pipes apart, one eventID per buffer of a
  pair: MTE2 -> MTE1 (a chunk is in L1), MTE1 -> MTE2 (its L1 buffer is free again),
  MTE1 -> M (a slice is in L0A/L0B), M -> MTE1 (its L0 buffer is free again). The
  "free" flags are set once before the loop and waited once after it, so every wait in
  the loop has its set.
* **Large-packet Nd2Nz copies**: one DataCopy moves a whole L1 chunk (``kL1 / baseK``
  base slices of K) from GM, so MTE2 pays one latency per chunk, not per slice.
* **One LoadData3DParamsV2 per base slice**: A's ``baseM x baseK`` slice of the chunk
  into L0A (ZZ), B's ``baseK x baseN`` into L0B (ZN), one MTE1 instruction each
  (LoadData 卷积数据搬运 v2; asc-devkit mmad_load3dv2 sample).
* **unitFlag**: the k-loop's Mmads take unitFlag 2, the last one 3, and the Fixpipe 3
  (Mmad.md / Fixpipe.md; mmad_unitflag sample): Fixpipe moves C's fractals out as the
  last Mmad finishes them, without an M -> FIX flag, and the next Mmad on the same L0C
  tile waits for Fixpipe's hand-back by itself.

Block ``g`` computes the C tiles ``g, g + blockDim, ...`` (row-major over the
``M / baseM x N / baseN`` grid). Fixpipe converts the fp32 tile to half on the way out
(F322F16). Shapes: baseM, baseN multiples of 16, baseK of 16, kL1 of baseK, and M, N, K
multiples of baseM, baseN, kL1.

Beside it, :func:`matmul_api_mdl` computes the same C with the Matmul API (the MDL template
and a constant tiling: ``GetMatmulApiTiling`` of ``GetMMConfig(CONFIG_MDL,
MatmulShapeParams(...))``, ``REGIST_MATMUL_OBJ(..., None)``), which issues the same kinds of
instructions (one Load3Dv2 per slice, large-packet copies) but synchronises through queues
and without unitFlag.

Run it: ``python examples/matmul_tuned.py`` checks C against numpy and prints the
profile per pipe (aic_mte2 / aic_mte1 / aic_mac / aic_fixpipe times; the FIX time
includes the Fixpipes' waits for units, as msprof reports it under unitFlag).
``main(unitFlag=False)`` runs the flag-synchronised form (M_FIX before each Fixpipe, FIX_M
before an L0C tile is reused): the same bytes; at 512 x 1024 x 512 on 4 AICs 22.46 us
against unitFlag's 22.32 us (the kernel is MTE2-bound), aic_fixpipe_time 4.60 us against
19.32 us (the latter counts the waits).
"""
from dataclasses import dataclass

import numpy as np

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import *  # noqa: F403

PING_PONG = (EVENT_ID0, EVENT_ID1)     # the eventID of buffer 0 and of buffer 1 of a pair


@dataclass
class TunedTiling:
    """The host's TilingData."""
    M: int
    N: int
    K: int
    baseM: int = 128
    baseN: int = 128
    baseK: int = 64
    kL1: int = 256                 # K columns of A (rows of B) one Nd2Nz copy brings to L1
    unitFlag: bool = True          # False: the flag-synchronised form (M_FIX, FIX_M flags)

    def __post_init__(self):
        for name, value, of in (("baseM", self.baseM, 16), ("baseN", self.baseN, 16),
                                ("baseK", self.baseK, 16), ("kL1", self.kL1, self.baseK),
                                ("M", self.M, self.baseM), ("N", self.N, self.baseN),
                                ("K", self.K, self.kL1)):
            if value <= 0 or value % of:
                raise ValueError(f"{name} = {value} must be a positive multiple of {of}")

    @property
    def tiles(self) -> int:
        return (self.M // self.baseM) * (self.N // self.baseN)


class MatmulTuned:
    def Init(self, a, b, c, t: TunedTiling):
        self.t = t
        self.aGm, self.bGm, self.cGm = GlobalTensor(half), GlobalTensor(half), GlobalTensor(half)
        self.aGm.SetGlobalBuffer(a, t.M * t.K)
        self.bGm.SetGlobalBuffer(b, t.K * t.N)
        self.cGm.SetGlobalBuffer(c, t.M * t.N)
        aChunk, bChunk = t.baseM * t.kL1, t.kL1 * t.baseN        # elements
        # L1: A ping, A pong, B ping, B pong, at fixed byte addresses
        self.a1 = [LocalTensor[half](TPosition.A1, i * aChunk * 2, aChunk) for i in range(2)]
        self.b1 = [LocalTensor[half](TPosition.B1, (2 * aChunk + i * bChunk) * 2, bChunk)
                   for i in range(2)]
        aSlice, bSlice = t.baseM * t.baseK, t.baseK * t.baseN
        self.a2 = [LocalTensor[half](TPosition.A2, i * aSlice * 2, aSlice) for i in range(2)]
        self.b2 = [LocalTensor[half](TPosition.B2, i * bSlice * 2, bSlice) for i in range(2)]
        cTile = t.baseM * t.baseN
        self.c1 = [LocalTensor[float32](TPosition.CO1, i * cTile * 4, cTile) for i in range(2)]

    def Process(self):
        t = self.t
        # the L1 and L0 buffers start free: one "free" flag per buffer, waited before use
        for e in PING_PONG:
            SetFlag(HardEvent.MTE1_MTE2, e)
            SetFlag(HardEvent.M_MTE1, e)
            if not t.unitFlag:                  # without unitFlag, L0C tiles need flags too
                SetFlag(HardEvent.FIX_M, e)
        chunk = step = 0
        for n, tile in enumerate(range(GetBlockIdx(), t.tiles, GetBlockNum())):
            mIdx, nIdx = divmod(tile, t.N // t.baseN)
            c1 = self.c1[n % 2]
            kSteps = t.K // t.baseK
            if not t.unitFlag:
                WaitFlag(HardEvent.FIX_M, PING_PONG[n % 2])        # L0C tile free
            for kc in range(t.K // t.kL1):
                p1 = chunk % 2
                self.CopyIn(mIdx, nIdx, kc, p1)
                for ks in range(t.kL1 // t.baseK):
                    k = kc * (t.kL1 // t.baseK) + ks
                    self.Split(p1, ks, step % 2)
                    unitFlag = (3 if k == kSteps - 1 else 2) if t.unitFlag else 0
                    self.Compute(c1, step % 2, k == 0, unitFlag)
                    step += 1
                SetFlag(HardEvent.MTE1_MTE2, PING_PONG[p1])       # chunk p1 read: free
                chunk += 1
            self.CopyOut(c1, mIdx, nIdx, n % 2)
        for e in PING_PONG:                     # the last "free" flags
            WaitFlag(HardEvent.MTE1_MTE2, e)
            WaitFlag(HardEvent.M_MTE1, e)
            if not t.unitFlag:
                WaitFlag(HardEvent.FIX_M, e)

    def CopyIn(self, mIdx, nIdx, kc, p1):
        """One Nd2Nz DataCopy per operand per chunk: kL1 / baseK base slices at once."""
        t = self.t
        WaitFlag(HardEvent.MTE1_MTE2, PING_PONG[p1])             # buffer p1 is free
        DataCopy(self.a1[p1], self.aGm[mIdx * t.baseM * t.K + kc * t.kL1],
                 Nd2NzParams(1, t.baseM, t.kL1, 0, t.K, t.baseM, 1, 0))
        DataCopy(self.b1[p1], self.bGm[kc * t.kL1 * t.N + nIdx * t.baseN],
                 Nd2NzParams(1, t.kL1, t.baseN, 0, t.N, t.kL1, 1, 0))
        SetFlag(HardEvent.MTE2_MTE1, PING_PONG[p1])
        WaitFlag(HardEvent.MTE2_MTE1, PING_PONG[p1])

    def Split(self, p1, ks, p0):
        """Base slice ks of chunk p1 into L0 buffer p0: one Load3Dv2 for A, one for B. The
        chunk in L1 is a feature map of H = 1: A's baseM rows (W) of kL1 channels, B's kL1
        rows of baseN channels; img2col's M axis is their rows, its K axis their columns."""
        t = self.t
        WaitFlag(HardEvent.M_MTE1, PING_PONG[p0])                # L0 buffer p0 is free
        LoadData(self.a2[p0], self.a1[p1],
                 LoadData3DParamsV2(l1H=1, l1W=t.baseM, channelSize=t.kL1,
                                    kExtension=t.baseK, mExtension=t.baseM,
                                    kStartPt=ks * t.baseK, mStartPt=0))
        LoadData(self.b2[p0], self.b1[p1],
                 LoadData3DParamsV2(l1H=1, l1W=t.kL1, channelSize=t.baseN,
                                    kExtension=t.baseN, mExtension=t.baseK,
                                    kStartPt=0, mStartPt=ks * t.baseK, enTranspose=True))
        SetFlag(HardEvent.MTE1_M, PING_PONG[p0])

    def Compute(self, c1, p0, first, unitFlag):
        t = self.t
        WaitFlag(HardEvent.MTE1_M, PING_PONG[p0])
        Mmad(c1, self.a2[p0], self.b2[p0], MmadParams(t.baseM, t.baseN, t.baseK, unitFlag,
                                                      False, first))
        SetFlag(HardEvent.M_MTE1, PING_PONG[p0])                 # L0 buffer p0 read: free

    def CopyOut(self, c1, mIdx, nIdx, pc):
        """No M -> FIX flag: unitFlag 3 takes C's fractals as the last Mmad releases them
        (without unitFlag: M_FIX before, FIX_M after, the whole tile at once)."""
        t = self.t
        if not t.unitFlag:
            SetFlag(HardEvent.M_FIX, PING_PONG[pc])
            WaitFlag(HardEvent.M_FIX, PING_PONG[pc])
        Fixpipe(self.cGm[mIdx * t.baseM * t.N + nIdx * t.baseN], c1,
                FixpipeParamsV220(t.baseN, t.baseM, t.baseM, t.N, QuantMode_t.F322F16,
                                  unitFlag=3 if t.unitFlag else 0))
        if not t.unitFlag:
            SetFlag(HardEvent.FIX_M, PING_PONG[pc])


def matmul_tuned(a, b, c, tiling):
    op = MatmulTuned()
    op.Init(a, b, c, tiling)
    op.Process()


def _launch(kernel, M, N, K, blockDim, soc_name, tiling):
    """Random half A [M, K] and B [K, N] in a fresh GM, ``kernel`` launched on up to
    ``blockDim`` AICs with its TunedTiling; returns (tiling, blocks, A, B, C, profile)."""
    soc = get_soc(soc_name)
    t = TunedTiling(M, N, K, **tiling)
    gm = GlobalMemory(max(1 << 26, 4 * (M * K + K * N + M * N)))
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((M, K)).astype(np.float16)
    b_host = rng.standard_normal((K, N)).astype(np.float16)
    a, b, c = gm.malloc(a_host.nbytes), gm.malloc(b_host.nbytes), gm.malloc(M * N * 2)
    gm.write(a, a_host)
    gm.write(b, b_host)
    blockDim = min(blockDim, t.tiles)
    profile = run_kernel(kernel, blockDim, (a, b, c, t), soc=soc, gm=gm,
                         kernel_type=KernelMetaType.KERNEL_TYPE_AIC_ONLY)
    c_host = np.frombuffer(gm.read(c, M * N * 2), np.float16).reshape(M, N)
    return t, blockDim, a_host, b_host, c_host, profile


def _print_pipes(profile) -> None:
    for name, us in profile.pipe_time_us.items():
        print(f"  {name:>16}: {us:9.2f} us")
    print(profile.summary())


def main(M=256, N=256, K=512, blockDim=2, soc_name="Ascend910B1", **tiling):
    t, blockDim, a_host, b_host, c_host, profile = _launch(matmul_tuned, M, N, K, blockDim,
                                                           soc_name, tiling)
    exact = a_host.astype(np.float64) @ b_host.astype(np.float64)
    err = float(np.abs(c_host.astype(np.float64) - exact).max() / np.abs(exact).max())
    print(f"C = A @ B, {M}x{K} @ {K}x{N} half on {blockDim} AICs, base {t.baseM}x{t.baseN}x"
          f"{t.baseK}, L1 chunks of K {t.kL1}, {'unitFlag' if t.unitFlag else 'M_FIX flags'}")
    print(f"largest error against float64, relative to max |C|: {err:.2e}")
    _print_pipes(profile)
    return c_host, exact, err, profile


def matmul_api_mdl(a, b, c, t):
    """The same C with the Matmul API: the MDL template and a constant tiling (one C tile
    of baseM x baseN over the whole K per IterateAll, known when the kernel is built), so
    nothing is read from a TCubeTiling in GM. Block g takes the tiles g, g + blockDim, ...
    as the tuned kernel does, each a round of SetTensorA/B and IterateAll."""
    aType, bType = MatmulType(TPosition.GM, CubeFormat.ND, half), MatmulType(
        TPosition.GM, CubeFormat.ND, half)
    cType = MatmulType(TPosition.GM, CubeFormat.ND, half)
    cfg = GetMMConfig(MatmulConfigMode.CONFIG_MDL,
                      MatmulShapeParams(t.baseM, t.baseN, t.K, t.baseM, t.baseN, t.baseK))
    static = GetMatmulApiTiling(aType, bType, cType, None, cfg)
    pipe = TPipe()
    mm = Matmul(aType, bType, cType, None, static)
    REGIST_MATMUL_OBJ(pipe, GetSysWorkSpacePtr(), mm, None)    # (TCubeTiling*)nullptr
    mm.SetOrgShape(t.M, t.N, t.K)
    aGm, bGm, cGm = GlobalTensor(half), GlobalTensor(half), GlobalTensor(half)
    aGm.SetGlobalBuffer(a, t.M * t.K)
    bGm.SetGlobalBuffer(b, t.K * t.N)
    cGm.SetGlobalBuffer(c, t.M * t.N)
    tilesN = t.N // t.baseN
    for tile in range(GetBlockIdx(), t.tiles, GetBlockNum()):
        mIdx, nIdx = divmod(tile, tilesN)
        mm.SetTensorA(aGm[mIdx * t.baseM * t.K])
        mm.SetTensorB(bGm[nIdx * t.baseN])
        mm.IterateAll(cGm[mIdx * t.baseM * t.N + nIdx * t.baseN])
    mm.End()


def main_matmul_api(M=256, N=256, K=512, blockDim=2, soc_name="Ascend910B1", **tiling):
    """Run :func:`matmul_api_mdl` on the shapes of :func:`main` and print its profile."""
    _, blockDim, _, _, c_host, profile = _launch(matmul_api_mdl, M, N, K, blockDim, soc_name,
                                                 tiling)
    print(f"the Matmul API, MDL + constant tiling, the same C on {blockDim} AICs")
    _print_pipes(profile)
    return c_host, profile


if __name__ == "__main__":
    main()
    main_matmul_api()
