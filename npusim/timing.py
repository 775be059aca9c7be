"""The timing model: a simpy replay of the instructions each core recorded.

Model (the parameters live in the SoC preset, :mod:`npusim.soc`):

* Each block runs on a physical core (block ``b`` on core ``b % cores``; extra blocks run
  in later waves on the same core). Within a core every pipe (PIPE_S, PIPE_V, PIPE_MTE2,
  PIPE_MTE3, ...) executes its own instructions in program order, concurrently with the
  other pipes.
* Sync edges are the flags: a SET on its source pipe fires when the pipe reaches it (all
  earlier work of that pipe is done); a WAIT blocks its pipe until the flag is set, then
  clears it. Queue hand-offs (EnQue/DeQue, FreeTensor/AllocTensor) are flags too.
  PipeBarrier(PIPE_ALL) joins every pipe of the core.
* A vector or scalar instruction busies its pipe for its cost in cycles
  (:mod:`npusim.ascendc.vector`).
* A DMA of ``n`` bytes costs ``dma_latency_cycles + n / rate`` on its core, where the rate
  is ``ddr_read_rate`` for MTE2 (GM -> UB) and ``ub_to_ddr_rate`` for MTE3 (UB -> GM), in
  B/cycle (reference/hardware.md §1.6). All cores share the device's HBM bandwidth
  (``hbm_bandwidth``): the HBM serves the bytes of all transfers first come, first served,
  so a transfer also ends no earlier than the HBM has moved every byte requested before
  it. One core is latency- and rate-bound; many cores together are HBM-bound.

Consecutive vector or scalar instructions without a sync between them are costed as one
simpy timeout, so the replay costs a few events per tile, not per instruction.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import simpy

from npusim.ascendc.core import BARRIER, DMA_IN, DMA_OUT, OP, SET, WAIT
from npusim.ascendc.types import Pipe
from npusim.errors import SyncError

#: Pipes reported in every profile, in msprof's order.
PROFILE_PIPES = (Pipe.PIPE_MTE2, Pipe.PIPE_V, Pipe.PIPE_MTE3, Pipe.PIPE_S)


@dataclass
class KernelTiming:
    """Result of one replay. Times are in cycles of the SoC clock.

    Attributes:
        cycles: from the first instruction to the last, over all cores.
        block_start, block_end: per block (array of len blockDim).
        pipe_busy: pipe -> array of busy cycles per block (waits excluded).
        spans: per block, a list of ``(pipe, start, end, label)`` when spans were kept.
    """

    cycles: float
    block_start: np.ndarray
    block_end: np.ndarray
    pipe_busy: dict
    spans: list | None = field(default=None, repr=False)


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


class _Barrier:
    __slots__ = ("parties", "arrived", "event")

    def __init__(self, env, parties):
        self.parties, self.arrived, self.event = parties, 0, env.event()

    def arrive(self):
        self.arrived += 1
        if self.arrived == self.parties:
            self.event.succeed()
        return self.event


class _Hbm:
    """Device-wide HBM shared first come, first served, in bytes per cycle."""

    def __init__(self, soc):
        self.bytes_per_cycle = soc.hbm_bandwidth / soc.freq_hz
        self.free_at = 0.0

    def reserve(self, now: float, nbytes: int) -> float:
        start = now if now > self.free_at else self.free_at
        self.free_at = start + nbytes / self.bytes_per_cycle
        return self.free_at


def _split(records, pipes):
    """Per-pipe item lists ``(kind, cost_or_bytes, key, label, n_merged)``."""
    lists = {p: [] for p in pipes}
    for kind, pipe, cycles, nbytes, key, name in records:
        if kind == OP:
            lst = lists[pipe]
            if lst and lst[-1][0] == OP:
                k, c, _, label, n = lst[-1]
                lst[-1] = (OP, c + cycles, None, label, n + 1)
            else:
                lst.append((OP, cycles, None, name, 1))
        elif kind in (DMA_IN, DMA_OUT):
            lists[pipe].append((kind, nbytes, None, name, 1))
        elif kind == BARRIER:
            if pipe == Pipe.PIPE_ALL:   # SyncAll passes its shared key; PipeBarrier a fresh one
                token = key if key is not None else object()
                for lst in lists.values():
                    lst.append((BARRIER, 0, token, name, 1))
        else:
            lists[pipe].append((kind, 0, key, name, 1))
    return lists


def simulate(blocks: list[list[tuple]], soc, keep_spans: bool = False) -> KernelTiming:
    """Replay the records of every block; return the kernel's timing.

    Args:
        blocks: one record list per block, in block order (see :mod:`npusim.ascendc.core`).
        soc: the SocSpec whose rates and core count apply.
        keep_spans: also return every pipe's spans, for traces.

    Raises:
        SyncError: a pipe waits for a flag that is never set (the kernel would hang).
    """
    env = simpy.Environment()
    hbm = _Hbm(soc)
    n_blocks = len(blocks)
    n_cores = max(1, soc.vector_block_num)
    lat = float(soc.dma_latency_cycles)
    rate_in, rate_out = float(soc.ddr_read_rate), float(soc.ub_to_ddr_rate)
    block_start = np.zeros(n_blocks)
    block_end = np.full(n_blocks, np.nan)
    busy = {p: np.zeros(n_blocks) for p in PROFILE_PIPES}
    spans = [[] for _ in range(n_blocks)] if keep_spans else None
    waiting: dict[int, str] = {}

    def pipe_proc(b, pipe, items, flags, barriers):
        total = 0.0
        out = spans[b] if keep_spans else None
        for kind, value, key, label, n in items:
            if kind == OP:
                t0 = env.now
                yield env.timeout(value)
                total += value
                if out is not None:
                    out.append((pipe, t0, env.now, label if n == 1 else f"{label} (+{n - 1})"))
            elif kind == DMA_IN or kind == DMA_OUT:
                t0 = env.now
                own = t0 + lat + value / (rate_in if kind == DMA_IN else rate_out)
                shared = hbm.reserve(t0, value)
                yield env.timeout((own if own > shared else shared) - t0)
                total += env.now - t0
                if out is not None:
                    out.append((pipe, t0, env.now, f"{label} {value} B"))
            elif kind == SET:
                flag = flags.get(key)
                if flag is None:
                    flag = flags[key] = _Flag()
                flag.set()
            elif kind == WAIT:
                flag = flags.get(key)
                if flag is None:
                    flag = flags[key] = _Flag()
                ev = flag.wait(env)
                if ev is not None:
                    waiting[b] = f"{Pipe(pipe).name} waits at {label} for {key[0]} {key[1:]}"
                    yield ev
            else:  # BARRIER: PipeBarrier(PIPE_ALL) within the block, or SyncAll across blocks
                if isinstance(key, tuple):
                    table, parties = shared_barriers, all_parties
                else:
                    table, parties = barriers, len(block_pipes[b])
                bar = table.get(key)
                if bar is None:
                    bar = table[key] = _Barrier(env, parties)
                waiting[b] = f"{Pipe(pipe).name} waits at {label}"
                yield bar.arrive()
        if pipe in busy:
            busy[pipe][b] = total

    # pipes of each block; a SyncAll barrier joins every pipe of every block
    block_pipes = [{r[1] for r in records if r[1] != Pipe.PIPE_ALL} for records in blocks]
    all_parties = sum(len(p) for p in block_pipes)
    shared_barriers: dict = {}

    def core_proc(block_ids):
        for b in block_ids:
            block_start[b] = env.now
            records = blocks[b]
            pipes = block_pipes[b]
            lists = _split(records, pipes)
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
        raise SyncError("WaitFlag", f"the kernel hangs: {waiting.get(b, 'a pipe waits forever')} "
                        "that is never set", core=b, line="?")
    cycles = float(block_end.max() - block_start.min()) if n_blocks else 0.0
    return KernelTiming(cycles, block_start, block_end, busy, spans)
