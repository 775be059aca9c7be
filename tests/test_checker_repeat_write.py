"""The UB shadow's skip of a repeated race-free write (MemoryShadow._clean) finds what the
full check finds: the same findings and the same shadow state, on random histories of
writes, reads, instructions, flags and barriers, against a shadow that checks every write."""
from types import SimpleNamespace

import numpy as np
import pytest

from npusim import KernelError, get_soc
from npusim.ascendc import checker, core as _core
from npusim.ascendc.types import Pipe

_PIPES = [int(Pipe.PIPE_MTE2), int(Pipe.PIPE_V), int(Pipe.PIPE_MTE3)]


def _run(seed: int, skip: bool):
    rng = np.random.default_rng(seed)
    tracker = checker.UbTracker(1024, get_soc("Ascend910B1"))
    ctx = SimpleNamespace(tracker=tracker, checker_config=checker.DEFAULT)
    sh = tracker.shadow("UB")
    out = []
    spans = [(0, 128), (0, 64)]     # few, so that writes repeat
    for step in range(400):
        if not skip:
            sh._clean = None                               # the full check every time
        op = rng.integers(0, 20)
        pipe = _PIPES[rng.integers(0, len(_PIPES))]
        off, n = spans[rng.integers(0, len(spans))]
        try:
            if op < 8:
                sh.write(ctx, pipe, off, n, "DataCopy")
                tracker.on_record(_core.OP, pipe, None)      # the instruction's record
            elif op < 13:
                sh.read(ctx, pipe, off, n, "DataCopy")
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
    return out


@pytest.mark.parametrize("seed", range(6))
def test_skipped_write_checks_match_full_checks(seed):
    full, fast = _run(seed, False), _run(seed, True)
    assert sum(r[0] is not None for r in full) > 0          # the histories hold races
    for a, b in zip(full, fast):
        assert a[0] == b[0]
        for x, y in zip(a[1:], b[1:]):
            np.testing.assert_array_equal(x, y)


def test_a_read_between_two_same_writes_is_still_a_race():
    tracker = checker.UbTracker(1024, get_soc("Ascend910B1"))
    ctx = SimpleNamespace(tracker=tracker, checker_config=checker.DEFAULT)
    sh = tracker.shadow("UB")
    mte2, v = int(Pipe.PIPE_MTE2), int(Pipe.PIPE_V)
    for _ in range(2):                                      # the same write twice: no race
        sh.write(ctx, mte2, 0, 128, "DataCopy")
        tracker.on_record(_core.DMA_IN, mte2, None)
    tracker.on_record(_core.SET, mte2, "e")
    tracker.on_record(_core.WAIT, v, "e")
    sh.read(ctx, v, 0, 128, "Add")                          # ordered after the writes
    tracker.on_record(_core.OP, v, None)
    with pytest.raises(KernelError, match="may still be reading"):
        sh.write(ctx, mte2, 0, 128, "DataCopy")             # V's read is not known to MTE2
