// MaxPool over 1-D..3-D with the Indices output or on 8-bit integers (max_pool_indices_kernels.h): one thread per
// output, the CPU reference's window order and tie rule.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/pool/cuda/max_pool_indices_kernels.h"

namespace kilnrt::cuda::kernels::maxpool {
namespace {

using namespace launch_common;

// ---- MaxPool -------------------------------------------------------------------------------------------------------
__device__ __forceinline__ float load_pool(const void* x, int dt, int64_t i) {
  if (dt == 1) return static_cast<float>(static_cast<const int8_t*>(x)[i]);
  if (dt == 2) return static_cast<float>(static_cast<const uint8_t*>(x)[i]);
  return static_cast<const float*>(x)[i];
}

__global__ void max_pool3_kernel(int dt, const void* x, void* y, int64_t* indices, bool column_major, Pool3 p) {
  const int64_t in_size = p.in[0] * p.in[1] * p.in[2], out_size = p.out[0] * p.out[1] * p.out[2];
  KILNRT_GRID_LOOP(e, p.planes * out_size) {
    const int64_t plane = e / out_size, o = e % out_size;
    const int64_t ow = o % p.out[2], oh = (o / p.out[2]) % p.out[1], od = o / (p.out[2] * p.out[1]);
    float best = -INFINITY;
    int64_t best_index = -1, best_col = 0;
    for (int64_t kd = 0; kd < p.k[0]; ++kd) {
      const int64_t id = od * p.s[0] - p.pad[0] + kd * p.d[0];
      if (id < 0 || id >= p.in[0]) continue;
      for (int64_t kh = 0; kh < p.k[1]; ++kh) {
        const int64_t ih = oh * p.s[1] - p.pad[1] + kh * p.d[1];
        if (ih < 0 || ih >= p.in[1]) continue;
        const int64_t row = (id * p.in[1] + ih) * p.in[2];
        for (int64_t kw = 0; kw < p.k[2]; ++kw) {
          const int64_t iw = ow * p.s[2] - p.pad[2] + kw * p.d[2];
          if (iw < 0 || iw >= p.in[2]) continue;
          const float v = load_pool(x, dt, plane * in_size + row + iw);
          if (v > best || best_index < 0 || (v != v && best == best)) {  // NaN propagates, as on the CPU
            best = v;
            best_index = row + iw;
            best_col = id + p.in[0] * (ih + p.in[1] * iw);
          }
        }
      }
    }
    if (dt == 0) {
      static_cast<float*>(y)[e] = best;
    } else {
      const float lo = dt == 1 ? -128.f : 0.f, hi = dt == 1 ? 127.f : 255.f;
      const float v = fminf(hi, fmaxf(lo, best));
      if (dt == 1)
        static_cast<int8_t*>(y)[e] = static_cast<int8_t>(v);
      else
        static_cast<uint8_t*>(y)[e] = static_cast<uint8_t>(v);
    }
    if (indices) indices[e] = best_index < 0 ? 0 : plane * in_size + (column_major ? best_col : best_index);
  }
}

}  // namespace

int max_pool3(int dt, const void* x, void* y, int64_t* indices, bool column_major, const Pool3& p, StreamT stream) {
  if (dt < 0 || dt > 2) return static_cast<int>(cudaErrorInvalidValue);
  const int64_t total = p.planes * p.out[0] * p.out[1] * p.out[2];
  if (total <= 0) return 0;
  max_pool3_kernel<<<blocks_for(total), kThreads, 0, stream>>>(dt, x, y, indices, column_major, p);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::maxpool
