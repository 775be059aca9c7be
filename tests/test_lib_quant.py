"""AscendQuant (npusim.ascendc.lib.quantization) against the formula of its API page:
int8 = round_half_even(half(half(x) * half(scale)) + half(offset)), saturated, computed
here in float64 with one rounding to half per step; the temporary-size getter; errors."""
import numpy as np
import pytest

from npusim import DtypeError, GlobalMemory, UbError, get_soc, run_kernel
from npusim.ascendc import (AscendQuant, AscendQuantConfig, DataCopy, GetAscendQuantMaxMinTmpSize,
                            GlobalTensor, HardEvent, SetFlag, TBuf, TPipe, WaitFlag, int8_t,
                            uint8_t)

SOC = get_soc("Ascend910B1")


def golden(x, scale, offset):
    """The page's steps in float64, each rounded to half; int8 with ties to even."""
    h = np.float16
    t = (x.astype(h).astype(np.float64) * float(h(scale))).astype(h)
    t = (t.astype(np.float64) + float(h(offset))).astype(h)
    return np.clip(np.rint(t.astype(np.float64)), -128, 127).astype(np.int8)


def quant(x, scale, offset, *, count=None, tmp_bytes=512, dst_dtype=int8_t, config=None):
    n = len(x)
    gm = GlobalMemory(1 << 22)
    src, dst = gm.malloc(n * x.dtype.itemsize), gm.malloc(n)
    gm.write(src, x)
    gm.write(dst, np.full(n, 99, np.int8))

    def kernel():
        pipe = TPipe()
        bx, by, bt = TBuf(), TBuf(), TBuf()
        pipe.InitBuffer(bx, n * x.dtype.itemsize)
        pipe.InitBuffer(by, n * np.dtype(dst_dtype).itemsize)
        args = []
        if tmp_bytes:
            pipe.InitBuffer(bt, tmp_bytes)
            args.append(bt.Get(uint8_t, tmp_bytes))
        xl, yl = bx.Get(x.dtype), by.Get(dst_dtype)
        gi, go = GlobalTensor(x.dtype), GlobalTensor(int8_t)
        gi.SetGlobalBuffer(src, n)
        go.SetGlobalBuffer(dst, n)
        DataCopy(xl, gi, n)
        DataCopy(yl, go, n * np.dtype(dst_dtype).itemsize)     # keep the 99s past calCount
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        extra = {} if config is None else {"config": config}
        AscendQuant(yl, xl, *args, scale, offset, *([] if count is None else [count]), **extra)
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        DataCopy(go, yl, n)

    run_kernel(kernel, 1, (), soc=SOC, gm=gm)
    return np.frombuffer(gm.read(dst, n), np.int8).copy()


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_matches_the_formula_over_several_chunks(dtype):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(1024) * 40).astype(dtype)         # saturates at both ends
    got = quant(x, 2.0, 0.9)                                  # 512 B tmp: chunks of 256
    np.testing.assert_array_equal(got, golden(x, 2.0, 0.9))
    assert got.min() == -128 and got.max() == 127


def test_ties_go_to_even_and_float_input_goes_through_half():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.5009765625, 3.0, 0.0] * 4, np.float32)
    got = quant(x, 1.0, 0.0, tmp_bytes=0)                     # the 8 KiB UB reserve
    assert list(got[:8]) == [0, 2, 2, 0, -2, 2, 3, 0]          # 2.5009765625 -> half 2.5 -> 2


def test_calcount_and_config():
    x = np.linspace(-3, 3, 64).astype(np.float16)
    got = quant(x, 3.0, -0.25, count=32, config=AscendQuantConfig(32, 0, 0, 512))
    np.testing.assert_array_equal(got[:32], golden(x[:32], 3.0, -0.25))
    assert (got[32:] == 99).all()                             # past calCount: untouched


def test_tmp_size_getter():
    assert GetAscendQuantMaxMinTmpSize([32], 4) == (512, 512)
    assert GetAscendQuantMaxMinTmpSize([1000], 2) == (2016, 512)


def test_errors():
    x = np.zeros(64, np.float16)
    with pytest.raises(UbError, match="less than the minimum 512 B"):
        quant(x, 1.0, 0.0, tmp_bytes=256)
    with pytest.raises(UbError, match="calCount 65"):
        quant(x, 1.0, 0.0, count=65)
    with pytest.raises(DtypeError, match="dstTensor must be int8_t"):
        quant(x, 1.0, 0.0, dst_dtype=uint8_t)
    with pytest.raises(DtypeError, match="half or float"):
        quant(np.zeros(64, np.int32), 1.0, 0.0)
