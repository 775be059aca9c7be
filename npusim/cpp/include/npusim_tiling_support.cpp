/* What the Ascend C host tiling sources (impl/adv_api/tiling of the user's headers, compiled
 * by npusim/cpp/builder.py into a library beside the kernel) need from CANN's closed log
 * library: the log singleton of impl/adv_api/detail/host_log.h, here printing errors and
 * warnings to stderr. */
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include "dlog_pub.h"
#include "detail/host_log.h"

namespace {
int32_t NpusimCheckLogLevel(int32_t, int32_t level) { return level >= DLOG_WARN ? 1 : 0; }
void NpusimDlogRecord(int32_t, int32_t level, const char* format, ...)
{
    std::fprintf(stderr, "[%s] ", level >= DLOG_ERROR ? "ERROR" : "WARNING");
    va_list args;
    va_start(args, format);
    std::vfprintf(stderr, format, args);
    va_end(args);
}
}  // namespace

namespace AscendC {
namespace UnifiedLog {
LoggingSingleton* LoggingSingleton::instance_ = nullptr;
std::mutex LoggingSingleton::mutex_;
LoggingSingleton::LoggingSingleton() : dLogHandle(nullptr), logHandle(nullptr)
{
    CheckLogLevel = NpusimCheckLogLevel;
    DlogRecord = NpusimDlogRecord;
}
LoggingSingleton::~LoggingSingleton() {}
LoggingSingleton* LoggingSingleton::getInstance()
{
    std::lock_guard<std::mutex> lock(mutex_);
    if (instance_ == nullptr) {
        instance_ = new LoggingSingleton();
    }
    return instance_;
}
}  // namespace UnifiedLog
UnifiedLog::LoggingSingleton* logInstance = UnifiedLog::LoggingSingleton::getInstance();
}  // namespace AscendC
