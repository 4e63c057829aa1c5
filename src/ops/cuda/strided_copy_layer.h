// Helpers of the CUDA layers that move data with kernels::strided_copy or kernels::gather (Transpose and Expand in
// shape/reshape_ops, Concat and Split in shape/concat_split, Slice and Gather in shape/slice_gather): row-major
// strides, the rank limit of the strided kernels, and the supports() check for any 1-, 2-, 4- or 8-byte dtype.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

inline std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

inline void check_rank(size_t rank, const std::string& name) {
  KILNRT_CHECK(rank <= static_cast<size_t>(kilnrt::cuda::kernels::kMaxDims), kUnsupported, name,
               "rank " << rank << " exceeds the CUDA backend's limit of " << kilnrt::cuda::kernels::kMaxDims);
}

inline std::string any_dtype(const ir::Node& n, const ir::Graph& g) {
  const size_t sz = dtype_size(value_dtype(g, n.inputs.at(0)));
  return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
}

}  // namespace kilnrt::backends::cuda
