/* Vector intrinsics written against npusim's intrinsic layer alone: the 4-way merge sort
 * (MrgSort) as the dav-c220 headers issue it, on this file's own UB buffer. */
#include "stub_fun.h"
#include "npusim_runtime.cpp"

#include "core_buffers.h"

/* Two queues of 16 (score, index) structures (float + uint32), each sorted descending, at
 * GM src; merged into dst (32 structures); sorted[0..1]: the counts VMS4_SR reports. */
void merge_two(uint8_t* src, uint8_t* dst, uint8_t* sorted)
{
    float* q = reinterpret_cast<float*>(g_mem[0]);
    float* out = reinterpret_cast<float*>(g_mem[0] + 4096);
    copy_gm_to_ubuf(q, src, 0, 1, 256 / 32, 0, 0);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    float* queues[4] = {q, q + 32, nullptr, nullptr};
    const uint64_t lengths = 16ull | (16ull << 16);
    const uint64_t config = 1ull | (0x3ull << 8);       /* repeat 1, two queues */
    vmrgsort4(out, queues, lengths, config);
    const int64_t sr = get_vms4_sr();
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    copy_ubuf_to_gm(dst, out, 0, 1, 256 / 32, 0, 0);
    reinterpret_cast<int64_t*>(sorted)[0] = sr;
}

/* SetAtomicAdd<half> as the dav-c220 headers issue it: the mode (set_atomic_add) first, the
 * type (set_atomic_f16) after it; 128 halves at src are added into dst. */
void atomic_add_half(uint8_t* src, uint8_t* dst)
{
    half* x = reinterpret_cast<half*>(g_mem[0]);
    copy_gm_to_ubuf(x, src, 0, 1, 256 / 32, 0, 0);
    set_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID0);
    set_atomic_add();
    set_atomic_f16();
    copy_ubuf_to_gm(dst, x, 0, 1, 256 / 32, 0, 0);
    set_atomic_none();
}

/* TransDataTo5HD's register form as the dav-c220 headers issue it: the 16 dst block
 * addresses in VA0/VA1, the 16 src ones in VA2/VA3 (set_va_reg_sb), then
 * scatter_vnchwconv_b16(VA0, VA2, repeat 1, strides 0): a 16 x 16 transpose of 2-byte
 * elements whose src blocks are 64 B apart and dst blocks 32 B apart. */
void trans_5hd_b16(uint8_t* src, uint8_t* dst)
{
    uint8_t* ub = g_mem[0];
    copy_gm_to_ubuf(ub, src, 0, 1, 1024 / 32, 0, 0);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    uint64_t d[16], s[16];
    for (int i = 0; i < 16; ++i) {
        s[i] = reinterpret_cast<uint64_t>(ub + 64 * i);
        d[i] = reinterpret_cast<uint64_t>(ub + 4096 + 32 * i);
    }
    set_va_reg_sb(VA0, d);
    set_va_reg_sb(VA1, d + 8);
    set_va_reg_sb(VA2, s);
    set_va_reg_sb(VA3, s + 8);
    scatter_vnchwconv_b16(VA0, VA2, 1, 0, 0);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    copy_ubuf_to_gm(dst, ub + 4096, 0, 1, 512 / 32, 0, 0);
}
