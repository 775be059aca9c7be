"""SyncAll and atomic add across blocks (docs/reference/hardware.md §3 "Cross-core
synchronisation", "Atomics")."""
import warnings

import numpy as np
import pytest

from npusim import GlobalMemory, KernelError, LimitError, SyncError, get_soc, run_kernel
from npusim.ascendc import (DataCopy, Duplicate, GetBlockIdx, GetBlockNum, GlobalTensor, HardEvent,
                            SetFlag, Sub, TBuf, TPipe, WaitFlag, float32)
from npusim.ascendc.atomic import DisableDmaAtomic, SetAtomicAdd
from npusim.ascendc.syncall import SyncAll

SOC = get_soc("Ascend910B1")


def two_phase_kernel(partials, out, skip_sync=False):
    """Phase 1: every block writes 8 floats of its index; phase 2: block 0 sums them."""
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 4096)
    t = buf.Get(float32)
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(partials, 8 * GetBlockNum())
    for i in range(8):
        t.SetValue(i, float(GetBlockIdx() + 1))
    SetFlag(HardEvent.S_MTE3, 0)
    WaitFlag(HardEvent.S_MTE3, 0)
    DataCopy(g[8 * GetBlockIdx()], t, 8)
    if not (skip_sync and GetBlockIdx() == 1):
        SyncAll()
    if GetBlockIdx() == 0:
        DataCopy(t, g, 8 * GetBlockNum())
        SetFlag(HardEvent.MTE2_S, 0)
        WaitFlag(HardEvent.MTE2_S, 0)
        total = sum(t.GetValue(8 * b) for b in range(GetBlockNum()))
        o = GlobalTensor(float32)
        o.SetGlobalBuffer(out, 8)
        t.SetValue(0, total)
        SetFlag(HardEvent.S_MTE3, 0)
        WaitFlag(HardEvent.S_MTE3, 0)
        DataCopy(o, t, 8)


def test_sync_all_makes_every_block_see_phase_one():
    gm = GlobalMemory(1 << 20)
    partials, out = gm.malloc(4 * 8 * 8), gm.malloc(32)
    prof = run_kernel(two_phase_kernel, 8, (partials, out), soc=SOC, gm=gm, sync_all=True,
                      keep_spans=True)
    assert np.frombuffer(gm.read(out, 4), np.float32)[0] == sum(range(1, 9))
    # timing: block 0's phase-2 read starts after every block's phase-1 write ended
    # blocks 1..7 write once each (PIPE_MTE3); block 0 reads the partials after SyncAll
    writes_end = max(e for b in range(1, 8) for p, st, e, lbl, _ in prof.timing.spans[b]
                     if p.name == "PIPE_MTE3")
    read2 = [s for p, s, e, lbl, _ in prof.timing.spans[0] if p.name == "PIPE_MTE2"]
    assert read2 and read2[0] >= writes_end


def test_sync_all_misuse():
    gm = GlobalMemory(1 << 20)
    partials, out = gm.malloc(4 * 8 * 64), gm.malloc(32)
    with pytest.raises(KernelError, match="sync_all=True"):
        run_kernel(two_phase_kernel, 2, (partials, out), soc=SOC, gm=gm)
    with pytest.raises(SyncError, match="never reaches"):
        run_kernel(two_phase_kernel, 4, (partials, out, True), soc=SOC, gm=gm, sync_all=True)
    with pytest.raises(LimitError, match="deadlock"):
        run_kernel(two_phase_kernel, 49, (partials, out), soc=SOC, gm=gm, sync_all=True)


def atomic_kernel(out):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 64)
    t = buf.Get(float32)
    for i in range(8):
        t.SetValue(i, float(i + GetBlockIdx()))
    SetFlag(HardEvent.S_MTE3, 0)
    WaitFlag(HardEvent.S_MTE3, 0)
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(out, 8)
    SetAtomicAdd(float32)
    DataCopy(g, t, 8)
    DisableDmaAtomic()


def test_atomic_add_accumulates_without_zeroing():
    gm = GlobalMemory(1 << 20)
    out = gm.malloc(32)
    gm.write(out, np.full(8, 100, np.float32))
    prof = run_kernel(atomic_kernel, 5, (out,), soc=SOC, gm=gm)
    expect = 100 + sum(np.arange(8) + b for b in range(5))
    assert np.array_equal(np.frombuffer(gm.read(out, 32), np.float32), expect)
    assert prof.bytes_written == 5 * 32


def inf_minus_inf_kernel(out):
    """Every block computes inf - inf on the vector unit between two SyncAlls."""
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 1024)
    a = buf.Get(float32)
    d = a[64]
    Duplicate(a, float("inf"), 64)
    SyncAll()
    Sub(d, a, a, 64)
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    o = GlobalTensor(float32)
    o.SetGlobalBuffer(out + 64 * 4 * GetBlockIdx(), 64)
    DataCopy(o, d, 64)


def test_sync_all_launches_give_ieee_results_without_numpy_warnings():
    # the cores of a SyncAll launch run as greenlets, each in a context of its own: the
    # launch's np.errstate(all="ignore") must hold inside them as in a plain launch
    gm = GlobalMemory(1 << 20)
    out = gm.malloc(64 * 4 * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_kernel(inf_minus_inf_kernel, 2, (out,), soc=SOC, gm=gm, sync_all=True)
    got = np.frombuffer(gm.read(out, 64 * 4 * 2), np.uint32)
    assert (got == 0x7FC00000).all()          # the canonical NaN (npusim.ascendc.nans)
