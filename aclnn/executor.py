"""aclOpExecutor: what the first phase builds and the second phase runs.

Rules (``docs/reference/api.md`` §4 "Executor semantics"):

* ``aclnnXxxGetWorkspaceSize`` creates the executor; ``aclnnXxx`` runs it once and frees
  it. A second run of a freed executor is undefined behaviour in CANN; here it returns
  ``ACLNN_ERR_PARAM_INVALID`` (161002) with a message and runs nothing.
* ``aclSetAclOpExecutorRepeatable`` (right after the first phase) keeps the executor alive
  across runs until ``aclDestroyAclOpExecutor``; both return ``ACLNN_ERR_INNER_NULLPTR``
  (561103) for a null executor, and ``ACLNN_ERR_INNER`` (561000) for one they do not
  recognise -- already freed, or (Python only) an object that is not an executor at all:
  CANN's "magic number not recognised" [R for the second case].
* Second phase: a null executor, or ``workspaceSize > 0`` with a null workspace, is
  161001; a workspace smaller than the first phase asked for is 161002 (the generated-op
  path, ``NnopbaseRunWithWorkspace``); a null stream is the default stream.

Simulator checks of the second phase, each 161002 (the closest documented code,
"parameter check error", api.md §1) [R]: an executor argument that is not an
aclOpExecutor, a workspace or workspaceSize that is not an int, a workspace that is not
inside one live device allocation, an input or output tensor whose device memory is
no longer inside one live allocation (freed since the first phase, or moved there by
``aclSetInputTensorAddr``), and tensors moved so that they break the operator's aliasing
rule (``aclOpExecutor.alias_check``, :func:`aclnn.ops._check.no_aliasing`). On real
hardware these corrupt memory, give wrong results or raise an AI Core exception; here
the launch is refused and no device byte changes. A failed second phase leaves the
executor as it was (still runnable).
"""
from __future__ import annotations

import numpy as np

from aclnn import runtime
from aclnn.constants import (ACLNN_ERR_INNER, ACLNN_ERR_INNER_NULLPTR, ACLNN_ERR_PARAM_INVALID,
                             ACLNN_ERR_PARAM_NULLPTR, ACLNN_ERR_RUNTIME_ERROR, ACLNN_SUCCESS)
from aclnn.errmsg import report_error
from aclnn.tensor import aclTensor

_UINT64_MAX = (1 << 64) - 1


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


class aclOpExecutor:
    """An operator ready to launch.

    Attributes:
        op_name: the aclnn API name (e.g. "aclnnApplyFusedEmaAdam").
        workspace_size: bytes the first phase asked for.
        inputs, outputs: the aclTensors whose addresses are read at launch time (they can be
            changed with aclSetInputTensorAddr / aclSetOutputTensorAddr).
        input_names, output_names: their argument names in the first phase, for messages.
        launch: ``launch(device, stream, workspace_addr)`` enqueues the kernel(s).
        device: the npusim Device the first phase tiled for.
    """

    def __init__(self, op_name: str, workspace_size: int, launch, device, inputs=(), outputs=(),
                 input_names=None, output_names=None):
        self.op_name = op_name
        self.workspace_size = int(workspace_size)
        self.launch = launch
        self.device = device
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        #: the API's argument names of inputs / outputs, for messages ("input[i]" if None)
        self.input_names = (list(input_names) if input_names is not None
                            else [f"input[{i}]" for i in range(len(self.inputs))])
        self.output_names = (list(output_names) if output_names is not None
                             else [f"output[{i}]" for i in range(len(self.outputs))])
        self.repeatable = False
        self.released = False
        self.runs = 0
        #: the operator's aliasing rule (``aclnn.ops._check.aliasing``): a function of no
        #: arguments returning the message of an output that overlaps what the operator
        #: still reads, or None; checked again by the second phase
        self.alias_check = None

    def __repr__(self) -> str:
        state = "released" if self.released else ("repeatable" if self.repeatable else "ready")
        return f"aclOpExecutor({self.op_name}, workspace={self.workspace_size} B, {state})"


def _check_live(api: str, executor) -> int:
    """0 for a live executor; 561103 for None, 561000 for one already released or an
    object that is not an aclOpExecutor (CANN: magic number not recognised)."""
    if executor is None:
        return report_error(ACLNN_ERR_INNER_NULLPTR, f"{api}: executor is nullptr")
    if not isinstance(executor, aclOpExecutor):
        return report_error(ACLNN_ERR_INNER, f"{api}: executor is not an aclOpExecutor (got "
                            f"{type(executor).__name__}): not a recognised executor")
    if executor.released:
        return report_error(ACLNN_ERR_INNER, f"{api}: the executor is not a live executor "
                            "(already released by its second phase or destroyed)")
    return ACLNN_SUCCESS


def aclSetAclOpExecutorRepeatable(executor: aclOpExecutor | None) -> int:
    """``aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor)``.

    Returns 0, 561103 for None, 561000 for an executor already released or an object that
    is not an executor [R].
    """
    ret = _check_live("aclSetAclOpExecutorRepeatable", executor)
    if ret == ACLNN_SUCCESS:
        executor.repeatable = True
    return ret


def aclDestroyAclOpExecutor(executor: aclOpExecutor | None) -> int:
    """``aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor)``.

    Returns 0, 561103 for None, 561000 for an executor already released or an object that
    is not an executor [R].
    """
    ret = _check_live("aclDestroyAclOpExecutor", executor)
    if ret == ACLNN_SUCCESS:
        executor.released = True
    return ret


def _set_addr(api: str, which: str, executor, index, tensor, addr) -> int:
    """The checks and the update of aclSetInputTensorAddr / aclSetOutputTensorAddr."""
    if executor is None:
        return report_error(ACLNN_ERR_PARAM_NULLPTR, f"{api}: executor is nullptr")
    if tensor is None:
        return report_error(ACLNN_ERR_PARAM_NULLPTR, f"{api}: tensor is nullptr")
    if not isinstance(executor, aclOpExecutor):
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: executor must be an "
                            f"aclOpExecutor, got {type(executor).__name__}")
    if executor.released:
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: the executor was released")
    tensors = executor.inputs if which == "input" else executor.outputs
    if not _is_int(index) or not 0 <= index < len(tensors):
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: index {index!r} is not an "
                            f"{which} index of {executor.op_name}: an int in "
                            f"[0, {len(tensors)})")
    if not isinstance(tensor, aclTensor):
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: tensor must be an aclTensor, "
                            f"got {type(tensor).__name__}")
    if addr is not None and (not _is_int(addr) or not 0 <= addr <= _UINT64_MAX):
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: addr must be an int device "
                            f"address in [0, 2**64), got {addr!r}")
    # The address is not checked here (CANN does not); the second phase refuses to launch
    # on memory that is not inside a live allocation.
    tensors[int(index)].tensor_data = int(addr or 0)
    return ACLNN_SUCCESS


def aclSetInputTensorAddr(executor, index: int, tensor, addr: int) -> int:
    """Point input ``index`` of a repeatable executor at device address ``addr``.

    ``aclnnStatus aclSetInputTensorAddr(aclOpExecutor* executor, const size_t index,
    aclTensor* tensor, void* addr)`` (docs/reference/api.md §2, §4). ``index`` counts the
    first phase's tensor inputs in order; ``addr`` is the new storage base.

    Returns 0; 161001 for a null executor or tensor; 161002 for a released executor, an
    index outside the executor's inputs, a tensor that is not an aclTensor or an addr
    that is not an int address [R: simulator checks].
    """
    return _set_addr("aclSetInputTensorAddr", "input", executor, index, tensor, addr)


def aclSetOutputTensorAddr(executor, index: int, tensor, addr: int) -> int:
    """Point output ``index`` of a repeatable executor at device address ``addr``.

    As :func:`aclSetInputTensorAddr`, over the executor's outputs.
    """
    return _set_addr("aclSetOutputTensorAddr", "output", executor, index, tensor, addr)


def _tensor_memory_problem(t, dev) -> str | None:
    """Why the bytes a tensor's view addresses are not inside one live allocation of
    ``dev``, or None when they are (or the view is empty)."""
    if not isinstance(t, aclTensor) or t.is_empty():
        return None
    low = high = 0
    for dim, stride in zip(t.view_dims, t.strides):
        span = (dim - 1) * stride
        low, high = (low + span, high) if span < 0 else (low, high + span)
    start = t.data_address() + low * t.itemsize
    nbytes = (high - low + 1) * t.itemsize
    if not t.tensor_data or start < 0 or not dev.gm.contains(start, nbytes):
        return (f"its data 0x{max(start, 0):x} + {nbytes} B is not inside one live device "
                "allocation (freed since the first phase, or a foreign address)")
    return None


def run_executor(api: str, workspace, workspace_size, executor, stream) -> int:
    """The common second phase: check, enqueue the launch, release the executor.

    Args:
        api: the second-phase API name (for messages).
        workspace: device address (int) of the workspace, None or 0 for none.
        workspace_size: bytes at ``workspace`` (int >= 0).
        executor: the first phase's aclOpExecutor.
        stream: stream handle; None or 0 is the default stream.

    Returns:
        0 when the launch was enqueued (the kernel runs when the stream is synchronised);
        161001 for a null executor or a null workspace with ``workspace_size > 0``; 161002
        for a released executor, a workspace smaller than asked, a workspace that is not
        device memory, an argument of the wrong Python type, a tensor whose memory is
        no longer inside a live allocation, or outputs that now overlap each other or an
        input the operator reads (moved there by aclSetInputTensorAddr /
        aclSetOutputTensorAddr; the operator's aliasing rule) [R]; 361001 when the stream handle or the
        device is not valid. Nothing is enqueued and the executor is unchanged on error.
    """
    if executor is None:
        return report_error(ACLNN_ERR_PARAM_NULLPTR, f"{api}: executor is nullptr")
    if not isinstance(executor, aclOpExecutor):
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: executor must be the "
                            f"aclOpExecutor of the first phase, got {type(executor).__name__}")
    if executor.released:
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: the executor was already run and "
                            "released; call the first phase again, or make it repeatable with "
                            "aclSetAclOpExecutorRepeatable (docs/reference/api.md §4)")
    if not _is_int(workspace_size) or not 0 <= workspace_size <= _UINT64_MAX:
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: workspaceSize must be a "
                            f"non-negative int (uint64_t bytes), got {workspace_size!r}")
    workspace_size = int(workspace_size)
    if workspace is not None and (not _is_int(workspace)
                                  or not 0 <= workspace <= _UINT64_MAX):
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: workspace must be an int device "
                            f"address (or None / 0 for none), got {workspace!r}")
    workspace = int(workspace or 0)
    if workspace_size < executor.workspace_size:
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: The passed workspace size "
                            f"{workspace_size} does not meet the minimum workspace size "
                            f"{executor.workspace_size} actually required by the operator")
    if workspace_size > 0 and not workspace:
        return report_error(ACLNN_ERR_PARAM_NULLPTR, f"{api}: workspace is nullptr while "
                            f"workspaceSize is {workspace_size}")
    device = executor.device
    if workspace_size > 0 and not device.gm.contains(workspace, workspace_size):
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: workspace 0x{workspace:x} "
                            f"with {workspace_size} B is not inside one device allocation")
    names = executor.input_names + executor.output_names
    for name, t in zip(names, executor.inputs + executor.outputs):
        problem = _tensor_memory_problem(t, device)
        if problem is not None:
            return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: {name}: {problem}")
    problem = executor.alias_check() if executor.alias_check is not None else None
    if problem is not None:
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: {problem}")
    s = runtime.resolve_stream(stream)
    if s is None and not stream:        # the default stream of no context
        return report_error(ACLNN_ERR_RUNTIME_ERROR, f"{api}: stream {stream!r} (the default "
                            f"stream): {runtime.no_context_reason()}")
    if s is None:
        return report_error(ACLNN_ERR_RUNTIME_ERROR, f"{api}: stream {stream!r} is not a live "
                            "stream (never created or already destroyed)")
    if s.device is not device:
        return report_error(ACLNN_ERR_RUNTIME_ERROR, f"{api}: stream {stream!r} is not a live "
                            f"stream of device {device.device_id}, for which the first phase "
                            "planned the operator (the current device of the thread that "
                            f"called it): it is a stream of device {s.device.device_id}")
    problem = runtime.foreign_stream("stream", stream, s)
    if problem is not None:
        return report_error(ACLNN_ERR_RUNTIME_ERROR, f"{api}: {problem}")
    executor.launch(device, s, workspace)
    executor.runs += 1
    if not executor.repeatable:
        executor.released = True
    return ACLNN_SUCCESS


# Calls from several threads take effect one at a time (aclnn.runtime.serialize_api).
runtime.serialize_api(globals())
run_executor = runtime.serialized(run_executor)     # CustomOp's second phases call it
