// Direct Einsum kernel (einsum_kernels.h): one thread per output element sums the products over the contracted
// labels.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/math/einsum/cuda/einsum_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

struct EinsumPtrs {
  const void* p[kEinsumInputs];
};

template <typename T>
__global__ void einsum_kernel(EinsumPtrs in, T* y, EinsumPlan p, int64_t total, int64_t sum_total) {
  KILNRT_GRID_LOOP(i, total) {
    int64_t base[kEinsumInputs] = {};
    int64_t rem = i;
    for (int d = p.out_rank - 1; d >= 0; --d) {
      const int64_t c = rem % p.out_dims[d];
      rem /= p.out_dims[d];
      for (int k = 0; k < p.n_inputs; ++k) base[k] += c * p.out_strides[k][d];
    }
    T acc = T(0);
    for (int64_t s = 0; s < sum_total; ++s) {
      int64_t off[kEinsumInputs];
      for (int k = 0; k < p.n_inputs; ++k) off[k] = base[k];
      int64_t r = s;
      for (int d = p.sum_rank - 1; d >= 0; --d) {
        const int64_t c = r % p.sum_dims[d];
        r /= p.sum_dims[d];
        for (int k = 0; k < p.n_inputs; ++k) off[k] += c * p.sum_strides[k][d];
      }
      T prod = T(1);
      for (int k = 0; k < p.n_inputs; ++k) prod *= static_cast<const T*>(in.p[k])[off[k]];
      acc += prod;
    }
    y[i] = acc;
  }
}

}  // namespace

int einsum(const void* const* inputs, void* y, const EinsumPlan& p, int dtype, StreamT stream) {
  if (p.n_inputs < 1 || p.n_inputs > kEinsumInputs) return static_cast<int>(cudaErrorInvalidValue);
  int64_t total = 1, sum_total = 1;
  for (int d = 0; d < p.out_rank; ++d) total *= p.out_dims[d];
  for (int d = 0; d < p.sum_rank; ++d) sum_total *= p.sum_dims[d];
  if (total <= 0) return 0;
  EinsumPtrs ptrs{};
  for (int k = 0; k < p.n_inputs; ++k) ptrs.p[k] = inputs[k];
  if (dtype == 0)
    einsum_kernel<float><<<blocks_for(total), kThreads, 0, stream>>>(ptrs, static_cast<float*>(y), p, total, sum_total);
  else if (dtype == 6)
    einsum_kernel<double>
        <<<blocks_for(total), kThreads, 0, stream>>>(ptrs, static_cast<double*>(y), p, total, sum_total);
  else
    return static_cast<int>(cudaErrorInvalidValue);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
