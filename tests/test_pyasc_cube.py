"""pyasc cube kernels on npusim: a cube-only matmul with asc.adv.Matmul (AIC_ONLY, the host
tiling from asc.lib.host), and the MIX form npusim refuses clearly.

(No ``from __future__ import annotations``: pyasc reads the annotations as objects.)
"""
import numpy as np
import pytest

asc = pytest.importorskip(
    "asc", reason="pyasc is not installed for this Python (pip install 'npusim[pyasc]'; pyasc "
    "1.1.1 has wheels for CPython 3.9-3.12 on manylinux): the pyasc front-end tests skip")

import asc.lib.host as host  # noqa: E402
import asc.lib.runtime as rt  # noqa: E402
import asc.runtime.config as config  # noqa: E402

import npusim.pyasc as npusim_pyasc  # noqa: E402
from npusim.pyasc import PyascNotSupported  # noqa: E402

pytest.importorskip("npusim.ascendc.lib.matmul", reason="npusim's Matmul API is not present")


@pytest.fixture(scope="module", autouse=True)
def on_npusim():
    npusim_pyasc.enable(soc="Ascend910B1")
    config.set_platform(config.Backend.Model)
    yield
    npusim_pyasc.disable()


@asc.jit(matmul_cube_only=True)
def cube_matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                       bias: asc.GlobalAddress, tiling: asc.adv.TCubeTiling,
                       workspace: asc.GlobalAddress):
    """C = A B + bias on the cube cores: each block its single_core_m x single_core_n part."""
    if asc.ascend_is_aic():
        asc.set_sys_workspace(workspace)
        blocks_m = tiling.m.ceildiv(tiling.single_core_m)
        m_index = asc.get_block_idx() % blocks_m
        n_index = asc.get_block_idx() // blocks_m
        ag = asc.GlobalTensor()
        bg = asc.GlobalTensor()
        cg = asc.GlobalTensor()
        biasg = asc.GlobalTensor()
        ag.set_global_buffer(a + m_index * tiling.single_core_m * tiling.k_a)
        bg.set_global_buffer(b + n_index * tiling.single_core_n)
        cg.set_global_buffer(c + m_index * tiling.single_core_m * tiling.n + n_index * tiling.single_core_n)
        biasg.set_global_buffer(bias + n_index * tiling.single_core_n)
        pipe = asc.TPipe()
        mm = asc.adv.Matmul(a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                            b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
                            c=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype),
                            bias=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, biasg.dtype))
        asc.adv.register_matmul(pipe, workspace, mm, tiling)
        mm.set_tensor_a(ag)
        mm.set_tensor_b(bg)
        mm.set_bias(biasg)
        mm.iterate_all(cg)
        mm.end()


@asc.jit
def mix_matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                      tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress):
    asc.set_sys_workspace(workspace)
    pipe = asc.TPipe()
    mm = asc.adv.Matmul(a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, a.dtype),  # <- MIX
                        b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, b.dtype),
                        c=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, c.dtype))
    asc.adv.register_matmul(pipe, workspace, mm, tiling)


def tiling_for(m, n, k, dim, bias=True):
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    t.set_b_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    t.set_c_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_bias_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_dim(dim)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.enable_bias(bias)
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    return tiling


def test_cube_only_matmul_with_bias():
    m, n, k = 64, 256, 96
    tiling = tiling_for(m, n, k, 4)
    assert tiling.used_core_num >= 2 and tiling.is_bias == 1     # the host struct is filled
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    bias = rng.uniform(-1, 1, (1, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    ws = np.zeros(1024, np.uint8)
    cube_matmul_kernel[tiling.used_core_num, rt.current_stream()](a, b, c, bias, tiling, ws)
    rec = npusim_pyasc.launches()[-1]
    assert rec.kernel_type.name == "KERNEL_TYPE_AIC_ONLY"
    assert rec.profile.pipe_time_us["aic_mac_time"] > 0
    # fp16 products are exact in float; the float sums of 96 terms differ from float64 by
    # at most a few ulp of their magnitude
    want = a.astype(np.float64) @ b.astype(np.float64) + bias
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


def test_mix_matmul_is_refused_naming_the_api():
    tiling = tiling_for(64, 64, 64, 2, bias=False)
    a = np.zeros((64, 64), np.float16)
    with pytest.raises(PyascNotSupported, match="asc.adv.Matmul on a vector core") as err:
        mix_matmul_kernel[1, rt.current_stream()](a, a.copy(), np.zeros((64, 64), np.float32),
                                                  tiling, np.zeros(1024, np.uint8))
    assert err.value.line.startswith("test_pyasc_cube.py:")
