"""The scalar unit's own work: what PIPE_S spends issuing a kernel's instructions.

Every AI core (each AIC and each AIV on A2/A3) has one scalar unit that runs the kernel's
control code and issues every instruction, in program order, to the pipe that executes
it (docs/reference/hardware.md §3 "Pipelines"). msprof reports its busy time as
``aiv_scalar_time`` / ``aic_scalar_time``, and Huawei's tuning guides treat it as a pipe
to optimise: constant tiling exists to cut it ("Matmul高阶API使能Tiling全量常量化",
atlas_ascendc_best_practices_10_10011: "Matmul初始化时的Scalar计算影响指令头开销,
Matmul迭代间的Scalar计算可能阻塞MTE2流水").

What the simulator charges the scalar unit for, where it can see the work (the costs are
SocSpec fields, fitted in docs/calibration.md "Scalar unit"):

* ``scalar_entry_cycles`` once per core, at kernel entry: reading the kernel's arguments
  from GM, the core's set-up and the kernel's own Init arithmetic, before the first
  instruction is issued (it delays every pipe's first instruction);
* ``scalar_issue_cycles`` per instruction issued to another pipe (a vector or cube
  instruction, a DataCopy, SetFlag, WaitFlag, PipeBarrier): its issue, with its share of
  the loop control and branches around it (Python's loops are invisible to the engine);
* ``scalar_queue_cycles`` per TQue AllocTensor / EnQue / DeQue / FreeTensor, for the
  queue's book-keeping on top of the flag it issues;
* ``scalar_gm_offset_cycles`` per GlobalTensor ``operator[]`` (the GM address
  arithmetic), plus ``scalar_gm_hint_cycles`` when the tensor carries an L2 cache hint
  (the address then goes through the cache-mode bits on each use);
* :func:`GET_TILING_DATA`: reading a tiling struct from GM at run time,
  ``scalar_tiling_line_cycles`` per 64 B line of the struct (a scalar load that misses the
  scalar data cache) plus ``scalar_tiling_word_cycles`` per 4-byte field copied. Tiling
  known at compile time (``constexpr`` values, Python constants here) costs nothing;
* GetValue/SetValue (``scalar_cycles`` per UB element, ``GM_SCALAR_ACCESS_CYCLES`` per GM
  element) and the mask/control setters record their own PIPE_S work already.

How it reaches the replay. The issue, queue and address costs are small (a few cycles)
and frequent, so a core sums them (``CoreContext.scalar_debt``) and records the sum as
one PIPE_S instruction where the scalar unit's own timeline matters: before its next
PIPE_S record (a GetValue, a wait on PIPE_S, a tiling read), before a PipeBarrier
(PIPE_ALL) or SyncAll, and at the end of the block (:func:`flush`). The single in-order
issue queue is the replay's issue flag (:func:`npusim.timing._split`): after scalar work,
the next instruction of every other pipe waits until the scalar unit has finished it, so
scalar work that makes the scalar unit fall behind (kernel entry, a tiling read, a
GetValue loop, a wait on PIPE_S) delays the pipes. Between those points the scalar unit
runs ahead of the pipes it feeds: an instruction costs its pipe more cycles (a vector
instruction 22 or more, a DMA a hundred or more) than its issue costs the scalar unit,
so its issue cost cannot delay that pipe and is not given an issue flag of its own.
"""
from __future__ import annotations

import dataclasses

from npusim.ascendc import core as _core
from npusim.ascendc.types import PIPE_S

#: Charge the issue, entry, queue and address work (False: a core records none of it, as
#: before the scalar unit was modelled; for comparisons with records stored then).
CHARGE = True

#: Bytes of one line of the scalar unit's data cache, for a tiling struct read [R: the
#: 2201 scalar data cache's line is not published; 64 B is the common line size].
SCALAR_CACHE_LINE = 64


def debt(ctx, cycles: float) -> None:
    """Add ``cycles`` of scalar work to the core's running sum (recorded by :func:`flush`)."""
    ctx.scalar_debt += cycles


def flush(ctx, name: str = "scalar") -> None:
    """Record the core's summed scalar work as one PIPE_S instruction (nothing if none)."""
    ctx.flush_scalar(name)


def tiling_bytes(tiling) -> int:
    """Bytes of a tiling struct as the host serialises it: 4 per scalar field (uint32 /
    int32 / float, the types TilingData fields take), 4 per element of a sequence or
    array field, nested structs (dataclasses) summed; a numpy array or bytes object its
    own size."""
    if tiling is None:
        return 0
    if isinstance(tiling, (bytes, bytearray, memoryview)):
        return len(tiling)
    nbytes = getattr(tiling, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes
    if dataclasses.is_dataclass(tiling):
        return sum(_field_bytes(getattr(tiling, f.name)) for f in dataclasses.fields(tiling))
    if hasattr(tiling, "__dict__"):
        return sum(_field_bytes(v) for k, v in vars(tiling).items() if not k.startswith("_"))
    return _field_bytes(tiling)


def _field_bytes(value) -> int:
    if dataclasses.is_dataclass(value) or hasattr(value, "nbytes"):
        return tiling_bytes(value)
    if isinstance(value, (list, tuple)):
        return sum(_field_bytes(v) for v in value)
    return 4


def tiling_read_cycles(soc, nbytes: int) -> float:
    """Scalar cycles to copy a ``nbytes`` tiling struct from GM into the kernel's stack
    (GET_TILING_DATA): one missed line per 64 B, one cycle-cost per 4-byte word."""
    if nbytes <= 0:
        return 0.0
    lines = -(-int(nbytes) // SCALAR_CACHE_LINE)
    words = -(-int(nbytes) // 4)
    return lines * soc.scalar_tiling_line_cycles + words * soc.scalar_tiling_word_cycles


def GET_TILING_DATA(tiling):
    """``GET_TILING_DATA(tilingData, tiling)``: read the launch's tiling struct from GM
    (hiascend GET_TILING_DATA, atlasascendc_api_07_0213). Returns ``tiling`` itself (the
    fields a kernel reads afterwards are in the scalar unit's registers or stack); charges
    the scalar unit :func:`tiling_read_cycles` of :func:`tiling_bytes` as one PIPE_S
    instruction, which every pipe's next instruction waits for.

    A kernel whose tiling is a compile-time constant (template arguments, ``constexpr``;
    Python constants here) does not call this and pays nothing for it.

    Raises:
        KernelError: called outside a kernel launch.
    """
    ctx = _core.current_core()
    cycles = tiling_read_cycles(ctx.soc, tiling_bytes(tiling))
    ctx.record(_core.OP, PIPE_S, cycles, 0, None, "GET_TILING_DATA")
    return tiling


__all__ = ["GET_TILING_DATA"]
