"""Ascend C high-level math APIs (npusim.ascendc.lib.math): accuracy against float64 math
in ulp of the output type, special values, the instruction sequence each API issues (its
cost comes from those records), the temporary-buffer host functions and every error path.

Each API runs in a one-block kernel that copies the input GM -> UB, calls the API and
copies the result back, with the kernel checker on (so an API that read UB it never
wrote, or raced, would fail here).
"""
import ml_dtypes
import numpy as np
import pytest
from scipy.special import erf as erf64

from npusim import DtypeError, GlobalMemory, KernelError, UbError, get_soc, run_kernel
from npusim.ascendc import (DataCopy, Duplicate, GlobalTensor, HardEvent, PIPE_V, SetFlag,
                            TBuf, TPipe, WaitFlag, float32, half, int32_t, uint8_t)
from npusim.ascendc import core as _core
from npusim.ascendc.lib import math as M

SOC = get_soc("Ascend910B1")


# -- harness ---------------------------------------------------------------------------
def run_api(fn, x, *, tmp_bytes=None, count=None, prefill=None, soc=SOC, reserve_ub=True,
            **kw):
    """y = fn(dst, src[, tmp], count, **kw) on x; returns (y, PIPE_V names, their cycles)."""
    x = np.asarray(x)
    dt, n = x.dtype, len(x)
    assert (n * dt.itemsize) % 32 == 0
    gm = GlobalMemory(soc.memory_size)
    xin, out = gm.malloc(n * dt.itemsize), gm.malloc(n * dt.itemsize)
    gm.write(xin, x)
    got = {}

    def kernel():
        pipe = TPipe()
        bx, by = TBuf(), TBuf()
        pipe.InitBuffer(bx, n * dt.itemsize)
        pipe.InitBuffer(by, n * dt.itemsize)
        xl, yl = bx.Get(dt), by.Get(dt)
        args = []
        if tmp_bytes is not None:
            bt = TBuf()
            pipe.InitBuffer(bt, tmp_bytes)
            args.append(bt.Get(uint8_t, tmp_bytes))
        gi, go = GlobalTensor(dt), GlobalTensor(dt)
        gi.SetGlobalBuffer(xin, n)
        go.SetGlobalBuffer(out, n)
        DataCopy(xl, gi, n)
        if prefill is not None:
            Duplicate(yl, prefill, n)
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        start = len(_core.current_core().records)
        fn(yl, xl, *args, n if count is None else count, **kw)
        recs = [r for r in _core.current_core().records[start:] if r[1] == PIPE_V]
        got["names"] = [r[5] for r in recs]
        got["cycles"] = sum(r[2] for r in recs)
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        DataCopy(go, yl, n)

    run_kernel(kernel, 1, (), soc=soc, gm=gm, reserve_ub=reserve_ub)
    return np.frombuffer(gm.read(out, n * dt.itemsize), dt).copy(), got["names"], got["cycles"]


def ulp_errors(out, ref, dtype):
    """|out - ref| in units of the spacing of ref rounded to ``dtype`` (0 where both are
    the same non-finite value, inf where only one is)."""
    out, ref = out.astype(np.float64), np.asarray(ref, np.float64)
    spacing = np.spacing(np.abs(ref.astype(dtype))).astype(np.float64)
    err = np.abs(out - ref) / spacing
    same = (out == ref) | (np.isnan(out) & np.isnan(ref))
    return np.where(np.isfinite(ref), err, np.where(same, 0.0, np.inf))


def max_ulp_error(out, ref, dtype):
    return float(ulp_errors(out, ref, dtype).max())


def max_abs_error(out, ref):
    return float(np.abs(out.astype(np.float64) - np.asarray(ref, np.float64)).max())


def sigmoid64(x):
    return 1.0 / (1.0 + np.exp(-x))


def gelu64(x):
    return x / (1.0 + np.exp(-1.5957691216057308 * (x + 0.044715 * x ** 3)))


def faster_gelu64(x):
    return x / (1.0 + np.exp(-1.702 * x))


F32, F16 = np.float32, np.float16
L = np.linspace

# (id, api, kwargs, dtype, inputs, reference, max ulp) — bounds are the measured maxima
# (docstrings of npusim.ascendc.lib.math) rounded up a little
ACCURACY = [
    ("sigmoid-f32", M.Sigmoid, {}, F32, L(-87, 80, 4096), sigmoid64, 2.2),
    ("sigmoid-f16", M.Sigmoid, {}, F16, L(-9, 12, 4096), sigmoid64, 1.9),
    ("tanh-f32", M.Tanh, {}, F32, np.r_[L(-10, -0.5, 2048), L(0.5, 10, 2048)], np.tanh, 2.3),
    ("tanh-f16", M.Tanh, {}, F16, L(-10, 10, 4096), np.tanh, 0.51),
    ("gelu-f32", M.Gelu, {}, F32, L(-3, 3, 4096), gelu64, 9.9),
    ("gelu-f32-tail", M.Gelu, {}, F32, L(-5.5, 8, 4096), gelu64, 40),
    ("gelu-f32-perf", M.Gelu, dict(highPerformance=True), F32, L(-3, 3, 4096), gelu64, 9.9),
    ("gelu-f16", M.Gelu, {}, F16, L(-8, 8, 4096), gelu64, 16.5),
    ("gelu-f16-hp", M.Gelu, dict(highPrecision=True), F16, L(-8, 8, 4096), gelu64, 0.51),
    ("fastergelu-f32", M.FasterGelu, {}, F32, L(-3, 3, 4096), faster_gelu64, 6),
    ("fastergelu-f32-wide", M.FasterGelu, {}, F32, L(-8, 8, 4096), faster_gelu64, 10.7),
    ("fastergelu-f16", M.FasterGelu, {}, F16, L(-6.4, 8, 4096), faster_gelu64, 9.7),
    ("fastergelu-f16-hp", M.FasterGelu, dict(highPrecision=True), F16, L(-8, 8, 4096),
     faster_gelu64, 0.51),
    ("erf-f32", M.Erf, {}, F32, L(-6, 6, 4096), erf64, 4.2),
    ("erf-f32-small", M.Erf, {}, F32, L(-0.01, 0.01, 4096), erf64, 4.1),
    ("erf-f16", M.Erf, {}, F16, L(-6, 6, 4096), erf64, 0.51),
    ("exp-f32", M.Exp, dict(taylorExpandLevel=10), F32, L(-87, 88, 4096), np.exp, 4.8),
    ("exp-f32-reuse", M.Exp, dict(taylorExpandLevel=10, isReuseSource=True), F32,
     L(-87, 88, 4096), np.exp, 4.8),
    ("exp-f16", M.Exp, dict(taylorExpandLevel=10), F16, L(-17, 11, 4096), np.exp, 0.51),
    ("log-f32", M.Log, {}, F32, np.geomspace(1e-30, 1e30, 4096), np.log, 1.8),
    ("log-f16", M.Log, {}, F16, np.geomspace(1e-4, 6e4, 4096), np.log, 0.51),
    ("log2-f32", M.Log2, {}, F32, np.geomspace(1e-30, 1e30, 4096), np.log2, 2.5),
    ("log2-f16", M.Log2, {}, F16, np.geomspace(1e-4, 6e4, 4096), np.log2, 0.51),
    ("log10-f32", M.Log10, {}, F32, np.geomspace(1e-30, 1e30, 4096), np.log10, 3.3),
    ("log10-f16", M.Log10, {}, F16, np.geomspace(1e-4, 6e4, 4096), np.log10, 1.5),
    ("sin-f32", M.Sin, {}, F32, L(-4, 4, 4096), np.sin, 2.0),
    ("sin-f32-reuse", M.Sin, dict(isReuseSource=True), F32, L(-4, 4, 4096), np.sin, 2.0),
    ("sin-f16", M.Sin, {}, F16, L(-65504, 65504, 8192), np.sin, 0.51),
    ("cos-f32", M.Cos, {}, F32, L(-4, 4, 4096), np.cos, 4.7),
    ("cos-f16", M.Cos, {}, F16, L(-65504, 65504, 8192), np.cos, 0.51),
]


@pytest.mark.parametrize("api, kw, dtype, xs, ref, bound",
                         [a[1:] for a in ACCURACY], ids=[a[0] for a in ACCURACY])
def test_accuracy_in_ulp(api, kw, dtype, xs, ref, bound):
    x = xs.astype(dtype)
    y, _, _ = run_api(api, x, **kw)
    assert max_ulp_error(y, ref(x.astype(np.float64)), dtype) <= bound


@pytest.mark.parametrize("api, kw, xs, ref, bound", [
    (M.Tanh, {}, L(-0.5, 0.5, 4096), np.tanh, 8.5e-8),          # e^2x - 1 cancellation
    (M.Sin, {}, L(-65504, 65504, 8192), np.sin, 1.2e-7),        # the documented range
    (M.Cos, {}, L(-65504, 65504, 8192), np.cos, 1.4e-7),
    (M.Gelu, {}, L(-8, 8, 4096), gelu64, 5e-7),
], ids=["tanh-near-0", "sin-range", "cos-range", "gelu-tail"])
def test_absolute_error_where_ulp_is_not_the_measure(api, kw, xs, ref, bound):
    x = xs.astype(F32)
    y, _, _ = run_api(api, x, **kw)
    assert max_abs_error(y, ref(x.astype(np.float64))) <= bound


def test_the_accuracy_check_can_fail():
    """The harness's ulp measure sees a one-ulp and a Taylor-truncation error."""
    x = L(0.5, 2, 64).astype(F32)
    ref = np.exp(x.astype(np.float64))
    assert max_ulp_error(np.nextafter(ref.astype(F32), F32(np.inf)), ref, F32) > 0.5
    y, _, _ = run_api(M.Exp, x, taylorExpandLevel=3)          # 3 Taylor terms: ~1e-3 off
    assert max_ulp_error(y, ref, F32) > 1000


# -- special values --------------------------------------------------------------------
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 60000.0, -60000.0, 1.5, -1.5, 2.5,
                    -2.5, 0.5, -0.5, 3.0, 1e-3, -1e-3])
N, P = np.nan, np.inf
EXPECT_SPECIAL = {   # exact expectations for the non-smooth entries, per API (both dtypes)
    "Sigmoid": {0: 0.5, 2: 1.0, 3: 0.0, 4: N, 5: 1.0, 6: 0.0},
    "Tanh": {0: 0.0, 2: 1.0, 3: -1.0, 4: N, 5: 1.0, 6: -1.0},
    "Gelu": {0: 0.0, 2: P, 3: N, 4: N, 5: 60000.0, 6: 0.0},
    "FasterGelu": {0: 0.0, 2: P, 3: N, 4: N, 5: 60000.0, 6: 0.0},
    "Erf": {0: 0.0, 2: 1.0, 3: -1.0, 4: N, 5: 1.0, 6: -1.0},
    "Exp": {0: 1.0, 2: N, 3: N, 4: N, 5: P, 6: 0.0},
    "Log": {0: -P, 1: -P, 2: P, 3: N, 4: N, 6: N, 8: N},
    "Sign": {0: 0.0, 1: 0.0, 2: 1.0, 3: -1.0, 4: 0.0, 5: 1.0, 6: -1.0, 14: 1.0, 15: -1.0},
    "Sin": {0: 0.0, 2: N, 3: N, 4: N},
    "Cos": {0: 1.0, 2: N, 3: N, 4: N},
    "Floor": {2: P, 3: -P, 4: N, 7: 1, 8: -2, 9: 2, 10: -3, 11: 0, 12: -1, 14: 0, 15: -1},
    "Ceil": {2: P, 3: -P, 4: N, 7: 2, 8: -1, 9: 3, 10: -2, 11: 1, 12: 0, 14: 1, 15: 0},
    "Round": {2: P, 3: -P, 4: N, 7: 2, 8: -2, 9: 2, 10: -2, 11: 0, 12: 0, 13: 3},
    "Trunc": {2: P, 3: -P, 4: N, 7: 1, 8: -1, 9: 2, 10: -2, 11: 0, 12: 0, 14: 0, 15: 0},
}
KW = {"Exp": dict(taylorExpandLevel=10)}


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("name", list(EXPECT_SPECIAL))
def test_special_values(name, dtype):
    x = SPECIAL.astype(dtype)
    y, _, _ = run_api(getattr(M, name), x, **KW.get(name, {}))
    for i, want in EXPECT_SPECIAL[name].items():
        if np.isnan(want):
            assert np.isnan(y[i]), (i, x[i], y[i])
        else:
            assert y[i] == want, (i, x[i], y[i])


def test_sign_of_negative_zero_for_odd_functions():
    """Erf keeps -0 (x * P/Q); Sin(-0) is a zero whose sign comes out of its range
    reduction x - k*pi with k = round(-0 / pi) = -0 (Cast keeps the sign of zero, as IEEE
    roundToIntegral does), i.e. +0 [R: the hardware's sign of zero here is not published]."""
    for dt in (F32, F16):
        y, _, _ = run_api(M.Erf, np.array([-0.0] * 16, dt))
        assert y[0] == 0 and np.signbit(y[0])
        y, _, _ = run_api(M.Sin, np.array([-0.0] * 16, dt))
        assert y[0] == 0


# -- the instruction sequences (the cost is their records') ----------------------------
def _exp_seq(level, half):
    body = ["Cast" if half else "Adds", "Cast", "Sub", "Exp", "Adds", "Adds", "Adds"]
    body += ["Mul", "Muls", "Add"] * (level - 1) + ["Mul"]
    return body + (["Cast"] if half else [])


_SIN_REDUCE = ["Muls", "Cast"] + ["Muls", "Sub"] * 4
_COS_REDUCE = ["Muls", "Adds", "Cast", "Muls", "Sub", "Muls", "Sub", "Adds"] + \
    ["Muls", "Sub"] * 3 + ["Adds"]
_POLY = ["Mul", "Muls", "Cast", "Muls", "Muls", "Add", "Adds", "Muls", "Adds"] + \
    ["Mul", "Adds"] * 3 + ["Mul", "Mul"]
_ERF = ["Mins", "Maxs", "Mul", "Muls"] + ["Adds", "Mul"] * 5 + ["Adds"] + \
    ["Mul", "Adds"] * 4 + ["Div"]
_GELU = ["Mul", "Mul", "Muls", "Add", "Muls", "Mins", "Exp", "Abs", "Muls", "Exp", "Adds"]


def _cast_around(seq):
    return ["Cast"] + seq + ["Cast"]


SEQUENCES = [   # (id, api, kwargs, dtype, one chunk's PIPE_V instructions)
    ("sigmoid", M.Sigmoid, {}, F32, ["Muls", "Exp", "Adds", "Duplicate", "Div"]),
    ("sigmoid-f16", M.Sigmoid, {}, F16, ["Muls", "Exp", "Adds", "Duplicate", "Div"]),
    ("tanh", M.Tanh, {}, F32, ["Mins", "Maxs", "Muls", "Exp", "Adds", "Adds", "Div"]),
    ("tanh-f16", M.Tanh, {}, F16,
     _cast_around(["Mins", "Maxs", "Muls", "Exp", "Adds", "Adds", "Div"])),
    ("gelu", M.Gelu, {}, F32, _GELU + ["Div", "Mul"]),
    ("gelu-perf", M.Gelu, dict(highPerformance=True), F32, _GELU + ["Reciprocal", "Mul", "Mul"]),
    ("gelu-f16-hp", M.Gelu, dict(highPrecision=True), F16, _cast_around(_GELU + ["Div", "Mul"])),
    ("fastergelu", M.FasterGelu, {}, F16, ["Muls", "Exp", "Adds", "Div"]),
    ("fastergelu-perf", M.FasterGelu, dict(highPerformance=True), F32,
     ["Muls", "Exp", "Adds", "Reciprocal", "Mul"]),
    ("erf", M.Erf, {}, F32, _ERF),
    ("erf-f16", M.Erf, {}, F16, _cast_around(_ERF)),
    ("exp-10", M.Exp, dict(taylorExpandLevel=10), F32, _exp_seq(10, False)),
    ("exp-3-f16", M.Exp, dict(taylorExpandLevel=3), F16, _exp_seq(3, True)),
    ("exp-0", M.Exp, dict(taylorExpandLevel=0), F32, ["Exp"]),
    ("log", M.Log, {}, F16, ["Ln"]),
    ("log2", M.Log2, {}, F32, ["Ln", "Muls"]),
    ("log2-f16", M.Log2, {}, F16, ["Cast", "Ln", "Muls", "Cast"]),
    ("log10", M.Log10, {}, F16, ["Ln", "Muls"]),
    ("sign", M.Sign, {}, F32, ["Duplicate", "Compare", "Compare", "Duplicate", "Select",
                               "Duplicate", "Select", "Add"]),
    ("sin", M.Sin, {}, F32, _SIN_REDUCE + _POLY),
    ("sin-f16", M.Sin, {}, F16, _cast_around(_SIN_REDUCE + _POLY)),
    ("cos", M.Cos, {}, F32, _COS_REDUCE + _POLY + ["Mins", "Maxs"]),
    ("floor", M.Floor, {}, F32, ["Cast"]),
    ("floor-f16", M.Floor, {}, F16, ["Cast", "Cast", "Cast"]),
    ("ceil-f16", M.Ceil, {}, F16, ["Cast", "Cast", "Cast"]),
    ("round", M.Round, {}, F32, ["Cast"]),
    ("trunc", M.Trunc, {}, F32, ["Cast"]),
]


@pytest.mark.parametrize("api, kw, dtype, seq", [s[1:] for s in SEQUENCES],
                         ids=[s[0] for s in SEQUENCES])
def test_instruction_sequence_of_one_chunk(api, kw, dtype, seq):
    """256 elements fit one chunk of the 8 KiB framework buffer: the records are exactly
    the library's sequence."""
    _, names, _ = run_api(api, np.linspace(0.1, 3, 256).astype(dtype), **kw)
    assert names == seq


def test_chunks_follow_the_tmp_buffer_size_and_cost_follows_the_records():
    """Sigmoid float, 1024 elements: a 256 B tmp buffer gives 16 chunks of 64 (80
    instructions), a 4 KiB one a single chunk (5 instructions) — and fewer, longer
    instructions cost fewer PIPE_V cycles (the page's "larger buffer, better
    performance")."""
    x = np.linspace(-4, 4, 1024).astype(F32)
    y_small, names_small, cyc_small = run_api(M.Sigmoid, x, tmp_bytes=256)
    y_big, names_big, cyc_big = run_api(M.Sigmoid, x, tmp_bytes=4096)
    assert names_small == ["Muls", "Exp", "Adds", "Duplicate", "Div"] * 16
    assert names_big == ["Muls", "Exp", "Adds", "Duplicate", "Div"]
    assert np.array_equal(y_small, y_big)
    assert cyc_big < cyc_small


def test_half_chunk_layouts_split_like_the_library():
    """Chunk sizes from the tmp buffer: Sin half with 2048 B -> 2048/4/4 = 128 floats per
    chunk; Sign float with 768 B -> 768/4/3 = 64; Exp half with 1024 B -> 256/4 = 64."""
    x = np.linspace(-2, 2, 512)
    _, names, _ = run_api(M.Sin, x.astype(F16), tmp_bytes=2048)
    assert len(names) == 4 * len(_cast_around(_SIN_REDUCE + _POLY))
    _, names, _ = run_api(M.Sign, x.astype(F32), tmp_bytes=768)
    assert names.count("Add") == 512 // 64
    _, names, _ = run_api(M.Exp, x.astype(F16), tmp_bytes=1024, taylorExpandLevel=4)
    assert names == _exp_seq(4, True) * (512 // 64)


# -- forms and options -----------------------------------------------------------------
def test_partial_count_leaves_the_rest_and_sign_handles_an_unaligned_count():
    """calCount = 100 of 128 halves: Sign's compares then cover 100 elements (not whole 256 B
    repeats) and the last 28 outputs keep their old value."""
    x = np.linspace(-3, 3, 128).astype(F16)
    x[::7] = 0
    for api in (M.Sign, M.Sigmoid, M.Floor):
        y, _, _ = run_api(api, x, count=100, prefill=7.0)
        assert np.all(y[100:] == 7.0)
    y, _, _ = run_api(M.Sign, x, count=100, prefill=7.0)
    assert np.array_equal(y[:100], np.sign(x[:100]))


def test_shared_tmp_buffer_and_framework_buffer_agree():
    x = np.linspace(-6, 6, 2048).astype(F16)
    for api, kw, tmp in ((M.Erf, {}, 2048), (M.Tanh, {}, 1024), (M.Cos, {}, 4096),
                         (M.Exp, dict(taylorExpandLevel=12), 1024)):
        y_tmp, n_tmp, _ = run_api(api, x, tmp_bytes=tmp, **kw)
        y_fw, n_fw, _ = run_api(api, x, **kw)
        assert np.array_equal(y_tmp, y_fw, equal_nan=True)
        assert len(n_tmp) > len(n_fw)              # smaller buffer, more chunks


def test_is_reuse_source_overwrites_the_source_only_when_asked():
    seen = {}

    def kernel(reuse):
        pipe = TPipe()
        b = TBuf()
        pipe.InitBuffer(b, 4096)
        src = b.Get(float32, 256)
        dst = b.GetWithOffset(256, 1024, float32)
        Duplicate(src, 1.25, 256)
        M.Exp(dst, src, 256, taylorExpandLevel=10, isReuseSource=reuse)
        seen[reuse] = src.numpy()

    for reuse in (False, True):
        run_kernel(lambda: kernel(reuse), 1, (), soc=SOC, gm=GlobalMemory(SOC.memory_size))
    assert np.all(seen[False] == np.float32(1.25))
    assert np.all(seen[True] == np.float32(0.25))           # x - floor(x) left in src


def test_round_is_ties_to_even_and_half_large_values_are_exact():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1024.5, 2047.5] * 2, F32)
    y, _, _ = run_api(M.Round, x)
    assert list(y[:8]) == [0, 2, 2, -0.0, -2, -2, 1024, 2048]
    xh = np.array([2049, 4097, -65504, 65504, 0.75, -0.75, 1.25, -1.25] * 2, F16)
    for api, fn in ((M.Floor, np.floor), (M.Ceil, np.ceil), (M.Trunc, np.trunc)):
        y, _, _ = run_api(api, xh)
        assert np.array_equal(y, fn(xh))


def test_exp_dispatch_keeps_the_basic_instruction():
    """``Exp(dst, src, count)`` is the basic instruction (one record, exp rounded once:
    here the correctly rounded float32 of float64 exp); the high-level form needs
    taylorExpandLevel."""
    x = np.linspace(-3, 3, 64).astype(F32)
    y, names, _ = run_api(M.Exp, x)
    assert names == ["Exp"] and np.array_equal(y, np.exp(x.astype(np.float64)).astype(F32))
    with pytest.raises(TypeError, match="taylorExpandLevel"):
        run_api(M.Exp, x, tmp_bytes=1024)


def test_exported_from_npusim_ascendc():
    import npusim.ascendc as asc
    for name in M.__all__:
        if name != "Exp":      # npusim.ascendc.Exp: the lead wires the dispatcher in
            assert getattr(asc, name) is getattr(M, name)


# -- host functions ------------------------------------------------------------------------
def test_get_max_min_tmp_size_values():
    assert M.GetSigmoidMaxMinTmpSize([1024], 2, False) == (2048, 256)
    assert M.GetSigmoidMaxMinTmpSize([16], 4) == (256, 256)
    assert M.GetTanhMaxMinTmpSize([1024], 2) == (8192, 1024)
    assert M.GetTanhMaxMinTmpSize([1024], 4) == (4096, 256)
    assert M.GetGeluMaxMinTmpSize([1024], 2) == (12288, 768)
    assert M.GetGeluMaxTmpSize([8], 4) == 768 and M.GetGeluMinTmpSize([8], 4) == 768
    assert M.GetErfMaxMinTmpSize([1024], 2) == (16384, 2048)
    assert M.GetErfMaxMinTmpSize([1024], 4) == (12288, 768)
    assert M.GetExpMaxMinTmpSize([1024], 2, False) == (16384, 1024)
    assert M.GetExpMaxMinTmpSize([1024], 4, True) == (8192, 512)
    assert M.GetExpMaxMinTmpSize([1024], 4, False) == (12288, 768)
    assert M.GetLogMaxMinTmpSize([1024], 2) == (0, 0) == M.GetLog10MaxMinTmpSize([9], 4)
    assert M.GetLog2MaxMinTmpSize([1024], 2) == (4096, 256)
    assert M.GetLog2MaxMinTmpSize([1024], 4) == (0, 0)
    assert M.GetSignMaxMinTmpSize([1024], 2, False) == (6144, 768)
    assert M.GetSinMaxMinTmpSize([1024], 2, False) == (16384, 2048)
    assert M.GetSinMaxMinTmpSize([32, 32], 4, True) == (8192, 512)
    assert M.GetCosMaxMinTmpSize([1024], 4, False) == (12288, 768)
    assert M.GetFloorMaxMinTmpSize([1024], 4) == (0, 0)
    assert M.GetFloorMaxMinTmpSize([1024], 2) == (4096, 512)
    assert M.GetCeilMaxMinTmpSize([1024], 4) == (4096, 256)
    assert M.GetTruncMaxMinTmpSize([1024], 2) == (4096, 512)
    assert M.GetRoundMaxMinTmpSize(SOC, [1024], 4) == (0, 0)
    assert M.GetRoundMaxMinTmpSize(SOC, [1024], 2) == (2048, 256)
    assert M.GetRoundMaxMinTmpSize(get_soc("Ascend310P3"), [1024], 2) == (4096, 512)


def test_get_max_min_tmp_size_errors():
    with pytest.raises(ValueError, match="greater than 0"):
        M.GetSinMaxMinTmpSize([0, 8], 4)
    with pytest.raises(ValueError, match="typeSize"):
        M.GetErfMaxMinTmpSize([8], 8)
    with pytest.raises(ValueError, match="isReuseSource"):
        M.GetCosMaxMinTmpSize([8], 2, True)


def test_min_tmp_buffer_is_enough_and_one_block_less_is_not():
    x = np.linspace(-2, 2, 256)
    for api, dt, kw in ((M.Sin, F16, {}), (M.Exp, F32, dict(taylorExpandLevel=10)),
                        (M.Sign, F32, {}), (M.Gelu, F16, {}), (M.Round, F16, {})):
        getter = {"Sin": M.GetSinMaxMinTmpSize, "Exp": M.GetExpMaxMinTmpSize,
                  "Sign": M.GetSignMaxMinTmpSize,
                  "Gelu": lambda s, t, r: M.GetGeluMaxMinTmpSize(s, t),
                  "Round": lambda s, t, r: M.GetRoundMaxMinTmpSize(SOC, s, t)}[api.__name__]
        _, lo = getter([256], np.dtype(dt).itemsize, False)
        run_api(api, x.astype(dt), tmp_bytes=lo, **kw)
        with pytest.raises(UbError, match=f"less than the minimum {lo} B"):
            run_api(api, x.astype(dt), tmp_bytes=lo - 32, **kw)


# -- kernel errors ---------------------------------------------------------------------
def _kernel_with(body, soc=SOC, reserve_ub=True):
    def kernel():
        pipe = TPipe()
        b = TBuf()
        pipe.InitBuffer(b, 16384)
        body(b)
    run_kernel(kernel, 1, (), soc=soc, gm=GlobalMemory(soc.memory_size), reserve_ub=reserve_ub)


def _two(b, dt, n=128):
    src = b.Get(dt, n)
    dst = b.GetWithOffset(n, 4096, dt)
    Duplicate(src, 0.5, n) if np.dtype(dt).itemsize in (2, 4) else None
    return dst, src


def test_wrong_dtypes_are_dtype_errors():
    with pytest.raises(DtypeError, match="int32 is not a supported type of Sigmoid"):
        _kernel_with(lambda b: M.Sigmoid(*_two(b, int32_t), 128))
    with pytest.raises(DtypeError, match="mix"):
        _kernel_with(lambda b: M.Tanh(b.Get(half, 64), b.GetWithOffset(64, 4096, float32), 64))
    with pytest.raises(DtypeError, match="uint8_t"):
        _kernel_with(lambda b: M.Erf(*_two(b, float32), b.GetWithOffset(512, 8192, float32), 128))


@pytest.mark.parametrize("api, kw", [(M.Sigmoid, {}), (M.Sin, {}), (M.Floor, {}),
                                     (M.Exp, dict(taylorExpandLevel=10)), (M.Log, {})])
def test_bf16_on_a2_is_rejected(api, kw):
    with pytest.raises(DtypeError, match="bfloat16 arithmetic is not supported.*Ascend910B1"):
        _kernel_with(lambda b: api(*_two(b, ml_dtypes.bfloat16), 128, **kw))


def test_tmp_buffer_overlapping_an_operand():
    def body(b):
        dst, src = _two(b, float32)
        M.Erf(dst, src, b.GetWithOffset(1024, 4096 + 256, uint8_t), 128)   # over dst's end
    with pytest.raises(UbError, match="overlaps dstTensor"):
        _kernel_with(body)


def test_count_beyond_the_tensors():
    with pytest.raises(UbError, match="calCount 129"):
        _kernel_with(lambda b: M.Cos(*_two(b, float32), 129))


def test_framework_buffer_needs_the_ub_reserve():
    def body(b):
        M.Sigmoid(*_two(b, half), 128)
    _kernel_with(body)
    with pytest.raises(UbError, match="without the reserve"):
        _kernel_with(body, reserve_ub=False)
    # with a sharedTmpBuffer no reserve is needed (Sigmoid issues no Select)
    _kernel_with(lambda b: M.Sigmoid(*_two(b, half), b.GetWithOffset(256, 8192, uint8_t), 128),
                 reserve_ub=False)


def test_other_socs_are_not_modelled():
    with pytest.raises(KernelError, match="NpuArch 2201.*Ascend910A"):
        _kernel_with(lambda b: M.Sigmoid(*_two(b, float32), 128), soc=get_soc("Ascend910A"))


def test_exp_taylor_level_range():
    with pytest.raises(KernelError, match=r"taylorExpandLevel 256 is outside \[0, 255\]"):
        _kernel_with(lambda b: M.Exp(*_two(b, float32), 128, taylorExpandLevel=256))
