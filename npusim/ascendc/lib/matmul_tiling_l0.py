"""The base-block search of Ascend C's host Matmul tiling for one core: which baseM x baseN x
baseK the library picks for a core's shape, and the shape it searches with. Restated from
asc-devkit ``impl/adv_api/tiling/matmul/matmul_tiling_algorithm.cpp`` (snapshot 82b89a1:
``Process`` (its one-core branch), ``FillParam``, ``GetL0Factors``, ``GetParasCombo``,
``GetL0FactorsCand``, ``GetTwoFactors``, ``GetBestValue``, ``GetL0bAlign``,
``GetFinalMkn``, ``GetLoadSize``, ``CheckBaseMNKL1Size``, ``SetBaseMNK``) and
``math_util.cpp`` (``MapShape``, ``FindBestSingleCore``, ``CheckFactorNumSatisfy``,
``GetFactorLayerCnt``), described here in our own terms and computed by our own code.

Units: M and N in 16-row fractals, K in C0 columns (32 B of the A type); a fractal of
16 x C0 is 512 B.

1. The core's shape. Each axis (rows / 16, K / C0) is kept when it has enough divisors
   (at most 8, or more than two divisor "layers" up to 64 -- the largest divisor count
   among its divisors -- and, above 128, more than four counting 65..128 too); otherwise
   it moves, one unit at a time, toward the next power of two above it (doubled: the
   "mapped" shape, 16..1024, capped at 2048) until an axis with enough divisors is found.
   So 272 rows (17 fractals, a prime) are searched as 18 fractals; 1000 rows (63) stay.
2. Limits: ``maxMk = min(L1, L0A / 2) / 512`` fractals of A per base (likewise B with
   L0B), ``maxMn = L0C / 1024`` output fractals (one L0C buffer: the default template's
   l0cDB is off), at most 64 fractals along the major axis, starting near 11; with a bias
   on a Fixpipe SoC the N side is capped by the bias table (``BT / 64`` fractals: 16 on
   A2).
3. Candidates: twice, with M then N as the "major" axis (the second pass replaces the
   first's result whenever it finds one), the major factor is taken among two divisors of
   the axis around 11 and two of its largest power of two (``GetTwoFactors``: the first
   divisor above the start and divisors at or below it), int8 N rounded up to even; the
   minor factor likewise around ``maxMn / major``; k among divisors of K around the room
   left in L0A/L0B. float and int8 candidates whose two buffers overflow L0A/L0B are
   skipped.
4. Each candidate is scored: ``load`` (GM rows read: m + n when A or B fits L0 whole; with
   K whole the cheaper of reading A once or B once; else both repeated), MTE1 cycles
   ``max(6, mL0 kL0 512 / 256) + max(6, kL0 nL0 512 / 128)`` against Mmad cycles
   ``mL0 kL0 nL0``, L0C use, and the number of loads. A candidate replaces the best so
   far when it reads less, or (before any candidate hid its MTE1 behind the Mmad) its
   MTE1 is shorter than its Mmad; or reads the same with more Mmad work and no less
   work x L0C use; or the same work with fewer loads -- and, once one candidate has hidden
   its MTE1, only candidates that hide theirs; its A + B (+ bias) base must fit L1; an N
   of at least 16 fractals (8 for float) is not cut below that.
5. baseM = mL0 x 16, baseN = nL0 x 16, baseK = kL0 x C0; dbL0A = dbL0B = 2 (unless a fixed
   base needs more than half of L0A/L0B), dbL0C = 1.
"""
from __future__ import annotations

import numpy as np

__all__ = ["best_single_core", "core_axis", "library_l0_factors", "mapped_axis"]

_FRACTAL = 512
_BEST = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
_INT_MAX = 2**31 - 1
_F = np.float32


def _ceil(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _align(a: int, b: int) -> int:
    return _ceil(a, b) * b


def _mapped(shape: int) -> int:
    """Rule 1's power of two above ``shape`` (doubled), from 16; shapes below 16 stay."""
    seed = 16
    if shape < seed:
        return shape
    while seed < 1024:
        if seed < shape <= 2 * seed:
            break
        seed *= 2
    return 2 * seed


mapped_axis = _mapped


def _divisor_count(v: int, hi: int) -> int:
    return sum(1 for i in range(1, min(v, hi) + 1) if v % i == 0)


def _layers(v: int, lo: int, hi: int) -> int:
    """The largest divisor count among the divisors of ``v`` in [lo, hi]."""
    best = 0
    for f in range(hi, lo - 1, -1):
        if v % f == 0:
            best = max(best, _divisor_count(f, f + 1))
    return best


def _enough_divisors(v: int) -> bool:
    if v <= 8:
        return True
    l0 = _layers(v, 1, 64)
    l1 = _layers(v, 65, 128) if v > 128 else 0
    return not (l0 <= 2 or (v > 128 and l0 + l1 <= 4))


def best_single_core(units: int, mapped: int, cores: int) -> int:
    """One core's share of an axis of ``units`` split ``cores`` ways: ``ceil(units /
    cores)`` if it has enough divisors (rule 1), else the nearest length that does, moving
    toward the mapped axis's share ``ceil(mapped / cores)``."""
    if cores == 1 and _enough_divisors(units):
        return units
    v, target = _ceil(units, cores), _ceil(mapped, cores)
    while v != target:
        if _enough_divisors(v):
            return v
        v += 1 if v < target else -1
    return v


def core_axis(units: int) -> int:
    """Rule 1: the axis length (fractals or C0 columns) the one-core search uses."""
    return best_single_core(units, _mapped(units), 1)


def _best_value(v: int) -> int:
    """The largest power of two (from the table) not above ``v``; 1 below 2."""
    for i in range(1, len(_BEST)):
        if _BEST[i] > v:
            return _BEST[i - 1]
    return _BEST[-1]


def _two_factors(start: int, total: int, most: int) -> list[int]:
    """Rule 3's two divisors of ``total``: the first above ``start`` (up to ``most``), then
    those at or below ``start``, two in all."""
    out = []
    for up in range(start + 1, min(most, total) + 1):
        if total % up == 0:
            out.append(up)
            break
    for down in range(start, 0, -1):
        if len(out) == 2:
            break
        if total % down == 0:
            out.append(down)
    return out + [0] * (2 - len(out))


def _desc_unique(vals: list[int]) -> list[int]:
    return sorted(set(vals), reverse=True)


class _Search:
    """One pass of rule 3 and 4 over the candidates (the library's L0 status)."""

    def __init__(self, t, ab, cm, cn, ck, db_a, db_b):
        self.t, self.isz = t, ab.itemsize
        self.cm, self.cn, self.ck = cm, cn, ck
        pool = t.bufferPool_
        self.pool = pool
        self.db_a, self.db_b = db_a, db_b
        self.a910b = t.soc.short_soc_version in ("Ascend910B", "Ascend310B")
        self.bias_bt = bool(t.isBias and t.soc.support_fixpipe)
        self.bias_bytes = t._bias_itemsize() if t.isBias else 0
        self.float = self.isz == 4
        self.int8 = self.isz == 1
        self.best = None

    def reset(self):
        self.final = None               # (mL0, kL0, nL0)
        self.f_load, self.f_use, self.f_mul, self.f_loop = _INT_MAX, _F(0), 0, _INT_MAX
        self.using_mte1 = False

    def load_size(self, ml0, nl0, kl0) -> int:
        cm, cn, ck = self.cm, self.cn, self.ck
        if cm * ck * _FRACTAL <= self.pool["l0a"] or cn * ck * _FRACTAL <= self.pool["l0b"]:
            return cm + cn
        if kl0 >= ck:
            return min(cn + _ceil(cn, nl0) * cm, cm + _ceil(cm, ml0) * cn)
        return _ceil(cm, ml0) * cn + _ceil(cn, nl0) * cm

    def fits_l1(self, ml0, nl0, kl0) -> bool:
        t = self.t
        a = 0 if t.aType_.pos.name == "TSCM" else ml0 * kl0 * _FRACTAL
        b = 0 if t.bType_.pos.name == "TSCM" else nl0 * kl0 * _FRACTAL
        bias = nl0 * 16 * self.bias_bytes if (self.a910b and t.isBias) else 0
        return a + b + bias <= self.pool["l1"]

    def offer(self, ml0, nl0, kl0):
        """Rule 4 for one candidate."""
        use = _F(ml0 * nl0 * 1 * 256 * 4 * 1.0 / self.pool["l0c"])
        mte1 = max(6, ml0 * kl0 * _FRACTAL // 256) + max(6, kl0 * nl0 * _FRACTAL // 128)
        mul = ml0 * kl0 * nl0
        load = self.load_size(ml0, nl0, kl0)
        loop = (kl0 if nl0 != 1 else 1) + (ml0 if kl0 != 1 else 1)
        better = (self.final is None
                  or load < self.f_load or (mte1 < mul and not self.using_mte1)
                  or (load == self.f_load and mul > self.f_mul
                      and _F(mul) * use >= _F(self.f_mul) * self.f_use)
                  or (mul == self.f_mul and load == self.f_load and loop < self.f_loop))
        hides = (mte1 < mul) or not self.using_mte1
        reduce_dim = 8 if self.float else 16
        keeps_n = self.t.baseN != -1 or not (self.cn >= reduce_dim and nl0 < reduce_dim)
        if better and hides and self.fits_l1(ml0, nl0, kl0) and keeps_n:
            self.final = (ml0, kl0, nl0)
            self.f_load, self.f_use, self.f_mul, self.f_loop = load, use, mul, loop
            self.using_mte1 = self.using_mte1 or mte1 < mul

    def l0_fits(self, ml0, nl0, k0) -> bool:
        t, pool = self.t, self.pool
        if self.float:
            a = (_align(k0, 2) if t.aType_.isTrans else k0) * 32 * ml0 * 16 * 2
            b = (_align(k0, 2) if (t.aType_.isTrans or not t.bType_.isTrans) else k0) \
                * 32 * nl0 * 16 * 2
        elif self.int8:
            a = k0 * 32 * (_align(ml0, 2) if t.aType_.isTrans else ml0) * 16 * 2
            b = k0 * 32 * (nl0 if t.bType_.isTrans else _align(nl0, 2)) * 16 * 2
        else:
            return True
        return a <= pool["l0a"] and b <= pool["l0b"]

    def run(self, n_major: bool):
        """One pass (GetL0FactorsCand) with N (or M) the major axis."""
        t, pool = self.t, self.pool
        self.reset()
        max_mk = 64 if t.aType_.pos.name == "TSCM" else min(pool["l1"], pool["l0a"] // self.db_a) // _FRACTAL
        max_nk = 64 if t.bType_.pos.name == "TSCM" else min(pool["l1"], pool["l0b"] // self.db_b) // _FRACTAL
        max_mn = pool["l0c"] // 256 // 4
        bt_n = pool["bt"] // 16 // 4 if self.a910b else 64
        max_n = bt_n if self.bias_bt else 64
        axis_num, axis_pnt = 64, min(11, 64)
        n_align = 2 if self.int8 else 1
        if n_major:
            major, minor = _align(self.cn, n_align), self.cm
            major_k, minor_k = max_nk, max_mk
        else:
            major, minor = self.cm, _align(self.cn, n_align)
            major_k, minor_k = max_mk, max_nk
        fixed_major = t.baseN if n_major else t.baseM
        fixed_minor = t.baseM if n_major else t.baseN
        if fixed_major != -1:
            majors = [_ceil(fixed_major, 16)]
        else:
            cap = min(axis_pnt, max_n) if (n_major and self.bias_bt) else axis_pnt
            most = min(axis_num, max_n) if (n_major and self.bias_bt) else axis_num
            majors = _two_factors(cap, major, most) + _two_factors(cap, _best_value(major), most)
            if n_major and self.int8:
                majors = [_align(v, 2) for v in majors]
        for mj in _desc_unique(majors):
            if mj == 0 or mj > max_mn or mj > major_k or mj > major:
                continue
            minor_max = min(max_mn // mj, minor_k)
            if fixed_minor != -1:
                minors = [_ceil(fixed_minor, 16)]
            else:
                cap = min(minor_max, max_n) if (not n_major and self.bias_bt) else minor_max
                minors = _two_factors(cap, minor, cap) + _two_factors(cap, _best_value(minor), cap)
                if not n_major and self.int8:
                    minors = [_align(v, 2) for v in minors]
            for mn in _desc_unique(minors):
                if mn == 0 or mj * mn > max_mn or mn > minor_k or mn > minor or mn > major_k:
                    continue
                if self.a910b:
                    max_n = pool["bt"] // 16 // 4       # (one L0C buffer)
                n_fr = mj if n_major else mn
                if n_fr > 64 and self.bias_bt:
                    continue
                k_max = min(major_k // mj, minor_k // mn)
                ks = _two_factors(k_max, self.ck, k_max) + _two_factors(
                    k_max, _best_value(self.ck), axis_num)
                for k0 in _desc_unique(ks):
                    if k0 == 0 or mn * k0 > minor_k or mj * k0 > major_k:
                        continue
                    ml0, nl0 = (mn, mj) if n_major else (mj, mn)
                    if not self.l0_fits(ml0, nl0, k0):
                        continue
                    self.offer(ml0, nl0, k0)
        if self.final is not None:
            self.best = self.final


def library_l0_factors(t, ab, cm: int, cn: int, ck: int):
    """(mL0, nL0, kL0, dbL0A, dbL0B) of the library's one-core search for tiling object
    ``t`` (A/B dtype ``ab``) on a core's shape of ``cm`` x ``cn`` fractals and ``ck`` C0
    columns (after :func:`core_axis`); None when it finds no base."""
    pool = t.bufferPool_
    db_a = 1 if t.baseM != -1 and t.baseM * 32 > pool["l0a"] // 2 else 2
    db_b = 1 if t.baseN != -1 and t.baseN * 32 > pool["l0b"] // 2 else 2
    s = _Search(t, ab, cm, cn, ck, db_a, db_b)
    s.run(n_major=False)
    s.run(n_major=True)
    if s.best is None:
        return None
    ml0, kl0, nl0 = s.best
    return ml0, nl0, kl0, db_a, db_b
