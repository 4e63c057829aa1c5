// Private helpers shared by the CPU neural-network ops (src/ops/nn): float32 conversion of float16/bfloat16
// inputs, a checked CBLAS sgemm wrapper, and the spatial geometry (kernel, strides, pads, dilations, auto_pad) of
// convolutions and pools, for both concrete and symbolic shapes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kilnrt/tensor.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {

// The dtypes the nn CPU kernels handle: float16 and bfloat16 are computed in float32 and converted back.
const std::vector<DType>& float_dtypes();

// Throws kUnsupported naming the node unless `t` is float32, float16 or bfloat16.
void check_float_input(const Tensor& t, const ir::Node& node, const char* input_name);
// `t` as float32: the same buffer when already float32, otherwise a converted copy.
Tensor to_float32(const Tensor& t, const ir::Node& node, const char* input_name);
// A float32 tensor converted to `dtype` (float32: returned as is).
Tensor from_float32(const Tensor& t, DType dtype);

// C = alpha * op(A) * op(B) + beta * C, row-major, with op(A) M x K and op(B) K x N. Handles empty dims (K == 0
// scales C by beta) and checks that dims fit CBLAS's int. Must not be called inside an OpenMP parallel region.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const ir::Node& node);

// Geometry of a convolution or pool over `nd` spatial dims.
struct SpatialParams {
  int nd = 0;
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  // 2*nd: begin pads then end pads (resolved from auto_pad once the input is known)
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;

  int64_t effective_kernel(int i) const { return (kernel[i] - 1) * dilations[i] + 1; }
};

// Reads kernel_shape (or `kernel_from_weights` when the attribute is absent; pass {} when it is required), strides,
// dilations, pads, auto_pad and (when `allow_ceil_mode`) ceil_mode; validates them against `nd`.
SpatialParams read_spatial_params(const ir::Node& node, int nd, const std::vector<int64_t>& kernel_from_weights,
                                  bool allow_ceil_mode);

// Output size of one spatial dim for a convolution / pool of input size `in`; resolves SAME_*/VALID pads into
// params.pads. Throws kInvalidArgument naming the node when the output would be empty or negative.
int64_t pooled_output_dim(SpatialParams& params, int i, int64_t in, const ir::Node& node);
// All spatial output dims (and resolved pads) for the input spatial shape `in`.
std::vector<int64_t> pooled_output_dims(SpatialParams& params, const std::vector<int64_t>& in, const ir::Node& node);
// Symbolic version: an unknown input dim gives an unknown output dim.
ir::SymShape pooled_output_sym_dims(const SpatialParams& params, const ir::SymShape& in_spatial, const ir::Node& node);

// Product of dims [begin, end) of a shape.
int64_t dims_product(const Shape& shape, int64_t begin, int64_t end);

// Pads a spatial geometry of nd <= 3 dims to exactly 3 dims (leading dims of size 1), so kernels need one code
// path for 1-D, 2-D and 3-D.
struct Geometry3 {
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1};
  int64_t d[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0};
  int64_t pad_end[3] = {0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};
Geometry3 make_geometry3(const SpatialParams& params, const std::vector<int64_t>& in_spatial,
                         const std::vector<int64_t>& out_spatial, const ir::Node& node);

// [lo, hi) range of output positions o with 0 <= o*stride + offset < in_size (offset may be negative).
void valid_output_range(int64_t offset, int64_t stride, int64_t in_size, int64_t out_size, int64_t* lo, int64_t* hi);

}  // namespace kilnrt::ops::nn
