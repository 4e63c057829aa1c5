// com.kilnrt:FusedAttention: shape function and CPU reference (see fused_attention.h for the semantics).
#include "ops/nn/fused_attention/fused_attention.h"

#include <cmath>
#include <limits>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {

std::vector<int64_t> attention_perm(const ir::Node& node, const char* attr, size_t rank) {
  std::vector<int64_t> p = node.attr_ints(attr, std::vector<int64_t>{});
  if (p.empty()) {
    for (size_t i = 0; i < rank; ++i) p.push_back(static_cast<int64_t>(i));
    return p;
  }
  KILNRT_CHECK(p.size() == rank, kInvalidArgument, node.describe(),
               attr << " has " << p.size() << " entries for an operand of rank " << rank);
  std::vector<bool> seen(rank, false);
  for (int64_t x : p) {
    KILNRT_CHECK(x >= 0 && x < static_cast<int64_t>(rank) && !seen[x], kInvalidArgument, node.describe(),
                 attr << " is not a permutation of " << rank << " dims");
    seen[x] = true;
  }
  return p;
}

std::vector<int64_t> attention_part(const ir::Node& node, const char* attr, size_t rank) {
  std::vector<int64_t> p = node.attr_ints(attr, std::vector<int64_t>{});
  if (p.empty()) return p;
  KILNRT_CHECK(p.size() == 3, kInvalidArgument, node.describe(),
               attr << " has " << p.size() << " entries, expected [axis, start, size]");
  KILNRT_CHECK(p[0] >= 0 && p[0] < static_cast<int64_t>(rank), kInvalidArgument, node.describe(),
               attr << " axis " << p[0] << " is outside an input of rank " << rank);
  KILNRT_CHECK(p[1] >= 0 && p[2] >= 1, kInvalidArgument, node.describe(),
               attr << " needs start >= 0 and size >= 1, got start " << p[1] << ", size " << p[2]);
  return p;
}

namespace {

// Logical dims / strides of transpose(part(x), perm) for a contiguous x, where part(x) is x restricted to
// [start, start + size) along part[0] (no part: x); *offset gets the part's first element.
void permuted(const ir::Node& node, const char* part_attr, const Shape& s, const std::vector<int64_t>& perm,
              Shape* dims, std::vector<int64_t>* strides, int64_t* offset) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  Shape ps = s;
  *offset = 0;
  const std::vector<int64_t> part = attention_part(node, part_attr, s.size());
  if (!part.empty()) {
    KILNRT_CHECK(part[1] + part[2] <= s[part[0]], kInvalidArgument, node.describe(),
                 part_attr << " [" << part[1] << ", " << part[1] + part[2] << ") along axis " << part[0]
                           << " is outside the input of shape " << shape_to_string(s));
    ps[part[0]] = part[2];
    *offset = part[1] * st[part[0]];
  }
  dims->clear();
  strides->clear();
  for (int64_t p : perm) {
    dims->push_back(ps[p]);
    strides->push_back(st[p]);
  }
}

// Copies the last `n` of (dims, strides) right-aligned into 4 slots (missing leading slots: size 1, stride 0).
void to4(const std::vector<int64_t>& strides, int64_t out[4]) {
  const size_t r = strides.size();
  for (size_t i = 0; i < 4; ++i) out[i] = i + r >= 4 ? strides[i + r - 4] : 0;
}

}  // namespace

AttentionGeometry attention_geometry(const ir::Node& node, const Shape& q, const Shape& k, const Shape& v,
                                     const Shape* mask) {
  const std::string where = node.describe();
  const size_t r = q.size();
  KILNRT_CHECK(r >= 2 && r <= 4, kInvalidArgument, where, "Q must have rank 2 to 4, got " << shape_to_string(q));
  KILNRT_CHECK(k.size() == r && v.size() == r, kInvalidArgument, where,
               "Q, K and V must have the same rank: " << shape_to_string(q) << ", " << shape_to_string(k) << ", "
                                                      << shape_to_string(v));
  Shape lq, lk, lv;
  std::vector<int64_t> sq, sk, sv;
  AttentionGeometry g;
  permuted(node, "q_part", q, attention_perm(node, "q_perm", r), &lq, &sq, &g.q_offset);
  permuted(node, "k_part", k, attention_perm(node, "k_perm", r), &lk, &sk, &g.k_offset);
  permuted(node, "v_part", v, attention_perm(node, "v_perm", r), &lv, &sv, &g.v_offset);
  for (size_t i = 0; i + 2 < r; ++i)
    KILNRT_CHECK(lq[i] == lk[i] && lq[i] == lv[i], kInvalidArgument, where,
                 "batch dims of Q, K and V differ: " << shape_to_string(lq) << ", " << shape_to_string(lk) << ", "
                                                     << shape_to_string(lv) << " (after the perms)");
  KILNRT_CHECK(lq[r - 1] == lk[r - 1], kInvalidArgument, where,
               "Q and K head sizes differ: " << lq[r - 1] << " and " << lk[r - 1]);
  KILNRT_CHECK(lk[r - 2] == lv[r - 2], kInvalidArgument, where,
               "K and V sequence lengths differ: " << lk[r - 2] << " and " << lv[r - 2]);
  g.b0 = r == 4 ? lq[0] : 1;
  g.b1 = r >= 3 ? lq[r - 3] : 1;
  g.sq = lq[r - 2];
  g.d = lq[r - 1];
  g.sk = lk[r - 2];
  g.dv = lv[r - 1];
  to4(sq, g.q);
  to4(sk, g.k);
  to4(sv, g.v);
  // Output: logical O [batch..., Sq, Dv], Y = transpose(O, out_perm) stored contiguously.
  Shape lo(lq.begin(), lq.end());
  lo[r - 1] = g.dv;
  const std::vector<int64_t> po = attention_perm(node, "out_perm", r);
  g.out_shape.clear();
  for (int64_t p : po) g.out_shape.push_back(lo[p]);
  std::vector<int64_t> ys(r, 1), os(r, 0);
  for (int i = static_cast<int>(r) - 2; i >= 0; --i) ys[i] = ys[i + 1] * g.out_shape[i + 1];
  for (size_t j = 0; j < r; ++j) os[po[j]] = ys[j];
  to4(os, g.o);
  if (mask) {
    g.has_mask = true;
    Shape scores(lq.begin(), lq.end());
    scores[r - 1] = g.sk;
    KILNRT_CHECK(
        mask->size() <= r, kInvalidArgument, where,
        "mask of shape " << shape_to_string(*mask) << " has a higher rank than the scores " << shape_to_string(scores));
    const size_t mr = mask->size();
    std::vector<int64_t> ms(mr, 0);
    int64_t stride = 1;
    for (int i = static_cast<int>(mr) - 1; i >= 0; --i) {
      const int64_t md = (*mask)[i], sd = scores[r - mr + i];
      KILNRT_CHECK(md == 1 || md == sd, kInvalidArgument, where,
                   "mask of shape " << shape_to_string(*mask) << " does not broadcast to the scores "
                                    << shape_to_string(scores));
      ms[i] = md == 1 ? 0 : stride;
      stride *= md;
    }
    std::vector<int64_t> full(r, 0);
    for (size_t i = 0; i < mr; ++i) full[r - mr + i] = ms[i];
    to4(full, g.m);
  }
  return g;
}

namespace {

ir::SymShape permute_sym(const ir::SymShape& s, const std::vector<int64_t>& p) {
  ir::SymShape out;
  for (int64_t x : p) out.push_back(s[x]);
  return out;
}

// An input's shape restricted to its part (q_part / v_part), when the node has one.
ir::SymShape part_sym(const ir::Node& node, const char* attr, ir::SymShape s) {
  const std::vector<int64_t> part = attention_part(node, attr, s.size());
  if (!part.empty()) {
    KILNRT_CHECK(!s[part[0]].known() || part[1] + part[2] <= s[part[0]].value, kInvalidArgument, node.describe(),
                 attr << " [" << part[1] << ", " << part[1] + part[2] << ") along axis " << part[0]
                      << " is outside an input dim of " << s[part[0]].value);
    s[part[0]] = ir::Dim(part[2]);
  }
  return s;
}

void infer_attention(ShapeContext& ctx) {
  const ir::TensorType& q = ctx.input(0);
  const ir::TensorType& v = ctx.input(2);
  if (!q.has_shape || !v.has_shape) {
    ctx.set_output_rank_unknown(0, q.dtype);
    return;
  }
  const size_t r = q.shape.size();
  KILNRT_CHECK(r >= 2 && r <= 4 && v.shape.size() == r, kInvalidArgument, ctx.node.describe(),
               "Q and V must have the same rank, 2 to 4");
  ir::SymShape lo = permute_sym(part_sym(ctx.node, "q_part", q.shape), attention_perm(ctx.node, "q_perm", r));
  lo[r - 1] = permute_sym(part_sym(ctx.node, "v_part", v.shape), attention_perm(ctx.node, "v_perm", r))[r - 1];
  ctx.set_output(0, q.dtype, permute_sym(lo, attention_perm(ctx.node, "out_perm", r)));
}

void attention_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const DType dtype = ctx.input(0).dtype();
  const Tensor q = to_float32(ctx.input(0), node, "Q");
  const Tensor k = to_float32(ctx.input(1), node, "K");
  const Tensor v = to_float32(ctx.input(2), node, "V");
  Tensor mask;
  if (ctx.has_input(3)) mask = to_float32(ctx.input(3), node, "mask");
  const AttentionGeometry g =
      attention_geometry(node, q.shape(), k.shape(), v.shape(), mask.defined() ? &mask.shape() : nullptr);
  const float scale = node.attr_float("scale", 1.0f);
  const bool zero_masked_rows = node.attr_int("zero_masked_rows", 0) != 0;
  Tensor y = Tensor::empty(DType::kFloat32, g.out_shape);
  const float *qp = q.data<float>() + g.q_offset, *kp = k.data<float>() + g.k_offset,
              *vp = v.data<float>() + g.v_offset;
  const float* mp = mask.defined() ? mask.data<float>() : nullptr;
  float* yp = y.data<float>();
  const int64_t rows = g.b0 * g.b1 * g.sq;
#pragma omp parallel for schedule(static) if (rows * g.sk * g.d > 65536)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t i = row % g.sq, b1 = (row / g.sq) % g.b1, b0 = row / (g.sq * g.b1);
    std::vector<double> s(static_cast<size_t>(g.sk));
    const float* qr = qp + b0 * g.q[0] + b1 * g.q[1] + i * g.q[2];
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < g.sk; ++j) {
      const float* kr = kp + b0 * g.k[0] + b1 * g.k[1] + j * g.k[2];
      double dot = 0.0;
      for (int64_t d = 0; d < g.d; ++d) dot += double(qr[d * g.q[3]]) * double(kr[d * g.k[3]]);
      // The masked score is rounded to float32 as in the unfused graph (and the CUDA kernel): -1e9 masks swamp
      // the scores there, so a row masked everywhere with -1e9 is uniform, as torch gives in float32.
      float x = static_cast<float>(double(scale) * dot);
      if (mp) x += mp[b0 * g.m[0] + b1 * g.m[1] + i * g.m[2] + j * g.m[3]];
      s[j] = x;
      if (x > mx) mx = x;
    }
    double sum = 0.0;
    const bool masked_row = std::isinf(mx) && mx < 0;
    if (masked_row && zero_masked_rows) {  // the NaN guard's zeros
      float* yr = yp + b0 * g.o[0] + b1 * g.o[1] + i * g.o[2];
      for (int64_t c = 0; c < g.dv; ++c) yr[c * g.o[3]] = 0.f;
      continue;
    }
    for (int64_t j = 0; j < g.sk; ++j) {
      // A fully masked row (max -inf) is uniform.
      s[j] = masked_row ? 1.0 : std::exp(s[j] - mx);
      sum += s[j];
    }
    float* yr = yp + b0 * g.o[0] + b1 * g.o[1] + i * g.o[2];
    for (int64_t c = 0; c < g.dv; ++c) {
      double acc = 0.0;
      for (int64_t j = 0; j < g.sk; ++j) acc += s[j] * double(vp[b0 * g.v[0] + b1 * g.v[1] + j * g.v[2] + c * g.v[3]]);
      yr[c * g.o[3]] = static_cast<float>(sum > 0 ? acc / sum : acc);
    }
  }
  ctx.outputs[0] = from_float32(y, dtype);
}

KILNRT_REGISTER_OP(OpSchema{kKilnrtDomain, "FusedAttention", 1, 1000, infer_attention, attention_cpu, float_dtypes(),
                            "softmax(scale * Q K^T + mask) V with transposed operands (made by fuse_attention)"});

}  // namespace
}  // namespace kilnrt::ops::nn
