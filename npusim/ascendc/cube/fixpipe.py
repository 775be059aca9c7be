"""Fixpipe: L0C (CO1, NZ) -> GM (ND or NZ) or L1 (NZ), converting on the way, PIPE_FIX.

The one rounding of a matmul happens here: float L0C values become half/bfloat16
(F322F16 / F322BF16, round to nearest even, INF/NAN kept), int32 ones half (DEQF16:
times a scale), float or int32 ones int8/uint8 (QF322B8_PRE / REQ8: times a scale,
rounded to nearest even and saturated [R: the pages give no rounding mode]); the V* modes
take one scale per column from a uint64 table in L1. A scale is the float in bits
[31:13] of its uint64 (the low 13 mantissa bits are dropped: "bits[31:13] is deq value of
fp32", dav_c220 fixpipe implementation; Fixpipe.md: the processor's float has a 10-bit
mantissa for quantisation). ReLU (``reluEn``) applies after the conversion [R: order not
documented; it changes nothing for a positive scale]. A NaN a conversion, ReLU or an
atomic add writes is the canonical positive quiet NaN of its type (0x7FC00000, 0x7E00,
0x7FC0; :mod:`npusim.ascendc.nans`, the simulator's choice [R]); NoQuant without ReLU
moves L0C's bytes as they are.
"""
from __future__ import annotations

import numpy as np

from npusim import lockstep as _lockstep
from npusim.ascendc import checker
from npusim.ascendc import timing_only as _timing_only
from npusim.ascendc import datacopy as _dc
from npusim.ascendc import core as _core
from npusim.ascendc import nans as _nans
from npusim.ascendc.cube import unitflag as _unitflag
from npusim.ascendc.cube.common import (BLOCK_CUBE, byte_addr, ceil_div, check_range,
                                        fixpipe_cycles, not_modelled, record_op, require_aligned,
                                        require_local, shadow, stacked)
from npusim.ascendc.tensor import GlobalTensor, LocalTensor
from npusim.ascendc.types import (CFG_ROW_MAJOR, PIPE_FIX, CacheMode, CO2Layout, FixpipeConfig,
                                  FixpipeParamsV220, QuantMode_t, bfloat16_t, float32, half,
                                  int8_t, int32_t, uint8_t, uint64_t)
from npusim.errors import AlignmentError, DtypeError, KernelError, LimitError

__all__ = ["Fixpipe"]

Q = QuantMode_t
#: quantPre -> (L0C type, allowed destination types) (Fixpipe.md quantPre list).
_MODES = {
    Q.NoQuant: None,                                   # float -> float, int32 -> int32
    Q.F322F16: (float32, (half,)), Q.F322BF16: (float32, (bfloat16_t,)),
    Q.DEQF16: (int32_t, (half,)), Q.VDEQF16: (int32_t, (half,)),
    Q.QF322B8_PRE: (float32, (int8_t, uint8_t)), Q.VQF322B8_PRE: (float32, (int8_t, uint8_t)),
    Q.REQ8: (int32_t, (int8_t, uint8_t)), Q.VREQ8: (int32_t, (int8_t, uint8_t)),
}
_VECTOR_MODES = frozenset({Q.VDEQF16, Q.VQF322B8_PRE, Q.VREQ8})
_SCALAR_MODES = frozenset({Q.DEQF16, Q.QF322B8_PRE, Q.REQ8})


def Fixpipe(dst, src: LocalTensor, *args, config: FixpipeConfig = CFG_ROW_MAJOR,
            _table_in_fb: bool = False) -> None:
    """``Fixpipe<T, U, config>(dst, src, [cbufWorkspace,] FixpipeParamsV220)``: move the
    ``mSize x nSize`` top-left part of an NZ matrix out of L0C, converting it.

    ``src``: CO1 (L0C), float or int32, 64 B aligned; element (r, c) is read at
    ``(c // 16) * srcStride * 16 + r * 16 + c % 16`` (srcStride in rows of 16 elements).
    ``config=CFG_ROW_MAJOR`` (default): NZ -> ND into a GlobalTensor, element (r, c) of
    matrix i written at ``i * dstNdStride + r * dstStride + c`` elements; ``ndNum``
    matrices read ``srcNdStride`` x 1024 B apart. ``config=CFG_NZ``: the NZ layout kept,
    column block j written ``j * dstStride`` 32 B blocks from the start, rows of 16
    elements (8 with ``isChannelSplit``: float output as 16 x 8 fractals); into a GlobalTensor or L1 (A1/B1; A2/A3 write L1 in NZ only, and never
    float/int32: the value must be converted). ``cbufWorkspace``: the uint64 scale table in
    L1 (A1) for VDEQF16 / VQF322B8_PRE / VREQ8 (column c uses entry c).

    Conversions (quantPre -> L0C type -> destination types): NoQuant float->float,
    int32->int32; F322F16 float->half; F322BF16 float->bfloat16; (V)DEQF16 int32->half;
    (V)QF322B8_PRE float->int8/uint8; (V)REQ8 int32->int8/uint8 (module docstring).

    unitFlag (0, 2, 3): 3 reads the L0C units a Mmad with unitFlag 3 releases as they
    are computed, and hands them back to the next Mmad (:mod:`.unitflag`; FIX time then
    includes the waits for units).

    Cost: to GM a DMA write on PIPE_FIX of the converted bytes (costed like MTE3 writes;
    SetAtomicAdd applies); to L1 ``fixpipe_head_cycles + ceil(elements / 64)`` on PIPE_FIX
    (docs/reference/hardware.md §2.1: 64 elements/cycle); a V* mode first copies its table to
    the Fixpipe buffer at 32 B/cycle (§2.1 L1 -> FB).

    Source: asc-devkit docs/api/context/Fixpipe.md (hiascend atlasascendc_api_07_0251),
    pyasc docs/python-api asc.language.basic.fixpipe; asc-devkit fixpipe_l0c2l1 sample
    README (the L1 path's limits); dav_c220 kernel_operator_fixpipe_impl.h (scale bits).

    Raises:
        KernelError: the SoC has no Fixpipe (910A, 310P), src not in CO1, dst not GM/L1,
        a V* mode without cbufWorkspace (or a table with another mode), ND output into L1,
        or isChannelSplit with ND or non-float output. LimitError: unitFlag 1 (reserved).
        SyncError (checker): a unitFlag hand-off that does not pair (:mod:`.unitflag`). DtypeError: src, quantPre and dst
        types do not match. LimitError: a field out of range. AlignmentError: a misaligned
        operand or an NZ nSize not a multiple of 16.
        UbError / GmAccessError: out of bounds.
    """
    ctx = _core.current_core()
    name, pipe = "Fixpipe", "PIPE_FIX"
    if len(args) == 1:
        table, p = None, args[0]
    elif len(args) == 2:
        table, p = args
    else:
        raise KernelError(name, "Fixpipe(dst, src, [cbufWorkspace,] FixpipeParamsV220)")
    if not ctx.soc.support_fixpipe:
        raise KernelError(name, f"{ctx.soc.soc_version} has no Fixpipe (support_fixpipe is an "
                          "A2/A3 ini key; FixpipeParamsV220 is A2/A3 only)", pipe=pipe)
    nd_out = FixpipeConfig(config.format).format == CO2Layout.ROW_MAJOR
    _check(ctx, dst, src, table, p, nd_out, _table_in_fb)
    m = check_range(name, "mSize", p.mSize, 1, 8192 if nd_out else 65535, pipe)
    n = check_range(name, "nSize", p.nSize, 1, 4095, pipe)
    src_stride = check_range(name, "srcStride", p.srcStride, 0, 65535, pipe)
    if int(p.dstStride) <= 0:
        raise LimitError(name, f"dstStride = {int(p.dstStride)} must be >= 1 (Fixpipe.md, "
                         "parameter table)", pipe=pipe)
    # NZ column blocks: 16 columns, or 8 with the f32 channel split (each 16 x 16 fractal
    # written as two 16 x 8 ones; CCE intrinsic API, Fixpipe "f32 通道切分")
    c0 = 8 if (p.isChannelSplit and not nd_out) else BLOCK_CUBE
    if not nd_out and n % c0:
        raise AlignmentError(name, f"nSize = {n}: NZ output moves whole {c0}-column blocks "
                             f"(a multiple of {c0} {'with' if c0 == 8 else 'without'} channel "
                             "split)", pipe=pipe)
    count = check_range(name, "ndNum", p.ndNum, 0, 65535, pipe) if nd_out else 1
    if count == 0:
        ctx.warn("Fixpipe: ndNum = 0, nothing is moved (Fixpipe.md: not executed)")
        return
    src_nd = check_range(name, "srcNdStride", p.srcNdStride, 1, 512, pipe) if count > 1 else 0
    dst_nd = check_range(name, "dstNdStride", p.dstNdStride, 1, 65535, pipe) if count > 1 else 0
    # the source elements, (count, m, n)
    r, c = np.arange(m)[:, None], np.arange(n)[None, :]
    s_idx = (np.arange(count)[:, None, None] * src_nd * 256
             + (c // 16) * src_stride * 16 + r * 16 + c % 16)
    if ctx.is_group and (table is not None or (isinstance(dst, GlobalTensor)
                                               and ctx.atomic_dtype is not None)):
        # per block: a per-column table (a scale row per member), atomic stores (their
        # accumulation order)
        ctx.split()
    # [G, count, m, n]: one entry per member block (a lockstep group's, or a block's one)
    values = stacked(ctx, src.elements, int(s_idx.max()) + 1, name, pipe)[:, s_idx]
    scale = _scales(ctx, table, p, n)
    out = _convert(values, Q(p.quantPre), scale, bool(p.reluEn), dst.dtype)
    if nd_out:
        d_idx = np.arange(count)[:, None, None] * dst_nd + r * int(p.dstStride) + c
    else:      # NZ: column block j at j*dstStride 32 B blocks, rows of c0 elements
        per_block = 32 // dst.dtype.itemsize
        d_idx = ((c // c0) * int(p.dstStride) * per_block + r * c0 + c % c0)[None]
    flag = int(p.unitFlag)
    handoff = _unitflag.before_fixpipe(ctx, flag, src.offset, src.offset + (int(s_idx.max()) + 1)
                                       * src.dtype.itemsize)     # waits for released units
    sh = shadow(ctx, src)
    if sh is not None:
        sh.read_elements(ctx, int(PIPE_FIX), src.offset, s_idx, src.dtype.itemsize, name)
    if isinstance(dst, GlobalTensor):
        _to_gm(ctx, dst, d_idx, out, m, n, count, dst_nd, p, nd_out, c0)
    else:
        _to_l1(ctx, dst, d_idx, out)
    if table is not None and not _table_in_fb:   # the V* table goes L1 -> FB first (32 B/cycle)
        record_op(ctx, PIPE_FIX, ctx.soc.fixpipe_head_cycles + ceil_div(n * 8, 32), name)
    _unitflag.after_fixpipe(ctx, flag, handoff)


def _check(ctx, dst, src, table, p: FixpipeParamsV220, nd_out: bool,
           table_in_fb: bool = False) -> None:
    name, pipe = "Fixpipe", "PIPE_FIX"
    require_local(src, {_core.L0C}, name, "src", "CO1")
    require_aligned(src, 64, name, "src", pipe, "Fixpipe.md: src 64 B aligned")
    if isinstance(dst, LocalTensor):
        require_local(dst, {_core.L1}, name, "dst", "A1/B1 (or a GlobalTensor)")
        require_aligned(dst, 32, name, "dst", pipe)
        if nd_out:
            raise KernelError(name, "L0C -> L1 writes NZ only on A2/A3: pass config=CFG_NZ "
                              "(fixpipe_l0c2l1 sample)", pipe=pipe)
        if dst.dtype in (float32, int32_t):
            raise DtypeError(name, f"L0C -> L1 cannot keep {dst.dtype.name}: quantise or convert "
                             "(fixpipe_l0c2l1 sample: A2/A3 L1 output is never float)", pipe=pipe)
    elif not isinstance(dst, GlobalTensor):
        raise KernelError(name, "dst must be a GlobalTensor or an L1 LocalTensor", pipe=pipe)
    _unitflag.check_value(name, "FixpipeParamsV220.unitFlag", p.unitFlag, pipe)
    mode = Q(p.quantPre)
    want = _MODES[mode]
    if src.dtype not in (float32, int32_t):
        raise DtypeError(name, f"src is {src.dtype.name}: L0C holds float or int32", pipe=pipe)
    ok = (dst.dtype == src.dtype) if want is None else (src.dtype == want[0]
                                                        and dst.dtype in want[1])
    if not ok:
        raise DtypeError(name, f"quantPre {mode.name} does not turn {src.dtype.name} into "
                         f"{dst.dtype.name} (Fixpipe.md quantPre list)", pipe=pipe)
    if not nd_out and dst.dtype.itemsize == 1:
        raise not_modelled(name, "an 8-bit NZ output (its C0 layout is not documented)", pipe)
    if p.isChannelSplit and (nd_out or dst.dtype != float32):
        raise KernelError(name, "isChannelSplit splits float NZ output into 16 x 8 fractals: "
                          "NZ (CFG_NZ) float output only (CCE intrinsic API, Fixpipe: f32 "
                          "channel split)", pipe=pipe)
    if (mode in _VECTOR_MODES) != (table is not None):
        raise KernelError(name, f"quantPre {mode.name} {'needs' if table is None else 'takes no'}"
                          " cbufWorkspace (the per-column uint64 table in A1)", pipe=pipe)
    if table is not None:
        if table_in_fb:     # DataCopy out of L0C: the table SetFixPipeConfig named
            require_local(table, {_core.FB}, name, "the quant table", "C2PIPE2GM")
        else:
            require_local(table, {_core.L1}, name, "cbufWorkspace", "A1")
        if table.dtype != uint64_t:
            raise DtypeError(name, "cbufWorkspace is LocalTensor<uint64_t>", pipe=pipe)


def _scale_of(bits: np.ndarray) -> np.ndarray:
    """The float in bits [31:13] of each uint64 quantisation parameter."""
    return (np.asarray(bits, dtype=np.uint64) & np.uint64(0xFFFFE000)).astype(
        np.uint32).view(np.float32).astype(np.float64)


def _scales(ctx, table, p: FixpipeParamsV220, n: int):
    mode = Q(p.quantPre)
    if mode in _SCALAR_MODES:
        return _scale_of(np.array([int(p.deqScalar) & (2**64 - 1)], dtype=np.uint64))[0]
    if mode in _VECTOR_MODES:
        bits = table.elements(n, "Fixpipe", "PIPE_FIX")
        sh = shadow(ctx, table)
        if sh is not None:
            sh.read(ctx, int(PIPE_FIX), table.offset, n * 8, "Fixpipe")
        return _scale_of(bits)                               # one per column
    return None


def _convert(v: np.ndarray, mode: QuantMode_t, scale, relu: bool, dtype) -> np.ndarray:
    """The L0C values ``v`` through quantPre, then ReLU, as ``dtype`` (module docstring)."""
    if mode == Q.NoQuant:
        out = v.copy()
    elif mode in (Q.F322F16, Q.F322BF16):
        out = v.astype(dtype)                                # round to nearest even, inf kept
    else:
        x = v.astype(np.float64) * scale
        if dtype == half:                                    # DEQF16: no INF/NAN mode
            info = np.finfo(np.float16)
            out = np.clip(x, info.min, info.max).astype(np.float16)
        else:
            info = np.iinfo(dtype)
            out = np.clip(np.rint(x), info.min, info.max).astype(dtype)
    if relu:
        out = np.maximum(out, np.zeros((), dtype=out.dtype))
    if mode != Q.NoQuant or relu:
        _nans.canonical(out)          # a converted NaN: the one NaN of its type (nans.py)
    return out


def _to_gm(ctx, dst: GlobalTensor, d_idx, out, m, n, count, dst_nd, p, nd_out,
           c0: int = BLOCK_CUBE) -> None:
    """Store into GM (adding, under SetAtomicAdd) and record the DMA write on PIPE_FIX."""
    name, pipe = "Fixpipe", "PIPE_FIX"
    isz = dst.dtype.itemsize
    if dst.address % isz:
        raise AlignmentError(name, f"GM address 0x{dst.address:x} is not aligned to "
                             f"sizeof({dst.dtype.name})", pipe=pipe)
    span = (int(d_idx.max()) + 1) * isz
    # the rows stored: (byte offset from dst, row bytes, pitch, rows)
    rows = [(i * dst_nd * isz, n * isz, int(p.dstStride) * isz, m)
            for i in range(count)] if nd_out else \
           [(0, m * c0 * isz, int(p.dstStride) * 32, n // c0)]
    gms = _lockstep.gm_spans(ctx, dst, span, name, pipe, True, rows)   # one per member block
    for gm, member_out in zip(gms, out):
        gm = gm.view(dst.dtype)
        if ctx.atomic_dtype is None:
            gm[d_idx] = member_out
        else:                                # SetAtomicAdd<T>: add into GM as T
            gm[d_idx] = _accumulated(ctx, gm, d_idx, member_out)
    checker.note_gm(ctx, True, dst.address, rows, name, PIPE_FIX)     # the rows, exactly
    nbytes = out[0].size * isz
    ctx.bytes_written += nbytes
    if _timing_only.ACTIVE:
        _timing_only.cube_to_gm(ctx, dst, span)
    ctx.record(_core.DMA_OUT, PIPE_FIX, 0.0, nbytes, _dc.gm_key(ctx, dst, span, rows), name)


def _accumulated(ctx, gm, d_idx, out):
    dt = np.dtype(ctx.atomic_dtype)
    with np.errstate(all="ignore"):
        total = (gm[d_idx].astype(dt) + out.astype(dt)).astype(gm.dtype)
    return _nans.canonical(total)


def _to_l1(ctx, dst: LocalTensor, d_idx, out) -> None:
    name = "Fixpipe"
    view = stacked(ctx, dst.elements, int(d_idx.max()) + 1, name, "PIPE_FIX")
    sh = shadow(ctx, dst)
    if sh is not None:
        sh.write_at(ctx, int(PIPE_FIX), byte_addr(dst, d_idx), name)
    view[:, d_idx] = out
    record_op(ctx, PIPE_FIX, fixpipe_cycles(ctx.soc, out[0].size), name)
