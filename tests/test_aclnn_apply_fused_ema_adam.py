"""aclnnApplyFusedEmaAdam through the host API: the official sample, dtypes and ranks,
every validation path (status code, message naming the argument, data unchanged) and the
executor's lifetime rules (docs/reference/api.md §3-§4, docs/reference/operators.md §1)."""
import math

import ml_dtypes
import numpy as np
import pytest

import aclnn
from aclnn import acl, runtime
from npusim.kernels.apply_fused_ema_adam.golden import apply_fused_ema_adam_golden

from aclnn_helpers import (assert_unchanged, from_device, init_runtime, run_example, run_two_phase,
                           to_device)

ATTRS = (0.001, 0.5, 0.9, 0.999, 1e-8, 1, True, 0.5)   # lr emaDecay beta1 beta2 eps mode bias wd


def make_state(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape).astype(dtype) for _ in range(5)]
    arrays[3] = np.abs(arrays[3]).astype(dtype)
    return arrays


def run_op(stream, tensors, step_t, attrs=ATTRS):
    return run_two_phase(stream, aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize,
                         aclnn.aclnnApplyFusedEmaAdam, *tensors, step_t, *attrs)[0]


def test_official_sample_prints_the_formula_values(capsys):
    results = run_example("apply_fused_ema_adam_sample")
    # hand formula (seed 计算公式) with grad = var = m = v = s = x, step 10, mode 1
    bc1, bc2 = 1 - 0.9 ** 10, 1 - 0.999 ** 10
    for i, x in enumerate(range(1, 9)):
        m = 0.9 * x + 0.1 * x
        v = 0.999 * x + 0.001 * x * x
        upd = (m / bc1) / (math.sqrt(v / bc2) + 1e-8) + 0.5 * x
        var = x - 0.001 * upd
        s = 0.5 * x + 0.5 * var
        for name, expect in (("var", var), ("m", m), ("v", v), ("s", s)):
            assert results[name][i] == pytest.approx(expect, rel=2e-6), (name, i)
    out = capsys.readouterr().out
    assert "var result[0] is: " in out and out.count("result[") == 32


@pytest.mark.parametrize("shape", [[7], [3, 5], [2, 3, 4], [1, 2, 3, 4], [2, 1, 2, 1, 3],
                                   [1, 1, 2, 1, 1, 3], [2, 1, 1, 1, 1, 1, 5], [1, 2, 1, 2, 1, 2, 1, 3]])
def test_one_to_eight_dims_match_golden(stream, shape):
    arrays = make_state(shape, np.float32, seed=len(shape))
    tensors = [to_device(a) for a in arrays]
    step_t = to_device(np.array([3], np.int64))
    run_op(stream, tensors, step_t)
    golden = apply_fused_ema_adam_golden(*arrays, 3, lr=0.001, ema_decay=0.5, mode=1,
                                         weight_decay=0.5)
    for t, g in zip(tensors[1:], golden):
        np.testing.assert_allclose(from_device(t, np.float32), g, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype,rtol", [(np.float16, 2e-3), (ml_dtypes.bfloat16, 1.6e-2)])
def test_half_precision_dtypes(stream, dtype, rtol):
    arrays = make_state([64, 33], dtype, seed=9)
    tensors = [to_device(a) for a in arrays]
    run_op(stream, tensors, to_device(np.array([5], np.int64)), (1e-2, 0.9, 0.9, 0.999, 1e-8, 0, True, 0.1))
    golden = apply_fused_ema_adam_golden(*arrays, 5, lr=1e-2, ema_decay=0.9, mode=0, weight_decay=0.1)
    for t, g in zip(tensors[1:], golden):
        np.testing.assert_allclose(from_device(t, dtype).astype(np.float64), g.astype(np.float64),
                                   rtol=rtol, atol=rtol)


def test_empty_tensor_needs_no_workspace(stream):
    tensors = [to_device(np.zeros((0, 4), np.float32)) for _ in range(5)]
    assert run_op(stream, tensors, to_device(np.array([1], np.int64))) == 0


# -- validation: code, message naming the argument, nothing changed -------------------------
def _fresh(stream):
    arrays = make_state([4, 8], np.float32, seed=1)
    return arrays, [to_device(a) for a in arrays], to_device(np.array([2], np.int64))


def _bad_cases():
    f32 = aclnn.ACL_FLOAT

    def retype(t, dt):
        return aclnn.aclCreateTensor(list(t.view_dims), dt, list(t.strides), 0, t.format,
                                     list(t.storage_dims), t.tensor_data)

    return {
        "null grad": (lambda T, s: (None, *T[1:], s), 161001, "grad"),
        "null step": (lambda T, s: (*T, None), 161001, "step"),
        "int32 grad": (lambda T, s: (retype(T[0], aclnn.ACL_INT32), *T[1:], s), 161002, "grad"),
        "fp16 var": (lambda T, s: (T[0], retype(T[1], aclnn.ACL_FLOAT16), *T[2:], s), 161002, "varRef"),
        "shape m": (lambda T, s: (*T[:2], aclnn.aclCreateTensor([32], f32, [1], 0, aclnn.ACL_FORMAT_ND, [32], T[2].tensor_data), *T[3:], s), 161002, "mRef"),
        "9 dims": (lambda T, s: tuple(aclnn.aclCreateTensor([1] * 7 + [4, 8], f32, None, 0, aclnn.ACL_FORMAT_ND, [32], t.tensor_data) for t in T) + (s,), 161002, "grad"),
        "step int32": (lambda T, s: (*T, retype(s, aclnn.ACL_INT32)), 161002, "step"),
        "step shape": (lambda T, s: (*T, aclnn.aclCreateTensor([1, 1], aclnn.ACL_INT64, [1, 1], 0, aclnn.ACL_FORMAT_ND, [1], s.tensor_data)), 161002, "step"),
        "non-contiguous": (lambda T, s: (*T[:4], aclnn.aclCreateTensor([4, 8], f32, [1, 4], 0, aclnn.ACL_FORMAT_ND, [32], T[4].tensor_data), s), 161002, "sRef"),
        "NZ format": (lambda T, s: (*T[:3], aclnn.aclCreateTensor([4, 8], f32, [8, 1], 0, aclnn.ACL_FORMAT_FRACTAL_NZ, [4, 8], T[3].tensor_data), T[4], s), 161002, "vRef"),
        "not device memory": (lambda T, s: (*T[:4], aclnn.aclCreateTensor([4, 8], f32, [8, 1], 0, aclnn.ACL_FORMAT_ND, [4, 8], 0x1000), s), 161002, "sRef"),
        "past the allocation": (lambda T, s: (*T[:4], aclnn.aclCreateTensor([4, 8], f32, [8, 1], 16, aclnn.ACL_FORMAT_ND, [48], T[4].tensor_data), s), 161002, "sRef"),
    }


@pytest.mark.parametrize("case", list(_bad_cases()))
def test_invalid_arguments(stream, case):
    build, code, arg = _bad_cases()[case]
    arrays, tensors, step_t = _fresh(stream)
    ws, ex, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(*build(tensors, step_t), *ATTRS)
    assert (ws, ex, ret) == (0, None, code)
    msg = acl.get_recent_err_msg()
    assert msg and arg in msg
    acl.rt.synchronize_stream(stream)
    assert_unchanged(tensors, arrays)


@pytest.mark.parametrize("attrs,arg", [((0.001, 0.5, 0.9, 0.999, 1e-8, 2, True, 0.5), "mode"),
                                       (("x", 0.5, 0.9, 0.999, 1e-8, 1, True, 0.5), "lr")])
def test_invalid_attributes(stream, attrs, arg):
    arrays, tensors, step_t = _fresh(stream)
    _, ex, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(*tensors, step_t, *attrs)
    assert ret == aclnn.ACLNN_ERR_PARAM_INVALID and ex is None
    assert arg in acl.get_recent_err_msg()
    assert_unchanged(tensors, arrays)


def test_second_phase_errors_change_nothing(stream):
    arrays, tensors, step_t = _fresh(stream)
    ws, ex, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(*tensors, step_t, *ATTRS)
    assert ret == 0 and ws == 16 * 1024 * 1024
    small, _ = acl.rt.malloc(ws - 32, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    assert aclnn.aclnnApplyFusedEmaAdam(small, ws - 32, ex, stream) == aclnn.ACLNN_ERR_PARAM_INVALID
    assert "minimum workspace size" in acl.get_recent_err_msg()
    assert aclnn.aclnnApplyFusedEmaAdam(0, ws, ex, stream) == aclnn.ACLNN_ERR_PARAM_NULLPTR
    assert aclnn.aclnnApplyFusedEmaAdam(0, 0, None, stream) == aclnn.ACLNN_ERR_PARAM_NULLPTR
    assert acl.rt.synchronize_stream(stream) == 0
    assert_unchanged(tensors, arrays)


def test_executor_is_single_use(stream):
    arrays, tensors, step_t = _fresh(stream)
    ws, ex, _ = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(*tensors, step_t, *ATTRS)
    wptr, _ = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    assert aclnn.aclnnApplyFusedEmaAdam(wptr, ws, ex, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    after_one = [from_device(t, np.float32) for t in tensors]
    assert aclnn.aclnnApplyFusedEmaAdam(wptr, ws, ex, stream) == aclnn.ACLNN_ERR_PARAM_INVALID
    assert "already run" in acl.get_recent_err_msg()
    assert acl.rt.synchronize_stream(stream) == 0
    assert_unchanged(tensors, after_one)
    assert aclnn.aclDestroyAclOpExecutor(ex) == aclnn.ACLNN_ERR_INNER


def test_repeatable_executor_runs_until_destroyed(stream):
    arrays, tensors, step_t = _fresh(stream)
    ws, ex, _ = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(*tensors, step_t, *ATTRS)
    assert aclnn.aclSetAclOpExecutorRepeatable(ex) == 0
    wptr, _ = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    for _ in range(2):
        assert aclnn.aclnnApplyFusedEmaAdam(wptr, ws, ex, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    state = arrays
    for _ in range(2):   # the step tensor still holds 2: two updates with step 2
        state = [state[0], *apply_fused_ema_adam_golden(*state, 2, lr=0.001, ema_decay=0.5,
                                                         mode=1, weight_decay=0.5)]
    for t, g in zip(tensors[1:], state[1:]):
        np.testing.assert_allclose(from_device(t, np.float32), g, rtol=1e-5, atol=1e-6)
    assert aclnn.aclDestroyAclOpExecutor(ex) == 0
    assert aclnn.aclDestroyAclOpExecutor(None) == aclnn.ACLNN_ERR_INNER_NULLPTR
    assert aclnn.aclSetAclOpExecutorRepeatable(None) == aclnn.ACLNN_ERR_INNER_NULLPTR


def test_unsupported_soc_and_no_device(tmp_path):
    try:
        init_runtime(tmp_path, "Ascend910A")
        t = aclnn.aclCreateTensor([4], aclnn.ACL_FLOAT, [1], 0, aclnn.ACL_FORMAT_ND, [4], 0)
        _, _, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(t, t, t, t, t, t, *ATTRS)
        assert ret == aclnn.ACLNN_ERR_RUNTIME_ERROR and "set_device" in acl.get_recent_err_msg()
        assert acl.rt.set_device(0) == 0
        _, _, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(t, t, t, t, t, t, *ATTRS)
        assert ret == aclnn.ACLNN_ERR_PARAM_INVALID and "Ascend910A" in acl.get_recent_err_msg()
    finally:
        runtime.reset()


def test_profile_of_the_launch(stream):
    arrays = make_state([48 * 1000], np.float32)
    tensors = [to_device(a) for a in arrays]
    run_op(stream, tensors, to_device(np.array([1], np.int64)))
    prof = runtime.current_device().profiles[-1]
    assert prof.op_name == "ApplyFusedEmaAdam" and prof.block_dim == 48
    assert prof.bytes_written == 4 * 48000 * 4
    assert set(prof.pipe_time_us) == {"aiv_mte2_time", "aiv_vec_time", "aiv_mte3_time", "aiv_scalar_time"}
