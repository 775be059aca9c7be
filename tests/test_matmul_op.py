"""aclnnMatmul, aclnnMm and aclnnBatchMatMul: the official samples, the
MatMulV3 tiling (hand-computed cases, and the L0/L1 capacities over drawn shapes), the
cube kernel bit for bit against the cube's order of operations written out here (every
dtype, transposed views, partial tiles, several L1 chunks), against numpy's float64 product
and torch.matmul, torch.matmul's broadcasting, the cubeMathType values, mixed and output
dtypes, empty tensors, and every documented error path (status, message naming the
argument, no data changed)."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import aclnn
import npusim
from aclnn import acl, runtime
from aclnn.ops import matmul as mm
from npusim.kernels.matmul import tiling as T
from npusim.kernels.matmul.golden import matmul_golden

from aclnn_helpers import assert_unchanged, from_device, init_runtime, run_example, to_device

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
B1, B2 = npusim.get_soc("Ascend910B1"), npusim.get_soc("Ascend910B2")
API = {"Matmul": (mm.aclnnMatmulGetWorkspaceSize, mm.aclnnMatmul),
       "Mm": (mm.aclnnMmGetWorkspaceSize, mm.aclnnMm),
       "BatchMatMul": (mm.aclnnBatchMatMulGetWorkspaceSize, mm.aclnnBatchMatMul)}
SYS_WORKSPACE = 16 << 20                 # GetLibApiWorkSpaceSize on A2/A3


def rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def cube_order(a, b, k0, out_dtype):
    """The cube's order, written from the documented rule (Mmad: k in steps of k0 = 32 B /
    sizeof(T), each step's products summed exactly and rounded once to float32, added to the
    float32 accumulator in k order; Fixpipe rounds once to the output dtype). numpy's
    matmul shape rules (1-D operands, broadcast batch dims)."""
    k = a.shape[-1]
    acc = None
    for s in range(0, k, k0):
        bs = b[s:s + k0] if b.ndim == 1 else b[..., s:s + k0, :]
        part = np.matmul(a[..., s:s + k0].astype(np.float64), bs.astype(np.float64))
        part = np.asarray(part).astype(np.float32)
        acc = part if acc is None else (acc + part).astype(np.float32)
    return np.asarray(acc).astype(out_dtype)


def device(arr):
    """:func:`to_device`, keeping a 0-d array 0-d (``np.ascontiguousarray`` makes it 1-d)."""
    arr = np.asarray(arr)
    if arr.ndim:
        return to_device(arr)
    t = to_device(arr.reshape(1))
    return aclnn.aclCreateTensor([], t.data_type, [], 0, aclnn.ACL_FORMAT_ND, [], t.tensor_data)


def k0_of(dtype):
    return 32 // np.dtype(dtype).itemsize


def transposed_view(arr):
    """An aclTensor of ``arr``'s shape whose storage is its last two dims swapped and made
    contiguous (strides [..., 1, rows]): the transposed view torch passes for x.t()."""
    store = np.ascontiguousarray(np.swapaxes(arr, -1, -2))
    t = to_device(store)
    strides = list(t.strides)
    strides[-2], strides[-1] = strides[-1], strides[-2]
    return aclnn.aclCreateTensor(list(arr.shape), t.data_type, strides, 0, aclnn.ACL_FORMAT_ND,
                                 list(store.shape), t.tensor_data)


def sliced_view(arr, offset_rows=1):
    """A non-contiguous view of ``arr``: every other column of a wider matrix, starting
    ``offset_rows`` rows in (strides (2 * cols, 2), an offset)."""
    m, k = arr.shape
    store = np.zeros((m + offset_rows, 2 * k), arr.dtype)
    store[offset_rows:, ::2] = arr
    t = to_device(store)
    return aclnn.aclCreateTensor([m, k], t.data_type, [2 * k, 2], offset_rows * 2 * k,
                                 aclnn.ACL_FORMAT_ND, list(store.shape), t.tensor_data)


def run(api, self_t, mat2_t, out_shape, out_dtype, cube=0):
    """Both phases on the current stream; returns (out as numpy, tiling, workspace size,
    names of the kernels launched)."""
    first, second = API[api]
    out = device(np.zeros(out_shape, out_dtype))
    ws, ex, ret = first(self_t, mat2_t, out, cube)
    assert ret == 0, acl.get_recent_err_msg()
    dev = runtime.current_device()
    n0 = len(dev.profiles)
    wptr = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0] if ws else 0
    assert second(wptr, ws, ex, None) == 0              # the default stream
    assert acl.rt.synchronize_device() == 0, acl.get_recent_err_msg()
    names = [p.op_name for p in dev.profiles[n0:]]
    return from_device(out, out_dtype), ex.tiling, ws, names


# -- the official samples -------------------------------------------------------------------
def test_official_samples_print_the_documented_products(capsys):
    with pytest.warns(mm.HF32NotModelledWarning, match="cubeMathType 1") as record:
        res = run_example("matmul_sample")["out"]           # cubeMathType 1 with FLOAT
    assert record[0].filename.endswith("matmul_sample.py")  # the caller's line
    assert res.shape == (16, 16) and np.all(res == 32)
    with pytest.warns(mm.HF32NotModelledWarning):
        assert np.all(run_example("matmul_sample", ["--api", "Mm"])["out"] == 32)
    with pytest.warns(mm.HF32NotModelledWarning):
        bmm = run_example("matmul_sample", ["--api", "BatchMatMul"])["out"]
    np.testing.assert_array_equal(bmm, [[[8, 10, 11, 11], [26, 31, 35, 38]]])
    assert "result[7] is: 38.000000" in capsys.readouterr().out


# -- the tiling ------------------------------------------------------------------------------
def test_tiling_of_the_benchmark_shape():
    """4096^3 half on 910B2: 256 x 128 base blocks (the L0C tile of 128 KiB), baseK = 128 B
    of half, L1 chunks of 4 steps double-buffered, 32 x 32 blocks dealt over 24 AICs."""
    td = T.tiling(B2, 4096, 4096, 4096, F16)
    t = td.matmulTiling
    assert (t.baseM, t.baseN, t.baseK) == (256, 128, 64)
    assert (t.stepKa, t.stepKb, t.depthA1, t.depthB1, t.stepM, t.stepN) == (4, 4, 8, 8, 1, 1)
    assert (t.dbL0A, t.dbL0B, t.dbL0C) == (2, 2, 1)            # 2 x 128 KiB do not fit L0C
    assert (t.M, t.N, t.Ka, t.Kb, t.singleCoreK) == (4096, 4096, 4096, 4096, 4096)
    assert td.totalTiles == 16 * 32 and t.usedCoreNum == td.blockDim == 24
    assert td.workspaceSize == SYS_WORKSPACE and td.opType == "MatMulV3"
    assert list(td.tiles(23))[:3] == [23, 47, 71] and td.tile_origin(47) == (0, 256, 1920)
    f = T.tiling(B2, 4096, 4096, 4096, F32).matmulTiling
    assert (f.baseM, f.baseN, f.baseK, f.stepKa) == (256, 128, 32, 4)


def test_tiling_of_small_and_batched_shapes():
    """Cut to the shape, then halved (not below 64) while there are fewer blocks than AICs;
    a short K gives a short baseK (16 at least); batch strides 0 where an operand
    broadcasts."""
    t = T.tiling(B1, 30, 70, 40, F16).matmulTiling
    assert (t.baseM, t.baseN, t.baseK, t.usedCoreNum) == (32, 48, 48, 2)
    assert T.tiling(B1, 17, 9, 3, F32).matmulTiling.baseK == 16
    assert T.tiling(B1, 1024, 1024, 64, F16).matmulTiling.stepKa == 1
    td = T.tiling(B1, 64, 64, 64, BF16, F32, batch_shape=(3, 1), a_batch_strides=(4096, 0),
                  b_batch_strides=(0, 0))
    assert td.batchShape == (3, 1) and td.batch_offsets(2) == (8192, 0)
    assert td.opType == "BatchMatMulV3" and td.cDtype == F32
    assert T.contiguous_batch_strides((2, 1, 3), 4, 5) == (60, 0, 20)
    t = T.tiling(B1, 4096, 4096, 4096, F16, l0c_size=32768).matmulTiling   # a tile sweep
    assert (t.baseM, t.baseN, t.dbL0C) == (128, 64, 1)       # 32 KiB: the squarest largest
    with pytest.raises(T.TilingError, match="L0C"):
        T.tiling(B1, 64, 64, 64, F16, l0c_size=512)
    with pytest.raises(ValueError, match="int8"):
        T.tiling(B1, 64, 64, 64, np.int8)
    with pytest.raises(ValueError, match="float32"):
        T.tiling(B1, 64, 64, 64, F16, BF16)                   # half in, bf16 out: a Cast
    assert npusim.get_soc("Ascend910A").cube_rate(F32) is None
    with pytest.raises(ValueError, match="Ascend910A"):
        T.tiling(npusim.get_soc("Ascend910A"), 64, 64, 64, F32)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 5000), n=st.integers(1, 5000), k=st.integers(1, 9000),
       dtype=st.sampled_from([F16, BF16, F32]), l0c=st.sampled_from([None, 1024, 8192, 65536]),
       batch=st.integers(1, 4))
def test_tiling_fits_the_memories(m, n, k, dtype, l0c, batch):
    """The documented capacities (docs/reference/hardware.md §1.6, §1.7): L0C holds dbL0C base
    tiles of float, L0A/L0B their double buffers, L1 (GetCoreMemSize) two chunks of A and B;
    fractal alignment; Mmad's m, n, k <= 4095; the blocks cover C."""
    td = T.tiling(B2, m, n, k, dtype, batch_shape=(batch,), l0c_size=l0c)
    t, isz = td.matmulTiling, dtype.itemsize
    assert t.baseM % 16 == 0 and t.baseN % 16 == 0 and t.baseK % 16 == 0
    assert t.baseM * t.baseN * 4 * t.dbL0C <= (l0c or B2.l0_c_size)
    assert t.baseM * t.baseK * isz * t.dbL0A <= B2.l0_a_size
    assert t.baseK * t.baseN * isz * t.dbL0B <= B2.l0_b_size
    assert (t.baseM * t.depthA1 + t.baseN * t.depthB1) * t.baseK * isz <= B2.l1_size - 256
    assert max(t.baseM, t.baseN, t.baseK) <= 4095
    assert td.mCnt * t.baseM >= m > (td.mCnt - 1) * t.baseM
    assert td.nCnt * t.baseN >= n > (td.nCnt - 1) * t.baseN
    assert 1 <= t.usedCoreNum == td.blockDim <= min(24, td.totalTiles)


# -- the kernel, bit for bit ---------------------------------------------------------------
@settings(max_examples=25, deadline=None,      # one runtime for all examples: each allocates
          suppress_health_check=[HealthCheck.function_scoped_fixture])   # its own tensors
@given(m=st.integers(1, 70), k=st.integers(1, 300), n=st.integers(1, 70),
       dtype=st.sampled_from(["half", "bf16", "float"]), trans_a=st.booleans(),
       trans_b=st.booleans(), seed=st.integers(0, 99))
def test_mm_is_the_cube_order_for_any_layout(stream, m, k, n, dtype, trans_a, trans_b, seed):
    """Any m, k, n (partial fractals, several L1 chunks for float), each dtype, the inputs
    as transposed views or not: the result is the cube's order exactly."""
    dt = {"half": F16, "bf16": BF16, "float": F32}[dtype]
    rng = np.random.default_rng(seed)
    a, b = rand(rng, (m, k), dt), rand(rng, (k, n), dt)
    at = transposed_view(a) if trans_a else to_device(a)
    bt = transposed_view(b) if trans_b else to_device(b)
    got, td, _, names = run("Mm", at, bt, (m, n), dt)
    assert (td.transposeA, td.transposeB) == (trans_a and m > 1 and k > 1,
                                              trans_b and k > 1 and n > 1)
    assert names == ["MatMulV3"]                       # views read in place: no Contiguous
    np.testing.assert_array_equal(got, cube_order(a, b, k0_of(dt), dt))


@pytest.mark.parametrize("trans_a", [False, True], ids=["A", "At"])
@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=["half", "bf16", "float"])
def test_a_block_of_one_row_is_not_gemv(stream, dtype, trans_a):
    """M = 257 in blocks of 64 rows leaves a last block of one row: Mmad runs it with m = 16
    (m = 1 would read A as a plain row, GEMV) and its other rows filled; exact, checker on."""
    rng = np.random.default_rng(6)
    a, b = rand(rng, (257, 40), dtype), rand(rng, (40, 20), dtype)
    got, td, _, _ = run("Mm", transposed_view(a) if trans_a else to_device(a), to_device(b),
                        (257, 20), dtype)
    assert td.transposeA == trans_a and td.matmulTiling.M % td.matmulTiling.baseM == 1
    np.testing.assert_array_equal(got, cube_order(a, b, k0_of(dtype), dtype))


@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=["half", "bf16", "float"])
def test_several_chunks_and_blocks_against_numpy_and_torch(stream, dtype):
    """A product of several base blocks and L1 chunks: the cube's order exactly, close to
    numpy's float64 product (the golden) and to torch.matmul."""
    rng = np.random.default_rng(7)
    a, b = rand(rng, (600, 700), dtype), rand(rng, (700, 400), dtype)
    got, td, ws, _ = run("Matmul", to_device(a), to_device(b), (600, 400), dtype)
    t = td.matmulTiling
    assert td.totalTiles > td.blockDim > 1 and t.Ka > 2 * t.stepKa * t.baseK   # rounds, chunks
    np.testing.assert_array_equal(got, cube_order(a, b, k0_of(dtype), dtype))
    tol = {F16: 2e-3, BF16: 1.6e-2, F32: 1e-5}[dtype]
    ref = matmul_golden(a, b).astype(np.float64)
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=tol, atol=tol * 8)
    torch = pytest.importorskip("torch", reason="torch is optional: numpy's product is checked")
    tt = torch.matmul(torch.from_numpy(a.astype(np.float64)), torch.from_numpy(
        b.astype(np.float64))).numpy()
    np.testing.assert_allclose(got.astype(np.float64), tt, rtol=tol, atol=tol * 8)


def test_rows_longer_than_src_d_value_are_copied_row_by_row(stream):
    """K = 65540 > Nd2NzParams.srcDValue's 65535: A (K innermost) and B^T are copied to L1
    one row per DataCopy (the Matmul API's intrinsicsCheck); the result is exact."""
    rng = np.random.default_rng(8)
    a, b = rand(rng, (2, 65540), F16), rand(rng, (65540, 16), F16)
    got, td, _, _ = run("Mm", to_device(a), transposed_view(b), (2, 16), F16)
    assert td.transposeB and not td.transposeA
    np.testing.assert_array_equal(got, cube_order(a, b, 16, F16))


BROADCAST = [((7,), (7,)), ((7,), (7, 5)), ((6, 7), (7,)), ((3, 6, 7), (7, 5)),
             ((3, 6, 7), (7,)), ((6, 7), (2, 7, 5)), ((7,), (2, 7, 5)),
             ((2, 1, 6, 7), (3, 7, 5)), ((1, 6, 7), (4, 7, 5))]


@pytest.mark.parametrize("sa,sb", BROADCAST, ids=[f"{a}@{b}" for a, b in BROADCAST])
def test_matmul_broadcasts_as_torch_matmul(stream, sa, sb):
    """aclnnMatmul's shape rules are numpy/torch matmul's (1-D operands, broadcast batch
    dims, self's batch folded into M with a 2-D mat2); each element the cube's order."""
    rng = np.random.default_rng(1)
    a, b = rand(rng, sa, F32), rand(rng, sb, F32)
    want = cube_order(a, b, 8, F32)
    assert want.shape == np.matmul(a, b).shape
    got, td, _, _ = run("Matmul", to_device(a), to_device(b), want.shape, F32)
    np.testing.assert_array_equal(got, want)
    if len(sa) >= 3 and len(sb) <= 2:
        assert td.batchShape == () and td.matmulTiling.M == int(np.prod(sa[:-1]))   # folded


def test_batch_matmul_with_broadcast_batch_and_transposed_views(stream):
    rng = np.random.default_rng(2)
    a, b = rand(rng, (3, 40, 24), F16), rand(rng, (1, 24, 36), F16)
    got, td, _, names = run("BatchMatMul", transposed_view(a), to_device(b), (3, 40, 36), F16)
    assert td.transposeA and td.bBatchStrides == (0,) and names == ["BatchMatMulV3"]
    np.testing.assert_array_equal(got, cube_order(a, b, 16, F16))


def test_strided_views_go_through_contiguous(stream):
    """A view that is neither contiguous nor a transpose (every other column, an offset) is
    gathered by Contiguous first; the result is the same."""
    rng = np.random.default_rng(3)
    a, b = rand(rng, (33, 40), F16), rand(rng, (40, 21), F16)
    got, _, ws, names = run("Mm", sliced_view(a), to_device(b), (33, 21), F16)
    assert names == ["Contiguous", "MatMulV3"] and ws > SYS_WORKSPACE
    np.testing.assert_array_equal(got, cube_order(a, b, 16, F16))


# -- cubeMathType, dtypes ---------------------------------------------------------------------
def test_cube_math_types(stream):
    """USE_FP16 computes FLOAT in half (two Casts, then the half cube writing float: one
    rounding); 1 and 3 (HFLOAT32) warn and compute float32; 4 is KEEP_DTYPE here; with half
    inputs 1, 2 and 4 change nothing."""
    rng = np.random.default_rng(4)
    a, b = rand(rng, (20, 50), F32), rand(rng, (50, 30), F32)
    keep, _, _, _ = run("Matmul", to_device(a), to_device(b), (20, 30), F32, cube=0)
    np.testing.assert_array_equal(keep, cube_order(a, b, 8, F32))
    fp16, td, _, names = run("Matmul", to_device(a), to_device(b), (20, 30), F32, cube=2)
    assert names == ["Cast", "Cast", "MatMulV3"] and td.aDtype == F16 and td.cDtype == F32
    np.testing.assert_array_equal(fp16, cube_order(a.astype(F16), b.astype(F16), 16, F32))
    for cube in (1, 3):
        with pytest.warns(mm.HF32NotModelledWarning, match="HFLOAT32"):
            got, _, _, _ = run("Mm", to_device(a), to_device(b), (20, 30), F32, cube=cube)
        np.testing.assert_array_equal(got, keep)
    got, _, _, _ = run("Mm", to_device(a), to_device(b), (20, 30), F32, cube=4)
    np.testing.assert_array_equal(got, keep)
    h, g = a.astype(F16), b.astype(F16)
    want = cube_order(h, g, 16, F16)
    for cube in (1, 2, 4):
        got, _, _, _ = run("Matmul", to_device(h), to_device(g), (20, 30), F16, cube=cube)
        np.testing.assert_array_equal(got, want)
    bf = a.astype(BF16), b.astype(BF16)        # BatchMatMul: USE_FP16 / USE_HF32 leave bf16
    for cube in (2, 3):
        got, td, _, _ = run("BatchMatMul", to_device(bf[0][None]), to_device(bf[1][None]),
                            (1, 20, 30), BF16, cube=cube)
        assert td.aDtype == BF16
        np.testing.assert_array_equal(got[0], cube_order(*bf, 16, BF16))


def test_mixed_and_output_dtypes(stream):
    """half with float promotes to float (a Cast of self); half in, float out is written
    by Fixpipe without rounding to half; float with cubeMathType 1 into half, and bf16
    into half, add a Cast of the result."""
    rng = np.random.default_rng(5)
    a16, b32 = rand(rng, (18, 40), F16), rand(rng, (40, 22), F32)
    got, td, _, names = run("Matmul", to_device(a16), to_device(b32), (18, 22), F32)
    assert names == ["Cast", "MatMulV3"] and td.aDtype == F32
    np.testing.assert_array_equal(got, cube_order(a16.astype(F32), b32, 8, F32))
    b16 = b32.astype(F16)
    got, td, _, names = run("Mm", to_device(a16), to_device(b16), (18, 22), F32)
    assert names == ["MatMulV3"] and td.cDtype == F32
    np.testing.assert_array_equal(got, cube_order(a16, b16, 16, F32))
    a32 = a16.astype(F32)
    with pytest.warns(mm.HF32NotModelledWarning):
        got, _, _, names = run("Matmul", to_device(a32), to_device(b32), (18, 22), F16, cube=1)
    assert names == ["MatMulV3", "Cast"]
    np.testing.assert_array_equal(got, cube_order(a32, b32, 8, F32).astype(F16))
    abf, bbf = a32.astype(BF16), b32.astype(BF16)
    got, td, _, names = run("Matmul", to_device(abf), to_device(bbf), (18, 22), F16)
    assert td.cDtype == BF16 and names[0] == "MatMulV3" and names[1:] == ["Cast"] * 2
    np.testing.assert_array_equal(got, cube_order(abf, bbf, 16, BF16).astype(F32).astype(F16))


# -- empty tensors --------------------------------------------------------------------------
def test_empty_out_launches_nothing_and_zero_k_fills_zeros(stream):
    first, second = API["Matmul"]
    out = to_device(np.zeros((0, 5), F32))
    ws, ex, ret = first(to_device(np.zeros((0, 4), F32)), to_device(np.ones((4, 5), F32)), out, 0)
    assert (ws, ret) == (0, 0) and ex.tiling is None
    n0 = len(runtime.current_device().profiles)
    assert second(0, 0, ex, None) == 0 and acl.rt.synchronize_device() == 0
    assert len(runtime.current_device().profiles) == n0
    out = to_device(np.full((3, 5), 7, F16))
    ws, ex, ret = first(to_device(np.zeros((3, 0), F16)), to_device(np.zeros((0, 5), F16)), out, 0)
    assert (ws, ret) == (0, 0)
    assert second(0, 0, ex, None) == 0 and acl.rt.synchronize_device() == 0
    np.testing.assert_array_equal(from_device(out, F16), np.zeros((3, 5), F16))


# -- errors -----------------------------------------------------------------------------------
def _t(shape, dtype=F32, value=1.0):
    return device(np.full(shape, value, dtype))


def _noncontiguous_out():
    t = to_device(np.zeros((8, 6), F32))
    return aclnn.aclCreateTensor([4, 6], aclnn.ACL_FLOAT, [12, 1], 0, aclnn.ACL_FORMAT_ND,
                                 [8, 6], t.tensor_data)


#: (api, self, mat2, out, cubeMathType, code, argument named, a word of the rule)
ERRORS = {
    "null self": ("Matmul", None, (8, 6), (4, 6), 0, 161001, "self", "null"),
    "null mat2": ("Mm", (4, 8), None, (4, 6), 0, 161001, "mat2", "null"),
    "null out": ("BatchMatMul", (2, 4, 8), (2, 8, 6), None, 0, 161001, "out", "null"),
    "int32 self": ("Matmul", ((4, 8), np.int32), (8, 6), (4, 6), 0, 161002, "self", "dtype"),
    "bf16 with half": ("Matmul", ((4, 8), BF16), ((8, 6), F16), (4, 6), 0, 161002, "self",
                       "promoted"),
    "bf16 with float": ("Mm", ((4, 8), BF16), (8, 6), (4, 6), 0, 161002, "mat2", "promoted"),
    "keep dtype float into half": ("Matmul", (4, 8), (8, 6), ((4, 6), F16), 0, 161002, "out",
                                   "KEEP_DTYPE"),
    "mm out not the promoted dtype": ("Mm", ((4, 8), F16), ((8, 6), F16), ((4, 6), BF16), 0,
                                      161002, "out", "promoted"),
    "cubeMathType 5": ("Matmul", (4, 8), (8, 6), (4, 6), 5, 161002, "cubeMathType",
                       "only support"),
    "cubeMathType -1": ("Mm", (4, 8), (8, 6), (4, 6), -1, 161002, "cubeMathType",
                        "only support"),
    "cubeMathType 4 for BatchMatMul": ("BatchMatMul", (1, 4, 8), (1, 8, 6), (1, 4, 6), 4,
                                       161002, "cubeMathType", "only support"),
    "cubeMathType float": ("Matmul", (4, 8), (8, 6), (4, 6), 1.0, 161002, "cubeMathType",
                           "int8_t"),
    "USE_FP16 with bf16": ("Matmul", ((4, 8), BF16), ((8, 6), BF16), ((4, 6), BF16), 2,
                           161002, "cubeMathType", "BFLOAT16"),
    "USE_HF32 with half": ("Mm", ((4, 8), F16), ((8, 6), F16), ((4, 6), F16), 3, 161002,
                           "cubeMathType", "FLOAT"),
    "mm 3-D self": ("Mm", (1, 4, 8), (8, 6), (1, 4, 6), 0, 161002, "self", "dimensions"),
    "bmm 2-D mat2": ("BatchMatMul", (1, 4, 8), (8, 6), (1, 4, 6), 0, 161002, "mat2",
                     "dimensions"),
    "0-D self": ("Matmul", (), (8, 6), (6,), 0, 161002, "self", "dimensions"),
    "9-D self": ("Matmul", (1,) * 7 + (4, 8), (8, 6), (1,) * 7 + (4, 6), 0, 161002, "self",
                 "dimensions"),
    "k differs": ("Matmul", (4, 8), (7, 6), (4, 6), 0, 161002, "mat2", "k-axis"),
    "batch does not broadcast": ("Matmul", (2, 4, 8), (3, 8, 6), (3, 4, 6), 0, 161002, "self",
                                 "Broadcast"),
    "bmm batch 2 and 3": ("BatchMatMul", (2, 4, 8), (3, 8, 6), (3, 4, 6), 0, 161002, "mat2",
                          "Broadcast"),
    "out shape": ("Matmul", (4, 8), (8, 6), (6, 4), 0, 161002, "out", "Shape"),
    "out not contiguous": ("Mm", (4, 8), (8, 6), "noncontiguous", 0, 161002, "out",
                           "contiguous"),
}


def _make(spec):
    if spec is None:
        return None
    if spec == "noncontiguous":
        return _noncontiguous_out()
    shape, dtype = spec if len(spec) == 2 and isinstance(spec[0], tuple) else (spec, F32)
    return _t(shape, dtype)


@pytest.mark.parametrize("case", list(ERRORS))
def test_first_phase_errors_name_the_argument_and_change_nothing(stream, case):
    api, sa, sb, so, cube, code, arg, word = ERRORS[case]
    tensors = [_make(s) for s in (sa, sb, so)]
    live = [(t, from_device(t, t.np_dtype)) for t in tensors if t is not None]
    ws, ex, ret = API[api][0](*tensors, cube)
    msg = acl.get_recent_err_msg()
    assert (ws, ex, ret) == (0, None, code), msg
    assert arg in msg and word in msg and f"aclnn{api}GetWorkspaceSize" in msg, msg
    assert acl.rt.synchronize_device() == 0
    assert_unchanged([t for t, _ in live], [h for _, h in live])


def test_unsupported_soc(tmp_path):
    init_runtime(tmp_path, "Ascend910A")
    try:
        assert acl.rt.set_device(0) == 0
        ws, ex, ret = mm.aclnnMatmulGetWorkspaceSize(_t((4, 8)), _t((8, 6)), _t((4, 6)), 0)
        assert ret == 161002 and "Ascend910A" in acl.get_recent_err_msg()
    finally:
        runtime.reset()


# -- the launch and the tools ------------------------------------------------------------------
def test_profile_of_a_cube_launch(stream):
    """The executor's one launch is an AIC_ONLY MatMulV3: the aic_* pipe times, blockDim the
    AICs used, the workspace the system workspace."""
    a, b = np.ones((512, 256), F16), np.ones((256, 384), F16)
    got, td, ws, names = run("Matmul", to_device(a), to_device(b), (512, 384), F16)
    assert np.all(got == 256) and ws == SYS_WORKSPACE and names == ["MatMulV3"]
    prof = runtime.current_device().profiles[-1]
    assert prof.block_dim == td.blockDim <= B1.cube_core_cnt
    assert {"aic_mac_time", "aic_mte1_time", "aic_fixpipe_time"} <= set(prof.pipe_time_us)
    assert prof.pipe_time_us["aic_mac_time"] > 0


def test_registry_point_reports_tflops_and_the_plot_draws_them(tmp_path):
    from npusim.plot import plot_sweep
    from npusim_tools import registry
    entry = registry.get("Matmul")
    rec = registry.run_point(entry, shape=(128, 96, 64), dtype="float16", soc="Ascend910B2")
    assert rec["check"] == "ok" and rec["block_dim"] >= 1
    assert rec["tflops"] == pytest.approx(2 * 128 * 96 * 64 / (rec["duration_us"] * 1e-6) / 1e12)
    tile = registry.run_point(entry, shape=(128, 96, 64), dtype="float16", soc="Ascend910B2",
                              tile=1024, check_golden=False)
    assert tile["tile_len"] == 1024 and tile["path"] == "kernel"
    recs = [dict(rec, cores=c, duration_us=rec["duration_us"] / c, tflops=rec["tflops"] * c)
            for c in (1, 2)]
    fig = plot_sweep(recs, tmp_path / "cores.png", x="cores")
    assert [ax.get_ylabel() for ax in fig.axes][-1] == "simulated TFLOPS"
