"""The operators the study tools know: random inputs, the aclnn call, the kernel-level
launch, the golden check.

Why here: the tools run operators through ``aclnn`` and launch ``kernels`` directly, and
the layering (npusim <- kernels <- aclnn) lets neither ``npusim`` nor ``kernels`` import
``aclnn``; ``npusim_tools`` sits on top of all three. ``npusim`` keeps the generic parts
(the sweep engine :mod:`npusim.sweeps`, profiles, traces, plots), usable for a kernel of
one's own without this module.

Each :class:`OperatorEntry` says, for one operator:

* ``make_inputs(shape, dtype, rng)`` — the host tensors (numpy) and attributes of a
  random case: which tensors are inputs and which are the outputs the golden predicts;
* ``first_phase(tensors, case)`` / ``second_phase`` — the aclnn two-phase call, given
  the aclTensors made from the case (:func:`run_aclnn` does the ACL plumbing: init with
  a config JSON, device, stream, malloc, async copies, workspace, synchronize, copy back);
* ``tiling(soc, case, core_num, ub_size)`` and ``launch(device, stream, addrs, td, case)``
  — the kernel-level path (:func:`run_kernel_level`): the operator's own tiling with an
  explicit core count and UB budget, launched on a bare :class:`npusim.Device`. Tile
  sweeps use it (the aclnn first phases take no UB override); ``tile_field`` names the
  TilingData field that is the UB tile length (elements);
* ``golden(case)`` and ``tolerance`` — the expected outputs and the per-dtype
  ``(rtol, atol)`` that :func:`check` compares with.

Core counts on the aclnn path use the ``"max_cores"`` option of the acl.init JSON
(:mod:`aclnn.runtime`), which limits the device's vector cores for every operator.

Entries (:data:`REGISTRY`): ApplyFusedEmaAdam, ApplyAddSign, Add, Softmax, RmsNorm, Matmul
and BatchMatMul with both paths (the cube operators' records also carry ``tflops``, and their
"tile" is the base block, grown with the L0C budget);
EmbeddingDenseBackward and FusedSparseAdam with the aclnn path only (their executors
launch chains of kernels — Cast, Sort, the main kernel — so they have no single
kernel-level launch to re-tile; ``tiling`` is None and tile sweeps report that).
:func:`register` adds more.

Runs are serialised within a process (:data:`_RUN_LOCK`, :data:`npusim.runlock.LOCK`): the
simulator's current-core context and the ACL runtime are process-wide, so points on a
thread pool (e.g. a Dask ``LocalCluster(processes=False)``) take turns; processes run in
parallel. The aclnn path runs in a runtime state of its own, so a caller's ACL session
(its threads' current contexts too) is left untouched.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Callable

import ml_dtypes
import numpy as np

import aclnn
import npusim
from npusim.ascendc import timing_only as _timing_only
from aclnn import acl, runtime
from npusim import runlock
from npusim import trace as npusim_trace
from npusim.sweeps import profile_record

BF16 = np.dtype(ml_dtypes.bfloat16)
#: dtype names accepted on the command line and in sweeps -> numpy dtype.
DTYPE_ALIASES = {"float32": np.dtype(np.float32), "fp32": np.dtype(np.float32),
                 "float": np.dtype(np.float32), "float16": np.dtype(np.float16),
                 "fp16": np.dtype(np.float16), "half": np.dtype(np.float16),
                 "bfloat16": BF16, "bf16": BF16, "int32": np.dtype(np.int32)}
#: Serialises runs within one process (see the module docstring): the simulator's own lock,
#: so that a caller's other threads make no host API call while a run has swapped in its
#: runtime state.
_RUN_LOCK = runlock.LOCK


class RunError(Exception):
    """A case that could not run: the message says which call failed and why."""


@dataclass
class Case:
    """One random case of an operator.

    Attributes:
        op: the operator name; shape, dtype: the tensors' shape and numpy dtype.
        tensors: name -> host array, in the order the aclTensors are created (inputs,
            in-place outputs and scalar tensors alike).
        outputs: names of the tensors the operator writes (compared with the golden).
        attrs: other arguments (floats, ints, bools) of the operator.
        seed: the random seed.
    """

    op: str
    shape: tuple
    dtype: np.dtype
    tensors: dict
    outputs: tuple
    attrs: dict = field(default_factory=dict)
    seed: int = 0


@dataclass(frozen=True)
class OperatorEntry:
    """How the tools run one operator (see the module docstring)."""

    name: str
    api: str
    dtypes: tuple
    socs: tuple
    default_shape: tuple
    make_inputs: Callable
    golden: Callable
    first_phase: Callable
    second_phase: Callable
    tiling: Callable | None
    launch: Callable | None
    tile_field: str | None
    ub_budget: Callable | None
    tolerance: dict
    summary: str = ""
    #: ``flops(case)``: floating-point operations of the case (cube operators); the sweep
    #: record then carries ``tflops`` (simulated TFLOPS over the launches' duration).
    flops: Callable | None = None
    #: short SoC version -> the dtypes the operator takes there, when fewer than
    #: ``dtypes`` (e.g. no bfloat16 on Atlas training products).
    soc_dtypes: dict = field(default_factory=dict)

    def dtypes_on(self, short_soc: str) -> tuple:
        """The dtypes the operator takes on SoCs of ``short_soc``."""
        return tuple(self.soc_dtypes.get(short_soc, self.dtypes))

    def __call__(self, point: dict) -> dict:
        """Sweep runner: the record of one point (see :func:`run_point`)."""
        return run_point(self, **point)


# -- helpers -------------------------------------------------------------------------------
def resolve_dtype(dtype) -> np.dtype:
    """A dtype name (float32/fp32/float16/fp16/half/bfloat16/bf16/int32) or numpy dtype.

    Raises:
        ValueError: an unknown name.
    """
    if isinstance(dtype, str):
        try:
            return DTYPE_ALIASES[dtype.lower()]
        except KeyError:
            raise ValueError(f"unknown dtype {dtype!r}; known: "
                             f"{', '.join(DTYPE_ALIASES)}") from None
    return np.dtype(dtype)


def dtype_name(dtype) -> str:
    return np.dtype(dtype).name


def _normal(rng, shape, dtype) -> np.ndarray:
    x = rng.standard_normal(shape, dtype=np.float32)
    return x if np.dtype(dtype) == np.float32 else x.astype(dtype)


def _shape_str(shape) -> str:
    return "x".join(str(d) for d in shape) if shape else "[]"


# -- ApplyFusedEmaAdam -------------------------------------------------------------------
_EMA_ATTRS = dict(lr=1e-3, ema_decay=0.9999, beta1=0.9, beta2=0.999, eps=1e-8, mode=1,
                  bias_correction=True, weight_decay=0.01)
_EMA_STEP = 3


def _ema_inputs(shape, dtype, rng):
    t = {k: _normal(rng, shape, dtype) for k in ("grad", "var", "m")}
    t["v"] = np.abs(_normal(rng, shape, dtype))
    t["s"] = _normal(rng, shape, dtype)
    t["step"] = np.array([_EMA_STEP], np.int64)
    return t, ("var", "m", "v", "s"), dict(_EMA_ATTRS)


def _ema_golden(case):
    from npusim.kernels.apply_fused_ema_adam.golden import apply_fused_ema_adam_golden
    t = case.tensors
    out = apply_fused_ema_adam_golden(t["grad"], t["var"], t["m"], t["v"], t["s"],
                                      int(t["step"][0]), **case.attrs)
    return dict(zip(("var", "m", "v", "s"), out))


def _ema_first(tensors, case):
    from aclnn.ops.apply_fused_ema_adam import aclnnApplyFusedEmaAdamGetWorkspaceSize
    a = case.attrs
    return aclnnApplyFusedEmaAdamGetWorkspaceSize(
        tensors["grad"], tensors["var"], tensors["m"], tensors["v"], tensors["s"],
        tensors["step"], a["lr"], a["ema_decay"], a["beta1"], a["beta2"], a["eps"], a["mode"],
        a["bias_correction"], a["weight_decay"])


def _ema_second(workspace, size, executor, stream):
    from aclnn.ops.apply_fused_ema_adam import aclnnApplyFusedEmaAdam
    return aclnnApplyFusedEmaAdam(workspace, size, executor, stream)


def _ema_tiling(soc, case, core_num, ub_size):
    from npusim.kernels.apply_fused_ema_adam.tiling import tiling
    return tiling(soc, int(np.prod(case.shape)), case.dtype, core_num=core_num, ub_size=ub_size,
                  **case.attrs)


def _ema_launch(device, stream, addrs, td, case, workspace):
    from npusim.kernels.apply_fused_ema_adam.kernel import apply_fused_ema_adam
    args = tuple(addrs[k] for k in ("grad", "var", "m", "v", "s", "step")) + (workspace, td,
                                                                            case.dtype)
    # as aclnn/ops/apply_fused_ema_adam.py: built without the 8 KiB Ascend C UB reserve
    device.launch(stream, apply_fused_ema_adam, td.blockDim, args, name="ApplyFusedEmaAdam",
                  reserve_ub=False)


# -- ApplyAddSign --------------------------------------------------------------------------
_SIGN_SCALARS = (("lr", 0.001), ("alpha", 1.0), ("signDecay", 0.99), ("beta", 0.9))


def _sign_inputs(shape, dtype, rng):
    t = {"var": _normal(rng, shape, dtype), "m": _normal(rng, shape, dtype)}
    for name, value in _SIGN_SCALARS:
        t[name] = np.array([value], dtype)
    t["grad"] = _normal(rng, shape, dtype)
    return t, ("var", "m"), {}


def _sign_golden(case):
    from npusim.kernels.apply_add_sign.golden import apply_add_sign_golden
    t = case.tensors
    scalars = [float(t[name][0]) for name, _ in _SIGN_SCALARS]   # already in the dtype
    var, m = apply_add_sign_golden(t["var"], t["m"], *scalars, t["grad"])
    return {"var": var, "m": m}


def _sign_first(tensors, case):
    from aclnn.ops.apply_add_sign import aclnnApplyAddSignGetWorkspaceSize
    return aclnnApplyAddSignGetWorkspaceSize(tensors["var"], tensors["m"], tensors["lr"],
                                             tensors["alpha"], tensors["signDecay"],
                                             tensors["beta"], tensors["grad"])


def _sign_second(workspace, size, executor, stream):
    from aclnn.ops.apply_add_sign import aclnnApplyAddSign
    return aclnnApplyAddSign(workspace, size, executor, stream)


def _sign_tiling(soc, case, core_num, ub_size):
    from npusim.kernels.apply_add_sign.tiling import tiling
    return tiling(soc, int(np.prod(case.shape)), case.dtype, core_num=core_num, ub_size=ub_size)


def _sign_launch(device, stream, addrs, td, case, workspace):
    from npusim.kernels.apply_add_sign.kernel import apply_add_sign
    args = tuple(addrs[k] for k in ("var", "m", "lr", "alpha", "signDecay", "beta", "grad"))
    # as aclnn/ops/apply_add_sign.py: Select's tensor/scalar mode keeps the UB reserve
    device.launch(stream, apply_add_sign, td.blockDim, args + (workspace, td, case.dtype),
                  name="ApplyAddSign", reserve_ub=True)


# -- Add -----------------------------------------------------------------------------------
def _add_inputs(shape, dtype, rng):
    t = {"self": _normal(rng, shape, dtype), "other": _normal(rng, shape, dtype),
         "out": np.zeros(shape, dtype)}
    return t, ("out",), {"alpha": 1.0}


def _add_golden(case):
    from npusim.kernels.add.golden import add_golden
    t = case.tensors
    return {"out": add_golden(t["self"], t["other"], case.attrs["alpha"], case.dtype)}


def _add_first(tensors, case):
    from aclnn.ops.add import aclnnAddGetWorkspaceSize
    alpha = aclnn.aclCreateScalar(case.attrs["alpha"], aclnn.ACL_FLOAT)
    return aclnnAddGetWorkspaceSize(tensors["self"], tensors["other"], alpha, tensors["out"])


def _add_second(workspace, size, executor, stream):
    from aclnn.ops.add import aclnnAdd
    return aclnnAdd(workspace, size, executor, stream)


def _add_tiling(soc, case, core_num, ub_size):
    from npusim.kernels.add import tiling as add_tiling
    return add_tiling.tiling(soc, int(np.prod(case.shape)), case.dtype, case.dtype, case.dtype,
                             case.attrs["alpha"], core_num=core_num, ub_size=ub_size)


def _add_launch(device, stream, addrs, td, case, workspace):
    from npusim.kernels.add.kernel import add
    # as aclnn/ops/add.py for inputs that need no BroadcastTo
    device.launch(stream, add, td.blockDim, (addrs["self"], addrs["other"], addrs["out"],
                                             workspace, td), name=td.opType)


# -- InplaceAdd ----------------------------------------------------------------------------
def _inplace_add_inputs(shape, dtype, rng):
    t = {"selfRef": _normal(rng, shape, dtype), "other": _normal(rng, shape, dtype)}
    return t, ("selfRef",), {"alpha": 1.0}


def _inplace_add_golden(case):
    from npusim.kernels.add.golden import add_golden
    t = case.tensors
    return {"selfRef": add_golden(t["selfRef"], t["other"], case.attrs["alpha"], case.dtype)}


def _inplace_add_first(tensors, case):
    from aclnn.ops.add import aclnnInplaceAddGetWorkspaceSize
    alpha = aclnn.aclCreateScalar(case.attrs["alpha"], aclnn.ACL_FLOAT)
    return aclnnInplaceAddGetWorkspaceSize(tensors["selfRef"], tensors["other"], alpha)


def _inplace_add_second(workspace, size, executor, stream):
    from aclnn.ops.add import aclnnInplaceAdd
    return aclnnInplaceAdd(workspace, size, executor, stream)


def _inplace_add_launch(device, stream, addrs, td, case, workspace):
    from npusim.kernels.add.kernel import add
    # as aclnn/ops/add.py with out = selfRef
    device.launch(stream, add, td.blockDim, (addrs["selfRef"], addrs["other"], addrs["selfRef"],
                                             workspace, td), name=td.opType)


# -- EmbeddingDenseBackward (aclnn path only: the executor launches a chain of kernels) --------
def _edb_inputs(shape, dtype, rng):
    if len(shape) < 2:
        raise RunError(f"EmbeddingDenseBackward's shape is grad's, at least 2-D (indices x "
                       f"embeddingDim), got {list(shape)}")
    n = int(np.prod(shape[:-1]))
    num_weights = max(1, n // 4)          # [R] about 4 indices per row: duplicates to merge
    t = {"grad": _normal(rng, shape, dtype),
         "indices": rng.integers(0, num_weights, size=n, dtype=np.int64).astype(np.int32),
         "out": np.zeros((num_weights, shape[-1]), dtype)}
    return t, ("out",), {"numWeights": num_weights, "paddingIdx": -1, "scaleGradByFreq": False}


def _edb_golden(case):
    from npusim.kernels.embedding_dense_backward.golden import embedding_dense_backward_golden
    a, t = case.attrs, case.tensors
    return {"out": embedding_dense_backward_golden(t["grad"], t["indices"], a["numWeights"],
                                                   a["paddingIdx"], a["scaleGradByFreq"])}


def _edb_first(tensors, case):
    from aclnn.ops.embedding_dense_backward import aclnnEmbeddingDenseBackwardGetWorkspaceSize
    a = case.attrs
    return aclnnEmbeddingDenseBackwardGetWorkspaceSize(tensors["grad"], tensors["indices"],
                                                       a["numWeights"], a["paddingIdx"],
                                                       a["scaleGradByFreq"], tensors["out"])


def _edb_second(workspace, size, executor, stream):
    from aclnn.ops.embedding_dense_backward import aclnnEmbeddingDenseBackward
    return aclnnEmbeddingDenseBackward(workspace, size, executor, stream)


# -- FusedSparseAdam (aclnn path only: Cast, Sort and the update kernel) -----------------------
#: The scalar inputs: one-element tensors of var's dtype (docs/tutorial.md §10).
_FSA_SCALARS = dict(beta1Power=0.9 ** 3, beta2Power=0.999 ** 3, lr=1e-3, beta1=0.9, beta2=0.999,
                    epsilon=1e-8)


def _fsa_inputs(shape, dtype, rng):
    rows = shape[0]
    n = max(1, rows // 2)                 # [R] half as many indices as rows, duplicates included
    t = {"var": _normal(rng, shape, dtype), "m": _normal(rng, shape, dtype),
         "v": np.abs(_normal(rng, shape, dtype)),
         "grad": _normal(rng, (n,) + tuple(shape[1:]), dtype),
         "indices": rng.integers(0, rows, size=n, dtype=np.int64).astype(np.int32)}
    t.update((k, np.array([x], dtype)) for k, x in _FSA_SCALARS.items())
    return t, ("var", "m", "v"), {"useNesterov": False}


def _fsa_golden(case):
    from npusim.kernels.fused_sparse_adam.golden import fused_sparse_adam_golden
    a, t = case.attrs, case.tensors
    f = {k: float(t[k][0]) for k in _FSA_SCALARS}          # already float32
    out = fused_sparse_adam_golden(t["var"], t["m"], t["v"], f["beta1Power"], f["beta2Power"],
                                   f["lr"], f["beta1"], f["beta2"], f["epsilon"], t["grad"],
                                   t["indices"], a["useNesterov"])
    return dict(zip(("var", "m", "v"), out))


def _fsa_first(tensors, case):
    from aclnn.ops.fused_sparse_adam import aclnnFusedSparseAdamGetWorkspaceSize
    a = case.attrs
    return aclnnFusedSparseAdamGetWorkspaceSize(
        tensors["var"], tensors["m"], tensors["v"], *(tensors[k] for k in _FSA_SCALARS),
        tensors["grad"], tensors["indices"], a["useNesterov"])


def _fsa_second(workspace, size, executor, stream):
    from aclnn.ops.fused_sparse_adam import aclnnFusedSparseAdam
    return aclnnFusedSparseAdam(workspace, size, executor, stream)


# -- Softmax ---------------------------------------------------------------------------------
_SOFTMAX_DIM = -1


def _softmax_inputs(shape, dtype, rng):
    t = {"self": (rng.standard_normal(shape, dtype=np.float32) * 4).astype(dtype),
         "out": np.zeros(shape, dtype)}
    return t, ("out",), {"dim": _SOFTMAX_DIM}


def _softmax_golden(case):
    from npusim.kernels.softmax.golden import softmax_golden
    return {"out": softmax_golden(case.tensors["self"], case.attrs["dim"])}


def _softmax_first(tensors, case):
    from aclnn.ops.softmax import aclnnSoftmaxGetWorkspaceSize
    return aclnnSoftmaxGetWorkspaceSize(tensors["self"], case.attrs["dim"], tensors["out"])


def _softmax_second(workspace, size, executor, stream):
    from aclnn.ops.softmax import aclnnSoftmax
    return aclnnSoftmax(workspace, size, executor, stream)


def _softmax_tiling(soc, case, core_num, ub_size):
    from npusim.kernels.softmax.tiling import tiling
    return tiling(soc, case.shape, case.attrs["dim"], case.dtype, core_num=core_num,
                  ub_size=ub_size)


def _softmax_launch(device, stream, addrs, td, case, workspace):
    from npusim.kernels.softmax.kernel import softmax_v2
    # as aclnn/ops/softmax.py: a contiguous self of out's dtype is one SoftmaxV2 launch
    device.launch(stream, softmax_v2, td.blockDim, (addrs["self"], addrs["out"], workspace, td),
                  name="SoftmaxV2", reserve_ub=False)


# -- RmsNorm ---------------------------------------------------------------------------------
_RMS_EPSILON = 1e-6


def _rms_inputs(shape, dtype, rng):
    from npusim.kernels.rms_norm.golden import rstd_shape
    if not shape:
        raise RunError("RmsNorm's shape is x's, at least 1-D (gamma is its last dim)")
    t = {"x": _normal(rng, shape, dtype), "gamma": _normal(rng, shape[-1:], dtype),
         "yOut": np.zeros(shape, dtype), "rstdOut": np.zeros(rstd_shape(shape, 1), np.float32)}
    return t, ("yOut", "rstdOut"), {"epsilon": _RMS_EPSILON}


def _rms_golden(case):
    from npusim.kernels.rms_norm.golden import rms_norm_golden
    t = case.tensors
    y, rstd = rms_norm_golden(t["x"], t["gamma"], case.attrs["epsilon"])
    return {"yOut": y, "rstdOut": rstd}


def _rms_first(tensors, case):
    from aclnn.ops.rms_norm import aclnnRmsNormGetWorkspaceSize
    return aclnnRmsNormGetWorkspaceSize(tensors["x"], tensors["gamma"], case.attrs["epsilon"],
                                        tensors["yOut"], tensors["rstdOut"])


def _rms_second(workspace, size, executor, stream):
    from aclnn.ops.rms_norm import aclnnRmsNorm
    return aclnnRmsNorm(workspace, size, executor, stream)


def _rms_tiling(soc, case, core_num, ub_size):
    from npusim.kernels.rms_norm.tiling import tiling
    return tiling(soc, case.shape, case.shape[-1:], case.dtype, case.dtype,
                  case.attrs["epsilon"], core_num=core_num, ub_size=ub_size)


def _rms_launch(device, stream, addrs, td, case, workspace):
    from npusim.kernels.rms_norm.kernel import rms_norm
    args = (addrs["x"], addrs["gamma"], addrs["yOut"], addrs["rstdOut"], workspace, td)
    device.launch(stream, rms_norm, td.blockDim, args, name="RmsNorm", reserve_ub=False)


# -- Matmul and BatchMatMul (the cube: AIC_ONLY launches) -------------------------------------
#: cubeMathType of the registry's runs: KEEP_DTYPE (float32 computes in float32)
_CUBE_MATH_TYPE = 0


def _mm_dims(case) -> tuple:
    """(batch, m, k, n) of a Matmul (shape M x K x N) or BatchMatMul (B x M x K x N) case."""
    shape = case.shape
    return (1, *shape) if len(shape) == 3 else tuple(shape)


def _mm_inputs(rank):
    def make(shape, dtype, rng):
        if len(shape) != rank:
            want = "M x K x N" if rank == 3 else "B x M x K x N"
            raise RunError(f"the shape of this operator is {want} ({rank} dims), got "
                           f"{list(shape)}")
        lead, (m, k, n) = tuple(shape[:-3]), shape[-3:]
        t = {"self": _normal(rng, lead + (m, k), dtype), "mat2": _normal(rng, lead + (k, n), dtype),
             "out": np.zeros(lead + (m, n), dtype)}
        return t, ("out",), {"cubeMathType": _CUBE_MATH_TYPE}
    return make


def _mm_golden(case):
    from npusim.kernels.matmul.golden import matmul_golden
    return {"out": matmul_golden(case.tensors["self"], case.tensors["mat2"], case.dtype)}


def _mm_first(api):
    def first(tensors, case):
        from aclnn.ops import matmul
        return getattr(matmul, f"{api}GetWorkspaceSize")(tensors["self"], tensors["mat2"],
                                                         tensors["out"], case.attrs["cubeMathType"])
    return first


def _mm_second(api):
    def second(workspace, size, executor, stream):
        from aclnn.ops import matmul
        return getattr(matmul, api)(workspace, size, executor, stream)
    return second


def _mm_tiling(soc, case, core_num, ub_size):
    """The MatMulV3 tiling: ``core_num`` AICs (at most the SoC's), ``ub_size`` read as the
    L0C budget of a base block (tile sweeps: the base block grows with it; at least one
    16 x 16 float fractal)."""
    from npusim.kernels.matmul.tiling import tiling
    batch, m, k, n = _mm_dims(case)
    return tiling(soc, m, n, k, case.dtype, batch_shape=(batch,) if len(case.shape) == 4 else (),
                  core_num=min(core_num, soc.cube_block_num),
                  l0c_size=None if ub_size is None else max(int(ub_size), 1024))


def _mm_launch(device, stream, addrs, td, case, workspace):
    from npusim.kernels.matmul.kernel import mat_mul_v3
    from npusim.ascendc.types import KernelMetaType
    # as aclnn/ops/matmul.py for contiguous inputs of out's dtype: one cube-only launch
    device.launch(stream, mat_mul_v3, td.blockDim, (addrs["self"], addrs["mat2"], addrs["out"],
                                                    workspace, td),
                  name=td.opType, reserve_ub=False,
                  kernel_type=KernelMetaType.KERNEL_TYPE_AIC_ONLY)


def _mm_flops(case) -> int:
    batch, m, k, n = _mm_dims(case)
    return 2 * batch * m * n * k


#: the cube accumulates in float32 (rounding per k fractal) and rounds once to the output
#: dtype: float16/bf16 one output rounding; float32 the accumulation (~sqrt(K) ulps)
_MM_TOL = {"float32": (1e-5, 2e-4), "float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)}


def _ub_with_reserve(soc):
    return soc.ub_usable - soc.ascendc_reserved_ub


_A2 = ("Ascend910B", "Ascend910_93")
_TOL = {"float32": (1e-5, 1e-6), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}

#: operator name -> entry.
REGISTRY: dict[str, OperatorEntry] = {}


def register(entry: OperatorEntry) -> None:
    """Add (or replace) an operator entry."""
    REGISTRY[entry.name] = entry


register(OperatorEntry(
    name="ApplyFusedEmaAdam", api="aclnnApplyFusedEmaAdam",
    dtypes=("float32", "float16", "bfloat16"), socs=_A2, default_shape=(1 << 20,),
    make_inputs=_ema_inputs, golden=_ema_golden, first_phase=_ema_first,
    second_phase=_ema_second, tiling=_ema_tiling, launch=_ema_launch,
    tile_field="coreCalcMax", ub_budget=lambda soc: soc.ub_usable, tolerance=_TOL,
    summary="fused Adam/AdamW with EMA weights, in place on var, m, v, s"))
register(OperatorEntry(
    name="ApplyAddSign", api="aclnnApplyAddSign", dtypes=("float32", "float16"), socs=_A2,
    default_shape=(1 << 20,), make_inputs=_sign_inputs, golden=_sign_golden,
    first_phase=_sign_first, second_phase=_sign_second, tiling=_sign_tiling,
    launch=_sign_launch, tile_field="tileLength", ub_budget=_ub_with_reserve,
    # fp16: a sign(m) that rounds to the other side of 0 changes var by 2*lr*signDecay*g
    tolerance={"float32": (1e-5, 1e-6), "float16": (2e-3, 5e-3)},
    summary="AddSign optimizer step, in place on var and m"))
register(OperatorEntry(
    name="Add", api="aclnnAdd", dtypes=("float32", "float16", "bfloat16"),
    socs=_A2 + ("Ascend910",), default_shape=(1 << 20,), make_inputs=_add_inputs,
    golden=_add_golden, first_phase=_add_first, second_phase=_add_second, tiling=_add_tiling,
    launch=_add_launch, tile_field="ubFactor", ub_budget=_ub_with_reserve, tolerance=_TOL,
    soc_dtypes={"Ascend910": ("float32", "float16")},   # TRAINING_DTYPES: no BF16
    summary="out = self + alpha * other (alpha = 1)"))
register(OperatorEntry(
    name="InplaceAdd", api="aclnnInplaceAdd", dtypes=("float32", "float16", "bfloat16"),
    socs=_A2 + ("Ascend910",), soc_dtypes={"Ascend910": ("float32", "float16")},
    default_shape=(1 << 20,), make_inputs=_inplace_add_inputs, golden=_inplace_add_golden,
    first_phase=_inplace_add_first, second_phase=_inplace_add_second, tiling=_add_tiling,
    launch=_inplace_add_launch, tile_field="ubFactor", ub_budget=_ub_with_reserve,
    tolerance=_TOL, summary="selfRef += alpha * other, in place (alpha = 1)"))
register(OperatorEntry(
    name="EmbeddingDenseBackward", api="aclnnEmbeddingDenseBackward",
    dtypes=("float32", "float16", "bfloat16"), socs=_A2 + ("Ascend910",),
    soc_dtypes={"Ascend910": ("float32", "float16")},   # no BF16 grad on Atlas training
    default_shape=(16384, 256), make_inputs=_edb_inputs, golden=_edb_golden,
    first_phase=_edb_first,
    second_phase=_edb_second, tiling=None, launch=None, tile_field=None, ub_budget=None,
    # sums of about 4 rows: the kernel's fp32 order against the float64 golden
    tolerance={"float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)},
    summary="grad rows summed into numWeights rows by index (shape: grad's; n/4 rows)"))
register(OperatorEntry(
    name="FusedSparseAdam", api="aclnnFusedSparseAdam", dtypes=("float32",), socs=_A2,
    default_shape=(8192, 256), make_inputs=_fsa_inputs, golden=_fsa_golden,
    first_phase=_fsa_first, second_phase=_fsa_second, tiling=None, launch=None,
    tile_field=None, ub_budget=None, tolerance={"float32": (1e-5, 1e-6)},
    summary="Adam on a sparse gradient of rows/2 indices, in place on var, m, v (shape: var's)"))
register(OperatorEntry(
    name="Softmax", api="aclnnSoftmax", dtypes=("float32", "float16", "bfloat16"),
    socs=_A2, default_shape=(8192, 1024), make_inputs=_softmax_inputs,
    golden=_softmax_golden, first_phase=_softmax_first, second_phase=_softmax_second,
    tiling=_softmax_tiling, launch=_softmax_launch, tile_field="tileLength",
    ub_budget=lambda soc: soc.ub_usable,
    # values in (0, 1]: one rounding of the output dominates
    tolerance={"float32": (1e-5, 1e-7), "float16": (2e-3, 1e-5), "bfloat16": (1.6e-2, 1e-4)},
    summary="softmax along the last dim (shape: self's)"))
register(OperatorEntry(
    name="RmsNorm", api="aclnnRmsNorm", dtypes=("float32", "float16", "bfloat16"), socs=_A2,
    default_shape=(8192, 1024), make_inputs=_rms_inputs, golden=_rms_golden,
    first_phase=_rms_first, second_phase=_rms_second, tiling=_rms_tiling, launch=_rms_launch,
    tile_field="ubFactor", ub_budget=lambda soc: soc.ub_usable, tolerance=_TOL,
    summary="y = x * rstd * gamma over the last dim, rstd = 1/sqrt(mean(x^2) + 1e-6) "
            "(shape: x's; gamma: its last dim)"))


register(OperatorEntry(
    name="Matmul", api="aclnnMatmul", dtypes=("float16", "bfloat16", "float32"), socs=_A2,
    default_shape=(1024, 1024, 1024), make_inputs=_mm_inputs(3), golden=_mm_golden,
    first_phase=_mm_first("aclnnMatmul"), second_phase=_mm_second("aclnnMatmul"),
    tiling=_mm_tiling, launch=_mm_launch, tile_field="baseMN",
    ub_budget=lambda soc: soc.l0_c_size, tolerance=_MM_TOL, flops=_mm_flops,
    summary="out = self @ mat2 on the cube, cubeMathType 0 (shape: M x K x N; tile: the base "
            "block baseM*baseN, grown with the L0C budget)"))
register(OperatorEntry(
    name="BatchMatMul", api="aclnnBatchMatMul", dtypes=("float16", "bfloat16", "float32"),
    socs=_A2, default_shape=(8, 256, 512, 256), make_inputs=_mm_inputs(4), golden=_mm_golden,
    first_phase=_mm_first("aclnnBatchMatMul"), second_phase=_mm_second("aclnnBatchMatMul"),
    tiling=_mm_tiling, launch=_mm_launch, tile_field="baseMN",
    ub_budget=lambda soc: soc.l0_c_size, tolerance=_MM_TOL, flops=_mm_flops,
    summary="out[b] = self[b] @ mat2[b] on the cube, cubeMathType 0 (shape: B x M x K x N)"))


def get(name: str) -> OperatorEntry:
    """The entry of operator ``name`` (case-insensitive; an ``aclnn`` prefix is allowed).

    Raises:
        KeyError: an unknown operator; the message lists the known ones.
    """
    key = name[5:] if name.lower().startswith("aclnn") else name
    for entry_name, entry in REGISTRY.items():
        if entry_name.lower() == key.lower():
            return entry
    raise KeyError(f"unknown operator {name!r}; known: {', '.join(sorted(REGISTRY))}")


def names() -> list[str]:
    return sorted(REGISTRY)


def make_case(entry: OperatorEntry, shape, dtype, seed: int = 0) -> Case:
    """A random case of ``entry`` (numpy's default_rng(seed): the same seed, the same data)."""
    dtype = resolve_dtype(dtype)
    shape = tuple(int(d) for d in shape)
    tensors, outputs, attrs = entry.make_inputs(shape, dtype, np.random.default_rng(seed))
    return Case(entry.name, shape, dtype, tensors, tuple(outputs), attrs, seed)


@functools.lru_cache(maxsize=2)
def _cached_case(op: str, shape: tuple, dtype: str, seed: int) -> tuple:
    """(case, golden outputs) of a point, kept for the next point of a sweep: a core,
    tile or SoC sweep runs one case many times, and neither depends on those axes. The
    arrays are shared: runs only read them."""
    entry = get(op)
    case = make_case(entry, shape, dtype, seed)
    return case, entry.golden(case)


def check(entry: OperatorEntry, case: Case, outputs: dict, expected: dict | None = None) -> dict:
    """Compare ``outputs`` with the golden: ``|out - ref| <= atol + rtol * |ref|`` with the
    entry's tolerance for the dtype (NaN equal to NaN).

    Returns:
        ``{"check": "ok" | "FAIL", "max_abs_err": float, "mismatches": int}``.
    """
    expected = entry.golden(case) if expected is None else expected
    rtol, atol = entry.tolerance.get(dtype_name(case.dtype), (0.0, 0.0))
    worst, bad = 0.0, 0
    for name in case.outputs:
        got = np.asarray(outputs[name]).astype(np.float64)
        ref = np.asarray(expected[name]).astype(np.float64)
        with np.errstate(invalid="ignore"):
            diff = np.abs(got - ref)
            close = (diff <= atol + rtol * np.abs(ref)) | (np.isnan(got) & np.isnan(ref))
        bad += int(close.size - np.count_nonzero(close))
        finite = diff[np.isfinite(diff)]
        if finite.size:
            worst = max(worst, float(finite.max()))
    return {"check": "ok" if bad == 0 else "FAIL", "max_abs_err": worst, "mismatches": bad}


# -- running -------------------------------------------------------------------------------
@contextlib.contextmanager
def acl_session(config: dict):
    """``acl.init`` with ``config`` (the acl.init JSON object) in a runtime state of its
    own, ``set_device(0)``; yields the stream; releases everything on exit (which writes
    the configured trace / op summary). The caller's runtime state is restored after."""
    with _RUN_LOCK:
        saved = runtime.state
        runtime.state = runtime.Runtime()
        fd, path = tempfile.mkstemp(suffix=".json", prefix="npusim-acl-")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(config, f)
            _ok(acl.init(path), "acl.init")
            _ok(acl.rt.set_device(0), "acl.rt.set_device")
            stream, ret = acl.rt.create_stream()
            _ok(ret, "acl.rt.create_stream")
            try:
                yield stream
            finally:
                acl.rt.destroy_stream(stream)
                acl.rt.reset_device(0)
        finally:
            os.unlink(path)
            if runtime.state.initialized:
                acl.finalize()
            runtime.state = saved


def _ok(ret, what: str) -> None:
    if ret != 0:
        msg = acl.get_recent_err_msg() or ""
        raise RunError(f"{what} returned {int(ret)}: {msg.strip()}")


def _tensor(host: np.ndarray, stream):
    """malloc + async H2D copy + aclCreateTensor (contiguous ND); returns (tensor, addr)."""
    nbytes = max(host.nbytes, 1)
    addr, ret = acl.rt.malloc(nbytes, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    _ok(ret, "acl.rt.malloc")
    if host.nbytes:
        _ok(acl.rt.memcpy_async(addr, nbytes, acl.util.numpy_to_ptr(host), host.nbytes,
                                aclnn.ACL_MEMCPY_HOST_TO_DEVICE, stream), "acl.rt.memcpy_async")
    shape = list(host.shape)
    strides = list(aclnn.contiguous_strides(shape))
    t = aclnn.aclCreateTensor(shape, aclnn.numpy_to_acl_dtype(host.dtype), strides, 0,
                              aclnn.ACL_FORMAT_ND, shape, addr)
    if t is None:
        raise RunError(f"aclCreateTensor failed: {acl.get_recent_err_msg()}")
    return t, addr


@dataclass
class RunResult:
    """What one run of a case gave.

    Attributes:
        outputs: name -> host array of each output. profiles: the KernelProfiles launched.
        soc: the SocSpec the device reported (core count limited). path: "aclnn" or
        "kernel". tiling: the operator's TilingData (kernel path; the executor's on the
        aclnn path when it exposes one). trace_events: events written to the trace file.
    """

    outputs: dict
    profiles: list
    soc: object
    path: str
    tiling: object = None
    trace_events: int = 0


def run_aclnn(entry: OperatorEntry, case: Case, soc="Ascend910B1", cores: int | None = None,
              trace: str | None = None, op_summary: str | None = None,
              timing_only: bool | None = None) -> RunResult:
    """Run ``case`` through the aclnn two-phase API on a fresh simulated device.

    Args:
        soc: SoC name; cores: the ``max_cores`` limit (None: every core).
        trace, op_summary: files to write (turns profiling on).
        timing_only: run the kernels timing-only (the ``"timing_only"`` acl.init key; the
            outputs are then not computed); None: as ``NPUSIM_TIMING_ONLY`` says.

    Raises:
        RunError: a call returned an error status (the message has ACL's text).
    """
    section = {"soc": npusim.get_soc(soc).soc_version,
               "keep_records": None}          # every profile of the run (a fresh device)
    if cores is not None:
        section["max_cores"] = int(cores)
    if timing_only is not None:
        section["timing_only"] = bool(timing_only)
    if trace or op_summary:
        section["profiling"] = True
        if trace:
            section["trace"] = os.fspath(trace)
        if op_summary:
            section["op_summary"] = os.fspath(op_summary)
    with acl_session({"npusim": section}) as stream:
        dev = runtime.current_device()
        made = {name: _tensor(np.ascontiguousarray(host), stream)
                for name, host in case.tensors.items()}
        tensors = {name: t for name, (t, _) in made.items()}
        ws, executor, ret = entry.first_phase(tensors, case)
        _ok(ret, f"{entry.api}GetWorkspaceSize")
        td = getattr(executor, "tiling", None)
        workspace = 0
        if ws > 0:
            workspace, ret = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
            _ok(ret, "acl.rt.malloc(workspace)")
        _ok(entry.second_phase(workspace, ws, executor, stream), entry.api)
        outputs = {}
        for name in case.outputs:
            host = np.empty_like(case.tensors[name])
            if host.nbytes:
                _ok(acl.rt.memcpy_async(acl.util.numpy_to_ptr(host), host.nbytes,
                                        made[name][1], host.nbytes,
                                        aclnn.ACL_MEMCPY_DEVICE_TO_HOST, stream),
                    "acl.rt.memcpy_async")
            outputs[name] = host
        _ok(acl.rt.synchronize_stream(stream), "acl.rt.synchronize_stream")
        profiles = list(dev.profiles)
        result = RunResult(outputs, profiles, dev.soc, "aclnn", td)
        for t, addr in made.values():
            aclnn.aclDestroyTensor(t)
            acl.rt.free(addr)
        if workspace:
            acl.rt.free(workspace)
    return result


def ub_for_tile(entry: OperatorEntry, soc, case: Case, tile: int, core_num: int) -> int:
    """The smallest UB budget (bytes) whose tiling gives a tile of at least ``tile``
    elements (the tilings are monotone in the budget).

    Raises:
        RunError: even the whole UB gives a shorter tile (the message says the longest).
    """
    hi = entry.ub_budget(soc)

    def tile_of(ub):
        return getattr(entry.tiling(soc, case, core_num, ub), entry.tile_field)

    longest = tile_of(hi)
    if longest < tile:
        raise RunError(f"tile {tile} is longer than {entry.name} can use for shape "
                       f"{list(case.shape)} {dtype_name(case.dtype)} on {soc.soc_version}: "
                       f"at most {longest} elements (UB budget {hi} B)")
    lo = 1
    while lo < hi:
        mid = (lo + hi) // 2
        if tile_of(mid) >= tile:
            hi = mid
        else:
            lo = mid + 1
    return hi


def run_kernel_level(entry: OperatorEntry, case: Case, soc="Ascend910B1",
                     cores: int | None = None, tile: int | None = None,
                     trace: str | None = None, timing_only: bool | None = None) -> RunResult:
    """Run ``case`` as its kernel on a bare device: the operator's tiling with ``cores``
    (default: all) and, for ``tile``, the UB budget that gives that tile
    (:func:`ub_for_tile`); ``trace`` writes the Chrome trace of the run; ``timing_only``
    as :func:`run_aclnn`.

    Raises:
        RunError: the tile does not fit, or the kernel failed (its message).
    """
    if entry.tiling is None:
        raise RunError(f"{entry.name} has no kernel-level driver (its aclnn executor launches "
                       "a chain of kernels): tile sweeps are not available for it")
    with _RUN_LOCK:
        dev = npusim.Device(soc, profiling=bool(trace), max_cores=cores, keep_records=None,
                            timing_only=timing_only)
        soc_l = dev.soc
        core_num = soc_l.vector_block_num
        ub = ub_for_tile(entry, soc_l, case, int(tile), core_num) if tile else None
        td = entry.tiling(soc_l, case, core_num, ub)
        stream = dev.default_stream
        addrs = {}
        for name, host in case.tensors.items():
            host = np.ascontiguousarray(host)
            addr = addrs[name] = dev.gm.malloc(max(host.nbytes, 1))
            dev.copy_async(stream, "H2D", host.nbytes,
                           lambda a=addr, h=host: dev.gm.write(a, h))
        workspace = dev.gm.malloc(td.workspaceSize) if getattr(td, "workspaceSize", 0) else 0
        if td.blockDim:
            entry.launch(dev, stream, addrs, td, case, workspace)
        outputs = {}
        for name in case.outputs:
            like = case.tensors[name]
            out = outputs[name] = np.empty_like(like)
            dev.copy_async(stream, "D2H", like.nbytes, _reader(dev.gm, addrs[name], out))
        errors = dev.synchronize_stream(stream)
        if errors:
            raise RunError(f"{entry.name} kernel failed: {errors[0]}")
        n_events = npusim_trace.write_trace(trace, dev) if trace else 0
        return RunResult(outputs, list(dev.profiles), soc_l, "kernel", td, n_events)


def _reader(gm, addr: int, out: np.ndarray):
    """The D2H copy's effect: the device bytes at ``addr`` into ``out``."""
    def apply():
        out.reshape(-1).view(np.uint8)[:] = np.frombuffer(gm.read(addr, out.nbytes), np.uint8)
    return apply


def run_point(entry: OperatorEntry, *, shape=None, dtype="float32", soc="Ascend910B1",
              cores=None, tile=None, seed: int = 0, check_golden: bool = True,
              timing_only: bool = False, **attrs) -> dict:
    """The sweep record of one point: the figures (:func:`npusim.sweeps.profile_record`),
    the actual ``cores``, ``tile_len`` and the golden check.

    ``timing_only`` (or ``NPUSIM_TIMING_ONLY=1``): the kernels run timing-only
    (:mod:`npusim.ascendc.timing_only`): the same figures, no golden check (``check`` is
    "timing-only": the outputs are not computed).

    The aclnn path runs it unless ``tile`` is given (then the kernel-level path). Any
    other keyword sets the operator attribute of that name (an axis of your own, e.g. a
    custom operator's ``tileLength``; see :func:`register_custom`).

    Raises:
        RunError: a keyword that is not an attribute of the operator.
    """
    shape = tuple(int(d) for d in (entry.default_shape if shape is None else
                                    ((shape,) if isinstance(shape, int) else shape)))
    if entry is REGISTRY.get(entry.name):
        case, expected = _cached_case(entry.name, shape, dtype_name(resolve_dtype(dtype)), seed)
    else:                              # an entry not (or no longer) registered: no cache
        case = make_case(entry, shape, dtype, seed)
        expected = entry.golden(case) if check_golden else None
    if attrs:
        unknown = sorted(set(attrs) - set(case.attrs))
        if unknown:
            raise RunError(f"{entry.name} has no attribute {', '.join(unknown)} to sweep; its "
                           f"attributes: {', '.join(case.attrs) or 'none'}")
        case = dataclasses.replace(case, attrs={**case.attrs, **attrs})
        expected = entry.golden(case) if check_golden else None
    timing_only = bool(timing_only) or _timing_only.env_timing_only()
    if timing_only:
        check_golden = False
    mode = True if timing_only else None
    if tile:
        res = run_kernel_level(entry, case, soc, cores, tile, timing_only=mode)
    else:
        res = run_aclnn(entry, case, soc, cores, timing_only=mode)
    rec = {"op": entry.name, "shape": _shape_str(shape), "dtype": dtype_name(case.dtype),
           "soc": res.soc.soc_version, "cores": res.soc.vector_block_num,
           "tile": int(tile) if tile else None, "path": res.path, **attrs}
    rec.update(profile_record(res.profiles, res.soc))
    rec["tile_len"] = (getattr(res.tiling, entry.tile_field, None)
                       if res.tiling is not None and entry.tile_field else None)
    if entry.flops is not None and rec.get("duration_us"):
        rec["tflops"] = entry.flops(case) / (rec["duration_us"] * 1e-6) / 1e12
    if check_golden:
        rec.update(check(entry, case, res.outputs, expected))
    elif timing_only:
        rec["check"] = "timing-only"
    return rec


class Runner:
    """A picklable sweep runner for one operator: ``Runner("Add")(point) -> record``.

    ``plugins`` (module names or ``.py`` paths, :func:`load_plugin`) are loaded in a
    worker process that does not know the operator yet (a custom operator registered by
    a plugin file)."""

    def __init__(self, op: str, seed: int = 0, check_golden: bool = True, plugins=(),
                 timing_only: bool = False):
        self.op, self.seed, self.check_golden = get(op).name, seed, check_golden
        self.plugins = tuple(plugins)
        self.timing_only = bool(timing_only)

    def __call__(self, point: dict) -> dict:
        point = dict(point)
        point.setdefault("seed", self.seed)
        if self.op not in REGISTRY:
            for plugin in self.plugins:
                load_plugin(plugin)
        return run_point(get(self.op), check_golden=self.check_golden,
                         timing_only=self.timing_only, **point)

    def __repr__(self) -> str:
        return f"Runner({self.op!r}, seed={self.seed})"


def runner(op: str, seed: int = 0, check_golden: bool = True, plugins=(),
           timing_only: bool = False) -> Runner:
    """The sweep runner of operator ``op`` (see :class:`Runner`; ``timing_only``: its
    points run timing-only, :func:`run_point`)."""
    return Runner(op, seed, check_golden, plugins, timing_only)


# -- operators of your own -------------------------------------------------------------------
_PLUGINS: dict = {}


def load_plugin(spec: str):
    """Import ``spec`` — a module name (``mypkg.my_op``) or the path of a ``.py`` file — once
    per process; the module registers its operators (:func:`register_custom`) when
    imported. Returns the module.

    Raises:
        RunError: the file does not exist, or importing it raised (the message says why).
    """
    import importlib
    import importlib.util
    import sys
    key = os.path.abspath(spec) if spec.endswith(".py") else spec
    if key in _PLUGINS:
        return _PLUGINS[key]
    try:
        if spec.endswith(".py"):
            if not os.path.isfile(spec):
                raise RunError(f"plugin {spec!r}: no such file")
            name = "npusim_plugin_" + os.path.splitext(os.path.basename(spec))[0]
            mod_spec = importlib.util.spec_from_file_location(name, spec)
            module = importlib.util.module_from_spec(mod_spec)
            sys.modules[name] = module          # picklable runners defined in the file
            mod_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(spec)
    except RunError:
        raise
    except Exception as exc:
        raise RunError(f"plugin {spec!r} failed to load: {type(exc).__name__}: {exc}") from None
    _PLUGINS[key] = module
    return module


def register_custom(op, *, golden, default_shape=(1 << 16,), dtypes=None, socs=None,
                    attrs=None, output_shape=None, tolerance=None, summary: str = "",
                    flops=None) -> OperatorEntry:
    """Register an :class:`aclnn.custom.CustomOp` with the study tools, so that ``npusim run``
    / ``npusim sweep`` and :func:`npusim_tools.sweep` run it like the built-in operators.

    Args:
        op: the CustomOp.
        golden: ``golden(**inputs, **attrs)`` -> the expected output (numpy) or a tuple of
            them, one per ``op.outputs`` in order; written from the formula, not the kernel.
        default_shape: the shape of a case when none is given.
        dtypes: the dtype names the tools offer (default: the op's, or float32/float16).
        socs: short SoC versions (default: the op's, or the A2/A3 ones).
        attrs: attribute name -> the value of a case (every name of ``op.attrs``). A sweep
            axis of the same name overrides it point by point (``tileLength=[...]``).
        output_shape: ``output_shape(shape) -> shape`` of every output (default: the shape).
        tolerance: dtype name -> ``(rtol, atol)`` of the golden check (default: 1e-5/1e-6
            for float32, 2e-3 for float16, 1.6e-2 for bfloat16).
        summary, flops: as :class:`OperatorEntry`.

    The inputs of a case are standard normal in the dtype; the outputs start at zero.

    Returns:
        The registered :class:`OperatorEntry` (name: ``op.name``, API ``aclnn{name}``).

    Raises:
        ValueError: ``attrs`` does not give a value for every attribute of the op.
    """
    attrs = dict(attrs or {})
    if set(attrs) != set(op.attrs):
        raise ValueError(f"attrs must give a value for each of {list(op.attrs)}, got "
                         f"{list(attrs)}")
    if dtypes is None:
        known = {dtype_name(d) for ds in op.dtypes.values() for d in ds}
        dtypes = tuple(n for n in ("float32", "float16", "bfloat16") if n in known) if known \
            else ("float32", "float16")
    out_shape = output_shape or (lambda shape: shape)

    def make_inputs(shape, dtype, rng):
        t = {name: _normal(rng, shape, dtype) for name in op.inputs}
        t.update((name, np.zeros(out_shape(shape), dtype)) for name in op.outputs)
        return t, tuple(op.outputs), dict(attrs)

    def gold(case):
        res = golden(**{n: case.tensors[n] for n in op.inputs}, **case.attrs)
        res = res if isinstance(res, tuple) else (res,)
        return dict(zip(op.outputs, res))

    def first(tensors, case):
        return op.get_workspace_size(*(tensors[n] for n in op.inputs),
                                     *(case.attrs[a] for a in op.attrs),
                                     *(tensors[n] for n in op.outputs))

    entry = OperatorEntry(
        name=op.name, api=op.api, dtypes=tuple(dtypes),
        socs=tuple(socs or op.socs or _A2), default_shape=tuple(default_shape),
        make_inputs=make_inputs, golden=gold, first_phase=first,
        second_phase=lambda ws, size, ex, stream: op.run(ws, size, ex, stream),
        tiling=None, launch=None, tile_field=None, ub_budget=None,
        tolerance=tolerance or _TOL, summary=summary or f"custom operator {op.name}",
        flops=flops)
    register(entry)
    return entry


__all__ = ["OperatorEntry", "Case", "RunResult", "RunError", "REGISTRY", "register", "get",
           "names", "make_case", "check", "run_aclnn", "run_kernel_level", "run_point",
           "ub_for_tile", "Runner", "runner", "resolve_dtype", "acl_session", "register_custom",
           "load_plugin"]
