"""Enums, status codes and dtype helpers of the aclnn / AscendCL host API.

Every name and value here is taken verbatim from ``docs/reference/api.md``:

* §1 -- aclnn status codes (``hicann/opbase: include/nnopbase/opdev/op_errno.h``);
* §2 -- ``aclDataType`` and ``aclFormat`` (``hicann/runtime:
  include/external/acl/acl_base_rt.h``);
* §6 -- aclError codes, runtime (``ACL_ERROR_RT_*``) codes and the aclrt
  enums / flags (``acl_base_rt.h``, ``acl_rt.h``, ``rt_error_codes.h``).

Where api.md abbreviates a range with "…" only the names it actually lists
are defined; nothing is guessed.

C enums become :class:`enum.IntEnum` classes and every enumerator is also
exported as a module-level constant (``ACL_FLOAT``, ``ACL_FORMAT_ND``, ...),
so C-style code such as ``aclCreateTensor(..., ACL_FLOAT, ...)`` works.
C ``#define`` / ``static const int`` codes are plain module-level ``int``s.
"""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np

__all__: list[str] = []


def _export_enum(enum_cls: type[enum.IntEnum]) -> None:
    """Publish ``enum_cls`` and each of its members as module globals."""
    module_globals = globals()
    __all__.append(enum_cls.__name__)
    for member in enum_cls:
        module_globals[member.name] = member
        __all__.append(member.name)


def _export_ints(**codes: int) -> None:
    """Publish plain ``int`` constants (C ``#define`` / ``static const int``)."""
    module_globals = globals()
    for name, value in codes.items():
        module_globals[name] = value
        __all__.append(name)


# ---------------------------------------------------------------------------
# Typedefs (api.md §1, §2): ``typedef int32_t aclnnStatus;``,
# ``typedef int aclError;``.  Python aliases for annotations only.
# ---------------------------------------------------------------------------
aclnnStatus = int
aclError = int
__all__ += ["aclnnStatus", "aclError"]


# ---------------------------------------------------------------------------
# api.md §2: aclDataType and aclFormat (acl_base_rt.h, verbatim)
# ---------------------------------------------------------------------------
class aclDataType(enum.IntEnum):
    """``aclDataType`` of ``acl_base_rt.h`` (api.md §2). Note the numbering gaps."""

    ACL_DT_UNDEFINED = -1
    ACL_FLOAT = 0
    ACL_FLOAT16 = 1
    ACL_INT8 = 2
    ACL_INT32 = 3
    ACL_UINT8 = 4
    ACL_INT16 = 6
    ACL_UINT16 = 7
    ACL_UINT32 = 8
    ACL_INT64 = 9
    ACL_UINT64 = 10
    ACL_DOUBLE = 11
    ACL_BOOL = 12
    ACL_STRING = 13
    ACL_COMPLEX64 = 16
    ACL_COMPLEX128 = 17
    ACL_BF16 = 27
    ACL_INT4 = 29
    ACL_UINT1 = 30
    ACL_COMPLEX32 = 33
    ACL_HIFLOAT8 = 34
    ACL_FLOAT8_E5M2 = 35
    ACL_FLOAT8_E4M3FN = 36
    ACL_FLOAT8_E8M0 = 37
    ACL_FLOAT6_E3M2 = 38
    ACL_FLOAT6_E2M3 = 39
    ACL_FLOAT4_E2M1 = 40
    ACL_FLOAT4_E1M2 = 41


class aclFormat(enum.IntEnum):
    """``aclFormat`` of ``acl_base_rt.h`` (api.md §2).

    ``ACL_FRACTAL_Z_3D`` really has no ``FORMAT_`` infix in CANN.
    """

    ACL_FORMAT_UNDEFINED = -1
    ACL_FORMAT_NCHW = 0
    ACL_FORMAT_NHWC = 1
    ACL_FORMAT_ND = 2
    ACL_FORMAT_NC1HWC0 = 3
    ACL_FORMAT_FRACTAL_Z = 4
    ACL_FORMAT_NC1HWC0_C04 = 12
    ACL_FORMAT_HWCN = 16
    ACL_FORMAT_NDHWC = 27
    ACL_FORMAT_FRACTAL_NZ = 29
    ACL_FORMAT_NCDHW = 30
    ACL_FORMAT_NDC1HWC0 = 32
    ACL_FRACTAL_Z_3D = 33
    ACL_FORMAT_NC = 35
    ACL_FORMAT_NCL = 47
    ACL_FORMAT_FRACTAL_NZ_C0_16 = 50
    ACL_FORMAT_FRACTAL_NZ_C0_32 = 51
    ACL_FORMAT_FRACTAL_NZ_C0_2 = 52
    ACL_FORMAT_FRACTAL_NZ_C0_4 = 53
    ACL_FORMAT_FRACTAL_NZ_C0_8 = 54


_export_enum(aclDataType)
_export_enum(aclFormat)


# ---------------------------------------------------------------------------
# api.md §1: aclnn status codes (op_errno.h #defines; OK from acl_meta.h)
# ---------------------------------------------------------------------------
_export_ints(
    OK=0,
    ACLNN_SUCCESS=0,
    ACLNN_ERR_PARAM_NULLPTR=161001,
    ACLNN_ERR_PARAM_INVALID=161002,
    ACLNN_ERR_RUNTIME_ERROR=361001,
    ACLNN_ERR_INNER=561000,
    ACLNN_ERR_INNER_INFERSHAPE_ERROR=561001,
    ACLNN_ERR_INNER_TILING_ERROR=561002,
    ACLNN_ERR_INNER_FIND_KERNEL_ERROR=561003,
    ACLNN_ERR_INNER_CREATE_EXECUTOR=561101,
    ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR=561102,
    ACLNN_ERR_INNER_NULLPTR=561103,
    ACLNN_ERR_INNER_WRONG_ATTR_INFO_SIZE=561104,
    ACLNN_ERR_INNER_KEY_CONFILICT=561105,  # deprecated misspelling, kept by CANN
    ACLNN_ERR_INNER_KEY_CONFLICT=561105,
    ACLNN_ERR_INNER_INVALID_IMPL_MODE=561106,
    ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND=561107,
    ACLNN_ERR_INNER_LOAD_JSON_FAILED=561108,
    ACLNN_ERR_INNER_JSON_VALUE_NOT_FOUND=561109,
    ACLNN_ERR_INNER_JSON_FORMAT_INVALID=561110,
    ACLNN_ERR_INNER_JSON_DTYPE_INVALID=561111,
    ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND=561112,
    ACLNN_ERR_INNER_OP_FILE_INVALID=561113,
    ACLNN_ERR_INNER_ATTR_NUM_OUT_OF_BOUND=561114,
    ACLNN_ERR_INNER_ATTR_LEN_NOT_ENOUGH=561115,
    ACLNN_ERR_INNER_INPUT_NUM_IN_JSON_TOO_LARGE=561116,
    ACLNN_ERR_INNER_INPUT_JSON_IS_NULL=561117,
    ACLNN_ERR_INNER_STATIC_WORKSPACE_INVALID=561118,
    ACLNN_ERR_INNER_STATIC_BLOCK_DIM_INVALID=561119,
)


# ---------------------------------------------------------------------------
# api.md §6 "aclError codes" (acl_base_rt.h, static const int).  Only the
# names api.md lists; 100011-100031 are elided there and are not defined.
# ---------------------------------------------------------------------------
_export_ints(
    ACL_SUCCESS=0,
    ACL_ERROR_NONE=0,
    # 1000xx: parameter and initialisation errors
    ACL_ERROR_INVALID_PARAM=100000,
    ACL_ERROR_UNINITIALIZE=100001,
    ACL_ERROR_REPEAT_INITIALIZE=100002,
    ACL_ERROR_INVALID_FILE=100003,
    ACL_ERROR_WRITE_FILE=100004,
    ACL_ERROR_INVALID_FILE_SIZE=100005,
    ACL_ERROR_PARSE_FILE=100006,
    ACL_ERROR_FILE_MISSING_ATTR=100007,
    ACL_ERROR_FILE_ATTR_INVALID=100008,
    ACL_ERROR_INVALID_DUMP_CONFIG=100009,
    ACL_ERROR_INVALID_PROFILING_CONFIG=100010,
    ACL_ERROR_INVALID_QUEUE_ID=100032,
    ACL_ERROR_REPEAT_SUBSCRIBE=100033,
    ACL_ERROR_STREAM_NOT_SUBSCRIBE=100034,
    ACL_ERROR_THREAD_NOT_SUBSCRIBE=100035,
    ACL_ERROR_WAIT_CALLBACK_TIMEOUT=100036,
    ACL_ERROR_REPEAT_FINALIZE=100037,
    ACL_ERROR_NOT_STATIC_AIPP=100038,
    ACL_ERROR_COMPILING_STUB_MODE=100039,
    ACL_ERROR_GROUP_NOT_SET=100040,
    ACL_ERROR_GROUP_NOT_CREATE=100041,
    ACL_ERROR_PROF_ALREADY_RUN=100042,
    ACL_ERROR_PROF_NOT_RUN=100043,
    ACL_ERROR_DUMP_ALREADY_RUN=100044,
    ACL_ERROR_DUMP_NOT_RUN=100045,
    # 1480xx
    ACL_ERROR_PROF_REPEAT_SUBSCRIBE=148046,
    ACL_ERROR_PROF_API_CONFLICT=148047,
    ACL_ERROR_INVALID_MAX_OPQUEUE_NUM_CONFIG=148048,
    ACL_ERROR_INVALID_OPP_PATH=148049,
    ACL_ERROR_OP_UNSUPPORTED_DYNAMIC=148050,
    ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED=148051,
    ACL_ERROR_UNSUPPORTED_JPEG=148052,
    ACL_ERROR_INVALID_BUNDLE_MODEL_ID=148053,
    # 2000xx
    ACL_ERROR_BAD_ALLOC=200000,
    ACL_ERROR_API_NOT_SUPPORT=200001,
    ACL_ERROR_INVALID_DEVICE=200002,
    ACL_ERROR_MEMORY_ADDRESS_UNALIGNED=200003,
    ACL_ERROR_RESOURCE_NOT_MATCH=200004,
    ACL_ERROR_INVALID_RESOURCE_HANDLE=200005,
    ACL_ERROR_FEATURE_UNSUPPORTED=200006,
    ACL_ERROR_PROF_MODULES_UNSUPPORTED=200007,
    # 300000
    ACL_ERROR_STORAGE_OVER_LIMIT=300000,
    # 5000xx
    ACL_ERROR_INTERNAL_ERROR=500000,
    ACL_ERROR_FAILURE=500001,
    ACL_ERROR_GE_FAILURE=500002,
    ACL_ERROR_RT_FAILURE=500003,
    ACL_ERROR_DRV_FAILURE=500004,
    ACL_ERROR_PROFILING_FAILURE=500005,
)


# ---------------------------------------------------------------------------
# api.md §6 "Runtime error codes" (rt_error_codes.h #defines).  Only the
# names api.md lists: 107024-107045 (capture codes) and the elided 5070xx
# codes are not defined.
# ---------------------------------------------------------------------------
_export_ints(
    ACL_RT_SUCCESS=0,
    # 1070xx: parameter errors
    ACL_ERROR_RT_PARAM_INVALID=107000,
    ACL_ERROR_RT_INVALID_DEVICEID=107001,
    ACL_ERROR_RT_CONTEXT_NULL=107002,
    ACL_ERROR_RT_STREAM_CONTEXT=107003,
    ACL_ERROR_RT_MODEL_CONTEXT=107004,
    ACL_ERROR_RT_STREAM_MODEL=107005,
    ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID=107006,
    ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL=107007,
    ACL_ERROR_RT_ADDR_UNALIGNED=107008,
    ACL_ERROR_RT_FILE_OPEN=107009,
    ACL_ERROR_RT_FILE_WRITE=107010,
    ACL_ERROR_RT_STREAM_SUBSCRIBE=107011,
    ACL_ERROR_RT_THREAD_SUBSCRIBE=107012,
    ACL_ERROR_RT_GROUP_NOT_SET=107013,
    ACL_ERROR_RT_GROUP_NOT_CREATE=107014,
    ACL_ERROR_RT_STREAM_NO_CB_REG=107015,
    ACL_ERROR_RT_INVALID_MEMORY_TYPE=107016,
    ACL_ERROR_RT_INVALID_HANDLE=107017,
    ACL_ERROR_RT_INVALID_MALLOC_TYPE=107018,
    ACL_ERROR_RT_WAIT_TIMEOUT=107019,
    ACL_ERROR_RT_TASK_TIMEOUT=107020,
    ACL_ERROR_RT_SYSPARAMOPT_NOT_SET=107021,
    ACL_ERROR_RT_DEVICE_TASK_ABORT=107022,
    ACL_ERROR_RT_STREAM_ABORT=107023,
    # 2070xx: resource errors
    ACL_ERROR_RT_FEATURE_NOT_SUPPORT=207000,
    ACL_ERROR_RT_MEMORY_ALLOCATION=207001,
    ACL_ERROR_RT_MEMORY_FREE=207002,
    ACL_ERROR_RT_AICORE_OVER_FLOW=207003,
    ACL_ERROR_RT_NO_DEVICE=207004,
    ACL_ERROR_RT_RESOURCE_ALLOC_FAIL=207005,
    ACL_ERROR_RT_NO_PERMISSION=207006,
    ACL_ERROR_RT_NO_EVENT_RESOURCE=207007,
    ACL_ERROR_RT_NO_STREAM_RESOURCE=207008,
    ACL_ERROR_RT_NO_NOTIFY_RESOURCE=207009,
    ACL_ERROR_RT_NO_MODEL_RESOURCE=207010,
    ACL_ERROR_RT_NO_CDQ_RESOURCE=207011,
    ACL_ERROR_RT_OVER_LIMIT=207012,
    ACL_ERROR_RT_QUEUE_EMPTY=207013,
    ACL_ERROR_RT_QUEUE_FULL=207014,
    ACL_ERROR_RT_REPEATED_INIT=207015,
    ACL_ERROR_RT_AIVEC_OVER_FLOW=207016,
    ACL_ERROR_RT_OVER_FLOW=207017,
    ACL_ERROR_RT_DEVICE_OOM=207018,
    ACL_ERROR_RT_FEATURE_NOT_SUPPORT_UPDATE_OP=207019,
    ACL_ERROR_RT_TIMEOUT=207020,
    ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED=207021,
    # 5070xx: internal errors
    ACL_ERROR_RT_INTERNAL_ERROR=507000,
    ACL_ERROR_RT_TS_ERROR=507001,
    ACL_ERROR_RT_STREAM_TASK_FULL=507002,
    ACL_ERROR_RT_STREAM_TASK_EMPTY=507003,
    ACL_ERROR_RT_STREAM_NOT_COMPLETE=507004,
    ACL_ERROR_RT_END_OF_SEQUENCE=507005,
    ACL_ERROR_RT_EVENT_NOT_COMPLETE=507006,
    ACL_ERROR_RT_CONTEXT_RELEASE_ERROR=507007,
    ACL_ERROR_RT_SOC_VERSION=507008,
    ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT=507009,
    ACL_ERROR_RT_LOST_HEARTBEAT=507010,
    ACL_ERROR_RT_MODEL_EXECUTE=507011,
    ACL_ERROR_RT_REPORT_TIMEOUT=507012,
    ACL_ERROR_RT_SYS_DMA=507013,
    ACL_ERROR_RT_AICORE_TIMEOUT=507014,
    ACL_ERROR_RT_AICORE_EXCEPTION=507015,
    ACL_ERROR_RT_AICORE_TRAP_EXCEPTION=507016,
    ACL_ERROR_RT_AICPU_TIMEOUT=507017,
    ACL_ERROR_RT_AICPU_EXCEPTION=507018,
    ACL_ERROR_RT_STREAM_SYNC_TIMEOUT=507046,
    ACL_ERROR_RT_EVENT_SYNC_TIMEOUT=507047,
    ACL_ERROR_RT_DEVICE_MEM_ERROR=507053,
    ACL_ERROR_RT_DRV_INTERNAL_ERROR=507899,
    ACL_ERROR_RT_AICPU_INTERNAL_ERROR=507900,
    ACL_ERROR_RT_CCU_EXCEPTION=507916,
)


# ---------------------------------------------------------------------------
# api.md §6 "Enums" (acl_rt.h)
# ---------------------------------------------------------------------------
class aclrtMemcpyKind(enum.IntEnum):
    """``aclrtMemcpyKind`` (api.md §6)."""

    ACL_MEMCPY_HOST_TO_HOST = 0
    ACL_MEMCPY_HOST_TO_DEVICE = 1
    ACL_MEMCPY_DEVICE_TO_HOST = 2
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3
    ACL_MEMCPY_DEFAULT = 4
    ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5
    ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6
    ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7


class aclrtMemMallocPolicy(enum.IntEnum):
    """``aclrtMemMallocPolicy`` (api.md §6).

    The ``ACL_MEM_TYPE_*`` / ``ACL_MEM_ACCESS_*`` members are bit flags that
    callers OR into a page policy; the result of ``|`` is a plain ``int``.
    """

    ACL_MEM_MALLOC_HUGE_FIRST = 0
    ACL_MEM_MALLOC_HUGE_ONLY = 1
    ACL_MEM_MALLOC_NORMAL_ONLY = 2
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3
    ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5
    ACL_MEM_MALLOC_HUGE1G_ONLY = 6
    ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7
    ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x100
    ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000
    ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000


class aclrtMemAttr(enum.IntEnum):
    """``aclrtMemAttr`` (api.md §6).

    api.md names 0-5 and the last member ``ACL_MEM_P2P_HUGE1G`` = 17; the
    members 6-16 are elided there and are not defined here.
    """

    ACL_DDR_MEM = 0
    ACL_HBM_MEM = 1
    ACL_DDR_MEM_HUGE = 2
    ACL_DDR_MEM_NORMAL = 3
    ACL_HBM_MEM_HUGE = 4
    ACL_HBM_MEM_NORMAL = 5
    ACL_MEM_P2P_HUGE1G = 17


class aclrtEventRecordedStatus(enum.IntEnum):
    """``aclrtEventRecordedStatus`` (api.md §6)."""

    ACL_EVENT_RECORDED_STATUS_NOT_READY = 0
    ACL_EVENT_RECORDED_STATUS_COMPLETE = 1


class aclrtStreamStatus(enum.IntEnum):
    """``aclrtStreamStatus`` (api.md §6). Note: COMPLETE is 0 here."""

    ACL_STREAM_STATUS_COMPLETE = 0
    ACL_STREAM_STATUS_NOT_READY = 1


class aclSysParamOpt(enum.IntEnum):
    """``aclSysParamOpt`` for ``aclrtCtxSetSysParamOpt`` (api.md §6)."""

    ACL_OPT_DETERMINISTIC = 0


class aclrtRunMode(enum.IntEnum):
    """``aclrtRunMode`` (what ``acl.rt.get_run_mode`` returns): ACL_DEVICE = 0, the
    software stack runs on the device's control CPU; ACL_HOST = 1, on the host CPU
    (hiascend "aclrtRunMode", aclpythondevg_01_0920). A2/A3 and Atlas training products
    support ACL_HOST only."""

    ACL_DEVICE = 0
    ACL_HOST = 1


for _enum_cls in (aclrtMemcpyKind, aclrtMemMallocPolicy, aclrtMemAttr,
                  aclrtEventRecordedStatus, aclrtStreamStatus, aclSysParamOpt, aclrtRunMode):
    _export_enum(_enum_cls)
del _enum_cls

# Event flags for aclrtCreateEventWithFlag / aclrtCreateEventExWithFlag and
# stream flags for aclrtCreateStreamWithConfig (api.md §6; only those listed).
_export_ints(
    ACL_EVENT_SYNC=0x1,
    ACL_EVENT_CAPTURE_STREAM_PROGRESS=0x2,
    ACL_EVENT_TIME_LINE=0x8,
    ACL_EVENT_DEVICE_USE_ONLY=0x10,
    ACL_EVENT_EXTERNAL=0x20,
    ACL_EVENT_IPC=0x40,
    ACL_STREAM_FAST_LAUNCH=0x1,
    ACL_STREAM_FAST_SYNC=0x2,
)


# ---------------------------------------------------------------------------
# dtype helpers
# ---------------------------------------------------------------------------
ACL_TO_NUMPY: dict[aclDataType, np.dtype] = {
    aclDataType.ACL_FLOAT: np.dtype(np.float32),
    aclDataType.ACL_FLOAT16: np.dtype(np.float16),
    aclDataType.ACL_BF16: np.dtype(ml_dtypes.bfloat16),
    aclDataType.ACL_INT8: np.dtype(np.int8),
    aclDataType.ACL_INT16: np.dtype(np.int16),
    aclDataType.ACL_INT32: np.dtype(np.int32),
    aclDataType.ACL_INT64: np.dtype(np.int64),
    aclDataType.ACL_UINT8: np.dtype(np.uint8),
    aclDataType.ACL_UINT16: np.dtype(np.uint16),
    aclDataType.ACL_UINT32: np.dtype(np.uint32),
    aclDataType.ACL_UINT64: np.dtype(np.uint64),
    aclDataType.ACL_DOUBLE: np.dtype(np.float64),
    aclDataType.ACL_BOOL: np.dtype(np.bool_),
    aclDataType.ACL_COMPLEX64: np.dtype(np.complex64),
    aclDataType.ACL_COMPLEX128: np.dtype(np.complex128),
}
"""aclDataType -> numpy dtype for every dtype the simulator can hold in numpy.

Unmapped on purpose: ACL_DT_UNDEFINED, ACL_STRING, ACL_INT4, ACL_UINT1,
ACL_COMPLEX32, ACL_HIFLOAT8 and the FLOAT8/6/4 formats.
"""

_NUMPY_TO_ACL: dict[np.dtype, aclDataType] = {v: k for k, v in ACL_TO_NUMPY.items()}

__all__ += ["ACL_TO_NUMPY", "acl_dtype_to_numpy", "numpy_to_acl_dtype",
            "aclDataTypeSize", "to_acl_data_type", "to_acl_format"]


def to_acl_data_type(value: int) -> aclDataType:
    """Return ``value`` (an int or an :class:`aclDataType`) as the enum.

    Raises ``ValueError`` naming the value when it is not an aclDataType
    enumerator, and ``TypeError`` when it is not an integer (``bool`` is
    rejected too).
    """
    return _to_enum(aclDataType, value)


def to_acl_format(value: int) -> aclFormat:
    """Return ``value`` (an int or an :class:`aclFormat`) as the enum.

    Raises ``ValueError`` / ``TypeError`` like :func:`to_acl_data_type`.
    """
    return _to_enum(aclFormat, value)


def _to_enum(enum_cls: type[enum.IntEnum], value):
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{enum_cls.__name__} must be an int, "
                        f"got {type(value).__name__} {value!r}")
    try:
        return enum_cls(int(value))
    except ValueError:
        raise ValueError(f"{int(value)} is not a valid {enum_cls.__name__}") from None


def acl_dtype_to_numpy(dt: int) -> np.dtype:
    """Return the numpy dtype that holds values of aclDataType ``dt``.

    ``dt`` may be an :class:`aclDataType` or its int value. Raises
    ``ValueError`` naming the dtype when it has no numpy equivalent in the
    simulator (see :data:`ACL_TO_NUMPY`) or is not an aclDataType at all.
    """
    acl_dt = to_acl_data_type(dt)
    try:
        return ACL_TO_NUMPY[acl_dt]
    except KeyError:
        raise ValueError(f"aclDataType {acl_dt.name} ({int(acl_dt)}) has no numpy dtype "
                         "in the simulator") from None


def numpy_to_acl_dtype(np_dtype) -> aclDataType:
    """Return the aclDataType for a numpy dtype (or anything ``np.dtype()`` takes).

    Examples: ``np.float32`` -> ``ACL_FLOAT``, ``ml_dtypes.bfloat16`` ->
    ``ACL_BF16``, ``"int64"`` -> ``ACL_INT64``. Byte order is ignored
    (``">f4"`` -> ``ACL_FLOAT``). Raises ``ValueError`` naming the dtype when
    it has no aclDataType in :data:`ACL_TO_NUMPY`.
    """
    dt = np.dtype(np_dtype)
    if dt.byteorder not in ("=", "|"):
        dt = dt.newbyteorder("=")
    try:
        return _NUMPY_TO_ACL[dt]
    except KeyError:
        raise ValueError(f"numpy dtype {dt} has no aclDataType in the simulator") from None


_TYPE_SIZE: dict[aclDataType, int] = {
    aclDataType.ACL_DT_UNDEFINED: 0,
    aclDataType.ACL_STRING: 0,
    aclDataType.ACL_BOOL: 1,
    aclDataType.ACL_INT8: 1,
    aclDataType.ACL_UINT8: 1,
    aclDataType.ACL_HIFLOAT8: 1,
    aclDataType.ACL_FLOAT8_E5M2: 1,
    aclDataType.ACL_FLOAT8_E4M3FN: 1,
    aclDataType.ACL_FLOAT8_E8M0: 1,
    # Sub-byte types: one byte each (see aclDataTypeSize).
    aclDataType.ACL_INT4: 1,
    aclDataType.ACL_UINT1: 1,
    aclDataType.ACL_FLOAT6_E3M2: 1,
    aclDataType.ACL_FLOAT6_E2M3: 1,
    aclDataType.ACL_FLOAT4_E2M1: 1,
    aclDataType.ACL_FLOAT4_E1M2: 1,
    aclDataType.ACL_FLOAT16: 2,
    aclDataType.ACL_INT16: 2,
    aclDataType.ACL_UINT16: 2,
    aclDataType.ACL_BF16: 2,
    aclDataType.ACL_FLOAT: 4,
    aclDataType.ACL_INT32: 4,
    aclDataType.ACL_UINT32: 4,
    aclDataType.ACL_COMPLEX32: 4,
    aclDataType.ACL_INT64: 8,
    aclDataType.ACL_UINT64: 8,
    aclDataType.ACL_DOUBLE: 8,
    aclDataType.ACL_COMPLEX64: 8,
    aclDataType.ACL_COMPLEX128: 16,
}


def aclDataTypeSize(dataType: int) -> int:
    """Size in bytes of one element of ``dataType``.

    Mirrors ``size_t aclDataTypeSize(aclDataType dataType);`` (api.md §2,
    ``acl_base_rt.h``); the table follows ``aclDataTypeSizeImpl`` in
    ``hicann/runtime: src/acl/aclrt_impl/data_buffer.cpp``:

    * 0 for ``ACL_DT_UNDEFINED`` and ``ACL_STRING``;
    * 1 for BOOL, INT8, UINT8, HIFLOAT8 and the FLOAT8 formats;
    * 1 for the sub-byte ``ACL_INT4`` and ``ACL_UINT1`` (as in CANN);
    * 1 for the sub-byte ``ACL_FLOAT6_*`` and ``ACL_FLOAT4_*`` -- **[R]**
      simulator choice: CANN's switch has no case for them, so they fall
      into its ``default`` branch and return 8 there;
    * 2 for FLOAT16, INT16, UINT16, BF16; 4 for FLOAT, INT32, UINT32,
      COMPLEX32; 8 for INT64, UINT64, DOUBLE, COMPLEX64; 16 for COMPLEX128.

    Sub-byte sizes are per element, so ``numel * aclDataTypeSize`` over-counts
    packed INT4/UINT1/FP4/FP6 storage. ``dataType`` may be the enum or its
    int; a value that is not an aclDataType raises ``ValueError`` (CANN would
    return 8 from its ``default`` branch).
    """
    return _TYPE_SIZE[to_acl_data_type(dataType)]
