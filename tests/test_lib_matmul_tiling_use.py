"""How Matmul reads a TCubeTiling's stepKa/stepKb and dbL0A/B/C when they hold values the host
tiling never gives (0: a tiling built by hand that leaves them unset), following the
library's implementation (npusim.ascendc.lib.matmul_tiling_use cites the files): NORM with
16/32-bit operands does not read the K steps, the L0A/L0B ping-pong is off only when either
db field is 1, two L0C buffers only for dbL0C 2; MDL (and NORM with int8) divides by / reads
the K steps, so 0 stays refused."""
import numpy as np
import pytest

from npusim import KernelError
from npusim.ascendc import *  # noqa: F403
from npusim.ascendc.lib import matmul_tiling_use as use

from test_cube_layouts import aic_run, gm_tensor

GM, ND = TPosition.GM, CubeFormat.ND


@pytest.mark.parametrize("db_a,db_b,want", [(1, 1, 1), (2, 2, 2), (2, 1, 1), (1, 2, 1),
                                            (0, 0, 2), (0, 2, 2), (0, 1, 1)])
def test_l0a_l0b_ping_pong_is_off_only_when_a_db_field_is_one(db_a, db_b, want):
    assert use.l0ab_buffers(db_a, db_b) == want


@pytest.mark.parametrize("db_c,want", [(2, 2), (1, 1), (0, 1), (-1, 1), (3, 1)])
def test_l0c_is_double_buffered_only_for_two(db_c, want):
    assert use.l0c_buffers(db_c) == want


def hand_tiling(m, n, k, base, **over):
    """One core's m x n x k with base blocks of base^3, the fields a hand-written tiling
    sets (no stepKa/stepKb, no db fields)."""
    t = TCubeTiling(usedCoreNum=1, M=m, N=n, Ka=k, Kb=k, singleCoreM=m, singleCoreN=n,
                    singleCoreK=k, baseM=base, baseN=base, baseK=base, depthA1=1, depthB1=1,
                    stepM=1, stepN=1)
    for name, value in over.items():
        setattr(t, name, value)
    return t


def run_matmul(tiling, dtype, c_dtype, a, b, cfg=None):
    m, n, k = tiling.M, tiling.N, tiling.Ka

    def kernel(addr):
        args = [MatmulType(GM, ND, dtype), MatmulType(GM, ND, dtype), MatmulType(GM, ND, c_dtype)]
        mm = Matmul(*args) if cfg is None else Matmul(*args, None, cfg)
        REGIST_MATMUL_OBJ(TPipe(), 0, mm, tiling)
        mm.SetTensorA(gm_tensor(dtype, addr["a"], m * k))
        mm.SetTensorB(gm_tensor(dtype, addr["b"], k * n))
        mm.IterateAll(gm_tensor(c_dtype, addr["c"], m * n))
        mm.End()
    got, prof = aic_run(kernel, {"a": a, "b": b}, {"c": (m * n, c_dtype)})
    return got["c"].reshape(m, n), prof


def test_norm_runs_a_tiling_without_k_steps_or_db_fields():
    """Four k steps of 32: small integers, so every product and sum is exact in fp32."""
    m, n, k = 64, 32, 128
    rng = np.random.default_rng(7)
    a = rng.integers(-4, 4, (m, k)).astype(np.float16)
    b = rng.integers(-4, 4, (k, n)).astype(np.float16)
    c, prof = run_matmul(hand_tiling(m, n, k, 32), half, float32, a, b)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
    assert prof.pipe_time_us["aic_mac_time"] > 0


def test_mdl_and_int8_still_need_the_k_steps():
    """MDL's outer K loop divides by baseK * stepKa; NORM's int8 ND -> NZ copy reads it."""
    m, n, k = 32, 32, 64
    a, b = np.ones((m, k), np.float16), np.ones((k, n), np.float16)
    with pytest.raises(KernelError, match="stepKa = 0, stepKb = 0.*MDL template divides"):
        run_matmul(hand_tiling(m, n, k, 32), half, float32, a, b, cfg=CFG_MDL)
    with pytest.raises(KernelError, match="stepKa = 0.*int8 ND -> NZ copy"):
        run_matmul(hand_tiling(m, n, k, 32), int8_t, int32_t, a.astype(np.int8),
                   b.astype(np.int8))
    with pytest.raises(KernelError, match="depthA1 = 0"):
        run_matmul(hand_tiling(m, n, k, 32, depthA1=0), half, float32, a, b)
