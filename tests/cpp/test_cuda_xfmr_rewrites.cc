// The transformer graph rewrites on the GPU, in float32 / float16 / bfloat16 CUDA engines against the
// original graph on the CPU: passes/patchify_conv (ViT's patch embedding as im2col Transpose + MatMul + bias) and
// passes/split_packed_projection (MultiheadAttention's packed in-projection as one GEMM per part, then fused
// attention). Skips without a GPU.
#include "cuda_backend_test_util.h"
#include "passes/patchify_conv.h"
#include "passes/optimize.h"
#include "patchify_test_util.h"
#include "split_projection_test_util.h"

namespace kilnrt::cudatest {
namespace {

TEST(CudaXfmrRewrites, PatchifiedEmbeddingMatchesCpuConv) {
  KILNRT_SKIP_WITHOUT_GPU();
  patchtest::PatchCase pc;
  pc.n = 3;
  pc.h = pc.w = 64;
  pc.k = pc.stride = 16;
  pc.o = 48;
  std::map<std::string, Tensor> feeds;
  const ir::Graph before = patchtest::patch_graph(pc, &feeds);
  const auto want = run_cpu(before, feeds).at("tokens");
  for (const char* prec : {"", "fp16", "bf16"}) {
    SCOPED_TRACE(*prec ? prec : "fp32");
    ir::Graph g = before;
    ASSERT_EQ(passes::patchify_conv(g), 1u);
    for (ir::Node& n : g.nodes) {
      if (!*prec) break;
      n.attrs["kilnrt_precision"].kind = ir::Attribute::Kind::kString;
      n.attrs["kilnrt_precision"].s = prec;
    }
    passes::infer_shapes(g);
    // K = 3 * 16 * 16 = 768 products of values in [-1, 1]: sums up to ~25; 16-bit inputs and output rounding.
    const double tol = !*prec ? 1e-4 : std::string(prec) == "fp16" ? 0.05 : 0.3;
    expect_tensors_close(run_cuda(g, feeds).at("tokens"), want, tol, 1e-2);
  }
}

TEST(CudaXfmrRewrites, SplitPackedProjectionMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  attntest::Builder b;
  const ir::Graph before = attntest::projected_mha_block(b, 3, 37, 2, 32, true);
  const auto want = run_cpu(before, b.feeds).at("y");
  for (const char* prec : {"", "fp16", "bf16"}) {
    SCOPED_TRACE(*prec ? prec : "fp32");
    ir::Graph g = before;
    passes::optimize_graph(g);
    size_t fused = 0, gemms = 0, slices = 0;
    for (const ir::Node& n : g.nodes) {
      fused += n.op_type == "FusedAttention";
      gemms += n.op_type == "FusedMatMul";
      slices += n.op_type == "Slice";
    }
    EXPECT_EQ(fused, 1u);
    EXPECT_EQ(gemms, 1u);  // split, then packed again after fusing (pack_qkv_projection)
    EXPECT_EQ(slices, 0u);
    for (ir::Node& n : g.nodes) {
      if (!*prec) break;
      n.attrs["kilnrt_precision"].kind = ir::Attribute::Kind::kString;
      n.attrs["kilnrt_precision"].s = prec;
    }
    passes::infer_shapes(g);
    // Projection sums of 64 products (|x| <= 1, |w| <= 0.3), then attention: outputs of order 1.
    const double tol = !*prec ? 1e-4 : std::string(prec) == "fp16" ? 0.02 : 0.1;
    expect_tensors_close(run_cuda(g, b.feeds).at("y"), want, tol, 2e-2);
  }
}

TEST(CudaXfmrRewrites, BatchFirstBlockWithoutTransposesMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  attntest::Builder b;
  const ir::Graph before = attntest::batch_first_mha_block(b, 3, 37, 2, 32);
  const auto want = run_cpu(before, b.feeds).at("out");
  for (const char* prec : {"", "fp16", "bf16"}) {
    SCOPED_TRACE(*prec ? prec : "fp32");
    ir::Graph g = before;
    passes::optimize_graph(g);
    size_t transposes = 0, gemms = 0;
    for (ir::Node& n : g.nodes) {
      transposes += n.op_type == "Transpose";
      gemms += n.op_type == "FusedMatMul";
      if (!*prec) continue;
      n.attrs["kilnrt_precision"].kind = ir::Attribute::Kind::kString;
      n.attrs["kilnrt_precision"].s = prec;
    }
    EXPECT_EQ(transposes, 0u);
    EXPECT_EQ(gemms, 2u);  // the packed in-projection, the out-projection
    passes::infer_shapes(g);
    const double tol = !*prec ? 1e-4 : std::string(prec) == "fp16" ? 0.03 : 0.15;
    expect_tensors_close(run_cuda(g, b.feeds).at("out"), want, tol, 2e-2);
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
