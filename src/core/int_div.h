// Integer division and remainder of user data, defined for every operand pair with a nonzero divisor. C++ leaves
// the most negative value divided by -1 undefined (x86 traps with SIGFPE, for / and % alike); here it follows
// numpy / two's complement: INT_MIN / -1 wraps to INT_MIN and x % -1 is 0. Division by zero is the caller's to
// reject first (the kernels throw kInvalidArgument, symbolic shape arithmetic gives an unknown value).
#pragma once
#include <type_traits>

namespace kilnrt {

// a / b truncated toward zero; b != 0.
template <class T>
T int_div(T a, T b) {
  static_assert(std::is_integral_v<T>, "int_div is for integer types");
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(a)));  // -a, wrapping
    }
  }
  return static_cast<T>(a / b);
}

// a % b with the sign of a (C's remainder); b != 0.
template <class T>
T int_rem(T a, T b) {
  static_assert(std::is_integral_v<T>, "int_rem is for integer types");
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
  }
  return static_cast<T>(a % b);
}

}  // namespace kilnrt
