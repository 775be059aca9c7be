"""GlobalTensor::SetL2CacheHint in a C++ kernel reaches the L2 model as the Python API's does.

On Atlas A2 the hint works through the address: Huawei's device build defines
``L2_CACHE_HINT`` and ``L2CacheAlter`` (impl/basic_api/utils/kernel_utils_macros.h) moves a
CACHE_MODE_DISABLE tensor's address up by the runtime's ``l2Cacheoffset``; npusim's build
does the same and its runtime reads an address in that window as the same bytes copied
around L2 (npusim.cpp.builder.L2_BYPASS_OFFSET). The kernel is tests/cpp_kernels/
l2_cache_hint.cpp (the DataCopy best practice's scenario 7 in small); the golden figures are
counted by hand and checked against the same kernel in Python.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from npusim.cpp import builder, dispatch

from test_cpp import require_devkit

KERNEL = Path(__file__).resolve().parent / "cpp_kernels" / "l2_cache_hint.cpp"
ROWS, COLS, TILE_M, TILE_N, BLOCKS = 64, 256, 16, 64, 4


def test_pointer_in_the_hint_window_is_the_same_bytes_around_l2():
    """A pointer argument with the window's bit is the address below it, marked to bypass
    L2; the build defines L2_CACHE_HINT and gives the runtime's offset that bit."""
    ptr = dispatch._decode(dispatch.K_PTR | (9 << 8), 8, builder.L2_BYPASS_OFFSET + 0x7f00_1000)
    assert int(ptr) == 0x7f00_1000 and ptr.dtype == np.float16 and ptr.l2_bypass
    plain = dispatch._decode(dispatch.K_PTR | (9 << 8), 8, 0x7f00_1000)
    assert int(plain) == 0x7f00_1000 and not plain.l2_bypass
    assert builder.L2_HINT_DEFINE == "-DL2_CACHE_HINT"
    assert "g_opSystemRunCfg = {0x4000000000000000ull}" in builder.GLUE


def _python_rendering(src, dst, rows, bypass):
    """tests/cpp_kernels/l2_cache_hint.cpp with npusim.ascendc."""
    from npusim.ascendc import (PIPE_ALL, CacheMode, DataCopyExtParams, DataCopyPad,
                                DataCopyPadExtParams, GetBlockIdx, GlobalTensor, PipeBarrier,
                                TBuf, TPipe, TPosition, half)
    pipe = TPipe()
    buf = TBuf(TPosition.VECIN)
    pipe.InitBuffer(buf, TILE_M * TILE_N * 2)
    ub = buf.Get(half)
    src_gm, dst_gm = GlobalTensor(half), GlobalTensor(half)
    src_gm.SetGlobalBuffer(src, rows * COLS)
    dst_gm.SetGlobalBuffer(dst + GetBlockIdx() * TILE_M * TILE_N * 2, TILE_M * TILE_N)
    if bypass:
        src_gm.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
        dst_gm.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
    tile = DataCopyExtParams(TILE_M, TILE_N * 2, (COLS - TILE_N) * 2, 0, 0)
    no_pad = DataCopyPadExtParams(False, 0, 0, 0)
    for r in range(0, rows, TILE_M):
        for c in range(0, COLS, TILE_N):
            DataCopyPad(ub, src_gm[r * COLS + c], tile, no_pad)
    PipeBarrier(PIPE_ALL)
    DataCopyPad(dst_gm, ub, DataCopyExtParams(1, TILE_M * TILE_N * 2, 0, 0, 0))


def _run(kernel, bypass: int):
    from npusim.gm import GlobalMemory
    from npusim.launch import run_kernel
    from npusim.soc import get_soc
    soc = get_soc("Ascend910B1")
    gm = GlobalMemory(soc.memory_size)
    a = (np.arange(ROWS * COLS) % 2048).astype(np.float16).reshape(ROWS, COLS)
    out_bytes = BLOCKS * TILE_M * TILE_N * 2
    src, dst = gm.malloc(a.nbytes), gm.malloc(out_bytes)
    gm.write(src, a)
    prof = run_kernel(kernel, BLOCKS, (src, dst, ROWS, bypass), soc=soc, gm=gm)
    out = np.frombuffer(gm.view(dst, out_bytes), np.float16).reshape(BLOCKS, TILE_M, TILE_N)
    assert all(np.array_equal(o, a[-TILE_M:, -TILE_N:]) for o in out)   # the last tile
    return prof


def test_cpp_l2_cache_hint_bypasses_l2_as_the_python_api(monkeypatch):
    """Four blocks each read the same 32 KiB matrix and write 2 KiB. Without the hint the
    first block's reads miss L2 and the other three's hit (96 KiB), the writes miss-allocate;
    with CACHE_MODE_DISABLE no copy touches L2: all 139,264 bytes go to HBM, MTE2 takes
    longer, and every figure equals the Python API's for the same kernel."""
    import npusim.cpp as cpp
    monkeypatch.setenv("NPUSIM_ASC_DEVKIT", str(require_devkit()))
    kernel = cpp.load(KERNEL)
    matrix, written = ROWS * COLS * 2, BLOCKS * TILE_M * TILE_N * 2
    golden = {  # read hit, read miss, write hit, write miss bytes (vector cores); HBM bytes
        0: ((3 * matrix, matrix, 0, written), matrix),
        1: ((0, 0, 0, 0), BLOCKS * matrix + written)}
    profs = {}
    for bypass, (l2, hbm) in golden.items():
        p, py = _run(kernel, bypass), _run(_python_rendering, bypass)
        assert tuple(map(float, p.timing.l2_bytes[:4])) == l2, bypass
        assert p.hbm_bytes == hbm and p.bytes_read == BLOCKS * matrix
        assert tuple(p.timing.l2_bytes) == tuple(py.timing.l2_bytes) and py.hbm_bytes == hbm
        assert p.pipe_time_us["aiv_mte2_time"] == pytest.approx(py.pipe_time_us["aiv_mte2_time"])
        assert p.duration_us == pytest.approx(py.duration_us, rel=0.01)
        profs[bypass] = p
    # around L2 every block's reads come from HBM: MTE2 nearly three times as long
    assert profs[1].pipe_time_us["aiv_mte2_time"] > 2.5 * profs[0].pipe_time_us["aiv_mte2_time"]
    assert profs[1].duration_us > profs[0].duration_us + 1.0
