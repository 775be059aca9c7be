"""Host tiling of MatMulV3 / BatchMatMulV3 (the l0 kernels of aclnnMatmul, aclnnMm and
aclnnBatchMatMul): SoC + shapes + dtypes -> TilingData, blockDim, workspace.

The kernel (:mod:`npusim.kernels.matmul.kernel`) is a *basic-block* matmul, the shape of ops-nn's
MatMulV3 basic template on Atlas A2: the output ``C`` (``batch x M x N``) is cut into base
blocks of ``baseM x baseN``; block ``t`` (batch-major, then M, then N) is computed by AIC
``t % usedCoreNum`` — round after round every core takes one base block, so neighbouring
cores share A's rows (and the L2 keeps B's columns) — with K streamed through L1 in chunks
of ``stepKa * baseK`` (A) and ``stepKb * baseK`` (B), double-buffered, and through L0A/L0B in
steps of ``baseK``, double-buffered; one Mmad per step accumulates into L0C, one Fixpipe
per base block writes C.

The tiling is a ``TCubeTiling`` (the struct of the Ascend C Matmul API, hiascend
"TCubeTiling结构体" atlasascendc_api_07_0673) computed by the Ascend C tiling API
``MultiCoreMatmulTiling`` (:mod:`npusim.ascendc.lib.matmul_tiling`: ``SetDim``,
``SetAType``/``SetBType``/``SetCType``, ``SetOrgShape``, ``SetShape``, ``SetSingleShape``,
``SetFixSplit``, ``SetBufferSpace``, ``GetTiling``) for one base block per core
(``singleCoreM = baseM``, ``singleCoreN = baseN``, ``singleCoreK = K``) with the base block
fixed below; ``GetTiling`` checks it against L0A/L0B/L0C/L1 and fills the L0 double
buffers (``dbL0A``/``dbL0B``/``dbL0C``). Two fields are then set by this tiling [R]:
``usedCoreNum`` (the basic-block kernel deals the blocks of every batch over the cores, so
it is ``min(cores, blocks)``, not the per-matrix ``mDim * nDim``), and the L1 depths: the
library's GetTiling takes the largest ``stepKa = stepKb`` that fits L1 even single-buffered
(K "全载" first), while this kernel streams K through two L1 buffers (MatMulV3's double
buffer), so ``stepKa = stepKb = STEP_K`` and ``depthA1 = depthB1 = 2 * STEP_K``.

Published rules followed (docs/reference/hardware.md §1.6, §1.7, §2.1; Mmad.md, Load2D.md):

* a base block's L0C tile (``baseM * baseN`` float/int32) fits L0C (128 KiB on A2/A3); two
  when ``dbL0C = 2``; L0A holds two ``baseM x baseK`` and L0B two ``baseK x baseN`` steps
  (64 KiB each), L1 two A chunks and two B chunks (``GetCoreMemSize(L1)`` = 524032 B);
* ``baseM``, ``baseN`` multiples of 16 (the fractal), ``baseK`` a multiple of the fractal's
  k0 (16 for half/bf16, 8 for float); Mmad's m, n, k at most 4095; LoadData's repeat at
  most 255;
* the Ascend C system workspace (16 MiB on A2/A3, ``GetLibApiWorkSpaceSize``) is the
  kernel's workspace ("A2 must set the system workspace", §3 Workspace).

Where the tiling chooses on its own [R] (MatMulV3's A2 base-block tables are not in the
published sources this project follows):

* ``baseK = 128 B / sizeof(T)`` (64 half/bf16, 32 float; K rounded up to 16 when shorter):
  one Mmad then takes 4 k fractals, which keeps the Mmad head (``mmad_head_cycles``) near
  4 % of a step; a multiple of 16 for float too, as LoadDataWithTranspose's squares need;
* the largest (then squarest) base block whose L0C tile fits the L0C budget, with
  ``baseM >= baseN`` (256 x 128 at 128 KiB: the A side of MTE1 moves 256 B/cycle into L0A,
  the B side 128 into L0B, so the longer side goes to A), cut down to the shape
  (16-aligned), then halved (the longer side first, not below 64) while there are fewer
  base blocks than AICs;
* ``stepKa = stepKb = 4`` (an L1 chunk is 512 B of k per row: transfers of 64-128 KiB);
* (GetTiling's) ``dbL0C = 2`` when two L0C tiles fit; else the Fixpipe of a block and the
  first Mmad of the next one do not overlap.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

import ml_dtypes
import numpy as np

from npusim.ascendc.lib.matmul_tiling import (CubeFormat, MultiCoreMatmulTiling, TCubeTiling,
                                              TPosition)

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)
#: dtypes the cube kernel takes (A and B) and writes (C).
INPUT_DTYPES = (F16, BF16, F32)
OUTPUT_DTYPES = (F16, BF16, F32)

BLOCK_CUBE = 16                 #: rows of a fractal, side of an L0C fractal
FRACTAL_K_BYTES = 32            #: bytes of one fractal row (k0 * sizeof(T))
BASE_K_BYTES = 128              #: [R] bytes of k per base step (4 fractals)
STEP_K = 4                      #: [R] base steps per L1 chunk
MIN_SPLIT_BASE = 64             #: [R] a base side is not halved below this for more cores
MAX_MMAD_SIZE = 4095            #: Mmad m / n / k
#: base sides the tiling picks from (powers of two, fractal multiples)
_SIDES = (256, 128, 64, 32, 16)

OP_TYPE = "MatMulV3"
BATCH_OP_TYPE = "BatchMatMulV3"


class TilingError(ValueError):
    """No base block fits the budgets (``ACLNN_ERR_INNER_TILING_ERROR`` territory)."""


@dataclass(frozen=True)
class MatmulTilingData:
    """The MatMulV3 TilingData: ``matmulTiling`` (TCubeTiling) and the operator's fields.

    Attributes:
        matmulTiling: the TCubeTiling (:class:`npusim.ascendc.lib.matmul_tiling.TCubeTiling`;
            the kernel reads usedCoreNum, M, N, Ka, Kb, baseM/N/K, stepKa, depthA1,
            dbL0A/B/C).
        aDtype: the dtype of A and B as the kernel reads them (half, bfloat16 or float).
        cDtype: the dtype the kernel writes (the Fixpipe conversion: float -> half/bf16, or
            float kept: half/bf16 in, float out is the Fp162Fp32 kernel).
        transposeA, transposeB: A is stored as ``K x M`` / B as ``N x K`` (row-major).
        batchShape: the output's batch dims (``()`` for a plain matmul).
        aBatchStrides, bBatchStrides: elements between consecutive matrices of A / B along
            each batch dim (0: that dim is broadcast).
        blockDim: AICs launched (``usedCoreNum``); workspaceSize: bytes.
    """

    matmulTiling: TCubeTiling
    aDtype: np.dtype
    cDtype: np.dtype
    transposeA: bool
    transposeB: bool
    batchShape: tuple
    aBatchStrides: tuple
    bBatchStrides: tuple
    blockDim: int
    workspaceSize: int
    opType: str = OP_TYPE

    @property
    def mCnt(self) -> int:
        """Base blocks along M."""
        return _ceil_div(self.matmulTiling.M, self.matmulTiling.baseM)

    @property
    def nCnt(self) -> int:
        """Base blocks along N."""
        return _ceil_div(self.matmulTiling.N, self.matmulTiling.baseN)

    @property
    def batchNum(self) -> int:
        return prod(self.batchShape)

    @property
    def totalTiles(self) -> int:
        """Base blocks of the whole output (``batch * mCnt * nCnt``)."""
        return self.batchNum * self.mCnt * self.nCnt

    @property
    def baseMN(self) -> int:
        """Elements of one base block of C (``baseM * baseN``): the tile length tile sweeps
        vary (through the L0C budget)."""
        return self.matmulTiling.baseM * self.matmulTiling.baseN

    @property
    def flops(self) -> int:
        """Floating-point operations of the product: ``2 * batch * M * N * K``."""
        t = self.matmulTiling
        return 2 * self.batchNum * t.M * t.N * t.Ka

    def tiles(self, block_idx: int) -> range:
        """The base blocks (flat indices) block ``block_idx`` computes, in order."""
        return range(block_idx, self.totalTiles, self.matmulTiling.usedCoreNum)

    def tile_origin(self, tile: int) -> tuple[int, int, int]:
        """(batch index, first row, first column) of base block ``tile``."""
        t = self.matmulTiling
        b, rest = divmod(tile, self.mCnt * self.nCnt)
        mi, ni = divmod(rest, self.nCnt)
        return b, mi * t.baseM, ni * t.baseN

    def batch_offsets(self, batch: int) -> tuple[int, int]:
        """Element offsets of A's and B's matrices for output batch ``batch``."""
        a = b = 0
        for dim, sa, sb in zip(reversed(self.batchShape), reversed(self.aBatchStrides),
                               reversed(self.bBatchStrides)):
            batch, i = divmod(batch, dim)
            a += i * sa
            b += i * sb
        return a, b


def _ceil_div(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _align(a: int, b: int) -> int:
    return _ceil_div(a, b) * int(b)


def contiguous_batch_strides(batch_shape, rows: int, cols: int) -> tuple:
    """Strides (elements) of a contiguous ``batch_shape + (rows, cols)`` tensor's batch dims,
    0 where a dim is 1 (so that it broadcasts)."""
    strides, step = [], rows * cols
    for d in reversed(tuple(batch_shape)):
        strides.append(step if d != 1 else 0)
        step *= d
    return tuple(reversed(strides))


def _base_block(m: int, n: int, tiles_per_base, cores: int, l0c: int) -> tuple[int, int]:
    """(baseM, baseN): the largest pair of :data:`_SIDES` whose float L0C tile fits ``l0c``
    bytes (the squarest of equal ones), baseM >= baseN, cut to the shape, halved while the
    blocks are fewer than the cores (module docstring [R])."""
    best = None
    for bm in _SIDES:
        for bn in _SIDES:
            if bn > bm or bm * bn * 4 > l0c:
                continue
            if best is None or (bm * bn, bn - bm) > (best[0] * best[1], best[1] - best[0]):
                best = (bm, bn)                       # the largest; then the squarest
    if best is None:
        raise TilingError(f"no base block fits {l0c} B of L0C (at least 16 x 16 x 4 = 1024 B)")
    bm, bn = min(best[0], _align(m, BLOCK_CUBE)), min(best[1], _align(n, BLOCK_CUBE))
    while tiles_per_base(bm, bn) < cores and max(bm, bn) > MIN_SPLIT_BASE:
        if bm >= bn:
            bm = _align(bm // 2, BLOCK_CUBE)
        else:
            bn = _align(bn // 2, BLOCK_CUBE)
    return bm, bn


def tiling(soc, m: int, n: int, k: int, a_dtype, c_dtype=None, *, transpose_a: bool = False,
           transpose_b: bool = False, batch_shape=(), a_batch_strides=None,
           b_batch_strides=None, core_num: int | None = None,
           l0c_size: int | None = None) -> MatmulTilingData:
    """The MatMulV3 / BatchMatMulV3 TilingData of ``C = A @ B``.

    Args:
        soc: the SocSpec; ``core_num`` defaults to its AIC count (``cube_block_num``),
            ``l0c_size`` (the L0C budget of a base block, bytes; tile sweeps vary it) to
            the whole L0C.
        m, n, k: C is ``m x n``, the reduction is ``k`` long (all >= 1).
        a_dtype: A's and B's dtype (float16, bfloat16, float32).
        c_dtype: C's dtype (default: a_dtype); float32 C from half/bf16 A is the Fp162Fp32
            kernel (no rounding at Fixpipe).
        transpose_a, transpose_b: A stored ``k x m`` / B stored ``n x k``.
        batch_shape: the output's batch dims; a_batch_strides, b_batch_strides: elements
            per step of each (default contiguous, 0 for dims of 1: broadcast).

    Returns:
        The TilingData (module docstring).

    Raises:
        ValueError: a dtype the kernel does not take, or m, n or k below 1.
        TilingError: no base block fits the budgets.
    """
    a_dtype = np.dtype(a_dtype)
    c_dtype = a_dtype if c_dtype is None else np.dtype(c_dtype)
    if a_dtype not in INPUT_DTYPES or soc.cube_rate(a_dtype) is None:
        raise ValueError(f"the cube kernel takes {', '.join(d.name for d in INPUT_DTYPES)} "
                         f"on A2/A3, not {a_dtype.name} on {soc.soc_version}")
    if c_dtype not in OUTPUT_DTYPES or (c_dtype != a_dtype and c_dtype != F32):
        raise ValueError(f"the kernel writes {a_dtype.name} or float32 for {a_dtype.name} "
                         f"inputs, not {c_dtype.name}")
    if min(m, n, k) < 1:
        raise ValueError(f"m, n, k = {m}, {n}, {k}: each must be at least 1 (an empty "
                         "product launches nothing)")
    batch_shape = tuple(int(d) for d in batch_shape)
    batch = prod(batch_shape)
    if a_batch_strides is None:
        a_batch_strides = contiguous_batch_strides(batch_shape, m, k)
    if b_batch_strides is None:
        b_batch_strides = contiguous_batch_strides(batch_shape, k, n)
    cores = soc.cube_block_num if core_num is None else int(core_num)
    l0c = soc.l0_c_size if l0c_size is None else int(l0c_size)
    isz = a_dtype.itemsize
    base_k = min(BASE_K_BYTES // isz, _align(k, BLOCK_CUBE))
    base_m, base_n = _base_block(
        m, n, lambda bm, bn: batch * _ceil_div(m, bm) * _ceil_div(n, bn), cores, l0c)
    # L0A / L0B double buffers and the L1 chunks (module docstring)
    if 2 * base_m * base_k * isz > soc.l0_a_size or 2 * base_k * base_n * isz > soc.l0_b_size:
        raise TilingError(f"base block {base_m} x {base_n} x {base_k} does not fit L0A/L0B twice")
    step_k = max(1, min(STEP_K, _ceil_div(k, base_k)))
    if 2 * (base_m + base_n) * step_k * base_k * isz > soc.l1_usable:
        raise TilingError("the double-buffered L1 chunks do not fit GetCoreMemSize(L1)")
    total = batch * _ceil_div(m, base_m) * _ceil_div(n, base_n)
    used = max(1, min(cores, total))
    cube = _cube_tiling(soc, used, m, n, k, a_dtype, c_dtype, transpose_a, transpose_b,
                        base_m, base_n, base_k, step_k, l0c)
    return MatmulTilingData(
        matmulTiling=cube, aDtype=a_dtype, cDtype=c_dtype, transposeA=bool(transpose_a),
        transposeB=bool(transpose_b), batchShape=batch_shape,
        aBatchStrides=tuple(int(s) for s in a_batch_strides),
        bBatchStrides=tuple(int(s) for s in b_batch_strides), blockDim=used,
        workspaceSize=soc.lib_api_workspace_size,
        opType=BATCH_OP_TYPE if batch_shape else OP_TYPE)


def _cube_tiling(soc, used, m, n, k, a_dtype, c_dtype, trans_a, trans_b, base_m, base_n,
                 base_k, step_k, l0c) -> TCubeTiling:
    """The TCubeTiling of MultiCoreMatmulTiling for the fixed base block (module docstring),
    with this kernel's usedCoreNum and L1 depths."""
    t = MultiCoreMatmulTiling(soc)
    gm, nd = TPosition.GM, CubeFormat.ND
    calls = (t.SetDim(min(used, soc.cube_block_num)), t.SetAType(gm, nd, a_dtype, trans_a),
             t.SetBType(gm, nd, a_dtype, trans_b), t.SetCType(gm, nd, c_dtype),
             t.SetOrgShape(m, n, k), t.SetShape(m, n, k),
             t.SetSingleShape(min(base_m, m), min(base_n, n), k),
             t.SetFixSplit(base_m, base_n, base_k), t.SetBufferSpace(-1, l0c, -1))
    cube = TCubeTiling()
    if -1 in calls or t.GetTiling(cube) == -1:
        raise TilingError(f"MultiCoreMatmulTiling refuses base block {base_m} x {base_n} x "
                          f"{base_k} for ({m}, {n}, {k}) {a_dtype.name}: {t.error}")
    cube.usedCoreNum = used
    cube.stepM = cube.stepN = 1
    cube.stepKa = cube.stepKb = step_k
    cube.depthA1 = cube.depthB1 = 2 * step_k
    return cube


__all__ = ["tiling", "MatmulTilingData", "TCubeTiling", "TilingError", "contiguous_batch_strides",
           "INPUT_DTYPES", "OUTPUT_DTYPES", "OP_TYPE", "BATCH_OP_TYPE"]
