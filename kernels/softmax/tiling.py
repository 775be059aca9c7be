"""Host tiling of SoftmaxV2 (the l0 kernel of aclnnSoftmax): SoC + shape + dim + dtypes ->
TilingData, blockDim, workspace.

Follows the Ascend C SoftmaxV2 tiling of ``hicann/ops-nn: activation/softmax_v2/op_host/
arch35/`` (``softmax_v2_base_tiling.cpp`` and one file per template). On Atlas A2 the
released SoftmaxV2 is a TBE kernel whose schedule is not published; the Ascend C templates
are the published tiling of this operator, and their arithmetic carries over to A2 with
the A2 vector length (256 B: ``VL_FP32`` 64, ``VL_FP16`` 128 elements) and A2's UB.

**Fused view** (``GetShapeAttrsInfo``): the shape becomes ``[A1, R, A0]`` with R the softmax
axis, A1 the product of the dims before it and A0 of the dims after it; a 0-d tensor is
``[1]``; when ``R == 1`` the view is ``[1, 1, A1*A0]``.

**Templates**, tried in priority order (``TEMPLATE_*_PRIORITY``), the first capable wins:

* ``TILINGKEY_AR`` (AR full load, ``softmax_v2_ar_full_load_tiling.cpp``): ``A0 == 1`` and
  ``R <= 4 * VL_FP32^2`` (16384). Rows split over the cores: ``aBlockFactor =
  ceil(A1 / cores)`` rows each, ``blockDim = ceil(A1 / aBlockFactor)``. A UB tile holds
  ``ubFactor`` whole rows, ``ubFactor = (UB - 1024) / (rAligned*4 + 2*rAligned*sizeof(x)
  + 2*rAligned*sizeof(y) + binaryTmpPerRow)`` capped at ``aBlockFactor``, where ``rAligned``
  is R rounded up to 32 B of x and ``binaryTmpPerRow`` the partial-sum row of the
  published binary reduction (``CeilAlign(FindNearestPower2(ceil(R/64)), 8)`` floats when
  R > 128), after the simulated kernel's half-row fold buffer (``ceil(R/128) * 64``
  floats, see below) is taken off the UB. Not capable when not even one row fits.
* ``TILINGKEY_AR_RECOMPUTE`` (``softmax_v2_ar_recompute_tiling.cpp``): ``A0 == 1``, a row
  longer than UB (the long-row path). Rows split as above; the row is cut in chunks of
  ``ubFactor`` elements, ``ubFactor = min(R, (UB - 2*32 - 64*32) / (3*sizeof(x) +
  2*sizeof(y) + 4))`` rounded down to a multiple of 32 elements (the lcm of the 32 B
  element counts), ``aLoopCount = ceil(R / ubFactor)``, ``ubFactorTail = R - ubFactor *
  floor(R / ubFactor)``. The kernel reads each row three times (max, sum of exp, output),
  as the published kernel does.
* ``TILINGKEY_ARA`` (ARA full load, ``softmax_v2_ara_full_load_tiling.cpp``): the reduced
  axis in the middle, all of R in UB. A0 is cut in tiles of ``tileA0Len = a0Inner *
  a0TileBase`` elements (``a0TileBase`` = VL of x's dtype), ``factorMax = UB /
  ((2*sizeof(x) + 2*4 + 4) * R + 8) / a0TileBase``, ``a0Inner = min(ceil(A1 *
  ceil(A0/a0TileBase) / cores), factorMax, ceil(A0/a0TileBase))``; the ``A1 * a0Outer``
  tiles are split over the cores, ``tilesPerCore = ceil(totalTiles / cores)``.
* ``TILINGKEY_ARA_RECOMPUTE`` (``softmax_v2_ara_recompute_tiling.cpp``): R in chunks of
  ``binAddRFactor = 128`` rows, ``a0TileBase`` = 32 B of x, ``factorMax = UB /
  a0TileBase / (128 * 2 * (4 + sizeof(x)) + 4 * (11 + cacheCount))``, the same A0 split;
  three passes over each tile (max, sum of exp, output).

Where this tiling chooses on its own [R]:

* the UB budget is ``GetCoreMemSize(UB)`` (``soc.ub_usable``, the 8 KiB Ascend C reserve not
  taken: the kernel calls no library API that needs it, and it is launched without it);
* ``ubFactor`` rows (AR) and ARA's R are capped at 4095, the rows one DataCopyPad moves;
* the AR small-R template (``TILINGKEY_AR_SMALL_R``, arch35's TransDataTo5HD path) is not
  modelled: short rows take the AR full-load path;
* the kernel computes in float32 for every input dtype (bf16 must be cast on A2; fp16 is
  cast too, as the published kernels do), so ``yDtype`` is x's dtype and a different
  ``out`` dtype is a separate Cast kernel, as in aclnnSoftmax's l0 chain;
* the reductions fold by halving with level-2 instructions (``ReduceSumHalfIntervalToRepeat``
  of ops-nn's RmsNorm, :mod:`npusim.kernels.common.reduce`) instead of the arch35 register
  folds; AR keeps the row and folds into a half-row buffer taken off the UB first, the
  recompute templates fold their chunks in place, ARA folds its rows into a half-tile
  buffer (which, with the kernel's other buffers, stays inside the published
  ``factorMax`` bytes per column);
* the binary (pairwise) folding of partial sums across UB chunks of the recompute
  templates is replaced by a running float32 sum in UB (its ``cacheCount`` still sizes
  the tiling, as published);
* ``workspaceSize`` is the Ascend C system workspace (``MINIMAL_WORKSPACE``, 16 MiB on
  A2/A3: ``soc.lib_api_workspace_size``), as ``SoftmaxV2TilingBase::GetWorkspaceSize``
  asks.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd, prod

import ml_dtypes
import numpy as np

from npusim.kernels.common.reduce import fold_buffer_elements

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)
#: dtypes the kernel computes (x and y).
KERNEL_DTYPES = (F32, F16, BF16)

BLOCK_SIZE = 32                   #: UB block (GetUbBlockSize)
VREG_SIZE = 256                   #: bytes of one vector repeat on A2/A3 (GetVRegSize)
VL_FP32 = VREG_SIZE // 4          #: 64
VL_FP16 = VREG_SIZE // 2          #: 128
FLOAT32_BYTES = 4
DOUBLE_BUFFER = 2
TRIPLE_BUFFER = 3
#: UB the AR full-load template keeps back (``UB_RESERVED_BYTE``).
UB_RESERVED_BYTE = 1024
#: AR recompute: the max and sum buffers (one 32 B block each) and the binary-add cache.
AR_RECOMPUTE_SCALAR_BUFFER_NUM = 2
AR_RECOMPUTE_CACHE_SLOT_NUM = 64
#: ARA recompute: R rows per chunk and the fp32 rows of its other buffers.
DEFAULT_BIN_ADD_R_FACTOR = 128
UB_COMPUTE_FACTOR = 11
#: DataCopyPad moves at most this many rows per call (docs/reference/hardware.md §3).
MAX_BLOCK_COUNT = 4095

TILINGKEY_AR = 1000
TILINGKEY_AR_RECOMPUTE = 2000
TILINGKEY_ARA = 10000
TILINGKEY_ARA_RECOMPUTE = 20000
TILING_KEY_NAMES = {TILINGKEY_AR: "AR", TILINGKEY_AR_RECOMPUTE: "AR_RECOMPUTE",
                    TILINGKEY_ARA: "ARA", TILINGKEY_ARA_RECOMPUTE: "ARA_RECOMPUTE"}


class TilingError(ValueError):
    """No template can tile the case (``ACLNN_ERR_INNER_TILING_ERROR`` territory)."""


@dataclass(frozen=True)
class SoftmaxTilingData:
    """The SoftmaxV2 TilingData (lengths in elements).

    Common: ``tilingKey`` (one of ``TILINGKEY_*``), the fused ``a1``, ``r``, ``a0``, the
    kernel's ``xDtype`` / ``yDtype``, ``blockDim``, ``workspaceSize`` (bytes).

    AR templates: ``aBlockFactor`` rows per core; AR: ``rAligned`` (R padded to 32 B of
    x), ``ubFactor`` rows per UB tile, ``binaryTmpSize`` (bytes of the per-row partial
    buffer); AR_RECOMPUTE: ``ubFactor`` elements per chunk of a row, ``ubFactorTail``,
    ``aLoopCount`` chunks per row.

    ARA templates: ``tileA0Len`` / ``tileA0Tail`` A0 elements per tile, ``a0Outer`` tiles
    along A0, ``totalTiles = a1 * a0Outer``, ``tilesPerCore``; ``rFactor`` rows of R per
    UB chunk (R itself for ARA) and ``rLoop`` chunks.
    """

    tilingKey: int
    a1: int
    r: int
    a0: int
    xDtype: np.dtype
    yDtype: np.dtype
    blockDim: int
    workspaceSize: int
    rAligned: int = 0
    aBlockFactor: int = 0
    ubFactor: int = 0
    ubFactorTail: int = 0
    aLoopCount: int = 0
    binaryTmpSize: int = 0
    tileA0Len: int = 0
    tileA0Tail: int = 0
    a0Outer: int = 0
    totalTiles: int = 0
    tilesPerCore: int = 0
    rFactor: int = 0
    rLoop: int = 0

    @property
    def mode(self) -> str:
        """The template's name: AR, AR_RECOMPUTE, ARA or ARA_RECOMPUTE."""
        return TILING_KEY_NAMES[self.tilingKey]

    @property
    def tileLength(self) -> int:
        """Elements of x one UB tile holds: ``ubFactor`` rows of ``rAligned`` (AR), one
        chunk of ``ubFactor`` (AR_RECOMPUTE), ``rFactor`` rows of ``tileA0Len`` (ARA)."""
        if self.tilingKey == TILINGKEY_AR:
            return self.ubFactor * self.rAligned
        if self.tilingKey == TILINGKEY_AR_RECOMPUTE:
            return self.ubFactor
        return self.rFactor * self.tileA0Len

    def core_rows(self, block_idx: int) -> tuple[int, int]:
        """AR templates: (first row, row count) of block ``block_idx``."""
        start = block_idx * self.aBlockFactor
        return start, max(0, min(self.aBlockFactor, self.a1 - start))

    def core_tiles(self, block_idx: int) -> tuple[int, int]:
        """ARA templates: (first tile, tile count) of block ``block_idx``."""
        start = block_idx * self.tilesPerCore
        return start, max(0, min(self.tilesPerCore, self.totalTiles - start))


def _ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _ceil_align(a: int, b: int) -> int:
    return _ceil_div(a, b) * int(b)


def find_nearest_power2(value: int) -> int:
    """``FindNearestPower2`` of the published tilings: the largest power of two strictly
    below ``value`` (0 for value <= 1, 1 for 2, 2 for 3 and 4)."""
    value = int(value)
    if value <= 1:
        return 0
    if value <= 2:
        return 1
    if value <= 4:
        return 2
    return 1 << ((value - 1).bit_length() - 1)


def fuse_axes(shape, dim: int) -> tuple[int, int, int]:
    """``[A1, R, A0]`` of ``shape`` reduced along ``dim`` (``GetShapeAttrsInfo``).

    A 0-d shape counts as ``[1]``; ``dim`` may be negative. When ``R == 1`` the result is
    ``(1, 1, A1 * A0)``.

    Raises:
        ValueError: ``dim`` out of ``[-n, n)``.
    """
    shape = tuple(int(d) for d in shape) or (1,)
    n = len(shape)
    if not -n <= int(dim) < n:
        raise ValueError(f"dim {dim} is not in [{-n}, {n})")
    d = int(dim) % n
    a1, r, a0 = prod(shape[:d]), shape[d], prod(shape[d + 1:])
    if r == 1:
        a0, a1 = a1 * a0, 1
    return a1, r, a0


def _budget(soc, ub_size):
    return soc.ub_usable if ub_size is None else int(ub_size)


def _ar_full_load(a1, r, xs, ys, cores, ub):
    if r > 4 * VL_FP32 * VL_FP32:
        return None
    r_aligned = _ceil_align(r, BLOCK_SIZE // xs)
    binary_tmp_per_row = 0
    if r > 2 * VL_FP32:
        fold = find_nearest_power2(_ceil_div(r, VL_FP32))
        binary_tmp_per_row = _ceil_align(fold, BLOCK_SIZE // FLOAT32_BYTES) * FLOAT32_BYTES
    per_row = (r_aligned * FLOAT32_BYTES + DOUBLE_BUFFER * r_aligned * xs
               + DOUBLE_BUFFER * r_aligned * ys + binary_tmp_per_row)
    fold = fold_buffer_elements(r) * FLOAT32_BYTES          # [R] the kernel's half-row fold
    ub_factor = (ub - UB_RESERVED_BYTE - fold) // per_row
    if ub_factor <= 0:
        return None
    a_block = _ceil_div(a1, cores)
    used = _ceil_div(a1, a_block)
    ub_factor = min(ub_factor, a_block, MAX_BLOCK_COUNT)
    return dict(tilingKey=TILINGKEY_AR, blockDim=used, rAligned=r_aligned,
                aBlockFactor=a_block, ubFactor=ub_factor,
                binaryTmpSize=ub_factor * binary_tmp_per_row)


def _ar_recompute(a1, r, xs, ys, cores, ub):
    flexible = ub - AR_RECOMPUTE_SCALAR_BUFFER_NUM * BLOCK_SIZE \
        - AR_RECOMPUTE_CACHE_SLOT_NUM * BLOCK_SIZE
    base = xs * TRIPLE_BUFFER + ys * DOUBLE_BUFFER + FLOAT32_BYTES
    if base > flexible:
        return None
    a_block = _ceil_div(a1, cores)
    used = _ceil_div(a1, a_block)
    lcm32 = BLOCK_SIZE
    for n in (BLOCK_SIZE // xs, BLOCK_SIZE // ys):
        lcm32 = lcm32 * n // gcd(lcm32, n)
    ub_factor = min(r, flexible // base // lcm32 * lcm32)
    if ub_factor <= 0:
        return None
    loops = _ceil_div(r, ub_factor)
    tail = r - ub_factor * (r // ub_factor)
    return dict(tilingKey=TILINGKEY_AR_RECOMPUTE, blockDim=used, aBlockFactor=a_block,
                ubFactor=ub_factor, ubFactorTail=tail, aLoopCount=loops)


def _split_a0(a1, a0, tile_base, factor_max, cores):
    a0_factor_max = _ceil_div(a0, tile_base)
    a0_inner = min(_ceil_div(a1 * a0_factor_max, cores), factor_max, a0_factor_max)
    tile = a0_inner * tile_base
    outer = _ceil_div(a0, tile)
    total = a1 * outer
    per_core = _ceil_div(total, cores)
    return dict(tileA0Len=tile, tileA0Tail=a0 - tile * (outer - 1), a0Outer=outer,
                totalTiles=total, tilesPerCore=per_core, blockDim=_ceil_div(total, per_core))


def _ara_full_load(a1, r, a0, xs, cores, ub):
    tile_base = VL_FP32 if xs == FLOAT32_BYTES else VL_FP16
    factor_max = ub // ((xs * DOUBLE_BUFFER + FLOAT32_BYTES * DOUBLE_BUFFER + FLOAT32_BYTES) * r
                        + FLOAT32_BYTES + FLOAT32_BYTES) // tile_base
    if factor_max <= 0 or r > MAX_BLOCK_COUNT:
        return None
    return dict(tilingKey=TILINGKEY_ARA, rFactor=r, rLoop=1,
                **_split_a0(a1, a0, tile_base, factor_max, cores))


def _ara_recompute(a1, r, a0, xs, cores, ub):
    r_factor = DEFAULT_BIN_ADD_R_FACTOR
    total_loop = _ceil_div(r, r_factor)
    basic = 1 << ((total_loop - 1).bit_length() - 1) if total_loop > 1 else 0
    cache_count = basic.bit_length() if basic else 1
    tile_base = BLOCK_SIZE // xs
    factor_max = ub // tile_base // (r_factor * DOUBLE_BUFFER * (FLOAT32_BYTES + xs)
                                     + FLOAT32_BYTES * (UB_COMPUTE_FACTOR + cache_count))
    if factor_max <= 0:
        return None
    return dict(tilingKey=TILINGKEY_ARA_RECOMPUTE, rFactor=min(r, r_factor), rLoop=total_loop,
                **_split_a0(a1, a0, tile_base, factor_max, cores))


def tiling(soc, shape, dim: int, x_dtype, y_dtype=None, *, core_num: int | None = None,
           ub_size: int | None = None) -> SoftmaxTilingData:
    """The SoftmaxV2 TilingData of a softmax of ``shape`` along ``dim``.

    Args:
        soc: the SocSpec; ``core_num`` defaults to its AIV count (``vector_block_num``),
            ``ub_size`` to ``GetCoreMemSize(UB)`` (``soc.ub_usable``).
        shape: the input's shape (0-8 dims, no zero dim: empty tensors launch nothing).
        dim: the softmax axis, ``[-n, n)``.
        x_dtype, y_dtype: float32, float16 or bfloat16 (y defaults to x).

    Returns:
        The TilingData of the first capable template (see the module docstring).

    Raises:
        ValueError: dim out of range, a dtype the kernel does not compute, an empty shape.
        TilingError: no template fits the UB budget.
    """
    x_dtype = np.dtype(x_dtype)
    y_dtype = x_dtype if y_dtype is None else np.dtype(y_dtype)
    for dt in (x_dtype, y_dtype):
        if dt not in KERNEL_DTYPES:
            raise ValueError(f"SoftmaxV2 computes float32, float16 and bfloat16, not {dt.name}")
    if any(int(d) == 0 for d in shape):
        raise ValueError(f"shape {list(shape)} is empty: nothing to tile")
    a1, r, a0 = fuse_axes(shape, dim)
    cores = soc.vector_block_num if core_num is None else int(core_num)
    ub = _budget(soc, ub_size)
    xs, ys = x_dtype.itemsize, y_dtype.itemsize
    if a0 == 1:
        fields = _ar_full_load(a1, r, xs, ys, cores, ub) or _ar_recompute(a1, r, xs, ys, cores, ub)
    else:
        fields = (_ara_full_load(a1, r, a0, xs, cores, ub)
                  or _ara_recompute(a1, r, a0, xs, cores, ub))
    if fields is None:
        raise TilingError(f"no SoftmaxV2 template fits [A1, R, A0] = [{a1}, {r}, {a0}] "
                          f"{x_dtype.name} in {ub} B of UB")
    return SoftmaxTilingData(a1=a1, r=r, a0=a0, xDtype=x_dtype, yDtype=y_dtype,
                             workspaceSize=soc.lib_api_workspace_size, **fields)
