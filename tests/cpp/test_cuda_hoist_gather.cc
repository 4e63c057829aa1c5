// hoist_gather on the GPU: a ViT tail at ViT-B/16's width, optimized (the class token's Gather above the
// last block's attention, then the GEMM / GELU / LayerNorm fusions and the attention on one query row per image), in
// float32 and 16-bit engines against the float32 CPU reference of the unrewritten graph. Skips without a GPU.
#include "backends/cuda/cuda_plan.h"
#include "cuda_backend_test_util.h"
#include "hoist_gather_test_util.h"
#include "passes/optimize.h"

namespace kilnrt::cudatest {

TEST(CudaHoistGather, VitTailMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  hoisttest::TailCase tc;
  tc.b = 3;
  tc.s = 197;
  tc.e = 768;
  tc.f = 3072;
  tc.classes = 10;
  tc.heads = 12;
  for (const auto& [index, scalar] :
       std::vector<std::pair<std::vector<int64_t>, bool>>{{{0}, true}, {{196, 5}, false}}) {
    tc.index = index;
    tc.scalar_index = scalar;
    std::map<std::string, Tensor> feeds;
    const ir::Graph original = hoisttest::tail_graph(tc, &feeds);
    const Tensor want = run_cpu(original, feeds).at("logits");
    ir::Graph g = original;
    passes::optimize_graph(g);
    size_t one_row = 0;
    for (const ir::Node& n : g.nodes) {
      if (n.op_type != "FusedMatMul" && n.op_type != "MatMul") continue;
      const ir::SymShape& s = g.type_of(n.inputs[0])->shape;
      one_row += s.size() == 3 && s[1].value == static_cast<int64_t>(index.size());
    }
    EXPECT_EQ(one_row, scalar ? 3u : 4u) << g.to_string();  // with a row list the head reads [B, rows, E] too
    for (const ir::Node& n : g.nodes)
      if (n.op_type == "FusedAttention")
        EXPECT_EQ(g.type_of(n.inputs[0])->shape[1].value, static_cast<int64_t>(index.size())) << g.to_string();
    SCOPED_TRACE(std::to_string(index.size()) + " row(s)");
    expect_tensors_close(run_cuda(g, feeds).at("logits"), want, 1e-3, 1e-3);
    for (const Precision16& p : kPrecisions16) {
      SCOPED_TRACE(p.name);
      ir::Graph h = g;
      set_graph_precision(h, p.name);
      // Attention over 197 keys, three GEMMs (K up to 3072), GELU and two LayerNorms in 16 bits: logits ~1-3.
      expect_tensors_close(run_cuda(h, feeds).at("logits"), want, 48 * p.u, 24 * p.u);
    }
  }
}

}  // namespace kilnrt::cudatest
