"""Your own kernel as an aclnn operator: ``aclnnScaledAddGetWorkspaceSize`` / ``aclnnScaledAdd``.

``z = x + alpha * y`` (float32 or float16), an Ascend C operator project in miniature:

* the host side, ``scaled_add_tiling``: the tiling function (op_host), from the SoC and the
  shapes to a TilingData: how many blocks (``blockDim``), how many elements each takes,
  the UB tile length (``tileLength``, an attribute you can sweep), the workspace (none);
* the device side, ``scaled_add``: the kernel (op_kernel), with the generated entry's
  arguments ``(x, y, z, workspace, tiling)``;
* :class:`aclnn.custom.CustomOp` makes the two-phase aclnn API of them, with the
  validation (dtypes, shapes, contiguity, device memory), the workspace and the single-use
  executor of the built-in operators;
* :func:`npusim_tools.registry.register_custom` with a numpy golden makes it known to the
  ``npusim`` command and to sweeps::

      npusim run --plugin examples/custom_aclnn_op.py ScaledAdd --shape 262144
      npusim sweep --plugin examples/custom_aclnn_op.py ScaledAdd --cores 1,2,4,8 \\
          --axis tileLength=1024,4096 --plot scaled_add.png

Run it: ``python examples/custom_aclnn_op.py`` (a pyACL program calling the operator, then
a sweep over cores and tileLength).
"""
import argparse
from dataclasses import dataclass

import numpy as np

import aclnn
from aclnn import acl
from aclnn.custom import CustomOp
from npusim.ascendc import *  # noqa: F403
from npusim_tools.registry import register_custom

BUFFER_NUM = 2
ALIGN = 256                    # elements per block share: whole 32 B blocks for any dtype


@dataclass
class ScaledAddTilingData:
    blockDim: int
    blockLength: int           # elements of every block but the last
    lastLength: int            # elements of the last block
    tileLength: int
    alpha: float
    dtype: np.dtype            # the kernel's type (x's)
    workspaceSize: int = 0     # no workspace: the kernel calls no library API that needs it


def scaled_add_tiling(soc, shapes, dtypes, attrs):
    """Host side: split ``x``'s elements over the vector cores in multiples of 256 elements."""
    total = int(np.prod(shapes["x"]))
    tile = int(attrs["tileLength"])
    if tile <= 0 or tile % ALIGN:
        raise ValueError(f"tileLength must be a positive multiple of {ALIGN}, got {tile}")
    # 3 queues x BUFFER_NUM buffers of tileLength elements must fit the UB
    itemsize = dtypes["x"].itemsize
    ub = soc.ub_usable - soc.ascendc_reserved_ub
    if 3 * BUFFER_NUM * tile * itemsize > ub:
        raise ValueError(f"tileLength {tile} needs {3 * BUFFER_NUM * tile * itemsize} B of UB; "
                         f"{soc.soc_version} has {ub} B for the kernel")
    if total == 0:
        return ScaledAddTilingData(0, 0, 0, tile, float(attrs["alpha"]), dtypes["x"])
    chunks = -(-total // ALIGN)
    block_dim = min(soc.vector_block_num, chunks)
    per = -(-chunks // block_dim) * ALIGN
    block_dim = -(-total // per)
    return ScaledAddTilingData(block_dim, per, total - per * (block_dim - 1), tile,
                               float(attrs["alpha"]), dtypes["x"])


def scaled_add(x, y, z, workspace, tiling):
    """Device side: z = x + alpha * y over this block's elements, tile by tile."""
    length = tiling.lastLength if GetBlockIdx() == GetBlockNum() - 1 else tiling.blockLength
    T = half if tiling.dtype == np.float16 else float32
    size = tiling.dtype.itemsize
    offset = GetBlockIdx() * tiling.blockLength * size        # bytes, not elements
    xGm, yGm, zGm = GlobalTensor(T), GlobalTensor(T), GlobalTensor(T)
    xGm.SetGlobalBuffer(x + offset, length)
    yGm.SetGlobalBuffer(y + offset, length)
    zGm.SetGlobalBuffer(z + offset, length)
    pipe = TPipe()
    qx, qy, qz = TQue(TPosition.VECIN), TQue(TPosition.VECIN), TQue(TPosition.VECOUT)
    for q in (qx, qy, qz):
        pipe.InitBuffer(q, BUFFER_NUM, tiling.tileLength * size)
    done = 0
    while done < length:
        n = min(tiling.tileLength, length - done)     # a multiple of 256: whole 32 B blocks
        xl, yl = qx.AllocTensor(T), qy.AllocTensor(T)
        DataCopy(xl, xGm[done], n)
        DataCopy(yl, yGm[done], n)
        qx.EnQue(xl)
        qy.EnQue(yl)
        xl, yl = qx.DeQue(T), qy.DeQue(T)
        zl = qz.AllocTensor(T)
        Muls(zl, yl, tiling.alpha, n)                 # rounds alpha * y to T, as the unit does
        Add(zl, xl, zl, n)
        qz.EnQue(zl)
        qx.FreeTensor(xl)
        qy.FreeTensor(yl)
        zl = qz.DeQue(T)
        DataCopy(zGm[done], zl, n)
        qz.FreeTensor(zl)
        done += n


def _check(shapes, dtypes, attrs):
    if int(np.prod(shapes["x"])) % ALIGN:
        raise ValueError(f"x has {int(np.prod(shapes['x']))} elements; ScaledAdd takes a "
                         f"multiple of {ALIGN}")


SCALED_ADD = CustomOp("ScaledAdd", kernel=scaled_add, tiling=scaled_add_tiling,
                      inputs=("x", "y"), attrs=("alpha", "tileLength"), outputs=("z",),
                      dtypes=("float32", "float16"), socs=("Ascend910B", "Ascend910_93"),
                      check=_check)
aclnnScaledAddGetWorkspaceSize, aclnnScaledAdd = SCALED_ADD.aclnn_api()


def scaled_add_golden(x, y, alpha, tileLength):
    """z = x + alpha * y with the kernel's two roundings: alpha * y to the dtype, then the sum."""
    t = x.dtype.type
    return (x + (y * t(alpha)).astype(x.dtype)).astype(x.dtype)


register_custom(SCALED_ADD, golden=scaled_add_golden, default_shape=(1 << 18,),
                attrs={"alpha": 0.5, "tileLength": 2048},
                summary="z = x + alpha * y (a custom operator: examples/custom_aclnn_op.py)")


def _ok(ret, what):
    if ret != 0:
        raise RuntimeError(f"{what} returned {ret}: {acl.get_recent_err_msg()}")


def call_operator(n=1 << 16, alpha=0.5, tileLength=2048):
    """A pyACL program calling aclnnScaledAdd; returns (z, expected z, executor tiling)."""
    rng = np.random.default_rng(0)
    hosts = {k: rng.standard_normal(n).astype(np.float32) for k in ("x", "y")}
    hosts["z"] = np.zeros(n, np.float32)
    _ok(acl.init(), "acl.init")
    _ok(acl.rt.set_device(0), "acl.rt.set_device")
    stream, ret = acl.rt.create_stream()
    _ok(ret, "acl.rt.create_stream")
    ptrs, tensors = {}, {}
    for k, host in hosts.items():
        ptrs[k], ret = acl.rt.malloc(host.nbytes, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        _ok(ret, "acl.rt.malloc")
        _ok(acl.rt.memcpy(ptrs[k], host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes,
                          aclnn.ACL_MEMCPY_HOST_TO_DEVICE), "acl.rt.memcpy")
        tensors[k] = aclnn.aclCreateTensor([n], aclnn.ACL_FLOAT, [1], 0, aclnn.ACL_FORMAT_ND,
                                           [n], ptrs[k])

    workspaceSize, executor, ret = aclnnScaledAddGetWorkspaceSize(
        tensors["x"], tensors["y"], alpha, tileLength, tensors["z"])
    _ok(ret, "aclnnScaledAddGetWorkspaceSize")
    workspace = 0
    if workspaceSize > 0:
        workspace, ret = acl.rt.malloc(workspaceSize, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        _ok(ret, "acl.rt.malloc")
    _ok(aclnnScaledAdd(workspace, workspaceSize, executor, stream), "aclnnScaledAdd")
    _ok(acl.rt.synchronize_stream(stream), "acl.rt.synchronize_stream")

    z = np.empty(n, np.float32)
    _ok(acl.rt.memcpy(acl.util.numpy_to_ptr(z), z.nbytes, ptrs["z"], z.nbytes,
                      aclnn.ACL_MEMCPY_DEVICE_TO_HOST), "acl.rt.memcpy")
    print(aclnn.runtime.current_device().profiles[-1].summary())
    for k in hosts:
        aclnn.aclDestroyTensor(tensors[k])
        acl.rt.free(ptrs[k])
    acl.rt.destroy_stream(stream)
    acl.rt.reset_device(0)
    acl.finalize()
    return z, scaled_add_golden(hosts["x"], hosts["y"], alpha, tileLength), executor.tiling


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plot", help="write the sweep's plot (PNG)")
    args = parser.parse_args(argv)
    z, expected, tiling = call_operator()
    print("tiling:", tiling)
    print("max abs error:", float(np.max(np.abs(z - expected))))
    from npusim_tools import sweep
    result = sweep("ScaledAdd", cores=[1, 4, 16], tileLength=[1024, 4096], executor="serial")
    print(result.table())
    if args.plot:
        result.plot(args.plot)
        print("plot:", args.plot)
    return z, expected, result


if __name__ == "__main__":
    main()
