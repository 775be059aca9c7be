"""Kernels on streams: errors surface at synchronize as an AI-core exception, and a copy
on one stream overlaps a kernel on another (npusim/device.py)."""
import numpy as np
import pytest

import aclnn
from aclnn import acl, runtime
from npusim.ascendc import DataCopy, GlobalTensor, TBuf, TPipe, float32


@pytest.fixture
def device():
    runtime.reset()
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    yield runtime.current_device()
    runtime.reset()


def overflow_kernel(src):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 64)
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(src, 64)
    DataCopy(buf.Get(float32), g, 64)          # 256 B into a 64 B buffer


def copy_kernel(src, n):
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, 32768)
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(src, n)
    for i in range(n // 8192):
        DataCopy(buf.Get(float32), g[i * 8192], 8192)


def test_kernel_error_is_an_aicore_exception_at_synchronize(device):
    stream, _ = acl.rt.create_stream()
    ptr, _ = acl.rt.malloc(4096, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    device.launch(runtime.resolve_stream(stream), overflow_kernel, 1, (ptr,), name="overflow")
    assert acl.rt.synchronize_stream(stream) == aclnn.ACL_ERROR_RT_AICORE_EXCEPTION
    msg = acl.get_recent_err_msg()
    assert "[UB]" in msg and "DataCopy" in msg and "test_device_streams.py" in msg
    assert acl.rt.synchronize_stream(stream) == 0          # reported once


def test_copy_on_one_stream_overlaps_kernel_on_another(device):
    s1, _ = acl.rt.create_stream()
    s2, _ = acl.rt.create_stream()
    n = 8192 * 64
    src, _ = acl.rt.malloc(n * 4, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    dst, _ = acl.rt.malloc(n * 4, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    host = np.arange(n, dtype=np.float32)
    device.launch(runtime.resolve_stream(s1), copy_kernel, 1, (src, n), name="reader")
    assert acl.rt.memcpy_async(dst, n * 4, acl.util.numpy_to_ptr(host), n * 4,
                               aclnn.ACL_MEMCPY_HOST_TO_DEVICE, s2) == 0
    assert acl.rt.synchronize_stream(s1) == 0 and acl.rt.synchronize_stream(s2) == 0
    kernel = device.profiles[-1]
    kind, c_start, c_end, nbytes, _ = device.copies[-1]
    k_start, k_end = kernel.start_us, kernel.start_us + kernel.duration_us
    assert kind == "H2D" and nbytes == n * 4
    assert c_start < k_end and k_start < c_end               # the two intervals overlap


def test_a_failed_stream_runs_nothing_more_until_synchronized(device):
    stream, _ = acl.rt.create_stream()
    ptr, _ = acl.rt.malloc(4096, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    host = np.arange(1024, dtype=np.float32)
    s = runtime.resolve_stream(stream)
    device.launch(s, overflow_kernel, 1, (ptr,), name="overflow")
    assert acl.rt.memcpy_async(ptr, 4096, acl.util.numpy_to_ptr(host), 4096,
                               aclnn.ACL_MEMCPY_HOST_TO_DEVICE, stream) == 0
    assert acl.rt.synchronize_stream(stream) == aclnn.ACL_ERROR_RT_AICORE_EXCEPTION
    assert not any(kind == "H2D" for kind, *_ in device.copies)     # skipped, as on hardware
    assert acl.rt.memcpy_async(ptr, 4096, acl.util.numpy_to_ptr(host), 4096,
                               aclnn.ACL_MEMCPY_HOST_TO_DEVICE, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0                    # the error was seen
    out = np.zeros(1024, np.float32)
    acl.rt.memcpy(acl.util.numpy_to_ptr(out), 4096, ptr, 4096, aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
    assert np.array_equal(out, host)
