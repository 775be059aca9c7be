"""The checker's work for the cube's whole-block accesses in one compiled loop (numba), the
same findings and state as :class:`npusim.ascendc.checker.MemoryShadow`'s numpy path.

A race check there (:meth:`MemoryShadow._race`) is a dozen numpy operations on a few
hundred blocks (gathers of the blocks' writers and readers, thresholds, comparisons),
and a k-loop's LoadData makes two of them per call, Mmad four: most of a cube kernel's
host time outside Mmad's sums, all of it finding nothing. Here one compiled walk over the
blocks (:mod:`.track_jit`) checks what :meth:`MemoryShadow._race` checks, and when it
finds nothing makes the access's updates (the blocks' readers, or their writer and index,
and the bytes' initialised state where the caller says so). When it finds something, it
changes nothing and says so: the caller then runs the numpy path from the start, which
reports the finding (its message, or the warning, or pyasc's auto-sync resolution) as
always. A read repeated by that path is the same read again (its race check looks only at
writers, and it stores the same instruction index), so nothing is counted twice.

Selection (:data:`ENABLED`): numba installed and ``NPUSIM_NUMBA`` not ``0``, as for
Mmad's step sums (:mod:`.step_sums_numba`); imported on the first tracked cube access,
compiled once per machine (``cache=True``). Shadow classes that change how accesses are
checked (other than :meth:`MemoryShadow.on_race`) always take the numpy path.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

from npusim.ascendc import checker
from npusim.ascendc.cube.step_sums_numba import AVAILABLE as _NUMBA

__all__ = ["ENABLED", "read", "write", "write_range"]

#: the compiled walk is used: numba installed (found as the step sums find it, not
#: imported), unless ``NPUSIM_NUMBA=0`` or a caller setting it False turns it off
ENABLED = _NUMBA and os.environ.get("NPUSIM_NUMBA", "1") != "0"
_JIT = None
_PLAIN: dict = {}        # shadow class -> whether it checks accesses as MemoryShadow does


def _jit():
    """The compiled loops, or None (numba failing to import: warned once, numpy from then
    on)."""
    global _JIT, ENABLED
    if _JIT is None:
        try:
            from npusim.ascendc.cube import track_jit
        except Exception as exc:            # noqa: BLE001 - any import failure: numpy's path
            ENABLED = False
            warnings.warn(f"npusim: numba does not import ({exc}); the checker's cube "
                          "accesses run in numpy", RuntimeWarning, stacklevel=3)
            return None
        _JIT = track_jit
    return _JIT


def _plain(sh) -> bool:
    """Whether ``sh`` checks accesses as MemoryShadow does (its class overrides at most
    on_race) and its memory is whole 32 B blocks (what the walk's flags take)."""
    cls = type(sh)
    ok = _PLAIN.get(cls)
    if ok is None:
        base = checker.MemoryShadow
        ok = _PLAIN[cls] = all(getattr(cls, m) is getattr(base, m)
                               for m in ("_race", "read_blocks", "write_blocks", "write"))
    return ok and not sh.init.size % 32


_NONE = object()


def _arrays(sh):
    """The walk's view of ``sh``: (w_pipe, w_idx, r_all, the initialised flags as uint64
    (eight a item: a block's 32 tested and set as four), the clock's ``vc`` and ``count``,
    the pipe of each reader row, and each reader pipe's row), kept on the shadow (its arrays
    are made once and updated in place); None when the walk is not for it."""
    got = sh.__dict__.get("_walk_arrays", _NONE)
    if got is _NONE:
        got = None
        if _plain(sh) and _jit() is not None:
            rows = np.full(checker._N_PIPES, -1, dtype=np.int64)
            for p, r in sh._reader_row.items():
                rows[p] = r
            got = (sh.w_pipe, sh.w_idx, sh.r_all, sh.init.view(np.uint64), sh.clock.vc,
                   sh.clock.count, sh._readers_idx, rows)
        sh._walk_arrays = got
    return got


def read(sh, pipe: int, lo: int, rows: int, stride: int, width: int,
         check_init: bool = False) -> int:
    """:meth:`MemoryShadow.read_blocks` of the blocks ``lo + r*stride + [0, width)``, r <
    rows, when it would find no race: then done, and 1 (2: ``check_init`` and a byte of
    those blocks is not initialised). 0: not done (a race, or the compiled loop is off);
    nothing changed, the caller runs ``read_blocks``."""
    arrays = ENABLED and _arrays(sh)
    if not arrays:
        return 0
    got = _JIT.read_runs(*arrays, pipe, lo, rows, stride, width, check_init)
    if got:
        sh._clean = None
    return got


def write(sh, pipe: int, lo: int, rows: int, stride: int, width: int,
          set_init: bool = False) -> bool:
    """:meth:`MemoryShadow.write_blocks` of the blocks as :func:`read`'s, and with
    ``set_init`` their bytes marked initialised, when it would find no race: then True.
    False: not done, nothing changed (the caller runs ``write_blocks``)."""
    arrays = ENABLED and _arrays(sh)
    if not arrays or not _JIT.write_runs(*arrays, pipe, lo, rows, stride, width, set_init):
        return False
    sh._clean = None
    return True


def write_range(sh, pipe: int, offset: int, nbytes: int) -> bool:
    """:meth:`MemoryShadow.write` of bytes ``[offset, offset + nbytes)`` (nbytes > 0), when
    it would find no race: then True (its memo of a clean write kept as it keeps it).
    False: not done, nothing changed (the caller runs ``write``)."""
    arrays = ENABLED and _arrays(sh)
    if not arrays:
        return False
    end = offset + nbytes
    first, last = offset // 32, (end + 31) // 32
    if sh._clean == (pipe, first, last):     # write's own shortcut: no check to make
        return False
    if not _JIT.write_runs(*arrays, pipe, first, 1, 0, last - first, False):
        return False
    sh.init[offset:end] = True
    sh._clean = (pipe, first, last)
    return True
