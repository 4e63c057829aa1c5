// CUDA vs CPU-reference comparisons for the CUDA layer of CenterCropPad (crop, pad, axes; any element size, 16-bit
// moved natively). The node must be placed on CUDA; GPU tests skip with a message without a GPU; the support checks at
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

// ---- CenterCropPad -------------------------------------------------------------------------------------------------
TEST(CudaCenterCropPad, CenterCropPad) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({5, 7, 3}, 10);
  for (bool constant : {true, false}) {  // shape a constant, or a graph input read at a sync point
    SCOPED_TRACE(constant ? "constant shape" : "shape input");
    const std::vector<bool> c{false, constant};
    compare_on_cuda(Op("CenterCropPad", 2).node, {x, i64({3, 4, 3}, {3})}, c, 18);   // crop
    compare_on_cuda(Op("CenterCropPad", 2).node, {x, i64({8, 10, 3}, {3})}, c, 18);  // pad
    compare_on_cuda(Op("CenterCropPad", 2).node, {x, i64({2, 10, 4}, {3})}, c, 18);  // crop and pad
    compare_on_cuda(Op("CenterCropPad", 2).ints("axes", {0, 1}).node, {x, i64({4, 9}, {2})}, c, 18);
    compare_on_cuda(Op("CenterCropPad", 2).ints("axes", {-3, -2}).node, {x, i64({6, 2}, {2})}, c, 18);  // negative axes
    compare_on_cuda(Op("CenterCropPad", 2).ints("axes", {1}).node, {x, i64({0}, {1})}, c, 18);          // empty output
  }
  compare_on_cuda(Op("CenterCropPad", 2).node, {ints<int64_t>(DType::kInt64, {4, 5}, 11, -99, 99), i64({6, 3}, {2})},
                  {false, true}, 18);
  compare_on_cuda(Op("CenterCropPad", 2).node, {ints<uint8_t>(DType::kUInt8, {3, 6}, 12, 0, 255), i64({1, 9}, {2})},
                  {false, true}, 18);
  compare_on_cuda(Op("CenterCropPad", 2).node, {halves(random_tensor({4, 4}, 13)), i64({3, 7}, {2})}, {false, true},
                  18);
  compare_on_cuda(Op("CenterCropPad", 2).node, {Tensor::empty(DType::kFloat32, {0, 4}), i64({2, 2}, {2})},
                  {false, true}, 18);
  compare16_on_cuda(Op("CenterCropPad", 2).node, {x, i64({4, 9, 2}, {3})}, {false, true}, 18, 1.0);
}

// ---- support checks (no GPU needed)
// ----------------------------------------------------------------------------------
TEST(CudaCenterCropPad, SupportCheckAccepts) {
  std::vector<OneNode> nets;
  const Tensor x = random_tensor({1, 2, 4, 4}, 80);
  nets.emplace_back(Op("CenterCropPad", 2).node, std::vector<Tensor>{x, i64({1, 2, 3, 5}, {4})}, std::vector<bool>{},
                    18);
  expect_supported(nets);
}

}  // namespace
}  // namespace kilnrt::cudatest
