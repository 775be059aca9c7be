"""aclOpExecutor: what the first phase builds and the second phase runs.

Rules (``reference/api.md`` §4 "Executor semantics"):

* ``aclnnXxxGetWorkspaceSize`` creates the executor; ``aclnnXxx`` runs it once and frees
  it. A second run of a freed executor is undefined behaviour in CANN; here it returns
  ``ACLNN_ERR_PARAM_INVALID`` (161002) with a message and runs nothing.
* ``aclSetAclOpExecutorRepeatable`` (right after the first phase) keeps the executor alive
  across runs until ``aclDestroyAclOpExecutor``; both return ``ACLNN_ERR_INNER_NULLPTR``
  (561103) for a null executor, and destroy returns ``ACLNN_ERR_INNER`` (561000) for one
  it does not recognise (already freed).
* Second phase: a null executor, or ``workspaceSize > 0`` with a null workspace, is
  161001; a workspace smaller than the first phase asked for is 161002 (the generated-op
  path, ``NnopbaseRunWithWorkspace``); a null stream is the default stream.
"""
from __future__ import annotations

from aclnn import runtime
from aclnn.constants import (ACLNN_ERR_INNER, ACLNN_ERR_INNER_NULLPTR, ACLNN_ERR_PARAM_INVALID,
                             ACLNN_ERR_PARAM_NULLPTR, ACLNN_ERR_RUNTIME_ERROR, ACLNN_SUCCESS)
from aclnn.errmsg import report_error


class aclOpExecutor:
    """An operator ready to launch.

    Attributes:
        op_name: the aclnn API name (e.g. "aclnnApplyFusedEmaAdam").
        workspace_size: bytes the first phase asked for.
        inputs, outputs: the aclTensors whose addresses are read at launch time (they can be
            changed with aclSetInputTensorAddr / aclSetOutputTensorAddr).
        launch: ``launch(device, stream, workspace_addr)`` enqueues the kernel(s).
        device: the npusim Device the first phase tiled for.
    """

    def __init__(self, op_name: str, workspace_size: int, launch, device, inputs=(), outputs=()):
        self.op_name = op_name
        self.workspace_size = int(workspace_size)
        self.launch = launch
        self.device = device
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.repeatable = False
        self.released = False
        self.runs = 0

    def __repr__(self) -> str:
        state = "released" if self.released else ("repeatable" if self.repeatable else "ready")
        return f"aclOpExecutor({self.op_name}, workspace={self.workspace_size} B, {state})"


def _check_live(api: str, executor) -> int:
    """0 for a live executor; 561103 for None, 561000 for one already released."""
    if executor is None:
        return report_error(ACLNN_ERR_INNER_NULLPTR, f"{api}: executor is nullptr")
    if executor.released:
        return report_error(ACLNN_ERR_INNER, f"{api}: the executor is not a live executor "
                            "(already released by its second phase or destroyed)")
    return ACLNN_SUCCESS


def aclSetAclOpExecutorRepeatable(executor: aclOpExecutor | None) -> int:
    """``aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor)``.

    Returns 0, 561103 for None, 561000 for an executor already released.
    """
    ret = _check_live("aclSetAclOpExecutorRepeatable", executor)
    if ret == ACLNN_SUCCESS:
        executor.repeatable = True
    return ret


def aclDestroyAclOpExecutor(executor: aclOpExecutor | None) -> int:
    """``aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor)``.

    Returns 0, 561103 for None, 561000 for an executor already released.
    """
    ret = _check_live("aclDestroyAclOpExecutor", executor)
    if ret == ACLNN_SUCCESS:
        executor.released = True
    return ret


def _set_addr(api: str, tensors: list, index: int, tensor, addr: int, executor) -> int:
    if executor is None or tensor is None:
        return report_error(ACLNN_ERR_PARAM_NULLPTR, f"{api}: executor and tensor must not be null")
    if executor.released:
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: the executor was released")
    if not 0 <= int(index) < len(tensors):
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: index {index} is outside "
                            f"[0, {len(tensors)})")
    tensors[int(index)].tensor_data = int(addr)
    return ACLNN_SUCCESS


def aclSetInputTensorAddr(executor, index: int, tensor, addr: int) -> int:
    """Point input ``index`` of a repeatable executor at device address ``addr``."""
    return _set_addr("aclSetInputTensorAddr", executor.inputs if executor else [], index,
                     tensor, addr, executor)


def aclSetOutputTensorAddr(executor, index: int, tensor, addr: int) -> int:
    """Point output ``index`` of a repeatable executor at device address ``addr``."""
    return _set_addr("aclSetOutputTensorAddr", executor.outputs if executor else [], index,
                     tensor, addr, executor)


def run_executor(api: str, workspace, workspace_size: int, executor, stream) -> int:
    """The common second phase: check, enqueue the launch, release the executor.

    Returns:
        0 when the launch was enqueued (the kernel runs when the stream is synchronised);
        161001 for a null executor or a null workspace with ``workspace_size > 0``; 161002
        for a released executor, a workspace smaller than asked, or a workspace that is not
        device memory; 361001 when the stream handle or the device is not valid.
    """
    if executor is None:
        return report_error(ACLNN_ERR_PARAM_NULLPTR, f"{api}: executor is nullptr")
    if executor.released:
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: the executor was already run and "
                            "released; call the first phase again, or make it repeatable with "
                            "aclSetAclOpExecutorRepeatable (reference/api.md §4)")
    if not isinstance(workspace_size, int) or workspace_size < 0:
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: workspaceSize must be a "
                            f"non-negative int, got {workspace_size!r}")
    if workspace_size < executor.workspace_size:
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: The passed workspace size "
                            f"{workspace_size} does not meet the minimum workspace size "
                            f"{executor.workspace_size} actually required by the operator")
    if workspace_size > 0 and not workspace:
        return report_error(ACLNN_ERR_PARAM_NULLPTR, f"{api}: workspace is nullptr while "
                            f"workspaceSize is {workspace_size}")
    device = executor.device
    if workspace_size > 0 and not device.gm.contains(int(workspace), workspace_size):
        return report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: workspace 0x{int(workspace):x} "
                            f"with {workspace_size} B is not inside one device allocation")
    s = runtime.resolve_stream(stream)
    if s is None or s.device is not device:
        return report_error(ACLNN_ERR_RUNTIME_ERROR, f"{api}: stream {stream!r} is not a live "
                            f"stream of device {device.device_id}")
    executor.launch(device, s, int(workspace or 0))
    executor.runs += 1
    if not executor.repeatable:
        executor.released = True
    return ACLNN_SUCCESS
