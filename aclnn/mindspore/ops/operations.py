"""MindSpore's primitives ``ops.ApplyAddSign`` and ``ops.FusedSparseAdam`` on the simulated
NPU, through ``aclnnApplyAddSign`` and ``aclnnFusedSparseAdam``.

A call checks its inputs as MindSpore does -- the kinds of argument, the implicit type
conversion of each signature group (:mod:`aclnn.mindspore._convert`), the dtypes and shapes
-- and raises before anything changes; then it copies the inputs to the device, runs the
aclnn operator (scalars as one-element device tensors of var's dtype, the aclnn
convention of docs/tutorial.md §10), and writes the results into the Parameters in place.
"""
from __future__ import annotations

import numpy as np

from aclnn.mindspore import _convert
from aclnn.mindspore._device import Launch
from aclnn.mindspore.common import dtype as mstype
from aclnn.mindspore.common.tensor import Tensor
from aclnn.ops.apply_add_sign import aclnnApplyAddSign, aclnnApplyAddSignGetWorkspaceSize
from aclnn.ops.fused_sparse_adam import (aclnnFusedSparseAdam,
                                         aclnnFusedSparseAdamGetWorkspaceSize)


#: aclnn tensors have at most 8 dimensions (docs/reference/api.md §1).
MAX_DIMS = 8


def _same_shape(op: str, ref: _convert.Arg, *others: _convert.Arg) -> None:
    if np.ndim(ref.value) > MAX_DIMS:
        raise ValueError(f"For '{op}', '{ref.name}' has {np.ndim(ref.value)} dimensions; the "
                         f"device operator takes at most {MAX_DIMS}.")
    for a in others:
        if np.shape(a.value) != np.shape(ref.value):
            raise ValueError(f"For '{op}', '{a.name}' and '{ref.name}' must have the same shape, "
                             f"but got {list(np.shape(a.value))} and {list(np.shape(ref.value))}.")


class ApplyAddSign:
    r"""``mindspore.ops.ApplyAddSign()``: the AddSign update, in place on var and m.

    Source: the MindSpore API document mindspore.ops.ApplyAddSign (mindspore.cn)::

        m = beta*m + (1 - beta)*grad
        var = var - lr*(alpha + sign_decay*sign(grad)*sign(m))*grad      # the updated m

    Call ``op(var, m, lr, alpha, sign_decay, beta, grad)``:

    Inputs:
        var (Parameter): float16 or float32, any shape (up to 8 dims, aclnn's limit).
        m (Parameter): var's shape and dtype.
        lr, alpha, sign_decay, beta (Union[Number, Tensor]): scalars (a number, or a
            Tensor of shape [] or [1]), float16 or float32.
        grad (Tensor): var's shape and dtype.
        var, m and grad follow the implicit type conversion rules; so do sign_decay with
        beta; lr and alpha are groups of their own (MindSpore 2.10's signature).
        A Tensor in place of var or m is updated in place too (MindSpore 2.10 measured).

    Outputs:
        tuple of 2 Tensors: the updated var and m (copies; var and m themselves are
        updated in place).

    Raises:
        TypeError: var, lr, alpha, sign_decay or beta (after conversion) neither float16
            nor float32; lr, alpha, sign_decay or beta neither a number nor a Tensor; grad
            not a Tensor; var or m neither a Parameter nor a Tensor.
        RuntimeError: the conversion would have to convert var or m.
        ValueError: m or grad not of var's shape; var of more than 8 dims; a scalar
            Tensor of more than one element or more than one dimension (MindSpore 2.10
            measured: "the lr_shape[0] must be equal to 1").
        Nothing has changed when it raises.

    The kernel computes in var's dtype, so a scalar of another float dtype is converted to
    it for the aclnn call (aclnnApplyAddSign takes its scalars in varRef's dtype).
    """

    name = "ApplyAddSign"

    def __call__(self, var, m, lr, alpha, sign_decay, beta, grad):
        op = self.name
        a = {n: _convert.tensor_arg(op, n, x) for n, x in (("var", var), ("m", m))}
        for n, x in (("lr", lr), ("alpha", alpha), ("sign_decay", sign_decay), ("beta", beta)):
            a[n] = _convert.tensor_arg(op, n, x, number_ok=True)
        a["grad"] = _convert.tensor_arg(op, "grad", grad)
        for group in (("var", "m", "grad"), ("lr",), ("alpha",), ("sign_decay", "beta")):
            _convert.convert(op, [a[n] for n in group], writes=("var", "m"))
        for n in ("var", "lr", "alpha", "sign_decay", "beta"):
            if a[n].dtype not in (mstype.float16, mstype.float32):
                raise TypeError(f"For '{op}', the dtype of '{n}' must be float16 or float32, "
                                f"but got {a[n].dtype}.")
        _same_shape(op, a["var"], a["m"], a["grad"])
        dt = a["var"].dtype.np
        scalars = [_convert.scalar_value(op, a[n], dt) for n in ("lr", "alpha", "sign_decay",
                                                                  "beta")]
        with Launch() as launch:
            var_t, m_t = launch.put(a["var"].value), launch.put(a["m"].value)
            launch.run(aclnnApplyAddSignGetWorkspaceSize, aclnnApplyAddSign, var_t, m_t,
                       *(launch.put(s) for s in scalars), launch.put(a["grad"].value))
            new_var, new_m = launch.get(var_t), launch.get(m_t)
        _convert.store(var, new_var)
        _convert.store(m, new_m)
        return Tensor(new_var), Tensor(new_m)


def _check_bool(op: str, name: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"For '{op}', the type of '{name}' should be 'bool', but got type "
                        f"'{type(value).__name__}'.")
    return value


class FusedSparseAdam:
    r"""``mindspore.ops.FusedSparseAdam(use_locking=False, use_nesterov=False)``: Adam on a
    sparse gradient, duplicates merged, in place on var, m and v.

    Source: the MindSpore API document mindspore.ops.FusedSparseAdam (mindspore.cn), docs/reference/operators.md §4;
    the operator is not lazy: every row's m and v decay and every row's var is updated,
    except that with ``use_nesterov`` the rows no index names keep their var (MindSpore
    2.10's CPU kernel as measured; :mod:`aclnn.ops.fused_sparse_adam`).

    Args:
        use_locking (bool): no effect here (the device update has a single writer).
        use_nesterov (bool): Nesterov's moment in the update.

    Call ``op(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, gradient,
    indices)``:

    Inputs:
        var, m, v (Parameter): float32, one shape, at least 1 dim.
        beta1_power, beta2_power, lr, beta1, beta2, epsilon (Tensor): float32 scalars
            (shape [] or [1]); numbers are accepted too, converted by the implicit
            conversion rules like every input but indices (MindSpore 2.10 measured).
        gradient (Tensor): float32, shape ``indices.shape + var.shape[1:]``.
        indices (Tensor): int32, 1-D. Duplicates are summed; indices outside
            ``[0, var.shape[0])`` are dropped.

    Outputs:
        tuple of 3 Tensors of shape (1,): "the outputs are useless" (the seed); var, m
        and v are updated in place. (MindSpore 2.10's CPU kernel returns tensors of var's
        shape instead, measured.)

    Raises:
        TypeError: use_locking or use_nesterov not bool; var, m, v not Parameter/Tensor,
            a scalar neither a number nor a Tensor, gradient or indices not a Tensor; the
            inputs not float32 after conversion; indices not int32.
        RuntimeError: the conversion would have to convert var, m or v; beta1_power is 1
            (MindSpore's CPU kernel: "the 'beta1_power' can not be 1").
        ValueError: m or v not of var's shape; var 0-d or of more than 8 dims; indices
            not 1-D; gradient's shape not ``indices.shape + var.shape[1:]``; a scalar
            Tensor of more than one element or dimension (ours: MindSpore 2.10 reads its
            first element).
        Nothing has changed when it raises.
    """

    name = "FusedSparseAdam"
    _SCALARS = ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon")

    def __init__(self, use_locking=False, use_nesterov=False):
        self.use_locking = _check_bool(self.name, "use_locking", use_locking)
        self.use_nesterov = _check_bool(self.name, "use_nesterov", use_nesterov)

    def __call__(self, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon,
                 gradient, indices):
        op = self.name
        a = {n: _convert.tensor_arg(op, n, x) for n, x in (("var", var), ("m", m), ("v", v))}
        for n, x in zip(self._SCALARS, (beta1_power, beta2_power, lr, beta1, beta2, epsilon)):
            a[n] = _convert.tensor_arg(op, n, x, number_ok=True)
        a["gradient"] = _convert.tensor_arg(op, "gradient", gradient)
        idx = _convert.tensor_arg(op, "indices", indices)
        _convert.convert(op, list(a.values()), writes=("var", "m", "v"))
        for n, arg in a.items():
            if arg.dtype is not mstype.float32:
                raise TypeError(f"For '{op}', the dtype of '{n}' must be float32, but got "
                                f"{arg.dtype}.")
        if idx.dtype is not mstype.int32:
            raise TypeError(f"For '{op}', 'indices' must be a Tensor of int32, but got "
                            f"{idx.dtype}.")
        _same_shape(op, a["var"], a["m"], a["v"])
        var_shape, idx_shape = np.shape(a["var"].value), np.shape(idx.value)
        if not var_shape:
            raise ValueError(f"For '{op}', 'var' must have at least 1 dimension, but got shape [].")
        if len(idx_shape) != 1:
            raise ValueError(f"For '{op}', the indices rank must be equal to 1, but got "
                             f"{len(idx_shape)}.")
        want = idx_shape + var_shape[1:]
        if np.shape(a["gradient"].value) != want:
            raise ValueError(f"For '{op}', the shape of 'gradient' must be indices.shape + "
                             f"var.shape[1:] = {list(want)}, but got "
                             f"{list(np.shape(a['gradient'].value))}.")
        scalars = [_convert.scalar_value(op, a[n], np.float32) for n in self._SCALARS]
        if scalars[0][0] == np.float32(1):
            raise RuntimeError(f"For '{op}', the 'beta1_power' can not be 1.")
        with Launch() as launch:
            state = [launch.put(a[n].value) for n in ("var", "m", "v")]
            launch.run(aclnnFusedSparseAdamGetWorkspaceSize, aclnnFusedSparseAdam, *state,
                       *(launch.put(s) for s in scalars), launch.put(a["gradient"].value),
                       launch.put(idx.value), self.use_nesterov)
            new = [launch.get(t) for t in state]
        for target, value in zip((var, m, v), new):
            _convert.store(target, value)
        return tuple(Tensor(np.zeros(1, np.float32)) for _ in range(3))
