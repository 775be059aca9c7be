"""The checker across the cores of a launch: GM accesses are compared by the bytes they
touch (strided rows row by row), so column tiles of one row-major matrix that different cores
own interleave without a finding, and a real overlap is still caught at its line; a read of
GM another block writes with no SyncAll in between is a race in vector launches too; each
message names the instructions that made both accesses; a checker error's traceback shows the
kernel's lines, not the simulator's frames (NPUSIM_FULL_TRACEBACK=1 shows them).

The column tiling is the one of Ascend C's fused matmul sample (matmul_leakyrelu_advanced_api:
block i owns the C columns [i * singleCoreN, (i + 1) * singleCoreN) of a row-major C). Expected
results are numpy's."""
import inspect
import os
import traceback

import numpy as np
import pytest

import npusim
from npusim import GlobalMemory, GmAccessError, SyncError, get_soc, run_kernel
from npusim.ascendc import *  # noqa: F403
from npusim.ascendc.checker import CheckerConfig

from test_cube_layouts import gm_tensor, rand
from test_cube_matmul import MatmulKernel, cube_reference

SOC = get_soc("Ascend910B1")
MIX = KernelMetaType.KERNEL_TYPE_MIX_AIC_1_2
FLAG = 2
EVERY_BLOCK = CheckerConfig(all_blocks=True)


def line_of(func, marker: str) -> str:
    """``file:line`` of the source line of ``func`` that carries ``marker``."""
    src, start = inspect.getsourcelines(func)
    for i, text in enumerate(src):
        if marker in text:
            return f"{os.path.basename(inspect.getsourcefile(func))}:{start + i}"
    raise AssertionError(f"marker {marker!r} not found")


# -- a MIX kernel whose blocks own column tiles of C ---------------------------------------------

class ColumnTile(MatmulKernel):
    """C[:, tile] = A @ B[:, tile] on one AIC: B (k x N) and C (m x N) row-major, the tile
    ``n`` columns wide (the Nd2Nz read of B and the Fixpipe store of C are strided)."""

    def __init__(self, m, k, n, N):
        super().__init__(m, k, n, half, float32)
        self.N = N

    def Init(self, addr):
        super().Init(addr)
        self.bGm = gm_tensor(half, addr["b"], self.k * self.N)
        self.cGm = gm_tensor(float32, addr["c"], self.m * self.N)

    def CopyIn(self):
        a1, b1 = self.qa1.AllocTensor(half), self.qb1.AllocTensor(half)
        DataCopy(a1, self.aGm, Nd2NzParams(1, self.m, self.k, 0, self.k, self.M16, 1, 0))
        DataCopy(b1, self.bGm, Nd2NzParams(1, self.k, self.n, 0, self.N, self.K16, 1, 0))
        self.qa1.EnQue(a1)
        self.qb1.EnQue(b1)

    def CopyOut(self):
        c = self.qco1.DeQue(float32)
        Fixpipe(self.cGm, c, FixpipeParamsV220(self.n, self.m, self.M16, self.N,
                                               QuantMode_t.NoQuant))
        self.qco1.FreeTensor(c)


class ColumnTiledLeaky:
    """out = 2 * (A @ B), M x N; block g owns the columns [g * nt, (g + 1) * nt).

    The AIC of block g multiplies A by its column tile of B into the same columns of the
    workspace C (Fixpipe, rows N floats apart), then sets FLAG in mode 2 on PIPE_FIX; each of
    its AIVs waits, reads its half of the tile's rows (a strided DataCopy: nt floats a row,
    N floats apart), doubles them and stores them to ``out`` the same way. ``shift`` moves
    the AIVs' reads that many columns to the left (a wrong offset: block g > 0 then reads
    columns of block g - 1, whose AIC does not signal it)."""

    def __init__(self, M, K, N, blocks, shift=0):
        self.M, self.K, self.N, self.nt, self.shift = M, K, N, N // blocks, shift

    def __call__(self, addr):
        if ASCEND_IS_AIC():
            g = GetBlockIdx()
            ColumnTile(self.M, self.K, self.nt, self.N)(
                dict(a=addr["a"], b=addr["b"] + g * self.nt * 2, c=addr["ws"] + g * self.nt * 4))
            CrossCoreSetFlag(FLAG, modeId=2, pipe=PIPE_FIX)
        if ASCEND_IS_AIV():
            self.Vector(addr)

    def Vector(self, addr):
        g, sub = GetBlockIdx() // GetTaskRation(), GetSubBlockIdx()
        rows, nt, N = self.M // 2, self.nt, self.N
        first = sub * rows * N + g * nt                  # this AIV's first element of C
        gap = (N - nt) * 4 // 32                         # 32 B blocks between its rows
        pipe = TPipe()
        qin, qout = TQue(TPosition.VECIN, 1), TQue(TPosition.VECOUT, 1)
        pipe.InitBuffer(qin, 1, rows * nt * 4)
        pipe.InitBuffer(qout, 1, rows * nt * 4)
        CrossCoreWaitFlag(FLAG)
        x = qin.AllocTensor(float32)
        start = first - (self.shift if g else 0)
        src = gm_tensor(float32, addr["ws"] + start * 4, rows * N)
        DataCopy(x, src, DataCopyParams(rows, nt * 4 // 32, gap, 0))      # <- tile read
        qin.EnQue(x)
        x, y = qin.DeQue(float32), qout.AllocTensor(float32)
        Muls(y, x, 2.0, rows * nt)
        qout.EnQue(y)
        qin.FreeTensor(x)
        y = qout.DeQue(float32)
        DataCopy(gm_tensor(float32, addr["out"] + first * 4, rows * N), y,
                 DataCopyParams(rows, nt * 4 // 32, 0, gap))
        qout.FreeTensor(y)


def run_column_tiled(blocks=2, M=32, K=16, N=64, shift=0, **kw):
    rng = np.random.default_rng(3)
    a, b = rand(rng, (M, K), half), rand(rng, (K, N), half)
    gm = GlobalMemory(1 << 26)
    addr = {}
    for name, arr in (("a", a), ("b", b)):
        addr[name] = gm.malloc(arr.nbytes)
        gm.write(addr[name], arr.reshape(-1).view(np.uint8))
    for name in ("ws", "out"):
        addr[name] = gm.malloc(M * N * 4)
        gm.write(addr[name], np.zeros(M * N * 4, np.uint8))
    run_kernel(ColumnTiledLeaky(M, K, N, blocks, shift), blocks, (addr,), soc=SOC, gm=gm,
               kernel_type=MIX, **kw)
    got = np.frombuffer(gm.read(addr["out"], M * N * 4), np.float32).reshape(M, N)
    return got, cube_reference(a, b, 16) * np.float32(2)


def test_column_tiles_of_one_matrix_pass_with_every_block_checked():
    for checks in (None, EVERY_BLOCK):
        got, want = run_column_tiled(blocks=2, checks=checks)
        np.testing.assert_array_equal(got, want)
    got, want = run_column_tiled(blocks=4, N=128, checks=EVERY_BLOCK)
    np.testing.assert_array_equal(got, want)


def test_a_tile_read_that_reaches_another_blocks_columns_is_caught_at_its_line():
    with pytest.raises(SyncError) as err:
        run_column_tiled(blocks=2, shift=8, checks=EVERY_BLOCK)     # 8 floats: one 32 B block
    text = str(err.value)
    assert err.value.line == line_of(ColumnTiledLeaky.Vector, "# <- tile read"), text
    assert "AIV 2 (block 1, sub-block 0) reads GM" in text
    assert "while AIC 0 writes" in text and "with Fixpipe on PIPE_FIX" in text
    assert err.value.instruction == "DataCopy" and err.value.pipe == "PIPE_MTE2"


# -- a vector launch: core b reads the workspace slice core b + 1 writes ---------------------------

def neighbour_read(ws, out, with_sync_all):
    """Block b stores 64 floats (its index) to slice b of the workspace, then reads slice
    b + 1 (the next block's; the last block reads slice 0) and stores it to ``out``; with
    ``with_sync_all`` a SyncAll orders the stores before the reads."""
    b, n = GetBlockIdx(), GetBlockNum()
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 256)
    t = buf.Get(float32)
    Duplicate(t, float(b), 64)
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(gm_tensor(float32, ws + b * 256, 64), t, 64)                 # <- slice write
    if with_sync_all:
        SyncAll()
    SetFlag(HardEvent.MTE3_MTE2, 0)
    WaitFlag(HardEvent.MTE3_MTE2, 0)
    DataCopy(t, gm_tensor(float32, ws + (b + 1) % n * 256, 64), 64)       # <- neighbour read
    SetFlag(HardEvent.MTE2_MTE3, 0)
    WaitFlag(HardEvent.MTE2_MTE3, 0)
    DataCopy(gm_tensor(float32, out + b * 256, 64), t, 64)


def run_neighbours(with_sync_all, blocks=4, **kw):
    gm = GlobalMemory(1 << 24)
    ws, out = gm.malloc(blocks * 256), gm.malloc(blocks * 256)
    run_kernel(neighbour_read, blocks, (ws, out, with_sync_all), soc=SOC, gm=gm, **kw)
    return np.frombuffer(gm.read(out, blocks * 256), np.float32).reshape(blocks, 64)


@pytest.mark.parametrize("checks", [None, EVERY_BLOCK])
@pytest.mark.parametrize("lockstep", [None, False])
def test_a_read_of_another_blocks_write_without_sync_all_fails_at_the_read(checks, lockstep):
    with pytest.raises(SyncError) as err:
        run_neighbours(False, checks=checks, lockstep=lockstep)
    text = str(err.value)
    assert err.value.line == line_of(neighbour_read, "# <- neighbour read"), text
    assert err.value.instruction == "DataCopy" and err.value.pipe == "PIPE_MTE2"
    # the reader and the writer, each with its instruction, pipe and line
    b = err.value.core
    assert f"core {b} reads GM" in text
    assert (f"that core {(b + 1) % 4} writes with DataCopy on PIPE_MTE3 at "
            f"{line_of(neighbour_read, '# <- slice write')}") in text
    assert "SyncAll" in text


def test_the_same_kernel_with_sync_all_passes():
    got = run_neighbours(True, sync_all=True, checks=EVERY_BLOCK)
    np.testing.assert_array_equal(got, np.repeat([[1.0], [2.0], [3.0], [0.0]], 64, axis=1))
    # a SyncAll launch whose kernel leaves the SyncAll out still races
    with pytest.raises(SyncError, match="reads GM"):
        run_neighbours(False, sync_all=True)


def test_a_read_race_can_be_a_warning():
    gm = GlobalMemory(1 << 24)
    ws, out = gm.malloc(1024), gm.malloc(1024)
    prof = run_kernel(neighbour_read, 4, (ws, out, False), soc=SOC, gm=gm,
                      checks=CheckerConfig(warn={"Sync"}))
    assert len(prof.warnings) == 1 and "[Sync]" in prof.warnings[0]


def test_blocks_reading_the_same_bytes_and_writing_their_own_pass():
    def shared_input(x, y):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 256)
        t = buf.Get(float32)
        DataCopy(t, gm_tensor(float32, x, 64), 64)               # every block reads x
        SetFlag(HardEvent.MTE2_MTE3, 0)
        WaitFlag(HardEvent.MTE2_MTE3, 0)
        DataCopy(gm_tensor(float32, y + GetBlockIdx() * 256, 64), t, 64)

    gm = GlobalMemory(1 << 24)
    x, y = gm.malloc(256), gm.malloc(1024)
    for lockstep in (None, False):
        assert run_kernel(shared_input, 4, (x, y), soc=SOC, gm=gm, lockstep=lockstep,
                          checks=EVERY_BLOCK).warnings == []


def test_strided_reads_between_another_blocks_rows_pass():
    """Block b reads and writes the columns [16b, 16b + 16) of a 4 x 64 float matrix in place:
    the blocks' rows interleave and share no byte."""
    def column_scale(x):
        b = GetBlockIdx()
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 256)
        t = buf.Get(float32)
        tile = gm_tensor(float32, x + b * 64, 4 * 64)
        DataCopy(t, tile, DataCopyParams(4, 2, 6, 0))
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        Muls(t, t, 2.0, 64)
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        DataCopy(tile, t, DataCopyParams(4, 2, 0, 6))

    for lockstep in (None, False):
        gm = GlobalMemory(1 << 24)
        x = gm.malloc(1024)
        gm.write(x, np.arange(256, dtype=np.float32))
        run_kernel(column_scale, 4, (x,), soc=SOC, gm=gm, lockstep=lockstep,
                   checks=EVERY_BLOCK)
        got = np.frombuffer(gm.read(x, 1024), np.float32)
        np.testing.assert_array_equal(got, np.arange(256, dtype=np.float32) * 2)


# -- scalar stores are named as such ---------------------------------------------------------------

def both_set_value(y):
    g = gm_tensor(float32, y, 8)
    g.SetValue(0, float(GetBlockIdx()))                                   # <- set value


def test_a_set_value_race_names_set_value_on_pipe_s():
    gm = GlobalMemory(1 << 24)
    y = gm.malloc(64)
    with pytest.raises(GmAccessError) as err:
        run_kernel(both_set_value, 2, (y,), soc=SOC, gm=gm)
    text = str(err.value)
    assert err.value.instruction == "SetValue" and err.value.pipe == "PIPE_S", text
    assert "DataCopy" not in text and "PIPE_MTE3" not in text
    assert f"with SetValue on PIPE_S at {line_of(both_set_value, '# <- set value')}" in text


# -- the traceback of a checker error ------------------------------------------------------------

def _frames(exc):
    return [(f.filename, f.name) for f in traceback.extract_tb(exc.__traceback__)]


def _simulator_frames(exc):
    package = os.path.dirname(os.path.abspath(npusim.__file__)) + os.sep
    return [f for f, _ in _frames(exc) if os.path.abspath(f).startswith(package)]


def racy_vector(x):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 256)
    t = buf.Get(float32)
    DataCopy(t, gm_tensor(float32, x, 64), 64)
    Muls(t, t, 2.0, 64)                              # <- no MTE2_V flag before this read


def test_a_checker_error_shows_the_kernel_lines_without_the_simulators_frames(monkeypatch):
    monkeypatch.delenv("NPUSIM_FULL_TRACEBACK", raising=False)
    gm = GlobalMemory(1 << 24)
    x = gm.malloc(256)
    for kw in ({}, {"lockstep": False}, {"sync_all": True}):
        with pytest.raises(SyncError) as err:
            run_kernel(racy_vector, 2, (x,), soc=SOC, gm=gm, **kw)
        frames = _frames(err.value)
        assert _simulator_frames(err.value) == [], frames
        assert frames[-1][1] == "racy_vector", frames         # the kernel's line, last
        assert "# <- no MTE2_V flag" in "".join(traceback.format_exception(err.value))
    with pytest.raises(SyncError) as err:                     # a MIX launch (greenlets)
        run_column_tiled(blocks=2, shift=8, checks=EVERY_BLOCK)
    assert _simulator_frames(err.value) == [], _frames(err.value)
    assert _frames(err.value)[-1][1] == "Vector"
    # a finding of the end of the launch: the caller's frames, the kernel line in the message
    with pytest.raises(SyncError) as err:
        run_neighbours(False)
    assert _simulator_frames(err.value) == [], _frames(err.value)
    assert _frames(err.value)[-1][1] == "run_neighbours"
    assert line_of(neighbour_read, "# <- neighbour read") in str(err.value)
    # the switch keeps every frame
    monkeypatch.setenv("NPUSIM_FULL_TRACEBACK", "1")
    with pytest.raises(SyncError) as err:
        run_kernel(racy_vector, 2, (x,), soc=SOC, gm=gm)
    assert _simulator_frames(err.value), _frames(err.value)
    assert _frames(err.value)[-1][1] == "report"              # the checker's raise


def test_checker_config_is_exported():
    import npusim.ascendc
    from npusim.ascendc import checker
    assert npusim.ascendc.CheckerConfig is checker.CheckerConfig
    assert npusim.CheckerConfig is checker.CheckerConfig
