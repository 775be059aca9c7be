"""Transfers as the rows they move: the L2 counts the lines a strided copy's rows touch,
never the gaps between rows (npusim.timing.row_lines, L2Cache.access_lines), against the
set of lines of the bytes moved, a per-line LRU cache, and hand-computed tile cases."""
from dataclasses import replace

import numpy as np
from hypothesis import given, settings, strategies as st

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import (DataCopy, DataCopyParams, GetBlockIdx, GlobalTensor, TPipe,
                            TPosition, TQue, half)
from npusim.ascendc.core import DMA_IN
from npusim.ascendc.types import Pipe
from npusim import timing
from npusim.timing import L2Cache, row_lines, simulate
from test_l2_cache import SOC, LineLRU

LINE = 512
# rows of any length and gap, and rows of whole lines (the column tiles of a matrix: equal
# ranges at one pitch, which the cache compares by residue)
lines_st = st.sampled_from([LINE, 2 * LINE, 4 * LINE])
runs_st = st.lists(st.tuples(st.one_of(st.integers(0, 8 * LINE), lines_st),
                             st.one_of(st.integers(1, 3 * LINE), lines_st),
                             st.one_of(st.integers(0, 4 * LINE), lines_st), st.integers(1, 12)),
                   min_size=1, max_size=2)
addr_st = st.one_of(st.integers(0, 64 * LINE), st.integers(0, 64).map(lambda k: k * LINE))


def moved_lines(addr, runs):
    """Brute force: the lines of every byte the runs move."""
    return {(addr + off + i * (row + gap) + j) // LINE
            for off, row, gap, count in runs for i in range(count) for j in range(row)}


def dirty_lines(cache: L2Cache) -> set:
    """The dirty lines of ``cache``, from its runs (a run of ranges: per range)."""
    dirty = set()
    for s, run in cache.runs.items():
        for a, b, d in (zip(run[3], run[4], run[5]) if len(run) > 3 else [(s, run[0], run[1])]):
            dirty |= set(range(a, b)) if d else set()
    return dirty


def as_runs(runs):
    return tuple((off, row, row + gap, count) for off, row, gap, count in runs)


@settings(max_examples=200, deadline=None)
@given(addr_st, runs_st)
def test_row_lines_are_the_lines_of_the_bytes_moved(addr, runs):
    lo, hi, reg = row_lines(addr, as_runs(runs), LINE)
    if reg is not None:             # equal ranges, evenly spaced
        r0, pitch, n = reg
        assert (hi - lo == n).all() and (lo % pitch == r0).all() and (np.diff(lo) == pitch).all()
    got = [ln for a, b in zip(lo, hi) for ln in range(a, b)]
    assert got == sorted(moved_lines(addr, runs))
    # sorted, disjoint and not adjacent: each range is a run of lines the cache keeps whole
    assert all(b > a for a, b in zip(lo, hi)) and all(n > b for b, n in zip(hi, lo[1:]))
    # a few rows are computed with Python ints, many with numpy: the same ranges either way
    timing._ROW_LINES.clear()
    few = L2Cache.ROWS_IN_PYTHON
    try:
        L2Cache.ROWS_IN_PYTHON = 0
        n_lo, n_hi, n_reg = row_lines(addr, as_runs(runs), LINE)
    finally:
        L2Cache.ROWS_IN_PYTHON = few
        timing._ROW_LINES.clear()
    assert lo.dtype == n_lo.dtype == hi.dtype == n_hi.dtype == np.int64
    assert lo.tolist() == n_lo.tolist() and hi.tolist() == n_hi.tolist() and reg == n_reg


class SetLRU(LineLRU):
    def touch(self, lines, write):
        return self.touch_lines(sorted(lines), write)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(addr_st, runs_st, st.sampled_from(
    ["read", "write", "span read", "span write", "bypass"])), min_size=1, max_size=30),
    st.sampled_from([1, 3, 64]), st.sampled_from([0, 4, 64]))
def test_strided_accesses_behave_like_a_per_line_lru_of_their_lines(accesses, page, python):
    """Row sets, whole spans and writes around the cache, mixed: the same hits, write-backs,
    resident and dirty lines as a per-line LRU given the lines of the bytes moved; row sets
    cut with numpy (``python`` 0), in Python, or both by their size."""
    fast, ref = L2Cache(SOC), SetLRU(64)
    fast.PAGE = page
    fast.ROWS_IN_PYTHON = python
    for addr, runs, how in accesses + accesses[::-1]:     # and again: the same row sets
        lines = moved_lines(addr, runs)
        if how.startswith("span"):
            write = how == "span write"
            lo, hi = min(lines), max(lines) + 1
            got = fast.access(lo * LINE, (hi - lo) * LINE, write)
            assert got == (*ref.touch(set(range(lo, hi)), write), 0)
        elif how == "bypass":
            fast.invalidate_lines(*row_lines(addr, as_runs(runs), LINE)[:2])
            for ln in lines:
                ref.d.pop(ln, None)
        else:
            write = how == "write"
            lo, hi, reg = row_lines(addr, as_runs(runs), LINE)
            got = fast.access_lines(lo, hi, write, reg)
            assert got == (*ref.touch(lines, write), 0)
        assert fast.size == len(ref.d)
    resident, dirty = set(), set()
    for s, run in fast.runs.items():
        ranges = zip(run[3], run[4], run[5]) if len(run) > 3 else [(s, run[0], run[1])]
        for a, b, d in ranges:
            resident |= set(range(a, b))
            dirty |= set(range(a, b)) if d else set()
        assert len(run) == 3 or run[6] == sum(b - a for a, b in zip(run[3], run[4]))
    assert resident == set(ref.d)
    assert dirty == {ln for ln, d in ref.d.items() if d}
    # the page index lists every run whose lines touch a page, and a run only in pages of
    # its extent (a run of ranges far apart: only the pages its ranges touch)
    touch, extent = {}, {}
    for s, run in fast.runs.items():
        ranges = zip(list(run[3]), list(run[4])) if len(run) > 3 else [(s, run[0])]
        for a, b in ranges:
            for p in range(a // page, (b - 1) // page + 1):
                touch.setdefault(p, set()).add(s)
        for p in range(s // page, (run[0] - 1) // page + 1):
            extent.setdefault(p, set()).add(s)
    index = {p: {fast.rstart[r] for r in ids} for p, ids in fast.index().items()}
    assert all(touch[p] <= index.get(p, set()) for p in touch)
    assert all(index[p] <= extent.get(p, set()) for p in index)
    # a page lists its runs of one range in address order (found by bisection), each once
    for ids in fast.pages.values():
        starts = [fast.rstart[r] for r in ids]
        assert starts == sorted(set(starts)) and all(len(fast.runs[st]) == 3 for st in starts)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([4, 6, 8]), st.sampled_from([0, 32]),
       st.lists(st.tuples(st.integers(0, 7), st.integers(1, 2), st.integers(1, 9), st.booleans()),
                min_size=1, max_size=40), st.sampled_from([0, 4, 64]))
def test_column_tiles_of_one_matrix_behave_like_a_per_line_lru(pitch_lines, skew, tiles, python):
    """Column tiles of one matrix (rows of whole lines at one pitch, the case the cache
    compares by residue and re-reads as one run), read and written again and again."""
    fast, ref = L2Cache(SOC), SetLRU(64)
    fast.ROWS_IN_PYTHON = python
    pitch = pitch_lines * LINE
    for col, width, rows, write in tiles:
        addr, runs = skew + col * LINE, ((0, width * LINE, pitch - width * LINE, rows),)
        lo, hi, reg = row_lines(addr, as_runs(runs), LINE)
        got = fast.access_lines(lo, hi, write, reg) if len(lo) > 1 else \
            fast.access(int(lo[0]) * LINE, int(hi[0] - lo[0]) * LINE, write)
        assert got == (*ref.touch(moved_lines(addr, runs), write), 0)
    assert fast.size == len(ref.d)



@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=1, max_size=40))
def test_tiles_read_again_take_a_new_recency(tiles):
    """Five column tiles of one matrix (8 rows of 2 lines, 8 lines apart: 80 lines, the
    cache holds 64), each read or written again and again: a tile found whole in the cache
    (a tile another core read) is all hits and becomes the most recent, so the tiles
    evicted, and the write-backs, are those of a per-line LRU."""
    fast, ref = L2Cache(SOC), SetLRU(64)
    runs = ((0, 2 * LINE, 8 * LINE, 8),)
    for col, write in tiles + tiles[::-1]:
        addr = 1024 * LINE + 2 * col * LINE
        lo, hi, reg = row_lines(addr, runs, LINE)
        assert reg is not None
        got = fast.access_lines(lo, hi, write, reg)
        assert got == (*ref.touch(moved_lines(addr, ((0, 2 * LINE, 6 * LINE, 8),)), write), 0)
    assert fast.size == len(ref.d)
    assert dirty_lines(fast) == {ln for ln, d in ref.d.items() if d}

# [64, 1024] half tiles of a [64, 12288] half matrix: rows of 2048 B, 24576 B apart
ROW, PITCH, ROWS, TILES = 2048, 12288 * 2, 64, 12


def tile_read(addr, t):
    return (DMA_IN, Pipe.PIPE_MTE2, 0.0, ROWS * ROW,
            (addr + t * ROW, (ROWS - 1) * PITCH + ROW, False, ((0, ROW, PITCH, ROWS),)),
            "DataCopy")


def test_tiles_read_once_from_a_wide_matrix_never_hit():
    soc = get_soc("Ascend910B1")
    # 48 cores, one tile each (4 column tiles of 12 matrices): disjoint rows, every line
    # read once -> no hit; HBM serves every byte
    blocks = [[tile_read((b // TILES) * ROWS * PITCH, b % TILES)] for b in range(48)]
    t = simulate(blocks, soc)
    assert t.l2_hit_bytes == 0
    assert t.hbm_bytes >= 48 * ROWS * ROW
    # the same tiles read a second time: every line is resident, every byte a hit
    t = simulate([recs * 2 for recs in blocks], soc)
    assert t.l2_hit_bytes == 48 * ROWS * ROW


def test_a_strided_write_leaves_the_gaps_out_of_the_cache():
    c = L2Cache(replace(SOC, l2_size=1 << 20))
    lo, hi, reg = row_lines(0, ((0, ROW, PITCH, 4),), LINE)
    assert c.access_lines(lo, hi, True, reg) == (0.0, 0, 0)
    assert c.size == 4 * ROW // LINE
    assert c.access(ROW, PITCH - ROW, False)[0] == 0.0      # the gap of row 0: not resident


def tile_kernel(m, n, tile_n, repeat):
    """Block b reads column tile b of a [m, n] half matrix (blockCount m, blockLen
    tile_n x 2 B), ``repeat`` times."""
    def k(x):
        pipe = TPipe()
        q = TQue(TPosition.VECIN)
        pipe.InitBuffer(q, 1, m * tile_n * 2)
        xg = GlobalTensor(half)
        xg.SetGlobalBuffer(x, m * n)
        for _ in range(repeat):
            a = q.AllocTensor(half)
            DataCopy(a, xg[GetBlockIdx() * tile_n],
                     DataCopyParams(m, tile_n * 2 // 32, (n - tile_n) * 2 // 32, 0))
            q.EnQue(a)
            q.FreeTensor(q.DeQue(half))
    return k


def test_a_datacopy_tile_launch_counts_only_its_rows():
    soc = get_soc("Ascend910B1")
    gm = GlobalMemory(soc.memory_size)
    m, n, tile_n = 16, 12 * 1024, 1024
    x = gm.malloc(m * n * 2)
    gm.write(x, np.zeros(m * n, dtype=np.float16))
    once = run_kernel(tile_kernel(m, n, tile_n, 1), n // tile_n, (x,), soc=soc, gm=gm)
    assert once.timing.l2_hit_bytes == 0
    twice = run_kernel(tile_kernel(m, n, tile_n, 2), n // tile_n, (x,), soc=soc, gm=gm)
    assert twice.timing.l2_hit_bytes == m * n * 2
