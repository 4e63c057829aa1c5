// fold_layer_scale on the GPU: com.kilnrt:FusedMatMul with the skip connection as cuBLASLt's C operand at
// convnext_tiny's shapes, and ConvNeXt blocks through optimize_graph in 16-bit engines with NHWC storage forced on
// and off, against the float32 CPU reference of the unrewritten graph. Skips with a message without a GPU.
#include <cmath>
#include <cstdlib>

#include "attention_test_util.h"
#include "backends/cuda/cuda_plan.h"
#include "cuda/context_guard.h"
#include "cuda_backend_test_util.h"
#include "layer_scale_test_util.h"
#include "passes/optimize.h"

namespace kilnrt::cudatest {
namespace {

// Node name -> tactic of the CUDA plan of `g`.
std::map<std::string, std::string> plan_tactics(const ir::Graph& g) {
  kilnrt::cuda::ContextGuard guard(0);
  backends::cuda::CudaPlan plan(g, 0);
  std::map<std::string, std::string> out;
  for (const auto& [node, t] : plan.tactics()) out[node] = t;
  return out;
}

}  // namespace

TEST(CudaFoldLayerScale, FusedMatMulResidualAtConvNextShapesMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  // convnext_tiny's second Linear at stage 1 (56 x 56 x 384 -> 96) and stage 4 (7 x 7 x 3072 -> 768), batch 2, with
  // its bias and the block input (channels last) as C; gamma already folded into W.
  struct Geo {
    int64_t hw, k, n;
  };
  for (const Geo& geo : {Geo{56, 384, 96}, Geo{7, 3072, 768}}) {
    for (const Precision16& p : kPrecisions16) {
      SCOPED_TRACE(std::to_string(geo.k) + "->" + std::to_string(geo.n) + " " + p.name);
      attntest::Builder b;
      b.input("a", {2, geo.hw, geo.hw, geo.k}, 0.f, 1.f);
      b.input("res", {2, geo.hw, geo.hw, geo.n}, -2.f, 2.f);
      const float s = 1.7f / std::sqrt(float(geo.k));
      b.constant("w", rounded_to_16bit(attntest::random_tensor({geo.k, geo.n}, 11, -s, s), p.dt));
      b.constant("bias", rounded_to_16bit(attntest::random_tensor({geo.n}, 12), p.dt));
      ir::Node& n = b.node("FusedMatMul", {"a", "w", "bias", "res"}, "y");
      n.domain = "com.kilnrt";
      b.g.opsets["com.kilnrt"] = 1;
      b.output("y");
      ir::Graph g = b.finish();
      set_graph_precision(g, p.name);
      std::map<std::string, Tensor> feeds = {{"a", rounded_to_16bit(b.feeds["a"], p.dt)},
                                             {"res", rounded_to_16bit(b.feeds["res"], p.dt)}};
      // |y| up to ~4, rounded once to 16 bits (GEMM, bias and C summed in float32).
      const double tol = 8 * p.u;
      const Tensor y = run_cuda(g, feeds).at("y");
      expect_tensors_close(y, run_cpu(g, feeds).at("y"), 3 * tol, tol);
      // The residual is really added: without it the result differs by |res| ~ 1 on average.
      ir::Graph plain = g;
      plain.nodes[0].inputs.resize(3);
      EXPECT_GT(attntest::max_rel_diff(y, run_cpu(plain, feeds).at("y")), 0.3);
    }
  }
}

TEST(CudaFoldLayerScale, ConvNextBlocksMatchCpuNhwcAndNchw) {
  KILNRT_SKIP_WITHOUT_GPU();
  // Two stage-1 blocks (96 channels, 28 x 28: the GEMMs at M = 1568) and two stage-4-like blocks (8 x 8, 256 ch).
  struct Geo {
    int64_t c, hw;
  };
  for (const Geo& geo : {Geo{96, 28}, Geo{256, 8}}) {
    layerscaletest::BlockCase bc;
    bc.c = geo.c;
    bc.h = bc.w = geo.hw;
    const ir::Graph original = layerscaletest::blocks_graph(bc);
    const auto feeds = layerscaletest::block_feeds(original);
    const auto want = run_cpu(original, feeds);
    for (const char* nhwc : {"1", "0"}) {
      ScopedEnv layout("KILNRT_CUDA_NHWC", nhwc);
      for (const Precision16& p : kPrecisions16) {
        SCOPED_TRACE(std::to_string(geo.c) + "ch NHWC=" + nhwc + " " + p.name);
        ir::Graph g = original;
        passes::optimize_graph(g);
        set_graph_precision(g, p.name);
        size_t residual_gemms = 0, pointwise = 0;
        for (const ir::Node& n : g.nodes) {
          residual_gemms += n.op_type == "FusedMatMul" && n.inputs.size() == 4 && !n.inputs[3].empty();
          pointwise += n.op_type == "FusedPointwise" || n.op_type == "Mul" || n.op_type == "Add";
        }
        EXPECT_EQ(residual_gemms, 2u) << g.to_string();
        EXPECT_EQ(pointwise, 0u) << g.to_string();
        const auto got = run_cuda(g, feeds);
        // Two blocks of dwconv 7x7, LayerNorm, two GEMMs (K = C, 4C) and GELU, in 16 bits: |y| ~ 2-4.
        expect_tensors_close(got.at(original.outputs[0]), want.at(original.outputs[0]), 32 * p.u, 16 * p.u);
        if (std::string(nhwc) == "1") {
          // Block 1's skip connection is block 0's NHWC output: its permutation is a view, like the one after the
          // GEMM (block 0's; block 1's writes the NCHW graph output).
          const auto tactics = plan_tactics(g);
          size_t views = 0, residual_views = 0;
          for (const ir::Node& n : g.nodes) {
            if (n.op_type != "Transpose") continue;
            const bool view = tactics.at(n.name).find("+nhwc-view") != std::string::npos;
            views += view;
            residual_views += view && n.name.find("/permute_residual") != std::string::npos;
          }
          EXPECT_EQ(residual_views, 1u);
          EXPECT_GE(views, 4u);
        }
      }
    }
  }
}

}  // namespace kilnrt::cudatest
