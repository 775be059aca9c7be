"""Atomic accumulation into GM (docs/reference/hardware.md §3 "Atomics").

``SetAtomicAdd<T>()`` makes every later UB -> GM copy (DataCopy, DataCopyPad on PIPE_MTE3)
add its data to GM as ``T`` instead of overwriting it; GM is not zeroed first.
``DisableDmaAtomic()`` (alias ``SetAtomicNone``) restores plain stores. Types on A2/A3:
int8, int16, half, bfloat16, int32, float.

Blocks run one after another in the simulator, so atomic adds from different cores are
applied in block order; on hardware the order of float additions across cores is not
fixed, which is why such operators are non-deterministic.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc.types import PIPE_S
from npusim.errors import DtypeError

_ATOMIC_TYPES = tuple(np.dtype(t) for t in (np.int8, np.int16, np.float16, ml_dtypes.bfloat16,
                                             np.int32, np.float32))


def SetAtomicAdd(dtype) -> None:
    """``SetAtomicAdd<T>()``: later UB -> GM copies accumulate as ``dtype``."""
    ctx = _core.current_core()
    dtype = np.dtype(dtype)
    if dtype not in _ATOMIC_TYPES:
        raise DtypeError("SetAtomicAdd", f"{dtype.name} is not an atomic-add type (int8, int16, "
                         "half, bfloat16, int32, float; docs/reference/hardware.md §3)", pipe="PIPE_S")
    ctx.atomic_dtype = dtype
    ctx.record(_core.OP, PIPE_S, ctx.soc.scalar_cycles, 0, None, "SetAtomicAdd")


def DisableDmaAtomic() -> None:
    """Turn atomic accumulation off again."""
    ctx = _core.current_core()
    ctx.atomic_dtype = None
    ctx.record(_core.OP, PIPE_S, ctx.soc.scalar_cycles, 0, None, "DisableDmaAtomic")


SetAtomicNone = DisableDmaAtomic
