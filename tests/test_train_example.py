"""Tests of examples/train_next_word.py: tokenizer, hand-written backward, numpy training,
and the device run (the output layer's matmuls, the embedding backward and the updates
on the simulated NPU) against the same run on the host."""
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_next_word.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("train_next_word", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ex = _load_example()


def test_tokenizer_and_vocabulary_reserve_pad_and_unk():
    tokens = ex.tokenize("The cat, the DOG; x_1 = 42 +----+ the cat")
    assert tokens == ["the", "cat", ",", "the", "dog", ";", "x_", "1", "=", "42",
                      "+", "----", "+", "the", "cat"]
    itos, stoi = ex.build_vocab(tokens, size=5)
    assert itos[:2] == ["<pad>", "<unk>"] and len(itos) == 5
    assert stoi["<pad>"] == ex.PAD == 0 and stoi["<unk>"] == ex.UNK == 1
    assert itos[2:4] == ["the", "cat"]                   # the most frequent tokens
    ids = ex.encode(["the", "zebra"], stoi)
    assert ids.tolist() == [stoi["the"], ex.UNK]


def test_examples_are_left_padded_context_windows():
    X, y = ex.make_examples(np.array([5, 6, 7, 8]), context=3)
    assert X.tolist() == [[0, 0, 0], [0, 0, 5], [0, 5, 6], [5, 6, 7]]
    assert y.tolist() == [5, 6, 7, 8]


def test_dataset_is_real_text_and_split_is_deterministic():
    a = ex.load_dataset(2048, 4)
    assert len(a["itos"]) == 2048
    assert len(a["y_train"]) > 50_000 and len(a["y_held"]) > 5_000
    assert a["X_train"].shape == (len(a["y_train"]), 4)
    ex.load_dataset.cache_clear()
    b = ex.load_dataset(2048, 4)
    assert np.array_equal(a["y_held"], b["y_held"])


def test_backward_matches_finite_differences():
    V, D, C, B = 12, 4, 3, 5
    rng = np.random.default_rng(1)
    params = {name: p.astype(np.float64) for name, p in ex.init_params(V, D, rng).items()}
    params["W"] = rng.standard_normal((D, V))              # non-trivial logits
    params["b"] = 0.1 * rng.standard_normal(V)
    X = rng.integers(1, V, size=(B, C))
    X[0, :2] = ex.PAD                                      # left-padded rows: masked
    X[1, 0] = ex.PAD
    X[2, :] = ex.PAD                                       # all pad: count clamps to 1
    y = rng.integers(0, V, size=B)

    _, cache = ex.forward(params, X, y)
    grads = ex.backward(params, cache)
    assert np.all(grads["E"][ex.PAD] == 0.0)               # <pad> gets no gradient

    h = 1e-6
    for name in ("W", "b", "E"):
        numeric = np.zeros_like(params[name])
        for index in np.ndindex(params[name].shape):
            saved = params[name][index]
            params[name][index] = saved + h
            plus, _ = ex.forward(params, X, y)
            params[name][index] = saved - h
            minus, _ = ex.forward(params, X, y)
            params[name][index] = saved
            numeric[index] = (plus - minus) / (2 * h)
        assert grads[name].shape == params[name].shape
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-3, atol=1e-9,
                                   err_msg=f"d{name}")


def test_position_weights_hand_each_position_its_share():
    X = np.array([[0, 0, 5], [3, 4, 5], [0, 0, 0]])        # counts 1, 3 and 0 -> 1
    dh = np.arange(6.0).reshape(3, 2) + 1.0
    R = ex.position_weights(X)
    assert R.shape == (9, 3)
    expected = np.array([dh[0]] * 3 + [dh[1] / 3] * 3 + [dh[2]] * 3)
    np.testing.assert_allclose(R @ dh, expected, rtol=1e-6)


def test_device_logits_and_gradients_match_the_host():
    """One step's device logits and gradients (read back from the gradient buffers after
    the step: the update reads them and leaves them) against the host's float32 forward
    and backward: the cube's float32 accumulation differs from numpy's only in the order
    of additions (and b is added inside the matmul)."""
    V, D, B, C = 64, 16, 32, 4
    rng = np.random.default_rng(3)
    params = ex.init_params(V, D, rng)
    params["W"] = (0.3 * rng.standard_normal((D, V))).astype(np.float32)
    params["b"] = (0.1 * rng.standard_normal(V)).astype(np.float32)
    X = rng.integers(0, V, size=(B, C))
    X[0] = ex.PAD
    y = rng.integers(0, V, size=B)
    host = {k: p.copy() for k, p in params.items()}
    loss_ref, cache = ex.forward(host, X, y)
    grads_ref = ex.backward(host, cache)
    with ex.NpuTraining(params, batch=B, batch_positions=B * C, verbose=False) as npu:
        assert npu.device_matmul
        npu.prefetch_ids(1, X.reshape(-1))
        logits = npu.forward(ex.embed_mean(params["E"], X)[2])
        np.testing.assert_allclose(logits, cache["h"] @ host["W"] + host["b"],
                                   rtol=1e-5, atol=1e-6)
        loss, probs = ex.cross_entropy(logits, y)
        assert loss == pytest.approx(loss_ref, abs=1e-6)
        npu.step(params, dlogits=ex.logits_grad(probs, y))
        for name, ref in grads_ref.items():
            got = np.empty(ref.shape, np.float32)
            npu._from_device(got, npu.buffers[name]["grad"])
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-7, err_msg=f"d{name}")
        # the update consumed these gradients: the weights moved by about lr
        assert 0 < np.max(np.abs(params["W"] - host["W"])) < 0.011


def test_forward_loss_is_log_vocab_at_zero_logits():
    V, D = 12, 4
    params = {"E": np.ones((V, D)), "W": np.zeros((D, V)), "b": np.zeros(V)}
    loss, _ = ex.forward(params, np.array([[2, 3, 4]]), np.array([5]))
    assert loss == pytest.approx(np.log(V))


def test_ema_decay_warm_up():
    assert ex.ema_decay_at(1) == pytest.approx(2 / 11)
    assert ex.ema_decay_at(100) == pytest.approx(101 / 110)
    assert ex.ema_decay_at(100_000) == 0.999


def test_numpy_optimizer_leaves_grads_and_updates_params_and_ema():
    rng = np.random.default_rng(0)
    params = ex.init_params(16, 4, rng)
    before = {k: p.copy() for k, p in params.items()}
    grads = {k: rng.standard_normal(p.shape).astype(np.float32) for k, p in params.items()}
    grads_before = {k: g.copy() for k, g in grads.items()}
    opt = ex.NumpyEmaAdam(params, lr=0.01)
    assert opt.step(params, grads) == 0.0
    for k in params:
        assert params[k].dtype == np.float32
        assert np.array_equal(grads[k], grads_before[k])
        assert not np.array_equal(params[k], before[k])
        # first AdamW step with bias correction: |update| ~= lr
        assert np.max(np.abs(params[k] - before[k])) < 0.011
        d = ex.ema_decay_at(1)
        np.testing.assert_allclose(opt.ema[k], d * before[k] + (1 - d) * params[k],
                                   rtol=1e-5, atol=1e-7)


def test_numpy_training_run_lowers_the_loss():
    result = ex.train(steps=30, optimizer="numpy", seed=0, eval_every=10, verbose=False)
    losses = np.array(result["train_loss"])
    assert len(losses) == 30 and len(result["device_us"]) == 30
    assert all(t == 0.0 for t in result["device_us"])
    assert losses[-5:].mean() < losses[:5].mean() - 0.5
    assert result["heldout_steps"] == [0, 10, 20, 30]
    assert result["heldout_start"] == pytest.approx(np.log(2048), abs=0.05)
    assert result["heldout_end"] < result["heldout_start"] - 0.5


def test_compare_losses_uses_the_stated_tolerance():
    a = {"train_loss": [7.0, 6.0]}
    assert ex.compare_losses(a, {"train_loss": [7.0, 6.0 + 5e-5]}) == (pytest.approx(5e-5), True)
    assert ex.compare_losses(a, {"train_loss": [7.0, 6.001]})[1] is False
    bf16 = {"train_loss": [7.0, 6.0], "dtype": "bfloat16"}
    assert ex.compare_losses(bf16, {"train_loss": [7.0, 6.001]})[1] is True
    assert ex.compare_losses(bf16, {"train_loss": [7.0, 6.003]})[1] is False


def test_main_numpy_prints_steps_and_held_out(capsys):
    assert ex.main(["--optimizer", "numpy", "--steps", "3", "--eval-every", "2"]) == 0
    out = capsys.readouterr().out
    assert "step   3  loss " in out and " device 0.0 us" in out
    assert "held-out loss (EMA weights): start 7.62 -> end " in out



@pytest.mark.parametrize("scale", [False, True])
def test_device_matches_numpy_short_run(scale):
    npu = ex.train(steps=3, optimizer="npu", scale_grad_by_freq=scale, verbose=False)
    ref = ex.train(steps=3, optimizer="numpy", scale_grad_by_freq=scale, verbose=False)
    np.testing.assert_allclose(npu["train_loss"], ref["train_loss"], rtol=0,
                               atol=ex.COMPARE_TOLERANCE)
    assert all(t > 0.0 for t in npu["device_us"])


def test_next_batch_copy_overlaps_the_kernels(capsys):
    run = ex.train(steps=3, optimizer="npu", verbose=True)
    spans = run["timeline"]["spans"]
    # "kernels" is what the step's kernels take (their Task Durations, back to back); "step"
    # is the step's span with its host -> device copies: both printed, both explained
    out = capsys.readouterr().out
    assert "kernels = the Task Durations of the step's kernels" in out
    assert "step = the step's whole span on the device, host -> device copies" in out
    kernel_us = sum(e - s for name, s, e in spans if not name.startswith("H2D"))
    assert run["device_us"][-2] == pytest.approx(kernel_us, rel=1e-6)
    assert run["step_us"][-2] > kernel_us + 100        # ~185 us: the 2 MiB dlogits copy
    assert f"step   2  loss {run['train_loss'][1]:.4f}  device: kernels " \
           f"{run['device_us'][1]:.1f} us, step {run['step_us'][1]:.1f} us" in out
    prefetch = [(s, e) for name, s, e in spans if "copy stream" in name]
    kernels = [(s, e) for name, s, e in spans if not name.startswith("H2D")]
    names = [name for name, _, _ in spans]
    assert {"ApplyFusedEmaAdam", "EmbeddingDenseGradV2"} <= set(names)
    assert names.count("MatMulV3") == 4                    # forward, [dW; db], dh, R @ dh
    ps, pe = min(s for s, _ in prefetch), max(e for _, e in prefetch)
    ks, ke = min(s for s, _ in kernels), max(e for _, e in kernels)
    assert ps < ke and ks < pe                 # the two intervals overlap


def test_bfloat16_on_a2_and_float32_on_910a_train(capsys):
    # bf16: the device rounds h and dlogits to bf16 before its matmuls, the host does not
    bf16 = ex.train(steps=4, optimizer="npu", dtype="bfloat16", verbose=False)
    ref = ex.train(steps=4, optimizer="numpy", dtype="bfloat16", verbose=False)
    np.testing.assert_allclose(bf16["train_loss"], ref["train_loss"],
                               atol=ex.COMPARE_TOLERANCE_BF16)
    assert bf16["heldout_end"] < bf16["heldout_start"]
    # 910A: aclnnMatmul and aclnnApplyFusedEmaAdam are refused; the host does both
    a910 = ex.train(steps=3, optimizer="npu", soc="Ascend910A", verbose=True)
    out = capsys.readouterr().out
    assert "the forward pass and the output layer's gradients run on the host" in out
    assert "the parameter update runs on the host" in out
    assert "MatMulV3" not in {name for name, _, _ in a910["timeline"]["spans"]}
    fp32 = ex.train(steps=3, optimizer="numpy", verbose=False)
    np.testing.assert_allclose(a910["train_loss"], fp32["train_loss"], atol=ex.COMPARE_TOLERANCE)
