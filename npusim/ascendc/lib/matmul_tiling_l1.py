"""The L1 factors of Ascend C's host Matmul tiling for one core (MatmulApiTiling, and
MultiCoreMatmulTiling with SetSingleShape): given the base block and one core's shape, how
many base blocks of A and B each L1 load holds along M/N and K, and whether each side is
double-buffered. Restated from asc-devkit ``impl/adv_api/tiling/matmul/
matmul_tiling_algorithm.cpp`` (snapshot 82b89a1: ``GetL1Factors`` and the four
``L1Status*`` modes it compares, ``NeitherFullLoadDb/K/MN``, ``GetL1Size``,
``GetNearestFactor``, ``UpdateTiling``), described here in our own terms and computed by
our own code.

Units: M and N in 16-row fractals, K in C0 columns (32 B); ``mL0, nL0, kL0`` the base block
in those units; ``m, n, k`` the core's shape. One 16 x C0 fractal is 512 B. An L1 load of
A holds ``mAL1 x kAL1`` (mAL1 base blocks along M, kAL1 C0 columns), of B ``nBL1 x kBL1``;
``dbAL1``/``dbBL1`` 1 or 2. A bias adds ``nBL1 * nL0 * 16 * sizeof(bias) * dbBL1`` bytes.

The four modes (each gives factors and a "load size", the rows of A and B read from GM):

0. Both full: all of K and all of M and N in L1, single-buffered; load ``m + n``.
1. A full (all of K and M), B in ``kBL1`` runs of the rest of L1 (double-buffered if that
   fits), whole K -> as many N blocks as fit; load ``m + n`` (B's K whole) or
   ``m + mRepeat * n``.
2. B full, the mirror of 1.
3. Neither: both double-buffered if that fits (a side drops to one buffer otherwise); the
   K runs split L1 (the side whose K "leads" first: A when neither is transposed, B when
   both are, else the larger base), one capped at ``MIN_MTE1_LOAD``-derived steps, the
   larger a multiple of the smaller; then M and N blocks added M first or N first,
   whichever reads less.

Every count is cut to a divisor of its total (K steps, M or N repeats). Mode 3 is the
default; 1, 2, 0 replace it in that order when valid (its K wholly in L1) and reading no
more (on a tie, when it holds at least as many blocks). Then ``stepKa = kAL1 / kL0``,
``depthA1 = stepKa * mAL1 * dbAL1``, ``stepM = mAL1`` (B likewise).

Not restated (the caller keeps its own rule): inputs other than half/bfloat16, A
transposed with B not (an NZ-specific K split), TSCM operands, the UB ND2NZ path (A2/A3
inputs in GM need none), and the mapping of awkward core shapes to near ones with more
factors (``MapShape``/``FindBestSingleCore``): the core's shape is taken as is.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["L1Factors", "library_l1_factors"]

_FRACTAL = 512              # bytes of one 16 x C0 fractal (16 rows x 32 B)
_MIN_MTE1_LOAD = 32


@dataclass
class L1Factors:
    """One candidate: K runs (C0 columns), M/N blocks, buffers, GM rows read."""

    k_a: int
    m_a: int
    db_a: int
    k_b: int
    n_b: int
    db_b: int
    load: int = 0


def _ceil(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _nearest_factor(total: int, v: int) -> int:
    """The largest divisor of ``total`` not above ``v`` (``v`` capped at ``total``)."""
    v = min(v, total)
    while v > 0 and total % v:
        v -= 1
    return v


class _Core:
    """The shape, base and L1 capacity one search works with."""

    def __init__(self, m, n, k, ml0, nl0, kl0, l1, bias_bytes, bias_on):
        self.m, self.n, self.k = m, n, k
        self.ml0, self.nl0, self.kl0 = ml0, nl0, kl0
        self.l1 = l1
        self.cw = 1 if bias_on else 0        # the bias's "channel-wise" rows in L1
        self.bias_bytes = bias_bytes
        self.m_rep, self.n_rep = _ceil(m, ml0), _ceil(n, nl0)
        self.all_k = _ceil(k, kl0)
        loop = _MIN_MTE1_LOAD // ((1 if nl0 == 1 else kl0) + (1 if kl0 == 1 else ml0))
        self.max_ka = max(loop, _ceil(_ceil(_MIN_MTE1_LOAD, ml0), kl0))
        self.max_kb = max(loop, _ceil(_ceil(_MIN_MTE1_LOAD, nl0), kl0))

    def size(self, f: L1Factors) -> int:
        a = f.m_a * self.ml0 * _FRACTAL * f.db_a * f.k_a
        b = f.n_b * self.nl0 * _FRACTAL * f.db_b * f.k_b
        return a + b + self.bias(f.n_b, f.db_b)

    def bias(self, n_b: int, db_b: int, cw: int | None = None) -> int:
        cw = self.cw if cw is None else cw
        return cw * n_b * self.nl0 * 16 * self.bias_bytes * db_b


def _both_full(c: _Core):
    f = L1Factors(_ceil(c.k, c.kl0) * c.kl0, c.m_rep, 1, _ceil(c.k, c.kl0) * c.kl0, c.n_rep, 1)
    if c.size(f) <= c.l1:
        return replace(f, load=c.m + c.n)
    return None


def _a_full(c: _Core):
    """Mode 1; the mirror of :func:`_b_full`."""
    f = L1Factors(_ceil(c.k, c.kl0) * c.kl0, c.m_rep, 1, c.kl0, 1, 1)
    if c.size(f) > c.l1:
        return None
    a_size = max(c.k, f.k_a) * max(f.m_a * c.ml0, c.m) * _FRACTAL
    b_room = c.l1 - a_size
    f.db_b = 2
    if c.size(f) > c.l1:
        f.db_b = 1
    k_b = min((b_room - c.bias(f.n_b, f.db_b)) // (f.n_b * c.nl0 * f.db_b * _FRACTAL), c.k)
    times = _nearest_factor(c.all_k, min(k_b // c.kl0, c.max_kb))
    f.k_b = times * c.kl0
    if f.k_b == c.k:
        per = f.k_b * c.nl0 * f.db_b * _FRACTAL + c.cw * c.nl0 * _FRACTAL
        f.n_b = _nearest_factor(c.n_rep, min(b_room // per, c.n_rep))
    bad = f.n_b == 0 or f.k_b == 0
    f.load = 2**31 - 1 if bad else c.m + (1 if f.k_b == c.k else c.m_rep) * c.n
    if f.k_b == c.k and f.n_b * c.nl0 == c.n:
        f.db_b = 1
    return f


def _b_full(c: _Core):
    f = L1Factors(c.kl0, 1, 1, _ceil(c.k, c.kl0) * c.kl0, c.n_rep, 1)
    if c.size(f) > c.l1:
        return None
    b_size = max(c.k, f.k_b) * max(f.n_b * c.nl0, c.n) * _FRACTAL
    a_room = c.l1 - b_size
    f.db_a = 2
    if c.size(f) > c.l1:
        f.db_a = 1
    bias = c.bias(f.n_b, f.db_b)
    k_a = min((a_room - bias) // (f.m_a * c.ml0 * f.db_a * _FRACTAL), c.k)
    times = _nearest_factor(c.all_k, min(k_a // c.kl0, c.max_ka))
    f.k_a = times * c.kl0
    if f.k_a == c.k:
        per = f.k_a * c.ml0 * f.db_a * _FRACTAL
        f.m_a = _nearest_factor(c.m_rep, min((a_room - bias) // per, c.m_rep))
    bad = f.m_a == 0 or f.k_a == 0
    f.load = 2**31 - 1 if bad else c.n + (1 if f.k_a == c.k else c.n_rep) * c.m
    if f.k_a == c.k and f.m_a * c.ml0 >= c.m:
        f.db_a = 1
    return f


def _buffers(c: _Core, f: L1Factors) -> None:
    """Mode 3's buffers: two each unless L1 is short (B drops first, then A); both
    double-buffered again when M has more than one block, K more than one step, and a
    whole-K B would not fit."""
    keep = f.k_b
    f.k_b = 2
    if c.size(f) > c.l1:
        f.db_b = 1
        if c.size(f) > c.l1:
            f.db_a = 1
    f.k_b = c.k
    both = c.m != c.ml0 and c.k > c.kl0 and c.size(f) > c.l1
    f.k_b = keep
    if both:
        f.db_a = f.db_b = 2
        if c.size(f) > c.l1:
            f.db_b = 1
            if c.size(f) > c.l1:
                f.db_a = 1


def _k_runs(c: _Core, f: L1Factors, lead: int) -> None:
    """Mode 3's K runs: the leading side (1: A, 2: B) takes what the other's one step
    leaves, then the other what the leader leaves (capped by its MTE1 limit); then the
    larger is cut to a multiple of the smaller that divides K."""
    if c.kl0 == c.k:
        return
    bias = c.bias(f.n_b, f.db_b)
    a_unit = f.m_a * c.ml0 * f.db_a * _FRACTAL
    b_unit = f.n_b * c.nl0 * f.db_b * _FRACTAL
    if lead == 1:
        f.k_b = c.kl0
        a_room = c.l1 - f.k_b * b_unit
        f.k_a = min((a_room - bias) // a_unit, c.k)
        f.k_a = _nearest_factor(c.all_k, max(f.k_a // c.kl0, 1)) * c.kl0
        b_room = c.l1 - f.k_a * a_unit
        f.k_b = min((b_room - bias) // b_unit, c.k)
        f.k_b = _nearest_factor(c.all_k, max(min(f.k_b // c.kl0, c.max_kb), 1)) * c.kl0
    else:
        f.k_a = c.kl0
        b_room = c.l1 - f.k_a * a_unit
        f.k_b = min((b_room - bias) // b_unit, c.k)
        f.k_b = _nearest_factor(c.all_k, max(f.k_b // c.kl0, 1)) * c.kl0
        a_room = c.l1 - f.k_b * b_unit
        f.k_a = min((a_room - bias) // a_unit, c.k)
        f.k_a = _nearest_factor(c.all_k, max(min(f.k_a // c.kl0, c.max_ka), 1)) * c.kl0
    if f.k_a > f.k_b and f.k_a % f.k_b:
        while f.k_a % f.k_b or (f.k_a != f.k_b and c.k % f.k_a):
            f.k_a -= 1
    if f.k_a < f.k_b and f.k_b % f.k_a:
        while f.k_b % f.k_a or (f.k_a != f.k_b and c.k % f.k_b):
            f.k_b -= 1


def _m_n_blocks(c: _Core, f: L1Factors) -> None:
    """Mode 3's M/N blocks: M first (A's blocks from what one B block leaves, then B's) or
    N first (the mirror, B then whole-K), the one reading less GM."""
    cw = c.cw + 1 if c.bias_bytes == 4 and c.cw else c.cw
    bias = cw * f.n_b * c.nl0 * 16 * 2 * f.db_b       # counted in half-words, as the library
    n_per = f.k_b * c.nl0 * f.db_b * _FRACTAL + cw * c.nl0 * _FRACTAL
    m_per = f.k_a * c.ml0 * f.db_a * _FRACTAL
    # M first
    mf = replace(f)
    a_room = c.l1 - f.k_b * c.nl0 * _FRACTAL * f.db_b
    mf.m_a = _nearest_factor(c.m_rep, max(min((a_room - bias) // m_per, c.m_rep), 1))
    b_room = c.l1 - f.k_a * mf.m_a * c.ml0 * _FRACTAL * f.db_a
    mf.n_b = _nearest_factor(c.n_rep, max(min((b_room - bias) // n_per, c.n_rep), 1))
    mf.load = c.m + c.n * _ceil(c.m, mf.m_a * c.ml0)
    # N first
    nf = replace(f)
    b_room = c.l1 - f.k_a * c.ml0 * _FRACTAL * f.db_a
    nf.n_b = _nearest_factor(c.n_rep, max(min((b_room - bias) // n_per, c.n_rep), 1))
    a_room = c.l1 - c.k * nf.n_b * c.nl0 * _FRACTAL * f.db_b
    nf.m_a = _nearest_factor(c.m_rep, max(min((a_room - bias * nf.n_b) // m_per, c.m_rep), 1))
    nf.load = c.m * _ceil(c.n, nf.n_b * c.nl0) + c.n
    a_whole, b_whole = f.k_a >= c.k, f.k_b >= c.k
    if a_whole and b_whole:
        pick = mf if nf.load > mf.load else nf
    elif a_whole:
        pick = replace(mf, n_b=1)
    elif b_whole:
        pick = replace(nf, m_a=1)
    else:
        pick = replace(f, m_a=1, n_b=1, load=c.m * _ceil(c.n, mf.n_b * c.nl0)
                       + c.n * _ceil(c.m, mf.m_a * c.ml0))
    f.m_a, f.n_b, f.load = pick.m_a, pick.n_b, pick.load


def _neither(c: _Core, lead: int) -> L1Factors:
    f = L1Factors(c.kl0, 1, 2, c.kl0, 1, 2)
    _buffers(c, f)
    _k_runs(c, f, lead)
    _m_n_blocks(c, f)
    return f


def library_l1_factors(t, ab, m: int, n: int, k: int, base_m: int, base_n: int,
                       base_k: int, units: tuple | None = None) -> tuple | None:
    """(stepM, stepN, stepKa, stepKb, depthA1, depthB1) as the library's GetL1Factors and
    UpdateTiling set them for tiling object ``t`` (A/B dtype ``ab``, one core's m x n x k
    in elements, the base block); None outside what this module restates."""
    if ab.itemsize != 2 or t.aType_.pos.name == "TSCM" or t.bType_.pos.name == "TSCM":
        return None
    a_t, b_t = t.aType_.isTrans, t.bType_.isTrans
    if a_t and not b_t:
        return None                    # the NZ-specific K split
    c0 = 16
    lead = 1 if not (a_t or b_t) else (2 if a_t and b_t else (1 if base_m > base_n else 2))
    bias_bytes = t._bias_itemsize() if t.isBias else 0
    # the bias rows count in L1 where L0C goes out through Fixpipe (isSupportL0c2Out)
    cm, cn, ck = units if units is not None else (_ceil(m, 16), _ceil(n, 16), _ceil(k, c0))
    c = _Core(cm, cn, ck, base_m // 16, base_n // 16,
              base_k // c0, t.bufferPool_["l1"], bias_bytes,
              t.isBias and t.soc.support_fixpipe)
    best = _neither(c, lead)
    cands = [(_a_full(c), "a"), (_b_full(c), "b"), (_both_full(c), "both")]
    for f, which in cands:
        if f is None:
            continue
        whole = {"a": f.k_a >= c.k, "b": f.k_b >= c.k, "both": f.k_a >= c.k and f.k_b >= c.k}
        if not whole[which]:
            continue
        if f.load < best.load or (f.load == best.load and f.m_a + f.n_b >= best.m_a + best.n_b):
            best = f
    step_ka, step_kb = _ceil(best.k_a, c.kl0), _ceil(best.k_b, c.kl0)
    depth_a1 = step_ka * best.m_a * best.db_a
    depth_b1 = step_kb * best.n_b * best.db_b
    step_n = min(best.n_b, depth_b1)
    return best.m_a, step_n, step_ka, step_kb, depth_a1, depth_b1
