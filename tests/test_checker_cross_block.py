"""CheckerConfig(cross_block="warn") / NPUSIM_CHECKER_CROSS_BLOCK: blocks that tile past
their share of GM (a whole 64-element tile over 40-element blocks) are errors by default
and warnings in that mode, with the same bytes computed; nothing else changes."""
import numpy as np
import pytest

from npusim import GlobalMemory, KernelError, get_soc, run_kernel
from npusim.ascendc import (DataCopy, GetBlockIdx, GlobalTensor, HardEvent, Muls, SetFlag, TBuf,
                            TPipe, WaitFlag, float32)
from npusim.ascendc import checker
from npusim.ascendc.checker import CheckerConfig

SOC = get_soc("Ascend910B1")
SHARE, TILE, BLOCKS = 40, 64, 4          # 4 blocks of 40 elements, each copying 64


def doubling(src, dst):
    """y = 2 x over this block's share, in whole 64-element tiles (past the share)."""
    off = GetBlockIdx() * SHARE
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, TILE * 4)
    t = buf.Get(float32)
    x, y = GlobalTensor(float32), GlobalTensor(float32)
    x.SetGlobalBuffer(src + off * 4)
    y.SetGlobalBuffer(dst + off * 4)
    DataCopy(t, x, TILE)
    SetFlag(HardEvent.MTE2_V, 0)
    WaitFlag(HardEvent.MTE2_V, 0)
    Muls(t, t, 2.0, TILE)
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(y, t, TILE)


def launch(one_allocation: bool, checks=None):
    """x then y; in one allocation (a caching allocator's segment: the last block's read past
    x reaches y, which block 0 writes) or in two."""
    gm = GlobalMemory(1 << 22)
    n = SHARE * BLOCKS
    x = np.arange(n, dtype=np.float32) + 1
    if one_allocation:
        base = gm.malloc(4096)
        src, dst = base, base + n * 4
    else:
        src, dst = gm.malloc(4096), gm.malloc(4096)
    gm.write(src, x)
    prof = run_kernel(doubling, BLOCKS, (src, dst), soc=SOC, gm=gm, checks=checks)
    return np.frombuffer(gm.read(dst, n * 4), np.float32), x, prof


@pytest.mark.parametrize("one_allocation,category,text", [
    (False, "GM", "blocks 0 and 1 both write GM"),
    (True, "Sync", "core 3 reads GM"),
])
def test_overlapping_blocks_are_errors_by_default(one_allocation, category, text):
    with pytest.raises(KernelError, match=text) as info:
        launch(one_allocation)
    assert info.value.category == category


@pytest.mark.parametrize("one_allocation,text", [
    (False, "blocks 0 and 1 both write GM"), (True, "core 3 reads GM")])
def test_warn_mode_keeps_them_as_warnings_and_computes_the_same_bytes(one_allocation, text):
    y, x, prof = launch(one_allocation, CheckerConfig(cross_block="warn"))
    np.testing.assert_array_equal(y, 2 * x)
    assert len(prof.warnings) == 1 and text in prof.warnings[0]


def test_the_environment_variable_sets_the_default(monkeypatch):
    monkeypatch.setenv(checker.CROSS_BLOCK_ENV, "warn")
    assert CheckerConfig().cross_block == "warn"
    y, x, prof = launch(False)                                  # checks=None: the variable
    np.testing.assert_array_equal(y, 2 * x)
    assert "both write GM" in prof.warnings[0]
    assert checker.DEFAULT.cross_block == "error"               # the default stays strict
    monkeypatch.setenv(checker.CROSS_BLOCK_ENV, "maybe")
    with pytest.raises(ValueError, match="NPUSIM_CHECKER_CROSS_BLOCK"):
        CheckerConfig()
    monkeypatch.delenv(checker.CROSS_BLOCK_ENV)
    with pytest.raises(KernelError, match="both write GM"):
        launch(False)
    with pytest.raises(ValueError, match="cross_block"):
        CheckerConfig(cross_block="off")


def test_warn_mode_leaves_other_findings_errors():
    def past_the_allocation(src, dst):
        x = GlobalTensor(float32)
        x.SetGlobalBuffer(src, 16)
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 4096 + 256)
        DataCopy(buf.Get(float32), x, 1024 + 64)                # 256 B past the 4096 B

    gm = GlobalMemory(1 << 22)
    src, dst = gm.malloc(4096), gm.malloc(4096)
    with pytest.raises(KernelError, match="leaves the allocation"):
        run_kernel(past_the_allocation, 1, (src, dst), soc=SOC, gm=gm,
                   checks=CheckerConfig(cross_block="warn"))
