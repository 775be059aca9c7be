"""Mixed AIC/AIV launches: KERNEL_TYPE_MIX_AIC_1_2 blocks of one AIC and two
AIVs, the core identity functions, CrossCoreSetFlag/CrossCoreWaitFlag in modes 0-2, SyncAll
across both kinds, the GM workspace hand-off; results against numpy, the flags' order in the
timeline, the checker's GM races between cores, hangs, and the profile / trace / op summary of
a mixed task. Semantics from CrossCoreSetFlag(ISASI).md and 关键特性说明.md (asc-devkit),
GetBlockIdx (atlasascendc_api_07_0185), GetTaskRatio.md, docs/reference/hardware.md §3."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim import (Device, GlobalMemory, KernelError, LimitError, SyncError, get_soc,
                    profiling, run_kernel, trace)
from npusim.ascendc import *  # noqa: F403
from npusim.ascendc.checker import CheckerConfig

from test_cube_layouts import gm_tensor, rand, sync
from test_cube_matmul import MatmulKernel, cube_reference

SOC = get_soc("Ascend910B1")
MIX = KernelMetaType.KERNEL_TYPE_MIX_AIC_1_2
FLAG = 3
MiB = 1 << 20


def launch(kernel, block_dim, inputs: dict, outputs: dict, kernel_type=MIX, soc=SOC, **kw):
    """Run ``kernel(addr)``: ``addr[name]`` the GM address of each input array (written) and
    of each output ``name: bytes`` (zeroed). Returns (output bytes by name, profile)."""
    gm = GlobalMemory(1 << 26)
    addr = {}
    for name, arr in inputs.items():
        addr[name] = gm.malloc(max(arr.nbytes, 32))
        gm.write(addr[name], np.ascontiguousarray(arr).reshape(-1).view(np.uint8))
    for name, nbytes in outputs.items():
        addr[name] = gm.malloc(nbytes)
        gm.write(addr[name], np.zeros(nbytes, np.uint8))
    prof = run_kernel(kernel, block_dim, (addr,), soc=soc, gm=gm, kernel_type=kernel_type, **kw)
    out = {n: np.frombuffer(gm.read(addr[n], b), np.uint8).copy() for n, b in outputs.items()}
    return out, prof


def spans(prof, core, pipe=None, label=None):
    """(start, end) of core ``core``'s instructions (its index in ``prof.core_kinds``)."""
    return [(s, e) for p, s, e, lbl, _ in prof.timing.spans[core]
            if (pipe is None or p.name == pipe) and (label is None or lbl == label)]


# -- the kernel: matmul on the AIC, LeakyRelu on the AIVs ---------------------------------------

class MatmulLeakyRelu:
    """out = LeakyRelu(A @ B, alpha), A (blockDim*m x k) half, B (k x n) half, out float.

    Block g's AIC multiplies rows [g*m, (g+1)*m) of A by B (the cube kernel of
    test_cube_matmul: GM -> L1 -> L0 -> Mmad -> Fixpipe) into the user workspace, then sets
    flag 3 in mode 2 on PIPE_FIX; its two AIVs wait for it and each applies LeakyRelu to half
    of those rows (AIV i = GetBlockIdx() owns rows [i*m/2, (i+1)*m/2)). ``wait`` False drops
    the AIVs' wait, ``set_flag`` False the AIC's set. ``seen`` collects each core's identity.
    """

    def __init__(self, m, k, n, alpha, wait=True, set_flag=True):
        self.m, self.k, self.n, self.alpha = m, k, n, alpha
        self.wait, self.set_flag = wait, set_flag
        self.seen = []

    def __call__(self, addr):
        SetSysWorkspace(addr["workspace"])
        self.ws = GetUserWorkspace(addr["workspace"])
        self.seen.append((ASCEND_IS_AIC(), ASCEND_IS_AIV(), GetBlockIdx(), GetBlockNum(),
                          GetSubBlockIdx(), GetSubBlockNum(), GetTaskRation(), GetTaskRatio(),
                          GetSysWorkSpacePtr() == addr["workspace"],
                          self.ws == addr["workspace"] + SOC.lib_api_workspace_size))
        if ASCEND_IS_AIC():
            self.Cube(addr)
        if ASCEND_IS_AIV():
            self.Vector(addr)

    def Cube(self, addr):
        m, k, n = self.m, self.k, self.n
        g = GetBlockIdx()
        tile = MatmulKernel(m, k, n, half, float32)
        tile(dict(a=addr["a"] + g * m * k * 2, b=addr["b"], c=self.ws + g * m * n * 4))
        if self.set_flag:
            CrossCoreSetFlag(FLAG, modeId=2, pipe=PIPE_FIX)    # after the Fixpipe to GM

    def Vector(self, addr):
        rows = self.m // GetTaskRation()
        count, off = rows * self.n, GetBlockIdx() * rows * self.n * 4
        pipe = TPipe()
        qin, qout = TQue(TPosition.VECIN, 1), TQue(TPosition.VECOUT, 1)
        pipe.InitBuffer(qin, 1, count * 4)
        pipe.InitBuffer(qout, 1, count * 4)
        if self.wait:
            CrossCoreWaitFlag(FLAG)
        x = qin.AllocTensor(float32)
        DataCopy(x, gm_tensor(float32, self.ws + off, count), count)
        qin.EnQue(x)
        x, y = qin.DeQue(float32), qout.AllocTensor(float32)
        LeakyRelu(y, x, self.alpha, count)
        qout.EnQue(y)
        qin.FreeTensor(x)
        y = qout.DeQue(float32)
        DataCopy(gm_tensor(float32, addr["out"] + off, count), y, count)
        qout.FreeTensor(y)


def run_leaky(blocks, m, k, n, alpha, seed=0, **kw):
    rng = np.random.default_rng(seed)
    a, b = rand(rng, (blocks * m, k), half), rand(rng, (k, n), half)
    kern = MatmulLeakyRelu(m, k, n, alpha, **{key: kw.pop(key) for key in ("wait", "set_flag")
                                              if key in kw})
    out, prof = launch(kern, blocks, {"a": a, "b": b},
                       {"out": blocks * m * n * 4,
                        "workspace": SOC.lib_api_workspace_size + blocks * m * n * 4}, **kw)
    c = cube_reference(a, b, 16)             # fp32 in the cube's k order (test_cube_matmul)
    want = np.where(c < 0, c * np.float32(alpha), c)    # LeakyRelu: one float rounding
    return out["out"].view(np.float32).reshape(blocks * m, n), want, kern, prof


@settings(max_examples=25, deadline=None)
@given(blocks=st.integers(1, 3), m=st.sampled_from([16, 32, 48]), k=st.integers(1, 64),
       n=st.integers(1, 40), alpha=st.floats(-2, 2, width=32), seed=st.integers(0, 99))
def test_matmul_then_leaky_relu_across_the_cores_of_each_block(blocks, m, k, n, alpha, seed):
    got, want, kern, prof = run_leaky(blocks, m, k, n, alpha, seed, keep_spans=True)
    np.testing.assert_array_equal(got, want)
    # who ran: per block one AIC (index g) and two AIVs (indices 2g, 2g + 1), numBlocks on all
    aic = sorted(s[2:] for s in kern.seen if s[0])
    aiv = sorted(s[2:] for s in kern.seen if s[1])
    assert aic == [(g, blocks, 0, 1, 1, 1, True, True) for g in range(blocks)]
    assert aiv == [(i, blocks, i % 2, 2, 2, 2, True, True) for i in range(2 * blocks)]
    assert prof.core_kinds == ["AIC"] * blocks + ["AIV"] * (2 * blocks)
    assert prof.core_ids == list(range(blocks)) + list(range(2 * blocks))
    # the flag orders the timeline: each AIV reads the workspace after its AIC's Fixpipe
    for g in range(blocks):
        fix_end = max(e for s, e in spans(prof, g, "PIPE_FIX", "Fixpipe"))
        for sub in range(2):
            reads = spans(prof, blocks + 2 * g + sub, "PIPE_MTE2", "DataCopy")
            assert reads and reads[0][0] >= fix_end


def test_a_missing_wait_is_a_gm_race_and_the_read_overtakes_the_fixpipe():
    with pytest.raises(SyncError, match=r"AIV 0 \(block 0, sub-block 0\) reads GM .* while "
                                        r"AIC 0 writes .* with Fixpipe on PIPE_FIX") as err:
        run_leaky(1, 32, 32, 16, 0.5, wait=False)
    assert err.value.line.startswith("test_mix_launch.py:")     # the AIV's DataCopy
    # as a warning the launch goes on: the AIV's read now starts before the Fixpipe ends
    got, want, _, prof = run_leaky(1, 32, 32, 16, 0.5, wait=False, keep_spans=True,
                                   checks=CheckerConfig(warn=frozenset({"Sync"})))
    assert any("reads GM" in w for w in prof.warnings)
    assert any("no CrossCoreWaitFlag" in w for w in prof.warnings)    # the set nobody took
    fix_end = max(e for s, e in spans(prof, 0, "PIPE_FIX", "Fixpipe"))
    assert spans(prof, 1, "PIPE_MTE2", "DataCopy")[0][0] < fix_end


def test_a_wait_that_no_core_sets_hangs_naming_both_sides():
    with pytest.raises(SyncError, match="the kernel hangs") as err:
        run_leaky(1, 32, 32, 16, 0.5, set_flag=False)
    text = str(err.value)
    assert "AIV 0 (block 0, sub-block 0) waits at CrossCoreWaitFlag(3) at test_mix_launch.py:" \
        in text
    assert "CrossCoreSetFlag(3) of AIC 0" in text and "AIC 0 finished" in text


def test_block_dim_and_kernel_types_that_cannot_launch():
    with pytest.raises(LimitError, match="exceeds the 24 cube cores"):
        run_leaky(SOC.cube_core_cnt + 1, 16, 16, 8, 0.5)
    for soc in (get_soc("Ascend910A"), get_soc("Ascend310P3")):
        with pytest.raises(LimitError, match="cannot be launched"):
            launch(lambda addr: None, 1, {}, {}, soc=soc)
    limited = Device("Ascend910B1", max_cores=10).soc     # 10 AIVs: at most 5 blocks of 1:2
    with pytest.raises(LimitError, match="vector cores"):
        launch(lambda addr: None, 6, {}, {}, soc=limited)
    launch(lambda addr: None, 5, {}, {}, soc=limited)


def _core_kernel(body_aic=None, body_aiv=None):
    def kernel(addr):
        if ASCEND_IS_AIC() and body_aic:
            body_aic(addr)
        if ASCEND_IS_AIV() and body_aiv:
            body_aiv(addr)
    return kernel


@pytest.mark.parametrize("call, error, text", [
    (lambda: CrossCoreSetFlag(11, modeId=2, pipe=PIPE_FIX), LimitError, r"flagId 11 .*\[0, 10\]"),
    (lambda: CrossCoreSetFlag(-1, modeId=2, pipe=PIPE_FIX), LimitError, "flagId -1"),
    (lambda: CrossCoreWaitFlag(15), LimitError, "flagId 15"),
    (lambda: CrossCoreSetFlag(0, modeId=3, pipe=PIPE_FIX), LimitError, "modeId 3"),
    (lambda: CrossCoreWaitFlag(0, modeId=4), LimitError, "modeId 4"),
    (lambda: CrossCoreWaitFlag(0, pipe="V"), SyncError, "not a pipe"),
    (lambda: CrossCoreSetFlag(0, modeId=2, pipe=PIPE_S), SyncError, "PIPE_S"),
    (lambda: CrossCoreSetFlag(0, modeId=0, pipe=PIPE_ALL), SyncError, "PIPE_ALL"),
    (lambda: CrossCoreSetFlag(0, modeId=2, pipe=PIPE_V), SyncError, "a AIC has no PIPE_V"),
    (lambda: CrossCoreSetFlag(0, modeId=1, pipe=PIPE_FIX), SyncError, "mode 1 .* on an AIC"),
])
def test_flag_ids_modes_and_pipes_are_checked(call, error, text):
    with pytest.raises(error, match=text):
        launch(_core_kernel(lambda addr: call()), 1, {}, {})


def test_cross_core_flags_need_a_mixed_launch():
    for kt in (KernelMetaType.KERNEL_TYPE_AIV_ONLY, KernelMetaType.KERNEL_TYPE_AIC_ONLY):
        for call in (lambda: CrossCoreSetFlag(0, modeId=0, pipe=PIPE_MTE2),
                     lambda: CrossCoreWaitFlag(0)):
            with pytest.raises(KernelError, match="no cross-core scheduler"):
                launch(lambda addr: call(), 1, {}, {}, kernel_type=kt)
    with pytest.raises(SyncError, match="mode 2 .*MIX_AIC_1_1 or MIX_AIC_1_2"):
        launch(lambda addr: CrossCoreSetFlag(0, modeId=2, pipe=PIPE_MTE3), 1, {}, {},
               kernel_type=KernelMetaType.KERNEL_TYPE_MIX_AIV_1_0)


@pytest.mark.parametrize("sets", [15, 16])
def test_a_counter_holds_at_most_15_sets(sets):
    def aic(addr):
        for _ in range(sets):
            CrossCoreSetFlag(1, modeId=2, pipe=PIPE_MTE2)

    def aiv(addr):
        for _ in range(sets):
            CrossCoreWaitFlag(1)

    if sets <= 15:
        launch(_core_kernel(aic, aiv), 1, {}, {})
    else:
        with pytest.raises(LimitError, match="counter of flagId 1 on AIV 0 .* would pass 15"):
            launch(_core_kernel(aic, aiv), 1, {}, {})


def test_sets_left_over_at_the_end_are_reported():
    """A set nobody waits for, and a mode 1 round only one AIV joined (Sync findings; as
    warnings the launch completes)."""
    def aiv(addr):
        if GetSubBlockIdx() == 0:
            CrossCoreSetFlag(6, modeId=1, pipe=PIPE_MTE3)

    with pytest.raises(SyncError, match=r"flagId 6 \(mode 1\) was set 1 time\(s\) by some "
                                        r"cores but fewer by AIV 1 \(block 0, sub-block 1\)"):
        launch(_core_kernel(body_aiv=aiv), 1, {}, {})
    _, prof = launch(_core_kernel(lambda addr: CrossCoreSetFlag(0, modeId=2, pipe=PIPE_M)), 1,
                     {}, {}, checks=CheckerConfig(warn=frozenset({"Sync"})))
    assert sum("set(s) of flagId 0 for AIV" in w and "no CrossCoreWaitFlag" in w
               for w in prof.warnings) == 2


# -- data through GM in every direction ---------------------------------------------------------

def ub_copy(src_addr, dst_addr, count, op=None):
    """An AIV copies ``count`` floats GM -> UB [-> op] -> GM, with the flags a kernel needs."""
    pipe = TPipe()
    buf = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(buf, count * 4)
    t = buf.Get(float32)
    DataCopy(t, gm_tensor(float32, src_addr, count), count)
    sync(HardEvent.MTE2_V)
    if op is not None:
        op(t)
    sync(HardEvent.V_MTE3)
    DataCopy(gm_tensor(float32, dst_addr, count), t, count)
    sync(HardEvent.MTE3_MTE2)         # the next copy into this UB waits for this one


def l1_copy(src_addr, dst_addr, count):
    """An AIC copies ``count`` floats GM -> L1 -> GM (MTE2 then MTE3)."""
    t = LocalTensor.at(float32, TPosition.A1, 0, count)
    DataCopy(t, gm_tensor(float32, src_addr, count), count)
    sync(HardEvent.MTE2_MTE3)
    DataCopy(gm_tensor(float32, dst_addr, count), t, count)
    sync(HardEvent.MTE3_MTE2)


def test_the_aic_waits_for_both_aivs_in_mode_2():
    """Each AIV writes its row and sets flag 5 (mode 2, PIPE_MTE3); the AIC's one wait is
    released only by both sets, then it copies the two rows on. Only one AIV setting: a hang."""
    x = np.arange(16, dtype=np.float32)

    def kernel(addr, both=True):
        if ASCEND_IS_AIV():
            i = GetBlockIdx()
            ub_copy(addr["x"] + i * 32, addr["mid"] + i * 32, 8, lambda t: Muls(t, t, 2.0, 8))
            if both or i == 0:
                CrossCoreSetFlag(5, modeId=2, pipe=PIPE_MTE3)
        if ASCEND_IS_AIC():
            CrossCoreWaitFlag(5)
            l1_copy(addr["mid"], addr["out"], 16)

    out, prof = launch(kernel, 1, {"x": x}, {"mid": 64, "out": 64}, keep_spans=True)
    np.testing.assert_array_equal(out["out"].view(np.float32), 2 * x)
    aiv_writes_end = max(e for core in (1, 2) for s, e in spans(prof, core, "PIPE_MTE3"))
    assert spans(prof, 0, "PIPE_MTE2")[0][0] >= aiv_writes_end
    with pytest.raises(SyncError, match=r"hangs: AIC 0 waits at CrossCoreWaitFlag\(5\).*"
                                        r"AIV 1 \(block 0, sub-block 1\)"):
        launch(lambda addr: kernel(addr, both=False), 1, {"x": x}, {"mid": 64, "out": 64})


@pytest.mark.parametrize("mode", [0, 1])
def test_aivs_exchange_rows_in_modes_0_and_1(mode):
    """Every AIV writes its row, sets flag 2 on PIPE_MTE3 in mode 1 (the AIVs of its block)
    or mode 0 (all AIVs of the launch), waits, then reads its partner's row: the partner's
    row of its block (mode 1) or of the next block (mode 0)."""
    blocks, x = 2, np.arange(32, dtype=np.float32)

    def aiv(addr):
        i = GetBlockIdx()
        ub_copy(addr["x"] + i * 32, addr["mid"] + i * 32, 8)
        CrossCoreSetFlag(2, modeId=mode, pipe=PIPE_MTE3)
        CrossCoreWaitFlag(2, modeId=mode)
        partner = i ^ 1 if mode == 1 else (i + 2) % (2 * blocks)
        ub_copy(addr["mid"] + partner * 32, addr["out"] + i * 32, 8)

    out, _ = launch(_core_kernel(body_aiv=aiv), blocks, {"x": x}, {"mid": 128, "out": 128},
                    checks=CheckerConfig(all_blocks=True))
    rows = x.reshape(4, 8)
    partner = [1, 0, 3, 2] if mode == 1 else [2, 3, 0, 1]
    np.testing.assert_array_equal(out["out"].view(np.float32).reshape(4, 8), rows[partner])


def test_a_set_on_the_wrong_pipe_does_not_order_the_write():
    """The AIC's Fixpipe writes on PIPE_FIX; a set on PIPE_MTE2 fires without waiting for it,
    so the AIVs' reads still race with the write (CrossCoreSetFlag waits only for ``pipe``)."""
    class WrongPipe(MatmulLeakyRelu):
        def Cube(self, addr):
            self.set_flag = False
            super().Cube(addr)
            CrossCoreSetFlag(FLAG, modeId=2, pipe=PIPE_MTE2)

    kern = WrongPipe(16, 16, 16, 0.5)
    with pytest.raises(SyncError, match="reads GM .* with Fixpipe on PIPE_FIX"):
        launch(kern, 1, {"a": np.ones((16, 16), np.float16), "b": np.ones((16, 16), np.float16)},
               {"out": 1024, "workspace": SOC.lib_api_workspace_size + 1024})


@settings(max_examples=15, deadline=None)
@given(rounds=st.integers(1, 6), slots=st.integers(1, 2), release=st.booleans())
def test_ping_pong_through_workspace_slots(rounds, slots, release):
    """The AIC copies round r's input into workspace slot r % slots and sets flag 1 (mode 2);
    the AIVs wait, square their half into row r of the output and set flag 2 back, which the
    AIC waits for before it reuses a slot. Without that release the AIC's rewrite of a slot
    races with the AIVs' read of it (only when a slot is reused)."""
    x = np.arange(rounds * 16, dtype=np.float32) - 20

    def aic(addr):
        for r in range(rounds):
            if r >= slots and release:
                CrossCoreWaitFlag(2)
            l1_copy(addr["x"] + r * 64, addr["ws"] + (r % slots) * 64, 16)
            CrossCoreSetFlag(1, modeId=2, pipe=PIPE_MTE3)
        for r in range(max(rounds - slots, 0) if release else 0, rounds if release else 0):
            CrossCoreWaitFlag(2)

    def aiv(addr):
        half = 32 * GetSubBlockIdx()
        for r in range(rounds):
            CrossCoreWaitFlag(1)
            ub_copy(addr["ws"] + (r % slots) * 64 + half, addr["out"] + r * 64 + half, 8,
                    lambda t: Mul(t, t, t, 8))
            CrossCoreSetFlag(2, modeId=2, pipe=PIPE_MTE2)     # done reading the slot

    kernel = _core_kernel(aic, aiv)
    args = ({"x": x}, {"ws": 64 * slots, "out": 64 * rounds})
    if release or rounds <= slots:
        out, _ = launch(kernel, 1, *args, checks=CheckerConfig(warn=frozenset({"Sync"}))
                        if not release else None)
        np.testing.assert_array_equal(out["out"].view(np.float32), x * x)
    else:
        # whichever core the functional order runs second reports the race
        with pytest.raises(SyncError, match=r"AIV \d \(block 0, sub-block \d\) reads GM .* "
                                            r"while AIC 0 writes|AIC 0 writes GM .* while AIV"):
            launch(kernel, 1, *args)


def test_write_conflicts_between_cores_need_an_order():
    """The AIC and an AIV write the same GM: ordered by a flag it is a hand-off, not a
    conflict; unordered it is reported."""
    x = np.arange(8, dtype=np.float32)

    def kernel(addr, ordered):
        if ASCEND_IS_AIC():
            l1_copy(addr["x"], addr["out"], 8)
            CrossCoreSetFlag(4, modeId=2, pipe=PIPE_MTE3)
        elif GetSubBlockIdx() == 0:
            if ordered:
                CrossCoreWaitFlag(4)
            ub_copy(addr["x"], addr["out"], 8, lambda t: Adds(t, t, 1.0, 8))
        if ASCEND_IS_AIV() and (GetSubBlockIdx() == 1 or not ordered):
            CrossCoreWaitFlag(4)

    out, _ = launch(lambda addr: kernel(addr, True), 1, {"x": x}, {"out": 32})
    np.testing.assert_array_equal(out["out"].view(np.float32), x + 1)
    with pytest.raises(SyncError, match="AIV 0 .* writes GM .* while AIC 0 writes"):
        launch(lambda addr: kernel(addr, False), 1, {"x": x}, {"out": 32})


def test_sync_all_across_both_kinds():
    """SyncAll(isAIVOnly=False): every AIC and AIV of the launch; the AIVs then read what the
    AICs wrote, with no race and after the writes in the timeline. SyncAll() (AIVs only) on an
    AIC, and isAIVOnly=False in a vector launch, are errors."""
    blocks, x = 2, np.arange(16, dtype=np.float32)

    def kernel(addr):
        if ASCEND_IS_AIC():
            l1_copy(addr["x"] + GetBlockIdx() * 32, addr["mid"] + GetBlockIdx() * 32, 8)
        SyncAll(isAIVOnly=False)
        if ASCEND_IS_AIV():
            i = GetBlockIdx()          # AIV i reads block (i // 2 + 1) % 2's row
            ub_copy(addr["mid"] + ((i // 2 + 1) % 2) * 32, addr["out"] + i * 32, 8)

    out, prof = launch(kernel, blocks, {"x": x}, {"mid": 64, "out": 128}, keep_spans=True)
    np.testing.assert_array_equal(out["out"].view(np.float32).reshape(4, 8),
                                  x.reshape(2, 8)[[1, 1, 0, 0]])
    writes_end = max(e for g in range(blocks) for s, e in spans(prof, g, "PIPE_MTE3"))
    assert min(spans(prof, c, "PIPE_MTE2")[0][0] for c in range(2, 6)) >= writes_end
    with pytest.raises(KernelError, match="isAIVOnly=true. synchronises the AIVs only"):
        launch(lambda addr: SyncAll(), 1, {}, {})
    with pytest.raises(KernelError, match="isAIVOnly=false. in a vector-only launch"):
        launch(lambda addr: SyncAll(isAIVOnly=False), 1, {}, {},
               kernel_type=KernelMetaType.KERNEL_TYPE_AIV_ONLY, sync_all=True)


def test_identity_on_the_other_kernel_types():
    seen = []

    def kernel(addr):
        # int(): a lockstep group of blocks splits here, and each block appends its own
        seen.append((ASCEND_IS_AIC(), ASCEND_IS_AIV(), ASCEND_IS_NOT_AIC(), ASCEND_IS_NOT_AIV(),
                     int(GetBlockIdx()), GetSubBlockIdx(), GetTaskRation(), GetSubBlockNum()))

    K = KernelMetaType
    cases = [(K.KERNEL_TYPE_AIV_ONLY, SOC, [(False, True, True, False, b, 0, 1, 1)
                                            for b in range(2)]),
             (K.KERNEL_TYPE_AIC_ONLY, SOC, [(True, False, False, True, b, 0, 1, 1)
                                            for b in range(2)]),
             (K.KERNEL_TYPE_MIX_AIC_1_1, SOC, [(True, False, False, True, b, 0, 1, 1)
                                               for b in range(2)] +
              [(False, True, True, False, b, 0, 1, 1) for b in range(2)]),
             (K.KERNEL_TYPE_MIX_AIV_1_0, SOC, [(False, True, True, False, b, 0, 1, 1)
                                               for b in range(2)]),
             (None, get_soc("Ascend910A"), [(False, False, True, True, b, 0, 1, 1)
                                            for b in range(2)])]
    for kt, soc, want in cases:
        seen.clear()
        launch(kernel, 2, {}, {}, kernel_type=kt, soc=soc)
        assert seen == want, kt


def test_the_workspace_pointers():
    got = []

    def kernel(addr):
        got.append((GetSysWorkSpacePtr(), GetUserWorkspace(4096)))
        SetSysWorkspace(1 << 24)
        SetSysWorkspace(1 << 25)              # the first one stays
        got.append((GetSysWorkSpacePtr(), GetUserWorkspace(4096)))

    launch(kernel, 1, {}, {}, kernel_type=KernelMetaType.KERNEL_TYPE_AIV_ONLY)
    assert got == [(None, 4096 + 16 * MiB), (1 << 24, (1 << 24) + 16 * MiB)]


# -- the device, its profile, op summary and trace ------------------------------------------------

def test_device_launch_profile_op_summary_and_trace():
    m, k, n, blocks = 32, 32, 16, 2
    dev = Device("Ascend910B1", profiling=True)
    rng = np.random.default_rng(3)
    a, b = rand(rng, (blocks * m, k), half), rand(rng, (k, n), half)
    addr = {"a": dev.gm.malloc(a.nbytes), "b": dev.gm.malloc(b.nbytes),
            "out": dev.gm.malloc(blocks * m * n * 4),
            "workspace": dev.gm.malloc(SOC.lib_api_workspace_size + blocks * m * n * 4)}
    dev.gm.write(addr["a"], a.reshape(-1).view(np.uint8))
    dev.gm.write(addr["b"], b.reshape(-1).view(np.uint8))
    s = dev.default_stream
    dev.launch(s, MatmulLeakyRelu(m, k, n, 0.25), blocks, (addr,), name="MatmulLeakyRelu",
               kernel_type=MIX)
    dev.launch(s, MatmulKernel(m, k, n, half, float32), 1,
               ({"a": addr["a"], "b": addr["b"], "c": addr["out"]},), name="Matmul",
               kernel_type=KernelMetaType.KERNEL_TYPE_AIC_ONLY)
    dev.launch(s, lambda addr: None, 1, (addr,), name="Nothing")
    assert dev.synchronize_stream(s) == []
    mix, cube, vec = dev.profiles
    assert mix.kernel_type == MIX and {"aic_mac_time", "aic_fixpipe_time", "aiv_vec_time",
                                       "aiv_mte2_time"} <= set(mix.pipe_time_us)
    assert mix.pipe_time_us["aic_mac_time"] > 0 and mix.pipe_time_us["aiv_vec_time"] > 0
    assert "aic_mac_time" in mix.summary() and "aiv_vec_time" in mix.summary()
    rows = profiling.op_summary_rows(dev)
    assert [r["Task Type"] for r in rows] == ["MIX_AIC", "AI_CORE", "AI_VECTOR_CORE"]
    assert rows[0]["Block Dim"] == blocks and rows[0]["Mix Block Dim"] == 2 * blocks
    assert rows[0]["aic_mac_time(us)"] > 0 and rows[0]["aiv_vec_time(us)"] > 0
    assert rows[0]["aic_time(us)"] > 0 and rows[0]["aiv_time(us)"] > 0
    assert rows[1]["aic_time(us)"] > 0 and rows[1]["aiv_time(us)"] == 0
    cols = profiling.op_summary_columns(rows)
    assert cols[cols.index("Block Dim") + 1] == "Mix Block Dim" and "aic_mac_ratio" in cols
    assert [r["Task Type"] for r in profiling.task_rows(dev)] == ["MIX_AIC", "AI_CORE",
                                                                   "AI_VECTOR_CORE"]
    spans_ = trace.trace_spans(trace.build_trace(dev))[0]
    by_proc = {}
    for sp in spans_:
        by_proc.setdefault(sp.process, set()).add(sp.thread)
    assert {"PIPE_M", "PIPE_FIX", "PIPE_MTE1"} <= by_proc["NPU 0 AIC 0"]
    assert "NPU 0 AIC 1" in by_proc and "PIPE_V" in by_proc["NPU 0 AIV 3"]
    assert "PIPE_M" not in by_proc["NPU 0 AIV 3"]
    aiv3 = [sp for sp in spans_ if sp.process == "NPU 0 AIV 3" and sp.thread == "blocks"]
    assert aiv3[0].args["core"] == "AIV" and aiv3[0].args["block"] == 3
    # the timeline plot names the rows as msprof names the cores (AIC / AIV), and --cores
    # selects cube cores as aicN (the old 400 + N still works)
    from npusim.plot import plot_timeline
    from npusim_tools.cli import parse_core_list
    tr = trace.build_trace(dev)

    def labels(**sel):
        ax = plot_timeline(tr, None, streams=False, **sel).axes[0]
        return {t.get_text() for t in ax.get_yticklabels()}
    every = labels()
    assert {"AIC 0 PIPE_M", "AIC 1 PIPE_FIX", "AIV 3 PIPE_V", "AIV 3 blocks"} <= every
    assert not any(lbl.startswith(("core ", "AIC 4")) for lbl in every)
    for text in ("aic1", "AIC1", "401"):
        vec, cube = parse_core_list(text)
        assert (vec, cube) == ([], [1])
        assert {lbl.split()[1] for lbl in labels(cores=vec, cube_cores=cube)} == {"1"}
        assert all(lbl.startswith("AIC 1 ") for lbl in labels(cores=vec, cube_cores=cube))
    assert parse_core_list("aic0-1,aiv2,3") == ([2, 3], [0, 1])
