// Helpers of the CUDA layers of several op folders: input dtype checks (dtype_in, sized), a Shape as kernels::Dims,
// a device-to-device copy on the stream, the [outer, axis, inner] split of a shape, and a factory of layers built
// from the node alone.
#pragma once
#include <initializer_list>
#include <memory>
#include <string>

#include "cuda/kernels/dims.h"
#include "cuda/kernels/kernels.h"
#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

inline std::string dtype_in(const ir::Node& n, const ir::Graph& g, size_t input, std::initializer_list<DType> ok) {
  if (n.inputs.size() <= input || n.inputs[input].empty()) return "missing input";
  const DType t = value_dtype(g, n.inputs[input]);
  for (DType o : ok)
    if (t == o) return "";
  return std::string("dtype ") + dtype_name(t) + " of input " + std::to_string(input) + " (no CUDA kernel)";
}

inline kilnrt::cuda::kernels::Dims to_dims(const Shape& s, const std::string& name) {
  KILNRT_CHECK(s.size() <= static_cast<size_t>(kilnrt::cuda::kernels::kMaxDims), kUnsupported, name,
               "rank " << s.size() << " exceeds the CUDA backend's limit of " << kilnrt::cuda::kernels::kMaxDims);
  kilnrt::cuda::kernels::Dims d;
  d.rank = static_cast<int>(s.size());
  for (size_t i = 0; i < s.size(); ++i) d.d[i] = s[i];
  return d;
}

inline void device_copy(void* dst, const void* src, int64_t n, size_t elem, StreamT stream, const std::string& name) {
  if (n <= 0 || dst == src) return;
  kilnrt::cuda::kernels::Strided s;
  s.rank = 1;
  s.dims[0] = n;
  s.out_strides[0] = s.in_strides[0] = 1;
  check_launch(kilnrt::cuda::kernels::strided_copy(dst, src, s, elem, stream), name, "strided_copy");
}

// [outer, axis dim, inner] split of `s` at `axis`.
inline void split3(const Shape& s, int axis, int64_t* outer, int64_t* mid, int64_t* inner) {
  *outer = *inner = 1;
  for (int d = 0; d < axis; ++d) *outer *= s[d];
  *mid = s[axis];
  for (size_t d = axis + 1; d < s.size(); ++d) *inner *= s[d];
}

template <class L>
inline LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

inline std::string sized(const ir::Node& n, const ir::Graph& g, size_t input = 0) {
  if (n.inputs.size() <= input) return "missing input";
  const size_t sz = dtype_size(value_dtype(g, n.inputs[input]));
  return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
}

}  // namespace kilnrt::backends::cuda
