"""The kernel checker: one deliberately faulty kernel per category, each caught with the
right category, pipe and kernel line; warnings instead of errors when configured; every
operator kernel runs clean with every block tracked."""
import inspect

import numpy as np
import pytest

from npusim import GlobalMemory, KernelError, get_soc, run_kernel
from npusim.ascendc import (Add, DataCopy, Duplicate, GetBlockIdx, GlobalTensor, HardEvent, Muls,
                            SetFlag, TBuf, TPipe, TPosition, TQue, WaitFlag, float32)
from npusim.ascendc.checker import CheckerConfig

SOC = get_soc("Ascend910B1")


def line_of(func, marker="# <- finding"):
    """``file:line`` of the source line of ``func`` that carries ``marker``."""
    src, start = inspect.getsourcelines(func)
    for i, text in enumerate(src):
        if marker in text:
            return f"test_checker.py:{start + i}"
    raise AssertionError("marker not found")


def launch(kernel, *args, block_dim=1, checks=None):
    gm = GlobalMemory(1 << 24)
    ptrs = [gm.malloc(4096) for _ in range(2)]
    for p in ptrs:
        gm.write(p, np.arange(1024, dtype=np.float32))
    return run_kernel(kernel, block_dim, (*ptrs, *args), soc=SOC, gm=gm, checks=checks)


def caught(kernel, category, *args, block_dim=1):
    with pytest.raises(KernelError) as info:
        launch(kernel, *args, block_dim=block_dim)
    exc = info.value
    assert exc.category == category, str(exc)
    assert exc.line == line_of(kernel), str(exc)
    return exc


def gm(addr):
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(addr, 1024)
    return g


# -- one faulty kernel per category ---------------------------------------------------------
def ub_overflow(x, y):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 64)
    DataCopy(buf.Get(float32), gm(x), 64)                       # <- finding


def misaligned_vector(x, y):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 1024)
    t = buf.Get(float32)
    Duplicate(t, 1.0, 64)
    Muls(t[3], t[3], 2.0, 8)                                     # <- finding


def two_cores_one_output(x, y):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 1024)
    t = buf.Get(float32)
    Duplicate(t, float(GetBlockIdx()), 64)
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(gm(y)[GetBlockIdx() * 56], t, 64)                   # blocks overlap by 8 floats


def uninitialised(x, y):
    pipe = TPipe()
    q = TQue(TPosition.VECIN)
    pipe.InitBuffer(q, 1, 256)
    t = q.AllocTensor(float32)
    Muls(t, t, 2.0, 64)                                          # <- finding
    q.FreeTensor(t)


def v_reads_before_mte2(x, y):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 1024)
    t = buf.Get(float32)
    DataCopy(t, gm(x), 64)
    Muls(t, t, 2.0, 64)                                          # <- finding


def mte3_before_v(x, y):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 1024)
    t = buf.Get(float32)
    DataCopy(t, gm(x), 64)
    SetFlag(HardEvent.MTE2_V, 0)
    WaitFlag(HardEvent.MTE2_V, 0)
    Muls(t, t, 2.0, 64)
    DataCopy(gm(y), t, 64)                                       # <- finding


def mte2_overwrites_v_source(x, y, ordered=False):
    """MTE2 reloads a buffer the vector unit reads; ``ordered`` adds the V -> MTE2 flag."""
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 1024)
    t = buf.Get(float32)
    DataCopy(t, gm(x), 64)
    SetFlag(HardEvent.MTE2_V, 0)
    WaitFlag(HardEvent.MTE2_V, 0)
    Muls(t[64], t, 2.0, 64)
    if ordered:
        SetFlag(HardEvent.V_MTE2, 0)
        WaitFlag(HardEvent.V_MTE2, 0)
    DataCopy(t, gm(y), 64)                                       # <- finding


def double_set(x, y):
    SetFlag(HardEvent.MTE2_V, 1)
    SetFlag(HardEvent.MTE2_V, 1)                                 # <- finding
    WaitFlag(HardEvent.MTE2_V, 1)
    WaitFlag(HardEvent.MTE2_V, 1)


def unpaired(x, y):
    SetFlag(HardEvent.V_MTE3, 2)                                 # <- finding


def event_id_out_of_range(x, y):
    SetFlag(HardEvent.MTE2_V, 9)                                 # <- finding


def leak(x, y):
    pipe = TPipe()
    q = TQue(TPosition.VECOUT)
    pipe.InitBuffer(q, 2, 256)
    t = q.AllocTensor(float32)                                   # <- finding
    Duplicate(t, 0.0, 64)


@pytest.mark.parametrize("kernel,category", [
    (ub_overflow, "UB"), (misaligned_vector, "Alignment"), (uninitialised, "Uninitialised"),
    (v_reads_before_mte2, "Sync"), (mte3_before_v, "Sync"),
    (mte2_overwrites_v_source, "Sync"), (double_set, "Sync"),
    (unpaired, "Sync"), (event_id_out_of_range, "Limit"), (leak, "Leak"),
])
def test_each_category_is_caught_at_its_line(kernel, category):
    exc = caught(kernel, category)
    assert exc.core == 0


def test_race_messages_name_both_pipes():
    assert "PIPE_V reads" in str(caught(v_reads_before_mte2, "Sync"))
    assert "that PIPE_MTE2 wrote" in str(caught(v_reads_before_mte2, "Sync"))
    assert "PIPE_MTE3 reads" in str(caught(mte3_before_v, "Sync"))
    assert "PIPE_MTE2 overwrites UB [0, 256) that PIPE_V may still be reading" in str(
        caught(mte2_overwrites_v_source, "Sync"))


def test_a_flag_from_the_reader_orders_the_overwrite():
    assert launch(mte2_overwrites_v_source, True).warnings == []


def test_several_cores_writing_the_same_gm_bytes():
    with pytest.raises(KernelError, match="blocks 0 and 1 both write GM") as info:
        launch(two_cores_one_output, block_dim=2)
    assert info.value.category == "GM"
    launch(two_cores_one_output, block_dim=1)          # one core alone is fine


def test_categories_can_be_warnings_or_off():
    prof = launch(uninitialised, checks=CheckerConfig(warn={"Uninitialised"}))
    assert len(prof.warnings) == 1 and "[Uninitialised]" in prof.warnings[0]
    prof = launch(leak, checks=CheckerConfig(warn={"Leak"}))
    assert "[Leak]" in prof.warnings[0] and line_of(leak) in prof.warnings[0]
    assert launch(v_reads_before_mte2, checks=CheckerConfig(enabled=False)).warnings == []
    with pytest.raises(ValueError, match="unknown checker categories"):
        CheckerConfig(warn={"Typo"})


def test_memory_safety_is_never_a_warning():
    everything = CheckerConfig(warn=set(("UB", "Alignment", "GM", "Uninitialised", "Sync",
                                         "Leak")))
    with pytest.raises(KernelError):
        launch(ub_overflow, checks=everything)
    with pytest.raises(KernelError):
        launch(misaligned_vector, checks=everything)


def test_by_default_the_middle_blocks_are_not_tracked():
    def racy_in_block_1(x, y):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 1024)
        t = buf.Get(float32)
        DataCopy(t, gm(x), 64)
        if GetBlockIdx() == 1:
            Muls(t, t, 2.0, 64)
        else:
            SetFlag(HardEvent.MTE2_V, 0)
            WaitFlag(HardEvent.MTE2_V, 0)
            Add(t, t, t, 64)

    launch(racy_in_block_1, block_dim=3)
    with pytest.raises(KernelError, match="PIPE_V reads"):
        launch(racy_in_block_1, block_dim=3, checks=CheckerConfig(all_blocks=True))


# -- every operator runs clean ----------------------------------------------------------------
def test_apply_fused_ema_adam_runs_clean_on_every_block():
    from npusim.kernels.apply_fused_ema_adam.kernel import apply_fused_ema_adam
    from npusim.kernels.apply_fused_ema_adam.tiling import tiling
    for dtype, mode, n in ((np.float32, 0, 6128 * 3 + 5), (np.float16, 1, 999)):
        mem = GlobalMemory(1 << 26)
        addrs = [mem.malloc(n * 4) for _ in range(5)]
        for a in addrs:
            mem.write(a, np.ones(n, dtype))
        step = mem.malloc(8)
        mem.write(step, np.array([3], np.int64))
        td = tiling(SOC, n, np.dtype(dtype), mode=mode)
        prof = run_kernel(apply_fused_ema_adam, td.blockDim,
                          (*addrs, step, 0, td, np.dtype(dtype)), soc=SOC, gm=mem,
                          reserve_ub=False, checks=CheckerConfig(all_blocks=True))
        assert prof.warnings == []


def test_writes_ordered_by_sync_all_may_overlap():
    from npusim.ascendc import SyncAll

    def phased(x, y):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 1024)
        t = buf.Get(float32)
        Duplicate(t, float(GetBlockIdx()), 64)
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        if GetBlockIdx() == 0:
            DataCopy(gm(y), t, 64)          # phase 0: block 0 writes
        SyncAll()
        if GetBlockIdx() == 1:
            DataCopy(gm(y), t, 64)          # phase 1: block 1 overwrites, in order

    mem = GlobalMemory(1 << 24)
    x, y = mem.malloc(4096), mem.malloc(4096)
    run_kernel(phased, 2, (x, y), soc=SOC, gm=mem, sync_all=True)
    assert np.all(np.frombuffer(mem.read(y, 256), np.float32) == 1.0)


def test_fetched_event_ids_stay_in_range_on_910a():
    ids = []

    def k():
        pipe = TPipe()
        for _ in range(6):
            ids.append(pipe.FetchEventID(HardEvent.MTE2_V))

    run_kernel(k, 1, (), soc=get_soc("Ascend910A"), gm=GlobalMemory(1 << 20))
    assert ids == [0, 1, 2, 3, 0, 1]
