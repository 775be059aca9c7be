"""pyasc cube kernels on npusim: a cube-only matmul with asc.adv.Matmul (AIC_ONLY, the host
tiling from asc.lib.host), and the MIX form (MIX_AIC_1_2: the AIVs call, their AIC computes),
to GM and into the AIVs' UB, checked against numpy on inputs whose fp32 results are exact.

(No ``from __future__ import annotations``: pyasc reads the annotations as objects.)
"""
import numpy as np
import pytest

asc = pytest.importorskip(
    "asc", reason="pyasc is not installed for this Python (pip install '.[pyasc]'; pyasc "
    "1.1.1 has wheels for CPython 3.9-3.12 on manylinux): the pyasc front-end tests skip")

import asc.lib.host as host  # noqa: E402
import asc.lib.runtime as rt  # noqa: E402

import npusim  # noqa: E402
import npusim.pyasc as npusim_pyasc  # noqa: E402

pytest.importorskip("npusim.ascendc.lib.matmul", reason="npusim's Matmul API is not present")


pytestmark = pytest.mark.usefixtures("pyasc_on_npusim")


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
    """The MIX form: every AIV computes its single_core_m x single_core_n part of C with
    iterate_all; its AIC, whose code ends at register_matmul, executes the calls."""
    asc.set_sys_workspace(workspace)
    blocks_m = tiling.m.ceildiv(tiling.single_core_m)
    m_index = asc.get_block_idx() % blocks_m
    n_index = asc.get_block_idx() // blocks_m
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    ag.set_global_buffer(a + m_index * tiling.single_core_m * tiling.k_a)
    bg.set_global_buffer(b + n_index * tiling.single_core_n)
    cg.set_global_buffer(c + m_index * tiling.single_core_m * tiling.n + n_index * tiling.single_core_n)
    pipe = asc.TPipe()
    mm = asc.adv.Matmul(a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                        b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
                        c=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype))
    asc.adv.register_matmul(pipe, workspace, mm, tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    mm.iterate_all(cg)
    mm.end()


@asc.jit
def mix_relu_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                    bias: asc.GlobalAddress, alpha: float, tiling: asc.adv.TCubeTiling,
                    workspace: asc.GlobalAddress):
    """The MIX form with C in VECCALC: each AIV iterates over its part's base blocks,
    get_tensor_c brings each into its UB, leaky_relu there, then out to C."""
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
                        c=asc.adv.MatmulType(asc.TPosition.VECCALC, asc.CubeFormat.ND, cg.dtype),
                        bias=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, biasg.dtype))
    asc.adv.register_matmul(pipe, workspace, mm, tiling)
    que = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=que, num=1, len=tiling.base_m * tiling.base_n * 4)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    mm.set_bias(biasg)
    m_iter = tiling.single_core_m // tiling.base_m
    with mm.iterate() as count:
        y = que.alloc_tensor(c.dtype)
        mm.get_tensor_c(y, en_sequential_write=True)
        asc.leaky_relu(y, y, alpha, count=tiling.base_m * tiling.base_n)
        que.enque(y)
        y = que.deque(c.dtype)
        offset = count % m_iter * tiling.base_m * tiling.n + count // m_iter * tiling.base_n
        params = asc.DataCopyParams(block_count=tiling.base_m, block_len=tiling.base_n * 4 // 32,
                                    src_stride=0, dst_stride=(tiling.n - tiling.base_n) * 4 // 32)
        asc.data_copy(cg[offset:], y, repeat_params=params)
        que.free_tensor(y)
    mm.end()


def tiling_for(m, n, k, dim, bias=True, c_pos="GM", base=None):
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    t.set_b_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    t.set_c_type(getattr(host.TPosition, c_pos), host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_bias_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_dim(dim)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.enable_bias(bias)
    if base:
        t.set_fix_split(*base, -1)
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


def small_ints(rng, shape, dtype):
    """Integers in [-4, 4): every product and sum is exact in fp32, so C is exact."""
    return rng.integers(-4, 4, shape).astype(dtype)


def test_mix_matmul_each_aiv_computes_its_part():
    m, n, k = 128, 128, 64
    tiling = tiling_for(m, n, k, 4, bias=False)
    assert tiling.used_core_num == 4                # 4 AIVs: 2 blocks of 1 AIC + 2 AIVs
    rng = np.random.default_rng(1)
    a, b = small_ints(rng, (m, k), np.float16), small_ints(rng, (k, n), np.float16)
    c = np.zeros((m, n), np.float32)
    mix_matmul_kernel[tiling.used_core_num // 2, rt.current_stream()](
        a, b, c, tiling, np.zeros(16 << 20, np.uint8))
    rec = npusim_pyasc.launches()[-1]
    assert rec.kernel_type.name == "KERNEL_TYPE_MIX_AIC_1_2"
    assert rec.profile.core_kinds == ["AIC", "AIC", "AIV", "AIV", "AIV", "AIV"]
    assert rec.profile.pipe_time_us["aic_mac_time"] > 0
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_mix_matmul_into_the_ub_with_leaky_relu():
    m, n, k, alpha = 64, 64, 64, 0.25
    tiling = tiling_for(m, n, k, 2, c_pos="VECCALC", base=(32, 32))
    rng = np.random.default_rng(2)
    a, b = small_ints(rng, (m, k), np.float16), small_ints(rng, (k, n), np.float16)
    bias = small_ints(rng, (1, n), np.float32)
    c = np.zeros((m, n), np.float32)
    mix_relu_kernel[tiling.used_core_num // 2, rt.current_stream()](
        a, b, c, bias, alpha, tiling, np.zeros(16 << 20, np.uint8))
    prof = npusim_pyasc.launches()[-1].profile
    assert prof.pipe_time_us["aiv_mte2_time"] > 0          # the tiles into the AIVs' UB
    want = a.astype(np.float32) @ b.astype(np.float32) + bias
    np.testing.assert_array_equal(c, np.where(want < 0, want * np.float32(alpha), want))


def test_mix_matmul_needs_a_workspace_for_its_message_queues():
    tiling = tiling_for(64, 64, 64, 2, bias=False)
    a = np.zeros((64, 64), np.float16)
    with pytest.raises(npusim.GmAccessError, match="leaves the allocation") as err:
        mix_matmul_kernel[1, rt.current_stream()](a, a.copy(), np.zeros((64, 64), np.float32),
                                                  tiling, np.zeros(1024, np.uint8))
    assert "test_pyasc_cube.py:" in str(err.value)


def test_ceildiv_rounds_up_whatever_the_signs():
    """arith.ceildivsi: the tiling offsets of a MIX kernel use it (512 / 176 -> 3)."""
    from npusim.pyasc._values import Int
    for x, y, want in ((512, 176, 3), (528, 176, 3), (0, 5, 0), (-7, 2, -3), (7, -2, -3),
                       (-7, -2, 4)):
        assert Int(x).ceildiv(y) == want


def test_coverage_lists_the_matmul_methods():
    cov = npusim_pyasc.coverage()
    for name in ("adv.Matmul", "adv.Matmul.get_tensor_c", "adv.Matmul.wait_iterate_all",
                 "adv.register_matmul", "set_sys_workspace", "adv.Matmul.iterate_batch"):
        assert name in cov["mapped"], name
    assert "adv.Matmul.iterate_n_batch" in cov["missing"]


@asc.jit(matmul_cube_only=True)
def mdl_matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                      tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress):
    """C = A B on one cube core with the MDL template (asc.adv.get_mdl_config)."""
    if asc.ascend_is_aic():
        asc.set_sys_workspace(workspace)
        ag = asc.GlobalTensor()
        bg = asc.GlobalTensor()
        cg = asc.GlobalTensor()
        ag.set_global_buffer(a)
        bg.set_global_buffer(b)
        cg.set_global_buffer(c)
        pipe = asc.TPipe()
        mm = asc.adv.Matmul(a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                            b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
                            c=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype),
                            matmul_config=asc.adv.get_mdl_config(en_unit_flag=False))
        asc.adv.register_matmul(pipe, workspace, mm, tiling)
        mm.set_tensor_a(ag)
        mm.set_tensor_b(bg)
        mm.iterate_all(cg)
        mm.end()


def test_matmul_with_the_mdl_config():
    """asc.adv.Matmul(..., matmul_config=asc.adv.get_mdl_config()) runs npusim's MDL template."""
    m, n, k = 32, 64, 128
    tiling = tiling_for(m, n, k, 1, bias=False)
    rng = np.random.default_rng(2)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    mdl_matmul_kernel[1, rt.current_stream()](a, b, c, tiling, np.zeros(1024, np.uint8))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    assert "adv.get_mdl_config" in npusim_pyasc.coverage()["mapped"]


def test_a_tiling_built_by_hand_without_k_steps_runs_under_norm():
    """A user's asc.adv.TCubeTiling(...) that sets base, single-core, depth and step_m/n only:
    step_ka/step_kb/db_l0a/b/c stay 0, which the NORM template does not need (float16 here;
    npusim.ascendc.lib.matmul_tiling_use); MDL divides by step_ka, so it refuses them."""
    m, n, k = 32, 64, 96
    tiling = asc.adv.TCubeTiling(used_core_num=2, m=m, n=n, k_a=k, k_b=k, single_core_m=m,
                                 single_core_n=32, single_core_k=k, base_m=32, base_n=32,
                                 base_k=32, depth_a1=1, depth_b1=1, step_m=1, step_n=1,
                                 is_bias=1)
    rng = np.random.default_rng(5)
    a, b = small_ints(rng, (m, k), np.float16), small_ints(rng, (k, n), np.float16)
    bias = small_ints(rng, (1, n), np.float32)
    c = np.zeros((m, n), np.float32)
    cube_matmul_kernel[2, rt.current_stream()](a, b, c, bias, tiling, np.zeros(1024, np.uint8))
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32) + bias)
    with pytest.raises(npusim.KernelError, match="stepKa = 0.*MDL template divides"):
        mdl_matmul_kernel[1, rt.current_stream()](a, b, c, tiling, np.zeros(1024, np.uint8))
