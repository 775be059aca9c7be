/* npusim's stand-in for the CPU-debug "stub_def.h" that Ascend C headers include when built with
 * ASCENDC_CPU_DEBUG=1: keywords, address-space qualifiers, pipe and event enums, scalar types.
 * Written for npusim from the call sites in the Ascend C headers; every keyword that only steers
 * the device compiler expands to nothing here (host build). */
#ifndef NPUSIM_STUB_DEF_H
#define NPUSIM_STUB_DEF_H
#include <cstdint>
#include <cstddef>
#include <cassert>
#include <cstring>
#include <vector>
#include <iostream>
#include <string>
#include "kernel_fp16.h"
#include "kernel_bf16.h"

/* Function and address-space qualifiers: nothing on the host. */
#define __aicore__
#define __host_aicore__
#define __global__ __attribute__((visibility("default")))
#define __vector__
#define __cube__
#define __mix__(c, v)
#define __gm__
#define __ubuf__
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __fbuf__
#define __ssbuf__
#define __BLOCK_LOCAL__
#define __WORKGROUP_LOCAL__
#define __inout_pipe__(...)
#define __in_pipe__(...)
#define __out_pipe__(...)
#define __simd_callee__
#define __simt_callee__
#define __kfc_workspace__
#define __simd_vf__
#define __host__
#define __check_sync_alias__
#define __sync_alias__
#define __sync_noalias__
#define __sync_in__
#define __sync_out__
#define __disable_kernel_type_autoinfer__
#ifndef ASCENDC_HOST_AICORE
#define ASCENDC_HOST_AICORE
#endif
#ifndef ASCENDC_HOST
#define ASCENDC_HOST
#endif
#ifndef ASCENDC_AICORE
#define ASCENDC_AICORE
#endif

/* Pipes, in the CCE numbering (PIPE_S .. PIPE_FIX). */
enum pipe_t : uint8_t {
    PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL,
    PIPE_MTE4, PIPE_MTE5, PIPE_V2, PIPE_FIX, VIRTUAL_PIPE_MTE2_L1A, VIRTUAL_PIPE_MTE2_L1B, PIPE_NUM
};
enum event_t : uint8_t {
    EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7
};
enum mem_t : uint8_t { L1 = 0, L0A, L0B, L0C, UB, BT };
enum class cache_line_t : uint8_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class dcci_dst_t : uint8_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
enum addr_cal_mode_t : uint8_t { inc = 0, dec = 1 };
enum pad_t : uint8_t { PAD_NONE = 0, PAD_MODE1, PAD_MODE2, PAD_MODE3, PAD_MODE4, PAD_MODE5, PAD_MODE6, PAD_MODE7, PAD_MODE8 };
enum vpart_t : uint8_t { L128 = 0, H128 = 1 };
enum atomic_type_t : uint8_t { ATOMIC_F32 = 0, ATOMIC_F16, ATOMIC_S16, ATOMIC_S32, ATOMIC_S8, ATOMIC_BF16 };
enum atomic_op_t : uint8_t { ATOMIC_SUM = 0, ATOMIC_MAX, ATOMIC_MIN };
enum QuantMode_t : uint8_t {
    NoQuant = 0, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8,
    DEQS322F16_PRE, VDEQS322F16_PRE
};
enum ub_addr8_t : uint8_t { VA0 = 0, VA1, VA2, VA3, VA4, VA5, VA6, VA7 };

/* 8- and 4-bit float storage types (named by the headers; no arithmetic on them is modelled). */
struct fp8_e4m3fn_t { uint8_t v; };
struct fp8_e5m2_t { uint8_t v; };
struct fp8_e8m0_t { uint8_t v; };
struct fp4x2_e2m1_t { uint8_t v; };
struct fp4x2_e1m2_t { uint8_t v; };
struct hifloat8_t { uint8_t v; };

enum class Order_t : uint8_t { VALUE_INDEX = 0, INDEX_VALUE, ONLY_VALUE, ONLY_INDEX };
enum mem_dsb_t : uint8_t { DSB_ALL = 0, DSB_DDR, DSB_UB, DSB_SEQ };
/* Register types of the newer architectures' register-level API, named by common headers. */
struct vector_align { uint64_t v[4]; };
struct vector_bool { uint64_t v[4]; };
struct vector_address { uint64_t v; };
namespace AscendC {
constexpr int32_t AIC_TYPE = 1;   /* g_coreType values, as AscendC::AIC / AIV */
constexpr int32_t AIV_TYPE = 2;
}
extern uint64_t g_fixpipeNdNzParam;

/* Per-core globals the headers read (defined by npusim's runtime, set for each block). */
extern int64_t block_idx;
extern int64_t block_num;
extern int64_t sub_block_idx;
extern int32_t g_coreType;
extern int64_t g_taskRation;

#endif
