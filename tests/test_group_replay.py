"""The replay of a lockstep group as one (:mod:`npusim.group_replay`) gives the per-block
replay's results to the bit, and takes over the launches it is meant for.

Cases: the DataCopy study's kernels (examples/data_copy_study.py) at a small scale, whose
blocks read their own rows in step (U1, U2 on the AIVs, L1 on the AICs: the group replay
runs) or read the same rows (U7: the members' L2 hits differ, the group replay gives up and
the per-block replay runs); U1 again on an L2 small enough to evict while it runs. Every
field of the timing is compared with the per-block replay's (floats exactly).
"""
import contextlib
import dataclasses
import gc
import weakref

import numpy as np
import pytest

import npusim.launch as launch
import npusim.timing as timing
from npusim import get_soc
from npusim import group_replay
from npusim.timing import L2Cache

from aclnn_helpers import load_example


STUDY = load_example("data_copy_study")


def _records(monkeypatch, case, scale, soc_name="Ascend910B1"):
    """The arguments of the replay a scenario's launch makes."""
    got = []
    real = launch.simulate

    def spy(blocks, soc, **kw):
        got.append((blocks, soc, kw))
        return real(blocks, soc, **kw)

    monkeypatch.setattr(launch, "simulate", spy)
    monkeypatch.setattr(timing, "REPLAY_MEMO", False)
    STUDY.run_scenario(case, scale, soc_name=soc_name)
    monkeypatch.setattr(launch, "simulate", real)
    (blocks, soc, kw), = got
    return blocks, soc, kw.get("cores"), kw.get("profile_pipes", timing.PROFILE_PIPES)


def _fields(t):
    return (t.cycles.hex(), t.block_start.tolist(), t.block_end.tolist(),
            {int(p): v.tolist() for p, v in t.pipe_busy.items()}, t.hbm_bytes.hex(),
            t.l2_hit_bytes.hex(), tuple(x.hex() for x in t.l2_bytes))


def _both(monkeypatch, blocks, soc, cores, pipes):
    monkeypatch.setattr(group_replay, "GROUP_REPLAY", False)
    alone = timing._replay(blocks, soc, False, cores, pipes, None)
    monkeypatch.setattr(group_replay, "GROUP_REPLAY", True)
    grouped = timing._replay(blocks, soc, False, cores, pipes, None)
    return alone, grouped


@pytest.mark.parametrize("case, used", [("U1", True), ("U2", True), ("L1", True),
                                        ("U7", False)])
def test_group_replay_equals_per_block_replay(monkeypatch, case, used):
    blocks, soc, cores, pipes = _records(monkeypatch, case, 0.05)
    alone, grouped = _both(monkeypatch, blocks, soc, cores, pipes)
    assert _fields(grouped) == _fields(alone)
    assert (group_replay.replay_group(blocks, soc, cores, pipes) is not None) == used


def test_group_replay_with_evictions(monkeypatch):
    """U1 at 1/20 of its size reads 648 KiB once; replayed on an L2 of 256 KiB, it evicts
    most of it while the blocks run (clean lines: no write-back)."""
    small = dataclasses.replace(get_soc("Ascend910B1"), l2_size=256 * 1024)
    blocks, _, cores, pipes = _records(monkeypatch, "U1", 0.05)
    alone, grouped = _both(monkeypatch, blocks, small, cores, pipes)
    assert _fields(grouped) == _fields(alone)
    assert group_replay.replay_group(blocks, small, cores, pipes) is not None
    assert alone.hbm_bytes > 2 * small.l2_size


def test_access_many_equals_access_one_by_one():
    """L2Cache.access_many against a call of access per read, on reads that append to their
    page and evict the least recent run whole (the members of U1), and reads that land in
    the middle of a page, hit, straddle pages and evict part of a run."""
    soc = dataclasses.replace(get_soc("Ascend910B1"), l2_size=64 * 128)
    rng = np.random.default_rng(7)
    a, b = L2Cache(soc), L2Cache(soc)
    for step in range(600):
        if step % 300 < 150:        # members streaming along their rows, as U1's do
            addrs = [m * 1 << 20 | step * 128 for m in range(8)]
            span = 128
        else:
            base = int(rng.integers(0, 40)) * 8192
            addrs = [base + m * 65536 + int(rng.integers(0, 4)) * 128 for m in range(8)]
            span = int(rng.choice([128, 256, 300]))
        got = a.access_many(addrs, span)
        want = [b.access(x, span, False) for x in addrs]
        assert got == want
        assert (a.runs, a.size, a.clock, a.entries()) == (b.runs, b.size, b.clock,
                                                          b.entries())
        assert (a.index(), a.rid, a.rstart) == (b.index(), b.rid, b.rstart)


@contextlib.contextmanager
def _l2_made(monkeypatch):
    """Weak references to every L2Cache made inside the block, with the cyclic collector
    paused as a launch pauses it (so only reference counting frees them)."""
    made = []
    real = timing.L2Cache

    def spy(*a, **k):
        l2 = real(*a, **k)
        made.append(weakref.ref(l2))
        return l2

    monkeypatch.setattr(timing, "L2Cache", spy)
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield made
    finally:
        if enabled:
            gc.enable()


@pytest.mark.parametrize("case, used", [("U1", True), ("U7", False)])
def test_group_replay_frees_its_memory_system(monkeypatch, case, used):
    """The replay's memory system (its L2 of a run per copy) goes when the replay returns,
    or gives up (U7's members stop being in step), without the cyclic collector, which a
    launch pauses: else the collector walks it all when it runs next."""
    blocks, soc, cores, pipes = _records(monkeypatch, case, 0.05)
    with _l2_made(monkeypatch) as made:
        assert (group_replay.replay_group(blocks, soc, cores, pipes) is not None) == used
        assert len(made) == 1 and made[0]() is None


def test_per_block_replay_frees_its_memory_system(monkeypatch):
    """The per-block replay (``timing._replay``, group replay off) leaves no cycle that
    keeps its memory system alive when it returns: its processes are closed, so the L2 goes
    by reference counting, with the cyclic collector paused as a launch pauses it."""
    blocks, soc, cores, pipes = _records(monkeypatch, "U7", 0.05)
    with _l2_made(monkeypatch) as made:
        monkeypatch.setattr(group_replay, "GROUP_REPLAY", False)
        timing._replay(blocks, soc, False, cores, pipes, None)
        assert len(made) == 1 and made[0]() is None
