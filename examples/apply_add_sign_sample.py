"""aclnnApplyAddSign in the official aclnn sample flow, on the simulated NPU.

The data are the MindSpore ``ops.ApplyAddSign`` example (its API document on
mindspore.cn): var [[0.6, 0.4], [0.1, 0.5]], m [[0.6, 0.5], [0.2, 0.6]],
grad [[0.3, 0.7], [0.1, 0.8]] (float32), lr 0.001, alpha 1.0, sign_decay 0.99, beta 0.9.
The scalars are one-element device tensors, as aclnn optimizers take them (see
``aclnn/ops/apply_add_sign.py``). The flow is the one of the ops-nn samples
(``docs/reference/api.md`` §3): init -> tensors -> GetWorkspaceSize -> workspace -> run ->
synchronize -> copy back and print -> destroy and free. The printed values equal the
seed's output to its printed digits::

    var: [[5.99403024e-01, 3.98607016e-01], [9.98010039e-02, 4.98407990e-01]]
    m:   [[5.70000052e-01, 5.19999981e-01], [1.89999998e-01, 6.20000064e-01]]

Run: ``python examples/apply_add_sign_sample.py [--soc Ascend910B1]``
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
from aclnn.ops.apply_add_sign import aclnnApplyAddSign, aclnnApplyAddSignGetWorkspaceSize


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
        print(f"{name} result[{i}] is: {value:.8e}")
    return result.reshape(shape)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B1")
    args = parser.parse_args(argv)

    # 1. (fixed pattern) device/stream initialisation
    device_id = 0
    stream = init(device_id, args.soc)

    # 2. build the inputs (var and m are also the outputs)
    shape = [2, 2]
    hosts = {
        "var": np.array([[0.6, 0.4], [0.1, 0.5]], dtype=np.float32),
        "m": np.array([[0.6, 0.5], [0.2, 0.6]], dtype=np.float32),
        "lr": np.array([0.001], dtype=np.float32),
        "alpha": np.array([1.0], dtype=np.float32),
        "signDecay": np.array([0.99], dtype=np.float32),
        "beta": np.array([0.9], dtype=np.float32),
        "grad": np.array([[0.3, 0.7], [0.1, 0.8]], dtype=np.float32),
    }
    tensors, addrs = {}, {}
    for name, host in hosts.items():
        tensors[name], addrs[name] = create_acl_tensor(host, list(host.shape), aclnn.ACL_FLOAT)

    # 3. call the aclnn API: first phase, workspace, second phase
    workspace_size, executor, ret = aclnnApplyAddSignGetWorkspaceSize(
        tensors["var"], tensors["m"], tensors["lr"], tensors["alpha"], tensors["signDecay"],
        tensors["beta"], tensors["grad"])
    check(ret, "aclnnApplyAddSignGetWorkspaceSize")
    workspace_addr = 0
    if workspace_size > 0:
        workspace_addr, ret = acl.rt.malloc(workspace_size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "allocate workspace")
    ret = aclnnApplyAddSign(workspace_addr, workspace_size, executor, stream)
    check(ret, "aclnnApplyAddSign")

    # 4. (fixed pattern) wait for the stream
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")

    # 5. copy the results back and print them
    results = {name: print_out_result(name, shape, addrs[name]) for name in ("var", "m")}

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
