"""SetAippFunctions (npusim.ascendc.aipp): the configuration is kept on the core for
LoadImageToLocal, DataCopy is unchanged by it, and the page's address and form rules."""
import numpy as np
import pytest

from npusim import AlignmentError, GlobalMemory, KernelError, get_soc, run_kernel
from npusim.ascendc import (AippInputFormat, AippParams, DataCopy, GlobalTensor, HardEvent,
                            SetAippFunctions, SetFlag, TBuf, TPipe, WaitFlag, uint8_t)
from npusim.ascendc import core as _core

SOC = get_soc("Ascend910B1")


def run(body):
    gm = GlobalMemory(1 << 22)
    src, dst = gm.malloc(1024), gm.malloc(1024)
    x = np.arange(1024, dtype=np.int64).astype(np.uint8)
    gm.write(src, x)
    seen = {}

    def kernel():
        g, o = GlobalTensor(uint8_t), GlobalTensor(uint8_t)
        g.SetGlobalBuffer(src, 1024)
        o.SetGlobalBuffer(dst, 1024)
        body(g)
        seen["aipp"] = getattr(_core.current_core(), "aipp", None)
        pipe, buf = TPipe(), TBuf()
        pipe.InitBuffer(buf, 1024)
        t = buf.Get(uint8_t)
        DataCopy(t, g, 1024)
        SetFlag(HardEvent.MTE2_MTE3, 0)
        WaitFlag(HardEvent.MTE2_MTE3, 0)
        DataCopy(o, t, 1024)

    run_kernel(kernel, 1, (), soc=SOC, gm=gm)
    return np.frombuffer(gm.read(dst, 1024), np.uint8), x, seen["aipp"]


def test_the_configuration_is_kept_and_datacopy_is_unchanged():
    cfg = AippParams(np.int8, swapParams="swap")
    y, x, aipp = run(lambda g: SetAippFunctions(g, AippInputFormat.RGB888_U8, cfg))
    np.testing.assert_array_equal(y, x)
    assert aipp[2] is AippInputFormat.RGB888_U8 and aipp[3] is cfg and aipp[1] is None


def test_address_and_form_rules():
    cfg = AippParams(np.float16)
    with pytest.raises(AlignmentError, match="not 4 B aligned, as XRGB8888_U8"):
        run(lambda g: SetAippFunctions(g[1], AippInputFormat.XRGB8888_U8, cfg))
    run(lambda g: SetAippFunctions(g[1], AippInputFormat.RGB888_U8, cfg))   # any address
    with pytest.raises(AlignmentError, match="src1 .* not 2 B aligned"):
        run(lambda g: SetAippFunctions(g, g[513], AippInputFormat.YUV420SP_U8, cfg))
    with pytest.raises(KernelError, match="src1"):
        run(lambda g: SetAippFunctions(g, AippInputFormat.YUV420SP_U8, cfg))
    with pytest.raises(KernelError, match="not an AippInputFormat"):
        run(lambda g: SetAippFunctions(g, 3, cfg))
    with pytest.raises(KernelError, match="uint8, int8 or half"):
        AippParams(np.float32)
