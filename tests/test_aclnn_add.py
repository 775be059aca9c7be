"""aclnnAdd / aclnnInplaceAdd through the host API: the official sample, dtypes and
promotion, broadcasting (with the workspace it needs), non-contiguous inputs, empty tensors,
in-place addition, and every validation path (status code, message naming the argument,
data unchanged) of ``math/add/docs/aclnnAdd&aclnnInplaceAdd_en.md``."""

import ml_dtypes
import numpy as np
import pytest

import aclnn
from aclnn import acl, runtime
from aclnn.ops.add import (aclnnAdd, aclnnAddGetWorkspaceSize, aclnnInplaceAdd,
                           aclnnInplaceAddGetWorkspaceSize, broadcast_shape, can_cast)
from npusim.kernels.add.golden import add_golden

from aclnn_helpers import (assert_unchanged, from_device, init_runtime, open_stream, run_example,
                           run_two_phase, to_device)

BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = aclnn.ACL_FLOAT


def empty_out(shape, dtype):
    return to_device(np.zeros(shape, dtype))


def scalar(value, acl_dtype=F32):
    return aclnn.aclCreateScalar(value, acl_dtype)


def run(stream, first, second, *args):
    return run_two_phase(stream, first, second, *args)[0]


def add_op(stream, a, b, alpha, out_dtype, alpha_dtype=F32):
    """aclnnAdd of two host arrays; returns (result, workspaceSize)."""
    out = empty_out(np.broadcast_shapes(a.shape, b.shape), out_dtype)
    ws = run(stream, aclnnAddGetWorkspaceSize, aclnnAdd, to_device(a), to_device(b),
             scalar(alpha, alpha_dtype), out)
    return from_device(out, out_dtype), ws


# -- the official sample -----------------------------------------------------------------------
def test_official_sample_prints_the_formula_values(capsys):
    results = run_example("add_sample")
    self_v = [0, 1, 2, 3, 4, 5, 6, 7]
    other_v = [1, 1, 1, 2, 2, 2, 3, 3]
    expect = [s + 1.2 * o for s, o in zip(self_v, other_v)]   # out_i = self_i + alpha * other_i
    np.testing.assert_allclose(results["out"], expect, rtol=1e-6)
    np.testing.assert_allclose(results["self"], expect, rtol=1e-6)
    out = capsys.readouterr().out
    assert out.count("result[") == 16 and "test aclnnInplaceAdd" in out
    assert "result[7] is: 10.600000" in out


# -- dtypes, promotion, alpha --------------------------------------------------------------------
@pytest.mark.parametrize("dtype,alpha,alpha_dtype,rtol", [
    (np.float32, 1.2, F32, 1e-6), (np.float32, -0.5, F32, 1e-6),
    (np.float16, 1.2, F32, 2e-3), (BF16, 1.2, F32, 2e-2), (BF16, 1.0, aclnn.ACL_BF16, 1e-2),
    (np.int32, 3, aclnn.ACL_INT64, 0), (np.int32, 1, aclnn.ACL_INT32, 0),
    (np.int16, -2, aclnn.ACL_INT8, 0), (np.float32, True, aclnn.ACL_BOOL, 1e-6)])
def test_dtypes_against_golden(stream, dtype, alpha, alpha_dtype, rtol):
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((7, 1031)) * 20).astype(dtype)
    b = (rng.standard_normal((7, 1031)) * 20).astype(dtype)
    got, ws = add_op(stream, a, b, alpha, dtype, alpha_dtype)
    gold = add_golden(a, b, alpha, dtype)
    assert ws == 0
    if rtol == 0:
        np.testing.assert_array_equal(got, gold)
    else:
        np.testing.assert_allclose(got.astype(np.float64), gold.astype(np.float64), rtol=rtol,
                                   atol=rtol * 20)


@pytest.mark.parametrize("xs,ys,zs,alpha", [
    (np.int32, np.float16, np.float16, 1.0),      # INT32 + FLOAT16 -> FLOAT16 (not numpy's f64)
    (np.float16, np.float32, np.float32, 1.0),    # mixed-dtype Add kernel
    (BF16, np.float32, np.float32, 1.2),          # promote FLOAT, Axpy
    (np.int32, np.int32, np.float32, 1),          # out cast INT32 -> FLOAT (int alpha)
    (np.float32, np.float32, np.float16, 1.2),    # out cast FLOAT -> FLOAT16
    (np.int32, BF16, BF16, 1.0)])
def test_promotion_and_out_casts(stream, xs, ys, zs, alpha):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(777) * 30).astype(xs)
    b = (rng.standard_normal(777) * 30).astype(ys)
    got, _ = add_op(stream, a, b, alpha, zs, F32 if isinstance(alpha, float) else aclnn.ACL_INT32)
    np.testing.assert_allclose(got.astype(np.float64), add_golden(a, b, alpha, zs).astype(np.float64),
                               rtol=2e-2, atol=0.3)


def test_type_rules():
    assert can_cast(np.int32, np.float16) and can_cast(np.bool_, np.int8)
    assert not can_cast(np.float32, np.int32) and not can_cast(np.int32, np.bool_)
    assert not can_cast(np.complex64, np.float32) and can_cast(np.float32, BF16)
    assert broadcast_shape((4, 1), (1, 5)) == (4, 5) and broadcast_shape((3,), (2, 3)) == (2, 3)
    assert broadcast_shape((2, 3), (4,)) is None and broadcast_shape((), (5,)) == (5,)


# -- broadcasting, strides, sizes ------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb,gathers,ws", [
    ((4, 1), (1, 5), 2, 2 * 512), ((3,), (2, 3), 1, 512), ((2, 3), (1,), 1, 512),
    ((), (5,), 1, 512),
    ((33, 1, 70), (1, 9, 70), 2, 2 * 83456)])     # 33*9*70*4 = 83160 B -> 163 x 512 B
def test_broadcasting(stream, sa, sb, gathers, ws):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    before = len(runtime.current_device().profiles)
    got, workspace = add_op(stream, a, b, 1.2, np.float32)
    np.testing.assert_allclose(got, add_golden(a, b, np.float32(1.2), np.float32), rtol=1e-6,
                               atol=1e-6)
    # each broadcast input goes through BroadcastTo into a 512 B aligned workspace buffer
    assert workspace == ws
    names = [p.op_name for p in runtime.current_device().profiles[before:]]
    assert names == ["BroadcastTo"] * gathers + ["Axpy"]


def test_non_contiguous_input(stream):
    base = np.arange(12, dtype=np.float32)
    ptr = to_device(base).tensor_data
    # the transpose of a (4, 3) storage: view (3, 4), strides (1, 3)
    t = aclnn.aclCreateTensor([3, 4], F32, [1, 3], 0, aclnn.ACL_FORMAT_ND, [12], ptr)
    other = np.ones((3, 4), np.float32)
    out = empty_out((3, 4), np.float32)
    ws = run(stream, aclnnAddGetWorkspaceSize, aclnnAdd, t, to_device(other), scalar(2.0), out)
    np.testing.assert_array_equal(from_device(out, np.float32), base.reshape(4, 3).T + 2)
    assert ws == 512


@pytest.mark.parametrize("n", [1, 47, 48 * 1024 + 5])
def test_sizes_not_divisible_by_cores_or_tiles(stream, n):
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, np.float32)
    got, _ = add_op(stream, a, b, 2.0, np.float32)
    np.testing.assert_array_equal(got, a + 1)


@pytest.mark.parametrize("sa,sb", [((0, 4), (0, 4)), ((0, 4), (4,)), ((2, 0), (1,))])
def test_empty_tensors_need_no_workspace_and_launch_nothing(stream, sa, sb):
    before = len(runtime.current_device().profiles)
    out = empty_out(np.broadcast_shapes(sa, sb), np.float32)
    ws = run(stream, aclnnAddGetWorkspaceSize, aclnnAdd, to_device(np.zeros(sa, np.float32)),
             to_device(np.zeros(sb, np.float32)), scalar(1.2), out)
    assert ws == 0 and len(runtime.current_device().profiles) == before


# -- in place ------------------------------------------------------------------------------------
def test_inplace_add_with_broadcast_other(stream):
    a = np.arange(20, dtype=np.int32).reshape(4, 5)
    b = np.array([1, -2, 3, -4, 5], np.int32)
    ta, tb = to_device(a), to_device(b)
    ws = run(stream, aclnnInplaceAddGetWorkspaceSize, aclnnInplaceAdd, ta, tb,
             scalar(3, aclnn.ACL_INT64))
    np.testing.assert_array_equal(from_device(ta, np.int32), a + 3 * b)
    np.testing.assert_array_equal(from_device(tb, np.int32), b)
    assert ws == 512


def test_repeatable_inplace_executor_accumulates(stream):
    a = np.zeros(100, np.float32)
    b = np.ones(100, np.float32)
    ta = to_device(a)
    ws, ex, ret = aclnnInplaceAddGetWorkspaceSize(ta, to_device(b), scalar(0.5))
    assert ret == 0 and ws == 0
    assert aclnn.aclSetAclOpExecutorRepeatable(ex) == 0
    for _ in range(3):
        assert aclnnInplaceAdd(0, 0, ex, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    np.testing.assert_array_equal(from_device(ta, np.float32), np.full(100, 1.5, np.float32))
    assert aclnn.aclDestroyAclOpExecutor(ex) == 0


# -- validation: code, message naming the argument, nothing changed -------------------------------
def _fresh():
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(3)]
    return arrays, [to_device(a) for a in arrays]


def _retype(t, dt):
    return aclnn.aclCreateTensor(list(t.view_dims), dt, list(t.strides), 0, t.format,
                                 list(t.storage_dims), t.tensor_data)


def _reshape(t, shape, fmt=aclnn.ACL_FORMAT_ND, strides=None):
    return aclnn.aclCreateTensor(list(shape), t.data_type, strides, 0, fmt, [32], t.tensor_data)


ALPHA = 1.2
ADD_CASES = {
    "null self": (lambda T, a: (None, T[1], a, T[2]), 161001, "self"),
    "null other": (lambda T, a: (T[0], None, a, T[2]), 161001, "other"),
    "null alpha": (lambda T, a: (T[0], T[1], None, T[2]), 161001, "alpha"),
    "null out": (lambda T, a: (T[0], T[1], a, None), 161001, "out"),
    "uint16 self": (lambda T, a: (_retype(T[0], aclnn.ACL_UINT16), T[1], a, T[2]), 161002, "self"),
    "uint32 other": (lambda T, a: (T[0], _retype(T[1], aclnn.ACL_UINT32), a, T[2]), 161002, "other"),
    "float alpha, int tensors": (lambda T, a: (_retype(T[0], aclnn.ACL_INT32),
                                               _retype(T[1], aclnn.ACL_INT32), a,
                                               _retype(T[2], aclnn.ACL_INT32)), 161002, "alpha"),
    "complex alpha": (lambda T, a: (T[0], T[1], scalar(1, aclnn.ACL_COMPLEX64), T[2]), 161002, "alpha"),
    "float alpha, bool tensors": (lambda T, a: (_retype(T[0], aclnn.ACL_BOOL),
                                                _retype(T[1], aclnn.ACL_BOOL), a,
                                                _retype(T[2], aclnn.ACL_BOOL)), 161002, "alpha"),
    "float to int32 out": (lambda T, a: (T[0], T[1], a, _retype(T[2], aclnn.ACL_INT32)), 161002, "out"),
    "int to bool out": (lambda T, a: (_retype(T[0], aclnn.ACL_INT32), _retype(T[1], aclnn.ACL_INT32),
                                      scalar(1, aclnn.ACL_INT32), _retype(T[2], aclnn.ACL_BOOL)),
                        161002, "out"),
    "9 dims self": (lambda T, a: (_reshape(T[0], [1] * 7 + [4, 8]), T[1], a, T[2]), 161002, "self"),
    "9 dims other": (lambda T, a: (T[0], _reshape(T[1], [1] * 7 + [4, 8]), a, T[2]), 161002, "other"),
    "no broadcast": (lambda T, a: (T[0], _reshape(T[1], [3, 8]), a, T[2]), 161002, "other"),
    "out shape": (lambda T, a: (T[0], T[1], a, _reshape(T[2], [8, 4])), 161002, "out"),
    "NZ out": (lambda T, a: (T[0], T[1], a, _reshape(T[2], [4, 8], aclnn.ACL_FORMAT_FRACTAL_NZ)),
               161002, "out"),
    "non-contiguous out": (lambda T, a: (T[0], T[1], a, _reshape(T[2], [4, 8], strides=[1, 4])),
                           161002, "out"),
    "self not device memory": (lambda T, a: (aclnn.aclCreateTensor([4, 8], F32, None, 0,
                                             aclnn.ACL_FORMAT_ND, [32], 0x1000), T[1], a, T[2]),
                               161002, "self"),
    "other past its allocation": (lambda T, a: (T[0], aclnn.aclCreateTensor(
        [4, 8], F32, None, 16, aclnn.ACL_FORMAT_ND, [48], T[1].tensor_data), a, T[2]), 161002, "other"),
    "negative strides": (lambda T, a: (T[0], _reshape(T[1], [4, 8], strides=[8, -1]), a, T[2]),
                         161002, "other"),
    "int64 (simulator)": (lambda T, a: (_retype(T[0], aclnn.ACL_INT64), _retype(T[1], aclnn.ACL_INT64),
                                        scalar(1, aclnn.ACL_INT64), _retype(T[2], aclnn.ACL_INT64)),
                          161002, "self"),
    "double (simulator)": (lambda T, a: (T[0], _retype(T[1], aclnn.ACL_DOUBLE), a, _retype(
        T[2], aclnn.ACL_DOUBLE)), 161002, "other"),
}


@pytest.mark.parametrize("case", list(ADD_CASES))
def test_invalid_add_arguments(stream, case):
    build, code, arg = ADD_CASES[case]
    arrays, tensors = _fresh()
    ws, ex, ret = aclnnAddGetWorkspaceSize(*build(tensors, scalar(ALPHA)))
    assert (ws, ex, ret) == (0, None, code)
    msg = acl.get_recent_err_msg()
    assert msg and arg in msg, msg
    assert acl.rt.synchronize_stream(stream) == 0
    assert_unchanged(tensors, arrays)


INPLACE_CASES = {
    "null selfRef": (lambda T, a: (None, T[1], a), 161001, "selfRef"),
    "null other": (lambda T, a: (T[0], None, a), 161001, "other"),
    "null alpha": (lambda T, a: (T[0], T[1], None), 161001, "alpha"),
    "broadcast grows selfRef": (lambda T, a: (_reshape(T[0], [1, 8]), T[1], a), 161002, "selfRef"),
    "no broadcast": (lambda T, a: (T[0], _reshape(T[1], [3, 1]), a), 161002, "other"),
    "promote not castable to selfRef": (lambda T, a: (_retype(T[0], aclnn.ACL_INT32), T[1],
                                                      scalar(1, aclnn.ACL_INT32)), 161002, "selfRef"),
    "uint16 other": (lambda T, a: (T[0], _retype(T[1], aclnn.ACL_UINT16), a), 161002, "other"),
}


@pytest.mark.parametrize("case", list(INPLACE_CASES))
def test_invalid_inplace_arguments(stream, case):
    build, code, arg = INPLACE_CASES[case]
    arrays, tensors = _fresh()
    ws, ex, ret = aclnnInplaceAddGetWorkspaceSize(*build(tensors, scalar(ALPHA)))
    assert (ws, ex, ret) == (0, None, code)
    msg = acl.get_recent_err_msg()
    assert msg and arg in msg, msg
    assert acl.rt.synchronize_stream(stream) == 0
    assert_unchanged(tensors, arrays)


def test_destroyed_alpha(stream):
    _, tensors = _fresh()
    a = scalar(1.0)
    assert aclnn.aclDestroyScalar(a) == 0
    _, ex, ret = aclnnAddGetWorkspaceSize(tensors[0], tensors[1], a, tensors[2])
    assert ret == 161002 and ex is None and "alpha" in acl.get_recent_err_msg()


def test_second_phase_errors_change_nothing(stream):
    arrays, tensors = _fresh()
    b = to_device(np.ones(8, np.float32))
    ws, ex, ret = aclnnAddGetWorkspaceSize(tensors[0], b, scalar(ALPHA), tensors[2])
    assert ret == 0 and ws == 512
    small, _ = acl.rt.malloc(256, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    assert aclnnAdd(small, 256, ex, stream) == aclnn.ACLNN_ERR_PARAM_INVALID
    assert "minimum workspace size" in acl.get_recent_err_msg()
    assert aclnnAdd(0, ws, ex, stream) == aclnn.ACLNN_ERR_PARAM_NULLPTR
    assert aclnnAdd(0, 0, None, stream) == aclnn.ACLNN_ERR_PARAM_NULLPTR
    assert acl.rt.synchronize_stream(stream) == 0
    np.testing.assert_array_equal(from_device(tensors[2], np.float32), arrays[2])


def test_socs(tmp_path):
    try:
        init_runtime(tmp_path, "Ascend310P3")
        t = aclnn.aclCreateTensor([4], F32, [1], 0, aclnn.ACL_FORMAT_ND, [4], 0)
        _, _, ret = aclnnAddGetWorkspaceSize(t, t, scalar(1.0), t)
        assert ret == aclnn.ACLNN_ERR_RUNTIME_ERROR and "set_device" in acl.get_recent_err_msg()
        assert acl.rt.set_device(0) == 0
        _, _, ret = aclnnAddGetWorkspaceSize(t, t, scalar(1.0), t)
        assert ret == 161002 and "Ascend310P3" in acl.get_recent_err_msg()
        # Atlas training (910A): supported, without BF16
        s = open_stream(tmp_path, "Ascend910A")
        a = np.arange(5000, dtype=np.float32)
        got, _ = add_op(s, a, a, 1.0, np.float32)
        np.testing.assert_array_equal(got, 2 * a)
        assert runtime.current_device().profiles[-1].block_dim == 5
        tb = to_device(np.zeros(4, BF16))
        _, _, ret = aclnnAddGetWorkspaceSize(tb, tb, scalar(1.0), tb)
        assert ret == 161002 and "BF16" in acl.get_recent_err_msg()
    finally:
        runtime.reset()
