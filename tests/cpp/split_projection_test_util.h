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

}  // namespace kilnrt::attntest
