/* Kernels whose checker findings and profile spans must name this file's lines (not
 * stub_fun.h's): written against npusim's intrinsic layer alone, the intrinsics called
 * through inline helpers as the Ascend C headers call them. */
#include "stub_fun.h"
#include "npusim_runtime.cpp"

#include "core_buffers.h"

static inline void load_tile(float* ub, uint8_t* src)
{
    copy_gm_to_ubuf(ub, src, 0, 1, 256 / 32, 0, 0);                 /* MTE2 */
}

static inline void double_tile(float* dst, float* src)
{
    set_vector_mask(0, ~0ull);
    vadd(dst, src, src, 1, 1, 1, 1, 8, 8, 8);                       /* V */
}

static inline void store_tile(uint8_t* dst, float* ub)
{
    copy_ubuf_to_gm(dst, ub, 0, 1, 256 / 32, 0, 0);                 /* MTE3 */
}

/* z = 2 x on 64 floats, synchronised. */
void lines_ok(uint8_t* x, uint8_t* z)
{
    float* a = reinterpret_cast<float*>(g_mem[0]);
    load_tile(a, x);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);                        /* wait MTE2 -> V */
    double_tile(a + 64, a);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    store_tile(z, a + 64);
}

/* The same without waiting for the copy: Add reads the tile MTE2 is still writing. */
void lines_race(uint8_t* x, uint8_t* z)
{
    float* a = reinterpret_cast<float*>(g_mem[0]);
    load_tile(a, x);
    double_tile(a + 64, a);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    store_tile(z, a + 64);
}
