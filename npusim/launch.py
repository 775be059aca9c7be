"""Running a kernel: functional execution of every block, then the timing replay.

``run_kernel`` is the simulator's ``<<<blockDim>>>`` launch (and what Ascend C's CPU-debug
``ICPU_RUN_KF`` does for real kernels): the kernel function is called once per block with
the core context set, so ``GetBlockIdx()`` and the TPipe/DataCopy/vector calls act on that
block's core. Blocks run one after another on numpy; their instruction records are then
replayed by :func:`npusim.timing.simulate` to give the kernel's time.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from npusim.ascendc import core as _core
from npusim.errors import LimitError
from npusim.timing import PROFILE_PIPES, KernelTiming, simulate

#: msprof op-summary names of the per-pipe times (µs), by pipe.
MSPROF_PIPE_NAMES = {"PIPE_MTE2": "aiv_mte2_time", "PIPE_V": "aiv_vec_time",
                     "PIPE_MTE3": "aiv_mte3_time", "PIPE_S": "aiv_scalar_time"}


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
            aiv_scalar_time) -> busy time of that pipe averaged over the blocks (µs).
        core_pipe_time_us: pipe name -> array of busy µs per block.
        bytes_read, bytes_written: GM traffic of all blocks (bytes).
        bound: what limits the kernel: "HBM bandwidth", "vector", "scalar" or "latency".
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
    warnings: list = field(default_factory=list)
    start_us: float = 0.0
    host_functional_s: float = 0.0
    host_timing_s: float = 0.0
    timing: KernelTiming | None = field(default=None, repr=False)

    @property
    def read_bandwidth(self) -> float:
        """Bytes read per second of Task Duration (B/s)."""
        return self.bytes_read / (self.duration_us * 1e-6) if self.duration_us else 0.0

    @property
    def write_bandwidth(self) -> float:
        """Bytes written per second of Task Duration (B/s)."""
        return self.bytes_written / (self.duration_us * 1e-6) if self.duration_us else 0.0

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
                     f"bound: {self.bound} ({self.bound_percent:.0f}%)")
        return "\n".join(lines)


def _bound(soc, cycles: float, duration_us: float, nbytes: int, busy: dict) -> tuple[str, float]:
    if cycles <= 0:
        return "latency", 0.0
    hbm = nbytes / (duration_us * 1e-6) / soc.hbm_bandwidth if duration_us else 0.0
    vec = float(busy[PROFILE_PIPES[1]].max()) / cycles
    scalar = float(busy[PROFILE_PIPES[3]].max()) / cycles
    name, frac = max((("HBM bandwidth", hbm), ("vector", vec), ("scalar", scalar)),
                     key=lambda kv: kv[1])
    if frac < 0.5:
        return "latency", 100.0 * frac
    return name, 100.0 * frac


def run_kernel(kernel, block_dim: int, args: tuple, *, soc, gm, name: str | None = None,
               reserve_ub: bool = True, keep_spans: bool = False) -> KernelProfile:
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
        keep_spans: keep every pipe's spans in ``profile.timing`` (for traces).

    Raises:
        LimitError: block_dim out of range. Any :class:`KernelError` the kernel raises
        propagates; GM may then hold the partial writes of the blocks that ran, as on
        hardware.
    """
    block_dim = int(block_dim)
    if not 1 <= block_dim <= soc.max_block_dim:
        raise LimitError("<<<blockDim>>>", f"blockDim {block_dim} is outside [1, "
                         f"{soc.max_block_dim}] (reference/hardware.md §3 launch limits)", core=-1)
    capacity = soc.ub_usable - (soc.ascendc_reserved_ub if reserve_ub else 0)
    ub = np.empty(soc.ub_size, dtype=np.uint8)
    blocks, warnings = [], []
    nread = nwritten = 0
    t0 = time.perf_counter()
    try:
        for b in range(block_dim):
            ub.fill(_core.UB_POISON)
            ctx = _core.CoreContext(soc, gm, ub, b, block_dim, capacity)
            _core.set_current_core(ctx)
            kernel(*args)
            blocks.append(ctx.records)
            warnings.extend(ctx.warnings)
            nread += ctx.bytes_read
            nwritten += ctx.bytes_written
    finally:
        _core.set_current_core(None)
    t1 = time.perf_counter()
    timing = simulate(blocks, soc, keep_spans=keep_spans)
    t2 = time.perf_counter()
    to_us = 1e6 / soc.freq_hz
    duration = soc.launch_overhead_us + timing.cycles * to_us
    core_busy = {p.name: timing.pipe_busy[p] * to_us for p in PROFILE_PIPES}
    pipe_avg = {MSPROF_PIPE_NAMES[p]: float(v.mean()) for p, v in core_busy.items()}
    bound, pct = _bound(soc, timing.cycles, duration, nread + nwritten, timing.pipe_busy)
    return KernelProfile(name or getattr(kernel, "__name__", "kernel"), soc.soc_version,
                         block_dim, duration, pipe_avg, core_busy, nread, nwritten, bound, pct,
                         warnings, host_functional_s=t1 - t0, host_timing_s=t2 - t1,
                         timing=timing)
