"""The Ascend C surface: UB limits, buffer and eventID limits, DataCopy rules, vector
numerics and dtype support (docs/reference/hardware.md §1.7, §2.1, §3)."""
import ml_dtypes
import numpy as np
import pytest

from npusim import (AlignmentError, DtypeError, GlobalMemory, GmAccessError, LimitError,
                    SyncError, UbError, get_soc, run_kernel)
from npusim.ascendc import *  # noqa: F403
from npusim.ascendc.checker import CheckerConfig
from npusim.ascendc.vector import cast_to

SOC = get_soc("Ascend910B1")


def run(kernel, *args, soc=SOC, gm=None, block_dim=1, reserve_ub=True, checks=None):
    gm = gm or GlobalMemory(soc.memory_size)
    return run_kernel(kernel, block_dim, args, soc=soc, gm=gm, reserve_ub=reserve_ub,
                      checks=checks)


def sync(event):
    """SetFlag + WaitFlag: the hand-off between two pipes a real kernel needs."""
    SetFlag(event, 0)
    WaitFlag(event, 0)


def test_init_buffer_fits_usable_ub_exactly():
    usable = SOC.ub_usable - SOC.ascendc_reserved_ub     # 196352 - 8192 = 188160

    def fits():
        pipe = TPipe()
        pipe.InitBuffer(TQue(TPosition.VECIN), 1, usable)

    def overflows():
        pipe = TPipe()
        pipe.InitBuffer(TQue(TPosition.VECIN), 1, usable - 100)   # rounded up to usable - 96
        pipe.InitBuffer(TBuf(), 128)

    run(fits)
    with pytest.raises(UbError, match="188160"):
        run(overflows)
    run(overflows, reserve_ub=False)      # 8 KiB more without the Ascend C reserve


def test_tque_buffers_per_position_limit():
    def nine_buffers():
        pipe = TPipe()
        for _ in range(9):
            pipe.InitBuffer(TQue(TPosition.VECIN), 1, 32)

    with pytest.raises(LimitError, match="8 per position"):
        run(nine_buffers)
    with pytest.raises(LimitError, match="4 per position"):
        run(lambda: [TPipe().InitBuffer(TQue(TPosition.VECOUT), 5, 32)], soc=get_soc("Ascend910A"))


def test_total_buffer_limit():
    def many():
        pipe = TPipe()
        for _ in range(65):
            pipe.InitBuffer(TBuf(), 32)

    with pytest.raises(LimitError, match="64"):
        run(many)


def test_event_id_range():
    run(lambda: (SetFlag(HardEvent.MTE2_V, 7), WaitFlag(HardEvent.MTE2_V, 7)))
    with pytest.raises(LimitError, match=r"\[0, 7\]"):
        run(lambda: SetFlag(HardEvent.MTE2_V, 8))
    with pytest.raises(LimitError, match=r"\[0, 3\]"):
        run(lambda: SetFlag(HardEvent.V_MTE3, 4), soc=get_soc("Ascend910A"))


def test_wait_without_set_is_unpaired_and_hangs():
    with pytest.raises(SyncError, match=r"MTE2_V\(0\) has no SetFlag"):
        run(lambda: WaitFlag(HardEvent.MTE2_V, 0))
    with pytest.raises(SyncError, match="hangs"):    # the timing replay would wait forever
        run(lambda: WaitFlag(HardEvent.MTE2_V, 0), checks=CheckerConfig(enabled=False))


def _copy_kernel(src, dst, count, out_warnings):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 1024)
    t = buf.Get(float32)
    g_in, g_out = GlobalTensor(float32), GlobalTensor(float32)
    g_in.SetGlobalBuffer(src, 256)
    g_out.SetGlobalBuffer(dst, 256)
    Duplicate(t, -1.0, 256)
    sync(HardEvent.V_MTE2)
    DataCopy(t, g_in, count)
    sync(HardEvent.MTE2_MTE3)
    DataCopy(g_out, t, 64)


def test_datacopy_rounds_partial_blocks_down():
    gm = GlobalMemory(1 << 20)
    src, dst = gm.malloc(1024), gm.malloc(1024)
    gm.write(src, np.arange(256, dtype=np.float32))
    with pytest.raises(AlignmentError, match="not a whole number of 32 B blocks"):
        run(_copy_kernel, src, dst, 13, None, gm=gm)
    prof = run(_copy_kernel, src, dst, 13, None, gm=gm,          # 52 B -> 32 B: 8 floats
               checks=CheckerConfig(warn={"Alignment"}))
    out = np.frombuffer(gm.read(dst, 256), np.float32)
    assert np.array_equal(out[:8], np.arange(8)) and np.all(out[8:64] == -1)
    assert any("32 B blocks" in w and "test_ascendc.py" in w for w in prof.warnings)


def test_datacopy_unaligned_ub_address():
    def k(src):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 256)
        g = GlobalTensor(float32)
        g.SetGlobalBuffer(src, 64)
        DataCopy(buf.Get(float32)[3], g, 8)

    gm = GlobalMemory(1 << 20)
    with pytest.raises(AlignmentError, match="32 B aligned"):
        run(k, gm.malloc(256), gm=gm)


def test_datacopy_params_strided_rows():
    def k(src, dst):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 1024)
        g_in, g_out = GlobalTensor(float32), GlobalTensor(float32)
        g_in.SetGlobalBuffer(src, 256)
        g_out.SetGlobalBuffer(dst, 256)
        t = buf.Get(float32)
        # 4 rows of 8 floats (1 block) taken every 3 blocks of GM, packed in UB
        DataCopy(t, g_in, DataCopyParams(blockCount=4, blockLen=1, srcStride=2, dstStride=0))
        sync(HardEvent.MTE2_MTE3)
        DataCopy(g_out, t, 32)

    gm = GlobalMemory(1 << 20)
    src, dst = gm.malloc(1024), gm.malloc(1024)
    gm.write(src, np.arange(256, dtype=np.float32))
    run(k, src, dst, gm=gm)
    out = np.frombuffer(gm.read(dst, 128), np.float32)
    expect = np.concatenate([np.arange(24 * r, 24 * r + 8) for r in range(4)])
    assert np.array_equal(out, expect)
    with pytest.raises(LimitError, match="blockCount"):
        def bad(src):
            pipe = TPipe()
            buf = TBuf()
            pipe.InitBuffer(buf, 64)
            g = GlobalTensor(float32)
            g.SetGlobalBuffer(src, 8)
            DataCopy(buf.Get(float32), g, DataCopyParams(4096, 1, 0, 0))
        run(bad, src, gm=gm)


def test_datacopypad_unaligned_rows_with_padding():
    def k(src, dst):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 1024)
        g_in, g_out = GlobalTensor(half), GlobalTensor(half)
        g_in.SetGlobalBuffer(src, 30)
        g_out.SetGlobalBuffer(dst, 18)
        t = buf.Get(half)
        # 3 rows of 5 halves (10 B), 1 element of left padding set to 9: each row -> 32 B
        DataCopyPad(t, g_in, DataCopyExtParams(3, 10, 0, 0, 0),
                    DataCopyPadExtParams(True, 1, 0, 9.0))
        sync(HardEvent.MTE2_MTE3)
        # write back each row's padding element and 5 data elements (12 B from a 32 B row)
        DataCopyPad(g_out, t, DataCopyExtParams(3, 12, 0, 0, 0))

    gm = GlobalMemory(1 << 20)
    src, dst = gm.malloc(64), gm.malloc(64)
    gm.write(src, np.arange(15, dtype=np.float16))
    gm.write(dst, np.full(20, -1, np.float16))
    run(k, src, dst, gm=gm)
    out = np.frombuffer(gm.read(dst, 40), np.float16)
    rows = np.concatenate([[9], np.arange(0, 5), [9], np.arange(5, 10), [9], np.arange(10, 15)])
    assert np.array_equal(out[:18], rows) and np.all(out[18:] == -1)


def test_gm_access_outside_the_allocation():
    def k(src):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 1024)
        g = GlobalTensor(float32)
        g.SetGlobalBuffer(src, 64)
        DataCopy(buf.Get(float32), g[48], 64)     # 64 floats from element 48: 112 past 160 B

    gm = GlobalMemory(1 << 20)
    src = gm.malloc(256)          # 288 B reserved
    with pytest.raises(GmAccessError, match="leaves the allocation"):
        run(k, src, gm=gm)


def test_bf16_arithmetic_rejected_but_cast_allowed():
    def k(use_add):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 1024)
        b = buf.Get(bfloat16_t, 64)
        f = buf.GetWithOffset(64, 256, float32)
        Duplicate(b, 1.5, 64)
        Cast(f, b, RoundMode.CAST_NONE, 64)
        if use_add:
            Add(b, b, b, 64)

    run(k, False)
    with pytest.raises(DtypeError, match="bfloat16 arithmetic is not supported"):
        run(k, True)


def test_vector_numerics_round_per_instruction():
    def k(out):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 4096)
        a = buf.Get(half, 128)
        b = buf.GetWithOffset(128, 256, half)
        Duplicate(a, 2049.0, 128)          # 2049 is not representable in fp16: -> 2048
        Duplicate(b, 1.0, 128)
        Add(a, a, b, 128)                  # 2048 + 1 = 2049 -> ties to even: 2048
        Adds(a, a, 3.0, 128)               # 2051 -> 2052 (spacing 2 above 2048)
        sync(HardEvent.V_MTE3)
        g = GlobalTensor(half)
        g.SetGlobalBuffer(out, 128)
        DataCopy(g, a, 128)

    gm = GlobalMemory(1 << 20)
    out = gm.malloc(256)
    run(k, out, gm=gm)
    assert np.all(np.frombuffer(gm.read(out, 256), np.float16) == 2052)


def test_cast_round_modes_hand_computed():
    x = np.array([1.00048828125, -1.00048828125, 2.5, -2.5, 1.0009765625 + 2**-12],
                 dtype=np.float32)
    # 1.00048828125 = 1 + 2^-11 is the midpoint of 1 and 1 + 2^-10 in fp16
    up = np.float16(1.0009765625)
    assert cast_to(x[:1], np.float16, RoundMode.CAST_RINT)[0] == np.float16(1.0)
    assert cast_to(x[:1], np.float16, RoundMode.CAST_ROUND)[0] == up
    assert cast_to(x[:1], np.float16, RoundMode.CAST_CEIL)[0] == up
    assert cast_to(x[:1], np.float16, RoundMode.CAST_FLOOR)[0] == np.float16(1.0)
    assert cast_to(x[1:2], np.float16, RoundMode.CAST_FLOOR)[0] == -up
    assert cast_to(x[1:2], np.float16, RoundMode.CAST_TRUNC)[0] == np.float16(-1.0)
    assert cast_to(x[:1], np.float16, RoundMode.CAST_ODD)[0] == up     # odd neighbour
    assert list(cast_to(x[2:4], np.int32, RoundMode.CAST_RINT)) == [2, -2]
    assert list(cast_to(x[2:4], np.int32, RoundMode.CAST_ROUND)) == [3, -3]
    assert list(cast_to(x[2:4], np.int32, RoundMode.CAST_FLOOR)) == [2, -3]
    bf = cast_to(np.array([1 + 2**-8], np.float32), ml_dtypes.bfloat16, RoundMode.CAST_CEIL)
    assert float(bf[0]) == 1 + 2**-7


def test_cast_none_half_to_int8_rounds_to_nearest_even():
    """Cast half -> int8/uint8 with CAST_NONE (dav_c220's vconv_f162s8 without a rounding
    suffix) is CAST_RINT, the conversion losing precision (RoundMode's definition):
    2.5 -> 2, 3.5 -> 4, -2.5 -> -2, 1.25 -> 1, saturating at the type's range."""
    from npusim.ascendc.vector import CAST_MODES
    x = np.array([2.5, 3.5, -2.5, 1.25, 300.0, -300.0], np.float16)
    assert RoundMode.CAST_NONE in CAST_MODES[(np.dtype(np.float16), np.dtype(np.int8))]
    assert list(cast_to(x, np.int8, RoundMode.CAST_NONE)) == [2, 4, -2, 1, 127, -128]
    assert list(cast_to(x[:4:3], np.uint8, RoundMode.CAST_NONE)) == [2, 1]


def test_scalar_get_set_value_and_block_index():
    def k(out):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 64)
        t = buf.Get(int32_t, 8)
        for i in range(8):
            t.SetValue(i, GetBlockIdx() * 10 + i)
        assert t.GetValue(3) == GetBlockIdx() * 10 + 3
        sync(HardEvent.S_MTE3)
        g = GlobalTensor(int32_t)
        g.SetGlobalBuffer(out + GetBlockIdx() * 32, 8)
        DataCopy(g, t, 8)

    gm = GlobalMemory(1 << 20)
    out = gm.malloc(4 * 32)
    prof = run(k, out, gm=gm, block_dim=4)
    res = np.frombuffer(gm.read(out, 128), np.int32).reshape(4, 8)
    assert np.array_equal(res, np.arange(8) + 10 * np.arange(4)[:, None])
    assert prof.pipe_time_us["aiv_scalar_time"] > 0


def test_block_dim_limits():
    with pytest.raises(LimitError, match="65535"):
        run(lambda: None, block_dim=65536)
    with pytest.raises(LimitError):
        run(lambda: None, block_dim=0)
