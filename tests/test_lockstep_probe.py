"""A cube launch whose lockstep groups no earlier launch found probes for them timing-only
first (npusim.lockstep._probe): the first launch then computes each block's work once (a
group that parts no longer throws its functional run away), its results are those of the
launch without the probe, and the probe leaves no trace in GM. The kernel is the
benchmark's basic-API cube kernel (static buffers, SetFlag/WaitFlag) at 512^3 on 3 blocks:
8 base blocks, so blocks 0 and 1 take 3 and block 2 takes 2 (the groups part at the end of
the tile loop)."""
import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest

from npusim import get_soc, lockstep, run_kernel
from npusim.ascendc import KernelMetaType, checker
from npusim.ascendc import core as _core
from npusim.ascendc import timing_only
from npusim.ascendc.cube import mmad

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_cube_kernel import cube_matmul, operands as bench_operands  # noqa: E402

SOC = get_soc("Ascend910B2")
N, BLOCKS = 512, 3
AIC = KernelMetaType.KERNEL_TYPE_AIC_ONLY


@pytest.fixture(autouse=True)
def fresh_cache():
    lockstep._CACHE.clear()
    yield
    lockstep._CACHE.clear()


def operands():
    """The benchmark's operands at N (random fp16 A and B in GM, C's N*N floats) and the
    kernel's arguments for BLOCKS blocks."""
    *_, gm, pa, pb, pc = bench_operands(N)
    return gm, (pa, pb, pc, N, BLOCKS)


def launch(gm, args, monkeypatch, probe: bool):
    """The first launch of the kernel (no groups known), with or without the probe: (C's
    bytes, the profile's figures, member-Mmads computed)."""
    monkeypatch.setattr(lockstep, "PROBE", probe)
    lockstep._CACHE.clear()
    counted = []
    sums = mmad._fused.mmad_fractals_fused
    numpy_sums = mmad.mmad_steps

    def count(fn):
        def wrapper(*a, **k):
            counted.append(len(a[-1]))             # the members of this Mmad
            return fn(*a, **k)
        return wrapper
    monkeypatch.setattr(mmad._fused, "mmad_fractals_fused", count(sums))
    monkeypatch.setattr(mmad, "mmad_steps", count(numpy_sums))
    prof = run_kernel(cube_matmul, BLOCKS, args, soc=SOC, gm=gm, kernel_type=AIC)
    monkeypatch.setattr(mmad._fused, "mmad_fractals_fused", sums)
    monkeypatch.setattr(mmad, "mmad_steps", numpy_sums)
    c = gm.read(args[2], N * N * 4)
    figures = (prof.duration_us, {k: v.tolist() for k, v in prof.core_pipe_time_us.items()},
               prof.pipe_time_us, prof.bytes_read, prof.bytes_written, prof.warnings)
    return hashlib.sha256(bytes(c)).hexdigest(), figures, sum(counted)


def test_the_first_launch_computes_each_blocks_work_once_with_the_same_results(monkeypatch):
    gm, args = operands()
    plain = launch(gm, args, monkeypatch, probe=False)
    gm.write(args[2], np.zeros(N * N, np.float32))
    probed = launch(gm, args, monkeypatch, probe=True)
    assert probed[:2] == plain[:2]
    tiles = (N // 128) * (N // 256)                     # base blocks of 128 x 256
    steps = N // 64                                     # Mmads (k steps of 64) per tile
    assert probed[2] == tiles * steps                   # each block's Mmads, once
    assert plain[2] > probed[2]                         # the group of all, thrown away
    assert lockstep._CACHE and list(lockstep._CACHE.values())[0][0] == [(0, 1), (2,)]


def test_a_wrong_guess_costs_time_not_results(monkeypatch):
    gm, args = operands()
    want = launch(gm, args, monkeypatch, probe=False)[:2]
    for guess in ([(0, 1, 2)], [(0, 2), (1,)], [(0,), (1,), (2,)], None):
        monkeypatch.setattr(lockstep, "_probe", lambda *a, g=guess: g)
        gm.write(args[2], np.zeros(N * N, np.float32))
        assert launch(gm, args, monkeypatch, probe=True)[:2] == want, guess


def test_the_probe_leaves_gm_and_its_uncomputed_spans_as_they_were(monkeypatch):
    gm, args = operands()
    gm.write(args[2], np.full(N * N, 7.0, np.float32))
    spans = timing_only.gm_spans(gm)
    spans.add(args[2] + 64, args[2] + 4096)             # C partly uncomputed already
    before = {al.base: al.buf.copy() for al in gm.allocations()}
    kw = dict(end_block=lambda ctx: None, soc=SOC, gm=gm, capacity=SOC.ub_usable,
              kind=_core.AIC, config=checker.default())
    parts = lockstep._probe(cube_matmul, args, BLOCKS, **kw)
    assert parts == [(0, 1), (2,)]
    for al in gm.allocations():
        assert np.array_equal(al.buf, before[al.base]), hex(al.base)
    assert (gm.uncomputed.starts, gm.uncomputed.ends) == ([args[2] + 64], [args[2] + 4096])
    gm.uncomputed = None                                # none before: none after
    assert lockstep._probe(cube_matmul, args, BLOCKS, **kw) == [(0, 1), (2,)]
    assert getattr(gm, "uncomputed", None) is None

    ran = []

    def refused(*a):
        ran.append(1)
    refused.npusim_timing_only = False                  # cannot run timing-only: not run
    assert lockstep._probe(refused, args, BLOCKS, **kw) is None and not ran

    def failing(pa, pb, pc, n, _):
        cube_matmul(pa, pb, pc, n, 8)       # blocks 0-2 store one tile each, none parts
        raise RuntimeError("after its stores")
    assert lockstep._probe(failing, args, BLOCKS, **kw) is None     # the launch decides
    for al in gm.allocations():
        assert np.array_equal(al.buf, before[al.base]), hex(al.base)


def test_a_kernel_without_mmad_is_not_probed_past_the_horizon():
    """Timing-only saves a kernel of copies and flags little: the probe stops after
    PROBE_HORIZON records without a Mmad (None: the launch starts from one group), rather
    than running it to its end as a second launch."""
    from npusim.ascendc import GetBlockIdx, HardEvent, SetFlag, WaitFlag
    gm, args = operands()
    loops = []

    def flags_only(*a):
        i = 0
        while i < 1000 + GetBlockIdx():          # parts at the end, as the tile loops do
            loops.append(i)
            SetFlag(HardEvent.MTE2_MTE1, 0)
            WaitFlag(HardEvent.MTE2_MTE1, 0)
            i += 1
    kw = dict(end_block=lambda ctx: None, soc=SOC, gm=gm, capacity=SOC.ub_usable,
              kind=_core.AIC, config=checker.default())
    assert lockstep._probe(flags_only, args, BLOCKS, **kw) is None
    assert len(loops) <= lockstep.PROBE_HORIZON // 2 + 1


def test_the_probe_prints_nothing(monkeypatch, capsys):
    """The probe runs the kernel's Python once more, timing-only: what it prints is dropped,
    so the first launch prints once per group it runs (here (0, 1) and (2,)), as a later
    launch from the kept groups does."""
    def printing(*a):
        print("tile loop starts")
        cube_matmul(*a)
    gm, args = operands()
    monkeypatch.setattr(lockstep, "PROBE", True)
    lockstep._CACHE.clear()
    printed = []
    for _ in range(2):                                  # the first launch, then a later one
        capsys.readouterr()
        run_kernel(printing, BLOCKS, args, soc=SOC, gm=gm, kernel_type=AIC)
        printed.append(capsys.readouterr().out)
    assert list(lockstep._CACHE.values())[0][0] == [(0, 1), (2,)]
    assert printed == ["tile loop starts\n" * 2] * 2
