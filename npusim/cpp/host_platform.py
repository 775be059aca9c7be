"""PlatformAscendC's answers (npusim/cpp/include/npusim_platform.cpp): the host tiling API's
view of a SoC, from npusim's SoC preset (:mod:`npusim.soc`).

The C++ side asks ``__npusim_platform__(key, soc_name)``: ``soc_name`` is what the program
passed to ``PlatformAscendCManager::GetInstance`` (empty: the simulated device's own SoC).
Keys are the preset's fields (``ai_core_cnt``, ``l1_size``...), plus ``aic_cnt`` / ``aiv_cnt``
(the cube and vector cores of a split SoC, the AI cores of a coupled one: PlatformAscendC's
GetCoreNumAic/Aiv), ``npu_arch`` (2201...), ``soc_version_enum`` (PlatformAscendC's
SocVersion: Ascend910B and Ascend910_93 are ASCEND910B), ``vector_reg_width`` (bits).
"""
from __future__ import annotations

import ctypes

from npusim.cpp.dispatch import HANDLERS, KernelError
from npusim.soc import get_soc

#: PlatformAscendC's SocVersion numbering (tiling/platform/platform_ascendc.h) by the
#: preset's short SoC version (impl/utils/tiling/platform/platform_ascendc.cpp's map).
SOC_VERSION_ENUM = {"Ascend910": 0, "Ascend910B": 1, "Ascend910_93": 1, "Ascend310P": 2,
                    "Ascend310B": 3, "Ascend950": 4}
RESERVED_VERSION = 99999
#: The vector register width of the A2/A3 and earlier vector units, bits (256 B).
VECTOR_REG_BITS = 2048


def platform_value(soc, key: str) -> int:
    """The integer PlatformAscendC reports for ``key`` on ``soc`` (module docstring).

    Raises:
        KernelError: a key the preset has no value for.
    """
    split = soc.cube_vector_combine == "split"
    if key == "aic_cnt":
        return soc.cube_core_cnt if split else soc.ai_core_cnt
    if key == "aiv_cnt":
        return soc.vector_core_cnt if split else soc.ai_core_cnt
    if key == "npu_arch":
        return int(soc.npu_arch)
    if key == "soc_version_enum":
        return SOC_VERSION_ENUM.get(soc.short_soc_version, RESERVED_VERSION)
    if key == "vector_reg_width":
        return VECTOR_REG_BITS
    value = getattr(soc, key, None)
    if value is None:
        raise KernelError("PlatformAscendC", f"the {soc.soc_version} preset has no {key!r}")
    return int(value)


def _platform(rt, key_p, soc_p):
    name = ctypes.string_at(int(soc_p)).decode()
    if name:
        soc = get_soc(name)
    elif rt.host is not None:
        soc = rt.host.soc
    elif rt.ctx is not None:
        soc = rt.ctx.soc
    else:
        raise KernelError("PlatformAscendC", "GetInstance() without a SoC name outside "
                          "npusim.cpp.run_host: name the SoC")
    return platform_value(soc, ctypes.string_at(int(key_p)).decode())


HANDLERS["__npusim_platform__"] = _platform
