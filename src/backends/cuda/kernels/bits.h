// Host entry points of the kernels of layers_bits.cc: integer bit logic and shifts (BitwiseAnd / Or /
// Xor / Not, BitShift on signed and unsigned integers), byte copies (BitCast), a bool constant (OptionalHasElement)
// and ReduceMax / ReduceMin of bool tensors. Plain C++ like kernels.h; each launcher returns the launch status
// (0 = success) and never synchronises.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backends/cuda/kernels/extra_kernels.h"
#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::bits {

// ---- Resize antialias=1, linear / cubic (bits_resize.cu) ----------------------------------------------------------
// The plan of the main Resize layer (extra_kernels.h; mode 1 linear, 2 cubic). Per axis, with s = min(scale, 1), the
// filter is stretched by 1/s and its weights normalised (src/ops/nn/resize/resize.cc antialias_taps); one thread per
// output element sums the product of the axes' taps in double.
int resize_antialias_f32(const float* x, float* y, const extra::ResizePlan& p, StreamT stream);

}  // namespace kilnrt::cuda::kernels::bits
