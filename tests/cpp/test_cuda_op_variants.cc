// CUDA vs CPU-reference comparisons of op variants beyond the main cases of each CUDA layer: the preview.training
// optimizers (Adagrad, Momentum, Adam), the window functions / MelWeightMatrix with sizes that are graph inputs (sync
// points), DFT's axis input (opset 20), Dropout's mask, BatchNormalization with device parameters (inference and
// training), DequantizeLinear on 16-bit integers, QLinearMatMul with float16 scales, CastLike of a value whose dtype
// is only known at run time, MaxPool's Indices and MaxPool on 8-bit integers. Every layer must be placed on CUDA
// (tactic "cuda:..."); 16-bit engines (fp16 / bf16) run the float cases too. GPU tests skip with a message without a
// GPU; the support checks at the end run everywhere.
#include <cstring>
#include <limits>
#include <random>

#include "cuda_backend_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

constexpr const char* kTraining = "ai.onnx.preview.training";

Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }
Tensor f32(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, DType::kFloat32, s); }
Tensor f64_of(const Tensor& t) {  // float32 -> float64, same values
  Tensor d = Tensor::empty(DType::kFloat64, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) d.data<double>()[i] = t.data<float>()[i];
  return d;
}
Tensor boolean(bool v) {
  Tensor t = Tensor::empty(DType::kBool, {});
  t.data<uint8_t>()[0] = v ? 1 : 0;
  return t;
}
Tensor half_scalar(float v) {
  return Tensor::from_vector(std::vector<uint16_t>{float_to_half(v)}, DType::kFloat16, {});
}
template <typename T>
Tensor ints(DType dt, const Shape& s, uint32_t seed, int lo, int hi) {
  Tensor t = Tensor::empty(dt, s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) static_cast<T*>(t.raw())[i] = static_cast<T>(dist(rng));
  return t;
}

ir::Node training_node(const std::string& op, size_t n_in, size_t n_out) {
  ir::Node n = Op(op, n_in, n_out).node;
  n.domain = kTraining;
  return n;
}

// ---- optimizers ---------------------------------------------------------------------------------------------------
TEST(CudaTrainingOptimizers, Adagrad) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor r = f32({0.1f}, {}), t = i64({3}, {});
  const Tensor x = random_tensor({3, 4}, 1), g = random_tensor({3, 4}, 2), h = random_tensor({3, 4}, 3, 0.f, 2.f);
  Op op("Adagrad", 5, 2);
  op.node.domain = kTraining;
  op.f("decay_factor", 0.1f).f("epsilon", 1e-5f).f("norm_coefficient", 0.01f);
  const ir::Node& one = op.node;
  compare_on_cuda(one, {r, t, x, g, h}, {}, 1);
  compare_on_cuda(one, {r, t, x, g, h}, {true, true, false, false, false}, 1);         // R and T constants
  compare_on_cuda(one, {r, t, f64_of(x), f64_of(g), f64_of(h)}, {}, 1, 1e-12, 1e-12);  // float64 tensors
  // Two optimized tensors of different shapes.
  ir::Node two = training_node("Adagrad", 8, 4);
  compare_on_cuda(two, {r, t, x, random_tensor({5}, 4), g, random_tensor({5}, 5), h, random_tensor({5}, 6, 0.f, 1.f)},
                  {}, 1);
  compare16_on_cuda(two, {r, t, x, random_tensor({5}, 4), g, random_tensor({5}, 5), h, random_tensor({5}, 6, 0.f, 1.f)},
                    {}, 1, 1.0);
}

TEST(CudaTrainingOptimizers, MomentumStandardAndNesterov) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 7}, 11), g = random_tensor({2, 7}, 12), v = random_tensor({2, 7}, 13);
  for (const char* mode : {"standard", "nesterov"}) {
    for (int64_t step : {0, 4}) {  // T = 0: the gradient is not scaled by beta
      SCOPED_TRACE(std::string(mode) + " T=" + std::to_string(step));
      Op op("Momentum", 5, 2);
      op.node.domain = kTraining;
      op.f("alpha", 0.95f).f("beta", 0.1f).f("norm_coefficient", 0.02f).s("mode", mode);
      compare_on_cuda(op.node, {f32({0.05f}, {}), i64({step}, {}), x, g, v}, {}, 1);
      compare_on_cuda(op.node, {f64_of(f32({0.05f}, {})), i64({step}, {}), f64_of(x), f64_of(g), f64_of(v)}, {}, 1,
                      1e-12, 1e-12);
    }
  }
  Op multi("Momentum", 8, 4);
  multi.node.domain = kTraining;
  multi.f("alpha", 0.9f).f("beta", 1.f).f("norm_coefficient", 0.f).s("mode", "nesterov");
  compare_on_cuda(
      multi.node,
      {f32({0.01f}, {}), i64({1}, {}), x, random_tensor({3}, 14), g, random_tensor({3}, 15), v, random_tensor({3}, 16)},
      {}, 1);
}

TEST(CudaTrainingOptimizers, Adam) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({4, 3}, 21), g = random_tensor({4, 3}, 22), v = random_tensor({4, 3}, 23);
  const Tensor h = random_tensor({4, 3}, 24, 0.f, 1.f);
  for (int64_t step : {0, 5}) {
    SCOPED_TRACE("T=" + std::to_string(step));
    Op op("Adam", 6, 3);
    op.node.domain = kTraining;
    op.f("alpha", 0.85f)
        .f("beta", 0.95f)
        .f("epsilon", 1e-4f)
        .f("norm_coefficient", 0.001f)
        .f("norm_coefficient_post", 0.02f);
    compare_on_cuda(op.node, {f32({0.1f}, {}), i64({step}, {}), x, g, v, h}, {}, 1, 1e-6, 1e-5);
    compare_on_cuda(op.node, {f32({0.1f}, {}), i64({step}, {}), f64_of(x), f64_of(g), f64_of(v), f64_of(h)}, {}, 1,
                    1e-12, 1e-11);
  }
  Op two("Adam", 10, 6);  // default attributes, two tensors
  two.node.domain = kTraining;
  const std::vector<Tensor> ins = {f32({0.1f}, {}),
                                   i64({2}, {}),
                                   x,
                                   random_tensor({2}, 25),
                                   g,
                                   random_tensor({2}, 26),
                                   v,
                                   random_tensor({2}, 27),
                                   h,
                                   random_tensor({2}, 28, 0.f, 1.f)};
  compare_on_cuda(two.node, ins, {}, 1);
  compare16_on_cuda(two.node, ins, {}, 1, 1.0);
}

// ---- signal: sizes / axis read at a sync point ----------------------------------------------------------------------
TEST(CudaSignalSizesAtSyncPoint, WindowsAndMelWithDeviceSizes) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    SCOPED_TRACE(op);
    compare_on_cuda(Op(op, 1).node, {i64({10}, {})}, {false}, 17);
    compare_on_cuda(Op(op, 1).i("periodic", 0).node, {i64({7}, {})}, {false}, 17);
    compare_on_cuda(Op(op, 1).i("output_datatype", 11).node, {i64({9}, {})}, {false}, 17, 1e-12, 1e-12);  // float64
  }
  compare_on_cuda(Op("MelWeightMatrix", 5).node,
                  {i64({8}, {}), i64({64}, {}), i64({16000}, {}), f32({0.f}, {}), f32({8000.f}, {})}, {}, 17);
  compare_on_cuda(Op("MelWeightMatrix", 5).node,  // only num_mel_bins on the device
                  {i64({6}, {}), i64({64}, {}), i64({16000}, {}), f32({0.f}, {}), f32({8000.f}, {})},
                  {false, true, true, true, true}, 17);
}

TEST(CudaSignalSizesAtSyncPoint, DftAxisInput) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor real = random_tensor({2, 5, 6, 1}, 31), cplx = random_tensor({2, 5, 6, 2}, 32);
  const Tensor none;
  for (int64_t axis : {1, 2, -2, -3, 0}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    compare_on_cuda(Op("DFT", 3).omit_input(1).node, {real, none, i64({axis}, {})}, {}, 20, 1e-4, 1e-4);
    compare_on_cuda(Op("DFT", 3).omit_input(1).i("inverse", 1).node, {cplx, none, i64({axis}, {})}, {}, 20, 1e-4, 1e-4);
    compare_on_cuda(Op("DFT", 3).omit_input(1).node, {cplx, none, i64({axis}, {})}, {false, false, true}, 20, 1e-4,
                    1e-4);
  }
  // dft_length and onesided with the axis on the device; axis omitted (opset 20 default -2).
  compare_on_cuda(Op("DFT", 3).i("onesided", 1).node, {real, i64({8}, {}), i64({2}, {})}, {false, true, false}, 20,
                  1e-4, 1e-4);
  compare_on_cuda(Op("DFT", 1).node, {real}, {}, 20, 1e-4, 1e-4);
  // An axis naming the real / complex dim is an error on both sides.
  OneNode bad(Op("DFT", 3).omit_input(1).node, {real, none, i64({3}, {})}, {}, 20);
  EXPECT_THROW(run_cpu(bad.g, bad.feeds), Error);
  EXPECT_THROW(run_cuda(bad.g, bad.feeds), Error);
}

// ---- Dropout's mask -------------------------------------------------------------------------------------------------
TEST(CudaDropout, DropoutMask) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({3, 4, 5}, 41);
  auto check_identity = [&](const std::map<std::string, Tensor>& got, const Tensor& in) {
    const Tensor& y = got.at("out0");
    const Tensor& mask = got.at("out1");
    ASSERT_EQ(y.nbytes(), in.nbytes());
    EXPECT_EQ(std::memcmp(y.raw(), in.raw(), in.nbytes()), 0);
    ASSERT_EQ(mask.dtype(), DType::kBool);
    for (int64_t i = 0; i < mask.numel(); ++i) ASSERT_EQ(mask.data<uint8_t>()[i], 1) << "mask element " << i;
  };
  check_identity(compare_on_cuda(Op("Dropout", 1, 2).node, {x}, {}, 13), x);
  check_identity(compare_on_cuda(Op("Dropout", 2, 2).node, {x, f32({0.3f}, {})}, {}, 13), x);  // ratio alone: inference
  check_identity(compare_on_cuda(Op("Dropout", 3, 2).node, {x, f32({0.f}, {}), boolean(true)}, {}, 13), x);
  check_identity(compare_on_cuda(Op("Dropout", 3, 2).node, {x, f32({0.7f}, {}), boolean(false)}, {}, 13), x);
  check_identity(compare_on_cuda(Op("Dropout", 3, 2).node, {x, f32({0.f}, {}), boolean(true)}, {false, true, true}, 13),
                 x);
  const Tensor xi = i64({1, -2, 3, 4}, {2, 2});
  check_identity(compare_on_cuda(Op("Dropout", 1, 2).node, {xi}, {}, 13), xi);
  compare16_on_cuda(Op("Dropout", 1, 2).node, {x}, {}, 13, 1.0);
  // training_mode with a non-zero ratio (random dropout): refused on both sides, naming the node.
  OneNode random(Op("Dropout", 3, 2).node, {x, f32({0.5f}, {}), boolean(true)}, {}, 13);
  EXPECT_THROW(run_cpu(random.g, random.feeds), Error);
  try {
    run_cuda(random.g, random.feeds);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node0"), std::string::npos) << e.what();
  }
}

// ---- BatchNormalization with device parameters ------------------------------------------------------------------
TEST(CudaBatchNormalization, BatchNormDeviceParams) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 3, 4, 5}, 51, -3.f, 4.f);
  const Tensor scale = random_tensor({3}, 52, 0.5f, 2.f), bias = random_tensor({3}, 53);
  const Tensor mean = random_tensor({3}, 54), var = random_tensor({3}, 55, 0.2f, 3.f);
  compare_on_cuda(Op("BatchNormalization", 5).f("epsilon", 1e-2f).node, {x, scale, bias, mean, var}, {}, 15, 1e-5,
                  1e-5);
  compare_on_cuda(Op("BatchNormalization", 5).node, {random_tensor({4, 3, 7}, 56), scale, bias, mean, var},
                  {false, true, false, true, false}, 15, 1e-5, 1e-5);
  // Training mode: batch statistics, running mean / var outputs (also with constant parameters).
  for (bool consts : {false, true}) {
    SCOPED_TRACE(consts ? "constant parameters" : "graph-input parameters");
    const std::vector<bool> c = {false, consts, consts, consts, consts};
    compare_on_cuda(Op("BatchNormalization", 5, 3).i("training_mode", 1).f("momentum", 0.8f).f("epsilon", 1e-3f).node,
                    {x, scale, bias, mean, var}, c, 15, 1e-5, 1e-4);
    compare_on_cuda(Op("BatchNormalization", 5, 1).i("training_mode", 1).node, {x, scale, bias, mean, var}, c, 15, 1e-5,
                    1e-4);
  }
  compare_on_cuda(Op("BatchNormalization", 5, 3).i("training_mode", 1).node,
                  {random_tensor({3, 3, 600}, 57, 10.f, 12.f), scale, bias, mean, var}, {}, 15, 1e-5, 1e-4);
  compare16_on_cuda(Op("BatchNormalization", 5).node, {x, scale, bias, mean, var}, {}, 15, 4.0);
  compare16_on_cuda(Op("BatchNormalization", 5, 3).i("training_mode", 1).node, {x, scale, bias, mean, var}, {}, 15,
                    4.0);
}

// ---- quantization / cast ------------------------------------------------------------------------------------------
TEST(CudaQuantizationDtypes, DequantizeLinear16BitIntegers) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor s16 = ints<int16_t>(DType::kInt16, {3, 4}, 61, -32768, 32767);
  const Tensor u16 = ints<uint16_t>(DType::kUInt16, {3, 4}, 62, 0, 65535);
  compare_on_cuda(Op("DequantizeLinear", 3).node,
                  {s16, f32({0.01f}, {}), ints<int16_t>(DType::kInt16, {}, 63, -100, 100)}, {}, 21);
  compare_on_cuda(Op("DequantizeLinear", 2).node, {s16, f32({0.5f}, {})}, {}, 21);
  compare_on_cuda(Op("DequantizeLinear", 3).i("axis", 0).node,
                  {u16, f32({0.25f, 2.f, 1e-3f}, {3}), ints<uint16_t>(DType::kUInt16, {3}, 64, 0, 60000)}, {}, 21);
  compare_on_cuda(Op("DequantizeLinear", 3).i("axis", 1).node,
                  {u16, random_tensor({4}, 65, 0.01f, 1.f), ints<uint16_t>(DType::kUInt16, {4}, 66, 0, 65535)},
                  {false, true, true}, 21);
}

TEST(CudaQuantizationDtypes, QLinearMatMulFloat16Scales) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (DType t : {DType::kUInt8, DType::kInt8}) {
    SCOPED_TRACE(dtype_name(t));
    auto q = [&](const Shape& s, uint32_t seed) {
      return t == DType::kUInt8 ? ints<uint8_t>(t, s, seed, 0, 255) : ints<int8_t>(t, s, seed, -128, 127);
    };
    compare_on_cuda(Op("QLinearMatMul", 8).node,
                    {q({2, 4}, 71), half_scalar(0.0066f), q({}, 72), q({4, 3}, 73), half_scalar(0.00705f), q({}, 74),
                     half_scalar(0.0107f), q({}, 75)},
                    {}, 21, 0, 0);
    compare_on_cuda(Op("QLinearMatMul", 8).node,  // 3-D, scales as constants
                    {q({2, 2, 4}, 76), half_scalar(0.02f), q({}, 77), q({2, 4, 3}, 78), half_scalar(0.011f), q({}, 79),
                     half_scalar(0.3f), q({}, 80)},
                    {false, true, false, false, true, false, true, false}, 21, 0, 0);
  }
}

// CastLike of a host value whose dtype shape inference leaves unknown (as an If's output inside an expanded function
// body: test_affine_grid_*_expanded): accepted at build, the dtype is known at run time.
OneNode castlike_of_unknown_dtype() {
  ir::Node shape = Op("Shape", 1, 1, "shape0").node;
  shape.inputs = {"x"};
  shape.outputs = {"s"};
  ir::Node cast = Op("CastLike", 2, 1, "castlike0").node;
  cast.inputs = {"s", "x"};
  cast.outputs = {"y"};
  OneNode net(shape, {random_tensor({2, 3, 5}, 81)}, {}, 19);
  net.g.nodes.push_back(cast);
  net.g.outputs = {"y"};
  passes::infer_shapes(net.g);
  net.g.types.erase("s");
  return net;
}

TEST(CudaCastLike, CastLikeOfUnknownDtype) {
  KILNRT_SKIP_WITHOUT_GPU();
  OneNode net = castlike_of_unknown_dtype();
  const auto got = run_cuda(net.g, net.feeds);
  const Tensor& y = got.at("y");
  ASSERT_EQ(y.dtype(), DType::kFloat32);
  ASSERT_EQ(y.shape(), Shape({3}));
  EXPECT_EQ(y.data<float>()[0], 2.f);
  EXPECT_EQ(y.data<float>()[1], 3.f);
  EXPECT_EQ(y.data<float>()[2], 5.f);
  expect_cuda_placement(net.g);
}

// ---- MaxPool: Indices and 8-bit ------------------------------------------------------------------------------------
TEST(CudaMaxPool, MaxPoolIndices) {
  KILNRT_SKIP_WITHOUT_GPU();
  Tensor x = random_tensor({2, 3, 7, 6}, 91, -5.f, 5.f);
  x.data<float>()[10] = std::numeric_limits<float>::quiet_NaN();  // NaN propagates with its index
  for (int64_t order : {0, 1}) {
    SCOPED_TRACE("storage_order " + std::to_string(order));
    compare_on_cuda(
        Op("MaxPool", 1, 2).ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).i("storage_order", order).node, {x},
        {}, 12, 0, 0);
    compare_on_cuda(Op("MaxPool", 1, 2)
                        .ints("kernel_shape", {3, 3})
                        .ints("strides", {2, 1})
                        .ints("pads", {1, 1, 1, 1})
                        .i("storage_order", order)
                        .node,
                    {x}, {}, 12, 0, 0);
    compare_on_cuda(Op("MaxPool", 1, 2)
                        .ints("kernel_shape", {2, 3})
                        .ints("dilations", {2, 1})
                        .i("ceil_mode", 1)
                        .ints("strides", {2, 2})
                        .i("storage_order", order)
                        .node,
                    {x}, {}, 12, 0, 0);
    compare_on_cuda(
        Op("MaxPool", 1, 2).ints("kernel_shape", {3, 3}).s("auto_pad", "SAME_UPPER").i("storage_order", order).node,
        {x}, {}, 12, 0, 0);
    compare_on_cuda(Op("MaxPool", 1, 2)
                        .ints("kernel_shape", {2, 2, 2})
                        .ints("pads", {0, 1, 0, 1, 0, 1})
                        .i("storage_order", order)
                        .node,
                    {random_tensor({1, 2, 4, 5, 3}, 92)}, {}, 12, 0, 0);
  }
  compare_on_cuda(Op("MaxPool", 1, 2).ints("kernel_shape", {3}).ints("strides", {2}).node,
                  {random_tensor({2, 2, 9}, 93)}, {}, 12, 0, 0);
  compare16_on_cuda(Op("MaxPool", 1, 2).ints("kernel_shape", {2, 2}).ints("strides", {1, 1}).node,
                    {random_tensor({1, 2, 5, 5}, 94)}, {}, 12, 1.0);
}

TEST(CudaMaxPool, MaxPool8Bit) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor u = ints<uint8_t>(DType::kUInt8, {1, 3, 6, 7}, 101, 0, 255);
  const Tensor s = ints<int8_t>(DType::kInt8, {2, 2, 5, 5}, 102, -128, 127);
  for (const Tensor& x : {u, s}) {
    SCOPED_TRACE(dtype_name(x.dtype()));
    compare_on_cuda(Op("MaxPool", 1).ints("kernel_shape", {5, 5}).ints("pads", {2, 2, 2, 2}).node, {x}, {}, 12, 0, 0);
    compare_on_cuda(Op("MaxPool", 1).ints("kernel_shape", {2, 2}).ints("strides", {2, 2}).i("ceil_mode", 1).node, {x},
                    {}, 12, 0, 0);
    compare_on_cuda(Op("MaxPool", 1, 2).ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).i("storage_order", 1).node,
                    {x}, {}, 12, 0, 0);
  }
}

// ---- without a GPU: the support check accepts every graph above
// ------------------------------------------------------
TEST(CudaOpVariantsSupport, SupportCheckAccepts) {
  const Tensor x = random_tensor({2, 3, 4, 5}, 111), c3 = random_tensor({3}, 112, 0.5f, 1.f);
  const Tensor none;
  std::vector<OneNode> nets;
  {
    Op a("Adam", 6, 3);
    a.node.domain = kTraining;
    nets.emplace_back(a.node, std::vector<Tensor>{f32({0.1f}, {}), i64({1}, {}), x, x, x, x}, std::vector<bool>{}, 1);
    Op m("Momentum", 5, 2);
    m.node.domain = kTraining;
    m.f("alpha", 0.9f).f("beta", 0.1f).f("norm_coefficient", 0.f).s("mode", "standard");
    nets.emplace_back(m.node, std::vector<Tensor>{f32({0.1f}, {}), i64({1}, {}), x, x, x}, std::vector<bool>{}, 1);
    ir::Node ag = training_node("Adagrad", 5, 2);
    nets.emplace_back(ag, std::vector<Tensor>{f32({0.1f}, {}), i64({1}, {}), x, x, x}, std::vector<bool>{}, 1);
  }
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    nets.emplace_back(Op(op, 1).node, std::vector<Tensor>{i64({10}, {})}, std::vector<bool>{false}, 17);
  nets.emplace_back(
      Op("MelWeightMatrix", 5).node,
      std::vector<Tensor>{i64({8}, {}), i64({64}, {}), i64({16000}, {}), f32({0.f}, {}), f32({8000.f}, {})},
      std::vector<bool>{}, 17);
  nets.emplace_back(Op("DFT", 3).omit_input(1).node,
                    std::vector<Tensor>{random_tensor({1, 5, 6, 1}, 113), none, i64({1}, {})}, std::vector<bool>{}, 20);
  nets.emplace_back(Op("Dropout", 3, 2).node, std::vector<Tensor>{x, f32({0.f}, {}), boolean(true)},
                    std::vector<bool>{}, 13);
  nets.emplace_back(Op("BatchNormalization", 5, 3).i("training_mode", 1).node, std::vector<Tensor>{x, c3, c3, c3, c3},
                    std::vector<bool>{}, 15);
  nets.emplace_back(Op("DequantizeLinear", 2).node,
                    std::vector<Tensor>{ints<int16_t>(DType::kInt16, {4}, 114, -9, 9), f32({0.5f}, {})},
                    std::vector<bool>{}, 21);
  const Tensor q = ints<uint8_t>(DType::kUInt8, {2, 2}, 115, 0, 255), z = ints<uint8_t>(DType::kUInt8, {}, 116, 0, 255);
  nets.emplace_back(Op("QLinearMatMul", 8).node,
                    std::vector<Tensor>{q, half_scalar(0.1f), z, q, half_scalar(0.1f), z, half_scalar(0.2f), z},
                    std::vector<bool>{}, 21);
  nets.emplace_back(Op("MaxPool", 1, 2).ints("kernel_shape", {2, 2}).i("storage_order", 1).node, std::vector<Tensor>{x},
                    std::vector<bool>{}, 12);
  nets.emplace_back(Op("MaxPool", 1).ints("kernel_shape", {2, 2}).node,
                    std::vector<Tensor>{ints<uint8_t>(DType::kUInt8, {1, 1, 4, 4}, 117, 0, 255)}, std::vector<bool>{},
                    12);
  nets.push_back(castlike_of_unknown_dtype());
  for (const OneNode& net : nets) {
    SCOPED_TRACE(net.g.nodes.back().op_type);
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(net.g));
  }
}

// ... and still refuses what no layer runs, naming the node.
TEST(CudaOpVariantsSupport, SupportCheckRefuses) {
  const Tensor xi = ints<int32_t>(DType::kInt32, {1, 1, 4, 4}, 118, -9, 9);
  OneNode pool(Op("MaxPool", 1, 2).ints("kernel_shape", {2, 2}).node, {xi}, {}, 12);  // Indices of an int32 input
  try {
    backends::cuda::CudaPlan::check_supported(pool.g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
  Op bad("Adam", 6, 3);  // an optimizer outside its domain is not a training op
  OneNode other(Op("Relu", 1).node, {f32({1.f}, {1})}, {}, 17);
  EXPECT_NE(backends::cuda::cuda_supports(bad.node, other.g), "");
}

}  // namespace
}  // namespace kilnrt::cudatest
