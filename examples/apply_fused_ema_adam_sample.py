"""The official aclnnApplyFusedEmaAdam sample, in Python on the simulated NPU.

A line-by-line rendering of ``examples/test_aclnn_apply_fused_ema_adam.cpp`` of the ops-nn
repository (``docs/reference/api.md`` §3): grad, var, m, v and s are {2, 2, 2} float tensors
holding 1..8, step is {10}, lr 0.001, emaDecay 0.5, beta1 0.9, beta2 0.999, eps 1e-8,
mode 1 (AdamW), biasCorrection true, weightDecay 0.5. It prints the updated var, m, v
and s the way the sample's PrintOutResult does.

Run: ``python examples/apply_fused_ema_adam_sample.py [--soc Ascend910B1]``
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


def print_out_result(name, shape, device_addr):
    size = int(np.prod(shape))
    result = np.zeros(size, dtype=np.float32)
    ret = acl.rt.memcpy(acl.util.numpy_to_ptr(result), result.nbytes, device_addr, result.nbytes,
                        aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
    check(ret, "copy result from device to host")
    for i, value in enumerate(result):
        print(f"{name} result[{i}] is: {value:f}")
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B1")
    args = parser.parse_args(argv)

    # 1. (fixed pattern) device/stream initialisation
    device_id = 0
    stream = init(device_id, args.soc)

    # 2. build the inputs and outputs
    shape = [2, 2, 2]
    values = np.arange(1, 9, dtype=np.float32)
    names = ("grad", "var", "m", "v", "s")
    hosts = {name: values.copy() for name in names}
    tensors, addrs = {}, {}
    for name in names:
        tensors[name], addrs[name] = create_acl_tensor(hosts[name], shape, aclnn.ACL_FLOAT)
    step_host = np.array([10], dtype=np.int64)
    tensors["step"], addrs["step"] = create_acl_tensor(step_host, [1], aclnn.ACL_INT64)
    lr, ema_decay, beta1, beta2, eps = 0.001, 0.5, 0.9, 0.999, 1e-8
    mode, bias_correction, weight_decay = 1, True, 0.5

    # 3. call the aclnn API: first phase, workspace, second phase
    workspace_size, executor, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(
        tensors["grad"], tensors["var"], tensors["m"], tensors["v"], tensors["s"],
        tensors["step"], lr, ema_decay, beta1, beta2, eps, mode, bias_correction, weight_decay)
    check(ret, "aclnnApplyFusedEmaAdamGetWorkspaceSize")
    workspace_addr = 0
    if workspace_size > 0:
        workspace_addr, ret = acl.rt.malloc(workspace_size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "allocate workspace")
    ret = aclnn.aclnnApplyFusedEmaAdam(workspace_addr, workspace_size, executor, stream)
    check(ret, "aclnnApplyFusedEmaAdam")

    # 4. (fixed pattern) wait for the stream
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")

    # 5. copy the results back and print them
    results = {name: print_out_result(name, shape, addrs[name]) for name in ("var", "m", "v", "s")}

    # 6. release the aclTensors; 7. release device memory, stream, device
    for t in tensors.values():
        aclnn.aclDestroyTensor(t)
    for addr in addrs.values():
        acl.rt.free(addr)
    if workspace_size > 0:
        acl.rt.free(workspace_addr)
    acl.rt.destroy_stream(stream)
    acl.rt.reset_device(device_id)
    acl.finalize()
    return results


if __name__ == "__main__":
    main()
    sys.exit(0)
