"""Running a kernel: functional execution of every block, then the timing replay.

``run_kernel`` is the simulator's ``<<<blockDim>>>`` launch (and what Ascend C's CPU-debug
``ICPU_RUN_KF`` does for real kernels): the kernel function is called once per block with
the core context set, so ``GetBlockIdx()`` and the TPipe/DataCopy/vector calls act on that
block's core. Blocks run one after another on numpy; their instruction records are then
replayed by :func:`npusim.timing.simulate` to give the kernel's time.

The kernel type (``KERNEL_TASK_TYPE_DEFAULT``, 设置Kernel类型.md) says which cores a block
runs on: on A2/A3 ``KERNEL_TYPE_AIV_ONLY`` (the default) starts blockDim vector cores,
``KERNEL_TYPE_AIC_ONLY`` blockDim cube cores (blockDim counts AICs; they run in waves over
``cube_core_cnt`` of them); the coupled 910A/310P run every kernel on their AI cores.

The mixed types start several cores per block: ``KERNEL_TYPE_MIX_AIC_1_2`` one AIC and two
AIVs (``MIX_AIC_1_1`` one of each, ``MIX_AIC_1_0`` an AIC, ``MIX_AIV_1_0`` an AIV, with the
cross-core scheduler on). blockDim then counts blocks and may not exceed the physical AICs
(nor the AIVs' half), since the cores of a mixed kernel wait for each other
(docs/reference/hardware.md §3 "Block indexing and launch"). Every core runs the kernel function
as a coroutine (a greenlet) that hands over at CrossCoreWaitFlag and SyncAll until the
core it waits for has acted (:mod:`npusim.ascendc.crosscore`); the replay runs every core
at once, the cross-core flags as events between them. In lockstep (the default) the cores
of each lane — the AICs, the AIVs of each sub-block — run in groups of blocks, each group
one coroutine (:mod:`npusim.mixgroups`), with the same results.
"""
from __future__ import annotations

import contextlib
import gc
import time
from dataclasses import dataclass, field

import greenlet
import numpy as np

from npusim import lockstep as _lockstep
from npusim import mixgroups as _mixgroups
from npusim.blas_threads import launch_blas_threads
from npusim.ascendc import core as _core
from npusim.ascendc.cube import unitflag as _unitflag
from npusim.ascendc import checker
from npusim.ascendc import timing_only as _timing_only
from npusim.ascendc.checker import CheckerConfig
from npusim.ascendc.crosscore import CrossCoreState, KernelReturn
from npusim.ascendc.syncall import SyncAllBarrier
from npusim.ascendc.types import KernelMetaType, Pipe
from npusim.errors import LimitError, NpuSimError, SyncError, trim_traceback
from npusim.runlock import LOCK
from npusim.timing import (AIC_PROFILE_PIPES, MIX_PROFILE_PIPES, PROFILE_PIPES, KernelTiming,
                           simulate)

#: msprof op-summary names of the per-pipe times (µs), by pipe: a vector core's...
MSPROF_PIPE_NAMES = {"PIPE_MTE2": "aiv_mte2_time", "PIPE_V": "aiv_vec_time",
                     "PIPE_MTE3": "aiv_mte3_time", "PIPE_S": "aiv_scalar_time"}
#: ...and a cube core's (AIC_ONLY launches, and the AICs of a mixed one).
MSPROF_AIC_PIPE_NAMES = {"PIPE_MTE2": "aic_mte2_time", "PIPE_MTE1": "aic_mte1_time",
                         "PIPE_M": "aic_mac_time", "PIPE_FIX": "aic_fixpipe_time",
                         "PIPE_S": "aic_scalar_time"}

#: Cores per block of each mixed kernel type on A2/A3: (AICs, AIVs) (设置Kernel类型.md).
MIX_SHAPES = {KernelMetaType.KERNEL_TYPE_MIX_AIC_1_2: (1, 2),
              KernelMetaType.KERNEL_TYPE_MIX_AIC_1_1: (1, 1),
              KernelMetaType.KERNEL_TYPE_MIX_AIC_1_0: (1, 0),
              KernelMetaType.KERNEL_TYPE_MIX_AIV_1_0: (0, 1)}


@dataclass
class KernelProfile:
    """What one kernel launch cost on the simulated device (msprof op-summary style).

    Attributes:
        op_name: the kernel or operator name.
        soc_version: the SoC it ran on.
        block_dim: number of blocks launched.
        start_us: device time at which the launch started (µs; set by the stream).
        duration_us: Task Duration: launch overhead + first to last instruction (µs).
        pipe_time_us: msprof name (aiv_mte2_time, aiv_vec_time, aiv_mte3_time,
            aiv_scalar_time; for an AIC_ONLY launch aic_mte2_time, aic_mte1_time,
            aic_mac_time, aic_fixpipe_time, aic_scalar_time; a mixed launch has both sets)
            -> busy time of that pipe averaged over the cores of that kind (µs).
        core_pipe_time_us: pipe name -> array of busy µs per core (per block, except in a
            mixed launch: one entry per AIC then per AIV, see ``core_kinds``).
        bytes_read, bytes_written: GM traffic of all blocks (bytes).
        hbm_bytes: the part of that traffic that reached HBM during the launch (L2
            misses, write-backs, bypassing copies); writes the L2 absorbed are not in it.
        bound: what limits the kernel: "HBM bandwidth", "vector" (or "cube" for an AIC
            launch), "scalar" or "latency".
        bound_percent: how close to that limit the kernel ran (%).
        warnings: checker notes (e.g. DataCopy lengths rounded down).
        host_functional_s, host_timing_s: host wall time the simulator spent running the
            blocks on numpy and replaying their records (seconds); when the launch took
            the kept replay of an earlier launch with the same records
            (``npusim.timing.REPLAY_MEMO``), host_timing_s is the time to find it.
        timing: the raw replay result, for traces.
        kernel_type: the :class:`KernelMetaType` the launch ran as (the default resolved:
            AIV_ONLY on A2/A3, AICORE on the coupled 910A/310P).
        core_kinds: per entry of ``timing`` (and of ``records``/``lines``), the kind of core
            it ran on: "AIV", "AIC" or "AICore". A mixed launch lists its AICs (block order)
            then its AIVs (GetBlockIdx order).
        core_ids: per entry, the core's GetBlockIdx().
    """

    op_name: str
    soc_version: str
    block_dim: int
    duration_us: float
    pipe_time_us: dict
    core_pipe_time_us: dict
    bytes_read: int
    bytes_written: int
    bound: str
    bound_percent: float
    hbm_bytes: float = 0.0
    warnings: list = field(default_factory=list)
    start_us: float = 0.0
    host_functional_s: float = 0.0
    host_timing_s: float = 0.0
    timing: KernelTiming | None = field(default=None, repr=False)
    records: list | None = field(default=None, repr=False)
    lines: list | None = field(default=None, repr=False)
    kernel_type: KernelMetaType | None = None
    core_kinds: list | None = field(default=None, repr=False)
    core_ids: list | None = field(default=None, repr=False)

    @property
    def read_bandwidth(self) -> float:
        """Bytes read per second of Task Duration (B/s)."""
        return self.bytes_read / (self.duration_us * 1e-6) if self.duration_us else 0.0

    @property
    def write_bandwidth(self) -> float:
        """Bytes written per second of Task Duration (B/s)."""
        return self.bytes_written / (self.duration_us * 1e-6) if self.duration_us else 0.0

    @property
    def hbm_bandwidth(self) -> float:
        """HBM bytes per second of Task Duration (B/s): never above the SoC's HBM bandwidth."""
        return self.hbm_bytes / (self.duration_us * 1e-6) if self.duration_us else 0.0

    @property
    def bandwidth(self) -> float:
        """All GM bytes moved per second of Task Duration (B/s)."""
        return self.read_bandwidth + self.write_bandwidth

    def summary(self) -> str:
        """One block of text with the figures msprof op prints."""
        lines = [f"{self.op_name} on {self.soc_version}: blockDim {self.block_dim}, "
                 f"Task Duration {self.duration_us:.3f} us"]
        lines.append("  " + ", ".join(f"{k} {v:.3f} us" for k, v in self.pipe_time_us.items()))
        lines.append(f"  read {self.bytes_read} B ({self.read_bandwidth / 1e12:.4f} TB/s), "
                     f"write {self.bytes_written} B ({self.write_bandwidth / 1e12:.4f} TB/s); "
                     f"HBM {self.hbm_bandwidth / 1e12:.4f} TB/s; "
                     f"bound: {self.bound} ({self.bound_percent:.0f}%)")
        return "\n".join(lines)


def _bound(soc, cycles: float, duration_us: float, nbytes: float, busy: dict,
           computes=((Pipe.PIPE_V, "vector"),)) -> tuple[str, float]:
    """What limits the launch: HBM bandwidth, a compute unit of ``computes`` (pipe, name),
    the scalar unit, or latency when none reaches half of its capacity."""
    if cycles <= 0:
        return "latency", 0.0
    hbm = nbytes / (duration_us * 1e-6) / soc.hbm_bandwidth if duration_us else 0.0
    units = [(label, float(busy[pipe].max()) / cycles) for pipe, label in computes]
    scalar = float(busy[Pipe.PIPE_S].max()) / cycles
    name, frac = max([("HBM bandwidth", hbm), *units, ("scalar", scalar)],
                     key=lambda kv: kv[1])
    if frac < 0.5:
        return "latency", 100.0 * frac
    return name, 100.0 * frac


class _CoreCoroutine:
    """One core run as a greenlet that hands control back whenever it must wait for
    another core (SyncAll, CrossCoreWaitFlag: :meth:`CoreContext.wait_until`).

    Greenlets switch in about a microsecond and run on the launching thread, so cores
    take turns exactly as the scheduler says, with no operating-system threads.
    """

    def __init__(self, kernel, args, ctx):
        self.ctx = ctx
        self.finished = False
        self.error = None
        self.ready = None             # while parked: the condition to go on
        self.what = None              # while parked: what it waits for (str or function)
        self._scheduler = greenlet.getcurrent()
        self._glet = greenlet.greenlet(self._run)
        self._kernel, self._args = kernel, args
        ctx.scheduler_wait = self._park

    def _run(self):
        try:
            # a greenlet starts in a context of its own: the launch's errstate does not
            # reach it, so each core sets it again (IEEE results, no numpy warnings)
            with np.errstate(all="ignore"):
                self._kernel(*self._args)
        except greenlet.GreenletExit:
            raise
        except KernelReturn:           # a macro's return from the kernel (REGIST_MATMUL_OBJ)
            pass
        except BaseException as exc:   # handed to the scheduler
            self.error = exc
        self.finished = True

    def _park(self, ready, what):
        self.ready, self.what = ready, what
        self._scheduler.switch()

    def runnable(self) -> bool:
        return not self.finished and (self.ready is None or self.ready())

    def step(self):
        """Run the core until it next waits, or to its end."""
        self.ready = self.what = None
        _core.set_current_core(self.ctx)
        self._glet.switch()

    def describe(self) -> str:
        return self.what() if callable(self.what) else str(self.what)

    def abort(self):
        if not self.finished and self._glet:
            self._glet.throw(greenlet.GreenletExit)


def _hang(coros) -> SyncError:
    """The error of a launch whose unfinished cores all wait for each other."""
    waiting: dict = {}
    for co in coros:
        if not co.finished:
            waiting.setdefault(co.describe(), []).append(co.ctx.name)
    parts = [f"{', '.join(names)} wait{'s' if len(names) == 1 else ''} at {what}"
             for what, names in waiting.items()]
    done = [co.ctx.name for co in coros if co.finished]
    if done:
        parts.append(f"{', '.join(done)} finished and never reaches what they wait for")
    first = next(co for co in coros if not co.finished)
    instruction = first.describe().split("(")[0].split()[0]
    return SyncError(instruction, "the kernel hangs: " + "; ".join(parts),
                     core=first.ctx.block_idx, line="?")


def _run_coroutines(kernel, args, ctxs) -> None:
    """Run every core until it waits, in order, then every core that may go on, and so
    on: the cores take turns at their waits (SyncAll, CrossCoreWaitFlag)."""
    coros = [_CoreCoroutine(kernel, args, ctx) for ctx in ctxs]
    _take_turns(coros, lambda: _hang(coros))


def _take_turns(coros: list, hang) -> None:
    """The turns of :func:`_run_coroutines` over ``coros``; when no coroutine can go on,
    raises ``hang()`` (an exception). Every coroutine is unwound on the way out."""
    live = coros
    try:
        with np.errstate(all="ignore"):   # IEEE results, no numpy warnings
            while live:
                progressed = False
                for co in live:
                    if co.runnable():
                        co.step()
                        progressed = True
                        if co.error is not None:
                            raise co.error
                live = [co for co in live if not co.finished]
                if live and not progressed:
                    raise hang()
    finally:
        for co in coros:          # unwind any core still parked at a wait
            co.abort()
        _core.set_current_core(None)


def _new_context(soc, gm, ub, b, block_dim, capacity, keep_spans, config, kind=None,
                 pool=None, tracked=None, log_gm=True):
    """Block ``b``'s context; ``log_gm``: the checker keeps its GM accesses for the
    comparison across blocks at the end of the launch (checker.check_blocks)."""
    ctx = _core.CoreContext(soc, gm, ub, b, block_dim, capacity, kind, pool)
    ctx.trace_lines = [] if keep_spans else None
    ctx.checker_config = config
    if tracked is None:
        tracked = checker.tracks(config, b, block_dim)
    if config.enabled and tracked:
        ctx.tracker = checker.UbTracker(soc.ub_size, soc)
    if config.enabled and log_gm and block_dim > 1:
        ctx.gm_access = ctx.gm_writes = checker.GmLog()
    return ctx


def _resolve(soc, kernel_type):
    """(kernel type, kind of core, (AICs, AIVs) per block of a mixed type or None)
    (设置Kernel类型.md: A2/A3 take AIV_ONLY, AIC_ONLY and the MIX types; the 310P
    AICORE)."""
    K = KernelMetaType
    if kernel_type is None:
        kernel_type = K.KERNEL_TYPE_AIV_ONLY if soc.is_split else K.KERNEL_TYPE_AICORE
    kt = K(kernel_type)
    if soc.is_split and kt == K.KERNEL_TYPE_AIV_ONLY:
        return kt, _core.AIV, None
    if soc.is_split and kt == K.KERNEL_TYPE_AIC_ONLY:
        return kt, _core.AIC, None
    if soc.is_split and kt in MIX_SHAPES:
        return kt, None, MIX_SHAPES[kt]
    if not soc.is_split and kt == K.KERNEL_TYPE_AICORE:
        return kt, _core.AICORE, None
    raise LimitError("<<<blockDim>>>", f"kernel type {kt.name} cannot be launched on "
                     f"{soc.soc_version} by this simulator (A2/A3: AIV_ONLY, AIC_ONLY, "
                     "MIX_AIC_1_2, MIX_AIC_1_1, MIX_AIC_1_0, MIX_AIV_1_0; coupled 910A/310P: "
                     "AICORE)", core=-1)


def _end_of_block_checks(ctx) -> None:
    """Flags left unpaired, unitFlag hand-offs no Fixpipe took, and queue tensors never
    freed (checker categories Sync, Leak)."""
    ctx.flush_scalar()      # the scalar unit's issue work since its last PIPE_S record
    _unitflag.end_of_block(ctx)
    for key, balance in ctx.flag_balance.items():
        if balance:
            _, event, event_id = key
            what = ("has no WaitFlag" if balance > 0 else "has no SetFlag")
            if balance < 0:
                used = sorted(ctx.flag_sets.get(event, ()))
                what += (f" (SetFlag<{event.name}> used eventID {', '.join(map(str, used))})"
                         if used else f" (no SetFlag<{event.name}> ran in this kernel)")
            checker.report(ctx, SyncError(
                "SetFlag" if balance > 0 else "WaitFlag",
                f"{event.name}({event_id}) {what} by the end of the kernel "
                f"({abs(balance)} unpaired)", pipe=(event.src if balance > 0 else event.dst).name,
                line=ctx.flag_lines.get(key, "?")))
    pipe = ctx.pipe
    if pipe is not None:
        for que in pipe.queues:
            for index in que.allocated():
                line = "?"
                if ctx.tracker is not None:
                    line = ctx.tracker.alloc_lines.get((id(que), index), "?")
                checker.report(ctx, checker.LeakError(
                    "AllocTensor", f"a {que.position.name} tensor allocated here is never freed "
                    "(FreeTensor) by the end of the kernel", line=line))


@contextlib.contextmanager
def _without_cyclic_gc():
    """Pause Python's cyclic garbage collector.

    A launch appends some 10^5 instruction records that all live until its end; each
    collection would walk all of them again, which costs more than a tenth of the launch.
    Nothing a launch keeps is freed by the collector, so pausing it changes no result.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _release_block(ctx) -> None:
    """After a block's end checks: drop its TPipe (with the tensors its queues keep for reuse,
    which refer back to their queue) and its checker state, so that a launch holds only the
    blocks' records however many blocks it has (and while the collector is paused)."""
    pipe, ctx.pipe = ctx.pipe, None
    if pipe is not None:
        pipe._release()
    ctx.tracker = None
    ctx.mems = {}
    # the coroutine and cross-core links refer back to the launch's other cores
    ctx.scheduler_wait = ctx.sync_all_barrier = ctx.mix = ctx.gm_order = None


def run_kernel(kernel, block_dim: int, args: tuple, *, soc, gm, name: str | None = None,
               reserve_ub: bool = True, keep_spans: bool = False,
               sync_all: bool = False, checks: CheckerConfig | None = None,
               kernel_type: KernelMetaType | None = None,
               lockstep: bool | None = None, functional: bool | None = None) -> KernelProfile:
    """Run ``kernel(*args)`` on ``block_dim`` blocks and time it.

    Args:
        kernel: a function with the signature of the Ascend C kernel entry (GM addresses
            as ints, then the host's TilingData object).
        block_dim: number of blocks, [1, 65535] (docs/reference/hardware.md §3 launch limits).
        args: the kernel's arguments.
        soc, gm: the SocSpec and GlobalMemory of the device.
        name: the name shown in profiles (default: the function's name).
        reserve_ub: keep the 8 KiB of UB that Ascend C reserves for its library APIs
            (built-in operators compiled without it pass False; docs/reference/hardware.md §1.7).
        keep_spans: keep every instruction's span in ``profile.timing``, and the records and
            kernel source lines in ``profile.records`` / ``profile.lines`` (for traces).
        sync_all: the kernel calls SyncAll: run its blocks as coroutines (greenlets) that
            take turns at each SyncAll (blockDim may then not exceed the SoC's vector
            cores). Mixed launches always run so.
        checks: the kernel checker's configuration (:mod:`npusim.ascendc.checker`; default:
            on, every category an error, races tracked on the first and last block).
        kernel_type: a :class:`KernelMetaType` (default: a vector kernel, AIV_ONLY on A2/A3).
            KERNEL_TYPE_AIC_ONLY runs each block on a cube core (L1/L0 buffers, pipes MTE2,
            MTE1, M, FIX; no UB), blockDim counting AICs, and profiles the aic_* pipe times.
            KERNEL_TYPE_MIX_AIC_1_2 (and MIX_AIC_1_1, MIX_AIC_1_0, MIX_AIV_1_0) runs each
            block on one AIC and two AIVs that synchronise through cross-core flags and
            exchange data through GM; the profile has both the aic_* and the aiv_* times.
        lockstep: run blocks that issue the same instructions together
            (:mod:`npusim.lockstep`; results, records, profiles, warnings and errors are
            those of per-block execution). None (default): on unless the environment sets
            ``NPUSIM_LOCKSTEP=0``; False: block after block. A SyncAll launch runs all its
            blocks as one group that meets each SyncAll together, or per core when they
            diverge. A mixed launch runs each lane of cores (its AICs, the AIVs of each
            sub-block) in groups of blocks whose programs agree (:mod:`npusim.mixgroups`),
            per core where they do not. A kernel whose ``npusim_lockstep`` attribute is
            False (a compiled C++ kernel, :mod:`npusim.cpp`) runs per block (per core).
        functional: False runs the launch timing-only (:mod:`npusim.ascendc.timing_only`):
            the arithmetic instructions (element-wise vector family, Cast, reductions,
            Mmad) skip their numpy work, so the results in GM are not computed, while the
            records, the timing, the profile and the checker's findings are those of a
            functional run. A kernel that reads a value it did not compute through the
            scalar unit (GetValue) raises :class:`TimingOnlyError`. None (default):
            timing-only when the environment sets ``NPUSIM_TIMING_ONLY=1``, else functional.

    BLAS (the cube's float64 block products) runs on one thread during the launch, and
    gets its previous thread count back after it; ``NPUSIM_BLAS_THREADS`` changes that
    (:mod:`npusim.blas_threads`).

    Raises:
        LimitError: block_dim out of range (a mixed launch: above the physical AICs, or
        twice it above the AIVs), or a kernel type the SoC cannot launch. Any
        :class:`KernelError` the kernel raises propagates; GM may then hold the partial
        writes of the blocks that ran, as on hardware. SyncError: the cores of a mixed (or
        SyncAll) launch wait for each other forever. The traceback of a simulator error
        holds the caller's and the kernel's frames only, the instruction's line last; the
        environment variable ``NPUSIM_FULL_TRACEBACK=1`` keeps the simulator's own frames
        (:func:`npusim.errors.trim_traceback`).
    """
    try:
        kt, kind, mix = _resolve(soc, kernel_type)
        # LOCK: the engine's state (current core, pools, memos, the gc switch) is per process
        timing_only = _timing_only.resolve(functional)
        if timing_only and getattr(kernel, "npusim_timing_only", True) is False:
            raise ValueError(f"run_kernel: {getattr(kernel, '__name__', 'this kernel')} cannot "
                             "run timing-only: its scalar code reads the buffers directly, "
                             "where uncomputed bytes cannot be caught; run it functionally")
        in_lockstep = (_lockstep.lockstep_enabled(lockstep)
                       and getattr(kernel, "npusim_lockstep", True))
        with LOCK, _without_cyclic_gc(), launch_blas_threads(), _timing_only.launch(timing_only):
            if mix is not None:
                return _launch_mix(kernel, int(block_dim), args, soc, gm, name, reserve_ub,
                                   keep_spans, checks, kt, mix, in_lockstep)
            return _launch(kernel, int(block_dim), args, soc, gm, name, reserve_ub,
                           keep_spans, sync_all, checks, kt, kind, in_lockstep)
    except NpuSimError as exc:
        # the kernel's lines, not the simulator's (NPUSIM_FULL_TRACEBACK=1 keeps them all)
        trim_traceback(exc)
        raise


def _check_block_dim(soc, block_dim: int) -> None:
    if not 1 <= block_dim <= soc.max_block_dim:
        raise LimitError("<<<blockDim>>>", f"blockDim {block_dim} is outside [1, "
                         f"{soc.max_block_dim}] (docs/reference/hardware.md §3 launch limits)", core=-1)


def _finish_blocks(ctxs) -> None:
    """End-of-kernel checks of cores that ran as coroutines, then drop their state."""
    for ctx in ctxs:
        _core.set_current_core(ctx)
        try:
            _end_of_block_checks(ctx)
        finally:
            _core.set_current_core(None)
            _release_block(ctx)


def _launch(kernel, block_dim, args, soc, gm, name, reserve_ub, keep_spans, sync_all,
            checks, kt, kind, lockstep=False) -> KernelProfile:
    _check_block_dim(soc, block_dim)
    capacity = soc.ub_usable - (soc.ascendc_reserved_ub if reserve_ub else 0)
    config = checks if checks is not None else checker.default()
    t0 = time.perf_counter()
    cores = soc.cube_block_num if kind == _core.AIC else soc.vector_block_num
    pool: dict = {}              # L1/L0 buffers, reused block after block like the UB
    ctxs = None
    if sync_all and block_dim > cores:
        raise LimitError("SyncAll", f"blockDim {block_dim} exceeds the {cores} "
                         "cores: SyncAll would deadlock (docs/reference/hardware.md §3)", core=-1)
    if lockstep and block_dim > 1:
        # no GM log for the checker: the lockstep engine's shows that no block touches
        # bytes another block writes (within a SyncAll phase), or the launch runs again
        # block after block (per core, for SyncAll)
        def new_context(b, ub):
            return _new_context(soc, gm, ub, b, block_dim, capacity, keep_spans, config,
                                kind, pool, log_gm=False)

        def end_block(ctx):
            _end_of_block_checks(ctx)
            _release_block(ctx)

        with np.errstate(all="ignore"):   # IEEE results, no numpy warnings
            ctxs = _lockstep.run_blocks(kernel, args, block_dim, new_context, end_block, soc,
                                        gm, capacity, keep_spans, kind, config, sync_all)
    in_lockstep = ctxs is not None
    if sync_all and ctxs is None:
        ctxs = [_new_context(soc, gm, np.full(soc.ub_size, _core.UB_POISON, np.uint8), b,
                             block_dim, capacity, keep_spans, config, kind)
                for b in range(block_dim)]
        barrier = SyncAllBarrier(block_dim)
        for ctx in ctxs:
            ctx.sync_all_barrier = barrier
        _run_coroutines(kernel, args, ctxs)
        _finish_blocks(ctxs)
    if ctxs is None:       # block after block
        ub = np.empty(soc.ub_size, dtype=np.uint8)
        ctxs = []
        try:
            with np.errstate(all="ignore"):   # IEEE results, no numpy warnings
                for b in range(block_dim):
                    ub.fill(_core.UB_POISON)
                    ctx = _new_context(soc, gm, ub, b, block_dim, capacity, keep_spans, config,
                                       kind, pool)
                    _core.set_current_core(ctx)
                    kernel(*args)
                    _end_of_block_checks(ctx)
                    _release_block(ctx)
                    ctxs.append(ctx)
        finally:
            _core.set_current_core(None)
    if config.enabled and block_dim > 1 and not in_lockstep:
        # GM bytes two blocks touch, one writing, in one SyncAll phase (a lockstep run has
        # none: its blocks would have run again block after block)
        checker.check_blocks(ctxs, config)
        for ctx in ctxs:
            ctx.gm_access = ctx.gm_writes = None
    return _profile(kernel, name, soc, ctxs, block_dim, keep_spans, t0, kt, cores)


def _launch_mix(kernel, block_dim, args, soc, gm, name, reserve_ub, keep_spans, checks, kt,
                shape, lockstep=False) -> KernelProfile:
    """A mixed launch: ``shape`` = (AICs, AIVs) per block; every core a coroutine, or with
    ``lockstep`` the cores of each lane in groups (:mod:`npusim.mixgroups`) where their
    programs agree."""
    _check_block_dim(soc, block_dim)
    n_aic, n_aiv = shape
    if n_aic and block_dim > soc.cube_block_num:
        raise LimitError("<<<blockDim>>>", f"blockDim {block_dim} of a {kt.name} launch exceeds "
                         f"the {soc.cube_block_num} cube cores of {soc.soc_version}: a mixed "
                         "kernel's blocks must all be resident (docs/reference/hardware.md §3 "
                         "\"Block indexing and launch\")", core=-1)
    if block_dim * n_aiv > soc.vector_block_num:
        raise LimitError("<<<blockDim>>>", f"blockDim {block_dim} x {n_aiv} AIVs of a {kt.name} "
                         f"launch exceeds the {soc.vector_block_num} vector cores of "
                         f"{soc.soc_version} (docs/reference/hardware.md §3)", core=-1)
    capacity = soc.ub_usable - (soc.ascendc_reserved_ub if reserve_ub else 0)
    config = checks if checks is not None else checker.default()
    t0 = time.perf_counter()
    if lockstep and block_dim > 1:
        with np.errstate(all="ignore"):   # IEEE results, no numpy warnings
            done = _mixgroups.run_mix(kernel, args, soc, gm, block_dim, capacity, keep_spans,
                                      config, n_aic, n_aiv)
        if done is not None:
            return _profile(kernel, name, soc, done, block_dim, keep_spans, t0, kt, len(done))
    ctxs = _mix_contexts(soc, gm, block_dim, capacity, keep_spans, config, n_aic, n_aiv)
    gm_order = None
    if config.enabled:
        gm_order = checker.GmOrder(ctxs, [c.core_index for c in ctxs if c.tracker is not None])
    state = CrossCoreState(ctxs, gm_order)
    for ctx in ctxs:
        ctx.mix = state
        ctx.gm_order = gm_order if ctx.tracker is not None else None
        if ctx.gm_order is not None:      # its GM accesses go to GmOrder as they are made
            ctx.gm_access = ctx.gm_writes = checker.GmLog(keep=False)
    _run_coroutines(kernel, args, ctxs)
    state.end_checks()
    _finish_blocks(ctxs)
    # GM races between the cores are the happens-before checker's (GmOrder, on the tracked
    # blocks): it knows the cross-core flags that order them, which SyncAll phases alone
    # (checker.check_blocks) do not
    return _profile(kernel, name, soc, ctxs, block_dim, keep_spans, t0, kt, len(ctxs))


def _mix_contexts(soc, gm, block_dim, capacity, keep_spans, config, n_aic, n_aiv) -> list:
    """One context per core of a mixed launch: the AICs (block order), then the AIVs
    (GetBlockIdx order), each with its own memories; race tracking on every core of the
    tracked blocks (the first and the last, or all)."""
    groups = range(block_dim)
    tracked = set(groups) if config.all_blocks else {0, block_dim - 1}
    plan = [(_core.AIC, g, g, 0, n_aic) for g in groups for _ in range(n_aic)] + \
           [(_core.AIV, g, g * n_aiv + s, s, n_aiv) for g in groups for s in range(n_aiv)]
    ctxs = []
    for i, (kind, g, idx, sub, ratio) in enumerate(plan):
        ub = (np.full(soc.ub_size, _core.UB_POISON, np.uint8) if kind == _core.AIV
              else np.empty(0, np.uint8))      # an AIC has no UB
        ctx = _new_context(soc, gm, ub, idx, block_dim, capacity, keep_spans, config, kind,
                           tracked=g in tracked, log_gm=False)
        ctx.sub_block_idx, ctx.task_ratio, ctx.core_index = sub, ratio, i
        ctxs.append(ctx)
    return ctxs


def _profile(kernel, name, soc, ctxs, block_dim, keep_spans, t0, kt, cores) -> KernelProfile:
    """Replay the cores' records and build the launch's profile."""
    blocks = [ctx.records for ctx in ctxs]
    warnings = [w for ctx in ctxs for w in ctx.warnings]
    nread = sum(ctx.bytes_read for ctx in ctxs)
    nwritten = sum(ctx.bytes_written for ctx in ctxs)
    kinds = [ctx.core_kind for ctx in ctxs]
    present = set(kinds)
    t1 = time.perf_counter()
    if present == {_core.AIC}:
        pipes, computes = AIC_PROFILE_PIPES, ((Pipe.PIPE_M, "cube"),)
    elif _core.AIC in present:
        pipes, computes = MIX_PROFILE_PIPES, ((Pipe.PIPE_M, "cube"), (Pipe.PIPE_V, "vector"))
    else:
        pipes, computes = PROFILE_PIPES, ((Pipe.PIPE_V, "vector"),)
    timing = simulate(blocks, soc, keep_spans=keep_spans, cores=cores, profile_pipes=pipes)
    t2 = time.perf_counter()
    to_us = 1e6 / soc.freq_hz
    duration = soc.launch_overhead_us + timing.cycles * to_us
    core_busy = {p.name: timing.pipe_busy[p] * to_us for p in pipes}
    pipe_avg = {}
    for kind, names in ((_core.AIC, MSPROF_AIC_PIPE_NAMES), (None, MSPROF_PIPE_NAMES)):
        mine = np.array([(k == _core.AIC) == (kind == _core.AIC) for k in kinds])
        if mine.any():     # each kind's pipes, averaged over the cores of that kind
            pipe_avg.update({names[p]: float(v[mine].mean()) for p, v in core_busy.items()
                             if p in names})
    bound, pct = _bound(soc, timing.cycles, duration, timing.hbm_bytes, timing.pipe_busy,
                        computes)
    return KernelProfile(name or getattr(kernel, "__name__", "kernel"), soc.soc_version,
                         block_dim, duration, pipe_avg, core_busy, nread, nwritten, bound, pct,
                         timing.hbm_bytes, warnings, host_functional_s=t1 - t0,
                         host_timing_s=t2 - t1, timing=timing,
                         records=blocks if keep_spans else None,
                         lines=[c.trace_lines for c in ctxs] if keep_spans else None,
                         kernel_type=kt, core_kinds=kinds,
                         core_ids=[c.block_idx for c in ctxs])
