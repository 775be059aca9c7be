"""ApplyAddSign: the Compare/Select instructions it is built on, its tiling, its kernel
against the documented order and the golden (sign(0) = sign(NaN) = 0), and
aclnnApplyAddSign through the host API: the seed's example, dtypes, ranks, every
validation error (status, message naming the argument, nothing changed) and the
second phase (docs/reference/operators.md §3, seed mindspore.ops.ApplyAddSign)."""

import ml_dtypes
import numpy as np
import pytest

import aclnn
from aclnn import acl, runtime
from aclnn.ops.apply_add_sign import aclnnApplyAddSign, aclnnApplyAddSignGetWorkspaceSize
from npusim.kernels.apply_add_sign.golden import apply_add_sign_golden, sign_cpu
from npusim.kernels.apply_add_sign.kernel import apply_add_sign
from npusim.kernels.apply_add_sign.tiling import tiling, ub_tile_length
from npusim.ascendc.checker import CheckerConfig
from npusim import (AlignmentError, DtypeError, GlobalMemory, UbError, get_soc, run_kernel)
from npusim.ascendc import PIPE_V, TBuf, TPipe, float32, half, uint8_t
from npusim.ascendc import core as _core
from npusim.ascendc.compare import CMPMODE, SELMODE, Compare, CompareScalar, Select

from aclnn_helpers import from_device, init_runtime, run_example, run_two_phase, to_device

SOC = get_soc("Ascend910B1")
SEED_SCALARS = (0.001, 1.0, 0.99, 0.9)        # lr, alpha, sign_decay, beta


# -- the instructions: CompareScalar / Compare / Select ----------------------------------
def _run_vec(body, reserve_ub=True, soc=SOC):
    """Run ``body(buf)`` in a one-block kernel with a 64 KiB TBuf; return its records."""
    out = {}

    def kernel():
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 65536)
        body(buf)
        out["records"] = list(_core.current_core().records)

    # the bodies fill UB from the host, which the checker cannot see: no uninitialised-read check
    run_kernel(kernel, 1, (), soc=soc, gm=GlobalMemory(soc.memory_size), reserve_ub=reserve_ub,
               checks=CheckerConfig(enabled=False))
    return out["records"]


def test_compare_scalar_bits_little_endian_and_nan_false():
    x = np.array([1.0, -2.0, 0.0, np.nan, 3.0, -0.0, np.inf, -np.inf] * 8, np.float32)   # 64 = one repeat
    got = {}

    def body(buf):
        src = buf.Get(float32, 64)
        src.elements(64, "test")[:] = x
        mask = buf.GetWithOffset(8, 256, uint8_t)
        for mode in CMPMODE:
            CompareScalar(mask, src, 0.0, mode, 64)
            got[mode] = mask.numpy().copy()

    _run_vec(body)
    # element i -> bit i % 8 of byte i // 8; NaN compares false except NE
    expect = {CMPMODE.GT: 0b01010001, CMPMODE.LT: 0b10000010, CMPMODE.EQ: 0b00100100,
              CMPMODE.GE: 0b01110101, CMPMODE.LE: 0b10100110, CMPMODE.NE: 0b11011011}
    for mode, byte in expect.items():
        np.testing.assert_array_equal(got[mode], np.full(8, byte, np.uint8), err_msg=mode.name)


def test_compare_tensor_tensor_half():
    a = np.arange(128, dtype=np.float16)
    b = np.full(128, 64, np.float16)
    got = {}

    def body(buf):
        t0, t1 = buf.Get(half, 128), buf.GetWithOffset(128, 256, half)
        t0.elements(128, "t")[:] = a
        t1.elements(128, "t")[:] = b
        mask = buf.GetWithOffset(16, 512, uint8_t)
        Compare(mask, t0, t1, CMPMODE.GE, 128)
        got["m"] = mask.numpy().copy()

    _run_vec(body)
    np.testing.assert_array_equal(np.unpackbits(got["m"], bitorder="little").astype(bool), a >= b)


def test_compare_count_must_fill_whole_repeats():
    def float_60(buf):
        CompareScalar(buf.GetWithOffset(8, 1024, uint8_t), buf.Get(float32, 64), 0.0, CMPMODE.GT, 60)

    def half_64(buf):
        CompareScalar(buf.GetWithOffset(16, 1024, uint8_t), buf.Get(half, 128), 0.0, CMPMODE.GT, 64)

    with pytest.raises(AlignmentError, match="256 B"):
        _run_vec(float_60)
    with pytest.raises(AlignmentError, match="256 B"):
        _run_vec(half_64)         # 64 x 2 B = 128 B: half a repeat
    _run_vec(lambda buf: CompareScalar(buf.GetWithOffset(16, 1024, uint8_t), buf.Get(half, 128),
                                       0.0, CMPMODE.GT, 128))


def test_compare_dtype_rules():
    def int32_gt(buf):
        CompareScalar(buf.GetWithOffset(8, 1024, uint8_t), buf.Get(np.int32, 64), 0, CMPMODE.GT, 64)

    def bf16(buf):
        CompareScalar(buf.GetWithOffset(16, 1024, uint8_t), buf.Get(ml_dtypes.bfloat16, 128),
                      0.0, CMPMODE.GT, 128)

    def float_dst(buf):
        CompareScalar(buf.GetWithOffset(64, 1024, float32), buf.Get(float32, 64), 0.0, CMPMODE.GT, 64)

    with pytest.raises(DtypeError, match="only CMPMODE.EQ"):
        _run_vec(int32_gt)
    with pytest.raises(DtypeError, match="bfloat16"):
        _run_vec(bf16)
    with pytest.raises(DtypeError, match="uint8_t"):
        _run_vec(float_dst)
    _run_vec(lambda buf: CompareScalar(buf.GetWithOffset(8, 1024, uint8_t), buf.Get(np.int32, 64),
                                       0, CMPMODE.EQ, 64))


def test_select_modes():
    a = np.arange(1, 201, dtype=np.float32)            # 200 elements: 3 repeats + 8
    b = -a
    bits = np.random.default_rng(0).integers(0, 2, 256).astype(bool)
    got = {}

    def body(buf):
        s0, s1 = buf.Get(float32, 256), buf.GetWithOffset(256, 1024, float32)
        s0.elements(200, "t")[:] = a
        s1.elements(200, "t")[:] = b
        mask = buf.GetWithOffset(32, 2048, uint8_t)
        mask.elements(32, "t")[:] = np.packbits(bits, bitorder="little")
        for mode in SELMODE:
            dst = buf.GetWithOffset(256, 4096 + 1024 * mode, float32)
            other = 7.5 if mode == SELMODE.VSEL_TENSOR_SCALAR_MODE else s1
            Select(dst, mask, s0, other, mode, 200)
            got[mode] = dst.elements(200, "t").copy()

    _run_vec(body)
    np.testing.assert_array_equal(got[SELMODE.VSEL_TENSOR_TENSOR_MODE], np.where(bits[:200], a, b))
    np.testing.assert_array_equal(got[SELMODE.VSEL_TENSOR_SCALAR_MODE], np.where(bits[:200], a, 7.5))
    # mode 0: the first 64 bits (256 B of float) serve every repeat
    np.testing.assert_array_equal(got[SELMODE.VSEL_CMPMASK_SPR],
                                  np.where(np.resize(bits[:64], 200), a, b))


def test_select_scalar_mode_needs_the_ascendc_ub_reserve():
    def body(buf):
        Select(buf.Get(half, 128), buf.GetWithOffset(16, 1024, uint8_t),
               buf.GetWithOffset(128, 2048, half), 0.0, SELMODE.VSEL_TENSOR_SCALAR_MODE, 128)

    _run_vec(body)
    with pytest.raises(UbError, match="8 KiB"):
        _run_vec(body, reserve_ub=False)
    # mode 0 needs no scratch; the rule is the A2/A3 one (310P has no such note)
    _run_vec(lambda buf: Select(buf.Get(half, 128), buf.GetWithOffset(16, 1024, uint8_t),
                                buf.GetWithOffset(128, 2048, half), buf.GetWithOffset(128, 4096, half),
                                SELMODE.VSEL_CMPMASK_SPR, 128), reserve_ub=False)
    _run_vec(body, reserve_ub=False, soc=get_soc("Ascend310P3"))


def test_select_argument_kinds():
    def scalar_in_tensor_mode(buf):
        Select(buf.Get(half, 128), buf.GetWithOffset(16, 1024, uint8_t),
               buf.GetWithOffset(128, 2048, half), 1.0, SELMODE.VSEL_TENSOR_TENSOR_MODE, 128)

    def mixed(buf):
        Select(buf.Get(half, 128), buf.GetWithOffset(16, 1024, uint8_t),
               buf.GetWithOffset(64, 2048, float32), 1.0, SELMODE.VSEL_TENSOR_SCALAR_MODE, 64)

    with pytest.raises(DtypeError, match="LocalTensor"):
        _run_vec(scalar_in_tensor_mode)
    with pytest.raises(DtypeError, match="mix"):
        _run_vec(mixed)


def test_compare_and_select_cost_their_published_rates():
    # hardware.md §2.1: Compare/Compares/Select 128 half or 64 float elements per cycle
    def body(buf):
        mask = buf.GetWithOffset(512, 32768, uint8_t)
        CompareScalar(mask, buf.Get(float32, 4096), 0.0, CMPMODE.GT, 4096)
        CompareScalar(mask, buf.Get(half, 4096), 0.0, CMPMODE.LT, 4096)
        Select(buf.Get(half, 4096), mask, buf.Get(half, 4096), 0.0, SELMODE.VSEL_TENSOR_SCALAR_MODE, 4096)
        Select(buf.Get(float32, 4096), mask, buf.Get(float32, 4096), 0.0,
               SELMODE.VSEL_TENSOR_SCALAR_MODE, 4096)

    recs = [r for r in _run_vec(body) if r[5] in ("CompareScalar", "Select")]
    head = SOC.vec_head_cycles
    # plus the read-write conflicts of the mask's writes (bank id 0, bank group k // 4 for
    # float, k // 2 for half, in repeat k) with the source's reads in the same bank (groups
    # 0-7 in even repeats, 8-15 in odd ones): 32 of 64 float repeats, 16 of 32 half ones
    assert [r[2] for r in recs] == [head + 64 + 32, head + 32 + 16, head + 32, head + 64]
    assert all(r[1] == PIPE_V for r in recs)


# -- tiling --------------------------------------------------------------------------------
def test_ub_tile_length_hand_computed():
    # 910B: 196352 - 8192 = 188160 B; 13 slots of T + 1 mask bit per element
    assert ub_tile_length(188160, np.float32) == 3584     # 188160 / 52.125 = 3609 -> 56 x 64
    assert ub_tile_length(188160, np.float16) == 7168     # 188160 / 26.125 = 7202 -> 56 x 128
    assert 52 * 3584 + 448 <= 188160 < 52 * 3648 + 456


@pytest.mark.parametrize("n,dtype,expect", [
    # blocks of 32 B: 5000 fp32 = 625 blocks on 48 cores: 1 core of 14 blocks, 47 of 13
    (5000, np.float32, dict(blockDim=48, formerNum=1, formerLength=112, tailLength=104,
                            lastCoreLength=104, tileLength=128)),
    # 100 fp16 = 7 blocks of 16 (last one holds 4): 7 cores
    (100, np.float16, dict(blockDim=7, formerNum=0, formerLength=0, tailLength=16,
                           lastCoreLength=4, tileLength=128)),
    (1, np.float32, dict(blockDim=1, formerNum=0, tailLength=8, lastCoreLength=1, tileLength=64)),
    # 10^6 fp32 = 125000 blocks: 8 cores of 2605 blocks, 40 of 2604; tiles from the UB
    (10 ** 6, np.float32, dict(blockDim=48, formerNum=8, formerLength=20840, tailLength=20832,
                               lastCoreLength=20832, tileLength=3584)),
    (0, np.float16, dict(blockDim=0, workspaceSize=0)),
])
def test_tiling_split(n, dtype, expect):
    td = tiling(SOC, n, dtype)
    for k, v in expect.items():
        assert getattr(td, k) == v, k
    spans = [td.core_span(b) for b in range(td.blockDim)]
    assert sum(c for _, c in spans) == n
    assert all(o1 + c1 == o2 for (o1, c1), (o2, _) in zip(spans, spans[1:]))
    isz = np.dtype(dtype).itemsize
    assert all(o * isz % 32 == 0 for o, _ in spans)                  # cores start 32 B aligned
    if n:
        assert td.workspaceSize == 16 * 1024 * 1024
        assert td.tileLength % (256 // isz) == 0


# -- kernel --------------------------------------------------------------------------------
def run_on_device(var, m, grad, scalars, soc=SOC):
    dtype = var.dtype
    gm = GlobalMemory(soc.memory_size)
    arrays = [var, m] + [np.array([s], dtype) for s in scalars] + [grad]
    addrs = [gm.malloc(max(a.nbytes, 1)) for a in arrays]
    for a, p in zip(arrays, addrs):
        gm.write(p, a)
    td = tiling(soc, var.size, dtype)
    prof = run_kernel(apply_add_sign, td.blockDim, (*addrs, 0, td, dtype), soc=soc, gm=gm)
    outs = [np.frombuffer(gm.read(p, a.nbytes), dtype).reshape(a.shape).copy()
            for p, a in zip(addrs[:2], arrays[:2])]
    return outs, prof


def documented_order(var, m, grad, lr, alpha, sign_decay, beta):
    """TBE apply_add_sign_d's order, every step rounded to the dtype (numpy per-op rounding)."""
    t = var.dtype.type
    lr, alpha, sign_decay, beta = (t(s) for s in (lr, alpha, sign_decay, beta))
    one_minus_beta = t(np.float32(1) - np.float32(beta))
    with np.errstate(invalid="ignore", over="ignore"):
        m_out = m * beta + grad * one_minus_beta
        s = sign_cpu(grad).astype(var.dtype) * sign_cpu(m_out).astype(var.dtype)
        upd = ((s * sign_decay + alpha) * lr) * grad
        return var - upd, m_out


def make(n, dtype, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(dtype) for _ in range(3)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("n", [1, 63, 64, 1000, 9001, 20000])
def test_kernel_bit_exact_with_tbe_order(n, dtype):
    var, m, grad = make(n, dtype, n)
    scalars = (0.01, 0.5, 0.75, 0.9)
    (v_out, m_out), _ = run_on_device(var, m, grad, scalars)
    v_exp, m_exp = documented_order(var, m, grad, *scalars)
    np.testing.assert_array_equal(m_out, m_exp)
    np.testing.assert_array_equal(v_out, v_exp)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
def test_kernel_matches_golden(dtype):
    n = 30000                                     # several tiles per core
    var, m, grad = make(n, dtype, 7)
    scalars = tuple(float(np.dtype(dtype).type(s)) for s in (0.01, 0.5, 0.75, 0.9))
    (v_out, m_out), prof = run_on_device(var, m, grad, scalars)
    v_ref, m_ref = apply_add_sign_golden(var, m, *scalars, grad)
    eps = float(np.finfo(dtype).eps)
    lr, alpha, decay, beta = scalars
    m_terms = np.abs(beta * m.astype(np.float64)) + np.abs((1 - beta) * grad.astype(np.float64))
    np.testing.assert_array_less(np.abs(m_out - m_ref.astype(np.float64)), 2 * eps * m_terms + 1e-30)
    # where m_out is near 0, rounding can flip sign(m_out); compare var elsewhere
    ok = np.abs(m_ref.astype(np.float64)) > 4 * eps * m_terms
    assert ok.mean() > 0.99
    upd = lr * (alpha + decay) * np.abs(grad.astype(np.float64))
    tol = eps * (np.abs(var.astype(np.float64)) + 6 * upd)
    np.testing.assert_array_less(np.abs(v_out - v_ref.astype(np.float64))[ok], tol[ok] + 1e-30)
    assert prof.block_dim == 48


def test_zero_and_nan_gradients():
    # sign(0) = 0 and sign(NaN) = 0 (CPU and TBE kernels; operators.md §3)
    var = np.array([0.5, -0.25, 0.5, 0.5, 1.0, 2.0] + [0.0] * 58, np.float32)
    m = np.array([0.3, 0.3, 0.3, np.nan, np.nan, 0.0] + [0.0] * 58, np.float32)
    grad = np.array([0.0, -0.0, np.nan, 0.2, -0.4, 0.0] + [0.0] * 58, np.float32)
    lr, alpha, decay, beta = 0.5, 1.0, 0.5, 0.75
    (v_out, m_out), _ = run_on_device(var, m, grad, (lr, alpha, decay, beta))
    # zero grad: var unchanged, m decays
    assert v_out[0] == 0.5 and v_out[1] == -0.25
    assert m_out[0] == np.float32(0.3) * np.float32(0.75) and m_out[5] == 0.0
    # NaN grad: m and var become NaN
    assert np.isnan(m_out[2]) and np.isnan(v_out[2])
    # NaN m with a finite grad: m stays NaN but sign(NaN) = 0 leaves var = var - lr*alpha*g
    assert np.isnan(m_out[3]) and np.isnan(m_out[4])
    assert v_out[3] == np.float32(0.5) - np.float32(0.5) * np.float32(0.2)     # 0.4
    assert v_out[4] == np.float32(1.0) + np.float32(0.5) * np.float32(0.4)     # 1.2
    # numpy's sign would have made these NaN; the golden agrees with the kernel
    v_ref, _ = apply_add_sign_golden(var, m, lr, alpha, decay, beta, grad)
    np.testing.assert_array_equal(np.isnan(v_out), np.isnan(v_ref))
    np.testing.assert_allclose(v_out[3:5], v_ref[3:5], rtol=1e-7)


def test_sign_decay_term_hand_computed():
    # g > 0, m_out > 0: update = (alpha + decay)*g; g > 0, m_out < 0: (alpha - decay)*g;
    # m_out exactly 0 (beta = 0.5, m = -g): sign 0, update = alpha*g
    var = np.zeros(64, np.float32)
    m = np.zeros(64, np.float32)
    m[1:4] = [-4.0, -1.0, 2.0]
    grad = np.zeros(64, np.float32)
    grad[:4] = [1.0, 1.0, 1.0, -2.0]
    (v_out, m_out), _ = run_on_device(var, m, grad, (1.0, 1.0, 0.5, 0.5))
    np.testing.assert_array_equal(m_out[:4], [0.5, -1.5, 0.0, 0.0])
    np.testing.assert_array_equal(v_out[:4], [-1.5, -0.5, -1.0, 2.0])


def test_profile_traffic():
    n = 48 * 4096
    var, m, grad = make(n, np.float32, 3)
    _, prof = run_on_device(var, m, grad, SEED_SCALARS)
    # var, m, grad read once and var, m written once; each core reads the 4 scalars
    assert prof.bytes_read == 3 * n * 4 + 4 * 4 * 48
    assert prof.bytes_written == 2 * n * 4
    assert prof.duration_us * 1e-6 >= (prof.bytes_read + prof.bytes_written) / SOC.hbm_bandwidth


# -- aclnn ---------------------------------------------------------------------------------


def device_args(var, m, grad, scalars=SEED_SCALARS, scalar_shape=(1,)):
    dt = var.dtype
    sc = [to_device(np.full(scalar_shape, s, dt)) for s in scalars]
    return [to_device(var), to_device(m), *sc, to_device(grad)]


def run_op(stream, args):
    return run_two_phase(stream, aclnnApplyAddSignGetWorkspaceSize, aclnnApplyAddSign, *args)[0]


def test_sample_reproduces_the_seed_example(capsys):
    results = run_example("apply_add_sign_sample")
    # the seed's printed output, digit for digit
    var = ["5.99403024e-01", "3.98607016e-01", "9.98010039e-02", "4.98407990e-01"]
    m = ["5.70000052e-01", "5.19999981e-01", "1.89999998e-01", "6.20000064e-01"]
    assert [f"{x:.8e}" for x in results["var"].ravel()] == var
    assert [f"{x:.8e}" for x in results["m"].ravel()] == m
    out = capsys.readouterr().out
    assert f"var result[0] is: {var[0]}" in out and out.count("result[") == 8


@pytest.mark.parametrize("shape", [[], [5], [3, 7], [2, 1, 3, 1, 2, 1, 2, 3]])
def test_ranks_match_golden(stream, shape):
    rng = np.random.default_rng(len(shape))
    var, m, grad = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    args = device_args(var, m, grad, scalar_shape=() if not shape else (1,))
    run_op(stream, args)
    v_ref, m_ref = apply_add_sign_golden(var, m, *(float(np.float32(s)) for s in SEED_SCALARS), grad)
    np.testing.assert_allclose(from_device(args[0], np.float32), v_ref, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(from_device(args[1], np.float32), m_ref, rtol=1e-6, atol=1e-7)


def test_half_through_the_api(stream):
    var, m, grad = make(3000, np.float16, 11)
    args = device_args(var, m, grad)
    run_op(stream, args)
    v_exp, m_exp = documented_order(var, m, grad, *SEED_SCALARS)
    np.testing.assert_array_equal(from_device(args[0], np.float16), v_exp)
    np.testing.assert_array_equal(from_device(args[1], np.float16), m_exp)
    prof = runtime.current_device().profiles[-1]
    assert prof.op_name == "ApplyAddSign" and prof.block_dim == 48


def test_empty_tensors_need_no_workspace(stream):
    z = np.zeros((0, 3), np.float32)
    assert run_op(stream, device_args(z, z, z)) == 0
    assert runtime.current_device().profiles == []


def _bad_cases():
    f16 = aclnn.ACL_FLOAT16

    def retype(t, dt):
        return aclnn.aclCreateTensor(list(t.view_dims), dt, list(t.strides), 0, t.format,
                                     list(t.storage_dims), t.tensor_data)

    def shaped(t, dims, fmt=aclnn.ACL_FORMAT_ND, strides=None, addr=None, offset=0):
        return aclnn.aclCreateTensor(dims, t.data_type, strides, offset, fmt, [32],
                                     t.tensor_data if addr is None else addr)

    def sub(A, i, t):
        A = list(A)
        A[i] = t
        return A

    return {   # name: (build(args) -> args, status, argument named in the message)
        "null varRef": (lambda A: sub(A, 0, None), 161001, "varRef"),
        "null lr": (lambda A: sub(A, 2, None), 161001, "lr"),
        "null grad": (lambda A: sub(A, 6, None), 161001, "grad"),
        "int32 var": (lambda A: [retype(t, aclnn.ACL_INT32) for t in A], 161002, "varRef"),
        "bf16 var": (lambda A: [retype(t, aclnn.ACL_BF16) for t in A], 161002, "varRef"),
        "double var": (lambda A: [retype(t, aclnn.ACL_DOUBLE) for t in A], 161002, "varRef"),
        "fp16 m": (lambda A: sub(A, 1, retype(A[1], f16)), 161002, "mRef"),
        "fp16 grad": (lambda A: sub(A, 6, retype(A[6], f16)), 161002, "grad"),
        "fp16 alpha": (lambda A: sub(A, 3, retype(A[3], f16)), 161002, "alpha"),
        "grad shape": (lambda A: sub(A, 6, shaped(A[6], [32])), 161002, "grad"),
        "m shape": (lambda A: sub(A, 1, shaped(A[1], [8, 4])), 161002, "mRef"),
        "signDecay of 2": (lambda A: sub(A, 4, shaped(A[4], [2])), 161002, "signDecay"),
        "beta of 0": (lambda A: sub(A, 5, shaped(A[5], [0])), 161002, "beta"),
        "9 dims": (lambda A: [shaped(t, [1] * 7 + [4, 8]) for t in A[:2]] + A[2:6]
                   + [shaped(A[6], [1] * 7 + [4, 8])], 161002, "varRef"),
        "NZ format": (lambda A: sub(A, 1, shaped(A[1], [4, 8], aclnn.ACL_FORMAT_FRACTAL_NZ)), 161002, "mRef"),
        "non-contiguous": (lambda A: sub(A, 6, shaped(A[6], [4, 8], strides=[1, 4])), 161002, "grad"),
        "not device memory": (lambda A: sub(A, 2, shaped(A[2], [1], addr=0x1000)), 161002, "lr"),
        "past the allocation": (lambda A: sub(A, 0, shaped(A[0], [4, 8], offset=16)), 161002, "varRef"),
        "destroyed lr": (lambda A: (aclnn.aclDestroyTensor(A[2]), A)[1], 161002, "lr"),
        # scalar inputs are one-element aclTensors (docs/tutorial.md §10): a number or an
        # aclScalar is refused, and the message says what to pass
        "lr a number": (lambda A: sub(A, 2, 0.001), 161002, "lr"),
        "beta an aclScalar": (lambda A: sub(A, 5, aclnn.aclCreateScalar(0.9, aclnn.ACL_FLOAT)),
                              161002, "beta"),
    }


def _fresh():
    rng = np.random.default_rng(1)
    var, m, grad = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(3))
    args = device_args(var, m, grad)
    return [var, m, grad], args


@pytest.mark.parametrize("case", list(_bad_cases()))
def test_invalid_arguments(stream, case):
    build, code, arg = _bad_cases()[case]
    hosts, args = _fresh()
    keep = [args[0], args[1], args[6]]
    ws, ex, ret = aclnnApplyAddSignGetWorkspaceSize(*build(args))
    assert (ws, ex, ret) == (0, None, code)
    msg = acl.get_recent_err_msg()
    assert msg and arg in msg and "aclnnApplyAddSignGetWorkspaceSize" in msg
    if "number" in case or "aclScalar" in case:
        assert "one-element aclTensor (shape [1])" in msg and "aclnnApplyAdamW" in msg
    assert acl.rt.synchronize_stream(stream) == 0
    for t, h in zip(keep, hosts):
        np.testing.assert_array_equal(from_device(t, np.float32), h)


def test_second_phase_errors_change_nothing(stream):
    hosts, args = _fresh()
    ws, ex, ret = aclnnApplyAddSignGetWorkspaceSize(*args)
    assert ret == 0 and ws == 16 * 1024 * 1024
    small, _ = acl.rt.malloc(ws - 32, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    assert aclnnApplyAddSign(small, ws - 32, ex, stream) == aclnn.ACLNN_ERR_PARAM_INVALID
    assert aclnnApplyAddSign(0, ws, ex, stream) == aclnn.ACLNN_ERR_PARAM_NULLPTR
    assert aclnnApplyAddSign(0, 0, None, stream) == aclnn.ACLNN_ERR_PARAM_NULLPTR
    assert acl.rt.synchronize_stream(stream) == 0
    for t, h in zip([args[0], args[1], args[6]], hosts):
        np.testing.assert_array_equal(from_device(t, np.float32), h)
    # the executor is still live: a proper run works once, then it is released
    wptr, _ = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    assert aclnnApplyAddSign(wptr, ws, ex, stream) == 0
    assert aclnnApplyAddSign(wptr, ws, ex, stream) == aclnn.ACLNN_ERR_PARAM_INVALID
    assert acl.rt.synchronize_stream(stream) == 0
    v_ref, _ = apply_add_sign_golden(*hosts[:2], *(float(np.float32(s)) for s in SEED_SCALARS), hosts[2])
    np.testing.assert_allclose(from_device(args[0], np.float32), v_ref, rtol=1e-6)


def test_unsupported_soc_and_no_device(tmp_path):
    try:
        init_runtime(tmp_path, "Ascend310P3")
        t = aclnn.aclCreateTensor([4], aclnn.ACL_FLOAT, [1], 0, aclnn.ACL_FORMAT_ND, [4], 0)
        _, _, ret = aclnnApplyAddSignGetWorkspaceSize(t, t, t, t, t, t, t)
        assert ret == aclnn.ACLNN_ERR_RUNTIME_ERROR and "set_device" in acl.get_recent_err_msg()
        assert acl.rt.set_device(0) == 0
        _, _, ret = aclnnApplyAddSignGetWorkspaceSize(t, t, t, t, t, t, t)
        assert ret == aclnn.ACLNN_ERR_PARAM_INVALID and "Ascend310P3" in acl.get_recent_err_msg()
    finally:
        runtime.reset()
