// The CausalConvWithState kernel (causal_conv_state_kernels.h), in its CPU reference's arithmetic (double accumulation
// in the reference's order, the same float roundings), so that results match it to the last bit or nearly (FMA
// contraction and the device exp may differ in the last ulp).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/causal_conv_state/cuda/causal_conv_state_kernels.h"

namespace kilnrt::cuda::kernels::linatt {
namespace {

using namespace launch_common;

// ---- CausalConvWithState
// ---------------------------------------------------------------------------------------------- padded[b, c, i] = past
// (or 0) for i < K-1, else x[b, c, i - (K-1)].
__device__ __forceinline__ double padded_at(const CausalConvArgs& a, int64_t row, int64_t i) {
  const int64_t state = a.kernel - 1;
  if (i < state) return a.past ? static_cast<double>(a.past[row * state + i]) : 0.0;
  return a.x[row * a.length + (i - state)];
}

__global__ void causal_conv_kernel(CausalConvArgs a, int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    const int64_t row = i / a.length, t = i % a.length, c = row % a.channels;
    const float* wc = a.w + c * a.kernel;
    double acc = a.bias ? static_cast<double>(a.bias[c]) : 0.0;
    for (int64_t j = 0; j < a.kernel; ++j) acc += wc[j] * padded_at(a, row, t + j);
    if (a.silu) acc = acc / (1.0 + exp(-acc));
    a.y[i] = static_cast<float>(acc);
  }
}

__global__ void causal_conv_state_kernel(CausalConvArgs a, int64_t total) {
  const int64_t state = a.kernel - 1, plen = state + a.length;
  KILNRT_GRID_LOOP(i, total) {
    const int64_t row = i / state, t = i % state;
    a.present[i] = static_cast<float>(padded_at(a, row, plen - state + t));
  }
}

}  // namespace

int causal_conv(const CausalConvArgs& a, StreamT stream) {
  if (a.kernel < 1) return static_cast<int>(cudaErrorInvalidValue);
  const int64_t total = a.batch * a.channels * a.length;
  if (total > 0) {
    causal_conv_kernel<<<blocks_for(total), kThreads, 0, stream>>>(a, total);
    if (const int st = launch_status()) return st;
  }
  const int64_t states = a.batch * a.channels * (a.kernel - 1);
  if (a.present && states > 0) {
    causal_conv_state_kernel<<<blocks_for(states), kThreads, 0, stream>>>(a, states);
    return launch_status();
  }
  return 0;
}

}  // namespace kilnrt::cuda::kernels::linatt
