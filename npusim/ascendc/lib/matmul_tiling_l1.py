"""The L1 factors of Ascend C's host Matmul tiling for one core (MatmulApiTiling, and
MultiCoreMatmulTiling with SetSingleShape): given the base block and one core's shape, how
many base blocks of A and B each L1 load holds along M/N and K, and whether each side is
double-buffered. Restated from asc-devkit ``impl/adv_api/tiling/matmul/
matmul_tiling_algorithm.cpp`` (snapshot 82b89a1: ``GetL1Factors`` and the four
``L1Status*`` modes it compares, ``NeitherFullLoadDb``, ``NeitherFullLoadK``,
``NeitherFullLoadKforND``, ``NeitherFullLoadKforNZ``, ``NeitherFullLoadMN``, ``GetL1Size``,
``GetABL1Const``, ``IsNeedAlign``, ``GetABL1KAlignValue``, ``CalL1MaxLen``,
``GetNearestFactor``, ``UpdateTiling``, ``UpdateDepthB1``, ``AdjustFloatL1Factor``),
described here in our own terms and computed by our own code.

Units: M and N in 16-row fractals, K in C0 columns (32 B of the A type); ``mL0, nL0, kL0``
the base block in those units; ``m, n, k`` the core's shape (as the base search maps it:
:func:`npusim.ascendc.lib.matmul_tiling_l0.core_axis`). One 16 x C0 fractal is 512 B. An L1
load of A holds ``mAL1 x kAL1`` (mAL1 base blocks along M, kAL1 C0 columns), of B
``nBL1 x kBL1``; ``dbAL1``/``dbBL1`` 1 or 2. The size of a load counts a float side (and an
int8 side moved transposed: A transposed, B not) twice, and a float k run rounded up to
an even number of C0 columns where it is moved transposed; a bias adds its row per N block.
Divisions truncate toward zero (C++ integers), also of negative room.

The four modes (each gives factors and a "load size", the rows of A and B read from GM):

0. Both full: all of K and all of M and N in L1, single-buffered; load ``m + n``.
1. A full (all of K and M), B in ``kBL1`` runs of the rest of L1 (double-buffered if that
   fits), whole K -> as many N blocks as fit; load ``m + n`` (B's K whole) or
   ``m + mRepeat * n``.
2. B full, the mirror of 1.
3. Neither: both double-buffered if that fits (a side drops to one buffer otherwise); the
   K runs split L1 -- the side whose K "leads" takes what one step of the other leaves (A
   when neither is transposed, B when both are, the larger base when only B is; the sizes
   count float and int8 rows as the load aligns them), the other what the leader leaves
   (capped at the ``MIN_MTE1_LOAD``-derived steps); with A transposed and B not, B's whole
   K if that fits, else one common run; the larger run a multiple of the smaller; then M
   and N blocks added M first or N first, whichever reads less.

Every count is cut to a divisor of its total (K steps, M or N repeats). Mode 3 is the
default; 1, 2, 0 replace it in that order when valid (its K run covering the real K in one
load) and reading no more (on a tie, when it holds at least as many blocks). Then
``stepKa = kAL1 / kL0``, ``depthA1 = stepKa * mAL1 * dbAL1``, ``stepM = mAL1`` (B likewise;
float B on A2: depthB1 shrinks when its k rows padded to 16 overflow L1, and with baseK 8
stepKb is 1).

Not restated (the caller keeps its own rule): TSCM operands, the UB ND2NZ path (310P only),
quantisation tensors, sparse and MX modes.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["library_l1_factors"]

_FRACTAL = 512              # bytes of one 16 x C0 fractal (16 rows x 32 B)
_MIN_MTE1_LOAD = 32
_INT_MAX = 2**31 - 1


def _ceil(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _align(a: int, b: int) -> int:
    return _ceil(a, b) * b


def _div(a: int, b: int) -> int:
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _nearest_factor(total: int, v: int) -> int:
    """The largest divisor of ``total`` not above ``v`` (``v`` capped at ``total``);
    0 or less stays."""
    while v > total or (v > 0 and total % v):
        v -= 1
    return v


@dataclass
class _Status:
    """One L1 candidate: K runs (C0 columns), M/N blocks, buffers, GM rows read."""

    k_a: int = 1
    k_b: int = 1
    m_a: int = 1
    n_b: int = 1
    db_a: int = 1
    db_b: int = 1
    a_size: int = 0
    b_size: int = 0
    load: int = 0
    cw: int = 0                 # bias rows per N block ("channel-wise" times)


class _Core:
    """The shape, base, types and L1 capacity one search works with."""

    def __init__(self, t, ab, m, n, k, ml0, nl0, kl0):
        self.m, self.n, self.k = m, n, k
        self.ml0, self.nl0, self.kl0 = ml0, nl0, kl0
        self.l1 = t.bufferPool_["l1"]
        isz = ab.itemsize
        self.isz = isz
        self.float, self.int8 = isz == 4, isz == 1
        self.a_t, self.b_t = t.aType_.isTrans, t.bType_.isTrans
        self.bias = t.isBias
        self.dtype_bias = t._bias_itemsize() if t.isBias else 0
        self.cw = 1 if (t.soc.support_fixpipe and t.isBias) else 0
        # a float side, or an 8-bit side moved transposed, takes twice the room
        self.a2 = 2 if (self.float or (self.int8 and self.a_t)) else 1
        self.b2 = 2 if (self.float or (self.int8 and not self.b_t)) else 1
        self.ka_al = 2 if self.float and self.a_t else 1
        self.kb_al = 2 if self.float and (self.a_t or not self.b_t) else 1
        self.m_rep, self.n_rep = _ceil(m, ml0), _ceil(n, nl0)
        self.all_times = _ceil(k, kl0)
        loop = _MIN_MTE1_LOAD // ((1 if nl0 == 1 else kl0) + (1 if kl0 == 1 else ml0))
        self.max_ka = max(loop, _ceil(_ceil(_MIN_MTE1_LOAD, ml0), kl0))
        self.max_kb = max(loop, _ceil(_ceil(_MIN_MTE1_LOAD, nl0), kl0))
        self.full_a = self.full_b = self.full_both = False

    def size(self, s: _Status) -> int:
        """Bytes of L1 one candidate takes (0 when a factor is not positive or too large)."""
        parts = [(s.m_a, self.ml0, _FRACTAL * s.db_a * self.a2, _align(s.k_a, self.ka_al)),
                 (s.n_b, self.nl0, _FRACTAL * s.db_b * self.b2, _align(s.k_b, self.kb_al))]
        total = 0
        for vals in parts:
            v = 1
            for x in vals:
                if v <= 0 or x <= 0 or v > _INT_MAX // x:
                    return 0
                v *= x
            total += v
        if s.cw > 0:
            cw_const = s.cw * 16 * s.db_b * self.dtype_bias
            v = s.n_b * self.nl0
            if v <= 0 or cw_const <= 0 or v > _INT_MAX // cw_const:
                return 0
            total += v * cw_const
        return min(total, _INT_MAX)

    def bias_bytes(self, s: _Status) -> int:
        return s.cw * s.n_b * self.nl0 * 16 * self.dtype_bias * s.db_b

    def max_len(self, room: int, s: _Status, align: int, axis: str) -> int:
        """How many K columns (``ka``/``kb``) or blocks (``m``/``n``) fit ``room`` bytes."""
        if axis == "ka":
            return _div(_div(room, s.m_a * self.ml0 * s.db_a * _FRACTAL), align) * align
        if axis == "kb":
            return _div(_div(room, s.n_b * self.nl0 * s.db_b * _FRACTAL), align) * align
        if axis == "m":
            return _div(room, _align(s.k_a, align) * self.ml0 * s.db_a * _FRACTAL)
        return _div(room, _align(s.k_b, align) * self.nl0 * s.db_b * _FRACTAL
                    + s.cw * self.nl0 * _FRACTAL)


def _both_full(c: _Core, s: _Status):
    s.k_a = _ceil(s.k_a, c.kl0) * c.kl0
    s.k_b = _ceil(s.k_b, c.kl0) * c.kl0
    if 0 < c.size(s) <= c.l1:
        c.full_both = True
        s.load = c.m + c.n
        return replace(s)
    return None


def _a_full(c: _Core, s: _Status):
    """Mode 1; :func:`_b_full` is its mirror."""
    s.k_a = _ceil(s.k_a, c.kl0) * c.kl0
    cur = c.size(s)
    if not 0 < cur <= c.l1:
        return None
    c.full_a = True
    s.a_size = (max(_align(c.k, c.ka_al), _align(s.k_a, c.ka_al))
                * max(s.m_a * c.ml0, c.m) * _FRACTAL)
    s.b_size = c.l1 - s.a_size
    s.db_b = 2
    if c.size(s) > c.l1:
        s.db_b = 1
    bias = c.bias_bytes(s)
    s.k_b = min(c.max_len(s.b_size - bias, s, c.kb_al, "kb"), c.k)
    times = _nearest_factor(c.all_times, min(_div(s.k_b, c.kl0), c.max_kb))
    s.k_b = times * c.kl0
    if s.k_b == c.k:
        s.n_b = _nearest_factor(c.n_rep, min(c.max_len(s.b_size, s, c.kb_al, "n"),
                                             c.n_rep))
    bad = s.n_b == 0 or s.k_b == 0
    s.load = _INT_MAX if bad else c.m + (1 if s.k_b == c.k else c.m_rep) * c.n
    if s.k_b == c.k and s.n_b * c.nl0 == c.n:
        s.db_b = 1
    return replace(s)


def _b_full(c: _Core, s: _Status):
    s.k_b = _ceil(s.k_b, c.kl0) * c.kl0
    cur = c.size(s)
    if not 0 < cur <= c.l1:
        return None
    c.full_b = True
    s.b_size = (max(_align(c.k, c.kb_al), _align(s.k_b, c.kb_al))
                * max(s.n_b * c.nl0, c.n) * _FRACTAL)
    s.a_size = c.l1 - s.b_size
    s.db_a = 2
    if c.size(s) > c.l1:
        s.db_a = 1
    bias = c.bias_bytes(s)
    s.k_a = min(c.max_len(s.a_size - bias, s, c.ka_al, "ka"), c.k)
    times = _nearest_factor(c.all_times, min(_div(s.k_a, c.kl0), c.max_ka))
    s.k_a = times * c.kl0
    if s.k_a == c.k:
        s.m_a = _nearest_factor(c.m_rep, min(c.max_len(s.a_size - bias, s, c.ka_al, "m"),
                                             c.m_rep))
    bad = s.m_a == 0 or s.k_a == 0
    s.load = _INT_MAX if bad else c.n + (1 if s.k_a == c.k else c.n_rep) * c.m
    if s.k_a == c.k and s.m_a * c.ml0 >= c.m:
        s.db_a = 1
    return replace(s)


def _buffers(c: _Core, s: _Status) -> None:
    """Mode 3's buffers: two each unless L1 is short (B drops first, then A); both
    double-buffered again when M has more than one block, K more than one step, and a
    whole-K B would not fit."""
    def shrink():
        if c.size(s) > c.l1:
            s.db_b = 1
            if c.size(s) > c.l1:
                s.db_a = 1
    keep = s.k_b
    s.k_b = 2
    shrink()
    s.k_b = c.k
    both = c.m != c.ml0 and c.k > c.kl0 and c.size(s) > c.l1
    s.k_b = keep
    if both:
        s.db_a = s.db_b = 2
        shrink()


def _k_runs_nd(c: _Core, s: _Status, lead: int) -> None:
    """Mode 3's K runs with a leading side (1: A, 2: B)."""
    bias = c.bias_bytes(s)
    align = 32 if c.int8 else 16
    c0 = 32 // c.isz
    align_m = _ceil(s.m_a * 16, align) * align
    align_n = _ceil(s.n_b * 16, align) * align
    align_k = _ceil(c.kl0 * c0, align) * align * c.isz      # bytes of one aligned k run
    if lead == 1:
        s.k_b = c.kl0
        wide_b = c.float or (c.a_t and c.int8)              # (as the library tests it)
        if wide_b:
            s.b_size = s.k_b * c.nl0 * 16 * align_k * s.n_b * s.db_b
        elif not c.b_t and c.int8:
            s.b_size = s.k_b * c.nl0 * align_k * align_n * s.db_b
        else:
            s.b_size = s.k_b * s.n_b * c.nl0 * _FRACTAL * s.db_b
        s.a_size = c.l1 - s.b_size
        unit = s.m_a * c.ml0 * 16 * s.db_a * 32
        s.k_a = c.k if unit == 0 else min(_div(s.a_size - bias, unit), c.k)
        times = _nearest_factor(c.all_times, max(_div(s.k_a, c.kl0), 1))
        s.k_a = times * c.kl0
        s.a_size = s.k_a * s.m_a * c.ml0 * _FRACTAL * s.db_a
        s.b_size = c.l1 - s.a_size
        if wide_b:
            s.k_b = min(_div(s.b_size - bias, s.n_b * c.nl0 * 16 * s.db_b * align_k), c.k)
        elif not c.b_t and c.int8:
            s.k_b = min(_div(s.b_size - bias, align_n * c.nl0 * s.db_b * align_k), c.k)
        else:
            s.k_b = min(_div(s.b_size - bias, s.n_b * c.nl0 * 16 * s.db_b * 32), c.k)
        times = _nearest_factor(c.all_times, max(min(_div(s.k_b, c.kl0), c.max_kb), 1))
        s.k_b = times * c.kl0
        return
    s.k_a = c.kl0
    wide_a = (c.a_t and c.float) or (not c.a_t and c.int8)
    if wide_a:
        s.a_size = s.k_a * s.m_a * c.ml0 * 16 * align_k * s.db_a
    elif c.a_t and c.int8:
        s.a_size = s.k_a * align_m * c.ml0 * align_k * s.db_a
    else:
        s.a_size = s.k_a * s.m_a * c.ml0 * _FRACTAL * s.db_a
    s.b_size = c.l1 - s.a_size
    s.k_b = min(_div(s.b_size - bias, s.n_b * c.nl0 * 16 * s.db_b * 32), c.k)
    times = _nearest_factor(c.all_times, max(_div(s.k_b, c.kl0), 1))
    s.k_b = times * c.kl0
    s.b_size = s.k_b * s.n_b * c.nl0 * _FRACTAL * s.db_b
    s.a_size = c.l1 - s.b_size
    if wide_a:
        unit = s.m_a * c.ml0 * 16 * s.db_a * align_k
        s.k_a = c.k if unit == 0 else min(_div(s.a_size - bias, unit), c.k)
    elif c.a_t and c.int8:
        s.k_a = min(_div(s.a_size - bias, align_m * c.ml0 * s.db_a * align_k), c.k)
    else:
        unit = s.m_a * c.ml0 * 16 * s.db_a * 32
        s.k_a = c.k if unit == 0 else min(_div(s.a_size - bias, unit), c.k)
    times = _nearest_factor(c.all_times, max(min(_div(s.k_a, c.kl0), c.max_ka), 1))
    s.k_a = times * c.kl0


def _k_runs_common(c: _Core, s: _Status) -> None:
    """Mode 3's K runs with A transposed and B not: B's whole K if that fits with one A
    step, else one run for both."""
    s.k_b = c.k
    bias = c.bias_bytes(s)
    cur = c.size(s)
    if 0 < cur <= c.l1:
        s.b_size = _align(c.k, c.kb_al) * s.n_b * c.nl0 * _FRACTAL * s.db_b
        s.a_size = c.l1 - s.b_size
        s.k_a = min(c.max_len(s.a_size - bias, s, c.ka_al, "ka"), c.k)
        times = _nearest_factor(c.all_times, max(min(_div(s.k_a, c.kl0), c.max_ka), 1))
        s.k_a = times * c.kl0
        return
    per = _div(_div(c.l1 - bias, c.ml0 * _FRACTAL * s.db_a + 16 * c.nl0 * 32 * s.db_b),
               c.kl0) * c.kl0
    per = min(per, c.k)
    bias_rows = s.n_b * c.nl0 if c.bias else 0
    a_per, b_per = _align(per, c.ka_al), _align(per, c.kb_al)
    if c.float and ((s.m_a * c.ml0 * a_per * s.db_a + s.n_b * c.nl0 * b_per * s.db_b) * _FRACTAL
                    + bias_rows * 16 * c.dtype_bias * s.db_b > c.l1):
        per -= 1
    times = _nearest_factor(c.all_times, min(_div(per, c.kl0), max(c.max_ka, c.max_kb)))
    times = min(times, c.all_times)
    s.k_a = s.k_b = times * c.kl0


def _k_runs(c: _Core, s: _Status) -> None:
    if c.kl0 == c.k:
        return
    if not c.a_t and not c.b_t:
        lead = 1
    elif c.a_t and c.b_t:
        lead = 2
    elif not c.a_t:
        lead = 1 if c.ml0 > c.nl0 else 2
    else:
        lead = 0
    if lead:
        _k_runs_nd(c, s, lead)
    else:
        _k_runs_common(c, s)
    if s.k_a > s.k_b and s.k_a % s.k_b:
        while s.k_a % s.k_b or (s.k_a != s.k_b and c.k % s.k_a):
            s.k_a -= 1
    if s.k_a < s.k_b and s.k_b % s.k_a:
        while s.k_b % s.k_a or (s.k_a != s.k_b and c.k % s.k_b):
            s.k_b -= 1


def _m_n_blocks(c: _Core, s: _Status) -> _Status:
    """Mode 3's M/N blocks: M first (A's blocks from what one B block leaves, then B's) or
    N first (the mirror, B then whole-K), the one reading less GM."""
    if c.dtype_bias == 4 and s.cw > 0:
        s.cw += 1
    bias = s.cw * s.n_b * c.nl0 * 16 * 2 * s.db_b     # counted in half-words, as the library
    mf, nf = replace(s), replace(s)
    mf.b_size = _align(mf.k_b, c.kb_al) * c.nl0 * _FRACTAL * mf.db_b
    mf.a_size = c.l1 - mf.b_size
    mf.m_a = max(min(c.max_len(mf.a_size - bias, mf, c.ka_al, "m"), c.m_rep), 1)
    mf.m_a = _nearest_factor(c.m_rep, mf.m_a)
    mf.a_size = _align(mf.k_a, c.ka_al) * mf.m_a * c.ml0 * _FRACTAL * mf.db_a
    mf.b_size = c.l1 - mf.a_size
    mf.n_b = max(min(c.max_len(mf.b_size - bias, mf, c.kb_al, "n"), c.n_rep), 1)
    mf.n_b = _nearest_factor(c.n_rep, mf.n_b)
    mf.load = c.m + c.n * _ceil(c.m, mf.m_a * c.ml0)
    nf.a_size = _align(nf.k_a, c.ka_al) * c.ml0 * _FRACTAL * nf.db_a
    nf.b_size = c.l1 - nf.a_size
    nf.n_b = max(min(c.max_len(nf.b_size - bias, nf, c.kb_al, "n"), c.n_rep), 1)
    nf.n_b = _nearest_factor(c.n_rep, nf.n_b)
    nf.b_size = _align(c.k, c.kb_al) * nf.n_b * c.nl0 * _FRACTAL * nf.db_b
    nf.a_size = c.l1 - nf.b_size
    bias *= nf.n_b
    nf.m_a = max(min(c.max_len(nf.a_size - bias, nf, c.ka_al, "m"), c.m_rep), 1)
    nf.m_a = _nearest_factor(c.m_rep, nf.m_a)
    nf.load = c.m * _ceil(c.n, nf.n_b * c.nl0) + c.n
    a_whole, b_whole = s.k_a >= c.k, s.k_b >= c.k
    if a_whole and b_whole:
        return mf if nf.load > mf.load else nf
    if a_whole:
        return replace(mf, n_b=1)
    if b_whole:
        return replace(nf, m_a=1)
    return replace(s, m_a=1, n_b=1, load=c.m * _ceil(c.n, mf.n_b * c.nl0)
                   + c.n * _ceil(c.m, mf.m_a * c.ml0))


def _neither(c: _Core, s: _Status) -> _Status:
    _buffers(c, s)
    _k_runs(c, s)
    return _m_n_blocks(c, s)


def library_l1_factors(t, ab, m: int, n: int, k: int, base_m: int, base_n: int,
                       base_k: int, units: tuple | None = None,
                       k_total: int | None = None) -> tuple | None:
    """(stepM, stepN, stepKa, stepKb, depthA1, depthB1) as the library's GetL1Factors and
    UpdateTiling set them for tiling object ``t`` (A/B dtype ``ab``, one core's m x n x k
    in elements, the base block in elements; ``units``: the core's (m, n, k) as the base
    search maps them, else m, n, k in fractals / C0 columns; ``k_total``: the K the
    library reads for "K in one load", default k); None outside what this module
    restates."""
    if t.aType_.pos.name == "TSCM" or t.bType_.pos.name == "TSCM":
        return None
    c0 = 32 // ab.itemsize
    cm, cn, ck = units if units is not None else (_ceil(m, 16), _ceil(n, 16), _ceil(k, c0))
    ml0, nl0, kl0 = base_m // 16, base_n // 16, base_k // c0
    if min(ml0, nl0, kl0) <= 0 or base_m % 16 or base_n % 16 or base_k % c0:
        return None
    c = _Core(t, ab, cm, cn, ck, ml0, nl0, kl0)
    cw = c.cw
    both = _both_full(c, _Status(ck, ck, c.m_rep, c.n_rep, 1, 1, cw=cw))
    a_full = _a_full(c, _Status(ck, kl0, c.m_rep, 1, 1, 1, cw=cw))
    b_full = _b_full(c, _Status(kl0, ck, 1, c.n_rep, 1, 1, cw=cw))
    best = _neither(c, _Status(kl0, kl0, 1, 1, 2, 2, cw=cw))
    k_units = _ceil(k if k_total is None else k_total, c0)

    def one_load(run):
        return run <= 0 or _ceil(k_units, run) == 1
    for f, ok in ((a_full, a_full is not None and c.full_a and one_load(a_full.k_a)),
                  (b_full, b_full is not None and c.full_b and one_load(b_full.k_b)),
                  (both, both is not None and c.full_both and one_load(both.k_a)
                   and one_load(both.k_b))):
        if ok and (f.load < best.load
                   or (f.load == best.load and f.m_a + f.n_b >= best.m_a + best.n_b)):
            best = f
    step_ka, step_kb = _ceil(best.k_a, kl0), _ceil(best.k_b, kl0)
    depth_a1 = step_ka * best.m_a * best.db_a
    depth_b1 = step_kb * best.n_b * best.db_b
    if ab.itemsize == 4 and t.soc.short_soc_version == "Ascend910B":
        depth_b1 = _float_depth_b1(t, base_m, base_n, base_k, depth_a1, depth_b1)
    step_n = min(best.n_b, depth_b1)
    if ab.itemsize == 4 and base_k == 8:
        step_kb, depth_b1 = 1, step_n * best.db_b
    return best.m_a, step_n, step_ka, step_kb, depth_a1, depth_b1


def _float_depth_b1(t, base_m, base_n, base_k, depth_a1, depth_b1) -> int:
    """float B on A2: with its k rows padded to 16, depthB1 shrinks if L1 overflows (the
    library's sums are 16-bit)."""
    k16 = _ceil(base_k, 16) * 16 & 0xFFFF
    kn = k16 * base_n & 0xFFFF
    km = (k16 if t.aType_.isTrans else base_k) * base_m & 0xFFFF
    if kn and (depth_a1 * km + kn * depth_b1) * 4 > t.bufferPool_["l1"]:
        depth_b1 = max(1, base_n * base_k * depth_b1 // kn)
    return depth_b1
