// CUDA vs CPU-reference comparison of MaxUnpool with MaxPool-like indices, with and without a constant output_shape;
// outputs must match exactly. Skips with a message without a GPU.
#include "cuda_exact_compare_util.h"
#include "cuda_one_op_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

TEST(CudaMaxUnpool, MatchesCpuExactly) {
  KILNRT_SKIP_WITHOUT_GPU();
  // Indices as MaxPool(kernel 2, stride 2) of a [1, 2, 4, 4] input would give them (one per window).
  std::vector<int64_t> idx;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j) idx.push_back(c * 16 + (2 * i + (i + c) % 2) * 4 + 2 * j + (j + c + 1) % 2);
  const Tensor x = random_tensor({1, 2, 2, 2}, 103);
  const Tensor ind = i64(idx, {1, 2, 2, 2});
  compare_node_exact(Op("MaxUnpool", 2).ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).node, {x, ind}, {}, 11);
  compare_node_exact(Op("MaxUnpool", 3).ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).node,
                     {x, ind, i64({1, 2, 5, 6}, {4})}, {false, false, true}, 11);
}

}  // namespace
}  // namespace kilnrt::cudatest
