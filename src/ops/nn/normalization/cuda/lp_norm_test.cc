// CUDA vs CPU-reference comparisons for the CUDA layer of LpNormalization (p = 1 / 2, every axis, zero rows). float16 /
// bfloat16 models run as float32 islands and are compared with the CPU reference too. The node must be placed on CUDA;
// GPU tests skip with a message without a GPU; the support checks at the end run everywhere.
#include <cmath>
#include <cstring>
#include <random>

#include "cuda_one_op_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

// ---- LpNormalization ------------------------------------------------------------------------------------------------
TEST(CudaLpNormalization, LpNormalization) {
  KILNRT_SKIP_WITHOUT_GPU();
  Tensor x = random_tensor({3, 4, 5}, 600);
  for (int64_t i = 0; i < 4; ++i) x.data<float>()[i * 5] = 0.f;  // a zero line along axis 1 (x[0, :, 0]): 0, not NaN
  for (int64_t p : {1, 2})
    for (int64_t axis : {-3, -2, -1, 0, 1, 2}) {
      SCOPED_TRACE("p=" + std::to_string(p) + " axis=" + std::to_string(axis));
      compare_on_cuda(Op("LpNormalization", 1).i("p", p).i("axis", axis).node, {x}, {}, 22);
    }
  compare_on_cuda(Op("LpNormalization", 1).node, {random_tensor({2, 6}, 601)}, {}, 22);  // defaults: p 2, axis -1
  compare_on_cuda(Op("LpNormalization", 1).node, {random_tensor({0, 6}, 602)}, {}, 22);
  compare_16bit(Op("LpNormalization", 1).i("p", 1).i("axis", 0).node, {random_tensor({4, 3}, 603)}, 22);
}

// ---- support checks (no GPU needed)
// ----------------------------------------------------------------------------------
TEST(CudaLpNormalization, SupportCheckAccepts) {
  std::vector<OneNode> nets;
  nets.emplace_back(Op("LpNormalization", 1).i("p", 1).node, std::vector<Tensor>{random_tensor({2, 3}, 7)},
                    std::vector<bool>{}, 22);
  expect_supported(nets);
}

// ... and refuses what the kernel does not run, saying why.
TEST(CudaLpNormalization, SupportCheckRefuses) {
  OneNode p3(Op("LpNormalization", 1).i("p", 3).node, {random_tensor({2, 3}, 1)}, {}, 22);
  EXPECT_NE(backends::cuda::cuda_supports(p3.g.nodes[0], p3.g).find("p must be 1 or 2"), std::string::npos);
}

}  // namespace
}  // namespace kilnrt::cudatest
