"""Intra-core pipe synchronisation: SetFlag, WaitFlag, PipeBarrier.

Rules (docs/reference/hardware.md §3 "SetFlag/WaitFlag"): SetFlag is issued on the event's
source pipe and sets the flag once all earlier work of that pipe has finished; WaitFlag
blocks the destination pipe until the flag is set, then clears it. eventIDs are 0-7 on
A2/A3 and 0-3 on the first-generation 910; with a TPipe, 6 and 7 are the framework's and a
kernel's own SetFlag/WaitFlag may not use them. PipeBarrier(pipe) orders the instructions
of one pipe; PipeBarrier(PIPE_ALL) waits until every pipe of the core is idle.

A WaitFlag with no SetFlag of its (HardEvent, eventID) before it in program order (none at
all, or all of them already cleared by earlier WaitFlags) is judged from the public pages:
"SetFlag/WaitFlag必须成对出现" (SetFlag/WaitFlag(ISASI), atlasascendc_api_07_0270, 约束说明)
and "任何wait_flag指令都会等待直到一个具有相同事件ID的set_flag被执行" (set_flag & wait_flag,
cceapi_0106): the wait holds its pipe until a SetFlag of the same event and ID executes,
also one issued later. So

* with a SetFlag of that HardEvent and *another* eventID pending, the IDs of a pair do not
  match: reported at the WaitFlag (Sync);
* when the waiting pipe is PIPE_S (the scalar unit stops issuing and never reaches the
  SetFlag) or is the SetFlag's own pipe (the SetFlag queues behind the WaitFlag in that
  in-order pipe), nothing can release it: a hang on hardware, reported at the WaitFlag
  (Sync);
* otherwise the wait is released by a SetFlag issued later and orders nothing done before
  that SetFlag: the checker notes it, and a race it then finds between the two pipes
  names the WaitFlag, its line, and the eventIDs SetFlag did use; left unpaired, the end of
  the kernel reports it (npusim.launch).
"""
from __future__ import annotations

import contextlib

from npusim.ascendc import core as _core
from npusim.ascendc.types import PIPE_ALL, HardEvent, Pipe
from npusim.ascendc import checker
from npusim.errors import LimitError, SyncError, kernel_source_line


#: The eventID names of Ascend C's samples (``EVENT_ID0`` ... ``EVENT_ID7``: plain
#: eventIDs 0-7; kernel_event.h). The first-generation 910 has 0-3 only.
EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 = range(8)

#: eventIDs the TPipe framework keeps for its own synchronisation on SoCs with 8 IDs
#: (docs/reference/hardware.md §3: "IDs 6 and 7 are reserved; 7 is used by TPipe auto-sync").
RESERVED_EVENT_IDS = (6, 7)
_library_depth = 0


@contextlib.contextmanager
def library_event_ids():
    """Let the code inside use the reserved eventIDs, as Ascend C's own library code does
    (InitOutput's flags); a kernel's own SetFlag/WaitFlag may not."""
    global _library_depth
    _library_depth += 1
    try:
        yield
    finally:
        _library_depth -= 1


def _check_event(ctx, instruction: str, event: HardEvent, event_id: int) -> None:
    if not isinstance(event, HardEvent):
        raise SyncError(instruction, f"{event!r} is not a HardEvent")
    n = ctx.soc.max_event_id
    pipe = event.src.name if instruction == "SetFlag" else event.dst.name
    if not 0 <= int(event_id) < n:
        raise LimitError(instruction, f"eventID {event_id} is outside [0, {n - 1}] on "
                         f"{ctx.soc.soc_version} (docs/reference/hardware.md §3)", pipe=pipe)
    # With a TPipe the framework's queues synchronise on eventIDs of their own: "在基于TPipe和
    # TQue编程场景中，禁止用户在使用SetFlag和WaitFlag时自行指定eventID，容易与框架同步事件冲突，
    # 导致卡死" (SetFlag/WaitFlag(ISASI), 约束说明); 6 and 7 are the ones it keeps.
    if (n == 8 and int(event_id) in RESERVED_EVENT_IDS and ctx.pipe is not None
            and not _library_depth):
        raise SyncError(instruction, f"eventID {event_id} is reserved for the TPipe's own "
                        f"synchronisation on {ctx.soc.soc_version} (IDs 6 and 7; "
                        "docs/reference/hardware.md §3, SetFlag/WaitFlag(ISASI) constraints): take "
                        f"eventIDs from GetTPipePtr().FetchEventID(HardEvent.{event.name}) or "
                        "AllocEventID", pipe=pipe)


def SetFlag(event: HardEvent, event_id: int) -> None:
    """``SetFlag<event>(eventID)``: on ``event.src``, set the flag when that pipe is done.

    A second SetFlag of the same event and ID before its WaitFlag is a checker finding
    (undefined on hardware, and a later PipeBarrier hangs; docs/reference/hardware.md §3).
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
    ctx.flag_sets.setdefault(event, set()).add(int(event_id))
    ctx.flag_lines[key] = kernel_source_line()
    ctx.record(_core.SET, event.src, 0.0, 0, key, "SetFlag")


def unset_wait_text(event: HardEvent, event_id: int, used, line: str) -> str:
    """What is wrong with ``WaitFlag<event>(event_id)`` at ``line`` when no SetFlag of that
    event and ID precedes it (``used``: the eventIDs SetFlag<event> used so far), with the
    fix. Used by WaitFlag, the checker's race reports and the end-of-kernel check."""
    ids = sorted(int(i) for i in used)
    if int(event_id) in ids:
        head = (f"WaitFlag<{event.name}>({event_id}) at {line} comes after every "
                f"SetFlag<{event.name}>({event_id}) so far was cleared by an earlier WaitFlag")
    else:
        head = (f"no SetFlag<{event.name}>({event_id}) comes before "
                f"WaitFlag<{event.name}>({event_id}) at {line}")
    seen = (f"SetFlag<{event.name}> used eventID {', '.join(map(str, ids))} so far" if ids
            else f"no SetFlag<{event.name}> ran before it in this kernel")
    other = (", or wait on the eventID that SetFlag used"
             if ids and int(event_id) not in ids else "")
    return (f"{head} ({seen}); fix: issue SetFlag<{event.name}>({event_id}) on "
            f"{event.src.name} after the work the wait guards and before the WaitFlag{other}: "
            "a pair takes the same HardEvent and eventID "
            "(SetFlag/WaitFlag(ISASI) 约束说明; docs/reference/hardware.md §3)")


def WaitFlag(event: HardEvent, event_id: int) -> None:
    """``WaitFlag<event>(eventID)``: block ``event.dst`` until the flag is set, then clear it.

    Raises (category Sync, unless the checker is configured to warn):
        SyncError: the eventID is out of range or reserved (as SetFlag); no SetFlag of
            ``event`` with this eventID is pending while one with another eventID is
            (mismatched pair); no SetFlag of ``event`` and eventID precedes this wait and
            none can release it (``event.dst`` is PIPE_S or ``event.src``): a hang. The
            rules and their sources: the module docstring.
    """
    ctx = _core.current_core()
    _check_event(ctx, "WaitFlag", event, event_id)
    key = ("flag", event, int(event_id))
    if ctx.flag_balance.get(key, 0) <= 0:
        # no SetFlag of this HardEvent with this eventID is waiting to be paired: with one
        # of another eventID pending, the IDs of a pair do not match (the pipe would wait
        # for a flag nothing sets, and the data it guards is unsynchronised)
        pending = sorted(k[2] for k, b in ctx.flag_balance.items()
                         if b > 0 and k[1] == event and k[2] != int(event_id))
        if pending:
            other = ("flag", event, pending[0])
            checker.report(ctx, SyncError(
                "WaitFlag", f"WaitFlag<{event.name}>({event_id}) waits for eventID {event_id}, "
                f"which no SetFlag<{event.name}> has set; the SetFlag<{event.name}> waiting "
                f"for its WaitFlag used eventID {pending[0]} (at {ctx.flag_lines.get(other)}): "
                "a SetFlag and its WaitFlag take the same HardEvent and eventID "
                "(docs/reference/hardware.md §3)", pipe=event.dst.name))
        else:
            line = kernel_source_line()
            text = unset_wait_text(event, event_id, ctx.flag_sets.get(event, ()), line)
            if event.dst == Pipe.PIPE_S or event.dst == event.src:
                why = ("the scalar unit stops issuing at a PIPE_S wait and never reaches a later "
                       "SetFlag" if event.dst == Pipe.PIPE_S else
                       f"a later SetFlag queues behind this wait in the in-order {event.src.name}")
                checker.report(ctx, SyncError(
                    "WaitFlag", f"{text}. Nothing can release this wait ({why}): a hang on "
                    "hardware (set_flag & wait_flag, cceapi_0106)", pipe=event.dst.name,
                    line=line))
            elif ctx.tracker is not None:
                ctx.tracker.note_unset_wait(event, text)
    ctx.flag_balance[key] = ctx.flag_balance.get(key, 0) - 1
    if key not in ctx.flag_lines:
        ctx.flag_lines[key] = kernel_source_line()
    ctx.record(_core.WAIT, event.dst, 0.0, 0, key, "WaitFlag")


def PipeBarrier(pipe: Pipe) -> None:
    """``PipeBarrier<pipe>()``: order the work of ``pipe``; PIPE_ALL drains every pipe."""
    ctx = _core.current_core()
    ctx.record(_core.BARRIER, Pipe(pipe), 0.0, 0, None, "PipeBarrier")


__all__ = ["SetFlag", "WaitFlag", "PipeBarrier", "PIPE_ALL", "EVENT_ID0", "EVENT_ID1",
           "EVENT_ID2", "EVENT_ID3", "EVENT_ID4", "EVENT_ID5", "EVENT_ID6", "EVENT_ID7"]
