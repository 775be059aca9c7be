"""Two shortcuts of the timing replay give its results to the bit, every field of the timing
(l2_bytes, msprof's L2 counts, included):

* ``timing.LATE_RATES``: the memory system shares its capacities once per instant, after
  the last change of that instant, instead of at every change (a flow that ends lets its
  MTE issue the next transfer at once, whose change follows at the same instant);
* ``l2_cold.DEFER_WRITES``: a cold L2 answers a scatter's write (rows of one run each) with
  the other pending writes at once, with numpy, before any call that touches their lines;
  the write's L2 counts are added, in order, once its hit fraction is known.

Each is compared with the replay without it on the records of launches that exercise it:
the embedding's scatter of flushed rows (small-dim and sorted paths, writes to rows that
earlier flushes wrote), EmaAdam's reads and writes on the 48 vector cores.
"""
import dataclasses

import numpy as np
import pytest

import npusim.launch as launch
from npusim import l2_cold, timing


def fields(t: timing.KernelTiming) -> tuple:
    """Every field of a replay's timing, floats as float.hex (the last bit counts)."""
    def value(x):
        if isinstance(x, np.ndarray):
            return x.dtype.str, x.tobytes()
        if isinstance(x, dict):
            return tuple((int(k), value(v)) for k, v in sorted(x.items(), key=lambda kv: int(kv[0])))
        if isinstance(x, (tuple, list)):
            return tuple(value(v) for v in x)
        return float(x).hex() if isinstance(x, (float, np.floating)) else x
    return tuple((f.name, value(getattr(t, f.name))) for f in dataclasses.fields(t))


@pytest.fixture(scope="module")
def launches(tmp_path_factory):
    """The replay arguments of a few launches (their records, as the kernels made them)."""
    from aclnn import runtime
    from aclnn_helpers import open_stream
    from test_embedding_dense_backward_aclnn import compute
    from test_optimisations import run
    calls = []
    real = launch.simulate

    def spy(blocks, soc, **kw):
        calls.append((blocks, soc, kw))
        return real(blocks, soc, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(launch, "simulate", spy)
    try:
        rng = np.random.default_rng(11)
        for rows, dim, nw in ((2048, 64, 400), (512, 1024, 60)):    # small-dim, sorted
            stream = open_stream(tmp_path_factory.mktemp("edb"))
            try:
                # Zipf-like indices: hot rows flushed by many batches and cores
                idx = np.minimum(rng.zipf(1.3, rows) - 1, nw - 1).astype(np.int64)
                compute(stream, rng.standard_normal((rows, dim)).astype(np.float32), idx, nw)
            finally:
                runtime.reset()
        run(48 * 2048 + 17, 48, False, np.float32, 1)              # EmaAdam
    finally:
        mp.undo()
    return calls


def replay_all(calls, monkeypatch, switches: dict):
    """Each launch replayed (no kept replays) with ``switches`` set: (module, name) -> value."""
    monkeypatch.setattr(timing, "REPLAY_MEMO", False)
    for (module, name), value in switches.items():
        monkeypatch.setattr(module, name, value)
    return [fields(timing.simulate(blocks, soc, **kw)) for blocks, soc, kw in calls]


def test_rates_shared_once_per_instant_are_those_shared_at_every_change(launches, monkeypatch):
    shared = {True: 0, False: 0}
    real = timing._Memory._share

    def count(self):
        shared[timing.LATE_RATES] += 1
        return real(self)

    monkeypatch.setattr(timing._Memory, "_share", count)
    late = replay_all(launches, monkeypatch, {(timing, "LATE_RATES"): True})
    each = replay_all(launches, monkeypatch, {(timing, "LATE_RATES"): False})
    assert late == each
    assert shared[True] < shared[False]          # some instants changed more than once


def test_scatter_writes_answered_later_are_those_answered_at_once(launches, monkeypatch):
    settled = []
    real = l2_cold.ColdL2.settle

    def count(self):
        settled.append(len(self.pending))
        return real(self)

    monkeypatch.setattr(l2_cold.ColdL2, "settle", count)
    later = replay_all(launches, monkeypatch, {(l2_cold, "DEFER_WRITES"): True})
    assert sum(settled) > 100                    # the flushes' writes were deferred
    at_once = replay_all(launches, monkeypatch, {(l2_cold, "DEFER_WRITES"): False})
    assert later == at_once
    # and with the rows' lines sorted by two keys instead of one
    two_keys = replay_all(launches, monkeypatch, {(l2_cold, "KEY_BITS"): 0})
    assert two_keys == at_once


def test_write_counts_are_added_in_the_order_of_the_writes(monkeypatch):
    """A scatter's write answered later is counted in msprof's write hit / miss bytes in its
    place among the writes: the counts are float sums, which here differ in their last bit
    when the deferred write's bytes are added after those of the write that follows it."""
    from npusim import get_soc
    from npusim.ascendc.core import DMA_OUT
    soc = get_soc("Ascend910B1")
    line = soc.l2_line_bytes
    # rows on lines 2, 3 and 5 (line 2 resident: 1 of 3 lines hit)
    scatter = (2 * line, 4 * line, False, ((0, line, line, 1), (line, line, line, 1),
                                           (3 * line, line, line, 1)))

    def counts():
        loop = timing._Loop()
        memory = timing._Memory(soc, loop, l2_cold.ColdL2(timing.L2Cache(soc),
                                                           timing._row_lines))
        memory.transfer(0.0, DMA_OUT, 3 * 2**52, (0, 3 * line, False))   # lines 0-2: misses
        memory.transfer(0.0, DMA_OUT, 256, (10 * line, 2 * line, False))  # lines 10-11
        memory.transfer(0.0, DMA_OUT, 1000, scatter)
        memory.transfer(0.0, DMA_OUT, 999, (10 * line, 3 * line, False))  # 2 of 3 lines hit
        assert bool(memory.wlog) == l2_cold.DEFER_WRITES   # the scatter's count waited
        return memory.l2_counts()

    monkeypatch.setattr(l2_cold, "DEFER_WRITES", True)
    later = counts()
    monkeypatch.setattr(l2_cold, "DEFER_WRITES", False)
    assert later == counts()
    d, e = 1000 - 1000 * (1 / 3), 999 - 999 * (2 / 3)     # the two writes' miss bytes
    assert later[3] == ((3 * 2**52 + 256) + d) + e != ((3 * 2**52 + 256) + e) + d
