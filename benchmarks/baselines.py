"""What a user would otherwise run: each benchmarked operator in fp32 numpy and torch (CPU).

The benchmarks time the simulator against these, side by side in one process on the same
arrays (:mod:`harness`). They compute the operators' documented formulas (the goldens'
sources: docs/reference/operators.md §1-§2 and the goldens of ``kernels/*/golden.py``) for speed,
not for fidelity: the float64 goldens stay the correctness references, and
``tests/test_baselines.py`` checks every function here against them.

numpy functions work in float32 with ``out=`` ufuncs and in place where the operator is in
place (ApplyFusedEmaAdam updates var, m, v, s; an output buffer given as ``out`` is
reused). torch functions take numpy arrays, wrap them with ``torch.from_numpy`` (no copy)
and run the torch operation a PyTorch user would call; they raise ImportError when torch is
not installed (:func:`torch_version` says whether it is).
"""
from __future__ import annotations

import math

import numpy as np

F32 = np.float32


def torch_version() -> str | None:
    """torch's version string, or None when torch cannot be imported."""
    try:
        import torch
    except ImportError:
        return None
    return torch.__version__


# -- ApplyFusedEmaAdam (docs/reference/operators.md §1 "Math") ------------------------------------
def _bias_corrections(step, beta1, beta2, bias_correction):
    if not bias_correction:
        return 1.0, 1.0
    return 1.0 - beta1 ** float(step), 1.0 - beta2 ** float(step)


def ema_adam_numpy(grad, var, m, v, s, step, lr=1e-3, ema_decay=0.9999, beta1=0.9,
                   beta2=0.999, eps=1e-8, mode=1, bias_correction=True, weight_decay=0.0,
                   scratch=None):
    """One fused EMA-Adam step in fp32 numpy, in place on ``var, m, v, s``.

    The formula of docs/reference/operators.md §1 "Math" (the golden's)::

        g = grad + wd*var (mode 0) | grad (mode 1);  m' = b1*m + (1-b1)*g
        v' = b2*v + (1-b2)*g*g;  upd = (m'/bc1) / (sqrt(v'/bc2) + eps) (+ wd*var, mode 1)
        var' = var - lr*upd;  s' = ema_decay*s + (1-ema_decay)*var'

    written as 17 whole-array ``out=`` passes (18 in mode 0) over one float32 scratch
    array, with the scalar factors folded (``sqrt(v'/bc2) = sqrt(v')/sqrt(bc2)``;
    AdamW's ``var*(1-lr*wd) - lr*upd``), so no pass allocates.

    Args:
        grad, var, m, v, s: float32 numpy arrays of one shape, C-contiguous; grad is read
            only, the other four are overwritten with their new values.
        step: the optimizer step (int >= 1). lr ... weight_decay: as the operator's
            attributes (Python floats; numpy applies them as float32 to float32 arrays).
        mode: 0 (L2: weight decay on the gradient) or 1 (AdamW).
        scratch: an optional float32 array of grad's shape to work in (two for mode 0, as
            a tuple); allocated when None.

    Returns:
        ``(var, m, v, s)``, the arrays passed, updated.

    Raises:
        ValueError: ``mode`` not 0 or 1, or arrays not float32.
    """
    if mode not in (0, 1):
        raise ValueError(f"mode must be 0 or 1, got {mode}")
    if any(np.asarray(a).dtype != F32 for a in (grad, var, m, v, s)):
        raise ValueError("grad, var, m, v and s must be float32")
    if scratch is None:
        scratch = tuple(np.empty_like(var) for _ in range(2 if mode == 0 else 1))
    elif isinstance(scratch, np.ndarray):
        scratch = (scratch,)
    t = scratch[0]
    bc1, bc2 = _bias_corrections(step, beta1, beta2, bias_correction)
    g = grad
    if mode == 0:                                   # L2: the decay goes into the gradient
        g = scratch[1]
        np.multiply(var, weight_decay, out=g)
        g += grad
    m *= beta1                                      # m' = b1*m + (1-b1)*g
    np.multiply(g, 1.0 - beta1, out=t)
    m += t
    v *= beta2                                      # v' = b2*v + (1-b2)*g*g
    np.multiply(g, g, out=t)
    t *= 1.0 - beta2
    v += t
    np.sqrt(v, out=t)                               # denom = sqrt(v')/sqrt(bc2) + eps
    t *= 1.0 / math.sqrt(bc2)
    t += eps
    np.divide(m, t, out=t)                          # lr*upd without the decay: lr/bc1*m'/denom
    t *= lr / bc1
    if mode == 1:                                   # AdamW: var*(1 - lr*wd) - lr*upd
        var *= 1.0 - lr * weight_decay
    var -= t
    s *= ema_decay                                  # s' = d*s + (1-d)*var'
    np.multiply(var, 1.0 - ema_decay, out=t)
    s += t
    return var, m, v, s


class EmaAdamTorch:
    """One fused EMA-Adam step as a PyTorch user runs it: ``torch.optim.AdamW`` (mode 1) or
    ``torch.optim.Adam(weight_decay=wd)`` (mode 0) with ``foreach=True``, then
    ``torch._foreach_lerp_(s, var, 1 - ema_decay)`` (``s + (1-d)*(var' - s)``, the EMA).

    Equivalence: docs/reference/operators.md §1 "Torch oracle" (AdamW's ``param.mul_(1-lr*wd)``
    then ``addcdiv_`` is the formula above; torch increments ``step`` before using it, so
    the optimizer state holds ``step - 1``). The tensors share memory with the numpy arrays
    given (``torch.from_numpy``), so resetting those resets the optimizer's state; every
    :meth:`step` sets the state's step back to ``step - 1`` first, so repeated calls all
    run step ``step``.

    Args: as :func:`ema_adam_numpy` (float32 arrays, updated in place by :meth:`step`).

    Raises:
        ImportError: torch is not installed.
        ValueError: ``bias_correction`` false (torch's optimizers always correct) or
            ``mode`` not 0 or 1.
    """

    def __init__(self, grad, var, m, v, s, step, lr=1e-3, ema_decay=0.9999, beta1=0.9,
                 beta2=0.999, eps=1e-8, mode=1, bias_correction=True, weight_decay=0.0):
        import torch
        if not bias_correction:
            raise ValueError("bias_correction=False has no torch.optim equivalent")
        if mode not in (0, 1):
            raise ValueError(f"mode must be 0 or 1, got {mode}")
        self.torch = torch
        self.param = torch.from_numpy(var)
        self.param.grad = torch.from_numpy(grad)
        self.ema = torch.from_numpy(s)
        cls = torch.optim.AdamW if mode == 1 else torch.optim.Adam
        self.opt = cls([self.param], lr=lr, betas=(beta1, beta2), eps=eps,
                       weight_decay=weight_decay, foreach=True)
        self.step_before = float(step - 1)
        self.state = {"step": torch.tensor(self.step_before),
                      "exp_avg": torch.from_numpy(m), "exp_avg_sq": torch.from_numpy(v)}
        self.opt.state[self.param] = self.state
        self.weight = 1.0 - ema_decay

    def step(self):
        """Run the step: var, m, v and s (the numpy arrays) hold the new values after."""
        self.state["step"].fill_(self.step_before)
        self.opt.step()
        self.torch._foreach_lerp_([self.ema], [self.param], self.weight)


# -- EmbeddingDenseBackward (docs/reference/operators.md §2 "PyTorch semantics / oracle") -----------
def embedding_dense_backward_numpy(grad, indices, num_weights: int, padding_idx: int = -1,
                                   scale_grad_by_freq: bool = False, out=None,
                                   chunk_rows: int = 1024):
    """``grad_weight[indices[i]] += grad[i] * scale`` in float32 numpy.

    The aten semantics (operators.md §2): counts over all indices; rows whose index equals
    ``padding_idx`` (compared as the raw integer: negative matches nothing) add nothing;
    ``scale = 1/counts[indices[i]]`` when ``scale_grad_by_freq``, else 1.

    Method, the fastest of the fp32 numpy ways measured on grad [65536, 1024] over 50000
    rows (Zipf indices, 2026-11-24, this 2-core host): ``np.add.at`` on the flattened
    output with one element index per grad element (``idx*dim + column``), 1024 rows at a
    time so the index buffer stays 8 MiB — 0.15 s; ``np.add.at(out, idx, grad)`` on rows
    0.60 s; stable argsort + ``np.add.reduceat`` 1.16 s. Every way adds each index's rows in
    the indices' order in float32 (``np.add.at`` is unbuffered and sequential).

    Args:
        grad: float32 array, >= 2-D; its leading dims flatten to ``indices.size`` rows of
            ``dim = grad.shape[-1]``.
        indices: integer array, values in ``[0, num_weights)``.
        num_weights: rows of the result. padding_idx, scale_grad_by_freq: as above.
        out: optional float32 C-contiguous ``[num_weights, dim]`` array to write (zeroed
            first); allocated when None.
        chunk_rows: rows of grad per ``np.add.at`` call (bounds the index buffer:
            ``chunk_rows * dim * 8`` bytes).

    Returns:
        ``out``, float32 ``[num_weights, dim]``.

    Raises:
        ValueError: grad is not float32, ``indices.size`` differs from grad's rows, or
            ``out`` has the wrong shape or dtype.
    """
    grad = np.asarray(grad)
    if grad.dtype != F32 or grad.ndim < 2:
        raise ValueError("grad must be a float32 array of at least 2 dims")
    dim = grad.shape[-1]
    g = grad.reshape(-1, dim)
    idx = np.asarray(indices).reshape(-1).astype(np.intp, copy=False)
    if idx.size != g.shape[0]:
        raise ValueError(f"indices has {idx.size} elements, grad has {g.shape[0]} rows")
    if out is None:
        out = np.zeros((int(num_weights), dim), F32)
    elif out.shape != (num_weights, dim) or out.dtype != F32 or not out.flags.c_contiguous:
        raise ValueError(f"out must be float32 C-contiguous [{num_weights}, {dim}]")
    else:
        out.fill(0)
    inv = None
    if scale_grad_by_freq:                          # counts over all indices, padding too
        counts = np.bincount(idx, minlength=int(num_weights)).astype(F32)
        inv = np.divide(1.0, counts, out=np.zeros_like(counts), where=counts > 0)
    flat = out.reshape(-1)
    cols = np.arange(dim, dtype=np.intp)
    buf = np.empty((min(chunk_rows, max(g.shape[0], 1)), dim), np.intp)
    for r0 in range(0, g.shape[0], chunk_rows):
        ci, cg = idx[r0:r0 + chunk_rows], g[r0:r0 + chunk_rows]
        if 0 <= padding_idx < num_weights:
            keep = ci != padding_idx
            if not keep.all():
                ci, cg = ci[keep], cg[keep]
        if inv is not None:
            cg = cg * inv[ci][:, None]
        b = buf[:ci.size]
        np.multiply(ci[:, None], dim, out=b)        # element index of (row idx, column j)
        b += cols
        np.add.at(flat, b.reshape(-1), cg.reshape(-1))
    return out


def embedding_dense_backward_torch(grad, indices, num_weights: int, padding_idx: int = -1,
                                   scale_grad_by_freq: bool = False):
    """``torch.ops.aten.embedding_dense_backward`` (CPU) on float32 grad and int64 indices
    (the oracle of docs/reference/operators.md §2, "Quick oracle table"); a new float32 numpy
    array ``[num_weights, grad.shape[-1]]``. Raises ImportError without torch."""
    import torch
    g = torch.from_numpy(np.ascontiguousarray(grad))
    i = torch.from_numpy(np.ascontiguousarray(indices))
    return torch.ops.aten.embedding_dense_backward(g, i, int(num_weights), int(padding_idx),
                                                   bool(scale_grad_by_freq)).numpy()


# -- Add (z = x + y, half) ----------------------------------------------------------------------
# -- FusedSparseAdam (docs/reference/operators.md §4 "Algorithm") ---------------------------------
def fused_sparse_adam_numpy(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon,
                            grad, indices, use_nesterov: bool = False, scratch=None):
    """MindSpore's FusedSparseAdam in float32 numpy, ``var``, ``m``, ``v`` updated in place.

    Duplicate indices are summed (indices outside ``[0, rows)`` dropped) into a dense
    ``[rows, ...]`` gradient with ``np.add.at`` on the flattened buffer (element indices,
    as :func:`embedding_dense_backward_numpy`); then, over whole arrays with ``out=``
    ufuncs: ``m = beta1*m + (1-beta1)*g``, ``v = beta2*v + ((1-beta2)*g)*g`` (rows without
    an index get ``+ 0``, exactly their decayed value), ``var -= lr_t*M / (sqrt(v) + eps)``
    with ``lr_t = lr*sqrt(1-beta2_power)/(1-beta1_power)`` and ``M = m`` or, with
    ``use_nesterov``, ``beta1*m + (1-beta1)*g`` on the indexed rows and 0 elsewhere.

    Args:
        var, m, v: float32 C-contiguous arrays of one shape ``[rows, ...]``.
        beta1_power .. epsilon: Python or numpy scalars (rounded to float32).
        grad: float32 ``[indices.size, ...]``; indices: integer array.
        scratch: optional ``(g, tmp)`` float32 arrays of var's shape (allocated when None).

    Returns:
        ``(var, m, v)``, the arrays given.

    Raises:
        ValueError: a dtype other than float32, or shapes that do not match.
    """
    arrays = (var, m, v, grad)
    if any(np.asarray(a).dtype != F32 for a in arrays):
        raise ValueError("var, m, v and grad must be float32")
    if not (var.shape == m.shape == v.shape) or grad.shape[1:] != var.shape[1:]:
        raise ValueError("var, m, v must share a shape and grad must have its rows' shape")
    rows = var.shape[0]
    width = int(np.prod(var.shape[1:], dtype=np.int64))
    idx = np.asarray(indices).reshape(-1).astype(np.intp, copy=False)
    if idx.size != grad.shape[0]:
        raise ValueError(f"indices has {idx.size} elements, grad has {grad.shape[0]} rows")
    g, tmp = scratch if scratch is not None else (np.empty_like(var), np.empty_like(var))
    g.fill(0)
    keep = (idx >= 0) & (idx < rows)
    ki, kg = idx[keep], grad.reshape(-1, width)[keep]
    flat = g.reshape(-1)
    for r0 in range(0, ki.size, 1024):
        ci = ki[r0:r0 + 1024]
        el = (ci[:, None] * width + np.arange(width, dtype=np.intp)).reshape(-1)
        np.add.at(flat, el, kg[r0:r0 + 1024].reshape(-1))
    f = np.float32
    b1, b2, eps = f(beta1), f(beta2), f(epsilon)
    lr_t = f(lr) * np.sqrt(f(1) - f(beta2_power)) / (f(1) - f(beta1_power))
    np.multiply(m, b1, out=m)
    np.multiply(g, f(1) - b1, out=tmp)
    np.add(m, tmp, out=m)
    np.multiply(v, b2, out=v)
    np.multiply(g, f(1) - b2, out=tmp)
    np.multiply(tmp, g, out=tmp)
    np.add(v, tmp, out=v)
    if use_nesterov:                       # M = beta1*m + (1-beta1)*g on indexed rows, else 0
        hit = np.zeros(rows, bool)
        hit[ki] = True
        np.multiply(m, b1, out=tmp)
        np.multiply(g, f(1) - b1, out=g)
        np.add(tmp, g, out=g)
        g[~hit] = 0
        num = g
    else:
        num = m
    np.sqrt(v, out=tmp)
    np.add(tmp, eps, out=tmp)
    np.multiply(num, lr_t, out=g)          # g is free (num is m) or is num itself
    np.divide(g, tmp, out=g)
    np.subtract(var, g, out=var)
    return var, m, v


def add_numpy(x, y, out):
    """numpy's add of two arrays of one dtype into ``out`` (``np.add(x, y, out=out)``); for
    half, numpy computes each element in float32 and rounds it to half."""
    return np.add(x, y, out=out)


def add_torch(x, y, out):
    """``torch.add(x, y, out=out)`` on the numpy arrays' memory. Raises ImportError without
    torch."""
    import torch
    torch.add(torch.from_numpy(x), torch.from_numpy(y), out=torch.from_numpy(out))
    return out


# -- Softmax (kernels/softmax/golden.py) --------------------------------------------------------
def softmax_numpy(x, dim: int = -1, out=None, scratch=None):
    """``exp(x - max) / sum(exp(x - max))`` along ``dim`` in float32 numpy.

    Args:
        x: float16 / bfloat16 / float32 array. out: optional array of x's shape to write,
            of the result dtype. scratch: optional float32 array of x's shape to work in.

    Returns:
        x cast to float32 once, the maximum along ``dim`` subtracted, ``np.exp`` and the
        division in place: that float32 array (the scratch), or ``out`` holding it rounded
        once to out's dtype.
    """
    x = np.asarray(x)
    t = np.empty(x.shape, F32) if scratch is None else scratch
    np.copyto(t, x, casting="unsafe")
    t -= t.max(axis=dim, keepdims=True)
    np.exp(t, out=t)
    t /= t.sum(axis=dim, keepdims=True)
    if out is None:
        return t
    np.copyto(out, t, casting="unsafe")
    return out


def softmax_torch(x, dim: int = -1):
    """``torch.softmax(x, dim, dtype=torch.float32)`` on x's memory, rounded back to x's
    dtype (CPU softmax on half computes in float32 either way); a numpy array. Raises
    ImportError without torch."""
    import torch
    xt = torch.from_numpy(x)
    return torch.softmax(xt, dim, dtype=torch.float32).to(xt.dtype).numpy()


# -- RmsNorm (kernels/rms_norm/golden.py) -------------------------------------------------------
def rms_norm_numpy(x, gamma, eps: float, out=None, scratch=None):
    """``y = x / sqrt(mean(x^2) + eps) * gamma`` over the last ``gamma.ndim`` dims, float32.

    Args:
        x: float16 / bfloat16 / float32 array; gamma: the shape of x's last dims.
        out: optional array of x's shape for y, of the result dtype; scratch: optional
            float32 array of x's shape to work in.

    Returns:
        ``(y, rstd)``: y the float32 result (the scratch), or ``out`` holding it rounded
        once to out's dtype; rstd float32 of x's shape with the normalised dims set to 1
        (the operator's rstdOut).
    """
    x, gamma = np.asarray(x), np.asarray(gamma)
    n = int(np.prod(gamma.shape)) if gamma.ndim else 1
    t = np.empty(x.shape, F32) if scratch is None else scratch
    np.copyto(t, x, casting="unsafe")
    rows = t.reshape(-1, n)
    # sum of squares per row without a squared temporary
    rstd = np.einsum("ij,ij->i", rows, rows)
    rstd *= 1.0 / n
    rstd += eps
    np.sqrt(rstd, out=rstd)
    np.divide(1.0, rstd, out=rstd)
    rows *= rstd[:, None]
    rows *= gamma.astype(F32).reshape(-1)
    rstd_shape = x.shape[:x.ndim - gamma.ndim] + (1,) * gamma.ndim
    if out is None:
        y = t
    else:
        np.copyto(out, t, casting="unsafe")
        y = out
    return y, rstd.reshape(rstd_shape)


def rms_norm_torch(x, gamma, eps: float):
    """``torch.nn.functional.rms_norm`` (torch >= 2.4) on float32 copies of x and gamma,
    rounded back to x's dtype, or the same formula in torch ops (``x * rsqrt(mean(x^2) +
    eps) * gamma``) where rms_norm is absent; y as a numpy array. Raises ImportError
    without torch."""
    import torch
    xt = torch.from_numpy(x).float()
    gt = torch.from_numpy(np.asarray(gamma)).float()
    if hasattr(torch.nn.functional, "rms_norm"):
        y = torch.nn.functional.rms_norm(xt, list(gt.shape), weight=gt, eps=eps)
    else:
        dims = tuple(range(-gt.dim(), 0))
        y = xt * torch.rsqrt(xt.pow(2).mean(dims, keepdim=True) + eps) * gt
    return y.to(torch.from_numpy(x[:0]).dtype).numpy()


# -- Matmul (kernels/matmul/golden.py) ----------------------------------------------------------
def matmul_numpy(a, b, out=None):
    """``np.matmul`` of float32 operands (numpy has no fast half matmul: the benchmark casts
    half operands to float32 once, outside the timing), into ``out`` when given."""
    return np.matmul(a, b, out=out)


def matmul_torch(a, b, out=None):
    """``torch.matmul`` on the arrays' memory (float32), into ``out`` when given; a numpy
    array. Raises ImportError without torch."""
    import torch
    at, bt = torch.from_numpy(a), torch.from_numpy(b)
    if out is None:
        return torch.matmul(at, bt).numpy()
    torch.matmul(at, bt, out=torch.from_numpy(out))
    return out
