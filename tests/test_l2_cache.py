"""The run-based L2 model against a plain per-line LRU cache (write-back, write-allocate)."""
from collections import OrderedDict
from dataclasses import replace

from hypothesis import given, settings, strategies as st

from npusim import get_soc
from npusim.timing import L2Cache

SOC = replace(get_soc("Ascend910B1"), l2_size=64 * 512,   # 64 lines, plain write-back
              l2_sector_bytes=0,                       # of 512 B, filled whole
              l2_write_through_when_full=False)


class LineLRU:
    def __init__(self, lines, line=512):
        self.cap, self.line, self.d = lines, line, OrderedDict()

    def access(self, addr, span, write):
        a, b = addr // self.line, (addr + max(span, 1) - 1) // self.line + 1
        return self.touch_lines(range(a, b), write)

    def touch_lines(self, lines, write):
        """Touch ``lines`` in order: (fraction of them that hit, bytes written back)."""
        hits = wb = 0
        for ln in lines:
            if ln in self.d:
                hits += 1
                self.d.move_to_end(ln)
                self.d[ln] = self.d[ln] or write
            else:
                self.d[ln] = write
        while len(self.d) > self.cap:
            _, dirty = self.d.popitem(last=False)
            wb += self.line if dirty else 0
        return hits / len(lines), wb


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200 * 512), st.integers(1, 40 * 512), st.booleans()),
                min_size=1, max_size=60), st.sampled_from([1, 3, 64]))
def test_runs_behave_like_a_per_line_lru(accesses, page):
    fast, ref = L2Cache(SOC), LineLRU(64)
    fast.PAGE = page          # runs spanning many index pages, or none
    for addr, span, write in accesses:
        hit, wb, through = fast.access(addr, span, write)
        assert through == 0 and (hit, wb) == ref.access(addr, span, write)
        assert fast.size == len(ref.d)
    resident = {ln for s, (e, _, _) in fast.runs.items() for ln in range(s, e)}
    assert resident == set(ref.d)
    assert {ln for s, (e, dirty, _) in fast.runs.items() if dirty for ln in range(s, e)} == \
        {ln for ln, d in ref.d.items() if d}
    # the page index lists exactly the runs touching each page (by run id), and the ids
    # name the resident runs one to one
    assert sorted(fast.rid) == sorted(fast.runs)
    assert {fast.rstart[r]: r for r in fast.rstart} == fast.rid
    pages = {}
    for s, (e, _, _) in fast.runs.items():
        for p in range(s // page, (e - 1) // page + 1):
            pages.setdefault(p, set()).add(s)
    assert pages == {p: {fast.rstart[r] for r in ids} for p, ids in fast.index().items()}
    assert all(len(ids) == len({fast.rstart[r] for r in ids}) for ids in fast.index().values())
    # a page lists its runs in address order (found by bisection)
    assert all([fast.rstart[r] for r in ids] == sorted(fast.rstart[r] for r in ids)
               for ids in fast.pages.values())


def test_streaming_reads_miss_and_rereads_hit():
    c = L2Cache(SOC)
    assert c.access(0, 8192, False) == (0.0, 0, 0)
    assert c.access(4096, 4096, False) == (1.0, 0, 0)
    assert c.access(0, 64 * 512, True)[1] == 0          # fills the cache, nothing dirty out
    assert c.access(64 * 512, 512, False) == (0.0, 512, 0)  # evicts one dirty line


def test_write_through_once_full():
    c = L2Cache(replace(SOC, l2_write_through_when_full=True))
    assert c.access(0, 32 * 512, True) == (0.0, 0, 0)              # room: write-back
    assert c.access(32 * 512, 64 * 512, False)[1] == 32 * 512      # reads evict the dirty half
    assert c.access(200 * 512, 2 * 512, True) == (0.0, 0, 2 * 512)  # full: written through
    assert not any(dirty for _, dirty, _ in c.runs.values())              # nothing left dirty
