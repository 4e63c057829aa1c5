// CUDA vs CPU-reference comparisons for the CUDA layer of LpPool (1-D..3-D, p 1..3, pads, strides, dilations, auto_pad,
// ceil_mode). The node must be placed on CUDA; GPU tests skip with a message without a GPU; the support checks at the
// end run everywhere.
#include <cmath>
#include <cstring>
#include <random>

#include "cuda_one_op_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

// ---- LpPool --------------------------------------------------------------------------------------------------------
TEST(CudaLpPool, LpPool) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x1 = random_tensor({2, 3, 9}, 1, -2.f, 2.f);
  const Tensor x2 = random_tensor({2, 3, 7, 8}, 2, -2.f, 2.f);
  const Tensor x3 = random_tensor({1, 2, 4, 5, 6}, 3, -2.f, 2.f);
  for (int64_t p : {1, 2, 3}) {
    SCOPED_TRACE("p=" + std::to_string(p));
    compare_on_cuda(Op("LpPool", 1).i("p", p).ints("kernel_shape", {3}).node, {x1}, {}, 18);
    compare_on_cuda(
        Op("LpPool", 1).i("p", p).ints("kernel_shape", {3, 2}).ints("pads", {1, 0, 1, 1}).ints("strides", {2, 1}).node,
        {x2}, {}, 18);
    compare_on_cuda(Op("LpPool", 1).i("p", p).ints("kernel_shape", {2, 2, 3}).node, {x3}, {}, 18);
  }
  compare_on_cuda(Op("LpPool", 1).ints("kernel_shape", {2, 2}).ints("dilations", {2, 2}).node, {x2}, {}, 18);
  compare_on_cuda(Op("LpPool", 1).ints("kernel_shape", {2, 3}).s("auto_pad", "SAME_UPPER").node, {x2}, {}, 18);
  compare_on_cuda(Op("LpPool", 1).ints("kernel_shape", {2, 3}).s("auto_pad", "SAME_LOWER").node, {x2}, {}, 18);
  compare_on_cuda(Op("LpPool", 1).ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).i("ceil_mode", 1).node, {x2}, {},
                  18);
  compare16_on_cuda(Op("LpPool", 1).ints("kernel_shape", {3, 2}).ints("pads", {1, 1, 0, 0}).node, {x2}, {}, 18, 4.0);
}

// ---- support checks (no GPU needed)
// ----------------------------------------------------------------------------------
TEST(CudaLpPool, SupportCheckAccepts) {
  std::vector<OneNode> nets;
  const Tensor x = random_tensor({1, 2, 4, 4}, 80);
  nets.emplace_back(Op("LpPool", 1).ints("kernel_shape", {2, 2}).node, std::vector<Tensor>{x}, std::vector<bool>{}, 18);
  nets.emplace_back(Op("LpPool", 1).ints("kernel_shape", {2, 2}).node, std::vector<Tensor>{halves(x)},
                    std::vector<bool>{}, 18);  // float16: a float32 island
  expect_supported(nets);
}

// ... and refuses what the kernel does not run, saying why.
TEST(CudaLpPool, SupportCheckRefuses) {
  OneNode pool(Op("LpPool", 1).ints("kernel_shape", {2}).node, {ints<int32_t>(DType::kInt32, {1, 1, 4}, 93, 0, 9)}, {},
               18);
  EXPECT_NE(backends::cuda::cuda_supports(pool.g.nodes.back(), pool.g).find("float32"), std::string::npos);
}

}  // namespace
}  // namespace kilnrt::cudatest
