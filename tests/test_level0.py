"""Level-0 vector calls: masks, repeats, block/repeat strides, the mask register, Counter
mode, saturation, limits and address overlap (docs/reference/hardware.md §3 "Vector
instructions"; Ascend C 高维切分.md, 掩码.md, 通用说明和约束.md).

The reference here walks the documented addressing one lane at a time in plain Python:
repeat r, block b, element e of an operand sit at element
``r * repStride * epb + b * blkStride * epb + e`` (epb = elements of one 32 B block).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim import GlobalMemory, LimitError, UbError, get_soc, run_kernel
from npusim.ascendc import *  # noqa: F403
from npusim.ascendc.checker import UninitialisedError

from kernel_helpers import ub_run

SOC = get_soc("Ascend910B1")              # what ub_run runs on


def ref_lanes(itemsize, repeat, blk, rep, lanes=None):
    """Element offset of every lane, repeat by repeat, by the documented rule."""
    epb = 32 // itemsize
    lanes = lanes or 256 // itemsize
    out = []
    for r in range(repeat):
        row = []
        for lane in range(lanes):
            b, e = divmod(lane, epb)
            row.append(r * rep * epb + b * blk * epb + e)
        out.append(row)
    return out


def ref_mask(mask, lanes):
    """Lane on/off from a continuous count or a [low, high] pair of words."""
    if isinstance(mask, list):
        bits = mask[0] | (mask[1] << 64)
        return [bool(bits >> i & 1) for i in range(lanes)]
    return [i < mask for i in range(lanes)]


def reference_binary(op, dst, a, b, mask, repeat, p):
    """dst after a level-0 binary call, lane by lane, repeat after repeat."""
    out = dst.copy()
    isz = dst.dtype.itemsize
    lanes = 256 // isz
    on = ref_mask(mask, lanes)
    d = ref_lanes(isz, repeat, p.dstBlkStride, p.dstRepStride)
    s0 = ref_lanes(isz, repeat, p.src0BlkStride, p.src0RepStride)
    s1 = ref_lanes(isz, repeat, p.src1BlkStride, p.src1RepStride)
    for r in range(repeat):
        for lane in range(lanes):
            if on[lane]:
                out[d[r][lane]] = op(a[s0[r][lane]], b[s1[r][lane]])
    return out


def span(repeat, blk, rep, isz):
    """Elements an operand needs for a layout (at least one 32 B block)."""
    if repeat == 0:
        return 32 // isz
    return max(ref_lanes(isz, repeat, blk, rep)[-1][-1] + 1, 32 // isz)


masks16 = st.one_of(st.integers(0, 200),
                    st.lists(st.integers(0, 2**64 - 1), min_size=2, max_size=2))
masks32 = st.one_of(st.integers(0, 100),
                    st.tuples(st.integers(0, 2**64 - 1)).map(lambda t: [t[0], 0]))


@settings(max_examples=25, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.float16, np.float32]),
       repeat=st.integers(0, 4),
       strides=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 16)), min_size=3,
                        max_size=3),
       op=st.sampled_from(["Add", "Mul", "Max", "Sub"]))
def test_binary_level0_matches_the_documented_addressing(data, dtype, repeat, strides, op):
    dtype = np.dtype(dtype)
    mask = data.draw(masks16 if dtype.itemsize == 2 else masks32)
    (db, dr), (ab, ar), (bb, br) = strides
    dr = max(dr, 8 * db)                   # the destination's repeats do not overlap
    p = BinaryRepeatParams(db, ab, bb, dr, ar, br)
    isz = dtype.itemsize
    rng = np.random.default_rng(repeat * 7 + db)
    a = rng.uniform(-4, 4, span(repeat, ab, ar, isz)).astype(dtype)
    b = rng.uniform(-4, 4, span(repeat, bb, br, isz)).astype(dtype)
    z = np.full(span(repeat, db, dr, isz), -7, dtype)
    fn = {"Add": np.add, "Mul": np.multiply, "Max": np.maximum, "Sub": np.subtract}[op]
    api = globals()[op]
    after, _ = ub_run(lambda t: api(t["z"], t["a"], t["b"], mask, repeat, p), dict(a=a, b=b, z=z))
    want = reference_binary(lambda x, y: dtype.type(fn(x, y)), z, a, b,
                            min(mask, 256 // isz) if isinstance(mask, int) else mask, repeat, p)
    np.testing.assert_array_equal(after["z"], want)


def test_unary_scalar_and_cast_level0():
    x = np.linspace(-2, 2, 256).astype(np.float16)

    def body(t):
        Exp(t["e"], t["x"], [0x0F0F, 0], 1, UnaryRepeatParams(1, 2, 8, 8))
        Adds(t["s"], t["x"], 1.5, 64, 2, UnaryRepeatParams(1, 1, 16, 8))
        Cast(t["f"], t["x"], RoundMode.CAST_NONE, 64, 2, UnaryRepeatParams(1, 1, 8, 4))

    after, _ = ub_run(body, dict(x=x, e=np.zeros(128, np.float16), s=np.zeros(384, np.float16),
                                 f=np.zeros(128, np.float32)))
    # Exp: lanes 0-3 and 8-11 on; source blocks 2 apart (16 halves each)
    e = np.zeros(128, np.float16)
    lanes = [0, 1, 2, 3, 8, 9, 10, 11]
    # lanes < 16 sit in block 0 of both operands; exp rounded once to half
    e[lanes] = np.exp(x[lanes].astype(np.float64))
    np.testing.assert_array_equal(after["e"], e)
    # Adds: 64 lanes of each repeat; the destination's repeats 16 blocks (256 halves) apart
    s = np.zeros(384, np.float16)
    s[:64] = x[:64] + np.float16(1.5)
    s[256:320] = x[128:192] + np.float16(1.5)
    np.testing.assert_array_equal(after["s"], s)
    # Cast half -> float: 64 lanes a repeat, the half source advances 4 blocks (64 halves)
    np.testing.assert_array_equal(after["f"], x[:128].astype(np.float32))


def test_duplicate_level0_strides_and_mask():
    def body(t):
        Duplicate(t["z"], 3.0, 4, 2, 2, 16)      # 4 lanes, blocks 2 apart, repeats 16 blocks

    after, _ = ub_run(body, dict(z=np.zeros(512, np.float32)))
    want = np.zeros(512, np.float32)
    want[[0, 1, 2, 3, 128, 129, 130, 131]] = 3
    np.testing.assert_array_equal(after["z"], want)


def test_counter_mode_and_the_mask_register():
    x = np.arange(512, dtype=np.float32)

    def body(t):
        SetMaskCount()
        SetVectorMask(0, 100, dtype=float32, mode=MaskMode.COUNTER)
        Muls(t["z"], t["x"], 2.0, MASK_PLACEHOLDER, 1, UnaryRepeatParams(), isSetMask=False)
        SetMaskNorm()
        SetVectorMask(0, 0b101, dtype=float32)
        Adds(t["w"], t["x"], 1.0, MASK_PLACEHOLDER, 2, UnaryRepeatParams(), isSetMask=False)
        ResetMask()
        Abs(t["v"], t["x"], MASK_PLACEHOLDER, 1, UnaryRepeatParams(), isSetMask=False)

    after, prof = ub_run(body, dict(x=x, z=np.full(512, -1, np.float32),
                                    w=np.full(128, -1, np.float32),
                                    v=np.full(64, -1, np.float32)))
    z = np.full(512, -1, np.float32)
    z[:100] = x[:100] * 2                 # Counter mode: 100 elements, repeatTime ignored
    np.testing.assert_array_equal(after["z"], z)
    w = np.full(128, -1, np.float32)
    w[[0, 2, 64, 66]] = x[[0, 2, 64, 66]] + 1
    np.testing.assert_array_equal(after["w"], w)
    np.testing.assert_array_equal(after["v"], x[:64])
    names = [r[5] for r in prof.records[0]]
    assert names.count("SetVectorMask") == 2 and "SetMaskCount" in names


def test_level2_call_restores_normal_mode_and_full_mask():
    x = np.arange(64, dtype=np.float32)

    def body(t):
        SetMaskCount()
        SetVectorMask(0, 3, dtype=float32, mode=MaskMode.COUNTER)
        Adds(t["x"], t["x"], 1.0, 64)                     # level 2: runs, then resets
        assert GetMaskMode() == MaskMode.NORMAL
        Adds(t["x"], t["x"], 1.0, MASK_PLACEHOLDER, 1, UnaryRepeatParams(), isSetMask=False)

    after, _ = ub_run(body, dict(x=x))
    np.testing.assert_array_equal(after["x"], x + 2)


def test_accumulating_into_src1_runs_repeat_after_repeat():
    x = np.arange(512, dtype=np.float32)

    def body(t):
        Duplicate(t["acc"], 0.0, 64)
        Add(t["acc"], t["x"], t["acc"], 64, 8, BinaryRepeatParams(1, 1, 1, 0, 8, 0))

    after, _ = ub_run(body, dict(x=x, acc=np.zeros(64, np.float32)))
    np.testing.assert_array_equal(after["acc"], x.reshape(8, 64).sum(axis=0))


def test_level0_cost_is_per_repeat():
    def body(t):
        Add(t["z"], t["x"], t["x"], 1, 3, BinaryRepeatParams())     # 3 repeats of 1 lane
        Exp(t["z"], t["x"], 128, 2, UnaryRepeatParams())           # 32 half/cycle: 4 a repeat

    _, prof = ub_run(body, dict(x=np.zeros(512, np.float16), z=np.zeros(512, np.float16)))
    cycles = {r[5]: r[2] for r in prof.records[0] if r[5] in ("Add", "Exp")}
    assert cycles["Add"] == SOC.vec_head_cycles + 3
    assert cycles["Exp"] == SOC.vec_head_cycles + 2 * 4


def test_saturation_flag():
    h = np.full(128, 60000, np.float16)
    i = np.full(16, 32767, np.int16)

    def body(t):
        Add(t["h"], t["h"], t["h"], 128)
        Adds(t["i"], t["i"], 1, 16)
        SetSaturationFlag(True)
        Add(t["hs"], t["hs"], t["hs"], 128)
        Adds(t["is"], t["is"], 1, 16)
        SetSaturationFlag(False)

    after, _ = ub_run(body, dict(h=h, i=i, hs=h.copy(), **{"is": i.copy()}))
    assert np.all(np.isinf(after["h"])) and np.all(after["i"] == -32768)
    assert np.all(after["hs"] == 65504) and np.all(after["is"] == 32767)


@pytest.mark.parametrize("call, error, match", [
    (lambda t: Add(t["z"], t["x"], t["x"], 64, 256, BinaryRepeatParams()), LimitError,
     r"repeatTime = 256 is outside \[0, 255\]"),
    (lambda t: Exp(t["z"], t["x"], 64, 1, UnaryRepeatParams(1, 1, 256, 8)), LimitError,
     r"RepStride = 256"),
    (lambda t: Abs(t["z"], t["x"], [0, 1], 1, UnaryRepeatParams()), LimitError,
     r"beyond the 64"),
    (lambda t: Abs(t["z"], t["x"], 64, 5, UnaryRepeatParams()), UbError,
     r"past the end of its buffer"),
    (lambda t: Abs(t["x"][8], t["x"], 64, 1, UnaryRepeatParams()), UbError,
     r"overlap completely or not at all"),
    (lambda t: Abs(t["x"][64], t["x"], 64, 2, UnaryRepeatParams()), UbError,
     r"later repeat reads"),
    (lambda t: SetVectorMask(65, dtype=float32), LimitError, r"len = 65"),
])
def test_level0_errors(call, error, match):
    with pytest.raises(error, match=match):
        ub_run(call, dict(x=np.zeros(256, np.float32), z=np.zeros(256, np.float32)))


def test_checker_sees_only_active_lanes():
    """Masked-off lanes and the gaps strides leave are not read: leaving them unwritten is
    fine; an active lane on unwritten UB is an uninitialised read."""
    def gaps():
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 1024)
        x = buf.Get(float32)
        Duplicate(x, 1.0, 8, 1, 1, 8)                 # only block 0 written
        Duplicate(x[128], 1.0, 8, 1, 1, 8)            # and block 16
        Abs(x[64], x, 8, 2, UnaryRepeatParams(1, 1, 1, 16))   # reads blocks 0 and 16 only

    def uninit():
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 1024)
        x = buf.Get(float32)
        Duplicate(x, 1.0, 8, 1, 1, 8)
        Abs(x[64], x, 9, 1, UnaryRepeatParams())     # lane 8 is in block 1: never written

    run_kernel(gaps, 1, (), soc=SOC, gm=GlobalMemory(1 << 20))
    with pytest.raises(UninitialisedError):
        run_kernel(uninit, 1, (), soc=SOC, gm=GlobalMemory(1 << 20))


@pytest.mark.parametrize("dtype, mask", [(np.float16, 128), (np.float32, [0xF0F0, 0])])
def test_accumulation_over_255_repeats_rounds_each_step(dtype, mask):
    """Max/Add into src1 with dstRepStride = src1RepStride = 0: one rounding per repeat,
    in repeat order; lanes the mask leaves off keep their bytes."""
    lanes = 256 // np.dtype(dtype).itemsize
    x = np.random.default_rng(1).uniform(0, 8, 255 * lanes).astype(dtype)
    acc0 = np.full(lanes, 1, dtype)

    def body(t):
        Add(t["acc"], t["x"], t["acc"], mask, 255, BinaryRepeatParams(1, 1, 1, 0, 8, 0))

    after, prof = ub_run(body, dict(x=x, acc=acc0))
    on = np.array(ref_mask(mask, lanes))
    want = acc0.copy()
    for r in range(255):
        want[on] = (x[r * lanes:(r + 1) * lanes][on] + want[on]).astype(dtype)
    np.testing.assert_array_equal(after["acc"], want)
    add = [r for r in prof.records[0] if r[5] == "Add"]
    # one cycle a repeat, plus the read-write conflicts of UB bank id 0: acc (written every
    # repeat) sits in bank groups 8-15 right after x, whose odd repeats read the same banks
    # (127), and the first repeat also reads acc, which src1RepStride = 0 reads once (1)
    assert add[0][2] == SOC.vec_head_cycles + 255 + 128
