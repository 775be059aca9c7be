"""The primitives' argument rules: what each input may be, and MindSpore's implicit type
conversion.

Rules (mindspore.cn docs r2.0, note/operator_list_implicit.html, "转换规则"), applied within
each dtype group of a primitive's signature (``sig_dtype`` T, T1...; the groups are the
``__mindspore_signature__`` of MindSpore 2.10's ``ApplyAddSign`` and ``FusedSparseAdam``):

* a number with tensors takes the tensors' dtype; but with a bool tensor an int or float
  number makes both int32 or float32, and with an int/uint tensor a float number makes
  both float32;
* tensors of different dtypes take the highest in ``bool < uint8 < int8 < int16 < int32 <
  int64 < float16 < float32 < float64`` (int8 with uint8: int16);
* "不支持对Parameter进行数据类型转换": an input the operator writes that would need converting
  raises RuntimeError (MindSpore 2.10 measured raises TypeError here, saying the same for
  "the input tensor of an in-place operator"; the documents -- the MindSpore API documents and the rules
  page -- say RuntimeError, and that is what is raised);
* a group of numbers alone is not converted: a Python float is Float32, an int Int64, a
  bool Bool (so ``lr=1`` is then refused by the operator's dtype check, as measured).

Inputs may be this front end's Tensor/Parameter or, where the real ``mindspore`` package is
installed, its Tensor/Parameter; results are written back into either (:func:`store`).
"""
from __future__ import annotations

import numbers
import sys
from dataclasses import dataclass

import numpy as np

from aclnn.mindspore.common import dtype as mstype
from aclnn.mindspore.common.tensor import Tensor, mindspore_kind


@dataclass
class Arg:
    """One input: ``value`` is an array for a tensor, a number for a number."""

    name: str
    value: object
    dtype: mstype.Type
    source: object
    number: bool


def tensor_arg(op: str, name: str, x, number_ok: bool = False) -> Arg:
    """The input ``name`` of primitive ``op``: a Tensor (or Parameter), or a number where
    ``number_ok``; TypeError for anything else."""
    if isinstance(x, Tensor):
        return Arg(name, x._data, x.dtype, x, False)
    if mindspore_kind(x):
        arr = np.asarray(x.asnumpy())
        return Arg(name, arr, mstype.from_numpy(arr.dtype), x, False)
    if number_ok and isinstance(x, (numbers.Number, np.number, np.bool_)) \
            and not isinstance(x, (complex, np.complexfloating)):
        t = (mstype.bool_ if isinstance(x, (bool, np.bool_)) else
             mstype.int64 if isinstance(x, (numbers.Integral, np.integer)) else mstype.float32)
        return Arg(name, x, t, x, True)
    what = "a Number or a Tensor" if number_ok else "a Tensor"
    raise TypeError(f"For '{op}', '{name}' must be {what}, but got {type(x).__name__}.")


def _promote(types) -> mstype.Type:
    top = max(types, key=mstype.PRIORITY.index)
    if top is mstype.int8 and mstype.uint8 in types:
        return mstype.int16
    return top


def convert(op: str, group: list[Arg], writes=()) -> None:
    """Convert the inputs of one dtype group in place (see the module docstring); a
    ``writes`` input that would need converting raises RuntimeError, before anything is
    converted."""
    tensors = [a.dtype for a in group if not a.number]
    if not tensors:
        return
    target = _promote(tensors)
    floats = any(a.number and a.dtype is mstype.float32 for a in group)
    ints = any(a.number and a.dtype is mstype.int64 for a in group)
    if target is mstype.bool_ and (floats or ints):
        target = mstype.float32 if floats else mstype.int32
    elif not mstype.is_float(target) and target is not mstype.bool_ and floats:
        target = mstype.float32
    for a in group:
        if a.dtype is not target and a.name in writes:
            raise RuntimeError(
                f"For '{op}', data type conversion of Parameter is not supported: '{a.name}' "
                f"is {a.dtype} but the inputs {', '.join(b.name for b in group)} convert to "
                f"{target} (MindSpore's implicit type conversion rules).")
    for a in group:
        if a.dtype is not target:
            a.value = (target.np.type(a.value) if a.number
                       else np.asarray(a.value).astype(target.np))
            a.dtype = target


def store(src, value: np.ndarray) -> None:
    """Write an operator's result into ``src``, the Tensor or Parameter (this front end's
    or MindSpore's) of an input it updates in place."""
    if isinstance(src, Tensor):
        src._assign(value)
        return
    ms_tensor = sys.modules["mindspore"].Tensor(np.array(value))
    if mindspore_kind(src) == "Parameter":
        src.set_data(ms_tensor)
    else:
        src.assign_value(ms_tensor)


def scalar_value(op: str, a: Arg, dtype) -> np.ndarray:
    """A scalar input as a one-element array of ``dtype`` (what the aclnn operator takes,
    docs/tutorial.md §10); ValueError unless it is a number, a 0-d tensor or a tensor of
    shape [1]."""
    arr = np.asarray(a.value)
    if arr.ndim > 1 or arr.size != 1:
        raise ValueError(f"For '{op}', '{a.name}' must be a scalar (shape [] or [1]), but got "
                         f"shape {list(arr.shape)}.")
    return arr.reshape(1).astype(dtype)
