"""The official aclnnEmbeddingDenseBackward sample, in Python on the simulated NPU.

A line-by-line rendering of the sample in ``index/embedding_dense_grad_v2/docs/
aclnnEmbeddingDenseBackward.md`` (``examples/test_aclnn_embedding_dense_grad_v2.cpp``) of the
ops-nn repository (docs/reference/api.md §3): grad is a {2, 3} float tensor holding 1..6, indices
a {2} int64 tensor holding {1, 2}, numWeights 4, paddingIdx 0, scaleGradByFreq false, out
{4, 3} float. It prints out the way the sample's PrintOutResult does; the expected rows are
0 0 0 / 1 2 3 / 4 5 6 / 0 0 0.

Run: ``python examples/embedding_dense_backward_sample.py [--soc Ascend910B1]``
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
from aclnn.ops.embedding_dense_backward import (aclnnEmbeddingDenseBackward,
                                                aclnnEmbeddingDenseBackwardGetWorkspaceSize)


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
    grad_shape, indices_shape, out_shape = [2, 3], [2], [4, 3]
    num_weights, padding_idx, scale_grad_by_freq = 4, 0, False
    grad_host = np.arange(1, 7, dtype=np.float32)
    indices_host = np.array([1, 2], dtype=np.int64)
    out_host = np.zeros(12, dtype=np.float32)
    grad, grad_addr = create_acl_tensor(grad_host, grad_shape, aclnn.ACL_FLOAT)
    indices, indices_addr = create_acl_tensor(indices_host, indices_shape, aclnn.ACL_INT64)
    out, out_addr = create_acl_tensor(out_host, out_shape, aclnn.ACL_FLOAT)

    # 3. call the aclnn API: first phase, workspace, second phase
    workspace_size, executor, ret = aclnnEmbeddingDenseBackwardGetWorkspaceSize(
        grad, indices, num_weights, padding_idx, scale_grad_by_freq, out)
    check(ret, "aclnnEmbeddingDenseBackwardGetWorkspaceSize")
    workspace_addr = 0
    if workspace_size > 0:
        workspace_addr, ret = acl.rt.malloc(workspace_size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "allocate workspace")
    ret = aclnnEmbeddingDenseBackward(workspace_addr, workspace_size, executor, stream)
    check(ret, "aclnnEmbeddingDenseBackward")

    # 4. (fixed pattern) wait for the stream
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")

    # 5. copy the result back and print it
    result = np.zeros(12, dtype=np.float32)
    ret = acl.rt.memcpy(acl.util.numpy_to_ptr(result), result.nbytes, out_addr, result.nbytes,
                        aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
    check(ret, "copy result from device to host")
    for i, value in enumerate(result):
        print(f"result[{i}] is: {value:f}")

    # 6. release the aclTensors; 7. release device memory, stream, device
    for t in (grad, indices, out):
        aclnn.aclDestroyTensor(t)
    for addr in (grad_addr, indices_addr, out_addr):
        acl.rt.free(addr)
    if workspace_size > 0:
        acl.rt.free(workspace_addr)
    acl.rt.destroy_stream(stream)
    acl.rt.reset_device(device_id)
    acl.finalize()
    return result.reshape(out_shape)


if __name__ == "__main__":
    main()
    sys.exit(0)
