"""The compiled step-sums loop's tiles (npusim/ascendc/cube/step_sums_jit.py: register tiles
of four rows of A x eight columns of B over all k, fused multiply-adds, B in blocks of 128
columns, the last padded) give the defined bytes on data chosen to break them: Mmad's float result is
``init + v_0 + v_1 + ...`` in fp32, k order, where ``v_s = fp32(math.fsum(the step's k0
products))`` (the exact sum rounded once to float64, then to fp32;
npusim/ascendc/cube/step_sums.py).

The reference (:func:`defined`) is that definition written out with ``math.fsum`` and numpy
float32 scalars, element by element, independent of both renderings; the numpy rendering is
compared too. Data: steps next to fp32 rounding boundaries (per-step rounding that a single
rounding of the whole sum would not give), sums whose float64 sum in k order loses the
terms that decide an fp32 tie (the exact-sum fallback), NaN padding rows, +inf and -inf
products in one sum, inf x 0, mixed magnitudes (subnormal halves, float exponents over
2**+-60), every row count modulo the tile's four and column counts that leave a partial
block of B.
"""
import math

import numpy as np
import pytest

from npusim.ascendc import nans
from step_sums_helpers import BF16, DTYPES, NUMBA_MARKS, both_renderings

pytestmark = NUMBA_MARKS


def k0_of(dtype):
    return 8 if dtype == np.float32 else 16


def step_value(p):
    """fp32 of the exact sum of the products ``p`` (float64, exact) rounded once to float64;
    IEEE's inf / NaN where a product is not finite."""
    if np.isfinite(p).all():
        return np.float32(math.fsum(p))
    if np.isnan(p).any() or (np.isposinf(p).any() and np.isneginf(p).any()):
        return np.float32(np.nan)
    return np.float32(np.inf if np.isposinf(p).any() else -np.inf)


def defined(a, b, init):
    """The definition, element by element: (G, N / 16, M, 16) float32 of ``init`` (or
    zeros, then ``+ 0``) plus each step's value in fp32, k order."""
    G, S, M, k0 = a.shape
    N = b.shape[-1]
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    out = np.empty((G, N // 16, M, 16), np.float32)
    zero = np.float32(0)
    with np.errstate(invalid="ignore", over="ignore"):
        for g in range(G):
            for m in range(M):
                for n in range(N):
                    v = [step_value(a64[g, s, m] * b64[g, s, :, n]) for s in range(S)]
                    start = zero if init is None else init[g, n // 16, m, n % 16]
                    c = (start + v[0]) + zero      # (0 + v) + 0 is v + 0
                    for x in v[1:]:
                        c = np.float32(c + x)
                    out[g, n // 16, m, n % 16] = c
    return out


def assert_defined(a, b, init=None):
    want = nans.canonical(defined(a, b, init)).view(np.uint32)
    numpy_, loop = both_renderings(a, b, init)
    assert np.array_equal(loop.view(np.uint32), want), np.argwhere(
        loop.view(np.uint32) != want)[:5]
    assert np.array_equal(numpy_.view(np.uint32), want)


def boundary_steps(dtype, G, S, M, N, rng):
    """Operands whose every step sum is a few products placed next to fp32 rounding
    boundaries: per element a large term ``2**e``, and terms of a half, a quarter or an
    eighth of the fp32 ulp of ``2**e`` (or just above), each step the same, so that the
    fp32 sum of the per-step values and the value of the whole sum rounded once differ."""
    k0 = k0_of(dtype)
    a = np.zeros((G, S, M, k0))
    b = np.zeros((G, S, k0, N))
    # a row's large term 2**e (half: its terms down to 2**(e - 27) stay above 2**-24)
    e = rng.integers(*((4, 12) if dtype == np.float16 else (-3, 4)), (G, S, M))
    a[..., 0] = np.exp2(e) * rng.choice([-1.0, 1.0], (G, S, M))
    b[:, :, 0, :] = 1.0
    # the fp32 ulp of 2**e is 2**(e - 23): small terms 2**(e - 24 - d), d in 0..3, in k
    for j in range(1, 4):
        a[..., j] = np.exp2(e - 24 - rng.integers(0, 4, (G, S, M)))
        b[:, :, j, :] = rng.choice([0.0, 1.0, 1.0 + 2.0 ** -7], (G, S, N))
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_per_step_rounding_at_fp32_boundaries(dtype):
    """Steps whose values sit at and next to fp32 ties: each step is rounded on its own,
    then added in fp32 (a single rounding of the whole float64 sum, or the float64 step
    sums added before rounding, give other bytes here)."""
    rng = np.random.default_rng(11)
    G, S, M, N = 2, 5, 7, 48
    a, b = boundary_steps(dtype, G, S, M, N, rng)
    init = (rng.standard_normal((G, N // 16, M, 16)) * 2.0 ** -20).astype(np.float32)
    assert_defined(a, b, None)
    assert_defined(a, b, init)
    # the data is what it claims: summing each element's steps in float64 and rounding
    # once gives other bytes than the definition for some elements
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    once = np.einsum("gsmk,gskn->gmn", a64, b64).astype(np.float32)
    want = defined(a, b, None).transpose(0, 2, 1, 3).reshape(G, M, N)
    assert (once != want).any()


def near_tie_sums(dtype, M, N, rng):
    """One step per member where some rows' sums are ``2**30 + 1 +- 2**-24 +- 2**-48 -
    2**30`` in k order (products of 2**15, 1, 2**-12, 2**-24 and their negatives): summed
    in that order in float64 the small terms are lost (1.0), while the exact sum rounds to
    fp32 on the other side of (or at) the tie 1 + 2**-24. No bound on the float64 sum's
    error decides those: the exact-sum fallback does. Around them, ordinary rows of the
    same tiles."""
    k0 = k0_of(dtype)
    a = rng.standard_normal((1, 1, M, k0))
    b = rng.standard_normal((1, 1, k0, N))
    big = 2.0 ** 15
    for m in range(1, M, 3):                 # rows 1, 4, 7, ...: every place in a tile
        n = m % N
        a[0, 0, m, :5] = [big, 1.0, 2.0 ** -12, 2.0 ** -24, -big]
        a[0, 0, m, 2:4] *= rng.choice([-1.0, 1.0], 2)
        a[0, 0, m, 5:] = 0
        b[0, 0, :5, n] = [big, 1.0, 2.0 ** -12, 2.0 ** -24, big]
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sums_next_to_ties_take_the_exact_sum(dtype):
    rng = np.random.default_rng(12)
    for M, N in ((9, 32), (13, 144)):
        a, b = near_tie_sums(dtype, M, N, rng)
        assert_defined(a, b, None)
        init = rng.standard_normal((1, N // 16, M, 16)).astype(np.float32)
        assert_defined(a, b, init)
        # the data is what it claims: the float64 sum in k order rounds otherwise
        p = a.astype(np.float64)[0, 0][:, :, None] * b.astype(np.float64)[0, 0][None]
        in_order = np.zeros((M, N))
        for k in range(a.shape[-1]):
            in_order = in_order + p[:, k]
        want = defined(a, b, None)[0].transpose(1, 0, 2).reshape(M, N)
        assert (in_order.astype(np.float32) != want).any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_padding_and_infinities_in_a_tile(dtype):
    """A tile's rows with NaN padding (an uninitialised L0A row), a row with +inf and one
    column with -inf (their sum NaN), inf x 0, beside finite rows of the same tile."""
    rng = np.random.default_rng(13)
    k0 = k0_of(dtype)
    G, S, M, N = 2, 3, 10, 160
    a = rng.standard_normal((G, S, M, k0)).astype(dtype)
    b = rng.standard_normal((G, S, k0, N)).astype(dtype)
    a[:, :, 9] = np.nan                          # the padding row: alone in the last tile
    a[0, 1, 2, 3] = np.inf                       # a row of the first tile
    b[0, 1, 3, 5] = -np.inf                      # +inf * -inf in column 5's sum; inf * x
    b[0, 1, 3, 6] = 0                            # inf * 0: NaN
    a[1, 2, 5, 0] = -np.inf
    b[1, 2, :, 150] = 0                          # -inf * 0 in the partial block
    init = rng.standard_normal((G, N // 16, M, 16)).astype(np.float32)
    assert_defined(a, b, init)
    assert_defined(a, b, None)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mixed_magnitudes_every_tile_remainder(dtype):
    """Rows 1 to 7 (every remainder of the four-row tile) and 130, columns 16 to 272
    (blocks of 128 and a partial one), exponents spread over the type's range (half's
    subnormals, float's 2**+-60)."""
    rng = np.random.default_rng(14)
    k0 = k0_of(dtype)
    spread = {np.dtype(np.float16): 12, BF16: 40, np.dtype(np.float32): 60}[dtype]
    for M, N, S in ((1, 16, 3), (2, 48, 1), (3, 272, 2), (5, 144, 2), (6, 16, 4),
                    (7, 128, 2), (130, 32, 1)):
        with np.errstate(over="ignore", under="ignore"):
            a = (rng.standard_normal((1, S, M, k0))
                 * np.exp2(rng.uniform(-spread, spread, (1, S, M, k0)))).astype(dtype)
            b = (rng.standard_normal((1, S, k0, N))
                 * np.exp2(rng.uniform(-spread, spread, (1, S, k0, N)))).astype(dtype)
        init = rng.standard_normal((1, N // 16, M, 16)).astype(np.float32)
        assert_defined(a, b, init)
