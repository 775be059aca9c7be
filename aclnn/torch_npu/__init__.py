"""torch's device "npu" on the simulated NPU, named as torch_npu names it.

::

    import torch
    import aclnn.torch_npu
    aclnn.torch_npu.enable()                 # or npusim.pyasc.enable(), which calls it
    x = torch.randn(64, 128, device="npu")
    w = torch.randn(128, 32).npu()
    y = torch.softmax(x @ w, dim=-1)         # aclnnMm, then aclnnSoftmax, on the device
    print(y.cpu())
    torch.npu.synchronize()

What it is (DESIGN.md "torch on device npu": a front end beside the MindSpore one, over
``aclnn``):

* the PrivateUse1 backend renamed "npu", registered from Python with torch's own
  ``_setup_privateuseone_for_python_backend`` (``torch.utils.rename_privateuse1_backend``,
  ``generate_methods_for_privateuse1_backend``: ``Tensor.npu()``, ``Tensor.is_npu``,
  ``Module.npu()``; ``torch._register_device_module("npu", ...)``: ``torch.npu``,
  :class:`aclnn.torch_npu._runtime.NpuModule`);
* tensors whose storage is device memory from ``acl.rt.malloc``
  (:mod:`aclnn.torch_npu._tensor`: why they are a wrapper subclass, not a C++ allocator);
* the factories ``torch.empty``/``empty_strided`` for the PrivateUse1 key (``zeros``,
  ``ones``, ``full``, ``randn``, ``arange``... are built on them by torch), through
  ``torch.library``;
* each aten operator on npu tensors: an aclnn operator where npusim has one, views and
  copies natively, everything else on the host with a warning
  (:mod:`aclnn.torch_npu._ops`, :class:`NpuFallbackWarning`).

Limits: npu tensors have no autograd of the aclnn operators' own (torch's autograd
formulas run over them, their backward operators dispatched as above); an out= operator
that must resize its npu output returns a new tensor instead; ``untyped_storage()`` is
refused; streams other than each device's default one are not modelled.
"""
from __future__ import annotations

_state = {"registered": False, "library": None}


def _require_torch():
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        raise ImportError("aclnn.torch_npu needs torch: pip install '.[torch]' in the npusim "
                          "checkout (the CPU build; README \"torch on device npu\")") from exc


def enable(soc: str | None = None, *, device_count: int = 1, profiling: bool = False) -> None:
    """Register device "npu" with torch (once per process; later calls only change the
    configuration used when the runtime is first initialised).

    Args:
        soc: the SoC of the devices when this front end initialises the aclnn runtime
            (None: ``npusim.DEFAULT_SOC``); a runtime the program initialised itself
            (``acl.init``) keeps its own.
        device_count: devices ``npu:0``.. ``torch.npu.device_count()`` has, likewise.
        profiling: likewise, the runtime's ``"profiling"`` (instruction spans for traces).

    Raises:
        ImportError: torch is not installed.
        RuntimeError: torch's PrivateUse1 backend already has another name (torch_npu
            itself, or another backend, was imported first).
    """
    _require_torch()
    import torch
    from aclnn.torch_npu import _runtime
    _runtime.configure(soc, device_count, profiling)
    if _state["registered"]:
        return
    name = torch._C._get_privateuse1_backend_name()
    if name != "privateuseone":
        raise RuntimeError(f"torch's PrivateUse1 backend is already named {name!r}: "
                           "device 'npu' of npusim cannot be registered in this process")
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend
    from aclnn.torch_npu import _factories
    _setup_privateuseone_for_python_backend(rename="npu", backend_module=_runtime.NpuModule())
    _state["library"] = _factories.register()
    _state["registered"] = True


def is_enabled() -> bool:
    return _state["registered"]


def op_summary() -> str:
    """The msprof-style op summary (a text table) of every kernel run on the npu devices
    since the runtime was initialised (:func:`npusim.profiling.op_summary_rows`)."""
    from aclnn import runtime
    from npusim import profiling
    devices = list(runtime.state.devices.values())
    rows = profiling.op_summary_rows(devices)
    if not rows:
        return "(no kernel ran)"
    columns = [c for c in ("Op Name", "OP Type", "Task Type", "Task Duration(us)", "Block Dim",
                           "aiv_time(us)", "aic_time(us)") if c in rows[0]]
    return profiling.format_table(rows, columns)


def __getattr__(name: str):
    if name == "NpuFallbackWarning":
        from aclnn.torch_npu._ops import NpuFallbackWarning
        return NpuFallbackWarning
    raise AttributeError(name)


__all__ = ["enable", "is_enabled", "op_summary", "NpuFallbackWarning"]
