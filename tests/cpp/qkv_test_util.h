// Graphs for passes/pack_qkv_projection's tests (CPU: test_qkv_packing.cc, GPU: test_cuda_qkv_packing.cc):
// transformers' BertSelfAttention as torch dynamo writes it, with its three Linear projections computed in the graph:
// "x" [B, S, E] -> MatMul(Wq | Wk | Wv [E, E]) [-> Add(bias [E])] -> "xq" / "xk" / "xv", then the SDPA block of
// sdpa_test_util.h (head Reshape + Transpose, K^T chain, boolean mask, NaN guard). kv_input: K and V project this
// other graph input instead (cross-attention: not packable); pad_last_entry: the last batch entry fully masked (16-bit
// engines clamp the mask's -inf to -65504, so their guard never fires: the GPU tests leave it off). And a scoped
// KILNRT_NO_FUSION setting.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <string>

#include "sdpa_test_util.h"

namespace kilnrt::attntest {

inline ir::Graph bert_projected_block(Builder& b, int64_t B, int64_t S, int64_t H, int64_t D, bool bias,
                                      const std::string& kv_input = "x", bool pad_last_entry = true) {
  const int64_t E = H * D;
  // pad_last_entry: the last batch entry is padding everywhere (fully masked rows: zeros through the NaN guard).
  ir::Graph g = sdpa_dynamo_block(b, B, S, H, D, pad_last_entry ? std::vector<int64_t>{B - 1} : std::vector<int64_t>{});
  uint32_t seed = 90;
  for (const std::string in : {std::string("x"), kv_input}) {
    if (b.feeds.count(in)) continue;
    g.inputs.push_back(in);
    g.types[in] = g.types.at("xq");
    b.feeds[in] = passtest::random_tensor({B, S, E}, seed++);
  }
  const char* names[3] = {"xq", "xk", "xv"};
  for (int i = 0; i < 3; ++i) {
    const std::string n = names[i];
    g.inputs.erase(std::find(g.inputs.begin(), g.inputs.end(), n));
    b.feeds.erase(n);
    g.constants[n + "_w"] = passtest::random_tensor({E, E}, seed++, -0.3f, 0.3f);
    ir::Node mm;
    mm.name = n + "_matmul";
    mm.op_type = "MatMul";
    mm.inputs = {i == 0 ? std::string("x") : kv_input, n + "_w"};
    mm.outputs = {bias ? n + "_mm" : n};
    g.nodes.push_back(std::move(mm));
    if (bias) {
      g.constants[n + "_b"] = passtest::random_tensor({E}, seed++);
      ir::Node add;
      add.name = n + "_bias";
      add.op_type = "Add";
      add.inputs = {n + "_mm", n + "_b"};
      add.outputs = {n};
      g.nodes.push_back(std::move(add));
    }
  }
  // torch 2.x dynamo writes the heads' view as Reshape(allowzero = 1) (its shape has no 0).
  for (ir::Node& n : g.nodes)
    if (n.op_type == "Reshape" && (n.outputs[0] == "xq4" || n.outputs[0] == "xk4" || n.outputs[0] == "xv4")) {
      n.attrs["allowzero"].kind = ir::Attribute::Kind::kInt;
      n.attrs["allowzero"].i = 1;
    }
  g.topo_sort();
  passes::infer_shapes(g);
  return g;
}

// Sets KILNRT_NO_FUSION for the scope (restores "unset" at its end, also when an assertion returns early).
struct ScopedNoFusion {
  explicit ScopedNoFusion(const char* list) { ::setenv("KILNRT_NO_FUSION", list, 1); }
  ~ScopedNoFusion() { ::unsetenv("KILNRT_NO_FUSION"); }
  ScopedNoFusion(const ScopedNoFusion&) = delete;
  ScopedNoFusion& operator=(const ScopedNoFusion&) = delete;
};

}  // namespace kilnrt::attntest
