"""A transfer of evenly spaced rows that are the very lines of one resident run is answered
from the run's first and last line (L2Cache.access_same, asked by _Memory.transfer before
the rows' line ranges are made): the same hits, write-backs, recency and dirty lines as the
full access (L2Cache.access_lines) and as a per-line LRU cache, with eviction and
write-back."""
from dataclasses import replace

from hypothesis import given, settings, strategies as st

from npusim import get_soc, timing
from npusim.ascendc.core import DMA_IN, DMA_OUT
from npusim.ascendc.types import Pipe
from npusim.timing import L2Cache, row_lines, simulate
from test_l2_cache import SOC
from test_l2_rows import LINE, SetLRU, dirty_lines, moved_lines


def state(c: L2Cache):
    """The cache's lines, dirtiness, recency and size, as plain values."""
    runs = {}
    for s, run in c.runs.items():
        if len(run) == 3:
            runs[s] = (run[0], bool(run[1]), run[2])
        else:
            runs[s] = (run[0], run[2], [int(x) for x in run[3]], [int(x) for x in run[4]],
                       [bool(x) for x in run[5]], run[6], run[7])
    live = [e for e in c.entries() if e[1] in c.runs and c.runs[e[1]][2] == e[0]]
    return runs, live, c.size, c.clock


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([4, 6, 8]),
       st.lists(st.tuples(st.integers(0, 4), st.sampled_from([2, 5, 9]), st.booleans()),
                min_size=1, max_size=40))
def test_same_run_answer_is_the_full_access(pitch_lines, tiles):
    """Column tiles of one matrix (rows of 2 lines) read and written again and again, more
    of them than the cache holds (64 lines): each asked first of access_same, as a transfer
    asks it, and made by access_lines when it does not answer; the same results and cache
    as access_lines alone, and a per-line LRU's hits and write-backs."""
    fast, full, ref = L2Cache(SOC), L2Cache(SOC), SetLRU(64)
    pitch = pitch_lines * LINE
    answered = 0
    for col, rows, write in tiles + tiles[::-1]:
        addr = 4096 * LINE + 2 * col * LINE
        runs = ((0, 2 * LINE, pitch, rows),)
        lo, hi, reg = row_lines(addr, runs, LINE)
        assert reg is not None
        got = fast.access_same(int(lo[0]), int(hi[-1]), write, reg)
        if got is None:
            got = fast.access_lines(lo, hi, write, reg)
        else:
            answered += 1
        assert got == full.access_lines(lo, hi, write, reg)
        want = ref.touch(moved_lines(addr, ((0, 2 * LINE, pitch - 2 * LINE, rows),)), write)
        assert got == (*want, 0)
        assert state(fast) == state(full)
    assert fast.size == len(ref.d)
    assert dirty_lines(fast) == {ln for ln, d in ref.d.items() if d}


def test_same_run_answer_misses_other_runs():
    """A run of other lines at the same start (other rows, another pitch) is not the rows'
    run: access_same leaves the cache as it is."""
    c = L2Cache(SOC)
    lo, hi, reg = row_lines(0, ((0, LINE, 4 * LINE, 4),), LINE)
    c.access_lines(lo, hi, False, reg)
    before = state(c)
    lo2, hi2, reg2 = row_lines(0, ((0, LINE, 2 * LINE, 7),), LINE)
    assert c.access_same(int(lo2[0]), int(hi2[-1]), False, reg2) is None
    assert state(c) == before
    assert c.access_same(int(lo[0]), int(hi[-1]), True, reg) == (1.0, 0, 0)


# a cube-style launch on a small L2: 8 blocks read row tiles of A (two blocks each) and
# column tiles of B (each block its own, again per row of A), and write tiles of C; the
# tiles are rows of 512 B, 8 KiB apart, and the cache holds a quarter of them
ROW, PITCH, ROWS = 512, 8192, 32
A, B, C = 0, 1 << 20, 2 << 20


def _tile(kind, base, col, row0=0):
    addr = base + row0 * PITCH + col * ROW
    key = (addr, (ROWS - 1) * PITCH + ROW, False, ((0, ROW, PITCH, ROWS),))
    pipe = Pipe.PIPE_MTE2 if kind == DMA_IN else Pipe.PIPE_MTE3
    return (kind, pipe, 0.0, ROWS * ROW, key, "DataCopy")


def _blocks():
    blocks = []
    for b in range(8):
        recs = []
        for m in range(3):
            for k in range(4):
                recs.append(_tile(DMA_IN, A, k, (m * 4 + b // 2) * ROWS))
                recs.append(_tile(DMA_IN, B, b % 8, k * ROWS))
            recs.append(_tile(DMA_OUT, C, b, (m * 4 + b // 2) * ROWS))
        blocks.append(recs)
    return blocks


def test_a_launch_replays_the_same_with_and_without_the_same_run_answer(monkeypatch):
    soc = replace(get_soc("Ascend910B2"), l2_size=96 * ROWS * ROW // 4)
    monkeypatch.setattr(timing, "REPLAY_MEMO", False)
    answers = []
    same = L2Cache.access_same

    def counted(self, *args):
        got = same(self, *args)
        answers.append(got)
        return got

    monkeypatch.setattr(L2Cache, "access_same", counted)
    fast = simulate(_blocks(), soc)
    monkeypatch.setattr(L2Cache, "access_same", lambda self, *args: None)
    full = simulate(_blocks(), soc)
    # the answer was given, and the launch evicted dirty lines: HBM took more than the
    # reads' misses (C's tiles written back)
    assert sum(a is not None for a in answers) >= 16
    assert full.hbm_bytes >= full.l2_bytes[1] + ROWS * ROW
    for f in ("cycles", "hbm_bytes", "l2_hit_bytes", "l2_bytes"):
        assert getattr(fast, f) == getattr(full, f), f
    assert fast.block_end.tolist() == full.block_end.tolist()


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.integers(1, 4), st.integers(0, 40),
       st.integers(1, 3), st.integers(2, 40))
def test_pages_of_evenly_spaced_ranges(page, pitch_pages, first, width, count):
    """The pages evenly spaced ranges touch, worked out from their form (a pitch of whole
    pages): those worked out from the ranges."""
    c = L2Cache(SOC)
    c.PAGE = page
    pitch = pitch_pages * page
    lo = [first + i * pitch for i in range(count)]
    hi = [x + min(width, pitch - 1) for x in lo] if pitch > 1 else [x + 1 for x in lo]
    reg = (first % pitch, pitch, hi[0] - lo[0])
    want = sorted({p for a, b in zip(lo, hi) for p in range(a // page, (b - 1) // page + 1)})
    got = c._touched(lo, hi, reg)
    # the extent's pages when the ranges are as many (a superset, as _touched gives it)
    assert got == want or (got == list(range(want[0], want[-1] + 1))
                           and want[-1] - want[0] < count)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from([2, 4]), st.sampled_from([1, 2]),
       st.lists(st.tuples(st.integers(0, 5), st.sampled_from([3, 8, 20]), st.booleans()),
                min_size=1, max_size=40))
def test_column_tiles_at_a_pitch_of_whole_pages(page, pitch_pages, tiles):
    """Column tiles (rows of one line) at a pitch of whole index pages, cut and indexed
    with numpy: a per-line LRU's hits and write-backs, and every page a run's lines touch
    lists it."""
    fast, ref = L2Cache(SOC), SetLRU(64)
    fast.PAGE, fast.ROWS_IN_PYTHON = page, 0
    pitch = pitch_pages * page * LINE
    for col, rows, write in tiles + tiles[::-1]:
        addr = 8192 * LINE + col * LINE
        runs = ((0, LINE, pitch, rows),)
        lo, hi, reg = row_lines(addr, runs, LINE)
        got = fast.access_lines(lo, hi, write, reg)
        assert got == (*ref.touch(moved_lines(addr, ((0, LINE, pitch - LINE, rows),)), write), 0)
    assert fast.size == len(ref.d)
    index = fast.index()
    for s, run in fast.runs.items():
        rid = fast.rid[s]
        ranges = zip(run[3], run[4]) if len(run) > 3 else [(s, run[0])]
        for a, b in ranges:
            assert all(rid in index[p] for p in range(a // page, (b - 1) // page + 1))
