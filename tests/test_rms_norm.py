"""aclnnRmsNorm: the official sample, the RmsNorm tiling (hand-computed MERGE_N / NORMAL /
SPLIT_D cases), the kernel against the documented formula over the dtype table, several
gamma ranks, a row longer than the UB and strided inputs, and every documented error
path (status, message naming the argument, no data changed)."""
import ml_dtypes
import numpy as np
import pytest

import aclnn
import npusim
from aclnn import acl
from aclnn.ops.rms_norm import aclnnRmsNorm, aclnnRmsNormGetWorkspaceSize
from npusim.kernels.rms_norm import tiling as T
from npusim.kernels.rms_norm.golden import rms_norm_golden, rstd_shape

from aclnn_helpers import (assert_unchanged, from_device, init_runtime, run_example, to_device)

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
SOC = npusim.get_soc("Ascend910B1")
#: (rtol, atol) of y per dtype: one output rounding (fp16 2^-11, bf16 2^-8) on top of
#: float32 arithmetic; rstd is float32 in every case.
TOL = {F32: (1e-5, 1e-6), F16: (2e-3, 1e-3), BF16: (1.6e-2, 1e-2)}


def formula(x, gamma, eps):
    """The documented formula, written out here in float64 (independent of the golden)."""
    x, g = np.asarray(x, np.float64), np.asarray(gamma, np.float64)
    axes = tuple(range(x.ndim - g.ndim, x.ndim))
    rms = np.sqrt((x ** 2).sum(axis=axes, keepdims=True) / g.size + eps)
    return x / rms * g, 1 / rms


def rms_norm(stream, x, gamma, eps=1e-6, x_tensor=None):
    y = to_device(np.zeros(x.shape, x.dtype))
    r = to_device(np.zeros(rstd_shape(x.shape, gamma.ndim), np.float32))
    ws, ex, ret = aclnnRmsNormGetWorkspaceSize(x_tensor or to_device(x), to_device(gamma), eps,
                                               y, r)
    assert ret == 0, acl.get_recent_err_msg()
    wptr = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0] if ws else 0
    assert aclnnRmsNorm(wptr, ws, ex, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
    return from_device(y, x.dtype), from_device(r, np.float32), ex.tiling, ws


def check(x, gamma, eps, y, rstd):
    ry, rr = formula(x, gamma, eps)
    rtol, atol = TOL[x.dtype]
    np.testing.assert_allclose(y.astype(np.float64), ry, rtol=rtol, atol=atol)
    np.testing.assert_allclose(rstd, rr, rtol=1e-5)
    gy, gr = rms_norm_golden(x, gamma, eps)
    np.testing.assert_allclose(y.astype(np.float64), gy.astype(np.float64), rtol=rtol, atol=atol)
    assert gr.shape == rstd.shape


# -- the official sample ------------------------------------------------------------------------
def test_official_sample(capsys):
    res = run_example("rms_norm_sample")
    rstd = 1 / np.sqrt(140 / 8 + 1e-6)        # mean of 0^2..7^2 is 17.5 in each row
    i = np.tile(np.arange(8.0), 4)
    np.testing.assert_allclose(res["yOut"], i * i * rstd, rtol=1e-6)    # x_i * gamma_i = i^2
    np.testing.assert_allclose(res["rstdOut"], [rstd, rstd], rtol=1e-6)
    out = capsys.readouterr().out
    assert out.count("result[") == 32 and "result[31] is: 11.713239" in out


# -- tiling: hand-computed cases ----------------------------------------------------------------
def test_normal_mode_rows_over_cores():
    t = T.tiling(SOC, (8192, 4096), (4096,), F16, F16, 1e-6)
    assert (t.mode, t.numRow, t.numCol, t.numColAlign) == ("NORMAL", 8192, 4096, 4096)
    assert (t.blockFactor, t.blockDim, t.lastBlockFactor) == (171, 48, 8192 - 47 * 171)
    # (196352 - 1024 - 576 - 4096*12) // (4096*8): x, y double-buffered fp16; gamma, x^2,
    # x in fp32; the rstd queue (2 x 256 B) and two result blocks
    assert t.rowsPerTile == 4 and t.ubFactor == 4 * 4096
    assert t.workspaceSize == 256 + 16 * 2**20
    assert t.avgFactor == np.float32(1 / 4096) and t.epsilon == np.float32(1e-6)
    assert t.core_rows(47) == (47 * 171, 155)


def test_merge_n_for_short_rows():
    t = T.tiling(SOC, (1000, 64), (64,), F32, F32, 1e-6)
    # 195328 // (64 * (2*2*4 + 2*4) + 260) = 108 rows, capped at blockFactor ceil(1000/48)
    assert (t.mode, t.blockFactor, t.rowsPerTile, t.rowFactor) == ("MERGE_N", 21, 21, 21)
    assert T.tiling(SOC, (4, 2000), (2000,), F32, F32, 0).mode == "MERGE_N"
    assert T.tiling(SOC, (4, 2008), (2008,), F32, F32, 0).mode == "NORMAL"


def test_split_d_for_rows_longer_than_ub():
    t = T.tiling(SOC, (3, 50000), (50000,), F16, F16, 1e-6)
    # published: ceil(50000/12288) = 5 tiles -> 10000 columns; double-buffered chunks of
    # 24 B/column fit from 7 tiles on: ceil(50000 / (7*16)) * 16 = 7152
    assert (t.mode, t.ubFactor, t.rowsPerTile, t.blockDim) == ("SPLIT_D", 7152, 1, 3)
    # fp32: one row costs 24 B per column (x, y double-buffered; gamma, x^2 in fp32) + 576
    assert T.tiling(SOC, (2, 8000), (8000,), F32, F32, 0).mode == "NORMAL"     # 192576 B
    t = T.tiling(SOC, (2, 8200), (8200,), F32, F32, 0)                         # 197376 B
    # the chunk that fits: (195328 - 576) // (2*2*4 + 2*4 + 3*4) = 5409 -> 5408 (x 16)
    assert (t.mode, t.ubFactor) == ("SPLIT_D", 5408)
    with pytest.raises(T.TilingError, match="Epsilon"):
        T.tiling(SOC, (2, 8), (8,), F32, F32, -1e-3)


# -- numerics ---------------------------------------------------------------------------------
@pytest.mark.parametrize("xs,gs,xd,gd,mode", [
    ((40, 64), (64,), F32, F32, "MERGE_N"), ((5, 4096), (4096,), F16, F16, "NORMAL"),
    ((7, 10, 33), (10, 33), BF16, BF16, "MERGE_N"), ((6, 3000), (3000,), F16, F32, "NORMAL"),
    ((9, 2500), (2500,), BF16, F32, "NORMAL"), ((2, 3, 4, 8), (4, 8), F32, F32, "MERGE_N"),
    ((1024,), (1024,), F32, F32, "MERGE_N"), ((3, 1, 4100), (4100,), F32, F32, "NORMAL")])
def test_against_formula(stream, xs, gs, xd, gd, mode):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(xs) * 2).astype(xd)
    gamma = rng.standard_normal(gs).astype(gd)
    y, rstd, td, _ = rms_norm(stream, x, gamma, 1e-5)
    assert td.mode == mode and rstd.shape == rstd_shape(xs, len(gs))
    check(x, gamma, 1e-5, y, rstd)


@pytest.mark.parametrize("xd,gd", [(F16, F16), (F32, F32), (BF16, F32)])
def test_row_longer_than_ub(stream, xd, gd):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 70001)).astype(xd)
    gamma = rng.standard_normal(70001).astype(gd)
    y, rstd, td, _ = rms_norm(stream, x, gamma, 1e-6)
    assert td.mode == "SPLIT_D" and td.ubFactor < 70001
    check(x, gamma, 1e-6, y, rstd)


def test_split_d_flushes_rstd_every_64_rows():
    """70 SPLIT_D rows on one core (the kernel-level path of the tools): rstd goes out in a
    batch of rowFactor = 64 rows, then the last 6."""
    from npusim_tools import registry
    entry = registry.get("RmsNorm")
    case = registry.make_case(entry, (70, 12300), "float16", seed=3)
    res = registry.run_kernel_level(entry, case, "Ascend910B1", cores=1)
    assert (res.tiling.mode, res.tiling.blockDim, res.tiling.rowFactor) == ("SPLIT_D", 1, 64)
    t = case.tensors
    check(t["x"], t["gamma"], 1e-6, res.outputs["yOut"], res.outputs["rstdOut"])
    assert registry.check(entry, case, res.outputs)["check"] == "ok"


def test_epsilon_dominates_zero_rows(stream):
    x = np.zeros((3, 16), F32)
    y, rstd, _, _ = rms_norm(stream, x, np.ones(16, F32), 0.25)
    np.testing.assert_allclose(rstd, np.full((3, 1), 2.0))      # 1 / sqrt(0 + 0.25)
    assert not y.any()


def test_non_contiguous_x(stream):
    base = np.random.default_rng(4).standard_normal((64, 6)).astype(F32)
    dev = to_device(base)
    view = aclnn.aclCreateTensor([6, 64], aclnn.ACL_FLOAT, [1, 6], 0, aclnn.ACL_FORMAT_ND,
                                 [64, 6], dev.tensor_data)                 # base.T
    gamma = np.random.default_rng(5).standard_normal(64).astype(F32)
    y, rstd, td, ws = rms_norm(stream, base.T.copy(), gamma, x_tensor=view)
    assert ws > td.workspaceSize
    check(base.T, gamma, 1e-6, y, rstd)


def test_empty_x_launches_nothing(stream):
    x = np.zeros((0, 8), F32)
    y, r = to_device(np.zeros((0, 8), F32)), to_device(np.zeros((0, 1), F32))
    ws, ex, ret = aclnnRmsNormGetWorkspaceSize(to_device(x), to_device(np.ones(8, F32)), 1e-6,
                                               y, r)
    assert (ws, ret) == (0, 0) and ex.tiling is None
    assert aclnnRmsNorm(0, 0, ex, stream) == 0 and acl.rt.synchronize_stream(stream) == 0


# -- errors ---------------------------------------------------------------------------------
def _case(xd=F32, gd=F32, yd=None, rd=F32, xs=(4, 8), gs=(8,), ys=None, rs=None):
    rng = np.random.default_rng(6)
    host = {"x": rng.standard_normal(xs).astype(xd), "gamma": rng.standard_normal(gs).astype(gd),
            "y": np.full(ys or xs, 3, yd or xd), "r": np.full(rs or rstd_shape(xs, len(gs)), 5, rd)}
    dev = {k: to_device(v) for k, v in host.items()}
    return host, dev


def _rejected(code, words, host, dev, **over):
    args = {"x": dev["x"], "gamma": dev["gamma"], "epsilon": 1e-6, "y": dev["y"], "r": dev["r"]}
    args.update(over)
    ws, ex, ret = aclnnRmsNormGetWorkspaceSize(args["x"], args["gamma"], args["epsilon"],
                                               args["y"], args["r"])
    msg = acl.get_recent_err_msg() or ""
    assert (ws, ex, ret) == (0, None, code), msg
    for w in words:
        assert w in msg, msg
    assert_unchanged([dev[k] for k in host], list(host.values()))


@pytest.mark.parametrize("name,arg", [("x", "x"), ("gamma", "gamma"), ("yOut", "y"),
                                      ("rstdOut", "r")])
def test_null_arguments(stream, name, arg):
    host, dev = _case()
    _rejected(161001, [name], host, dev, **{arg: None})


@pytest.mark.parametrize("kw", [dict(xd=F16, gd=BF16), dict(rd=F16), dict(xd=F16, yd=F32),
                                dict(xd=F32, gd=F16), dict(xd=np.int32, gd=np.int32)])
def test_dtype_outside_the_table(stream, kw):
    host, dev = _case(**kw)
    _rejected(161002, ["x, gamma, yOut, rstdOut", "supported"], host, dev)


@pytest.mark.parametrize("kw,words", [
    (dict(gs=(4,)), ["gamma", "last 1 axes of x"]),
    (dict(gs=(2, 4, 8)), ["gamma", "more dimensions"]),
    (dict(ys=(4, 9)), ["yOut"]), (dict(rs=(4,)), ["rstdOut", "[4, 1]"]),
    (dict(rs=(1, 1)), ["rstdOut"]), (dict(xs=(1,) * 9, gs=(1,)), ["x", "9 dimensions"])])
def test_shape_rules_are_tiling_errors(stream, kw, words):
    host, dev = _case(**kw)
    _rejected(561002, words, host, dev)


def test_epsilon_rules(stream):
    host, dev = _case()
    _rejected(561002, ["epsilon", "less than zero"], host, dev, epsilon=-1e-6)
    _rejected(161002, ["epsilon", "number"], host, dev, epsilon="1e-6")
    _rejected(161002, ["epsilon"], host, dev, epsilon=None)


def test_non_contiguous_output_and_destroyed_tensor(stream):
    host, dev = _case()
    strided = aclnn.aclCreateTensor([4, 4], aclnn.ACL_FLOAT, [8, 1], 0, aclnn.ACL_FORMAT_ND,
                                    [32], dev["y"].tensor_data)
    _rejected(161002, ["yOut", "contiguous"], host, dev, x=to_device(np.ones((4, 4), F32)),
              gamma=to_device(np.ones(4, F32)), y=strided, r=to_device(np.ones((4, 1), F32)))
    gone = to_device(np.ones(8, F32))
    aclnn.aclDestroyTensor(gone)
    _rejected(161002, ["gamma", "destroyed"], host, dev, gamma=gone)


@pytest.mark.parametrize("soc", ["Ascend310P3", "Ascend910A"])
def test_unsupported_soc(tmp_path, soc):
    init_runtime(tmp_path, soc)
    assert acl.rt.set_device(0) == 0
    host, dev = _case()
    _rejected(161002, [soc], host, dev)
