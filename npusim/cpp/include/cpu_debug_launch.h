/* npusim's stand-in for the CPU-debug launch helpers: ICPU_RUN_KF runs the kernel on npusim
 * (the launch of npusim_launch.h); GmAlloc/GmFree allocate npusim device memory. */
#ifndef NPUSIM_CPU_DEBUG_LAUNCH_H
#define NPUSIM_CPU_DEBUG_LAUNCH_H
#include "npusim_launch.h"
#define ICPU_RUN_KF(func, blockdim, ...) NPUSIM_LAUNCH(func, blockdim)(__VA_ARGS__)
inline void* GmAlloc(size_t size)
{
    const npusim::Arg v[1] = {npusim::pack(static_cast<uint64_t>(size))};
    return reinterpret_cast<void*>(npusim_intrinsic("GmAlloc", 1, v));
}
inline void GmFree(void* p)
{
    const npusim::Arg v[1] = {npusim::pack(p)};
    npusim_intrinsic("GmFree", 1, v);
}
/* the CPU-debug library declares them in namespace AscendC too (AscendC::GmAlloc) */
namespace AscendC {
using ::GmAlloc;
using ::GmFree;
}
#endif
