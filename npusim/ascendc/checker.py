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
* ``GM`` — accesses outside the allocation a GlobalTensor was built on; two blocks
  writing the same GM bytes between the same two SyncAlls, not both with atomic add
  (vector and cube launches, every block, at the end of the launch: :func:`check_blocks`;
  in a mixed launch the happens-before check below covers GM).
* ``Uninitialised`` — reading UB that nothing wrote since AllocTensor (or since the launch
  began, for TBuf and static tensors); the same for the cube's memories (L1, L0A, L0B,
  L0C, BT), where a plain copy (LoadData, L1 -> BT) carries the bytes' state along and the
  instruction that computes with them (Mmad, Fixpipe) checks exactly the bytes it uses.
* ``Sync`` — a pipe reading a local memory another pipe wrote, or overwriting bytes another
  pipe reads, with no queue hand-off, flag or barrier in between (e.g. Mmad on PIPE_M
  reading L0A that LoadData wrote on PIPE_MTE1 with no MTE1_M flag), naming the WaitFlag
  when one came before any SetFlag it could pair with; SetFlag twice without WaitFlag; a
  WaitFlag nothing can release (:mod:`npusim.ascendc.sync`); flags unpaired at kernel end;
  eventIDs out of range; a block reading GM bytes another block writes (or adds into)
  between the same two SyncAlls (vector and cube launches, at the read:
  :func:`check_blocks`); in a mixed launch, two cores (an AIC and an AIV, or any two)
  touching the same GM bytes, one of them writing, with no CrossCoreSetFlag/
  CrossCoreWaitFlag or SyncAll ordering them (:class:`GmOrder`), and cross-core sets nobody
  waits for. GM accesses are compared by the bytes they touch, a strided copy's row by row
  (:class:`GmLog`), and each message names both instructions, their pipes and lines.
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

import os
from dataclasses import dataclass, field, replace

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
        cross_block: ``"error"`` (the default) or ``"warn"``: how the end-of-launch
            comparison of a vector or cube launch reports two blocks touching the same GM
            bytes, one writing, between the same two SyncAlls (:func:`check_blocks`; the
            ``GM`` finding of two plain stores, the ``Sync`` finding of a read of another
            block's store). ``"warn"`` keeps them in ``KernelProfile.warnings``: the mode for
            kernels that tile past their block's share on purpose (a whole tile over a
            shorter tail), whose overlapping stores the hardware tolerates because the
            neighbour stores the same values or the overrun lanes are never read. Every
            other finding (within a core, out of an allocation, a mixed launch's cross-core
            ordering) is unchanged. Its default is the environment variable
            ``NPUSIM_CHECKER_CROSS_BLOCK`` (``warn`` or ``error``) when set.
        device_like: False (the default) or True: run as the device runs, with no
            sanitizer (msSanitizer is opt-in in CANN). The findings below, which the
            hardware does not enforce and whose hardware behaviour its documentation gives,
            become warnings, and the simulator then does what the hardware does:

            * ``cross_block`` is "warn" (above);
            * a contiguous ``DataCopy`` whose length is not whole 32 B blocks moves the
              length rounded down (DataCopy's page; docs/reference/hardware.md §3 "Memory
              and alignment") — the simulator's behaviour in both modes; only the finding
              changes;
            * a level-0 vector call whose bit mask has the high word set on a 32-bit type:
              the mask register has 128 bits and for 32-bit operands its low 64 take
              effect (CCE intrinsics, "Mask规则说明", cceapi_0008), so the high word is
              ignored;
            * a level-0 vector call whose lanes run past the end of a LocalTensor's buffer
              but stay inside the core's UB: the vector intrinsics take UB addresses, not
              tensors (CCE intrinsics ``vadd(__ubuf__ T *dst, ...)``), and UB is one flat
              address space, so the lanes read and write the next UB bytes (another
              buffer's, or unallocated ones). Past the UB's end it stays an error;
            * a level-0 vector call (``run_level0``: Add, Copy, Exp...) whose source partly
              overlaps its destination within a repeat, or whose later repeat reads what an
              earlier one wrote: the unit takes a repeat's data blocks out of UB, computes
              and writes the result blocks, repeat after repeat (通用说明和约束.md
              "如何使用高维切分计算API", and its "地址重叠约束" example of iteration N
              overwriting iteration N+1's source), and the simulator runs the call in that
              order; the warning says the lanes that read bytes the call writes may differ
              on the device (the page: "计算结果可能不满足预期");
            * a read of UB bytes nothing wrote since their buffer was allocated: the read
              gets the bytes there (the poison pattern), as the device reads whatever its
              UB holds (AllocTensor: "分配的Tensor内容并非全0,可能会是随机值").

            Every other finding is unchanged (an access outside a GM allocation, a pipe
            race, a mask bit beyond a 64-bit type's 32 lanes, the overlap findings of
            Compare's bit results and of Transpose...): what the device does there is not
            documented. Its default is the environment
            variable ``NPUSIM_CHECKER_DEVICE_LIKE`` (``1`` or ``0``) when set.
    """

    enabled: bool = True
    warn: frozenset = field(default_factory=frozenset)
    all_blocks: bool = False
    cross_block: str = field(default_factory=lambda: _env_cross_block())
    device_like: bool = field(default_factory=lambda: _env_device_like())

    def __post_init__(self):
        bad = set(self.warn) - set(CATEGORIES)
        if bad:
            raise ValueError(f"unknown checker categories {sorted(bad)}; known: {CATEGORIES}")
        if self.cross_block not in CROSS_BLOCK_MODES:
            raise ValueError(f"cross_block must be one of {CROSS_BLOCK_MODES}, "
                             f"not {self.cross_block!r}")
        object.__setattr__(self, "warn", frozenset(self.warn))


#: How :class:`CheckerConfig` ``cross_block`` reports blocks overlapping in GM.
CROSS_BLOCK_MODES = ("error", "warn")
CROSS_BLOCK_ENV = "NPUSIM_CHECKER_CROSS_BLOCK"


def _env_cross_block() -> str:
    """``cross_block``'s default: ``$NPUSIM_CHECKER_CROSS_BLOCK``, else "error". A value
    that is not a mode is refused when the config is built, naming the variable."""
    value = os.environ.get(CROSS_BLOCK_ENV, "").strip().lower()
    if not value:
        return "error"
    if value not in CROSS_BLOCK_MODES:
        raise ValueError(f"{CROSS_BLOCK_ENV}={value!r}: expected one of {CROSS_BLOCK_MODES}")
    return value


DEVICE_LIKE_ENV = "NPUSIM_CHECKER_DEVICE_LIKE"


def _env_device_like() -> bool:
    """``device_like``'s default: ``$NPUSIM_CHECKER_DEVICE_LIKE`` (``1``/``0``, also
    ``true``/``false``), else False; another value is refused, naming the variable."""
    value = os.environ.get(DEVICE_LIKE_ENV, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{DEVICE_LIKE_ENV}={value!r}: expected 1 or 0")


#: Every finding an error (the environment variables do not change it: see default()).
DEFAULT = CheckerConfig(cross_block="error", device_like=False)


def default() -> CheckerConfig:
    """The configuration of a launch given none: :data:`DEFAULT`, with ``cross_block`` from
    ``$NPUSIM_CHECKER_CROSS_BLOCK`` and ``device_like`` from ``$NPUSIM_CHECKER_DEVICE_LIKE``
    as they are at the launch."""
    mode, device = _env_cross_block(), _env_device_like()
    if mode == DEFAULT.cross_block and device == DEFAULT.device_like:
        return DEFAULT
    return replace(DEFAULT, cross_block=mode, device_like=device)


def tolerated(ctx, exc: KernelError, reported: bool = False) -> None:
    """A finding the hardware does not enforce (see ``CheckerConfig.device_like``): kept as
    a warning in device-like mode (the caller then does what the hardware does); otherwise
    raised, or given to :func:`report` when ``reported`` (a finding the config may keep as
    a warning in any mode)."""
    if ctx.checker_config.device_like:
        msg = f"{exc} [device-like: tolerated, as the hardware does]"
        if not ctx.warnings or not ctx.warnings[-1].endswith(msg):   # once per instruction
            ctx.warn(msg)
        return
    if reported:
        report(ctx, exc)
        return
    raise exc


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
        # (pipe, first block, end block) of the last access when it was a write that found
        # no race, else None: the same write again, with no access in between, finds none
        # either (its blocks' writer is its own pipe, their readers unchanged, and what the
        # pipe knows of the others only grows), so :meth:`write` skips the check (a loop of
        # copies into one buffer, as a DataCopy study's 49,152 per block)
        self._clean = None

    # -- accesses --------------------------------------------------------------------
    def _race(self, ctx, pipe: int, blocks, offset: int, end: int,
              instruction: str, writing: bool) -> None:
        """``blocks``: the 32 B blocks accessed, as a slice or an index array. True when
        it found a race (reported, kept as a warning or resolved by :meth:`on_race`)."""
        found = False
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
            found = True
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
                found = True
                self.on_race(ctx, pipe, r, SyncError(
                    instruction, f"{Pipe(pipe).name} overwrites {self.mem} [{offset}, {end}) that "
                    f"{Pipe(r).name} may still be reading: no queue hand-off, flag or barrier in "
                    f"between{self._unset_wait(r, pipe)}", pipe=Pipe(pipe).name))
        return found

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
        rule = (f"reads {self.mem} {what} but byte {first} was not written since it was "
                "allocated (it holds the poison pattern 0xFF)")
        if self.mem != "UB":
            report(ctx, UninitialisedError(instruction, rule, pipe=Pipe(pipe).name))
            return
        if ctx.checker_config.device_like:
            rule += ("; on the device such bytes hold whatever was there (AllocTensor: "
                     "\"分配的Tensor内容并非全0,可能会是随机值\"): the read gets the poison bytes")
        tolerated(ctx, UninitialisedError(instruction, rule, pipe=Pipe(pipe).name), reported=True)

    def read(self, ctx, pipe: int, offset: int, nbytes: int, instruction: str) -> None:
        if nbytes <= 0:
            return
        end = offset + nbytes
        ok = self.init[offset:end]
        if not ok.all():
            self._uninitialised(ctx, pipe, f"[{offset}, {end})", offset + int(np.argmin(ok)),
                                instruction)
        blocks = slice(offset // 32, (end + 31) // 32)
        self._clean = None
        self._race(ctx, pipe, blocks, offset, end, instruction, False)
        row = self._reader_row.get(pipe)
        if row is not None:
            self.r_all[row, blocks] = self.clock.count[pipe]

    def write(self, ctx, pipe: int, offset: int, nbytes: int, instruction: str,
              init_view: np.ndarray | None = None) -> None:
        if nbytes <= 0:
            return
        end = offset + nbytes
        first, last = offset // 32, (end + 31) // 32
        blocks = slice(first, last)
        if self._clean != (pipe, first, last):
            self._clean = None
            found = self._race(ctx, pipe, blocks, offset, end, instruction, True)
            self.w_pipe[blocks] = pipe
            self._clean = None if found else (pipe, first, last)
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
        self._clean = None
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
        self._clean = None
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


# -- GM accesses across the cores of a launch --------------------------------------------------

_READ, _WRITE, _ATOMIC = 0, 1, 2
_VERBS = ("reads", "writes", "adds into")


class GmLog:
    """The GM accesses of one core, as the checks across cores compare them.

    An access is ``(how, rows, phase, line, instruction, pipe)``: ``how`` a read, a write or
    an atomic add (a store under SetAtomicAdd); ``rows`` the bytes it touches, as runs
    ``(address, row bytes, pitch, count)`` (a strided copy's rows, a Fixpipe tile's rows,
    the one extent of a contiguous copy); ``phase`` the core's SyncAll count; the kernel
    line, and the instruction and pipe (an int) that made it.

    The cores of a launch run block after block (or as SyncAll coroutines) keep their
    entries, and the launch compares them at its end (:func:`check_blocks`); a tracked core
    of a mixed launch hands each access to :class:`GmOrder` as it is made, and keeps nothing
    (``keep`` False). A launch whose blocks ran in lockstep groups logs nothing here: the
    lockstep engine's own log shows that no block touched bytes another block wrote, or the
    launch runs again block after block (:mod:`npusim.lockstep`).
    """

    __slots__ = ("entries", "flat", "keep")

    def __init__(self, keep: bool = True):
        self.entries: list = []
        # per row run, 7 ints: address, row bytes, pitch, count, how, phase, entry index
        # (what the comparison reads, ready for one numpy conversion)
        self.flat: list = []
        self.keep = keep

    def add(self, how: int, rows: tuple, phase: int, line: str, name: str, pipe: int) -> None:
        """Keep an access (the entry's fields, in their order)."""
        k = len(self.entries)
        self.entries.append((how, rows, phase, line, name, pipe))
        flat = self.flat
        for addr, row, pitch, count in rows:
            flat += (addr, row, pitch, count, how, phase, k)

    def note(self, ctx, how: int, base: int, runs, name: str, pipe, line: str | None = None,
             issued: bool = False) -> None:
        """An access of ``ctx``: ``runs`` of (offset from ``base``, row bytes, pitch, count).
        ``issued``: its instruction is already recorded on its pipe (a scalar access)."""
        base = int(base)
        if len(runs) == 1:                       # nearly every access: one run
            off, row, pitch, count = runs[0]
            rows = ((base + off, row, pitch, count),)
        else:
            rows = tuple((base + off, row, pitch, count) for off, row, pitch, count in runs)
        if line is None:
            line = kernel_source_line()
        if self.keep:
            self.add(how, rows, ctx.sync_all_count, line, name, int(pipe))
        order = ctx.gm_order
        if order is not None:
            order.access(ctx, how, rows, name, int(pipe), line, issued)

    def append(self, store: tuple) -> None:
        """A scalar store as ``GlobalTensor.SetValue`` reports it (``ctx.gm_writes.append``,
        :mod:`npusim.ascendc.tensor`): ``(address, bytes, 0, 1, SyncAll phase, line)``,
        after its PIPE_S record."""
        from npusim.ascendc.core import current_core
        addr, nbytes, _, _, _, line = store
        self.note(current_core(), _WRITE, addr, ((0, nbytes, nbytes, 1),), "SetValue",
                  Pipe.PIPE_S, line, issued=True)


def note_gm(ctx, write: bool, base: int, runs, name: str, pipe) -> None:
    """Tell the checker's GM log of ``ctx`` (if it keeps one) about a GM DMA of ``name`` on
    ``pipe``, before its record: ``runs`` of (offset from ``base``, row bytes, pitch,
    count); a write under SetAtomicAdd is an atomic add."""
    log = ctx.gm_access
    if log is not None:
        how = (_WRITE if ctx.atomic_dtype is None else _ATOMIC) if write else _READ
        log.note(ctx, how, base, runs, name, pipe)


def check_blocks(ctxs, config: CheckerConfig) -> None:
    """The end-of-launch check of a launch whose blocks ran one after another (or as SyncAll
    coroutines): the first race between two blocks' GM accesses (:func:`blocks_conflict`)
    is raised, or kept as a warning of the core it names when its category is configured
    so or ``config.cross_block`` is "warn"."""
    found = blocks_conflict([c.gm_access if c.gm_access is not None else GmLog()
                             for c in ctxs])
    if found is None:
        return
    err, b = found
    if err.category in config.warn or config.cross_block == "warn" or config.device_like:
        ctxs[b].warn(str(err))
    else:
        raise err


def _runs(logs: list):
    """The accesses of the :class:`GmLog` ``logs`` (one per block) as one interval per row:
    (lo, hi, block, how, phase, access) arrays (rows of no byte left out), with
    ``where[access]`` = (block, entry index)."""
    parts, where = [], []
    for b, log in enumerate(logs):
        if not log.flat:
            continue
        arr = np.fromiter(log.flat, dtype=np.int64, count=len(log.flat)).reshape(-1, 7)
        arr[:, 6] += len(where)
        where.extend((b, k) for k in range(len(log.entries)))
        parts.append(np.concatenate((arr, np.full((len(arr), 1), b, dtype=np.int64)), axis=1))
    if not parts:
        return None, where
    arr = np.concatenate(parts)
    arr = arr[(arr[:, 1] > 0) & (arr[:, 3] > 0)]
    addr, row, pitch, count, how, phase, acc, block = arr.T
    first = np.cumsum(count) - count
    run = np.repeat(np.arange(len(count)), count)
    lo = addr[run] + (np.arange(int(count.sum())) - first[run]) * pitch[run]
    return (lo, lo + row[run], block[run], how[run], phase[run], acc[run]), where


def merged_by_owner(lo: np.ndarray, hi: np.ndarray, owner: np.ndarray, width: int):
    """Per owner, the union of its intervals [lo, hi) (all in [0, width)): (lo, hi, owner)
    arrays of disjoint intervals, sorted by owner then address."""
    if not len(lo):
        return lo, hi, owner
    order = np.lexsort((lo, owner))
    lo, hi, owner = lo[order], hi[order], owner[order]
    shift = owner * width                      # owners never share a merged interval
    slo, shi = lo + shift, hi + shift
    reach = np.maximum.accumulate(shi)
    start = np.concatenate(([True], slo[1:] > reach[:-1]))
    idx = np.flatnonzero(start)
    ends = np.maximum.reduceat(shi, idx) - shift[idx]
    return lo[idx], ends, owner[idx]


def _first_race(lo, hi, owner, how) -> int | None:
    """The lowest byte that two owners touch, one of them writing it, and not both adding
    into it atomically; or None. A byte's owners are counted from each owner's union of
    intervals per kind (all, plain writes, atomic adds, reads): it races when two or more
    touch it and one writes it plainly, or one adds into it and one reads it (two owners at
    least; the adder and the reader are then different owners or a third touches it)."""
    base = int(lo.min())
    lo, hi = lo - base, hi - base
    width = int(hi.max()) + 1          # GM spans below 2^40 B, blocks below 2^16: no overflow
    kinds = [merged_by_owner(lo, hi, owner, width)]
    for k in (_WRITE, _ATOMIC, _READ):
        m = how == k
        kinds.append(merged_by_owner(lo[m], hi[m], owner[m], width))
    pts = np.unique(np.concatenate([x for l, h, _ in kinds for x in (l, h)]))
    n = len(pts)

    def cover(lo_, hi_):     # owners covering each segment [pts[s], pts[s + 1])
        d = (np.bincount(np.searchsorted(pts, lo_), minlength=n)
             - np.bincount(np.searchsorted(pts, hi_), minlength=n))
        return np.cumsum(d)[:-1]

    n_all, n_write, n_atomic, n_read = (cover(l, h) for l, h, _ in kinds)
    race = (n_all >= 2) & ((n_write > 0) | ((n_atomic > 0) & (n_read > 0)))
    if not np.count_nonzero(race):
        return None
    return int(pts[int(race.argmax())]) + base


def blocks_conflict(logs: list):
    """The first race between the blocks of a launch, or None.

    ``logs[b]``: block ``b``'s :class:`GmLog`. Two accesses race when they belong to
    different blocks, share a byte (row by row: the rows of column tiles of one matrix
    interleave without sharing one) in the same SyncAll phase (a SyncAll between them
    orders them), and one writes it, unless both are atomic adds. The race at the lowest
    address (in the lowest phase) is reported: two writes as a ``GM`` finding at the
    higher block's store (naming both blocks, instructions and lines, and saying so when the
    offsets look like element counts used as bytes); else a read of bytes another block
    writes as a ``Sync`` finding at the read. Returns (:class:`KernelError`, the block it
    is reported at)."""
    runs, where = _runs(logs)
    if runs is None:
        return None
    lo, hi, block, how, phase, acc = runs
    if not np.count_nonzero(how != _READ):
        return None
    for p in np.unique(phase):
        sel = np.flatnonzero(phase == p)
        x = _first_race(lo[sel], hi[sel], block[sel], how[sel])
        if x is not None:
            at = sel[(lo[sel] <= x) & (hi[sel] > x)]      # the rows holding that byte
            order = np.lexsort((acc[at], block[at]))
            at = at[order]
            return _describe(logs, where, int(p), lo[at], hi[at], block[at], how[at], acc[at])
    return None


def _pair(block, how, writers_only: bool):
    """The first (j, i) positions of two racing accesses among those holding one byte, in
    block order; with ``writers_only`` both write (plain or atomic, not both atomic)."""
    for j in range(len(block)):
        if writers_only and how[j] == _READ:
            continue
        ok = (block != block[j]) & ~((how == _ATOMIC) & (how[j] == _ATOMIC))
        ok &= (how != _READ) if (writers_only or how[j] == _READ) else True
        if np.count_nonzero(ok):
            return j, int(ok.argmax())
    return None


def _describe(logs, where, phase, lo, hi, block, how, acc):
    from npusim.errors import GmAccessError

    def entry(i):
        b, k = where[int(acc[i])]
        _, _, _, line, name, pipe = logs[b].entries[k]
        return int(block[i]), line, name, Pipe(pipe).name

    after = f" (after SyncAll number {phase})" if phase else ""
    pair = _pair(block, how, True)
    if pair is not None:
        j, i = sorted(pair, key=lambda q: (int(block[q]), q))
        a, b = max(int(lo[i]), int(lo[j])), min(int(hi[i]), int(hi[j]))
        (bj, line_j, name_j, pipe_j), (bi, line_i, name_i, pipe_i) = entry(j), entry(i)
        add_j = " (atomic add)" if how[j] == _ATOMIC else ""
        add_i = " (atomic add)" if how[i] == _ATOMIC else ""
        both = " on both" if add_i or add_j else ""
        hint = _elements_as_bytes(logs, phase, bj, bi)
        return GmAccessError(name_i, (
            f"blocks {bj} and {bi} both write GM [0x{a:x}, 0x{b:x}) without atomic add "
            f"(SetAtomicAdd){both}: core {bj} with {name_j}{add_j} on {pipe_j} at {line_j} "
            f"and core {bi} with {name_i}{add_i} on {pipe_i} at {line_i}; the result depends "
            f"on which core writes last{hint}{after}"), pipe=pipe_i, core=bi, line=line_i), bi
    r, w = _pair(block, how, False)
    if how[r] != _READ:
        r, w = w, r
    a, b = max(int(lo[r]), int(lo[w])), min(int(hi[r]), int(hi[w]))
    (br, line_r, name_r, pipe_r), (bw, line_w, name_w, pipe_w) = entry(r), entry(w)
    return SyncError(name_r, (
        f"core {br} reads GM [0x{a:x}, 0x{b:x}) that core {bw} {_VERBS[int(how[w])]} with "
        f"{name_w} on {pipe_w} at {line_w}, and no SyncAll between the two orders them: the "
        "blocks run concurrently on hardware, so the read may see the bytes from before or "
        f"after the write{after}"), pipe=pipe_r, core=br, line=line_r), br


def _elements_as_bytes(logs: list, phase: int, b0: int, b1: int) -> str:
    """A hint when blocks ``b0`` < ``b1`` start ``stride`` bytes apart per block but each
    writes 2, 4 or 8 times ``stride`` bytes (their plain stores of SyncAll phase ``phase``):
    the offsets look like element counts of a 2-, 4- or 8-byte type used as bytes (a GM
    address moves in bytes); else ""."""
    def extent(b):
        rows = [r for how, rows_, p, *_ in logs[b].entries if how == _WRITE and p == phase
                for r in rows_]
        if not rows:
            return None
        return (min(a for a, _, _, _ in rows),
                max(a + (n - 1) * pitch + row for a, row, pitch, n in rows))
    e0, e1 = extent(b0), extent(b1)
    if e0 is None or e1 is None:
        return ""
    (s0, end0), (s1, _) = e0, e1
    if b1 == b0 or (s1 - s0) % (b1 - b0):
        return ""
    stride = (s1 - s0) // (b1 - b0)
    size = end0 - s0
    if stride <= 0 or size % stride or size // stride not in (2, 4, 8):
        return ""
    k = size // stride
    return (f"; the blocks start {stride} B apart but each writes {size} B, {k} times more: "
            f"the GM offsets look like element counts used as bytes (a GM address moves in "
            f"bytes: offset = element index * sizeof(T), here * {k})")


# -- GM accesses across the cores of a mixed launch ---------------------------------------------

class _Accesses:
    """GM accesses of one core that another core does not yet know to be done: per access
    its pipe, its index on that pipe, its extent [lo, hi) and how (read, write, atomic add),
    with its rows, and the instruction and kernel line for the report."""

    def __init__(self):
        self.buf = np.zeros((16, 5), dtype=np.int64)     # rows: pipe, index, lo, hi, how
        self.n = 0
        self.where: list = []
        self.rows: list = []

    @property
    def cols(self) -> np.ndarray:
        return self.buf[:self.n]

    def add(self, row: tuple, where: tuple, rows: tuple) -> None:
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

    def clash(self, lo: int, hi: int, how: int, rows: tuple) -> int | None:
        """The first access sharing a byte with ``rows`` (extent [lo, hi)) that races with an
        access of kind ``how``: not two reads, not two atomic adds. Extents that overlap
        are compared row by row (the column tiles of a matrix interleave without
        touching)."""
        if not self.n:
            return None
        c = self.cols
        other = c[:, 4]
        racing = (other != _ATOMIC) if how == _ATOMIC else (
            (other != _READ) if how == _READ else np.ones(len(c), dtype=bool))
        hit = racing & (c[:, 2] < hi) & (c[:, 3] > lo)
        for i in np.flatnonzero(hit):
            if _rows_overlap(rows, self.rows[i]):
                return int(i)
        return None


def _extent(rows) -> tuple[int, int]:
    """[first, last + 1) of the bytes of the runs ``rows`` that touch any."""
    some = [r for r in rows if r[1] > 0 and r[3] > 0]
    if not some:
        return 0, 0
    return (min(a for a, _, _, _ in some),
            max(a + (n - 1) * pitch + row for a, row, pitch, n in some))


def _row_intervals(rows) -> tuple:
    starts = np.concatenate([addr + np.arange(n, dtype=np.int64) * pitch
                             for addr, _, pitch, n in rows])
    ends = starts + np.concatenate([np.full(n, row, dtype=np.int64) for _, row, _, n in rows])
    return starts, ends


def _rows_overlap(rows_a, rows_b) -> bool:
    """Whether two lists of strided rows ``(addr, row bytes, pitch, rows)`` share a byte
    (their extents are known to overlap: two single rows then do)."""
    if len(rows_a) == 1 and len(rows_b) == 1 and rows_a[0][3] == 1 and rows_b[0][3] == 1:
        return True
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

    Every GM access of a tracked core (DataCopy, DataCopyPad, Fixpipe, the cube's GM reads,
    SetValue: :class:`GmLog`) is compared with the accesses of the other tracked cores it
    does not know to be done: a shared byte with one write (two atomic adds excepted) is a
    race, reported in category Sync at the later access, naming both instructions. Accesses
    are compared by the bytes they touch, row by row: the column tiles of a matrix that
    different cores store and read interleave without a finding. Scalar reads
    (GlobalTensor.GetValue) are not compared.

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

    def access(self, ctx, how: int, rows: tuple, name: str, pipe: int, line: str,
               issued: bool = False) -> None:
        """A GM access of tracked core ``ctx`` touching ``rows`` (:class:`GmLog`), made
        before its record advances its pipe's clock (``issued``: after)."""
        lo, hi = _extent(rows)
        if hi <= lo:
            return
        me = ctx.core_index
        idx = int(ctx.tracker.clock.count[pipe]) - (1 if issued else 0)
        for other in self.tracked:
            if other == me:
                continue
            seen = self.pending[(me, other)]
            seen.forget_known(self.know[me, self.col[other]])
            i = seen.clash(lo, hi, how, rows)
            if i is not None:
                self._report(ctx, pipe, lo, hi, how, name, line, other, seen, i)
            self.pending[(other, me)].add((pipe, idx, lo, hi, how), (name, line), rows)

    def _report(self, ctx, pipe, lo, hi, how, name, line, other, seen, i) -> None:
        o_pipe, o_how = int(seen.cols[i, 0]), int(seen.cols[i, 4])
        o_name, o_line = seen.where[i]
        o_lo, o_hi = int(seen.cols[i, 2]), int(seen.cols[i, 3])
        report(ctx, SyncError(name, (
            f"{ctx.name} {_VERBS[how]} GM [0x{lo:x}, 0x{hi:x}) on {Pipe(pipe).name} while "
            f"{self.ctxs[other].name} {_VERBS[o_how]} [0x{o_lo:x}, 0x{o_hi:x}) with {o_name} on "
            f"{Pipe(o_pipe).name} at {o_line}, and no CrossCoreSetFlag/CrossCoreWaitFlag or "
            "SyncAll orders the two: the cores run concurrently on hardware"),
            pipe=Pipe(pipe).name, line=line))
