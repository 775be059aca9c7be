/* npusim's stand-in for CANN's "platform/soc_spec.h" (part of the closed platform library),
 * which the Ascend C host tiling headers (tiling/platform/platform_ascendc.h) include for the
 * NPU architecture enumeration. The values are the architecture numbers (__NPU_ARCH__) the
 * tiling sources compare against; PlatformAscendC::GetCurNpuArch returns the SoC preset's. */
#ifndef NPUSIM_PLATFORM_SOC_SPEC_H
#define NPUSIM_PLATFORM_SOC_SPEC_H
#include <cstdint>

enum class NpuArch : uint32_t {
    DAV_RESV = 0,
    DAV_2002 = 2002,
    DAV_2201 = 2201,
    DAV_3003 = 3003,
    DAV_3113 = 3113,
    DAV_3510 = 3510,
    DAV_5102 = 5102,
};
#endif
