#include "core/logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace kilnrt {
namespace {
int initial_level() {
  const char* env = std::getenv("KILNRT_LOG_LEVEL");
  if (!env) return static_cast<int>(LogLevel::kWarning);
  const char* names[] = {"error", "warning", "info", "debug", "verbose"};
  for (int i = 0; i < 5; ++i)
    if (std::strcmp(env, names[i]) == 0) return i;
  return static_cast<int>(LogLevel::kWarning);
}
std::atomic<int>& level_ref() {
  static std::atomic<int> level{initial_level()};
  return level;
}
}  // namespace

void set_log_level(LogLevel level) { level_ref() = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(level_ref().load()); }

void log_message(LogLevel level, const std::string& msg) {
  static const char* tags[] = {"error", "warning", "info", "debug", "verbose"};
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "[kilnrt %s] %s\n", tags[static_cast<int>(level)], msg.c_str());
}
}  // namespace kilnrt
