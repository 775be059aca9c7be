"""unitFlag: the fine-grained hand-off of L0C between Mmad (PIPE_M) and Fixpipe (PIPE_FIX).

The documented semantics (Mmad.md and Fixpipe.md, unitFlag rows; asc-devkit sample
mmad_unitflag and its README):

* "unitFlag是一种Mmad指令和Fixpipe指令细粒度的并行，使能该功能后，硬件每计算完一个分形，
  计算结果就会被搬出": each 512 B unit of L0C has a flag saying whether it may be read or
  written; with unitFlag on, Fixpipe moves a unit out as soon as the Mmad has finished it.
* Values: 0 off, 2 on without resetting the unit flags when the instruction ends, 3 on and
  resetting them; 1 is reserved. The sample's pattern: the k-loop's Mmads take 2, the
  last takes 3 (which releases the units to Fixpipe), the Fixpipe takes 3 (which hands
  the units back to the next Mmad). "开启该功能时，须将Mmad指令和Fixpipe指令的unitFlag值设置为2或3":
  both or neither.

How npusim renders it:

* Numerics: none changes; the bytes are those of the flag-synchronised form.
* Sync: an Mmad with unitFlag 3 releases the L0C bytes it wrote; the next Fixpipe with
  unitFlag 2/3 reading them waits for that release (a sync edge, for the checker as for
  the timing model, so no M_FIX flag is needed); a Fixpipe with unitFlag 3 hands the bytes
  back, and the next Mmad with unitFlag 2/3 writing them waits for that (no FIX_M flag).
* Timing: the cube is taken to finish the output fractals one after another, each after
  its k steps [R: the order is not published]; a unitFlag-3 Mmad's first 16 x 16 output
  fractal is ready ``mmad_head_cycles + ceil(k / k0) * k0 / k_per_cycle`` cycles after it
  starts, and the paired Fixpipe starts then (not when the Mmad ends). It cannot end
  before the Mmad does: after its own transfer it waits for the Mmad's end and then moves
  the last fractal (``ceil(256 / fixpipe_elements_per_cycle)`` cycles). So Fixpipe ends at
  ``max(first ready + its cost, Mmad end + last fractal)``: M and FIX overlap.
* Hand-back, unit by unit: a unitFlag-3 Fixpipe gives each unit back as it moves it out,
  in the order the Mmad filled them [R: the order is not published], so the next Mmad
  writing those bytes with unitFlag 2/3 starts when the Fixpipe starts moving (its first
  fractal takes ``mmad_head_cycles`` + its k steps, longer than one unit's move), and only
  its last fractal waits for the Fixpipe's end. M and FIX overlap across tiles that share
  one L0C buffer, as within one.
* Profile: the FIX time of a unitFlag Fixpipe includes its waits for units (msprof
  counts a Fixpipe from issue to end, waiting for unit flags included); the Mmad is
  recorded as two spans ("Mmad" until its first fractal, "Mmad (unitFlag)" after).
* Checker (category Sync, at the offending line): a unitFlag Fixpipe reading L0C that no
  unitFlag-3 Mmad released (a hang on hardware: the unit flags it waits for are never
  set); a unitFlag-0 Fixpipe or Mmad on L0C another instruction holds under unitFlag
  (mismatched pair); a unitFlag Mmad writing L0C a unitFlag-2 Fixpipe left readable
  (a hang); at the kernel's end, a unitFlag Mmad whose L0C no unitFlag Fixpipe read.
"""
from __future__ import annotations

from npusim.ascendc import checker
from npusim.ascendc import core as _core
from npusim.ascendc.cube.common import BLOCK_CUBE, ceil_div, k0_of
from npusim.ascendc.types import PIPE_FIX, PIPE_M
from npusim.errors import LimitError, SyncError, kernel_source_line

_SRC = "Mmad.md / Fixpipe.md unitFlag rows; mmad_unitflag sample"


class _Hold:
    """L0C bytes [lo, hi) held under unitFlag: by an Mmad (state "acc": unitFlag 2,
    not released; "released": unitFlag 3) or by a Fixpipe (state "read": unitFlag 3,
    handed back once it ends; "readable": unitFlag 2, flags left set)."""

    __slots__ = ("lo", "hi", "state", "seq", "line", "flag")

    def __init__(self, lo, hi, state, seq, line, flag):
        self.lo, self.hi, self.state, self.seq, self.line, self.flag = lo, hi, state, seq, line, flag


class _State:
    __slots__ = ("holds", "seq", "handback")

    def __init__(self):
        self.holds: list[_Hold] = []
        self.seq = 0
        self.handback = None      # the Fixpipe hand-off the next Mmad record waits on


def _state(ctx) -> _State:
    st = getattr(ctx, "unit_flags", None)
    if st is None:
        st = ctx.unit_flags = _State()
    return st


def check_value(instruction: str, field: str, value, pipe: str) -> int:
    v = int(value)
    if v not in (0, 2, 3):
        raise LimitError(instruction, f"{field} = {v}: 0 (off), 2 (on, flags kept) or 3 (on, "
                         f"flags reset); 1 is reserved ({_SRC})", pipe=pipe)
    return v


def _overlapping(st: _State, lo: int, hi: int) -> list:
    return [h for h in st.holds if h.lo < hi and lo < h.hi]


def _report(ctx, instruction: str, pipe: str, text: str, line: str | None = None) -> None:
    checker.report(ctx, SyncError(instruction, text, pipe=pipe, line=line))


# -- Mmad ------------------------------------------------------------------------------------

def before_mmad(ctx, flag: int, lo: int, hi: int) -> None:
    """Mmad writing L0C [lo, hi) with ``flag``, before it touches L0C: wait for the
    Fixpipes that hold the bytes under unitFlag 3 (the hand-back); report mismatches."""
    st = _state(ctx)
    st.handback = None
    for h in _overlapping(st, lo, hi):
        if h.state == "read":
            st.holds.remove(h)
            if flag:      # the unit flags say "writable" as that Fixpipe moves each unit out
                ctx.record(_core.WAIT, PIPE_M, 0.0, 0, ("unitfree", h.seq, 0), "unitFlag")
                st.handback = h.seq
                if ctx.tracker is not None:
                    # the checker: the unit flags order every unit's rewrite after its read,
                    # so the whole write comes after the Fixpipe's (its last unit's edge)
                    ctx.tracker.on_record(_core.WAIT, PIPE_M, ("unitfree", h.seq, 1))
        elif h.state == "readable":
            st.holds.remove(h)
            if flag:
                _report(ctx, "Mmad", "PIPE_M", f"Mmad with unitFlag {flag} writes L0C [{h.lo}, "
                        f"{h.hi}) that the Fixpipe at {h.line} read with unitFlag 2, which leaves "
                        "the unit flags set (readable): the Mmad waits for them forever, a hang "
                        "on hardware; give the last Fixpipe unitFlag 3 "
                        f"({_SRC})")
        elif flag == 0:
            st.holds.remove(h)
            _report(ctx, "Mmad", "PIPE_M", f"Mmad with unitFlag 0 writes L0C [{h.lo}, {h.hi}) "
                    f"that the Mmad at {h.line} holds under unitFlag {h.flag}: a unitFlag "
                    "hand-off needs unitFlag on every Mmad of the tile (2, and 3 on the last "
                    f"k step) and on its Fixpipe ({_SRC})")


def record_mmad(ctx, flag: int, lo: int, hi: int, cycles: float, m: int, n: int, k: int,
                dtype) -> None:
    """The Mmad's record(s) (module docstring): one OP without unitFlag or with 2; with 3
    the L0C units are released as the fractals finish (the first after ``mmad_head_cycles
    + one fractal's k steps``, the rest at the end); after a unitFlag-3 Fixpipe's
    hand-back (:func:`before_mmad`) its last fractal waits for that Fixpipe's last unit."""
    st = _state(ctx)
    handback, st.handback = st.handback, None
    total = float(cycles)
    soc = ctx.soc
    k0 = k0_of(dtype)
    per_fractal = float(ceil_div(k, k0) * k0 // soc.cube_rate(dtype))
    events = []                          # (time into the Mmad, order, record kind, key)
    if flag == 3:
        st.seq += 1
        seq = st.seq
        events += [(min(total, soc.mmad_head_cycles + per_fractal), 0, _core.SET,
                    ("unit", seq, 0)), (total, 0, _core.SET, ("unit", seq, 1))]
    if handback is not None:             # its last fractal refills the Fixpipe's last unit
        events.append((total - min(per_fractal, total), 1, _core.WAIT,
                       ("unitfree", handback, 1)))
    done = 0.0
    for at, _, kind, key in sorted(events, key=lambda e: (e[0], e[1])):
        if at > done:
            ctx.record(_core.OP, PIPE_M, at - done, 0, None,
                       "Mmad" if done == 0 else "Mmad (unitFlag)")
            done = at
        ctx.record(kind, PIPE_M, 0.0, 0, key, "unitFlag")
    if total > done or not events:
        ctx.record(_core.OP, PIPE_M, total - done, 0, None,
                   "Mmad" if done == 0 else "Mmad (unitFlag)")
    if flag:
        st.holds = [h for h in st.holds if not (h.lo < hi and lo < h.hi)]
        st.holds.append(_Hold(lo, hi, "released" if flag == 3 else "acc",
                              seq if flag == 3 else -1, kernel_source_line(), flag))


# -- Fixpipe -----------------------------------------------------------------------------------

def before_fixpipe(ctx, flag: int, lo: int, hi: int):
    """Fixpipe reading L0C [lo, hi) with ``flag``, before it reads: wait for the first unit
    of the unitFlag-3 Mmad that released the bytes. Returns the hand-off's number (None
    without one)."""
    st = _state(ctx)
    holds = _overlapping(st, lo, hi)
    released = [h for h in holds if h.state == "released"]
    held = [h for h in holds if h.state == "acc"]
    if flag == 0:
        for h in released + held:
            st.holds.remove(h)
            _report(ctx, "Fixpipe", "PIPE_FIX", f"Fixpipe with unitFlag 0 reads L0C [{lo}, {hi}) "
                    f"that the Mmad at {h.line} hands off with unitFlag {h.flag}: set "
                    "FixpipeParamsV220.unitFlag = 3 (both instructions take unitFlag 2 or 3, "
                    f"{_SRC})")
        return None
    if not released:
        why = (f"the Mmad at {held[0].line} that last wrote it has unitFlag 2, which does not "
               "release the units: give the last k step's Mmad unitFlag 3" if held else
               "no Mmad with unitFlag 3 released it (a Mmad without unitFlag leaves the unit "
               "flags unset)")
        _report(ctx, "Fixpipe", "PIPE_FIX", f"Fixpipe with unitFlag {flag} reads L0C [{lo}, {hi}) "
                f"but {why}: the Fixpipe waits for unit flags nothing sets, a hang on hardware "
                f"({_SRC})")
        return None
    h = released[-1]
    ctx.record(_core.WAIT, PIPE_FIX, 0.0, 0, ("unit", h.seq, 0), "unitFlag")
    if flag == 3:
        # the units go back one by one as they are moved out: the next Mmad may start
        # refilling the first as this Fixpipe starts (module docstring)
        ctx.record(_core.SET, PIPE_FIX, 0.0, 0, ("unitfree", h.seq, 0), "unitFlag")
        st.holds.remove(h)
        st.holds.append(_Hold(h.lo, h.hi, "read", h.seq, kernel_source_line(), 3))
    return h.seq


def after_fixpipe(ctx, flag: int, seq) -> None:
    """After the Fixpipe's transfer: wait for the Mmad's end, move the last fractal, and
    (unitFlag 3) hand the units back to the next Mmad."""
    if seq is None:
        return
    soc = ctx.soc
    ctx.record(_core.WAIT, PIPE_FIX, 0.0, 0, ("unit", seq, 1), "unitFlag")
    ctx.record(_core.OP, PIPE_FIX, float(ceil_div(BLOCK_CUBE * BLOCK_CUBE,
                                                  soc.fixpipe_elements_per_cycle)), 0, None,
               "Fixpipe (unitFlag)")
    if flag == 3:
        ctx.record(_core.SET, PIPE_FIX, 0.0, 0, ("unitfree", seq, 1), "unitFlag")


def end_of_block(ctx) -> None:
    """A unitFlag Mmad whose L0C no unitFlag Fixpipe read by the kernel's end."""
    st = getattr(ctx, "unit_flags", None)
    if st is None:
        return
    for h in st.holds:
        if h.state in ("released", "acc"):
            _report(ctx, "Mmad", "PIPE_M", f"Mmad with unitFlag {h.flag} holds L0C [{h.lo}, {h.hi})"
                    " under unitFlag, and no Fixpipe with unitFlag read it by the end of the "
                    f"kernel: pair it with a Fixpipe with unitFlag 3 ({_SRC})", line=h.line)
    st.holds.clear()

