// Kernel of RotaryEmbedding (rotary_embedding_kernels.h): one thread per output element, float32 data, double math.
#include <cuda_runtime.h>

#include <cmath>

#include "ops/nn/rotary_embedding/cuda/rotary_embedding_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void rotary_kernel(RotaryArgs a) {
  const int64_t n = a.batch * a.heads * a.seq * a.head, half = a.rd / 2;
  KILNRT_GRID_LOOP(e, n) {
    const int64_t d = e % a.head, r = e / a.head;
    int64_t b, t;
    if (a.three_d) {
      t = (r / a.heads) % a.seq;
      b = r / (a.heads * a.seq);
    } else {
      t = r % a.seq;
      b = r / (a.seq * a.heads);
    }
    if (d >= a.rd) {
      a.y[e] = a.x[e];
      continue;
    }
    const int64_t row = a.pos ? a.pos[b * a.seq + t] : b * a.seq + t;
    if (row < 0 || row >= a.cache_rows) {
      a.y[e] = NAN;
      continue;
    }
    int64_t kk, i1, i2;
    if (a.interleaved) {
      kk = d / 2;
      i1 = 2 * kk;
      i2 = i1 + 1;
    } else {
      kk = d < half ? d : d - half;
      i1 = kk;
      i2 = kk + half;
    }
    const float* xr = a.x + (e - d);
    const double c = a.cos[row * half + kk], s = a.sin[row * half + kk];
    const double x1 = xr[i1], x2 = xr[i2];
    a.y[e] = static_cast<float>(d == i1 ? c * x1 - s * x2 : s * x1 + c * x2);
  }
}

}  // namespace

int rotary(const RotaryArgs& a, StreamT stream) {
  const int64_t n = a.batch * a.heads * a.seq * a.head;
  if (n <= 0) return 0;
  rotary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
