/* npusim's PlatformAscendC (include/npusim_platform.cpp) and tilingdata_base.h stand-in,
 * compiled with the user's tiling/platform/platform_ascendc.h and no kernel headers. */
#include "stub_fun.h"
#include "npusim_runtime.cpp"
#include "npusim_platform.cpp"
#include "register/tilingdata_base.h"

static uint8_t g_mem[7][64];
extern "C" void npusim_hw_buffers(void** bases, uint64_t* sizes)
{
    for (int i = 0; i < 7; ++i) {
        bases[i] = g_mem[i];
        sizes[i] = sizeof(g_mem[i]);
    }
}
extern "C" void npusim_reset_core_state() {}

/* out: aic, aiv, core num, UB, L1, L0C, BT, FB, workspace, SocVersion, NpuArch */
extern "C" void platform_report(const char* soc, uint64_t* out)
{
    using namespace platform_ascendc;
    PlatformAscendC* p = PlatformAscendCManager::GetInstance(soc);
    out[0] = p->GetCoreNumAic();
    out[1] = p->GetCoreNumAiv();
    out[2] = p->GetCoreNum();
    p->GetCoreMemSize(CoreMemType::UB, out[3]);
    p->GetCoreMemSize(CoreMemType::L1, out[4]);
    p->GetCoreMemSize(CoreMemType::L0_C, out[5]);
    p->GetCoreMemSize(CoreMemType::BT, out[6]);
    p->GetCoreMemSize(CoreMemType::FB, out[7]);
    out[8] = p->GetLibApiWorkSpaceSize();
    out[9] = static_cast<uint64_t>(p->GetSocVersion());
    out[10] = static_cast<uint64_t>(p->GetCurNpuArch());
}

/* A tiling structure on the host side and the plain struct of the kernel side. */
namespace optiling {
BEGIN_TILING_DATA_DEF(NpusimTestTiling)
TILING_DATA_FIELD_DEF(uint32_t, length);
TILING_DATA_FIELD_DEF(int64_t, offset);
TILING_DATA_FIELD_DEF(uint8_t, flag);
TILING_DATA_FIELD_DEF_ARR(int16_t, 3, dims);
TILING_DATA_FIELD_DEF(float, scale);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(NpusimTestOp, NpusimTestTiling)
}  // namespace optiling
#pragma pack(push, 8)
struct NpusimTestTilingKernel {
    uint32_t length = 0;
    int64_t offset = 0;
    uint8_t flag = 0;
    int16_t dims[3] = {};
    float scale = 0;
};
#pragma pack(pop)

/* 1 when the saved bytes are the kernel struct's, with the values set through set_* */
extern "C" int tiling_round_trip()
{
    optiling::NpusimTestTiling t;
    const int16_t dims[3] = {7, -8, 9};
    t.set_length(1234);
    t.set_offset(-5);
    t.set_flag(3);
    t.set_dims(dims);
    t.set_scale(0.5f);
    NpusimTestTilingKernel k;
    if (t.GetDataSize() != sizeof(k)) {
        return 0;
    }
    t.SaveToBuffer(&k, sizeof(k));
    return k.length == 1234 && k.offset == -5 && k.flag == 3 && k.dims[1] == -8 &&
           k.scale == 0.5f && t.get_length() == 1234;
}
