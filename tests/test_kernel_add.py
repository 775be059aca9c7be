"""Add on the simulator: the tiling's numbers, the recipe (order of operations, casts,
alpha), KernelAdd against the numpy golden and bit for bit against the documented order,
KernelBroadcastTo against numpy's broadcasting, and the UB Broadcast helper."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim.kernels.add import golden as G
from npusim.kernels.add import tiling as T
from npusim.kernels.add.kernel import add, broadcast_to
from npusim.ascendc.checker import CheckerConfig
from npusim import GlobalMemory, KernelError, get_soc, run_kernel
from npusim.ascendc import TBuf, TPipe, TPosition, float32, int32_t
from npusim.ascendc.broadcast import Broadcast
from npusim.ascendc.types import RoundMode

SOC = get_soc("Ascend910B1")
BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, I8, U8, I16, I32 = (np.dtype(t) for t in (np.float16, np.float32, np.int8, np.uint8,
                                                     np.int16, np.int32))
UB = SOC.ub_usable - SOC.ascendc_reserved_ub      # 196352 - 8192 = 188160 B


# -- helpers ----------------------------------------------------------------------------------
def _gm():
    return GlobalMemory(SOC.memory_size)


def _put(gm, arr):
    arr = np.ascontiguousarray(arr)
    p = gm.malloc(max(arr.nbytes, 1))
    gm.write(p, arr.view(np.uint8) if arr.dtype == np.bool_ else arr)
    return p


def run_add(a, b, alpha, out_dtype, soc=SOC):
    """Run KernelAdd on same-length 1-D a, b; return (out, profile, tiling)."""
    gm = _gm()
    out_dtype = np.dtype(out_dtype)
    td = T.tiling(soc, a.size, a.dtype, b.dtype, out_dtype, alpha)
    dev_out = T.device_dtype(out_dtype)
    z = gm.malloc(max(a.size * dev_out.itemsize, 1))
    prof = run_kernel(add, td.blockDim, (_put(gm, a), _put(gm, b), z, 0, td), soc=soc, gm=gm)
    out = np.frombuffer(gm.read(z, a.size * dev_out.itemsize), dev_out).copy()
    return (out.astype(bool) if out_dtype == np.bool_ else out), prof, td


def make(n, dtype, seed, scale=50.0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi + 1, n).astype(dtype)
    return (rng.standard_normal(n) * scale).astype(dtype)


# -- tiling numbers ------------------------------------------------------------------------------
def test_add_tiling_float32_axpy():
    td = T.tiling(SOC, 48 * 1024 + 37, F32, F32, F32, np.float32(1.2))
    # blockDim = min(48, ceil(49189/1024) = 49) = 48; blockFactor = ceil(49189/48) = 1025
    # aligned up to 512 B / 4 B = 128 -> 1152; blockDim = ceil(49189/1152) = 43;
    # tail = 49189 - 42*1152 = 805. UB: 2 x (4+4+4) B per element = 24 -> 188160 // 24 = 7840
    # -> 7808 (multiple of 64), capped by the block: 1152.
    assert (td.blockDim, td.blockFactor, td.tailBlockFactor, td.ubFactor) == (43, 1152, 805, 1152)
    assert td.opType == "Axpy" and td.workspaceSize == 0 and td.scratchNum == 0


def test_add_tiling_large_half():
    td = T.tiling(SOC, 10**7, F16, F16, F16, np.float32(1.0))
    # ceil(1e7/48) = 208334 -> 208384 (multiple of 256); 48 blocks, tail 1e7 - 47*208384;
    # UB: 2 x 6 B per element -> 188160 // 12 = 15680.
    assert (td.blockDim, td.blockFactor, td.tailBlockFactor) == (48, 208384, 205952)
    assert td.ubFactor == 15680 and td.opType == "Add"


def test_add_tiling_bf16_mul_path_scratch():
    td = T.tiling(SOC, 10**6, BF16, BF16, BF16, np.float32(-0.5))
    # 2 x (2+2+2) queue bytes + 3 fp32 cast buffers + 1 scratch (the bf16 product) = 28 B
    assert td.scratchNum == 1 and td.ubFactor == UB // 28 // 64 * 64 == 6720
    assert td.opType == "Mul+Add" and td.productDtype == BF16 and td.alpha == np.float32(-0.5)


def test_add_tiling_small_and_empty_and_other_socs():
    td = T.tiling(SOC, 1, F32, F32, F32)
    assert (td.blockDim, td.blockFactor, td.tailBlockFactor, td.ubFactor) == (1, 128, 1, 128)
    assert T.tiling(SOC, 0, F32, F32, F32).blockDim == 0
    assert T.tiling(get_soc("Ascend910B4"), 10**6, F32, F32, F32).blockDim == 40
    a910 = T.tiling(get_soc("Ascend910A"), 10**6, F32, F32, F32)
    assert a910.blockDim == 32 and a910.ubFactor == (262144 - 8192) // 24 // 64 * 64


@settings(max_examples=100, deadline=None)
@given(total=st.integers(1, 3_000_000), cores=st.sampled_from([1, 7, 40, 48]),
       dtype=st.sampled_from([F16, F32, BF16, I32]))
def test_add_split_covers_every_element_once(total, cores, dtype):
    td = T.tiling(SOC, total, dtype, dtype, dtype, core_num=cores)
    assert 1 <= td.blockDim <= min(cores, -(-total // T.BLOCK_MIN))
    assert (td.blockDim - 1) * td.blockFactor + td.tailBlockFactor == total
    assert 0 < td.tailBlockFactor <= td.blockFactor
    assert (td.blockFactor * dtype.itemsize) % 512 == 0 and td.ubFactor % 64 == 0


# -- recipe ------------------------------------------------------------------------------------
def test_promotion_tables_agree():
    dts = [np.dtype(np.bool_), U8, I8, I16, I32, np.dtype(np.int64), F16, BF16, F32]
    for a in dts:
        for b in dts:
            assert T.promote_types(a, b) == G.promote_types(a, b), (a, b)
    assert T.promote_types(U8, I8) == I16 and T.promote_types(I32, F16) == F16
    assert T.promote_types(F16, BF16) == F32


def test_cast_paths_use_the_vector_cast_table():
    assert T.cast_path(F32, F32) == ()
    assert T.cast_path(I32, BF16) == ((F32, RoundMode.CAST_NONE), (BF16, RoundMode.CAST_RINT))
    assert T.cast_path(F32, F16) == ((F16, RoundMode.CAST_RINT),)
    assert T.cast_path(BF16, F16) == ((F32, RoundMode.CAST_NONE), (F16, RoundMode.CAST_RINT))
    assert T.cast_path(F32, I32) == ((I32, RoundMode.CAST_TRUNC),)
    assert T.cast_path(I8, F16) == ((F16, RoundMode.CAST_NONE),)   # s82f16 (§2.1)
    assert T.cast_path(I8, F32) == ((F16, RoundMode.CAST_NONE), (F32, RoundMode.CAST_NONE))


@pytest.mark.parametrize("dtype,alpha,op,compute,alpha_c", [
    (F32, 1.0, "Add", F32, None), (F32, 1.2, "Axpy", F32, np.float32(1.2)),
    (F16, 1.2, "Axpy", F16, np.float16(1.2)), (BF16, 1.0, "Add", F32, None),
    (BF16, 1.2, "Mul+Add", F32, np.float32(BF16.type(1.2))), (I32, 1, "Add", I32, None),
    (I32, 3, "Axpy", F32, np.float32(3)), (I16, 70000, "Mul+Add", I16, np.int16(70000 - 65536)),
])
def test_recipe_per_dtype(dtype, alpha, op, compute, alpha_c):
    r = T.add_recipe(dtype, dtype, dtype, np.float32(alpha) if isinstance(alpha, float) else np.int64(alpha))
    assert (r.opType, r.computeDtype) == (op, compute)
    assert r.alpha == alpha_c and (r.alpha is None or r.alpha.dtype == compute)


def test_recipe_special_cases():
    assert T.alpha_is_one(np.float32(np.nan))            # !(a > 1 || a < 1), as in CANN
    mixed = T.add_recipe(F16, F32, F32, np.float32(1))
    assert mixed.opType == "Add" and mixed.selfCasts == ((F32, RoundMode.CAST_NONE),)
    i32 = T.add_recipe(I32, I32, I32, np.int64(2))
    assert i32.outCasts == ((I32, RoundMode.CAST_TRUNC),)     # f322s32z
    promo = T.add_recipe(I32, F16, F16, np.float32(1))
    assert promo.computeDtype == F16 and promo.selfCasts == ((F16, RoundMode.CAST_NONE),)
    for dt in (np.int64, np.float64, np.complex64):
        with pytest.raises(T.NotSupportedOnSimulator):
            T.add_recipe(dt, dt, dt, np.float32(1))
    i8 = T.add_recipe(I8, I8, I8, np.int64(1))             # through half, as the TBE kernel
    assert i8.computeDtype == F16 and i8.selfCasts == ((F16, RoundMode.CAST_NONE),)


# -- KernelAdd against the golden and the documented order ------------------------------------
def documented_order(a, b, alpha, dtype):
    """The kernel's documented order in numpy (tiling module docstring): Muls then Add in the
    compute dtype, bf16 via fp32 with the product rounded to bf16, int32 via fp32 + trunc."""
    dtype = np.dtype(dtype)
    one = T.alpha_is_one(np.float32(alpha))
    if dtype == BF16:
        x, y = a.astype(F32), b.astype(F32)
        if not one:
            y = (y * np.float32(BF16.type(np.float32(alpha)))).astype(BF16).astype(F32)
        return (x + y).astype(BF16)
    if dtype == I32 and not one:
        r = a.astype(F32) + np.float32(alpha) * b.astype(F32)
        return np.trunc(r).astype(I32)
    if one:
        return (a + b).astype(dtype)
    return (a + dtype.type(np.float32(alpha)) * b).astype(dtype)


SIZES = [1, 37, 4133, 48 * 1024 + 37]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype,alpha", [(F32, 1.0), (F32, 1.2), (F32, -0.5), (F16, 1.0),
                                         (F16, 1.2), (F16, -0.5), (BF16, 1.0), (BF16, 1.2),
                                         (BF16, -0.5), (I32, 1), (I32, 3), (I32, -2),
                                         (I16, 1), (I16, 3)])
def test_kernel_matches_documented_order_and_golden(n, dtype, alpha):
    a, b = make(n, dtype, seed=n), make(n, dtype, seed=n + 1)
    alpha_s = np.float32(alpha) if isinstance(alpha, float) else np.int64(alpha)
    out, _, _ = run_add(a, b, alpha_s, dtype)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, documented_order(a, b, alpha, dtype))
    gold = G.add_golden(a, b, alpha_s, dtype)
    if dtype.kind in "iu":
        np.testing.assert_array_equal(out, gold)
    else:
        eps = {F32: 2.0 ** -23, F16: 2.0 ** -10, BF16: 2.0 ** -7}[dtype]
        scale = np.abs(a.astype(np.float64)) + abs(alpha) * np.abs(b.astype(np.float64))
        # alpha rounded to the compute dtype (fp16, bf16) + one rounding per instruction
        err = np.abs(out.astype(np.float64) - gold.astype(np.float64))
        assert np.all(err <= 3 * eps * scale + 1e-30), float(np.max(err / (scale + 1e-30)))


def test_half_rounds_each_instruction():
    # 2049 is not a half; 1024 + 1025 rounds, and Muls rounds alpha to half first
    a = np.array([1024, 2048, 0.1], F16)
    b = np.array([1025, 1, 3], F16)
    out, _, _ = run_add(a, b, np.float32(1.0), F16)
    np.testing.assert_array_equal(out, np.array([2048, 2048, np.float16(0.1) + np.float16(3)], F16))
    # alpha is rounded to half (1.2001953125) before Muls: 3 * that = 3.6005859375 is a tie
    # between halves and rounds to even, 3.6015625; with alpha exact it would be 3.599609375
    out, _, _ = run_add(np.array([0], F16), np.array([3], F16), np.float32(1.2), F16)
    assert out[0] == np.float16(3.6015625)
    assert G.add_golden(np.array([0], F16), np.array([3], F16), np.float32(1.2))[0] == np.float16(3.599609375)


def test_int32_axpy_goes_through_float32():
    # 16777217 is not a float32: Axpy's fp32 path (operators' TBE axpy_compute) loses it,
    # the alpha == 1 Add is exact int32 arithmetic that wraps.
    a = np.array([16777217, 2**31 - 1, -7], I32)
    b = np.array([1, 1, 2], I32)
    out, _, _ = run_add(a, b, np.int64(2), I32)
    np.testing.assert_array_equal(out, [16777218, 2**31 - 1, -3])   # fp32 rounds, saturates
    out, _, _ = run_add(a, b, np.int64(1), I32)
    np.testing.assert_array_equal(out, [16777218, -2**31, -5])      # exact, wraps


def test_bf16_rounds_product_then_sum():
    a = np.array([3.0], BF16)
    b = np.array([1.6796875], BF16)
    out, _, _ = run_add(a, b, np.float32(3.0), BF16)
    # the product 5.0390625 is a tie between bf16 5.03125 and 5.0625 and rounds to even,
    # 5.03125; 3 + 5.03125 = 8.03125 is again a tie and rounds to 8.0. Rounded once (the
    # golden), 8.0390625 would give 8.0625.
    assert out[0] == BF16.type(8.0)
    assert G.add_golden(a, b, np.float32(3.0))[0] == BF16.type(8.0625)


@pytest.mark.parametrize("xs,ys,zs,alpha", [(F16, F32, F32, 1.0), (F32, BF16, F32, 1.0),
                                            (F16, F32, F16, 1.2), (I32, F16, F16, 1.0),
                                            (I32, I32, F32, 1.0), (I32, BF16, BF16, 1.0),
                                            (F32, F32, BF16, -0.5), (BF16, BF16, F16, 1.0)])
def test_mixed_dtypes_and_out_casts(xs, ys, zs, alpha):
    a, b = make(3001, xs, 5), make(3001, ys, 6)
    out, _, td = run_add(a, b, np.float32(alpha), zs)
    gold = G.add_golden(a, b, np.float32(alpha), zs).astype(np.float64)
    np.testing.assert_allclose(out.astype(np.float64), gold, rtol=2e-2 if BF16 in (xs, ys, zs)
                               else 2e-3, atol=0.5)


def test_in_place_and_profile():
    gm = _gm()
    n = 20000
    a, b = make(n, F32, 1), make(n, F32, 2)
    pa, pb = _put(gm, a), _put(gm, b)
    td = T.tiling(SOC, n, F32, F32, F32, np.float32(2.0))
    prof = run_kernel(add, td.blockDim, (pa, pb, pa, 0, td), soc=SOC, gm=gm)
    np.testing.assert_array_equal(np.frombuffer(gm.read(pa, a.nbytes), F32), a + np.float32(2) * b)
    assert prof.block_dim == td.blockDim == 20 and prof.bytes_read == 2 * n * 4
    assert prof.bytes_written == n * 4


@pytest.mark.parametrize("dtype,alpha,out_dtype", [
    (I8, 1, I8), (I8, 3, I8), (I8, -128, I8), (U8, 1, U8), (U8, -1, U8), (U8, 200, U8),
    (np.bool_, 1, np.bool_), (np.bool_, 0, np.bool_), (np.bool_, True, F16), (I8, 1, F32)])
def test_8bit_and_bool_wrap_as_the_tbe_kernel(dtype, alpha, out_dtype):
    n = 5003
    rng = np.random.default_rng(3)
    if np.dtype(dtype) == np.bool_:
        a, b = (rng.integers(0, 2, n).astype(bool) for _ in range(2))
    else:
        info = np.iinfo(dtype)
        a, b = (rng.integers(info.min, info.max + 1, n).astype(dtype) for _ in range(2))
    alpha_s = np.bool_(alpha) if isinstance(alpha, bool) else np.int64(alpha)
    out, _, td = run_add(a, b, alpha_s, out_dtype)
    np.testing.assert_array_equal(out, G.add_golden(a, b, alpha_s, out_dtype))
    assert td.wrap == {I8: "int8", U8: "uint8"}.get(np.dtype(dtype), "bool")


# -- KernelBroadcastTo ----------------------------------------------------------------------------
def run_broadcast(base, in_shape, strides, out_shape, offset=0):
    gm = _gm()
    td = T.broadcast_to_tiling(SOC, out_shape, in_shape, strides, base.dtype)
    n = int(np.prod(out_shape))
    y = gm.malloc(n * base.itemsize)
    run_kernel(broadcast_to, td.blockDim, (_put(gm, base) + offset * base.itemsize, y, 0, td),
               soc=SOC, gm=gm)
    out = np.frombuffer(gm.read(y, n * base.itemsize), base.dtype).reshape(out_shape)
    view = np.lib.stride_tricks.as_strided(base[offset:], in_shape,
                                           [s * base.itemsize for s in strides])
    return out, np.broadcast_to(view, out_shape), td


@pytest.mark.parametrize("in_shape,strides,out_shape,mode", [
    ((4, 1), (1, 1), (4, 5), T.SPLAT),                    # [4,1] + [1,5]
    ((1, 5), (5, 1), (4, 5), T.ROW_BROADCAST),
    ((3,), (1,), (2, 3), T.ROW_BROADCAST),                # [3] + [2,3]
    ((1,), (1,), (7, 9), T.SPLAT),                        # scalar-shaped [1]
    ((), (), (3, 4), T.SPLAT),                            # 0-d
    ((2, 1, 3, 1), (3, 3, 1, 1), (2, 4, 3, 5), T.SPLAT),
    ((3, 4), (1, 3), (3, 4), T.ROWS),                     # transposed: rows of one element
    ((5, 6), (3, 1), (5, 6), T.ROWS_EACH),                # overlapping rows
    ((300, 1), (7, 1), (300, 70), T.SPLAT_EACH),          # strided column, broadcast
    ((3, 1), (1, 1), (3, 50000), T.SPLAT),                # column tiles
    ((1, 30000), (30000, 1), (40, 30000), T.ROW_BROADCAST),
    ((6, 1000), (1200, 1), (6, 1000), T.ROWS),            # rows with gaps
])
def test_broadcast_kernel_matches_numpy(in_shape, strides, out_shape, mode):
    base = np.arange(400000, dtype=np.float32)
    out, expect, td = run_broadcast(base, in_shape, strides, out_shape, offset=3)
    assert td.mode == mode
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("dtype", [F16, I32, BF16, I16])
def test_broadcast_kernel_other_dtypes(dtype):
    base = (np.arange(5000) % 251).astype(dtype)
    for in_shape, strides, out_shape in [((4, 1), (1, 1), (4, 37)), ((37,), (1,), (5, 37)),
                                         ((7, 9), (1, 7), (7, 9))]:
        out, expect, _ = run_broadcast(base, in_shape, strides, out_shape)
        np.testing.assert_array_equal(out, expect)


def test_broadcast_tiling_numbers():
    t = T.broadcast_to_tiling(SOC, (4, 5), (4, 1), (1, 1), F32)
    # buffer = 188160 // 4 = 47040 B; a row of 5 fp32 pads to 8 elements (32 B)
    assert (t.bufferBytes, t.rowNum, t.colNum, t.tileCols, t.tileColsPad) == (47040, 4, 5, 5, 8)
    assert (t.tileRows, t.taskNum, t.blockDim) == (4, 1, 1)
    t = T.broadcast_to_tiling(SOC, (3, 50000), (3, 1), (1, 1), F32)
    # columns per tile: 47040 // 32 * 8 = 11760 (the whole buffer) -> 5 column tiles of one
    # row each; 3 row tiles -> 15 tasks on 15 cores
    assert (t.tileCols, t.tileRows, t.colTiles, t.rowTiles) == (11760, 1, 5, 3)
    assert (t.taskNum, t.blockDim, t.coreTaskNum) == (15, 15, 1)
    t = T.broadcast_to_tiling(SOC, (10000, 3), (3,), (1,), F32)
    # rows of 3 pad to 8: 47040 // 32 = 1470 rows per tile -> 7 tiles
    assert (t.mode, t.tileRows, t.rowTiles, t.frontCoreNum, t.coreTaskNum) == (
        T.ROW_BROADCAST, 1470, 7, 7, 1)
    assert T.coalesce((2, 3, 4), (12, 4, 1)) == ((24,), (1,))
    assert T.needs_gather((2, 3), (3, 1), (2, 3)) is False
    assert T.needs_gather((3,), (1,), (2, 3)) and T.needs_gather((2, 3), (1, 2), (2, 3))


# -- the UB Broadcast helper -------------------------------------------------------------------
#: these kernels fill UB from the host (or not at all), which the checker cannot see
HOST_FILLED = CheckerConfig(enabled=False)

def _broadcast_kernel(dst_shape, src_shape, dtype, src_vals, out, **kw):
    def kernel():
        pipe = TPipe()
        sb, db = TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)
        pipe.InitBuffer(sb, 4096)
        pipe.InitBuffer(db, 16384)
        src, dst = sb.Get(dtype), db.Get(dtype)
        src.elements(src_vals.size, "test")[...] = src_vals
        Broadcast(dst, src, dst_shape, src_shape, **kw)
        out.append(dst.numpy()[:int(np.prod(dst_shape))].copy())
    return kernel


@pytest.mark.parametrize("dst_shape,src_shape,dtype", [([2, 16], [2, 1], float32),
                                                      ([3, 5], [3, 1], F16),
                                                      ([4, 7], [1, 7], int32_t), ([9], [1], F16)])
def test_ub_broadcast(dst_shape, src_shape, dtype):
    src = (np.arange(int(np.prod(src_shape))) + 1).astype(dtype)
    out = []
    prof = run_kernel(_broadcast_kernel(dst_shape, src_shape, dtype, src, out), 1, (),
                      soc=SOC, gm=_gm(), checks=HOST_FILLED)
    np.testing.assert_array_equal(out[0], np.broadcast_to(src.reshape(src_shape), dst_shape).ravel())
    assert prof.pipe_time_us["aiv_vec_time"] > 0


def test_ub_broadcast_costs_the_documented_steps():
    # [m,1] -> [m,k] with k not 32 B aligned: Brcb + Copy + GatherMask (3 instructions)
    from npusim.ascendc import core as _core
    from npusim.ascendc.types import PIPE_S
    recs = []

    def kernel():
        pipe = TPipe()
        sb, db = TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)
        pipe.InitBuffer(sb, 64)
        pipe.InitBuffer(db, 1024)
        Broadcast(db.Get(float32), sb.Get(float32), [4, 5], [4, 1])
        Broadcast(db.Get(float32), sb.Get(float32), [4, 8], [4, 1])
        # the vector instructions (not the scalar unit's entry and issue work on PIPE_S)
        recs.extend(r[5] for r in _core.current_core().records if r[1] != PIPE_S)
    run_kernel(kernel, 1, (), soc=SOC, gm=_gm(), checks=HOST_FILLED)
    assert recs == ["Broadcast.Brcb", "Broadcast.Copy", "Broadcast.GatherMask",
                    "Broadcast.Brcb", "Broadcast.Copy"]


@pytest.mark.parametrize("dst_shape,src_shape,kw,match", [
    ([4, 5], [2, 1], {}, "does not broadcast"), ([4, 5], [1, 1], {}, "along one axis"),
    ([4, 5], [4], {}, "ranks"), ([4, 5], [4, 1], {"axis": 0}, "axis"),
    ([2, 2, 2], [1, 2, 2], {}, "1 or 2")])
def test_ub_broadcast_rejects_bad_shapes(dst_shape, src_shape, kw, match):
    src = np.ones(int(np.prod(src_shape)), np.float32)
    with pytest.raises(KernelError, match=match):
        run_kernel(_broadcast_kernel(dst_shape, src_shape, float32, src, [], **kw), 1, (),
                   soc=SOC, gm=_gm())


def test_ub_broadcast_rejects_overlap_and_mixed_dtypes():
    def overlap():
        pipe = TPipe()
        b = TBuf(TPosition.VECCALC)
        pipe.InitBuffer(b, 1024)
        t = b.Get(float32)
        Broadcast(t[8], t, [16, 8], [16, 1])      # src bytes [0, 64), dst from 32

    def mixed():
        pipe = TPipe()
        sb, db = TBuf(TPosition.VECCALC), TBuf(TPosition.VECCALC)
        pipe.InitBuffer(sb, 64)
        pipe.InitBuffer(db, 1024)
        Broadcast(db.Get(F16), sb.Get(float32), [2, 8], [2, 1])
    with pytest.raises(KernelError, match="overlap"):
        run_kernel(overlap, 1, (), soc=SOC, gm=_gm())
    with pytest.raises(KernelError, match="mix"):
        run_kernel(mixed, 1, (), soc=SOC, gm=_gm())
