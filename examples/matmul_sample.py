"""The official aclnnMatmul / aclnnMm / aclnnBatchMatMul samples, in Python on the simulated NPU.

A line-by-line rendering of the examples of ``matmul/mat_mul_v3/docs/aclnnMatmul.md``,
``aclnnMm.md`` and ``matmul/batch_mat_mul_v3/docs/aclnnBatchMatMul.md`` in the ops-nn
repository:

* aclnnMatmul / aclnnMm (``--api Matmul`` (default) / ``--api Mm``): self {16, 32} and mat2
  {32, 16} float tensors of ones, out {16, 16}, cubeMathType 1 (every result is 32);
* aclnnBatchMatMul (``--api BatchMatMul``): self {1, 2, 3} holding {0, 1, 2, 3, 4, 5}, mat2
  {1, 3, 4} holding {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4}, out {1, 2, 4}, cubeMathType 1.

Init -> aclrtMalloc/aclrtMemcpy -> aclCreateTensor -> aclnnXxxGetWorkspaceSize -> workspace
if > 0 -> aclnnXxx -> aclrtSynchronizeStream -> copy back and print -> destroy, free, reset,
finalize. cubeMathType 1 (ALLOW_FP32_DOWN_PRECISION) computes FLOAT in HFLOAT32 on Atlas
A2/A3; the simulator computes float32 and says so with a warning (aclnn/ops/matmul.py).

Run: ``python examples/matmul_sample.py [--api Matmul|Mm|BatchMatMul] [--soc Ascend910B1]``
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
from aclnn.ops import matmul as ops

#: --api -> (first phase, second phase, self shape and data, mat2 shape and data, out shape)
SAMPLES = {
    "Matmul": (ops.aclnnMatmulGetWorkspaceSize, ops.aclnnMatmul, [16, 32], np.ones(512),
               [32, 16], np.ones(512), [16, 16]),
    "Mm": (ops.aclnnMmGetWorkspaceSize, ops.aclnnMm, [16, 32], np.ones(512), [32, 16],
           np.ones(512), [16, 16]),
    "BatchMatMul": (ops.aclnnBatchMatMulGetWorkspaceSize, ops.aclnnBatchMatMul, [1, 2, 3],
                    np.arange(6), [1, 3, 4], np.repeat(np.arange(1, 5), 3), [1, 2, 4]),
}


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
    parser.add_argument("--api", choices=sorted(SAMPLES), default="Matmul")
    parser.add_argument("--soc", default="Ascend910B1")
    args = parser.parse_args(argv)
    first, second, self_shape, self_data, mat2_shape, mat2_data, out_shape = SAMPLES[args.api]

    # 1. (fixed pattern) device/stream initialisation
    device_id = 0
    stream = init(device_id, args.soc)

    # 2. build the inputs and outputs
    self_host = self_data.astype(np.float32)
    mat2_host = mat2_data.astype(np.float32)
    out_host = np.zeros(int(np.prod(out_shape)), dtype=np.float32)
    self_t, self_addr = create_acl_tensor(self_host, self_shape, aclnn.ACL_FLOAT)
    mat2_t, mat2_addr = create_acl_tensor(mat2_host, mat2_shape, aclnn.ACL_FLOAT)
    out_t, out_addr = create_acl_tensor(out_host, out_shape, aclnn.ACL_FLOAT)

    # 3. the first phase, the workspace if > 0, the second phase
    cube_math_type = 1
    workspace_size, executor, ret = first(self_t, mat2_t, out_t, cube_math_type)
    check(ret, f"aclnn{args.api}GetWorkspaceSize")
    workspace_addr = 0
    if workspace_size > 0:
        workspace_addr, ret = acl.rt.malloc(workspace_size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "allocate workspace")
    check(second(workspace_addr, workspace_size, executor, stream), f"aclnn{args.api}")

    # 4. (fixed pattern) wait for the stream
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")

    # 5. copy the result back to the host and print it
    result = np.zeros(int(np.prod(out_shape)), dtype=np.float32)
    check(acl.rt.memcpy(acl.util.numpy_to_ptr(result), result.nbytes, out_addr, result.nbytes,
                        aclnn.ACL_MEMCPY_DEVICE_TO_HOST), "copy result from device to host")
    for i, value in enumerate(result):
        print(f"result[{i}] is: {value:f}")

    # 6. destroy the aclTensors; 7. free device memory, stream, device
    for t in (self_t, mat2_t, out_t):
        aclnn.aclDestroyTensor(t)
    for addr in (self_addr, mat2_addr, out_addr):
        acl.rt.free(addr)
    if workspace_size > 0:
        acl.rt.free(workspace_addr)
    acl.rt.destroy_stream(stream)
    acl.rt.reset_device(device_id)
    acl.finalize()
    return {"out": result.reshape(out_shape)}


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
