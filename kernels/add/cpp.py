"""The C++ (Ascend C) Add kernel, ``add_kernel.cpp``, beside the Python one (kernel.py).

aclnnAdd launches it instead of :func:`npusim.kernels.add.kernel.add` when the kernel
implementation of "Add" is "cpp" (:func:`aclnn.kernel_impl.set_kernel_impl`, or
``NPUSIM_KERNEL_IMPL=Add=cpp``) and the recipe is one it covers (:func:`covers`). It is built
by :mod:`npusim.cpp` against the user's Ascend C headers (``NPUSIM_ASC_DEVKIT``; the first
build takes tens of seconds, later ones load from the cache) and receives the same tiling,
packed into the C struct ``AddTilingData`` of the source (:func:`tiling_bytes`).
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from npusim.kernels.add.tiling import AddTilingData

SOURCE = Path(__file__).resolve().parent / "add_kernel.cpp"
#: numpy dtype -> aclDataType (``aclnn.constants``) of the dtypes the C++ kernel computes
ACL_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int32): 3,
              np.dtype(np.int16): 6}
#: ``struct AddTilingData`` of add_kernel.cpp: 5 uint32, int32, 2 uint32 (no padding)
_LAYOUT = struct.Struct("<5IiII")

_KERNEL: list = []


def covers(td: AddTilingData) -> bool:
    """Whether the C++ kernel computes ``td``'s recipe: self, other, out and the arithmetic
    of one dtype among FLOAT, FLOAT16, INT32, INT16 (no Cast, no 8-bit wrap, no bf16
    product)."""
    dt = td.computeDtype
    return (dt in ACL_DTYPES and td.selfDtype == td.otherDtype == td.outDtype == dt
            and not (td.selfCasts or td.otherCasts or td.outCasts)
            and td.wrap is None and td.productDtype is None)


def tiling_bytes(td: AddTilingData) -> bytes:
    """``td`` as the bytes of add_kernel.cpp's ``AddTilingData`` (alpha's bits in the
    compute dtype, little-endian, from the lowest byte).

    Raises:
        ValueError: a recipe :func:`covers` refuses.
    """
    if not covers(td):
        raise ValueError(f"the C++ Add kernel does not compute {td.selfDtype} + {td.otherDtype}"
                         f" -> {td.outDtype} in {td.computeDtype} (casts or wrap)")
    alpha_bits = 0
    if td.alpha is not None:
        raw = np.asarray(td.alpha, td.computeDtype).tobytes()
        alpha_bits = int.from_bytes(raw, "little")
    return _LAYOUT.pack(td.totalLength, td.blockFactor, td.tailBlockFactor, td.ubFactor,
                        td.blockDim, ACL_DTYPES[td.computeDtype], td.alpha is not None,
                        alpha_bits)


def kernel():
    """The compiled ``add_kernel`` (:class:`npusim.cpp.CppKernel`), built on first use.

    Raises:
        npusim.cpp.CppBuildError: no compiler or Ascend C headers (the message says which
        setting to make), or a compile error.
    """
    if not _KERNEL:
        import npusim.cpp
        _KERNEL.append(npusim.cpp.load(SOURCE, "add_kernel"))
    return _KERNEL[0]
