"""The high-level Matmul API in an AIC_ONLY kernel written the Ascend C way (host tiling by
MultiCoreMatmulTiling, REGIST_MATMUL_OBJ, SetTensorA/B, SetBias, SetTail, IterateAll or
Iterate + GetTensorC, End), several blocks splitting M and N by singleCoreM/N, against an
independent numpy rendering of the cube's arithmetic: products summed in k steps of one
fractal (32 B of k), each step rounded once to fp32 and added to the fp32 (int8: int32)
accumulator that starts at the bias, then one rounding to C's type. Also what the API
issues (pipes, instruction counts, L1 reuse, overlap) and each error path."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim import (AlignmentError, DtypeError, GlobalMemory, KernelError, get_soc,
                    run_kernel)
from npusim.ascendc import *  # noqa: F403
from npusim.ascendc import matmul_tiling as mt
from npusim.ascendc.checker import LeakError

from test_cube_layouts import aic_run, gm_tensor

BF16 = np.dtype(ml_dtypes.bfloat16)
F32, I32, I8 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.int8)
GM, ND = TPosition.GM, CubeFormat.ND


def acc_of(dtype):
    return I32 if np.dtype(dtype) == I8 else F32


def host_tiling(m, n, k, dtype, c_dtype, ta=False, tb=False, bias=False, dim=4,
                fix=None, soc="Ascend910B1", first_n=False):
    """The host side: MultiCoreMatmulTiling -> TCubeTiling."""
    t = MultiCoreMatmulTiling(soc)
    assert t.SetDim(dim) == 0
    t.SetAType(GM, ND, dtype, ta)
    t.SetBType(GM, ND, dtype, tb)
    t.SetCType(GM, ND, c_dtype)
    t.SetBiasType(GM, ND, acc_of(dtype))
    t.SetOrgShape(m, n, k)
    t.SetShape(m, n, k)
    t.SetBias(bias)
    if fix:
        t.SetFixSplit(*fix)
    if first_n:
        t.SetTraverse(mt.MatrixTraverse.FIRSTN)
    cube = TCubeTiling()
    assert t.GetTiling(cube) == 0, t.error
    return cube


def matmul_kernel(tiling, dtype, c_dtype, ta, tb, bias, iterate=False, org_kc=0):
    """The device side, as a matmul_custom kernel: block i computes C's tile (i % mBlocks,
    i // mBlocks) of singleCoreM x singleCoreN, a tail core its smaller part."""
    acc = acc_of(dtype)

    def kernel(addr):
        pipe = TPipe()
        mm = Matmul(MatmulType(GM, ND, dtype, ta), MatmulType(GM, ND, dtype, tb),
                    MatmulType(GM, ND, c_dtype), MatmulType(GM, ND, acc))
        REGIST_MATMUL_OBJ(pipe, 0, mm, tiling)
        M, N, K = tiling.M, tiling.N, tiling.Ka
        ldc = org_kc or N
        m_blocks = -(-M // tiling.singleCoreM)
        mc, nc = GetBlockIdx() % m_blocks, GetBlockIdx() // m_blocks
        m0, n0 = mc * tiling.singleCoreM, nc * tiling.singleCoreN
        a = gm_tensor(dtype, addr["a"], M * K)
        b = gm_tensor(dtype, addr["b"], K * N)
        c = gm_tensor(c_dtype, addr["c"], M * ldc)
        if org_kc:
            mm.SetOrgShape(M, N, K, K, org_kc)
        mm.SetTensorA(a[m0 if ta else m0 * K], ta)
        mm.SetTensorB(b[n0 * K if tb else n0], tb)
        if bias:
            mm.SetBias(gm_tensor(acc, addr["bias"], N)[n0])
        mm.SetTail(min(tiling.singleCoreM, M - m0), min(tiling.singleCoreN, N - n0))
        if iterate:
            while mm.Iterate():
                mm.GetTensorC(c[m0 * ldc + n0])
        else:
            mm.IterateAll(c[m0 * ldc + n0])
        mm.End()
    return kernel


def rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == I8:
        return rng.integers(-128, 128, shape).astype(I8)
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def reference(a, b, bias, c_dtype):
    """C = bias + A x B in the cube's order (module docstring), then C's type."""
    k0 = 32 // a.dtype.itemsize
    if a.dtype == I8:
        c = a.astype(np.int64) @ b.astype(np.int64) + (0 if bias is None else bias)
        return c.astype(I32)
    acc = np.zeros((a.shape[0], b.shape[1]), F32) if bias is None else np.tile(bias, (a.shape[0], 1))
    for s in range(0, a.shape[1], k0):
        step = a[:, s:s + k0].astype(np.float64) @ b[s:s + k0].astype(np.float64)
        acc = (acc + step.astype(F32)).astype(F32)
    return acc.astype(c_dtype)


def run(m, n, k, dtype, c_dtype=F32, ta=False, tb=False, bias=False, dim=4, iterate=False,
        seed=0, fix=None, org_kc=0, keep_spans=False, first_n=False):
    dtype, c_dtype = np.dtype(dtype), np.dtype(c_dtype)
    tiling = host_tiling(m, n, k, dtype, c_dtype, ta, tb, bias, dim, fix, first_n=first_n)
    rng = np.random.default_rng(seed)
    a, b = rand(rng, (m, k), dtype), rand(rng, (k, n), dtype)
    bv = (rng.integers(-1000, 1000, n) if dtype == I8 else rng.standard_normal(n)).astype(
        acc_of(dtype))
    inputs = {"a": a.T.copy() if ta else a, "b": b.T.copy() if tb else b, "bias": bv}
    ldc = org_kc or n
    got, prof = aic_run(matmul_kernel(tiling, dtype, c_dtype, ta, tb, bias, iterate, org_kc),
                        inputs, {"c": (m * ldc, c_dtype)}, block_dim=tiling.usedCoreNum,
                        keep_spans=keep_spans)
    c = got["c"].reshape(m, ldc)[:, :n]
    return c, reference(a, b, bv if bias else None, c_dtype), tiling, prof


# -- numerics ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32], ids=["half", "bf16", "float"])
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_iterate_all_against_numpy(dtype, ta, tb):
    """Several blocks (M and N split over 4 cores), tails in M, N and K, both transposes."""
    c, want, tiling, _ = run(70, 90, 150, dtype, ta=ta, tb=tb)
    assert tiling.usedCoreNum > 1 and (70 % tiling.singleCoreM or 90 % tiling.singleCoreN)
    np.testing.assert_array_equal(c, want)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 80), n=st.integers(1, 80), k=st.integers(1, 160),
       dtype=st.sampled_from(["half", "bf16", "float", "int8"]), ta=st.booleans(),
       tb=st.booleans(), bias=st.booleans(), iterate=st.booleans(), dim=st.integers(1, 6),
       c_half=st.booleans(), seed=st.integers(0, 99))
def test_any_shape_type_layout_and_call_form(m, n, k, dtype, ta, tb, bias, iterate, dim, c_half,
                                             seed):
    """Random shapes (m = 1 included), the four input types, transposes, bias, the two call
    forms and core counts; C half/bf16 rounds the fp32 result once (Fixpipe)."""
    dtype = {"half": np.float16, "bf16": BF16, "float": np.float32, "int8": I8}[dtype]
    c_dtype = I32 if dtype == I8 else (np.dtype(dtype if dtype != np.float32 else np.float16)
                                        if c_half else F32)
    c, want, _, _ = run(m, n, k, dtype, c_dtype, ta, tb, bias, dim, iterate, seed)
    np.testing.assert_array_equal(c, want)


def test_small_base_blocks_many_k_steps_and_l1_chunks():
    """A fixed small split (32 x 32 x 16): many Iterate blocks and k steps, K in several L1
    chunks (stepKa < kIter), L0A/L0B double buffers, and an org C wider than N (orgKc)."""
    c, want, tiling, _ = run(96, 64, 400, np.float16, F32, bias=True, dim=1, fix=(32, 32, 16),
                             org_kc=80)
    assert (tiling.baseM, tiling.baseN, tiling.baseK) == (32, 32, 16)
    np.testing.assert_array_equal(c, want)


def test_n_first_walk_with_several_n_blocks_in_l1():
    """iterateOrder 1 (SetTraverse FIRSTN): N moves first and B1 holds stepN blocks."""
    c, want, tiling, _ = run(48, 96, 64, np.float32, F32, tb=True, dim=1, fix=(16, 32, 32),
                             iterate=True, first_n=True)
    assert (tiling.iterateOrder, tiling.stepN) == (1, 3)
    np.testing.assert_array_equal(c, want)


def test_sequential_write_and_atomic_add():
    """enSequentialWrite: each block as a dense baseM x baseN tile at gm; enAtomic = 1: the
    blocks add into what GM holds (twice over: 2C)."""
    m = n = 32
    k = 48
    tiling = host_tiling(m, n, k, np.float16, F32, dim=1, fix=(16, 16, 16))
    rng = np.random.default_rng(3)
    a, b = rand(rng, (m, k), np.float16), rand(rng, (k, n), np.float16)

    def kernel(addr):
        pipe = TPipe()
        mm = Matmul(MatmulType(GM, ND, half), MatmulType(GM, ND, half), MatmulType(GM, ND, float32))
        REGIST_MATMUL_OBJ(pipe, 0, mm, tiling)
        mm.SetTensorA(gm_tensor(half, addr["a"], m * k))
        mm.SetTensorB(gm_tensor(half, addr["b"], k * n))
        mm.IterateAll(gm_tensor(float32, addr["acc"], m * n), 1)
        mm.IterateAll(gm_tensor(float32, addr["acc"], m * n), 1)
        seq = gm_tensor(float32, addr["seq"], m * n)
        i = 0
        while mm.Iterate():
            mm.GetTensorC(seq[i * 256], 0, True)
            i += 1
        mm.End()

    got, _ = aic_run(kernel, {"a": a, "b": b}, {"acc": (m * n, F32), "seq": (m * n, F32)})
    want = reference(a, b, None, F32)
    np.testing.assert_array_equal(got["acc"].reshape(m, n), want + want)
    tiles = want.reshape(2, 16, 2, 16).transpose(2, 0, 1, 3).reshape(-1)   # M first, then N
    np.testing.assert_array_equal(got["seq"], tiles)


# -- what it issues ------------------------------------------------------------------------------

def test_instructions_follow_the_tiling():
    """One core, 64 x 64 x 256 half with base (32, 32, 64): 2 x 2 blocks of 4 k steps = 16
    Mmads on PIPE_M, 32 LoadData on MTE1 (one per 16-row block of A: 2 per step; B: 2 per
    step transposed), 4 Fixpipes on FIX. K fits L1 (stepKa = 4): A's two M chunks and B's
    two N chunks each cross GM once if they stay in L1 - A1 holds stepM = 2 blocks, so A is
    read once, B once per M block. The pipes overlap: the kernel is shorter than the sum
    of its pipes' busy times."""
    _, _, tiling, prof = run(64, 64, 256, np.float16, dim=1, fix=(32, 32, 64), keep_spans=True)
    assert (tiling.stepKa, tiling.stepM) == (4, 2)
    recs = prof.records[0]
    names = [(Pipe(r[1]).name, r[5]) for r in recs if r[0] in (0, 1, 2)]
    count = {key: names.count(key) for key in set(names)}
    assert count[("PIPE_M", "Mmad")] == 16
    assert count[("PIPE_FIX", "Fixpipe")] == 4
    assert count[("PIPE_MTE1", "LoadData")] == 16 * 4
    assert count[("PIPE_MTE2", "DataCopy")] == 1 + 2           # A once, B per N chunk
    spans = prof.timing.spans[0]
    busy = sum(e - s for _, s, e, _, _ in spans)
    assert prof.timing.block_end[0] < busy


# -- errors --------------------------------------------------------------------------------------

def one_core(body, soc=get_soc("Ascend910B1")):
    """Run ``body(mm, a, b, c)`` after registering a half Matmul of 32 x 32 x 32."""
    tiling = host_tiling(32, 32, 32, np.float16, F32, dim=1)

    def kernel(addr):
        pipe = TPipe()
        mm = Matmul(MatmulType(GM, ND, half, True), MatmulType(GM, ND, half),
                    MatmulType(GM, ND, float32))
        REGIST_MATMUL_OBJ(pipe, 0, mm, tiling)
        body(mm, gm_tensor(half, addr["a"], 1024), gm_tensor(half, addr["b"], 1024),
             gm_tensor(float32, addr["c"], 1024))

    x = np.zeros(1024, np.float16)
    return aic_run(kernel, {"a": x, "b": x}, {"c": (1024, F32)}, soc=soc)


def test_calls_out_of_order_are_errors():
    with pytest.raises(KernelError, match="SetTensorA and SetTensorB must come first"):
        one_core(lambda mm, a, b, c: mm.Iterate())
    with pytest.raises(KernelError, match="call Iterate first"):
        one_core(lambda mm, a, b, c: mm.GetTensorC(c))

    def twice(mm, a, b, c):
        mm.SetTensorA(a)
        mm.SetTensorB(b)
        mm.Iterate()
        mm.Iterate()
    with pytest.raises(KernelError, match="GetTensorC after each Iterate"):
        one_core(twice)
    with pytest.raises(KernelError, match="isBias is 0"):
        one_core(lambda mm, a, b, c: mm.SetBias(gm_tensor(float32, c.address, 32)))

    def no_end(mm, a, b, c):
        mm.SetTensorA(a)
        mm.SetTensorB(b)
        mm.IterateAll(c)
    with pytest.raises(LeakError):
        one_core(no_end)


def test_operand_errors():
    with pytest.raises(DtypeError, match="holds float32"):
        one_core(lambda mm, a, b, c: mm.SetTensorA(gm_tensor(float32, a.address, 8)))
    with pytest.raises(KernelError, match="isTrans = true"):
        one_core(lambda mm, a, b, c: mm.SetTensorB(b, True))
    with pytest.raises(KernelError, match="only a GlobalTensor operand"):
        one_core(lambda mm, a, b, c: mm.SetTensorA(LocalTensor.at(half, TPosition.A1, 0, 64)))

    def to_local(mm, a, b, c):
        mm.SetTensorA(a)
        mm.SetTensorB(b)
        mm.Iterate()
        mm.GetTensorC(LocalTensor.at(float32, TPosition.A1, 0, 64))
    with pytest.raises(KernelError, match="VECIN"):
        one_core(to_local)

    def atomic_max(mm, a, b, c):
        mm.SetTensorA(a)
        mm.SetTensorB(b)
        mm.IterateAll(c, 2)
    with pytest.raises(KernelError, match="AtomicMax"):
        one_core(atomic_max)


def test_types_and_places_not_modelled():
    tiling = host_tiling(32, 32, 32, np.float16, F32, dim=1)

    def build(a, b, c, bias=None):
        def kernel(addr):
            REGIST_MATMUL_OBJ(TPipe(), 0, Matmul(a, b, c, bias), tiling)
        return kernel

    h, f = MatmulType(GM, ND, half), MatmulType(GM, ND, float32)
    for args, err, msg in (
            ((h, MatmulType(GM, ND, float32), f), DtypeError, "A float16 x B float32"),
            ((h, h, MatmulType(GM, ND, np.int8)), DtypeError, "C int8"),
            ((MatmulType(GM, CubeFormat.NZ, half), h, f), KernelError, "GM, ND only"),
            ((h, h, MatmulType(TPosition.CO1, CubeFormat.NZ, float32)), KernelError, "C in CO1")):
        with pytest.raises(err, match=msg):
            aic_run(build(*args), {}, {})


def test_tiling_errors_reach_the_kernel():
    """A failed GetTiling leaves zeros: Init refuses them; a float tiling made for A plain
    and B transposed (baseK 8) does not fit A transposed; int8 transposed A needs baseM a
    multiple of 32; the buffers must fit L1/L0; at most 4 objects."""
    def init(tiling, a_type=MatmulType(GM, ND, float32, True), b_type=MatmulType(GM, ND, float32),
             trans_a=True, objects=1):
        def kernel(addr):
            pipe = TPipe()
            mms = [Matmul(a_type, b_type, MatmulType(GM, ND, float32 if a_type.dtype != I8
                                                      else int32_t)) for _ in range(objects)]
            REGIST_MATMUL_OBJ(pipe, 0, *[x for mm in mms for x in (mm, tiling)])
            mms[0].SetTensorA(gm_tensor(a_type.dtype, addr["x"], 8), trans_a)
        aic_run(kernel, {"x": np.zeros(8, np.float32)}, {})

    with pytest.raises(KernelError, match="GetTiling's result -1"):
        init(TCubeTiling())
    with pytest.raises(AlignmentError, match="baseK 8 is not a multiple of 16"):
        init(host_tiling(32, 32, 64, np.float32, F32, ta=False, tb=True, dim=1, fix=(32, 32, 8)))
    int8 = host_tiling(32, 32, 64, I8, I32, ta=False, tb=True, dim=1, fix=(16, 32, 32))
    with pytest.raises(AlignmentError, match="32 x 32 squares"):
        init(int8, MatmulType(GM, ND, int8_t, True), MatmulType(GM, ND, int8_t, True))
    with pytest.raises(KernelError, match="at most 4"):
        init(host_tiling(32, 32, 64, np.float32, F32, ta=True, dim=1), objects=5)
    huge = host_tiling(32, 32, 64, np.float32, F32, ta=True, dim=1)
    huge.stepKa, huge.depthA1 = 64, 128             # 128 A chunks of 32 x 32 floats
    with pytest.raises(Exception, match="L1 capacity"):
        init(huge)


def test_bias_type_is_checked_where_a_bias_is_used():
    """BIAS_TYPE defaults to C's: a half C without a bias is fine; a half bias is not
    modelled (its L1 -> bias-table conversion), checked at SetBias."""
    c, want, _, _ = run(20, 20, 20, np.float16, np.float16, dim=1)
    np.testing.assert_array_equal(c, want)
    tiling = host_tiling(32, 32, 32, np.float16, F32, bias=True, dim=1)

    def kernel(addr):
        mm = Matmul(MatmulType(GM, ND, half), MatmulType(GM, ND, half),
                    MatmulType(GM, ND, float32), MatmulType(GM, ND, half))
        REGIST_MATMUL_OBJ(TPipe(), 0, mm, tiling)
        mm.SetBias(gm_tensor(half, addr["x"], 32))
    with pytest.raises(DtypeError, match="float16 bias"):
        aic_run(kernel, {"x": np.zeros(32, np.float16)}, {})


def test_where_the_api_cannot_run():
    """A vector core has no L1; the 910A's cube has no Fixpipe."""
    tiling = host_tiling(32, 32, 32, np.float16, F32, dim=1)

    def kernel():
        REGIST_MATMUL_OBJ(TPipe(), 0, Matmul(MatmulType(GM, ND, half), MatmulType(GM, ND, half),
                                             MatmulType(GM, ND, float32)), tiling)
    with pytest.raises(KernelError, match="runs on the cube core.*has no L1"):
        run_kernel(kernel, 1, (), soc=get_soc("Ascend910B1"), gm=GlobalMemory(1 << 20))
    with pytest.raises(KernelError, match="no Fixpipe"):
        run_kernel(kernel, 1, (), soc=get_soc("Ascend910A"), gm=GlobalMemory(1 << 20))


def test_the_aic_of_a_mixed_kernel_runs_it_and_hands_c_to_the_aivs():
    """MIX_AIC_1_2: the AIC (ASCEND_IS_AIC) computes C into a GM workspace with the API and
    releases its two AIVs (CrossCoreSetFlag mode 2 after PIPE_FIX); each AIV doubles its
    half of C's rows. Calling the API on an AIV is the library's MIX form: not modelled."""
    m, n, k = 32, 32, 64
    tiling = host_tiling(m, n, k, np.float16, F32, dim=1)
    rng = np.random.default_rng(7)
    a, b = rand(rng, (m, k), np.float16), rand(rng, (k, n), np.float16)
    gm = GlobalMemory(1 << 22)
    addr = {name: gm.malloc(nbytes) for name, nbytes in (("a", a.nbytes), ("b", b.nbytes),
                                                         ("ws", m * n * 4), ("out", m * n * 4))}
    gm.write(addr["a"], a.reshape(-1).view(np.uint8))
    gm.write(addr["b"], b.reshape(-1).view(np.uint8))

    def kernel(aic_calls=False):
        pipe = TPipe()
        ws = gm_tensor(float32, addr["ws"], m * n)
        if ASCEND_IS_AIC() or aic_calls:
            mm = Matmul(MatmulType(GM, ND, half), MatmulType(GM, ND, half),
                        MatmulType(GM, ND, float32))
            REGIST_MATMUL_OBJ(pipe, 0, mm, tiling)
            mm.SetTensorA(gm_tensor(half, addr["a"], m * k))
            mm.SetTensorB(gm_tensor(half, addr["b"], k * n))
            mm.IterateAll(ws)
            mm.End()
            CrossCoreSetFlag(1, modeId=2, pipe=PIPE_FIX)
            return
        CrossCoreWaitFlag(1)
        rows = m // 2 * n
        buf = TBuf()
        pipe.InitBuffer(buf, rows * 4)
        t = buf.Get(float32)
        DataCopy(t, ws[GetSubBlockIdx() * rows], rows)
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        Muls(t, t, 2.0, rows)
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        DataCopy(gm_tensor(float32, addr["out"], m * n)[GetSubBlockIdx() * rows], t, rows)

    mix = KernelMetaType.KERNEL_TYPE_MIX_AIC_1_2
    run_kernel(kernel, 1, (), soc=get_soc("Ascend910B1"), gm=gm, kernel_type=mix)
    got = np.frombuffer(gm.read(addr["out"], m * n * 4), np.float32).reshape(m, n)
    np.testing.assert_array_equal(got, 2 * reference(a, b, None, F32))
    with pytest.raises(KernelError, match="MIX form.*not modelled"):
        run_kernel(kernel, 1, (True,), soc=get_soc("Ascend910B1"), gm=gm, kernel_type=mix)
