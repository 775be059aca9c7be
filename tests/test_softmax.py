"""aclnnSoftmax: the official sample, the SoftmaxV2 tiling (hand-computed cases of each
template), the kernel against a float64 formula (and torch.softmax when torch is
installed) over dtypes, dims, a row longer than the UB, strided inputs and out casts, and
every documented error path (status, message naming the argument, no data changed)."""
import ml_dtypes
import numpy as np
import pytest

import aclnn
import npusim
from aclnn import acl
from aclnn.ops.softmax import aclnnSoftmax, aclnnSoftmaxGetWorkspaceSize
from npusim.kernels.softmax import tiling as T
from npusim.kernels.softmax.golden import softmax_golden

from aclnn_helpers import (assert_unchanged, from_device, init_runtime, run_example, to_device)

BF16 = np.dtype(ml_dtypes.bfloat16)
SOC = npusim.get_soc("Ascend910B1")
#: (rtol, atol) per dtype: softmax values are in (0, 1]; one output rounding dominates.
TOL = {np.dtype(np.float32): (1e-5, 1e-9), np.dtype(np.float16): (1e-3, 1e-7),
       BF16: (8e-3, 1e-6)}


def formula(x, dim):
    """The documented formula, written out here in float64 (independent of the golden)."""
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def softmax(stream, x, dim, out_dtype=None, x_tensor=None):
    """Run aclnnSoftmax on host array ``x``; returns (result, executor's tiling, ws)."""
    out_dtype = x.dtype if out_dtype is None else np.dtype(out_dtype)
    out = to_device(np.zeros(x.shape, out_dtype))
    ws, ex, ret = aclnnSoftmaxGetWorkspaceSize(x_tensor or to_device(x), dim, out)
    assert ret == 0, acl.get_recent_err_msg()
    td = ex.tiling
    wptr = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0] if ws else 0
    assert aclnnSoftmax(wptr, ws, ex, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
    return from_device(out, out_dtype), td, ws


def close(got, ref, dtype):
    rtol, atol = TOL[np.dtype(dtype)]
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(ref, np.float64),
                               rtol=rtol, atol=atol)


# -- the official sample ------------------------------------------------------------------------
def test_official_sample_prints_column_softmax(capsys):
    res = run_example("softmax_sample")["out"].reshape(4, 2)
    col = np.exp(np.array([0.0, 2, 4, 6]) - 6)
    col /= col.sum()                              # each column of {0..7} as 4 x 2, along dim 0
    np.testing.assert_allclose(res, np.stack([col, col], 1), rtol=1e-6)
    out = capsys.readouterr().out
    assert out.count("result[") == 8 and "result[7] is: 0.864955" in out


# -- tiling: hand-computed cases ----------------------------------------------------------------
def test_fuse_axes_and_power2():
    assert T.fuse_axes((2, 3, 4), 1) == (2, 3, 4)
    assert T.fuse_axes((2, 3, 4), -1) == (6, 4, 1)
    assert T.fuse_axes((2, 3, 4), 0) == (1, 2, 12)
    assert T.fuse_axes((6, 1, 7), 1) == (1, 1, 42)           # R == 1: all of it is A0
    assert T.fuse_axes((), 0) == (1, 1, 1)
    with pytest.raises(ValueError):
        T.fuse_axes((2, 3), 2)
    powers = [T.find_nearest_power2(v) for v in (1, 2, 3, 4, 5, 8, 9, 64)]
    assert powers == [0, 1, 2, 2, 4, 4, 8, 32]


def test_ar_full_load_splits_rows_over_cores():
    t = T.tiling(SOC, (8192, 4096), -1, np.float16)
    assert (t.mode, t.a1, t.r, t.a0) == ("AR", 8192, 4096, 1)
    assert t.aBlockFactor == 171 and t.blockDim == 48           # ceil(8192 / 48)
    assert t.core_rows(47) == (47 * 171, 8192 - 47 * 171)
    # (196352 - 1024) // (4096*4 + 2*4096*2 + 2*4096*2 + 8*4 [fold 32 -> 8 floats]) = 3
    assert t.rAligned == 4096 and t.ubFactor == 3 and t.binaryTmpSize == 3 * 128
    assert t.workspaceSize == SOC.lib_api_workspace_size == 16 * 2**20
    small = T.tiling(SOC, (4, 2), 1, np.float32)
    assert (small.mode, small.blockDim, small.aBlockFactor, small.rAligned) == ("AR", 4, 1, 8)


def test_long_row_takes_the_recompute_template():
    t = T.tiling(SOC, (8, 100000), 1, np.float32)
    # (196352 - 2*32 - 64*32) // (3*4 + 2*4 + 4) = 8093 -> 8064 (multiple of 32)
    assert (t.mode, t.ubFactor, t.aLoopCount, t.ubFactorTail) == ("AR_RECOMPUTE", 8064, 13, 3232)
    assert t.blockDim == 8 and t.aBlockFactor == 1
    # one fp32 row costs 20 B per element (fp32 work, x and y double-buffered) + 256 B of
    # binary tmp, after 1024 B and the half-row fold (ceil(R/128) * 256 B) are taken off
    assert T.tiling(SOC, (2, 8000), 1, np.float32).mode == "AR"          # 160256 <= 178176
    assert T.tiling(SOC, (2, 9000), 1, np.float32).mode == "AR_RECOMPUTE"  # 180256 > 176384


def test_ara_templates_for_a_middle_axis():
    t = T.tiling(SOC, (4, 2), 0, np.float32)
    assert (t.mode, t.a1, t.r, t.a0) == ("ARA", 1, 4, 2)
    assert (t.tileA0Len, t.tileA0Tail, t.a0Outer, t.blockDim, t.rFactor) == (64, 2, 1, 1, 4)
    t = T.tiling(SOC, (2, 300, 50), 1, np.float16)
    # factorMax = 196352 // 16 // (128*2*6 + 4*(11+2)) = 7; ceil(2*4 / 48) = 1 -> 16 columns
    assert (t.mode, t.tileA0Len, t.tileA0Tail, t.a0Outer, t.totalTiles) == \
        ("ARA_RECOMPUTE", 16, 2, 4, 8)
    assert (t.rFactor, t.rLoop, t.tilesPerCore, t.blockDim) == (128, 3, 1, 8)
    with pytest.raises(ValueError):
        T.tiling(SOC, (2, 3), 0, np.float64)


# -- numerics against the formula ---------------------------------------------------------------
@pytest.mark.parametrize("shape,dim,dtype,mode", [
    ((7, 1000), -1, np.float32, "AR"), ((33, 257), 1, np.float16, "AR"),
    ((5, 130), 1, BF16, "AR"), ((3, 40, 70), 1, np.float32, "ARA"),
    ((2, 300, 50), 1, np.float16, "ARA_RECOMPUTE"), ((6, 5, 4), 0, BF16, "ARA"),
    ((3, 2000, 9), -2, np.float32, "ARA_RECOMPUTE"), ((2, 3, 4), 2, np.float32, "AR"),
    ((11,), 0, np.float16, "AR"), ((6, 1, 7), 1, np.float32, "ARA")])
def test_against_formula(stream, shape, dim, dtype, mode):
    x = (np.random.default_rng(1).standard_normal(shape) * 4).astype(dtype)
    got, td, _ = softmax(stream, x, dim)
    assert td.mode == mode
    close(got, formula(x, dim), dtype)
    close(got, softmax_golden(x, dim), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_row_longer_than_ub(stream, dtype):
    x = (np.random.default_rng(2).standard_normal((2, 70001)) * 3).astype(dtype)
    got, td, _ = softmax(stream, x, 1)
    assert td.mode == "AR_RECOMPUTE" and td.aLoopCount > 1 and td.ubFactorTail > 0
    assert 70001 * np.dtype(dtype).itemsize > SOC.ub_usable or td.ubFactor < 70001
    close(got, formula(x, 1), dtype)


def test_against_torch(stream):
    torch = pytest.importorskip("torch", reason="torch is optional: install it to compare "
                                "with torch.softmax")
    x = np.random.default_rng(3).standard_normal((9, 300)).astype(np.float32)
    got, _, _ = softmax(stream, x, -1)
    ref = torch.softmax(torch.from_numpy(x).double(), dim=-1).numpy()
    close(got, ref, np.float32)


def test_large_and_equal_values_do_not_overflow(stream):
    x = np.array([[1e4, 1e4, -1e4, 1e4], [0, 0, 0, 0]], np.float32)   # exp(1e4) = inf
    got, _, _ = softmax(stream, x, 1)
    np.testing.assert_allclose(got, [[1 / 3, 1 / 3, 0, 1 / 3], [0.25] * 4], rtol=1e-6)


def test_zero_dim_tensor_is_one(stream):
    got, td, _ = softmax(stream, np.array(3.5, np.float32), 0)
    assert td.mode == "AR" and got.size == 1 and got.reshape(-1)[0] == 1.0


def test_non_contiguous_self_is_made_contiguous(stream):
    base = (np.random.default_rng(4).standard_normal((6, 40)) * 2).astype(np.float32)
    dev = to_device(base)
    # self = base.T: view (40, 6), strides (1, 40)
    view = aclnn.aclCreateTensor([40, 6], aclnn.ACL_FLOAT, [1, 40], 0, aclnn.ACL_FORMAT_ND,
                                 [6, 40], dev.tensor_data)
    got, td, ws = softmax(stream, base.T.copy(), 1, x_tensor=view)
    assert ws > td.workspaceSize                   # the Contiguous buffer
    close(got, formula(base.T, 1), np.float32)


@pytest.mark.parametrize("xd,od", [(np.float16, np.float32), (np.float32, BF16),
                                   (np.float16, BF16)])
def test_out_dtype_is_a_cast_of_self_dtype_result(stream, xd, od):
    x = np.random.default_rng(5).standard_normal((4, 300)).astype(xd)
    got, td, ws = softmax(stream, x, -1, od)
    assert td.yDtype == np.dtype(xd) and ws > td.workspaceSize
    ref = softmax_golden(x, -1, od)               # rounded to self's dtype, then to out's
    # the kernel's float32 result and the golden's float64 one may round to neighbouring
    # values of self's dtype: the tolerance is that of the coarser of the two dtypes
    coarser = max(np.dtype(xd), np.dtype(od), key=lambda d: TOL[d][0])
    close(got, ref, coarser)


def test_empty_self_launches_nothing(stream):
    x = np.zeros((3, 0, 4), np.float32)
    out = to_device(np.zeros((3, 0, 4), np.float32))
    ws, ex, ret = aclnnSoftmaxGetWorkspaceSize(to_device(x), 1, out)
    assert (ws, ret) == (0, 0) and ex.tiling is None
    assert aclnnSoftmax(0, 0, ex, stream) == 0 and acl.rt.synchronize_stream(stream) == 0


# -- errors -------------------------------------------------------------------------------------
def _case():
    x = np.random.default_rng(6).standard_normal((4, 8)).astype(np.float32)
    out = np.full((4, 8), 7.0, np.float32)
    return x, out, to_device(x), to_device(out)


def _rejected(code, words, *args, keep=()):
    ws, ex, ret = aclnnSoftmaxGetWorkspaceSize(*args)
    msg = acl.get_recent_err_msg() or ""
    assert (ws, ex, ret) == (0, None, code), msg
    for w in words:
        assert w in msg, msg
    assert_unchanged(*zip(*keep)) if keep else None


def test_null_arguments(stream):
    x, out, xt, ot = _case()
    _rejected(161001, ["self"], None, 0, ot, keep=[(ot, out)])
    _rejected(161001, ["out"], xt, 0, None, keep=[(xt, x)])


@pytest.mark.parametrize("dim,words", [(2, ["dim", "2"]), (-3, ["dim", "-3"]),
                                       (1.0, ["dim", "int"]), (True, ["dim", "int"]),
                                       ("0", ["dim"])])
def test_bad_dim(stream, dim, words):
    x, out, xt, ot = _case()
    _rejected(161002, words, xt, dim, ot, keep=[(xt, x), (ot, out)])


def test_bad_dtypes_shapes_and_layouts(stream):
    x, out, xt, ot = _case()
    keep = [(xt, x), (ot, out)]
    ints = np.arange(32, dtype=np.int32).reshape(4, 8)
    _rejected(161002, ["self", "INT32"], to_device(ints), 0, ot, keep=keep)
    _rejected(161002, ["out", "INT32"], xt, 0, to_device(ints), keep=keep)
    _rejected(161002, ["out", "[4, 8]"], xt, 0, to_device(np.zeros((8, 4), np.float32)),
              keep=keep)
    _rejected(161002, ["DOUBLE"], to_device(x.astype(np.float64)), 0, ot, keep=keep)
    nine = to_device(np.zeros((1,) * 9, np.float32))
    _rejected(161002, ["self", "9 dimensions"], nine, 0, nine)
    strided_out = aclnn.aclCreateTensor([4, 4], aclnn.ACL_FLOAT, [8, 1], 0, aclnn.ACL_FORMAT_ND,
                                        [32], ot.tensor_data)
    _rejected(161002, ["out", "contiguous"],
              to_device(np.zeros((4, 4), np.float32)), 0, strided_out, keep=keep)
    aclnn.aclDestroyTensor(xt2 := to_device(x))
    _rejected(161002, ["self", "destroyed"], xt2, 0, ot, keep=[(ot, out)])


@pytest.mark.parametrize("soc", ["Ascend310P3", "Ascend910A"])
def test_unsupported_soc(tmp_path, soc):
    init_runtime(tmp_path, soc)
    assert acl.rt.set_device(0) == 0
    x = np.ones((2, 3), np.float32)
    xt, ot = to_device(x), to_device(np.zeros_like(x))
    _rejected(161002, [soc], xt, 0, ot, keep=[(xt, x), (ot, np.zeros_like(x))])
