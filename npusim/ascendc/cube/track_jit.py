"""The compiled loops of :mod:`npusim.ascendc.cube.track_fast` (numba, imported on first
use, as :mod:`.step_sums_jit` is). Each walks the 32 B blocks of runs ``lo + r*stride +
[0, width)``, r < rows, of one memory shadow (:class:`npusim.ascendc.checker.MemoryShadow`'s
arrays), and either finds that :meth:`MemoryShadow._race` would find nothing there, and
then makes the access's updates, or returns before changing anything (the caller then
runs the numpy path, which reports).
"""
from numba import njit

#: eight initialised bytes (True is 1) read as one little- or big-endian uint64: the same
_ALL8 = 0x0101010101010101


@njit(cache=True, nogil=True)
def read_runs(w_pipe, w_idx, r_all, init, vc, count, readers, reader_row, pipe, lo, rows,
              stride, width, check_init):
    """A read by ``pipe``: the shadow's arrays (``init``: its initialised flags as uint64,
    eight bytes an item), the core's clocks ``vc`` and ``count``, the pipe of each row of
    ``r_all`` and each pipe's row (-1: not a reader of this memory). 0: a block was written
    by another pipe at or after what ``pipe`` knows of that pipe (``vc[pipe]``): a race;
    nothing changed. Otherwise the blocks' readers are updated (this pipe's row, its
    instruction index ``count[pipe]``) and the result is 1, or 2 when ``check_init`` and a
    byte of the blocks is not initialised."""
    known = vc[pipe]
    for r in range(rows):
        b0 = lo + r * stride
        for b in range(b0, b0 + width):
            wp = w_pipe[b]
            if wp >= 0 and wp != pipe and w_idx[b] >= known[wp]:
                return 0
    row = reader_row[pipe]
    cnt = count[pipe]
    whole = True
    for r in range(rows):
        b0 = lo + r * stride
        for b in range(b0, b0 + width):
            if row >= 0:
                r_all[row, b] = cnt
            if check_init and whole:
                for i in range(b * 4, b * 4 + 4):
                    if init[i] != _ALL8:
                        whole = False
                        break
    return 1 if whole else 2


@njit(cache=True, nogil=True)
def write_runs(w_pipe, w_idx, r_all, init, vc, count, readers, reader_row, pipe, lo, rows,
               stride, width, set_init):
    """A write by ``pipe`` (arguments as :func:`read_runs`). False: a block was written, or
    read by a reader pipe, at or after what ``pipe`` knows of that pipe: a race; nothing
    changed. True: the blocks' writer is now ``pipe`` at ``count[pipe]``, and with
    ``set_init`` their bytes are initialised."""
    known = vc[pipe]
    for r in range(rows):
        b0 = lo + r * stride
        for b in range(b0, b0 + width):
            wp = w_pipe[b]
            if wp >= 0 and wp != pipe and w_idx[b] >= known[wp]:
                return False
            for k in range(readers.shape[0]):
                q = readers[k]
                if q != pipe and r_all[k, b] >= known[q]:
                    return False
    cnt = count[pipe]
    for r in range(rows):
        b0 = lo + r * stride
        for b in range(b0, b0 + width):
            w_pipe[b] = pipe
            w_idx[b] = cnt
            if set_init:
                for i in range(b * 4, b * 4 + 4):
                    init[i] = _ALL8
    return True
