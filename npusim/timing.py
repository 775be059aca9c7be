"""The timing model: a simpy replay of the instructions each core recorded.

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
* A DMA costs its core at least ``latency + bytes / rate``: the MTE2 (GM -> UB) latency is
  ``dma_latency_cycles``, MTE3's ``dma_write_latency_cycles``; the rate is the per-core
  ini rate of the path (``ddr_read_rate`` for HBM reads, ``l2_read_rate`` for L2 hits,
  ``ddr_write_rate`` for writes; reference/hardware.md §1.6), derated by
  ``gm_unaligned_rate_factor`` when the GM address is not 512 B aligned (§2).
* Between the cores and HBM sits an L2 cache of ``l2_size`` bytes (LRU over
  ``l2_line_bytes`` lines, cold at the start of each launch). Reads that hit are served
  at L2 rates; reads that miss come from HBM and are allocated; writes are allocated in L2
  (write-back) and reach HBM only when a dirty line is evicted, through the HBM write
  queue. A GlobalTensor with ``SetL2CacheHint(CACHE_MODE_DISABLE)`` bypasses L2 both ways.
* The transfers in flight share the device's paths (:class:`_Memory`): the interconnect
  between the cores and L2/HBM (``noc_bandwidth``), the L2 (``l2_bandwidth``) and HBM
  (``hbm_bandwidth``, less while reads and writes mix), reads first, then writes in what
  the reads leave. One core is latency- and rate-bound; many cores together are bound by
  HBM for reads that miss, by the interconnect when their reads and writes together fill
  it.

Consecutive vector or scalar instructions without a sync between them are costed as one
simpy timeout, so the replay costs a few events per tile, not per instruction.
"""
from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import simpy

from npusim.ascendc.core import BARRIER, DMA_IN, DMA_OUT, OP, SET, WAIT
from npusim.ascendc.types import Pipe
from npusim.errors import SyncError

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
        pipe_busy: pipe -> array of busy cycles per block (waits excluded).
        spans: per block, a list of ``(pipe, start, end, label, record_index)`` when spans
            were kept (one per instruction; ``record_index`` indexes the block's records).
        hbm_bytes: bytes the launch moved to or from HBM (L2 misses, write-backs, bypasses).
        l2_hit_bytes: bytes read from L2 hits.
    """

    cycles: float
    block_start: np.ndarray
    block_end: np.ndarray
    pipe_busy: dict
    spans: list | None = field(default=None, repr=False)
    hbm_bytes: float = 0.0
    l2_hit_bytes: float = 0.0


class _Flag:
    __slots__ = ("count", "waiters")

    def __init__(self):
        self.count = 0
        self.waiters = []

    def set(self):
        if self.waiters:
            self.waiters.pop(0).succeed()
        else:
            self.count += 1

    def wait(self, env):
        if self.count:
            self.count -= 1
            return None
        ev = env.event()
        self.waiters.append(ev)
        return ev


def _flag(flags: dict, key) -> _Flag:
    """The flag ``key`` of a block, created on first use."""
    flag = flags.get(key)
    if flag is None:
        flag = flags[key] = _Flag()
    return flag


class _CrossCoreEvents:
    """The counter updates of a launch's cross-core flags: each fires (is set, once) when
    all the CrossCoreSetFlags it needs have fired."""

    def __init__(self):
        self.flags: dict = {}
        self.sets: dict = {}

    def contribute(self, events) -> None:
        for event, needed in events:
            got = self.sets.get(event, 0) + 1
            self.sets[event] = got
            if got == needed:
                _flag(self.flags, event).set()

    def wait(self, env, event):
        return _flag(self.flags, event).wait(env)


class _Barrier:
    __slots__ = ("parties", "arrived", "event")

    def __init__(self, env, parties):
        self.parties, self.arrived, self.event = parties, 0, env.event()

    def arrive(self):
        self.arrived += 1
        if self.arrived == self.parties:
            self.event.succeed()
        return self.event


class L2Cache:
    """L2 residency of GM lines, LRU, write-back and write-allocate.

    With ``soc.l2_write_through_when_full``, a write that finds the cache full is also
    written on to HBM at once (its lines stay resident, clean): write-back while the cache
    has room, write-through under replacement pressure (docs/calibration.md).

    Lines of ``l2_line_bytes`` (512 B on C220, reference/hardware.md §1.6 [S]) are kept as
    runs of consecutive lines that share one recency stamp and one dirty flag, so that a
    streaming transfer of many lines costs a few operations, not one per line. The result
    is exactly that of a per-line LRU cache (tests compare the two).

    Runs are found through pages of :attr:`PAGE` lines: each page lists the runs that
    touch it, so finding the runs a transfer overlaps costs the same however many runs are
    resident (a sorted list of run starts costs a memmove of the whole list per change).
    """

    #: lines per index page: a page lists the runs touching it
    PAGE = 64

    def __init__(self, soc):
        self.line = int(soc.l2_line_bytes)
        self.capacity = max(1, int(soc.l2_size) // self.line)
        self.size = 0                      # resident lines
        self.runs: dict[int, list] = {}    # start line -> [end, dirty, stamp]
        self.pages: dict[int, set] = {}    # page -> starts of the runs touching it
        self.heap: list[tuple[int, int]] = []   # (stamp, start), stale entries skipped
        self.clock = 0
        self.write_through_when_full = bool(getattr(soc, "l2_write_through_when_full", False))

    def _add(self, start: int, end: int, dirty: bool, stamp: int) -> None:
        self.runs[start] = [end, dirty, stamp]
        heapq.heappush(self.heap, (stamp, start))
        self.size += end - start
        pages, P = self.pages, self.PAGE
        for p in range(start // P, (end - 1) // P + 1):
            page = pages.get(p)
            if page is None:
                pages[p] = {start}
            else:
                page.add(start)

    def _remove(self, start: int) -> list:
        run = self.runs.pop(start)
        self.size -= run[0] - start
        self._unpage(start, start, run[0])
        return run

    def _unpage(self, start: int, lo: int, hi: int) -> None:
        """The run at ``start`` no longer holds lines [lo, hi) (its tail, or all of it):
        drop it from the pages it no longer touches."""
        pages, P = self.pages, self.PAGE
        first = lo // P if lo == start else (lo - 1) // P + 1
        for p in range(first, (hi - 1) // P + 1):
            page = pages[p]
            page.discard(start)
            if not page:
                del pages[p]

    def _overlapping(self, a: int, b: int) -> list[int]:
        """Starts of the resident runs that share a line with [a, b), in address order."""
        pages, runs, P = self.pages, self.runs, self.PAGE
        p0, p1 = a // P, (b - 1) // P
        if p0 == p1:
            found = pages.get(p0, ())
        else:
            found = set()
            for p in range(p0, p1 + 1):
                page = pages.get(p)
                if page:
                    found |= page
        return sorted([s for s in found if s < b and runs[s][0] > a])

    def _cut(self, a: int, b: int) -> list[tuple[int, int, bool]]:
        """Remove lines [a, b) from the runs; return the removed pieces (start, end, dirty)."""
        pieces = []
        runs = self.runs
        for s in self._overlapping(a, b):
            run = runs[s]
            e, dirty, stamp = run
            if s < a:                   # the head [s, a) stays, in place, with its recency
                run[0] = a
                self.size -= e - a
                self._unpage(s, a, e)
            else:
                self._remove(s)
            if e > b:
                self._add(b, e, dirty, stamp)
            pieces.append((max(s, a), min(e, b), dirty))
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
        pieces = self._cut(a, b)
        if not pieces:
            # the common case, a range no resident line touches: all misses, one new run
            through = 0
            if write and self.write_through_when_full and self.size + b - a > self.capacity:
                through, write = (b - a) * self.line, False
            self._add(a, b, write, stamp)
            return 0.0, (self._evict() if self.size > self.capacity else 0), through
        hits = 0
        pos = a
        merged: list[list] = []
        for s, e, dirty in pieces + [(b, b, write)]:
            hits += e - s
            for ps, pe, pd in ((pos, s, write), (s, e, dirty or write)):   # miss gap, then hit
                if pe > ps:
                    if merged and merged[-1][1] == ps and merged[-1][2] == pd:
                        merged[-1][1] = pe
                    else:
                        merged.append([ps, pe, pd])
            pos = e
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

    def _evict(self) -> int:
        wb = 0
        while self.size > self.capacity:
            stamp, start = heapq.heappop(self.heap)
            run = self.runs.get(start)
            if run is None or run[2] != stamp:
                continue                    # stale heap entry
            end, dirty, _ = self._remove(start)
            n = min(self.size + (end - start) - self.capacity, end - start)
            if n < end - start:             # evict the run's first lines only
                self._add(start + n, end, dirty, stamp)
            if dirty:
                wb += n * self.line
        return wb

    def invalidate(self, addr: int, span: int) -> None:
        """Drop the lines of a range written around the cache."""
        self._cut(addr // self.line, (addr + max(span, 1) - 1) // self.line + 1)


#: The rate limit of a flow no core's path bounds (a write drain from L2 to HBM), B/cycle.
_UNLIMITED = 1e12


class _Memory:
    """The shared memory system of a launch: L2 residency, and the bandwidth every transfer
    in flight shares with the others.

    A DMA's bytes flow from the moment it is issued; every flow in flight takes a rate,
    recomputed whenever a flow starts or ends (a fluid model of the requests in flight).
    The rates share, max-min fairly (progressive filling: equal rates until a flow reaches
    its own limit or a resource it uses is full), first among the reads, then among the
    writes in what the reads leave (reads first: a write waits behind the reads on every
    path they share):

    * its core's path: ``ddr_read_rate`` for the bytes read from HBM, ``l2_read_rate`` for
      L2 hits, ``ddr_write_rate`` for writes (B/cycle per core, reference/hardware.md §1.6),
      x ``gm_unaligned_rate_factor`` when the GM address is not 512 B aligned (§2);
    * the interconnect between the vector cores (AIV) and L2/HBM, ``noc_bandwidth``, which
      carries every byte an AIV reads or writes (the cube cores' reads of L2 reach 4 TB/s
      and more in the matmul measurements of reference/hardware.md §4.2, so they do not
      share it);
    * the L2 data array, ``l2_bandwidth``, for hits, allocations and absorbed writes;
    * HBM, ``hbm_bandwidth``, for reads that miss or bypass L2, plus
      ``hbm_transfer_overhead_cycles`` of bus time per transfer. Writes to HBM (dirty lines
      evicted by an allocation, writes that bypass L2) go to the HBM write queue
      (``hbm_write_queue_bytes``), which drains in the HBM capacity the flows leave; bytes
      that find the queue full are drained at once, ahead of later reads, and the access
      that brought them waits for them. While reads and writes are both at HBM its capacity is
      ``hbm_mixed_efficiency`` x ``hbm_bandwidth`` (the bus turns around between them).

    A DMA ends when its bytes are through, and not before its fixed cost
    (``dma_latency_cycles`` for MTE2, ``dma_write_latency_cycles`` for MTE3) plus its bytes
    at its own limit: one core alone gets ``latency + bytes / rate``; under load the latency
    hides in the queueing. Every parameter's basis is in docs/calibration.md.
    """

    NOC, HBM, L2 = 0, 1, 2

    def __init__(self, soc, env, l2: L2Cache | None = None):
        self.soc, self.env = soc, env
        self.l2 = L2Cache(soc) if l2 is None else l2
        f = soc.freq_hz
        self.capacity = np.array([soc.noc_bandwidth / f, soc.hbm_bandwidth / f,
                                  soc.l2_bandwidth / f])
        self.hbm_overhead_bytes = soc.hbm_transfer_overhead_cycles * soc.hbm_bandwidth / f
        self.hbm_mixed = soc.hbm_mixed_efficiency
        self.hbm_bytes = 0.0
        self.l2_hit_bytes = 0.0
        # flows in flight: bytes left, limit (B/cycle), bytes per byte on each resource,
        # whether they write to HBM / read from HBM, completion event
        self.left: list[float] = []
        self.limit: list[float] = []
        self.weight: list[tuple] = []
        self.is_read: list[bool] = []
        self.hbm_dir: list[int] = []         # bit 1: reads HBM, bit 2: writes HBM
        self.done: list = []
        self.rate = np.zeros(0)
        self.since = 0.0
        self.generation = 0
        self.pending = False
        # dirty lines evicted and not yet written: the HBM write queue, drained with the
        # HBM capacity the flows leave
        self.queue_bytes = float(soc.hbm_write_queue_bytes)
        self.backlog = 0.0
        self.drain = 0.0

    # -- one transfer ---------------------------------------------------------------------
    def transfer(self, now: float, kind: int, nbytes: int, key, cube: bool = False):
        """Start a DMA of ``nbytes`` described by ``key`` (from an AIC when ``cube``); return
        the simpy event of its end."""
        soc = self.soc
        addr, span, bypass = key
        factor = 1.0 if not addr & 511 else soc.gm_unaligned_rate_factor
        if kind == DMA_IN:
            hit, wb = (0.0, 0) if bypass else self.l2.access(addr, span, False)[:2]
            hit_bytes = nbytes * hit
            miss = nbytes - hit_bytes
            self.l2_hit_bytes += hit_bytes
            limit = nbytes / (hit_bytes / soc.l2_read_rate + miss / soc.ddr_read_rate) * factor
            on_l2 = 0.0 if bypass else nbytes
            self.hbm_bytes += miss + wb
            wait = self._queue(wb)
            on_hbm = miss
            direction = 1 if miss else 0
            latency = soc.dma_latency_cycles
        else:
            if bypass:          # posted to the HBM write queue, like an evicted line
                self.l2.invalidate(addr, span)
                self.hbm_bytes += nbytes
                wait = self._queue(nbytes)
                on_l2, on_hbm, direction = 0.0, 0.0, 0
            else:
                _, wb, through = self.l2.access(addr, span, True)
                self.hbm_bytes += wb + through
                wait = self._queue(wb + through)
                on_l2, on_hbm, direction = nbytes, 0.0, 0
            limit = soc.ddr_write_rate * factor
            latency = soc.dma_write_latency_cycles
        if on_hbm:
            on_hbm += self.hbm_overhead_bytes
        done = self.env.event()
        if nbytes <= 0:
            self.env.process(self._finish(now + latency, done))
            return done
        # the flow starts at once (its requests queue while the latency runs); the DMA ends
        # when its bytes are through, and not before latency + bytes / its own limit
        self._flow(nbytes, limit, (0.0 if cube else 1.0, on_hbm / nbytes, on_l2 / nbytes),
                   kind == DMA_IN, direction, now + latency + nbytes / limit, done)
        if not wait:
            return done
        # victims that found the write queue full: the controller drains them ahead of the
        # reads (a write drain), and the access waits for them
        drained = self.env.event()
        self._flow(wait, _UNLIMITED, (0.0, 1.0 + self.hbm_overhead_bytes / wait, 0.0), True, 2,
                   now, drained)
        return simpy.AllOf(self.env, (done, drained))

    def _flow(self, nbytes, limit, weight, first, direction, not_before, done) -> None:
        """Put a flow in flight (``first``: served in the first class, the reads')."""
        self._advance()
        self.left.append(float(nbytes))
        self.limit.append(limit)
        self.weight.append(weight)
        self.is_read.append(first)
        self.hbm_dir.append(direction)
        self.done.append((not_before, done))
        self._changed()

    def _queue(self, nbytes: float) -> float:
        """Put ``nbytes`` of evicted dirty lines in the HBM write queue; return the bytes that
        find it full, which the evicting access must write itself (it waits for them)."""
        if not nbytes:
            return 0.0
        self._advance()
        room = self.queue_bytes - self.backlog
        if nbytes <= room:
            self.backlog += nbytes
            self._changed()
            return 0.0
        self.backlog = max(self.backlog, self.queue_bytes)
        self._changed()
        return nbytes - max(room, 0.0)

    def _finish(self, at, done):
        if at > self.env.now:
            yield self.env.timeout(at - self.env.now)
        done.succeed()

    # -- the fluid model ------------------------------------------------------------------
    def _advance(self) -> None:
        """Move every flow on by its rate since the last change."""
        now = self.env.now
        dt = now - self.since
        if dt > 0:
            if self.left:
                rate = self.rate
                self.left = [x - r * dt for x, r in zip(self.left, rate)]
            if self.backlog:
                self.backlog = max(0.0, self.backlog - self.drain * dt)
        self.since = now

    def _changed(self) -> None:
        """Recompute the rates once for all changes at this instant."""
        if not self.pending:
            self.pending = True
            self.env.process(self._recompute())

    def _recompute(self):
        """At the end of this instant: retire the finished flows, share the capacities
        anew, and wake again when the next flow (or the write queue) runs out."""
        yield self.env.timeout(0)
        self.pending = False
        self._advance()
        # finished flows leave
        eps = 1e-6
        keep = [i for i, x in enumerate(self.left) if x > eps]
        if len(keep) < len(self.left):
            now = self.env.now
            for i, x in enumerate(self.left):
                if x <= eps:
                    at, done = self.done[i]
                    if at > now + eps:
                        self.env.process(self._finish(at, done))
                    else:
                        done.succeed()
            self.left = [self.left[i] for i in keep]
            self.limit = [self.limit[i] for i in keep]
            self.weight = [self.weight[i] for i in keep]
            self.is_read = [self.is_read[i] for i in keep]
            self.hbm_dir = [self.hbm_dir[i] for i in keep]
            self.done = [self.done[i] for i in keep]
        self.generation += 1
        self.rate, self.drain = self._share()
        wake = [self.backlog / self.drain] if self.backlog > 1e-6 and self.drain > 0 else []
        if self.backlog <= 1e-6:
            self.backlog = 0.0
        moving = self.rate > 0      # a write may wait with no rate while reads fill a path
        if moving.any():
            left = np.maximum(np.asarray(self.left)[moving], 0.0)
            wake.append(float((left / self.rate[moving]).min()))
        if wake:
            self.env.process(self._wake(min(wake), self.generation))

    def _wake(self, t, generation):
        yield self.env.timeout(t)
        if generation == self.generation:
            self._changed()

    def _share(self) -> tuple[np.ndarray, float]:
        """Max-min fair rates of the flows in flight (progressive filling), and the rate at
        which the HBM write queue drains in the HBM capacity they leave."""
        reads = writes = False
        for d in self.hbm_dir:
            reads |= bool(d & 1)
            writes |= bool(d & 2)
        capacity = self.capacity.copy()
        if reads and writes:
            capacity[self.HBM] *= self.hbm_mixed
        rate, left = self._fill(capacity)
        if self.backlog > 0 and left[self.HBM] > 1e-9 * self.capacity[self.HBM]:
            if reads and not writes:      # the drain turns the bus to writes as well
                capacity[self.HBM] *= self.hbm_mixed
                rate, left = self._fill(capacity)
            return rate, max(0.0, left[self.HBM])
        return rate, 0.0

    def _fill(self, capacity):
        """Rates of the flows for the resource ``capacity`` left: the reads share it max-min
        fairly (progressive filling), then the writes share what the reads leave."""
        n = len(self.limit)
        capacity = capacity.copy()
        rate = np.zeros(n)
        if not n:
            return rate, capacity
        limit = np.asarray(self.limit)
        weight = np.asarray(self.weight)
        reads = np.asarray(self.is_read)
        for cls in (reads, ~reads):
            active = cls.copy()
            while active.any():
                use = weight[active].sum(axis=0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    room = np.where(use > 0, capacity / use, np.inf)
                step = min(room.min(), (limit - rate)[active].min())
                rate[active] += step
                capacity -= step * use
                full = (use > 0) & (capacity <= 1e-9 * self.capacity)
                stop = active & (rate >= limit * (1 - 1e-12))
                if full.any():
                    stop |= active & (weight[:, full] > 0).any(axis=1)
                active &= ~stop
        return rate, capacity


#: Leave out the issue flags that cannot delay their pipe (:class:`_IssuePruner`); the
#: replay's times are the same either way (tests compare the two).
PRUNE_ISSUE_WAITS = True


def _split(records, pipes, merge: bool = True):
    """Per-pipe item lists ``(kind, cost_or_bytes, key, label, n_merged, record_index)``.

    With ``merge``, consecutive OP records of one pipe become one item (one simpy timeout).
    The scalar unit issues every instruction in program order and stalls while it computes
    or waits on a flag, so after scalar work (or a WaitFlag on PIPE_S) the next instruction
    of another pipe also waits for it: an ``issue`` flag from PIPE_S to the other pipes.

    With ``merge``, an issue flag is also left out where it cannot delay its pipe
    (:class:`_IssuePruner`), which leaves the replay's times unchanged.
    """
    S = Pipe.PIPE_S
    lists = {p: [] for p in pipes}
    others = [p for p in pipes if p != S]
    scalar_pending = False
    prune = _IssuePruner(lists, S) if merge and PRUNE_ISSUE_WAITS else None
    for i, (kind, pipe, cycles, nbytes, key, name) in enumerate(records):
        if scalar_pending and pipe != S and kind not in (SET, BARRIER):
            if prune is not None:
                prune.issue(i, others)
            else:
                for p in others:
                    token = ("issue", i, p)
                    lists[S].append((SET, 0, token, "issue", 1, i))
                    lists[p].append((WAIT, 0, token, "issue", 1, i))
            scalar_pending = False
        if prune is not None and kind != OP and pipe != Pipe.PIPE_ALL:
            prune.before(kind, pipe, key)
        if kind == OP:
            lst = lists[pipe]
            if prune is not None and pipe != S and pipe in prune.pending:
                prune.flush(pipe)
            if merge and lst and lst[-1][0] == OP:
                _, c, _, label, n, first = lst[-1]
                lst[-1] = (OP, c + cycles, None, label, n + 1, first)
            else:
                lst.append((OP, cycles, None, name, 1, i))
            if pipe == S:
                scalar_pending = True
        elif kind in (DMA_IN, DMA_OUT):
            lists[pipe].append((kind, nbytes, key, name, 1, i))
        elif kind == BARRIER:
            if pipe == Pipe.PIPE_ALL:   # SyncAll passes its shared key; PipeBarrier a fresh one
                if prune is not None:
                    prune.barrier()
                token = key if key is not None else object()
                for lst in lists.values():
                    lst.append((BARRIER, 0, token, name, 1, i))
        else:
            lists[pipe].append((kind, 0, key, name, 1, i))
            if kind == WAIT and pipe == S:
                scalar_pending = True
    if prune is not None:
        prune.finish()
    return lists


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
    """

    def __init__(self, lists, S):
        self.lists, self.S = lists, S
        self.pending: dict = {}          # pipe -> issue point whose wait is held back
        self.known: dict = {}            # pipe -> last issue point it knows S passed
        self.s_point = -1                # the last issue point (S passes them in order)
        self.sets: dict = {}             # flag key -> knowledge of its unconsumed sets
        self.debt: dict = {}             # flag key -> waits recorded before their set
        self.used: set = set()           # (point, pipe) of the issue flags kept

    def issue(self, i: int, others) -> None:
        lst = self.lists[self.S]
        for p in others:
            lst.append((SET, 0, ("issue", i, p), "issue", 1, i))
            self.pending[p] = i          # replaces (drops) an earlier held-back wait
        self.s_point = i

    def flush(self, p) -> None:
        """``p`` issues an instruction that is not a wait: keep its held-back issue wait
        unless ``p`` already knows the scalar unit passed that point."""
        point = self.pending.pop(p)
        if point > self.known.get(p, -1):
            self.lists[p].append((WAIT, 0, ("issue", point, p), "issue", 1, point))
            self.used.add((point, p))
            self.known[p] = point

    def before(self, kind: int, pipe, key) -> None:
        """Book-keeping before a DMA, SET or WAIT record of ``pipe`` is listed."""
        S = self.S
        if kind == WAIT:
            queue = self.sets.get(key)
            if queue:
                value = queue.popleft()
                if pipe != S and value > self.known.get(pipe, -1):
                    self.known[pipe] = value
            else:
                self.debt[key] = self.debt.get(key, 0) + 1
            return
        if pipe != S and pipe in self.pending:
            self.flush(pipe)
        if kind == SET:
            if self.debt.get(key):
                self.debt[key] -= 1
                return
            queue = self.sets.get(key)
            if queue is None:
                queue = self.sets[key] = deque()
            queue.append(self.s_point if pipe == S else self.known.get(pipe, -1))

    def barrier(self) -> None:
        for p in list(self.pending):
            self.flush(p)
        for p in self.lists:
            self.known[p] = self.s_point

    def finish(self) -> None:
        for p in list(self.pending):
            self.flush(p)
        S, used = self.S, self.used
        if S not in self.lists:
            return
        kept: list = []
        for it in self.lists[S]:
            if it[0] == SET and it[3] == "issue" and (it[2][1], it[2][2]) not in used:
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
            instruction is then its own simpy event).
        cores: physical cores the blocks run on, in waves (default: the vector cores,
            ``soc.vector_block_num``; an AIC_ONLY launch passes ``soc.cube_block_num``, a
            mixed one its number of cores, which all run at once).
        profile_pipes: the pipes whose busy cycles ``pipe_busy`` reports.
        l2: the L2 residency to start from (and leave the launch's in), for launches that
            follow one another on a device; a cold L2 by default.

    Raises:
        SyncError: a pipe waits for a flag that is never set (the kernel would hang).
    """
    env = simpy.Environment()
    memory = _Memory(soc, env, l2)
    n_blocks = len(blocks)
    n_cores = max(1, soc.vector_block_num if cores is None else cores)
    block_start = np.zeros(n_blocks)
    block_end = np.full(n_blocks, np.nan)
    busy = {p: np.zeros(n_blocks) for p in profile_pipes}
    spans = [[] for _ in range(n_blocks)] if keep_spans else None
    waiting: dict[int, tuple] = {}     # block -> (pipe, label, flag key) of its last wait

    def pipe_proc(b, pipe, items, flags, barriers):
        total = 0.0
        out = spans[b] if keep_spans else None
        timeout, transfer = env.timeout, memory.transfer
        for kind, value, key, label, n, idx in items:
            if kind == OP:
                t0 = env.now
                yield timeout(value)
                total += value
                if out is not None:
                    out.append((pipe, t0, env.now, label, idx))
            elif kind == DMA_IN or kind == DMA_OUT:
                t0 = env.now
                yield transfer(t0, kind, value, key, cube[b])
                total += env.now - t0
                if out is not None:
                    out.append((pipe, t0, env.now, label, idx))
            elif kind == SET:
                if key[0] == "xset":
                    cross.contribute(key[1])
                else:
                    _flag(flags, key).set()
            elif kind == WAIT:
                ev = (cross.wait(env, key) if key[0] == "xcore" else _flag(flags, key).wait(env))
                if ev is not None:
                    waiting[b] = (pipe, label, key)     # described only if it never ends
                    yield ev
            else:  # BARRIER: PipeBarrier(PIPE_ALL) within the block, or SyncAll across blocks
                if isinstance(key, tuple):
                    # a mixed launch's SyncAll lists its cores; a vector one joins them all
                    table, parties = shared_barriers, (all_parties if len(key) < 3 else sum(
                        len(block_pipes[c]) for c in key[2]))
                else:
                    table, parties = barriers, len(block_pipes[b])
                bar = table.get(key)
                if bar is None:
                    bar = table[key] = _Barrier(env, parties)
                waiting[b] = (pipe, label, None)
                yield bar.arrive()
        if pipe in busy:
            busy[pipe][b] = total

    # pipes of each block; a SyncAll barrier joins every pipe of every block
    ALL = Pipe.PIPE_ALL
    block_pipes = [{r[1] for r in records if r[1] != ALL} for records in blocks]
    all_parties = sum(len(p) for p in block_pipes)
    # the blocks that run on an AIC (its pipes, or an AIC-only launch): their transfers do
    # not use the vector cores' interconnect (``noc_bandwidth``)
    cube_pipes = {Pipe.PIPE_MTE1, Pipe.PIPE_M, Pipe.PIPE_FIX}
    cube = [profile_pipes is AIC_PROFILE_PIPES or bool(p & cube_pipes) for p in block_pipes]
    shared_barriers: dict = {}
    cross = _CrossCoreEvents()

    def core_proc(block_ids):
        for b in block_ids:
            block_start[b] = env.now
            records = blocks[b]
            pipes = block_pipes[b]
            lists = _split(records, pipes, merge=not keep_spans)
            flags, barriers = {}, {}
            procs = [env.process(pipe_proc(b, p, items, flags, barriers))
                     for p, items in lists.items()]
            if procs:
                yield simpy.AllOf(env, procs)
            block_end[b] = env.now

    for c in range(min(n_cores, n_blocks)):
        env.process(core_proc(range(c, n_blocks, n_cores)))
    env.run()
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
                        memory.l2_hit_bytes)
