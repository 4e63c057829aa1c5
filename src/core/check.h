// Internal error macros. KILNRT_CHECK(cond, code, where, msg) throws kilnrt::Error recording the expression,
// file and line. `msg` is a stream expression: KILNRT_CHECK(x > 0, kInvalidModel, node.name, "x is " << x).
#pragma once
#include <sstream>

#include "kilnrt/error.h"

#define KILNRT_THROW(code, where, msg)                                                                    \
  do {                                                                                                    \
    std::ostringstream kilnrt_oss_;                                                                       \
    kilnrt_oss_ << msg;                                                                                   \
    throw ::kilnrt::Error(::kilnrt::ErrorCode::code, kilnrt_oss_.str(), (where), "", __FILE__, __LINE__); \
  } while (0)

#define KILNRT_CHECK(cond, code, where, msg)                                                                   \
  do {                                                                                                         \
    if (!(cond)) {                                                                                             \
      std::ostringstream kilnrt_oss_;                                                                          \
      kilnrt_oss_ << msg;                                                                                      \
      throw ::kilnrt::Error(::kilnrt::ErrorCode::code, kilnrt_oss_.str(), (where), #cond, __FILE__, __LINE__); \
    }                                                                                                          \
  } while (0)
