// CUDA vs CPU-reference comparisons for the CUDA layer of DeformConv (2-D: padding, strides, dilations, mask, bias,
// groups, offset groups). The node must be placed on CUDA; GPU tests skip with a message without a GPU; the support
// checks at the end run everywhere.
#include <cmath>
#include <cstring>
#include <random>

#include "cuda_one_op_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

// ---- DeformConv ----------------------------------------------------------------------------------------------------
TEST(CudaDeformConv, DeformConv) {
  KILNRT_SKIP_WITHOUT_GPU();
  // Offsets up to +-2.5 pixels move taps outside the image (zero there) and between pixels.
  {
    const Tensor x = random_tensor({2, 3, 5, 6}, 40), w = random_tensor({4, 3, 2, 2}, 41);
    compare_on_cuda(Op("DeformConv", 3).node, {x, w, random_tensor({2, 8, 4, 5}, 42, -2.5f, 2.5f)}, {}, 19);
    compare_on_cuda(Op("DeformConv", 3).ints("pads", {1, 1, 1, 1}).node,
                    {x, w, random_tensor({2, 8, 6, 7}, 43, -2.5f, 2.5f)}, {}, 19);
    // bias and mask, strides and dilations: oh = (5+1+0-3)/2+1 = 2, ow = (6+0+1-3)/1+1 = 5.
    compare_on_cuda(
        Op("DeformConv", 5).ints("pads", {1, 0, 0, 1}).ints("strides", {2, 1}).ints("dilations", {2, 2}).node,
        {x, w, random_tensor({2, 8, 2, 5}, 44, -2.5f, 2.5f), random_tensor({4}, 45), random_tensor({2, 4, 2, 5}, 46)},
        {false, true, false, true, false}, 19);
    // Mask without bias (B omitted).
    compare_on_cuda(Op("DeformConv", 5).omit_input(3).node,
                    {x, w, random_tensor({2, 8, 4, 5}, 47, -2.5f, 2.5f), Tensor(), random_tensor({2, 4, 4, 5}, 48)}, {},
                    19);
  }
  {  // groups 2 and offset groups 2 (and offset groups 4 over 4 channels)
    const Tensor x = random_tensor({1, 4, 6, 5}, 50);
    compare_on_cuda(
        Op("DeformConv", 4).i("group", 2).i("offset_group", 2).node,
        {x, random_tensor({6, 2, 3, 3}, 51), random_tensor({1, 36, 4, 3}, 52, -2.f, 2.f), random_tensor({6}, 53)}, {},
        19);
    compare_on_cuda(Op("DeformConv", 3).i("offset_group", 4).node,
                    {x, random_tensor({2, 4, 2, 2}, 54), random_tensor({1, 32, 5, 4}, 55, -1.5f, 1.5f)}, {}, 19);
    // Integer offsets (the taps land on pixels exactly).
    Tensor off = ints<float>(DType::kFloat32, {1, 8, 5, 4}, 56, -2, 2);
    compare_on_cuda(Op("DeformConv", 3).node, {x, random_tensor({3, 4, 2, 2}, 57), off}, {}, 19);
  }
  compare16_on_cuda(
      Op("DeformConv", 3).node,
      {random_tensor({1, 2, 4, 4}, 58), random_tensor({2, 2, 2, 2}, 59), random_tensor({1, 8, 3, 3}, 60, -1.f, 1.f)},
      {}, 19, 8.0);
}

// ---- support checks (no GPU needed)
// ----------------------------------------------------------------------------------
TEST(CudaDeformConv, SupportCheckAccepts) {
  std::vector<OneNode> nets;
  const Tensor x = random_tensor({1, 2, 4, 4}, 80);
  nets.emplace_back(Op("DeformConv", 5).node,
                    std::vector<Tensor>{x, random_tensor({2, 2, 2, 2}, 83), random_tensor({1, 8, 3, 3}, 84),
                                        random_tensor({2}, 85), random_tensor({1, 4, 3, 3}, 86)},
                    std::vector<bool>{}, 19);
  expect_supported(nets);
}

}  // namespace
}  // namespace kilnrt::cudatest
