"""The AI core that runs one block of a kernel: its unified buffer and its record of
issued instructions.

Kernels run functionally, one block after another, on numpy; each block runs on a
:class:`CoreContext` that owns a UB of the SoC's size. Every Ascend C call appends one
compact record (a tuple) to the context; the timing model (:mod:`npusim.timing`)
replays those records afterwards. A record is
``(kind, pipe, cycles, nbytes, key, name)``:

* kind: one of OP (busy the pipe for ``cycles``), DMA_IN / DMA_OUT (a GM read / write of
  ``nbytes`` on MTE2 / MTE3, or FIX for Fixpipe to GM), SET / WAIT (flag ``key`` on
  ``pipe``), BARRIER (PipeBarrier).
* name: the Ascend C instruction, for profiles and traces.

A core is of one kind (docs/reference/hardware.md §1, §3): on the split A2/A3 an AIV (vector
core: the UB) or an AIC (cube core: L1, L0A, L0B, L0C, bias table, Fixpipe buffer); on the
coupled 910A/310P one AI core with the UB and the cube buffers. Memories other than the
UB are allocated the first time a block uses them, so a vector-only launch pays nothing.

In a mixed launch (KERNEL_TYPE_MIX_AIC_1_2, ...) every AIC and every AIV of a block is a
core of its own, with its own context, memories and scalar unit; the launch runs them as
coroutines that wait for each other at cross-core flags and SyncAll
(:meth:`CoreContext.wait_until`, :mod:`npusim.ascendc.crosscore`).
"""
from __future__ import annotations

import numpy as np

from npusim.ascendc.types import PIPE_ALL, PIPE_S, TPosition
from npusim.errors import KernelError, kernel_source_line

OP, DMA_IN, DMA_OUT, SET, WAIT, BARRIER = range(6)

#: The mask register after ResetMask: every lane on, as (low word, high word).
FULL_MASK = ((1 << 64) - 1, (1 << 64) - 1)

#: Byte written over fresh UB before each block, so reads of never-written UB look
#: wrong (0xFF bytes are NaN in every float format).
UB_POISON = 0xFF

_current: "CoreContext | None" = None

# -- physical memories and core kinds (docs/reference/hardware.md §1, §3) ----------------------
UB, L1, L0A, L0B, L0C, BT, FB, GM = "UB", "L1", "L0A", "L0B", "L0C", "BT", "FB", "GM"
AIV, AIC, AICORE = "AIV", "AIC", "AICore"

#: Memories each kind of core has. The coupled AI core has no bias table or Fixpipe buffer
#: (no bt_size / fb*_size in the 910A and 310P inis, §1.3-§1.4).
CORE_MEMORIES = {AIV: frozenset({UB}), AIC: frozenset({L1, L0A, L0B, L0C, BT, FB}),
                 AICORE: frozenset({UB, L1, L0A, L0B, L0C})}

#: The memories of the cube half (DataCopy hands copies touching them to the cube module).
CUBE_MEMORIES = frozenset({L1, L0A, L0B, L0C, BT, FB})

#: Start-address alignment of each memory, bytes (通用说明和约束.md table 2, §3).
MEMORY_ALIGN = {UB: 32, L1: 32, L0A: 512, L0B: 512, L0C: 64, BT: 64, FB: 64}

_UB_POSITIONS = frozenset({TPosition.VECIN, TPosition.VECOUT, TPosition.VECCALC})


def memory_size(soc, mem: str) -> int:
    """Bytes of physical memory ``mem`` on one core of ``soc`` (the ini sizes, §1.6)."""
    return {UB: soc.ub_size, L1: soc.l1_size, L0A: soc.l0_a_size, L0B: soc.l0_b_size,
            L0C: soc.l0_c_size, BT: soc.bt_size, FB: soc.fb0_size}[mem]


def position_memory(soc, position) -> str:
    """The physical memory behind a TPosition on ``soc`` (通用说明和约束.md table 1):
    VECIN/VECOUT/VECCALC -> UB; A1/B1/TSCM -> L1; A2 -> L0A; B2 -> L0B; CO1 -> L0C; on A2/A3
    C1 -> L1, C2 -> bias table, CO2 -> GM, C2PIPE2GM -> Fixpipe buffer; on the coupled
    910A/310P C1 -> UB, C2 -> L0C, CO2 -> UB."""
    if position in _UB_POSITIONS:
        return UB
    P = TPosition
    split = soc.is_split
    table = {P.A1: L1, P.B1: L1, P.TSCM: L1, P.A2: L0A, P.B2: L0B, P.CO1: L0C, P.GM: GM,
             P.C1: L1 if split else UB, P.C2: BT if split else L0C,
             P.CO2: GM if split else UB, P.C2PIPE2GM: FB}
    return table[TPosition(position)]


class CoreContext:
    """State of one block while it runs.

    Args:
        soc: the :class:`npusim.soc.SocSpec` of the device.
        gm: the device's :class:`npusim.gm.GlobalMemory`.
        ub: a uint8 array of ``soc.ub_size`` bytes (reused between blocks).
        block_idx, block_num: what GetBlockIdx/GetBlockNum return.
        ub_capacity: bytes TPipe may hand out (``soc.ub_usable``, less the 8 KiB Ascend C
            reserve unless the kernel is built without it; docs/reference/hardware.md §1.7).
        core_kind: AIV, AIC or AICORE (default: AIV on split SoCs, AICORE on coupled ones).
        mem_pool: memory name -> uint8 array that blocks run one after another may reuse
            for their L1/L0 buffers (None: each block allocates its own).
    """

    #: A group of blocks run in lockstep (:class:`npusim.lockstep.GroupContext`) or one block.
    is_group = False
    #: In a group: a batch-aware instruction runs, so LocalTensor views may be ``[G, n]``.
    batch_ok = False
    #: In a lockstep launch: the GM accesses of this block (address, bytes, is a store) and
    #: the launch's undo log of the bytes GM stores overwrote (:mod:`npusim.lockstep`).
    gm_log = None
    undo = None
    #: The checker's log of this core's GM accesses (:class:`npusim.ascendc.checker.GmLog`),
    #: or None: GM instructions report to it through ``checker.note_gm``.
    gm_access = None
    #: TQue objects given buffers so far (their flags' names, npusim.ascendc.pipe)
    queues_made = 0

    def __init__(self, soc, gm, ub: np.ndarray, block_idx: int, block_num: int,
                 ub_capacity: int, core_kind: str | None = None, mem_pool: dict | None = None):
        self.soc = soc
        self.core_kind = core_kind or (AIV if soc.is_split else AICORE)
        self.mem_pool = mem_pool
        self.mems: dict = {}          # this block's non-UB memories, allocated on first use
        self.gm = gm
        self.ub = ub
        self.block_idx = block_idx
        self.block_num = block_num
        self.ub_capacity = ub_capacity
        self.records: list[tuple] = []
        self.bytes_read = 0
        self.bytes_written = 0
        self.pipe = None          # the TPipe of this block, once constructed
        self.warnings: list[str] = []
        self.atomic_dtype = None  # SetAtomicAdd<T>: UB -> GM copies accumulate as T
        self.sync_all_count = 0   # SyncAll calls so far
        # set when the launch runs its cores as coroutines (SyncAll, mixed launches):
        # ``scheduler_wait(ready, what)`` parks this core until ``ready()`` holds
        self.scheduler_wait = None
        self.sync_all_barrier = None  # the launch's SyncAllBarrier (sync_all=True)
        # mixed launches (npusim.ascendc.crosscore): the sub-block index, the AICs or AIVs
        # per block, the launch's cross-core state and this core's index in it
        self.sub_block_idx = 0
        self.task_ratio = 1
        self.mix = None
        self.core_index = block_idx
        self.gm_order = None          # checker: GM accesses ordered across cores (mixed)
        self.sys_workspace = None     # SetSysWorkspace
        self.trace_lines: list[str] | None = None   # kernel source line per record, if traced
        # the kernel checker (npusim.ascendc.checker)
        self.checker_config = None
        self.tracker = None          # UbTracker on the blocks whose races are tracked
        self.flag_balance: dict = {}  # user flag key -> SetFlag count - WaitFlag count
        self.flag_lines: dict = {}    # user flag key -> line of its last SetFlag
        self.flag_sets: dict = {}     # HardEvent -> eventIDs its SetFlags used so far
        # where GlobalTensor.SetValue reports its store (the GmLog, when the launch keeps one)
        self.gm_writes: list = []
        # the vector unit's control registers (npusim.ascendc.repeat)
        self.mask_counter = False     # SetMaskCount / SetMaskNorm
        self.vector_mask = FULL_MASK  # (low word, high word) of the mask register
        self.saturation = False       # SetSaturationFlag
        self.rsvd_cnt = 0             # elements the last GatherMask kept (GetGatherMaskRemainCount)
        self.pad_value = None         # SetPadValue: DataCopyPad's fill when isPad is false
        self.cmp_mask = np.zeros(16, dtype=np.uint8)   # the 128-bit CMPMASK register (compare.py)
        # the scalar unit's issue work not yet recorded (npusim.ascendc.scalar): the kernel
        # entry's until the first instruction, then each instruction's issue cost
        if _scalar.CHARGE:
            self.scalar_issue = float(soc.scalar_issue_cycles)
            self.scalar_debt = float(soc.scalar_entry_cycles)
            self.scalar_queue = float(soc.scalar_queue_cycles)
            self.scalar_offset = float(soc.scalar_gm_offset_cycles)
            self.scalar_hinted = self.scalar_offset + float(soc.scalar_gm_hint_cycles)
        else:
            self.scalar_issue = self.scalar_debt = self.scalar_queue = 0.0
            self.scalar_offset = self.scalar_hinted = 0.0

    def record(self, kind: int, pipe: int, cycles: float = 0.0, nbytes: int = 0,
               key=None, name: str = "") -> None:
        if self.scalar_debt or self.scalar_issue:
            # :meth:`issue`, inline (one call less per instruction): the same steps
            if not self.records and self.scalar_debt:
                self.flush_scalar("KernelEntry")
            if pipe == PIPE_S:
                if kind != OP:
                    self.scalar_debt += self.scalar_issue
                    self.flush_scalar()
                elif type(cycles) in (int, float):
                    cycles = cycles + self.scalar_debt
                    self.scalar_debt = 0.0
                else:
                    self.flush_scalar()
            else:
                self.scalar_debt += self.scalar_issue
                if kind == BARRIER and pipe == PIPE_ALL:
                    self.flush_scalar()
        self.records.append((kind, pipe, cycles, nbytes, key, name))
        if self.tracker is not None:
            self.tracker.on_record(kind, pipe, key)
        if self.trace_lines is not None:      # tracing: remember the kernel line too
            self.trace_lines.append(kernel_source_line())

    def issue(self, kind: int, pipe, cycles):
        """The scalar unit's part of issuing a record (npusim.ascendc.scalar): the kernel
        entry's work is recorded before the first instruction; an instruction for another
        pipe adds its issue cost to the owed scalar work, which is recorded on PIPE_S
        before the next PIPE_S record (a PIPE_S instruction takes it into its own cycles)
        or PipeBarrier(PIPE_ALL). Returns the record's cycles."""
        if not self.records and self.scalar_debt:
            self.flush_scalar("KernelEntry")
        on_s = pipe == PIPE_S
        if kind != OP or not on_s:
            self.scalar_debt += self.scalar_issue
        if on_s or (kind == BARRIER and pipe == PIPE_ALL):
            if kind == OP and on_s and type(cycles) in (int, float):
                cycles = cycles + self.scalar_debt
                self.scalar_debt = 0.0
            else:
                self.flush_scalar()
        return cycles

    def flush_scalar(self, name: str = "scalar") -> None:
        """Record the owed scalar work as one PIPE_S instruction (nothing if none)."""
        owed = self.scalar_debt
        if owed:
            self.scalar_debt = 0.0
            self.records.append((OP, PIPE_S, owed, 0, None, name))
            if self.tracker is not None:
                self.tracker.on_record(OP, PIPE_S, None)
            if self.trace_lines is not None:
                self.trace_lines.append(kernel_source_line())

    def warn(self, message: str) -> None:
        self.warnings.append(f"core {self.block_idx}: {message}")

    @property
    def name(self) -> str:
        """How messages name this core: its kind and GetBlockIdx (``AIV 3``, ``AIC 1``,
        ``AICore 0``), for an AIV of a mixed launch with its block (``AIV 3 (block 1,
        sub-block 1)``)."""
        if self.mix is None or self.core_kind == AIC:
            return f"{self.core_kind} {self.block_idx}"
        group = self.block_idx // self.task_ratio
        return f"{self.core_kind} {self.block_idx} (block {group}, sub-block {self.sub_block_idx})"

    def wait_until(self, ready, what) -> None:
        """Park this core until ``ready()`` is true (another core must act first: a
        cross-core flag, a SyncAll). ``what`` (a string, or a function returning one)
        says what it waits for, should the kernel hang."""
        if not ready():
            self.scheduler_wait(ready, what)

    def require_memory(self, mem: str, instruction: str) -> None:
        """KernelError unless this kind of core has physical memory ``mem``."""
        if mem not in CORE_MEMORIES[self.core_kind]:
            where = {AIV: "a vector core (AIV)", AIC: "a cube core (AIC)",
                     AICORE: "this AI core"}[self.core_kind]
            raise KernelError(instruction, f"{where} of {self.soc.soc_version} has no {mem}: "
                              "the AIV holds the UB, the AIC L1/L0A/L0B/L0C/BT/FB, and they "
                              "exchange data only through GM (docs/reference/hardware.md §3)")

    def memory(self, mem: str, instruction: str = "LocalTensor") -> np.ndarray:
        """The bytes of physical memory ``mem``; a non-UB memory is allocated (poisoned
        like the UB) the first time the block touches it."""
        if mem == UB:
            return self.ub
        buf = self.mems.get(mem)
        if buf is None:
            self.require_memory(mem, instruction)
            size = memory_size(self.soc, mem)
            pool = self.mem_pool
            buf = pool.get(mem) if pool is not None else None
            if buf is None:
                buf = np.empty(size, dtype=np.uint8)
                if pool is not None:
                    pool[mem] = buf
            buf.fill(UB_POISON)
            self.mems[mem] = buf
        return buf


def current_core_or_none() -> CoreContext | None:
    return _current


def current_core() -> CoreContext:
    """The core running kernel code now; an error outside a kernel launch."""
    if _current is None:
        raise KernelError("GetBlockIdx", "Ascend C device API called outside a kernel launch",
                          core=None)
    return _current


def set_current_core(ctx: CoreContext | None) -> None:
    global _current
    _current = ctx


def GetBlockIdx() -> int:
    """Index of the block running on this core, in [0, GetBlockNum()); in a mixed launch
    with AIC:AIV = 1:2 an AIV's is ``block * 2 + GetSubBlockIdx()``, in [0, 2 *
    GetBlockNum()) (hiascend GetBlockIdx, atlasascendc_api_07_0185)."""
    return current_core().block_idx


def GetBlockNum() -> int:
    """blockDim of the launch (in a mixed launch the number of blocks, on the AICs and the
    AIVs alike: the AIVs number ``GetBlockNum() * GetTaskRation()``)."""
    return current_core().block_num


from npusim.ascendc import scalar as _scalar   # noqa: E402  (it imports this module)
