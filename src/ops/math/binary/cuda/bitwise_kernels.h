// Host entry point of the BitwiseAnd / Or / Xor and BitShift kernel (bitwise.cu). Plain C++ like kernels.h; returns
// the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/int_codes.h"
#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Binary ops: 0 and, 1 or, 2 xor, 3 shift left, 4 shift right. Shifts follow the CPU reference
// (src/ops/math/binary/binary.cc shift_value): a right shift of a signed value is arithmetic, a left shift wraps in
// two's complement, a shift amount outside [0, width) gives 0 (or -1 for a right shift of a negative value).
int bit_binary(int op, int int_code, const void* a, const void* b, void* y, int64_t n, const Broadcast3& bc,
               StreamT stream);

}  // namespace kilnrt::cuda::kernels
