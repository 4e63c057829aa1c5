// OptionalHasElement's kernel (optional_kernels.h): one thread writes the bool.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/shape/optional_ops/cuda/optional_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

__global__ void fill_bool_kernel(bool* y, bool v) { *y = v; }

}  // namespace

int fill_bool(bool* y, bool v, StreamT stream) {
  fill_bool_kernel<<<1, 1, 0, stream>>>(y, v);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
