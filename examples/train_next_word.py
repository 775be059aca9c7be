"""Train a small next-word model whose optimizer runs on the simulated Ascend NPU.

Run from the repository root::

    python examples/train_next_word.py                    # optimizer on the simulated NPU
    python examples/train_next_word.py --optimizer numpy  # same run, numpy golden optimizer
    python examples/train_next_word.py --compare          # both, and compare the losses
    python examples/train_next_word.py --plot train.png   # also save loss / device-time plots

What runs where:

* Host (numpy, float32): reading and tokenising the text, batching, the model's forward
  pass, the softmax cross-entropy loss and the hand-written backward pass, and the
  held-out evaluation with the EMA weights.
* Device (the simulated NPU, through ``aclnn``): every parameter update. Each step copies
  the gradients to device memory, calls ``aclnnApplyFusedEmaAdam`` once per parameter
  tensor (AdamW + an exponential moving average of the weights, fused in one kernel),
  times the launches with two events and copies the new weights and EMA weights back.
  ``--optimizer numpy`` replaces the device by the operator's numpy golden
  (``kernels/apply_fused_ema_adam/golden.py``), which is handy without the simulator.

The data is real text that ships with CPython: the Python language reference used by
``help()`` (``pydoc_data.topics``). The model predicts the next token from the mean of the
embeddings of the previous ``context`` tokens::

    h      = mean(E[x_1..x_C], skipping <pad>)   # [B, D]
    logits = h @ W + b                           # [B, V]
    loss   = softmax cross-entropy(logits, y)

``--compare`` runs both optimizers with the same seed and checks that the per-step train
losses agree within ``COMPARE_TOLERANCE`` = 1e-4 (absolute). The device kernel computes in
float32 in its own order of operations while the golden computes in float64 and rounds
once, so the weights differ by a few float32 ulps and the losses agree to about 1e-6
relative; 1e-4 leaves room for that to grow over a run, and still catches a wrong update.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter

import numpy as np

import aclnn                    # aclnn operators, aclTensor and the ACL_* constants
from aclnn import acl           # pyACL-style runtime: acl.init, acl.rt.*, acl.util.*
from kernels.apply_fused_ema_adam.golden import apply_fused_ema_adam_golden

PAD, UNK = 0, 1                 # reserved token ids
# words, numbers, and punctuation one character at a time, except that a run of one
# repeated character (the "-----" and "=====" rules of the reference's tables) is one token
TOKEN_RE = re.compile(r"[a-z_]+|\d+|([^\sa-z_\d])\1*")
COMPARE_TOLERANCE = 1e-4        # max |train loss (npu) - train loss (numpy)| per step

DEFAULTS = dict(
    steps=120, soc="Ascend910B1", seed=0, vocab=2048, dim=64, batch=256, context=4,
    lr=1e-2, eval_every=20,
)
ADAM_DEFAULTS = dict(
    beta1=0.9, beta2=0.999, eps=1e-8, mode=1, bias_correction=True, weight_decay=0.01,
)
EMA_MAX_DECAY = 0.999


# --------------------------------------------------------------------------- data

def load_text() -> str:
    """The Python language reference shipped with CPython, topics in sorted key order."""
    from pydoc_data.topics import topics
    return "\n".join(topics[key] for key in sorted(topics))


def tokenize(text: str) -> list[str]:
    """Lowercase words (letters and '_'), numbers, and punctuation characters (one token
    each, or one for a run of the same character)."""
    return [match.group(0) for match in TOKEN_RE.finditer(text.lower())]


def build_vocab(tokens: list[str], size: int) -> tuple[list[str], dict[str, int]]:
    """Return ``(itos, stoi)``: ``<pad>`` = 0, ``<unk>`` = 1, then the ``size - 2`` most
    frequent tokens (ties broken by first appearance, so the result is deterministic)."""
    itos = ["<pad>", "<unk>"] + [tok for tok, _ in Counter(tokens).most_common(size - 2)]
    return itos, {tok: i for i, tok in enumerate(itos)}


def encode(tokens: list[str], stoi: dict[str, int]) -> np.ndarray:
    """Token strings -> int64 ids [N]; tokens outside the vocabulary become ``<unk>``."""
    return np.array([stoi.get(tok, UNK) for tok in tokens], dtype=np.int64)


def make_examples(ids: np.ndarray, context: int) -> tuple[np.ndarray, np.ndarray]:
    """Every position of the stream as one example.

    Args:
        ids: token ids [N].
        context: C, the number of previous tokens the model sees.

    Returns:
        ``X`` [N, C] int64, the C previous ids (left-padded with ``<pad>`` at the start of
        the stream), and ``y`` [N] int64, the id to predict.
    """
    padded = np.concatenate([np.full(context, PAD, dtype=np.int64), ids])
    X = np.lib.stride_tricks.sliding_window_view(padded, context)[:len(ids)].copy()
    return X, ids.copy()


@functools.lru_cache(maxsize=4)
def load_dataset(vocab: int, context: int, heldout_fraction: float = 0.1) -> dict:
    """Tokenise the reference, build the vocabulary and split by position in the stream:
    the examples whose target is in the last ``heldout_fraction`` are held out (their
    contexts may reach back into the training part, their targets never do)."""
    tokens = tokenize(load_text())
    itos, stoi = build_vocab(tokens, vocab)
    X, y = make_examples(encode(tokens, stoi), context)
    cut = int(len(y) * (1.0 - heldout_fraction))
    return dict(itos=itos, X_train=X[:cut], y_train=y[:cut], X_held=X[cut:], y_held=y[cut:])


# --------------------------------------------------------------------------- model

def init_params(vocab: int, dim: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """E [V, D], W [D, V], b [V], float32. Small W makes the first loss ~ log(V)."""
    return {
        "E": (0.1 * rng.standard_normal((vocab, dim))).astype(np.float32),
        "W": (0.01 * rng.standard_normal((dim, vocab))).astype(np.float32),
        "b": np.zeros(vocab, dtype=np.float32),
    }


def forward(params: dict[str, np.ndarray], X: np.ndarray, y: np.ndarray):
    """Mean of the context embeddings, a linear layer and softmax cross-entropy.

    Args:
        params: ``E`` [V, D], ``W`` [D, V], ``b`` [V] (any one float dtype).
        X: context ids [B, C]; ``<pad>`` positions are left out of the mean.
        y: target ids [B].

    Returns:
        ``(loss, cache)``: the mean loss over the batch (a float) and what ``backward``
        needs: ``X``, ``y``, ``mask`` [B, C], ``count`` [B, 1], ``h`` [B, D] and
        ``probs`` [B, V].
    """
    E, W, b = params["E"], params["W"], params["b"]
    mask = X != PAD                                                      # [B, C]
    count = np.maximum(mask.sum(axis=1, keepdims=True), 1).astype(E.dtype)  # [B, 1]
    h = (E[X] * mask[:, :, None]).sum(axis=1) / count                    # [B, D]
    logits = h @ W + b                                                   # [B, V]
    shifted = logits - logits.max(axis=1, keepdims=True)                 # log-sum-exp
    log_z = np.log(np.exp(shifted).sum(axis=1, keepdims=True))           # [B, 1]
    log_probs = shifted - log_z                                          # [B, V]
    loss = -log_probs[np.arange(len(y)), y].mean()
    cache = dict(X=X, y=y, mask=mask, count=count, h=h, probs=np.exp(log_probs))
    return float(loss), cache


def backward(params: dict[str, np.ndarray], cache: dict) -> dict[str, np.ndarray]:
    """Gradients of the mean loss: ``{"E": [V, D], "W": [D, V], "b": [V]}``.

    dlogits [B, V] = (probs - onehot(y)) / B; dW = h.T @ dlogits; db = sum of dlogits;
    dh [B, D] = dlogits @ W.T; each non-pad context position i of example n gets
    dh[n] / count[n] scattered into row X[n, i] of dE (rows of ``<pad>`` get nothing).
    """
    X, y, mask, count, h = cache["X"], cache["y"], cache["mask"], cache["count"], cache["h"]
    batch = len(y)
    dlogits = cache["probs"].copy()
    dlogits[np.arange(batch), y] -= 1.0
    dlogits /= batch                                                     # [B, V]
    dW = h.T @ dlogits                                                   # [D, V]
    db = dlogits.sum(axis=0)                                             # [V]
    dh = dlogits @ params["W"].T                                         # [B, D]
    per_position = np.broadcast_to((dh / count)[:, None, :], X.shape + dh.shape[1:])
    dE = np.zeros_like(params["E"])                                      # [V, D]
    np.add.at(dE, X[mask], per_position[mask])
    return {"E": dE, "W": dW, "b": db}


def evaluate(params: dict[str, np.ndarray], X: np.ndarray, y: np.ndarray,
             chunk: int = 4096) -> float:
    """Mean cross-entropy over all of ``X`` [N, C] / ``y`` [N], in chunks."""
    total = 0.0
    for start in range(0, len(y), chunk):
        loss, _ = forward(params, X[start:start + chunk], y[start:start + chunk])
        total += loss * len(y[start:start + chunk])
    return total / len(y)


# --------------------------------------------------------------------------- optimizers

def ema_decay_at(step: int, max_decay: float = EMA_MAX_DECAY) -> float:
    """MindSpeed FusedEmaAdamW's warm-up: ``min(max_decay, (1 + t) / (10 + t))`` where t
    counts the updates including this one (1 on the first), so the EMA follows the live
    weights closely at first instead of staying near the random initialisation."""
    return min(max_decay, (1.0 + step) / (10.0 + step))


class NumpyEmaAdam:
    """Fused EMA-AdamW on the host: the operator's numpy golden, one call per tensor."""

    def __init__(self, params: dict[str, np.ndarray], lr: float = DEFAULTS["lr"],
                 **adam):
        self.lr = lr
        self.adam = {**ADAM_DEFAULTS, **adam}
        self.step_count = 0
        self.m = {name: np.zeros_like(p) for name, p in params.items()}
        self.v = {name: np.zeros_like(p) for name, p in params.items()}
        self.ema = {name: p.copy() for name, p in params.items()}

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> float:
        """Update ``params`` (in place) and ``self.ema``; return the device time: 0.0 us."""
        self.step_count += 1
        ema_decay = ema_decay_at(self.step_count)
        for name, var in params.items():
            var_out, self.m[name], self.v[name], self.ema[name] = apply_fused_ema_adam_golden(
                grads[name].astype(var.dtype), var, self.m[name], self.v[name],
                self.ema[name], self.step_count, lr=self.lr, ema_decay=ema_decay,
                **self.adam)
            var[...] = var_out
        return 0.0

    def close(self) -> None:
        """Nothing to release on the host."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _check(call: str, ret: int) -> None:
    """Raise on a non-zero pyACL / aclnn status, with the runtime's error message."""
    if ret != 0:
        raise RuntimeError(f"{call} failed with error {ret}: {acl.get_recent_err_msg()}")


class NpuEmaAdam:
    """Fused EMA-AdamW on the simulated NPU, written like the official aclnn sample.

    One set of device buffers (grad, var, m, v, s) per parameter tensor stays on the
    device for the whole run; a step copies the gradients in, launches
    ``aclnnApplyFusedEmaAdam`` for every tensor on one stream and copies var (the new
    weights) and s (the EMA weights) back.
    """

    ROLES = ("grad", "var", "m", "v", "s")

    def __init__(self, params: dict[str, np.ndarray], lr: float = DEFAULTS["lr"],
                 soc: str = DEFAULTS["soc"], device_id: int = 0, **adam):
        self.lr = lr
        self.adam = {**ADAM_DEFAULTS, **adam}
        self.device_id = device_id
        self.step_count = 0
        self.ema = {name: p.copy() for name, p in params.items()}
        self.buffers: dict[str, dict[str, int]] = {}   # name -> role -> device pointer
        self.tensors: dict[str, dict[str, object]] = {}  # name -> role -> aclTensor
        self.workspace, self.workspace_size = 0, 0
        self.closed = False

        # 1. Initialise ACL; the JSON config tells the simulator which SoC to be.
        fd, config_path = tempfile.mkstemp(suffix=".json", prefix="acl_")
        with os.fdopen(fd, "w") as f:
            json.dump({"npusim": {"soc": soc}}, f)
        try:
            ret = acl.init(config_path)
        finally:
            os.unlink(config_path)  # read by acl.init, not needed afterwards
        _check("acl.init", ret)
        # 2. Choose the device.
        ret = acl.rt.set_device(device_id)
        _check("acl.rt.set_device", ret)
        # 3. Create a stream for the launches.
        self.stream, ret = acl.rt.create_stream()
        _check("acl.rt.create_stream", ret)

        # 4. Allocate device memory, copy the initial values in and create the tensors.
        for name, p in params.items():
            p = np.ascontiguousarray(p, dtype=np.float32)  # dtype fixed to float32 for now
            initial = {"grad": np.zeros_like(p), "var": p, "m": np.zeros_like(p),
                       "v": np.zeros_like(p), "s": p.copy()}
            self.buffers[name], self.tensors[name] = {}, {}
            for role in self.ROLES:
                ptr = self._to_device(initial[role])
                self.buffers[name][role] = ptr
                self.tensors[name][role] = self._create_tensor(p.shape, aclnn.ACL_FLOAT, ptr)
        self.step_host = np.zeros(1, dtype=np.int64)    # the int64 step tensor [1]
        self.step_ptr = self._to_device(self.step_host)
        self.step_tensor = self._create_tensor((1,), aclnn.ACL_INT64, self.step_ptr)

        # 5. Two events to time the launches of a step on the device clock.
        self.start_event, ret = acl.rt.create_event()
        _check("acl.rt.create_event", ret)
        self.end_event, ret = acl.rt.create_event()
        _check("acl.rt.create_event", ret)

    def _to_device(self, host: np.ndarray) -> int:
        """aclrtMalloc + aclrtMemcpy host -> device; returns the device pointer."""
        nbytes = host.nbytes
        ptr, ret = acl.rt.malloc(nbytes, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        _check("acl.rt.malloc", ret)
        ret = acl.rt.memcpy(ptr, nbytes, acl.util.numpy_to_ptr(host), nbytes,
                            aclnn.ACL_MEMCPY_HOST_TO_DEVICE)
        _check("acl.rt.memcpy", ret)
        return ptr

    @staticmethod
    def _create_tensor(shape, dtype, ptr):
        """aclCreateTensor of a contiguous ND tensor (strides counted in elements)."""
        shape = list(shape)
        strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
        tensor = aclnn.aclCreateTensor(shape, dtype, strides, 0, aclnn.ACL_FORMAT_ND,
                                       shape, ptr)
        if tensor is None:
            raise RuntimeError(f"aclCreateTensor failed: {acl.get_recent_err_msg()}")
        return tensor

    def _workspace_for(self, size: int) -> int:
        """A workspace of at least ``size`` bytes (0 when none is needed); one buffer,
        grown to the largest request and reused."""
        if size <= 0:
            return 0
        if size > self.workspace_size:
            if self.workspace:
                # Earlier launches of this step may still use the old buffer.
                ret = acl.rt.synchronize_stream(self.stream)
                _check("acl.rt.synchronize_stream", ret)
                ret = acl.rt.free(self.workspace)
                _check("acl.rt.free", ret)
            self.workspace, ret = acl.rt.malloc(size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
            _check("acl.rt.malloc", ret)
            self.workspace_size = size
        return self.workspace

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> float:
        """Update ``params`` (in place) and ``self.ema``; return the simulated device time
        of the step's launches in microseconds."""
        self.step_count += 1
        ema_decay = ema_decay_at(self.step_count)

        # 1. Copy the gradients and the new step value host -> device.
        for name, grad in grads.items():
            grad = np.ascontiguousarray(grad, dtype=np.float32)
            ret = acl.rt.memcpy(self.buffers[name]["grad"], grad.nbytes,
                                acl.util.numpy_to_ptr(grad), grad.nbytes,
                                aclnn.ACL_MEMCPY_HOST_TO_DEVICE)
            _check("acl.rt.memcpy", ret)
        self.step_host[0] = self.step_count
        ret = acl.rt.memcpy(self.step_ptr, self.step_host.nbytes,
                            acl.util.numpy_to_ptr(self.step_host), self.step_host.nbytes,
                            aclnn.ACL_MEMCPY_HOST_TO_DEVICE)
        _check("acl.rt.memcpy", ret)

        # 2. Mark the start of the step on the stream.
        ret = acl.rt.record_event(self.start_event, self.stream)
        _check("acl.rt.record_event", ret)
        for name in params:
            t = self.tensors[name]
            # 3. Phase one: validate, tile, and get the workspace size and an executor.
            ws_size, executor, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(
                t["grad"], t["var"], t["m"], t["v"], t["s"], self.step_tensor,
                self.lr, ema_decay, self.adam["beta1"], self.adam["beta2"],
                self.adam["eps"], self.adam["mode"], self.adam["bias_correction"],
                self.adam["weight_decay"])
            _check("aclnnApplyFusedEmaAdamGetWorkspaceSize", ret)
            # 4. Allocate a workspace only if one is needed.
            ws_ptr = self._workspace_for(ws_size)
            # 5. Phase two: launch the kernel on the stream (var, m, v, s in place).
            ret = aclnn.aclnnApplyFusedEmaAdam(ws_ptr, ws_size, executor, self.stream)
            _check("aclnnApplyFusedEmaAdam", ret)
        # 6. Mark the end, wait for the stream and read the simulated elapsed time.
        ret = acl.rt.record_event(self.end_event, self.stream)
        _check("acl.rt.record_event", ret)
        ret = acl.rt.synchronize_stream(self.stream)
        _check("acl.rt.synchronize_stream", ret)
        ms, ret = acl.rt.event_elapsed_time(self.start_event, self.end_event)
        _check("acl.rt.event_elapsed_time", ret)

        # 7. Copy the results device -> host: var into the parameters, s into the EMA.
        for name, var in params.items():
            for host, role in ((var, "var"), (self.ema[name], "s")):
                ret = acl.rt.memcpy(acl.util.numpy_to_ptr(host), host.nbytes,
                                    self.buffers[name][role], host.nbytes,
                                    aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
                _check("acl.rt.memcpy", ret)
        return ms * 1000.0

    def close(self) -> None:
        """8. Release everything in reverse order: tensors, device memory, events,
        stream, device, ACL."""
        if self.closed:
            return
        self.closed = True
        for role_tensors in self.tensors.values():
            for tensor in role_tensors.values():
                _check("aclDestroyTensor", aclnn.aclDestroyTensor(tensor))
        _check("aclDestroyTensor", aclnn.aclDestroyTensor(self.step_tensor))
        for role_ptrs in self.buffers.values():
            for ptr in role_ptrs.values():
                _check("acl.rt.free", acl.rt.free(ptr))
        _check("acl.rt.free", acl.rt.free(self.step_ptr))
        if self.workspace:
            _check("acl.rt.free", acl.rt.free(self.workspace))
        _check("acl.rt.destroy_event", acl.rt.destroy_event(self.start_event))
        _check("acl.rt.destroy_event", acl.rt.destroy_event(self.end_event))
        _check("acl.rt.destroy_stream", acl.rt.destroy_stream(self.stream))
        _check("acl.rt.reset_device", acl.rt.reset_device(self.device_id))
        _check("acl.finalize", acl.finalize())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --------------------------------------------------------------------------- training

def train(steps: int = DEFAULTS["steps"], optimizer: str = "npu",
          soc: str = DEFAULTS["soc"], seed: int = DEFAULTS["seed"],
          vocab: int = DEFAULTS["vocab"], dim: int = DEFAULTS["dim"],
          batch: int = DEFAULTS["batch"], context: int = DEFAULTS["context"],
          lr: float = DEFAULTS["lr"], eval_every: int = DEFAULTS["eval_every"],
          verbose: bool = True) -> dict:
    """Train for ``steps`` updates and return the curves.

    Returns a dict with ``train_loss`` (one per step, measured before that step's
    update), ``device_us`` (simulated device time of each update; 0.0 for numpy),
    ``heldout_steps`` / ``heldout_loss`` (held-out loss of the EMA weights after that
    many updates, starting at 0), ``heldout_start``, ``heldout_end``, ``wall_s``,
    ``optimizer`` and ``params`` / ``ema`` (the final weights).
    """
    data = load_dataset(vocab, context)
    rng = np.random.default_rng(seed)
    params = init_params(vocab, dim, rng)
    if optimizer == "npu":
        opt = NpuEmaAdam(params, lr=lr, soc=soc)
    elif optimizer == "numpy":
        opt = NumpyEmaAdam(params, lr=lr)
    else:
        raise ValueError(f"optimizer must be 'npu' or 'numpy', not {optimizer!r}")

    def log(msg: str) -> None:
        if verbose:
            print(msg, flush=True)

    X_train, y_train = data["X_train"], data["y_train"]
    X_held, y_held = data["X_held"], data["y_held"]
    log(f"[{optimizer}] {len(y_train)} training / {len(y_held)} held-out examples, "
        f"V={vocab} D={dim} C={context} B={batch} lr={lr:g}")
    result = dict(optimizer=optimizer, train_loss=[], device_us=[],
                  heldout_steps=[0], heldout_loss=[evaluate(opt.ema, X_held, y_held)])
    log(f"step {0:3d}  held-out loss (EMA weights) {result['heldout_loss'][0]:.4f}")
    t0 = time.perf_counter()
    with opt:
        for step in range(1, steps + 1):
            idx = rng.integers(0, len(y_train), size=batch)
            loss, cache = forward(params, X_train[idx], y_train[idx])   # host
            grads = backward(params, cache)                             # host
            device_us = opt.step(params, grads)                         # device
            result["train_loss"].append(loss)
            result["device_us"].append(device_us)
            log(f"step {step:3d}  loss {loss:.4f}  device {device_us:.1f} us")
            if step % eval_every == 0 or step == steps:
                held = evaluate(opt.ema, X_held, y_held)
                result["heldout_steps"].append(step)
                result["heldout_loss"].append(held)
                log(f"step {step:3d}  held-out loss (EMA weights) {held:.4f}")
        result["ema"] = {name: p.copy() for name, p in opt.ema.items()}
    result["params"] = params
    result["wall_s"] = time.perf_counter() - t0
    result["heldout_start"] = result["heldout_loss"][0]
    result["heldout_end"] = result["heldout_loss"][-1]
    log(f"held-out loss (EMA weights): start {result['heldout_start']:.2f} -> "
        f"end {result['heldout_end']:.2f}   ({steps} steps, {result['wall_s']:.1f} s, "
        f"device total {sum(result['device_us']):.1f} us)")
    return result


def compare_losses(a: dict, b: dict) -> tuple[float, bool]:
    """Max absolute difference of two runs' per-step train losses, and whether it is
    within ``COMPARE_TOLERANCE``."""
    diff = float(np.max(np.abs(np.subtract(a["train_loss"], b["train_loss"]))))
    return diff, diff <= COMPARE_TOLERANCE


def plot(result: dict, path: str) -> None:
    """Save train loss, held-out loss (EMA weights) and device time per step to ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.arange(1, len(result["train_loss"]) + 1)
    fig, (ax_loss, ax_time) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    ax_loss.plot(steps, result["train_loss"], label="train loss (batch)")
    ax_loss.plot(result["heldout_steps"], result["heldout_loss"], "o-",
                 label="held-out loss (EMA weights)")
    ax_loss.set_ylabel("cross-entropy (nats)")
    ax_loss.set_title(f"next-word model, optimizer: {result['optimizer']}")
    ax_loss.legend()
    ax_time.plot(steps, result["device_us"])
    ax_time.set_title("simulated device time of each update (0 for the numpy optimizer)")
    ax_time.set_xlabel("step")
    ax_time.set_ylabel("simulated device time (us)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=DEFAULTS["steps"],
                        help="number of updates")
    parser.add_argument("--optimizer", choices=("npu", "numpy"), default="npu",
                        help="where the parameter updates run")
    parser.add_argument("--soc", default=DEFAULTS["soc"],
                        help="simulated SoC (npu optimizer)")
    parser.add_argument("--seed", type=int, default=DEFAULTS["seed"],
                        help="seed of the initial weights and the batches")
    parser.add_argument("--vocab", type=int, default=DEFAULTS["vocab"],
                        help="vocabulary size V, including <pad> and <unk>")
    parser.add_argument("--dim", type=int, default=DEFAULTS["dim"],
                        help="embedding size D")
    parser.add_argument("--batch", type=int, default=DEFAULTS["batch"],
                        help="batch size B")
    parser.add_argument("--context", type=int, default=DEFAULTS["context"],
                        help="context length C (previous tokens)")
    parser.add_argument("--lr", type=float, default=DEFAULTS["lr"],
                        help="AdamW learning rate")
    parser.add_argument("--eval-every", type=int, default=DEFAULTS["eval_every"],
                        help="held-out evaluation interval (steps)")
    parser.add_argument("--compare", action="store_true",
                        help="run both optimizers with the same seed and compare losses")
    parser.add_argument("--plot", metavar="FILE.png", help="save the curves to FILE.png")
    args = parser.parse_args(argv)

    kwargs = dict(steps=args.steps, soc=args.soc, seed=args.seed, vocab=args.vocab,
                  dim=args.dim, batch=args.batch, context=args.context, lr=args.lr,
                  eval_every=args.eval_every)
    status = 0
    if args.compare:
        result = train(optimizer="npu", **kwargs)
        reference = train(optimizer="numpy", **kwargs)
        diff, ok = compare_losses(result, reference)
        print(f"max |train loss npu - numpy| over {args.steps} steps: {diff:.3g} "
              f"(tolerance {COMPARE_TOLERANCE:g}): {'OK' if ok else 'MISMATCH'}")
        status = 0 if ok else 1
    else:
        result = train(optimizer=args.optimizer, **kwargs)
    if args.plot:
        plot(result, args.plot)
        print(f"saved {args.plot}")
    return status


if __name__ == "__main__":
    sys.exit(main())
