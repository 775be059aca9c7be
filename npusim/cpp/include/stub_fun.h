/* npusim's stand-in for the CPU-debug "stub_fun.h": the CCE intrinsic declarations.
 *
 * Every intrinsic is one variadic template that packs its name and typed arguments and calls
 * one C entry point, npusim_intrinsic(), which npusim's runtime forwards into its engine
 * (npusim/cpp/dispatch.py). One template per name avoids per-dtype prototypes: the engine
 * sees each argument's kind (signed, unsigned, float, half, bfloat16, pointer to which
 * element type, struct) and its bits. */
#ifndef NPUSIM_STUB_FUN_H
#define NPUSIM_STUB_FUN_H
#include "stub_def.h"
#include <type_traits>

namespace npusim {
/* One argument: kind | element code << 8 (pointers), its size in bytes, and its bits
 * (a pointer's address; a struct's address, valid during the call). */
struct Arg { uint32_t kind; uint32_t size; uint64_t bits; };
enum : uint32_t { K_NONE = 0, K_INT = 1, K_UINT = 2, K_FLOAT = 3, K_DOUBLE = 4, K_HALF = 5,
                  K_BF16 = 6, K_PTR = 7, K_STRUCT = 8 };
/* Element codes (npusim/cpp/dispatch.py ELEMENT). */
template <class T> struct Elem { static constexpr uint32_t v = 0; };
template <> struct Elem<int8_t> { static constexpr uint32_t v = 1; };
template <> struct Elem<uint8_t> { static constexpr uint32_t v = 2; };
template <> struct Elem<int16_t> { static constexpr uint32_t v = 3; };
template <> struct Elem<uint16_t> { static constexpr uint32_t v = 4; };
template <> struct Elem<int32_t> { static constexpr uint32_t v = 5; };
template <> struct Elem<uint32_t> { static constexpr uint32_t v = 6; };
template <> struct Elem<int64_t> { static constexpr uint32_t v = 7; };
template <> struct Elem<uint64_t> { static constexpr uint32_t v = 8; };
template <> struct Elem<half> { static constexpr uint32_t v = 9; };
template <> struct Elem<bfloat16_t> { static constexpr uint32_t v = 10; };
template <> struct Elem<float> { static constexpr uint32_t v = 11; };
template <> struct Elem<double> { static constexpr uint32_t v = 12; };
template <> struct Elem<bool> { static constexpr uint32_t v = 13; };
template <> struct Elem<char> { static constexpr uint32_t v = 1; };
template <> struct Elem<long long> { static constexpr uint32_t v = 7; };
template <> struct Elem<unsigned long long> { static constexpr uint32_t v = 8; };

template <class T> inline Arg pack(const T& x)
{
    using U = std::remove_cv_t<T>;
    Arg a{K_NONE, static_cast<uint32_t>(sizeof(U)), 0};
    if constexpr (std::is_pointer_v<U>) {
        a.kind = K_PTR | (Elem<std::remove_cv_t<std::remove_pointer_t<U>>>::v << 8);
        a.bits = reinterpret_cast<uint64_t>(x);
    } else if constexpr (std::is_same_v<U, half>) {
        a.kind = K_HALF; a.bits = x.bits;
    } else if constexpr (std::is_same_v<U, bfloat16_t>) {
        a.kind = K_BF16; a.bits = x.bits;
    } else if constexpr (std::is_same_v<U, float>) {
        uint32_t b; std::memcpy(&b, &x, 4); a.kind = K_FLOAT; a.bits = b;
    } else if constexpr (std::is_same_v<U, double>) {
        std::memcpy(&a.bits, &x, 8); a.kind = K_DOUBLE;
    } else if constexpr (std::is_enum_v<U>) {
        a.kind = K_INT; a.bits = static_cast<uint64_t>(static_cast<int64_t>(x));
    } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
        a.kind = K_INT; a.bits = static_cast<uint64_t>(static_cast<int64_t>(x));
    } else if constexpr (std::is_integral_v<U>) {
        a.kind = K_UINT; a.bits = static_cast<uint64_t>(x);
    } else {
        a.kind = K_STRUCT; a.bits = reinterpret_cast<uint64_t>(&x);
    }
    return a;
}

template <class R> inline R result(uint64_t bits)
{
    if constexpr (std::is_void_v<R>) {
        (void)bits;
    } else if constexpr (std::is_same_v<R, float>) {
        uint32_t b = static_cast<uint32_t>(bits); float f; std::memcpy(&f, &b, 4); return f;
    } else if constexpr (std::is_same_v<R, half>) {
        half h; h.bits = static_cast<uint16_t>(bits); return h;
    } else {
        return static_cast<R>(bits);
    }
}
} // namespace npusim

/* The one entry point (npusim/cpp/runtime.cpp): name, argument count, arguments. */
extern "C" uint64_t npusim_intrinsic(const char* name, int nargs, const npusim::Arg* args);

#define NPUSIM_INTRINSIC(R, NAME)                                                         \
    template <class... A> inline R NAME(A... a)                                           \
    {                                                                                     \
        const npusim::Arg v[sizeof...(A) + 1] = {npusim::pack(a)..., npusim::Arg{}};     \
        return npusim::result<R>(npusim_intrinsic(#NAME, static_cast<int>(sizeof...(A)), v)); \
    }
#include "intrinsics.inc"
#undef NPUSIM_INTRINSIC

/* The CPU library's buffer-bookkeeping hooks: npusim's checker tracks buffers itself. */
#define NPUSIM_HOOK(NAME) template <class... A> inline void NAME(A...) {}
NPUSIM_HOOK(AscendCBufAbsAddr)
NPUSIM_HOOK(AscendCBufAlloc)
NPUSIM_HOOK(AscendCBufDeque)
NPUSIM_HOOK(AscendCBufEnque)
NPUSIM_HOOK(AscendCBufFree)
NPUSIM_HOOK(AscendCBufGet)
NPUSIM_HOOK(AscendCBufInit)
NPUSIM_HOOK(AscendCQueCreate)
NPUSIM_HOOK(AscendCRecordPoolHierarchy)
NPUSIM_HOOK(AscendCTBufPoolInit)
NPUSIM_HOOK(AscendCTBufPoolResetCheck)
NPUSIM_HOOK(AscendCTimeStamp)
NPUSIM_HOOK(AscendCUpdateTbufPoolStatus)
#undef NPUSIM_HOOK

namespace AscendC {
extern bool g_isAtomic;   /* set while an atomic store mode is on (fixpipe) */
extern bool g_isVdeq;     /* set by the vector dequant conversions */
}
#endif
