/* npusim: the launch syntax and the host runtime calls of an Ascend C program, for the
 * host build. ``k<<<blockDim, l2ctrl, stream>>>(args)`` is rewritten by npusim's build to
 * ``NPUSIM_LAUNCH(k, blockDim, l2ctrl, stream)(args)``: the launch goes to npusim's
 * run_kernel (npusim/cpp/dispatch.py) with the kernel's address and typed arguments. */
#ifndef NPUSIM_LAUNCH_H
#define NPUSIM_LAUNCH_H
#include "stub_fun.h"

namespace npusim {
struct Launch {
    const char* name;
    void* fn;
    uint64_t blockDim;
    void* stream;
    template <class... A> void operator()(A... a) const
    {
        const Arg v[sizeof...(A) + 4] = {pack(fn), pack(blockDim), pack(stream), pack(name), pack(a)...};
        npusim_intrinsic("__npusim_launch__", static_cast<int>(sizeof...(A) + 4), v);
    }
};
} // namespace npusim
#define NPUSIM_LAUNCH(k, b, ...) \
    npusim::Launch{#k, reinterpret_cast<void*>(&k), static_cast<uint64_t>(b), nullptr}
#endif
