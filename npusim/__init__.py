"""npusim: a simulated Huawei Ascend NPU.

Layers (see the project README):

* :mod:`npusim.soc` — SoC presets from the CANN platform configs (``get_soc``).
* :mod:`npusim.gm` — global memory with aclrtMalloc's allocation rules.
* :mod:`npusim.ascendc` — the Ascend C programming surface kernels are written in.
* :mod:`npusim.launch` / :mod:`npusim.timing` — running a kernel on its blocks and timing
  it with a discrete-event model of the pipes, the DMA and the shared L2 and HBM
  (:mod:`npusim.lockstep` runs blocks that issue the same instructions together).
* :mod:`npusim.device` — a device with streams and events on a simulated clock.

This package imports neither ``kernels`` nor ``aclnn``: a user who writes a kernel of
their own needs only ``npusim``.
"""
import npusim.interned_names  # noqa: F401  (first: a long run's host memory stays flat)
from npusim.ascendc.checker import CheckerConfig
from npusim.device import Device, Event, Stream, TaskRecord
from npusim.errors import (AlignmentError, DeviceError, DtypeError, GmAccessError, KernelError,
                           LimitError, NpuSimError, SyncError, UbError)
from npusim.gm import GlobalMemory
from npusim.launch import KernelProfile, run_kernel
from npusim.soc import DEFAULT_SOC, SOC_PRESETS, SocSpec, UnknownSocError, get_soc, list_socs
from npusim.sweeps import SweepResult, sweep

__version__ = "0.1.0"

__all__ = [
    "CheckerConfig",
    "Device", "Event", "Stream", "TaskRecord", "SweepResult", "sweep", "AlignmentError", "DeviceError", "DtypeError",
    "GmAccessError", "KernelError", "LimitError", "NpuSimError", "SyncError", "UbError",
    "GlobalMemory", "KernelProfile", "run_kernel", "DEFAULT_SOC", "SOC_PRESETS", "SocSpec",
    "UnknownSocError", "get_soc", "list_socs",
]
