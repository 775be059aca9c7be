/* npusim's stand-in for the pyACL/acl runtime header of an Ascend C sample's host program:
 * the calls forward to npusim's runtime (npusim/cpp/dispatch.py) under their own names. */
#ifndef NPUSIM_ACL_ACL_H
#define NPUSIM_ACL_ACL_H
#include <cstdint>
#include <cstring>
#include "stub_fun.h"
#include "npusim_launch.h"
typedef int aclError;
typedef void* aclrtStream;
typedef void* aclrtContext;
typedef void* aclrtEvent;
/* IEEE binary16 bits on the host, as CANN's acl_base.h has them (typedef uint16_t aclFloat16),
 * with its two conversions: exact to float; from float rounded to nearest, ties to even,
 * overflow to infinity, NaN kept a (quiet) NaN. */
typedef uint16_t aclFloat16;
inline float aclFloat16ToFloat(aclFloat16 h)
{
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu, bits;
    if (exp == 0x1Fu) {
        bits = sign | 0x7F800000u | (man << 13);                    /* inf, NaN */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);           /* normal */
    } else if (man == 0) {
        bits = sign;                                                /* zero */
    } else {                                                        /* subnormal: normalise */
        exp = 113u;
        while ((man & 0x400u) == 0) { man <<= 1; --exp; }
        bits = sign | (exp << 23) | ((man & 0x3FFu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}
inline aclFloat16 aclFloatToFloat16(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t absx = x & 0x7FFFFFFFu;
    if (absx > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((absx >> 13) & 0x3FFu));
    if (absx >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);   /* rounds past 65504 */
    if (absx < 0x38800000u) {                       /* a half subnormal (or zero): 2^-24 units */
        const int shift = 126 - static_cast<int>(absx >> 23);        /* 14 .. */
        if (shift > 24) return sign;                /* below half of 2^-24, or a tie to 0 */
        const uint32_t man = (absx & 0x7FFFFFu) | 0x800000u;
        const uint32_t q = man >> shift, rest = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
        return static_cast<uint16_t>(sign | (q + (rest > half || (rest == half && (q & 1u)))));
    }
    const uint32_t q = (absx - 0x38000000u) >> 13, rest = absx & 0x1FFFu;  /* rebias 127 -> 15 */
    return static_cast<uint16_t>(sign | (q + (rest > 0x1000u || (rest == 0x1000u && (q & 1u)))));
}
enum aclrtMemMallocPolicy { ACL_MEM_MALLOC_HUGE_FIRST = 0, ACL_MEM_MALLOC_HUGE_ONLY = 1,
                            ACL_MEM_MALLOC_NORMAL_ONLY = 2 };
enum aclrtMemcpyKind { ACL_MEMCPY_HOST_TO_HOST = 0, ACL_MEMCPY_HOST_TO_DEVICE = 1,
                       ACL_MEMCPY_DEVICE_TO_HOST = 2, ACL_MEMCPY_DEVICE_TO_DEVICE = 3 };
constexpr aclError ACL_SUCCESS = 0;
#define NPUSIM_ACL(NAME) NPUSIM_INTRINSIC(aclError, NAME)
#define NPUSIM_INTRINSIC(R, NAME)                                                         \
    template <class... A> inline R NAME(A... a)                                           \
    {                                                                                     \
        const npusim::Arg v[sizeof...(A) + 1] = {npusim::pack(a)..., npusim::Arg{}};     \
        return npusim::result<R>(npusim_intrinsic(#NAME, static_cast<int>(sizeof...(A)), v)); \
    }
NPUSIM_ACL(aclInit)
NPUSIM_ACL(aclFinalize)
NPUSIM_ACL(aclrtSetDevice)
NPUSIM_ACL(aclrtResetDevice)
NPUSIM_ACL(aclrtCreateStream)
NPUSIM_ACL(aclrtDestroyStream)
NPUSIM_ACL(aclrtSynchronizeStream)
NPUSIM_ACL(aclrtMalloc)
NPUSIM_ACL(aclrtMallocHost)
NPUSIM_ACL(aclrtFree)
NPUSIM_ACL(aclrtFreeHost)
NPUSIM_ACL(aclrtMemcpy)
NPUSIM_ACL(aclrtMemset)
NPUSIM_ACL(aclrtCreateContext)
NPUSIM_ACL(aclrtDestroyContext)
NPUSIM_ACL(aclrtSynchronizeDevice)
/* The last error's message: npusim reports errors as Python exceptions, so it is empty. */
inline const char* aclGetRecentErrMsg() { return ""; }
#undef NPUSIM_INTRINSIC
#undef NPUSIM_ACL
#endif
