"""Mixed launches in lockstep groups (npusim.mixgroups) give what per-core execution gives:
the same output bytes, records, Task Duration, per-pipe and per-core times, trace lines and
checker findings, for kernels with CrossCoreSetFlag/CrossCoreWaitFlag pipelines, the Matmul
API's MIX form, SyncAll across both kinds, a block that diverges, cores of different blocks
sharing GM (which must run per core) and a race the checker must still report. The
reference is the same launch with ``lockstep=False`` (every core its own coroutine)."""
import contextlib
import io
import sys
from pathlib import Path

import numpy as np
import pytest

from npusim import SyncError, run_kernel
from npusim.ascendc import *  # noqa: F403
from npusim.ascendc.checker import CheckerConfig

from test_mix_launch import (FLAG, SOC, MatmulLeakyRelu, _core_kernel, l1_copy, launch,
                             run_leaky, ub_copy)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import matmul_leakyrelu_mix as mix_example  # noqa: E402


def grouped(prof) -> list:
    """Per core: whether it ran as a member of a lockstep group (its records are a group's)."""
    return [hasattr(r, "template") for r in prof.records]


def assert_same(ref, got, ref_out, got_out):
    """``got`` (lockstep) is ``ref`` (per core): bytes, records, timing, trace, warnings."""
    for name in ref_out:
        assert np.array_equal(np.asarray(ref_out[name]).view(np.uint8),
                              np.asarray(got_out[name]).view(np.uint8)), name
    assert got.duration_us == ref.duration_us
    assert got.pipe_time_us == ref.pipe_time_us
    assert got.core_pipe_time_us.keys() == ref.core_pipe_time_us.keys()
    for p, v in ref.core_pipe_time_us.items():
        np.testing.assert_array_equal(got.core_pipe_time_us[p], v)
    assert (got.core_kinds, got.core_ids) == (ref.core_kinds, ref.core_ids)
    assert (got.bytes_read, got.bytes_written) == (ref.bytes_read, ref.bytes_written)
    assert got.warnings == ref.warnings
    assert [list(r) for r in got.records] == [list(r) for r in ref.records]
    assert got.lines == ref.lines
    assert got.timing.spans == ref.timing.spans


def both(run):
    """``run(lockstep)`` -> (outputs, profile) per core and in lockstep; asserts they agree
    and returns the lockstep profile."""
    ref_out, ref = run(False)
    got_out, got = run(True)
    assert_same(ref, got, ref_out, got_out)
    return got


def test_flag_pipeline_of_static_tensor_cube_and_vector_cores_runs_grouped():
    """The basic-API cube kernel (static L1/L0 tensors, SetFlag/WaitFlag) on each AIC, a mode-2
    flag to its AIVs, LeakyRelu on them: 6 blocks, the middle four in groups."""
    def run(lockstep):
        got, want, _, prof = run_leaky(6, 32, 32, 16, 0.25, seed=3, keep_spans=True,
                                       lockstep=lockstep)
        np.testing.assert_array_equal(got, want)
        return {"out": got}, prof
    prof = both(run)
    blocks = [1, 2, 3, 4]           # not the tracked first and last
    assert grouped(prof) == [g in blocks for g in range(6)] + [i // 2 in blocks
                                                                for i in range(12)]


def _example(blocks, lockstep, functional=True):
    def rk(*a, **k):
        return run_kernel(*a, **{**k, "lockstep": lockstep, "keep_spans": True,
                                 "functional": functional})
    old, mix_example.run_kernel = mix_example.run_kernel, rk
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            c, err, prof = mix_example.main(M=64 * blocks, N=256, K=64, blocks=blocks)
    finally:
        mix_example.run_kernel = old
    assert err < 1e-3 or not functional
    return ({"c": c} if functional else {}), prof


def test_matmul_api_mix_form_runs_its_kfc_servers_grouped():
    """examples/matmul_leakyrelu_mix.py (REGIST_MATMUL_OBJ: the AIC serves its two AIVs'
    Iterate / GetTensorC calls) on 5 blocks, and a second launch from the kept partition."""
    prof = both(lambda lockstep: _example(5, lockstep))
    assert grouped(prof) == [0 < g < 4 for g in range(5)] + [0 < i // 2 < 4 for i in range(10)]
    both(lambda lockstep: _example(5, lockstep))


def test_timing_only_mix_launch_in_groups():
    """functional=False: the same records, timing and findings per core and in groups."""
    prof = both(lambda lockstep: _example(5, lockstep, functional=False))
    assert sum(grouped(prof)) == 9


def test_a_block_that_diverges_runs_alone_and_the_others_stay_grouped():
    """Block 2's AIVs take another branch (one more instruction): its cores split off."""
    x = np.arange(6 * 2 * 8, dtype=np.float32) - 40

    def aic(addr):
        g = GetBlockIdx()
        l1_copy(addr["x"] + g * 64, addr["ws"] + g * 64, 16)
        CrossCoreSetFlag(1, modeId=2, pipe=PIPE_MTE3)

    def aiv(addr):
        i = GetBlockIdx()
        CrossCoreWaitFlag(1)
        if i // 2 == 2:
            op = lambda t: (Mul(t, t, t, 8), Adds(t, t, 1.0, 8))     # noqa: E731
        else:
            op = lambda t: Mul(t, t, t, 8)                           # noqa: E731
        ub_copy(addr["ws"] + i * 32, addr["out"] + i * 32, 8, op)

    kernel = _core_kernel(aic, aiv)

    def run(lockstep):
        return launch(kernel, 6, {"x": x}, {"ws": 6 * 64, "out": 6 * 64}, keep_spans=True,
                      lockstep=lockstep)
    prof = both(run)
    out, _ = run(True)
    want = x * x
    want[32:48] += 1
    np.testing.assert_array_equal(out["out"].view(np.float32), want)
    assert grouped(prof) == [g in (1, 3, 4) for g in range(6)] + [i // 2 in (1, 3, 4)
                                                                   for i in range(12)]


def test_aivs_of_different_blocks_sharing_gm_run_per_core():
    """Mode 0: every AIV reads a row another block's AIV wrote. A group would read it in
    another order than per core could: the launch is undone and runs per core."""
    blocks = 5
    x = np.arange(2 * blocks * 8, dtype=np.float32)

    def aiv(addr):
        i = GetBlockIdx()
        ub_copy(addr["x"] + i * 32, addr["mid"] + i * 32, 8)
        CrossCoreSetFlag(2, modeId=0, pipe=PIPE_MTE3)
        CrossCoreWaitFlag(2)
        ub_copy(addr["mid"] + (i + 2) % (2 * blocks) * 32, addr["out"] + i * 32, 8)

    def run(lockstep):
        return launch(_core_kernel(body_aiv=aiv), blocks, {"x": x},
                      {"mid": 2 * blocks * 32, "out": 2 * blocks * 32}, keep_spans=True,
                      lockstep=lockstep)
    prof = both(run)
    out, _ = run(True)
    np.testing.assert_array_equal(out["out"].view(np.float32).reshape(-1, 8),
                                  x.reshape(-1, 8)[(np.arange(2 * blocks) + 2) % (2 * blocks)])
    assert not any(grouped(prof))


def test_sync_all_across_both_kinds_in_groups():
    """SyncAll(isAIVOnly=False) met by groups and single cores, each AIV then reading its own
    block's row: grouped, and every core's barrier records those of per-core execution."""
    blocks = 5
    x = np.arange(blocks * 8, dtype=np.float32)

    def kernel(addr):
        if ASCEND_IS_AIC():
            l1_copy(addr["x"] + GetBlockIdx() * 32, addr["mid"] + GetBlockIdx() * 32, 8)
        SyncAll(isAIVOnly=False)
        if ASCEND_IS_AIV():
            i = GetBlockIdx()
            ub_copy(addr["mid"] + i // 2 * 32, addr["out"] + i * 32, 8)

    def run(lockstep):
        return launch(kernel, blocks, {"x": x}, {"mid": blocks * 32, "out": 2 * blocks * 32},
                      keep_spans=True, lockstep=lockstep)
    prof = both(run)
    assert sum(grouped(prof)) == 9


@pytest.mark.parametrize("warn", [False, True])
def test_a_cross_core_race_is_still_reported(warn):
    """The AIVs read the workspace without waiting for their AIC's flag: the checker reports
    the race on block 0 in both modes, the same error (or, as a warning, the same warnings
    and results)."""
    checks = CheckerConfig(warn=frozenset({"Sync"})) if warn else None

    def run(lockstep):
        got, _, _, prof = run_leaky(6, 32, 32, 16, 0.5, wait=False, keep_spans=True,
                                    checks=checks, lockstep=lockstep)
        return {"out": got}, prof
    if warn:
        prof = both(run)
        assert any("reads GM" in w and "AIV 0 (block 0, sub-block 0)" in w
                   for w in prof.warnings)
        return
    errors = []
    for lockstep in (False, True):
        with pytest.raises(SyncError, match=r"AIV 0 \(block 0, sub-block 0\) reads GM .* "
                                            r"while AIC 0 writes") as err:
            run(lockstep)
        errors.append((str(err.value), err.value.line))
    assert errors[0] == errors[1]


def test_ping_pong_rounds_in_groups():
    """Several rounds of mode-2 flags both ways through two workspace slots per block."""
    blocks, rounds = 4, 4
    x = np.arange(blocks * rounds * 16, dtype=np.float32) - 50

    def aic(addr):
        g = GetBlockIdx()
        for r in range(rounds):
            if r >= 2:
                CrossCoreWaitFlag(2)
            l1_copy(addr["x"] + (g * rounds + r) * 64, addr["ws"] + (g * 2 + r % 2) * 64, 16)
            CrossCoreSetFlag(1, modeId=2, pipe=PIPE_MTE3)
        for r in range(rounds - 2, rounds):
            CrossCoreWaitFlag(2)

    def aiv(addr):
        g, half = GetBlockIdx() // 2, 32 * GetSubBlockIdx()
        for r in range(rounds):
            CrossCoreWaitFlag(1)
            ub_copy(addr["ws"] + (g * 2 + r % 2) * 64 + half,
                    addr["out"] + (g * rounds + r) * 64 + half, 8, lambda t: Mul(t, t, t, 8))
            CrossCoreSetFlag(2, modeId=2, pipe=PIPE_MTE2)

    def run(lockstep):
        return launch(_core_kernel(aic, aiv), blocks, {"x": x},
                      {"ws": blocks * 128, "out": blocks * rounds * 64}, keep_spans=True,
                      lockstep=lockstep)
    prof = both(run)
    out, _ = run(True)
    np.testing.assert_array_equal(out["out"].view(np.float32), x * x)
    assert sum(grouped(prof)) == 6
