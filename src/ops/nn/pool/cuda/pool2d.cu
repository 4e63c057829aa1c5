// 2-D max / average pooling over NCHW (pool2d_kernels.h): one thread per output element, float32 math over
// float32 / 16-bit storage; NaN propagates through max.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/float_storage_math.cuh"
#include "ops/nn/pool/cuda/pool2d_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

template <typename T>
__global__ void pool2d_kernel(const T* x, T* y, Pool2d p) {
  const int64_t n = p.n * p.c * p.oh * p.ow;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, nc = i / (p.ow * p.oh);
    const T* plane = x + nc * p.h * p.w;
    float acc = p.max ? -INFINITY : 0.f;
    int count = 0;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.sh - p.ph + int64_t(ky) * p.dh;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int64_t ix = ox * p.sw - p.pw + int64_t(kx) * p.dw;
        const bool inside = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
        if (p.max) {
          if (inside) acc = nan_max(acc, ld(plane, iy * p.w + ix));
        } else {
          // count_include_pad counts padding positions inside the padded input, not the ceil_mode overhang.
          const bool in_padded = iy < p.h + p.ph && ix < p.w + p.pw;
          if (inside) acc += ld(plane, iy * p.w + ix);
          if (inside || (p.count_include_pad && in_padded)) ++count;
        }
      }
    }
    st(y, i, p.max ? acc : (count > 0 ? acc / float(count) : 0.f));
  }
}

}  // namespace

int pool2d(int dt, const void* x, void* y, const Pool2d& p, StreamT stream) {
  const int64_t n = p.n * p.c * p.oh * p.ow;
  if (n == 0) return 0;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  KILNRT_DT_SWITCH(dt, pool2d_kernel<T><<<blocks_for(n), kThreads, 0, s>>>((const T*)x, (T*)y, p))
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
