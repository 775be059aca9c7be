/* npusim's runtime for Ascend C kernels built for the host: the one intrinsic entry point,
 * the per-core globals the headers read, and the launch helpers. Compiled into every kernel
 * library beside the user's source (npusim/cpp/builder.py). */
#include "stub_fun.h"

int64_t block_idx = 0;
int64_t block_num = 1;
int64_t sub_block_idx = 0;
int32_t g_coreType = 2;          /* AscendC::AIV */
int64_t g_taskRation = 1;
uint64_t g_fixpipeNdNzParam = 0;
namespace AscendC {
bool g_isAtomic = false;
bool g_isVdeq = false;
}

typedef uint64_t (*npusim_dispatch_fn)(const char*, int, const npusim::Arg*);
extern "C" {
/* Set by npusim (ctypes) before any kernel runs. */
npusim_dispatch_fn npusim_dispatch = nullptr;

uint64_t npusim_intrinsic(const char* name, int nargs, const npusim::Arg* args)
{
    return npusim_dispatch(name, nargs, args);
}
}
