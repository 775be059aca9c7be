"""Your own kernel on an acl stream, and your own kernel as an aclnn operator.

Two ways a kernel written with :mod:`npusim.ascendc` reaches the simulated device from a
pyACL-style program (``acl.init`` -> ``acl.rt.set_device`` -> ``acl.rt.create_stream``
-> ``acl.rt.malloc``), as in an Ascend C project:

* **Kernel launch** (Ascend C "Kernel Launch调用方式" and "核函数调用", the kernel invocation
  operator): :func:`ACLRT_LAUNCH_KERNEL` is ``ACLRT_LAUNCH_KERNEL(kernel_name)(blockDim,
  stream, argument list)``, :func:`kernel_call` is ``kernel_name<<<blockDim, l2ctrl,
  stream>>>(argument list)``::

      ret = ACLRT_LAUNCH_KERNEL(add_custom)(8, stream, x, y, z)
      ret = kernel_call(add_custom)[8, None, stream](x, y, z)
      ret = acl.rt.synchronize_stream(stream)

  The launch is asynchronous: it is a task of ``stream`` and runs when the host
  synchronises; a kernel error is the stream's (``acl.rt.synchronize_stream`` returns
  ACL_ERROR_RT_AICORE_EXCEPTION 507015 and ``acl.get_recent_err_msg()`` has the
  checker's message). Its profile lands in the device's records like any operator's:
  ``aclnn.runtime.current_device().profiles``, the trace and the op summary of the
  acl.init ``"npusim"`` config (``OP Type`` = the kernel's name).

* **An aclnn operator** (the custom-operator project's generated
  ``aclnnXxxGetWorkspaceSize`` / ``aclnnXxx`` pair: Ascend C "单算子API调用", the
  operator's ``op_host`` tiling function and ``op_kernel`` kernel): :class:`CustomOp`
  wraps a kernel and its tiling function; :meth:`CustomOp.aclnn_api` returns the two
  phases, with the same calling convention, validation, status codes, workspace and
  single-use executor as the built-in operators (:mod:`aclnn.executor`)::

      op = CustomOp("AddCustom", kernel=add_custom, tiling=add_custom_tiling,
                    inputs=("x", "y"), outputs=("z",), dtypes=("float16", "float32"))
      aclnnAddCustomGetWorkspaceSize, aclnnAddCustom = op.aclnn_api()
      workspaceSize, executor, ret = aclnnAddCustomGetWorkspaceSize(x, y, z)
      ret = aclnnAddCustom(workspace, workspaceSize, executor, stream)

  ``npusim_tools.registry.register_custom(op, golden=...)`` makes it known to the
  ``npusim`` command (``npusim run --plugin my_op.py AddCustom``) and to sweeps.

The kernel's arguments follow the generated kernel entry of an Ascend C operator
project: ``kernel(*input_addresses, *output_addresses, workspace, tiling)``, each address
a device byte address (``GM_ADDR``), ``tiling`` the object the tiling function returned.
Examples: ``examples/custom_kernel_launch.py``, ``examples/custom_aclnn_op.py``; the guide
is ``docs/kernels.md`` ("Your kernel on a stream, and as an operator").
"""
from __future__ import annotations

import numbers

import numpy as np

from aclnn import errmsg, runtime
from aclnn.constants import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_CONTEXT_NULL,
                             ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_STREAM_CONTEXT, ACL_SUCCESS,
                             ACLNN_ERR_PARAM_INVALID, ACLNN_SUCCESS)
from aclnn.executor import aclOpExecutor, run_executor
from aclnn.ops import _check
from aclnn.ops._check import ParamError
from aclnn.tensor import aclTensor

#: blockDim range of a launch: "BlockDim是逻辑核的概念，取值范围为[1,65535]" (Ascend C
#: "NPU侧调用方式", 内核调用符).
MAX_BLOCK_DIM = 65535


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


@runtime.serialized          # calls from several threads take effect one at a time
def _launch(api: str, kernel, block_dim, stream, args, kernel_type, reserve_ub, name) -> int:
    """Check a kernel launch's arguments and enqueue it; return the status."""
    if not callable(kernel):
        return errmsg.report_error(ACL_ERROR_INVALID_PARAM, f"{api}: the kernel must be a "
                                   f"function (or callable object), got {type(kernel).__name__}")
    if not _is_int(block_dim) or not 1 <= block_dim <= MAX_BLOCK_DIM:
        return errmsg.report_error(ACL_ERROR_INVALID_PARAM, f"{api}: blockDim must be an int in "
                                   f"[1, {MAX_BLOCK_DIM}] (Ascend C kernel invocation), got "
                                   f"{block_dim!r}")
    dev = runtime.current_device()
    if dev is None:
        return errmsg.report_error(ACL_ERROR_RT_CONTEXT_NULL, f"{api}: "
                                   f"{runtime.no_context_reason()}")
    if stream is not None and not _is_int(stream):
        return errmsg.report_error(ACL_ERROR_INVALID_PARAM, f"{api}: stream must be an int "
                                   f"stream handle (0 or None: the default stream), got "
                                   f"{stream!r}")
    s = runtime.resolve_stream(stream)
    if s is None:
        return errmsg.report_error(ACL_ERROR_RT_PARAM_INVALID, f"{api}: stream {stream!r} is "
                                   "not a live stream (never created or already destroyed)")
    problem = runtime.foreign_stream("stream", stream, s)
    if problem is not None:
        return errmsg.report_error(ACL_ERROR_RT_STREAM_CONTEXT, f"{api}: {problem}")
    dev.launch(s, kernel, int(block_dim), tuple(args), name=name, reserve_ub=reserve_ub,
               kernel_type=kernel_type)
    return ACL_SUCCESS


def ACLRT_LAUNCH_KERNEL(kernel, *, name: str | None = None, kernel_type=None,
                        reserve_ub: bool = True):
    """``ACLRT_LAUNCH_KERNEL(kernel_name)(blockDim, stream, argument list)``.

    Args:
        kernel: the kernel function, ``kernel(*args)`` run once per block.
        name: the OP Type in profiles, traces and op summaries (default: the kernel's
            ``__name__``).
        kernel_type: a :class:`npusim.ascendc.KernelMetaType` (``KERNEL_TYPE_AIC_ONLY``,
            ``KERNEL_TYPE_MIX_AIC_1_2``...; default: a vector kernel), as
            ``KERNEL_TASK_TYPE_DEFAULT`` sets it in Ascend C.
        reserve_ub: keep the 8 KiB of UB Ascend C reserves for its library APIs (the
            default build; False is ``--cce-disable-asc-reserved-ubuf``).

    Returns:
        ``launch(blockDim, stream, *args) -> ret``: enqueues the kernel on ``stream`` (an
        acl.rt stream handle; None or 0 is the current context's default stream) and
        returns ACL_SUCCESS (0); or, with nothing enqueued, ACL_ERROR_INVALID_PARAM
        (100000) for a kernel that is not callable, a blockDim that is not an int in [1,
        65535] or a stream that is not an int; ACL_ERROR_RT_CONTEXT_NULL (107002) with no
        device set in this thread; ACL_ERROR_RT_PARAM_INVALID (107000) for a stream that
        is not live; ACL_ERROR_RT_STREAM_CONTEXT (107003) for a stream of another device
        than this thread's current one. The message names the argument (``acl.get_recent_err_msg``).

    Kernel errors (the checker's findings, a blockDim above what a mixed launch can keep
    resident, an exception in the kernel) surface at ``acl.rt.synchronize_stream`` as
    ACL_ERROR_RT_AICORE_EXCEPTION (507015).

    Source: Ascend C "Kernel Launch调用方式" (ACLRT_LAUNCH_KERNEL(kernel_name)(blockDim,
    stream, argument list)).
    """
    def launch(blockDim, stream, *args) -> int:
        return _launch("ACLRT_LAUNCH_KERNEL", kernel, blockDim, stream, args, kernel_type,
                       reserve_ub, name)
    launch.__name__ = f"ACLRT_LAUNCH_KERNEL({getattr(kernel, '__name__', 'kernel')})"
    return launch


class kernel_call:
    """``kernel_name<<<blockDim, l2ctrl, stream>>>(argument list)``, written
    ``kernel_call(kernel)[blockDim, l2ctrl, stream](*args)``.

    ``l2ctrl`` is reserved in Ascend C ("保留参数，暂时设置为固定值nullptr"): pass None.
    The call returns the status of :func:`ACLRT_LAUNCH_KERNEL` (the C operator returns
    nothing; the status is what aclrtGetLastError would report), with the same checks;
    an ``l2ctrl`` other than None / 0 is ACL_ERROR_INVALID_PARAM (100000).
    """

    def __init__(self, kernel, *, name: str | None = None, kernel_type=None,
                 reserve_ub: bool = True):
        self.kernel, self.name = kernel, name
        self.kernel_type, self.reserve_ub = kernel_type, reserve_ub

    def __getitem__(self, config):
        if not isinstance(config, tuple) or len(config) != 3:
            raise TypeError("kernel_call(kernel)[blockDim, l2ctrl, stream]: give the three "
                            "launch parameters of <<<blockDim, l2ctrl, stream>>>")
        block_dim, l2ctrl, stream = config

        def launch(*args) -> int:
            if l2ctrl not in (None, 0):
                return errmsg.report_error(ACL_ERROR_INVALID_PARAM, "<<<>>>: l2ctrl is reserved"
                                           f" and must be nullptr (None), got {l2ctrl!r}")
            return _launch("<<<>>>", self.kernel, block_dim, stream, args, self.kernel_type,
                           self.reserve_ub, self.name)
        return launch


# -- a kernel and its tiling as an aclnn operator ------------------------------------------
def _np_dtype(d) -> np.dtype:
    import ml_dtypes
    if isinstance(d, str) and d.lower() in ("bfloat16", "bf16"):
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(d)


class CustomOp:
    """A kernel plus its tiling function, callable as an aclnn two-phase operator.

    Args:
        name: the operator's name: the API is ``aclnn{name}GetWorkspaceSize`` /
            ``aclnn{name}``, and launches are recorded with OP Type ``name``.
        kernel: ``kernel(*inputs, *outputs, workspace, tiling)`` (device byte addresses,
            the workspace address or 0, the tiling object), run once per block.
        tiling: ``tiling(soc, shapes, dtypes, attrs) -> TilingData``, the host side:
            ``soc`` the device's :class:`npusim.soc.SocSpec` (core counts limited by
            ``max_cores``), ``shapes`` / ``dtypes`` dicts argument name -> shape tuple /
            numpy dtype, ``attrs`` name -> value. The object it returns must have
            ``blockDim`` (int >= 0; 0 launches nothing, e.g. for empty tensors) and may
            have ``workspaceSize`` (bytes, default 0: what the tiling function sets with
            ``GetWorkspaceSizes``; include the Ascend C system workspace,
            ``GetLibApiWorkSpaceSize``, if the kernel calls library APIs that use it).
            A ``ValueError`` it raises is the first phase's 161002 with its message.
        inputs, outputs: argument names of the tensors, in the kernel's order.
        attrs: names of the non-tensor arguments (Python numbers or bools), passed between
            the inputs and the outputs, as in the generated aclnn API.
        dtypes: dtypes every tensor may have (names or numpy dtypes; "bfloat16" allowed),
            or a dict argument name -> dtypes. None: any.
        socs: short SoC versions the operator runs on (``"Ascend910B"``, ``"Ascend910_93"``,
            ``"Ascend910"``, ``"Ascend310P"``); None: any.
        same_shape: every tensor must have the first input's shape (elementwise
            operators; the default). False: ``check`` validates the shapes.
        check: ``check(shapes, dtypes, attrs)``, more validation; a ``ValueError`` it
            raises is 161002 with its message.
        kernel_type, reserve_ub: as :func:`ACLRT_LAUNCH_KERNEL`.

    Every tensor must be contiguous, ND and in device memory: the kernel receives the
    address of its first element.
    """

    def __init__(self, name: str, *, kernel, tiling, inputs, outputs, attrs=(), dtypes=None,
                 socs=None, same_shape: bool = True, check=None, kernel_type=None,
                 reserve_ub: bool = True):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"name must be an identifier such as 'AddCustom', got {name!r}")
        if not callable(kernel) or not callable(tiling):
            raise TypeError("kernel and tiling must be functions")
        self.name, self.kernel, self.tiling = name, kernel, tiling
        self.inputs, self.outputs, self.attrs = tuple(inputs), tuple(outputs), tuple(attrs)
        names = self.inputs + self.outputs + self.attrs
        if not self.inputs or not self.outputs or len(set(names)) != len(names):
            raise ValueError("give at least one input and one output, all names distinct")
        if isinstance(dtypes, dict):
            self.dtypes = {k: tuple(_np_dtype(d) for d in v) for k, v in dtypes.items()}
        elif dtypes is not None:
            self.dtypes = {k: tuple(_np_dtype(d) for d in dtypes)
                           for k in self.inputs + self.outputs}
        else:
            self.dtypes = {}
        self.socs = tuple(socs) if socs is not None else None
        self.same_shape, self.check = same_shape, check
        self.kernel_type, self.reserve_ub = kernel_type, reserve_ub
        self.api = f"aclnn{name}"

    def __repr__(self) -> str:
        return f"CustomOp({self.name!r}, inputs={self.inputs}, outputs={self.outputs})"

    # -- the two phases -----------------------------------------------------------------
    @runtime.serialized
    def get_workspace_size(self, *args):
        """The first phase: ``(workspaceSize, executor, ret)`` (see :meth:`aclnn_api`)."""
        api = f"{self.api}GetWorkspaceSize"
        try:
            executor = self._build(api, args)
        except ParamError as exc:
            return 0, None, errmsg.report_error(exc.code, f"{api}: {exc}")
        return executor.workspace_size, executor, ACLNN_SUCCESS

    @runtime.serialized
    def run(self, workspace, workspaceSize, executor, stream) -> int:
        """The second phase (:func:`aclnn.executor.run_executor`)."""
        if isinstance(executor, aclOpExecutor) and executor.op_name != self.api:
            return errmsg.report_error(ACLNN_ERR_PARAM_INVALID, f"{self.api}: the executor was "
                                       f"built by {executor.op_name}, not {self.api}")
        return run_executor(self.api, workspace, workspaceSize, executor, stream)

    def aclnn_api(self):
        """``(aclnnXxxGetWorkspaceSize, aclnnXxx)``: the operator's two phases.

        ``aclnnXxxGetWorkspaceSize(*inputs, *attrs, *outputs) -> (workspaceSize, executor,
        ret)``: validates (below), calls the tiling function and builds the single-use
        executor; ret is ACLNN_SUCCESS, or with ``(0, None, code)``:

        * 161001 ACLNN_ERR_PARAM_NULLPTR: a tensor argument is None;
        * 161002 ACLNN_ERR_PARAM_INVALID: the wrong number of arguments; an argument that
          is not a live aclTensor; a dtype outside ``dtypes``; a format that is not ND; a
          shape other than the first input's (``same_shape``); a view that is not
          contiguous or not inside one device allocation; an attribute that is not a
          number or bool; a SoC outside ``socs``; a ``ValueError`` of ``check`` or the
          tiling function; a tiling without an int ``blockDim`` >= 0 or with a negative
          ``workspaceSize``;
        * 361001: no device set.

        ``aclnnXxx(workspace, workspaceSize, executor, stream) -> ret``: as every
        second phase (:func:`aclnn.executor.run_executor`: 161001 null executor or
        workspace, 161002 released executor or short workspace, 361001 bad stream), and
        161002 for an executor of another operator.
        """
        first = self.get_workspace_size
        second = self.run

        def getWorkspaceSize(*args):
            return first(*args)

        def phase2(workspace, workspaceSize, executor, stream):
            return second(workspace, workspaceSize, executor, stream)
        getWorkspaceSize.__name__ = getWorkspaceSize.__qualname__ = f"{self.api}GetWorkspaceSize"
        phase2.__name__ = phase2.__qualname__ = self.api
        getWorkspaceSize.__doc__ = f"First phase of {self.api} ({self!r}); see CustomOp.aclnn_api."
        phase2.__doc__ = f"Second phase of {self.api}; see CustomOp.aclnn_api."
        return getWorkspaceSize, phase2

    # -- first phase -------------------------------------------------------------------
    def _build(self, api: str, args) -> aclOpExecutor:
        n_in, n_attr, n_out = len(self.inputs), len(self.attrs), len(self.outputs)
        if len(args) != n_in + n_attr + n_out:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"takes {n_in + n_attr + n_out} arguments "
                             f"({', '.join(self.inputs + self.attrs + self.outputs)}), got "
                             f"{len(args)}")
        ins = dict(zip(self.inputs, args[:n_in]))
        attrs = dict(zip(self.attrs, args[n_in:n_in + n_attr]))
        outs = dict(zip(self.outputs, args[n_in + n_attr:]))
        tensors = {**ins, **outs}
        _check.objects(*((k, t, aclTensor) for k, t in tensors.items()))
        dev = _check.device()
        soc = dev.soc
        if self.socs is not None and soc.short_soc_version not in self.socs:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{self.name} is not supported on "
                             f"{soc.soc_version}: it runs on {', '.join(self.socs)}")
        for k, v in attrs.items():
            if not isinstance(v, (numbers.Real, bool, np.bool_)):
                raise ParamError(ACLNN_ERR_PARAM_INVALID, f"attribute {k} must be a number or "
                                 f"a bool, got {type(v).__name__}")
        for k, t in tensors.items():
            allowed = self.dtypes.get(k)
            if allowed is not None and t.np_dtype not in allowed:
                raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{k} has dtype {t.data_type.name}; "
                                 f"{self.name} takes "
                                 f"{', '.join(d.name for d in allowed)}")
            _check.nd_format(k, t)
        first = self.inputs[0]
        if self.same_shape:
            for k, t in tensors.items():
                if tuple(t.view_dims) != tuple(ins[first].view_dims):
                    raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{k} has shape "
                                     f"{list(t.view_dims)}; {self.name} needs every tensor "
                                     f"of {first}'s shape {list(ins[first].view_dims)}")
        for k, t in tensors.items():
            _check.contiguous_on_device(k, t, dev)
        shapes = {k: tuple(t.view_dims) for k, t in tensors.items()}
        dtypes = {k: t.np_dtype for k, t in tensors.items()}
        try:
            if self.check is not None:
                self.check(shapes, dtypes, dict(attrs))
            td = self.tiling(soc, shapes, dtypes, dict(attrs))
        except ValueError as exc:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, str(exc)) from None
        block_dim = getattr(td, "blockDim", None)
        ws = getattr(td, "workspaceSize", 0)
        if not _is_int(block_dim) or block_dim < 0:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"the tiling function returned blockDim "
                             f"{block_dim!r}; it must set an int blockDim >= 0")
        if not _is_int(ws) or ws < 0:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"the tiling function returned "
                             f"workspaceSize {ws!r}; it must be an int >= 0 (bytes)")
        op = self
        in_ts, out_ts = list(ins.values()), list(outs.values())

        def launch(device, stream, workspace):
            if not block_dim:
                return
            addrs = [t.data_address() for t in in_ts + out_ts]
            device.launch(stream, op.kernel, int(block_dim), (*addrs, workspace or 0, td),
                          name=op.name, reserve_ub=op.reserve_ub, kernel_type=op.kernel_type)

        executor = aclOpExecutor(self.api, int(ws), launch, dev, inputs=in_ts, outputs=out_ts,
                                 input_names=list(self.inputs), output_names=list(self.outputs))
        executor.tiling = td
        return executor


__all__ = ["ACLRT_LAUNCH_KERNEL", "kernel_call", "CustomOp", "MAX_BLOCK_DIM"]
