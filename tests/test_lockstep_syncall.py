"""SyncAll launches in lockstep (npusim.lockstep, ``run_blocks(..., sync_all=True)``): every
block in one group that meets each SyncAll together, with the GM bytes, records, profile,
timing and checker findings of the per-core coroutines; blocks that diverge, or touch bytes
another block writes within a phase, run per core."""
import numpy as np
import pytest

import npusim.launch as NL
from npusim import GlobalMemory, KernelError, run_kernel
from npusim.ascendc import (Add, DataCopy, Duplicate, GetBlockIdx, GetBlockNum, GlobalTensor,
                            HardEvent, SetFlag, TBuf, TPipe, WaitFlag, float32)
from npusim.ascendc.checker import CheckerConfig
from npusim.ascendc.syncall import SyncAll

from test_lockstep import SOC, differential, fresh_cache  # noqa: F401 - fresh_cache: autouse

N = 64          # floats per block's slot


def exchange_kernel(x, part, out, mode="ring"):
    """Phase 0: block b writes 2 * x[b] into its slot of ``part``. Phase 1: it reads its
    right neighbour's slot (written by another block before the barrier) and stores
    slot + x[b] into ``out``; "overwrite" then also stores into the neighbour's slot of
    ``part`` (bytes another block wrote in phase 0: ordered by the barrier); "race" has
    every block write slot 0 in phase 0 (a conflict within the phase); "branch" lets block 0
    skip one vector instruction (the blocks diverge)."""
    b, nb = GetBlockIdx(), GetBlockNum()
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 3 * N * 4)
    t = buf.Get(float32)
    xt, yt, zt = t, t[N], t[2 * N]
    xg, pg, og = GlobalTensor(float32), GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x, N * nb)
    pg.SetGlobalBuffer(part, N * nb)
    og.SetGlobalBuffer(out, N * nb)
    right = (b + 1) % nb
    DataCopy(xt, xg[N * b], N)
    SetFlag(HardEvent.MTE2_V, 0)
    WaitFlag(HardEvent.MTE2_V, 0)
    Add(yt, xt, xt, N)
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(pg[0 if mode == "race" else N * b], yt, N)
    SyncAll()
    DataCopy(zt, pg[N * right], N)
    SetFlag(HardEvent.MTE2_V, 1)
    WaitFlag(HardEvent.MTE2_V, 1)
    if not (mode == "branch" and b == 0):
        Add(zt, zt, xt, N)
    SetFlag(HardEvent.V_MTE3, 1)
    WaitFlag(HardEvent.V_MTE3, 1)
    DataCopy(og[N * b], zt, N)
    if mode == "overwrite":
        SyncAll()
        Duplicate(yt, -1.0, N)
        SetFlag(HardEvent.V_MTE3, 2)
        WaitFlag(HardEvent.V_MTE3, 2)
        DataCopy(pg[N * right], yt, N)


def _launch(mode, blocks, checks=None, keep_spans=True):
    gm = GlobalMemory(1 << 22)
    x = np.arange(blocks * N, dtype=np.float32)
    xa, pa, oa = gm.malloc(x.nbytes), gm.malloc(x.nbytes), gm.malloc(x.nbytes)
    gm.write(xa, x)
    prof = run_kernel(exchange_kernel, blocks, (xa, pa, oa, mode), soc=SOC, gm=gm,
                      sync_all=True, checks=checks, keep_spans=keep_spans)
    out = np.frombuffer(gm.read(oa, x.nbytes), np.float32)
    return prof, x, out


@pytest.fixture
def coroutine_runs(monkeypatch):
    """How many launches ran their cores as coroutines (the per-core SyncAll path)."""
    runs = []
    orig = NL._run_coroutines

    def counted(*a, **k):
        runs.append(1)
        return orig(*a, **k)

    monkeypatch.setattr(NL, "_run_coroutines", counted)
    return runs


@pytest.mark.parametrize("mode", ["ring", "overwrite"])
def test_sync_all_blocks_run_as_one_group_and_agree_with_per_core(mode, coroutine_runs):
    blocks = 8
    with differential() as stats:        # per core, then lockstep: bytes, records, timing
        prof, x, out = _launch(mode, blocks)
    # the per-core run is the only one that ran coroutines; the lockstep run was one group
    assert len(coroutine_runs) == 1
    assert stats.grouped == 1 and stats.completed == 1
    want = 2 * np.roll(x.reshape(blocks, N), -1, axis=0) + x.reshape(blocks, N)
    np.testing.assert_array_equal(out, want.ravel())
    assert prof.warnings == []


@pytest.mark.parametrize("warn", [False, True])
def test_a_race_within_a_phase_is_found_as_per_core(warn, coroutine_runs):
    checks = CheckerConfig(cross_block="warn") if warn else None
    with differential() as stats:
        try:
            prof, _, _ = _launch("race", 4, checks=checks)
        except KernelError as e:
            err, prof = e, None
        else:
            err = None
    assert stats.completed == 1              # the group ran, its log showed the conflict...
    assert len(coroutine_runs) == 2          # ...and the launch ran again per core
    if warn:
        assert err is None and any("core" in w for w in prof.warnings)
    else:
        assert err is not None


def test_diverging_blocks_fall_back_to_per_core(coroutine_runs):
    with differential() as stats:
        prof, x, out = _launch("branch", 4)
    assert stats.grouped == 1 and stats.completed == 0
    assert len(coroutine_runs) == 2          # both runs per core
    assert prof.warnings == []


@pytest.mark.parametrize("module,func,params", [
    ("test_embedding_dense_backward_kernel", "test_v2_fp32_keys_match_golden_row_by_row",
     {"key_args": dict(scale=False, det=False, small=True), "kind": "boundary"}),
    ("test_cross_core", "test_sync_all_makes_every_block_see_phase_one", {}),
    ("test_checker", "test_writes_ordered_by_sync_all_may_overlap", {}),
])
def test_operator_sync_all_kernels_agree_both_ways(module, func, params):
    # the EmbeddingDenseGradV2 kernel's small-dim SyncAll path and the
    # SyncAll tests' kernels: per core, then lockstep, identical in everything observable
    fn = getattr(__import__(module), func)
    with differential() as stats:
        fn(**params)
    assert stats.launches > 0
