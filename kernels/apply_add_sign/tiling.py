"""Host tiling of ApplyAddSign: SoC + element count + dtype -> TilingData.

There is no Ascend C ApplyAddSign to copy (docs/reference/operators.md §3: the Ascend
implementation is the TBE ``ApplyAddSignD``, scheduled by the generic elementwise
``auto_schedule``), so this is the tiling of an ordinary Ascend C elementwise kernel,
in the shape of the official ``AddCustom`` samples [R for every choice below]:

* cores: the tensors are cut in 32 B blocks (``alignNum`` = 8 float or 16 half
  elements), so every core starts on a 32 B boundary of GM. ``blockDim = min(coreNum,
  blocks)``; the first ``formerNum = blocks % blockDim`` cores take ``formerLength`` =
  ``(blocks // blockDim + 1) * alignNum`` elements, the others ``tailLength`` one block
  fewer, and the last core ``lastCoreLength`` = tailLength less the padding of the
  final block.
* UB: CompareScalar works on whole 256 B repeats (asc-devkit ``CompareScalar.md``), so
  the tile length ``tileLength`` is a multiple of ``256 / sizeof(T)`` elements and the
  last, shorter tile of a core is compared over its count rounded up to a repeat. The
  UB holds, per element: the input queue (var, m, grad) and the output queue (var, m),
  each double-buffered, two scratch slots (sign, temp) and a tensor of ones, all of T
  (13 * sizeof(T) B), plus one select-mask bit. Select's tensor/scalar mode needs the
  8 KiB Ascend C UB reserve on A2/A3 (``Select.md``), so the budget is
  ``GetCoreMemSize(UB) - 8 KiB`` and the kernel is launched with the reserve.
* tiles are at most the (repeat-aligned) length of a core's share: small tensors use
  small buffers.
* workspace: the Ascend C system workspace, ``GetLibApiWorkSpaceSize()`` (16 MiB on A2/A3),
  as every Ascend C operator's tiling asks for it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Tiling keys by dtype [R: the operator is ours; 0 float, 1 half].
TILING_KEY = {"float32": 0, "float16": 1}
BUFFER_NUM = 2                 #: double buffering of the input and output queues
IN_SLOTS, OUT_SLOTS = 3, 2     #: var, m, grad in; var, m out
CALC_SLOTS = 2                 #: sign and temp scratch tensors
ONES_SLOTS = 1                 #: the tensor of ones that Select picks from
ONE_REPEAT_BYTE_SIZE = 256
ONE_BLK_SIZE = 32


@dataclass(frozen=True)
class ApplyAddSignTilingData:
    """The operator's TilingData (lengths in elements)."""

    totalLength: int
    formerNum: int
    formerLength: int
    tailLength: int
    lastCoreLength: int
    tileLength: int
    # launch parameters, kept with the tiling as the host hands them to the runtime
    blockDim: int
    workspaceSize: int
    tilingKey: int

    def core_span(self, block_idx: int) -> tuple[int, int]:
        """(first element, element count) of block ``block_idx`` (host-side helper)."""
        if block_idx < self.formerNum:
            return block_idx * self.formerLength, self.formerLength
        offset = self.formerNum * self.formerLength + (block_idx - self.formerNum) * self.tailLength
        length = self.lastCoreLength if block_idx == self.blockDim - 1 else self.tailLength
        return offset, length


def ub_tile_length(ub_size: int, dtype) -> int:
    """Largest tile (elements, a multiple of one 256 B repeat) whose buffers fit ``ub_size``.

    Bytes for a tile of L elements: ``(2*3 + 2*2 + 2 + 1) * L * sizeof(T)`` for the queues,
    scratch and ones, plus ``ceil32(L / 8)`` for the select mask.
    """
    isz = np.dtype(dtype).itemsize
    rep = ONE_REPEAT_BYTE_SIZE // isz
    per_elem = (BUFFER_NUM * (IN_SLOTS + OUT_SLOTS) + CALC_SLOTS + ONES_SLOTS) * isz
    length = int(ub_size * 8 // (per_elem * 8 + 1)) // rep * rep
    while length > 0 and per_elem * length + _align32(length // 8) > ub_size:
        length -= rep
    return length


def _align32(n: int) -> int:
    return -(-int(n) // ONE_BLK_SIZE) * ONE_BLK_SIZE


def tiling(soc, total: int, dtype, *, core_num: int | None = None,
           ub_size: int | None = None) -> ApplyAddSignTilingData:
    """Compute the TilingData for ``total`` elements of ``dtype``.

    Args:
        soc: the SocSpec; ``core_num`` defaults to its AIV count (``vector_block_num``) and
            ``ub_size`` to ``GetCoreMemSize(UB)`` less the 8 KiB Ascend C reserve
            (``soc.ub_usable - soc.ascendc_reserved_ub``, docs/reference/hardware.md §1.7).
        total: elements of var (= of m and grad), >= 0.
        dtype: float32 or float16 (numpy dtype or name).

    Returns:
        The TilingData; ``blockDim`` is 0 for an empty tensor (nothing is launched, no
        workspace).

    Raises:
        KeyError: a dtype other than float32/float16 (the first phase rejects those).
    """
    dtype = np.dtype(dtype)
    key = TILING_KEY[dtype.name]
    core_num = soc.vector_block_num if core_num is None else int(core_num)
    ub_size = soc.ub_usable - soc.ascendc_reserved_ub if ub_size is None else int(ub_size)
    total = int(total)
    align_num = ONE_BLK_SIZE // dtype.itemsize
    rep = ONE_REPEAT_BYTE_SIZE // dtype.itemsize
    blocks = -(-total // align_num)
    if blocks == 0:
        return ApplyAddSignTilingData(0, 0, 0, 0, 0, 0, blockDim=0, workspaceSize=0,
                                      tilingKey=key)
    used = min(core_num, blocks)
    former_num = blocks % used
    tail_length = blocks // used * align_num
    former_length = tail_length + align_num if former_num else 0
    last_core_length = tail_length - (blocks * align_num - total)
    longest = max(former_length, tail_length)
    tile = min(ub_tile_length(ub_size, dtype), -(-longest // rep) * rep)
    return ApplyAddSignTilingData(
        totalLength=total, formerNum=former_num, formerLength=former_length,
        tailLength=tail_length, lastCoreLength=last_core_length, tileLength=tile,
        blockDim=used, workspaceSize=soc.lib_api_workspace_size, tilingKey=key)
