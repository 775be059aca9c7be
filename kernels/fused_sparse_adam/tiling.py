"""Host tiling of FusedSparseAdam on the simulated Atlas A2/A3.

The operator (docs/reference/operators.md §4) is MindSpore's CPU kernel
(``sparse_apply_adam_cpu_kernel.cc``); there is no device version in the public sources,
so this tiling is ours [R]:

* the indices are sorted on the device with their positions by the shared Sort kernel
  (:mod:`npusim.kernels.common.sorted_index`);
* the rows of ``var`` (first dimension, ``varRows``; ``rowSize`` elements per row) are split
  over the cores: the first ``formerRowRepTime`` cores take ``formerRowNum`` rows, the others
  ``tailRowNum``; ``blockDim = min(vector cores, varRows)``;
* a core moves its rows in tiles of ``tileRows`` rows and ``colChunk`` columns; UB holds
  five tiles of ``tileRows x rowAlign`` fp32 (var, m, v, a scratch tile and the update's
  numerator, which is m_t with useNesterov), two rows (the summed gradient and one grad
  row) and two windows of 1024 sorted entries; ``rowAlign`` is ``colChunk`` rounded up to
  8 (32 B);
* the scalars are not TilingData: they are one-element float32 device tensors (the aclnn
  scalar-input convention), read by the kernel as the CPU kernel reads them
  (``reinterpret_cast<float*>``), and the step size
  ``lr * sqrt(1 - beta2Power) / (1 - beta1Power)`` is computed by the kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

SYS_WORKSPACE_SIZE = 16 * 1024 * 1024
#: DataCopyPad blockCount limit (docs/reference/hardware.md §3).
MAX_BLOCK_COUNT = 4095


@dataclass(frozen=True)
class FusedSparseAdamTilingData:
    """The kernel's TilingData (counts in rows / elements)."""

    varRows: int
    rowSize: int
    indicesNum: int
    formerRowNum: int
    formerRowRepTime: int
    tailRowNum: int
    colChunk: int
    rowAlign: int
    tileRows: int
    useNesterov: bool
    blockDim: int
    workspaceSize: int


def tiling(soc, var_rows: int, row_size: int, indices_num: int, *, use_nesterov: bool = False,
           core_num: int | None = None) -> FusedSparseAdamTilingData:
    """Tiling for ``var`` of ``var_rows x row_size`` fp32 and ``indices_num`` indices.

    The UB budget is ``soc.ub_usable`` less the 8 KiB Ascend C reserve. ``blockDim`` is 0
    when var is empty.
    """
    core = soc.vector_block_num if core_num is None else int(core_num)
    rows, E = int(var_rows), int(row_size)
    block = min(core, rows) if rows and E else 0
    tail = rows // block if block else 0
    rep = rows % block if block else 0
    budget = (soc.ub_usable - soc.ascendc_reserved_ub - 2 * 4096) // 4   # fp32 elements
    tiles = 5                           # var, m, v, scratch, numerator (m_t)
    align = lambda n: -(-n // 8) * 8                                    # noqa: E731
    col = E
    if (tiles + 2) * align(max(E, 1)) > budget:
        col = budget // (tiles + 2) // 8 * 8
    wp = align(max(col, 1))
    per_core = tail + (1 if rep else 0)
    tile_rows = max(1, min(MAX_BLOCK_COUNT, (budget - 2 * wp) // (tiles * wp), max(per_core, 1)))
    return FusedSparseAdamTilingData(
        varRows=rows, rowSize=E, indicesNum=int(indices_num), formerRowNum=tail + 1,
        formerRowRepTime=rep, tailRowNum=tail, colChunk=col, rowAlign=wp, tileRows=tile_rows,
        useNesterov=bool(use_nesterov), blockDim=block, workspaceSize=SYS_WORKSPACE_SIZE)
