// ViT-style patch embedding graphs for the patchify_conv tests (CPU: test_patchify_conv.cc, GPU:
// test_cuda_patchify.cc): x [N, C, H, W] -> Conv(kernel = stride = P) [-> bias] -> Reshape [N, O, L] ->
// Transpose (0, 2, 1) -> [N, L, O], optionally with a variation that must stop the rewrite.
#pragma once
#include <string>

#include "attention_test_util.h"

namespace kilnrt::patchtest {

struct PatchCase {
  int64_t n = 2, c = 3, h = 32, w = 48, o = 8, k = 8, stride = 8;
  bool bias = true;
  int64_t pad = 0;
  bool extra_reader = false;  // the Conv output is also a graph output
  std::vector<int64_t> perm = {0, 2, 1};
};

inline ir::Graph patch_graph(const PatchCase& pc, std::map<std::string, Tensor>* feeds) {
  attntest::Builder b;
  b.input("x", {pc.n, pc.c, pc.h, pc.w});
  std::vector<std::string> ins = {"x", b.constant("w", passtest::random_tensor({pc.o, pc.c, pc.k, pc.k}, 11))};
  if (pc.bias) ins.push_back(b.constant("b", passtest::random_tensor({pc.o}, 12)));
  ir::Node& conv = b.node("Conv", ins, "y");
  auto ints = [](std::vector<int64_t> v) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kInts;
    a.ints = std::move(v);
    return a;
  };
  conv.attrs["kernel_shape"] = ints({pc.k, pc.k});
  conv.attrs["strides"] = ints({pc.stride, pc.stride});
  conv.attrs["pads"] = ints({pc.pad, pc.pad, pc.pad, pc.pad});
  const int64_t hp = (pc.h + 2 * pc.pad - pc.k) / pc.stride + 1, wp = (pc.w + 2 * pc.pad - pc.k) / pc.stride + 1;
  b.node("Reshape",
         {"y", b.constant("shape", Tensor::from_vector(std::vector<int64_t>{-1, pc.o, hp * wp}, DType::kInt64, {3}))},
         "tokens_t");
  b.transpose("tokens_t", pc.perm, "tokens");
  b.output("tokens");
  if (pc.extra_reader) b.output("y");
  *feeds = b.feeds;
  return b.finish();
}

}  // namespace kilnrt::patchtest
