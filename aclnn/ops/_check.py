"""Parameter checks shared by the first phases of the operators.

Each check raises :class:`ParamError` carrying the aclnn status and a message that names
the argument; the operator turns it into ``report_error(code, message)`` and returns the
code, so a failed call changes nothing (``reference/api.md`` §1 and §4 "Null checks").
"""
from __future__ import annotations

import numbers

from aclnn import runtime
from aclnn.constants import (ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR,
                             ACLNN_ERR_RUNTIME_ERROR, aclFormat)

#: Formats that are plain row-major data (accepted where a document says "ND"); torch_npu
#: passes NCL/NCHW/NCDHW for 3-, 4- and 5-D tensors (reference/api.md §2).
ND_COMPATIBLE = frozenset({aclFormat.ACL_FORMAT_ND, aclFormat.ACL_FORMAT_NCHW,
                           aclFormat.ACL_FORMAT_NHWC, aclFormat.ACL_FORMAT_NCL,
                           aclFormat.ACL_FORMAT_NCDHW, aclFormat.ACL_FORMAT_NDHWC,
                           aclFormat.ACL_FORMAT_HWCN, aclFormat.ACL_FORMAT_NC})


class ParamError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def not_null(**tensors) -> None:
    """161001 for the first argument that is None."""
    for name, t in tensors.items():
        if t is None:
            raise ParamError(ACLNN_ERR_PARAM_NULLPTR,
                             f"Expected a proper Tensor but got null for argument {name}.")
        if getattr(t, "destroyed", False):
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} was destroyed (aclDestroyTensor)")


def device():
    """The current device, or 361001 when acl.init/acl.rt.set_device were not called."""
    dev = runtime.current_device()
    if dev is None:
        raise ParamError(ACLNN_ERR_RUNTIME_ERROR, "no device is set: call acl.init() and "
                         "acl.rt.set_device() first")
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


def contiguous_on_device(name: str, t, dev) -> None:
    """The tensor is contiguous and its bytes lie inside one live device allocation."""
    if not t.is_contiguous():
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} is not contiguous (strides "
                         f"{list(t.strides)} for shape {list(t.view_dims)}); this simulator "
                         "runs the operator on contiguous tensors only")
    nbytes = t.view_nbytes()
    if nbytes and not dev.gm.contains(t.data_address(), nbytes):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name}'s data 0x{t.data_address():x} + "
                         f"{nbytes} B is not inside one device allocation (aclrtMalloc)")


def number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} must be a number, got {value!r}")
    return float(value)
