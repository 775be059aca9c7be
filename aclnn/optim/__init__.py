"""Optimizers built on the host API: host-side classes that drive aclnn kernels through
the pyACL runtime (``aclnn.acl``).

* :class:`AdamOffload` -- MindSpore ``nn.AdamOffload``: Adam's m and v on the host, the
  gradient copied device -> host, the update computed by the host (``AdamNoUpdateParam``)
  and applied on the device with ``aclnnInplaceAdd``.
* :class:`Parameter` -- a named float32 device tensor (MindSpore ``Parameter``).
"""
from aclnn.optim.adam_offload import (HOST_BANDWIDTH, AdamOffload, Parameter, Span,
                                      adam_no_update_param)

__all__ = ["AdamOffload", "Parameter", "Span", "adam_no_update_param", "HOST_BANDWIDTH"]
