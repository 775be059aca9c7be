/* bfloat16_t for the host build of Ascend C kernels (npusim): the upper 16 bits of a float,
 * converted from float with round to nearest, ties to even; NaN stays NaN. */
#ifndef NPUSIM_KERNEL_BF16_H
#define NPUSIM_KERNEL_BF16_H
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace npusim {
inline uint16_t FloatToBf16Bits(float f)
{
    uint32_t x; std::memcpy(&x, &f, 4);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
        return static_cast<uint16_t>((x >> 16) | 0x40u);
    }
    x += 0x7FFFu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}
inline float Bf16BitsToFloat(uint16_t b)
{
    uint32_t x = static_cast<uint32_t>(b) << 16; float f; std::memcpy(&f, &x, 4); return f;
}
} // namespace npusim

namespace bfloat16 {
struct Bf16T {
    uint16_t bits;
    Bf16T() = default;
    template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
    Bf16T(T v) : bits(npusim::FloatToBf16Bits(static_cast<float>(v))) {}
    operator float() const { return npusim::Bf16BitsToFloat(bits); }
    float ToFloat() const { return npusim::Bf16BitsToFloat(bits); }
    Bf16T& operator+=(float v) { *this = Bf16T(ToFloat() + v); return *this; }
    Bf16T& operator-=(float v) { *this = Bf16T(ToFloat() - v); return *this; }
    Bf16T& operator*=(float v) { *this = Bf16T(ToFloat() * v); return *this; }
    Bf16T& operator/=(float v) { *this = Bf16T(ToFloat() / v); return *this; }
    Bf16T operator-() const { Bf16T h; h.bits = bits ^ 0x8000u; return h; }
};
} // namespace bfloat16
using bfloat16_t = bfloat16::Bf16T;
#endif
