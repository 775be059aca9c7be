"""AdamOffload: Adam whose moments live on the host; the device only receives the update.

MindSpore ``nn.AdamOffload`` (the MindSpore API document mindspore.nn.AdamOffload (mindspore.cn);
``docs/reference/operators.md`` §5; ``mindspore/python/mindspore/nn/optim/adam.py`` and
``optimizer.py``), rebuilt on this project's pyACL runtime (``aclnn.acl``) and an aclnn
kernel. One :meth:`AdamOffload.step` does, per parameter, what MindSpore's graph does::

    device  g = grad + (weight_decay*loss_scale)*param     decay_weight, only where decayed
    D2H     g -> host                                       (acl.rt.memcpy_async, copy stream)
    host    g = g * float32(1/loss_scale)                   scale_grad
            delta = AdamNoUpdateParam(m, v, beta1^t, beta2^t, lr, beta1, beta2, eps, g)
    H2D     delta -> device                                 (acl.rt.memcpy_async, compute stream)
    device  param += delta                                  F.assign_add -> aclnnInplaceAdd

``AdamNoUpdateParam`` is the MindSpore CPU kernel (``adam_delta_cpu_kernel.cc`` and nnacl
``AdamDeltaFp32``), reproduced operation for operation in float32 by
:func:`adam_no_update_param`: ``lr_t = lr*sqrt(1-beta2^t)/(1-beta1^t)``,
``m = m*beta1 + (1-beta1)*g``, ``v = v*beta2 + ((1-beta2)*g)*g``,
``delta = (-lr_t*m')/(sqrt(v)+eps)`` with ``m' = m*beta1 + (1-beta1)*g`` under Nesterov.
``beta^t`` are float32 Parameters multiplied by beta once per step (from 1), as in
``AdamOffload.construct``. m and v are host numpy arrays: the device holds only the
parameters, the gradients, one staging buffer for delta (the size of the largest
parameter) and the add kernels' workspaces.

Weight decay is applied on the device, because it needs the parameter and the parameter
never leaves the device (operators.md §5 "What runs where"): the gradient tensor is
updated *in place* (``grad += weight_decay*loss_scale*param``, MindSpore's
``op_add(op_mul(weight, weight_decay), gradient)``). Without parameter groups it applies
to parameters whose name contains neither "beta" nor "gamma"; with groups, to every
parameter of a group whose weight decay is positive (MindSpore ``Optimizer.__init__``).

Timeline. The simulated device runs lazily at synchronisation, so the host work would
take no simulated time. AdamOffload gives it time: each parameter's host update takes
``24 * numel / host_bandwidth`` seconds (m, v and g read, m, v and delta written, in
float32) [R: ``host_bandwidth`` is a model parameter, default :data:`HOST_BANDWIDTH`], on
a host clock that starts when the gradient has arrived and the previous parameter's host
work is done; the H2D copy of delta is submitted to its stream at that host time (a
task that holds the stream until then: the one place this module uses the npusim
``Stream`` directly, as pyACL has no "host submits at time t" call). So the D2H copy of
parameter i+1 runs on the copy stream while the host computes parameter i, and the H2D
copy and kernel of parameter i run while the host computes parameter i+1. The compute
stream is in order, so one staging buffer serves every parameter: the H2D copy of
parameter i+1 waits for the kernel of parameter i. :attr:`AdamOffload.last_timeline`
lists every span of the last step.
"""
from __future__ import annotations

import numbers
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from aclnn import acl, runtime
from aclnn.constants import (ACL_FLOAT, ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_DEVICE_TO_HOST,
                             ACL_MEMCPY_HOST_TO_DEVICE, ACL_SUCCESS)
from aclnn.ops._check import ND_COMPATIBLE
from aclnn.ops.add import aclnnInplaceAdd, aclnnInplaceAddGetWorkspaceSize
from aclnn.tensor import (aclCreateScalar, aclCreateTensor, aclDestroyScalar, aclDestroyTensor,
                          aclTensor)

__all__ = ["Parameter", "AdamOffload", "Span", "adam_no_update_param", "HOST_BANDWIDTH",
           "HOST_BYTES_PER_ELEMENT"]

#: Host memory bandwidth of the AdamNoUpdateParam loop, B/s [R: a multi-threaded
#: streaming loop on a server CPU; not published for any machine].
HOST_BANDWIDTH = 20e9
#: Bytes the host update touches per element: m, v, grad read; m, v, delta written (fp32).
HOST_BYTES_PER_ELEMENT = 24
#: float32 machine epsilon; AdamNoUpdateParam refuses |beta1_power - 1| < FLT_EPSILON.
FLT_EPSILON = float(np.finfo(np.float32).eps)
_GROUP_KEYS = ("params", "lr", "weight_decay", "order_params")
_F32 = np.float32


class Parameter:
    """A named float32 tensor on the device (MindSpore ``Parameter``).

    Args:
        tensor: an aclTensor of ACL_FLOAT, contiguous, whose data lies in device memory
            (``aclCreateTensor`` over ``acl.rt.malloc``). The optimizer updates it in place.
        name: the parameter's name; weight decay without groups skips names containing
            "beta" or "gamma".
        requires_grad: kept for MindSpore compatibility.
    """

    def __init__(self, tensor: aclTensor, name: str, requires_grad: bool = True):
        if not isinstance(tensor, aclTensor):
            raise TypeError(f"Parameter: tensor must be an aclTensor, got {type(tensor).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"Parameter: name must be a str, got {type(name).__name__}")
        self.tensor = tensor
        self.name = name
        self.requires_grad = bool(requires_grad)

    @property
    def shape(self) -> tuple:
        return tuple(self.tensor.view_dims)

    @property
    def numel(self) -> int:
        return self.tensor.numel()

    @property
    def nbytes(self) -> int:
        return self.numel * 4

    def __repr__(self) -> str:
        return f"Parameter(name={self.name!r}, shape={list(self.shape)})"


@dataclass(frozen=True)
class Span:
    """One interval of the step timeline, on the device clock (µs).

    kind: "decay" (device kernel), "D2H", "host", "H2D" or "kernel" (param += delta).
    """

    kind: str
    param: str
    start_us: float
    end_us: float

    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us


def adam_no_update_param(m, v, beta1_power, beta2_power, lr, beta1, beta2, eps, grad,
                         use_nesterov=False) -> np.ndarray:
    """MindSpore's CPU ``AdamNoUpdateParam`` in float32: update m, v in place, return delta.

    Order of operations of ``AdamDeltaCpuKernelMod::Launch`` and nnacl ``AdamDeltaFp32``
    (every step rounded to float32)::

        lr_t  = (lr * sqrt(1 - beta2_power)) / (1 - beta1_power)
        m     = m*beta1 + (1 - beta1)*g
        v     = v*beta2 + ((1 - beta2)*g)*g
        delta = ((-lr_t) * m') / (sqrt(v) + eps),  m' = m or (Nesterov) m*beta1 + (1-beta1)*g

    Args:
        m, v: float32 arrays, updated in place. grad: float32 array of their shape.
        beta1_power, beta2_power, lr, beta1, beta2, eps: float32 scalars.

    Returns:
        delta, a new float32 array.

    Raises:
        RuntimeError: ``|beta1_power - 1| < FLT_EPSILON`` (the kernel's exception).
    """
    b1p, b2p, lr, b1, b2, eps = (_F32(x) for x in (beta1_power, beta2_power, lr, beta1, beta2, eps))
    one = _F32(1)
    if abs(b1p - one) < FLT_EPSILON:
        raise RuntimeError("For 'AdamNoUpdateParam', the 'beta1_power' can not be 1.")
    lr_t = lr * np.sqrt(one - b2p) / (one - b1p)
    c1, c2 = one - b1, one - b2
    with np.errstate(all="ignore"):
        m *= b1
        m += c1 * grad
        v *= b2
        v += (c2 * grad) * grad
        num = b1 * m + c1 * grad if use_nesterov else m
        delta = (-lr_t * num) / (np.sqrt(v) + eps)
    return delta.astype(np.float32, copy=False)


# -- argument checks (MindSpore Optimizer / AdamOffload rules) ----------------------------
def _preprocess_lr(lr, what: str):
    """("fixed", float32) or ("dynamic", float32 array | callable); MindSpore
    ``_preprocess_single_lr``: float/int >= 0, 0-d tensor, 1-d tensor, Iterable,
    LearningRateSchedule (here: any callable of the step)."""
    if isinstance(lr, (float, int)):           # bool is an int, as in MindSpore
        lr = float(lr)
        if not lr >= 0.0:
            raise ValueError(f"For 'AdamOffload', the '{what}' must be >= 0, but got {lr}.")
        return "fixed", _F32(lr)
    if isinstance(lr, (np.ndarray, np.generic)) and np.ndim(lr) == 0:
        if not np.issubdtype(np.asarray(lr).dtype, np.number):
            raise TypeError(f"For 'AdamOffload', the '{what}' tensor must be numeric.")
        return "fixed", _F32(np.asarray(lr))
    if isinstance(lr, np.ndarray):
        if lr.ndim > 1:
            raise ValueError(f"For 'AdamOffload', if '{what}' is a Tensor, its dimension should "
                             f"be 0 or 1, but got {lr.ndim}.")
        return "dynamic", lr.astype(np.float32)
    if isinstance(lr, Iterable) and not isinstance(lr, (str, bytes, dict)):
        return "dynamic", np.array(list(lr)).astype(np.float32)
    if callable(lr):
        return "dynamic", lr
    raise TypeError(f"For 'AdamOffload', the '{what}' should be int, float, Tensor, Iterable or "
                    f"LearningRateSchedule, but got {type(lr).__name__}.")


def _preprocess_weight_decay(wd):
    """float >= 0 (int converted) or a callable of the step (dynamic, the seed's Cell)."""
    if isinstance(wd, (float, int)):
        wd = float(wd)
        if not wd >= 0.0:
            raise ValueError(f"For 'AdamOffload', the 'weight_decay' must be >= 0, but got {wd}.")
        return wd
    if callable(wd):
        return wd
    raise TypeError(f"For 'AdamOffload', the 'weight_decay' should be int or float, but got "
                    f"{type(wd).__name__}.")


def _check_beta_eps(beta1, beta2, eps) -> None:
    """MindSpore ``_check_param_value``: floats; beta in (0, 1); eps > 0."""
    for name, value in (("beta1", beta1), ("beta2", beta2), ("eps", eps)):
        if not isinstance(value, float):
            raise TypeError(f"For 'AdamOffload', the type of '{name}' should be float, but got "
                            f"{type(value).__name__}.")
    for name, value in (("beta1", beta1), ("beta2", beta2)):
        if not 0.0 < value < 1.0:
            raise ValueError(f"For 'AdamOffload', the '{name}' should be in range (0.0, 1.0), "
                             f"but got {value}.")
    if not eps > 0.0:
        raise ValueError(f"For 'AdamOffload', the 'eps' should be greater than 0, but got {eps}.")


def _param_list(params, what: str) -> list:
    """MindSpore ``_parameters_base_check``: not None, Iterable, not empty."""
    if params is None:
        raise ValueError(f"Optimizer {what} can not be None.")
    if not isinstance(params, Iterable) or isinstance(params, (str, bytes)):
        raise TypeError(f"Optimizer {what} must be Iterable.")
    params = list(params)
    if not params:
        raise ValueError(f"Optimizer got an empty {what} list.")
    return params


def _check_parameter_tensor(p: Parameter, dev) -> None:
    t = p.tensor
    if getattr(t, "destroyed", False):
        raise ValueError(f"For 'AdamOffload', the tensor of parameter '{p.name}' was destroyed.")
    if t.data_type != ACL_FLOAT:
        raise TypeError(f"For 'AdamOffload', parameter '{p.name}' has dtype {t.data_type.name}; "
                        "AdamNoUpdateParam supports float32 only (its CPU kernel's inputs are "
                        "all Float32)")
    if t.numel() == 0:
        raise ValueError(f"For 'AdamOffload', parameter '{p.name}' is empty; AdamNoUpdateParam "
                         "needs at least one element")
    if t.format not in ND_COMPATIBLE or not t.is_contiguous() or \
            not dev.gm.contains(t.data_address(), t.view_nbytes()):
        raise ValueError(f"For 'AdamOffload', parameter '{p.name}' must be a contiguous ND "
                         "tensor inside one device allocation (acl.rt.malloc)")


# -- the optimizer ---------------------------------------------------------------------
class AdamOffload:
    """Adam with m and v on the host and ``param += delta`` on the device.

    Args (MindSpore ``nn.AdamOffload``):
        params: a list of :class:`Parameter`, or a list of dicts with keys "params" (a
            list of Parameter, required), "lr" and "weight_decay" (optional, per group)
            or a single dict {"order_params": [...]} giving the update order, which must
            list exactly the grouped parameters.
        learning_rate: float/int >= 0 (fixed); a 0-d numpy array (fixed); a 1-d numpy
            array or an Iterable (step i uses element i); or a callable ``lr(step)``
            (LearningRateSchedule). Stored as float32. Default 1e-3.
        beta1, beta2: floats in (0, 1). Defaults 0.9, 0.999.
        eps: float > 0. Default 1e-8.
        use_locking: bool (no effect: the host update is single-writer here).
        use_nesterov: bool, Nesterov momentum in the delta.
        weight_decay: float/int >= 0, or a callable ``wd(step)`` (dynamic). Default 0.0.
        loss_scale: float (int converted) > 0; gradients are divided by it. Default 1.0.
        host_bandwidth: B/s of the host update loop, for the simulated timeline (None or
            0: host work takes no simulated time). Default :data:`HOST_BANDWIDTH` [R].

    Raises (the seed's list, with MindSpore's rules for groups):
        TypeError: learning_rate of another type; an element of params neither
            Parameter nor dict (or a mix); beta1, beta2, eps not float; loss_scale not
            float/int; weight_decay not float/int (or callable); use_locking or
            use_nesterov not bool; a group's "params" not all Parameter; "order_params"
            not Iterable; a parameter that is not float32.
        ValueError: loss_scale or eps <= 0; beta1 or beta2 outside (0, 1);
            weight_decay < 0; learning_rate < 0 or a tensor of more than 1 dim; params
            None or empty; dynamic group learning rates of different lengths; an
            "order_params" dict with other keys or that does not list exactly the group
            parameters; a parameter that is empty, non-contiguous or not device memory;
            two parameters with the same name (RuntimeError within groups, as MindSpore).
        KeyError: a group key other than params, lr, weight_decay, order_params.
        RuntimeError: no device is set (acl.init / acl.rt.set_device), or a runtime call
            fails while the optimizer sets up its streams.

    Attributes:
        parameters: the Parameters in update order. moment1, moment2: host float32
        arrays, one per parameter. global_step: steps taken so far (the index of the
        next dynamic learning rate). beta1_power, beta2_power: float32 beta^t.
        last_timeline: the :class:`Span` list of the last step. device_bytes: device
        memory this optimizer holds (staging buffer + workspaces; bytes reserved).
    """

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                 use_locking=False, use_nesterov=False, weight_decay=0.0, loss_scale=1.0,
                 *, host_bandwidth: float | None = HOST_BANDWIDTH):
        # 1. validation, in MindSpore's order; nothing is allocated until it all passes
        params = _param_list(params, "parameters")
        if not (all(isinstance(p, Parameter) for p in params)
                or all(isinstance(p, dict) for p in params)):
            raise TypeError("For 'Optimizer', all elements of the argument 'parameters' must be "
                            "'Parameter' or 'dict'.")
        if isinstance(loss_scale, int):
            loss_scale = float(loss_scale)
        if not isinstance(loss_scale, float):
            raise TypeError(f"For 'AdamOffload', the type of 'loss_scale' should be float, but "
                            f"got {type(loss_scale).__name__}.")
        if not loss_scale > 0.0:
            raise ValueError(f"For 'AdamOffload', the 'loss_scale' should be greater than 0, but "
                             f"got {loss_scale}.")
        weight_decay = _preprocess_weight_decay(weight_decay)
        default_lr = _preprocess_lr(learning_rate, "learning_rate")
        if isinstance(params[0], dict):
            ordered, lrs, wds, flags = self._parse_groups(params, default_lr, weight_decay,
                                                          loss_scale)
            self.is_group = True
        else:
            ordered = params
            self._check_unique(ordered, grouped=False)
            lrs = [default_lr] * len(ordered)
            wds = [weight_decay] * len(ordered)
            static_positive = callable(weight_decay) or weight_decay > 0
            flags = [static_positive and "beta" not in p.name and "gamma" not in p.name
                     for p in ordered]
            wds = [w if callable(w) else w * loss_scale for w in wds]
            self.is_group = False
        _check_beta_eps(beta1, beta2, eps)
        for name, value in (("use_locking", use_locking), ("use_nesterov", use_nesterov)):
            if not isinstance(value, bool):
                raise TypeError(f"For 'AdamOffload', the type of '{name}' should be bool, but "
                                f"got {type(value).__name__}.")
        if host_bandwidth is not None and (isinstance(host_bandwidth, bool) or
                                           not isinstance(host_bandwidth, numbers.Real) or
                                           host_bandwidth < 0):
            raise ValueError(f"host_bandwidth must be a number of B/s >= 0 or None, got "
                             f"{host_bandwidth!r}")
        dev = runtime.current_device()
        if dev is None:
            raise RuntimeError("AdamOffload needs a device: call acl.init() and "
                               "acl.rt.set_device() first")
        for p in ordered:
            _check_parameter_tensor(p, dev)

        self.parameters = tuple(ordered)
        self.learning_rates = lrs            # per parameter: ("fixed"|"dynamic", value)
        self.weight_decay = wds              # per parameter, already times loss_scale
        self.decay_flags = tuple(flags)
        self.loss_scale = loss_scale
        self.reciprocal_scale = _F32(1.0 / loss_scale)
        self.need_scale = loss_scale != 1.0
        self.beta1, self.beta2, self.eps = _F32(beta1), _F32(beta2), _F32(eps)
        self.use_locking, self.use_nesterov = use_locking, use_nesterov
        self.dynamic_lr = any(kind == "dynamic" for kind, _ in lrs)
        self.host_bandwidth = float(host_bandwidth or 0.0)
        self.global_step = 0
        self.beta1_power = _F32(1.0)
        self.beta2_power = _F32(1.0)
        self.moment1 = [np.zeros(p.shape, np.float32) for p in self.parameters]
        self.moment2 = [np.zeros(p.shape, np.float32) for p in self.parameters]
        self._grad_host = [np.empty(p.shape, np.float32) for p in self.parameters]
        self._delta_host = [np.empty(p.shape, np.float32) for p in self.parameters]
        self.last_timeline: list[Span] = []
        self._host_clock_us = 0.0

        # 2. runtime resources: two streams, events, the delta staging buffer
        self._device = dev
        self._allocs: list[int] = []
        self._workspaces: dict[int, tuple[int, int]] = {}   # stream -> (addr, size)
        self.copy_stream = self._acl(acl.rt.create_stream(), "create_stream")
        self.compute_stream = self._acl(acl.rt.create_stream(), "create_stream")
        n = len(self.parameters)
        self._ev = {k: [self._acl(acl.rt.create_event(), "create_event") for _ in range(n)]
                    for k in ("decay0", "decay1", "grad", "h2d", "kernel")}
        staging_bytes = max(p.nbytes for p in self.parameters)
        self._staging = self._malloc(staging_bytes)
        self._staging_views = [
            aclCreateTensor(list(p.shape), ACL_FLOAT, None, 0, p.tensor.format, list(p.shape),
                            self._staging) for p in self.parameters]

    # -- construction helpers ------------------------------------------------------------
    @staticmethod
    def _check_unique(params, grouped: bool) -> None:
        seen = set()
        for p in params:
            if p.name in seen:
                if grouped:
                    raise RuntimeError(f"For 'Optimizer', the {p.name} parameter already exists, "
                                       "it does not support repeated setting.")
                raise ValueError(f"For 'AdamOffload', two parameters are named '{p.name}'; "
                                 "parameter names must be unique")
            seen.add(p.name)

    def _parse_groups(self, groups, default_lr, weight_decay, loss_scale):
        """MindSpore ``_check_group_params`` / ``_init_group_params`` / ``_order_...``."""
        order = None
        params, lrs, wds, flags = [], [], [], []
        length = len(default_lr[1]) if default_lr[0] == "dynamic" and \
            isinstance(default_lr[1], np.ndarray) else 0
        for group in groups:
            unknown = [k for k in group if k not in _GROUP_KEYS]
            if unknown:
                raise KeyError(f'The key "{unknown}" cannot be recognized in group params.')
            if "order_params" in group:
                if len(group) > 1:
                    raise ValueError("The order params dict in group parameters should only "
                                     "include the 'order_params' key.")
                if not isinstance(group["order_params"], Iterable):
                    raise TypeError("The value of 'order_params' should be an Iterable type.")
                order = list(group["order_params"])
                continue
            members = _param_list(group.get("params"), "group `params`")
            if not all(isinstance(p, Parameter) for p in members):
                raise TypeError("The group `params` should be an iterator of Parameter type.")
            lr = _preprocess_lr(group["lr"], "lr") if "lr" in group else default_lr
            if lr[0] == "dynamic" and isinstance(lr[1], np.ndarray):
                if length and len(lr[1]) != length:
                    raise ValueError("The Tensor type dynamic learning rate in group should be "
                                     "the same size.")
                length = len(lr[1])
            wd = _preprocess_weight_decay(group["weight_decay"]) if "weight_decay" in group \
                else weight_decay
            wd_ls = wd if callable(wd) else wd * loss_scale
            flag = callable(wd) or wd > 0
            for p in members:
                params.append(p)
                lrs.append(lr)
                wds.append(wd_ls)
                flags.append(flag)
        self._check_unique(params, grouped=True)
        if order is not None:
            if len(order) != len(params) or not all(isinstance(p, Parameter) for p in order):
                raise ValueError("The value of 'order_params' should be same with all group "
                                 "parameters.")
            names = [p.name for p in order]
            index = {}
            for p in params:
                if p.name not in names:
                    raise ValueError(f"The parameter '{p.name}' of a group is not in "
                                     "'order_params'.")
                index[p.name] = names.index(p.name)
            perm = sorted(range(len(params)), key=lambda i: index[params[i].name])
            params, lrs, wds, flags = ([seq[i] for i in perm] for seq in (params, lrs, wds, flags))
        return params, lrs, wds, flags

    @staticmethod
    def _acl(result, api: str):
        value, ret = result
        if ret != ACL_SUCCESS:
            raise RuntimeError(f"acl.rt.{api} failed with {ret}: {acl.get_recent_err_msg()}")
        return value

    def _malloc(self, size: int) -> int:
        ptr = self._acl(acl.rt.malloc(int(size), ACL_MEM_MALLOC_HUGE_FIRST), "malloc")
        self._allocs.append(ptr)
        return ptr

    @property
    def device_bytes(self) -> int:
        """Device bytes this optimizer reserved: ``ceil32(size) + 32`` per allocation
        (the aclrtMalloc rule of docs/reference/api.md §6)."""
        return sum(self._device.gm.find(p).alloc_size for p in self._allocs)

    # -- per-step values ----------------------------------------------------------------
    def _lr_at(self, lr, step: int) -> np.float32:
        kind, value = lr
        if kind == "fixed":
            return value
        if callable(value):
            return _F32(value(step))
        if step >= len(value):
            raise IndexError(f"For 'AdamOffload', step {step} is past the end of the dynamic "
                             f"learning rate of {len(value)} values")
        return value[step]

    def get_lr(self) -> list:
        """The float32 learning rate of each parameter for the next step."""
        return [self._lr_at(lr, self.global_step) for lr in self.learning_rates]

    def _decays(self, step: int) -> list:
        out = []
        for flag, wd in zip(self.decay_flags, self.weight_decay):
            if not flag:
                out.append(None)
                continue
            wd = float(wd(step)) * self.loss_scale if callable(wd) else wd
            out.append(_F32(wd) if wd != 0 else None)
        return out

    # -- the step ------------------------------------------------------------------------
    def _check_gradients(self, gradients) -> list:
        if not isinstance(gradients, (list, tuple)):
            raise TypeError(f"For 'AdamOffload', gradients must be a tuple of aclTensor, got "
                            f"{type(gradients).__name__}")
        if len(gradients) != len(self.parameters):
            raise ValueError(f"For 'AdamOffload', got {len(gradients)} gradients for "
                             f"{len(self.parameters)} parameters")
        for p, g in zip(self.parameters, gradients):
            if not isinstance(g, aclTensor) or g.destroyed:
                raise TypeError(f"For 'AdamOffload', the gradient of '{p.name}' must be a live "
                                f"aclTensor, got {g!r}")
            if g.data_type != ACL_FLOAT:
                raise TypeError(f"For 'AdamOffload', the gradient of '{p.name}' has dtype "
                                f"{g.data_type.name}; it must be FLOAT like the parameter")
            if tuple(g.view_dims) != p.shape:
                raise ValueError(f"For 'AdamOffload', the gradient of '{p.name}' has shape "
                                 f"{list(g.view_dims)}, the parameter {list(p.shape)}")
            if not g.is_contiguous() or not self._device.gm.contains(g.data_address(),
                                                                     g.view_nbytes()):
                raise ValueError(f"For 'AdamOffload', the gradient of '{p.name}' must be "
                                 "contiguous and inside one device allocation")
        return list(gradients)

    def _inplace_add(self, self_t, other_t, alpha: float, stream: int) -> None:
        """Enqueue ``self_t += alpha*other_t`` (aclnnInplaceAdd) on ``stream``."""
        scalar = aclCreateScalar(float(alpha), ACL_FLOAT)
        try:
            ws, executor, ret = aclnnInplaceAddGetWorkspaceSize(self_t, other_t, scalar)
            if ret != ACL_SUCCESS:
                raise RuntimeError(f"aclnnInplaceAddGetWorkspaceSize failed with {ret}: "
                                   f"{acl.get_recent_err_msg()}")
            addr, size = self._workspaces.get(stream, (0, 0))
            if ws > size:       # one workspace per stream, grown to the largest request
                if addr:
                    self._allocs.remove(addr)
                    acl.rt.free(addr)
                addr = self._malloc(ws)
                self._workspaces[stream] = (addr, ws)
                size = ws
            ret = aclnnInplaceAdd(addr, size, executor, stream)
            if ret != ACL_SUCCESS:
                raise RuntimeError(f"aclnnInplaceAdd failed with {ret}: {acl.get_recent_err_msg()}")
        finally:
            aclDestroyScalar(scalar)

    def _host_gate(self, stream: int, t_us: float) -> None:
        """Hold ``stream`` until device time ``t_us``: the host submits what follows then."""
        s = runtime.resolve_stream(stream)
        env = s.device.env

        def task(_stream):
            if t_us > env.now:
                yield env.timeout(t_us - env.now)
        s.enqueue(task, name="host update (AdamNoUpdateParam)")

    def step(self, gradients) -> bool:
        """One AdamOffload update of every parameter (MindSpore ``construct``).

        Args:
            gradients: a tuple/list of aclTensors, FLOAT, one per parameter in
                :attr:`parameters` order, with the parameter's shape, contiguous on the
                device and already computed (synchronise the stream that produced them).
                Decayed parameters' gradients are updated in place on the device
                (``grad += weight_decay*loss_scale*param``).

        Returns:
            True (MindSpore returns a Tensor[bool] True); the parameters have been updated
            when it returns (the compute stream is synchronised).

        Raises:
            TypeError / ValueError: bad gradients; nothing has changed then.
            IndexError: a dynamic learning rate ran out of values; nothing has changed.
            RuntimeError: beta1_power rounds to 1 in float32 (AdamNoUpdateParam's check;
                nothing has changed), or a runtime call or a kernel failed during the step
                (the step may then be partly applied).
        """
        grads = self._check_gradients(gradients)
        step = self.global_step
        lrs = self.get_lr()
        decays = self._decays(step)
        b1p = _F32(self.beta1_power * self.beta1)
        b2p = _F32(self.beta2_power * self.beta2)
        if abs(b1p - _F32(1)) < FLT_EPSILON:
            raise RuntimeError("For 'AdamNoUpdateParam', the 'beta1_power' can not be 1.")
        dev = self._device
        ev = self._ev
        n_copies, n_profiles = dev.copies.total, dev.profiles.total
        copy_sid = runtime.resolve_stream(self.copy_stream).id
        compute_sid = runtime.resolve_stream(self.compute_stream).id

        # device: decay, then the gradient to the host, parameter after parameter
        for i, (p, g) in enumerate(zip(self.parameters, grads)):
            if decays[i] is not None:
                self._check(acl.rt.record_event(ev["decay0"][i], self.copy_stream), "record_event")
                self._inplace_add(g, p.tensor, decays[i], self.copy_stream)
                self._check(acl.rt.record_event(ev["decay1"][i], self.copy_stream), "record_event")
            host = self._grad_host[i]
            self._check(acl.rt.memcpy_async(acl.util.numpy_to_ptr(host), host.nbytes,
                                            g.data_address(), host.nbytes,
                                            ACL_MEMCPY_DEVICE_TO_HOST, self.copy_stream),
                        "memcpy_async")
            self._check(acl.rt.record_event(ev["grad"][i], self.copy_stream), "record_event")

        # host: AdamNoUpdateParam per parameter as its gradient arrives; delta back, add
        host_clock = max(self._host_clock_us, dev.env.now)
        host_spans = []
        for i, p in enumerate(self.parameters):
            self._check(acl.rt.synchronize_event(ev["grad"][i]), "synchronize_event")
            arrived = runtime.resolve_event(ev["grad"][i]).timestamp_us
            g = self._grad_host[i]
            if self.need_scale:
                g = g * self.reciprocal_scale
            delta = adam_no_update_param(self.moment1[i], self.moment2[i], b1p, b2p, lrs[i],
                                         self.beta1, self.beta2, self.eps, g, self.use_nesterov)
            self._delta_host[i][...] = delta
            start = max(host_clock, arrived)
            cost = (HOST_BYTES_PER_ELEMENT * p.numel / self.host_bandwidth * 1e6
                    if self.host_bandwidth else 0.0)
            host_clock = start + cost
            host_spans.append(Span("host", p.name, start, host_clock))
            self._host_gate(self.compute_stream, host_clock)
            d = self._delta_host[i]
            self._check(acl.rt.memcpy_async(self._staging, d.nbytes, acl.util.numpy_to_ptr(d),
                                            d.nbytes, ACL_MEMCPY_HOST_TO_DEVICE,
                                            self.compute_stream), "memcpy_async")
            self._check(acl.rt.record_event(ev["h2d"][i], self.compute_stream), "record_event")
            self._inplace_add(p.tensor, self._staging_views[i], 1.0, self.compute_stream)
            self._check(acl.rt.record_event(ev["kernel"][i], self.compute_stream), "record_event")
        ret = acl.rt.synchronize_stream(self.compute_stream)
        if ret != ACL_SUCCESS:
            raise RuntimeError(f"AdamOffload step: the compute stream failed with {ret}: "
                               f"{acl.get_recent_err_msg()}")
        self._check(acl.rt.synchronize_stream(self.copy_stream), "synchronize_stream")

        self.beta1_power, self.beta2_power = b1p, b2p
        self.global_step += 1
        self._host_clock_us = host_clock
        self.last_timeline = self._timeline(host_spans, decays, n_copies, n_profiles,
                                            copy_sid, compute_sid)
        return True

    __call__ = step

    @staticmethod
    def _check(ret: int, api: str) -> None:
        if ret != ACL_SUCCESS:
            raise RuntimeError(f"AdamOffload step: acl.rt.{api} failed with {ret}: "
                               f"{acl.get_recent_err_msg()}")

    # -- timeline ------------------------------------------------------------------------
    def _timeline(self, host_spans, decays, n_copies, n_profiles, copy_sid, compute_sid):
        dev = self._device
        copies = dev.copies.since(n_copies)
        d2h = [c for c in copies if c[0] == "D2H" and c[4] == copy_sid]
        h2d = [c for c in copies if c[0] == "H2D" and c[4] == compute_sid]
        profiles = dev.profiles.since(n_profiles)

        def ts(kind, i):
            return runtime.resolve_event(self._ev[kind][i]).timestamp_us

        def kernel_in(lo, hi):
            # the stream's own kernel is the last one to start in its window: kernels take
            # the AI cores one at a time, so any other one in the window ran before it
            inside = [pr for pr in profiles if lo <= pr.start_us <= hi]
            pr = max(inside, key=lambda pr: pr.start_us) if inside else None
            return (pr.start_us, pr.start_us + pr.duration_us) if pr else (hi, hi)

        spans = []
        for i, p in enumerate(self.parameters):
            if decays[i] is not None:
                spans.append(Span("decay", p.name, *kernel_in(ts("decay0", i), ts("decay1", i))))
            spans.append(Span("D2H", p.name, d2h[i][1], d2h[i][2]))
            spans.append(host_spans[i])
            spans.append(Span("H2D", p.name, h2d[i][1], h2d[i][2]))
            spans.append(Span("kernel", p.name, *kernel_in(ts("h2d", i), ts("kernel", i))))
        return spans

    def timeline_text(self) -> str:
        """The last step's timeline as a table (µs from the step's first span)."""
        if not self.last_timeline:
            return "(no step yet)"
        t0 = min(s.start_us for s in self.last_timeline)
        lines = [f"{'param':<16}{'what':<8}{'start us':>12}{'end us':>12}{'dur us':>10}"]
        for s in self.last_timeline:
            lines.append(f"{s.param:<16}{s.kind:<8}{s.start_us - t0:>12.3f}"
                         f"{s.end_us - t0:>12.3f}{s.duration_us:>10.3f}")
        return "\n".join(lines)

    # -- teardown ------------------------------------------------------------------------
    def release(self) -> None:
        """Free the optimizer's device memory, streams and events (host state is kept)."""
        for t in self._staging_views:
            aclDestroyTensor(t)
        self._staging_views = []
        for ptr in self._allocs:
            acl.rt.free(ptr)
        self._allocs = []
        self._workspaces = {}
        for events in self._ev.values():
            for e in events:
                acl.rt.destroy_event(e)
        self._ev = {}
        for s in (self.copy_stream, self.compute_stream):
            acl.rt.destroy_stream(s)
