/* npusim's stand-in for the bounds-checked copies of "securec.h" (Huawei's libboundscheck)
 * that the Ascend C host tiling sources call: each refuses a copy larger than its
 * destination (returning a non-zero error, EOK = 0 otherwise). */
#ifndef NPUSIM_SECUREC_H
#define NPUSIM_SECUREC_H
#include <cstddef>
#include <cstring>
#ifndef EOK
#define EOK 0
#endif
typedef int errno_t;
inline errno_t memcpy_s(void* dst, size_t dstMax, const void* src, size_t count)
{
    if (dst == nullptr || src == nullptr || count > dstMax) {
        return 1;
    }
    std::memmove(dst, src, count);
    return EOK;
}
inline errno_t memset_s(void* dst, size_t dstMax, int c, size_t count)
{
    if (dst == nullptr || count > dstMax) {
        return 1;
    }
    std::memset(dst, c, count);
    return EOK;
}
#endif
