"""The PrivateUse1 kernels registered with ``torch.library``: the factories that make a
tensor on device "npu" from nothing (``torch.empty``, ``empty_strided``: torch builds
``zeros``, ``ones``, ``full``, ``randn``, ``arange``, ``.to("npu")``... on them), and
``rms_norm``, whose own PrivateUse1 kernel keeps torch from decomposing it before it
reaches :func:`aclnn.torch_npu._ops.dispatch` (a CompositeImplicitAutograd operator is
decomposed unless the backend registers a kernel of its own).
"""
from __future__ import annotations

import torch

from aclnn.torch_npu import _runtime
from aclnn.torch_npu._tensor import empty


def _index(device) -> int | None:
    if device is None:
        return None
    device = torch.device(device)
    return device.index if device.index is not None else _runtime.ensure().device_id


def _empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None,
                         memory_format=None):
    return empty(size, dtype or torch.get_default_dtype(), _index(device))


def _empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return empty(size, dtype or torch.get_default_dtype(), _index(device), stride=stride)


def _arange(*args, dtype=None, layout=None, device=None, pin_memory=None):
    # torch's arange fills an empty out= tensor it resizes; a Python tensor cannot be
    # resized in place, so the values are made on the host and copied over
    from aclnn.torch_npu._tensor import from_host
    return from_host(torch.arange(*args, dtype=dtype), _index(device))


def _rms_norm(input, normalized_shape, weight=None, eps=None):     # noqa: A002
    from aclnn.torch_npu import _ops
    return _ops.dispatch(torch.ops.aten.rms_norm.default, (input, normalized_shape, weight, eps),
                         {})


def register() -> torch.library.Library:
    """Register the kernels; the returned Library keeps them registered."""
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("empty.memory_format", _empty_memory_format, "PrivateUse1")
    lib.impl("empty_strided", _empty_strided, "PrivateUse1")
    lib.impl("rms_norm", _rms_norm, "PrivateUse1")
    for overload in ("arange", "arange.start", "arange.start_step"):
        lib.impl(overload, _arange, "PrivateUse1")
    return lib
