// Leveled logging to stderr. Level from KILNRT_LOG_LEVEL (error|warning|info|debug|verbose) or set_log_level().
#pragma once
#include <sstream>
#include <string>

namespace kilnrt {
enum class LogLevel { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3, kVerbose = 4 };
void set_log_level(LogLevel level);
LogLevel log_level();
void log_message(LogLevel level, const std::string& msg);
}  // namespace kilnrt

#define KILNRT_LOG(level, msg)                                                 \
  do {                                                                         \
    if (::kilnrt::LogLevel::level <= ::kilnrt::log_level()) {                  \
      std::ostringstream kilnrt_log_oss_;                                      \
      kilnrt_log_oss_ << msg;                                                  \
      ::kilnrt::log_message(::kilnrt::LogLevel::level, kilnrt_log_oss_.str()); \
    }                                                                          \
  } while (0)
