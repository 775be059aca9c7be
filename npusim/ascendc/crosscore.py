"""Mixed AIC/AIV kernels: which core runs the code, the cross-core flags, SyncAll across
both kinds, and the GM workspace the cores hand data through.

Facts (docs/reference/hardware.md §3 "Block indexing and launch", "Cross-core synchronisation",
"Workspace"; asc-devkit ``docs/zh/api/SIMD-API/基础API/同步控制/核间同步/``
CrossCoreSetFlag(ISASI).md, CrossCoreWaitFlag(ISASI).md, 关键特性说明.md,
``工具接口/系统资源与变量/`` GetSubBlockIdx(ISASI).md, GetSubBlockNum(ISASI).md,
GetTaskRatio.md; hiascend GetBlockIdx atlasascendc_api_07_0185):

* A mixed launch (``KERNEL_TYPE_MIX_AIC_1_2``: one AIC and two AIVs per block; also
  ``MIX_AIC_1_1``, ``MIX_AIC_1_0``, ``MIX_AIV_1_0``) runs the same kernel function on every
  core; ``ASCEND_IS_AIC()`` / ``ASCEND_IS_AIV()`` tell the halves apart. The cores are
  separate: their own memories and scalar units, data only through GM.
* ``GetBlockIdx()`` is the block on an AIC, ``block * 2 + GetSubBlockIdx()`` on an AIV of a
  1:2 launch (in ``[0, 2 * numBlocks)``); ``GetBlockNum()`` is numBlocks on both, so the AIV
  count is ``GetBlockNum() * GetTaskRation()``.
* Each core has one counter per flagId. ``CrossCoreSetFlag<modeId, pipe>(flagId)`` reports,
  once every earlier instruction of ``pipe`` has finished: mode 0 - when all AICs (or all
  AIVs) of the launch have set it, each of their counters goes up by one; mode 1 - the same
  for the AIVs of one block; mode 2 - the AIC's set raises both AIVs' counters, and the two
  AIVs' sets together raise the AIC's. ``CrossCoreWaitFlag(flagId)`` stops the core issuing
  instructions until its counter is non-zero, then decrements it; on 2201 its template
  parameters change nothing, so the wait is modelled on PIPE_S, which holds back every later
  instruction. User flagIds are 0-10 (SyncAll's hardware version uses 11-14); a counter
  holds at most 15 sets.

Functionally the cores run as coroutines (:mod:`npusim.launch`): a CrossCoreWaitFlag whose
counter is 0 hands over to the other cores until a set arrives. Each set carries what its
core had done (the checker's happens-before knowledge, :class:`npusim.ascendc.checker.
GmOrder`), and the timing replay sees it as an event between cores (:mod:`npusim.timing`).
"""
from __future__ import annotations

from collections import deque

import numpy as np

from npusim.ascendc import checker
from npusim.ascendc import core as _core
from npusim.ascendc.types import PIPE_ALL, PIPE_S, Pipe
from npusim.errors import KernelError, LimitError, SyncError, kernel_source_line

__all__ = ["ASCEND_IS_AIC", "ASCEND_IS_AIV", "ASCEND_IS_NOT_AIC", "ASCEND_IS_NOT_AIV",
           "GetSubBlockIdx", "GetSubBlockNum", "GetTaskRation", "GetTaskRatio",
           "CrossCoreSetFlag", "CrossCoreWaitFlag", "SetSysWorkspace", "GetSysWorkSpacePtr",
           "GetUserWorkspace", "KernelReturn"]

#: Largest user flagId on A2/A3 (CrossCoreSetFlag.md; 11-14 belong to SyncAll).
MAX_FLAG_ID = 10
#: Sets a flagId's counter can hold before a wait takes one (a 4-bit counter, §3).
COUNTER_MAX = 15
#: The pipes of each kind of core (docs/reference/hardware.md §2.1 pipe assignment).
CORE_PIPES = {_core.AIV: frozenset({Pipe.PIPE_MTE2, Pipe.PIPE_MTE3, Pipe.PIPE_V, Pipe.PIPE_S}),
              _core.AIC: frozenset({Pipe.PIPE_MTE1, Pipe.PIPE_MTE2, Pipe.PIPE_MTE3, Pipe.PIPE_M,
                                    Pipe.PIPE_FIX, Pipe.PIPE_S})}


class KernelReturn(BaseException):
    """A ``return`` out of the kernel function from inside a library macro: the core's kernel
    ends there, normally. ``REGIST_MATMUL_OBJ`` on the AIC of a MIX kernel serves its AIVs'
    Matmul calls and then returns from the kernel (kernel_kfc.h ``REGIST_CUBE_OBJ``:
    ``server.Quit(); return;``), so the code after it never runs on the AIC. A
    BaseException, so that a kernel's ``except Exception`` does not catch it; the mixed
    launch (:mod:`npusim.launch`) ends the core's coroutine on it."""


# -- which core am I ----------------------------------------------------------------------

def ASCEND_IS_AIC() -> bool:
    """``ASCEND_IS_AIC``: true on a cube core (AIC) of the split A2/A3; false on an AIV and
    on the coupled 910A/310P AI core (g_coreType MIX). Source: hiascend "C++语言拓展"
    (atlas_ascendc_10_00026), the ASCEND_IS_AIV/ASCEND_IS_AIC macros."""
    return _core.current_core().core_kind == _core.AIC


def ASCEND_IS_AIV() -> bool:
    """``ASCEND_IS_AIV``: true on a vector core (AIV) of the split A2/A3 (see
    :func:`ASCEND_IS_AIC`)."""
    return _core.current_core().core_kind == _core.AIV


def ASCEND_IS_NOT_AIC() -> bool:
    """``ASCEND_IS_NOT_AIC``: ``not ASCEND_IS_AIC()``."""
    return not ASCEND_IS_AIC()


def ASCEND_IS_NOT_AIV() -> bool:
    """``ASCEND_IS_NOT_AIV``: ``not ASCEND_IS_AIV()``."""
    return not ASCEND_IS_AIV()


def GetSubBlockIdx() -> int:
    """Index of this core among the AICs (or AIVs) of its block, in [0, GetSubBlockNum()):
    0 or 1 on the two AIVs of a MIX_AIC_1_2 block, 0 elsewhere. Source:
    GetSubBlockIdx(ISASI).md (atlasascendc_api_07_0281)."""
    return _core.current_core().sub_block_idx


def GetSubBlockNum() -> int:
    """AICs (on an AIC) or AIVs (on an AIV) per block: 2 on the AIVs of MIX_AIC_1_2, else 1.
    Source: GetSubBlockNum(ISASI).md, table 2."""
    return _core.current_core().task_ratio


def GetTaskRation() -> int:
    """Cores of this kind per logical block: 2 on an AIV of MIX_AIC_1_2, 1 otherwise (and
    always 1 on the coupled 910A/310P). Source: hiascend GetTaskRation
    (atlasascendc_api_07_0188, CANN 8.x); CANN 9 names it GetTaskRatio (GetTaskRatio.md)."""
    return _core.current_core().task_ratio


#: The CANN 9 name of :func:`GetTaskRation` (GetTaskRatio.md).
GetTaskRatio = GetTaskRation


# -- the workspace ---------------------------------------------------------------------------

def SetSysWorkspace(workspace: int) -> None:
    """``SetSysWorkspace(workspace)``: remember the system workspace (the first
    ``soc.lib_api_workspace_size`` bytes of the launch's workspace, 16 MiB on 910B/A3) for
    :func:`GetSysWorkSpacePtr`; a second call keeps the first, as the library does.
    Source: hiascend SetSysWorkSpace / GetSysWorkSpacePtr (atlasascendc_api_07_0167)."""
    ctx = _core.current_core()
    if ctx.sys_workspace is None:
        ctx.sys_workspace = int(workspace)


def GetSysWorkSpacePtr():
    """The system workspace set by :func:`SetSysWorkspace` (a GM address), or None."""
    return _core.current_core().sys_workspace


def GetUserWorkspace(workspace: int) -> int:
    """``GetUserWorkspace(workspace)``: where the user's part of the workspace starts, the
    system workspace (``soc.lib_api_workspace_size`` bytes) first, as on the device:
    ``(GetSysWorkSpacePtr() or workspace) + lib_api_workspace_size``. The host sizes the
    workspace as user bytes + that size (docs/reference/hardware.md §3 "Workspace"; hiascend
    GetUserWorkspace atlasascendc_api_07_0165)."""
    ctx = _core.current_core()
    base = ctx.sys_workspace if ctx.sys_workspace is not None else int(workspace)
    return base + ctx.soc.lib_api_workspace_size


# -- cross-core flags ------------------------------------------------------------------------

def _mixed_state(ctx, instruction: str):
    if ctx.mix is None:
        raise KernelError(instruction, f"a {ctx.core_kind} launch has no cross-core scheduler: "
                          "CrossCoreSetFlag/CrossCoreWaitFlag need a mixed kernel type "
                          "(KERNEL_TYPE_MIX_AIC_1_2, _1_1, _1_0 or MIX_AIV_1_0) on A2/A3 "
                          "(CrossCoreSetFlag(ISASI).md, 约束说明)", pipe="PIPE_S")
    return ctx.mix


def _check_ids(instruction: str, flag_id, mode_id) -> tuple[int, int]:
    if isinstance(flag_id, bool) or not 0 <= int(flag_id) <= MAX_FLAG_ID:
        raise LimitError(instruction, f"flagId {flag_id} is outside [0, {MAX_FLAG_ID}] on "
                         "A2/A3 (11-14 are SyncAll's; docs/reference/hardware.md §3)", pipe="PIPE_S")
    if int(mode_id) not in (0, 1, 2):
        raise LimitError(instruction, f"modeId {mode_id} is not 0, 1 or 2 (A2/A3 have modes "
                         "0-2; mode 4 is the 950's)", pipe="PIPE_S")
    return int(flag_id), int(mode_id)


def CrossCoreSetFlag(flagId: int, *, modeId: int, pipe: Pipe) -> None:
    """``CrossCoreSetFlag<modeId, pipe>(flagId)``: once every earlier instruction of
    ``pipe`` on this core is done, report flag ``flagId`` to the cores of ``modeId``.

    Modes: 0 - all AICs (called on an AIC) or all AIVs of the launch set it, then every one
    of them may pass a wait; 1 - the AIVs of this block; 2 - the AIC of this block releases
    its AIVs, or its AIVs together release the AIC. ``modeId`` and ``pipe`` are template
    parameters without defaults: pass both. flagId 0-10; a counter holds at most 15 sets.
    Records nothing but the flag (no cost of its own). Source: CrossCoreSetFlag(ISASI).md,
    关键特性说明.md.

    Raises:
        KernelError: outside a mixed launch, or on the coupled 910A/310P.
        LimitError: flagId outside [0, 10], modeId not 0-2, or a counter past 15 sets.
        SyncError: ``pipe`` is PIPE_S or PIPE_ALL, or not a pipe of this core; mode 1 on an
            AIC; mode 2 in a launch without both kinds of core.
    """
    ctx = _core.current_core()
    flag, mode = _check_ids("CrossCoreSetFlag", flagId, modeId)
    try:
        pipe = Pipe(pipe)
    except ValueError:
        raise SyncError("CrossCoreSetFlag", f"{pipe!r} is not a pipe", pipe="PIPE_S") from None
    if pipe in (PIPE_S, PIPE_ALL):
        raise SyncError("CrossCoreSetFlag", f"the set cannot be issued on {pipe.name} with modes "
                        "0-2 (CrossCoreSetFlag(ISASI).md: not PIPE_S or PIPE_ALL)", pipe=pipe.name)
    state = _mixed_state(ctx, "CrossCoreSetFlag")
    if pipe not in CORE_PIPES[ctx.core_kind]:
        raise SyncError("CrossCoreSetFlag", f"a {ctx.core_kind} has no {pipe.name} "
                        "(docs/reference/hardware.md §2.1 pipe assignment)", pipe=pipe.name)
    state.set_flag(ctx, flag, mode, pipe)


def CrossCoreWaitFlag(flagId: int, *, modeId: int = 0, pipe: Pipe = PIPE_S) -> None:
    """``CrossCoreWaitFlag<modeId = 0, pipe = PIPE_S>(flagId)``: stop issuing instructions
    until this core's counter of ``flagId`` is non-zero, then decrement it.

    On 2201 ``modeId`` and ``pipe`` do not change what the hardware does (asc-devkit issue
    1613; CrossCoreWaitFlag(ISASI).md), so the wait is a PIPE_S wait that holds back every
    later instruction whatever they are; they are checked for range only. Functionally the
    core hands over to the other cores until a matching set arrives. Source:
    CrossCoreWaitFlag(ISASI).md.

    Raises:
        KernelError: outside a mixed launch. LimitError: flagId or modeId out of range.
        SyncError: ``pipe`` is not a pipe; when the launch runs, no core will ever set the
            flag (the kernel hangs: the error names the waiting core and the ones that
            could have set it).
    """
    ctx = _core.current_core()
    flag, _ = _check_ids("CrossCoreWaitFlag", flagId, modeId)
    if pipe not in Pipe.__members__.values():
        raise SyncError("CrossCoreWaitFlag", f"{pipe!r} is not a pipe", pipe="PIPE_S")
    _mixed_state(ctx, "CrossCoreWaitFlag").wait_flag(ctx, flag)


class _Rendezvous:
    """The sets one counter update waits for: ``participants`` must each set once per
    round; each completed round raises the counter of every one of ``targets``. Round r's
    knowledge is the union of what its sets carried."""

    __slots__ = ("key", "flag", "participants", "targets", "sets", "delivered", "know")

    def __init__(self, key, flag, participants, targets):
        self.key, self.flag = key, flag
        self.participants, self.targets = participants, targets
        self.sets = {c.core_index: 0 for c in participants}
        self.delivered = 0
        self.know: list = []


class _Barrier:
    """A SyncAll of a mixed launch: who arrived, and the union of what they carried."""

    __slots__ = ("parties", "arrived", "know")

    def __init__(self, parties):
        self.parties, self.arrived, self.know = parties, 0, None


def _merge(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return np.maximum(a, b)


class CrossCoreState:
    """The cross-core machinery of one mixed launch: the counters of every core, the
    rendezvous of modes 0-2 and the SyncAll barriers.

    Args:
        ctxs: the launch's core contexts, indexed by ``ctx.core_index``.
        gm_order: the checker's :class:`npusim.ascendc.checker.GmOrder`, or None.
    """

    def __init__(self, ctxs, gm_order=None):
        self.ctxs = ctxs
        self.gm_order = gm_order
        self.aivs = [c for c in ctxs if c.core_kind == _core.AIV]
        self.aics = [c for c in ctxs if c.core_kind == _core.AIC]
        self.counters: dict = {}        # (core index, flagId) -> deque of (event key, knowledge)
        self.rendezvous: dict = {}
        self.barriers: dict = {}
        self.sync_counts: dict = {}     # (core index, "aiv"/"all") -> SyncAlls so far
        # library services a core provides to the others of its block (the Matmul API's KFC
        # server on the AIC of a MIX kernel, npusim.ascendc.lib.matmul): (name, block) -> it
        self.services: dict = {}
        self.handoffs: dict = {}        # event -> knowledge its set carried (hand_off)
        # hand-offs so far by source core: an event is named by its source and that count,
        # so the names do not depend on the order the cores run in (npusim.mixgroups)
        self._handoff_seq: dict = {}

    @staticmethod
    def group(ctx) -> int:
        """The block (AI core) ``ctx`` belongs to."""
        return ctx.block_idx // ctx.task_ratio

    def _of_group(self, cores, g):
        return [c for c in cores if self.group(c) == g]

    # -- what a library asks of the launch (the Matmul API's KFC server) ------------------
    def block_cores(self, ctx, kind: str) -> list:
        """The cores of ``kind`` (AIC or AIV) in ``ctx``'s block, in core order."""
        return self._of_group(self.aivs if kind == _core.AIV else self.aics, self.group(ctx))

    def provide(self, ctx, name: str, service) -> None:
        """``ctx`` offers ``service`` (a library's server) to the cores of its block."""
        self.services[(name, self.group(ctx))] = service

    def provided(self, ctx, name: str) -> bool:
        """Whether the block of ``ctx`` has a service ``name`` yet."""
        return (name, self.group(ctx)) in self.services

    def service(self, ctx, name: str):
        """The service ``name`` of ``ctx``'s block (:meth:`provided` first)."""
        return self.services[(name, self.group(ctx))]

    def _snapshot(self, ctx, pipe):
        return None if self.gm_order is None else self.gm_order.snapshot(ctx, pipe)

    def _learn(self, ctx, know) -> None:
        if self.gm_order is not None and know is not None:
            self.gm_order.learn(ctx, know)

    # -- CrossCoreSetFlag / CrossCoreWaitFlag --------------------------------------------
    def _partners(self, ctx, flag: int, mode: int):
        """(rendezvous key, participants, targets) of a set by ``ctx``."""
        kind, g = ctx.core_kind, self.group(ctx)
        if mode == 0:
            same = self.aics if kind == _core.AIC else self.aivs
            return (0, kind, flag), same, same
        if mode == 1:
            if kind != _core.AIV:
                raise SyncError("CrossCoreSetFlag", "mode 1 synchronises the AIVs of one block; "
                                "it was called on an AIC (CrossCoreSetFlag(ISASI).md)",
                                pipe="PIPE_S")
            mine = self._of_group(self.aivs, g)
            return (1, g, flag), mine, mine
        aics, aivs = self._of_group(self.aics, g), self._of_group(self.aivs, g)
        if not aics or not aivs:
            raise SyncError("CrossCoreSetFlag", "mode 2 synchronises the AIC of a block with its "
                            "AIVs: it needs KERNEL_TYPE_MIX_AIC_1_1 or MIX_AIC_1_2 "
                            "(CrossCoreSetFlag(ISASI).md, table 3)", pipe="PIPE_S")
        if kind == _core.AIC:
            return (2, g, kind, flag), aics, aivs
        return (2, g, kind, flag), aivs, aics

    def set_flag(self, ctx, flag: int, mode: int, pipe: Pipe) -> None:
        rv, key = self._count_set(ctx, flag, mode, pipe)
        ctx.record(_core.SET, pipe, 0.0, 0, key, "CrossCoreSetFlag")
        self._deliver_ready(rv)

    def _count_set(self, ctx, flag: int, mode: int, pipe: Pipe):
        """Count one CrossCoreSetFlag of ``ctx`` in its rendezvous (what it knows merged in);
        returns (the rendezvous, the key of the set's record). Recording and delivering are
        the caller's (a group records one set for all its members)."""
        key, participants, targets = self._partners(ctx, flag, mode)
        rv = self.rendezvous.get(key)
        if rv is None:
            rv = self.rendezvous[key] = _Rendezvous(key, flag, participants, targets)
        r = rv.sets[ctx.core_index]
        rv.sets[ctx.core_index] = r + 1
        if r == len(rv.know):
            rv.know.append(None)
        rv.know[r] = _merge(rv.know[r], self._snapshot(ctx, pipe))
        # the record lists the counter updates this set takes part in, each with the number
        # of sets it needs: the replay raises a counter when all of them have fired
        events = tuple((("xcore", key, r, t.core_index), len(participants)) for t in targets)
        return rv, ("xset", events)

    def _deliver_ready(self, rv: _Rendezvous) -> None:
        """Deliver every round of ``rv`` that all its participants have set."""
        while min(rv.sets.values()) > rv.delivered:
            self._deliver(rv)

    def _deliver(self, rv: _Rendezvous) -> None:
        """Round ``rv.delivered`` is complete: raise the counter of each target."""
        r = rv.delivered
        for t in rv.targets:
            q = self.counters.setdefault((t.core_index, rv.flag), deque())
            if len(q) >= COUNTER_MAX:
                raise LimitError("CrossCoreSetFlag", f"the counter of flagId {rv.flag} on {t.name} "
                                 f"would pass {COUNTER_MAX}: at most {COUNTER_MAX} sets may wait "
                                 "for their CrossCoreWaitFlag (a 4-bit counter; reference/"
                                 "hardware.md §3)", pipe="PIPE_S")
            q.append((("xcore", rv.key, r, t.core_index), rv.know[r]))
        rv.know[r] = None
        rv.delivered = r + 1

    def wait_flag(self, ctx, flag: int) -> None:
        q = self.counters.setdefault((ctx.core_index, flag), deque())
        line = kernel_source_line()
        ctx.wait_until(lambda: bool(q), lambda: self._describe_wait(ctx, flag, line))
        event, know = q.popleft()
        ctx.record(_core.WAIT, PIPE_S, 0.0, 0, event, "CrossCoreWaitFlag")
        self._learn(ctx, know)

    def _describe_wait(self, ctx, flag: int, line: str) -> str:
        g = self.group(ctx)
        if ctx.core_kind == _core.AIV:
            who = [c.name for c in self._of_group(self.aics, g)] + [
                f"{c.name} (mode 1)" for c in self._of_group(self.aivs, g) if c is not ctx]
        else:
            who = [c.name for c in self._of_group(self.aivs, g)] + ["the other AICs (mode 0)"]
        served = [f"{c.name} returned from the kernel at REGIST_MATMUL_OBJ to serve its AIVs' "
                  "Matmul calls (the MIX form; an AIC that calls the Matmul API itself registers "
                  "with ASCENDC_CUBE_ONLY=True)" for c in self._of_group(self.aics, g)
                  if ("kfc", g) in self.services and ctx.core_kind == _core.AIV]
        return (f"CrossCoreWaitFlag({flag}) at {line}, which only a CrossCoreSetFlag({flag}) of "
                f"{', '.join(who) or 'another core'} can release"
                + (f" ({'; '.join(served)})" if served else ""))

    # -- one-to-one hand-offs of the library's messages ----------------------------------
    def hand_off(self, src, pipe: Pipe, targets, name: str) -> list:
        """``src`` tells each core of ``targets`` that every earlier instruction of its
        ``pipe`` is done (a library message or its answer: the KFC queue between an AIV and
        its AIC, ``NotifyEvent``). Records the set on ``src`` and returns one event per
        target, for :meth:`receive`. Functionally the caller orders the cores itself; the
        replay sees an event between the cores, the checker the GM accesses it orders."""
        know = self._snapshot(src, pipe)
        events = [self._handoff_event(src, t, know) for t in targets]
        src.record(_core.SET, pipe, 0.0, 0, ("xset", tuple((e, 1) for e in events)), name)
        return events

    def _handoff_event(self, src, target, know):
        """The next hand-off event from ``src`` to ``target``, carrying ``know``."""
        n = self._handoff_seq[src.core_index] = self._handoff_seq.get(src.core_index, 0) + 1
        event = ("xcore", "handoff", src.core_index, n, target.core_index)
        self.handoffs[event] = know
        return event

    def receive(self, dst, event, name: str) -> None:
        """``dst`` waits for a :meth:`hand_off` event (a PIPE_S wait: nothing after it issues
        earlier) and learns what its set carried."""
        dst.record(_core.WAIT, PIPE_S, 0.0, 0, event, name)
        self._learn(dst, self.handoffs.pop(event, None))

    # -- SyncAll across both kinds -----------------------------------------------------
    def sync_all(self, ctx, aiv_only: bool) -> None:
        """``SyncAll<isAIVOnly>()`` in a mixed launch (see :mod:`npusim.ascendc.syncall`)."""
        if aiv_only and ctx.core_kind != _core.AIV:
            raise KernelError("SyncAll", "SyncAll<isAIVOnly=true> synchronises the AIVs only; a "
                              "cube core of a mixed kernel calls SyncAll(isAIVOnly=False) "
                              "(SyncAll.md)", pipe="PIPE_S")
        self._sync_all(ctx, [ctx], aiv_only,
                       lambda n: f"SyncAll(isAIVOnly={aiv_only}) number {n}")

    def _sync_all(self, ctx, cores: list, aiv_only: bool, what) -> None:
        """The SyncAll of ``ctx``, which stands for ``cores`` (itself, or a lockstep group's
        members, which must be at the same SyncAll number ``n``): its records, its arrival
        at the barrier, the wait (described by ``what(n)``) and what the barrier carried."""
        from npusim.ascendc.syncall import SYNC_ALL_CYCLES
        tag = "aiv" if aiv_only else "all"
        parties = self.aivs if aiv_only else self.ctxs
        counts = set()
        for m in cores:
            n = self.sync_counts.get((m.core_index, tag), 0) + 1
            self.sync_counts[(m.core_index, tag)] = n
            counts.add(n)
        [n] = counts
        ctx.sync_all_count += 1
        who = tuple(c.core_index for c in parties)
        ctx.record(_core.BARRIER, PIPE_ALL, 0.0, 0, ("syncall", (tag, n), who), "SyncAll")
        ctx.record(_core.OP, PIPE_S, SYNC_ALL_CYCLES, 0, None, "SyncAll")
        bar = self.barriers.get((tag, n))
        if bar is None:
            bar = self.barriers[(tag, n)] = _Barrier(len(parties))
        bar.arrived += len(cores)
        for m in cores:
            bar.know = _merge(bar.know, self._snapshot(m, PIPE_S))   # PIPE_ALL: all drained
        ctx.wait_until(lambda: bar.arrived == bar.parties, what(n))
        for m in cores:
            self._learn(m, bar.know)

    # -- end of the launch ---------------------------------------------------------------
    def end_checks(self) -> None:
        """Sets nobody waited for, and rounds some participant never joined (checker
        category Sync: CrossCoreSetFlag and CrossCoreWaitFlag must pair)."""
        for (core, flag), q in self.counters.items():
            if q:
                ctx = self.ctxs[core]
                checker.report(ctx, SyncError(
                    "CrossCoreSetFlag", f"{len(q)} set(s) of flagId {flag} for {ctx.name} have "
                    "no CrossCoreWaitFlag by the end of the kernel", pipe="PIPE_S",
                    core=ctx.block_idx, line="?"))
        for rv in self.rendezvous.values():
            most = max(rv.sets.values())
            late = [self.ctxs[c].name for c, n in rv.sets.items() if n < most]
            if late:
                first = rv.participants[0]
                checker.report(first, SyncError(
                    "CrossCoreSetFlag", f"flagId {rv.flag} (mode {rv.key[0]}) was set {most} "
                    f"time(s) by some cores but fewer by {', '.join(late)}: the counter update "
                    "never happens", pipe="PIPE_S", core=first.block_idx, line="?"))
