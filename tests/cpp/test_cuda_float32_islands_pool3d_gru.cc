// CUDA layer cases checked against the CPU reference: float16 / bfloat16 tensors meeting a float32-only CUDA layer
// in a float32 engine (run as float32 islands: float32_island.h), 3-D MaxPool / AveragePool (dilations, ceil_mode,
// count_include_pad), 3-D ConvTranspose, and GRU with linear_before_reset 0 and 1 (both directions, sequence_lens,
// initial_h). GPU tests skip with a message without a GPU; the host tests (the float32 view of a node,
// check_supported) run everywhere.
#include <cmath>

#include "backends/cuda/float32_island.h"
#include "cuda_backend_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

Tensor i32(const std::vector<int32_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt32, s); }

// float32 -> float16 / bfloat16 (round to nearest even).
Tensor to16(const Tensor& f, DType t) {
  Tensor h = Tensor::empty(t, f.shape());
  for (int64_t i = 0; i < f.numel(); ++i)
    h.data<uint16_t>()[i] =
        t == DType::kFloat16 ? float_to_half(f.data<float>()[i]) : float_to_bfloat16(f.data<float>()[i]);
  return h;
}
double value16(const Tensor& t, int64_t i) {
  const uint16_t v = t.data<uint16_t>()[i];
  return t.dtype() == DType::kFloat16 ? half_to_float(v) : bfloat16_to_float(v);
}

// 16-bit outputs: equal dtype and shape, values within `ulps` units in the last place of the type (the CPU reference
// computes in float / double and rounds once, as the island does: they may differ by one rounding, and float sums by
// their order).
void expect16_close(const Tensor& got, const Tensor& want, double ulps = 2.0) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  const double eps = want.dtype() == DType::kFloat16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
  int failures = 0;
  for (int64_t i = 0; i < want.numel() && failures < 5; ++i) {
    const double a = value16(got, i), b = value16(want, i);
    if (std::isnan(b) ? std::isnan(a) : std::fabs(a - b) <= ulps * eps * std::max(std::fabs(b), 1e-3)) continue;
    ++failures;
    ADD_FAILURE() << "element " << i << ": got " << a << ", want " << b;
  }
}

// Runs the one-node graph on both backends; 16-bit outputs compared with expect16_close, others exactly / closely.
void compare16(const ir::Node& node, const std::vector<Tensor>& inputs, const std::vector<bool>& constant = {},
               int64_t opset = 17) {
  OneNode one(node, inputs, constant, opset);
  const auto want = run_cpu(one.g, one.feeds);
  const auto got = run_cuda(one.g, one.feeds);
  for (const auto& [name, t] : want) {
    SCOPED_TRACE(node.op_type + " output " + name);
    if (backends::cuda::is_16bit_float(t.dtype()))
      expect16_close(got.at(name), t);
    else
      expect_tensors_close(got.at(name), t);
  }
}

// ---- host tests ---------------------------------------------------------------------------------------------------

TEST(CudaIslandHost, Float32ViewRetypesConvertsAndDropsPrecision) {
  Op mm("Einsum", 2);
  mm.s("equation", "ij,jk->ik");
  mm.node.attrs[backends::cuda::kPrecisionAttr].kind = ir::Attribute::Kind::kString;
  mm.node.attrs[backends::cuda::kPrecisionAttr].s = "fp16";
  const Tensor w = to16(random_tensor({4, 3}, 7), DType::kBFloat16);
  OneNode one(mm.node, {to16(random_tensor({2, 4}, 6), DType::kBFloat16), w}, {false, true}, 12);
  std::string why = backends::cuda::cuda_supports(mm.node, one.g);
  ASSERT_FALSE(why.empty()) << "Einsum takes bfloat16 natively now: pick another float32-only layer for this test";
  auto view = backends::cuda::float32_island_view(one.g.nodes[0], one.g, why);
  ASSERT_TRUE(view) << why;
  EXPECT_TRUE(why.empty());
  ASSERT_EQ(view->nodes.size(), 1u);
  EXPECT_FALSE(view->nodes[0].has_attr(backends::cuda::kPrecisionAttr));
  EXPECT_EQ(view->type_of(mm.node.inputs[0])->dtype, DType::kFloat32);
  EXPECT_EQ(view->type_of(mm.node.outputs[0])->dtype, DType::kFloat32);
  const Tensor& wc = view->constants.at(mm.node.inputs[1]);
  ASSERT_EQ(wc.dtype(), DType::kFloat32);
  for (int64_t i = 0; i < w.numel(); ++i) EXPECT_EQ(wc.data<float>()[i], value16(w, i));  // exact
  // The original graph is untouched.
  EXPECT_EQ(one.g.type_of(mm.node.inputs[0])->dtype, DType::kBFloat16);
  // Float32 tensors: no view (nothing to retype), the reason stays.
  OneNode f32(mm.node, {random_tensor({2, 4}, 6), random_tensor({4, 3}, 7)}, {}, 12);
  std::string why32 = "some reason";
  EXPECT_FALSE(backends::cuda::float32_island_view(f32.g.nodes[0], f32.g, why32));
  EXPECT_EQ(why32, "some reason");
  // An output dtype named by an attribute ("to" / "dtype"): never a view (the layer would write that dtype).
  OneNode eye(Op("EyeLike", 1).i("dtype", 10).node, {to16(random_tensor({3, 3}, 8), DType::kFloat16)});
  std::string why_eye = "eye";
  EXPECT_FALSE(backends::cuda::float32_island_view(eye.g.nodes[0], eye.g, why_eye));
  EXPECT_EQ(why_eye, "eye");
}

TEST(CudaIslandHost, CheckSupportedAcceptsIslandsPool3dConvTransposeAndGru) {
  const DType types[] = {DType::kFloat16, DType::kBFloat16};
  for (DType t : types) {
    SCOPED_TRACE(dtype_name(t));
    OneNode mm(Op("MatMul", 2).node, {to16(random_tensor({2, 4}, 1), t), to16(random_tensor({4, 3}, 2), t)});
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(mm.g));
    EXPECT_EQ(backends::cuda::cuda_supports(mm.g.nodes[0], mm.g), "");  // native, no island
    OneNode elu(Op("Elu", 1).f("alpha", 0.5f).node, {to16(random_tensor({3, 5}, 3), t)});
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(elu.g));
    OneNode ein(Op("Einsum", 2).s("equation", "ij,jk->ik").node,
                {to16(random_tensor({2, 4}, 4), t), to16(random_tensor({4, 3}, 5), t)}, {}, 12);
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(ein.g));
  }
  OneNode pool(Op("AveragePool", 1).ints("kernel_shape", {2, 2, 2}).node, {random_tensor({1, 2, 4, 4, 4}, 8)});
  EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(pool.g));
  OneNode convt(Op("ConvTranspose", 2).node, {random_tensor({1, 2, 3, 3, 3}, 9), random_tensor({2, 3, 2, 2, 2}, 10)});
  EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(convt.g));
  OneNode gru(Op("GRU", 3, 2).i("hidden_size", 3).node,
              {random_tensor({2, 1, 2}, 11), random_tensor({1, 9, 2}, 12), random_tensor({1, 9, 3}, 13)});
  EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(gru.g));
  // Still refused, with the node named: a 4-D ConvTranspose (no 4-D kernel).
  OneNode c4(Op("ConvTranspose", 2, 1, "deconv4d").node,
             {random_tensor({1, 1, 2, 2, 2, 2}, 14), random_tensor({1, 1, 2, 2, 2, 2}, 15)});
  try {
    backends::cuda::CudaPlan::check_supported(c4.g);
    ADD_FAILURE() << "a 4-D ConvTranspose was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("deconv4d"), std::string::npos) << e.what();
  }
}

// The 16-bit cases: tensors into float32-only CUDA layers (islands), and MatMul (native).
struct Case16 {
  ir::Node node;
  std::vector<Tensor> inputs;
  std::vector<bool> constant;
  int64_t opset = 17;
};
std::vector<Case16> island_cases(DType t) {
  std::vector<Case16> c;
  // MatMul runs these natively (cuBLASLt with 16-bit A / B / D), the others as islands.
  c.push_back({Op("MatMul", 2).node, {to16(random_tensor({2, 3, 8}, 21), t), to16(random_tensor({8, 5}, 22), t)}});
  c.push_back({Op("MatMul", 2).node, {to16(random_tensor({2, 3, 8}, 19), t), to16(random_tensor({2, 8, 5}, 20), t)}});
  c.push_back({Op("MatMul", 2).node,
               {to16(random_tensor({2, 1, 4, 8}, 17), t), to16(random_tensor({1, 2, 8, 8}, 18), t)}});  // broadcast
  // Weights as a 16-bit constant (uploaded 16-bit as they are).
  c.push_back(
      {Op("MatMul", 2).node, {to16(random_tensor({4, 8}, 23), t), to16(random_tensor({8, 6}, 24), t)}, {false, true}});
  c.push_back({Op("Elu", 1).f("alpha", 0.7f).node, {to16(random_tensor({3, 7}, 25, -3.f, 3.f), t)}});
  c.push_back({Op("Celu", 1).f("alpha", 1.5f).node, {to16(random_tensor({3, 7}, 26, -3.f, 3.f), t)}, {}, 12});
  c.push_back({Op("Einsum", 2).s("equation", "ij,jk->ik").node,
               {to16(random_tensor({3, 4}, 27), t), to16(random_tensor({4, 2}, 28), t)},
               {},
               12});
  c.push_back({Op("Einsum", 1).s("equation", "ij->ji").node, {to16(random_tensor({3, 4}, 29), t)}, {}, 12});
  // Conv with 16-bit weights and bias (test_causal_conv_with_state_fp16_expanded's Conv).
  c.push_back(
      {Op("Conv", 3).ints("pads", {1, 1}).node,
       {to16(random_tensor({1, 2, 7}, 30), t), to16(random_tensor({4, 2, 3}, 31), t), to16(random_tensor({4}, 32), t)},
       {false, true, true}});
  c.push_back(
      {Op("AveragePool", 1).ints("kernel_shape", {2, 2, 2}).node, {to16(random_tensor({1, 2, 3, 4, 5}, 33), t)}});
  return c;
}

TEST(CudaIslandHost, CpuReferenceRunsTheIslandCasesAndCheckSupportedAcceptsThem) {
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    for (const Case16& c : island_cases(t)) {
      SCOPED_TRACE(c.node.op_type);
      OneNode one(c.node, c.inputs, c.constant, c.opset);
      EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(one.g));
      std::map<std::string, Tensor> out;
      ASSERT_NO_THROW(out = run_cpu(one.g, one.feeds));
      EXPECT_EQ(out.begin()->second.dtype(), t);
    }
  }
}

// ---- GPU tests ----------------------------------------------------------------------------------------------------

TEST(CudaFloat32Islands, Float16AndBFloat16TensorsRunAsFloat32Islands) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    for (const Case16& c : island_cases(t)) {
      SCOPED_TRACE(c.node.op_type);
      compare16(c.node, c.inputs, c.constant, c.opset);
    }
  }
}

TEST(CudaFloat32Islands, UniqueOn16BitValuesIsNative) {
  KILNRT_SKIP_WITHOUT_GPU();
  // Repeated values, -0 and 0 (equal), sorted and unsorted, flat and along an axis: the values are copied, not
  // recomputed, so the outputs equal the CPU's bit for bit.
  const std::vector<float> v = {2.5f, -1.f, 2.5f, 0.f, -0.f, 7.25f, -1.f, 3.f, 1e-3f, 3.f, 2.5f, -4.f};
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    const Tensor x = to16(Tensor::from_vector(v, DType::kFloat32, {12}), t);
    compare16(Op("Unique", 1, 4).node, {x}, {}, 11);
    compare16(Op("Unique", 1, 4).i("sorted", 0).node, {x}, {}, 11);
    const Tensor m = to16(Tensor::from_vector(v, DType::kFloat32, {4, 3}), t);
    compare16(Op("Unique", 1, 4).i("axis", 0).node, {m}, {}, 11);
  }
}

TEST(CudaFloat32Islands, IslandsAndNative16BitMatMulAreReported) {
  KILNRT_SKIP_WITHOUT_GPU();
  kilnrt::cuda::ContextGuard guard(0);
  OneNode one(Op("Elu", 1, 1, "elu16").node, {to16(random_tensor({2, 4}, 41), DType::kFloat16)});
  backends::cuda::CudaPlan plan(one.g, 0);
  ASSERT_EQ(plan.tactics().size(), 1u);
  EXPECT_NE(plan.tactics()[0].second.find("+fp32-island"), std::string::npos) << plan.tactics()[0].second;
  EXPECT_EQ(plan.precisions().at(0).second, "fp32");
  // MatMul runs 16-bit model tensors natively (cuBLASLt, float32 compute): no island.
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    OneNode mm(Op("MatMul", 2, 1, "mm16").node,
               {to16(random_tensor({2, 4}, 42), t), to16(random_tensor({4, 3}, 43), t)});
    backends::cuda::CudaPlan p16(mm.g, 0);
    const std::string tactic = p16.tactics().at(0).second;
    EXPECT_EQ(tactic.find("island"), std::string::npos) << tactic;
    EXPECT_NE(tactic.find(t == DType::kFloat16 ? "-fp16-io" : "-bf16-io"), std::string::npos) << tactic;
  }
  // A float32 layer is no island.
  OneNode f32(Op("Elu", 1, 1, "elu32").node, {random_tensor({2, 4}, 44)});
  backends::cuda::CudaPlan plan32(f32.g, 0);
  EXPECT_EQ(plan32.tactics().at(0).second.find("island"), std::string::npos);
}

TEST(CudaPool3d, Pool3d) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 3, 7, 6, 9}, 51, -2.f, 2.f);
  compare_node(Op("MaxPool", 1).ints("kernel_shape", {2, 2, 2}).node, {x});
  compare_node(Op("MaxPool", 1)
                   .ints("kernel_shape", {2, 3, 2})
                   .ints("strides", {2, 1, 3})
                   .ints("dilations", {2, 2, 1})
                   .ints("pads", {1, 0, 1, 0, 1, 1})
                   .node,
               {x}, {}, 12);
  compare_node(Op("MaxPool", 1).ints("kernel_shape", {3, 3, 3}).ints("strides", {2, 2, 2}).i("ceil_mode", 1).node, {x},
               {}, 12);
  compare_node(
      Op("MaxPool", 1).ints("kernel_shape", {3, 2, 3}).s("auto_pad", "SAME_UPPER").ints("strides", {2, 2, 2}).node, {x},
      {}, 12);
  for (int64_t include : {0, 1})
    for (int64_t ceil : {0, 1}) {
      SCOPED_TRACE("count_include_pad " + std::to_string(include) + " ceil_mode " + std::to_string(ceil));
      compare_node(Op("AveragePool", 1).ints("kernel_shape", {2, 2, 2}).node, {x}, {}, 19);
      compare_node(Op("AveragePool", 1)
                       .ints("kernel_shape", {3, 3, 2})
                       .ints("strides", {2, 2, 3})
                       .ints("dilations", {2, 1, 2})
                       .ints("pads", {1, 1, 0, 1, 0, 1})
                       .i("count_include_pad", include)
                       .i("ceil_mode", ceil)
                       .node,
                   {x}, {}, 19, 1e-5, 1e-5);
    }
  // NaN propagates through MaxPool as on the CPU.
  Tensor nan = random_tensor({1, 1, 2, 2, 2}, 52);
  nan.data<float>()[3] = std::nanf("");
  compare_node(Op("MaxPool", 1).ints("kernel_shape", {2, 2, 1}).node, {nan});
}

TEST(CudaConvTranspose3d, ConvTranspose3d) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 4, 3, 4, 2}, 61);
  compare_node(Op("ConvTranspose", 2).node, {x, random_tensor({4, 3, 2, 2, 2}, 62)}, {}, 17, 1e-5, 1e-4);
  compare_node(Op("ConvTranspose", 3)
                   .ints("strides", {2, 1, 3})
                   .ints("pads", {1, 0, 1, 0, 1, 1})
                   .ints("dilations", {1, 2, 1})
                   .ints("output_padding", {1, 0, 2})
                   .node,
               {x, random_tensor({4, 2, 3, 2, 3}, 63), random_tensor({2}, 64)}, {false, true, true}, 17, 1e-5, 1e-4);
  compare_node(Op("ConvTranspose", 3).i("group", 2).ints("strides", {2, 2, 2}).node,
               {x, random_tensor({4, 3, 2, 3, 2}, 65), random_tensor({6}, 66)}, {}, 17, 1e-5, 1e-4);
  compare_node(Op("ConvTranspose", 2).s("auto_pad", "SAME_UPPER").ints("strides", {2, 2, 2}).node,
               {x, random_tensor({4, 1, 3, 3, 3}, 67)}, {}, 17, 1e-5, 1e-4);
  compare_node(Op("ConvTranspose", 2).ints("output_shape", {7, 9, 5}).ints("strides", {2, 2, 2}).node,
               {x, random_tensor({4, 1, 3, 3, 3}, 68)}, {}, 17, 1e-5, 1e-4);
}

TEST(CudaGru, GruBothLinearBeforeResetValues) {
  KILNRT_SKIP_WITHOUT_GPU();
  const int64_t seq = 4, batch = 3, in = 5, hid = 6;
  const Tensor x = random_tensor({seq, batch, in}, 71);
  const Tensor xb = random_tensor({batch, seq, in}, 72);
  const Tensor lens = i32({4, 2, 3}, {batch});
  for (int64_t lbr : {0, 1}) {
    SCOPED_TRACE("linear_before_reset " + std::to_string(lbr));
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      SCOPED_TRACE(dir);
      const int64_t dirs = std::string(dir) == "bidirectional" ? 2 : 1;
      // Random W, R (the reset gate differs between hidden units), bias, sequence_lens, initial_h.
      compare_node(Op("GRU", 6, 2).i("hidden_size", hid).s("direction", dir).i("linear_before_reset", lbr).node,
                   {x, random_tensor({dirs, 3 * hid, in}, 73), random_tensor({dirs, 3 * hid, hid}, 74, -1.5f, 1.5f),
                    random_tensor({dirs, 6 * hid}, 75), lens, random_tensor({dirs, batch, hid}, 76)},
                   {}, 14, 1e-5, 1e-4);
      compare_node(
          Op("GRU", 3, 2).i("hidden_size", hid).s("direction", dir).i("layout", 1).i("linear_before_reset", lbr).node,
          {xb, random_tensor({dirs, 3 * hid, in}, 77), random_tensor({dirs, 3 * hid, hid}, 78, -1.5f, 1.5f)}, {}, 14,
          1e-5, 1e-4);
    }
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
