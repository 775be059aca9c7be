"""The AI core that runs one block of a kernel: its unified buffer and its record of
issued instructions.

Kernels run functionally, one block after another, on numpy; each block runs on a
:class:`CoreContext` that owns a UB of the SoC's size. Every Ascend C call appends one
compact record (a tuple) to the context; the timing model (:mod:`npusim.timing`)
replays those records afterwards. A record is
``(kind, pipe, cycles, nbytes, key, name)``:

* kind: one of OP (busy the pipe for ``cycles``), DMA_IN / DMA_OUT (a GM read / write of
  ``nbytes`` on MTE2 / MTE3), SET / WAIT (flag ``key`` on ``pipe``), BARRIER (PipeBarrier).
* name: the Ascend C instruction, for profiles and traces.
"""
from __future__ import annotations

import numpy as np

from npusim.errors import KernelError, kernel_source_line

OP, DMA_IN, DMA_OUT, SET, WAIT, BARRIER = range(6)

#: The mask register after ResetMask: every lane on, as (low word, high word).
FULL_MASK = ((1 << 64) - 1, (1 << 64) - 1)

#: Byte written over fresh UB before each block, so reads of never-written UB look
#: wrong (0xFF bytes are NaN in every float format).
UB_POISON = 0xFF

_current: "CoreContext | None" = None


class CoreContext:
    """State of one block while it runs.

    Args:
        soc: the :class:`npusim.soc.SocSpec` of the device.
        gm: the device's :class:`npusim.gm.GlobalMemory`.
        ub: a uint8 array of ``soc.ub_size`` bytes (reused between blocks).
        block_idx, block_num: what GetBlockIdx/GetBlockNum return.
        ub_capacity: bytes TPipe may hand out (``soc.ub_usable``, less the 8 KiB Ascend C
            reserve unless the kernel is built without it; reference/hardware.md §1.7).
    """

    def __init__(self, soc, gm, ub: np.ndarray, block_idx: int, block_num: int,
                 ub_capacity: int):
        self.soc = soc
        self.gm = gm
        self.ub = ub
        self.block_idx = block_idx
        self.block_num = block_num
        self.ub_capacity = ub_capacity
        self.records: list[tuple] = []
        self.bytes_read = 0
        self.bytes_written = 0
        self.pipe = None          # the TPipe of this block, once constructed
        self.warnings: list[str] = []
        self.atomic_dtype = None  # SetAtomicAdd<T>: UB -> GM copies accumulate as T
        self.sync_all_count = 0   # SyncAll calls so far
        self.yield_to_scheduler = None   # set when the launch runs blocks as threads
        self.trace_lines: list[str] | None = None   # kernel source line per record, if traced
        # the kernel checker (npusim.ascendc.checker)
        self.checker_config = None
        self.tracker = None          # UbTracker on the blocks whose races are tracked
        self.flag_balance: dict = {}  # user flag key -> SetFlag count - WaitFlag count
        self.flag_lines: dict = {}    # user flag key -> line of its last SetFlag
        self.gm_writes: list = []     # plain GM stores: (addr, row bytes, pitch, rows)
        # the vector unit's control registers (npusim.ascendc.repeat)
        self.mask_counter = False     # SetMaskCount / SetMaskNorm
        self.vector_mask = FULL_MASK  # (low word, high word) of the mask register
        self.saturation = False       # SetSaturationFlag

    def record(self, kind: int, pipe: int, cycles: float = 0.0, nbytes: int = 0,
               key=None, name: str = "") -> None:
        self.records.append((kind, pipe, cycles, nbytes, key, name))
        if self.tracker is not None:
            self.tracker.on_record(kind, pipe, key)
        if self.trace_lines is not None:      # tracing: remember the kernel line too
            self.trace_lines.append(kernel_source_line())

    def warn(self, message: str) -> None:
        self.warnings.append(f"core {self.block_idx}: {message}")


def current_core_or_none() -> CoreContext | None:
    return _current


def current_core() -> CoreContext:
    """The core running kernel code now; an error outside a kernel launch."""
    if _current is None:
        raise KernelError("GetBlockIdx", "Ascend C device API called outside a kernel launch",
                          core=None)
    return _current


def set_current_core(ctx: CoreContext | None) -> None:
    global _current
    _current = ctx


def GetBlockIdx() -> int:
    """Index of the block running on this core, in [0, GetBlockNum())."""
    return current_core().block_idx


def GetBlockNum() -> int:
    """blockDim of the launch."""
    return current_core().block_num
