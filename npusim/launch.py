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
"""
from __future__ import annotations

import contextlib
import gc
import time
from dataclasses import dataclass, field

import greenlet
import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import checker
from npusim.ascendc.checker import CheckerConfig
from npusim.ascendc.types import KernelMetaType, Pipe
from npusim.errors import GmAccessError, LimitError, SyncError
from npusim.timing import AIC_PROFILE_PIPES, PROFILE_PIPES, KernelTiming, simulate

#: msprof op-summary names of the per-pipe times (µs), by pipe: a vector core's...
MSPROF_PIPE_NAMES = {"PIPE_MTE2": "aiv_mte2_time", "PIPE_V": "aiv_vec_time",
                     "PIPE_MTE3": "aiv_mte3_time", "PIPE_S": "aiv_scalar_time"}
#: ...and a cube core's (AIC_ONLY launches).
MSPROF_AIC_PIPE_NAMES = {"PIPE_MTE2": "aic_mte2_time", "PIPE_MTE1": "aic_mte1_time",
                         "PIPE_M": "aic_mac_time", "PIPE_FIX": "aic_fixpipe_time",
                         "PIPE_S": "aic_scalar_time"}


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
            aic_mac_time, aic_fixpipe_time, aic_scalar_time) -> busy time of that pipe
            averaged over the blocks (µs).
        core_pipe_time_us: pipe name -> array of busy µs per block.
        bytes_read, bytes_written: GM traffic of all blocks (bytes).
        hbm_bytes: the part of that traffic that reached HBM during the launch (L2
            misses, write-backs, bypassing copies); writes the L2 absorbed are not in it.
        bound: what limits the kernel: "HBM bandwidth", "vector" (or "cube" for an AIC
            launch), "scalar" or "latency".
        bound_percent: how close to that limit the kernel ran (%).
        warnings: checker notes (e.g. DataCopy lengths rounded down).
        host_functional_s, host_timing_s: host wall time the simulator spent running the
            blocks on numpy and replaying their records (seconds).
        timing: the raw replay result, for traces.
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
           compute=(Pipe.PIPE_V, "vector")) -> tuple[str, float]:
    if cycles <= 0:
        return "latency", 0.0
    hbm = nbytes / (duration_us * 1e-6) / soc.hbm_bandwidth if duration_us else 0.0
    unit = float(busy[compute[0]].max()) / cycles
    scalar = float(busy[Pipe.PIPE_S].max()) / cycles
    name, frac = max((("HBM bandwidth", hbm), (compute[1], unit), ("scalar", scalar)),
                     key=lambda kv: kv[1])
    if frac < 0.5:
        return "latency", 100.0 * frac
    return name, 100.0 * frac


class _BlockCoroutine:
    """One block run as a greenlet that hands control back at each SyncAll.

    Greenlets switch in about a microsecond and run on the launching thread, so blocks
    take turns exactly as the scheduler says, with no operating-system threads.
    """

    def __init__(self, kernel, args, ctx):
        self.ctx = ctx
        self.finished = False
        self.error = None
        self._scheduler = greenlet.getcurrent()
        self._glet = greenlet.greenlet(self._run)
        self._kernel, self._args = kernel, args
        ctx.yield_to_scheduler = self._yield

    def _run(self):
        try:
            self._kernel(*self._args)
        except greenlet.GreenletExit:
            raise
        except BaseException as exc:   # handed to the scheduler
            self.error = exc
        self.finished = True

    def _yield(self):
        self._scheduler.switch()

    def step(self):
        """Run the block until its next SyncAll or its end."""
        _core.set_current_core(self.ctx)
        self._glet.switch()

    def abort(self):
        if not self.finished and self._glet:
            self._glet.throw(greenlet.GreenletExit)


def _run_blocks_with_sync_all(kernel, args, ctxs) -> None:
    """Run every block to each SyncAll in turn, then on to the next one."""
    blocks = [_BlockCoroutine(kernel, args, ctx) for ctx in ctxs]
    live = blocks
    try:
        with np.errstate(all="ignore"):   # IEEE results, no numpy warnings
            while live:
                for blk in live:
                    blk.step()
                    if blk.error is not None:
                        raise blk.error
                done = [blk for blk in live if blk.finished]
                if done and len(done) != len(live):
                    ahead = [blk.ctx.block_idx for blk in live if not blk.finished]
                    raise SyncError("SyncAll", f"blocks {ahead} wait at SyncAll that block "
                                    f"{done[0].ctx.block_idx} never reaches: the kernel hangs",
                                    core=ahead[0], line="?")
                live = [blk for blk in live if not blk.finished]
    finally:
        for blk in blocks:          # unwind any block still parked at a SyncAll
            blk.abort()
        _core.set_current_core(None)


def _new_context(soc, gm, ub, b, block_dim, capacity, keep_spans, config, kind=None,
                 pool=None):
    ctx = _core.CoreContext(soc, gm, ub, b, block_dim, capacity, kind, pool)
    ctx.trace_lines = [] if keep_spans else None
    ctx.checker_config = config
    if config.enabled and (config.all_blocks or b in (0, block_dim - 1)):
        ctx.tracker = checker.UbTracker(soc.ub_size, soc)
    return ctx


def _core_kind(soc, kernel_type) -> str:
    """The kind of core a block of ``kernel_type`` runs on (设置Kernel类型.md: A2/A3 take
    AIV_ONLY, AIC_ONLY and the MIX types; the 310P AICORE)."""
    if kernel_type is None:
        return _core.AIV if soc.is_split else _core.AICORE
    kt = KernelMetaType(kernel_type)
    if soc.is_split and kt == KernelMetaType.KERNEL_TYPE_AIV_ONLY:
        return _core.AIV
    if soc.is_split and kt == KernelMetaType.KERNEL_TYPE_AIC_ONLY:
        return _core.AIC
    if not soc.is_split and kt == KernelMetaType.KERNEL_TYPE_AICORE:
        return _core.AICORE
    raise LimitError("<<<blockDim>>>", f"kernel type {kt.name} cannot be launched on "
                     f"{soc.soc_version} by this simulator (A2/A3: AIV_ONLY, AIC_ONLY; coupled "
                     "910A/310P: AICORE; mixed AIC/AIV launches are not modelled yet)", core=-1)


def _end_of_block_checks(ctx) -> None:
    """Flags left unpaired and queue tensors never freed (checker categories Sync, Leak)."""
    for key, balance in ctx.flag_balance.items():
        if balance:
            _, event, event_id = key
            what = ("has no WaitFlag" if balance > 0 else "has no SetFlag")
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


def run_kernel(kernel, block_dim: int, args: tuple, *, soc, gm, name: str | None = None,
               reserve_ub: bool = True, keep_spans: bool = False,
               sync_all: bool = False, checks: CheckerConfig | None = None,
               kernel_type: KernelMetaType | None = None) -> KernelProfile:
    """Run ``kernel(*args)`` on ``block_dim`` blocks and time it.

    Args:
        kernel: a function with the signature of the Ascend C kernel entry (GM addresses
            as ints, then the host's TilingData object).
        block_dim: number of blocks, [1, 65535] (reference/hardware.md §3 launch limits).
        args: the kernel's arguments.
        soc, gm: the SocSpec and GlobalMemory of the device.
        name: the name shown in profiles (default: the function's name).
        reserve_ub: keep the 8 KiB of UB that Ascend C reserves for its library APIs
            (built-in operators compiled without it pass False; reference/hardware.md §1.7).
        keep_spans: keep every instruction's span in ``profile.timing``, and the records and
            kernel source lines in ``profile.records`` / ``profile.lines`` (for traces).
        sync_all: the kernel calls SyncAll: run its blocks as coroutines (greenlets) that
            take turns at each SyncAll (blockDim may then not exceed the SoC's vector
            cores).
        checks: the kernel checker's configuration (:mod:`npusim.ascendc.checker`; default:
            on, every category an error, races tracked on the first and last block).
        kernel_type: a :class:`KernelMetaType` (default: a vector kernel, AIV_ONLY on A2/A3).
            KERNEL_TYPE_AIC_ONLY runs each block on a cube core (L1/L0 buffers, pipes MTE2,
            MTE1, M, FIX; no UB), blockDim counting AICs, and profiles the aic_* pipe times.

    Raises:
        LimitError: block_dim out of range, or a kernel type the SoC cannot launch. Any
        :class:`KernelError` the kernel raises propagates; GM may then hold the partial
        writes of the blocks that ran, as on hardware.
    """
    with _without_cyclic_gc():
        return _launch(kernel, int(block_dim), args, soc, gm, name, reserve_ub, keep_spans,
                       sync_all, checks, _core_kind(soc, kernel_type))


def _launch(kernel, block_dim, args, soc, gm, name, reserve_ub, keep_spans, sync_all,
            checks, kind) -> KernelProfile:
    if not 1 <= block_dim <= soc.max_block_dim:
        raise LimitError("<<<blockDim>>>", f"blockDim {block_dim} is outside [1, "
                         f"{soc.max_block_dim}] (reference/hardware.md §3 launch limits)", core=-1)
    capacity = soc.ub_usable - (soc.ascendc_reserved_ub if reserve_ub else 0)
    config = checks if checks is not None else checker.DEFAULT
    t0 = time.perf_counter()
    cube = kind == _core.AIC
    cores = soc.cube_block_num if cube else soc.vector_block_num
    if sync_all:
        if block_dim > cores:
            raise LimitError("SyncAll", f"blockDim {block_dim} exceeds the {cores} "
                             "cores: SyncAll would deadlock (reference/hardware.md §3)", core=-1)
        ctxs = [_new_context(soc, gm, np.full(soc.ub_size, _core.UB_POISON, np.uint8), b,
                             block_dim, capacity, keep_spans, config, kind)
                for b in range(block_dim)]
        _run_blocks_with_sync_all(kernel, args, ctxs)
        for ctx in ctxs:
            _core.set_current_core(ctx)
            try:
                _end_of_block_checks(ctx)
            finally:
                _core.set_current_core(None)
                _release_block(ctx)
    else:
        ub = np.empty(soc.ub_size, dtype=np.uint8)
        pool: dict = {}              # L1/L0 buffers, reused block after block like the UB
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
    if config.enabled and block_dim > 1:
        clash = checker.gm_write_conflicts([ctx.gm_writes for ctx in ctxs])
        if clash:
            err = GmAccessError("DataCopy", clash, pipe="PIPE_MTE3", core=-1, line="?")
            if "GM" in config.warn:
                ctxs[-1].warn(str(err))
            else:
                raise err
    blocks = [ctx.records for ctx in ctxs]
    warnings = [w for ctx in ctxs for w in ctx.warnings]
    nread = sum(ctx.bytes_read for ctx in ctxs)
    nwritten = sum(ctx.bytes_written for ctx in ctxs)
    t1 = time.perf_counter()
    pipes, names = (AIC_PROFILE_PIPES, MSPROF_AIC_PIPE_NAMES) if cube else (PROFILE_PIPES,
                                                                          MSPROF_PIPE_NAMES)
    timing = simulate(blocks, soc, keep_spans=keep_spans, cores=cores, profile_pipes=pipes)
    t2 = time.perf_counter()
    to_us = 1e6 / soc.freq_hz
    duration = soc.launch_overhead_us + timing.cycles * to_us
    core_busy = {p.name: timing.pipe_busy[p] * to_us for p in pipes}
    pipe_avg = {names[p]: float(v.mean()) for p, v in core_busy.items()}
    bound, pct = _bound(soc, timing.cycles, duration, timing.hbm_bytes, timing.pipe_busy,
                        (Pipe.PIPE_M, "cube") if cube else (Pipe.PIPE_V, "vector"))
    return KernelProfile(name or getattr(kernel, "__name__", "kernel"), soc.soc_version,
                         block_dim, duration, pipe_avg, core_busy, nread, nwritten, bound, pct,
                         timing.hbm_bytes, warnings, host_functional_s=t1 - t0,
                         host_timing_s=t2 - t1, timing=timing,
                         records=blocks if keep_spans else None,
                         lines=[c.trace_lines for c in ctxs] if keep_spans else None)
