// ReduceMax (any) / ReduceMin (all) kernel of bool tensors (reduce_bool_kernels.h): one thread per output element
// walks its reduced elements, like the CPU reference (src/ops/reduce/reductions/reductions.cc).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/reduce/reductions/cuda/reduce_bool_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void reduce_bool_kernel(ReduceBool p, const uint8_t* x, uint8_t* y) {
  KILNRT_GRID_LOOP(o, p.n_out) {
    int64_t base = 0, rem = o;
    for (int d = p.kept_rank - 1; d >= 0; --d) {
      base += (rem % p.kept_dims[d]) * p.kept_strides[d];
      rem /= p.kept_dims[d];
    }
    bool acc = !p.is_max;
    for (int64_t k = 0; k < p.n_red; ++k) {
      int64_t off = base, r = k;
      for (int d = p.red_rank - 1; d >= 0; --d) {
        off += (r % p.red_dims[d]) * p.red_strides[d];
        r /= p.red_dims[d];
      }
      const bool v = x[off] != 0;
      if (p.is_max ? v : !v) {
        acc = v;
        break;
      }
    }
    y[o] = acc ? 1 : 0;
  }
}

}  // namespace

int reduce_bool(const ReduceBool& p, const uint8_t* x, uint8_t* y, StreamT stream) {
  if (p.n_out <= 0) return 0;
  if (p.kept_rank > kMaxDims || p.red_rank > kMaxDims) return static_cast<int>(cudaErrorInvalidValue);
  reduce_bool_kernel<<<blocks_for(p.n_out), kThreads, 0, stream>>>(p, x, y);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
