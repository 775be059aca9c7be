"""The replay of the scalar-heavy kernel paths with and without its issue-flag pruning.

After scalar work the replay makes every other pipe of the core wait for the scalar unit
(an ``issue`` flag per pipe, npusim/timing.py ``_split``); on kernels that read indices
with GetValue row by row (EmbeddingDenseGradV2's small-dim and sorted-row kernels, the
Atlas training kernel, the shared Sort kernel, FusedSparseAdam's duplicate merge) those
flags were most of the replay's events. :class:`npusim.timing._IssuePruner` leaves out the
ones that cannot delay their pipe (the small-dim kernel and the merge run here row by row,
as written, and once each in their batched simulator form). Here the same records of each
kernel are replayed both ways and everything the replay reports must be identical, bit for bit: kernel cycles, each
block's start and end, each pipe's busy cycles, HBM and L2-hit bytes. A hand-built record
list checks which flags are kept and which are left out.
"""
import numpy as np
import ml_dtypes
import pytest

import npusim.launch as _launch
from npusim import timing
from npusim.kernels.common.sorted_index import sort_tiling, sort_with_index, sorted_order_golden
from npusim.kernels.embedding_dense_backward import tiling as edb
from npusim.kernels.embedding_dense_backward.kernel_910 import embedding_dense_grad
from npusim.kernels.fused_sparse_adam.kernel import fused_sparse_adam
from npusim.kernels.fused_sparse_adam.tiling import tiling as fsa_tiling
from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc.core import DMA_OUT, OP, SET, WAIT
from npusim.ascendc.types import Pipe
from kernel_helpers import assert_same_timing, run_embedding_grad_v2

# records, timelines and cycle counts as they were before the scalar unit charged its
# issue work (tests/conftest.py scalar_issue_off)

BF16 = np.dtype(ml_dtypes.bfloat16)

# these tests replay the same records under different settings of the replay
pytestmark = pytest.mark.usefixtures("replay_each_time", "scalar_issue_off")


def _capture(monkeypatch):
    """Keep each launch's block records and replay arguments."""
    seen = []
    real = _launch.simulate

    def simulate(blocks, soc, **kw):
        seen.append(([list(b) for b in blocks], soc, kw))
        return real(blocks, soc, **kw)

    monkeypatch.setattr(_launch, "simulate", simulate)
    return seen


def _indices(kind, rows, nw, rng):
    if kind == "skew":
        p = 1.0 / np.arange(1, nw + 1)
        return rng.choice(nw, rows, p=p / p.sum())
    if kind == "runs":              # long runs of one index across the cores' ranges
        return np.sort(rng.integers(0, max(nw // 40, 2), rows))
    return rng.integers(0, nw, rows)


# name -> (soc, dtype, rows, E, nw, pad, scale, det, small, kind)
V2_CASES = {
    "small-fp32": ("Ascend910B1", np.float32, 1200, 64, 500, -1, False, False, True, "skew"),
    "small-fp32-scale-pad": ("Ascend910B1", np.float32, 700, 40, 300, 3, True, False, True,
                             "skew"),
    "small-fp16-pad": ("Ascend910B1", np.float16, 700, 32, 200, 0, False, False, True, "skew"),
    "base-fp32-scale-runs": ("Ascend910B1", np.float32, 1500, 72, 400, 2, True, False, False,
                             "runs"),
    "base-fp32-A3": ("Ascend910_9391", np.float32, 900, 40, 5000, -1, False, False, False,
                     "random"),
    "base-fp16-pad": ("Ascend910B1", np.float16, 600, 40, 100, 1, False, False, False, "runs"),
    "det-fp32-scale": ("Ascend910B1", np.float32, 1000, 40, 80, -1, True, True, False, "skew"),
    "small-fp32-batched": ("Ascend910B1", np.float32, 1200, 64, 500, -1, False, False, True,
                           "skew"),
}


def _run_v2(case, seen):
    soc_name, dtype, rows, E, nw, pad, scale, det, small, kind = V2_CASES[case]
    rng = np.random.default_rng(len(case) * 7 + rows)
    grad = rng.standard_normal((rows, E)).astype(dtype)
    idx = _indices(kind, rows, nw, rng)
    # the small-dim kernel row by row (the scalar-heavy records), unless the case names its
    # batched walk
    fast = not small or case.endswith("-batched")
    out, prof, _ = run_embedding_grad_v2(grad, idx, nw, pad, scale, det, small, fast,
                                         soc=soc_name)
    return prof, seen[-1], out.tobytes()


V1_CASES = {"v1-int64-scale": (np.int64, True, 4), "v1-int32-scale-pad": (np.int32, True, 0)}


def _run_v1(case, seen):
    idx_dtype, scale, pad = V1_CASES[case]
    soc = get_soc("Ascend910A")
    rng = np.random.default_rng(2)
    rows, E, nw = 700, 33, 90
    grad = rng.standard_normal((rows, E)).astype(np.float32)
    idx = _indices("skew", rows, nw, rng)
    gm = GlobalMemory(soc.memory_size)
    td = edb.tiling_910(soc, rows, E, nw, pad, scale, idx_dtype)
    g = gm.malloc(grad.nbytes)
    gm.write(g, grad)
    i = gm.malloc(rows * np.dtype(idx_dtype).itemsize)
    gm.write(i, np.asarray(idx, idx_dtype))
    o = gm.malloc(nw * E * 4)
    gm.write(o, np.full(nw * E, 7, np.float32))
    prof = run_kernel(embedding_dense_grad, td.blockDim, (g, i, o, td, np.dtype(idx_dtype)),
                      soc=soc, gm=gm, reserve_ub=False)
    return prof, seen[-1], gm.read(o, nw * E * 4)


SORT_CASES = {"sort-merge": (5011, dict(chunk_length=256,
                                                                       merge_window=96))}


def _run_sort(case, seen):
    n, kw = SORT_CASES[case]
    soc = get_soc("Ascend910B1")
    keys = np.random.default_rng(n).integers(0, n // 3, n).astype(np.int32)
    gm = GlobalMemory(soc.memory_size)
    t = sort_tiling(soc, n, **kw)
    a, b, c = (gm.malloc(4 * n) for _ in range(3))
    w = gm.malloc(max(t.workspaceSize, 32))
    gm.write(a, keys)
    prof = run_kernel(sort_with_index, t.blockDim, (a, b, c, w, t), soc=soc, gm=gm,
                      sync_all=t.chunkNum > 1)
    return prof, seen[-1], gm.read(b, 4 * n) + gm.read(c, 4 * n)


# name -> (var shape, indices, nesterov, soc)
FSA_CASES = {"fsa-nesterov": ((300, 24), 800, True, "Ascend910B1"),
             "fsa-wide-A3": ((40, 7000), 90, False, "Ascend910_9391"),
             "fsa-sparse": ((3000, 16), 700, True, "Ascend910B1"),
             "fsa-nesterov-batched": ((300, 24), 800, True, "Ascend910B1")}


def _run_fsa(case, seen):
    # the duplicate merge entry by entry (the scalar-heavy records), unless the case names
    # its batched form
    from npusim.kernels.fused_sparse_adam.kernel import KernelFusedSparseAdam
    fast = KernelFusedSparseAdam.fast
    KernelFusedSparseAdam.fast = case.endswith("-batched")
    try:
        return _run_fsa_kernel(case, seen)
    finally:
        KernelFusedSparseAdam.fast = fast


def _run_fsa_kernel(case, seen):
    shape, n, nesterov, soc_name = FSA_CASES[case]
    soc = get_soc(soc_name)
    rng = np.random.default_rng(n + shape[0])
    var = rng.standard_normal(shape).astype(np.float32)
    m = rng.standard_normal(shape).astype(np.float32)
    v = np.abs(rng.standard_normal(shape)).astype(np.float32)
    grad = rng.standard_normal((n,) + shape[1:]).astype(np.float32)
    idx = rng.integers(-2, shape[0] + 2, n).astype(np.int32)
    sk, pos = sorted_order_golden(idx)
    gm = GlobalMemory(soc.memory_size)

    def put(a):
        addr = gm.malloc(max(a.nbytes, 32))
        gm.write(addr, np.ascontiguousarray(a))
        return addr

    addrs = [put(a) for a in (var, m, v)]
    scalars = [put(np.array([x], np.float32)) for x in (0.9 ** 4, 0.999 ** 4, 0.01, 0.9,
                                                        0.999, 1e-8)]
    t = fsa_tiling(soc, shape[0], int(np.prod(shape[1:])), n, use_nesterov=nesterov)
    prof = run_kernel(fused_sparse_adam, t.blockDim,
                      (*addrs, *scalars, put(grad), put(sk), put(pos), t), soc=soc, gm=gm)
    return prof, seen[-1], b"".join(gm.read(a, var.nbytes) for a in addrs)


RUNNERS = {**{k: _run_v2 for k in V2_CASES}, **{k: _run_v1 for k in V1_CASES},
           **{k: _run_sort for k in SORT_CASES}, **{k: _run_fsa for k in FSA_CASES}}




def _replay(monkeypatch, captured, prune: bool):
    blocks, soc, kw = captured
    monkeypatch.setattr(timing, "PRUNE_ISSUE_WAITS", prune)
    return timing.simulate(blocks, soc, **kw)


@pytest.mark.parametrize("case", list(RUNNERS))
def test_pruned_replay_is_identical(case, monkeypatch):
    seen = _capture(monkeypatch)
    RUNNERS[case](case, seen)
    ref = _replay(monkeypatch, seen[-1], False)
    got = _replay(monkeypatch, seen[-1], True)
    assert_same_timing(got, ref)


class _CountingDict(dict):
    """A dict that counts the lookups that found something."""

    hits = 0

    def get(self, key, default=None):
        found = super().get(key, default)
        if found is not None:
            self.hits += 1
        return found


@pytest.mark.parametrize("case", ["small-fp32", "base-fp32-A3", "sort-merge", "fsa-nesterov"])
def test_kept_rate_sharings_leave_the_replay_identical(case, monkeypatch):
    """timing.FILL_MEMO: a rate sharing taken from the kept ones is the one computed."""
    seen = _capture(monkeypatch)
    RUNNERS[case](case, seen)
    blocks, soc, kw = seen[-1]
    monkeypatch.setattr(timing, "FILL_MEMO", False)
    ref = timing.simulate(blocks, soc, **kw)
    kept = _CountingDict()
    monkeypatch.setattr(timing, "_FILL_KEPT", kept)
    monkeypatch.setattr(timing, "FILL_MEMO", True)
    for _ in range(2):              # each replay fills the store and reads it again
        assert_same_timing(timing.simulate(blocks, soc, **kw), ref)
        assert kept and kept.hits > 0      # sharings reused within the replay
        kept.hits = 0


def test_the_kept_rate_sharings_are_kept_for_one_replay(monkeypatch):
    """A long run does not accumulate them: each replay starts with an empty store."""
    seen = _capture(monkeypatch)
    RUNNERS["sort-merge"]("sort-merge", seen)
    blocks, soc, kw = seen[-1]
    kept = _CountingDict()
    kept[("left over",)] = None
    monkeypatch.setattr(timing, "_FILL_KEPT", kept)
    monkeypatch.setattr(timing, "REPLAY_MEMO", False)
    timing.simulate(blocks, soc, **kw)
    assert kept and ("left over",) not in kept


def test_pruning_leaves_out_most_issue_flags_of_the_small_dim_kernel(monkeypatch):
    seen = _capture(monkeypatch)
    RUNNERS["small-fp32"]("small-fp32", seen)
    records = max(seen[-1][0], key=len)
    pipes = {r[1] for r in records if r[1] != Pipe.PIPE_ALL}

    def count(prune):
        monkeypatch.setattr(timing, "PRUNE_ISSUE_WAITS", prune)
        lists = timing._split(records, pipes)
        return sum(len(v) for v in lists.values()), sum(
            it[3] == "issue" for v in lists.values() for it in v)

    (n_ref, issue_ref), (n, issue) = count(False), count(True)
    assert issue_ref > 300 and issue < issue_ref / 3
    assert n < 0.6 * n_ref


def test_issue_flags_kept_and_left_out_by_hand():
    S, V, MTE3 = Pipe.PIPE_S, Pipe.PIPE_V, Pipe.PIPE_MTE3
    key = ("que", 1, 0, "data")
    records = [(OP, S, 1.0, 0, None, "GetValue"),       # 0
               (OP, V, 10.0, 0, None, "Add"),           # 1: V and MTE3 wait for S (point 1)
               (OP, S, 1.0, 0, None, "GetValue"),       # 2
               (OP, V, 10.0, 0, None, "Add"),           # 3: again (point 3)
               (SET, V, 0.0, 0, key, "EnQue"),          # 4: V has passed point 3
               (WAIT, MTE3, 0.0, 0, key, "DeQue"),      # 5: so MTE3 knows S passed point 3
               (DMA_OUT, MTE3, 0.0, 256, (0, 256, True), "DataCopyPad")]
    lists = timing._split(records, {S, V, MTE3})
    short = {p: [(it[0], it[2] if it[0] in (SET, WAIT) else it[1]) for it in v]
             for p, v in lists.items()}
    # V waits for both points; MTE3's two issue waits are implied by the DeQue (point 1 by
    # point 3, point 3 by the flag V set after passing it); S keeps the sets V waits for
    assert short[V] == [(WAIT, ("issue", 1, V)), (OP, 10.0), (WAIT, ("issue", 3, V)),
                        (OP, 10.0), (SET, key)]
    assert short[MTE3] == [(WAIT, key), (DMA_OUT, 256)]
    assert short[S] == [(OP, 1.0), (SET, ("issue", 1, V)), (OP, 1.0), (SET, ("issue", 3, V))]
    # unpruned, MTE3 waits for each point
    old = timing.PRUNE_ISSUE_WAITS
    try:
        timing.PRUNE_ISSUE_WAITS = False
        ref = timing._split(records, {S, V, MTE3})
    finally:
        timing.PRUNE_ISSUE_WAITS = old
    assert [it[2] for it in ref[MTE3] if it[0] == WAIT] == [("issue", 1, MTE3), ("issue", 3, MTE3), key]
    soc = get_soc("Ascend910B1")
    a = timing.simulate([records], soc)
    b_lists = ref

    def with_lists(lists_to_use):
        real = timing._split
        timing._split = lambda *args, **kw: lists_to_use
        try:
            return timing.simulate([records], soc)
        finally:
            timing._split = real

    b = with_lists(b_lists)
    assert a.cycles == b.cycles and (a.pipe_busy[Pipe.PIPE_S] == b.pipe_busy[Pipe.PIPE_S]).all()
