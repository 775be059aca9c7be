"""CheckerConfig(device_like=True) / NPUSIM_CHECKER_DEVICE_LIKE: the findings the hardware
does not enforce, and whose hardware behaviour is documented, become warnings and the
simulator does what the device does; by default they stay errors. Hand-computed goldens."""
import numpy as np
import pytest

from npusim import GlobalMemory, KernelError, get_soc, run_kernel
from npusim.ascendc import (Adds, DataCopy, GlobalTensor, HardEvent, SetFlag, TBuf, TPipe,
                            UnaryRepeatParams, WaitFlag, float32, half)
from npusim.ascendc import checker
from npusim.ascendc.checker import CheckerConfig

SOC = get_soc("Ascend910B1")
DEVICE = CheckerConfig(device_like=True)
FULL = 2**64 - 1


def _sync(event):
    SetFlag(event, 0)
    WaitFlag(event, 0)


def _buffers(pipe, sizes):
    out = []
    for n in sizes:
        buf = TBuf()
        pipe.InitBuffer(buf, n)
        out.append(buf)
    return out


def run(kernel, inputs, out_bytes, checks):
    gm = GlobalMemory(1 << 22)
    addrs = []
    for arr in inputs:
        a = gm.malloc(max(arr.nbytes, 512))
        gm.write(a, arr)
        addrs.append(a)
    out = gm.malloc(out_bytes)
    gm.write(out, np.zeros(out_bytes, np.uint8))
    prof = run_kernel(kernel, 1, (*addrs, out), soc=SOC, gm=gm, checks=checks)
    return gm.read(out, out_bytes), prof


# --- the mask's high word on a 32-bit type: ignored (CCE "Mask规则说明": low 64 bits) -----

def mask_kernel(low, high):
    def kernel(src, dst):
        pipe = TPipe()
        a, b = (t.Get(float32) for t in _buffers(pipe, (256, 256)))
        x, y = GlobalTensor(float32), GlobalTensor(float32)
        x.SetGlobalBuffer(src)
        y.SetGlobalBuffer(dst)
        DataCopy(a, x, 64)
        DataCopy(b, x[64], 64)                          # b starts as -1: lanes off keep it
        _sync(HardEvent.MTE2_V)
        Adds(b, a, 1.0, [low, high], 1, UnaryRepeatParams())
        _sync(HardEvent.V_MTE3)
        DataCopy(y, b, 64)
    return kernel


def mask_input():
    return np.concatenate([np.arange(64, dtype=np.float32), -np.ones(64, np.float32)])


def test_high_mask_word_on_float_is_an_error_by_default():
    with pytest.raises(KernelError, match="mask"):
        run(mask_kernel(FULL, FULL), [mask_input()], 256, None)


@pytest.mark.parametrize("low,high,on", [(FULL, FULL, 64), (0xF, 1, 4), (0xF, FULL, 4)])
def test_device_like_ignores_the_high_word(low, high, on):
    raw, prof = run(mask_kernel(low, high), [mask_input()], 256, DEVICE)
    got = np.frombuffer(raw, np.float32)
    want = -np.ones(64, np.float32)
    want[:on] = np.arange(on) + 1
    np.testing.assert_array_equal(got, want)
    assert len(prof.warnings) == 1 and "high word" in prof.warnings[0]
    assert "device-like" in prof.warnings[0]


# --- lanes past a LocalTensor's end: the next UB bytes (UB is flat) -------------------------

def past_end(src, dst):
    """a, b: 64 half each (128 B), c: 128 half. c = a..b + 1 read past a's end into b; then
    a = c + 10 written past a's end into b's bytes."""
    pipe = TPipe()
    a, b, c = (t.Get(half) for t in _buffers(pipe, (128, 128, 256)))
    x, y = GlobalTensor(half), GlobalTensor(half)
    x.SetGlobalBuffer(src)
    y.SetGlobalBuffer(dst)
    DataCopy(a, x, 64)
    DataCopy(b, x[64], 64)
    _sync(HardEvent.MTE2_V)
    Adds(c, a, 1.0, 128, 1, UnaryRepeatParams())        # reads a and b's bytes
    Adds(a, c, 10.0, 128, 1, UnaryRepeatParams())       # writes a and b's bytes
    _sync(HardEvent.V_MTE3)
    DataCopy(y, c, 128)
    DataCopy(y[128], b, 64)


def test_lanes_past_a_buffer_are_an_error_by_default():
    with pytest.raises(KernelError, match="past the end of its buffer"):
        run(past_end, [np.arange(128, dtype=np.float16)], 384, None)


def test_device_like_lanes_touch_the_next_ub_bytes():
    x = np.arange(128, dtype=np.float16)
    raw, prof = run(past_end, [x], 384, DEVICE)
    got = np.frombuffer(raw, np.float16)
    np.testing.assert_array_equal(got[:128], x + 1)              # b's elements were read
    np.testing.assert_array_equal(got[128:], x[64:] + 11)        # and b was overwritten
    assert len(prof.warnings) == 2 and all("next UB bytes" in w for w in prof.warnings)


def test_past_the_ub_stays_an_error_in_device_like_mode():
    def kernel(src, dst):
        pipe = TPipe()
        (a,) = (t.Get(float32) for t in _buffers(pipe, (256,)))
        Adds(a, a, 1.0, 64, 255, UnaryRepeatParams(1, 1, 255, 255))   # ~16 MiB of strides
    with pytest.raises(KernelError, match="past the end"):
        run(kernel, [np.zeros(8, np.float32)], 32, DEVICE)


# --- DataCopy of a length that is not whole 32 B blocks: rounded down, a warning ---------

def short_copy(src, dst):
    pipe = TPipe()
    (a,) = (t.Get(float32) for t in _buffers(pipe, (64,)))
    x, y = GlobalTensor(float32), GlobalTensor(float32)
    x.SetGlobalBuffer(src)
    y.SetGlobalBuffer(dst)
    DataCopy(a, x, 16)
    _sync(HardEvent.MTE2_V)
    _sync(HardEvent.MTE3_MTE2)
    _sync(HardEvent.V_MTE3)
    DataCopy(y, a, 9)                                   # 36 B: 32 B move


def test_short_datacopy_is_an_error_by_default_and_a_warning_device_like():
    x = np.arange(16, dtype=np.float32) + 1
    with pytest.raises(KernelError, match="32 B"):
        run(short_copy, [x], 64, None)
    raw, prof = run(short_copy, [x], 64, DEVICE)
    got = np.frombuffer(raw, np.float32)
    np.testing.assert_array_equal(got[:8], x[:8])
    assert not got[8:].any()                              # the 9th element was not moved
    assert len(prof.warnings) == 1 and "only 32 B are copied" in prof.warnings[0]


# --- the environment variable, and what does not change ------------------------------------

def test_the_environment_variable_sets_the_default(monkeypatch):
    monkeypatch.setenv(checker.DEVICE_LIKE_ENV, "1")
    assert CheckerConfig().device_like
    raw, prof = run(mask_kernel(FULL, FULL), [mask_input()], 256, None)
    assert "high word" in prof.warnings[0]
    assert not checker.DEFAULT.device_like                      # the default stays strict
    monkeypatch.setenv(checker.DEVICE_LIKE_ENV, "perhaps")
    with pytest.raises(ValueError, match="NPUSIM_CHECKER_DEVICE_LIKE"):
        CheckerConfig()
    monkeypatch.setenv(checker.DEVICE_LIKE_ENV, "0")
    with pytest.raises(KernelError, match="mask"):
        run(mask_kernel(FULL, FULL), [mask_input()], 256, None)


def test_undocumented_behaviour_stays_an_error():
    """A mask bit past a 64-bit type's 32 lanes has no documented effect: still refused."""
    from npusim.ascendc import int64

    def kernel(src, dst):
        pipe = TPipe()
        (a,) = (t.Get(int64) for t in _buffers(pipe, (256,)))
        Adds(a, a, 1, [FULL, 0], 1, UnaryRepeatParams())
    with pytest.raises(KernelError):
        run(kernel, [np.zeros(8, np.float32)], 32, DEVICE)


# --- a level-0 source overlapping its destination: run in the documented order ---------------
# 通用说明和约束.md: a repeat takes its data blocks out of UB, computes and writes its result
# blocks; repeat N+1 reads what repeat N wrote ("地址重叠约束" example). Overlap is not
# supported there, so by default it is a finding; device-like runs it in that order.

def overlap_kernel(repeat, lanes, stride):
    """T: 192 half from x. Adds(T[64:], T, 1) with ``repeat`` repeats of ``lanes`` lanes,
    ``stride`` blocks apart; then y = T."""
    def kernel(src, dst):
        pipe = TPipe()
        (t,) = (b.Get(half) for b in _buffers(pipe, (384,)))
        x, y = GlobalTensor(half), GlobalTensor(half)
        x.SetGlobalBuffer(src)
        y.SetGlobalBuffer(dst)
        DataCopy(t, x, 192)
        _sync(HardEvent.MTE2_V)
        Adds(t[64], t, 1.0, lanes, repeat, UnaryRepeatParams(1, 1, stride, stride))
        _sync(HardEvent.V_MTE3)
        DataCopy(y, t, 192)
    return kernel


def test_partial_overlap_is_an_error_by_default():
    with pytest.raises(KernelError, match="partly overlaps"):
        run(overlap_kernel(1, 128, 8), [np.arange(192, dtype=np.float16)], 384, None)


def test_device_like_partial_overlap_reads_before_it_writes():
    """One repeat of 128 lanes reads T[0:128] and writes T[64:192]: every lane gets the
    value read before the repeat's writes, so T[64:192] = x[0:128] + 1."""
    x = np.arange(192, dtype=np.float16)
    raw, prof = run(overlap_kernel(1, 128, 8), [x], 384, DEVICE)
    got = np.frombuffer(raw, np.float16)
    np.testing.assert_array_equal(got[:64], x[:64])
    np.testing.assert_array_equal(got[64:], x[:128] + 1)
    assert len(prof.warnings) == 1 and "partly overlaps" in prof.warnings[0]
    assert "device-like" in prof.warnings[0] and "may differ" in prof.warnings[0]


def test_device_like_later_repeat_reads_the_earlier_result():
    """Two repeats of 64 lanes, 4 blocks (64 half) apart: repeat 0 writes T[64:128] from
    T[0:64], repeat 1 reads it and writes T[128:192] = x[0:64] + 2."""
    x = np.arange(192, dtype=np.float16)
    with pytest.raises(KernelError, match="later repeat"):
        run(overlap_kernel(2, 64, 4), [x], 384, None)
    raw, prof = run(overlap_kernel(2, 64, 4), [x], 384, DEVICE)
    got = np.frombuffer(raw, np.float16)
    np.testing.assert_array_equal(got[64:128], x[:64] + 1)
    np.testing.assert_array_equal(got[128:], x[:64] + 2)
    assert len(prof.warnings) == 1 and "later repeat" in prof.warnings[0]


# --- reading UB bytes nothing wrote: AllocTensor "可能会是随机值" -----------------------------

def unwritten_read(src, dst):
    pipe = TPipe()
    a, b = (t.Get(float32) for t in _buffers(pipe, (256, 256)))
    y = GlobalTensor(float32)
    y.SetGlobalBuffer(dst)
    Adds(b, a, 1.0, 64, 1, UnaryRepeatParams())         # a was never written
    _sync(HardEvent.V_MTE3)
    DataCopy(y, b, 64)


def test_unwritten_ub_read_is_an_error_by_default_and_a_warning_device_like():
    with pytest.raises(checker.UninitialisedError, match="was not written"):
        run(unwritten_read, [np.zeros(8, np.float32)], 256, None)
    raw, prof = run(unwritten_read, [np.zeros(8, np.float32)], 256, DEVICE)
    assert np.isnan(np.frombuffer(raw, np.float32)).all()   # the poison bytes, plus 1
    assert len(prof.warnings) == 1 and "随机值" in prof.warnings[0]
