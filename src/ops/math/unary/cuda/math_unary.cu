// Float32 math unary kernel (math_unary_kernels.h): one thread per element, grid-stride loop.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/math/unary/cuda/math_unary_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void xunary_kernel(XUnary op, const void* xv, void* yv, int64_t n, float a, float b) {
  KILNRT_GRID_LOOP(i, n) {
    if (op == XUnary::kNot) {
      static_cast<uint8_t*>(yv)[i] = static_cast<const uint8_t*>(xv)[i] ? 0 : 1;
      continue;
    }
    const float v = static_cast<const float*>(xv)[i];
    if (op == XUnary::kIsNaN) {
      static_cast<uint8_t*>(yv)[i] = v != v;
      continue;
    }
    if (op == XUnary::kIsInf) {
      static_cast<uint8_t*>(yv)[i] = (isinf(v) && ((v > 0.f && a != 0.f) || (v < 0.f && b != 0.f))) ? 1 : 0;
      continue;
    }
    float r;
    switch (op) {
      case XUnary::kTan: r = tanf(v); break;
      case XUnary::kAsin: r = asinf(v); break;
      case XUnary::kAcos: r = acosf(v); break;
      case XUnary::kAtan: r = atanf(v); break;
      case XUnary::kSinh: r = sinhf(v); break;
      case XUnary::kCosh: r = coshf(v); break;
      case XUnary::kAsinh: r = asinhf(v); break;
      case XUnary::kAcosh: r = acoshf(v); break;
      case XUnary::kAtanh: r = atanhf(v); break;
      case XUnary::kShrink: r = v < -a ? v + b : (v > a ? v - b : (v != v ? v : 0.f)); break;
      case XUnary::kScale: r = v * a; break;
      default: r = v; break;
    }
    static_cast<float*>(yv)[i] = r;
  }
}

}  // namespace

int xunary(XUnary op, const void* x, void* y, int64_t n, float a, float b, StreamT stream) {
  if (n <= 0) return 0;
  xunary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(op, x, y, n, a, b);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
