"""Host side of aclnnEmbeddingDenseBackward against docs/reference/operators.md §2: the V2 tiling
numbers, keys and workspace formula, the routing and caveat rules, the Atlas training
bound, and the Sort kernel's tiling. Expected values are computed by hand in the comments."""
import ml_dtypes
import numpy as np
import pytest

from npusim.kernels.common.sorted_index import sort_tiling
from npusim.kernels.embedding_dense_backward import tiling as edb
from npusim import get_soc

A2 = get_soc("Ascend910B1")
B3 = get_soc("Ascend910B3")
A910 = get_soc("Ascend910A")
UT_UB = 196608          # UB_SIZE of the operator's unit test (operators.md §2 A2 numbers)
MIB = 1 << 20


@pytest.mark.parametrize("dtype,ub,expected", [
    # (196608 - 20480 - 8*4*3) // (16*4*3) * 16 = 176032 // 192 * 16 = 916 * 16
    (np.float32, UT_UB, 14656),
    # 176032 // (16*4*4) * 16 = 687 * 16
    (np.float16, UT_UB, 10992),
    (ml_dtypes.bfloat16, UT_UB, 10992),
    # GetCoreMemSize(UB) = 196352 on 910B: 175776 // 192 * 16 = 915 * 16
    (np.float32, None, 14640),
])
def test_max_former_num(dtype, ub, expected):
    t = edb.tiling(A2, 100, 20000, 10, -1, False, dtype, ub_size=ub)
    assert t.maxFormerNum == expected
    assert t.formerEmbeddingDim == expected


def test_worked_row_split_1024_by_4096():
    # operators.md §2: rows 22 on 16 cores, 21 on 32 cores; one column chunk; key 0 / 1
    t = edb.tiling(A2, 1024, 4096, 100, -1, False, np.float32, ub_size=UT_UB)
    assert (t.blockDim, t.formerRowNum, t.formerRowRepTime, t.tailRowNum) == (48, 22, 16, 21)
    assert (t.formerEmbeddingDim, t.formerDimRepTime, t.tailEmbeddingDim) == (4096, 1, 0)
    assert (t.computeMask, t.formerComputeRepTime, t.formerComputeTailNum) == (64, 64, 0)
    assert t.tilingKey == 0 and t.workspaceSize == 16 * MIB
    s = edb.tiling(A2, 1024, 4096, 100, -1, True, np.float32, ub_size=UT_UB)
    # scale: coreNum = min(48, numWeights 100, gradRow 1024); out rows 100 = 2*48 + 4
    assert s.tilingKey == 1 and s.blockDim == 48
    assert (s.formerCoreRowNum, s.formerCoreRowRepTime, s.tailCoreRowNum) == (3, 4, 2)
    # counts: align8(100) * 4 = 104 * 4
    assert s.workspaceSize == 16 * MIB + 416


def test_scale_core_count_is_bounded_by_num_weights():
    t = edb.tiling(A2, 1000, 64, 5, -1, True, np.float32, small_dim=False)
    assert t.blockDim == 5 and (t.formerRowNum, t.formerRowRepTime, t.tailRowNum) == (201, 0, 200)
    assert edb.tiling(B3, 1000, 64, 5, -1, False, np.float32, small_dim=False).blockDim == 40


def test_small_dim_max_row_in_ub():
    # ((196608 - 20480)/4 - 256 - 256) / (10 + 256) = 43520 / 266 = 163
    t = edb.tiling(A2, 5000, 256, 1000, -1, False, np.float32, ub_size=UT_UB)
    assert t.isSmallDim and t.tilingKey == 100 and t.maxRowInUb == 163
    # 5000 rows / 48 = 104; the last core takes 5000 - 104*47 = 112
    assert (t.formerCopyRow, t.tailCopyRow, t.formerCopyTime, t.tailCopyTime) == (104, 112, 1, 1)
    assert (t.formerLastRow, t.tailLastRow) == (104, 112)
    h = edb.tiling(A2, 5000, 256, 1000, -1, False, np.float16, ub_size=UT_UB)
    assert h.maxRowInUb == 81                          # halved for fp16/bf16
    # fp16 small-dim: + outCasted numWeights * E * 4
    assert h.workspaceSize == 16 * MIB + 1000 * 256 * 4
    # E = 3: (44032 - 3 - 256) / (10 + 8) = 2431; 20000/48 = 416 rows per core, 1 copy
    t3 = edb.tiling(A2, 20000, 3, 4, 0, True, np.float32, ub_size=UT_UB)
    assert t3.maxRowInUb == 2431 and t3.tilingKey == 101


@pytest.mark.parametrize("scale,det,dtype,E,nw,key", [
    (False, False, np.float32, 1024, 100, 0), (True, False, np.float32, 1024, 100, 1),
    (False, True, np.float32, 1024, 100, 10), (True, True, np.float32, 1024, 100, 11),
    (False, False, np.float32, 512, 100, 100), (True, False, np.float32, 512, 100, 101),
    (False, True, np.float32, 512, 100, 10),            # deterministic: never small-dim
    (False, False, np.float32, 513, 100, 0),            # 513 > SMALL_DIM_THRESHOLD
    (False, False, np.float32, 64, 2 ** 24 + 1, 0),     # numWeights above CAST_MAX_NUM
    (False, True, np.float16, 64, 100, 0),              # det + fp16: neither det nor small
    (False, False, np.float16, 64, 100, 100),
])
def test_tiling_keys(scale, det, dtype, E, nw, key):
    t = edb.tiling(A2, 4096, E, nw, -1, scale, dtype, deterministic=det)
    assert t.tilingKey == key
    assert t.isDeterministMode == (key % 100 >= 10)
    assert edb.check_is_small_dim_mode(det, dtype, E, nw) == (key >= 100)


def test_workspace_half_staging_and_column_chunks():
    # fp16 non-deterministic, not small-dim: outStage align8(10992*48*2) * 4 + outIndex 96*4
    t = edb.tiling(A2, 4096, 20000, 50, -1, False, np.float16, ub_size=UT_UB)
    assert (t.formerEmbeddingDim, t.formerDimRepTime, t.tailEmbeddingDim) == (10992, 1, 9008)
    assert t.workspaceSize == 16 * MIB + 10992 * 96 * 4 + 96 * 4
    assert t.needSyncAll
    # fp32, E = 2 * 14656: two full chunks, no tail
    f = edb.tiling(A2, 4096, 2 * 14656, 50, -1, False, np.float32, ub_size=UT_UB)
    assert (f.formerDimRepTime, f.tailEmbeddingDim, f.tailComputeRepTime) == (2, 0, 0)
    assert not f.needSyncAll and f.workspaceSize == 16 * MIB
    # deterministic fp32: determin row split, 4097 rows = 86*47... -> 4097 // 48 = 85 r 17
    d = edb.tiling(A2, 4097, 1024, 50, -1, False, np.float32, deterministic=True)
    assert (d.determinFormerRowNum, d.determinFormerRowNumRepTime, d.determinTailRowNum) == \
        (86, 17, 85)


def test_padding_index_is_uint64():
    assert edb.tiling(A2, 10, 8, 4, -1, False, np.float32).paddingIdx == 2 ** 64 - 1
    assert edb.tiling(A2, 10, 8, 4, 3, False, np.float32).paddingIdx == 3


def test_routing_and_cast_rules():
    assert edb.is_compute_by_v2(A2, 2 ** 31 - 1, 2 ** 31 - 1)
    assert not edb.is_compute_by_v2(A2, 2 ** 31, 10)
    assert not edb.is_compute_by_v2(A2, 10, 2 ** 31)
    assert not edb.is_compute_by_v2(A910, 10, 10)
    # (grad + out) * 2 < 100 MiB, or fewer than 512 rows, or scale
    assert edb.is_need_cast(A2, 1000, 1000, 1000, False)
    big = 50 * MIB
    assert not edb.is_need_cast(A2, big, 10, 4096, False)
    assert edb.is_need_cast(A2, big, 10, 511, False)
    assert edb.is_need_cast(A2, big, 10, 4096, True)
    assert edb.is_need_cast(A910, big, 10, 4096, False)


def test_a2_caveats():
    assert edb.a2_caveats(14336, 100, 100, 100) == []
    notes = edb.a2_caveats(14337, 2 ** 31, 2 ** 31, 2139095041)
    assert len(notes) == 4
    assert "14337" in notes[0] and "14336" in notes[0] and "high precision" in notes[0]
    assert "INT32_MAX" in notes[1] and "INT32_MAX" in notes[2]
    assert "2139095040" in notes[3] and "high performance" in notes[3]
    assert edb.a2_caveats(10, 2 ** 31 - 1, 2 ** 31 - 1, 2139095040) == []


@pytest.mark.parametrize("nw,idx,bound", [
    # countsSize = 5000/32 + 5000%32 = 156 + 8 = 164
    (5000, np.int32, (180192 - 164 * 4) / 36),        # 4987.11
    (5000, np.int64, (180192 - 164 * 8) / 20),        # 8944.0
    (100, np.float32, (180192 - (3 + 4) * 4) / 36),    # cast to int32: the int32 rule
])
def test_atlas_training_bound(nw, idx, bound):
    b, cs = edb.embedding_dim_bound_910(nw, 32, idx)
    assert b == pytest.approx(bound) and cs == nw // 32 + nw % 32
    below = int(np.ceil(bound)) - 1
    t = edb.tiling_910(A910, 64, below, nw, -1, True, idx)
    # just below the bound the UB holds one 32 B block of indices and their grad rows
    each = 4 if np.dtype(idx) == np.int64 else 8
    assert t.indicesTile == each and t.colChunk == below
    ib = 8 if np.dtype(idx) == np.int64 else 4
    used = cs * ib + t.indicesTile * (4 * below + ib) + 4 * below
    assert used <= edb.UB_SIZE_910 - edb.RESERVE_SIZE_910
    with pytest.raises(ValueError, match="bound"):
        edb.tiling_910(A910, 64, int(np.ceil(bound)), nw, -1, True, idx)


def test_atlas_training_split_and_wide_rows():
    t = edb.tiling_910(A910, 300, 33, 100, -1, False, np.int32)
    assert (t.rowsPerCore, t.blockDim) == (4, 25)          # ceil(100/32) = 4 rows per core
    w = edb.tiling_910(A910, 64, 7000, 10, -1, False, np.int32)
    assert w.colChunk == 3500 and w.indicesTile == 8         # no scale: column chunks


def test_sort_tiling():
    t = sort_tiling(A2, 65536)
    assert (t.chunkNum, t.levelNum, t.blockDim) == (16, 2, 16)
    assert t.workspaceSize == 2 * 65536 * 8                  # one buffer per non-final level
    one = sort_tiling(A2, 4096)
    assert (one.chunkNum, one.levelNum, one.workspaceSize) == (1, 0, 0)
    many = sort_tiling(A2, 70001)
    assert (many.chunkNum, many.levelNum, many.blockDim) == (18, 3, 18)
    assert sort_tiling(A2, 0).blockDim == 0
