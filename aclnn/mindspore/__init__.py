"""A MindSpore-style front end on the simulated NPU: MindSpore's operators, run through aclnn.

Why ``aclnn.mindspore``: a program written for MindSpore runs with only its imports changed,
``mindspore`` becoming ``aclnn.mindspore`` (``from aclnn.mindspore import Tensor, Parameter,
nn, ops``; ``import aclnn.mindspore.common.dtype as mstype``). It lives under ``aclnn``
because it is a client of the aclnn operators, as MindSpore sits above its kernels
(DESIGN.md "Front ends": MindSpore-style front end -> aclnn -> kernels -> npusim); nothing
in ``aclnn`` imports it, so ``import aclnn`` stays as it was, and ``npusim`` stays free of
``aclnn``. A top-level ``mindspore`` package would shadow the real one, whose ``Tensor`` and
``Parameter`` are accepted as inputs where it is installed.

What is here (the surface of the examples in the MindSpore API documents of ApplyAddSign, FusedSparseAdam and AdamOffload, mindspore.cn):

* :class:`Tensor`, :class:`Parameter` -- host values (numpy) with MindSpore's dtypes
  (:mod:`aclnn.mindspore.common.dtype`) and MindSpore's printed form;
* :mod:`aclnn.mindspore.ops` -- ``ApplyAddSign`` and ``FusedSparseAdam``, primitives that
  apply MindSpore's implicit type conversion and argument rules, then run
  ``aclnnApplyAddSign`` / ``aclnnFusedSparseAdam`` on the simulated device and update their
  Parameters in place;
* :mod:`aclnn.mindspore.nn` -- ``Cell`` (``__init__``, ``construct``, calling it,
  ``trainable_params``) and ``AdamOffload``, :class:`aclnn.optim.AdamOffload` under
  MindSpore's name and signature.

The device: the current aclnn device if the program set one (``acl.init`` and
``acl.rt.set_device``, e.g. to choose the SoC), else device 0 of a runtime this front end
initialises with the defaults (``npusim.DEFAULT_SOC``) on first use, as MindSpore's context
defaults to device 0. Each primitive call copies its inputs to the device, runs the
operator on the default stream, waits for it and copies the results back.
"""
from aclnn.mindspore import common, nn, ops
from aclnn.mindspore.common.dtype import (bool_, float16, float32, float64, int8, int16, int32,
                                          int64, uint8)
from aclnn.mindspore.common.parameter import Parameter
from aclnn.mindspore.common.tensor import Tensor

__all__ = ["Tensor", "Parameter", "common", "nn", "ops", "bool_", "int8", "int16", "int32",
           "int64", "uint8", "float16", "float32", "float64"]
