"""pyasc's runtime library, answered by npusim devices.

pyasc's ``asc.lib.runtime`` calls a small C library (``rt_wrapper.cpp``: SetDeviceWrapper,
MallocWrapper, MemcpyWrapper, StreamSynchronizeWrapper...) through
``asc.lib.runtime.state.lib.call(name, *ctypes_args)``. :class:`RuntimeLib` is that
library for npusim: each call acts on a :class:`npusim.device.Device`, so every function of
``asc.lib.runtime`` (streams, ``current_stream``, memory, device selection and device
information) works unchanged and answers from the simulated device.

One difference is deliberate: pyasc's ``malloc`` asks for ``size + 512`` bytes and aligns
the pointer itself; npusim's allocations already start 512 B aligned, so the library
reserves only the ``size`` the caller asked for (with aclrtMalloc's rounding), keeping the
GM bounds checks as tight as for a kernel launched through aclnn. The policy pyasc passes is
honoured: its copies of arguments over 2048 B (``copy_data_to_device``) ask for
``RT_MEMORY_POLICY_HUGE_PAGE_ONLY``, the runtime flag behind aclrtMalloc's
``ACL_MEM_MALLOC_HUGE_ONLY``, whose memory is granted in whole 2 MiB pages ("内存申请粒度为2M,
不足2M的倍数,向上2M对齐", aclrtMemMallocPolicy): a kernel that stores a little past such a
copy stores into its own page, as on the device (:meth:`npusim.gm.GlobalMemory.malloc`).
"""
from __future__ import annotations

import ctypes

from npusim.device import Device

#: rtMemcpyKind_t values (asc.lib.runtime.support.MemcpyKind).
_H2D, _D2H, _D2D = 1, 2, 3
#: rtDevModuleType / info types pyasc asks about (support.DeviceModuleType/DeviceInfoType).
_MODULE_AICORE, _MODULE_VECTOR = 4, 7
_INFO_CORE_NUM, _INFO_CUBE_NUM = 3, 0x775A5A5A
#: pyasc's slack on every malloc (asc.lib.runtime.interface.malloc).
PYASC_MALLOC_SLACK = 512
#: rtMemType_t policy bits that take huge pages only (asc.lib.runtime.support.MallocPolicy:
#: RT_MEMORY_POLICY_HUGE_PAGE_ONLY, RT_MEMORY_POLICY_HUGE_PAGE_ONLY_P2P).
_HUGE_PAGE_ONLY = 0x800 | 0x4000


def _out(ptr, ctype, value) -> None:
    """Store ``value`` through the C out-parameter ``ptr`` (a ctypes void pointer)."""
    ctype.from_address(ptr.value).value = value


class _Model:
    """``state.lib.lib``: the symbols pyasc reads from the CAModel library directly."""

    def __init__(self, lib: "RuntimeLib"):
        self._lib = lib

    def __getattr__(self, name: str):
        if name == "_ZN9tm_engine7tm_timeEv":         # current_tick(): the model's clock
            lib = self._lib

            def tick():
                dev = lib.device()
                return int(dev.env.now * dev.soc.freq_hz / 1e6)
            return tick
        raise AttributeError(f"npusim's pyasc runtime has no model symbol {name}")


class RuntimeLib:
    """pyasc's runtime wrapper library on npusim devices (module doc).

    Args:
        session: the :class:`npusim.pyasc.Session` whose devices and streams it uses.
    """

    def __init__(self, session):
        self.session = session
        self.lib = _Model(self)
        self.model_log_path = None

    def call(self, fn_name: str, *args) -> None:
        impl = getattr(self, "_" + fn_name, None)
        if impl is None:
            raise RuntimeError(f"npusim.pyasc: runtime call {fn_name} is not modelled by npusim")
        impl(*args)

    def device(self, device_id: int | None = None) -> Device:
        return self.session.device(device_id)

    # -- devices ---------------------------------------------------------------------------
    def _SetDeviceWrapper(self, dev_id) -> None:
        self.session.set_device(int(dev_id.value))

    def _DeviceResetWrapper(self, dev_id) -> None:
        self.session.reset_device(int(dev_id.value))

    def _GetSocVersionWrapper(self, buf, max_len) -> None:
        name = self.session.soc_name().encode()[:int(max_len.value) - 1]
        ctypes.memmove(ctypes.cast(buf, ctypes.c_void_p).value, name + b"\0", len(name) + 1)

    def _GetDeviceCountWrapper(self, ptr) -> None:
        _out(ptr, ctypes.c_int32, self.session.device_count)

    def _GetDeviceInfoWrapper(self, dev_id, module, info, ptr) -> None:
        soc = self.device(int(dev_id.value)).soc
        module, info = int(module.value), int(info.value)
        if info == _INFO_CUBE_NUM or (module == _MODULE_AICORE and soc.is_split):
            value = soc.cube_core_cnt if soc.is_split else soc.ai_core_cnt
        elif info == _INFO_CORE_NUM:
            value = soc.vector_block_num
        else:
            raise RuntimeError(f"npusim.pyasc: device info ({module}, {info}) is not modelled")
        _out(ptr, ctypes.c_int64, value)

    def _DeviceSynchronizeWrapper(self) -> None:
        self.session.synchronize_device()

    # -- streams -----------------------------------------------------------------------------
    def _StreamCreateWrapper(self, ptr, priority) -> None:
        _out(ptr, ctypes.c_void_p, self.session.create_stream())

    def _StreamDestroyWrapper(self, handle) -> None:
        self.session.destroy_stream(handle.value if hasattr(handle, "value") else handle)

    def _StreamSynchronizeWrapper(self, handle) -> None:
        self.session.synchronize(handle)

    def _StreamSynchronizeWithTimeoutWrapper(self, handle, timeout) -> None:
        self.session.synchronize(handle)

    # -- memory ------------------------------------------------------------------------------
    def _MallocWrapper(self, ptr, size, mem_type, module_id) -> None:
        nbytes = max(int(size.value) - PYASC_MALLOC_SLACK, 1)
        flags = int(getattr(mem_type, "value", mem_type))
        _out(ptr, ctypes.c_void_p,
             self.device().gm.malloc(nbytes, huge_page=bool(flags & _HUGE_PAGE_ONLY)))

    def _FreeWrapper(self, ptr) -> None:
        self.device().gm.free(int(ptr.value))

    def _MemcpyWrapper(self, dst, dst_max, src, count, kind) -> None:
        """rtMemcpy: synchronous, so it runs on the device's default stream and waits."""
        n = int(count.value)
        kind = int(kind)
        dev = self.device()
        dst_addr, src_addr = int(dst.value or 0), int(src.value or 0)
        if kind == _H2D:
            link, apply = "H2D", lambda: dev.gm.write(dst_addr, ctypes.string_at(src_addr, n))
        elif kind == _D2H:
            link = "D2H"

            def apply():
                data = dev.gm.read(src_addr, n)
                ctypes.memmove(dst_addr, data, n)
        elif kind == _D2D:
            link = "D2D"

            def apply():
                dev.gm.write(dst_addr, dev.gm.read(src_addr, n))
        else:
            raise RuntimeError(f"npusim.pyasc: memcpy kind {kind} is not modelled")
        dev.copy_async(dev.default_stream, link, n, apply)
        errors = dev.synchronize_stream(dev.default_stream)
        if errors:
            raise errors[0]

    # -- binaries: npusim runs the @asc.jit function itself -------------------------------------
    def _not_binaries(self, *args) -> None:
        raise RuntimeError("npusim.pyasc runs @asc.jit kernels from their Python source; "
                           "registering and launching a compiled kernel binary is not modelled")

    _DevBinaryRegisterWrapper = _DevBinaryUnRegisterWrapper = _not_binaries
    _FunctionRegisterWrapper = _KernelLaunchWrapper = _not_binaries

    def _GetC2cCtrlAddrWrapper(self, addr, length) -> None:
        addr[0] = 0

    def _ProfSetProSwitchWrapper(self, data, length) -> None:
        """Profiling switches: npusim profiles every launch anyway."""


class NpuUtils:
    """``state.npu_utils``: ACL init and msprof reporting, which npusim does not need."""

    def acl_init(self):
        return 0

    def acl_finalize(self):
        return 0

    def msprof_sys_cycle_time(self):
        return 0

    def msprof_report_api(self, *args):
        return 0

    def msprof_report_compact_info(self, *args):
        return 0

    def msprof_report_additional_info(self, *args):
        return 0
