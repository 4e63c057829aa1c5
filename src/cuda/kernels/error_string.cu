// kernels::error_string (kernels.h): the text of a launcher's status, for the layers' and executor's errors.
#include <cuda_runtime.h>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

const char* error_string(int status) { return cudaGetErrorString(static_cast<cudaError_t>(status)); }

}  // namespace kilnrt::cuda::kernels
