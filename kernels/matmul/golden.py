"""Numpy golden of aclnnMatmul / aclnnMm / aclnnBatchMatMul, written from the formula.

Source: ``hicann/ops-nn: matmul/mat_mul_v3/docs/aclnnMatmul.md`` (and ``aclnnMm.md``,
``matmul/batch_mat_mul_v3/docs/aclnnBatchMatMul.md``)::

    result = self @ mat2

with torch.matmul's shape rules (aclnnMatmul.md 约束说明 "一维输入的shape推导": a 1-D self
``(K)`` is ``(1, K)`` and the added dim is removed from the result, a 1-D mat2 ``(K)`` is
``(K, 1)`` likewise, two 1-D inputs give a scalar; the batch dims broadcast). The product
is computed in float64 from the inputs as given (after the promotion of mixed dtypes, which
is exact) and rounded once to the output dtype (the cube accumulates in float32 and rounds
once at Fixpipe: docs/reference/hardware.md §2.1 numerics; the golden does not follow the
cube's order of additions, so a kernel result differs from it by the float32
accumulation only).
"""
from __future__ import annotations

import numpy as np


def matmul_golden(self, mat2, out_dtype=None, compute_dtype=None) -> np.ndarray:
    """Return ``self @ mat2`` (numpy/torch matmul shape rules), rounded to ``out_dtype``.

    Args:
        self, mat2: numpy arrays (float16, ml_dtypes.bfloat16, float32), 1-D or more, with
            matching reduction dims and broadcastable batch dims. Not modified.
        out_dtype: the result's dtype (default: the promoted input dtype).
        compute_dtype: the dtype the inputs are rounded to before the product (cubeMathType
            USE_FP16 computes float32 inputs in float16; default: as given).

    Returns:
        A new array: the float64 product rounded once to ``out_dtype``.

    Raises:
        ValueError: the shapes do not match (numpy's message).
    """
    a, b = np.asarray(self), np.asarray(mat2)
    promoted = np.result_type(a.dtype, b.dtype)
    out_dtype = promoted if out_dtype is None else np.dtype(out_dtype)
    if compute_dtype is not None:
        a, b = a.astype(compute_dtype), b.astype(compute_dtype)
    result = np.matmul(a.astype(np.float64), b.astype(np.float64))
    return np.asarray(result).astype(out_dtype)
