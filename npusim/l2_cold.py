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
"""
from __future__ import annotations

#: lines per bitmap chunk (a Python int of this many bits): a row of a few lines costs one
#: chunk, a contiguous read of a MiB (8192 lines of 128 B) 16
CHUNK_BITS = 9
CHUNK = 1 << CHUNK_BITS
#: calls logged at most: the next one hands the log to the cache (a launch of millions of
#: small copies would otherwise hold a log of them all, ~150 B each, until its end)
LOG_KEEP = 1 << 17


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

    def materialize(self):
        """Replay the logged calls into the cache; from now on every call is the cache's.
        Returns the cache."""
        cache = self.cache
        if self.log is not None:
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
        return cache

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
        transfer then makes the access itself."""
        log = self.log
        if log is None or len(rows) > self.rows_in_python or len(log) >= LOG_KEEP:
            return None
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

    def invalidate(self, addr: int, span: int) -> None:
        """:meth:`L2Cache.invalidate`."""
        if len(self.log) >= LOG_KEEP:
            return self.materialize().invalidate(addr, span)
        line = self.line
        self.log.append(("invalidate", (addr, span)))
        self.size -= self._drop(addr // line, (addr + max(span, 1) - 1) // line + 1)

    def invalidate_lines(self, lo, hi) -> None:
        """:meth:`L2Cache.invalidate_lines`."""
        if len(self.log) >= LOG_KEEP:
            return self.materialize().invalidate_lines(lo, hi)
        self.log.append(("invalidate_lines", (lo, hi)))
        if type(lo) is not list:
            lo, hi = lo.tolist(), hi.tolist()
        for a, b in zip(lo, hi):
            self.size -= self._drop(a, b)

    def access_many(self, addrs, span: int) -> list:
        """:meth:`L2Cache.access_many`, by the cache."""
        return self.materialize().access_many(addrs, span)
