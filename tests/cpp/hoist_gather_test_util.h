// The tail of a ViT for the hoist_gather tests (CPU: test_hoist_gather.cc, GPU: test_cuda_hoist_gather.cc), shaped
// like the last encoder block after kilnrt's batch-first attention rewrite:
//   r0 = x + pos [1, S, E] (constant)                      (the block's input)
//   attn = Reshape(FusedAttention(p, p, p), [0, 0, E])     (optional: else attn is a graph input; p [B, S, 3H, D]
//                                                           is the packed Q | K | V projection)
//   x1 = MatMul(attn [B, S, E], Wo) + bo + r0              (out-projection and residual)
//   x2 = x1 + MatMul(GELU(MatMul(LayerNorm(x1), W1) + b1), W2) + b2   (GELU in the exporter's erf form)
//   logits = MatMul(Gather(LayerNorm(x2), index, axis), Wh)           (classifier on the picked token)
// with variations that must stop the rewrite.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "attention_test_util.h"

namespace kilnrt::hoisttest {

struct TailCase {
  int64_t b = 2, s = 9, e = 16, f = 64, classes = 5;
  std::vector<int64_t> index = {0};
  bool scalar_index = true;
  int64_t axis = 1;
  bool normed_output = false;  // LayerNorm(x2) is also a graph output: nothing can move
  bool softmax_tail = false;   // Softmax over the token axis instead of the last LayerNorm: nothing can move
  int64_t heads = 0;           // > 0: attn is the attention of `heads` heads over the packed input p
};

// attn [B, S, E] = the heads of FusedAttention over p [B, S, 3H, D] (batch-first physical layouts, as kilnrt's
// rewrite leaves torchvision's attention), merged by Reshape [0, 0, E].
inline void packed_attention(attntest::Builder& b, const TailCase& tc) {
  const int64_t h = tc.heads, d = tc.e / tc.heads;
  b.input("p", {tc.b, tc.s, 3 * h, d});
  ir::Node& n = b.node("FusedAttention", {"p", "p", "p"}, "heads");
  n.domain = "com.kilnrt";
  b.g.opsets["com.kilnrt"] = 1;
  n.attrs["scale"].kind = ir::Attribute::Kind::kFloat;
  n.attrs["scale"].f = static_cast<float>(1.0 / std::sqrt(double(d)));
  const char* perms[4] = {"q_perm", "k_perm", "v_perm", "out_perm"};
  for (const char* perm : perms) {
    n.attrs[perm].kind = ir::Attribute::Kind::kInts;
    n.attrs[perm].ints = {0, 2, 1, 3};
  }
  const char* parts[3] = {"q_part", "k_part", "v_part"};
  for (int i = 0; i < 3; ++i) {
    n.attrs[parts[i]].kind = ir::Attribute::Kind::kInts;
    n.attrs[parts[i]].ints = {2, i * h, h};
  }
  b.node("Reshape",
         {"heads", b.constant("merge", Tensor::from_vector(std::vector<int64_t>{0, 0, tc.e}, DType::kInt64, {3}))},
         "attn");
}

inline ir::Node& layer_norm(attntest::Builder& b, const std::string& x, const std::string& p, int64_t e,
                            const std::string& out) {
  ir::Node& n = b.node("LayerNormalization",
                       {x, b.constant(p + "_g", attntest::random_tensor({e}, b.seed++, 0.5f, 1.5f)),
                        b.constant(p + "_b", attntest::random_tensor({e}, b.seed++, -0.2f, 0.2f))},
                       out);
  n.attrs["axis"].kind = ir::Attribute::Kind::kInt;
  n.attrs["axis"].i = -1;
  n.attrs["epsilon"].kind = ir::Attribute::Kind::kFloat;
  n.attrs["epsilon"].f = 1e-6f;
  return n;
}

// Linear layer: MatMul(x, W [k, n]) + b, weights scaled for outputs of unit size.
inline std::string linear(attntest::Builder& b, const std::string& x, const std::string& p, int64_t k, int64_t n) {
  const float s = 1.7f / std::sqrt(float(k));
  b.node("MatMul", {x, b.constant(p + "_w", attntest::random_tensor({k, n}, b.seed++, -s, s))}, p + "_mm");
  b.node("Add", {p + "_mm", b.constant(p + "_bias", attntest::random_tensor({n}, b.seed++, -0.5f, 0.5f))}, p);
  return p;
}

inline ir::Graph tail_graph(const TailCase& tc, std::map<std::string, Tensor>* feeds) {
  attntest::Builder b;
  b.input("x", {tc.b, tc.s, tc.e});
  if (tc.heads > 0)
    packed_attention(b, tc);
  else
    b.input("attn", {tc.b, tc.s, tc.e});
  b.node("Add", {"x", b.constant("pos", attntest::random_tensor({1, tc.s, tc.e}, 40))}, "r0");
  b.node("Add", {linear(b, "attn", "proj", tc.e, tc.e), "r0"}, "x1");
  layer_norm(b, "x1", "ln2", tc.e, "h");
  linear(b, "h", "fc1", tc.e, tc.f);
  b.scal("Div", "fc1", std::sqrt(2.f), "gelu_d");
  b.node("Erf", {"gelu_d"}, "gelu_e");
  b.scal("Add", "gelu_e", 1.f, "gelu_u");
  b.node("Mul", {"fc1", "gelu_u"}, "gelu_m");
  b.scal("Mul", "gelu_m", 0.5f, "gelu");
  b.node("Add", {"x1", linear(b, "gelu", "fc2", tc.f, tc.e)}, "x2");
  if (tc.softmax_tail)
    b.softmax("x2", "y", 1);
  else
    layer_norm(b, "x2", "ln", tc.e, "y");
  const Shape index_shape = tc.scalar_index ? Shape{} : Shape{static_cast<int64_t>(tc.index.size())};
  ir::Node& gather =
      b.node("Gather", {"y", b.constant("index", Tensor::from_vector(tc.index, DType::kInt64, index_shape))}, "cls");
  gather.attrs["axis"].kind = ir::Attribute::Kind::kInt;
  gather.attrs["axis"].i = tc.axis;
  const int64_t head_k = tc.axis == 2 ? static_cast<int64_t>(tc.index.size()) : tc.e;
  if (tc.scalar_index && tc.axis == 2) {
    b.output("cls");  // [B, S]: no head
  } else {
    b.node("MatMul", {"cls", b.constant("head_w", attntest::random_tensor({head_k, tc.classes}, 41))}, "logits");
    b.output("logits");
  }
  if (tc.normed_output) b.output("y");
  *feeds = b.feeds;
  return b.finish();
}

}  // namespace kilnrt::hoisttest
