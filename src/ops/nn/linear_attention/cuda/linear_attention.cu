// The LinearAttention kernel (linear_attention_kernels.h), in its CPU reference's arithmetic (double accumulation in
// the reference's order, the same float roundings), so that results match it to the last bit or nearly (FMA contraction
// and the device exp may differ in the last ulp).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/linear_attention/cuda/linear_attention_kernels.h"

namespace kilnrt::cuda::kernels::linatt {
namespace {

using namespace launch_common;

// ---- LinearAttention: one thread per (pair, state column m); column m of the state only ever meets column m -------
__global__ void linear_attention_kernel(LinearAttentionArgs a, int64_t pair_begin, int64_t pairs) {
  const int64_t dk = a.dk, dv = a.dv, group = a.hq / a.hkv;
  KILNRT_GRID_LOOP(i, pairs * dv) {
    const int64_t local = i / dv, m = i % dv;
    const int64_t pair = pair_begin + local;
    const int64_t b = pair / a.hkv, h = pair % a.hkv;
    double* s = a.state + local * dk * dv + m;  // s[d * dv] is state[d][m]
    for (int64_t d = 0; d < dk; ++d) s[d * dv] = a.past ? static_cast<double>(a.past[(pair * dk + d) * dv + m]) : 0.0;
    for (int64_t t = 0; t < a.steps; ++t) {
      const int64_t bt_row = b * a.steps + t;
      const float* kt = a.k + bt_row * a.hkv * dk + h * dk;
      double vt = a.v[bt_row * a.hkv * dv + h * dv + m];
      if (a.decay) {
        const float* g = a.decay + bt_row * a.decay_last;
        for (int64_t d = 0; d < dk; ++d) {
          const double f = exp(static_cast<double>(a.decay_last == a.hkv ? g[h] : g[h * dk + d]));
          s[d * dv] *= f;
        }
      }
      if (a.beta) {
        const double beta = a.beta[bt_row * a.beta_last + (a.beta_last == 1 ? 0 : h)];
        double r = 0.0;
        for (int64_t d = 0; d < dk; ++d) r += s[d * dv] * kt[d];
        vt = beta * (vt - r);
      }
      for (int64_t d = 0; d < dk; ++d) s[d * dv] += kt[d] * vt;
      for (int64_t j = 0; j < group; ++j) {
        const int64_t qh = h * group + j;
        const float* qt = a.q + bt_row * a.hq * dk + qh * dk;
        double acc = 0.0;
        for (int64_t d = 0; d < dk; ++d) acc += qt[d] * s[d * dv];
        a.y[bt_row * a.hq * dv + qh * dv + m] = static_cast<float>(a.scale * acc);
      }
    }
    if (a.present)
      for (int64_t d = 0; d < dk; ++d) a.present[(pair * dk + d) * dv + m] = static_cast<float>(s[d * dv]);
  }
}

}  // namespace

int linear_attention(const LinearAttentionArgs& a, int64_t pair_begin, int64_t pair_end, StreamT stream) {
  const int64_t pairs = pair_end - pair_begin;
  if (pairs <= 0 || a.dv <= 0 || a.hkv <= 0 || a.hq % a.hkv != 0) return 0;
  linear_attention_kernel<<<blocks_for(pairs * a.dv), kThreads, 0, stream>>>(a, pair_begin, pairs);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::linatt
