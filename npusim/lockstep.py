"""Lockstep execution: run the kernel's Python once for a group of blocks.

Most launches run one instruction stream on every block with different offsets. Instead
of calling the kernel function once per block, :func:`run_blocks` calls it once for a
*group* of blocks on a :class:`GroupContext`:

* ``GetBlockIdx()`` returns a :class:`BlockVector`, an int-like holding one value per
  member block. Arithmetic and comparisons act member by member with the very Python
  operation per-block execution would do (so types, rounding and overflow are the
  per-block ones); a result on which all members agree collapses to that plain value.
* Every conversion that needs one value — ``bool`` (an ``if``), ``int``/``index``
  (``range``, slicing), ``float``, ``hash``, ``format``/``str``/``repr``, attribute
  access — raises :class:`Divergence` with the members grouped by the value they
  disagree on. The engine then discards the group's run (its GM writes are undone from
  an undo log), splits the group and runs the parts again. Tails (``if blockIdx <
  frontCoreNum``, ``range(loops)`` with per-block counts), data-dependent branches (a
  ``GetValue`` on which the members disagree) and error messages (which name the core)
  all diverge this way. A value the members disagree on that is only computed with (a
  row maximum read with ``GetValue``, then ``np.sqrt`` of it, then the scalar of
  ``Adds``) stays a BlockVector: numpy ufuncs act member by member
  (:meth:`BlockVector.__array_ufunc__`), and a vector instruction takes one scalar per
  member (:func:`member_scalar`).
* The group's UB is a ``[G, ub_size]`` array. A LocalTensor's views are ``[G, n]``
  (``ub[:, a:b]``), but only while an instruction that is written for them runs
  (``ctx.batch_ok``, set by the batch-aware instructions: the queue/buffer calls,
  SetFlag/WaitFlag/PipeBarrier, DataCopy and DataCopyPad between GM and UB and UB to UB,
  the element-wise vector family of :mod:`npusim.ascendc.vector` in both forms (level 2
  and level 0), Duplicate, Cast, Power, the level-0 reductions, Brcb, IndexCast,
  GetValue/SetValue). The cube memories (L1, L0A, L0B, L0C, ...)
  are ``[G, size]`` arrays likewise, reachable by the cube instructions written for groups
  (:func:`npusim.ascendc.cube.common.stacked`): DataCopy with Nd2NzParams from GM, LoadData
  from L1, LoadDataWithTranspose, Mmad, and Fixpipe to GM or L1 (without a per-column
  scale table or atomics). Any other instruction that reaches for UB bytes, a cube memory
  or GM in a group raises :class:`Divergence` into single blocks, so an instruction not
  written for groups runs per block instead of computing on the wrong axis.
* The group keeps one record list: a record is a function of the instruction's
  parameters, the same for every member, except GM addresses in DMA keys, which are
  :class:`BlockVector` values and are materialised per member (:meth:`GroupContext.member`).
  Every block therefore gets the tuple list per-block execution gives it, in the same
  order, and the timing replay, the profiles and traces are unchanged.

What stays per block (single-member groups run exactly the per-block code path on a plain
:class:`CoreContext`):

* blocks split off by a :class:`Divergence`;
* mixed AIC/AIV launches, whose lanes of cores run as groups of their own, coroutines
  that meet at the cross-core flags (:mod:`npusim.mixgroups`);
* SyncAll launches whose blocks diverge: a SyncAll launch runs all its blocks as one
  group (``run_blocks(..., sync_all=True)``) that reaches each SyncAll with every member at
  once, its GM accesses compared phase by phase; a divergence, or a conflict within a
  phase, re-runs it per core (coroutines that take turns at each SyncAll).

The blocks whose races the checker tracks (the first and the last, or all with
``CheckerConfig(all_blocks=True)``) run in groups too: the group carries one UbTracker,
which sees the instructions' UB offsets, pipes and flags — the same for every member —
as a tracked block's own does. A finding stops the group (below); one the configuration
keeps as a warning splits the tracked blocks off, to warn under their own names.

Identity with per-block execution, and how it is kept:

* GM: blocks run in an order other than 0, 1, 2, ..., and the members of a group issue
  each instruction together. This changes nothing when no block touches GM bytes another
  block writes. Every GM access of the launch is logged (address, bytes, read or write);
  at the end, if any block reads or writes bytes another block writes (which includes
  atomic accumulation into shared bytes, whose float order would change), every write of
  the launch is undone and the launch runs again block after block. A transfer that
  touches rows inside a span (Fixpipe's tile of C; in a group, a DataCopy with gaps) logs
  its rows, so that blocks touching interleaved tiles of one matrix do not count as
  touching each other's bytes. Undo costs one copy of the bytes each GM store overwrites,
  taken only in lockstep launches. The checker's comparison of the blocks' GM accesses
  (:func:`npusim.ascendc.checker.check_blocks`) has nothing to find in a launch this log
  clears, and runs on the block-after-block run of one it does not.
* Errors: any :class:`KernelError` in a lockstep launch undoes it and re-runs it block
  after block, so the error (core, instruction, line) and the partial GM writes are the
  per-block ones.
* The partition a launch ends with is cached per (kernel function, blockDim, kind of core,
  checker tracking, the non-int arguments' reprs); the next such launch starts from it. A
  wrapper's ``__wrapped__`` is the kernel function (aclnn's per-call chain gates). A
  wrong entry costs a re-run (a group too coarse diverges) or speed (too fine), never a
  result.
* A cube (AIC) launch with no cached partition first probes for one (:func:`_probe`): its
  blocks run as one group timing-only (no arithmetic, no checker) until they part, and the
  launch starts from the parts. Without it, a kernel whose blocks take different numbers of
  tiles ran its group of all blocks functionally to the end of its tile loop and threw
  that run away: its first launch cost about twice its work. The probe is a guess like a
  cached entry, leaves GM as it found it, and stops early in a kernel without Mmad
  (:data:`PROBE_HORIZON`). ``NPUSIM_LOCKSTEP_PROBE=0`` turns it off.

Why a symbolic block index rather than vectorising kernels by hand: kernels stay the
Ascend C source they are, and the per-instruction Python (argument checks, queue state,
records) runs once per group instead of once per block, while numpy works on the stacked
``[G, n]`` tiles.

Force per-block execution with ``run_kernel(..., lockstep=False)`` or the environment
variable ``NPUSIM_LOCKSTEP=0`` (read at each launch).
"""
from __future__ import annotations

import contextlib
import io
import math
import operator
import os
from itertools import repeat as _repeat
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from npusim.ascendc import checker as _checker, core as _core
from npusim.ascendc.types import PIPE_M as _PIPE_M

__all__ = ["BlockVector", "Divergence", "GroupContext", "lockstep_enabled", "run_blocks"]

#: Pipes whose GM accesses are stores (UB -> GM on MTE3, Fixpipe L0C -> GM); with the
#: instruction SetValue (PIPE_S) they are the GM writes the launch logs.
_WRITE_PIPES = frozenset({"PIPE_MTE3", "PIPE_FIX"})


class Divergence(BaseException):
    """The members of a group need different values here: ``parts`` are the member
    blocks grouped by value (tuples of block indices, in block order).

    A BaseException, so that kernel code catching ``Exception`` cannot swallow it."""

    def __init__(self, parts):
        super().__init__(parts)
        self.parts = parts


def _key(value):
    """A grouping key that tells apart what per-block execution tells apart (types, the
    sign of zero, NaN payloads)."""
    if isinstance(value, (float, np.floating)):
        return (type(value), np.asarray(value).tobytes())
    if isinstance(value, (int, np.integer, np.bool_, str, bytes)):
        return (type(value), value)
    return (type(value), id(value))


def _same(a, b) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (float, np.floating)):
        return np.asarray(a).tobytes() == np.asarray(b).tobytes()
    if isinstance(a, (int, np.integer, np.bool_, str, bytes)):
        return a == b
    return False


_object_new = object.__new__


def _make(members, vals):
    """A BlockVector of ``vals`` (one per member), or the plain value all members share."""
    v0 = vals[0]
    if len(vals) > 1 and type(v0) is int:
        v1 = vals[1]
        if type(v1) is int and v1 != v0:    # the common case, two ints that differ: as
            return _new_vector(members, vals)  # _same would find, without the slice
    for v in vals[1:]:
        if not _same(v, v0):
            return _new_vector(members, vals)
    return v0


def _new_vector(members, vals):
    """``BlockVector(members, vals)``, taking a tuple and a fresh list as they are (the
    operators' results) rather than copying them."""
    if type(members) is not tuple or type(vals) is not list:
        return BlockVector(members, vals)
    bv = _object_new(BlockVector)
    bv.members = members
    bv.vals = vals
    return bv


class BlockVector:
    """An int-like with one value per member block of a group (``members``: block
    indices; ``vals``: the values, in the same order). Never uniform: a result on which
    all members agree is returned as that plain value.

    Arithmetic, bitwise operators, comparisons and numpy ufuncs with plain values and
    BlockVectors of the same group act member by member (each member's result is exactly what its
    per-block run computes). Conversions that need one value raise :class:`Divergence`.
    """

    __slots__ = ("members", "vals")

    def __init__(self, members, vals):
        self.members = tuple(members)
        self.vals = list(vals)

    # -- divergence ---------------------------------------------------------------------
    def partition(self) -> list:
        """The member blocks grouped by value, groups in order of their first member."""
        groups: dict = {}
        for m, v in zip(self.members, self.vals):
            groups.setdefault(_key(v), []).append(m)
        return sorted((tuple(g) for g in groups.values()), key=lambda g: g[0])

    def _diverge(self, *_args, **_kw):
        raise Divergence(self.partition())

    __bool__ = __index__ = __int__ = __float__ = __complex__ = __hash__ = _diverge
    __str__ = __repr__ = __format__ = __len__ = __iter__ = _diverge

    def __getattr__(self, name):
        # a method of the per-member value (numpy scalars' .item(), ...): one value needed.
        # A slot not yet set (an object being unpickled) or a dunder the language looks up
        # (copy, pickle) is no such method: AttributeError, as for any object
        if name in BlockVector.__slots__ or name.startswith("__"):
            raise AttributeError(name)
        raise Divergence(self.partition())

    def __reduce__(self):
        # pickled (a launch's records sent to a process pool, a kept capture) member by member
        return BlockVector, (self.members, self.vals)

    def describe(self) -> str:
        """Text for debugging (repr would diverge)."""
        return f"BlockVector({dict(zip(self.members, self.vals))})"

    def map(self, fn):
        """``fn`` applied to each member's value."""
        return _make(self.members, [fn(v) for v in self.vals])

    def value(self, j: int):
        """The value of the ``j``-th member."""
        return self.vals[j]

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """A numpy ufunc called on BlockVectors (``np.sqrt(x)``, ``np.float32(1) / x``):
        member by member, each member's call the one its per-block run makes. An ``out=``
        argument, a method other than the call itself (``reduce``, ``at``, ...) or a ufunc
        with several outputs needs one value: it diverges."""
        if method != "__call__" or "out" in kwargs or ufunc.nout != 1:
            raise Divergence(self.partition())
        for x in inputs:
            if type(x) is BlockVector and x.members != self.members:
                raise Divergence([(m,) for m in self.members])
        return _make(self.members, [
            ufunc(*[x.vals[j] if type(x) is BlockVector else x for x in inputs], **kwargs)
            for j in range(len(self.members))])

    # -- arithmetic ---------------------------------------------------------------------
    def _op(self, other, fn):
        if type(other) is BlockVector:
            if other.members != self.members:
                raise Divergence([(m,) for m in self.members])
            return _make(self.members, list(map(fn, self.vals, other.vals)))
        return _make(self.members, list(map(fn, self.vals, _repeat(other))))

    def _rop(self, other, fn):
        return _make(self.members, list(map(fn, _repeat(other), self.vals)))

    def __add__(self, o): return self._op(o, _add)
    def __radd__(self, o): return self._rop(o, _add)
    def __sub__(self, o): return self._op(o, _sub)
    def __rsub__(self, o): return self._rop(o, _sub)
    def __mul__(self, o): return self._op(o, _mul)
    def __rmul__(self, o): return self._rop(o, _mul)
    def __truediv__(self, o): return self._op(o, _truediv)
    def __rtruediv__(self, o): return self._rop(o, _truediv)
    def __floordiv__(self, o): return self._op(o, _floordiv)
    def __rfloordiv__(self, o): return self._rop(o, _floordiv)
    def __mod__(self, o): return self._op(o, _mod)
    def __rmod__(self, o): return self._rop(o, _mod)
    def __pow__(self, o): return self._op(o, pow)
    def __rpow__(self, o): return self._rop(o, pow)
    def __lshift__(self, o): return self._op(o, _lshift)
    def __rlshift__(self, o): return self._rop(o, _lshift)
    def __rshift__(self, o): return self._op(o, _rshift)
    def __rrshift__(self, o): return self._rop(o, _rshift)
    def __and__(self, o): return self._op(o, _and)
    def __rand__(self, o): return self._rop(o, _and)
    def __or__(self, o): return self._op(o, _or)
    def __ror__(self, o): return self._rop(o, _or)
    def __xor__(self, o): return self._op(o, _xor)
    def __rxor__(self, o): return self._rop(o, _xor)
    def __divmod__(self, o): return (self // o, self % o)
    def __rdivmod__(self, o): return (o // self, o % self)
    def __lt__(self, o): return self._op(o, _lt)
    def __le__(self, o): return self._op(o, _le)
    def __gt__(self, o): return self._op(o, _gt)
    def __ge__(self, o): return self._op(o, _ge)
    def __eq__(self, o): return self._op(o, _eq)
    def __ne__(self, o): return self._op(o, _ne)
    def __neg__(self): return self.map(lambda a: -a)
    def __pos__(self): return self.map(lambda a: +a)
    def __abs__(self): return self.map(abs)
    def __invert__(self): return self.map(lambda a: ~a)
    def __round__(self, n=None): return self.map(lambda a: round(a, n))
    def __trunc__(self): return self.map(math.trunc)
    def __floor__(self): return self.map(math.floor)
    def __ceil__(self): return self.map(math.ceil)


# the operator module's functions are the operators themselves (``operator.add(a, b)`` is
# ``a + b``), called from C: a member's result is the one its per-block run computes
_add, _sub, _mul, _truediv = operator.add, operator.sub, operator.mul, operator.truediv
_floordiv, _mod, _lshift, _rshift = (operator.floordiv, operator.mod, operator.lshift,
                                     operator.rshift)
_and, _or, _xor = operator.and_, operator.or_, operator.xor
_lt, _le, _gt, _ge, _eq, _ne = (operator.lt, operator.le, operator.gt, operator.ge,
                                operator.eq, operator.ne)


def offset_members(offset: BlockVector, address: int, itemsize: int, length: int) -> tuple:
    """``(address + offset * itemsize, max(length - offset, 0))`` for an int-valued
    BlockVector ``offset`` and plain ints: what the BlockVector operators give (each
    member's ints, a plain int where all members agree), in two list passes rather than
    four operator calls (``GlobalTensor[]`` of a group, once per copy)."""
    vals, members = offset.vals, offset.members
    addrs = list(map(_add, _repeat(address), map(_mul, vals, _repeat(itemsize))))
    rest = list(map(_sub, _repeat(length), vals))
    if min(rest) < 0:
        rest = [max(r, 0) for r in rest]
    return _make(members, addrs), _make(members, rest)


def as_int(x):
    """``int(x)``, member by member for a BlockVector."""
    if type(x) is BlockVector:
        return x.map(int)
    return int(x)


def pick(x, j: int):
    """The ``j``-th member's value of ``x`` (BlockVectors inside tuples included)."""
    t = type(x)
    if t is BlockVector:
        return x.vals[j]
    if t is tuple:
        return tuple([pick(v, j) for v in x])
    return x


def spread(x, g: int) -> list:
    """The ``g`` members' values of ``x`` (BlockVectors inside tuples included)."""
    t = type(x)
    if t is BlockVector:
        return x.vals
    if t is tuple and _has_bv(x):
        return list(zip(*[spread(v, g) for v in x]))
    return [x] * g


def _has_bv(x) -> bool:
    t = type(x)
    if t is BlockVector:
        return True
    if t is tuple:
        for v in x:
            if type(v) is BlockVector or (type(v) is tuple and _has_bv(v)):
                return True
    return False


def values(x, g: int) -> list:
    """The ``g`` members' values of ``x`` (a plain value repeated)."""
    return list(x.vals) if type(x) is BlockVector else [x] * g


def member_scalar(dtype: np.dtype, value, ndim: int):
    """``dtype.type(value)``, the scalar operand of a vector instruction; for a BlockVector
    (a value read per member, such as a row's maximum) the members' scalars as an array
    of shape ``(G, 1, ..., 1)`` (``ndim`` axes in all), each converted on its own, which
    broadcasts over the group's stacked ``[G, ...]`` operands."""
    if type(value) is not BlockVector:
        return dtype.type(value)
    out = np.array([dtype.type(v) for v in value.vals], dtype=dtype)
    return out.reshape((len(out),) + (1,) * (ndim - 1))


def collapse(members, column: np.ndarray):
    """One numpy scalar per member (``column[j]``), as a plain scalar when the members'
    bytes agree (what a scalar read returns per block)."""
    raw = column.view(np.dtype(f"u{column.dtype.itemsize}")) if column.dtype.itemsize in (
        1, 2, 4, 8) else None
    if raw is not None and (raw == raw[0]).all():
        return column[0]
    return _make(members, [column[j] for j in range(len(column))])


# -- the group's core --------------------------------------------------------------------

class GroupContext(_core.CoreContext):
    """A :class:`CoreContext` for G blocks run together (``members``, in block order).

    ``block_idx`` is a :class:`BlockVector`; the UB is ``[G, ub_size]`` and reachable only
    while a batch-aware instruction runs (``batch_ok``), and so are its cube memories
    (``[G, size]``, allocated on first use). Records, byte counts, GM stores and the GM access log
    are kept once for the group, with BlockVectors where members differ, and split per
    member by :meth:`member`.

    A group that holds a block whose races the checker tracks carries one UbTracker
    (``tracker``) for it: the members issue the same instructions on the same UB offsets
    and pipes, which is all the tracker's state depends on, so one tracker is what each
    tracked member's own would be. A finding it raises re-runs the launch block after
    block (any KernelError does); one it would keep as a warning splits the tracked
    members off (:meth:`warn`), where they warn under their own names.
    """

    is_group = True

    def __init__(self, soc, gm, ub2d: np.ndarray, members: tuple, block_num: int,
                 ub_capacity: int, core_kind: str | None = None):
        self._ub = ub2d
        super().__init__(soc, gm, ub2d, BlockVector(members, members), block_num,
                         ub_capacity, core_kind, None)
        self.members = tuple(members)
        self.size = len(members)
        self.singletons = [(m,) for m in members]
        self.patches: list = []            # (record index, record) with per-member values
        self.gm_log = []                   # (address, nbytes, is_write), addresses maybe BV
        self.undo = None                   # the launch's undo stack (set by run_blocks)
        self.alone: list = self.singletons  # the parts a warning splits the group into
        self.sync_all_group = False        # every block of a SyncAll launch (run_blocks)

    @property
    def ub(self):
        if not self.batch_ok:
            raise Divergence(self.singletons)
        return self._ub

    @ub.setter
    def ub(self, value):
        self._ub = value

    def split(self):
        """Diverge into single blocks."""
        raise Divergence(self.singletons)

    def sync_all(self) -> bool:
        """SyncAll reached by the group: True when the group is every block of a SyncAll
        launch (``run_blocks(..., sync_all=True)``), whose members all arrive here at once:
        the barrier holds, and the GM access log starts a new phase. False otherwise (the
        caller then acts as a lone block does: an error, re-run per block)."""
        if not self.sync_all_group:
            return False
        self.gm_log.append(_PHASE)
        return True

    def warn(self, message: str) -> None:
        """A warning names its core: the tracked members run alone (the others stay
        together, and split further if they warn too)."""
        raise Divergence(self.alone)

    def record(self, kind: int, pipe: int, cycles: float = 0.0, nbytes: int = 0,
               key=None, name: str = "") -> None:
        if self.scalar_debt or self.scalar_issue:
            cycles = self.issue(kind, pipe, cycles)
        rec = (kind, pipe, cycles, nbytes, key, name)
        if _has_bv(key) or type(cycles) is BlockVector or type(nbytes) is BlockVector:
            self.patches.append((len(self.records), rec))
        self.records.append(rec)
        if self.tracker is not None:
            self.tracker.on_record(kind, pipe, key)
        if self.trace_lines is not None:
            self.trace_lines.append(_core.kernel_source_line())

    def memory(self, mem: str, instruction: str = "LocalTensor") -> np.ndarray:
        """The group's ``[G, size]`` bytes of ``mem``, reachable while a batch-aware
        instruction runs (the UB, and the cube memories for the cube instructions written
        for groups); a cube memory is allocated, poisoned, the first time the group uses it,
        as a block's is."""
        if mem == _core.UB:
            return self.ub
        if not self.batch_ok:
            raise Divergence(self.singletons)
        buf = self.mems.get(mem)
        if buf is None:
            self.require_memory(mem, instruction)
            buf = self.mems[mem] = self._new_memory(mem)
        return buf

    def _new_memory(self, mem: str) -> np.ndarray:
        """The group's poisoned ``[G, size]`` ``mem``, from the launch's pool for it."""
        return _group_memory(mem, self.size, _core.memory_size(self.soc, mem),
                             self.soc.cube_block_num)

    def members_results(self) -> list:
        """What per-block execution leaves of each member: its records, counters and
        warnings (one :class:`BlockResult` per member, in member order). The GM access
        log stays the group's (``gm_log``), which :func:`cross_block_conflict` reads as it
        is."""
        g = self.size
        nread, nwritten = spread(self.bytes_read, g), spread(self.bytes_written, g)
        out = []
        template = (self.records, tuple(i for i, _ in self.patches),
                    tuple(_frozen(rec) for _, rec in self.patches))
        own = _MemberRecords(self.records, self.patches, g)
        for j, b in enumerate(self.members):
            res = BlockResult(b, self.core_kind, GroupRecords(template, j, own))
            res.bytes_read, res.bytes_written = nread[j], nwritten[j]
            res.trace_lines = list(self.trace_lines) if self.trace_lines is not None else None
            out.append(res)
        return out


#: marks a value that differs from member to member in a group's key (:func:`_frozen`)
_PER_MEMBER = object()


def _frozen(x):
    """``x`` (a record, or a field of one) with each BlockVector in it as (``_PER_MEMBER``,
    its members' values): hashable, and equal for two groups exactly when every member's
    ``spread`` value is equal."""
    t = type(x)
    if t is BlockVector:
        return (_PER_MEMBER, tuple(x.vals))
    if t is tuple:
        return tuple([_frozen(v) if type(v) is BlockVector or type(v) is tuple else v
                      for v in x])
    return x


class _MemberRecords:
    """The members' own record lists of a group, made from the group's records and its
    per-member ones (``patches``: (index, record with BlockVectors)) the first time a
    member's records are read: a launch that takes a kept replay reads none."""

    __slots__ = ("group", "patches", "size", "lists")

    def __init__(self, group: list, patches: list, size: int):
        self.group, self.patches, self.size = group, patches, size
        self.lists = None

    def of(self, j: int) -> tuple:
        """Member ``j``'s records."""
        if self.lists is None:
            spread_out = [(i, spread(rec, self.size)) for i, rec in self.patches]
            lists = []
            for j2 in range(self.size):
                recs = list(self.group)
                for i, per in spread_out:
                    recs[i] = per[j2]
                lists.append(tuple(recs))
            self.lists = lists
        return self.lists[j]


class GroupRecords(Sequence):
    """A member's records, fixed: a sequence of record tuples (a block's are a list of
    them), made when first read (:class:`_MemberRecords`), with

    * ``template``: the group's record list, the indices of the records that differ from
      member to member (their GM addresses, say), and those records as the group keeps
      them, in one hashable form for all members (:func:`_frozen`);
    * ``member``: this member's position in the group.

    The replay splits a group's records into pipe lists once and gives each member its own
    records at those indices (timing._split_member); the kept replays key a member on the
    template and its position (timing._records_key), which is why the records cannot
    change once made."""

    __slots__ = ("template", "member", "_own")

    def __init__(self, template: tuple, member: int, own: _MemberRecords):
        self.template, self.member, self._own = template, member, own

    def __len__(self) -> int:
        return len(self.template[0])

    def __getitem__(self, i):
        return self._own.of(self.member)[i]

    def __iter__(self):
        return iter(self._own.of(self.member))


class BlockResult:
    """What a block left after it ran as a member of a group (the attributes of a
    finished :class:`CoreContext` that the launch reads)."""

    def __init__(self, block_idx, core_kind, records):
        self.block_idx = block_idx
        self.core_kind = core_kind
        self.records = records
        self.warnings: list = []
        self.bytes_read = 0
        self.bytes_written = 0
        self.trace_lines = None
        self.gm_log = None             # its group keeps the GM access log (run_blocks)
        self.mix = None

    def warn(self, message: str) -> None:
        self.warnings.append(f"core {self.block_idx}: {message}")

    @property
    def name(self) -> str:
        return f"{self.core_kind} {self.block_idx}"


# -- GM access of a group and of the blocks of a lockstep launch ----------------------------

def log_gm_view(ctx, gt, view: np.ndarray, nbytes: int, instruction: str, pipe) -> None:
    """A plain block of a lockstep launch reached GM: log it, and keep the bytes a store
    is about to overwrite."""
    write = pipe in _WRITE_PIPES or instruction == "SetValue"
    ctx.gm_log.append((gt.address, nbytes, write))
    if write:
        ctx.undo.save(view)


def _member_allocations(ctx: GroupContext, gt, span: int) -> tuple:
    """Each member's GM address and allocation of ``gt``; a range of ``span`` bytes outside
    its allocation diverges into single blocks, where the per-block checks raise the
    error."""
    g = ctx.size
    addrs, alloc = values(gt.address, g), gt._alloc
    if type(alloc) is not BlockVector:
        # one allocation for all: its lowest and highest address decide (the common case,
        # a tensor the members split between them)
        if alloc is None or min(addrs) < alloc.base or max(addrs) + span > alloc.end:
            raise Divergence(ctx.singletons)
        return addrs, [alloc] * g
    allocs = alloc.vals
    for a, al in zip(addrs, allocs):
        if al is None or a < al.base or a + span > al.end:
            raise Divergence(ctx.singletons)
    return addrs, allocs


def strided_view(buf: np.ndarray, shape: tuple, strides: tuple) -> np.ndarray:
    """A writable view of the 1-D ``buf`` (GM or UB bytes, or their initialised flags) with
    ``shape`` and ``strides`` (in bytes). When ``buf`` is contiguous, numpy checks that the
    view stays inside it, and it costs a fifth of ``as_strided`` (about 0.5 µs against
    2.4 µs), which every GM transfer of a group pays."""
    if not buf.flags.c_contiguous:
        return as_strided(buf, shape=shape, strides=strides, writeable=True)
    return np.ndarray(shape, dtype=buf.dtype, buffer=buf, strides=strides)


def gm_rows(ctx: GroupContext, gt, rows: int, row: int, pitch: int, write: bool):
    """The GM rows of every member of ``ctx`` for a transfer of ``rows`` rows of ``row``
    bytes, ``pitch`` apart, from ``gt`` (a GlobalTensor whose address may differ per
    member): a ``[G, rows, row]`` view when the members' addresses are evenly spaced in one
    allocation, else a list of per-member ``[rows, row]`` views. A range outside its
    allocation diverges into single blocks, where the per-block checks raise the error.
    Stores are logged with the bytes they overwrite (the undo log)."""
    g = ctx.size
    span = (rows - 1) * pitch + row
    addrs, allocs = _member_allocations(ctx, gt, span)
    a0, alloc0 = addrs[0], allocs[0]
    # the rows of a strided transfer, so that column tiles of one matrix do not touch
    ctx.gm_log.append((gt.address, row, write, rows, pitch) if rows > 1 and pitch != row
                      else (gt.address, span, write))
    step = addrs[1] - a0 if g > 1 else 0
    # one allocation for all when gt's is not per member (_member_allocations repeats it)
    regular = step >= 0 and (type(gt._alloc) is not BlockVector
                             or all(al is alloc0 for al in allocs)) and (
        addrs == list(range(a0, a0 + step * g, step)) if step else addrs == [a0] * g)
    if regular:
        out = strided_view(alloc0.buf[a0 - alloc0.base:], (g, rows, row), (step, pitch, 1))
        if write:
            ctx.undo.save(out)
        return out
    views = []
    for a, al in zip(addrs, allocs):
        buf = al.buf[a - al.base:a - al.base + span]
        v = strided_view(buf, (rows, row), (pitch, 1))
        if write:
            ctx.undo.save(v)
        views.append(v)
    return views


def gm_spans(ctx, gt, nbytes: int, instruction: str, pipe: str, write: bool = False,
             rows: list | None = None) -> list:
    """The ``nbytes`` of GM from ``gt``'s start for each member of ``ctx`` (a group's
    members, or a plain block alone): a list of uint8 views, one per member.

    ``rows`` (stores): the (byte offset from ``gt``'s start, row bytes, pitch, row count)
    runs the access really touches inside the span; they are what the launch logs and what
    the undo log keeps, so that blocks storing interleaved tiles of one matrix (a matmul's
    C) do not count as touching each other's bytes, and undo copies no more than was
    stored. Outside a lockstep launch this is ``gt.bytes_view``; in a group a range outside
    its allocation diverges into single blocks, where the per-block checks raise the error.
    """
    if not ctx.is_group:
        if ctx.gm_log is None:
            return [gt.bytes_view(nbytes, instruction, pipe)]
        view = gt._checked_view(nbytes, instruction, pipe)
        views = [view]
    else:
        views = [al.buf[a - al.base:a - al.base + nbytes]
                 for a, al in zip(*_member_allocations(ctx, gt, nbytes))]
    if not write or rows is None:
        ctx.gm_log.append((gt.address, nbytes, write))
        if write:
            for v in views:
                ctx.undo.save(v)
        return views
    for off, row, pitch, count in rows:
        ctx.gm_log.append((gt.address + off, row, True, count, pitch))
        for v in views:
            ctx.undo.save(as_strided(v[off:], shape=(count, row), strides=(pitch, 1),
                                     writeable=True))
    return views


def ub_rows(ub2: np.ndarray, rows: int, row: int, pitch: int) -> np.ndarray:
    """``[G, rows, row]`` view of a group's ``[G, span]`` UB bytes, rows ``pitch`` apart."""
    if rows == 1:       # one row: a plain slice, the same view at a fraction of as_strided's cost
        return ub2[:, None, :row]
    return as_strided(ub2, shape=(ub2.shape[0], rows, row), strides=(ub2.strides[0], pitch, 1),
                      writeable=True)


def transfer(src_is_gm: bool, gm, ub3: np.ndarray) -> None:
    """Move the bytes of a GM <-> UB copy of a group (``gm`` from :func:`gm_rows`)."""
    if isinstance(gm, list):
        for j, v in enumerate(gm):
            if src_is_gm:
                ub3[j] = v
            else:
                v[...] = ub3[j]
    elif src_is_gm:
        ub3[...] = gm
    else:
        gm[...] = ub3


class UndoLog:
    """The bytes GM stores of a lockstep launch overwrote, to put them back.

    Copies go to an arena reused from launch to launch (fresh memory per copy would cost a
    page fault per 4 KiB, more than the copy: 0.59 s instead of about 0.05 s for the
    128 MiB output of the Add study's case 4); an arena above ``KEEP`` bytes is dropped at
    the end of the launch. A launch that outgrew the arena leaves one as large as all it
    saved, so that the next launch of the same shapes fits in one arena (growing by half
    again per overflow took a few launches); its pages are touched by that launch, so the
    memory peak is the first launch's own."""

    KEEP = 1 << 30
    _arena = np.empty(0, dtype=np.uint8)

    def __init__(self):
        self.entries: list = []            # (GM view, start in arena, end)
        self.pos = 0
        self.spill: list = []              # older arenas still holding entries

    def save(self, view: np.ndarray) -> None:
        n = view.size
        arena = UndoLog._arena
        if self.pos + n > arena.size:
            if self.pos:
                self.spill.append(arena)
            arena = UndoLog._arena = np.empty(max(arena.size * 3 // 2, n, 1 << 20), dtype=np.uint8)
            self.pos = 0
        dst = arena[self.pos:self.pos + n].reshape(view.shape)
        np.copyto(dst, view)
        self.entries.append((view, dst))
        self.pos += n

    def __len__(self) -> int:
        return len(self.entries)

    def restore(self, start: int = 0) -> None:
        """Put back what the stores since entry ``start`` overwrote, newest first."""
        entries = self.entries
        for view, old in reversed(entries[start:]):
            view[...] = old
        del entries[start:]

    def close(self) -> None:
        used = self.pos + sum(a.size for a in self.spill)
        self.entries = []
        self.spill = []
        if UndoLog._arena.size > self.KEEP or used > self.KEEP:
            UndoLog._arena = np.empty(0, dtype=np.uint8)
        elif used > UndoLog._arena.size:
            # the old arena freed first, and the new one untouched until the next launch
            # uses it: the memory peak stays this launch's
            UndoLog._arena = None
            UndoLog._arena = np.empty(used, dtype=np.uint8)


def _restore(undo: UndoLog, start: int = 0) -> None:
    undo.restore(start)


# -- which blocks touch GM another block writes ---------------------------------------------

def _log_columns(logs: dict, groups) -> tuple[list, list]:
    """The GM access logs as columns, one list per field in the entries' own order and the
    owning block last: (address, nbytes, is_write, block) of the single accesses and
    (address, nbytes, is_write, count, pitch, block) of the runs of rows.

    ``logs``: block -> its log; ``groups``: (members, log) of lockstep groups, whose entries
    hold a :class:`BlockVector` where the members differ (each member's entry is what its
    per-block run logs, as :meth:`GroupContext.members_results` spreads them): the columns
    take the members' values in one ``extend`` per field, without a tuple per member."""
    rows: list = [[], [], [], []]
    runs: list = [[], [], [], [], [], []]
    for b, log in logs.items():
        for e in log:
            cols = rows if len(e) == 3 else runs
            for col, x in zip(cols, e):
                col.append(x)
            cols[-1].append(b)
    for members, log in groups:
        g = len(members)
        for e in log:
            cols = rows if len(e) == 3 else runs
            for col, x in zip(cols, e):
                col.extend(x.vals if type(x) is BlockVector else (x,) * g)
            cols[-1].extend(members)
    return rows, runs


def _writes(logs: dict, groups) -> bool:
    """Whether an entry of the GM access logs (as :func:`cross_block_conflict` takes them)
    is a write, for some member of a group."""
    for log in (*logs.values(), *(log for _, log in groups)):
        for e in log:
            w = e[2]
            if type(w) is BlockVector:
                if any(w.vals):
                    return True
            elif w:
                return True
    return False


def cross_block_conflict(logs: dict, groups=()) -> bool:
    """Whether some block reads or writes GM bytes that another block writes.

    ``logs``: block -> list of (address, nbytes, is_write), or of (address, nbytes,
    is_write, count, pitch) for ``count`` runs of ``nbytes`` ``pitch`` apart. ``groups``:
    (members, log) of lockstep groups, their logs in group form (:func:`_log_columns`)."""
    if not _writes(logs, groups):
        return False        # (a launch that only reads, without the columns of its log)
    rows, runs = _log_columns(logs, groups)
    parts = []
    if rows[0]:
        lo, n, write, owner = (np.array(c, dtype=np.int64) for c in rows)
        parts.append(np.stack([lo, lo + n, owner, write], axis=1)[n > 0])
    if runs[0]:           # one row per run (numpy: a matmul's C tile is some hundred rows)
        r = np.array(runs, dtype=np.int64)
        lo0, row, write, count, pitch, owner = r[:, r[1] > 0]
        first = np.repeat(np.cumsum(count) - count, count)
        lo = np.repeat(lo0, count) + (np.arange(int(count.sum())) - first) * np.repeat(
            pitch, count)
        parts.append(np.stack([lo, lo + np.repeat(row, count), np.repeat(owner, count),
                               np.repeat(write, count)], axis=1))
    if not parts:
        return False
    arr = np.concatenate(parts)
    if not len(arr):
        return False
    write = arr[:, 3].astype(bool)
    if not write.any():
        return False
    base = int(arr[:, 0].min())
    lo, hi, owner = arr[:, 0] - base, arr[:, 1] - base, arr[:, 2]
    width = int(hi.max()) + 1
    if width * (int(owner.max()) + 2) >= 1 << 62:
        return True                                  # beyond the merge's range: be safe
    wl, wh, _ = _checker.merged_by_owner(lo[write], hi[write], owner[write], width)
    al, ah, _ = _checker.merged_by_owner(lo, hi, owner, width)
    # each block's accesses merged, so the number of intervals covering a byte is the number
    # of blocks touching it: a conflict is a written byte that two or more blocks touch (a
    # block's writes are among its accesses). Sweep the coverage, keep its >= 2 segments,
    # and look each write interval up among them (sorted and disjoint).
    pos = np.concatenate([al, ah])
    delta = np.concatenate([np.ones(len(al), np.int64), -np.ones(len(ah), np.int64)])
    order = np.lexsort((delta, pos))            # at one position, ends before starts
    pos, cover = pos[order], np.cumsum(delta[order])
    multi = (cover[:-1] >= 2) & (pos[1:] > pos[:-1])
    ml, mh = pos[:-1][multi], pos[1:][multi]
    if not len(ml):
        return False
    j = np.searchsorted(mh, wl, side="right")   # the first such segment ending after wl
    ok = j < len(ml)
    return bool((ml[j[ok]] < wh[ok]).any())


#: Marks a SyncAll in a group's GM access log (:meth:`GroupContext.sync_all`).
_PHASE = None


def _phases(log: list) -> list:
    """A group's GM access log cut at its SyncAlls: one list per phase."""
    out, cur = [], []
    for e in log:
        if e is _PHASE:
            out.append(cur)
            cur = []
        else:
            cur.append(e)
    out.append(cur)
    return out


# -- the launch loop --------------------------------------------------------------------------

def lockstep_enabled(flag: bool | None) -> bool:
    """``flag`` if given, else the environment: ``NPUSIM_LOCKSTEP=0`` forces per-block."""
    if flag is not None:
        return bool(flag)
    return os.environ.get("NPUSIM_LOCKSTEP", "1").strip().lower() not in ("0", "false", "no",
                                                                       "off")


#: (kernel, blockDim, kind, tracking, argument key) -> (partition, per-block only)
_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 256


def _cache_key(kernel, block_dim, kind, config, args):
    kernel = getattr(kernel, "__wrapped__", kernel)     # a wrapper made per call (a chain gate)
    parts = []
    for a in args:
        if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
            parts.append("int")          # a GM address (or a count: a miss costs a re-run)
        else:
            try:
                parts.append(repr(a))
            except Exception:            # noqa: BLE001 - an unprintable argument: no caching
                return None
    return (kernel, block_dim, kind, config.enabled, config.all_blocks, tuple(parts))


#: the bytes behind the groups' UBs, kept from launch to launch (see _group_ub)
_UB_POOL = {"buf": np.empty(0, dtype=np.uint8)}


def _pool(buf: np.ndarray | None, need: int, floor: int) -> np.ndarray:
    """A pool of at least ``need`` bytes: ``buf`` when it is large enough, else a new one of
    at least ``floor`` bytes (and twice the old size), every page of it touched once.

    Why the floor and the touch: how many blocks a group holds can depend on a launch's
    data (the blocks that write GM another block reads run apart), so a pool grown to each
    launch's need would reach its size only when the widest group happens to come, and a
    long run's resident memory would step up then, thousands of launches in
    (``benchmarks/bench_soak.py``). Sized at once for the SoC's cores of that kind (the
    usual blockDim) and touched, the pool's memory is what it will stay from its first
    use; a launch of more blocks than cores grows it again, doubling."""
    if buf is not None and buf.size >= need:
        return buf
    size = max(need, floor, 2 * (0 if buf is None else buf.size))
    buf = np.empty(size, dtype=np.uint8)
    buf.fill(_core.UB_POISON)
    return buf


def _group_ub(members: int, ub_size: int, cores: int = 0) -> np.ndarray:
    """A ``[members, ub_size]`` UB holding the poison pattern, as a launch's UB starts.

    The groups of a launch run one after another, and nothing of a group's UB outlives its
    run (its results are records and GM bytes), so every group uses the same bytes, kept
    between launches: a fresh array of some megabytes per group costs the kernel's page
    faults each time (at 2^22 elements, 48 blocks: about a sixth of the functional run).
    The pool holds at least ``cores`` UBs (the SoC's vector cores; :func:`_pool`)."""
    need = members * ub_size
    buf = _UB_POOL["buf"] = _pool(_UB_POOL["buf"], need, cores * ub_size)
    ub2 = buf[:need].reshape(members, ub_size)
    ub2.fill(_core.UB_POISON)
    return ub2


def _group_context(cls, soc, gm, part: tuple, block_dim: int, capacity, kind, config, undo,
                   trace_lines):
    """A context of ``cls`` (:class:`GroupContext` or a subclass) for the blocks ``part``
    of a launch of ``block_dim``, on the group UB (:func:`_group_ub`), with the launch's
    checker configuration and undo log; ``trace_lines`` a list that keeps its spans'
    kernel lines, or None. No tracker: the caller adds one where a block is tracked."""
    ctx = cls(soc, gm, _group_ub(len(part), soc.ub_size, soc.vector_block_num), part,
              block_dim, capacity, kind)
    ctx.trace_lines = trace_lines
    ctx.checker_config = config
    ctx.undo = undo
    return ctx


#: the bytes behind the groups' cube memories (L1, L0A, ...), kept like the UB's
_MEM_POOL: dict = {}


def _group_memory(mem: str, members: int, size: int, cores: int = 0) -> np.ndarray:
    """A ``[members, size]`` poisoned ``mem`` for a group (one pool per memory: the groups of
    a launch run one after another, as for :func:`_group_ub`; at least ``cores`` of them,
    the SoC's cube cores)."""
    need = members * size
    buf = _MEM_POOL[mem] = _pool(_MEM_POOL.get(mem), need, cores * size)
    out = buf[:need].reshape(members, size)
    out.fill(_core.UB_POISON)
    return out


def _apart(part: tuple, tracked) -> list:
    """``part``'s tracked blocks alone, the others together."""
    alone = [(b,) for b in part if tracked(b)]
    rest = tuple(b for b in part if not tracked(b))
    return sorted(alone + ([rest] if rest else []), key=lambda p: p[0])


def _order(parts: list) -> list:
    """Groups first (a group that splits into single blocks then costs no single block
    run twice), then single blocks, each kind in block order. The order blocks run in
    changes no result: blocks that touch GM another block writes re-run the launch block
    after block (:func:`cross_block_conflict`)."""
    return sorted(parts, key=lambda p: (len(p) == 1, p[0]))


#: Cube (AIC) launches whose groups no earlier launch found probe for them first
#: (:func:`_probe`); the environment variable ``NPUSIM_LOCKSTEP_PROBE=0`` (read at each
#: launch) turns it off too.
PROBE = True
#: records a probe runs without a Mmad before it stops (:class:`_ProbeContext`)
PROBE_HORIZON = 256


def probing() -> bool:
    """Whether cube launches probe for their groups (:data:`PROBE`, the environment)."""
    return PROBE and os.environ.get("NPUSIM_LOCKSTEP_PROBE", "1") != "0"


class _Unprofitable(BaseException):
    """A probe that skips no Mmad: timing-only saves it little, so it stops."""


class _ProbeContext(GroupContext):
    """The group a probe runs: it stops (:class:`_Unprofitable`) once it has issued
    :data:`PROBE_HORIZON` records with no Mmad among them (a kernel of copies costs about
    as much timing-only as functionally: a probe would double its first launch)."""

    mmad = False

    def record(self, kind: int, pipe: int, cycles: float = 0.0, nbytes: int = 0,
               key=None, name: str = "") -> None:
        super().record(kind, pipe, cycles, nbytes, key, name)
        if not self.mmad:
            self.mmad = pipe == _PIPE_M
            if not self.mmad and len(self.records) >= PROBE_HORIZON:
                raise _Unprofitable()


def _probe(kernel, args, block_dim, end_block, soc, gm, capacity, kind, config):
    """The groups to start a launch with, found by running its blocks together timing-only
    (their arithmetic skipped: :mod:`npusim.ascendc.timing_only`; no checker) until they
    part: the parts of the first divergence, or every block when none comes. None when the
    kernel cannot run timing-only or raises anything: the launch then starts from one group
    of every block, as without the probe.

    Why: the launch finds its groups by running them, and a group that parts throws its
    run away (GM is put back) and runs each part from the start. A kernel whose blocks take
    different numbers of tiles parts at its tile loop's end, so its first launch in a
    process ran about twice its work (the basic-API cube kernel at 8192^3: 24 blocks for
    85 tiles, then 8 and 16 blocks again from the start). Timing-only, a cube kernel's
    group runs in about a fifth of its functional time (Mmad is most of that), so the
    first launch pays that fifth instead; a kernel whose blocks never part pays it for
    nothing (its groups are then known: later launches do not probe). A kernel that issues
    no Mmad in its first :data:`PROBE_HORIZON` records (copies: about as costly either
    way) is not probed further.

    Only a guess: the launch checks every group it runs as it always does (a part that
    parts again splits there), so a wrong guess costs time, never a result. It leaves no
    trace: GM's bytes (the launch's undo log) and its spans of uncomputed bytes are put
    back, and what the kernel prints is dropped; the kernel's Python runs once more (as it
    does for every group that parts)."""
    from npusim.ascendc import timing_only as _to
    if _to.ACTIVE or getattr(getattr(kernel, "__wrapped__", kernel), "npusim_timing_only",
                             True) is False:
        return None
    spans = getattr(gm, "uncomputed", None)
    saved = None if spans is None else (list(spans.starts), list(spans.ends))
    undo = UndoLog()
    part = tuple(range(block_dim))
    try:
        # what the kernel prints (printf, DumpTensor) is printed by the launch proper
        with _to.launch(True), contextlib.redirect_stdout(io.StringIO()):
            ctx = _group_context(_ProbeContext, soc, gm, part, block_dim, capacity, kind,
                                 config, undo, None)
            _core.set_current_core(ctx)
            try:
                kernel(*args)
                end_block(ctx)
            except Divergence as div:
                return _order(list(div.parts))
            return [part]
    except (Exception, _Unprofitable):   # noqa: BLE001 - an error: the launch meets it
        return None
    finally:
        _core.set_current_core(None)
        _restore(undo)
        undo.close()
        if saved is not None:
            spans.starts[:], spans.ends[:] = saved
        elif getattr(gm, "uncomputed", None) is not None:
            gm.uncomputed = None


def run_blocks(kernel, args, block_dim: int, new_context, end_block, soc, gm, capacity,
               keep_spans: bool, kind, config, sync_all: bool = False):
    """Run the blocks of a launch in lockstep groups.

    ``new_context(b, ub)`` makes block ``b``'s plain context (checker attached when it is
    tracked); ``end_block(ctx)`` runs the end-of-kernel checks and releases the block's
    state. Returns the per-block results (contexts, or :class:`BlockResult` for members of
    groups), in block order — or None when the launch must run block after block instead
    (it then left GM as it found it): a KernelError, or blocks touching GM another block
    writes.

    ``sync_all``: the kernel calls SyncAll (a launch with ``sync_all=True``). Every block
    then runs in one group, which reaches each SyncAll with all its members at once, so
    the barrier holds as it is reached and phase n of every block runs before phase n + 1
    of any, as the per-core coroutines take turns. GM bytes a block touches that another
    writes are compared within each phase only (what the barrier orders is no conflict).
    Blocks that diverge cannot run one group after another across a barrier: the launch
    then runs per core (None).
    """
    def tracked(b):
        return _checker.tracks(config, b, block_dim)

    key = _cache_key(kernel, block_dim, kind, config, args)
    if sync_all and key is not None:
        key = key + ("SyncAll",)
    cached = _CACHE.get(key) if key is not None else None
    if cached is not None:
        _CACHE.move_to_end(key)
        parts, per_block = cached
        if per_block or all(len(p) == 1 for p in parts):
            return None
        pending = _order(list(parts))
    else:
        pending = [tuple(range(block_dim))]
        if block_dim == 1:
            return None
        if kind == _core.AIC and not sync_all and probing():
            pending = _probe(kernel, args, block_dim, end_block, soc, gm, capacity, kind,
                             config) or pending
    undo = UndoLog()
    results: dict = {}
    final: list = []
    group_logs: list = []                 # (members, GM access log) of the groups that ran
    ub1 = np.empty(soc.ub_size, dtype=np.uint8)
    try:
        while pending:
            part = pending.pop(0)
            start = len(undo)
            if len(part) == 1:
                b = part[0]
                ub1.fill(_core.UB_POISON)
                ctx = new_context(b, ub1)
                ctx.gm_log, ctx.undo = [], undo
                _core.set_current_core(ctx)
                kernel(*args)
                end_block(ctx)
                results[b] = ctx
                final.append(part)
                continue
            ctx = _group_context(GroupContext, soc, gm, part, block_dim, capacity, kind,
                                 config, undo, [] if keep_spans else None)
            if any(tracked(b) for b in part):
                ctx.tracker = _checker.UbTracker(soc.ub_size, soc)
                ctx.alone = _apart(part, tracked)
            ctx.sync_all_group = sync_all
            _core.set_current_core(ctx)
            try:
                kernel(*args)
                end_block(ctx)
            except Divergence as div:
                _core.set_current_core(None)
                _restore(undo, start)
                pending = _order(list(div.parts) + pending)
                if sync_all or all(len(p) == 1 for p in final + pending):
                    # nothing left to run together: block after block is the same work
                    # without the undo log (a kernel whose first instruction diverges)
                    _restore(undo)
                    undo.close()
                    if key is not None:
                        _CACHE[key] = ([(b,) for b in range(block_dim)], True)
                    return None
                continue
            for b, res in zip(part, ctx.members_results()):
                results[b] = res
            group_logs.append((part, ctx.gm_log))
            final.append(part)
    except Exception:      # noqa: BLE001 - a KernelError (or any error): per block decides
        _restore(undo)
        undo.close()
        return None
    finally:
        _core.set_current_core(None)
    logs = {b: r.gm_log for b, r in results.items() if r.gm_log is not None}
    if sync_all:          # one group of every block (above): compare phase by phase
        conflict = any(cross_block_conflict({}, [(part, phase)])
                       for part, log in group_logs for phase in _phases(log))
    else:
        conflict = cross_block_conflict(logs, group_logs)
    if key is not None:
        _CACHE[key] = (sorted(final, key=lambda p: p[0]), conflict)
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    if conflict:
        _restore(undo)
    undo.close()
    if conflict:
        return None
    for r in results.values():
        r.gm_log = None
        if hasattr(r, "undo"):
            r.undo = None
    return [results[b] for b in range(block_dim)]
