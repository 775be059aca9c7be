"""npusim.l2_cold.ColdL2 against the L2Cache it stands in for: every call returns the same
values, and the cache it hands over (once an access might fill it, or at the end) is the
very cache the same calls leave, runs, recency, dirty lines and index alike; a row set's
lines given as lists (as the replay gives a few rows') or as arrays."""
from dataclasses import replace

import numpy as np
from hypothesis import given, settings, strategies as st

from npusim import l2_cold
from npusim.l2_cold import CHUNK, ColdL2
from npusim.timing import L2Cache, _arrays, _row_lines
from test_l2_cache import SOC
from test_l2_row_masks import row_ranges


def state(cache: L2Cache):
    """Everything an L2Cache keeps, comparable (runs of ranges in their array form)."""
    runs = sorted((s, *(tuple(np.asarray(v).tolist()) if isinstance(v, (list, np.ndarray))
                        else v for v in (_arrays(list(r)) if len(r) > 3 else r)))
                  for s, r in cache.runs.items())
    return (cache.size, cache.clock, cache.next_id, runs, sorted(cache.entries()),
            sorted((p, sorted(d.items())) for p, d in cache.mpages.items()),
            sorted(cache.pages.items()), sorted(cache.rid.items()),
            sorted((k, list(v)) for k, v in cache.mtouched.items()), sorted(cache.masked))


# calls: a contiguous access, a row set (rows of 1-3 lines at a pitch of 2-5, some crossing
# a bitmap chunk), or an invalidation of either
op_st = st.one_of(
    st.tuples(st.just("access"), st.integers(0, 3 * CHUNK * 128), st.integers(0, 40 * 128),
              st.booleans()),
    st.tuples(st.just("rows"), st.lists(st.integers(0, 3 * CHUNK // 5), min_size=1,
                                        max_size=12, unique=True).map(sorted),
              st.sampled_from([(1, 2), (2, 2), (2, 3), (3, 5)]), st.booleans()),
    st.tuples(st.just("invalidate"), st.integers(0, 3 * CHUNK * 128), st.integers(1, 20 * 128),
              st.just(False)),
    st.tuples(st.just("invalidate_rows"), st.lists(st.integers(0, 3 * CHUNK // 5), min_size=1,
                                                   max_size=12, unique=True).map(sorted),
              st.just((2, 3)), st.just(False)))


def call(cache, op, lists=False):
    """Make call ``op`` on ``cache``; ``lists``: a row set's lines as lists of ints (as the
    replay passes a few rows'), not arrays."""
    kind, a, b, write = op
    if kind == "access":
        return cache.access(a, b, write)
    if kind == "invalidate":
        return cache.invalidate(a, b)
    lo, hi, reg = row_ranges(a, *b)
    if lists:
        lo, hi = lo.tolist(), hi.tolist()
    if kind == "rows":
        return cache.access_lines(lo, hi, write, reg)
    return cache.invalidate_lines(lo, hi)


@settings(max_examples=200, deadline=None)
@given(st.lists(op_st, min_size=1, max_size=40), st.sampled_from([40, 200, 4 * CHUNK]),
       st.booleans(), st.booleans(), st.sampled_from([3, l2_cold.CHUNK_BITS]), st.booleans(),
       st.sampled_from([5, l2_cold.LOG_KEEP]))
def test_cold_l2_is_the_cache(ops, capacity, sectors, through, chunk_bits, lists, log_keep):
    soc = replace(SOC, l2_size=capacity * 128, l2_sector_bytes=128 if sectors else 0,
                  l2_write_through_when_full=through)
    cold, ref = ColdL2(L2Cache(soc)), L2Cache(soc)
    kept = l2_cold.CHUNK_BITS, l2_cold.CHUNK, l2_cold.LOG_KEEP
    # chunks of 8 lines: rows and ranges across a chunk's edge at every turn; a log of 5
    # calls: handed over after the fifth whatever the capacity
    l2_cold.CHUNK_BITS, l2_cold.CHUNK, l2_cold.LOG_KEEP = chunk_bits, 1 << chunk_bits, log_keep
    try:
        for op in ops:
            # the rows as lists to the stand-in (and to the cache it hands over to), as
            # arrays to the reference
            assert call(cold, op, lists) == call(ref, op)
            if cold.log is not None:
                assert cold.size == ref.size
    finally:
        l2_cold.CHUNK_BITS, l2_cold.CHUNK, l2_cold.LOG_KEEP = kept
    answered = cold.log is not None
    assert state(cold.materialize()) == state(ref)
    if len(ops) > log_keep:
        assert not answered
    elif capacity == 4 * CHUNK and not sectors:
        # nothing could fill it (at most 3 chunks of lines touched): all answered from the
        # bitmap, none by the cache
        assert answered


def test_cold_l2_hands_over_when_an_access_might_fill_it():
    soc = replace(SOC, l2_size=10 * 128, l2_sector_bytes=128)
    cold, ref = ColdL2(L2Cache(soc)), L2Cache(soc)
    for c in (cold, ref):
        assert c.access(0, 6 * 128, True) == (0.0, 0, 0)
    assert cold.log is not None and cold.cache.size == 0      # not made yet
    # 6 resident + 5 touched > 10: the cache is made, and evicts
    assert cold.access(3 * 128, 5 * 128, False) == ref.access(3 * 128, 5 * 128, False)
    assert cold.log is None and cold.access == cold.cache.access
    assert state(cold.cache) == state(ref)


# a transfer's rows: runs of (byte offset, row bytes, pitch, count), rows that may share
# lines, overlap, cross a chunk's edge or cover one range together
runs_st = st.lists(st.tuples(st.integers(0, 600 * 128), st.integers(0, 700),
                             st.integers(1, 900), st.integers(1, 4)), min_size=1, max_size=5)


def answer(got):
    """An access_rows result with a deferred hit fraction (a write answered later, its
    box filled by ColdL2.settle) as the hit fraction itself."""
    return got if got is None or type(got[0]) is not list else (got[0][0], *got[1:])


def transfer_rows(cache, addr, rows, write):
    """The L2 access npusim.timing._Memory.transfer makes for rows without a cold L2."""
    lo, hi, reg = _row_lines(addr, rows, cache.line)
    if len(lo) == 1:
        a, b = int(lo[0]), int(hi[0])
        return cache.access(a * cache.line, (b - a) * cache.line, write)
    return cache.access_lines(lo, hi, write, reg)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4 * CHUNK * 128), runs_st, st.booleans()),
                min_size=1, max_size=30),
       st.sampled_from([60, 400, 8 * CHUNK]), st.sampled_from([3, l2_cold.CHUNK_BITS]))
def test_cold_l2_access_rows_is_the_transfers_access(accesses, capacity, chunk_bits):
    soc = replace(SOC, l2_size=capacity * 128, l2_sector_bytes=128)
    cold, ref = ColdL2(L2Cache(soc), _row_lines), L2Cache(soc)
    kept = l2_cold.CHUNK_BITS, l2_cold.CHUNK
    l2_cold.CHUNK_BITS, l2_cold.CHUNK = chunk_bits, 1 << chunk_bits
    answered = 0
    results = []
    try:
        for addr, rows, write in accesses:
            rows = tuple(rows)
            got = cold.access_rows(addr, rows, write)
            if got is None:                 # the transfer's own access, as it makes it
                got = transfer_rows(cold, addr, rows, write)
            else:
                answered += 1
            results.append((got, transfer_rows(ref, addr, rows, write)))
        assert state(cold.materialize()) == state(ref)      # (settles what is deferred)
    finally:
        l2_cold.CHUNK_BITS, l2_cold.CHUNK = kept
    assert [answer(got) for got, _ in results] == [want for _, want in results]
    if capacity == 8 * CHUNK:
        assert answered == len(accesses)    # nothing could fill it


def test_cold_l2_access_rows_leaves_many_rows_to_the_transfer():
    """More than ROWS_IN_PYTHON rows: None, nothing logged or made resident (the transfer
    then takes row_lines' numpy form to access_lines)."""
    soc = replace(SOC, l2_size=4096 * 128, l2_sector_bytes=128)
    cold = ColdL2(L2Cache(soc), _row_lines)
    many = L2Cache.ROWS_IN_PYTHON + 1
    for rows in (((0, 128, 256, many),), ((0, 128, 256, many - 1), (99 * 256, 128, 256, 2))):
        assert cold.access_rows(0, rows, True) is None
    assert cold.log == [] and cold.size == 0 and not cold.held
    assert cold.access_rows(0, ((0, 128, 256, many - 1),), True) == (0.0, 0, 0)
    assert cold.size == many - 1


def test_cold_l2_hands_over_a_long_log(monkeypatch):
    """The call past LOG_KEEP logged ones hands the log over, whatever the call."""
    monkeypatch.setattr(l2_cold, "LOG_KEEP", 2)
    soc = replace(SOC, l2_size=4096 * 128, l2_sector_bytes=128)
    lines = np.array([0, 8], np.int64), np.array([2, 10], np.int64)
    for last in (lambda c: c.access(0, 512, True),
                 lambda c: c.access_lines(*lines, False),
                 lambda c: c.access_rows(0, ((0, 256, 1024, 2),), True),
                 lambda c: c.invalidate(0, 256),
                 lambda c: c.invalidate_lines(*lines)):
        cold, ref = ColdL2(L2Cache(soc), _row_lines), L2Cache(soc)
        for c in (cold, ref):
            c.access(4096, 256, True)
            c.access(8192, 256, False)
        assert cold.log is not None
        got = last(cold)
        if got is None:                     # access_rows: the transfer makes the access
            got = transfer_rows(cold, 0, ((0, 256, 1024, 2),), True)
            want = transfer_rows(ref, 0, ((0, 256, 1024, 2),), True)
        else:
            want = last(ref)
        assert cold.log is None
        assert got == want and state(cold.cache) == state(ref)


# a scatter's rows: one run each, mostly in address order (the form access_rows takes
# without a dict), some out of order or crossing a chunk's edge
scatter_st = st.lists(st.tuples(st.integers(0, 600 * 128), st.integers(1, 300)),
                      min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4 * CHUNK * 128), scatter_st, st.booleans(),
                          st.booleans()), min_size=1, max_size=30),
       st.sampled_from([3, l2_cold.CHUNK_BITS]))
def test_cold_l2_access_rows_of_a_scatter_is_the_transfers_access(accesses, chunk_bits):
    soc = replace(SOC, l2_size=8 * CHUNK * 128, l2_sector_bytes=128)
    cold, ref = ColdL2(L2Cache(soc), _row_lines), L2Cache(soc)
    kept = l2_cold.CHUNK_BITS, l2_cold.CHUNK
    l2_cold.CHUNK_BITS, l2_cold.CHUNK = chunk_bits, 1 << chunk_bits
    results = []
    try:
        for addr, rows, write, ordered in accesses:
            rows = sorted(rows) if ordered else rows
            rows = tuple((off, n, n, 1) for off, n in rows)
            got = cold.access_rows(addr, rows, write)
            assert got is not None
            results.append((got, transfer_rows(ref, addr, rows, write)))
        assert state(cold.materialize()) == state(ref)
    finally:
        l2_cold.CHUNK_BITS, l2_cold.CHUNK = kept
    assert [answer(got) for got, _ in results] == [want for _, want in results]


# every kind of call, scatters written among them: contiguous accesses, row sets as lines,
# invalidations, and transfers' rows read or written (scatters, and runs of several rows)
mixed_st = st.one_of(
    op_st,
    st.tuples(st.just("transfer"), st.integers(0, 4 * CHUNK * 128), runs_st, st.booleans()),
    st.tuples(st.just("transfer"), st.integers(0, 4 * CHUNK * 128),
              scatter_st.map(lambda rs: [(off, n, n, 1) for off, n in sorted(rs)]),
              st.just(True)))


@settings(max_examples=300, deadline=None)
@given(st.lists(mixed_st, min_size=1, max_size=40), st.sampled_from([60, 400, 8 * CHUNK]),
       st.sampled_from([3, l2_cold.CHUNK_BITS]), st.sampled_from([0, l2_cold.KEY_BITS]))
def test_cold_l2_deferred_scatter_writes_are_the_caches_answers(ops, capacity, chunk_bits,
                                                                key_bits):
    """Scatter writes answered later (ColdL2.settle, before any call on their lines or that
    might fill the cache) return what the cache returns for each call in turn, and leave
    the cache the calls leave; with the lines sorted by one key or two."""
    soc = replace(SOC, l2_size=capacity * 128, l2_sector_bytes=128)
    cold, ref = ColdL2(L2Cache(soc), _row_lines), L2Cache(soc)
    kept = l2_cold.CHUNK_BITS, l2_cold.CHUNK, l2_cold.KEY_BITS
    l2_cold.CHUNK_BITS, l2_cold.CHUNK, l2_cold.KEY_BITS = chunk_bits, 1 << chunk_bits, key_bits
    results = []
    deferred = 0
    try:
        for op in ops:
            if op[0] == "transfer":
                _, addr, rows, write = op
                rows = tuple(rows)
                got = cold.access_rows(addr, rows, write)
                if got is None:
                    got = transfer_rows(cold, addr, rows, write)
                elif type(got[0]) is list:
                    deferred += 1
                results.append((got, transfer_rows(ref, addr, rows, write)))
            else:
                results.append((call(cold, op), call(ref, op)))
        assert state(cold.materialize()) == state(ref)
    finally:
        l2_cold.CHUNK_BITS, l2_cold.CHUNK, l2_cold.KEY_BITS = kept
    assert [answer(got) for got, _ in results] == [want for _, want in results]
    if capacity == 8 * CHUNK and any(op[0] == "transfer" and op[3] and all(
            r[3] == 1 for r in op[2]) for op in ops):
        assert deferred                     # a scatter written while nothing could fill


def test_cold_l2_scatter_writes_that_might_fill_it_are_the_caches():
    """Scatter writes whose lines would not all fit: the one that might fill the cache is
    made by the cache (the pending ones settled first), which then evicts; a write of the
    first scatter's rows again finds them evicted, as the cache says."""
    soc = replace(SOC, l2_size=40 * 128, l2_sector_bytes=128)
    cold, ref = ColdL2(L2Cache(soc), _row_lines), L2Cache(soc)
    results = []
    for i in list(range(6)) + [0]:      # 6 scatters of 8 lines each, then the first again
        rows = tuple((2048 * r, 256, 256, 1) for r in range(4))
        got = cold.access_rows(100_000 * i, rows, True)
        if got is None:
            got = transfer_rows(cold, 100_000 * i, rows, True)
        results.append((got, transfer_rows(ref, 100_000 * i, rows, True)))
    assert cold.log is None                 # handed over to the cache
    assert [answer(got) for got, _ in results] == [want for _, want in results]
    assert results[-1][1][0] == 0.0         # evicted
    assert state(cold.cache) == state(ref)
