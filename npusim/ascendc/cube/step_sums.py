"""The cube's per-step sums, rounded to fp32, from one BLAS product of all the steps: the
same bits on every host.

Mmad sums each k fractal step's k0 products in float64 and rounds the sum once to fp32
(:mod:`npusim.ascendc.cube.mmad`). The value this module gives for a step is
``fp32(float64(exact sum of the k0 products))``: the exact sum rounded to float64 (as
``math.fsum`` rounds it), then to fp32. The products of half, bfloat16 and float values
are exact in float64 (float x float needs 48 bits).

A BLAS ``dgemm`` adds the products in an order of its own (OpenBLAS's x86 kernels differ),
and a float64 sum that is not exact depends on the order. Instead of handing BLAS only sums
that are exact (the per-step rendering, :mod:`npusim.ascendc.cube.step_products`: a dgemm
per step or per slice), one ``matmul`` computes every step of a tile (of several members of
a lockstep group) in whatever order the host's BLAS has, and each element is then shown to
be the value above, or computed again:

* Exact by its bits. A row of A is below ``2**top_A`` (above its largest magnitude) and on
  a grid of ``2**low_A`` (the last bit its type allows its smallest nonzero magnitude:
  half ``2**(e - 10)``, ``2**-24`` at least; bfloat16 ``2**(e - 7)``; float
  ``2**(e - 23)``); a column of B likewise. Every partial sum of an element of the row
  and the column is a multiple of ``2**(low_A + low_B)`` below ``k0 * 2**(top_A +
  top_B)``, so every order gives the exact sum when ``top_A - low_A + top_B - low_B +
  log2(k0) <= 53``: most half and bfloat16 data (a row's and a column's figures come from
  their elements' bits, a few integer passes over the operands).
* Rounded alike. For the other elements, any order's float64 sum ``r`` lies within
  ``e = (k0 - 1) u / (1 - (k0 - 1) u) * sum |p|`` of the exact sum (u = 2**-53; Higham,
  *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §4.2, for any order of the
  additions, with or without fused multiply-adds, as the products are exact), and
  ``sum |p| <= k0 * 2**(top_A + top_B)``. Rounding to float64 and then to fp32 is
  monotone, so when ``fp32(r - E)`` equals ``fp32(r + E)`` for a float64 ``E >= e``, the
  exact sum's float64-then-fp32 rounding is that value too. Only an element within ``E``
  of an fp32 rounding boundary fails (about 2**-20 of float data).
* Computed again: an element that fails both, by ``math.fsum`` of its k0 products.
* Operands that hold inf or NaN (often a kernel's padding rows, which L0A holds
  uninitialised): every element of their rows and columns is inf or NaN, the same in
  every order (NaN if a product is NaN or the products hold +inf and -inf, else the
  infinity; finite products cannot overflow float64). The checks leave them out, and
  they are summed again over whole steps by ``einsum`` (whose loops skip no zero
  product, as a BLAS may).

Where these bits differ from the per-step rendering's: nowhere for half and bfloat16 data
that it summed in one or two pieces (the exact sum rounded once, as here); for float data,
where its fixed-order sum of exact slices was not the exact sum rounded once to float64
and that float64 difference moved the fp32 rounding (it was within an ulp or two of it).

The sign of an exactly-zero step is the host's (BLAS may start from +0.0): :func:`mmad_steps`
makes every zero +0.0, as an accumulator started at +0.0 does [R: the simulator's choice].

Cost (host): the ``matmul``; per element of a half or bfloat16 product one cast to fp32,
of a float product three passes (``r -/+ E`` cast to fp32, a comparison; float rows are
all taken as wide: their low bits would show few exact pairs) and one to see that none
failed; the row and column figures (about 1/N and 1/M of the product's passes); an
fsum per element computed again.
Work arrays are kept between calls (:func:`_scratch`).

With numba installed (``pip install 'npusim[fast]'``), :func:`mmad_steps` and
:func:`rounded_step_sums` hand the whole computation to a compiled loop that gives these
same bytes (:mod:`npusim.ascendc.cube.step_sums_numba`; ``NPUSIM_NUMBA=0`` turns it off).
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from npusim.ascendc.cube import step_sums_numba as _fused

__all__ = ["mmad_steps", "rounded_step_sums"]

#: the magnitude bits, mantissa bits, exponent bias and all-ones exponent of each type
_FORMATS = {np.dtype(np.float16): (np.uint16, 10, 15, 31),
            np.dtype(ml_dtypes.bfloat16): (np.uint16, 7, 127, 255),
            np.dtype(np.float32): (np.uint32, 23, 127, 255)}
_NONFINITE = 30000          # the ``top`` of a row holding inf or NaN
_EMPTY = 30000              # minus the ``top`` and the ``low`` of a row of zeros


def _row_bits(x: np.ndarray, low: bool = True) -> tuple:
    """``(top, low)`` of each row of ``x`` (..., k, rows) along axis -2, int32 arrays:
    ``|x| < 2**top`` (:data:`_NONFINITE` with inf or NaN) and every element a multiple
    of ``2**low`` (the last bit of the smallest magnitude's binade: the type's precision,
    not the element's own bits); ``low`` False: ``low`` is ``top - 53`` (wider than any
    sum is exact over), :data:`_EMPTY` for a row of zeros."""
    uint, m, bias, emax = _FORMATS[x.dtype]
    v = np.bitwise_and(x.view(uint), (1 << (8 * x.itemsize - 1)) - 1)  # |x| grows with these
    hi = v.max(axis=-2).astype(np.int32)
    e_hi = hi >> m
    top = np.where(e_hi == emax, _NONFINITE, np.maximum(e_hi, 1) - bias + 1)
    top[hi == 0] = -_EMPTY
    if not low:
        return top, np.where(hi == 0, _EMPTY, top - 53)
    v -= 1                                    # zeros wrap to the largest: min() skips them
    lo = v.min(axis=-2) + 1                   # a row of zeros wraps back to 0
    lo = lo.astype(np.int32)
    low = np.maximum(lo >> m, 1) - bias - m
    return top, np.where(lo == 0, _EMPTY, low)


_SCRATCH: dict = {}

#: the float64 product of the steps (numpy's, that is the host BLAS's; a test puts other
#: summation orders here)
_MATMUL = np.matmul


def _scratch(key: str, shape, dtype=np.float64) -> np.ndarray:
    """A work array of ``shape`` kept from call to call (a fresh temporary of a few MiB
    costs more in page faults on a virtual machine than the arithmetic on it). Launches run
    one at a time (:data:`npusim.runlock.LOCK`) and an instruction does not yield, so one
    set serves every Mmad."""
    size = math.prod(shape)
    buf = _SCRATCH.get(key)
    if buf is None or buf.size < size or buf.dtype != dtype:
        buf = _SCRATCH[key] = np.empty(size, dtype)
    return buf[:size].reshape(shape)


def rounded_step_sums(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Per step, ``fp32(float64(exact a @ b))`` (module docstring).

    Args:
        a: (S, M, k0) of half, bfloat16 or float.
        b: (S, k0, N) of ``a``'s dtype.
        out: (S, M, N) float32 C-contiguous to write into, or None (a new array).

    Returns:
        ``out``: each step's exact sum rounded to float64, then to fp32, the same bits on
        every host, BLAS and thread count; an exactly-zero sum may be -0.0 or +0.0 (the
        host's; :func:`mmad_steps` makes it +0.0).
    """
    if out is None:
        out = np.empty(a.shape[:2] + b.shape[-1:], np.float32)
    if _fused.supports(a, b):        # the compiled loop, the same bits (step_sums_numba)
        return _fused.rounded_step_sums_fused(a, b, out)
    plan = _Plan(a, b)
    plan.steps(0, a.shape[0], out)
    return out


#: float64 elements of one ``matmul`` in :func:`mmad_steps` (members of a lockstep group
#: are taken together up to this: 2 MiB, which stays in cache)
_CHUNK = 1 << 18


#: from this many steps on, :func:`mmad_steps` adds them in their own row-major order (each
#: add one contiguous run) and writes L0C's NZ order once, rather than adding each onto the
#: NZ fractals (runs of 16 floats: per-run overhead times S)
_ND_STEPS = 4


def mmad_steps(a: np.ndarray, b: np.ndarray, init: np.ndarray | None,
               out: np.ndarray) -> np.ndarray:
    """Mmad's float result for each member: ``init + step 0 + step 1 + ...`` in fp32, k
    order, each step :func:`rounded_step_sums`'s (module docstring).

    Args:
        a: (G, S, M, k0) half, bfloat16 or float: member, step, row, k.
        b: (G, S, k0, N) of ``a``'s dtype.
        init: C's start, float32 of ``out``'s shape (it may be ``out`` itself: Mmad
            accumulating in L0C), or None for zeros.
        out: float32 (G, N / 16, M, 16), C in L0C's NZ order (column block, row,
            column), written.

    Returns:
        ``out``. A sum that is exactly zero is +0.0 (-0.0 from BLAS or from a -0.0 start
        becomes +0.0 at the first step).
    """
    if _fused.supports(a, b):        # the compiled loop, the same bits (step_sums_numba)
        return _fused.mmad_steps_fused(a, b, init, out)
    G, S, M, k0 = a.shape
    N = b.shape[-1]
    plan = _Plan(a.reshape(G * S, M, k0), b.reshape(G * S, k0, N))
    per = max(1, _CHUNK // (S * M * N))
    for g0 in range(0, G, per):
        g1 = min(G, g0 + per)
        p = plan.steps(g0 * S, g1 * S, _scratch("p", ((g1 - g0) * S, M, N), np.float32))
        p = p.reshape(g1 - g0, S, M * N)
        if S < _ND_STEPS:            # onto L0C's NZ fractals in place, the steps read as NZ
            p = p.reshape(g1 - g0, S, M, N // 16, 16).transpose(0, 1, 3, 2, 4)
            c = out[g0:g1]
        else:                        # in the steps' own (row-major) order, then NZ once
            c = _scratch("c", (g1 - g0, M * N), np.float32)
        if init is None:
            np.add(p[:, 0], np.float32(0), out=c)         # -0.0 + 0.0 is +0.0
        elif S < _ND_STEPS:
            np.add(init[g0:g1], p[:, 0], out=c)
            c += np.float32(0)
        else:
            nd = c.reshape(g1 - g0, M, N // 16, 16)
            np.add(init[g0:g1].transpose(0, 2, 1, 3), p[:, 0].reshape(nd.shape), out=nd)
            c += np.float32(0)
        for s in range(1, S):        # float32 adds in k order
            c += p[:, s]
        if S >= _ND_STEPS:
            out[g0:g1] = c.reshape(g1 - g0, M, N // 16, 16).transpose(0, 2, 1, 3)
    return out


class _Plan:
    """The per-row figures of all the steps of ``a`` (S, M, k0) and ``b`` (S, k0, N), and
    the elements that are not exact by them; :meth:`steps` computes a range of steps."""

    def __init__(self, a: np.ndarray, b: np.ndarray):
        self.a, self.b = a, b
        S, M, k0 = a.shape
        self.lk = lk = max(k0 - 1, 1).bit_length()          # ceil(log2(k0))
        # float data: every nonzero row is taken as wide (a float row spans 24 bits and
        # its exponents' range, so by its bits a pair is exact only when the two rows'
        # exponents range over 2 binades at most, which data seldom does): the rows' low
        # bits are not worth their passes; zero rows stay exact
        by_bits = a.dtype != np.float32
        # the reduced axis ahead of the rows' (a contiguous copy: numpy reduces a short
        # last axis row by row)
        ta, la = _row_bits(np.ascontiguousarray(a.transpose(0, 2, 1)), by_bits)
        tb, lb = _row_bits(np.ascontiguousarray(b), by_bits)
        span_a, span_b = ta - la, tb - lb
        self.bad_a, self.bad_b = bad_a, bad_b = ta >= _NONFINITE, tb >= _NONFINITE
        self.nonfinite = bool(bad_a.any() or bad_b.any())
        if self.nonfinite:            # rows / columns with inf or NaN: set apart
            ta, span_a = np.where(bad_a, -_EMPTY, ta), np.where(bad_a, -2 * _EMPTY, span_a)
            tb, span_b = np.where(bad_b, -_EMPTY, tb), np.where(bad_b, -2 * _EMPTY, span_b)
        self.ta, self.tb = ta, tb
        # the rows that may meet a column whose sums need not be exact, then their elements
        limit = 53 - lk
        rows = span_a + span_b.max(axis=1)[:, None] > limit
        n_rows = int(np.count_nonzero(rows))
        self.check_all = n_rows * 4 > rows.size   # many: check every element
        self.wide = None
        if n_rows and not self.check_all:
            s_r, m_r = np.nonzero(rows)
            j, n_i = np.nonzero(span_a[s_r, m_r][:, None] + span_b[s_r] > limit)
            self.wide = (s_r[j], m_r[j], n_i)             # in step order

    def steps(self, s0: int, s1: int, out: np.ndarray) -> np.ndarray:
        """``out`` (s1 - s0, M, N) float32: steps ``s0 .. s1 - 1``."""
        a64 = _scratch("a", (s1 - s0,) + self.a.shape[1:])
        a64[...] = self.a[s0:s1]
        b64 = _scratch("b", (s1 - s0,) + self.b.shape[1:])
        b64[...] = self.b[s0:s1]
        with np.errstate(invalid="ignore"):             # inf * 0: set apart below
            r = _MATMUL(a64, b64, out=_scratch("r", out.shape))   # any order: settled below
        ta, tb, lk = self.ta[s0:s1], self.tb[s0:s1], self.lk
        fails = None
        bad_a, bad_b = self.bad_a[s0:s1], self.bad_b[s0:s1]
        if self.check_all:
            fails = _check_all(out, r, ta, tb, lk, (bad_a, bad_b) if self.nonfinite else None)
        else:
            np.copyto(out, r, casting="same_kind")
            if self.wide is not None:
                s = self.wide[0]
                i0, i1 = np.searchsorted(s, (s0, s1))
                if i1 > i0:
                    fails = _check(r, (s[i0:i1] - s0, self.wide[1][i0:i1],
                                       self.wide[2][i0:i1]), ta, tb, lk)
        if fails is not None and len(fails[0]):
            if self.nonfinite and not self.check_all:    # inf/NaN elements are set below
                keep = ~(bad_a[fails[0], fails[1]] | bad_b[fails[0], fails[2]])
                fails = tuple(i[keep] for i in fails)
            _recompute(out, a64, b64, fails)
        if self.nonfinite:
            _nonfinite(out, a64, b64, bad_a, bad_b)
        return out


def _bounds(ta, tb, lk: int) -> tuple:
    """Factors of ``E >= e`` for rows with ``top`` ``ta`` and columns with ``tb``:
    ``E = 2**(ta + 2 lk - 52) * 2**tb`` (``(k0 - 1) u / (1 - (k0 - 1) u) * k0 < k0**2 *
    2**-52``), float64 powers of two (0 for zero rows and columns; the product exact)."""
    return np.ldexp(1.0, np.maximum(ta + 2 * lk - 52, -1074)), np.ldexp(1.0, tb)


def _check(r, idx, ta, tb, lk: int) -> tuple:
    """The elements ``idx`` of ``r`` not shown to round as their exact sums (an index
    tuple)."""
    s, m, n = idx
    rr = r[idx]
    ea, eb = _bounds(ta[s, m], tb[s, n], lk)
    e = ea * eb
    fails = (rr - e).astype(np.float32) != (rr + e).astype(np.float32)
    return s[fails], m[fails], n[fails]


def _check_all(out, r, ta, tb, lk: int, bad=None) -> tuple:
    """``out`` = fp32 of ``r`` where shown to round as the exact sum, every element
    checked, first against its row's largest bound (a broadcast, not a product per
    element), then the few that fail it against their own (:func:`_check`); returns the
    elements not shown. ``bad``: the (rows of ``a``, columns of ``b``) holding inf or NaN,
    whose elements the caller sets (:func:`_nonfinite`): never returned, so that a tile
    with poisoned padding rows takes no per-element path."""
    ea, eb = _bounds(ta, tb, lk)
    e = (ea * eb.max(axis=1)[:, None])[:, :, None]
    hi = np.add(r, e, out=_scratch("hi", r.shape, np.float32), casting="same_kind")
    np.subtract(r, e, out=out, casting="same_kind")       # float64 results, then fp32
    fails = np.not_equal(out, hi, out=_scratch("ne", r.shape, np.bool_))
    if bad is not None:
        s, m = np.nonzero(bad[0])
        fails[s, m, :] = False
        s, n = np.nonzero(bad[1])
        fails[s, :, n] = False
    if not fails.any():                                # the common case: one cheap pass
        empty = np.empty(0, np.intp)
        return empty, empty, empty
    rows = np.flatnonzero(fails.reshape(-1, r.shape[-1]).any(axis=1))
    j, n = np.nonzero(fails.reshape(-1, r.shape[-1])[rows])
    s, m = np.divmod(rows[j], r.shape[1])
    idx = (s, m, n)
    out[idx] = r[idx]                                  # fp32(r), checked again
    return _check(r, idx, ta, tb, lk)


def _recompute(out, a64, b64, idx) -> None:
    """``out[idx]``: fp32 of ``math.fsum`` of each element's products (the exact sum
    rounded once to float64)."""
    s, m, n = idx
    prods = a64[s, m, :] * b64[s, :, n]                  # (count, k0), exact
    out[idx] = np.array([math.fsum(p) for p in prods.tolist()]).astype(np.float32)


def _nonfinite(out, a64, b64, bad_a, bad_b) -> None:
    """The elements of rows of ``a`` and columns of ``b`` holding inf or NaN: every one of
    them is inf or NaN, the same in every order of the k0 additions (NaN if a product is
    NaN or the products hold +inf and -inf, else the infinity: finite products of these
    types cannot overflow float64). Computed by ``einsum``'s own loops (no BLAS, which may
    skip zeros and so miss an ``inf * 0``), over whole steps for the few row (column)
    positions that hold inf or NaN in any step, then kept where they do."""
    with np.errstate(invalid="ignore", over="ignore"):
        rows = np.flatnonzero(bad_a.any(axis=0))
        if len(rows):
            sums = np.einsum("smk,skn->smn", a64[:, rows, :], b64)
            where = bad_a[:, rows]
            sub = out[:, rows, :]
            sub[where] = sums[where]
            out[:, rows, :] = sub
        cols = np.flatnonzero(bad_b.any(axis=0))
        if len(cols):
            sums = np.einsum("smk,skn->smn", a64, b64[:, :, cols])
            where = np.broadcast_to(bad_b[:, None, cols], sums.shape)
            sub = out[:, :, cols]
            sub[where] = sums[where]
            out[:, :, cols] = sub
