"""The cube intrinsics of a compiled Ascend C kernel (an AIC build, dav-c220), each run as
npusim.ascendc's cube instruction (:mod:`npusim.ascendc.cube`) on the current core: the same
records, pipes, checker and profile as a Python cube kernel's.

Argument orders are those of the headers' call sites (impl/basic_api/dav_c220:
kernel_operator_data_copy_impl.h, kernel_operator_mm_impl.h, kernel_operator_fixpipe*_impl.h,
kernel_operator_cube_others_impl.h); the register-packed words (``set_nd_para``,
``set_fpc``, the Load3D registers) are unpacked as the headers pack them:

* ``copy_gm_to_cbuf(dst, src, sid, nBurst, lenBurst, srcGap, dstGap, pad)`` and
  ``copy_cbuf_to_gm``: DataCopy GM <-> L1 with DataCopyParams (32 B units);
* ``copy_gm_to_cbuf_multi_nd2nz_b8/b16/b32s(dst, src, sid, ndNum, nValue, dValue,
  srcNdMatrixStride, srcDValue, dstNzC0Stride, dstNzNStride, dstNzMatrixStride)``: DataCopy
  with Nd2NzParams;
* ``load_cbuf_to_ca/cb(dst, src, startIndex, repeat, srcStride, dstGap, sid, transpose,
  addrMode)`` and ``load_gm_to_ca/cb/cbuf`` (the same without transpose): LoadData with
  LoadData2DParams; ``load_cbuf_to_ca/cb_transpose(dst, src, startIndex, repeat, srcStride,
  dstGap, addrMode, dstFracGap)``: LoadDataWithTranspose;
* ``mad(c, a, b, [bias,] m, k, n, unitFlag, kDirectionAlign, cmatrixSource,
  cmatrixInitVal)``: Mmad (``bias``: the address of the C2 or CO1 tensor C starts from);
* ``copy_matrix_cc_to_gm/cbuf(dst, src, sid, n, m, dstStride, srcStride, unitFlag,
  quantPre, relu, channelSplit, nz2ndEn)``: the register form of Fixpipe
  (:mod:`npusim.ascendc.cube.l0c_copy`), with ``set_nd_para`` (ND_PARA: ndNum [15:0],
  srcNdStride [31:16], dstNdStride [47:32]), ``set_quant_pre`` and ``set_fpc`` (FPC
  [15:8]: the quant table's Fixpipe-buffer address in 128 B units; [63]: unitFlag reset);
* ``copy_cbuf_to_bt(dst, src, convControl, nBurst, lenBurst, srcGap, dstGap)`` and
  ``copy_cbuf_to_fbuf(dst, src, nBurst, lenBurst, srcGap, dstGap)``: DataCopy L1 -> C2 /
  C2PIPE2GM;
* ``create_ca/cb/cbuf_matrix[_bf16](dst, repeatBit, value)``: InitConstValue (repeatBit:
  repeatTimes [15:0], blockNum [31:16], dstGap [47:32]; 512 B fractals, 32 B blocks on L1).

Not modelled (a KernelError naming the intrinsic): int4 (``_s4``) forms, sparse ``mad_sp``,
``copy_cbuf_to_bt``'s conversion, channelSplit.
"""
from __future__ import annotations

import ctypes

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import types as _types
from npusim.cpp.dispatch import HANDLERS, NOOPS, Ptr, handler
from npusim.errors import KernelError

#: Registers the headers write and npusim's cube model does not read (the L1 size the
#: Load3D unit may use, its repeat and padding registers outside a Load3D kernel).
NOOPS.update({"set_l1_3d_size"})


def _cube():
    from npusim.ascendc import cube
    return cube


def _asc():
    import npusim.ascendc as asc
    return asc


def _mem_of(rt, ptr) -> str | None:
    for mem, (base, size) in rt.hw.items():
        if base <= int(ptr) < base + size:
            return mem
    return None


def _global_rest(rt, ptr, name, dtype=np.uint8):
    """The GlobalTensor from ``ptr`` to the end of its device allocation (the cube
    instructions' GM extents follow from packed fields; the engine checks the bytes each
    one touches)."""
    import bisect
    addr = rt.device_address(int(ptr), name)
    i = bisect.bisect_right(rt._gm_index, int(ptr)) - 1
    a = rt._gm_allocs[i]
    return rt.global_(ptr, a.base + a.alloc_size - addr, name, dtype)


def _local(rt, ptr, name, dtype=None):
    return rt.local(ptr if isinstance(ptr, Ptr) else Ptr(int(ptr)), name, dtype)


# -- GM <-> L1 ------------------------------------------------------------------------------------
@handler("copy_gm_to_cbuf")
def _copy_gm_to_cbuf(rt, dst, src, sid, n_burst, len_burst, src_gap, dst_gap, pad=0):
    if pad:
        raise KernelError("DataCopy", f"copy_gm_to_cbuf with padding mode {pad} is not modelled")
    _asc().DataCopy(_local(rt, dst, "DataCopy", np.uint8), _global_rest(rt, src, "DataCopy"),
                    _types.DataCopyParams(n_burst, len_burst, src_gap, dst_gap))


@handler("copy_cbuf_to_gm")
def _copy_cbuf_to_gm(rt, dst, src, sid, n_burst, len_burst, src_gap, dst_gap):
    _asc().DataCopy(_global_rest(rt, dst, "DataCopy"), _local(rt, src, "DataCopy", np.uint8),
                    _types.DataCopyParams(n_burst, len_burst, src_gap, dst_gap))


def _nd2nz(size):
    unsigned = {1: np.int8, 2: np.float16, 4: np.float32}[size]

    def run(rt, dst, src, sid, nd_num, n, d, src_nd_stride, src_d, c0_stride, n_stride,
            nz_matrix_stride):
        dt = dst.dtype if dst.dtype.itemsize == size else np.dtype(unsigned)
        _asc().DataCopy(_local(rt, dst, "DataCopy", dt), _global_rest(rt, src, "DataCopy", dt),
                        _types.Nd2NzParams(nd_num, n, d, src_nd_stride, src_d, c0_stride,
                                           n_stride, nz_matrix_stride))
    return run


HANDLERS["copy_gm_to_cbuf_multi_nd2nz_b8"] = _nd2nz(1)
HANDLERS["copy_gm_to_cbuf_multi_nd2nz_b16"] = _nd2nz(2)
HANDLERS["copy_gm_to_cbuf_multi_nd2nz_b32s"] = _nd2nz(4)


# -- L1 -> L0A / L0B, GM -> L1 / L0 (Load2D) --------------------------------------------------
def _load2d(from_gm: bool):
    def run(rt, dst, src, start, repeat, src_stride, dst_gap, sid, *rest):
        if from_gm:
            transpose, addr_mode = 0, (rest[0] if rest else 0)
            s = _global_rest(rt, src, "LoadData", dst.dtype)
        else:
            transpose, addr_mode = (rest + (0, 0))[:2]
            s = _local(rt, src, "LoadData", dst.dtype)
        _cube().LoadData(_local(rt, dst, "LoadData"), s,
                         _types.LoadData2DParams(start, repeat, src_stride, sid, dst_gap,
                                                 bool(transpose), int(addr_mode)))
    return run


HANDLERS["load_cbuf_to_ca"] = HANDLERS["load_cbuf_to_cb"] = _load2d(False)
for _n in ("load_gm_to_ca", "load_gm_to_cb", "load_gm_to_cbuf"):
    HANDLERS[_n] = _load2d(True)


@handler("load_cbuf_to_ca_transpose", "load_cbuf_to_cb_transpose")
def _load_transpose(rt, dst, src, start, repeat, src_stride, dst_gap, addr_mode, frac_gap):
    _cube().LoadDataWithTranspose(
        _local(rt, dst, "LoadDataWithTranspose"),
        _local(rt, src, "LoadDataWithTranspose", dst.dtype),
        _types.LoadData2dTransposeParams(start, repeat, src_stride, dst_gap, frac_gap))


# -- Mmad -----------------------------------------------------------------------------------------
@handler("mad")
def _mad(rt, c, a, b, *rest):
    if len(rest) == 8:
        bias, rest = rest[0], rest[1:]
    elif len(rest) == 7:
        bias = None
    else:
        raise KernelError("Mmad", f"the {len(rest) + 3}-argument form of mad is not modelled")
    m, k, n, unit_flag, k_align, c_source, c_init = rest
    cube = _cube()
    dst = _local(rt, c, "Mmad")
    p = _types.MmadParams(m, n, k, unit_flag, bool(c_source), bool(c_init),
                          kDirectionAlign=bool(k_align))
    fm, filt = _local(rt, a, "Mmad"), _local(rt, b, "Mmad")
    if bias is None or bool(c_init):
        cube.Mmad(dst, fm, filt, p)
    else:
        cube.Mmad(dst, fm, filt, _local(rt, bias, "Mmad", dst.dtype), p)


# -- Fixpipe (L0C -> GM / L1) and its registers ---------------------------------------------------
def _fixpipe_regs(rt):
    from npusim.ascendc.cube import l0c_copy
    return l0c_copy._regs(rt.ctx)


@handler("set_nd_para")
def _set_nd_para(rt, config):
    _cube().SetFixpipeNz2ndFlag(config & 0xFFFF, (config >> 16) & 0xFFFF, (config >> 32) & 0xFFFF)
    # the CPU library's copy of the register, which the headers' own checks read
    # (kernel_check_data_copy_util.h: "SetFixpipeNz2ndFlag was not called before ...")
    ctypes.c_uint64.in_dll(rt.lib, "g_fixpipeNdNzParam").value = config & ((1 << 64) - 1)


@handler("set_quant_pre")
def _set_quant_pre(rt, config):
    _cube().SetFixpipePreQuantFlag(config)


@handler("set_fpc")
def _set_fpc(rt, config):
    """FPC: the quant table at bits [15:8] (128 B units of the Fixpipe buffer), unitFlag
    reset at [63]. A reluPre table (bits [7:0]) is not modelled."""
    regs = _fixpipe_regs(rt)
    base, size = rt.hw[_core.FB]
    quant = ((config >> 8) & 0xFF) * 128
    if base and quant < size:
        regs.table = _local(rt, base + quant, "SetFixPipeConfig", np.uint64)
    if config >> 63:
        st = getattr(rt.ctx, "unit_flags", None)
        if st is not None:
            st.holds = [h for h in st.holds if h.state == "read"]


def _copy_matrix_cc(to_gm: bool):
    def run(rt, dst, src, sid, n, m, dst_stride, src_stride, unit_flag, quant, relu,
            channel_split, nz2nd):
        from npusim.ascendc.cube.l0c_copy import DataCopyCO12DstParams, copy_out
        s = _local(rt, src, "Fixpipe")
        if to_gm:
            d = _global_rest(rt, dst, "Fixpipe", dst.dtype)
        else:
            d = _local(rt, dst, "Fixpipe")
        copy_out(d, s, DataCopyCO12DstParams(n, m, dst_stride, src_stride,
                                             _types.QuantMode_t(quant), relu,
                                             bool(channel_split), bool(nz2nd), sid=sid,
                                             unitFlag=unit_flag))
    return run


HANDLERS["copy_matrix_cc_to_gm"] = _copy_matrix_cc(True)
HANDLERS["copy_matrix_cc_to_cbuf"] = _copy_matrix_cc(False)


# -- L1 -> bias table / Fixpipe buffer --------------------------------------------------------------
@handler("copy_cbuf_to_bt")
def _copy_cbuf_to_bt(rt, dst, src, conv, n_burst, len_burst, src_gap, dst_gap):
    s = _local(rt, src, "DataCopy")
    if conv:
        raise KernelError("DataCopy", "L1 -> bias table with the half -> float conversion "
                          "(convControl) is not modelled yet")
    base, size = rt.hw[_core.BT]
    addr = int(dst)
    if not base <= addr < base + size:        # a bias-table offset rather than a host pointer
        addr = base + addr
    _asc().DataCopy(_local(rt, addr, "DataCopy", s.dtype), s,
                    _types.DataCopyParams(n_burst, len_burst, src_gap, dst_gap))


@handler("copy_cbuf_to_fbuf")
def _copy_cbuf_to_fbuf(rt, dst, src, n_burst, len_burst, src_gap, dst_gap):
    s = _local(rt, src, "DataCopy", np.uint64)
    _asc().DataCopy(_local(rt, dst, "DataCopy", np.uint64), s,
                    _types.DataCopyParams(n_burst, len_burst, src_gap, dst_gap))


# -- the Load3D registers (kernel_operator_mm_impl.h packs them) ----------------------------------
def _set_fmatrix(right: bool):
    """FMATRIX: l1W [15:0], l1H [31:16], padList (left, right, top, bottom) [63:32] by bytes;
    set_fmatrix_b is the right register."""
    def run(rt, config):
        from npusim.ascendc.cube import load3d
        pads = [(config >> (32 + 8 * i)) & 0xFF for i in range(4)]
        mode = load3d.FmatrixMode.FMATRIX_RIGHT if right else load3d.FmatrixMode.FMATRIX_LEFT
        load3d.SetFmatrix((config >> 16) & 0xFFFF, config & 0xFFFF, pads, mode)
    return run


HANDLERS["set_fmatrix"] = _set_fmatrix(False)
HANDLERS["set_fmatrix_b"] = _set_fmatrix(True)


@handler("set_padding")
def _set_padding(rt, bits):
    """The Load3D padding register: the pad value's bits (a 16/32-bit value's bit code, an
    8-bit value repeated in both bytes). Kept as the bits: only 0, what the headers' init
    writes, is read back exactly by a load."""
    from npusim.ascendc.cube import load3d
    load3d.SetLoadDataPaddingValue(bits)


@handler("set_l3d_rpt")
def _set_l3d_rpt(rt, config):
    """Load3D repeat: repeatStride [15:0], repeatTime [23:16], repeatMode [24]."""
    from npusim.ascendc.cube import load3d
    load3d.SetLoadDataRepeat(load3d.LoadDataRepeatParam(config & 0xFFFF, (config >> 16) & 0xFF,
                                                        (config >> 24) & 1))


@handler("img2colv2_cbuf_to_ca", "img2colv2_cbuf_to_cb")
def _img2colv2(rt, dst, src, k_ext, m_ext, k_start, m_start, stride_w, stride_h, filter_w,
               filter_h, dilation_w, dilation_h, filter_size_w, filter_size_h, transpose,
               fmatrix_ctrl, channel):
    """Load3Dv2 L1 -> L0A/L0B: LoadData with LoadData3DParamsV2 reading the fmatrix and
    padding registers (IsResetLoad3dConfig{false, false}). The fields are cut to their widths
    (16 bits; 6 for the strides, 8 for the filter and dilation sizes): the headers' "Pro"
    form passes whole config words shifted."""
    from npusim.ascendc.cube import load3d
    p = load3d.LoadData3DParamsV2(
        kExtension=k_ext & 0xFFFF, mExtension=m_ext & 0xFFFF, kStartPt=k_start & 0xFFFF,
        mStartPt=m_start & 0xFFFF, strideW=stride_w & 0x3F, strideH=stride_h & 0x3F,
        filterW=filter_w & 0xFF, filterH=filter_h & 0xFF, dilationFilterW=dilation_w & 0xFF,
        dilationFilterH=dilation_h & 0xFF, filterSizeW=bool(filter_size_w & 1),
        filterSizeH=bool(filter_size_h & 1), enTranspose=bool(transpose & 1),
        fMatrixCtrl=bool(fmatrix_ctrl & 1), channelSize=channel & 0xFFFF)
    d = _local(rt, dst, "LoadData")
    _cube().LoadData(d, _local(rt, src, "LoadData", d.dtype), p,
                     load3d.IsResetLoad3dConfig(False, False))
