/* Cores that wait for each other, written against npusim's intrinsic layer alone: a MIX
 * kernel whose AIC hands data to its two AIVs through GM and cross-core flags, and a
 * two-block vector kernel whose block 0 polls a GM flag block 1 sets. Each core keeps
 * state across its wait in a C++ global and in the UB, at the same UB offsets as the other
 * cores: the results are right only if every core has its own. */
#include "stub_fun.h"
#include "npusim_runtime.cpp"

#include "core_buffers.h"

static int64_t g_part = -1;     /* per-core state held across the wait */

static uint64_t ffts_msg(uint64_t mode, uint64_t flag) { return 1 + (mode << 4) + (flag << 8); }

/* 64 floats per AIV: y[part] = x[part] + 2 * x[part], the doubled half computed by the AIC. */
void mix_handoff(uint8_t* x, uint8_t* ws, uint8_t* y)
{
    const int n = 64;
    if (g_coreType == 1) {                                   /* AIC */
        wait_flag_dev(4);                                    /* both AIVs have loaded x */
        const float* xs = reinterpret_cast<const float*>(x);
        float* w = reinterpret_cast<float*>(ws);
        for (int i = 0; i < 2 * n; ++i) {
            w[i] = 2.0f * xs[i];
        }
        ffts_cross_core_sync(PIPE_FIX, ffts_msg(2, 3));      /* release both AIVs */
        return;
    }
    g_part = sub_block_idx;
    float* mine = reinterpret_cast<float*>(g_mem[0]);        /* UB offset 0 on both AIVs */
    float* got = reinterpret_cast<float*>(g_mem[0] + 4096);
    copy_gm_to_ubuf(mine, x + g_part * n * 4, 0, 1, n * 4 / 32, 0, 0);
    ffts_cross_core_sync(PIPE_MTE3, ffts_msg(2, 4));         /* tell the AIC */
    wait_flag_dev(3);                                        /* the AIC's half is in ws */
    copy_gm_to_ubuf(got, ws + g_part * n * 4, 0, 1, n * 4 / 32, 0, 0);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    set_vector_mask(static_cast<uint64_t>(-1), static_cast<uint64_t>(-1));
    vadd(mine, mine, got, 1, 1, 1, 1, 8, 8, 8);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    copy_ubuf_to_gm(y + g_part * n * 4, mine, 0, 1, n * 4 / 32, 0, 0);
}

/* Two blocks of 64 floats: block 1 writes y[1] = x[1] + 1, then sets flag[0] = 1; block 0
 * loads x[0], waits for the flag (giving up after 2000 reads: y[0] = -1), then writes
 * y[0] = x[0] + y[1]. */
void block_chain(uint8_t* x, uint8_t* flag, uint8_t* y)
{
    const int n = 64;
    g_part = block_idx;
    float* mine = reinterpret_cast<float*>(g_mem[0]);        /* UB offset 0 on both blocks */
    int32_t* f = reinterpret_cast<int32_t*>(g_mem[0] + 8192);
    float* other = reinterpret_cast<float*>(g_mem[0] + 4096);
    set_vector_mask(static_cast<uint64_t>(-1), static_cast<uint64_t>(-1));
    copy_gm_to_ubuf(mine, x + g_part * n * 4, 0, 1, n * 4 / 32, 0, 0);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    if (g_part == 1) {
        vadds(mine, mine, 1.0f, 1, 1, 1, 8, 8);
        set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
        wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
        copy_ubuf_to_gm(y + n * 4, mine, 0, 1, n * 4 / 32, 0, 0);
        for (int i = 0; i < 8; ++i) {
            f[i] = 1;
        }
        set_flag(PIPE_S, PIPE_MTE3, EVENT_ID0);
        wait_flag(PIPE_S, PIPE_MTE3, EVENT_ID0);
        copy_ubuf_to_gm(flag, f, 0, 1, 1, 0, 0);             /* after y[1] (one MTE3 queue) */
        return;
    }
    bool seen = false;
    for (int tries = 0; tries < 2000 && !seen; ++tries) {
        copy_gm_to_ubuf(f, flag, 0, 1, 1, 0, 0);
        set_flag(PIPE_MTE2, PIPE_S, EVENT_ID0);
        wait_flag(PIPE_MTE2, PIPE_S, EVENT_ID0);
        seen = f[0] == 1;
    }
    if (!seen) {
        mine[0] = -1.0f;
        set_flag(PIPE_S, PIPE_MTE3, EVENT_ID0);
        wait_flag(PIPE_S, PIPE_MTE3, EVENT_ID0);
    } else {
        copy_gm_to_ubuf(other, y + n * 4, 0, 1, n * 4 / 32, 0, 0);
        set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
        wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
        vadd(mine, mine, other, 1, 1, 1, 1, 8, 8, 8);
        set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
        wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    }
    copy_ubuf_to_gm(y, mine, 0, 1, n * 4 / 32, 0, 0);
}
