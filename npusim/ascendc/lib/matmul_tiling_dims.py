"""The general multi-core split of Ascend C's host Matmul tiling: how MultiCoreMatmulTiling
splits M and N over the cores when no scenario of :mod:`.matmul_tiling_split` applies (on
A2/A3 after SetShape(M, N, K), whose M and N the scenario test reads; no batch, no split
K), and the core shape the base and L1 searches then use. Restated from asc-devkit
``impl/adv_api/tiling/matmul/matmul_tiling_algorithm.cpp`` (snapshot 82b89a1:
``NonFactorMap``, ``GetDims``, ``PreProcessMiniShape``, ``GenDimsMapFactors``,
``AddOptimalFactors``, ``GetDimsHelper``, ``CalcLoadSize``, ``UpdateDimCalculator``,
``LoopNumFromSingleCoreToL0``, ``GetBigPackageCondition``, ``UpdateMultiCore``,
``GetSingleShape``) and ``math_util.cpp`` (``GetBlockFactors``, ``AddFactor``,
``FindBestSingleCore``), described here in our own terms and computed by our own code.

Units: M and N in 16-row fractals (``m32``, ``n32``), K in C0 columns (``k32``); the
mapped length of an axis is the power of two above it, doubled (16..1024 -> 32..2048).

1. Mini shapes: when all of the output fits the cores one fractal pair each (``m32 *
   n32 <= dim``) and A, B and C fit L0 whole (``m32 * k32``, ``n32 * k32`` <= L0A / 512,
   ``m32 * n32`` <= L0C / 1024), each axis of at most 32 fractals stays whole, a longer one
   is split in ``mapped / 32`` parts.
2. Otherwise the candidate core counts along M (N) are the numbers up to ``min(dim, m32)``
   dividing m32, its mapped length or dim, plus the two near the "balanced" point
   ``sqrt(m32 / n32 * dim)`` (and ``dim`` over the other's). Every pair mDim x nDim <= dim
   is scored, N outermost, ascending: the loop count of a 16 x 8 x 4-ish block
   (``LoopNumFromSingleCoreToL0``: fewer is better, then more cores), then, among pairs
   using as many cores, the GM rows read as ``CalcLoadSize`` estimates them for what fits
   L1 (in half-precision bytes whatever the type; each better estimate's A and B sizes
   are those the later fit tests read); a "big package" rule prefers pairs that
   leave at least 16 fractals per core on the side moved transposed to L1 (B not
   transposed: N; A transposed: M), unless only B is transposed.
3. The winner's parts ``ceil(m32 / mDim)`` are replaced by the nearest lengths with enough
   divisors (:func:`.matmul_tiling_l0.best_single_core`) when that needs no more cores;
   mDim = ``ceil(m32 / part)``; usedCoreNum = mDim x nDim; singleCoreM = ``ceil(M /
   mDim)`` (not rounded), singleCoreN likewise; K is whole.
"""
from __future__ import annotations

import math

import numpy as np

from npusim.ascendc.lib.matmul_tiling_l0 import best_single_core, mapped_axis

__all__ = ["library_dims"]

_INT_MAX = 2**31 - 1
_FRACTAL = 512
_MIN_MTE1_LOAD = 32
_F = np.float32


def _ceil(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _mini(t, m32, n32, k32, dim):
    """Rule 1: (mDim, nDim, m, n, k) or None."""
    pool = t.bufferPool_
    l0c_cap = pool["l0c"] // 256 // 4
    l0ab_cap = pool["l0a"] // _FRACTAL
    if not (n32 * m32 <= dim and m32 * k32 <= l0ab_cap and n32 * k32 <= l0ab_cap
            and m32 * n32 <= l0c_cap):
        return None
    m_map, n_map = mapped_axis(m32), mapped_axis(n32)
    n_dim = 1 if n32 <= _MIN_MTE1_LOAD else n_map // _MIN_MTE1_LOAD
    m_dim = 1 if m32 <= _MIN_MTE1_LOAD else m_map // _MIN_MTE1_LOAD
    n = n32 if n_dim == 1 else _ceil(n_map, n_dim)
    m = m32 if m_dim == 1 else _ceil(m_map, m_dim)
    return _ceil(m32, m), _ceil(n32, n), m, n, k32


def _factors(units: int, mapped: int, dim: int) -> list[int]:
    return [i for i in range(1, min(dim, units) + 1)
            if units % i == 0 or mapped % i == 0 or dim % i == 0]


def _add(vals: list[int], v: int) -> list[int]:
    return sorted(set(vals) | {v})


class _Best:
    def __init__(self):
        self.min_load = _INT_MAX
        self.n_dim = self.m_dim = 1
        self.core_use = 1
        self.loops = _INT_MAX
        self.big = False


def _load_size(l1, m32, n32, dm, dn, m, n, k, k_bytes) -> int:
    """CalcLoadSize: the GM rows (fractals) read for the pair, by what fits L1."""
    total = _INT_MAX
    amat, bmat = m, n
    ori_a, ori_b = m32, n32
    n0 = min(16, n)
    m0 = min(16, 0 if n0 == 0 else min(m, 128 // n0))
    k0 = min(64 // m0, 64 // n0, k) if (m0 and n0) else k
    db = 2

    def update(tmp_a, tmp_b):
        # a better estimate also replaces the A and B sizes the later tests read (as
        # the library's UpdateDimCalculator does)
        nonlocal total, amat, bmat
        if total > tmp_a + tmp_b:
            total, amat, bmat = tmp_a + tmp_b, tmp_a, tmp_b
    if ((amat + n0 * db) * k_bytes <= l1 or (bmat + m0 * db) * k_bytes <= l1
            or (amat + bmat) * k_bytes <= l1):
        update(ori_a * dn, ori_b * dm)
        return total
    if ((n0 * k_bytes + m0 * k0 * _FRACTAL) * db > l1
            and (m0 * k_bytes + n0 * k0 * _FRACTAL) * db > l1):
        update(ori_a * _ceil(n32, n0), ori_b * _ceil(m32, m0))
        return total
    if (m0 + n0) * k_bytes * db <= l1:
        m1 = _ceil(l1 - n0 * k_bytes * db, k_bytes * db * m0) * m0
        n1 = _ceil(l1 - m0 * k_bytes * db, k_bytes * db * n0) * n0
        m_first = ori_a * dn + ori_b * _ceil(m32, m1)
        n_first = ori_b * dm + ori_a * _ceil(n32, n1)
        if m_first < n_first:
            update(ori_a * dn, ori_b * _ceil(m32, m1))
        else:
            update(ori_a * _ceil(n32, n1), ori_b * dm)
        return total
    if (amat * k_bytes + n0 * k0 * _FRACTAL * db <= l1
            or m0 * k_bytes * db + n0 * k0 * _FRACTAL * db <= l1):
        update(ori_a * dn, ori_b * _ceil(m32, m0))
    if (bmat * k_bytes + m0 * k0 * _FRACTAL * db <= l1
            or n0 * k_bytes * db + m0 * k0 * _FRACTAL * db <= l1):
        update(ori_b * dm, ori_a * _ceil(n32, n0))       # (the library's order)
    return total


def _loops(m, n, k) -> int:
    n0 = min(16, n, 64)
    m0 = 0 if n0 == 0 else min(m, 128 // n0, 64)
    n0 = 0 if m0 == 0 else min(n, 128 // m0, 64)
    m0 = 0 if n0 == 0 else min(m, 128 // n0, 64)
    k0 = min(64 // m0, 64 // n0, k) if (m0 and n0) else k
    return _ceil(m, m0) * _ceil(n, n0) * _ceil(k, k0)


def library_dims(t, m32: int, n32: int, k32: int, dim: int):
    """(mDim, nDim, m, n, k): the cores along M and N and one core's shape in fractals /
    C0 columns, as the library's general split picks them for tiling object ``t`` (rules
    1-3)."""
    mini = _mini(t, m32, n32, k32, dim)
    if mini is not None:
        return mini
    a_t, b_t = t.aType_.isTrans, t.bType_.isTrans
    l1 = t.bufferPool_["l1"]
    m_map, n_map = mapped_axis(m32), mapped_axis(n32)
    m_f, n_f = _factors(m32, m_map, dim), _factors(n32, n_map, dim)
    if dim > 1:
        opt = _F(math.sqrt(_F(_F(m32) / _F(n32)) * _F(dim)))
        md = int(math.ceil(opt))
        nd = int(math.ceil(_F(dim) / opt))
        m_f = _add(_add(m_f, md), 1 if nd == 0 else dim // nd)
        n_f = _add(_add(n_f, nd), 1 if md == 0 else dim // md)
    best = _Best()
    for dn in n_f:
        if dn > dim or dn <= 0:
            continue
        for dm in m_f:
            if dn * dm > dim or dm <= 0:
                continue
            k_bytes = k32 * 256 * 2
            m, n, k = _ceil(m32, dm), _ceil(n32, dn), k32
            total = _load_size(l1, m32, n32, dm, dn, m, n, k, k_bytes)
            if b_t and not a_t:
                flag = 0
            else:
                ok = not ((not b_t and n32 >= 16 and n < 16) or (a_t and m32 >= 16 and m < 16))
                flag = 2 if (not best.big and ok) else (1 if best.big and not ok else 0)
            loops = _loops(m, n, k)
            use = dm * dn
            by_cores = flag == 0 and (loops < best.loops
                                      or (use > best.core_use and loops == best.loops))
            by_load = not by_cores and use == best.core_use and total < best.min_load
            by_n = (not by_cores and use == best.core_use and total == best.min_load
                    and best.n_dim * best.m_dim < dm * dn)
            if (flag == 2 or by_cores or by_load or by_n) and flag != 1:
                best.min_load, best.n_dim, best.m_dim = total, dn, dm
                best.core_use, best.loops = use, loops
                best.big = ((n >= 16 if not b_t else True) and (m >= 16 if a_t else True)
                            and dn * dm > 1)
    n = _ceil(n32, best.n_dim)
    m = _ceil(m32, best.m_dim)
    k = k32
    n2 = best_single_core(n32, n_map, best.n_dim)
    m2 = best_single_core(m32, m_map, best.m_dim)
    need = _ceil(n32, n2) * _ceil(m32, m2)
    if 0 < need <= dim:
        m, n = m2, n2
    return min(_ceil(m32, m), dim), min(_ceil(n32, n), dim), m, n, k
