"""``BilinearInterpolation`` (ISASI) on Atlas A2/A3: weighted sums of gathered 32 B blocks.

What it computes (the API page, atlasascendc_api_07_0222): ``vRepeat`` vertical iterations,
each of ``hRepeat`` horizontal ones. Horizontal iteration ``h`` of vertical ``v`` (``i = v *
hRepeat + h``) takes the eight ``src0`` data blocks whose byte offsets are
``src0Offset[8i : 8i + 8]`` and multiplies them by ``src1[i]`` (``repeatMode`` false: one
weight for the eight blocks) or block ``j`` by ``src1[8i + j]`` (true: one weight a block);
the iterations of a vertical one are summed block by block into one 8-block result, written
to ``dst`` at ``v * vROffset`` elements with ``dstBlkStride`` between its blocks.

How the A2/A3 library computes it, and so how npusim does (asc-devkit
``impl/basic_api/dav_c220/kernel_operator_vec_bilinearinterpolation_impl.h``,
``BilinearInterpolationCalc``; there is no single instruction on this core): with vector
instructions over ``sharedTmpBuffer``, each step rounded to half as those instructions do,

1. ``Gatherb``: the ``hRepeat * vRepeat`` gathered 8-block rows (as uint16) at the buffer's
   start;
2. ``Brcb``: each ``src1`` element broadcast to one 32 B block, after those rows
   (``src1.GetSize() / 8`` repeats: the whole src1 tensor);
3. ``Mul`` in Counter mode over all rows (the ``mask`` argument does not apply here): each
   row times its weight block(s) (src0 stride 0 between blocks and 1 between repeats when
   ``repeatMode`` is false), in place;
4. ``Add``, per vertical iteration, the accumulation idiom: rows 1..hRepeat-1 added in order
   into row 0 (``mask`` applies);
5. ``Adds`` of 0 from each vertical iteration's row 0 into ``dst`` (``mask`` applies;
   ``dstRepStride = vROffset * 2 / 32`` blocks, so a ``vROffset`` that is not whole 32 B
   rounds down, as the page's note on the NPU says).

``PipeBarrier<PIPE_V>`` separates the steps, as in the library. The API's checks
(``kernel_operator_vec_bilinearinterpolation_intf_impl.h``): half only; ``vROffset`` in
[128, 65535]; the temporary buffer at least ``(src0.GetSize() + src1.GetSize()) * 32`` B on
this core (a CPU-debug assertion there; here what the steps touch past the buffer is a
UbError from the step).
"""
from __future__ import annotations

import numpy as np

from npusim.ascendc.gather import Brcb, BrcbRepeatParams, Gatherb, GatherRepeatParams
from npusim.ascendc.repeat import (BinaryRepeatParams, MaskMode, ResetMask, SetMaskCount,
                                   SetMaskNorm, SetVectorMask, UnaryRepeatParams)
from npusim.ascendc.sync import PipeBarrier
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.types import ONE_BLK_SIZE, PIPE_V
from npusim.ascendc.vector import Add, Adds, Mul
from npusim.errors import DtypeError, LimitError

__all__ = ["BilinearInterpolation"]

_BLOCKS = 8                                  # data blocks in one repeat (256 B)


def BilinearInterpolation(dst: LocalTensor, src0: LocalTensor, src0Offset: LocalTensor,
                          src1: LocalTensor, mask, hRepeat: int, repeatMode: bool,
                          dstBlkStride: int, vROffset: int, vRepeat: int,
                          sharedTmpBuffer: LocalTensor) -> None:
    """dst's ``vRepeat`` 8-block rows = sums over ``hRepeat`` gathered, weighted rows of src0.

    Args:
        dst, src0, src1: half LocalTensors (VECIN/VECCALC/VECOUT, 32 B aligned).
        src0Offset: uint32 byte offsets into src0, 8 per iteration (32 B multiples).
        mask: the lanes of the sum and the copy out (a count, or ``[low, high]`` bits).
        hRepeat, vRepeat: iterations (uint8; their product is the gather's repeats).
        repeatMode: False: one src1 weight an iteration; True: one a block.
        dstBlkStride: blocks between a row's blocks in dst. vROffset: elements between
            dst's rows, [128, 65535].
        sharedTmpBuffer: uint8 scratch, ``(src0.GetSize() + src1.GetSize()) * 32`` B.

    Raises:
        DtypeError: an operand not half (src0Offset not uint32: Gatherb's). LimitError:
        vROffset outside [128, 65535], a repeat count out of range. The steps' own errors
        (alignment, bounds, overlap) name the step (module docstring).
    """
    name = "BilinearInterpolation"
    for role, t in (("dst", dst), ("src0", src0), ("src1", src1)):
        if t.dtype != np.float16:
            raise DtypeError(name, f"{role} is {t.dtype.name}: half only (the API page; "
                             "the library asserts it)", pipe="PIPE_V")
    v_off, h, v = int(vROffset), int(hRepeat), int(vRepeat)
    if not 128 <= v_off <= 65535:
        raise LimitError(name, f"vROffset = {v_off} is outside [128, 65535]", pipe="PIPE_V")
    rows = h * v
    per_row = _BLOCKS * ONE_BLK_SIZE // 2            # halves in one 8-block row
    tmp = sharedTmpBuffer.ReinterpretCast(np.float16)
    weights = rows * per_row                         # where the broadcast weights start
    # 1. the gathered rows (Gatherb moves uint16: the same bytes as the halves)
    Gatherb(tmp.ReinterpretCast(np.uint16), src0.ReinterpretCast(np.uint16), src0Offset,
            rows, GatherRepeatParams())
    # 2. one 32 B block per weight, over the whole src1 tensor
    Brcb(tmp[weights], src1, src1.GetSize() // _BLOCKS, BrcbRepeatParams())
    PipeBarrier(PIPE_V)
    # 3. every row times its weight(s), all rows in one Counter-mode call
    mul = BinaryRepeatParams()
    if not repeatMode:
        mul.src0BlkStride, mul.src0RepStride = 0, 1
    SetMaskCount()
    SetVectorMask(0, rows * per_row, dtype=np.float16, mode=MaskMode.COUNTER)
    Mul(tmp, tmp[weights], tmp, mask, rows, mul, isSetMask=False)
    SetMaskNorm()
    ResetMask()
    PipeBarrier(PIPE_V)
    # 4. each vertical iteration's rows summed, in order, into its first row
    acc = BinaryRepeatParams()
    acc.dstRepStride, acc.src1RepStride = 0, 0
    if h > 1:
        for i in range(v):
            first = tmp[i * h * per_row]
            Add(first, tmp[(i * h + 1) * per_row], first, mask, h - 1, acc)
    PipeBarrier(PIPE_V)
    # 5. the sums into dst, one row per vertical iteration
    out = UnaryRepeatParams()
    out.srcRepStride = h * _BLOCKS
    out.dstBlkStride = int(dstBlkStride)
    out.dstRepStride = v_off * 2 // ONE_BLK_SIZE
    Adds(dst, tmp, np.float16(0), mask, v, out)
