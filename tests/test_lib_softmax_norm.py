"""SoftMax, LayerNorm and RmsNorm (npusim/ascendc/lib/) against float64 math with stated
error bounds, their tmp-size and tiling functions against hand-computed values, the
library's instruction sequence, and the error paths."""
import ml_dtypes
import numpy as np
import pytest

from kernel_helpers import ub_run
from npusim import AlignmentError, DtypeError, KernelError, UbError
from npusim.ascendc import (GetLayerNormMaxMinTmpSize, GetLayerNormNDTilingInfo,
                            GetRmsNormMaxMinTmpSize, GetRmsNormTilingInfo, GetSoftMaxMaxTmpSize,
                            GetSoftMaxMinTmpSize, LayerNorm, RmsNorm, SoftMax, SoftMaxShapeInfo,
                            SoftMaxTilingFunc)

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
U = 2.0 ** -23                                    # one float ulp at 1.0 (relative)


def ulps(got, want, dt):
    """|got - want| in ulp of ``want`` rounded to dt (dt's subnormal spacing near 0)."""
    return np.abs(got.astype(np.float64) - want) / \
        np.spacing(np.abs(want).astype(dt)).astype(np.float64)


# == SoftMax =====================================================================================
def run_softmax(x, red_dt, ori_k=None, tmp_bytes=None, with_tmp=True, soc="Ascend910B1"):
    m, k = x.shape
    ori_k = ori_k or k
    rs = np.dtype(red_dt).itemsize
    tmp_bytes = tmp_bytes or GetSoftMaxMaxTmpSize([m, k], rs)
    tiling = SoftMaxTilingFunc([m, k], rs, tmp_bytes)
    arrays = {"x": x, "y": np.zeros_like(x), "s": np.zeros((m, 32 // rs), red_dt),
              "mx": np.zeros((m, 32 // rs), red_dt), "tmp": np.zeros(tmp_bytes, np.uint8)}

    def body(t):
        args = (t["tmp"],) if with_tmp else ()
        SoftMax(t["y"], t["s"], t["mx"], t["x"], *args, tiling, SoftMaxShapeInfo(m, k, m, ori_k))

    with np.errstate(all="ignore"):
        after, prof = ub_run(body, arrays, soc=soc)
    return after, prof, tiling


def softmax64(x, ori_k):
    x = x.astype(np.float64)
    mx = x[:, :ori_k].max(axis=1, keepdims=True)
    e = np.exp(x - mx)
    return e / e[:, :ori_k].sum(axis=1, keepdims=True), mx, e[:, :ori_k].sum(axis=1), x - mx


CASES = [  # (data, max/sum type, m, k, oriK, workspace bytes or None): every reduction path
    (F32, F32, 13, 40, 37, None),       # k < 64: WholeReduce per row; 13 rows: Brcb + tail
    (F32, F32, 16, 64, 64, None),       # one chunk: Copy; rows a multiple of 8
    (F32, F32, 9, 200, 195, 4000),      # chunks folded by Max/Add, a masked tail; 3 splits
    (F32, F32, 1, 128, 128, None),      # one row: the repeated WholeReduce
    (F32, F32, 3, 640, 600, None),      # k >= 512: BlockReduce of the first 512, per-row Sub
    (F16, F16, 11, 160, 150, None),     # half data and blocks: [m, 16] float blocks, casts
    (F16, F16, 20, 32, 32, 1000),       # half, several splits and a tail split
    (F16, F32, 17, 48, 48, None),       # half data, float max/sum
]


@pytest.mark.parametrize("dt, red_dt, m, k, ori_k, tmp", CASES)
def test_softmax_matches_float64_within_the_stated_bounds(dt, red_dt, m, k, ori_k, tmp):
    rng = np.random.default_rng(m * k)
    x = (rng.standard_normal((m, k)) * 6).astype(dt)
    after, _, tiling = run_softmax(x, red_dt, ori_k, tmp)
    y, mx, s, d = softmax64(x, ori_k)
    if dt == F32:
        # float: x - max rounds once, then Exp, the sum and Div add a few ulp
        bound = y * U * (np.abs(d) + 8) + 2.0 ** -126
        assert np.all(np.abs(after["y"] - y) <= bound)
    else:
        assert ulps(after["y"], y, F16).max() <= 0.6     # computed in float, rounded once
    # each row's value fills its whole 32 B block
    np.testing.assert_array_equal(after["mx"], np.broadcast_to(mx.astype(red_dt),
                                                               after["mx"].shape))
    assert (after["s"] == after["s"][:, :1]).all()
    if red_dt == F32:
        assert (np.abs(after["s"][:, 0] - s) <= 2 * U * s).all()
    else:
        assert ulps(after["s"][:, 0], s, F16).max() <= 0.6
    if tmp:
        assert tiling.rangeM > 1                      # the case runs several splits


def test_softmax_issues_the_library_sequence():
    x = np.random.default_rng(0).standard_normal((9, 40)).astype(np.float32)
    _, prof, _ = run_softmax(x, F32)
    names = [r[5] for r in prof.records[0]]
    want = ["WholeReduceMax", "Brcb", "GetValue", "Duplicate", "Sub", "Exp", "WholeReduceSum",
            "Brcb", "GetValue", "Duplicate", "Div"]
    it = iter(names)
    assert all(step in it for step in want), names      # in this order
    assert names.count("Sub") == 40 // 8                 # one per column block (k < 192)


def test_softmax_without_a_buffer_uses_the_ascend_c_reserve():
    x = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    after, _, _ = run_softmax(x, F32, tmp_bytes=2048, with_tmp=False)
    y, *_ = softmax64(x, 64)
    assert np.abs(after["y"] - y).max() < 1e-6
    with pytest.raises(UbError, match="reserve"):
        ub_run(lambda t: SoftMax(t["y"], t["s"], t["m"], t["x"],
                                 SoftMaxTilingFunc([4, 64], 4, 2048)),
               {"x": x, "y": x, "s": np.zeros((4, 8), np.float32),
                "m": np.zeros((4, 8), np.float32)}, reserve_ub=False)


def test_softmax_tmp_sizes_and_tiling_by_hand():
    # half [320, 64]: (16 + 64 + 64) floats a row
    assert GetSoftMaxMaxTmpSize([320, 64], 2, False) == 320 * 144 * 4 == 184320
    assert GetSoftMaxMinTmpSize([320, 64], 2, False) == 576
    assert GetSoftMaxMaxTmpSize([2, 4, 1024], 4, False) == 8 * (8 + 1024 + 64) * 4
    # 16384 B = 4096 floats: 28 rows -> 24 (multiple of 8) -> 16 (basic block: divides 320)
    t = SoftMaxTilingFunc([320, 64], 2, 16384)
    assert (t.srcM, t.srcK, t.splitM, t.splitSize, t.reduceK, t.reduceSize, t.rangeM, t.tailM,
            t.outMaxK, t.outMaxSize) == (320, 64, 16, 1024, 16, 256, 20, 0, 16, 5120)
    # float [50, 40], 4000 B = 1000 floats / 112 a row = 8 rows: 6 splits and a tail of 2
    t = SoftMaxTilingFunc([50, 40], 4, 4000)
    assert (t.splitM, t.rangeM, t.tailM, t.tailSplitSize, t.tailReduceSize) == (8, 6, 2, 80, 16)
    with pytest.raises(ValueError, match="32 B aligned"):
        GetSoftMaxMaxTmpSize([4, 20], 2)
    with pytest.raises(ValueError, match="typeSize"):
        GetSoftMaxMinTmpSize([4, 64], 8)
    with pytest.raises(ValueError, match="holds no row"):
        SoftMaxTilingFunc([4, 64], 4, 100)


def test_softmax_errors_name_the_rule():
    x = np.zeros((8, 64), np.float32)
    t = SoftMaxTilingFunc([8, 64], 4, 4096)
    base = {"x": x, "y": x, "s": np.zeros((8, 8), np.float32), "m": np.zeros((8, 8), np.float32),
            "tmp": np.zeros(4096, np.uint8), "h": np.zeros((8, 8), np.float16),
            "b": np.zeros((8, 64), ml_dtypes.bfloat16), "small": np.zeros(64, np.uint8)}
    cases = [
        (lambda v: SoftMax(v["y"], v["s"], v["m"], v["x"], v["small"], t), UbError, "minimum"),
        (lambda v: SoftMax(v["y"], v["s"], v["h"], v["x"], v["tmp"], t), DtypeError, "mix"),
        (lambda v: SoftMax(v["b"], v["b"], v["b"], v["b"], v["tmp"], t), DtypeError, "bfloat16"),
        (lambda v: SoftMax(v["y"], v["s"], v["m"], v["x"], v["tmp"], t,
                           SoftMaxShapeInfo(8, 60, 8, 60)), AlignmentError, "32 B"),
        (lambda v: SoftMax(v["y"], v["s"], v["m"], v["x"], v["tmp"], t,
                           SoftMaxShapeInfo(16, 64, 16, 64)), UbError, "needs"),
        (lambda v: SoftMax(v["y"], v["s"], v["m"], v["x"], v["tmp"], t, isDataFormatNZ=True),
         KernelError, "NZ"),
        (lambda v: SoftMax(v["y"], v["s"], v["m"], v["x"], v["tmp"], t,
                           SoftMaxShapeInfo(4, 64, 4, 64), isBasicBlock=True), KernelError,
         "isBasicBlock"),
        (lambda v: SoftMax(v["y"], v["s"], v["m"], v["x"], v["x"].ReinterpretCast(np.uint8), t),
         UbError, "overlaps"),
    ]
    for body, error, rule in cases:
        with pytest.raises(error, match=rule):
            ub_run(body, base)
    with pytest.raises(KernelError, match="2201"):
        ub_run(lambda v: SoftMax(v["y"], v["s"], v["m"], v["x"], v["tmp"], t), base,
               soc="Ascend310P3")


# == LayerNorm ====================================================================================
def layernorm64(x, g, b, eps, ori_h):
    x = x.astype(np.float64)
    mean = x.sum(-1) / ori_h
    var = ((x - mean[..., None]) ** 2).sum(-1) / ori_h
    std = np.sqrt(var + eps)[..., None]
    z = (x - mean[..., None]) / std
    return z * g + b, mean, var, z, std


@pytest.mark.parametrize("dt, shape, buf, reuse", [
    (F32, (2, 3, 64, 64), None, False),     # H = 64: no folding
    (F32, (2, 5, 200, 190), 9000, False),   # folding with a tail, several chunks and a tail
    (F32, (1, 20, 8, 8), None, True),       # isReuseSource: inputX is a temporary
    (F16, (3, 4, 48, 48), None, False),     # half: staged mean/variance, casts
    (F16, (1, 9, 160, 150), 4000, False),   # half, padded H, chunks
])
def test_layernorm_matches_float64_within_the_stated_bounds(dt, shape, buf, reuse):
    b_, s_, h, ori_h = shape
    rng = np.random.default_rng(h)
    x = (rng.standard_normal((b_, s_, h)) * 2 + 3).astype(dt)
    x[..., ori_h:] = 0                                    # the caller zero-pads H
    gamma, beta = rng.standard_normal(h).astype(dt), rng.standard_normal(h).astype(dt)
    mx, _ = GetLayerNormMaxMinTmpSize(list(shape), dt.itemsize, reuse)
    buf = buf or mx
    tiling = GetLayerNormNDTilingInfo(list(shape), buf, dt.itemsize, reuse)
    eps = 1e-5

    def body(t):
        LayerNorm(t["y"], t["m"], t["v"], t["x"], t["g"], t["b"], t["tmp"], eps, tiling,
                  isReuseSource=reuse)

    after, _ = ub_run(body, {"x": x, "y": np.zeros_like(x), "m": np.zeros((b_, s_), dt),
                             "v": np.zeros((b_, s_), dt), "g": gamma, "b": beta,
                             "tmp": np.zeros(buf, np.uint8)})
    y, mean, var, z, std = layernorm64(x, gamma.astype(np.float64), beta.astype(np.float64),
                                       float(dt.type(eps)), ori_h)
    # float error: x - mean cancels (|x|/std), plus |z|, |beta|; then T's own rounding
    g64 = np.abs(gamma.astype(np.float64))
    scale = U * (g64 * (np.abs(x.astype(np.float64)).max(-1, keepdims=True) / std + np.abs(z))
                 + np.abs(beta.astype(np.float64)))
    assert np.all(np.abs(after["y"] - y) <= 0.5 * np.spacing(np.abs(y).astype(dt)) + 4 * scale)
    if dt == F32:
        assert np.all(np.abs(after["m"] - mean) <= 4 * U * np.abs(x).max(-1))
        assert np.all(np.abs(after["v"] - var) <= 4 * U * (var + mean ** 2))
    else:
        assert ulps(after["m"], mean, F16).max() <= 0.6
        assert ulps(after["v"], var, F16).max() <= 0.6


def test_layernorm_tmp_sizes_and_tiling_by_hand():
    # float [2, 3, 64]: 3 x (2*3*64*4 = 1536) + 2 x 32-aligned(2*3*4 = 24) ; min: one row
    assert GetLayerNormMaxMinTmpSize([2, 3, 64, 64], 4, False) == (3 * 1536 + 64, 3 * 256 + 64)
    assert GetLayerNormMaxMinTmpSize([2, 3, 64, 64], 4, True) == (2 * 1536 + 64, 2 * 256 + 64)
    t = GetLayerNormNDTilingInfo([2, 3, 64, 64], 832, 4, False)    # 208 floats: one row
    assert (t.oneTmpSize, t.bsCurLength, t.loopRound, t.inputTailSize, t.firstTmpStartPos,
            t.secondTmpStartPos, t.thirdTmpStartPos) == (64, 1, 6, 0, 0, 64, 128)
    assert t.lastDimValueBack == np.float32(1 / 64)
    # half [1, 9, 160, 160] in 4000 B: 1000 floats - 2 x 16 staged = 968 / 3 -> 2 rows
    t = GetLayerNormNDTilingInfo([1, 9, 160, 160], 4000, 2, False)
    assert (t.meanTmpTensorSize, t.firstTmpStartPos, t.oneTmpSize, t.loopRound,
            t.inputTailSize, t.inputTailPos, t.meanVarTailSize, t.meanVarTailPos) == \
        (16, 32, 320, 4, 160, 1280, 1, 8)
    with pytest.raises(ValueError, match="4 positive dims"):
        GetLayerNormMaxMinTmpSize([2, 64], 4)
    with pytest.raises(ValueError, match="holds no row"):
        GetLayerNormNDTilingInfo([1, 2, 64, 64], 256, 4)


def test_layernorm_errors():
    x = np.zeros((1, 2, 64), np.float32)
    t = GetLayerNormNDTilingInfo([1, 2, 64, 64], 1024, 4)
    arrays = {"x": x, "y": x, "m": np.zeros(8, np.float32), "v": np.zeros(8, np.float32),
              "g": np.zeros(64, np.float32), "h": np.zeros(64, np.float16),
              "tmp": np.zeros(1024, np.uint8), "small": np.zeros(256, np.uint8)}
    cases = [
        (lambda v: LayerNorm(v["y"], v["m"], v["v"], v["x"], v["g"], v["g"], v["small"], 1e-5, t),
         UbError, "minimum"),
        (lambda v: LayerNorm(v["y"], v["m"], v["v"], v["x"], v["h"], v["g"], v["tmp"], 1e-5, t),
         DtypeError, "mix"),
        (lambda v: LayerNorm(v["y"], v["m"], v["v"], v["x"], v["g"][32], v["g"], v["tmp"], 1e-5,
                             t), UbError, "gamma"),
    ]
    for body, error, rule in cases:
        with pytest.raises(error, match=rule):
            ub_run(body, arrays)


# == RmsNorm ======================================================================================
@pytest.mark.parametrize("dt, shape, ori_h, buf, soc", [
    (F32, (2, 3, 64), 64, None, "Ascend910B1"),          # H == 64: one Mul by gamma
    (F32, (2, 5, 200), 190, 5000, "Ascend910B1"),        # several RepeatReduceSum passes, tail
    (F32, (1, 20, 8), 8, None, "Ascend910B1"),           # H < 64: masked Mul over the rows
    (F32, (2, 300, 16), 16, None, "Ascend910B1"),        # 255 rows a chunk
    (F32, (1, 2, 576), 576, None, "Ascend910B1"),        # H/64 >= rows: one Mul per row
    (F16, (3, 4, 48), 48, None, "Ascend910B1"),
    (F16, (1, 9, 160), 160, 4000, "Ascend910_9392"),     # A3: the library's vcadd runs there
])
def test_rmsnorm_matches_float64_within_the_stated_bounds(dt, shape, ori_h, buf, soc):
    b_, s_, h = shape
    rng = np.random.default_rng(h)
    x = (rng.standard_normal(shape) * 2 + 1).astype(dt)
    x[..., ori_h:] = 0
    gamma = rng.standard_normal(h).astype(dt)
    mx, _ = GetRmsNormMaxMinTmpSize(list(shape), dt.itemsize)
    buf = buf or mx
    tiling = GetRmsNormTilingInfo(list(shape), [b_, s_, ori_h], buf, dt.itemsize)
    after, _ = ub_run(lambda t: RmsNorm(t["y"], t["x"], t["g"], t["tmp"], 1e-5, tiling),
                      {"x": x, "y": np.zeros_like(x), "g": gamma, "tmp": np.zeros(buf, np.uint8)},
                      soc=soc)
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt((x64 ** 2).sum(-1, keepdims=True) / ori_h + float(dt.type(1e-5))) * \
        gamma.astype(np.float64)
    if dt == F32:
        assert np.all(np.abs(after["y"] - y) <= 8 * U * np.abs(y))
    else:
        assert ulps(after["y"], y, F16).max() <= 0.6


def test_rmsnorm_tmp_sizes_and_tiling_by_hand():
    # float [2, 5, 200]: max (2000 + align8(10) = 16) floats, min (200 + 8)
    assert GetRmsNormMaxMinTmpSize([2, 5, 200], 4) == (2016 * 4, 208 * 4)
    assert GetRmsNormMaxMinTmpSize([1, 9, 160], 2) == ((2 * 1440 + 16) * 4, (320 + 8) * 4)
    # 5000 B = 1250 floats: 6 rows (6*200 + 8 = 1208); 7 would need 1408
    t = GetRmsNormTilingInfo([2, 5, 200], [2, 5, 190], 5000, 4)
    assert (t.mainBsLength, t.mainBshLength, t.mainBsLengthAlign, t.loopRound, t.tailBshLength,
            t.inputTailPos, t.tailBsLength, t.originalHLength) == (6, 1200, 8, 1, 800, 1200, 4, 190)
    assert t.reciprocalOfHLength == np.float32(1 / 190)
    # half: 2 x H floats a row: 1000 floats -> 3 rows
    assert GetRmsNormTilingInfo([1, 9, 160], [1, 9, 160], 4000, 2).mainBsLength == 3
    # at most 255 rows; a multiple of 8 with isBasicBlock
    assert GetRmsNormTilingInfo([2, 300, 16], [2, 300, 16], 10 ** 6, 4).mainBsLength == 255
    assert GetRmsNormTilingInfo([1, 72, 64], [1, 72, 64], 20000, 4, isBasicBlock=True) \
        .mainBsLength == 72
    for args, rule in [(([1, 2, 60], [1, 2, 60], 4000, 4), "32 B"),
                       (([1, 2, 64], [1, 2, 70], 4000, 4), "originH"),
                       (([1, 2, 64], [1, 2, 64], 100, 4), "minimum")]:
        with pytest.raises(ValueError, match=rule):
            GetRmsNormTilingInfo(*args)
    with pytest.raises(ValueError, match="basic block"):
        GetRmsNormMaxMinTmpSize([1, 3, 64], 4, isBasicBlock=True)


def test_rmsnorm_errors():
    x = np.zeros((1, 2, 64), np.float32)
    t = GetRmsNormTilingInfo([1, 2, 64], [1, 2, 64], 1024, 4)
    arrays = {"x": x, "y": x, "g": np.zeros(64, np.float32), "small": np.zeros(128, np.uint8),
              "tmp": np.zeros(1024, np.uint8), "h": np.zeros(64, np.float16)}
    cases = [
        (lambda v: RmsNorm(v["y"], v["x"], v["g"], v["small"], 1e-5, t), UbError, "minimum"),
        (lambda v: RmsNorm(v["y"], v["x"], v["h"], v["tmp"], 1e-5, t), DtypeError, "mix"),
        (lambda v: RmsNorm(v["y"], v["x"], v["g"], v["tmp"], 1e-5, t, isBasicBlock=True),
         KernelError, "isBasicBlock"),
    ]
    for body, error, rule in cases:
        with pytest.raises(error, match=rule):
            ub_run(body, arrays)


def test_norms_without_a_buffer_use_the_ascend_c_reserve():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 64)).astype(np.float32)
    g, b = np.ones(64, np.float32), np.zeros(64, np.float32)
    rms = GetRmsNormTilingInfo([1, 4, 64], [1, 4, 64], 4096, 4)
    ln = GetLayerNormNDTilingInfo([1, 4, 64, 64], 4096, 4)

    def body(t):
        RmsNorm(t["r"], t["x"], t["g"], 1e-5, rms)
        LayerNorm(t["y"], t["m"], t["v"], t["x"], t["g"], t["b"], 1e-5, ln)

    after, _ = ub_run(body, {"x": x, "r": np.zeros_like(x), "y": np.zeros_like(x), "g": g,
                             "b": b, "m": np.zeros(4, np.float32), "v": np.zeros(4, np.float32)})
    x64 = x.astype(np.float64)
    assert np.allclose(after["r"], x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-5),
                       rtol=1e-6)
    assert np.allclose(after["m"], x64.mean(-1)[0], rtol=1e-6)
