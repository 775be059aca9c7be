"""pyasc kernels using ``asc.adv.quant`` (AscendQuant), ``asc.trans_data_to_5hd`` in its
three forms, ``asc.set_aipp_functions``, and whole-tile kernels over short blocks under
NPUSIM_CHECKER_CROSS_BLOCK=warn.
Results against numpy renderings of the documented semantics written here.

(No ``from __future__ import annotations`` here: pyasc reads the annotations as objects.)
"""
import numpy as np
import pytest

asc = pytest.importorskip(
    "asc", reason="pyasc is not installed for this Python (pip install '.[pyasc]')")

import asc.lib.runtime as rt  # noqa: E402

import npusim.pyasc as npusim_pyasc  # noqa: E402
from npusim.errors import GmAccessError  # noqa: E402


pytestmark = pytest.mark.usefixtures("pyasc_on_npusim")


# -- AscendQuant ----------------------------------------------------------------------------------
@asc.jit
def quant_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, n: asc.ConstExpr[int],
                 scale: asc.ConstExpr, offset: asc.ConstExpr, with_config: asc.ConstExpr[bool]):
    xg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    yg.set_global_buffer(y, n)
    xl = asc.LocalTensorAuto(x.dtype, n)
    yl = asc.LocalTensorAuto(asc.int8, n)
    tmp = asc.LocalTensorAuto(asc.uint8, 512)
    asc.data_copy(xl, xg, count=n)
    if with_config:
        asc.adv.quant(yl, xl, scale, offset, n, tmp, config=asc.adv.QuantConfig(n, 0, 0, 512))
    else:
        asc.adv.quant(yl, xl, scale, offset, n, tmp)
    asc.data_copy(yg, yl, count=n)


def quant_golden(x, scale, offset):
    """AscendQuant's page: half(x) * half(scale), + half(offset), each rounded to half;
    to int8 rounding half to even, saturated."""
    h = np.float16
    t = (x.astype(h).astype(np.float64) * float(h(scale))).astype(h)
    t = (t.astype(np.float64) + float(h(offset))).astype(h)
    return np.clip(np.rint(t.astype(np.float64)), -128, 127).astype(np.int8)


@pytest.mark.parametrize("dtype,with_config", [(np.float16, False), (np.float32, True)])
def test_quant(dtype, with_config):
    rng = np.random.default_rng(3)
    x = (rng.random(512) * 80 - 40).astype(dtype)
    y = np.zeros(512, np.int8)
    quant_kernel[1, rt.current_stream()](x, y, 512, 2.0, 0.9, with_config)
    np.testing.assert_array_equal(y, quant_golden(x, 2.0, 0.9))


# -- TransDataTo5HD -------------------------------------------------------------------------------
@asc.jit
def five_hd_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, form: asc.ConstExpr[int]):
    """Transpose a 16 x 16 matrix of 16-bit elements in one TransDataTo5HD repeat: source
    block i is row i, destination block j is row j."""
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x, 256)
    zg.set_global_buffer(z, 256)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    qa = asc.TQue(asc.TPosition.VECCALC, 1)
    qb = asc.TQue(asc.TPosition.VECCALC, 1)
    pipe.init_buffer(que=qx, num=1, len=256 * x.dtype.sizeof())
    pipe.init_buffer(que=qz, num=1, len=256 * z.dtype.sizeof())
    pipe.init_buffer(que=qa, num=1, len=16 * asc.uint64.sizeof())
    pipe.init_buffer(que=qb, num=1, len=16 * asc.uint64.sizeof())
    xl = qx.alloc_tensor(x.dtype)
    asc.data_copy(xl, xg, count=256)
    qx.enque(xl)
    xl = qx.deque(x.dtype)
    zl = qz.alloc_tensor(z.dtype)
    params = asc.TransDataTo5HDParams(dst_high_half=False, src_high_half=False, repeat_times=1,
                                      dst_rep_stride=0, src_rep_stride=0)
    if form == 0:       # (pyasc's front end takes no comprehensions)
        dst = [zl[0], zl[16], zl[32], zl[48], zl[64], zl[80], zl[96], zl[112], zl[128],
               zl[144], zl[160], zl[176], zl[192], zl[208], zl[224], zl[240]]
        src = [xl[0], xl[16], xl[32], xl[48], xl[64], xl[80], xl[96], xl[112], xl[128],
               xl[144], xl[160], xl[176], xl[192], xl[208], xl[224], xl[240]]
        asc.trans_data_to_5hd(dst, src, params)
    elif form == 1:
        dst = [zl[0].get_phy_addr(), zl[16].get_phy_addr(), zl[32].get_phy_addr(),
               zl[48].get_phy_addr(), zl[64].get_phy_addr(), zl[80].get_phy_addr(),
               zl[96].get_phy_addr(), zl[112].get_phy_addr(), zl[128].get_phy_addr(),
               zl[144].get_phy_addr(), zl[160].get_phy_addr(), zl[176].get_phy_addr(),
               zl[192].get_phy_addr(), zl[208].get_phy_addr(), zl[224].get_phy_addr(),
               zl[240].get_phy_addr()]
        src = [xl[0].get_phy_addr(), xl[16].get_phy_addr(), xl[32].get_phy_addr(),
               xl[48].get_phy_addr(), xl[64].get_phy_addr(), xl[80].get_phy_addr(),
               xl[96].get_phy_addr(), xl[112].get_phy_addr(), xl[128].get_phy_addr(),
               xl[144].get_phy_addr(), xl[160].get_phy_addr(), xl[176].get_phy_addr(),
               xl[192].get_phy_addr(), xl[208].get_phy_addr(), xl[224].get_phy_addr(),
               xl[240].get_phy_addr()]
        asc.trans_data_to_5hd(dst, src, params)
    else:
        da = qa.alloc_tensor(asc.uint64)
        sa = qb.alloc_tensor(asc.uint64)
        for i in range(16):
            da.set_value(i, zl[16 * i].get_phy_addr())
            sa.set_value(i, xl[16 * i].get_phy_addr())
        asc.trans_data_to_5hd(da, sa, params)
        qa.free_tensor(da)
        qb.free_tensor(sa)
    qz.enque(zl)
    qx.free_tensor(xl)
    zl = qz.deque(z.dtype)
    asc.data_copy(zg, zl, count=256)
    qz.free_tensor(zl)


@pytest.mark.parametrize("form", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float16, np.int16])
def test_trans_data_to_5hd_transposes_16_blocks(form, dtype):
    x = np.arange(256).astype(dtype)
    z = np.zeros(256, dtype)
    five_hd_kernel[1, rt.current_stream()](x, z, form)
    # TransDataTo5HD.md, 16-bit: destination block j, element i = source block i, element j
    np.testing.assert_array_equal(z.reshape(16, 16), x.reshape(16, 16).T)


# -- whole tiles over short blocks ----------------------------------------------------------------
@asc.jit
def tiled_double_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, share: asc.ConstExpr[int],
                        tile: asc.ConstExpr[int]):
    """z = 2 x, each block copying one whole tile from its share's start (past the share)."""
    off = asc.get_block_idx() * share
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x + off)
    zg.set_global_buffer(z + off)
    xl = asc.LocalTensorAuto(x.dtype, tile)
    asc.data_copy(xl, xg, count=tile)
    asc.muls(xl, xl, 2.0, tile)
    asc.data_copy(zg, xl, count=tile)


def test_whole_tiles_over_short_blocks_warn_under_the_variable(monkeypatch):
    x = np.arange(1024, dtype=np.float32)
    z = np.zeros(1024, np.float32)
    with pytest.raises(GmAccessError, match="both write GM"):
        tiled_double_kernel[4, rt.current_stream()](x, z, 40, 64)
    monkeypatch.setenv("NPUSIM_CHECKER_CROSS_BLOCK", "warn")
    z[:] = 0
    tiled_double_kernel[4, rt.current_stream()](x, z, 40, 64)
    np.testing.assert_array_equal(z[:4 * 40 + 24], 2 * x[:4 * 40 + 24])
    warnings = npusim_pyasc.launches()[-1].profile.warnings
    assert any("both write GM" in w for w in warnings)


# -- AIPP ----------------------------------------------------------------------------------------
@asc.jit
def aipp_then_copy_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    """SetAippFunctions configures LoadImageToLocal only: the DataCopy after it is plain."""
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    zg.set_global_buffer(z, n)
    config = asc.AippParams(dtype=asc.int8, swap_params=asc.AippSwapParams(is_swap_rb=True))
    asc.set_aipp_functions(xg, asc.AippInputFormat.RGB888_U8, config)
    xl = asc.LocalTensorAuto(x.dtype, n)
    asc.data_copy(xl, xg, count=n)
    asc.data_copy(zg, xl, count=n)


def test_set_aipp_functions_leaves_data_copy_alone():
    x = np.arange(768, dtype=np.int64).astype(np.uint8)
    z = np.zeros(768, np.uint8)
    aipp_then_copy_kernel[1, rt.current_stream()](x, z, 768)
    np.testing.assert_array_equal(z, x)


def test_coverage_lists_them_as_mapped():
    cov = npusim_pyasc.coverage()
    assert "load_image_to_local" in cov["missing"]
    for name in ("adv.quant", "adv.QuantConfig", "trans_data_to_5hd", "set_aipp_functions",
                 "AippParams"):
        assert name in cov["mapped"] and name not in cov["missing"]
