// com.kilnrt:AddLayerNorm on the GPU (issue 7): the vector kernel (BERT's 768-wide rows, a residual of X's shape or
// position embeddings repeated over the batch) and the fallback (rows of 12 values: Add kernel, then LayerNorm in
// place), float32 and 16-bit, against the CPU reference; and BERT's post-LN sublayer through optimize_graph.
// Skips with a message without a GPU.
#include "add_layernorm_test_util.h"
#include "cuda_backend_test_util.h"
#include "passes/optimize.h"

namespace kilnrt::cudatest {
namespace {

ir::Node add_ln_node(bool with_params) {
  ir::Node n;
  n.name = "add_ln";
  n.op_type = "AddLayerNorm";
  n.domain = "com.kilnrt";
  n.inputs = {"x", "r"};
  if (with_params) n.inputs.insert(n.inputs.end(), {"scale", "bias"});
  n.outputs = {"y"};
  n.attrs["epsilon"].kind = ir::Attribute::Kind::kFloat;
  n.attrs["epsilon"].f = 1e-5f;
  return n;
}

}  // namespace

TEST(CudaAddLayerNorm, MatchesCpuVectorAndFallbackPaths) {
  KILNRT_SKIP_WITHOUT_GPU();
  struct Case { Shape x, r; bool params; };
  // 768: the vector kernel (residual, repeated embeddings, a [E] vector); 12: the fallback.
  for (const Case& c : {Case{{2, 128, 768}, {2, 128, 768}, true}, Case{{4, 128, 768}, {1, 128, 768}, true},
                        Case{{3, 5, 768}, {768}, false}, Case{{2, 7, 12}, {2, 7, 12}, true},
                        Case{{2, 7, 12}, {7, 12}, false}}) {
    SCOPED_TRACE(shape_to_string(c.x) + " + " + shape_to_string(c.r));
    const int64_t n = c.x.back();
    std::vector<Tensor> in = {attntest::random_tensor(c.x, 1, -2.f, 2.f), attntest::random_tensor(c.r, 2, -2.f, 2.f)};
    std::vector<bool> constant = {false, false};
    if (c.params) {
      in.push_back(attntest::random_tensor({n}, 3, 0.5f, 1.5f));
      in.push_back(attntest::random_tensor({n}, 4, -0.5f, 0.5f));
      constant.insert(constant.end(), {true, true});
    }
    const ir::Node node = add_ln_node(c.params);
    compare_on_cuda(node, in, constant, 1, 2e-5, 2e-5);
    compare16_on_cuda(node, in, constant, 1, 2.0);
  }
}

TEST(CudaAddLayerNorm, BertSublayerThroughOptimizeMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (bool embedding : {false, true}) {
    SCOPED_TRACE(embedding ? "embedding" : "residual");
    addlntest::AddLnCase c;
    c.b = 4;
    c.s = 128;
    c.e = 768;
    c.embedding = embedding;
    std::map<std::string, Tensor> feeds;
    const ir::Graph original = addlntest::add_ln_graph(c, &feeds);
    const Tensor want = run_cpu(original, feeds).at("y");
    ir::Graph g = original;
    passes::optimize_graph(g);
    size_t fused = 0;
    for (const ir::Node& n : g.nodes) fused += n.op_type == "AddLayerNorm";
    EXPECT_EQ(fused, 1u) << g.to_string();
    expect_tensors_close(run_cuda(g, feeds).at("y"), want, 1e-4, 1e-4);
    for (const Precision16& p : kPrecisions16) {
      SCOPED_TRACE(p.name);
      ir::Graph h = g;
      for (ir::Node& n : h.nodes) {
        n.attrs[backends::cuda::kPrecisionAttr].kind = ir::Attribute::Kind::kString;
        n.attrs[backends::cuda::kPrecisionAttr].s = p.name;
      }
      // LayerNorm outputs of size ~1-3 after a 768-long GEMM and the sum, in 16 bits.
      expect_tensors_close(run_cuda(h, feeds).at("y"), want, 24 * p.u, 16 * p.u);
    }
  }
}

}  // namespace kilnrt::cudatest
