"""The A2/A3 multi-core tiling rules of Ascend C's host Matmul tiling (MultiCoreMatmulTiling
without SetSingleShape), restated: which "scenario" a shape falls in, how the cores split M
and N, the base block, and the L1 depth/step factors. :mod:`.matmul_tiling` calls this; it
returns None where the library takes its general search instead (one core, SetSingleShape,
split K, other SoCs, mid-sized shapes), and the caller keeps its own rule there.

Source: asc-devkit ``impl/adv_api/tiling/matmul/matmul_tiling_algorithm.cpp`` at snapshot
82b89a1 (``GetMultiCoreScenario``, ``GetMultiCoreBasicBlock``, ``CalcMultiCoreDims``,
``CalcComputeIntensity``, ``CalcMultiCoreDimsSmallShape``, ``UpdateBaseBlock``,
``CalcL1Tiling``, ``UpdateStepK``, ``GetL0CoreStatus``, ``UpdateDepthB1``); the behaviour is
described here in our own terms (the numbered rules below) and computed by our own code.

1. Scenario (SoC ``Ascend910B`` / ``Ascend910_93``, dim > 1, no SetSingleShape, no split K):
   SPLIT_MN when ``M >= 128`` and ``M * N > 26214 * dim`` (26214 = 0.8 of a 128 x 256 block),
   SPLIT_SMALL_MN when ``M * N < 26214 * dim``; otherwise the general search.
2. SPLIT_MN base block: (128, 256, 128 B of k), baseM 256 when L0C is 256 KiB; both inputs
   transposed: (256, 128); SetFixSplit's baseM/baseN replace the defaults.
   Cores: every factor pair mDim x nDim = dim is scored; a core's part is ``ceil(M / mDim)``
   (rounded up to 256 B of elements when A is transposed and M is 256 B-aligned, likewise N
   when B is not transposed, if the rounding still leaves mDim parts); its base blocks (main
   and tails) give cycles ``bm * bn * bk / (16 * 16 * C0)`` and traffic ``(bm + bn) * bk *
   sizeof`` (doubled when a rounding failed); the pair with the highest cycles / traffic
   wins, near-ties (cycles within 1 %) going to the higher band ratio
   ``((dim - mDim) * baseM + (dim - nDim) * baseN) / ((baseM + baseN) * dim)``, then to fewer
   cycles.
3. SPLIT_SMALL_MN: M <= 128 with N >= 128 * dim splits N over all cores (and N <= 256 with
   M >= 128 * dim splits M); otherwise every pair mDim x nDim <= dim is scored by traffic
   first (within 5 % counts as equal), with column-count band ratios (256, 512: 1; 384: 1.5;
   448: 1.7; 320, 128: 2; 192: 2.7; other unaligned widths 4). The base block follows the
   part: baseM = 128 if the part has >= 128 rows, else its rows rounded up to 16; baseN =
   256 (384 when baseK <= 32 and baseM <= 64) likewise; then
   ``baseK = min(alignDown(min(32 KiB / baseM, 32 KiB / baseN) / sizeof, C0), align(K, C0))``.
4. L1 (both scenarios): ``depthA = (L1 / 2 / baseM / baseK) / sizeof(A)`` and ``depthB =
   ((L1 + 256) / 2 / baseN / baseK) / sizeof(B)`` base blocks (integer steps, in that order;
   B gets the 256 B reserve back); if both with a bias row exceed L1, the side with the
   smaller base halves its count; ``stepKa = depthA // 2``, ``stepKb = depthB // 2``; a step
   whose k run (``step * baseK`` elements) is short of singleCoreK is cut down until its
   bytes are a multiple of 512 (when over 512 B) or 256 (when over 256 B), if baseK's bytes
   divide that; the larger step is cut to a multiple of the smaller; ``depthA1 = 2 * stepKa``,
   ``depthB1 = 2 * stepKb``; stepM = stepN = 1. float B on A2/A3: depthB1 shrinks when the
   16-aligned k rows overflow L1.
5. L0: dbL0A = dbL0B = 2, dbL0C = 1 (the library's default template; the kernel then waits
   for each Fixpipe before the next base block's first Mmad).
Rankings (rules 2 and 3) are computed in single precision and sorted as the library's
``std::sort`` sorts them (:mod:`.cxx_sort`): the comparators treat near values as equal,
so the first candidate depends on the sort's sequence of comparisons.
6. One core's part (GetSingleShape): ``ceil(N16 / nDim)`` with N16 = N rounded up to 16,
   rounded up to 256 B of elements when B is not transposed or the part's output (2 x C
   bytes) outweighs its inputs, and ``ceil(M16 / mDim)`` rounded likewise when A is
   transposed -- each rounding only if it still leaves nDim (mDim) parts; usedCoreNum =
   mDim x nDim. The part need not be a multiple of 16 (1024 over 3 cores: 342).
Rule 1 holds only without SetShape (or SetShape(-1, -1, k)): the library's scenario test
reads SetShape's M and N, so a MultiCoreMatmulTiling given SetShape(M, N, K) takes the
general search (the asc-devkit samples call SetShape; :mod:`.matmul_tiling_dims` restates it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npusim.ascendc.lib.cxx_sort import cxx_sort

__all__ = ["LibrarySplit", "library_split"]

_A2_FAMILY = ("Ascend910B", "Ascend910_93")
_MN_LIMIT = 26214                 # 0.8 of a 128 x 256 base block, elements
_BAND = {256: 1.0, 512: 1.0, 384: 1.5, 448: 1.7, 320: 2.0, 128: 2.0, 192: 2.7}
_BAND_MAX = 4.0
_BAND_CORES = 20
_L0_HALF = 32 * 1024              # a 64 KiB L0A/L0B, double-buffered
_L1_RESERVE = 256
_F = np.float32                   # the library's scores are C++ floats


@dataclass
class LibrarySplit:
    """What the library's scenario fixes: singleCoreM/N, base, L1 and L0 buffer counts."""

    scenario: str
    single_m: int
    single_n: int
    m_dim: int
    n_dim: int
    base_m: int
    base_n: int
    base_k: int
    step_ka: int
    step_kb: int
    depth_a1: int
    depth_b1: int
    db_l0c: int


def _ceil(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _align(a: int, b: int) -> int:
    return _ceil(a, b) * b


def _part(org: int, parts: int, need_align: bool, align: int) -> tuple[bool, int]:
    """(aligned, one part): ceil(org / parts), rounded up to ``align`` when asked and the
    rounding still leaves ``parts`` parts."""
    part = _ceil(org, parts)
    if not need_align or parts <= 1:
        return True, part
    rounded = _align(part, align)
    if rounded >= _ceil(org, parts - 1):
        return False, part
    return True, rounded


def _blocks(s: int, base: int) -> tuple[int, int]:
    return s // base, s % base


def _score(sm, sn, bm, bn, bk, isz, c0, ratio, ra=1.0, rb=1.0):
    """(cycles, traffic) of one core's base blocks (main blocks and tails), in single
    precision as the library computes them (the rankings compare within tolerances)."""
    mm, tm = _blocks(sm, bm)
    mn, tn = _blocks(sn, bn)
    cycles = traffic = _F(0)
    ratio, ra, rb = _F(ratio), _F(ra), _F(rb)
    for count, a, b in ((mm * mn, bm, bn), (mm if tn else 0, bm, tn),
                        (mn if tm else 0, tm, bn), (1 if tm and tn else 0, tm, tn)):
        if count and a and b:
            cycles += _F(a * b * bk) / _F(16 * 16 * c0) * _F(count)
            traffic += ratio * (ra * _F(a) * _F(bk) * _F(8 * isz) / _F(8)
                                + rb * _F(b) * _F(bk) * _F(8 * isz) / _F(8)) * _F(count)
    return cycles, traffic


def _band(dim, m_dim, n_dim, bm, bn):
    return _F((dim - m_dim) * bm + (dim - n_dim) * bn) / _F((bm + bn) * dim)


def _intensity_less(x, y) -> bool:
    """SPLIT_MN: higher cycles/traffic first; within 1 % of cycles the higher band ratio;
    else fewer cycles."""
    if abs(x["intensity"] - y["intensity"]) > _F(1e-4):
        return x["intensity"] > y["intensity"]
    if abs(x["cycles"] - y["cycles"]) < _F(0.01) * y["cycles"]:
        return x["band"] > y["band"]
    return x["cycles"] < y["cycles"]


def _traffic_less(x, y) -> bool:
    """SPLIT_SMALL_MN: less traffic first (5 % counts as equal); then as SPLIT_MN's near
    tie, then the higher intensity."""
    if abs(y["traffic"] - x["traffic"]) > _F(0.05) * x["traffic"]:
        return x["traffic"] < y["traffic"]
    if abs(x["cycles"] - y["cycles"]) < _F(0.01) * y["cycles"]:
        return x["band"] > y["band"]
    return x["intensity"] > y["intensity"]


def _pairs(n: int):
    return [(i, n // i) for i in range(1, n + 1) if n % i == 0]


def _update_base(sm, sn, base_k, k, c0_align):
    """Rule 3's base for one core's part (baseK first cut to K rounded up to 32)."""
    bk = min(base_k, _align(k, 32))
    bm = 128 if sm >= 128 else _align(sm, 16)
    max_n = 384 if bk <= 32 and bm <= 64 else 256
    bn = max_n if sn >= max_n else _align(sn, 16)
    return bm, bn, bk


def library_split(t, ab, m: int, n: int, k: int, dim: int) -> LibrarySplit | None:
    """The library's multi-core scenario for tiling object ``t`` (a MatmulApiTilingBase)
    with A/B dtype ``ab``, shape (m, n, k) on ``dim`` cores; None outside rules 1-3."""
    soc = t.soc
    if (soc.short_soc_version not in _A2_FAMILY or dim <= 1 or t.fixSingleM != -1
            or t.fixSingleN != -1 or t.fixSingleK != -1 or t.enableSplitK_
            or t.singleM != -1 or t.singleN != -1):
        return None
    if m >= 128 and m * n > _MN_LIMIT * dim:
        scenario = "SPLIT_MN"
    elif m * n < _MN_LIMIT * dim:
        scenario = "SPLIT_SMALL_MN"
    else:
        return None
    isz = ab.itemsize
    c0 = 32 // isz
    align = 256 // isz                     # 256 B of elements (DataCopy alignment)
    a_t, b_t = t.aType_.isTrans, t.bType_.isTrans
    pool = t.bufferPool_
    base_m = 256 if pool["l0c"] == 256 * 1024 else 128
    base_n, base_k = 256, 128 // isz
    if a_t and b_t:
        base_m, base_n = 256, 128
    if t.baseM > 0:
        base_m = t.baseM
    if t.baseN > 0:
        base_n = t.baseN
    a_align = a_t and m % align == 0
    b_align = (not b_t) and n % align == 0
    if scenario == "SPLIT_MN":
        cands = []
        for md, nd in _pairs(dim):
            ok_a, sm = _part(m, md, a_align, align)
            ok_b, sn = _part(n, nd, b_align, align)
            cyc, traffic = _score(sm, sn, base_m, base_n, base_k, isz, c0, 1 if ok_a and ok_b else 2)
            cands.append({"dims": (md, nd), "cycles": cyc, "band": _band(dim, md, nd, base_m, base_n),
                          "intensity": cyc / traffic if traffic else _F(0), "part": (sm, sn)})
        best = cxx_sort(cands, _intensity_less)[0]
        (m_dim, n_dim), (sm, sn) = best["dims"], best["part"]
    else:
        best = _small_mn(t, m, n, k, dim, base_m, base_n, base_k, isz, c0, align, a_t, b_t)
        (m_dim, n_dim), (sm, sn), (base_m, base_n, base_k) = best
        room = _L0_HALF // isz
        base_k = min(min(room // base_m, room // base_n) // c0 * c0, _align(k, c0))
    if min(base_m, base_n, base_k) <= 0:
        return None
    step_ka, step_kb = _l1_steps(t, ab, base_m, base_n, base_k, k)
    if step_ka <= 0 or step_kb <= 0:
        return None
    depth_b1 = _float_depth_b1(t, ab, base_m, base_n, base_k, 2 * step_ka, 2 * step_kb)
    db_l0c = 1
    sm, sn = _single_shape(t, ab, m, n, k, m_dim, n_dim)
    return LibrarySplit(scenario, sm, sn, m_dim, n_dim, base_m, base_n, base_k,
                        step_ka, step_kb, 2 * step_ka, depth_b1, db_l0c)


def _single_shape(t, ab, m, n, k, m_dim, n_dim) -> tuple[int, int]:
    """Rule 6: (singleCoreM, singleCoreN) of the split m_dim x n_dim."""
    isz = ab.itemsize
    align = 256 // isz
    # the output outweighs the inputs: 2 x C bytes of the part > its A and B bytes
    c_bits = 8 * t._c_itemsize()
    out_heavy = (_ceil(n, n_dim) * _ceil(m, m_dim) * 2 * c_bits
                 > _ceil(n, n_dim) * k * 8 * isz + _ceil(m, m_dim) * k * 8 * isz)
    _, sn = _part(_align(n, 16), n_dim, (not t.bType_.isTrans) or out_heavy, align)
    _, sm = _part(_align(m, 16), m_dim, t.aType_.isTrans, align)
    return sm, sn


def _small_mn(t, m, n, k, dim, base_m, base_n, base_k, isz, c0, align, a_t, b_t):
    """Rule 3: ((mDim, nDim), (singleM, singleN), (baseM, baseN, baseK))."""
    if m <= 128 and n >= 128 * dim:
        sm, sn = m, n // dim
        return (1, dim), (m, _ceil(n, dim)), _update_base(sm, sn, base_k, k, c0)
    if n <= 256 and m >= 128 * dim:
        sm, sn = m // dim, n
        return (dim, 1), (_ceil(m, dim), n), _update_base(sm, sn, base_k, k, c0)

    def band_aligned(org):
        return any(org % w == 0 for w in _BAND)

    cands = []
    for cores in range(dim, 0, -1):
        for md, nd in _pairs(cores):
            ok_a, sm = _part(m, md, a_t and band_aligned(m), align)
            ok_b, sn = _part(n, nd, (not b_t) and band_aligned(n), align)
            bm, bn, bk = _update_base(sm, sn, base_k, k, c0)
            ra = 1.0 if ok_a else _BAND.get(sm, _BAND_MAX)
            rb = 1.0 if ok_b else _BAND.get(sn, _BAND_MAX)
            rate = md * nd
            if sm < 32 and sn < 32 and rate > _BAND_CORES:
                rate = _BAND_CORES
            ratio = md * nd / max(rate, 1)
            cyc, traffic = _score(sm, sn, bm, bn, bk, isz, c0, ratio, ra, rb)
            cands.append({"dims": (md, nd), "cycles": cyc, "traffic": traffic,
                          "band": _band(dim, md, nd, bm, bn), "part": (sm, sn),
                          "intensity": cyc / traffic if traffic else _F(0), "base": (bm, bn, bk)})
    best = cxx_sort(cands, _traffic_less)[0]
    return best["dims"], best["part"], best["base"]


def _step_k(step: int, base_k: int, isz: int, k: int) -> int:
    """Rule 4's cut of a k step to a 512 B / 256 B run (left whole when it covers K)."""
    if step * base_k >= k:
        return step
    unit = base_k * isz
    for edge in (512, 256):
        if step * unit > edge:
            if (step * unit) % edge and edge % unit == 0:
                while (step * unit) % edge and step > 1:
                    step -= 1
            break
    return step


def _l1_steps(t, ab, base_m, base_n, base_k, k) -> tuple[int, int]:
    isz = ab.itemsize
    l1 = t.bufferPool_["l1"]
    depth_a = (l1 // 2 // base_m // base_k) * 8 // (8 * isz)
    depth_b = ((l1 + _L1_RESERVE) // 2 // base_n // base_k) * 8 // (8 * isz)
    bias = base_n * t._bias_itemsize() if t.isBias else 0
    a_bytes = _h_align_a(t, ab, base_m) * _w_align_a(t, ab, base_k) * isz
    b_bytes = _h_align_b(t, ab, base_k) * _w_align_b(t, ab, base_n) * isz
    if depth_a * a_bytes + depth_b * b_bytes > l1 - bias:
        if _h_align_a(t, ab, base_m) <= _w_align_b(t, ab, base_n):
            depth_a //= 2
        else:
            depth_b //= 2
    step_ka = _step_k(depth_a // 2, base_k, isz, k)
    step_kb = _step_k(depth_b // 2, base_k, isz, k)
    if step_ka >= step_kb and step_kb:
        step_ka = step_ka // step_kb * step_kb
    elif step_ka:
        step_kb = step_kb // step_ka * step_ka
    return step_ka, step_kb


# The L1 footprint of a base block: rows and columns aligned as the cube's load needs them
# (float to 16 rows / 8 columns, 8-bit sides to 32) -- matmul_tiling_algorithm.cpp
# GetABaseHeightAlign and its three siblings.
def _h_align_a(t, ab, v):
    if ab.itemsize == 4:
        return _align(v, 16)
    if ab.itemsize == 1 and t.aType_.isTrans:
        return _align(v, 32)
    return v


def _w_align_a(t, ab, v):
    if ab.itemsize == 4 and t.aType_.isTrans:
        return _align(v, 16)
    if ab.itemsize in (1, 4):
        return _align(v, 32 // ab.itemsize)
    return v


def _h_align_b(t, ab, v):
    if ab.itemsize == 4 and not t.bType_.isTrans:
        return _align(v, 16)
    if ab.itemsize == 1:
        return _align(v, 32)
    return v


def _w_align_b(t, ab, v):
    if ab.itemsize == 4 or (ab.itemsize == 1 and not t.bType_.isTrans):
        return _align(v, 32 // ab.itemsize)
    return v


def _float_depth_b1(t, ab, base_m, base_n, base_k, depth_a1, depth_b1) -> int:
    """Rule 4's float-B correction: with k rows padded to 16, depthB1 shrinks if L1
    overflows."""
    if ab.itemsize != 4:
        return depth_b1
    k16 = _align(base_k, 16)
    kn, km = k16 * base_n, (k16 if t.aType_.isTrans else base_k) * base_m
    if (depth_a1 * km + kn * depth_b1) * 4 > t.bufferPool_["l1"]:
        depth_b1 = max(1, base_n * base_k * depth_b1 // kn)
    return depth_b1
