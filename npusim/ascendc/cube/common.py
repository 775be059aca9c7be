"""What the cube instructions share: operand checks, the fractal geometry, the checker's
view of their operands, and their costs.

Fractals (Mmad.md; Load2D.md): a fractal is 512 B — 16 rows of one 32 B block, i.e.
16 x k0 elements with ``k0 = 32 / sizeof(T)`` (16 for half/bf16, 8 for float, 32 for
int8). L0C holds 16 x 16 fractals of float/int32 (1024 B).

Costs (docs/reference/hardware.md §2.1; the heads are ours, [R], in :mod:`npusim.soc`):

* PIPE_MTE1: ``mte1_head_cycles + ceil(bytes / rate)``, rate 256 B/cycle into L0A, 128 into
  L0B (the 2201 documents, not the ini's 512/256), 32 into the bias table.
* PIPE_M: ``mmad_head_cycles + ceil(m/16) * ceil(n/16) * ceil(k/k0) * (k0 / k_per_cycle)``:
  one 16 x 16 output fractal per cycle for each k step of a fractal (half/bf16 16x16x16,
  int8 16x16x32), two cycles per step for float (16x16x4 per cycle with k0 = 8).
* PIPE_FIX (L0C -> L1): ``fixpipe_head_cycles + ceil(elements / 64)``. L0C -> GM is a DMA
  write on PIPE_FIX costed like an MTE3 write (the GM side, 32 B/cycle, is slower than the
  Fixpipe's 128 B/cycle, so the conversion is hidden behind it).
"""
from __future__ import annotations

import numpy as np

from npusim import lockstep as _lockstep
from npusim.ascendc import checker
from npusim.ascendc import core as _core
from npusim.ascendc import datacopy as _dc
from npusim.ascendc.tensor import LocalTensor
from npusim.errors import AlignmentError, KernelError, LimitError

#: Bytes of one fractal in L0A/L0B/L1 (16 rows of 32 B).
FRACTAL_BYTES = 512
#: Rows of a fractal, and the side of an L0C fractal.
BLOCK_CUBE = 16


def k0_of(dtype) -> int:
    """Elements of one fractal row: 32 B / sizeof(T)."""
    return 32 // np.dtype(dtype).itemsize


def ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def require_local(t, mems, instruction: str, role: str, positions: str) -> LocalTensor:
    """``t`` must be a LocalTensor in one of the physical memories ``mems``."""
    if not isinstance(t, LocalTensor) or t.mem not in mems:
        where = t.mem if isinstance(t, LocalTensor) else type(t).__name__
        raise KernelError(instruction, f"{role} must be a LocalTensor in {positions} "
                          f"({'/'.join(sorted(mems))}), not {where}")
    return t


def require_aligned(t: LocalTensor, align: int, instruction: str, role: str, pipe: str,
                    source: str = "通用说明和约束.md, table 2") -> None:
    """AlignmentError unless ``t`` starts ``align``-byte aligned in its memory."""
    if t.offset % align:
        raise AlignmentError(instruction, f"{role} at {t.mem} offset 0x{t.offset:x} is not "
                             f"{align} B aligned ({source})", pipe=pipe)


def check_range(instruction: str, name: str, value, lo: int, hi: int, pipe: str,
                source: str | None = None) -> int:
    """``value`` as an int; LimitError naming the field, its range and ``source`` (the
    instruction's page by default, e.g. ``Mmad.md``) outside [lo, hi]."""
    v = int(value)
    if not lo <= v <= hi:
        raise LimitError(instruction, f"{name} = {v} is outside [{lo}, {hi}] "
                         f"({source or instruction + '.md'}, parameter table)", pipe=pipe)
    return v


def not_modelled(instruction: str, what: str, pipe: str) -> KernelError:
    return KernelError(instruction, f"{what} is not modelled by the simulator; leave it at its "
                       "default", pipe=pipe)


def byte_addr(t, elem_idx: np.ndarray) -> np.ndarray:
    """Absolute byte addresses in ``t``'s memory of the elements at ``elem_idx`` (element
    offsets from ``t``'s start), one row of sizeof(T) bytes per element."""
    isz = t.dtype.itemsize
    return (t.offset + np.asarray(elem_idx, dtype=np.int64)[..., None] * isz
            + np.arange(isz)).reshape(-1)


def stacked(ctx, fetch, *args) -> np.ndarray:
    """``fetch(*args)`` (a LocalTensor's ``elements`` or ``bytes_view``) with a leading axis
    of one entry per member block: a lockstep group's ``[G, ...]`` view of its memories
    (reachable while it is fetched), a plain block's view as ``[1, ...]``. The cube
    instructions work on this axis, so one call moves or multiplies every member's tile and
    a block runs the very same code (:mod:`npusim.lockstep`)."""
    if not ctx.is_group:
        return fetch(*args)[None]
    ctx.batch_ok = True
    try:
        return fetch(*args)
    finally:
        ctx.batch_ok = False


def shadow(ctx, t: LocalTensor):
    """The checker's shadow of ``t``'s memory, or None on an untracked block."""
    tracker = ctx.tracker
    return None if tracker is None else tracker.shadow(t.mem)


def record_op(ctx, pipe, cycles: float, name: str) -> None:
    ctx.record(_core.OP, pipe, float(cycles), 0, None, name)


# -- costs ------------------------------------------------------------------------------------

def mte1_cycles(soc, nbytes: int, dst_mem: str) -> int:
    """One MTE1 instruction moving ``nbytes`` into ``dst_mem`` (L0A, L0B or BT)."""
    if dst_mem == _core.L0A:
        rate = soc.mte1_l0a_rate
    elif dst_mem == _core.L0B:
        rate = soc.mte1_l0b_rate
    elif dst_mem == _core.BT:
        rate = soc.mte1_bt_rate
    else:
        raise KeyError(dst_mem)
    return soc.mte1_head_cycles + ceil_div(nbytes, rate)


def mmad_cycles(soc, m: int, n: int, k: int, dtype) -> int:
    """One Mmad of m x k by k x n with inputs of ``dtype``."""
    k0 = k0_of(dtype)
    steps = ceil_div(m, BLOCK_CUBE) * ceil_div(n, BLOCK_CUBE) * ceil_div(k, k0)
    return soc.mmad_head_cycles + steps * k0 // soc.cube_rate(np.dtype(dtype))


def fixpipe_cycles(soc, elements: int) -> int:
    """One Fixpipe moving ``elements`` from L0C to L1."""
    return soc.fixpipe_head_cycles + ceil_div(elements, soc.fixpipe_elements_per_cycle)


def copy_local_rows(ctx, dst: LocalTensor, src: LocalTensor, rows: int, row: int,
                    src_pitch: int, dst_pitch: int, pipe_id: int, name: str, pipe: str) -> None:
    """Move ``rows`` rows of ``row`` bytes between two core-local buffers (byte pitches
    ``src_pitch``/``dst_pitch``), the checker's byte state carried along on ``pipe_id``
    (L1 -> bias table, L1 -> Fixpipe buffer). The caller records the cost."""
    s_span, d_span = (rows - 1) * src_pitch + row, (rows - 1) * dst_pitch + row
    if ctx.is_group:      # a lockstep group: every member's rows at once, [G, rows, row]
        s_view = _lockstep.ub_rows(stacked(ctx, src.bytes_view, s_span, name, pipe), rows, row,
                                   src_pitch)
        d_view = _lockstep.ub_rows(stacked(ctx, dst.bytes_view, d_span, name, pipe), rows, row,
                                   dst_pitch)
    else:
        s_view = _dc._strided(src.bytes_view(s_span, name, pipe), rows, row, src_pitch)
        d_view = _dc._strided(dst.bytes_view(d_span, name, pipe), rows, row, dst_pitch)
    s_sh, d_sh = shadow(ctx, src), shadow(ctx, dst)
    if s_sh is not None:
        r, b = np.arange(rows)[:, None], np.arange(row)
        checker.copy_state(ctx, pipe_id, s_sh, (src.offset + r * src_pitch + b).reshape(-1),
                           d_sh, (dst.offset + r * dst_pitch + b).reshape(-1), name)
    d_view[...] = s_view.copy()
