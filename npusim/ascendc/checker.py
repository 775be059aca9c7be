"""The kernel checker: catches, at the instruction that makes them, the mistakes that
give an AI-core exception or silently wrong numbers on hardware — in the spirit of Ascend
C's CPU-debug checker and msSanitizer.

Categories (each finding is a :class:`KernelError` of that category naming the core, the
pipe, the instruction and the kernel line):

* ``UB`` — accesses outside the UB (or L1, L0A, L0B, L0C, BT) or a tensor's buffer,
  buffers that do not fit, too many buffers (raised where they happen: :mod:`pipe`,
  :mod:`tensor`).
* ``Alignment`` — UB operands not 32 B aligned; DataCopy lengths that are not whole 32 B
  blocks (the copy is rounded down, as hardware does, and the checker says so);
  DataCopy/DataCopyPad parameters out of range.
* ``GM`` — accesses outside the allocation a GlobalTensor was built on; several blocks
  writing the same GM bytes without atomic add (vector and cube launches; in a mixed launch
  the happens-before check below covers GM).
* ``Uninitialised`` — reading UB that nothing wrote since AllocTensor (or since the launch
  began, for TBuf and static tensors); the same for the cube's memories (L1, L0A, L0B,
  L0C, BT), where a plain copy (LoadData, L1 -> BT) carries the bytes' state along and the
  instruction that computes with them (Mmad, Fixpipe) checks exactly the bytes it uses.
* ``Sync`` — a pipe reading a local memory another pipe wrote, or overwriting bytes another
  pipe reads, with no queue hand-off, flag or barrier in between (e.g. Mmad on PIPE_M
  reading L0A that LoadData wrote on PIPE_MTE1 with no MTE1_M flag), naming the WaitFlag
  when one came before any SetFlag it could pair with; SetFlag twice without WaitFlag; a
  WaitFlag nothing can release (:mod:`npusim.ascendc.sync`); flags unpaired at kernel end; eventIDs out of range; in a mixed launch, two
  cores (an AIC and an AIV, or any two) touching the same GM bytes, one of them writing,
  with no CrossCoreSetFlag/CrossCoreWaitFlag or SyncAll ordering them (:class:`GmOrder`),
  and cross-core sets nobody waits for.
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

from npusim.ascendc.core import BARRIER as _BARRIER, SET as _SET, WAIT as _WAIT, memory_size
from npusim.ascendc.types import Pipe
from npusim.errors import KernelError, SyncError, kernel_source_line

CATEGORIES = ("UB", "Alignment", "GM", "Uninitialised", "Sync", "Leak")
_N_PIPES = max(int(p) for p in Pipe) + 1
_S = int(Pipe.PIPE_S)
_PIPE_ALL = int(Pipe.PIPE_ALL)
_V, _MTE1, _MTE3, _M, _FIX = (int(Pipe.PIPE_V), int(Pipe.PIPE_MTE1), int(Pipe.PIPE_MTE3),
                              int(Pipe.PIPE_M), int(Pipe.PIPE_FIX))
#: The pipes that read each memory (docs/reference/hardware.md §2.1 pipe assignment): a write
#: must not overtake their reads. UB: vector, MTE3 (UB -> GM), scalar; L1: MTE1 (LoadData,
#: L1 -> bias table), MTE3 (L1 -> GM), FIX (quantisation tables); L0A/L0B/BT: the cube;
#: L0C: the cube (accumulation) and Fixpipe; FB: Fixpipe.
_READERS = {"UB": (_V, _MTE3, _S), "L1": (_MTE1, _MTE3, _FIX), "L0A": (_M,), "L0B": (_M,),
            "L0C": (_M, _FIX), "BT": (_M,), "FB": (_FIX,)}
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


def tracks(config: CheckerConfig, block: int, block_dim: int) -> bool:
    """Whether the checker tracks races and uninitialised reads on ``block`` of a launch of
    ``block_dim`` blocks: the first and the last (all with ``all_blocks``), when enabled."""
    return config.enabled and (config.all_blocks or block in (0, block_dim - 1))


def report(ctx, exc: KernelError) -> None:
    """Raise ``exc``, or keep it as a warning when its category is configured so."""
    cfg = ctx.checker_config
    if not cfg.enabled:
        return
    if exc.category in cfg.warn:
        ctx.warn(str(exc))
        return
    raise exc


_count = np.count_nonzero


def _blocks_of(byte_addr: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The distinct 32 B blocks of the bytes at ``byte_addr`` (all in ``[lo, hi)``), sorted:
    ``np.unique(byte_addr // 32)``, by marking the blocks instead of sorting the addresses
    (a fractal operand's tens of thousands of bytes: several times faster)."""
    first = lo >> 5
    mark = np.zeros(((hi - 1) >> 5) - first + 1, dtype=bool)
    mark[(byte_addr >> 5) - first] = True
    return np.flatnonzero(mark) + first


class MemoryShadow:
    """Per-block shadow state of one local memory (UB, L1, L0A, L0B, L0C, BT or FB):
    initialised bytes and, per 32 B block, the last writer and readers with the index of
    their instruction on their pipe.

    Each access is checked with a few whole-slice numpy operations: the other pipes'
    progress known to the accessing pipe is gathered per 32 B block (a pipe never races
    itself, and a block nothing wrote has no writer), then compared with the block's last
    writer (and, for a write, its last readers). The pipes' progress (``clock``) is the
    core's, shared by all its memories.
    """

    def __init__(self, clock: "_Clocks", size: int, mem: str):
        nblk = -(-size // 32)
        readers = _READERS[mem]
        self.clock = clock
        self.mem = mem
        self.init = np.zeros(size, dtype=bool)
        # the writer's pipe indexes the thresholds in every race check: as intp, numpy
        # gathers without converting the indices first (about 1 µs a check)
        self.w_pipe = np.full(nblk, -1, dtype=np.intp)
        self.w_idx = np.zeros(nblk, dtype=np.int64)
        self.readers = readers
        self.r_all = np.full((len(readers), nblk), -1, dtype=np.int64)
        self._readers_idx = np.array(readers)
        self._reader_row = {p: i for i, p in enumerate(readers)}
        # scratch: progress thresholds by writer pipe (last entry: "never written", which
        # w_pipe = -1 indexes) and by reader
        self._thr = np.full(_N_PIPES + 1, _NEVER, dtype=np.int64)
        self._rthr = np.empty((len(readers), 1), dtype=np.int64)

    # -- accesses --------------------------------------------------------------------
    def _race(self, ctx, pipe: int, blocks, offset: int, end: int,
              instruction: str, writing: bool) -> None:
        """``blocks``: the 32 B blocks accessed, as a slice or an index array."""
        known = self.clock.vc[pipe]
        thr = self._thr
        thr[:_N_PIPES] = known
        thr[pipe] = _NEVER
        wp = self.w_pipe[blocks]
        late = self.w_idx[blocks] >= thr[wp]
        if _count(late):                # any(), at a third of its cost (about 0.2 us)
            writer = int(wp[int(late.argmax())])
            other = Pipe(writer).name
            verb = "overwrites" if writing else "reads"
            self.on_race(ctx, pipe, writer, SyncError(
                instruction, f"{Pipe(pipe).name} {verb} {self.mem} [{offset}, {end}) that {other} "
                f"wrote, with no queue hand-off, flag or barrier from {other} to "
                f"{Pipe(pipe).name} in between{self._unset_wait(writer, pipe)}",
                pipe=Pipe(pipe).name))
        if writing:
            rthr = self._rthr
            rthr[:, 0] = known[self._readers_idx]
            own = self._reader_row.get(pipe)
            if own is not None:
                rthr[own, 0] = _NEVER
            busy = self.r_all[:, blocks] >= rthr
            if _count(busy):
                r = self.readers[int(busy.any(axis=1).argmax())]
                self.on_race(ctx, pipe, r, SyncError(
                    instruction, f"{Pipe(pipe).name} overwrites {self.mem} [{offset}, {end}) that "
                    f"{Pipe(r).name} may still be reading: no queue hand-off, flag or barrier in "
                    f"between{self._unset_wait(r, pipe)}", pipe=Pipe(pipe).name))

    def _unset_wait(self, src: int, dst: int) -> str:
        """The race's likely cause when a WaitFlag from ``src`` to ``dst`` came before any
        SetFlag it could pair with (it orders nothing done before that SetFlag), else ""."""
        text = self.clock.unset_waits.get((src, dst))
        return f": the WaitFlag meant to order them does not, as {text}" if text else ""

    def on_race(self, ctx, pipe: int, other: int, exc: SyncError) -> None:
        """``pipe`` accesses bytes ``other`` wrote or reads with no sync in between: a
        finding (a subclass may resolve it instead, as npusim.pyasc's auto-sync does)."""
        report(ctx, exc)

    def _uninitialised(self, ctx, pipe: int, what: str, first: int, instruction: str) -> None:
        report(ctx, UninitialisedError(
            instruction, f"reads {self.mem} {what} but byte {first} was not written since it was "
            "allocated (it holds the poison pattern 0xFF)", pipe=Pipe(pipe).name))

    def read(self, ctx, pipe: int, offset: int, nbytes: int, instruction: str) -> None:
        if nbytes <= 0:
            return
        end = offset + nbytes
        ok = self.init[offset:end]
        if not ok.all():
            self._uninitialised(ctx, pipe, f"[{offset}, {end})", offset + int(np.argmin(ok)),
                                instruction)
        blocks = slice(offset // 32, (end + 31) // 32)
        self._race(ctx, pipe, blocks, offset, end, instruction, False)
        row = self._reader_row.get(pipe)
        if row is not None:
            self.r_all[row, blocks] = self.clock.count[pipe]

    def write(self, ctx, pipe: int, offset: int, nbytes: int, instruction: str,
              init_view: np.ndarray | None = None) -> None:
        if nbytes <= 0:
            return
        end = offset + nbytes
        blocks = slice(offset // 32, (end + 31) // 32)
        self._race(ctx, pipe, blocks, offset, end, instruction, True)
        self.w_pipe[blocks] = pipe
        self.w_idx[blocks] = self.clock.count[pipe]
        if init_view is None:
            self.init[offset:end] = True
        else:
            init_view[...] = True

    def read_at(self, ctx, pipe: int, byte_addr: np.ndarray, instruction: str,
                check_init: bool = True) -> None:
        """A read of the bytes at ``byte_addr`` (a strided or masked vector operand, a
        fractal layout). ``check_init=False``: a plain copy, which moves the bytes' state
        along (:meth:`copy_state`) rather than using their values."""
        lo, hi = int(byte_addr.min()), int(byte_addr.max()) + 1
        if check_init:
            ok = self.init[byte_addr]
            if not ok.all():
                self._uninitialised(ctx, pipe, f"bytes in [{lo}, {hi})",
                                    int(byte_addr.reshape(-1)[int(np.argmin(ok.reshape(-1)))]),
                                    instruction)
        self.read_blocks(ctx, pipe, _blocks_of(byte_addr, lo, hi), lo, hi, instruction)

    def read_elements(self, ctx, pipe: int, offset: int, elem_idx: np.ndarray, isz: int,
                      instruction: str, check_init: bool = True) -> None:
        """:meth:`read_at` of the ``isz``-byte elements at ``elem_idx`` (element offsets
        from byte ``offset``, which is ``isz``-aligned, so no element spans two 32 B
        blocks): the same checks, messages and state, without an address per byte (a
        cube operand's thousands of elements: several times faster)."""
        first, last = int(elem_idx.min()), int(elem_idx.max())
        lo, hi = offset + first * isz, offset + (last + 1) * isz
        if check_init:
            ok = self.init[offset:hi].reshape(-1, isz)[elem_idx]   # element, then byte order
            if not ok.all():
                bad = int(np.argmin(ok.reshape(-1)))
                byte = offset + int(elem_idx.reshape(-1)[bad // isz]) * isz + bad % isz
                self._uninitialised(ctx, pipe, f"bytes in [{lo}, {hi})", byte, instruction)
        self.read_blocks(ctx, pipe, _blocks_of(offset + elem_idx * isz, lo, hi), lo, hi,
                         instruction)

    def read_blocks(self, ctx, pipe: int, blocks: np.ndarray, lo: int, hi: int,
                    instruction: str) -> None:
        """The race check and bookkeeping of a read of the 32 B ``blocks`` (distinct,
        sorted; bytes ``[lo, hi)`` for the message), without an initialised-bytes check:
        :meth:`read_at` once its blocks are known (callers that know them skip the
        per-byte addresses)."""
        self._race(ctx, pipe, blocks, lo, hi, instruction, False)
        row = self._reader_row.get(pipe)
        if row is not None:
            self.r_all[row, blocks] = self.clock.count[pipe]

    def write_at(self, ctx, pipe: int, byte_addr: np.ndarray, instruction: str,
                 init: np.ndarray | bool = True) -> None:
        """A write of the bytes at ``byte_addr`` (the lanes a mask leaves on, a fractal
        layout); ``init`` is the new initialised state (a copy passes its source's)."""
        lo, hi = int(byte_addr.min()), int(byte_addr.max()) + 1
        self.write_blocks(ctx, pipe, _blocks_of(byte_addr, lo, hi), lo, hi, instruction)
        self.init[byte_addr] = init

    def write_blocks(self, ctx, pipe: int, blocks: np.ndarray, lo: int, hi: int,
                     instruction: str) -> None:
        """The race check and bookkeeping of a write to the 32 B ``blocks`` (distinct,
        sorted; bytes ``[lo, hi)`` for the message); the caller sets the bytes'
        initialised state (:meth:`write_at` without the per-byte addresses)."""
        self._race(ctx, pipe, blocks, lo, hi, instruction, True)
        self.w_pipe[blocks] = pipe
        self.w_idx[blocks] = self.clock.count[pipe]

    def fresh(self, offset: int, nbytes: int) -> None:
        """AllocTensor: the buffer's contents are undefined again."""
        self.init[offset:offset + nbytes] = False


def copy_state(ctx, pipe: int, src: MemoryShadow, src_addr: np.ndarray, dst: MemoryShadow,
               dst_addr: np.ndarray, instruction: str) -> None:
    """A copy from ``src`` bytes to ``dst`` bytes on ``pipe``: both sides are checked for
    races; the destination bytes become initialised where the source bytes were (a copy of
    never-written padding is not a use of it — the instruction that computes with the data
    checks)."""
    src.read_at(ctx, pipe, src_addr, instruction, check_init=False)
    dst.write_at(ctx, pipe, dst_addr, instruction, init=src.init[src_addr])


class _Clocks:
    """The pipes' progress on one core, shared by the shadows of all its memories: the
    instructions each pipe issued, and ``vc[p][q]``: how far ``p`` knows ``q`` got."""

    def __init__(self):
        self.count = np.zeros(_N_PIPES, dtype=np.int64)
        self.vc = np.zeros((_N_PIPES, _N_PIPES), dtype=np.int64)
        self.pending: dict = {}                    # flag key -> snapshots of vc
        # (src pipe, dst pipe) -> what is wrong with a WaitFlag of theirs that no SetFlag
        # preceded (sync.unset_wait_text), for the race reports it explains
        self.unset_waits: dict = {}


class UbTracker(MemoryShadow):
    """The checker's state of one block: the UB's shadow, the pipes' clocks and, created on
    first use, the shadows of the core's other memories (:meth:`shadow`)."""

    #: The class of the shadows of the core's other memories.
    shadow_type = MemoryShadow

    def __init__(self, ub_size: int, soc=None):
        super().__init__(_Clocks(), ub_size, "UB")
        self.alloc_lines: dict = {}                # (queue id, buffer) -> line
        self.soc = soc
        self._shadows: dict = {}

    @property
    def count(self) -> np.ndarray:
        return self.clock.count

    @property
    def vc(self) -> np.ndarray:
        return self.clock.vc

    def shadow(self, mem: str) -> MemoryShadow:
        """The shadow of physical memory ``mem`` ("UB": this tracker itself)."""
        if mem == "UB":
            return self
        sh = self._shadows.get(mem)
        if sh is None:
            sh = self._shadows[mem] = self.shadow_type(self.clock, memory_size(self.soc, mem),
                                                       mem)
        return sh

    # -- sync edges ------------------------------------------------------------------
    def note_unset_wait(self, event, text: str) -> None:
        """A WaitFlag of ``event`` that no SetFlag of its event and eventID preceded
        (:func:`npusim.ascendc.sync.WaitFlag`): later races from ``event.src`` to
        ``event.dst`` say so with ``text``."""
        self.clock.unset_waits[(int(event.src), int(event.dst))] = text

    def on_record(self, kind: int, pipe: int, key) -> None:
        clock = self.clock
        vc, count = clock.vc, clock.count
        if kind == _SET:
            snap = vc[pipe].copy()
            snap[pipe] = count[pipe]
            clock.pending.setdefault(key, []).append(snap)
        elif kind == _WAIT:
            snaps = clock.pending.get(key)
            if snaps:
                np.maximum(vc[pipe], snaps.pop(0), out=vc[pipe])
                if clock.unset_waits and isinstance(key, tuple) and key[0] == "flag":
                    # a paired WaitFlag of these pipes: they are ordered again
                    clock.unset_waits.pop((int(key[1].src), pipe), None)
            if pipe == _S:        # the scalar unit stops issuing: all later work knows it
                np.maximum(vc, vc[_S], out=vc)
        elif kind == _BARRIER:
            if pipe == _PIPE_ALL:
                vc[:] = np.maximum(vc.max(axis=0), count)
        else:
            count[pipe] += 1
            if pipe == _S:        # scalar work completes before later instructions issue
                vc[:, _S] = count[_S]


class GmWriteClash(str):
    """The message of an overlap between two blocks' GM writes (a ``str``), with the core
    and kernel line of the later write (``core``, ``line``) for the error's header."""

    core: int = -1
    line: str = "?"


def gm_write_conflicts(blocks_writes: list) -> GmWriteClash | None:
    """Find GM bytes written (without atomic add) by two different blocks in the same
    SyncAll phase (writes separated by a SyncAll are ordered).

    ``blocks_writes[b]`` lists ``(addr, row_bytes, pitch, rows, phase[, line])`` of block
    ``b``'s plain GM stores (``line``: the kernel line of the store, when recorded).
    Returns the description of the first conflict, naming both blocks and both kernel
    lines, and saying so when the blocks' offsets look like element counts used as byte
    offsets (:func:`_elements_as_bytes`); or None.
    """
    by_phase: dict[int, list] = {}
    for b, writes in enumerate(blocks_writes):
        for w in writes:
            addr, row, pitch, rows, phase = w[:5]
            lists = by_phase.get(phase)
            if lists is None:
                lists = by_phase[phase] = [[] for _ in blocks_writes]
            lists[b].append((addr, row, pitch, rows, w[5] if len(w) > 5 else "?"))
    for phase in sorted(by_phase):
        clash = _conflicts(by_phase[phase])
        if clash:
            out = GmWriteClash(clash[0] + (f" (after SyncAll number {phase})" if phase else ""))
            out.core, out.line = clash[1], clash[2]
            return out
    return None


def _elements_as_bytes(blocks_writes: list, b0: int, b1: int) -> str:
    """A hint when blocks ``b0`` < ``b1`` start ``stride`` bytes apart per block but each
    writes 2, 4 or 8 times ``stride`` bytes: the offsets look like element counts of a
    2-, 4- or 8-byte type used as bytes (a GM address moves in bytes); else ""."""
    def extent(b):
        starts = [a for a, _, _, _, _ in blocks_writes[b]]
        ends = [a + (rows - 1) * pitch + row for a, row, pitch, rows, _ in blocks_writes[b]]
        return min(starts), max(ends)
    (s0, e0), (s1, _) = extent(b0), extent(b1)
    if b1 == b0 or (s1 - s0) % (b1 - b0):
        return ""
    stride = (s1 - s0) // (b1 - b0)
    size = e0 - s0
    if stride <= 0 or size % stride or size // stride not in (2, 4, 8):
        return ""
    k = size // stride
    return (f"; the blocks start {stride} B apart but each writes {size} B, {k} times more: "
            f"the GM offsets look like element counts used as bytes (a GM address moves in "
            f"bytes: offset = element index * sizeof(T), here * {k})")


def _conflicts(blocks_writes: list):
    """(message, core, line) of the first overlap between two blocks' stores, or None."""
    # one-row stores (nearly all) go to numpy in one array; strided ones row by row.
    # Ties in the start address keep the order of the stores (block, store, row).
    single, multi, where = [], [], []
    seq = 0
    for b, writes in enumerate(blocks_writes):
        for addr, row, pitch, rows, line in writes:
            if rows == 1:
                single.append((addr, row, b, seq))
            else:
                multi.append((addr, row, pitch, rows, b, seq))
            where.append(line)
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
    q = np.concatenate(seqs)
    order = np.lexsort((np.concatenate(row_idx), q, s))
    s, e, o, q = s[order], e[order], o[order], q[order]
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
    bj, bi = int(o[j]), int(o[i])
    line_j, line_i = where[int(q[j])], where[int(q[i])]
    hint = _elements_as_bytes(blocks_writes, min(bj, bi), max(bj, bi))
    msg = (f"blocks {bj} and {bi} both write GM [0x{lo:x}, 0x{hi:x}) without atomic add "
           f"(SetAtomicAdd): core {bj} at {line_j} and core {bi} at {line_i}; the result "
           f"depends on which core writes last{hint}")
    return msg, bi, line_i


# -- GM accesses across the cores of a mixed launch ---------------------------------------------

_READ, _WRITE, _ATOMIC = 0, 1, 2


class _Accesses:
    """GM accesses of one core that another core does not yet know to be done: per access
    its pipe, its index on that pipe, the bytes [lo, hi) and how (read, write, atomic add),
    with the instruction and kernel line for the report."""

    def __init__(self):
        self.buf = np.zeros((16, 5), dtype=np.int64)     # rows: pipe, index, lo, hi, how
        self.n = 0
        self.where: list = []
        self.rows: list = []         # per access: its GM rows (a store's), or None (extent)

    @property
    def cols(self) -> np.ndarray:
        return self.buf[:self.n]

    def add(self, row: tuple, where: tuple, rows=None) -> None:
        if self.n == len(self.buf):
            self.buf = np.concatenate((self.buf, np.zeros_like(self.buf)))
        self.buf[self.n] = row
        self.n += 1
        self.where.append(where)
        self.rows.append(rows)

    def forget_known(self, known: np.ndarray) -> None:
        """Drop what the observer knows finished: index < its knowledge of that pipe."""
        c = self.cols
        keep = c[:, 1] >= known[c[:, 0]]
        if not keep.all():
            kept = c[keep]
            self.buf[:len(kept)] = kept
            self.n = len(kept)
            self.where = [w for w, k in zip(self.where, keep) if k]
            self.rows = [r for r, k in zip(self.rows, keep) if k]

    def clash(self, lo: int, hi: int, how: int, rows=None) -> int | None:
        """The first access overlapping [lo, hi) that races with an access of kind ``how``:
        not two reads, not two atomic adds. Two stores whose rows are known overlap only
        where their rows do (the column blocks of a matrix interleave without touching)."""
        if not self.n:
            return None
        c = self.cols
        other = c[:, 4]
        racing = (other != _ATOMIC) if how == _ATOMIC else (
            (other != _READ) if how == _READ else np.ones(len(c), dtype=bool))
        hit = racing & (c[:, 2] < hi) & (c[:, 3] > lo)
        for i in np.flatnonzero(hit):
            if rows is None or self.rows[i] is None or _rows_overlap(rows, self.rows[i]):
                return int(i)
        return None


def _row_intervals(rows) -> tuple:
    starts = np.concatenate([addr + np.arange(n, dtype=np.int64) * pitch
                             for addr, _, pitch, n in rows])
    ends = starts + np.concatenate([np.full(n, row, dtype=np.int64) for _, row, _, n in rows])
    return starts, ends


def _rows_overlap(rows_a, rows_b) -> bool:
    """Whether two lists of strided rows ``(addr, row bytes, pitch, rows)`` share a byte."""
    sa, ea = _row_intervals(rows_a)
    sb, eb = _row_intervals(rows_b)
    order = np.argsort(sb, kind="stable")
    sb, reach = sb[order], np.maximum.accumulate(eb[order])
    j = np.searchsorted(sb, ea, side="left") - 1      # the last B row starting before A's end
    ok = j >= 0
    return bool(np.any(reach[j[ok]] > sa[ok]))


class GmOrder:
    """The checker's view of GM across the cores of a mixed launch: which accesses of one
    core another core knows to be finished (happens-before through cross-core flags and
    SyncAll), and the races between the others.

    ``know[d][j][q]``: core ``d`` knows that pipe ``q`` of tracked core ``tracked[j]`` has
    finished its instructions with index < that value. A CrossCoreSetFlag on pipe P carries
    what P knew of its own core (the core's pipe clocks, :class:`UbTracker`: P's own
    instructions and what intra-core flags told it) and all the core had learnt from other
    cores; a CrossCoreWaitFlag (a PIPE_S wait: nothing after it issues earlier) adds that to
    the waiting core. SyncAll drains every pipe first, so it carries everything.

    Every GM DMA of a tracked core (DataCopy, Fixpipe, ...) is compared with the accesses of
    the other tracked cores it does not know to be done: overlapping bytes with one write
    (two atomic adds excepted) is a race, reported in category Sync. Accesses are compared
    by their extent (first to last byte), and two plain stores, whose rows the checker
    knows (``ctx.gm_writes``), by their rows: the column blocks of a matrix that two cores
    store interleave without touching. A strided read whose rows interleave with another
    core's store without touching still counts as overlapping [R: conservative]. Scalar GM accesses
    (GlobalTensor.GetValue/SetValue) are not tracked.

    Args:
        ctxs: every core context of the launch (``ctx.core_index`` indexes it).
        tracked: indices of the cores whose accesses are checked (by default the cores of
            the first and the last block, like the UB race tracking).
    """

    def __init__(self, ctxs, tracked):
        self.ctxs = ctxs
        self.tracked = list(tracked)
        self.col = {c: j for j, c in enumerate(self.tracked)}
        self.know = np.zeros((len(ctxs), len(self.tracked), _N_PIPES), dtype=np.int64)
        self.pending = {(d, c): _Accesses() for d in self.tracked for c in self.tracked if d != c}
        self.marks: dict = {}     # core index -> its GM stores (ctx.gm_writes) seen so far

    def snapshot(self, ctx, pipe: int) -> np.ndarray:
        """What a set on ``pipe`` of ``ctx`` tells its receivers."""
        snap = self.know[ctx.core_index].copy()
        j = self.col.get(ctx.core_index)
        if j is not None and ctx.tracker is not None:
            clock = ctx.tracker.clock
            snap[j] = np.maximum(snap[j], clock.vc[int(pipe)])
            snap[j, int(pipe)] = clock.count[int(pipe)]
        return snap

    def learn(self, ctx, know: np.ndarray) -> None:
        """``ctx`` passed a wait whose sets carried ``know``."""
        np.maximum(self.know[ctx.core_index], know, out=self.know[ctx.core_index])

    def access(self, ctx, kind: int, pipe: int, key, name: str) -> None:
        """A GM DMA of tracked core ``ctx`` (called as it is recorded, before its pipe's
        clock advances)."""
        from npusim.ascendc.core import DMA_IN
        me = ctx.core_index
        addr, span, _ = key
        lo, hi = int(addr), int(addr) + max(int(span), 1)
        how = _READ if kind == DMA_IN else (_WRITE if ctx.atomic_dtype is None else _ATOMIC)
        idx = int(ctx.tracker.clock.count[int(pipe)])
        line = kernel_source_line()
        # a plain store lists its rows in ctx.gm_writes as it is recorded: the entries since
        # the core's last GM DMA are its rows (a scalar SetValue's among them, if any)
        mark, end = self.marks.get(me, 0), len(ctx.gm_writes)
        self.marks[me] = end
        rows = ([w[:4] for w in ctx.gm_writes[mark:end]]
                if how == _WRITE and end > mark else None)
        for other in self.tracked:
            if other == me:
                continue
            seen = self.pending[(me, other)]
            seen.forget_known(self.know[me, self.col[other]])
            i = seen.clash(lo, hi, how, rows)
            if i is not None:
                self._report(ctx, pipe, lo, hi, how, name, line, other, seen, i)
            self.pending[(other, me)].add((int(pipe), idx, lo, hi, how), (name, line), rows)

    def _report(self, ctx, pipe, lo, hi, how, name, line, other, seen, i) -> None:
        verbs = ("reads", "writes", "adds into")
        o_pipe, o_how = int(seen.cols[i, 0]), int(seen.cols[i, 4])
        o_name, o_line = seen.where[i]
        o_lo, o_hi = int(seen.cols[i, 2]), int(seen.cols[i, 3])
        report(ctx, SyncError(name, (
            f"{ctx.name} {verbs[how]} GM [0x{lo:x}, 0x{hi:x}) on {Pipe(pipe).name} while "
            f"{self.ctxs[other].name} {verbs[o_how]} [0x{o_lo:x}, 0x{o_hi:x}) with {o_name} on "
            f"{Pipe(o_pipe).name} at {o_line}, and no CrossCoreSetFlag/CrossCoreWaitFlag or "
            "SyncAll orders the two: the cores run concurrently on hardware"),
            pipe=Pipe(pipe).name, line=line))
