/* npusim's stand-in for CANN's "dlog_pub.h" (the closed device-log library's interface) as
 * the Ascend C host tiling sources use it: the log levels, the module id and the debug mask.
 * Their log singleton is defined by npusim_tiling_support.cpp: errors and warnings go to
 * stderr, info and debug records are dropped. */
#ifndef NPUSIM_DLOG_PUB_H
#define NPUSIM_DLOG_PUB_H
#include <cstdint>
enum { DLOG_DEBUG = 0, DLOG_INFO = 1, DLOG_WARN = 2, DLOG_ERROR = 3 };
enum { ASCENDCKERNEL = 57 };
#define DEBUG_LOG_MASK 0x00010000
#endif
