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
from npusim.errors import GmAccessError, SyncError
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


def matmul_kernel(tiling, dtype, c_dtype, ta, tb, bias, iterate=False, org_kc=0,
                  declared=None):
    """The device side, as a matmul_custom kernel: block i computes C's tile (i % mBlocks,
    i // mBlocks) of singleCoreM x singleCoreN, a tail core its smaller part."""
    acc = acc_of(dtype)
    ta_type, tb_type = declared or (ta, tb)       # the MatmulTypes' isTrans

    def kernel(addr):
        pipe = TPipe()
        mm = Matmul(MatmulType(GM, ND, dtype, ta_type), MatmulType(GM, ND, dtype, tb_type),
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
        seed=0, fix=None, org_kc=0, keep_spans=False, first_n=False, declared=None):
    dtype, c_dtype = np.dtype(dtype), np.dtype(c_dtype)
    tiling = host_tiling(m, n, k, dtype, c_dtype, ta, tb, bias, dim, fix, first_n=first_n)
    rng = np.random.default_rng(seed)
    a, b = rand(rng, (m, k), dtype), rand(rng, (k, n), dtype)
    bv = (rng.integers(-1000, 1000, n) if dtype == I8 else rng.standard_normal(n)).astype(
        acc_of(dtype))
    inputs = {"a": a.T.copy() if ta else a, "b": b.T.copy() if tb else b, "bias": bv}
    ldc = org_kc or n
    got, prof = aic_run(matmul_kernel(tiling, dtype, c_dtype, ta, tb, bias, iterate, org_kc,
                                      declared),
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


def test_set_tensor_transposes_whatever_the_matmul_type_says():
    """SetTensorB(b, true) / SetTensorA(a, true) on operands declared without isTrans: the
    library's cube side takes the transpose (code in the wild declares B plainly)."""
    c, want, _, _ = run(48, 40, 64, np.float16, ta=True, tb=True, dim=1,
                        declared=(False, False))
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


@pytest.mark.parametrize("dtype,ta,tb,fix", [
    (I8, True, False, (16, 32, 32)),       # A moved transposed: baseM 16, 32 x 32 squares
    (I8, True, True, (48, 32, 64)),        # baseM 48: two squares, the second half used
    (I8, False, False, (32, 16, 32)),      # B moved transposed: baseN 16
    (I8, True, False, (48, 48, 32)),       # both, 48
    (np.float32, True, False, (32, 48, 40)),   # float K moved transposed: baseK 40
    (np.float32, True, True, (16, 32, 24)),
    (np.float32, False, False, (48, 16, 56))],
    ids=["i8-tA-16", "i8-tAtB-48", "i8-B-16", "i8-tA-B-48", "f32-tA-40", "f32-tAtB-24",
         "f32-B-56"])
def test_bases_the_librarys_kernel_pads(dtype, ta, tb, fix):
    """Bases Ascend C's own tiling gives and its A2 kernel loads padded: an int8 operand
    moved transposed with a base of 16 or 48 (32 x 32 squares: the L1 blocks 32 columns
    apart, the extra rows never read), a float one with a baseK of 8s (K rows loaded in 16s
    from any k offset, several k steps per L1 chunk); tails in M, N and K."""
    c, want, tiling, _ = run(83, 75, 150, dtype, acc_of(dtype), ta, tb, bias=True, dim=1,
                             fix=fix)
    assert (tiling.baseM, tiling.baseN, tiling.baseK) == fix
    assert max(tiling.stepM, tiling.stepN) > 1 or tiling.stepKa > 1
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("m,n,k,dtype,ta,tb,base", [
    (128, 128, 128, I8, True, False, (16, 128, 128, 6, 128)),
    (16, 768, 256, np.float32, True, True, (16, 48, 168, 16, 35))], ids=["int8", "float"])
def test_the_librarys_small_shape_tilings_run(m, n, k, dtype, ta, tb, base):
    """MultiCoreMatmulTiling on 24 cores without SetShape (the library's SPLIT_SMALL_MN),
    whose bases are asc-devkit's own (checked against its tiling code by
    test_matmul_tiling_devkit.py; recorded here): baseM 16 for an int8 A transposed with
    6-row parts and 24 k steps per L1 chunk for a K of one step; a float baseK of 168 (K
    padded to 176 in L0; a k tail of 88) with 35-column parts. The kernel runs them and matches numpy."""
    t = MultiCoreMatmulTiling("Ascend910B2")
    assert t.SetDim(24) == 0
    t.SetAType(GM, ND, dtype, ta)
    t.SetBType(GM, ND, dtype, tb)
    t.SetCType(GM, ND, acc_of(dtype))
    t.SetBiasType(GM, ND, acc_of(dtype))
    t.SetOrgShape(m, n, k)
    t.SetBias(True)
    tiling = TCubeTiling()
    assert t.GetTiling(tiling) == 0
    assert (tiling.baseM, tiling.baseN, tiling.baseK, tiling.singleCoreM,
            tiling.singleCoreN) == base
    rng = np.random.default_rng(5)
    a, b = rand(rng, (m, k), dtype), rand(rng, (k, n), dtype)
    bv = (rng.integers(-1000, 1000, n) if np.dtype(dtype) == I8
          else rng.standard_normal(n)).astype(acc_of(dtype))
    blocks = -(-m // tiling.singleCoreM) * -(-n // tiling.singleCoreN)
    got, _ = aic_run(matmul_kernel(tiling, np.dtype(dtype), acc_of(dtype), ta, tb, True),
                     {"a": a.T.copy() if ta else a, "b": b.T.copy() if tb else b, "bias": bv},
                     {"c": (m * n, acc_of(dtype))}, block_dim=blocks,
                     soc=get_soc("Ascend910B2"))
    np.testing.assert_array_equal(got["c"].reshape(m, n), reference(a, b, bv, acc_of(dtype)))


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
    Mmads on PIPE_M, 32 LoadData on MTE1 (one Load3Dv2 per step for A's slice and one for
    B's, as the library issues them: load_to_l0_utils.h GetLoadInstrType), 4 Fixpipes on FIX. K, A and B fit L1
    whole (the library's "both full" L1 mode: stepKa = 4, stepM = stepN = 2), so each
    crosses GM once. The pipes overlap: the kernel is shorter than the sum of its pipes'
    busy times."""
    _, _, tiling, prof = run(64, 64, 256, np.float16, dim=1, fix=(32, 32, 64), keep_spans=True)
    assert (tiling.stepKa, tiling.stepM, tiling.stepN) == (4, 2, 2)
    recs = prof.records[0]
    names = [(Pipe(r[1]).name, r[5]) for r in recs if r[0] in (0, 1, 2)]
    count = {key: names.count(key) for key in set(names)}
    assert count[("PIPE_M", "Mmad")] == 16
    assert count[("PIPE_FIX", "Fixpipe")] == 4
    assert count[("PIPE_MTE1", "LoadData")] == 16 * 2
    assert count[("PIPE_MTE2", "DataCopy")] == 1 + 1           # A once, B once
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
    with pytest.raises(KernelError, match="only a GlobalTensor operand"):
        one_core(lambda mm, a, b, c: mm.SetTensorA(LocalTensor.at(half, TPosition.A1, 0, 64)))

    def to_local(mm, a, b, c):
        mm.SetTensorA(a)
        mm.SetTensorB(b)
        mm.Iterate()
        mm.GetTensorC(LocalTensor.at(float32, TPosition.A1, 0, 64))
    with pytest.raises(KernelError, match="LocalTensor on the cube core: the AIC has no UB"):
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
            ((h, h, MatmulType(TPosition.CO1, CubeFormat.NZ, float32)), KernelError, "C in CO1"),
            ((h, h, MatmulType(TPosition.VECCALC, ND, float32)), KernelError,
             "C in VECCALC: the cube core has no UB.*MIX form")):
        with pytest.raises(err, match=msg):
            aic_run(build(*args), {}, {})


def test_tiling_errors_reach_the_kernel():
    """A failed GetTiling leaves zeros: Init refuses them; a float tiling made for A plain
    and B transposed (baseM 112, baseK 72) does not fit A transposed, whose slice the
    library's kernel pads to 112 x 80 floats, past the 32 KiB half of L0A it loads into;
    the buffers must fit L1/L0; at most 4 objects."""
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
    wide = host_tiling(112, 112, 144, np.float32, F32, ta=False, tb=True, dim=1,
                       fix=(112, 112, 72))
    assert (wide.dbL0A, wide.dbL0B) == (2, 2)
    with pytest.raises(AlignmentError, match="112 x 80.*35840 B, more than the 32768 B"):
        init(wide)
    init(wide, MatmulType(GM, ND, float32), MatmulType(GM, ND, float32, True),
         trans_a=False)                                     # as the tiling was made
    # int8 A with baseM 16 declared plainly: its buffers hold 16-row blocks; transposed at
    # SetTensorA it would need 32-column blocks (the library sizes them by isTrans too)
    small = host_tiling(32, 32, 64, I8, I32, ta=False, tb=True, dim=1, fix=(16, 32, 32))
    with pytest.raises(AlignmentError, match="declare isTrans as SetTensor passes it"):
        init(small, MatmulType(GM, ND, int8_t), MatmulType(GM, ND, int8_t, True))
    init(small, MatmulType(GM, ND, int8_t, True), MatmulType(GM, ND, int8_t, True))
    with pytest.raises(KernelError, match="at most 4"):
        init(host_tiling(32, 32, 64, np.float32, F32, ta=True, dim=1), objects=5)
    huge = host_tiling(32, 32, 4096, np.float32, F32, ta=True, dim=1)
    huge.stepKa = -(-4096 // huge.baseK)            # A chunks of all of K (512 KiB of A)
    huge.depthA1 = 2 * huge.stepM * huge.stepKa     # two of them
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
    """MIX_AIC_1_2 built with ASCENDC_CUBE_ONLY: the AIC (ASCEND_IS_AIC) computes C into a GM
    workspace with the API and releases its two AIVs (CrossCoreSetFlag mode 2 after
    PIPE_FIX); each AIV doubles its half of C's rows. Without ASCENDC_CUBE_ONLY the AIC
    would become its AIVs' server at REGIST_MATMUL_OBJ: with a null workspace that is an
    error, and an AIV calling Init without REGIST_MATMUL_OBJ is told to register."""
    m, n, k = 32, 32, 64
    tiling = host_tiling(m, n, k, np.float16, F32, dim=1)
    rng = np.random.default_rng(7)
    a, b = rand(rng, (m, k), np.float16), rand(rng, (k, n), np.float16)
    gm = GlobalMemory(1 << 22)
    addr = {name: gm.malloc(nbytes) for name, nbytes in (("a", a.nbytes), ("b", b.nbytes),
                                                         ("ws", m * n * 4), ("out", m * n * 4))}
    gm.write(addr["a"], a.reshape(-1).view(np.uint8))
    gm.write(addr["b"], b.reshape(-1).view(np.uint8))

    def kernel(aic_calls=False, cube_only=True):
        pipe = TPipe()
        ws = gm_tensor(float32, addr["ws"], m * n)
        if ASCEND_IS_AIC() or aic_calls:
            mm = Matmul(MatmulType(GM, ND, half), MatmulType(GM, ND, half),
                        MatmulType(GM, ND, float32))
            if aic_calls:
                mm.Init(tiling)
            else:
                REGIST_MATMUL_OBJ(pipe, 0, mm, tiling, ASCENDC_CUBE_ONLY=cube_only)
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
    with pytest.raises(KernelError, match="client of its block's AIC.*REGIST_MATMUL_OBJ"):
        run_kernel(kernel, 1, (True,), soc=get_soc("Ascend910B1"), gm=gm, kernel_type=mix)
    with pytest.raises(KernelError, match="system workspace is null.*SetSysWorkspace"):
        run_kernel(kernel, 1, (False, False), soc=get_soc("Ascend910B1"), gm=gm,
                   kernel_type=mix)


# -- the MIX form: the AIVs call, their AIC computes ---------------------------------------------

MIX = KernelMetaType.KERNEL_TYPE_MIX_AIC_1_2
VECCALC = TPosition.VECCALC


def mix_tiling(m, n, k, blocks, c_pos=GM, base=(32, 32)):
    """Each of the 2 * blocks AIVs owns m / (2 * blocks) whole rows of C."""
    t = MultiCoreMatmulTiling("Ascend910B1")
    t.SetDim(2 * blocks)
    t.SetAType(GM, ND, half)
    t.SetBType(GM, ND, half)
    t.SetCType(c_pos, ND, float32)
    t.SetBiasType(GM, ND, float32)
    t.SetOrgShape(m, n, k)
    t.SetShape(m, n, k)
    t.SetSingleShape(m // (2 * blocks), n, k)
    t.SetBias(True)
    t.SetFixSplit(*base)
    cube = TCubeTiling()
    assert t.GetTiling(cube) == 0, t.error
    assert cube.usedCoreNum == 2 * blocks and cube.iterateOrder == 0
    return cube


def mix_leaky_kernel(tiling, mode, alpha, set_workspace=True):
    """C = LeakyRelu(A B + bias): every core runs this; REGIST_MATMUL_OBJ returns on the AIC
    (its server), so the rest runs on the AIVs, each driving its own rows of C. ``mode``
    "ub": Iterate + GetTensorC into a VECCALC tile, LeakyRelu there, the tile out to C;
    "gm": IterateAll into C, then LeakyRelu over the AIV's rows (read back from GM);
    "async": the same with IterateAll<false> + WaitIterateAll."""
    t = tiling
    M, N, K = t.M, t.N, t.Ka
    c_pos = VECCALC if mode == "ub" else GM

    def kernel(a, b, bias, c, ws):
        if set_workspace:
            SetSysWorkspace(ws)
        pipe = TPipe()
        mm = Matmul(MatmulType(GM, ND, half), MatmulType(GM, ND, half),
                    MatmulType(c_pos, ND, float32), MatmulType(GM, ND, float32))
        REGIST_MATMUL_OBJ(pipe, GetSysWorkSpacePtr(), mm, t)
        assert ASCEND_IS_AIV()           # the AIC returned at REGIST_MATMUL_OBJ
        row0 = GetBlockIdx() * t.singleCoreM
        cg = gm_tensor(float32, c, M * N)
        mm.SetTensorA(gm_tensor(half, a, M * K)[row0 * K])
        mm.SetTensorB(gm_tensor(half, b, K * N))
        mm.SetBias(gm_tensor(float32, bias, N))
        if mode == "ub":
            que = TQue(TPosition.VECOUT, 1)
            pipe.InitBuffer(que, 1, t.baseM * t.baseN * 4)
            m_iter, count = -(-t.singleCoreM // t.baseM), 0
            while mm.Iterate():
                y = que.AllocTensor(float32)
                mm.GetTensorC(y, 0, True)
                LeakyRelu(y, y, alpha, t.baseM * t.baseN)
                que.EnQue(y)
                y = que.DeQue(float32)
                mi, ni = count % m_iter, count // m_iter          # M moves first
                DataCopy(cg[(row0 + mi * t.baseM) * N + ni * t.baseN], y,
                         DataCopyParams(t.baseM, t.baseN * 4 // 32, 0, (N - t.baseN) * 4 // 32))
                que.FreeTensor(y)
                count += 1
            mm.End()
            return
        if mode == "async":
            mm.IterateAll(cg[row0 * N], sync=False, waitIterateAll=True)
            mm.WaitIterateAll()
        else:
            mm.IterateAll(cg[row0 * N])
        mm.End()
        n = t.singleCoreM * N
        qin, qout = TQue(TPosition.VECIN, 1), TQue(TPosition.VECOUT, 1)
        pipe.InitBuffer(qin, 1, n * 4)
        pipe.InitBuffer(qout, 1, n * 4)
        x = qin.AllocTensor(float32)
        DataCopy(x, cg[row0 * N], n)
        qin.EnQue(x)
        x, y = qin.DeQue(float32), qout.AllocTensor(float32)
        LeakyRelu(y, x, alpha, n)
        qout.EnQue(y)
        qin.FreeTensor(x)
        y = qout.DeQue(float32)
        DataCopy(cg[row0 * N], y, n)
        qout.FreeTensor(y)
    return kernel


def mix_run(mode, m=128, n=64, k=64, blocks=1, alpha=0.25, seed=3, kernel=None,
            workspace=None, keep_spans=False):
    soc = get_soc("Ascend910B1")
    tiling = mix_tiling(m, n, k, blocks, VECCALC if mode == "ub" else GM)
    rng = np.random.default_rng(seed)
    a, b = rand(rng, (m, k), np.float16), rand(rng, (k, n), np.float16)
    bias = rng.standard_normal(n).astype(F32)
    gm = GlobalMemory(1 << 30)
    addr = [gm.malloc(x.nbytes) for x in (a, b, bias)]
    for p, x in zip(addr, (a, b, bias)):
        gm.write(p, x.reshape(-1).view(np.uint8))
    c = gm.malloc(m * n * 4)
    ws = gm.malloc(workspace or soc.lib_api_workspace_size)
    prof = run_kernel(kernel or mix_leaky_kernel(tiling, mode, alpha), blocks,
                      (*addr, c, ws), soc=soc, gm=gm, kernel_type=MIX, keep_spans=keep_spans)
    got = np.frombuffer(gm.read(c, m * n * 4), np.float32).reshape(m, n)
    want = reference(a, b, bias, F32)
    return got, np.where(want < 0, want * F32.type(alpha), want), tiling, prof


@pytest.mark.parametrize("mode,blocks", [("ub", 1), ("gm", 2), ("async", 1)])
def test_mix_form_each_aiv_drives_its_rows_and_applies_leaky_relu(mode, blocks):
    """The AIVs' calls run on their AIC (fp32 accumulation in the cube's k order, exact
    against the numpy rendering); the cube's pipes are busy on the AICs only, the AIVs copy
    and compute their rows; the checker finds the KFC hand-offs order every GM access."""
    got, want, tiling, prof = mix_run(mode, blocks=blocks, keep_spans=True)
    np.testing.assert_array_equal(got, want)
    kinds = prof.core_kinds
    assert kinds == ["AIC"] * blocks + ["AIV"] * (2 * blocks)
    for recs, kind in zip(prof.records, kinds):
        names = {r[5] for r in recs}
        assert ("Mmad" in names) == (kind == "AIC")
        assert ("LeakyRelu" in names) == (kind == "AIV")
        if kind == "AIV":
            assert "KfcCommClient::PostMessage" in names
    busy = prof.core_pipe_time_us
    assert (busy["PIPE_M"][:blocks] > 0).all() and (busy["PIPE_M"][blocks:] == 0).all()
    assert (busy["PIPE_MTE2"][blocks:] > 0).all()          # C (or its tile) into the UB


def test_mix_form_serves_one_aiv_iterate_sequence_at_a_time():
    """From an AIV's first Iterate to its End the AIC serves that AIV only: on the AIC, every
    message of AIV 0 comes before the first of AIV 1; each Iterate's block moves to the
    AIV's UB through its GM copy in the workspace (one GetTensorC per block)."""
    _, _, tiling, prof = mix_run("ub", keep_spans=True)
    served = [r[5] for r in prof.records[0] if r[5].startswith("KfcServer::Run")]
    blocks = (tiling.singleCoreM // tiling.baseM) * (tiling.N // tiling.baseN)
    per_aiv = ["KfcServer::Run (Matmul::Iterate)", "KfcServer::Run (Matmul::GetTensorC)"] * \
        blocks + ["KfcServer::Run (Matmul::End)"]
    assert served == per_aiv * 2
    waits = [r for r in prof.records[1] if r[5] == "WaitEvent (Matmul::GetTensorC)"]
    assert len(waits) == blocks


def test_mix_form_errors():
    # no SetSysWorkspace: the AIC's server has no workspace for the message queues
    with pytest.raises(KernelError, match="system workspace is null.*SetSysWorkspace"):
        mix_run("gm", kernel=mix_leaky_kernel(mix_tiling(128, 64, 64, 1), "gm", 0.25,
                                              set_workspace=False))
    # a workspace too small for the AIVs' queues and UB copies
    with pytest.raises(GmAccessError, match="leaves the allocation"):
        mix_run("gm", workspace=4096)

    tiling = mix_tiling(64, 64, 64, 1, VECCALC)

    def calls(c_pos, body):
        def kernel(a, b, bias, c, ws):
            SetSysWorkspace(ws)
            pipe = TPipe()
            mm = Matmul(MatmulType(GM, ND, half), MatmulType(GM, ND, half),
                        MatmulType(c_pos, ND, float32), MatmulType(GM, ND, float32))
            REGIST_MATMUL_OBJ(pipe, GetSysWorkSpacePtr(), mm, tiling)
            mm.SetTensorA(gm_tensor(half, a, 64 * 64))
            mm.SetTensorB(gm_tensor(half, b, 64 * 64))
            body(mm, pipe, gm_tensor(float32, c, 64 * 64))
        return kernel

    def to_ub(elements, en_atomic=0):
        def body(mm, pipe, c):
            buf = TBuf()
            pipe.InitBuffer(buf, elements * 4)
            mm.Iterate()
            mm.GetTensorC(buf.Get(float32), en_atomic)
        return body

    for c_pos, body, err, msg in (
            (GM, to_ub(32 * 32), KernelError, "C's MatmulType is GM.*VECIN/VECCALC/VECOUT"),
            (VECCALC, to_ub(32 * 16), KernelError, "fewer than baseM \\* baseN = 1024"),
            (VECCALC, to_ub(32 * 32, 1), KernelError, "only a GM output accumulates"),
            (GM, lambda mm, pipe, c: (mm.IterateAll(c), mm.IterateAll(c)), KernelError,
             "no SetTensorA/SetTensorB since the last Iterate or IterateAll"),
            (GM, lambda mm, pipe, c: (mm.IterateAll(c, sync=False), mm.WaitIterateAll()),
             SyncError, "without waitIterateAll = true"),
            (GM, lambda mm, pipe, c: mm.Iterate(sync=False), KernelError,
             "Iterate<false>.*not modelled")):
        with pytest.raises(err, match=msg):
            mix_run("gm", m=64, kernel=calls(c_pos, body))

    # AIV 0 never ends its Iterate sequence: AIV 1's call waits for the server for ever
    def hold(mm, pipe, c):
        if GetSubBlockIdx() == 0:
            mm.Iterate()
            mm.GetTensorC(c)
        else:
            mm.IterateAll(c)
    with pytest.raises(SyncError, match="kernel hangs.*Matmul::IterateAll of AIV 1.*serves "
                                        "AIV 0 .*Iterate/GetTensorC sequence until that AIV "
                                        "calls End"):
        mix_run("gm", m=64, kernel=calls(GM, hold))


def test_an_aic_that_drives_the_api_itself_registers_cube_only():
    """Without ASCENDC_CUBE_ONLY the AIC becomes its AIVs' server and returns: AIVs waiting
    for a flag from it hang, and the error says why."""
    tiling = mix_tiling(64, 64, 64, 1)

    def kernel(a, b, bias, c, ws):
        SetSysWorkspace(ws)
        if ASCEND_IS_AIC():
            mm = Matmul(MatmulType(GM, ND, half), MatmulType(GM, ND, half),
                        MatmulType(GM, ND, float32), MatmulType(GM, ND, float32))
            REGIST_MATMUL_OBJ(TPipe(), GetSysWorkSpacePtr(), mm, tiling)
            CrossCoreSetFlag(1, modeId=2, pipe=PIPE_FIX)
            return
        CrossCoreWaitFlag(1)
    with pytest.raises(SyncError, match="returned from the kernel at REGIST_MATMUL_OBJ.*"
                                        "ASCENDC_CUBE_ONLY=True"):
        mix_run("gm", m=64, kernel=kernel)


def test_the_mix_example_matches_the_cube_order(capsys):
    """examples/matmul_leakyrelu_mix.py (docs/tutorial.md §14): the AIVs' tiles of
    LeakyRelu(A B + bias), column and row splits, against the numpy rendering."""
    from aclnn_helpers import load_example
    m, n, k, alpha = 256, 256, 64, 0.125
    out, err, prof = load_example("matmul_leakyrelu_mix").main(M=m, N=n, K=k, blocks=2,
                                                                alpha=alpha)
    rng = np.random.default_rng(0)                      # the example's draws, in its order
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(F32)
    want = reference(a, b, bias, F32)
    np.testing.assert_array_equal(out, np.where(want < 0, want * F32.type(alpha), want))
    assert err < 1e-4 and "4 AIVs on 2 blocks" in capsys.readouterr().out
    assert prof.pipe_time_us["aic_mac_time"] > 0 and prof.pipe_time_us["aiv_vec_time"] > 0
