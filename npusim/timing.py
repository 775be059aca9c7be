"""The timing model: a discrete-event replay of the instructions each core recorded.

Model (the parameters live in the SoC preset, :mod:`npusim.soc`):

* Each block runs on a physical core (block ``b`` on core ``b % cores``; extra blocks run
  in later waves on the same core). Within a core every pipe (PIPE_S, PIPE_V, PIPE_MTE2,
  PIPE_MTE3, ...) executes its own instructions in program order, concurrently with the
  other pipes. A mixed launch replays each AIC and each AIV as a core of its own, all at
  once: their pipes are separate, GM, L2 and HBM shared as between any cores.
* Sync edges are the flags: a SET on its source pipe fires when the pipe reaches it (all
  earlier work of that pipe is done); a WAIT blocks its pipe until the flag is set, then
  clears it. Queue hand-offs (EnQue/DeQue, FreeTensor/AllocTensor) are flags too.
  PipeBarrier(PIPE_ALL) joins every pipe of the core. A cross-core flag is an event between
  cores: a CrossCoreSetFlag record (key ``("xset", ((event, sets needed), ...))``) adds one
  set to each counter update it takes part in, which fires once it has all its sets (mode 2
  from the AIVs needs both); the CrossCoreWaitFlag (on PIPE_S, key ``event``) waits for it.
  A SyncAll joins every pipe of the blocks (or of the cores its key lists) that reach it.
* A vector or scalar instruction busies its pipe for its cost in cycles
  (:mod:`npusim.ascendc.vector`); so do the cube's (:mod:`npusim.ascendc.cube`): LoadData
  on PIPE_MTE1 (bytes / the L1 -> L0 rate + a head), Mmad on PIPE_M (one cycle per 16 x 16
  output fractal and k step + a head), Fixpipe L0C -> L1 on PIPE_FIX. GM -> L1 copies are
  DMA on PIPE_MTE2 and Fixpipe L0C -> GM a DMA write on PIPE_FIX, costed like UB copies.
* The MTE issue model (docs/calibration.md "The MTE issue model"): a DMA's own time on
  its core is ``mte_issue_cycles`` plus the larger of its bursts at the MTE's request rate
  (``mte_burst_cycles`` through L2, ``mte_burst_bypass_cycles`` around it, x
  ``aic_mte_burst_factor`` on an AIC) and its bytes at the per-core ini rate of the path
  (``ddr_read_rate`` for HBM reads, ``l2_read_rate`` for L2 hits, ``ddr_write_rate`` for
  writes; docs/reference/hardware.md §1.6). A row is moved as the bursts of the 512 B
  blocks (``mte_burst_bytes``) it touches: a row off that grid touches a block more than
  its length needs, and moves it whole (its core and HBM spend a block's time on it; A2
  only, §2); a read of such rows that misses costs HBM its blocks whole, the sector
  at a row's edge that L2 holds from the neighbouring columns' copy included. An MTE issues its next DMA once a DMA's bytes are through; the DMA completes
  ``dma_latency_cycles`` (MTE2) or ``dma_write_latency_cycles`` (MTE3) after its own time
  at the earliest, so the latencies of back-to-back copies overlap (copies in flight); a
  flag set on the pipe, a barrier and the pipe's end wait for the copies in flight.
* Between the cores and HBM sits an L2 cache of ``l2_size`` bytes (LRU over the
  ``l2_sector_bytes`` sectors of its ``l2_line_bytes`` lines, cold at the start of each
  launch). A transfer touches the lines
  of the bytes it moves: a strided copy's record carries its rows (key ``(address, span,
  bypass, runs)``, :func:`npusim.ascendc.datacopy.gm_key`), and only the lines the rows
  touch are read or written, not those between rows. Reads that hit are served
  at L2 rates; reads that miss come from HBM and are allocated; writes are allocated in L2
  (write-back) and reach HBM only when a dirty line is evicted, through the HBM write
  queue. A GlobalTensor with ``SetL2CacheHint(CACHE_MODE_DISABLE)`` bypasses L2 both ways.
* The transfers in flight share the device's paths (:class:`_Memory`): the interconnect
  between the cores and L2/HBM (``noc_bandwidth``), the L2 (``l2_bandwidth``) and HBM
  (``hbm_bandwidth``, less while reads and writes mix), reads first, then writes in what
  the reads leave; the HBM write queue drains in write batches above its high mark. One
  core is latency- and rate-bound; many cores together are bound by HBM for reads that
  miss, by the interconnect when their reads and writes together fill it. Reads of the
  same GM bytes from HBM by several cores at once are served one at a time: together they
  get ``same_address_bandwidth``.

Consecutive vector or scalar instructions without a sync between them are costed as one
timeout, so the replay costs a few events per tile, not per instruction.

The replay runs on its own event loop (:class:`_Loop`), which handles events in the order a
simpy ``Environment`` does — by time, then priority (a process starting before other
events of its instant), then the order they were scheduled — with the same events: a
process per pipe per core, one per core for its waves of blocks, and the memory system's
recompute and wake-up processes. Equal times are frequent (flag hand-offs, transfers that
start together and reach L2 in that order), so the order is part of the result; the loop
gives results bit-identical to a simpy replay of the same model (tests/test_replay_identity
compares digests of both on a set of launches) at a fraction of the cost per event.

A launch whose blocks are the members of one lockstep group, in step, replays as one
(:mod:`npusim.group_replay`): one process per pipe and one event per step for the group,
every member's transfer still made on the memory system in block order, with the same
results; where the members fall out of step, the launch replays block by block.

A block-by-block replay from a cold L2 (``l2=None``) answers the L2 from a bitmap of its
resident lines for as long as nothing can leave it (:mod:`npusim.l2_cold`: each access
then returns the fraction of its lines resident and nothing written back or through),
and hands a log of its accesses to an :class:`L2Cache` the first time an access might
fill it: the same results, without the recency and run bookkeeping a launch that never
fills its L2 does not need.

A launch that records what a recent launch recorded (same kernel and tiling, whatever the
data, on the same GM addresses or on others the replay cannot tell apart, see
:func:`_relocated_key`) takes that launch's kept timing instead of a second replay
(:data:`REPLAY_MEMO`): from a cold L2 the replay is a function of the records, the SoC and
its options alone.
"""
from __future__ import annotations

import gc
import hashlib
import heapq
import io
import itertools
import math
import pickle
import zlib
from bisect import bisect_left, bisect_right
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from itertools import chain, compress as _compress, repeat as _repeat
from operator import (itemgetter, le as _le, lt as _lt, mul as _mul, sub as _sub,
                      truediv as _truediv)

import numpy as np

from npusim.ascendc.core import BARRIER, DMA_IN, DMA_OUT, OP, SET, WAIT
from npusim.ascendc.types import Pipe
from npusim.errors import SyncError
from npusim.lockstep import _PER_MEMBER

#: Pipes reported in every profile, in msprof's order.
PROFILE_PIPES = (Pipe.PIPE_MTE2, Pipe.PIPE_V, Pipe.PIPE_MTE3, Pipe.PIPE_S)
#: Pipes reported for a cube-core (AIC) launch.
AIC_PROFILE_PIPES = (Pipe.PIPE_MTE2, Pipe.PIPE_MTE1, Pipe.PIPE_M, Pipe.PIPE_FIX, Pipe.PIPE_S)
#: Pipes reported for a mixed (AIC + AIV) launch.
MIX_PROFILE_PIPES = PROFILE_PIPES + (Pipe.PIPE_MTE1, Pipe.PIPE_M, Pipe.PIPE_FIX)


@dataclass
class KernelTiming:
    """Result of one replay. Times are in cycles of the SoC clock.

    Attributes:
        cycles: from the first instruction to the last, over all cores.
        block_start, block_end: per block (array of len blockDim).
        pipe_busy: pipe -> array of busy cycles per block (waits excluded, but for a
            unitFlag Fixpipe's waits for units, which msprof counts as FIX time).
        spans: per block, a list of ``(pipe, start, end, label, record_index)`` when spans
            were kept (one per instruction; ``record_index`` indexes the block's records).
        hbm_bytes: bytes the launch moved to or from HBM (L2 misses, write-backs, bypasses).
        l2_hit_bytes: bytes read from L2 hits.
        l2_bytes: the L2's traffic by kind of core, bytes: ``(read hit, read miss, write
            hit, write miss)`` of the vector cores (and coupled AI cores), then the same four
            of the cube cores; copies that bypass L2 are in none of them (the profile's
            msprof L2 columns, :mod:`npusim.profiling`).
    """

    cycles: float
    block_start: np.ndarray
    block_end: np.ndarray
    pipe_busy: dict
    spans: list | None = field(default=None, repr=False)
    hbm_bytes: float = 0.0
    l2_hit_bytes: float = 0.0
    l2_bytes: tuple = (0.0,) * 8


#: Event priorities, as simpy orders them: at one instant a process starts (URGENT) before
#: any other event (NORMAL) is handled; events of one priority in the order they were made.
#: LATE: after every other event of its instant (the memory system's rate sharing,
#: :meth:`_Memory._rates`).
_URGENT, _NORMAL, _LATE = 0, 1, 2
_INF = float("inf")
#: Fields of a group of flows in :class:`_Memory` (flows with the same limit, weights and
#: class): limit, the three weights, in the reads' class, flows, rate, still rising.
_GLIMIT, _GW0, _GW1, _GW2, _GREAD, _GN, _GRATE, _GON, _GEFF, _GHOT, _GKEY = range(11)
#: Fields of a flow in flight in :class:`_Memory`.
_FLIMIT, _FWEIGHT, _FREAD, _FDIR, _FDONE, _FHOT = range(6)
_w1 = itemgetter(_GW1)
_fdone = itemgetter(_FDONE)
_gkey = itemgetter(_GEFF, _GW0, _GW1, _GW2, _GREAD, _GN)
_grate = itemgetter(_GRATE)

#: Keep the rate sharings :meth:`_Memory._fill` computed, by their inputs: a launch's flows
#: fall into a few compositions again and again (tens of thousands of sharings, a few
#: thousand distinct in an EmbeddingDenseBackward launch), and a sharing is a function of
#: its inputs alone, so a kept one is the same to the bit (tests compare the two). They are
#: kept for one replay (cleared as each starts): the reuse is within a launch, and a store
#: kept across launches gains the compositions of every new launch for as long as a
#: program runs (``benchmarks/bench_soak.py``: about 0.1 MiB of RSS per 1000 launches).
FILL_MEMO = True
#: the kept sharings: inputs -> (each group's rate, in the groups' order; capacity left)
_FILL_KEPT: dict = {}
_FILL_KEEP = 1 << 16
#: sharings a replay computes before it judges whether the kept ones come back often
#: enough to be worth their keys: found at least half as often as computed
_FILL_TRIAL = 2048
#: sums of one HBM weight repeated (:func:`_heavy_sum`): (weight, count) -> sum
_REPEATED: dict = {}
#: Share the memory system's capacities once per instant, after its last change
#: (:meth:`_Memory._recompute`), not at every change; the same results (tests compare the
#: two)
LATE_RATES = True

#: Keep whole replays by what they replay: a launch that records what an earlier one
#: recorded (the same kernel on the same tensors, a training loop's every step, or the
#: same launch on tensors allocated anew, :func:`_relocated_key`) gets the earlier timing
#: without a second replay. A replay from a cold L2 is a function of the records, the SoC
#: and the replay's options alone, so the kept timing is the same to the bit (tests
#: compare the two). Kept (:class:`_KeptReplays`): the most recently used replays, at most
#: ``REPLAY_KEEP_ENTRIES`` of them of at most ``REPLAY_KEEP_RECORDS`` records in all
#: (a lockstep group's shared ones once: :func:`_key_size`), the least recently used
#: forgotten first. Each is kept as its timing under a 16-byte digest of its records
#: (:func:`_digest`), not the records themselves: a few KiB each without spans, so that a
#: launch whose records change with its data (indices), which leaves a replay per call
#: that is seldom asked for again, keeps about a MiB at most.
REPLAY_MEMO = True
REPLAY_KEEP_RECORDS = 1 << 17
REPLAY_KEEP_ENTRIES = 256
#: Launches with more transfers than this are kept by their exact GM addresses (finding
#: the address-free form costs a sort of the transfers, see :func:`_relocated_key`).
RELOCATE_MAX_TRANSFERS = 1 << 16


class _Event:
    """Something processes wait for: when it fires, its callbacks run in the order they
    were added."""

    __slots__ = ("callbacks",)

    def __init__(self):
        self.callbacks = []


def _fire(event: _Event) -> None:
    callbacks, event.callbacks = event.callbacks, None
    for callback in callbacks:
        callback(None)


class _Loop:
    """The replay's discrete-event loop.

    Events are handled in the order of ``(time, priority, sequence)`` — the order of a simpy
    ``Environment`` (https://simpy.readthedocs.io, ``Environment.schedule``/``step``), which
    the replay's results depend on at equal times (flag hand-offs, the order in which
    transfers reach L2). A queue entry is ``(time, priority, sequence, fn, arg)``: handling
    it calls ``fn(arg)``. A process is a generator resumed by ``send(None)``; it schedules
    its own wake-up (a timeout, or a callback on an :class:`_Event`) before it yields, and
    starts with an URGENT entry, as a simpy process does. The end of a process that nothing
    waits for is not an event here: leaving it out changes no other event's order.
    """

    __slots__ = ("now", "queue", "seq")

    def __init__(self):
        self.now = 0
        self.queue: list = []
        self.seq = itertools.count()

    def schedule(self, delay, priority: int, fn, arg) -> None:
        """Call ``fn(arg)`` ``delay`` cycles from now."""
        heapq.heappush(self.queue, (self.now + delay, priority, next(self.seq), fn, arg))

    def succeed(self, event: _Event) -> None:
        """Fire ``event`` at this instant, after the events already scheduled for it."""
        heapq.heappush(self.queue, (self.now, _NORMAL, next(self.seq), _fire, event))

    def start(self, gen) -> None:
        """Start the process ``gen`` (a generator) at this instant."""
        heapq.heappush(self.queue, (self.now, _URGENT, next(self.seq), gen.send, None))

    def run(self) -> None:
        queue, pop = self.queue, heapq.heappop
        while queue:
            self.now, _, _, fn, arg = pop(queue)
            fn(arg)


class _AllOf(_Event):
    """Fires once all of ``events`` have fired."""

    __slots__ = ("loop", "count")

    def __init__(self, loop, events):
        super().__init__()
        self.loop, self.count = loop, len(events)
        for event in events:
            event.callbacks.append(self._check)

    def _check(self, _) -> None:
        self.count -= 1
        if not self.count:
            self.loop.succeed(self)


class _Flag:
    """A flag's sets not yet consumed, and the processes waiting for it (each as the
    callable that resumes it), first come first served."""

    __slots__ = ("count", "waiters")

    def __init__(self):
        self.count = 0
        self.waiters = []

    def set(self, loop):
        if self.waiters:
            # the waiter resumes at this instant, after the events already scheduled for
            # it (as a simpy event that succeeds)
            heapq.heappush(loop.queue, (loop.now, _NORMAL, next(loop.seq), self.waiters.pop(0),
                                        None))
        else:
            self.count += 1

    def wait(self, resume) -> bool:
        """Consume a set, or queue ``resume`` (and return True: the caller waits)."""
        if self.count:
            self.count -= 1
            return False
        self.waiters.append(resume)
        return True


def _flag(flags: dict, key) -> _Flag:
    """The flag ``key`` of a block, created on first use."""
    flag = flags.get(key)
    if flag is None:
        flag = flags[key] = _Flag()
    return flag


class _CrossCoreEvents:
    """The counter updates of a launch's cross-core flags: each fires (is set, once) when
    all the CrossCoreSetFlags it needs have fired."""

    def __init__(self, loop):
        self.loop = loop
        self.flags: dict = {}
        self.sets: dict = {}

    def contribute(self, events) -> None:
        for event, needed in events:
            got = self.sets.get(event, 0) + 1
            self.sets[event] = got
            if got == needed:
                _flag(self.flags, event).set(self.loop)

    def wait(self, event, resume) -> bool:
        return _flag(self.flags, event).wait(resume)


class _Barrier:
    __slots__ = ("loop", "parties", "arrived", "event")

    def __init__(self, loop, parties):
        self.loop, self.parties, self.arrived, self.event = loop, parties, 0, _Event()

    def arrive(self):
        self.arrived += 1
        if self.arrived == self.parties:
            self.loop.succeed(self.event)
        return self.event


def _range_arrays(lo, hi, dirt):
    """Line ranges ``[lo[i], hi[i])`` and their dirtiness as a run of ranges keeps them,
    with the number of lines they hold: arrays (int64, int64, bool) as they are, lists of
    Python ints and bools as lists too (:func:`_arrays` converts them when numpy is
    needed: most runs of a few rows are cut or replaced before, by the Python paths)."""
    if type(lo) is list:
        return lo, hi, dirt, sum(map(_sub, hi, lo))
    return lo, hi, dirt, int((hi - lo).sum())


def _arrays(run: list) -> list:
    """The run of ranges ``run`` with its ranges and dirtiness as numpy arrays (int64,
    int64, bool), converted in place when it keeps them as lists (:func:`_range_arrays`)."""
    if type(run[3]) is list:
        run[3] = np.array(run[3], np.int64)
        run[4] = np.array(run[4], np.int64)
        run[5] = np.array(run[5], bool)
    return run


class L2Cache:
    """L2 residency of GM lines, LRU, write-back and write-allocate.

    With ``soc.l2_write_through_when_full``, a write that finds the cache full is also
    written on to HBM at once (its lines stay resident, clean): write-back while the cache
    has room, write-through under replacement pressure (docs/calibration.md).

    Lines of ``l2_line_bytes`` (512 B on C220, docs/reference/hardware.md §1.6 [S]) are kept as
    runs of consecutive lines that share one recency stamp and one dirty flag, so that a
    streaming transfer of many lines costs a few operations, not one per line. The result
    is exactly that of a per-line LRU cache (tests compare the two).

    Runs are found through pages of :attr:`PAGE` lines: each page lists (by a run id that
    outlives changes of the run's start) the runs that touch it, so finding the runs a
    transfer overlaps costs the same however many runs are resident (a sorted list of run
    starts costs a memmove of the whole list per change), and cutting lines out of a run
    re-indexes the lines cut and the smaller piece left, not the whole run (a transfer
    that streams through a large resident run costs its own pages, not the run's).
    A page keeps its runs of one range (:attr:`pages`) in address order: they never share
    a line, so their order stays that of their starts when a start moves (a run loses
    lines at its head, never past the next run), and a transfer finds those it overlaps
    by bisection (a page of 64 one-line runs, each left by a copy of its own, costs a few
    comparisons, not 64). The runs of several ranges, whose extents interleave with
    other runs, are kept in sets apart (:attr:`mpages`). A run of a few ranges (made
    with Python lists) also keeps its lines as a bit mask per page, in that page's entry
    of :attr:`mpages`: the scattered rows of a gather or scatter share pages with many
    runs and lines with few, and a lookup compares the masks before the ranges, reading
    them with the page's runs (a dict lookup per run and page less).
    """

    #: lines per index page: a page lists the runs touching it
    PAGE = 64
    #: row sets of at most this many ranges are cut and indexed with Python ints and lists
    #: (numpy costs a microsecond or more per call, a cut tens of calls: more than a loop
    #: over a few dozen ranges); larger ones with numpy over the ranges
    ROWS_IN_PYTHON = 64

    def __init__(self, soc):
        # residency by sector: a miss fills the 128 B sectors it touches, not the 512 B line
        self.line = int(getattr(soc, "l2_sector_bytes", 0) or soc.l2_line_bytes)
        self.capacity = max(1, int(soc.l2_size) // self.line)
        self.size = 0                      # resident lines
        self.runs: dict[int, list] = {}    # start line -> [end, dirty, stamp]
        self.pages: dict[int, list] = {}   # page -> ids of the one-range runs touching it,
                                           # in address order
        self.mpages: dict[int, dict] = {}  # page -> id of each run of ranges touching it
                                           # -> bit mask of the lines it holds there (bit
                                           # i: line P * page + i; -1: not kept, any line)
        self.rid: dict[int, int] = {}      # start line -> run id
        self.rstart: dict[int, int] = {}   # run id -> start line
        self.mtouched: dict[int, list] = {}  # id of a run of ranges -> the pages it is in
        self.rlists: dict[int, tuple] = {}  # id of a run of ranges -> its lo, hi, dirty as
                                            # lists, when it was made from lists (a cut in
                                            # Python reads them without converting arrays)
        self.masked: set = set()           # ids of the runs whose :attr:`mpages` entries
                                           # are bit masks: a lookup passes over a run that
                                           # shares a page but no line with a transfer's rows
        self.next_id = 0
        # the recency entries (stamp, start), stale ones skipped when they come up: those
        # made in order (each at or above the last, nearly all: a new run takes the clock)
        # in a deque, sorted, the others in a heap; the least recent is the lesser head
        # (a heap of millions of entries costs a microsecond or more per pop, a deque
        # nothing: a launch of small copies evicts a run per copy once L2 is full)
        self.recent: deque = deque()
        self.heap: list[tuple[int, int]] = []
        self.clock = 0
        self.write_through_when_full = bool(getattr(soc, "l2_write_through_when_full", False))

    def _push(self, stamp: int, start: int) -> None:
        """A recency entry for the run at ``start``."""
        entry = (stamp, start)
        recent = self.recent
        if not recent or entry >= recent[-1]:
            recent.append(entry)
        else:
            heapq.heappush(self.heap, entry)

    def _least(self):
        """The least recent entry (it may be stale), left in place."""
        heap, recent = self.heap, self.recent
        if recent and (not heap or recent[0] <= heap[0]):
            return recent[0]
        return heap[0]

    def _pop(self):
        """The least recent entry (it may be stale), taken out."""
        heap, recent = self.heap, self.recent
        if recent and (not heap or recent[0] <= heap[0]):
            return recent.popleft()
        return heapq.heappop(heap)

    def entries(self) -> list:
        """Every recency entry, sorted (for tests)."""
        return sorted([*self.heap, *self.recent])

    def _add(self, start: int, end: int, dirty: bool, stamp: int) -> None:
        """A new run of lines [start, end)."""
        self.runs[start] = [end, dirty, stamp]
        self._push(stamp, start)
        self.size += end - start
        self._new_id(start, end)

    def _touched(self, lo, hi, reg=None) -> list:
        """The pages the line ranges ``[lo[i], hi[i])`` touch, in order (a row set's rows
        are far apart: its extent's pages are many more). ``lo``, ``hi``: lists or arrays;
        ``reg``: their form when they are equal and evenly spaced (:func:`row_lines`): at
        a pitch of whole pages, each range within a page, they touch every pitch's page.

        The ranges are sorted and disjoint, so the pages of range i are at or after those
        of range i - 1 (its last line is before range i's first): dropping a page equal to
        the one before it dedupes them, a sort is not needed."""
        P = self.PAGE
        a, b = int(lo[0]), int(hi[-1])
        if (b - 1) // P - a // P < len(lo):
            return list(range(a // P, (b - 1) // P + 1))
        if reg is not None and not reg[1] % P and a % P + reg[2] <= P:
            return list(range(a // P, (b - 1) // P + 1, reg[1] // P))
        if type(lo) is list or len(lo) <= self.ROWS_IN_PYTHON:
            if type(lo) is not list:
                lo, hi = lo.tolist(), hi.tolist()
            out = []
            last = -1
            for l, h in zip(lo, hi):
                f, e = l // P, (h - 1) // P
                if f <= last:
                    f = last + 1
                if f <= e:
                    out.extend(range(f, e + 1))
                    last = e
            return out
        first, last = lo // P, (hi - 1) // P
        if int((last - first).max()) <= 1:
            pages = np.stack((first, last), axis=1).ravel()     # in order, repeats adjacent
            keep = np.empty(len(pages), bool)
            keep[0] = True
            np.not_equal(pages[1:], pages[:-1], out=keep[1:])
            return pages[keep].tolist()
        return sorted({p for f, l in zip(first.tolist(), last.tolist())
                       for p in range(f, l + 1)})

    def _new_id(self, start: int, end: int, touched=None, masks=None) -> None:
        """Give the run at ``start`` (lines up to ``end``) a new id, in the pages it touches:
        a run of one range in every page from ``start`` to ``end``, at its place in address
        order; a run of ranges (``touched``: the pages its ranges touch) in those pages'
        maps, with its line mask there (``masks``: page -> mask, 0 for a page absent) or
        -1 when ``masks`` is None."""
        self.next_id = rid = self.next_id + 1
        self.rid[start] = rid
        rstart = self.rstart
        rstart[rid] = start
        P = self.PAGE
        if touched is not None:
            self.mtouched[rid] = touched
            mpages = self.mpages
            if masks is None:
                for p in touched:
                    page = mpages.get(p)
                    if page is None:
                        mpages[p] = {rid: -1}
                    else:
                        page[rid] = -1
                return
            for p in touched:
                m = masks.get(p, 0)
                page = mpages.get(p)
                if page is None:
                    mpages[p] = {rid: m}
                else:
                    page[rid] = m
            return
        pages = self.pages
        for p in range(start // P, (end - 1) // P + 1):
            page = pages.get(p)
            if page is None:
                pages[p] = [rid]
            elif rstart[page[-1]] < start:
                page.append(rid)            # the common case: after the page's last run
            else:
                page.insert(bisect_right(page, start, key=rstart.__getitem__), rid)

    def _drop_pages(self, rid: int, lo: int, hi: int, below: bool, above: bool) -> None:
        """Run ``rid`` no longer holds lines [lo, hi): drop it from the pages of those lines,
        except the page of line lo - 1 when it still holds that line (``below``) and the
        page of line hi when it still holds that one (``above``)."""
        pages, P = self.pages, self.PAGE
        first, last = lo // P, (hi - 1) // P
        if below and (lo - 1) // P == first:
            first += 1
        if above and hi // P == last:
            last -= 1
        for p in range(first, last + 1):
            page = pages[p]
            page.remove(rid)
            if not page:
                del pages[p]

    def _remove(self, start: int) -> list:
        """Drop the whole run at ``start``; return it."""
        run = self.runs.pop(start)
        self.size -= run[6] if len(run) > 3 else run[0] - start
        rid = self.rid.pop(start)
        del self.rstart[rid]
        if len(run) > 3:            # a run of ranges is in the pages its ranges touch
            self.rlists.pop(rid, None)
            self.masked.discard(rid)
            pages = self.mpages
            for p in self.mtouched.pop(rid):
                page = pages[p]
                del page[rid]
                if not page:
                    del pages[p]
        else:
            self._drop_pages(rid, start, run[0], False, False)
        return run

    def _put(self, lo, hi, dirt, stamp: int, reg=None, masks=None) -> None:
        """A new run of the lines ``[lo[i], hi[i])`` (sorted, disjoint; ``dirt[i]``: dirty),
        a plain run when they are one range. A run of several ranges is kept as
        ``[end, None, stamp, lo, hi, dirt, lines, reg]`` (numpy arrays; ``reg``: (first line
        mod pitch, pitch, lines) when its ranges are equal and evenly spaced, else None),
        indexed by its extent;
        it is created by one access (or is what is left of one), so runs of one recency
        never interleave and (recency, start) orders lines as a per-line LRU does.
        ``lo``, ``hi``, ``dirt``: arrays, or lists (of ints and bools), kept as arrays.
        ``masks``: for lists, their lines' bit masks by page (:func:`_page_masks`) when
        worked out already."""
        if len(lo) == 1:
            self._add(int(lo[0]), int(hi[0]), bool(dirt[0]), stamp)
            return
        start, end = int(lo[0]), int(hi[-1])
        lists = None
        if type(lo) is list:
            lists = (lo, hi, dirt)
            # the pages its ranges touch are those of its line masks, in order (as
            # :meth:`_touched` lists them), but for a run as dense as _touched's extent
            P = self.PAGE
            if masks is None:
                masks = _page_masks(lo, hi, P)
            touched = (list(masks) if (end - 1) // P - start // P >= 2 * len(lo)
                       else list(range(start // P, (end - 1) // P + 1)))
        else:
            touched = self._touched(lo, hi, reg)
        lo, hi, dirt, n = _range_arrays(lo, hi, dirt)
        self.runs[start] = [end, None, stamp, lo, hi, dirt, n, reg]
        self._push(stamp, start)
        self.size += n
        self._new_id(start, end, touched, masks)
        if lists is not None:
            self.rlists[self.next_id] = lists
            self.masked.add(self.next_id)

    def _ranges(self, starts):
        """The ranges of the runs at ``starts``, sorted: lo, hi, dirty, and the index in
        ``starts`` of each range's run."""
        runs = self.runs
        parts = []
        for k, st in enumerate(starts):
            run = runs[st]
            if len(run) > 3:
                _arrays(run)
                parts.append((run[3], run[4], run[5], np.full(len(run[3]), k)))
            else:
                parts.append(((st,), (run[0],), (bool(run[1]),), (k,)))
        lo = np.concatenate([q[0] for q in parts]).astype(np.int64)
        hi = np.concatenate([q[1] for q in parts]).astype(np.int64)
        dirt = np.concatenate([q[2] for q in parts]).astype(bool)
        own = np.concatenate([q[3] for q in parts]).astype(np.int64)
        if len(parts) > 1:
            order = np.argsort(lo, kind="stable")
            lo, hi, dirt, own = lo[order], hi[order], dirt[order], own[order]
        return lo, hi, dirt, own

    def _cut_ranges(self, starts, a_lo, a_hi):
        """Remove the lines ``[a_lo[i], a_hi[i])`` from the runs at ``starts`` (those that
        may share lines with them): what is left of each run stays, with its recency.
        Returns the removed pieces, sorted: lo, hi, dirty."""
        c_lo, c_hi, c_dirt, own = self._ranges(starts)
        ci, plo, phi = _overlaps(c_lo, c_hi, a_lo, a_hi)
        if not len(ci):
            return plo, phi, np.zeros(0, bool)
        r_lo, r_hi, r_c = _left(c_lo, c_hi, ci, plo, phi)
        whole = np.ones(len(c_lo), bool)            # the ranges no piece was taken from
        whole[ci] = False
        whole = np.flatnonzero(whole)
        r_lo = np.concatenate((c_lo[whole], r_lo))
        r_hi = np.concatenate((c_hi[whole], r_hi))
        r_c = np.concatenate((whole, r_c))
        r_own = own[r_c]
        runs = self.runs
        for k in np.unique(own[ci]).tolist():
            st = starts[k]
            stamp = runs[st][2]
            m = np.flatnonzero(r_own == k)
            self._remove(st)
            if len(m):
                m = m[np.argsort(r_lo[m], kind="stable")]
                self._put(r_lo[m], r_hi[m], c_dirt[r_c[m]], stamp)
        return plo, phi, c_dirt[ci]

    def _cut_rows(self, starts, a_lo: list, a_hi: list, near: dict | None = None) -> list:
        """:meth:`_cut_ranges` of a few ranges (``a_lo``, ``a_hi``: lists of ints), in
        Python: the same runs left, made in the same order, and the removed pieces as a
        sorted list of (lo, hi, dirty). A run is compared with the ranges within its
        extent alone, by bisection into its ranges, and what is left of a run that loses
        lines is its ranges copied in slices around the pieces: a cut costs what it cuts,
        not what the runs it passes near hold. ``near``: run start -> the indices of the
        ranges that share a page with the run (:meth:`_near_rows`), the only ones that can
        share a line with it."""
        runs, rlists, rid_of, masked = self.runs, self.rlists, self.rid, self.masked
        pieces = []
        for st in starts:
            run = runs[st]
            end = run[0]
            if len(run) == 3:
                j = bisect_right(a_hi, st)          # the first range ending past the start
                j1 = bisect_left(a_lo, end, j)      # and those starting before the end
                if j >= j1:
                    continue
                d = bool(run[1])
                r_lo, r_hi = [], []
                pos = st
                for k in range(j, j1):
                    s = a_lo[k] if a_lo[k] > st else st
                    e = a_hi[k] if a_hi[k] < end else end
                    pieces.append((s, e, d))
                    if s > pos:
                        r_lo.append(pos)
                        r_hi.append(s)
                    pos = e
                if pos < end:
                    r_lo.append(pos)
                    r_hi.append(end)
                self._remove(st)
                if r_lo:
                    self._put(r_lo, r_hi, [d] * len(r_lo), run[2])
                continue
            if near is None:
                j = bisect_right(a_hi, st)
                ks = range(j, bisect_left(a_lo, end, j))
            else:
                ks = near[st]
            rid = rid_of[st]
            lists = rlists.get(rid)
            if lists is not None and rid in masked:
                # the run's ranges as lists, its line masks kept: the scattered rows of a
                # scatter, cut a row or two at a time. A range cut whole (the same rows
                # written again) leaves its lists in place, the others' slices unmoved
                c_lo, c_hi, c_d = lists
                n_c = n = len(c_lo)
                i0, i1 = 0, n
                cut = []
                whole = True
                for k in ks:
                    lo, hi = a_lo[k], a_hi[k]
                    i = bisect_right(c_hi, lo)
                    while i < n and c_lo[i] < hi:
                        s, e = c_lo[i], c_hi[i]
                        if s < lo:
                            s = lo
                            whole = False
                        if e > hi:
                            e = hi
                            whole = False
                        cut.append((i, s, e))
                        i += 1
                if not cut:
                    continue
                if whole and n - len(cut) > 1:
                    # the ranges cut whole leave the lists in place; :meth:`_shrink` keeps
                    # the same run, recency, masks and pages
                    for i, s, e in cut:
                        pieces.append((s, e, c_d[i]))
                    for i, _, _ in reversed(cut):
                        del c_lo[i], c_hi[i], c_d[i]
                    self._shrink(st, run, c_lo, c_hi, c_d, cut)
                    continue
            else:
                c_lo, c_hi, c_d = run[3], run[4], run[5]
                n_c = len(c_lo)
                i0, i1 = 0, n_c
                if lists is not None:               # the run's ranges as lists already
                    c_lo, c_hi = lists[0], lists[1]
                else:
                    if n_c > self.ROWS_IN_PYTHON:   # only its ranges within the cut's extent
                        if not ks:
                            continue
                        i0 = int(np.searchsorted(c_hi, a_lo[ks[0]], side="right"))
                        i1 = int(np.searchsorted(c_lo, a_hi[ks[-1]], side="left"))
                        if i0 >= i1:
                            continue
                    c_lo, c_hi = c_lo[i0:i1].tolist(), c_hi[i0:i1].tolist()
                n = i1 - i0
                # the pieces (range index, lo, hi), in address order
                cut = []
                for k in ks:
                    lo, hi = a_lo[k], a_hi[k]
                    i = bisect_right(c_hi, lo)
                    while i < n and c_lo[i] < hi:
                        cut.append((i, c_lo[i] if c_lo[i] > lo else lo,
                                    c_hi[i] if c_hi[i] < hi else hi))
                        i += 1
                if not cut:
                    continue
                c_d = lists[2] if lists is not None else c_d[i0:i1].tolist()
            r_lo, r_hi, r_d = [], [], []            # what is left of the run's ranges
            at = -1                                 # the range being cut, lines from ``pos``
            pos = 0
            for i, s, e in cut:
                if i != at:
                    if at >= 0:
                        if pos < c_hi[at]:
                            r_lo.append(pos)
                            r_hi.append(c_hi[at])
                            r_d.append(c_d[at])
                        at += 1
                    else:
                        at = 0
                    r_lo += c_lo[at:i]              # the ranges between, whole
                    r_hi += c_hi[at:i]
                    r_d += c_d[at:i]
                    at, pos = i, c_lo[i]
                d = c_d[i]
                if s > pos:
                    r_lo.append(pos)
                    r_hi.append(s)
                    r_d.append(d)
                pieces.append((s, e, d))
                pos = e
            if pos < c_hi[at]:
                r_lo.append(pos)
                r_hi.append(c_hi[at])
                r_d.append(c_d[at])
            r_lo += c_lo[at + 1:]
            r_hi += c_hi[at + 1:]
            r_d += c_d[at + 1:]
            if i0 or i1 < n_c:                      # the ranges outside the cut's extent
                r_lo = np.concatenate((run[3][:i0], np.array(r_lo, np.int64), run[3][i1:]))
                r_hi = np.concatenate((run[4][:i0], np.array(r_hi, np.int64), run[4][i1:]))
                r_d = np.concatenate((run[5][:i0], np.array(r_d, bool), run[5][i1:]))
            if len(r_lo) > 1:
                self._shrink(st, run, r_lo, r_hi, r_d, cut)
            else:
                self._remove(st)
                if len(r_lo):
                    self._put(r_lo, r_hi, r_d, run[2])
        pieces.sort()
        return pieces

    def _shrink(self, st: int, run: list, lo, hi, dirt, cut=()) -> None:
        """The run of ranges at ``st`` keeps only the ranges ``[lo[i], hi[i])`` (two or
        more, lists or arrays as :meth:`_put` takes them), in place: the run
        :meth:`_remove` and :meth:`_put` would leave (the same lines, dirtiness, recency
        and start), keeping its id, still listed in the pages of its new extent it was
        listed in (every page its ranges touch among them). ``cut``: the pieces (range
        index, lo, hi) it lost, every line it lost: the pages they touch that its ranges
        no longer touch are dropped too, and its line masks lose their lines."""
        start = int(lo[0])
        rid = self.rid[st]
        lists = type(lo) is list
        if lists:
            self.rlists[rid] = (lo, hi, dirt)
        else:
            self.rlists.pop(rid, None)
        if cut:
            # the lines it lost are those of the pieces cut: no sum over what is left
            n = run[6] - sum([e - s for _, s, e in cut])
        else:
            lo, hi, dirt, n = _range_arrays(lo, hi, dirt)
        self.size += n - run[6]
        run[0] = int(hi[-1])
        run[3], run[4], run[5], run[6], run[7] = lo, hi, dirt, n, None
        if start != st:
            # a new start: keyed anew, with a recency entry of its own (the one at ``st``
            # is stale now, as after a removal)
            del self.runs[st]
            self.runs[start] = run
            del self.rid[st]
            self.rid[start] = rid
            self.rstart[rid] = start
            self._push(run[2], start)
        # its lines are some of those it had: the pages it is listed in still hold every
        # page they touch. Those past its new extent are dropped (a run is listed only in
        # pages of its extent), and those of the pieces cut that no range of it touches
        # now (a page it stays listed in costs a comparison at every lookup there); the
        # other pages are not worked out again (:meth:`_touched` of every range)
        P = self.PAGE
        p0, p1 = start // P, (run[0] - 1) // P
        mpages = self.mpages
        was = self.mtouched[rid]
        gone = set()
        if rid in self.masked and cut:
            for _, s, e in cut:     # its lines there cleared; no line left: page gone
                while s < e:
                    p = s // P
                    base = p * P
                    f = e if e < base + P else base + P
                    page = mpages[p]
                    m = page[rid] & ~(((1 << (f - s)) - 1) << (s - base))
                    page[rid] = m
                    if not m:
                        gone.add(p)
                    s = f
        elif lists:
            # masks made anew (a run that kept none, or no pieces named)
            masks = _page_masks(lo, hi, P)
            self.masked.add(rid)
            for p in was:
                m = masks.get(p, 0)
                mpages[p][rid] = m
                if not m:
                    gone.add(p)
        if was[0] >= p0 and was[-1] <= p1:
            if gone:
                # within its extent still: drop the pages gone alone
                for p in gone:
                    was.remove(p)
                    page = mpages[p]
                    del page[rid]
                    if not page:
                        del mpages[p]
        else:
            keep = []
            for p in was:
                if p0 <= p <= p1 and p not in gone:
                    keep.append(p)
                else:
                    page = mpages[p]
                    del page[rid]
                    if not page:
                        del mpages[p]
            self.mtouched[rid] = keep

    def _drop_head(self, start: int, new_start: int) -> None:
        """The run at ``start`` loses its lines [start, new_start) (fewer than it has): the
        rest keeps the run's id, recency and dirtiness, now starting at ``new_start``."""
        run = self.runs.pop(start)
        self.runs[new_start] = run
        self._push(run[2], new_start)
        self.size -= new_start - start
        rid = self.rid.pop(start)
        self.rid[new_start] = rid
        self.rstart[rid] = new_start
        self._drop_pages(rid, start, new_start, False, True)

    def _drop_tail(self, start: int, new_end: int) -> None:
        """The run at ``start`` loses its lines from ``new_end`` (> start) on."""
        run = self.runs[start]
        self.size -= run[0] - new_end
        self._drop_pages(self.rid[start], new_end, run[0], True, False)
        run[0] = new_end

    def index(self) -> dict:
        """The page index as one map: page -> set of the ids of the runs listed in it (runs
        of one range and of ranges together), for tests and debugging."""
        out = {p: set(ids) for p, ids in self.pages.items()}
        for p, ids in self.mpages.items():
            out.setdefault(p, set()).update(ids)
        return out

    def _overlapping(self, a: int, b: int) -> list[int]:
        """Starts of the resident runs that share a line with [a, b), in address order, and
        of the runs of ranges indexed in its pages whose extent overlaps it."""
        pages, runs, rstart, P = self.pages, self.runs, self.rstart, self.PAGE
        p0, p1 = a // P, (b - 1) // P
        found = []
        for p in range(p0, p1 + 1):
            page = pages.get(p)
            if not page:
                continue
            if p == p0:
                # the runs before the last one starting at or before ``a`` end by it
                i = bisect_right(page, a, key=rstart.__getitem__) - 1
                if i < 0:
                    i = 0
            else:
                # a run from the page before (one at most) is found there already
                i = 1 if rstart[page[0]] < p * P else 0
            for r in page[i:]:
                s = rstart[r]
                if s >= b:
                    break
                if runs[s][0] > a:
                    found.append(s)
        if self.mpages:
            mpages = self.mpages
            multi = set()
            for p in range(p0, p1 + 1):
                page = mpages.get(p)
                if page:
                    multi.update(page)
            if multi:
                starts = [rstart[r] for r in multi]
                found.extend([s for s in starts if s < b and runs[s][0] > a])
                found.sort()
        return found

    def _near_rows(self, lo: list, hi: list, masks: dict | None = None) -> dict:
        """The resident runs that may share a line with the ranges ``[lo[i], hi[i])`` (lists
        of ints; the runs :meth:`_overlapping_rows` finds), as run start -> the indices of
        the ranges that share a page with the run, ascending: a run shares no line with a
        range it shares no page with, however close their extents. ``masks``: an empty
        dict to fill with the ranges' lines as bit masks by page, as :func:`_page_masks`
        gives them (the masks a run made of these ranges keeps: worked out once)."""
        P = self.PAGE
        pages, mpages = self.pages, self.mpages
        by_id: dict = {}
        if masks is None:
            masks = {}
        for k, (l, h) in enumerate(zip(lo, hi)):
            s = l
            while s < h:
                p = s // P
                base = p * P                        # the range's lines in page p, as bits
                e = h if h < base + P else base + P
                want = ((1 << (e - s)) - 1) << (s - base)
                masks[p] = masks.get(p, 0) | want
                s = e
                page = pages.get(p)
                if page:
                    for r in page:
                        ks = by_id.get(r)
                        if ks is None:
                            by_id[r] = [k]
                        elif ks[-1] != k:
                            ks.append(k)
                page = mpages.get(p)
                if page:
                    for r, m in page.items():
                        if m & want:                # a line of the range in common
                            ks = by_id.get(r)
                            if ks is None:
                                by_id[r] = [k]
                            elif ks[-1] != k:
                                ks.append(k)
        a, b = lo[0], hi[-1]
        runs, rstart = self.runs, self.rstart
        out = {}
        for r, ks in by_id.items():
            s = rstart[r]
            if s < b and runs[s][0] > a:
                out[s] = ks
        return out

    def _overlapping_rows(self, lo, hi, reg=None) -> list[int]:
        """Starts of the resident runs that may share a line with the ranges ``[lo[i],
        hi[i])`` (``reg``: their form, :meth:`_touched`), in address order: those indexed
        in the pages the ranges touch."""
        a, b = int(lo[0]), int(hi[-1])
        pages, mpages, runs, rstart = self.pages, self.mpages, self.runs, self.rstart
        touched = self._touched(lo, hi, reg)
        # the ids listed in those pages, gathered by C loops (a transfer of a column tile
        # touches a page per row, each listing a dozen tiles of its row)
        found = set(chain.from_iterable(filter(None, map(pages.get, touched))))
        found.update(chain.from_iterable(filter(None, map(mpages.get, touched))))
        starts = [rstart[r] for r in found]
        return sorted([s for s in starts if s < b and runs[s][0] > a])

    def _cut(self, a: int, b: int) -> list[tuple[int, int, bool]]:
        """Remove lines [a, b) from the runs; return the removed pieces (start, end, dirty).

        A run's head left in place keeps its recency entry; a tail left is a run starting at
        ``b`` with the run's recency (as a per-line LRU keeps each line's)."""
        pieces = []
        runs = self.runs
        found = self._overlapping(a, b)
        multi = [s for s in found if len(runs[s]) > 3]
        if multi:
            found = [s for s in found if len(runs[s]) == 3]
            pieces.extend(self._cut_rows(multi, [a], [b]))
        for s in found:
            e, dirty, stamp = runs[s]
            if s < a:
                if e > b and a - s <= e - b:
                    # head [s, a) and tail [b, e) stay; the tail keeps the id (it is the
                    # larger piece), the head becomes a run of its own at s
                    self._drop_head(s, b)
                    self.size += a - s          # the head's lines stay resident
                    runs[s] = [a, dirty, stamp]  # its recency entry (stamp, s) is still valid
                    self._new_id(s, a)
                else:
                    self._drop_tail(s, a)       # the head stays, in place, with its recency
                    if e > b:
                        self._add(b, e, dirty, stamp)
            elif e > b:
                self._drop_head(s, b)
            else:
                self._remove(s)
            pieces.append((max(s, a), min(e, b), dirty))
        if multi:
            pieces.sort()
        return pieces

    def access(self, addr: int, span: int, write: bool) -> tuple[float, int, int]:
        """Touch ``[addr, addr + span)``.

        Returns:
            (fraction of lines hit, bytes of dirty lines evicted to HBM, bytes of this
            write passed on to HBM because the cache was full).
        """
        a, b = addr // self.line, (addr + max(span, 1) - 1) // self.line + 1
        self.clock += 1
        stamp = self.clock
        runs = self.runs
        run = runs.get(a)
        if run is not None and run[0] == b and len(run) == 3:
            # the range is one resident run (a tile written back where it was read): all
            # hits; the run takes the new recency in place, as cutting it out and adding
            # it back would
            dirty, through = run[1] or write, 0
            if write and self.write_through_when_full and self.size > self.capacity:
                through, dirty = (b - a) * self.line, False
            run[1], run[2] = dirty, stamp
            self._push(stamp, a)
            return 1.0, (self._evict() if self.size > self.capacity else 0), through
        P = self.PAGE
        p = a // P
        if (b - 1) // P == p and p not in self.mpages:
            # within one page that no run of ranges touches (a small copy): the runs it
            # could share a line with are the last one starting at or before ``a`` and the
            # next; if neither does, it is the common case below (all misses, one new run),
            # found and indexed with one bisection (what _cut, _overlapping, _add and
            # _new_id would do, in one place)
            pages, rstart = self.pages, self.rstart
            page = pages.get(p)
            if page is None:
                free = True
            else:
                i = bisect_right(page, a, key=rstart.__getitem__)
                free = not ((i and runs[rstart[page[i - 1]]][0] > a)
                            or (i < len(page) and rstart[page[i]] < b))
            if free:
                through = 0
                if write and self.write_through_when_full and self.size + b - a > self.capacity:
                    through, write = (b - a) * self.line, False
                runs[a] = [b, write, stamp]
                self._push(stamp, a)
                self.size += b - a
                self.next_id = rid = self.next_id + 1
                self.rid[a] = rid
                rstart[rid] = a
                if page is None:
                    pages[p] = [rid]
                else:
                    page.insert(i, rid)
                return 0.0, (self._evict() if self.size > self.capacity else 0), through
        pieces = self._cut(a, b)
        if not pieces:
            # the common case, a range no resident line touches: all misses, one new run
            through = 0
            if write and self.write_through_when_full and self.size + b - a > self.capacity:
                through, write = (b - a) * self.line, False
            self._add(a, b, write, stamp)
            return 0.0, (self._evict() if self.size > self.capacity else 0), through
        # the new runs over [a, b): the misses (dirty if written) and the hits (dirty if they
        # were, or if written), neighbours of equal dirtiness joined
        hits = 0
        pos = a
        merged: list[list] = []
        last = None
        for s, e, dirty in pieces:
            hits += e - s
            if s > pos:                                 # a miss gap before this piece
                if last is not None and last[1] == pos and last[2] == write:
                    last[1] = s
                else:
                    last = [pos, s, write]
                    merged.append(last)
            if e > s:
                d = dirty or write
                if last is not None and last[1] == s and last[2] == d:
                    last[1] = e
                else:
                    last = [s, e, d]
                    merged.append(last)
            pos = e
        if b > pos:                                     # the miss gap after the last piece
            if last is not None and last[1] == pos and last[2] == write:
                last[1] = b
            else:
                merged.append([pos, b, write])
        through = 0
        if write and self.write_through_when_full and self.size + sum(
                e - s for s, e, _ in merged) > self.capacity:
            # the cache is under replacement pressure: the written lines go on to HBM now
            # and stay resident clean
            through = sum(e - s for s, e, _ in merged) * self.line
            merged = [[s, e, False] for s, e, _ in merged]
        for s, e, dirty in merged:
            self._add(s, e, dirty, stamp)
        return hits / (b - a), self._evict(), through

    def access_many(self, addrs, span: int) -> list:
        """:meth:`access` of the reads ``[addr, addr + span)`` for each of ``addrs``, one
        after the other (the members of a lockstep group, :mod:`npusim.group_replay`):
        the same results and the same cache. A read of a few lines past every run of
        its index page (the next copy along a row, nearly every one of a kernel of
        small copies) is all misses and one new run at the page's end, made here in a
        few steps; any other read is :meth:`access`'s."""
        line, P = self.line, self.PAGE
        runs, pages, mpages, rstart, rid_of, recent = (self.runs, self.pages, self.mpages,
                                                       self.rstart, self.rid, self.recent)
        n = span if span > 1 else 1
        cap = self.capacity
        out = []
        # the clock, the size and the next run id as locals, put back before any method
        # that reads or changes them runs
        clock, size, next_id = self.clock, self.size, self.next_id
        for addr in addrs:
            a = addr // line
            b = (addr + n - 1) // line + 1
            p = a // P
            if (b - 1) // P == p and p not in mpages and a not in runs:
                page = pages.get(p)
                if page is None or runs[rstart[page[-1]]][0] <= a:
                    # (the page's runs are in address order and none starts at ``a``: the
                    # last one starts before it, and ends by it)
                    clock += 1
                    runs[a] = [b, False, clock]
                    recent.append((clock, a))   # above every stamp: in order
                    size += b - a
                    next_id += 1
                    rid_of[a] = next_id
                    rstart[next_id] = a
                    if page is None:
                        pages[p] = [next_id]
                    else:
                        page.append(next_id)
                    wb = 0
                    if size > cap:
                        # the least recent run, when it is a clean run of lines that goes
                        # whole, leaves here as :meth:`_evict` would drop it; the rest of
                        # the eviction is :meth:`_evict`'s
                        stamp, s0 = self._least()
                        run = runs.get(s0)
                        if (run is not None and len(run) == 3 and run[2] == stamp
                                and not run[1] and run[0] - s0 <= size - cap):
                            self._pop()
                            e0 = run[0]
                            del runs[s0]
                            size -= e0 - s0
                            rid = rid_of.pop(s0)
                            del rstart[rid]
                            for q in range(s0 // P, (e0 - 1) // P + 1):
                                held = pages[q]
                                if held[0] == rid:
                                    del held[0]
                                else:
                                    held.remove(rid)
                                if not held:
                                    del pages[q]
                        if size > cap:
                            self.clock, self.size, self.next_id = clock, size, next_id
                            wb = self._evict()
                            clock, size, next_id = self.clock, self.size, self.next_id
                    out.append((0.0, wb, 0))
                    continue
            self.clock, self.size, self.next_id = clock, size, next_id
            out.append(self.access(addr, span, False))
            clock, size, next_id = self.clock, self.size, self.next_id
        self.clock, self.size, self.next_id = clock, size, next_id
        return out

    def access_lines(self, lo, hi, write: bool, reg=None) -> tuple[float, int, int]:
        """Touch the lines ``[lo[i], hi[i])`` (int64 arrays, sorted, disjoint, not adjacent:
        the lines a strided transfer's rows cover, :func:`row_lines`; or lists of ints, as
        :func:`_row_lines` gives a few rows' lines, which the cache may keep and change) as
        one access: every
        line takes the same recency, as :meth:`access` gives the lines of one range, and
        a write finding the cache full is written through as a whole. The lines between
        the ranges are not touched. numpy over the ranges: a transfer of thousands of rows
        costs a few array operations per run it meets.

        ``reg``: (first line mod pitch, pitch, lines) when the ranges are equal and evenly
        spaced (:func:`row_lines`): a run of such ranges at the same pitch whose lines fall
        in other residues shares no line with them, and is passed over without comparing
        ranges (the column tiles of one matrix).

        Returns:
            as :meth:`access`, the fraction of hits over the lines touched.
        """
        if reg is not None:
            same = self.access_same(int(lo[0]), int(hi[-1]), write, reg)
            if same is not None:
                return same
        self.clock += 1
        stamp = self.clock
        n_ranges = len(lo)
        near = None
        lists = type(lo) is list
        if lists and n_ranges > self.ROWS_IN_PYTHON:
            lo, hi, lists = np.array(lo, np.int64), np.array(hi, np.int64), False
        if n_ranges <= self.ROWS_IN_PYTHON:
            lo_l, hi_l = (lo, hi) if lists else (lo.tolist(), hi.tolist())
            total = sum(map(_sub, hi_l, lo_l))
            masks = {}
            near = self._near_rows(lo_l, hi_l, masks)
            found = sorted(near)
        else:
            total = int((hi - lo).sum())
            found = self._overlapping_rows(lo, hi, reg)
        if found and reg is not None:
            found = self._apart(found, reg)
            if len(found) == 1:
                run = self.runs[found[0]]
                if len(run) > 3 and run[7] == reg and found[0] == lo[0] and run[0] == hi[-1]:
                    # the very lines of one resident run (a tile another core read): all
                    # hits, the run takes the new recency, as cutting it out and adding it
                    # back would
                    dirt = _arrays(run)[5] | write
                    through = 0
                    if write and self.write_through_when_full and self.size > self.capacity:
                        through, dirt = total * self.line, np.zeros(n_ranges, bool)
                    self._remove(found[0])
                    if lists:
                        lo, hi = np.array(lo, np.int64), np.array(hi, np.int64)
                    self._put(lo, hi, dirt, stamp, reg)
                    return 1.0, (self._evict() if self.size > self.capacity else 0), through
        if near is not None:
            return self._access_rows(lo_l, hi_l, write, reg, found, near, stamp, total, masks)
        hits = 0
        dirt = np.full(len(lo), bool(write))
        if found:
            plo, phi, pd = self._cut_ranges(found, lo, hi)
            hits = int((phi - plo).sum())
            if not write and pd.any():
                # the lines that were dirty stay dirty: split the ranges there
                dlo, dhi = plo[pd], phi[pd]
                ci, qlo, qhi = _overlaps(lo, hi, dlo, dhi)
                r_lo, r_hi, r_c = _left(lo, hi, ci, qlo, qhi)
                keep = np.ones(len(lo), bool)
                keep[ci] = False
                lo = np.concatenate((lo[keep], r_lo, dlo))
                hi = np.concatenate((hi[keep], r_hi, dhi))
                dirt = np.concatenate((np.zeros(len(lo) - len(dlo), bool),
                                       np.ones(len(dlo), bool)))
                order = np.argsort(lo, kind="stable")
                lo, hi, dirt = lo[order], hi[order], dirt[order]
        through = 0
        if write and self.write_through_when_full and self.size + total > self.capacity:
            through = total * self.line
            dirt = np.zeros(len(lo), bool)
        self._put(lo, hi, dirt, stamp, reg if len(lo) == n_ranges else None)
        return hits / total, (self._evict() if self.size > self.capacity else 0), through

    def access_same(self, start: int, end: int, write: bool, reg):
        """:meth:`access_lines` of the evenly spaced ranges ``reg`` (first line mod pitch,
        pitch, lines per range) from line ``start`` to line ``end`` when they are the very
        lines of one resident run (a tile another core read before): its result, and the
        cache changed as it changes it. None when they are not such a run, the cache
        unchanged (the caller then makes the access; :meth:`access_lines` asks this first,
        and a transfer of rows asks it before making their line ranges, which are then not
        needed).

        All hits: the run takes the new recency in place, as cutting it out and adding it
        back would (a per-line LRU touches the same lines). Found by the run's start, not
        through the pages the ranges touch: no other run holds any of these lines, so none
        can share one with them (the pages of a column tile list every other tile of its
        rows: finding the run there costs a set update per row and tile, a launch's larger
        share of replay time as the matrix widens)."""
        run = self.runs.get(start)
        if run is None or len(run) == 3 or run[7] != reg or run[0] != end:
            return None
        # the same start, end and (first line mod pitch, pitch, lines): the same ranges
        self.clock += 1
        stamp = self.clock
        dirt = run[5]
        if type(dirt) is list:
            dirt = _arrays(run)[5]
        if write:
            dirt = dirt | True
        # (a read leaves the dirtiness as it is: the run keeps its array, which nothing
        # changes in place)
        through = 0
        if write and self.write_through_when_full and self.size > self.capacity:
            through, dirt = run[6] * self.line, np.zeros(len(dirt), bool)
        run[2], run[5] = stamp, dirt
        if self.rlists:
            # its dirtiness as a list is stale (its line masks are not: the same lines)
            self.rlists.pop(self.rid[start], None)
        # its recency entry: the clock's newest stamp, in order (:meth:`_push`)
        self.recent.append((stamp, start))
        return 1.0, (self._evict() if self.size > self.capacity else 0), through

    def _access_rows(self, lo: list, hi: list, write: bool, reg, found: list, near: dict,
                     stamp: int, total: int, masks: dict) -> tuple[float, int, int]:
        """The rest of :meth:`access_lines` for a few ranges (lists of ints), in Python:
        the same steps, hits, runs and order. ``masks``: the ranges' lines as bit masks by
        page (:meth:`_near_rows`), those of the run they make (a split at dirty lines
        leaves the same lines)."""
        hits = 0
        n_ranges = len(lo)
        dirt = [bool(write)] * n_ranges
        if found:
            pieces = self._cut_rows(found, lo, hi, near)
            hits = sum([e - s for s, e, _ in pieces])
            if not write and any([d for _, _, d in pieces]):
                # the lines that were dirty stay dirty: split the ranges there
                n_lo, n_hi, dirt = [], [], []
                dirty = [(s, e) for s, e, d in pieces if d]
                k, n_d = 0, len(dirty)
                for a, b in zip(lo, hi):
                    pos = a
                    while k < n_d and dirty[k][0] < b:
                        s, e = dirty[k]
                        if s > pos:
                            n_lo.append(pos)
                            n_hi.append(s)
                            dirt.append(False)
                        n_lo.append(s)
                        n_hi.append(e)
                        dirt.append(True)
                        pos = e
                        k += 1
                    if pos < b:
                        n_lo.append(pos)
                        n_hi.append(b)
                        dirt.append(False)
                lo, hi = n_lo, n_hi
        through = 0
        if write and self.write_through_when_full and self.size + total > self.capacity:
            through = total * self.line
            dirt = [False] * len(lo)
        self._put(lo, hi, dirt, stamp, reg if len(lo) == n_ranges else None, masks)
        return hits / total, (self._evict() if self.size > self.capacity else 0), through

    def _apart(self, starts: list, reg) -> list:
        """``starts`` without the runs of evenly spaced ranges at pitch ``reg[1]`` whose
        lines lie in residues (mod the pitch) other than those of ``reg``'s."""
        r0, pitch, n = reg
        runs = self.runs
        out = []
        for st in starts:
            run = runs[st]
            other = run[7] if len(run) > 3 else None
            if other is not None and other[1] == pitch:
                d = (other[0] - r0) % pitch
                if d >= n and d + other[2] <= pitch:
                    continue                # no residue in common: no line in common
            out.append(st)
        return out

    def _evict(self) -> int:
        wb = 0
        while self.size > self.capacity:
            stamp, start = self._pop()
            run = self.runs.get(start)
            if run is None or run[2] != stamp:
                continue                    # stale recency entry
            if len(run) > 3:
                wb += self._evict_ranges(start, run)
                continue
            end, dirty, _ = run
            n = min(self.size - self.capacity, end - start)
            if n < end - start:             # evict the run's first lines only
                self._drop_head(start, start + n)
            else:
                self._remove(start)
            if dirty:
                wb += n * self.line
        return wb

    def _evict_ranges(self, start: int, run: list) -> int:
        """Evict the first lines of the run of ranges at ``start`` (all of them if the
        cache must lose as many); return the bytes of dirty lines evicted."""
        _, _, stamp, lo, hi, dirt, count, reg = _arrays(run)
        n = min(self.size - self.capacity, count)
        self._remove(start)
        if n == count:
            return int((hi - lo)[dirt].sum()) * self.line
        ends = np.cumsum(hi - lo)
        k = int(np.searchsorted(ends, n, side="right"))    # ranges [0, k) go whole
        cut = n - (int(ends[k - 1]) if k else 0)               # and ``cut`` lines of range k
        wb = int((hi[:k] - lo[:k])[dirt[:k]].sum()) + (cut if dirt[k] else 0)
        lo = lo[k:].copy()
        lo[0] += cut
        self._put(lo, hi[k:], dirt[k:], stamp, None if cut else reg)
        return wb * self.line

    def invalidate(self, addr: int, span: int) -> None:
        """Drop the lines of a range written around the cache."""
        self._cut(addr // self.line, (addr + max(span, 1) - 1) // self.line + 1)

    def invalidate_lines(self, lo, hi) -> None:
        """Drop the lines ``[lo[i], hi[i])`` of rows written around the cache."""
        if type(lo) is list and len(lo) > self.ROWS_IN_PYTHON:
            lo, hi = np.array(lo, np.int64), np.array(hi, np.int64)
        found = self._overlapping_rows(lo, hi)
        if found:
            if type(lo) is list:
                self._cut_rows(found, lo, hi)
            elif len(lo) <= self.ROWS_IN_PYTHON:
                self._cut_rows(found, lo.tolist(), hi.tolist())
            else:
                self._cut_ranges(found, lo, hi)


def _page_masks(lo: list, hi: list, P: int) -> dict:
    """The lines ``[lo[i], hi[i])`` (lists of ints) as bit masks by page of ``P`` lines:
    page -> mask, bit i for line ``P * page + i``."""
    masks: dict = {}
    for s, e in zip(lo, hi):
        p = s // P
        if s < e and (e - 1) // P == p:     # a range within one page (most rows)
            masks[p] = masks.get(p, 0) | (((1 << (e - s)) - 1) << (s - p * P))
            continue
        while s < e:
            p = s // P
            base = p * P
            f = e if e < base + P else base + P
            masks[p] = masks.get(p, 0) | (((1 << (f - s)) - 1) << (s - base))
            s = f
    return masks


def _overlaps(c_lo, c_hi, a_lo, a_hi):
    """The pieces two sets of sorted disjoint ranges share: for each pair of a range of C
    and one of A that overlap, in C's order then A's, the index in C and the piece."""
    j0 = np.searchsorted(a_hi, c_lo, side="right")     # the first A range ending past c
    j1 = np.searchsorted(a_lo, c_hi, side="left")      # the A ranges starting before c's end
    n = np.maximum(j1 - j0, 0)
    ci = np.repeat(np.arange(len(c_lo)), n)
    first = np.cumsum(n) - n
    aj = j0[ci] + np.arange(len(ci)) - first[ci]
    return ci, np.maximum(c_lo[ci], a_lo[aj]), np.minimum(c_hi[ci], a_hi[aj])


def _left(c_lo, c_hi, ci, plo, phi):
    """What is left of the C ranges that lose the pieces (``ci``, ``plo``, ``phi`` from
    :func:`_overlaps`): ranges (lo, hi, index in C), sorted by lo within each C range."""
    last = np.ones(len(ci), bool)
    last[:-1] = ci[1:] != ci[:-1]
    first = np.ones(len(ci), bool)
    first[1:] = last[:-1]
    nxt = np.empty_like(plo)
    nxt[:-1] = plo[1:]
    nxt[last] = c_hi[ci[last]]
    lo = np.concatenate((c_lo[ci[first]], phi))
    hi = np.concatenate((plo[first], nxt))
    c = np.concatenate((ci[first], ci))
    keep = hi > lo
    lo, hi, c = lo[keep], hi[keep], c[keep]
    order = np.lexsort((lo, c))
    return lo[order], hi[order], c[order]


#: line ranges of recent row sets, by (address mod line, line, rows): see :func:`row_lines`
_ROW_LINES: dict = {}
_ROW_LINES_KEEP = 1 << 12


def row_lines(addr: int, rows: tuple, line: int) -> tuple:
    """The L2 lines a transfer's rows touch, as sorted disjoint ranges ``[lo[i], hi[i])``
    of line numbers (int64 arrays), ranges that touch joined, and ``reg``: (first line mod
    pitch, pitch, lines per range) when the ranges are equal and evenly spaced, else None: ``rows`` are runs of (byte offset
    from ``addr``, row bytes, pitch, count) (the form of
    :meth:`npusim.ascendc.checker.GmLog.note`), the lines between rows are not in them.

    Computed with numpy over the rows (a copy can have thousands; a few dozen with Python
    ints, :func:`_few_row_lines`) and kept by the rows' form and the address within its
    line (a kernel's copies repeat one form at many addresses), so a transfer costs an
    addition and a list conversion."""
    lo, hi, reg = _row_lines(addr, rows, line)
    if type(lo) is list:
        return np.array(lo, np.int64), np.array(hi, np.int64), reg
    return lo, hi, reg


def _row_lines(addr: int, rows: tuple, line: int) -> tuple:
    """:func:`row_lines`, a few rows' ranges as new lists of ints (what the L2 model works
    on for a few rows: no arrays made to be converted back), many rows' as arrays."""
    r = addr % line
    key = (r, line, rows)
    rel = _ROW_LINES.get(key)
    if rel is None and sum([run[3] for run in rows]) <= L2Cache.ROWS_IN_PYTHON:
        rel = _few_row_lines(r, rows, line)
        if len(_ROW_LINES) >= _ROW_LINES_KEEP:
            _ROW_LINES.clear()
        _ROW_LINES[key] = rel
    if rel is None:
        if len(rows) == 1:
            off, row, pitch, count = rows[0]
            lo = r + off + np.arange(count, dtype=np.int64) * pitch
            hi = lo + max(row, 1)
        else:
            lo = np.concatenate([r + off + np.arange(count, dtype=np.int64) * pitch
                                 for off, _, pitch, count in rows])
            hi = lo + np.concatenate([np.full(count, max(row, 1), dtype=np.int64)
                                      for _, row, _, count in rows])
        lo, hi = lo // line, (hi - 1) // line + 1
        if len(lo) > 1:
            if np.any(lo[1:] < lo[:-1]):
                order = np.argsort(lo, kind="stable")
                lo, hi = lo[order], hi[order]
            reach = np.maximum.accumulate(hi)
            # a range starts where a row begins past every line the rows before it reach
            first = np.flatnonzero(np.concatenate(([True], lo[1:] > reach[:-1])))
            lo, hi = lo[first], reach[np.concatenate((first[1:] - 1, [len(reach) - 1]))]
        if len(_ROW_LINES) >= _ROW_LINES_KEEP:
            _ROW_LINES.clear()
        reg = None
        if len(lo) > 1:
            pitch, n = int(lo[1] - lo[0]), int(hi[0] - lo[0])
            if (np.diff(lo) == pitch).all() and (hi - lo == n).all():
                reg = (int(lo[0]), pitch, n)
        rel = _ROW_LINES[key] = (lo, hi, reg)
    base = addr // line
    lo, hi, reg = rel
    if reg is not None:
        reg = ((reg[0] + base) % reg[1], reg[1], reg[2])
    if type(lo) is list:
        return [x + base for x in lo], [x + base for x in hi], reg
    return lo + base, hi + base, reg


def _few_row_lines(r: int, rows: tuple, line: int) -> tuple:
    """:func:`row_lines` of a few rows at ``r`` bytes into a line, with Python ints (numpy
    costs more per call than a loop over a few dozen rows): the same ranges, as lists of
    ints, and ``reg``."""
    lo, hi = [], []
    for off, row, pitch, count in rows:
        if row < 1:
            row = 1
        a = r + off
        if count == 1:                      # a scatter's rows: one run each
            lo.append(a // line)
            hi.append((a + row - 1) // line + 1)
            continue
        for i in range(count):
            b = a + i * pitch
            lo.append(b // line)
            hi.append((b + row - 1) // line + 1)
    if len(lo) > 1:
        if any(map(_lt, lo[1:], lo)):
            order = sorted(range(len(lo)), key=lo.__getitem__)     # stable
            lo, hi = [lo[i] for i in order], [hi[i] for i in order]
            joined = True
        else:
            # sorted ranges none of which reaches the next: nothing to join
            joined = any(map(_le, lo[1:], hi))
        if joined:
            # a range starts where a row begins past every line the rows before it reach
            out_lo, out_hi = [lo[0]], []
            reach = hi[0]
            for a, b in zip(lo, hi):
                if a > reach:
                    out_hi.append(reach)
                    out_lo.append(a)
                    reach = b
                elif b > reach:
                    reach = b
            out_hi.append(reach)
            lo, hi = out_lo, out_hi
    reg = None
    if len(lo) > 1:
        pitch, n = lo[1] - lo[0], hi[0] - lo[0]
        steps = list(map(_sub, lo[1:], lo))
        if steps.count(pitch) == len(steps) and \
                list(map(_sub, hi, lo)).count(n) == len(lo):
            reg = (lo[0], pitch, n)
    return lo, hi, reg


#: bursts of recent row sets, by (address mod burst, burst, rows): see :func:`row_bursts`
_ROW_BURSTS: dict = {}


def row_bursts(addr: int, span: int, rows, burst: int) -> tuple[int, int]:
    """The MTE bursts of a transfer and how many of them its rows' misalignment adds.

    A row is moved as the bursts of the ``burst``-byte blocks of GM it touches (the
    512 B grid of A2, :attr:`npusim.soc.SocSpec.mte_burst_bytes`). Returns (bursts, extra):
    ``extra`` is the bursts beyond ceil(row / burst) per row, those a row off the grid
    adds. ``rows``: the runs of a row transfer's key ((offset, row bytes, pitch, count),
    :func:`npusim.ascendc.datacopy.gm_key`), or None for one contiguous span. Kept by the
    rows' form and the address within its block, as :func:`row_lines`."""
    r = addr % burst
    if rows is None:
        n = (r + max(span, 1) - 1) // burst + 1
        return n, n - (max(span, 1) + burst - 1) // burst
    key = (r, burst, rows)
    got = _ROW_BURSTS.get(key)
    if got is None:
        n = extra = 0
        for off, row, pitch, count in rows:
            row = max(row, 1)
            first = (r + off + np.arange(count, dtype=np.int64) * pitch) % burst
            segs = int(((first + row - 1) // burst + 1).sum())
            n += segs
            extra += segs - count * ((row + burst - 1) // burst)
        if len(_ROW_BURSTS) >= _ROW_LINES_KEEP:
            _ROW_BURSTS.clear()
        got = _ROW_BURSTS[key] = (n, extra)
    return got


def batch_key(addr: int, span: int, bypass: bool, copies: int, bursts: int,
              extra: int = 0, misses: bool = False, waits: int = 0, rows=None) -> tuple:
    """The key of one record that stands for ``copies`` copies (a host-speed batch of a
    kernel's own instruction stream, e.g. :mod:`npusim.kernels.common.row_walk`):
    ``(addr, span, bypass, rows, (copies, bursts, extra, misses, waits))``. :meth:`_Memory.transfer`
    charges it one MTE issue per copy, and ``bursts`` (``extra`` of them added by rows off
    the grid: :func:`row_bursts`, :func:`rows_bursts`) at the burst rate, where the one
    range ``(addr, span)`` that stands for the copies in the L2 and HBM accounting would
    give its own bursts; and, past the L2 (``bypass``), HBM a new stream's overhead per
    copy. ``misses``: a batch recorded past the L2 model whose copies read through L2 and
    all miss (rows read once): its bursts are charged at the rate of misses through L2.
    ``waits``: the latencies (of this transfer's MTE) the kernel's own stream waits for
    between the copies, beyond the one the transfer completes with: they lengthen its own
    time, so its bytes move spread over the time the copies take, as the copies move them,
    not all at once. ``rows``: the copies' rows as runs (:func:`row_lines`), for the L2 to
    count the lines they touch (None: the range ``(addr, span)``)."""
    return (addr, span, bypass, rows,
            (int(copies), int(bursts), int(extra), bool(misses), int(waits)))


def bursts_each(addrs, row_bytes, burst: int) -> np.ndarray:
    """The bursts (int64, one per copy) of copies of one row each, at GM addresses
    ``addrs`` with ``row_bytes`` each (an int or an array like ``addrs``), on the
    ``burst``-byte grid, as :func:`row_bursts` counts them: 1 each without a grid
    (``burst`` 0)."""
    a = np.asarray(addrs, np.int64)
    if not burst:
        return np.ones(a.shape, np.int64)
    return (a % burst + np.maximum(np.asarray(row_bytes, np.int64), 1) - 1) // burst + 1


def rows_bursts(addrs, row_bytes, burst: int) -> tuple[int, int]:
    """(bursts, extra) of copies of one row each (:func:`bursts_each`, summed), ``extra``
    the bursts beyond those of rows aligned to the grid."""
    a = np.asarray(addrs, np.int64)
    if not burst:
        return int(a.size), 0
    row = np.maximum(np.broadcast_to(np.asarray(row_bytes, np.int64), a.shape), 1)
    n = int(bursts_each(a, row, burst).sum())
    return n, n - int(((row + burst - 1) // burst).sum())


class _Memory:
    """The shared memory system of a launch: L2 residency, and the bandwidth every transfer
    in flight shares with the others.

    A DMA's bytes flow from the moment it is issued; every flow in flight takes a rate,
    recomputed whenever a flow starts or ends (a fluid model of the requests in flight).
    The rates share, max-min fairly (progressive filling: equal rates until a flow reaches
    its own limit or a resource it uses is full), first among the reads, then among the
    writes in what the reads leave (reads first: a write waits behind the reads on every
    path they share):

    * its own time (the MTE issue model, module docstring): bytes / own time;
    * the interconnect between the vector cores (AIV) and L2/HBM, ``noc_bandwidth``, which
      carries every byte an AIV writes or reads with a miss (the cube cores' reads of L2
      reach 4 TB/s and more in the matmul measurements of docs/reference/hardware.md §4.2,
      so they do not share it; nor do an AIV's reads that all hit L2: the DataCopy best
      practice's U6 reads 906 MB of L2 hits at about 6 TB/s);
    * the reads of the same GM bytes from HBM by several cores at once (the same key):
      ``same_address_bandwidth`` together;
    * the L2 data array, ``l2_bandwidth``, for hits, allocations and absorbed writes;
    * HBM, ``hbm_bandwidth``, for reads that miss or bypass L2, plus
      ``hbm_transfer_overhead_cycles`` of bus time per transfer. Writes to HBM (dirty lines
      evicted by an allocation, writes that bypass L2) are posted to the HBM write queue
      (``hbm_write_queue_bytes``) and drained by the controller's rules for turning the bus
      between reads and writes, those of gem5's ``MemCtrl`` (``src/mem/MemCtrl.py``,
      ``mem_ctrl.cc``) in fluid form: with Q the queue, H = Q x
      ``hbm_write_high_thresh_perc`` / 100, L = Q x ``hbm_write_low_thresh_perc`` / 100 and
      m = ``hbm_min_writes_per_switch_bytes``,

      - in the HBM capacity the flows leave (no read waiting for HBM) the queue drains down
        to max(L - m, 0), its resting level;
      - when the queue holds more than H the bus turns to writes: a write batch drains the
        queue with all of HBM while the reads that need HBM wait (rate 0). The batch ends
        when the queue is down to its resting level, or, with reads waiting, once it has
        written m bytes and the queue is back at H;
      - victims that find the queue full (more than Q) wait, first come, first served,
        until the batch has made room for them, and so does the access that evicted them.

      While reads are in flight and the queue drains, HBM's capacity is
      ``hbm_mixed_efficiency`` x ``hbm_bandwidth`` (the bus turns around between them).

    A DMA's bytes are through at its flow's end (its MTE then issues its next DMA); it
    completes then, and not before its own time plus its latency (``dma_latency_cycles``
    for MTE2, ``dma_write_latency_cycles`` for MTE3): one core alone gets ``own time +
    latency``; under load the latency hides in the queueing. Every parameter's basis is in
    docs/calibration.md.
    """

    NOC, HBM, L2 = 0, 1, 2

    def __init__(self, soc, loop: _Loop, l2: L2Cache | None = None):
        self.soc, self.loop = soc, loop
        self.l2 = L2Cache(soc) if l2 is None else l2
        # a cold L2 answered from a bitmap (npusim.l2_cold): a transfer of a few rows makes
        # its access there, lines found row by row
        self.cold = l2 if hasattr(l2, "access_rows") else None
        f = soc.freq_hz
        # B/cycle of the interconnect, HBM and L2 (plain floats: the rate sharing runs on
        # a few flows at a time, where Python arithmetic is faster than numpy's)
        self.capacity = [soc.noc_bandwidth / f, soc.hbm_bandwidth / f, soc.l2_bandwidth / f]
        self.floor = [1e-9 * c for c in self.capacity]   # a resource this close to 0 is full
        self.hbm_overhead_bytes = soc.hbm_transfer_overhead_cycles * soc.hbm_bandwidth / f
        self.hbm_mixed = soc.hbm_mixed_efficiency
        # the MTE issue model (docs/calibration.md "The MTE issue model")
        self.burst = int(getattr(soc, "mte_burst_bytes", 0))
        self.grid = soc.gm_unaligned_rate_factor < 1.0   # the 512 B grid: A2 only (§2)
        self.issue = float(getattr(soc, "mte_issue_cycles", 0.0))
        self.burst_l2 = float(getattr(soc, "mte_burst_cycles", 0.0))
        self.burst_bypass = float(getattr(soc, "mte_burst_bypass_cycles", 0.0))
        self.aic_burst = float(getattr(soc, "aic_mte_burst_factor", 1.0))
        self.same_address = float(getattr(soc, "same_address_bandwidth", 0.0)) / f
        self.hbm_bytes = 0.0
        self.l2_hit_bytes = 0.0
        # L2 traffic by kind of core: read hit, read miss, write hit, write miss (AIV, AIC)
        self.l2_bytes = [0.0] * 8
        # writes whose counts wait for a hit fraction the cold L2 answers later, and the
        # writes after them, in order: (index in l2_bytes, bytes, hit fraction or its box)
        self.wlog: list = []
        # flows in flight, in the order they started: bytes left, rate (B/cycle), and the
        # rest of each flow as a tuple indexed by the _F* constants: limit (B/cycle), bytes
        # per byte on each resource, in the reads' class, whether it reads / writes HBM
        # (bit 1: reads HBM, bit 2: writes HBM), end not before (cycle), completion event
        self.left: list[float] = []
        self.rate: list[float] = []
        # the rate of every flow when they all are in one group (the flows then move by
        # one step, :meth:`_advance`), else None
        self.one_rate = None
        self.flows: list[tuple] = []
        self.dirs = [0, 0, 0, 0]             # flows in flight per HBM direction
        # the flows grouped by (limit, weight, class): the flows of a group take the same
        # rate, so the rate sharing steps over the groups (see :meth:`_fill`). A group is a
        # list indexed by the _G* constants; ``group`` gives each flow's, ``heavy`` the
        # groups of the flows with an HBM weight, in flow order.
        self.groups: dict = {}
        self.group: list = []
        self.heavy: list = []
        self.hot_n: dict = {}               # key of a hot read -> its flows in flight
        self.streams: dict = {}             # (block, kind) -> where its next copy streams on
        self.since = 0.0
        self.generation = 0
        # the rate sharing is due at the end of this instant (:meth:`_rates`), and the
        # sequence number its wake takes
        self.late = False
        self.wake_seq = 0
        # the kept sharings (FILL_MEMO): in use, sharings computed and found this replay
        self.memo = True
        self.memo_tries = self.memo_hits = 0
        self.pending = False
        # dirty lines evicted and not yet written: the HBM write queue. Its marks follow
        # gem5's MemCtrl (docs/calibration.md "Write draining"): above ``high`` the bus
        # turns to writes (a write batch, ahead of the reads); in the HBM time the reads
        # leave the queue drains down to ``rest``; a batch ends once it has written
        # ``batch`` bytes and the queue is back at ``high`` (reads waiting), or at ``rest``
        self.queue_bytes = float(soc.hbm_write_queue_bytes)
        self.high = self.queue_bytes * soc.hbm_write_high_thresh_perc / 100
        self.batch = float(soc.hbm_min_writes_per_switch_bytes)
        self.rest = max(0.0, self.queue_bytes * soc.hbm_write_low_thresh_perc / 100
                        - self.batch)
        self.backlog = 0.0
        self.drain = 0.0
        self.drained = 0.0          # bytes the queue has written since the launch began
        self.writing = False        # the bus is in a write batch
        self.batch_until = 0.0      # ``drained`` at which the batch has written ``batch``
        # accesses whose victims found the queue full, waiting for room: a heap of
        # (``drained`` at which the queue has taken their last byte, order, event)
        self.waiters: list = []
        self.waiter_seq = itertools.count()

    # -- one transfer ---------------------------------------------------------------------
    def transfer(self, now: float, kind: int, nbytes: int, key, cube: bool = False,
                 block: int = -1):
        """Start a DMA of ``nbytes`` described by ``key`` (from an AIC when ``cube``).

        Returns ``(event, not_before)``: the event fires when the DMA's bytes are through
        (its MTE may issue its next instruction then: the MTE issue model, several copies
        in flight); the DMA is complete (its data landed, what a flag set on its pipe
        waits for) at the later of that moment and ``not_before``, its fixed latency after
        its own time. ``block``: the block that issues it (its MTE's stream, below)."""
        if len(key) == 3 and kind == DMA_IN and not key[2] and nbytes > 0:
            return self._read_range(now, nbytes, key, cube, block)
        soc = self.soc
        rows = None
        copies = None
        if len(key) == 5:       # a batch of copies recorded as one (:func:`batch_key`)
            copies = key[4]
            key = key[:3] if key[3] is None else key[:4]
        done = None             # the L2 access of rows made by a cold L2 (below)
        if len(key) == 3:       # one contiguous range
            addr, span, bypass = key
            lines, l2a, l2s = None, addr, span
        else:                   # rows: the lines they touch, not the gaps between them
            addr, span, bypass, rows = key
            l2a, l2s = addr, span
            if self.cold is not None and not bypass:
                # a cold L2 still answered from its bitmap: the rows' access made there
                # now, a few rows' (nothing else touches L2 before this transfer's access
                # below)
                done = self.cold.access_rows(addr, rows, kind != DMA_IN)
            if done is None and not bypass:
                # rows whose ranges are evenly spaced (their form's ranges known already,
                # :func:`_row_lines`) and are the very lines of one resident run: the
                # access made from their first and last line, no ranges made
                line = self.l2.line
                rel = _ROW_LINES.get((addr % line, line, rows))
                if rel is not None and rel[2] is not None:
                    base = addr // line
                    reg = rel[2]
                    done = self.l2.access_same(int(rel[0][0]) + base, int(rel[1][-1]) + base,
                                               kind != DMA_IN,
                                               ((reg[0] + base) % reg[1], reg[1], reg[2]))
            if done is None:
                lines = _row_lines(addr, rows, self.l2.line)
                if len(lines[0]) == 1:          # the rows cover one range of lines after all
                    line = self.l2.line
                    a, b = int(lines[0][0]), int(lines[1][0])
                    lines, l2a, l2s = None, a * line, (b - a) * line
        burst = self.burst
        if copies is not None:
            bursts = extra = 0      # the batch's own, below
        elif burst:
            if rows is None:        # row_bursts of one span, inline (nearly every copy)
                r = addr % burst
                n = span if span > 1 else 1
                bursts = (r + n - 1) // burst + 1
                extra = bursts - (n + burst - 1) // burst
            else:
                bursts, extra = row_bursts(addr, span, rows, burst)
            if not self.grid:
                extra = 0
        else:
            bursts, extra = 1, 0
        issue = self.issue
        burst_bypass = self.burst_bypass
        if copies is not None:  # the batch's own instructions and bursts
            n_copies, bursts, extra, misses, waits = copies
            if not self.grid:
                extra = 0
            issue *= n_copies
            if misses:
                burst_bypass = self.burst_l2
        per_burst = self.aic_burst if cube else 1.0
        hot = 0.0
        if kind == DMA_IN:
            if bypass:
                hit, wb = 0.0, 0
            elif done is not None:
                hit, wb, _ = done
            elif lines is None:
                hit, wb, _ = self.l2.access(l2a, l2s, False)
            else:
                hit, wb = self.l2.access_lines(lines[0], lines[1], False, lines[2])[:2]
            miss, own, on_hbm, wait = self._read_cost(
                nbytes, hit, wb, bursts, extra, cube, not bypass,
                burst_bypass if bypass else self.burst_l2 * (1.0 - hit))
            on_l2 = 0.0 if bypass else nbytes
            direction = 1 if miss else 0
            latency = soc.dma_latency_cycles
            # reads served from L2 alone do not cross the interconnect to HBM
            noc = 0.0 if cube or not miss else 1.0
            if miss and self.same_address:
                hot = key               # several cores reading these bytes from HBM at once
        else:
            if bypass:          # posted to the HBM write queue, like an evicted line
                if lines is None:
                    self.l2.invalidate(l2a, l2s)
                else:
                    self.l2.invalidate_lines(lines[0], lines[1])
                self.hbm_bytes += nbytes
                wait = self._queue(nbytes)
                on_l2, on_hbm, direction = 0.0, 0.0, 0
            else:
                whit, wb, through = (done if done is not None
                                     else self.l2.access(l2a, l2s, True) if lines is None
                                     else self.l2.access_lines(lines[0], lines[1], True, lines[2]))
                at = 6 if cube else 2
                if type(whit) is list or self.wlog:
                    self._count_later(at, nbytes, whit)
                else:
                    counts = self.l2_bytes
                    counts[at] += nbytes * whit
                    counts[at + 1] += nbytes - nbytes * whit
                self.hbm_bytes += wb + through
                wait = self._queue(wb + through)
                on_l2, on_hbm, direction = nbytes, 0.0, 0
            own = max((nbytes + extra * burst) / soc.ddr_write_rate,
                      bursts * per_burst * self.burst_l2)
            latency = soc.dma_write_latency_cycles
            noc = 0.0 if cube else 1.0
        # HBM's cost of a new stream (``hbm_transfer_overhead_cycles``): paid by a transfer
        # that does not take up where its MTE's previous one left off (the first row's
        # end): copies that walk along their rows (the next column tile) stream on
        stream = (block, kind)
        if on_hbm and self.streams.get(stream) != addr:
            on_hbm += self.hbm_overhead_bytes * (copies[0] if copies is not None and bypass
                                                 else 1)
        self.streams[stream] = addr + (span if rows is None else rows[0][0] + rows[0][1])
        own += issue
        if copies is not None and waits:
            own += waits * latency
        done = _Event()
        if nbytes <= 0:
            self.loop.succeed(done)
            return done, now + latency
        # the flow starts at once (its requests queue while the latency runs); its bytes
        # are through not before its own time, and the DMA completes not before its
        # latency after that
        limit = nbytes / own
        self._flow(nbytes, limit, (noc, on_hbm / nbytes, on_l2 / nbytes),
                   kind == DMA_IN, direction, done, hot)
        not_before = now + latency + own
        if wait is None:
            return done, not_before
        # its victims found the write queue full: the access waits until the queue has
        # taken them (the queue is then above its high mark: a write batch drains it)
        return _AllOf(self.loop, (done, wait)), not_before

    def _count_later(self, at: int, nbytes: int, whit) -> None:
        """Count a write's L2 bytes (at ``at`` in :attr:`l2_bytes`: its hits, then its
        misses) after those of the writes before it still waiting for their hit fraction
        (``whit`` a box: :meth:`npusim.l2_cold.ColdL2.access_rows`); once none waits, the
        counts are added, in order (the same sums as counting each write at once)."""
        self.wlog.append((at, nbytes, whit))
        if not self.cold.pending:
            self.l2_counts()

    def l2_counts(self) -> list:
        """:attr:`l2_bytes` with every write counted (:meth:`_count_later`)."""
        if self.wlog:
            self.cold.settle()
            counts = self.l2_bytes
            for at, nbytes, whit in self.wlog:
                if type(whit) is list:
                    whit = whit[0]
                counts[at] += nbytes * whit
                counts[at + 1] += nbytes - nbytes * whit
            self.wlog = []
        return self.l2_bytes

    def _read_cost(self, nbytes, hit, wb, bursts, extra, cube, counted, burst_rate,
                   times: int = 1):
        """A read's share of :meth:`transfer`: with ``hit`` of its ``nbytes`` found in L2
        and ``wb`` bytes of victims written back, count its L2 bytes (msprof's read hit /
        miss-allocate counts when ``counted``: not for an L2 bypass) and HBM's, and return
        ``(miss, own, on_hbm, wait)``: the bytes HBM serves, the MTE's own time (before
        its issue), the bytes it costs HBM and the write queue's wait for the victims (or
        None). ``times``: count it for that many reads of this outcome, one after the
        other (as that many calls would add them; ``wb`` 0 then: the lockstep group's
        replay, :mod:`npusim.group_replay`)."""
        hit_bytes = nbytes * hit
        miss = nbytes - hit_bytes
        counts, at = self.l2_bytes, 4 if cube else 0
        # (each count added to ``times`` over, in locals: the same sums; adding 0.0 to a
        # count, never negative, leaves it as it is)
        l2_hit, c_hit, c_miss = self.l2_hit_bytes, counts[at], counts[at + 1]
        if hit_bytes:
            for _ in range(times):
                l2_hit += hit_bytes
                c_hit += hit_bytes
        if miss:
            for _ in range(times):
                c_miss += miss
        self.l2_hit_bytes = l2_hit
        if counted:
            counts[at], counts[at + 1] = c_hit, c_miss
        # the MTE's own time: the issue, then its bursts at the request rate of their
        # source (``burst_rate``) or its bytes at the per-core rate, whichever is longer
        # (a row off the grid moves one whole block more: its MTE spends that block's
        # time on it too, "GM地址尽量512B对齐": 70% of the aligned rate at worst)
        pad = extra * self.burst
        soc = self.soc
        # (the burst rate is the misses': hits come back sooner, bound by their bytes
        # at l2_read_rate; no measurement of short rows that hit is at hand)
        own = max(hit_bytes / soc.l2_read_rate + (miss + pad) / soc.ddr_read_rate,
                  bursts * (self.aic_burst if cube else 1.0) * burst_rate)
        # a row off the grid is served by HBM in whole bursts when it misses: the block
        # it adds costs a whole burst, and so does the block it shares with the copy
        # of the neighbouring columns, though L2 holds that copy's sector of it (the
        # request needs the block's other sectors too). So the sector hit at a row's
        # edge (one per row off the grid at most) saves HBM nothing: U4's 2046 B rows
        # move five blocks for four, as the best practice's -21.6% says
        if miss:
            on_hbm = miss + pad + min(hit_bytes, extra * self.l2.line)
        else:
            on_hbm = 0.0
        hbm, add = self.hbm_bytes, miss + wb
        if add:
            for _ in range(times):
                hbm += add
        self.hbm_bytes = hbm
        return miss, own, on_hbm, (self._queue(wb) if wb else None)

    def _read_range(self, now: float, nbytes: int, key, cube: bool, block: int):
        """:meth:`transfer` of a read of one contiguous range through L2 (``key`` =
        ``(addr, span, False)``, ``nbytes`` > 0), the copy a kernel issues most: the same
        steps and the same arithmetic, without the branches of the other kinds (a kernel
        of small copies spends much of its replay here)."""
        addr, span, _ = key
        burst = self.burst
        if burst:                   # row_bursts of one span
            n = span if span > 1 else 1
            bursts = (addr % burst + n - 1) // burst + 1
            extra = bursts - (n + burst - 1) // burst if self.grid else 0
        else:
            bursts, extra = 1, 0
        hit, wb, _ = self.l2.access(addr, span, False)
        miss, own, on_hbm, wait = self._read_cost(nbytes, hit, wb, bursts, extra, cube, True,
                                                  self.burst_l2 * (1.0 - hit))
        soc = self.soc
        stream = (block, DMA_IN)
        if on_hbm and self.streams.get(stream) != addr:
            on_hbm += self.hbm_overhead_bytes
        self.streams[stream] = addr + span
        own += self.issue
        done = _Event()
        self._flow(nbytes, nbytes / own, (0.0 if cube or not miss else 1.0, on_hbm / nbytes,
                                          nbytes / nbytes), True, 1 if miss else 0, done,
                   key if miss and self.same_address else 0.0)
        not_before = now + soc.dma_latency_cycles + own
        if wait is None:
            return done, not_before
        return _AllOf(self.loop, (done, wait)), not_before

    def _flow(self, nbytes, limit, weight, first, direction, done, hot=0.0) -> None:
        """Put a flow in flight (``first``: served in the first class, the reads';
        ``hot``: the key of the GM bytes it reads from HBM when concurrent reads of the
        same bytes share :attr:`same_address`, else 0). The flows reading the same bytes
        at once form a group of their own (a second one moves the first into it), whose
        rate together is at most :attr:`same_address`; a read alone keeps its usual group,
        so the groups stay few."""
        if self.loop.now > self.since:      # else _advance has nothing to move
            self._advance()
        self.left.append(float(nbytes))
        self.flows.append((limit, weight, first, direction, done, hot))
        self.dirs[direction] += 1
        tag = 0.0
        if hot:
            count = self.hot_n.get(hot, 0) + 1
            self.hot_n[hot] = count
            if count > 1:
                tag = hot
                if count == 2:          # the read already in flight joins the hot group
                    i = next(i for i, f in enumerate(self.flows) if f[_FHOT] == hot)
                    f = self.flows[i]
                    old = self.group[i]
                    self._leave(old)
                    g = self._join(f[_FLIMIT], f[_FWEIGHT], f[_FREAD], hot)
                    self.group[i] = g
                    self.heavy = list(filter(_w1, self.group))
        g = self.groups.get((limit, weight, first, tag))
        if g is None or g[_GHOT]:
            g = self._join(limit, weight, first, tag)
        else:                               # _join of a group in place, not hot
            g[_GN] += 1
        self.group.append(g)
        if weight[1]:
            self.heavy.append(g)
        if not self.pending:                # _changed
            self.pending = True
            self.loop.schedule(0, _URGENT, self._recompute_start, None)

    def _flows(self, nbytes, limit, weight, first, direction, dones, hots) -> None:
        """:meth:`_flow` of several transfers that start at this instant with the same
        bytes, limit, weights, class and direction, in one: ``dones``, ``hots``: each
        one's completion event and hot key. The same flows, groups and order as a call
        each (which it makes when a hot key is in flight already, or twice in ``hots``).
        A completion event may be None: nothing waits for that flow (the flows end
        together, and one event stands for them all)."""
        hot_n = self.hot_n
        # the hot keys, each hashed once: a dict whose update keeps the hashes, and whose
        # keys view lets isdisjoint go over the smaller side (nothing in flight, often)
        keyed = dict.fromkeys(hots, 1) if any(hots) else None
        if keyed is not None and (len(keyed) < len(hots)
                                  or not hot_n.keys().isdisjoint(keyed.keys())):
            for done, hot in zip(dones, hots):
                self._flow(nbytes, limit, weight, first, direction, done, hot)
            return
        if self.loop.now > self.since:
            self._advance()
        k = len(dones)
        self.left.extend([float(nbytes)] * k)
        self.flows.extend(zip(_repeat(limit), _repeat(weight), _repeat(first),
                              _repeat(direction), dones, hots))
        self.dirs[direction] += k
        if keyed is not None:
            if all(hots):
                hot_n.update(keyed)
            else:
                for hot in hots:
                    if hot:
                        hot_n[hot] = 1
        g = self.groups.get((limit, weight, first, 0.0))
        if g is None or g[_GHOT]:
            g = self._join(limit, weight, first, 0.0)
            g[_GN] += k - 1
        else:
            g[_GN] += k
        self.group.extend([g] * k)
        if weight[1]:
            self.heavy.extend([g] * k)
        if not self.pending:                # _changed
            self.pending = True
            self.loop.schedule(0, _URGENT, self._recompute_start, None)

    def _join(self, limit, weight, first, tag) -> list:
        """The group of flows with this limit, weights, class and hot key, one flow more."""
        key = (limit, weight, first, tag)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = [limit, weight[0], weight[1], weight[2], first, 0, 0.0, False,
                                    limit, self.same_address if tag else 0.0, key]
        n = g[_GN] = g[_GN] + 1
        if g[_GHOT]:
            g[_GEFF] = min(limit, g[_GHOT] / n)
        return g

    def _leave(self, g) -> None:
        """One flow fewer in group ``g``."""
        n = g[_GN] = g[_GN] - 1
        if not n:
            del self.groups[g[_GKEY]]
        elif g[_GHOT]:
            g[_GEFF] = min(g[_GLIMIT], g[_GHOT] / n)

    def _queue(self, nbytes: float):
        """Put ``nbytes`` of evicted dirty lines (or bypassing writes) in the HBM write queue.

        Returns None when the queue has room for them; otherwise the event of the moment
        the queue has drained enough to take their last byte (first come, first served),
        which the evicting access waits for."""
        if not nbytes:
            return None
        self._advance()
        self.backlog += nbytes
        self._changed()
        over = self.backlog - self.queue_bytes
        if over <= 0:
            return None
        room = _Event()
        heapq.heappush(self.waiters, (self.drained + over, next(self.waiter_seq), room))
        return room

    def _finish(self, at, done) -> None:
        """Fire ``done`` at ``at`` (a process: it starts at this instant, then waits)."""
        self.loop.schedule(0, _URGENT, self._finish_start, (at, done))

    def _finish_start(self, arg) -> None:
        at, done = arg
        loop = self.loop
        if at > loop.now:
            loop.schedule(at - loop.now, _NORMAL, loop.succeed, done)
        else:
            loop.succeed(done)

    # -- the fluid model ------------------------------------------------------------------
    def _advance(self) -> None:
        """Move every flow on by its rate since the last change."""
        now = self.loop.now
        dt = now - self.since
        if dt > 0:
            if self.left:
                # x - r * dt for each flow (map: the same operations, without a Python loop;
                # r * dt once when every flow has the same r)
                one = self.one_rate
                if one is not None:
                    self.left = list(map(_sub, self.left, _repeat(one * dt)))
                else:
                    self.left = list(map(_sub, self.left, map(_mul, self.rate, _repeat(dt))))
            if self.backlog and self.drain:
                d = min(self.backlog, self.drain * dt)
                self.backlog -= d
                self.drained += d
        self.since = now

    def _changed(self) -> None:
        """Recompute the rates once for all changes at this instant (a process: it starts
        at this instant, then waits for the instant's other events)."""
        if not self.pending:
            self.pending = True
            self.loop.schedule(0, _URGENT, self._recompute_start, None)

    def _recompute_start(self, _) -> None:
        self.loop.schedule(0, _NORMAL, self._recompute, None)

    def _retire_all(self) -> list:
        """:meth:`_recompute`'s retiring of the finished flows when every flow in flight
        ends (the members' flows of a lockstep group's step end together): each one's
        event, in flow order; then nothing is in flight, so every group, hot key and
        direction count is gone (each counts flows in flight), as the flows leaving one
        by one leave them. Returns the flows' bytes left (none)."""
        loop = self.loop
        for done in map(_fdone, self.flows):
            if done is not None:        # (None: a lockstep group's member, _flows)
                loop.succeed(done)
        for g in self.groups.values():
            g[_GN] = 0
        self.groups.clear()
        self.hot_n.clear()
        self.dirs[:] = (0, 0, 0, 0)
        self.left, self.flows, self.group, self.heavy = [], [], [], []
        return self.left

    def _recompute(self, _) -> None:
        """At the end of this instant: retire the finished flows, share the capacities
        anew, and wake again when the next flow (or the write queue) runs out."""
        self.pending = False
        self._advance()
        # finished flows leave
        eps = 1e-6
        left = self.left
        if left and max(left) <= eps:
            left = self._retire_all()
        elif left and min(left) <= eps:
            gone = [i for i, x in enumerate(left) if not eps < x]
            loop = self.loop
            group, flows, dirs, hot_n = self.group, self.flows, self.dirs, self.hot_n
            heavy_gone = False
            for i in gone:
                f = flows[i]
                if f[_FWEIGHT][1]:
                    heavy_gone = True
                if f[_FDONE] is not None:   # (None: a lockstep group's member, _flows)
                    loop.succeed(f[_FDONE])
                self._leave(group[i])
                hot = f[_FHOT]
                if hot:
                    count = hot_n[hot] - 1
                    if count:
                        hot_n[hot] = count
                    else:
                        del hot_n[hot]
                dirs[f[_FDIR]] -= 1
            # the flows left, in their order: a few leave at a time, so they are deleted
            # in place (new lists when many leave; no one else holds these lists);
            # ``heavy`` (the groups of the flows with an HBM weight, in flow order)
            # changes only if such a flow left
            if len(gone) * 8 < len(left):
                for i in reversed(gone):
                    del left[i], flows[i], group[i]
            else:
                keep = list(map(eps.__lt__, left))      # x > eps
                self.left = left = list(_compress(left, keep))
                self.flows = list(_compress(flows, keep))
                self.group = group = list(_compress(group, keep))
            if heavy_gone:
                self.heavy = list(filter(_w1, group))
        self.generation += 1
        if self.backlog <= 1e-6:
            self.backlog = 0.0
        waiters = self.waiters
        while waiters and waiters[0][0] <= self.drained + 1e-6:
            self.loop.succeed(heapq.heappop(waiters)[2])
        # the bus: into a write batch above the high mark; out of it once the batch has
        # written its bytes and the queue is back at the high mark while reads wait, or
        # once the queue is down to its resting level
        reads = self.dirs[1] or self.dirs[3]
        backlog = self.backlog
        if self.writing:
            if backlog <= self.rest + 1e-6 or (reads and backlog <= self.high + 1e-6
                                                and self.drained >= self.batch_until - 1e-6):
                self.writing = False
        if not self.writing and backlog > self.high + 1e-6:
            self.writing = True
            self.batch_until = self.drained + self.batch
        # The rates and the next wake, once at the end of this instant (:meth:`_rates`):
        # a flow that ends often lets its MTE issue the next at once, whose recompute
        # follows at the same instant; a sharing made before it would be used for nothing
        # (the flows move only when time does). The wake takes the sequence numbers it
        # took when each recompute shared at once and woke through a process started at
        # its end (the process's number, then the wake's): it is ordered among the events
        # of its own instant as it was.
        # With no other event left at this instant, nothing can change before time moves
        # on: the sharing is made now, without the LATE event.
        loop = self.loop
        seq = loop.seq
        queue = loop.queue
        later = LATE_RATES and queue and queue[0][0] == loop.now
        if later and not self.late:
            self.late = True
            heapq.heappush(queue, (loop.now, _LATE, next(seq), self._rates, None))
        next(seq)
        self.wake_seq = next(seq)
        if not later and not self.late:
            self._rates(None)

    def _rates(self, _) -> None:
        """:meth:`_recompute`'s sharing of the capacities and its wake, at the end of the
        instant of the last recompute (nothing moves the flows or reads their rates before
        time moves on)."""
        self.late = False
        reads = self.dirs[1] or self.dirs[3]
        backlog = self.backlog
        waiters = self.waiters
        left = self.left
        self.rate, self.drain = rate, drain = self._share()
        # (the flows and groups stay as they are until the next recompute: a flow that
        # starts makes one at its instant, before time moves on)
        self.one_rate = one = rate[0] if rate and len(self.groups) == 1 else None
        wake = []
        if drain > 0 and backlog > 0:
            if self.writing:
                end = backlog - self.rest
                if reads:
                    end = min(end, max(backlog - self.high, self.batch_until - self.drained))
            else:
                end = backlog - self.rest
            if end > 0:
                wake.append(end / drain)
            if waiters:
                wake.append(max(0.0, waiters[0][0] - self.drained) / drain)
        # a write may wait with no rate while reads fill a path; the flows left all have
        # bytes left (> eps), so x / r is their time to run out
        if rate:
            # every flow has its group's rate: the smallest rate is the groups' smallest
            if one is not None:
                # one rate: the least x / r is the least x over r (a division by r > 0
                # rounds in order), without a division per flow
                if one > 0:
                    wake.append(min(left) / one)
            elif min(map(_grate, self.groups.values())) > 0:
                wake.append(min(map(_truediv, left, rate)))
            else:
                times = [x / r for x, r in zip(left, rate) if r > 0]
                if times:
                    wake.append(min(times))
        if wake:
            delay = min(wake)
            now = self.loop.now
            if now + delay <= now:
                # what is left would run out in less than half the float64 spacing of
                # ``now`` (a remainder of a few 1e-6 B at 1e7 cycles and more), so
                # ``now + delay`` rounds back to ``now``: a wake then would advance nothing
                # and be scheduled again forever. Wake one spacing later instead, when it
                # is through (rate x spacing > what is left); a wake that advances the
                # clock is left as it is.
                delay = math.nextafter(now, _INF) - now
            heapq.heappush(self.loop.queue, (now + delay, _NORMAL, self.wake_seq, self._wake,
                                             self.generation))

    def _wake(self, generation) -> None:
        if generation == self.generation:
            self._changed()

    def _share(self) -> tuple[list, float]:
        """Max-min fair rates of the flows in flight (progressive filling), and the rate at
        which the HBM write queue drains: all of HBM in a write batch (the reads that miss
        wait), else the HBM capacity the flows leave, down to the resting level."""
        reads = self.dirs[1] or self.dirs[3]
        capacity = list(self.capacity)
        HBM = self.HBM
        if self.writing:
            drain = capacity[HBM] * (self.hbm_mixed if reads else 1.0)
            capacity[HBM] = 0.0
            return self._fill(capacity)[0], drain
        rate, left = self._fill(capacity)
        if self.backlog > self.rest + 1e-6 and left[HBM] > self.floor[HBM]:
            if reads:                     # the drain turns the bus to writes as well
                capacity[HBM] *= self.hbm_mixed
                rate, left = self._fill(capacity)
            return rate, max(0.0, left[HBM])
        return rate, 0.0

    def _fill(self, capacity):
        """Rates of the flows for the resource ``capacity`` left: the reads share it max-min
        fairly (progressive filling), then the writes share what the reads leave.

        Each step raises the rates of the flows still active by the same amount, until a
        flow reaches its limit or a resource it uses is full; those stop. Flows with the
        same limit, weights and class rise and stop together, so the steps run over their
        groups. The resources' use is the sum of the active flows' weights in flow order
        (as numpy's sum over the flows of an (n, 3) array does): on the interconnect and
        L2 the weights are 0 or 1, whose sums are counts, exact in any order; on HBM the
        sum runs over the flows in flow order, anew only when a flow with an HBM weight
        stops while others go on, so the rates are those of a per-flow filling to the bit.
        The interconnect and L2 weights are 0 or 1 by construction (:meth:`transfer`: a
        transfer uses the interconnect or not, and its L2 bytes are all or none of it)."""
        n = len(self.flows)
        c0, c1, c2 = capacity
        if not n:
            return [], [c0, c1, c2]
        # the inputs: the capacity, the floor, the groups (in order) and the HBM weights of
        # the flows that have one, in flow order (their sum's order, see above)
        key = None
        if FILL_MEMO and self.memo:
            key = (c0, c1, c2, *self.floor, *map(_gkey, self.groups.values()), None,
                   *map(_w1, self.heavy))
            kept = _FILL_KEPT.get(key)
            if kept is not None:
                self.memo_hits += 1
                for g, r in zip(self.groups.values(), kept[0]):
                    g[_GRATE] = r
                return list(map(_grate, self.group)), list(kept[1])
            # a launch whose compositions seldom come back (many flows in flight in many
            # mixes) pays for the keys and gains little: after a trial, such a replay
            # computes each sharing (the same rates either way)
            self.memo_tries += 1
            if self.memo_tries == _FILL_TRIAL and self.memo_hits * 2 < _FILL_TRIAL:
                self.memo = False
        f0, f1, f2 = self.floor
        near = 1 - 1e-12
        heavy = self.heavy
        groups = list(self.groups.values())
        hgroups = [g for g in groups if g[_GW1]] if heavy else ()
        reads = [g for g in groups if g[_GREAD]]
        for active in (reads, [g for g in groups if not g[_GREAD]]) if len(reads) < len(
                groups) else (reads,):
            if not active:
                continue
            # the groups of a class rise from 0 by the same steps: those still active all
            # have the rate ``r``; one that stops keeps the rate it has reached
            u0 = u2 = 0.0
            head = _INF
            some1 = False
            for g in active:
                g[_GON] = True
                k = g[_GN]
                u0 += k * g[_GW0]
                u2 += k * g[_GW2]
                if g[_GEFF] < head:
                    head = g[_GEFF]
                if g[_GW1]:
                    some1 = True
            u1 = _heavy_sum(heavy, hgroups) if some1 else 0.0
            r = 0.0
            while active:
                # min(c0 / u0, c1 / u1, c2 / u2, head) of the resources in use, as min()
                # picks it (the first of the smallest), inline
                step = c0 / u0 if u0 > 0 else _INF
                if u1 > 0:
                    x = c1 / u1
                    if x < step:
                        step = x
                if u2 > 0:
                    x = c2 / u2
                    if x < step:
                        step = x
                if head < step:
                    step = head
                c0 -= step * u0
                c1 -= step * u1
                c2 -= step * u2
                r += step
                full0, full1, full2 = (u0 > 0 and c0 <= f0, u1 > 0 and c1 <= f1,
                                       u2 > 0 and c2 <= f2)
                full = full0 or full1 or full2
                going = []
                u0 = u2 = 0.0
                head = _INF
                stopped1 = going1 = False
                for g in active:
                    lim = g[_GEFF]
                    if r >= lim * near or (full and (
                            (full0 and g[_GW0] > 0) or (full1 and g[_GW1] > 0)
                            or (full2 and g[_GW2] > 0))):
                        g[_GRATE] = r
                        g[_GON] = False
                        if g[_GW1]:
                            stopped1 = True
                        continue
                    going.append(g)
                    k = g[_GN]
                    u0 += k * g[_GW0]
                    u2 += k * g[_GW2]
                    if g[_GW1]:
                        going1 = True
                    if lim - r < head:
                        head = lim - r
                if stopped1:
                    u1 = _heavy_sum(heavy, hgroups) if going1 else 0.0
                active = going
        if key is not None:
            if len(_FILL_KEPT) >= _FILL_KEEP:
                _FILL_KEPT.clear()
            _FILL_KEPT[key] = (tuple(map(_grate, self.groups.values())), (c0, c1, c2))
        return list(map(_grate, self.group)), [c0, c1, c2]


def _heavy_sum(heavy: list, hgroups) -> float:
    """HBM's use by the flows of the groups still rising (``_GON``): the HBM weights of
    ``heavy`` (a group per flow, in flow order) whose group rises, summed in that order.
    When those flows all have one weight ``w`` (a launch's flows have few), the sum is
    ``w`` added ``k`` times to 0, kept by ``(w, k)``: the same sum without the pass over
    the flows. ``hgroups``: the groups with an HBM weight."""
    w = 0.0
    k = 0
    for g in hgroups:
        if g[_GON]:
            if not k:
                w = g[_GW1]
            elif g[_GW1] != w:
                break
            k += g[_GN]
    else:
        if not k:
            return 0.0
        s = _REPEATED.get((w, k))
        if s is None:
            if len(_REPEATED) >= _FILL_KEEP:
                _REPEATED.clear()
            s = 0.0
            for _ in range(k):
                s += w
            _REPEATED[(w, k)] = s
        return s
    s = 0.0
    for g in heavy:
        if g[_GON]:
            s += g[_GW1]
    return s


#: Leave out the issue flags that cannot delay their pipe (:class:`_IssuePruner`); the
#: replay's times are the same either way (tests compare the two).
PRUNE_ISSUE_WAITS = True


def _split(records, pipes, merge: bool = True):
    """Per-pipe item lists ``(kind, cost_or_bytes, key, label, n_merged, record_index)``.

    With ``merge``, consecutive OP records of one pipe become one item (one timeout).
    The scalar unit issues every instruction in program order and stalls while it computes
    or waits on a flag, so after scalar work (or a WaitFlag on PIPE_S) the next instruction
    of another pipe also waits for it: an ``issue`` flag from PIPE_S to the other pipes.

    With ``merge``, an issue flag is also left out where it cannot delay its pipe
    (:class:`_IssuePruner`), which leaves the replay's times unchanged.
    """
    S = Pipe.PIPE_S
    lists = {p: [] for p in pipes}
    # the pipes as plain ints from here on: an int hashes in C, an enum member in Python
    Si, ALLi = int(S), int(Pipe.PIPE_ALL)
    by_int = {int(p): lst for p, lst in lists.items()}
    others = [(p, int(p)) for p in pipes if p != S]
    s_list = lists.get(S)
    scalar_pending = False
    prune = _IssuePruner(lists, S, others) if merge and PRUNE_ISSUE_WAITS else None
    pending = prune.pending if prune is not None else {}
    if prune is not None:       # the pruner's flag state, kept up to date inline below
        sets, debt, known = prune.sets, prune.debt, prune.known
        sets_get, debt_get, known_get = sets.get, debt.get, known.get
    for i, (kind, pipe, cycles, nbytes, key, name) in enumerate(records):
        pi = int(pipe)
        if scalar_pending and pi != Si and kind != SET and kind != BARRIER:
            if prune is not None:
                prune.issue(i)
            else:
                for p, q in others:
                    token = ("issue", i, p)
                    s_list.append((SET, 0, token, "issue", 1, i))
                    by_int[q].append((WAIT, 0, token, "issue", 1, i))
            scalar_pending = False
        if kind == OP:
            lst = by_int[pi]
            if pending and pi in pending and pi != Si:
                prune.flush(pi)
            if merge and lst and lst[-1][0] == OP:
                _, c, _, label, n, first = lst[-1]
                lst[-1] = (OP, c + cycles, None, label, n + 1, first)
            else:
                lst.append((OP, cycles, None, name, 1, i))
            if pi == Si:
                scalar_pending = True
            continue
        if prune is not None and pi != ALLi:
            # the pruner's book-keeping before a DMA, SET, WAIT or BARRIER record (inline:
            # one call less per record): a WAIT consumes its key's oldest unconsumed set and
            # takes the knowledge it carries (or owes a set); any other record flushes its
            # pipe's held-back issue wait, and a SET passes its pipe's knowledge on
            if kind == WAIT:
                queue = sets_get(key)
                if queue:
                    value = queue.popleft()
                    if pi != Si and value > known_get(pi, -1):
                        known[pi] = value
                else:
                    debt[key] = debt_get(key, 0) + 1
            else:
                if pi != Si and pi in pending:
                    prune.flush(pi)
                if kind == SET:
                    if debt_get(key):
                        debt[key] -= 1
                    else:
                        queue = sets_get(key)
                        if queue is None:
                            queue = sets[key] = deque()
                        queue.append(prune.s_point if pi == Si else known_get(pi, -1))
        if kind == DMA_IN or kind == DMA_OUT:
            by_int[pi].append((kind, nbytes, key, name, 1, i))
        elif kind == BARRIER:
            if pi == ALLi:   # SyncAll passes its shared key; PipeBarrier a fresh one
                if prune is not None:
                    prune.barrier()
                token = key if key is not None else object()
                for lst in lists.values():
                    lst.append((BARRIER, 0, token, name, 1, i))
        else:
            by_int[pi].append((kind, 0, key, name, 1, i))
            if kind == WAIT and pi == Si:
                scalar_pending = True
    if prune is not None:
        prune.finish()
    return lists


def _split_member(records, pipes, merge: bool, kept: dict):
    """:func:`_split` of one block's records, shared by the members of a lockstep group.

    ``records.template`` (when the records are a group member's,
    :class:`npusim.lockstep.GroupRecords`): the group's record list and the indices where
    members differ (its first two entries). Where those are all transfers (GM addresses and
    byte counts differ; kinds, pipes and everything else are the group's), the members'
    pipe lists are the same but for those transfers' items, since :func:`_split` never
    looks into a transfer's key: the first member's lists are kept in ``kept`` and each
    later member gets a copy with its own transfers put in. Otherwise, and for records of a
    block that ran alone, :func:`_split` runs as it is."""
    template = getattr(records, "template", None)
    if template is None:
        return _split(records, pipes, merge)
    shared, patched = template[:2]
    entry = kept.get(id(shared))
    if entry is None:
        lists = _split(records, pipes, merge)
        where = None
        if all(records[i][0] == DMA_IN or records[i][0] == DMA_OUT for i in patched):
            differ = set(patched)
            where = [(p, pos, it[5]) for p, items in lists.items()
                     for pos, it in enumerate(items)
                     if (it[0] == DMA_IN or it[0] == DMA_OUT) and it[5] in differ]
        kept[id(shared)] = (shared, lists, where)   # ``shared`` kept alive: its id stays
        return lists
    _, lists, where = entry
    if where is None:
        return _split(records, pipes, merge)
    out = dict(lists)
    copied = set()
    for p, pos, i in where:
        if p not in copied:
            out[p] = list(out[p])
            copied.add(p)
        kind, _, _, nbytes, key, name = records[i]
        out[p][pos] = (kind, nbytes, key, name, 1, i)
    return out


def _block_pipes(records, kept: dict) -> set:
    """The pipes of a block's records, PIPE_ALL left out. A lockstep group member's
    (``records.template``, :func:`_split_member`) are the pipes of the group's records where
    members do not differ, worked out once per group (kept in ``kept``), and of its own
    records where they do: a pass over the group's records, not over every member's (a
    launch of 24 members of 160,000 records each: 0.24 s of CPU otherwise)."""
    ALL = Pipe.PIPE_ALL
    template = getattr(records, "template", None)
    if template is None:
        return {r[1] for r in records if r[1] != ALL}
    shared, patched = template[:2]
    entry = kept.get(id(shared))
    if entry is None:
        differ = set(patched)
        common = {r[1] for i, r in enumerate(shared) if i not in differ}
        kept[id(shared)] = entry = (shared, common)    # ``shared`` kept alive: its id stays
    out = entry[1] | {records[i][1] for i in patched}
    out.discard(ALL)
    return out


#: The item :meth:`_IssuePruner.issue` leaves in PIPE_S's list for one issue point, until
#: :meth:`_IssuePruner.finish` replaces it with the issue flags kept.
_ISSUE_POINT = -1


class _IssuePruner:
    """Leaves out the issue flags (PIPE_S -> another pipe, see :func:`_split`) that cannot
    delay the pipe that waits for them, so that runs of scalar records cost the replay a
    few events instead of one per other pipe and scalar instruction.

    An issue wait of pipe ``p`` is held back until ``p``'s next instruction that is not a
    wait, so it joins the run of waits before that instruction (a pipe passes a run of
    waits when the last of its flags is set, whatever their order). It is dropped when a
    later issue wait of the same run replaces it (the scalar unit sets its issue flags in
    program order, so the later flag implies the earlier), or when ``p`` already knows,
    through the flags it has waited for, that the scalar unit went past that point: each
    pipe carries the last issue point it knows the scalar unit passed, a SET passes its
    pipe's knowledge to the WAIT that consumes it (the n-th wait of a key consumes its
    n-th set), and PipeBarrier(PIPE_ALL) / SyncAll pass the scalar unit's to every pipe.
    Such a wait would find its flag already set, so the replay's times are the same.

    Pipes are given as ints here (``others``: (pipe, int) of the pipes other than PIPE_S).
    """

    def __init__(self, lists, S, others):
        self.lists, self.S, self.others = lists, S, others
        self.by_int = {int(p): lst for p, lst in lists.items()}
        self.Si = int(S)
        self.pipe_of = {int(p): p for p in lists}
        self.pending: dict = {}          # pipe -> issue point whose wait is held back
        self.known: dict = {}            # pipe -> last issue point it knows S passed
        self.s_point = -1                # the last issue point (S passes them in order)
        self.sets: dict = {}             # flag key -> knowledge of its unconsumed sets
        self.debt: dict = {}             # flag key -> waits recorded before their set
        self.used: set = set()           # (point, pipe) of the issue flags kept

    def issue(self, i: int) -> None:
        """The scalar unit sets its issue flags to every other pipe at point ``i``: one
        placeholder item now, the flags kept in :meth:`finish`."""
        self.by_int[self.Si].append((_ISSUE_POINT, i))
        pending = self.pending
        for _, q in self.others:
            pending[q] = i               # replaces (drops) an earlier held-back wait
        self.s_point = i

    def flush(self, p: int) -> None:
        """``p`` issues an instruction that is not a wait: keep its held-back issue wait
        unless ``p`` already knows the scalar unit passed that point."""
        point = self.pending.pop(p)
        if point > self.known.get(p, -1):
            self.by_int[p].append((WAIT, 0, ("issue", point, self.pipe_of[p]), "issue", 1,
                                   point))
            self.used.add((point, p))
            self.known[p] = point

    def barrier(self) -> None:
        for p in list(self.pending):
            self.flush(p)
        for p in self.by_int:
            self.known[p] = self.s_point

    def finish(self) -> None:
        for p in list(self.pending):
            self.flush(p)
        S, used = self.S, self.used
        if S not in self.lists:
            return
        kept: list = []
        for it in self.lists[S]:
            if it[0] == _ISSUE_POINT:
                i = it[1]
                for p, q in self.others:
                    if (i, q) in used:
                        kept.append((SET, 0, ("issue", i, p), "issue", 1, i))
                continue
            if it[0] == OP and kept and kept[-1][0] == OP:
                # scalar work no longer split by an issue flag: one timeout, as a run
                _, c, _, label, n, first = kept[-1]
                kept[-1] = (OP, c + it[1], None, label, n + it[4], first)
            else:
                kept.append(it)
        self.lists[S] = kept


def simulate(blocks: list[list[tuple]], soc, keep_spans: bool = False, cores: int | None = None,
             profile_pipes: tuple = PROFILE_PIPES, l2: L2Cache | None = None) -> KernelTiming:
    """Replay the records of every block; return the kernel's timing.

    Args:
        blocks: one record list per block, in block order (see :mod:`npusim.ascendc.core`).
        soc: the SocSpec whose rates and core count apply.
        keep_spans: also return every instruction's span, for traces (slower: each
            instruction is then its own event).
        cores: physical cores the blocks run on, in waves (default: the vector cores,
            ``soc.vector_block_num``; an AIC_ONLY launch passes ``soc.cube_block_num``, a
            mixed one its number of cores, which all run at once).
        profile_pipes: the pipes whose busy cycles ``pipe_busy`` reports.
        l2: the L2 residency to start from (and leave the launch's in), for launches that
            follow one another on a device; a cold L2 by default.

    Raises:
        SyncError: a pipe waits for a flag that is never set (the kernel would hang).
    """
    key = None
    size = _key_size(blocks) if REPLAY_MEMO and l2 is None else 0
    # a replay of more records than the store holds is never kept, so none is found
    # either: its key (a pickle of every record) is not worth computing
    if REPLAY_MEMO and l2 is None and size <= REPLAY_KEEP_RECORDS:
        try:
            records = _relocated_key(blocks, soc.l2_line_bytes)
            if records is None:
                records = _records_key(blocks)
            key = _digest((soc, keep_spans, cores, profile_pipes), records)
            kept = _REPLAY_KEPT.get(key)
        except (TypeError, pickle.PicklingError, AttributeError):   # a record with no value form
            key = kept = None
        if kept is not None:
            return _unpack(kept)
    # The cyclic garbage collector would walk the records (10^5 and more, all alive) again
    # and again while the replay allocates its events; nothing the replay frees needs it
    # before the end, so it is paused, which changes no result.
    enabled = gc.isenabled()
    gc.disable()
    try:
        timing = _replay(blocks, soc, keep_spans, cores, profile_pipes, l2)
    finally:
        if enabled:
            gc.enable()
    if key is not None:
        _REPLAY_KEPT.put(key, _pack(timing), size)
    return timing


def _key_size(blocks) -> int:
    """Records a replay's key holds: each block's own, and of a lockstep group its shared
    list once and its per-member records once per member."""
    size, groups = 0, set()
    for records in blocks:
        template = getattr(records, "template", None)
        if template is None:
            size += len(records)
        else:
            size += len(template[1])
            if id(template[0]) not in groups:
                groups.add(id(template[0]))
                size += len(template[0]) - len(template[1])
    return size


class _KeptReplays:
    """The kept replays (:data:`REPLAY_MEMO`): key -> timing, least recently used first
    (an OrderedDict), bounded by their number (``REPLAY_KEEP_ENTRIES``) and the records
    their keys hold in all (``REPLAY_KEEP_RECORDS``; a running total, so a lookup and an
    insert cost O(1) however many are kept)."""

    def __init__(self):
        self.items: OrderedDict = OrderedDict()   # key -> (timing, records replayed)
        self.records = 0                          # records replayed, over the kept items

    def __len__(self) -> int:
        return len(self.items)

    def get(self, key) -> tuple | None:
        """The timing kept under ``key``, packed (:func:`_pack`; now the most recently
        used), or None."""
        kept = self.items.get(key)
        if kept is None:
            return None
        self.items.move_to_end(key)
        return kept[0]

    def put(self, key, timing: KernelTiming, size: int) -> None:
        """Keep ``timing`` (a replay of ``size`` records) under ``key``; forget the least
        recently used replays beyond the limits. A replay larger than all the room is
        not kept."""
        if size > REPLAY_KEEP_RECORDS:
            return
        items = self.items
        old = items.pop(key, None)
        if old is not None:
            self.records -= old[1]
        items[key] = (timing, size)
        self.records += size
        while self.records > REPLAY_KEEP_RECORDS or len(items) > REPLAY_KEEP_ENTRIES:
            self.records -= items.popitem(last=False)[1][1]

    def clear(self) -> None:
        self.items.clear()
        self.records = 0


#: the kept replays
_REPLAY_KEPT = _KeptReplays()


class _Shared:
    """The records a lockstep group's members share, as part of a replay's key: digested
    once (:func:`_digest`, the kept replays' key) however many members refer to it; hashed
    once, when first asked, and compared in full once per comparison, however many members
    the group has (it remembers the last part found equal), where keys are compared as
    tuples (:func:`_records_key`'s tests)."""

    __slots__ = ("items", "hash", "same", "digest")

    def __init__(self, items: tuple):
        self.items = items
        self.hash = None
        self.same = None
        self.digest = None

    def __hash__(self):
        if self.hash is None:
            self.hash = hash(self.items)
        return self.hash

    def __eq__(self, other):
        if other is self or other is self.same:
            return True
        if (not isinstance(other, _Shared) or hash(other) != hash(self)
                or other.items != self.items):
            return False
        self.same = other
        return True


def _value_bytes(obj) -> bytes:
    """``obj`` (tuples of ints, floats, strings, enums, a SocSpec) written by value: pickle
    without its memo (``Pickler.fast``), so that objects shared or not, interned or not, give
    the same bytes, and equal bytes mean equal values of the same types."""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=5)
    pickler.fast = True
    pickler.dump(obj)
    return buf.getvalue()


def _digest(options: tuple, records) -> bytes:
    """A kept replay's key: the 128-bit BLAKE2b digest of what the replay reads, the
    options (SoC, spans, cores, pipes) and the records (:func:`_records_key` or
    :func:`_relocated_key`), each lockstep group's shared part digested once.

    The store keeps this digest, not the records (some 140 B of Python objects per record:
    a kept replay of a few hundred records held ~60 KiB, and a loop whose records change
    with its data filled tens of MiB): a kept replay now costs its timing and 16 bytes.
    Two different record lists meet in one digest with a probability of about 2^-128 per
    pair, as in any content-addressed store; equal records always meet (their bytes are
    equal: :func:`_value_bytes`).

    Raises TypeError or pickle.PicklingError for a record that has no value form (the
    caller then replays without keeping)."""
    tag = None
    if len(records) == 2 and records[0] == "relocated":
        tag, records = records
    parts = []
    for block in records:
        if len(block) == 2 and type(block[0]) is _Shared:
            part, member = block
            if part.digest is None:
                part.digest = hashlib.blake2b(_value_bytes(part.items), digest_size=16).digest()
            parts.append((part.digest, member))
        else:
            parts.append(block)
    return hashlib.blake2b(_value_bytes((options, tag, tuple(parts))), digest_size=16).digest()


def _records_key(blocks) -> tuple:
    """What the replay reads of ``blocks``, as a key: per block its records; for a lockstep
    group's member (``records.template``, :class:`npusim.lockstep.GroupRecords`), the group's
    records with those that differ from member to member in their group form (one
    :class:`_Shared` per group), and the member's position in the group, which picks its
    values out of them. Equal keys mean equal records."""
    shared: dict = {}
    out = []
    for records in blocks:
        template = getattr(records, "template", None)
        if template is None:
            out.append(tuple(map(_plain, records)))
            continue
        group, patched, per_member = template
        part = shared.get(id(group))
        if part is None:
            skip = set(patched)             # the group's own values there: per member
            items = [None if i in skip else _plain(r) for i, r in enumerate(group)]
            part = shared[id(group)] = _Shared((tuple(items), patched,
                                                tuple(map(_plain, per_member))))
        out.append((part, records.member))
    return tuple(out)


#: A pipe as a plain int (Pipe is an IntEnum: the replay reads a pipe and its value alike)
_plain_pipe = {p: int(p) for p in Pipe}.get


def _plain(rec) -> tuple:
    """``rec`` with its pipe as a plain int: a key of what the replay reads, pickled about
    five times faster (pickle writes an enum member by its class's name and a reduce, each
    time: most of a key's cost)."""
    return (rec[0], _plain_pipe(rec[1], rec[1]), *rec[2:])


def _per_member(v) -> bool:
    """Whether ``v`` is a group's per-member value in its hashable form
    (:func:`npusim.lockstep._frozen`)."""
    return type(v) is tuple and len(v) == 2 and v[0] is _PER_MEMBER


def _transfers(blocks):
    """Every transfer record of ``blocks`` once: a block's own, and of a lockstep group
    the shared list's and the per-member ones (in their hashable form, whose GM addresses
    may be per member)."""
    seen = set()
    for records in blocks:
        template = getattr(records, "template", None)
        if template is None:
            for rec in records:
                if rec[0] == DMA_IN or rec[0] == DMA_OUT:
                    yield rec
            continue
        group, patched, per_member = template
        if id(group) in seen:
            continue
        seen.add(id(group))
        skip = set(patched)
        for i, rec in enumerate(group):
            if i not in skip and (rec[0] == DMA_IN or rec[0] == DMA_OUT):
                yield rec
        for rec in per_member:
            if rec[0] == DMA_IN or rec[0] == DMA_OUT:
                yield rec


_INTS = frozenset((int,))


def _relocated_key(blocks, line: int):
    """:func:`_records_key` of ``blocks`` with their GM addresses made relative, so that
    the same launch on tensors allocated elsewhere finds the same kept replay; None when
    that cannot be done (a record this does not know, more transfers than
    ``RELOCATE_MAX_TRANSFERS``): the caller then keys by the exact addresses.

    A replay from a cold L2 reads a transfer's GM address in two ways only
    (:meth:`_Memory.transfer`, :class:`L2Cache`): its alignment (``addr % 512``, the
    unaligned rate) and the L2 lines it covers, compared with the lines of the other
    transfers (hit, miss, eviction order: the cache is fully associative, and runs of
    lines never join across transfers, so only lines that two transfers share link them).
    The transfers fall into *islands*, the sets linked by shared lines. A transfer of rows
    (a key with runs, :func:`npusim.ascendc.datacopy.gm_key`) touches only its rows' lines,
    but is taken here as its whole span: its runs are offsets from its address and move
    with it, so the islands found are unions of true ones, which moves as wholes just as
    safely (the lines within a row set keep their places relative to the line grid, as
    every move keeps ``addr % line``). Moving an island as
    a whole by a multiple of lcm(line, 512) bytes changes nothing the replay reads (nor
    does the islands' order in GM); the key moves every island to a canonical place (one
    after the other from 0, in the order the records first touch them, one line apart,
    keeping its alignment), so launches whose islands differ only in where they are get
    equal keys. Everything else in the records is kept as it is."""
    if sum(map(len, blocks)) > 4 * RELOCATE_MAX_TRANSFERS:
        return None                               # surely too many: not even counted
    step = math.lcm(line, 512) // line            # lines per move
    found = []                                    # (first line, end line, record, where)
    for rec in _transfers(blocks):
        key = rec[4]
        addr, span = key[0], key[1]
        if len(key) > 3 and key[3] is not None and not _INTS.issuperset(
                map(type, chain(*key[3]))):
            return None                           # rows that differ from member to member
        if type(addr) is int and type(span) is int:     # (most: one block's own transfer)
            found.append((addr // line, (addr + max(span, 1) - 1) // line + 1, len(found)))
            if len(found) > RELOCATE_MAX_TRANSFERS:
                return None
            continue
        addrs = addr[1] if _per_member(addr) else (addr,)
        spans = span[1] if _per_member(span) else (span,) * len(addrs)
        if len(spans) != len(addrs):
            addrs = addrs * len(spans)
        for a, n in zip(addrs, spans):
            if type(a) is not int or type(n) is not int:
                return None
            found.append((a // line, (a + max(n, 1) - 1) // line + 1, len(found)))
        if len(found) > RELOCATE_MAX_TRANSFERS:
            return None
    if not found:
        return _records_key(blocks)
    # the islands, in address order: first line, end line, first transfer in record order
    found.sort()
    islands = []
    i, n = 0, len(found)
    while i < n:
        first, end, seen = found[i]
        i += 1
        while i < n and found[i][0] < end:
            end = max(end, found[i][1])
            seen = min(seen, found[i][2])
            i += 1
        islands.append([first, end, seen, 0])
    # each island's place: in the order the records first touch them (not their
    # addresses', which another allocation may change), one line apart, keeping its
    # alignment
    cursor = 0
    for island in sorted(islands, key=itemgetter(2)):
        first, end = island[0], island[1]
        base = cursor + (first - cursor) % step   # >= cursor, = first (mod step)
        island[3] = (base - first) * line
        cursor = base + (end - first) + 1
    starts = [island[0] for island in islands]
    shifts = [island[3] for island in islands]

    def moved(addr):
        if _per_member(addr):
            return (addr[0], tuple(a + shifts[bisect_right(starts, a // line) - 1]
                                   for a in addr[1]))
        return addr + shifts[bisect_right(starts, addr // line) - 1]

    def relocated(rec):
        key = rec[4]
        return (rec[0], _plain_pipe(rec[1], rec[1]), rec[2], rec[3], (moved(key[0]), *key[1:]),
                *rec[5:])

    def plain(records, skip=frozenset()):
        """The records (:func:`_plain`, inline), each transfer's address moved with its
        island; None for those at the indices ``skip`` (a group's per-member ones)."""
        pipe = _plain_pipe
        return [None if i in skip else relocated(r) if r[0] == DMA_IN or r[0] == DMA_OUT
                else (r[0], pipe(r[1], r[1]), *r[2:]) for i, r in enumerate(records)]

    out = []
    groups: dict = {}
    for records in blocks:
        template = getattr(records, "template", None)
        if template is None:
            out.append(tuple(plain(records)))
            continue
        group, patched, per_member = template
        part = groups.get(id(group))
        if part is None:
            items = plain(group, set(patched))
            per = tuple(plain(per_member))
            part = groups[id(group)] = _Shared((tuple(items), patched, per))
        out.append((part, records.member))
    return ("relocated", tuple(out))


def _pack(timing: KernelTiming) -> tuple:
    """``timing`` as the kept replays hold it: its per-block arrays (start, end, each pipe's
    busy cycles) stacked into one float64 array whose bytes are zlib-compressed (exact: the
    bytes come back as they were; the rows repeat one value over the blocks more often
    than not, so a 48-block timing keeps a few hundred bytes instead of a few KiB), the
    rest as it is. A long run's kept replays are then a few objects each, which keeps its
    RSS flat once the store is full and nearly so while it fills (``bench_soak.py``)."""
    pipes = tuple(timing.pipe_busy)
    rows = np.stack([timing.block_start, timing.block_end,
                     *(timing.pipe_busy[p] for p in pipes)]).astype(np.float64, copy=False)
    spans = None if timing.spans is None else tuple(tuple(s) for s in timing.spans)
    return (zlib.compress(rows.tobytes(), 1), rows.shape, pipes, timing.cycles, spans,
            timing.hbm_bytes, timing.l2_hit_bytes, timing.l2_bytes)


def _unpack(kept: tuple) -> KernelTiming:
    """A fresh :class:`KernelTiming` from :func:`_pack`'s form: nothing in it is shared with
    the kept replay, so a caller may change it."""
    data, shape, pipes, cycles, spans, hbm, l2_hit, l2 = kept
    rows = np.frombuffer(zlib.decompress(data), np.float64).reshape(shape).copy()
    busy = {p: rows[2 + i] for i, p in enumerate(pipes)}
    spans = None if spans is None else [list(s) for s in spans]
    return KernelTiming(cycles, rows[0], rows[1], busy, spans, hbm, l2_hit, l2)


def _replay(blocks, soc, keep_spans, cores, profile_pipes, l2) -> KernelTiming:
    """:func:`simulate`, the garbage collector paused."""
    _FILL_KEPT.clear()                 # the rate sharings are kept for one replay
    _REPEATED.clear()
    if not keep_spans and l2 is None:
        from npusim import group_replay
        if group_replay.GROUP_REPLAY:
            timing = group_replay.replay_group(blocks, soc, cores, profile_pipes)
            if timing is not None:
                return timing
    loop = _Loop()
    if l2 is None:
        # a cold L2 nobody reads after the replay: answered from its resident lines while
        # nothing can leave it, the same results (npusim.l2_cold)
        from npusim.l2_cold import ColdL2
        memory = _Memory(soc, loop, ColdL2(L2Cache(soc), _row_lines))
    else:
        memory = _Memory(soc, loop, l2)
    n_blocks = len(blocks)
    n_cores = max(1, soc.vector_block_num if cores is None else cores)
    block_start = np.zeros(n_blocks)
    block_end = np.full(n_blocks, np.nan)
    busy = {p: np.zeros(n_blocks) for p in profile_pipes}
    spans = [[] for _ in range(n_blocks)] if keep_spans else None
    waiting: dict[int, tuple] = {}     # block -> (pipe, label, flag key) of its last wait

    queue, push, seq = loop.queue, heapq.heappush, loop.seq

    def pipe_proc(b, pipe, items, flags, barriers, me, end):
        # ``me``: [this generator's send], to resume it (filled before it starts)
        me = me[0]
        total = 0.0
        out = spans[b] if keep_spans else None
        transfer = memory.transfer
        is_cube = cube[b]
        # the MTE issue model: a DMA pipe issues its next instruction once a transfer's
        # bytes are through; the transfers in flight complete by ``until``, which a flag
        # set on the pipe, a barrier and the pipe's end wait for. Busy: the union of the
        # transfers' [issue, completion] intervals.
        until = 0.0
        for kind, value, key, label, n, idx in items:
            if kind == OP:
                t0 = loop.now
                push(queue, (t0 + value, _NORMAL, next(seq), me, None))
                yield
                if t0 >= until:
                    total += value
                elif loop.now > until:
                    # busy is a union: the part while the pipe's copies were in flight is
                    # counted with them
                    total += loop.now - until
                if out is not None:
                    out.append((pipe, t0, loop.now, label, idx))
                continue
            if kind == DMA_IN or kind == DMA_OUT:
                t0 = loop.now
                event, not_before = transfer(t0, kind, value, key, is_cube, b)
                event.callbacks.append(me)
                yield
                now = loop.now
                done = now if now > not_before else not_before
                if done > until:
                    total += done - (t0 if t0 > until else until)
                    until = done
                if out is not None:
                    out.append((pipe, t0, done, label, idx))
                continue
            if until > loop.now and kind != WAIT:
                # a flag set on the pipe, or a barrier: the transfers in flight complete
                # first
                push(queue, (until, _NORMAL, next(seq), me, None))
                yield
            if kind == SET:
                if key[0] == "xset":
                    cross.contribute(key[1])
                else:
                    flag = flags.get(key)
                    if flag is None:
                        flags[key] = flag = _Flag()
                    if flag.waiters:
                        push(queue, (loop.now, _NORMAL, next(seq), flag.waiters.pop(0), None))
                    else:
                        flag.count += 1
            elif kind == WAIT:
                if key[0] == "xcore":
                    blocked = cross.wait(key, me)
                else:
                    flag = flags.get(key)
                    if flag is None:
                        flags[key] = flag = _Flag()
                    if flag.count:
                        flag.count -= 1
                        blocked = False
                    else:
                        flag.waiters.append(me)
                        blocked = True
                if blocked:
                    waiting[b] = (pipe, label, key)     # described only if it never ends
                    t0 = loop.now
                    yield
                    if key[0] == "unit":
                        # a Fixpipe waiting for the units a unitFlag Mmad releases: msprof
                        # counts it busy from issue to end (npusim.ascendc.cube.unitflag);
                        # the part while the pipe's copies were in flight is counted already
                        start = t0 if t0 > until else until
                        if loop.now > start:
                            total += loop.now - start
                            until = loop.now
                            if out is not None:
                                out.append((pipe, start, loop.now, "Fixpipe (unitFlag wait)",
                                            idx))
            else:  # BARRIER: PipeBarrier(PIPE_ALL) within the block, or SyncAll across blocks
                if isinstance(key, tuple):
                    # a mixed launch's SyncAll lists its cores; a vector one joins them all
                    table, parties = shared_barriers, (all_parties if len(key) < 3 else sum(
                        len(block_pipes[c]) for c in key[2]))
                else:
                    table, parties = barriers, len(block_pipes[b])
                bar = table.get(key)
                if bar is None:
                    bar = table[key] = _Barrier(loop, parties)
                waiting[b] = (pipe, label, None)
                bar.arrive().callbacks.append(me)
                yield
        if until > loop.now:        # the pipe ends when its transfers have completed
            push(queue, (until, _NORMAL, next(seq), me, None))
            yield
        if pipe in busy:
            busy[pipe][b] = total
        loop.succeed(end)
        yield                   # done: never resumed

    # pipes of each block; a SyncAll barrier joins every pipe of every block
    ALL = Pipe.PIPE_ALL
    kept_pipes: dict = {}
    block_pipes = [_block_pipes(records, kept_pipes) for records in blocks]
    all_parties = sum(len(p) for p in block_pipes)
    # the blocks that run on an AIC (its pipes, or an AIC-only launch): their transfers do
    # not use the vector cores' interconnect (``noc_bandwidth``)
    cube_pipes = {Pipe.PIPE_MTE1, Pipe.PIPE_M, Pipe.PIPE_FIX}
    cube = [profile_pipes is AIC_PROFILE_PIPES or bool(p & cube_pipes) for p in block_pipes]
    shared_barriers: dict = {}
    cross = _CrossCoreEvents(loop)
    split_kept: dict = {}             # a lockstep group's pipe lists (_split_member)

    def core_proc(block_ids, me):
        me = me[0]
        for b in block_ids:
            block_start[b] = loop.now
            records = blocks[b]
            pipes = block_pipes[b]
            lists = _split_member(records, pipes, not keep_spans, split_kept)
            flags, barriers = {}, {}
            ends = []
            for p, items in lists.items():
                end = _Event()
                box = []
                gen = pipe_proc(b, p, items, flags, barriers, box, end)
                box.append(gen.send)
                gens.append(gen)
                loop.start(gen)
                ends.append(end)
            if ends:
                _AllOf(loop, ends).callbacks.append(me)
                yield
            block_end[b] = loop.now
        yield                   # done: never resumed

    gens = []
    for c in range(min(n_cores, n_blocks)):
        box = []
        gen = core_proc(range(c, n_blocks, n_cores), box)
        box.append(gen.send)
        gens.append(gen)
        loop.start(gen)
    loop.run()
    # each process waits at its last step, a cycle (its frame holds its own send) that
    # keeps the memory system, L2 and all, alive through the closures: the cyclic
    # collector, paused during a launch, would walk it once it runs again. Closing the
    # processes (and dropping a hang's pending wakes) frees it here.
    for gen in gens:
        gen.close()
    loop.queue.clear()
    if np.isnan(block_end).any():
        b = int(np.flatnonzero(np.isnan(block_end))[0])
        if b in waiting:
            pipe, label, key = waiting[b]
            what = f"{Pipe(pipe).name} waits at {label}" + (
                f" for {key[0]} {key[1:]}" if key is not None else "")
        else:
            what = "a pipe waits forever"
        raise SyncError("WaitFlag", f"the kernel hangs: {what} that is never set", core=b,
                        line="?")
    cycles = float(block_end.max() - block_start.min()) if n_blocks else 0.0
    return KernelTiming(cycles, block_start, block_end, busy, spans, memory.hbm_bytes,
                        memory.l2_hit_bytes, tuple(memory.l2_counts()))
