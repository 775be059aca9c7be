/* half: IEEE 754 binary16 for the host build of Ascend C kernels (npusim).
 * Stored as its 16 bits; converts to float exactly and from float with round to nearest,
 * ties to even (as the vector unit's default conversion). Arithmetic goes through float. */
#ifndef NPUSIM_KERNEL_FP16_H
#define NPUSIM_KERNEL_FP16_H
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace npusim {
inline uint16_t FloatToHalfBits(float f)
{
    uint32_t x; std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7FFFFFFFu;
    if (absx >= 0x7F800000u) {                       /* inf or nan */
        return static_cast<uint16_t>(sign | 0x7C00u | (absx > 0x7F800000u ? 0x200u | ((absx >> 13) & 0x3FFu) : 0u));
    }
    if (absx >= 0x477FF000u) {                       /* rounds to >= 65520: inf */
        return static_cast<uint16_t>(sign | 0x7C00u);
    }
    if (absx < 0x38800000u) {                        /* below 2^-14: subnormal or zero */
        if (absx < 0x33000000u) {                    /* below 2^-25: rounds to zero */
            return static_cast<uint16_t>(sign);
        }
        uint32_t e = absx >> 23;
        uint32_t m = (absx & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126u - e;                   /* value m * 2^(e-150), unit 2^-24 */
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (q & 1u))) {
            ++q;
        }
        return static_cast<uint16_t>(sign | q);
    }
    uint32_t r = absx - 0x38000000u;                 /* rebias exponent 127 -> 15 */
    uint32_t q = r >> 13;
    uint32_t rem = r & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) {
        ++q;
    }
    return static_cast<uint16_t>(sign | q);
}

inline float HalfBitsToFloat(uint16_t h)
{
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu;
    uint32_t m = h & 0x3FFu;
    uint32_t x;
    if (e == 0x1Fu) {
        x = sign | 0x7F800000u | (m << 13);
    } else if (e != 0) {
        x = sign | ((e + 112u) << 23) | (m << 13);
    } else if (m == 0) {
        x = sign;
    } else {                                         /* subnormal: normalise */
        int k = 0;
        while (!(m & 0x400u)) { m <<= 1; ++k; }
        x = sign | (static_cast<uint32_t>(113 - k) << 23) | ((m & 0x3FFu) << 13);
    }
    float f; std::memcpy(&f, &x, 4);
    return f;
}
} // namespace npusim

struct half {
    uint16_t bits;
    half() = default;
    template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
    half(T v) : bits(npusim::FloatToHalfBits(static_cast<float>(v))) {}
    operator float() const { return npusim::HalfBitsToFloat(bits); }
    float ToFloat() const { return npusim::HalfBitsToFloat(bits); }
    half& operator+=(float v) { *this = half(ToFloat() + v); return *this; }
    half& operator-=(float v) { *this = half(ToFloat() - v); return *this; }
    half& operator*=(float v) { *this = half(ToFloat() * v); return *this; }
    half& operator/=(float v) { *this = half(ToFloat() / v); return *this; }
    half operator-() const { half h; h.bits = bits ^ 0x8000u; return h; }
};
namespace float16 { using Fp16T = half; }
#endif
