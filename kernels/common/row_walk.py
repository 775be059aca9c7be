"""Simulator fast path for kernels that walk sorted rows one at a time and sum runs of
equal indices in UB (EmbeddingDenseGradV2 keys 0/1 and 10/11, and the small-dim keys
100/101 over each sorted UB chunk: :func:`walk_small_dim_chunk`).

The Ascend C kernels issue about twenty instructions per row (three DataCopyPads, scalar
reads, an Add, queue hand-offs) and a flush (atomic DataCopyPad) per run; run one by one in
Python that is ~0.2 ms per row. This module executes the same walk for a whole range of
rows at once:

1. **Schedule** — the kernel's row loop, reduced to its integer state (last index, active
   accumulator, counts), runs in plain Python and yields the flushes in issue order: for
   each, the output row, the rows summed (a contiguous stretch of the walk) and the count.
   The state machine is the kernel's (``ComputeAndCopyOut``), including its zero flushes.
2. **Numerics** — each flushed accumulator is ``((0 + r1) + r2) + ...`` in fp32, the
   order of the UB Adds; flushes are atomically added to ``out`` in issue order (fp32 adds
   in the order the core issues them; different cores run in block order, as everywhere
   in the simulator). NaN sums are the canonical NaN, as the Adds and atomic adds write
   them (:mod:`npusim.ascendc.nans`). Bit-identical to the row-by-row kernel.
3. **Timing** — the instructions are recorded per batch of :data:`BATCH_ROWS` walk steps,
   chained by flags as the single-buffered kernel runs row by row: MTE2 reads the batch's
   sorted indices and positions (one transfer per index tensor, over their span) and its
   grad rows (one transfer of all their bytes); V does the Adds and the accumulator
   resets; MTE3 writes the batch's flushes (one transfer) while MTE2 already loads the
   next batch — the overlap the per-row kernel gets from the flush of one index running
   while the next row loads. Each batch transfer carries the copies it stands for
   (:func:`npusim.timing.batch_key`): one MTE issue per copy, each copy's bursts on the
   512 B grid, and the latencies the row kernel waits for between its copies (MTE issue
   model, docs/calibration.md), so its MTE2/MTE3 time is the row kernel's. The grad rows
   go past the L2 model (each is read once, so it would miss: their bursts are charged as
   misses through L2) [R]; the flushes go through it, their rows left dirty in L2 as the
   atomic DataCopyPads leave them. The bytes equal the row-by-row kernel's; its MTE2/MTE3
   busy times and its kernel time agree within a few percent (measured within 6%; the
   tests bound them at 10% and 12%, 5% for the small-dim walk's kernel time).

Every index the walk uses is checked first (:func:`~npusim.kernels.common.sorted_index.check_index`).
"""
from __future__ import annotations

from itertools import repeat
from operator import sub

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import nans as _nans
from npusim.ascendc.types import PIPE_MTE2, PIPE_MTE3, PIPE_S, PIPE_V, CacheMode
from npusim.ascendc.vector import RATE_SIMPLE, cost_key, level2_cycles
from npusim.kernels.common.sorted_index import check_index
from npusim.timing import batch_key, bursts_each, row_bursts

LIMIT_COUNT_NUM = 10
INDICE_INIT_PARAM = -1
#: Walk steps per recorded batch.
BATCH_ROWS = 16
#: Flushes whose fp32 sums are formed at once (bounds the host memory of the numerics).
EVENT_CHUNK = 8192


class FlushSchedule:
    """The flushes of a walk, in issue order.

    ``out_row[e]`` receives the sum of the walk's rows ``walk[start[e] : start[e] +
    length[e]]`` (``length`` 0 for a zero flush); ``count[e]`` is what AddFreq adds
    (= length). ``step[e]`` is the walk step after which flush ``e`` is issued.
    """

    def __init__(self):
        self.out_row, self.start, self.length, self.step = [], [], [], []

    def add(self, out_row: int, start: int, length: int, step: int) -> None:
        self.out_row.append(out_row)
        self.start.append(start)
        self.length.append(length)
        self.step.append(step)

    def arrays(self):
        return (np.asarray(self.out_row, np.int64), np.asarray(self.start, np.int64),
                np.asarray(self.length, np.int64), np.asarray(self.step, np.int64))


class _Walker:
    """The integer state of ``ComputeAndCopyOut``: two accumulators, each holding the
    stretch of walk steps added since its last flush."""

    def __init__(self, schedule: FlushSchedule, padding: int):
        self.s = schedule
        self.padding = padding
        self.switch = 0
        self.last = INDICE_INIT_PARAM
        self.count = [0, 0]
        self.begin = [0, 0]              # walk step of each accumulator's first row

    def flush(self, b: int, index: int, step: int) -> None:
        self.s.add(index, self.begin[b], self.count[b], step)
        self.count[b] = 0

    def add(self, step: int) -> None:
        b = self.switch
        if self.count[b] == 0:
            self.begin[b] = step
        self.count[b] += 1

    def switch_if_needed(self, cur: int) -> bool:
        if self.last != INDICE_INIT_PARAM and cur != self.last:
            self.switch = 1 - self.switch
            self.count[self.switch] = 0
            return True
        return False

    def row_base(self, step: int, cur: int, is_last: bool) -> None:
        """EmbeddingDenseGradV2Kernel::ComputeAndCopyOut (limit checked before the add)."""
        if cur != self.padding:
            need_switch = self.switch_if_needed(cur)
            limit = self.count[self.switch] == LIMIT_COUNT_NUM
            self.add(step)
            if limit or is_last:
                self.flush(self.switch, cur, step)
            if need_switch:
                self.flush(1 - self.switch, self.last, step)
            self.last = cur
        elif self.last != INDICE_INIT_PARAM:
            self.flush(self.switch, self.last, step)
            self.last = INDICE_INIT_PARAM

    def row_det(self, step: int, cur: int, at_limit: bool) -> None:
        """EmbeddingDenseGradV2DeterministKernel::ComputeAndCopyOut (limit after the add)."""
        if cur != self.padding:
            need_switch = self.switch_if_needed(cur)
            self.add(step)
            if self.count[self.switch] == LIMIT_COUNT_NUM or at_limit:
                self.flush(self.switch, cur, step)
            if need_switch:
                self.flush(1 - self.switch, self.last, step)
            self.last = cur
        elif self.last != INDICE_INIT_PARAM:
            self.flush(self.switch, self.last, step)
            self.last = INDICE_INIT_PARAM

    def break_flush(self, step: int) -> None:
        if self.last != INDICE_INIT_PARAM:
            self.flush(self.switch, self.last, step)


# -- numerics --------------------------------------------------------------------------------
def run_starts(keys: np.ndarray) -> np.ndarray:
    """Where each run of equal consecutive ``keys`` starts (int64; empty for no keys)."""
    if not len(keys):
        return np.zeros(0, np.int64)
    return np.r_[0, np.flatnonzero(keys[1:] != keys[:-1]) + 1]


def sum_runs(acc: np.ndarray, grad: np.ndarray, walk_rows: np.ndarray, start: np.ndarray,
             length: np.ndarray, first: int = 0) -> np.ndarray:
    """``acc[e] += grad[walk_rows[start[e] + s]]`` for ``s`` from ``first`` to
    ``length[e] - 1``, in that order: each run's rows added one after another in fp32, as
    the kernels' UB Adds do, all runs at once. Returns ``acc``."""
    if not len(length) or int(length.max()) <= first:
        return acc
    # runs longest first: the runs still adding at step s are a prefix, summed in a
    # contiguous copy of their accumulators (a slice, not a gather and scatter per step)
    order = np.argsort(-length, kind="stable")
    by_len, begin = length[order], start[order]
    live = np.searchsorted(-by_len, -np.arange(first, int(by_len[0])))  # runs longer than s
    part = acc[order]
    # every step's rows gathered at once, step after step (step s: the s-th rows of the
    # first live[s] runs), then each step one add of a contiguous slice
    live_l = live.tolist()
    step = np.repeat(np.arange(first, first + len(live_l)), live)
    nth = np.arange(len(step)) - np.repeat(np.cumsum(live) - live, live)
    rows = grad[walk_rows[begin[nth] + step]]
    o = 0
    for k in live_l:
        part[:k] += rows[o:o + k]
        o += k
    # the runs that added: each Add wrote the canonical NaN (a NaN stays NaN, so once at
    # the end is the same bytes); a run that only copied keeps its row's bytes
    _nans.canonical(part[:int(live[0]) if len(live) else 0])
    acc[order] = part
    return acc


def add_rows(out: np.ndarray, rows: np.ndarray, cols, acc: np.ndarray) -> None:
    """``out[rows, cols] += acc`` (distinct ``rows``), each sum an fp32 atomic add: NaNs the
    canonical NaN, as DataCopyPad's atomic add writes them (npusim.ascendc.nans)."""
    with np.errstate(all="ignore"):          # inf + -inf: NaN, as the device gives it
        total = out[rows, cols] + acc
    out[rows, cols] = _nans.canonical(total)


def apply_flushes(out: np.ndarray, grad: np.ndarray, walk_rows: np.ndarray,
                  schedule: FlushSchedule, col0: int, width: int,
                  counts: np.ndarray | None = None) -> None:
    """Apply a schedule: fp32 sums in walk order, atomic adds in issue order.

    Args:
        out: float32 [numWeights, E] view of the output in GM (updated in place).
        grad: float32 [gradRow, E] view of grad.
        walk_rows: grad row of each walk step (posIdx values).
        col0, width: the column chunk.
        counts: float32 view of the counts (scale, first column chunk), or None.
    """
    out_row, start, length, _ = schedule.arrays()
    cols = slice(col0, col0 + width)
    for e0 in range(0, len(out_row), EVENT_CHUNK):
        rows = out_row[e0:e0 + EVENT_CHUNK]
        st, ln = start[e0:e0 + EVENT_CHUNK], length[e0:e0 + EVENT_CHUNK]
        acc = sum_runs(np.zeros((len(rows), width), np.float32), grad[:, cols], walk_rows,
                       st, ln)
        # atomic adds: flushes to one row land in issue order
        order = np.argsort(rows, kind="stable")
        first = run_starts(rows[order])
        rank = np.empty(len(rows), np.int64)
        rank[order] = np.arange(len(rows)) - np.repeat(first, np.diff(np.r_[first, len(rows)]))
        for r in range(int(rank.max()) + 1 if len(rank) else 0):
            sel = np.flatnonzero(rank == r)
            add_rows(out, rows[sel], cols, acc[sel])
        if counts is not None:
            np.add.at(counts, rows, ln.astype(np.float32))


# -- timing -----------------------------------------------------------------------------------
def _bypass(gm) -> bool:
    return gm.cache_mode is CacheMode.CACHE_MODE_DISABLE


def _vec_cycles(ctx, count: int, rate: int = 64) -> float:
    return ctx.soc.vec_head_cycles + -(-int(count) // rate) if count > 0 else 0.0


def _add_cycles(ctx, p) -> float:
    return _vec_cycles(ctx, p.computeFormerNum) + _vec_cycles(ctx, p.computeTailNum)


def _segment_sums(values: np.ndarray, bounds: np.ndarray) -> list:
    """Sums of ``values`` over the segments ``[bounds[i], bounds[i + 1])`` (int64; an
    empty segment sums to 0), as Python ints."""
    cs = np.zeros(len(values) + 1, np.int64)
    np.cumsum(values, out=cs[1:])
    return (cs[bounds[1:]] - cs[bounds[:-1]]).tolist()


def _flush_keys(flush_addr: np.ndarray, bounds: np.ndarray, row_bytes: int, burst: int):
    """For each batch of flushes ``flush_addr[bounds[i]:bounds[i + 1]]``, what
    :func:`_record_flushes` records of it: ``(lo, span, runs, bursts, extra)`` (None for
    an empty batch): the lowest address, the span to the last row's end, the distinct
    rows as runs from ``lo``, and :func:`~npusim.timing.rows_bursts` of the flushes.
    numpy over all the batches at once (a walk has thousands of them)."""
    a = np.asarray(flush_addr, np.int64)
    bounds = np.asarray(bounds, np.int64)
    counts = np.diff(bounds)
    nb = _segment_sums(bursts_each(a, row_bytes, burst), bounds)
    per = (max(row_bytes, 1) + burst - 1) // burst if burst else 0
    seg = np.repeat(np.arange(len(counts)), counts)
    order = np.lexsort((a, seg))
    a_s, seg_s = a[order], seg[order]
    keep = np.ones(len(a_s), bool)
    keep[1:] = (a_s[1:] != a_s[:-1]) | (seg_s[1:] != seg_s[:-1])
    uniq, useg = a_s[keep].tolist(), seg_s[keep]
    ub = np.searchsorted(useg, np.arange(len(counts) + 1)).tolist()
    out = []
    row_form = repeat(row_bytes)
    one = repeat(1)
    for i, nf in enumerate(counts.tolist()):
        if not nf:
            out.append(None)
            continue
        rows = uniq[ub[i]:ub[i + 1]]
        lo = rows[0]
        # (r - lo, row_bytes, row_bytes, 1) for each row r, the tuples made by zip
        runs = tuple(zip(map(sub, rows, repeat(lo)), row_form, row_form, one))
        b = nb[i]
        out.append((lo, rows[-1] - lo + row_bytes, runs, b, b - nf * per if burst else 0))
    return out


def record_walk(ctx, tag, name: str, streams: list, grad_addr: np.ndarray, row_bytes: int,
                flush_step: np.ndarray, flush_addr: np.ndarray, count_addr, bypass: dict,
                add_cycles: float, reset_cycles: float, together: bool = True) -> None:
    """Record a walk in batches of :data:`BATCH_ROWS` steps (module docstring, step 3).

    Args:
        tag: names the walk's flags, unique among the walks of one core's records and the
            same launch after launch (not an object's id), so that a repeated launch records
            what the last one recorded and takes its kept replay (npusim.timing.REPLAY_MEMO).
        streams: per index tensor read 4 bytes at a time (sorted indices, posIdx), the GM
            address each step reads (-1: not read). A batch reads each stream's addresses
            as one transfer over their span, plus the latency of the other transfers.
        grad_addr: GM address of the grad row each step loads (-1: none); ``row_bytes``
            per row.
        flush_step, flush_addr: after which step each flush is issued, and the GM address
            of its atomic DataCopyPad (``row_bytes``). count_addr: GM addresses of the
            flushes' 4-byte count adds (scaleGradByFreq), or None when there are none.
        bypass: {"idx": bool}: the index tensors' SetL2CacheHint(CACHE_MODE_DISABLE) state
            (the grad and flush transfers always go past the L2 model, see above).
        add_cycles / reset_cycles: V cycles of one row's Adds / one accumulator reset.
        together: the kernel issues a step's index reads back to back, then waits for
            them (one latency a step); False: it waits for each (one latency a read).

    Each batch's figures (its rows, addresses, bursts) are worked out with numpy over the
    whole walk first, then the records are made batch by batch: the same records as a
    batch-by-batch numpy pass, without its few dozen small numpy calls per batch.
    """
    burst = int(getattr(ctx.soc, "mte_burst_bytes", 0))
    sc = ctx.soc.scalar_cycles
    rec = ctx.record
    n = len(grad_addr)
    if not n:
        return
    flush_step = np.asarray(flush_step, np.int64)
    fl_order = np.searchsorted(flush_step, np.arange(0, n + BATCH_ROWS, BATCH_ROWS))
    n_batches = -(-n // BATCH_ROWS)
    fb = fl_order[:n_batches + 1].copy()
    fb[-1] = len(flush_step)
    flushes = _flush_keys(flush_addr, fb, row_bytes, burst)
    fb = fb.tolist()
    scale = count_addr is not None
    bounds = np.minimum(np.arange(n_batches + 1) * BATCH_ROWS, n)
    big = np.iinfo(np.int64).max
    grad_addr = np.asarray(grad_addr, np.int64)
    gm = grad_addr >= 0
    g_n = _segment_sums(gm, bounds)
    g_lo = np.minimum.reduceat(np.where(gm, grad_addr, big), bounds[:-1]).tolist()
    g_b = _segment_sums(np.where(gm, bursts_each(grad_addr, row_bytes, burst), 0), bounds)
    g_per = (max(row_bytes, 1) + burst - 1) // burst if burst else 0
    # each index stream's reads per batch: count, span, bursts
    s_n, s_lo, s_hi, s_b = [], [], [], []
    any_read = np.zeros(n, bool)
    for addrs in streams:
        addrs = np.asarray(addrs, np.int64)
        m = addrs >= 0
        any_read |= m
        s_n.append(_segment_sums(m, bounds))
        s_lo.append(np.minimum.reduceat(np.where(m, addrs, big), bounds[:-1]).tolist())
        s_hi.append((np.maximum.reduceat(np.where(m, addrs, -1), bounds[:-1]) + 4).tolist())
        s_b.append(_segment_sums(np.where(m, bursts_each(addrs, 4, burst), 0), bounds)
                   if bypass["idx"] else None)
    steps = _segment_sums(any_read, bounds) if streams and together else None
    per4 = (4 + burst - 1) // burst if burst else 0
    prev = None
    for bi in range(n_batches):
        k = (("rowwalk", tag), bi)
        if prev is not None:
            rec(_core.WAIT, PIPE_MTE2, 0.0, 0, prev, name)
        # Each batch record stands for the copies the row-by-row kernel issues
        # (timing.batch_key): one MTE issue per copy and each copy's bursts. Latencies: the
        # row kernel's index copies of a step are in flight together (one latency), and it
        # waits for them and for each grad row; the batch's transfers are in flight together
        # (one latency): the others are the waits of its last transfer.
        gn = g_n[bi]
        if not streams:
            idx_steps = 0
        elif together:
            idx_steps = steps[bi]
        else:
            idx_steps = sum([c[bi] for c in s_n])
        waits = max(idx_steps + gn - 1, 0)
        last = -1
        if not gn:
            last = max((si for si, c in enumerate(s_n) if c[bi]), default=-1)
        reads = 0
        for si in range(len(streams)):
            count = s_n[si][bi]
            if count:
                lo, hi = s_lo[si][bi], s_hi[si][bi]
                # through L2, the copies' misses are the range's bursts (the 4-byte reads
                # after the first of a sector hit); past it, every copy is a burst
                if bypass["idx"]:
                    nb = s_b[si][bi]
                    ex = nb - count * per4 if burst else 0
                else:
                    nb, ex = row_bursts(lo, hi - lo, None, burst) if burst else (1, 0)
                rec(_core.DMA_IN, PIPE_MTE2, 0.0, 4 * count,
                    batch_key(lo, hi - lo, bypass["idx"], count, nb, ex,
                              waits=waits if si == last else 0), "DataCopyPad")
                ctx.bytes_read += 4 * count
                reads += count
        if gn:
            # the batch's rows as one transfer past the L2 model (each grad row is read
            # once: its copy misses L2)
            nb = g_b[bi]
            rec(_core.DMA_IN, PIPE_MTE2, 0.0, row_bytes * gn,
                batch_key(g_lo[bi], row_bytes, True, gn, nb, nb - gn * g_per if burst else 0,
                          misses=True, waits=waits),
                "DataCopyPad")
        ctx.bytes_read += row_bytes * gn
        rec(_core.SET, PIPE_MTE2, 0.0, 0, (k, "in"), name)
        nf = fb[bi + 1] - fb[bi]
        rec(_core.OP, PIPE_S, float(sc * (reads + nf * (2 + (3 if scale else 0)))), 0, None,
            "GetValue")
        rec(_core.WAIT, PIPE_V, 0.0, 0, (k, "in"), name)
        rec(_core.OP, PIPE_V, float(gn * add_cycles + nf * reset_cycles), 0, None, "Add")
        rec(_core.SET, PIPE_V, 0.0, 0, (k, "v.mte3"), name)
        rec(_core.SET, PIPE_V, 0.0, 0, (k, "v.mte2"), name)
        rec(_core.WAIT, PIPE_MTE3, 0.0, 0, (k, "v.mte3"), name)
        if nf:
            _record_flushes(rec, nf, flushes[bi], scale, row_bytes)
        ctx.bytes_written += nf * (row_bytes + (4 if scale else 0))
        prev = (k, "v.mte2")
    if prev is not None:
        rec(_core.WAIT, PIPE_MTE2, 0.0, 0, prev, name)


def _record_flushes(rec, nf: int, flush_key: tuple, scale: bool, row_bytes: int,
                    count_waits: bool = False) -> None:
    """Record a batch's ``nf`` flushes as one MTE3 transfer through the L2 model standing
    for the row kernel's copies (:func:`npusim.timing.batch_key`): per flush its atomic
    DataCopyPad of ``row_bytes`` and, with ``scale``, the 4-byte count add issued right
    after it (one burst). The row kernel waits for each flush's copies (PipeBarrier), whose
    latencies overlap: one latency per flush; the batch's transfer completes with one, the
    others are its waits. ``count_waits``: the kernel waits for the flush before it
    writes the count (MTE3_S), two latencies per flush with ``scale``. ``flush_key``: the
    batch's (lo, span, runs, bursts, extra) from :func:`_flush_keys`."""
    lo, span, runs, nb, ex = flush_key
    if scale:
        nb += nf
    # through the L2 model as the atomic DataCopyPads go, the lines of the rows they write
    # left dirty in L2 (a later pass, the scale kernel's, hits them)
    rec(_core.DMA_OUT, PIPE_MTE3, 0.0, nf * (row_bytes + (4 if scale else 0)),
        batch_key(lo, span, False, nf * (2 if scale else 1), nb, ex,
                  waits=nf * (2 if scale and count_waits else 1) - 1, rows=runs),
        "DataCopyPad")


# -- the two walks -------------------------------------------------------------------------------
def _views(k):
    t = k.tiling
    grad = k.gradGm.bytes_view(4 * t.gradRow * t.embeddingDim, "DataCopyPad", "PIPE_MTE2")
    out = k.outputGm.bytes_view(4 * t.numWeights * t.embeddingDim, "DataCopyPad", "PIPE_MTE3")
    grad = grad.view(np.float32).reshape(t.gradRow, t.embeddingDim)
    out = out.view(np.float32).reshape(t.numWeights, t.embeddingDim)
    counts = None
    if t.scaleGradByFreq:
        counts = k.idxNumGm.bytes_view(4 * t.numWeights, "DataCopyPad", "PIPE_MTE3").view(
            np.float32)
    return grad, out, counts


def _check_rows(values: np.ndarray, positions: np.ndarray, bound: int) -> None:
    signed = values.astype(np.int64)
    signed = np.where(signed >= 1 << 31, signed - (1 << 32), signed)
    bad = np.flatnonzero((signed < 0) | (signed >= bound))
    if bad.size:
        i = int(bad[0])
        check_index(int(signed[i]), int(positions[i]), bound, "numWeights", "DataCopyPad")


def walk_base_rows(k, dimJ: int) -> None:
    """The rows of one column chunk of ``KernelEmbeddingDenseGradV2.ProcessForFp32``."""
    ctx = _core.current_core()
    t, R = k.tiling, k.rowNum
    idx = k.indiceGm.bytes_view(4 * R, "DataCopyPad", "PIPE_MTE2").view(np.uint32).astype(np.int64)
    pos = k.posIdxGm.bytes_view(4 * R, "DataCopyPad", "PIPE_MTE2").view(np.uint32).astype(np.int64)
    _check_rows(idx, pos, t.numWeights)
    sched = FlushSchedule()
    w = _Walker(sched, t.paddingIdx)
    idx_list = idx.tolist()
    for i in range(R):
        w.row_base(i, idx_list[i], i == R - 1)
    grad, out, counts = _views(k)
    col0 = t.formerEmbeddingDim * dimJ
    apply_flushes(out, grad, pos, sched, col0, k.curEmbeddingDim,
                  counts if dimJ == 0 else None)
    out_rows = np.asarray(sched.out_row, np.int64)
    record_walk(ctx, ("base", dimJ), "EmbeddingDenseGradV2 rows",
                [k.indiceGm.address + 4 * np.arange(R), k.posIdxGm.address + 4 * np.arange(R)],
                k.gradGm.address + 4 * (pos * t.embeddingDim + col0), 4 * k.curEmbeddingDim,
                np.asarray(sched.step, np.int64),
                k.outputGm.address + 4 * (out_rows * t.embeddingDim + col0),
                (k.idxNumGm.address + 4 * out_rows) if (t.scaleGradByFreq and dimJ == 0) else None,
                _bypass_of(k), _add_cycles(ctx, k.addParam), _vec_cycles(ctx, k.gradAlignNum))


def walk_determinist_rows(k, dimJ: int) -> None:
    """``SubProcess`` + ``ContinueCompute`` of the determinist kernel for one column chunk
    (``k.standIdice`` was read by the kernel's InitStandIndice(0))."""
    ctx = _core.current_core()
    t = k.tiling
    start, R = k.indicesAddrOffset, k.processRowNum
    allIdx = k.indiceGlobalGm.bytes_view(4 * t.gradRow, "DataCopyPad", "PIPE_MTE2").view(
        np.int32).astype(np.int64)
    allPos = k.posIdxGm.bytes_view(4 * (t.gradRow - start), "DataCopyPad", "PIPE_MTE2").view(
        np.int32).astype(np.int64)
    idx = allIdx[start:]
    stand = k.standIdice
    # part A: backwards from the core's last row, stopping at the previous core's run
    j = R - 1
    back = []
    while j >= 0 and idx[j] != stand:
        back.append(j)
        j -= 1
    stopped_back = j >= 0
    cont = []
    stopped_fwd = False
    need_continue = not (stopped_back and j == R - 1)
    if need_continue:
        stand2 = int(idx[R - 1])
        i = R
        while i < t.gradRow - start and idx[i] == stand2:
            cont.append(i)
            i += 1
        stopped_fwd = i < t.gradRow - start
    walk = np.asarray(back + cont, np.int64)
    _check_rows(idx[walk] & 0xFFFFFFFF, allPos[walk], t.numWeights)
    sched = FlushSchedule()
    w = _Walker(sched, t.paddingIdx)
    values = (idx[walk] & 0xFFFFFFFF).tolist()
    for s in range(len(back)):
        w.row_det(s, values[s], back[s] == 0)
    if stopped_back:
        w.break_flush(max(len(back) - 1, 0))
    if need_continue:
        w.last = INDICE_INIT_PARAM
        loop_limit = t.gradRow - start - 1
        for s in range(len(back), len(walk)):
            w.row_det(s, values[s], cont[s - len(back)] == loop_limit)
        if stopped_fwd:
            w.break_flush(max(len(walk) - 1, 0))
    grad, out, counts = _views(k)
    col0 = t.formerEmbeddingDim * dimJ
    apply_flushes(out, grad, allPos[walk], sched, col0, k.curEmbeddingDim,
                  counts if dimJ == 0 else None)
    # timing: every processed row reads its index and posIdx and loads grad; each stop
    # (and the InitStandIndice of ContinueCompute) reads one index
    steps = list(walk)
    if stopped_back:
        steps.append(j)
    if need_continue:
        steps.append(R - 1)                     # InitStandIndice(processRowNum)
        if stopped_fwd:
            steps.append(R + len(cont))
    steps = np.asarray(steps, np.int64)
    n = len(steps)
    base = k.indiceGlobalGm.address + 4 * start
    loaded = np.arange(n) < len(walk)
    pos_addr = np.where(loaded, k.posIdxGm.address + 4 * steps, -1)
    grad_addr = np.full(n, -1, np.int64)
    grad_addr[:len(walk)] = k.gradGm.address + 4 * (allPos[walk] * t.embeddingDim + col0)
    out_rows = np.asarray(sched.out_row, np.int64)
    flush_step = np.minimum(np.asarray(sched.step, np.int64), max(n - 1, 0))
    record_walk(ctx, ("determinist", dimJ), "EmbeddingDenseGradV2Determinist rows",
                [base + 4 * steps, pos_addr], grad_addr, 4 * k.curEmbeddingDim, flush_step,
                k.outputGm.address + 4 * (out_rows * t.embeddingDim + col0),
                (k.idxNumGm.address + 4 * out_rows) if (t.scaleGradByFreq and dimJ == 0) else None,
                _bypass_of(k), _add_cycles(ctx, k.addParam), _vec_cycles(ctx, t.formerEmbeddingDim),
                together=False)     # CopyIn waits for its index, then for its posIdx


def _bypass_of(k) -> dict:
    idx = getattr(k, "indiceGm", None) or k.indiceGlobalGm
    return {"idx": _bypass(idx)}


# -- the small-dim kernel's chunk walk ----------------------------------------------------------
#: Flushes per recorded batch of the small-dim walk.
BATCH_FLUSHES = 16

_add_cost_tables: dict = {}


def _add_costs(ctx, add_local, grad_local, align: int, rows: int, count: int) -> np.ndarray:
    """V cycles of ``Add(addLocal, addLocal, gradLocal[p * align], count)`` for each chunk
    row ``p < rows``, as the instruction records them (UB bank conflicts depend on the
    offsets): float64 array indexed by row, memoised per UB layout, so that a chunk's walk
    gathers its rows' costs instead of looking each one up."""
    key = (cost_key(ctx.soc), count, add_local.offset, grad_local.offset, align, rows)
    table = _add_cost_tables.get(key)
    if table is None:
        if len(_add_cost_tables) >= 64:
            _add_cost_tables.clear()
        table = _add_cost_tables[key] = np.array(
            [level2_cycles(ctx.soc, count, RATE_SIMPLE[4], add_local,
                           (add_local, grad_local[p * align])) for p in range(rows)],
            dtype=np.float64)
    return table


def walk_small_dim_chunk(k, indices_local, idx_local, grad_local, n: int) -> None:
    """The row loop of ``EmbeddingDenseGradV2SmallDimKernel::ComputeAndCopyOut`` for one UB
    chunk of ``n`` rows whose indices (``indices_local``, int32) and original positions
    (``idx_local``) the kernel has just sorted in UB, descending.

    The loop reads each sorted entry through the scalar unit, skips padding rows, Adds each
    run of equal indices into the fp32 accumulator (``((0 + r1) + r2) + ...``, in sorted
    order) and flushes it with an atomic DataCopyPad to ``out`` (fp32) or to the fp32
    ``outCasted`` workspace (fp16/bf16 grads), plus its row count to the counts with
    scaleGradByFreq. Here the runs come from the sorted entries at once and the sums are
    formed run by run in numpy, in the same fp32 order: the results are bit-identical to the
    row-by-row loop (each index forms one run per chunk, so the chunk's atomic adds reach
    distinct rows and their order does not matter). An index outside ``[0, numWeights)``
    stops the kernel at the same sorted entry, after the flushes before it.

    Timing: per batch of :data:`BATCH_FLUSHES` flushes, one scalar op (the GetValues,
    SetAtomicAdd/SetAtomicNone and, with scale, the SetValue of each flush), one V op (the
    Adds, each costed at its own UB offsets, and the accumulator resets), then one MTE3
    transfer of the batch's flushes past the L2 model with the latency of each atomic
    DataCopyPad; V waits for the previous batch's flushes, as the single accumulator makes
    it wait for each flush row by row [R]. The bytes equal the row-by-row loop's; the tests
    bound the kernel time and the per-pipe times against it. The UB scratch the loop's
    count SetValue leaves (scale) is not written [R].
    """
    ctx = _core.current_core()
    t = k.tiling
    E = t.embeddingDim
    ids = indices_local.elements(n, "GetValue", "PIPE_S").astype(np.int64)
    pos = idx_local.elements(n, "GetValue", "PIPE_S").astype(np.int64)
    bad = np.flatnonzero((ids < 0) | (ids >= t.numWeights))
    stop = int(bad[0]) if bad.size else n
    ids_s = ids[:stop]
    # runs of equal indices in sorted order; padding rows are skipped one by one
    starts = run_starts(ids_s)
    ends = np.r_[starts[1:], stop].astype(np.int64)
    pad = t.paddingIdx
    keep = ids_s[starts] != pad if pad < t.numWeights else np.ones(len(starts), bool)
    r_start, r_end = starts[keep], ends[keep]
    length = r_end - r_start
    out_rows = ids_s[r_start]
    # numerics: the fp32 sums in sorted order, then the atomic adds
    align = k.embeddingDimAlign
    grad = grad_local.elements(k.copyRowNum * align, "Add").reshape(k.copyRowNum, align)[:, :E]
    target = k.outCastedGm if k.isDifferentDtype else k.outputGm
    out = target.bytes_view(4 * t.numWeights * E, "DataCopyPad", "PIPE_MTE3").view(
        np.float32).reshape(t.numWeights, E)
    if len(out_rows):
        add_rows(out, out_rows, slice(None), sum_runs(np.zeros((len(out_rows), E), np.float32),
                                                      grad, pos, r_start, length))
        if t.scaleGradByFreq:
            counts = k.idxNumGm.bytes_view(4 * t.numWeights, "DataCopyPad", "PIPE_MTE3").view(
                np.float32)
            counts[out_rows] += length.astype(np.float32)
    _record_small_dim(ctx, k, grad_local, pos, r_start, r_end, target.address + 4 * E * out_rows,
                      n, stop)
    if bad.size:
        k.CheckChunkIndex(int(ids[stop]), int(pos[stop]))     # raises, naming the index


def _record_small_dim(ctx, k, grad_local, pos, r_start, r_end, flush_addr, n, stop) -> None:
    """Record a chunk's walk in batches (:func:`walk_small_dim_chunk`, "Timing");
    ``flush_addr``: the GM address of each run's flush."""
    t = k.tiling
    E = t.embeddingDim
    soc = ctx.soc
    sc = soc.scalar_cycles
    rec = ctx.record
    scale = bool(t.scaleGradByFreq)
    row_bytes = 4 * E
    add_local = k.addResQue._queue[-1]
    reset = float(level2_cycles(soc, E, RATE_SIMPLE[4], add_local))
    align = k.embeddingDimAlign
    add = _add_costs(ctx, add_local, grad_local, align, k.copyRowNum, E)[pos[:stop]]
    add_cum = np.r_[0.0, np.cumsum(add)]
    nf_all = len(flush_addr)
    name = "EmbeddingDenseGradV2SmallDim rows"
    tag = ("smalldim", k.chunkStart)           # unique per chunk within a core's records
    fb = np.minimum(np.arange(-(-nf_all // BATCH_FLUSHES) + 1) * BATCH_FLUSHES, nf_all)
    flushes = _flush_keys(flush_addr, fb, row_bytes, int(getattr(soc, "mte_burst_bytes", 0)))
    row0 = 0                                    # first sorted entry of the batch
    prev = None
    # per flush, gathered once: the Adds' cumulative cost at its run's end and start (each
    # batch sums its contiguous slice of them, the very sums of its own gathers), and the
    # runs ended by a compare before the chunk's end, counted up to each flush
    end_cost, start_cost = add_cum[r_end], add_cum[r_start]
    # each batch's sums of them, all at once: the full batches as the rows of a
    # [batches, BATCH_FLUSHES] array summed along them (the same summation, a row at a
    # time, as each slice's own ``sum()``: same bits), the last, shorter one alone
    full = nf_all // BATCH_FLUSHES * BATCH_FLUSHES
    v_sums = (end_cost[:full].reshape(-1, BATCH_FLUSHES).sum(axis=1)
              - start_cost[:full].reshape(-1, BATCH_FLUSHES).sum(axis=1)).tolist()
    if full < nf_all:
        v_sums.append(float(end_cost[full:].sum() - start_cost[full:].sum()))
    ends = r_end.tolist()
    broken = np.cumsum(r_end < n).tolist()
    for bi, f0 in enumerate(range(0, nf_all, BATCH_FLUSHES)):
        f1 = min(nf_all, f0 + BATCH_FLUSHES)
        row1 = ends[f1 - 1]
        nf = f1 - f0
        # GetValues: two per entry the loop starts at or steps through, one more for the
        # compare that ends each run before the chunk's end
        breaks = broken[f1 - 1] - (broken[f0 - 1] if f0 else 0)
        v_cycles = v_sums[bi] + nf * reset
        k_ = (tag, bi)
        rec(_core.OP, PIPE_S, float(sc * (2 * (row1 - row0) + breaks
                                          + nf * (2 + (3 if scale else 0)))), 0, None, "GetValue")
        if prev is not None:
            rec(_core.WAIT, PIPE_V, 0.0, 0, prev, name)
        rec(_core.OP, PIPE_V, v_cycles, 0, None, "Add")
        rec(_core.SET, PIPE_V, 0.0, 0, (k_, "v"), name)
        rec(_core.WAIT, PIPE_MTE3, 0.0, 0, (k_, "v"), name)
        _record_flushes(rec, nf, flushes[bi], scale, row_bytes, count_waits=True)
        rec(_core.SET, PIPE_MTE3, 0.0, 0, (k_, "m"), name)
        ctx.bytes_written += nf * (row_bytes + (4 if scale else 0))
        prev = (k_, "m")
        row0 = row1
    if stop > row0:                             # padding rows after the last flush
        rec(_core.OP, PIPE_S, float(sc * 2 * (stop - row0)), 0, None, "GetValue")
    if prev is not None:
        rec(_core.WAIT, PIPE_V, 0.0, 0, prev, name)
