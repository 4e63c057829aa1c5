// CUDA vs CPU-reference comparisons for the CUDA layer of TensorScatter (linear / circular, axes, omitted
// write_indices). The node must be placed on CUDA; GPU tests skip with a message without a GPU; the support checks at
// the end run everywhere.
#include <cmath>
#include <cstring>
#include <random>

#include "cuda_one_op_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

// ---- TensorScatter -------------------------------------------------------------------------------------------------
TEST(CudaTensorScatter, TensorScatter) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor cache = random_tensor({2, 3, 6, 4}, 70), update = random_tensor({2, 3, 2, 4}, 71);
  // linear (default axis -2), write_indices a graph input and a constant.
  compare_on_cuda(Op("TensorScatter", 3).node, {cache, update, i64({1, 4}, {2})}, {}, 24);
  compare_on_cuda(Op("TensorScatter", 3).node, {cache, update, i64({0, 3}, {2})}, {false, false, true}, 24);
  // circular: positions wrap (5, 6 -> 5, 0) and a negative start.
  const Op circular = Op("TensorScatter", 3).s("mode", "circular");
  const Tensor got =
      compare_on_cuda(circular.node, {cache, update, i64({5, -1}, {2})}, {}, 24).at(circular.node.outputs[0]);
  EXPECT_EQ(got.data<float>()[0], update.data<float>()[4]);  // batch 0, row 0 of the cache <- update row 1
  // write_indices omitted (zeros), axis 1 of a 3-D cache, the whole length.
  compare_on_cuda(Op("TensorScatter", 2).i("axis", 1).node,
                  {random_tensor({2, 5, 3}, 72), random_tensor({2, 5, 3}, 73)}, {}, 24);
  compare_on_cuda(Op("TensorScatter", 3).i("axis", -1).s("mode", "circular").node,
                  {random_tensor({3, 2, 4}, 74), random_tensor({3, 2, 3}, 75), i64({2, 3, 0}, {3})}, {}, 24);
  // Other dtypes: int64, float16 (moved natively), an empty update.
  compare_on_cuda(Op("TensorScatter", 3).node,
                  {ints<int64_t>(DType::kInt64, {2, 4, 3}, 76, -50, 50),
                   ints<int64_t>(DType::kInt64, {2, 1, 3}, 77, -50, 50), i64({3, 0}, {2})},
                  {}, 24);
  compare_on_cuda(Op("TensorScatter", 3).node, {halves(cache), halves(update), i64({2, 0}, {2})}, {}, 24);
  compare_on_cuda(Op("TensorScatter", 3).node, {cache, Tensor::empty(DType::kFloat32, {2, 3, 0, 4}), i64({6, 6}, {2})},
                  {}, 24);
  compare16_on_cuda(Op("TensorScatter", 3).node, {cache, update, i64({1, 4}, {2})}, {}, 24, 1.0);
  // A constant linear-mode position past the cache is refused like the CPU reference does.
  OneNode bad(Op("TensorScatter", 3).node, {cache, update, i64({0, 5}, {2})}, {false, false, true}, 24);
  EXPECT_THROW(run_cpu(bad.g, bad.feeds), Error);
  try {
    run_cuda(bad.g, bad.feeds);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside the cache length"), std::string::npos) << e.what();
  }
}

// ---- support checks (no GPU needed)
// ----------------------------------------------------------------------------------
TEST(CudaTensorScatter, SupportCheckAccepts) {
  std::vector<OneNode> nets;
  nets.emplace_back(
      Op("TensorScatter", 3).node,
      std::vector<Tensor>{random_tensor({1, 2, 4, 2}, 87), random_tensor({1, 2, 1, 2}, 88), i64({1}, {1})},
      std::vector<bool>{}, 24);
  expect_supported(nets);
}

// ... and refuses what the kernel does not run, saying why.
TEST(CudaTensorScatter, SupportCheckRefuses) {
  OneNode scatter(
      Op("TensorScatter", 3).node,
      {random_tensor({1, 2, 4, 2}, 90), random_tensor({1, 2, 1, 2}, 91), ints<int32_t>(DType::kInt32, {1}, 92, 0, 2)},
      {}, 24);
  EXPECT_NE(backends::cuda::cuda_supports(scatter.g.nodes.back(), scatter.g).find("int64"), std::string::npos);
}

}  // namespace
}  // namespace kilnrt::cudatest
