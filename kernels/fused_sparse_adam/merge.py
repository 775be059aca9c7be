"""Simulator fast path of FusedSparseAdam's duplicate merge (``MergeRuns`` in kernel.py).

The kernel walks the sorted entries of a tile one at a time: two scalar reads per entry
(index and position, from the UB window of sorted entries), a DataCopyPad of that grad row
between a V->MTE2 and an MTE2->V flag, an Add into the run's accumulator, and ApplyRun
(five or eight vector instructions on one row) when the index changes; about fifteen
recorded instructions and 0.1 ms of Python per entry. :func:`merge_runs_batched` does the
same walk for a whole tile at once:

* **Entries** — the same UB windows are loaded by the same instructions
  (``KernelFusedSparseAdam.LoadWindow``), and the entries are read from them: the tile's
  entries end at the first index not below ``t0 + k`` (an int compare, as the kernel's),
  and indices outside ``[0, varRows)`` are dropped.
* **Numerics** — each run of equal indices is summed as the kernel sums it (the first grad
  row copied, the others added in sorted order, fp32), then ApplyRun's operations run on
  all the runs' rows at once, each rounded to fp32 in the kernel's order:
  ``m += (1-beta1)*g``, ``v += ((1-beta2)*g)*g``, and with Nesterov ``m_t = m*beta1 +
  (1-beta1)*g``. A tile's runs have distinct indices, so their rows are distinct: the
  results are bit-identical to the entry-by-entry loop (tests compare the two).
* **Timing** — per batch of :data:`BATCH_ENTRIES` entries of one window: one scalar op (the
  entries' reads), the V->MTE2 flag, one MTE2 transfer of the batch's grad rows standing
  for each row's DataCopyPad (its issue, bursts and latency: :func:`npusim.timing.batch_key`),
  the MTE2->V flag, and one V op costing the batch's
  Adds and the ApplyRuns of the runs it closes, each instruction costed at its own UB
  offsets as the kernel's would be. The entry-by-entry loop alternates MTE2 and V per
  row, the batches per batch: the busy times add up alike. The batch's transfer meets the
  L2 model at its first row's address (the rows of a batch are scattered over grad) [R];
  the tests bound the kernel time and the MTE2 time against the loop's. The scalar unit is
  charged the issue work of the instructions the loop issues (npusim.ascendc.scalar), so
  the scalar time is the loop's.
"""
from __future__ import annotations

import numpy as np

from npusim.ascendc import HardEvent, float32, int32_t
from npusim.ascendc import core as _core
from npusim.ascendc import nans as _nans
from npusim.ascendc.types import PIPE_MTE2, PIPE_S, PIPE_V, CacheMode
from npusim.ascendc.vector import RATE_SIMPLE, cost_key, level2_cycles
from npusim.kernels.common.row_walk import run_starts, sum_runs
from npusim.timing import batch_key, rows_bursts

#: Sorted entries per recorded batch.
BATCH_ENTRIES = 16

_RATE = RATE_SIMPLE[4]
_cost_cache: dict = {}


def _cycles(ctx, k, w: int, r: int | None) -> float:
    """V cycles of the Add into the accumulator (``r`` None) or of ApplyRun on tile row
    ``r``, as the kernel's instructions record them (memoised on the UB offsets)."""
    acc = k.accBuf.Get(float32)
    key = (cost_key(ctx.soc), w, acc.offset, k._tile(1).offset, k.tiling.rowAlign, r,
           bool(k.tiling.useNesterov))
    c = _cost_cache.get(key)
    if c is not None:
        return c
    soc = ctx.soc
    if r is None:
        grad_row = k.gradRowBuf.Get(float32)
        c = level2_cycles(soc, w, _RATE, acc, (acc, grad_row))
    else:
        tmp, m_row, v_row = k._tile(3), k._tile(1, r), k._tile(2, r)
        c = (level2_cycles(soc, w, _RATE, tmp, (acc,))              # Muls tmp = g*(1-b1)
             + level2_cycles(soc, w, _RATE, m_row, (m_row, tmp))    # Add m += tmp
             + level2_cycles(soc, w, _RATE, tmp, (acc,))            # Muls tmp = g*(1-b2)
             + level2_cycles(soc, w, _RATE, tmp, (tmp, acc))        # Mul tmp *= g
             + level2_cycles(soc, w, _RATE, v_row, (v_row, tmp)))   # Add v += tmp
        if k.tiling.useNesterov:
            mt_row = k._tile(4, r)
            c += (level2_cycles(soc, w, _RATE, mt_row, (m_row,))    # Muls m_t = m*b1
                  + level2_cycles(soc, w, _RATE, tmp, (acc,))       # Muls tmp = g*(1-b1)
                  + level2_cycles(soc, w, _RATE, mt_row, (mt_row, tmp)))  # Add m_t += tmp
    _cost_cache[key] = c = float(c)
    return c


def merge_runs_batched(k, t0: int, rows: int, col: int, w: int, e: int, s1: int) -> int:
    """``KernelFusedSparseAdam.MergeRuns`` for the tile of ``rows`` rows from ``t0``,
    columns ``[col, col + w)``, from sorted entry ``e`` (before ``s1``); returns the first
    entry after the tile (module docstring)."""
    from npusim.kernels.fused_sparse_adam.kernel import ENTRY_WINDOW, _sync
    ctx = _core.current_core()
    t = k.tiling
    end = t0 + rows
    sc = float(ctx.soc.scalar_cycles)
    burst = int(getattr(ctx.soc, "mte_burst_bytes", 0))
    row_bytes = 4 * w
    apply_n = 8 if t.useNesterov else 5                 # ApplyRun's vector instructions
    offset = (ctx.scalar_offset if k.gradGm.cache_mode is CacheMode.CACHE_MODE_NORMAL
              else ctx.scalar_hinted)
    keys_all, pos_all = [], []
    cur = None                               # index of the run in progress (timing)
    stopped = False
    while e < s1 and not stopped:
        k.LoadWindow(e)
        ws = k.windowStart
        hi = min(s1, ws + ENTRY_WINDOW)
        kv = k.keyBuf.Get(int32_t).elements(hi - ws, "GetValue", "PIPE_S")[e - ws:].astype(np.int64)
        pv = k.posBuf.Get(int32_t).elements(hi - ws, "GetValue", "PIPE_S")[e - ws:].astype(np.int64)
        beyond = np.flatnonzero(kv >= end)
        n = int(beyond[0]) if beyond.size else len(kv)
        stopped = bool(beyond.size)
        kv, pv = kv[:n], pv[:n]
        for b0 in range(0, n, BATCH_ENTRIES):
            kb, pb = kv[b0:b0 + BATCH_ENTRIES], pv[b0:b0 + BATCH_ENTRIES]
            valid = (kb >= 0) & (kb < t.varRows)
            kb, pb = kb[valid], pb[valid]
            ctx.record(_core.OP, PIPE_S, sc * 2 * len(valid), 0, None, "GetValue")
            if not len(kb):
                continue
            prev = np.r_[cur if cur is not None else -1, kb[:-1]]
            first = kb != prev                        # a new run: its row is copied
            v_cycles = _cycles(ctx, k, w, None) * float(np.count_nonzero(~first))
            # ApplyRun of each run this batch closes (the one in progress, then its own)
            closed = list(prev[first]) if cur is not None else list(prev[first][1:])
            for key in closed:
                v_cycles += _cycles(ctx, k, w, int(key) - t0)
            cur = int(kb[-1])
            _sync(HardEvent.V_MTE2)
            addrs = k.gradGm.address + 4 * (pb * t.rowSize + col)
            addr = int(addrs[0])
            # one transfer standing for the rows' DataCopyPads (timing.batch_key): an MTE
            # issue and the bursts of each, and the latency the loop waits for after each
            # (MTE2_V), all but the transfer's own as its waits
            bursts, extra = rows_bursts(addrs, row_bytes, burst)
            ctx.record(_core.DMA_IN, PIPE_MTE2, 0.0, row_bytes * len(kb),
                       batch_key(addr, row_bytes,
                                 k.gradGm.cache_mode is CacheMode.CACHE_MODE_DISABLE,
                                 len(kb), bursts, extra, waits=len(kb) - 1),
                       "DataCopyPad")
            ctx.bytes_read += row_bytes * len(kb)
            _sync(HardEvent.MTE2_V)
            ctx.record(_core.OP, PIPE_V, v_cycles, 0, None, "Add")
            # the scalar unit issued what the loop issues (npusim.ascendc.scalar): per entry
            # two flag pairs, its DataCopyPad and grad row address, the Add of a row after a
            # run's first; per closed run ApplyRun's instructions; less the six instructions
            # recorded here
            m = len(kb)
            issued = (5 * m + int(np.count_nonzero(~first)) + apply_n * len(closed) - 6)
            ctx.scalar_debt += ctx.scalar_issue * issued + offset * m
            keys_all.append(kb)
            pos_all.append(pb)
        e += n
        if stopped:
            ctx.record(_core.OP, PIPE_S, sc * 2, 0, None, "GetValue")   # the entry read that ends the tile
    if cur is not None:
        ctx.record(_core.OP, PIPE_V, _cycles(ctx, k, w, cur - t0), 0, None, "Muls")
        ctx.scalar_debt += ctx.scalar_issue * (apply_n - 1)     # ApplyRun's other instructions
    if keys_all:
        _apply(k, t0, col, w, np.concatenate(keys_all), np.concatenate(pos_all))
    return e


def _apply(k, t0: int, col: int, w: int, keys: np.ndarray, pos: np.ndarray) -> None:
    """The numerics of the tile's runs (module docstring), on the UB tiles."""
    t = k.tiling
    wp = t.rowAlign
    grad = k.gradGm.bytes_view(4 * t.indicesNum * t.rowSize, "DataCopyPad", "PIPE_MTE2").view(
        np.float32).reshape(t.indicesNum, t.rowSize)[:, col:col + w]
    n_tile = t.tileRows * wp

    def tile(i):
        return k.tileBuf[i].Get(float32).elements(n_tile, "Add").reshape(t.tileRows, wp)[:, :w]

    starts = run_starts(keys)
    length = np.diff(np.r_[starts, len(keys)])
    # the first row of a run is copied, the others added
    acc = sum_runs(grad[pos[starts]], grad, pos, starts, length, first=1)
    rows = keys[starts] - t0
    m, v = tile(1), tile(2)
    f32 = np.float32
    # each result a vector instruction writes: NaNs the canonical NaN (npusim.ascendc.nans;
    # a NaN stays NaN through the later steps, so once per written tile is the same bytes)
    tmp = acc * f32(k.oneMinusBeta1)
    m[rows] = _nans.canonical(m[rows] + tmp)
    tmp = acc * f32(k.oneMinusBeta2)
    tmp = tmp * acc
    v[rows] = _nans.canonical(v[rows] + tmp)
    if t.useNesterov:
        mt = tile(4)
        mt[rows] = _nans.canonical(m[rows] * f32(k.beta1))
        mt[rows] = _nans.canonical(mt[rows] + acc * f32(k.oneMinusBeta1))
    # the accumulator and the grad row buffer as the loop leaves them
    w8 = -(-w // 8) * 8
    a = k.accBuf.Get(float32).elements(w8, "Add")
    a[:w], a[w:] = acc[-1], 0.0
    if (length > 1).any():
        last = int(np.flatnonzero(length > 1)[-1])
        g = k.gradRowBuf.Get(float32).elements(w8, "Add")
        g[:w], g[w:] = grad[pos[starts[last] + length[last] - 1]], 0.0
