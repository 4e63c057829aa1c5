// Integer dtype codes of the integer kernels (bit ops, general QuantizeLinear / DequantizeLinear). Plain C++.
#pragma once

namespace kilnrt::cuda::kernels {

// Integer dtype codes of these kernels.
enum IntCode : int { kI8 = 0, kU8 = 1, kI16 = 2, kU16 = 3, kI32 = 4, kU32 = 5, kI64 = 6, kU64 = 7 };

}  // namespace kilnrt::cuda::kernels
