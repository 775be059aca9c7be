"""UB -> UB data movement (DataCopy with a count or DataCopyParams, Copy with masks and
block strides) and DataCopyPad's GM -> UB padding, against numpy renderings of
DataCopy_UBToUB_*.md, Copy.md, DataCopyPad_GMToUB.md and SetPadValue_ISASI.md."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim import (AlignmentError, DtypeError, GlobalMemory, KernelError, LimitError, UbError,
                    get_soc, run_kernel)
from npusim.ascendc import *  # noqa: F403
from npusim.ascendc.checker import CheckerConfig, UninitialisedError

from kernel_helpers import ub_run

SOC = get_soc("Ascend910B1")
HEAD = SOC.vec_head_cycles


def cycles(prof, name):
    """Cycles of the PIPE_V records called ``name``."""
    return [r[2] for r in prof.records[0] if r[5] == name and r[1] == PIPE_V]


# -- DataCopy UB -> UB ---------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(count=st.integers(1, 4), blen=st.integers(1, 3), sgap=st.integers(0, 3),
       dgap=st.integers(0, 3), dtype=st.sampled_from([np.float16, np.int8, np.float32]))
def test_datacopy_ub_to_ub_with_params(count, blen, sgap, dgap, dtype):
    dtype = np.dtype(dtype)
    epb = 32 // dtype.itemsize
    src = np.arange(count * (blen + sgap) * epb).astype(dtype)
    z = np.full(count * (blen + dgap) * epb, 9, dtype)
    after, prof = ub_run(lambda t: DataCopy(t["z"], t["x"], DataCopyParams(count, blen, sgap,
                                                                            dgap)),
                         dict(x=src, z=z))
    want = z.copy()            # a gap runs from the end of one block to the next's start
    for i in range(count):
        d, s = i * (blen + dgap) * epb, i * (blen + sgap) * epb
        want[d:d + blen * epb] = src[s:s + blen * epb]
    np.testing.assert_array_equal(after["z"], want)
    assert cycles(prof, "DataCopy") == [HEAD + -(-count * blen * 32 // 256)]  # 256 B/cycle


def test_datacopy_ub_to_ub_count_nop_and_limits():
    x = np.arange(64, dtype=np.float32)
    after, _ = ub_run(lambda t: (DataCopy(t["z"], t["x"], 64),
                                 DataCopy(t["w"], t["x"], DataCopyParams(0, 8, 0, 0))),
                      dict(x=x, z=np.zeros(64, np.float32), w=np.full(8, 5, np.float32)))
    np.testing.assert_array_equal(after["z"], x)
    np.testing.assert_array_equal(after["w"], 5)                    # blockCount 0: a NOP
    with pytest.raises(LimitError, match=r"blockCount = 4096 is outside \[0, 4095\] "
                                         r"\(docs/reference/hardware\.md §3"):
        ub_run(lambda t: DataCopy(t["z"], t["x"], DataCopyParams(4096, 1, 0, 0)),
               dict(x=x, z=np.zeros(64, np.float32)))
    with pytest.raises(AlignmentError, match="whole number of 32 B"):
        ub_run(lambda t: DataCopy(t["z"], t["x"], 12), dict(x=x, z=np.zeros(64, np.float32)))
    # as a warning, the copy is rounded down to 32 B, as on hardware
    after, prof = ub_run(lambda t: DataCopy(t["z"], t["x"], 12),
                         dict(x=x, z=np.zeros(64, np.float32)),
                         checks=CheckerConfig(warn={"Alignment"}))
    np.testing.assert_array_equal(after["z"][:8], x[:8])
    np.testing.assert_array_equal(after["z"][8:], 0)
    with pytest.raises(UbError, match="past the end"):
        ub_run(lambda t: DataCopy(t["z"], t["x"], DataCopyParams(2, 8, 0, 1)),
               dict(x=x, z=np.zeros(64, np.float32)))


# -- Copy ----------------------------------------------------------------------------------
def ref_copy(dst, src, on, repeat, dblk, sblk, drep, srep):
    """Lane by lane: repeat r, lane l at r*RepeatSize + (l // epb)*Stride blocks + l % epb."""
    out = dst.copy()
    epb = 32 // dst.itemsize
    for r in range(repeat):
        for lane, active in enumerate(on):
            if active:
                b, e = divmod(lane, epb)
                out[(r * drep + b * dblk) * epb + e] = src[(r * srep + b * sblk) * epb + e]
    return out


def lanes_on(mask, lanes):
    if isinstance(mask, list):
        word = mask[0] | (mask[1] << 64)
        return [bool(word >> i & 1) for i in range(lanes)]
    return [i < mask for i in range(lanes)]


@settings(max_examples=25, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.float16, np.int32, np.uint16]),
       repeat=st.integers(0, 3), sblk=st.integers(0, 300), srep=st.integers(0, 20),
       dblk=st.integers(1, 2))
def test_copy_masks_and_strides(data, dtype, repeat, sblk, srep, dblk):
    dtype = np.dtype(dtype)
    lanes = 256 // dtype.itemsize
    epb = 32 // dtype.itemsize
    if dtype.itemsize == 2:
        mask = data.draw(st.one_of(st.integers(1, 128), st.lists(
            st.integers(0, 2**64 - 1), min_size=2, max_size=2)))
    else:
        mask = data.draw(st.one_of(st.integers(1, 64), st.tuples(
            st.integers(0, 2**64 - 1)).map(lambda w: [w[0], 0])))
    drep = 8 * dblk                                  # dst repeats do not overlap
    src = np.arange(((max(repeat, 1) - 1) * srep + 7 * sblk + 1) * epb).astype(dtype)
    z = np.full(max(repeat, 1) * drep * epb, 3, dtype)
    p = CopyRepeatParams(dblk, sblk, drep, srep)     # block strides beyond 255 are allowed
    after, prof = ub_run(lambda t: Copy(t["z"], t["x"], mask, repeat, p), dict(x=src, z=z))
    want = ref_copy(z, src, lanes_on(mask, lanes), repeat, dblk, sblk, drep, srep)
    np.testing.assert_array_equal(after["z"], want)
    assert cycles(prof, "Copy")[0] >= HEAD + repeat          # one 256 B repeat a cycle


def test_copy_counter_mode_counts_per_repeat():
    x = np.arange(512, dtype=np.float16)

    def body(t):
        SetMaskCount()
        Copy(t["z"], t["x"], 100, 3, CopyRepeatParams(1, 1, 8, 8))       # 100 per repeat
        SetVectorMask(0, 5, dtype=half, mode=MaskMode.COUNTER)
        Copy(t["w"], t["x"], MASK_PLACEHOLDER, 2, CopyRepeatParams(), isSetMask=False)
        SetMaskNorm()

    after, _ = ub_run(body, dict(x=x, z=np.full(512, -1, np.float16),
                                 w=np.full(256, -1, np.float16)))
    want = np.full(512, -1, np.float16)
    for r in range(3):
        want[128 * r:128 * r + 100] = x[128 * r:128 * r + 100]
    np.testing.assert_array_equal(after["z"], want)
    want = np.full(256, -1, np.float16)
    want[:5], want[128:133] = x[:5], x[128:133]
    np.testing.assert_array_equal(after["w"], want)


def test_copy_errors():
    def run(body, dtype=np.float16, soc="Ascend910B1"):
        return ub_run(body, dict(x=np.zeros(256, dtype), z=np.zeros(256, dtype)), soc=soc)
    with pytest.raises(DtypeError, match="int8"):
        run(lambda t: Copy(t["z"], t["x"], 128, 1, CopyRepeatParams()), dtype=np.int8)
    with pytest.raises(LimitError, match="repeatTime = 256"):
        run(lambda t: Copy(t["z"], t["x"], 128, 256, CopyRepeatParams()))
    with pytest.raises(LimitError, match="srcRepeatSize = 4096"):
        run(lambda t: Copy(t["z"], t["x"], 128, 1, CopyRepeatParams(1, 1, 8, 4096)))
    with pytest.raises(LimitError, match="dstStride = 65536"):
        run(lambda t: Copy(t["z"], t["x"], 128, 1, CopyRepeatParams(65536, 1, 8, 8)))
    with pytest.raises(UbError, match="past the end"):
        run(lambda t: Copy(t["z"], t["x"], 128, 3, CopyRepeatParams()))
    with pytest.raises(UbError, match="overlap"):
        run(lambda t: Copy(t["x"][16], t["x"], 128, 1, CopyRepeatParams()))
    with pytest.raises(LimitError, match="negative"):
        run(lambda t: (SetMaskCount(), Copy(t["z"], t["x"], -1, 1, CopyRepeatParams())))
    with pytest.raises(KernelError, match="not supported on Ascend910A"):
        run(lambda t: Copy(t["z"], t["x"], 128, 1, CopyRepeatParams()), soc="Ascend910A")


# -- DataCopyPad GM -> UB padding ----------------------------------------------------------
SENTINEL = 0x5A


def pad_run(gm_data, params, pad, ub_elems, set_pad=None, prefill=True, checks=None,
            after=None):
    """Fill a UB buffer with SENTINEL bytes (vector), DataCopyPad ``gm_data`` into it, and
    return the buffer's bytes (copied out with DataCopy)."""
    dt = gm_data.dtype
    gm = GlobalMemory(SOC.memory_size)
    src, out = gm.malloc(max(gm_data.nbytes, 32)), gm.malloc(ub_elems * dt.itemsize)
    gm.write(src, gm_data)

    def kernel():
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, ub_elems * dt.itemsize)
        t = buf.Get(dt)
        raw = buf.Get(uint16_t)
        if prefill:
            Duplicate(raw, SENTINEL * 0x101, ub_elems * dt.itemsize // 2)
            SetFlag(HardEvent.V_MTE2, 0)
            WaitFlag(HardEvent.V_MTE2, 0)
        g, o = GlobalTensor(dt), GlobalTensor(dt)
        g.SetGlobalBuffer(src, gm_data.size)
        o.SetGlobalBuffer(out, ub_elems)
        if set_pad is not None:
            SetPadValue(dt.type(set_pad))
        DataCopyPad(t, g, params, pad)
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        if after is not None:
            after(t)
        for event in (HardEvent.MTE2_MTE3, HardEvent.V_MTE3):
            SetFlag(event, 0)
            WaitFlag(event, 0)
        DataCopy(o, t, ub_elems)

    run_kernel(kernel, 1, (), soc=SOC, gm=gm,
               checks=checks or CheckerConfig(warn={"Uninitialised"}))
    return np.frombuffer(gm.read(out, ub_elems * dt.itemsize), np.uint8).copy()


def ref_pad(gm_data, rows, row_bytes, left, right, dst_gap, fill, ub_bytes):
    """Each row 32 B aligned in UB: [left pads][data][right pads][dummy]; ``fill`` is the
    pad/dummy element (bytes), "first" (dummy = the row's first element) or None (left
    as they were)."""
    isz = gm_data.itemsize
    raw = gm_data.view(np.uint8)
    out = np.full(ub_bytes, SENTINEL, np.uint8)
    row_ub = -(-(left * isz + row_bytes + right * isz) // 32) * 32
    pitch = row_ub + dst_gap * 32
    for r in range(rows):
        base = r * pitch
        data = raw[r * row_bytes:(r + 1) * row_bytes]
        pattern = data[:isz] if isinstance(fill, str) else fill
        if pattern is not None:
            for b in range(0, row_ub, isz):
                out[base + b:base + b + isz] = pattern
        out[base + left * isz:base + left * isz + row_bytes] = data
    return out


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from([np.float16, np.float32, np.int8]), rows=st.integers(1, 3),
       elems=st.integers(1, 20), left=st.integers(0, 3), right=st.integers(0, 3),
       is_pad=st.booleans(), gap=st.integers(0, 1))
def test_datacopypad_padding_and_dummy(dtype, rows, elems, left, right, is_pad, gap):
    dtype = np.dtype(dtype)
    isz = dtype.itemsize
    data = (np.arange(rows * elems) % 50 + 1).astype(dtype)
    ub_bytes = rows * (-(-((left + right + elems) * isz) // 32) * 32 + gap * 32)
    got = pad_run(data, DataCopyExtParams(rows, elems * isz, 0, gap, 0),
                  DataCopyPadExtParams(is_pad, left, right, 7), ub_bytes // isz)
    if left == right == 0:
        fill = "first"
    elif is_pad:
        fill = np.array([7], dtype).view(np.uint8)
    else:
        fill = None                                    # "random": left unwritten
    np.testing.assert_array_equal(got, ref_pad(data, rows, elems * isz, left, right, gap, fill,
                                               ub_bytes))


def test_datacopypad_set_pad_value_and_checker():
    data = np.arange(1, 21, dtype=np.float16)
    params = DataCopyExtParams(1, 40, 0, 0, 0)
    # SetPadValue with isPad false fills the right padding (the page's scenario 1)
    got = pad_run(data, params, DataCopyPadExtParams(False, 0, 12, 0), 32, set_pad=1.0)
    np.testing.assert_array_equal(got.view(np.float16), np.concatenate([data, np.ones(12)]))
    # without it the padding is random: reading it is an uninitialised read
    with pytest.raises(UninitialisedError):
        pad_run(data, params, DataCopyPadExtParams(False, 0, 12, 0), 32, prefill=False,
                checks=CheckerConfig(), after=lambda t: Adds(t, t, 1.0, 32))
    # the dummy of an unaligned row with no padding is written: reading it is fine
    pad_run(data, params, DataCopyPadExtParams(False, 0, 0, 0), 32, prefill=False,
            checks=CheckerConfig(warn={"Leak"}), after=lambda t: Adds(t, t, 1.0, 32))


def test_datacopypad_errors_and_unchanged_cost():
    with pytest.raises(LimitError, match="64-bit type pads with 0"):
        pad_run(np.arange(3, dtype=np.int64), DataCopyExtParams(1, 24, 0, 0, 0),
                DataCopyPadExtParams(True, 0, 1, 5), 4)
    with pytest.raises(KernelError, match="UB -> UB is not a DataCopyPad path"):
        ub_run(lambda t: DataCopyPad(t["z"], t["x"], DataCopyExtParams(1, 32, 0, 0, 0)),
               dict(x=np.zeros(16, np.float16), z=np.zeros(16, np.float16)))
    # the MTE2 record is the GM bytes moved, padding or not
    gm = GlobalMemory(SOC.memory_size)
    src = gm.malloc(64)

    def kernel():
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 256)
        g = GlobalTensor(half)
        g.SetGlobalBuffer(src, 30)
        DataCopyPad(buf.Get(half), g, DataCopyExtParams(3, 10, 0, 0, 0),
                    DataCopyPadExtParams(True, 1, 2, 0))

    prof = run_kernel(kernel, 1, (), soc=SOC, gm=gm, keep_spans=True)
    assert [r[3] for r in prof.records[0] if r[5] == "DataCopyPad"] == [30]
