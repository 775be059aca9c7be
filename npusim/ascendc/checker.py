"""The kernel checker: catches, at the instruction that makes them, the mistakes that
give an AI-core exception or silently wrong numbers on hardware — in the spirit of Ascend
C's CPU-debug checker and msSanitizer.

Categories (each finding is a :class:`KernelError` of that category naming the core, the
pipe, the instruction and the kernel line):

* ``UB`` — accesses outside the UB or a tensor's buffer, buffers that do not fit, too many
  buffers (raised where they happen: :mod:`pipe`, :mod:`tensor`).
* ``Alignment`` — UB operands not 32 B aligned; DataCopy lengths that are not whole 32 B
  blocks (the copy is rounded down, as hardware does, and the checker says so);
  DataCopy/DataCopyPad parameters out of range.
* ``GM`` — accesses outside the allocation a GlobalTensor was built on; several cores
  writing the same GM bytes without atomic add.
* ``Uninitialised`` — reading UB that nothing wrote since AllocTensor (or since the launch
  began, for TBuf and static tensors).
* ``Sync`` — a pipe reading UB another pipe wrote, or overwriting UB another pipe reads,
  with no queue hand-off, flag or barrier in between; SetFlag twice without WaitFlag;
  flags unpaired at kernel end; eventIDs out of range.
* ``Leak`` — tensors allocated from a queue and not freed at kernel end.

Memory-safety findings (out of bounds, misaligned addresses, limits) always stop the
launch. The others stop it too, unless :class:`CheckerConfig` turns their category into a
warning (kept in ``KernelProfile.warnings``) or switches the checker off.

Pipe-sync races are found with vector clocks: each pipe knows how far every other pipe had
got at the last flag or queue hand-off it waited for; an access is a race when the last
conflicting access of another pipe is beyond that point. The scalar unit issues every
instruction in program order and blocks while it works or waits, so everything issued
after a scalar instruction or a WaitFlag on PIPE_S is ordered after it. Race and uninitialised-read
tracking costs a few numpy operations per instruction, so by default it runs on the first
and the last block of a launch (every block runs the same code with other offsets);
``CheckerConfig(all_blocks=True)`` tracks every block.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from npusim.ascendc.core import BARRIER as _BARRIER, SET as _SET, WAIT as _WAIT
from npusim.ascendc.types import Pipe
from npusim.errors import KernelError, SyncError

CATEGORIES = ("UB", "Alignment", "GM", "Uninitialised", "Sync", "Leak")
_N_PIPES = max(int(p) for p in Pipe) + 1
_UB_READERS = (int(Pipe.PIPE_V), int(Pipe.PIPE_MTE3), int(Pipe.PIPE_S))
_S = int(Pipe.PIPE_S)
_PIPE_ALL = int(Pipe.PIPE_ALL)
_UB_READERS_IDX = np.array(_UB_READERS)
_READER_ROW = {p: i for i, p in enumerate(_UB_READERS)}
_NEVER = np.iinfo(np.int64).max        # a progress threshold no instruction index reaches


class UninitialisedError(KernelError):
    """A read of UB bytes that nothing wrote since they were allocated."""

    category = "Uninitialised"


class LeakError(KernelError):
    """Queue tensors still allocated at kernel end."""

    category = "Leak"


@dataclass(frozen=True)
class CheckerConfig:
    """How the checker reports.

    Attributes:
        enabled: False turns off every finding that is not a memory-safety error.
        warn: categories reported as warnings instead of stopping the launch.
        all_blocks: track races and uninitialised reads on every block (default: the
            first and the last block).
    """

    enabled: bool = True
    warn: frozenset = field(default_factory=frozenset)
    all_blocks: bool = False

    def __post_init__(self):
        bad = set(self.warn) - set(CATEGORIES)
        if bad:
            raise ValueError(f"unknown checker categories {sorted(bad)}; known: {CATEGORIES}")
        object.__setattr__(self, "warn", frozenset(self.warn))


DEFAULT = CheckerConfig()


def report(ctx, exc: KernelError) -> None:
    """Raise ``exc``, or keep it as a warning when its category is configured so."""
    cfg = ctx.checker_config
    if not cfg.enabled:
        return
    if exc.category in cfg.warn:
        ctx.warn(str(exc))
        return
    raise exc


class UbTracker:
    """Per-block shadow state of the UB: initialised bytes and, per 32 B block, the last
    writer and readers with the index of their instruction on their pipe.

    Each access is checked with a few whole-slice numpy operations: the other pipes'
    progress known to the accessing pipe is gathered per 32 B block (a pipe never races
    itself, and a block nothing wrote has no writer), then compared with the block's last
    writer (and, for a write, its last readers).
    """

    def __init__(self, ub_size: int):
        nblk = ub_size // 32
        self.init = np.zeros(ub_size, dtype=bool)
        self.w_pipe = np.full(nblk, -1, dtype=np.int16)
        self.w_idx = np.zeros(nblk, dtype=np.int64)
        self.r_all = np.full((len(_UB_READERS), nblk), -1, dtype=np.int64)
        self.count = np.zeros(_N_PIPES, dtype=np.int64)       # instructions issued per pipe
        self.vc = np.zeros((_N_PIPES, _N_PIPES), dtype=np.int64)  # vc[p][q]: p knows q done
        self.pending: dict = {}                                # flag key -> snapshots
        self.alloc_lines: dict = {}                            # (queue id, buffer) -> line
        # scratch: progress thresholds by writer pipe (last entry: "never written", which
        # w_pipe = -1 indexes) and by reader
        self._thr = np.full(_N_PIPES + 1, _NEVER, dtype=np.int64)
        self._rthr = np.empty((len(_UB_READERS), 1), dtype=np.int64)

    # -- sync edges ------------------------------------------------------------------
    def on_record(self, kind: int, pipe: int, key) -> None:
        if kind == _SET:
            snap = self.vc[pipe].copy()
            snap[pipe] = self.count[pipe]
            self.pending.setdefault(key, []).append(snap)
        elif kind == _WAIT:
            snaps = self.pending.get(key)
            if snaps:
                np.maximum(self.vc[pipe], snaps.pop(0), out=self.vc[pipe])
            if pipe == _S:        # the scalar unit stops issuing: all later work knows it
                np.maximum(self.vc, self.vc[_S], out=self.vc)
        elif kind == _BARRIER:
            if pipe == _PIPE_ALL:
                known = np.maximum(self.vc.max(axis=0), self.count)
                self.vc[:] = known
        else:
            self.count[pipe] += 1
            if pipe == _S:        # scalar work completes before later instructions issue
                self.vc[:, _S] = self.count[_S]

    # -- accesses --------------------------------------------------------------------
    def _race(self, ctx, pipe: int, blocks, offset: int, end: int,
              instruction: str, writing: bool) -> None:
        """``blocks``: the 32 B blocks accessed, as a slice or an index array."""
        known = self.vc[pipe]
        thr = self._thr
        thr[:_N_PIPES] = known
        thr[pipe] = _NEVER
        wp = self.w_pipe[blocks]
        late = self.w_idx[blocks] >= thr[wp]
        if late.any():
            other = Pipe(int(wp[int(late.argmax())])).name
            verb = "overwrites" if writing else "reads"
            report(ctx, SyncError(instruction, f"{Pipe(pipe).name} {verb} UB [{offset}, {end}) "
                                  f"that {other} wrote, with no queue hand-off, flag or barrier "
                                  f"from {other} to {Pipe(pipe).name} in between",
                                  pipe=Pipe(pipe).name))
        if writing:
            rthr = self._rthr
            rthr[:, 0] = known[_UB_READERS_IDX]
            own = _READER_ROW.get(pipe)
            if own is not None:
                rthr[own, 0] = _NEVER
            busy = self.r_all[:, blocks] >= rthr
            if busy.any():
                r = _UB_READERS[int(busy.any(axis=1).argmax())]
                report(ctx, SyncError(instruction, f"{Pipe(pipe).name} overwrites UB [{offset}, "
                                      f"{end}) that {Pipe(r).name} may still be reading: no "
                                      "queue hand-off, flag or barrier in between",
                                      pipe=Pipe(pipe).name))

    def read(self, ctx, pipe: int, offset: int, nbytes: int, instruction: str) -> None:
        if nbytes <= 0:
            return
        end = offset + nbytes
        ok = self.init[offset:end]
        if not ok.all():
            first = offset + int(np.argmin(ok))
            report(ctx, UninitialisedError(
                instruction, f"reads UB [{offset}, {end}) but byte {first} was not written since "
                "it was allocated (it holds the poison pattern 0xFF)", pipe=Pipe(pipe).name))
        blocks = slice(offset // 32, (end + 31) // 32)
        self._race(ctx, pipe, blocks, offset, end, instruction, False)
        row = _READER_ROW.get(pipe)
        if row is not None:
            self.r_all[row, blocks] = self.count[pipe]

    def write(self, ctx, pipe: int, offset: int, nbytes: int, instruction: str,
              init_view: np.ndarray | None = None) -> None:
        if nbytes <= 0:
            return
        end = offset + nbytes
        blocks = slice(offset // 32, (end + 31) // 32)
        self._race(ctx, pipe, blocks, offset, end, instruction, True)
        self.w_pipe[blocks] = pipe
        self.w_idx[blocks] = self.count[pipe]
        if init_view is None:
            self.init[offset:end] = True
        else:
            init_view[...] = True

    def read_at(self, ctx, pipe: int, byte_addr: np.ndarray, instruction: str) -> None:
        """A read of the UB bytes at ``byte_addr`` (a strided or masked vector operand)."""
        ok = self.init[byte_addr]
        lo, hi = int(byte_addr.min()), int(byte_addr.max()) + 1
        if not ok.all():
            first = int(byte_addr[int(np.argmin(ok))])
            report(ctx, UninitialisedError(
                instruction, f"reads UB bytes in [{lo}, {hi}) but byte {first} was not written "
                "since it was allocated (it holds the poison pattern 0xFF)", pipe=Pipe(pipe).name))
        blocks = np.unique(byte_addr // 32)
        self._race(ctx, pipe, blocks, lo, hi, instruction, False)
        row = _READER_ROW.get(pipe)
        if row is not None:
            self.r_all[row, blocks] = self.count[pipe]

    def write_at(self, ctx, pipe: int, byte_addr: np.ndarray, instruction: str) -> None:
        """A write of the UB bytes at ``byte_addr`` (the lanes a mask leaves on)."""
        lo, hi = int(byte_addr.min()), int(byte_addr.max()) + 1
        blocks = np.unique(byte_addr // 32)
        self._race(ctx, pipe, blocks, lo, hi, instruction, True)
        self.w_pipe[blocks] = pipe
        self.w_idx[blocks] = self.count[pipe]
        self.init[byte_addr] = True

    def fresh(self, offset: int, nbytes: int) -> None:
        """AllocTensor: the buffer's contents are undefined again."""
        self.init[offset:offset + nbytes] = False


def gm_write_conflicts(blocks_writes: list) -> str | None:
    """Find GM bytes written (without atomic add) by two different blocks in the same
    SyncAll phase (writes separated by a SyncAll are ordered).

    ``blocks_writes[b]`` lists ``(addr, row_bytes, pitch, rows, phase)`` of block ``b``'s
    plain GM stores. Returns a description of the first conflict, or None.
    """
    by_phase: dict[int, list] = {}
    for b, writes in enumerate(blocks_writes):
        for addr, row, pitch, rows, phase in writes:
            lists = by_phase.get(phase)
            if lists is None:
                lists = by_phase[phase] = [[] for _ in blocks_writes]
            lists[b].append((addr, row, pitch, rows))
    for phase in sorted(by_phase):
        clash = _conflicts(by_phase[phase])
        if clash:
            return clash + (f" (after SyncAll number {phase})" if phase else "")
    return None


def _conflicts(blocks_writes: list) -> str | None:
    # one-row stores (nearly all) go to numpy in one array; strided ones row by row.
    # Ties in the start address keep the order of the stores (block, store, row).
    single, multi = [], []
    seq = 0
    for b, writes in enumerate(blocks_writes):
        for addr, row, pitch, rows in writes:
            if rows == 1:
                single.append((addr, row, b, seq))
            else:
                multi.append((addr, row, pitch, rows, b, seq))
            seq += 1
    if not seq:
        return None
    one = np.array(single, dtype=np.int64).reshape(-1, 4)
    starts, ends, owners = [one[:, 0]], [one[:, 0] + one[:, 1]], [one[:, 2]]
    seqs, row_idx = [one[:, 3]], [np.zeros(len(one), dtype=np.int64)]
    for addr, row, pitch, rows, b, q in multi:
        r = np.arange(rows, dtype=np.int64)
        starts.append(addr + pitch * r)
        ends.append(starts[-1] + row)
        owners.append(np.full(rows, b, dtype=np.int64))
        seqs.append(np.full(rows, q, dtype=np.int64))
        row_idx.append(r)
    s, e, o = np.concatenate(starts), np.concatenate(ends), np.concatenate(owners)
    order = np.lexsort((np.concatenate(row_idx), np.concatenate(seqs), s))
    s, e, o = s[order], e[order], o[order]
    if len(s) < 2:
        return None
    run_max = np.maximum.accumulate(e)
    new_max = np.concatenate([[True], e[1:] >= run_max[:-1]])
    holder = np.maximum.accumulate(np.where(new_max, np.arange(len(e)), 0))
    clash = (s[1:] < run_max[:-1]) & (o[1:] != o[holder[:-1]])
    if not clash.any():
        return None
    i = int(np.flatnonzero(clash)[0]) + 1
    j = int(holder[i - 1])
    lo, hi = int(s[i]), int(min(e[i], run_max[i - 1]))
    return (f"blocks {int(o[j])} and {int(o[i])} both write GM [0x{lo:x}, 0x{hi:x}) without "
            "atomic add (SetAtomicAdd): the result depends on which core writes last")
