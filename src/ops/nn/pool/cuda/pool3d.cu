// 3-D MaxPool / AveragePool (pool3d_kernels.h): one thread per output element, the taps of its window gathered.
// Mirrors the CPU reference (src/ops/nn/pool/pool.cc).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/pool/cuda/pool3d_kernels.h"

namespace kilnrt::cuda::kernels::vol {
namespace {

using namespace launch_common;

// Taps j < k at start + j * d inside [lo, hi).
__device__ int64_t taps_inside(int64_t start, int64_t k, int64_t d, int64_t lo, int64_t hi) {
  int64_t c = 0;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t v = start + j * d;
    c += (v >= lo && v < hi) ? 1 : 0;
  }
  return c;
}

__global__ void pool3d_kernel(const float* x, float* y, Pool3 p) {
  const int64_t out_size = p.out[0] * p.out[1] * p.out[2], in_size = p.in[0] * p.in[1] * p.in[2];
  KILNRT_GRID_LOOP(i, p.planes * out_size) {
    const int64_t plane = i / out_size, r = i % out_size;
    const int64_t o2 = r % p.out[2], o1 = (r / p.out[2]) % p.out[1], o0 = r / (p.out[2] * p.out[1]);
    const int64_t st0 = o0 * p.s[0] - p.pad_begin[0], st1 = o1 * p.s[1] - p.pad_begin[1],
                  st2 = o2 * p.s[2] - p.pad_begin[2];
    const float* xp = x + plane * in_size;
    float best = -INFINITY, sum = 0.f;
    for (int64_t j0 = 0; j0 < p.k[0]; ++j0) {
      const int64_t i0 = st0 + j0 * p.d[0];
      if (i0 < 0 || i0 >= p.in[0]) continue;
      for (int64_t j1 = 0; j1 < p.k[1]; ++j1) {
        const int64_t i1 = st1 + j1 * p.d[1];
        if (i1 < 0 || i1 >= p.in[1]) continue;
        const float* row = xp + (i0 * p.in[1] + i1) * p.in[2];
        for (int64_t j2 = 0; j2 < p.k[2]; ++j2) {
          const int64_t i2 = st2 + j2 * p.d[2];
          if (i2 < 0 || i2 >= p.in[2]) continue;
          const float v = row[i2];
          if (p.max)
            best = (v > best || v != v) ? v : best;  // NaN propagates: nothing replaces a NaN best
          else
            sum += v;
        }
      }
    }
    if (p.max) {
      y[i] = best;
    } else {
      int64_t c = 1;
      const int64_t st[3] = {st0, st1, st2};
      for (int a = 0; a < 3; ++a) {
        const int64_t lo = p.count_include_pad ? -p.pad_begin[a] : 0;
        const int64_t hi = p.count_include_pad ? p.in[a] + p.pad_end[a] : p.in[a];
        c *= taps_inside(st[a], p.k[a], p.d[a], lo, hi);
      }
      y[i] = c > 0 ? sum / static_cast<float>(c) : 0.f;
    }
  }
}

}  // namespace

int pool3d_f32(const float* x, float* y, const Pool3& p, StreamT stream) {
  const int64_t total = p.planes * p.out[0] * p.out[1] * p.out[2];
  if (total <= 0) return 0;
  pool3d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, p);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::vol
