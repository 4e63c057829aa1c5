// Graphs for the fuse_add_layernorm tests (CPU: test_add_layernorm.cc, GPU: test_cuda_add_layernorm.cc): BERT's
// post-LN sublayer output  LayerNorm(MatMul(x, W) + b + x)  and its embedding sum  LayerNorm(emb + pos [1, S, E]),
// with variations that must stop the fusion.
#pragma once
#include <cmath>
#include <string>

#include "attention_test_util.h"
#include "hoist_gather_test_util.h"

namespace kilnrt::addlntest {

struct AddLnCase {
  int64_t b = 2, s = 9, e = 16;
  bool pre_ln = false;         // the sum is also a graph output (a pre-LN residual stream): no fusion
  bool embedding = false;      // the addend is a [1, S, E] constant (position embeddings) instead of the residual
};

inline ir::Graph add_ln_graph(const AddLnCase& c, std::map<std::string, Tensor>* feeds) {
  attntest::Builder b;
  b.input("x", {c.b, c.s, c.e});
  if (c.embedding) {
    b.node("Add", {"x", b.constant("pos", attntest::random_tensor({1, c.s, c.e}, 30))}, "sum");
  } else {
    hoisttest::linear(b, "x", "dense", c.e, c.e);
    b.node("Add", {"dense", "x"}, "sum");
  }
  hoisttest::layer_norm(b, "sum", "ln", c.e, "y");
  b.output("y");
  if (c.pre_ln) b.output("sum");
  *feeds = b.feeds;
  return b.finish();
}

}  // namespace kilnrt::addlntest
