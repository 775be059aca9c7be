"""A cube-only matmul kernel written in the Ascend C style — GM -> L1 (ND -> NZ) -> L0A /
L0B (LoadData, LoadDataWithTranspose) -> Mmad -> Fixpipe -> GM — against numpy, for
half, bfloat16, float and int8, with k not a multiple of the fractal and partial tiles;
the bias and accumulation forms; the checker on the cube's pipes (a missing MTE1 -> M
flag, uninitialised L0 reads); a wrong layout giving the wrong answer; and the timing of
MTE1, Mmad and Fixpipe by their formulas (docs/reference/hardware.md §2.1)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim import SyncError, get_soc
from npusim.ascendc import *  # noqa: F403
from npusim.ascendc.checker import UninitialisedError

from test_cube_layouts import BF16, aic_run, gm_tensor, rand, sync, zn

SOC = get_soc("Ascend910B1")


def ceil(a, b):
    return -(-a // b)


class MatmulKernel:
    """C (m x n) = A (m x k) @ B (k x n) [+ bias] on one AIC, one tile, as an Ascend C kernel
    would do it: queues A1/B1 (GM -> L1 in NZ), A2/B2 (L1 -> L0A ZZ / L0B ZN), CO1 (Mmad),
    then Fixpipe NZ -> ND to GM. ``dtype``: half, bfloat16_t, float32 or int8_t."""

    def __init__(self, m, k, n, dtype, out_dtype, bias=False):
        self.m, self.k, self.n, self.dt, self.out = m, k, n, np.dtype(dtype), np.dtype(out_dtype)
        self.acc = int32_t if self.dt == int8_t else float32
        self.k0 = 32 // self.dt.itemsize
        self.bias = bias
        self.n_mmad = ceil(n, 32) * 32 if self.dt == int8_t else n   # int8 B in pairs of 16
        self.M16, self.K16 = ceil(m, 16) * 16, ceil(k, 16) * 16
        self.N16 = ceil(self.n_mmad, 16) * 16
        self.Kal = ceil(k, 32) * 32 if self.dt == int8_t else ceil(k, self.k0) * self.k0

    def __call__(self, addr):
        self.Init(addr)
        self.CopyIn()
        self.SplitA()
        self.SplitB()
        self.Compute()
        self.CopyOut()

    def Init(self, addr):
        self.pipe = TPipe()
        isz = self.dt.itemsize
        self.qa1, self.qb1 = TQue(TPosition.A1, 1), TQue(TPosition.B1, 1)
        self.qa2, self.qb2 = TQue(TPosition.A2, 1), TQue(TPosition.B2, 1)
        self.qc1, self.qc2, self.qco1 = TQue(TPosition.C1, 1), TQue(TPosition.C2, 1), TQue(
            TPosition.CO1, 1)
        self.pipe.InitBuffer(self.qa1, 1, self.M16 * max(self.Kal, self.K16) * isz)
        self.pipe.InitBuffer(self.qb1, 1, max(self.Kal, self.K16) * self.N16 * 2 * isz)
        self.pipe.InitBuffer(self.qa2, 1, self.M16 * max(self.Kal, self.K16) * isz)
        self.pipe.InitBuffer(self.qb2, 1, max(self.Kal, self.K16) * self.N16 * isz)
        self.pipe.InitBuffer(self.qco1, 1, self.M16 * self.N16 * 4)
        if self.bias:
            self.pipe.InitBuffer(self.qc1, 1, self.N16 * 4)
            self.pipe.InitBuffer(self.qc2, 1, self.N16 * 4)
            self.biasGm = gm_tensor(self.acc, addr["bias"], self.n)
        self.aGm = gm_tensor(self.dt, addr["a"], self.m * self.k)
        self.bGm = gm_tensor(self.dt, addr["b"], self.k * self.n)
        self.cGm = gm_tensor(self.out, addr["c"], self.m * self.n)

    def CopyIn(self):
        m, k, n, dt = self.m, self.k, self.n, self.dt
        a1, b1 = self.qa1.AllocTensor(dt), self.qb1.AllocTensor(dt)
        DataCopy(a1, self.aGm, Nd2NzParams(1, m, k, 0, k, self.M16, 1, 0))
        if dt == float32:    # 16-row slabs: the two 16 x 8 fractals of a square side by side
            for s in range(ceil(k, 16)):
                rows = min(16, k - 16 * s)
                DataCopy(b1[s * 16 * self.N16], self.bGm[s * 16 * n],
                         Nd2NzParams(1, rows, n, 0, n, 16, 1, 0))
        else:                # column blocks of ceil(k) rows (aligned to a square for int8)
            DataCopy(b1, self.bGm, Nd2NzParams(1, k, n, 0, n, self.Kal if dt == int8_t
                                               else self.K16, 1, 0))
        self.qa1.EnQue(a1)
        self.qb1.EnQue(b1)
        if self.bias:
            c1 = self.qc1.AllocTensor(self.acc)
            DataCopy(c1, self.biasGm, Nd2NzParams(1, 1, n, 0, n, 1, 1, 0))
            self.qc1.EnQue(c1)

    def SplitA(self):
        """NZ -> ZZ: one LoadData per row of fractals."""
        a1, a2 = self.qa1.DeQue(self.dt), self.qa2.AllocTensor(self.dt)
        K1, M1, frac = ceil(self.k, self.k0), self.M16 // 16, 16 * self.k0
        for i in range(M1):
            LoadData(a2[i * K1 * frac], a1[i * frac], LoadData2DParams(0, K1, M1, 0, 0, False, 0))
        self.qa2.EnQue(a2)
        self.qa1.FreeTensor(a1)

    def SplitB(self):
        """NZ -> ZN: 16-bit fractals transposed one by one; int8 and float by squares."""
        b1, b2 = self.qb1.DeQue(self.dt), self.qb2.AllocTensor(self.dt)
        N1, frac = self.N16 // 16, 16 * self.k0
        if self.dt.itemsize == 2:
            K1 = self.K16 // 16
            for kb in range(K1):
                LoadData(b2[kb * N1 * frac], b1[kb * frac],
                         LoadData2DParams(0, N1, K1, 0, 0, True, 0))
        elif self.dt == int8_t:        # 32 x 32 squares -> fractals (q, 2j) and (q, 2j + 1)
            for q in range(self.Kal // 32):
                LoadDataWithTranspose(b2[q * N1 * frac], b1[q * 2 * frac],
                                      LoadData2dTransposeParams(0, N1 // 2, self.Kal // 32, 1, 0))
        else:                          # 16 x 16 squares -> fractals (2s, j) and (2s + 1, j)
            for s in range(ceil(self.k, 16)):
                LoadDataWithTranspose(b2[2 * s * N1 * frac], b1[s * 16 * self.N16],
                                      LoadData2dTransposeParams(0, N1, 1, 0, N1 - 1))
        self.qb2.EnQue(b2)
        self.qb1.FreeTensor(b1)
        if self.bias:
            c1, c2 = self.qc1.DeQue(self.acc), self.qc2.AllocTensor(self.acc)
            DataCopy(c2, c1, DataCopyParams(1, ceil(self.n * 4, 64), 0, 0))
            self.qc2.EnQue(c2)
            self.qc1.FreeTensor(c1)

    def Compute(self):
        a2, b2 = self.qa2.DeQue(self.dt), self.qb2.DeQue(self.dt)
        c = self.qco1.AllocTensor(self.acc)
        params = MmadParams(self.m, self.n_mmad, self.k)
        if self.bias:
            bias = self.qc2.DeQue(self.acc)
            Mmad(c, a2, b2, bias, params)
            self.qc2.FreeTensor(bias)
        else:
            Mmad(c, a2, b2, params)
        self.qco1.EnQue(c)
        self.qa2.FreeTensor(a2)
        self.qb2.FreeTensor(b2)

    def CopyOut(self):
        c = self.qco1.DeQue(self.acc)
        quant = {half: QuantMode_t.F322F16, BF16: QuantMode_t.F322BF16}.get(self.out,
                                                                          QuantMode_t.NoQuant)
        Fixpipe(self.cGm, c, FixpipeParamsV220(self.n, self.m, self.M16, self.n, quant))
        self.qco1.FreeTensor(c)


def cube_reference(a, b, k0, bias=None):
    """The cube's order, written from the module's stated rule: k in steps of k0, each
    step's products summed exactly and rounded once to fp32, added to the fp32 accumulator
    in k order (int8: exact int32)."""
    m, k = a.shape
    if a.dtype == np.int8:
        c = a.astype(np.int64) @ b.astype(np.int64)
        return (c + (0 if bias is None else bias)).astype(np.int32)
    acc = np.zeros((m, b.shape[1]), np.float32) if bias is None else np.tile(
        bias.astype(np.float32), (m, 1))
    for s in range(0, k, k0):
        part = a[:, s:s + k0].astype(np.float64) @ b[s:s + k0].astype(np.float64)
        acc = (acc + part.astype(np.float32)).astype(np.float32)
    return acc


def run_matmul(m, k, n, dtype, out_dtype, bias=None, seed=0, soc=SOC):
    rng = np.random.default_rng(seed)
    a, b = rand(rng, (m, k), dtype), rand(rng, (k, n), dtype)
    inputs = {"a": a, "b": b}
    if bias is not None:
        inputs["bias"] = bias
    kern = MatmulKernel(m, k, n, dtype, out_dtype, bias is not None)
    got, prof = aic_run(kern, inputs, {"c": (m * n, out_dtype)}, soc=soc, keep_spans=True)
    return a, b, got["c"].reshape(m, n), prof


SHAPES = [(30, 70, 40), (16, 16, 16), (17, 9, 3), (2, 33, 65), (48, 128, 32)]


@pytest.mark.parametrize("dtype", [half, BF16, float32, int8_t], ids=["half", "bf16", "float",
                                                                       "int8"])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_matmul_kernel_against_numpy(dtype, m, k, n):
    out = int32_t if dtype == int8_t else float32
    a, b, c, _ = run_matmul(m, k, n, dtype, out)
    k0 = 32 // np.dtype(dtype).itemsize
    np.testing.assert_array_equal(c, cube_reference(a, b, k0))        # the cube's exact order
    if dtype != int8_t:                                                # and close to the truth
        exact = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(c, exact, rtol=1e-5, atol=1e-4 * np.sqrt(k))


@settings(max_examples=25, deadline=None)
@given(m=st.integers(2, 48), k=st.integers(1, 80), n=st.integers(1, 48),
       dtype=st.sampled_from(["half", "float"]), seed=st.integers(0, 99))
def test_matmul_partial_tiles_and_one_rounding_at_fixpipe(m, k, n, dtype, seed):
    """Any m, k, n: the L0C result is fp32 in the cube's order; Fixpipe F322F16 rounds it
    once to half."""
    dtype = half if dtype == "half" else float32
    a, b, c, _ = run_matmul(m, k, n, dtype, half, seed=seed)
    want = cube_reference(a, b, 32 // np.dtype(dtype).itemsize).astype(np.float16)
    np.testing.assert_array_equal(c, want)


def test_matmul_with_bias_from_the_bias_table():
    for dtype, bias in ((half, np.linspace(-3, 3, 40).astype(np.float32)),
                        (int8_t, np.arange(-20, 20, dtype=np.int32) * 1000)):
        out = int32_t if dtype == int8_t else float32
        a, b, c, _ = run_matmul(30, 70, 40, dtype, out, bias=bias, seed=3)
        np.testing.assert_array_equal(c, cube_reference(a, b, 32 // np.dtype(dtype).itemsize,
                                                        bias))


def test_accumulate_in_l0c_and_gemv():
    """cmatrixInitVal False: C += A x B onto L0C (two k halves summed in L0C); m = 1: GEMV
    reads A as a plain ND row — the ZZ layout a larger m needs gives a wrong answer there."""
    k, n = 64, 32
    rng = np.random.default_rng(5)
    a, b = rand(rng, (2, k), half), rand(rng, (k, n), half)
    outs = {}

    def kernel(addr, a_key, m, halves):
        pipe = TPipe()
        a2, b2, co1 = TBuf(TPosition.A2), TBuf(TPosition.B2), TBuf(TPosition.CO1)
        pipe.InitBuffer(a2, 16 * k * 2)
        pipe.InitBuffer(b2, k * n * 2)
        pipe.InitBuffer(co1, 16 * n * 4)
        LoadData(a2.Get(half), gm_tensor(half, addr[a_key], 16 * k), LoadData2DParams(0, 4, 1))
        LoadData(b2.Get(half), gm_tensor(half, addr["b_zn"], k * n), LoadData2DParams(0, 8, 1))
        sync(HardEvent.MTE2_M)
        c = co1.Get(float32)
        step = k // halves
        for h in range(halves):       # k fractal rows h*step.. of A (ZZ) and B (ZN)
            Mmad(c, a2.Get(half)[h * 16 * step] if m > 1 else a2.Get(half)[h * step],
                 b2.Get(half)[h * step * n], MmadParams(m, n, step, 0, False, h == 0))
        sync(HardEvent.M_FIX)
        Fixpipe(gm_tensor(float32, addr["c"], m * n), c, FixpipeParamsV220(n, m, 16, n))

    def zz_rows(x):                   # ZZ with 16-row fractals, k split in halves: row blocks
        p = np.zeros((16, k), np.float16)
        p[:x.shape[0]] = x
        return p.reshape(16, k // 16, 16).transpose(1, 0, 2).reshape(-1)

    nd_row = np.zeros(16 * k, np.float16)
    nd_row[:k] = a[0]
    inputs = {"a_zz": zz_rows(a), "a_nd": nd_row, "b_zn": zn(b, 16)}
    for key, m, halves in (("a_zz", 2, 2), ("a_nd", 1, 1), ("a_zz", 1, 1)):
        got, _ = aic_run(lambda addr: kernel(addr, key, m, halves), inputs,
                         {"c": (m * n, np.float32)})
        outs[(key, m)] = got["c"].reshape(m, n)
    # accumulation: k halves in L0C, each half's steps in order, then the second half on top
    np.testing.assert_array_equal(outs[("a_zz", 2)], cube_reference(a, b, 16))
    np.testing.assert_array_equal(outs[("a_nd", 1)], cube_reference(a[:1], b, 16))
    assert not np.allclose(outs[("a_zz", 1)], outs[("a_nd", 1)])      # ZZ read as ND: wrong


def test_a_wrong_layout_gives_a_wrong_answer():
    """Loading L1's NZ straight into L0A (one LoadData of all fractals, no NZ -> ZZ split)
    leaves A's fractals column-major where Mmad reads them row-major: the hardware computes
    a different product, and so does the simulator."""
    class Contiguous(MatmulKernel):
        def SplitA(self):
            a1, a2 = self.qa1.DeQue(self.dt), self.qa2.AllocTensor(self.dt)
            LoadData(a2, a1, LoadData2DParams(0, self.M16 // 16 * ceil(self.k, 16), 1))
            self.qa2.EnQue(a2)
            self.qa1.FreeTensor(a1)

    rng = np.random.default_rng(1)
    a, b = rand(rng, (32, 48), half), rand(rng, (48, 16), half)
    got, _ = aic_run(Contiguous(32, 48, 16, half, float32), {"a": a, "b": b},
                     {"c": (32 * 16, np.float32)})
    c = got["c"].reshape(32, 16)
    assert not np.allclose(c, a.astype(np.float32) @ b.astype(np.float32), atol=1e-2)
    # what it computed: A's fractal (i, j) taken from NZ position i*K1 + j = (column block
    # (i*K1 + j) // M1, row block (i*K1 + j) % M1)
    frac = a.reshape(2, 16, 3, 16).transpose(2, 0, 1, 3).reshape(6, 16, 16)   # NZ order
    seen = frac.reshape(2, 3, 16, 16).transpose(0, 2, 1, 3).reshape(32, 48)
    np.testing.assert_array_equal(c, cube_reference(seen, b, 16))


# -- the checker on the cube's pipes -----------------------------------------------------------

def _static_mmad(flag: bool, write_l0a: bool = True):
    """LoadData into L0A/L0B (MTE1), then Mmad (M) with or without the MTE1 -> M flag."""
    def kernel(addr):
        a1 = LocalTensor.at(half, TPosition.A1, 0, 256)
        b1 = LocalTensor.at(half, TPosition.B1, 512, 256)
        a2 = LocalTensor.at(half, TPosition.A2, 0, 256)
        b2 = LocalTensor.at(half, TPosition.B2, 0, 256)
        c = LocalTensor.at(float32, TPosition.CO1, 0, 256)
        DataCopy(a1, gm_tensor(half, addr["x"], 256), 256)
        DataCopy(b1, gm_tensor(half, addr["x"], 256), 256)
        sync(HardEvent.MTE2_MTE1)
        if write_l0a:
            LoadData(a2, a1, LoadData2DParams(0, 1, 0))
        LoadData(b2, b1, LoadData2DParams(0, 1, 0, 0, 0, True))
        if flag:
            sync(HardEvent.MTE1_M)
        Mmad(c, a2, b2, MmadParams(16, 16, 16))
        sync(HardEvent.M_FIX)
        Fixpipe(gm_tensor(float32, addr["y"], 256), c, FixpipeParamsV220(16, 16, 16, 16))
    return kernel


def test_missing_mte1_to_m_flag_is_caught():
    x = {"x": np.ones(256, np.float16)}
    got, _ = aic_run(_static_mmad(True), x, {"y": (256, np.float32)})
    assert np.all(got["y"] == 16)
    with pytest.raises(SyncError, match="PIPE_M reads L0A .* that PIPE_MTE1 wrote") as err:
        aic_run(_static_mmad(False), x, {"y": (256, np.float32)})
    assert err.value.line.startswith("test_cube_matmul.py:")           # the Mmad line
    with pytest.raises(UninitialisedError, match="reads L0A bytes in"):
        aic_run(_static_mmad(True, write_l0a=False), x, {"y": (256, np.float32)})


def test_missing_m_to_fix_flag_and_queue_hand_offs():
    class NoFlag(MatmulKernel):
        def Compute(self):            # Mmad straight into a static CO1 tensor, no queue
            a2, b2 = self.qa2.DeQue(self.dt), self.qb2.DeQue(self.dt)
            self.c = LocalTensor.at(float32, TPosition.CO1, 65536, 1024)
            Mmad(self.c, a2, b2, MmadParams(self.m, self.n, self.k))
            self.qa2.FreeTensor(a2)
            self.qb2.FreeTensor(b2)

        def CopyOut(self):
            Fixpipe(self.cGm, self.c, FixpipeParamsV220(self.n, self.m, self.M16, self.n))

    rng = np.random.default_rng(2)
    inputs = {"a": rand(rng, (16, 32), half), "b": rand(rng, (32, 16), half)}
    with pytest.raises(SyncError, match="PIPE_FIX reads L0C .* that PIPE_M wrote"):
        aic_run(NoFlag(16, 32, 16, half, float32), inputs, {"c": (256, np.float32)})
    # the queued kernel needs no flag of its own: EnQue/DeQue of A1/B1, A2/B2 and CO1 are
    # the MTE2->MTE1, MTE1->M and M->FIX hand-offs
    _, prof = aic_run(MatmulKernel(16, 32, 16, half, float32), inputs, {"c": (256, np.float32)},
                      keep_spans=True)
    waits = [(Pipe(r[1]).name, r[5]) for r in prof.records[0] if r[0] == 4]
    assert ("PIPE_MTE1", "DeQue") in waits and ("PIPE_M", "DeQue") in waits
    assert ("PIPE_FIX", "DeQue") in waits


# -- timing ------------------------------------------------------------------------------------

def _span(prof, name):
    return [e - s for p, s, e, label, _ in prof.timing.spans[0] if label == name]


@pytest.mark.parametrize("dtype", [half, float32, int8_t], ids=["half", "float", "int8"])
def test_timing_of_mte1_mmad_and_fixpipe(dtype):
    """MTE1: head + bytes / (256 into L0A, 128 into L0B); Mmad: head + ceil(m/16) *
    ceil(n/16) * ceil(k/k0) * (k0 / k per cycle), the §2.1 MACs per cycle (half 16x16x16,
    float 16x16x4 with k0 = 8, int8 16x16x32); Fixpipe into L1: head + elements / 64."""
    m, k, n = 40, 96, 48
    k0 = 32 // np.dtype(dtype).itemsize
    M1, K1, N1 = ceil(m, 16), ceil(k, k0), ceil(n, 16)
    acc = int32_t if dtype == int8_t else float32
    quant = QuantMode_t.DEQF16 if dtype == int8_t else QuantMode_t.F322F16
    one = int(np.array([1.0], np.float32).view(np.uint32)[0])          # deqScalar 1.0

    def kernel(addr):
        pipe = TPipe()
        a1, a2, b2, co1, l1 = (TBuf(TPosition.A1), TBuf(TPosition.A2), TBuf(TPosition.B2),
                               TBuf(TPosition.CO1), TBuf(TPosition.B1))
        for buf, size in ((a1, 32768), (a2, 32768), (b2, 32768), (co1, 16384), (l1, 8192)):
            pipe.InitBuffer(buf, size)
        DataCopy(a1.Get(uint8_t), gm_tensor(uint8_t, addr["x"], 32768), 32768)
        sync(HardEvent.MTE2_MTE1)
        LoadData(a2.Get(dtype), a1.Get(dtype), LoadData2DParams(0, M1 * K1, 1))
        LoadData(b2.Get(dtype), a1.Get(dtype), LoadData2DParams(0, K1 * N1, 1))
        sync(HardEvent.MTE1_M)
        Mmad(co1.Get(acc), a2.Get(dtype), b2.Get(dtype), MmadParams(m, n, k))
        sync(HardEvent.M_FIX)
        Fixpipe(l1.Get(half), co1.Get(acc), FixpipeParamsV220(n, m, M1 * 16, M1 * 16, quant,
                                                              one), config=CFG_NZ)

    x = np.random.default_rng(0).integers(-2, 3, 32768).astype(np.int8)
    _, prof = aic_run(kernel, {"x": x}, {}, keep_spans=True)
    head = SOC.mte1_head_cycles
    rate = {half: 16, float32: 4, int8_t: 32}[dtype]
    assert _span(prof, "LoadData") == [head + M1 * K1 * 512 / 256, head + K1 * N1 * 512 / 128]
    assert _span(prof, "Mmad") == [SOC.mmad_head_cycles + M1 * N1 * K1 * k0 // rate]
    assert _span(prof, "Fixpipe") == [SOC.fixpipe_head_cycles + ceil(m * n, 64)]
    if dtype == float32:    # float: a quarter of the half rate, two cycles per k fractal of 8
        assert M1 * N1 * K1 * k0 // rate == 2 * M1 * N1 * ceil(k, 8)


def test_aic_launch_profile_and_waves():
    """AIC_ONLY: blockDim counts AICs, run in waves over cube_core_cnt of them; the profile
    names msprof's aic_* pipe times; GM -> L1 is MTE2 and Fixpipe -> GM a FIX write."""
    m, k, n = 32, 64, 32
    rng = np.random.default_rng(4)
    a, b = rand(rng, (m, k), half), rand(rng, (k, n), half)
    blocks = SOC.cube_core_cnt + 1

    class PerBlock(MatmulKernel):      # every block computes the same tile into its own output
        def Init(self, addr):
            super().Init(addr)
            self.cGm = gm_tensor(float32, addr["c"] + GetBlockIdx() * m * n * 4, m * n)

    got, prof = aic_run(PerBlock(m, k, n, half, float32), {"a": a, "b": b},
                        {"c": (blocks * m * n, np.float32)}, block_dim=blocks)
    c = got["c"].reshape(blocks, m, n)
    assert np.array_equal(c[0], cube_reference(a, b, 16)) and np.array_equal(c[-1], c[0])
    assert set(prof.pipe_time_us) == {"aic_mte2_time", "aic_mte1_time", "aic_mac_time",
                                      "aic_fixpipe_time", "aic_scalar_time"}
    assert all(v > 0 for k_, v in prof.pipe_time_us.items() if k_ != "aic_scalar_time")
    t = prof.timing
    assert t.block_start[SOC.cube_core_cnt] >= t.block_end[0]      # the second wave
    assert t.block_start[SOC.cube_core_cnt - 1] == t.block_start[0]
    assert prof.bytes_written == blocks * m * n * 4 and prof.bound in ("cube", "latency",
                                                                        "HBM bandwidth")
