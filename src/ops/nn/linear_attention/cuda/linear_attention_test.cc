// CUDA vs CPU-reference comparisons for the CUDA layer of LinearAttention (linear / gated / delta / gated_delta,
// per-head and per-dim decay, scalar or per-head beta, GQA / MQA, past_state, explicit scale, T = 0). float16 /
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

// ---- LinearAttention
// --------------------------------------------------------------------------------------------------
struct LinAttCase {
  const char* rule;
  int64_t b, t, hq, hkv, dk, dv;
  bool past, per_dim_decay, scalar_beta;
  float scale;
};

std::vector<Tensor> linatt_inputs(const LinAttCase& c, uint32_t seed) {
  const bool gating = std::strstr(c.rule, "gated") != nullptr, delta = std::strstr(c.rule, "delta") != nullptr;
  std::vector<Tensor> in = {random_tensor({c.b, c.t, c.hq * c.dk}, seed),
                            random_tensor({c.b, c.t, c.hkv * c.dk}, seed + 1, -0.5f, 0.5f),
                            random_tensor({c.b, c.t, c.hkv * c.dv}, seed + 2)};
  in.push_back(c.past ? random_tensor({c.b, c.hkv, c.dk, c.dv}, seed + 3) : Tensor());
  in.push_back(gating ? random_tensor({c.b, c.t, c.per_dim_decay ? c.hkv * c.dk : c.hkv}, seed + 4, -1.f, 0.f)
                      : Tensor());
  in.push_back(delta ? random_tensor({c.b, c.t, c.scalar_beta ? 1 : c.hkv}, seed + 5, 0.f, 1.f) : Tensor());
  return in;
}

ir::Node linatt_node(const LinAttCase& c) {
  Op op("LinearAttention", 6, 2);
  op.s("update_rule", c.rule).i("q_num_heads", c.hq).i("kv_num_heads", c.hkv);
  if (c.scale != 0.f) op.f("scale", c.scale);
  if (!c.past) op.omit_input(3);
  if (!std::strstr(c.rule, "gated")) op.omit_input(4);
  if (!std::strstr(c.rule, "delta")) op.omit_input(5);
  return op.node;
}

const LinAttCase kLinAttCases[] = {
    {"linear", 2, 5, 2, 2, 4, 3, false, false, false, 0.f},
    {"linear", 1, 1, 1, 1, 8, 8, false, false, false, 0.f},
    {"gated", 2, 4, 4, 2, 4, 5, true, false, false, 0.f},          // GQA, per-head decay
    {"gated", 1, 6, 2, 2, 3, 4, false, true, false, 0.f},          // per-dim decay
    {"delta", 2, 5, 2, 2, 4, 4, true, false, false, 0.5f},         // explicit scale
    {"gated_delta", 2, 7, 4, 2, 8, 6, true, true, false, 0.f},     // GQA, per-dim decay
    {"gated_delta", 1, 4, 4, 1, 4, 4, false, false, true, 0.f},    // MQA, scalar beta
    {"gated_delta", 3, 1, 2, 2, 16, 16, true, false, false, 0.f},  // decode step
    {"gated_delta", 1, 3, 2, 2, 64, 32, true, false, false, 0.f},  // wider heads
};

TEST(CudaLinearAttention, LinearAttentionAllRules) {
  KILNRT_SKIP_WITHOUT_GPU();
  uint32_t seed = 100;
  for (const LinAttCase& c : kLinAttCases) {
    SCOPED_TRACE(std::string(c.rule) + " hq=" + std::to_string(c.hq) + " hkv=" + std::to_string(c.hkv) +
                 " dk=" + std::to_string(c.dk));
    compare_on_cuda(linatt_node(c), linatt_inputs(c, seed += 10), {}, 27, 1e-5, 1e-5);
  }
}

TEST(CudaLinearAttention, LinearAttentionEdgeCases) {
  KILNRT_SKIP_WITHOUT_GPU();
  // T = 0 with a past state: empty output, present = past.
  const LinAttCase empty{"gated_delta", 2, 0, 2, 2, 4, 3, true, false, false, 0.f};
  const auto got = compare_on_cuda(linatt_node(empty), linatt_inputs(empty, 7), {}, 27);
  EXPECT_EQ(got.at("out0").numel(), 0);
  // Only the output (present_state omitted), past state as a constant.
  const LinAttCase c{"delta", 1, 3, 2, 1, 4, 4, true, false, false, 0.f};
  ir::Node n = linatt_node(c);
  n.outputs.pop_back();
  compare_on_cuda(n, linatt_inputs(c, 8), {false, false, false, true}, 27);
  // States of 20 (batch, head) pairs of 512 x 512 doubles (40 MiB) exceed the 32 MiB workspace: two launches.
  const LinAttCase big{"gated_delta", 5, 2, 4, 4, 512, 512, true, true, false, 0.f};
  compare_on_cuda(linatt_node(big), linatt_inputs(big, 10), {}, 27, 1e-5, 1e-5);
  // float16 / bfloat16 models.
  const LinAttCase h{"gated_delta", 1, 4, 2, 2, 4, 4, true, false, false, 0.f};
  compare_16bit(linatt_node(h), linatt_inputs(h, 9), 27);
}

// ---- support checks (no GPU needed)
// ----------------------------------------------------------------------------------
TEST(CudaLinearAttention, SupportCheckAccepts) {
  std::vector<OneNode> nets;
  for (const LinAttCase& c : kLinAttCases)
    nets.emplace_back(linatt_node(c), linatt_inputs(c, 1), std::vector<bool>{}, 27);
  // bfloat16 models (float32 islands).
  const LinAttCase h{"gated_delta", 1, 2, 2, 2, 4, 4, true, false, false, 0.f};
  std::vector<Tensor> hin = linatt_inputs(h, 12);
  for (Tensor& t : hin)
    if (t.defined()) t = to_dtype(t, DType::kBFloat16);
  nets.emplace_back(linatt_node(h), hin, std::vector<bool>{}, 27);
  expect_supported(nets);
}

// ... and refuses what the kernel does not run, saying why.
TEST(CudaLinearAttention, SupportCheckRefuses) {
  // gated without its decay input
  ir::Node n = linatt_node({"gated", 1, 2, 2, 2, 4, 4, false, false, false, 0.f});
  n.inputs[4] = "";
  OneNode g(n, linatt_inputs({"linear", 1, 2, 2, 2, 4, 4, false, false, false, 0.f}, 2), {}, 27);
  EXPECT_NE(backends::cuda::cuda_supports(g.g.nodes[0], g.g).find("requires the decay input"), std::string::npos);
}

}  // namespace
}  // namespace kilnrt::cudatest
