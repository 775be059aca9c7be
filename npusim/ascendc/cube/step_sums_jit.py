"""The compiled loops of :mod:`npusim.ascendc.cube.step_sums_numba` (numba, imported on
first use: importing numba costs most of a second, which a process that runs no Mmad
should not pay). The module docstring there gives what they compute and why the bytes
are numpy's.
"""
import math

import numpy as np
from numba import njit

_FAR = 1 << 20                          # the span of a row that never needs a check


@njit(cache=True)
def _exact_sum(a, b, nb, s, m, t, partials):
    """The exact sum of ``a[s, m, j] * b[nb, s, j, t]`` (finite, exact products) rounded
    once to float64, to nearest-even: the value ``math.fsum`` gives. Shewchuk's
    algorithm (Adaptive Precision Floating-Point Arithmetic, 1997): the running sum
    is kept as non-overlapping partials, each added term split by an error-free
    two-sum; then the partials are added from the largest, and a half-way result
    that the remaining partials push past the tie is rounded up."""
    count = 0
    for j in range(a.shape[2]):
        x = a[s, m, j] * b[nb, s, j, t]
        kept = 0
        for i in range(count):
            y = partials[i]
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                partials[kept] = lo
                kept += 1
            x = hi
        partials[kept] = x
        count = kept + 1
    i = count - 1
    hi = partials[i]
    lo = 0.0
    while i > 0:
        i -= 1
        x = hi
        y = partials[i]
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            break
    # lo: the rounding error of hi; what lies below it (partials[i - 1]) decides a tie
    if i > 0 and ((lo < 0.0 and partials[i - 1] < 0.0) or
                  (lo > 0.0 and partials[i - 1] > 0.0)):
        y = lo * 2.0
        x = hi + y
        if y == x - hi:
            hi = x
    return hi

@njit(cache=True)
def _figures(bits_a, bits_b, mbits, emin, by_bits, lk, pow2):
    """The figures of one member's rows of A and columns of B, from the bits of their
    float64 values (``bits_a`` (S, M, k0), ``bits_b`` (blocks, S, k0, width): int64
    views; every value of the three types is a normal float64 or zero): ``top``
    (``|x| < 2**top``) and ``span`` (bits from ``top`` down to the last bit the type
    allows the smallest nonzero magnitude) of each row (S, M) and column (blocks, S,
    width), and the widest column of each block and step. A row of zeros, or one
    holding inf or NaN, gets a span ``_FAR`` below zero (it needs no check: its sums
    are 0, or not finite); without ``by_bits`` every other row spans 53 bits
    (checked). In place of the tops, the factors of the bound ``E >= e`` (as
    :func:`.step_sums._bounds` gives them: ``2**(top_A + 2 lk - 52)`` per row,
    ``2**top_B`` per column, ``pow2[e + 1074]`` being ``2.0**e``)."""
    S, M, k0 = bits_a.shape
    NBLK, _, _, NB = bits_b.shape
    ea = np.empty((S, M))
    sa = np.empty((S, M), np.int64)
    eb = np.empty((NBLK, S, NB))
    sb = np.empty((NBLK, S, NB), np.int64)
    widest = np.empty((NBLK, S), np.int64)
    hi = np.empty(NB, np.int64)
    lo = np.empty(NB, np.int64)
    mag = (1 << 63) - 1                      # all but the sign: |x| grows with it
    for s in range(S):
        for r in range(M):
            h = 0
            w = mag
            for j in range(k0):
                x = bits_a[s, r, j] & mag
                h = max(h, x)
                w = min(w, (x - 1) & mag)     # a zero wraps to the largest
            top, sa[s, r] = _span(h, w, mbits, emin, by_bits)
            ea[s, r] = pow2[max(top + 2 * lk - 52, -1074) + 1074]
    for nb in range(NBLK):
        for s in range(S):
            for t in range(NB):
                hi[t] = 0
                lo[t] = mag
            for j in range(k0):
                for t in range(NB):
                    x = bits_b[nb, s, j, t] & mag
                    hi[t] = max(hi[t], x)
                    lo[t] = min(lo[t], (x - 1) & mag)
            w = -_FAR
            for t in range(NB):
                top, sb[nb, s, t] = _span(hi[t], lo[t], mbits, emin, by_bits)
                eb[nb, s, t] = pow2[top + 1074]
                w = max(w, sb[nb, s, t])
            widest[nb, s] = w
    return ea, sa, eb, sb, widest

@njit(cache=True)
def _span(hi, lo, mbits, emin, by_bits):
    """``(top, span)`` of a row whose largest magnitude has the bits ``hi`` and whose
    smallest nonzero one the bits ``lo + 1`` (float64, sign cleared)."""
    e_hi = hi >> 52
    if hi == 0 or e_hi == 0x7FF:             # zeros; inf or NaN
        return 0, -_FAR
    top = e_hi - 1022                        # |x| < 2**top
    if not by_bits:
        return top, 53
    return top, top - (max(((lo + 1) >> 52) - 1023, emin) - mbits)

@njit(cache=True)
def _unsettled(r, i, nt, ea_m, sa_m, eb_s, sb_s, limit):
    """How many of the sums ``r[i, :nt]`` of a row (``ea_m``, ``sa_m``: its figures) and
    the columns of a step (``eb_s``, ``sb_s``: theirs) :func:`_settle` would compute again:
    those neither exact by their bits nor rounded alike, and finite. One pass that
    vectorises (``r`` read with its constant row pitch, no stores), compiled without
    fastmath like :func:`_settle`, which runs only where this is not 0."""
    bad = 0
    for t in range(nt):
        x = r[i, t]
        e = ea_m * eb_s[t]
        bad += ((np.float32(x - e) != np.float32(x + e)) & (abs(x) < math.inf)
                & (sa_m + sb_s[t] > limit))
    return bad


@njit(cache=True)
def _settle(a, b, nb, s, m, limit, ea, sa, eb, sb, r):
    """The sums ``r[t]`` of row ``m`` of step ``s``, columns ``t`` of block ``nb``
    (``b``: (blocks, S, k0, width)) whose fp32 rounding is not shown to be the exact
    sum's, replaced by that (an fp32 value, held exactly in float64). A sum is shown
    (module docstring) when its row and column are exact by their bits (``sa + sb <=
    limit``), or ``fp32(r - E) == fp32(r + E)`` for ``E = ea * eb``, or it is not
    finite. One pass that only counts (it vectorises), then the few again."""
    bad = 0
    for t in range(r.shape[0]):
        x = r[t]
        e = ea[s, m] * eb[nb, s, t]
        bad += ((np.float32(x - e) != np.float32(x + e)) & (abs(x) < math.inf)
                & (sa[s, m] + sb[nb, s, t] > limit))
    if bad == 0:
        return
    partials = np.empty(a.shape[2] + 1)
    for t in range(r.shape[0]):
        x = r[t]
        e = ea[s, m] * eb[nb, s, t]
        if ((np.float32(x - e) != np.float32(x + e)) and abs(x) < math.inf
                and sa[s, m] + sb[nb, s, t] > limit):
            r[t] = np.float32(_exact_sum(a, b, nb, s, m, t, partials))

#: columns of B per block (the loop's operand has blocks of exactly this width, the last
#: one padded with zeros: a constant row pitch is what lets the compiler vectorise
#: :func:`_tile_pass`); a block of a step is 16 KiB of float64 (k0 16)
WIDTH = 128
#: rows of A a tile takes at once: each vector of B loaded serves this many rows
_MR = 3
#: k values a pass over a tile's columns adds: its rows' A values (3 x 4) stay in registers
_KC = 4


@njit(inline="always")
def _tile_pass(bq, a0, a1, a2, c, nt, r, first):
    """Adds ``ai[c + j] * bq[j, t]``, ``j < 4``, to ``r[i, t]`` (``first``: sets it to
    them) for the tile's three rows of A (``a0`` .. ``a2``, k0 values each) and the first
    ``nt`` columns of ``bq``, rows ``c .. c + 3`` of the step's block of B (row pitch
    :data:`WIDTH`): one chain of multiply-adds per sum, in k order (any order would do:
    :mod:`.step_sums_numba`). The compiler vectorises over the columns, with the pass's
    twelve values of A in registers: per vector of four columns four loads of B, the
    three rows' partial sums read and written, twelve multiply-adds (with all
    sixteen k in one pass the values of A do not fit in the registers, and their loads
    cost more than the arithmetic)."""
    p0, p1, p2, p3 = a0[c], a0[c + 1], a0[c + 2], a0[c + 3]
    q0, q1, q2, q3 = a1[c], a1[c + 1], a1[c + 2], a1[c + 3]
    u0, u1, u2, u3 = a2[c], a2[c + 1], a2[c + 2], a2[c + 3]
    for t in range(nt):
        y0 = bq[0, t]
        if first:
            x0 = p0 * y0
            x1 = q0 * y0
            x2 = u0 * y0
        else:
            x0 = r[0, t] + p0 * y0
            x1 = r[1, t] + q0 * y0
            x2 = r[2, t] + u0 * y0
        y1 = bq[1, t]
        x0 += p1 * y1
        x1 += q1 * y1
        x2 += u1 * y1
        y2 = bq[2, t]
        x0 += p2 * y2
        x1 += q2 * y2
        x2 += u2 * y2
        y3 = bq[3, t]
        x0 += p3 * y3
        x1 += q3 * y3
        x2 += u3 * y3
        r[0, t] = x0
        r[1, t] = x1
        r[2, t] = x2


@njit(cache=True, fastmath={"contract"})
def _accumulate(a, b, init, has_init, out, mbits, emin, by_bits, lk, pow2):
    """``out[g, n // 16, m, n % 16]`` = fp32 ``init + step 0 + step 1 + ...`` for row
    m, column n of member g (``init``, of ``out``'s shape, read only when
    ``has_init``; it may be ``out``). ``a`` (G, S, M, k0) and ``b`` (G, blocks, S,
    k0, :data:`WIDTH`), C-contiguous float64; k0 16 or 8; column n is ``WIDTH *
    block + t``, the columns from N = 16 x ``out.shape[1]`` on zeros.

    Block by block of columns, step by step, three rows at a time: the rows' float64
    sums over the block in passes of four k (:func:`_tile_pass`: each vector of B
    loaded once for the three rows, the rows' values of A in registers, fused
    multiply-adds), while the step's block of B (16 KiB) stays in the first-level
    cache; each row's sums settled (:func:`_unsettled` counts those to compute again,
    :func:`_settle` computes them) and their fp32 values added to the block's
    accumulator, which goes to L0C's NZ order once.

    ``fastmath`` is ``contract`` alone: the compiler may fuse a product and the add
    that takes it into one fused multiply-add, ``fma(x, y, z) = round(x * y + z)``.
    The products of half, bfloat16 and float values are exact in float64, so that is
    ``round(round(x * y) + z)``, what the separate multiply and add give: the same
    sums, bit for bit (inf and NaN products alike: ``x * y`` is then the same inf or
    NaN either way). No reassociation (``reassoc``: the order of the adds stays the
    source's, though any order would do), no assumption that values are finite
    (``nnan``, ``ninf``: the checks' ``abs(x) < inf`` and NaN comparisons keep their
    IEEE meaning); :func:`_figures`, :func:`_unsettled`, :func:`_settle` and
    :func:`_exact_sum` are compiled without any.

    Returns whether an element of ``out`` is NaN (the loop writes every one: Mmad makes
    NaNs canonical only when there is one, with no pass over C to look for them)."""
    G, S, M, k0 = a.shape
    NBLK = b.shape[1]
    N = out.shape[1] * 16
    bflat = b.reshape(-1)
    r = np.empty((_MR, WIDTH))
    c = np.empty((M, WIDTH), np.float32)
    zero = np.float32(0.0)
    limit = 53 - lk
    nan = False
    for g in range(G):
        ag, bg = a[g], b[g]
        ea, sa, eb, sb, widest = _figures(ag.view(np.int64), bg.view(np.int64), mbits,
                                          emin, by_bits, lk, pow2)
        for nb in range(NBLK):
            nt = min(WIDTH, N - nb * WIDTH)              # the block's columns of C
            for s in range(S):
                bo = ((g * NBLK + nb) * S + s) * k0 * WIDTH
                bp = bflat[bo:bo + k0 * WIDTH].reshape((k0, WIDTH))
                for m0 in range(0, M, _MR):
                    # the last tile's missing rows repeat its last row (sums not used)
                    a0, a1 = ag[s, m0], ag[s, min(m0 + 1, M - 1)]
                    a2 = ag[s, min(m0 + 2, M - 1)]
                    _tile_pass(bp[0:_KC], a0, a1, a2, 0, nt, r, True)
                    for c0 in range(_KC, k0, _KC):
                        _tile_pass(bp[c0:c0 + _KC], a0, a1, a2, c0, nt, r, False)
                    for i in range(min(_MR, M - m0)):
                        m = m0 + i
                        ri = r[i, :nt]
                        if (sa[s, m] + widest[nb, s] > limit  # not every sum exact by bits
                                and _unsettled(r, i, nt, ea[s, m], sa[s, m], eb[nb, s],
                                               sb[nb, s], limit)):
                            _settle(ag, bg, nb, s, m, limit, ea, sa, eb, sb, ri)
                        if s > 0:
                            for t in range(nt):
                                c[m, t] = c[m, t] + np.float32(ri[t])
                        elif has_init:  # as numpy: (init + step 0) + 0, then + steps
                            for u in range(nt // 16):
                                for t in range(16):
                                    c[m, u * 16 + t] = (init[g, nb * (WIDTH // 16) + u, m, t]
                                                        + np.float32(ri[u * 16 + t])) + zero
                        else:
                            for t in range(nt):
                                c[m, t] = np.float32(ri[t]) + zero
            for u in range(nt // 16):
                for m in range(M):
                    for t in range(16):
                        v = c[m, u * 16 + t]
                        nan |= v != v
                        out[g, nb * (WIDTH // 16) + u, m, t] = v
    return nan
