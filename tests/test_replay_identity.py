"""The timing replay (:func:`npusim.timing.simulate`) gives the same results, bit for bit, as
the simpy replay it replaced.

The records of a set of launches (vector kernels, the embedding paths, softmax / rms_norm,
a matmul on the AICs, a mixed launch with cross-core flags, SyncAll kernels, the Add study's
cases 1-6 replayed on a warm L2) are replayed with and without spans; a digest of every
result field (cycles, block start / end, busy cycles per pipe, HBM and L2 hit bytes, the
spans, the L2 residency left) must equal the one the simpy replay gave for the same records,
stored in ``tests/data/replay_identity.json``. Floats enter the digest as ``float.hex``, so
a difference in the last bit fails.
"""
import copy
import dataclasses
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import npusim.launch as launch
import npusim.timing as timing

FIXTURE = Path(__file__).parent / "data" / "replay_identity.json"
ROOT = Path(__file__).resolve().parents[1]


def digest(t, l2) -> str:
    """sha256 of every field of KernelTiming ``t`` and of the L2 residency ``l2`` left."""
    h = hashlib.sha256()

    def put(*xs):
        for x in xs:
            h.update((float(x).hex() if isinstance(x, (float, np.floating)) else repr(x))
                     .encode())
            h.update(b",")

    put(t.cycles, *t.block_start.tolist(), *t.block_end.tolist(), t.hbm_bytes, t.l2_hit_bytes)
    for pipe in sorted(t.pipe_busy, key=int):
        put(int(pipe), *t.pipe_busy[pipe].tolist())
    if t.spans is not None:
        for block in t.spans:
            put("block")
            for pipe, start, end, label, index in block:
                put(int(pipe), float(start), float(end), label, index)
    # a run of ranges may keep its ranges as lists until numpy needs them (timing._arrays):
    # the residency is digested in its array form either way
    put("l2", l2.size, l2.clock, *sorted((s, *(timing._arrays(list(r)) if len(r) > 3 else r))
                                         for s, r in l2.runs.items()))
    return h.hexdigest()


class Capture:
    """Records every replay's arguments (the L2 it starts from copied) while active."""

    def __init__(self, monkeypatch, *modules):
        self.calls = []
        real = timing.simulate

        def spy(blocks, soc, keep_spans=False, cores=None, profile_pipes=timing.PROFILE_PIPES,
                l2=None):
            self.calls.append((blocks, soc, cores, profile_pipes, copy.deepcopy(l2)))
            return real(blocks, soc, keep_spans=keep_spans, cores=cores,
                        profile_pipes=profile_pipes, l2=l2)

        for module in (launch, *modules):
            monkeypatch.setattr(module, "simulate", spy)


# -- the launches -----------------------------------------------------------------------------
def ema_adam():
    from test_optimisations import run
    run(6128 * 5 + 17, 4, False, np.float32, 1)
    run(3000, 48, False, np.float16, 0)


def add_study(monkeypatch):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import add_study as study
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return study, lambda: [study.run_case(case, rows=96, check=False) for case in range(1, 7)]


def embedding(tmp_path, monkeypatch):
    from aclnn import runtime
    from aclnn_helpers import open_stream
    from test_embedding_dense_backward_aclnn import compute
    from kernel_helpers import row_by_row
    # the small-dim kernel row by row, as these records were stored (its batched walk
    # records other instructions; tests/test_embedding_dense_backward_kernel.py compares
    # the two)
    row_by_row(monkeypatch)
    rng = np.random.default_rng(7)
    for soc, rows, dim, nw in (("Ascend910B1", 512, 64, 300),     # small-dim path
                               ("Ascend910B1", 48, 1024, 40),     # sorted path
                               ("Ascend910A", 64, 96, 50)):       # Atlas training kernel
        stream = open_stream(tmp_path, soc)
        try:
            grad = rng.standard_normal((rows, dim)).astype(np.float32)
            idx = rng.integers(0, nw, rows).astype(np.int64)
            compute(stream, grad, idx, nw)
        finally:
            runtime.reset()


def softmax_rms_norm(tmp_path):
    from aclnn import runtime
    from aclnn_helpers import open_stream
    from test_rms_norm import rms_norm
    from test_softmax import softmax
    rng = np.random.default_rng(3)
    stream = open_stream(tmp_path)
    try:
        softmax(stream, rng.standard_normal((96, 200)).astype(np.float32), -1)
        rms_norm(stream, rng.standard_normal((80, 256)).astype(np.float32),
                 rng.standard_normal(256).astype(np.float32))
    finally:
        runtime.reset()


def matmul(tmp_path):
    from aclnn import runtime
    from aclnn_helpers import open_stream
    from test_matmul_op import device, run
    rng = np.random.default_rng(5)
    open_stream(tmp_path)
    try:
        a = rng.standard_normal((200, 96)).astype(np.float16)
        b = rng.standard_normal((96, 160)).astype(np.float16)
        run("Matmul", device(a), device(b), (200, 160), np.float16)
    finally:
        runtime.reset()


def mix_and_sync_all():
    import test_cross_core
    import test_mix_launch
    test_mix_launch.test_the_aic_waits_for_both_aivs_in_mode_2()
    test_mix_launch.test_sync_all_across_both_kinds()
    test_cross_core.test_sync_all_makes_every_block_see_phase_one()


CASES = ("ema_adam", "add_study", "embedding", "softmax_rms_norm", "matmul", "mix_and_sync_all")


def records_as_stored(monkeypatch):
    """The stored digests are of records made before the scalar unit charged its own work
    (npusim/ascendc/scalar.py): the launches are recorded with those costs off (and a UB
    GetValue/SetValue at its former 1 cycle), so that the replay is compared on the same
    records. The scalar unit's records are PIPE_S instructions like any other."""
    import npusim.soc as soc_mod
    from npusim.ascendc import scalar
    monkeypatch.setattr(scalar, "CHARGE", False)
    for name, spec in list(soc_mod.SOC_PRESETS.items()):
        monkeypatch.setitem(soc_mod.SOC_PRESETS, name, dataclasses.replace(
            spec, scalar_entry_cycles=0.0, scalar_issue_cycles=0.0, scalar_queue_cycles=0.0,
            scalar_gm_offset_cycles=0.0, scalar_gm_hint_cycles=0.0, scalar_cycles=1))


def capture(case, monkeypatch, tmp_path):
    """The replay arguments of the launches of ``case``."""
    records_as_stored(monkeypatch)
    if case == "add_study":
        study, go = add_study(monkeypatch)
        cap = Capture(monkeypatch, study)
        go()
    else:
        cap = Capture(monkeypatch)
        run = globals()[case]
        if case == "embedding":
            run(tmp_path, monkeypatch)
        else:
            run(tmp_path) if case in ("softmax_rms_norm", "matmul") else run()
    return cap.calls


def replay_digests(calls, simulate) -> list:
    """Digests of each call replayed by ``simulate`` without, then with, spans."""
    out = []
    for blocks, soc, cores, profile_pipes, l2 in calls:
        for keep_spans in (False, True):
            cache = copy.deepcopy(l2) if l2 is not None else timing.L2Cache(soc)
            t = simulate(blocks, soc, keep_spans=keep_spans, cores=cores,
                         profile_pipes=profile_pipes, l2=cache)
            out.append(digest(t, cache))
    return out


@pytest.mark.parametrize("case", CASES)
def test_replay_is_bit_identical_to_the_simpy_replay(case, monkeypatch, tmp_path,
                                                     scalar_issue_off):
    expected = json.loads(FIXTURE.read_text())[case]
    calls = capture(case, monkeypatch, tmp_path)
    monkeypatch.undo()
    assert len(calls) == len(expected) // 2
    assert replay_digests(calls, timing.simulate) == expected


def test_a_changed_record_changes_the_digest(monkeypatch, tmp_path):
    """The digest sees a change of one cycle in one instruction."""
    calls = capture("mix_and_sync_all", monkeypatch, tmp_path)[:1]
    monkeypatch.undo()
    blocks, soc, cores, pipes, l2 = calls[0]
    b = next(i for i, recs in enumerate(blocks) if any(r[0] == timing.OP for r in recs))
    i = next(i for i, r in enumerate(blocks[b]) if r[0] == timing.OP)
    changed = [list(recs) for recs in blocks]
    r = changed[b][i]
    changed[b][i] = (r[0], r[1], r[2] + 1, *r[3:])
    assert replay_digests([(changed, soc, cores, pipes, l2)], timing.simulate) != \
        replay_digests(calls, timing.simulate)
