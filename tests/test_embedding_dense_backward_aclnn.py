"""aclnnEmbeddingDenseBackward through the host API: the official sample, every dtype pair
on both SoC families, index distributions, padding and scaling, deterministic mode, column
chunks and the documented caveats, the Atlas training bound, every validation path (status,
message naming the argument, nothing changed), out-of-range indices (507015, out unchanged)
and the workspace formula (docs/reference/api.md §1, §3; docs/reference/operators.md §2)."""

import ml_dtypes
import numpy as np
import pytest

import aclnn
from aclnn import acl, runtime
from aclnn.ops import embedding_dense_backward as op
from aclnn.ops.embedding_dense_backward import (PrecisionCaveatWarning,
                                                aclnnEmbeddingDenseBackward,
                                                aclnnEmbeddingDenseBackwardGetWorkspaceSize)
from npusim.kernels.embedding_dense_backward import tiling as edb
from npusim.kernels.embedding_dense_backward.golden import embedding_dense_backward_golden as golden

from aclnn_helpers import (assert_unchanged, from_device, open_stream, run_example, run_two_phase,
                           to_device)

BF16 = np.dtype(ml_dtypes.bfloat16)
MIB = 1 << 20


@pytest.fixture
def stream_910(tmp_path):
    yield open_stream(tmp_path, "Ascend910A")
    runtime.reset()


def run_op(stream, grad_t, idx_t, nw, pad, scale, out_t, expect_sync=0):
    return run_two_phase(stream, aclnnEmbeddingDenseBackwardGetWorkspaceSize,
                         aclnnEmbeddingDenseBackward, grad_t, idx_t, nw, pad, scale, out_t,
                         expect_sync=expect_sync)


def compute(stream, grad, idx, nw, pad=-1, scale=False, idx_acl=None):
    out_t = to_device(np.full((nw, grad.shape[-1]), 5, grad.dtype))
    _, ex = run_op(stream, to_device(grad), to_device(idx, idx_acl), nw, pad, scale, out_t)
    return from_device(out_t, grad.dtype), ex


def assert_close(out, expect, dtype):
    tol = {np.dtype(np.float32): 2e-6, np.dtype(np.float16): 2e-3, BF16: 1.6e-2}[np.dtype(dtype)]
    o, e = out.astype(np.float64), expect.astype(np.float64)
    np.testing.assert_allclose(o, e, rtol=tol, atol=tol * max(1.0, np.abs(e).max()))


# -- the official sample -------------------------------------------------------------------
@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend910A"])
def test_official_sample(soc, capsys):
    result = run_example("embedding_dense_backward_sample", ["--soc", soc])
    # grad rows {1,2,3}, {4,5,6} to rows 1 and 2; row 0 is paddingIdx, row 3 untouched
    np.testing.assert_array_equal(result, [[0, 0, 0], [1, 2, 3], [4, 5, 6], [0, 0, 0]])
    assert capsys.readouterr().out.count("result[") == 12


# -- dtypes, shapes, distributions ---------------------------------------------------------
INDEX_TYPES = [np.float32, np.float16, np.float64, np.int32, np.int64, np.int16, np.int8,
               np.uint8, np.bool_]


@pytest.mark.parametrize("grad_dtype", [np.dtype(np.float32), np.dtype(np.float16), BF16])
@pytest.mark.parametrize("idx_dtype", INDEX_TYPES)
def test_every_dtype_pair_on_a2(stream, grad_dtype, idx_dtype):
    rng = np.random.default_rng(3)
    nw = 2 if idx_dtype == np.bool_ else 6
    idx = rng.integers(0, nw, (3, 4)).astype(idx_dtype)
    grad = rng.standard_normal((3, 4, 8)).astype(grad_dtype)
    out, ex = compute(stream, grad, idx, nw, pad=1)
    assert_close(out, golden(grad, idx, nw, 1, False), grad_dtype)
    assert ("Cast" in ex.kernels) == (idx_dtype != np.int32 or grad_dtype != np.float32)


@pytest.mark.parametrize("grad_dtype", [np.dtype(np.float32), np.dtype(np.float16)])
@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64, np.float32, np.uint8])
@pytest.mark.parametrize("scale", [False, True])
def test_dtype_pairs_on_atlas_training(stream_910, grad_dtype, idx_dtype, scale):
    rng = np.random.default_rng(4)
    idx = rng.integers(0, 9, (50,)).astype(idx_dtype)
    grad = rng.standard_normal((50, 24)).astype(grad_dtype)
    out, ex = compute(stream_910, grad, idx, 9, pad=2, scale=scale)
    assert ex.path == "V1" and "EmbeddingDenseGrad" in ex.kernels
    assert_close(out, golden(grad, idx, 9, 2, scale), grad_dtype)


@pytest.mark.parametrize("kind", ["random", "same", "distinct", "boundary", "skew"])
@pytest.mark.parametrize("E", [600, 40])                 # sorted V2 and small-dim kernels
def test_index_distributions(stream, kind, E):
    rng = np.random.default_rng(8)
    rows, nw = 960, 1000
    if kind == "random":
        idx = rng.integers(0, nw, rows)
    elif kind == "same":
        idx = np.full(rows, 17)
    elif kind == "distinct":
        idx = rng.permutation(nw)[:rows]
    elif kind == "boundary":                           # runs of 20 straddle the 48 core ranges
        idx = (np.arange(rows) + 10) // 20
    else:
        p = 1.0 / np.arange(1, nw + 1) ** 1.2
        idx = rng.choice(nw, rows, p=p / p.sum())
    grad = rng.standard_normal((rows, E)).astype(np.float32)
    out, ex = compute(stream, grad, idx, nw, pad=-1)
    assert ex.path == ("V2" if E > 512 else "V2-small-dim")
    assert_close(out, golden(grad, idx, nw, -1, False), np.float32)


@pytest.mark.parametrize("pad", [0, 3, -1, -3, 50, 2 ** 63])
@pytest.mark.parametrize("scale", [False, True])
def test_padding_and_scaling(stream, pad, scale):
    rng = np.random.default_rng(6)
    idx = rng.integers(0, 8, (4, 30))
    idx[0, :5] = 3
    grad = rng.standard_normal((4, 30, 600)).astype(np.float32)
    out, _ = compute(stream, grad, idx, 8, pad=pad, scale=scale)
    expect = golden(grad, idx, 8, pad if pad >= 0 else -1, scale)
    assert_close(out, expect, np.float32)
    if 0 <= pad < 8:
        assert not out[pad].any()                      # the padding row receives nothing
    else:
        assert out[3].any()                            # a negative / too large one: nothing


def test_deterministic_mode_bit_identical_across_runs(stream):
    assert acl.rt.ctx_set_sys_param_opt(aclnn.ACL_OPT_DETERMINISTIC, 1) == 0
    rng = np.random.default_rng(12)
    idx = rng.integers(0, 30, 2000)
    grad = rng.standard_normal((2000, 64)).astype(np.float32)
    first, ex = compute(stream, grad, idx, 30)
    assert ex.tiling.isDeterministMode and ex.tiling.tilingKey == 10 and ex.path == "V2"
    for _ in range(2):
        again, _ = compute(stream, grad, idx, 30)
        np.testing.assert_array_equal(again.view(np.uint32), first.view(np.uint32))
    assert_close(first, golden(grad, idx, 30, -1, False), np.float32)
    # small fp16 grad is cast to fp32 first, so the fp32 determinist kernel runs; the E = 64
    # rows would take the small-dim kernel without deterministic mode
    half, ex_h = compute(stream, grad.astype(np.float16), idx, 30)
    assert ex_h.tiling.isDeterministMode and not ex_h.tiling.isSmallDim
    assert_close(half, golden(grad.astype(np.float16), idx, 30, -1, False), np.float16)


def test_wide_rows_run_in_column_chunks_with_the_documented_caveat(stream):
    rng = np.random.default_rng(13)
    E = 14656 + 64                                    # > 14336 and > maxFormerNum (14640)
    grad = rng.standard_normal((6, E)).astype(np.float32)
    idx = np.array([1, 3, 1, 0, 3, 3])
    dev = runtime.current_device()
    with pytest.warns(PrecisionCaveatWarning, match="14336"):
        out, ex = compute(stream, grad, idx, 4)
    assert ex.tiling.formerDimRepTime == 1 and ex.tiling.tailEmbeddingDim == E - 14640
    assert_close(out, golden(grad, idx, 4, -1, False), np.float32)
    prof = next(p for p in reversed(dev.profiles) if p.op_name == "EmbeddingDenseGradV2")
    assert any("14336" in w and "high precision" in w for w in prof.warnings)
    assert ex.caveats and all("14336" in c for c in ex.caveats)


def test_int32_thresholds_reported_the_same_way(stream, monkeypatch):
    """The INT32_MAX / INT32_INF caveats, without allocating such sizes: the thresholds are
    lowered, which also routes to the V1 kernel as the op does beyond INT32_MAX."""
    monkeypatch.setattr(edb, "INT32_MAX_LIMIT", 20)
    monkeypatch.setattr(edb, "INT32_INF", 25)
    rng = np.random.default_rng(14)
    grad = rng.standard_normal((30, 16)).astype(np.float32)
    idx = rng.integers(0, 10, 30)
    dev = runtime.current_device()
    with pytest.warns(PrecisionCaveatWarning) as record:
        out, ex = compute(stream, grad, idx, 10)
    assert ex.path == "V1"
    texts = [str(w.message) for w in record]
    assert any("rows, more than INT32_MAX" in t for t in texts)
    assert any("INT32_INF" in t and "high performance" in t for t in texts)
    prof = next(p for p in reversed(dev.profiles) if p.op_name == "EmbeddingDenseGrad")
    assert len(prof.warnings) == 2
    assert_close(out, golden(grad, idx, 10, -1, False), np.float32)


@pytest.mark.parametrize("shape_g,shape_i", [((0, 8), (0,)), ((3, 0), (3,)), ((2, 0, 4), (2, 0))])
def test_empty_inputs_give_zeros(stream, shape_g, shape_i):
    grad = np.zeros(shape_g, np.float32)
    idx = np.zeros(shape_i, np.int64)
    E = shape_g[-1]
    out_t = to_device(np.full((5, E), 7, np.float32))
    ws, ex = run_op(stream, to_device(grad), to_device(idx), 5, 0, False, out_t)
    assert ws == 0 and ex.path == "empty"
    assert not from_device(out_t, np.float32).any()


# -- workspace -----------------------------------------------------------------------------
def test_workspace_follows_the_formula(stream):
    grad_t = to_device(np.zeros((100, 600), np.float16))
    idx_t = to_device(np.zeros(100, np.int64))
    out_t = to_device(np.zeros((40, 600), np.float16))
    ws, ex, ret = aclnnEmbeddingDenseBackwardGetWorkspaceSize(grad_t, idx_t, 40, -1, True, out_t)
    assert ret == 0 and ex.path == "V2"
    a = 512
    align = lambda n: -(-n // a) * a                   # noqa: E731
    # system 16 MiB + counts align8(40)*4, Sort (one chunk: no buffers), sorted + positions,
    # int32 indices, fp32 grad (scale forces the cast), fp32 result
    expect = (16 * MIB + align(160) + 2 * align(400) + align(400) + align(100 * 600 * 4)
              + align(40 * 600 * 4))
    assert ws == expect
    assert ex.tiling.workspaceSize == 16 * MIB + 160
    assert list(ex.workspace_parts) == ["v2", "sort", "sorted", "pos", "indices", "grad",
                                        "result"]


# -- validation -------------------------------------------------------------------------------
def _fresh():
    grad = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[0, 1, 2], [2, 1, 0]], np.int64)
    out = np.full((3, 4), 9, np.float32)
    return [grad, idx, out], [to_device(grad), to_device(idx), to_device(out)]


def _retype(t, dt):
    return aclnn.aclCreateTensor(list(t.view_dims), dt, list(t.strides), 0, t.format,
                                 list(t.storage_dims), t.tensor_data)


def _reshape(t, shape, storage=None):
    strides = aclnn.contiguous_strides(shape)
    return aclnn.aclCreateTensor(list(shape), t.data_type, list(strides), 0, aclnn.ACL_FORMAT_ND,
                                 list(storage or shape), t.tensor_data)


def _bad_cases():
    f32 = aclnn.ACL_FLOAT
    return {
        "null grad": (lambda G, I, O: (None, I, 3, 0, False, O), 161001, "grad"),
        "null indices": (lambda G, I, O: (G, None, 3, 0, False, O), 161001, "indices"),
        "null out": (lambda G, I, O: (G, I, 3, 0, False, None), 161001, "out"),
        "int32 grad": (lambda G, I, O: (_retype(G, aclnn.ACL_INT32), I, 3, 0, False, O), 161002,
                       "grad"),
        "uint16 indices": (lambda G, I, O: (G, _retype(I, aclnn.ACL_UINT16), 3, 0, False, O),
                           161002, "indices"),
        "fp16 out": (lambda G, I, O: (G, I, 3, 0, False, _retype(O, aclnn.ACL_FLOAT16)), 161002,
                     "out"),
        "1-D grad": (lambda G, I, O: (_reshape(G, [24]), I, 3, 0, False, O), 161002, "grad"),
        "9-D grad": (lambda G, I, O: (_reshape(G, [1] * 6 + [2, 3, 4], [24]), I, 3, 0, False, O),
                     161002, "grad"),
        "9-D indices": (lambda G, I, O: (G, _reshape(I, [1] * 7 + [2, 3], [6]), 3, 0, False, O),
                        161002, "indices"),
        "0-D indices": (lambda G, I, O: (G, _reshape(I, [], [1]), 3, 0, False, O), 161002,
                        "indices"),
        "rows vs indices": (lambda G, I, O: (_reshape(G, [3, 2, 4]), _reshape(I, [5], [6]), 3, 0,
                                             False, O), 161002, "indices"),
        "3-D out": (lambda G, I, O: (G, I, 3, 0, False, _reshape(O, [3, 4, 1])), 161002, "out"),
        "out rows": (lambda G, I, O: (G, I, 4, 0, False, O), 161002, "out"),
        "out cols": (lambda G, I, O: (G, I, 3, 0, False, _reshape(O, [4, 3], [12])), 161002,
                     "out"),
        "NZ grad": (lambda G, I, O: (aclnn.aclCreateTensor([2, 3, 4], f32, [12, 4, 1], 0,
                                                           aclnn.ACL_FORMAT_FRACTAL_NZ, [2, 3, 4],
                                                           G.tensor_data), I, 3, 0, False, O),
                    161002, "grad"),
        "non-contiguous out": (lambda G, I, O: (G, I, 3, 0, False, aclnn.aclCreateTensor(
            [3, 4], f32, [1, 3], 0, aclnn.ACL_FORMAT_ND, [12], O.tensor_data)), 161002, "out"),
        "not device memory": (lambda G, I, O: (G, aclnn.aclCreateTensor(
            [2, 3], aclnn.ACL_INT64, [3, 1], 0, aclnn.ACL_FORMAT_ND, [2, 3], 0x1000), 3, 0,
            False, O), 161002, "indices"),
        "negative numWeights": (lambda G, I, O: (G, I, -3, 0, False, O), 161002, "numWeights"),
        "bool numWeights": (lambda G, I, O: (G, I, True, 0, False, O), 161002, "numWeights"),
        "float paddingIdx": (lambda G, I, O: (G, I, 3, 0.5, False, O), 161002, "paddingIdx"),
        "huge paddingIdx": (lambda G, I, O: (G, I, 3, 2 ** 64, False, O), 161002, "paddingIdx"),
        "scale not bool": (lambda G, I, O: (G, I, 3, 0, "yes", O), 161002, "scaleGradByFreq"),
    }


@pytest.mark.parametrize("case", list(_bad_cases()))
def test_invalid_arguments(stream, case):
    build, code, arg = _bad_cases()[case]
    arrays, tensors = _fresh()
    ws, ex, ret = aclnnEmbeddingDenseBackwardGetWorkspaceSize(*build(*tensors))
    assert (ws, ex, ret) == (0, None, code)
    msg = acl.get_recent_err_msg()
    assert msg and arg in msg
    assert acl.rt.synchronize_stream(stream) == 0
    assert_unchanged(tensors, arrays)


def test_bf16_and_socs_by_family(stream_910, tmp_path):
    arrays, tensors = _fresh()
    grad_bf16 = _retype(tensors[0], aclnn.ACL_BF16)
    _, _, ret = aclnnEmbeddingDenseBackwardGetWorkspaceSize(grad_bf16, tensors[1], 3, 0, False,
                                                           _retype(tensors[2], aclnn.ACL_BF16))
    assert ret == 161002 and "BF16" in acl.get_recent_err_msg()   # no bf16 on Atlas training
    runtime.reset()
    open_stream(tmp_path, "Ascend310P3")
    arrays, tensors = _fresh()
    _, _, ret = aclnnEmbeddingDenseBackwardGetWorkspaceSize(*tensors[:2], 3, 0, False, tensors[2])
    assert ret == 161002 and "Ascend310P3" in acl.get_recent_err_msg()
    runtime.reset()
    t = aclnn.aclCreateTensor([2, 3], aclnn.ACL_FLOAT, [3, 1], 0, aclnn.ACL_FORMAT_ND, [2, 3], 0)
    _, _, ret = aclnnEmbeddingDenseBackwardGetWorkspaceSize(t, t, 3, 0, False, t)
    assert ret == aclnn.ACLNN_ERR_RUNTIME_ERROR


@pytest.mark.parametrize("idx_dtype,cs_factor,divisor", [(np.int32, 4, 36), (np.int64, 8, 20)])
def test_atlas_training_embedding_dim_bound(stream_910, idx_dtype, cs_factor, divisor):
    nw = 500                                            # countsSize = 500/32 + 500%32 = 35
    bound = (180192 - 35 * cs_factor) / divisor
    at = int(np.ceil(bound))
    rng = np.random.default_rng(15)
    idx = rng.integers(0, nw, 8).astype(idx_dtype)
    grad_at = to_device(np.ones((8, at), np.float32))
    out_at = to_device(np.zeros((nw, at), np.float32))
    ws, ex, ret = aclnnEmbeddingDenseBackwardGetWorkspaceSize(grad_at, to_device(idx), nw, -1,
                                                             True, out_at)
    assert (ws, ex, ret) == (0, None, 161002)
    msg = acl.get_recent_err_msg()
    assert "embeddingDim" in msg and f"{bound:.4f}" in msg and "countsSize" in msg
    # without scaling there is no counts array and no bound
    _, ex, ret = aclnnEmbeddingDenseBackwardGetWorkspaceSize(grad_at, to_device(idx), nw, -1,
                                                            False, out_at)
    assert ret == 0
    # just below the bound it runs and fits the UB
    grad = rng.standard_normal((8, at - 1)).astype(np.float32)
    out, ex = compute(stream_910, grad, idx, nw, scale=True)
    assert ex.tiling.indicesTile == 32 // np.dtype(idx_dtype).itemsize
    assert_close(out, golden(grad, idx, nw, -1, True), np.float32)


# -- indices outside [0, numWeights) ---------------------------------------------------------
@pytest.mark.parametrize("soc_fixture,E,det,bad", [
    ("stream", 600, False, 37), ("stream", 40, False, -5), ("stream", 600, True, 10 ** 6),
    ("stream_910", 40, False, -1), ("stream_910", 40, False, 99)])
def test_out_of_range_index_fails_like_an_ai_core_exception(request, soc_fixture, E, det, bad):
    stream = request.getfixturevalue(soc_fixture)
    if det:
        assert acl.rt.ctx_set_sys_param_opt(aclnn.ACL_OPT_DETERMINISTIC, 1) == 0
    rng = np.random.default_rng(16)
    idx = rng.integers(0, 30, 90)
    idx[41] = bad
    grad = rng.standard_normal((90, E)).astype(np.float32)
    before = np.full((30, E), 3, np.float32)
    out_t = to_device(before)
    run_op(stream, to_device(grad), to_device(idx), 30, -1, False, out_t,
           expect_sync=aclnn.ACL_ERROR_RT_AICORE_EXCEPTION)
    msg = acl.get_recent_err_msg()
    assert f"indices[41] = {bad}" in msg and "numWeights = 30" in msg
    np.testing.assert_array_equal(from_device(out_t, np.float32), before)
    # the stream is usable again, and a valid call still works
    idx[41] = 0
    out, _ = compute(stream, grad, idx, 30)
    assert_close(out, golden(grad, idx, 30, -1, False), np.float32)


def test_repeatable_executor_reads_new_data(stream):
    rng = np.random.default_rng(17)
    grad = rng.standard_normal((64, 16)).astype(np.float32)
    idx = rng.integers(0, 5, 64)
    g_t, i_t = to_device(grad), to_device(idx)
    out_t = to_device(np.zeros((5, 16), np.float32))
    ws, ex, _ = aclnnEmbeddingDenseBackwardGetWorkspaceSize(g_t, i_t, 5, -1, False, out_t)
    assert aclnn.aclSetAclOpExecutorRepeatable(ex) == 0
    wptr, _ = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    for scale in (1, 2):
        g2 = grad * scale
        acl.rt.memcpy(g_t.tensor_data, g2.nbytes, acl.util.numpy_to_ptr(g2), g2.nbytes,
                      aclnn.ACL_MEMCPY_HOST_TO_DEVICE)
        assert aclnnEmbeddingDenseBackward(wptr, ws, ex, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        assert_close(from_device(out_t, np.float32), golden(g2, idx, 5, -1, False), np.float32)
    assert aclnn.aclDestroyAclOpExecutor(ex) == 0


def test_profiles_of_the_graph(stream):
    rng = np.random.default_rng(18)
    grad = rng.standard_normal((500, 1024)).astype(np.float16)
    idx = rng.integers(0, 100, 500)
    dev = runtime.current_device()
    n = len(dev.profiles)
    out, ex = compute(stream, grad, idx, 100)
    names = [p.op_name for p in dev.profiles[n:]]
    assert names == ["Cast", "Cast", "Sort", "ZerosLike", "EmbeddingDenseGradV2", "Cast"]
    assert names == ex.kernels
    v2 = dev.profiles[n + 4]
    assert v2.block_dim == 48 and v2.bytes_read >= 500 * 1024 * 4
    assert op.API == "aclnnEmbeddingDenseBackward"


@pytest.mark.parametrize("determinist", [False, True])
def test_the_same_call_again_takes_every_kept_replay(stream, monkeypatch, determinist):
    """The same call on the same data again (its output and workspace allocated anew):
    every kernel of the graph records what it recorded before (its row walk's flags are
    named by the walk, not by an object's id), so none is replayed again
    (npusim.timing.REPLAY_MEMO)."""
    from npusim import timing
    monkeypatch.setattr(timing, "REPLAY_MEMO", True)
    monkeypatch.setattr(timing, "_REPLAY_KEPT", timing._KeptReplays())
    replays = []
    real = timing._replay
    monkeypatch.setattr(timing, "_replay", lambda *a: replays.append(1) or real(*a))
    if determinist:
        assert acl.rt.ctx_set_sys_param_opt(aclnn.ACL_OPT_DETERMINISTIC, 1) == 0
    rng = np.random.default_rng(19)
    grad = rng.standard_normal((300, 640)).astype(np.float32)    # > 512: not small-dim
    idx = rng.integers(0, 40, 300)
    first, ex = compute(stream, grad, idx, 40)
    assert ex.tiling.isDeterministMode == determinist and not ex.tiling.isSmallDim
    n = len(replays)
    assert n == len(ex.kernels)
    again, _ = compute(stream, grad, idx, 40)
    assert len(replays) == n
    np.testing.assert_array_equal(again, first)
