// CUDA vs CPU-reference comparisons for the CUDA layer of RMSNormalization (every axis, negative axes, broadcast scale,
// epsilon). float16 / bfloat16 models run as float32 islands and are compared with the CPU reference too. The node must
// be placed on CUDA; GPU tests skip with a message without a GPU; the support checks at the end run everywhere.
#include <cmath>
#include <cstring>
#include <random>

#include "cuda_one_op_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

// ---- RMSNormalization -------------------------------------------------------------------------------------------
TEST(CudaRmsNormalization, RmsNormalizationEveryAxis) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Shape xs = {2, 3, 4, 5};
  uint32_t seed = 500;
  for (int64_t axis = -4; axis < 4; ++axis) {
    const int64_t a = axis < 0 ? axis + 4 : axis;
    const Shape norm(xs.begin() + a, xs.end());
    SCOPED_TRACE("axis " + std::to_string(axis));
    Op op("RMSNormalization", 2);
    op.i("axis", axis);
    if (axis == 1) op.f("epsilon", 1e-2f);
    compare_on_cuda(op.node, {random_tensor(xs, seed += 3), random_tensor(norm, seed + 1)}, {false, true}, 23);
    // Scale broadcast: its last dim only, and a single value.
    compare_on_cuda(op.node, {random_tensor(xs, seed + 2), random_tensor({norm.back()}, seed + 3)}, {}, 23);
    compare_on_cuda(op.node, {random_tensor(xs, seed + 4), random_tensor({1}, seed + 5)}, {}, 23);
  }
  // Default axis (-1), long rows (several warps per row), 1-D input.
  compare_on_cuda(Op("RMSNormalization", 2).node, {random_tensor({3, 1000}, 1), random_tensor({1000}, 2)}, {}, 23);
  compare_on_cuda(Op("RMSNormalization", 2).node, {random_tensor({7}, 3), random_tensor({7}, 4)}, {}, 23);
  // Empty rows: nothing to do.
  compare_on_cuda(Op("RMSNormalization", 2).node, {random_tensor({0, 4}, 5), random_tensor({4}, 6)}, {}, 23);
  compare_16bit(Op("RMSNormalization", 2).i("axis", 1).node, {random_tensor({2, 3, 8}, 7), random_tensor({3, 8}, 8)},
                23);
}

// ---- support checks (no GPU needed)
// ----------------------------------------------------------------------------------
TEST(CudaRmsNormalization, SupportCheckAccepts) {
  std::vector<OneNode> nets;
  nets.emplace_back(Op("RMSNormalization", 2).i("axis", -2).node,
                    std::vector<Tensor>{random_tensor({2, 3, 4}, 5), random_tensor({3, 4}, 6)}, std::vector<bool>{},
                    23);
  // float16 models (float32 islands).
  nets.emplace_back(Op("RMSNormalization", 2).node,
                    std::vector<Tensor>{to_dtype(random_tensor({2, 4}, 10), DType::kFloat16),
                                        to_dtype(random_tensor({4}, 11), DType::kFloat16)},
                    std::vector<bool>{}, 23);
  expect_supported(nets);
}

}  // namespace
}  // namespace kilnrt::cudatest
