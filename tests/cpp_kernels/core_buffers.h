/* The core memories a test kernel built against npusim's intrinsic layer alone provides
 * (the Ascend C headers' CPU mode would): UB, L1, L0A, L0B, L0C, BT and FB, in the order
 * npusim_hw_buffers reports them, as this file's own buffers. A kernel that needs the full
 * L1 defines TEST_L1_BYTES before including this. */
#ifndef TEST_L1_BYTES
#define TEST_L1_BYTES (1 << 18)
#endif

alignas(4096) static uint8_t g_mem[7][TEST_L1_BYTES];
static const uint64_t g_size[7] = {196608, TEST_L1_BYTES, 65536, 65536, 131072, 1024, 2048};

extern "C" void npusim_hw_buffers(void** bases, uint64_t* sizes)
{
    for (int i = 0; i < 7; ++i) {
        bases[i] = g_mem[i];
        sizes[i] = g_size[i];
    }
}
extern "C" void npusim_reset_core_state() {}
