"""Tests of aclnn.constants, aclnn.errmsg and aclnn.tensor.

Every expected number is typed in by hand from docs/reference/api.md (§1, §2, §6)
or computed by hand in a comment; none is read back from the module under test.
"""

import threading

import ml_dtypes
import numpy as np
import pytest

from aclnn import constants as C
from aclnn import errmsg
from aclnn.constants import (
    ACL_TO_NUMPY,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_SUCCESS,
    aclDataType,
    aclDataTypeSize,
    aclFormat,
    acl_dtype_to_numpy,
    numpy_to_acl_dtype,
)
from aclnn.tensor import (
    aclBoolArray,
    aclCreateBoolArray,
    aclCreateFloatArray,
    aclCreateIntArray,
    aclCreateScalar,
    aclCreateScalarList,
    aclCreateTensor,
    aclCreateTensorList,
    aclDestroyBoolArray,
    aclDestroyFloatArray,
    aclDestroyIntArray,
    aclDestroyScalar,
    aclDestroyScalarList,
    aclDestroyTensor,
    aclDestroyTensorList,
    aclFloatArray,
    aclGetBoolArraySize,
    aclGetDataType,
    aclGetFloatArraySize,
    aclGetFormat,
    aclGetIntArraySize,
    aclGetRawTensorAddr,
    aclGetScalarListSize,
    aclGetStorageShape,
    aclGetTensorListSize,
    aclGetViewOffset,
    aclGetViewShape,
    aclGetViewStrides,
    aclInitTensor,
    aclIntArray,
    aclScalar,
    aclSetRawTensorAddr,
    aclTensor,
    contiguous_strides,
)


@pytest.fixture(autouse=True)
def _clean_error_messages():
    errmsg.set_err_msg_mode(errmsg.ERR_MSG_MODE_THREAD)
    errmsg.clear()
    yield
    errmsg.set_err_msg_mode(errmsg.ERR_MSG_MODE_THREAD)
    errmsg.clear()


def _contiguous_float(shape, addr=0x1000):
    return aclCreateTensor(shape, C.ACL_FLOAT, None, 0, C.ACL_FORMAT_ND, shape, addr)


# ---------------------------------------------------------------------------
# Enum values and codes (api.md §1, §2, §6), typed in by hand
# ---------------------------------------------------------------------------
def test_spot_check_required_values():
    assert C.ACL_BF16 == 27
    assert C.ACL_FORMAT_ND == 2
    assert C.ACL_FORMAT_NCL == 47
    assert C.ACLNN_ERR_PARAM_NULLPTR == 161001
    assert C.ACL_ERROR_RT_MEMORY_ALLOCATION == 207001
    assert C.ACL_MEMCPY_DEVICE_TO_HOST == 2
    assert C.ACL_FLOAT == 0
    assert C.ACL_DT_UNDEFINED == -1
    assert C.ACL_FLOAT4_E1M2 == 41
    assert C.ACL_FRACTAL_Z_3D == 33
    assert C.ACL_FORMAT_UNDEFINED == -1
    assert C.ACLNN_ERR_PARAM_INVALID == 161002
    assert C.ACLNN_ERR_INNER_STATIC_BLOCK_DIM_INVALID == 561119
    assert C.ACL_ERROR_INVALID_PARAM == 100000
    assert C.ACL_ERROR_RT_INVALID_DEVICEID == 107001
    assert C.ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID == 107006
    assert C.ACL_ERROR_RT_EVENT_NOT_COMPLETE == 507006
    assert C.ACL_ERROR_RT_MEMORY_FREE == 207002
    assert C.ACL_ERROR_RT_AICORE_EXCEPTION == 507015
    assert C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT == 507046
    assert C.ACL_MEM_TYPE_HIGH_BAND_WIDTH == 0x1000
    assert C.ACL_EVENT_TIME_LINE == 0x8


def test_acl_data_type_is_exactly_api_md():
    expected = {
        "ACL_DT_UNDEFINED": -1, "ACL_FLOAT": 0, "ACL_FLOAT16": 1, "ACL_INT8": 2,
        "ACL_INT32": 3, "ACL_UINT8": 4, "ACL_INT16": 6, "ACL_UINT16": 7, "ACL_UINT32": 8,
        "ACL_INT64": 9, "ACL_UINT64": 10, "ACL_DOUBLE": 11, "ACL_BOOL": 12, "ACL_STRING": 13,
        "ACL_COMPLEX64": 16, "ACL_COMPLEX128": 17, "ACL_BF16": 27, "ACL_INT4": 29,
        "ACL_UINT1": 30, "ACL_COMPLEX32": 33, "ACL_HIFLOAT8": 34, "ACL_FLOAT8_E5M2": 35,
        "ACL_FLOAT8_E4M3FN": 36, "ACL_FLOAT8_E8M0": 37, "ACL_FLOAT6_E3M2": 38,
        "ACL_FLOAT6_E2M3": 39, "ACL_FLOAT4_E2M1": 40, "ACL_FLOAT4_E1M2": 41,
    }
    # __members__ also lists aliases, so a duplicated value would show up here.
    assert {n: int(m) for n, m in aclDataType.__members__.items()} == expected
    for name, value in expected.items():
        assert getattr(C, name) is aclDataType[name]
        assert getattr(C, name) == value


def test_acl_format_is_exactly_api_md():
    expected = {
        "ACL_FORMAT_UNDEFINED": -1, "ACL_FORMAT_NCHW": 0, "ACL_FORMAT_NHWC": 1,
        "ACL_FORMAT_ND": 2, "ACL_FORMAT_NC1HWC0": 3, "ACL_FORMAT_FRACTAL_Z": 4,
        "ACL_FORMAT_NC1HWC0_C04": 12, "ACL_FORMAT_HWCN": 16, "ACL_FORMAT_NDHWC": 27,
        "ACL_FORMAT_FRACTAL_NZ": 29, "ACL_FORMAT_NCDHW": 30, "ACL_FORMAT_NDC1HWC0": 32,
        "ACL_FRACTAL_Z_3D": 33, "ACL_FORMAT_NC": 35, "ACL_FORMAT_NCL": 47,
        "ACL_FORMAT_FRACTAL_NZ_C0_16": 50, "ACL_FORMAT_FRACTAL_NZ_C0_32": 51,
        "ACL_FORMAT_FRACTAL_NZ_C0_2": 52, "ACL_FORMAT_FRACTAL_NZ_C0_4": 53,
        "ACL_FORMAT_FRACTAL_NZ_C0_8": 54,
    }
    assert {n: int(m) for n, m in aclFormat.__members__.items()} == expected
    for name in expected:
        assert getattr(C, name) is aclFormat[name]


def test_aclnn_status_codes_are_exactly_api_md():
    expected = {
        "OK": 0, "ACLNN_SUCCESS": 0, "ACLNN_ERR_PARAM_NULLPTR": 161001,
        "ACLNN_ERR_PARAM_INVALID": 161002, "ACLNN_ERR_RUNTIME_ERROR": 361001,
        "ACLNN_ERR_INNER": 561000, "ACLNN_ERR_INNER_INFERSHAPE_ERROR": 561001,
        "ACLNN_ERR_INNER_TILING_ERROR": 561002, "ACLNN_ERR_INNER_FIND_KERNEL_ERROR": 561003,
        "ACLNN_ERR_INNER_CREATE_EXECUTOR": 561101, "ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR": 561102,
        "ACLNN_ERR_INNER_NULLPTR": 561103, "ACLNN_ERR_INNER_WRONG_ATTR_INFO_SIZE": 561104,
        "ACLNN_ERR_INNER_KEY_CONFILICT": 561105, "ACLNN_ERR_INNER_KEY_CONFLICT": 561105,
        "ACLNN_ERR_INNER_INVALID_IMPL_MODE": 561106,
        "ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND": 561107,
        "ACLNN_ERR_INNER_LOAD_JSON_FAILED": 561108,
        "ACLNN_ERR_INNER_JSON_VALUE_NOT_FOUND": 561109,
        "ACLNN_ERR_INNER_JSON_FORMAT_INVALID": 561110,
        "ACLNN_ERR_INNER_JSON_DTYPE_INVALID": 561111,
        "ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND": 561112,
        "ACLNN_ERR_INNER_OP_FILE_INVALID": 561113,
        "ACLNN_ERR_INNER_ATTR_NUM_OUT_OF_BOUND": 561114,
        "ACLNN_ERR_INNER_ATTR_LEN_NOT_ENOUGH": 561115,
        "ACLNN_ERR_INNER_INPUT_NUM_IN_JSON_TOO_LARGE": 561116,
        "ACLNN_ERR_INNER_INPUT_JSON_IS_NULL": 561117,
        "ACLNN_ERR_INNER_STATIC_WORKSPACE_INVALID": 561118,
        "ACLNN_ERR_INNER_STATIC_BLOCK_DIM_INVALID": 561119,
    }
    assert {n: getattr(C, n) for n in expected} == expected
    assert all(type(getattr(C, n)) is int for n in expected)


def test_acl_error_codes_are_exactly_api_md():
    expected = {
        "ACL_SUCCESS": 0, "ACL_ERROR_NONE": 0,
        "ACL_ERROR_INVALID_PARAM": 100000, "ACL_ERROR_UNINITIALIZE": 100001,
        "ACL_ERROR_REPEAT_INITIALIZE": 100002, "ACL_ERROR_INVALID_FILE": 100003,
        "ACL_ERROR_WRITE_FILE": 100004, "ACL_ERROR_INVALID_FILE_SIZE": 100005,
        "ACL_ERROR_PARSE_FILE": 100006, "ACL_ERROR_FILE_MISSING_ATTR": 100007,
        "ACL_ERROR_FILE_ATTR_INVALID": 100008, "ACL_ERROR_INVALID_DUMP_CONFIG": 100009,
        "ACL_ERROR_INVALID_PROFILING_CONFIG": 100010, "ACL_ERROR_INVALID_QUEUE_ID": 100032,
        "ACL_ERROR_REPEAT_SUBSCRIBE": 100033, "ACL_ERROR_STREAM_NOT_SUBSCRIBE": 100034,
        "ACL_ERROR_THREAD_NOT_SUBSCRIBE": 100035, "ACL_ERROR_WAIT_CALLBACK_TIMEOUT": 100036,
        "ACL_ERROR_REPEAT_FINALIZE": 100037, "ACL_ERROR_NOT_STATIC_AIPP": 100038,
        "ACL_ERROR_COMPILING_STUB_MODE": 100039, "ACL_ERROR_GROUP_NOT_SET": 100040,
        "ACL_ERROR_GROUP_NOT_CREATE": 100041, "ACL_ERROR_PROF_ALREADY_RUN": 100042,
        "ACL_ERROR_PROF_NOT_RUN": 100043, "ACL_ERROR_DUMP_ALREADY_RUN": 100044,
        "ACL_ERROR_DUMP_NOT_RUN": 100045,
        "ACL_ERROR_PROF_REPEAT_SUBSCRIBE": 148046, "ACL_ERROR_PROF_API_CONFLICT": 148047,
        "ACL_ERROR_INVALID_MAX_OPQUEUE_NUM_CONFIG": 148048,
        "ACL_ERROR_INVALID_OPP_PATH": 148049, "ACL_ERROR_OP_UNSUPPORTED_DYNAMIC": 148050,
        "ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED": 148051,
        "ACL_ERROR_UNSUPPORTED_JPEG": 148052, "ACL_ERROR_INVALID_BUNDLE_MODEL_ID": 148053,
        "ACL_ERROR_BAD_ALLOC": 200000, "ACL_ERROR_API_NOT_SUPPORT": 200001,
        "ACL_ERROR_INVALID_DEVICE": 200002, "ACL_ERROR_MEMORY_ADDRESS_UNALIGNED": 200003,
        "ACL_ERROR_RESOURCE_NOT_MATCH": 200004, "ACL_ERROR_INVALID_RESOURCE_HANDLE": 200005,
        "ACL_ERROR_FEATURE_UNSUPPORTED": 200006, "ACL_ERROR_PROF_MODULES_UNSUPPORTED": 200007,
        "ACL_ERROR_STORAGE_OVER_LIMIT": 300000,
        "ACL_ERROR_INTERNAL_ERROR": 500000, "ACL_ERROR_FAILURE": 500001,
        "ACL_ERROR_GE_FAILURE": 500002, "ACL_ERROR_RT_FAILURE": 500003,
        "ACL_ERROR_DRV_FAILURE": 500004, "ACL_ERROR_PROFILING_FAILURE": 500005,
    }
    assert {n: getattr(C, n) for n in expected} == expected
    # The elided "…" range of api.md is not invented.
    assert not hasattr(C, "ACL_ERROR_INVALID_PARAM_11")


def test_runtime_error_codes_are_exactly_api_md():
    p1070 = ["PARAM_INVALID", "INVALID_DEVICEID", "CONTEXT_NULL", "STREAM_CONTEXT",
             "MODEL_CONTEXT", "STREAM_MODEL", "EVENT_TIMESTAMP_INVALID",
             "EVENT_TIMESTAMP_REVERSAL", "ADDR_UNALIGNED", "FILE_OPEN", "FILE_WRITE",
             "STREAM_SUBSCRIBE", "THREAD_SUBSCRIBE", "GROUP_NOT_SET", "GROUP_NOT_CREATE",
             "STREAM_NO_CB_REG", "INVALID_MEMORY_TYPE", "INVALID_HANDLE", "INVALID_MALLOC_TYPE",
             "WAIT_TIMEOUT", "TASK_TIMEOUT", "SYSPARAMOPT_NOT_SET", "DEVICE_TASK_ABORT",
             "STREAM_ABORT"]
    p2070 = ["FEATURE_NOT_SUPPORT", "MEMORY_ALLOCATION", "MEMORY_FREE", "AICORE_OVER_FLOW",
             "NO_DEVICE", "RESOURCE_ALLOC_FAIL", "NO_PERMISSION", "NO_EVENT_RESOURCE",
             "NO_STREAM_RESOURCE", "NO_NOTIFY_RESOURCE", "NO_MODEL_RESOURCE",
             "NO_CDQ_RESOURCE", "OVER_LIMIT", "QUEUE_EMPTY", "QUEUE_FULL", "REPEATED_INIT",
             "AIVEC_OVER_FLOW", "OVER_FLOW", "DEVICE_OOM", "FEATURE_NOT_SUPPORT_UPDATE_OP",
             "TIMEOUT", "LINK_TYPE_NOT_SUPPORTED"]
    p5070 = ["INTERNAL_ERROR", "TS_ERROR", "STREAM_TASK_FULL", "STREAM_TASK_EMPTY",
             "STREAM_NOT_COMPLETE", "END_OF_SEQUENCE", "EVENT_NOT_COMPLETE",
             "CONTEXT_RELEASE_ERROR", "SOC_VERSION", "TASK_TYPE_NOT_SUPPORT", "LOST_HEARTBEAT",
             "MODEL_EXECUTE", "REPORT_TIMEOUT", "SYS_DMA", "AICORE_TIMEOUT", "AICORE_EXCEPTION",
             "AICORE_TRAP_EXCEPTION", "AICPU_TIMEOUT", "AICPU_EXCEPTION"]
    expected = {"ACL_RT_SUCCESS": 0}
    for base, names in ((107000, p1070), (207000, p2070), (507000, p5070)):
        for i, name in enumerate(names):
            expected["ACL_ERROR_RT_" + name] = base + i
    expected.update({
        "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT": 507046, "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT": 507047,
        "ACL_ERROR_RT_DEVICE_MEM_ERROR": 507053, "ACL_ERROR_RT_DRV_INTERNAL_ERROR": 507899,
        "ACL_ERROR_RT_AICPU_INTERNAL_ERROR": 507900, "ACL_ERROR_RT_CCU_EXCEPTION": 507916,
    })
    # Hand-checked end points of the three runs.
    assert expected["ACL_ERROR_RT_STREAM_ABORT"] == 107023
    assert expected["ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED"] == 207021
    assert expected["ACL_ERROR_RT_AICPU_EXCEPTION"] == 507018
    assert {n: getattr(C, n) for n in expected} == expected


def test_aclrt_enums_and_flags():
    assert {m.name: int(m) for m in C.aclrtMemcpyKind} == {
        "ACL_MEMCPY_HOST_TO_HOST": 0, "ACL_MEMCPY_HOST_TO_DEVICE": 1,
        "ACL_MEMCPY_DEVICE_TO_HOST": 2, "ACL_MEMCPY_DEVICE_TO_DEVICE": 3,
        "ACL_MEMCPY_DEFAULT": 4, "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE": 5,
        "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE": 6, "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE": 7,
    }
    assert {n: int(m) for n, m in C.aclrtMemMallocPolicy.__members__.items()} == {
        "ACL_MEM_MALLOC_HUGE_FIRST": 0, "ACL_MEM_MALLOC_HUGE_ONLY": 1,
        "ACL_MEM_MALLOC_NORMAL_ONLY": 2, "ACL_MEM_MALLOC_HUGE_FIRST_P2P": 3,
        "ACL_MEM_MALLOC_HUGE_ONLY_P2P": 4, "ACL_MEM_MALLOC_NORMAL_ONLY_P2P": 5,
        "ACL_MEM_MALLOC_HUGE1G_ONLY": 6, "ACL_MEM_MALLOC_HUGE1G_ONLY_P2P": 7,
        "ACL_MEM_TYPE_LOW_BAND_WIDTH": 256, "ACL_MEM_TYPE_HIGH_BAND_WIDTH": 4096,
        "ACL_MEM_ACCESS_USER_SPACE_READONLY": 1048576,
    }
    assert {m.name: int(m) for m in C.aclrtMemAttr} == {
        "ACL_DDR_MEM": 0, "ACL_HBM_MEM": 1, "ACL_DDR_MEM_HUGE": 2, "ACL_DDR_MEM_NORMAL": 3,
        "ACL_HBM_MEM_HUGE": 4, "ACL_HBM_MEM_NORMAL": 5, "ACL_MEM_P2P_HUGE1G": 17,
    }
    assert C.ACL_EVENT_RECORDED_STATUS_NOT_READY == 0
    assert C.ACL_EVENT_RECORDED_STATUS_COMPLETE == 1
    assert C.ACL_STREAM_STATUS_COMPLETE == 0
    assert C.ACL_STREAM_STATUS_NOT_READY == 1
    assert C.ACL_OPT_DETERMINISTIC == 0
    assert (C.ACL_EVENT_SYNC, C.ACL_EVENT_CAPTURE_STREAM_PROGRESS, C.ACL_EVENT_TIME_LINE,
            C.ACL_EVENT_DEVICE_USE_ONLY, C.ACL_EVENT_EXTERNAL, C.ACL_EVENT_IPC) == (
        1, 2, 8, 16, 32, 64)
    assert (C.ACL_STREAM_FAST_LAUNCH, C.ACL_STREAM_FAST_SYNC) == (1, 2)
    # Policy bits combine into a plain int, as in C.
    assert C.ACL_MEM_MALLOC_HUGE_ONLY | C.ACL_MEM_TYPE_HIGH_BAND_WIDTH == 0x1001
    assert C.ACL_MEMCPY_HOST_TO_DEVICE is C.aclrtMemcpyKind.ACL_MEMCPY_HOST_TO_DEVICE


def test_all_lists_only_existing_names():
    assert len(C.__all__) == len(set(C.__all__))
    for name in C.__all__:
        assert hasattr(C, name), name
    for name in ("ACL_FLOAT", "ACL_FORMAT_ND", "ACLNN_SUCCESS", "ACL_ERROR_RT_MEMORY_FREE",
                 "ACL_MEMCPY_DEVICE_TO_HOST", "aclDataType", "ACL_TO_NUMPY", "OK"):
        assert name in C.__all__


# ---------------------------------------------------------------------------
# dtype helpers
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dt, size", [
    (C.ACL_FLOAT, 4), (C.ACL_FLOAT16, 2), (C.ACL_BF16, 2), (C.ACL_INT8, 1),
    (C.ACL_INT16, 2), (C.ACL_INT32, 4), (C.ACL_INT64, 8), (C.ACL_UINT8, 1),
    (C.ACL_UINT16, 2), (C.ACL_UINT32, 4), (C.ACL_UINT64, 8), (C.ACL_DOUBLE, 8),
    (C.ACL_BOOL, 1), (C.ACL_COMPLEX64, 8), (C.ACL_COMPLEX128, 16), (C.ACL_COMPLEX32, 4),
    (C.ACL_DT_UNDEFINED, 0), (C.ACL_STRING, 0), (C.ACL_HIFLOAT8, 1),
    (C.ACL_FLOAT8_E5M2, 1), (C.ACL_FLOAT8_E4M3FN, 1), (C.ACL_FLOAT8_E8M0, 1),
    (C.ACL_INT4, 1), (C.ACL_UINT1, 1), (C.ACL_FLOAT6_E3M2, 1), (C.ACL_FLOAT6_E2M3, 1),
    (C.ACL_FLOAT4_E2M1, 1), (C.ACL_FLOAT4_E1M2, 1),
])
def test_acl_data_type_size(dt, size):
    assert aclDataTypeSize(dt) == size
    assert aclDataTypeSize(int(dt)) == size


def test_acl_data_type_size_rejects_non_members():
    with pytest.raises(ValueError, match="5"):
        aclDataTypeSize(5)  # a gap in the numbering


def test_numpy_mapping():
    assert acl_dtype_to_numpy(C.ACL_BF16) == np.dtype(ml_dtypes.bfloat16)
    assert acl_dtype_to_numpy(27) == np.dtype(ml_dtypes.bfloat16)
    assert acl_dtype_to_numpy(C.ACL_FLOAT) == np.float32
    assert acl_dtype_to_numpy(C.ACL_FLOAT16) == np.float16
    assert acl_dtype_to_numpy(C.ACL_DOUBLE) == np.float64
    assert acl_dtype_to_numpy(C.ACL_BOOL) == np.bool_
    assert acl_dtype_to_numpy(C.ACL_COMPLEX128) == np.complex128
    assert numpy_to_acl_dtype(ml_dtypes.bfloat16) is C.ACL_BF16
    assert numpy_to_acl_dtype(np.float32) is C.ACL_FLOAT
    assert numpy_to_acl_dtype("int64") is C.ACL_INT64
    assert numpy_to_acl_dtype(">f4") is C.ACL_FLOAT
    assert numpy_to_acl_dtype(np.bool_) is C.ACL_BOOL
    assert len(ACL_TO_NUMPY) == 15
    for acl_dt, np_dt in ACL_TO_NUMPY.items():
        assert numpy_to_acl_dtype(np_dt) is acl_dt
        assert aclDataTypeSize(acl_dt) == np_dt.itemsize


def test_numpy_mapping_errors_name_the_dtype():
    with pytest.raises(ValueError, match="ACL_STRING"):
        acl_dtype_to_numpy(C.ACL_STRING)
    with pytest.raises(ValueError, match="ACL_FLOAT8_E4M3FN"):
        acl_dtype_to_numpy(C.ACL_FLOAT8_E4M3FN)
    with pytest.raises(ValueError, match="float8_e4m3fn"):
        numpy_to_acl_dtype(ml_dtypes.float8_e4m3fn)
    with pytest.raises(ValueError):
        acl_dtype_to_numpy(99)


# ---------------------------------------------------------------------------
# aclTensor
# ---------------------------------------------------------------------------
def test_transpose_example_from_api_md():
    # api.md §2: view {4,2}, stride {1,4}, storage {2,4} -- a transposed 2x4.
    t = aclCreateTensor([4, 2], C.ACL_FLOAT, [1, 4], 0, C.ACL_FORMAT_ND, [2, 4], 0x1000)
    assert isinstance(t, aclTensor)
    assert t.view_dims == (4, 2)
    assert t.strides == (1, 4)
    assert t.storage_dims == (2, 4)
    assert t.offset == 0
    assert t.data_type is C.ACL_FLOAT and t.format is C.ACL_FORMAT_ND
    assert t.numel() == 8
    assert not t.is_contiguous()
    assert not t.is_empty()
    assert t.itemsize == 4
    assert t.np_dtype == np.float32
    assert t.storage_nbytes() == 32  # 2*4 elements * 4 bytes
    assert t.view_nbytes() == 32
    assert t.data_address() == 0x1000
    # Last element: 3*1 + 1*4 = 7 < 8 storage elements.
    assert t.in_storage_bounds()
    text = repr(t)
    for part in ("(4, 2)", "(1, 4)", "ACL_FLOAT", "ACL_FORMAT_ND", "0x1000"):
        assert part in text


def test_offset_view_address_and_sizes():
    # A 2x3 fp16 view starting at element 5 of a 16-element storage.
    t = aclCreateTensor((2, 3), C.ACL_FLOAT16, (3, 1), 5, C.ACL_FORMAT_ND, (16,), 0x2000)
    assert t.data_address() == 0x2000 + 5 * 2  # 0x200a
    assert t.data_address() == 0x200A
    assert t.view_nbytes() == 12
    assert t.storage_nbytes() == 32
    assert t.is_contiguous()
    assert t.in_storage_bounds()  # last element 5 + 3 + 2 = 10 < 16
    t2 = aclCreateTensor((2, 3), C.ACL_FLOAT16, (3, 1), 11, C.ACL_FORMAT_ND, (16,), 0x2000)
    assert not t2.in_storage_bounds()  # last element 11 + 5 = 16, not < 16


@pytest.mark.parametrize("dims, strides, contiguous", [
    ((2, 3, 4), (12, 4, 1), True),
    ((2, 3), (1, 2), False),
    ((2, 3), (0, 1), False),          # broadcast row
    ((2, 1, 3), (3, 99, 1), True),    # size-1 dim: its stride is ignored
    ((1,), (5,), True),
    ((), (), True),                   # 0-D
    ((0, 3), (7, 7), True),           # empty
    ((3, 2), (2, 1), True),
    ((3, 2), (1, 3), False),
])
def test_is_contiguous(dims, strides, contiguous):
    t = aclCreateTensor(dims, C.ACL_FLOAT, strides, 0, C.ACL_FORMAT_ND, (64,), 0)
    assert t.is_contiguous() is contiguous


def test_stride_none_means_contiguous():
    assert contiguous_strides((2, 3, 4)) == (12, 4, 1)
    assert contiguous_strides(()) == ()
    t = aclCreateTensor([2, 3, 4], C.ACL_INT32, None, 0, C.ACL_FORMAT_ND, [24], None)
    assert t.strides == (12, 4, 1)
    assert t.is_contiguous()
    assert t.tensor_data == 0
    assert t.data_address() == 0


def test_zero_d_and_empty_tensors():
    t = aclCreateTensor([], C.ACL_FLOAT, [], 0, C.ACL_FORMAT_ND, [], 0)
    assert t.numel() == 1 and not t.is_empty() and t.view_nbytes() == 4
    e = aclCreateTensor([0, 3], C.ACL_FLOAT, None, 0, C.ACL_FORMAT_ND, [0], 0)
    assert e.numel() == 0 and e.is_empty() and e.view_nbytes() == 0


def test_ints_and_numpy_arguments_accepted():
    t = aclCreateTensor(np.array([2, 3]), 0, np.array([3, 1]), np.int64(0), 2, (6,), 64)
    assert t.view_dims == (2, 3) and type(t.view_dims[0]) is int
    assert t.data_type is C.ACL_FLOAT and isinstance(t.data_type, aclDataType)
    assert t.format is C.ACL_FORMAT_ND and isinstance(t.format, aclFormat)
    assert t.tensor_data == 64


def test_created_tensor_copies_its_inputs():
    dims = [2, 2]
    t = aclCreateTensor(dims, C.ACL_FLOAT, None, 0, C.ACL_FORMAT_ND, dims, 0)
    dims[0] = 9
    assert t.view_dims == (2, 2) and t.storage_dims == (2, 2)


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(viewDims=None), "viewDims"),
    (dict(storageDims=None), "storageDims"),
    (dict(viewDims=[2, -1]), "negative"),
    (dict(storageDims=[-4]), "negative"),
    (dict(viewDims=[2.0, 2]), "float"),
    (dict(viewDims=[True, 2]), "bool"),
    (dict(viewDims=4), "sequence"),
    (dict(dataType=5), "aclDataType"),     # 5 is a gap in the numbering
    (dict(dataType=1.0), "aclDataType"),
    (dict(format=99), "aclFormat"),
    (dict(stride=[1]), "stride"),
    (dict(offset=-1), "offset"),
    (dict(tensorData=-8), "tensorData"),
    (dict(tensorData="0x10"), "tensorData"),
])
def test_create_tensor_failures_return_none_and_report(kwargs, fragment):
    args = dict(viewDims=[2, 2], dataType=C.ACL_FLOAT, stride=None, offset=0,
                format=C.ACL_FORMAT_ND, storageDims=[4], tensorData=0)
    args.update(kwargs)
    assert aclCreateTensor(**args) is None
    msg = errmsg.get_recent_err_msg()
    assert msg is not None and "aclCreateTensor" in msg and fragment in msg


def test_init_tensor():
    t = _contiguous_float([2, 2])
    ret = aclInitTensor(t, [4], C.ACL_INT64, None, 1, C.ACL_FORMAT_NCL, [5], 0x4000)
    assert ret == ACLNN_SUCCESS
    assert (t.view_dims, t.data_type, t.strides, t.offset, t.format, t.storage_dims,
            t.tensor_data) == ((4,), C.ACL_INT64, (1,), 1, C.ACL_FORMAT_NCL, (5,), 0x4000)
    assert t.data_address() == 0x4008
    assert aclInitTensor(None, [4], C.ACL_FLOAT, None, 0, C.ACL_FORMAT_ND, [4], 0) == 161001
    assert aclInitTensor(t, None, C.ACL_FLOAT, None, 0, C.ACL_FORMAT_ND, [4], 0) == 161001
    assert aclInitTensor(t, [-1], C.ACL_FLOAT, None, 0, C.ACL_FORMAT_ND, [4], 0) == 161002
    assert t.view_dims == (4,)  # unchanged by the failed calls
    aclDestroyTensor(t)
    assert aclInitTensor(t, [4], C.ACL_FLOAT, None, 0, C.ACL_FORMAT_ND, [4], 0) == 161002


# ---------------------------------------------------------------------------
# Destroy
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("destroy", [
    aclDestroyTensor, aclDestroyScalar, aclDestroyIntArray, aclDestroyFloatArray,
    aclDestroyBoolArray, aclDestroyTensorList, aclDestroyScalarList,
])
def test_destroy_none_is_ok(destroy):
    assert destroy(None) == 0
    assert errmsg.get_recent_err_msg() is None


def test_double_destroy_is_an_error():
    t = _contiguous_float([2])
    assert aclDestroyTensor(t) == ACLNN_SUCCESS
    assert t.destroyed
    assert "destroyed" in repr(t)
    assert aclDestroyTensor(t) == ACLNN_ERR_PARAM_INVALID == 161002
    assert "already destroyed" in errmsg.get_recent_err_msg()
    s = aclCreateScalar(1, C.ACL_INT32)
    assert aclDestroyScalar(s) == 0 and aclDestroyScalar(s) == 161002
    a = aclCreateIntArray([1])
    assert aclDestroyIntArray(a) == 0 and aclDestroyIntArray(a) == 161002


def test_destroy_wrong_type_is_an_error():
    s = aclCreateScalar(1.0, C.ACL_FLOAT)
    assert aclDestroyTensor(s) == 161002
    assert "aclTensor" in errmsg.get_recent_err_msg()
    assert not s.destroyed
    assert aclDestroyFloatArray(aclCreateIntArray([1])) == 161002
    assert aclDestroyBoolArray(aclCreateBoolArray([True])) == 0


def test_destroy_lists_destroy_their_elements():
    t1, t2 = _contiguous_float([1]), _contiguous_float([2])
    tl = aclCreateTensorList([t1, None, t2])
    assert aclDestroyTensorList(tl) == 0
    assert tl.destroyed and t1.destroyed and t2.destroyed
    s1, s2 = aclCreateScalar(1, C.ACL_INT8), aclCreateScalar(2, C.ACL_INT8)
    sl = aclCreateScalarList([s1, s2])
    assert aclDestroyScalarList(sl) == 0
    assert sl.destroyed and s1.destroyed and s2.destroyed


def test_destroy_list_after_destroying_an_element_reports():
    t1, t2 = _contiguous_float([1]), _contiguous_float([2])
    tl = aclCreateTensorList([t1, t2])
    assert aclDestroyTensor(t1) == 0
    assert aclDestroyTensorList(tl) == 161002  # C: t1 freed twice
    assert tl.destroyed and t2.destroyed
    assert "already destroyed" in errmsg.get_recent_err_msg()
    assert aclDestroyTensorList(tl) == 161002


# ---------------------------------------------------------------------------
# Getters
# ---------------------------------------------------------------------------
def test_tensor_getters():
    t = aclCreateTensor([4, 2], C.ACL_BF16, [1, 4], 3, C.ACL_FORMAT_NCL, [2, 4], 0x1000)
    assert aclGetViewShape(t) == ([4, 2], 0)
    assert aclGetStorageShape(t) == ([2, 4], 0)
    assert aclGetViewStrides(t) == ([1, 4], 0)
    assert aclGetViewOffset(t) == (3, 0)
    fmt, ret = aclGetFormat(t)
    assert (fmt, ret) == (47, 0) and fmt is aclFormat.ACL_FORMAT_NCL
    dt, ret = aclGetDataType(t)
    assert (dt, ret) == (27, 0) and dt is aclDataType.ACL_BF16
    assert aclGetRawTensorAddr(t) == (0x1000, 0)
    shape, _ = aclGetViewShape(t)
    shape.append(7)  # the caller owns the returned list
    assert t.view_dims == (4, 2)


def test_array_and_list_size_getters():
    assert aclGetIntArraySize(aclCreateIntArray([1, 2, 3])) == (3, 0)
    assert aclGetFloatArraySize(aclCreateFloatArray([1.0, 2.5])) == (2, 0)
    assert aclGetBoolArraySize(aclCreateBoolArray([])) == (0, 0)
    assert aclGetTensorListSize(aclCreateTensorList([_contiguous_float([1])])) == (1, 0)
    scalars = [aclCreateScalar(i, C.ACL_INT64) for i in range(4)]
    assert aclGetScalarListSize(aclCreateScalarList(scalars)) == (4, 0)


@pytest.mark.parametrize("getter", [
    aclGetViewShape, aclGetStorageShape, aclGetViewStrides, aclGetViewOffset, aclGetFormat,
    aclGetDataType, aclGetIntArraySize, aclGetFloatArraySize, aclGetBoolArraySize,
    aclGetTensorListSize, aclGetScalarListSize, aclGetRawTensorAddr,
])
def test_getters_null_argument(getter):
    assert getter(None) == (None, ACLNN_ERR_PARAM_NULLPTR)
    assert getter(None) == (None, 161001)


def test_getters_reject_destroyed_and_wrong_objects():
    t = _contiguous_float([2])
    aclDestroyTensor(t)
    assert aclGetViewShape(t) == (None, 161002)
    assert "destroyed" in errmsg.get_recent_err_msg()
    assert aclGetIntArraySize(aclCreateFloatArray([1.0])) == (None, 161002)
    assert aclGetDataType(aclCreateScalar(1, C.ACL_INT8)) == (None, 161002)


def test_raw_tensor_addr():
    t = _contiguous_float([2, 2], addr=0)
    assert aclSetRawTensorAddr(t, 0x2000) == 0
    assert aclGetRawTensorAddr(t) == (0x2000, 0)
    assert t.data_address() == 0x2000
    assert aclSetRawTensorAddr(t, None) == 0
    assert aclGetRawTensorAddr(t) == (0, 0)
    assert aclSetRawTensorAddr(None, 0x2000) == 161001
    assert aclSetRawTensorAddr(t, -1) == 161002
    assert aclGetRawTensorAddr(t) == (0, 0)


# ---------------------------------------------------------------------------
# Scalars, arrays, lists
# ---------------------------------------------------------------------------
def test_create_scalar():
    s = aclCreateScalar(1.2, C.ACL_FLOAT)
    assert isinstance(s, aclScalar)
    assert type(s.value) is np.float32 and s.value == np.float32(1.2)
    assert s.data_type is C.ACL_FLOAT
    # bf16(1.2): 1.2 = 1.0011001100...b; 7 mantissa bits round up to 1.0011010b
    # = 1 + 26/128 = 1.203125.
    b = aclCreateScalar(1.2, C.ACL_BF16)
    assert type(b.value) is ml_dtypes.bfloat16
    assert float(b.value) == 1.203125
    i = aclCreateScalar(7, C.ACL_INT64)
    assert type(i.value) is np.int64 and i.value == 7
    assert type(i.to(np.float64)) is np.float64 and i.to(np.float64) == 7.0
    assert type(i.to(C.ACL_FLOAT)) is np.float32
    assert aclCreateScalar(np.array(3), C.ACL_UINT8).value == 3
    assert aclCreateScalar(0, C.ACL_BOOL).value == np.bool_(False)
    assert aclCreateScalar(1 + 2j, C.ACL_COMPLEX64).value == np.complex64(1 + 2j)
    # float16 max is 65504; 70000 rounds past it to inf, as an IEEE cast does.
    assert np.isposinf(aclCreateScalar(70000.0, C.ACL_FLOAT16).value)


@pytest.mark.parametrize("value, dtype", [
    (None, C.ACL_FLOAT),
    (300, C.ACL_INT8),         # out of int8 range
    (-1, C.ACL_UINT32),
    (1.0, C.ACL_STRING),       # no numpy dtype
    (1.0, C.ACL_HIFLOAT8),
    ("1.0", C.ACL_FLOAT),
    (np.array([1, 2]), C.ACL_INT32),
    (1.0, 99),
])
def test_create_scalar_failures(value, dtype):
    assert aclCreateScalar(value, dtype) is None
    assert "aclCreateScalar" in errmsg.get_recent_err_msg()


def test_create_int_array_copies():
    src = [1, -2, 2**63 - 1]
    a = aclCreateIntArray(src)
    src[0] = 100
    assert isinstance(a, aclIntArray)
    assert a.values == (1, -2, 2**63 - 1)
    assert len(a) == 3 and a[1] == -2 and list(a) == [1, -2, 2**63 - 1]
    assert aclCreateIntArray(np.array([4, 5])).values == (4, 5)
    assert aclCreateIntArray([]).values == ()
    for bad in (None, [1.5], [2**63], [True], "12", 5):
        assert aclCreateIntArray(bad) is None
        assert "aclCreateIntArray" in errmsg.get_recent_err_msg()


def test_create_float_and_bool_arrays():
    f = aclCreateFloatArray([0.1, 2, np.float64(0.5)])
    assert isinstance(f, aclFloatArray)
    # C float is float32: 0.1 -> 0.100000001490116119384765625.
    assert f.values == (0.10000000149011612, 2.0, 0.5)
    assert aclCreateFloatArray([True]) is None
    assert aclCreateFloatArray(["x"]) is None
    b = aclCreateBoolArray([True, False, 1, np.bool_(True)])
    assert isinstance(b, aclBoolArray)
    assert b.values == (True, False, True, True)
    assert aclCreateBoolArray([2]) is None
    assert aclCreateBoolArray(None) is None


def test_create_lists_check_elements():
    t1, t2 = _contiguous_float([1]), _contiguous_float([2])
    tl = aclCreateTensorList((t1, t2))
    assert tl.values[0] is t1 and tl[1] is t2 and len(tl) == 2
    assert aclCreateTensorList(None) is None
    assert aclCreateTensorList([t1, t1]) is None  # would be destroyed twice
    assert "twice" in errmsg.get_recent_err_msg()
    assert aclCreateTensorList([t1, aclCreateScalar(1, C.ACL_INT8)]) is None
    dead = _contiguous_float([3])
    aclDestroyTensor(dead)
    assert aclCreateTensorList([dead]) is None
    assert aclCreateScalarList([t1]) is None
    assert aclCreateTensorList([]).values == ()


# ---------------------------------------------------------------------------
# aclGetRecentErrMsg mechanism
# ---------------------------------------------------------------------------
def test_report_error_returns_code_and_messages_come_newest_first():
    assert errmsg.get_recent_err_msg() is None
    assert errmsg.report_error(ACLNN_ERR_PARAM_INVALID, "first") == 161002
    assert errmsg.report_error(ACLNN_ERR_PARAM_NULLPTR, "second") == 161001
    assert errmsg.get_recent_err_msg() == "second\nfirst"
    assert errmsg.get_recent_err_msg() is None  # retrieved and cleared
    assert errmsg.aclGetRecentErrMsg is errmsg.get_recent_err_msg


def test_clear_drops_pending_messages():
    errmsg.report_error(1, "x")
    errmsg.clear()
    assert errmsg.get_recent_err_msg() is None


def test_messages_are_thread_level_by_default():
    worker = threading.Thread(target=errmsg.report_error, args=(1, "in worker"))
    worker.start()
    worker.join()
    assert errmsg.get_recent_err_msg() is None


def test_process_level_mode():
    errmsg.set_err_msg_mode(errmsg.ERR_MSG_MODE_PROCESS)
    worker = threading.Thread(target=errmsg.report_error, args=(1, "in worker"))
    worker.start()
    worker.join()
    assert errmsg.get_recent_err_msg() == "in worker"
    with pytest.raises(ValueError):
        errmsg.set_err_msg_mode("global")


def test_pending_messages_are_capped():
    for i in range(errmsg.MAX_PENDING_MESSAGES + 6):
        errmsg.report_error(1, f"m{i}")
    lines = errmsg.get_recent_err_msg().split("\n")
    assert len(lines) == errmsg.MAX_PENDING_MESSAGES
    assert lines[0] == f"m{errmsg.MAX_PENDING_MESSAGES + 5}"
    assert lines[-1] == "m6"


def test_failed_api_calls_leave_messages_in_call_order():
    aclCreateTensor(None, C.ACL_FLOAT, None, 0, C.ACL_FORMAT_ND, [1], 0)
    aclDestroyTensor(aclCreateScalar(1, C.ACL_INT8))
    first, second = errmsg.get_recent_err_msg().split("\n")
    assert first.startswith("aclDestroyTensor")
    assert second.startswith("aclCreateTensor")
