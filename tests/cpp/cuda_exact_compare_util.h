// compare_node_exact: a one-node graph run on the CPU reference and on CUDA, every output required bit-identical
// (integer and 8-bit outputs included, which expect_tensors_close does not take). Used by the CUDA tests of OneHot,
// MaxUnpool and the integer quantization layers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_backend_test_util.h"

namespace kilnrt::cudatest {

// Runs `node` on both backends and requires every output to be bit-identical (int8 included, which
// expect_tensors_close does not take).
inline void compare_node_exact(const ir::Node& node, const std::vector<Tensor>& inputs,
                               const std::vector<bool>& constant = {}, int64_t opset = 17) {
  OneNode one(node, inputs, constant, opset);
  const auto want = run_cpu(one.g, one.feeds);
  const auto got = run_cuda(one.g, one.feeds);
  for (const auto& [name, t] : want) {
    SCOPED_TRACE(node.op_type + " output " + name);
    const Tensor& g = got.at(name);
    ASSERT_EQ(g.dtype(), t.dtype());
    ASSERT_EQ(g.shape(), t.shape());
    ASSERT_EQ(g.nbytes(), t.nbytes());
    const auto* a = static_cast<const uint8_t*>(g.raw());
    const auto* b = static_cast<const uint8_t*>(t.raw());
    for (size_t i = 0; i < t.nbytes(); ++i) ASSERT_EQ(a[i], b[i]) << "byte " << i << " of " << t.nbytes() << " differs";
  }
}

}  // namespace kilnrt::cudatest
