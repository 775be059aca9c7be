"""Exp, Ln and Power give the same bytes whatever SIMD path the host's numpy takes, and are
correctly rounded but for a 1-ulp slip near a midpoint (npusim/ascendc/portable_math.py).

Independence: the instructions run in two child processes, one with numpy's run-time
dispatch as the host allows and one with every dispatchable CPU feature of this numpy
turned off (``NPY_DISABLE_CPU_FEATURES``: AVX2/FMA3/AVX-512 groups on x86-64, the ASIMD
extensions/SVE on arm64), and their outputs' SHA-256 must agree. numpy's own float32 exp
and log differ between those two runs on an AVX2 or AVX-512 host (the child reports it),
which is what made a result pinned on one machine fail on another.
Accuracy: against numpy's float64 exp/log/power, an independent reference (glibc's or
SVML's, within 1 float64 ulp, so to ~2**-29 float32 ulp).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from npusim.ascendc import portable_math as pm

try:                                            # numpy 2.x, then 1.x
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
except ImportError:                             # pragma: no cover
    from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__

ROOT = Path(__file__).parents[1]

#: The child: every instruction on float and half inputs covering normal range,
#: near-overflow, tiny, subnormal, +-0, +-inf, NaN and negatives; prints SHA-256 per case.
CHILD = r'''
import hashlib, json, sys
import numpy as np
sys.path.insert(0, "tests")
from test_lib_math import run_api
from npusim.ascendc import Exp, Ln, Power
from npusim.ascendc import portable_math as pm
try:
    from numpy._core._multiarray_umath import __cpu_features__
except ImportError:
    from numpy.core._multiarray_umath import __cpu_features__

def inputs(dt):
    rng = np.random.default_rng(11)
    fi = np.finfo(dt)
    big = float(np.log(fi.max))
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, float(fi.tiny),
               float(fi.smallest_subnormal), -float(fi.smallest_subnormal), float(fi.max),
               -float(fi.max), 0.5, 2.0, big, -big]
    parts = [np.array(special), rng.uniform(-big * 1.2, big * 1.2, 1500),
             rng.uniform(big - 0.5, big + 0.2, 200),                 # near overflow
             rng.uniform(-1e-3, 1e-3, 200),                          # tiny arguments
             np.exp(rng.uniform(np.log(float(fi.smallest_subnormal)), np.log(float(fi.max)),
                                1500)) * rng.choice([-1.0, 1.0], 1500),   # every magnitude
             rng.uniform(0.5, 2.0, 500)]                             # near 1
    x = np.concatenate(parts).astype(dt)
    return x[: len(x) // 64 * 64]

def h(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()

out = {}
for dt in (np.float32, np.float16):
    x = inputs(dt)
    name = np.dtype(dt).name
    out["Exp " + name] = h(run_api(Exp, x)[0])
    out["Ln " + name] = h(run_api(Ln, x)[0])
    for e in (0.5, 2.0, 3.0, -1.5, 0.9, 7.0, -2.0, 10.0):
        out[f"Power {e} {name}"] = h(run_api(lambda d, s, n: Power(d, s, e, n), x)[0])
    with np.errstate(all="ignore"):
        out["np.exp canary " + name] = h(np.exp(x))       # numpy's own: path-dependent
        out["np.log canary " + name] = h(np.log(x))
rng = np.random.default_rng(12)
d = rng.integers(0, 0x7FF0000000000001, 200000, dtype=np.int64).view(np.float64)
for label, v in (("exp64", rng.uniform(-750, 712, 200000)), ("log64", d)):
    out[label] = h(getattr(pm, label)(v))
out["pow64"] = h(pm.pow64(np.abs(d[:50000]) ** 0.01, rng.uniform(-300, 300, 50000)))
print(json.dumps({"features": {k: bool(v) for k, v in __cpu_features__.items()}, "sha": out}))
'''


def _child(disabled):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("NPY_DISABLE_CPU_FEATURES", None)
    if disabled:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(disabled)
    res = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_same_bytes_with_numpy_dispatch_on_and_off():
    # the dispatchable features this host has: turning them off leaves numpy's baseline
    disable = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
    if not disable:
        pytest.skip("this numpy has no dispatchable SIMD path on this host")
    on, off = _child(None), _child(disable)
    assert all(on["features"][f] for f in disable)
    assert not any(off["features"][f] for f in disable)        # dispatch really off
    ours = {k: v for k, v in on["sha"].items() if "canary" not in k}
    differ = [k for k in ours if ours[k] != off["sha"][k]]
    assert not differ, f"host-dependent bytes with {disable} off: {differ}"


# -- accuracy against float64 numpy --------------------------------------------------------
def _ulp_error(got, ref, dt):
    """|got - ref| in units of the spacing of dt at ref (float64 arithmetic)."""
    got = got.astype(np.float64)
    spacing = np.spacing(np.abs(ref).astype(dt)).astype(np.float64)
    return np.abs(got - ref) / spacing


def _round(f, *args, dt):
    out = np.empty(np.broadcast_shapes(*[np.shape(a) for a in args]), dt)
    return f(*args, out=out)


@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_correctly_rounded_but_near_a_midpoint(dt):
    """Half an ulp and 2**-20 ulp (float32) / 2**-30 ulp (half) of slack for the float64
    stage: at most 1 ulp off where the exact value lies that close to a midpoint, and
    almost every result the correctly rounded one (the module docstring's figures)."""
    rng = np.random.default_rng(3)
    fi = np.finfo(dt)
    hi = float(np.log(fi.max)) * 0.999
    lo = float(np.log(fi.smallest_subnormal))
    x = rng.uniform(lo, hi, 300000).astype(dt)
    p = np.exp(rng.uniform(np.log(float(fi.smallest_subnormal)), np.log(float(fi.max)),
                           300000)).astype(dt)
    p = p[np.isfinite(p) & (p > 0)]
    base = np.exp(rng.uniform(-3, 3, 100000)).astype(dt)
    slack = 2.0 ** (-20 if dt == np.float32 else -30)
    with np.errstate(all="ignore"):
        cases = [(pm.exp, (x,), np.exp(x.astype(np.float64)), slack),
                 (pm.ln, (p,), np.log(p.astype(np.float64)), slack)]
        for y in (0.37, 2.0, 3.0, -2.5, 9.0):
            # Power's float64 stage is good to 2**-44: 2**-20 float32 ulp of slack
            cases.append((lambda v, out, y=y: pm.power(v, dt(y), out=out), (base,),
                          np.power(base.astype(np.float64), float(dt(y))), 2.0 ** -16))
    for f, args, ref, tol in cases:
        got = _round(f, *args, dt=dt)
        finite = np.isfinite(ref) & (np.abs(ref) < float(fi.max))
        err = _ulp_error(got[finite], ref[finite], dt)
        assert err.max() <= 0.5 + tol
        assert np.mean(err > 0.5) < 1e-4                      # correctly rounded almost always


def test_float64_stage_within_about_one_ulp():
    """exp64/log64 against numpy's float64 exp/log (each within 1 ulp of exact): 2 ulp."""
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(-745, 709.7, 200000), rng.uniform(-1, 1, 100000)])
    d = rng.integers(1, 0x7FF0000000000000, 200000, dtype=np.int64).view(np.float64)
    for got, ref in ((pm.exp64(x), np.exp(x)), (pm.log64(d), np.log(d))):
        ok = np.isfinite(ref) & (ref != 0) & (np.abs(ref) > 2.0 ** -1022)
        assert np.max(np.abs(got[ok] - ref[ok]) / np.spacing(np.abs(ref[ok]))) <= 2.0


def test_special_values_are_c99s():
    inf, nan = np.inf, np.nan
    with np.errstate(all="ignore"):
        e = pm.exp64(np.array([nan, inf, -inf, 0.0, -0.0, 710.0, -746.0, 1e-320]))
        assert np.isnan(e[0]) and list(e[1:]) == [inf, 0.0, 1.0, 1.0, inf, 0.0, 1.0]
        v = pm.log64(np.array([nan, inf, -inf, 0.0, -0.0, -1.0, 1.0, 5e-324]))
        assert np.isnan(v[[0, 2, 5]]).all() and list(v[[1, 3, 4, 6]]) == [inf, -inf, -inf, 0.0]
        assert v[7] == np.log(5e-324)                      # subnormal input: exact scaling
    table = [  # (x, y, C99 pow)
        (nan, 0.0, 1.0), (1.0, nan, 1.0), (-1.0, inf, 1.0), (-1.0, -inf, 1.0),
        (-2.0, 0.5, nan), (-8.0, 3.0, -512.0), (-2.0, 2.0, 4.0), (-0.0, 3.0, -0.0),
        (-0.0, 0.5, 0.0), (0.0, -1.0, inf), (-0.0, -1.0, -inf), (-0.0, -2.0, inf),
        (0.5, -inf, inf), (2.0, -inf, 0.0), (0.5, inf, 0.0), (2.0, inf, inf),
        (inf, -1.0, 0.0), (inf, 0.5, inf), (-inf, 3.0, -inf), (-inf, 0.5, inf),
        (-inf, -3.0, -0.0), (-inf, -2.0, 0.0), (2.0, 10.0, 1024.0), (nan, 1.0, nan),
    ]
    for x, y, want in table:       # each way: one exponent, and an exponent per element
        for got in (pm.power(np.array([x]), y, out=np.empty(1, np.float32))[0],
                    pm.power(np.array([x]), np.array([y]), out=np.empty(1, np.float32))[0]):
            assert (np.isnan(want) and np.isnan(got)) or (
                got == want and np.signbit(got) == np.signbit(want)), (x, y, got)
