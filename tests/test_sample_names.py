"""Names the A2 basic-API samples use: EVENT_ID0..7, InitSocState, the static-tensor
constructor LocalTensor<T>(pos, addr, len) (LocalTensor[T](...) in Python), and
DataCopyPad's DataCopyParams + DataCopyPadParams form."""
import numpy as np
import pytest

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import *  # noqa: F403
from tests.test_cube_layouts import gm_tensor

SOC = get_soc("Ascend910B1")


def test_event_ids_are_the_plain_ids():
    assert [EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6,
            EVENT_ID7] == list(range(8))


def test_static_tensor_constructor_and_init_soc_state():
    seen = {}

    def kernel(addr):
        SetAtomicAdd(half)
        InitSocState()                  # atomic stores off again (and the other registers)
        a1 = LocalTensor[half](TPosition.A1, 512, 256)      # LocalTensor<half>(A1, 512, 256)
        seen["a1"] = (a1.mem, a1.offset, a1.length, a1.dtype)
        with pytest.raises(TypeError, match=r"LocalTensor\[half\]\(TPosition.A1, addr, "
                           r"tileSize\) or LocalTensor.at\(half, TPosition.A1"):
            LocalTensor(TPosition.A1, 512, 256)
        DataCopy(a1, gm_tensor(half, addr["x"], 256), 256)
        SetFlag(HardEvent.MTE2_MTE3, EVENT_ID3)
        WaitFlag(HardEvent.MTE2_MTE3, EVENT_ID3)
        DataCopy(gm_tensor(half, addr["y"], 256), a1, 256)

    x = np.arange(256, dtype=np.float16)
    gm = GlobalMemory(1 << 20)
    xa, ya = gm.malloc(512), gm.malloc(512)
    gm.write(xa, x.view(np.uint8))
    gm.write(ya, np.ones(256, np.float16).view(np.uint8))      # an add would show
    prof = run_kernel(kernel, 1, ({"x": xa, "y": ya},), soc=SOC, gm=gm, keep_spans=True,
                      kernel_type=KernelMetaType.KERNEL_TYPE_AIC_ONLY)
    assert seen["a1"] == ("L1", 512, 256, np.dtype(np.float16))
    np.testing.assert_array_equal(np.frombuffer(gm.read(ya, 512), np.float16), x)
    names = [r[5] for r in prof.records[0]]
    # recorded on the scalar pipe before the first copy (after the kernel entry's and
    # SetAtomicAdd's scalar work)
    assert names.index("InitSocState") < names.index("DataCopy")
    assert prof.records[0][names.index("InitSocState")][1] == PIPE_S


def test_data_copy_pad_with_data_copy_params_and_pad_params():
    """DataCopyPad(dst, src, DataCopyParams{count, bytes, ...}, DataCopyPadParams{...}): 3
    rows of 20 B (10 halves), left padding 2 and right padding 4 of 7.0 (DataCopyPad page:
    blockLen in bytes in this form as in DataCopyExtParams)."""
    gm = GlobalMemory(1 << 20)
    x = np.arange(30, dtype=np.float16)
    xa, ya = gm.malloc(64), gm.malloc(3 * 32)
    gm.write(xa, x.view(np.uint8))

    def kernel():
        pipe = TPipe()
        buf = TBuf(TPosition.VECCALC)
        pipe.InitBuffer(buf, 96)
        ub = buf.Get(half)
        DataCopyPad(ub, gm_tensor(half, xa, 30), DataCopyParams(3, 20, 0, 0),
                    DataCopyPadParams(True, 2, 4, 7))
        SetFlag(HardEvent.MTE2_MTE3, EVENT_ID0)
        WaitFlag(HardEvent.MTE2_MTE3, EVENT_ID0)
        DataCopy(gm_tensor(half, ya, 48), ub, 48)

    run_kernel(kernel, 1, (), soc=SOC, gm=gm)
    got = np.frombuffer(gm.read(ya, 96), np.float16).reshape(3, 16)
    want = np.full((3, 16), 7, np.float16)
    want[:, 2:12] = x.reshape(3, 10)
    np.testing.assert_array_equal(got, want)
