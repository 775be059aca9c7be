"""The scalar unit's own work (npusim/ascendc/scalar.py): what each API call charges PIPE_S,
GET_TILING_DATA against compile-time constant tiling, and scalar work holding back the
pipes it issues to (the single in-order issue queue).

Expected scalar times are counted by hand from the kernels below and the preset's costs
(docs/calibration.md "Scalar unit"), not read from the simulator."""
import dataclasses
from dataclasses import dataclass

import numpy as np
import pytest

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import (GET_TILING_DATA, Adds, CacheMode, DataCopy, GlobalTensor,
                            HardEvent, LocalTensor, SetFlag, TPipe, TPosition, TQue, WaitFlag,
                            float32)
from npusim.ascendc.scalar import tiling_bytes, tiling_read_cycles
from npusim.ascendc.types import Pipe

SOC = get_soc("Ascend910B1")
N = 2048                    # float32 elements per tile


@dataclass
class Tiling:
    totalLength: int
    tileNum: int
    tileLength: int
    pad: tuple = (0, 0, 0, 0, 0)        # 3 + 5 fields: 32 bytes, one 64 B line


def static_kernel(x, z, tiling, read_tiling):
    """z = x + 1 over ``tileNum`` tiles, static tensors and explicit flags: per tile two
    DataCopies, one Adds, four flag instructions (issue costs), two GM operator[]."""
    t = GET_TILING_DATA(tiling) if read_tiling else tiling
    xg, zg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x, t.totalLength)
    zg.SetGlobalBuffer(z, t.totalLength)
    a = LocalTensor.at(float32, TPosition.VECIN, 0, t.tileLength)
    b = LocalTensor.at(float32, TPosition.VECOUT, t.tileLength * 4, t.tileLength)
    for i in range(t.tileNum):
        DataCopy(a, xg[i * t.tileLength], t.tileLength)
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        Adds(b, a, 1.0, t.tileLength)
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        DataCopy(zg[i * t.tileLength], b, t.tileLength)
        if i + 1 < t.tileNum:           # the next copy-in overwrites a and b's source
            SetFlag(HardEvent.MTE3_MTE2, 0)
            WaitFlag(HardEvent.MTE3_MTE2, 0)


def run(kernel, *args, soc=SOC, tiles=2):
    gm = GlobalMemory(soc.memory_size)
    n = N * tiles
    x, z = gm.malloc(n * 4), gm.malloc(n * 4)
    xs = np.arange(n, dtype=np.float32)
    gm.write(x, xs)
    prof = run_kernel(kernel, 1, (x, z) + args, soc=soc, gm=gm, name="k", keep_spans=True,
                      reserve_ub=False)
    out = np.frombuffer(gm.view(z, n * 4), np.float32)
    assert np.array_equal(out, xs + 1)
    return prof


def scalar_cycles(prof):
    return float(prof.timing.pipe_busy[Pipe.PIPE_S][0])


def first_start(prof, pipe):
    return min(s for p, s, e, *_ in prof.timing.spans[0] if p == pipe)


def test_issue_costs_are_counted_per_instruction():
    tiles = 3
    prof = run(static_kernel, Tiling(N * tiles, tiles, N), False, tiles=tiles)
    # per tile: 2 DataCopy + Adds + 4 flag instructions, + 2 more flags between tiles;
    # the Adds of one tile of 2048 float32 (32 repeats) issue one instruction
    instructions = tiles * 7 + (tiles - 1) * 2
    offsets = tiles * 2
    expect = (SOC.scalar_entry_cycles + instructions * SOC.scalar_issue_cycles
              + offsets * SOC.scalar_gm_offset_cycles)
    assert scalar_cycles(prof) == pytest.approx(expect)
    names = [r[5] for r in prof.records[0]]
    assert names[0] == "KernelEntry" and names.count("KernelEntry") == 1


def test_costs_off_gives_no_scalar_time():
    off = dataclasses.replace(SOC, scalar_entry_cycles=0.0, scalar_issue_cycles=0.0,
                              scalar_gm_offset_cycles=0.0)
    prof = run(static_kernel, Tiling(N * 2, 2, N), False, soc=off)
    assert scalar_cycles(prof) == 0.0
    assert first_start(prof, Pipe.PIPE_MTE2) == 0.0


def test_kernel_entry_delays_the_first_copy():
    prof = run(static_kernel, Tiling(N * 2, 2, N), False)
    # nothing is issued before the entry's scalar work and the first copy's address are done
    assert first_start(prof, Pipe.PIPE_MTE2) == pytest.approx(
        SOC.scalar_entry_cycles + SOC.scalar_gm_offset_cycles)


def test_tiling_read_at_run_time_costs_scalar_time_and_delays_the_pipes():
    tiling = Tiling(N * 2, 2, N)
    const = run(static_kernel, tiling, False)
    read = run(static_kernel, tiling, True)
    # 8 fields of 4 bytes: one 64 B line missed, 8 words copied
    assert tiling_bytes(tiling) == 32
    cost = SOC.scalar_tiling_line_cycles + 8 * SOC.scalar_tiling_word_cycles
    assert tiling_read_cycles(SOC, 32) == cost
    assert scalar_cycles(read) - scalar_cycles(const) == pytest.approx(cost)
    # the first DataCopy waits for the tiling read: MTE2 and the whole kernel end later (the
    # first copy's address arithmetic, after the read, is issue work that does not delay:
    # one issue cost of slack)
    slack = SOC.scalar_gm_offset_cycles
    assert first_start(read, Pipe.PIPE_MTE2) == pytest.approx(
        first_start(const, Pipe.PIPE_MTE2) + cost, abs=slack)
    assert read.timing.cycles == pytest.approx(const.timing.cycles + cost, abs=slack)
    assert read.pipe_time_us["aiv_scalar_time"] > const.pipe_time_us["aiv_scalar_time"]


def test_tiling_bytes_of_structs_and_buffers():
    @dataclass
    class Inner:
        a: int
        b: float

    @dataclass
    class Outer:
        n: int
        inner: Inner
        arr: tuple

    assert tiling_bytes(Outer(1, Inner(2, 3.0), (1, 2, 3))) == 4 + 8 + 12
    assert tiling_bytes(np.zeros(10, np.int32)) == 40
    assert tiling_bytes(b"\0" * 100) == 100
    assert tiling_read_cycles(SOC, 100) == 2 * SOC.scalar_tiling_line_cycles + 25


def queue_kernel(x, z, tiles):
    pipe = TPipe()
    qi, qo = TQue(TPosition.VECIN), TQue(TPosition.VECOUT)
    pipe.InitBuffer(qi, 1, N * 4)
    pipe.InitBuffer(qo, 1, N * 4)
    xg, zg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x, N * tiles)
    zg.SetGlobalBuffer(z, N * tiles)
    for i in range(tiles):
        a = qi.AllocTensor(float32)
        DataCopy(a, xg[i * N], N)
        qi.EnQue(a)
        a = qi.DeQue(float32)
        b = qo.AllocTensor(float32)
        Adds(b, a, 1.0, N)
        qo.EnQue(b)
        qi.FreeTensor(a)
        b = qo.DeQue(float32)
        DataCopy(zg[i * N], b, N)
        qo.FreeTensor(b)


def test_queue_operations_charge_their_book_keeping():
    tiles = 3
    base = dataclasses.replace(SOC, scalar_queue_cycles=0.0)
    without = run(queue_kernel, tiles, soc=base, tiles=tiles)
    with_q = run(queue_kernel, tiles, tiles=tiles)
    # 8 queue operations a tile: AllocTensor, EnQue, DeQue, FreeTensor on two queues
    assert scalar_cycles(with_q) - scalar_cycles(without) == pytest.approx(
        tiles * 8 * SOC.scalar_queue_cycles)


def hinted_kernel(x, z, hint):
    xg, zg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x, N)
    zg.SetGlobalBuffer(z, N)
    if hint:
        xg.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
    a = LocalTensor.at(float32, TPosition.VECIN, 0, N)
    b = LocalTensor.at(float32, TPosition.VECOUT, N * 4, N)
    DataCopy(a, xg[0], N)
    SetFlag(HardEvent.MTE2_V, 0)
    WaitFlag(HardEvent.MTE2_V, 0)
    Adds(b, a, 1.0, N)
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(zg[0], b, N)


def test_an_l2_cache_hint_makes_address_arithmetic_dearer():
    plain = run(hinted_kernel, False, tiles=1)
    hinted = run(hinted_kernel, True, tiles=1)
    assert scalar_cycles(hinted) - scalar_cycles(plain) == pytest.approx(
        SOC.scalar_gm_hint_cycles)


def getvalue_kernel(x, z, count):
    """Reads ``count`` UB elements through the scalar unit before copying out: the copy-out
    cannot be issued before the scalar unit is through with them."""
    xg, zg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x, N)
    zg.SetGlobalBuffer(z, N)
    a = LocalTensor.at(float32, TPosition.VECIN, 0, N)
    b = LocalTensor.at(float32, TPosition.VECOUT, N * 4, N)
    DataCopy(a, xg[0], N)
    SetFlag(HardEvent.MTE2_V, 0)
    WaitFlag(HardEvent.MTE2_V, 0)
    Adds(b, a, 1.0, N)
    SetFlag(HardEvent.V_S, 0)
    WaitFlag(HardEvent.V_S, 0)
    total = 0.0
    for i in range(count):
        total += float(b.GetValue(i))
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(zg[0], b, N)


def test_scalar_work_delays_the_pipe_it_issues_to():
    few = run(getvalue_kernel, 1, tiles=1)
    many = run(getvalue_kernel, 201, tiles=1)
    # 200 more UB GetValues: the copy-out (MTE3) starts 200 x scalar_cycles later
    delay = 200 * SOC.scalar_cycles
    assert first_start(many, Pipe.PIPE_MTE3) - first_start(few, Pipe.PIPE_MTE3) == \
        pytest.approx(delay)
    assert many.timing.cycles - few.timing.cycles == pytest.approx(delay)
