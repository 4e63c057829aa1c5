// Softmax / LogSoftmax over the middle dim of [outer, n, inner] (softmax_kernels.h): one block per row when
// inner == 1, else one thread per (outer, inner); float32 math over float32 / 16-bit storage.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/float_storage_math.cuh"
#include "ops/nn/softmax/cuda/softmax_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

// A row whose maximum is -inf (every entry masked with -inf) is uniform (1/n), not NaN: masks never produce NaN.
template <typename T>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t n, bool log) {
  __shared__ float shared[32];
  const T* row = x + blockIdx.x * n;
  T* out = y + blockIdx.x * n;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = nan_max(m, ld(row, i));
  m = block_reduce<true>(m, shared);
  const bool all_masked = m == -INFINITY;
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += all_masked ? 1.f : expf(ld(row, i) - m);
  s = block_reduce<false>(s, shared);
  const float inv = 1.f / s, ls = logf(s);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float d = all_masked ? 0.f : ld(row, i) - m;
    st(out, i, log ? d - ls : expf(d) * inv);
  }
}

template <typename T>
__global__ void softmax_cols_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  const int64_t total = outer * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = i / inner, in = i % inner;
    const T* p = x + o * n * inner + in;
    T* q = y + o * n * inner + in;
    float m = -INFINITY;
    for (int64_t k = 0; k < n; ++k) m = nan_max(m, ld(p, k * inner));
    const bool all_masked = m == -INFINITY;
    float s = 0.f;
    for (int64_t k = 0; k < n; ++k) s += all_masked ? 1.f : expf(ld(p, k * inner) - m);
    const float ls = logf(s);
    for (int64_t k = 0; k < n; ++k) {
      const float d = all_masked ? 0.f : ld(p, k * inner) - m;
      st(q, k * inner, log ? d - ls : expf(d) / s);
    }
  }
}

}  // namespace

int softmax(int dt, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, bool log, StreamT stream) {
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (outer * n * inner == 0) return 0;
  const bool rows = inner == 1 && outer < 2147483647LL;
  KILNRT_DT_SWITCH(dt, if (rows) softmax_rows_kernel<T>
                   <<<rows_grid(outer), n >= 1024 ? 512 : 128, 0, s>>>((const T*)x, (T*)y, n, log);
                   else softmax_cols_kernel<T>
                   <<<blocks_for(outer * inner), kThreads, 0, s>>>((const T*)x, (T*)y, outer, n, inner, log))
  return launch_status();
}
int softmax_f32(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log, StreamT stream) {
  return softmax(0, x, y, outer, n, inner, log, stream);
}

}  // namespace kilnrt::cuda::kernels
