"""Mmad's per-step float64 sums are the same bits whatever BLAS kernel the host runs
(npusim/ascendc/cube/step_products.py), and they are the exact sums where the module says
so.

Independence: the per-step sums run in child processes that each force another of
OpenBLAS's x86-64 kernels (``OPENBLAS_CORETYPE``: Katmai, Nehalem, Haswell), which sum a
dot product in different orders: numpy's own float64 ``matmul`` of the same operands gives
different bytes under them (the child run with ``blas``), :func:`step_products` must not.
(After the rounding to fp32 such a difference is rare, ~2**-29 per element, which is why
the float64 stage is what the test compares.) Exactness: against ``math.fsum`` of the
exact products.
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
from threadpoolctl import threadpool_info

from npusim.ascendc.cube.step_products import step_products

ROOT = Path(__file__).parents[1]

CHILD = r'''
import hashlib, importlib.util, json, sys
import numpy as np, ml_dtypes
# the module alone (it needs numpy only): a child that starts in a fraction of a second
spec = importlib.util.spec_from_file_location("step_products", sys.argv[1])
sp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sp)
products = np.matmul if sys.argv[2] == "blas" else sp.step_products
rng = np.random.default_rng(5)
out = {}
for dt, k0, spread in ((np.float32, 8, 12), (np.float16, 16, 6), (ml_dtypes.bfloat16, 16, 20)):
    for rows in (1, 3, 64):                                        # 1: the cube's GEMV
        a, b = [(rng.standard_normal(shape) * np.exp2(rng.uniform(-spread, spread, shape)))
                .astype(dt).astype(np.float64) for shape in ((5, rows, k0), (5, k0, 48))]
        got = products(a, b, dt) if products is not np.matmul else np.matmul(a, b)
        out[f"{np.dtype(dt).name} {rows}"] = hashlib.sha256(got.tobytes()).hexdigest()[:16]
print(json.dumps(out))
'''


def _blas_is_openblas() -> bool:
    return any(lib.get("internal_api") == "openblas" for lib in threadpool_info())


@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64",
                    reason="OpenBLAS core types of x86-64")
def test_same_bytes_under_every_openblas_kernel():
    if not _blas_is_openblas():
        pytest.skip("numpy's BLAS is not OpenBLAS")
    runs = _under_each_kernel("step_products")
    first = runs["Katmai"]
    for core, got in runs.items():
        differ = [k for k in first if got[k] != first[k]]
        assert not differ, f"{core}: {differ}"


def _under_each_kernel(products: str) -> dict:
    """The child's hashes under three OpenBLAS kernels (three summation orders here)."""
    module = ROOT / "npusim" / "ascendc" / "cube" / "step_products.py"
    children = {core: subprocess.Popen(
        [sys.executable, "-c", CHILD, str(module), products], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=dict(os.environ, OPENBLAS_CORETYPE=core))
        for core in ("Katmai", "Nehalem", "Haswell")}
    runs = {}
    for core, child in children.items():
        stdout, stderr = child.communicate(timeout=300)
        assert child.returncode == 0, stderr[-2000:]
        runs[core] = json.loads(stdout.strip().splitlines()[-1])
    return runs


def _exact(a, b):
    """math.fsum of the exact products per step and element: the exact sum rounded once."""
    S, M, k0 = a.shape
    N = b.shape[-1]
    out = np.empty((S, M, N))
    for s in range(S):
        for i in range(M):
            for j in range(N):
                out[s, i, j] = math.fsum(a[s, i] * b[s, :, j])      # products exact
    return out


@pytest.mark.parametrize("dt,k0,spread", [(np.float16, 16, 0), (np.float16, 16, 3),
                                          (ml_dtypes.bfloat16, 16, 6), (np.float32, 8, 0),
                                          (np.float32, 8, 20)])
def test_exact_sums_where_the_spans_allow_within_an_ulp_elsewhere(dt, k0, spread):
    rng = np.random.default_rng(9)
    shape_a, shape_b = (3, 20, k0), (3, k0, 24)
    a = (rng.standard_normal(shape_a) * np.exp2(rng.uniform(-spread, spread, shape_a)))
    b = (rng.standard_normal(shape_b) * np.exp2(rng.uniform(-spread, spread, shape_b)))
    a, b = a.astype(dt).astype(np.float64), b.astype(dt).astype(np.float64)
    a[0, 3] = 0.0                                          # zero rows and columns
    b[1, :, 5] = 0.0
    got, ref = step_products(a, b, dt), _exact(a, b)
    if dt != np.float32:
        # half and bfloat16: one dgemm or two chunks, so the exact sum rounded once
        assert np.array_equal(got, ref)
    else:
        # float32: sliced, the exact partials added in float64
        assert np.all(np.abs(got - ref) <= 2 * np.spacing(np.abs(ref)))


def test_inf_and_nan_sum_in_k_order():
    a = np.array([[[1.0, np.inf, 2.0, -1.0, 0.0, 0.0, 0.0, 0.0]]])
    b = np.ones((1, 8, 2))
    b[0, 1, 1] = 0.0                                       # inf * 0: NaN
    got = step_products(a, b, np.float32)
    assert got[0, 0, 0] == np.inf and np.isnan(got[0, 0, 1])
