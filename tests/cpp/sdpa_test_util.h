// The attention block torch 2.x's dynamo exporter writes for transformers' BertModel with sdpa attention,
// built by hand on typed graph inputs (shared by the CPU fusion tests and the GPU tests):
//   heads: Reshape([B, S, H*D] -> [B, S, H, D]) -> Transpose(0, 2, 1, 3), for Q, K and V;
//   K^T:   Reshape([B*H, S, D]) -> Transpose(0, 2, 1) -> Reshape([B, H, D, S]);
//   scale: Q * sqrt(s) and K^T * sqrt(s) separately (s = 1 / sqrt(D));
//   mask:  Where(Greater(attention_mask, 0.5) as [B, 1, 1, S], 0, -inf), added to the scores;
//   guard: Where(IsNaN(Softmax(.)), 0, Softmax(.)) (a fully masked row: NaN -> 0);
//   out:   MatMul(., V) -> Transpose(0, 2, 1, 3) -> Reshape([B, S, H*D]).
// Batch entries listed in `masked_batches` have attention_mask 0 everywhere (every row fully masked). query_and:
// the condition is And(all-true [1, 1, S, 1], key mask) as transformers 4.5x writes it (a [B, 1, S, S] mask).
// mha_dynamo_block below: torchvision ViT's attention, the same way.
#pragma once
#include <cmath>
#include <limits>
#include <vector>

#include "attention_test_util.h"

namespace kilnrt::attntest {

inline Tensor shape_const(const std::vector<int64_t>& v) {
  return Tensor::from_vector(v, DType::kInt64, {static_cast<int64_t>(v.size())});
}

inline ir::Graph sdpa_dynamo_block(Builder& b, int64_t B, int64_t S, int64_t H, int64_t D,
                                   const std::vector<int64_t>& masked_batches = {}, bool query_and = false) {
  const int64_t E = H * D;
  for (const char* x : {"xq", "xk", "xv"}) {
    b.input(x, {B, S, E});
    b.node("Reshape", {x, b.constant(std::string(x) + "_s4", shape_const({B, S, H, D}))}, std::string(x) + "4");
    b.transpose(std::string(x) + "4", {0, 2, 1, 3}, std::string(x) + "h");
  }
  b.node("Reshape", {"xkh", b.constant("k3_shape", shape_const({B * H, S, D}))}, "k3");
  b.transpose("k3", {0, 2, 1}, "k3t");
  b.node("Reshape", {"k3t", b.constant("kt_shape", shape_const({B, H, D, S}))}, "kt");
  const float root = std::sqrt(1.f / std::sqrt(static_cast<float>(D)));
  b.scal("Mul", "xqh", root, "qs");
  b.scal("Mul", "kt", root, "ks");
  b.input("attention_mask", {B, S}, 0.f, 1.f);
  Tensor& am = b.feeds["attention_mask"];
  for (int64_t i = 0; i < am.numel(); ++i) am.data<float>()[i] = am.data<float>()[i] < 0.25f ? 0.f : 1.f;
  for (int64_t mb : masked_batches)
    for (int64_t j = 0; j < S; ++j) am.data<float>()[mb * S + j] = 0.f;
  b.node("Greater", {"attention_mask", b.constant("half", scalar(0.5f))}, "keep");
  b.node("Reshape", {"keep", b.constant("m4_shape", shape_const({B, 1, 1, S}))}, "keep4");
  std::string cond = "keep4";
  if (query_and) {  // transformers 4.5x: And(all-true [1, 1, S, 1], key mask) -> a [B, 1, S, S] mask
    Tensor t = Tensor::zeros(DType::kBool, {1, 1, S, 1});
    for (int64_t i = 0; i < S; ++i) static_cast<uint8_t*>(t.raw())[i] = 1;
    b.node("And", {b.constant("query_true", std::move(t)), "keep4"}, "keep_qs");
    cond = "keep_qs";
  }
  b.node("Where",
         {cond, b.constant("mask_zero", scalar(0.f)),
          b.constant("mask_ninf", scalar(-std::numeric_limits<float>::infinity()))},
         "mask");
  b.node("MatMul", {"qs", "ks"}, "scores");
  b.node("Add", {"scores", "mask"}, "masked");
  b.softmax("masked", "p");
  b.node("IsNaN", {"p"}, "p_nan");
  b.node("Where", {"p_nan", b.constant("guard_zero", scalar(0.f)), "p"}, "p_safe");
  b.node("MatMul", {"p_safe", "xvh"}, "ctx");
  b.transpose("ctx", {0, 2, 1, 3}, "ctx_t");
  b.node("Reshape", {"ctx_t", b.constant("y_shape", shape_const({B, S, E}))}, "y");
  b.output("y");
  return b.finish();
}

// torchvision ViT's nn.MultiheadAttention (batch_first, need_weights=False) through torch 2.x dynamo: the packed
// projection [3, S, B, E] (graph input "proj") split with Gather(index 0 / 1 / 2, axis 0); heads
// Reshape([S, B*H, D]) -> Transpose(1, 0, 2) -> Reshape([B, H, S, D]); SDPA without a mask (K^T chain, two scales);
// out: Transpose(2, 0, 1, 3) -> Reshape([S*B, E]). packed: "proj" is made from the in-projection's output
// "proj_sbe" [S, B, 3E] as torch writes it: Reshape([S, B, 3, E]) -> Unsqueeze(0) -> Transpose(3, 1, 2, 0, 4) ->
// Squeeze(-2).
inline void packed_projection(Builder& b, const std::string& in, const std::string& out, int64_t S, int64_t B,
                              int64_t E, std::vector<int64_t> perm = {3, 1, 2, 0, 4}) {
  b.input(in, {S, B, 3 * E});
  b.node("Reshape", {in, b.constant(in + "_s4", shape_const({S, B, 3, E}))}, in + "_4");
  b.node("Unsqueeze", {in + "_4", b.constant(in + "_ax0", shape_const({0}))}, in + "_5");
  b.transpose(in + "_5", std::move(perm), in + "_t");
  b.node("Squeeze", {in + "_t", b.constant(in + "_ax3", shape_const({-2}))}, out);
}

inline ir::Graph mha_dynamo_block(Builder& b, int64_t B, int64_t S, int64_t H, int64_t D, bool packed = false) {
  const int64_t E = H * D;
  if (packed)
    packed_projection(b, "proj_sbe", "proj", S, B, E);
  else
    b.input("proj", {3, S, B, E});
  const char* names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const std::string n = names[i];
    b.node("Gather",
           {"proj", b.constant(n + "_index", Tensor::from_vector(std::vector<int64_t>{i}, DType::kInt64, {}))},
           n + "_sbe");
    b.node("Reshape", {n + "_sbe", b.constant(n + "_s3", shape_const({S, B * H, D}))}, n + "_3");
    b.transpose(n + "_3", {1, 0, 2}, n + "_t");
    b.node("Reshape", {n + "_t", b.constant(n + "_s4", shape_const({B, H, S, D}))}, n + "_4");
  }
  b.node("Reshape", {"k_4", b.constant("k3_shape", shape_const({B * H, S, D}))}, "k3");
  b.transpose("k3", {0, 2, 1}, "k3t");
  b.node("Reshape", {"k3t", b.constant("kt_shape", shape_const({B, H, D, S}))}, "kt");
  const float root = std::sqrt(1.f / std::sqrt(static_cast<float>(D)));
  b.scal("Mul", "q_4", root, "qs");
  b.scal("Mul", "kt", root, "ks");
  b.node("MatMul", {"qs", "ks"}, "scores");
  b.softmax("scores", "p");
  b.node("MatMul", {"p", "v_4"}, "ctx");
  b.transpose("ctx", {2, 0, 1, 3}, "ctx_t");
  b.node("Reshape", {"ctx_t", b.constant("y_shape", shape_const({S * B, E}))}, "y");
  b.output("y");
  return b.finish();
}

}  // namespace kilnrt::attntest
