"""The official aclnnRmsNorm sample, in Python on the simulated NPU.

A line-by-line rendering of the example of ``norm/rms_norm/docs/aclnnRmsNorm.md`` in the
ops-nn repository: x {2, 16} float holding {0, 1, ..., 7} four times, gamma {16} holding
{0, ..., 7} twice, epsilon 1e-6, yOut {2, 16} and rstdOut {2, 1} float. Init ->
aclrtMalloc/aclrtMemcpy -> aclCreateTensor -> aclnnRmsNormGetWorkspaceSize -> workspace
if > 0 -> aclnnRmsNorm -> aclrtSynchronizeStream -> copy yOut back and print -> destroy,
free, reset, finalize. (rstdOut is read back too, for the tests.)

Run: ``python examples/rms_norm_sample.py [--soc Ascend910B1]``
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np

import aclnn
from aclnn import acl
from aclnn.ops.rms_norm import aclnnRmsNorm, aclnnRmsNormGetWorkspaceSize


def check(ret, what):
    if ret != aclnn.ACL_SUCCESS:
        raise RuntimeError(f"{what} failed. ERROR: {ret}\n{acl.get_recent_err_msg()}")


def init(device_id, soc):
    # (fixed pattern) resource initialisation; the JSON picks the simulated SoC
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"npusim": {"soc": soc}}, f)
    try:
        check(acl.init(f.name), "aclInit")
    finally:
        os.unlink(f.name)
    check(acl.rt.set_device(device_id), "aclrtSetDevice")
    stream, ret = acl.rt.create_stream()
    check(ret, "aclrtCreateStream")
    return stream


def create_acl_tensor(host_data, shape, data_type):
    """aclrtMalloc + aclrtMemcpy the host data, then aclCreateTensor with contiguous strides."""
    size = host_data.nbytes
    device_addr, ret = acl.rt.malloc(size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    check(ret, "aclrtMalloc")
    ret = acl.rt.memcpy(device_addr, size, acl.util.numpy_to_ptr(host_data), size,
                        aclnn.ACL_MEMCPY_HOST_TO_DEVICE)
    check(ret, "aclrtMemcpy")
    strides = [1] * len(shape)                      # contiguous strides of the shape
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = shape[i + 1] * strides[i + 1]
    tensor = aclnn.aclCreateTensor(shape, data_type, strides, 0, aclnn.ACL_FORMAT_ND, shape,
                                   device_addr)
    return tensor, device_addr


def read_back(device_addr, n):
    host = np.zeros(n, dtype=np.float32)
    check(acl.rt.memcpy(acl.util.numpy_to_ptr(host), host.nbytes, device_addr, host.nbytes,
                        aclnn.ACL_MEMCPY_DEVICE_TO_HOST), "copy result from device to host")
    return host


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B1")
    args = parser.parse_args(argv)

    # 1. (fixed pattern) device/stream initialisation
    device_id = 0
    stream = init(device_id, args.soc)

    # 2. build the inputs and outputs
    x_shape, gamma_shape, y_shape, rstd_shape = [2, 16], [16], [2, 16], [2, 1]
    x_host = np.tile(np.arange(8, dtype=np.float32), 4)
    gamma_host = np.tile(np.arange(8, dtype=np.float32), 2)
    y_host = np.tile(np.arange(8, dtype=np.float32), 4)
    rstd_host = np.array([1, 2], dtype=np.float32)
    epsilon = 1e-6
    x_t, x_addr = create_acl_tensor(x_host, x_shape, aclnn.ACL_FLOAT)
    gamma_t, gamma_addr = create_acl_tensor(gamma_host, gamma_shape, aclnn.ACL_FLOAT)
    y_t, y_addr = create_acl_tensor(y_host, y_shape, aclnn.ACL_FLOAT)
    rstd_t, rstd_addr = create_acl_tensor(rstd_host, rstd_shape, aclnn.ACL_FLOAT)

    # 3. the first phase, the workspace if > 0, the second phase
    workspace_size, executor, ret = aclnnRmsNormGetWorkspaceSize(x_t, gamma_t, epsilon, y_t,
                                                                 rstd_t)
    check(ret, "aclnnRmsNormGetWorkspaceSize")
    workspace_addr = 0
    if workspace_size > 0:
        workspace_addr, ret = acl.rt.malloc(workspace_size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "allocate workspace")
    check(aclnnRmsNorm(workspace_addr, workspace_size, executor, stream), "aclnnRmsNorm")

    # 4. (fixed pattern) wait for the stream
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")

    # 5. copy yOut back to the host and print it
    result = read_back(y_addr, int(np.prod(y_shape)))
    for i, value in enumerate(result):
        print(f"result[{i}] is: {value:f}")
    rstd = read_back(rstd_addr, int(np.prod(rstd_shape)))

    # 6. destroy the aclTensors; 7. free device memory, stream, device
    for t in (x_t, gamma_t, y_t, rstd_t):
        aclnn.aclDestroyTensor(t)
    for addr in (x_addr, gamma_addr, y_addr, rstd_addr):
        acl.rt.free(addr)
    if workspace_size > 0:
        acl.rt.free(workspace_addr)
    acl.rt.destroy_stream(stream)
    acl.rt.reset_device(device_id)
    acl.finalize()
    return {"yOut": result, "rstdOut": rstd}


if __name__ == "__main__":
    main()
    sys.exit(0)
