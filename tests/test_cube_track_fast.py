"""The checker's compiled walk for the cube's whole-block accesses (npusim.ascendc.cube.
track_fast) reports what its numpy path reports and leaves the same shadow state: LoadData
(from L1 and from GM) and Mmad's operand reads and C write, from random shadow histories
with and without accesses the pipe does not know of (races) and never-written bytes."""
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cube_speed_identity import _tracked_outcome  # noqa: E402

from npusim.ascendc.cube import datamove, mmad, track_fast  # noqa: E402
from npusim.ascendc.tensor import GlobalTensor  # noqa: E402
from npusim.ascendc.types import Pipe  # noqa: E402

pytest.importorskip("numba")


class _Walks:
    """Counts the compiled walk's calls (so a test sees that the path it compares ran)."""

    def __init__(self, mp):
        self.calls = 0
        jit = track_fast._jit()
        for name in ("read_runs", "write_runs"):
            fn = getattr(jit, name)

            def counted(*args, _fn=fn):
                self.calls += 1
                return _fn(*args)
            mp.setattr(jit, name, counted)


def _both(make_call, seed, mems, late):
    """The outcome (finding, shadow arrays) with the compiled walk and with numpy alone, and
    how many walks ran."""
    with pytest.MonkeyPatch.context() as mp:
        walks = _Walks(mp)
        mp.setattr(track_fast, "ENABLED", True)         # whatever NPUSIM_NUMBA says
        fast = _tracked_outcome(make_call, seed, mems, late)
        mp.setattr(track_fast, "ENABLED", False)
        slow = _tracked_outcome(make_call, seed, mems, late)
    return fast, slow, walks.calls


def _written(tracker, mems, written: bool) -> None:
    """With ``written``, every byte of ``mems`` initialised (the random history leaves a few
    percent unwritten, which sends nearly every fractal to the numpy path)."""
    if written:
        for mem in mems:
            tracker.shadow(mem).init[:] = True


def _assert_same(fast, slow):
    assert fast[0] == slow[0]
    for a, b in zip(fast[1], slow[1]):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=25, deadline=None)
@given(start=st.integers(0, 3), repeat=st.integers(1, 6), stride=st.integers(0, 3),
       gap=st.integers(0, 2), src_off=st.integers(0, 40), dst_off=st.integers(0, 4),
       transpose=st.booleans(), written=st.booleans(), seed=st.integers(0, 10_000))
def test_load_data_tracking_is_numpys(start, repeat, stride, gap, src_off, dst_off, transpose,
                                      written, seed):
    """LoadData L1 -> L0A (datamove._track_load): the same finding (none, a race on the
    source read, a race on the destination write, both) and the same shadows; with no race
    and every source byte written, the walk did the work."""
    src = SimpleNamespace(offset=32 * src_off, mem="L1", dtype=np.dtype(np.float16))
    dst = SimpleNamespace(offset=512 * dst_off, mem="L0A", dtype=np.dtype(np.float16))
    pipe = int(Pipe.PIPE_MTE1)

    def call(ctx, tracker):
        _written(tracker, ("L1",), written)
        return (datamove._track_load, ctx, pipe, "LoadData", dst, src, start, stride, repeat,
                gap, transpose)

    for late in ((), ("L1",), ("L0A",), ("L1", "L0A")):
        fast, slow, walks = _both(call, seed, ("L1", "L0A"), late)
        _assert_same(fast, slow)
        # the source read is walked; with no race anywhere and its bytes written, the write
        # too (a history with late accesses may or may not race on these blocks)
        assert walks == (2 if written else 1) if not late else walks >= 1


@settings(max_examples=15, deadline=None)
@given(repeat=st.integers(1, 6), gap=st.integers(0, 2), dst_off=st.integers(0, 40),
       seed=st.integers(0, 10_000))
def test_load_data_from_gm_tracking_is_numpys(repeat, gap, dst_off, seed):
    src = GlobalTensor.__new__(GlobalTensor)            # only its type is looked at
    dst = SimpleNamespace(offset=32 * dst_off, mem="L1", dtype=np.dtype(np.float16))
    pipe = int(Pipe.PIPE_MTE2)

    def call(ctx, tracker):
        return (datamove._track_load, ctx, pipe, "LoadData", dst, src, 0, 1, repeat, gap,
                False)

    for late in ((), ("L1",)):
        fast, slow, walks = _both(call, seed, ("L1",), late)
        _assert_same(fast, slow)
        assert walks == 1


@settings(max_examples=20, deadline=None)
@given(m1=st.integers(1, 3), k1=st.integers(1, 3), n1=st.integers(1, 3),
       accumulate=st.booleans(), written=st.booleans(), seed=st.integers(0, 10_000))
def test_mmad_tracking_is_numpys(m1, k1, n1, accumulate, written, seed):
    """Mmad's checker work (mmad._track) on whole half operands: A, B and an accumulated C
    read, C written: the same finding (an unwritten operand byte, a race on any of them)
    and the same shadows."""
    half, f32 = np.dtype(np.float16), np.dtype(np.float32)
    fm = SimpleNamespace(offset=512 * 2, mem="L0A", dtype=half)
    flt = SimpleNamespace(offset=512 * 3, mem="L0B", dtype=half)
    dst = SimpleNamespace(offset=1024, mem="L0C", dtype=f32)
    m, k, n = 16 * m1, 16 * k1, 16 * n1

    def call(ctx, tracker):
        _written(tracker, ("L0A", "L0B", "L0C"), written)
        init = ([(dst, mmad._nz_index(m1, n1)[:m, :n], True)] if accumulate else [])
        return (mmad._track, ctx, dst, fm, flt, mmad._a_index(m, k, m1, k1, 16)[:m],
                mmad._zn_index(k1, n1, 16)[:k, :n], init, m * n * 4)

    mems = ("L0A", "L0B", "L0C")
    for late in ((), ("L0A",), ("L0B",), ("L0C",)):
        fast, slow, walks = _both(call, seed, mems, late)
        _assert_same(fast, slow)
        if written and not late:            # every operand walked, and C's write
            assert walks == 3 + accumulate


def test_a_shadow_class_that_checks_otherwise_takes_numpys_path():
    """A shadow whose access checks differ from MemoryShadow's (not only on_race) is never
    walked: the walk would skip its own rules."""
    from npusim.ascendc import checker

    class Strict(checker.MemoryShadow):
        def read_blocks(self, *args):          # its own rule for reads
            raise AssertionError("own rule")

    if not track_fast.ENABLED:
        pytest.skip("NPUSIM_NUMBA=0")
    sh = Strict(checker._Clocks(), 4096, "L1")
    assert track_fast.read(sh, int(Pipe.PIPE_MTE1), 0, 1, 0, 16) == 0
    plain = checker.MemoryShadow(checker._Clocks(), 4096, "L1")
    assert track_fast.read(plain, int(Pipe.PIPE_MTE1), 0, 1, 0, 16) == 1


@settings(max_examples=40, deadline=None)
@given(lo=st.integers(0, 40), rows=st.integers(1, 5), stride=st.integers(0, 40),
       width=st.integers(1, 20), pipe=st.sampled_from(["PIPE_MTE1", "PIPE_MTE2", "PIPE_M",
                                                      "PIPE_FIX"]),
       writing=st.booleans(), late=st.booleans(), seed=st.integers(0, 10_000))
def test_a_walk_is_read_blocks_or_write_blocks(lo, rows, stride, width, pipe, writing, late,
                                                seed):
    """track_fast.read/write on the blocks ``lo + r*stride + [0, width)`` against
    MemoryShadow.read_blocks/write_blocks given those blocks (distinct, sorted), as
    nd2nz's whole NZ tile and the fractal sets take them: the walk is done exactly when
    they find no race, and then leaves the same shadow."""
    p = int(getattr(Pipe, pipe))
    blocks = np.unique((lo + np.arange(rows)[:, None] * stride + np.arange(width)).reshape(-1))

    def call(fast):
        def make(ctx, tracker):
            sh = tracker.shadow("L1")
            if fast:
                fn = track_fast.write if writing else track_fast.read
                return _walk, fn, sh, p, lo, rows, stride, width
            fn = sh.write_blocks if writing else sh.read_blocks
            return fn, ctx, p, blocks, 32 * lo, 32 * int(blocks[-1] + 1), "LoadData"
        return make

    mems, hist = ("L1",), ("L1",) if late else ()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(track_fast, "ENABLED", True)
        fast = _tracked_outcome(call(True), seed, mems, hist)
    slow = _tracked_outcome(call(False), seed, mems, hist)
    done = _DONE.pop()
    if done:                               # the walk found nothing: numpy found nothing
        assert slow[0] is None
        for a, b in zip(fast[1], slow[1]):
            np.testing.assert_array_equal(a, b)
    else:                                  # not done: a race numpy reports, nothing changed
        assert slow[0] is not None
        unchanged = _tracked_outcome(lambda ctx, tracker: (lambda: None,), seed, mems, hist)
        for a, b in zip(fast[1], unchanged[1]):
            np.testing.assert_array_equal(a, b)


_DONE: list = []


def _walk(fn, *args):
    _DONE.append(bool(fn(*args)))
