"""Brcb, Gather, Gatherb and GatherMask against numpy renderings of their Ascend C pages
(Brcb.md, Gather.md, Gatherb_ISASI.md, GatherMask.md), element by element, with the
documented rates of docs/reference/hardware.md §2.1."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim import AlignmentError, DtypeError, KernelError, LimitError, UbError, get_soc
from npusim.ascendc import *  # noqa: F403

from kernel_helpers import ub_run

SOC = get_soc("Ascend910B1")
HEAD = SOC.vec_head_cycles


def cycles(prof, name):
    return [r[2] for r in prof.records[0] if r[5] == name]


def bits_of(mask, lanes):
    """Lane on/off of a continuous count or a [low, high] pair of words."""
    if isinstance(mask, list):
        word = mask[0] | (mask[1] << 64)
        return [bool(word >> i & 1) for i in range(lanes)]
    return [i < mask for i in range(lanes)]


# -- Brcb ----------------------------------------------------------------------------------
def ref_brcb(dst, src, repeat, blk, rep):
    out = dst.copy()
    epb = 32 // dst.itemsize
    blk = blk or 1                        # "dstBlkStride 0 is treated as 1"
    for r in range(repeat):
        for j in range(8):
            start = (r * rep + j * blk) * epb
            out[start:start + epb] = src[8 * r + j]
    return out


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from([np.float16, np.float32, np.int16, np.uint32, ml_dtypes.bfloat16]),
       repeat=st.integers(0, 4), blk=st.integers(0, 3), rep=st.integers(0, 30))
def test_brcb_fills_one_block_per_source_element(dtype, repeat, blk, rep):
    dtype = np.dtype(dtype)
    epb = 32 // dtype.itemsize
    src = (np.arange(8 * max(repeat, 1)) + 1).astype(dtype)
    span = ((max(repeat - 1, 0)) * rep + 7 * max(blk, 1) + 1) * epb
    z = np.full(span, 99, dtype)
    after, prof = ub_run(lambda t: Brcb(t["z"], t["x"], repeat, BrcbRepeatParams(blk, rep)),
                         dict(x=src, z=z))
    np.testing.assert_array_equal(after["z"], ref_brcb(z, src, repeat, blk, rep))
    assert cycles(prof, "Brcb") == [HEAD + repeat]            # 8 elements in per cycle


def test_brcb_page_example_and_rate():
    x = np.arange(1, 17, dtype=np.uint16)
    after, prof = ub_run(lambda t: Brcb(t["z"], t["x"], 2, BrcbRepeatParams(1, 8)),
                         dict(x=x, z=np.zeros(256, np.uint16)))
    np.testing.assert_array_equal(after["z"], np.repeat(x, 16))     # the page's output
    after, prof = ub_run(lambda t: Brcb(t["z"], t["x"][8], 1, BrcbRepeatParams(2, 8)),
                         dict(x=np.arange(16, dtype=np.float32), z=np.zeros(256, np.float32)))
    assert cycles(prof, "Brcb") == [HEAD + 1]                    # one repeat: one cycle


def test_brcb_errors():
    def run(body, z=np.zeros(256, np.float16), x=np.zeros(64, np.float16)):
        return ub_run(body, dict(x=x, z=z))
    with pytest.raises(DtypeError, match="int8"):
        run(lambda t: Brcb(t["z"], t["x"], 1, BrcbRepeatParams()), z=np.zeros(256, np.int8),
            x=np.zeros(64, np.int8))
    with pytest.raises(LimitError, match="repeatTime = 256"):
        run(lambda t: Brcb(t["z"], t["x"], 256, BrcbRepeatParams()))
    with pytest.raises(AlignmentError, match="32 B aligned"):
        run(lambda t: Brcb(t["z"][1], t["x"], 1, BrcbRepeatParams()))
    with pytest.raises(UbError, match="same memory"):
        run(lambda t: Brcb(t["z"], t["z"][64], 1, BrcbRepeatParams()))
    with pytest.raises(UbError, match="past the end"):
        run(lambda t: Brcb(t["z"], t["x"], 3, BrcbRepeatParams()))    # dst holds 2 repeats
    with pytest.raises(KernelError, match="not supported on Ascend910A"):
        ub_run(lambda t: Brcb(t["z"], t["x"], 1, BrcbRepeatParams()),
               dict(x=np.zeros(64, np.float16), z=np.zeros(256, np.float16)), soc="Ascend910A")


# -- Gather --------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.float16, np.int32, np.float32, np.uint16]),
       count=st.integers(1, 300), base_elems=st.integers(0, 8))
def test_gather_first_n_follows_the_page_formula(data, dtype, count, base_elems):
    dtype = np.dtype(dtype)
    isz = dtype.itemsize
    n_src = 320
    src = np.arange(n_src).astype(dtype)
    elems = np.array(data.draw(st.lists(st.integers(0, n_src - 1 - base_elems), min_size=count,
                                        max_size=count)))
    off = (elems * isz).astype(np.uint32)
    base = base_elems * isz
    z = np.full(count, 7, dtype)
    after, prof = ub_run(lambda t: Gather(t["z"], t["x"], t["o"], base, count),
                         dict(x=src, o=off, z=z))
    want = np.array([src[(base + int(o)) // isz] for o in off], dtype)   # Gather.md pseudocode
    np.testing.assert_array_equal(after["z"], want)
    assert cycles(prof, "Gather") == [HEAD + -(-count // 5)]


masks16 = st.one_of(st.integers(1, 128), st.lists(st.integers(0, 2**64 - 1), min_size=2,
                                                  max_size=2))


@settings(max_examples=25, deadline=None)
@given(data=st.data(), repeat=st.integers(0, 3), rep=st.integers(0, 12))
def test_gather_level0_masks_and_dst_repeat_stride(data, repeat, rep):
    mask = data.draw(masks16)
    rep = max(rep, 8) if repeat > 1 else rep
    lanes = 128
    src = np.arange(256).astype(np.float16)
    off = (np.random.default_rng(repeat + rep).integers(0, 256, lanes * max(repeat, 1)) * 2
           ).astype(np.uint32)
    z = np.full(max(repeat - 1, 0) * rep * 16 + lanes, -1, np.float16)
    after, prof = ub_run(lambda t: Gather(t["z"], t["x"], t["o"], 0, mask, repeat, rep),
                         dict(x=src, o=off, z=z))
    want = z.copy()
    on = bits_of(mask, lanes)
    for r in range(repeat):
        for lane in range(lanes):
            if on[lane]:
                want[r * rep * 16 + lane] = src[off[r * lanes + lane] // 2]
    np.testing.assert_array_equal(after["z"], want)
    assert cycles(prof, "Gather") == [HEAD + repeat * -(-lanes // 5)]   # per repeat


def test_gather_counter_mode_takes_the_total_count():
    src = np.arange(64, dtype=np.float32)
    off = (np.arange(128)[::-1] % 64 * 4).astype(np.uint32)

    def body(t):
        SetMaskCount()
        Gather(t["z"], t["x"], t["o"], 0, 70, 9, 8)          # 70 elements, repeatTime ignored
        SetMaskNorm()

    after, _ = ub_run(body, dict(x=src, o=off, z=np.full(128, -1, np.float32)))
    want = np.full(128, -1, np.float32)
    want[:70] = src[off[:70] // 4]
    np.testing.assert_array_equal(after["z"], want)


def test_gather_errors():
    def run(off, dtype=np.float16, base=0, soc="Ascend910B1"):
        return ub_run(lambda t: Gather(t["z"], t["x"], t["o"], base, 16),
                      dict(x=np.zeros(16, dtype), o=off, z=np.zeros(16, dtype)), soc=soc)
    ok = np.zeros(16, np.uint32)
    with pytest.raises(AlignmentError, match="multiple of sizeof"):
        run(ok + 1)
    with pytest.raises(AlignmentError, match="srcBaseAddr"):
        run(ok, base=3)
    with pytest.raises(UbError, match="past the end"):
        run(ok + 64)                                  # element 32 of a 16-element buffer
    with pytest.raises(DtypeError, match="srcOffset must be uint32"):
        run(ok.astype(np.int32))
    with pytest.raises(DtypeError, match="int8"):
        run(ok, dtype=np.int8)
    with pytest.raises(KernelError, match="not supported on Ascend910A"):
        run(ok, soc="Ascend910A")
    with pytest.raises(KernelError, match="takes \\(count\\)"):
        ub_run(lambda t: Gather(t["z"], t["x"], t["o"], 0, 128, 1),
               dict(x=np.zeros(16, np.float16), o=ok, z=np.zeros(16, np.float16)))
    with pytest.raises(LimitError, match="dstRepStride = 65536"):
        ub_run(lambda t: Gather(t["z"], t["x"], t["o"], 0, 16, 1, 65536),
               dict(x=np.zeros(16, np.float16), o=ok, z=np.zeros(16, np.float16)))


# -- Gatherb -------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.uint16, np.uint32]), repeat=st.integers(0, 3),
       blk=st.integers(0, 2), rep=st.integers(8, 20))
def test_gatherb_gathers_blocks(data, dtype, repeat, blk, rep):
    dtype = np.dtype(dtype)
    epb = 32 // dtype.itemsize
    src = np.arange(32 * epb).astype(dtype)                     # 32 blocks
    blocks = data.draw(st.lists(st.integers(0, 31), min_size=8 * max(repeat, 1),
                                max_size=8 * max(repeat, 1)))
    off = (np.array(blocks) * 32).astype(np.uint32)
    span = (max(repeat - 1, 0) * rep + 7 * max(blk, 1) + 1) * epb
    z = np.zeros(span, dtype)
    after, prof = ub_run(lambda t: Gatherb(t["z"], t["x"], t["o"], repeat,
                                           GatherRepeatParams(blk, rep)), dict(x=src, o=off, z=z))
    want = z.copy()                                            # Gatherb_ISASI.md pseudocode
    b = blk or 1
    for r in range(repeat):
        for j in range(8):
            s0 = off[r * 8 + j] // dtype.itemsize
            d0 = (r * 32 * rep + j * 32 * b) // dtype.itemsize
            want[d0:d0 + epb] = src[s0:s0 + epb]
    np.testing.assert_array_equal(after["z"], want)
    if repeat:
        assert cycles(prof, "Gatherb") == [HEAD + repeat * 4]    # 42 / 21 per cycle


def test_gatherb_page_example_and_errors():
    off = np.array([224, 192, 160, 128, 96, 64, 32, 0], np.uint32)
    x = np.arange(128, dtype=np.uint16)
    after, _ = ub_run(lambda t: Gatherb(t["z"], t["x"], t["o"], 1, GatherRepeatParams(1, 8)),
                      dict(x=x, o=off, z=np.zeros(128, np.uint16)))
    np.testing.assert_array_equal(after["z"], x.reshape(8, 16)[::-1].reshape(-1))
    with pytest.raises(AlignmentError, match="not 32 B aligned"):
        ub_run(lambda t: Gatherb(t["z"], t["x"], t["o"], 1, GatherRepeatParams()),
               dict(x=x, o=off + 2, z=np.zeros(128, np.uint16)))
    with pytest.raises(DtypeError, match="float16"):
        ub_run(lambda t: Gatherb(t["z"], t["x"], t["o"], 1, GatherRepeatParams()),
               dict(x=x.astype(np.float16), o=off, z=np.zeros(128, np.float16)))


# -- GatherMask ----------------------------------------------------------------------------
def ref_pattern(mode, lanes):
    """Bits of the documented built-in patterns, written as the page writes them (MSB
    left, lane 0 the rightmost bit)."""
    text = {1: "01", 2: "10", 3: "0001", 4: "0010", 5: "0100", 6: "1000", 7: "1"}[mode]
    return [text[-1 - lane % len(text)] == "1" for lane in range(lanes)]


def ref_gather_mask(src, bits_per_repeat, repeat, lanes, blk, rep):
    epb = 32 // src.itemsize
    out = []
    for r in range(repeat):
        bits = bits_per_repeat(r)
        for lane in range(lanes):
            if bits[lane]:
                out.append(src[r * rep * epb + (lane // epb) * blk * epb + lane % epb])
    return np.array(out, src.dtype)


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from([np.float16, np.int16, np.float32, np.uint32]),
       mode=st.integers(1, 7), repeat=st.integers(0, 3), blk=st.integers(1, 2),
       rep=st.integers(0, 16))
def test_gather_mask_builtin_patterns(dtype, mode, repeat, blk, rep):
    dtype = np.dtype(dtype)
    lanes = 256 // dtype.itemsize
    epb = 32 // dtype.itemsize
    src = np.arange((max(repeat - 1, 0) * rep + 7 * blk + 1) * epb).astype(dtype)
    z = np.full(repeat * lanes + 16, 5, dtype)
    cnt, got = [-1], []
    after, prof = ub_run(lambda t: got.append(GatherMask(
        t["z"], t["x"], mode, False, 0, GatherMaskParams(blk, repeat, rep, 0), cnt)),
        dict(x=src, z=z))
    want = ref_gather_mask(src, lambda r: ref_pattern(mode, lanes), repeat, lanes, blk, rep)
    np.testing.assert_array_equal(after["z"][:want.size], want)
    np.testing.assert_array_equal(after["z"][want.size:], z[want.size:])   # not written
    assert cnt == got == [want.size]                # the rsvdCnt out-parameter and the return
    rate = 64 if dtype.itemsize == 2 else 32
    if repeat:
        assert cycles(prof, "GatherMask")[0] >= HEAD + repeat * lanes // rate


def test_gather_mask_page_examples():
    # built-in pattern 2 on 128 uint16: the odd-index elements, rsvdCnt 64
    x = np.arange(1, 129, dtype=np.uint16)
    seen = []

    def body(t):
        n = GatherMask(t["z"], t["x"], 2, False, 0, GatherMaskParams(1, 1, 0, 0))
        seen.append((n, GetGatherMaskRemainCount()))

    after, prof = ub_run(body, dict(x=x, z=np.zeros(128, np.uint16)))
    np.testing.assert_array_equal(after["z"][:64], np.arange(2, 129, 2))
    assert seen == [(64, 64)] and cycles(prof, "GatherMask") == [HEAD + 2]
    # user pattern, Counter mode: mask = 70 per repeat, 2 repeats, src0 repeats 4 blocks
    # apart, the pattern re-read from its start (src1RepeatStride 0)
    rng = np.random.default_rng(3)
    src = np.arange(256, dtype=np.uint32)
    pat = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)

    def counter(t):
        SetMaskCount()
        seen.append(GatherMask(t["z"], t["x"], t["p"], True, 70, GatherMaskParams(1, 2, 4, 0)))
        seen.append(GetMaskMode())

    after, prof = ub_run(counter, dict(x=src, p=pat, z=np.zeros(256, np.uint32)))
    bits = [bool(int(pat[i // 32]) >> (i % 32) & 1) for i in range(70)]
    want = ref_gather_mask(src, lambda r: bits, 2, 70, 1, 4)
    np.testing.assert_array_equal(after["z"][:want.size], want)
    assert seen[-2:] == [want.size, MaskMode.NORMAL]     # the API leaves Normal mode
    assert cycles(prof, "GatherMask") == [HEAD + 2 * -(-70 // 32)]


@settings(max_examples=25, deadline=None)
@given(data=st.data(), repeat=st.integers(1, 3), rep1=st.integers(0, 2))
def test_gather_mask_user_pattern_repeat_stride(data, repeat, rep1):
    src = np.arange(128 * repeat, dtype=np.float16)
    pat = np.array(data.draw(st.lists(st.integers(0, 2**16 - 1), min_size=80, max_size=80)),
                   np.uint16)
    after, _ = ub_run(lambda t: GatherMask(t["z"], t["x"], t["p"], False, 0,
                                           GatherMaskParams(1, repeat, 8, rep1)),
                      dict(x=src, p=pat, z=np.zeros(128 * repeat, np.float16)))

    def bits(r):                       # 8 uint16 words a repeat, rep1 blocks (16 words) apart
        words = pat[r * rep1 * 16:r * rep1 * 16 + 8]
        return [bool(int(words[i // 16]) >> (i % 16) & 1) for i in range(128)]

    want = ref_gather_mask(src, bits, repeat, 128, 1, 8)
    np.testing.assert_array_equal(after["z"][:want.size], want)


def test_gather_mask_errors():
    def run(pattern, mode=False, mask=0, dtype=np.float16, pdtype=np.uint16):
        def body(t):
            p = t["p"] if pattern is None else pattern
            GatherMask(t["z"], t["x"], p, mode, mask, GatherMaskParams(1, 1, 8, 0))
        return ub_run(body, dict(x=np.zeros(128, dtype), p=np.zeros(16, pdtype),
                                 z=np.zeros(128, dtype)))
    with pytest.raises(LimitError, match="src1Pattern = 8"):
        run(8)
    with pytest.raises(LimitError, match="src1Pattern = 0"):
        run(0)
    with pytest.raises(DtypeError, match="uint16 pattern tensor"):
        run(None, pdtype=np.uint32)
    with pytest.raises(LimitError, match="mask"):
        run(1, mode=True, mask=0)
    with pytest.raises(UbError, match="larger than"):
        run(1, mode=True, mask=2**31)
    with pytest.raises(DtypeError, match="int8"):
        run(1, dtype=np.int8)
