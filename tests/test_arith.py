"""Rsqrt, LeakyRelu, Axpy, FusedMulAdd, MulAddDst, AddRelu, SubRelu, Not, And, Or,
ShiftLeft and ShiftRight in both Ascend C forms, against a lane-by-lane numpy rendering of
each page's formula (asc-devkit docs/api/context/<Name>.md), with the documented
addressing of level-0 calls (test_level0's reference), rounding per step, saturation,
rates (docs/reference/hardware.md §2.1) and every error path."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim import (AlignmentError, DtypeError, GlobalMemory, LimitError, UbError, get_soc,
                    run_kernel)
from npusim.ascendc import *  # noqa: F403
from npusim.ascendc.checker import UninitialisedError

from kernel_helpers import ub_run
from test_level0 import masks16, masks32, ref_lanes, ref_mask, span

SOC = get_soc("Ascend910B1")
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
I16, U16, I32, U32 = (np.dtype(t) for t in (np.int16, np.uint16, np.int32, np.uint32))


# -- the documented formulas, one element at a time -----------------------------------------
def wrap(v, dt):
    """Python int -> dt with two's-complement wrap-around."""
    bits = dt.itemsize * 8
    return np.array([v & ((1 << bits) - 1)], dtype=np.uint64).astype(f"u{dt.itemsize}").view(dt)[0]


def shift_left(x, n, dt):
    return wrap(int(x) << n, dt)


def shift_right(x, n, dt, round_en):
    v = int(x)                                   # Python >> is arithmetic on signed values
    r = v >> n
    if round_en and dt.kind == "i" and n > 0:
        r += (v >> (n - 1)) & 1                  # the last bit shifted out is added
    return dt.type(r)


def relu_of(v, dt):
    v = wrap(int(v), dt) if dt.kind == "i" else dt.type(v)
    return max(v, dt.type(0))


# name -> (sources, takes a scalar, dtypes (dst, src)), reference f(*src values, old dst, s)
OPS = {
    "Rsqrt": (1, False, [(F16, F16), (F32, F32)],
              lambda x, d, s, dt: dt.type(1.0 / np.sqrt(np.float64(x)))),
    "LeakyRelu": (1, True, [(F16, F16), (F32, F32)],
                  lambda x, d, s, dt: x if x >= 0 else x * dt.type(s)),
    "Axpy": (1, True, [(F16, F16), (F32, F32), (F32, F16)],
             lambda x, d, s, dt: dt.type(dt.type(dt.type(x) * dt.type(x.dtype.type(s))) + d)),
    "Not": (1, False, [(I16, I16), (U16, U16)], lambda x, d, s, dt: ~x),
    "ShiftLeft": (1, True, [(t, t) for t in (I16, U16, I32, U32)],
                  lambda x, d, s, dt: shift_left(x, s, dt)),
    "ShiftRight": (1, True, [(t, t) for t in (I16, U16, I32, U32)], None),   # roundEn drawn
    "AddRelu": (2, False, [(F16, F16), (F32, F32), (I16, I16)],
                lambda a, b, d, s, dt: relu_of(int(a) + int(b) if dt.kind == "i" else a + b, dt)),
    "SubRelu": (2, False, [(F16, F16), (F32, F32), (I16, I16)],
                lambda a, b, d, s, dt: relu_of(int(a) - int(b) if dt.kind == "i" else a - b, dt)),
    "And": (2, False, [(I16, I16), (U16, U16)], lambda a, b, d, s, dt: a & b),
    "Or": (2, False, [(I16, I16), (U16, U16)], lambda a, b, d, s, dt: a | b),
    "FusedMulAdd": (2, False, [(F16, F16), (F32, F32)],          # src0 * dst + src1
                    lambda a, b, d, s, dt: dt.type(dt.type(a * d) + b)),
    "MulAddDst": (2, False, [(F16, F16), (F32, F32), (F32, F16)],  # src0 * src1 + dst
                  lambda a, b, d, s, dt: dt.type(dt.type(dt.type(a) * dt.type(b)) + d)),
}


def values(rng, dt, n, op):
    if dt.kind == "f":
        lo = 0.05 if op == "Rsqrt" else -8.0
        return rng.uniform(lo, 8.0, n).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, endpoint=True).astype(dt)


def reference(f, z, srcs, strides, mask, repeat, lanes):
    """dst after a level-0 call, lane by lane: each active lane of each repeat applies f
    to its source elements and the old destination element."""
    out = z.copy()
    on = ref_mask(mask, lanes)
    d = ref_lanes(z.dtype.itemsize, repeat, *strides[0], lanes)
    s = [ref_lanes(x.dtype.itemsize, repeat, *st, lanes) for x, st in zip(srcs, strides[1:])]
    for r in range(repeat):
        for lane in range(lanes):
            if on[lane]:
                out[d[r][lane]] = f(*[x[i[r][lane]] for x, i in zip(srcs, s)], z[d[r][lane]])
    return out


def call(op, t, scalar, level_args):
    api = globals()[op]
    srcs = [t["a"], t["b"]][:OPS[op][0]]
    extra = (scalar,) if OPS[op][1] else ()
    api(t["z"], *srcs, *extra, *level_args)


@pytest.mark.parametrize("op", sorted(OPS))
@settings(max_examples=25, deadline=None)
@given(data=st.data(), repeat=st.integers(0, 3),
       strides=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 12)), min_size=3,
                        max_size=3))
def test_level0_matches_the_documented_formula_and_addressing(data, op, repeat, strides):
    nsrc, has_scalar, pairs, f = OPS[op]
    dt, sdt = data.draw(st.sampled_from(pairs))
    lanes = 256 // dt.itemsize
    mask = data.draw(masks16 if lanes == 128 else masks32)
    (db, dr), (ab, ar), (bb, br) = strides
    dr = max(dr, 8 * db)                        # the destination's repeats do not overlap
    rng = np.random.default_rng(repeat * 31 + db + 7 * ab)
    a = values(rng, sdt, span(repeat, ab, ar, sdt.itemsize), op)
    b = values(rng, sdt, span(repeat, bb, br, sdt.itemsize), op)
    z = values(rng, dt, span(repeat, db, dr, dt.itemsize), op)
    scalar, round_en = 0, False
    if has_scalar:
        scalar = data.draw(st.integers(0, dt.itemsize * 8)) if dt.kind in "iu" else \
            data.draw(st.sampled_from([0.5, -1.25, 3.0, 0.1]))
    if op == "ShiftRight":
        round_en = data.draw(st.booleans())
        f = lambda x, d, s, dt: shift_right(x, s, dt, round_en)  # noqa: E731
    if nsrc == 1:
        params, level = UnaryRepeatParams(db, ab, dr, ar), [mask, repeat]
        strides = [(db, dr), (ab, ar)]
    else:
        params, level = BinaryRepeatParams(db, ab, bb, dr, ar, br), [mask, repeat]
        strides = [(db, dr), (ab, ar), (bb, br)]
    level += [params] + ([round_en] if op == "ShiftRight" else [])
    after, _ = ub_run(lambda t: call(op, t, scalar, level), dict(a=a, b=b, z=z))
    want = reference(lambda *v: f(*v, scalar, dt), z, [a, b][:nsrc], strides,
                     min(mask, lanes) if isinstance(mask, int) else mask, repeat, lanes)
    np.testing.assert_array_equal(after["z"], want)


@pytest.mark.parametrize("op", sorted(OPS))
def test_count_form_touches_the_first_count_elements(op):
    nsrc, has_scalar, pairs, f = OPS[op]
    for dt, sdt in pairs:
        rng = np.random.default_rng(len(op))
        n = 200
        a, b, z = values(rng, sdt, 256, op), values(rng, sdt, 256, op), values(rng, dt, 256, op)
        scalar = 3 if dt.kind in "iu" else 0.75
        fn = f or (lambda x, d, s, dt: shift_right(x, s, dt, False))
        after, _ = ub_run(lambda t: call(op, t, scalar, [n]), dict(a=a, b=b, z=z))
        want = z.copy()
        for i in range(n):
            want[i] = fn(*[a[i], b[i]][:nsrc], z[i], scalar, dt)
        np.testing.assert_array_equal(after["z"], want, err_msg=f"{op} {dt}")


def test_fused_mul_add_rounds_product_then_sum_as_the_page_example_shows():
    # FusedMulAdd.md "调用示例" (half): element 11 is 4.74 * 14.92 - 70.6, printed 0.0625
    src0 = np.full(128, 4.74, np.float16)
    dst = np.full(128, 14.92, np.float16)
    src1 = np.full(128, -70.6, np.float16)
    after, _ = ub_run(lambda t: FusedMulAdd(t["z"], t["a"], t["b"], 128),
                      dict(a=src0, b=src1, z=dst))
    assert np.all(after["z"] == np.float16(0.0625))
    once = np.float16(np.float64(src0[0]) * np.float64(dst[0]) + np.float64(src1[0]))
    assert once != np.float16(0.0625)            # a single rounding would differ


def test_half_to_float_forms_widen_before_multiplying():
    # MulAddDst.md example, element 0: -83 * -57.97 + -97.94773 = 4713.4585 (the half
    # product 4811.40625 is exact in float; rounded to half it would be 4812)
    a = np.full(64, -83, np.float16)
    b = np.full(64, -57.97, np.float16)
    z = np.full(64, -97.94773, np.float32)
    after, _ = ub_run(lambda t: MulAddDst(t["z"], t["a"], t["b"], 64), dict(a=a, b=b, z=z))
    assert np.all(after["z"] == np.float32(np.float32(4811.40625) + np.float32(-97.94773)))
    after, _ = ub_run(lambda t: Axpy(t["z"], t["a"], -57.97, 64), dict(a=a, z=z))
    assert np.all(after["z"] == np.float32(np.float32(4811.40625) + np.float32(-97.94773)))


def test_rsqrt_special_values():
    x = np.array([0.0, -0.0, -1.0, np.inf, np.nan, 4.0, 0.25, 2.0] * 2, np.float16)
    after, _ = ub_run(lambda t: Rsqrt(t["z"], t["x"], 16), dict(x=x, z=np.zeros(16, np.float16)))
    want = [np.inf, -np.inf, np.nan, 0.0, np.nan, 0.5, 2.0, np.float16(1 / np.sqrt(2))] * 2
    np.testing.assert_array_equal(after["z"], np.array(want, np.float16))


def test_saturation_flag_applies_to_each_arithmetic_step():
    i16 = np.full(16, 32767, np.int16)
    one = np.ones(16, np.int16)
    big = np.full(128, 60000, np.float16)
    neg = np.full(128, -60000, np.float16)

    def body(t):
        AddRelu(t["w"], t["i"], t["one"], 16)              # wraps to -32768, Relu -> 0
        FusedMulAdd(t["f"], t["big"], t["neg"], 128)       # 60000 * 60000 -> inf, + -60000
        SetSaturationFlag(True)
        AddRelu(t["s"], t["i"], t["one"], 16)              # saturates at 32767
        FusedMulAdd(t["g"], t["big"], t["neg"], 128)       # 65504 + -60000
        ShiftLeft(t["h"], t["i"], 1, 16)                   # a bit operation: no saturation
        SetSaturationFlag(False)

    after, _ = ub_run(body, dict(i=i16, one=one, w=np.zeros(16, np.int16), big=big, neg=neg,
                                 f=big.copy(), s=np.zeros(16, np.int16), g=big.copy(),
                                 h=np.zeros(16, np.int16)))
    assert np.all(after["w"] == 0) and np.all(after["s"] == 32767)
    assert np.all(np.isposinf(after["f"])) and np.all(after["g"] == np.float16(65504 - 60000))
    assert np.all(after["h"] == -2)


def test_shift_right_signedness_and_round_en():
    x16 = np.full(16, 0b1010101010101010, np.uint16)

    def body(t):
        ShiftRight(t["s"], t["xs"], 1, 16)                  # arithmetic: sign copied
        ShiftRight(t["u"], t["xu"], 1, 16)                  # logical: zero in
        ShiftRight(t["r"], t["v"], 5, 16, 1, UnaryRepeatParams(), True)    # 17 >> 5 + 1
        ShiftRight(t["k"], t["v"], 5, 16, 1, UnaryRepeatParams(), roundEn=False)
        ShiftRight(t["ur"], t["vu"], 5, 16, 1, UnaryRepeatParams(), True)  # unsigned: no effect
        ShiftLeft(t["l"], t["xu"], 16, 16)                  # the whole width shifted out

    after, _ = ub_run(body, dict(xs=x16.view(np.int16), xu=x16, s=np.zeros(16, np.int16),
                                 u=np.zeros(16, np.uint16), v=np.full(16, 17, np.int16),
                                 r=np.zeros(16, np.int16), k=np.zeros(16, np.int16),
                                 vu=np.full(16, 17, np.uint16), ur=np.zeros(16, np.uint16),
                                 l=np.ones(16, np.uint16)))
    assert np.all(after["s"].view(np.uint16) == 0b1101010101010101)
    assert np.all(after["u"] == 0b0101010101010101)
    assert np.all(after["r"] == 1) and np.all(after["k"] == 0) and np.all(after["ur"] == 0)
    assert np.all(after["l"] == 0)


def test_mask_register_with_is_set_mask_false():
    x = np.linspace(-4, 4, 128).astype(np.float16)

    def body(t):
        SetVectorMask(0, 0b1011, dtype=half)
        LeakyRelu(t["z"], t["x"], 0.5, MASK_PLACEHOLDER, 1, UnaryRepeatParams(), isSetMask=False)

    after, _ = ub_run(body, dict(x=x, z=np.zeros(128, np.float16)))
    want = np.zeros(128, np.float16)
    want[[0, 1, 3]] = x[[0, 1, 3]] * np.float16(0.5)        # x < 0 there
    np.testing.assert_array_equal(after["z"], want)


@pytest.mark.parametrize("body, dtypes, name, cycles", [
    (lambda d, s: Rsqrt(d, s, 1024), (F16, F16), "Rsqrt", 8),              # 128 half/cycle
    (lambda d, s: LeakyRelu(d, s, 0.1, 1024), (F32, F32), "LeakyRelu", 16),  # 64 float
    (lambda d, s: MulAddDst(d, s, s, 1024), (F16, F16), "MulAddDst", 16),    # 64 half
    (lambda d, s: MulAddDst(d, s, s, 1024), (F32, F32), "MulAddDst", 32),    # 32 float
    (lambda d, s: MulAddDst(d, s, s, 1024), (F32, F16), "MulAddDst", 32),    # half->float
    # half->float 64, and read-read conflicts: Axpy reads dst (float, bank groups 0-7 / 8-15
    # by repeat parity) and the half source's 4 blocks a repeat (groups 8-11, 12-15, 0-3,
    # 4-7, ...) meet dst's groups in repeats 4j+1 and 4j+2: 8 of the 16 take 2 cycles
    (lambda d, s: Axpy(d, s, 2.0, 1024), (F32, F16), "Axpy", 16 + 8),
    (lambda d, s: FusedMulAdd(d, s, s, 1024), (F16, F16), "FusedMulAdd", 8),
    (lambda d, s: And(d, s, s, 1024), (I16, I16), "And", 8),                 # int16 128
    (lambda d, s: ShiftLeft(d, s, 3, 1024), (I32, I32), "ShiftLeft", 16),    # int32 64
    (lambda d, s: MulAddDst(d, s, s, 1, 3, BinaryRepeatParams()), (F32, F32), "MulAddDst",
     3 * 2),                                               # a repeat of 64 lanes at 32/cycle
    (lambda d, s: AddRelu(d, s, s, 1, 2, BinaryRepeatParams()), (I16, I16), "AddRelu", 2),
])
def test_cost_is_the_published_rate(body, dtypes, name, cycles):
    # s starts at 0x10100 (bank id 1, bank group 8) and d at 0 (bank id 0, group 0): the
    # sources' rows of a repeat fall in other bank groups, the (delayed) write in another
    # bank, so the published rate alone remains (ubbank.py; bank_conflict_ub scenario 1)
    d = np.ones(1024, dtypes[0])
    bufs = dict(d=d, pad=np.zeros(0x10100 - d.nbytes, np.uint8), s=np.ones(1024, dtypes[1]))
    _, prof = ub_run(lambda t: body(t["d"], t["s"]), bufs)
    recs = [r for r in prof.records[0] if r[5] == name]
    assert len(recs) == 1 and recs[0][1] == PIPE_V
    assert recs[0][2] == SOC.vec_head_cycles + cycles


@pytest.mark.parametrize("body, error, match", [
    (lambda t: Rsqrt(t["i"], t["i"], 16), DtypeError, "int16 is not a supported type"),
    (lambda t: Rsqrt(t["b"], t["b"], 16), DtypeError, "bfloat16"),
    (lambda t: Not(t["f"], t["f"], 16), DtypeError, "float32 is not a supported type"),
    (lambda t: And(t["w"], t["w"], t["w"], 16), DtypeError, "int32 is not a supported type"),
    (lambda t: AddRelu(t["w"], t["w"], t["w"], 16), DtypeError, "int32"),
    (lambda t: FusedMulAdd(t["f"], t["h"], t["h"], 16), DtypeError, "mix"),
    (lambda t: Axpy(t["h"], t["f"], 1.0, 16), DtypeError, "not a supported combination"),
    (lambda t: MulAddDst(t["f"], t["h"], t["f"], 16), DtypeError, "mix"),
    (lambda t: MulAddDst(t["b"], t["b"], t["b"], 16), DtypeError, "bfloat16"),
    (lambda t: ShiftLeft(t["i"], t["i"], 17, 16), LimitError, r"shift 17 is outside \[0, 16\]"),
    (lambda t: ShiftRight(t["w"], t["w"], 33, 16), LimitError, r"outside \[0, 32\]"),
    (lambda t: ShiftRight(t["h"], t["h"], 1, 16), DtypeError, "float16"),
    (lambda t: ShiftRight(t["i"], t["i"], 1, 16, roundEn=True), LimitError, "level-0 form"),
    (lambda t: Axpy(t["f"], t["f"], 1.0, 64, 256, UnaryRepeatParams()), LimitError,
     "repeatTime = 256"),
    (lambda t: FusedMulAdd(t["f"], t["f"], t["f"], 64, 1, BinaryRepeatParams(1, 1, 1, 8, 8, 256)),
     LimitError, "RepStride = 256"),
    (lambda t: MulAddDst(t["f"], t["f"], t["f"], 64, 3, BinaryRepeatParams()), UbError,
     "past the end of its buffer"),
    (lambda t: Or(t["i"][8], t["i"], t["i"], 16), AlignmentError, "not 32 B aligned"),
    (lambda t: Axpy(t["f"][8], t["f"], 1.0, 64, 1, UnaryRepeatParams()), UbError,
     "overlap completely or not at all"),
])
def test_errors(body, error, match):
    bufs = dict(i=np.zeros(64, np.int16), f=np.ones(128, np.float32), h=np.ones(64, np.float16),
                w=np.zeros(64, np.int32), b=np.zeros(64, ml_dtypes.bfloat16))
    with pytest.raises(error, match=match):
        ub_run(body, bufs)


def test_checker_sees_the_destination_lanes_read_as_a_source():
    """FusedMulAdd reads dst: an active lane on unwritten dst UB is an uninitialised
    read; lanes the mask leaves off are neither read nor written."""
    def kernel(lanes):
        def k():
            pipe = TPipe()
            buf = TBuf()
            pipe.InitBuffer(buf, 1024)
            x = buf.Get(float32)
            Duplicate(x, 1.0, 64)                    # src0 and src1: x[0:64]
            Duplicate(x[64], 1.0, 8, 1, 1, 8)        # dst: only its first block written
            FusedMulAdd(x[64], x, x, lanes, 1, BinaryRepeatParams())
        return k

    run_kernel(kernel(8), 1, (), soc=SOC, gm=GlobalMemory(1 << 20))
    with pytest.raises(UninitialisedError, match="FusedMulAdd"):
        run_kernel(kernel(9), 1, (), soc=SOC, gm=GlobalMemory(1 << 20))
