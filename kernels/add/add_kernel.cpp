/* Device code of aclnnAdd's elementwise kernel in Ascend C (C++), beside the Python kernel
 * (kernel.py: KernelAdd). The same algorithm and the same tiling: block b < blockDim - 1
 * takes elements [b * blockFactor, (b + 1) * blockFactor), the last block tailBlockFactor;
 * each block walks UB tiles of ubFactor elements with double-buffered VECIN/VECOUT queues:
 *
 *     CopyIn:  x, y tile GM -> UB (DataCopy; DataCopyPad for a tile that is not 32 B whole)
 *     Compute: [Muls(y, y, alpha)], Add(z, x, y)
 *     CopyOut: z tile UB -> GM
 *
 * It covers the recipes without conversions (npusim.kernels.add.cpp.covers): self, other,
 * out and the arithmetic all FLOAT, FLOAT16, INT32 or INT16; the others (casts, the 8-bit
 * wrap, the bf16 product) run the Python kernel. Built by npusim.cpp against the user's
 * Ascend C headers; aclnnAdd launches it when asked (docs/cpp.md, "Our operators in C++"). */
#include "kernel_operator.h"

/* The tiling the host hands the kernel (npusim.kernels.add.cpp.tiling_bytes packs it from
 * npusim.kernels.add.tiling.AddTilingData): counts in elements, the dtype as aclDataType. */
struct AddTilingData {
    uint32_t totalLength;
    uint32_t blockFactor;
    uint32_t tailBlockFactor;
    uint32_t ubFactor;
    uint32_t blockDim;
    int32_t dataType;      /* ACL_FLOAT 0, ACL_FLOAT16 1, ACL_INT32 3, ACL_INT16 6 */
    uint32_t hasAlpha;     /* 0: alpha == 1, no Muls */
    uint32_t alphaBits;    /* alpha in the compute dtype: its bytes, from the lowest */
};

constexpr int32_t BUFFER_NUM = 2;
constexpr uint32_t BLOCK_BYTES = 32;

template <typename T>
class KernelAdd {
public:
    __aicore__ inline KernelAdd() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const AddTilingData& t)
    {
        tiling = t;
        const uint32_t blockIdx = AscendC::GetBlockIdx();
        const uint64_t offset = static_cast<uint64_t>(blockIdx) * t.blockFactor;
        blockLength = blockIdx < t.blockDim - 1 ? t.blockFactor : t.tailBlockFactor;
        xGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x) + offset, blockLength);
        yGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(y) + offset, blockLength);
        zGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(z) + offset, blockLength);
        pipe.InitBuffer(inQueueX, BUFFER_NUM, t.ubFactor * sizeof(T));
        pipe.InitBuffer(inQueueY, BUFFER_NUM, t.ubFactor * sizeof(T));
        pipe.InitBuffer(outQueueZ, BUFFER_NUM, t.ubFactor * sizeof(T));
        if (t.hasAlpha) {
            uint32_t bits = t.alphaBits;
            std::memcpy(&alpha, &bits, sizeof(T));
        }
    }

    __aicore__ inline void Process()
    {
        const uint32_t n = tiling.ubFactor;
        const uint32_t loops = (blockLength + n - 1) / n;
        for (uint32_t i = 0; i < loops; ++i) {
            const uint32_t count = blockLength - i * n < n ? blockLength - i * n : n;
            CopyIn(i * n, count);
            Compute(count);
            CopyOut(i * n, count);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t offset, uint32_t count)
    {
        AscendC::LocalTensor<T> xLocal = inQueueX.AllocTensor<T>();
        AscendC::LocalTensor<T> yLocal = inQueueY.AllocTensor<T>();
        TileIn(xLocal, xGm[offset], count);
        TileIn(yLocal, yGm[offset], count);
        inQueueX.EnQue(xLocal);
        inQueueY.EnQue(yLocal);
    }

    __aicore__ inline void Compute(uint32_t count)
    {
        AscendC::LocalTensor<T> xLocal = inQueueX.DeQue<T>();
        AscendC::LocalTensor<T> yLocal = inQueueY.DeQue<T>();
        AscendC::LocalTensor<T> zLocal = outQueueZ.AllocTensor<T>();
        if (tiling.hasAlpha) {
            AscendC::Muls(yLocal, yLocal, alpha, count);          /* alpha * other, rounded to T */
        }
        AscendC::Add(zLocal, xLocal, yLocal, count);
        outQueueZ.EnQue<T>(zLocal);
        inQueueX.FreeTensor(xLocal);
        inQueueY.FreeTensor(yLocal);
    }

    __aicore__ inline void CopyOut(uint32_t offset, uint32_t count)
    {
        AscendC::LocalTensor<T> zLocal = outQueueZ.DeQue<T>();
        const uint32_t nbytes = count * sizeof(T);
        if (nbytes % BLOCK_BYTES == 0) {
            AscendC::DataCopy(zGm[offset], zLocal, count);
        } else {                                                  /* the exact bytes */
            AscendC::DataCopyPad(zGm[offset], zLocal, AscendC::DataCopyExtParams{1, nbytes, 0, 0, 0});
        }
        outQueueZ.FreeTensor(zLocal);
    }

    /* GM -> UB: DataCopy for whole 32 B blocks, DataCopyPad for a ragged tail. */
    __aicore__ inline void TileIn(const AscendC::LocalTensor<T>& local, const AscendC::GlobalTensor<T>& gm,
                                  uint32_t count)
    {
        const uint32_t nbytes = count * sizeof(T);
        if (nbytes % BLOCK_BYTES == 0) {
            AscendC::DataCopy(local, gm, count);
        } else {
            AscendC::DataCopyPad(local, gm, AscendC::DataCopyExtParams{1, nbytes, 0, 0, 0},
                                 AscendC::DataCopyPadExtParams<T>{false, 0, 0, 0});
        }
    }

    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, BUFFER_NUM> inQueueX;
    AscendC::TQue<AscendC::TPosition::VECIN, BUFFER_NUM> inQueueY;
    AscendC::TQue<AscendC::TPosition::VECOUT, BUFFER_NUM> outQueueZ;
    AscendC::GlobalTensor<T> xGm;
    AscendC::GlobalTensor<T> yGm;
    AscendC::GlobalTensor<T> zGm;
    AddTilingData tiling;
    uint32_t blockLength = 0;
    T alpha{};
};

template <typename T>
__aicore__ inline void RunAdd(GM_ADDR x, GM_ADDR y, GM_ADDR z, const AddTilingData& t)
{
    KernelAdd<T> op;
    op.Init(x, y, z, t);
    op.Process();
}

/* The kernel entry, with aclnnAdd's parameters (x1, x2, y, workspace, tiling). */
__global__ __aicore__ void add_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling)
{
    (void)workspace;
    AddTilingData t;
    std::memcpy(&t, reinterpret_cast<const void*>(tiling), sizeof(t));
    switch (t.dataType) {
        case 0: RunAdd<float>(x, y, z, t); break;
        case 1: RunAdd<half>(x, y, z, t); break;
        case 3: RunAdd<int32_t>(x, y, z, t); break;
        case 6: RunAdd<int16_t>(x, y, z, t); break;
        default: break;
    }
}
