"""AI-core image pre-processing (AIPP): SetAippFunctions.

Source: hiascend.com "SetAippFunctions" (Ascend C算子开发接口, atlasascendc_api_07_0240;
supported on Atlas A2/A3 training and inference products). SetAippFunctions sets the AIPP
registers — the source image in GM, its format and the processing (padding, channel swap,
single-line read, data-type conversion, channel padding, colour-space conversion) — that
a later LoadImageToLocal applies while it moves the image into L1. It moves no data and
changes nothing any other copy does (DataCopy ignores it).

npusim keeps the configuration on the core (``ctx.aipp``) and checks the page's address
rules: a YUV420SP source 2 B aligned (both planes), XRGB8888 4 B aligned, RGB888 and
YUV400 any address. LoadImageToLocal, which would use it, is not modelled. The page asks
that T match the format's type (uint8 for the ``*_U8`` formats); since the call only
writes registers and the hardware reads them as bytes, npusim accepts any T.

Cost: one scalar instruction (the register writes; no figure is published).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc.tensor import GlobalTensor
from npusim.ascendc.types import PIPE_S
from npusim.errors import AlignmentError, KernelError

__all__ = ["AippInputFormat", "AippParams", "SetAippFunctions"]


class AippInputFormat(enum.IntEnum):
    """``enum class AippInputFormat : uint8_t`` (the page's values)."""

    YUV420SP_U8 = 0
    XRGB8888_U8 = 1
    RGB888_U8 = 4
    YUV400_U8 = 9


@dataclass(frozen=True)
class AippParams:
    """``AippParams<U>``: the output type U (uint8 — no conversion —, int8 or half) and the
    parameter groups, kept as given (LoadImageToLocal, which reads them, is not modelled)."""

    dtype: Any
    paddingParams: Any = None
    swapParams: Any = None
    singleLineParams: Any = None
    dtcParams: Any = None
    cPaddingParams: Any = None
    cscParams: Any = None

    def __post_init__(self):
        dt = np.dtype(self.dtype)
        if dt not in (np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.float16)):
            raise KernelError("AippParams", f"U = {dt.name}: the output type is uint8, int8 or "
                              "half (SetAippFunctions page)", pipe="PIPE_S")
        object.__setattr__(self, "dtype", dt)


#: Source address alignment per format, in bytes (the page's 约束说明).
_ALIGN = {AippInputFormat.YUV420SP_U8: 2, AippInputFormat.XRGB8888_U8: 4,
          AippInputFormat.RGB888_U8: 1, AippInputFormat.YUV400_U8: 1}


def SetAippFunctions(src0: GlobalTensor, *args) -> None:
    """``SetAippFunctions<T, U>(src0[, src1], format, config)``: configure AIPP for the
    LoadImageToLocal calls that follow (module doc).

    Args:
        src0: the image (YUV420SP: its Y plane) in GM.
        src1: YUV420SP only, the UV plane.
        format: :class:`AippInputFormat` (or its value).
        config: the ``AippParams<U>`` (kept as given).
    Raises:
        KernelError: a format that is not an AippInputFormat, or src1 given for a format
            other than YUV420SP (or missing for it).
        AlignmentError: a source address not aligned as the format requires.
    """
    name = "SetAippFunctions"
    ctx = _core.current_core()
    src1 = args[0] if args and isinstance(args[0], GlobalTensor) else None
    rest = args[1:] if src1 is not None else args
    if len(rest) != 2:
        raise TypeError(f"{name}: forms are (src0, format, config) and (src0, src1, format, "
                        "config)")
    fmt, config = rest
    try:
        fmt = AippInputFormat(int(fmt))
    except ValueError:
        raise KernelError(name, f"format {fmt!r} is not an AippInputFormat "
                          f"({', '.join(f.name for f in AippInputFormat)})", pipe="PIPE_S") from None
    if (src1 is not None) != (fmt is AippInputFormat.YUV420SP_U8):
        raise KernelError(name, "src1 (the UV plane) is given with YUV420SP_U8 and only with it",
                          pipe="PIPE_S")
    align = _ALIGN[fmt]
    for what, g in (("src0", src0), ("src1", src1)):
        if g is not None and int(g.address) % align:
            raise AlignmentError(name, f"{what} at GM 0x{int(g.address):x} is not {align} B "
                                 f"aligned, as {fmt.name} requires", pipe="PIPE_S")
    ctx.aipp = (src0, src1, fmt, config)
    ctx.record(_core.OP, PIPE_S, ctx.soc.scalar_cycles, 0, None, name)
