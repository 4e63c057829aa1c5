// kilnrt: the one error type. Every failure in the library is reported as a kilnrt::Error carrying what failed
// (the expression or call), where (file:line), and which node / tensor / file it concerns.
//
// Text: summary() is the one line a user reads, "kilnrt <code> [<where>]: <message>" ("kilnrt I/O error
// [model.onnx]: cannot open 'model.onnx': No such file or directory"); detail() is the failing check and the source
// location inside kilnrt ("check 'fd >= 0' failed at src/engine/file_bytes.cc:17"), "" when there is none. what()
// is summary(), or summary() + " (" + detail() + ")" when KILNRT_LOG_LEVEL=debug was set as the error was made.
#pragma once
#include <stdexcept>
#include <string>

namespace kilnrt {

enum class ErrorCode {
  kInvalidArgument,  // bad input from the caller: wrong name, shape, dtype, device
  kInvalidModel,     // malformed or unsupported ONNX model
  kUnsupported,      // an op / attribute / dtype kilnrt does not implement
  kInvalidEngine,    // engine file damaged, truncated, foreign or from a newer format
  kIo,               // file could not be read or written
  kCuda,             // CUDA / driver / library error
  kOutOfMemory,      // allocation failed
  kInternal,         // a bug in kilnrt
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message, std::string where = {}, std::string expression = {},
        const char* file = nullptr, int line = 0);

  ErrorCode code() const noexcept { return code_; }
  // The plain message, without location.
  const std::string& message() const noexcept { return message_; }
  // The node / tensor / file the error concerns (may be empty).
  const std::string& where() const noexcept { return where_; }
  // The failing expression or call (may be empty).
  const std::string& expression() const noexcept { return expression_; }
  const std::string& file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

  // One readable line: "kilnrt <code> [<where>]: <message>" (no "[<where>]" when where() is empty).
  std::string summary() const;
  // The failing expression and the source location, relative to the source tree: "check 'fd >= 0' failed at
  // src/engine/file_bytes.cc:17", "check 'x' failed" (no location), "src/engine/builder.cc:58" (no expression);
  // "" when there is neither.
  std::string detail() const;
  // summary(), with " (" + detail() + ")" appended when the environment variable KILNRT_LOG_LEVEL was "debug" when
  // the error was constructed (and detail() is not empty).
  const char* what() const noexcept override;

  // Returns a copy with `context` prepended to where() (e.g. the node name once a kernel failed). The copy's what()
  // keeps this error's choice of including detail().
  Error with_context(const std::string& context) const;

 private:
  ErrorCode code_;
  std::string message_, where_, expression_, file_;
  int line_;
  bool with_detail_;  // KILNRT_LOG_LEVEL=debug at construction
  std::string what_;
};

}  // namespace kilnrt
