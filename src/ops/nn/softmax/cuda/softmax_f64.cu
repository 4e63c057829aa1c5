// float64 Softmax / LogSoftmax kernels behind the float64 branch of the CUDA Softmax layer (see softmax_f64.h).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/softmax/cuda/softmax_f64.h"

namespace kilnrt::cuda::kernels::f64 {
namespace {

using namespace launch_common;

constexpr int kRowThreads = 256;  // softmax: threads per row block (8 warps)

// Block-wide max (kMax) or sum of v in double; every thread gets the result. `shared` holds 32 doubles.
template <bool kMax>
__device__ double block_reduce(double v, double* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    const double other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmax(v, other) : v + other;
  }
  __syncthreads();  // `shared` may still be read from the previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  double r = lane < warps ? shared[lane] : (kMax ? -INFINITY : 0.0);
  for (int o = 16; o > 0; o >>= 1) {
    const double other = __shfl_xor_sync(0xffffffffu, r, o);
    r = kMax ? fmax(r, other) : r + other;
  }
  return r;
}

// One block per row (grid-stride over rows). fmax skips NaN like the CPU's std::max; a NaN still reaches the sum.
__global__ void softmax_rows_kernel(const double* x, double* y, int64_t rows, int64_t n, bool log_out) {
  __shared__ double shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const double* in = x + row * n;
    double* out = y + row * n;
    double m = -INFINITY;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmax(m, in[i]);
    m = block_reduce<true>(m, shared);
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += exp(in[i] - m);
    s = block_reduce<false>(s, shared);
    const double ls = log(s);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = log_out ? in[i] - m - ls : exp(in[i] - m) / s;
  }
}

// One thread per (outer, inner) column, serial over n (reads coalesced over inner).
__global__ void softmax_cols_kernel(const double* x, double* y, int64_t outer, int64_t n, int64_t inner, bool log_out) {
  KILNRT_GRID_LOOP(i, outer * inner) {
    const int64_t base = (i / inner) * n * inner + i % inner;
    const double* in = x + base;
    double* out = y + base;
    double m = -INFINITY, s = 0.0;
    for (int64_t k = 0; k < n; ++k) m = fmax(m, in[k * inner]);
    for (int64_t k = 0; k < n; ++k) s += exp(in[k * inner] - m);
    const double ls = log(s);
    for (int64_t k = 0; k < n; ++k) out[k * inner] = log_out ? in[k * inner] - m - ls : exp(in[k * inner] - m) / s;
  }
}

}  // namespace

int softmax(const double* x, double* y, int64_t outer, int64_t n, int64_t inner, bool log, StreamT stream) {
  if (outer * n * inner == 0) return 0;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (inner == 1) {
    const int64_t grid = outer < 65535LL * 32 ? outer : 65535LL * 32;
    softmax_rows_kernel<<<static_cast<unsigned>(grid), kRowThreads, 0, s>>>(x, y, outer, n, log);
  } else {
    softmax_cols_kernel<<<blocks_for(outer * inner), kThreads, 0, s>>>(x, y, outer, n, inner, log);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::f64
