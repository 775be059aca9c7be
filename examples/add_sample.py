"""The official aclnnAdd / aclnnInplaceAdd sample, in Python on the simulated NPU.

A line-by-line rendering of the example of ``math/add/docs/aclnnAdd&aclnnInplaceAdd_en.md``
in the ops-math repository (``docs/reference/api.md`` §3 "aclnnAdd"): self and other are {4, 2}
float tensors holding {0, 1, 2, 3, 4, 5, 6, 7} and {1, 1, 1, 2, 2, 2, 3, 3}, alpha is
1.2 (``aclCreateScalar(&alphaValue, ACL_FLOAT)``). It runs aclnnAdd into out and prints
out, then runs aclnnInplaceAdd (a fresh first phase: one executor per first-phase call)
on self and prints self. Both print ``self + 1.2 * other``.

Run: ``python examples/add_sample.py [--soc Ascend910B1]``
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
from aclnn.ops.add import (aclnnAdd, aclnnAddGetWorkspaceSize, aclnnInplaceAdd,
                           aclnnInplaceAddGetWorkspaceSize)


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


def print_result(shape, device_addr):
    size = int(np.prod(shape))
    result = np.zeros(size, dtype=np.float32)
    ret = acl.rt.memcpy(acl.util.numpy_to_ptr(result), result.nbytes, device_addr, result.nbytes,
                        aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
    check(ret, "copy result from device to host")
    for i, value in enumerate(result):
        print(f"result[{i}] is: {value:f}")
    return result


def run(first_phase, second_phase, args, name, stream):
    """First phase, workspace if > 0, second phase, synchronize; returns the workspace."""
    workspace_size, executor, ret = first_phase(*args)
    check(ret, f"{name}GetWorkspaceSize")
    workspace_addr = 0
    if workspace_size > 0:
        workspace_addr, ret = acl.rt.malloc(workspace_size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "allocate workspace")
    check(second_phase(workspace_addr, workspace_size, executor, stream), name)
    # 4. (fixed pattern) wait for the stream
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")
    return workspace_size, workspace_addr


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B1")
    args = parser.parse_args(argv)

    # 1. (fixed pattern) device/stream initialisation
    device_id = 0
    stream = init(device_id, args.soc)

    # 2. build the inputs and outputs
    shape = [4, 2]
    self_host = np.array([0, 1, 2, 3, 4, 5, 6, 7], dtype=np.float32)
    other_host = np.array([1, 1, 1, 2, 2, 2, 3, 3], dtype=np.float32)
    out_host = np.zeros(8, dtype=np.float32)
    self_t, self_addr = create_acl_tensor(self_host, shape, aclnn.ACL_FLOAT)
    other_t, other_addr = create_acl_tensor(other_host, shape, aclnn.ACL_FLOAT)
    alpha = aclnn.aclCreateScalar(1.2, aclnn.ACL_FLOAT)
    if alpha is None:
        raise RuntimeError(f"aclCreateScalar failed\n{acl.get_recent_err_msg()}")
    out_t, out_addr = create_acl_tensor(out_host, shape, aclnn.ACL_FLOAT)

    # 3. aclnnAdd: first phase, workspace, second phase; 5. copy out back and print it
    workspaces = [run(aclnnAddGetWorkspaceSize, aclnnAdd, (self_t, other_t, alpha, out_t),
                      "aclnnAdd", stream)]
    results = {"out": print_result(shape, out_addr)}

    # 3. aclnnInplaceAdd on self, with a fresh first phase; 5. copy self back and print it
    print("\ntest aclnnInplaceAdd")
    workspaces.append(run(aclnnInplaceAddGetWorkspaceSize, aclnnInplaceAdd,
                          (self_t, other_t, alpha), "aclnnInplaceAdd", stream))
    results["self"] = print_result(shape, self_addr)

    # 6. destroy the aclTensors and the aclScalar; 7. free device memory, stream, device
    aclnn.aclDestroyTensor(self_t)
    aclnn.aclDestroyTensor(other_t)
    aclnn.aclDestroyScalar(alpha)
    aclnn.aclDestroyTensor(out_t)
    for addr in (self_addr, other_addr, out_addr):
        acl.rt.free(addr)
    for size, addr in workspaces:
        if size > 0:
            acl.rt.free(addr)
    acl.rt.destroy_stream(stream)
    acl.rt.reset_device(device_id)
    acl.finalize()
    return results


if __name__ == "__main__":
    main()
    sys.exit(0)
