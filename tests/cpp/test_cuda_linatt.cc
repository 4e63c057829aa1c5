// CUDA vs CPU-reference comparisons for the CUDA layers of LinearAttention (linear /
// gated / delta / gated_delta, per-head and per-dim decay, scalar or per-head beta, GQA / MQA, past_state, explicit
// scale, T = 0), CausalConvWithState (bias, past_state, silu / swish, K = 1, L = 0), RMSNormalization (every axis,
// negative axes, broadcast scale, epsilon), LpNormalization (p = 1 / 2, every axis, zero rows) and CumProd
// (exclusive / reverse, negative and int32 axes, axis as a graph input, float32 / float64 / int32 / int64 with
// wrapping). float16 / bfloat16 models run as float32 islands and are compared with the CPU reference too. Every
// node must be placed on CUDA; GPU tests skip with a message without a GPU; the support checks at the end run
// everywhere.
#include <cmath>
#include <cstring>
#include <random>

#include "backends/cuda/float32_island.h"
#include "cuda_backend_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }
Tensor i32(const std::vector<int32_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt32, s); }
Tensor f32(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, DType::kFloat32, s); }
Tensor to_dtype(const Tensor& t, DType dt) {  // float32 -> float64 / float16 / bfloat16 (nearest)
  Tensor d = Tensor::empty(dt, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = t.data<float>()[i];
    if (dt == DType::kFloat64) d.data<double>()[i] = v;
    else if (dt == DType::kFloat16) d.data<uint16_t>()[i] = float_to_half(v);
    else d.data<uint16_t>()[i] = float_to_bfloat16(v);
  }
  return d;
}
template <typename T>
Tensor ints(DType dt, const Shape& s, uint32_t seed, int lo, int hi) {
  Tensor t = Tensor::empty(dt, s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) static_cast<T*>(t.raw())[i] = static_cast<T>(dist(rng));
  return t;
}

// The same node with its float32 inputs given as float16 and bfloat16 (a float32 island on CUDA).
void compare_16bit(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    std::vector<Tensor> ins;
    for (const Tensor& t : inputs) ins.push_back(t.defined() && t.dtype() == DType::kFloat32 ? to_dtype(t, dt) : t);
    // Both round the same float32 result: equal, or one 16-bit step apart where the float32 results differ.
    compare_on_cuda(node, ins, {}, opset, 1e-3, dt == DType::kFloat16 ? 1e-3 : 8e-3);
  }
}

// ---- LinearAttention --------------------------------------------------------------------------------------------------
struct LinAttCase {
  const char* rule;
  int64_t b, t, hq, hkv, dk, dv;
  bool past, per_dim_decay, scalar_beta;
  float scale;
};

std::vector<Tensor> linatt_inputs(const LinAttCase& c, uint32_t seed) {
  const bool gating = std::strstr(c.rule, "gated") != nullptr, delta = std::strstr(c.rule, "delta") != nullptr;
  std::vector<Tensor> in = {random_tensor({c.b, c.t, c.hq * c.dk}, seed), random_tensor({c.b, c.t, c.hkv * c.dk}, seed + 1, -0.5f, 0.5f),
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
    {"gated", 2, 4, 4, 2, 4, 5, true, false, false, 0.f},       // GQA, per-head decay
    {"gated", 1, 6, 2, 2, 3, 4, false, true, false, 0.f},       // per-dim decay
    {"delta", 2, 5, 2, 2, 4, 4, true, false, false, 0.5f},      // explicit scale
    {"gated_delta", 2, 7, 4, 2, 8, 6, true, true, false, 0.f},  // GQA, per-dim decay
    {"gated_delta", 1, 4, 4, 1, 4, 4, false, false, true, 0.f}, // MQA, scalar beta
    {"gated_delta", 3, 1, 2, 2, 16, 16, true, false, false, 0.f},  // decode step
    {"gated_delta", 1, 3, 2, 2, 64, 32, true, false, false, 0.f},  // wider heads
};

TEST(CudaLinAtt, LinearAttentionAllRules) {
  KILNRT_SKIP_WITHOUT_GPU();
  uint32_t seed = 100;
  for (const LinAttCase& c : kLinAttCases) {
    SCOPED_TRACE(std::string(c.rule) + " hq=" + std::to_string(c.hq) + " hkv=" + std::to_string(c.hkv) +
                 " dk=" + std::to_string(c.dk));
    compare_on_cuda(linatt_node(c), linatt_inputs(c, seed += 10), {}, 27, 1e-5, 1e-5);
  }
}

TEST(CudaLinAtt, LinearAttentionEdgeCases) {
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

// ---- CausalConvWithState -------------------------------------------------------------------------------------------------
ir::Node causal_node(bool bias, bool past, const char* act) {
  Op op("CausalConvWithState", 4, 2);
  if (act) op.s("activation", act);
  if (!bias) op.omit_input(2);
  if (!past) op.omit_input(3);
  return op.node;
}

TEST(CudaLinAtt, CausalConvWithState) {
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

TEST(CudaLinAtt, CausalConvWithStateEdgeCases) {
  KILNRT_SKIP_WITHOUT_GPU();
  // L = 0: empty output, present = past.
  compare_on_cuda(
      causal_node(true, true, "silu"),
      {random_tensor({1, 2, 0}, 1), random_tensor({2, 1, 3}, 2), random_tensor({2}, 3), random_tensor({1, 2, 2}, 4)},
      {}, 27);
  // L shorter than K - 1 without a past state: present mixes zeros and inputs.
  compare_on_cuda(causal_node(false, false, nullptr),
                  {random_tensor({2, 2, 2}, 5), random_tensor({2, 1, 5}, 6), Tensor(), Tensor()}, {}, 27);
  compare_16bit(causal_node(true, true, "silu"),
                {random_tensor({1, 4, 5}, 7), random_tensor({4, 1, 3}, 8), random_tensor({4}, 9), random_tensor({1, 4, 2}, 10)},
                27);
}

// ---- RMSNormalization / LpNormalization -------------------------------------------------------------------------------
TEST(CudaLinAtt, RmsNormalizationEveryAxis) {
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
  compare_16bit(Op("RMSNormalization", 2).i("axis", 1).node, {random_tensor({2, 3, 8}, 7), random_tensor({3, 8}, 8)}, 23);
}

TEST(CudaLinAtt, LpNormalization) {
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

// ---- CumProd ---------------------------------------------------------------------------------------------------------------
TEST(CudaLinAtt, CumProd) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({3, 4, 5}, 700, 0.5f, 1.5f);
  for (int flags = 0; flags < 4; ++flags) {
    Op op("CumProd", 2);
    op.i("exclusive", flags & 1).i("reverse", (flags >> 1) & 1);
    for (int64_t axis : {-3, -1, 0, 1, 2}) {
      SCOPED_TRACE("flags " + std::to_string(flags) + " axis " + std::to_string(axis));
      compare_on_cuda(op.node, {x, i64({axis}, {})}, {}, 26);  // axis a graph input (read on the device)
      compare_on_cuda(op.node, {x, i32({static_cast<int32_t>(axis)}, {})}, {false, true}, 26);  // int32 constant axis
      compare_on_cuda(op.node, {to_dtype(x, DType::kFloat64), i64({axis}, {})}, {}, 26, 1e-12, 1e-12);
      compare_on_cuda(op.node, {ints<int32_t>(DType::kInt32, {3, 4, 5}, 701, -3, 3), i64({axis}, {})}, {}, 26, 0, 0);
      compare_on_cuda(op.node, {ints<int64_t>(DType::kInt64, {3, 4, 5}, 702, -5, 5), i64({axis}, {})}, {}, 26, 0, 0);
    }
  }
  // Integer overflow wraps like the CPU reference.
  compare_on_cuda(Op("CumProd", 2).node, {i64({int64_t(1) << 40, int64_t(1) << 40, 3}, {3}), i64({0}, {})}, {}, 26, 0,
                  0);
  compare_on_cuda(Op("CumProd", 2).node, {i32({1 << 20, 1 << 20, 7}, {3}), i64({0}, {})}, {}, 26, 0, 0);
  compare_on_cuda(Op("CumProd", 2).node, {random_tensor({0, 3}, 703), i64({1}, {})}, {}, 26);
  compare_16bit(Op("CumProd", 2).i("reverse", 1).node, {random_tensor({2, 6}, 704, 0.5f, 1.5f), i64({1}, {})}, 26);
}

// ---- without a GPU: the support checks -------------------------------------------------------------------------------------
std::vector<OneNode> supported_nets() {
  std::vector<OneNode> nets;
  for (const LinAttCase& c : kLinAttCases) nets.emplace_back(linatt_node(c), linatt_inputs(c, 1), std::vector<bool>{}, 27);
  nets.emplace_back(causal_node(true, true, "silu"),
                    std::vector<Tensor>{random_tensor({1, 2, 3}, 1), random_tensor({2, 1, 3}, 2), random_tensor({2}, 3),
                                        random_tensor({1, 2, 2}, 4)},
                    std::vector<bool>{}, 27);
  nets.emplace_back(Op("RMSNormalization", 2).i("axis", -2).node,
                    std::vector<Tensor>{random_tensor({2, 3, 4}, 5), random_tensor({3, 4}, 6)}, std::vector<bool>{}, 23);
  nets.emplace_back(Op("LpNormalization", 1).i("p", 1).node, std::vector<Tensor>{random_tensor({2, 3}, 7)},
                    std::vector<bool>{}, 22);
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    const Tensor x = dt == DType::kFloat32 ? random_tensor({2, 3}, 8)
                     : dt == DType::kFloat64 ? to_dtype(random_tensor({2, 3}, 8), dt)
                     : dt == DType::kInt32 ? ints<int32_t>(dt, {2, 3}, 9, 0, 3)
                                           : ints<int64_t>(dt, {2, 3}, 9, 0, 3);
    nets.emplace_back(Op("CumProd", 2).node, std::vector<Tensor>{x, i32({1}, {})}, std::vector<bool>{}, 26);
  }
  // float16 models (float32 islands).
  nets.emplace_back(Op("RMSNormalization", 2).node,
                    std::vector<Tensor>{to_dtype(random_tensor({2, 4}, 10), DType::kFloat16),
                                        to_dtype(random_tensor({4}, 11), DType::kFloat16)},
                    std::vector<bool>{}, 23);
  const LinAttCase h{"gated_delta", 1, 2, 2, 2, 4, 4, true, false, false, 0.f};
  std::vector<Tensor> hin = linatt_inputs(h, 12);
  for (Tensor& t : hin)
    if (t.defined()) t = to_dtype(t, DType::kBFloat16);
  nets.emplace_back(linatt_node(h), hin, std::vector<bool>{}, 27);
  return nets;
}

TEST(CudaLinAtt, SupportCheckAccepts) {
  for (const OneNode& net : supported_nets()) {
    SCOPED_TRACE(net.g.nodes.back().op_type);
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(net.g));
    EXPECT_EQ(backends::cuda::cuda_supports_or_island(net.g.nodes.back(), net.g), "");
  }
}

// ... and refuses what the kernels do not run, naming the reason.
TEST(CudaLinAtt, SupportCheckRefuses) {
  OneNode p3(Op("LpNormalization", 1).i("p", 3).node, {random_tensor({2, 3}, 1)}, {}, 22);
  EXPECT_NE(backends::cuda::cuda_supports(p3.g.nodes[0], p3.g).find("p must be 1 or 2"), std::string::npos);
  // gated without its decay input
  ir::Node n = linatt_node({"gated", 1, 2, 2, 2, 4, 4, false, false, false, 0.f});
  n.inputs[4] = "";
  OneNode g(n, linatt_inputs({"linear", 1, 2, 2, 2, 4, 4, false, false, false, 0.f}, 2), {}, 27);
  EXPECT_NE(backends::cuda::cuda_supports(g.g.nodes[0], g.g).find("requires the decay input"), std::string::npos);
  OneNode u8(Op("CumProd", 2).node, {ints<uint8_t>(DType::kUInt8, {4}, 3, 0, 3), i64({0}, {})}, {}, 26);
  EXPECT_NE(backends::cuda::cuda_supports(u8.g.nodes[0], u8.g).find("uint8"), std::string::npos);
}

}  // namespace
}  // namespace kilnrt::cudatest
