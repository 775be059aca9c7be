"""aclnnFusedSparseAdam: the seed's example (its printed value for the row no index names),
bit-exactness against MindSpore's order of operations written out in float32, the numpy
golden on duplicates, out-of-range and empty indices, Nesterov (rows no index names keep
their var, as MindSpore 2.10's CPU kernel measured), int64 indices, wide rows and a
multi-chunk device sort, the scalar inputs as one-element device tensors (numbers are
refused with a message saying so), and every validation path with the in-place tensors
unchanged (seed mindspore.ops.FusedSparseAdam; docs/reference/operators.md §4)."""

import numpy as np
import pytest

import aclnn
from aclnn import acl, runtime
from aclnn.ops.fused_sparse_adam import (aclnnFusedSparseAdam,
                                         aclnnFusedSparseAdamGetWorkspaceSize)
from npusim.kernels.fused_sparse_adam.golden import fused_sparse_adam_golden

from aclnn_helpers import (assert_unchanged, from_device, init_runtime, run_example, run_two_phase,
                           to_device)

SCALARS = dict(beta1_power=0.9 ** 4, beta2_power=0.999 ** 4, lr=0.01, beta1=0.9, beta2=0.999,
               epsilon=1e-8)


def make_state(shape, n, seed, low=-2, high=None):
    rng = np.random.default_rng(seed)
    var = rng.standard_normal(shape).astype(np.float32)
    m = rng.standard_normal(shape).astype(np.float32)
    v = np.abs(rng.standard_normal(shape)).astype(np.float32)
    grad = rng.standard_normal((n,) + tuple(shape[1:])).astype(np.float32)
    idx = rng.integers(low, (high if high is not None else shape[0] + 2), n)
    return var, m, v, grad, idx


def scalar_tensors(scalars=SCALARS):
    """The six scalars as one-element FLOAT device tensors, in the operator's order."""
    return [to_device(np.array([scalars[k]], np.float32)) for k in
            ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon")]


def run(stream, var, m, v, grad, idx, nesterov=False, idx_dtype=np.int32, scalars=SCALARS):
    tensors = [to_device(a) for a in (var, m, v)]
    _, ex = run_two_phase(stream, aclnnFusedSparseAdamGetWorkspaceSize, aclnnFusedSparseAdam,
                          *tensors, *scalar_tensors(scalars), to_device(grad),
                          to_device(np.asarray(idx, idx_dtype)), nesterov)
    return [from_device(t) for t in tensors], ex


def documented_order_fp32(var, m, v, grad, idx, nesterov, s):
    """MindSpore's CPU kernel in float32, statement by statement (docs/reference/operators.md §4)."""
    f = np.float32
    b1p, b2p, lr, b1, b2, eps = (f(s[k]) for k in ("beta1_power", "beta2_power", "lr", "beta1",
                                                   "beta2", "epsilon"))
    rows = var.shape[0]
    var, m, v = var.copy(), m.copy(), v.copy()
    summed = {}                                          # first occurrence copied, then +=
    for i, k in enumerate(np.asarray(idx).tolist()):
        if 0 <= k < rows:
            summed[k] = grad[i].copy() if k not in summed else summed[k] + grad[i]
    lr = lr * np.sqrt(f(1) - b2p) / (f(1) - b1p)
    m *= b1
    v *= b2
    m_t = np.zeros_like(m) if nesterov else None       # rows without an index: never written
    for k, g in summed.items():
        m[k] += (f(1) - b1) * g
        v[k] += (f(1) - b2) * g * g
        if nesterov:
            m_t[k] = m[k] * b1 + (f(1) - b1) * g
    M = m_t if nesterov else m
    var -= lr * M / (np.sqrt(v) + eps)
    return var, m, v


def test_seed_example_and_its_printed_value(capsys):
    res = run_example("fused_sparse_adam_sample")
    # row 2 is named by no index: m = 0.9, v = 0.999 decay only; the seed prints 0.99971527
    np.testing.assert_allclose(res["var"][2], [[0.99971527, 0.99971527]], rtol=0, atol=1e-7)
    ones = np.ones((3, 1, 2), np.float32)
    golden = fused_sparse_adam_golden(ones, ones, ones, 0.9, 0.999, 0.001, 0.9, 0.999, 1e-8,
                                      res["grad"], [0, 1])
    for got, want in zip((res["var"], res["m"], res["v"]), golden):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert "[[[0.99" in capsys.readouterr().out


@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("shape,n", [((40, 16), 120), ((7, 3, 5), 20), ((300, 24), 5000)])
def test_bit_exact_with_mindspore_order(stream, nesterov, shape, n):
    var, m, v, grad, idx = make_state(shape, n, seed=n)
    got, ex = run(stream, var, m, v, grad, idx, nesterov)
    want = documented_order_fp32(var, m, v, grad, idx, nesterov, SCALARS)
    for name, g, w in zip(("var", "m", "v"), got, want):
        np.testing.assert_array_equal(g, w, err_msg=name)
    assert ex.kernels == ["Sort", "FusedSparseAdam"]
    if n > 4096:
        assert ex.sort_tiling.chunkNum == 2             # the multi-core merge sort ran


@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("shape,n,low,high", [((300, 40), 1000, -2, 302),     # a few dropped
                                              ((400, 64), 3000, 0, 20),       # long runs
                                              ((6, 20000), 9, 0, 6),          # two column chunks
                                              ((2000, 24), 2500, 0, 2000)])   # windows of 1024
def test_batched_merge_is_bit_identical_and_timed_alike(stream, monkeypatch, nesterov, shape,
                                                        n, low, high):
    from npusim.kernels.fused_sparse_adam.kernel import KernelFusedSparseAdam
    dev = runtime.current_device()
    var, m, v, grad, idx = make_state(shape, n, seed=n, low=low, high=high)
    monkeypatch.setattr(KernelFusedSparseAdam, "fast", False)
    loop, _ = run(stream, var, m, v, grad, idx, nesterov)
    p_loop = dev.profiles[-1]
    monkeypatch.setattr(KernelFusedSparseAdam, "fast", True)
    fast, _ = run(stream, var, m, v, grad, idx, nesterov)
    p_fast = dev.profiles[-1]
    for name, a, b in zip(("var", "m", "v"), fast, loop):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32), err_msg=name)
    assert (p_fast.bytes_read, p_fast.bytes_written) == (p_loop.bytes_read, p_loop.bytes_written)
    # each Add and ApplyRun is costed at its UB offsets, the entry reads as the loop's
    for k in ("aiv_vec_time", "aiv_scalar_time"):
        assert p_fast.pipe_time_us[k] == pytest.approx(p_loop.pipe_time_us[k], rel=1e-9)
    assert p_fast.duration_us == pytest.approx(p_loop.duration_us, rel=0.1)
    assert p_fast.pipe_time_us["aiv_mte2_time"] == pytest.approx(
        p_loop.pipe_time_us["aiv_mte2_time"], rel=0.1)


@pytest.mark.parametrize("case", ["duplicates", "out_of_range", "all_same", "int64", "empty",
                                  "wide_rows"])
def test_against_golden(stream, case):
    shape, n, idx_dtype = (50, 8), 200, np.int32
    low, high = 0, 50
    if case == "out_of_range":
        low, high = -60, 110
    elif case == "all_same":
        low, high = 7, 8
    elif case == "empty":
        n = 0
    elif case == "wide_rows":
        shape, n = (6, 20000), 9                         # two column chunks
    var, m, v, grad, idx = make_state(shape, n, seed=3, low=low, high=high)
    if case == "int64":
        idx_dtype = np.int64
        idx = idx.astype(np.int64)
        idx[::7] += 2 ** 32                              # beyond int32: dropped after the cast
    got, ex = run(stream, var, m, v, grad, idx, False, idx_dtype)
    want = fused_sparse_adam_golden(var, m, v, *SCALARS.values(), grad, idx)
    tol = 3e-5 if case == "all_same" else 2e-6      # 200 rows summed in fp32 vs float64
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    if case == "empty":
        assert ex.kernels == ["FusedSparseAdam"]
        np.testing.assert_allclose(got[1], m * np.float32(0.9), rtol=1e-7)   # still decays
    if case == "int64":
        assert ex.kernels[0] == "Cast"


def test_nesterov_rows_without_an_index_keep_their_var(stream):
    """MindSpore 2.10's CPU kernel, measured (aclnn/ops/fused_sparse_adam.py): with Nesterov,
    a row no index names has m*beta1 and v*beta2 but its var unchanged."""
    var, m, v, grad, idx = make_state((10, 4), 3, seed=5, low=0, high=3)
    got, _ = run(stream, var, m, v, grad, idx, True)
    want = fused_sparse_adam_golden(var, m, v, *SCALARS.values(), grad, idx, use_nesterov=True)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)
    hit = np.zeros(10, bool)
    hit[idx] = True
    assert hit.sum() < 10
    f = np.float32
    np.testing.assert_array_equal(got[0][~hit], var[~hit])
    np.testing.assert_array_equal(got[1][~hit], m[~hit] * f(0.9))
    np.testing.assert_array_equal(got[2][~hit], v[~hit] * f(0.999))
    assert not np.array_equal(got[0][hit], var[hit])      # the indexed rows do move


def test_nesterov_row_without_an_index_is_nan_where_the_denominator_is_zero(stream):
    """Measured with MindSpore 2.10: v = 0 and epsilon = 0 on a row no index names give
    NaN (0/0), so the row's var is ``var - lr_t*0/(sqrt(v)+eps)``, not skipped."""
    var, m, v = (np.ones((3, 2), np.float32) for _ in range(3))
    v[2] = 0
    got, _ = run(stream, var, m, v, np.ones((1, 2), np.float32), [0], True,
                 scalars=dict(SCALARS, epsilon=0.0))
    assert np.isnan(got[0][2]).all() and np.isfinite(got[0][:2]).all()


# -- validation ------------------------------------------------------------------------------
def _fresh():
    var, m, v, grad, idx = make_state((6, 4), 5, seed=9, low=0, high=6)
    arrays = [var, m, v, grad, idx.astype(np.int32)]
    arrays += [np.array([x], np.float32) for x in (0.9, 0.999, 0.001, 0.9, 0.999, 1e-8)]
    return arrays, [to_device(a) for a in arrays]


def _args(T, **over):
    s = dict(zip(("beta1Power", "beta2Power", "lr", "beta1", "beta2", "epsilon"), T[5:]))
    a = dict(varRef=T[0], mRef=T[1], vRef=T[2], **s, grad=T[3], indices=T[4], useNesterov=False)
    a.update(over)
    return a


def _retype(t, dt):
    return aclnn.aclCreateTensor(list(t.view_dims), dt, list(t.strides), 0, t.format,
                                 list(t.storage_dims), t.tensor_data)


def _reshape(t, shape, storage=None):
    return aclnn.aclCreateTensor(list(shape), t.data_type, list(aclnn.contiguous_strides(shape)),
                                 0, aclnn.ACL_FORMAT_ND, list(storage or shape), t.tensor_data)


BAD = {
    "null var": (lambda T: _args(T, varRef=None), 161001, "varRef"),
    "null grad": (lambda T: _args(T, grad=None), 161001, "grad"),
    "null indices": (lambda T: _args(T, indices=None), 161001, "indices"),
    "fp16 var": (lambda T: _args(T, varRef=_retype(T[0], aclnn.ACL_FLOAT16)), 161002, "varRef"),
    "fp16 m": (lambda T: _args(T, mRef=_retype(T[1], aclnn.ACL_FLOAT16)), 161002, "mRef"),
    "float indices": (lambda T: _args(T, indices=_retype(T[4], aclnn.ACL_FLOAT)), 161002,
                      "indices"),
    "v shape": (lambda T: _args(T, vRef=_reshape(T[2], [4, 6])), 161002, "vRef"),
    "2-D indices": (lambda T: _args(T, indices=_reshape(T[4], [5, 1])), 161002, "indices"),
    "grad rows": (lambda T: _args(T, grad=_reshape(T[3], [4, 5], [20])), 161002, "grad"),
    "grad cols": (lambda T: _args(T, grad=_reshape(T[3], [5, 2, 2])), 161002, "grad"),
    "null lr": (lambda T: _args(T, lr=None), 161001, "lr"),
    "lr a number (the old form)": (lambda T: _args(T, lr=0.001), 161002, "lr"),
    "beta1Power a number": (lambda T: _args(T, beta1Power=0.9), 161002, "beta1Power"),
    "epsilon an aclScalar": (lambda T: _args(T, epsilon=aclnn.aclCreateScalar(
        1e-8, aclnn.ACL_FLOAT)), 161002, "epsilon"),
    "fp16 beta2": (lambda T: _args(T, beta2=_retype(T[9], aclnn.ACL_FLOAT16)), 161002, "beta2"),
    "two-element lr": (lambda T: _args(T, lr=_reshape(T[0], [2])), 161002, "lr"),
    "nesterov not bool": (lambda T: _args(T, useNesterov=2), 161002, "useNesterov"),
    "NZ var": (lambda T: _args(T, varRef=aclnn.aclCreateTensor(
        [6, 4], aclnn.ACL_FLOAT, [4, 1], 0, aclnn.ACL_FORMAT_FRACTAL_NZ, [6, 4],
        T[0].tensor_data)), 161002, "varRef"),
    "non-contiguous m": (lambda T: _args(T, mRef=aclnn.aclCreateTensor(
        [6, 4], aclnn.ACL_FLOAT, [1, 6], 0, aclnn.ACL_FORMAT_ND, [24], T[1].tensor_data)),
        161002, "mRef"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_invalid_arguments_change_nothing(stream, case):
    build, code, arg = BAD[case]
    arrays, tensors = _fresh()
    ws, ex, ret = aclnnFusedSparseAdamGetWorkspaceSize(**build(tensors))
    assert (ws, ex, ret) == (0, None, code)
    msg = acl.get_recent_err_msg()
    assert msg and arg in msg
    if "number" in case or "aclScalar" in case:           # says what to pass instead
        assert "one-element aclTensor (shape [1])" in msg and "aclnnApplyAdamW" in msg
    assert acl.rt.synchronize_stream(stream) == 0
    assert_unchanged(tensors, arrays)


def test_beta1_power_of_one_reaches_the_device_and_gives_inf_or_nan(stream):
    """The value is on the device, so the first phase cannot refuse it (module docstring):
    lr_t = x/0 and var is no longer finite; the MindSpore front end refuses it first."""
    var, m, v, grad, idx = make_state((4, 2), 2, seed=1, low=0, high=4)
    got, _ = run(stream, var, m, v, grad, idx, scalars=dict(SCALARS, beta1_power=1.0))
    assert not np.isfinite(got[0]).any()


def test_unsupported_soc_and_no_device(tmp_path):
    try:
        init_runtime(tmp_path, "Ascend910A")
        t = aclnn.aclCreateTensor([4], aclnn.ACL_FLOAT, [1], 0, aclnn.ACL_FORMAT_ND, [4], 0)
        args = dict(varRef=t, mRef=t, vRef=t, beta1Power=t, beta2Power=t, lr=t, beta1=t,
                    beta2=t, epsilon=t, grad=t, indices=t, useNesterov=False)
        _, _, ret = aclnnFusedSparseAdamGetWorkspaceSize(**args)
        assert ret == aclnn.ACLNN_ERR_RUNTIME_ERROR
        assert acl.rt.set_device(0) == 0
        _, _, ret = aclnnFusedSparseAdamGetWorkspaceSize(**args)
        assert ret == 161002 and "Ascend910A" in acl.get_recent_err_msg()
    finally:
        runtime.reset()


def test_workspace_and_second_phase_errors(stream):
    arrays, tensors = _fresh()
    ws, ex, ret = aclnnFusedSparseAdamGetWorkspaceSize(**_args(tensors))
    # 16 MiB system workspace + sorted indices and positions (one Sort chunk: no buffers)
    assert ret == 0 and ws == 16 * (1 << 20) + 2 * 512
    assert aclnnFusedSparseAdam(0, ws, ex, stream) == aclnn.ACLNN_ERR_PARAM_NULLPTR
    assert acl.rt.synchronize_stream(stream) == 0
    assert_unchanged(tensors, arrays)
