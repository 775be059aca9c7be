"""``mindspore.common``: dtypes (:mod:`.dtype`), :class:`Tensor` and :class:`Parameter`."""
from aclnn.mindspore.common import dtype
from aclnn.mindspore.common.parameter import Parameter
from aclnn.mindspore.common.tensor import Tensor

__all__ = ["dtype", "Tensor", "Parameter"]
