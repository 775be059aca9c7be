"""TPipe, TQue and TBuf: Ascend C's UB memory management and its implicit pipe sync.

Rules (docs/reference/hardware.md §3 "TPipe/TQue/TBuf"):

* ``InitBuffer(que, num, len)`` rounds ``len`` up to 32 B; ``num = 2`` is double
  buffering. Buffers are laid out one after another from UB offset 0 and must fit in
  the usable UB (§1.7), otherwise :class:`UbError`.
* At most 64 buffers in one kernel; at most 8 TQue buffers per position on A2/A3 (4 on
  the first-generation 910), because each carries an eventID.
* AllocTensor returns uninitialised memory; EnQue returns False when the queue already
  holds ``depth`` tensors; TBuf buffers cannot be enqueued.

Queue hand-offs are the sync edges the timing model sees, as TPipe's auto-sync inserts
them on hardware: for VECIN, EnQue sets MTE2->V and DeQue waits for it, FreeTensor sets
V->MTE2 and the next AllocTensor of that buffer waits for it; for VECOUT the same with
V->MTE3 and MTE3->V. The cube positions hand over the same way along the cube's data path
(docs/reference/hardware.md §2.1 pipe assignment): A1/B1/C1/TSCM MTE2->MTE1 (GM -> L1, then
LoadData), A2/B2/C2 MTE1->M (LoadData, then Mmad), CO1 M->FIX (Mmad, then Fixpipe).

Each position's buffers live in its physical memory (:func:`npusim.ascendc.core.position_memory`):
UB buffers fit in the usable UB, L1 buffers in the whole L1 in a cube-only launch
(AIC_ONLY) and in GetCoreMemSize(L1) (``l1_size - 256`` on 910B/A3, §1.7: the reserve
carries a MIX launch's AIC-AIV messages) in a mixed one, L0A/L0B/L0C/BT/FB buffers in the
whole memory (§1.6). A buffer starts at
its memory's alignment (UB/L1 32 B, L0A/L0B 512 B, L0C/BT/FB 64 B; 通用说明和约束.md): its
length is rounded up to it. A position whose memory the core lacks (a VECIN queue on an
AIC, an A1 queue on an AIV) is an error, and so is CO2 on A2/A3, which is GM there.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc.tensor import LocalTensor
from npusim.ascendc.types import (PIPE_FIX, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_V,
                                  HardEvent, TPosition, tensor_dtype)
from npusim.errors import KernelError, LimitError, SyncError, UbError, kernel_source_line

# position -> (producer pipe, consumer pipe) of the data a queue hands over
_QUEUE_PIPES = {
    TPosition.VECIN: (PIPE_MTE2, PIPE_V),
    TPosition.VECOUT: (PIPE_V, PIPE_MTE3),
    TPosition.A1: (PIPE_MTE2, PIPE_MTE1),
    TPosition.B1: (PIPE_MTE2, PIPE_MTE1),
    TPosition.C1: (PIPE_MTE2, PIPE_MTE1),
    TPosition.TSCM: (PIPE_MTE2, PIPE_MTE1),
    TPosition.A2: (PIPE_MTE1, PIPE_M),
    TPosition.B2: (PIPE_MTE1, PIPE_M),
    TPosition.C2: (PIPE_MTE1, PIPE_M),
    TPosition.CO1: (PIPE_M, PIPE_FIX),
    TPosition.CO2: (PIPE_V, PIPE_MTE3),     # coupled 910A/310P: L0C -> UB on PIPE_V, then out
}


def _align32(n: int) -> int:
    return (int(n) + 31) // 32 * 32


class TPipe:
    """Owner of a kernel's UB buffers. One per block, constructed inside the kernel."""

    def __init__(self):
        self.ctx = _core.current_core()
        self.ctx.pipe = self
        self.used = 0                       # UB bytes handed out
        self.used_mem: dict[str, int] = {}  # bytes handed out in each non-UB memory
        self.buffer_count = 0
        self.que_buffers_by_position: dict[TPosition, int] = {}
        self.queues: list[TQue] = []          # for the leak check at kernel end
        self._next_event: dict[HardEvent, int] = {}

    def InitBuffer(self, que, num: int, length: int | None = None) -> None:
        """Reserve memory for ``que``: ``num`` buffers of ``length`` bytes (rounded up to 32 B,
        or to the start alignment of the position's memory), in the memory behind its
        position.

        For a TBuf call ``InitBuffer(buf, length)``.

        Raises:
            UbError: the buffers do not fit in the usable UB (or in the L1/L0A/L0B/L0C/BT/FB
            capacity, for a cube position).
            LimitError: more than 64 buffers, or too many TQue buffers in one position.
            KernelError: the core has no memory for the position (VECIN on an AIC, A1 on an
            AIV), or the position is GM (CO2 on A2/A3).
        """
        if isinstance(que, TBuf):
            num, length = 1, num
        mem = _core.position_memory(self.ctx.soc, que.position)
        if mem != _core.UB:
            return self._init_cube_buffer(que, mem, int(num), length)
        if self.ctx.mix is None or self.ctx.core_kind != _core.AIC:
            # a mixed kernel's code runs on both kinds of core: there TPipe only keeps the
            # books of the AIC's UB positions, touching no memory (pyasc tutorial
            # 05_matmul_leakyrelu inits its VECOUT queue before REGIST_MATMUL_OBJ on every core)
            self.ctx.require_memory(mem, "InitBuffer")
        num, length = int(num), _align32(length)
        if num <= 0 or length <= 0:
            raise KernelError("InitBuffer", f"num ({num}) and len ({length}) must be positive",
                              pipe=None)
        self._check_counts(que, num)
        need = num * length
        if self.used + need > self.ctx.ub_capacity:
            raise UbError("InitBuffer", f"{num} x {length} B = {need} B requested with {self.used} B "
                          f"already in use: {self.used + need} B exceed the usable UB of "
                          f"{self.ctx.ub_capacity} B on {self.ctx.soc.soc_version} "
                          "(docs/reference/hardware.md §1.7)")
        que._init(self, self.used, num, length)
        self.used += need
        self.buffer_count += num

    def _init_cube_buffer(self, que, mem: str, num: int, length) -> None:
        """InitBuffer for a position outside the UB: the same limits, that memory's capacity."""
        ctx = self.ctx
        if mem == _core.GM:
            raise KernelError("InitBuffer", f"{que.position.name} is Global Memory on "
                              f"{ctx.soc.soc_version}: there is nothing to allocate (Fixpipe "
                              "writes L0C straight to a GlobalTensor; 通用说明和约束.md table 1)")
        ctx.require_memory(mem, "InitBuffer")
        align = _core.MEMORY_ALIGN[mem]
        length = -(-int(length) // align) * align
        if num <= 0 or length <= 0:
            raise KernelError("InitBuffer", f"num ({num}) and len ({length}) must be positive")
        self._check_counts(que, num)
        # L1: the 256 B the 910B/A3 reserve (GetCoreMemSize) carry the MIX launches' AIC-AIV
        # messages; a cube-only kernel (AIC_ONLY) has the whole L1 (docs/reference/hardware.md §1.7)
        cap = (ctx.soc.l1_usable if ctx.mix is not None else ctx.soc.l1_size) \
            if mem == _core.L1 else _core.memory_size(ctx.soc, mem)
        used = self.used_mem.get(mem, 0)
        need = num * length
        if used + need > cap:
            raise UbError("InitBuffer", f"{num} x {length} B = {need} B requested in {mem} with "
                          f"{used} B already in use: {used + need} B exceed the {mem} capacity of "
                          f"{cap} B on {ctx.soc.soc_version} (docs/reference/hardware.md §1.6, §1.7)")
        que._init(self, used, num, length)
        que.mem = mem
        self.used_mem[mem] = used + need
        self.buffer_count += num

    def _check_counts(self, que, num: int) -> None:
        """At most 64 buffers per kernel and 8 (4 on 1001) TQue buffers per position."""
        if self.buffer_count + num > self.ctx.soc.max_total_buffers:
            raise LimitError("InitBuffer", f"{self.buffer_count + num} buffers exceed the limit of "
                             f"{self.ctx.soc.max_total_buffers} per kernel "
                             "(docs/reference/hardware.md §3 TPipe)")
        if isinstance(que, TQue):
            n_pos = self.que_buffers_by_position.get(que.position, 0) + num
            limit = self.ctx.soc.max_tque_buffers_per_position
            if n_pos > limit:
                raise LimitError("InitBuffer", f"{n_pos} TQue buffers in {que.position.name} exceed "
                                 f"{limit} per position on {self.ctx.soc.soc_version} (each buffer "
                                 "holds an eventID; docs/reference/hardware.md §3 TPipe)")
            self.que_buffers_by_position[que.position] = n_pos
            self.queues.append(que)

    def FetchEventID(self, event: HardEvent) -> int:
        """An eventID for a user SetFlag/WaitFlag pair of ``event``: rotates over 0..5 on
        A2/A3 (IDs 6 and 7 are reserved, docs/reference/hardware.md §3) and over the SoC's IDs
        elsewhere (0..3 on the first-generation 910)."""
        n = self._next_event.get(event, 0)
        self._next_event[event] = (n + 1) % min(6, self.ctx.soc.max_event_id)
        return n

    AllocEventID = FetchEventID

    def ReleaseEventID(self, event: HardEvent, event_id: int) -> None:
        """Nothing to release in the simulator; present for source compatibility."""

    def Destroy(self) -> None:
        self.used = 0

    def _release(self) -> None:
        """The block has ended: forget the tensors the queues keep for reuse."""
        for que in self.queues:
            que._tensors.clear()


def GetTPipePtr() -> TPipe:
    """The TPipe of the running block."""
    pipe = _core.current_core().pipe
    if pipe is None:
        raise KernelError("GetTPipePtr", "no TPipe has been constructed in this kernel")
    return pipe


class TQue:
    """``TQue<pos, depth>``: buffers handed between pipes in FIFO order.

    Args:
        position: TPosition.VECIN, VECOUT or VECCALC.
        depth: how many tensors the queue holds at once (normally 1).
    """

    def __init__(self, position: TPosition, depth: int = 1):
        self.position = TPosition(position)
        self.depth = int(depth)
        self.ctx = None
        self.mem = _core.UB      # the physical memory of its buffers (set by InitBuffer)
        self._buffers: list[tuple[int, int]] = []
        self._free: deque[int] = deque()
        self._pending_free: set[int] = set()
        self._queue: deque[LocalTensor] = deque()
        self._tensors: dict = {}            # (buffer index, dtype) -> its LocalTensor
        self._serial = None                 # its number among the block's queues

    def _init(self, pipe: TPipe, offset: int, num: int, length: int) -> None:
        if self.ctx is not pipe.ctx or self._serial is None:
            # the queue's flags are named by the order the block made its queues, not by
            # the object's address: the same kernel records the same flags launch after
            # launch (the replay keeps its results by the records, npusim.timing)
            pipe.ctx.queues_made += 1
            self._serial = pipe.ctx.queues_made
        self.ctx = pipe.ctx
        self._buffers = [(offset + i * length, length) for i in range(num)]
        self._free = deque(range(num))
        self._tensors = {}

    def _key(self, index: int, what: str):
        return ("que", self._serial, index, what)

    def AllocTensor(self, dtype) -> LocalTensor:
        """Take the next free buffer as a ``LocalTensor<dtype>`` (contents undefined)."""
        if self.ctx is None:
            raise KernelError("AllocTensor", "the queue has no buffers: call pipe.InitBuffer first")
        if not self._free:
            raise KernelError("AllocTensor", f"all {len(self._buffers)} buffers of this "
                              f"{self.position.name} queue are in use (FreeTensor missing?)")
        self.ctx.scalar_debt += self.ctx.scalar_queue   # the queue's book-keeping (scalar.py)
        index = self._free.popleft()
        if index in self._pending_free:
            self._pending_free.discard(index)
            pipes = _QUEUE_PIPES.get(self.position)
            if pipes is not None:   # wait until the consumer released this buffer
                self.ctx.record(_core.WAIT, pipes[0], 0.0, 0, self._key(index, "free"), "AllocTensor")
        offset, length = self._buffers[index]
        tracker = self.ctx.tracker
        if tracker is not None:        # the checker: fresh, undefined contents
            tracker.shadow(self.mem).fresh(offset, length)
            tracker.alloc_lines[(id(self), index)] = kernel_source_line()
        dtype = tensor_dtype(dtype, "AllocTensor")
        # the same buffer as the same dtype is the same (immutable) tensor: reuse it, and the
        # sub-tensors and views it keeps
        tensor = self._tensors.get((index, dtype))
        if tensor is None:
            tensor = self._tensors[(index, dtype)] = LocalTensor(
                self.ctx, dtype, offset, length // dtype.itemsize, offset + length,
                self.position, (self, index), self.mem)
        return tensor

    def allocated(self) -> list[int]:
        """Indices of the buffers currently allocated (not freed)."""
        return [i for i in range(len(self._buffers)) if i not in self._free]

    def EnQue(self, tensor: LocalTensor) -> bool:
        """Hand ``tensor`` to the consumer pipe; False when ``depth`` tensors are queued."""
        if len(self._queue) >= self.depth:
            return False
        owner = tensor.owner
        if owner is None or owner[0] is not self:
            raise KernelError("EnQue", "the tensor was not allocated from this queue "
                              "(TBuf buffers cannot be enqueued)")
        self.ctx.scalar_debt += self.ctx.scalar_queue   # the queue's book-keeping (scalar.py)
        pipes = _QUEUE_PIPES.get(self.position)
        if pipes is not None:
            self.ctx.record(_core.SET, pipes[0], 0.0, 0, self._key(owner[1], "data"), "EnQue")
        self._queue.append(tensor)
        return True

    def DeQue(self, dtype=None) -> LocalTensor:
        """Take the oldest queued tensor, waiting for its producer pipe."""
        if not self._queue:
            raise SyncError("DeQue", "the queue is empty: DeQue without a matching EnQue "
                            "hangs on hardware")
        self.ctx.scalar_debt += self.ctx.scalar_queue   # the queue's book-keeping (scalar.py)
        tensor = self._queue.popleft()
        pipes = _QUEUE_PIPES.get(self.position)
        if pipes is not None:
            self.ctx.record(_core.WAIT, pipes[1], 0.0, 0, self._key(tensor.owner[1], "data"), "DeQue")
        if dtype is not None and np.dtype(dtype) != tensor.dtype:
            tensor = tensor.ReinterpretCast(dtype)
        return tensor

    def FreeTensor(self, tensor: LocalTensor) -> None:
        """Return the tensor's buffer; the next AllocTensor of it waits for this."""
        owner = tensor.owner
        if owner is None or owner[0] is not self:
            raise KernelError("FreeTensor", "the tensor was not allocated from this queue")
        index = owner[1]
        if index in self._free:
            raise KernelError("FreeTensor", "the buffer was already freed")
        self.ctx.scalar_debt += self.ctx.scalar_queue   # the queue's book-keeping (scalar.py)
        pipes = _QUEUE_PIPES.get(self.position)
        if pipes is not None:
            self.ctx.record(_core.SET, pipes[1], 0.0, 0, self._key(index, "free"), "FreeTensor")
            self._pending_free.add(index)
        self._free.append(index)

    def HasTensorInQue(self) -> bool:
        return bool(self._queue)


class TBuf:
    """``TBuf<pos>``: one scratch buffer with no queue and no implicit sync."""

    def __init__(self, position: TPosition = TPosition.VECCALC):
        self.position = TPosition(position)
        self.ctx = None
        self.mem = _core.UB      # the physical memory of its buffer (set by InitBuffer)
        self._offset = 0
        self._length = 0

    def _init(self, pipe: TPipe, offset: int, num: int, length: int) -> None:
        self.ctx = pipe.ctx
        self._offset, self._length = offset, length
        self._tensors = {}                  # (dtype, length) -> its LocalTensor

    def Get(self, dtype, length: int | None = None) -> LocalTensor:
        """The buffer as ``LocalTensor<dtype>`` of ``length`` elements (default: all of it)."""
        if self.ctx is None:
            raise KernelError("TBuf.Get", "the buffer has no memory: call pipe.InitBuffer first")
        dtype = tensor_dtype(dtype, "TBuf.Get")
        n = self._length // dtype.itemsize if length is None else int(length)
        if n * dtype.itemsize > self._length:
            raise UbError("TBuf.Get", f"{n} x {dtype.name} exceeds the buffer's {self._length} B")
        tensor = self._tensors.get((dtype, n))
        if tensor is None:
            tensor = self._tensors[(dtype, n)] = LocalTensor(
                self.ctx, dtype, self._offset, n, self._offset + self._length, self.position,
                None, self.mem)
        return tensor

    def GetWithOffset(self, length: int, offset: int, dtype) -> LocalTensor:
        """``length`` elements of ``dtype`` starting ``offset`` bytes into the buffer."""
        t = self.Get(np.uint8)[int(offset)].ReinterpretCast(dtype)
        return LocalTensor(self.ctx, dtype, t.offset, int(length), t.limit, self.position, None,
                           self.mem)

    # The queue calls a TBuf inherits from TQueBind (kernel_tpipe.h declares them on TBuf
    # itself). The library's implementation (asc-devkit impl/basic_api/kernel_tbuf_impl.h)
    # makes them the buffer's plain accessors: AllocTensor<T>() and DeQue<T>() give
    # Get<T>(), the whole buffer; EnQue and FreeTensor do nothing (no queue, no flags).
    def AllocTensor(self, dtype) -> LocalTensor:
        """``AllocTensor<T>()``: the whole buffer as ``LocalTensor<T>`` (as ``Get<T>()``)."""
        return self.Get(dtype)

    def DeQue(self, dtype) -> LocalTensor:
        """``DeQue<T>()``: the whole buffer as ``LocalTensor<T>`` (as ``Get<T>()``)."""
        return self.Get(dtype)

    def EnQue(self, tensor: LocalTensor) -> None:
        """``EnQue(tensor)``: nothing (a TBuf has no queue)."""

    def FreeTensor(self, tensor: LocalTensor) -> None:
        """``FreeTensor(tensor)``: nothing (the buffer stays the TBuf's)."""
