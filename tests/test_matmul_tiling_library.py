"""MultiCoreMatmulTiling against Ascend C's own host tiling on A2/A3, case by case.

The reference values below were worked out by hand from the rules of asc-devkit
``impl/adv_api/tiling/matmul/matmul_tiling_algorithm.cpp`` (snapshot 82b89a1:
GetMultiCoreScenario, GetMultiCoreBasicBlock, CalcMultiCoreDimsSmallShape, CalcL1Tiling,
UpdateStepK), restated in :mod:`npusim.ascendc.lib.matmul_tiling_split`; each case's
arithmetic is in its comment. The fp16 128 x 256 x 64 case is also the L1 tiling the
asc-devkit sample ``examples/01_simd_cpp_api/04_advanced_api/00_matmul/matmul_l2cache``
writes by hand for its MDL template (stepM = stepN = 1, stepKa = stepKb = 4, depthA1 =
depthB1 = 8). The fields compared are the base block, the L1 depth/step factors and the L0
buffer counts; the cores' split (singleCoreM/N) is checked separately. These fields are the
same for the NORM and MDL templates (the library's L1 rules do not read the template).
L1 is 524032 B (GetCoreMemSize(L1) on A2/A3), L0A/L0B 64 KiB, L0C 128 KiB. The scenario
applies only without SetShape (GetMultiCoreScenario reads SetShape's M and N): these cases
call SetOrgShape alone. tests/test_matmul_tiling_devkit.py compares the same tiling with the
library's own code built from the user's devkit, over a table of shapes."""
import pytest

from npusim.ascendc import matmul_tiling as mt
from npusim.ascendc import MatmulApiTiling, MultiCoreMatmulTiling, TCubeTiling

DT, CF, TP = mt.DataType, mt.CubeFormat, mt.TPosition
ACC = {DT.DT_FLOAT16: DT.DT_FLOAT, DT.DT_FLOAT: DT.DT_FLOAT, DT.DT_INT8: DT.DT_INT32}

FIELDS = ("baseM", "baseN", "baseK", "depthA1", "depthB1", "stepM", "stepN", "stepKa",
          "stepKb", "dbL0A", "dbL0B", "dbL0C")

# (m, n, k, dtype, trans_a, trans_b, bias) -> the library's fields, in FIELDS order
CASES = {
    # SPLIT_MN (M >= 128, M*N = 1048576 > 26214 * 24): base (128, 256, 128 B / 2 = 64).
    # depthA = 524032 // 2 // 128 // 64 // 2 = 15, depthB = 524288 // 2 // 256 // 64 // 2 = 8
    # (15 x 16 KiB + 8 x 32 KiB = 507904 B fits); stepKa = 7: 7 x 128 B = 896 B, not a
    # multiple of 512 and 128 B divides 512 -> 4 (512 B); stepKb = 4 (512 B, whole 256 B
    # units) -> depth 8 / 8. Also the matmul_l2cache sample's hand-written MDL tiling.
    (1024, 1024, 1024, DT.DT_FLOAT16, False, False, False): (128, 256, 64, 8, 8, 1, 1, 4, 4, 2, 2, 1),
    # the bias row (256 x 4 B) still leaves 507904 B <= 524032 - 1024: unchanged
    (1024, 1024, 1024, DT.DT_FLOAT16, False, False, True): (128, 256, 64, 8, 8, 1, 1, 4, 4, 2, 2, 1),
    # K = 128: stepKa 7 already covers K (7 x 64 >= 128, left whole), stepKb 4 too; the
    # larger is cut to a multiple of the smaller: 7 // 4 * 4 = 4
    (1024, 1024, 128, DT.DT_FLOAT16, False, False, False): (128, 256, 64, 8, 8, 1, 1, 4, 4, 2, 2, 1),
    # both transposed: base (256, 128, 64); depthA = 262016 // 256 // 64 // 2 = 7, depthB =
    # 262144 // 128 // 64 // 2 = 16; stepKa = 3 (384 B: over 256, not a multiple -> 2),
    # stepKb = 8 (1024 B, a multiple of 512); stepKb cut to a multiple of 2: 8
    (1024, 1024, 1024, DT.DT_FLOAT16, True, True, False): (256, 128, 64, 4, 16, 1, 1, 2, 8, 2, 2, 1),
    # float: base (128, 256, 32); depthA = 262016 // 128 // 32 // 4 = 15, depthB = 8; stepKa
    # 7 x 32 x 4 = 896 B -> 4; the 16-row float check (8 x 4096 + 8 x 8192) x 4 B fits L1
    (1024, 1024, 1024, DT.DT_FLOAT, False, False, False): (128, 256, 32, 8, 8, 1, 1, 4, 4, 2, 2, 1),
    # int8: base (128, 256, 128); depthA = 262016 // 128 // 128 = 15, depthB = 8; 7 x 128 B -> 4
    (1024, 1024, 1024, DT.DT_INT8, False, False, False): (128, 256, 128, 8, 8, 1, 1, 4, 4, 2, 2, 1),
    # SPLIT_SMALL_MN (M*N = 262144 < 26214 * 24), M <= 128 and N >= 128 x 24: N over all 24
    # cores, part 4096 // 24 = 170 columns -> baseN 176 (16-aligned), baseM 64 (M's rows);
    # baseK = min(16384 // 64, 16384 // 176 = 93) aligned down to 16 = 80; depthA = 262016 //
    # 64 // 80 // 2 = 25, depthB = 262144 // 176 // 80 // 2 = 9; stepKa 12 (1920 B: 160 B
    # does not divide 512, left), stepKb 4 (640 B, likewise); 12 // 4 * 4 = 12
    (64, 4096, 1024, DT.DT_FLOAT16, False, False, False): (64, 176, 80, 24, 8, 1, 1, 12, 4, 2, 2, 1),
}


def tiling(m, n, k, dtype, trans_a, trans_b, bias, dim=24):
    t = MultiCoreMatmulTiling("Ascend910B1")
    assert t.SetDim(dim) == 0
    t.SetAType(TP.GM, CF.ND, dtype, trans_a)
    t.SetBType(TP.GM, CF.ND, dtype, trans_b)
    t.SetCType(TP.GM, CF.ND, ACC[dtype])
    t.SetBiasType(TP.GM, CF.ND, ACC[dtype])
    t.SetOrgShape(m, n, k)      # no SetShape: the library's scenario test reads its M and N
    t.SetBias(bias)
    cube = TCubeTiling()
    assert t.GetTiling(cube) == 0, t.error
    return t, cube


@pytest.mark.parametrize("case", list(CASES), ids=lambda c: "x".join(map(str, c[:3])) + f"-{c[3].name}"
                         + ("-tA" if c[4] else "") + ("-tB" if c[5] else "") + ("-bias" if c[6] else ""))
def test_fields_are_the_librarys(case):
    _, cube = tiling(*case)
    assert tuple(getattr(cube, f) for f in FIELDS) == CASES[case]


def test_split_mn_scores_the_factor_pairs_of_dim():
    """1024^3 fp16 on 24: of 1x24 .. 24x1, 8 x 3 scores best: a part of 128 x 384 (1024 / 3
    = 342 rounded up to 256 B = 128 columns, still 3 parts) is one 128 x 256 block and one
    128 x 128 tail: cycles 512 + 256, traffic (384 x 64 + 256 x 64) x 2 B = 81920 B, the
    highest cycles per byte of the pairs."""
    t, cube = tiling(1024, 1024, 1024, DT.DT_FLOAT16, False, False, False)
    assert (cube.usedCoreNum, cube.singleCoreM, cube.singleCoreN) == (24, 128, 384)
    assert t.GetCoreNum() == (24, 8, 3)


def test_set_single_shape_leaves_the_scenario():
    """SetSingleShape takes the library's general search, not the split scenario: the part
    stays the one set (the scenario would split 8 x 3)."""
    t = MultiCoreMatmulTiling("Ascend910B1")
    t.SetDim(24)
    for f in (t.SetAType, t.SetBType):
        f(TP.GM, CF.ND, DT.DT_FLOAT16)
    t.SetCType(TP.GM, CF.ND, DT.DT_FLOAT)
    t.SetOrgShape(1024, 1024, 1024)
    t.SetShape(1024, 1024, 1024)
    t.SetSingleShape(256, 256, 1024)
    cube = TCubeTiling()
    assert t.GetTiling(cube) == 0
    assert (cube.singleCoreM, cube.singleCoreN, cube.usedCoreNum) == (256, 256, 16)


# MatmulApiTiling (one core): the base is npusim's (the library's GetL0Factors search is not
# restated), the L1 factors the library's GetL1Factors for that base
# (npusim/ascendc/lib/matmul_tiling_l1.py). (m, n, k, fix) -> (depthA1, depthB1, stepM,
# stepN, stepKa, stepKb); units below: M, N in 16 rows, K in 16 halves, 512 B a fractal.
ONE_CORE = {
    # base (128, 256, 64): mL0 8, nL0 16, kL0 4, K 64 units; no mode with a whole operand
    # fits, so "neither": both double-buffered; B's k run is capped by MIN_MTE1_LOAD:
    # 32 // (kL0 + mL0) = 2 steps; A's run: (524032 - 4 x 16 KiB) // 8 KiB = 55 units,
    # 13 steps, cut to 8 (a divisor of the 16 steps); B's: (524032 - 32 x 8 KiB) // 16 KiB =
    # 15 units, 3 steps, capped to 2 -> stepKa 8, stepKb 2, depth 16 / 4.
    (1024, 1024, 1024, None): (16, 4, 1, 1, 8, 2),
    # base (32, 32, 64), 64 x 64 x 256: A (2 blocks x 16 units) and B fit together: mode
    # "both full" (single-buffered, 64 KiB) reads M + N rows, as little as any mode -> the
    # tie goes to it: stepKa = stepKb = 4, stepM = stepN = 2, depth 8 / 8.
    (64, 64, 256, (32, 32, 64)): (8, 8, 2, 2, 4, 4),
    # base (128, 256, 64), 512 x 512 x 64 (one k step): "both full": stepM 4, stepN 2.
    (512, 512, 64, None): (4, 2, 4, 2, 1, 1),
}


@pytest.mark.parametrize("case", list(ONE_CORE), ids=lambda c: "x".join(map(str, c[:3])))
def test_one_core_l1_factors_are_the_librarys(case):
    m, n, k, fix = case
    t = MatmulApiTiling("Ascend910B1")
    for f in (t.SetAType, t.SetBType):
        f(TP.GM, CF.ND, DT.DT_FLOAT16)
    t.SetCType(TP.GM, CF.ND, DT.DT_FLOAT)
    t.SetOrgShape(m, n, k)
    t.SetShape(m, n, k)
    if fix:
        t.SetFixSplit(*fix)
    cube = TCubeTiling()
    assert t.GetTiling(cube) == 0, t.error
    got = (cube.depthA1, cube.depthB1, cube.stepM, cube.stepN, cube.stepKa, cube.stepKb)
    assert got == ONE_CORE[case]


@pytest.mark.parametrize("case", list(CASES)[:3] + [list(CASES)[-1]], ids=str)
def test_norm_and_mdl_get_the_same_fields(case):
    """SetMatmulConfigParams(0) (NORM) or (1) (MDL, the default): the same tiling, as the
    library's L1 rules do not read the template; options A2/A3 lack make GetTiling fail."""
    got = []
    for mode in (0, 1):
        t = MultiCoreMatmulTiling("Ascend910B1")
        t.SetDim(24)
        m, n, k, dtype, ta, tb, bias = case
        t.SetAType(TP.GM, CF.ND, dtype, ta)
        t.SetBType(TP.GM, CF.ND, dtype, tb)
        t.SetCType(TP.GM, CF.ND, ACC[dtype])
        t.SetBiasType(TP.GM, CF.ND, ACC[dtype])
        t.SetOrgShape(m, n, k)
        t.SetBias(bias)
        t.SetMatmulConfigParams(mode)
        cube = TCubeTiling()
        assert t.GetTiling(cube) == 0
        got.append(tuple(getattr(cube, f) for f in FIELDS))
    assert got[0] == got[1] == CASES[case]
    t.SetMatmulConfigParams(1, True)
    assert t.GetTiling(TCubeTiling()) == -1 and "enableL1CacheUB" in t.error
