"""``mindspore.nn``: the :class:`Cell` surface the MindSpore API documents' examples use, and
:class:`AdamOffload`.

``AdamOffload`` is :class:`aclnn.optim.AdamOffload` (Adam's m and v on the host, the
gradient copied to the host, ``param += delta`` on the device) under MindSpore's name and
signature (the MindSpore API document mindspore.nn.AdamOffload (mindspore.cn)): it takes this front end's
Parameters (or MindSpore's) and Tensors, and its argument rules and exceptions are the
aclnn optimizer's, which follow the seed.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

import aclnn
from aclnn import acl
from aclnn.mindspore import _device
from aclnn.mindspore.common.parameter import Parameter
from aclnn.mindspore.common.tensor import Tensor, mindspore_kind
from aclnn.mindspore._convert import store
from aclnn.optim import AdamOffload as _AclAdamOffload
from aclnn.optim import Parameter as _AclParameter


class Cell:
    """``mindspore.nn.Cell``: subclass it, set Parameters (and sub-Cells) in ``__init__``,
    write ``construct``; calling the cell calls ``construct``.

    A Parameter created without a name takes the name of the attribute it is assigned to.
    """

    def __init__(self, auto_prefix=True, flags=None):
        pass

    def __setattr__(self, name, value):
        if isinstance(value, Parameter) and value.name is None:
            value.name = name
        object.__setattr__(self, name, value)

    def construct(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.construct is not defined")

    def __call__(self, *args, **kwargs):
        return self.construct(*args, **kwargs)

    def trainable_params(self, recurse=True) -> list:
        """The Parameters with ``requires_grad``, in the order they were assigned
        (sub-Cells' after their own when ``recurse``)."""
        out = []
        for value in vars(self).values():
            if isinstance(value, Parameter) and value.requires_grad:
                out.append(value)
            elif recurse and isinstance(value, Cell):
                out.extend(p for p in value.trainable_params() if p not in out)
        return out


def _plain(value):
    """A Tensor learning rate as the numpy array the aclnn optimizer takes."""
    if isinstance(value, Tensor) or mindspore_kind(value):
        return np.asarray(value.asnumpy())
    return value


class AdamOffload(Cell):
    """``mindspore.nn.AdamOffload(params, learning_rate=1e-3, beta1=0.9, beta2=0.999,
    eps=1e-8, use_locking=False, use_nesterov=False, weight_decay=0.0, loss_scale=1.0)``.

    Args: as the seed and :class:`aclnn.optim.AdamOffload`: ``params`` a list of Parameter
    (float32) or of group dicts ("params", "lr", "weight_decay", "order_params");
    ``learning_rate`` a float/int, a Tensor (0-d fixed, 1-d one value per step), an
    Iterable or a Cell/callable of the step; ``weight_decay`` a float/int or a Cell.

    Call ``optimizer(gradients)``: ``gradients`` a tuple of float32 Tensors, one per
    parameter in :attr:`parameters` order, of the parameter's shape. Returns
    ``Tensor(True)`` (the seed's Tensor[bool]; MindSpore 2.10's graph returns a tuple of
    True, one per parameter, measured); the Parameters have been updated in place.

    Raises:
        The seed's TypeError / ValueError for the arguments (raised by
        :class:`aclnn.optim.AdamOffload`, whose docstring lists them), at construction;
        TypeError / ValueError for gradients that are not a tuple of Tensors of the
        parameters' shapes and dtype; RuntimeError when beta1_power rounds to 1 (nothing
        changed) or the device fails.

    The parameters live on the device between steps as the aclnn optimizer requires; a
    step copies each Parameter's current value there first and its result back after.
    """

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                 use_locking=False, use_nesterov=False, weight_decay=0.0, loss_scale=1.0):
        super().__init__()
        _device.device()
        self._acl = {}        # id(front-end Parameter) -> (Parameter, aclnn Parameter, ptr)
        try:
            acl_params = self._map(params)
            self.offload = _AclAdamOffload(acl_params, _plain(learning_rate), beta1, beta2, eps,
                                           use_locking, use_nesterov, weight_decay, loss_scale)
        except BaseException:
            self._free()
            raise
        by_acl = {id(acl_p): p for p, acl_p, _ in self._acl.values()}
        #: The Parameters in update order: ``gradients[i]`` belongs to ``parameters[i]``.
        self.parameters = [by_acl[id(acl_p)] for acl_p in self.offload.parameters]

    # -- front-end Parameters <-> the aclnn optimizer's device Parameters ------------------
    def _device_param(self, p):
        if not (isinstance(p, Parameter) or mindspore_kind(p) == "Parameter"):
            return p                          # the aclnn optimizer raises its TypeError
        if id(p) not in self._acl:
            t, ptr = _device.to_device(p.asnumpy())
            self._acl[id(p)] = (p, _AclParameter(t, p.name, p.requires_grad), ptr)
        return self._acl[id(p)][1]

    def _map(self, params):
        if params is None or not isinstance(params, Iterable) or isinstance(params, (str, bytes)):
            return params
        out = []
        for item in params:
            if isinstance(item, dict):
                group = dict(item)
                for key in ("params", "order_params"):
                    if key in group and isinstance(group[key], Iterable):
                        group[key] = [self._device_param(p) for p in group[key]]
                if "lr" in group:
                    group["lr"] = _plain(group["lr"])
                out.append(group)
            else:
                out.append(self._device_param(item))
        return out

    def _free(self):
        for _, acl_p, ptr in self._acl.values():
            aclnn.aclDestroyTensor(acl_p.tensor)
            acl.rt.free(ptr)
        self._acl = {}

    # -- one step --------------------------------------------------------------------------
    def construct(self, gradients):
        if not isinstance(gradients, (tuple, list)):
            raise TypeError(f"For 'AdamOffload', gradients must be a tuple of Tensor, but got "
                            f"{type(gradients).__name__}.")
        for i, g in enumerate(gradients):
            if not (isinstance(g, Tensor) or mindspore_kind(g)):
                raise TypeError(f"For 'AdamOffload', gradients[{i}] must be a Tensor, but got "
                                f"{type(g).__name__}.")
        with _device.Launch() as launch:
            grads = [launch.put(np.asarray(g.asnumpy())) for g in gradients]
            for p in self.parameters:
                _device.upload(p.asnumpy(), self._acl[id(p)][1].tensor)
            self.offload.step(tuple(grads))
        for p in self.parameters:
            new = _device.from_device(self._acl[id(p)][1].tensor)
            store(p, new)
        return Tensor(True)
