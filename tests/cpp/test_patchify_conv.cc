// passes/patchify_conv on the CPU backend: ViT's patch embedding (Conv with kernel = stride, read as
// tokens) becomes Reshape -> Transpose -> Reshape -> MatMul [-> Add] with the same outputs; convolutions that are
// not patch embeddings, or whose output is read elsewhere or in another layout, are left alone.
#include <gtest/gtest.h>

#include "passes/patchify_conv.h"
#include "patchify_test_util.h"

namespace kilnrt {
namespace {

using passtest::count_ops;
using passtest::max_rel_diff;
using patchtest::PatchCase;

// Rewrites a copy of the case's graph; returns how many convolutions were rewritten, checks equal outputs.
size_t rewrite_and_compare(const PatchCase& pc) {
  std::map<std::string, Tensor> feeds;
  const ir::Graph before = patchtest::patch_graph(pc, &feeds);
  ir::Graph after = before;
  const size_t n = passes::patchify_conv(after);
  passes::infer_shapes(after);
  const auto want = passtest::run_cpu(before, feeds);
  const auto got = passtest::run_cpu(after, feeds);
  // Float32 sums of up to C * kh * kw = 768 products in another order than the convolution's.
  for (const auto& [name, t] : want) EXPECT_LT(max_rel_diff(got.at(name), t), 1e-4) << name;
  return n;
}

TEST(PatchifyConv, VitPatchEmbeddingBecomesOneGemm) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    PatchCase pc;
    pc.bias = bias;
    std::map<std::string, Tensor> feeds;
    ir::Graph g = patchtest::patch_graph(pc, &feeds);
    ASSERT_EQ(passes::patchify_conv(g), 1u);
    EXPECT_EQ(count_ops(g, "Conv"), 0u);
    EXPECT_EQ(count_ops(g, "MatMul"), 1u);
    EXPECT_EQ(count_ops(g, "Transpose"), 1u);  // the im2col copy; the token transpose is gone
    EXPECT_EQ(count_ops(g, "Add"), bias ? 1u : 0u);
    EXPECT_EQ(rewrite_and_compare(pc), 1u);
  }
  // ViT-B/16's geometry on a small batch: 224 x 224, 16 x 16 patches, 3 -> 32 channels.
  PatchCase vit;
  vit.n = 1;
  vit.h = vit.w = 224;
  vit.k = vit.stride = 16;
  vit.o = 32;
  EXPECT_EQ(rewrite_and_compare(vit), 1u);
}

TEST(PatchifyConv, OtherConvolutionsAndLayoutsAreLeftAlone) {
  PatchCase overlap;  // stride below the kernel: patches overlap
  overlap.stride = 4;
  EXPECT_EQ(rewrite_and_compare(overlap), 0u);
  PatchCase padded;
  padded.pad = 1;
  padded.h = padded.w = 30;
  EXPECT_EQ(rewrite_and_compare(padded), 0u);
  PatchCase uneven;  // 36 is not a multiple of 8: the conv drops a border
  uneven.h = 36;
  EXPECT_EQ(rewrite_and_compare(uneven), 0u);
  PatchCase shared;  // the feature map is also a graph output
  shared.extra_reader = true;
  EXPECT_EQ(rewrite_and_compare(shared), 0u);
  PatchCase other_perm;  // tokens not transposed to [N, L, O]
  other_perm.perm = {1, 0, 2};
  EXPECT_EQ(rewrite_and_compare(other_perm), 0u);
}

}  // namespace
}  // namespace kilnrt
