"""Your own kernel on an acl stream: ``ACLRT_LAUNCH_KERNEL`` and ``<<<>>>``, then a sweep.

The kernel is the Ascend C Add sample: ``z = x + y`` in half, each block a contiguous
slice of ``totalLength / blockDim`` elements, tiles of ``tileLength`` elements through
double-buffered queues. The host side is a pyACL program: the kernel is launched on a
stream of the simulated device with a blockDim and its arguments, as
``ACLRT_LAUNCH_KERNEL(add_custom)(blockDim, stream, x, y, z, ...)`` and
``add_custom<<<blockDim, nullptr, stream>>>(x, y, z, ...)`` do; its profile lands in the
device's records (``Device.profiles``, ``Device.tasks``, trace, op summary) like any
operator's. Then :func:`sweep` runs the kernel over cores and tile lengths with a runner
of our own and plots time and speed-up, one line per tile length.

Run it: ``python examples/custom_kernel_launch.py [--plot sweep.png]``. docs/kernels.md
("Your kernel on a stream, and as an operator") walks through it.
"""
import argparse

import numpy as np

import aclnn
import npusim
from aclnn import acl
from aclnn.custom import ACLRT_LAUNCH_KERNEL, kernel_call
from npusim.ascendc import *  # noqa: F403
from npusim.sweeps import profile_record

BUFFER_NUM = 2                 # two buffers per queue: copy-in of tile i+1 overlaps tile i


def add_custom(x, y, z, totalLength, tileLength):
    """z = x + y (half), ``totalLength`` elements over GetBlockNum() blocks."""
    blockLength = totalLength // GetBlockNum()
    offset = GetBlockIdx() * blockLength * 2     # a GM address moves in bytes: 2 B per half
    xGm, yGm, zGm = GlobalTensor(half), GlobalTensor(half), GlobalTensor(half)
    xGm.SetGlobalBuffer(x + offset, blockLength)
    yGm.SetGlobalBuffer(y + offset, blockLength)
    zGm.SetGlobalBuffer(z + offset, blockLength)
    pipe = TPipe()
    inQueueX, inQueueY = TQue(TPosition.VECIN), TQue(TPosition.VECIN)
    outQueueZ = TQue(TPosition.VECOUT)
    pipe.InitBuffer(inQueueX, BUFFER_NUM, tileLength * 2)
    pipe.InitBuffer(inQueueY, BUFFER_NUM, tileLength * 2)
    pipe.InitBuffer(outQueueZ, BUFFER_NUM, tileLength * 2)
    for i in range(blockLength // tileLength):
        xLocal, yLocal = inQueueX.AllocTensor(half), inQueueY.AllocTensor(half)
        DataCopy(xLocal, xGm[i * tileLength], tileLength)      # a GlobalTensor index is
        DataCopy(yLocal, yGm[i * tileLength], tileLength)      # in elements
        inQueueX.EnQue(xLocal)
        inQueueY.EnQue(yLocal)
        xLocal, yLocal = inQueueX.DeQue(half), inQueueY.DeQue(half)
        zLocal = outQueueZ.AllocTensor(half)
        Add(zLocal, xLocal, yLocal, tileLength)
        outQueueZ.EnQue(zLocal)
        inQueueX.FreeTensor(xLocal)
        inQueueY.FreeTensor(yLocal)
        zLocal = outQueueZ.DeQue(half)
        DataCopy(zGm[i * tileLength], zLocal, tileLength)
        outQueueZ.FreeTensor(zLocal)


def _check(ret, what):
    if ret != 0:
        raise RuntimeError(f"{what} returned {ret}: {acl.get_recent_err_msg()}")


def launch_on_stream(blockDim=8, totalLength=8 * 8 * 2048, tileLength=2048):
    """The pyACL program: returns (z, the expected z, the launch's KernelProfile)."""
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal(totalLength).astype(np.float16)
    y_host = rng.standard_normal(totalLength).astype(np.float16)
    z_host = np.empty_like(x_host)
    nbytes = x_host.nbytes
    _check(acl.init(), "acl.init")
    _check(acl.rt.set_device(0), "acl.rt.set_device")
    stream, ret = acl.rt.create_stream()
    _check(ret, "acl.rt.create_stream")
    dev_ptrs = []
    for host in (x_host, y_host, z_host):
        ptr, ret = acl.rt.malloc(nbytes, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        _check(ret, "acl.rt.malloc")
        dev_ptrs.append(ptr)
    x, y, z = dev_ptrs
    for ptr, host in ((x, x_host), (y, y_host)):
        _check(acl.rt.memcpy(ptr, nbytes, acl.util.numpy_to_ptr(host), nbytes,
                             aclnn.ACL_MEMCPY_HOST_TO_DEVICE), "acl.rt.memcpy")

    # ACLRT_LAUNCH_KERNEL(add_custom)(blockDim, stream, x, y, z, totalLength, tileLength)
    ret = ACLRT_LAUNCH_KERNEL(add_custom)(blockDim, stream, x, y, z, totalLength, tileLength)
    _check(ret, "ACLRT_LAUNCH_KERNEL")
    # add_custom<<<blockDim, nullptr, stream>>>(x, y, z, totalLength, tileLength)
    ret = kernel_call(add_custom)[blockDim, None, stream](x, y, z, totalLength, tileLength)
    _check(ret, "<<<>>>")
    _check(acl.rt.synchronize_stream(stream), "acl.rt.synchronize_stream")

    device = aclnn.runtime.current_device()
    profile = device.profiles[-1]              # both launches are in the device's records
    _check(acl.rt.memcpy(acl.util.numpy_to_ptr(z_host), nbytes, z, nbytes,
                         aclnn.ACL_MEMCPY_DEVICE_TO_HOST), "acl.rt.memcpy")
    for ptr in dev_ptrs:
        acl.rt.free(ptr)
    acl.rt.destroy_stream(stream)
    acl.rt.reset_device(0)
    acl.finalize()
    return z_host, (x_host + y_host).astype(np.float16), profile


def sweep_point(point):
    """Sweep runner: ``point`` has ``cores`` and ``tile`` (the kernel's tileLength, our own
    axis); returns the figures of one launch on a bare device (:func:`profile_record`)."""
    cores, tile = point["cores"], point["tile"]
    total = 48 * 16 * 1024
    device = npusim.Device("Ascend910B1")
    x, y, z = (device.gm.malloc(total * 2) for _ in range(3))
    device.gm.write(x, np.ones(total, np.float16))
    device.gm.write(y, np.ones(total, np.float16))
    device.launch(device.default_stream, add_custom, cores, (x, y, z, total, tile))
    errors = device.synchronize_stream(device.default_stream)
    if errors:
        raise errors[0]
    return profile_record(device.profiles, device.soc)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plot", help="write the sweep's plot (PNG)")
    parser.add_argument("--serial", action="store_true", help="run the sweep in this process")
    args = parser.parse_args(argv)
    z, expected, profile = launch_on_stream()
    print("max abs error:", float(np.max(np.abs(z.astype(np.float32) - expected))))
    print(profile.summary())
    result = npusim.sweep(sweep_point, cores=[1, 2, 4, 8, 16, 48], tile=[1024, 4096],
                          executor="serial" if args.serial else None)
    print(result.table(["cores", "tile", "duration_us", "speedup", "hbm_floor_us", "bound",
                        "bound_percent"]))
    if args.plot:
        result.plot(args.plot)
        print("plot:", args.plot)
    return z, expected, profile, result


if __name__ == "__main__":
    main()
