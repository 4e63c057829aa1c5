// Unary kernels (unary_kernels.h): float32 / float16 / bfloat16 storage through the fast path (elementwise_fast.cu)
// or, beyond 2^31 elements, the generic kernel here, both on the shared per-element math (elementwise_math.cuh), and
// float64 storage and math for a subset of the ops.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/elementwise_fast.h"
#include "cuda/kernels/elementwise_math.cuh"
#include "ops/math/unary/cuda/unary_kernels.h"
#include "cuda/kernels/elementwise_access.cuh"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

// Generic unary: only for more than 2^31 elements (unary_fast covers the rest).
template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* y, int64_t n, float a, float b) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    stf(y, i, elementwise_math::unary_math(op, ldf(x, i), a, b));
}

// float64 storage and math for the unary ops unary_f64_op accepts.
__global__ void unary_f64_kernel(UnaryOp op, const double* x, double* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double v = x[i];
    double r;
    switch (op) {
      case UnaryOp::kExp: r = exp(v); break;
      case UnaryOp::kLog: r = log(v); break;
      case UnaryOp::kSqrt: r = sqrt(v); break;
      case UnaryOp::kNeg: r = -v; break;
      case UnaryOp::kAbs: r = fabs(v); break;
      case UnaryOp::kReciprocal: r = 1.0 / v; break;
      case UnaryOp::kFloor: r = floor(v); break;
      case UnaryOp::kCeil: r = ceil(v); break;
      case UnaryOp::kRelu: r = v < 0.0 ? 0.0 : v; break;
      case UnaryOp::kSin: r = sin(v); break;
      case UnaryOp::kCos: r = cos(v); break;
      case UnaryOp::kTanh: r = tanh(v); break;
      case UnaryOp::kSigmoid: r = 1.0 / (1.0 + exp(-v)); break;
      default: r = v; break;
    }
    y[i] = r;
  }
}

}  // namespace

int unary(UnaryOp op, int dt, const void* x, void* y, int64_t n, float a, float b, StreamT stream) {
  if (n == 0) return 0;
  if (const int fast = unary_fast(op, dt, x, y, n, a, b, stream); fast >= 0) return fast;
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (dt) {
    case 0: unary_kernel<float><<<blocks_for(n), kThreads, 0, st>>>(op, (const float*)x, (float*)y, n, a, b); break;
    case 1: unary_kernel<__half><<<blocks_for(n), kThreads, 0, st>>>(op, (const __half*)x, (__half*)y, n, a, b); break;
    case 2:
      unary_kernel<__nv_bfloat16>
          <<<blocks_for(n), kThreads, 0, st>>>(op, (const __nv_bfloat16*)x, (__nv_bfloat16*)y, n, a, b);
      break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}
bool unary_f64_op(UnaryOp op) {
  switch (op) {
    case UnaryOp::kIdentity:
    case UnaryOp::kExp:
    case UnaryOp::kLog:
    case UnaryOp::kSqrt:
    case UnaryOp::kNeg:
    case UnaryOp::kAbs:
    case UnaryOp::kReciprocal:
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRelu:
    case UnaryOp::kSin:
    case UnaryOp::kCos:
    case UnaryOp::kTanh:
    case UnaryOp::kSigmoid: return true;
    default: return false;
  }
}
int unary_f64(UnaryOp op, const double* x, double* y, int64_t n, StreamT stream) {
  if (n == 0) return 0;
  if (!unary_f64_op(op)) return static_cast<int>(cudaErrorInvalidValue);
  unary_f64_kernel<<<blocks_for(n), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(op, x, y, n);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
