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

/* The kernel's call site of the current intrinsic (npusim/cpp/sourceline.py): the return
 * addresses of the library's frames from npusim_intrinsic outwards, found by following the
 * frame pointers while they return into this library (npusim builds with
 * -fno-omit-frame-pointer -DNPUSIM_SOURCE_LINES; without that nothing is noted); a few
 * loads per intrinsic. DWARF line tables (-g1) map them to the user's line
 * when a checker message or a profile span asks. They live in the library's .bss, which is
 * per core in an interleaved launch (npusim/cpp/corestate.py). */
#include <dlfcn.h>
#include <link.h>
enum { NPUSIM_MAX_FRAMES = 24 };
static uintptr_t npusim_text_lo = 0, npusim_text_hi = 0;
extern "C" {
/* read by npusim (ctypes, in_dll): the return addresses, their count, the load bias */
uintptr_t npusim_frame_pc[NPUSIM_MAX_FRAMES];
int32_t npusim_frame_count = 0;
uintptr_t npusim_load_bias = 0;
}

static int npusim_find_text(struct dl_phdr_info* info, size_t, void* self)
{
    const uintptr_t me = reinterpret_cast<uintptr_t>(self);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
        if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && lo <= me && me < lo + ph.p_memsz) {
            npusim_text_lo = lo;
            npusim_text_hi = lo + ph.p_memsz;
            npusim_load_bias = info->dlpi_addr;
            return 1;
        }
    }
    return 0;
}

extern "C" {
/* Set by npusim (ctypes) before any kernel runs. */
npusim_dispatch_fn npusim_dispatch = nullptr;

__attribute__((noinline)) uint64_t npusim_intrinsic(const char* name, int nargs, const npusim::Arg* args)
{
    int n = 0;
#if defined(NPUSIM_SOURCE_LINES)
    /* every frame of this library has a frame pointer: a frame's return address is checked
     * to lie in the library before its caller's frame is read */
    if (npusim_text_hi == 0) {
        dl_iterate_phdr(npusim_find_text, reinterpret_cast<void*>(&npusim_intrinsic));
    }
    void* const* fp = static_cast<void* const*>(__builtin_frame_address(0));
    while (fp != nullptr && n < NPUSIM_MAX_FRAMES) {
        const uintptr_t ret = reinterpret_cast<uintptr_t>(fp[1]);
        if (ret < npusim_text_lo || ret >= npusim_text_hi) {
            break;                                  /* returns into Python (libffi) */
        }
        npusim_frame_pc[n++] = ret;
        void* const* next = static_cast<void* const*>(fp[0]);
        if (next <= fp) {
            break;                                  /* callers live higher on the stack */
        }
        fp = next;
    }
#endif
    npusim_frame_count = n;
    return npusim_dispatch(name, nargs, args);
}
}
