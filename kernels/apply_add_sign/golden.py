"""Numpy golden of ApplyAddSign, written from the documented formula.

Source: the MindSpore API document mindspore.ops.ApplyAddSign (mindspore.cn) and ``docs/reference/operators.md`` §3
"Math" (the MindSpore CPU kernel)::

    m   = beta*m + (1 - beta)*g
    var = var - lr*(alpha + sign_decay*sign(g)*sign(m))*g      # m is the UPDATED m
    sign(x) = 1 if x > 0, -1 if x < 0, else 0                   # sign(0) = sign(NaN) = 0

``np.sign(NaN)`` is NaN, so sign is written with two comparisons (both false for NaN),
as in the CPU kernel and in TBE's ``_sign_compute``. The golden computes in float64 and
rounds once to the tensors' dtype; it does not follow the kernel's order of operations,
so comparing the two checks the kernel rather than repeating it.
"""
from __future__ import annotations

import numpy as np


def sign_cpu(x) -> np.ndarray:
    """``x > 0 ? 1 : (x < 0 ? -1 : 0)`` elementwise: 0 for 0, -0 and NaN."""
    x = np.asarray(x)
    with np.errstate(invalid="ignore"):
        return (x > 0).astype(np.float64) - (x < 0).astype(np.float64)


def apply_add_sign_golden(var, m, lr, alpha, sign_decay, beta, grad):
    """Return ``(var_out, m_out)`` of one AddSign step.

    Args:
        var, m, grad: numpy arrays of one shape and one dtype (float32 or float16); they
            are not modified.
        lr, alpha, sign_decay, beta: numbers (the scalars of the operator; pass them
            already rounded to the dtype to model a scalar tensor of that dtype).

    Returns:
        Two new arrays of var's dtype: the updated var and m.
    """
    dtype = np.asarray(var).dtype
    x, m0, g = (np.asarray(a, dtype=np.float64) for a in (var, m, grad))
    lr, alpha, sign_decay, beta = (float(s) for s in (lr, alpha, sign_decay, beta))
    with np.errstate(invalid="ignore", over="ignore"):
        m1 = beta * m0 + (1.0 - beta) * g
        update = (alpha + sign_decay * sign_cpu(g) * sign_cpu(m1)) * g
        x1 = x - lr * update
    return x1.astype(dtype), m1.astype(dtype)
