"""Property tests: random shapes, dtypes and attributes for every operator,
run through the aclnn two-phase API on the simulated Ascend910B1 and compared with the
operator's numpy golden (``kernels/*/golden.py``, written from the documented formula).

The goldens compute in float64 and round once; the kernels round per instruction (fp16
per instruction, bf16 through fp32, attributes as float32 where the tiling stores them).
So every comparison is ``|device - golden| <= bound`` with a bound built per element from
the magnitudes of the formula's terms: ``u`` (the unit roundoff of the arithmetic dtype)
times the sum of the absolute values that were added or subtracted, plus one unit in the
last place of the output dtype for the final rounding. Integer results must be equal.
Documented sources of each formula: docs/reference/operators.md §1 (ApplyFusedEmaAdam), §2
(EmbeddingDenseBackward), §3 (ApplyAddSign), §4 (FusedSparseAdam); ops-math ``aclnnAdd``
doc (Add, InplaceAdd). The bounds are tight enough to fail on a 1e-4 relative change of
one attribute (checked by mutating the goldens' inputs while writing these tests).

Run time: each operator draws 25-40 small cases (hypothesis, ``deadline=None``).
"""
from __future__ import annotations

import importlib.util
import json
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import aclnn
from aclnn import acl, runtime
from npusim.kernels.add.golden import add_golden
from npusim.kernels.apply_add_sign.golden import apply_add_sign_golden
from npusim.kernels.apply_fused_ema_adam.golden import apply_fused_ema_adam_golden

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
#: Unit roundoff (half an ulp at 1) of each floating dtype.
U = {F32: 2.0 ** -24, F16: 2.0 ** -11, BF16: 2.0 ** -8}
#: Smallest subnormal spacing: the absolute floor of one rounding.
TINY = {F32: 2.0 ** -149, F16: 2.0 ** -24, BF16: 2.0 ** -133}
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Device:
    """Tensors on the current device; every allocation of an example is freed after it."""

    def __init__(self, stream):
        self.stream = stream
        self.ptrs = []

    def malloc(self, nbytes):
        ptr, ret = acl.rt.malloc(max(int(nbytes), 1), aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        assert ret == 0, acl.get_recent_err_msg()
        self.ptrs.append(ptr)
        return ptr

    def put(self, arr, acl_dtype=None, transpose=False):
        """A tensor holding ``arr``; with ``transpose`` the storage is arr's last two axes
        swapped and the view strides undo the swap (a non-contiguous view)."""
        arr = np.asarray(arr)
        # np.array keeps a 0-D array 0-D (np.ascontiguousarray would make it 1-D)
        store = np.array(np.swapaxes(arr, -1, -2) if transpose else arr, order="C")
        ptr = self.malloc(store.nbytes)
        if store.nbytes:
            assert acl.rt.memcpy(ptr, store.nbytes, acl.util.numpy_to_ptr(store), store.nbytes,
                                 aclnn.ACL_MEMCPY_HOST_TO_DEVICE) == 0
        dt = acl_dtype if acl_dtype is not None else aclnn.numpy_to_acl_dtype(arr.dtype)
        strides = list(aclnn.contiguous_strides(store.shape))
        if transpose:
            strides[-1], strides[-2] = strides[-2], strides[-1]
        return aclnn.aclCreateTensor(list(arr.shape), dt, strides, 0, aclnn.ACL_FORMAT_ND,
                                     [max(store.size, 1)] if store.ndim else [1], ptr)

    def get(self, t, dtype):
        out = np.zeros(t.numel(), dtype=dtype)
        if out.size:
            assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, t.tensor_data,
                                 out.nbytes, aclnn.ACL_MEMCPY_DEVICE_TO_HOST) == 0
        return out.reshape(t.view_dims)

    def run(self, first, second, *args):
        ws, ex, ret = first(*args)
        assert ret == 0, acl.get_recent_err_msg()
        wptr = self.malloc(ws) if ws else 0
        assert second(wptr, ws, ex, self.stream) == 0, acl.get_recent_err_msg()
        assert acl.rt.synchronize_stream(self.stream) == 0, acl.get_recent_err_msg()

    def free_all(self):
        for ptr in self.ptrs:
            assert acl.rt.free(ptr) == 0
        self.ptrs.clear()


@pytest.fixture(scope="module")
def dev(tmp_path_factory):
    runtime.reset()
    cfg = tmp_path_factory.mktemp("acl") / "acl.json"
    cfg.write_text(json.dumps({"npusim": {"soc": "Ascend910B1"}}))
    assert acl.init(str(cfg)) == 0 and acl.rt.set_device(0) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    yield Device(stream)
    runtime.reset()


def within(got, gold, bound, what):
    """Assert ``|got - gold| <= bound`` elementwise (NaN only where both are NaN)."""
    got64, gold64 = np.asarray(got, np.float64), np.asarray(gold, np.float64)
    nan = np.isnan(gold64)
    assert np.array_equal(np.isnan(got64), nan), f"{what}: NaN pattern differs"
    err = np.abs(got64 - gold64)[~nan]
    bad = err > np.asarray(np.broadcast_to(bound, gold64.shape))[~nan]
    assert not bad.any(), (f"{what}: {bad.sum()} of {bad.size} elements off; worst error "
                           f"{err.max():.3g}, its bound "
                           f"{np.broadcast_to(bound, gold64.shape)[~nan][np.argmax(err)]:.3g}")


def out_ulp(x, dtype):
    """One unit in the last place of ``dtype`` at |x| (the final rounding of two results
    that each round once can differ by that much)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "fV" and dtype != BF16:
        return 0.0
    mag = np.maximum(np.abs(np.asarray(x, np.float64)), np.finfo(np.float64).tiny)
    return 2.0 * U[dtype] * 2.0 ** np.ceil(np.log2(mag)) + TINY[dtype]


@st.composite
def shapes(draw, min_dims=1, max_dims=8, max_elems=1500, allow_empty=False):
    """A shape of ``min_dims..max_dims`` dims with at most ``max_elems`` elements."""
    ndim = draw(st.integers(min_dims, max_dims))
    budget, dims = max_elems, []
    for _ in range(ndim):
        d = draw(st.integers(1, max(1, min(budget, 24))))
        dims.append(d)
        budget = max(1, budget // d)
    if allow_empty and dims and draw(st.integers(0, 7)) == 0:     # now and then: no elements
        dims[draw(st.integers(0, len(dims) - 1))] = 0
    return tuple(dims)


def values(draw, shape, dtype, scale=1.0, positive=False, zeros=True):
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    x = np.asarray(rng.standard_normal(shape) * scale, np.float64)
    if positive:
        x = np.abs(x)
    if zeros and x.size and draw(st.booleans()):
        x.reshape(-1)[rng.integers(0, x.size, max(1, x.size // 8))] = 0.0
    return x.astype(dtype)


# -- ApplyFusedEmaAdam ------------------------------------------------------------------------
@st.composite
def ema_cases(draw):
    dtype = draw(st.sampled_from([F32, F16, BF16]))
    shape = draw(shapes(1, 8, 3000))
    attrs = dict(lr=draw(st.floats(1e-4, 0.5)), ema_decay=draw(st.floats(0.0, 1.0)),
                 beta1=draw(st.floats(0.0, 0.99)), beta2=draw(st.floats(0.5, 0.9999)),
                 eps=draw(st.sampled_from([1e-8, 1e-6, 1e-3])), mode=draw(st.sampled_from([0, 1])),
                 bias_correction=draw(st.booleans()), weight_decay=draw(st.floats(0.0, 0.5)))
    step = draw(st.integers(1, 200))
    arrays = [values(draw, shape, dtype), values(draw, shape, dtype),
              values(draw, shape, dtype, 0.1), values(draw, shape, dtype, 0.01, positive=True),
              values(draw, shape, dtype)]
    return dtype, arrays, step, attrs


@settings(max_examples=30, **SETTINGS)
@given(case=ema_cases())
def test_apply_fused_ema_adam_matches_golden(dev, case):
    dtype, (grad, var, m, v, s), step, a = case
    try:
        tensors = [dev.put(x) for x in (grad, var, m, v, s)]
        dev.run(aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize, aclnn.aclnnApplyFusedEmaAdam,
                *tensors, dev.put(np.array([step], np.int64)), a["lr"], a["ema_decay"],
                a["beta1"], a["beta2"], a["eps"], a["mode"], a["bias_correction"],
                a["weight_decay"])
        got = [dev.get(t, dtype) for t in tensors[1:]]
    finally:
        dev.free_all()
    # the tiling stores the attributes as float32 (docs/reference/operators.md §1 "Interface")
    f = {k: float(np.float32(x)) if isinstance(x, float) else x for k, x in a.items()}
    gold = apply_fused_ema_adam_golden(grad, var, m, v, s, step, **f)
    within_ema_bound(got, gold, (grad, var, m, v, s), step, f, dtype)


def _sqrt_error(dv, v):
    """How far sqrt(v + e) can be from sqrt(v) for |e| <= dv (v >= 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        linear = np.where(v > 0, dv / (2 * np.sqrt(v)), np.inf)
    return np.minimum(linear, np.sqrt(dv))


def within_ema_bound(got, gold, inputs, step, f, dtype):
    """Check ApplyFusedEmaAdam's outputs against the float64 golden.

    First-order error propagation through the documented order (docs/reference/operators.md §1),
    every operation in fp32 with unit roundoff ``u`` and an absolute floor of one subnormal
    spacing (TINY) per rounding:

    * mode 0 computes ``g = wd*var + grad`` first; where the two nearly cancel, g keeps an
      absolute error ``2u(|wd*var| + |grad|)``, which m' and v' inherit;
    * ``update = m^ / (sqrt(v^) + eps)``: the numerator's error passes divided by the
      denominator, and the denominator's own error (sqrt of v^'s error, large when g
      cancelled and v' is small) passes as ``|m^| * dd / (d (d - dd))``; where dd reaches d
      the fp32 result is not determined and no bound applies;
    * ``1 - beta^step`` cancels for small steps: 1/bc amplifies relative errors;
    * var and s add one rounding of their own output dtype.
    """
    grad, var, m, v, s = inputs
    u, tiny = 2.0 ** -24, TINY[F32]
    g, x, m0, v0, s0 = (np.abs(np.asarray(t, np.float64)) for t in (grad, var, m, v, s))
    b1, b2, e, wd, lr = f["beta1"], f["beta2"], f["ema_decay"], f["weight_decay"], f["lr"]
    bc1, bc2 = ((1 - b1 ** step, 1 - b2 ** step) if f["bias_correction"] else (1.0, 1.0))
    mode0 = f["mode"] == 0
    g_eff = np.asarray(grad, np.float64) + (wd * np.asarray(var, np.float64) if mode0 else 0.0)
    g_abs = g + (wd * x if mode0 else 0.0)
    dg = 2 * u * g_abs + 2 * tiny if mode0 else 0.0
    scale_m = b1 * m0 + (1 - b1) * g_abs
    scale_v = b2 * v0 + (1 - b2) * g_abs ** 2
    v_out = b2 * np.asarray(v, np.float64) + (1 - b2) * g_eff ** 2     # the true v'
    dm = 4 * u * scale_m + 3 * tiny + (1 - b1) * dg
    dv = 4 * u * scale_v + 3 * tiny + (1 - b2) * (2 * np.abs(g_eff) * dg + dg ** 2)
    # update = n / d
    # (1/bc is 1/(1 - beta^step) in fp32: relative error 2u(1 + 1/bc), beta^step's rounding
    # magnified by the cancellation)
    n = scale_m / bc1
    v_hat = np.maximum(v_out, 0) / bc2
    dv_hat = dv / bc2 + 2 * u * (1 + 1 / bc2) * v_hat
    d = np.sqrt(v_hat) + f["eps"]
    dd = _sqrt_error(dv_hat, v_hat) + 4 * u * d + tiny
    with np.errstate(divide="ignore", invalid="ignore"):
        d_upd = np.where(d > dd, (dm / bc1 + 2 * u * n * (1 + 1 / bc1)) / d
                         + n * dd / (d * (d - dd)), np.inf)
    upd = n / d + (wd * x if not mode0 else 0.0)
    d_upd = d_upd + (2 * u * wd * x + tiny if not mode0 else 0.0) + 2 * u * upd
    scale_var = x + lr * upd
    d_var = 2 * u * scale_var + lr * d_upd + 2 * tiny
    scale_s = e * s0 + (1 - e) * scale_var
    d_s = 3 * u * scale_s + (1 - e) * d_var + 3 * tiny
    for name, gt, gd, bound in (("var", got[0], gold[0], d_var),
                                ("m", got[1], gold[1], dm),
                                ("v", got[2], gold[2], dv),
                                ("s", got[3], gold[3], d_s)):
        within(gt, gd, bound + out_ulp(gd, dtype) + tiny,
               f"{name} ({dtype}, shape {np.shape(var)})")


# -- Add / InplaceAdd ---------------------------------------------------------------------------
#: (self, other, out) dtypes the simulated vector unit computes (kernels/add/tiling.py).
ADD_DTYPES = [(F32, F32, F32), (F16, F16, F16), (BF16, BF16, BF16), (F16, F32, F32),
              (BF16, F32, F32), (F32, F32, F16), (F16, F16, F32),
              (np.dtype(np.int32), np.dtype(np.int32), np.dtype(np.int32)),
              (np.dtype(np.int16), np.dtype(np.int16), np.dtype(np.int16)),
              (np.dtype(np.int32), F16, F16), (np.dtype(np.int32), np.dtype(np.int32), F32)]


@st.composite
def broadcast_pair(draw, max_dims=5):
    """(out shape, self shape, other shape): each input drops leading dims and sets some
    dims to 1, numpy broadcasting gives the out shape back."""
    out = draw(shapes(0, max_dims, 600, allow_empty=True))

    def operand():
        drop = draw(st.integers(0, len(out)))
        dims = [1 if draw(st.booleans()) and draw(st.booleans()) else d for d in out[drop:]]
        return tuple(dims)
    a, b = operand(), operand()
    full = np.broadcast_shapes(a, b)
    return full, a, b


@st.composite
def add_cases(draw):
    xs, ys, zs = draw(st.sampled_from(ADD_DTYPES))
    out_shape, sa, sb = draw(broadcast_pair())
    integer = xs.kind == "i" and ys.kind == "i"
    if integer:
        # int32 with alpha != 1 goes through fp32 (Axpy): keep the values exact in fp32
        alpha = draw(st.integers(-4, 4))
        alpha_dt = draw(st.sampled_from([aclnn.ACL_INT32, aclnn.ACL_INT64]))
    else:
        alpha = draw(st.one_of(st.just(1.0), st.floats(-3, 3, width=32)))
        alpha_dt = aclnn.ACL_FLOAT

    def data(shape, dt):
        if dt.kind == "i":
            seed = draw(st.integers(0, 2 ** 32 - 1))
            return np.random.default_rng(seed).integers(-1000, 1000, shape).astype(dt)
        return values(draw, shape, dt, 4.0)
    a, b = data(sa, xs), data(sb, ys)
    transpose = len(sa) >= 2 and draw(st.booleans())
    return a, b, alpha, alpha_dt, zs, out_shape, transpose


def _add_bound(a, b, alpha, zs, gold):
    dts = {np.dtype(a.dtype), np.dtype(b.dtype), np.dtype(zs)}
    if all(d.kind == "i" for d in dts):
        return 0.0
    u = max(U.get(d, 0.0) for d in dts)
    scale = np.abs(a.astype(np.float64)) + np.abs(float(alpha) * b.astype(np.float64))
    return 3 * u * scale + out_ulp(gold, zs) + TINY[F16]


@settings(max_examples=40, **SETTINGS)
@given(case=add_cases())
def test_add_matches_golden(dev, case):
    a, b, alpha, alpha_dt, zs, out_shape, transpose = case
    try:
        ta, tb = dev.put(a, transpose=transpose), dev.put(b)
        scalar = aclnn.aclCreateScalar(alpha, alpha_dt)
        out = dev.put(np.zeros(out_shape, zs))
        dev.run(aclnn.aclnnAddGetWorkspaceSize, aclnn.aclnnAdd, ta, tb, scalar, out)
        got = dev.get(out, zs)
        # the inputs are read, never written
        assert np.array_equal(dev.get(tb, b.dtype), b)
    finally:
        dev.free_all()
    gold = add_golden(a, b, scalar.value, zs)
    if np.dtype(zs).kind == "i":
        np.testing.assert_array_equal(got, gold)
    else:
        within(got, gold, _add_bound(a, b, scalar.value, zs, gold),
               f"Add {a.dtype}{a.shape} + {float(alpha)} * {b.dtype}{b.shape} -> {zs}")


@settings(max_examples=30, **SETTINGS)
@given(case=add_cases())
def test_inplace_add_matches_golden(dev, case):
    a, b, alpha, alpha_dt, zs, out_shape, _ = case
    # selfRef is the result: no float -> int cast back into it (that is a 161002 case)
    assume(not (a.dtype.kind == "i" and b.dtype.kind == "f"))
    a = np.broadcast_to(a, out_shape).astype(a.dtype)         # selfRef has the result's shape
    try:
        ta, tb = dev.put(a), dev.put(b)
        scalar = aclnn.aclCreateScalar(alpha, alpha_dt)
        dev.run(aclnn.aclnnInplaceAddGetWorkspaceSize, aclnn.aclnnInplaceAdd, ta, tb, scalar)
        got = dev.get(ta, a.dtype)
    finally:
        dev.free_all()
    gold = add_golden(a, b, scalar.value, a.dtype)
    if a.dtype.kind == "i":
        np.testing.assert_array_equal(got, gold)
    else:
        within(got, gold, _add_bound(a, b, scalar.value, a.dtype, gold),
               f"InplaceAdd {a.dtype}{a.shape} += {float(alpha)} * {b.dtype}{b.shape}")


# -- ApplyAddSign -------------------------------------------------------------------------------
@st.composite
def add_sign_cases(draw):
    dtype = draw(st.sampled_from([F32, F16]))
    shape = draw(shapes(0, 8, 3000, allow_empty=True))
    var, m, grad = (values(draw, shape, dtype) for _ in range(3))
    scalars = [dtype.type(draw(st.floats(lo, hi))) for lo, hi in
               ((0.0, 1.0), (-2.0, 2.0), (-2.0, 2.0), (0.0, 1.0))]    # lr alpha signDecay beta
    scalar_shape = () if not shape or draw(st.booleans()) else (1,)
    return dtype, shape, var, m, grad, scalars, scalar_shape


@settings(max_examples=30, **SETTINGS)
@given(case=add_sign_cases())
def test_apply_add_sign_matches_golden(dev, case):
    dtype, shape, var, m, grad, scalars, scalar_shape = case
    try:
        tv, tm, tg = dev.put(var), dev.put(m), dev.put(grad)
        ts = [dev.put(np.full(scalar_shape, s, dtype)) for s in scalars]
        dev.run(aclnn.aclnnApplyAddSignGetWorkspaceSize, aclnn.aclnnApplyAddSign,
                tv, tm, *ts, tg)
        got_v, got_m = dev.get(tv, dtype), dev.get(tm, dtype)
    finally:
        dev.free_all()
    lr, alpha, sd, beta = (float(s) for s in scalars)
    gold_v, gold_m = apply_add_sign_golden(var, m, lr, alpha, sd, beta, grad)
    u = U[dtype]
    x, m0, g = (np.asarray(t, np.float64) for t in (var, m, grad))
    scale_m = np.abs(beta * m0) + np.abs((1 - beta) * g)
    bound_m = 4 * u * scale_m + out_ulp(gold_m, dtype) + TINY[dtype]
    within(got_m, gold_m, bound_m, f"m ({dtype}, shape {shape})")
    # sign(m_out) is a discontinuity: where the golden m is within the bound of 0 the
    # device may take the other sign; accept var computed with the device's own m then
    sgn = (lambda t: (t > 0).astype(np.float64) - (t < 0).astype(np.float64))
    scale_v = np.abs(x) + lr * (abs(alpha) + abs(sd)) * np.abs(g)
    bound_v = 6 * u * scale_v + out_ulp(gold_v, dtype) + TINY[dtype]
    alt_v = (x - lr * (alpha + sd * sgn(g) * sgn(np.asarray(got_m, np.float64))) * g)
    use_alt = np.abs(np.asarray(gold_m, np.float64)) <= bound_m
    expect = np.where(use_alt, alt_v, np.asarray(gold_v, np.float64))
    within(got_v, expect, bound_v + out_ulp(expect, dtype), f"var ({dtype}, shape {shape})")


# -- EmbeddingDenseBackward ----------------------------------------------------------------------
@st.composite
def edb_cases(draw):
    grad_dt = draw(st.sampled_from([F32, F16, BF16]))
    idx_dt = draw(st.sampled_from([np.dtype(np.int64), np.dtype(np.int32)]))
    num_weights = draw(st.integers(1, 40))
    lead = draw(shapes(1, 3, 120))
    emb = draw(st.integers(1, 80))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, num_weights, lead).astype(idx_dt)
    grad = rng.standard_normal(lead + (emb,)).astype(grad_dt)
    padding = draw(st.integers(-1, num_weights - 1))
    scale = draw(st.booleans())
    return grad, indices, num_weights, padding, scale


@pytest.mark.skipif(importlib.util.find_spec("aclnn.ops.embedding_dense_backward") is None,
                    reason="aclnnEmbeddingDenseBackward is not written yet")
@settings(max_examples=25, **SETTINGS)
@given(case=edb_cases())
def test_embedding_dense_backward_matches_golden(dev, case):
    from aclnn.ops import embedding_dense_backward as op
    from npusim.kernels.embedding_dense_backward import golden
    grad, indices, nw, pad, scale = case
    try:
        out = dev.put(np.zeros((nw, grad.shape[-1]), grad.dtype))
        dev.run(op.aclnnEmbeddingDenseBackwardGetWorkspaceSize, op.aclnnEmbeddingDenseBackward,
                dev.put(grad), dev.put(indices), nw, pad, scale, out)
        got = dev.get(out, grad.dtype)
    finally:
        dev.free_all()
    gold = golden.embedding_dense_backward_golden(grad, indices, nw, pad, scale)
    # fp32 accumulation in any order: (terms per row) * u32 * sum |terms|
    abs_sum = golden.embedding_dense_backward_golden(np.abs(grad.astype(np.float64)), indices,
                                                     nw, pad, scale)
    counts = np.bincount(indices.reshape(-1).astype(np.int64), minlength=nw)[:, None]
    bound = (counts + 2) * 2.0 ** -24 * abs_sum + out_ulp(gold, grad.dtype) + TINY[F32]
    within(got, gold, bound, f"EmbeddingDenseBackward {grad.dtype}{grad.shape}")


# -- FusedSparseAdam ----------------------------------------------------------------------------
@st.composite
def fsa_cases(draw):
    rows = draw(st.integers(1, 24))
    tail = draw(shapes(0, 2, 64))
    shape = (rows,) + tail
    n = draw(st.integers(0, 40))
    idx_dt = draw(st.sampled_from([np.dtype(np.int32), np.dtype(np.int64)]))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    # mostly valid rows, with duplicates; a few outside [0, rows), which the op drops
    indices = rng.integers(-2, rows + 2, n).astype(idx_dt)
    var, m = values(draw, shape, F32), values(draw, shape, F32, 0.1)
    v = values(draw, shape, F32, 0.01, positive=True)
    grad = values(draw, (n,) + tail, F32)
    scalars = dict(beta1_power=draw(st.floats(0.01, 0.95)), beta2_power=draw(st.floats(0.01, 0.99)),
                   lr=draw(st.floats(1e-4, 0.5)), beta1=draw(st.floats(0.0, 0.99)),
                   beta2=draw(st.floats(0.5, 0.9999)),
                   epsilon=draw(st.sampled_from([1e-8, 1e-6, 1e-3])))
    return var, m, v, grad, indices, scalars, draw(st.booleans())


@pytest.mark.skipif(importlib.util.find_spec("aclnn.ops.fused_sparse_adam") is None,
                    reason="aclnnFusedSparseAdam is not written yet")
@settings(max_examples=30, **SETTINGS)
@given(case=fsa_cases())
def test_fused_sparse_adam_matches_golden(dev, case):
    from aclnn.ops import fused_sparse_adam as op
    from npusim.kernels.fused_sparse_adam.golden import fused_sparse_adam_golden
    var, m, v, grad, indices, sc, nesterov = case
    # the kernel reads the scalars as float32 (docs/reference/operators.md §4)
    f = {k: float(np.float32(x)) for k, x in sc.items()}
    try:
        tv, tm, tvv = dev.put(var), dev.put(m), dev.put(v)
        scalars = [dev.put(np.array([f[k]], np.float32)) for k in (
            "beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon")]
        dev.run(op.aclnnFusedSparseAdamGetWorkspaceSize, op.aclnnFusedSparseAdam, tv, tm, tvv,
                *scalars, dev.put(grad), dev.put(indices), nesterov)
        got = [dev.get(t, F32) for t in (tv, tm, tvv)]
    finally:
        dev.free_all()
    gold = fused_sparse_adam_golden(var, m, v, f["beta1_power"], f["beta2_power"], f["lr"],
                                    f["beta1"], f["beta2"], f["epsilon"], grad, indices,
                                    nesterov)
    # bound: the duplicates' sum in any order ((count + 2) u32 sum|g|), then the Adam
    # arithmetic in fp32 with 1/(1 - beta1Power) and sqrt(1 - beta2Power) amplifying u32
    rows = var.shape[0]
    idx = indices.astype(np.int64)
    keep = (idx >= 0) & (idx < rows)
    g_abs = np.zeros(var.shape)
    np.add.at(g_abs, idx[keep], np.abs(grad.astype(np.float64))[keep])
    count = np.bincount(idx[keep], minlength=rows).reshape((rows,) + (1,) * (var.ndim - 1))
    b1, b2, b1p, b2p = f["beta1"], f["beta2"], f["beta1_power"], f["beta2_power"]
    u32 = 2.0 ** -24
    rel = (count + 8) * u32
    scale_m = b1 * np.abs(m.astype(np.float64)) + (1 - b1) * g_abs
    scale_v = b2 * v.astype(np.float64) + (1 - b2) * g_abs ** 2
    lr_t = f["lr"] * math.sqrt(1 - b2p) / (1 - b1p)
    scale_M = b1 * scale_m + (1 - b1) * g_abs if nesterov else scale_m
    v_true = np.asarray(gold[2], np.float64)
    scale_var = np.abs(var.astype(np.float64)) + lr_t * scale_M / (np.sqrt(v_true)
                                                                   + f["epsilon"])
    amp = 1 + 1 / (1 - b1p) + 1 / (1 - b2p)
    # subnormal floors: m and v round to a multiple of TINY (a product can underflow to 0),
    # and the update divides m by sqrt(v) + eps, so m's floor reaches var magnified by
    # lr_t / (sqrt(v) + eps), and v's through the square root
    tiny = TINY[F32]
    d = np.sqrt(v_true) + f["epsilon"]
    floor_var = lr_t * (3 * tiny * (1 + b1) / d + scale_M * np.sqrt(3 * tiny) / d ** 2)
    for name, gt, gd, scale, r, floor in (
            ("var", got[0], gold[0], scale_var, rel * amp, floor_var + 2 * tiny),
            ("m", got[1], gold[1], scale_m, rel, 3 * tiny),
            ("v", got[2], gold[2], scale_v, 2 * rel, 3 * tiny)):
        within(gt, gd, r * scale + out_ulp(gd, F32) + floor,
               f"FusedSparseAdam {name} (var {var.shape}, {len(indices)} indices)")


def test_bounds_are_tight_enough_to_catch_a_one_ulp_slip():
    """The tolerance machinery must fail on a real error: a float32 result off by a few
    ulps of its magnitude, where the bound for a single rounding is one ulp."""
    gold = np.array([1.0, -3.0, 1e-3], np.float32)
    bound = 2 * U[F32] * np.abs(gold.astype(np.float64))
    within(gold, gold, bound, "exact")
    slipped = gold.copy()
    slipped[1] = np.nextafter(np.nextafter(gold[1], np.float32(0)), np.float32(0))
    slipped[1] = np.nextafter(slipped[1], np.float32(0))
    with pytest.raises(AssertionError):
        within(slipped, gold, bound, "slipped")
    assert out_ulp(np.float64(1.0), F16) == pytest.approx(2 * 2.0 ** -11 + 2.0 ** -24)
    assert math.isclose(out_ulp(np.float64(3.0), BF16), 2 * 2.0 ** -8 * 4 + 2.0 ** -133)
