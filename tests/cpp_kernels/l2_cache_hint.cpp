/* Every block reads the same [rows, 256] half matrix from GM, tile [16, 64] after tile into
 * one UB buffer in the same order (the DataCopy best practice's scenario 7 in small), then
 * writes its last tile to its own 2 KiB of dst. ``bypass`` != 0: both tensors are set to
 * CACHE_MODE_DISABLE first (GlobalTensor::SetL2CacheHint), so their copies go around L2. */
#include "kernel_operator.h"

constexpr uint32_t COLS = 256;
constexpr uint32_t TILE_M = 16;
constexpr uint32_t TILE_N = 64;

__global__ __vector__ void read_shared(GM_ADDR src, GM_ADDR dst, uint32_t rows, uint32_t bypass)
{
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECIN> buf;
    pipe.InitBuffer(buf, TILE_M * TILE_N * sizeof(half));
    AscendC::LocalTensor<half> ub = buf.Get<half>();
    AscendC::GlobalTensor<half> srcGm;
    AscendC::GlobalTensor<half> dstGm;
    srcGm.SetGlobalBuffer((__gm__ half*)src, rows * COLS);
    dstGm.SetGlobalBuffer((__gm__ half*)dst + AscendC::GetBlockIdx() * TILE_M * TILE_N,
                          TILE_M * TILE_N);
    if (bypass != 0) {
        srcGm.SetL2CacheHint(AscendC::CacheMode::CACHE_MODE_DISABLE);
        dstGm.SetL2CacheHint(AscendC::CacheMode::CACHE_MODE_DISABLE);
    }
    AscendC::DataCopyExtParams in{TILE_M, TILE_N * sizeof(half), (COLS - TILE_N) * sizeof(half), 0, 0};
    AscendC::DataCopyPadExtParams<half> noPad{false, 0, 0, 0};
    for (uint32_t r = 0; r < rows; r += TILE_M) {
        for (uint32_t c = 0; c < COLS; c += TILE_N) {
            AscendC::DataCopyPad(ub, srcGm[r * COLS + c], in, noPad);
        }
    }
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::DataCopyExtParams out{1, TILE_M * TILE_N * sizeof(half), 0, 0, 0};
    AscendC::DataCopyPad(dstGm, ub, out);
}
