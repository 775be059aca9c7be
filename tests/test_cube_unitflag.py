"""unitFlag on Mmad and Fixpipe: the same bytes as the flag-synchronised form, Fixpipe
starting on the units the last Mmad releases (before the Mmad ends), FIX time counting its
waits, and the checker's view of the pair (Mmad.md / Fixpipe.md unitFlag rows; the
mmad_unitflag sample's pattern: 2 on the k-loop's Mmads, 3 on the last, 3 on Fixpipe)."""
import numpy as np
import pytest

from npusim import SyncError, get_soc
from npusim.ascendc import *  # noqa: F403
from tests.test_cube_layouts import aic_run, gm_tensor, sync

SOC = get_soc("Ascend910B1")
M, N, K, ROUNDS = 64, 64, 128, 4
KK = K // ROUNDS


def matmul_kernel(unit: bool, fix_flag: int | None = None, last_flag: int | None = None,
                  m_fix_flag: bool | None = None):
    """C = A @ B over ROUNDS k steps into one L0C tile, then one Fixpipe; ``unit`` uses the
    unitFlag hand-off (2, ..., 2, 3 / 3) instead of an M_FIX flag."""
    fix_flag = (3 if unit else 0) if fix_flag is None else fix_flag
    m_fix_flag = (not unit) if m_fix_flag is None else m_fix_flag

    def kernel(addr):
        a_gm, b_gm = gm_tensor(half, addr["a"], M * K), gm_tensor(half, addr["b"], K * N)
        c_gm = gm_tensor(float32, addr["c"], M * N)
        a1 = LocalTensor.at(half, TPosition.A1, 0, M * KK)
        b1 = LocalTensor.at(half, TPosition.B1, M * KK * 2, KK * N)
        a2 = LocalTensor.at(half, TPosition.A2, 0, M * KK)
        b2 = LocalTensor.at(half, TPosition.B2, 0, KK * N)
        c1 = LocalTensor.at(float32, TPosition.CO1, 0, M * N)
        for i in range(ROUNDS):
            if i:
                sync(HardEvent.MTE1_MTE2)
            DataCopy(a1, a_gm[i * KK], Nd2NzParams(1, M, KK, 0, K, M, 1, 0))
            DataCopy(b1, b_gm[i * KK * N], Nd2NzParams(1, KK, N, 0, N, KK, 1, 0))
            sync(HardEvent.MTE2_MTE1)
            if i:
                WaitFlag(HardEvent.M_MTE1, EVENT_ID1)
            LoadData(a2, a1, LoadData3DParamsV2(l1H=1, l1W=M, channelSize=KK, kExtension=KK,
                                                mExtension=M))
            LoadData(b2, b1, LoadData3DParamsV2(l1H=1, l1W=KK, channelSize=N, kExtension=N,
                                                mExtension=KK, enTranspose=True))
            sync(HardEvent.MTE1_M)
            flag = 0
            if unit:
                flag = 2 if i < ROUNDS - 1 else 3
                if last_flag is not None and i == ROUNDS - 1:
                    flag = last_flag
            Mmad(c1, a2, b2, MmadParams(M, N, KK, flag, False, i == 0))
            SetFlag(HardEvent.M_MTE1, EVENT_ID1)
        WaitFlag(HardEvent.M_MTE1, EVENT_ID1)
        if m_fix_flag:
            sync(HardEvent.M_FIX)
        p = FixpipeParamsV220(nSize=N, mSize=M, srcStride=M, dstStride=N, unitFlag=fix_flag)
        Fixpipe(c_gm, c1, p)

    return kernel


def run(kernel, **kw):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    got, prof = aic_run(kernel, {"a": a, "b": b}, {"c": (M * N, np.float32)}, keep_spans=True,
                        **kw)
    return a, b, got["c"].reshape(M, N), prof


def spans(prof, label):
    return [s for s in prof.timing.spans[0] if s[3] == label]


def test_unitflag_gives_the_same_bytes_and_overlaps_m_and_fix():
    a, b, c_flag, p_flag = run(matmul_kernel(False))
    _, _, c_unit, p_unit = run(matmul_kernel(True))
    np.testing.assert_array_equal(c_unit, c_flag)
    np.testing.assert_allclose(c_unit, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3,
                               atol=1e-3)
    # the last Mmad ends after the Fixpipe began moving units out
    mmad_end = max(s[2] for s in spans(p_unit, "Mmad (unitFlag)"))
    fix_start = min(s[1] for s in spans(p_unit, "Fixpipe"))
    assert fix_start < mmad_end
    assert p_unit.timing.cycles < p_flag.timing.cycles
    # its end waits for the Mmad's end, then the last fractal moves
    tail = spans(p_unit, "Fixpipe (unitFlag)")[0]
    assert tail[1] >= mmad_end
    assert tail[2] - tail[1] == -(-256 // SOC.fixpipe_elements_per_cycle)


def test_fix_time_under_unitflag_includes_its_waits():
    _, _, _, prof = run(matmul_kernel(True))
    fix = [s for s in prof.timing.spans[0] if s[0] == Pipe.PIPE_FIX]
    waits = spans(prof, "Fixpipe (unitFlag wait)")
    assert waits and sum(s[2] - s[1] for s in waits) > 0
    busy = prof.timing.pipe_busy[Pipe.PIPE_FIX][0]
    # busy is the union of the pipe's spans (a Fixpipe's copy completes its latency after
    # its bytes are through, while the pipe goes on: docs/calibration.md "The MTE issue
    # model"), not their sum
    union, reach = 0.0, -1.0
    for _, a, b, *_ in sorted(fix, key=lambda s: s[1]):
        union += max(0.0, b - max(a, reach))
        reach = max(reach, b)
    assert busy == pytest.approx(union)
    first, last = min(s[1] for s in fix), max(s[2] for s in fix)
    assert busy == pytest.approx(last - first)          # issue to end, no gap uncounted


def test_checker_accepts_the_pair_and_flags_what_does_not_pair():
    # the unitFlag pair is a hand-off: no M_FIX flag needed (the first test ran it checked)
    with pytest.raises(SyncError, match="no Mmad with unitFlag 3 released it") as e:
        run(matmul_kernel(False, fix_flag=3))                     # plain Mmads, unitFlag Fixpipe
    assert "test_cube_unitflag.py" in e.value.line and "Fixpipe" in str(e.value)
    with pytest.raises(SyncError, match="has unitFlag 2, which does not release"):
        run(matmul_kernel(True, last_flag=2))
    with pytest.raises(SyncError, match="Fixpipe with unitFlag 0 reads L0C .* hands off with "
                       "unitFlag 3"):
        run(matmul_kernel(True, fix_flag=0, m_fix_flag=True))
    with pytest.raises(Exception, match="unitFlag = 1"):
        run(matmul_kernel(True, last_flag=1))


def test_unreleased_mmad_is_reported_at_its_line_at_the_kernel_end():
    def kernel(addr):
        a2 = LocalTensor.at(half, TPosition.A2, 0, 256)
        b2 = LocalTensor.at(half, TPosition.B2, 0, 256)
        c1 = LocalTensor.at(float32, TPosition.CO1, 0, 256)
        Mmad(c1, a2, b2, MmadParams(16, 16, 16, 3, False, True))   # the line reported

    with pytest.raises(SyncError, match="no Fixpipe with unitFlag read it") as e:
        aic_run(kernel, {}, {}, checks=CheckerConfig(warn=frozenset({"Uninitialised"})))
    assert "test_cube_unitflag.py" in e.value.line


def test_set_fix_pipe_config_clears_the_unit_flags():
    """SetFixPipeConfig(co1, isUnitFlag=true) resets every L0C unit flag (the
    mmad_unitflag sample's last call): a released hand-off no Fixpipe took is gone."""
    def kernel(addr):
        a2 = LocalTensor.at(half, TPosition.A2, 0, 256)
        b2 = LocalTensor.at(half, TPosition.B2, 0, 256)
        c1 = LocalTensor.at(float32, TPosition.CO1, 0, 256)
        Mmad(c1, a2, b2, MmadParams(16, 16, 16, 3, False, True))
        SetFixPipeConfig(c1, True)

    aic_run(kernel, {}, {}, checks=CheckerConfig(warn=frozenset({"Uninitialised"})))


def test_the_hand_back_is_unit_by_unit():
    """Two tiles through one L0C buffer, each one Mmad (unitFlag 3) and one Fixpipe
    (unitFlag 3), no flags: the second tile's Mmad starts refilling the units as the first
    Fixpipe starts moving them out (not when it ends), and only its last fractal waits for
    that Fixpipe's last unit."""
    def kernel(addr):
        a_gm, b_gm = gm_tensor(half, addr["a"], M * KK), gm_tensor(half, addr["b"], KK * N)
        c_gm = gm_tensor(float32, addr["c"], 2 * M * N)
        a1 = LocalTensor.at(half, TPosition.A1, 0, M * KK)
        b1 = LocalTensor.at(half, TPosition.B1, M * KK * 2, KK * N)
        a2 = LocalTensor.at(half, TPosition.A2, 0, M * KK)
        b2 = LocalTensor.at(half, TPosition.B2, 0, KK * N)
        c1 = LocalTensor.at(float32, TPosition.CO1, 0, M * N)
        DataCopy(a1, a_gm, Nd2NzParams(1, M, KK, 0, KK, M, 1, 0))
        DataCopy(b1, b_gm, Nd2NzParams(1, KK, N, 0, N, KK, 1, 0))
        sync(HardEvent.MTE2_MTE1)
        LoadData(a2, a1, LoadData3DParamsV2(l1H=1, l1W=M, channelSize=KK, kExtension=KK,
                                            mExtension=M))
        LoadData(b2, b1, LoadData3DParamsV2(l1H=1, l1W=KK, channelSize=N, kExtension=N,
                                            mExtension=KK, enTranspose=True))
        sync(HardEvent.MTE1_M)
        for t in range(2):
            Mmad(c1, a2, b2, MmadParams(M, N, KK, 3, False, True))
            Fixpipe(c_gm[t * M * N], c1, FixpipeParamsV220(nSize=N, mSize=M, srcStride=M,
                                                           dstStride=N, unitFlag=3))

    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, KK)).astype(np.float16)
    b = rng.standard_normal((KK, N)).astype(np.float16)
    got, prof = aic_run(kernel, {"a": a, "b": b}, {"c": (2 * M * N, np.float32)},
                        keep_spans=True)
    want = a.astype(np.float32) @ b.astype(np.float32)
    for t in range(2):
        np.testing.assert_allclose(got["c"][t * M * N:(t + 1) * M * N].reshape(M, N), want,
                                   rtol=1e-5, atol=1e-5)
    mmads = sorted((s for s in prof.timing.spans[0] if s[0] == Pipe.PIPE_M), key=lambda s: s[1])
    fix = sorted(spans(prof, "Fixpipe"), key=lambda s: s[1])
    tails = sorted(spans(prof, "Fixpipe (unitFlag)"), key=lambda s: s[1])
    second = mmads[2:]          # the first Mmad is two spans (to its first fractal, the rest)
    assert second[0][1] < fix[0][2]              # starts while the first Fixpipe moves
    per_fractal = KK // SOC.cube_rate(np.dtype(np.float16))
    assert second[-1][2] >= tails[0][2] + per_fractal - 1e-9   # its last fractal after it
