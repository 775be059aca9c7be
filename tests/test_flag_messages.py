"""WaitFlag with no SetFlag of its (HardEvent, eventID) before it: each message, hand-checked.

Rules (npusim.ascendc.sync module docstring; SetFlag/WaitFlag(ISASI) 约束说明, set_flag &
wait_flag cceapi_0106): a wait that nothing can release (PIPE_S waits, waits on the
SetFlag's own pipe) is a hang, reported at the WaitFlag; otherwise the race it leaves
names the WaitFlag, its line, and the eventIDs SetFlag used; unpaired at the end, the
end-of-kernel report lists them.
"""
import inspect

import numpy as np
import pytest

from npusim import GlobalMemory, KernelError, get_soc, run_kernel
from npusim.ascendc import (DataCopy, GlobalTensor, HardEvent, Muls, SetFlag, TBuf, TPipe,
                            WaitFlag, float32)

SOC = get_soc("Ascend910B1")


def line_of(func, marker):
    src, start = inspect.getsourcelines(func)
    for i, text in enumerate(src):
        if marker in text:
            return f"test_flag_messages.py:{start + i}"
    raise AssertionError("marker not found")


def failure(kernel):
    gm = GlobalMemory(1 << 20)
    ptrs = [gm.malloc(4096) for _ in range(2)]
    for p in ptrs:
        gm.write(p, np.arange(1024, dtype=np.float32))
    with pytest.raises(KernelError) as info:
        run_kernel(kernel, 1, tuple(ptrs), soc=SOC, gm=gm)
    assert info.value.category == "Sync"
    return info.value


def gm_tensor(addr):
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(addr, 1024)
    return g


def wait_before_any_set(x, y):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 1024)
    t = buf.Get(float32)
    DataCopy(t, gm_tensor(x), 64)
    WaitFlag(HardEvent.MTE2_V, 1)                                # <- wait
    Muls(t, t, 2.0, 64)                                          # <- race
    SetFlag(HardEvent.MTE2_V, 1)


def wait_on_an_id_set_used_earlier(x, y):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 1024)
    t = buf.Get(float32)
    SetFlag(HardEvent.MTE2_V, 0)
    WaitFlag(HardEvent.MTE2_V, 0)
    SetFlag(HardEvent.MTE2_V, 3)
    WaitFlag(HardEvent.MTE2_V, 3)
    DataCopy(t, gm_tensor(x), 64)
    WaitFlag(HardEvent.MTE2_V, 2)                                # <- wait
    Muls(t, t, 2.0, 64)                                          # <- race
    SetFlag(HardEvent.MTE2_V, 2)


def extra_wait(x, y):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 1024)
    t = buf.Get(float32)
    SetFlag(HardEvent.MTE2_V, 1)
    WaitFlag(HardEvent.MTE2_V, 1)
    DataCopy(t, gm_tensor(x), 64)
    WaitFlag(HardEvent.MTE2_V, 1)                                # <- wait
    Muls(t, t, 2.0, 64)                                          # <- race
    SetFlag(HardEvent.MTE2_V, 1)


def scalar_wait_before_set(x, y):
    SetFlag(HardEvent.MTE2_S, 5)
    WaitFlag(HardEvent.MTE2_S, 5)
    WaitFlag(HardEvent.MTE2_S, 4)                                # <- wait
    SetFlag(HardEvent.MTE2_S, 4)


def same_pipe_wait_before_set(x, y):
    WaitFlag(HardEvent.V_V, 0)                                   # <- wait
    SetFlag(HardEvent.V_V, 0)


def wait_never_set(x, y):
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 1)                                # <- wait


def test_race_after_a_wait_no_setflag_preceded_names_it():
    exc = failure(wait_before_any_set)
    wait = line_of(wait_before_any_set, "# <- wait")
    assert exc.line == line_of(wait_before_any_set, "# <- race")
    assert exc.instruction == "Muls" and exc.pipe == "PIPE_V"
    msg = str(exc)
    assert "PIPE_V reads UB [0, 256) that PIPE_MTE2 wrote" in msg
    assert f"no SetFlag<MTE2_V>(1) comes before WaitFlag<MTE2_V>(1) at {wait}" in msg
    assert "no SetFlag<MTE2_V> ran before it in this kernel" in msg
    assert "fix: issue SetFlag<MTE2_V>(1) on PIPE_MTE2" in msg
    assert "or wait on the eventID" not in msg            # there is no other ID to name


def test_race_message_lists_the_ids_setflag_used():
    msg = str(failure(wait_on_an_id_set_used_earlier))
    wait = line_of(wait_on_an_id_set_used_earlier, "# <- wait")
    assert f"no SetFlag<MTE2_V>(2) comes before WaitFlag<MTE2_V>(2) at {wait}" in msg
    assert "SetFlag<MTE2_V> used eventID 0, 3 so far" in msg
    assert "or wait on the eventID that SetFlag used" in msg


def test_a_wait_after_its_sets_were_all_cleared_is_an_extra_wait():
    msg = str(failure(extra_wait))
    wait = line_of(extra_wait, "# <- wait")
    assert (f"WaitFlag<MTE2_V>(1) at {wait} comes after every SetFlag<MTE2_V>(1) so far was "
            "cleared by an earlier WaitFlag") in msg
    assert "SetFlag<MTE2_V> used eventID 1 so far" in msg


@pytest.mark.parametrize("kernel,pipe,why", [
    (scalar_wait_before_set, "PIPE_S", "the scalar unit stops issuing"),
    (same_pipe_wait_before_set, "PIPE_V", "queues behind this wait in the in-order PIPE_V"),
])
def test_a_wait_nothing_can_release_is_a_hang_at_the_waitflag(kernel, pipe, why):
    exc = failure(kernel)
    assert exc.instruction == "WaitFlag" and exc.pipe == pipe
    assert exc.line == line_of(kernel, "# <- wait")
    assert why in str(exc) and "a hang on hardware" in str(exc)


def test_scalar_hang_names_the_ids_setflag_used():
    msg = str(failure(scalar_wait_before_set))
    assert "no SetFlag<MTE2_S>(4) comes before WaitFlag<MTE2_S>(4)" in msg
    assert "SetFlag<MTE2_S> used eventID 5 so far" in msg


def test_unpaired_wait_at_kernel_end_lists_the_ids_setflag_used():
    exc = failure(wait_never_set)
    assert exc.line == line_of(wait_never_set, "# <- wait")
    assert "V_MTE3(1) has no SetFlag (SetFlag<V_MTE3> used eventID 0) by the end" in str(exc)


def test_a_paired_wait_clears_the_note():
    """After a proper pair orders the two pipes again, a later race between them is not
    blamed on the early WaitFlag."""
    def kernel(x, y):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 1024)
        t = buf.Get(float32)
        WaitFlag(HardEvent.MTE2_V, 1)
        SetFlag(HardEvent.MTE2_V, 1)
        DataCopy(t, gm_tensor(x), 64)
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        Muls(t, t, 2.0, 64)
        DataCopy(t[128], gm_tensor(x), 64)
        Muls(t[128], t[128], 2.0, 64)                            # <- race
    exc = failure(kernel)
    assert exc.line == line_of(kernel, "# <- race")
    assert "PIPE_V reads UB [512, 768) that PIPE_MTE2 wrote" in str(exc)
    assert "WaitFlag meant to order them" not in str(exc)
