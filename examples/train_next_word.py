"""Train a small next-word model whose training step runs on the simulated Ascend NPU.

Run from the repository root::

    python examples/train_next_word.py                    # optimizer on the simulated NPU
    python examples/train_next_word.py --optimizer numpy  # same run, numpy golden optimizer
    python examples/train_next_word.py --compare          # both, and compare the losses
    python examples/train_next_word.py --plot train.png   # also save loss / device-time plots

What runs where:

* Host (numpy, float32): reading and tokenising the text, batching, the mean of the
  context embeddings (a gather), the softmax cross-entropy loss and its gradient dlogits,
  and the held-out evaluation with the EMA weights.
* Device (the simulated NPU, through ``aclnn``; the weights live there): the output
  layer's forward matmul ``logits = [h, 1] @ [W; b]`` (``aclnnMatmul``), its gradients
  ``[dW; db] = [h, 1].T @ dlogits`` and ``dh = dlogits @ W.T`` and each context position's
  share ``R @ dh`` (``aclnnMatmul``), the embedding backward
  (``aclnnEmbeddingDenseBackward``) and every parameter update
  (``aclnnApplyFusedEmaAdam``: AdamW + an exponential moving average of the weights,
  fused in one kernel, once per parameter tensor). Events time the kernels; the new
  weights and EMA weights come back for the host's next gather and evaluation.
  ``--optimizer numpy`` replaces the device by numpy and the operators' goldens
  (``kernels/*/golden.py``), which is handy without the simulator. On ``--soc
  Ascend910A`` aclnnMatmul and aclnnApplyFusedEmaAdam are not supported: the matmuls and
  the update run on the host there and the run says so.

The data is real text that ships with CPython: the Python language reference used by
``help()`` (``pydoc_data.topics``). The model predicts the next token from the mean of the
embeddings of the previous ``context`` tokens::

    h      = mean(E[x_1..x_C], skipping <pad>)   # [B, D]
    logits = h @ W + b                           # [B, V]
    loss   = softmax cross-entropy(logits, y)

``--compare`` runs both optimizers with the same seed and checks that the per-step train
losses agree within ``COMPARE_TOLERANCE`` = 1e-4 (absolute, float32 runs). The device
computes in float32 in its own order of operations — the cube accumulates each matmul's
products in float32 in its fractal order and adds b inside the matmul, the update kernel
computes in float32 while the golden computes in float64 and rounds once — so logits,
gradients and weights differ by a few float32 ulps and the losses by about 1e-6
relative; 1e-4 leaves room for that to grow over a run, and still catches a wrong
matmul or update (a wrong gradient moves the loss by more than 1e-3 within a few steps).
In bfloat16 runs the tolerance is ``COMPARE_TOLERANCE_BF16`` = 2e-3: a weight whose float32
update lands near a rounding boundary rounds to neighbouring bfloat16 values (8
significant bits) on the two sides, and the device also rounds h and dlogits to bfloat16
before its matmuls (the host keeps them in float32). Measured over the default 100 steps:
3.7e-4 (3.3e-4 when the matmuls ran on the host); 2e-3 leaves room for other seeds and
still catches a wrong gradient.
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

import ml_dtypes
import numpy as np

import aclnn                    # aclnn operators, aclTensor and the ACL_* constants
from aclnn import acl           # pyACL-style runtime: acl.init, acl.rt.*, acl.util.*
from npusim.kernels.apply_fused_ema_adam.golden import apply_fused_ema_adam_golden
from npusim.kernels.embedding_dense_backward.golden import embedding_dense_backward_golden

PAD, UNK = 0, 1                 # reserved token ids
# words, numbers, and punctuation one character at a time, except that a run of one
# repeated character (the "-----" and "=====" rules of the reference's tables) is one token
TOKEN_RE = re.compile(r"[a-z_]+|\d+|([^\sa-z_\d])\1*")
COMPARE_TOLERANCE = 1e-4        # max |train loss (npu) - train loss (numpy)| per step
COMPARE_TOLERANCE_BF16 = 2e-3   # the same in bfloat16 runs (module docstring)
KEEP_DTYPE = 0                  # aclnnMatmul's cubeMathType: float32 stays float32

DEFAULTS = dict(
    steps=100, soc="Ascend910B1", seed=0, vocab=2048, dim=64, batch=256, context=4,
    lr=1e-2, eval_every=20,
)
ADAM_DEFAULTS = dict(
    beta1=0.9, beta2=0.999, eps=1e-8, mode=1, bias_correction=True, weight_decay=0.01,
)
EMA_MAX_DECAY = 0.999
#: dtype name -> (numpy dtype, aclDataType name) of the device tensors
DTYPES = {"float32": (np.float32, "ACL_FLOAT"), "bfloat16": (ml_dtypes.bfloat16, "ACL_BF16")}


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


def embed_mean(E: np.ndarray, X: np.ndarray):
    """The embedding half of the forward pass: ``(mask [B, C], count [B, 1], h [B, D])``,
    h the mean of the context embeddings with the ``<pad>`` positions left out."""
    mask = X != PAD                                                      # [B, C]
    count = np.maximum(mask.sum(axis=1, keepdims=True), 1).astype(E.dtype)  # [B, 1]
    h = (E[X] * mask[:, :, None]).sum(axis=1) / count                    # [B, D]
    return mask, count, h


def cross_entropy(logits: np.ndarray, y: np.ndarray):
    """Mean softmax cross-entropy of ``logits`` [B, V] against ids ``y`` [B]; returns
    ``(loss, probs [B, V])``."""
    shifted = logits - logits.max(axis=1, keepdims=True)                 # log-sum-exp
    log_z = np.log(np.exp(shifted).sum(axis=1, keepdims=True))           # [B, 1]
    log_probs = shifted - log_z                                          # [B, V]
    loss = -log_probs[np.arange(len(y)), y].mean()
    return float(loss), np.exp(log_probs)


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
    mask, count, h = embed_mean(params["E"], X)
    logits = h @ params["W"] + params["b"]                               # [B, V]
    loss, probs = cross_entropy(logits, y)
    return loss, dict(X=X, y=y, mask=mask, count=count, h=h, probs=probs)


def logits_grad(probs: np.ndarray, y: np.ndarray) -> np.ndarray:
    """dloss/dlogits [B, V] of the mean cross-entropy: (probs - onehot(y)) / B."""
    batch = len(y)
    dlogits = probs.copy()
    dlogits[np.arange(batch), y] -= 1.0
    dlogits /= batch
    return dlogits


def position_weights(X: np.ndarray, count: np.ndarray | None = None) -> np.ndarray:
    """R [B*C, B] with R[n*C + c, n] = 1 / count[n]: ``R @ dh`` hands every context
    position of example n its share dh[n] / count[n] of the mean's gradient (the
    embedding backward then drops the ``<pad>`` positions through paddingIdx)."""
    batch, context = X.shape
    if count is None:
        count = np.maximum((X != PAD).sum(axis=1, keepdims=True), 1)
    R = np.zeros((batch * context, batch), dtype=np.float32)
    R[np.arange(batch * context), np.repeat(np.arange(batch), context)] = \
        np.repeat(1.0 / count.reshape(-1), context)
    return R


def output_backward(params: dict[str, np.ndarray], cache: dict):
    """The output layer's backward pass on the host (the numpy run, and the device run on
    a SoC without aclnnMatmul).

    Returns:
        ``({"W": dW [D, V], "b": db [V]}, grad_pos [B*C, D], ids [B*C])``: dlogits [B, V] =
        (probs - onehot(y)) / B; dW = h.T @ dlogits; db = sum of dlogits; dh = dlogits @ W.T;
        every context position of example n gets dh[n] / count[n] (``grad_pos``), to be
        scattered into row ``ids`` of dE — the embedding backward, which ignores the rows
        of ``<pad>`` (paddingIdx).
    """
    X, y, count, h = cache["X"], cache["y"], cache["count"], cache["h"]
    dlogits = logits_grad(cache["probs"], y)                             # [B, V]
    dW = h.T @ dlogits                                                   # [D, V]
    db = dlogits.sum(axis=0)                                             # [V]
    dh = dlogits @ params["W"].T                                         # [B, D]
    grad_pos = np.repeat(dh / count, X.shape[1], axis=0)                 # [B*C, D]
    return {"W": dW, "b": db}, grad_pos, X.reshape(-1)


def backward(params: dict[str, np.ndarray], cache: dict,
             scale_grad_by_freq: bool = False) -> dict[str, np.ndarray]:
    """All gradients on the host: ``{"E": [V, D], "W": [D, V], "b": [V]}``.

    dE is the embedding backward's numpy golden (PyTorch semantics: ``<pad>`` rows get
    nothing; with ``scale_grad_by_freq`` each contribution is divided by how often its
    row occurs in the batch), i.e. what aclnnEmbeddingDenseBackward computes on the device.
    """
    grads, grad_pos, ids = output_backward(params, cache)
    grads["E"] = embedding_dense_backward_golden(grad_pos, ids, params["E"].shape[0], PAD,
                                                 scale_grad_by_freq, out_dtype=params["E"].dtype)
    return grads


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


class NpuTraining:
    """The device side of a training step, written like the official aclnn samples.

    The weights live on the device. The output layer is one [D+1, V] buffer per role whose
    last row is b, so that a ones column appended to h turns ``h @ W + b`` and (dW, db)
    into one matmul each. Per step, on the compute stream:

    * :meth:`forward`: copy ``[h, 1]`` [B, D+1] in, ``aclnnMatmul`` it with ``[W; b]``
      into float32 logits [B, V], copy the logits back (the host computes the loss);
    * :meth:`step`: copy dlogits [B, V] and the step number in; wait for the event that
      says this batch's token ids (and its position weights R) have arrived;
      ``aclnnMatmul``: ``[dW; db] = [h, 1].T @ dlogits`` straight into the gradient buffer,
      ``dh = dlogits @ W.T`` and ``grad_pos = R @ dh``; ``aclnnEmbeddingDenseBackward``
      (paddingIdx = ``<pad>``) writes E's gradient; ``aclnnApplyFusedEmaAdam`` updates E, W
      and b; the new weights and the EMA weights come back. On the copy stream, in the
      meantime: once dlogits is in, the next batch's ids and R go host -> device into the
      other of two buffers, and an event marks their arrival — that copy overlaps this
      step's kernels.

    Transposed operands (``[h, 1].T``, ``W.T``) are strided views (aclCreateTensor
    strides), which aclnnMatmul reads in place with the kernel's transpose flag. Every
    matmul uses cubeMathType KEEP_DTYPE (0): float32 stays float32 on the cube.

    On a SoC where aclnnMatmul is not supported (the simulator runs it on Atlas A2/A3
    only; 161002 on Ascend910A) the forward pass and the output layer's gradients run on
    the host and :meth:`step` takes them from there (``grads``, ``grad_pos``); where
    aclnnApplyFusedEmaAdam is not supported (its document lists only Atlas A2/A3) the
    update runs on the host with the operator's golden. The run says so in both cases.

    Args:
        params: the initial weights (E [V, D], W [D, V], b [V]), float32 on the host.
        dtype: "float32" or "bfloat16": the dtype of every device tensor (the logits
            are float32). soc: the simulated SoC. scale_grad_by_freq: the embedding
            backward's flag. batch_positions: B*C. batch: B.
    """

    ROLES = ("grad", "var", "m", "v", "s")

    def __init__(self, params: dict[str, np.ndarray], lr: float = DEFAULTS["lr"],
                 soc: str = DEFAULTS["soc"], dtype: str = "float32",
                 scale_grad_by_freq: bool = False, batch_positions: int = 0,
                 batch: int = 0, device_id: int = 0, verbose: bool = True, **adam):
        self.lr = lr
        self.adam = {**ADAM_DEFAULTS, **adam}
        self.np_dtype = np.dtype(DTYPES[dtype][0])
        self.acl_dtype = getattr(aclnn, DTYPES[dtype][1])
        self.scale_grad_by_freq = scale_grad_by_freq
        self.device_id = device_id
        self.step_count = 0
        self.vocab, self.dim = params["E"].shape
        self.ema = {name: p.copy() for name, p in params.items()}
        # name -> role -> (device pointer, byte offset): W and b share the output buffer
        self.buffers: dict[str, dict[str, tuple[int, int]]] = {}
        self.tensors: dict[str, dict[str, object]] = {}  # name -> role -> aclTensor
        self.workspace, self.workspace_size = 0, 0
        self.timeline: list[dict] = []                   # device spans of each step
        self.forward_us = 0.0                            # device time of this step's forward
        self.closed = False

        # 1. Initialise ACL (the JSON tells the simulator which SoC to be), choose the
        #    device, and create two streams: one computes, one copies ahead.
        fd, config_path = tempfile.mkstemp(suffix=".json", prefix="acl_")
        with os.fdopen(fd, "w") as f:
            json.dump({"npusim": {"soc": soc}}, f)
        try:
            ret = acl.init(config_path)
        finally:
            os.unlink(config_path)
        _check("acl.init", ret)
        _check("acl.rt.set_device", acl.rt.set_device(device_id))
        self.stream, ret = acl.rt.create_stream()
        _check("acl.rt.create_stream", ret)
        self.copy_stream, ret = acl.rt.create_stream()
        _check("acl.rt.create_stream", ret)

        # 2. Device memory and tensors: grad/var/m/v/s of E and of the output layer
        #    [W; b] (W its first D rows, b its last), the step, the matmuls' operands,
        #    the per-position gradient of the embedding and two buffers of ids and of R.
        D, V = self.dim, self.vocab
        layers = {"E": params["E"], "Wb": np.concatenate([params["W"], params["b"][None]])}
        self.ptrs = []                                   # every allocation, freed at close
        for name, p in layers.items():
            p = p.astype(self.np_dtype)
            initial = {"grad": np.zeros_like(p), "var": p, "m": np.zeros_like(p),
                       "v": np.zeros_like(p), "s": p.copy()}
            for role in self.ROLES:
                ptr = self._to_device(initial[role])
                if name == "E":
                    self._add("E", role, ptr, 0, (V, D), D * V)
                    continue
                self._add("Wb", role, ptr, 0, (D + 1, V), (D + 1) * V)
                self._add("W", role, ptr, 0, (D, V), (D + 1) * V)
                self._add("b", role, ptr, D * V, (V,), (D + 1) * V)
        # W.T [V, D]: a strided view of the weights, read in place by aclnnMatmul
        self.w_t = self._create_tensor((V, D), self.acl_dtype, self.buffers["W"]["var"][0],
                                       strides=(1, V), storage=(D + 1) * V)
        self.step_host = np.zeros(1, dtype=np.int64)
        self.step_ptr = self._to_device(self.step_host)
        self.step_tensor = self._create_tensor((1,), aclnn.ACL_INT64, self.step_ptr)
        B, n = batch, batch_positions
        self.h_ptr = self._to_device(np.zeros((B, D + 1), self.np_dtype))
        self.h_tensor = self._create_tensor((B, D + 1), self.acl_dtype, self.h_ptr)
        self.h_t = self._create_tensor((D + 1, B), self.acl_dtype, self.h_ptr,
                                       strides=(1, D + 1))
        self.logits_ptr = self._to_device(np.zeros((B, V), np.float32))
        self.logits_tensor = self._create_tensor((B, V), aclnn.ACL_FLOAT, self.logits_ptr)
        self.dlogits_ptr = self._to_device(np.zeros((B, V), self.np_dtype))
        self.dlogits_tensor = self._create_tensor((B, V), self.acl_dtype, self.dlogits_ptr)
        self.dh_ptr = self._to_device(np.zeros((B, D), self.np_dtype))
        self.dh_tensor = self._create_tensor((B, D), self.acl_dtype, self.dh_ptr)
        self.grad_pos_ptr = self._to_device(np.zeros((n, D), self.np_dtype))
        self.grad_pos_tensor = self._create_tensor((n, D), self.acl_dtype, self.grad_pos_ptr)
        self.ids_ptrs = [self._to_device(np.zeros(n, np.int32)) for _ in range(2)]
        self.ids_tensors = [self._create_tensor((n,), aclnn.ACL_INT32, ptr)
                            for ptr in self.ids_ptrs]
        self.ids_host = [np.zeros(n, np.int32) for _ in range(2)]  # alive until copied
        self.r_ptrs = [self._to_device(np.zeros((n, B), self.np_dtype)) for _ in range(2)]
        self.r_tensors = [self._create_tensor((n, B), self.acl_dtype, ptr)
                          for ptr in self.r_ptrs]
        self.r_host = [np.zeros((n, B), self.np_dtype) for _ in range(2)]

        # 3. Events: the start and end of each step's kernels, and "ids arrived" per buffer.
        self.start_event, ret = acl.rt.create_event()
        _check("acl.rt.create_event", ret)
        self.end_event, ret = acl.rt.create_event()
        _check("acl.rt.create_event", ret)
        self.grads_in_event, ret = acl.rt.create_event()
        _check("acl.rt.create_event", ret)
        self.ids_events = []
        for _ in range(2):
            event, ret = acl.rt.create_event()
            _check("acl.rt.create_event", ret)
            self.ids_events.append(event)

        # 4. Does this SoC run aclnnMatmul and aclnnApplyFusedEmaAdam? Ask each first
        #    phase once.
        def unsupported(ret: int, what: str) -> bool:
            if ret != aclnn.ACLNN_ERR_PARAM_INVALID:
                return False
            message = acl.get_recent_err_msg()
            if verbose:
                print(f"note: {message.splitlines()[0] if message else ret}\n      {what}",
                      flush=True)
            return True

        _, probe, ret = aclnn.aclnnMatmulGetWorkspaceSize(
            self.h_tensor, self.tensors["Wb"]["var"], self.logits_tensor, KEEP_DTYPE)
        self.device_matmul = not unsupported(
            ret, "the forward pass and the output layer's gradients run on the host")
        if self.device_matmul:
            _check("aclnnMatmulGetWorkspaceSize", ret)
            _check("aclDestroyAclOpExecutor", aclnn.aclDestroyAclOpExecutor(probe))
        self.host_update = None
        t = self.tensors["b"]
        _, probe, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(
            t["grad"], t["var"], t["m"], t["v"], t["s"], self.step_tensor, lr, 0.5,
            self.adam["beta1"], self.adam["beta2"], self.adam["eps"], self.adam["mode"],
            self.adam["bias_correction"], self.adam["weight_decay"])
        if unsupported(ret, "the parameter update runs on the host (the operator's "
                            "golden); the embedding backward stays on the device"):
            self.host_params = {k: v.astype(self.np_dtype) for k, v in params.items()}
            self.host_update = NumpyEmaAdam(self.host_params, lr=lr, **adam)
        else:
            _check("aclnnApplyFusedEmaAdamGetWorkspaceSize", ret)
            _check("aclDestroyAclOpExecutor", aclnn.aclDestroyAclOpExecutor(probe))

    def _add(self, name: str, role: str, ptr: int, offset: int, shape, storage: int) -> None:
        """Record ``name``'s ``role`` tensor: ``shape`` at element ``offset`` of ``ptr``."""
        self.buffers.setdefault(name, {})[role] = (ptr, offset * self.np_dtype.itemsize)
        self.tensors.setdefault(name, {})[role] = self._create_tensor(
            shape, self.acl_dtype, ptr, offset=offset, storage=storage)

    def _to_device(self, host: np.ndarray) -> int:
        """aclrtMalloc + aclrtMemcpy host -> device; returns the device pointer (freed at
        :meth:`close`)."""
        nbytes = max(host.nbytes, 1)
        ptr, ret = acl.rt.malloc(nbytes, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        _check("acl.rt.malloc", ret)
        if host.nbytes:
            ret = acl.rt.memcpy(ptr, host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes,
                                aclnn.ACL_MEMCPY_HOST_TO_DEVICE)
            _check("acl.rt.memcpy", ret)
        self.ptrs.append(ptr)
        return ptr

    @staticmethod
    def _create_tensor(shape, dtype, ptr, strides=None, offset=0, storage=None):
        """aclCreateTensor of an ND tensor: contiguous unless ``strides`` (in elements)
        say otherwise, ``offset`` elements into a storage of ``storage`` elements (by
        default the view's own size)."""
        shape = list(shape)
        if strides is None:
            strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
        storage_dims = shape if storage is None else [storage]
        tensor = aclnn.aclCreateTensor(shape, dtype, list(strides), offset,
                                       aclnn.ACL_FORMAT_ND, storage_dims, ptr)
        if tensor is None:
            raise RuntimeError(f"aclCreateTensor failed: {acl.get_recent_err_msg()}")
        return tensor

    def _workspace_for(self, size: int) -> int:
        """A workspace of at least ``size`` bytes (0 when none is needed), grown to the
        largest request and reused."""
        if size <= 0:
            return 0
        if size > self.workspace_size:
            if self.workspace:
                _check("acl.rt.synchronize_stream", acl.rt.synchronize_stream(self.stream))
                _check("acl.rt.free", acl.rt.free(self.workspace))
            self.workspace, ret = acl.rt.malloc(size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
            _check("acl.rt.malloc", ret)
            self.workspace_size = size
        return self.workspace

    def prefetch_ids(self, step: int, ids: np.ndarray) -> None:
        """Copy the token ids of ``step``'s batch and its position weights R ahead, on the
        copy stream, and record the event the compute stream will wait for."""
        slot = step % 2
        self.ids_host[slot][...] = ids
        batch = self.r_host[slot].shape[1]
        self.r_host[slot][...] = position_weights(ids.reshape(batch, -1))
        for ptr, host in ((self.ids_ptrs[slot], self.ids_host[slot]),
                          (self.r_ptrs[slot], self.r_host[slot])):
            ret = acl.rt.memcpy_async(ptr, host.nbytes, acl.util.numpy_to_ptr(host),
                                      host.nbytes, aclnn.ACL_MEMCPY_HOST_TO_DEVICE,
                                      self.copy_stream)
            _check("acl.rt.memcpy_async", ret)
        _check("acl.rt.record_event", acl.rt.record_event(self.ids_events[slot],
                                                          self.copy_stream))

    def _matmul(self, a, b, out) -> None:
        """``out = a @ b`` on the compute stream: aclnnMatmul's two phases."""
        ws, executor, ret = aclnn.aclnnMatmulGetWorkspaceSize(a, b, out, KEEP_DTYPE)
        _check("aclnnMatmulGetWorkspaceSize", ret)
        ret = aclnn.aclnnMatmul(self._workspace_for(ws), ws, executor, self.stream)
        _check("aclnnMatmul", ret)

    def _elapsed_us(self) -> float:
        """Synchronise the compute stream; the simulated µs between the two events."""
        _check("acl.rt.synchronize_stream", acl.rt.synchronize_stream(self.stream))
        ms, ret = acl.rt.event_elapsed_time(self.start_event, self.end_event)
        _check("acl.rt.event_elapsed_time", ret)
        return ms * 1000.0

    def forward(self, h: np.ndarray) -> np.ndarray:
        """The output layer on the device: ``[h, 1] @ [W; b]``.

        Args:
            h: the mean context embeddings [B, D] from the host (float32).

        Returns:
            The logits [B, V], float32 (the matmul's output dtype; in bfloat16 runs the
            operands are bfloat16 and the cube accumulates in float32).
        """
        self._keep_h = np.ascontiguousarray(
            np.concatenate([h, np.ones((len(h), 1), h.dtype)], axis=1), self.np_dtype)
        ret = acl.rt.memcpy_async(self.h_ptr, self._keep_h.nbytes,
                                  acl.util.numpy_to_ptr(self._keep_h), self._keep_h.nbytes,
                                  aclnn.ACL_MEMCPY_HOST_TO_DEVICE, self.stream)
        _check("acl.rt.memcpy_async", ret)
        self.t_forward = aclnn.runtime.current_device().env.now
        _check("acl.rt.record_event", acl.rt.record_event(self.start_event, self.stream))
        self._matmul(self.h_tensor, self.tensors["Wb"]["var"], self.logits_tensor)
        _check("acl.rt.record_event", acl.rt.record_event(self.end_event, self.stream))
        self.forward_us = self._elapsed_us()
        logits = np.empty((len(h), self.vocab), np.float32)
        self._from_device(logits, (self.logits_ptr, 0))
        return logits

    def step(self, params, grads=None, grad_pos=None, next_ids=None, dlogits=None) -> float:
        """One backward pass and update. With the matmuls on the device, ``dlogits``
        [B, V] is the host's loss gradient and :meth:`forward` has run on this batch;
        otherwise ``grads`` holds dW and db from the host and ``grad_pos`` [B*C, D] the
        embedding's per-position gradient. The batch's ids were prefetched; ``next_ids``
        are copied ahead for the next step. Updates ``params`` and ``self.ema`` in place
        and returns the simulated device time of the step's kernels, forward included
        (µs)."""
        self.step_count += 1
        slot = self.step_count % 2
        ema_decay = ema_decay_at(self.step_count)
        dev = aclnn.runtime.current_device()
        t_begin = self.t_forward if self.device_matmul else dev.env.now

        # 1. Host -> device on the compute stream: dlogits (or the host's gradients) and
        #    the step number.
        if self.device_matmul:
            keep = [np.ascontiguousarray(dlogits, dtype=self.np_dtype)]
            targets = [self.dlogits_ptr]
        else:
            keep = [np.ascontiguousarray(g, dtype=self.np_dtype)
                    for g in (grads["W"], grads["b"], grad_pos)]
            targets = [sum(self.buffers["W"]["grad"]), sum(self.buffers["b"]["grad"]),
                       self.grad_pos_ptr]
        self.step_host[0] = self.step_count
        for ptr, host in list(zip(targets, keep)) + [(self.step_ptr, self.step_host)]:
            ret = acl.rt.memcpy_async(ptr, host.nbytes, acl.util.numpy_to_ptr(host),
                                      host.nbytes, aclnn.ACL_MEMCPY_HOST_TO_DEVICE, self.stream)
            _check("acl.rt.memcpy_async", ret)
        # 2. The next batch's ids travel on the copy stream while this step computes: the
        #    copy stream first waits until the gradients are in, so that the prefetch does
        #    not hold up this step's copies on the host link.
        if next_ids is not None:
            _check("acl.rt.record_event", acl.rt.record_event(self.grads_in_event, self.stream))
            _check("acl.rt.stream_wait_event",
                   acl.rt.stream_wait_event(self.copy_stream, self.grads_in_event))
            self.prefetch_ids(self.step_count + 1, next_ids)
        # 3. Wait for this batch's ids, then the kernels between two events.
        _check("acl.rt.stream_wait_event",
               acl.rt.stream_wait_event(self.stream, self.ids_events[slot]))
        _check("acl.rt.record_event", acl.rt.record_event(self.start_event, self.stream))
        #    3a. The output layer's backward on the cube: [dW; db] = [h, 1].T @ dlogits
        #        into the gradient buffer, dh = dlogits @ W.T (W before its update), and
        #        grad_pos = R @ dh, each context position's share of the mean's gradient.
        if self.device_matmul:
            self._matmul(self.h_t, self.dlogits_tensor, self.tensors["Wb"]["grad"])
            self._matmul(self.dlogits_tensor, self.w_t, self.dh_tensor)
            self._matmul(self.r_tensors[slot], self.dh_tensor, self.grad_pos_tensor)
        #    3b. dE on the device: the embedding backward writes E's gradient tensor.
        ws, executor, ret = aclnn.aclnnEmbeddingDenseBackwardGetWorkspaceSize(
            self.grad_pos_tensor, self.ids_tensors[slot], self.vocab, PAD,
            self.scale_grad_by_freq, self.tensors["E"]["grad"])
        _check("aclnnEmbeddingDenseBackwardGetWorkspaceSize", ret)
        ret = aclnn.aclnnEmbeddingDenseBackward(self._workspace_for(ws), ws, executor, self.stream)
        _check("aclnnEmbeddingDenseBackward", ret)
        #    3c. The update of E, W and b: phase one, workspace if > 0, phase two.
        if self.host_update is None:
            for name in params:
                t = self.tensors[name]
                ws, executor, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(
                    t["grad"], t["var"], t["m"], t["v"], t["s"], self.step_tensor,
                    self.lr, ema_decay, self.adam["beta1"], self.adam["beta2"],
                    self.adam["eps"], self.adam["mode"], self.adam["bias_correction"],
                    self.adam["weight_decay"])
                _check("aclnnApplyFusedEmaAdamGetWorkspaceSize", ret)
                ret = aclnn.aclnnApplyFusedEmaAdam(self._workspace_for(ws), ws, executor,
                                                   self.stream)
                _check("aclnnApplyFusedEmaAdam", ret)
        _check("acl.rt.record_event", acl.rt.record_event(self.end_event, self.stream))
        # 4. Synchronise and read the simulated time between the two events.
        device_us = self._elapsed_us() + (self.forward_us if self.device_matmul else 0.0)
        self._note_timeline(dev, t_begin)

        # 5. Device -> host: new weights and EMA weights (or the gradients, for a host
        #    update).
        if self.host_update is not None:
            host_grads = {}
            for name, p in params.items():
                host_grads[name] = np.empty(p.shape, self.np_dtype)
                self._from_device(host_grads[name], self.buffers[name]["grad"])
            self.host_update.step(self.host_params, host_grads)
            for name, p in params.items():
                p[...] = self.host_params[name]
                self.ema[name][...] = self.host_update.ema[name]
            return device_us
        for name, var in params.items():
            for host, role in ((var, "var"), (self.ema[name], "s")):
                buf = np.empty(host.shape, self.np_dtype)
                self._from_device(buf, self.buffers[name][role])
                host[...] = buf
        return device_us

    def _from_device(self, host: np.ndarray, where: tuple[int, int]) -> None:
        """aclrtMemcpy device -> host of ``host.nbytes`` from ``(pointer, byte offset)``."""
        ptr, offset = where
        ret = acl.rt.memcpy(acl.util.numpy_to_ptr(host), host.nbytes, ptr + offset, host.nbytes,
                            aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
        _check("acl.rt.memcpy", ret)

    def _note_timeline(self, dev, t_begin: float) -> None:
        """Keep the device spans of this step: kernels and host -> device copies (µs)."""
        compute = self._stream_id()
        spans = [(f"H2D {nbytes} B " + ("(compute stream)" if sid == compute
                                          else "ids / R (copy stream)"), start, end)
                 for kind, start, end, nbytes, sid in dev.copies
                 if end > t_begin and kind == "H2D"]
        spans += [(p.op_name, p.start_us, p.start_us + p.duration_us) for p in dev.profiles
                  if p.start_us >= t_begin]
        # the step's span on the device: from where the previous step left the device (its
        # first copy starts there) to its last kernel or copy
        self.timeline.append({"begin": t_begin, "spans": spans,
                              "end": max([end for _, _, end in spans], default=t_begin)})

    def _stream_id(self) -> int:
        return aclnn.runtime.resolve_stream(self.stream).id

    def close(self) -> None:
        """Release everything in reverse order: tensors, device memory, events, streams,
        device, ACL."""
        if self.closed:
            return
        self.closed = True
        for stream in (self.stream, self.copy_stream):    # no task may outlive its memory
            _check("acl.rt.synchronize_stream", acl.rt.synchronize_stream(stream))
        tensors = [t for roles in self.tensors.values() for t in roles.values()]
        tensors += [self.w_t, self.step_tensor, self.h_tensor, self.h_t, self.logits_tensor,
                    self.dlogits_tensor, self.dh_tensor, self.grad_pos_tensor,
                    *self.ids_tensors, *self.r_tensors]
        for tensor in tensors:
            _check("aclDestroyTensor", aclnn.aclDestroyTensor(tensor))
        ptrs = list(self.ptrs)
        if self.workspace:
            ptrs.append(self.workspace)
        for ptr in ptrs:
            _check("acl.rt.free", acl.rt.free(ptr))
        for event in (self.start_event, self.end_event, self.grads_in_event, *self.ids_events):
            _check("acl.rt.destroy_event", acl.rt.destroy_event(event))
        for stream in (self.stream, self.copy_stream):
            _check("acl.rt.destroy_stream", acl.rt.destroy_stream(stream))
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
          dtype: str = "float32", scale_grad_by_freq: bool = False,
          verbose: bool = True) -> dict:
    """Train for ``steps`` updates and return the curves.

    ``optimizer="npu"`` runs the output layer's matmuls (forward and gradients), the
    embedding backward and every update on the simulated NPU (:class:`NpuTraining`);
    ``"numpy"`` runs the same arithmetic on the host (numpy and the operators' goldens).
    ``dtype`` ("float32" or "bfloat16") is the dtype of the weights, gradients and
    optimizer state, and of the device's matmul operands; the host's gather and loss
    are float32.

    Returns a dict with ``train_loss`` (one per step, measured before that step's
    update), ``device_us`` (simulated device time of each step's kernels: the forward
    matmul's and the backward kernels' and updates' Task Durations, which run back to back
    on the compute stream; 0.0 for numpy), ``step_us`` (the step's whole span on the
    simulated device, host -> device copies on the host link included; 0.0 for numpy),
    ``heldout_steps`` / ``heldout_loss`` (held-out loss of the EMA weights after that
    many updates, starting at 0), ``heldout_start``, ``heldout_end``, ``wall_s``,
    ``optimizer``, ``timeline`` (the device spans of the last step that copied the next
    batch's ids ahead, npu only) and ``params`` /
    ``ema`` (the final weights).
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, not {dtype!r}")
    data = load_dataset(vocab, context)
    rng = np.random.default_rng(seed)
    params = init_params(vocab, dim, rng)
    np_dtype = np.dtype(DTYPES[dtype][0])
    if optimizer == "npu":
        opt = NpuTraining(params, lr=lr, soc=soc, dtype=dtype,
                          scale_grad_by_freq=scale_grad_by_freq, batch=batch,
                          batch_positions=batch * context, verbose=verbose)
    elif optimizer == "numpy":
        state = {name: p.astype(np_dtype) for name, p in params.items()}
        opt = NumpyEmaAdam(state, lr=lr)
    else:
        raise ValueError(f"optimizer must be 'npu' or 'numpy', not {optimizer!r}")

    def log(msg: str) -> None:
        if verbose:
            print(msg, flush=True)

    X_train, y_train = data["X_train"], data["y_train"]
    X_held, y_held = data["X_held"], data["y_held"]
    log(f"[{optimizer}, {dtype}, {soc if optimizer == 'npu' else 'host'}] {len(y_train)} "
        f"training / {len(y_held)} held-out examples, V={vocab} D={dim} C={context} "
        f"B={batch} lr={lr:g}")

    def ema_f32():
        return {name: p.astype(np.float32) for name, p in opt.ema.items()}

    if optimizer == "npu":
        log("per step, simulated device time: kernels = the Task Durations of the step's "
            "kernels (back to back on the compute stream);\n  step = the step's whole span on "
            "the device, host -> device copies on the host link included")
    result = dict(optimizer=optimizer, dtype=dtype, train_loss=[], device_us=[], step_us=[],
                  heldout_steps=[0], heldout_loss=[evaluate(ema_f32(), X_held, y_held)])
    log(f"step {0:3d}  held-out loss (EMA weights) {result['heldout_loss'][0]:.4f}")
    t0 = time.perf_counter()
    idx = rng.integers(0, len(y_train), size=batch)
    with opt:
        if optimizer == "npu":
            opt.prefetch_ids(1, X_train[idx].reshape(-1))
        for step in range(1, steps + 1):
            next_idx = rng.integers(0, len(y_train), size=batch) if step < steps else None
            next_ids = None if next_idx is None else X_train[next_idx].reshape(-1)
            if optimizer == "npu" and opt.device_matmul:
                _, _, h = embed_mean(params["E"], X_train[idx])         # host
                logits = opt.forward(h)                                 # device
                loss, probs = cross_entropy(logits, y_train[idx])       # host
                dlogits = logits_grad(probs, y_train[idx])              # host
                device_us = opt.step(params, next_ids=next_ids, dlogits=dlogits)  # device
            elif optimizer == "npu":                     # a SoC without aclnnMatmul
                loss, cache = forward(params, X_train[idx], y_train[idx])   # host
                grads, grad_pos, _ = output_backward(params, cache)     # host
                device_us = opt.step(params, grads, grad_pos, next_ids)  # device
            else:
                loss, cache = forward(params, X_train[idx], y_train[idx])   # host
                grads = backward(params, cache, scale_grad_by_freq)     # host
                device_us = opt.step(state, grads)
                for name, p in params.items():
                    p[...] = state[name]
            result["train_loss"].append(loss)
            result["device_us"].append(device_us)
            if optimizer == "npu":
                span = opt.timeline[-1]
                step_us = span["end"] - span["begin"]
                log(f"step {step:3d}  loss {loss:.4f}  device: kernels {device_us:.1f} us, "
                    f"step {step_us:.1f} us")
            else:
                step_us = 0.0
                log(f"step {step:3d}  loss {loss:.4f}  device {device_us:.1f} us (host run)")
            result["step_us"].append(step_us)
            if step % eval_every == 0 or step == steps:
                held = evaluate(ema_f32(), X_held, y_held)
                result["heldout_steps"].append(step)
                result["heldout_loss"].append(held)
                log(f"step {step:3d}  held-out loss (EMA weights) {held:.4f}")
            idx = next_idx
        result["ema"] = ema_f32()
        if optimizer == "npu" and opt.timeline:
            # the last step that also copied the next batch's ids ahead
            result["timeline"] = opt.timeline[-2] if len(opt.timeline) > 1 else opt.timeline[-1]
    result["params"] = params
    result["wall_s"] = time.perf_counter() - t0
    result["heldout_start"] = result["heldout_loss"][0]
    result["heldout_end"] = result["heldout_loss"][-1]
    log(f"held-out loss (EMA weights): start {result['heldout_start']:.2f} -> "
        f"end {result['heldout_end']:.2f}   ({steps} steps, {result['wall_s']:.1f} s, "
        f"device: kernels {sum(result['device_us']):.1f} us in steps of "
        f"{sum(result['step_us']):.1f} us)")
    if "timeline" in result:
        log(describe_timeline(result["timeline"]))
    return result


def describe_timeline(timeline: dict) -> str:
    """One line per device span of a step, times in µs from the step's start."""
    kernels = sum(end - start for name, start, end in timeline["spans"]
                  if not name.startswith("H2D"))
    lines = ["device timeline of the last step that prefetched ids (µs from its start; its "
             f"kernels take {kernels:.1f} us of its {timeline['end'] - timeline['begin']:.1f} "
             "us, the rest is host -> device copies and waits for the host link; a copy-stream "
             "span that starts before 0 overlapped the previous step):"]
    for name, start, end in sorted(timeline["spans"], key=lambda s: s[1]):
        lines.append(f"  {start - timeline['begin']:8.2f} .. {end - timeline['begin']:8.2f}  "
                     f"{name}")
    return "\n".join(lines)


def compare_tolerance(dtype: str = "float32") -> float:
    """The stated tolerance of ``--compare`` for runs in ``dtype`` (module docstring)."""
    return COMPARE_TOLERANCE_BF16 if dtype == "bfloat16" else COMPARE_TOLERANCE


def compare_losses(a: dict, b: dict) -> tuple[float, bool]:
    """Max absolute difference of two runs' per-step train losses, and whether it is
    within the tolerance of ``a``'s dtype (:func:`compare_tolerance`)."""
    diff = float(np.max(np.abs(np.subtract(a["train_loss"], b["train_loss"]))))
    return diff, diff <= compare_tolerance(a.get("dtype", "float32"))


def plot(result: dict, path: str) -> None:
    """Save train loss, held-out loss (EMA weights), device time per step and, for a
    device run, the last step's device timeline to ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.arange(1, len(result["train_loss"]) + 1)
    timeline = result.get("timeline")
    fig, axes = plt.subplots(3 if timeline else 2, 1, figsize=(8, 10 if timeline else 7))
    ax_loss, ax_time = axes[0], axes[1]
    ax_loss.plot(steps, result["train_loss"], label="train loss (batch)")
    ax_loss.plot(result["heldout_steps"], result["heldout_loss"], "o-",
                 label="held-out loss (EMA weights)")
    ax_loss.set_ylabel("cross-entropy (nats)")
    ax_loss.set_xlabel("step")
    ax_loss.set_title(f"next-word model, {result['optimizer']} ({result.get('dtype', 'float32')})")
    ax_loss.legend()
    ax_time.plot(steps, result["device_us"])
    ax_time.set_title("simulated device time of each step's kernels (0 on the host)")
    ax_time.set_xlabel("step")
    ax_time.set_ylabel("simulated device time (us)")
    if timeline:
        ax = axes[2]
        spans = sorted(timeline["spans"], key=lambda sp: sp[1])
        for row, (name, start, end) in enumerate(spans):
            color = "tab:orange" if "copy stream" in name else (
                "tab:gray" if name.startswith("copy") else "tab:blue")
            ax.barh(row, end - start, left=start - timeline["begin"], color=color)
        ax.set_yticks(range(len(spans)))
        ax.set_yticklabels([sp[0] for sp in spans], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("µs from the start of the step")
        ax.set_title("one step: the next batch's ids (orange, copy stream) overlap the kernels")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=DEFAULTS["steps"],
                        help="number of updates")
    parser.add_argument("--optimizer", choices=("npu", "numpy"), default="npu",
                        help="where the matmuls, the embedding backward and the updates run")
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
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32",
                        help="dtype of the weights, gradients and optimizer state")
    parser.add_argument("--scale-grad-by-freq", action="store_true",
                        help="the embedding backward divides by each row's frequency")
    parser.add_argument("--compare", action="store_true",
                        help="run both optimizers with the same seed and compare losses")
    parser.add_argument("--plot", metavar="FILE.png", help="save the curves to FILE.png")
    args = parser.parse_args(argv)

    kwargs = dict(steps=args.steps, soc=args.soc, seed=args.seed, vocab=args.vocab,
                  dim=args.dim, batch=args.batch, context=args.context, lr=args.lr,
                  eval_every=args.eval_every, dtype=args.dtype,
                  scale_grad_by_freq=args.scale_grad_by_freq)
    status = 0
    if args.compare:
        result = train(optimizer="npu", **kwargs)
        reference = train(optimizer="numpy", **kwargs)
        diff, ok = compare_losses(result, reference)
        print(f"max |train loss npu - numpy| over {args.steps} steps: {diff:.3g} "
              f"(tolerance {compare_tolerance(args.dtype):g}): {'OK' if ok else 'MISMATCH'}")
        status = 0 if ok else 1
    else:
        result = train(optimizer=args.optimizer, **kwargs)
    if args.plot:
        plot(result, args.plot)
        print(f"saved {args.plot}")
    return status


if __name__ == "__main__":
    sys.exit(main())
