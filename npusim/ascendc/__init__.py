"""The Ascend C programming surface of an AI core, in Python.

Names are Ascend C's so that a kernel reads line by line like its C++ counterpart::

    from npusim.ascendc import *

    class KernelAdd:
        def Init(self, x, y, z, tiling):
            self.pipe = TPipe()
            off = GetBlockIdx() * tiling.blockLen
            self.xGm = GlobalTensor(half)
            self.xGm.SetGlobalBuffer(x + off * 2, tiling.blockLen)
            ...
"""
from npusim.ascendc.atomic import DisableDmaAtomic, SetAtomicAdd, SetAtomicNone
from npusim.ascendc.broadcast import Broadcast
from npusim.ascendc.compare import (CMPMODE, SELMODE, Compare, CompareScalar, GetCmpMask, Select,
                                    SetCmpMask)
from npusim.ascendc.sort import (CreateVecIndex, Extract, GetMrgSortResult, IndexCast, MrgSort,
                                 MrgSortSrcList, Sort, Sort32)
from npusim.ascendc.core import GetBlockIdx, GetBlockNum
from npusim.ascendc.datacopy import DataCopy, DataCopyPad
from npusim.ascendc.pipe import GetTPipePtr, TBuf, TPipe, TQue
from npusim.ascendc.scalar import GET_TILING_DATA
from npusim.ascendc.sync import PipeBarrier, SetFlag, WaitFlag
from npusim.ascendc import sync as _sync
from npusim.ascendc.socstate import InitSocState
from npusim.ascendc.syncall import SyncAll
from npusim.ascendc.tensor import GlobalTensor, LocalTensor
from npusim.ascendc.types import (MAX_REPEAT_TIMES, ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE, PIPE_ALL,
                                  PIPE_FIX, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_S,
                                  PIPE_V, CacheMode, DataCopyExtParams, DataCopyPadExtParams,
                                  DataCopyPadParams,
                                  DataCopyParams, HardEvent, Pipe, QuePosition, RoundMode,
                                  TPosition, bfloat16_t, float32, half, int8_t, int16_t,
                                  int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t,
                                  bfloat16, bool_, float16, int8, int16, int32, int64, uint8,
                                  uint16, uint32, uint64)
from npusim.ascendc.arith import *          # noqa: F401,F403
from npusim.ascendc.reduce import *         # noqa: F401,F403
from npusim.ascendc.gather import *         # noqa: F401,F403
from npusim.ascendc.transpose import *      # noqa: F401,F403
from npusim.ascendc.lib import *            # noqa: F401,F403
from npusim.ascendc.repeat import *         # noqa: F401,F403
from npusim.ascendc import repeat as _repeat
from npusim.ascendc import arith as _arith, gather as _gather, lib as _lib, reduce as _reduce
from npusim.ascendc import transpose as _transpose
from npusim.ascendc.vector import (Abs, Add, Adds, Cast, Div, Duplicate, Ln, Max, Maxs,
                                   Min, Mins, Mul, Muls, Power, Reciprocal, Relu, Sqrt, Sub)

__all__ = [
    "CreateVecIndex", "Extract", "GetMrgSortResult", "IndexCast", "MrgSort", "MrgSortSrcList",
    "Sort", "Sort32", "Broadcast", "CMPMODE", "SELMODE", "Compare", "CompareScalar", "Select",
    "GetCmpMask", "SetCmpMask",
    "CacheMode", "DisableDmaAtomic", "SetAtomicAdd", "SetAtomicNone", "SyncAll",
    "GetBlockIdx", "GetBlockNum", "DataCopy", "DataCopyPad", "GetTPipePtr", "TBuf", "TPipe",
    "TQue", "PipeBarrier", "SetFlag", "WaitFlag", "GlobalTensor", "LocalTensor", "GET_TILING_DATA",
    "MAX_REPEAT_TIMES", "ONE_BLK_SIZE", "ONE_REPEAT_BYTE_SIZE", "PIPE_ALL", "PIPE_FIX",
    "PIPE_M", "PIPE_MTE1", "PIPE_MTE2", "PIPE_MTE3", "PIPE_S", "PIPE_V", "DataCopyExtParams",
    "DataCopyPadExtParams", "DataCopyPadParams", "DataCopyParams", "HardEvent", "Pipe",
    "QuePosition", "RoundMode",
    "TPosition", "bfloat16_t", "float32", "half", "int8_t", "int16_t", "int32_t", "int64_t",
    "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    # numpy's spellings of the same types (docs/kernels.md "Data types")
    "bfloat16", "bool_", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "Abs", "Add", "Adds", "Cast", "Div",
    "Duplicate", "Ln", "Max", "Maxs", "Min", "Mins", "Mul", "Muls", "Power",
    "Reciprocal", "Relu", "Sqrt", "Sub",
]
__all__ += [*_repeat.__all__, *_arith.__all__, *_reduce.__all__, *_gather.__all__, *_transpose.__all__,
            *_lib.__all__]
from npusim.ascendc.datacopy import Copy, CopyRepeatParams, SetPadValue  # noqa: E402
__all__ += ["Copy", "CopyRepeatParams", "SetPadValue", "InitSocState"]
from npusim.ascendc.bilinear import BilinearInterpolation  # noqa: E402
__all__ += ["BilinearInterpolation"]
from npusim.ascendc.shapeinfo import DataFormat, ShapeInfo  # noqa: E402
__all__ += ["DataFormat", "ShapeInfo"]
from npusim.ascendc.aipp import AippInputFormat, AippParams, SetAippFunctions  # noqa: E402
__all__ += ["AippInputFormat", "AippParams", "SetAippFunctions"]
from npusim.ascendc.sync import (EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3,  # noqa: E402
                                 EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7)
__all__ += [n for n in _sync.__all__ if n.startswith("EVENT_ID")]
from npusim.ascendc.cube import *           # noqa: E402,F401,F403  (the cube half)
from npusim.ascendc import cube as _cube    # noqa: E402
__all__ += _cube.__all__
from npusim.ascendc.crosscore import *      # noqa: E402,F401,F403  (mixed launches)
from npusim.ascendc import crosscore as _crosscore  # noqa: E402
__all__ += _crosscore.__all__
# the kernel checker's settings, for run_kernel(checks=...) (npusim.ascendc.checker)
from npusim.ascendc.checker import CheckerConfig  # noqa: E402
__all__ += ["CheckerConfig"]
