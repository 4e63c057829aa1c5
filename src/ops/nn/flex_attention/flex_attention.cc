// ai.onnx.preview FlexAttention (version 1) without its graph attributes: Y = softmax(Q K^T * scale) V.
//   Q [B, Hq, L, E], K [B, Hkv, S, E], V [B, Hkv, S, Ev]; query head h reads KV head h / (Hq / Hkv);
//   scale default 1/sqrt(E). score_mod / prob_mod (subgraphs applied to the scores / probabilities) are not run by
//   this kernel: a node carrying them is refused with a clear error. Math in double (float64 inputs included).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {
namespace {

void check_no_mod_graphs(const ir::Node& node) {
  for (const char* attr : {"score_mod", "prob_mod"})
    KILNRT_CHECK(!node.has_attr(attr), kUnsupported, node.describe(),
                 "FlexAttention's " << attr << " graph attribute is not supported (only the plain attention)");
}

void flex_attention_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  check_no_mod_graphs(node);
  const Tensor& qt = ctx.input(0);
  const Tensor& kt = ctx.input(1);
  const Tensor& vt = ctx.input(2);
  KILNRT_CHECK(qt.rank() == 4 && kt.rank() == 4 && vt.rank() == 4, kInvalidModel, node.describe(),
               "Q, K and V must be 4-D [B, heads, seq, size]");
  const int64_t b = qt.dim(0), hq = qt.dim(1), l = qt.dim(2), e = qt.dim(3);
  const int64_t hkv = kt.dim(1), s = kt.dim(2), ev = vt.dim(3);
  KILNRT_CHECK(kt.dim(0) == b && vt.dim(0) == b && kt.dim(3) == e && vt.dim(1) == hkv && vt.dim(2) == s && hkv > 0 &&
                   hq % hkv == 0,
               kInvalidModel, node.describe(),
               "inconsistent shapes Q " << shape_to_string(qt.shape()) << ", K " << shape_to_string(kt.shape())
                                        << ", V " << shape_to_string(vt.shape()));
  const double scale = node.has_attr("scale") ? node.attr_float("scale") : 1.0 / std::sqrt(static_cast<double>(e));
  const std::vector<double> q = tensor_to_doubles(qt, node), k = tensor_to_doubles(kt, node),
                            v = tensor_to_doubles(vt, node);
  std::vector<double> y(static_cast<size_t>(b * hq * l * ev)), p(static_cast<size_t>(s));
  const int64_t group = hq / hkv;
  for (int64_t n = 0; n < b; ++n)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t kh = h / group;
      const double* kb = k.data() + (n * hkv + kh) * s * e;
      const double* vb = v.data() + (n * hkv + kh) * s * ev;
      for (int64_t i = 0; i < l; ++i) {
        const double* qi = q.data() + ((n * hq + h) * l + i) * e;
        double mx = -INFINITY;
        for (int64_t j = 0; j < s; ++j) {
          double acc = 0.0;
          for (int64_t d = 0; d < e; ++d) acc += qi[d] * kb[j * e + d];
          p[j] = acc * scale;
          mx = std::max(mx, p[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < s; ++j) sum += (p[j] = std::exp(p[j] - mx));
        double* yi = y.data() + ((n * hq + h) * l + i) * ev;
        for (int64_t d = 0; d < ev; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j < s; ++j) acc += p[j] * vb[j * ev + d];
          yi[d] = acc / sum;
        }
      }
    }
  ctx.outputs[0] = tensor_from_doubles(y, vt.dtype(), {b, hq, l, ev});
}

void infer_flex_attention(ShapeContext& ctx) {
  check_no_mod_graphs(ctx.node);
  const ir::TensorType& q = ctx.input(0);
  const ir::TensorType& v = ctx.input(2);
  if (!q.has_shape || !v.has_shape || q.shape.size() != 4 || v.shape.size() != 4) {
    ctx.set_output_rank_unknown(0, v.dtype);
    return;
  }
  ctx.set_output(0, v.dtype, {q.shape[0], q.shape[1], q.shape[2], v.shape[3]});
}

}  // namespace

KILNRT_REGISTER_OP(OpSchema{"ai.onnx.preview",
                            "FlexAttention",
                            1,
                            1000,
                            infer_flex_attention,
                            flex_attention_cpu,
                            {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64},
                            "softmax(Q K^T * scale) V with GQA (score_mod / prob_mod graphs not supported)"});

}  // namespace kilnrt::ops
