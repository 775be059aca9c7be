"""Numpy golden of FusedSparseAdam, written from the documented algorithm.

Source: docs/reference/operators.md §4 "Algorithm" (MindSpore ``sparse_apply_adam_cpu_kernel.cc``)
and the seed ``mindspore.ops.FusedSparseAdam.txt``:

* duplicate indices are summed first; indices outside ``[0, var.shape[0])`` are dropped;
* ``lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)``;
* every row: ``m = beta1*m``, ``v = beta2*v`` (not lazy);
* indexed rows: ``m += (1-beta1)*g``, ``v += (1-beta2)*g*g``;
* every row: ``var -= lr_t * M / (sqrt(v) + epsilon)`` with ``M = m``, or with useNesterov
  ``M = beta1*m + (1-beta1)*g`` on the indexed rows and ``M = 0`` on the others, whose var
  is thus unchanged (MindSpore 2.10's CPU kernel as measured; aclnn/ops/fused_sparse_adam.py).

The golden works in float64 and rounds once to float32; it does not follow the kernel's
order of operations.
"""
from __future__ import annotations

import numpy as np


def fused_sparse_adam_golden(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon,
                             grad, indices, use_nesterov: bool = False):
    """Return ``(var', m', v')`` as new float32 arrays (the inputs are not modified)."""
    var0 = np.asarray(var, dtype=np.float64)
    m0 = np.asarray(m, dtype=np.float64)
    v0 = np.asarray(v, dtype=np.float64)
    rows = var0.shape[0]
    g_in = np.asarray(grad, dtype=np.float64).reshape((-1,) + var0.shape[1:])
    idx = np.asarray(indices).astype(np.int64).reshape(-1)
    keep = (idx >= 0) & (idx < rows)
    g = np.zeros_like(var0)
    np.add.at(g, idx[keep], g_in[keep])
    hit = np.zeros(rows, bool)
    hit[idx[keep]] = True
    lr_t = lr * np.sqrt(1.0 - beta2_power) / (1.0 - beta1_power)
    m1 = beta1 * m0
    v1 = beta2 * v0
    m1[hit] += (1.0 - beta1) * g[hit]
    v1[hit] += (1.0 - beta2) * g[hit] * g[hit]
    M = m1
    if use_nesterov:
        M = np.where(hit.reshape((rows,) + (1,) * (var0.ndim - 1)),
                     beta1 * m1 + (1.0 - beta1) * g, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        var1 = var0 - lr_t * M / (np.sqrt(v1) + epsilon)
    return tuple(a.astype(np.float32) for a in (var1, m1, v1))
