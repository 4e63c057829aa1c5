// CUDA vs CPU-reference comparisons for the CUDA layer of CausalConvWithState (bias, past_state, silu / swish, K = 1, L
// = 0). float16 / bfloat16 models run as float32 islands and are compared with the CPU reference too. The node must be
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

// ---- CausalConvWithState
// -------------------------------------------------------------------------------------------------
ir::Node causal_node(bool bias, bool past, const char* act) {
  Op op("CausalConvWithState", 4, 2);
  if (act) op.s("activation", act);
  if (!bias) op.omit_input(2);
  if (!past) op.omit_input(3);
  return op.node;
}

TEST(CudaCausalConvWithState, CausalConvWithState) {
  KILNRT_SKIP_WITHOUT_GPU();
  uint32_t seed = 300;
  for (int64_t k : {1, 2, 4}) {
    for (int64_t len : {1, 3, 7}) {
      for (int variant = 0; variant < 4; ++variant) {
        const bool bias = variant & 1, past = variant & 2;
        const char* act = variant == 3 ? "silu" : variant == 2 ? "swish" : variant == 1 ? nullptr : "none";
        SCOPED_TRACE("k=" + std::to_string(k) + " len=" + std::to_string(len) + " variant=" + std::to_string(variant));
        const int64_t b = 2, c = 3;
        seed += 5;
        compare_on_cuda(
            causal_node(bias, past, act),
            {random_tensor({b, c, len}, seed), random_tensor({c, 1, k}, seed + 1),
             bias ? random_tensor({c}, seed + 2) : Tensor(), past ? random_tensor({b, c, k - 1}, seed + 3) : Tensor()},
            {false, true, true, false}, 27);
      }
    }
  }
}

TEST(CudaCausalConvWithState, CausalConvWithStateEdgeCases) {
  KILNRT_SKIP_WITHOUT_GPU();
  // L = 0: empty output, present = past.
  compare_on_cuda(
      causal_node(true, true, "silu"),
      {random_tensor({1, 2, 0}, 1), random_tensor({2, 1, 3}, 2), random_tensor({2}, 3), random_tensor({1, 2, 2}, 4)},
      {}, 27);
  // L shorter than K - 1 without a past state: present mixes zeros and inputs.
  compare_on_cuda(causal_node(false, false, nullptr),
                  {random_tensor({2, 2, 2}, 5), random_tensor({2, 1, 5}, 6), Tensor(), Tensor()}, {}, 27);
  compare_16bit(
      causal_node(true, true, "silu"),
      {random_tensor({1, 4, 5}, 7), random_tensor({4, 1, 3}, 8), random_tensor({4}, 9), random_tensor({1, 4, 2}, 10)},
      27);
}

// ---- support checks (no GPU needed)
// ----------------------------------------------------------------------------------
TEST(CudaCausalConvWithState, SupportCheckAccepts) {
  std::vector<OneNode> nets;
  nets.emplace_back(causal_node(true, true, "silu"),
                    std::vector<Tensor>{random_tensor({1, 2, 3}, 1), random_tensor({2, 1, 3}, 2), random_tensor({2}, 3),
                                        random_tensor({1, 2, 2}, 4)},
                    std::vector<bool>{}, 27);
  expect_supported(nets);
}

}  // namespace
}  // namespace kilnrt::cudatest
