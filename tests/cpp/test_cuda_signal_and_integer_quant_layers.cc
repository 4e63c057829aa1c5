// CUDA vs CPU-reference one-node comparisons of the signal layers (DFT, STFT; the window functions and
// MelWeightMatrix run on the host from constant inputs inside a CUDA plan) and of the integer quantization layers
// (DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv; outputs must match exactly).
// GPU tests skip with a message without a GPU; the support check runs everywhere.
#include <cstring>
#include <random>

#include "cuda_backend_test_util.h"
#include "cuda_exact_compare_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }
Tensor i32(const std::vector<int32_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt32, s); }
Tensor f32(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, DType::kFloat32, s); }

// Random 8-bit tensor (int8 or uint8) over the type's full range.
Tensor bytes8(DType t, const Shape& s, uint32_t seed) {
  Tensor out = Tensor::empty(t, s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(0, 255);
  auto* p = static_cast<uint8_t*>(out.raw());
  for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<uint8_t>(dist(rng));
  return out;
}
Tensor u8(const Shape& s, uint32_t seed) { return bytes8(DType::kUInt8, s, seed); }
Tensor s8(const Shape& s, uint32_t seed) { return bytes8(DType::kInt8, s, seed); }
Tensor u8v(const std::vector<uint8_t>& v, const Shape& s) {
  Tensor t = Tensor::empty(DType::kUInt8, s);
  std::memcpy(t.raw(), v.data(), v.size());
  return t;
}
Tensor s8v(const std::vector<int8_t>& v, const Shape& s) {
  Tensor t = Tensor::empty(DType::kInt8, s);
  std::memcpy(t.raw(), v.data(), v.size());
  return t;
}

TEST(CudaSignalLayers, Dft) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor real = random_tensor({2, 8, 1}, 105);
  const Tensor cplx = random_tensor({2, 6, 3, 2}, 106);
  compare_node(Op("DFT", 1).node, {real}, {}, 17, 1e-4, 1e-4);
  compare_node(Op("DFT", 1).i("onesided", 1).node, {real}, {}, 17, 1e-4, 1e-4);
  compare_node(Op("DFT", 1).i("inverse", 1).node, {cplx}, {}, 17, 1e-4, 1e-4);
  compare_node(Op("DFT", 1).i("axis", 2).node, {cplx}, {}, 17, 1e-4, 1e-4);
  compare_node(Op("DFT", 2).node, {cplx, i64({10}, {})}, {false, true}, 17, 1e-4, 1e-4);                  // zero padded
  compare_node(Op("DFT", 2).i("onesided", 1).node, {real, i64({5}, {})}, {false, true}, 17, 1e-4, 1e-4);  // cut
}

TEST(CudaSignalLayers, Stft) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor sig = random_tensor({2, 32, 1}, 107);
  const Tensor window = random_tensor({16}, 108, 0.f, 1.f);
  compare_node(Op("STFT", 3).node, {sig, i64({8}, {}), window}, {false, true, false}, 17, 1e-4, 1e-4);
  compare_node(Op("STFT", 4).i("onesided", 0).node, {sig, i64({5}, {}), window, i64({16}, {})},
               {false, true, false, true}, 17, 1e-4, 1e-4);
  compare_node(Op("STFT", 4).omit_input(2).i("onesided", 0).node,
               {random_tensor({1, 30, 2}, 109), i64({6}, {}), Tensor(), i64({12}, {})}, {false, true, false, true}, 17,
               1e-4, 1e-4);
}

TEST(CudaSignalLayers, WindowsAndMelRunOnTheHost) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    SCOPED_TRACE(op);
    compare_node(Op(op, 1).node, {i64({10}, {})}, {true}, 17);
    compare_node(Op(op, 1).i("periodic", 0).node, {i64({7}, {})}, {true}, 17);
  }
  compare_node(Op("MelWeightMatrix", 5).node,
               {i64({8}, {}), i64({64}, {}), i64({16000}, {}), f32({0.f}, {}), f32({8000.f}, {})},
               {true, true, true, true, true}, 17);
}

TEST(CudaIntegerQuantLayers, DynamicQuantizeLinear) {
  KILNRT_SKIP_WITHOUT_GPU();
  compare_node_exact(Op("DynamicQuantizeLinear", 1, 3).node, {random_tensor({3, 7}, 110, -2.f, 3.f)}, {}, 11);
  compare_node_exact(Op("DynamicQuantizeLinear", 1, 3).node, {random_tensor({4000}, 111, 0.5f, 9.f)}, {}, 11);
  compare_node_exact(Op("DynamicQuantizeLinear", 1, 3).node, {f32({0.f, 0.f, 0.f}, {3})}, {}, 11);  // scale 0
  compare_node_exact(Op("DynamicQuantizeLinear", 1, 3).omit_output(1).omit_output(2).node,
                     {random_tensor({5, 5}, 112, -3.f, -1.f)}, {}, 11);
}

TEST(CudaIntegerQuantLayers, MatMulInteger) {
  KILNRT_SKIP_WITHOUT_GPU();
  compare_node_exact(Op("MatMulInteger", 2).node, {u8({2, 3, 4}, 113), u8({4, 5}, 114)}, {}, 10);
  compare_node_exact(Op("MatMulInteger", 4).node,
                     {u8({2, 3, 4}, 115), s8({4, 5}, 116), u8v({7}, {}), s8v({-3, 0, 5, 127, -128}, {5})}, {}, 10);
  compare_node_exact(Op("MatMulInteger", 4).node,
                     {s8({3, 4}, 117), s8({2, 1, 4, 5}, 118), s8v({1, -2, 3}, {3}), s8v({4}, {})}, {}, 10);
  compare_node_exact(Op("MatMulInteger", 2).node, {u8({6}, 119), u8({3, 6, 2}, 120)}, {}, 10);  // 1-D a
  compare_node_exact(Op("MatMulInteger", 2).node, {u8({2, 3, 6}, 121), u8({6}, 122)}, {}, 10);  // 1-D b
}

TEST(CudaIntegerQuantLayers, QLinearMatMul) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (bool is_signed : {false, true}) {
    SCOPED_TRACE(is_signed ? "int8" : "uint8");
    const Tensor a = is_signed ? s8({2, 3, 8}, 123) : u8({2, 3, 8}, 123);
    const Tensor b = is_signed ? s8({8, 5}, 124) : u8({8, 5}, 124);
    const Tensor azp = is_signed ? s8v({-3}, {}) : u8v({120}, {});
    const Tensor bzp = is_signed ? s8v({2}, {}) : u8v({130}, {});
    const Tensor yzp = is_signed ? s8v({-10}, {}) : u8v({128}, {});
    compare_node_exact(Op("QLinearMatMul", 8).node,
                       {a, f32({0.02f}, {}), azp, b, f32({0.03f}, {}), bzp, f32({0.05f}, {}), yzp}, {}, 10);
    // Small y_scale: many values saturate; scales as constants.
    compare_node_exact(Op("QLinearMatMul", 8).node,
                       {a, f32({0.1f}, {}), azp, b, f32({0.07f}, {}), bzp, f32({0.01f}, {}), yzp},
                       {false, true, true, false, true, true, true, true}, 10);
  }
}

TEST(CudaIntegerQuantLayers, ConvInteger) {
  KILNRT_SKIP_WITHOUT_GPU();
  compare_node_exact(Op("ConvInteger", 2).node, {u8({1, 3, 5, 5}, 125), u8({4, 3, 3, 3}, 126)}, {}, 10);
  compare_node_exact(Op("ConvInteger", 4).i("group", 2).ints("pads", {1, 1, 1, 1}).ints("strides", {2, 1}).node,
                     {u8({2, 4, 6, 7}, 127), u8({6, 2, 3, 3}, 128), u8v({100}, {}), u8v({1, 2, 3, 4, 5, 6}, {6})}, {},
                     10);
  compare_node_exact(Op("ConvInteger", 4).ints("dilations", {2}).ints("pads", {2, 1}).node,
                     {s8({1, 2, 11}, 129), s8({3, 2, 3}, 130), s8v({-5}, {}), s8v({7}, {})}, {}, 10);
}

TEST(CudaIntegerQuantLayers, QLinearConv) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (bool is_signed : {false, true}) {
    SCOPED_TRACE(is_signed ? "int8" : "uint8");
    const Tensor x = is_signed ? s8({1, 4, 6, 6}, 131) : u8({1, 4, 6, 6}, 131);
    const Tensor w = is_signed ? s8({4, 2, 3, 3}, 132) : u8({4, 2, 3, 3}, 132);
    const Tensor xzp = is_signed ? s8v({3}, {}) : u8v({128}, {});
    const Tensor wzp = is_signed ? s8v({0, 0, 0, 0}, {4}) : u8v({127, 128, 129, 130}, {4});
    const Tensor yzp = is_signed ? s8v({-1}, {}) : u8v({100}, {});
    const Tensor ws = f32({0.01f, 0.02f, 0.005f, 0.03f}, {4});
    const Tensor bias = i32({-500, 0, 1200, 37}, {4});
    compare_node_exact(Op("QLinearConv", 9).i("group", 2).ints("pads", {1, 1, 1, 1}).node,
                       {x, f32({0.05f}, {}), xzp, w, ws, wzp, f32({0.2f}, {}), yzp, bias},
                       {false, false, false, true, true, true, false, false, true}, 10);
    compare_node_exact(Op("QLinearConv", 8).i("group", 2).ints("strides", {2, 2}).node,
                       {x, f32({0.05f}, {}), xzp, w, f32({0.02f}, {}), is_signed ? s8v({0}, {}) : u8v({128}, {}),
                        f32({0.04f}, {}), yzp},
                       {}, 10);
  }
}

// Without a GPU too: the plan's support check accepts these layers and still names what it refuses.
TEST(CudaSignalAndIntegerQuantLayers, SupportCheck) {
  {
    OneNode one(Op("DFT", 1).node, {random_tensor({2, 8, 1}, 133)});
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(one.g));
  }
  {
    OneNode one(Op("MatMulInteger", 2).node, {u8({2, 3}, 134), u8({3, 4}, 135)});
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(one.g));
  }
  {  // A window whose size is a graph input: accepted, read at a sync point (test_cuda_op_variants.cc runs it).
    OneNode one(Op("HannWindow", 1).node, {i64({10}, {})}, {false});
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(one.g));
  }
  {  // A float64 DFT is refused, naming the node.
    Tensor x = Tensor::empty(DType::kFloat64, {2, 8, 1});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<double>()[i] = 0.5 * static_cast<double>(i);
    OneNode one(Op("DFT", 1).node, {x});
    try {
      backends::cuda::CudaPlan::check_supported(one.g);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("node0"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
