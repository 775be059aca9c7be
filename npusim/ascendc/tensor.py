"""GlobalTensor (a typed window on device memory) and LocalTensor (a typed view on a
core's local memory), with Ascend C's ``operator[]``, GetValue and SetValue.

A LocalTensor is a view on the bytes of one physical memory of its core — the unified
buffer for VECIN/VECOUT/VECCALC, L1 / L0A / L0B / L0C / bias table / Fixpipe buffer for the
cube positions (:func:`npusim.ascendc.core.position_memory`) — so aliasing,
reinterpretation and overflow behave as on hardware. Scalar GetValue/SetValue run on
PIPE_S and reach the UB only.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from npusim import lockstep as _lockstep
from npusim.ascendc import core as _core
from npusim.ascendc import timing_only as _timing_only
from npusim.ascendc.types import PIPE_S, CacheMode, TPosition, tensor_dtype
from npusim.errors import GmAccessError, KernelError, UbError, kernel_source_line

#: Cycles of one scalar GM access (a load through the scalar unit's data cache path).
#: Not published (docs/reference/hardware.md §5); 100 cycles, like one DMA latency [R].
GM_SCALAR_ACCESS_CYCLES = 100
_NORMAL = CacheMode.CACHE_MODE_NORMAL
_INT_ONLY = {int}

_UB_POSITIONS = _core._UB_POSITIONS

#: The pipe GetValue passes to :meth:`LocalTensor.elements` for its one value: "PIPE_S",
#: as a distinct string object, so that elements tells it from a fast path's scan.
_ONE_VALUE = "".join(["PIPE_", "S"])

#: Sub-tensors a LocalTensor keeps for reuse: a kernel indexes the same few offsets every
#: tile, and a kept sub-tensor keeps its numpy view too.
_SUB_CACHE = 64


def _index(x, instruction: str, what: str = "index"):
    """``x`` as an int element index (member by member for a BlockVector).

    Ascend C indexes are integers: a float (``GetBlockIdx() / n``), a numpy floating
    scalar or anything else without ``__index__`` would be truncated silently by ``int()``,
    so it is a KernelError at the kernel's line instead. Integer numpy scalars pass.
    Called on every ``operator[]``: the common case (a Python int) costs one type test.
    """
    if type(x) is int:
        return x
    if type(x) is _lockstep.BlockVector:
        if set(map(type, x.vals)) == _INT_ONLY:
            return x                # every member's is an int already (a set: one C pass)
        return x.map(lambda v: _index(v, instruction, what))
    try:
        return operator.index(x)
    except TypeError:
        raise KernelError(instruction, f"{what} {x!r} ({type(x).__name__}) is not an integer; "
                          "an element index is an int as in Ascend C: compute it with // "
                          "(floor division), not / (e.g. GetBlockIdx() * n // m)") from None


class GlobalTensor:
    """``GlobalTensor<T>``: ``length`` elements of ``dtype`` at device address ``address``.

    Usage as in Ascend C::

        xGm = GlobalTensor(half)
        xGm.SetGlobalBuffer(x + offset * 2, blockLen)
        DataCopy(xLocal, xGm[i * tileLen], tileLen)

    Accesses are checked against the GM allocation that holds the tensor's first byte
    (docs/reference/api.md §6: every pointer comes from aclrtMalloc).
    """

    __slots__ = ("dtype", "address", "length", "_alloc", "cache_mode")
    #: The physical memory, for instructions that dispatch on their operands' memories.
    mem = _core.GM

    def __init__(self, dtype=None):
        self.dtype = tensor_dtype(dtype, "GlobalTensor") if dtype is not None else None
        self.address = 0
        self.length = 0
        self._alloc = None
        self.cache_mode = CacheMode.CACHE_MODE_NORMAL

    def SetL2CacheHint(self, mode: CacheMode) -> None:
        """Choose how this tensor's GM accesses use the L2 cache (CACHE_MODE_DISABLE
        bypasses it, for data read once; docs/reference/hardware.md §2)."""
        self.cache_mode = CacheMode(mode)

    def SetGlobalBuffer(self, address: int, length: int = 0) -> None:
        """Point the tensor at ``address`` (bytes) holding ``length`` elements.

        In a lockstep group both may be BlockVectors (one value per member block)."""
        self.address = _index(address, "SetGlobalBuffer", "address")
        self.length = _index(length, "SetGlobalBuffer", "length")
        cur = _core.current_core_or_none()
        if cur is None:
            self._alloc = None
        elif type(self.address) is _lockstep.BlockVector:
            self._alloc = self.address.map(cur.gm.find)
        else:
            self._alloc = cur.gm.find(self.address)

    def __getitem__(self, offset: int) -> "GlobalTensor":
        """The sub-tensor starting ``offset`` elements in (Ascend C ``operator[]``)."""
        sub = GlobalTensor()
        sub.dtype = self.dtype                     # already a numpy dtype
        if type(offset) is not int:
            offset = _index(offset, "GlobalTensor[]")
        if (type(offset) is _lockstep.BlockVector and type(self.address) is int
                and type(self.length) is int and set(map(type, offset.vals)) == _INT_ONLY):
            # a group's per-member offset into a tensor all members share (a block's rows
            # of one matrix): the same int arithmetic as below, member by member in one pass
            sub.address, sub.length = _lockstep.offset_members(
                offset, self.address, self.dtype.itemsize, self.length)
        else:
            sub.address = self.address + offset * self.dtype.itemsize
            rest = self.length - offset
            if type(rest) is _lockstep.BlockVector:
                sub.length = rest if min(rest.vals) >= 0 else rest.map(lambda r: max(r, 0))
            else:
                sub.length = max(rest, 0)
        sub._alloc = self._alloc
        sub.cache_mode = self.cache_mode
        cur = _core.current_core_or_none()
        if cur is not None:      # the scalar unit's address arithmetic (npusim.ascendc.scalar)
            cur.scalar_debt += (cur.scalar_offset if self.cache_mode is _NORMAL
                                else cur.scalar_hinted)
        return sub

    def GetSize(self) -> int:
        return self.length

    def GetPhyAddr(self) -> int:
        return self.address

    def bytes_view(self, nbytes: int, instruction: str, pipe: str | None) -> np.ndarray:
        """uint8 view of ``nbytes`` from the tensor's start, checked against its allocation.

        In a lockstep launch the access is logged (and a store's old bytes kept,
        :mod:`npusim.lockstep`); a group of blocks reaches GM through
        :func:`npusim.lockstep.gm_rows` only, so any other use splits it into single blocks.
        """
        cur = _core._current
        if cur is not None and cur.gm_log is not None:
            if cur.is_group:
                cur.split()
            view = self._checked_view(nbytes, instruction, pipe)
            _lockstep.log_gm_view(cur, self, view, nbytes, instruction, pipe)
            return view
        return self._checked_view(nbytes, instruction, pipe)

    def _checked_view(self, nbytes: int, instruction: str, pipe: str | None) -> np.ndarray:
        alloc = self._alloc
        if alloc is None or self.address < alloc.base or self.address + nbytes > alloc.end:
            gm = _core.current_core().gm
            if alloc is None:
                return gm.view(self.address, nbytes, instruction=instruction, pipe=pipe)
            raise GmAccessError(
                instruction,
                f"range 0x{self.address:x}+{nbytes} B leaves the allocation "
                f"[0x{alloc.base:x}, 0x{alloc.end:x}) this GlobalTensor was built on",
                pipe=pipe)
        off = self.address - alloc.base
        return alloc.buf[off:off + nbytes]

    def GetValue(self, index: int):
        """Read one element through the scalar unit (PIPE_S)."""
        isz = self.dtype.itemsize
        cur = _core.current_core()
        cur.record(_core.OP, PIPE_S, GM_SCALAR_ACCESS_CYCLES, 0, None, "GlobalTensor.GetValue")
        cur.bytes_read += isz
        index = _index(index, "GlobalTensor.GetValue")
        if cur.is_group:       # one value per member block: a BlockVector where they differ
            rows = _lockstep.gm_rows(cur, self[index], 1, isz, isz, False)
            if _timing_only.ACTIVE and _timing_only.gm_flagged(cur, self[index], isz):
                return _timing_only.read_value(kernel_source_line)
            data = np.array([r.reshape(-1) for r in rows]) if isinstance(rows, list) else \
                np.ascontiguousarray(rows.reshape(cur.size, isz))
            return _lockstep.collapse(cur.members, data.view(self.dtype)[:, 0])
        value = self[index].bytes_view(isz, "GetValue", "PIPE_S").view(self.dtype)[0]
        if _timing_only.ACTIVE and _timing_only.gm_flagged(cur, self[index], isz):
            return _timing_only.read_value(kernel_source_line)
        return value

    def SetValue(self, index: int, value) -> None:
        """Write one element through the scalar unit (PIPE_S)."""
        isz = self.dtype.itemsize
        cur = _core.current_core()
        cur.record(_core.OP, PIPE_S, GM_SCALAR_ACCESS_CYCLES, 0, None, "GlobalTensor.SetValue")
        cur.bytes_written += isz
        index = _index(index, "GlobalTensor.SetValue")
        cur.gm_writes.append((self.address + index * isz, isz, 0, 1, cur.sync_all_count,
                              kernel_source_line()))     # the checker names the line
        if _timing_only.ACTIVE and _timing_only.holds_uncomputed(value):
            _timing_only.set_value_gm(cur, self[index], isz)
            return
        if cur.is_group:
            rows = _lockstep.gm_rows(cur, self[index], 1, isz, isz, True)
            for j in range(cur.size):
                rows[j][0].view(self.dtype)[0] = _lockstep.pick(value, j)
            return
        self[index].bytes_view(isz, "SetValue", "PIPE_S").view(self.dtype)[0] = value


class LocalTensor:
    """``LocalTensor<T>``: ``length`` elements of ``dtype`` at byte offset ``offset`` of the
    physical memory ``mem`` (by default the one behind ``position``: "UB", "L1", "L0A",
    "L0B", "L0C", "BT" or "FB").

    ``limit`` is the byte offset where the buffer this tensor came from ends; accesses
    beyond it are UB errors (naming the memory) even when they stay inside the memory.
    """

    __slots__ = ("ctx", "dtype", "offset", "length", "limit", "position", "owner", "_view",
                 "_subs", "mem", "_shape_info")

    def __init__(self, ctx, dtype=None, offset: int = 0, length: int = 0, limit: int = 0,
                 position: TPosition = TPosition.VECCALC, owner=None, mem: str | None = None):
        if isinstance(ctx, TPosition):
            # C++'s static-tensor constructor LocalTensor<T>(pos, addr, tileSize): the element
            # type is a template argument, which Python spells LocalTensor[T]
            raise TypeError(f"LocalTensor({ctx!r}, addr, tileSize) needs the element type "
                            "that C++ gives as LocalTensor<T>: write LocalTensor[half]"
                            f"(TPosition.{ctx.name}, addr, tileSize) or LocalTensor.at(half, "
                            f"TPosition.{ctx.name}, addr, tileSize)")
        self.ctx = ctx
        self.dtype = np.dtype(dtype)
        self.offset = int(offset)
        self.length = int(length)
        self.limit = int(limit)
        self.position = position
        self.owner = owner
        if mem is None:     # vector positions need no look-up: the UB's hot path stays as it was
            mem = _core.UB if position in _UB_POSITIONS else _core.position_memory(ctx.soc,
                                                                                   position)
        self.mem = mem
        self._view = None          # (count, numpy view) of the last elements() call
        self._subs = None          # index -> sub-tensor, for operator[] (tensors never change)

    def __class_getitem__(cls, dtype):
        """``LocalTensor[T]``: C++'s ``LocalTensor<T>``, called as the static-tensor
        constructor: ``LocalTensor[half](TPosition.A1, addr, tileSize)`` is
        :meth:`at` ``(half, TPosition.A1, addr, tileSize)``."""
        return functools.partial(cls.at, dtype)

    @classmethod
    def at(cls, dtype, position: TPosition, addr: int, tile_size: int) -> "LocalTensor":
        """Static tensor programming: ``LocalTensor<T>(pos, addr, tileSize)``.

        A tensor of ``tile_size`` elements at byte address ``addr`` of the memory behind
        ``position`` (UB for the vector positions, L1 for A1/B1/C1, L0A for A2, ...),
        outside any TPipe buffer; it may use the whole physical memory, and the kernel syncs
        it with SetFlag/WaitFlag itself.

        Raises:
            AlignmentError: ``addr`` is not aligned for its memory (UB/L1 32 B, L0A/L0B
            512 B, L0C/BT/FB 64 B). UbError: it leaves the memory. KernelError: this kind
            of core has no such memory (an AIV has no L1, an AIC no UB).
        """
        from npusim.errors import AlignmentError
        ctx = _core.current_core()
        dtype = tensor_dtype(dtype, "LocalTensor")
        position = TPosition(position)
        mem = _core.position_memory(ctx.soc, position)
        if mem == _core.GM:
            raise KernelError("LocalTensor", f"{position.name} is Global Memory on "
                              f"{ctx.soc.soc_version}: use a GlobalTensor")
        ctx.require_memory(mem, "LocalTensor")
        addr, align, size = int(addr), _core.MEMORY_ALIGN[mem], _core.memory_size(ctx.soc, mem)
        end = addr + int(tile_size) * dtype.itemsize
        if addr % align:
            raise AlignmentError("LocalTensor", f"{mem} address 0x{addr:x} is not {align} B "
                                 "aligned (docs/reference/hardware.md §3)")
        if addr < 0 or end > size:
            raise UbError("LocalTensor", f"[{addr}, {end}) is outside the {size} B {mem}")
        return cls(ctx, dtype, addr, int(tile_size), end, position, None, mem)

    # -- Ascend C surface ---------------------------------------------------------------
    def __getitem__(self, index: int) -> "LocalTensor":
        """The sub-tensor starting ``index`` elements in (Ascend C ``operator[]``).

        Raises:
            KernelError: ``index`` is not an integer (a float is not truncated).
        """
        if type(index) is not int:
            index = _index(index, "LocalTensor[]")
        subs = self._subs
        if subs is None:
            subs = self._subs = {}
        sub = subs.get(index)
        if sub is None:
            sub = LocalTensor(self.ctx, self.dtype, self.offset + index * self.dtype.itemsize,
                              self.length - index, self.limit, self.position, self.owner,
                              self.mem)
            if len(subs) < _SUB_CACHE:
                subs[index] = sub
        return sub

    def GetSize(self) -> int:
        return self.length

    def SetShapeInfo(self, shapeInfo) -> None:
        """``SetShapeInfo``: the shape this tensor carries (npusim.ascendc.shapeinfo)."""
        self._shape_info = shapeInfo

    def GetShapeInfo(self):
        """``GetShapeInfo``: the ShapeInfo set on this tensor, or None (C++: an empty one)."""
        return getattr(self, "_shape_info", None)

    def GetPhyAddr(self) -> int:
        """Byte offset of the first element in its memory."""
        return self.offset

    def ReinterpretCast(self, dtype) -> "LocalTensor":
        """The same bytes seen as ``dtype``."""
        dtype = tensor_dtype(dtype, "ReinterpretCast")
        return LocalTensor(self.ctx, dtype, self.offset,
                           self.length * self.dtype.itemsize // dtype.itemsize,
                           self.limit, self.position, self.owner, self.mem)

    def _scalar_reachable(self, instruction: str) -> None:
        if self.mem != _core.UB:
            raise KernelError(instruction, f"the scalar unit reads and writes the UB, not "
                              f"{self.mem}: move the data with the cube's copy instructions",
                              pipe="PIPE_S")

    def GetValue(self, index: int):
        """Read one element through the scalar unit (PIPE_S).

        Raises:
            KernelError: the tensor is not in the UB (the scalar unit cannot reach L1/L0).
        """
        if self.mem != _core.UB:
            self._scalar_reachable("GetValue")
        index = _index(index, "GetValue")
        if self.ctx.is_group:
            return self._group_get(int(index))
        value = self.elements(int(index) + 1, "GetValue", _ONE_VALUE)[int(index)]
        if self.ctx.tracker is not None:
            isz = self.dtype.itemsize
            self.ctx.tracker.read(self.ctx, PIPE_S, self.offset + int(index) * isz, isz, "GetValue")
        self.ctx.record(_core.OP, PIPE_S, self.ctx.soc.scalar_cycles, 0, None, "GetValue")
        if _timing_only.ACTIVE:
            return self._timing_only_value(int(index), value)
        return value

    def _timing_only_value(self, index: int, value):
        """In a timing-only launch: ``value``, or UNCOMPUTED where its bytes were not
        computed (npusim.ascendc.timing_only)."""
        lo = self.offset + index * self.dtype.itemsize
        if _timing_only.ub_flagged(self.ctx, lo, lo + self.dtype.itemsize):
            return _timing_only.read_value(kernel_source_line)
        return value

    def SetValue(self, index: int, value) -> None:
        """Write one element through the scalar unit (PIPE_S); UB tensors only."""
        if self.mem != _core.UB:
            self._scalar_reachable("SetValue")
        index = _index(index, "SetValue")
        if self.ctx.is_group:
            return self._group_set(int(index), value)
        view = self.elements(int(index) + 1, "SetValue", "PIPE_S")
        if _timing_only.ACTIVE:
            self._timing_only_set(int(index), value)
        if not (_timing_only.ACTIVE and value is _timing_only.UNCOMPUTED):
            view[int(index)] = value
        if self.ctx.tracker is not None:
            isz = self.dtype.itemsize
            self.ctx.tracker.write(self.ctx, PIPE_S, self.offset + int(index) * isz, isz,
                                   "SetValue")
        self.ctx.record(_core.OP, PIPE_S, self.ctx.soc.scalar_cycles, 0, None, "SetValue")

    def _timing_only_set(self, index: int, value) -> None:
        """A SetValue in a timing-only launch: the element is computed unless the value
        is not (UNCOMPUTED, for any member of a group)."""
        lo = self.offset + index * self.dtype.itemsize
        _timing_only.set_ub(self.ctx, lo, lo + self.dtype.itemsize,
                            _timing_only.holds_uncomputed(value))

    def _group_get(self, index: int):
        """GetValue in a lockstep group: one value per member (a BlockVector where the
        members' bytes differ)."""
        ctx = self.ctx
        ctx.batch_ok = True
        try:
            col = self.elements(index + 1, "GetValue", _ONE_VALUE)[:, index]
        finally:
            ctx.batch_ok = False
        if ctx.tracker is not None:        # the group's tracker: the members' offsets agree
            isz = self.dtype.itemsize
            ctx.tracker.read(ctx, PIPE_S, self.offset + index * isz, isz, "GetValue")
        ctx.record(_core.OP, PIPE_S, ctx.soc.scalar_cycles, 0, None, "GetValue")
        if _timing_only.ACTIVE:
            return self._timing_only_value(index, _lockstep.collapse(ctx.members, col))
        return _lockstep.collapse(ctx.members, col)

    def _group_set(self, index: int, value) -> None:
        """SetValue in a lockstep group: each member stores its value."""
        ctx = self.ctx
        ctx.batch_ok = True
        try:
            view = self.elements(index + 1, "SetValue", "PIPE_S")
            if _timing_only.ACTIVE:
                self._timing_only_set(index, value)
            for j in range(ctx.size):
                v = _lockstep.pick(value, j)
                if v is not _timing_only.UNCOMPUTED:
                    view[j, index] = v
        finally:
            ctx.batch_ok = False
        if ctx.tracker is not None:
            isz = self.dtype.itemsize
            ctx.tracker.write(ctx, PIPE_S, self.offset + index * isz, isz, "SetValue")
        ctx.record(_core.OP, PIPE_S, ctx.soc.scalar_cycles, 0, None, "SetValue")

    # -- simulator helpers ----------------------------------------------------------------
    def _buffer(self, instruction: str) -> np.ndarray:
        mem = self.mem
        return self.ctx.ub if mem == _core.UB else self.ctx.memory(mem, instruction)

    def elements(self, count: int, instruction: str, pipe: str = "PIPE_V") -> np.ndarray:
        """Numpy view of the first ``count`` elements, bounds-checked against the buffer.

        ``instruction`` "GetValue" on "PIPE_S": a simulator fast path reading the values
        through the scalar unit (a kernel's scalar loop over a tile, modelled at once); in a
        timing-only launch such a read of bytes the launch did not compute raises
        TimingOnlyError (npusim.ascendc.timing_only). GetValue itself reads one value and
        returns UNCOMPUTED instead."""
        if pipe == "PIPE_S" and _timing_only.ACTIVE and instruction == "GetValue" \
                and pipe is not _ONE_VALUE:
            lo = self.offset
            _timing_only.check_ub_read(self.ctx, lo, lo + count * self.dtype.itemsize,
                                       instruction)
        cached = self._view
        if cached is not None and cached[0] == count:
            return cached[1]
        end = self.offset + count * self.dtype.itemsize
        if count < 0 or end > self.limit or self.offset < 0:
            raise UbError(instruction,
                          f"{count} x {self.dtype.name} from {self.mem} offset {self.offset} ends "
                          f"at {end}, past the end of its buffer at {self.limit}", pipe=pipe)
        buf = self._buffer(instruction)
        if buf.ndim == 1:
            view = buf[self.offset:end].view(self.dtype)
            self._view = (count, view)
        else:         # a lockstep group's [G, n] view: never kept (batch-aware users only)
            view = buf[:, self.offset:end].view(self.dtype)
        return view

    def bytes_view(self, nbytes: int, instruction: str, pipe: str) -> np.ndarray:
        end = self.offset + nbytes
        if end > self.limit:
            raise UbError(instruction, f"{nbytes} B from {self.mem} offset {self.offset} end at "
                          f"{end}, past the end of its buffer at {self.limit}", pipe=pipe)
        return self._buffer(instruction)[..., self.offset:end]

    def numpy(self) -> np.ndarray:
        """A copy of the whole tensor (for debugging and tests; costs no cycles)."""
        return self.elements(self.length, "numpy").copy()

    def __repr__(self) -> str:
        return (f"LocalTensor<{self.dtype.name}>({self.mem.lower()}=0x{self.offset:x}, "
                f"len={self.length}, {TPosition(self.position).name})")
