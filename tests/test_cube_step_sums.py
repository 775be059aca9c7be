"""Mmad's per-step sums from one float64 product of all steps
(npusim/ascendc/cube/step_sums.py): each step is its exact sum rounded to float64, then to
fp32, whatever order the product summed in; the same bits as the per-step products
(npusim/ascendc/cube/step_products.py) it replaces.

References: ``math.fsum`` of the exact products (the exact sum rounded once to float64),
then float32; inf/NaN by IEEE rules. Orders: the product is replaced by explicit sums in
k order, in reverse, pairwise, and by the exact sum pushed as far as the error bound of any
order allows (the worst a BLAS could do); in child processes, three of OpenBLAS's x86-64
kernels (as tests/test_cube_step_products.py does).

Every test runs on both renderings: numpy's, and the compiled loop
(npusim/ascendc/cube/step_sums_numba.py), skipped where numba is not installed.
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from npusim.ascendc.cube import step_sums as ss
from npusim.ascendc.cube import step_sums_numba as fused
from npusim.ascendc.cube.step_products import step_products

ROOT = Path(__file__).parents[1]
pytestmark = pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
BF16 = np.dtype(ml_dtypes.bfloat16)
K0 = {np.dtype(np.float16): 16, BF16: 16, np.dtype(np.float32): 8}


@pytest.fixture(autouse=True, params=["numpy", "numba"])
def rendering(request, monkeypatch):
    """Each test with numpy's rendering and with the compiled loop."""
    if request.param == "numba" and not fused.AVAILABLE:
        pytest.skip("numba is not installed (pip install 'npusim[fast]')")
    monkeypatch.setattr(fused, "ENABLED", request.param == "numba")
    return request.param


def exact_steps(a, b):
    """Per step and element: fp32 of math.fsum of the exact products; NaN where a product is
    NaN or the products hold +inf and -inf, else the infinity."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    S, M, k0 = a.shape
    N = b.shape[-1]
    out = np.empty((S, M, N), np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for s in range(S):
            prods = a64[s][:, None, :] * b64[s].T[None, :, :]          # (M, N, k0), exact
            for i in range(M):
                for j in range(N):
                    p = prods[i, j]
                    if np.isfinite(p).all():
                        out[s, i, j] = np.float32(math.fsum(p))
                    else:
                        out[s, i, j] = np.float32(np.sum(p))          # NaN or the infinity
    return out


def same_bits(x, y):
    """Equal as fp32 bit patterns, with every NaN alike and -0.0 taken as +0.0 (the zero's
    sign is the accumulation's business: mmad_steps makes it +0.0)."""
    x, y = x + np.float32(0), y + np.float32(0)
    nan = np.isnan(x)
    return np.array_equal(nan, np.isnan(y)) and np.array_equal(x.view(np.uint32)[~nan],
                                                               y.view(np.uint32)[~nan])


def operands(rng, dtype, S, M, N, spread, special=False):
    """Normal data times 2**uniform(-spread, spread), in ``dtype`` (large spreads reach the
    type's subnormals and, for half, overflow to inf); zero rows and columns; with
    ``special``, NaN and -inf entries."""
    dtype = np.dtype(dtype)
    k0 = K0[dtype]
    with np.errstate(over="ignore"):
        a = (rng.standard_normal((S, M, k0)) * np.exp2(rng.uniform(-spread, spread, (S, M, k0)))
             ).astype(dtype)
        b = (rng.standard_normal((S, k0, N)) * np.exp2(rng.uniform(-spread, spread, (S, k0, N)))
             ).astype(dtype)
    a[0, 1] = 0
    b[-1, :, 2] = 0
    if special:
        a[0, 3, 5] = np.nan
        b[1, 2, 4] = -np.inf
        a[1, 2, 2] = 0                 # 0 * -inf: NaN
    return a, b


def near_midpoints(dtype):
    """One step whose diagonal elements' exact sums sit on or next to fp32 rounding
    boundaries, most through cancellation, so that float64 sums in other orders round them
    the other way (k-order: 2**30 + 1 + 2**-24 + 2**-48 - 2**30 loses the two small terms;
    the exact sum lies just above the tie 1 + 2**-24). Pairs (A's row, B's column) of
    values every type holds."""
    pairs = [([1.0, 2.0 ** -12], [1.0, 2.0 ** -12]),                         # 1 + 2**-24: a tie
             ([2.0 ** 15, 1.0, 2.0 ** -12, 2.0 ** -24, -(2.0 ** 15)],
              [2.0 ** 15, 1.0, 2.0 ** -12, 2.0 ** -24, 2.0 ** 15]),          # just above it
             ([2.0 ** 15, 1.0, -(2.0 ** -12), -(2.0 ** -24), -(2.0 ** 15)],
              [2.0 ** 15, 1.0, 2.0 ** -12, 2.0 ** -24, 2.0 ** 15]),          # just below 1 - ...
             ([2.0 ** 14, 3.0, 2.0 ** -12, -(2.0 ** 14)], [2.0 ** 14, 1.0, 2.0 ** -11, 2.0 ** 14])]
    k0 = K0[np.dtype(dtype)]
    P = len(pairs)
    a, b = np.zeros((1, P, k0)), np.full((1, k0, P), 0.5)
    for i, (row, col) in enumerate(pairs):
        a[0, i, :len(row)] = row
        b[0, :len(col), i] = col
    return a.astype(dtype), b.astype(dtype)


CASES = [(np.float16, 0), (np.float16, 6), (np.float16, 14), (BF16, 0), (BF16, 20),
         (BF16, 60), (np.float32, 0), (np.float32, 20), (np.float32, 60)]


@pytest.mark.parametrize("dtype,spread", CASES, ids=[f"{np.dtype(d).name}-{s}" for d, s in CASES])
def test_each_step_is_its_exact_sum_rounded_to_float64_then_fp32(dtype, spread):
    rng = np.random.default_rng(spread)
    a, b = operands(rng, dtype, 3, 20, 24, spread, special=spread == 0)
    assert same_bits(ss.rounded_step_sums(a, b), exact_steps(a, b))
    a, b = near_midpoints(dtype)
    assert same_bits(ss.rounded_step_sums(a, b), exact_steps(a, b))


def _sequential(reverse):
    def matmul(a, b, out):
        k0 = a.shape[-1]
        order = range(k0 - 1, -1, -1) if reverse else range(k0)
        out[...] = 0
        for j in order:
            out += a[:, :, j:j + 1] * b[:, j:j + 1, :]
        return out
    return matmul


def _pairwise(a, b, out):
    terms = [a[:, :, j:j + 1] * b[:, j:j + 1, :] for j in range(a.shape[-1])]
    while len(terms) > 1:
        terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
    out[...] = terms[0]
    return out


def _worst(sign):
    """The exact sum moved by 0.9 of the bound any order's error keeps within, (k0 - 1) u /
    (1 - (k0 - 1) u) * sum |p| (u = 2**-53), towards ``sign``."""
    def matmul(a, b, out):
        k0 = a.shape[-1]
        prods = a[:, :, None, :] * b.transpose(0, 2, 1)[:, None, :, :]      # S, M, N, k0
        exact = np.array([math.fsum(p) if np.isfinite(p).all() else np.sum(p)
                          for p in prods.reshape(-1, k0)])
        bound = (k0 - 1) * 2.0 ** -53 * np.abs(prods).sum(axis=-1).reshape(-1)
        out[...] = np.where(np.isfinite(exact), exact + sign * 0.9 * bound, exact).reshape(
            out.shape)
        return out
    return matmul


def _skipping_zeros(a, b, out):
    """k order, leaving out the products with a zero factor, as a BLAS loop may (the
    reference dgemm's ``IF (B(L,J).NE.ZERO)``): an ``inf * 0`` then goes missing."""
    out[...] = 0
    for j in range(a.shape[-1]):
        aj, bj = a[:, :, j:j + 1], b[:, j:j + 1, :]
        out += np.where((aj != 0) & (bj != 0), aj * bj, 0.0)
    return out


ORDERS = {"forward": _sequential(False), "reverse": _sequential(True), "pairwise": _pairwise,
          "worst-up": _worst(1), "worst-down": _worst(-1), "skipping-zeros": _skipping_zeros}


@pytest.mark.parametrize("dtype,spread", [(np.float16, 14), (BF16, 40), (np.float32, 40)],
                         ids=["float16", "bfloat16", "float32"])
def test_same_bits_whatever_order_the_product_sums_in(dtype, spread, monkeypatch):
    rng = np.random.default_rng(7)
    sets = [operands(rng, dtype, 2, 24, 32, spread, special=True), near_midpoints(dtype)]
    want = [exact_steps(a, b) for a, b in sets]
    for name, matmul in ORDERS.items():
        monkeypatch.setattr(ss, "_MATMUL", matmul)
        for (a, b), w in zip(sets, want):
            assert same_bits(ss.rounded_step_sums(a, b), w), name


def poisoned(rng, dtype, spread, S=3, M=40, N=48):
    """:func:`operands` with the padding a kernel never fills: whole rows of A NaN, +inf
    or -inf (in some steps only), a whole column of B inf, against zeros in A (inf * 0),
    and columns of mixed signs."""
    a, b = operands(rng, dtype, S, M, N, spread)
    a[:, -8:] = np.nan                  # poisoned padding rows
    a[1, 3] = np.inf
    a[2, 4, 1] = -np.inf
    a[0, 5, ::2] = 0                    # zeros that meet B's inf column
    b[0, :, -1] = np.inf                # an inf column
    b[2, 1, -2] = -np.inf               # one -inf in a column
    b[2, 1, 7] = np.inf
    a[2, 6, 1] = 0
    return a, b


@pytest.mark.parametrize("dtype,spread", [(np.float16, 14), (BF16, 40), (np.float32, 40),
                                          (np.float32, 0)],
                         ids=["float16", "bfloat16", "float32", "float32-narrow"])
def test_rows_and_columns_of_inf_and_nan_whatever_the_order(dtype, spread, monkeypatch):
    """Rows and columns holding inf or NaN, whole padding rows among them: NaN or the
    infinity by IEEE rules, whatever order the product sums in; the finite elements next
    to them still their exact sums."""
    rng = np.random.default_rng(11)
    a, b = poisoned(rng, dtype, spread)
    want = exact_steps(a, b)
    assert np.isnan(want[:, -8:]).all() and np.isinf(want).any()
    for name, matmul in ORDERS.items():
        monkeypatch.setattr(ss, "_MATMUL", matmul)
        assert same_bits(ss.rounded_step_sums(a, b), want), name


def test_the_order_matters_without_the_checks(monkeypatch):
    """The near-midpoint steps do tell the orders apart: the product's own fp32 rounding
    (what the checks guard) differs from the exact sum's under the worst orders."""
    for dtype in (np.float16, np.float32):
        a, b = near_midpoints(dtype)
        want = exact_steps(a, b)
        r = np.empty(a.shape[:2] + b.shape[-1:])
        moved = [not same_bits(_worst(sign)(a.astype(float), b.astype(float), r)
                               .astype(np.float32), want) for sign in (1, -1)]
        assert any(moved)


@pytest.mark.parametrize("dtype,spread", CASES, ids=[f"{np.dtype(d).name}-{s}" for d, s in CASES])
def test_identical_to_the_per_step_products(dtype, spread):
    """Against the per-step rendering Mmad used before (step_products, then fp32): the same
    bits on random data (it too gives the exact sum rounded once wherever it sums half and
    bfloat16 in one or two pieces; float32's sliced sums are within an ulp of it)."""
    rng = np.random.default_rng(100 + spread)
    a, b = operands(rng, dtype, 4, 64, 80, spread, special=spread == 0)
    with np.errstate(invalid="ignore"):
        old = step_products(a.astype(np.float64), b.astype(np.float64), dtype).astype(np.float32)
    assert same_bits(ss.rounded_step_sums(a, b), old)


def test_mmad_steps_accumulate_in_k_order_from_the_start():
    """init + step 0 + step 1 + ... in fp32, member by member, into L0C's NZ order (any
    number of members per product: the chunking does not show; onto the start itself);
    zeros come out +0.0."""
    rng = np.random.default_rng(3)
    G, S, M, N = 5, 3, 32, 48
    a = rng.standard_normal((G, S, M, 16)).astype(np.float16)
    b = rng.standard_normal((G, S, 16, N)).astype(np.float16)
    a[1] = -0.0                                        # member 1: every product -0.0 or 0
    init = rng.standard_normal((G, M, N)).astype(np.float32)
    init[1] = -0.0

    def nz(x):                                         # (G, M, N) -> (G, N/16, M, 16)
        return np.ascontiguousarray(x.reshape(G, M, N // 16, 16).transpose(0, 2, 1, 3))

    for start in (None, init):
        want = np.zeros((G, M, N), np.float32) if start is None else start.copy()
        for g in range(G):
            for s in range(S):
                want[g] = want[g] + exact_steps(a[g, s:s + 1], b[g, s:s + 1])[0]
        want = nz(want + np.float32(0)).view(np.uint32)
        for chunk in (1 << 18, 1):
            old = ss._CHUNK
            ss._CHUNK = chunk
            try:
                got = ss.mmad_steps(a, b, None if start is None else nz(start),
                                    np.empty((G, N // 16, M, 16), np.float32))
            finally:
                ss._CHUNK = old
            assert np.array_equal(got.view(np.uint32), want)
            assert not np.signbit(got[1]).any()
        if start is not None:         # accumulating in place (Mmad onto its own L0C)
            got = nz(start)
            ss.mmad_steps(a, b, got, got)
            assert np.array_equal(got.view(np.uint32), want)


CHILD = r'''
import hashlib, importlib.util, json, sys
import numpy as np, ml_dtypes
spec = importlib.util.spec_from_file_location("step_sums", sys.argv[1])
ss = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ss)
rng = np.random.default_rng(5)
out = {}
for dt, k0, spread in ((np.float32, 8, 12), (np.float16, 16, 6), (ml_dtypes.bfloat16, 16, 20)):
    for rows in (1, 3, 64):
        a, b = [(rng.standard_normal(shape) * np.exp2(rng.uniform(-spread, spread, shape)))
                .astype(dt) for shape in ((5, rows, k0), (5, k0, 48))]
        got = ss.rounded_step_sums(a, b) + np.float32(0)
        out[f"{np.dtype(dt).name} {rows}"] = hashlib.sha256(got.tobytes()).hexdigest()[:16]
print(json.dumps(out))
'''


@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64",
                    reason="OpenBLAS core types of x86-64")
def test_same_bytes_under_every_openblas_kernel(rendering):
    if rendering == "numba":
        pytest.skip("the compiled loop calls no BLAS")
    from threadpoolctl import threadpool_info
    if not any(lib.get("internal_api") == "openblas" for lib in threadpool_info()):
        pytest.skip("numpy's BLAS is not OpenBLAS")
    module = ROOT / "npusim" / "ascendc" / "cube" / "step_sums.py"
    children = {core: subprocess.Popen(
        [sys.executable, "-c", CHILD, str(module)], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, OPENBLAS_CORETYPE=core, NPUSIM_NUMBA=str(int(rendering == "numba")),
                 PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])))
        for core in ("Katmai", "Nehalem", "Haswell")}
    runs = {}
    for core, child in children.items():
        stdout, stderr = child.communicate(timeout=300)
        assert child.returncode == 0, stderr[-2000:]
        runs[core] = json.loads(stdout.strip().splitlines()[-1])
    assert runs["Katmai"] == runs["Nehalem"] == runs["Haswell"]
