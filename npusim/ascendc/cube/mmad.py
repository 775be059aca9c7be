"""Mmad: C (L0C, NZ) = init + A (L0A, ZZ) x B (L0B, ZN) on the cube, PIPE_M.

Numerics (our rendering of the cube's order; Mmad.md gives the layouts and types, not the
adder tree): inputs are used as stored; k is walked in fractal steps of k0 = 32 B /
sizeof(T) (16 for half/bf16, 8 for float, 32 for int8). For float outputs each step's k0
products (exact in float64) are summed exactly, the sum rounded to float64 and then to fp32,
and added to the fp32 accumulator, one rounding per step, in k order (the whole tile's
steps in one BLAS product whose every element is shown to round as the exact sum does, or
summed again: :mod:`npusim.ascendc.cube.step_sums`, the same bits whatever BLAS the host
has); a step whose sum is zero adds +0.0. int8 products are summed exactly into int32
(wrapping like the 32-bit adder). Elements beyond ``k`` in the last k fractal are
ignored, as the page says ("无效数据在计算中会被忽略"); rows beyond ``m`` and columns
beyond ``n`` are computed from whatever the padding holds and stay in L0C's padding.
A NaN in a float C (``inf * 0`` in a product, ``inf + -inf`` in a sum, a NaN operand) is
the canonical positive quiet NaN 0x7FC00000 (:mod:`npusim.ascendc.nans`; the simulator's
choice [R]).
"""
from __future__ import annotations

import functools

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import nans as _nans
from npusim.ascendc import timing_only as _timing_only
from npusim.ascendc.cube.common import (BLOCK_CUBE, ceil_div, check_range, k0_of,
                                        mmad_cycles, not_modelled, require_aligned,
                                        require_local, shadow, stacked)
from npusim.ascendc.cube.mmad_timing_only import mmad_timing_only
from npusim.ascendc.cube import track_fast as _track_fast
from npusim.ascendc.cube import unitflag as _unitflag
from npusim.ascendc.cube import step_sums_numba as _fused
from npusim.ascendc.cube.step_sums import mmad_steps
from npusim.ascendc.types import PIPE_M, MmadParams, bfloat16_t, float32, half, int8_t, int32_t
from npusim.errors import DtypeError, KernelError

__all__ = ["Mmad"]

#: (left, right) input type -> L0C type on A2/A3 (Mmad.md table 4; int4b_t not modelled).
_RESULT = {half: float32, bfloat16_t: float32, float32: float32, int8_t: int32_t}


def Mmad(dst, fm, filter, *args) -> None:
    """``Mmad(dst, fm, filter, mmadParams)`` or ``Mmad(dst, fm, filter, bias, mmadParams)``:
    the cube's matrix multiply-accumulate ``C = init + A x B``.

    Operands: ``dst`` C in CO1 (L0C, NZ: 16 x 16 fractals, row-major inside, column-major
    between; start 256 elements aligned); ``fm`` A, m x k, in A2 (L0A, ZZ: 16 x k0
    fractals, row-major inside and between; 512 B aligned); ``filter`` B, k x n, in B2
    (L0B, ZN: k0 x 16 fractals, column-major inside, row-major between; 512 B aligned).
    With m = 1 the cube runs as GEMV and reads A as a plain row of k elements (ND).

    Types (A2/A3): half x half -> float, bfloat16 x bfloat16 -> float, float x float ->
    float, int8 x int8 -> int32 (int4b_t not modelled); the 910A/310P cube has half and int8
    only (:attr:`SocSpec.cube_k_per_cycle`).

    C's start: ``bias`` in C2 (the bias table: one float/int32 per column, broadcast to
    every row; 128 B aligned) or in CO1 (a full NZ matrix); else ``cmatrixInitVal`` (0),
    else ``cmatrixSource`` True: the bias table from address 0 [R: the page does not say
    which address the bias-less form reads], False: ``dst``'s own values (accumulate; so
    does the deprecated ``isBias``). ``kDirectionAlign`` (float): A's k fractals are
    counted in pairs (k aligned to 16), as LoadDataWithTranspose leaves them.

    unitFlag (0, 2, 3): the fine-grained hand-off of L0C to Fixpipe (:mod:`.unitflag`):
    the k-loop's Mmads take 2, the last 3, which releases C fractal by fractal to a
    Fixpipe with unitFlag 3; the bytes are those of the flag-synchronised form.

    Cost: PIPE_M, ``mmad_head_cycles + ceil(m/16)*ceil(n/16)*ceil(k/k0)*(k0/k_per_cycle)``
    (docs/reference/hardware.md §2.1: half/bf16 16x16x16, int8 16x16x32, float 16x16x4 per
    cycle). m, n or k = 0: not executed, no cost.

    Source: asc-devkit docs/api/context/Mmad.md (hiascend Mmad page), pyasc
    docs/python-api asc.language.basic.mmad; mmad sample (kDirectionAlign, bias forms).

    Raises:
        KernelError: an operand outside its position, or a reserved field (fmOffset,
        enSsparse, enWinograd) set. LimitError: unitFlag 1 (reserved). SyncError (checker):
        a unitFlag hand-off that does not pair (:mod:`.unitflag`). DtypeError: a type combination the SoC's cube
        lacks. LimitError: m/n/k outside [0, 4095]. AlignmentError: a misaligned operand.
        UbError: a fractal beyond its buffer.
    """
    ctx = _core.current_core()
    name, pipe_name = "Mmad", "PIPE_M"
    if len(args) == 1:
        bias, p = None, args[0]
    elif len(args) == 2:
        bias, p = args
    else:
        raise KernelError(name, "Mmad(dst, fm, filter, [bias,] mmadParams)")
    _check_operands(ctx, dst, fm, filter, bias, p)
    m = check_range(name, "m", p.m, 0, 4095, pipe_name)
    n = check_range(name, "n", p.n, 0, 4095, pipe_name)
    k = check_range(name, "k", p.k, 0, 4095, pipe_name)
    if m == 0 or n == 0 or k == 0:
        return
    k0 = k0_of(fm.dtype)
    M1, N1, K1 = ceil_div(m, BLOCK_CUBE), ceil_div(n, BLOCK_CUBE), ceil_div(k, k0)
    k1a = 2 * ceil_div(k, 16) if (p.kDirectionAlign and fm.dtype == float32) else K1
    if _timing_only.ACTIVE:     # no product: npusim.ascendc.cube.mmad_timing_only
        mmad_timing_only(ctx, dst, fm, filter, bias, p, m, n, k, M1, N1, K1, k1a, k0)
        return
    # every operand with a leading axis of one entry per member block (a lockstep group's,
    # or a plain block's one): each member's product computed as a block's own would be
    out = _to_nz(stacked(ctx, dst.elements, M1 * N1 * 256, name, pipe_name), M1, N1)
    flag = int(p.unitFlag)
    c_lo, c_hi = dst.offset, dst.offset + M1 * N1 * 256 * dst.dtype.itemsize
    _unitflag.before_mmad(ctx, flag, c_lo, c_hi)        # the hand-back from a unitFlag Fixpipe
    if dst.dtype == float32:
        fractals = None
        if m > 1 and k1a * k0 == k:
            # whole k fractals: the fractals straight into the per-step operands (the
            # compiled loop's float64 ones, when it runs: one gather, not two)
            zz = stacked(ctx, fm.elements, M1 * K1 * 16 * k0, name, pipe_name)
            zn = stacked(ctx, filter.elements, K1 * N1 * 16 * k0, name, pipe_name)
            if _fused.supports_fractals(zz.dtype):
                fractals = zz, zn
            else:
                a_s, b_s = _zz_steps(zz, M1, K1, k0), _zn_steps(zn, K1, N1, k0)
        else:
            a_s, b_s = _nd_steps(_read_a(ctx, fm, m, k, M1, k1a, k0, name, pipe_name),
                                 _from_zn(stacked(ctx, filter.elements, K1 * N1 * 16 * k0, name,
                                                  pipe_name), K1, N1, k0)[:, :k], k0)
        init, init_reads = _initial(ctx, dst, bias, p, m, n, M1, N1, nz=True)
        if ctx.tracker is not None:
            _track(ctx, dst, fm, filter, _a_index(m, k, M1, k1a, k0)[:m],
                   _zn_index(K1, N1, k0)[:k, :n], init_reads, out[0].nbytes)
        # the sums straight into L0C's NZ fractals (column block, row, column): onto
        # themselves when Mmad accumulates
        if fractals is not None:
            # the loop says whether it wrote a NaN: no pass over the members' C to look
            if _fused.mmad_fractals_fused(*fractals, M1, K1, N1, k0, init,
                                          out.reshape(len(out), N1, M1 * 16, 16)):
                _nans.canonical(out)                    # one NaN, whatever the host made
        else:
            mmad_steps(a_s, b_s, init, out.reshape(len(out), N1, M1 * 16, 16))
            _nans.canonical(out)
    else:
        a = _read_a(ctx, fm, m, k, M1, k1a, k0, name, pipe_name)
        b = _from_zn(stacked(ctx, filter.elements, K1 * N1 * 16 * k0, name, pipe_name), K1, N1,
                     k0)[:, :k]
        init, init_reads = _initial(ctx, dst, bias, p, m, n, M1, N1)
        if ctx.tracker is not None:
            _track(ctx, dst, fm, filter, _a_index(m, k, M1, k1a, k0)[:m],
                   _zn_index(K1, N1, k0)[:k, :n], init_reads, out[0].nbytes)
        prod = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64)   # exact
        for j in range(len(out)):                    # wraps like the 32-bit adder
            out[j] = _as_nz((init[j].astype(np.int64) + prod[j]).astype(np.int32), M1, N1)
    _unitflag.record_mmad(ctx, flag, c_lo, c_hi, mmad_cycles(ctx.soc, m, n, k, fm.dtype), m, n,
                          k, fm.dtype)


def _check_operands(ctx, dst, fm, filter, bias, p: MmadParams) -> None:
    name, pipe = "Mmad", "PIPE_M"
    require_local(dst, {_core.L0C}, name, "dst", "CO1")
    require_local(fm, {_core.L0A}, name, "fm", "A2")
    require_local(filter, {_core.L0B}, name, "filter", "B2")
    if bias is not None:
        require_local(bias, {_core.BT, _core.L0C}, name, "bias", "C2/CO1")
        require_aligned(bias, 128, name, "bias", pipe, "Mmad.md: bias 128 B aligned")
    require_aligned(fm, 512, name, "fm", pipe, "Mmad.md: fm 512 B aligned")
    require_aligned(filter, 512, name, "filter", pipe, "Mmad.md: filter 512 B aligned")
    require_aligned(dst, 256 * dst.dtype.itemsize, name, "dst", pipe,
                    "Mmad.md: dst 256 elements aligned")
    _unitflag.check_value(name, "MmadParams.unitFlag", p.unitFlag, pipe)
    for field, default in (("fmOffset", 0), ("enSsparse", False),
                           ("enWinogradA", False), ("enWinogradB", False)):
        if getattr(p, field) != default:
            raise not_modelled(name, f"MmadParams.{field}", pipe)
    want = _RESULT.get(fm.dtype)
    if (fm.dtype != filter.dtype or want is None or dst.dtype != want
            or ctx.soc.cube_rate(fm.dtype) is None):
        raise DtypeError(name, f"{fm.dtype.name} x {filter.dtype.name} -> {dst.dtype.name} is not "
                         f"a Mmad type combination on {ctx.soc.soc_version} (Mmad.md table 4: "
                         "half/bf16/float -> float, int8 -> int32)", pipe=pipe)
    if bias is not None and bias.dtype != dst.dtype:
        raise DtypeError(name, f"bias {bias.dtype.name} must be {dst.dtype.name} (Mmad.md "
                         "table 5)", pipe=pipe)


# -- layouts: element index of each logical (row, column) -------------------------------------
# The index functions are what the checker is told; the reads and the write go through the
# equivalent reshaped views below (a strided copy instead of an index gather: the same
# elements, several times faster). Both are cached / pure functions of the shape.

def _read_a(ctx, fm, m: int, k: int, M1: int, k1a: int, k0: int, name: str,
            pipe: str) -> np.ndarray:
    """A ([G,] M1*16 x k) from L0A: ZZ fractals of 16 x k0 (GEMV, m = 1: a plain row, the
    other rows zero)."""
    if m == 1:
        row = stacked(ctx, fm.elements, k, name, pipe)
        a = np.zeros((len(row), M1 * 16, k), dtype=fm.dtype)
        a[:, 0] = row
        return a
    zz = stacked(ctx, fm.elements, M1 * k1a * 16 * k0, name, pipe)
    zz = zz.reshape(len(zz), M1, k1a, 16, k0)
    return zz.transpose(0, 1, 3, 2, 4).reshape(len(zz), M1 * 16, k1a * k0)[:, :, :k]


def _from_zn(elements: np.ndarray, K1: int, N1: int, k0: int) -> np.ndarray:
    """B ([G,] K1*k0 x N1*16) from L0B's ZN fractals of k0 x 16 (each stored column by
    column); ``elements``: [G, n]."""
    g = len(elements)
    return elements.reshape(g, K1, N1, 16, k0).transpose(0, 1, 4, 2, 3).reshape(
        g, K1 * k0, N1 * 16)


def _to_nz(elements: np.ndarray, M1: int, N1: int) -> np.ndarray:
    """L0C's NZ elements ([G, n]) as [G, N1, M1, 16, 16]: column block, row block, row,
    column."""
    return elements.reshape(len(elements), N1, M1, 16, 16)


def _as_nz(c: np.ndarray, M1: int, N1: int) -> np.ndarray:
    """A (M1*16 x N1*16) matrix in L0C's NZ order (the inverse of :func:`_from_nz`)."""
    return c.reshape(M1, 16, N1, 16).transpose(2, 0, 1, 3)


def _from_nz(elements: np.ndarray, M1: int, N1: int) -> np.ndarray:
    """The [G, M1*16, N1*16] matrices of L0C's NZ elements ([G, n])."""
    return _to_nz(elements, M1, N1).transpose(0, 2, 3, 1, 4).reshape(len(elements), M1 * 16,
                                                                     N1 * 16)


@functools.lru_cache(maxsize=256)
def _a_index(m: int, k: int, M1: int, k1a: int, k0: int) -> np.ndarray:
    """A (m x k) in L0A: ZZ fractals of 16 x k0 (GEMV, m = 1: a plain row)."""
    if m == 1:
        return np.arange(k)[None, :]
    idx = np.arange(M1 * k1a * 16 * k0).reshape(M1, k1a, 16, k0).transpose(0, 2, 1, 3)
    idx = idx.reshape(M1 * 16, k1a * k0)[:, :k]
    idx.flags.writeable = False      # cached: shared by every call
    return idx


@functools.lru_cache(maxsize=256)
def _zn_index(K1: int, N1: int, k0: int) -> np.ndarray:
    """B (K1*k0 x N1*16) in L0B: ZN fractals of k0 x 16, each stored column by column."""
    idx = np.arange(K1 * N1 * 16 * k0).reshape(K1, N1, 16, k0).transpose(0, 3, 1, 2)
    idx = idx.reshape(K1 * k0, N1 * 16)
    idx.flags.writeable = False      # cached: shared by every call
    return idx


@functools.lru_cache(maxsize=256)
def _nz_index(M1: int, N1: int) -> np.ndarray:
    """C (M1*16 x N1*16) in L0C: NZ fractals of 16 x 16, column-major between fractals."""
    idx = np.arange(M1 * N1 * 256).reshape(N1, M1, 16, 16).transpose(1, 2, 0, 3)
    idx = idx.reshape(M1 * 16, N1 * 16)
    idx.flags.writeable = False      # cached: shared by every call
    return idx


def _initial(ctx, dst, bias, p: MmadParams, m: int, n: int, M1: int, N1: int,
             nz: bool = False):
    """C's starting value (M1*16 x N1*16, the L0C type) and what it was read from: (tensor,
    element index, whether the checker requires those bytes written); with
    ``nz`` a start of zeros (cmatrixInitVal) is None, and any other start is
    (G, N1, M1*16, 16), L0C's NZ order (from L0C: a view of its fractals, not a copy). A bias-table row is
    read for all n columns, but kernels pad n (int8: to 32, as the mmad sample does) past
    the bias they loaded: those columns only feed C's padding, so they are not flagged."""
    name, pipe = "Mmad", "PIPE_M"
    g = ctx.size if ctx.is_group else 1
    shape = (g, M1 * 16, N1 * 16)
    if bias is None and p.cmatrixInitVal and not p.isBias:
        return (None if nz else np.zeros(shape, dtype=dst.dtype)), []
    if bias is None and p.cmatrixSource and not p.isBias:   # the bias table, address 0 [R]
        bias = _bias_table_start(ctx, dst.dtype)
    if bias is not None and bias.mem == _core.BT:
        init = np.zeros(shape, dtype=dst.dtype)
        init[:, :, :n] = stacked(ctx, bias.elements, n, name, pipe)[:, None]
        if nz:
            init = init.reshape(g, M1 * 16, N1, 16).transpose(0, 2, 1, 3)
        return init, [(bias, np.arange(n), False)]
    src = dst if bias is None else bias                      # accumulate, or a CO1 bias matrix
    if nz:
        return (stacked(ctx, src.elements, M1 * N1 * 256, name, pipe).reshape(g, N1, M1 * 16, 16),
                [(src, _nz_index(M1, N1)[:m, :n], True)])
    init = np.empty(shape, dtype=dst.dtype)                  # one gathering copy of L0C's NZ
    init.reshape(g, M1, 16, N1, 16)[...] = _to_nz(
        stacked(ctx, src.elements, M1 * N1 * 256, name, pipe), M1, N1).transpose(0, 2, 3, 1, 4)
    return init, [(src, _nz_index(M1, N1)[:m, :n], True)]


def _bias_table_start(ctx, dtype):
    from npusim.ascendc.tensor import LocalTensor
    from npusim.ascendc.types import TPosition
    size = ctx.soc.bt_size
    if not size:
        raise KernelError("Mmad", f"{ctx.soc.soc_version} has no bias table (cmatrixSource)")
    return LocalTensor(ctx, dtype, 0, size // dtype.itemsize, size, TPosition.C2, None,
                       _core.BT)


def _nd_steps(a: np.ndarray, b: np.ndarray, k0: int) -> tuple:
    """A (G, rows, k) and B (G, k, cols) as the steps' operands (G, steps, rows, k0) and
    (G, steps, k0, cols); the ignored tail of the last k fractal: zeros."""
    G, rows, k = a.shape
    steps = ceil_div(k, k0)
    a_p = np.zeros((G, rows, steps * k0), dtype=a.dtype)
    a_p[:, :, :k] = a
    b_s = np.zeros((G, steps, k0, b.shape[-1]), dtype=b.dtype)
    b_s.reshape(G, steps * k0, -1)[:, :k] = b
    return np.ascontiguousarray(a_p.reshape(G, rows, steps, k0).transpose(0, 2, 1, 3)), b_s


def _zz_steps(zz: np.ndarray, M1: int, K1: int, k0: int) -> np.ndarray:
    """A's ZZ fractals (``zz``: [G, M1 x K1 fractals of 16 x k0]) as the steps' operands
    (G, K1, M1*16, k0): step s is A's column block s."""
    g = len(zz)
    return np.ascontiguousarray(zz.reshape(g, M1, K1, 16, k0).transpose(0, 2, 1, 3, 4)).reshape(
        g, K1, M1 * 16, k0)


def _zn_steps(zn: np.ndarray, K1: int, N1: int, k0: int) -> np.ndarray:
    """B's ZN fractals (``zn``: [G, K1 x N1 fractals of k0 x 16, each column by column]) as
    the steps' operands (G, K1, k0, N1*16): step s is B's row block s."""
    g = len(zn)
    return np.ascontiguousarray(zn.reshape(g, K1, N1, 16, k0).transpose(0, 1, 4, 2, 3)).reshape(
        g, K1, k0, N1 * 16)


#: (data address, shape, strides) of a read-only index view -> (whether its indices are
#: every index of [0, size), the view itself: held, so its memory is not reused meanwhile)
_WHOLE: dict = {}


def _whole(idx: np.ndarray) -> bool:
    """Whether the distinct element indices ``idx`` (a layout) are every index of ``[0,
    idx.size)``: their maximum is ``size - 1``. A read-only view (of the cached layouts
    above, never written) is kept by its data address, shape and strides, holding the view
    so that no other array takes that memory while the entry lives: a k-loop's Mmads do not
    scan the same thousands of indices again."""
    if idx.flags.writeable:              # not a cached layout: no key would be safe
        return int(idx.max()) + 1 == idx.size
    key = (idx.__array_interface__["data"][0], idx.shape, idx.strides)
    hit = _WHOLE.get(key)
    if hit is None:
        if len(_WHOLE) >= 256:
            _WHOLE.clear()
        hit = _WHOLE[key] = (int(idx.max()) + 1 == idx.size, idx)
    return hit[0]


def _track(ctx, dst, fm, filter, a_idx, b_idx, init_reads, c_nbytes: int) -> None:
    """The checker sees exactly the operand bytes the cube uses, and the whole C tile."""
    if ctx.tracker is None:
        return
    pipe = int(PIPE_M)
    for t, idx, check_init in [(fm, a_idx, True), (filter, b_idx, True)] + init_reads:
        sh = shadow(ctx, t)
        nbytes = idx.size * t.dtype.itemsize
        if (check_init and _whole(idx)
                and sh.init[t.offset:t.offset + nbytes].all()):
            # distinct indices (a layout) reaching no further than their count: every element
            # of [0, size), a whole contiguous operand, checked as one range (read_at reports
            # the uninitialised byte otherwise); its bytes are all written (just seen), so
            # what MemoryShadow.read adds to read_blocks, that check again, is left out
            end = t.offset + nbytes
            first, last = t.offset // 32, (end + 31) // 32
            if not _track_fast.read(sh, pipe, first, 1, 0, last - first):
                sh.read_blocks(ctx, pipe, slice(first, last), t.offset, end, "Mmad")
        else:
            sh.read_elements(ctx, pipe, t.offset, idx, t.dtype.itemsize, "Mmad", check_init)
    c_sh = shadow(ctx, dst)
    if not _track_fast.write_range(c_sh, pipe, dst.offset, c_nbytes):
        c_sh.write(ctx, pipe, dst.offset, c_nbytes, "Mmad")
