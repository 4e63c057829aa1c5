// Per-op CUDA vs CPU-reference comparisons for every op the CUDA backend implements (random inputs, broadcasting,
// NaN propagation for elementwise ops). GPU tests skip cleanly without a GPU.
#include <limits>

#include "cuda_backend_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

Tensor with_nans(Tensor t) {
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); i += 7) p[i] = std::numeric_limits<float>::quiet_NaN();
  return t;
}
Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }
Tensor f32(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, DType::kFloat32, s); }

TEST(CudaBackendOps, UnaryActivationsWithNaN) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = with_nans(random_tensor({3, 5, 7}, 1, -4.f, 4.f));
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "HardSwish", "Erf", "Exp", "Neg", "Abs", "Softplus", "Floor",
                         "Ceil", "Sin", "Cos", "Softsign", "Elu", "Selu", "Celu", "ThresholdedRelu"}) {
    SCOPED_TRACE(op);
    compare_node(Op(op, 1).node, {x});
  }
  compare_node(Op("HardSigmoid", 1).f("alpha", 0.3f).f("beta", 0.4f).node, {x});
  compare_node(Op("LeakyRelu", 1).f("alpha", 0.1f).node, {x});
  compare_node(Op("Sqrt", 1).node, {random_tensor({100}, 2, 0.f, 9.f)});
  compare_node(Op("Log", 1).node, {random_tensor({100}, 3, 0.1f, 9.f)});
  compare_node(Op("Reciprocal", 1).node, {random_tensor({100}, 4, 0.5f, 9.f)});
  compare_node(Op("Gelu", 1).node, {x}, {}, 20);
  compare_node(Op("Gelu", 1).s("approximate", "tanh").node, {x}, {}, 20);
  compare_node(Op("Clip", 3).node, {x, f32({-0.5f}, {}), f32({0.7f}, {})}, {false, true, true});
  // min > max: ONNX's min(max(x, min), max) gives max everywhere (test_clip_min_greater_than_max).
  compare_node(Op("Clip", 3).node, {x, f32({2.f}, {}), f32({1.f}, {})}, {false, true, true});
}

TEST(CudaBackendOps, BinaryBroadcastingAndNaN) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor a = with_nans(random_tensor({2, 3, 4, 5}, 5, -3.f, 3.f));
  const Tensor b = random_tensor({3, 1, 5}, 6, 0.5f, 3.f);
  const Tensor c = random_tensor({1}, 7, 0.5f, 2.f);
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    SCOPED_TRACE(op);
    compare_node(Op(op, 2).node, {a, b});
    compare_node(Op(op, 2).node, {b, a});
    compare_node(Op(op, 2).node, {a, c}, {false, true});
    compare_node(Op(op, 2).node, {a, random_tensor({2, 3, 4, 5}, 8)});
  }
  compare_node(Op("Pow", 2).node, {random_tensor({4, 5}, 9, 0.1f, 3.f), random_tensor({5}, 10, -2.f, 2.f)});
  compare_node(Op("Max", 3).node, {a, b, c});
  compare_node(Op("Mod", 2).i("fmod", 1).node, {a, b});
  const Tensor ia = i64({1, 5, -3, 7, 0, 2}, {2, 3}), ib = i64({5, 1, -3}, {3});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    SCOPED_TRACE(op);
    compare_node(Op(op, 2).node, {ia, ib});
  }
  compare_node(Op("Equal", 2).node, {a, b});
  compare_node(Op("Less", 2).node, {a, b});
}

TEST(CudaBackendOps, WhereAndCast) {
  KILNRT_SKIP_WITHOUT_GPU();
  Tensor cond = Tensor::empty(DType::kBool, {3, 1, 4});
  for (int i = 0; i < 12; ++i) cond.data<uint8_t>()[i] = (i * 5) % 3 == 0;
  compare_node(Op("Where", 3).node, {cond, random_tensor({2, 3, 1, 4}, 11), random_tensor({4}, 12)});
  compare_node(Op("Where", 3).node, {cond, i64({1, 2, 3, 4}, {4}), i64({-1}, {1})});
  const Tensor x = random_tensor({2, 6}, 13, -50.f, 50.f);
  compare_node(Op("Cast", 1).i("to", int64_t(DType::kInt64)).node, {x});
  compare_node(Op("Cast", 1).i("to", int64_t(DType::kBool)).node, {x});
  compare_node(Op("Cast", 1).i("to", int64_t(DType::kFloat32)).node, {i64({1, -2, 3, 1LL << 40}, {4})});
  compare_node(Op("Cast", 1).i("to", int64_t(DType::kInt32)).node, {i64({1, -2, 3, 4}, {4})});
}

TEST(CudaBackendOps, DataMovement) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 3, 4, 5}, 14);
  compare_node(Op("Transpose", 1).ints("perm", {0, 2, 3, 1}).node, {x});
  compare_node(Op("Transpose", 1).node, {x});
  compare_node(Op("Concat", 3).i("axis", 1).node,
               {x, random_tensor({2, 1, 4, 5}, 15), random_tensor({2, 2, 4, 5}, 16)});
  compare_node(Op("Concat", 2).i("axis", -1).node, {i64({1, 2, 3, 4}, {2, 2}), i64({5, 6}, {2, 1})});
  compare_node(Op("Split", 2, 3).i("axis", 2).node, {x, i64({1, 2, 1}, {3})}, {false, true});
  compare_node(Op("Slice", 5).node, {x, i64({-1, 1}, {2}), i64({-100, 4}, {2}), i64({3, 1}, {2}), i64({-2, 2}, {2})},
               {false, true, true, true, true});
  compare_node(Op("Slice", 3).node, {x, i64({1}, {1}), i64({3}, {1})}, {false, true, true});
  compare_node(Op("Gather", 2).i("axis", 1).node, {x, i64({2, 0, -1, 1}, {2, 2})});
  compare_node(Op("Gather", 2).i("axis", 0).node, {x, i64({1}, {})}, {false, true});
  compare_node(Op("Expand", 2).node, {random_tensor({3, 1, 5}, 17), i64({2, 3, 4, 5}, {4})}, {false, true});
  compare_node(Op("Reshape", 2).node, {x, i64({6, -1}, {2})}, {false, true});
  compare_node(Op("Unsqueeze", 2).node, {x, i64({0, -1}, {2})}, {false, true});
  compare_node(Op("Flatten", 1).i("axis", 2).node, {x});
}

TEST(CudaBackendOps, MatMulBatchingAndGemm) {
  KILNRT_SKIP_WITHOUT_GPU();
  compare_node(Op("MatMul", 2).node, {random_tensor({2, 3, 4, 5}, 20), random_tensor({5, 6}, 21)}, {false, true});
  compare_node(Op("MatMul", 2).node, {random_tensor({3, 4, 5}, 22), random_tensor({3, 5, 6}, 23)});
  compare_node(Op("MatMul", 2).node, {random_tensor({4, 5}, 24), random_tensor({2, 5, 6}, 25)});
  compare_node(Op("MatMul", 2).node, {random_tensor({2, 1, 4, 5}, 26), random_tensor({3, 5, 6}, 27)});
  compare_node(Op("MatMul", 2).node, {random_tensor({5}, 28), random_tensor({5, 6}, 29)});
  compare_node(Op("MatMul", 2).node, {random_tensor({3, 4, 5}, 30), random_tensor({5}, 31)});
  compare_node(Op("MatMul", 2).node, {random_tensor({37, 129}, 32), random_tensor({129, 65}, 33)});
  const Tensor a = random_tensor({7, 9}, 34), at = random_tensor({9, 7}, 35);
  const Tensor b = random_tensor({9, 11}, 36), bt = random_tensor({11, 9}, 37);
  compare_node(Op("Gemm", 3).node, {a, b, random_tensor({11}, 38)}, {false, true, true});
  compare_node(Op("Gemm", 3).i("transA", 1).i("transB", 1).f("alpha", 0.5f).f("beta", 2.f).node,
               {at, bt, random_tensor({7, 1}, 39)}, {false, true, true});
  compare_node(Op("Gemm", 3).i("transB", 1).node, {a, bt, random_tensor({7, 11}, 40)});
  compare_node(Op("Gemm", 2).i("transA", 1).node, {at, b});
}

TEST(CudaBackendOps, MatMulAndGemmInReducedPrecision) {
  KILNRT_SKIP_WITHOUT_GPU();
  // 16-bit operands (weights converted at load, activations on the fly), float32 accumulation and output; TF32.
  // Tolerances scale with the operand's mantissa: fp16 / tf32 10 bits, bf16 7 bits (K = 129, |x| <= 1).
  for (const char* p : {"fp16", "bf16", "tf32"}) {
    SCOPED_TRACE(p);
    const double tol = std::string(p) == "bf16" ? 0.1 : 0.02;
    compare_node(Op("MatMul", 2).s("kilnrt_precision", p).node,
                 {random_tensor({37, 129}, 32), random_tensor({129, 65}, 33)}, {false, true}, 17, tol, tol);
    compare_node(Op("MatMul", 2).s("kilnrt_precision", p).node,
                 {random_tensor({3, 4, 50}, 30), random_tensor({3, 50, 6}, 31)}, {}, 17, tol, tol);
    compare_node(Op("MatMul", 2).s("kilnrt_precision", p).node,
                 {random_tensor({2, 1, 4, 50}, 26), random_tensor({3, 50, 6}, 27)}, {}, 17, tol, tol);
    compare_node(Op("Gemm", 3).s("kilnrt_precision", p).i("transB", 1).node,
                 {random_tensor({7, 90}, 34), random_tensor({11, 90}, 37), random_tensor({11}, 38)},
                 {false, true, true}, 17, tol, tol);
    // NaN in an operand propagates to every output it reaches.
    compare_node(Op("MatMul", 2).s("kilnrt_precision", p).node,
                 {with_nans(random_tensor({9, 16}, 40)), random_tensor({16, 5}, 41)}, {false, true}, 17, tol, tol);
  }
}

TEST(CudaBackendOps, ConvolutionTactics) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 4, 11, 9}, 41);
  auto conv = [&](Op op, const Tensor& w, bool bias) {
    std::vector<Tensor> ins = {x, w};
    if (bias) ins.push_back(random_tensor({w.shape()[0]}, 42));
    compare_node(op.node, ins, {false, true, true}, 17, 1e-4, 1e-4);
  };
  conv(Op("Conv", 3).ints("pads", {1, 1, 1, 1}), random_tensor({6, 4, 3, 3}, 43), true);
  conv(Op("Conv", 3).ints("strides", {2, 2}).ints("dilations", {2, 1}).ints("pads", {2, 1, 2, 1}),
       random_tensor({8, 4, 3, 3}, 44), true);
  conv(Op("Conv", 3).i("group", 2).ints("strides", {2, 1}), random_tensor({6, 2, 3, 1}, 45), true);
  conv(Op("Conv", 3).i("group", 4).ints("pads", {2, 2, 2, 2}), random_tensor({4, 1, 5, 5}, 46), true);  // depthwise
  conv(Op("Conv", 2).ints("pads", {0, 1, 1, 0}), random_tensor({3, 4, 2, 2}, 47), false);  // asymmetric: direct
  conv(Op("Conv", 2).s("auto_pad", "SAME_UPPER").ints("strides", {2, 2}), random_tensor({3, 4, 3, 3}, 48), false);
  compare_node(Op("Conv", 3).ints("pads", {1, 1}).node,
               {random_tensor({2, 3, 17}, 49), random_tensor({5, 3, 3}, 50), random_tensor({5}, 51)},
               {false, true, true}, 17, 1e-4, 1e-4);
}

TEST(CudaBackendOps, PoolingReductionsNormalization) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = with_nans(random_tensor({2, 3, 9, 8}, 52));
  const Tensor y = random_tensor({2, 3, 9, 8}, 53);
  compare_node(Op("MaxPool", 1).ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1}).node,
               {x});
  compare_node(Op("MaxPool", 1).ints("kernel_shape", {2, 3}).i("ceil_mode", 1).ints("strides", {2, 2}).node, {y});
  compare_node(Op("AveragePool", 1).ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 1, 1}).node, {y});
  compare_node(Op("AveragePool", 1)
                   .ints("kernel_shape", {3, 3})
                   .ints("pads", {1, 1, 1, 1})
                   .i("count_include_pad", 1)
                   .i("ceil_mode", 1)
                   .ints("strides", {2, 2})
                   .node,
               {y});
  compare_node(Op("GlobalAveragePool", 1).node, {y});
  compare_node(Op("GlobalMaxPool", 1).node, {x});
  compare_node(Op("ReduceMean", 1).ints("axes", {2, 3}).i("keepdims", 1).node, {y});
  compare_node(Op("ReduceMean", 1).ints("axes", {0, 2}).i("keepdims", 0).node, {y});
  compare_node(Op("ReduceMax", 1).ints("axes", {1}).node, {x});
  compare_node(Op("ReduceSum", 2).node, {y, i64({-1}, {1})}, {false, true});
  compare_node(Op("ReduceSum", 1).node, {y});
  compare_node(Op("ReduceL2", 1).ints("axes", {3}).node, {y}, {}, 17);
  compare_node(Op("Softmax", 1).i("axis", 1).node, {y});
  compare_node(Op("Softmax", 1).node, {random_tensor({4, 1000}, 54, -10.f, 10.f)});
  compare_node(Op("LogSoftmax", 1).node, {y});
  compare_node(Op("Softmax", 1).i("axis", 1).node, {y}, {}, 11);
  compare_node(Op("LayerNormalization", 3).i("axis", -1).f("epsilon", 1e-5f).node,
               {random_tensor({2, 16, 64}, 55, -3.f, 3.f), random_tensor({64}, 56), random_tensor({64}, 57)},
               {false, true, true});
  compare_node(Op("LayerNormalization", 2).i("axis", 1).node, {y, random_tensor({3, 9, 8}, 58)}, {false, true});
  compare_node(
      Op("BatchNormalization", 5).node,
      {y, random_tensor({3}, 59), random_tensor({3}, 60), random_tensor({3}, 61), random_tensor({3}, 62, 0.5f, 2.f)},
      {false, true, true, true, true});
}

TEST(CudaBackendOps, UnsupportedNodeIsANamedError) {
  // Placement check only: no GPU needed.
  ir::Node n = Op("NoSuchOp", 1, 1, "nz").node;
  ir::Graph g;
  g.opsets[""] = 17;
  g.nodes.push_back(n);
  g.inputs.push_back("in0");
  g.types["in0"] = ops::nn::testing::ttype(DType::kFloat32, {4});
  g.outputs.push_back("out0");
  try {
    backends::cuda::CudaPlan::check_supported(g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("nz"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
