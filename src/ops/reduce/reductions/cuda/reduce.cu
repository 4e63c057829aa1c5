// Reduce* over the middle dim of [outer, r, inner] (reduce_kernels.h): one block per row when inner == 1, else one
// thread per output; float32 math over float32 / 16-bit storage, and float64 storage with float64 math.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/float_storage_math.cuh"
#include "ops/reduce/reductions/cuda/reduce_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__device__ __forceinline__ float reduce_init(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax: return -INFINITY;
    case ReduceOp::kMin: return INFINITY;
    case ReduceOp::kProd: return 1.f;
    default: return 0.f;
  }
}
__device__ __forceinline__ float reduce_step(ReduceOp op, float acc, float v) {
  switch (op) {
    case ReduceOp::kMax: return nan_max(acc, v);
    case ReduceOp::kMin: return nan_min(acc, v);
    case ReduceOp::kProd: return acc * v;
    case ReduceOp::kSumSquare:
    case ReduceOp::kL2: return acc + v * v;
    case ReduceOp::kL1: return acc + fabsf(v);
    case ReduceOp::kLogSumExp: return acc + expf(v);
    default: return acc + v;
  }
}
__device__ __forceinline__ float reduce_final(ReduceOp op, float acc, int64_t r) {
  switch (op) {
    case ReduceOp::kMean: return r > 0 ? acc / float(r) : NAN;
    case ReduceOp::kL2: return sqrtf(acc);
    case ReduceOp::kLogSum:
    case ReduceOp::kLogSumExp: return logf(acc);
    default: return acc;
  }
}

// inner == 1: one block per output row (coalesced over r).
template <typename T>
__global__ void reduce_rows_kernel(ReduceOp op, const T* x, T* y, int64_t r) {
  __shared__ float shared[32];
  const T* row = x + blockIdx.x * r;
  const bool is_max = op == ReduceOp::kMax, is_min = op == ReduceOp::kMin, is_prod = op == ReduceOp::kProd;
  float acc = reduce_init(op);
  for (int64_t i = threadIdx.x; i < r; i += blockDim.x) acc = reduce_step(op, acc, ld(row, i));
  float total;
  if (is_max) {
    total = block_reduce<true>(acc, shared);
  } else if (is_min) {
    total = -block_reduce<true>(-acc, shared);
  } else if (is_prod) {  // rare: serialise through shared memory
    __syncthreads();
    if (threadIdx.x == 0) shared[0] = 1.f;
    __syncthreads();
    for (int t = 0; t < blockDim.x; ++t) {
      if (threadIdx.x == t) shared[0] *= acc;
      __syncthreads();
    }
    total = shared[0];
  } else {
    total = block_reduce<false>(acc, shared);
  }
  if (threadIdx.x == 0) st(y, blockIdx.x, reduce_final(op, total, r));
}

// inner > 1: one thread per (outer, inner) output, looping over r (coalesced over inner).
template <typename T>
__global__ void reduce_cols_kernel(ReduceOp op, const T* x, T* y, int64_t outer, int64_t r, int64_t inner) {
  const int64_t n = outer * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = i / inner, in = i % inner;
    const T* p = x + o * r * inner + in;
    float acc = reduce_init(op);
    for (int64_t k = 0; k < r; ++k) acc = reduce_step(op, acc, ld(p, k * inner));
    st(y, i, reduce_final(op, acc, r));
  }
}

// float64 storage and math (ONNX's float64 reduction cases): one thread per output, serial over r. LogSumExp
// subtracts the maximum first (no overflow); an empty or all -inf row gives -inf.
__global__ void reduce_f64_kernel(ReduceOp op, const double* x, double* y, int64_t outer, int64_t r, int64_t inner) {
  const int64_t n = outer * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double* p = x + (i / inner) * r * inner + i % inner;
    double m = -INFINITY;
    if (op == ReduceOp::kLogSumExp)
      for (int64_t k = 0; k < r; ++k) m = (p[k * inner] != p[k * inner] || p[k * inner] > m) ? p[k * inner] : m;
    const bool shift = op == ReduceOp::kLogSumExp && isfinite(m);
    double acc = op == ReduceOp::kMax ? -INFINITY : op == ReduceOp::kMin ? INFINITY : op == ReduceOp::kProd ? 1.0 : 0.0;
    for (int64_t k = 0; k < r; ++k) {
      const double v = p[k * inner];
      switch (op) {
        case ReduceOp::kMax: acc = (v != v || v > acc) ? v : acc; break;
        case ReduceOp::kMin: acc = (v != v || v < acc) ? v : acc; break;
        case ReduceOp::kProd: acc *= v; break;
        case ReduceOp::kSumSquare:
        case ReduceOp::kL2: acc += v * v; break;
        case ReduceOp::kL1: acc += fabs(v); break;
        case ReduceOp::kLogSumExp: acc += exp(shift ? v - m : v); break;
        default: acc += v; break;
      }
    }
    switch (op) {
      case ReduceOp::kMean: acc = r > 0 ? acc / double(r) : NAN; break;
      case ReduceOp::kL2: acc = sqrt(acc); break;
      case ReduceOp::kLogSum: acc = log(acc); break;
      case ReduceOp::kLogSumExp: acc = (m != m) ? m : (shift ? m + log(acc) : log(acc)); break;
      default: break;
    }
    y[i] = acc;
  }
}

}  // namespace

int reduce(ReduceOp op, int dt, const void* x, void* y, int64_t outer, int64_t r, int64_t inner, StreamT stream) {
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (outer * inner == 0) return 0;
  const bool rows = inner == 1 && outer < 2147483647LL;
  KILNRT_DT_SWITCH(dt, if (rows) reduce_rows_kernel<T><<<rows_grid(outer), kThreads, 0, s>>>(op, (const T*)x, (T*)y, r);
                   else reduce_cols_kernel<T>
                   <<<blocks_for(outer * inner), kThreads, 0, s>>>(op, (const T*)x, (T*)y, outer, r, inner))
  return launch_status();
}
int reduce_f64(ReduceOp op, const double* x, double* y, int64_t outer, int64_t r, int64_t inner, StreamT stream) {
  if (outer * inner == 0) return 0;
  reduce_f64_kernel<<<blocks_for(outer * inner), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(op, x, y, outer,
                                                                                                        r, inner);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
