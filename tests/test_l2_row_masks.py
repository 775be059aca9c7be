"""The scattered rows of a gather or scatter (a few short rows far apart, read and written
again and again, rows shared by many row sets) through L2Cache.access_lines: the same hits,
write-backs, resident and dirty lines as a per-line LRU, and the line masks a lookup reads
(L2Cache.mpages) exactly the lines each run holds, however its rows were cut."""
from dataclasses import replace

import numpy as np
from hypothesis import given, settings, strategies as st

from npusim.timing import L2Cache
from test_l2_cache import SOC, LineLRU

# a table of 96 rows of 1 to 3 lines: an index page of 8 lines holds a few rows, an access
# takes up to 12 of them (a scatter's piece), in row order, or evenly spaced (a run whose
# very lines are read again is refreshed in place)
row_set_st = st.one_of(
    st.lists(st.integers(0, 95), min_size=1, max_size=12, unique=True).map(sorted),
    st.tuples(st.integers(0, 20), st.integers(1, 6), st.integers(1, 12)).map(
        lambda t: [t[0] + i * t[1] for i in range(t[2]) if t[0] + i * t[1] < 96]))


def row_ranges(rows, width, pitch):
    """The line ranges of ``rows`` of ``width`` lines at ``pitch`` lines, joined where they
    touch (as row_lines gives them), and the evenly spaced form when they are."""
    lo, hi = [], []
    for r in rows:
        a = r * pitch
        if hi and hi[-1] == a:
            hi[-1] = a + width
        else:
            lo.append(a)
            hi.append(a + width)
    lo, hi = np.array(lo, np.int64), np.array(hi, np.int64)
    reg = None
    if len(lo) > 1 and (np.diff(lo) == lo[1] - lo[0]).all() and (hi - lo == width).all():
        reg = (int(lo[0] % (lo[1] - lo[0])), int(lo[1] - lo[0]), width)
    return lo, hi, reg


def check_masks(cache):
    """Every index entry of a run of ranges is the bit mask of its lines in that page (or
    -1, any line, for a run that keeps none), and a run with lines in a page is there."""
    P = cache.PAGE
    held = {}
    for s, run in cache.runs.items():
        if len(run) == 3:
            continue
        rid = cache.rid[s]
        for a, b in zip(list(run[3]), list(run[4])):
            for ln in range(a, b):
                held.setdefault((rid, ln // P), 0)
                held[(rid, ln // P)] |= 1 << (ln % P)
    for (rid, p), mask in held.items():
        assert rid in cache.mpages.get(p, {})
    for p, page in cache.mpages.items():
        for rid, m in page.items():
            assert m == -1 and rid not in cache.masked or m == held.get((rid, p), 0)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(row_set_st, st.booleans()), min_size=1, max_size=40),
       st.sampled_from([(1, 2), (2, 2), (2, 3), (3, 5)]), st.sampled_from([8, 64]),
       st.sampled_from([48, 200]))
def test_scattered_rows_behave_like_a_per_line_lru(accesses, shape, page, capacity):
    width, pitch = shape
    soc = replace(SOC, l2_size=capacity * 512)
    fast, ref = L2Cache(soc), LineLRU(capacity)
    fast.PAGE = page
    for rows, write in accesses + accesses[::-1]:
        lo, hi, reg = row_ranges(rows, width, pitch)
        lines = [ln for a, b in zip(lo.tolist(), hi.tolist()) for ln in range(a, b)]
        got = fast.access_lines(lo, hi, write, reg)
        assert got == (*ref.touch_lines(lines, write), 0)
        assert fast.size == len(ref.d)
        check_masks(fast)
    resident, dirty = set(), set()
    for s, run in fast.runs.items():
        ranges = zip(list(run[3]), list(run[4]), list(run[5])) if len(run) > 3 else [
            (s, run[0], run[1])]
        for a, b, d in ranges:
            resident |= set(range(a, b))
            dirty |= set(range(a, b)) if d else set()
    assert resident == set(ref.d)
    assert dirty == {ln for ln, d in ref.d.items() if d}
    # the recency order is a per-line LRU's: the live recency entries, oldest first, list
    # the lines in the reference's order
    order = []
    for stamp, s in sorted(set(fast.entries())):     # (an entry may be pushed twice)
        run = fast.runs.get(s)
        if run is None or run[2] != stamp:
            continue                                  # stale
        ranges = zip(list(run[3]), list(run[4])) if len(run) > 3 else [(s, run[0])]
        order.extend(ln for a, b in ranges for ln in range(a, b))
    assert order == list(ref.d)
