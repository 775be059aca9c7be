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
* A DMA costs its core ``latency + bytes / rate``: the MTE2 (GM -> UB) latency is
  ``dma_latency_cycles``, MTE3's ``dma_write_latency_cycles``; the rate is the per-core
  ini rate of the path (``ddr_read_rate`` for HBM reads, ``l2_read_rate`` for L2 hits,
  ``ub_to_l2_rate`` / ``ub_to_ddr_rate`` for writes; reference/hardware.md §1.6), derated
  by ``gm_unaligned_rate_factor`` when the GM address is not 512 B aligned (§2).
* Between the cores and HBM sits an L2 cache of ``l2_size`` bytes (LRU over
  ``l2_line_bytes`` lines, cold at the start of each launch). Reads that hit are served
  at L2 rates; reads that miss come from HBM and are allocated; writes are allocated in L2
  (write-back) and reach HBM only when a dirty block is evicted. A GlobalTensor with
  ``SetL2CacheHint(CACHE_MODE_DISABLE)`` bypasses L2 both ways.
* All cores share the device's L2 bandwidth (``l2_bandwidth``) and HBM bandwidth
  (``hbm_bandwidth``), each served first come, first served; every transfer that reaches
  HBM also occupies it for ``hbm_transfer_overhead_cycles``. A transfer ends when its core
  side and every shared resource it used are done: one core is latency- and rate-bound,
  many cores together are HBM-bound.

Consecutive vector or scalar instructions without a sync between them are costed as one
simpy timeout, so the replay costs a few events per tile, not per instruction.
"""
from __future__ import annotations

import heapq
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


class _Server:
    """A device-wide bandwidth (bytes per cycle) shared first come, first served."""

    def __init__(self, bytes_per_second: float, freq_hz: float, overhead_cycles: float = 0.0):
        self.bytes_per_cycle = bytes_per_second / freq_hz
        self.overhead = overhead_cycles
        self.free_at = 0.0

    def reserve(self, now: float, nbytes: float) -> float:
        """Serve ``nbytes`` requested at ``now``; return when the last byte is served."""
        start = now if now > self.free_at else self.free_at
        self.free_at = start + nbytes / self.bytes_per_cycle + self.overhead
        return self.free_at


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


class _Memory:
    """The shared memory system of a launch: L2 cache, L2 and HBM bandwidths."""

    def __init__(self, soc):
        self.soc = soc
        self.l2 = L2Cache(soc)
        self.l2_bw = _Server(soc.l2_bandwidth, soc.freq_hz)
        self.hbm = _Server(soc.hbm_bandwidth, soc.freq_hz, soc.hbm_transfer_overhead_cycles)
        self.hbm_bytes = 0.0
        self.l2_hit_bytes = 0.0

    def transfer(self, now: float, kind: int, nbytes: int, key) -> float:
        """Cycles from ``now`` until a DMA of ``nbytes`` described by ``key`` completes."""
        soc = self.soc
        addr, span, bypass = key
        factor = 1.0 if not addr & 511 else soc.gm_unaligned_rate_factor
        if kind == DMA_IN:
            if bypass:
                hit, wb = 0.0, 0
            else:
                hit, wb, _ = self.l2.access(addr, span, False)
            hit_bytes = nbytes * hit
            miss_bytes = nbytes - hit_bytes
            end = now + soc.dma_latency_cycles + (hit_bytes / soc.l2_read_rate
                                                  + miss_bytes / soc.ddr_read_rate) / factor
            if not bypass:
                end = max(end, self.l2_bw.reserve(now, nbytes))
            self.l2_hit_bytes += hit_bytes
            if miss_bytes + wb > 0:
                self.hbm_bytes += miss_bytes + wb
                end = max(end, self.hbm.reserve(now, miss_bytes + wb))
        else:
            if bypass:
                self.l2.invalidate(addr, span)
                end = now + soc.dma_write_latency_cycles + nbytes / soc.ddr_write_rate / factor
                end = max(end, self.hbm.reserve(now, nbytes))
                self.hbm_bytes += nbytes
            else:
                _, wb, through = self.l2.access(addr, span, True)
                end = now + soc.dma_write_latency_cycles + nbytes / soc.ddr_write_rate / factor
                end = max(end, self.l2_bw.reserve(now, nbytes))
                if through or wb:            # drains to HBM behind the copy
                    self.hbm.reserve(now, through + wb)
                    self.hbm_bytes += through + wb
        return end - now


def _split(records, pipes, merge: bool = True):
    """Per-pipe item lists ``(kind, cost_or_bytes, key, label, n_merged, record_index)``.

    With ``merge``, consecutive OP records of one pipe become one item (one simpy timeout).
    The scalar unit issues every instruction in program order and stalls while it computes
    or waits on a flag, so after scalar work (or a WaitFlag on PIPE_S) the next instruction
    of another pipe also waits for it: an ``issue`` flag from PIPE_S to the other pipes.
    """
    S = Pipe.PIPE_S
    lists = {p: [] for p in pipes}
    others = [p for p in pipes if p != S]
    scalar_pending = False
    for i, (kind, pipe, cycles, nbytes, key, name) in enumerate(records):
        if scalar_pending and pipe != S and kind not in (SET, BARRIER):
            for p in others:
                token = ("issue", i, p)
                lists[S].append((SET, 0, token, "issue", 1, i))
                lists[p].append((WAIT, 0, token, "issue", 1, i))
            scalar_pending = False
        if kind == OP:
            lst = lists[pipe]
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
                token = key if key is not None else object()
                for lst in lists.values():
                    lst.append((BARRIER, 0, token, name, 1, i))
        else:
            lists[pipe].append((kind, 0, key, name, 1, i))
            if kind == WAIT and pipe == S:
                scalar_pending = True
    return lists


def simulate(blocks: list[list[tuple]], soc, keep_spans: bool = False, cores: int | None = None,
             profile_pipes: tuple = PROFILE_PIPES) -> KernelTiming:
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

    Raises:
        SyncError: a pipe waits for a flag that is never set (the kernel would hang).
    """
    env = simpy.Environment()
    memory = _Memory(soc)
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
                yield timeout(transfer(t0, kind, value, key))
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
