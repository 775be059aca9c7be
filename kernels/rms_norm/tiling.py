"""Host tiling of RmsNorm: SoC + shapes + dtypes + epsilon -> TilingData, blockDim, workspace.

Follows ``Tiling4RmsNorm`` of ``hicann/ops-nn: norm/rms_norm/op_host/rms_norm_tiling.cpp``
(the Ascend C RmsNorm of Atlas A2/A3; the kernels are ``op_kernel/rms_norm*.h``):

* ``numCol`` = the element count of gamma (the normalised last dims), ``numRow`` = the
  product of x's other dims, ``avgFactor = 1 / numCol``; ``numColAlign`` = numCol rounded
  up to one 32 B block of x (16 elements for fp16/bf16, 8 for fp32).
* rows over the cores: ``blockFactor = ceil(numRow / coreNum)`` rows per core,
  ``blockDim = ceil(numRow / blockFactor)``, the last core ``lastBlockFactor`` rows.
* the UB budget is ``GetCoreMemSize(UB) - UB_USED`` (1024 B).
* modes (``modeKey`` = the tiling key): ``ubFactor`` starts at ``UB_FACTOR_B16`` (12288)
  or ``UB_FACTOR_B32`` (10240); a row with ``numColAlign > ubFactor`` is ``SPLIT_D`` (the
  long-row path: the row is cut in ``ubFactor`` chunks, ``ubFactor = ceil(numCol /
  (colTileNum * 16)) * 16`` shrunk by 16 while the last chunk would be shorter than 16
  elements); a row of ``numColAlign <= SMALL_REDUCE_NUM`` (2000) on 910B/A3 is ``MERGE_N``
  (many rows per UB tile); otherwise ``NORMAL``. ``rowFactor`` = 64 rows of rstd per
  output batch (``FLOAT_PER_REAPEAT``); ``rowLoop = ceil(blockFactor / rowFactor)``.
* mixed dtypes (x fp16/bf16 with gamma fp32) go through ``CalMixDtypeTiling``: the same
  row split, MERGE_N for short rows on 910B, NORMAL while one row of x, y, gamma and the
  fp32 work buffers fits, SINGLE_ROW while it fits single-buffered, else SPLIT_D with the
  chunk that fits.
* workspace: ``usrSize`` 256 B + the 16 MiB system workspace (``soc.lib_api_workspace_size``).
* ``epsilon < 0`` fails the tiling ("Epsilon less than zero").

Where this tiling chooses on its own [R]:

* the kernel double-buffers the x and y queues (the published kernels use BUFFER_NUM = 1),
  so MERGE_N's ``rowFactor`` is ``ubSize / (numColAlign * bytesPerCol + 260)`` with the
  bytes the simulated kernel allocates per column (:func:`merge_n_bytes_per_col`) instead
  of the published 16;
* a NORMAL / SINGLE_ROW row that does not fit the UB with the double-buffered queues
  (fp32 rows from 8144 columns, below the published 10240) takes SPLIT_D, with the chunk
  that fits (as ``CalMixDtypeTiling``'s SPLIT_D computes it);
* SPLIT_D raises ``colTileNum`` until the double-buffered chunk
  (:func:`split_d_bytes_per_col`) fits the UB (the published chunk assumes single buffers);
* NORMAL and SINGLE_ROW move ``rowsPerTile`` rows per DataCopyPad (as many as fit double-
  buffered, at most ``rowFactor``) instead of one row, so that each transfer is large;
  SINGLE_ROW is then NORMAL with fewer rows;
* every mode computes the rows of a tile one row at a time (the published
  ``ComputeSingleRow`` order: x^2, ReduceSum, the scalar ``1 / sqrt(sum * avgFactor +
  epsilon)``, ``Muls``, ``Mul(gamma)``, Cast), so MERGE_N differs from NORMAL only in
  its tile; the published MERGE_N batch (``ReduceSumMultiN`` + ``BroadCast``) is not
  modelled;
* the 310P branches (``isPerformance``, the Brcb reserve) and the 910 (first-generation)
  branch are not modelled: the operator runs on Atlas A2/A3.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

import ml_dtypes
import numpy as np

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)

MODE_NORMAL = 0
MODE_SPLIT_D = 1
MODE_MERGE_N = 2
MODE_SINGLE_ROW = 3
MODE_NAMES = {MODE_NORMAL: "NORMAL", MODE_SPLIT_D: "SPLIT_D", MODE_MERGE_N: "MERGE_N",
              MODE_SINGLE_ROW: "SINGLE_ROW"}

UB_FACTOR_B16 = 12288
UB_FACTOR_B32 = 10240
BLOCK_ALIGN_NUM = 16
BLOCK_SIZE = 32
UB_USED = 1024
FLOAT_PER_REAPEAT = 64          #: rowFactor: rows of rstd per output batch
SMALL_REDUCE_NUM = 2000
FLOAT_BYTES = 4
B16_BYTES = 2
USR_WORKSPACE = 256
#: Per-row constant of the MERGE_N formula (``numColAlign * 16 + 260``).
MERGE_N_ROW_EXTRA = 260
BUFFER_NUM = 2                  #: the simulated kernel's x and y queues [R]
MAX_BLOCK_COUNT = 4095          #: rows per DataCopyPad (docs/reference/hardware.md §3)


class TilingError(ValueError):
    """The case cannot be tiled (the operator's first phase returns 561002)."""


@dataclass(frozen=True)
class RmsNormTilingData:
    """The RmsNorm TilingData (``RMSNormTilingData`` fields, lengths in elements).

    ``numRow``, ``numCol``, ``numColAlign``; ``blockFactor`` rows per core and
    ``lastBlockFactor`` on the last one; ``rowFactor`` rows of rstd per output batch;
    ``rowsPerTile`` rows per UB tile (NORMAL/SINGLE_ROW/MERGE_N); ``ubFactor`` columns
    per chunk (SPLIT_D; ``rowsPerTile * numColAlign`` otherwise); ``epsilon``,
    ``avgFactor``; ``modeKey`` (= ``tilingKey``), ``xDtype``, ``gammaDtype``; ``blockDim``
    and ``workspaceSize`` (bytes).
    """

    numRow: int
    numCol: int
    numColAlign: int
    blockFactor: int
    lastBlockFactor: int
    rowFactor: int
    rowsPerTile: int
    ubFactor: int
    epsilon: float
    avgFactor: float
    modeKey: int
    xDtype: np.dtype
    gammaDtype: np.dtype
    blockDim: int
    workspaceSize: int

    @property
    def tilingKey(self) -> int:
        return self.modeKey

    @property
    def mode(self) -> str:
        """NORMAL, SPLIT_D, MERGE_N or SINGLE_ROW."""
        return MODE_NAMES[self.modeKey]

    def core_rows(self, block_idx: int) -> tuple[int, int]:
        """(first row, row count) of block ``block_idx``."""
        rows = self.lastBlockFactor if block_idx == self.blockDim - 1 else self.blockFactor
        return block_idx * self.blockFactor, rows


def _ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _align(a: int, b: int) -> int:
    return _ceil_div(a, b) * int(b)


def row_bytes_per_col(x_dtype) -> int:
    """UB bytes per column of one row of a NORMAL/MERGE_N tile in the simulated kernel:
    x and y queues double-buffered (``2 * 2 * sizeof(x)``)."""
    return 2 * BUFFER_NUM * np.dtype(x_dtype).itemsize


def fixed_bytes_per_col(x_dtype) -> int:
    """UB bytes per column the kernel needs once: gamma in fp32, the squares in fp32 and
    (for fp16/bf16 x) the row cast to fp32."""
    return FLOAT_BYTES * (2 if np.dtype(x_dtype) == F32 else 3)


def fixed_bytes(row_factor: int = FLOAT_PER_REAPEAT) -> int:
    """UB bytes independent of the columns: the rstd queue (double-buffered rowFactor
    floats) and two 32 B blocks (the reduction's result and SPLIT_D's running sum)."""
    return BUFFER_NUM * _align(row_factor * FLOAT_BYTES, BLOCK_SIZE) + 2 * BLOCK_SIZE


def merge_n_bytes_per_col(x_dtype) -> int:
    """MERGE_N's bytes per column of a row, in place of the published 16 [R]."""
    return row_bytes_per_col(x_dtype) + fixed_bytes_per_col(x_dtype)


def split_d_bytes_per_col(x_dtype, gamma_dtype) -> int:
    """SPLIT_D's bytes per column of a chunk: x and y double-buffered, gamma double-
    buffered in its dtype, gamma, x and x^2 in fp32."""
    xs, gs = np.dtype(x_dtype).itemsize, np.dtype(gamma_dtype).itemsize
    return 2 * BUFFER_NUM * xs + BUFFER_NUM * gs + 3 * FLOAT_BYTES


def tiling(soc, x_shape, gamma_shape, x_dtype, gamma_dtype, epsilon: float, *,
           core_num: int | None = None, ub_size: int | None = None) -> RmsNormTilingData:
    """The RmsNorm TilingData.

    Args:
        soc: the SocSpec; ``core_num`` defaults to ``GetCoreNumAiv()``
            (``soc.vector_block_num``), ``ub_size`` to ``GetCoreMemSize(UB)``
            (``soc.ub_usable``); UB_USED (1 KiB) is taken off either.
        x_shape, gamma_shape: gamma's shape is the last dims of x's (checked by the first
            phase); no zero dim.
        x_dtype, gamma_dtype: (fp32, fp32), (fp16|bf16, same), (fp16|bf16, fp32).
        epsilon: >= 0.

    Raises:
        TilingError: ``epsilon < 0``, an empty shape, or no chunk fits the UB.
    """
    x_dtype, gamma_dtype = np.dtype(x_dtype), np.dtype(gamma_dtype)
    if float(epsilon) < 0 or np.isnan(epsilon):
        raise TilingError(f"Epsilon less than zero, please check (epsilon = {epsilon})")
    x_shape, gamma_shape = tuple(int(d) for d in x_shape), tuple(int(d) for d in gamma_shape)
    if 0 in x_shape or 0 in gamma_shape:
        raise TilingError(f"empty shapes x {list(x_shape)} / gamma {list(gamma_shape)}")
    core_num = soc.vector_block_num if core_num is None else int(core_num)
    ub = (soc.ub_usable if ub_size is None else int(ub_size)) - UB_USED
    num_col = prod(gamma_shape)
    num_row = prod(x_shape[:len(x_shape) - len(gamma_shape)])
    data_per_block = BLOCK_SIZE // x_dtype.itemsize
    num_col_align = _align(num_col, data_per_block)
    mix = x_dtype != gamma_dtype and gamma_dtype == F32
    is_910b = soc.short_soc_version in ("Ascend910B", "Ascend910_93")

    block_factor = _ceil_div(num_row, core_num)
    used = _ceil_div(num_row, block_factor)
    last = num_row - block_factor * (used - 1)
    row_factor = FLOAT_PER_REAPEAT
    per_col = merge_n_bytes_per_col(x_dtype)
    fixed = fixed_bytes(row_factor)
    limit = UB_FACTOR_B32 if x_dtype == F32 else UB_FACTOR_B16
    if mix:
        # CalMixDtypeTiling: MERGE_N, NORMAL while one row fits, else SINGLE_ROW / SPLIT_D
        num_col_align = _align(num_col, BLOCK_ALIGN_NUM)
        if num_col_align <= SMALL_REDUCE_NUM and is_910b:
            mode = MODE_MERGE_N
        elif num_col_align * per_col + fixed < ub:
            mode = MODE_NORMAL
        elif num_col_align * (per_col - BUFFER_NUM * x_dtype.itemsize) + fixed < ub:
            mode = MODE_SINGLE_ROW
        else:
            mode = MODE_SPLIT_D
    else:
        mode = MODE_SPLIT_D if num_col_align > limit else MODE_NORMAL
        if num_col_align <= SMALL_REDUCE_NUM and is_910b:
            mode = MODE_MERGE_N
    if mode != MODE_SPLIT_D and num_col_align * per_col + fixed > ub:
        mode = MODE_SPLIT_D             # [R] one double-buffered row does not fit
        mix = True                      # the chunk that fits, as CalMixDtypeTiling's SPLIT_D
    if mode == MODE_SPLIT_D:
        chunk = split_d_bytes_per_col(x_dtype, gamma_dtype)
        if mix:
            ub_factor = (ub - fixed) // chunk // BLOCK_ALIGN_NUM * BLOCK_ALIGN_NUM
        else:
            col_tiles = _ceil_div(num_col, limit)
            while True:
                ub_factor = _ceil_div(num_col, col_tiles * BLOCK_ALIGN_NUM) * BLOCK_ALIGN_NUM
                while num_col % ub_factor and num_col % ub_factor < BLOCK_ALIGN_NUM:
                    ub_factor -= BLOCK_ALIGN_NUM
                    if ub_factor <= 0:
                        raise TilingError("Tiling split last dim failed, please check.")
                if ub_factor * chunk + fixed <= ub:
                    break
                col_tiles += 1          # [R] the double-buffered chunk must fit the UB
        if ub_factor <= 0 or ub_factor * chunk + fixed > ub:
            raise TilingError(f"no SPLIT_D chunk of {numcol_msg(num_col)} fits {ub} B of UB")
        rows_per_tile = 1
    else:
        if mode == MODE_MERGE_N:
            rows_per_tile = ub // (num_col_align * per_col + MERGE_N_ROW_EXTRA)
        else:
            rows_per_tile = (ub - fixed - num_col_align * fixed_bytes_per_col(x_dtype)) \
                // (num_col_align * row_bytes_per_col(x_dtype))
        rows_per_tile = min(rows_per_tile, block_factor, MAX_BLOCK_COUNT)
        if mode != MODE_MERGE_N:
            rows_per_tile = min(rows_per_tile, row_factor)
        if rows_per_tile <= 0:
            raise TilingError(f"a row of {numcol_msg(num_col)} does not fit {ub} B of UB")
        ub_factor = rows_per_tile * num_col_align
    if mode == MODE_MERGE_N:
        row_factor = rows_per_tile
    return RmsNormTilingData(
        numRow=num_row, numCol=num_col, numColAlign=num_col_align, blockFactor=block_factor,
        lastBlockFactor=last, rowFactor=row_factor, rowsPerTile=rows_per_tile,
        ubFactor=ub_factor, epsilon=float(np.float32(epsilon)),
        avgFactor=float(np.float32(1.0 / num_col)), modeKey=mode, xDtype=x_dtype,
        gammaDtype=gamma_dtype, blockDim=used,
        workspaceSize=USR_WORKSPACE + soc.lib_api_workspace_size)


def numcol_msg(num_col: int) -> str:
    return f"{num_col} elements"
