// A device-to-device byte copy on a stream (copy_bytes.h).
#include <cuda_runtime.h>

#include "cuda/kernels/copy_bytes.h"

namespace kilnrt::cuda::kernels {

int copy_bytes(void* dst, const void* src, size_t nbytes, StreamT stream) {
  if (nbytes == 0 || dst == src) return 0;
  return static_cast<int>(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream));
}

}  // namespace kilnrt::cuda::kernels
