"""Ascend C enumerations and value types: data types, positions, pipes, events, round
modes and the copy-parameter structs.

Sources: ``docs/reference/hardware.md`` §3 (positions, pipes, HardEvent, DataCopy parameter
ranges) and §2 (pipe assignment). Names are Ascend C's.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import ml_dtypes
import numpy as np

# -- data types ----------------------------------------------------------------------------
# Each type has its Ascend C (C++) spelling and numpy's; both name the same numpy dtype, so
# ``LocalTensor`` dtypes compare equal whichever spelling a kernel uses. C++ ``float`` and
# ``bool`` are not exported: under ``from npusim.ascendc import *`` they would shadow
# Python's builtins, which kernels call (``float(x)``, ``bool(mask)``); write ``float32``
# (and ``bool_`` for numpy's one-byte bool). Python's own ``float`` (numpy's float64) is
# refused where a tensor's type is given (:func:`tensor_dtype`). Listed in docs/kernels.md.
half = float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
bfloat16_t = bfloat16 = np.dtype(ml_dtypes.bfloat16)
int8_t = int8 = np.dtype(np.int8)
uint8_t = uint8 = np.dtype(np.uint8)
int16_t = int16 = np.dtype(np.int16)
uint16_t = uint16 = np.dtype(np.uint16)
int32_t = int32 = np.dtype(np.int32)
uint32_t = uint32 = np.dtype(np.uint32)
int64_t = int64 = np.dtype(np.int64)
uint64_t = uint64 = np.dtype(np.uint64)
bool_ = np.dtype(np.bool_)

#: (C++ name, numpy name) of every exported data type, in the order of docs/kernels.md.
DTYPE_NAMES = (("half", "float16"), ("float", "float32"), ("bfloat16_t", "bfloat16"),
               ("int8_t", "int8"), ("uint8_t", "uint8"), ("int16_t", "int16"),
               ("uint16_t", "uint16"), ("int32_t", "int32"), ("uint32_t", "uint32"),
               ("int64_t", "int64"), ("uint64_t", "uint64"), ("bool", "bool_"))


def tensor_dtype(dtype, instruction: str) -> np.dtype:
    """``dtype`` as a numpy dtype for a tensor of that type.

    Raises:
        DtypeError: ``dtype`` is Python's builtin ``float`` (numpy reads it as float64,
        which no Ascend C tensor holds): Ascend C's ``float`` is spelled ``float32`` here.
    """
    if dtype is float:
        from npusim.errors import DtypeError   # local: errors imports the core lazily too
        raise DtypeError(instruction, "Python's float is numpy's float64, not Ascend C's "
                         "float: write float32 (npusim.ascendc exports Ascend C's float as "
                         "float32, docs/kernels.md 'Data types')")
    return np.dtype(dtype)


#: Bytes in one UB block: the unit of UB addresses and of DataCopy lengths.
ONE_BLK_SIZE = 32
#: Bytes processed by one vector repeat (8 blocks of 32 B).
ONE_REPEAT_BYTE_SIZE = 256
#: Largest repeatTime of one vector instruction.
MAX_REPEAT_TIMES = 255


class TPosition(enum.IntEnum):
    """Logical buffer positions (docs/reference/hardware.md §3 "Memory and alignment")."""

    GM = 0
    A1 = 1
    A2 = 2
    B1 = 3
    B2 = 4
    C1 = 5
    C2 = 6
    CO1 = 7
    CO2 = 8
    VECIN = 9
    VECOUT = 10
    VECCALC = 11
    TSCM = 12
    C2PIPE2GM = 13   # the Fixpipe buffer on A2/A3 (通用说明和约束.md, table 1)


QuePosition = TPosition


class Pipe(enum.IntEnum):
    """Hardware pipes of an AI core (docs/reference/hardware.md §3 "Pipes")."""

    PIPE_S = 0
    PIPE_V = 1
    PIPE_M = 2
    PIPE_MTE1 = 3
    PIPE_MTE2 = 4
    PIPE_MTE3 = 5
    PIPE_ALL = 6
    PIPE_FIX = 10


PIPE_S, PIPE_V, PIPE_M = Pipe.PIPE_S, Pipe.PIPE_V, Pipe.PIPE_M
PIPE_MTE1, PIPE_MTE2, PIPE_MTE3 = Pipe.PIPE_MTE1, Pipe.PIPE_MTE2, Pipe.PIPE_MTE3
PIPE_ALL, PIPE_FIX = Pipe.PIPE_ALL, Pipe.PIPE_FIX

_PIPE_BY_SHORT = {"S": PIPE_S, "V": PIPE_V, "M": PIPE_M, "MTE1": PIPE_MTE1,
                  "MTE2": PIPE_MTE2, "MTE3": PIPE_MTE3, "FIX": PIPE_FIX}


class HardEvent(enum.Enum):
    """Intra-core sync events, named SRC_DST (docs/reference/hardware.md §3 "HardEvent enum")."""

    # a member is its own singleton (equal to itself alone): hashed by identity, in C, not
    # by Enum's Python-level hash of its name (the timing replay looks up a flag by
    # (kind, event, eventID) at every SetFlag and WaitFlag: a million times at 8192^3)
    __hash__ = object.__hash__

    MTE2_MTE1 = "MTE2_MTE1"
    MTE1_MTE2 = "MTE1_MTE2"
    MTE1_M = "MTE1_M"
    M_MTE1 = "M_MTE1"
    MTE2_V = "MTE2_V"
    V_MTE2 = "V_MTE2"
    MTE3_V = "MTE3_V"
    V_MTE3 = "V_MTE3"
    M_V = "M_V"
    V_M = "V_M"
    V_V = "V_V"
    MTE3_MTE1 = "MTE3_MTE1"
    MTE1_MTE3 = "MTE1_MTE3"
    MTE1_V = "MTE1_V"
    MTE2_M = "MTE2_M"
    M_MTE2 = "M_MTE2"
    V_MTE1 = "V_MTE1"
    M_FIX = "M_FIX"
    FIX_M = "FIX_M"
    MTE3_MTE2 = "MTE3_MTE2"
    MTE2_MTE3 = "MTE2_MTE3"
    S_V = "S_V"
    V_S = "V_S"
    S_MTE2 = "S_MTE2"
    MTE2_S = "MTE2_S"
    S_MTE3 = "S_MTE3"
    MTE3_S = "MTE3_S"
    MTE2_FIX = "MTE2_FIX"
    FIX_MTE2 = "FIX_MTE2"
    FIX_S = "FIX_S"
    M_S = "M_S"
    FIX_MTE3 = "FIX_MTE3"
    MTE1_FIX = "MTE1_FIX"
    FIX_MTE1 = "FIX_MTE1"
    FIX_FIX = "FIX_FIX"

    @property
    def src(self) -> Pipe:
        """The pipe whose completed work sets the flag."""
        return _PIPE_BY_SHORT[self.value.split("_")[0]]

    @property
    def dst(self) -> Pipe:
        """The pipe that waits for the flag."""
        return _PIPE_BY_SHORT[self.value.split("_")[1]]


class CacheMode(enum.Enum):
    """L2 cache hint of a GlobalTensor (``SetL2CacheHint``; docs/reference/hardware.md §2).

    CACHE_MODE_DISABLE makes the tensor's GM accesses bypass the L2 cache. The simulator
    treats CACHE_MODE_LAST and CACHE_MODE_PERSISTENT like NORMAL (their replacement
    priorities are not published).
    """

    CACHE_MODE_NORMAL = 0
    CACHE_MODE_DISABLE = 1
    CACHE_MODE_LAST = 2
    CACHE_MODE_PERSISTENT = 4


class RoundMode(enum.Enum):
    """Cast rounding modes (Ascend C ``RoundMode``)."""

    CAST_NONE = 0   # exact casts; where precision is lost it behaves as CAST_RINT
    CAST_RINT = 1   # round to nearest, ties to even
    CAST_FLOOR = 2  # toward -inf
    CAST_CEIL = 3   # toward +inf
    CAST_ROUND = 4  # to nearest, ties away from zero
    CAST_TRUNC = 5  # toward zero
    CAST_ODD = 6    # von Neumann rounding to odd (float -> half)


@dataclass
class DataCopyParams:
    """Strided GM<->UB copy (docs/reference/hardware.md §3 "DataCopy with DataCopyParams").

    blockCount: number of blocks, [0, 4095]. blockLen: length of one block in 32 B units,
    [0, 65535]. srcStride / dstStride: gap between blocks in 32 B units, [0, 65535].
    """

    blockCount: int = 1
    blockLen: int = 0
    srcStride: int = 0
    dstStride: int = 0


@dataclass
class DataCopyExtParams:
    """DataCopyPad parameters (docs/reference/hardware.md §3 "DataCopyPad").

    blockCount: [0, 4095]. blockLen: bytes per block, [0, 2097151]. For GM->UB srcStride
    is the GM gap in bytes and dstStride the UB gap in 32 B blocks; for UB->GM srcStride
    is the UB gap in 32 B blocks and dstStride the GM gap in bytes.
    """

    blockCount: int = 1
    blockLen: int = 0
    srcStride: int = 0
    dstStride: int = 0
    rsv: int = 0


@dataclass
class DataCopyPadParams:
    """DataCopyPad's padding in the form that goes with DataCopyParams (blockLen in bytes
    for DataCopyPad): isPad, leftPadding / rightPadding elements (each at most 32 B),
    paddingValue (kernel_struct_data_copy.h). The same rules as DataCopyPadExtParams."""

    isPad: bool = False
    leftPadding: int = 0
    rightPadding: int = 0
    paddingValue: int = 0


@dataclass
class DataCopyPadExtParams:
    """Padding of DataCopyPad GM->UB: counts in elements, each at most 32 B."""

    isPad: bool = False
    leftPadding: int = 0
    rightPadding: int = 0
    paddingValue: float = 0


# -- the cube half of the AI core (npusim.ascendc.cube) -------------------------------------

class KernelMetaType(enum.IntEnum):
    """``KERNEL_TASK_TYPE_DEFAULT`` values: which cores a launch starts (设置Kernel类型.md).

    On A2/A3 AIV_ONLY starts blockDim vector cores, AIC_ONLY blockDim cube cores; MIX types
    start both. AICORE is the coupled 910A/310P core, which holds both units.
    """

    KERNEL_TYPE_AIV_ONLY = 0
    KERNEL_TYPE_AIC_ONLY = 1
    KERNEL_TYPE_MIX_AIV_1_0 = 2
    KERNEL_TYPE_MIX_AIC_1_0 = 3
    KERNEL_TYPE_MIX_AIC_1_1 = 4
    KERNEL_TYPE_MIX_AIC_1_2 = 5
    KERNEL_TYPE_AICORE = 6
    KERNEL_TYPE_VECTORCORE = 7
    KERNEL_TYPE_MIX_AICORE = 8
    KERNEL_TYPE_MIX_VECTOR_CORE = 9


@dataclass
class Nd2NzParams:
    """``DataCopy`` GM -> L1 (or VECIN) with ND -> NZ conversion (随路转换ND2NZ搬运).

    Field order is the C++ struct's. Ranges: ndNum [0, 4095]; nValue [0, 16384] rows;
    dValue [0, 65535] columns; srcNdMatrixStride [0, 65535] and srcDValue [1, 65535] in
    elements; dstNzC0Stride and dstNzNStride [1, 16384] in C0 blocks of 32 B;
    dstNzMatrixStride [0, 65535] in elements. Row j of ND matrix i moves to
    ``dst + i*dstNzMatrixStride*sizeof(T) + j*dstNzNStride*32 + c*dstNzC0Stride*32`` for
    its c-th 32 B block; the last block of a row is zero-padded to 32 B.
    """

    ndNum: int = 1
    nValue: int = 0
    dValue: int = 0
    srcNdMatrixStride: int = 0
    srcDValue: int = 0
    dstNzC0Stride: int = 0
    dstNzNStride: int = 0
    dstNzMatrixStride: int = 0


@dataclass
class LoadData2DParams:
    """``LoadData`` (Load2D) parameters, C++ field order (Load2D.md, table 2).

    startIndex: first source fractal, [0, 65535], in 512 B fractals. repeatTimes: fractals
    moved, [0, 255] (0 is a NOP). srcStride: source fractal-to-fractal stride, [0, 65535],
    512 B units (0 re-reads one fractal). sid: reserved. dstGap: destination gap from the
    end of one fractal to the start of the next, [0, 65535], 512 B units. ifTranspose:
    transpose each 16 x 16 fractal (L1 -> L0A/L0B, 16-bit types only). addrMode: 0
    (incrementing; decrementing is GM -> L1 only and not modelled).
    """

    startIndex: int = 0
    repeatTimes: int = 0
    srcStride: int = 0
    sid: int = 0
    dstGap: int = 0
    ifTranspose: bool = False
    addrMode: int = 0


@dataclass
class LoadData2dTransposeParams:
    """``LoadDataWithTranspose`` parameters, C++ field order (LoadDataWithTranspose page).

    One repeat transposes one square: 16x16 for 16-bit types (one fractal), 32x32 for
    8-bit and 16x16 for 32-bit types (two source fractals each). startIndex and srcStride
    count squares; dstGap is the 512 B gap from the end of a repeat's first destination
    fractal to the next repeat's first fractal; dstFracGap the 512 B gap between the two
    destination fractals of one repeat. repeatTimes [1, 255].
    """

    startIndex: int = 0
    repeatTimes: int = 0
    srcStride: int = 0
    dstGap: int = 0
    dstFracGap: int = 0


class MmadParams:
    """``Mmad`` parameters (Mmad.md, table 3; kernel_struct_mm.h).

    Positional arguments follow the C++ constructor ``MmadParams(m, n, k, unitFlag,
    cmatrixSource, cmatrixInitVal)``; the other fields are keywords.

    m, n, k: [0, 4095] (any 0: the instruction is not executed). cmatrixInitVal: True starts
    C at 0; False takes C's start from cmatrixSource: False = the CO1 tensor itself
    (accumulate), True = the bias table (C2). kDirectionAlign: float only, A2's k fractals
    padded to 16. isBias is deprecated (True means accumulate onto CO1). unitFlag: 0 off,
    2 / 3 the L0C hand-off to Fixpipe (:mod:`npusim.ascendc.cube.unitflag`). fmOffset,
    enSsparse and enWinogradA/B are reserved / not modelled (must stay default).
    """

    def __init__(self, m: int = 0, n: int = 0, k: int = 0, unitFlag: int = 0,
                 cmatrixSource: bool = False, cmatrixInitVal: bool = True, *,
                 isBias: bool = False, kDirectionAlign: bool = False, fmOffset: int = 0,
                 enSsparse: bool = False, enWinogradA: bool = False, enWinogradB: bool = False):
        self.m, self.n, self.k = m, n, k
        self.unitFlag = unitFlag
        self.cmatrixSource = cmatrixSource
        self.cmatrixInitVal = cmatrixInitVal
        self.isBias = isBias
        self.kDirectionAlign = kDirectionAlign
        self.fmOffset = fmOffset
        self.enSsparse = enSsparse
        self.enWinogradA = enWinogradA
        self.enWinogradB = enWinogradB

    def __repr__(self) -> str:
        return (f"MmadParams(m={self.m}, n={self.n}, k={self.k}, cmatrixInitVal="
                f"{self.cmatrixInitVal}, cmatrixSource={self.cmatrixSource})")


class QuantMode_t(enum.IntEnum):
    """Fixpipe ``quantPre`` modes (FixpipeParamsV220): conversion of the L0C value on the
    way out. Scalar modes take ``deqScalar``; V* modes a per-column uint64 table in L1."""

    NoQuant = 0
    F322F16 = 1
    F322BF16 = 2
    DEQF16 = 3
    VDEQF16 = 4
    QF322B8_PRE = 5
    VQF322B8_PRE = 6
    REQ8 = 7
    VREQ8 = 8


class CO2Layout(enum.IntEnum):
    """Fixpipe output layout: NZ keeps L0C's NZ; ROW_MAJOR converts NZ -> ND."""

    NZ = 0
    ROW_MAJOR = 1


@dataclass(frozen=True)
class FixpipeConfig:
    """``FixpipeConfig`` template argument of Fixpipe."""

    format: CO2Layout = CO2Layout.ROW_MAJOR


CFG_NZ = FixpipeConfig(CO2Layout.NZ)
CFG_ROW_MAJOR = FixpipeConfig(CO2Layout.ROW_MAJOR)


@dataclass
class FixpipeParamsV220:
    """``Fixpipe`` parameters on A2/A3, C++ field order (Fixpipe.md, table 3).

    nSize [1, 4095] and mSize (ND out [1, 8192], NZ out [1, 65535]): the part of the NZ
    source moved. srcStride [0, 65535]: rows of 16 elements (C0_Size) between the starts of
    adjacent 16-column blocks of the source. dstStride (not 0): ND out, elements per
    destination row; NZ out, 32 B blocks between adjacent column blocks. quantPre /
    deqScalar: conversion (bits [31:13] of deqScalar hold a float scale). ndNum [1, 65535]
    matrices, srcNdStride [1, 512] x 1024 B apart in L0C and dstNdStride [1, 65535]
    elements apart in the destination. reluEn: ReLU on the way out. unitFlag: 0 off, 3 (or
    2) takes L0C from a unitFlag Mmad (:mod:`npusim.ascendc.cube.unitflag`).
    isChannelSplit: float NZ output in 16 x 8 fractals (Fixpipe "f32 channel split").
    """

    nSize: int = 0
    mSize: int = 0
    srcStride: int = 0
    dstStride: int = 0
    quantPre: QuantMode_t = QuantMode_t.NoQuant
    deqScalar: int = 0
    ndNum: int = 1
    srcNdStride: int = 0
    dstNdStride: int = 0
    reluEn: bool = False
    unitFlag: int = 0
    isChannelSplit: bool = False
