"""Parameter checks shared by the first phases of the operators.

Each check raises :class:`ParamError` carrying the aclnn status and a message that names
the argument; the operator turns it into ``report_error(code, message)`` and returns the
code, so a failed call changes nothing (``docs/reference/api.md`` §1 and §4 "Null checks").

Codes: 161001 (ACLNN_ERR_PARAM_NULLPTR) for a null (None) tensor or scalar, as CANN's
``OP_CHECK_NULL``; 161002 (ACLNN_ERR_PARAM_INVALID) for everything else the operator
documents as a parameter error (dtype, format, dims, shapes). Python lets a caller pass
what C's types forbid -- an object that is not an aclTensor, a destroyed one, a descriptor
whose fields were overwritten, a number of the wrong type -- and those are 161002 too, the
closest documented code ("parameter check error", ``docs/reference/api.md`` §1) [R].
"""
from __future__ import annotations

import numbers

import numpy as np

from aclnn import runtime
from aclnn.constants import (ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR,
                             ACLNN_ERR_RUNTIME_ERROR, aclDataType, aclFormat)
from aclnn.tensor import aclTensor

#: Formats that are plain row-major data (accepted where a document says "ND"); torch_npu
#: passes NCL/NCHW/NCDHW for 3-, 4- and 5-D tensors (docs/reference/api.md §2).
ND_COMPATIBLE = frozenset({aclFormat.ACL_FORMAT_ND, aclFormat.ACL_FORMAT_NCHW,
                           aclFormat.ACL_FORMAT_NHWC, aclFormat.ACL_FORMAT_NCL,
                           aclFormat.ACL_FORMAT_NCDHW, aclFormat.ACL_FORMAT_NDHWC,
                           aclFormat.ACL_FORMAT_HWCN, aclFormat.ACL_FORMAT_NC})


class ParamError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _int_tuple(value, n: int | None = None) -> bool:
    """Whether ``value`` is a tuple of ints (of length ``n`` when given)."""
    return (isinstance(value, tuple) and all(_is_int(v) for v in value)
            and (n is None or len(value) == n))


def well_formed(name: str, t) -> None:
    """161002 when an aclTensor's fields are not what aclCreateTensor builds.

    aclCreateTensor validates its arguments, but a Python caller can overwrite the
    descriptor's attributes afterwards (``t.view_dims = (-1, 4)``); every later check
    and the launch read those fields, so they are checked once here [R].
    """
    problems = []
    if not _int_tuple(t.view_dims) or any(d < 0 for d in t.view_dims):
        problems.append(f"view dims {t.view_dims!r} (ints >= 0)")
    elif not _int_tuple(t.strides, len(t.view_dims)):
        problems.append(f"strides {t.strides!r} (one int per view dim)")
    if not _int_tuple(t.storage_dims) or any(d < 0 for d in t.storage_dims):
        problems.append(f"storage dims {t.storage_dims!r} (ints >= 0)")
    if not _is_int(t.offset) or t.offset < 0:
        problems.append(f"offset {t.offset!r} (an int >= 0, elements)")
    if not isinstance(t.data_type, aclDataType):
        problems.append(f"dataType {t.data_type!r} (an aclDataType)")
    if not isinstance(t.format, aclFormat):
        problems.append(f"format {t.format!r} (an aclFormat)")
    if not _is_int(t.tensor_data) or t.tensor_data < 0:
        problems.append(f"tensorData {t.tensor_data!r} (an int device address)")
    if problems:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} is not a well-formed aclTensor: "
                         f"bad {'; bad '.join(problems)}")


def objects(*args) -> None:
    """Check ``(name, object, cls)`` triples (or ``(name, object, cls, hint)``, the hint
    ending the message of an object that is not a ``cls``): the nulls first, then the
    objects.

    * 161001 for the first argument that is None ("Expected a proper Tensor but got null
      for argument ...", the ``OP_CHECK_NULL`` message of ops-nn), checked over all the
      arguments before anything else, as ``CheckNotNull`` does;
    * 161002 for one that is not a ``cls`` (aclTensor, aclScalar...), that was destroyed
      (aclDestroyTensor / aclDestroyScalar), or -- for a tensor -- that is not well
      formed (:func:`well_formed`) [R: Python-only cases, see the module docstring].
    """
    for name, obj, cls, *_ in args:
        if obj is None:
            what = "Tensor" if cls is aclTensor else cls.__name__.removeprefix("acl")
            raise ParamError(ACLNN_ERR_PARAM_NULLPTR,
                             f"Expected a proper {what} but got null for argument {name}.")
    for name, obj, cls, *hint in args:
        if not isinstance(obj, cls):
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} must be an {cls.__name__}, got "
                             f"{type(obj).__name__}{''.join(hint)}")
        if obj.destroyed:
            destroy = "aclDestroyTensor" if cls is aclTensor else "aclDestroyScalar"
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} was destroyed ({destroy})")
        if cls is aclTensor:
            well_formed(name, obj)


def not_null(scalar_inputs=(), **tensors) -> None:
    """Every keyword is a tensor argument: 161001 for None, then 161002 for an object
    that is not a live, well-formed aclTensor (see :func:`objects`). The message for a
    name in ``scalar_inputs`` given in another form (a number, an aclScalar) says what to
    pass instead (:data:`SCALAR_INPUT_RULE`)."""
    hint = f"; {SCALAR_INPUT_RULE}"
    objects(*((name, t, aclTensor, hint if name in scalar_inputs else "")
              for name, t in tensors.items()))


#: How an optimizer's scalar inputs (lr, beta1, epsilon...) are passed to the aclnn layer:
#: one-element aclTensors on the device, of the updated tensor's dtype -- aclnnApplyAdamW
#: takes beta1Power, beta2Power, lr, weightDecay, beta1, beta2 and eps so ("shape要求为[1]",
#: dtype "与varRef保持一致", 161002 when "shape大小不为1"; ops-nn
#: optim/apply_adam_w/docs/aclnnApplyAdamW.md). docs/tutorial.md §10.
SCALAR_INPUT_RULE = ("pass a scalar input as a one-element aclTensor (shape [1]) of the updated "
                     "tensor's dtype in device memory, as aclnnApplyAdamW takes lr and the "
                     "betas; Python numbers and aclScalar are not accepted")


def scalar_tensors(ref_name: str, ref, **scalars) -> None:
    """161002 unless each scalar input is a one-element aclTensor (at most 8 dims, as
    every aclnn tensor) with ``ref``'s dtype (:data:`SCALAR_INPUT_RULE`)."""
    for name, t in scalars.items():
        if t.data_type != ref.data_type:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has dtype {t.data_type.name} "
                             f"but {ref_name} has {ref.data_type.name}; they must be equal")
        if t.numel() != 1:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has shape {list(t.view_dims)} "
                             f"({t.numel()} elements); it must be a scalar of one element")
        ndim_between(name, t, 0, 8)


def device():
    """This thread's current device, or 361001 when it has none (acl.init and
    acl.rt.set_device or acl.rt.set_context not called in this thread)."""
    dev = runtime.current_device()
    if dev is None:
        raise ParamError(ACLNN_ERR_RUNTIME_ERROR, runtime.no_context_reason())
    return dev


def dtype_in(name: str, t, allowed) -> None:
    if t.data_type not in allowed:
        names = ", ".join(a.name for a in allowed)
        raise ParamError(ACLNN_ERR_PARAM_INVALID,
                         f"{name} has dtype {t.data_type.name}; supported: {names}")


def same_dtype_shape(ref_name: str, ref, **tensors) -> None:
    for name, t in tensors.items():
        if t.data_type != ref.data_type:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has dtype {t.data_type.name} but "
                             f"{ref_name} has {ref.data_type.name}; they must be equal")
        if t.view_dims != ref.view_dims:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has shape {list(t.view_dims)} but "
                             f"{ref_name} has {list(ref.view_dims)}; they must be equal")


def ndim_between(name: str, t, lo: int, hi: int) -> None:
    if not lo <= t.ndim <= hi:
        raise ParamError(ACLNN_ERR_PARAM_INVALID,
                         f"{name} has {t.ndim} dimensions; expected {lo} to {hi}")


def nd_format(name: str, t) -> None:
    if t.format not in ND_COMPATIBLE:
        raise ParamError(ACLNN_ERR_PARAM_INVALID,
                         f"{name} has format {t.format.name}; only ND (and plain NCHW-style) "
                         "formats are supported")


def in_storage(name: str, t) -> None:
    """161002 when the view reaches outside its storage.

    Every element the view addresses, ``offset + sum(i_k * strides[k])``, must lie in
    ``[0, prod(storageDims))`` (:meth:`aclTensor.in_storage_bounds`). CANN does not
    check it and reads whatever the strides point at; here such a descriptor is a
    parameter error, so the kernel never touches bytes the caller did not describe [R].
    """
    if not t.in_storage_bounds():
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name}'s view (shape {list(t.view_dims)}, "
                         f"strides {list(t.strides)}, offset {t.offset}) reaches outside its "
                         f"storage of {list(t.storage_dims)} = {t.storage_numel()} elements")


def contiguous_on_device(name: str, t, dev) -> None:
    """The view stays inside its storage (:func:`in_storage`), is contiguous, and its bytes
    lie inside one live device allocation (a freed or foreign pointer is 161002)."""
    in_storage(name, t)
    if not t.is_contiguous():
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} is not contiguous (strides "
                         f"{list(t.strides)} for shape {list(t.view_dims)}); this simulator "
                         "runs the operator on contiguous tensors only")
    nbytes = t.view_nbytes()
    if nbytes and not dev.gm.contains(t.data_address(), nbytes):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name}'s data 0x{t.data_address():x} + "
                         f"{nbytes} B is not inside one device allocation (aclrtMalloc)")


def number(name: str, value) -> float:
    """A ``double`` attribute: a real number (not a bool) that fits a double; 161002 else."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} must be a number, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} = {value} does not fit a double "
                         "(C's type of the attribute)") from None


def boolean(name: str, value) -> bool:
    """A ``bool`` attribute: True/False (Python or numpy) or the ints 0 and 1; 161002 else
    [R: C's bool cannot hold anything else, so other Python values are rejected rather
    than tested for truth]."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if _is_int(value) and value in (0, 1):
        return bool(value)
    raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} must be a bool, got {value!r}")
