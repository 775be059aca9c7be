"""Numpy golden of ApplyFusedEmaAdam, written from the documented formula.

Source: the CANN aclnn API document aclnnApplyFusedEmaAdam (hiascend.com) (计算公式) and
``docs/reference/operators.md`` §1 "Math". The golden computes in float64 and rounds once to
the tensors' dtype at the end; it deliberately does not follow the kernel's order of
operations, so that comparing the two checks the kernel rather than repeating it.
"""
from __future__ import annotations

import numpy as np


def apply_fused_ema_adam_golden(grad, var, m, v, s, step, lr=1e-3, ema_decay=0.9999,
                                beta1=0.9, beta2=0.999, eps=1e-8, mode=1,
                                bias_correction=True, weight_decay=0.0):
    """Return ``(var_out, m_out, v_out, s_out)`` for one fused EMA-Adam step.

    Args:
        grad, var, m, v, s: numpy arrays of one shape and one dtype (float32, float16 or
            ml_dtypes.bfloat16). They are not modified.
        step: the optimizer step (int, >= 1 in normal use); ``beta**step`` uses it.
        lr, ema_decay, beta1, beta2, eps, weight_decay: floats.
        mode: 0 for L2 regularisation (grad += weight_decay*var), 1 for AdamW
            (update += weight_decay*var).
        bias_correction: divide m and v by (1 - beta**step) when true.

    Returns:
        Four new arrays of the inputs' dtype:
        ``var' = var - lr*((m'/bc1)/(sqrt(v'/bc2)+eps) [+ wd*var])``,
        ``m' = beta1*m + (1-beta1)*g``, ``v' = beta2*v + (1-beta2)*g*g``,
        ``s' = ema_decay*s + (1-ema_decay)*var'``.
    """
    dtype = np.asarray(var).dtype
    g, x, m0, v0, s0 = (np.asarray(a, dtype=np.float64) for a in (grad, var, m, v, s))
    if bias_correction:
        bc1 = 1.0 - beta1 ** float(step)
        bc2 = 1.0 - beta2 ** float(step)
    else:
        bc1 = bc2 = 1.0
    if mode == 0:
        g = g + weight_decay * x
    m1 = beta1 * m0 + (1.0 - beta1) * g
    v1 = beta2 * v0 + (1.0 - beta2) * g * g
    update = (m1 / bc1) / (np.sqrt(v1 / bc2) + eps)
    if mode == 1:
        update = update + weight_decay * x
    x1 = x - lr * update
    s1 = ema_decay * s0 + (1.0 - ema_decay) * x1
    return tuple(a.astype(dtype) for a in (x1, m1, v1, s1))
