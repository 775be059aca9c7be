"""Timing-only execution: run a kernel for its records, not its numbers.

A launch in timing-only mode (``run_kernel(..., functional=False)``, ``NPUSIM_TIMING_ONLY=1``,
``npusim.Device(timing_only=True)``, ``aclnn.runtime.set_timing_only(True)``) runs the
kernel's Python as a functional launch does — every argument check, queue, flag, DMA
record, the checker's address and race checks, the lockstep engine — but the arithmetic
instructions skip their numpy work: the element-wise vector family (both forms), Cast, the
reductions and Mmad record what they would have done and leave their destination bytes as
they were. The records, the timing replay, the profile and the checker's findings are those
of a functional run, because none of them reads a computed value; only the bytes of the
results are not computed. Copies still move bytes, so input data (an index list, a length
table) keeps its values.

What a kernel may not do in this mode is read a value that was not computed through the
scalar unit: ``LocalTensor.GetValue`` / ``GlobalTensor.GetValue`` of such bytes, or
``GetGatherMaskRemainCount`` after a GatherMask over them, would hand garbage to the
kernel's control flow (a data-dependent branch, a loop count, an address), and the timing
would no longer be the kernel's. Those calls raise :class:`TimingOnlyError` (a
KernelError naming the kernel's line) instead: run such a kernel functionally.

Which bytes are "not computed" is tracked conservatively (a byte may be flagged that a
functional run would have computed, never the other way round):

* UB: one flag per byte per core (a lockstep group shares one: its members run the same
  instructions on the same offsets; a member's GM load that is not computed flags the
  group's bytes). A skipped instruction flags the bytes it would have written (its
  destination's span); a copy into UB sets them from its source (GM or UB); SetValue
  clears the element it writes.
* The cube memories: one flag per core, set once any Mmad is skipped or a cube load reads
  flagged GM; every store from a cube memory to GM (Fixpipe, DataCopy) of such a core then
  flags the bytes it writes.
* GM: byte spans per device (:class:`Spans`, kept on the GlobalMemory), added by stores
  whose source is flagged and by any store of a cube core that is flagged; a host write
  (``GlobalMemory.write``) or a ``free`` clears its range. A launch run again block after
  block (a lockstep divergence or undo) may leave spans its first run added: more flags,
  never fewer.
"""
from __future__ import annotations

import bisect
import contextlib
import os

import numpy as np

from npusim.errors import KernelError

#: True while a timing-only launch runs (launches run one at a time, under
#: npusim.runlock.LOCK).
ACTIVE = False

#: The environment variable that makes launches timing-only by default.
ENV = "NPUSIM_TIMING_ONLY"

_TRUE = ("1", "true", "yes", "on")


class TimingOnlyError(KernelError):
    """A timing-only launch reached a value it did not compute (see the module notes)."""

    category = "TimingOnly"


def env_timing_only() -> bool:
    """Whether ``NPUSIM_TIMING_ONLY`` asks for timing-only launches (1/true/yes/on)."""
    return os.environ.get(ENV, "").strip().lower() in _TRUE


def resolve(functional: bool | None) -> bool:
    """Whether a launch is timing-only: ``not functional`` when given, else the
    environment (:data:`ENV`)."""
    if functional is not None:
        return not functional
    return env_timing_only()


@contextlib.contextmanager
def launch(timing_only: bool):
    """Set :data:`ACTIVE` for one launch."""
    global ACTIVE
    saved, ACTIVE = ACTIVE, bool(timing_only)
    try:
        yield
    finally:
        ACTIVE = saved


# -- values read through the scalar unit --------------------------------------------------------
class Uncomputed:
    """What ``GetValue`` returns for bytes a timing-only launch did not compute.

    Arithmetic with it (Python operators, numpy ufuncs, comparisons) gives it again, so a
    kernel may compute with such a value and hand it to an instruction as its scalar
    operand (the instruction skips its arithmetic anyway). Anything that needs the actual
    value — a branch (``bool``), a loop bound or an address (``int``, ``index``),
    ``float``, formatting, a method of the value — raises :class:`TimingOnlyError` at the
    kernel's line: the kernel's control flow would depend on data that was not computed.
    There is one instance, :data:`UNCOMPUTED`.
    """

    __slots__ = ()

    def _refuse(self, *_args, **_kw):
        origin = f" (read by {_ORIGIN[0]})" if _ORIGIN[0] else ""
        raise TimingOnlyError(
            "GetValue", "timing-only mode cannot run this kernel: a value it read through the "
            f"scalar unit{origin} was not computed by this launch (timing-only skips the "
            "arithmetic), and here the kernel needs the value itself (a branch, a loop bound, "
            "an index or a conversion); run it functionally (functional=True, or unset "
            f"{ENV})", pipe="PIPE_S")

    __bool__ = __index__ = __int__ = __float__ = __complex__ = _refuse
    __str__ = __format__ = __len__ = __iter__ = _refuse

    def __repr__(self) -> str:
        return "UNCOMPUTED"

    def __getattr__(self, name):
        self._refuse()

    def _same(self, *_args, **_kw):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _same
    __pow__ = __rpow__ = __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = _same
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _same
    __lt__ = __le__ = __gt__ = __ge__ = _same
    __neg__ = __pos__ = __abs__ = __invert__ = __round__ = __trunc__ = _same
    __floor__ = __ceil__ = _same

    def __eq__(self, other):
        return self

    def __ne__(self, other):
        return self

    __hash__ = object.__hash__

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or "out" in kwargs:
            self._refuse()
        return self if ufunc.nout == 1 else (self,) * ufunc.nout


#: The value of bytes a timing-only launch did not compute.
UNCOMPUTED = object.__new__(Uncomputed)
#: Where the last such value was read (a kernel line), for the error message.
_ORIGIN = [None]


def read_value(line_of):
    """UNCOMPUTED, remembering ``line_of()`` as where it was read."""
    _ORIGIN[0] = line_of()
    return UNCOMPUTED


def holds_uncomputed(value) -> bool:
    """Whether ``value`` is UNCOMPUTED (for any member, when it is a BlockVector)."""
    if value is UNCOMPUTED:
        return True
    from npusim import lockstep as _lockstep     # local: lockstep imports the ascendc core
    return type(value) is _lockstep.BlockVector and any(v is UNCOMPUTED for v in value.vals)


def set_value_gm(ctx, gt, isz: int) -> None:
    """GlobalTensor.SetValue of an UNCOMPUTED value: nothing stored, the bytes flagged."""
    flag_gm(ctx, gt, isz)


def scalar(dtype, value):
    """``dtype.type(value)``, or 0 of that type for an :data:`UNCOMPUTED` value (in a
    timing-only launch an instruction's scalar operand may be one)."""
    return dtype.type(0) if value is UNCOMPUTED else dtype.type(value)


# -- GM spans --------------------------------------------------------------------------------
class Spans:
    """Disjoint sorted byte ranges ``[start, end)`` (the GM bytes not computed)."""

    __slots__ = ("starts", "ends")

    def __init__(self):
        self.starts: list[int] = []
        self.ends: list[int] = []

    def __bool__(self) -> bool:
        return bool(self.starts)

    def any(self, lo: int, hi: int) -> bool:
        """Whether some byte of ``[lo, hi)`` is in a span."""
        if hi <= lo or not self.starts:
            return False
        i = bisect.bisect_right(self.starts, lo) - 1
        if i >= 0 and self.ends[i] > lo:
            return True
        j = i + 1
        return j < len(self.starts) and self.starts[j] < hi

    def add(self, lo: int, hi: int) -> None:
        if hi <= lo:
            return
        starts, ends = self.starts, self.ends
        i = bisect.bisect_left(ends, lo)          # first span ending at or after lo
        j = bisect.bisect_right(starts, hi)       # spans starting at or before hi
        if i < j:
            lo = min(lo, starts[i])
            hi = max(hi, ends[j - 1])
        starts[i:j] = [lo]
        ends[i:j] = [hi]

    def remove(self, lo: int, hi: int) -> None:
        if hi <= lo or not self.starts:
            return
        starts, ends = self.starts, self.ends
        i = bisect.bisect_right(ends, lo)         # first span ending after lo
        j = bisect.bisect_left(starts, hi)        # spans starting before hi
        if i >= j:
            return
        keep_s, keep_e = [], []
        if starts[i] < lo:
            keep_s.append(starts[i])
            keep_e.append(lo)
        if ends[j - 1] > hi:
            keep_s.append(hi)
            keep_e.append(ends[j - 1])
        starts[i:j] = keep_s
        ends[i:j] = keep_e


def gm_spans(gm) -> Spans:
    spans = getattr(gm, "uncomputed", None)
    if spans is None:
        spans = gm.uncomputed = Spans()
    return spans


def host_wrote(gm, lo: int, hi: int) -> None:
    """A host write (or free) of GM ``[lo, hi)``: those bytes hold real values again."""
    spans = getattr(gm, "uncomputed", None)
    if spans:
        spans.remove(lo, hi)


def device_copied(gm, dst: int, src: int, count: int) -> None:
    """A device-to-device copy (aclrtMemcpy): the destination takes the source's flags
    (as one span: flagged if any source byte is)."""
    spans = getattr(gm, "uncomputed", None)
    if not spans:
        return
    if spans.any(src, src + count):
        spans.add(dst, dst + count)
    else:
        spans.remove(dst, dst + count)


def _addresses(ctx, address) -> list:
    """The GM address of every member (one for a single block)."""
    if ctx.is_group:
        from npusim import lockstep as _lockstep
        return _lockstep.values(address, ctx.size)
    return [address]


def gm_flagged(ctx, gt, span: int) -> bool:
    """Whether any member's ``span`` bytes from GlobalTensor ``gt``'s start are flagged."""
    spans = getattr(ctx.gm, "uncomputed", None)
    if not spans:
        return False
    return any(spans.any(int(a), int(a) + span) for a in _addresses(ctx, gt.address))


def flag_gm(ctx, gt, span: int) -> None:
    spans = gm_spans(ctx.gm)
    for a in _addresses(ctx, gt.address):
        spans.add(int(a), int(a) + span)


# -- UB flags --------------------------------------------------------------------------------
def ub_flags(ctx) -> np.ndarray:
    """The core's (or group's) UB flags, one bool per byte (made on first use)."""
    flags = ctx.__dict__.get("ub_uncomputed")
    if flags is None:
        flags = ctx.ub_uncomputed = np.zeros(ctx.soc.ub_size, dtype=bool)
    return flags


def flag(ctx, tensor, lo: int, hi: int) -> None:
    """A skipped instruction leaves bytes ``[lo, hi)`` (offsets in ``tensor``'s memory)
    not computed."""
    if tensor.mem == "UB":
        if hi > lo:
            ub_flags(ctx)[max(lo, 0):hi] = True
    else:
        ctx.cube_uncomputed = True


def flag_elements(ctx, tensor, count: int) -> None:
    """:func:`flag` of the first ``count`` elements of ``tensor``."""
    flag(ctx, tensor, tensor.offset, tensor.offset + int(count) * tensor.dtype.itemsize)


def flag_index(ctx, tensor, idx: np.ndarray) -> None:
    """:func:`flag` of the elements of ``tensor`` at element offsets ``idx`` (their span)."""
    if idx.size:
        isz = tensor.dtype.itemsize
        flag(ctx, tensor, tensor.offset + int(idx.min()) * isz,
             tensor.offset + (int(idx.max()) + 1) * isz)


def ub_flagged(ctx, lo: int, hi: int) -> bool:
    flags = ctx.__dict__.get("ub_uncomputed")
    return flags is not None and hi > lo and bool(flags[max(lo, 0):hi].any())


def set_ub(ctx, lo: int, hi: int, value: bool) -> None:
    """A copy into UB ``[lo, hi)`` whose source is (``value``) or is not flagged."""
    if hi <= lo:
        return
    if value:
        ub_flags(ctx)[lo:hi] = True
    else:
        flags = ctx.__dict__.get("ub_uncomputed")
        if flags is not None:
            flags[lo:hi] = False


def gm_to_ub(ctx, gt, gm_span: int, ub_lo: int, ub_hi: int) -> None:
    """A GM -> UB copy: the UB bytes take the flag of the GM bytes read."""
    set_ub(ctx, ub_lo, ub_hi, gm_flagged(ctx, gt, gm_span))


def ub_to_gm(ctx, gt, gm_span: int, ub_lo: int, ub_hi: int) -> None:
    """A UB -> GM store: flagged UB bytes flag the GM bytes written (a store of computed
    bytes leaves flags as they are: see the module notes)."""
    if ub_flagged(ctx, ub_lo, ub_hi):
        flag_gm(ctx, gt, gm_span)


def copy_gm_ub(ctx, src_is_gm: bool, gt, gm_span: int, ub_lo: int, ub_hi: int) -> None:
    """A DataCopy / DataCopyPad between GM and UB: :func:`gm_to_ub` or :func:`ub_to_gm`."""
    if src_is_gm:
        gm_to_ub(ctx, gt, gm_span, ub_lo, ub_hi)
    else:
        ub_to_gm(ctx, gt, gm_span, ub_lo, ub_hi)


def cube_to_gm(ctx, gt, gm_span: int) -> None:
    """A store from a cube memory (Fixpipe, DataCopy from L1/L0C) to GM."""
    if ctx.__dict__.get("cube_uncomputed"):
        flag_gm(ctx, gt, gm_span)


def gm_to_cube(ctx, gt, gm_span: int) -> None:
    """A load from GM into a cube memory."""
    if gm_flagged(ctx, gt, gm_span):
        ctx.cube_uncomputed = True


def _refuse(instruction: str, what: str) -> TimingOnlyError:
    return TimingOnlyError(
        instruction, f"timing-only mode cannot run this kernel: it reads {what}, which this "
        "launch did not compute (timing-only skips the arithmetic, so the value would be "
        "garbage steering the kernel's control flow); run it functionally "
        f"(functional=True, or unset {ENV})", pipe="PIPE_S")


def check_ub_read(ctx, lo: int, hi: int, instruction: str) -> None:
    """TimingOnlyError if UB ``[lo, hi)`` holds bytes this launch did not compute."""
    if ub_flagged(ctx, lo, hi):
        raise _refuse(instruction, f"UB [{lo}, {hi})")


def check_gm_read(ctx, gt, nbytes: int, instruction: str) -> None:
    """TimingOnlyError if GM bytes at ``gt`` were not computed."""
    if gm_flagged(ctx, gt, nbytes):
        addrs = _addresses(ctx, gt.address)
        raise _refuse(instruction, f"GM 0x{int(addrs[0]):x}+{nbytes} B")


__all__ = ["ACTIVE", "ENV", "TimingOnlyError", "Uncomputed", "UNCOMPUTED", "Spans", "resolve", "env_timing_only",
           "launch", "host_wrote"]
