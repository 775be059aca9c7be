"""The cube memories' page summary (MemoryShadow._pages), which lets a race check that
cannot find a race skip the per-block comparison, finds what the per-block check finds: the
same findings, messages and shadow state, on random histories of reads and writes of
several pipes over overlapping ranges (within a page, across pages, ping-pong buffers),
flags and barriers, against a shadow that compares every block."""
from types import SimpleNamespace

import numpy as np
import pytest

from npusim import KernelError, get_soc
from npusim.ascendc import checker, core as _core
from npusim.ascendc.types import Pipe

_PIPES = [int(Pipe.PIPE_MTE2), int(Pipe.PIPE_MTE1), int(Pipe.PIPE_MTE3), int(Pipe.PIPE_FIX)]
P = checker.PAGE_BYTES
#: (offset, bytes): within one page, a page's neighbours, two buffers of a ping-pong, whole
_SPANS = [(0, 64), (96, 256), (P - 64, 128), (P, 2 * P), (3 * P, 2 * P), (32, 5 * P - 64)]


def _run(seed: int, paged: bool, by_blocks: bool):
    rng = np.random.default_rng(seed)
    tracker = checker.UbTracker(1024, get_soc("Ascend910B1"))
    ctx = SimpleNamespace(tracker=tracker, checker_config=checker.DEFAULT)
    sh = tracker.shadow("L1")
    sh._paged = paged
    out = []
    for step in range(300):
        op = rng.integers(0, 20)
        pipe = _PIPES[rng.integers(0, len(_PIPES))]
        off, n = _SPANS[rng.integers(0, len(_SPANS))]
        blocks = slice(off // 32, (off + n + 31) // 32)
        try:
            if op < 7:
                if by_blocks:
                    sh.write_blocks(ctx, pipe, blocks, off, off + n, "DataCopy")
                else:
                    sh.write(ctx, pipe, off, n, "DataCopy")
                tracker.on_record(_core.OP, pipe, None)
            elif op < 13:
                if by_blocks:
                    idx = np.arange(blocks.start, blocks.stop)   # an index array, as LoadData's
                    sh.read_blocks(ctx, pipe, idx, off, off + n, "LoadData")
                else:
                    sh.read(ctx, pipe, off, n, "LoadData")
                tracker.on_record(_core.OP, pipe, None)
            elif op < 19:
                other = _PIPES[rng.integers(0, len(_PIPES))]
                tracker.on_record(_core.SET, pipe, ("k", step))
                tracker.on_record(_core.WAIT, other, ("k", step))
            else:
                tracker.on_record(_core.BARRIER, int(Pipe.PIPE_ALL), None)
            res = None
        except KernelError as e:
            res = (type(e), str(e))
        out.append((res, sh.w_pipe.copy(), sh.w_idx.copy(), sh.r_all.copy(), sh.init.copy()))
    return out, sh


@pytest.mark.parametrize("by_blocks", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_page_summary_finds_what_the_block_check_finds(seed, by_blocks):
    (full, _), (fast, sh) = _run(seed, False, by_blocks), _run(seed, True, by_blocks)
    found = sum(r[0] is not None for r in full)
    assert 0 < found < len(full) // 2          # races, and many clean checks to skip
    assert sh._pw is not None                  # the summary was used
    for a, b in zip(full, fast):
        assert a[0] == b[0]
        for x, y in zip(a[1:], b[1:]):
            np.testing.assert_array_equal(x, y)


def test_summary_built_from_a_history_bounds_every_block():
    """Built from per-block arrays that already hold a history, the summary bounds them:
    a late write on one block of a page is still found."""
    tracker = checker.UbTracker(1024, get_soc("Ascend910B1"))
    ctx = SimpleNamespace(tracker=tracker, checker_config=checker.DEFAULT)
    sh = tracker.shadow("L0A")
    mte1, m = int(Pipe.PIPE_MTE1), int(Pipe.PIPE_M)
    sh.init[:] = True
    sh.w_pipe[200] = mte1                     # one block of page 1, written at MTE1's 5th
    sh.w_idx[200] = 5
    tracker.clock.vc[m][mte1] = 5             # M knows MTE1 up to its 5th: not past it
    with pytest.raises(KernelError, match="PIPE_M reads L0A"):
        sh.read(ctx, m, P, P, "Mmad")
    tracker.clock.vc[m][mte1] = 6             # now it does: no race, by the summary alone
    sh.read(ctx, m, P, P, "Mmad")
