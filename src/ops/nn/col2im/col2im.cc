// ONNX Col2Im (opset 18): the inverse of im2col, N spatial dims. input [N, C * prod(block_shape), L] with
// L = prod over dims of the number of block positions ((image + pad_begin + pad_end - dil*(k-1) - 1) / stride + 1);
// image_shape and block_shape are constant 1-D inputs; attributes dilations, pads, strides. Output [N, C, *image]:
// each column value is added at its image position (positions that fall in the padding are dropped).
#include <vector>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

struct Col2ImParams {
  std::vector<int64_t> image, block, dil, pads, strides, blocks;  // blocks: block positions per dim
  int64_t k_size = 1, l_size = 1;
};

Col2ImParams col2im_params(const ir::Node& node, const std::vector<int64_t>& image, const std::vector<int64_t>& block) {
  Col2ImParams p;
  const size_t nd = image.size();
  KILNRT_CHECK(
      nd >= 1 && block.size() == nd, kInvalidModel, node.describe(),
      "image_shape and block_shape must have the same length >= 1 (got " << nd << " and " << block.size() << ")");
  p.image = image;
  p.block = block;
  p.dil = node.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  p.strides = node.attr_ints("strides", std::vector<int64_t>(nd, 1));
  p.pads = node.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  KILNRT_CHECK(p.dil.size() == nd && p.strides.size() == nd && p.pads.size() == 2 * nd, kInvalidModel, node.describe(),
               "dilations / strides need " << nd << " values and pads " << 2 * nd);
  for (size_t d = 0; d < nd; ++d) {
    KILNRT_CHECK(block[d] > 0 && p.dil[d] > 0 && p.strides[d] > 0 && image[d] >= 0, kInvalidModel, node.describe(),
                 "block_shape, dilations and strides must be positive");
    const int64_t n = (image[d] + p.pads[d] + p.pads[d + nd] - p.dil[d] * (block[d] - 1) - 1) / p.strides[d] + 1;
    KILNRT_CHECK(n >= 1, kInvalidModel, node.describe(), "no block position fits along spatial dim " << d);
    p.blocks.push_back(n);
    p.k_size *= block[d];
    p.l_size *= n;
  }
  return p;
}

void col2im_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  Tensor x = to_float32(ctx.input(0), node, "input");
  const Col2ImParams p = col2im_params(node, tensor_to_int64s(ctx.input(1)), tensor_to_int64s(ctx.input(2)));
  const Shape& s = x.shape();
  KILNRT_CHECK(s.size() == 3 && s[1] % p.k_size == 0 && s[2] == p.l_size, kInvalidModel, node.describe(),
               "input " << shape_to_string(s) << " must be [N, C * " << p.k_size << ", " << p.l_size << "]");
  const size_t nd = p.image.size();
  const int64_t batch = s[0], channels = s[1] / p.k_size;
  int64_t image_size = 1;
  Shape out_shape{batch, channels};
  for (int64_t v : p.image) {
    out_shape.push_back(v);
    image_size *= v;
  }
  Tensor y = Tensor::empty(DType::kFloat32, out_shape);
  float* yp = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) yp[i] = 0.f;
  const float* xp = x.data<float>();
  std::vector<int64_t> kidx(nd), bidx(nd);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t k = 0; k < p.k_size; ++k) {
        for (size_t d = nd, r = static_cast<size_t>(k); d-- > 0;) {
          kidx[d] = static_cast<int64_t>(r) % p.block[d];
          r /= static_cast<size_t>(p.block[d]);
        }
        const float* col = xp + ((n * channels + c) * p.k_size + k) * p.l_size;
        float* img = yp + (n * channels + c) * image_size;
        for (int64_t l = 0; l < p.l_size; ++l) {
          int64_t rem = l, off = 0;
          for (size_t d = nd; d-- > 0;) {
            bidx[d] = rem % p.blocks[d];
            rem /= p.blocks[d];
          }
          bool inside = true;
          for (size_t d = 0; d < nd && inside; ++d) {
            const int64_t pos = bidx[d] * p.strides[d] - p.pads[d] + kidx[d] * p.dil[d];
            inside = pos >= 0 && pos < p.image[d];
            off = off * p.image[d] + pos;
          }
          if (inside) img[off] += col[l];
        }
      }
  ctx.outputs[0] = from_float32(y, dtype);
}

void infer_col2im(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  const Tensor* image = ctx.value(1);
  const Tensor* block = ctx.value(2);
  if (!x.has_shape || x.shape.size() != 3) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  if (!image || !block) {
    const ir::TensorType& it = ctx.input(1);
    if (it.has_shape && it.shape.size() == 1 && it.shape[0].known())
      ctx.set_output(0, x.dtype, ir::SymShape(static_cast<size_t>(2 + it.shape[0].value)));
    else
      ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  const Col2ImParams p = col2im_params(ctx.node, tensor_to_int64s(*image), tensor_to_int64s(*block));
  ir::SymShape out{x.shape[0], x.shape[1].known() ? ir::Dim(x.shape[1].value / p.k_size) : ir::Dim()};
  for (int64_t v : p.image) out.push_back(ir::Dim(v));
  ctx.set_output(0, x.dtype, out);
}

}  // namespace

KILNRT_REGISTER_OP(OpSchema{"", "Col2Im", 18, 1000, infer_col2im, col2im_cpu, float_dtypes(),
                            "sums column blocks back into an N-D image (inverse of im2col)"});

}  // namespace kilnrt::ops::nn
