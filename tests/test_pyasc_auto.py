"""pyasc's auto-sync tensors (``asc.LocalTensorAuto``), ``TPipe.init_buffer(buf=...)``,
``TPipe.init`` and ``asc.adv.MatmulConfig``, in this project's own kernels; and a pyasc
kernel working in place on a torch tensor of device "npu" (where torch is installed).

(No ``from __future__ import annotations`` here: pyasc reads the annotations as objects.)
"""
import numpy as np
import pytest

asc = pytest.importorskip(
    "asc", reason="pyasc is not installed for this Python (pip install '.[pyasc]')")

import asc.lib.runtime as rt  # noqa: E402
import asc.runtime.config as config  # noqa: E402

import npusim.pyasc as npusim_pyasc  # noqa: E402
from npusim.pyasc import PyascNotSupported  # noqa: E402


pytestmark = pytest.mark.usefixtures("pyasc_on_npusim")


@asc.jit
def scaled_sum_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress,
                      block: asc.ConstExpr[int], tile: asc.ConstExpr[int]):
    """z = 2x + y tile by tile, every UB tensor an auto-sync one made in the loop."""
    offset = asc.get_block_idx() * block
    xg, yg, zg = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x + offset)
    yg.set_global_buffer(y + offset)
    zg.set_global_buffer(z + offset)
    for i in range(block // tile):
        xl = asc.LocalTensorAuto(x.dtype, tile)
        yl = asc.LocalTensorAuto(y.dtype, tile)
        asc.data_copy(xl, xg[i * tile:], count=tile)
        asc.data_copy(yl, yg[i * tile:], count=tile)
        asc.add(xl, xl, xl, tile)
        zl = asc.LocalTensorAuto(z.dtype, tile)
        asc.add(zl, xl, yl, tile)
        asc.data_copy(zg[i * tile:], zl, count=tile)


def test_local_tensor_auto_reuses_its_buffer_and_syncs():
    rng = np.random.default_rng(7)
    x = rng.random(4 * 2048, dtype=np.float32)
    y = rng.random(4 * 2048, dtype=np.float32)
    z = np.zeros_like(x)
    scaled_sum_kernel[4, rt.current_stream()](x, y, z, 2048, 256)
    np.testing.assert_array_equal(z, 2 * x + y)
    record = npusim_pyasc.launches()[-1]
    assert record.auto_flags > 0        # the reuse across iterations needed flags


@asc.jit
def tbuf_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    """z = x + x through a TBuf given as init_buffer(buf=...)."""
    xg, zg = asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    pipe.init()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf=buf, num=n * x.dtype.sizeof())
    t = buf.get(x.dtype)
    asc.data_copy(t, xg, count=n)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.add(t, t, t, n)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, t, count=n)


def test_init_buffer_takes_buf_keyword():
    x = np.arange(512, dtype=np.float32)
    z = np.zeros_like(x)
    tbuf_kernel[1, rt.current_stream()](x, z, 512)
    np.testing.assert_array_equal(z, 2 * x)


@asc.jit
def tbuf_queue_calls_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int]):
    """z = 3 x with a TBuf driven by the queue calls pyasc's TBuf inherits from TQueBind:
    alloc_tensor and deque give the whole buffer (as get), enque and free_tensor do nothing."""
    xg, zg = asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    src = asc.TBuf(asc.TPosition.VECCALC)
    acc = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf=src, num=n * x.dtype.sizeof())
    pipe.init_buffer(buf=acc, num=2 * n * x.dtype.sizeof())
    t = src.alloc_tensor(x.dtype)
    asc.data_copy(t, xg, count=n)
    src.enque(t)
    t = src.deque(x.dtype)
    a = acc.alloc_tensor(x.dtype)          # the whole buffer: 2 n elements
    asc.add(a, t, t, n)
    asc.add(a[n:], a, t, n)                # its second half is the same buffer's
    asc.data_copy(zg, a[n:], count=n)
    src.free_tensor(t)
    acc.free_tensor(a)


def test_tbuf_alloc_tensor_gives_the_whole_buffer():
    x = np.arange(256, dtype=np.float32)
    z = np.zeros_like(x)
    tbuf_queue_calls_kernel[1, rt.current_stream()](x, z, 256)
    np.testing.assert_array_equal(z, 3 * x)


@asc.jit
def shaped_softmax_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, rows: asc.ConstExpr[int],
                          cols: asc.ConstExpr[int]):
    """Row softmax of a rows x cols float tile whose shape the tensors carry (asc.array ->
    asc.ShapeInfo -> set_shape_info); the SoftmaxTiling made in the kernel is empty."""
    xg, yg = asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x)
    yg.set_global_buffer(y)
    src = asc.LocalTensorAuto(x.dtype, rows * cols)
    peak = asc.LocalTensorAuto(x.dtype, rows * 8)
    total = asc.LocalTensorAuto(x.dtype, rows * 8)
    asc.data_copy(src, xg, count=rows * cols)
    src.set_shape_info(asc.ShapeInfo(asc.array(asc.int32, (rows, cols))))
    asc.adv.softmax(src, total, peak, src, asc.adv.SoftmaxTiling())
    asc.data_copy(yg, src, count=rows * cols)


def test_softmax_reads_the_shape_a_tensor_carries():
    rng = np.random.default_rng(9)
    x = (rng.random((8, 64)) * 3).astype(np.float32)
    y = np.zeros_like(x)
    shaped_softmax_kernel[1, rt.current_stream()](x, y, 8, 64)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_matmul_config_gives_the_template_and_names_an_unknown_field():
    """asc.adv.MatmulConfig(snake_case fields) is npusim's MatmulConfig (tiling.h's camelCase
    fields); a field npusim does not have is refused, naming it."""
    from npusim.ascendc.lib import matmul_config as C
    from npusim.pyasc._matmul import ADV
    norm = ADV["MatmulConfig"](do_norm=True)
    assert isinstance(norm, C.MatmulConfig) and norm.doNorm
    mdl = ADV["MatmulConfig"](do_norm=False, do_multi_data_load=True)
    assert mdl.doMultiDataLoad and not mdl.doNorm
    with pytest.raises(PyascNotSupported, match="no_such_field"):
        ADV["MatmulConfig"](no_such_field=1)


def test_kernel_works_in_place_on_an_npu_tensor():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    from aclnn import runtime
    runtime.reset()                     # a session on a fresh runtime's devices
    npusim_pyasc.enable(soc="Ascend910B1")
    config.set_platform(config.Backend.Model)
    x = torch.arange(512, dtype=torch.float32)
    xn = x.npu()
    zn = torch.zeros(512, device="npu")
    tbuf_kernel[1, rt.current_stream()](xn, zn, 512)
    assert torch.equal(zn.cpu(), 2 * x)
