"""Compare, CompareScalar and Select in every form — count, level 0 (mask, repeatTime,
repeat params), the CMPMASK register (Compare's register form, GetCmpMask, SetCmpMask,
the Select forms without a selMask) — against a lane-by-lane rendering of the pages
(asc-devkit Compare.md, CompareScalar.md, Compare（结果存入寄存器）.md, Select.md,
GetCmpMask/SetCmpMask(ISASI).md; vcmpv/vcmpvs/vcmp, cceapi_0119/0043/0118), with the
documented addressing of level-0 calls (test_level0's reference), costs and errors. The
count forms' basic cases live in test_apply_add_sign.py."""
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
F16, F32, I32 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int32)
RELATION = {CMPMODE.LT: lambda a, b: a < b, CMPMODE.GT: lambda a, b: a > b,
            CMPMODE.EQ: lambda a, b: a == b, CMPMODE.LE: lambda a, b: a <= b,
            CMPMODE.GE: lambda a, b: a >= b, CMPMODE.NE: lambda a, b: not a == b}


def pack(bits):
    """Bit i of the result in bit i % 8 of byte i // 8 (Compare.md: little-endian)."""
    out = np.zeros(-(-len(bits) // 8), np.uint8)
    for i, b in enumerate(bits):
        if b:
            out[i // 8] |= 1 << (i % 8)
    return out


def bit(raw, i):
    return (int(raw[i // 8]) >> (i % 8)) & 1


def sample(rng, dt, n):
    """Values with ties, signed zeros, infinities and NaN, so every mode has both answers."""
    if dt == I32:
        return rng.integers(-2, 3, n).astype(dt)
    pool = np.array([-2.0, -1.0, -0.0, 0.0, 1.0, 2.5, np.inf, -np.inf, np.nan], dt)
    return rng.choice(pool, n)


def modes_of(dt):
    return [CMPMODE.EQ] if dt == I32 else list(CMPMODE)


# -- Compare / CompareScalar level 0 ------------------------------------------------------
@pytest.mark.parametrize("api", ["Compare", "CompareScalar"])
@settings(max_examples=25, deadline=None)
@given(data=st.data(), dt=st.sampled_from([F16, F32, I32]), repeat=st.integers(0, 4),
       strides=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 12)), min_size=3,
                        max_size=3))
def test_compare_level0_packs_every_lane_of_every_repeat(data, api, dt, repeat, strides):
    mode = data.draw(st.sampled_from(modes_of(dt)))
    lanes = 256 // dt.itemsize
    mask = data.draw(masks16 if lanes == 128 else masks32)      # reserved on A2/A3: ignored
    (db, dr), (ab, ar), (bb, br) = strides
    rng = np.random.default_rng(repeat * 13 + ab + 5 * bb)
    a = sample(rng, dt, span(repeat, ab, ar, dt.itemsize))
    b = sample(rng, dt, span(repeat, bb, br, dt.itemsize))
    scalar = dt.type(data.draw(st.sampled_from([0, 1, -2])))
    z = np.full(repeat * lanes // 8 + 32, 0xA5, np.uint8)

    def body(t):
        if api == "Compare":
            Compare(t["z"], t["a"], t["b"], mode, mask, repeat,
                    BinaryRepeatParams(db, ab, bb, dr, ar, br))
        else:
            CompareScalar(t["z"], t["a"], scalar, mode, mask, repeat,
                          UnaryRepeatParams(db, ab, dr, ar))

    after, _ = ub_run(body, dict(a=a, b=b, z=z))
    ia = ref_lanes(dt.itemsize, repeat, ab, ar)
    ib = ref_lanes(dt.itemsize, repeat, bb, br)
    rel = RELATION[mode]
    bits = [rel(a[ia[r][lane]], b[ib[r][lane]] if api == "Compare" else scalar)
            for r in range(repeat) for lane in range(lanes)]
    want = z.copy()
    want[:len(bits) // 8] = pack(bits)           # packed: 32 / sizeof(T) bytes per repeat
    np.testing.assert_array_equal(after["z"], want)


def test_compare_count_form_int8_destination_and_more_than_255_repeats():
    n = 64 * 260                                 # 260 float repeats: the library splits at 252
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=n).astype(np.float32), rng.normal(size=n).astype(np.float32)
    after, _ = ub_run(lambda t: Compare(t["z"], t["a"], t["b"], CMPMODE.LE, n),
                      dict(a=a, b=b, z=np.zeros(n // 8, np.int8)))
    np.testing.assert_array_equal(after["z"].view(np.uint8), pack(a <= b))


# -- the CMPMASK register -------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(data=st.data(), dt=st.sampled_from([F16, F32]),
       strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       mode=st.sampled_from(list(CMPMODE)))
def test_register_compare_keeps_the_bits_of_lanes_the_mask_leaves_off(data, dt, strides, mode):
    lanes = 256 // dt.itemsize
    mask = data.draw(masks16 if lanes == 128 else masks32)
    ab, bb = strides
    rng = np.random.default_rng(ab * 3 + bb)
    a = sample(rng, dt, span(1, ab, 8, dt.itemsize))
    b = sample(rng, dt, span(1, bb, 8, dt.itemsize))
    before = np.arange(16, dtype=np.uint8) * 37                 # what CMPMASK held

    def body(t):
        SetCmpMask(t["reg"])
        Compare(t["a"], t["b"], mode, mask, BinaryRepeatParams(1, ab, bb, 8, 8, 8))
        GetCmpMask(t["out"])

    after, _ = ub_run(body, dict(a=a, b=b, reg=before, out=np.zeros(128, np.uint8)))
    on = ref_mask(min(mask, lanes) if isinstance(mask, int) else mask, lanes)
    ia, ib = ref_lanes(dt.itemsize, 1, ab, 8)[0], ref_lanes(dt.itemsize, 1, bb, 8)[0]
    bits = [RELATION[mode](a[ia[i]], b[ib[i]]) if i < lanes and on[i] else bit(before, i)
            for i in range(128)]
    np.testing.assert_array_equal(after["out"][:16], pack(bits))
    assert np.all(after["out"][16:] == 0)


def test_select_without_a_selmask_uses_cmpmask_and_the_mask_register():
    x = np.linspace(-3, 3, 256).astype(np.float16)
    y = np.linspace(3, -3, 256).astype(np.float16)
    sel = np.random.default_rng(2).integers(0, 256, 32).astype(np.uint8)
    sc = np.full(16, 7.5, np.float16)

    def body(t):
        Compare(t["x"], t["y"], CMPMODE.GT, 128, BinaryRepeatParams())   # x > y, lanes 0..127
        SetVectorMask(0, (1 << 64) - 1, dtype=half)                        # lanes 0..63 on
        Select(t["m0"], t["x"], t["y"], 2, BinaryRepeatParams(), selMode=SELMODE.VSEL_CMPMASK_SPR)
        t["addr"].SetValue(0, t["sel"].GetPhyAddr())          # mode 2: CMPMASK = &selMask
        SetFlag(HardEvent.S_V, 0)
        WaitFlag(HardEvent.S_V, 0)
        SetCmpMask(t["addr"])
        ResetMask()
        Select(t["m2"], t["x"], t["y"], 2, BinaryRepeatParams(),
               selMode=SELMODE.VSEL_TENSOR_TENSOR_MODE)
        SetCmpMask(t["sc"])                                    # mode 1: CMPMASK = the scalar
        Select(t["m1"], t["sel"], t["x"], 2, BinaryRepeatParams())

    bufs = dict(x=x, y=y, sel=sel, sc=sc, addr=np.zeros(8, np.uint32),
                m0=np.zeros(256, np.float16), m1=np.zeros(256, np.float16),
                m2=np.zeros(256, np.float16))
    after, _ = ub_run(body, bufs)
    m0 = np.zeros(256, np.float16)
    for r in range(2):
        for lane in range(64):                   # the first 128 bits serve every repeat
            i = r * 128 + lane
            m0[i] = x[i] if x[lane] > y[lane] else y[i]
    np.testing.assert_array_equal(after["m0"], m0)
    m2 = np.array([x[i] if bit(sel, i) else y[i] for i in range(256)], np.float16)
    np.testing.assert_array_equal(after["m2"], m2)
    m1 = np.array([x[i] if bit(sel, i) else 7.5 for i in range(256)], np.float16)
    np.testing.assert_array_equal(after["m1"], m1)


def test_select_with_a_selmask_leaves_its_operand_in_cmpmask():
    sel = np.arange(32, dtype=np.uint8)
    a = np.ones(64, np.float32)

    def body(t):
        Select(t["d"], t["sel"], t["a"], t["a"], SELMODE.VSEL_CMPMASK_SPR, 64)
        GetCmpMask(t["r0"])
        Select(t["d"], t["sel"], t["a"], 2.0, SELMODE.VSEL_TENSOR_SCALAR_MODE, 64)
        GetCmpMask(t["r1"])
        Select(t["d"], t["sel"], t["a"], t["a"], SELMODE.VSEL_TENSOR_TENSOR_MODE, 64)
        GetCmpMask(t["r2"])
        t["addr"].SetValue(0, t["sel"].GetPhyAddr())

    bufs = dict(sel=sel, a=a, d=np.zeros(64, np.float32), addr=np.zeros(8, np.uint32),
                **{r: np.zeros(128, np.uint8) for r in ("r0", "r1", "r2")})
    after, _ = ub_run(body, bufs)
    np.testing.assert_array_equal(after["r0"][:16], sel[:16])
    np.testing.assert_array_equal(after["r1"][:16].view(np.float32), np.full(4, 2.0, np.float32))
    np.testing.assert_array_equal(after["r2"][:16].view(np.uint32), np.full(4, after["addr"][0]))


# -- Select level 0 -------------------------------------------------------------------------
@pytest.mark.parametrize("mode", list(SELMODE))
@settings(max_examples=25, deadline=None)
@given(data=st.data(), dt=st.sampled_from([F16, F32]), repeat=st.integers(0, 3),
       strides=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 12)), min_size=3,
                        max_size=3))
def test_select_level0_matches_the_documented_selection(data, mode, dt, repeat, strides):
    lanes = 256 // dt.itemsize
    mask = data.draw(masks16 if lanes == 128 else masks32)
    (db, dr), (ab, ar), (bb, br) = strides
    dr = max(dr, 8 * db)
    rng = np.random.default_rng(repeat * 17 + db + 3 * ab)
    a = rng.normal(size=span(repeat, ab, ar, dt.itemsize)).astype(dt)
    b = rng.normal(size=span(repeat, bb, br, dt.itemsize)).astype(dt)
    z = np.full(span(repeat, db, dr, dt.itemsize), -9, dt)
    sel = rng.integers(0, 256, max(repeat * lanes // 8, 32)).astype(np.uint8)
    scalar = 4.5
    p = BinaryRepeatParams(db, ab, bb, dr, ar, br)
    other = (lambda t: scalar) if mode == SELMODE.VSEL_TENSOR_SCALAR_MODE else (lambda t: t["b"])
    after, _ = ub_run(lambda t: Select(t["z"], t["sel"], t["a"], other(t), mode, mask, repeat, p),
                      dict(a=a, b=b, z=z, sel=sel))
    on = ref_mask(min(mask, lanes) if isinstance(mask, int) else mask, lanes)
    d, ia, ib = (ref_lanes(dt.itemsize, repeat, *s) for s in ((db, dr), (ab, ar), (bb, br)))
    want = z.copy()
    for r in range(repeat):
        for lane in range(lanes):
            if not on[lane]:
                continue                          # the mask filters: dst keeps its value
            i = lane if mode == SELMODE.VSEL_CMPMASK_SPR else r * lanes + lane
            alt = dt.type(scalar) if mode == SELMODE.VSEL_TENSOR_SCALAR_MODE else b[ib[r][lane]]
            want[d[r][lane]] = a[ia[r][lane]] if bit(sel, i) else alt
    np.testing.assert_array_equal(after["z"], want)


def test_select_count_form_in_place():
    x = np.linspace(-2, 2, 200).astype(np.float32)
    sel = np.random.default_rng(3).integers(0, 256, 32).astype(np.uint8)
    after, _ = ub_run(lambda t: Select(t["x"], t["sel"], t["x"], -1.0,
                                       SELMODE.VSEL_TENSOR_SCALAR_MODE, 200), dict(x=x, sel=sel))
    np.testing.assert_array_equal(after["x"], [x[i] if bit(sel, i) else -1.0 for i in range(200)])


def test_checker_sees_the_mask_bytes_select_reads():
    """CompareScalar writes 8 bytes (one float repeat). Mode 2 over 64 elements reads
    just those, mode 0 never more than the first 8 bytes; a 65th element reads byte 8,
    which nothing wrote."""
    def kernel(mode, count):
        def k():
            pipe = TPipe()
            buf, mbuf = TBuf(), TBuf()
            pipe.InitBuffer(buf, 1024)
            pipe.InitBuffer(mbuf, 64)
            x, mask = buf.Get(float32), mbuf.Get(uint8_t)
            Duplicate(x, 1.0, 256)
            CompareScalar(mask, x, 0.0, CMPMODE.GT, 64)
            Select(x[128], mask, x, x, mode, count)
        return k

    def run(mode, count):
        run_kernel(kernel(mode, count), 1, (), soc=SOC, gm=GlobalMemory(1 << 20))

    run(SELMODE.VSEL_TENSOR_TENSOR_MODE, 64)
    run(SELMODE.VSEL_CMPMASK_SPR, 128)
    with pytest.raises(UninitialisedError, match="Select"):
        run(SELMODE.VSEL_TENSOR_TENSOR_MODE, 65)


# -- cost and errors ------------------------------------------------------------------------
@pytest.mark.parametrize("body, dt, name, cycles", [
    (lambda t: Compare(t["m"], t["a"], t["a"], CMPMODE.LT, 0, 3, BinaryRepeatParams()), F16,
     "Compare", 3),                              # 128 half per cycle: one per repeat
    (lambda t: CompareScalar(t["m"], t["a"], 1.0, CMPMODE.GE, 0, 2, UnaryRepeatParams()), F32,
     "CompareScalar", 2),
    (lambda t: Compare(t["a"], t["a"], CMPMODE.EQ, 5, BinaryRepeatParams()), F32, "Compare", 1),
    (lambda t: Select(t["d"], t["m"], t["a"], t["a"], SELMODE.VSEL_TENSOR_TENSOR_MODE, 64, 3,
                      BinaryRepeatParams()), F32, "Select", 3),
    (lambda t: GetCmpMask(t["m"]), F32, "GetCmpMask", 1),
    (lambda t: SetCmpMask(t["m"]), F32, "SetCmpMask", 1),
])
def test_cost_per_repeat(body, dt, name, cycles):
    # the mask starts at 0x10000 (bank id 1), so its writes never share a bank with the
    # reads of a (bank id 0) and no conflict cost is added (ubbank.py)
    a = np.ones(512, dt)
    bufs = dict(a=a, pad=np.zeros(0x10000 - a.nbytes, np.uint8), m=np.zeros(256, np.uint8),
                pad2=np.zeros(256, np.uint8), d=np.zeros(256, dt))
    _, prof = ub_run(body, bufs)
    recs = [r for r in prof.records[0] if r[5] == name]
    assert len(recs) == 1 and recs[0][1] == PIPE_V
    assert recs[0][2] == SOC.vec_head_cycles + cycles


@pytest.mark.parametrize("body, error, match", [
    (lambda t: Compare(t["m"], t["i"], t["i"], CMPMODE.GT, 64, 1, BinaryRepeatParams()),
     DtypeError, "only CMPMODE.EQ"),
    (lambda t: Compare(t["i"], t["i"], CMPMODE.EQ, 64, BinaryRepeatParams()), DtypeError,
     "int32 is not a supported type"),
    (lambda t: Compare(t["f"], t["f"], t["f"], CMPMODE.EQ, 64), DtypeError, "uint8_t or int8_t"),
    (lambda t: Compare(t["m"], t["f"], t["f"], CMPMODE.EQ, 64, 256, BinaryRepeatParams()),
     LimitError, "repeatTime = 256"),
    (lambda t: CompareScalar(t["m"], t["f"], 0.0, CMPMODE.EQ, 64, 1,
                             UnaryRepeatParams(1, 1, 8, 256)), LimitError, "RepStride = 256"),
    (lambda t: Compare(t["m"], t["f"], t["f"], CMPMODE.EQ, 64, 5,       # 40 B of bits into 32
                       BinaryRepeatParams(1, 1, 1, 8, 0, 0)), UbError, "past the end"),
    (lambda t: CompareScalar(t["f"].ReinterpretCast(uint8_t), t["f"], 0.0, CMPMODE.EQ, 64, 1,
                             UnaryRepeatParams()), UbError, "overlap completely or not at all"),
    (lambda t: Compare(t["m"], t["f"], t["f"], CMPMODE.EQ), LimitError, "takes"),
    (lambda t: GetCmpMask(t["m"]), UbError, "at least 128 B"),
    (lambda t: GetCmpMask(t["big"][8]), AlignmentError, "not 16 B aligned"),
    (lambda t: SetCmpMask(t["big"][4]), AlignmentError, "not 16 B aligned"),
    (lambda t: Select(t["f"], t["m"], t["f"], t["f"], SELMODE.VSEL_CMPMASK_SPR, 64,
                      selMode=SELMODE.VSEL_CMPMASK_SPR), DtypeError, "takes"),
    (lambda t: Select(t["f"], t["f"], t["f"], 1, BinaryRepeatParams(),
                      selMode=SELMODE.VSEL_TENSOR_SCALAR_MODE), DtypeError, "mode 1 without"),
    (lambda t: Select(t["f"], t["i"].ReinterpretCast(np.int16), t["f"], t["f"],
                      SELMODE.VSEL_CMPMASK_SPR, 64), DtypeError, "selMask must be"),
    (lambda t: Select(t["f"], t["m"], t["f"], t["f"], SELMODE.VSEL_TENSOR_TENSOR_MODE, 64, 256,
                      BinaryRepeatParams()), LimitError, "repeatTime = 256"),
    (lambda t: Select(t["f"], t["m"], t["f"], t["f"], SELMODE.VSEL_TENSOR_TENSOR_MODE, 64, 1,
                      BinaryRepeatParams(1, 1, 1, 8, 8, 256)), LimitError, "RepStride = 256"),
    (lambda t: Select(t["f"], t["m"], t["f"], t["f"], SELMODE.VSEL_TENSOR_TENSOR_MODE, 64, 5,
                      BinaryRepeatParams(1, 1, 1, 0, 0, 0)), UbError, "past the end"),  # 40 B
    (lambda t: [SetCmpMask(t["adr"]),           # CMPMASK = address 48: not 32 B aligned
                Select(t["f"], t["f"], t["f"], 1, BinaryRepeatParams(),
                       selMode=SELMODE.VSEL_TENSOR_TENSOR_MODE)], AlignmentError, "not 32 B"),
    (lambda t: [SetCmpMask(t["big"]),           # CMPMASK = address 0x01010101
                Select(t["f"], t["f"], t["f"], 1, BinaryRepeatParams(),
                       selMode=SELMODE.VSEL_TENSOR_TENSOR_MODE)], UbError, "outside the"),
])
def test_errors(body, error, match):
    bufs = dict(m=np.zeros(32, np.uint8), f=np.zeros(64, np.float32), i=np.zeros(64, np.int32),
                big=np.ones(128, np.uint8), adr=np.array([48] + [0] * 15, np.uint8))
    with pytest.raises(error, match=match):
        ub_run(body, bufs)


def test_select_level0_scalar_mode_needs_the_ascendc_ub_reserve():
    def body(t):
        Select(t["f"], t["m"], t["f"], 0.0, SELMODE.VSEL_TENSOR_SCALAR_MODE, 64, 1,
               BinaryRepeatParams())

    bufs = dict(m=np.zeros(32, np.uint8), f=np.zeros(64, np.float32))
    ub_run(body, bufs)
    with pytest.raises(UbError, match="8 KiB"):
        ub_run(body, bufs, reserve_ub=False)
