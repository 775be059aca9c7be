"""The high-level Matmul API (device side): ``Matmul<A_TYPE, B_TYPE, C_TYPE, BIAS_TYPE>``
with ``MatmulType``, built from the cube instructions the way the library builds it, so its
cost comes out of the timing model.

Usage, as in an Ascend C cube kernel (``KERNEL_TYPE_AIC_ONLY``)::

    mm = Matmul(MatmulType(TPosition.GM, CubeFormat.ND, half),
                MatmulType(TPosition.GM, CubeFormat.ND, half),
                MatmulType(TPosition.GM, CubeFormat.ND, float32))
    REGIST_MATMUL_OBJ(pipe, GetSysWorkSpacePtr(), mm, tiling)   # tiling: a TCubeTiling
    mm.SetTensorA(aGm[offsetA]); mm.SetTensorB(bGm[offsetB]); mm.SetBias(biasGm[offsetN])
    mm.SetTail(tailM, tailN)                                    # a tail core's part
    mm.IterateAll(cGm[offsetC])        # or: while mm.Iterate(): mm.GetTensorC(cGm[offsetC])
    mm.End()

The data path (Matmul使用说明 "实现原理", figure 2; reference/hardware.md §2.1): for each
``baseM x baseN`` block of C (``Iterate``; iterateOrder 0 walks M first), for each ``baseK``
step of K:

1. MTE2, ``DataCopy`` with ``Nd2NzParams`` (ND -> NZ, zero-padded to 32 B): an A chunk of
   ``stepM*baseM x stepKa*baseK`` into A1 and a B chunk of ``stepKb*baseK x stepN*baseN``
   into B1, unless that chunk is still in L1 (A1/B1 hold ``depthA1 / (stepM*stepKa)`` and
   ``depthB1 / (stepN*stepKb)`` chunks, reused least recently loaded first);
2. MTE1, ``LoadData`` / ``LoadDataWithTranspose``: the step's ``baseM x baseK`` of A into
   L0A (ZZ) and ``baseK x baseN`` of B into L0B (ZN), ``dbL0A`` / ``dbL0B`` buffers;
3. M, ``Mmad``: the first step starts C at 0 (or at the bias, from the bias table, which
   MTE2 -> C1 -> MTE1 -> C2 filled), the later ones accumulate in L0C (``dbL0C`` buffers);

then ``GetTensorC``: FIX, ``Fixpipe`` L0C -> GM, NZ -> ND, converting float to half/bf16 on
the way (the one rounding of the product). The hand-offs between the pipes are TQue
hand-offs (A1/B1: MTE2 -> MTE1, A2/B2/C2: MTE1 -> M, CO1: M -> FIX, and back when a buffer
is freed), so double buffers overlap in the replay as on hardware.

How each operand reaches its L0 fractals (ours [R], from the instructions' documented
semantics; the library's own sequence is not published): a fractal of L0A (ZZ) or L0B (ZN)
is 16 rows of the non-K axis by C0 = 32 B / sizeof(T) of K. When GM holds the operand with
K innermost (A, or B transposed) its NZ fractals in L1 are those fractals: plain
``LoadData``. Otherwise (A transposed, B) the NZ fractals are transposed on the way:
16-bit types with ``LoadData(ifTranspose)``; int8 with ``LoadDataWithTranspose`` on 32 x 32
squares (two NZ fractals one above the other); float with ``LoadDataWithTranspose`` on
16 x 16 squares, which need the two 16 x 8 fractals of a square side by side in L1, so such
a float chunk is copied in 16-row slabs (``dstNzC0Stride = 16``) and A's k fractals are
counted in pairs (``MmadParams.kDirectionAlign``). A block of one row is computed with
``m = 16`` (``m = 1`` would switch the cube to GEMV, as the library's kernels avoid), so
the other 15 rows of its fractal are filled by repeating the row (``ndNum`` with
``srcNdMatrixStride = 0``): their products land in L0C rows Fixpipe never reads.

Types (Matmul使用说明 table 2, A2/A3): A/B half, bfloat16, float -> C float, half or
bfloat16 (bias float); int8 -> C int32 (bias int32). Not modelled (KernelError at the call):
A/B/bias not in GM or NZ input, C not ND in GM (CO1 / VECIN outputs, GetTensorC to a
LocalTensor), a half bias (its L1 -> bias-table conversion), quantised outputs, enAtomic
2/3, enPartialSum, the MDL/SpecialMDL templates (MatmulConfig) and the SoCs without Fixpipe
(910A, 310P).

Where it runs: on the AIC of a ``KERNEL_TYPE_AIC_ONLY`` launch (blockDim counts AICs), or
on the AIC of a mixed launch under ``ASCEND_IS_AIC()`` (handing C to the AIVs through GM
and cross-core flags, as the kernel writes them). The MIX form of the library, where the
AIVs call the API and their AIC serves the calls through the KFC message queue in the
system workspace, is not modelled: on an AIV, Init raises KernelError saying so.

Sources: hiascend / asc-devkit docs "Matmul使用说明", "Matmul模板参数", "MatmulType",
"REGIST_MATMUL_OBJ" (atlasascendc_api_07_0628), "Init", "SetTensorA", "SetTensorB",
"SetBias" (07_0635), "SetTail", "SetOrgShape" (07_0651), "SetSingleShape", "Iterate",
"GetTensorC" (07_0639), "IterateAll", "End"; pyasc docs/python-api asc.language.adv.Matmul
(the same signatures); the m = 1 -> 16 rule from the library's kernels' Mmad calls.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc.atomic import DisableDmaAtomic, SetAtomicAdd
from npusim.ascendc.cube.common import ceil_div, k0_of
from npusim.ascendc.cube.datamove import LoadData, LoadDataWithTranspose
from npusim.ascendc.cube.fixpipe import Fixpipe
from npusim.ascendc.cube.mmad import Mmad
from npusim.ascendc.datacopy import DataCopy
from npusim.ascendc.lib.matmul_tiling import CubeFormat, TCubeTiling
from npusim.ascendc.pipe import GetTPipePtr, TQue
from npusim.ascendc.tensor import GlobalTensor
from npusim.ascendc.types import (DataCopyParams, FixpipeParamsV220, LoadData2DParams,
                                  LoadData2dTransposeParams, MmadParams, Nd2NzParams,
                                  QuantMode_t, TPosition, bfloat16_t, float32, half, int8_t,
                                  int32_t)
from npusim.errors import AlignmentError, DtypeError, KernelError

__all__ = ["Matmul", "MatmulType", "REGIST_MATMUL_OBJ"]

#: A/B type -> (L0C type, C types Fixpipe writes without a scale, bias types we model).
_TYPES = {half: (float32, (float32, half, bfloat16_t), (float32,)),
          bfloat16_t: (float32, (float32, half, bfloat16_t), (float32,)),
          float32: (float32, (float32, half, bfloat16_t), (float32,)),
          int8_t: (int32_t, (int32_t,), (int32_t,))}
_QUANT = {float32: QuantMode_t.NoQuant, int32_t: QuantMode_t.NoQuant,
          half: QuantMode_t.F322F16, bfloat16_t: QuantMode_t.F322BF16}
_MAX_REPEAT = 255            # LoadData / LoadDataWithTranspose repeatTimes
_MAX_OBJECTS = 4             # REGIST_MATMUL_OBJ: at most 4 Matmul objects in a program


@dataclass(frozen=True)
class MatmulType:
    """``MatmulType<POSITION, CubeFormat, TYPE, ISTRANS>``: where an operand lives, its
    layout, its element type, and whether it may be transposed (ISTRANS: SetTensorA/B's
    isTranspose is allowed only then). Source: hiascend "MatmulType"."""

    position: TPosition = TPosition.GM
    format: CubeFormat = CubeFormat.ND
    dtype: np.dtype = half
    isTrans: bool = False

    def __post_init__(self):
        object.__setattr__(self, "position", TPosition(self.position))
        object.__setattr__(self, "format", CubeFormat(self.format))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))


def REGIST_MATMUL_OBJ(tpipe, workspace, *objects) -> None:
    """``REGIST_MATMUL_OBJ(tpipe, workspace, mm[, tiling], mm2, tiling2, ...)``: initialise
    each Matmul with its TCubeTiling (``Init(tiling, tpipe)``); with one object the tiling
    may be left out and given to ``Init`` later. ``workspace`` (the system workspace) is
    used by the MIX form only. Raises KernelError for more than 4 objects or an object
    without its tiling."""
    pairs, i = [], 0
    while i < len(objects):
        mm = objects[i]
        if not isinstance(mm, Matmul):
            raise KernelError("REGIST_MATMUL_OBJ", f"argument {i + 3} is not a Matmul object")
        tiling = objects[i + 1] if i + 1 < len(objects) else None
        if isinstance(tiling, Matmul) or tiling is None:
            tiling = None
            i += 1
        else:
            i += 2
        pairs.append((mm, tiling))
    if len(pairs) > _MAX_OBJECTS:
        raise KernelError("REGIST_MATMUL_OBJ", f"{len(pairs)} Matmul objects: at most "
                          f"{_MAX_OBJECTS} in a program")
    for mm, tiling in pairs:
        if tiling is None:
            if len(pairs) > 1:
                raise KernelError("REGIST_MATMUL_OBJ", "with several Matmul objects each must "
                                  "be followed by its tiling")
            mm._pipe = tpipe
        else:
            mm.Init(tiling, tpipe)


@dataclass
class _Chunk:
    """One L1 chunk of an operand: its tensor and the geometry its fractals are found by."""

    tensor: object
    rows: int          # rows of the chunk's GM matrix, padded as laid out in L1
    cols: int          # columns, padded


class _Operand:
    """How A or B goes GM -> L1 -> L0.

    ``G`` is the operand as GM stores it: X x K when K is innermost ("direct": A, or B
    transposed), else K x X. X is M for A and N for B.
    """

    def __init__(self, name: str, mtype: MatmulType, base_x: int, base_k: int, step_x: int,
                 step_k: int, l1_slots: int, l0_slots: int, l1_pos, l0_pos):
        self.name, self.is_a = name, name == "A"
        self.dtype = mtype.dtype
        self.base_x, self.base_k, self.step_x, self.step_k = base_x, base_k, step_x, step_k
        self.l1_slots, self.l0_slots = l1_slots, l0_slots
        self.q1, self.q2 = TQue(l1_pos, 1), TQue(l0_pos, 1)
        self.cache: OrderedDict = OrderedDict()
        self.gm = None
        self.trans = False

    @property
    def direct(self) -> bool:
        return self.trans != self.is_a          # A as stored, or B transposed

    @property
    def mode(self) -> str:
        if self.direct:
            return "direct"
        return {1: "trans8", 2: "trans16", 4: "trans32"}[self.dtype.itemsize]

    def l1_bytes(self) -> int:
        return self.step_x * self.base_x * self.step_k * self.base_k * self.dtype.itemsize

    def l0_bytes(self) -> int:
        return self.base_x * self.base_k * self.dtype.itemsize

    def release(self) -> None:
        for chunk in self.cache.values():
            self.q1.FreeTensor(chunk.tensor)
        self.cache.clear()


class Matmul:
    """``Matmul<A_TYPE, B_TYPE, C_TYPE, BIAS_TYPE = C_TYPE>``: C = A x B (+ bias) on the
    cube, one core's ``singleCoreM x singleCoreN`` part per call sequence (module
    docstring).

    Args:
        aType, bType, cType, biasType: :class:`MatmulType` of A (M x K, or K x M when
            transposed), B (K x N, or N x K), C (M x N) and the bias (N; default: C's type).

    Raises (at Init or at the call): KernelError for what is not modelled (module
    docstring) and for calls out of order (Iterate before SetTensorA/B, GetTensorC
    without Iterate, SetBias with a tiling whose isBias is 0); DtypeError for type
    combinations outside Matmul使用说明 table 2 and GlobalTensors of another type;
    AlignmentError for a tiling whose base sizes break the fractal alignment; UbError when
    the buffers the tiling asks for do not fit L1/L0 (InitBuffer).
    """

    def __init__(self, aType: MatmulType, bType: MatmulType, cType: MatmulType,
                 biasType: MatmulType | None = None):
        self.aType, self.bType, self.cType = aType, bType, cType
        self.biasType = biasType if biasType is not None else MatmulType(
            TPosition.GM, CubeFormat.ND, cType.dtype)
        self._pipe = None
        self._tiling: TCubeTiling | None = None
        self._pending = None            # (mi, ni, mb, nb, co1 tensor) after Iterate
        self._blocks = None             # the Iterate walk over base blocks

    # -- setup ----------------------------------------------------------------------------------
    def Init(self, cubeTiling: TCubeTiling, tpipe=None) -> None:
        """``Init(&tiling, tpipe)``: take the tiling and reserve the buffers it asks for from
        ``tpipe`` (default: the kernel's TPipe): A1/B1 chunks, L0A/L0B steps, L0C blocks
        and, with a bias, one bias block in C1 and in the bias table."""
        name = "Matmul::Init"
        ctx = _core.current_core()
        if ctx.core_kind == _core.AIV:
            raise KernelError(name, "the Matmul API runs on the cube core: launch with "
                              "KERNEL_TYPE_AIC_ONLY, or in a mixed kernel call it under "
                              "ASCEND_IS_AIC() (the MIX form, AIVs calling through the KFC "
                              "message queue and the AIC serving, is not modelled); a vector "
                              "core has no L1")
        if not ctx.soc.support_fixpipe:
            raise KernelError(name, f"the Matmul API on {ctx.soc.soc_version} (no Fixpipe: "
                              "L0C leaves through the UB) is not modelled")
        self._check_types(name)
        t = cubeTiling
        self._check_tiling(name, t)
        pipe = tpipe if tpipe is not None else (self._pipe or GetTPipePtr())
        self._pipe, self._tiling = pipe, t
        db_a1 = max(1, t.depthA1 // (t.stepM * t.stepKa))
        db_b1 = max(1, t.depthB1 // (t.stepN * t.stepKb))
        self._a = _Operand("A", self.aType, t.baseM, t.baseK, t.stepM, t.stepKa, db_a1,
                           t.dbL0A, TPosition.A1, TPosition.A2)
        self._b = _Operand("B", self.bType, t.baseN, t.baseK, t.stepN, t.stepKb, db_b1,
                           t.dbL0B, TPosition.B1, TPosition.B2)
        for op in (self._a, self._b):
            pipe.InitBuffer(op.q1, op.l1_slots, op.l1_bytes())
            pipe.InitBuffer(op.q2, op.l0_slots, op.l0_bytes())
        self._qco1 = TQue(TPosition.CO1, 1)
        pipe.InitBuffer(self._qco1, t.dbL0C, t.baseM * t.baseN * self._acc.itemsize)
        if t.isBias:
            self._qc1, self._qc2 = TQue(TPosition.C1, 1), TQue(TPosition.C2, 1)
            pipe.InitBuffer(self._qc1, 1, t.baseN * self._acc.itemsize)
            pipe.InitBuffer(self._qc2, 1, t.baseN * self._acc.itemsize)
        self._org = [t.M, t.N, t.Ka, t.Kb, 0]
        self._single = [t.singleCoreM, t.singleCoreN, t.singleCoreK]
        self._bias = None
        self._c_gm = None

    def _check_types(self, name: str) -> None:
        a, b, c = self.aType, self.bType, self.cType
        for role, mt in (("A", a), ("B", b)):
            if mt.position != TPosition.GM or mt.format != CubeFormat.ND:
                raise KernelError(name, f"{role} in {mt.position.name}/{mt.format.name} is not "
                                  "modelled (GM, ND only)")
        if c.position != TPosition.GM or c.format != CubeFormat.ND:
            raise KernelError(name, f"C in {c.position.name}/{c.format.name} is not modelled "
                              "(GM, ND only)")
        if a.dtype != b.dtype or a.dtype not in _TYPES:
            raise DtypeError(name, f"A {a.dtype.name} x B {b.dtype.name}: A and B must both be "
                             "half, bfloat16, float or int8 (Matmul使用说明 table 2)")
        acc, c_types, _ = _TYPES[a.dtype]
        if c.dtype not in c_types:
            raise DtypeError(name, f"C {c.dtype.name} of {a.dtype.name} inputs is not modelled "
                             f"(C: {'/'.join(t.name for t in c_types)}; quantised outputs need "
                             "SetQuantScalar)")
        self._acc = acc

    def _check_bias_type(self, name: str) -> None:
        """BIAS_TYPE (default C's): checked where a bias is used, at SetBias."""
        bias = self.biasType
        if bias.position != TPosition.GM or bias.format != CubeFormat.ND:
            raise KernelError(name, f"BIAS in {bias.position.name}/{bias.format.name} is not "
                              "modelled (GM, ND only)")
        bias_types = _TYPES[self.aType.dtype][2]
        if bias.dtype not in bias_types:
            raise DtypeError(name, f"a {bias.dtype.name} bias of {self.aType.dtype.name} inputs "
                             f"is not modelled (bias: {'/'.join(t.name for t in bias_types)}; "
                             "a half bias needs the L1 -> bias-table conversion)")

    def _check_tiling(self, name: str, t: TCubeTiling) -> None:
        """The fields the kernel relies on (TCubeTiling table 2)."""
        if min(t.baseM, t.baseN, t.baseK, t.stepM, t.stepN, t.stepKa, t.stepKb, t.depthA1,
               t.depthB1, t.dbL0A, t.dbL0B, t.dbL0C) <= 0:
            raise KernelError(name, "the tiling has a base, step, depth or db field <= 0 "
                              "(TCubeTiling: all must be > 0; was GetTiling's result -1?)")
        if t.baseM % 16 or t.baseN % 16:
            raise AlignmentError(name, f"baseM {t.baseM} and baseN {t.baseN} must be multiples "
                                 "of 16 (TCubeTiling table 2)")

    def SetOrgShape(self, orgM: int, orgN: int, orgKa: int, orgKb: int | None = None,
                    orgKc: int = 0) -> None:
        """The original shapes (elements): A is orgM x orgKa (orgKa x orgM transposed), B
        orgKb x orgN (orgN x orgKb), C orgM x (orgKc or orgN): the row pitches in GM."""
        self._require_init("SetOrgShape")
        self._org = [int(orgM), int(orgN), int(orgKa), int(orgKa if orgKb is None else orgKb),
                     int(orgKc)]
        self._forget()

    def SetSingleShape(self, singleM: int, singleN: int, singleK: int) -> None:
        """This core's part: singleM x singleN of C over singleK (elements)."""
        self.SetTail(singleM, singleN, singleK)

    def SetTail(self, tailM: int = -1, tailN: int = -1, tailK: int = -1) -> None:
        """Override singleCoreM/N/K for this core (-1 keeps the tiling's): a tail core's
        smaller part."""
        self._require_init("SetTail")
        for i, v in enumerate((tailM, tailN, tailK)):
            if int(v) == 0 or int(v) < -1:
                raise KernelError("SetTail", f"{('tailM', 'tailN', 'tailK')[i]} = {v}: a size "
                                  "> 0, or -1 to keep the tiling's")
            if int(v) > 0:
                self._single[i] = int(v)
        self._forget()

    def _forget(self) -> None:
        """New shapes: the L1 chunks loaded so far no longer match (keyed by block)."""
        self._a.release()
        self._b.release()

    def SetTensorA(self, gm: GlobalTensor, isTransposeA: bool = False) -> None:
        """A's start in GM; isTransposeA: GM holds A as K x M (needs MatmulType isTrans)."""
        self._set_operand("SetTensorA", self._a, self.aType, gm, isTransposeA)

    def SetTensorB(self, gm: GlobalTensor, isTransposeB: bool = False) -> None:
        """B's start in GM; isTransposeB: GM holds B as N x K (needs MatmulType isTrans)."""
        self._set_operand("SetTensorB", self._b, self.bType, gm, isTransposeB)

    def _set_operand(self, name, op: _Operand, mtype: MatmulType, gm, trans) -> None:
        self._require_init(name)
        if not isinstance(gm, GlobalTensor):
            raise KernelError(name, "only a GlobalTensor operand is modelled (A/B in GM)")
        if gm.dtype != mtype.dtype:
            raise DtypeError(name, f"the GlobalTensor holds {gm.dtype.name}, the MatmulType says "
                             f"{mtype.dtype.name}")
        if trans and not mtype.isTrans:
            raise KernelError(name, f"transposing {op.name} needs MatmulType isTrans = true")
        op.release()                     # new data: nothing in L1 is valid any more
        op.gm, op.trans = gm, bool(trans)
        if op.mode == "trans8" and op.base_x % 32:
            raise AlignmentError(name, f"base{'M' if op.is_a else 'N'} {op.base_x}: int8 {op.name} "
                                 "is transposed on the way to L0 in 32 x 32 squares (a multiple "
                                 "of 32)")
        k_align = k0_of(op.dtype) if op.direct else max(16, k0_of(op.dtype))
        if self._tiling.baseK % k_align:
            raise AlignmentError(name, f"baseK {self._tiling.baseK} is not a multiple of "
                                 f"{k_align}, which {op.name}{' transposed' if trans else ''} "
                                 "needs (TCubeTiling table 2)")

    def SetBias(self, biasGlobal: GlobalTensor) -> None:
        """The bias (N elements of the bias type, from this core's first column); needs a
        tiling with isBias = 1."""
        self._require_init("SetBias")
        if not self._tiling.isBias:
            raise KernelError("SetBias", "the tiling's isBias is 0: call SetBias(true) on the "
                              "host tiling first (SetBias page)")
        self._check_bias_type("SetBias")
        if not isinstance(biasGlobal, GlobalTensor) or biasGlobal.dtype != self.biasType.dtype:
            raise DtypeError("SetBias", f"the bias must be a GlobalTensor of "
                             f"{self.biasType.dtype.name}")
        self._bias = biasGlobal

    def DisableBias(self) -> None:
        """Compute without the bias again."""
        self._bias = None

    ClearBias = DisableBias

    def _require_init(self, name: str) -> None:
        if self._tiling is None:
            raise KernelError(name, "the Matmul object has no tiling: REGIST_MATMUL_OBJ(pipe, "
                              "workspace, mm, tiling) or Init(tiling) first")

    # -- compute --------------------------------------------------------------------------------
    def IterateAll(self, gm: GlobalTensor, enAtomic: int = 0, enSequentialWrite: bool = False,
                   waitIterateAll: bool = False, fakeMsg: bool = False) -> None:
        """Compute this core's whole singleCoreM x singleCoreN C into ``gm`` (its first
        element; rows orgKc or N apart): Iterate + GetTensorC over every base block.
        enAtomic 1 adds into GM (SetAtomicAdd)."""
        while self.Iterate():
            self.GetTensorC(gm, enAtomic, enSequentialWrite)

    def Iterate(self, enPartialSum: bool = False) -> bool:
        """Compute the next baseM x baseN block of C into L0C; False (and a fresh start for
        the next call) once every block is done."""
        name = "Matmul::Iterate"
        self._require_init(name)
        if enPartialSum:
            raise KernelError(name, "enPartialSum is not modelled")
        if self._a.gm is None or self._b.gm is None:
            raise KernelError(name, "SetTensorA and SetTensorB must come first")
        if self._pending is not None:
            raise KernelError(name, "the previous block is still in L0C: call GetTensorC after "
                              "each Iterate")
        if self._blocks is None:
            self._blocks = self._walk()
        block = next(self._blocks, None)
        if block is None:
            self._blocks = None
            return False
        self._pending = (*block, self._compute(*block))
        return True

    def _walk(self):
        """The base blocks (mi, ni, rows, cols) in iterateOrder (0: M moves first)."""
        t = self._tiling
        sm, sn = self._single[0], self._single[1]
        m_iter, n_iter = ceil_div(sm, t.baseM), ceil_div(sn, t.baseN)
        for outer in range(n_iter if t.iterateOrder == 0 else m_iter):
            for inner in range(m_iter if t.iterateOrder == 0 else n_iter):
                mi, ni = (inner, outer) if t.iterateOrder == 0 else (outer, inner)
                yield (mi, ni, min(t.baseM, sm - mi * t.baseM), min(t.baseN, sn - ni * t.baseN))

    def _compute(self, mi: int, ni: int, mb: int, nb: int):
        """One C block into a CO1 buffer: every baseK step of K (module docstring)."""
        t, a, b = self._tiling, self._a, self._b
        bias = self._load_bias(ni, nb) if self._bias is not None else None
        co1 = self._qco1.AllocTensor(self._acc)
        sk = self._single[2]
        m_mmad = 16 if mb == 1 else mb          # m = 1 would be GEMV
        for g in range(ceil_div(sk, t.baseK)):
            kb = min(t.baseK, sk - g * t.baseK)
            a2 = self._to_l0(a, mi, g, mb, kb)
            b2 = self._to_l0(b, ni, g, nb, kb)
            a2, b2 = a.q2.DeQue(a.dtype), b.q2.DeQue(b.dtype)
            params = MmadParams(m_mmad, nb, kb, 0, False, g == 0,
                                kDirectionAlign=a.mode == "trans32")
            if g == 0 and bias is not None:
                Mmad(co1, a2, b2, bias, params)
            else:
                Mmad(co1, a2, b2, params)
            a.q2.FreeTensor(a2)
            b.q2.FreeTensor(b2)
        if bias is not None:
            self._qc2.FreeTensor(bias)
        self._qco1.EnQue(co1)
        return co1

    def GetTensorC(self, gm: GlobalTensor, enAtomic: int = 0,
                   enSequentialWrite: bool = False) -> None:
        """Move the block the last Iterate computed from L0C to ``gm`` with Fixpipe (NZ ->
        ND, float -> C's type): at its place in the singleCoreM x singleCoreN C whose first
        element ``gm`` is (rows orgKc or N apart), or, with enSequentialWrite, as a dense
        baseM x baseN tile at ``gm``. enAtomic 1: add into GM."""
        name = "Matmul::GetTensorC"
        if not isinstance(gm, GlobalTensor):
            raise KernelError(name, "GetTensorC to a LocalTensor (VECIN) is not modelled: the AIC "
                              "has no UB (a MIX kernel's AIV would read it through GM)")
        if self._pending is None:
            raise KernelError(name, "no block to move: call Iterate first")
        if gm.dtype != self.cType.dtype:
            raise DtypeError(name, f"the GlobalTensor holds {gm.dtype.name}, C is "
                             f"{self.cType.dtype.name}")
        if int(enAtomic) not in (0, 1):
            raise KernelError(name, f"enAtomic {enAtomic} (AtomicMax/Min) is not modelled")
        mi, ni, mb, nb, co1 = self._pending
        self._pending = None
        t = self._tiling
        if enSequentialWrite:
            dst, pitch = gm, t.baseN
        else:
            pitch = self._org[4] or self._org[1]
            dst = gm[mi * t.baseM * pitch + ni * t.baseN]
        co1 = self._qco1.DeQue(self._acc)
        if enAtomic:
            SetAtomicAdd(self.cType.dtype)
        Fixpipe(dst, co1, FixpipeParamsV220(nb, mb, ceil_div(mb, 16) * 16, pitch,
                                            _QUANT[self.cType.dtype]))
        if enAtomic:
            DisableDmaAtomic()
        self._qco1.FreeTensor(co1)

    def End(self) -> None:
        """Release the L1 chunks the object keeps (the kernel's leak check wants every queue
        tensor freed) and forget A, B and the bias."""
        if self._tiling is None:
            return
        if self._pending is not None:
            raise KernelError("Matmul::End", "a block computed by Iterate was never fetched "
                              "with GetTensorC")
        for op in (self._a, self._b):
            op.release()
            op.gm = None
        self._bias, self._blocks = None, None

    # -- GM -> L1 -------------------------------------------------------------------------------
    def _chunk(self, op: _Operand, xi: int, g: int) -> _Chunk:
        """The L1 chunk of ``op`` holding base block ``xi`` (M or N) at k step ``g``: from
        the cache, or loaded (evicting the oldest when every slot is used)."""
        key = (xi // op.step_x, g // op.step_k)
        chunk = op.cache.get(key)
        if chunk is not None:
            return chunk
        if len(op.cache) == op.l1_slots:
            _, old = op.cache.popitem(last=False)
            op.q1.FreeTensor(old.tensor)
        t = self._tiling
        x0, k0 = key[0] * op.step_x * op.base_x, key[1] * op.step_k * t.baseK
        x_len = min(op.step_x * op.base_x, self._single[0 if op.is_a else 1] - x0)
        k_len = min(op.step_k * t.baseK, self._single[2] - k0)
        tensor = op.q1.AllocTensor(op.dtype)
        chunk = self._copy_in(op, tensor, x0, x_len, k0, k_len)
        op.q1.EnQue(tensor)
        op.q1.DeQue(op.dtype)
        op.cache[key] = chunk
        return chunk

    def _ld(self, op: _Operand) -> int:
        """Elements between G's rows in GM (SetOrgShape / the tiling's M, N, Ka, Kb)."""
        org_m, org_n, org_ka, org_kb, _ = self._org
        if op.is_a:
            return org_m if op.trans else org_ka
        return org_kb if op.trans else org_n

    def _copy_in(self, op: _Operand, l1, x0, x_len, k0, k_len) -> _Chunk:
        """DataCopy (ND -> NZ) of G's part into ``l1``: rows X/K of ``x_len``/``k_len``."""
        ld, c0 = self._ld(op), k0_of(op.dtype)
        if op.direct:              # G = X x K: rows x, 32 B column blocks of k
            rows, cols, src = x_len, k_len, op.gm[x0 * ld + k0]
            rows_al = ceil_div(rows, 16) * 16
        else:                      # G = K x X: rows k, columns x
            rows, cols, src = k_len, x_len, op.gm[k0 * ld + x0]
            rows_al = ceil_div(rows, 32 if op.mode == "trans8" else 16) * (
                32 if op.mode == "trans8" else 16)
        if op.mode == "trans32":
            return self._copy_slabs(l1, src, rows, cols, ld, op.is_a)
        DataCopy(l1, src, Nd2NzParams(1, rows, cols, 0, ld, rows_al, 1, 0))
        if op.is_a and op.direct and rows % 16 == 1:
            # the last row block holds one row: fill its other 15 rows with copies (m = 16)
            DataCopy(l1[rows * c0], src[(rows - 1) * ld],
                     Nd2NzParams(15, 1, cols, 0, ld, rows_al, 1, c0))
        return _Chunk(l1, rows_al, ceil_div(cols, c0) * c0)

    def _copy_slabs(self, l1, src: GlobalTensor, rows: int, cols: int, ld: int,
                    fill: bool) -> _Chunk:
        """float K x X chunks: 16-row slabs, each with its 16 x 8 fractals side by side
        (dstNzC0Stride 16), so that LoadDataWithTranspose finds a 16 x 16 square in two
        consecutive fractals; the full slabs in one DataCopy (ndNum) where the strides fit."""
        cols_al = ceil_div(cols, 16) * 16
        slab = 16 * cols_al                       # elements per slab in L1
        full, tail = divmod(rows, 16)
        if full and 16 * ld <= 65535 and slab <= 65535:
            DataCopy(l1, src, Nd2NzParams(full, 16, cols, 16 * ld, ld, 16, 1, slab))
        else:
            for s in range(full):
                DataCopy(l1[s * slab], src[16 * s * ld], Nd2NzParams(1, 16, cols, 0, ld, 16, 1, 0))
        if tail:
            DataCopy(l1[full * slab], src[16 * full * ld],
                     Nd2NzParams(1, tail, cols, 0, ld, 16, 1, 0))
        if fill and cols % 16 == 1:
            # A's last square holds one row of A: write its second fractal too (m = 16)
            n_slabs = full + (1 if tail else 0)
            for s in range(n_slabs):
                h = 16 if s < full else tail
                DataCopy(l1[s * slab + (cols_al // 8 - 1) * 16 * 8],
                         src[16 * s * ld + cols - 1], Nd2NzParams(1, h, 1, 0, ld, 16, 1, 0))
        return _Chunk(l1, ceil_div(rows, 16) * 16, cols_al)

    # -- L1 -> L0 -------------------------------------------------------------------------------
    def _to_l0(self, op: _Operand, xi: int, g: int, xb: int, kb: int):
        """Load base block (xi, g) of ``op`` (xb x kb of X x K) into an L0A/L0B buffer in
        the ZZ (A) / ZN (B) fractal order Mmad reads, and hand it to M."""
        t = self._tiling
        chunk = self._chunk(op, xi, g)
        l0 = op.q2.AllocTensor(op.dtype)
        x_off = (xi % op.step_x) * op.base_x          # elements into the chunk
        k_off = (g % op.step_k) * t.baseK
        c0 = k0_of(op.dtype)
        x1, k1 = ceil_div(xb, 16), ceil_div(kb, c0)
        if op.mode == "trans32" and op.is_a:
            k1 = 2 * ceil_div(kb, 16)                  # kDirectionAlign: k fractals in pairs
        # fractal (x, kf) of the L0 grid: A (ZZ) x * k1 + kf, B (ZN) kf * x1 + x
        dx, dk = (k1, 1) if op.is_a else (1, x1)
        {"direct": self._load_direct, "trans16": self._load_trans16,
         "trans8": self._load_trans8, "trans32": self._load_trans32}[op.mode](
            l0, chunk, x_off, k_off, x1, k1, dx, dk, kb, c0)
        op.q2.EnQue(l0)
        return l0

    @staticmethod
    def _load_direct(l0, ch, x_off, k_off, x1, k1, dx, dk, kb, c0):
        """NZ fractal (x block, k column) = the L0 fractal: one LoadData per x block."""
        per_col = ch.rows // 16
        for i in range(x1):
            _load2d(l0, i * dx, ch.tensor, (k_off // c0) * per_col + x_off // 16 + i, k1,
                    per_col, dk - 1, False)

    @staticmethod
    def _load_trans16(l0, ch, x_off, k_off, x1, k1, dx, dk, kb, c0):
        """16 x 16 NZ fractal (k block, x column) transposed: one LoadData per x block."""
        per_col = ch.rows // 16
        for i in range(x1):
            _load2d(l0, i * dx, ch.tensor, (x_off // 16 + i) * per_col + k_off // 16, k1, 1,
                    dk - 1, True)

    @staticmethod
    def _load_trans8(l0, ch, x_off, k_off, x1, k1, dx, dk, kb, c0):
        """int8: 32 x 32 squares (two NZ fractals stacked) transposed into the fractals
        (2q, p) and (2q + 1, p); one LoadDataWithTranspose per k square, p ascending."""
        per_col = ch.rows // 32                           # squares down a 32-column block
        pairs = ceil_div(x1, 2)
        for p in range(k1):
            start = (x_off // 32) * per_col + k_off // 32 + p
            _load_t(l0, p * dk, ch.tensor, start, pairs, per_col, 2 * dx - 1, dx - 1)

    @staticmethod
    def _load_trans32(l0, ch, x_off, k_off, x1, k1, dx, dk, kb, c0):
        """float: 16 x 16 squares (two side-by-side fractals of a slab) transposed into the
        fractals (q, 2s) and (q, 2s + 1); one LoadDataWithTranspose per x block."""
        per_slab = ch.cols // 16
        squares = ceil_div(kb, 16)
        for q in range(x1):
            start = (k_off // 16) * per_slab + x_off // 16 + q
            _load_t(l0, q * dx, ch.tensor, start, squares, per_slab, 2 * dk - 1, dk - 1)

    # -- bias -----------------------------------------------------------------------------------
    def _load_bias(self, ni: int, nb: int):
        """The block's nb bias values: GM -> C1 (ND2NZ, one row, zero-padded to 32 B) ->
        bias table (C2, 64 B blocks)."""
        t, acc = self._tiling, self._acc
        c1 = self._qc1.AllocTensor(acc)
        DataCopy(c1, self._bias[ni * t.baseN], Nd2NzParams(1, 1, nb, 0, nb, 1, 1, 0))
        self._qc1.EnQue(c1)
        c1 = self._qc1.DeQue(acc)
        c2 = self._qc2.AllocTensor(acc)
        DataCopy(c2, c1, DataCopyParams(1, ceil_div(nb * acc.itemsize, 64), 0, 0))
        self._qc1.FreeTensor(c1)
        self._qc2.EnQue(c2)
        return self._qc2.DeQue(acc)


def _load2d(l0, dst_frac: int, src, start: int, repeat: int, src_stride: int, dst_gap: int,
            transpose: bool) -> None:
    """LoadData of ``repeat`` fractals, split at 255 repeats."""
    frac = 512 // l0.dtype.itemsize
    for r0 in range(0, repeat, _MAX_REPEAT):
        n = min(_MAX_REPEAT, repeat - r0)
        LoadData(l0[(dst_frac + r0 * (1 + dst_gap)) * frac], src,
                 LoadData2DParams(start + r0 * src_stride, n, src_stride, 0, dst_gap, transpose))


def _load_t(l0, dst_frac: int, src, start: int, repeat: int, src_stride: int, dst_gap: int,
            frac_gap: int) -> None:
    """LoadDataWithTranspose of ``repeat`` squares, split at 255 repeats."""
    frac = 512 // l0.dtype.itemsize
    for r0 in range(0, repeat, _MAX_REPEAT):
        n = min(_MAX_REPEAT, repeat - r0)
        LoadDataWithTranspose(l0[(dst_frac + r0 * (1 + dst_gap)) * frac], src,
                              LoadData2dTransposeParams(start + r0 * src_stride, n, src_stride,
                                                        dst_gap, frac_gap))
