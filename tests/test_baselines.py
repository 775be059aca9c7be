"""The benchmarks' speed baselines (benchmarks/baselines.py) compute the operators' formulas:
each fp32 numpy and torch function against the float64 golden of kernels/*/golden.py on
small data, every error path, and the timing harness's order of runs."""
import sys
from pathlib import Path

import numpy as np
import pytest

from npusim.kernels.add.golden import add_golden
from npusim.kernels.apply_fused_ema_adam.golden import apply_fused_ema_adam_golden
from npusim.kernels.embedding_dense_backward.golden import embedding_dense_backward_golden
from npusim.kernels.fused_sparse_adam.golden import fused_sparse_adam_golden
from npusim.kernels.matmul.golden import matmul_golden
from npusim.kernels.rms_norm.golden import rms_norm_golden
from npusim.kernels.softmax.golden import softmax_golden

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import baselines  # noqa: E402
import harness  # noqa: E402

ATTRS = dict(lr=1e-2, ema_decay=0.9, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1)


def adam_state(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    grad, var, m, s = (rng.standard_normal(n, dtype=np.float32) for _ in range(4))
    v = np.abs(rng.standard_normal(n, dtype=np.float32))
    return grad, var, m, v, s


def assert_adam_matches(got, expect):
    for name, g, e in zip(("var", "m", "v", "s"), got, expect):
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("mode,bias", [(1, True), (0, True), (1, False), (0, False)])
def test_ema_adam_numpy_matches_golden_in_place(mode, bias):
    grad, var, m, v, s = adam_state()
    expect = apply_fused_ema_adam_golden(grad, var, m, v, s, 7, mode=mode,
                                         bias_correction=bias, **ATTRS)
    grad0 = grad.copy()
    out = baselines.ema_adam_numpy(grad, var, m, v, s, 7, mode=mode, bias_correction=bias,
                                   **ATTRS)
    assert all(o is a for o, a in zip(out, (var, m, v, s)))      # updated in place
    assert_adam_matches(out, expect)
    np.testing.assert_array_equal(grad, grad0)                  # grad is read only


def test_ema_adam_numpy_uses_given_scratch():
    grad, var, m, v, s = adam_state()
    expect = apply_fused_ema_adam_golden(grad, var, m, v, s, 3, mode=0, **ATTRS)
    scratch = (np.full_like(var, np.nan), np.full_like(var, np.nan))
    assert_adam_matches(baselines.ema_adam_numpy(grad, var, m, v, s, 3, mode=0,
                                                 scratch=scratch, **ATTRS), expect)
    assert not np.isnan(scratch[0]).any() and not np.isnan(scratch[1]).any()


def test_ema_adam_numpy_errors():
    state = adam_state(8)
    with pytest.raises(ValueError, match="mode must be 0 or 1"):
        baselines.ema_adam_numpy(*state, 1, mode=2)
    with pytest.raises(ValueError, match="float32"):
        baselines.ema_adam_numpy(*(a.astype(np.float64) for a in state), 1)


@pytest.mark.parametrize("mode", [1, 0])
def test_ema_adam_torch_matches_golden_and_repeats_the_step(mode):
    pytest.importorskip("torch")
    grad, var, m, v, s = adam_state(seed=1)
    expect = apply_fused_ema_adam_golden(grad, var, m, v, s, 10, mode=mode, **ATTRS)
    start = [a.copy() for a in (var, m, v, s)]
    opt = baselines.EmaAdamTorch(grad, var, m, v, s, 10, mode=mode, **ATTRS)
    opt.step()
    assert_adam_matches((var, m, v, s), expect)
    first = [a.copy() for a in (var, m, v, s)]
    for a, a0 in zip((var, m, v, s), start):                    # the benchmark's reset
        np.copyto(a, a0)
    opt.step()                                                  # step 10 again, not 11
    for a, f in zip((var, m, v, s), first):
        np.testing.assert_array_equal(a, f)


def test_ema_adam_torch_errors():
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="bias_correction"):
        baselines.EmaAdamTorch(*adam_state(8), 1, bias_correction=False)
    with pytest.raises(ValueError, match="mode must be 0 or 1"):
        baselines.EmaAdamTorch(*adam_state(8), 1, mode=3)


def embedding_case(rows=40, dim=5, weights=9, seed=0):
    rng = np.random.default_rng(seed)
    grad = rng.standard_normal((rows, dim), dtype=np.float32)
    idx = rng.integers(0, weights, rows).astype(np.int64)
    idx[:6] = 3                                                  # a long run of one row
    return grad, idx, weights


@pytest.mark.parametrize("padding_idx", [-1, 3, 20])
@pytest.mark.parametrize("scale", [False, True])
@pytest.mark.parametrize("chunk_rows", [1024, 7])
def test_embedding_numpy_matches_golden(padding_idx, scale, chunk_rows):
    grad, idx, w = embedding_case()
    expect = embedding_dense_backward_golden(grad, idx, w, padding_idx, scale,
                                             out_dtype=np.float64)
    got = baselines.embedding_dense_backward_numpy(grad, idx, w, padding_idx, scale,
                                                   chunk_rows=chunk_rows)
    assert got.dtype == np.float32 and got.shape == (w, 5)
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)
    if padding_idx == 3:
        assert not got[3].any()                 # the padding row receives nothing


def test_embedding_numpy_reuses_and_zeroes_out_and_flattens_grad():
    grad, idx, w = embedding_case(rows=24)
    out = np.full((w, 5), 7.0, np.float32)
    got = baselines.embedding_dense_backward_numpy(grad.reshape(4, 6, 5), idx.reshape(4, 6),
                                                   w, out=out)
    assert got is out
    np.testing.assert_allclose(out, embedding_dense_backward_golden(grad, idx, w, -1, False),
                               rtol=1e-5, atol=1e-5)


def test_embedding_numpy_errors():
    grad, idx, w = embedding_case()
    with pytest.raises(ValueError, match="grad must be a float32"):
        baselines.embedding_dense_backward_numpy(grad.astype(np.float64), idx, w)
    with pytest.raises(ValueError, match="indices has 39 elements"):
        baselines.embedding_dense_backward_numpy(grad, idx[:-1], w)
    with pytest.raises(ValueError, match="out must be float32"):
        baselines.embedding_dense_backward_numpy(grad, idx, w, out=np.zeros((w, 4), np.float32))


@pytest.mark.parametrize("padding_idx,scale", [(-1, False), (3, True)])
def test_embedding_torch_matches_golden(padding_idx, scale):
    pytest.importorskip("torch")
    grad, idx, w = embedding_case(seed=2)
    expect = embedding_dense_backward_golden(grad, idx, w, padding_idx, scale,
                                             out_dtype=np.float64)
    got = baselines.embedding_dense_backward_torch(grad, idx, w, padding_idx, scale)
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)


def half_pair(shape=(16, 33), seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape, dtype=np.float32).astype(np.float16)
                 for _ in range(2))


@pytest.mark.parametrize("fn", ["add_numpy", "add_torch"])
def test_add_matches_golden(fn):
    if fn == "add_torch":
        pytest.importorskip("torch")
    x, y = half_pair()
    out = np.empty_like(x)
    assert getattr(baselines, fn)(x, y, out) is out
    # x + y rounded once to half (the golden rounds the float64 sum once)
    np.testing.assert_allclose(out.astype(np.float64),
                               add_golden(x, y, 1).astype(np.float64), rtol=2.0 ** -11, atol=0)


def test_softmax_numpy_matches_golden():
    x = half_pair((8, 300))[0] * np.float16(4)
    got = baselines.softmax_numpy(x, -1)                        # float32, not rounded
    expect = softmax_golden(x.astype(np.float64), -1)
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-8)
    out = np.empty_like(x)
    assert baselines.softmax_numpy(x, 0, out=out) is out        # another dim, rounded to half
    np.testing.assert_allclose(out.astype(np.float64),
                               softmax_golden(x, 0).astype(np.float64), rtol=2.0 ** -10,
                               atol=2.0 ** -24)


def test_softmax_torch_matches_golden():
    pytest.importorskip("torch")
    x = half_pair((8, 300))[0]
    got = baselines.softmax_torch(x, -1)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), softmax_golden(x, -1).astype(np.float64),
                               rtol=2.0 ** -10, atol=2.0 ** -24)


def test_rms_norm_numpy_matches_golden():
    x, gamma = half_pair((6, 128))
    gamma = gamma[0]
    y, rstd = baselines.rms_norm_numpy(x, gamma, 1e-6)
    ey, erstd = rms_norm_golden(x.astype(np.float64), gamma.astype(np.float64), 1e-6)
    np.testing.assert_allclose(y, ey, rtol=1e-5, atol=1e-6)
    assert rstd.shape == (6, 1)
    np.testing.assert_allclose(rstd, erstd, rtol=1e-5)
    out = np.empty_like(x)
    assert baselines.rms_norm_numpy(x, gamma, 1e-6, out=out)[0] is out
    np.testing.assert_allclose(out.astype(np.float64), ey, rtol=2.0 ** -10, atol=1e-3)


def test_rms_norm_torch_matches_golden():
    pytest.importorskip("torch")
    x, gamma = half_pair((6, 128), seed=3)
    gamma = gamma[0]
    got = baselines.rms_norm_torch(x, gamma, 1e-6)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64),
                               rms_norm_golden(x, gamma, 1e-6)[0].astype(np.float64),
                               rtol=2.0 ** -9, atol=2e-3)


@pytest.mark.parametrize("fn", ["matmul_numpy", "matmul_torch"])
def test_matmul_matches_golden(fn):
    if fn == "matmul_torch":
        pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((33, 70), dtype=np.float32)
    b = rng.standard_normal((70, 17), dtype=np.float32)
    expect = matmul_golden(a, b, out_dtype=np.float64)
    np.testing.assert_allclose(getattr(baselines, fn)(a, b), expect, rtol=1e-4, atol=1e-4)
    out = np.empty((33, 17), np.float32)
    assert getattr(baselines, fn)(a, b, out=out) is out
    np.testing.assert_allclose(out, expect, rtol=1e-4, atol=1e-4)


def test_interleave_runs_in_turn_resets_first_and_skips_missing():
    calls = []
    runners = {"sim": (lambda: calls.append("reset sim"), lambda: calls.append("sim")),
               "numpy": (None, lambda: calls.append("numpy")),
               "torch": (None, None)}
    times = harness.interleave(runners, 2, after_first=lambda: calls.append("first"))
    assert calls == ["reset sim", "sim", "first", "numpy", "reset sim", "sim", "numpy"]
    assert len(times["sim"]) == 2 and len(times["numpy"]) == 2 and times["torch"] == []
    assert all(t >= 0 for t in times["sim"] + times["numpy"])
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        harness.interleave(runners, 0)


def test_the_simulator_runners_replay_each_launch_or_take_kept_replays():
    from npusim import timing
    seen = []

    def runner(name):
        return (None, lambda: seen.append((name, timing.REPLAY_MEMO)))

    before = timing.REPLAY_MEMO
    runners = harness.with_kept_replays({"sim": runner("sim"), "numpy": runner("numpy")})
    assert list(runners) == ["sim_kept", "sim", "numpy"]
    harness.interleave(runners, 1)
    # both simulator runners run the "sim" function; only sim_kept with kept replays
    assert seen == [("sim", True), ("sim", False), ("numpy", before)]
    assert timing.REPLAY_MEMO == before


def test_the_fastest_runs_of_each_simulator_runner_and_the_kept_figures():
    # the "sim" function's calls, in order: kept 0, sim 0, kept 1, sim 1, kept 2, sim 2
    runs = ["k0", "s0", "k1", "s1", "k2", "s2"]
    times = {"sim_kept": [0.5, 0.2, 0.3], "sim": [0.9, 1.0, 0.7]}
    assert harness.fastest_sim_runs(times, runs) == ("s2", "k1")
    assert harness.kept_figures(times, 0.01, 0.1) == {
        "sim_kept_s": 0.2, "sim_kept_runs": [0.5, 0.2, 0.3], "timing_kept_s": 0.01,
        "ratio_numpy_kept": 2.0}
    assert harness.kept_figures(times, 0.01, None)["ratio_numpy_kept"] is None


def test_table_cells_name_a_missing_torch():
    assert harness.fmt_s(None) == "not installed" and harness.fmt_s(0.12345) == "0.123"
    assert harness.fmt_x(harness.ratio(3.0, None)) == "—"
    assert harness.fmt_x(harness.ratio(3.0, 1.5)) == "2.00x"
    assert harness.fastest([]) is None and harness.fastest([0.3, 0.1]) == 0.1


def test_run_all_verdicts():
    import run_all
    assert run_all.verdict(2.0, 2.0, 3.0) == "met"
    assert run_all.verdict(2.5, 2.0, 3.0) == "missed, within bar"
    assert run_all.verdict(3.5, 2.0, 3.0) == "missed"
    assert run_all.verdict(25.0, 20.0, None) == "missed"


@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("shape", [(60, 8), (30, 3, 4)])
def test_fused_sparse_adam_numpy_matches_golden_in_place(nesterov, shape):
    rng = np.random.default_rng(4)
    var, m = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    v = np.abs(rng.standard_normal(shape)).astype(np.float32)
    grad = rng.standard_normal((200,) + shape[1:]).astype(np.float32)
    idx = rng.integers(-3, shape[0] + 3, 200)        # duplicates and dropped indices
    scalars = (0.9 ** 3, 0.999 ** 3, 0.01, 0.9, 0.999, 1e-8)
    expect = fused_sparse_adam_golden(var, m, v, *scalars, grad, idx, nesterov)
    work = [a.copy() for a in (var, m, v)]
    got = baselines.fused_sparse_adam_numpy(*work, *scalars, grad, idx, nesterov)
    assert all(g is w for g, w in zip(got, work))
    for name, g, e in zip(("var", "m", "v"), got, expect):
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=1e-6, err_msg=name)
    untouched = np.setdiff1d(np.arange(shape[0]), idx)
    if nesterov and untouched.size:                   # M = 0: var unchanged
        np.testing.assert_array_equal(got[0][untouched], var[untouched])


def test_fused_sparse_adam_numpy_rejects_bad_inputs():
    a = np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match="float32"):
        baselines.fused_sparse_adam_numpy(a, a.copy(), a.astype(np.float64), 0.5, 0.5, 0.1,
                                          0.9, 0.999, 1e-8, a, [0, 1, 2, 3])
    with pytest.raises(ValueError, match="share a shape"):
        baselines.fused_sparse_adam_numpy(a, a.copy(), np.zeros((4, 3), np.float32), 0.5, 0.5,
                                          0.1, 0.9, 0.999, 1e-8, a, [0, 1, 2, 3])
    with pytest.raises(ValueError, match="indices has 3 elements"):
        baselines.fused_sparse_adam_numpy(a, a.copy(), a.copy(), 0.5, 0.5, 0.1, 0.9, 0.999,
                                          1e-8, a, [0, 1, 2])


def test_the_profiler_sees_only_the_simulators_last_run(monkeypatch):
    import harness

    class Counter:
        on = 0

        def enable(self):
            self.on += 1

        def disable(self):
            pass

    prof, order = Counter(), []
    monkeypatch.setattr(harness, "SIM_PROFILER", prof)
    times = harness.interleave({"sim": (None, lambda: order.append(prof.on)),
                                "numpy": (None, lambda: None)}, 3)
    assert order == [0, 0, 1] and len(times["sim"]) == len(times["numpy"]) == 3
