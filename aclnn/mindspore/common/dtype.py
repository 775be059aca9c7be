"""MindSpore's data types (``mindspore.common.dtype``, imported as ``mstype``), the ones the
implicit type conversion rules rank (mindspore.cn docs r2.0, note/operator_list_implicit:
"bool < uint8 < int8 < int16 < int32 < int64 < float16 < float32 < float64").

A type prints as MindSpore prints it (``Float32``) and maps to a numpy dtype.
"""
from __future__ import annotations

import numpy as np


class Type:
    """One MindSpore data type: ``str()`` is MindSpore's name, :attr:`np` the numpy dtype."""

    def __init__(self, name: str, np_dtype):
        self.name = name
        self.np = np.dtype(np_dtype)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"mindspore.{self.name.lower()}"


bool_ = Type("Bool", np.bool_)
uint8 = Type("UInt8", np.uint8)
int8 = Type("Int8", np.int8)
int16 = Type("Int16", np.int16)
int32 = Type("Int32", np.int32)
int64 = Type("Int64", np.int64)
float16 = Type("Float16", np.float16)
float32 = Type("Float32", np.float32)
float64 = Type("Float64", np.float64)

#: The implicit conversion order, lowest first.
PRIORITY = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)
_BY_NUMPY = {t.np: t for t in PRIORITY}


def from_numpy(np_dtype) -> Type:
    """The MindSpore type of a numpy dtype; TypeError for one this front end has not."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"data type {np_dtype} is not supported; supported: "
                        f"{', '.join(t.name for t in PRIORITY)}") from None


def is_float(t: Type) -> bool:
    return t in (float16, float32, float64)


__all__ = ["Type", "PRIORITY", "from_numpy", "is_float", "bool_", "uint8", "int8", "int16",
           "int32", "int64", "float16", "float32", "float64"]
