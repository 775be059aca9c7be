"""Tiling of ApplyFusedEmaAdam against docs/reference/operators.md §1 "Tiling"."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim.kernels.apply_fused_ema_adam.tiling import core_calc_max, tiling
from npusim import get_soc

SOC = get_soc("Ascend910B1")
UT_UB = 196608   # the UB size of the operator's unit test (operators.md §1 worked numbers)


@pytest.mark.parametrize("dtype,mode,expected", [
    (np.float32, 0, 5456), (np.float32, 1, 6136),
    (np.float16, 0, 3632), (np.float16, 1, 4080),
    (ml_dtypes.bfloat16, 0, 3632), (ml_dtypes.bfloat16, 1, 4080),
])
def test_core_calc_max_table(dtype, mode, expected):
    assert tiling(SOC, 10**6, np.dtype(dtype), mode=mode, ub_size=UT_UB).coreCalcMax == expected


@pytest.mark.parametrize("dtype,mode,expected", [
    # GetCoreMemSize(UB) on 910B1 = 196608 - 256 = 196352 (hardware.md §1.7):
    # (196352 - 64) // 36 = 5452 -> 5448; // 32 = 6134 -> 6128; // 54 = 3635 -> 3632; // 48 = 4089 -> 4080
    (np.float32, 0, 5448), (np.float32, 1, 6128), (np.float16, 0, 3632), (np.float16, 1, 4080),
])
def test_core_calc_max_with_reported_ub(dtype, mode, expected):
    assert core_calc_max(SOC.ub_usable, np.dtype(dtype), mode) == expected


@pytest.mark.parametrize("total,dtype,mode,row", [
    (2400, np.float32, 0, (48, 48, 0, 50, 1, 50, 49)),
    (268800, np.float16, 1, (48, 48, 0, 5600, 2, 1520, 1519)),
    (100, np.float32, 1, (48, 4, 44, 3, 1, 3, 2)),
])
def test_worked_splits(total, dtype, mode, row):
    t = tiling(SOC, total, np.dtype(dtype), mode=mode, ub_size=UT_UB)
    assert (t.blockDim, t.frontCoreNum, t.tailCoreNum, t.coreCalcNum, t.loopNum,
            t.frontCalcExtra, t.tailCalcExtra) == row


def test_attributes_are_float32_and_workspace_is_system_workspace():
    t = tiling(SOC, 10, np.float32, lr=0.1)
    assert t.lr.dtype == np.float32 and t.lr == np.float32(0.1)
    assert t.workspaceSize == 16 * 1024 * 1024
    assert t.tilingKey == 102
    assert tiling(get_soc("Ascend910B4"), 1000, np.float32).blockDim == 40


def test_empty_tensor_launches_nothing():
    assert tiling(SOC, 0, np.float32).blockDim == 0


def _core_elements(t):
    """Elements and start offset per block, the way the kernel's Init derives them."""
    out = []
    for b in range(t.blockDim):
        if b < t.frontCoreNum:
            n, off = t.coreCalcNum, t.coreCalcNum * b
            last = t.frontCalcExtra
        else:
            n = t.coreCalcNum - 1
            off = t.coreCalcNum * t.frontCoreNum + (b - t.frontCoreNum) * n
            last = t.tailCalcExtra
        tiles = (t.loopNum - 1) * t.coreCalcMax + last
        out.append((off, n, tiles))
    return out


@settings(max_examples=200, deadline=None)
@given(total=st.integers(1, 5_000_000), cores=st.sampled_from([1, 7, 40, 48]),
       dtype=st.sampled_from([np.float32, np.float16]), mode=st.sampled_from([0, 1]))
def test_split_covers_every_element_once(total, cores, dtype, mode):
    t = tiling(SOC, total, np.dtype(dtype), mode=mode, core_num=cores)
    assert t.blockDim == min(total, cores)
    parts = _core_elements(t)
    expect_off = 0
    for off, n, tiles in parts:
        assert off == expect_off and tiles == n
        assert 0 <= t.frontCalcExtra <= t.coreCalcMax
        expect_off += n
    assert expect_off == total
