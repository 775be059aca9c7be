"""Ascend C enumerations and value types: data types, positions, pipes, events, round
modes and the copy-parameter structs.

Sources: ``reference/hardware.md`` §3 (positions, pipes, HardEvent, DataCopy parameter
ranges) and §2 (pipe assignment). Names are Ascend C's.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import ml_dtypes
import numpy as np

# -- data types (Ascend C spellings; ``float`` would shadow the Python builtin) ------------
half = np.dtype(np.float16)
float32 = np.dtype(np.float32)
bfloat16_t = np.dtype(ml_dtypes.bfloat16)
int8_t = np.dtype(np.int8)
uint8_t = np.dtype(np.uint8)
int16_t = np.dtype(np.int16)
uint16_t = np.dtype(np.uint16)
int32_t = np.dtype(np.int32)
uint32_t = np.dtype(np.uint32)
int64_t = np.dtype(np.int64)
uint64_t = np.dtype(np.uint64)

#: Bytes in one UB block: the unit of UB addresses and of DataCopy lengths.
ONE_BLK_SIZE = 32
#: Bytes processed by one vector repeat (8 blocks of 32 B).
ONE_REPEAT_BYTE_SIZE = 256
#: Largest repeatTime of one vector instruction.
MAX_REPEAT_TIMES = 255


class TPosition(enum.IntEnum):
    """Logical buffer positions (reference/hardware.md §3 "Memory and alignment")."""

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


QuePosition = TPosition


class Pipe(enum.IntEnum):
    """Hardware pipes of an AI core (reference/hardware.md §3 "Pipes")."""

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
    """Intra-core sync events, named SRC_DST (reference/hardware.md §3 "HardEvent enum")."""

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
    """L2 cache hint of a GlobalTensor (``SetL2CacheHint``; reference/hardware.md §2).

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
    """Strided GM<->UB copy (reference/hardware.md §3 "DataCopy with DataCopyParams").

    blockCount: number of blocks, [0, 4095]. blockLen: length of one block in 32 B units,
    [0, 65535]. srcStride / dstStride: gap between blocks in 32 B units, [0, 65535].
    """

    blockCount: int = 1
    blockLen: int = 0
    srcStride: int = 0
    dstStride: int = 0


@dataclass
class DataCopyExtParams:
    """DataCopyPad parameters (reference/hardware.md §3 "DataCopyPad").

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
class DataCopyPadExtParams:
    """Padding of DataCopyPad GM->UB: counts in elements, each at most 32 B."""

    isPad: bool = False
    leftPadding: int = 0
    rightPadding: int = 0
    paddingValue: float = 0
