"""The cube's data movement: GM <-> L1 (plain and ND -> NZ), L1 -> bias table, and
LoadData / LoadDataWithTranspose from L1 (or GM) into L0A / L0B.

Layouts (Mmad.md; Load2D.md; docs/reference/hardware.md §3):

* **NZ** (L1, as ``DataCopy`` with ``Nd2NzParams`` writes it): the matrix is cut into
  column blocks of ``k0 = 32 B / sizeof(T)`` elements; a column block is a run of rows of
  32 B (row ``j`` of ND matrix ``i``, 32 B block ``c``, lands at ``i*dstNzMatrixStride``
  elements ``+ j*dstNzNStride*32 B + c*dstNzC0Stride*32 B``), so fractals (16 rows x 32 B)
  follow one another down each column block: big N, small Z.
* **ZZ** (L0A, the left matrix of Mmad): fractals of 16 x k0, row-major inside, fractals
  row-major (all k fractals of rows 0-15, then rows 16-31...).
* **ZN** (L0B, the right matrix): fractals of k0 x 16 stored column by column (each of
  the 16 columns holds k0 consecutive k values), fractals row-major over (k, n).

``LoadData`` moves whole 512 B fractals, optionally transposing each 16 x 16 one (16-bit
types), which is how a kernel turns L1's NZ into L0A's ZZ (one LoadData per row of
fractals) or L0B's ZN. ``LoadDataWithTranspose`` transposes squares of two fractals for
8- and 32-bit types. None of them changes a byte's value, so the checker lets them copy
never-written padding (it carries the bytes' state along) and checks the bytes where
Mmad or Fixpipe use them.
"""
from __future__ import annotations

import functools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from npusim import lockstep as _lockstep
from npusim.ascendc import checker
from npusim.ascendc import timing_only as _timing_only
from npusim.ascendc import core as _core
from npusim.ascendc import datacopy as _dc
from npusim.ascendc.cube import l0c_copy as _l0c
from npusim.ascendc.cube import load3d as _load3d
from npusim.ascendc.cube import track_fast as _track_fast
from npusim.ascendc.cube.common import (FRACTAL_BYTES, byte_addr, ceil_div, check_range,
                                        copy_local_rows, mte1_cycles, not_modelled, record_op,
                                        require_aligned, require_local, shadow, stacked)
from npusim.ascendc.tensor import GlobalTensor, LocalTensor
from npusim.ascendc.types import (PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, DataCopyParams,
                                  LoadData2DParams, LoadData2dTransposeParams, Nd2NzParams,
                                  bfloat16_t)
from npusim.errors import AlignmentError, DtypeError, KernelError

__all__ = ["LoadData", "LoadDataWithTranspose"]

_UB, _L1, _L0A, _L0B, _BT = _core.UB, _core.L1, _core.L0A, _core.L0B, _core.BT
_L0 = frozenset({_L0A, _L0B})

#: LoadData dtypes on the first-generation 910 / 310P AI core, and what 2201 adds
#: (Load2D.md, 数据类型; int4b_t is not modelled).
_LOAD2D_TYPES = frozenset(np.dtype(t) for t in ("u1", "i1", "u2", "i2", "f2"))
_LOAD2D_TYPES_2201 = _LOAD2D_TYPES | frozenset({bfloat16_t, *(np.dtype(t) for t in ("u4", "i4",
                                                                                  "f4"))})


#: Where the parameter ranges checked here are documented.
_DC_SRC = "docs/reference/hardware.md §3 DataCopyParams"
_ND2NZ_SRC = "DataCopy 随路格式转换, Nd2NzParams table"
_LOAD_SRC = "Load2D.md"


def _load2d_types(soc) -> frozenset:
    return _LOAD2D_TYPES_2201 if soc.npu_arch == "2201" else _LOAD2D_TYPES


# -- DataCopy on the cube's paths (called by npusim.ascendc.datacopy.DataCopy) ----------------

def data_copy(dst, src, params) -> None:
    """``DataCopy`` where an operand lives in L1 or the bias table, or with Nd2NzParams.

    Paths (docs/reference/hardware.md §2.1 pipe assignment; DataCopy 随路格式转换 pages):

    * GM -> L1 (A1/B1/C1/TSCM) on PIPE_MTE2: ``count`` elements (rounded down to whole
      32 B blocks, like GM -> UB) or ``DataCopyParams`` (blocks of 32 B units).
    * GM -> L1 or VECIN with ``Nd2NzParams``: ND -> NZ conversion on PIPE_MTE2
      (:func:`nd2nz`).
    * L1 -> GM on PIPE_MTE3: the reverse of GM -> L1.
    * L0C (CO1) -> GM or L1 with ``DataCopyCO12DstParams``, and L1 (C1) -> the Fixpipe
      buffer (C2PIPE2GM): the register form of Fixpipe (:mod:`.l0c_copy`).
    * L1 (C1) -> bias table (C2) on PIPE_MTE1 at 32 B/cycle: ``DataCopyParams`` whose
      blockLen counts 64 B units on A2/A3 (the mmad sample's "C1->C2 blockLen unit 64B"),
      or ``count`` elements forming whole 64 B blocks.

    Raises:
        KernelError: a path the hardware does not have (e.g. L1 -> UB: AIC and AIV exchange
        data only through GM; L0C -> anything: that is Fixpipe).
        AlignmentError / UbError / GmAccessError / DtypeError: as the path's rules say.
    """
    ctx = _core.current_core()
    if isinstance(params, Nd2NzParams):
        nd2nz(ctx, dst, src, params)
    elif isinstance(src, GlobalTensor) and isinstance(dst, LocalTensor) and dst.mem == _L1:
        _gm_l1(ctx, dst, src, params, True)
    elif isinstance(dst, GlobalTensor) and isinstance(src, LocalTensor) and src.mem == _L1:
        _gm_l1(ctx, src, dst, params, False)
    elif (isinstance(dst, LocalTensor) and isinstance(src, LocalTensor) and dst.mem == _BT
          and src.mem == _L1):
        _l1_to_bt(ctx, dst, src, params)
    elif isinstance(params, _l0c.DataCopyCO12DstParams) or (isinstance(src, LocalTensor)
                                                             and src.mem == _core.L0C):
        if not isinstance(params, _l0c.DataCopyCO12DstParams):
            raise KernelError("DataCopy", "L0C (CO1) leaves by Fixpipe or by DataCopy with "
                              "DataCopyCO12DstParams")
        _l0c.copy_out(dst, src, params)
    elif (isinstance(dst, LocalTensor) and isinstance(src, LocalTensor)
          and dst.mem == _core.FB and src.mem == _L1):
        _l0c.l1_to_fb(ctx, dst, src, params)
    else:
        raise KernelError("DataCopy", f"there is no DataCopy path {_where(src)} -> {_where(dst)} "
                          "(GM <-> L1, L1 -> BT, L1 -> FB, ND2NZ into L1/VECIN; L0C leaves "
                          "through Fixpipe or DataCopyCO12DstParams; AIC and AIV exchange "
                          "data only through GM)")


def _where(t) -> str:
    return t.mem if isinstance(t, (LocalTensor, GlobalTensor)) else type(t).__name__


def _gm_l1(ctx, l1: LocalTensor, gm: GlobalTensor, params, to_l1: bool) -> None:
    """GM <-> L1 plain copies: the rules and the record of GM <-> UB copies."""
    pipe = "PIPE_MTE2" if to_l1 else "PIPE_MTE3"
    require_aligned(l1, 32, "DataCopy", "the L1 operand", pipe)
    if isinstance(params, DataCopyParams):
        rng = functools.partial(check_range, "DataCopy", pipe=pipe, source=_DC_SRC)
        rows = rng("blockCount", params.blockCount, 0, 4095)
        row = rng("blockLen", params.blockLen, 0, 65535) * 32
        src_gap = rng("srcStride", params.srcStride, 0, 65535) * 32
        dst_gap = rng("dstStride", params.dstStride, 0, 65535) * 32
        gm_gap, l1_gap = (src_gap, dst_gap) if to_l1 else (dst_gap, src_gap)
    else:
        want = int(params) * l1.dtype.itemsize
        rows, row, gm_gap, l1_gap = 1, want // 32 * 32, 0, 0
        if row != want:
            checker.report(ctx, AlignmentError(
                "DataCopy", f"{int(params)} x {l1.dtype.name} = {want} B is not a whole number "
                f"of 32 B blocks: only {row} B are copied, as on hardware", pipe=pipe))
    if rows == 0 or row == 0:
        return
    gm_pitch, l1_pitch = row + gm_gap, row + l1_gap
    gm_span = (rows - 1) * gm_pitch + row
    sh = shadow(ctx, l1)
    if sh is not None:
        addr = (l1.offset + np.arange(rows)[:, None] * l1_pitch + np.arange(row)).reshape(-1)
        (sh.write_at if to_l1 else sh.read_at)(ctx, int(PIPE_MTE2 if to_l1 else PIPE_MTE3),
                                               addr, "DataCopy")
    if ctx.is_group:      # a lockstep group: every member's rows at once, as GM <-> UB
        _dc._group_copy(ctx, to_l1, l1, gm, rows, row, gm_pitch, row, l1_pitch, 0,
                        "DataCopy", pipe)
    else:
        gm_view = _dc._strided(gm.bytes_view(gm_span, "DataCopy", pipe), rows, row, gm_pitch)
        l1_view = _dc._strided(l1.bytes_view((rows - 1) * l1_pitch + row, "DataCopy", pipe),
                               rows, row, l1_pitch)
        if to_l1:
            l1_view[...] = gm_view
        else:
            _dc._write_gm(ctx, gm_view, l1_view)
    if _timing_only.ACTIVE:
        (_timing_only.gm_to_cube if to_l1 else _timing_only.cube_to_gm)(ctx, gm, gm_span)
    _dc._dma(ctx, to_l1, rows * row, "DataCopy", gm, gm_span,
             _dc.strided_runs(rows, row, gm_pitch))


def nd2nz(ctx, dst: LocalTensor, src: GlobalTensor, p: Nd2NzParams) -> None:
    """``DataCopy(dst, src, Nd2NzParams)``: ND matrices in GM to NZ in L1 (or VECIN).

    For each of ``ndNum`` matrices (``srcNdMatrixStride`` elements apart in GM) and each of
    its ``nValue`` rows (``srcDValue`` elements apart), the row's ``dValue`` elements are
    cut into 32 B blocks; block ``c`` of row ``j`` of matrix ``i`` lands at
    ``i*dstNzMatrixStride*sizeof(T) + j*dstNzNStride*32 + c*dstNzC0Stride*32`` bytes from
    ``dst``; the last block is zero-padded to 32 B. Types on A2: int8/uint8/int16/uint16/
    int32/uint32/half/bfloat16/float (same type both sides). Runs on PIPE_MTE2.

    Source: hiascend "DataCopy 随路格式转换" (atlasascendc_api_07_0105, Nd2NzParams table);
    cceapi_0096 copy_gm_to_cbuf_multi_nd2nz (the loop order and the zero padding).

    Raises:
        KernelError: src is not a GlobalTensor or dst not in L1/UB. DtypeError: types
        differ. LimitError: a field out of range. AlignmentError: dst not 32 B aligned, or
        the GM address not aligned to sizeof(T). UbError / GmAccessError: out of bounds.
    """
    name, pipe = "DataCopy", "PIPE_MTE2"
    if not isinstance(src, GlobalTensor):
        raise KernelError(name, "Nd2NzParams copies from GM: src must be a GlobalTensor")
    require_local(dst, {_L1, _UB}, name, "dst", "A1/B1/C1/VECIN")
    if dst.dtype != src.dtype:
        raise DtypeError(name, f"ND2NZ keeps the type: dst {dst.dtype.name}, src "
                         f"{src.dtype.name}", pipe=pipe)
    require_aligned(dst, 32, name, "dst", pipe)
    nd = check_range(name, "ndNum", p.ndNum, 0, 4095, pipe, _ND2NZ_SRC)
    n = check_range(name, "nValue", p.nValue, 0, 16384, pipe, _ND2NZ_SRC)
    d = check_range(name, "dValue", p.dValue, 0, 65535, pipe, _ND2NZ_SRC)
    s_nd = check_range(name, "srcNdMatrixStride", p.srcNdMatrixStride, 0, 65535, pipe,
                       _ND2NZ_SRC)
    s_d = check_range(name, "srcDValue", p.srcDValue, 1, 65535, pipe, _ND2NZ_SRC)
    c0s = check_range(name, "dstNzC0Stride", p.dstNzC0Stride, 1, 16384, pipe, _ND2NZ_SRC)
    ns = check_range(name, "dstNzNStride", p.dstNzNStride, 1, 16384, pipe, _ND2NZ_SRC)
    ms = check_range(name, "dstNzMatrixStride", p.dstNzMatrixStride, 0, 65535, pipe, _ND2NZ_SRC)
    isz = dst.dtype.itemsize
    if src.address % isz:
        raise AlignmentError(name, f"GM address 0x{src.address:x} is not aligned to "
                             f"sizeof({src.dtype.name})", pipe=pipe)
    if nd == 0 or n == 0 or d == 0:
        return
    c0 = 32 // isz
    width = ceil_div(d, c0) * c0                       # a row padded to whole 32 B blocks
    span = (nd - 1) * s_nd + (n - 1) * s_d + d          # GM elements touched
    gms = _lockstep.gm_spans(ctx, src, span * isz, name, pipe)   # each member's GM bytes
    whole = width == d      # whole 32 B blocks: no padding to add, the GM view is the data
    nblk = width // c0
    last = (nd - 1) * ms + (n - 1) * ns * c0 + (nblk - 1) * c0s * c0 + c0   # elements touched
    views = stacked(ctx, dst.elements, last, name, pipe)
    sh = shadow(ctx, dst)
    disjoint = c0s >= (n - 1) * ns + 1 and (nd == 1 or ms >= last - (nd - 1) * ms)
    # whole 32 B blocks land on whole blocks: the checker is told the blocks, not the bytes
    by_blocks = (ms * isz) % 32 == 0 and sh is not None and sh.init.size % 32 == 0
    if by_blocks:
        blocks, lo, hi = _nz_blocks(dst.offset >> 5, nd, ms * isz // 32, n, ns, nblk, c0s)
        if type(blocks) is not slice or not _track_fast.write(
                sh, int(PIPE_MTE2), blocks.start, 1, 0, blocks.stop - blocks.start):
            sh.write_blocks(ctx, int(PIPE_MTE2), blocks, lo, hi, name)
        if type(blocks) is slice:
            sh.init[lo:hi] = True
        else:
            sh.init.reshape(-1, 32)[blocks] = True
    if (sh is not None and not by_blocks) or not disjoint:
        c = np.arange(width)
        off = (np.arange(nd)[:, None, None] * ms + np.arange(n)[None, :, None] * ns * c0
               + (c // c0) * c0s * c0 + c % c0)
        if sh is not None and not by_blocks:
            sh.write_at(ctx, int(PIPE_MTE2), byte_addr(dst, off), name)
    for view, gm in zip(views, gms):                   # each member block's copy
        if not whole:
            data = np.zeros((nd, n, width), dtype=dst.dtype)
            data[:, :, :d] = _gm_rows(gm, src.dtype, nd, n, d, s_nd, s_d)
        if disjoint and whole:   # whole blocks straight from GM, each moved as one item,
            # down each column block (rows innermost): the stores run on in L1 and the GM
            # rows are read across; the other way round, a row's blocks land a column block
            # (often a power of two of bytes) apart, which the host's caches take worse
            # (an NZ tile of 128 x 256 halves: about a quarter faster)
            _block32(view.view(np.uint8), (nd, nblk, n), (ms * isz, c0s * 32, ns * 32))[...] = (
                _block32(gm, (nd, nblk, n), (s_nd * isz, 32, s_d * isz)))
        elif disjoint:     # no two destinations overlap: one strided store of the 32 B blocks
            as_strided(view, shape=(nd, n, nblk, c0),
                       strides=(ms * isz, ns * c0 * isz, c0s * c0 * isz, isz))[...] = (
                data.reshape(nd, n, nblk, c0))
        else:                                          # later matrices/rows win, as in the loop
            view[off] = _gm_rows(gm, src.dtype, nd, n, d, s_nd, s_d) if whole else data
    # the bytes read, for the checker: each matrix's n rows of d elements
    if nd == 1 or s_nd == n * s_d:        # the matrices' rows are one run
        runs = ((0, d * isz, s_d * isz, nd * n),)
    else:
        runs = tuple((i * s_nd * isz, d * isz, s_d * isz, n) for i in range(nd))
    if _timing_only.ACTIVE:
        _timing_only.gm_to_cube(ctx, src, span * isz)
    _dc._dma(ctx, True, nd * n * d * isz, name, src, span * isz, runs)


@functools.lru_cache(maxsize=1024)
def _nz_blocks(first: int, nd: int, m_blocks: int, n: int, ns: int, nblk: int, c0s: int):
    """The 32 B blocks an ND -> NZ copy writes (block ``c`` of row ``j`` of matrix ``i`` at
    block ``first + i*m_blocks + j*ns + c*c0s``), distinct and sorted, and their byte
    bounds ``(blocks, lo, hi)``: a slice when they are every block of ``[lo, hi)`` (an NZ
    tile written whole, as a k-loop's copies are), else a read-only index array. Kept by
    their arguments: a kernel's loop copies the same few tiles again and again."""
    blk = (first + np.arange(nd)[:, None, None] * m_blocks + np.arange(n)[None, :, None] * ns
           + np.arange(nblk) * c0s)
    lo, hi = int(blk.min()) * 32, int(blk.max()) * 32 + 32
    blocks = checker._blocks_of(blk.reshape(-1) << 5, lo, hi)
    if blocks.size == (hi - lo) >> 5:
        return slice(lo >> 5, hi >> 5), lo, hi
    blocks.flags.writeable = False
    return blocks, lo, hi


#: one 32 B block as a single numpy item (a strided copy of these moves 32 B at a time)
_BLOCK32 = np.dtype((np.void, 32))


def _block32(buf: np.ndarray, shape: tuple, strides: tuple) -> np.ndarray:
    """The 32 B blocks of the contiguous byte array ``buf`` at ``shape``/``strides`` (bytes),
    as items (numpy checks that they stay inside ``buf``)."""
    return np.ndarray(shape, _BLOCK32, buffer=buf, strides=strides)


def _gm_rows(gm: np.ndarray, dtype, nd: int, n: int, d: int, s_nd: int, s_d: int) -> np.ndarray:
    """The (nd, n, d) rows of ND matrices in the GM bytes ``gm`` (strides in elements)."""
    isz = dtype.itemsize
    return as_strided(gm.view(dtype), shape=(nd, n, d), strides=(s_nd * isz, s_d * isz, isz))


def _l1_to_bt(ctx, dst: LocalTensor, src: LocalTensor, params) -> None:
    """L1 (C1) -> bias table (C2) on PIPE_MTE1: whole 64 B blocks, same type."""
    name, pipe = "DataCopy", "PIPE_MTE1"
    if dst.dtype != src.dtype:
        raise DtypeError(name, f"L1 -> BT keeps the type: dst {dst.dtype.name}, src "
                         f"{src.dtype.name}", pipe=pipe)
    require_aligned(src, 32, name, "src (L1)", pipe)
    require_aligned(dst, 64, name, "dst (BT)", pipe)
    if isinstance(params, DataCopyParams):
        rng = functools.partial(check_range, name, pipe=pipe, source=_DC_SRC)
        rows = rng("blockCount", params.blockCount, 0, 4095)
        row = rng("blockLen", params.blockLen, 0, 65535) * 64
        src_pitch = row + rng("srcStride", params.srcStride, 0, 65535) * 32
        dst_pitch = row + rng("dstStride", params.dstStride, 0, 65535) * 64
    else:
        rows, row = 1, int(params) * src.dtype.itemsize
        src_pitch = dst_pitch = row
        if row % 64:
            raise AlignmentError(name, f"{int(params)} x {src.dtype.name} = {row} B: L1 -> bias "
                                 "table moves whole 64 B blocks (blockLen unit 64 B on A2/A3)",
                                 pipe=pipe)
    if rows == 0 or row == 0:
        return
    copy_local_rows(ctx, dst, src, rows, row, src_pitch, dst_pitch, int(PIPE_MTE1), name, pipe)
    record_op(ctx, PIPE_MTE1, mte1_cycles(ctx.soc, rows * row, _BT), name)



# -- LoadData (Load2D) --------------------------------------------------------------------------

def LoadData(dst: LocalTensor, src, loadDataParams: LoadData2DParams,
             config=_load3d.IS_RESER_LOAD3D_DEFAULT_CONFIG) -> None:
    """``LoadData(dst, src, LoadData2DParams)``: move 512 B fractals into L0A/L0B (or L1).

    With ``LoadData3DParamsV2`` (and ``config``, the ``IsResetLoad3dConfig`` template
    argument): img2col v2 L1 -> L0A/L0B, :mod:`npusim.ascendc.cube.load3d`.
    ``LoadData2DParamsV2`` is refused on A2/A3, as their library does.

    Repeat ``r`` copies the source fractal ``startIndex + r*srcStride`` (512 B units from
    ``src``; srcStride 0 re-reads one fractal) to ``r*(1 + dstGap)`` fractals from ``dst``;
    with ``ifTranspose`` each 16 x 16 fractal is transposed on the way (16-bit types, L1 ->
    L0A/L0B only). ``repeatTimes = 0`` is a NOP.

    Paths: L1 (A1/B1) -> L0A (A2) / L0B (B2) on PIPE_MTE1 (256 / 128 B/cycle); GM -> L1,
    L0A or L0B on PIPE_MTE2 (a DMA read). Types on A2/A3: (u)int8, (u)int16, half, bfloat16,
    (u)int32, float (int4b_t not modelled); the first-generation 910 and 310P: (u)int8,
    (u)int16, half.

    Source: asc-devkit docs Load2D.md (hiascend atlasascendc_api_07_00169); pyasc
    docs/python-api asc.language.basic.load_data.

    Raises:
        KernelError: a path other than those above, or ``addrMode`` != 0 (not modelled).
        DtypeError: the types differ or the SoC has no LoadData for the type, or
        ifTranspose on a type that is not 16-bit. LimitError: a field out of range (e.g.
        repeatTimes > 255, Load2D.md). AlignmentError: an L0A/L0B operand not 512 B aligned,
        an L1 operand not 32 B aligned. UbError /
        GmAccessError: a fractal outside its buffer or allocation.
    """
    if isinstance(loadDataParams, _load3d.LoadData3DParamsV2):
        return _load3d.load3dv2(dst, src, loadDataParams, config)
    if isinstance(loadDataParams, _load3d.LoadData2DParamsV2):
        raise _load3d.not_on_a2_2dv2()
    ctx = _core.current_core()
    name = "LoadData"
    p = loadDataParams
    from_gm = isinstance(src, GlobalTensor)
    pipe, pipe_name = (PIPE_MTE2, "PIPE_MTE2") if from_gm else (PIPE_MTE1, "PIPE_MTE1")
    start, repeat, stride, gap = _checked_2d(ctx, name, dst, src, p, from_gm, pipe_name)
    if repeat == 0:
        return
    last = start + (repeat - 1) * stride                     # the furthest source fractal
    # strided views of both sides and one copy: fractal ``start + r*srcStride`` of the
    # source onto fractal ``r*(1 + dstGap)`` of the destination, for every member block
    s_frames = _frames(stacked(ctx, src.bytes_view, (last + 1) * FRACTAL_BYTES, name,
                               pipe_name), start, stride, repeat)
    d_frames = _fractals(stacked(ctx, dst.bytes_view, ((repeat - 1) * (1 + gap) + 1)
                                 * FRACTAL_BYTES, name, pipe_name))[:, ::1 + gap]
    transpose = bool(p.ifTranspose)
    if ctx.tracker is not None:
        _track_load(ctx, int(pipe), name, dst, src, start, stride, repeat, gap, transpose)
    _store_frames(d_frames, s_frames, transpose)
    _cost(ctx, dst, src, repeat * FRACTAL_BYTES, last, pipe, name)


#: LoadData calls from L1 that passed their checks: what they were checked on -> (SoC,
#: startIndex, repeatTimes, srcStride, dstGap); see :func:`_checked_2d`
_CHECKED: dict = {}


def _checked_2d(ctx, name: str, dst, src, p, from_gm: bool, pipe_name: str) -> tuple:
    """LoadData2DParams' rules on these operands (the exceptions of :func:`LoadData`), and
    its (startIndex, repeatTimes, srcStride, dstGap). An L1 -> L0 call that passed them is
    kept by everything they read (the SoC, both operands' memory, type and offset, the
    fields), so a k-loop's same loads are not checked field by field again; a call with
    fields that differ between a lockstep group's members (not hashable) is checked as
    always."""
    key = None
    if not from_gm and type(dst) is LocalTensor and type(src) is LocalTensor:
        key = (id(ctx.soc), dst.mem, dst.dtype, dst.offset, src.mem, src.dtype, src.offset,
               p.startIndex, p.repeatTimes, p.srcStride, p.dstGap, p.ifTranspose, p.addrMode)
        try:
            hit = _CHECKED.get(key)
        except TypeError:                    # a field that is a BlockVector
            hit = key = None
        if hit is not None and hit[0] is ctx.soc:
            return hit[1:]
    if from_gm:
        require_local(dst, {_L1, _L0A, _L0B}, name, "dst", "A1/B1/A2/B2")
    else:
        require_local(src, {_L1}, name, "src", "A1/B1 (or a GlobalTensor)")
        require_local(dst, _L0, name, "dst", "A2/B2")
    _check_load_types(ctx, name, dst, src, pipe_name)
    fields = _check_2d_fields(name, p, pipe_name)
    if int(p.addrMode) != 0:
        raise not_modelled(name, "addrMode 1 (decrementing source addresses)", pipe_name)
    if p.ifTranspose and (from_gm or dst.dtype.itemsize != 2):
        raise DtypeError(name, "ifTranspose works on L1 -> L0A/L0B with 16-bit types only "
                         f"(here {dst.dtype.name}{' from GM' if from_gm else ''}); use "
                         "LoadDataWithTranspose for 8- and 32-bit types (Load2D.md)",
                         pipe=pipe_name)
    if key is not None:
        if len(_CHECKED) >= 4096:
            _CHECKED.clear()
        _CHECKED[key] = (ctx.soc,) + fields
    return fields


def _fractals(buf: np.ndarray) -> np.ndarray:
    """``[G, n]`` bytes (one row per member block) as ``[G, n / 512, 512]`` fractals (a view:
    only the contiguous last axis is split)."""
    return buf.reshape(buf.shape[0], -1, FRACTAL_BYTES)


def _frames(buf: np.ndarray, start: int, stride: int, repeat: int) -> np.ndarray:
    """``[G, repeat, 512]`` view of fractals ``start + r*stride`` of each row of ``buf``."""
    frames = _fractals(buf)
    if stride == 0:                                   # one fractal read ``repeat`` times
        return np.broadcast_to(frames[:, start:start + 1], (len(buf), repeat, FRACTAL_BYTES))
    return frames[:, start:start + (repeat - 1) * stride + 1:stride]


def _store_frames(d_frames: np.ndarray, s_frames: np.ndarray, transpose: bool) -> None:
    """``d_frames[...] = s_frames`` (``[G, repeat, 512]``), each 16 x 16 fractal of 2-byte
    elements transposed on the way when ``transpose`` (Load2D.md ifTranspose)."""
    if transpose:       # as 2-byte words: each element's bytes move together
        d3 = d_frames.view(np.uint16)
        d3.shape = d_frames.shape[:2] + (16, 16)  # a view (assigning shape never copies)
        d3[...] = s_frames.view(np.uint16).reshape(d3.shape).transpose(0, 1, 3, 2)
    else:
        d_frames[...] = s_frames


@functools.lru_cache(maxsize=4096)
def _fractal_blocks(offset: int, first: int, step: int, count: int):
    """The 32 B blocks (sorted, distinct) of fractals ``first + r*step``, r < count, of an
    operand at byte ``offset`` (32 B aligned): a slice when they are contiguous. Kept by
    their arguments (a kernel's k-loop loads the same few fractal sets again and again),
    read-only."""
    base = (offset >> 5) + first * 16
    if step == 1 or count == 1:
        return slice(base, base + count * 16)
    out = ((base + np.arange(count) * (step * 16))[:, None] + np.arange(16)).reshape(-1)
    out.flags.writeable = False
    return out


def _track_load(ctx, pipe: int, name: str, dst: LocalTensor, src, start: int, stride: int,
                repeat: int, gap: int, transpose: bool) -> None:
    """LoadData's checker work, by whole fractals (the same checks and state as
    :func:`_track_squares`: the source bytes read with their state carried along, the
    destination bytes written; from GM the bytes are defined)."""
    d_sh = shadow(ctx, dst)
    if d_sh is None:
        return
    if _track_fast.ENABLED and _track_load_fast(d_sh, pipe, ctx, dst, src, start, stride,
                                                repeat, gap):
        return
    d_lo = dst.offset
    d_hi = d_lo + ((repeat - 1) * (1 + gap) + 1) * FRACTAL_BYTES
    d_blocks = _fractal_blocks(d_lo, 0, 1 + gap, repeat)
    d_init = _fractals(d_sh.init[None, d_lo:d_hi])[:, ::1 + gap]
    if isinstance(src, GlobalTensor):
        d_sh.write_blocks(ctx, pipe, d_blocks, d_lo, d_hi, name)
        d_init[...] = True
        return
    s_sh = shadow(ctx, src)
    last = start + (repeat - 1) * stride
    s_lo, s_hi = src.offset + start * FRACTAL_BYTES, src.offset + (last + 1) * FRACTAL_BYTES
    s_sh.read_blocks(ctx, pipe, _fractal_blocks(src.offset, start, max(stride, 1),
                                                1 if stride == 0 else repeat),
                     s_lo, s_hi, name)
    s_init = _frames(s_sh.init[None, src.offset:s_hi], start, stride, repeat)
    s_init = True if s_init.all() else s_init.copy()     # all written: nearly always
    d_sh.write_blocks(ctx, pipe, d_blocks, d_lo, d_hi, name)
    if s_init is True:
        d_init[...] = True
    else:
        _store_frames(d_init, s_init, transpose)


def _track_load_fast(d_sh, pipe: int, ctx, dst: LocalTensor, src, start: int, stride: int,
                     repeat: int, gap: int) -> bool:
    """:func:`_track_load` in the compiled walk (:mod:`.track_fast`) when it finds nothing
    to report and every source byte is initialised (nearly always): True. False: the
    numpy path is to run (any read made here is one it makes again the same)."""
    if isinstance(src, GlobalTensor):
        return _track_fast.write(d_sh, pipe, dst.offset >> 5, repeat, (1 + gap) * 16, 16, True)
    s_lo = (src.offset >> 5) + start * 16                     # src is 32 B aligned
    if stride == 0:                                           # one fractal, read again
        s_rows, s_stride = 1, 0
    else:
        s_rows, s_stride = repeat, stride * 16
    if _track_fast.read(shadow(ctx, src), pipe, s_lo, s_rows, s_stride, 16, True) != 1:
        return False
    return _track_fast.write(d_sh, pipe, dst.offset >> 5, repeat, (1 + gap) * 16, 16, True)


def LoadDataWithTranspose(dst: LocalTensor, src: LocalTensor,
                          loadDataParams: LoadData2dTransposeParams) -> None:
    """``LoadDataWithTranspose``: L1 (A1/B1) -> L0A/L0B (A2/B2), transposing squares.

    One repeat transposes one square matrix: for half/bfloat16 one 16 x 16 fractal; for
    (u)int8 two consecutive 16 x 32 fractals stacked into 32 x 32, transposed and split
    back into two 16 x 32 fractals (rows 0-15, rows 16-31); for float/(u)int32 two
    consecutive 16 x 8 fractals side by side as 16 x 16, transposed and split into two
    16 x 8 fractals (columns 0-7, 8-15). The square of repeat ``r`` is square
    ``startIndex + r*srcStride`` of ``src`` (square-sized units); its first destination
    fractal starts ``r*(1 + dstGap)`` fractals from ``dst`` and its second ``1 +
    dstFracGap`` fractals after the first. Runs on PIPE_MTE1 (256 B/cycle into L0A, 128
    into L0B).

    Source: hiascend LoadDataWithTranspose (atlasascendc_api_07_0239, 80RC2 0234: the
    struct and the three per-type examples); pyasc docs/python-api
    asc.language.basic.load_data_with_transpose.

    Raises:
        KernelError: src not in L1 or dst not in L0A/L0B. DtypeError: types differ or
        unsupported (int4b_t is not modelled). LimitError: a field out of range.
        AlignmentError: a misaligned operand. UbError: a fractal outside its buffer.
    """
    ctx = _core.current_core()
    name, pipe_name = "LoadDataWithTranspose", "PIPE_MTE1"
    p = loadDataParams
    require_local(src, {_L1}, name, "src", "A1/B1")
    require_local(dst, _L0, name, "dst", "A2/B2")
    _check_load_types(ctx, name, dst, src, pipe_name)
    start, repeat, stride, gap = _check_2d_fields(name, p, pipe_name)
    frac_gap = check_range(name, "dstFracGap", p.dstFracGap, 0, 65535, pipe_name,
                           "Load2D.md, LoadData2dTransposeParams")
    if repeat == 0:
        return
    isz = dst.dtype.itemsize
    per = 1 if isz == 2 else 2                           # fractals per square
    src_sq = start + np.arange(repeat) * stride
    data = _read_fractals(ctx, src, src_sq, per, name, pipe_name)   # [G, repeat, per * 512]
    data = _transpose_squares(data, isz)                 # transposed, split into fractals
    first = np.arange(repeat) * (1 + gap)
    dst_frac = first[:, None] + np.arange(per) * (1 + frac_gap)
    _write_fractals(ctx, dst, dst_frac.reshape(-1), _fractals(data.reshape(len(data), -1)),
                    src, src_sq, per, PIPE_MTE1, name, pipe_name)
    _cost(ctx, dst, src, repeat * per * FRACTAL_BYTES, int(src_sq[-1]), PIPE_MTE1, name)


def _transpose_squares(data: np.ndarray, isz: int) -> np.ndarray:
    """The squares ``data`` ([G, repeat, square bytes]) transposed and split into fractals,
    as :func:`_square_perm` orders their bytes, by element views and one copy (a byte
    gather costs several times more)."""
    g, r, _ = data.shape
    if isz == 2:                                   # one 16 x 16 fractal of 2-byte elements
        t = data.view(np.uint16).reshape(g, r, 16, 16).transpose(0, 1, 3, 2)
    elif isz == 1:                                 # 32 x 32 bytes; rows 0-15, 16-31 after
        t = data.reshape(g, r, 32, 32).transpose(0, 1, 3, 2)
    else:     # fractal a (16 x 8) = rows f*8 + j', columns b: element (a*8 + b, f*8 + j')
        t = data.view(np.uint32).reshape(g, r, 2, 2, 8, 8).transpose(0, 1, 3, 2, 5, 4)
    return np.ascontiguousarray(t).view(np.uint8).reshape(g, r, -1)


@functools.lru_cache(maxsize=None)
def _square_perm(isz: int, per: int) -> np.ndarray:
    """Byte ``j`` of a transposed square comes from byte ``perm[j]`` of the source square
    (``per`` fractals of ``isz``-byte elements; each element's bytes move together)."""
    idx = np.arange(per * FRACTAL_BYTES)
    if isz == 2:                                   # one 16 x 16 fractal
        return idx.reshape(16, 16, 2).transpose(1, 0, 2).reshape(-1)
    if isz == 1:                                   # 2 x (16 x 32) stacked: 32 x 32, split by rows
        return idx.reshape(32, 32).T.reshape(-1)
    w = idx.reshape(2, 16, 8, 4)                   # 2 x (16 x 8) side by side: 16 x 16
    t = np.concatenate([w[0], w[1]], axis=1).transpose(1, 0, 2)
    return np.stack([t[:, :8], t[:, 8:]]).reshape(-1)   # split by columns 0-7, 8-15


def _check_2d_fields(name: str, p, pipe_name: str) -> tuple:
    """(startIndex, repeatTimes, srcStride, dstGap) of a LoadData2DParams-like ``p``, each
    checked against its documented range (LimitError naming the field otherwise)."""
    return (check_range(name, "startIndex", p.startIndex, 0, 65535, pipe_name, _LOAD_SRC),
            check_range(name, "repeatTimes", p.repeatTimes, 0, 255, pipe_name, _LOAD_SRC),
            check_range(name, "srcStride", p.srcStride, 0, 65535, pipe_name, _LOAD_SRC),
            check_range(name, "dstGap", p.dstGap, 0, 65535, pipe_name, _LOAD_SRC))


def _check_load_types(ctx, name: str, dst, src, pipe: str) -> None:
    if dst.dtype != src.dtype:
        raise DtypeError(name, f"dst {dst.dtype.name} and src {src.dtype.name} must be the same "
                         "type", pipe=pipe)
    if dst.dtype not in _load2d_types(ctx.soc):
        raise DtypeError(name, f"{dst.dtype.name} is not a LoadData type on "
                         f"{ctx.soc.soc_version} (Load2D.md, 数据类型)", pipe=pipe)
    for t, role in ((dst, "dst"), (src, "src")):
        if isinstance(t, LocalTensor):
            require_aligned(t, _core.MEMORY_ALIGN[t.mem], name, role, pipe,
                            "Load2D.md: L0A/L0B 512 B, L1 32 B")


def _read_fractals(ctx, src, index: np.ndarray, per: int, name: str, pipe: str) -> np.ndarray:
    """The ``per`` consecutive fractals at each of ``index`` (units of ``per`` fractals),
    ``[G, len(index), per * 512]``."""
    unit = per * FRACTAL_BYTES
    nbytes = (int(index.max()) + 1) * unit
    buf = stacked(ctx, src.bytes_view, nbytes, name, pipe)
    return buf.reshape(len(buf), -1, unit)[:, index]


def _write_fractals(ctx, dst: LocalTensor, dst_frac: np.ndarray, data: np.ndarray,
                    src: LocalTensor, src_unit: np.ndarray, per: int, pipe, name: str,
                    pipe_name: str) -> None:
    """Store ``data`` (``[G, fractals, 512]``: the squares of ``src`` at ``src_unit``,
    transposed, one row per destination fractal) and tell the checker."""
    frames = _fractals(stacked(ctx, dst.bytes_view, (int(dst_frac.max()) + 1) * FRACTAL_BYTES,
                               name, pipe_name))
    if ctx.tracker is not None:
        _track_squares(ctx, int(pipe), name, dst, dst_frac, src, src_unit, per)
    frames[:, dst_frac] = data


def _track_squares(ctx, pipe: int, name: str, dst: LocalTensor, dst_frac: np.ndarray,
                   src: LocalTensor, src_unit: np.ndarray, per: int) -> None:
    """LoadDataWithTranspose's checker work by whole 32 B blocks: the source squares read
    (units of ``per`` fractals at ``src_unit``), their bytes' initialised state carried,
    transposed as the bytes are, to the destination fractals ``dst_frac``, and those fractals
    written. The same checks, messages and state as :func:`checker.copy_state` given every
    byte's address, without the per-byte addresses (both operands are 32 B aligned)."""
    unit = per * FRACTAL_BYTES
    s_sh, d_sh = shadow(ctx, src), shadow(ctx, dst)
    s_lo = src.offset + int(src_unit.min()) * unit
    s_hi = src.offset + (int(src_unit.max()) + 1) * unit
    s_blk = ((src.offset >> 5) + src_unit[:, None] * (unit // 32) + np.arange(unit // 32))
    s_sh.read_blocks(ctx, pipe, checker._blocks_of(s_blk.reshape(-1) << 5, s_lo, s_hi), s_lo,
                     s_hi, name)
    s_init = s_sh.init[src.offset:s_hi].reshape(-1, unit)[src_unit]
    if s_init.all():                    # nearly always: no order to keep
        s_init = True
    else:
        s_init = s_init[:, _square_perm(dst.dtype.itemsize, per)].reshape(-1, FRACTAL_BYTES)
    d_lo = dst.offset + int(dst_frac.min()) * FRACTAL_BYTES
    d_hi = dst.offset + (int(dst_frac.max()) + 1) * FRACTAL_BYTES
    d_blk = (dst.offset >> 5) + dst_frac[:, None] * (FRACTAL_BYTES // 32) + np.arange(16)
    d_sh.write_blocks(ctx, pipe, checker._blocks_of(d_blk.reshape(-1) << 5, d_lo, d_hi), d_lo,
                      d_hi, name)
    d_sh.init[dst.offset:d_hi].reshape(-1, FRACTAL_BYTES)[dst_frac] = s_init


def _cost(ctx, dst: LocalTensor, src, nbytes: int, last_unit: int, pipe, name: str) -> None:
    """Record the move; ``last_unit``: the furthest source unit read (GM span)."""
    if isinstance(src, GlobalTensor):           # GM -> L1/L0: a DMA read on MTE2
        span = (last_unit + 1) * FRACTAL_BYTES
        if _timing_only.ACTIVE:
            _timing_only.gm_to_cube(ctx, src, span)
        _dc._dma(ctx, True, nbytes, name, src, span)
    else:
        ctx.record(_core.OP, pipe, float(mte1_cycles(ctx.soc, nbytes, dst.mem)), 0, None, name)
