"""``InitSocState``: the control registers at a kernel's start, as the A2 samples set them.

What it does on A2/A3 (dav 2201; asc-devkit ``AscendCUtils::InitSocStateImpl``): atomic
stores off (SetAtomicNone), the mask in normal mode (SetMaskNorm); on a cube core the
Load3D boundary and padding value 0; on a vector core every mask bit on. Each is one
register write on PIPE_S, one cycle each (docs/reference/hardware.md §2.1 pipe table).
A kernel launched by npusim starts in that state already; the call matters after a
kernel changed the registers.
"""
from __future__ import annotations

from npusim.ascendc import core as _core
from npusim.ascendc.types import PIPE_S

__all__ = ["InitSocState"]


def InitSocState() -> None:
    """``InitSocState()``: reset the control registers (module docstring)."""
    ctx = _core.current_core()
    ctx.atomic_dtype = None
    ctx.mask_counter = False
    writes = 2
    if ctx.core_kind == _core.AIV:
        ctx.vector_mask = _core.FULL_MASK
        writes += 1
    else:
        regs = getattr(ctx, "load3d_regs", None)
        if regs is not None:
            regs.boundary, regs.pad_value = 0, 0
        writes += 2
    ctx.record(_core.OP, PIPE_S, float(writes), 0, None, "InitSocState")
