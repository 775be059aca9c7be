"""The Matmul host tiling (MatmulApiTiling, MultiCoreMatmulTiling -> TCubeTiling): its fields
against hand-computed cases, every produced tiling against the published constraints
(TCubeTiling结构体 table 2: L0A/L0B/L0C/bias-table/L1 capacities, depth = step * step * db,
fractal alignment, singleCoreK = K, usedCoreNum = ceil(M/sM) * ceil(N/sN) <= dim) over
hypothesis-drawn shapes, types, transposes and core counts, and GetTiling's -1 cases."""
import logging

import numpy as np
from hypothesis import given, settings, strategies as st

from npusim import get_soc
from npusim.ascendc import matmul_tiling as mt
from npusim.ascendc import MatmulApiTiling, MultiCoreMatmulTiling, TCubeTiling

DT, CF, TP = mt.DataType, mt.CubeFormat, mt.TPosition
SIZE = {DT.DT_FLOAT16: 2, DT.DT_BF16: 2, DT.DT_FLOAT: 4, DT.DT_INT8: 1}
ACC = {DT.DT_FLOAT16: DT.DT_FLOAT, DT.DT_BF16: DT.DT_FLOAT, DT.DT_FLOAT: DT.DT_FLOAT,
       DT.DT_INT8: DT.DT_INT32}


def make(cls, m, n, k, dtype=DT.DT_FLOAT16, trans_a=False, trans_b=False, bias=False,
         dim=None, soc="Ascend910B1", c_type=None, set_shape=True):
    t = cls(soc)
    if dim is not None:
        assert t.SetDim(dim) == 0
    assert t.SetAType(TP.GM, CF.ND, dtype, trans_a) == 0
    assert t.SetBType(TP.GM, CF.ND, dtype, trans_b) == 0
    assert t.SetCType(TP.GM, CF.ND, c_type or ACC[dtype]) == 0
    assert t.SetBiasType(TP.GM, CF.ND, ACC[dtype]) == 0
    assert t.SetOrgShape(m, n, k) == 0 and (not set_shape or t.SetShape(m, n, k) == 0)
    assert t.SetBias(bias) == 0
    return t


def get(t):
    cube = TCubeTiling()
    assert t.GetTiling(cube) == 0, t.error
    return cube


def fields(cube, names):
    return {f: getattr(cube, f) for f in names.split()}


# -- hand-computed cases -------------------------------------------------------------------------

def test_single_core_half_1024_cube():
    """fp16 1024^3 on one core: the docs' recommended base (128, 256, 64); L0A 2 x 16 KiB
    and L0B 2 x 32 KiB (dbL0A = dbL0B = 2), L0C 128 KiB (dbL0C = 1). L1: the library's
    GetL1Factors (tests/test_matmul_tiling_library.py derives it): A 8 k steps, B 2, both
    double-buffered: 16 x 16 KiB + 4 x 32 KiB = 384 KiB."""
    cube = get(make(MatmulApiTiling, 1024, 1024, 1024))
    assert fields(cube, "usedCoreNum M N Ka Kb singleCoreM singleCoreN singleCoreK") == dict(
        usedCoreNum=1, M=1024, N=1024, Ka=1024, Kb=1024, singleCoreM=1024, singleCoreN=1024,
        singleCoreK=1024)
    assert (cube.baseM, cube.baseN, cube.baseK) == (128, 256, 64)
    assert (cube.dbL0A, cube.dbL0B, cube.dbL0C) == (2, 2, 1)
    assert (cube.stepKa, cube.stepKb, cube.stepM, cube.stepN) == (8, 2, 1, 1)
    assert (cube.depthA1, cube.depthB1) == (16, 4)
    assert cube.shareL1Size == (16 * 128 + 4 * 256) * 64 * 2
    assert (cube.isBias, cube.iterateOrder, cube.transLength) == (0, 0, 0)


def test_multi_core_split_of_1024_cube_on_24_cores():
    """24 cores on A2: the library's SPLIT_MN scenario (tests/test_matmul_tiling_library.py
    derives it): 8 x 3 cores of 128 x 384, base (128, 256, 64), stepKa = stepKb = 4,
    depthA1 = depthB1 = 8, one L0C buffer (the scenario needs SetOrgShape without SetShape)."""
    t = make(MultiCoreMatmulTiling, 1024, 1024, 1024, dim=24, set_shape=False)
    cube = get(t)
    assert (cube.usedCoreNum, cube.singleCoreM, cube.singleCoreN) == (24, 128, 384)
    assert t.GetCoreNum() == (24, 8, 3)
    assert t.GetSingleShape() == (128, 384, 1024)
    assert (cube.baseM, cube.baseN, cube.baseK) == (128, 256, 64)
    assert (cube.dbL0A, cube.dbL0B, cube.dbL0C) == (2, 2, 1)
    assert (cube.stepKa, cube.depthA1, cube.depthB1) == (4, 8, 8)


def test_float_transposed_a_with_bias_grows_base_k():
    """float, A transposed (baseK 16-aligned), bias: baseN = 48, baseM = 64; baseK doubles
    from 32 (128 B) while two 64 x baseK float buffers fit L0A: 64, 128 (2*64*128*4 = 64 KiB);
    K = 200 in 2 steps of 128; A and B whole in L1 (the library's GetL1Factors: both fit,
    read once, so single-buffered), plus 48 floats of bias; one L0C buffer (the library's
    default template). asc-devkit's own tiling gives the same fields."""
    cube = get(make(MatmulApiTiling, 64, 48, 200, DT.DT_FLOAT, trans_a=True, bias=True))
    assert (cube.baseM, cube.baseN, cube.baseK) == (64, 48, 128)
    assert (cube.dbL0A, cube.dbL0B, cube.dbL0C) == (2, 2, 1)
    assert (cube.stepKa, cube.stepKb, cube.depthA1, cube.depthB1) == (2, 2, 2, 2)
    assert cube.shareL1Size == 2 * (64 + 48) * 128 * 4 + 48 * 4
    assert cube.shareL0CSize == 64 * 48 * 4 and cube.isBias == 1


def test_base_k_alignment_and_the_padded_slices():
    """baseK is a multiple of C0_size (8 for float, 32 for int8: the fractal's K) whatever
    the transposes; a float slice moved transposed (A transposed, B not) is loaded with its
    K padded to 16 (LoadData3DV2 CeilAlign(madK, 16)), so a fixed base whose padded slice
    passes the half of L0 it is loaded into is refused only there: 112 x 72 floats are
    32,256 B as stored, 112 x 80 = 35,840 B padded, against 32,768 B."""
    for ta, tb in ((False, True), (False, False), (True, True), (True, False)):
        t = make(MatmulApiTiling, 32, 32, 64, DT.DT_FLOAT, ta, tb)
        t.SetFixSplit(32, 32, 8)
        assert t.GetTiling(TCubeTiling()) == 0, t.error
        t = make(MatmulApiTiling, 112, 112, 144, DT.DT_FLOAT, ta, tb)
        t.SetFixSplit(112, 112, 72)
        assert (t.GetTiling(TCubeTiling()) == 0) == (not ta and tb), t.error
    t = make(MatmulApiTiling, 32, 32, 64, DT.DT_INT8, False, True)
    t.SetFixSplit(32, 32, 16)
    assert t.GetTiling(TCubeTiling()) == -1 and "of 32" in t.error


def test_k_fully_loaded_then_more_m_blocks():
    """K and both operands fit L1 whole (the library's "both full" mode: single-buffered,
    every M and N block in L1); SetTraverse(FIRSTN) changes the walk, not L1."""
    cube = get(make(MatmulApiTiling, 512, 512, 64))
    assert (cube.stepKa, cube.stepM, cube.stepN, cube.iterateOrder) == (1, 4, 2, 0)
    assert (cube.depthA1, cube.depthB1) == (4, 2)
    t = make(MatmulApiTiling, 512, 512, 64)
    assert t.SetTraverse(mt.MatrixTraverse.FIRSTN) == 0
    cube = get(t)
    assert (cube.stepM, cube.stepN, cube.iterateOrder) == (4, 2, 1)


def test_fixed_split_and_single_shape_are_kept():
    t = make(MultiCoreMatmulTiling, 4096, 4096, 4096, dim=24)
    t.SetSingleShape(256, 128, 4096)
    t.SetFixSplit(256, 128, 64)
    cube = get(t)
    assert (cube.singleCoreM, cube.singleCoreN, cube.baseM, cube.baseN, cube.baseK) == (
        256, 128, 256, 128, 64)
    # 16 x 32 tiles need 512 cores: the 24 allowed take several rounds each
    assert cube.usedCoreNum == 24 and t.GetCoreNum() == (512, 16, 32)


def test_numpy_dtypes_are_accepted_for_data_types():
    t = make(MatmulApiTiling, 64, 64, 64)
    assert t.SetAType(TP.GM, CF.ND, np.float32) == 0 and t.SetBType(TP.GM, CF.ND, np.float32) == 0
    assert get(t).baseK % 8 == 0
    assert mt.to_data_type(np.float16) == DT.DT_FLOAT16


# -- every tiling fits ---------------------------------------------------------------------------

def check_constraints(cube, soc, dtype, m, n, k, dim, trans_a, trans_b, bias):
    """TCubeTiling table 2, written out from the page."""
    soc = get_soc(soc)
    isz = SIZE[dtype]
    c0 = 32 // isz
    assert cube.baseM * cube.baseK * isz * cube.dbL0A <= soc.l0_a_size
    assert cube.baseN * cube.baseK * isz * cube.dbL0B <= soc.l0_b_size
    assert cube.baseM * cube.baseN * 4 * cube.dbL0C <= soc.l0_c_size
    assert {cube.dbL0A, cube.dbL0B, cube.dbL0C} <= {1, 2}
    if bias:
        assert cube.baseN * 4 <= soc.bt_size
    db_a = cube.depthA1 // (cube.stepM * cube.stepKa)
    db_b = cube.depthB1 // (cube.stepN * cube.stepKb)
    assert db_a in (1, 2) and db_b in (1, 2)
    assert cube.depthA1 == cube.stepM * cube.stepKa * db_a
    assert cube.depthB1 == cube.stepN * cube.stepKb * db_b
    a_l1 = cube.baseM * cube.baseK * cube.depthA1 * isz
    b_l1 = cube.baseN * cube.baseK * cube.depthB1 * isz
    assert a_l1 + b_l1 + (cube.baseN * 4 if bias else 0) <= soc.l1_usable
    assert cube.baseM % 16 == 0 and cube.baseN % 16 == 0
    assert cube.baseK % c0 == 0 and cube.baseK <= 4095       # the fractals' C0
    # the library's kernel pads a slice moved transposed (int8: rows to 32; float: K to 16)
    # and loads it into half of L0A/L0B when both dbL0A and dbL0B are 2
    half = cube.dbL0A == 2 and cube.dbL0B == 2
    for base, trans, l0 in ((cube.baseM, trans_a, soc.l0_a_size),
                            (cube.baseN, not trans_b, soc.l0_b_size)):
        rows, ks = base, cube.baseK
        if trans and isz == 1:
            rows = -(-base // 32) * 32
        if trans and isz == 4:
            ks = -(-ks // 16) * 16
        assert rows * ks * isz <= (l0 // 2 if half else l0)
    # the library's parts are of the 16-aligned M and N (M = 1 on two cores: 16, as
    # asc-devkit's own tiling gives)
    assert cube.singleCoreK == k
    assert cube.singleCoreM <= -(-m // 16) * 16 and cube.singleCoreN <= -(-n // 16) * 16
    used = -(-m // cube.singleCoreM) * -(-n // cube.singleCoreN)
    assert cube.usedCoreNum == used <= dim
    assert (cube.M, cube.N, cube.Ka, cube.Kb) == (m, n, k, k)
    assert min(cube.stepM, cube.stepN, cube.stepKa, cube.stepKb) >= 1


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 6000), n=st.integers(1, 6000), k=st.integers(1, 9000),
       dtype=st.sampled_from([DT.DT_FLOAT16, DT.DT_BF16, DT.DT_FLOAT, DT.DT_INT8]),
       trans_a=st.booleans(), trans_b=st.booleans(), bias=st.booleans(),
       dim=st.integers(1, 48), soc=st.sampled_from(["Ascend910B1", "Ascend910B4",
                                                    "Ascend910_9392"]))
def test_every_tiling_fits_the_buffers_and_rules(m, n, k, dtype, trans_a, trans_b, bias, dim,
                                                 soc):
    dim = min(dim, get_soc(soc).vector_block_num)
    t = make(MultiCoreMatmulTiling, m, n, k, dtype, trans_a, trans_b, bias, dim, soc)
    check_constraints(get(t), soc, dtype, m, n, k, dim, trans_a, trans_b, bias)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 3000), n=st.integers(1, 3000), k=st.integers(1, 3000),
       dtype=st.sampled_from([DT.DT_FLOAT16, DT.DT_FLOAT]), l1_kib=st.integers(64, 511))
def test_a_smaller_buffer_space_is_respected(m, n, k, dtype, l1_kib):
    """SetBufferSpace lowers the L1 the tiling may use; the tiling stays within it."""
    t = make(MatmulApiTiling, m, n, k, dtype)
    assert t.SetBufferSpace(l1_kib * 1024, -1, -1) == 0
    cube = get(t)
    isz = SIZE[dtype]
    assert (cube.baseM * cube.depthA1 + cube.baseN * cube.depthB1) * cube.baseK * isz <= \
        l1_kib * 1024


# -- the -1 cases --------------------------------------------------------------------------------

def failing(t, match):
    cube = TCubeTiling(baseM=7)
    assert t.GetTiling(cube) == -1
    assert cube == TCubeTiling(baseM=7)                    # left unchanged
    assert match in t.error
    if isinstance(t, MultiCoreMatmulTiling):
        assert t.GetCoreNum() is None


def test_get_tiling_fails_clearly(caplog):
    t = MatmulApiTiling("Ascend910B1")
    t.SetOrgShape(16, 16, 16)
    failing(t, "SetAType, SetBType and SetCType")
    t = make(MatmulApiTiling, 16, 16, 16)
    t.SetBType(TP.GM, CF.ND, DT.DT_FLOAT)
    failing(t, "type pair")
    failing(make(MatmulApiTiling, 16, 16, 16, c_type=DT.DT_INT32), "not a C type")
    t = make(MatmulApiTiling, 16, 16, 16, bias=True)
    t.SetBiasType(TP.GM, CF.ND, DT.DT_INT32)
    failing(t, "not a bias type")
    t = make(MatmulApiTiling, 16, 16, 16)
    t.SetShape(32, 16, 16)
    failing(t, "exceeds the original shape")
    t = make(MatmulApiTiling, 64, 64, 64)
    t.SetFixSplit(24, 64, 64)
    failing(t, "multiples of 16")
    t = make(MatmulApiTiling, 512, 512, 64, DT.DT_FLOAT)
    t.SetFixSplit(256, 256, 16)                         # 256 KiB of float in L0C
    failing(t, "exceeds L0C")
    t = make(MatmulApiTiling, 64, 64, 512)
    t.SetFixSplit(64, 64, 1024)                         # 128 KiB in L0A
    failing(t, "exceeds L0A")
    t = make(MatmulApiTiling, 64, 512, 64, bias=True)
    t.SetFixSplit(64, 512, 16)
    failing(t, "bias table")
    t = make(MatmulApiTiling, 30, 32, 32)
    t.SetAType(TP.GM, CF.NZ, DT.DT_FLOAT16)
    failing(t, "must be 16-aligned")
    failing(make(MatmulApiTiling, 32, 32, 32, DT.DT_BF16, soc="Ascend910A"), "no bfloat16 Mmad")
    t = make(MultiCoreMatmulTiling, 64, 64, 64)
    t.EnableMultiCoreSplitK(True)
    failing(t, "not modelled")
    t = make(MatmulApiTiling, 256, 256, 256)
    t.SetBufferSpace(8192, -1, -1)
    with caplog.at_level(logging.WARNING, logger="npusim.matmul_tiling"):
        failing(t, "exceed L1")
    assert "MatmulApi Tiling" in caplog.text


def test_setters_reject_out_of_range_values():
    t = MultiCoreMatmulTiling("Ascend910B1")
    assert t.SetDim(0) == -1 and t.SetDim(49) == -1 and t.SetDim(48) == 0
    assert t.SetBufferSpace(600 * 1024) == -1 and t.SetBufferSpace(-1, 200 * 1024) == -1
    assert t.SetShape(0, 4, 4) == -1 and t.SetOrgShape(4, -2, 4) == -1
    assert t.SetFixSplit(0) == -1 and t.SetSingleShape(-5) == -1
    assert t.SetTraverse(mt.MatrixTraverse.NOSET) == -1
    assert t.SetAType(TP.GM, CF.ND, "not a type") == -1
