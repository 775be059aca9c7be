"""The high-level Matmul API (device side): ``Matmul<A_TYPE, B_TYPE, C_TYPE, BIAS_TYPE>``
with ``MatmulType``, built from the cube instructions the way the library builds it, so its
cost comes out of the timing model.

Usage, as in an Ascend C cube kernel (``KERNEL_TYPE_AIC_ONLY``; the MIX form below reads
the same, on the AIVs)::

    mm = Matmul(MatmulType(TPosition.GM, CubeFormat.ND, half),
                MatmulType(TPosition.GM, CubeFormat.ND, half),
                MatmulType(TPosition.GM, CubeFormat.ND, float32))
    REGIST_MATMUL_OBJ(pipe, GetSysWorkSpacePtr(), mm, tiling)   # tiling: a TCubeTiling
    mm.SetTensorA(aGm[offsetA]); mm.SetTensorB(bGm[offsetB]); mm.SetBias(biasGm[offsetN])
    mm.SetTail(tailM, tailN)                                    # a tail core's part
    mm.IterateAll(cGm[offsetC])        # or: while mm.Iterate(): mm.GetTensorC(cGm[offsetC])
    mm.End()

The data path (Matmul使用说明 "实现原理", figure 2; docs/reference/hardware.md §2.1): for each
``baseM x baseN`` block of C (``Iterate``; iterateOrder 0 walks M first), for each ``baseK``
step of K:

1. MTE2, ``DataCopy`` with ``Nd2NzParams`` (ND -> NZ, zero-padded to 32 B): an A chunk of
   ``stepM*baseM x stepKa*baseK`` into A1 and a B chunk of ``stepKb*baseK x stepN*baseN``
   into B1, unless that chunk is still in L1 (A1/B1 hold ``depthA1 / (stepM*stepKa)`` and
   ``depthB1 / (stepN*stepKb)`` chunks, reused least recently loaded first);
   A chunk is freed after its last k step is loaded when K spans several chunks, so the
   next chunk's copy overlaps this chunk's loads (scheduler_mdl_base.h ClearL1BufferCache);
   a chunk holding the whole K stays for the next blocks;
2. MTE1, the step's ``baseM x baseK`` of A into L0A (ZZ) and ``baseK x baseN`` of B into
   L0B (ZN), two buffers each unless ``dbL0A`` or ``dbL0B`` is 1 (:mod:`.matmul_tiling_use`
   gives how the library reads the step and db fields), with the instructions the A2 library picks
   (``stage/split/load_to_l0_utils.h`` GetLoadInstrType, ``load_to_l0b/load_to_l0b_loadInstr.h``):
   one ``LoadData3DParamsV2`` for a 16/32-bit A slice (transposed or not) and for a
   16/32-bit B kept K x N; one ``LoadData`` (2D) with repeats for a B kept N x K whose
   slice is its chunk's whole N; otherwise the per-block forms below;
3. M, ``Mmad``: the first step starts C at 0 (or at the bias, from the bias table, which
   MTE2 -> C1 -> MTE1 -> C2 filled), the later ones accumulate in L0C (``dbL0C`` buffers);

then ``GetTensorC``: FIX, ``Fixpipe`` L0C -> GM, NZ -> ND, converting float to half/bf16 on
the way (the one rounding of the product). The hand-offs between the pipes are TQue
hand-offs (A1/B1: MTE2 -> MTE1, A2/B2/C2: MTE1 -> M, CO1: M -> FIX, and back when a buffer
is freed), so double buffers overlap in the replay as on hardware.

The per-block forms (int8, a partial B slice): a fractal of L0A (ZZ) or L0B (ZN) is 16
rows of the non-K axis by C0 = 32 B / sizeof(T) of K. When GM holds the operand with K
innermost (A, or B transposed) its NZ fractals in L1 are those fractals: plain
``LoadData``. Otherwise (A transposed, B) the NZ fractals are transposed on the way: int8
with ``LoadDataWithTranspose`` on 32 x 32 squares (two NZ fractals one above the other), A
one load per square of M repeating along K, B one per square of K repeating along N
(``load_to_l0a_loadInstr.h`` / ``load_to_l0b_loadInstr.h``, LOAD2DTRANSPOSE).

Slices the library pads (:mod:`.matmul_l0_slice`): an int8 base of 16 or 48 moved
transposed is loaded as whole 32 x 32 squares, so each base block sits in L1 at a
32-column block of its own (``CopyND2NZForInt8``) and the load writes 32 (64) rows'
fractals, the extra ones never read; a float slice moved transposed is loaded with
``CeilAlign(baseK, 16)`` rows of K by LoadData3DV2 from whatever k offset the step has
(a baseK of 40 starts at 40, 80, ...), and A's k fractals are counted in pairs
(``MmadParams.kDirectionAlign``, ``mmad_compute.h``). The L0 buffers hold the padded
slice; a tiling whose padded slice would pass the L0 buffer the library's kernel loads it
into (half of L0A/L0B when double-buffered) is refused (AlignmentError), as that kernel
would write past it. A block of one row is computed with
``m = 16`` (``m = 1`` would switch the cube to GEMV, as the library's kernels avoid), so
the other 15 rows of its fractal are filled by repeating the row (``ndNum`` with
``srcNdMatrixStride = 0``), or, kept K x M, by the zeros the ND -> NZ copy pads a row
with: their products land in L0C rows Fixpipe never reads.

Types (Matmul使用说明 table 2, A2/A3): A/B half, bfloat16, float -> C float, half or
bfloat16 (bias float); int8 -> C int32 (bias int32). Not modelled (KernelError at the call):
A/B/bias not in GM or NZ input, C NZ or in CO1/L1, a half bias (its L1 -> bias-table
conversion), quantised outputs, enAtomic 2/3, enPartialSum, the asynchronous Iterate /
GetTensorC (SetWorkspace), the batch interfaces, the SpecialMDL/IBShare/basic-block
templates and the SoCs without Fixpipe (910A, 310P).

Templates (``Matmul(A, B, C, BIAS, MM_CFG)``, :mod:`.matmul_config`): CFG_NORM (default)
and CFG_MDL, or a MatmulApiStaticTiling (constant tiling) registered with a null tiling:
``REGIST_MATMUL_OBJ(pipe, ws, mm, None)``. NORM and MDL run the data path above (NORM's
separate cache of base blocks is not distinguished); enUnitFlag is not applied to the
API's Mmad/Fixpipe hand-off (a TQue hand-off).

Where it runs (REGIST_MATMUL_OBJ; kernel_kfc.h ``REGIST_CUBE_OBJ``):

* On the AIC of a ``KERNEL_TYPE_AIC_ONLY`` launch (blockDim counts AICs), or in a mixed
  launch registered with ``ASCENDC_CUBE_ONLY=True`` (Ascend C's ``#define
  ASCENDC_CUBE_ONLY``): the kernel calls the API on the AIC itself (handing C to the AIVs
  through GM and cross-core flags, as the kernel writes them).
* The MIX form, in a ``KERNEL_TYPE_MIX_AIC_1_2`` (or ``_1_1``) launch without
  ``ASCENDC_CUBE_ONLY``: the kernel is compiled for both kinds of core and
  ``REGIST_MATMUL_OBJ`` splits them. On the AIC it makes the objects the block's server and
  returns from the kernel; on each AIV it makes them clients, whose calls (SetTensorA/B,
  SetBias, SetTail travel with the next message; SetOrgShape, Init, Iterate, GetTensorC,
  IterateAll, End are messages) the AIC executes on its cube (:class:`_KfcServer`: the KFC
  message queues in the system workspace, ``NotifyEvent`` / ``WaitEvent`` between the
  cores). Each AIV drives its own part of C (the host tiling's ``SetDim`` counts AIVs, and
  ``GetBlockIdx()`` on an AIV is ``block * 2 + GetSubBlockIdx()``); from an AIV's first
  Iterate to its End the AIC serves that AIV alone. GetTensorC into a LocalTensor (C's
  MatmulType VECIN/VECCALC/VECOUT) has the AIC's Fixpipe write the block, as a dense
  ``baseM x baseN`` tile, into the AIV's GM copy of its UB in the system workspace, and the
  AIV copy it in (MTE2). IterateAll with enAtomic 1 adds into GM on the AIC's Fixpipe. The
  cube work is recorded on the AIC (MTE2, MTE1, M, FIX), the AIV records its messages, its
  waits and the copy into its UB; the checker sees the messages order the GM accesses
  (:class:`npusim.ascendc.checker.GmOrder`). The kernel must ``SetSysWorkspace``: without
  the system workspace REGIST_MATMUL_OBJ raises (docs/reference/hardware.md §3 "Workspace").

Sources: hiascend / asc-devkit docs "Matmul使用说明", "Matmul模板参数", "MatmulType",
"REGIST_MATMUL_OBJ" (atlasascendc_api_07_0628: at most 4 objects; in the split mode the AIC
runs only what the AIVs' calls ask for), asc-devkit ``impl/adv_api/detail/kfc/kernel_kfc.h``
and ``include/adv_api/matmul/matmul_client.h`` (the message protocol: which calls post,
which wait, the server's per-AIV queues and its lock, CopyToUB after GetTensorC), "Init", "SetTensorA", "SetTensorB",
"SetBias" (07_0635), "SetTail", "SetOrgShape" (07_0651), "SetSingleShape", "Iterate",
"GetTensorC" (07_0639), "IterateAll", "End"; pyasc docs/python-api asc.language.adv.Matmul
(the same signatures); the m = 1 -> 16 rule from the library's kernels' Mmad calls.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from npusim import lockstep as _lockstep
from npusim.ascendc import core as _core
from npusim.ascendc.atomic import DisableDmaAtomic, SetAtomicAdd
from npusim.ascendc.crosscore import KernelReturn
from npusim.ascendc.cube.common import ceil_div, k0_of
from npusim.ascendc.cube.datamove import LoadData, LoadDataWithTranspose
from npusim.ascendc.cube.load3d import LoadData3DParamsV2
from npusim.ascendc.cube.fixpipe import Fixpipe
from npusim.ascendc.cube.mmad import Mmad
from npusim.ascendc.datacopy import DataCopy
from npusim.ascendc.lib import matmul_l0_slice as _slice
from npusim.ascendc.lib import matmul_scalar as _mm_scalar
from npusim.ascendc.lib import matmul_tiling_use as _use
from npusim.ascendc.lib.matmul_config import CFG_NORM, config_of
from npusim.ascendc.lib.matmul_tiling import CubeFormat, TCubeTiling
from npusim.ascendc.pipe import GetTPipePtr, TQue
from npusim.ascendc.tensor import GlobalTensor, LocalTensor
from npusim.ascendc.types import (PIPE_FIX, PIPE_MTE2, PIPE_MTE3, PIPE_S, PIPE_V,
                                  DataCopyParams,
                                  FixpipeParamsV220, LoadData2DParams,
                                  LoadData2dTransposeParams, MmadParams, Nd2NzParams,
                                  QuantMode_t, TPosition, bfloat16_t, float32, half, int8_t,
                                  int32_t)
from npusim.errors import AlignmentError, DtypeError, KernelError, LimitError, SyncError

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
_UB_POSITIONS = frozenset({TPosition.VECIN, TPosition.VECCALC, TPosition.VECOUT})
#: System workspace bytes of one AIV's KFC message queue, before its UB's GM copy (MIX form;
#: layout ours [R], see _KfcServer).
KFC_QUEUE_BYTES = 64 * 1024


@dataclass(frozen=True)
class MatmulType:
    """``MatmulType<POSITION, CubeFormat, TYPE, ISTRANS>``: where an operand lives, its
    layout, its element type, and whether it may be transposed (ISTRANS). SetTensorA/B's
    isTranspose is taken whatever ISTRANS says, as the library's cube side does.
    Source: hiascend "MatmulType"."""

    position: TPosition = TPosition.GM
    format: CubeFormat = CubeFormat.ND
    dtype: np.dtype = half
    isTrans: bool = False

    def __post_init__(self):
        object.__setattr__(self, "position", TPosition(self.position))
        object.__setattr__(self, "format", CubeFormat(self.format))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))


def REGIST_MATMUL_OBJ(tpipe, workspace, *objects, ASCENDC_CUBE_ONLY: bool = False) -> None:
    """``REGIST_MATMUL_OBJ(tpipe, workspace, mm[, tiling], mm2, tiling2, ...)``: set up each
    Matmul object with its TCubeTiling; with one object the tiling may be left out and
    given to ``Init`` later. A tiling of ``None`` (C++ ``(TCubeTiling*)nullptr``) registers
    the constant-tiling form: the object's MatmulApiStaticTiling is its tiling, nothing is
    read from GM (with a plain MatmulConfig: as if left out). At most 4 objects.

    Where it runs decides what it does (kernel_kfc.h ``REGIST_CUBE_OBJ``; module docstring):

    * on the AIC of a ``KERNEL_TYPE_AIC_ONLY`` launch, of a mixed block without AIVs, or
      with ``ASCENDC_CUBE_ONLY=True`` (Ascend C's ``#define ASCENDC_CUBE_ONLY``: the kernel
      drives the API on the AIC itself): ``Init(tiling, tpipe)`` of each object, then the
      kernel goes on;
    * on the AIC of a mixed block with AIVs (the MIX form): the objects become the block's
      KFC server, which executes its AIVs' Matmul calls, and the AIC returns from the kernel
      (:class:`npusim.ascendc.crosscore.KernelReturn`: no code after it runs there);
    * on an AIV of such a block: the objects become clients of that server (each call a
      message the AIC executes), after waiting for the AIC to set up the workspace
      (``WaitEvent(WORKSPACE_SYNC_ID)``); with ``ASCENDC_CUBE_ONLY=True`` the AIV returns
      from the kernel, as the vector side of a cube-only build does.

    ``workspace`` is the system workspace (``GetSysWorkSpacePtr()``), which the MIX form
    needs: it holds each AIV's message queue and the GM copy of the UB the server writes
    C into (module docstring).

    Raises:
        KernelError: an argument that is not a Matmul object; more than 4 objects or an
            object without its tiling among several (REGIST_MATMUL_OBJ 约束说明); in the
            MIX form a null workspace (SetSysWorkspace was not called: kernel_kfc.h
            KfcServer::Init asserts "workspaceGM cannot be nullptr"; docs/reference/hardware.md
            §3 "Workspace": A2 must set the system workspace), a block without an AIC, or
            AIV objects that differ from the AIC's. GmAccessError: a workspace too small
            for the block's message queues and UB copies.
    """
    pairs = _registered_pairs(objects)
    ctx = _core.current_core()
    state = ctx.mix
    kfc = state is not None and not ASCENDC_CUBE_ONLY
    if kfc and ctx.core_kind == _core.AIC and not state.block_cores(ctx, _core.AIV):
        kfc = False                  # MIX_AIC_1_0: no AIV to serve
    if state is not None and ASCENDC_CUBE_ONLY and ctx.core_kind == _core.AIV:
        raise KernelReturn()         # the vector side of a cube-only build returns here
    if not kfc:
        for mm, tiling in pairs:
            if tiling is None:
                mm._pipe = tpipe
            else:
                mm.Init(tiling, tpipe)
        return
    if not workspace:
        raise KernelError("REGIST_MATMUL_OBJ", "the system workspace is null: the MIX form's "
                          "KFC server keeps the AIVs' message queues in it. Call "
                          "SetSysWorkspace(workspace) before GetSysWorkSpacePtr() (A2/A3 must "
                          "set the system workspace: docs/reference/hardware.md §3 \"Workspace\"; "
                          "kernel_kfc.h KfcServer::Init)", pipe="PIPE_S")
    if ctx.core_kind == _core.AIC:
        _KfcServer.start(ctx, tpipe, int(workspace), pairs)
        raise KernelReturn()         # server.Quit(); return;
    _KfcServer.connect(ctx, int(workspace), pairs)


def _registered_pairs(objects) -> list:
    """REGIST_MATMUL_OBJ's variadic part as (Matmul, tiling or None) pairs, checked."""
    pairs, i = [], 0
    while i < len(objects):
        mm = objects[i]
        if not isinstance(mm, Matmul):
            raise KernelError("REGIST_MATMUL_OBJ", f"argument {i + 3} is not a Matmul object")
        if i + 1 < len(objects) and not isinstance(objects[i + 1], Matmul):
            tiling = objects[i + 1]     # a TCubeTiling, or None: (TCubeTiling*)nullptr
            i += 2
            if tiling is None:
                tiling = _constant_tiling(mm, i - 1)
        else:
            tiling = None               # left out: Init(tiling) later
            i += 1
        pairs.append((mm, tiling))
    if len(pairs) > _MAX_OBJECTS:
        raise LimitError("REGIST_MATMUL_OBJ", f"{len(pairs)} Matmul objects: at most "
                         f"{_MAX_OBJECTS} in a program")
    if len(pairs) > 1 and any(t is None for _, t in pairs):
        raise KernelError("REGIST_MATMUL_OBJ", "with several Matmul objects each must be "
                          "followed by its tiling")
    return pairs


def _constant_tiling(mm: "Matmul", arg: int):
    """An explicit null tiling (C++ ``(TCubeTiling*)nullptr``): the constant-tiling form,
    whose tiling comes from the object's MatmulApiStaticTiling (not read from GM); with a
    plain MatmulConfig the tiling is left to Init, as when it is left out."""
    static = mm.static_tiling
    if static is None:
        return None
    if not static.is_complete:
        raise KernelError("REGIST_MATMUL_OBJ", f"argument {arg + 3} is a null tiling but the "
                          "object's MatmulApiStaticTiling has no shapes: GetMatmulApiTiling "
                          "of a config with MatmulShapeParams (singleCoreM/N/K and basicM/N/K)")
    mm._static_cube = static.to_cube_tiling()
    return mm._static_cube


@dataclass
class _Chunk:
    """One L1 chunk of an operand: its tensor and the geometry its fractals are found by."""

    tensor: object
    rows: int          # rows of the chunk's GM matrix, padded as laid out in L1
    cols: int          # columns, padded


def _pitch(itemsize: int, moved_transposed: bool, base_x: int) -> int:
    """Columns of L1 between one base block of X and the next: int8 kept K x X puts each
    block at a 32-column block of its own (copy_tile_to_cube_common.h CopyND2NZForInt8:
    ``dstNzMatrixStride = CeilAlign(baseWidth, 32) * ...``), where its 32 x 32 squares
    start; otherwise the blocks are contiguous."""
    return -(-base_x // 32) * 32 if moved_transposed and itemsize == 1 else base_x


def _chunk_bytes(itemsize: int, moved_transposed: bool, base_x: int, step_x: int,
                 k: int) -> int:
    """An L1 chunk of ``step_x`` blocks of X by ``k`` of K as :meth:`Matmul._copy_in` lays
    it out: K rows padded to 32 for int8 and to 16 otherwise when K is the row axis
    (copy_cube_in_params_base.h GetBaseSize pads the same)."""
    if moved_transposed:
        unit = 32 if itemsize == 1 else 16
        k = -(-k // unit) * unit
    return step_x * _pitch(itemsize, moved_transposed, base_x) * k * itemsize


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
        return self._direct(self.trans)

    def _direct(self, trans: bool) -> bool:
        return bool(trans) != self.is_a         # A as stored, or B transposed

    @property
    def mode(self) -> str:
        return self._mode(self.trans)

    def _mode(self, trans: bool) -> str:
        if self._direct(trans):
            return "direct"
        return {1: "trans8", 2: "trans16", 4: "trans32"}[self.dtype.itemsize]

    @property
    def pitch(self) -> int:
        return self._pitch(self.trans)

    def _pitch(self, trans: bool) -> int:
        return _pitch(self.dtype.itemsize, not self._direct(trans), self.base_x)

    def l1_bytes(self, k_steps: int, trans: bool) -> int:
        """A chunk of ``step_x`` blocks of X by ``k_steps`` base steps of K."""
        return _chunk_bytes(self.dtype.itemsize, not self._direct(trans), self.base_x,
                            self.step_x, k_steps * self.base_k)

    def l0_bytes(self, trans: bool) -> int:
        """One base slice in L0 as the library's loads write it (:mod:`.matmul_l0_slice`)."""
        return _slice.slice_bytes(self.dtype.itemsize, not self._direct(trans), self.base_x,
                                  self.base_k)

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
        MM_CFG: a :class:`~npusim.ascendc.lib.matmul_config.MatmulConfig` (CFG_NORM,
            CFG_MDL, GetMMConfig) or a MatmulApiStaticTiling (GetMatmulApiTiling), whose
            tiling a null REGIST_MATMUL_OBJ tiling takes. KernelError for templates and
            options not modelled.

    Raises (at Init or at the call): KernelError for what is not modelled (module
    docstring) and for calls out of order (Iterate before SetTensorA/B, GetTensorC
    without Iterate, SetBias with a tiling whose isBias is 0); DtypeError for type
    combinations outside Matmul使用说明 table 2 and GlobalTensors of another type;
    AlignmentError for a tiling whose base sizes break the fractal alignment; UbError when
    the buffers the tiling asks for do not fit L1/L0 (InitBuffer).
    """

    def __init__(self, aType: MatmulType, bType: MatmulType, cType: MatmulType,
                 biasType: MatmulType | None = None, MM_CFG=CFG_NORM):
        self.aType, self.bType, self.cType = aType, bType, cType
        # the template (MatmulConfig) or a constant tiling (MatmulApiStaticTiling)
        self.config, self.static_tiling = config_of(MM_CFG)
        self.biasType = biasType if biasType is not None else MatmulType(
            TPosition.GM, CubeFormat.ND, cType.dtype)
        self._pipe = None
        self._tiling: TCubeTiling | None = None
        self._pending = None            # (mi, ni, mb, nb, co1 tensor) after Iterate
        self._blocks = None             # the Iterate walk over base blocks
        self._kfc = None                # MIX form, on an AIV: (server, object index, AIV)
        self._serves = False            # MIX form, on the AIC: this object is the server's
        self._constant = False          # registered with a null tiling: constant tiling
        self._static_cube = None        # that tiling (a TCubeTiling of compile-time values)

    # -- setup ----------------------------------------------------------------------------------
    def Init(self, cubeTiling: TCubeTiling, tpipe=None) -> None:
        """``Init(&tiling, tpipe)``: take the tiling and reserve the buffers it asks for from
        ``tpipe`` (default: the kernel's TPipe): A1/B1 chunks, L0A/L0B steps, L0C blocks
        and, with a bias, one bias block in C1 and in the bias table."""
        name = "Matmul::Init"
        if self._kfc is not None:
            return self._client_init(cubeTiling, post=True)
        ctx = _core.current_core()
        if ctx.core_kind == _core.AIV:
            if ctx.mix is not None:
                raise KernelError(name, "on an AIV of a mixed kernel the Matmul object is a "
                                  "client of its block's AIC (the MIX form): register it with "
                                  "REGIST_MATMUL_OBJ(pipe, GetSysWorkSpacePtr(), mm, tiling) "
                                  "first")
            raise KernelError(name, "the Matmul API runs on the cube core: launch with "
                              "KERNEL_TYPE_AIC_ONLY, or a mixed kernel whose AIVs call it "
                              "through their AIC (REGIST_MATMUL_OBJ on every core); a vector "
                              "core has no L1")
        if not ctx.soc.support_fixpipe:
            raise KernelError(name, f"the Matmul API on {ctx.soc.soc_version} (no Fixpipe: "
                              "L0C leaves through the UB) is not modelled")
        self._check_types(name, mix=self._serves)
        t = cubeTiling
        self._check_tiling(name, t)
        pipe = tpipe if tpipe is not None else (self._pipe or GetTPipePtr())
        self._pipe, self._tiling = pipe, t
        self._check_slice(name, True, self.aType.isTrans)
        self._check_slice(name, False, self.bType.isTrans)
        # the steps and buffer counts as the library reads the fields (matmul_tiling_use)
        step_ka, step_kb = _use.k_steps(self.config.template, self.aType.dtype.itemsize,
                                        t.stepKa, t.stepKb)
        db_l0 = _use.l0ab_buffers(t.dbL0A, t.dbL0B)
        db_a1 = max(1, t.depthA1 // (t.stepM * step_ka))
        db_b1 = max(1, t.depthB1 // (t.stepN * step_kb))
        self._a = _Operand("A", self.aType, t.baseM, t.baseK, t.stepM, step_ka, db_a1,
                           db_l0, TPosition.A1, TPosition.A2)
        self._b = _Operand("B", self.bType, t.baseN, t.baseK, t.stepN, step_kb, db_b1,
                           db_l0, TPosition.B1, TPosition.B2)
        k_iter = max(1, ceil_div(t.singleCoreK, t.baseK))
        for op, mtype in ((self._a, self.aType), (self._b, self.bType)):
            # sized for the MatmulType's isTrans, as the library's buffers are (GetBaseSize
            # reads INPUT_TYPE::isTrans); a chunk never holds more K than the core's part
            pipe.InitBuffer(op.q1, op.l1_slots, op.l1_bytes(min(op.step_k, k_iter),
                                                            mtype.isTrans))
            pipe.InitBuffer(op.q2, op.l0_slots, op.l0_bytes(mtype.isTrans))
        self._qco1 = TQue(TPosition.CO1, 1)
        pipe.InitBuffer(self._qco1, _use.l0c_buffers(t.dbL0C),
                        t.baseM * t.baseN * self._acc.itemsize)
        if t.isBias:
            self._qc1, self._qc2 = TQue(TPosition.C1, 1), TQue(TPosition.C2, 1)
            pipe.InitBuffer(self._qc1, 1, t.baseN * self._acc.itemsize)
            pipe.InitBuffer(self._qc2, 1, t.baseN * self._acc.itemsize)
        self._org = [t.M, t.N, t.Ka, t.Kb, 0]
        self._single = [t.singleCoreM, t.singleCoreN, t.singleCoreK]
        self._bias = None
        self._c_gm = None
        # the constant-tiling form: the tiling REGIST_MATMUL_OBJ took from the static one
        self._constant = self._static_cube is not None and cubeTiling is self._static_cube
        _mm_scalar.charge(ctx, "Init", self._constant, flush=True)

    def _check_types(self, name: str, mix: bool = False) -> None:
        """The MatmulTypes against Matmul使用说明 table 2 and what is modelled; ``mix``: C may
        be in an AIV's UB (VECIN/VECCALC/VECOUT), which only the MIX form reaches."""
        a, b, c = self.aType, self.bType, self.cType
        for role, mt in (("A", a), ("B", b)):
            if mt.position != TPosition.GM or mt.format != CubeFormat.ND:
                raise KernelError(name, f"{role} in {mt.position.name}/{mt.format.name} is not "
                                  "modelled (GM, ND only)")
        if c.position in _UB_POSITIONS and c.format == CubeFormat.ND and not mix:
            raise KernelError(name, f"C in {c.position.name}: the cube core has no UB "
                              "(docs/reference/hardware.md §3); C in an AIV's UB is the MIX form, "
                              "where the AIVs call the API (REGIST_MATMUL_OBJ on every core of "
                              "a KERNEL_TYPE_MIX_AIC_1_2 kernel) and GetTensorC brings each "
                              "block into the caller's LocalTensor")
        if (c.position != TPosition.GM and c.position not in _UB_POSITIONS) or \
                c.format != CubeFormat.ND:
            raise KernelError(name, f"C in {c.position.name}/{c.format.name} is not modelled "
                              "(GM or an AIV's VECIN/VECCALC/VECOUT, ND only)")
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
        """The fields the kernel relies on (TCubeTiling table 2), as the library reads
        them (:mod:`.matmul_tiling_use`: NORM ignores stepKa/stepKb for 16/32-bit
        operands; any dbL0A/B/C has a meaning)."""
        _use.check(name, t, self.config.template, self.aType.dtype.itemsize)
        c0 = k0_of(self.aType.dtype)
        if t.baseM % 16 or t.baseN % 16 or t.baseK % c0:
            raise AlignmentError(name, f"baseM {t.baseM} and baseN {t.baseN} must be multiples "
                                 f"of 16 and baseK {t.baseK} of {c0}, the fractal's K (C0) of "
                                 f"{self.aType.dtype.name} (TCubeTiling: bases aligned to the "
                                 "fractals)")

    def SetOrgShape(self, orgM: int, orgN: int, orgKa: int, orgKb: int | None = None,
                    orgKc: int = 0) -> None:
        """The original shapes (elements): A is orgM x orgKa (orgKa x orgM transposed), B
        orgKb x orgN (orgN x orgKb), C orgM x (orgKc or orgN): the row pitches in GM."""
        self._require_init("SetOrgShape")
        org = [int(orgM), int(orgN), int(orgKa), int(orgKa if orgKb is None else orgKb),
               int(orgKc)]
        if self._kfc is not None:        # a message of its own (MMFUN_SET_ORG_SHAPE)
            self._kfc[0].serve(self, "Matmul::SetOrgShape", {"org": org}, None, ack=False)
            return
        self._org = org
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
        if self._kfc is not None:        # travels with the next message (kfcMsg_ setTail)
            self._msg["tail"] = tuple(int(v) for v in (tailM, tailN, tailK))
            return
        self._forget()

    def _forget(self) -> None:
        """New shapes: the L1 chunks loaded so far no longer match (keyed by block)."""
        self._a.release()
        self._b.release()

    def SetTensorA(self, gm: GlobalTensor, isTransposeA: bool = False) -> None:
        """A's start in GM; isTransposeA: GM holds A as K x M (whatever MatmulType isTrans
        says, as the library accepts it)."""
        if self._kfc is not None:
            return self._client_operand("SetTensorA", True, gm, isTransposeA)
        self._set_operand("SetTensorA", self._a, self.aType, gm, isTransposeA)

    def SetTensorB(self, gm: GlobalTensor, isTransposeB: bool = False) -> None:
        """B's start in GM; isTransposeB: GM holds B as N x K (whatever MatmulType isTrans
        says, as the library accepts it)."""
        if self._kfc is not None:
            return self._client_operand("SetTensorB", False, gm, isTransposeB)
        self._set_operand("SetTensorB", self._b, self.bType, gm, isTransposeB)

    def _set_operand(self, name, op: _Operand, mtype: MatmulType, gm, trans) -> None:
        self._require_init(name)
        self._check_operand(name, op.is_a, gm, trans)
        _mm_scalar.charge(_core.current_core(), "SetTensor", self._constant)
        op.release()                     # new data: nothing in L1 is valid any more
        op.gm, op.trans = gm, bool(trans)

    def _check_operand(self, name: str, is_a: bool, gm, trans) -> None:
        """A or B as SetTensorA/B receive it: a GlobalTensor of the MatmulType's type, a
        transpose the type allows, and a tiling whose bases suit the way it reaches L0."""
        mtype, role = (self.aType, "A") if is_a else (self.bType, "B")
        if not isinstance(gm, GlobalTensor):
            raise KernelError(name, "only a GlobalTensor operand is modelled (A/B in GM)")
        if gm.dtype != mtype.dtype:
            raise DtypeError(name, f"the GlobalTensor holds {gm.dtype.name}, the MatmulType says "
                             f"{mtype.dtype.name}")
        # a transpose is taken whatever the MatmulType's isTrans says: the library's cube
        # side accepts SetTensorB(b, true) on a B declared plainly (code in the wild does)
        self._check_slice(name, is_a, trans)
        t, isz = self._tiling, mtype.dtype.itemsize
        base_x, x_name = (t.baseM, "baseM") if is_a else (t.baseN, "baseN")
        moved, declared = bool(trans) == is_a, bool(mtype.isTrans) == is_a
        k = t.stepKa * t.baseK if is_a else t.stepKb * t.baseK
        if (_chunk_bytes(isz, moved, base_x, 1, k) > _chunk_bytes(isz, declared, base_x, 1, k)
                or _slice.slice_bytes(isz, moved, base_x, t.baseK)
                > _slice.slice_bytes(isz, declared, base_x, t.baseK)):
            raise AlignmentError(name, f"{role} {'transposed' if trans else 'as stored'}: "
                                 f"its {x_name} {base_x} / baseK {t.baseK} blocks are padded "
                                 "in L1/L0 beyond the buffers sized at Init for the "
                                 f"MatmulType's isTrans ({mtype.isTrans}), as the library "
                                 "sizes them (GetBaseSize reads INPUT_TYPE::isTrans); declare "
                                 "isTrans as SetTensor passes it")

    def _check_slice(self, name: str, is_a: bool, trans: bool) -> None:
        """A's (or B's) base slice, as the library's loads pad it, must fit the L0 buffer
        its kernel loads it into (:mod:`.matmul_l0_slice`)."""
        t = self._tiling
        mtype, role = (self.aType, "A") if is_a else (self.bType, "B")
        base_x, x_name = (t.baseM, "baseM") if is_a else (t.baseN, "baseN")
        isz = mtype.dtype.itemsize
        rows, cols = _slice.slice_rows(isz, bool(trans) == is_a, base_x, t.baseK)
        soc = _core.current_core().soc
        room = _slice.buffer_bytes(soc.l0_a_size if is_a else soc.l0_b_size, t.dbL0A,
                                   t.dbL0B)
        if rows * cols * isz > room:
            raise AlignmentError(name, f"{role}{' transposed' if trans else ''} reaches "
                                 f"L0{role} in slices of {rows} x {cols} ({x_name} "
                                 f"{base_x}, baseK {t.baseK} as the library's loads pad "
                                 f"them), {rows * cols * isz} B, more than the {room} B "
                                 "L0 buffer the library's kernel loads into "
                                 "(tbuf_pool_l0_base.h: half of L0 when dbL0A and dbL0B "
                                 "are 2)")

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
        if self._kfc is not None:
            self._msg["bias"] = biasGlobal
            return
        self._bias = biasGlobal

    def DisableBias(self) -> None:
        """Compute without the bias again."""
        if self._kfc is not None:
            self._msg["bias"] = None
            return
        self._bias = None

    ClearBias = DisableBias

    def _require_init(self, name: str) -> None:
        if self._tiling is None:
            raise KernelError(name, "the Matmul object has no tiling: REGIST_MATMUL_OBJ(pipe, "
                              "workspace, mm, tiling) or Init(tiling) first")

    # -- compute --------------------------------------------------------------------------------
    def IterateAll(self, gm: GlobalTensor, enAtomic: int = 0, enSequentialWrite: bool = False,
                   waitIterateAll: bool = False, fakeMsg: bool = False, *,
                   sync: bool = True) -> None:
        """``IterateAll<sync>``: compute this core's whole singleCoreM x singleCoreN C into
        ``gm`` (its first element; rows orgKc or N apart): Iterate + GetTensorC over every
        base block. enAtomic 1 adds into GM (SetAtomicAdd).

        On an AIV (MIX form) one message the AIC executes; ``sync`` (the template
        parameter): wait for it; ``sync=False``: go on at once, and with
        ``waitIterateAll=True`` wait later in :meth:`WaitIterateAll`. Each IterateAll needs
        SetTensorA or SetTensorB before it (the message starts a new A x B). On the AIC
        itself the calls run in program order, so ``sync`` changes nothing there.

        Raises (MIX form): KernelError for a LocalTensor C (IterateAll into a LocalTensor
        writes L1, TSCM: not modelled), an IterateAll without a new SetTensorA/B, fakeMsg
        (the IBShare form, not modelled)."""
        if self._kfc is not None:
            return self._client_iterate_all(gm, enAtomic, enSequentialWrite, waitIterateAll,
                                            fakeMsg, sync)
        while self.Iterate():
            self.GetTensorC(gm, enAtomic, enSequentialWrite)

    def IterateBatch(self, gm: GlobalTensor, batchA: int, batchB: int, enSequentialWrite: bool,
                     matrixStrideA: int = 0, matrixStrideB: int = 0, matrixStrideC: int = 0,
                     enPartialSum: bool = False, enAtomic: int = 0, *, sync: bool = True,
                     waitIterateBatch: bool = False) -> None:
        """``IterateBatch<sync>(gm, batchA, batchB, ...)``: max(batchA, batchB) products of
        this core's singleCoreM x singleCoreN C, the NORMAL layout (matrices one after
        another in GM, ND): product ``i`` multiplies A matrix ``i // (batch / batchA)`` by B
        matrix ``i // (batch / batchB)`` (one of them broadcast when its batch is 1) into C
        matrix ``i`` of ``gm``. Adjacent matrices lie ``matrixStrideA`` / ``matrixStrideB``
        elements apart, or (0, the default) as the tiling's layout says — SetALayout's
        S*N*G*D for A, SetBLayout's for B, SetCLayout's S1*N*G*S2 for C (matrixStrideC is
        reserved) — and, without a layout, M*Ka, Kb*N and M*N. Each product runs as an
        IterateAll (the same L1/L0 tiling, one matrix at a time).

        On an AIV (MIX form) one message its AIC executes, as IterateAll.

        Raises: KernelError for a LocalTensor C, ``sync=False``, enPartialSum, a batchA and
        batchB that are unequal with neither 1 (pairing not modelled), a batch of 0, or no
        SetTensorA/B before it. Source: pyasc docs ``asc.language.adv.Matmul.iterate_batch``
        (Ascend C ``IterateBatch``: the NORMAL layout needs batchA and batchB in a multiple
        relation; only the Norm template)."""
        name = "Matmul::IterateBatch"
        self._require_init(name)
        if not isinstance(gm, GlobalTensor):
            raise KernelError(name, "IterateBatch into a LocalTensor is not modelled; give a "
                              "GlobalTensor")
        if not sync or waitIterateBatch:
            raise KernelError(name, "the asynchronous IterateBatch<false> is not modelled")
        if enPartialSum:
            raise KernelError(name, "enPartialSum is not modelled")
        batch_a, batch_b = int(batchA), int(batchB)
        if batch_a < 1 or batch_b < 1:
            raise KernelError(name, f"batchA = {batch_a}, batchB = {batch_b}: each must be >= 1")
        if batch_a != batch_b and 1 not in (batch_a, batch_b):
            raise KernelError(name, f"batchA = {batch_a} and batchB = {batch_b}: only equal "
                              "batches or a batch of 1 (broadcast) are modelled")
        if self._kfc is not None:
            return self._client_iterate_batch(gm, batch_a, batch_b, enSequentialWrite,
                                              int(matrixStrideA), int(matrixStrideB),
                                              int(enAtomic))
        a, b = self._a, self._b
        if a.gm is None or b.gm is None:
            raise KernelError(name, "SetTensorA and SetTensorB must come first")
        stride_a, stride_b, stride_c = self._batch_strides(int(matrixStrideA),
                                                           int(matrixStrideB))
        batch = max(batch_a, batch_b)
        a0, b0 = a.gm, b.gm
        try:
            for i in range(batch):
                ia, ib = (i if batch_a == batch else 0), (i if batch_b == batch else 0)
                self._set_operand(name, a, self.aType, a0[ia * stride_a], a.trans)
                self._set_operand(name, b, self.bType, b0[ib * stride_b], b.trans)
                self.IterateAll(gm[i * stride_c], enAtomic, enSequentialWrite)
        finally:
            a.release()
            b.release()
            a.gm, b.gm = a0, b0

    def _batch_strides(self, stride_a: int, stride_b: int) -> tuple[int, int, int]:
        """Elements between adjacent A, B and C matrices of IterateBatch (its docstring)."""
        t = self._tiling
        lay_a = t.ALayoutInfoS * t.ALayoutInfoN * t.ALayoutInfoG * t.ALayoutInfoD
        lay_b = t.BLayoutInfoS * t.BLayoutInfoN * t.BLayoutInfoG * t.BLayoutInfoD
        lay_c = t.CLayoutInfoS1 * t.CLayoutInfoN * t.CLayoutInfoG * t.CLayoutInfoS2
        return (stride_a or lay_a or t.M * t.Ka, stride_b or lay_b or t.Kb * t.N,
                lay_c or t.M * t.N)

    def WaitIterateAll(self) -> None:
        """Wait for an ``IterateAll<false>(gm, ..., waitIterateAll=True)`` (MIX form). On the
        AIC itself IterateAll has finished already: nothing to wait for.

        Raises: KernelError after a synchronous IterateAll (the library asserts it follows an
        asynchronous one); SyncError when that IterateAll did not ask for the wait
        (``waitIterateAll=False``: its server sends no event, the AIV would wait forever)."""
        if self._kfc is None:
            return
        name = "Matmul::WaitIterateAll"
        if self._sync:
            raise KernelError(name, "WaitIterateAll follows an asynchronous IterateAll "
                              "(IterateAll(..., sync=False, waitIterateAll=True))")
        if self._async_done is None:
            raise SyncError(name, "the asynchronous IterateAll before it was posted without "
                            "waitIterateAll = true: the server sends no event for it and the "
                            "AIV would wait forever", pipe="PIPE_S")
        ctx = self._kfc[2]
        ctx.mix.receive(ctx, self._async_done, "WaitEvent (Matmul::WaitIterateAll)")
        self._async_done = None

    def Iterate(self, enPartialSum: bool = False, *, sync: bool = True) -> bool:
        """``Iterate<sync>``: compute the next baseM x baseN block of C into L0C; False (and a
        fresh start for the next call) once every block is done. On an AIV (MIX form) a
        message: the client counts the blocks itself and returns True at once; from its first
        Iterate to its End the AIC serves that AIV only (the server keeps to its queue while
        C waits in L0C). ``sync=False`` (C cached in a workspace set by SetWorkspace) is not
        modelled: KernelError."""
        name = "Matmul::Iterate"
        self._require_init(name)
        if not sync:
            raise KernelError(name, "Iterate<false> (the asynchronous form, C cached in the "
                              "workspace SetWorkspace gives) is not modelled")
        if self._kfc is not None:
            return self._client_iterate(bool(enPartialSum))
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
        _mm_scalar.charge(_core.current_core(), "Iterate", self._constant, flush=True)
        self._pending = (*block, self._compute(*block))
        return True

    def _walk(self):
        """The base blocks (mi, ni, rows, cols) in iterateOrder (0: M moves first): the
        config's when it sets one, else the tiling's."""
        t = self._tiling
        sm, sn = self._single[0], self._single[1]
        m_iter, n_iter = ceil_div(sm, t.baseM), ceil_div(sn, t.baseN)
        # MatmulConfig.iterateOrder ORDER_M / ORDER_N overrides the tiling's (UNDEF: keep it)
        order = t.iterateOrder if self.config.iterateOrder == 2 else int(self.config.iterateOrder)
        for outer in range(n_iter if order == 0 else m_iter):
            for inner in range(m_iter if order == 0 else n_iter):
                mi, ni = (inner, outer) if order == 0 else (outer, inner)
                yield (mi, ni, min(t.baseM, sm - mi * t.baseM), min(t.baseN, sn - ni * t.baseN))

    def _compute(self, mi: int, ni: int, mb: int, nb: int):
        """One C block into a CO1 buffer: every baseK step of K (module docstring)."""
        t, a, b = self._tiling, self._a, self._b
        bias = self._load_bias(ni, nb) if self._bias is not None else None
        co1 = self._qco1.AllocTensor(self._acc)
        sk = self._single[2]
        m_mmad = 16 if mb == 1 else mb          # m = 1 would be GEMV
        ctx = _core.current_core()
        for g in range(ceil_div(sk, t.baseK)):
            _mm_scalar.charge(ctx, "kstep", self._constant)
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
            self._done_with_chunks(g, sk)
        if bias is not None:
            self._qc2.FreeTensor(bias)
        self._qco1.EnQue(co1)
        return co1

    def GetTensorC(self, gm, enAtomic: int = 0, enSequentialWrite: bool = False, *,
                   sync: bool = True) -> None:
        """``GetTensorC<sync>``: move the block the last Iterate computed from L0C to ``gm``
        with Fixpipe (NZ -> ND, float -> C's type): at its place in the singleCoreM x
        singleCoreN C whose first element ``gm`` is (rows orgKc or N apart), or, with
        enSequentialWrite, as a dense baseM x baseN tile at ``gm``. enAtomic 1: add into GM.

        On an AIV (MIX form) ``gm`` may also be a LocalTensor in the AIV's UB (C's MatmulType
        in VECIN/VECCALC/VECOUT): the AIC writes the block as a dense baseM x baseN tile (rows
        baseN apart, whatever enSequentialWrite says) into the AIV's GM copy of that UB range
        in the system workspace, then the AIV copies it in (MTE2) and waits for the copy, so
        that every later instruction sees the block. Synchronous only (``sync=False`` is not
        modelled).

        Raises: KernelError without a block to move, for a LocalTensor on the AIC (no UB) or
        when C's MatmulType is GM, for enAtomic with a LocalTensor (only a GM output
        accumulates: GetTensorC 参数说明), a LocalTensor of fewer than baseM * baseN elements
        (约束说明), AtomicMax/Min (enAtomic 2/3: not modelled); DtypeError for a tensor of
        another type than C's."""
        name = "Matmul::GetTensorC"
        if not sync:
            raise KernelError(name, "GetTensorC<false> (the asynchronous form) is not modelled")
        if self._kfc is not None:
            return self._client_get_tensor_c(gm, int(enAtomic), bool(enSequentialWrite))
        if not isinstance(gm, GlobalTensor):
            raise KernelError(name, "GetTensorC to a LocalTensor on the cube core: the AIC has no "
                              "UB; in the MIX form an AIV's GetTensorC brings the block into "
                              "its UB through the workspace")
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
        tensor freed) and forget A, B and the bias. On an AIV (MIX form) a message: the AIC
        ends the object's work for that AIV and may serve the other AIV again."""
        if self._tiling is None:
            return
        if self._kfc is not None:
            return self._client_end()
        if self._pending is not None:
            raise KernelError("Matmul::End", "a block computed by Iterate was never fetched "
                              "with GetTensorC")
        for op in (self._a, self._b):
            op.release()
            op.gm = None
        self._bias, self._blocks = None, None

    # -- the MIX form: this object on an AIV, a client of its AIC --------------------------------
    def _client_init(self, tiling: TCubeTiling, post: bool = False) -> None:
        """The AIV's side of Init: its copy of the tiling (the client counts Iterate's blocks
        itself), and with ``post`` the MMFUN_INIT message that gives the AIC the tiling."""
        name = "Matmul::Init"
        self._check_types(name, mix=True)
        self._check_tiling(name, tiling)
        self._tiling = tiling
        self._single = [tiling.singleCoreM, tiling.singleCoreN, tiling.singleCoreK]
        self._msg: dict = {}            # what the next message carries (kfcMsg_'s flags)
        self._first = False             # SetTensorA/B since the last Iterate/IterateAll
        self._count = 0                 # Iterate's blocks so far
        self._sync = True               # the last IterateAll was synchronous
        self._async_done = None         # the event WaitIterateAll waits for
        if post:
            self._kfc[0].serve(self, name, {}, lambda eng: _server_init(eng, tiling),
                               ack=False, load=False)

    def _client_operand(self, name: str, is_a: bool, gm, trans) -> None:
        self._require_init(name)
        self._check_operand(name, is_a, gm, trans)
        self._msg["a" if is_a else "b"] = (gm, bool(trans))
        self._first = True

    def _blocks_per_call(self) -> int:
        t = self._tiling
        return ceil_div(self._single[0], t.baseM) * ceil_div(self._single[1], t.baseN)

    def _client_iterate(self, partial_sum: bool) -> bool:
        if self._first:
            self._count = 0
        else:
            self._count += 1
            if self._count >= self._blocks_per_call():
                return False
        first, self._first, self._sync = self._first, False, True
        server, _, ctx = self._kfc

        def work(eng):
            server.lock = ctx.core_index           # kept until this AIV's End
            if first:
                eng._blocks = None
            if not eng.Iterate(partial_sum):
                raise KernelError("Matmul::Iterate", "the server found no block where the AIV "
                                  "counted one: the shapes of the two sides differ")
        server.serve(self, "Matmul::Iterate", self._take_msg(), work, ack=False)
        return True

    def _client_get_tensor_c(self, dst, en_atomic: int, sequential: bool) -> None:
        name = "Matmul::GetTensorC"
        server, _, ctx = self._kfc
        if isinstance(dst, GlobalTensor):
            _, done = server.serve(self, name, {}, lambda eng: eng.GetTensorC(
                dst, en_atomic, sequential), ack=True)
            ctx.mix.receive(ctx, done, f"WaitEvent ({name})")
            return
        if not isinstance(dst, LocalTensor) or dst.mem != _core.UB:
            raise KernelError(name, f"C goes to a GlobalTensor or to a LocalTensor in the AIV's "
                              f"UB, not to {dst!r}")
        c, t = self.cType, self._tiling
        if c.position not in _UB_POSITIONS:
            raise KernelError(name, f"C's MatmulType is {c.position.name}: a LocalTensor target "
                              "needs C in VECIN/VECCALC/VECOUT (MatmulType)")
        if en_atomic:
            raise KernelError(name, f"enAtomic {en_atomic} with a LocalTensor: only a GM output "
                              "accumulates (GetTensorC 参数说明)")
        if dst.dtype != c.dtype:
            raise DtypeError(name, f"the LocalTensor holds {dst.dtype.name}, C is {c.dtype.name}")
        if dst.length < t.baseM * t.baseN:
            raise KernelError(name, f"the LocalTensor holds {dst.length} elements, fewer than "
                              f"baseM * baseN = {t.baseM * t.baseN} (GetTensorC 约束说明)")
        copy = GlobalTensor(c.dtype)     # the AIV's GM copy of that UB range
        copy.SetGlobalBuffer(server.ub_copy(ctx) + dst.offset, dst.length)
        _, done = server.serve(self, name, {}, lambda eng: eng.GetTensorC(copy, 0, True),
                               ack=True)
        ctx.mix.receive(ctx, done, f"WaitEvent ({name})")
        # CopyToUB [R: ours, the library's flags are internal]: the copy waits for the
        # vector and MTE3 pipes' earlier work (the tile's last users, e.g. the previous
        # block's activation and copy-out), and every later instruction waits for the copy
        for pipe in (PIPE_V, PIPE_MTE3):
            key = ("kfc_copy_in", int(pipe), len(ctx.records))
            ctx.record(_core.SET, pipe, 0.0, 0, key, "CopyToUB")
            ctx.record(_core.WAIT, PIPE_MTE2, 0.0, 0, key, "CopyToUB")
        DataCopy(dst, copy, dst.length)                         # on MTE2
        key = ("kfc_copy_done", len(ctx.records))
        ctx.record(_core.SET, PIPE_MTE2, 0.0, 0, key, "CopyToUB")
        ctx.record(_core.WAIT, PIPE_S, 0.0, 0, key, "CopyToUB")

    def _client_iterate_all(self, gm, en_atomic, sequential, wait_iterate_all, fake_msg,
                            sync) -> None:
        name = "Matmul::IterateAll"
        self._require_init(name)
        if not isinstance(gm, GlobalTensor):
            raise KernelError(name, "IterateAll into a LocalTensor writes C to L1 (TSCM): not "
                              "modelled; give a GlobalTensor, or Iterate + GetTensorC into UB")
        if fake_msg:
            raise KernelError(name, "fakeMsg (the IBShare form) is not modelled")
        if not self._first:
            raise KernelError(name, "no SetTensorA/SetTensorB since the last Iterate or "
                              "IterateAll: each IterateAll message starts a new A x B "
                              "(matmul_client.h asserts isFirstIter)")
        self._first, self._sync = False, bool(sync)
        server, _, ctx = self._kfc

        def work(eng):
            eng._blocks = None
            eng.IterateAll(gm, en_atomic, sequential)
        _, done = server.serve(self, name, self._take_msg(), work,
                               ack=bool(sync) or bool(wait_iterate_all))
        if sync:
            ctx.mix.receive(ctx, done, f"WaitEvent ({name})")
        else:
            self._async_done = done

    def _client_iterate_batch(self, gm, batch_a, batch_b, sequential, stride_a, stride_b,
                              en_atomic) -> None:
        name = "Matmul::IterateBatch"
        if not self._first:
            raise KernelError(name, "no SetTensorA/SetTensorB since the last Iterate, "
                              "IterateAll or IterateBatch: each message starts a new A x B")
        self._first, self._sync = False, True
        server, _, ctx = self._kfc

        def work(eng):
            eng._blocks = None
            eng.IterateBatch(gm, batch_a, batch_b, sequential, stride_a, stride_b, 0, False,
                             en_atomic)
        _, done = server.serve(self, name, self._take_msg(), work, ack=True)
        ctx.mix.receive(ctx, done, f"WaitEvent ({name})")

    def _client_end(self) -> None:
        server, _, ctx = self._kfc

        def work(eng):
            eng.End()
            if server.lock == ctx.core_index:
                server.lock = None
        server.serve(self, "Matmul::End", self._take_msg(), work, ack=False)
        self._first = False

    def _take_msg(self) -> dict:
        msg, self._msg = self._msg, {}
        return msg

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

    def _done_with_chunks(self, g: int, sk: int) -> None:
        """After k step ``g``: free each operand's chunk whose last k step it was, when K
        does not fit one chunk, so the next chunk's copy (MTE2) waits only for this chunk's
        loads (MTE1), not for the chunk loaded after it: the L1 double buffer prefetches.
        The library frees it there (scheduler_mdl_base.h ClearL1BufferCache: "if next
        outerKaIdx is not equal to curKaOuterIdx, clear left matrix's data in L1 buffer";
        NORM: cube_in_buffer_normal.h FreeTensor after the step). A chunk holding the whole
        K stays cached for the next blocks (IsAKL1FullLoad / IsBKL1FullLoad)."""
        k_iter = ceil_div(sk, self._tiling.baseK)
        for op in (self._a, self._b):
            if op.step_k >= k_iter or ((g + 1) % op.step_k and g + 1 < k_iter):
                continue
            kc = g // op.step_k
            for key in [key for key in op.cache if key[1] == kc]:
                op.q1.FreeTensor(op.cache.pop(key).tensor)

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
            unit = 32 if op.mode == "trans8" else 16
            rows_al = ceil_div(rows, unit) * unit
        if op.pitch != op.base_x and cols > op.base_x:
            return self._copy_blocks(op, l1, src, rows, cols, ld, rows_al)
        DataCopy(l1, src, Nd2NzParams(1, rows, cols, 0, ld, rows_al, 1, 0))
        if op.is_a and op.direct and rows % 16 == 1:
            # the last row block holds one row: fill its other 15 rows with copies (m = 16)
            DataCopy(l1[rows * c0], src[(rows - 1) * ld],
                     Nd2NzParams(15, 1, cols, 0, ld, rows_al, 1, c0))
        return _Chunk(l1, rows_al, ceil_div(cols, c0) * c0)

    @staticmethod
    def _copy_blocks(op: _Operand, l1, src: GlobalTensor, rows: int, cols: int, ld: int,
                     rows_al: int) -> _Chunk:
        """int8 kept K x X with a base of X that is not a multiple of 32: each base block in
        32-column blocks of its own (``op.pitch`` columns apart), as the library copies it
        (copy_tile_to_cube_common.h CopyND2NZForInt8: the full blocks in one DataCopy,
        ndNum = blocks - 1 with ``srcNdMatrixStride = baseWidth`` and
        ``dstNzMatrixStride = CeilAlign(baseWidth, 32) * CeilAlign(height, 32)``, then the
        last block; one DataCopy per block where that stride passes 65535)."""
        base, stride = op.base_x, op.pitch * rows_al
        blocks = ceil_div(cols, base)
        last = cols - (blocks - 1) * base
        if stride <= 65535:
            DataCopy(l1, src, Nd2NzParams(blocks - 1, rows, base, base, ld, rows_al, 1, stride))
        else:
            for i in range(blocks - 1):
                DataCopy(l1[i * stride], src[i * base],
                         Nd2NzParams(1, rows, base, 0, ld, rows_al, 1, 0))
        DataCopy(l1[(blocks - 1) * stride], src[(blocks - 1) * base],
                 Nd2NzParams(1, rows, last, 0, ld, rows_al, 1, 0))
        return _Chunk(l1, rows_al, (blocks - 1) * op.pitch + ceil_div(last, 32) * 32)

    # -- L1 -> L0 -------------------------------------------------------------------------------
    def _to_l0(self, op: _Operand, xi: int, g: int, xb: int, kb: int):
        """Load base block (xi, g) of ``op`` (xb x kb of X x K) into an L0A/L0B buffer in
        the ZZ (A) / ZN (B) fractal order Mmad reads, and hand it to M."""
        t = self._tiling
        chunk = self._chunk(op, xi, g)
        l0 = op.q2.AllocTensor(op.dtype)
        x_off = (xi % op.step_x) * op.pitch           # elements into the chunk
        k_off = (g % op.step_k) * t.baseK
        c0 = k0_of(op.dtype)
        x1, k1 = ceil_div(xb, 16), ceil_div(kb, c0)
        # fractal (x, kf) of the L0 grid: A (ZZ) x * k1 + kf, B (ZN) kf * x1 + x
        dx, dk = (k1, 1) if op.is_a else (1, x1)
        load = {"direct": self._load_direct, "trans16": self._load_trans16,
                "trans8": self._load_trans8_a if op.is_a else self._load_trans8_b}.get(op.mode)
        if op.dtype.itemsize > 1 and (op.mode in ("trans16", "trans32")
                                      or (op.is_a and op.direct)):
            _load3dv2(l0, chunk, op, x_off, k_off, x1, kb, c0)   # GetLoadInstrType: LOAD3DV2
            op.q2.EnQue(l0)
            return l0
        if not op.is_a and op.direct and x_off == 0 and x1 * 16 == chunk.rows:
            load = _load2d_whole                       # the B slice is the chunk's width
        load(l0, chunk, x_off, k_off, x1, k1, dx, dk, kb, c0)
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
    def _load_trans8_a(l0, ch, x_off, k_off, x1, k1, dx, dk, kb, c0):
        """int8 A kept K x M: 32 x 32 squares (two NZ fractals stacked) transposed into the
        ZZ fractals (2q, p) and (2q + 1, p); as the library loads them, one
        LoadDataWithTranspose per square of M repeating along K (load_to_l0a_loadInstr.h
        TransLoadDataToL0: ``Ceil(madM, 32)`` loads of ``Ceil(madK, 32)`` repeats, srcStride
        1, dstGap 0, dstFracGap repeats - 1). A base of 16 or 48 rows has its last square's
        second fractal land in the buffer's padded rows (never read by Mmad)."""
        per_col = ch.rows // 32                           # squares down a 32-column block
        for q in range(ceil_div(x1, 2)):
            start = (x_off // 32 + q) * per_col + k_off // 32
            _load_t(l0, 2 * q * dx, ch.tensor, start, k1, 1, 0, dx - 1)

    @staticmethod
    def _load_trans8_b(l0, ch, x_off, k_off, x1, k1, dx, dk, kb, c0):
        """int8 B kept K x N: 32 x 32 squares transposed into the ZN fractals (p, 2q) and
        (p, 2q + 1); one LoadDataWithTranspose per k square repeating along N, p ascending
        (load_to_l0b_loadInstr.h LoadDataToL0: ``Ceil(madK, 32)`` loads of
        ``Ceil(madN, 32)`` repeats, srcStride the squares down a column block, dstGap 1). A
        base of 16 or 48 columns has each load's last second fractal land on the next k
        square's first, which the next load writes after it (the last one in the buffer's
        padding)."""
        per_col = ch.rows // 32
        pairs = ceil_div(x1, 2)
        for p in range(k1):
            start = (x_off // 32) * per_col + k_off // 32 + p
            _load_t(l0, p * dk, ch.tensor, start, pairs, per_col, 1, 0)

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


def _server_init(eng: Matmul, tiling: TCubeTiling) -> None:
    """MMFUN_INIT on the AIC: the object takes the tiling an AIV's Init sent."""
    if eng._tiling is None:
        eng.Init(tiling, eng._pipe)
    elif eng._tiling != tiling:
        raise KernelError("Matmul::Init", "the AIVs give one object two different tilings: the "
                          "model keeps one set of L1/L0 buffers per object on the AIC")


class _SubState:
    """What the server keeps of one AIV's use of one object (the library keeps a Matmul
    instance per AIV, kernel_kfc.h ``cubeObj[subBlockID]``): its operands and shapes."""

    __slots__ = ("a", "b", "bias", "single", "org")

    def __init__(self, t: TCubeTiling):
        self.a = self.b = (None, False)
        self.bias = None
        self.single = [t.singleCoreM, t.singleCoreN, t.singleCoreK]
        self.org = [t.M, t.N, t.Ka, t.Kb, 0]

    def update(self, msg: dict) -> None:
        """The fields a message carries (kfcMsg_'s setTensorA/B, setTensorBias, setTail,
        and MMFUN_SET_ORG_SHAPE's shape)."""
        for key in ("a", "b", "bias", "org"):
            if key in msg:
                setattr(self, key, msg[key])
        for i, v in enumerate(msg.get("tail", ())):
            if v > 0:
                self.single[i] = v


class _KfcServer:
    """The MIX form's server: the AIC of one block executing its AIVs' Matmul calls.

    Each call of an AIV's Matmul object is a message (kernel_kfc.h, matmul_client.h): the
    AIV posts it (scalar stores of a cache line to its queue in the system workspace: a GM
    write latency on its PIPE_S, then an event to the AIC), the AIC receives it (a PIPE_S
    wait and a GM read latency), runs the call on the object's L1/L0 buffers and pipes,
    and for a synchronous call answers with ``NotifyEvent`` on PIPE_FIX, once its Fixpipe
    writes are done, which the AIV's ``WaitEvent`` (PIPE_S) waits for. The messages are
    cross-core events in the replay and carry the checker's GM ordering both ways.

    Functionally the AIC's work runs when the AIV calls (the AIC's own coroutine has
    returned at REGIST_MATMUL_OBJ), in the AIC's context, so its instructions are recorded
    on the AIC in the order the AIVs' calls reach it. One set of buffers per object serves
    both AIVs [R: ours]: from an Iterate to its End (C waiting in L0C) the server keeps to
    that AIV's queue, as the library's does (``LockMsgQueue``), and another AIV's call waits;
    when the other AIV's turn comes its operands and shapes are loaded and the L1 chunks
    reloaded.

    Workspace layout [R: ours; the library's is internal]: AIV ``v`` (its GetBlockIdx) owns
    ``KFC_AIV_BYTES`` from ``workspace + v * KFC_AIV_BYTES``: its message queue
    (``KFC_QUEUE_BYTES``), then a GM copy of its UB, where GetTensorC to a LocalTensor at UB
    offset ``o`` lands at ``o`` (the library maps UB tensors into the workspace the same way,
    ``GetGlobalAddr``).
    """

    def __init__(self, aic, pipe, workspace: int, engines: list):
        self.aic, self.pipe, self.workspace = aic, pipe, workspace
        self.state = aic.mix
        self.engines = engines
        self.subs: dict = {}             # (object, AIV core index) -> _SubState
        self.owner = [None] * len(engines)
        self.lock = None                 # core index of the AIV whose Iterate..End is served
        self.ready: dict = {}            # AIV core index -> the workspace-ready event

    @classmethod
    def start(cls, aic, tpipe, workspace: int, pairs) -> None:
        """REGIST_MATMUL_OBJ on the AIC: initialise the objects, clear the workspace's queues
        and tell the block's AIVs (``NotifyEvent<PIPE_MTE3>(WORKSPACE_SYNC_ID)``)."""
        for mm, tiling in pairs:
            mm._serves = True
            if tiling is None:
                mm._pipe = tpipe
            else:
                mm.Init(tiling, tpipe)
        server = cls(aic, tpipe, workspace, [mm for mm, _ in pairs])
        aivs = server.state.block_cores(aic, _core.AIV)
        events = server.state.hand_off(aic, PIPE_MTE3, aivs, "NotifyEvent (WORKSPACE_SYNC_ID)")
        server.ready = {c.core_index: e for c, e in zip(aivs, events)}
        server.state.provide(aic, "kfc", server)

    @staticmethod
    def connect(aiv, workspace: int, pairs) -> None:
        """REGIST_MATMUL_OBJ on an AIV: wait for the block's server, check the objects are
        the AIC's, and make them its clients."""
        name = "REGIST_MATMUL_OBJ"
        state = aiv.mix
        if not state.block_cores(aiv, _core.AIC):
            raise KernelError(name, f"{aiv.name} has no AIC in its block to run the Matmul API "
                              "(the MIX form needs KERNEL_TYPE_MIX_AIC_1_2 or MIX_AIC_1_1)")
        aiv.wait_until(lambda: state.provided(aiv, "kfc"),
                       lambda: "REGIST_MATMUL_OBJ (WaitEvent(WORKSPACE_SYNC_ID)), which waits for "
                       f"the AIC of block {state.group(aiv)} to register the Matmul objects "
                       "with REGIST_MATMUL_OBJ")
        server = state.service(aiv, "kfc")
        if workspace != server.workspace:
            raise KernelError(name, f"the AIV's workspace 0x{workspace:x} is not the AIC's "
                              f"0x{server.workspace:x}: both sides pass GetSysWorkSpacePtr()")
        if len(pairs) != len(server.engines) or any(
                (mm.aType, mm.bType, mm.cType, mm.biasType) !=
                (e.aType, e.bType, e.cType, e.biasType) for (mm, _), e in zip(pairs, server.engines)):
            raise KernelError(name, "the AIV registers other Matmul objects than its AIC: the "
                              "kernel's REGIST_MATMUL_OBJ must be the same on every core")
        region = GlobalTensor(np.uint8)
        region.SetGlobalBuffer(server.workspace + aiv.block_idx * server.aiv_bytes,
                               server.aiv_bytes)
        if aiv.is_group:      # a lockstep group (npusim.mixgroups): each member's region
            _lockstep.gm_rows(aiv, region, 1, server.aiv_bytes, server.aiv_bytes, False)
        else:
            region.bytes_view(server.aiv_bytes, name, "PIPE_S")     # bounds: GmAccessError
        event = server.ready.pop(aiv.core_index, None)
        if event is not None:
            state.receive(aiv, event, "WaitEvent (WORKSPACE_SYNC_ID)")
        for inst, (mm, tiling) in enumerate(pairs):
            mm._kfc = (server, inst, aiv)
            mm._pipe = server.pipe
            if tiling is not None:
                mm._client_init(tiling)

    @property
    def aiv_bytes(self) -> int:
        """System workspace bytes of one AIV: its queue and its UB's GM copy."""
        return KFC_QUEUE_BYTES + self.aic.soc.ub_size

    def ub_copy(self, aiv) -> int:
        """GM address of ``aiv``'s UB copy (class docstring)."""
        return self.workspace + aiv.block_idx * self.aiv_bytes + KFC_QUEUE_BYTES

    def serve(self, client: Matmul, name: str, msg: dict, work, ack: bool, load: bool = True):
        """One message of ``client`` (an AIV's object): posted, executed on the AIC by
        ``work(object)`` after loading that AIV's state, answered when ``ack``. Returns
        (work's result, the answer's event or None)."""
        _, inst, aiv = client._kfc
        state, aic = self.state, self.aic
        me = aiv.core_index
        aiv.wait_until(lambda: self.lock in (None, me), lambda: self._describe_lock(aiv, name))
        aiv.record(_core.OP, PIPE_S, aiv.soc.dma_write_latency_cycles, 0, None,
                   "KfcCommClient::PostMessage")
        [posted] = state.hand_off(aiv, PIPE_S, [aic], f"KfcCommClient::PostMessage ({name})")
        _core.set_current_core(aic)
        try:
            state.receive(aic, posted, f"KfcServer::Run ({name})")
            aic.record(_core.OP, PIPE_S, aic.soc.dma_latency_cycles, 0, None,
                       "KfcServer::RcvMessage")
            eng = self.engines[inst]
            if load:
                self._load(eng, inst, me, msg, name)
            result = work(eng) if work is not None else None
            answer = (state.hand_off(aic, PIPE_FIX, [aiv], f"NotifyEvent ({name})")[0]
                      if ack else None)
        finally:
            _core.set_current_core(aiv)
        return result, answer

    def _load(self, eng: Matmul, inst: int, me: int, msg: dict, name: str) -> None:
        """Bring object ``inst`` to what AIV ``me`` set (class docstring)."""
        if eng._tiling is None:
            raise KernelError(name, "the Matmul object has no tiling: REGIST_MATMUL_OBJ(pipe, "
                              "workspace, mm, tiling) or Init(tiling) first")
        st = self.subs.get((inst, me))
        if st is None:
            st = self.subs[(inst, me)] = _SubState(eng._tiling)
        st.update(msg)
        if self.owner[inst] != me:       # the other AIV's turn: nothing of its walk carries over
            eng._blocks = None
            self.owner[inst] = me
        for key, op in (("a", eng._a), ("b", eng._b)):
            gm, trans = getattr(st, key)
            if key in msg or op.gm is not gm or op.trans != trans:
                op.release()             # new data: nothing in L1 is valid any more
                op.gm, op.trans = gm, trans
        eng._bias = st.bias
        if eng._single != st.single or eng._org != st.org:
            eng._single, eng._org = list(st.single), list(st.org)
            eng._forget()

    def _describe_lock(self, aiv, name: str) -> str:
        holder = self.state.ctxs[self.lock].name if self.lock is not None else "?"
        return (f"{name} of {aiv.name}, which waits for the Matmul server of {self.aic.name}: "
                f"it serves {holder}'s Iterate/GetTensorC sequence until that AIV calls End")


def _load3dv2(l0, ch, op, x_off, k_off, x1, kb, c0):
    """One LoadData3DParamsV2 for the whole base slice (asc-devkit
    ``impl/adv_api/detail/matmul/stage/split/load_to_l0_utils.h`` GetLoadInstrType /
    GetLoadL0bInstrType: LOAD3DV2 on A2 for A of 16/32-bit types and for B kept K x N; the
    parameters of ``load_to_l0a_loadInstr.h`` / ``load_to_l0b_loadInstr.h``
    LoadDataToL0 / TransLoadDataToL0). The NZ chunk is a feature map of H = 1: W its rows,
    its columns the channels. A (M x K in L1): img2col's M = M, K = K into L0A's ZZ; A^T
    (K x M in L1): M = K (``mStep = CeilAlign(madK, 16)`` rows from the k offset, which for
    float need not be a multiple of 16), K = M, enTranspose into ZZ; B (K x N in L1):
    M = K (the same), K = N into L0B's ZN."""
    if op.direct:                                   # A: M x K
        m0, mext, k0, kext = x_off, x1 * 16, k_off, ceil_div(kb, c0) * c0
    else:                                           # A^T or B: K x M / K x N
        m0, mext, k0, kext = k_off, ceil_div(kb, 16) * 16, x_off, x1 * 16
    LoadData(l0, ch.tensor, LoadData3DParamsV2(
        l1H=1, l1W=ch.rows, channelSize=ch.cols, kExtension=kext, mExtension=mext,
        kStartPt=k0, mStartPt=m0, enTranspose=op.is_a and not op.direct))


def _load2d_whole(l0, ch, x_off, k_off, x1, k1, dx, dk, kb, c0):
    """B kept N x K in L1 (B transposed) whose slice is the chunk's whole N: its NZ
    fractals are L0B's ZN fractals in order, so one LoadData2D with x1 * k1 repeats
    (load_to_l0b_loadInstr.h TransLoadDataToL0, "loop=1")."""
    _load2d(l0, 0, ch.tensor, (k_off // c0) * (ch.rows // 16), x1 * k1, 1, 0, False)


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
