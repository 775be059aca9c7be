"""The ApplyFusedEmaAdam kernel on the simulator against the numpy golden, and, for fp32,
bit for bit against the documented order of operations (docs/reference/operators.md §1
"Kernel arithmetic order")."""
import ml_dtypes
import numpy as np
import pytest

from npusim.kernels.apply_fused_ema_adam.golden import apply_fused_ema_adam_golden
from npusim.kernels.apply_fused_ema_adam.kernel import apply_fused_ema_adam
from npusim.kernels.apply_fused_ema_adam.tiling import tiling
from npusim import GlobalMemory, get_soc, run_kernel

SOC = get_soc("Ascend910B1")
BF16 = np.dtype(ml_dtypes.bfloat16)
ATTRS = dict(lr=1e-3, ema_decay=0.5, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.5)


def make_inputs(n, dtype, seed):
    rng = np.random.default_rng(seed)
    grad, var, m, s = (rng.standard_normal(n).astype(dtype) for _ in range(4))
    v = np.abs(rng.standard_normal(n)).astype(dtype)
    return [grad, var, m, v, s]


def run_on_device(arrays, step, mode, bias_correction, soc=SOC, **attrs):
    attrs = {**ATTRS, **attrs}
    gm = GlobalMemory(soc.memory_size)
    dtype = arrays[0].dtype
    addrs = [gm.malloc(max(a.nbytes, 1)) for a in arrays]
    for a, p in zip(arrays, addrs):
        gm.write(p, a)
    step_addr = gm.malloc(8)
    gm.write(step_addr, np.array([step], np.int64))
    td = tiling(soc, arrays[0].size, dtype, mode=mode, bias_correction=bias_correction, **attrs)
    if td.blockDim == 0:
        return arrays[1:], None
    prof = run_kernel(apply_fused_ema_adam, td.blockDim, (*addrs, step_addr, 0, td, dtype),
                      soc=soc, gm=gm, reserve_ub=False)
    outs = [np.frombuffer(gm.read(p, a.nbytes), dtype).copy() for p, a in zip(addrs[1:], arrays[1:])]
    return outs, prof


def documented_order_fp32(grad, var, m, v, s, step, mode, bias_correction, lr, ema_decay,
                          beta1, beta2, eps, weight_decay):
    """The kernel arithmetic order of operators.md §1, written out in numpy float32."""
    f = np.float32
    lr, ema, b1, b2, eps, wd = (f(x) for x in (lr, ema_decay, beta1, beta2, eps, weight_decay))
    one = f(1)
    if bias_correction:
        rec1 = one / (one - np.power(b1, f(step), dtype=np.float32))
        rec2 = one / (one - np.power(b2, f(step), dtype=np.float32))
    else:
        rec1 = rec2 = one
    g = grad
    if mode == 0:
        g = (var * wd) + grad
    m_out = (m * b1) + (g * (one - b1))
    v_out = ((g * g) * (one - b2)) + (v * b2)
    upd = (m_out * rec1) / (np.sqrt(v_out * rec2) + eps)
    if mode == 1:
        upd = upd + var * wd
    var_out = var - upd * lr
    s_out = (s * ema) + (var_out * (one - ema))
    return var_out, m_out, v_out, s_out


SIZES = [1, 7, 47, 48, 100, 2400, 6129, 20000]


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("bias_correction", [True, False])
@pytest.mark.parametrize("n", SIZES)
def test_fp32_bit_exact_with_documented_order(n, mode, bias_correction):
    arrays = make_inputs(n, np.float32, seed=n + 10 * mode)
    outs, _ = run_on_device(arrays, 7, mode, bias_correction)
    expect = documented_order_fp32(*arrays, 7, mode, bias_correction, **ATTRS)
    for name, o, e in zip(("var", "m", "v", "s"), outs, expect):
        np.testing.assert_array_equal(o, e, err_msg=name)


def _assert_close_to_golden(outs, golden, dtype):
    # fp32: a few ulp of float32 apart from the float64 golden; fp16/bf16: the kernel
    # rounds once from fp32 while the golden rounds once from fp64, so at most 1 ulp apart.
    eps = float(np.finfo(np.float32).eps) * 8 if dtype == np.float32 else (
        2.0 ** -10 if dtype == np.float16 else 2.0 ** -7)
    for name, o, g in zip(("var", "m", "v", "s"), outs, golden):
        o64, g64 = o.astype(np.float64), g.astype(np.float64)
        scale = np.maximum(np.abs(g64), np.abs(o64))
        bad = np.abs(o64 - g64) > eps * scale + 1e-6
        assert not bad.any(), f"{name}: {np.flatnonzero(bad)[:5]} kernel {o64[bad][:5]} golden {g64[bad][:5]}"


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("bias_correction", [True, False])
@pytest.mark.parametrize("n", [5, 48, 1001, 8200])
def test_kernel_matches_golden(dtype, mode, bias_correction, n):
    arrays = make_inputs(n, dtype, seed=n)
    outs, _ = run_on_device(arrays, 3, mode, bias_correction)
    golden = apply_fused_ema_adam_golden(*arrays, 3, mode=mode, bias_correction=bias_correction,
                                         **ATTRS)
    _assert_close_to_golden(outs, golden, np.dtype(dtype))


def test_multi_tile_fp16_split_of_the_reference():
    # 268800 fp16 in mode 1: 48 cores x (4080 + 1520) elements (operators.md §1 worked split)
    arrays = make_inputs(268800, np.float16, seed=1)
    outs, prof = run_on_device(arrays, 10, 1, True)
    golden = apply_fused_ema_adam_golden(*arrays, 10, mode=1, **ATTRS)
    _assert_close_to_golden(outs, golden, np.dtype(np.float16))
    assert prof.block_dim == 48


def test_fewer_elements_than_cores_and_empty():
    arrays = make_inputs(3, np.float32, seed=3)
    outs, prof = run_on_device(arrays, 1, 1, True)
    assert prof.block_dim == 3
    golden = apply_fused_ema_adam_golden(*arrays, 1, mode=1, **ATTRS)
    _assert_close_to_golden(outs, golden, np.dtype(np.float32))
    empty = [np.zeros(0, np.float32) for _ in range(5)]
    outs, prof = run_on_device(empty, 1, 1, True)
    assert prof is None and all(o.size == 0 for o in outs)


def test_fp16_keeps_unrounded_fp32_intermediates():
    # s_out uses the fp32 var_out, not var_out rounded to fp16: with emaDecay = 0 the s
    # result is var_out rounded once, so it must equal the var output exactly.
    arrays = make_inputs(999, np.float16, seed=5)
    outs, _ = run_on_device(arrays, 2, 1, True, ema_decay=0.0)
    np.testing.assert_array_equal(outs[3], outs[0])


def test_profile_reports_traffic_and_time():
    n = 48 * 6128 * 2
    arrays = make_inputs(n, np.float32, seed=0)
    _, prof = run_on_device(arrays, 1, 1, True)
    # mode 1 reads grad, m, v, s, then var again: 5 reads, 4 writes of n floats, plus
    # the int64 step each core reads with GetValue
    assert prof.bytes_read == 5 * n * 4 + 8 * 48
    assert prof.bytes_written == 4 * n * 4
    # cannot beat the HBM: the bytes it moved / its bandwidth bound the time from below
    # a cold L2: reads miss, except lines a neighbouring tile already brought in
    assert 0.95 * prof.bytes_read <= prof.hbm_bytes
    assert prof.duration_us * 1e-6 >= prof.hbm_bytes / SOC.hbm_bandwidth
