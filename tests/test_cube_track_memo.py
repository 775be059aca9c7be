"""What the cube instructions' checker work keeps from call to call gives what computing it
afresh gives: the ND -> NZ copy's written blocks (datamove._nz_blocks) and whether a Mmad
operand's layout is whole (mmad._whole)."""
import numpy as np
import pytest

from npusim.ascendc.cube import datamove, mmad


@pytest.mark.parametrize("args", [
    (4, 1, 0, 128, 1, 16, 128),      # an NZ tile written whole (the k-loop's copies): a slice
    (0, 1, 0, 256, 1, 16, 256),
    (3, 2, 40, 16, 1, 2, 16),        # two matrices with a hole between them
    (0, 1, 0, 16, 2, 4, 40),         # rows on every other block, column blocks apart
    (7, 3, 10, 5, 1, 2, 5),          # matrices that abut: contiguous again
    (0, 1, 0, 8, 1, 3, 4),           # column blocks overlapping other rows (not disjoint)
])
def test_nz_blocks_are_the_distinct_blocks_written(args):
    first, nd, m_blocks, n, ns, nblk, c0s = args
    blk = (first + np.arange(nd)[:, None, None] * m_blocks + np.arange(n)[None, :, None] * ns
           + np.arange(nblk) * c0s)
    want = np.unique(blk)
    blocks, lo, hi = datamove._nz_blocks(*args)
    got = np.arange(blocks.start, blocks.stop) if isinstance(blocks, slice) else blocks
    np.testing.assert_array_equal(got, want)
    assert (lo, hi) == (int(want[0]) * 32, int(want[-1]) * 32 + 32)
    assert isinstance(blocks, slice) == (want.size == want[-1] - want[0] + 1)
    if not isinstance(blocks, slice):
        assert not blocks.flags.writeable       # shared by every call: read-only


def test_whole_layouts_match_their_maximum():
    cases = [mmad._a_index(128, 64, 8, 4, 16)[:128],       # whole
             mmad._a_index(100, 64, 7, 4, 16)[:100],       # rows cut: not whole
             mmad._zn_index(4, 16, 16)[:64, :256],          # whole
             mmad._zn_index(4, 16, 16)[:50, :256],          # k cut
             mmad._nz_index(8, 16)[:128, :250],             # n cut
             mmad._a_index(1, 40, 1, 3, 16)]                # GEMV row
    for _ in range(2):                                      # computed, then kept
        for idx in cases:
            assert mmad._whole(idx) == (int(idx.max()) + 1 == idx.size)


def test_whole_of_a_writeable_array_is_not_kept():
    idx = np.arange(12).reshape(3, 4)
    assert mmad._whole(idx)
    idx[2, 3] = 40                          # the same memory, shape and strides, new values
    assert not mmad._whole(idx)


@pytest.mark.parametrize("field, value, error", [
    ("repeatTimes", 256, "LimitError"), ("startIndex", 65536, "LimitError"),
    ("srcStride", 65536, "LimitError"), ("dstGap", 65536, "LimitError"),
    ("addrMode", 1, "KernelError")])
def test_a_checked_load_does_not_let_a_bad_field_through(field, value, error):
    """LoadData keeps the calls that passed its checks (datamove._checked_2d): the same
    operands with one field out of range, after such a call, are still refused."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_cube_layouts import aic_run, gm_tensor, sync
    from npusim import KernelError
    from npusim.ascendc import (DataCopy, HardEvent, LoadData, LoadData2DParams, TBuf, TPipe,
                                TPosition, half)
    seen = []

    def kernel(addr):
        pipe = TPipe()
        l1, l0 = TBuf(TPosition.A1), TBuf(TPosition.A2)
        pipe.InitBuffer(l1, 8 * 512)
        pipe.InitBuffer(l0, 8 * 512)
        DataCopy(l1.Get(half), gm_tensor(half, addr["src"], 2048), 2048)
        sync(HardEvent.MTE2_MTE1)
        good = dict(startIndex=0, repeatTimes=4, srcStride=1, sid=0, dstGap=0,
                    ifTranspose=False, addrMode=0)
        for _ in range(2):                      # checked, then kept
            LoadData(l0.Get(half), l1.Get(half), LoadData2DParams(**good))
        try:
            LoadData(l0.Get(half), l1.Get(half), LoadData2DParams(**{**good, field: value}))
        except KernelError as e:
            seen.append(type(e).__name__)
            raise

    with pytest.raises(KernelError):
        aic_run(kernel, {"src": np.zeros(2048, np.float16)}, {})
    assert seen and seen[0] == error
