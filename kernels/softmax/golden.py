"""Numpy golden of aclnnSoftmax, written from the documented formula.

Source: ``hicann/ops-nn: activation/softmax_v2/docs/aclnnSoftmax.md``::

    Softmax(x_i) = exp(x_i) / sum_j exp(x_j)        (along ``dim``)

"实际计算时，会使用减去输入最大值的方式防止浮点数运算的溢出问题" (the maximum is subtracted
first, which does not change the value). The l0 chain of aclnnSoftmax
(``op_api/aclnn_softmax.cpp``) is ``Contiguous -> SoftmaxV2 -> Cast(out dtype) -> ViewCopy``:
SoftmaxV2's result has self's dtype and is then cast to out's dtype. The golden computes
in float64, rounds once to self's dtype and then (if different) to out's dtype, so it
follows the documented chain and not the kernel's order of operations.
"""
from __future__ import annotations

import numpy as np


def softmax_golden(x, dim: int, out_dtype=None) -> np.ndarray:
    """Return the softmax of ``x`` along ``dim``.

    Args:
        x: numpy array (float16, ml_dtypes.bfloat16, float32 or float64), any shape; a 0-d
            array counts as one element (its softmax is 1). Not modified.
        dim: the axis, in ``[-ndim, ndim)`` (``[-1, 1)`` for 0-d).
        out_dtype: the result dtype (default: x's).

    Returns:
        A new array of x's shape: ``exp(x - max) / sum(exp(x - max))`` along ``dim``,
        rounded to x's dtype, then to ``out_dtype``.
    """
    x = np.asarray(x)
    out_dtype = x.dtype if out_dtype is None else np.dtype(out_dtype)
    x64 = x.astype(np.float64).reshape(x.shape if x.ndim else (1,))
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(x64, axis=dim, keepdims=True) if x64.size else x64
        e = np.exp(x64 - m)
        y = e / np.sum(e, axis=dim, keepdims=True)
    return y.reshape(x.shape).astype(x.dtype).astype(out_dtype)
