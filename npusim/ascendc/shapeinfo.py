"""``ShapeInfo``: the shape a LocalTensor may carry (``LocalTensor::SetShapeInfo`` /
``GetShapeInfo``), which some high-level APIs read when they are not given a shape.

Ascend C's ShapeInfo (kernel_tensor.h) holds ``shapeDim`` dimensions ``shape[]``, the
``originalShapeDim`` dimensions ``originalShape[]`` of the unpadded data, and a DataFormat;
constructed from the shape alone, the original shape is the shape. The one reader modelled
here is SoftMax (asc-devkit impl/adv_api/detail/activation/softmax/softmax_base_impl.h,
``SoftMaxImpl``: without a SoftMaxShapeInfo whose srcM and srcK are non-zero, the shape is
the source tensor's, last dimension K and the product of the others M —
softmax_common_shape_process.h ``GetLastAxisShapeND`` / ``GetLastAxisOriginShapeND``).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["DataFormat", "ShapeInfo"]


class DataFormat(enum.IntEnum):
    """``DataFormat`` of a ShapeInfo (the values npusim's APIs distinguish: ND and NZ)."""

    ND = 0
    NZ = 1


@dataclass(frozen=True, init=False)
class ShapeInfo:
    """``ShapeInfo(shapeDim, shape[, originalShapeDim, originalShape][, dataFormat])``."""

    shapeDim: int
    shape: tuple
    originalShapeDim: int
    originalShape: tuple
    dataFormat: DataFormat

    def __init__(self, shapeDim: int = 0, shape=(), originalShapeDim=None, originalShape=None,
                 dataFormat: DataFormat = DataFormat.ND):
        if isinstance(originalShapeDim, DataFormat):        # the (dim, shape, format) form
            originalShapeDim, dataFormat = None, originalShapeDim
        shape = tuple(int(x) for x in list(shape)[:int(shapeDim)])
        if originalShapeDim is None:
            originalShapeDim, originalShape = len(shape), shape
        original = tuple(int(x) for x in list(originalShape)[:int(originalShapeDim)])
        object.__setattr__(self, "shapeDim", len(shape))
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "originalShapeDim", len(original))
        object.__setattr__(self, "originalShape", original)
        object.__setattr__(self, "dataFormat", DataFormat(int(dataFormat)))

    def last_axis_nd(self, original: bool = False) -> tuple[int, int]:
        """(m, k): k the last dimension, m the product of the others (0, 0 when empty)."""
        dims = self.originalShape if original else self.shape
        if not dims or dims[-1] <= 0:
            return 0, 0
        size = 1
        for d in dims:
            size *= d
        return size // dims[-1], dims[-1]
