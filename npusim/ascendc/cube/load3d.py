"""LoadData with ``LoadData3DParamsV2`` (img2col v2, "Load3Dv2") L1 -> L0A / L0B, and the
registers it reads: SetFmatrix, SetLoadDataPaddingValue, SetLoadDataRepeat,
SetLoadDataBoundary. ``LoadData2DParamsV2`` is the struct of the 3510 architecture's 2D
load; A2/A3 refuse it as their library does.

What Load3Dv2 computes (LoadData 卷积数据搬运 v2 page; asc-devkit sample mmad_load3dv2 and
its README; dav_c220 ``LoadData3DV2L12L0ACal`` / ``L0BCal``):

* The source in L1 is a feature map in NC1HWC0: ``C1 = channelSize / C0`` blocks of
  ``H x W`` rows of ``C0 = 32 B / sizeof(T)`` channels; element (c1, h, w, c0) sits at
  ``((c1*H + h)*W + w)*C0 + c0``. H, W and the padding (left, right, top, bottom) are the
  fmatrix register's (SetFmatrix), or the instruction's own ``l1H``/``l1W``/``padList``
  under the default ``IsResetLoad3dConfig`` {isSetFMatrix true, isSetPadding true}, which
  writes the left fmatrix and the padding value before the load, as the library does.
* img2col: output position ``p`` (``Ho x Wo`` of them, row-major) and kernel entry
  ``(c1, kh, kw, c0)`` give one element; the M axis counts positions, the K axis entries,
  ``k = ((c1*Kh + kh)*Kw + kw)*C0 + c0``; a tap outside the map reads the padding value.
  The instruction takes M rows ``[mStartPt, mStartPt + mExtension)`` and K columns
  ``[kStartPt, kStartPt + kExtension)``.
* Into L0A: the ZZ layout (16 x C0 fractals, row-major inside and between); with
  ``enTranspose`` (16-bit types) each fractal is transposed and the fractals are stored
  K-block major — the form a matmul uses to load A^T kept k x m in L1 as A in ZZ.
  Into L0B: the ZN layout of a 16 x 16 (k x n) fractal per (M block, K block), M block
  major, columns of M inside (so B kept k x n in L1 lands as L0B's ZN); float: two 8-row
  halves per 16 rows, each column of 8. ``enTranspose`` changes nothing into L0B on A2.

A matmul's forms (l1H = 1, 1 x 1 filter, stride and dilation 1, no padding) make L1's NZ
matrix the feature map, so one instruction loads a whole base slice of A or B: the
reason tuned kernels use it (one MTE1 head instead of one per 16 rows).

Repeats (SetLoadDataRepeat: "one call of Load3Dv2 does several iterations"; repeatTime
iterations "along height (repeatMode 0) / width (repeatMode 1)", repeatStride "the distance
between the start addresses of one iteration and the next", in units of 16 elements (mode
0) or 32 B / sizeof(T) elements (mode 1): the SetLoadDataRepeat page). Read here as: the
start moves in the destination (img2col) matrix, ``mStartPt + r * repeatStride * 16`` for
iteration r in mode 0 (M is the height), ``kStartPt + r * repeatStride * C0`` in mode 1
(K is the width); iteration r writes its mExtension x kExtension block (in the layout
above) right after iteration r - 1's in L0, as A2's repeat register has no destination
stride [R: the page does not say where the iterations land; the 3510 adds a dstStride].
repeatTime 0 is a NOP. ``enSmallK`` (16 x 4 fractals) is refused: the page says current
products no longer support it.

Modelled: channelSize, kStartPt and kExtension whole C0 blocks, mExtension a multiple of
16 (the fractal grid; a transposed float kExtension too), mStartPt any position (Ascend C's
Matmul starts a float slice's K rows at a multiple of baseK, e.g. 40), boundary 0
(SetLoadDataBoundary: no wrap); int8 into L0A without transpose. Anything else is a
KernelError naming the field.

Cost: one instruction on PIPE_MTE1, ``mte1_head_cycles + ceil(bytes / rate)`` over the
bytes of every iteration (one head for the repeats [R]), with the LoadData2D rates (256 B/cycle into L0A, 128 into L0B; docs/reference/hardware.md §2.1).
The page gives stride-dependent rates for convolution windows ("512/(n+2) and similar,
never below 32"); the matmul forms (stride 1, 1 x 1 filter) move whole fractals and take
the 2D rates [R]. The Set* register writes cost one PIPE_S cycle each (§2.1 pipe table).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc.cube.common import (BLOCK_CUBE, byte_addr, check_range, mte1_cycles,
                                        record_op, require_aligned, require_local, shadow,
                                        stacked)
from npusim.ascendc.types import PIPE_MTE1, PIPE_S, bfloat16_t
from npusim.errors import DtypeError, KernelError

__all__ = ["LoadData3DParamsV2", "LoadData2DParamsV2", "LoadDataRepeatParam", "FmatrixMode",
           "IsResetLoad3dConfig", "IS_RESER_LOAD3D_DEFAULT_CONFIG", "SetFmatrix",
           "SetLoadDataBoundary", "SetLoadDataRepeat", "SetLoadDataPaddingValue", "PAD_SIZE"]

#: Entries of a padList: left, right, top, bottom (kernel_struct_mm.h).
PAD_SIZE = 4
_SRC = "LoadData 卷积数据搬运 v2 (LoadData3DParamsV2)"
_NAME = "LoadData"


class FmatrixMode:
    """``FmatrixMode``: which fmatrix register SetFmatrix writes (left: L0A loads, right:
    those with ``fMatrixCtrl`` True)."""

    FMATRIX_LEFT = 0
    FMATRIX_RIGHT = 1


@dataclass(frozen=True)
class IsResetLoad3dConfig:
    """``IsResetLoad3dConfig`` template argument of LoadData with LoadData3DParamsV2:
    whether the call writes the (left) fmatrix from the params' l1H/l1W/padList and the
    padding value from padValue before loading (both True by default)."""

    isSetFMatrix: bool = True
    isSetPadding: bool = True


IS_RESER_LOAD3D_DEFAULT_CONFIG = IsResetLoad3dConfig()


@dataclass
class LoadData3DParamsV2:
    """``LoadData3DParamsV2<T>``, C++ field order (kernel_struct_mm.h).

    padList: [left, right, top, bottom] padding (0-255). l1H, l1W: feature map height and
    width. channelSize: channels (C1 * C0). kExtension, mExtension: K columns and M rows
    loaded; kStartPt, mStartPt: the first of each. strideW/H, filterW/H, dilationFilterW/H:
    the window (filterSizeW/H add 256 to filterW/H). enTranspose: transpose the fractals
    into L0A (16-bit types). enSmallK: refused (not supported by current products). padValue:
    the padding value.
    fMatrixCtrl: read the right fmatrix register (SetFmatrix FMATRIX_RIGHT).
    """

    padList: list = field(default_factory=lambda: [0, 0, 0, 0])
    l1H: int = 0
    l1W: int = 0
    channelSize: int = 0
    kExtension: int = 0
    mExtension: int = 0
    kStartPt: int = 0
    mStartPt: int = 0
    strideW: int = 1
    strideH: int = 1
    filterW: int = 1
    filterH: int = 1
    dilationFilterW: int = 1
    dilationFilterH: int = 1
    enTranspose: bool = False
    enSmallK: bool = False
    padValue: float = 0
    filterSizeW: bool = False
    filterSizeH: bool = False
    fMatrixCtrl: bool = False


@dataclass
class LoadData2DParamsV2:
    """``LoadData2DParamsV2`` (kernel_struct_mm.h): the 2D load of the 3510 architecture
    (Ascend 950). A2/A3 do not have it: their LoadData refuses it (dav_c220
    ``LoadData2DL12L0ACal``: "not support"); use LoadData2DParams or LoadData3DParamsV2."""

    mStartPosition: int = 0
    kStartPosition: int = 0
    mStep: int = 0
    kStep: int = 0
    srcStride: int = 0
    dstStride: int = 0
    ifTranspose: bool = False
    sid: int = 0


@dataclass
class LoadDataRepeatParam:
    """``LoadDataRepeatParam`` (SetLoadDataRepeat): repeatStride (units of 16 rows in mode
    0, of C0 columns in mode 1), repeatTime (iterations; 1: one load), repeatMode (0: along
    M, 1: along K)."""

    repeatStride: int = 0
    repeatTime: int = 1
    repeatMode: int = 0
    reserved: int = 0


class _Regs:
    """A cube core's Load3D registers (reset state: nothing set, repeat 1, boundary 0)."""

    __slots__ = ("fmatrix", "pad_value", "repeat", "boundary")

    def __init__(self):
        self.fmatrix = [None, None]          # left, right: (H, W, (left, right, top, bottom))
        self.pad_value = 0
        self.repeat = LoadDataRepeatParam()
        self.boundary = 0


def _regs(ctx) -> _Regs:
    regs = getattr(ctx, "load3d_regs", None)
    if regs is None:
        regs = ctx.load3d_regs = _Regs()
    return regs


def _pads(pad_list, instruction: str) -> tuple:
    pads = tuple(int(p) for p in pad_list)
    if len(pads) != PAD_SIZE or any(not 0 <= p <= 255 for p in pads):
        raise KernelError(instruction, f"padList must be {PAD_SIZE} values in [0, 255] (left, "
                          f"right, top, bottom), not {list(pad_list)}", pipe="PIPE_S")
    return pads


def SetFmatrix(l1H: int, l1W: int, padList, fmatrixMode=FmatrixMode.FMATRIX_LEFT) -> None:
    """``SetFmatrix(l1H, l1W, padList, fmatrixMode)``: write the feature map's height,
    width and padding (left, right, top, bottom) into the left or right fmatrix register,
    for LoadData with LoadData3DParamsV2 under ``IsResetLoad3dConfig{false, ...}``.
    Raises KernelError: a padList that is not 4 values in [0, 255]."""
    ctx = _core.current_core()
    mode = int(fmatrixMode)
    if mode not in (0, 1):
        raise KernelError("SetFmatrix", f"fmatrixMode {fmatrixMode!r} is not FMATRIX_LEFT or "
                          "FMATRIX_RIGHT", pipe="PIPE_S")
    h = check_range("SetFmatrix", "l1H", l1H, 0, 65535, "PIPE_S", _SRC)
    w = check_range("SetFmatrix", "l1W", l1W, 0, 65535, "PIPE_S", _SRC)
    _regs(ctx).fmatrix[mode] = (h, w, _pads(padList, "SetFmatrix"))
    record_op(ctx, PIPE_S, 1, "SetFmatrix")


def SetLoadDataPaddingValue(padValue) -> None:
    """``SetLoadDataPaddingValue(padValue)``: the value Load3D writes for taps outside the
    feature map (converted to the load's type when used)."""
    ctx = _core.current_core()
    _regs(ctx).pad_value = padValue
    record_op(ctx, PIPE_S, 1, "SetLoadDataPaddingValue")


def SetLoadDataRepeat(repeatParams: LoadDataRepeatParam) -> None:
    """``SetLoadDataRepeat(LoadDataRepeatParam)``: Load3D's repeat register: each later
    Load3Dv2 does ``repeatTime`` iterations, the start moving ``repeatStride`` units along M
    (repeatMode 0, 16 rows) or K (repeatMode 1, C0 columns) each time (module docstring)."""
    ctx = _core.current_core()
    p = repeatParams
    check_range("SetLoadDataRepeat", "repeatTime", p.repeatTime, 0, 255, "PIPE_S", _SRC)
    check_range("SetLoadDataRepeat", "repeatStride", p.repeatStride, 0, 65535, "PIPE_S", _SRC)
    check_range("SetLoadDataRepeat", "repeatMode", p.repeatMode, 0, 1, "PIPE_S", _SRC)
    _regs(ctx).repeat = LoadDataRepeatParam(int(p.repeatStride), int(p.repeatTime),
                                            int(p.repeatMode))
    record_op(ctx, PIPE_S, 1, "SetLoadDataRepeat")


def SetLoadDataBoundary(boundaryValue: int) -> None:
    """``SetLoadDataBoundary(boundaryValue)``: the L1 boundary past which Load3D wraps to
    the start of L1; 0 (the reset value) means none. Only 0 is modelled: a Load3D under
    another boundary is a KernelError."""
    ctx = _core.current_core()
    _regs(ctx).boundary = check_range("SetLoadDataBoundary", "boundaryValue", boundaryValue, 0,
                                      2**32 - 1, "PIPE_S", _SRC)
    record_op(ctx, PIPE_S, 1, "SetLoadDataBoundary")


# -- the load ----------------------------------------------------------------------------------

#: Types Load3Dv2 takes on A2/A3 into L0A and L0B (mmad_load3dv2 README; dav_c220 checks;
#: int4b_t is not modelled).
_L0A_TYPES = frozenset(np.dtype(t) for t in ("i1", "u1", "f2", "f4", "i4", "u4")) | {bfloat16_t}
_L0B_TYPES = frozenset(np.dtype(t) for t in ("f2", "f4", "i4", "u4")) | {bfloat16_t}


def not_on_a2_2dv2() -> KernelError:
    return KernelError(_NAME, "LoadData2DParamsV2 is the 2D load of the 3510 architecture "
                       "(Ascend 950); A2/A3 do not have it (dav_c220 LoadData2DL12L0ACal: not "
                       "supported): use LoadData2DParams, or LoadData3DParamsV2 for one "
                       "instruction per base slice", pipe="PIPE_MTE1")


def load3dv2(dst, src, p: LoadData3DParamsV2, config: IsResetLoad3dConfig) -> None:
    """``LoadData<T, config>(dst, src, LoadData3DParamsV2)``: module docstring."""
    ctx = _core.current_core()
    pipe = "PIPE_MTE1"
    require_local(src, {_core.L1}, _NAME, "src", "A1/B1")
    require_local(dst, {_core.L0A, _core.L0B}, _NAME, "dst", "A2/B2")
    if dst.dtype != src.dtype:
        raise DtypeError(_NAME, f"dst {dst.dtype.name} and src {src.dtype.name} must be the same "
                         "type", pipe=pipe)
    to_a = dst.mem == _core.L0A
    if dst.dtype not in (_L0A_TYPES if to_a else _L0B_TYPES):
        raise DtypeError(_NAME, f"LoadData3DParamsV2 does not load {dst.dtype.name} into "
                         f"{'L0A' if to_a else 'L0B'} on A2/A3 (L0A: (u)int8, half, bfloat16, "
                         "float, (u)int32; L0B: half, bfloat16, float, (u)int32; "
                         "mmad_load3dv2 README)", pipe=pipe)
    require_aligned(src, 32, _NAME, "src", pipe, "LoadData3DParamsV2: L1 32 B")
    require_aligned(dst, 512, _NAME, "dst", pipe, "LoadData3DParamsV2: L0A/L0B 512 B")
    regs = _regs(ctx)
    if config.isSetFMatrix:        # the library writes the left fmatrix from the params
        regs.fmatrix[0] = (check_range(_NAME, "l1H", p.l1H, 0, 65535, pipe, _SRC),
                           check_range(_NAME, "l1W", p.l1W, 0, 65535, pipe, _SRC),
                           _pads(p.padList, _NAME))
    if config.isSetPadding:
        regs.pad_value = p.padValue
    fm = regs.fmatrix[1 if p.fMatrixCtrl else 0]
    if fm is None:
        raise KernelError(_NAME, f"the {'right' if p.fMatrixCtrl else 'left'} fmatrix was never "
                          "set: call SetFmatrix(l1H, l1W, padList, FmatrixMode."
                          f"FMATRIX_{'RIGHT' if p.fMatrixCtrl else 'LEFT'}) first, or load with "
                          "the default IsResetLoad3dConfig", pipe=pipe)
    if regs.boundary:
        raise KernelError(_NAME, f"SetLoadDataBoundary({regs.boundary}): only boundary 0 (no "
                          "wrap) is modelled", pipe=pipe)
    if p.enSmallK:
        raise KernelError(_NAME, "LoadData3DParamsV2.enSmallK (16 x 4 fractals) is not supported "
                          "by current products (LoadData 卷积数据搬运 v2, table 4: \"当前产品形态，"
                          "该特性已不再支持\"); leave it False", pipe=pipe)
    isz = dst.dtype.itemsize
    c0 = 32 // isz
    transpose = bool(p.enTranspose) and to_a
    if transpose and isz == 1:
        raise KernelError(_NAME, "enTranspose into L0A takes 16- and 32-bit types on A2/A3 "
                          "(mmad_load3dv2 README), not int8", pipe=pipe)
    rng = functools.partial(check_range, _NAME, pipe=pipe, source=_SRC)
    geo = dict(
        H=fm[0], W=fm[1], pads=fm[2], C=rng("channelSize", p.channelSize, 0, 65535),
        sw=rng("strideW", p.strideW, 1, 63), sh=rng("strideH", p.strideH, 1, 63),
        kw=rng("filterW", p.filterW, 0, 255) + 256 * bool(p.filterSizeW),
        kh=rng("filterH", p.filterH, 0, 255) + 256 * bool(p.filterSizeH),
        dw=rng("dilationFilterW", p.dilationFilterW, 1, 255),
        dh=rng("dilationFilterH", p.dilationFilterH, 1, 255), c0=c0)
    m0, mext = rng("mStartPt", p.mStartPt, 0, 65535), rng("mExtension", p.mExtension, 0, 65535)
    k0, kext = rng("kStartPt", p.kStartPt, 0, 65535), rng("kExtension", p.kExtension, 0, 65535)
    k_unit = BLOCK_CUBE if transpose else c0      # float transposed: squares of 16 x 16
    # mStartPt is a position of the output (any one: the library's matmul starts its K
    # rows at multiples of baseK, 8 for float, load_to_l0a_loadInstr.h); the extents are
    # whole fractals
    for fname, v, unit in (("mExtension", mext, BLOCK_CUBE),
                           ("kStartPt", k0, c0), ("kExtension", kext, k_unit),
                           ("channelSize", geo["C"], c0)):
        if v % unit:
            raise KernelError(_NAME, f"{fname} = {v} is not a multiple of {unit} (whole "
                              f"fractals: 16 rows, C0 = {c0} {dst.dtype.name} columns; the "
                              "forms modelled)", pipe=pipe)
    rep = regs.repeat
    if (mext == 0 or kext == 0 or geo["C"] == 0 or geo["kw"] == 0 or geo["kh"] == 0
            or rep.repeatTime == 0):
        return                                    # a NOP (kernel_operator_mm_check.h)
    # SetLoadDataRepeat: iteration r starts repeatStride * r units further along the
    # destination matrix's height (mode 0, units of 16 rows of M) or width (mode 1, units
    # of C0 columns of K), and writes its mExtension x kExtension block after the previous
    # one in L0 (module docstring)
    step_m, step_k = ((rep.repeatStride * BLOCK_CUBE, 0) if rep.repeatMode == 0
                      else (0, rep.repeatStride * c0))
    pad = np.asarray(regs.pad_value).astype(dst.dtype)
    dst_idx, keep = _dst_index(mext, kext, c0, to_a, transpose)
    d_idx, block = dst_idx[keep], mext * kext
    d = stacked(ctx, dst.elements, block * (rep.repeatTime - 1) + int(dst_idx.max()) + 1,
                _NAME, pipe)
    for r in range(rep.repeatTime):
        src_idx, valid = _img2col_index(m0 + r * step_m, mext, k0 + r * step_k, kext, **geo)
        s = stacked(ctx, src.elements, int(src_idx.max()) + 1, _NAME, pipe)  # [G, n]
        values = np.where(valid, s[:, src_idx], pad)[:, keep]                  # [G, taps]
        if ctx.tracker is not None:
            _track(ctx, dst, src, d_idx + r * block, src_idx[keep], valid[keep])
        d[:, d_idx + r * block] = values
    nbytes = mext * kext * isz * rep.repeatTime
    ctx.record(_core.OP, PIPE_MTE1, float(mte1_cycles(ctx.soc, nbytes, dst.mem)), 0, None,
               _NAME)


@functools.lru_cache(maxsize=64)
def _img2col_index(m0, mext, k0, kext, H, W, pads, C, sw, sh, kw, kh, dw, dh, c0):
    """(src element index, in-map mask), both [mext, kext]: row m of the M slice is output
    position ``m0 + m``, column k of the K slice kernel entry ``k0 + k`` (module
    docstring); taps outside the map (or positions past Ho*Wo) are masked."""
    left, right, top, bottom = pads
    wo_n = (W + left + right - ((kw - 1) * dw + 1)) // sw + 1
    ho_n = (H + top + bottom - ((kh - 1) * dh + 1)) // sh + 1
    pos = m0 + np.arange(mext)[:, None]
    ho, wo = pos // max(wo_n, 1), pos % max(wo_n, 1)
    kk = k0 + np.arange(kext)[None, :]
    c1, rem = kk // (kh * kw * c0), kk % (kh * kw * c0)
    tap, cc = rem // c0, rem % c0
    h = ho * sh + (tap // kw) * dh - top
    w = wo * sw + (tap % kw) * dw - left
    valid = (h >= 0) & (h < H) & (w >= 0) & (w < W) & (pos < ho_n * wo_n) & (c1 * c0 < C)
    idx = ((c1 * H + np.clip(h, 0, max(H - 1, 0))) * W + np.clip(w, 0, max(W - 1, 0))) * c0 + cc
    idx, valid = np.broadcast_arrays(idx, valid)
    idx, valid = idx.copy(), valid.copy()
    idx.flags.writeable = valid.flags.writeable = False       # cached: shared by every call
    return idx, valid


@functools.lru_cache(maxsize=64)
def _dst_index(mext: int, kext: int, c0: int, to_a: bool, transpose: bool):
    """(dst element index, written mask), both [mext, kext]: where element (m, k) of the
    slice lands in L0A / L0B (module docstring)."""
    m = np.arange(mext)[:, None]
    k = np.arange(kext)[None, :]
    m1, k1 = mext // BLOCK_CUBE, kext // c0
    frac = BLOCK_CUBE * c0
    if to_a and not transpose:         # ZZ: fractal (m/16, k/C0), row-major inside
        idx = ((m // 16) * k1 + k // c0) * frac + (m % 16) * c0 + k % c0
    elif to_a and c0 == BLOCK_CUBE:    # 16-bit, transposed: fractal (k/16, m/16), k rows
        idx = ((k // 16) * m1 + m // 16) * 256 + (k % 16) * 16 + m % 16
    elif to_a:                         # 32-bit, transposed: per 16 x 16 square (k/16, m/16)
        # two 16 x 8 fractals (m % 16 < 8, then the rest), k rows, 8 m columns each
        idx = (((k // 16) * m1 + m // 16) * 2 + (m % 16) // 8) * 128 + (k % 16) * 8 + m % 8
    elif c0 == BLOCK_CUBE:             # L0B, 16-bit: fractal (m/16, k/16), columns of m
        idx = ((m // 16) * k1 + k // 16) * 256 + (k % 16) * 16 + m % 16
    else:                              # L0B, 32-bit: halves of 8 rows, columns of 8 of m
        kpad = -(-kext // 16) * 16
        idx = ((m // 16) * 2 + (m % 16) // 8) * kpad * 8 + k * 8 + m % 8
    idx = np.broadcast_to(idx, (mext, kext)).copy()
    keep = np.ones((mext, kext), dtype=bool)
    idx.flags.writeable = keep.flags.writeable = False
    return idx, keep


def _track(ctx, dst, src, d_idx, s_idx, valid) -> None:
    """The checker: the map's bytes read (their state carried to the destination, as
    LoadData's), the destination written; padding taps are defined bytes."""
    d_sh, s_sh = shadow(ctx, dst), shadow(ctx, src)
    if d_sh is None:
        return
    pipe = int(PIPE_MTE1)
    s_addr = byte_addr(src, s_idx[valid])
    init = np.ones(d_idx.shape + (dst.dtype.itemsize,), dtype=bool)
    if s_addr.size:
        s_sh.read_at(ctx, pipe, s_addr, _NAME, check_init=False)
        init[valid] = s_sh.init[s_addr].reshape(-1, dst.dtype.itemsize)
    d_sh.write_at(ctx, pipe, byte_addr(dst, d_idx), _NAME, init=init.reshape(-1))
