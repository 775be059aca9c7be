"""AdamOffload on the simulated NPU, in the official sample flow.

A small regression model ``y = x @ dense.weight + dense.bias`` (parameters on the device)
is trained with MindSpore's ``nn.AdamOffload`` (``aclnn.optim.AdamOffload``): each step the
gradients go device -> host, the host computes the Adam update with m and v in host
memory, the update goes host -> device and ``aclnnInplaceAdd`` applies it. The sample
prints the loss, ``acl.rt.get_mem_info`` before and after the optimizer is built (m and v
take no device memory) and the timeline of the last step (D2H, host, H2D and kernel per
parameter on the simulated clock).

The flow is the one of the aclnn samples (``docs/reference/api.md`` §3): init -> device
tensors -> work -> copy back -> destroy and free -> reset -> finalize. The forward and
backward passes run on the host here (the sample is about the optimizer): each step the
parameters are read back, the gradients computed with numpy and copied to device
gradient tensors.

Run: ``python examples/adam_offload_sample.py [--steps 50] [--soc Ascend910B1]``
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
from aclnn.optim import AdamOffload, Parameter


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


def create_acl_tensor(host_data):
    """aclrtMalloc + aclrtMemcpy the host data, then aclCreateTensor with contiguous strides."""
    size = host_data.nbytes
    device_addr, ret = acl.rt.malloc(size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    check(ret, "aclrtMalloc")
    check(acl.rt.memcpy(device_addr, size, acl.util.numpy_to_ptr(host_data), size,
                        aclnn.ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")
    shape = list(host_data.shape)
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = shape[i + 1] * strides[i + 1]
    tensor = aclnn.aclCreateTensor(shape, aclnn.ACL_FLOAT, strides, 0, aclnn.ACL_FORMAT_ND,
                                   shape, device_addr)
    return tensor, device_addr


def read_back(tensor):
    out = np.zeros(tuple(tensor.view_dims), np.float32)
    check(acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, tensor.tensor_data, out.nbytes,
                        aclnn.ACL_MEMCPY_DEVICE_TO_HOST), "copy result from device to host")
    return out


def write(tensor, host):
    host = np.ascontiguousarray(host, np.float32)
    check(acl.rt.memcpy(tensor.tensor_data, host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes,
                        aclnn.ACL_MEMCPY_HOST_TO_DEVICE), "copy gradient to device")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B1")
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args(argv)

    # 1. (fixed pattern) device initialisation
    device_id = 0
    init(device_id, args.soc)

    # 2. the model's parameters and gradient buffers on the device
    rng = np.random.default_rng(0)
    n_in, n_out, batch = 64, 16, 256
    x = rng.standard_normal((batch, n_in)).astype(np.float32)
    w_true = rng.standard_normal((n_in, n_out)).astype(np.float32) * 0.5
    y = x @ w_true + 0.1
    hosts = {"dense.weight": np.zeros((n_in, n_out), np.float32),
             "dense.bias": np.zeros(n_out, np.float32)}
    params, grads, addrs = [], [], []
    for name, h in hosts.items():
        t, a = create_acl_tensor(h)
        params.append(Parameter(t, name))
        g, ga = create_acl_tensor(np.zeros_like(h))
        grads.append(g)
        addrs += [a, ga]

    # 3. the optimizer: on the device it holds one staging buffer for the update (the
    #    largest parameter) and, from the first step, the add kernel's workspace
    free_before, total, ret = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)
    check(ret, "aclrtGetMemInfo")
    optimizer = AdamOffload(params, learning_rate=0.05, weight_decay=1e-4)
    free_after, _, _ = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)
    moments = sum(m.nbytes + v.nbytes for m, v in zip(optimizer.moment1, optimizer.moment2))
    print(f"get_mem_info: AdamOffload took {free_before - free_after} B of device memory "
          f"(the staging buffer); m and v use {moments} B of host memory")

    # 4. training: forward/backward on the host, the optimizer step through the device
    losses = []
    for step in range(args.steps):
        w, b = (read_back(p.tensor) for p in params)
        err = x @ w + b - y
        losses.append(float(np.mean(err ** 2)))
        write(grads[0], 2.0 / batch * x.T @ err / n_out)
        write(grads[1], 2.0 / batch * err.sum(axis=0) / n_out)
        optimizer.step(tuple(grads))
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step:3d}  loss {losses[-1]:.6f}")
    free_end, _, _ = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)
    print(f"get_mem_info: after training AdamOffload holds {optimizer.device_bytes} B of device "
          f"memory (staging + the add kernels' workspaces; free {free_end} B of {total} B)")
    print("timeline of the last step (device clock):")
    print(optimizer.timeline_text())
    result = {"loss": losses, "staging_bytes": free_before - free_after,
              "device_bytes": optimizer.device_bytes, "moments_host_bytes": moments}

    # 5. release the optimizer, the aclTensors, device memory and the device
    optimizer.release()
    for t in [p.tensor for p in params] + grads:
        aclnn.aclDestroyTensor(t)
    for a in addrs:
        acl.rt.free(a)
    acl.rt.reset_device(device_id)
    acl.finalize()
    return result


if __name__ == "__main__":
    main()
    sys.exit(0)
