// CUDA vs CPU-reference comparison of OneHot (depth a constant host value): int64 / int32 / float32 indices, out of
// range and negative indices, every axis; outputs must match exactly. Skips with a message without a GPU.
#include "cuda_exact_compare_util.h"
#include "cuda_one_op_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

TEST(CudaOneHot, MatchesCpuExactly) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor idx = i64({0, 4, -1, 7, 2, -6}, {2, 3});  // 7 and -6 are out of range: all "off"
  const Tensor depth = i64({5}, {});
  const Tensor vals = f32({-1.5f, 2.f}, {2});
  compare_node_exact(Op("OneHot", 3).node, {idx, depth, vals}, {false, true, false}, 11);
  compare_node_exact(Op("OneHot", 3).i("axis", 0).node, {idx, depth, vals}, {false, true, false}, 11);
  compare_node_exact(Op("OneHot", 3).i("axis", 1).node, {i32({1, 0, 3}, {3}), f32({4.f}, {}), i64({0, 9}, {2})},
                     {false, true, false}, 11);
  compare_node_exact(Op("OneHot", 3).node, {f32({0.f, 2.f, 1.f}, {3}), depth, vals}, {false, true, true}, 11);
}

}  // namespace
}  // namespace kilnrt::cudatest
