"""Broadcast in the unified buffer: Ascend C's ``Broadcast<T, dim, axis>`` high-level API.

Source: the Ascend C API page "Broadcast" (``atlasascendc_api_07_0853``, supported on Atlas
A2/A3 training and inference products): it broadcasts a LocalTensor to an output shape,
e.g. ``[[1], [2]]`` of shape (2, 1) to shape (2, 16), for ``dim`` 1 or 2. Its documented
implementation for ``[m, 1] -> [m, k]``, all on the vector unit, is:

1. ``Brcb``: each element becomes one 32 B data block;
2. copy: each data block is copied into ``k'`` elements (``k`` rounded up to 32 B), which
   is already the result when ``k * sizeof(T)`` is a multiple of 32 B;
3. otherwise ``GatherMask`` keeps the first ``k`` of every ``k'`` elements.

The simulator follows that cost model: Brcb at 8 elements in per cycle, the copy at one
256 B repeat per cycle, GatherMask at 64 (16-bit; 8-bit data moved as 16-bit) / 32
(32-bit) elements per cycle (docs/reference/hardware.md §2.1, the rates of
:mod:`npusim.ascendc.gather`). ``[1, k] -> [m, k]`` (axis 0) and ``dim = 1`` are costed as
the copy step alone [R: the page only draws the axis-1 case].

Python form: the template parameters ``dim`` and ``axis`` follow from the two shapes (the
call checks them when given)::

    Broadcast(dstLocal, srcLocal, [m, k], [m, 1])            # Broadcast<T, 2, 1>
    Broadcast(dstLocal, srcLocal, [m, k], [1, k], axis=0)    # Broadcast<T, 2, 0>

Both tensors are compact row-major in UB. The optional ``sharedTmpBuffer`` is accepted
for source compatibility; the simulator does not need it.

Shared rules (the two forms, 32 B UB alignment, address overlap, the cost terms — head,
repeats, UB bank conflicts — and the common errors): the :mod:`npusim.ascendc.vector` module
docstring. Broadcast is a library routine: it costs the Brcb, copy and GatherMask steps
above, each a PIPE_V record with its own head and bank conflicts.
"""
from __future__ import annotations

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc.gather import BRCB_RATE, GATHER_MASK_RATE
from npusim.ascendc.types import ONE_BLK_SIZE, ONE_REPEAT_BYTE_SIZE
from npusim.ascendc.vector import issue_vector
from npusim.errors import DtypeError, KernelError



def _shape(name: str, shape) -> tuple[int, ...]:
    dims = tuple(int(d) for d in shape)
    if len(dims) not in (1, 2) or any(d <= 0 for d in dims):
        raise KernelError("Broadcast", f"{name} {list(dims)} must have 1 or 2 positive dims "
                          "(Broadcast supports dim = 1 or 2)", pipe="PIPE_V")
    return dims


def Broadcast(dstLocal, srcLocal, dstShape, srcShape, sharedTmpBuffer=None, *, dim=None,
              axis=None) -> None:
    """``Broadcast<T, dim, axis>(dstLocal, srcLocal, dstShape, srcShape[, sharedTmpBuffer])``.

    Args:
        dstLocal: LocalTensor of ``prod(dstShape)`` elements (compact row-major).
        srcLocal: LocalTensor of ``prod(srcShape)`` elements, the same dtype (1-, 2- or
            4-byte types [R: the Brcb/GatherMask steps exist for 16/32-bit data; 8-bit
            data is moved as bytes]).
        dstShape, srcShape: 1 or 2 dims each; ``srcShape[axis] == 1`` and every other dim
            equal to ``dstShape``'s.
        dim, axis: the template parameters; checked when given.

    Raises:
        KernelError: shapes that are not a broadcast along one axis, overlapping src/dst
            (not supported by the API), or a tensor too small for its shape.
        DtypeError: different or unsupported dtypes.
    """
    ctx = _core.current_core()
    dst_shape, src_shape = _shape("dstShape", dstShape), _shape("srcShape", srcShape)
    if len(dst_shape) != len(src_shape):
        raise KernelError("Broadcast", f"dstShape {list(dst_shape)} and srcShape "
                          f"{list(src_shape)} have different ranks", pipe="PIPE_V")
    if dim is not None and int(dim) != len(dst_shape):
        raise KernelError("Broadcast", f"dim = {dim} but the shapes have {len(dst_shape)} dims",
                          pipe="PIPE_V")
    axes = [i for i, (d, s) in enumerate(zip(dst_shape, src_shape)) if d != s]
    if any(src_shape[i] != 1 for i in axes) or len(axes) > 1:
        raise KernelError("Broadcast", f"srcShape {list(src_shape)} does not broadcast to "
                          f"dstShape {list(dst_shape)} along one axis", pipe="PIPE_V")
    brc_axis = axes[0] if axes else len(dst_shape) - 1
    if axis is not None and axes and int(axis) != brc_axis:
        raise KernelError("Broadcast", f"axis = {axis} but the shapes broadcast along axis "
                          f"{brc_axis}", pipe="PIPE_V")
    if dstLocal.dtype != srcLocal.dtype:
        raise DtypeError("Broadcast", f"operands mix {srcLocal.dtype.name} and "
                         f"{dstLocal.dtype.name}", pipe="PIPE_V")
    isz = dstLocal.dtype.itemsize
    if isz not in (1, 2, 4):
        raise DtypeError("Broadcast", f"{dstLocal.dtype.name} is not a 1-, 2- or 4-byte type",
                         pipe="PIPE_V")
    n_dst, n_src = int(np.prod(dst_shape)), int(np.prod(src_shape))
    d_lo, d_hi = dstLocal.offset, dstLocal.offset + n_dst * isz
    s_lo, s_hi = srcLocal.offset, srcLocal.offset + n_src * isz
    if d_lo < s_hi and s_lo < d_hi:
        raise KernelError("Broadcast", "srcLocal and dstLocal overlap (not supported by the "
                          "API)", pipe="PIPE_V")
    src = srcLocal.elements(n_src, "Broadcast").reshape(src_shape)
    dstLocal.elements(n_dst, "Broadcast")[...] = np.broadcast_to(src, dst_shape).reshape(-1)

    copy_rate = ONE_REPEAT_BYTE_SIZE // isz          # one 256 B repeat per cycle
    # the checker sees the whole source read and the whole destination written once
    sizes = dict(dst_nbytes=n_dst * isz, src_nbytes=n_src * isz)
    if len(dst_shape) == 2 and brc_axis == 1:
        m, k = dst_shape
        k_pad = -(-k * isz // ONE_BLK_SIZE) * ONE_BLK_SIZE // isz
        issue_vector(ctx, "Broadcast.Brcb", m, BRCB_RATE, dstLocal, (srcLocal,), **sizes)
        issue_vector(ctx, "Broadcast.Copy", m * k_pad, copy_rate, dstLocal, (srcLocal,), **sizes)
        if k_pad != k:
            issue_vector(ctx, "Broadcast.GatherMask", m * k, GATHER_MASK_RATE.get(isz, GATHER_MASK_RATE[2]), dstLocal,
                         (srcLocal,), **sizes)
    else:
        issue_vector(ctx, "Broadcast.Copy", n_dst, copy_rate, dstLocal, (srcLocal,), **sizes)
