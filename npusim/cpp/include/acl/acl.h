/* npusim's stand-in for the pyACL/acl runtime header of an Ascend C sample's host program:
 * the calls forward to npusim's runtime (npusim/cpp/dispatch.py) under their own names. */
#ifndef NPUSIM_ACL_ACL_H
#define NPUSIM_ACL_ACL_H
#include "stub_fun.h"
#include "npusim_launch.h"
typedef int aclError;
typedef void* aclrtStream;
typedef void* aclrtContext;
typedef void* aclrtEvent;
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
