// ONNX AffineGrid (opset 20): sampling grids for GridSample from affine matrices.
//   theta [N, 2, 3] with size [N, C, H, W] -> grid [N, H, W, 2]; theta [N, 3, 4] with size [N, C, D, H, W] ->
//   grid [N, D, H, W, 3]. Each point's normalised coordinates (x along W, y along H, z along D; in [-1, 1]:
//   align_corners=1: -1 + 2i/(n-1), else -1 + (2i+1)/n) are multiplied as (x, y[, z], 1) by theta[n].
// Math in double, I/O in theta's float dtype.
#include <vector>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

double grid_coord(int64_t i, int64_t n, bool align_corners) {
  if (align_corners) return n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) : -1.0;
  return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n);
}

void affine_grid_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  Tensor theta = to_float32(ctx.input(0), node, "theta");
  const std::vector<int64_t> size = tensor_to_int64s(ctx.input(1));
  KILNRT_CHECK(size.size() == 4 || size.size() == 5, kInvalidModel, node.describe(),
               "size must be [N, C, H, W] or [N, C, D, H, W], got " << size.size() << " values");
  const int64_t nd = static_cast<int64_t>(size.size()) - 2;  // 2 or 3 spatial dims
  const int64_t n = size[0];
  KILNRT_CHECK(theta.shape() == (Shape{n, nd, nd + 1}), kInvalidModel, node.describe(),
               "theta has shape " << shape_to_string(theta.shape()) << ", expected [" << n << ", " << nd << ", "
                                  << nd + 1 << "]");
  for (int64_t d = 2; d < static_cast<int64_t>(size.size()); ++d)
    KILNRT_CHECK(size[d] >= 0, kInvalidModel, node.describe(), "negative size " << size[d]);
  const bool align = node.attr_int("align_corners", 0) != 0;
  const int64_t depth = nd == 3 ? size[2] : 1, height = size[nd == 3 ? 3 : 2], width = size[nd == 3 ? 4 : 3];
  Shape out_shape{n};
  if (nd == 3) out_shape.push_back(depth);
  out_shape.push_back(height);
  out_shape.push_back(width);
  out_shape.push_back(nd);
  Tensor y = Tensor::empty(DType::kFloat32, out_shape);
  float* yp = y.data<float>();
  const float* tp = theta.data<float>();
  int64_t o = 0;
  for (int64_t b = 0; b < n; ++b) {
    const float* t = tp + b * nd * (nd + 1);
    for (int64_t z = 0; z < depth; ++z)
      for (int64_t yy = 0; yy < height; ++yy)
        for (int64_t x = 0; x < width; ++x) {
          const double p[4] = {grid_coord(x, width, align), grid_coord(yy, height, align),
                               nd == 3 ? grid_coord(z, depth, align) : 1.0, 1.0};
          for (int64_t r = 0; r < nd; ++r) {
            double acc = 0.0;
            for (int64_t c = 0; c <= nd; ++c) acc += t[r * (nd + 1) + c] * p[c == nd ? 3 : c];
            yp[o++] = static_cast<float>(acc);
          }
        }
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

void infer_affine_grid(ShapeContext& ctx) {
  const ir::TensorType& theta = ctx.input(0);
  if (const Tensor* v = ctx.value(1)) {
    const std::vector<int64_t> size = tensor_to_int64s(*v);
    KILNRT_CHECK(size.size() == 4 || size.size() == 5, kInvalidModel, ctx.node.describe(),
                 "size must be [N, C, H, W] or [N, C, D, H, W]");
    ir::SymShape out{ir::Dim(size[0])};
    for (size_t d = 2; d < size.size(); ++d) out.push_back(ir::Dim(size[d]));
    out.push_back(ir::Dim(static_cast<int64_t>(size.size()) - 2));
    ctx.set_output(0, theta.dtype, out);
    return;
  }
  const ir::TensorType& st = ctx.input(1);
  if (st.has_shape && st.shape.size() == 1 && st.shape[0].known()) {
    ir::SymShape out(static_cast<size_t>(st.shape[0].value - 1));
    out.back() = ir::Dim(st.shape[0].value - 2);
    ctx.set_output(0, theta.dtype, out);
  } else {
    ctx.set_output_rank_unknown(0, theta.dtype);
  }
}

}  // namespace

KILNRT_REGISTER_OP(OpSchema{"", "AffineGrid", 20, 1000, infer_affine_grid, affine_grid_cpu, float_dtypes(),
                            "2-D / 3-D sampling grid theta * (x, y[, z], 1) for GridSample (align_corners)"});

}  // namespace kilnrt::ops::nn
