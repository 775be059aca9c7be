"""The register form of L0C's way out on A2/A3, as the data_copy_l0c2gm sample writes it:
``DataCopy(dst, CO1 tensor, DataCopyCO12DstParams)`` with the Fixpipe registers set
beforehand — SetFixpipePreQuantFlag (the scalar scale), SetFixPipeConfig (the per-column
scale table in the Fixpipe buffer, C2PIPE2GM; and the unitFlag clear), SetFixpipeNz2ndFlag
(the ND matrices of an NZ -> ND copy) — and ``DataCopy(C2PIPE2GM tensor, C1 tensor,
DataCopyParams)``, the table's way from L1 into the Fixpipe buffer.

The same instruction as Fixpipe (dav_c220 ``DataCopyL0C2GMImpl`` / ``DataCopyL0C2L1Impl``
issue the ``copy_matrix_cc_to_gm`` / ``_cbuf`` Fixpipe does, kernel_operator_data_copy_impl.h):
DataCopyCO12DstParams' fields are FixpipeParamsV220's (nSize, mSize, srcStride,
dstStride, quantPre, reluPre as reluEn, unitFlag), the ND count and strides come from
SetFixpipeNz2ndFlag, deqScalar from SetFixpipePreQuantFlag, a V* mode's table from the
Fixpipe buffer SetFixPipeConfig named; ``nz2ndEn`` picks ND (CFG_ROW_MAJOR) or NZ
(CFG_NZ) output. Numerics, rules and cost are Fixpipe's (:mod:`.fixpipe`), its messages
naming Fixpipe; the table's L1 -> FB copy is the DataCopy's (PIPE_FIX, 32 B/cycle,
docs/reference/hardware.md §2.1), not paid again by the copy out.

Register reset values [R: not published]: no ND split (ndNum 1), scale 0, no table.
Not modelled (a KernelError naming it): clipReluPre, eltWiseOp, reluPre other than 0 / 1.
channelSplit is Fixpipe's isChannelSplit (float NZ output in 16 x 8 fractals).
"""
from __future__ import annotations

import functools

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc.cube.common import (ceil_div, check_range, copy_local_rows, record_op,
                                        require_aligned)
from npusim.ascendc.types import (CFG_NZ, CFG_ROW_MAJOR, PIPE_FIX, PIPE_S, DataCopyParams,
                                  FixpipeParamsV220, QuantMode_t)
from npusim.ascendc.tensor import LocalTensor
from npusim.errors import DtypeError, KernelError

__all__ = ["DataCopyCO12DstParams", "SetFixPipeConfig", "SetFixpipeNz2ndFlag",
           "SetFixpipePreQuantFlag"]

_SRC = "data_copy_l0c2gm sample; dav_c220 kernel_operator_fixpipe_impl.h"


class DataCopyCO12DstParams:
    """``DataCopyCO12DstParams`` (kernel_struct_data_copy.h): positional arguments in the
    C++ constructor's order ``(nSize, mSize, dstStride, srcStride, quantPre, reluPre,
    channelSplit, nz2ndEn)``, the others keywords. Meanings: FixpipeParamsV220's (dstStride
    elements per row for ND output, 32 B blocks between column blocks for NZ); reluPre 1:
    ReLU; nz2ndEn: NZ -> ND."""

    def __init__(self, nSize: int = 0, mSize: int = 0, dstStride: int = 0, srcStride: int = 0,
                 quantPre: QuantMode_t = QuantMode_t.NoQuant, reluPre: int = 0,
                 channelSplit: bool = False, nz2ndEn: bool = False, *, sid: int = 0,
                 unitFlag: int = 0, clipReluPre: int = 0, eltWiseOp: int = 0):
        self.nSize, self.mSize, self.dstStride, self.srcStride = nSize, mSize, dstStride, srcStride
        self.quantPre, self.reluPre = quantPre, reluPre
        self.channelSplit, self.nz2ndEn = channelSplit, nz2ndEn
        self.sid, self.unitFlag, self.clipReluPre, self.eltWiseOp = (sid, unitFlag, clipReluPre,
                                                                     eltWiseOp)

    def __repr__(self) -> str:
        return (f"DataCopyCO12DstParams(nSize={self.nSize}, mSize={self.mSize}, dstStride="
                f"{self.dstStride}, srcStride={self.srcStride}, quantPre={self.quantPre!r}, "
                f"reluPre={self.reluPre}, nz2ndEn={self.nz2ndEn})")


class _Regs:
    __slots__ = ("nd", "deq", "table")

    def __init__(self):
        self.nd = (1, 0, 0)        # ndNum, srcNdStride, dstNdStride
        self.deq = 0
        self.table = None          # the quant table in FB (SetFixPipeConfig)


def _regs(ctx) -> _Regs:
    regs = getattr(ctx, "fixpipe_regs", None)
    if regs is None:
        regs = ctx.fixpipe_regs = _Regs()
    return regs


def SetFixpipeNz2ndFlag(ndNum: int, srcNdStride: int, dstNdStride: int) -> None:
    """``SetFixpipeNz2ndFlag(ndNum, srcNdStride, dstNdStride)``: the ND matrices of the next
    NZ -> ND copies out of L0C (ND_PARA: srcNdStride [0, 512] x 1024 B, dstNdStride
    elements). Raises LimitError: a value out of range."""
    ctx = _core.current_core()
    name = "SetFixpipeNz2ndFlag"
    _regs(ctx).nd = (check_range(name, "ndNum", ndNum, 0, 65535, "PIPE_S", _SRC),
                     check_range(name, "srcNdStride", srcNdStride, 0, 512, "PIPE_S", _SRC),
                     check_range(name, "dstNdStride", dstNdStride, 0, 65535, "PIPE_S", _SRC))
    record_op(ctx, PIPE_S, 1, name)


def SetFixpipePreQuantFlag(config: int) -> None:
    """``SetFixpipePreQuantFlag(config)``: the scalar quantisation parameter (a uint64 whose
    bits [31:13] hold the float scale, bit 46 the signed-int8 flag) of the next copies out
    of L0C with a scalar quantPre mode."""
    ctx = _core.current_core()
    _regs(ctx).deq = int(config) & (2**64 - 1)
    record_op(ctx, PIPE_S, 1, "SetFixpipePreQuantFlag")


def SetFixPipeConfig(*tensors, isUnitFlag: bool = False, setRelu: bool = False) -> None:
    """``SetFixPipeConfig(reluPre, quantPre[, isUnitFlag])`` or ``SetFixPipeConfig<T,
    setRelu>(pre[, isUnitFlag])``: point the Fixpipe at its tables in the Fixpipe buffer
    (C2PIPE2GM; the quant table is what a V* quantPre mode of ``DataCopy`` out of L0C
    reads, one uint64 per column), and with ``isUnitFlag`` reset every L0C unit flag
    (:mod:`.unitflag`: hand-offs not yet taken are dropped). The one-tensor form takes a
    C2PIPE2GM or CO1 tensor, as the library checks; a CO1 tensor sets no table (the
    mmad_unitflag sample's use). reluPre tables are not modelled (a reluPre tensor is
    accepted and unused, as the page says it is reserved).

    Raises KernelError: a tensor outside those positions, or a wrong argument count."""
    ctx = _core.current_core()
    name = "SetFixPipeConfig"
    if tensors and isinstance(tensors[-1], (bool, int)) and not isinstance(tensors[-1],
                                                                          LocalTensor):
        isUnitFlag, tensors = bool(tensors[-1]), tensors[:-1]
    if len(tensors) not in (1, 2):
        raise KernelError(name, "SetFixPipeConfig(reluPre, quantPre[, isUnitFlag]) or "
                          "SetFixPipeConfig(pre[, isUnitFlag])", pipe="PIPE_S")
    for t in tensors:
        if not isinstance(t, LocalTensor) or t.mem not in (_core.FB, _core.L0C):
            raise KernelError(name, "its tensors are in the Fixpipe buffer (C2PIPE2GM; the "
                              "one-tensor form also takes CO1)", pipe="PIPE_S")
    quant = tensors[-1] if (len(tensors) == 2 or not setRelu) else None
    if quant is not None and quant.mem == _core.FB:
        _regs(ctx).table = quant
    if isUnitFlag:
        st = getattr(ctx, "unit_flags", None)
        if st is not None:     # every unit flag 0: nothing released or left readable
            st.holds = [h for h in st.holds if h.state == "read"]
    record_op(ctx, PIPE_S, 1, name)


# -- the copies ---------------------------------------------------------------------------------

def l1_to_fb(ctx, dst: LocalTensor, src: LocalTensor, params) -> None:
    """``DataCopy(C2PIPE2GM, C1, DataCopyParams)``: L1 -> Fixpipe buffer on PIPE_FIX,
    blockLen in 128 B units (dav_c220 copy_cbuf_to_fbuf: "burst_len unit is 128Bytes"),
    gaps in 32 B (L1) and 128 B (FB) units [R: the FB gap unit is not published]."""
    name, pipe = "DataCopy", "PIPE_FIX"
    if not isinstance(params, DataCopyParams):
        raise KernelError(name, "L1 -> Fixpipe buffer takes DataCopyParams (blockLen in 128 B "
                          "units)", pipe=pipe)
    require_aligned(src, 32, name, "src (L1)", pipe)
    require_aligned(dst, 64, name, "dst (FB)", pipe)
    rng = functools.partial(check_range, name, pipe=pipe, source=_SRC)
    rows = rng("blockCount", params.blockCount, 0, 4095)
    row = rng("blockLen", params.blockLen, 0, 65535) * 128
    src_pitch = row + rng("srcStride", params.srcStride, 0, 65535) * 32
    dst_pitch = row + rng("dstStride", params.dstStride, 0, 65535) * 128
    if rows == 0 or row == 0:
        return
    copy_local_rows(ctx, dst, src, rows, row, src_pitch, dst_pitch, int(PIPE_FIX), name, pipe)
    record_op(ctx, PIPE_FIX, ctx.soc.fixpipe_head_cycles + ceil_div(rows * row, 32), name)


def copy_out(dst, src: LocalTensor, p: DataCopyCO12DstParams) -> None:
    """``DataCopy(GM or L1, CO1, DataCopyCO12DstParams)``: module docstring."""
    from npusim.ascendc.cube.fixpipe import Fixpipe
    ctx = _core.current_core()
    for field, what in (("clipReluPre", "clipReluPre"), ("eltWiseOp", "eltWiseOp")):
        if getattr(p, field):
            raise KernelError("DataCopy", f"DataCopyCO12DstParams.{what} is not modelled; leave "
                              "it at its default", pipe="PIPE_FIX")
    if int(p.reluPre) not in (0, 1):
        raise KernelError("DataCopy", f"reluPre = {p.reluPre}: only 0 (none) and 1 (ReLU) are "
                          "modelled", pipe="PIPE_FIX")
    regs = _regs(ctx)
    nd_num, src_nd, dst_nd = regs.nd if p.nz2ndEn else (1, 0, 0)
    fp = FixpipeParamsV220(int(p.nSize), int(p.mSize), int(p.srcStride), int(p.dstStride),
                           QuantMode_t(p.quantPre), regs.deq, nd_num, src_nd, dst_nd,
                           bool(p.reluPre), int(p.unitFlag), bool(p.channelSplit))
    config = CFG_ROW_MAJOR if p.nz2ndEn else CFG_NZ
    if QuantMode_t(p.quantPre) in (QuantMode_t.VDEQF16, QuantMode_t.VQF322B8_PRE,
                                   QuantMode_t.VREQ8):
        if regs.table is None:
            raise KernelError("DataCopy", f"quantPre {QuantMode_t(p.quantPre).name} reads its "
                              "per-column table from the Fixpipe buffer: copy it there "
                              "(DataCopy to a C2PIPE2GM tensor) and name it with "
                              "SetFixPipeConfig first", pipe="PIPE_FIX")
        if regs.table.dtype != np.dtype(np.uint64):
            raise DtypeError("DataCopy", "the Fixpipe buffer's quant table is uint64_t",
                             pipe="PIPE_FIX")
        Fixpipe(dst, src, regs.table, fp, config=config, _table_in_fb=True)
    else:
        Fixpipe(dst, src, fp, config=config)

