"""``mindspore.ops``: the primitives of :mod:`.operations` (``ApplyAddSign``,
``FusedSparseAdam``); ``from aclnn.mindspore.ops import operations as ops`` works too, as in
MindSpore."""
from aclnn.mindspore.ops import operations
from aclnn.mindspore.ops.operations import ApplyAddSign, FusedSparseAdam

__all__ = ["operations", "ApplyAddSign", "FusedSparseAdam"]
