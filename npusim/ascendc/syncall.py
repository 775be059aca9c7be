"""SyncAll: a barrier across every block of the launch (reference/hardware.md §3
"Cross-core synchronisation").

All blocks must reach the same SyncAll before any goes on; GM written before it is visible
to every block after it. On hardware the blocks must all be resident, so blockDim may not
exceed the physical cores (otherwise it deadlocks): the simulator reports that as an error.

The functional model runs blocks one after another, so a kernel that calls SyncAll is
launched with ``run_kernel(..., sync_all=True)`` (or ``Device.launch(..., sync_all=True)``):
its blocks then run as coroutines that take turns, switching at each SyncAll.
"""
from __future__ import annotations

from npusim.ascendc import core as _core
from npusim.ascendc.types import PIPE_ALL, PIPE_S
from npusim.errors import KernelError

#: Cycles one SyncAll costs once every block has arrived: the hardware version signals
#: through cross-core flags; no figure is published (reference/hardware.md §5) [R].
SYNC_ALL_CYCLES = 1000


def SyncAll() -> None:
    """Wait until every block of the launch has reached this SyncAll."""
    ctx = _core.current_core()
    if ctx.yield_to_scheduler is None:
        raise KernelError("SyncAll", "this launch runs its blocks one after another: launch a "
                          "kernel that calls SyncAll with sync_all=True", pipe="PIPE_S")
    ctx.sync_all_count += 1
    ctx.record(_core.BARRIER, PIPE_ALL, 0.0, 0, ("syncall", ctx.sync_all_count), "SyncAll")
    ctx.record(_core.OP, PIPE_S, SYNC_ALL_CYCLES, 0, None, "SyncAll")
    ctx.yield_to_scheduler()
