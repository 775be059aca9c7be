"""Numpy golden of aclnnRmsNorm, written from the documented formula.

Source: ``hicann/ops-nn: norm/rms_norm/docs/aclnnRmsNorm.md``::

    RmsNorm(x_i) = x_i / Rms(x) * gamma_i,   Rms(x) = sqrt(1/n * sum_i x_i^2 + epsilon)

over the last ``gamma.ndim`` dims of x (``gamma_shape = x_shape[n:]``), n their element
count. ``rstdOut`` is ``1 / Rms(x)``, FLOAT32, of x's rank with the normalised dims set
to 1 (doc: x (2,3,4,8), gamma (8) -> rstd (2,3,4,1)); ``yOut`` has x's dtype.

The golden computes in float64 and rounds once to each output's dtype.
"""
from __future__ import annotations

import numpy as np


def rstd_shape(x_shape, gamma_ndim: int) -> tuple:
    """rstdOut's shape: x's, with the last ``gamma_ndim`` dims set to 1 (doc parameter table)."""
    x_shape = tuple(int(d) for d in x_shape)
    return x_shape[:len(x_shape) - gamma_ndim] + (1,) * gamma_ndim


def rms_norm_golden(x, gamma, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(y, rstd)`` of RmsNorm.

    Args:
        x: numpy array (float16, ml_dtypes.bfloat16 or float32), 1-8 dims. Not modified.
        gamma: numpy array whose shape is the last ``gamma.ndim`` dims of x.
        epsilon: the documented epsilon (a double; default of the API 1e-6).

    Returns:
        ``y`` (x's shape and dtype) and ``rstd`` (float32, :func:`rstd_shape`).
    """
    x, gamma = np.asarray(x), np.asarray(gamma)
    g = gamma.ndim
    axes = tuple(range(x.ndim - g, x.ndim))
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        rstd = 1.0 / np.sqrt(np.mean(x64 * x64, axis=axes, keepdims=True) + float(epsilon))
        y = x64 * rstd * gamma.astype(np.float64)
    return y.astype(x.dtype), rstd.astype(np.float32).reshape(rstd_shape(x.shape, g))
