// ONNX RotaryEmbedding (opset 23): rotates pairs of the first rotary_embedding_dim features of each head by the
// angle whose cosine / sine the caches hold. Input [B, H, S, D] or [B, S, H*D] (num_heads splits the latter).
// Caches: [max_position, rd/2] indexed by position_ids [B, S], or without position_ids [B, S, rd/2].
// Pairs: interleaved (x[2k], x[2k+1]) or halves (x[k], x[k + rd/2]); y1 = cos*x1 - sin*x2, y2 = sin*x1 + cos*x2.
// Features past rd are copied. Math in float32 (double for the products), I/O in the model's float dtype.
#include <vector>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

void rotary_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  Tensor x = to_float32(ctx.input(0), node, "input");
  Tensor cos_t = to_float32(ctx.input(1), node, "cos_cache");
  Tensor sin_t = to_float32(ctx.input(2), node, "sin_cache");
  const Shape& s = x.shape();
  KILNRT_CHECK(s.size() == 3 || s.size() == 4, kInvalidModel, node.describe(),
               "input must be [B, H, S, D] or [B, S, H*D], got " << shape_to_string(s));
  const bool three_d = s.size() == 3;
  const int64_t batch = s[0];
  int64_t heads, seq, head;
  if (three_d) {
    heads = node.attr_int("num_heads", 0);
    KILNRT_CHECK(heads > 0 && s[2] % heads == 0, kInvalidModel, node.describe(),
                 "3-D input " << shape_to_string(s) << " needs a num_heads attribute dividing its last dim");
    seq = s[1];
    head = s[2] / heads;
  } else {
    heads = s[1];
    seq = s[2];
    head = s[3];
  }
  int64_t rd = node.attr_int("rotary_embedding_dim", 0);
  if (rd == 0) rd = head;
  KILNRT_CHECK(rd > 0 && rd <= head && rd % 2 == 0, kInvalidModel, node.describe(),
               "rotary_embedding_dim " << rd << " must be even and at most the head size " << head);
  const int64_t half = rd / 2;
  const bool interleaved = node.attr_int("interleaved", 0) != 0;
  std::vector<int64_t> pos;
  const Shape& cs = cos_t.shape();
  KILNRT_CHECK(cs == sin_t.shape() && !cs.empty() && cs.back() == half, kInvalidModel, node.describe(),
               "cos_cache " << shape_to_string(cs) << " / sin_cache " << shape_to_string(sin_t.shape())
                            << " must match, with last dim rotary_embedding_dim/2 = " << half);
  if (ctx.has_input(3)) {
    pos = tensor_to_int64s(ctx.input(3));
    KILNRT_CHECK(cs.size() == 2 && static_cast<int64_t>(pos.size()) == batch * seq, kInvalidModel, node.describe(),
                 "with position_ids [B, S] the caches must be [max_position, rd/2], got " << shape_to_string(cs));
    for (int64_t p : pos)
      KILNRT_CHECK(p >= 0 && p < cs[0], kInvalidArgument, node.describe(),
                   "position id " << p << " is outside the cache of " << cs[0] << " positions");
  } else {
    KILNRT_CHECK(cs.size() == 3 && cs[0] == batch && cs[1] == seq, kInvalidModel, node.describe(),
                 "without position_ids the caches must be [B, S, rd/2] = [" << batch << ", " << seq << ", " << half
                                                                            << "], got " << shape_to_string(cs));
  }
  Tensor y = Tensor::empty(DType::kFloat32, s);
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const float* cp = cos_t.data<float>();
  const float* sp = sin_t.data<float>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < seq; ++t) {
        const int64_t base = three_d ? ((b * seq + t) * heads + h) * head : ((b * heads + h) * seq + t) * head;
        const int64_t row = pos.empty() ? b * seq + t : pos[b * seq + t];
        const float* xr = xp + base;
        float* yr = yp + base;
        for (int64_t k = 0; k < half; ++k) {
          const int64_t i1 = interleaved ? 2 * k : k, i2 = interleaved ? 2 * k + 1 : k + half;
          const double c = cp[row * half + k], sn = sp[row * half + k];
          yr[i1] = static_cast<float>(c * xr[i1] - sn * xr[i2]);
          yr[i2] = static_cast<float>(sn * xr[i1] + c * xr[i2]);
        }
        for (int64_t k = rd; k < head; ++k) yr[k] = xr[k];
      }
  ctx.outputs[0] = from_float32(y, dtype);
}

void infer_rotary(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (x.has_shape)
    ctx.set_output(0, x.dtype, x.shape);
  else
    ctx.set_output_rank_unknown(0, x.dtype);
}

}  // namespace

KILNRT_REGISTER_OP(OpSchema{"", "RotaryEmbedding", 23, 1000, infer_rotary, rotary_cpu, float_dtypes(),
                            "rotates feature pairs by cos/sin caches (interleaved or halves; position_ids)"});

}  // namespace kilnrt::ops::nn
