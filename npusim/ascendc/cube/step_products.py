"""The cube's per-step float64 sums of products, the same bits whatever BLAS the host has.

Mmad no longer uses this per-step rendering (a dgemm per step, chunk or slice): it takes
:mod:`npusim.ascendc.cube.step_sums`, one product of the whole tile whose elements are
checked, which gives these bits after the fp32 rounding on half and bfloat16 data; the
module stays as the reference tests/test_cube_step_sums.py holds the new one to.

Mmad sums each k fractal step's k0 products in float64 before rounding them to fp32
(:mod:`npusim.ascendc.cube.mmad`). A BLAS ``dgemm``/``dgemv`` adds them in an order of its
own (OpenBLAS's Haswell, Sandybridge and Nehalem kernels give three different results for
one 1 x 8 x 256 product of float32 values), and a float64 sum that is not exact depends on
the order. :func:`step_products` hands BLAS only sums that are exact, so that every order
gives the same bits. The products themselves are exact in float64 (float32 x float32 needs
48 bits).

* Spans. A row of A spans ``s_A`` bits from above its largest magnitude (``|a| <
  2**E``) down to the finest last bit its type allows its smallest nonzero element (a
  half's last bit is ``2**(e - 10)``, ``2**-24`` at least; bfloat16 ``2**(e - 7)``, float
  ``2**(e - 23)``); a column of B likewise ``s_B``. Every product of the row and the
  column is a multiple of the product of the two finest bits and below ``2**(s_A + s_B)``
  of them, so every partial sum of ``c`` products is exact when ``s_A + s_B + log2(c) <=
  53`` (the largest row and column of the step count).
* Exact as it is (``c = k0``): one ``dgemm``. Half and bfloat16 operands whose magnitudes
  in a row span less than about 2**12 take this path.
* Exact in chunks (``c`` = k0/2 or k0/4): a ``dgemm`` per chunk of k, the chunks' exact
  sums added in k order (for two chunks: the exact sum rounded once to float64). Half
  operands with a small element in a row (N(0,1) data, mostly) take this path.
* Otherwise (float32 operands, 24 bits each, mostly): A is cut into slices on a grid per
  row and step, the first ``rint(a / 2**(E - b)) * 2**(E - b)``, the next the same of
  the remainder on a grid ``2**-b`` finer, until nothing remains (each operation exact);
  ``b = 53 - log2(k0) - s_B``, so each slice's ``dgemm`` with B is exact. When B spans
  too much for that (more than 53 - log2(k0) - 8 bits) B is sliced too, both with half the
  bits. The slices' exact partials are added in float64 in a fixed order, the largest
  first (slice 0 x 0, 0 x 1, ..., 1 x 0, ...); rows or columns of a later slice that are
  all zero add nothing.
* Operands that hold inf or NaN: explicit float64 adds in k order.

Cost (host): the span test is six passes over the operands; the chunked and sliced paths
add one pass over the result per chunk or slice and a ``dgemm`` per slice pair (two to
four for float32 operands).
"""
from __future__ import annotations

import numpy as np

__all__ = ["step_products"]

_HIGH = 1 if np.little_endian else 0       # the 32-bit word of a float64 with its exponent

#: significand bits and smallest normal exponent of the cube's float input types
_FORMATS = {"float16": (11, -14), "bfloat16": (8, -126), "float32": (24, -126)}


def _spans(x: np.ndarray, axis: int, dtype) -> np.ndarray:
    """Per step (axis 0), the bits the widest row of ``x`` (float64 holding ``dtype``
    values) along ``axis`` spans (module docstring; 0 for zeros)."""
    p, emin = _FORMATS.get(np.dtype(dtype).name, (53, -1022))
    # biased exponents (0: zero), from the high 32-bit words (half the temporaries' size)
    e = ((x.view(np.uint32)[..., _HIGH::2] >> 20) & 0x7FF).view(np.int32)
    top = e.max(axis=axis)
    low = np.where(e == 0, 2047, e).min(axis=axis)
    # |x| < 2**(top - 1022); last bits >= 2**(max(low - 1023, emin) - (p - 1))
    span = (top - 1022) - (np.maximum(low - 1023, emin) - (p - 1))
    return np.maximum(span.max(axis=-1), 0)


def _slices(x: np.ndarray, axis: int, b) -> list:
    """x (float64, finite) as a sum of slices on grids per row along ``axis`` of ``b`` bits
    each (an int, or an array per step); exact: ``sum(slices) == x``."""
    top = np.maximum(x.max(axis=axis, keepdims=True), -x.min(axis=axis, keepdims=True))
    # E - b, with |x| < 2**E; an all-zero row: a grid that stays in the normal range
    # however many slices the other rows take (float32 values have E >= -148)
    e = np.maximum(((top.view(np.int64) >> 52) & 0x7FF) - 1022 - b, -300)
    inv = ((1023 - e) << 52).view(np.float64)              # 2**-(E-b)
    unit = ((1023 + e) << 52).view(np.float64)             # 2**(E-b)
    finer = ((1023 + np.asarray(b, dtype=np.int64)) << 52).view(np.float64)   # 2**b
    out, rem = [], x
    while True:
        s = np.rint(rem * inv)
        s *= unit
        out.append(s)
        rem = rem - s
        if not rem.any():
            return out
        inv *= finer
        unit /= finer


def step_products(a: np.ndarray, b: np.ndarray, dtype) -> np.ndarray:
    """``a @ b`` per step: ``a`` (S, M, k0) and ``b`` (S, k0, N) float64 holding values of
    ``dtype`` (float32, float16 or bfloat16); returns (S, M, N) float64, the same bits on
    every host (module docstring)."""
    k0 = int(a.shape[-1])
    log_k0 = max(k0 - 1, 1).bit_length()
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        with np.errstate(invalid="ignore"):     # inf/NaN: explicit adds in k order
            acc = a[..., :, 0:1] * b[..., 0:1, :]
            for j in range(1, k0):
                acc = acc + a[..., :, j:j + 1] * b[..., j:j + 1, :]
        return acc
    b_span = _spans(b, -2, dtype)
    need = int((_spans(a, -1, dtype) + b_span).max(initial=0))
    if need + log_k0 <= 53:
        return np.matmul(a, b)          # every partial sum exact: any order, these bits
    chunk = 1 << max(53 - need, 0)      # products whose partial sums stay exact
    if chunk >= 2 and k0 // chunk <= 4:
        # step by step: one step's partials at a time (a temporary of the whole result
        # per chunk costs more in page faults than the products themselves)
        out = np.empty(a.shape[:-1] + b.shape[-1:])
        for s in range(a.shape[0]):
            np.matmul(a[s, :, :chunk], b[s, :chunk], out=out[s])
            for j in range(chunk, k0, chunk):
                out[s] += a[s, :, j:j + chunk] @ b[s, j:j + chunk]
        return out
    limit = 53 - log_k0
    if b_span.max(initial=0) <= limit - 8:
        a_parts, b_parts = _slices(a, -1, (limit - b_span)[:, None, None]), [b]
    else:
        a_parts, b_parts = _slices(a, -1, limit // 2), _slices(b, -2, limit - limit // 2)
    out = np.empty(a.shape[:-1] + b.shape[-1:])
    for s in range(a.shape[0]):              # step by step: temporaries of one step's size
        np.matmul(a_parts[0][s], b_parts[0][s], out=out[s])
        for u, ap in enumerate(a_parts):
            for v, bp in enumerate(b_parts):
                if u or v:
                    _add_partial(out[s], ap[s], bp[s])
    return out


def _add_partial(out, ap, bp) -> None:
    """``out += ap @ bp`` for one step, exact per element (so any way of summing gives
    it); only the rows of ``ap`` (columns of ``bp``) that hold anything when they are few:
    a later slice is mostly zeros."""
    rows = np.flatnonzero(ap.any(axis=1))
    if len(rows) * 4 <= ap.shape[0]:
        out[rows] += ap[rows] @ bp
        return
    cols = np.flatnonzero(bp.any(axis=0))
    if len(cols) * 4 <= bp.shape[1]:
        out[:, cols] += ap @ bp[:, cols]
        return
    out += ap @ bp
