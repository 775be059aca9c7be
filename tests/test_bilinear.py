"""BilinearInterpolation on Atlas A2 against a rendering of its API page's description
(atlasascendc_api_07_0222), written here: iteration i = v * hRepeat + h weighs the eight
src0 blocks at byte offsets src0Offset[8i : 8i + 8] by src1[i] (repeatMode false) or
src1[8i + j] (true); a vertical iteration's hRepeat weighted rows are summed block by block
into dst's row v (v * vROffset elements on, dstBlkStride blocks between its blocks). Small
integer values keep every product and sum exact in half, so the order of the library's
roundings does not matter here."""
import numpy as np
import pytest

from npusim import DtypeError, LimitError, UbError
from npusim.ascendc import *  # noqa: F403

from kernel_helpers import ub_run

EPB = 16                                     # halves in a 32 B block


def reference(dst, src0, offsets, src1, h_repeat, v_repeat, repeat_mode, blk, v_off,
              lanes=128):
    out = dst.copy()
    for v in range(v_repeat):
        acc = np.zeros((8, EPB), np.float64)
        for h in range(h_repeat):
            i = v * h_repeat + h
            for j in range(8):
                start = offsets[8 * i + j] // 2
                weight = src1[8 * i + j] if repeat_mode else src1[i]
                acc[j] += src0[start:start + EPB].astype(np.float64) * float(weight)
        for j in range(8):
            keep = np.arange(EPB) + j * EPB < lanes          # a count mask: the first lanes
            d0 = v * v_off + j * blk * EPB
            out[d0:d0 + EPB][keep] = acc[j][keep]
    return out


def run(h_repeat, v_repeat, repeat_mode, blk=1, v_off=128, mask=128, seed=0, tmp_bytes=None):
    rng = np.random.default_rng(seed)
    rows = h_repeat * v_repeat
    src0 = rng.integers(-8, 8, 40 * EPB).astype(np.float16)          # 40 blocks
    offsets = (rng.integers(0, 40, 8 * rows) * 32).astype(np.uint32)
    src1 = rng.integers(-3, 4, 8 * rows).astype(np.float16)
    dst = np.full(v_repeat * v_off + 8 * blk * EPB, 7, np.float16)
    tmp = np.zeros(tmp_bytes or (src0.size + src1.size) * 32, np.uint8)   # the A2 size

    def body(t):
        BilinearInterpolation(t["dst"], t["src0"], t["off"], t["src1"], mask, h_repeat,
                              repeat_mode, blk, v_off, v_repeat, t["tmp"])
    after, prof = ub_run(body, dict(dst=dst, src0=src0, off=offsets, src1=src1, tmp=tmp))
    want = reference(dst, src0, offsets, src1, h_repeat, v_repeat, repeat_mode, blk, v_off,
                     lanes=mask)
    return after["dst"], want, prof


@pytest.mark.parametrize("repeat_mode", [False, True])
@pytest.mark.parametrize("h_repeat,v_repeat", [(1, 1), (2, 3), (4, 2)])
def test_weighted_sums_of_gathered_blocks(h_repeat, v_repeat, repeat_mode):
    got, want, prof = run(h_repeat, v_repeat, repeat_mode)
    np.testing.assert_array_equal(got, want)
    names = [r[5] for r in prof.records[0]]
    assert "Gatherb" in names and "Brcb" in names           # the A2 library's steps


def test_strided_rows_and_a_partial_mask():
    """dstBlkStride 2 and vROffset 320 place the rows; a count mask of 40 lanes writes the
    first 40 lanes of each row (blocks 0, 1 and half of 2, at blocks 0, 2, 4 of dst) and
    leaves the rest of dst as it was."""
    got, want, _ = run(3, 2, True, blk=2, v_off=320, mask=40, seed=3)
    np.testing.assert_array_equal(got, want)
    assert (got[16:32] == 7).all() and (got[72:320] == 7).all() and (got[:16] != 7).any()


def test_what_the_api_refuses():
    with pytest.raises(LimitError, match="vROffset = 64"):
        run(1, 1, False, v_off=64)
    with pytest.raises(UbError, match="Brcb"):          # a scratch buffer smaller than A2's
        run(2, 2, False, tmp_bytes=1056)
    with pytest.raises(DtypeError, match="half only"):
        ub_run(lambda t: BilinearInterpolation(t["x"], t["x"], t["o"], t["x"], 64, 1, False,
                                               1, 128, 1, t["t"]),
               dict(x=np.zeros(256, np.float32), o=np.zeros(8, np.uint32),
                    t=np.zeros(4096, np.uint8)))
