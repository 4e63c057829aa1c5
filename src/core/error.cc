#include "kilnrt/error.h"

#include <cstring>

namespace kilnrt {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kInvalidModel: return "invalid model";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInvalidEngine: return "invalid engine";
    case ErrorCode::kIo: return "I/O error";
    case ErrorCode::kCuda: return "CUDA error";
    case ErrorCode::kOutOfMemory: return "out of memory";
    case ErrorCode::kInternal: return "internal error";
  }
  return "error";
}

namespace {
std::string format_error(ErrorCode code, const std::string& message, const std::string& where,
                         const std::string& expression, const char* file, int line) {
  std::string s = "kilnrt ";
  s += error_code_name(code);
  if (!where.empty()) s += " [" + where + "]";
  s += ": " + message;
  if (!expression.empty() || file) {
    s += " (";
    if (!expression.empty()) s += "check '" + expression + "' failed";
    if (file) {
      const char* base = std::strrchr(file, '/');
      if (!expression.empty()) s += " at ";
      s += std::string(base ? base + 1 : file) + ":" + std::to_string(line);
    }
    s += ")";
  }
  return s;
}
}  // namespace

Error::Error(ErrorCode code, std::string message, std::string where, std::string expression, const char* file, int line)
    : std::runtime_error(format_error(code, message, where, expression, file, line)),
      code_(code),
      message_(std::move(message)),
      where_(std::move(where)),
      expression_(std::move(expression)),
      file_(file ? file : ""),
      line_(line) {}

Error Error::with_context(const std::string& context) const {
  std::string w = where_.empty() ? context : context + ": " + where_;
  return Error(code_, message_, w, expression_, file_.empty() ? nullptr : file_.c_str(), line_);
}

}  // namespace kilnrt
