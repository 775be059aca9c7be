"""Timing-only launches (npusim.ascendc.timing_only): the records, the timeline, the profile
and the checker's findings of a functional run, without the arithmetic; a kernel whose
control flow reads a value the launch did not compute stops at its line."""
from __future__ import annotations

import re

import numpy as np
import pytest

import npusim
from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import (GlobalTensor, LocalTensor, TPipe, TQue, TPosition, DataCopy, Adds,
                            Exp, GetBlockIdx, KernelMetaType, Mul, Cast, RoundMode, half, float32,
                            HardEvent, SetFlag, WaitFlag, UnaryRepeatParams, WholeReduceSum,
                            TBuf)
from npusim.ascendc import timing_only
from npusim.ascendc.checker import CheckerConfig
from npusim_tools import registry

from aclnn_helpers import load_example

SOC = get_soc("Ascend910B1")


def _timeline(p):
    """Everything a profile says about the launch but the host times."""
    t = p.timing
    return dict(
        duration=p.duration_us, pipes=p.pipe_time_us,
        core_pipes={k: v.tolist() for k, v in p.core_pipe_time_us.items()},
        read=p.bytes_read, written=p.bytes_written, hbm=p.hbm_bytes, bound=(p.bound,
                                                                            p.bound_percent),
        warnings=list(p.warnings), kinds=p.core_kinds, ids=p.core_ids,
        records=[list(r) for r in p.records], lines=p.lines,
        cycles=t.cycles, start=t.block_start.tolist(), end=t.block_end.tolist(),
        busy={k: v.tolist() for k, v in t.pipe_busy.items()}, spans=t.spans,
        l2=(t.hbm_bytes, t.l2_hit_bytes))


def _same_launches(a, b):
    assert len(a) == len(b) and a
    for pa, pb in zip(a, b):
        ta, tb = _timeline(pa), _timeline(pb)
        for key in ta:
            assert ta[key] == tb[key], key


@pytest.mark.parametrize("op, shape, dtype", [
    ("Add", (3, 40_000), "float16"),                 # element-wise, tails per core
    ("Softmax", (96, 1000), "float16"),              # Cast, reductions, GetValue of a max
    ("Matmul", (96, 160, 200), "float16"),           # the Matmul API on the AICs
])
def test_operator_timeline_is_the_functional_one(op, shape, dtype):
    entry = registry.get(op)
    case = registry.make_case(entry, shape, dtype)
    # profiling on: the profiles keep their records, lines and spans
    _same_launches(_with_spans(entry, case, False), _with_spans(entry, case, True))


def _with_spans(entry, case, timing_only_mode):
    import aclnn.runtime as rt
    rt_state = rt.state
    with registry.acl_session({"npusim": {"soc": "Ascend910B1", "keep_records": None,
                                          "profiling": True,
                                          "timing_only": timing_only_mode}}) as stream:
        dev = rt.current_device()
        made = {n: registry._tensor(np.ascontiguousarray(h), stream)
                for n, h in case.tensors.items()}
        ws, ex, ret = entry.first_phase({n: t for n, (t, _) in made.items()}, case)
        assert ret == 0
        work = 0
        if ws:
            work, ret = registry.acl.rt.malloc(ws, 0)
        assert entry.second_phase(work, ws, ex, stream) == 0
        assert registry.acl.rt.synchronize_stream(stream) == 0
        profiles = list(dev.profiles)
    assert rt.state is rt_state
    return profiles


def test_mixed_matmul_api_launch_timeline_and_output_flags():
    ex = load_example("matmul_leakyrelu_mix")
    soc = SOC
    M, N, K = 256, 256, 128
    tiling = ex.host_tiling(soc, M, N, K, 2, 0.001)
    profiles, cs = [], []
    for functional in (True, False):
        gm = GlobalMemory(soc.memory_size)
        rng = np.random.default_rng(0)
        hosts = [rng.standard_normal((M, K)).astype(np.float16),
                 rng.standard_normal((K, N)).astype(np.float16),
                 rng.standard_normal(N).astype(np.float32)]
        addrs = [gm.malloc(h.nbytes) for h in hosts]
        for a, h in zip(addrs, hosts):
            gm.write(a, h)
        c = gm.malloc(M * N * 4)
        ws = gm.malloc(soc.lib_api_workspace_size)
        p = run_kernel(ex.matmul_leakyrelu_custom, tiling.cube.usedCoreNum // 2,
                       (*addrs, c, ws, tiling), soc=soc, gm=gm, keep_spans=True,
                       kernel_type=KernelMetaType.KERNEL_TYPE_MIX_AIC_1_2,
                       functional=functional)
        profiles.append(p)
        cs.append((gm, c))
    _same_launches([profiles[0]], [profiles[1]])
    # the timing-only run's C is flagged not computed; the functional run's is not
    (gm_f, c_f), (gm_t, c_t) = cs
    assert not gm_f.uncomputed
    assert gm_t.uncomputed.any(c_t, c_t + M * N * 4)
    # a host write makes the bytes real again
    gm_t.write(c_t, np.zeros(M * N, np.float32))
    assert not gm_t.uncomputed.any(c_t, c_t + M * N * 4)


def test_tuned_basic_api_matmul_with_unit_flag_has_the_functional_timeline():
    """examples/matmul_tuned.py: static L1/L0 buffers, LoadData3DParamsV2 and the unitFlag
    hand-off between Mmad and Fixpipe record the same in both modes."""
    from npusim.ascendc import KernelMetaType
    ex = load_example("matmul_tuned")
    t = ex.TunedTiling(256, 256, 512)
    profiles = []
    for functional in (True, False):
        gm = GlobalMemory(1 << 24)
        a, b, c = gm.malloc(256 * 512 * 2), gm.malloc(512 * 256 * 2), gm.malloc(256 * 256 * 2)
        gm.write(a, np.ones(256 * 512, np.float16))
        gm.write(b, np.ones(512 * 256, np.float16))
        profiles.append(run_kernel(ex.matmul_tuned, 2, (a, b, c, t), soc=SOC, gm=gm,
                                   kernel_type=KernelMetaType.KERNEL_TYPE_AIC_ONLY,
                                   keep_spans=True, functional=functional))
    _same_launches([profiles[0]], [profiles[1]])


# -- a kernel of our own: element-wise, the checker tracking every block ---------------------
N_ELEMS, TILE = 8 * 2048, 512


def _ew_kernel(x, y, branch_on_data):
    pipe = TPipe()
    qin, qout = TQue(TPosition.VECIN, 2), TQue(TPosition.VECOUT, 2)
    pipe.InitBuffer(qin, 2, TILE * 2)
    pipe.InitBuffer(qout, 2, TILE * 4)
    per = N_ELEMS // 8
    xg, yg = GlobalTensor(half), GlobalTensor(float32)
    xg.SetGlobalBuffer(x + GetBlockIdx() * per * 2, per)
    yg.SetGlobalBuffer(y + GetBlockIdx() * per * 4, per)
    for i in range(per // TILE):
        a = qin.AllocTensor(half)
        DataCopy(a, xg[i * TILE], TILE)
        qin.EnQue(a)
        a = qin.DeQue(half)
        b = qout.AllocTensor(float32)
        Cast(b, a, RoundMode.CAST_NONE, TILE)
        Adds(b, b, 1.5, TILE)
        Exp(b, b, TILE)
        Mul(b, b, b, TILE)
        Adds(b, b, 0.5, 64, TILE // 64, UnaryRepeatParams())        # level 0
        WholeReduceSum(b, b, 64, TILE // 64, 1, 1, 8)                # in place: by repeat
        if branch_on_data:
            SetFlag(HardEvent.V_S, 0)
            WaitFlag(HardEvent.V_S, 0)
        if branch_on_data == "input":
            v = a.GetValue(3)                         # copied input data: real
            assert float(v) == float(v) or np.isnan(v)
        elif branch_on_data == "computed" and b.GetValue(0) > 0:   # line named by the error
            Adds(b, b, 1.0, TILE)
        qin.FreeTensor(a)
        qout.EnQue(b)
        b = qout.DeQue(float32)
        DataCopy(yg[i * TILE], b, TILE)
        qout.FreeTensor(b)


def _run_ew(functional, branch=None, lockstep=None):
    gm = GlobalMemory(SOC.memory_size)
    xh = np.random.default_rng(1).standard_normal(N_ELEMS).astype(np.float16)
    x, y = gm.malloc(xh.nbytes), gm.malloc(N_ELEMS * 4)
    gm.write(x, xh)
    p = run_kernel(_ew_kernel, 8, (x, y, branch), soc=SOC, gm=gm, keep_spans=True,
                   functional=functional, checks=CheckerConfig(all_blocks=True),
                   lockstep=lockstep)
    return p, np.frombuffer(gm.read(y, N_ELEMS * 4), np.float32), xh


@pytest.mark.parametrize("lockstep", [True, False])
def test_own_elementwise_kernel_identical_and_skips_the_arithmetic(lockstep):
    pf, yf, xh = _run_ew(True, "input", lockstep)
    pt, yt, _ = _run_ew(False, "input", lockstep)
    _same_launches([pf], [pt])
    ref = np.exp(xh.astype(np.float32) + np.float32(1.5)) ** 2 + np.float32(0.5)
    sums = ref.reshape(-1, TILE // 64, 64).sum(axis=2, dtype=np.float64)
    ref.reshape(-1, TILE)[:, :TILE // 64] = sums.reshape(-1, TILE // 64)
    np.testing.assert_allclose(yf, ref, rtol=1e-5)
    assert not np.allclose(yt, ref, rtol=1e-5, equal_nan=True)   # nothing was computed


def test_branch_on_uncomputed_value_stops_at_the_kernel_line():
    _run_ew(True, "computed")                              # functionally: fine
    with pytest.raises(timing_only.TimingOnlyError) as info:
        _run_ew(False, "computed")
    err = info.value
    assert "timing-only mode cannot run this kernel" in str(err)
    assert "test_timing_only.py" in err.line
    import inspect
    src = inspect.getsource(_ew_kernel).splitlines()
    line = int(err.line.rsplit(":", 1)[1])
    first = inspect.getsourcelines(_ew_kernel)[1]
    assert "b.GetValue(0) > 0" in src[line - first]
    assert "read by" in str(err)


def test_environment_switch_and_device_flag(monkeypatch):
    monkeypatch.setenv(timing_only.ENV, "1")
    p, y, xh = _run_ew(None)
    ref = np.exp(xh.astype(np.float32) + np.float32(1.5)) ** 2 + np.float32(0.5)
    tail = ref.reshape(-1, TILE)[:, TILE // 64:]
    assert not np.allclose(y.reshape(-1, TILE)[:, TILE // 64:], tail, rtol=1e-5, equal_nan=True)
    monkeypatch.setenv(timing_only.ENV, "0")
    _, y, _ = _run_ew(None)
    np.testing.assert_allclose(y.reshape(-1, TILE)[:, TILE // 64:], tail, rtol=1e-5)
    dev = npusim.Device("Ascend910B1", timing_only=True)
    assert dev.timing_only is True


def test_uncomputed_value_computes_and_refuses_conversion():
    u = timing_only.UNCOMPUTED
    assert (np.float32(1) / u) is u and (-u * 2 + 1) is u and np.sqrt(u) is u and (u < 0) is u
    for convert in (bool, int, float, str, lambda v: range(v), lambda v: [0][v]):
        with pytest.raises(timing_only.TimingOnlyError):
            convert(u)


def test_spans():
    s = timing_only.Spans()
    s.add(10, 20)
    s.add(30, 40)
    s.add(15, 32)
    assert (s.starts, s.ends) == ([10], [40])
    s.remove(20, 25)
    assert (s.starts, s.ends) == ([10, 25], [20, 40])
    assert s.any(19, 21) and not s.any(20, 25) and s.any(24, 26) and not s.any(0, 10)


def test_sweep_timing_only_gives_the_functional_figures():
    from npusim_tools import sweep
    axes = dict(cores=[1, 3], shape=(40_000,), dtype="float16")
    f = sweep("Add", executor="serial", progress=False, **axes)
    t = sweep("Add", executor="serial", progress=False, timing_only=True, **axes)
    for rf, rt in zip(f.records, t.records):
        assert rf["check"] == "ok" and rt["check"] == "timing-only"
        assert {k: v for k, v in rf.items() if k not in ("check", "max_abs_err", "mismatches")} \
            == {k: v for k, v in rt.items() if k != "check"}


def test_cli_run_timing_only(capsys):
    from npusim_tools.cli import main
    assert main(["run", "Add", "--shape", "4096", "--dtype", "float16", "--timing-only"]) == 0
    out = capsys.readouterr().out
    assert "golden check: skipped (timing-only" in out and "Task Duration" in out


def test_runtime_switch_reaches_live_and_new_devices():
    import aclnn.runtime as rt
    with registry.acl_session({"npusim": {"soc": "Ascend910B1"}}):
        dev = rt.current_device()
        assert dev.timing_only is None
        rt.set_timing_only(True)
        assert dev.timing_only is True and rt.state.timing_only is True
        rt.set_timing_only(None)
        assert dev.timing_only is None
        with pytest.raises(ValueError, match="timing_only"):
            rt.set_timing_only("yes")


def _race_kernel(y):
    pipe = TPipe()
    buf = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(buf, TILE * 4)
    yg = GlobalTensor(float32)
    yg.SetGlobalBuffer(y + GetBlockIdx() * TILE * 4, TILE)
    a = buf.Get(float32)
    Adds(a, a, 0.5, 64, TILE // 64, UnaryRepeatParams())   # level 0: reads bytes never written
    WholeReduceSum(a, a, 64, TILE // 64, 1, 1, 8)           # in place, repeat by repeat
    DataCopy(yg, a, TILE)                                   # MTE3 reads what V wrote


def test_checker_findings_are_the_functional_ones():
    """A race the checker keeps as a warning is found, with the same words, either way."""
    found = []
    for functional in (True, False):
        gm = GlobalMemory(SOC.memory_size)
        y = gm.malloc(4 * TILE * 4)
        p = run_kernel(_race_kernel, 4, (y,), soc=SOC, gm=gm, functional=functional,
                       checks=CheckerConfig(warn=frozenset({"Sync", "Uninitialised"}),
                                            all_blocks=True))
        found.append(p.warnings)
    assert found[0] == found[1]
    text = "\n".join(found[0])
    assert "PIPE_MTE3" in text and "Uninitialised" in text


def test_scalar_scan_of_uncomputed_indices_is_refused():
    """EmbeddingDenseBackward walks sorted indices (computed on the device) through the
    scalar unit: timing-only cannot know its timing, and says so instead of guessing."""
    entry = registry.get("EmbeddingDenseBackward")
    case = registry.make_case(entry, (256, 16), "float32")
    registry.run_aclnn(entry, case, timing_only=False)
    with pytest.raises(registry.RunError, match="timing-only mode cannot run this kernel") as err:
        registry.run_aclnn(entry, case, timing_only=True)
    # the line named is the operator's kernel's (npusim.kernels is kernel code), not the
    # event loop's that runs the device
    assert re.search(r" at kernel\w*\.py:\d+:", str(err.value)), str(err.value)
    assert "events.py" not in str(err.value)
