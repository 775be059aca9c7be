"""Lockstep groups in mixed AIC/AIV launches (KERNEL_TYPE_MIX_AIC_1_2, _1_1, ...).

A mixed launch runs every core as a coroutine that hands over at its cross-core waits
(:mod:`npusim.launch`). Most mixed kernels run one program on all the AICs and another on
all the AIVs of each sub-block, with different offsets. :func:`run_mix` runs the cores of
a launch as *lanes* — the AICs, the AIVs of sub-block 0, those of sub-block 1 — and each
lane's cores of a set of blocks as one :class:`npusim.lockstep.GroupContext` coroutine (a
:class:`MixGroupContext`), as :func:`npusim.lockstep.run_blocks` runs the blocks of a
vector or cube launch. Every lane is cut into the same sets of blocks (the *partition*),
so that the AIC group of blocks B and the AIV groups of blocks B meet each other whole.

What makes a group's run the per-core one:

* The cross-core machinery acts member by member (:class:`GroupedCrossCore`): a group's
  CrossCoreSetFlag is each member's set (its rendezvous rounds, the checker's knowledge
  it carries, the counter updates), recorded once with the events as a
  :class:`npusim.lockstep.BlockVector` where members differ; a CrossCoreWaitFlag waits
  until every member's counter is non-zero, then each member takes its own event. Each
  core's records are therefore the ones per-core execution gives it, in the same order;
  only the moment at which the host runs them changes, which the timing replay does not
  see. The Matmul API's KFC server of a group of AICs serves the AIV groups of the same
  blocks (:meth:`GroupedCrossCore.block_cores`), its lock held for a whole group.
* The cores of the blocks whose races the checker tracks (the first and the last) run
  alone, with their UbTracker and the happens-before checker (:class:`npusim.ascendc.
  checker.GmOrder`), which sees exactly their accesses, and the knowledge every member of
  a group passes on through its flags.
* GM: the cores of one block exchange data through GM in the order their flags give,
  which a group keeps. Cores of different blocks touching bytes one of them writes
  (a mode-0 exchange, a SyncAll phase, atomics into one C) could see another order, so
  every GM access is logged with its block (:func:`npusim.lockstep.cross_block_conflict`)
  and such a launch is undone and runs per core.
* Anything else falls back: a :class:`npusim.lockstep.Divergence` (a tail block, a
  data-dependent branch, an instruction not written for groups, a warning) undoes the
  launch's GM writes and runs it again with the diverging group split as the divergence
  says (the partition reached is kept for the next launch of the same kernel); an error,
  a hang, a checker finding on a core that ran alone, or a partition of single blocks
  runs the launch per core, which raises or reports what it would have anyway.

``run_kernel(..., lockstep=False)`` or ``NPUSIM_LOCKSTEP=0`` keeps every core its own
coroutine, as does a kernel whose ``npusim_lockstep`` attribute is False.
"""
from __future__ import annotations

from collections import OrderedDict, deque

import numpy as np

from npusim import lockstep as _lockstep
from npusim.ascendc import checker as _checker, core as _core
from npusim.ascendc.crosscore import CrossCoreState, KernelReturn
from npusim.ascendc.types import PIPE_S
from npusim.errors import kernel_source_line
from npusim.lockstep import BlockVector, Divergence, GroupContext

__all__ = ["MixGroupContext", "GroupedCrossCore", "run_mix"]

#: Re-runs with a finer partition a launch may take before it runs per core.
MAX_ATTEMPTS = 4


class _PerCore(Exception):
    """The launch must run per core (a hang, a finding on a core that ran alone)."""


class _Member:
    """One core of a lockstep group as the cross-core state sees it (a rendezvous'
    participant, a counter's owner): what :class:`CrossCoreState` reads of a context."""

    __slots__ = ("core_index", "core_kind", "block_idx", "task_ratio", "sub_block_idx",
                 "unit", "tracker", "mix")

    def __init__(self, core_index, core_kind, block_idx, task_ratio, sub_block_idx, unit):
        self.core_index, self.core_kind, self.block_idx = core_index, core_kind, block_idx
        self.task_ratio, self.sub_block_idx, self.unit = task_ratio, sub_block_idx, unit
        self.tracker = None
        self.mix = True

    name = _core.CoreContext.name


class MixGroupContext(GroupContext):
    """The cores of one lane (``kind``, ``sub``) of the blocks ``blocks`` run together.

    Members are the blocks (so that a divergence names blocks, and every lane splits
    alike); ``GetBlockIdx()`` is each core's own (``block * task_ratio + sub`` on an AIV).
    Its memories are its own: the groups of a mixed launch run side by side, so the
    pools :func:`npusim.lockstep.run_blocks` reuses group after group cannot serve them.
    """

    def __init__(self, soc, gm, kind: str, blocks: tuple, sub: int, ratio: int,
                 core_indices: list, block_num: int, capacity: int):
        g = len(blocks)
        ub = (np.full((g, soc.ub_size), _core.UB_POISON, np.uint8) if kind == _core.AIV
              else np.empty((g, 0), np.uint8))
        super().__init__(soc, gm, ub, blocks, block_num, capacity, kind)
        idx = [b * ratio + sub for b in blocks] if kind == _core.AIV else list(blocks)
        self.block_idx = BlockVector(blocks, idx)
        self.sub_block_idx, self.task_ratio = sub, ratio
        self.core_index = tuple(core_indices)
        self.cores = [_Member(c, kind, i, ratio, sub, self) for c, i in zip(core_indices, idx)]

    def _new_memory(self, mem: str) -> np.ndarray:
        # not the launch's pool: the groups of a MIX launch are alive at once
        return np.full((self.size, _core.memory_size(self.soc, mem)), _core.UB_POISON, np.uint8)


def _vector(ctx, vals: list):
    """The members' values as one: the plain value when all agree, else a BlockVector."""
    v0 = vals[0]
    if all(v == v0 for v in vals):
        return v0
    return BlockVector(ctx.members, vals)


def _cores(ctx) -> list:
    return ctx.cores if ctx.is_group else [ctx]


class GroupedCrossCore(CrossCoreState):
    """:class:`CrossCoreState` for a launch whose cores run as groups and single cores
    (``units``); ``ctxs`` are per core index the single cores' contexts and the groups'
    :class:`_Member` entries. Every method takes a group where it takes a core and acts
    for each member as it would for that core alone (module docstring)."""

    def __init__(self, ctxs, gm_order, units):
        super().__init__(ctxs, gm_order)
        self.units = units

    # -- which cores are a block's -------------------------------------------------------
    def block_cores(self, ctx, kind: str) -> list:
        if not ctx.is_group:
            return super().block_cores(ctx, kind)
        same = [u for u in self.units if u.is_group and u.core_kind == kind
                and u.members == ctx.members]
        if not same:      # the lanes are cut alike; anything else runs per core
            raise Divergence(ctx.singletons)
        return sorted(same, key=lambda u: u.core_index[0])

    def provide(self, ctx, name: str, service) -> None:
        if not ctx.is_group:
            return super().provide(ctx, name, service)
        for b in ctx.members:
            self.services[(name, b)] = service

    def provided(self, ctx, name: str) -> bool:
        if not ctx.is_group:
            return super().provided(ctx, name)
        return all((name, b) in self.services for b in ctx.members)

    def service(self, ctx, name: str):
        if not ctx.is_group:
            return super().service(ctx, name)
        found = [self.services[(name, b)] for b in ctx.members]
        if any(s is not found[0] for s in found):
            raise Divergence(ctx.singletons)
        return found[0]

    # -- flags -------------------------------------------------------------------------
    def set_flag(self, ctx, flag: int, mode: int, pipe) -> None:
        if not ctx.is_group:
            return super().set_flag(ctx, flag, mode, pipe)
        counted = [self._count_set(m, flag, mode, pipe) for m in ctx.cores]
        ctx.record(_core.SET, pipe, 0.0, 0, _vector(ctx, [key for _, key in counted]),
                   "CrossCoreSetFlag")
        for rv, _ in counted:
            self._deliver_ready(rv)

    def wait_flag(self, ctx, flag: int) -> None:
        if not ctx.is_group:
            return super().wait_flag(ctx, flag)
        qs = [self.counters.setdefault((m.core_index, flag), deque()) for m in ctx.cores]
        line = kernel_source_line()
        ctx.wait_until(lambda: all(qs), f"CrossCoreWaitFlag({flag}) at {line} (a group)")
        got = [q.popleft() for q in qs]
        ctx.record(_core.WAIT, PIPE_S, 0.0, 0, _vector(ctx, [e for e, _ in got]),
                   "CrossCoreWaitFlag")
        for m, (_, know) in zip(ctx.cores, got):
            self._learn(m, know)

    def hand_off(self, src, pipe, targets, name: str) -> list:
        if not src.is_group and not any(t.is_group for t in targets):
            return super().hand_off(src, pipe, targets, name)
        if not src.is_group or any(not t.is_group or t.members != src.members
                                   for t in targets):
            raise Divergence(src.singletons if src.is_group else targets[0].singletons)
        knows = [self._snapshot(m, pipe) for m in src.cores]
        per_target = [[self._handoff_event(m, tm, know)
                       for m, tm, know in zip(src.cores, t.cores, knows)] for t in targets]
        keys = [("xset", tuple((ev[j], 1) for ev in per_target)) for j in range(src.size)]
        src.record(_core.SET, pipe, 0.0, 0, _vector(src, keys), name)
        return [_vector(src, ev) for ev in per_target]

    def receive(self, dst, event, name: str) -> None:
        if not dst.is_group:
            return super().receive(dst, event, name)
        dst.record(_core.WAIT, PIPE_S, 0.0, 0, event, name)
        for m, e in zip(dst.cores, _lockstep.values(event, dst.size)):
            self._learn(m, self.handoffs.pop(e, None))

    def sync_all(self, ctx, aiv_only: bool) -> None:
        if not ctx.is_group:
            return super().sync_all(ctx, aiv_only)
        if aiv_only and ctx.core_kind != _core.AIV:
            raise Divergence(ctx.singletons)     # the error, per core
        self._sync_all(ctx, ctx.cores, aiv_only, lambda n: f"SyncAll number {n} (a group)")

    def end_checks(self) -> None:
        """Unpaired sets are reported per core: a launch that has any runs per core."""
        if any(q for q in self.counters.values()) or any(
                len(set(rv.sets.values())) > 1 for rv in self.rendezvous.values()):
            raise _PerCore()



# -- the launch ---------------------------------------------------------------------------

#: (kernel, blockDim, shape, tracking, argument key) -> partition (None: per core)
_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 256


def _refine(parts: list, split: list) -> list:
    """``parts`` with the blocks of each part of ``split`` (a divergence's) set apart."""
    out = []
    for p in parts:
        inside = set(p)
        pieces = [tuple(b for b in s if b in inside) for s in split]
        pieces = [q for q in pieces if q]
        rest = tuple(b for b in p if not any(b in q for q in pieces))
        out.extend(pieces + ([rest] if rest else []))
    return sorted(out, key=lambda q: q[0])


def run_mix(kernel, args, soc, gm, block_dim: int, capacity: int, keep_spans: bool, config,
            n_aic: int, n_aiv: int):
    """Run a mixed launch with its lanes in lockstep groups (module docstring).

    Returns the per-core results in core order (the AICs, then the AIVs: contexts, or
    :class:`npusim.lockstep.BlockResult` for members of groups), or None when the launch
    must run per core; GM is then as the launch found it."""
    tracked = set(range(block_dim)) if config.all_blocks else {0, block_dim - 1}
    if not config.enabled:
        tracked = set()
    key = _lockstep._cache_key(kernel, block_dim, ("MIX", n_aic, n_aiv), config, args)
    parts = _CACHE.get(key) if key is not None else None
    if parts is None and key is not None and key in _CACHE:
        return None
    if parts is None:
        rest = tuple(b for b in range(block_dim) if b not in tracked)
        parts = sorted([(b,) for b in tracked] + ([rest] if rest else []),
                       key=lambda q: q[0])
    result = None
    for _ in range(MAX_ATTEMPTS):
        if all(len(p) == 1 for p in parts):
            break
        undo = _lockstep.UndoLog()
        try:
            result = _attempt(kernel, args, soc, gm, block_dim, capacity, keep_spans, config,
                              n_aic, n_aiv, parts, tracked, undo)
        except Divergence as div:
            undo.restore()
            undo.close()
            parts = _refine(parts, div.parts)
            continue
        except (Exception, KernelReturn):     # noqa: BLE001 - per core decides
            undo.restore()
            undo.close()
            break
        finally:
            _core.set_current_core(None)
        if result is None:                    # cores of different blocks share GM bytes
            undo.restore()
        undo.close()
        break
    if key is not None:
        _CACHE[key] = parts if result is not None else None
        _CACHE.move_to_end(key)
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return result


def _attempt(kernel, args, soc, gm, block_dim, capacity, keep_spans, config, n_aic, n_aiv,
             parts, tracked, undo):
    from npusim import launch as _launch
    lanes = [(_core.AIC, 0, n_aic)] * (1 if n_aic else 0) + [
        (_core.AIV, s, n_aiv) for s in range(n_aiv)]
    n_cores = block_dim * (n_aic + n_aiv)
    ctxs: list = [None] * n_cores          # per core index: a single core or a _Member
    units = []
    for kind, sub, ratio in lanes:
        for part in parts:
            idx = [n_aic * block_dim * (kind == _core.AIV) + b * ratio + sub for b in part]
            if len(part) == 1:
                b = part[0]
                ub = (np.full(soc.ub_size, _core.UB_POISON, np.uint8) if kind == _core.AIV
                      else np.empty(0, np.uint8))
                ctx = _launch._new_context(soc, gm, ub, b * ratio + sub if kind == _core.AIV
                                           else b, block_dim, capacity, keep_spans, config,
                                           kind, tracked=b in tracked, log_gm=False)
                ctx.sub_block_idx, ctx.task_ratio, ctx.core_index = sub, ratio, idx[0]
                ctx.mix_block = b
                ctxs[idx[0]] = ctx
            else:
                ctx = MixGroupContext(soc, gm, kind, part, sub, ratio, idx, block_dim, capacity)
                ctx.trace_lines = [] if keep_spans else None
                ctx.checker_config = config
                for m in ctx.cores:
                    ctxs[m.core_index] = m
            ctx.gm_log, ctx.undo = [], undo
            units.append(ctx)
    units.sort(key=lambda u: u.core_index[0] if u.is_group else u.core_index)
    gm_order = None
    if config.enabled:
        gm_order = _checker.GmOrder(ctxs, [i for i, c in enumerate(ctxs)
                                           if not isinstance(c, _Member) and c.tracker is not None])
    state = GroupedCrossCore(ctxs, gm_order, units)
    for u in units:
        u.mix = state
        if not u.is_group and u.tracker is not None:
            u.gm_order = gm_order
            if gm_order is not None:
                u.gm_access = u.gm_writes = _checker.GmLog(keep=False)
    _schedule(kernel, args, units)
    state.end_checks()
    _launch._finish_blocks(units)
    if any(u.warnings for u in units if not u.is_group):
        raise _PerCore()         # a finding's wording may follow the order cores ran in
    # GM bytes that cores of different blocks touch, one writing: per core
    logs: dict = {}
    group_logs = []
    for u in units:
        if u.is_group:
            group_logs.append((u.members, u.gm_log))
        else:
            logs.setdefault(u.mix_block, []).extend(u.gm_log)
    if _lockstep.cross_block_conflict(logs, group_logs):
        return None
    out: list = [None] * n_cores
    for u in units:
        if u.is_group:
            for m, res in zip(u.cores, u.members_results()):
                res.block_idx = m.block_idx
                out[m.core_index] = res
        else:
            u.gm_log = u.undo = None
            out[u.core_index] = u
    return out


def _schedule(kernel, args, units) -> None:
    """The launch's coroutine scheduler (:func:`npusim.launch._run_coroutines`) over
    groups and single cores; a hang runs per core, where its error names the cores."""
    from npusim.launch import _CoreCoroutine, _take_turns
    _take_turns([_CoreCoroutine(kernel, args, u) for u in units], _PerCore)
