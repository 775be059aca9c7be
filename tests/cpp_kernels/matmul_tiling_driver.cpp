/* A host program of npusim's tests: Ascend C's own Matmul host tiling (MatmulApiTiling,
 * MultiCoreMatmulTiling of the user's headers, compiled into npusim's cached tiling library)
 * run against npusim's PlatformAscendC for one problem, its TCubeTiling returned as the
 * struct's int32 fields in declaration order. tests/test_matmul_tiling_devkit.py compares
 * them with npusim's Python tiling (npusim.ascendc.lib.matmul_tiling). */
#include <cstdint>
#include <cstring>
#include "stub_fun.h"
#include "npusim_runtime.cpp"
#include "npusim_platform.cpp"
#include "matmul/matmul_tiling.h"
#include "matmul/bmm_tiling.h"

/* the runtime's hooks for kernel buffers: a host program has none */
static uint8_t g_noBuffer[7][32];
extern "C" void npusim_hw_buffers(void** bases, uint64_t* sizes)
{
    for (int i = 0; i < 7; ++i) {
        bases[i] = g_noBuffer[i];
        sizes[i] = sizeof(g_noBuffer[i]);
    }
}
extern "C" void npusim_reset_core_state() {}

/* One problem. p: [multiCore (0: MatmulApiTiling), dim, A/B DataType, C DataType,
 * bias DataType, transA, transB, bias, M, N, K, traverse (MatrixTraverse; 0 leaves it),
 * singleM, singleN (SetSingleShape, -1: unset), L1 size (SetBufferSpace, -1: unset),
 * SetShape (1: SetShape(M, N, K) after SetOrgShape, as the samples do; 0: SetOrgShape only),
 * baseM, baseN, baseK (SetFixSplit when any is > 0; -1 leaves that one to the search)].
 * out: the TCubeTiling fields (at most outLen); cores: GetCoreNum's dim, mDim, nDim.
 * Returns GetTiling's result (0 or -1), or -2 when out is too short. */
extern "C" int64_t npusim_matmul_tiling(const char* soc, const int32_t* p, int32_t* out,
                                        int32_t outLen, int32_t* cores)
{
    using namespace matmul_tiling;
    npusim::g_platformSoc = soc;          /* every query below answers for this SoC */
    auto* platform = platform_ascendc::PlatformAscendCManager::GetInstance(soc);
    MatmulApiTiling one(*platform);
    MultiCoreMatmulTiling multi(*platform);
    MatmulApiTilingBase& t = p[0] ? static_cast<MatmulApiTilingBase&>(multi) : one;
    if (p[0]) {
        multi.SetDim(p[1]);
    }
    const auto ab = static_cast<DataType>(p[2]);
    t.SetAType(TPosition::GM, CubeFormat::ND, ab, p[5] != 0);
    t.SetBType(TPosition::GM, CubeFormat::ND, ab, p[6] != 0);
    t.SetCType(TPosition::GM, CubeFormat::ND, static_cast<DataType>(p[3]));
    t.SetBiasType(TPosition::GM, CubeFormat::ND, static_cast<DataType>(p[4]));
    t.SetOrgShape(p[8], p[9], p[10]);
    if (p[15] != 0) {
        t.SetShape(p[8], p[9], p[10]);
    }
    t.SetBias(p[7] != 0);
    if (p[11] != 0) {
        t.SetTraverse(static_cast<MatrixTraverse>(p[11]));
    }
    if (p[0] && (p[12] > 0 || p[13] > 0)) {
        multi.SetSingleShape(p[12], p[13], -1);
    }
    if (p[14] > 0) {
        t.SetBufferSpace(p[14], -1, -1, -1);
    }
    if (p[16] > 0 || p[17] > 0 || p[18] > 0) {
        t.SetFixSplit(p[16], p[17], p[18]);
    }
    optiling::TCubeTiling tiling;
    const int64_t ret = t.GetTiling(tiling);
    const size_t size = tiling.GetDataSize();
    if (size > static_cast<size_t>(outLen) * sizeof(int32_t)) {
        return -2;
    }
    std::memset(out, 0, static_cast<size_t>(outLen) * sizeof(int32_t));
    tiling.SaveToBuffer(out, size);
    cores[0] = cores[1] = cores[2] = 0;
    if (p[0] && ret == 0) {
        multi.GetCoreNum(cores[0], cores[1], cores[2]);
    }
    return ret;
}
