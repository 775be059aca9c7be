"""Device code of ApplyFusedEmaAdam: one ``KernelApplyFusedEmaAdam`` per block (AIV).

Read it next to ``optim/apply_fused_ema_adam/op_kernel/apply_fused_ema_adam_f32.h`` and
``apply_fused_ema_adam_f_bf16.h``; the order of operations is the one documented in
``docs/reference/operators.md`` §1 "Kernel arithmetic order", so the results are bit-exact
with respect to that order:

* ``beta^step`` on the vector unit (Duplicate + Power) once per core in Init, then
  ``correction = 1 - beta^step`` and its reciprocal on the scalar unit;
* mode 0: ``g = wd*var + grad``; m: ``beta1*m + (1-beta1)*g``; v: ``(1-beta2)*(g*g) + beta2*v``;
* ``m_next = m_out * (1/bc1)``, ``v_next = v_out * (1/bc2)`` (reciprocal multiply, not a
  divide); ``denom = sqrt(v_next) + eps``; ``upd = m_next / denom``;
* mode 1: ``upd += wd*var`` with var reloaded from GM (grad used var's UB slot);
* ``var_out = var - lr*upd``; ``s_out = emaDecay*s + var_out*(1-emaDecay)``.

fp16/bf16 inputs are cast to fp32 (CAST_NONE), all maths is fp32, outputs are cast back
with CAST_RINT; the unrounded fp32 m_out/v_out/var_out feed the later steps.

UB layout (BUFFER_NUM = 1, no double buffering): ``inQue`` holds the input slots, each
``coreCalcMax`` elements (var, m, v, s, grad; grad shares var's slot in mode 1),
``outQue`` the 4 output slots; fp16/bf16 add fp32 copies of both (``inCastBuf``,
``outCastBuf``). Every copy is a DataCopyPad so tiles of any length work.
"""
from __future__ import annotations

import numpy as np

from npusim.ascendc import (Add, Cast, DataCopyExtParams, DataCopyPad, DataCopyPadExtParams,
                            Div, Duplicate, GetBlockIdx, GetTPipePtr, GlobalTensor, HardEvent,
                            Mul, Muls, Adds, Power, RoundMode, SetFlag, Sqrt, Sub, TBuf,
                            TPipe, TPosition, TQue, WaitFlag, float32, int64_t)

BUFFER_NUM = 1
VAR, M, V, S, GRAD = range(5)        # input slots; outputs use VAR, M, V, S
OUT_SLOTS = 4


class KernelApplyFusedEmaAdam:
    """One block of the operator. ``dtype`` is the tensors' dtype (fp32, fp16 or bf16)."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        self.isFloat = self.dtype == float32
        self.pipe = TPipe()
        self.inQue = TQue(TPosition.VECIN, BUFFER_NUM)
        self.outQue = TQue(TPosition.VECOUT, BUFFER_NUM)
        self.inCastBuf = TBuf(TPosition.VECCALC)
        self.outCastBuf = TBuf(TPosition.VECCALC)
        self.beta1PowBuf = TBuf(TPosition.VECCALC)
        self.beta2PowBuf = TBuf(TPosition.VECCALC)

    def Init(self, grad, var, m, v, s, step, tiling):
        t = tiling
        self.tiling = t
        blockIdx = GetBlockIdx()
        if blockIdx < t.frontCoreNum:
            self.calcNum = t.coreCalcNum
            offset = t.coreCalcNum * blockIdx
            self.lastCalcNum = t.frontCalcExtra
        else:
            self.calcNum = t.coreCalcNum - 1
            offset = t.coreCalcNum * t.frontCoreNum + (blockIdx - t.frontCoreNum) * (t.coreCalcNum - 1)
            self.lastCalcNum = t.tailCalcExtra
        isz = self.dtype.itemsize
        self.gms = []
        for addr in (var, m, v, s, grad):
            g = GlobalTensor(self.dtype)
            g.SetGlobalBuffer(addr + offset * isz, self.calcNum)
            self.gms.append(g)
        self.stepGm = GlobalTensor(int64_t)
        self.stepGm.SetGlobalBuffer(step, 1)

        # mode 1: grad is loaded into var's slot (gradOffset = varOffset)
        self.inSlots = 4 if t.mode == 1 else 5
        self.gradSlot = VAR if t.mode == 1 else GRAD
        n = t.coreCalcMax
        self.pipe.InitBuffer(self.inQue, BUFFER_NUM, self.inSlots * n * isz)
        self.pipe.InitBuffer(self.outQue, BUFFER_NUM, OUT_SLOTS * n * isz)
        if not self.isFloat:
            self.pipe.InitBuffer(self.inCastBuf, self.inSlots * n * 4)
            self.pipe.InitBuffer(self.outCastBuf, OUT_SLOTS * n * 4)
        self.pipe.InitBuffer(self.beta1PowBuf, 32)
        self.pipe.InitBuffer(self.beta2PowBuf, 32)
        self.InitCorrections()

    def InitCorrections(self):
        """1/(1 - beta1^step) and 1/(1 - beta2^step), or 1 without bias correction."""
        t = self.tiling
        one = np.float32(1.0)
        if not t.biasCorrection:
            self.beta1CorrectionRec = self.beta2CorrectionRec = one
            return
        step = np.float32(self.stepGm.GetValue(0))
        pow1 = self.beta1PowBuf.Get(float32)
        pow2 = self.beta2PowBuf.Get(float32)
        Duplicate(pow1, t.beta1, 8)
        Power(pow1, pow1, step, 8)
        Duplicate(pow2, t.beta2, 8)
        Power(pow2, pow2, step, 8)
        eventId = GetTPipePtr().FetchEventID(HardEvent.V_S)
        SetFlag(HardEvent.V_S, eventId)
        WaitFlag(HardEvent.V_S, eventId)
        self.beta1CorrectionRec = one / (one - pow1.GetValue(0))
        self.beta2CorrectionRec = one / (one - pow2.GetValue(0))

    def Process(self):
        t = self.tiling
        for i in range(t.loopNum - 1):
            self.CopyIn(i * t.coreCalcMax, t.coreCalcMax)
            self.Compute(i * t.coreCalcMax, t.coreCalcMax)
            self.CopyOut(i * t.coreCalcMax, t.coreCalcMax)
        if self.lastCalcNum > 0:
            off = (t.loopNum - 1) * t.coreCalcMax
            self.CopyIn(off, self.lastCalcNum)
            self.Compute(off, self.lastCalcNum)
            self.CopyOut(off, self.lastCalcNum)

    def _params(self, count):
        return DataCopyExtParams(1, count * self.dtype.itemsize, 0, 0, 0)

    def CopyIn(self, offset, count):
        n = self.tiling.coreCalcMax
        inLocal = self.inQue.AllocTensor(self.dtype)
        pad = DataCopyPadExtParams(False, 0, 0, 0)
        loads = (VAR, M, V, S, GRAD) if self.tiling.mode == 0 else (GRAD, M, V, S)
        for gm in loads:
            slot = self.gradSlot if gm == GRAD else gm
            DataCopyPad(inLocal[slot * n], self.gms[gm][offset], self._params(count), pad)
        self.inQue.EnQue(inLocal)

    def Compute(self, offset, count):
        t = self.tiling
        n = t.coreCalcMax
        inLocal = self.inQue.DeQue(self.dtype)
        outLocal = self.outQue.AllocTensor(self.dtype)
        if self.isFloat:
            x, y = inLocal, outLocal
        else:
            x, y = self.inCastBuf.Get(float32), self.outCastBuf.Get(float32)
            for k in range(self.inSlots):
                Cast(x[k * n], inLocal[k * n], RoundMode.CAST_NONE, count)
        one = np.float32(1.0)
        var, m, v, s, g = x[VAR * n], x[M * n], x[V * n], x[S * n], x[self.gradSlot * n]
        varOut, mOut, vOut, sOut = y[VAR * n], y[M * n], y[V * n], y[S * n]
        if t.mode == 0:                                   # L2: g = wd*var + grad
            Muls(varOut, var, t.weightDecay, count)
            Add(g, varOut, g, count)
        # m_out = beta1*m + (1-beta1)*g
        Muls(mOut, m, t.beta1, count)
        Muls(m, g, one - t.beta1, count)
        Add(mOut, mOut, m, count)
        # v_out = (1-beta2)*g*g + beta2*v
        Mul(m, g, g, count)
        Muls(m, m, one - t.beta2, count)
        Muls(vOut, v, t.beta2, count)
        Add(vOut, m, vOut, count)
        # update = (m_out/bc1) / (sqrt(v_out/bc2) + eps), by reciprocal multiplies
        Muls(m, mOut, self.beta1CorrectionRec, count)
        Muls(v, vOut, self.beta2CorrectionRec, count)
        Sqrt(v, v, count)
        Adds(v, v, t.eps, count)
        Div(m, m, v, count)
        if t.mode == 1:                                   # AdamW: update += wd*var
            self.ReloadVar(inLocal, x, offset, count)
            Muls(v, var, t.weightDecay, count)
            Add(m, m, v, count)
        # var_out = var - lr*update; s_out = emaDecay*s + var_out*(1-emaDecay)
        Muls(m, m, t.lr, count)
        Sub(varOut, var, m, count)
        Muls(sOut, s, t.emaDecay, count)
        Muls(m, varOut, one - t.emaDecay, count)
        Add(sOut, sOut, m, count)
        if not self.isFloat:
            for k in range(OUT_SLOTS):
                Cast(outLocal[k * n], y[k * n], RoundMode.CAST_RINT, count)
        self.outQue.EnQue(outLocal)
        self.inQue.FreeTensor(inLocal)

    def ReloadVar(self, inLocal, x, offset, count):
        """Mode 1: grad sat in var's slot; load the original var into it now."""
        pipe = GetTPipePtr()
        eventV2Mte2 = pipe.FetchEventID(HardEvent.V_MTE2)
        SetFlag(HardEvent.V_MTE2, eventV2Mte2)
        WaitFlag(HardEvent.V_MTE2, eventV2Mte2)
        DataCopyPad(inLocal[VAR * self.tiling.coreCalcMax], self.gms[VAR][offset],
                    self._params(count), DataCopyPadExtParams(False, 0, 0, 0))
        eventMte2V = pipe.FetchEventID(HardEvent.MTE2_V)
        SetFlag(HardEvent.MTE2_V, eventMte2V)
        WaitFlag(HardEvent.MTE2_V, eventMte2V)
        if not self.isFloat:
            Cast(x[VAR * self.tiling.coreCalcMax], inLocal[VAR * self.tiling.coreCalcMax],
                 RoundMode.CAST_NONE, count)

    def CopyOut(self, offset, count):
        n = self.tiling.coreCalcMax
        outLocal = self.outQue.DeQue(self.dtype)
        for k in range(OUT_SLOTS):
            DataCopyPad(self.gms[k][offset], outLocal[k * n], self._params(count))
        self.outQue.FreeTensor(outLocal)


def apply_fused_ema_adam(grad, var, m, v, s, step, workspace, tiling, dtype):
    """Kernel entry (``extern "C" __global__ __aicore__ void apply_fused_ema_adam(...)``).

    Args:
        grad, var, m, v, s, step, workspace: device addresses (ints).
        tiling: the host's :class:`ApplyFusedEmaAdamTilingData`.
        dtype: the tensors' dtype; the real operator selects it by tiling key (100/101/102).
    """
    op = KernelApplyFusedEmaAdam(dtype)
    op.Init(grad, var, m, v, s, step, tiling)
    op.Process()
