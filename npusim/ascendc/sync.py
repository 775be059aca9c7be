"""Intra-core pipe synchronisation: SetFlag, WaitFlag, PipeBarrier.

Rules (reference/hardware.md §3 "SetFlag/WaitFlag"): SetFlag is issued on the event's
source pipe and sets the flag once all earlier work of that pipe has finished; WaitFlag
blocks the destination pipe until the flag is set, then clears it. eventIDs are 0-7 on
A2/A3 and 0-3 on the first-generation 910. PipeBarrier(pipe) orders the instructions of
one pipe; PipeBarrier(PIPE_ALL) waits until every pipe of the core is idle.
"""
from __future__ import annotations

from npusim.ascendc import core as _core
from npusim.ascendc.types import PIPE_ALL, HardEvent, Pipe
from npusim.ascendc import checker
from npusim.errors import SyncError, kernel_source_line


def _check_event(ctx, instruction: str, event: HardEvent, event_id: int) -> None:
    if not isinstance(event, HardEvent):
        raise SyncError(instruction, f"{event!r} is not a HardEvent")
    n = ctx.soc.max_event_id
    if not 0 <= int(event_id) < n:
        raise SyncError(instruction, f"eventID {event_id} is outside [0, {n - 1}] on "
                        f"{ctx.soc.soc_version} (reference/hardware.md §3)",
                        pipe=event.src.name if instruction == "SetFlag" else event.dst.name)


def SetFlag(event: HardEvent, event_id: int) -> None:
    """``SetFlag<event>(eventID)``: on ``event.src``, set the flag when that pipe is done.

    A second SetFlag of the same event and ID before its WaitFlag is a checker finding
    (undefined on hardware, and a later PipeBarrier hangs; reference/hardware.md §3).
    """
    ctx = _core.current_core()
    _check_event(ctx, "SetFlag", event, event_id)
    key = ("flag", event, int(event_id))
    balance = ctx.flag_balance.get(key, 0)
    if balance > 0:
        checker.report(ctx, SyncError("SetFlag", f"SetFlag<{event.name}>({event_id}) again before "
                                      f"the WaitFlag of the one at {ctx.flag_lines[key]}",
                                      pipe=event.src.name))
    ctx.flag_balance[key] = balance + 1
    ctx.flag_lines[key] = kernel_source_line()
    ctx.record(_core.SET, event.src, 0.0, 0, key, "SetFlag")


def WaitFlag(event: HardEvent, event_id: int) -> None:
    """``WaitFlag<event>(eventID)``: block ``event.dst`` until the flag is set, then clear it."""
    ctx = _core.current_core()
    _check_event(ctx, "WaitFlag", event, event_id)
    key = ("flag", event, int(event_id))
    ctx.flag_balance[key] = ctx.flag_balance.get(key, 0) - 1
    if key not in ctx.flag_lines:
        ctx.flag_lines[key] = kernel_source_line()
    ctx.record(_core.WAIT, event.dst, 0.0, 0, key, "WaitFlag")


def PipeBarrier(pipe: Pipe) -> None:
    """``PipeBarrier<pipe>()``: order the work of ``pipe``; PIPE_ALL drains every pipe."""
    ctx = _core.current_core()
    ctx.record(_core.BARRIER, Pipe(pipe), 0.0, 0, None, "PipeBarrier")


__all__ = ["SetFlag", "WaitFlag", "PipeBarrier", "PIPE_ALL"]
