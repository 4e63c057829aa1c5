// The dimension limit of the RMSNormalization kernel (normalized dims: ops/nn/normalization/cuda/rms_norm_kernels.h)
// and of the CumProd kernel (rank: ops/reduce/arg_cumsum/cuda/cumprod_kernels.h). Plain C++.
#pragma once

namespace kilnrt::cuda::kernels::linatt {

constexpr int kMaxNormDims = 8;

}  // namespace kilnrt::cuda::kernels::linatt
