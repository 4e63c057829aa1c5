// kilnrt: the one error type. Every failure in the library is reported as a kilnrt::Error carrying what failed
// (the expression or call), where (file:line), and which node / tensor / file it concerns.
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

  // Returns a copy with `context` prepended to where() (e.g. the node name once a kernel failed).
  Error with_context(const std::string& context) const;

 private:
  ErrorCode code_;
  std::string message_, where_, expression_, file_;
  int line_;
};

}  // namespace kilnrt
