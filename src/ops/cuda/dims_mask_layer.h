// A Shape as kernels::DimsMask (cuda/kernels/dims_mask.h), flags cleared, for the CUDA layers of
// MeanVarianceNormalization (ops/math/linalg/cuda) and MaxUnpool (ops/nn/detection/cuda).
#pragma once
#include "cuda/kernels/dims_mask.h"
#include "cuda/kernels/kernels.h"
#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

inline kilnrt::cuda::kernels::DimsMask to_dims_mask(const Shape& s, const ir::Node& node) {
  using kilnrt::cuda::kernels::kMaxDims;
  KILNRT_CHECK(static_cast<int>(s.size()) <= kMaxDims, kUnsupported, node.describe(),
               "rank " << s.size() << " exceeds the CUDA layer's " << kMaxDims);
  kilnrt::cuda::kernels::DimsMask d;
  d.rank = static_cast<int>(s.size());
  for (size_t i = 0; i < s.size(); ++i) d.d[i] = s[i];
  return d;
}

}  // namespace kilnrt::backends::cuda
