/* A cube kernel written against npusim's intrinsic layer alone (no Ascend C headers): the
 * CCE intrinsics of the basic-API matmul path, called as the dav-c220 headers call them.
 * C (M x N, float, ND) = A x B + A x B (half, ND): nd2nz GM -> L1, Load2D L1 -> L0A / L0B
 * (B transposed per fractal into the ZN layout; A also by Load3Dv2), two mads (the second accumulates), and the
 * NZ -> ND Fixpipe out of L0C. Core memories are this file's own buffers. */
#include "stub_fun.h"
#include "npusim_runtime.cpp"

constexpr uint32_t M = 32, K = 48, N = 32;
#define TEST_L1_BYTES (1 << 19)
#include "core_buffers.h"

template <bool LOAD3D> void CubeMatmul(uint8_t* a, uint8_t* b, uint8_t* c)
{
    half* a1 = reinterpret_cast<half*>(g_mem[1]);
    half* b1 = reinterpret_cast<half*>(g_mem[1] + M * K * 2);
    half* a2 = reinterpret_cast<half*>(g_mem[2]);
    half* b2 = reinterpret_cast<half*>(g_mem[3]);
    float* c0 = reinterpret_cast<float*>(g_mem[4]);
    /* ND -> NZ: A's rows (M) in 16 x 16 fractals, column block after column block */
    copy_gm_to_cbuf_multi_nd2nz_b16(a1, reinterpret_cast<half*>(a), 0, 1, M, K, 0, K, M, 1, 0);
    copy_gm_to_cbuf_multi_nd2nz_b16(b1, reinterpret_cast<half*>(b), 0, 1, K, N, 0, N, K, 1, 0);
    set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
    if constexpr (LOAD3D) {
        /* A's NZ layout read as a feature map of K channels, M x 1 positions, 1 x 1 filter
         * (FMATRIX: l1W 1, l1H M, no padding), as the Matmul API loads A */
        set_fmatrix((uint64_t)1 | ((uint64_t)M << 16));
        set_padding((uint64_t)0);
        img2colv2_cbuf_to_ca(a2, a1, (uint16_t)K, (uint16_t)M, (uint16_t)0, (uint16_t)0,
                             (uint8_t)1, (uint8_t)1, (uint8_t)1, (uint8_t)1, (uint8_t)1,
                             (uint8_t)1, false, false, false, false, (uint16_t)K);
    } else {
        for (uint32_t i = 0; i < M / 16; ++i) {    /* A: row of fractals i, K / 16 of them */
            load_cbuf_to_ca(a2 + i * K * 16, a1 + i * 256, (uint16_t)0, (uint8_t)(K / 16),
                            (uint16_t)(M / 16), (uint16_t)0, (uint8_t)0, false, inc);
        }
    }
    for (uint32_t kb = 0; kb < K / 16; ++kb) { /* B: fractal row kb, each fractal transposed */
        load_cbuf_to_cb(b2 + kb * N * 16, b1 + kb * 256, (uint16_t)0, (uint8_t)(N / 16),
                        (uint16_t)(K / 16), (uint16_t)0, (uint8_t)0, true, inc);
    }
    set_flag(PIPE_MTE1, PIPE_M, EVENT_ID0);
    wait_flag(PIPE_MTE1, PIPE_M, EVENT_ID0);
    mad(c0, a2, b2, (uint16_t)M, (uint16_t)K, (uint16_t)N, (uint8_t)0, false, false, true);
    pipe_barrier(PIPE_M);
    mad(c0, a2, b2, (uint16_t)M, (uint16_t)K, (uint16_t)N, (uint8_t)0, false, false, false);
    set_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
    wait_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
    set_nd_para((uint64_t)1);                   /* one ND matrix */
    copy_matrix_cc_to_gm(reinterpret_cast<float*>(c), c0, (uint8_t)0, (uint16_t)N, (uint16_t)M,
                         (uint32_t)N, (uint16_t)M, (uint8_t)0, NoQuant, (uint8_t)0, false, true);
}

void cube_matmul(uint8_t* a, uint8_t* b, uint8_t* c) { CubeMatmul<false>(a, b, c); }
/* the same with A loaded by Load3Dv2 (img2colv2) */
void cube_matmul_load3d(uint8_t* a, uint8_t* b, uint8_t* c) { CubeMatmul<true>(a, b, c); }
