"""pyasc kernels (``import asc``) run on npusim: vector kernels, the runtime, the errors.

(No ``from __future__ import annotations`` here: pyasc reads the annotations as objects.)

The kernels here are this project's own, written in the style of pyasc's tutorials: an
elementwise kernel on TQue queues (level 2), level-0 calls with repeat parameters, a
reduction, a softmax with ``asc.adv``, static tensors with explicit flags. Each result is
checked against a numpy rendering of the API's documented semantics written here.
"""
import inspect
import os

import numpy as np
import pytest

asc = pytest.importorskip(
    "asc", reason="pyasc is not installed for this Python (pip install '.[pyasc]'; pyasc "
    "1.1.1 has wheels for CPython 3.9-3.12 on manylinux): the pyasc front-end tests skip")

from hypothesis import given, settings, strategies as st  # noqa: E402

import asc.lib.runtime as rt  # noqa: E402
import asc.runtime.config as config  # noqa: E402

import npusim.pyasc as npusim_pyasc  # noqa: E402
from npusim.errors import (AlignmentError, GmAccessError, LimitError, SyncError,  # noqa: E402
                           UbError)
from npusim.pyasc import PyascNotSupported  # noqa: E402

HERE = os.path.basename(__file__)


pytestmark = pytest.mark.usefixtures("pyasc_on_npusim")


def launch(kernel, cores, *args, **options):
    """``kernel[cores, stream](*args)``; returns the npusim Launch record."""
    kernel[cores, rt.current_stream()](*args, **options)
    return npusim_pyasc.launches()[-1]


def line_of(marker: str) -> str:
    """``file:line`` of the line of this file holding ``marker``."""
    lines, _ = inspect.findsource(inspect.getmodule(line_of))
    for i, text in enumerate(lines):
        if marker in text and "line_of(" not in text:
            return f"{HERE}:{i + 1}"
    raise AssertionError(marker)


# -- kernels ------------------------------------------------------------------------------------
@asc.jit
def binary_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, n: int,
                  tile: asc.ConstExpr[int], op: asc.ConstExpr):
    """z = op(x, y) tile by tile through double-buffered queues (the framework style)."""
    base = asc.get_block_idx() * n
    xg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x + base, n)
    yg.set_global_buffer(y + base, n)
    zg.set_global_buffer(z + base, n)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 2)
    qy = asc.TQue(asc.TPosition.VECIN, 2)
    qz = asc.TQue(asc.TPosition.VECOUT, 2)
    pipe.init_buffer(qx, 2, tile * x.dtype.sizeof())
    pipe.init_buffer(qy, 2, tile * y.dtype.sizeof())
    pipe.init_buffer(qz, 2, tile * z.dtype.sizeof())
    for i in range(n // tile):
        a = qx.alloc_tensor(x.dtype)
        b = qy.alloc_tensor(y.dtype)
        asc.data_copy(a, xg[i * tile:], tile)
        asc.data_copy(b, yg[i * tile:], tile)
        qx.enque(a)
        qy.enque(b)
        a = qx.deque(x.dtype)
        b = qy.deque(y.dtype)
        c = qz.alloc_tensor(z.dtype)
        op(c, a, b, tile)
        qz.enque(c)
        qx.free_tensor(a)
        qy.free_tensor(b)
        c = qz.deque(z.dtype)
        asc.data_copy(zg[i * tile:], c, tile)
        qz.free_tensor(c)


@asc.jit
def unary_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int, op: asc.ConstExpr,
                 scalar: asc.ConstExpr):
    """z = op(x[, scalar]) on one static tile per block (tutorial 01's style: explicit flags)."""
    base = asc.get_block_idx() * n
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x + base, n)
    zg.set_global_buffer(z + base, n)
    xl = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, n)
    zl = asc.LocalTensor(z.dtype, asc.TPosition.VECOUT, n * x.dtype.sizeof(), n)
    asc.data_copy(xl, xg, n)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    if scalar is None:
        op(zl, xl, n)
    else:
        op(zl, xl, scalar, n)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, zl, n)


@asc.jit
def level0_add_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress,
                      n: asc.ConstExpr[int], mask: asc.ConstExpr, repeat: asc.ConstExpr[int],
                      db: asc.ConstExpr[int], s0b: asc.ConstExpr[int], s1b: asc.ConstExpr[int],
                      dr: asc.ConstExpr[int], s0r: asc.ConstExpr[int], s1r: asc.ConstExpr[int]):
    """z = x + y as one level-0 Add: ``mask``, ``repeat`` and BinaryRepeatParams strides."""
    xg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    yg.set_global_buffer(y, n)
    zg.set_global_buffer(z, n)
    size = n * x.dtype.sizeof()
    xl = asc.LocalTensor(x.dtype, asc.TPosition.VECCALC, 0, n)
    yl = asc.LocalTensor(x.dtype, asc.TPosition.VECCALC, size, n)
    zl = asc.LocalTensor(x.dtype, asc.TPosition.VECCALC, 2 * size, n)
    asc.data_copy(xl, xg, n)
    asc.data_copy(yl, yg, n)
    asc.data_copy(zl, zg, n)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    params = asc.BinaryRepeatParams(db, s0b, s1b, dr, s0r, s1r)
    asc.add(zl, xl, yl, mask, repeat, params)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, zl, n)


@asc.jit
def whole_reduce_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: asc.ConstExpr[int],
                        mask: asc.ConstExpr[int], repeat: asc.ConstExpr[int]):
    """z[r] = sum of the first ``mask`` lanes of repeat r (WholeReduceSum, level 0)."""
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    zg.set_global_buffer(z, 128)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(qi, 1, n * x.dtype.sizeof())
    pipe.init_buffer(qo, 1, 128 * x.dtype.sizeof())
    a = qi.alloc_tensor(x.dtype)
    asc.data_copy(a, xg, n)
    qi.enque(a)
    a = qi.deque(x.dtype)
    b = qo.alloc_tensor(x.dtype)
    asc.duplicate(b, 0.0, 128)
    asc.whole_reduce_sum(b, a, mask, repeat, dst_rep_stride=1, src_blk_stride=1, src_rep_stride=8)
    qo.enque(b)
    qi.free_tensor(a)
    b = qo.deque(x.dtype)
    asc.data_copy(zg, b, 128)
    qo.free_tensor(b)


@asc.jit
def softmax_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, rows: asc.ConstExpr[int],
                   cols: asc.ConstExpr[int], tiling: asc.adv.SoftmaxTiling):
    """Row softmax of a [rows, cols] float tile with asc.adv.softmax (max and sum kept)."""
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x, rows * cols)
    zg.set_global_buffer(z, rows * cols)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECOUT, 1)
    stats = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qi, 1, rows * cols * 4)
    pipe.init_buffer(qo, 1, rows * cols * 4)
    pipe.init_buffer(stats, rows * 64)
    a = qi.alloc_tensor(x.dtype)
    asc.data_copy(a, xg, rows * cols)
    qi.enque(a)
    a = qi.deque(x.dtype)
    b = qo.alloc_tensor(x.dtype)
    sums = stats.get(asc.float32, rows * 8)
    maxes = stats.get_with_offset(rows * 8, rows * 32, asc.float32)
    asc.adv.softmax(b, sums, maxes, a, tiling)
    qo.enque(b)
    qi.free_tensor(a)
    b = qo.deque(x.dtype)
    asc.data_copy(zg, b, rows * cols)
    qo.free_tensor(b)


@asc.jit
def copy_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int, ub_bytes: asc.ConstExpr[int],
                enque: asc.ConstExpr[bool]):
    """z = x through one VECIN queue of ``ub_bytes`` (the error cases vary its arguments)."""
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, ub_bytes)  # <- InitBuffer
    t = q.alloc_tensor(x.dtype)
    asc.data_copy(t, xg, n)  # <- copy in
    if enque:
        q.enque(t)
    t = q.deque(x.dtype)  # <- DeQue
    asc.data_copy(zg, t, n)
    q.free_tensor(t)


@asc.jit
def racy_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    """z = 2x on static tensors with no flags: correct only if the compiler inserts them."""
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    zg.set_global_buffer(z, n)
    xl = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, n)
    zl = asc.LocalTensor(x.dtype, asc.TPosition.VECOUT, n * 4, n)
    asc.data_copy(xl, xg, n)
    asc.muls(zl, xl, 2.0, n)  # <- racy Muls
    asc.data_copy(zg, zl, n)


@asc.jit
def keyword_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, h: asc.GlobalAddress, n: int):
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    hg = asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    zg.set_global_buffer(z, n)
    hg.set_global_buffer(h, n)
    xl = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, n)
    zl = asc.LocalTensor(x.dtype, asc.TPosition.VECOUT, n * 4, n)
    hl = asc.LocalTensor(h.dtype, asc.TPosition.VECOUT, n * 8, n)
    asc.data_copy(xl, xg, n)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.muls(dst=zl, src=xl, scalar=0.5, count=n)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.cast(hl, zl, round_mode=asc.RoundMode.CAST_TRUNC, count=n)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, zl, n)
    asc.data_copy(hg, hl, n)


@asc.jit
def missing_api_kernel(x: asc.GlobalAddress, n: int):
    xl = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, n)
    asc.duplicate(xl, asc.scalar_count_leading_zero(n), n)  # <- missing API


@asc.jit
def python_error_kernel(x: asc.GlobalAddress, n: int):
    xl = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, n)
    asc.duplicate(xl, 1.0, n)
    asc.duplicate(xl, undefined_name, n)  # noqa: F821  <- NameError


# -- elementwise, level 2 --------------------------------------------------------------------------
BINARY = [
    ("add", asc.add, np.add), ("sub", asc.sub, np.subtract), ("mul", asc.mul, np.multiply),
    ("div", asc.div, np.divide), ("max", asc.max, np.maximum), ("min", asc.min, np.minimum),
]


@pytest.mark.parametrize("name,op,ref", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_binary_level2_queues(name, op, ref, dtype):
    rng = np.random.default_rng(1)
    cores, n, tile = 4, 1024, 256
    x = rng.uniform(0.5, 4, cores * n).astype(dtype)
    y = rng.uniform(0.5, 4, cores * n).astype(dtype)
    z = np.zeros_like(x)
    rec = launch(binary_kernel, cores, x, y, z, n, tile, op)
    np.testing.assert_array_equal(z, ref(x, y))           # one rounding per instruction
    assert rec.profile.block_dim == cores and rec.profile.pipe_time_us["aiv_vec_time"] > 0


UNARY = [
    ("abs", asc.abs, None, np.abs), ("relu", asc.relu, None, lambda v: np.maximum(v, 0)),
    ("sqrt", asc.sqrt, None, np.sqrt), ("reciprocal", asc.reciprocal, None, lambda v: 1 / v),
    ("exp", asc.exp, None, np.exp), ("ln", asc.ln, None, None),
    ("adds", asc.adds, 1.5, lambda v: v + np.float32(1.5)),
    ("muls", asc.muls, -3.0, lambda v: v * np.float32(-3.0)),
    ("maxs", asc.maxs, 0.25, lambda v: np.maximum(v, np.float32(0.25))),
    ("mins", asc.mins, 0.25, lambda v: np.minimum(v, np.float32(0.25))),
    ("leaky_relu", asc.leaky_relu, 0.125, lambda v: np.where(v >= 0, v, v * np.float32(0.125))),
]


@pytest.mark.parametrize("name,op,scalar,ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary_and_scalar_static_tensors(name, op, scalar, ref):
    rng = np.random.default_rng(2)
    n = 512
    x = rng.uniform(-2, 2, 2 * n).astype(np.float32)
    if name in ("sqrt", "ln"):
        x = np.abs(x) + np.float32(0.5)
    z = np.zeros_like(x)
    launch(unary_kernel, 2, x, z, n, op, scalar)
    if name == "ln":        # libm's log, to 1 ulp (the instruction's rounding is not published)
        np.testing.assert_allclose(z, np.log(x.astype(np.float64)), rtol=2 ** -22)
    elif name == "exp":
        np.testing.assert_allclose(z, np.exp(x.astype(np.float64)), rtol=2 ** -22)
    else:
        np.testing.assert_array_equal(z, ref(x))


def test_keyword_arguments_reach_npusim_in_cpp_order():
    """pyasc's keyword forms (count=, round_mode=, scalar=) map onto Ascend C's order."""
    x = np.linspace(-3, 3, 256, dtype=np.float32) + np.float32(1e-3)
    z = np.zeros(256, np.float32)
    h = np.zeros(256, np.float16)
    launch(keyword_kernel, 1, x, z, h, 256)
    np.testing.assert_array_equal(z, x * np.float32(0.5))
    nearest = z.astype(np.float16)                  # CAST_TRUNC: toward zero
    toward_zero = np.where(np.abs(nearest.astype(np.float32)) > np.abs(z),
                           np.nextafter(nearest, np.float16(0)), nearest)
    np.testing.assert_array_equal(h, toward_zero)


# -- level 0: masks, strides and repeats ------------------------------------------------------------
def lane_index(isz: int, repeat: int, blk: int, rep: int) -> np.ndarray:
    """[repeat, lanes] element index of each lane: repeat r starts r * rep blocks in, block b
    of a repeat b * blk blocks after the repeat's start (32 B blocks)."""
    per_block, lanes = 32 // isz, 256 // isz
    r = np.arange(repeat)[:, None]
    lane = np.arange(lanes)[None, :]
    return r * rep * per_block + (lane // per_block) * blk * per_block + lane % per_block


def active_lanes(mask, lanes: int) -> np.ndarray:
    if isinstance(mask, list):     # [low word, high word]: bit i switches lane i
        bits = [(mask[i // 64] >> (i % 64)) & 1 for i in range(lanes)]
        return np.array(bits, dtype=bool)
    return np.arange(lanes) < mask


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from([np.float32, np.float16]), repeat=st.integers(1, 6),
       bitmask=st.booleans(), data=st.data())
def test_level0_add_masks_strides_repeats(dtype, repeat, bitmask, data):
    isz = np.dtype(dtype).itemsize
    lanes = 256 // isz
    if bitmask:
        words = 1 if isz == 4 else 2
        mask = [data.draw(st.integers(1, 2 ** 64 - 1)) for _ in range(words)] + [0] * (2 - words)
    else:
        mask = data.draw(st.integers(1, lanes))
    db = data.draw(st.integers(1, 2))
    dr = data.draw(st.integers(8 * db, 8 * db + 4))          # repeats never share dst lanes
    s0b, s1b = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
    s0r, s1r = data.draw(st.integers(0, 12)), data.draw(st.integers(0, 12))
    idx = {k: lane_index(isz, repeat, b, r) for k, b, r in
           (("d", db, dr), ("s0", s0b, s0r), ("s1", s1b, s1r))}
    n = max(int(i.max()) for i in idx.values()) + 1
    n = -(-n // (32 // isz)) * (32 // isz)
    rng = np.random.default_rng(repeat)
    x = rng.uniform(-8, 8, n).astype(dtype)
    y = rng.uniform(-8, 8, n).astype(dtype)
    z = rng.uniform(-8, 8, n).astype(dtype)
    want = z.copy()
    on = np.broadcast_to(active_lanes(mask, lanes), idx["d"].shape)
    want[idx["d"][on]] = x[idx["s0"][on]] + y[idx["s1"][on]]
    rec = launch(level0_add_kernel, 1, x, y, z, n, mask, repeat, db, s0b, s1b, dr, s0r, s1r)
    np.testing.assert_array_equal(z, want)
    assert rec.profile.pipe_time_us["aiv_vec_time"] > 0


def test_level0_repeat_limit_is_enforced():
    """repeatTime <= 255: pyasc's front end refuses 256 (a uint8 operand); without the front
    end npusim's Add raises LimitError at the call."""
    from asc.codegen.errors import CodegenError
    x = np.zeros(64 * 256, np.float32)
    args = (x, x.copy(), x.copy(), 64 * 256, 64, 256, 1, 1, 1, 8, 8, 8)
    with pytest.raises(CodegenError):
        launch(level0_add_kernel, 1, *args)
    npusim_pyasc.session().frontend = False
    try:
        with pytest.raises(LimitError, match="255") as err:
            launch(level0_add_kernel, 1, *args)
    finally:
        npusim_pyasc.session().frontend = True
    assert err.value.instruction == "Add" and err.value.line == line_of("asc.add(zl, xl, yl, mask")


# -- a reduction --------------------------------------------------------------------------------------
@pytest.mark.parametrize("mask", [128, 77])
def test_whole_reduce_sum_tree_in_half(mask):
    """WholeReduceSum sums adjacent lanes pairwise, level by level, each step rounded to half
    (WholeReduceSum.md 约束说明); lanes off the mask add nothing."""
    rng = np.random.default_rng(mask)
    repeat = 4
    x = rng.uniform(-1, 1, 128 * repeat).astype(np.float16)
    z = np.zeros(128, np.float16)
    launch(whole_reduce_kernel, 1, x, z, 128 * repeat, mask, repeat)
    vals = np.where(np.arange(128) < mask, x.reshape(repeat, 128), np.float16(0))
    while vals.shape[1] > 1:
        vals = vals[:, 0::2] + vals[:, 1::2]                # float16 + float16 rounds once
    np.testing.assert_array_equal(z[:repeat], vals[:, 0])
    assert (z[repeat:] == 0).all()


# -- asc.adv: softmax ---------------------------------------------------------------------------------
def test_adv_softmax_rows():
    from npusim.ascendc import SoftMaxTilingFunc
    from npusim.pyasc._host import copy_struct
    rows, cols = 8, 64
    tiling = asc.adv.SoftmaxTiling()
    copy_struct(SoftMaxTilingFunc((rows, cols), 4, 64 * 1024), tiling)
    rng = np.random.default_rng(5)
    x = rng.normal(size=rows * cols).astype(np.float32)
    z = np.zeros_like(x)
    launch(softmax_kernel, 1, x, z, rows, cols, tiling)
    xd = x.reshape(rows, cols).astype(np.float64)
    e = np.exp(xd - xd.max(axis=1, keepdims=True))
    np.testing.assert_allclose(z.reshape(rows, cols), e / e.sum(axis=1, keepdims=True),
                               rtol=1e-6, atol=1e-7)


# -- the runtime and the launch -----------------------------------------------------------------------
def test_torch_tensors_and_runtime_answer_from_npusim():
    torch = pytest.importorskip("torch")
    x = torch.rand(2 * 512, dtype=torch.float32)
    y = torch.rand(2 * 512, dtype=torch.float32)
    z = torch.zeros_like(x)
    used = npusim_pyasc.session().device().gm.used   # torch's own npu tensors may hold some
    rec = launch(binary_kernel, 2, x, y, z, 512, 128, asc.add)
    assert torch.equal(z, x + y)                      # copied back into the CPU tensor
    assert rt.current_platform() == "Ascend910B1"
    assert rt.device_info(rt.DeviceModuleType.RT_MODULE_TYPE_VECTOR_CORE,
                          rt.DeviceInfoType.INFO_TYPE_CORE_NUM) == 48
    dev = npusim_pyasc.session().device()
    assert dev.profiles[-1] is rec.profile and dev.gm.used == used  # arguments freed
    assert rec.kernel_type.name == "KERNEL_TYPE_AIV_ONLY" and rec.frontend_s > 0
    assert "AscendC::Add" in rec.ascendc                 # pyasc's generated Ascend C


def test_runtime_memory_round_trip():
    import ctypes
    host = np.arange(64, dtype=np.int32)
    mem = rt.malloc(host.nbytes)
    rt.memcpy(mem, host.nbytes, ctypes.c_void_p(host.ctypes.data), host.nbytes,
              rt.support.MemcpyKind.RT_MEMCPY_HOST_TO_DEVICE)
    back = np.zeros_like(host)
    rt.copy_data_from_device(ctypes.c_void_p(back.ctypes.data), mem, host.nbytes)
    rt.free(mem)
    np.testing.assert_array_equal(back, host)


def test_soc_follows_enable():
    npusim_pyasc.enable(soc="Ascend910B4")
    try:
        config.set_platform(config.Backend.Model)
        assert rt.get_soc_version().value == "Ascend910B4"
        x = np.ones(256, np.float32)
        launch(binary_kernel, 1, x, x.copy(), np.zeros_like(x), 256, 256, asc.add)
        assert npusim_pyasc.launches()[-1].profile.soc_version == "Ascend910B4"
    finally:
        npusim_pyasc.enable(soc="Ascend910B1")
        config.set_platform(config.Backend.Model)


# -- errors at the user's line -----------------------------------------------------------------------
def test_ub_overflow_at_init_buffer_line():
    x = np.zeros(64, np.float32)
    with pytest.raises(UbError) as err:
        launch(copy_kernel, 1, x, x.copy(), 64, 1 << 20, True)
    assert err.value.line == line_of("# <- InitBuffer")


def test_misaligned_copy_at_its_line():
    x = np.zeros(64, np.float32)
    with pytest.raises(AlignmentError) as err:
        launch(copy_kernel, 1, x, x.copy(), 7, 256, True)        # 28 B: not whole blocks
    assert err.value.line == line_of("# <- copy in")


def test_missing_enque_at_deque_line():
    x = np.zeros(64, np.float32)
    with pytest.raises(SyncError, match="DeQue without a matching EnQue") as err:
        launch(copy_kernel, 1, x, x.copy(), 64, 256, False)
    assert err.value.line == line_of("# <- DeQue")


def test_reading_past_the_tensor_at_its_line():
    x = np.zeros(64, np.float32)
    with pytest.raises(GmAccessError) as err:
        launch(copy_kernel, 1, x, np.zeros(256, np.float32), 256, 1024, True)
    assert err.value.line == line_of("# <- copy in")


def test_argument_copies_over_2048_bytes_take_whole_huge_pages():
    """pyasc copies an argument of more than 2048 B with RT_MEMORY_POLICY_HUGE_PAGE_ONLY
    (asc.lib.runtime copy_data_to_device), memory granted in whole 2 MiB pages
    (aclrtMemMallocPolicy HUGE_ONLY): a store past such a copy stays in its own page, as on
    the device. A copy of 2048 B or less keeps aclrtMalloc's 32 B rounding."""
    x = np.arange(1024, dtype=np.float32)
    z = np.zeros(600, np.float32)                      # 2400 B: huge pages
    launch(copy_kernel, 1, x, z, 1024, 4096, True)     # stores 4096 B into it
    np.testing.assert_array_equal(z, x[:600])          # the bytes pyasc copies back
    with pytest.raises(GmAccessError):
        launch(copy_kernel, 1, x, np.zeros(512, np.float32), 1024, 4096, True)   # 2048 B


def test_racing_pipes_without_auto_sync():
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(SyncError, match="PIPE_V reads UB") as err:
        launch(racy_kernel, 1, x, np.zeros_like(x), 64, auto_sync=False)
    assert err.value.line == line_of("# <- racy Muls")


def test_auto_sync_inserts_the_flags():
    x = np.arange(64, dtype=np.float32)
    z = np.zeros_like(x)
    rec = launch(racy_kernel, 1, x, z, 64)              # auto_sync=True: pyasc's default
    np.testing.assert_array_equal(z, 2 * x)
    assert rec.auto_sync and rec.auto_flags == 2         # MTE2 -> V, V -> MTE3


def test_missing_api_names_itself():
    x = np.zeros(64, np.int16)
    with pytest.raises(PyascNotSupported, match=r"asc\.scalar_count_leading_zero") as err:
        launch(missing_api_kernel, 1, x, 64)
    assert err.value.line == line_of("# <- missing API")
    assert "scalar_count_leading_zero" in npusim_pyasc.coverage()["missing"]


def test_python_errors_at_their_line():
    """pyasc's front end rejects the kernel at its line; without it, the body raises the
    Python error itself, with a traceback through the kernel's line."""
    from asc.codegen.errors import CodegenError
    x = np.zeros(64, np.float32)
    with pytest.raises(CodegenError, match="undefined_name"):
        launch(python_error_kernel, 1, x, 64)
    npusim_pyasc.session().frontend = False
    try:
        with pytest.raises(NameError) as err:
            launch(python_error_kernel, 1, x, 64)
    finally:
        npusim_pyasc.session().frontend = True
    frames = [f for f in err.traceback if f.path.name == HERE]
    assert f"{HERE}:{frames[-1].lineno + 1}" == line_of("<- NameError")


def test_coverage_maps_the_vector_surface():
    cov = npusim_pyasc.coverage()
    for name in ("add", "data_copy", "set_flag", "whole_reduce_sum", "cast", "adv.softmax",
                 "BinaryRepeatParams", "mmad", "load_data", "fixpipe"):
        assert name in cov["mapped"], name


def test_the_current_device_is_per_thread():
    """asc.lib.runtime.set_device binds the device to the calling thread, as pyACL's
    aclrtSetDevice does: another thread's choice does not move this one's."""
    import threading
    s = npusim_pyasc.session()
    old = s.device_count
    s.device_count = 2
    try:
        s.set_device(0)
        seen = {}

        def other():
            seen["before"] = s.current_id
            s.set_device(1)
            seen["after"] = s.current_id

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert seen == {"before": 0, "after": 1}
        assert s.current_id == 0 and s.device().device_id == 0
    finally:
        s.device_count = old
        s.reset_device(1)


@asc.jit
def bilinear_kernel(x: asc.GlobalAddress, off: asc.GlobalAddress, w: asc.GlobalAddress,
                    z: asc.GlobalAddress, n_x: asc.ConstExpr[int], n_w: asc.ConstExpr[int]):
    """One vertical iteration of two horizontal ones: z's 128 halves = w[0] * (the 8 blocks
    of x at off[0:8]) + w[1] * (those at off[8:16]); the scratch buffer from a TBuf."""
    xg, og, wg, zg = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x)
    og.set_global_buffer(off)
    wg.set_global_buffer(w)
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    xb = asc.TBuf(asc.TPosition.VECCALC)
    ob = asc.TBuf(asc.TPosition.VECCALC)
    wb = asc.TBuf(asc.TPosition.VECCALC)
    zb = asc.TBuf(asc.TPosition.VECCALC)
    tb = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf=xb, num=n_x * 2)
    pipe.init_buffer(buf=ob, num=16 * 4)
    pipe.init_buffer(buf=wb, num=n_w * 2)
    pipe.init_buffer(buf=zb, num=128 * 2)
    pipe.init_buffer(buf=tb, num=(n_x + n_w) * 32)          # the size the A2 library needs
    xl = xb.get(x.dtype)
    ol = ob.get(off.dtype)
    wl = wb.get(w.dtype)
    zl = zb.get(z.dtype)
    tmp = tb.alloc_tensor(asc.uint8)
    asc.data_copy(xl, xg, count=n_x)
    asc.data_copy(ol, og, count=16)
    asc.data_copy(wl, wg, count=n_w)
    asc.bilinear_interpolation(zl, xl, ol, wl, 128, 2, False, 1, 128, 1, tmp)
    asc.data_copy(zg, zl, count=128)


def test_bilinear_interpolation_from_pyasc():
    rng = np.random.default_rng(11)
    x = rng.integers(-8, 8, 256).astype(np.float16)              # 16 blocks
    off = (rng.integers(0, 16, 16) * 32).astype(np.uint32)
    w = np.array([3, -2] + [0] * 14, np.float16)
    z = np.zeros(128, np.float16)
    launch(bilinear_kernel, 1, x, off, w, z, 256, 16)
    rows = [np.concatenate([x[o // 2:o // 2 + 16] for o in off[8 * i:8 * i + 8]]) for i in (0, 1)]
    np.testing.assert_array_equal(z, 3 * rows[0] - 2 * rows[1])
