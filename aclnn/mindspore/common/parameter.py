"""``mindspore.Parameter`` for this front end: a named Tensor that operators update in place."""
from __future__ import annotations

import numpy as np

from aclnn.mindspore.common.tensor import Tensor


class Parameter(Tensor):
    """A MindSpore Parameter: ``Parameter(default_input, name=None, requires_grad=True)``.

    Args:
        default_input: the initial value, anything :class:`Tensor` accepts.
        name: the parameter's name; None takes the name of the Cell attribute it is
            assigned to (``nn.Cell``), as in MindSpore. AdamOffload decays, without
            parameter groups, the parameters whose name contains neither "beta" nor
            "gamma".
        requires_grad: whether ``Cell.trainable_params`` lists it.

    The operators that take it as an input they write (``ApplyAddSign``'s var and m,
    ``FusedSparseAdam``'s var, m and v, AdamOffload's parameters) update its value in
    place; MindSpore's implicit type conversion never converts it (RuntimeError).
    """

    def __init__(self, default_input, name=None, requires_grad=True):
        super().__init__(default_input)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"For 'Parameter', name must be a str, but got {type(name).__name__}.")
        self.name = name
        self.requires_grad = bool(requires_grad)

    def set_data(self, data) -> "Parameter":
        """Replace the value (a Tensor, array or number, converted to the Parameter's dtype)."""
        self._data = np.array(Tensor(data, self.dtype)._data)
        return self

    def __repr__(self) -> str:
        return (f"Parameter (name={self.name}, shape={self.shape}, dtype={self.dtype}, "
                f"requires_grad={self.requires_grad})")

    __str__ = __repr__
