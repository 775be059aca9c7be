"""Host side of aclnnEmbeddingDenseBackward: routing, caveats and the two tilings.

Sources: ``docs/reference/operators.md`` §2 and the public ops-nn files it cites
(``index/embedding_dense_grad_v2/op_host/embedding_dense_grad_v2_tiling.cpp``,
``op_api/aclnn_embedding_dense_backward.cpp``); the Atlas training (910) limit from the seed
``aclnnEmbeddingDenseBackward.txt`` (约束与限制) and the TBE kernel it comes from.

**Routing** (op_api): on A2/A3 (NpuArch 2201) ``IsComputeByV2`` picks EmbeddingDenseGradV2
when the flattened grad rows and numWeights are both <= INT32_MAX, the V1 EmbeddingDenseGrad
otherwise; the first-generation 910 always runs V1. ``IsNeedCast`` casts fp16/bf16 grad to
fp32 before V2 when ``(grad + out elements) * 2 < 100 MB``, when there are fewer than 512
grad rows, or when scaleGradByFreq is set; V1 always gets fp32. The small-dim kernel is
taken when not deterministic, ``embeddingDim <= 512`` and ``numWeights <= 2^24``.

**V2 tiling** (``EmbeddingDenseGradV2Tiling``), in :func:`tiling`:

* ``coreNum = scale ? min(aiv, numWeights, gradRow) : min(aiv, gradRow)`` (= blockDim);
  sorted rows split as ``tailRow = gradRow / coreNum``, ``formerRow = tailRow + 1`` for the
  first ``gradRow % coreNum`` cores;
* ``maxFormerNum = (UB - 20480 - 3*32) / (16*4*useGradNum) * 16``, useGradNum 3 (fp32) or
  4 (fp16/bf16, one more fp32 cache): the column chunk ``formerEmbeddingDim =
  min(embeddingDim, maxFormerNum)``, ``formerDimRepTime`` chunks and a tail chunk;
* small-dim: ``maxRowInUb = ((UB - 20480)/4 - E - 256) / (10 + align8(E))`` (halved for
  fp16/bf16), rows split ``formerCopyRow = gradRow / coreNum`` with the remainder on the
  **last** core;
* scale pass: ``numWeights`` out rows split like the sorted rows;
* ``tilingKey = scale + 10 * determinist + 100 * smallDim``;
* workspace = 16 MiB + ``align8(numWeights) * 4`` (counts, scale only) + for fp16/bf16
  non-deterministic ``2 * coreNum * formerDim * 4`` (outStage) + ``2 * coreNum * 4``
  (outIndex), or ``numWeights * E * 4`` for the fp16/bf16 small-dim kernel.

``ub_size`` defaults to what ``GetCoreMemSize(UB)`` reports (``soc.ub_usable``); the numbers
of docs/reference/operators.md §2 (maxFormerNum 14656 fp32 / 10992 half, maxRowInUb 163 for
E = 256) use the operator unit test's 196608: pass ``ub_size=196608`` to reproduce them.

**V1 / Atlas training tiling** (the TBE kernel of operators.md §2 "The 910 formula"), in
:func:`tiling_910`: rows of ``out`` are split over cores (``ceil(numWeights / coreNum)`` per
core); with scaleGradByFreq the counts of a core's rows are held in UB, so the seed bounds
``embeddingDim < (180192 - countsSize*4)/36`` (int32 indices) and ``(180192 -
countsSize*8)/20`` (int64), ``countsSize = numWeights/coreNum + numWeights%coreNum``, are
enforced by :func:`embedding_dim_bound_910`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# -- constants of the op_api and the V2 tiling (docs/reference/operators.md §2) ----------------
MAX_SUPPORT_DIM = 8
LIMIT_EMBEDDING_DIM_NUM = 14336
INT32_MAX_LIMIT = 2147483647
INT32_INF = 2139095040
CAST_MAX_NUM = 16777216
SMALL_DIM_THRESHOLD = 512
GRAD_ROW_LIMIT = 512
MEMORY_THRESHOLD = 100 * 1024 * 1024
VEC_PROCESS_SIZE = 256
SIZE_OF_FP32 = 4
BLOCK_SIZE = 32
BLOCK_SIZE_GRAD = 64
RESERVED_UB_SIZE = 20480
USE_IDX_NUM_IN_UB = 3
USE_GRAD_NUM_IN_UB = 3
USE_GRAD_NUM_IN_UB_WITH_CACHE = 4
DOUBLE_PRE_CORE = 2
UB_SORT_PART = 10
SYS_WORKSPACE_SIZE = 16 * 1024 * 1024

# -- the Atlas training (TBE) kernel ------------------------------------------------------
#: UB the TBE kernel budgets with: the seed's constant 180192 = 196608 - 16384 - 32, i.e. a
#: 192 KiB UB (docs/reference/operators.md §2 derivation; the value TBE reads on 910 is [R]).
UB_SIZE_910 = 196608
#: UB the TBE kernel keeps free (RESERVE_SIZE, 16 KiB).
RESERVE_SIZE_910 = 16384
#: The seed's constant of the embeddingDim bound.
BOUND_CONSTANT_910 = 180192

#: The documented A2 caveats (seed 约束与限制; docs/reference/operators.md §2 table).
CAVEAT_PRECISION = ("the output cannot be guaranteed high precision; with deterministic "
                    "computation enabled, it cannot be guaranteed high performance")
CAVEAT_PERFORMANCE = "high performance cannot be guaranteed"


def _align(n: int, a: int) -> int:
    return -(-int(n) // a) * a


# -- routing -------------------------------------------------------------------------------
def is_compute_by_v2(soc, grad_rows: int, num_weights: int) -> bool:
    """``IsComputeByV2`` on the SoCs the simulator runs it for: V2 on A2/A3 when both the
    flattened grad rows and numWeights are at most INT32_MAX; never on the first-generation
    910 (docs/reference/operators.md §2 "Routing")."""
    if soc.npu_arch != "2201":
        return False
    return grad_rows <= INT32_MAX_LIMIT and num_weights <= INT32_MAX_LIMIT


def is_need_cast(soc, grad_elems: int, out_elems: int, grad_rows: int, scale: bool) -> bool:
    """Whether fp16/bf16 grad is cast to fp32 before the kernel (``IsNeedCast``; always on
    the first-generation 910)."""
    if soc.npu_arch != "2201":
        return True
    return ((grad_elems + out_elems) * 2 < MEMORY_THRESHOLD or grad_rows < GRAD_ROW_LIMIT
            or bool(scale))


def check_is_small_dim_mode(deterministic: bool, grad_dtype, embedding_dim: int,
                            num_weights: int) -> bool:
    """``CheckIsSmallDimMode``: the unsorted small-dim kernel (no Sort launch). ``grad_dtype``
    is the user's grad dtype (fp16/bf16 never take it in deterministic mode)."""
    if deterministic and np.dtype(grad_dtype) != np.float32:
        return False
    return (not deterministic and embedding_dim <= SMALL_DIM_THRESHOLD
            and num_weights <= CAST_MAX_NUM)


def a2_caveats(embedding_dim: int, grad_rows: int, num_weights: int,
               indices_count: int) -> list[str]:
    """The documented Atlas A2/A3 caveats that apply (seed 约束与限制, "Atlas A2 ..."):

    * grad's tail axis above 14336, flattened grad rows above INT32_MAX, numWeights above
      INT32_MAX: "the output cannot be guaranteed high precision; with deterministic
      computation enabled, it cannot be guaranteed high performance";
    * flattened indices above INT32_INF (2139095040): "high performance cannot be
      guaranteed".

    They are caveats, not rejections (docs/reference/operators.md §2 "Simulation guidance").
    """
    notes = []
    if embedding_dim > LIMIT_EMBEDDING_DIM_NUM:
        notes.append(f"grad's tail axis {embedding_dim} exceeds {LIMIT_EMBEDDING_DIM_NUM}: "
                     + CAVEAT_PRECISION)
    if grad_rows > INT32_MAX_LIMIT:
        notes.append(f"grad flattened to 2-D has {grad_rows} rows, more than INT32_MAX "
                     f"({INT32_MAX_LIMIT}): " + CAVEAT_PRECISION)
    if num_weights > INT32_MAX_LIMIT:
        notes.append(f"numWeights {num_weights} exceeds INT32_MAX ({INT32_MAX_LIMIT}): "
                     + CAVEAT_PRECISION)
    if indices_count > INT32_INF:
        notes.append(f"indices flattened to 1-D have {indices_count} elements, more than "
                     f"INT32_INF ({INT32_INF}): " + CAVEAT_PERFORMANCE)
    return notes


# -- V2 tiling -----------------------------------------------------------------------------
@dataclass(frozen=True)
class EmbeddingDenseGradV2TilingData:
    """``EmbeddingDenseGradV2TilingData`` (params, scaleTiling, determinTiling,
    smallDimTiling flattened; names as in the operator), plus the launch values.

    Counts are in elements or rows; ``paddingIdx`` is the uint64 value the kernel compares
    with (a negative paddingIdx is 2^64 + paddingIdx and matches no index).
    """

    # params
    coreNum: int
    tailRowNum: int
    formerRowNum: int
    formerRowRepTime: int
    computeMask: int
    formerComputeRepTime: int
    formerComputeFormerNum: int
    formerComputeTailNum: int
    tailComputeRepTime: int
    tailComputeFormerNum: int
    tailComputeTailNum: int
    embeddingDim: int
    numWeights: int
    paddingIdx: int
    scaleGradByFreq: bool
    formerDimRepTime: int
    formerEmbeddingDim: int
    tailEmbeddingDim: int
    scaleWorkspaceLength: int
    outStageWorkspaceLength: int
    outIndexWorkspaceLength: int
    outCastedWorkspaceLength: int
    # scaleTiling
    tailCoreRowNum: int
    formerCoreRowNum: int
    formerCoreRowRepTime: int
    scaleMask: int
    # determinTiling
    gradRow: int
    determinTailRowNum: int
    determinFormerRowNum: int
    determinFormerRowNumRepTime: int
    # smallDimTiling
    partNum: int
    formerCopyRow: int
    tailCopyRow: int
    formerCopyTime: int
    tailCopyTime: int
    maxRowInUb: int
    formerLastRow: int
    tailLastRow: int
    # host values
    maxFormerNum: int
    isDeterministMode: bool
    isSmallDim: bool
    dataTypeSize: int
    blockDim: int
    workspaceSize: int
    tilingKey: int

    @property
    def userWorkspaceSize(self) -> int:
        """Workspace bytes after the 16 MiB system workspace."""
        return self.workspaceSize - SYS_WORKSPACE_SIZE

    @property
    def needSyncAll(self) -> bool:
        """The kernel calls SyncAll (scale pass, small-dim kernel, fp16/bf16 staging):
        launch with ``sync_all=True``."""
        return (bool(self.scaleGradByFreq) or self.isSmallDim
                or (self.dataTypeSize != 4 and not self.isDeterministMode))


def max_former_num(ub_size: int, data_type_size: int) -> int:
    """``CalMaxFormerNum``: the widest column chunk the UB holds (elements)."""
    idx_align = BLOCK_SIZE // 4
    grad_align = BLOCK_SIZE_GRAD // 4
    left = ub_size - (RESERVED_UB_SIZE + idx_align * 4 * USE_IDX_NUM_IN_UB)
    left = max(left, 0)
    use = USE_GRAD_NUM_IN_UB if data_type_size == 4 else USE_GRAD_NUM_IN_UB_WITH_CACHE
    return left // (grad_align * 4 * use) * grad_align


def tiling(soc, grad_rows: int, embedding_dim: int, num_weights: int, padding_idx: int,
           scale_grad_by_freq: bool, dtype, *, deterministic: bool = False,
           small_dim: bool | None = None, core_num: int | None = None,
           ub_size: int | None = None) -> EmbeddingDenseGradV2TilingData:
    """The EmbeddingDenseGradV2 TilingData (``EmbeddingDenseGradV2Tiling::Init`` and
    ``SetKernelTiling``).

    Args:
        soc: the SocSpec; ``core_num`` defaults to its AIV count and ``ub_size`` to
            ``GetCoreMemSize(UB)`` (``soc.ub_usable``).
        grad_rows: rows of grad flattened to 2-D (= indices count, >= 1).
        embedding_dim: grad's last dimension (>= 1).
        num_weights: rows of out. padding_idx: as the caller passed it (a negative value is
            taken as uint64, 2^64 + padding_idx). scale_grad_by_freq: bool.
        dtype: the dtype the kernel sees (float32, or float16/bfloat16 when the op did not
            cast).
        deterministic: the ACL_OPT_DETERMINISTIC setting.
        small_dim: force the small-dim decision (default: ``CheckIsSmallDim``).

    Returns:
        The TilingData with ``blockDim`` (= coreNum), ``workspaceSize`` (bytes, 16 MiB
        system workspace included) and ``tilingKey``.

    Raises:
        ValueError: ``grad_rows`` or ``embedding_dim`` is 0, or the UB cannot hold one
            column ("tiling init fail" in the operator).
    """
    core_total = soc.vector_block_num if core_num is None else int(core_num)
    ub = soc.ub_usable if ub_size is None else int(ub_size)
    dsize = np.dtype(dtype).itemsize
    E, nw, rows = int(embedding_dim), int(num_weights), int(grad_rows)
    scale = bool(scale_grad_by_freq)
    pad = int(padding_idx) % (1 << 64)
    det = bool(deterministic) and dsize == 4
    core = min(core_total, nw, rows) if scale else min(core_total, rows)
    if core == 0 or E == 0:
        raise ValueError(f"coreNum or embeddingDim is zero, coreNum={core}, embeddingDim={E}, "
                         "both must be greater than 0")
    mfn = max_former_num(ub, dsize)
    if mfn == 0:
        raise ValueError("Do not have enough ub size.")
    if small_dim is None:
        small_dim = (not (deterministic and dsize != 4) and not det
                     and E <= SMALL_DIM_THRESHOLD and nw <= CAST_MAX_NUM)
    key = int(scale) + 10 * int(det) + 100 * int(small_dim)

    former_dim = min(E, mfn)
    dim_rep = E // former_dim
    tail_dim = E - former_dim * dim_rep
    mask = VEC_PROCESS_SIZE // SIZE_OF_FP32
    v = dict(formerComputeRepTime=former_dim // mask,
             formerComputeFormerNum=former_dim // mask * mask,
             formerComputeTailNum=former_dim - former_dim // mask * mask,
             tailComputeRepTime=tail_dim // mask,
             tailComputeFormerNum=tail_dim // mask * mask,
             tailComputeTailNum=tail_dim - tail_dim // mask * mask)
    tail_row = former_row = former_rep = 0
    d_tail = d_former = d_rep = 0
    part = f_copy = t_copy = f_time = t_time = max_row = f_last = t_last = 0
    if det:
        d_tail, d_former, d_rep = rows // core, rows // core + 1, rows % core
    elif small_dim:
        part = 1
        f_copy = rows // core
        t_copy = rows - f_copy * (core - 1)
        div = UB_SORT_PART + _align(E, BLOCK_SIZE // SIZE_OF_FP32)
        max_row = ((ub - RESERVED_UB_SIZE) // SIZE_OF_FP32 - E - VEC_PROCESS_SIZE) // div
        max_row = max_row if dsize == 4 else max_row // 2
        if max_row <= 0:
            raise ValueError("Do not have enough ub size for the small-dim kernel.")
        f_time = -(-f_copy // max_row)
        t_time = -(-t_copy // max_row)
        f_last = f_copy - max_row * (f_time - 1)
        t_last = t_copy - max_row * (t_time - 1)
    else:
        tail_row, former_row, former_rep = rows // core, rows // core + 1, rows % core
    sc_tail = sc_former = sc_rep = 0
    if scale:
        sc_tail, sc_former, sc_rep = nw // core, nw // core + 1, nw % core

    scale_len = _align(nw, BLOCK_SIZE // 4) if scale else 0
    stage_len = _align(former_dim * core * DOUBLE_PRE_CORE, BLOCK_SIZE // 4)
    index_len = core * DOUBLE_PRE_CORE
    casted_len = nw * E
    ws = SYS_WORKSPACE_SIZE + scale_len * 4
    if dsize != 4 and not det:
        ws += casted_len * 4 if small_dim else stage_len * 4 + index_len * 4
    return EmbeddingDenseGradV2TilingData(
        coreNum=core, tailRowNum=tail_row, formerRowNum=former_row, formerRowRepTime=former_rep,
        computeMask=mask, embeddingDim=E, numWeights=nw, paddingIdx=pad, scaleGradByFreq=scale,
        formerDimRepTime=dim_rep, formerEmbeddingDim=former_dim, tailEmbeddingDim=tail_dim,
        scaleWorkspaceLength=scale_len, outStageWorkspaceLength=stage_len,
        outIndexWorkspaceLength=index_len, outCastedWorkspaceLength=casted_len,
        tailCoreRowNum=sc_tail, formerCoreRowNum=sc_former, formerCoreRowRepTime=sc_rep,
        scaleMask=mask, gradRow=rows, determinTailRowNum=d_tail, determinFormerRowNum=d_former,
        determinFormerRowNumRepTime=d_rep, partNum=part, formerCopyRow=f_copy,
        tailCopyRow=t_copy, formerCopyTime=f_time, tailCopyTime=t_time, maxRowInUb=max_row,
        formerLastRow=f_last, tailLastRow=t_last, maxFormerNum=mfn, isDeterministMode=det,
        isSmallDim=bool(small_dim), dataTypeSize=dsize, blockDim=core, workspaceSize=ws,
        tilingKey=key, **v)


# -- V1 / Atlas training -------------------------------------------------------------------
def counts_size_910(num_weights: int, core_num: int) -> int:
    """The seed's ``countsSize = numWeights / coreNum + numWeights % coreNum``."""
    return int(num_weights) // int(core_num) + int(num_weights) % int(core_num)


def embedding_dim_bound_910(num_weights: int, core_num: int, index_dtype) -> tuple[float, int]:
    """``(bound, countsSize)`` of the Atlas training rule: with scaleGradByFreq the
    embeddingDim must be **less than** ``bound`` = ``(180192 - countsSize*4)/36`` for int32
    indices or ``(180192 - countsSize*8)/20`` for int64 (seed 约束与限制, "Atlas 训练系列
    产品"). Index types other than int64 are cast to int32 first and use the int32 rule."""
    cs = counts_size_910(num_weights, core_num)
    if np.dtype(index_dtype) == np.int64:
        return (BOUND_CONSTANT_910 - cs * 8) / 20, cs
    return (BOUND_CONSTANT_910 - cs * 4) / 36, cs


@dataclass(frozen=True)
class EmbeddingDenseGradTilingData:
    """Tiling of the Atlas training kernel (EmbeddingDenseGrad, TBE algorithm).

    rowsPerCore: out rows per core (``index_not_last_core``), the last used core takes
    ``numWeights - rowsPerCore * (blockDim - 1)``. countsSize: entries of the UB count
    buffer (seed formula). indicesTile: indices (and grad rows) per UB tile, a multiple of
    the 32 B index block. colChunk: grad columns per pass over a tile (the whole row when
    it fits, always with scaleGradByFreq). indexBytes: 4 (int32) or 8 (int64).
    """

    gradRow: int
    embeddingDim: int
    numWeights: int
    paddingIdx: int
    scaleGradByFreq: bool
    rowsPerCore: int
    countsSize: int
    indicesTile: int
    colChunk: int
    indexBytes: int
    blockDim: int
    workspaceSize: int


def tiling_910(soc, grad_rows: int, embedding_dim: int, num_weights: int, padding_idx: int,
               scale_grad_by_freq: bool, index_dtype, *,
               core_num: int | None = None) -> EmbeddingDenseGradTilingData:
    """Tiling of the Atlas training kernel (docs/reference/operators.md §2 "The 910 formula").

    UB budget: ``UB_SIZE_910 - RESERVE_SIZE_910 = 180224`` B holds the counts
    (``countsSize`` x index bytes, scale only), an index tile and its grad rows
    (``indicesTile x (4*colChunk + index bytes)``) and one fp32 add row (``4*colChunk``).
    With scale the whole row must fit with at least one 32 B block of indices (8 int32 or
    4 int64): that is the seed bound. Without scale a wide row is processed in column
    chunks [R: the TBE non-scale branch is not reproduced].

    Raises:
        ValueError: scaleGradByFreq and ``embedding_dim >= bound`` (the caller reports it
            as 161002 with the bound).
    """
    core = soc.vector_block_num if core_num is None else int(core_num)
    ib = 8 if np.dtype(index_dtype) == np.int64 else 4
    each_block = BLOCK_SIZE // ib
    E, nw = int(embedding_dim), int(num_weights)
    rows_per_core = -(-nw // core) if nw else 0
    block_dim = -(-nw // rows_per_core) if nw else 0
    cs = counts_size_910(nw, core)
    budget = UB_SIZE_910 - RESERVE_SIZE_910
    if scale_grad_by_freq:
        bound, _ = embedding_dim_bound_910(nw, core, index_dtype)
        if E >= bound:
            raise ValueError(f"embeddingDim {E} is not less than the bound {bound:.4f}")
        col = E
        avail = budget - cs * ib - 4 * col
        tile = avail // (4 * col + ib) // each_block * each_block
    else:
        col = E
        tile = (budget - 4 * col) // (4 * col + ib) // each_block * each_block
        while tile < each_block:
            col = -(-col // 2)
            tile = (budget - 4 * col) // (4 * col + ib) // each_block * each_block
    tile = min(tile, _align(max(int(grad_rows), 1), each_block), 4095 // each_block * each_block)
    return EmbeddingDenseGradTilingData(
        gradRow=int(grad_rows), embeddingDim=E, numWeights=nw,
        paddingIdx=int(padding_idx) % (1 << 64), scaleGradByFreq=bool(scale_grad_by_freq),
        rowsPerCore=rows_per_core, countsSize=cs, indicesTile=tile, colChunk=col,
        indexBytes=ib, blockDim=block_dim, workspaceSize=soc.lib_api_workspace_size)
