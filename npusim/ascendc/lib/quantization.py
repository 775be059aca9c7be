"""Ascend C's AscendQuant (高阶API "量化反量化"), per-tensor form: int8 = round(x * scale +
offset), built from the vector instructions the library issues, so that its rounding (one
per instruction, in half) and its cost come out of the model.

Source: hiascend.com "AscendQuant" (Ascend C算子开发接口, atlasascendc_api_07_0818, CANN
8.x; supported on Atlas A2/A3 training and inference products) and "AscendQuant Tiling"
(GetAscendQuantMaxMinTmpSize). The page's implementation steps, all on the vector unit:

1. a float ``src`` (and the float ``scale``/``offset``) is converted to half;
2. (per-channel only: a tensor scale/offset is broadcast);
3. ``Muls`` by ``scale`` gives Tmp1;
4. ``Adds`` of ``offset`` gives Tmp2;
5. Tmp2 is converted from half to int8, rounding half to even (四舍六入五成双).

So the result is exactly what the device computes, half rounding included: a float input
that needs more than half's 11 bits, or ``x * scale + offset`` past 65504, goes through
half first. The int8 conversion saturates at [-128, 127] as the vector Cast does.

Not modelled: the per-channel forms (a LocalTensor scale/offset), the int4/fp8/hif8
destinations and ``AscendQuantConfig``'s static sizes beyond being accepted.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import vector as _vec
from npusim.ascendc.lib._common import chunks, shape_size, tmp_buffer, type_size
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.types import ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE, RoundMode
from npusim.errors import DtypeError, KernelError, UbError

__all__ = ["AscendQuant", "AscendQuantConfig", "GetAscendQuantMaxMinTmpSize"]

_F16, _F32, _I8 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int8)
#: AscendQuant Tiling: the minimum is two repeats (2 x 256 B), the maximum two bytes per
#: element (the half intermediate of the whole input), 32 B aligned.
_MIN_TMP = 2 * ONE_REPEAT_BYTE_SIZE


@dataclass(frozen=True)
class AscendQuantConfig:
    """``AscendQuantConfig {calcCount, offsetCount, scaleCount, workLocalSize}``: sizes
    known at compile time (0: given at run time). The per-tensor form's result does not
    depend on them; npusim accepts them and checks ``calcCount`` against the call's."""

    calcCount: int = 0
    offsetCount: int = 0
    scaleCount: int = 0
    workLocalSize: int = 0


def GetAscendQuantMaxMinTmpSize(srcShape, typeSize, isReuseSource=False):
    """``GetAscendQuantMaxMinTmpSize(srcShape, typeSize, isReuseSource, maxValue,
    minValue)`` -> ``(maxValue, minValue)`` in bytes: minValue 512 (two 256 B repeats),
    maxValue max(2 n, 512) rounded up to 32 B, n = the shape's element count (AscendQuant
    Tiling page). ``typeSize`` 2 (half) or 4 (float)."""
    n = shape_size("GetAscendQuantMaxMinTmpSize", srcShape)
    type_size("GetAscendQuantMaxMinTmpSize", typeSize)
    most = -(-max(2 * n, _MIN_TMP) // ONE_BLK_SIZE) * ONE_BLK_SIZE
    return most, _MIN_TMP


def AscendQuant(dstTensor, srcTensor, *args, isReuseSource=False, config=None):
    """``AscendQuant<T, isReuseSource, config>(dst, src[, sharedTmpBuffer], scale, offset
    [, calCount])``: ``dst[i] = int8(round_half_even(half(half(src[i]) * half(scale)) +
    half(offset)))`` for the first calCount elements (default: all of src).

    Args:
        dstTensor: LocalTensor<int8_t> (VECIN/VECCALC/VECOUT).
        srcTensor: LocalTensor<half or float>.
        sharedTmpBuffer: optional LocalTensor<uint8_t> of at least 512 B
            (GetAscendQuantMaxMinTmpSize); without it the 8 KiB Ascend C UB reserve is used.
            The work is split into chunks of (its size / 2) half elements, 32 aligned.
        scale, offset: Python numbers (the C++ ``float``), rounded to half.
        calCount: elements to convert, in [0, src.GetSize()].
    Raises:
        DtypeError: dst not int8, src not half/float, or the tmp buffer not uint8.
        UbError: calCount beyond src or dst; a tmp buffer under 512 B or overlapping src/dst.
        KernelError: a SoC other than Atlas A2/A3, or a tensor scale/offset (per-channel,
            not modelled).
    Cost: the Cast (float input), Muls, Adds and Cast instructions per chunk.
    """
    name = "AscendQuant"
    args = list(args)
    tmp = args.pop(0) if args and isinstance(args[0], LocalTensor) else None
    if len(args) < 2:
        raise TypeError(f"{name}: forms are (dst, src[, sharedTmpBuffer], scale, offset"
                        "[, calCount])")
    scale, offset, *rest = args
    if isinstance(scale, LocalTensor) or isinstance(offset, LocalTensor):
        raise KernelError(name, "the per-channel forms (a LocalTensor scale or offset) are "
                          "not modelled by npusim", pipe="PIPE_V")
    if len(rest) > 1:
        raise TypeError(f"{name}: unexpected arguments {rest[1:]!r}")
    count = int(rest[0]) if rest else srcTensor.GetSize()
    ctx = _core.current_core()
    if ctx.soc.npu_arch != "2201":
        raise KernelError(name, f"AscendQuant on {ctx.soc.soc_version} is not modelled (npusim "
                          "models the Atlas A2/A3 library build)", pipe="PIPE_V")
    if dstTensor.dtype != _I8:
        raise DtypeError(name, f"dstTensor must be int8_t, not {dstTensor.dtype.name}",
                         pipe="PIPE_V")
    if srcTensor.dtype not in (_F16, _F32):
        raise DtypeError(name, f"srcTensor must be half or float, not {srcTensor.dtype.name}",
                         pipe="PIPE_V")
    if count < 0 or count > srcTensor.GetSize() or count > dstTensor.GetSize():
        raise UbError(name, f"calCount {count} exceeds srcTensor ({srcTensor.GetSize()}) or "
                      f"dstTensor ({dstTensor.GetSize()}) elements", pipe="PIPE_V")
    if config is not None and int(getattr(config, "calcCount", 0)) not in (0, count):
        raise KernelError(name, f"AscendQuantConfig.calcCount {config.calcCount} differs from "
                          f"the calCount {count} of the call", pipe="PIPE_V")
    ops = (("srcTensor", srcTensor, count), ("dstTensor", dstTensor, count))
    tmp = tmp_buffer(name, tmp, _MIN_TMP, "GetAscendQuantMaxMinTmpSize", ops)
    work = tmp.ReinterpretCast(_F16)
    split = work.GetSize() // ONE_BLK_SIZE * ONE_BLK_SIZE
    s, o = float(np.float16(scale)), float(np.float16(offset))
    for off, n in chunks(count, split):
        if srcTensor.dtype == _F32:
            _vec.Cast(work, srcTensor[off], RoundMode.CAST_NONE, n)
            _vec.Muls(work, work, s, n)
        else:
            _vec.Muls(work, srcTensor[off], s, n)
        _vec.Adds(work, work, o, n)
        _vec.Cast(dstTensor[off], work, RoundMode.CAST_RINT, n)
