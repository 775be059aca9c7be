"""The compiled loop of Mmad's step sums (npusim/ascendc/cube/step_sums_numba.py) gives the
bytes numpy's rendering (npusim/ascendc/cube/step_sums.py) gives, on random operands of
every shape and type Mmad hands it: wide exponent spreads (subnormals, half's overflow to
inf), NaN and inf entries, rows and columns of zeros, sums next to fp32 rounding
boundaries, a start or none, accumulation in place. NaNs are compared as Mmad leaves
them (canonical). Its exact sum is ``math.fsum``'s.

tests/test_cube_step_sums.py runs the step-sum tests on both renderings.
"""
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim.ascendc.cube import step_sums as ss
from npusim.ascendc.cube import step_sums_numba as fused
from step_sums_helpers import DTYPES, NUMBA_MARKS, both_renderings

pytestmark = NUMBA_MARKS


def operands(rng, dtype, G, S, M, N, spread, special, midpoints):
    """Normal data times 2**uniform(-spread, spread) in ``dtype``; zero rows and columns;
    with ``special`` NaN, +-inf, and whole NaN padding rows; with ``midpoints`` rows and
    columns whose sums cancel down next to an fp32 rounding boundary (1 + 2**-24 and
    its neighbours from 2**15-scale terms), where summation orders disagree."""
    k0 = 8 if dtype == np.float32 else 16
    with np.errstate(over="ignore"):
        a = rng.standard_normal((G, S, M, k0)) * np.exp2(rng.uniform(-spread, spread,
                                                                       (G, S, M, k0)))
        b = rng.standard_normal((G, S, k0, N)) * np.exp2(rng.uniform(-spread, spread,
                                                                       (G, S, k0, N)))
        if midpoints:
            g, s, m, n = (rng.integers(0, x, 4) for x in (G, S, M, N))
            row = [2.0 ** 15, 1.0, 2.0 ** -12, 2.0 ** -24, -(2.0 ** 15)]
            col = [2.0 ** 15, 1.0, 2.0 ** -12, 2.0 ** -24, 2.0 ** 15]
            for i in range(4):           # the five terms at random places along k
                at = rng.permutation(k0)
                a[g[i], s[i], m[i], at[:5]] = np.array(row) * rng.choice([-1.0, 1.0], 5)
                a[g[i], s[i], m[i], at[5:]] = 0
                b[g[i], s[i], at[:5], n[i]] = col
                b[g[i], s[i], at[5:], n[i]] = rng.choice([0.0, 2.0 ** -30], k0 - 5)
        a, b = a.astype(dtype), b.astype(dtype)
    a[0, 0, rng.integers(M)] = 0
    b[-1, -1, :, rng.integers(N)] = 0
    if special:
        a[0, 0, rng.integers(M), rng.integers(k0)] = np.nan
        b[-1, 0, rng.integers(k0), rng.integers(N)] = -np.inf
        a[-1, -1, rng.integers(M), rng.integers(k0)] = np.inf
        a[:, :, -1] = np.nan                       # a padding row
    return a, b


@settings(max_examples=60, deadline=None, derandomize=True)
@given(dtype=st.sampled_from(DTYPES), G=st.integers(1, 3), S=st.integers(1, 5),
       M=st.integers(1, 40), n16=st.integers(1, 12), spread=st.sampled_from([0, 4, 14, 30, 60]),
       special=st.booleans(), midpoints=st.booleans(),
       start=st.sampled_from(["none", "given", "in place"]), seed=st.integers(0, 2 ** 32 - 1))
def test_the_same_bytes_as_numpys_rendering(dtype, G, S, M, n16, spread, special, midpoints,
                                            start, seed):
    rng = np.random.default_rng(seed)
    N = 16 * n16
    a, b = operands(rng, dtype, G, S, M, N, spread, special, midpoints)
    init = None
    if start != "none":
        init = (rng.standard_normal((G, N // 16, M, 16)) * 4).astype(np.float32)
        init[0, 0, 0, :3] = [-0.0, np.inf, np.nan]
    want, got = both_renderings(a, b, init, start == "in place")
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_the_lockstep_tile_of_a_matmul_kernel():
    """The shape a lockstep group hands Mmad (128 x 256 x 64 half: 4 steps), and
    float data of the same tile, with the float checks and recomputations exercised."""
    rng = np.random.default_rng(1)
    for dtype, k0, spread in ((np.float16, 16, 0), (np.float32, 8, 40)):
        a = rng.standard_normal((6, 64 // k0, 128, k0)).astype(dtype)
        b = (rng.standard_normal((6, 64 // k0, k0, 256))
             * np.exp2(rng.uniform(-spread, spread, (6, 64 // k0, k0, 256)))).astype(dtype)
        init = rng.standard_normal((6, 16, 128, 16)).astype(np.float32)
        want, got = both_renderings(a, b, init, True)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_mmad_operands_gathered_from_the_fractals(dtype):
    """Mmad's operands as L0A (ZZ) and L0B (ZN) hold them, gathered straight into the
    loop's float64 operands (mmad_fractals_fused), give the bytes of the per-step arrays
    (mmad._zz_steps, mmad._zn_steps) through numpy's rendering: B's columns in one block
    of the loop and in several (N 48, 256, 384), a start and none."""
    from npusim.ascendc.cube.mmad import _zn_steps, _zz_steps
    rng = np.random.default_rng(7)
    k0 = 8 if dtype == np.float32 else 16
    for G, M1, K1, N1 in ((2, 3, 2, 3), (1, 8, 4, 16), (3, 2, 5, 24)):
        zz = (rng.standard_normal((G, M1 * K1 * 16 * k0)) * 3).astype(dtype)
        zn = (rng.standard_normal((G, K1 * N1 * 16 * k0)) * 3).astype(dtype)
        for init in (None, rng.standard_normal((G, N1, M1 * 16, 16)).astype(np.float32)):
            fused.ENABLED = False
            try:
                want = ss.mmad_steps(_zz_steps(zz, M1, K1, k0), _zn_steps(zn, K1, N1, k0), init,
                                     np.empty((G, N1, M1 * 16, 16), np.float32))
            finally:
                fused.ENABLED = fused.AVAILABLE
            assert fused.supports_fractals(zz.dtype)
            got = np.empty((G, N1, M1 * 16, 16), np.float32)
            nan = fused.mmad_fractals_fused(zz, zn, M1, K1, N1, k0, init, got)
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
            assert nan is bool(np.isnan(want).any())

@pytest.mark.parametrize("dtype", DTYPES)
def test_a_negative_zero_start_and_sums_that_are_zero(dtype):
    """C = (start + step 0) + 0 + step 1 ...: a -0.0 start plus a step that is -0.0 (a row
    of -0.0 times ones: a tile whose rows are all exact, kept with no check) or +-0.0
    after cancelling (rows [x, -x, 0 ...] times columns [1, 1, 0 ...]: a zero sum with a
    nonzero bound, which the loop's vector test leaves to the per-element one) is +0.0,
    hand-computed; and the loop gives numpy's bytes. Rows 5 (not a multiple of the loop's
    tile of 4 rows), columns 144 (two blocks of 128, the second padded)."""
    k0 = 8 if dtype == np.float32 else 16
    G, S, M, N = 2, 3, 5, 144
    a = np.zeros((G, S, M, k0), dtype)
    a[0] = -0.0                                   # member 0: -0.0 products only
    a[1, :, :, 0], a[1, :, :, 1] = 3.0, -3.0       # member 1: 3 - 3 in every step
    b = np.zeros((G, S, k0, N), dtype)
    b[:, :, 0], b[:, :, 1] = 1.0, 1.0
    init = np.full((G, N // 16, M, 16), -0.0, np.float32)
    want, got = both_renderings(a, b, init, True)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not got.view(np.uint32).any()           # every element +0.0


def test_the_exact_sum_is_fsums():
    """Shewchuk's sum rounds as ``math.fsum`` does: ties to even, ties pushed off by a
    lower partial, cancellation, huge exponent spreads."""
    rng = np.random.default_rng(2)
    cases = [[1.0, 2.0 ** -53], [1.0, 2.0 ** -53, 2.0 ** -106], [1.0, -(2.0 ** -54)],
             [1.0 + 2.0 ** -52, 2.0 ** -53], [2.0 ** 100, 1.0, -(2.0 ** 100)],
             [0.0, -0.0], [3.0, 2.0 ** -53, -(2.0 ** -105)], [2.0 ** -298, 2.0 ** 200] * 4]
    for _ in range(300):
        k = int(rng.choice([8, 16]))
        x = rng.standard_normal(k) * np.exp2(rng.integers(-140, 120, k))
        y = rng.standard_normal(k) * np.exp2(rng.integers(-140, 120, k))
        x, y = x.astype(np.float32).astype(float), y.astype(np.float32).astype(float)
        cases.append(list(x * y))
        x[: k // 2] = x[k // 2:] * -1                  # cancellation down to the small ones
        cases.append(list(x * y[::-1]))
    for terms in cases:
        k = len(terms)
        a = np.array(terms, float).reshape(1, 1, k)
        b = np.ones((1, 1, k, 1))
        got = fused.kernels()._exact_sum(a, b, 0, 0, 0, 0, np.empty(k + 1))
        assert got == math.fsum(terms) and math.copysign(1, got) == math.copysign(
            1, math.fsum(terms)) or got == 0 == math.fsum(terms), terms


def test_npusim_numba_0_turns_it_off():
    """On where numba imports (this process); off in a process started with
    ``NPUSIM_NUMBA=0``."""
    assert fused.ENABLED or os.environ.get("NPUSIM_NUMBA") == "0"
    code = ("from npusim.ascendc.cube import step_sums_numba as f; "
            "print(f.AVAILABLE, f.ENABLED)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, NPUSIM_NUMBA="0"), check=True).stdout
    assert out.split() == ["True", "False"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_fractals_loop_says_when_it_wrote_a_nan(dtype):
    """mmad_fractals_fused returns whether it wrote a NaN (Mmad makes C's NaNs canonical only
    then): an inf times a zero in one member's sums, a NaN start in another's, none in the
    third; and through Mmad (A with an inf, B the identity: inf * 0 in the inf's row) every
    NaN of C is the canonical 0x7FC00000, whatever NaN the host's arithmetic made."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_cube_layouts import aic_run, gm_tensor, identity_mmad_kernel, zn as to_zn, zz as to_zz
    from npusim.ascendc import Fixpipe, FixpipeParamsV220, float32
    rng = np.random.default_rng(11)
    k0 = 8 if dtype == np.float32 else 16
    G, M1, K1, N1 = 3, 2, 2, 9
    zz = rng.standard_normal((G, M1 * K1 * 16 * k0)).astype(dtype)
    zn = rng.standard_normal((G, K1 * N1 * 16 * k0)).astype(dtype)
    zz[0, 5], zn[0, 5 % k0] = np.inf, 0          # member 0: inf * 0 in row 0's first step
    for start in (None, np.zeros((G, N1, M1 * 16, 16), np.float32)):
        if start is not None:
            start[1, 2, 3, 4] = np.nan               # member 1: a NaN start
        for members, want in (([0], True), ([1], start is not None), ([2], False)):
            out = np.empty((1, N1, M1 * 16, 16), np.float32)
            init = None if start is None else start[members]
            got = fused.mmad_fractals_fused(zz[members], zn[members], M1, K1, N1, k0, init, out)
            assert got is want and bool(np.isnan(out).any()) is want
    m = n = 32
    a = rng.standard_normal((m, n)).astype(dtype)
    a[3, 7] = np.inf

    def body(c1, addr):
        Fixpipe(gm_tensor(float32, addr["out"], m * n), c1, FixpipeParamsV220(n, m, m, n))

    got, _ = aic_run(identity_mmad_kernel(m, n, dtype, body),
                     {"a_zz": to_zz(a, k0), "eye_zn": to_zn(np.eye(n, dtype=dtype), k0)},
                     {"out": (m * n, np.float32)})
    bits = got["out"].view(np.uint32).reshape(m, n)
    nan = np.isnan(got["out"].reshape(m, n))
    assert nan[3].sum() == n - 1 and nan.sum() == n - 1
    assert (bits[nan] == 0x7FC00000).all()
    np.testing.assert_array_equal(got["out"].reshape(m, n)[~nan], a.astype(np.float32)[~nan])
