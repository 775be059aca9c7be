"""The L2 of a replay that starts cold and is dropped at its end, answered from a bitmap of
the resident lines for as long as nothing can leave it.

A replay without an L2 to start from (:func:`npusim.timing.simulate` with ``l2=None``, every
launch on a device) starts with an empty :class:`npusim.timing.L2Cache` and nobody reads it
after the replay. While the lines it holds plus those an access touches fit in its
capacity, nothing is evicted and no write goes through to HBM, so what each access returns
(:meth:`L2Cache.access`, :meth:`L2Cache.access_lines`) depends only on which lines are
resident: the fraction of its lines found there, 0 bytes written back, 0 bytes written
through. :class:`ColdL2` answers those accesses from a bit per line (Python ints, one per
chunk of :data:`CHUNK` lines) and keeps a log of them; the first access that might fill the
cache, a call past :data:`LOG_KEEP` logged ones, or any other call, replays the log into
the real L2Cache (the same calls in the same
order: the very runs, recencies and dirty lines the replay would have made) and hands
every later call to it. The results are those of the L2Cache to the bit; a launch that
fills its L2 pays the bitmap's work on top of the cache's, a few per cent of it.

Why: the recency, dirtiness and run structure an L2Cache keeps cost a transfer of
scattered rows (a scatter's 16 rows of 2 lines, each meeting half a dozen runs it cuts)
~10^2 microseconds of Python; a line's residency costs a few bit operations.

A scatter's write (rows of one run each, an embedding's flushed rows) is not even answered
at once: its hit fraction counts only in msprof's write hit / miss bytes, which are summed
at the end, so the writes wait (:meth:`ColdL2._defer`) and are answered together with numpy
(:meth:`ColdL2.settle`) before any call on the lines they lie in, any call that might fill
the cache with them, the hand-over, or the end of the replay. Each row then costs a few
tuple operations in the replay instead of its bit masks.
"""
from __future__ import annotations

from itertools import chain

import numpy as np

#: lines per bitmap chunk (a Python int of this many bits): a row of a few lines costs one
#: chunk, a contiguous read of a MiB (8192 lines of 128 B) 16
CHUNK_BITS = 9
CHUNK = 1 << CHUNK_BITS
#: calls logged at most: the next one hands the log to the cache (a launch of millions of
#: small copies would otherwise hold a log of them all, ~150 B each, until its end)
LOG_KEEP = 1 << 17
#: Answer a scatter's write later, with the other pending ones (:meth:`ColdL2.settle`); the
#: results are the same either way (tests compare the two)
DEFER_WRITES = True
#: :meth:`ColdL2.settle` sorts a write's lines by one int64 key (line and write) when their
#: spread times the writes fits in this many bits, else by two keys (the same order)
KEY_BITS = 62


def _chunk_masks(a: int, b: int):
    """The chunks lines [a, b) lie in, each with the bit mask of those lines in it."""
    while a < b:
        c = a >> CHUNK_BITS
        base = c << CHUNK_BITS
        e = b if b < base + CHUNK else base + CHUNK
        yield c, ((1 << (e - a)) - 1) << (a - base)
        a = e


def _ranges_masks(lo: list, hi: list):
    """:func:`_chunk_masks` of each range ``[lo[i], hi[i])``, in turn."""
    bits = CHUNK_BITS
    for a, b in zip(lo, hi):
        c = a >> bits
        if (b - 1) >> bits == c:            # a row within one chunk (nearly all)
            yield c, ((1 << (b - a)) - 1) << (a - (c << bits))
        else:
            yield from _chunk_masks(a, b)


class ColdL2:
    """A stand-in for an empty :class:`npusim.timing.L2Cache` (``cache``) that nobody reads
    but through its access methods: :meth:`access`, :meth:`access_lines`,
    :meth:`invalidate` and :meth:`invalidate_lines` answer from the bitmap while nothing
    can be evicted; :meth:`access_many` and any access that might fill the cache first
    make ``cache`` what the logged calls leave (:meth:`materialize`), then call it."""

    def __init__(self, cache, row_lines=None):
        self.cache = cache
        self.row_lines = row_lines     # npusim.timing._row_lines, for access_rows' log
        self.line = cache.line
        self.capacity = cache.capacity
        self.rows_in_python = cache.ROWS_IN_PYTHON
        self.size = 0                  # resident lines
        self.held: dict = {}           # chunk -> bit mask of its resident lines
        self.log: list | None = []     # (method name, args) of the calls answered here
        # row writes answered later, all at once (:meth:`settle`): (addr, row offsets, row
        # bytes, box of the hit fraction); the lines they lie in, [p_lo, p_hi); and at most
        # how many lines they make resident
        self.pending: list = []
        self.p_lo = self.p_hi = self.p_bound = 0

    def materialize(self):
        """Replay the logged calls into the cache; from now on every call is the cache's.
        Returns the cache."""
        cache = self.cache
        if self.log is not None:
            self.settle()
            log, self.log, self.held = self.log, None, None
            for name, args in log:
                if name == "rows":
                    self._rows_to(cache, *args)
                else:
                    getattr(cache, name)(*args)
            # later calls go to the cache itself (instance attributes shadow the methods)
            self.access = cache.access
            self.access_lines = cache.access_lines
            self.invalidate = cache.invalidate
            self.invalidate_lines = cache.invalidate_lines
            self.access_many = cache.access_many
            self.access_same = cache.access_same
        return cache

    def access_same(self, start: int, end: int, write: bool, reg):
        """:meth:`L2Cache.access_same`: None (no run is made before the cache is)."""
        return None

    def _touch(self, a: int, b: int) -> int:
        """Make lines [a, b) resident; return how many were already."""
        return self._hold(_chunk_masks(a, b))

    def _hold(self, found) -> int:
        """Make the lines of ``found`` resident ((chunk, bit mask) pairs of disjoint lines);
        return how many were already."""
        held = self.held
        get = held.get
        hits = 0
        for c, m in found:
            h = get(c)
            if h is None:
                held[c] = m
            else:
                hits += (h & m).bit_count()
                held[c] = h | m
        return hits

    def _drop(self, a: int, b: int) -> int:
        """Lines [a, b) leave; return how many were resident."""
        held = self.held
        gone = 0
        for c, m in _chunk_masks(a, b):
            h = held.get(c)
            if h:
                gone += (h & m).bit_count()
                held[c] = h & ~m
        return gone

    def access(self, addr: int, span: int, write: bool) -> tuple[float, int, int]:
        """:meth:`L2Cache.access`."""
        line = self.line
        a, b = addr // line, (addr + max(span, 1) - 1) // line + 1
        n = b - a
        if self.pending:
            self._before(a, b, n)
        if self.size + n > self.capacity or len(self.log) >= LOG_KEEP:
            return self.materialize().access(addr, span, write)
        self.log.append(("access", (addr, span, write)))
        hits = self._touch(a, b)
        self.size += n - hits
        return hits / n, 0, 0

    def access_lines(self, lo, hi, write: bool, reg=None) -> tuple[float, int, int]:
        """:meth:`L2Cache.access_lines` (``lo``, ``hi``: int64 arrays or lists of ints)."""
        if len(lo) > self.rows_in_python or len(self.log) >= LOG_KEEP:
            return self.materialize().access_lines(lo, hi, write, reg)
        lo_l, hi_l = (lo, hi) if type(lo) is list else (lo.tolist(), hi.tolist())
        total = sum(hi_l) - sum(lo_l)
        if self.pending and lo_l:
            self._before(min(lo_l), max(hi_l), total)
        if self.size + total > self.capacity:
            return self.materialize().access_lines(lo, hi, write, reg)
        self.log.append(("access_lines", (lo, hi, write, reg)))
        hits = self._hold(_ranges_masks(lo_l, hi_l))
        self.size += total - hits
        return hits / total, 0, 0

    def access_rows(self, addr: int, rows: tuple, write: bool):
        """The L2 access of a transfer of a few ``rows`` (runs of (byte offset from ``addr``,
        row bytes, pitch, count); None for more than ``ROWS_IN_PYTHON`` rows) through L2, as
        :meth:`npusim.timing._Memory.transfer` makes it: :meth:`L2Cache.access_lines` of
        the lines they touch (:func:`npusim.timing.row_lines`), or :meth:`L2Cache.access`
        of the one range they make. Their lines are found here row by row, as bit masks by
        chunk (rows that share a line share its bit), not as sorted ranges first. Returns
        (hit fraction, 0, 0), or None when the cache might fill (or has been made): the
        transfer then makes the access itself.

        A write of rows of one run each (a scatter) may be answered later: its hit fraction
        is then a one-item list that :meth:`settle` fills (before any call that touches its
        lines, or might fill the cache, is answered; :meth:`materialize` settles first)."""
        log = self.log
        if log is None or len(rows) > self.rows_in_python or len(log) >= LOG_KEEP:
            return None
        if write and rows and DEFER_WRITES:
            got = self._defer(addr, rows)
            if got is not None:
                return got
        line = self.line
        bits = CHUNK_BITS
        low = CHUNK - 1
        # a scatter's rows (one run each, in address order, each within a chunk): their
        # chunks come in order, so each chunk's mask is made as they pass, with no dict
        found = []                      # (chunk, bit mask of the transfer's lines in it)
        total = 0
        cur = -1
        mask = 0
        for off, row, pitch, count in rows:
            if count != 1 or row < 1:
                break
            a = addr + off
            lo = a // line
            n = (a + row - 1) // line + 1 - lo
            c = lo >> bits
            if c != cur:
                if c < cur or (lo + n - 1) >> bits != c:
                    break
                if mask:
                    found.append((cur, mask))
                    total += mask.bit_count()
                cur = c
                mask = ((1 << n) - 1) << (lo & low)
            elif (lo + n - 1) >> bits != c:
                break
            else:
                mask |= ((1 << n) - 1) << (lo & low)
        else:
            if mask:
                found.append((cur, mask))
                total += mask.bit_count()
            return self._take(found, total, addr, rows, write)
        lines: dict = {}                # chunk -> bit mask of the transfer's lines
        get = lines.get
        left = self.rows_in_python      # rows still to take (more: row_lines' numpy form)
        for off, row, pitch, count in rows:
            left -= count
            if left < 0:
                return None
            if row < 1:
                row = 1
            a = addr + off
            for i in range(count):
                lo = (a + i * pitch) // line
                hi = (a + i * pitch + row - 1) // line + 1
                c = lo >> bits
                if (hi - 1) >> bits == c:       # within a chunk (nearly all rows)
                    lines[c] = get(c, 0) | (((1 << (hi - lo)) - 1) << (lo & low))
                    continue
                for c, m in _chunk_masks(lo, hi):
                    lines[c] = get(c, 0) | m
        total = 0
        for m in lines.values():
            total += m.bit_count()
        return self._take(lines.items(), total, addr, rows, write)

    def _take(self, found, total: int, addr: int, rows: tuple, write: bool):
        """:meth:`access_rows`' access of ``total`` lines, given as (chunk, bit mask) pairs
        ``found``, each chunk once: (hit fraction, 0, 0), or None when the cache might
        fill."""
        if self.pending and total:
            cs = [c for c, _ in found]
            self._before(min(cs) << CHUNK_BITS, (max(cs) + 1) << CHUNK_BITS, total)
        if not total or self.size + total > self.capacity:
            return None
        self.log.append(("rows", (addr, rows, write)))
        hits = self._hold(found)
        self.size += total - hits
        return hits / total, 0, 0

    def _rows_to(self, cache, addr: int, rows: tuple, write: bool) -> None:
        """:meth:`access_rows`' access, made on ``cache``."""
        line = self.line
        lo, hi, reg = self.row_lines(addr, rows, line)
        if len(lo) == 1:
            a, b = int(lo[0]), int(hi[0])
            cache.access(a * line, (b - a) * line, write)
        else:
            cache.access_lines(lo, hi, write, reg)

    def _defer(self, addr: int, rows: tuple):
        """:meth:`access_rows` of a write of ``rows`` of one run each, answered later: the
        write is logged and its rows kept for :meth:`settle`; returns ([None], 0, 0), the
        list the hit fraction goes in. None when the rows are of another form, or when
        they and the pending writes might fill the cache (the access is then made now).

        Why it is the same: nothing leaves a cold L2, so a write's hits are the lines of
        its rows that an earlier call made resident. The pending writes are settled before
        any call on lines they lie in ([p_lo, p_hi)), so the calls made meanwhile touch
        none of their lines, and settling them in their order finds what answering each at
        once would have found. ``p_bound`` bounds the lines they make resident, so a call
        whose lines might not fit with them settles them first and finds the exact size."""
        offs, rws, _, counts = zip(*rows)
        n = len(offs)
        if counts.count(1) != n:
            return None
        line = self.line
        # each row touches at most ceil((row - 1) / line) + 1 lines (a row of 0 bytes, 1)
        longest = max(rws)
        bound = n * ((longest + line - 2) // line + 1) if longest > 1 else n
        if self.size + self.p_bound + bound > self.capacity:
            return None
        # the rows lie within [lo, hi) (the longest row after the last offset's)
        lo = (addr + min(offs)) // line
        hi = (addr + max(offs) + max(longest, 1) - 1) // line + 1
        if self.pending:
            lo, hi = min(lo, self.p_lo), max(hi, self.p_hi)
        box = [None]
        self.pending.append((addr, offs, rws, box))
        self.p_lo, self.p_hi = lo, hi
        self.p_bound = min(self.p_bound + bound, hi - lo)
        self.log.append(("rows", (addr, rows, True)))
        return box, 0, 0

    def _before(self, a: int, b: int, n: int) -> None:
        """Settle the pending writes before a call on lines [a, b) that makes at most ``n``
        lines resident, if it touches the lines they lie in or might not fit with them."""
        if (a < self.p_hi and b > self.p_lo) or self.size + self.p_bound + n > self.capacity:
            self.settle()

    def settle(self) -> None:
        """Answer the pending writes (:meth:`_defer`), in their order, with numpy over all of
        their rows: each one's hit fraction (the lines of its rows resident before it,
        from earlier calls or earlier pending writes, over its distinct lines) goes in its
        box, and their lines become resident."""
        pending = self.pending
        if not pending:
            return
        self.pending = []
        self.p_lo = self.p_hi = self.p_bound = 0
        bits, size = CHUNK_BITS, CHUNK
        line = self.line
        w = len(pending)
        lens = [len(p[1]) for p in pending]
        nrows = sum(lens)
        a = np.repeat(np.fromiter([p[0] for p in pending], np.int64, w), lens) + np.fromiter(
            chain.from_iterable([p[1] for p in pending]), np.int64, nrows)
        rws = np.maximum(np.fromiter(chain.from_iterable([p[2] for p in pending]), np.int64,
                                     nrows), 1)
        lines = a // line
        k = (a + rws - 1) // line + 1 - lines
        wid = np.repeat(np.arange(w), lens)
        if (k > 1).any():               # every line of each row: its first line + 0, 1, ...
            lines = np.repeat(lines - (np.cumsum(k) - k), k) + np.arange(int(k.sum()))
            wid = np.repeat(wid, k)
        # each write's distinct lines, by line then write: a line's first write finds it
        # resident if an earlier call made it so, every later write finds it resident
        low = int(lines.min())
        if (int(lines.max()) - low + 1) * w < 1 << KEY_BITS:    # one int64 key, sorted
            key = (lines - low) * w + wid
            key.sort()
            lines, wid = key // w + low, key % w
        else:
            order = np.lexsort((wid, lines))
            lines, wid = lines[order], wid[order]
        keep = np.ones(len(lines), bool)
        keep[1:] = (lines[1:] != lines[:-1]) | (wid[1:] != wid[:-1])
        lines, wid = lines[keep], wid[keep]
        first = np.ones(len(lines), bool)
        first[1:] = lines[1:] != lines[:-1]
        # the chunks' bit masks as bits: resident before, then with the writes' lines
        chunks, inv = np.unique(lines >> bits, return_inverse=True)
        chunks = chunks.tolist()
        held = self.held
        nb = size // 8
        resident = np.unpackbits(np.frombuffer(b"".join(
            [held.get(c, 0).to_bytes(nb, "little") for c in chunks]), np.uint8),
            bitorder="little")
        at = inv * size + (lines & (size - 1))
        was = resident[at].astype(bool)
        hits = np.bincount(wid[was | ~first], minlength=w).tolist()
        totals = np.bincount(wid, minlength=w).tolist()
        self.size += int(np.count_nonzero(first & ~was))
        resident[at] = 1
        packed = np.packbits(resident, bitorder="little").tobytes()
        for i, c in enumerate(chunks):
            held[c] = int.from_bytes(packed[i * nb:(i + 1) * nb], "little")
        for p, h, t in zip(pending, hits, totals):
            p[3][0] = h / t

    def invalidate(self, addr: int, span: int) -> None:
        """:meth:`L2Cache.invalidate`."""
        if len(self.log) >= LOG_KEEP:
            return self.materialize().invalidate(addr, span)
        line = self.line
        a, b = addr // line, (addr + max(span, 1) - 1) // line + 1
        if self.pending:
            self._before(a, b, 0)
        self.log.append(("invalidate", (addr, span)))
        self.size -= self._drop(a, b)

    def invalidate_lines(self, lo, hi) -> None:
        """:meth:`L2Cache.invalidate_lines`."""
        if len(self.log) >= LOG_KEEP:
            return self.materialize().invalidate_lines(lo, hi)
        lo_l, hi_l = (lo, hi) if type(lo) is list else (lo.tolist(), hi.tolist())
        if self.pending and lo_l:
            self._before(min(lo_l), max(hi_l), 0)
        self.log.append(("invalidate_lines", (lo, hi)))
        for a, b in zip(lo_l, hi_l):
            self.size -= self._drop(a, b)

    def access_many(self, addrs, span: int) -> list:
        """:meth:`L2Cache.access_many`, by the cache."""
        return self.materialize().access_many(addrs, span)
