"""The timing replay of a lockstep group's blocks as one: one process per pipe for the
whole group, one event per step, where :func:`npusim.timing.simulate` runs a process per
pipe per block.

A launch whose blocks are the members of one lockstep group (:mod:`npusim.lockstep`) runs
one instruction stream on every block, with per-block GM addresses. When every member's
transfer at a step costs the same (the same L2 hits, victims, bursts and HBM streams: the
blocks read their own rows the same way), the members start their transfers at the same
instant, their flows take the same rate and end in the same recompute, and their processes
resume one after the other at the same instant: the replay's events come in runs of one per
member, and the members stay in step to the end. Replaying such a run as one event for the
group gives the same times to the bit, provided that what the members share is touched in
the same order:

* the memory system (:class:`npusim.timing._Memory`): each member's transfer is still made
  on it, in block order, at the instant the first member would make it, so the L2's
  recency, the flows' order and every counter are those of the per-block replay; a run of
  member events is never split by another event that touches memory, because only one pipe
  of a block moves data and the memory system's own events are one per instant, not per
  member;
* the flags and barriers: a block's own, the same in every member (no cross-core flag, no
  SyncAll), so the group's stand for each member's.

Whether the members stay in step is checked as the replay goes: at each transfer, that
every member's flow has the same limit, weights, bytes and completion time (and that none
waits for the HBM write queue, nor reads the same bytes as another from HBM at once). The
first step where they do not (different hits, say) abandons the group replay, and the
launch is replayed block by block from the start (``None`` is returned; the memory system
here starts from a cold L2 of its own, so nothing is left behind).

Used by :func:`npusim.timing.simulate` when :data:`GROUP_REPLAY` is set; tests compare its
results with the per-block replay's.
"""
from __future__ import annotations

import heapq
from itertools import repeat
from operator import add, mod, ne

import numpy as np

from npusim.ascendc.core import BARRIER, DMA_IN, DMA_OUT, OP, SET, WAIT
from npusim.ascendc.types import Pipe

#: Replay a launch that is one lockstep group as one (:func:`replay_group`); the times are
#: the same either way (tests compare the two).
GROUP_REPLAY = True


class _Diverged(Exception):
    """The members of the group stop being in step: replay block by block instead."""


def _eligible(blocks, soc, cores):
    """The group's pipe lists (:func:`npusim.timing._split` of its records) and its pipes,
    when ``blocks`` can be replayed as one group, else None: every block a member of one
    lockstep group, member ``b`` block ``b``, all in the first wave of cores, whose records
    differ only in their transfers (the pipe lists of every member are then the group's
    but for their transfers' keys, :func:`npusim.timing._split_member`), with one pipe
    that moves data and no flag or barrier that links blocks."""
    from npusim import timing as T
    n = len(blocks)
    if n < 2:
        return None
    n_cores = max(1, soc.vector_block_num if cores is None else cores)
    if n > n_cores:
        return None
    template = getattr(blocks[0], "template", None)
    if template is None:
        return None
    for b, records in enumerate(blocks):
        if getattr(records, "template", None) is not template or records.member != b:
            return None
    group, _, per_member = template
    if not all(rec[0] == DMA_IN or rec[0] == DMA_OUT for rec in per_member):
        return None                 # members differ in more than their transfers
    ALL = Pipe.PIPE_ALL
    pipes_of = {r[1] for r in group if r[1] != ALL}
    lists = T._split(group, pipes_of, True)
    movers = 0
    for items in lists.values():
        moves = False
        for it in items:
            kind, key = it[0], it[2]
            if kind == DMA_IN or kind == DMA_OUT:
                moves = True
            elif kind == SET or kind == WAIT:
                if type(key) is tuple and key and key[0] in ("xset", "xcore", "unit"):
                    return None     # cross-core flags, unitFlag waits
            elif kind == BARRIER:
                if isinstance(key, tuple):
                    return None     # SyncAll joins blocks
            elif kind != OP:
                return None
        movers += moves
    if movers != 1:
        return None
    return lists, pipes_of


def replay_group(blocks, soc, cores, profile_pipes):
    """:func:`npusim.timing._replay` of ``blocks`` (no spans, a cold L2) as one lockstep
    group: the same :class:`npusim.timing.KernelTiming`, or None when the launch is not
    one group in step (see the module's docstring)."""
    from npusim import timing as T
    got = _eligible(blocks, soc, cores)
    if got is None:
        return None
    try:
        return _run(T, blocks, soc, profile_pipes, *got)
    except _Diverged:
        return None


def _run(T, blocks, soc, profile_pipes, lists, pipes_of):
    k = len(blocks)
    loop = T._Loop()
    memory = T._Memory(soc, loop)
    group, patched, per_member = blocks[0].template
    # the records that differ from member to member, in their group form: a field that
    # differs is (_PER_MEMBER, the members' values) (npusim.lockstep._frozen)
    frozen = dict(zip(patched, per_member))
    per = T._per_member
    block_start = np.zeros(k)
    block_end = np.full(k, np.nan)
    busy = {p: np.zeros(k) for p in profile_pipes}
    cube_pipes = {Pipe.PIPE_MTE1, Pipe.PIPE_M, Pipe.PIPE_FIX}
    is_cube = profile_pipes is T.AIC_PROFILE_PIPES or bool(pipes_of & cube_pipes)
    flags: dict = {}
    barriers: dict = {}
    parties = len(pipes_of)
    queue, push, seq = loop.queue, heapq.heappush, loop.seq
    _NORMAL = T._NORMAL
    transfer = memory.transfer
    hot_n = memory.hot_n

    l2_access = memory.l2.access_many
    read_cost = memory._read_cost
    flows = memory._flows
    streams = memory.streams
    read_streams = [(b, DMA_IN) for b in range(k)]     # each member's MTE read stream
    burst, grid = memory.burst, memory.grid
    Event = T._Event

    def read_all(now, addrs, nbytes, span):
        """:meth:`npusim.timing._Memory._read_range` of every member's read (of ``span``
        bytes at ``addrs``), in block order, when they have the same L2 outcome: each
        member's L2 access and HBM stream, the cost computed once (a function of that
        outcome, the address within its burst and the span) and counted for each, the
        flows put in flight together (:meth:`npusim.timing._Memory._flows`). The steps
        touch the L2, the counters, the streams and the flows, each in block order, as
        the members' transfers one after the other do."""
        addr0 = addrs[0]
        if burst:
            r = addr0 % burst
            n = span if span > 1 else 1
            bursts = (r + n - 1) // burst + 1
            extra = bursts - (n + burst - 1) // burst if grid else 0
            if any(map(ne, map(mod, addrs, repeat(burst)), repeat(r))):
                raise _Diverged
        else:
            bursts, extra = 1, 0
        got = l2_access(addrs, span)
        first = got[0]
        if first[1] or got.count(first) != k:
            raise _Diverged             # victims to write back; another outcome
        hit0 = first[0]
        miss, own, on_hbm, _ = read_cost(nbytes, hit0, 0, bursts, extra, is_cube, True,
                                         memory.burst_l2 * (1.0 - hit0), k)
        # each member's MTE streams on where its last read ended, or starts a new stream
        # (which costs HBM when it reads from there): the same for all, or they diverge
        fresh = list(map(ne, map(streams.get, read_streams), addrs))
        if fresh.count(fresh[0]) != k:
            if on_hbm:
                raise _Diverged         # a new HBM stream for some members only
        elif on_hbm and fresh[0]:
            on_hbm += memory.hbm_overhead_bytes
        streams.update(zip(read_streams, map(add, addrs, repeat(span))))
        own += memory.issue
        # the flows end in one recompute (the same bytes at the same rate), whose
        # completion events would resume the members one after the other: the last one's
        # resumes the group
        done = Event()
        dones = [None] * (k - 1) + [done]
        hots = (list(zip(addrs, repeat(span), repeat(False))) if miss and memory.same_address
                else [0.0] * k)
        flows(nbytes, nbytes / own, (0.0 if is_cube or not miss else 1.0, on_hbm / nbytes,
                                     nbytes / nbytes), True, 1 if miss else 0, dones, hots)
        if hots[0] and max(map(hot_n.__getitem__, hots)) != 1:
            raise _Diverged             # reads of the same bytes share a rate
        return done, now + soc.dma_latency_cycles + own

    def transfer_all(now, kind, pipe, idx):
        """Every member's transfer of record ``idx``, in block order; the event the group
        waits for and the time the transfers complete not before."""
        rec = frozen.get(idx)
        if rec is not None and rec[0] == DMA_IN and rec[1] == pipe:
            nbytes, key = rec[3], rec[4]
            if type(nbytes) is int and nbytes > 0 and len(key) == 3 and key[2] is False:
                addr, span = key[0], key[1]
                if per(addr) and len(addr[1]) == k and type(span) is int:
                    return read_all(now, addr[1], nbytes, span)
        recs = [r[idx] for r in blocks]
        first = len(memory.flows)
        event = not_before = None
        for b in range(k):
            rec = recs[b]
            if rec[0] != kind or rec[1] != pipe:
                raise _Diverged
            ev, nb = transfer(now, kind, rec[3], rec[4], is_cube, b)
            if type(ev) is not T._Event:
                raise _Diverged         # waits for the HBM write queue
            if b == 0:
                not_before = nb
            elif nb != not_before:
                raise _Diverged
            event = ev
        new = memory.flows[first:]
        if new:
            if len(new) != k:
                raise _Diverged
            lead = new[0]
            size = memory.left[first]
            for f, x in zip(new, memory.left[first:]):
                if f[:4] != lead[:4] or x != size:
                    raise _Diverged
                hot = f[5]
                if hot and hot_n[hot] != 1:
                    raise _Diverged     # reads of the same bytes share a rate
        return event, not_before

    def pipe_proc(pipe, items, me, end):
        # as timing._replay's pipe_proc, for every member at once
        me = me[0]
        total = 0.0
        until = 0.0
        for kind, value, key, label, n, idx in items:
            if kind == OP:
                t0 = loop.now
                push(queue, (t0 + value, _NORMAL, next(seq), me, None))
                yield
                if t0 >= until:
                    total += value
                elif loop.now > until:
                    total += loop.now - until
                continue
            if kind == DMA_IN or kind == DMA_OUT:
                t0 = loop.now
                event, not_before = transfer_all(t0, kind, pipe, idx)
                event.callbacks.append(me)
                yield
                now = loop.now
                done = now if now > not_before else not_before
                if done > until:
                    total += done - (t0 if t0 > until else until)
                    until = done
                continue
            if until > loop.now and kind != WAIT:
                push(queue, (until, _NORMAL, next(seq), me, None))
                yield
            if kind == SET:
                flag = flags.get(key)
                if flag is None:
                    flags[key] = flag = T._Flag()
                if flag.waiters:
                    push(queue, (loop.now, _NORMAL, next(seq), flag.waiters.pop(0), None))
                else:
                    flag.count += 1
            elif kind == WAIT:
                flag = flags.get(key)
                if flag is None:
                    flags[key] = flag = T._Flag()
                if flag.count:
                    flag.count -= 1
                else:
                    flag.waiters.append(me)
                    yield
            else:       # PipeBarrier(PIPE_ALL) within each block
                bar = barriers.get(key)
                if bar is None:
                    bar = barriers[key] = T._Barrier(loop, parties)
                bar.arrive().callbacks.append(me)
                yield
        if until > loop.now:
            push(queue, (until, _NORMAL, next(seq), me, None))
            yield
        if pipe in busy:
            busy[pipe][:] = total
        loop.succeed(end)
        yield

    def core_proc(me):
        me = me[0]
        ends = []
        for p, items in lists.items():
            end = T._Event()
            box = []
            gen = pipe_proc(p, items, box, end)
            box.append(gen.send)
            gens.append(gen)
            loop.start(gen)
            ends.append(end)
        if ends:
            T._AllOf(loop, ends).callbacks.append(me)
            yield
        block_end[:] = loop.now
        yield

    gens = []
    box = []
    gen = core_proc(box)
    box.append(gen.send)
    gens.append(gen)
    try:
        loop.start(gen)
        loop.run()
    finally:
        # the processes wait at their last step (or where the members stopped being in
        # step), each a cycle (its frame holds its own send) that keeps the memory system
        # alive through the closures, L2 and all (millions of objects after a long
        # launch): the cyclic collector, paused during a launch, would walk them all once
        # it runs again. Closing them, and dropping the events left when the members
        # stopped being in step (the memory system's among them), frees it here.
        for gen in gens:
            gen.close()
        loop.queue.clear()
    if np.isnan(block_end).any():
        raise _Diverged                 # a hang: the per-block replay describes it
    cycles = float(block_end.max() - block_start.min())
    return T.KernelTiming(cycles, block_start, block_end, busy, None, memory.hbm_bytes,
                          memory.l2_hit_bytes, tuple(memory.l2_bytes))
