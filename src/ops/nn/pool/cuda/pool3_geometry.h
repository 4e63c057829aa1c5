// The window geometry of a 1-D..3-D pooling node as the CUDA pooling kernels take it: ops/nn/pool/cuda
// max_pool_indices_kernels.h Pool3 and the LpPool kernels' LpPool3 (planes = N * C; input, output, kernel, stride,
// dilation and begin pad per spatial dim, padded to 3 dims with leading 1s like ops::nn::Geometry3). Used by the
// LpPool layer and max_pool_indices_layer.cc (MaxPool with Indices / on 8-bit integers).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "kilnrt/tensor.h"
#include "ops/nn/nn_common.h"

namespace kilnrt::backends::cuda {

// Reads the node's pooling attributes (kernel_shape, strides, pads / auto_pad, dilations, ceil_mode) for an input
// of shape [N, C, spatial...] (1 to 3 spatial dims: the caller checks), fills the kernel struct `q` (any struct with
// the fields planes, in, out, k, s, d, pad) and returns the output shape the node must produce.
template <class Pool3>
Shape to_pool3(const ir::Node& node, const Shape& x_shape, Pool3& q) {
  const int nd = static_cast<int>(x_shape.size()) - 2;
  ops::nn::SpatialParams p = ops::nn::read_spatial_params(node, nd, {}, true);
  const std::vector<int64_t> in_sp(x_shape.begin() + 2, x_shape.end());
  const std::vector<int64_t> out_sp = ops::nn::pooled_output_dims(p, in_sp, node);
  const ops::nn::Geometry3 g = ops::nn::make_geometry3(p, in_sp, out_sp, node);
  q.planes = x_shape[0] * x_shape[1];
  for (int i = 0; i < 3; ++i) {
    q.in[i] = g.in[i];
    q.out[i] = g.out[i];
    q.k[i] = g.k[i];
    q.s[i] = g.s[i];
    q.d[i] = g.d[i];
    q.pad[i] = g.pad_begin[i];
  }
  Shape out{x_shape[0], x_shape[1]};
  out.insert(out.end(), out_sp.begin(), out_sp.end());
  return out;
}

}  // namespace kilnrt::backends::cuda
