"""FusedSparseAdam in the aclnn sample flow, on the simulated NPU.

The example of the MindSpore document ``mindspore.ops.FusedSparseAdam`` (seed
``mindspore.ops.FusedSparseAdam.txt``): var, m and v are [3, 1, 2] float32 tensors of ones,
beta1_power 0.9, beta2_power 0.999, lr 0.001, beta1 0.9, beta2 0.999, epsilon 1e-8, a
[2, 1, 2] random gradient and indices [0, 1]. The operator is not lazy: row 2, which no
index names, is updated too (the seed prints 0.99971527 for it). The six scalars are
one-element FLOAT device tensors, as aclnn takes an optimizer's scalar inputs
(docs/tutorial.md §10). Written in the steps of the official aclnn samples
(docs/reference/api.md §3): init, tensors, the two phases, synchronize, copy back, release.
(``examples/mindspore_fused_sparse_adam.py`` runs the document's own code instead.)

Run: ``python examples/fused_sparse_adam_sample.py [--soc Ascend910B1] [--seed 0]``
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
from aclnn.ops.fused_sparse_adam import (aclnnFusedSparseAdam,
                                         aclnnFusedSparseAdamGetWorkspaceSize)


def check(ret, what):
    if ret != aclnn.ACL_SUCCESS:
        raise RuntimeError(f"{what} failed. ERROR: {ret}\n{acl.get_recent_err_msg()}")


def init(device_id, soc):
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


def create_acl_tensor(host_data, data_type):
    size = host_data.nbytes
    device_addr, ret = acl.rt.malloc(size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    check(ret, "aclrtMalloc")
    check(acl.rt.memcpy(device_addr, size, acl.util.numpy_to_ptr(host_data), size,
                        aclnn.ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")
    shape = list(host_data.shape)
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = shape[i + 1] * strides[i + 1]
    tensor = aclnn.aclCreateTensor(shape, data_type, strides, 0, aclnn.ACL_FORMAT_ND, shape,
                                   device_addr)
    return tensor, device_addr


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B1")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    device_id = 0
    stream = init(device_id, args.soc)

    hosts = {name: np.ones((3, 1, 2), np.float32) for name in ("var", "m", "v")}
    hosts["grad"] = np.random.default_rng(args.seed).random((2, 1, 2), dtype=np.float32)
    hosts["indices"] = np.array([0, 1], np.int32)
    scalars = dict(beta1_power=0.9, beta2_power=0.999, lr=0.001, beta1=0.9, beta2=0.999,
                   epsilon=1e-8)
    for name, value in scalars.items():         # scalar inputs: one-element device tensors
        hosts[name] = np.array([value], np.float32)
    tensors, addrs = {}, {}
    for name, data in hosts.items():
        dt = aclnn.ACL_INT32 if name == "indices" else aclnn.ACL_FLOAT
        tensors[name], addrs[name] = create_acl_tensor(data, dt)

    workspace_size, executor, ret = aclnnFusedSparseAdamGetWorkspaceSize(
        tensors["var"], tensors["m"], tensors["v"], *(tensors[name] for name in scalars),
        tensors["grad"], tensors["indices"], False)
    check(ret, "aclnnFusedSparseAdamGetWorkspaceSize")
    workspace_addr = 0
    if workspace_size > 0:
        workspace_addr, ret = acl.rt.malloc(workspace_size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "allocate workspace")
    check(aclnnFusedSparseAdam(workspace_addr, workspace_size, executor, stream),
          "aclnnFusedSparseAdam")
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")

    results = {}
    for name in ("var", "m", "v"):
        out = np.zeros((3, 1, 2), np.float32)
        check(acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, addrs[name], out.nbytes,
                            aclnn.ACL_MEMCPY_DEVICE_TO_HOST), "copy result")
        results[name] = out
    print(results["var"])

    for t in tensors.values():
        aclnn.aclDestroyTensor(t)
    for addr in addrs.values():
        acl.rt.free(addr)
    if workspace_size > 0:
        acl.rt.free(workspace_addr)
    acl.rt.destroy_stream(stream)
    acl.rt.reset_device(device_id)
    acl.finalize()
    results["grad"] = hosts["grad"]
    return results


if __name__ == "__main__":
    main()
    sys.exit(0)
