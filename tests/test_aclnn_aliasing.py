"""Aliasing at the aclnn layer: the exact byte-overlap test against a brute-force byte set,
and each operator's rule (its module docstring) -- outputs that overlap what the kernel
still reads, or each other, are 161002 naming both arguments and change nothing; the
documented in-place forms, disjoint views of one allocation and overlaps the workspace
makes harmless still compute the formula. Also: Softmax and RmsNorm check an empty input
as they check a non-empty one."""
import itertools

import numpy as np
import pytest

import aclnn
from aclnn import acl
from aclnn.constants import aclDataTypeSize
from aclnn.ops import _check
from aclnn.ops.add import (aclnnAdd, aclnnAddGetWorkspaceSize, aclnnInplaceAdd,
                           aclnnInplaceAddGetWorkspaceSize)
from aclnn.ops.apply_add_sign import aclnnApplyAddSign, aclnnApplyAddSignGetWorkspaceSize
from aclnn.ops.apply_fused_ema_adam import (aclnnApplyFusedEmaAdam,
                                            aclnnApplyFusedEmaAdamGetWorkspaceSize)
from aclnn.ops.fused_sparse_adam import aclnnFusedSparseAdamGetWorkspaceSize
from aclnn.ops.matmul import (aclnnBatchMatMulGetWorkspaceSize, aclnnMatmul,
                              aclnnMatmulGetWorkspaceSize, aclnnMm, aclnnMmGetWorkspaceSize)
from aclnn.ops.rms_norm import aclnnRmsNorm, aclnnRmsNormGetWorkspaceSize
from aclnn.ops.softmax import aclnnSoftmax, aclnnSoftmaxGetWorkspaceSize
from aclnn.tensor import aclTensor

from aclnn_helpers import to_device

F32 = aclnn.ACL_FLOAT
ND = aclnn.ACL_FORMAT_ND


def on(t, shape, offset=0, dtype=None, strides=None):
    """Another view of ``t``'s allocation: ``shape`` elements of ``dtype`` (t's by default)
    from element ``offset`` (in that dtype), contiguous unless ``strides`` are given."""
    dtype = t.data_type if dtype is None else dtype
    n = t.storage_numel() * t.itemsize // aclDataTypeSize(dtype)
    return aclnn.aclCreateTensor(list(shape), dtype, strides, offset, ND, [n], t.tensor_data)


def from_device(t):
    """The (contiguous) view ``t`` copied to the host, from its first element."""
    out = np.zeros(t.view_dims, t.np_dtype)
    if out.nbytes:
        assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, t.data_address(),
                             out.nbytes, aclnn.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    return out


def assert_unchanged(tensors, arrays):
    for t, a in zip(tensors, arrays):
        np.testing.assert_array_equal(from_device(t), a)


def run(second_phase, ws, ex, stream):
    wptr = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0] if ws else 0
    assert second_phase(wptr, ws, ex, stream) == 0, acl.get_recent_err_msg()
    assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()


def refused(result, *names):
    """The first phase returned (0, None, 161002) with a message naming ``names``."""
    msg = acl.get_recent_err_msg() or ""
    assert result == (0, None, aclnn.ACLNN_ERR_PARAM_INVALID), msg
    for name in names:
        assert name in msg, msg
    return msg


# -- the overlap test ---------------------------------------------------------------------
def _bytes(t):
    """Every device byte a view addresses, one element at a time (the brute force)."""
    out = set()
    if t.is_empty():
        return out
    for idx in itertools.product(*(range(n) for n in t.view_dims)):
        e = t.data_address() + sum(i * s for i, s in zip(idx, t.strides)) * t.itemsize
        out.update(range(e, e + t.itemsize))
    return out


def _view(shape, strides, offset, dtype=F32):
    return aclTensor(shape, dtype, strides, offset, ND, (1 << 20,), 0x10000)


def test_overlap_equals_the_brute_force_byte_sets():
    rng = np.random.default_rng(0)
    dtypes = (aclnn.ACL_FLOAT, aclnn.ACL_FLOAT16, aclnn.ACL_INT8, aclnn.ACL_DOUBLE)
    hits = near = 0
    for _ in range(1500):
        a, b = (_view(list(rng.integers(0, 5, nd)), list(rng.integers(-3, 13, nd)),
                      int(rng.integers(100, 160)) // aclDataTypeSize(dt), dt)
                for nd, dt in zip(rng.integers(0, 4, 2), rng.choice(dtypes, 2)))
        sa, sb = _bytes(a), _bytes(b)
        want = bool(sa & sb)
        assert _check.overlap(a, b) == want, (a, b)
        hits += want
        # the hard "no": the spans interleave but no byte is shared
        near += bool(not want and sa and sb and min(sa) < max(sb) and min(sb) < max(sa))
    assert hits > 150 and near > 50, (hits, near)      # every answer was exercised


def test_overlap_of_large_views_sharing_an_allocation():
    # disjoint row slices and interleaved columns of one 4096 x 4096 buffer: no byte shared,
    # although the spans meet and a column view has 2^23 runs of one element
    top, bottom = _view((2048, 4096), (4096, 1), 0), _view((2048, 4096), (4096, 1), 2048 * 4096)
    even, odd = _view((4096, 2048), (4096, 2), 0), _view((4096, 2048), (4096, 2), 1)
    assert not _check.overlap(top, bottom) and not _check.overlap(even, odd)
    # ... but a column view meets the rows it crosses, and a transpose meets its original
    assert _check.overlap(even, bottom) and _check.overlap(odd, top)
    full = _view((4096, 4096), (4096, 1), 0)
    assert _check.overlap(_view((4096, 4096), (1, 4096), 0), full)
    assert not _check.overlap(_view((4, 4), (1, 4096), 4096 * 4096), full)   # just past it
    assert _check.same_elements(_view((8,), (1,), 0), _view((1, 8), (99, 1), 0))
    # INT32 and FLOAT elements coincide byte for byte; FLOAT16 ones do not
    assert _check.same_elements(_view((8,), (1,), 0), _view((8,), (1,), 0, aclnn.ACL_INT32))
    assert not _check.same_elements(_view((8,), (1,), 0), _view((8,), (1,), 0, aclnn.ACL_FLOAT16))
    assert not _check.same_elements(_view((8,), (1,), 0), _view((8,), (1,), 1))


# -- Matmul, Mm, BatchMatMul --------------------------------------------------------------
def _square(n, seed, batch=()):
    return np.random.default_rng(seed).standard_normal(batch + (n, n)).astype(np.float32)


@pytest.mark.parametrize("first,batch", [(aclnnMatmulGetWorkspaceSize, ()),
                                         (aclnnMmGetWorkspaceSize, ()),
                                         (aclnnBatchMatMulGetWorkspaceSize, (2,))],
                         ids=["Matmul", "Mm", "BatchMatMul"])
@pytest.mark.parametrize("alias", ["self", "mat2"])
def test_matmul_out_the_same_tensor_as_an_input_is_refused(stream, first, batch, alias):
    # 256 x 256 fp32 with out = self returned 0 and a max error of ~3e4 before
    a, b = _square(256, 1, batch), _square(256, 2, batch)
    at, bt = to_device(a), to_device(b)
    out = at if alias == "self" else bt
    refused(first(at, bt, out, 0), "out", alias)
    assert_unchanged([at, bt], [a, b])


def test_matmul_out_partially_overlapping_self_is_refused(stream):
    a, b = _square(128, 3), _square(128, 4)
    buf = to_device(np.concatenate([a.ravel(), np.zeros(64 * 128, np.float32)]))
    self = on(buf, (128, 128))
    out = on(buf, (128, 128), offset=64 * 128)        # self's last 64 rows, then 64 more
    refused(aclnnMmGetWorkspaceSize(self, to_device(b), out, 0), "out", "self")
    np.testing.assert_array_equal(from_device(self), a)


def test_matmul_disjoint_rows_of_one_allocation_are_accepted(stream):
    # self is the top half of a buffer and out the bottom half: one allocation, no shared
    # byte (a "same allocation" rule would refuse it)
    a, b = _square(64, 5), _square(64, 6)
    buf = to_device(np.concatenate([a, np.zeros_like(a)]))
    self, out = on(buf, (64, 64)), on(buf, (64, 64), offset=64 * 64)
    ws, ex, ret = aclnnMmGetWorkspaceSize(self, to_device(b), out, 0)
    assert ret == 0, acl.get_recent_err_msg()
    run(aclnnMm, ws, ex, stream)
    np.testing.assert_allclose(from_device(out), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(from_device(self), a)


def test_matmul_overlap_through_a_cast_is_harmless_and_accepted(stream):
    # FLOAT16 self with FLOAT mat2 computes in FLOAT: self is Cast into the workspace before
    # the product, so out (FLOAT) may lie on self's bytes
    a = _square(64, 7).astype(np.float16)
    b = _square(64, 8)
    buf = to_device(np.concatenate([a.ravel(), np.zeros(64 * 64, np.float16)]))
    self = on(buf, (64, 64))
    out = on(buf, (64, 64), dtype=F32)                 # the same first byte
    ws, ex, ret = aclnnMatmulGetWorkspaceSize(self, to_device(b), out, 0)
    assert ret == 0, acl.get_recent_err_msg()
    run(aclnnMatmul, ws, ex, stream)
    np.testing.assert_allclose(from_device(out), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


def test_second_phase_refuses_an_output_moved_onto_an_input(stream):
    a, b = _square(256, 9), _square(256, 10)
    at, bt, out = to_device(a), to_device(b), to_device(np.zeros_like(a))
    ws, ex, ret = aclnnMatmulGetWorkspaceSize(at, bt, out, 0)
    assert ret == 0 and aclnn.aclSetAclOpExecutorRepeatable(ex) == 0
    assert aclnn.aclSetOutputTensorAddr(ex, 0, out, at.tensor_data) == 0
    wptr = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0]
    assert aclnnMatmul(wptr, ws, ex, stream) == aclnn.ACLNN_ERR_PARAM_INVALID
    msg = acl.get_recent_err_msg()
    assert "out" in msg and "self" in msg, msg
    assert acl.rt.synchronize_stream(stream) == 0
    assert_unchanged([at, bt], [a, b])


# -- optimizers: one tensor as two outputs ------------------------------------------------
def _vec(n, seed, positive=False):
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    return np.abs(x) if positive else x


def _ema_args(var, m, v, s, grad, step):
    return (grad, var, m, v, s, step, 1e-3, 0.999, 0.9, 0.999, 1e-8, 1, True, 0.01)


def test_apply_fused_ema_adam_one_tensor_as_two_outputs_is_refused(stream):
    host = [_vec(1000, k, positive=k == 2) for k in range(5)]
    var, m, v, s, grad = (to_device(x) for x in host)
    step = to_device(np.array([3], np.int64))
    refused(aclnnApplyFusedEmaAdamGetWorkspaceSize(*_ema_args(var, m, m, s, grad, step)),
            "mRef", "vRef")
    refused(aclnnApplyFusedEmaAdamGetWorkspaceSize(*_ema_args(var, m, v, var, grad, step)),
            "varRef", "sRef")
    # step read on every core while they write var: its 8 bytes on var's are refused
    on_var = on(var, (1,), offset=10, dtype=aclnn.ACL_INT64)
    refused(aclnnApplyFusedEmaAdamGetWorkspaceSize(*_ema_args(var, m, v, s, grad, on_var)),
            "varRef", "step")
    # grad half a tile off var: read after another tile of var was written
    refused(aclnnApplyFusedEmaAdamGetWorkspaceSize(*_ema_args(
        on(var, (900,)), on(m, (900,)), on(v, (900,)), on(s, (900,)),
        on(var, (900,), offset=100), step)), "varRef", "grad")
    assert_unchanged([var, m, v, s, grad], host)


def test_apply_fused_ema_adam_in_place_and_grad_as_var_match_the_formula(stream):
    # the documented in-place outputs as four slices of ONE allocation, grad = varRef itself
    n = 1000
    var0, m0, s0 = _vec(n, 0), _vec(n, 1), _vec(n, 3)
    v0 = _vec(n, 2, positive=True)
    buf = to_device(np.concatenate([var0, m0, v0, s0]))
    var, m, v, s = (on(buf, (n,), offset=k * n) for k in range(4))
    step = to_device(np.array([3], np.int64))
    ws, ex, ret = aclnnApplyFusedEmaAdamGetWorkspaceSize(*_ema_args(var, m, v, s, var, step))
    assert ret == 0, acl.get_recent_err_msg()
    run(aclnnApplyFusedEmaAdam, ws, ex, stream)
    # AdamW (mode 1), grad = var, by hand in float64
    g, lr, ema, b1, b2, eps, wd, t = var0.astype(np.float64), 1e-3, 0.999, 0.9, 0.999, 1e-8, 0.01, 3
    m1 = b1 * m0 + (1 - b1) * g
    v1 = b2 * v0 + (1 - b2) * g * g
    upd = (m1 / (1 - b1 ** t)) / (np.sqrt(v1 / (1 - b2 ** t)) + eps) + wd * var0
    var1 = var0 - lr * upd
    s1 = ema * s0 + (1 - ema) * var1
    for got, want in zip((var, m, v, s), (var1, m1, v1, s1)):
        np.testing.assert_allclose(from_device(got), want, rtol=2e-5, atol=1e-6)


def _sign_args(var, m, scalars, grad):
    return (var, m, *scalars, grad)


def _sign_scalars():
    return [to_device(np.array([x], np.float32)) for x in (0.01, 1.0, 0.5, 0.9)]


def test_apply_add_sign_one_tensor_as_two_outputs_is_refused(stream):
    host = [_vec(500, k) for k in range(3)]
    var, m, grad = (to_device(x) for x in host)
    scalars = _sign_scalars()
    refused(aclnnApplyAddSignGetWorkspaceSize(*_sign_args(var, var, scalars, grad)),
            "varRef", "mRef")
    # lr on m's first element: read by every core while m is written
    lr_on_m = on(m, (1,))
    refused(aclnnApplyAddSignGetWorkspaceSize(*_sign_args(var, m, [lr_on_m] + scalars[1:],
                                                          grad)), "mRef", "lr")
    assert_unchanged([var, m, grad], host)


def test_apply_add_sign_disjoint_halves_and_grad_as_m_match_the_formula(stream):
    n = 500
    var0, m0 = _vec(n, 4), _vec(n, 5)
    buf = to_device(np.concatenate([var0, m0]))
    var, m = on(buf, (n,)), on(buf, (n,), offset=n)
    ws, ex, ret = aclnnApplyAddSignGetWorkspaceSize(*_sign_args(var, m, _sign_scalars(), m))
    assert ret == 0, acl.get_recent_err_msg()
    run(aclnnApplyAddSign, ws, ex, stream)
    g = m0.astype(np.float64)                           # grad is mRef, read before written
    m1 = 0.9 * m0 + 0.1 * g
    var1 = var0 - 0.01 * (1.0 + 0.5 * np.sign(g) * np.sign(m1)) * g
    np.testing.assert_allclose(from_device(m), m1, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(from_device(var), var1, rtol=1e-5, atol=1e-6)


def test_fused_sparse_adam_one_tensor_as_two_outputs_is_refused(stream):
    host = [np.random.default_rng(k).standard_normal((6, 8)).astype(np.float32)
            for k in range(4)]
    host[2] = np.abs(host[2])
    var, m, v, grad = (to_device(x) for x in host)
    grad = on(grad, (3, 8))
    scalars = [to_device(np.array([x], np.float32)) for x in (0.5, 0.6, 0.01, 0.9, 0.99, 1e-8)]
    idx = to_device(np.array([0, 2, 4], np.int32))
    refused(aclnnFusedSparseAdamGetWorkspaceSize(var, m, m, *scalars, grad, idx, False),
            "mRef", "vRef")
    refused(aclnnFusedSparseAdamGetWorkspaceSize(var, m, v, *scalars, on(var, (3, 8), 8),
                                                 idx, False), "varRef", "grad")
    assert_unchanged([var, m, v], host[:3])


# -- Add: in place is the documented form, a shifted overlap is not ----------------------
def test_add_out_shifted_onto_self_is_refused_and_in_place_is_exact(stream):
    x, y = _vec(4096, 11), _vec(4096, 12)
    buf = to_device(np.concatenate([x, np.zeros(8, np.float32)]))
    self, other = on(buf, (4096,)), to_device(y)
    one = aclnn.aclCreateScalar(1.0, F32)
    refused(aclnnAddGetWorkspaceSize(self, other, one, on(buf, (4096,), offset=8)),
            "out", "self")
    np.testing.assert_array_equal(from_device(self), x)
    ws, ex, ret = aclnnAddGetWorkspaceSize(self, other, one, self)        # out = self
    assert ret == 0, acl.get_recent_err_msg()
    run(aclnnAdd, ws, ex, stream)
    np.testing.assert_array_equal(from_device(self), x + y)
    ws, ex, ret = aclnnInplaceAddGetWorkspaceSize(other, other, one)      # y += y
    assert ret == 0, acl.get_recent_err_msg()
    run(aclnnInplaceAdd, ws, ex, stream)
    np.testing.assert_array_equal(from_device(other), y + y)


# -- Softmax and RmsNorm: in place in every template; partial overlaps refused ---------------
@pytest.mark.parametrize("shape,dim,mode", [((40, 300), -1, "AR"), ((2, 9000), 1, "AR_RECOMPUTE"),
                                            ((3, 40, 70), 1, "ARA"),
                                            ((2, 300, 50), 1, "ARA_RECOMPUTE")])
def test_softmax_in_place_matches_the_formula_in_every_template(stream, shape, dim, mode):
    x = (np.random.default_rng(13).standard_normal(shape) * 3).astype(np.float32)
    t = to_device(x)
    ws, ex, ret = aclnnSoftmaxGetWorkspaceSize(t, dim, t)
    assert ret == 0 and ex.tiling.mode == mode, acl.get_recent_err_msg()
    run(aclnnSoftmax, ws, ex, stream)
    e = np.exp(x.astype(np.float64) - x.max(axis=dim, keepdims=True))
    np.testing.assert_allclose(from_device(t), e / e.sum(axis=dim, keepdims=True), rtol=1e-5,
                               atol=1e-9)


def test_softmax_out_one_row_after_self_is_refused(stream):
    x = np.random.default_rng(14).standard_normal((64, 300)).astype(np.float32)
    buf = to_device(np.concatenate([x.ravel(), np.zeros(300, np.float32)]))
    refused(aclnnSoftmaxGetWorkspaceSize(on(buf, (64, 300)), -1,
                                         on(buf, (64, 300), offset=300)), "out", "self")
    np.testing.assert_array_equal(from_device(on(buf, (64, 300))), x)


@pytest.mark.parametrize("shape", [(16, 256), (2, 8200)])          # NORMAL, SPLIT_D
def test_rms_norm_in_place_matches_the_formula(stream, shape):
    x = np.random.default_rng(15).standard_normal(shape).astype(np.float32)
    gamma = np.random.default_rng(16).standard_normal(shape[-1:]).astype(np.float32)
    xt, rstd = to_device(x), to_device(np.zeros((shape[0], 1), np.float32))
    ws, ex, ret = aclnnRmsNormGetWorkspaceSize(xt, to_device(gamma), 1e-6, xt, rstd)
    assert ret == 0, acl.get_recent_err_msg()
    run(aclnnRmsNorm, ws, ex, stream)
    r = 1 / np.sqrt((x.astype(np.float64) ** 2).mean(axis=-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(from_device(rstd), r, rtol=1e-5)
    np.testing.assert_allclose(from_device(xt), x * r * gamma, rtol=1e-5, atol=1e-6)


def test_rms_norm_overlapping_outputs_or_gamma_are_refused(stream):
    x = np.random.default_rng(17).standard_normal((16, 256)).astype(np.float32)
    host = [x, np.ones(256, np.float32), np.zeros((16, 256), np.float32)]
    xt, gamma, y = (to_device(a) for a in host)
    refused(aclnnRmsNormGetWorkspaceSize(xt, gamma, 1e-6, y, on(y, (16, 1))), "yOut", "rstdOut")
    refused(aclnnRmsNormGetWorkspaceSize(xt, on(y, (256,), offset=5 * 256), 1e-6, y,
                                         to_device(np.zeros((16, 1), np.float32))),
            "yOut", "gamma")
    refused(aclnnRmsNormGetWorkspaceSize(xt, gamma, 1e-6, y, on(xt, (16, 1), offset=3)),
            "rstdOut", "x")
    assert_unchanged([xt, gamma, y], host)


# -- Softmax / RmsNorm: an empty input is checked like any other --------------------------------
def _tensor(shape, dtype=F32, fmt=ND):
    ptr = acl.rt.malloc(256, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0]
    return aclnn.aclCreateTensor(list(shape), dtype, None, 0, fmt, list(shape), ptr)


@pytest.mark.parametrize("shape", [(3, 0, 4), (2, 4)])
@pytest.mark.parametrize("case,words", [
    (dict(dim=99), ["dim 99"]),
    (dict(dtype=aclnn.ACL_DOUBLE), ["DOUBLE"]),
    (dict(fmt=aclnn.ACL_FORMAT_NC1HWC0), ["self", "NC1HWC0"]),
    (dict(ndim=9), ["9 dimensions"]),
    (dict(out_shape=(5,)), ["Shape of out"])])
def test_softmax_checks_an_empty_self_as_a_non_empty_one(stream, shape, case, words):
    if case.get("ndim"):
        shape = shape + (1,) * (case["ndim"] - len(shape))
    self = _tensor(shape, case.get("dtype", F32), case.get("fmt", ND))
    out = _tensor(case.get("out_shape", shape), case.get("dtype", F32))
    msg = refused(aclnnSoftmaxGetWorkspaceSize(self, case.get("dim", 0), out))
    assert all(w in msg for w in words), msg


@pytest.mark.parametrize("rows", [0, 4])
def test_rms_norm_refuses_nan_epsilon_for_an_empty_x_too(stream, rows):
    x, gamma = _tensor((rows, 8)), _tensor((8,))
    ws, ex, ret = aclnnRmsNormGetWorkspaceSize(x, gamma, float("nan"), _tensor((rows, 8)),
                                               _tensor((rows, 1)))
    assert (ws, ex, ret) == (0, None, aclnn.ACLNN_ERR_INNER_TILING_ERROR)
    assert "epsilon" in acl.get_recent_err_msg()


def test_second_phase_refuses_two_outputs_moved_onto_one_memory(stream):
    host = [_vec(500, k) for k in range(3)]
    var, m, grad = (to_device(x) for x in host)
    ws, ex, ret = aclnnApplyAddSignGetWorkspaceSize(*_sign_args(var, m, _sign_scalars(), grad))
    assert ret == 0 and aclnn.aclSetAclOpExecutorRepeatable(ex) == 0
    assert aclnn.aclSetOutputTensorAddr(ex, 1, m, var.tensor_data) == 0      # mRef on varRef
    wptr = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0]
    assert aclnnApplyAddSign(wptr, ws, ex, stream) == aclnn.ACLNN_ERR_PARAM_INVALID
    msg = acl.get_recent_err_msg()
    assert "varRef" in msg and "mRef" in msg, msg
    assert acl.rt.synchronize_stream(stream) == 0
    assert_unchanged([var, grad], [host[0], host[2]])


def test_embedding_dense_backward_out_on_grad_is_accepted_and_exact(stream):
    # out is written by the chain's last kernel, after every read of grad (module docstring)
    from aclnn.ops.embedding_dense_backward import (aclnnEmbeddingDenseBackward,
                                                    aclnnEmbeddingDenseBackwardGetWorkspaceSize)
    grad = np.arange(32, dtype=np.float32).reshape(4, 8)
    buf = to_device(np.concatenate([grad.ravel(), np.zeros(16, np.float32)]))
    g, out = on(buf, (4, 8)), on(buf, (6, 8))               # out covers all of grad
    idx = to_device(np.array([1, 3, 1, 5], np.int32))
    ws, ex, ret = aclnnEmbeddingDenseBackwardGetWorkspaceSize(g, idx, 6, -1, False, out)
    assert ret == 0, acl.get_recent_err_msg()
    run(aclnnEmbeddingDenseBackward, ws, ex, stream)
    want = np.zeros((6, 8), np.float32)
    want[1], want[3], want[5] = grad[0] + grad[2], grad[1], grad[3]
    np.testing.assert_array_equal(from_device(out), want)
