// CUDA vs CPU-reference comparisons for the CUDA layer of AffineGrid (2-D / 3-D, align_corners). The node must be
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

// ---- AffineGrid ----------------------------------------------------------------------------------------------------
TEST(CudaAffineGrid, AffineGrid) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (int64_t align : {0, 1}) {
    SCOPED_TRACE("align_corners=" + std::to_string(align));
    compare_on_cuda(Op("AffineGrid", 2).i("align_corners", align).node,
                    {random_tensor({2, 2, 3}, 30), i64({2, 3, 5, 6}, {4})}, {false, true}, 20);
    compare_on_cuda(Op("AffineGrid", 2).i("align_corners", align).node,
                    {random_tensor({2, 3, 4}, 31), i64({2, 1, 3, 4, 5}, {5})}, {false, true}, 20);
    compare_on_cuda(Op("AffineGrid", 2).i("align_corners", align).node,
                    {random_tensor({1, 2, 3}, 32), i64({1, 1, 1, 4}, {4})}, {false, false},
                    20);  // height 1; size a graph input (sync point)
  }
  compare_on_cuda(Op("AffineGrid", 2).node, {Tensor::empty(DType::kFloat32, {0, 2, 3}), i64({0, 1, 3, 3}, {4})},
                  {false, true}, 20);
  compare16_on_cuda(Op("AffineGrid", 2).node, {random_tensor({2, 2, 3}, 33), i64({2, 3, 4, 4}, {4})}, {false, true}, 20,
                    3.0);
}

// ---- support checks (no GPU needed)
// ----------------------------------------------------------------------------------
TEST(CudaAffineGrid, SupportCheckAccepts) {
  std::vector<OneNode> nets;
  nets.emplace_back(Op("AffineGrid", 2).node, std::vector<Tensor>{random_tensor({1, 2, 3}, 82), i64({1, 1, 3, 3}, {4})},
                    std::vector<bool>{false, true}, 20);
  expect_supported(nets);
}

}  // namespace
}  // namespace kilnrt::cudatest
