// The CUDA layer of com.kilnrt:EmbedLayerNorm (passes/fuse_embed_layernorm): the fused graph on the GPU
// matches the CPU reference of the unfused Gather -> Add -> LayerNorm in float32, float16 and bfloat16, on the
// vectorized kernel's path (H = 768, BERT's width; H = 64) and on the fallback (H = 100: rows of 200 / 400 bytes),
// with int32 and negative ids and every addend form. GPU tests skip with a message without a GPU.
#include "conv_fusion_test_util.h"
#include "cuda_backend_test_util.h"
#include "embed_layernorm_test_util.h"
#include "passes/fuse_embed_layernorm.h"

namespace kilnrt::cudatest {
namespace {

using embedtest::EmbedSpec;
using testing_conv::string_attr;

TEST(CudaEmbedLayerNorm, MatchesCpuReferenceOfTheUnfusedGraph) {
  KILNRT_SKIP_WITHOUT_GPU();
  std::vector<std::pair<const char*, EmbedSpec>> specs;
  EmbedSpec bert;
  bert.b = 4;
  bert.s = 16;
  bert.h = 768;
  bert.vocab = 300;
  specs.push_back({"bert-like H 768", bert});
  EmbedSpec s32;
  s32.ids32 = true;
  s32.negative_ids = true;
  specs.push_back({"int32 negative ids H 64", s32});
  EmbedSpec full;
  full.addend = {2, 5, 64};
  full.bias = false;
  specs.push_back({"[B, S, H] addend, no bias", full});
  EmbedSpec odd;
  odd.h = 100;
  odd.addend = {5, 100};
  specs.push_back({"fallback H 100", odd});
  for (const auto& [what, sp] : specs) {
    for (const char* precision : {"", "fp16", "bf16"}) {
      SCOPED_TRACE(std::string(what) + " " + (*precision ? precision : "fp32"));
      embedtest::EmbedCase c = embedtest::make_embed_case(sp);
      const Tensor want = run_cpu(c.g, c.feeds).at("y");
      ir::Graph g = c.g;
      ASSERT_EQ(passes::fuse_embed_layernorm(g), 1u);
      passes::infer_shapes(g);
      if (*precision)
        for (ir::Node& n : g.nodes) n.attrs["kilnrt_precision"] = string_attr(precision);
      // |y| ~ 1-3: float32 sums; 16-bit: the table, addend and output rounded.
      const double tol = !*precision ? 2e-5 : std::string(precision) == "fp16" ? 8e-3 : 6e-2;
      expect_tensors_close(run_cuda(g, c.feeds).at("y"), want, tol, tol);
    }
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
