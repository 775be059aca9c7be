"""Mmad in a timing-only launch (:mod:`npusim.ascendc.timing_only`): what a functional Mmad
checks, tells the checker and records, without the product. C (L0C) is left as it was
and the core's cube memories are flagged not computed."""
from __future__ import annotations

from npusim.ascendc.cube import unitflag as _unitflag
from npusim.ascendc.cube.common import mmad_cycles, stacked


def mmad_timing_only(ctx, dst, fm, filter, bias, p, m, n, k, M1, N1, K1, k1a, k0) -> None:
    """The operands' bounds (the element counts Mmad reads and writes), the checker's
    reads of A, B and C's start and its write of C, and the PIPE_M record (with its unitFlag hand-off, :mod:`.unitflag`)."""
    from npusim.ascendc.cube import mmad as _mmad      # local: mmad imports this module
    name, pipe_name = "Mmad", "PIPE_M"
    stacked(ctx, fm.elements, k if m == 1 else M1 * k1a * 16 * k0, name, pipe_name)
    stacked(ctx, filter.elements, K1 * N1 * 16 * k0, name, pipe_name)
    stacked(ctx, dst.elements, M1 * N1 * 256, name, pipe_name)
    flag = int(p.unitFlag)
    c_lo, c_hi = dst.offset, dst.offset + M1 * N1 * 256 * dst.dtype.itemsize
    _unitflag.before_mmad(ctx, flag, c_lo, c_hi)        # the hand-back from a unitFlag Fixpipe
    if ctx.tracker is not None:
        _, init_reads = _mmad._initial(ctx, dst, bias, p, m, n, M1, N1)
        _mmad._track(ctx, dst, fm, filter, _mmad._a_index(m, k, M1, k1a, k0)[:m],
                     _mmad._zn_index(K1, N1, k0)[:k, :n], init_reads,
                     M1 * N1 * 256 * dst.dtype.itemsize)
    ctx.cube_uncomputed = True
    _unitflag.record_mmad(ctx, flag, c_lo, c_hi, mmad_cycles(ctx.soc, m, n, k, fm.dtype), m, n,
                          k, fm.dtype)
