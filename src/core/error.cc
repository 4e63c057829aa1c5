#include "kilnrt/error.h"

#include <cstdlib>
#include <cstring>
#include <vector>

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

std::string format_summary(ErrorCode code, const std::string& message, const std::string& where) {
  std::string s = "kilnrt ";
  s += error_code_name(code);
  if (!where.empty()) s += " [" + where + "]";
  s += ": " + message;
  return s;
}

// A source path (__FILE__, often absolute) relative to the source tree: from its last top-level folder of the tree
// on ("/home/u/kilnrt/src/engine/file_bytes.cc" -> "src/engine/file_bytes.cc", ".../python/src/x.cc" ->
// "python/src/x.cc"); the file name alone when the path shows none.
std::string tree_relative(const std::string& file) {
  std::string f = file;
  for (char& c : f)
    if (c == '\\') c = '/';
  std::vector<std::string> parts;
  for (size_t start = 0; start <= f.size();) {
    size_t end = f.find('/', start);
    if (end == std::string::npos) end = f.size();
    parts.push_back(f.substr(start, end - start));
    start = end + 1;
  }
  static const char* kTopLevel[] = {"src", "tests", "tools", "include", "bench", "fuzz", "examples"};
  int at = -1;
  for (int i = static_cast<int>(parts.size()) - 2; i >= 0 && at < 0; --i)
    for (const char* top : kTopLevel)
      if (parts[i] == top) {
        at = i;
        break;
      }
  if (at < 0) return parts.back();
  if (at > 0 &&
      ((parts[at] == "src" && parts[at - 1] == "python") || (parts[at] == "fuzz" && parts[at - 1] == "tests")))
    --at;
  std::string s;
  for (size_t i = static_cast<size_t>(at); i < parts.size(); ++i) s += (s.empty() ? "" : "/") + parts[i];
  return s;
}

bool debug_log_level() {
  const char* v = std::getenv("KILNRT_LOG_LEVEL");
  return v && std::strcmp(v, "debug") == 0;
}

}  // namespace

Error::Error(ErrorCode code, std::string message, std::string where, std::string expression, const char* file, int line)
    : std::runtime_error(format_summary(code, message, where)),
      code_(code),
      message_(std::move(message)),
      where_(std::move(where)),
      expression_(std::move(expression)),
      file_(file ? file : ""),
      line_(line),
      with_detail_(debug_log_level()) {
  what_ = std::runtime_error::what();
  if (with_detail_) {
    const std::string d = detail();
    if (!d.empty()) what_ += " (" + d + ")";
  }
}

std::string Error::summary() const { return format_summary(code_, message_, where_); }

std::string Error::detail() const {
  std::string s;
  if (!expression_.empty()) s += "check '" + expression_ + "' failed";
  if (!file_.empty()) {
    if (!s.empty()) s += " at ";
    s += tree_relative(file_) + ":" + std::to_string(line_);
  }
  return s;
}

const char* Error::what() const noexcept { return what_.c_str(); }

Error Error::with_context(const std::string& context) const {
  std::string w = where_.empty() ? context : context + ": " + where_;
  Error e(code_, message_, w, expression_, file_.empty() ? nullptr : file_.c_str(), line_);
  if (e.with_detail_ != with_detail_) {
    e.with_detail_ = with_detail_;
    e.what_ = e.summary();
    const std::string d = e.detail();
    if (with_detail_ && !d.empty()) e.what_ += " (" + d + ")";
  }
  return e;
}

}  // namespace kilnrt
