"""Matmul::IterateBatch (the NORMAL layout: matrices one after another in GM) in an AIC_ONLY
kernel, host tiling with SetALayout/SetBLayout/SetCLayout/SetBatchNum, several blocks each
computing its singleCoreM x singleCoreN part of every product, against the numpy rendering of
the cube's arithmetic of test_lib_matmul (each product separately)."""
import numpy as np
import pytest

from npusim import KernelError
from npusim.ascendc import *  # noqa: F403

from test_cube_layouts import aic_run, gm_tensor
from test_lib_matmul import F32, GM, ND, rand, reference


def batch_tiling(m, n, k, dtype, batch_a, batch_b, dim, layout=True):
    t = MultiCoreMatmulTiling("Ascend910B1")
    assert t.SetDim(dim) == 0
    t.SetAType(GM, ND, dtype)
    t.SetBType(GM, ND, dtype)
    t.SetCType(GM, ND, F32)
    t.SetOrgShape(m, n, k)
    t.SetShape(m, n, k)
    batch = max(batch_a, batch_b)
    if layout:
        assert t.SetALayout(batch_a, m, 1, 1, k) == 0
        assert t.SetBLayout(batch_b, k, 1, 1, n) == 0
        assert t.SetCLayout(batch, m, 1, 1, n) == 0
        assert t.SetBatchNum(batch) == 0
    cube = TCubeTiling()
    assert t.GetTiling(cube) == 0, t.error
    return cube


def batch_kernel(tiling, dtype, batch_a, batch_b, strides=(0, 0)):
    m, n, k = tiling.M, tiling.N, tiling.Ka
    batch = max(batch_a, batch_b)
    span_a = (strides[0] or m * k) * batch_a
    span_b = (strides[1] or k * n) * batch_b

    def kernel(addr):
        pipe = TPipe()
        mm = Matmul(MatmulType(GM, ND, dtype), MatmulType(GM, ND, dtype), MatmulType(GM, ND, F32))
        REGIST_MATMUL_OBJ(pipe, 0, mm, tiling)
        m_blocks = -(-m // tiling.singleCoreM)
        m0 = GetBlockIdx() % m_blocks * tiling.singleCoreM
        n0 = GetBlockIdx() // m_blocks * tiling.singleCoreN
        a = gm_tensor(dtype, addr["a"], span_a)
        b = gm_tensor(dtype, addr["b"], span_b)
        c = gm_tensor(F32, addr["c"], batch * m * n)
        mm.SetTensorA(a[m0 * k])
        mm.SetTensorB(b[n0])
        mm.SetTail(min(tiling.singleCoreM, m - m0), min(tiling.singleCoreN, n - n0))
        mm.IterateBatch(c[m0 * n + n0], batch_a, batch_b, False, *strides)
        mm.End()
    return kernel


def run(m, n, k, batch_a, batch_b, dtype=np.float16, dim=4, pad_a=0, layout=True):
    tiling = batch_tiling(m, n, k, dtype, batch_a, batch_b, dim, layout)
    rng = np.random.default_rng(7)
    a = rand(rng, (batch_a, m * k + pad_a), dtype)          # pad_a elements between matrices
    b = rand(rng, (batch_b, k, n), dtype)
    batch = max(batch_a, batch_b)
    strides = (m * k + pad_a, 0) if pad_a else (0, 0)
    got, _ = aic_run(batch_kernel(tiling, dtype, batch_a, batch_b, strides),
                     {"a": a.reshape(-1), "b": b.reshape(-1)}, {"c": (batch * m * n, F32)},
                     block_dim=tiling.usedCoreNum)
    c = got["c"].reshape(batch, m, n)
    for i in range(batch):
        am = a[i if batch_a == batch else 0, :m * k].reshape(m, k)
        bm = b[i if batch_b == batch else 0]
        np.testing.assert_array_equal(c[i], reference(am, bm, None, F32), err_msg=f"product {i}")
    return tiling


def test_equal_batches_over_several_blocks():
    tiling = run(64, 96, 64, 3, 3, dim=4)
    assert tiling.usedCoreNum > 1
    assert (tiling.ALayoutInfoB, tiling.ALayoutInfoS, tiling.ALayoutInfoD) == (3, 64, 64)
    assert (tiling.CLayoutInfoS1, tiling.CLayoutInfoS2, tiling.BatchNum) == (64, 96, 3)


@pytest.mark.parametrize("batch_a,batch_b", [(1, 3), (2, 1)])
def test_a_batch_of_one_is_broadcast(batch_a, batch_b):
    run(32, 32, 32, batch_a, batch_b, dtype=np.float32, dim=1)


def test_matrix_stride_a_and_no_layout():
    """matrixStrideA gives A's spacing; without a layout B and C are Kb*N and M*N apart."""
    run(32, 48, 32, 2, 2, pad_a=96, dim=2, layout=False)


def test_unequal_batches_are_refused():
    tiling = batch_tiling(32, 32, 32, np.float16, 2, 3, 1)
    with pytest.raises(KernelError, match="only equal batches"):
        aic_run(batch_kernel(tiling, np.float16, 2, 3), {"a": np.zeros(2048, np.float16),
                                                         "b": np.zeros(3072, np.float16)},
                {"c": (3 * 1024, F32)}, block_dim=1)
