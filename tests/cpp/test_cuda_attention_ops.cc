// CUDA vs CPU-reference comparisons for the layers of the transformer-block ops of onnx 1.23 and later
// (src/ops/nn/attention_onnx/cuda, nn/flex_attention/cuda, nn/rotary_embedding/cuda, math/unary/cuda/swish_layer.cc,
// math/binary/cuda/swiglu_layer.cc):
// ONNX Attention (GQA, 3-D / 4-D, past / present, bool / float masks with broadcasting and -inf padding, causal,
// sliding windows, softcap, scale, nonpad_kv_seqlen, the qk_matmul_output modes, fully masked rows, an empty new
// K/V), ai.onnx.preview FlexAttention (float32 / float64, GQA), RotaryEmbedding (halves / interleaved, partial
// rotary_embedding_dim, position_ids or per-token caches, 3-D input), Swish and SwiGLU (float32 / float64).
// float16 models and fp16 / bf16 engines run the float32 layers as islands. Every step must be placed on CUDA. GPU
// tests skip with a message without a GPU; the support checks at the end run everywhere.
#include <cmath>
#include <limits>
#include <random>

#include "ops/cuda/cuda_layer.h"
#include "cuda_backend_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

constexpr const char* kPreview = "ai.onnx.preview";

Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }
Tensor f64_of(const Tensor& t) {
  Tensor d = Tensor::empty(DType::kFloat64, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) d.data<double>()[i] = t.data<float>()[i];
  return d;
}
Tensor f16_of(const Tensor& t) {
  Tensor h = Tensor::empty(DType::kFloat16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) h.data<uint16_t>()[i] = float_to_half(t.data<float>()[i]);
  return h;
}
Tensor bools(const Shape& s, uint32_t seed, double p_true) {
  Tensor t = Tensor::empty(DType::kBool, s);
  std::mt19937 rng(seed);
  std::bernoulli_distribution dist(p_true);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = dist(rng) ? 1 : 0;
  return t;
}

// This file's checks: ai.onnx at 25 beside another domain, every step on the GPU (no host shape computations).
const CudaCheck kCheck{25, Placement::kGpuOnly};

// OneNode / compare_on_cuda / compare16_on_cuda (scale 1) with kCheck and no constant inputs.
struct Net : OneNode {
  Net(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset)
      : OneNode(node, inputs, {}, opset, kCheck.onnx_opset) {}
};
std::map<std::string, Tensor> compare(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset,
                                      double atol = 1e-6, double rtol = 1e-5) {
  return compare_on_cuda(node, inputs, {}, opset, atol, rtol, kCheck);
}
void compare16(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset) {
  compare16_on_cuda(node, inputs, {}, opset, 1.0, kCheck);
}

// Attention's 7 inputs: omitted ones are empty tensors with their node input cleared.
Op attention(size_t outputs, const std::vector<bool>& given) {
  Op op("Attention", 7, outputs);
  for (size_t i = 3; i < 7; ++i)
    if (i >= given.size() || !given[i]) op.omit_input(i);
  return op;
}
const Tensor kNone;

// ---- Attention ------------------------------------------------------------------------------------------------------
TEST(CudaAttentionOps, Attention4dGqaDiffHeadSizes) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor q = random_tensor({2, 4, 3, 8}, 1), k = random_tensor({2, 2, 5, 8}, 2),
               v = random_tensor({2, 2, 5, 6}, 3);
  compare(attention(1, {}).node, {q, k, v}, 23);
  compare(attention(1, {}).f("scale", 0.7f).node, {q, k, v}, 23);
  compare(attention(1, {}).f("softcap", 0.5f).i("is_causal", 1).node, {q, k, v}, 23);
  compare16(attention(1, {}).i("is_causal", 1).node, {q, k, v}, 23);
}

TEST(CudaAttentionOps, Attention3dHeadsAttributes) {
  KILNRT_SKIP_WITHOUT_GPU();
  // Q [B, Sq, Hq*D], K/V [B, Skv, Hkv*D]: 6 query heads over 3 kv heads.
  const Tensor q = random_tensor({2, 4, 6 * 4}, 11), k = random_tensor({2, 7, 3 * 4}, 12),
               v = random_tensor({2, 7, 3 * 5}, 13);
  Op op = attention(1, {});
  op.i("q_num_heads", 6).i("kv_num_heads", 3);
  compare(op.node, {q, k, v}, 23);
  op.i("is_causal", 1).f("softcap", 2.f).f("scale", 0.3f);
  compare(op.node, {q, k, v}, 23);
  // Float mask [Sq, T] broadcast over batch and heads.
  Op masked = attention(1, {false, false, false, true});
  masked.i("q_num_heads", 6).i("kv_num_heads", 3);
  compare(masked.node, {q, k, v, random_tensor({4, 7}, 14, -2.f, 2.f)}, 23);
}

TEST(CudaAttentionOps, AttentionPastPresentAndQkModes) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor q = random_tensor({1, 4, 3, 8}, 21), k = random_tensor({1, 2, 3, 8}, 22),
               v = random_tensor({1, 2, 3, 8}, 23);
  const Tensor pk = random_tensor({1, 2, 4, 8}, 24), pv = random_tensor({1, 2, 4, 8}, 25);
  // A float mask shorter than the 7 keys (padded with -inf) plus causal: bias and scores differ.
  const Tensor mask = random_tensor({3, 5}, 26, -1.f, 1.f);
  for (int64_t mode = 0; mode <= 3; ++mode) {
    SCOPED_TRACE("qk_matmul_output_mode " + std::to_string(mode));
    Op op = attention(4, {false, false, false, true, true, true});
    op.i("qk_matmul_output_mode", mode).i("is_causal", 1).f("softcap", 3.f);
    const auto got = compare(op.node, {q, k, v, mask, pk, pv}, 23);
    EXPECT_EQ(got.at("out1").shape(), (Shape{1, 2, 7, 8}));
    EXPECT_EQ(got.at("out3").shape(), (Shape{1, 4, 3, 7}));
  }
  // 3-D new K/V with a past cache; only present_value and qk wanted.
  Op three = attention(4, {false, false, false, false, true, true});
  three.i("q_num_heads", 4).i("kv_num_heads", 2).i("qk_matmul_output_mode", 2).omit_output(1);
  compare(three.node,
          {random_tensor({1, 3, 32}, 27), random_tensor({1, 3, 16}, 28), random_tensor({1, 3, 16}, 29), kNone, pk, pv},
          23);
  compare16(attention(3, {false, false, false, false, true, true}).node, {q, k, v, kNone, pk, pv}, 23);
}

TEST(CudaAttentionOps, AttentionBoolMasksAndFullyMaskedRows) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor q = random_tensor({2, 2, 4, 8}, 31), k = random_tensor({2, 2, 6, 8}, 32),
               v = random_tensor({2, 2, 6, 8}, 33);
  // 4-D bool mask [B, 1, Sq, T], rank-1 [T] and rank-3 [Hq, Sq, T] masks.
  for (const Shape& s : {Shape{2, 1, 4, 6}, Shape{6}, Shape{2, 4, 6}, Shape{4, 3}}) {
    SCOPED_TRACE(shape_to_string(s));
    compare(attention(1, {false, false, false, true}).node, {q, k, v, bools(s, 34, 0.6)}, 23);
  }
  // Row 1 of query 0 sees nothing: Y and the probabilities are all zero there, never NaN.
  Tensor m = bools({4, 6}, 35, 0.7);
  for (int64_t j = 0; j < 6; ++j) m.data<uint8_t>()[1 * 6 + j] = 0;
  Op op = attention(4, {false, false, false, true});
  op.i("qk_matmul_output_mode", 3).omit_output(1).omit_output(2);
  const auto got = compare(op.node, {q, k, v, m}, 23);
  const float* y = got.at("out0").data<float>();
  for (int64_t x = 0; x < 8; ++x) EXPECT_EQ(y[1 * 8 + x], 0.f);
  // A float mask of -inf everywhere in one row, with causal.
  Tensor fm = random_tensor({4, 6}, 36);
  for (int64_t j = 0; j < 6; ++j) fm.data<float>()[2 * 6 + j] = -std::numeric_limits<float>::infinity();
  compare(attention(1, {false, false, false, true}).i("is_causal", 1).node, {q, k, v, fm}, 23);
}

TEST(CudaAttentionOps, AttentionWindowsAndNonpad) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor q = random_tensor({2, 2, 5, 4}, 41), k = random_tensor({2, 2, 5, 4}, 42),
               v = random_tensor({2, 2, 5, 4}, 43);
  const Tensor pk = random_tensor({2, 2, 3, 4}, 44), pv = random_tensor({2, 2, 3, 4}, 45);
  for (int64_t left : {-1, 0, 2})
    for (int64_t right : {-1, 0, 1}) {
      SCOPED_TRACE("window " + std::to_string(left) + " " + std::to_string(right));
      Op op = attention(3, {false, false, false, false, true, true});
      op.i("left_window_size", left).i("right_window_size", right);
      compare(op.node, {q, k, v, kNone, pk, pv}, 25);
    }
  // nonpad_kv_seqlen (opset 24): keys past each batch's length hidden; with causal the offset is nonpad - Sq
  // (negative for batch 1: its first rows see nothing).
  const Tensor nonpad = i64({5, 3}, {2});
  Op np = attention(1, {false, false, false, false, false, false, true});
  compare(np.node, {q, k, v, kNone, kNone, kNone, nonpad}, 24);
  np.i("is_causal", 1);
  compare(np.node, {q, k, v, kNone, kNone, kNone, nonpad}, 24);
  Op npm = attention(1, {false, false, false, true, false, false, true});
  npm.i("is_causal", 1);
  compare(npm.node, {q, k, v, bools({2, 1, 5, 5}, 46, 0.8), kNone, kNone, nonpad}, 24);
}

TEST(CudaAttentionOps, AttentionFloat16Model) {
  KILNRT_SKIP_WITHOUT_GPU();
  // float16 Q/K/V/mask/past: a float32 island; the CPU computes in double and rounds to float16 too.
  const Tensor q = f16_of(random_tensor({1, 2, 3, 8}, 51)), k = f16_of(random_tensor({1, 2, 4, 8}, 52)),
               v = f16_of(random_tensor({1, 2, 4, 8}, 53)), pk = f16_of(random_tensor({1, 2, 2, 8}, 54)),
               pv = f16_of(random_tensor({1, 2, 2, 8}, 55)), mask = f16_of(random_tensor({3, 6}, 56));
  Op op = attention(3, {false, false, false, true, true, true});
  op.i("is_causal", 1);
  compare(op.node, {q, k, v, mask, pk, pv}, 23, 2e-3, 2e-3);
}

TEST(CudaAttentionOps, AttentionEmptyNewKeys) {
  KILNRT_SKIP_WITHOUT_GPU();
  // No new key / value (sequence 0): every key comes from the past cache; present = past.
  const Tensor q = random_tensor({1, 2, 2, 4}, 61), k = random_tensor({1, 2, 0, 4}, 62),
               v = random_tensor({1, 2, 0, 4}, 63);
  compare(attention(3, {false, false, false, false, true, true}).node,
          {q, k, v, kNone, random_tensor({1, 2, 3, 4}, 64), random_tensor({1, 2, 3, 4}, 65)}, 23);
}

TEST(CudaAttentionOps, AttentionBadInputNamesTheNode) {
  KILNRT_SKIP_WITHOUT_GPU();
  // past_key without past_value: a clear kilnrt::Error naming the node, on the CPU and on CUDA.
  const Tensor q = random_tensor({1, 2, 2, 4}, 66), k = random_tensor({1, 2, 3, 4}, 67);
  Net net(attention(1, {false, false, false, false, true, false}).node,
          {q, k, k, kNone, random_tensor({1, 2, 1, 4}, 68)}, 23);
  for (const bool cuda : {false, true}) {
    SCOPED_TRACE(cuda ? "cuda" : "cpu");
    try {
      if (cuda)
        run_cuda(net.g, net.feeds);
      else
        run_cpu(net.g, net.feeds);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("node0"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("past_value"), std::string::npos) << e.what();
    }
  }
}

// ---- FlexAttention
// ---------------------------------------------------------------------------------------------------
TEST(CudaAttentionOps, FlexAttention) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor q = random_tensor({2, 4, 3, 8}, 71), k = random_tensor({2, 2, 6, 8}, 72),
               v = random_tensor({2, 2, 6, 5}, 73);
  Op op("FlexAttention", 3);
  op.node.domain = kPreview;
  compare(op.node, {q, k, v}, 1);
  compare(op.node, {f64_of(q), f64_of(k), f64_of(v)}, 1, 1e-12, 1e-12);
  compare(op.node, {f16_of(q), f16_of(k), f16_of(v)}, 1, 2e-3, 2e-3);
  op.f("scale", 0.25f);
  compare(op.node, {q, k, v}, 1);
}

// ---- RotaryEmbedding
// -------------------------------------------------------------------------------------------------
TEST(CudaAttentionOps, RotaryEmbedding) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 3, 4, 8}, 81);
  const Tensor cos = random_tensor({10, 4}, 82), sin = random_tensor({10, 4}, 83);
  const Tensor pos = i64({0, 1, 2, 3, 9, 5, 0, 7}, {2, 4});
  for (int64_t interleaved : {0, 1}) {
    SCOPED_TRACE("interleaved " + std::to_string(interleaved));
    compare(Op("RotaryEmbedding", 4).i("interleaved", interleaved).node, {x, cos, sin, pos}, 23);
    // rotary_embedding_dim 4 of 8: the last 4 features are copied.
    compare(Op("RotaryEmbedding", 4).i("interleaved", interleaved).i("rotary_embedding_dim", 4).node,
            {x, random_tensor({10, 2}, 84), random_tensor({10, 2}, 85), pos}, 23);
    // No position_ids: caches [B, S, rd/2].
    compare(Op("RotaryEmbedding", 4).i("interleaved", interleaved).omit_input(3).node,
            {x, random_tensor({2, 4, 4}, 86), random_tensor({2, 4, 4}, 87), kNone}, 23);
  }
  // 3-D input [B, S, H*D] with num_heads.
  compare(Op("RotaryEmbedding", 4).i("num_heads", 3).node, {random_tensor({2, 4, 24}, 88), cos, sin, pos}, 23);
  compare16(Op("RotaryEmbedding", 4).node, {x, cos, sin, pos}, 23);
}

// ---- Swish / SwiGLU
// --------------------------------------------------------------------------------------------------
TEST(CudaAttentionOps, SwishAndSwiGlu) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor a = random_tensor({3, 5, 7}, 91, -8.f, 8.f), b = random_tensor({3, 5, 7}, 92, -2.f, 2.f);
  compare(Op("Swish", 1).node, {a}, 24);
  compare(Op("Swish", 1).f("alpha", 1.702f).node, {a}, 24);
  compare(Op("Swish", 1).f("alpha", -0.5f).node, {f64_of(a)}, 24, 1e-13, 1e-13);
  compare(Op("Swish", 1).node, {random_tensor({0, 3}, 93)}, 24);  // empty
  compare(Op("SwiGLU", 2).node, {a, b}, 28);
  compare(Op("SwiGLU", 2).f("alpha", 0.5f).node, {f64_of(a), f64_of(b)}, 28, 1e-13, 1e-13);
  compare(Op("SwiGLU", 2).node, {f16_of(a), f16_of(b)}, 28, 4e-3, 2e-3);
  compare16(Op("Swish", 1).node, {a}, 24);
}

// ---- support checks (host) ------------------------------------------------------------------------------------------
TEST(CudaAttentionOps, SupportCheckAccepts) {
  const Tensor q = random_tensor({1, 2, 3, 4}, 101), kv = random_tensor({1, 1, 5, 4}, 102),
               pk = random_tensor({1, 1, 2, 4}, 103);
  std::vector<Net> nets;
  Op full = attention(4, {false, false, false, true, true, true});
  full.i("is_causal", 1).i("qk_matmul_output_mode", 3).i("left_window_size", 2);
  nets.emplace_back(full.node, std::vector<Tensor>{q, kv, kv, bools({3, 7}, 104, 0.5), pk, pk}, 25);
  nets.emplace_back(attention(1, {false, false, false, false, false, false, true}).node,
                    std::vector<Tensor>{q, kv, kv, kNone, kNone, kNone, i64({4}, {1})}, 24);
  nets.emplace_back(attention(1, {}).node, std::vector<Tensor>{f16_of(q), f16_of(kv), f16_of(kv)}, 23);  // island
  Op flex("FlexAttention", 3);
  flex.node.domain = kPreview;
  nets.emplace_back(flex.node, std::vector<Tensor>{q, kv, kv}, 1);
  nets.emplace_back(flex.node, std::vector<Tensor>{f64_of(q), f64_of(kv), f64_of(kv)}, 1);
  nets.emplace_back(
      Op("RotaryEmbedding", 4).node,
      std::vector<Tensor>{q, random_tensor({8, 2}, 105), random_tensor({8, 2}, 106), i64({0, 1, 2}, {1, 3})}, 23);
  nets.emplace_back(Op("Swish", 1).node, std::vector<Tensor>{q}, 24);
  nets.emplace_back(Op("SwiGLU", 2).node, std::vector<Tensor>{f16_of(q), f16_of(q)}, 28);
  for (const Net& net : nets) {
    SCOPED_TRACE(net.g.nodes.back().op_type);
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(net.g));
  }
}

TEST(CudaAttentionOps, SupportCheckRefusesModGraphsAndOtherDomains) {
  ir::Graph g;
  g.opsets[""] = 25;
  g.opsets[kPreview] = 1;
  Op flex("FlexAttention", 3);
  flex.node.domain = kPreview;
  flex.i("score_mod", 1);  // any attribute of that name: the graph attributes are not run
  EXPECT_NE(backends::cuda::cuda_supports(flex.node, g).find("score_mod"), std::string::npos);
  Op other("Attention", 3);
  other.node.domain = kPreview;  // only FlexAttention of the preview domain has a layer
  EXPECT_NE(backends::cuda::cuda_supports(other.node, g), "");
  EXPECT_EQ(backends::cuda::cuda_supports(Op("Swish", 1).node, g), "");
}

}  // namespace
}  // namespace kilnrt::cudatest
