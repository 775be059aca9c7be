"""The simulated devices under torch's "npu" device, and ``torch.npu``.

The tensors of device ``npu:i`` live in the memory of device ``i`` of the aclnn runtime
(:mod:`aclnn.runtime`): ``acl.rt.malloc`` allocates their storage and ``acl.rt.memcpy``
moves their bytes, so the runtime's bounds checks, its copy records and the operators'
profiles cover them. If the program initialised the runtime itself (``acl.init``), that
runtime is used; otherwise :func:`ensure` initialises it with the SoC and device count
given to :func:`aclnn.torch_npu.enable` and sets device 0, as torch_npu's lazy init does.

:class:`NpuModule` is what ``torch.npu`` answers (torch_npu's names:
``torch.npu.synchronize()``, ``current_stream()``, ``set_device()``, ``device_count()``,
``current_device()``, ``is_available()``).
"""
from __future__ import annotations

import json
import os
import tempfile

import aclnn
from aclnn import acl, runtime

_config: dict = {"soc": None, "device_count": 1, "profiling": False}


def check(ret: int, what: str) -> None:
    """RuntimeError naming the call, its status and the runtime's message, unless ``ret``
    is ACL_SUCCESS."""
    if ret != aclnn.ACL_SUCCESS:
        raise RuntimeError(f"{what} failed with {ret}: {acl.get_recent_err_msg()}")


def configure(soc: str | None, device_count: int, profiling: bool = False) -> None:
    _config.update(soc=soc, device_count=int(device_count), profiling=bool(profiling))


def ensure(index: int | None = None):
    """The npusim Device of ``npu:index`` (None: the current one), initialising the
    runtime and setting a device on first use (module doc)."""
    if not runtime.state.initialized:
        section = {"device_count": _config["device_count"], "profiling": _config["profiling"]}
        if _config["soc"]:
            section["soc"] = _config["soc"]
        fd, path = tempfile.mkstemp(suffix=".json", prefix="npusim_torch_")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"npusim": section}, f)
            check(acl.init(path), "acl.init")
        finally:
            os.unlink(path)
    current = runtime.current_device()
    if index is None:
        if current is None:
            check(acl.rt.set_device(0), "acl.rt.set_device")
            current = runtime.current_device()
        return current
    if current is None or current.device_id != index:
        check(acl.rt.set_device(int(index)), "acl.rt.set_device")
    return runtime.current_device()


def device_of(index: int):
    """The Device of ``npu:index`` without changing the current one."""
    dev = runtime.state.devices.get(int(index))
    if dev is None:
        previous = runtime.current_device()
        dev = ensure(index)
        if previous is not None and previous.device_id != index:
            check(acl.rt.set_device(previous.device_id), "acl.rt.set_device")
    return dev


class Stream:
    """``torch.npu.current_stream()``: the default stream of a device (an aclrtStream
    handle of 0, the NULL stream: its work runs when the host waits for it)."""

    def __init__(self, device_index: int):
        self.device_index = device_index
        self.npu_stream = 0

    @property
    def device(self):
        import torch
        return torch.device("npu", self.device_index)

    def synchronize(self) -> None:
        ensure(self.device_index)
        check(acl.rt.synchronize_stream(0), "acl.rt.synchronize_stream")

    def query(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<torch.npu.Stream device=npu:{self.device_index} npu_stream=0x0>"


class NpuModule:
    """``torch.npu``: torch_npu's device functions, on the simulated devices."""

    Stream = Stream

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def is_initialized() -> bool:
        return runtime.state.initialized

    @staticmethod
    def init() -> None:
        ensure()

    _lazy_init = init

    @staticmethod
    def device_count() -> int:
        if runtime.state.initialized:
            return runtime.state.device_count
        return _config["device_count"]

    @staticmethod
    def current_device() -> int:
        return ensure().device_id

    @staticmethod
    def set_device(device) -> None:
        ensure(_index(device))

    @staticmethod
    def synchronize(device=None) -> None:
        """Run every stream of the device to completion (``aclrtSynchronizeDevice``)."""
        previous = ensure().device_id
        ensure(_index(device) if device is not None else previous)
        check(acl.rt.synchronize_device(), "acl.rt.synchronize_device")
        ensure(previous)

    @staticmethod
    def current_stream(device=None) -> Stream:
        return Stream(_index(device) if device is not None else ensure().device_id)

    default_stream = current_stream

    @staticmethod
    def get_device_name(device=None) -> str:
        return device_of(_index(device) if device is not None else 0).soc.soc_version

    @staticmethod
    def empty_cache() -> None:
        """Give the segments no npu tensor uses back to the devices (torch_npu's
        ``torch.npu.empty_cache``)."""
        from aclnn.torch_npu import _allocator
        for dev in list(runtime.state.devices.values()):
            _allocator.allocator(dev).empty_cache()

    @staticmethod
    def memory_allocated(device=None) -> int:
        from aclnn.torch_npu import _allocator
        return _allocator.allocator(device_of(_index(device) if device is not None
                                              else ensure().device_id)).allocated()

    @staticmethod
    def memory_reserved(device=None) -> int:
        from aclnn.torch_npu import _allocator
        return _allocator.allocator(device_of(_index(device) if device is not None
                                              else ensure().device_id)).reserved()

    @staticmethod
    def _is_in_bad_fork() -> bool:
        return False

    @staticmethod
    def manual_seed(seed: int) -> None:
        """Random numbers of npu tensors come from the host generator (the fallback runs
        ``normal_``/``uniform_`` on the host), which ``torch.manual_seed`` seeds (and
        which calls this): nothing of the device's own to seed."""

    manual_seed_all = manual_seed

    @staticmethod
    def get_amp_supported_dtype():
        import torch
        return [torch.float16, torch.bfloat16]


def _index(device) -> int:
    import torch
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        return device.index if device.index is not None else ensure().device_id
    raise TypeError(f"device must be an int, a str or a torch.device, got {device!r}")
