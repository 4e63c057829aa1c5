// ONNX CenterCropPad (opset 18): each axis in `axes` (default: all) becomes the length given by input `shape`:
// a longer axis is cropped around its centre (start (dim - len) / 2, rounded down), a shorter one is zero-padded
// around it (the input starts at (len - dim) / 2, rounded down). Any dtype: elements are moved, not computed.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "ops/math/elementwise.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {
namespace {

// The target length of every axis (the input's own length where `axes` leaves it out).
std::vector<int64_t> target_dims(const ir::Node& node, const Shape& in, const std::vector<int64_t>& lengths) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = node.attr_ints("axes", std::vector<int64_t>{});
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  KILNRT_CHECK(lengths.size() == axes.size(), kInvalidModel, node.describe(),
               "shape has " << lengths.size() << " values for " << axes.size() << " axes");
  std::vector<int64_t> out(in.begin(), in.end());
  for (size_t i = 0; i < axes.size(); ++i) {
    KILNRT_CHECK(lengths[i] >= 0, kInvalidModel, node.describe(), "negative target length " << lengths[i]);
    out[normalize_axis(axes[i], rank, node)] = lengths[i];
  }
  return out;
}

void center_crop_pad_cpu(CpuContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& in = x.shape();
  const std::vector<int64_t> out_dims = target_dims(ctx.node, in, tensor_to_int64s(ctx.input(1)));
  const Shape out_shape(out_dims.begin(), out_dims.end());
  Tensor y = Tensor::empty(x.dtype(), out_shape);
  const size_t rank = in.size();
  if (y.nbytes() > 0) std::memset(y.raw(), 0, y.nbytes());
  // Per axis: source start (crop), destination start (pad), copied length.
  std::vector<int64_t> src0(rank), dst0(rank), len(rank);
  for (size_t a = 0; a < rank; ++a) {
    src0[a] = in[a] > out_shape[a] ? (in[a] - out_shape[a]) / 2 : 0;
    dst0[a] = out_shape[a] > in[a] ? (out_shape[a] - in[a]) / 2 : 0;
    len[a] = std::min(in[a], out_shape[a]);
  }
  int64_t count = 1;
  for (size_t a = 0; a < rank; ++a) count *= len[a];
  if (count > 0) {
    dispatch_by_size(dtype_size(x.dtype()), ctx.node.describe(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = static_cast<const T*>(x.raw());
      T* dst = static_cast<T*>(y.raw());
      std::vector<int64_t> idx(rank, 0);
      for (int64_t n = 0; n < count; ++n) {
        int64_t si = 0, di = 0;
        for (size_t a = 0; a < rank; ++a) {
          si = si * in[a] + src0[a] + idx[a];
          di = di * out_shape[a] + dst0[a] + idx[a];
        }
        dst[di] = src[si];
        for (size_t a = rank; a-- > 0;) {
          if (++idx[a] < len[a]) break;
          idx[a] = 0;
        }
      }
    });
  }
  ctx.outputs[0] = y;
}

void infer_center_crop_pad(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) {
    ctx.set_output_rank_unknown(0, x.dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (const Tensor* v = ctx.value(1)) {
    std::vector<int64_t> axes = ctx.node.attr_ints("axes", std::vector<int64_t>{});
    if (axes.empty())
      for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
    const std::vector<int64_t> lengths = tensor_to_int64s(*v);
    KILNRT_CHECK(lengths.size() == axes.size(), kInvalidModel, ctx.node.describe(),
                 "shape has " << lengths.size() << " values for " << axes.size() << " axes");
    ir::SymShape out = x.shape;
    for (size_t i = 0; i < axes.size(); ++i) out[normalize_axis(axes[i], rank, ctx.node)] = ir::Dim(lengths[i]);
    ctx.set_output(0, x.dtype, out);
    return;
  }
  ctx.set_output(0, x.dtype, ir::SymShape(static_cast<size_t>(rank)));  // lengths known at run time only
}

}  // namespace

KILNRT_REGISTER_OP(OpSchema{
    "",
    "CenterCropPad",
    18,
    1000,
    infer_center_crop_pad,
    center_crop_pad_cpu,
    {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt64, DType::kInt32, DType::kUInt8, DType::kBool},
    "centre crop / zero pad of the given axes to the given lengths"});

}  // namespace kilnrt::ops
