"""Numpy golden of aclnnEmbeddingDenseBackward, written from the documented formula.

Source: docs/reference/operators.md §2 "PyTorch semantics / oracle" (aten ``embedding_dense_
backward``, CPU): ``counts[indices[i]]++`` over **all** indices; for every i with
``indices[i] != padding_idx``: ``grad_weight[indices[i]] += grad[i] * scale`` with
``scale = 1 / counts[indices[i]]`` when scale_grad_by_freq, 1 otherwise; grad_weight starts
at zero, so the padding row is exactly 0. ``padding_idx`` is compared as the raw integer:
a negative value matches nothing (the aclnn parameter is uint64, seed 参数说明).

The golden works in float64 and rounds once to the output dtype; it does not follow any
kernel's order of operations, so comparing with it checks the kernels. Indices of floating
types are converted to integers toward zero (the Cast to int32 the op applies, [R] for the
rounding), with NaN as 0.
"""
from __future__ import annotations

import numpy as np


def _as_int_indices(indices) -> np.ndarray:
    idx = np.asarray(indices)
    if idx.dtype.kind == "f" or idx.dtype.name == "bfloat16":
        x = np.nan_to_num(idx.astype(np.float64), nan=0.0)
        x = np.clip(np.trunc(x), -2.0 ** 31, 2.0 ** 31 - 1)
        return x.astype(np.int64).reshape(-1)
    return idx.astype(np.int64).reshape(-1)


def embedding_dense_backward_golden(grad, indices, num_weights: int, padding_idx: int,
                                    scale_grad_by_freq: bool, out_dtype=None) -> np.ndarray:
    """Return ``out`` of shape ``[num_weights, grad.shape[-1]]``.

    Args:
        grad: numpy array, >= 2-D, float32/float16/bfloat16; its leading dims flatten to
            ``indices.size`` rows.
        indices: numpy array of any integer, bool or float dtype; every value must lie in
            ``[0, num_weights)`` (ValueError otherwise).
        num_weights: rows of the result. padding_idx: the row that receives nothing (any
            int; negative or >= num_weights matches none). scale_grad_by_freq: divide each
            contribution by its index's count over all indices.
        out_dtype: result dtype (default grad's).

    Returns:
        A new array of ``out_dtype``; float64 sums rounded once.
    """
    grad = np.asarray(grad)
    E = grad.shape[-1]
    g = grad.reshape(-1, E).astype(np.float64)
    idx = _as_int_indices(indices)
    if idx.size and (idx.min() < 0 or idx.max() >= num_weights):
        raise ValueError(f"indices must lie in [0, {num_weights})")
    out = np.zeros((int(num_weights), E), dtype=np.float64)
    if idx.size:
        keep = idx != int(padding_idx)
        if scale_grad_by_freq:
            counts = np.bincount(idx, minlength=int(num_weights)).astype(np.float64)
            g = g / counts[idx][:, None]
        np.add.at(out, idx[keep], g[keep])
    return out.astype(out_dtype if out_dtype is not None else grad.dtype)


def embedding_dense_backward_fp32_add_at(grad, indices, num_weights: int) -> np.ndarray:
    """The plain float32 ``np.add.at`` reference the benchmark times (no padding, no
    scaling): what a numpy user would write."""
    grad = np.asarray(grad, dtype=np.float32)
    out = np.zeros((int(num_weights), grad.shape[-1]), dtype=np.float32)
    np.add.at(out, np.asarray(indices).reshape(-1), grad.reshape(-1, grad.shape[-1]))
    return out
