"""``mindspore.Tensor`` for this front end: a value on the host with a MindSpore dtype.

The operators copy it to the simulated device when they run (:mod:`aclnn.mindspore`).
Construction follows MindSpore 2.10 as measured: a numpy array keeps its dtype, a Python
float (or a list of them) becomes Float32, a Python int Int64, a bool Bool, unless
``dtype`` is given. ``repr`` is MindSpore's form (the one its API documents' examples print)::

    Tensor(shape=[2, 2], dtype=Float32, value=
    [[ 5.99403024e-01,  3.98607016e-01],
     [ 9.98010039e-02,  4.98407990e-01]])

and ``str`` is numpy's, as ``print(tensor)`` shows it in MindSpore.
"""
from __future__ import annotations

import sys

import numpy as np

from aclnn.mindspore.common import dtype as mstype


def mindspore_kind(obj) -> str | None:
    """"Parameter" or "Tensor" for an object of the real ``mindspore`` package, else None."""
    names = {c.__name__ for c in type(obj).__mro__ if c.__module__.split(".")[0] == "mindspore"}
    if "Parameter" in names:
        return "Parameter"
    return "Tensor" if "Tensor" in names else None


def _as_array(input_data) -> np.ndarray:
    if isinstance(input_data, Tensor) or mindspore_kind(input_data):
        return np.array(input_data.asnumpy())
    if isinstance(input_data, (np.ndarray, np.generic)):
        return np.array(input_data)
    if isinstance(input_data, (bool, int, float, list, tuple)):
        arr = np.array(input_data)
        if arr.dtype == np.float64:             # Python floats are Float32 in MindSpore
            arr = arr.astype(np.float32)
        return arr
    raise TypeError(f"For 'Tensor', input_data must be a Tensor, numpy array, number, list or "
                    f"tuple, but got {type(input_data).__name__}.")


class Tensor:
    """A MindSpore Tensor: ``Tensor(input_data, dtype=None)``.

    Args:
        input_data: a Tensor (this front end's or real MindSpore's), a numpy array or
            scalar, a Python bool/int/float, or a (nested) list/tuple of them.
        dtype: a type of :mod:`aclnn.mindspore.common.dtype` (``mstype.float32``...), or
            None for the dtype of the data.

    Raises:
        TypeError: input_data of another type, or dtype not a MindSpore type.
    """

    def __init__(self, input_data, dtype=None):
        arr = _as_array(input_data)
        if dtype is not None:
            if not isinstance(dtype, mstype.Type):
                raise TypeError(f"For 'Tensor', dtype must be a mindspore type such as "
                                f"mstype.float32, but got {dtype!r}.")
            arr = arr.astype(dtype.np)
        self._dtype = mstype.from_numpy(arr.dtype)
        self._data = arr

    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def dtype(self) -> mstype.Type:
        return self._dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return self._data.size

    def asnumpy(self) -> np.ndarray:
        """A copy of the value as a numpy array."""
        return self._data.copy()

    def _assign(self, value: np.ndarray) -> None:
        """Write an operator's result in place (same shape and dtype): the input of an
        in-place operator, a Parameter or (as MindSpore 2.10 allows) a Tensor."""
        self._data[...] = value

    def __float__(self) -> float:
        return float(self._data.item())        # one element, as MindSpore requires

    def __str__(self) -> str:
        return str(self._data)

    def __repr__(self) -> str:
        a = self._data
        sep = "\n" if a.ndim >= 2 else " "
        return f"Tensor(shape={list(a.shape)}, dtype={self._dtype}, value={sep}{_value_text(a)})"


def _value_text(a: np.ndarray) -> str:
    """MindSpore's printed value: floats as ``% .8e`` (``% .4e`` for float16) with ", "
    between elements; a 0-d value as Python prints it (``%g`` for a float)."""
    if a.ndim == 0:
        x = a.item()
        return format(x, "g") if isinstance(x, float) else str(x)
    formatter = None
    if a.dtype.kind == "f":
        digits = 4 if a.dtype == np.float16 else 8
        width = digits + 7                      # sign, digit, point, digits, e+XX

        def formatter(x):
            return f"{x: .{digits}e}".rjust(width)
        formatter = {"float_kind": formatter}
    return np.array2string(a, separator=", ", formatter=formatter, threshold=1000,
                           edgeitems=3, max_line_width=sys.maxsize)
