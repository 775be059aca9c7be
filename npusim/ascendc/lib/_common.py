"""What the high-level APIs share: their temporary buffer (a ``sharedTmpBuffer`` or the
8 KiB Ascend C UB reserve), the chunks they split the work into, and the checks of their
host functions' arguments."""
from __future__ import annotations

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.types import TPosition
from npusim.errors import DtypeError, UbError

_U8 = np.dtype(np.uint8)


def stack_buffer(name: str) -> LocalTensor:
    """The framework-allocated temporary space: the 8 KiB Ascend C UB reserve (PopStackBuffer
    of TPosition::LCM), which follows the TPipe buffers in UB."""
    ctx = _core.current_core()
    reserve = ctx.soc.ascendc_reserved_ub
    if ctx.ub_capacity > ctx.soc.ub_usable - reserve:
        raise UbError(name, f"called without sharedTmpBuffer, {name} takes its temporary space "
                      f"from the {reserve} B UB that Ascend C reserves, but this kernel was "
                      "built without the reserve (docs/reference/hardware.md §1.7); pass a "
                      "sharedTmpBuffer", pipe="PIPE_V")
    start = ctx.ub_capacity
    return LocalTensor(ctx, _U8, start, reserve, start + reserve, TPosition.VECCALC)


def tmp_buffer(name: str, tmp: LocalTensor | None, min_bytes: int, getter: str,
         operands=()) -> LocalTensor | None:
    """Resolve and check the temporary buffer; None when the API needs none (min 0 and
    none given)."""
    if tmp is None:
        if min_bytes == 0:
            return None
        tmp = stack_buffer(name)
    if tmp.dtype != _U8:
        raise DtypeError(name, f"sharedTmpBuffer must be LocalTensor<uint8_t>, not "
                         f"{tmp.dtype.name}", pipe="PIPE_V")
    nbytes = tmp.GetSize()
    if nbytes < min_bytes:
        raise UbError(name, f"sharedTmpBuffer holds {nbytes} B, less than the minimum "
                      f"{min_bytes} B that {getter} gives for this type (the temporary space "
                      "may not be smaller than minValue)", pipe="PIPE_V")
    lo, hi = tmp.offset, tmp.offset + nbytes
    for what, t, n in operands:
        if n and t.offset < hi and lo < t.offset + n * t.dtype.itemsize:
            raise UbError(name, f"sharedTmpBuffer [{lo}, {hi}) overlaps {what} (not supported "
                          "by the API)", pipe="PIPE_V")
    return tmp


def chunks(count: int, size: int):
    """(offset, length) of the library's main blocks of ``size`` and its tail block."""
    for off in range(0, count, size):
        yield off, min(size, count - off)


def shape_size(name: str, srcShape) -> int:
    dims = srcShape.GetDims() if hasattr(srcShape, "GetDims") else srcShape
    n = int(np.prod([int(d) for d in dims])) if len(dims) else 0
    if n <= 0:
        raise ValueError(f"{name}: the input shape size must be greater than 0 (got {list(dims)})")
    return n


def type_size(name: str, typeSize) -> int:
    if int(typeSize) not in (2, 4):
        raise ValueError(f"{name}: typeSize {typeSize} is not supported (half: 2, float: 4)")
    return int(typeSize)
