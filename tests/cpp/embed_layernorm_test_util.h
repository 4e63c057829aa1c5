// The embedding + LayerNorm graphs of the EmbedLayerNorm tests (CPU pass test and CUDA layer test): BERT's first
// rows, Gather(table [V, H], ids) -> Add(addend) -> LayerNormalization(last axis, scale, bias).
#pragma once
#include <random>

#include "attention_test_util.h"
#include "passes/shape_inference.h"

namespace kilnrt::embedtest {

struct EmbedCase {
  ir::Graph g;
  std::map<std::string, Tensor> feeds;
};

struct EmbedSpec {
  int64_t b = 2, s = 5, h = 64, vocab = 50;
  Shape addend;               // default {1, s, h}
  bool ids32 = false;         // int32 ids (else int64)
  bool addend_first = false;  // Add(addend, gathered)
  bool bias = true;
  bool kilnrt_ln = false;  // com.kilnrt:LayerNormalization instead of ONNX's
  int64_t ln_axis = -1;
  bool gather_read_twice = false;  // the gathered rows are also a graph output
  bool negative_ids = false;       // some ids counted from the end
};

inline EmbedCase make_embed_case(const EmbedSpec& sp) {
  attntest::Builder b(17);
  const Shape ids_shape = {sp.b, sp.s};
  b.g.inputs.push_back("ids");
  ir::TensorType it;
  it.dtype = sp.ids32 ? DType::kInt32 : DType::kInt64;
  it.has_shape = true;
  it.shape = ir::shape_to_sym(ids_shape);
  b.g.types["ids"] = it;
  Tensor ids = Tensor::empty(it.dtype, ids_shape);
  std::mt19937 rng(5);
  for (int64_t i = 0; i < ids.numel(); ++i) {
    int64_t v = int64_t(rng() % uint32_t(sp.vocab));
    if (sp.negative_ids && i % 3 == 0) v -= sp.vocab;
    if (sp.ids32)
      ids.data<int32_t>()[i] = int32_t(v);
    else
      ids.data<int64_t>()[i] = v;
  }
  b.feeds["ids"] = ids;
  b.constant("table", attntest::random_tensor({sp.vocab, sp.h}, 31));
  const Shape as = sp.addend.empty() ? Shape{1, sp.s, sp.h} : sp.addend;
  b.constant("addend", attntest::random_tensor(as, 32, -0.5f, 0.5f));
  b.constant("scale", attntest::random_tensor({sp.h}, 33, 0.5f, 1.5f));
  if (sp.bias) b.constant("bias", attntest::random_tensor({sp.h}, 34));
  ir::Attribute axis0;
  axis0.kind = ir::Attribute::Kind::kInt;
  axis0.i = 0;
  b.node("Gather", {"table", "ids"}, "emb").attrs["axis"] = axis0;
  if (sp.addend_first)
    b.node("Add", {"addend", "emb"}, "x");
  else
    b.node("Add", {"emb", "addend"}, "x");
  std::vector<std::string> ln_in = {"x", "scale"};
  if (sp.bias) ln_in.push_back("bias");
  ir::Node& ln = b.node("LayerNormalization", ln_in, "y");
  if (sp.kilnrt_ln) {
    ln.domain = "com.kilnrt";
    b.g.opsets["com.kilnrt"] = 1;
  }
  ir::Attribute ax;
  ax.kind = ir::Attribute::Kind::kInt;
  ax.i = sp.ln_axis;
  ln.attrs["axis"] = ax;
  ir::Attribute eps;
  eps.kind = ir::Attribute::Kind::kFloat;
  eps.f = 1e-12f;
  ln.attrs["epsilon"] = eps;
  b.output("y");
  if (sp.gather_read_twice) b.output("emb");
  return EmbedCase{b.finish(), b.feeds};
}

}  // namespace kilnrt::embedtest
