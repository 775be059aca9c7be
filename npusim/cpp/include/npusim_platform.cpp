/* npusim's PlatformAscendC (tiling/platform/platform_ascendc.h): the host tiling API's view
 * of the SoC, answered from npusim's SoC preset instead of CANN's closed platform library.
 * Each query goes to npusim (the "__npusim_platform__" entry of npusim/cpp/dispatch.py) with
 * the SoC name the program asked for (PlatformAscendCManager::GetInstance(name)), or none for
 * the simulated device's own. Rules from the public PlatformAscendC pages and asc-devkit's
 * impl/utils/tiling/platform/platform_ascendc.cpp: on Ascend910B UB and L1 sizes leave 256 B
 * for the Matmul API's messages; the library workspace is 16 MiB on dav-2201 and 3510, 2 MiB
 * elsewhere; a MIX launch of ration r needs ceil(slices / r) blocks. Compiled into a kernel
 * library whose source includes the tiling headers (npusim/cpp/builder.py). */
#include <map>
#include <mutex>
#include <string>
#include "tiling/platform/platform_ascendc.h"

namespace npusim {
static std::string g_platformSoc;

static uint64_t PlatformQuery(const char* key)
{
    const Arg v[3] = {pack(key), pack(g_platformSoc.c_str()), Arg{}};
    return npusim_intrinsic("__npusim_platform__", 2, v);
}
}  // namespace npusim

namespace platform_ascendc {
PlatformAscendC* PlatformAscendCManager::platformInfo = nullptr;
std::mutex PlatformAscendCManager::platformInitMtx;

PlatformAscendC* PlatformAscendCManager::PlatformAscendCManagerInit(const char* customSocVersion)
{
    npusim::g_platformSoc = customSocVersion ? customSocVersion : "";
    static PlatformAscendC platform(nullptr);
    platformInfo = &platform;
    return platformInfo;
}

uint32_t PlatformAscendC::GetCoreNum(void) const
{
    return static_cast<uint32_t>(npusim::PlatformQuery("ai_core_cnt"));
}
uint32_t PlatformAscendC::GetCoreNumAic(void) const
{
    return static_cast<uint32_t>(npusim::PlatformQuery("aic_cnt"));
}
uint32_t PlatformAscendC::GetCoreNumAiv(void) const
{
    return static_cast<uint32_t>(npusim::PlatformQuery("aiv_cnt"));
}
uint32_t PlatformAscendC::GetCoreNumVector(void) const
{
    /* the vector cores beside the AI cores of a coupled SoC (Ascend310P); 0 elsewhere */
    return GetSocVersion() == SocVersion::ASCEND310P ?
        static_cast<uint32_t>(npusim::PlatformQuery("vector_core_cnt")) : 0;
}
uint32_t PlatformAscendC::CalcTschNumBlocks(uint32_t sliceNum, uint32_t aicCoreNum,
                                            uint32_t aivCoreNum) const
{
    if (aicCoreNum == 0 || aivCoreNum == 0 || aicCoreNum > aivCoreNum) {
        return sliceNum;
    }
    const uint32_t ration = aivCoreNum / aicCoreNum;
    const uint32_t blocks = (sliceNum + ration - 1) / ration;
    return (ration == 2 && blocks > aicCoreNum) ? 0 : blocks;
}
uint32_t PlatformAscendC::CalcTschBlockDim(uint32_t sliceNum, uint32_t aicCoreNum,
                                           uint32_t aivCoreNum) const
{
    return CalcTschNumBlocks(sliceNum, aicCoreNum, aivCoreNum);
}
uint32_t PlatformAscendC::GetLibApiWorkSpaceSize(void) const
{
    const NpuArch arch = GetCurNpuArch();
    return (arch == NpuArch::DAV_2201 || arch == NpuArch::DAV_3510) ? 16u << 20 : 2u << 20;
}
uint32_t PlatformAscendC::GetResCubeGroupWorkSpaceSize(void) const
{
    return GetSocVersion() == SocVersion::ASCEND910B ? 1u << 20 : static_cast<uint32_t>(-1);
}
uint32_t PlatformAscendC::GetResGroupBarrierWorkSpaceSize(void) const
{
    return GetSocVersion() == SocVersion::ASCEND910B ? 1u << 20 : static_cast<uint32_t>(-1);
}
void PlatformAscendC::GetCoreMemSize(const CoreMemType& memType, uint64_t& size) const
{
    static const char* const keys[] = {"l0_a_size", "l0_b_size", "l0_c_size", "l1_size",
                                       "l2_size", "ub_size", "memory_size", "fb0_size",
                                       "bt_size"};
    const auto i = static_cast<uint32_t>(memType);
    size = i < 9 ? npusim::PlatformQuery(keys[i]) : 0;
    if ((memType == CoreMemType::UB || memType == CoreMemType::L1) &&
        GetSocVersion() == SocVersion::ASCEND910B) {
        size -= 256;
    }
    if (memType == CoreMemType::UB) {
        size -= reservedMemSize_;
    }
}
void PlatformAscendC::GetCoreMemBw(const CoreMemType& memType, uint64_t& bwSize) const
{
    bwSize = memType == CoreMemType::L2 ? npusim::PlatformQuery("l2_rate") :
             memType == CoreMemType::HBM ? npusim::PlatformQuery("ddr_rate") : 0;
}
void PlatformAscendC::ReserveLocalMemory(ReservedSize size)
{
    reservedMemSize_ = size == ReservedSize::RESERVED_SIZE_8K ? 8 * 1024 :
                       size == ReservedSize::RESERVED_SIZE_16K ? 16 * 1024 : 32 * 1024;
}
SocVersion PlatformAscendC::GetSocVersion(void) const
{
    return static_cast<SocVersion>(npusim::PlatformQuery("soc_version_enum"));
}
NpuArch PlatformAscendC::GetCurNpuArch(void) const
{
    return static_cast<NpuArch>(npusim::PlatformQuery("npu_arch"));
}
uint32_t PlatformAscendC::GetVecRegLen(void) const
{
    return static_cast<uint32_t>(npusim::PlatformQuery("vector_reg_width"));
}
}  // namespace platform_ascendc
