"""Device code of ApplyAddSign: one ``KernelApplyAddSign`` per block (AIV).

The order of operations is TBE ``apply_add_sign_d.py``'s (docs/reference/operators.md §3),
every instruction in the tensors' dtype (half arithmetic rounds per instruction, as
TBE's fp16 ``vmul``/``vadd`` do)::

    m_out = m*beta + g*(1 - beta)                  Muls, Muls, Add
    sgn   = sign(g) * sign(m_out)                  see Sign below; Mul
    upd   = ((sgn*signDecay + alpha) * lr) * g     Muls, Adds, Muls, Mul
    var_out = var - upd                            Sub (TBE adds upd*(-1): same bits)

``1 - beta`` is formed once on the scalar unit (exact in float, then rounded to T: the
same value TBE's ``vadds(vmuls(beta, -1), 1)`` gives). ``sign(x)`` is TBE's
``vcmpsel(x > 0 -> 1, else 0) + vcmpsel(x < 0 -> -1, else 0)`` in Ascend C form::

    CompareScalar(mask, x, 0, GT); Select(dst, mask, ones, 0, VSEL_TENSOR_SCALAR_MODE)
    CompareScalar(mask, x, 0, LT); Select(tmp, mask, ones, 0, VSEL_TENSOR_SCALAR_MODE)
    Sub(dst, dst, tmp)

Both comparisons are false for NaN, so sign(NaN) = 0, and sign(+-0) = 0, as in the CPU
and TBE kernels. CompareScalar works on whole 256 B repeats: a short last tile is
compared over its count rounded up to a repeat (the extra bits are never selected).

The scalars lr, alpha, signDecay and beta are one-element GM tensors of T, read once per
core with ``GlobalTensor::GetValue``.

UB layout: ``inQue`` (VECIN, BUFFER_NUM = 2) holds var, m and grad of one tile,
``outQue`` (VECOUT, 2) var and m, ``calcBuf`` the sign and temp scratch, ``onesBuf`` a
tile of ones (Duplicate once in Init), ``maskBuf`` the select mask (one bit per element).
Every GM copy is a DataCopyPad so tails of any length work.
"""
from __future__ import annotations

import numpy as np

from npusim.ascendc import (Add, Adds, DataCopyExtParams, DataCopyPad, DataCopyPadExtParams,
                            Duplicate, GetBlockIdx, GetTPipePtr, GlobalTensor, HardEvent, Mul,
                            Muls, SetFlag, Sub, TBuf, TPipe, WaitFlag,
                            TPosition, TQue, uint8_t)
from npusim.ascendc.compare import CMPMODE, SELMODE, CompareScalar, Select

BUFFER_NUM = 2
VAR, M, GRAD = range(3)          # input slots; outputs use VAR and M
SIGN, TMP = range(2)             # scratch slots
ONE_REPEAT_BYTE_SIZE = 256


class KernelApplyAddSign:
    """One block of the operator; ``dtype`` is the tensors' dtype (float or half)."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        self.pipe = TPipe()
        self.inQue = TQue(TPosition.VECIN, BUFFER_NUM)
        self.outQue = TQue(TPosition.VECOUT, BUFFER_NUM)
        self.calcBuf = TBuf(TPosition.VECCALC)
        self.onesBuf = TBuf(TPosition.VECCALC)
        self.maskBuf = TBuf(TPosition.VECCALC)

    def Init(self, var, m, lr, alpha, signDecay, beta, grad, tiling):
        t = self.tiling = tiling
        blockIdx = GetBlockIdx()
        if blockIdx < t.formerNum:
            self.blockLength = t.formerLength
            offset = t.formerLength * blockIdx
        else:
            self.blockLength = t.lastCoreLength if blockIdx == t.blockDim - 1 else t.tailLength
            offset = t.formerLength * t.formerNum + t.tailLength * (blockIdx - t.formerNum)
        isz = self.dtype.itemsize
        self.gms = []
        for addr in (var, m, grad):
            g = GlobalTensor(self.dtype)
            g.SetGlobalBuffer(addr + offset * isz, self.blockLength)
            self.gms.append(g)
        # the four scalars: one element each, read through the scalar unit
        scalars = []
        for addr in (lr, alpha, signDecay, beta):
            g = GlobalTensor(self.dtype)
            g.SetGlobalBuffer(addr, 1)
            scalars.append(g.GetValue(0))
        self.lr, self.alpha, self.signDecay, self.beta = scalars
        self.oneMinusBeta = self.dtype.type(np.float32(1) - np.float32(self.beta))

        n = t.tileLength
        self.rep = ONE_REPEAT_BYTE_SIZE // isz
        self.pipe.InitBuffer(self.inQue, BUFFER_NUM, 3 * n * isz)
        self.pipe.InitBuffer(self.outQue, BUFFER_NUM, 2 * n * isz)
        self.pipe.InitBuffer(self.calcBuf, 2 * n * isz)
        self.pipe.InitBuffer(self.onesBuf, n * isz)
        self.pipe.InitBuffer(self.maskBuf, n // 8)
        self.ones = self.onesBuf.Get(self.dtype)
        Duplicate(self.ones, 1.0, n)

    def Process(self):
        n = self.tiling.tileLength
        loopCount = -(-self.blockLength // n)
        for i in range(loopCount):
            count = min(n, self.blockLength - i * n)
            self.CopyIn(i * n, count)
            self.Compute(count)
            self.CopyOut(i * n, count)

    def _params(self, count):
        return DataCopyExtParams(1, count * self.dtype.itemsize, 0, 0, 0)

    def CopyIn(self, offset, count):
        n = self.tiling.tileLength
        inLocal = self.inQue.AllocTensor(self.dtype)
        if count % self.rep:
            # a partial last tile: Compare reads whole 256 B repeats, so give the last repeat
            # of grad defined values (zeros) before the data lands on its first `count` lanes
            Duplicate(inLocal[GRAD * n + count // self.rep * self.rep], 0, self.rep)
            eventId = GetTPipePtr().FetchEventID(HardEvent.V_MTE2)
            SetFlag(HardEvent.V_MTE2, eventId)
            WaitFlag(HardEvent.V_MTE2, eventId)
        pad = DataCopyPadExtParams(False, 0, 0, 0)
        for slot in (VAR, M, GRAD):
            DataCopyPad(inLocal[slot * n], self.gms[slot][offset], self._params(count), pad)
        self.inQue.EnQue(inLocal)

    def Sign(self, dst, src, tmp, count):
        """dst = sign(src) over ``count`` elements: 1, -1, or 0 for 0 and NaN."""
        cmpCount = -(-count // self.rep) * self.rep    # whole 256 B repeats
        mask = self.maskBuf.Get(uint8_t)
        zero = self.dtype.type(0)
        CompareScalar(mask, src, zero, CMPMODE.GT, cmpCount)
        Select(dst, mask, self.ones, zero, SELMODE.VSEL_TENSOR_SCALAR_MODE, count)
        CompareScalar(mask, src, zero, CMPMODE.LT, cmpCount)
        Select(tmp, mask, self.ones, zero, SELMODE.VSEL_TENSOR_SCALAR_MODE, count)
        Sub(dst, dst, tmp, count)

    def Compute(self, count):
        n = self.tiling.tileLength
        inLocal = self.inQue.DeQue(self.dtype)
        outLocal = self.outQue.AllocTensor(self.dtype)
        calc = self.calcBuf.Get(self.dtype)
        var, m, g = inLocal[VAR * n], inLocal[M * n], inLocal[GRAD * n]
        varOut, mOut = outLocal[VAR * n], outLocal[M * n]
        if count % self.rep:     # as for grad in CopyIn: defined lanes for Compare on m_out
            Duplicate(mOut[count // self.rep * self.rep], 0, self.rep)
        sgn, tmp = calc[SIGN * n], calc[TMP * n]
        # m_out = m*beta + g*(1-beta)
        Muls(mOut, m, self.beta, count)
        Muls(tmp, g, self.oneMinusBeta, count)
        Add(mOut, mOut, tmp, count)
        # sgn = sign(g) * sign(m_out); varOut is free until the last step: use it as scratch
        self.Sign(sgn, g, tmp, count)
        self.Sign(varOut, mOut, tmp, count)
        Mul(sgn, sgn, varOut, count)
        # upd = ((sgn*signDecay + alpha) * lr) * g; var_out = var - upd
        Muls(sgn, sgn, self.signDecay, count)
        Adds(sgn, sgn, self.alpha, count)
        Muls(sgn, sgn, self.lr, count)
        Mul(sgn, sgn, g, count)
        Sub(varOut, var, sgn, count)
        self.outQue.EnQue(outLocal)
        self.inQue.FreeTensor(inLocal)

    def CopyOut(self, offset, count):
        n = self.tiling.tileLength
        outLocal = self.outQue.DeQue(self.dtype)
        for slot in (VAR, M):
            DataCopyPad(self.gms[slot][offset], outLocal[slot * n], self._params(count))
        self.outQue.FreeTensor(outLocal)


def apply_add_sign(var, m, lr, alpha, signDecay, beta, grad, workspace, tiling, dtype):
    """Kernel entry (``extern "C" __global__ __aicore__ void apply_add_sign(...)``).

    Args:
        var, m, lr, alpha, signDecay, beta, grad, workspace: device addresses (ints).
        tiling: the host's :class:`ApplyAddSignTilingData`.
        dtype: the tensors' dtype; the real operator would select it by tiling key (0/1).
    """
    op = KernelApplyAddSign(dtype)
    op.Init(var, m, lr, alpha, signDecay, beta, grad, tiling)
    op.Process()
