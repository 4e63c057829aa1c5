// torchvision ViT's MultiheadAttention block with its packed in-projection computed in the graph (for
// passes/split_packed_projection): "xin" [S, B, E] -> MatMul(W [E, 3E]) [-> Add(bias [3E])] -> "proj_sbe", then the
// dynamo select / head split / SDPA chain of sdpa_test_util.h's mha_dynamo_block.
#pragma once
#include <algorithm>

#include "sdpa_test_util.h"

namespace kilnrt::attntest {

inline ir::Graph projected_mha_block(Builder& b, int64_t B, int64_t S, int64_t H, int64_t D, bool bias,
                                     bool projection_is_output = false) {
  const int64_t E = H * D;
  ir::Graph g = mha_dynamo_block(b, B, S, H, D, /*packed=*/true);
  g.inputs.erase(std::find(g.inputs.begin(), g.inputs.end(), "proj_sbe"));
  b.feeds.erase("proj_sbe");
  g.inputs.push_back("xin");
  g.types["xin"] = g.types.at("proj_sbe");
  g.types["xin"].shape = ir::shape_to_sym({S, B, E});
  b.feeds["xin"] = passtest::random_tensor({S, B, E}, 77);
  g.constants["w_in"] = passtest::random_tensor({E, 3 * E}, 78, -0.3f, 0.3f);
  auto node = [&](const char* op, std::vector<std::string> in, const std::string& out) {
    ir::Node n;
    n.name = out + "_node";
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {out};
    g.nodes.push_back(std::move(n));
  };
  if (bias) {
    g.constants["b_in"] = passtest::random_tensor({3 * E}, 79);
    node("MatMul", {"xin", "w_in"}, "proj_mm");
    node("Add", {"b_in", "proj_mm"}, "proj_sbe");  // bias first: either order is matched
  } else {
    node("MatMul", {"xin", "w_in"}, "proj_sbe");
  }
  if (projection_is_output) g.outputs.push_back("proj_sbe");
  g.topo_sort();
  passes::infer_shapes(g);
  return g;
}

// The same block as torch's MultiheadAttention(batch_first=True) writes it (ViT's encoder): "x_bse" [B, S, E] ->
// Transpose(1, 0, 2) -> "xin", and after the heads' output "y" [S*B, E]: Gemm(out_proj, transB) -> Reshape
// [S, B, E] -> Transpose(1, 0, 2) -> + x_bse (the residual) -> "out" [B, S, E]. exit_is_output: the Reshape before
// the exit Transpose is also a graph output.
inline ir::Graph batch_first_mha_block(Builder& b, int64_t B, int64_t S, int64_t H, int64_t D,
                                       bool exit_is_output = false) {
  const int64_t E = H * D;
  ir::Graph g = projected_mha_block(b, B, S, H, D, /*bias=*/true);
  g.inputs.erase(std::find(g.inputs.begin(), g.inputs.end(), "xin"));
  b.feeds.erase("xin");
  g.inputs.push_back("x_bse");
  g.types["x_bse"] = g.types.at("xin");
  g.types["x_bse"].shape = ir::shape_to_sym({B, S, E});
  b.feeds["x_bse"] = passtest::random_tensor({B, S, E}, 80);
  g.outputs.clear();
  g.constants["w_out"] = passtest::random_tensor({E, E}, 81, -0.3f, 0.3f);
  g.constants["o_shape"] = Tensor::from_vector(std::vector<int64_t>{S, B, E}, DType::kInt64, {3});
  auto node = [&](const char* op, std::vector<std::string> in, const std::string& out) -> ir::Node& {
    ir::Node n;
    n.name = out + "_node";
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {out};
    g.nodes.push_back(std::move(n));
    return g.nodes.back();
  };
  auto swap01 = [](ir::Node& n) {
    n.attrs["perm"].kind = ir::Attribute::Kind::kInts;
    n.attrs["perm"].ints = {1, 0, 2};
  };
  swap01(node("Transpose", {"x_bse"}, "xin"));
  ir::Node& gemm = node("Gemm", {"y", "w_out"}, "o2d");
  gemm.attrs["transB"].kind = ir::Attribute::Kind::kInt;
  gemm.attrs["transB"].i = 1;
  node("Reshape", {"o2d", "o_shape"}, "o3");
  swap01(node("Transpose", {"o3"}, "o_bse"));
  node("Add", {"o_bse", "x_bse"}, "out");
  g.outputs.push_back("out");
  if (exit_is_output) g.outputs.push_back("o3");
  g.topo_sort();
  passes::infer_shapes(g);
  return g;
}

}  // namespace kilnrt::attntest
