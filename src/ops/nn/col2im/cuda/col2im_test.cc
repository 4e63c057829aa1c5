// CUDA vs CPU-reference comparisons for the CUDA layer of Col2Im (1-D..3-D, pads, strides, dilations). The node must be
// placed on CUDA; GPU tests skip with a message without a GPU; the support checks at the end run everywhere.
#include <cmath>
#include <cstring>
#include <random>

#include "cuda_one_op_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

// ---- Col2Im --------------------------------------------------------------------------------------------------------
TEST(CudaCol2Im, Col2Im) {
  KILNRT_SKIP_WITHOUT_GPU();
  // 2-D: image 5x5, block 1x5 -> L = 5 (the onnx example's geometry), channels 1 and 2.
  compare_on_cuda(Op("Col2Im", 3).node, {random_tensor({1, 5, 5}, 20), i64({5, 5}, {2}), i64({1, 5}, {2})},
                  {false, true, true}, 18);
  for (bool constant : {true, false}) {
    SCOPED_TRACE(constant ? "constant shapes" : "shape inputs");
    const std::vector<bool> c{false, constant, constant};
    // image 6x5, block 2x3, pads, strides, dilations: blocks ((6+1+0-3)/2+1 = 3) x ((5+1+1-3)/1+1 = 5) = 15.
    compare_on_cuda(Op("Col2Im", 3).ints("pads", {1, 1, 0, 1}).ints("strides", {2, 1}).ints("dilations", {2, 1}).node,
                    {random_tensor({2, 2 * 6, 15}, 21), i64({6, 5}, {2}), i64({2, 3}, {2})}, c, 18);
  }
  // 3-D (the 5d case's kind): image 3x4x5, block 1x2x2 -> 3*3*4 = 36 positions.
  compare_on_cuda(Op("Col2Im", 3).node, {random_tensor({1, 2 * 4, 36}, 22), i64({3, 4, 5}, {3}), i64({1, 2, 2}, {3})},
                  {false, true, true}, 18);
  // 1-D with stride 3 (gaps) and pads that drop values.
  compare_on_cuda(Op("Col2Im", 3).ints("strides", {3}).ints("pads", {2, 2}).node,
                  {random_tensor({2, 3 * 2, 4}, 23), i64({8}, {1}), i64({2}, {1})}, {false, true, true}, 18);
  // Empty batch.
  compare_on_cuda(Op("Col2Im", 3).node, {Tensor::empty(DType::kFloat32, {0, 4, 4}), i64({3, 3}, {2}), i64({2, 2}, {2})},
                  {false, true, true}, 18);
  compare16_on_cuda(Op("Col2Im", 3).ints("strides", {1, 2}).node,
                    {random_tensor({1, 4, 6}, 24), i64({3, 6}, {2}), i64({2, 2}, {2})}, {false, true, true}, 18, 4.0);
}

// ---- support checks (no GPU needed)
// ----------------------------------------------------------------------------------
TEST(CudaCol2Im, SupportCheckAccepts) {
  std::vector<OneNode> nets;
  nets.emplace_back(Op("Col2Im", 3).node,
                    std::vector<Tensor>{random_tensor({1, 4, 9}, 81), i64({4, 4}, {2}), i64({2, 2}, {2})},
                    std::vector<bool>{false, true, true}, 18);
  expect_supported(nets);
}

}  // namespace
}  // namespace kilnrt::cudatest
