"""SyncAll: a barrier across every block of the launch (docs/reference/hardware.md §3
"Cross-core synchronisation"; asc-devkit ``docs/zh/api/SIMD-API/基础API/同步控制/核间同步/
SyncAll.md``).

All blocks must reach the same SyncAll before any goes on; GM written before it is visible
to every block after it. On hardware the blocks must all be resident, so blockDim may not
exceed the physical cores (otherwise it deadlocks): the simulator reports that as an error.

The functional model runs blocks one after another, so a vector-only kernel that calls
SyncAll is launched with ``run_kernel(..., sync_all=True)`` (or ``Device.launch(...,
sync_all=True)``): its blocks then run as coroutines that take turns, switching at each
SyncAll. A mixed launch (KERNEL_TYPE_MIX_AIC_1_2, ...) always runs its cores so:
``SyncAll(isAIVOnly=False)`` there waits for every AIC and every AIV of the launch,
``SyncAll()`` (isAIVOnly true, the default) for the AIVs only.
"""
from __future__ import annotations

from npusim.ascendc import core as _core
from npusim.ascendc.types import PIPE_ALL, PIPE_S
from npusim.errors import KernelError

#: Cycles one SyncAll costs once every block has arrived: the hardware version signals
#: through cross-core flags; no figure is published (docs/reference/hardware.md §5) [R].
SYNC_ALL_CYCLES = 1000


def SyncAll(*, isAIVOnly: bool = True) -> None:
    """``SyncAll<isAIVOnly>()``, the hardware version: wait until every block of the launch
    has reached this SyncAll.

    ``isAIVOnly`` (template parameter, default true) synchronises the vector cores only;
    false, for mixed (Cube + Vector) kernels, every AIC and every AIV. Costs
    :data:`SYNC_ALL_CYCLES` on PIPE_S after a PIPE_ALL barrier. Source: SyncAll.md.

    Raises:
        KernelError: a launch that runs its blocks one after another (launch with
            ``sync_all=True``); ``isAIVOnly=False`` in a launch with no cube cores (the
            page: "对于纯Vector算子，模板参数isAIVOnly必须设置为true，否则会导致程序卡死");
            ``isAIVOnly`` true called on a cube core of a mixed launch.
        SyncError (when the launch runs): some block never reaches this SyncAll.
    """
    ctx = _core.current_core()
    if ctx.mix is not None:
        ctx.mix.sync_all(ctx, bool(isAIVOnly))
        return
    if not isAIVOnly and ctx.core_kind == _core.AIV:
        raise KernelError("SyncAll", "SyncAll<isAIVOnly=false> in a vector-only launch waits for "
                          "cube cores that never come: the kernel hangs (SyncAll.md: a pure "
                          "Vector kernel must use isAIVOnly=true)", pipe="PIPE_S")
    if ctx.is_group and ctx.sync_all():
        # every block of the launch in one lockstep group: all arrive here together
        ctx.sync_all_count += 1
        ctx.record(_core.BARRIER, PIPE_ALL, 0.0, 0, ("syncall", ctx.sync_all_count), "SyncAll")
        ctx.record(_core.OP, PIPE_S, SYNC_ALL_CYCLES, 0, None, "SyncAll")
        return
    if ctx.scheduler_wait is None:
        raise KernelError("SyncAll", "this launch runs its blocks one after another: launch a "
                          "kernel that calls SyncAll with sync_all=True", pipe="PIPE_S")
    ctx.sync_all_count += 1
    ctx.record(_core.BARRIER, PIPE_ALL, 0.0, 0, ("syncall", ctx.sync_all_count), "SyncAll")
    ctx.record(_core.OP, PIPE_S, SYNC_ALL_CYCLES, 0, None, "SyncAll")
    n, arrived = ctx.sync_all_count, ctx.sync_all_barrier.arrived
    arrived[n] = arrived.get(n, 0) + 1
    parties = ctx.sync_all_barrier.parties
    # always hand over, even when this block arrives last: the blocks then take turns
    # exactly as before (every block runs to its next SyncAll, in block order)
    ctx.scheduler_wait(lambda: arrived[n] == parties, "SyncAll")


class SyncAllBarrier:
    """The SyncAlls of a launch whose ``parties`` blocks take turns (``sync_all=True``):
    how many blocks reached the n-th one."""

    def __init__(self, parties: int):
        self.parties = parties
        self.arrived: dict = {}
