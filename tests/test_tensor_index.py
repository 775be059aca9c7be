"""Tensor indexes are integers: a float index into a GlobalTensor or LocalTensor is a
KernelError at the kernel's line (Ascend C's operator[] takes an integer; the simulator
must not truncate ``GetBlockIdx() / n`` silently). Integer numpy scalars stay valid."""
import numpy as np
import pytest

from npusim import GlobalMemory, KernelError, get_soc, run_kernel
from npusim.ascendc import *  # noqa: F403

SOC = get_soc("Ascend910B1")


def _run(kernel, *args, block_dim=2):
    gm = GlobalMemory(1 << 20)
    out = gm.malloc(4 * 64)
    run_kernel(kernel, block_dim, (out, *args), soc=SOC, gm=gm)
    return np.frombuffer(gm.read(out, 4 * 64), np.int32)


def _gm_copy(out, index):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 64)
    t = buf.Get(int32_t, 8)
    Duplicate(t, 7, 8)
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    g = GlobalTensor(int32_t)
    g.SetGlobalBuffer(out, 64)
    DataCopy(g[index(GetBlockIdx())], t, 8)   # the line the error must name


@pytest.mark.parametrize("index", [lambda b: b * 8 / 1, lambda b: np.float32(b * 8),
                                   lambda b: np.float64(b * 8.5)],
                         ids=["int/int", "float32 scalar", "float64 scalar"])
def test_a_float_global_tensor_index_is_a_kernel_error_at_its_line(index):
    with pytest.raises(KernelError, match=r"GlobalTensor\[\] at test_tensor_index\.py:\d+: "
                                          r"index .* is not an integer.*//"):
        _run(_gm_copy, index)


def test_integer_indexes_of_any_int_type_still_work():
    res = _run(_gm_copy, lambda b: np.int64(b * 8) if b else np.uint32(0))
    assert res[:16].tolist() == [7] * 16
    res = _run(_gm_copy, lambda b: b * 16 // 2)
    assert res[:16].tolist() == [7] * 16


@pytest.mark.parametrize("use", ["operator[]", "GetValue", "SetValue"])
def test_a_float_local_tensor_index_is_a_kernel_error(use):
    def k(out):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 64)
        t = buf.Get(int32_t, 8)
        i = GetBlockIdx() * 4 / 2
        if use == "operator[]":
            Duplicate(t[i], 1, 4)
        elif use == "GetValue":
            t.GetValue(i)
        else:
            t.SetValue(i, 3)

    with pytest.raises(KernelError, match=r"at test_tensor_index\.py:\d+: index 0\.0 "
                                          r"\(float\) is not an integer"):
        _run(k, block_dim=1)
