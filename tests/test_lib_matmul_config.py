"""The Matmul API's templates (MatmulConfig: CFG_NORM, CFG_MDL, GetMMConfig, the constant
tiling GetMatmulApiTiling / MatmulApiStaticTiling with REGIST_MATMUL_OBJ(..., mm, None)),
its L1 double buffer (a chunk freed after its last k step, so MTE2 prefetches) and the
L1 -> L0 loads the library issues, against the numpy rendering of test_lib_matmul."""
import numpy as np
import pytest

from npusim import KernelError
from npusim.ascendc import *  # noqa: F403
from npusim.ascendc.types import Pipe

from test_cube_layouts import aic_run, gm_tensor
from test_lib_matmul import F32, GM, ND, host_tiling, rand, reference


def test_templates_are_the_library_configs():
    """CFG_NORM / CFG_MDL as tiling.h's GetNormalConfig / GetMDLConfig set them; GetMMConfig
    starts from the mode's template and sets what each params struct carries."""
    assert (CFG_NORM.doNorm, CFG_NORM.doMultiDataLoad, CFG_NORM.enUnitFlag) == (True, False, True)
    assert (CFG_MDL.doNorm, CFG_MDL.doMultiDataLoad, CFG_MDL.enUnitFlag) == (False, True, False)
    assert CFG_MDL.batchMode == BatchMode.NONE and CFG_NORM.template == "NORM"
    cfg = GetMMConfig(MatmulConfigMode.CONFIG_MDL, MatmulShapeParams(64, 128, 512, 64, 128, 64),
                      MatmulFuncParams(iterateOrder=IterateOrder.ORDER_N))
    assert cfg.template == "MDL" and cfg.is_constant
    assert (cfg.singleCoreK, cfg.basicN, cfg.iterateOrder) == (512, 128, IterateOrder.ORDER_N)
    assert GetMMConfig(MatmulConfigMode.CONFIG_NORM) == CFG_NORM
    with pytest.raises(KernelError, match="argument 2"):
        GetMMConfig(MatmulConfigMode.CONFIG_MDL, (64, 64, 64))
    with pytest.raises(KernelError, match="CONFIG_SPECIALMDL"):
        GetMMConfig(MatmulConfigMode.CONFIG_SPECIALMDL)


def test_static_tiling_fields():
    """GetMatmulApiTiling: one core's shapes as M/N/Ka/Kb, the basic block as base, dbL0C 1
    (constant_tiling.h); without shapes only the base fields."""
    a, c = MatmulType(GM, ND, half), MatmulType(GM, ND, float32)
    cfg = GetMMConfig(MatmulConfigMode.CONFIG_MDL, MatmulShapeParams(64, 128, 512, 64, 128, 64))
    st = GetMatmulApiTiling(a, a, c, c, cfg)
    assert (st.M, st.N, st.Ka, st.singleCoreK) == (64, 128, 512, 512)
    assert (st.baseM, st.baseN, st.baseK, st.dbL0C, st.dbL0A) == (64, 128, 64, 1, 2)
    assert st.is_complete and st.cfg == cfg
    assert st.depthA1 % (st.stepM * st.stepKa) == 0
    base_only = GetMatmulApiTiling(a, a, c, c, MatmulConfig(basicM=32, basicN=32, basicK=32))
    assert (base_only.baseM, base_only.singleCoreM, base_only.is_complete) == (32, -1, False)


def _kernel(m, n, k, mm_cfg, tiling, init_later=None):
    def kernel(addr):
        pipe = TPipe()
        mm = Matmul(MatmulType(GM, ND, half), MatmulType(GM, ND, half),
                    MatmulType(GM, ND, float32), MatmulType(GM, ND, float32), mm_cfg)
        REGIST_MATMUL_OBJ(pipe, 0, mm, tiling)
        if init_later is not None:
            mm.Init(init_later)
        mm.SetOrgShape(m, n, k)
        mm.SetTensorA(gm_tensor(half, addr["a"], m * k))
        mm.SetTensorB(gm_tensor(half, addr["b"], k * n))
        mm.IterateAll(gm_tensor(float32, addr["c"], m * n))
        mm.End()
    return kernel


def _run(m, n, k, mm_cfg, tiling, init_later=None, **kw):
    rng = np.random.default_rng(5)
    a, b = rand(rng, (m, k), np.float16), rand(rng, (k, n), np.float16)
    got, prof = aic_run(_kernel(m, n, k, mm_cfg, tiling, init_later), {"a": a, "b": b},
                        {"c": (m * n, F32)}, **kw)
    np.testing.assert_array_equal(got["c"].reshape(m, n), reference(a, b, None, F32))
    return prof


def test_mdl_config_and_constant_tiling_against_numpy():
    """Matmul(A, B, C, BIAS, CFG_MDL) with a host tiling; the constant form: Matmul(..., a
    MatmulApiStaticTiling) registered with a null tiling (C++ (TCubeTiling*)nullptr); a plain
    config with a null tiling takes its tiling at Init."""
    m, n, k = 48, 64, 160
    tiling = host_tiling(m, n, k, np.float16, F32, dim=1, fix=(16, 32, 32))
    _run(m, n, k, CFG_MDL, tiling)
    a, c = MatmulType(GM, ND, half), MatmulType(GM, ND, float32)
    cfg = GetMMConfig(MatmulConfigMode.CONFIG_MDL, MatmulShapeParams(m, n, k, 16, 32, 32))
    _run(m, n, k, GetMatmulApiTiling(a, a, c, c, cfg), None)
    _run(m, n, k, CFG_NORM, None, init_later=tiling)


def test_config_errors():
    """A template the simulator does not model, an MM_CFG of another type, a null tiling
    with a static tiling that has no shapes: KernelError naming it."""
    m = n = k = 32
    tiling = host_tiling(m, n, k, np.float16, F32, dim=1)
    with pytest.raises(KernelError, match="BasicBlock"):
        _run(m, n, k, MatmulConfig(doNorm=False, doBasicBlock=True), tiling)
    with pytest.raises(KernelError, match="MM_CFG"):
        _run(m, n, k, "CFG_MDL", tiling)
    with pytest.raises(KernelError, match="isNBatch"):
        _run(m, n, k, MatmulConfig(isNBatch=True), tiling)
    a, c = MatmulType(GM, ND, half), MatmulType(GM, ND, float32)
    shapeless = GetMatmulApiTiling(a, a, c, c, CFG_MDL)
    with pytest.raises(KernelError, match="null tiling"):
        _run(m, n, k, shapeless, None)


def mdl_profile(k=768):
    """One core, fp16 64 x 128 x k, base 64 x 128 x 64, stepKa = stepKb = 4 and two
    chunks of each in L1 (depth 8): the MDL large packets of a K-bound problem."""
    m, n = 64, 128
    t = host_tiling(m, n, k, np.float16, F32, dim=1, fix=(64, 128, 64))
    t.stepM = t.stepN = 1
    t.stepKa = t.stepKb = 4
    t.depthA1 = t.depthB1 = 8
    prof = _run(m, n, k, CFG_MDL, t, keep_spans=True)
    busy = {p.name: int(v[0]) for p, v in prof.timing.pipe_busy.items()}
    task = int(prof.timing.block_end[0] - prof.timing.block_start[0])
    return task, busy, prof


def test_l1_chunks_are_double_buffered(scalar_issue_off):
    """(The scalar unit's work off: its kernel entry would add to the Task what no pipe
    sum below counts.) A chunk is freed after its last k step is loaded (scheduler_mdl_base.h
    ClearL1BufferCache), so the next chunk's copy waits only for that chunk's loads: MTE2
    copies the 3 A and 3 B chunks back to back, never idle, and the kernel ends one chunk's
    Mmads and the Fixpipe after it. (Freed at eviction, each copy waited for the loads of
    the chunk still in use: MTE2 and MTE1 took turns.)"""
    task, busy, prof = mdl_profile()
    copies = [(s, e) for pipe, s, e, _, _ in prof.timing.spans[0] if pipe.name == "PIPE_MTE2"]
    assert len(copies) == 6
    assert copies[-1][1] - copies[0][0] == busy["PIPE_MTE2"]          # no gap
    assert task < busy["PIPE_MTE2"] + busy["PIPE_MTE1"] + busy["PIPE_FIX"]


@pytest.mark.parametrize("tb,whole,per_step", [(False, True, 2), (True, True, 2), (True, False, 3)])
def test_two_loads_per_k_step(tb, whole, per_step):
    """L1 -> L0 as the A2 library issues it (load_to_l0_utils.h GetLoadInstrType,
    load_to_l0b_loadInstr.h): one Load3Dv2 for A's slice; B kept K x N one Load3Dv2, B kept
    N x K one LoadData2D with repeats when its slice is the chunk's whole N (else one per
    16-row block of N: the chunk holds two slices here, 2 loads for B)."""
    m, n, k = 32, 64, 128
    base_n = 64 if whole else 32
    tiling = host_tiling(m, n, k, np.float16, F32, tb=tb, dim=1, fix=(32, base_n, 32))
    tiling.stepN = 1 if whole else 2
    tiling.depthB1 = tiling.stepN * tiling.stepKb * 2
    rng = np.random.default_rng(1)
    a, b = rand(rng, (m, k), np.float16), rand(rng, (k, n), np.float16)

    def kernel(addr):
        pipe = TPipe()
        mm = Matmul(MatmulType(GM, ND, half), MatmulType(GM, ND, half),
                    MatmulType(GM, ND, float32), None, CFG_MDL)
        REGIST_MATMUL_OBJ(pipe, 0, mm, tiling)
        mm.SetTensorA(gm_tensor(half, addr["a"], m * k))
        mm.SetTensorB(gm_tensor(half, addr["b"], k * n), tb)
        mm.IterateAll(gm_tensor(float32, addr["c"], m * n))
        mm.End()

    got, prof = aic_run(kernel, {"a": a, "b": b.T.copy() if tb else b}, {"c": (m * n, F32)},
                        keep_spans=True)
    np.testing.assert_array_equal(got["c"].reshape(m, n), reference(a, b, None, F32))
    steps = (n // base_n) * (k // 32)
    loads = sum(1 for r in prof.records[0] if r[0] == 0 and Pipe(r[1]).name == "PIPE_MTE1")
    assert loads == per_step * steps


@pytest.mark.parametrize("order", [IterateOrder.UNDEF, IterateOrder.ORDER_N])
def test_config_iterate_order_overrides_the_tiling(order):
    """MatmulFuncParams.iterateOrder ORDER_N walks N first whatever the tiling's iterateOrder
    (0) says; UNDEF keeps the tiling's: the blocks land in that order with enSequentialWrite."""
    m, n, k = 32, 32, 32
    tiling = host_tiling(m, n, k, np.float16, F32, dim=1, fix=(16, 16, 32))
    assert tiling.iterateOrder == 0
    cfg = GetMMConfig(MatmulConfigMode.CONFIG_MDL, MatmulFuncParams(iterateOrder=order))
    rng = np.random.default_rng(4)
    a, b = rand(rng, (m, k), np.float16), rand(rng, (k, n), np.float16)

    def kernel(addr):
        pipe = TPipe()
        mm = Matmul(MatmulType(GM, ND, half), MatmulType(GM, ND, half),
                    MatmulType(GM, ND, float32), None, cfg)
        REGIST_MATMUL_OBJ(pipe, 0, mm, tiling)
        mm.SetTensorA(gm_tensor(half, addr["a"], m * k))
        mm.SetTensorB(gm_tensor(half, addr["b"], k * n))
        seq = gm_tensor(float32, addr["seq"], m * n)
        i = 0
        while mm.Iterate():
            mm.GetTensorC(seq[i * 256], 0, True)
            i += 1
        mm.End()

    got, _ = aic_run(kernel, {"a": a, "b": b}, {"seq": (m * n, F32)})
    want = reference(a, b, None, F32).reshape(2, 16, 2, 16)       # (mi, row, ni, col)
    first = (0, 2) if order == IterateOrder.ORDER_N else (2, 0)   # outer axis, inner axis
    tiles = want.transpose(first[0], first[1], 1, 3).reshape(-1)
    np.testing.assert_array_equal(got["seq"], tiles)


def test_constant_tiling_saves_the_apis_scalar_work():
    """The same instruction stream with the tiling read at run time and known at compile
    time (the static tiling's own fields passed as a TCubeTiling, against a null tiling):
    PIPE_S differs by the Matmul API's own scalar work (lib/matmul_scalar.py, an estimate):
    Init 22 field reads x 1 cycle + (30 - 6) ops, then per block (3 x 2 blocks of 16 x 32)
    20 - 8 ops and per k step (5 of 32 per block) 8 - 4 ops, each op 1.83 cycles:
    22 + 24 x 1.83 + 6 x 12 x 1.83 + 30 x 4 x 1.83 = 417.28 cycles."""
    m, n, k = 48, 64, 160
    a, c = MatmulType(GM, ND, half), MatmulType(GM, ND, float32)
    st = GetMatmulApiTiling(a, a, c, c, GetMMConfig(MatmulConfigMode.CONFIG_MDL,
                                                     MatmulShapeParams(m, n, k, 16, 32, 32)))
    run_time = _run(m, n, k, st, st.to_cube_tiling())
    constant = _run(m, n, k, st, None)
    s = Pipe.PIPE_S
    extra = run_time.timing.pipe_busy[s][0] - constant.timing.pipe_busy[s][0]
    assert extra == pytest.approx(22 + 24 * 1.83 + 6 * 12 * 1.83 + 30 * 4 * 1.83, abs=1e-6)
    assert run_time.pipe_time_us["aic_scalar_time"] > constant.pipe_time_us["aic_scalar_time"]
