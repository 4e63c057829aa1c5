// Host entry points of the broadcasting binary kernels (binary.cu): arithmetic (math/binary), comparisons and logic
// (math/logic, through the same layer), integer Clip's bounds, Pow with mixed dtypes. Plain C++ like kernels.h; each
// launcher returns the launch status (0 = success).
#pragma once
#include <cstdint>

#include "cuda/kernels/elementwise_ops.h"
#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Output shape `dims` of bc; bc.s1 / bc.s2 (a / b) give 0 on broadcast dims.
// dtype codes: 0 float32, 1 int64, 2 int32, 3 bool (uint8), 4 float16, 5 bfloat16 (float32 math), 6 int8, 7 uint8,
// 8 int16, 9 uint16, 10 uint32, 11 uint64, 12 float64. Comparisons write bool; arithmetic writes the input type
// (integers wrap; integer Div / Mod by zero give 0; Mod: sign of the divisor, Fmod: sign of the dividend).
int binary(BinaryOp op, int dtype, const void* a, const void* b, void* y, int64_t n, const Broadcast3& bc,
           StreamT stream);
// Pow with a base / exponent of different dtypes (binary's codes): double math, y has the base's dtype (integer
// results truncate toward zero, like the CPU reference).
int pow_mixed(int base_dtype, const void* a, int exp_dtype, const void* b, void* y, int64_t n, const Broadcast3& bc,
              StreamT stream);

}  // namespace kilnrt::cuda::kernels
