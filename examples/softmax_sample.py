"""The official aclnnSoftmax sample, in Python on the simulated NPU.

A line-by-line rendering of the example of ``activation/softmax_v2/docs/aclnnSoftmax.md`` in
the ops-nn repository: self and out are {4, 2} float tensors, self holding
{0, 1, 2, 3, 4, 5, 6, 7}, and the softmax runs along dim 0 (each column of the 4 x 2
matrix sums to 1). Init -> aclrtMalloc/aclrtMemcpy -> aclCreateTensor ->
aclnnSoftmaxGetWorkspaceSize -> workspace if > 0 -> aclnnSoftmax ->
aclrtSynchronizeStream -> copy back and print -> destroy, free, reset, finalize.

Run: ``python examples/softmax_sample.py [--soc Ascend910B1]``
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
from aclnn.ops.softmax import aclnnSoftmax, aclnnSoftmaxGetWorkspaceSize


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B1")
    args = parser.parse_args(argv)

    # 1. (fixed pattern) device/stream initialisation
    device_id = 0
    stream = init(device_id, args.soc)

    # 2. build the inputs and outputs
    self_shape, out_shape = [4, 2], [4, 2]
    self_host = np.array([0, 1, 2, 3, 4, 5, 6, 7], dtype=np.float32)
    out_host = np.zeros(8, dtype=np.float32)
    self_t, self_addr = create_acl_tensor(self_host, self_shape, aclnn.ACL_FLOAT)
    out_t, out_addr = create_acl_tensor(out_host, out_shape, aclnn.ACL_FLOAT)

    # 3. the first phase, the workspace if > 0, the second phase
    dim = 0
    workspace_size, executor, ret = aclnnSoftmaxGetWorkspaceSize(self_t, dim, out_t)
    check(ret, "aclnnSoftmaxGetWorkspaceSize")
    workspace_addr = 0
    if workspace_size > 0:
        workspace_addr, ret = acl.rt.malloc(workspace_size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "allocate workspace")
    check(aclnnSoftmax(workspace_addr, workspace_size, executor, stream), "aclnnSoftmax")

    # 4. (fixed pattern) wait for the stream
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")

    # 5. copy the result back to the host and print it
    size = int(np.prod(out_shape))
    result = np.zeros(size, dtype=np.float32)
    check(acl.rt.memcpy(acl.util.numpy_to_ptr(result), result.nbytes, out_addr, result.nbytes,
                        aclnn.ACL_MEMCPY_DEVICE_TO_HOST), "copy result from device to host")
    for i, value in enumerate(result):
        print(f"result[{i}] is: {value:f}")

    # 6. destroy the aclTensors; 7. free device memory, stream, device
    aclnn.aclDestroyTensor(self_t)
    aclnn.aclDestroyTensor(out_t)
    acl.rt.free(self_addr)
    acl.rt.free(out_addr)
    if workspace_size > 0:
        acl.rt.free(workspace_addr)
    acl.rt.destroy_stream(stream)
    acl.rt.reset_device(device_id)
    acl.finalize()
    return {"out": result}


if __name__ == "__main__":
    main()
    sys.exit(0)
