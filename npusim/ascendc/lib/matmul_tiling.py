"""Matmul Tiling, the host side of the high-level Matmul API (Ascend C's ``matmul_tiling``
namespace): ``MatmulApiTiling`` (one core), ``MultiCoreMatmulTiling`` (the work split over
cores) and the ``TCubeTiling`` struct they fill, which the kernel's ``Matmul`` object reads
(:mod:`npusim.ascendc.lib.matmul`). Host code: no kernel context is needed.

Usage, as in C++ (``GetTiling`` fills the struct passed in and returns 0, or -1)::

    t = MultiCoreMatmulTiling("Ascend910B1")          # or a SocSpec (PlatformAscendC)
    t.SetDim(24)
    t.SetAType(TPosition.GM, CubeFormat.ND, DataType.DT_FLOAT16)
    t.SetBType(TPosition.GM, CubeFormat.ND, DataType.DT_FLOAT16)
    t.SetCType(TPosition.GM, CubeFormat.ND, DataType.DT_FLOAT)
    t.SetBiasType(TPosition.GM, CubeFormat.ND, DataType.DT_FLOAT)
    t.SetOrgShape(1024, 1024, 1024); t.SetShape(1024, 1024, 1024); t.SetBias(True)
    cube = TCubeTiling(); ret = t.GetTiling(cube)

Sources: hiascend / asc-devkit docs "Matmul Tiling类" (构造函数, SetAType, SetShape,
SetOrgShape, SetFixSplit, SetBufferSpace, SetTraverse, GetTiling: "-1 代表Tiling计算失败"),
"MultiCoreMatmulTiling" (SetDim, SetSingleShape, GetSingleShape, GetCoreNum:
atlasascendc_api_07_0693..0696), "TCubeTiling结构体" (atlasascendc_api_07_0673: the fields,
table 2 "TCubeTiling约束条件" and the tuning recommendations), "Matmul使用说明" (the
supported type combinations, table 2); the enums' members and values and the struct's field
order are asc-devkit ``include/adv_api/matmul/matmul_tiling_base.h`` and
``matmul_tilingdata.h``; pyasc docs/python-api ``asc.lib.host`` (GetCoreNum /
GetSingleShape return a tuple, or None on failure, in Python).

Published rules every tiling obeys (TCubeTiling table 2; docs/reference/hardware.md §1.6, §1.7):

* ``baseM * baseK * sizeof(A) * dbL0A <= L0A``, ``baseN * baseK * sizeof(B) * dbL0B <= L0B``,
  ``baseM * baseN * 4 * dbL0C <= L0C`` (the table writes ``<``, but its own recommended
  (128, 256, 64) half block with dbL0B = 2 fills L0B exactly: we read it as ``<=``);
  ``baseN * 4 <= bias table`` with a bias (the bias table holds float/int32);
* ``depthA1 = stepM * stepKa * db``, ``depthB1 = stepN * stepKb * db`` (db: 1 or 2, the L1
  double buffer); ``AL1Size + BL1Size (+ baseN * sizeof(Bias)) <= L1`` with
  ``AL1Size = baseM * baseK * depthA1 * sizeof(A)``, ``BL1Size = baseN * baseK * depthB1 *
  sizeof(B)``; L1 is ``GetCoreMemSize(L1)`` (524032 B on A2/A3) unless SetBufferSpace
  lowers it;
* ``baseM``, ``baseN`` multiples of 16 and ``baseK`` of C0_size (32 B / sizeof(A): 16
  half/bf16, 8 float, 32 int8): the table's "aligned to the fractals" (Mmad's 16 x C0
  fractals);
* the library's kernel loads each slice padded (int8 moved transposed, i.e. A transposed
  or B not: rows to 32, as 32 x 32 squares; float moved transposed: K to 16, LoadData3DV2's
  ``CeilAlign(madK, 16)``), into half of L0A/L0B when it double-buffers L0, else the whole
  (:mod:`npusim.ascendc.lib.matmul_l0_slice`): a padded slice must fit that buffer. Where
  the library's own base breaks this (a float baseK of 40 with B not transposed and baseN
  176: 48 x 176 floats, 33,792 B, into a 32 KiB half), its kernel would load past the
  buffer, and this tiling takes its own base instead;
* ``singleCoreK = K`` (no split of K over cores), ``singleCoreM <= M``, ``singleCoreN <= N``
  (M and N rounded up to 16 where the library splits them over several cores),
  ``usedCoreNum = ceil(M / singleCoreM) * ceil(N / singleCoreN) <= SetDim``;
* NZ inputs: M (or N) 16-aligned and K C0_size-aligned (TCubeTiling M/N/Ka/Kb row);
* type combinations of "Matmul使用说明" table 2 for A2/A3 (A/B half, bfloat16, float, int8;
  the SoC's cube must have the type: the first-generation 910 and 310P have no bf16/float
  cube).

On A2/A3, MultiCoreMatmulTiling with dim > 1 and neither SetShape nor SetSingleShape
follows the library's multi-core scenarios (SPLIT_MN, SPLIT_SMALL_MN of
``matmul_tiling_algorithm.cpp``; the library's scenario test reads SetShape's M and N, so
SetShape(M, N, K) sends it to its general search: :mod:`npusim.ascendc.lib.matmul_tiling_dims`,
then the one-core base and L1 searches below on one core's part): the cores'
factor pair mDim x nDim, one core's part (``ceil(M16 / mDim)``, rounded to 256 B where the
library rounds it: not always a multiple of 16), the base block and the L1 depth/step
factors are the library's (:mod:`npusim.ascendc.lib.matmul_tiling_split`;
tests/test_matmul_tiling_library.py, and tests/test_matmul_tiling_devkit.py against the
library's own code).

For one core (MatmulApiTiling, SetSingleShape) the base block is the library's
(GetL0Factors: :mod:`npusim.ascendc.lib.matmul_tiling_l0`) unless SetFixSplit fixes one or
its padded slice would not fit its L0 buffer (above), and the L1 factors are the
library's GetL1Factors for that base (:mod:`npusim.ascendc.lib.matmul_tiling_l1`).
Elsewhere this tiling chooses on its own [R]:

* the core split: among ``mDim x nDim <= dim`` the one with the fewest 16 x 16 output
  fractals per core, then the least A + B rows per core (GM traffic), then fewer cores;
  singleCoreM/N rounded up to 16 (capped at M/N); when SetSingleShape fixes a part that
  needs more than dim cores, usedCoreNum = dim (each core then takes several parts, as a
  kernel looping over tiles does) and GetCoreNum reports the parts;
* the base block: the docs' recommended (baseM, baseN, baseK) = (128, 256, 64) for half,
  i.e. ``baseN = min(256, N16)``, ``baseM = min(256, M16, L0C / (4 * baseN))`` and
  ``baseK = 128 B / sizeof(A)``; when baseM/baseN are cut by a small shape, baseK grows
  (doubling) while two buffers still fit L0A/L0B (fewer, larger Mmads), capped by K
  (rounded up to baseK's alignment) and by Mmad's k <= 4095; dbL0A/dbL0B = 2 whenever two
  buffers fit (the docs recommend 2);
* L1: first stepKa = stepKb = every k step (K fully loaded, "优先设置参数stepKa/stepKb，
  使得K方向全载"), with the L1 double buffer (db = 2, "depthA1 / (stepM * stepKa) = 2") when
  it fits, else without; then stepM (or stepN with iterateOrder 1) grown while L1 allows;
  if K does not fit, the largest stepKa = stepKb (ceil(kIter / d)) that fits with db = 2,
  else one k step without double buffer;
* int8: the operand transposed on the way to L0 (A transposed, B not) gets a base that is
  a multiple of 32, which its 32 x 32 squares fill (the library's own bases may be 16 or
  48: the kernel loads those too); a float A transposed or B not gets a baseK of 16s;
* iterateOrder: SetTraverse's, else the library's GetIteratorOrder (N first when only A's
  L1 chunk holds all of K, or both do and N first reads fewer rows); transLength 0 (GM inputs need no UB
  staging on A2/A3); shareL1Size / shareL0CSize the L1 / L0C bytes the tiling uses (the
  docs mark share* "预留"); the layout fields and BatchNum as SetALayout / SetBLayout /
  SetCLayout / SetBatchNum gave them (else 0), for IterateBatch; the L1/L0 split is that
  of one matrix (IterateBatch runs the products one after another); batchM, batchN,
  singleBatchM, singleBatchN 1 (the library's defaults).

Everywhere dbL0C is 1: the library's default template keeps one L0C buffer (its l0cDB).

Not modelled (GetTiling returns -1 and says so): EnableMultiCoreSplitK, sparse/HF32/MX
modes, int4, 8-bit outputs of float inputs (quantisation needs SetQuantScalar).
"""
from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, fields

import ml_dtypes
import numpy as np

from npusim.ascendc.lib import matmul_l0_slice as _slice
from npusim.ascendc.lib.matmul_tiling_dims import library_dims
from npusim.ascendc.lib.matmul_tiling_l0 import core_axis, library_l0_factors
from npusim.ascendc.lib.matmul_tiling_l1 import library_l1_factors
from npusim.ascendc.lib.matmul_tiling_split import library_split
from npusim.ascendc.types import TPosition
from npusim.soc import SocSpec, get_soc

__all__ = ["MatmulApiTiling", "MultiCoreMatmulTiling", "TCubeTiling", "CubeFormat", "DataType",
           "MatrixTraverse", "TPosition", "to_data_type"]

_log = logging.getLogger("npusim.matmul_tiling")


class DataType(enum.IntEnum):
    """``matmul_tiling::DataType`` (the members a Matmul can take; values as in C++)."""

    DT_FLOAT = 0
    DT_FLOAT16 = 1
    DT_INT8 = 2
    DT_INT32 = 3
    DT_UINT8 = 4
    DT_INT16 = 6
    DT_UINT16 = 7
    DT_UINT32 = 8
    DT_INT64 = 9
    DT_UINT64 = 10
    DT_BF16 = 27
    DT_INT4 = 29
    DT_BFLOAT16 = 33


class CubeFormat(enum.IntEnum):
    """``CubeFormat``: the layout of a Matmul operand (ND: row-major; NZ: the cube's
    fractal layout). Shared by the host tiling and the kernel's ``MatmulType``."""

    ND = 0
    NZ = 1
    ZN = 2
    ZZ = 3
    NN = 4
    ND_ALIGN = 5
    SCALAR = 6
    VECTOR = 7
    COLUMN_MAJOR = 8
    ROW_MAJOR = 0          # an alias of ND, as in C++


class MatrixTraverse(enum.IntEnum):
    """``MatrixTraverse`` (SetTraverse): which way Iterate walks the base blocks."""

    NOSET = 0
    FIRSTM = 1
    FIRSTN = 2


_BF16 = np.dtype(ml_dtypes.bfloat16)
_NUMPY = {DataType.DT_FLOAT: np.dtype(np.float32), DataType.DT_FLOAT16: np.dtype(np.float16),
          DataType.DT_BF16: _BF16, DataType.DT_BFLOAT16: _BF16,
          DataType.DT_INT8: np.dtype(np.int8), DataType.DT_INT32: np.dtype(np.int32),
          DataType.DT_UINT8: np.dtype(np.uint8), DataType.DT_INT16: np.dtype(np.int16),
          DataType.DT_UINT16: np.dtype(np.uint16), DataType.DT_UINT32: np.dtype(np.uint32),
          DataType.DT_INT64: np.dtype(np.int64), DataType.DT_UINT64: np.dtype(np.uint64)}
_BY_NUMPY = {v: k for k, v in _NUMPY.items() if k != DataType.DT_BFLOAT16}

#: A/B type -> (bias types, C types) of "Matmul使用说明" table 2 on A2/A3 that we model
#: (int8 C of half/bf16 inputs needs the quantisation API: not modelled).
_COMBOS = {
    np.dtype(np.float32): ({"float32", "float16"}, {"float32", "float16", "bfloat16"}),
    np.dtype(np.float16): ({"float32", "float16"}, {"float32", "float16", "bfloat16"}),
    _BF16: ({"float32", "float16"}, {"float32", "float16", "bfloat16"}),
    np.dtype(np.int8): ({"int32"}, {"int32", "float16", "int8"}),
}

#: batchM, batchN, singleBatchM, singleBatchN as the library's constructor sets them
#: (SetBatchInfoForNormal changes them; npusim's IterateBatch reads the layouts instead)
_ONE_BATCH = {"batchM": 1, "batchN": 1, "singleBatchM": 1, "singleBatchN": 1}

_BASE_MN_MAX = 256          # baseM cap and the recommended baseN
_BASE_M_PREF = 128          # the recommended baseM (L0C / (4 * 256))
_BASE_K_BYTES = 128         # the recommended baseK = 64 half: 128 B of k per row
_MMAD_K_MAX = 4095          # Mmad's k range (Mmad.md)


def to_data_type(dtype) -> DataType:
    """A ``DataType`` (returned as is) or a numpy dtype / Ascend C type -> ``DataType``.

    Raises:
        ValueError: the type has no ``DataType``."""
    if isinstance(dtype, DataType):
        return dtype
    try:
        return _BY_NUMPY[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise ValueError(f"{dtype!r} has no matmul_tiling DataType") from None


def _numpy(dt: DataType) -> np.dtype | None:
    return _NUMPY.get(dt)


def _ceil(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _align(a: int, b: int) -> int:
    return _ceil(a, b) * b


@dataclass
class TCubeTiling:
    """``TCubeTiling`` (TCubeTiling结构体; fields in matmul_tilingdata.h order), in elements.

    usedCoreNum: cores used, ``ceil(M / singleCoreM) * ceil(N / singleCoreN)``. M, N, Ka,
    Kb: the original shapes (A is M x Ka, B Kb x N). singleCoreM/N/K: one core's part.
    baseM/N/K: one Mmad's shape. depthA1/B1: base blocks A1/B1 hold (stepM * stepKa * db).
    stepM/N/Ka/Kb: base blocks per L1 load along M/N/K. isBias: 0/1. transLength: UB
    staging bytes. iterateOrder: 0 M first, 1 N first. dbL0A/B/C: 1 or 2 buffers.
    shareMode, shareL1Size, shareL0CSize, shareUbSize, batch*, *LayoutInfo*, BatchNum,
    mxTypePara, depthA/BL1CacheUB: reserved / other scenarios (module docstring).
    """

    usedCoreNum: int = 0
    M: int = 0
    N: int = 0
    Ka: int = 0
    Kb: int = 0
    singleCoreM: int = 0
    singleCoreN: int = 0
    singleCoreK: int = 0
    baseM: int = 0
    baseN: int = 0
    baseK: int = 0
    depthA1: int = 0
    depthB1: int = 0
    stepM: int = 0
    stepN: int = 0
    isBias: int = 0
    transLength: int = 0
    iterateOrder: int = 0
    shareMode: int = 0
    shareL1Size: int = 0
    shareL0CSize: int = 0
    shareUbSize: int = 0
    batchM: int = 0
    batchN: int = 0
    singleBatchM: int = 0
    singleBatchN: int = 0
    stepKa: int = 0
    stepKb: int = 0
    depthAL1CacheUB: int = 0
    depthBL1CacheUB: int = 0
    dbL0A: int = 0
    dbL0B: int = 0
    dbL0C: int = 0
    ALayoutInfoB: int = 0
    ALayoutInfoS: int = 0
    ALayoutInfoN: int = 0
    ALayoutInfoG: int = 0
    ALayoutInfoD: int = 0
    BLayoutInfoB: int = 0
    BLayoutInfoS: int = 0
    BLayoutInfoN: int = 0
    BLayoutInfoG: int = 0
    BLayoutInfoD: int = 0
    CLayoutInfoB: int = 0
    CLayoutInfoS1: int = 0
    CLayoutInfoN: int = 0
    CLayoutInfoG: int = 0
    CLayoutInfoS2: int = 0
    BatchNum: int = 0
    mxTypePara: int = 0


@dataclass
class _MatType:
    """``MatTilingType``: what SetAType/SetBType/SetCType/SetBiasType record."""

    pos: TPosition = TPosition.GM
    type: CubeFormat = CubeFormat.ND
    dataType: DataType = DataType.DT_FLOAT
    isTrans: bool = False
    set: bool = False


class _TilingError(Exception):
    """A reason GetTiling returns -1 (logged as "MatmulApi Tiling: ...")."""


class MatmulApiTilingBase:
    """What both tiling classes share: the Set* calls and GetTiling.

    Args:
        ascendcPlatform: the platform (``PlatformAscendC``): a :class:`SocSpec`, a SoC name,
            or None (the default SoC; the C++ no-argument constructor is A2/A3 only).

    Every Set* returns 0, or -1 for a value out of its range (and changes nothing). After a
    failed GetTiling, :attr:`error` holds the reason (ours: C++ writes it to the log, which
    we do too, under the logger ``npusim.matmul_tiling`` with the keyword "MatmulApi
    Tiling").
    """

    def __init__(self, ascendcPlatform: SocSpec | str | None = None):
        self.soc = get_soc(ascendcPlatform)
        self.aType_, self.bType_ = _MatType(), _MatType()
        self.cType_, self.biasType_ = _MatType(), _MatType()
        self.isBias = False
        self.orgM = self.orgN = self.orgKa = self.orgKb = 0
        self.singleM = self.singleN = self.singleK = -1        # SetShape
        self.baseM = self.baseN = self.baseK = -1              # SetFixSplit
        soc = self.soc
        self.bufferPool_ = {"l1": soc.l1_usable, "l0c": soc.l0_c_size, "ub": soc.ub_usable,
                            "bt": soc.bt_size, "l0a": soc.l0_a_size, "l0b": soc.l0_b_size}
        self.traverse_ = MatrixTraverse.FIRSTM
        self._traverse_set = False            # NOSET: GetTiling picks iterateOrder
        self.mmConfigType = 1                                  # SetMatmulConfigParams: MDL
        self._config_error: str | None = None
        self.error: str | None = None
        self._result: TCubeTiling | None = None
        self._dims = (0, 0, 0)                                 # (dim, mDim, nDim)

    # -- types --------------------------------------------------------------------------------
    def _set_type(self, which: _MatType, pos, type, dataType, isTrans=False) -> int:
        try:
            which.pos, which.type = TPosition(pos), CubeFormat(type)
            which.dataType = to_data_type(dataType)
        except ValueError:
            return -1
        which.isTrans, which.set = bool(isTrans), True
        return 0

    def SetAType(self, pos: TPosition, type: CubeFormat, dataType, isTrans: bool = False) -> int:
        """A's position, format, type (a ``DataType`` or a numpy dtype) and transpose."""
        return self._set_type(self.aType_, pos, type, dataType, isTrans)

    def SetBType(self, pos: TPosition, type: CubeFormat, dataType, isTrans: bool = False) -> int:
        """B's position, format, type and transpose (isTrans: B is stored N x K)."""
        return self._set_type(self.bType_, pos, type, dataType, isTrans)

    def SetCType(self, pos: TPosition, type: CubeFormat, dataType) -> int:
        """C's position, format and type."""
        return self._set_type(self.cType_, pos, type, dataType)

    def SetBiasType(self, pos: TPosition, type: CubeFormat, dataType) -> int:
        """The bias's position, format and type."""
        return self._set_type(self.biasType_, pos, type, dataType)

    # -- shapes and options -------------------------------------------------------------------
    def SetShape(self, m: int, n: int, k: int) -> int:
        """The shape computed (the whole of the original matrices or a part), elements; -1
        leaves an axis to the original shape."""
        if any(int(v) == 0 or int(v) < -1 for v in (m, n, k)):
            return -1
        self.singleM, self.singleN, self.singleK = int(m), int(n), int(k)
        return 0

    def SetOrgShape(self, orgMIn: int, orgNIn: int, orgKaIn: int, orgKbIn: int | None = None) -> int:
        """The original shapes: A is orgM x orgKa, B orgKb x orgN (orgKb = orgKa if omitted)."""
        kb = orgKaIn if orgKbIn is None else orgKbIn
        if any(int(v) <= 0 for v in (orgMIn, orgNIn, orgKaIn, kb)):
            return -1
        self.orgM, self.orgN, self.orgKa, self.orgKb = int(orgMIn), int(orgNIn), int(orgKaIn), int(kb)
        return 0

    def SetBias(self, isBiasIn: bool = False) -> int:
        """Whether C = A x B + bias."""
        self.isBias = bool(isBiasIn)
        return 0

    EnableBias = SetBias

    def SetALayout(self, b: int, s: int, n: int, g: int, d: int) -> int:
        """A's batch layout (B, S, N, G, D axes; for the NORMAL layout: batch, M, 1, 1, K):
        the tiling's ALayoutInfoB/S/N/G/D. -1 unless every axis is >= 1."""
        return self._set_layout("A", (b, s, n, g, d))

    def SetBLayout(self, b: int, s: int, n: int, g: int, d: int) -> int:
        """B's batch layout (NORMAL: batch, K, 1, 1, N): BLayoutInfoB/S/N/G/D."""
        return self._set_layout("B", (b, s, n, g, d))

    def SetCLayout(self, b: int, s1: int, n: int, g: int, s2: int) -> int:
        """C's batch layout (NORMAL: batch, M, 1, 1, N): CLayoutInfoB/S1/N/G/S2."""
        return self._set_layout("C", (b, s1, n, g, s2))

    def SetBatchNum(self, batch: int) -> int:
        """The largest batch one IterateBatch computes: the tiling's BatchNum."""
        if int(batch) < 1:
            return -1
        self.batchNum_ = int(batch)
        return 0

    def _set_layout(self, which: str, axes) -> int:
        if any(int(v) < 1 for v in axes):
            return -1
        self.layouts_ = {**getattr(self, "layouts_", {}), which: tuple(int(v) for v in axes)}
        return 0

    def _layout_fields(self) -> dict:
        names = {"A": ("B", "S", "N", "G", "D"), "B": ("B", "S", "N", "G", "D"),
                 "C": ("B", "S1", "N", "G", "S2")}
        out = {}
        for which, axes in getattr(self, "layouts_", {}).items():
            out.update({f"{which}LayoutInfo{ax}": v for ax, v in zip(names[which], axes)})
        out["BatchNum"] = getattr(self, "batchNum_", 0)
        return out

    def SetFixSplit(self, baseMIn: int = -1, baseNIn: int = -1, baseKIn: int = -1) -> int:
        """Fix baseM/baseN/baseK (-1: the tiling chooses). GetTiling checks them."""
        if any(int(v) == 0 or int(v) < -1 for v in (baseMIn, baseNIn, baseKIn)):
            return -1
        self.baseM, self.baseN, self.baseK = int(baseMIn), int(baseNIn), int(baseKIn)
        return 0

    def SetBufferSpace(self, l1Size: int = -1, l0CSize: int = -1, ubSize: int = -1,
                       btSize: int = -1) -> int:
        """Bytes of L1, L0C, UB and bias table the Matmul may use (-1: the whole memory);
        -1 when a size exceeds the memory."""
        soc = self.soc
        caps = {"l1": soc.l1_usable, "l0c": soc.l0_c_size, "ub": soc.ub_usable, "bt": soc.bt_size}
        want = {"l1": l1Size, "l0c": l0CSize, "ub": ubSize, "bt": btSize}
        if any(int(v) < -1 or int(v) == 0 or int(v) > caps[k] for k, v in want.items()):
            return -1
        for k, v in want.items():
            self.bufferPool_[k] = caps[k] if int(v) == -1 else int(v)
        return 0

    def SetTraverse(self, traverse: MatrixTraverse) -> int:
        """FIRSTM: Iterate walks M first (iterateOrder 0); FIRSTN: N first (1)."""
        traverse = MatrixTraverse(traverse)
        if traverse == MatrixTraverse.NOSET:
            return -1
        self.traverse_ = traverse
        self._traverse_set = True
        return 0

    def SetMatmulConfigParams(self, mmConfigTypeIn: int = 1, enableL1CacheUBIn: bool = False,
                              scheduleTypeIn: int = 0, traverseIn=MatrixTraverse.NOSET,
                              enVecND2NZIn: bool = False) -> None:
        """The kernel's MatmulConfig as the tiling must know it (SetMatmulConfigParams,
        atlasascendc_api_07_0704): mmConfigTypeIn 0 the NORM template, 1 (default) MDL;
        traverseIn other than NOSET as SetTraverse. The L1/L0 fields are the same for both
        templates (the library's L1 rules do not read it). GetTiling fails (-1, saying why)
        for what A2/A3 or the simulator do not take: enableL1CacheUB (not supported on
        A2/A3, per the page), a scheduleType other than INNER_PRODUCT (0), enVecND2NZ."""
        self.mmConfigType = int(mmConfigTypeIn)
        self._config_error = None
        if self.mmConfigType not in (0, 1):
            self._config_error = f"mmConfigTypeIn {mmConfigTypeIn}: 0 (NORM) or 1 (MDL)"
        elif enableL1CacheUBIn:
            self._config_error = "enableL1CacheUBIn is not supported on A2/A3 (SetMatmulConfigParams)"
        elif int(scheduleTypeIn) != 0:
            self._config_error = (f"scheduleTypeIn {int(scheduleTypeIn)}: only INNER_PRODUCT (0) "
                                  "is modelled")
        elif enVecND2NZIn:
            self._config_error = "enVecND2NZIn (ND2NZ on the AIV) is not modelled"
        if MatrixTraverse(traverseIn) != MatrixTraverse.NOSET:
            self.traverse_ = MatrixTraverse(traverseIn)
            self._traverse_set = True

    def GetBaseM(self) -> int:
        return self._result.baseM if self._result else self.baseM

    def GetBaseN(self) -> int:
        return self._result.baseN if self._result else self.baseN

    def GetBaseK(self) -> int:
        return self._result.baseK if self._result else self.baseK

    # -- the tiling ---------------------------------------------------------------------------
    def GetTiling(self, tiling: TCubeTiling) -> int:
        """Compute the tiling into ``tiling`` (a :class:`TCubeTiling`, filled in place):
        0 on success; -1 when no tiling satisfies the rules (module docstring), the struct
        then unchanged and :attr:`error` saying why."""
        try:
            result = self._compute()
        except _TilingError as e:
            self.error = str(e)
            self._result = None
            _log.warning("MatmulApi Tiling: %s", e)
            return -1
        self.error = None
        self._result = result
        for f in fields(TCubeTiling):
            setattr(tiling, f.name, getattr(result, f.name))
        return 0

    def _dim(self) -> int:
        return 1

    def _iterate_order(self, sm, sn, k, base_m, base_n, base_k, step_m, step_n, step_ka,
                       step_kb) -> int:
        """iterateOrder: SetTraverse's when set, else the library's rule (GetIteratorOrder):
        N first (1) when only A's L1 chunk holds all of K, M first (0) when only B's does or
        neither; when both do, N first if walking N first reads fewer rows of A and B
        (``sm + sn * mLoops < sn + sm * nLoops``, loops of stepM x baseM rows)."""
        if self._traverse_set:
            return int(self.traverse_ == MatrixTraverse.FIRSTN)
        full_a, full_b = step_ka * base_k >= k, step_kb * base_k >= k
        if full_a != full_b:
            return int(full_a)
        if not full_a:
            return 0
        m_loops, n_loops = _ceil(sm, step_m * base_m), _ceil(sn, step_n * base_n)
        return int(sm + sn * m_loops < sn + sm * n_loops)

    def _c_itemsize(self) -> int:
        return _numpy(self.cType_.dataType).itemsize

    def _bias_itemsize(self) -> int:
        return _numpy(self.biasType_.dataType).itemsize if self.biasType_.set else 4

    def _fixed_single(self) -> tuple[int, int]:
        return -1, -1

    def _single_k(self, k: int) -> int:
        return k

    def _compute(self) -> TCubeTiling:
        self._check_config()
        ab = self._check_types()
        m, n, k = self._shapes()
        k = self._single_k(k)
        self._check_nz(ab)
        sm, sn, m_dim, n_dim = self._split_cores(m, n)
        self._dims = (m_dim * n_dim, m_dim, n_dim)
        units = None
        lib = self._library_base(ab, sm, sn, k)
        if lib is not None:
            base_m, base_n, base_k, db, units = lib
        else:
            base_m, base_n, base_k, db = self._base(ab, sm, sn, k)
        steps = self._l1(ab, sm, sn, k, base_m, base_n, base_k, units)
        return self._struct(m, n, k, sm, sn, base_m, base_n, base_k, db, steps, ab)

    def _one_core(self) -> bool:
        """Whether the library tiles this as one core's problem (its one-core branch):
        one core, or a part fixed by SetSingleShape."""
        return self._dim() == 1 or any(v > 0 for v in self._fixed_single())

    def _library_base(self, ab, sm, sn, k):
        """(baseM, baseN, baseK, (dbL0A, dbL0B, dbL0C), (m, n, k) units) of the library's
        one-core base search (:mod:`npusim.ascendc.lib.matmul_tiling_l0`), or None where it
        does not apply (several cores, SetFixSplit) or its base breaks a rule the kernel's
        Matmul checks (then this module's own base is used)."""
        if not self._one_core() or (self.baseM, self.baseN, self.baseK) != (-1, -1, -1):
            return None
        c0 = 32 // ab.itemsize
        units = (core_axis(_ceil(sm, 16)), core_axis(_ceil(sn, 16)), core_axis(_ceil(k, c0)))
        return self._checked_library_base(ab, units)

    def _checked_library_base(self, ab, units):
        """The library's base for a core of ``units`` (fractals, fractals, C0 columns), or
        None when it finds none or its base breaks a rule the kernel's Matmul checks."""
        c0 = 32 // ab.itemsize
        got = library_l0_factors(self, ab, *units)
        if got is None:
            return None
        ml0, nl0, kl0, db_a, db_b = got
        bm, bn, bk = ml0 * 16, nl0 * 16, kl0 * c0
        isz, pool = ab.itemsize, self.bufferPool_
        if not self._kernel_loads(ab, bm, bn, bk, db_a, db_b):
            return None
        if bm * bk * isz * db_a > pool["l0a"] or bn * bk * isz * db_b > pool["l0b"] \
                or bm * bn * 4 > pool["l0c"]:
            return None
        if self.isBias and pool["bt"] and bn * 4 > pool["bt"]:
            return None
        return bm, bn, bk, (db_a, db_b, 1), units

    def _kernel_loads(self, ab, bm: int, bn: int, bk: int, db_a: int, db_b: int) -> bool:
        """Whether the library's kernel can load this base: each slice, as its loads pad it
        (int8 moved transposed: rows to 32; float moved transposed: K to 16), fits the L0A /
        L0B buffer it loads into (:mod:`npusim.ascendc.lib.matmul_l0_slice`), the check
        the kernel's Matmul makes at SetTensorA/B."""
        isz = ab.itemsize
        for size, trans_x, base_x in ((self.soc.l0_a_size, self.aType_.isTrans, bm),
                                      (self.soc.l0_b_size, not self.bType_.isTrans, bn)):
            room = _slice.buffer_bytes(size, db_a, db_b)
            if _slice.slice_bytes(isz, trans_x, base_x, bk) > room:
                return False
        return True

    def _check_config(self) -> None:
        if getattr(self, "_config_error", None):
            raise _TilingError(self._config_error)

    def _check_types(self) -> np.dtype:
        """The A/B type, once A, B, C and (with a bias) bias form a modelled combination."""
        a, b, c, bias = self.aType_, self.bType_, self.cType_, self.biasType_
        if not (a.set and b.set and c.set):
            raise _TilingError("SetAType, SetBType and SetCType must be called first")
        at, bt, ct = _numpy(a.dataType), _numpy(b.dataType), _numpy(c.dataType)
        if at is None or at != bt or at not in _COMBOS:
            raise _TilingError(f"A {a.dataType.name} x B {b.dataType.name} is not a modelled "
                               "Matmul type pair (half, bfloat16, float or int8 on both sides)")
        if self.soc.cube_rate(at) is None:
            raise _TilingError(f"the cube of {self.soc.soc_version} has no {at.name} Mmad")
        bias_ok, c_ok = _COMBOS[at]
        if ct is None or ct.name not in c_ok:
            raise _TilingError(f"C {c.dataType.name} is not a C type of {at.name} inputs "
                               "(Matmul使用说明 table 2)")
        if self.isBias:
            bias_t = _numpy(bias.dataType) if bias.set else None
            if bias_t is None or bias_t.name not in bias_ok:
                raise _TilingError(f"bias {bias.dataType.name if bias.set else '(unset)'} is not "
                                   f"a bias type of {at.name} inputs (Matmul使用说明 table 2)")
        return at

    def _shapes(self) -> tuple[int, int, int]:
        """(m, n, k) computed, from SetShape and SetOrgShape (either fills the other)."""
        if self.orgM == 0 and self.singleM == -1:
            raise _TilingError("neither SetOrgShape nor SetShape was called")
        if self.orgM == 0:
            if -1 in (self.singleM, self.singleN, self.singleK):
                raise _TilingError("SetShape leaves an axis open and SetOrgShape was not called")
            self.orgM, self.orgN = self.singleM, self.singleN
            self.orgKa = self.orgKb = self.singleK
        m = self.orgM if self.singleM == -1 else self.singleM
        n = self.orgN if self.singleN == -1 else self.singleN
        k = min(self.orgKa, self.orgKb) if self.singleK == -1 else self.singleK
        if m > self.orgM or n > self.orgN or k > min(self.orgKa, self.orgKb):
            raise _TilingError(f"the shape ({m}, {n}, {k}) exceeds the original shape "
                               f"(M {self.orgM}, N {self.orgN}, Ka {self.orgKa}, Kb {self.orgKb})")
        return m, n, k

    def _check_nz(self, ab: np.dtype) -> None:
        """NZ inputs: the outer axis 16-aligned, K C0_size-aligned (TCubeTiling M/N/Ka/Kb)."""
        c0 = 32 // ab.itemsize
        for name, t, outer, kk in (("A", self.aType_, self.orgM, self.orgKa),
                                   ("B", self.bType_, self.orgN, self.orgKb)):
            if t.type == CubeFormat.NZ and (outer % 16 or kk % c0):
                raise _TilingError(f"{name} is NZ: its {'M' if name == 'A' else 'N'} ({outer}) "
                                   f"must be 16-aligned and its K ({kk}) {c0}-aligned")

    def _split_cores(self, m: int, n: int) -> tuple[int, int, int, int]:
        """(singleCoreM, singleCoreN, mDim, nDim): the module docstring's rule."""
        dim = self._dim()
        fix_m, fix_n = self._fixed_single()
        if fix_m > m or fix_n > n:
            raise _TilingError(f"SetSingleShape ({fix_m}, {fix_n}) exceeds the shape ({m}, {n})")
        best = None
        for m_dim in range(1, min(dim, _ceil(m, 16)) + 1):
            sm = fix_m if fix_m > 0 else min(_align(_ceil(m, m_dim), 16), m)
            n_dim = max(1, min(dim // _ceil(m, sm), _ceil(n, 16)))
            sn = fix_n if fix_n > 0 else min(_align(_ceil(n, n_dim), 16), n)
            md, nd = _ceil(m, sm), _ceil(n, sn)
            key = (_ceil(sm, 16) * _ceil(sn, 16), sm + sn, md * nd)
            if best is None or key < best[0]:
                best = (key, sm, sn, md, nd)
            if fix_m > 0:
                break
        _, sm, sn, md, nd = best
        return sm, sn, md, nd

    def _k_align(self, ab: np.dtype) -> int:
        """The unit of this tiling's own baseK: C0_size when A is not transposed and B is,
        else 16 (never below C0_size), so that a float slice moved transposed needs no
        padding in L0 [R]."""
        c0 = 32 // ab.itemsize
        if not self.aType_.isTrans and self.bType_.isTrans:
            return c0
        return max(c0, 16)

    def _base(self, ab: np.dtype, sm: int, sn: int, k: int):
        """(baseM, baseN, baseK, (dbL0A, dbL0B, dbL0C))."""
        pool, isz = self.bufferPool_, ab.itemsize
        ka = self._k_align(ab)
        l0c_elems = pool["l0c"] // 4
        # the bias table holds one float/int32 per column of a base block (none on the
        # coupled 910A/310P, whose bias path is not the bias table)
        bias_cap = pool["bt"] // 4 if self.isBias and pool["bt"] else _BASE_MN_MAX
        # int8 transposed on the way to L0 (A transposed, B not) moves 32 x 32 squares
        am = 32 if ab.itemsize == 1 and self.aType_.isTrans else 16
        an = 32 if ab.itemsize == 1 and not self.bType_.isTrans else 16
        base_n = self.baseN if self.baseN > 0 else min(_BASE_MN_MAX, _align(sn, an),
                                                        bias_cap // an * an)
        base_m = self.baseM if self.baseM > 0 else min(
            _BASE_MN_MAX, _align(sm, am), max(am, l0c_elems // base_n // am * am))
        if self.baseK > 0:
            base_k = self.baseK
        else:
            room = min(pool["l0a"] // (2 * base_m * isz), pool["l0b"] // (2 * base_n * isz))
            grown = _BASE_K_BYTES // isz          # doubled while two buffers still fit
            while 2 * grown <= room:
                grown *= 2
            base_k = max(ka, min(_align(k, ka), grown, _MMAD_K_MAX) // ka * ka)
        c0 = 32 // isz
        if base_m % 16 or base_n % 16 or base_k % c0:
            raise _TilingError(f"base ({base_m}, {base_n}, {base_k}): baseM and baseN must be "
                               f"multiples of 16 and baseK of {c0} (TCubeTiling: bases "
                               "aligned to the fractals)")
        db_a = self._buffers(base_m * base_k * isz, pool["l0a"], "baseM * baseK", "L0A")
        db_b = self._buffers(base_n * base_k * isz, pool["l0b"], "baseN * baseK", "L0B")
        if not self._kernel_loads(ab, base_m, base_n, base_k, db_a, db_b):
            raise _TilingError(f"base ({base_m}, {base_n}, {base_k}): a slice padded as the "
                               "library's kernel loads it (int8 moved transposed: rows to 32; "
                               "float: K to 16) exceeds the L0 buffer it is loaded into")
        self._buffers(base_m * base_n * 4, pool["l0c"], "baseM * baseN", "L0C")
        db_c = 1        # the library's default template keeps one L0C buffer (l0cDB off)
        if self.isBias and pool["bt"] and base_n * 4 > pool["bt"]:
            raise _TilingError(f"baseN {base_n} x 4 B of bias exceeds the {pool['bt']} B bias "
                               "table")
        return base_m, base_n, base_k, (db_a, db_b, db_c)

    @staticmethod
    def _buffers(nbytes: int, cap: int, what: str, mem: str) -> int:
        """2 when two buffers of ``nbytes`` fit ``cap``, 1 when one does."""
        if nbytes > cap:
            raise _TilingError(f"{what} = {nbytes} B exceeds {mem} ({cap} B)")
        return 2 if 2 * nbytes <= cap else 1

    def _l1(self, ab, sm, sn, k, base_m, base_n, base_k, units=None):
        """(stepM, stepN, stepKa, stepKb, db) fitting L1 (module docstring)."""
        isz = ab.itemsize
        a_blk = 0 if self.aType_.pos == TPosition.TSCM else base_m * base_k * isz
        b_blk = 0 if self.bType_.pos == TPosition.TSCM else base_n * base_k * isz
        bias = base_n * _numpy(self.biasType_.dataType).itemsize if self.isBias else 0
        l1 = self.bufferPool_["l1"]

        def need(step_m, step_n, step_k, db):
            return (a_blk * step_m + b_blk * step_n) * step_k * db + bias

        k_iter = _ceil(k, base_k)
        partial = sorted({_ceil(k_iter, d) for d in range(2, k_iter + 1)}, reverse=True)
        order = [(k_iter, 2), (k_iter, 1), *((s, 2) for s in partial), (1, 1)]
        step_k, db = next(((s, d) for s, d in order if need(1, 1, s, d) <= l1), (None, None))
        if step_k is None:
            raise _TilingError(f"one A and one B base block ({need(1, 1, 1, 1)} B) exceed L1 "
                               f"({l1} B)")
        step_m = step_n = 1
        if step_k == k_iter:             # K fully loaded: more base blocks along M (or N)
            along_m = self.traverse_ != MatrixTraverse.FIRSTN
            most = _ceil(sm, base_m) if along_m else _ceil(sn, base_n)
            for s in range(most, 1, -1):
                sm_, sn_ = (s, 1) if along_m else (1, s)
                if need(sm_, sn_, step_k, db) <= l1:
                    step_m, step_n = sm_, sn_
                    break
        # the library's own L1 factors (GetL1Factors) where they are restated and fit
        lib = library_l1_factors(self, ab, sm, sn, k, base_m, base_n, base_k, units)
        if lib is not None:
            lm, ln, lka, lkb, lda, ldb = lib
            used = a_blk * lda + b_blk * ldb + bias
            if min(lib) > 0 and used <= l1:
                return lm, ln, lka, lkb, lda, ldb, used
        return (step_m, step_n, step_k, step_k, step_m * step_k * db, step_n * step_k * db,
                need(step_m, step_n, step_k, db))

    def _struct(self, m, n, k, sm, sn, base_m, base_n, base_k, db, steps, ab) -> TCubeTiling:
        step_m, step_n, step_ka, step_kb, depth_a1, depth_b1, l1_used = steps
        used = min(self._dims[0], self._dim())
        return TCubeTiling(
            usedCoreNum=used, M=self.orgM, N=self.orgN, Ka=self.orgKa, Kb=self.orgKb,
            singleCoreM=sm, singleCoreN=sn, singleCoreK=k, baseM=base_m, baseN=base_n,
            baseK=base_k, depthA1=depth_a1, depthB1=depth_b1,
            stepM=step_m, stepN=step_n, stepKa=step_ka, stepKb=step_kb, isBias=int(self.isBias),
            transLength=0,
            iterateOrder=self._iterate_order(sm, sn, k, base_m, base_n, base_k, step_m, step_n,
                                             step_ka, step_kb),
            shareL1Size=l1_used, shareL0CSize=base_m * base_n * 4 * db[2], **_ONE_BATCH,
            dbL0A=db[0], dbL0B=db[1], dbL0C=db[2], **self._layout_fields())


class MatmulApiTiling(MatmulApiTilingBase):
    """``matmul_tiling::MatmulApiTiling``: the tiling of one core's Matmul (usedCoreNum 1;
    singleCoreM/N/K = the shape of SetShape)."""


class MultiCoreMatmulTiling(MatmulApiTilingBase):
    """``matmul_tiling::MultiCoreMatmulTiling``: the shape of SetShape split over at most
    SetDim cores along M and N (never K). In an AIC_ONLY kernel dim counts AICs; in a MIX
    kernel on A2/A3 it counts AIVs (the AIVs call the API and each asks its AIC: SetDim
    page). Default dim: the SoC's cube-core count."""

    def __init__(self, ascendcPlatform: SocSpec | str | None = None):
        super().__init__(ascendcPlatform)
        self.blockDim = self.soc.cube_block_num
        self.fixSingleM = self.fixSingleN = self.fixSingleK = -1
        self.enableSplitK_ = False

    def SetDim(self, dim: int) -> int:
        """Cores the split may use: -1 unless 1 <= dim <= the SoC's AI cores (AIVs on
        A2/A3, for the MIX form)."""
        most = max(self.soc.vector_block_num, self.soc.cube_block_num)
        if not 1 <= int(dim) <= most:
            return -1
        self.blockDim = int(dim)
        return 0

    def SetSingleShape(self, singleMIn: int = -1, singleNIn: int = -1, singleKIn: int = -1) -> int:
        """Fix singleCoreM/N/K (-1: the tiling chooses)."""
        if any(int(v) == 0 or int(v) < -1 for v in (singleMIn, singleNIn, singleKIn)):
            return -1
        self.fixSingleM, self.fixSingleN, self.fixSingleK = map(int, (singleMIn, singleNIn,
                                                                       singleKIn))
        return 0

    def EnableMultiCoreSplitK(self, flag: bool) -> None:
        """Split K over cores: not modelled (GetTiling returns -1 when enabled)."""
        self.enableSplitK_ = bool(flag)

    SetSplitK = EnableMultiCoreSplitK

    def GetSingleShape(self):
        """(singleCoreM, singleCoreN, singleCoreK) of the last successful GetTiling, else
        None (pyasc's Python form of the out-parameters)."""
        r = self._result
        return None if r is None else (r.singleCoreM, r.singleCoreN, r.singleCoreK)

    def GetCoreNum(self):
        """(dim, mDim, nDim) of the last successful GetTiling (dim = mDim * nDim), else
        None."""
        return None if self._result is None else self._dims

    def _dim(self) -> int:
        return self.blockDim

    def _fixed_single(self) -> tuple[int, int]:
        return self.fixSingleM, self.fixSingleN

    def _compute(self) -> TCubeTiling:
        if self.enableSplitK_:
            raise _TilingError("EnableMultiCoreSplitK is not modelled")
        self._check_config()
        ab = self._check_types()
        m, n, k = self._shapes()
        k = self._single_k(k)
        self._check_nz(ab)
        lib = library_split(self, ab, m, n, k, self._dim())
        if lib is not None:
            try:
                return self._library_struct(ab, m, n, k, lib)
            except _TilingError:
                pass            # a base the kernel's rules refuse (e.g. float baseK 8): ours
        elif not self._one_core() and not self.enableSplitK_ \
                and (self.baseM, self.baseN, self.baseK) == (-1, -1, -1):
            general = self._general(ab, m, n, k)
            if general is not None:
                return general
        return super()._compute()

    def _general(self, ab, m, n, k) -> TCubeTiling | None:
        """The library's general split (:mod:`npusim.ascendc.lib.matmul_tiling_dims`), then
        its base and L1 searches on one core's shape; None where its base breaks a rule the
        kernel's Matmul checks (this module's own rule is used then)."""
        c0 = 32 // ab.itemsize
        md, nd, cm, cn, ck = library_dims(self, _ceil(m, 16), _ceil(n, 16), _ceil(k, c0),
                                          self._dim())
        base = self._checked_library_base(ab, (cm, cn, ck))
        if base is None:
            return None
        bm, bn, bk, db, units = base
        # GetSingleShape on several cores: the parts of the 16-aligned M and N
        sm, sn = _ceil(_align(m, 16), md), _ceil(_align(n, 16), nd)
        self._dims = (md * nd, md, nd)
        steps = self._l1(ab, sm, sn, k, bm, bn, bk, units)
        return self._struct(m, n, k, sm, sn, bm, bn, bk, db, steps, ab)

    def _library_struct(self, ab, m, n, k, lib) -> TCubeTiling:
        """The struct of the library's A2/A3 multi-core scenario (matmul_tiling_split)."""
        isz, pool = ab.itemsize, self.bufferPool_
        bm, bn, bk = lib.base_m, lib.base_n, lib.base_k
        c0 = 32 // isz
        if bm % 16 or bn % 16 or bk % c0:
            raise _TilingError(f"base ({bm}, {bn}, {bk}): baseM and baseN must be multiples "
                               f"of 16 and baseK of {c0} (TCubeTiling: fractal-aligned)")
        db_a = self._buffers(bm * bk * isz, pool["l0a"], "baseM * baseK", "L0A")
        db_b = self._buffers(bn * bk * isz, pool["l0b"], "baseN * baseK", "L0B")
        if not self._kernel_loads(ab, bm, bn, bk, db_a, db_b):
            raise _TilingError(f"base ({bm}, {bn}, {bk}): a slice padded as the library's "
                               "kernel loads it exceeds its L0 buffer")
        self._buffers(bm * bn * 4 * lib.db_l0c, pool["l0c"], "baseM * baseN", "L0C")
        if self.isBias and pool["bt"] and bn * 4 > pool["bt"]:
            raise _TilingError(f"baseN {bn} x 4 B of bias exceeds the {pool['bt']} B bias table")
        a_blk = 0 if self.aType_.pos == TPosition.TSCM else bm * bk * isz
        b_blk = 0 if self.bType_.pos == TPosition.TSCM else bn * bk * isz
        bias = bn * self._bias_itemsize() if self.isBias else 0
        l1_used = a_blk * lib.depth_a1 + b_blk * lib.depth_b1 + bias
        sm, sn = lib.single_m, lib.single_n
        md, nd = lib.m_dim, lib.n_dim
        self._dims = (md * nd, md, nd)
        return TCubeTiling(
            usedCoreNum=md * nd, M=self.orgM, N=self.orgN, Ka=self.orgKa, Kb=self.orgKb,
            singleCoreM=sm, singleCoreN=sn, singleCoreK=k, baseM=bm, baseN=bn, baseK=bk,
            depthA1=lib.depth_a1, depthB1=lib.depth_b1, stepM=1, stepN=1,
            stepKa=lib.step_ka, stepKb=lib.step_kb, isBias=int(self.isBias), transLength=0,
            iterateOrder=self._iterate_order(sm, sn, k, bm, bn, bk, 1, 1, lib.step_ka,
                                             lib.step_kb),
            shareL1Size=l1_used, shareL0CSize=bm * bn * 4 * lib.db_l0c, **_ONE_BATCH, dbL0A=db_a, dbL0B=db_b, dbL0C=lib.db_l0c,
            **self._layout_fields())

    def _single_k(self, k: int) -> int:
        if self.fixSingleK > k:
            raise _TilingError(f"SetSingleShape's K ({self.fixSingleK}) exceeds the shape's "
                               f"({k})")
        return self.fixSingleK if self.fixSingleK > 0 else k
