// CUDA vs CPU-reference comparisons for the float64 branches of the CUDA Softmax / LogSoftmax layer
// (ops/nn/softmax/cuda) and MatMul layer (ops/nn/gemm/cuda), on softmax_f64.cu / matmul_f64.cu (the onnx 1.23 expanded
// Attention / FlexAttention cases run these nodes in double). The inputs are random doubles with full 53-bit
// mantissas, so a float32 path could not meet the 1e-12 tolerances. Every layer must be placed on CUDA with its
// float64 tactic. GPU tests skip with a message without a GPU; the host tests (support check) run everywhere.
#include <limits>
#include <random>

#include "ops/cuda/cuda_layer.h"
#include "cuda_backend_test_util.h"
#include "ops/common/double_io.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
namespace kilnrt::cudatest {
namespace {

constexpr double kTol = 1e-12;

// Uniform doubles in [lo, hi] (not rounded to float).
Tensor doubles(const Shape& s, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  Tensor t = Tensor::empty(DType::kFloat64, s);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = dist(rng);
  return t;
}

// Same dtype and shape, NaN where the reference has NaN, else |got - want| <= kTol * (1 + |want|).
void expect_close(const Tensor& got, const Tensor& want, const ir::Node& node) {
  ASSERT_EQ(got.dtype(), DType::kFloat64);
  ASSERT_EQ(want.dtype(), DType::kFloat64);
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<double> a = ops::tensor_to_doubles(got, node), b = ops::tensor_to_doubles(want, node);
  int failures = 0;
  for (size_t i = 0; i < b.size() && failures < 5; ++i) {
    const bool close = a[i] == b[i] || std::fabs(a[i] - b[i]) <= kTol * (1 + std::fabs(b[i]));
    const bool ok = std::isnan(b[i]) ? std::isnan(a[i]) : close;
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "element " << i << ": got " << a[i] << ", want " << b[i] << " (diff " << a[i] - b[i] << ")";
    }
  }
}

// Runs the node on the CPU reference and on CUDA, compares the output and checks the float64 layer runs it.
void compare(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset, const std::string& tactic) {
  OneNode one(node, inputs, {}, opset);
  const auto want = run_cpu(one.g, one.feeds);
  const auto got = run_cuda(one.g, one.feeds);
  ASSERT_EQ(want.size(), 1u);
  expect_close(got.at(one.g.outputs[0]), want.begin()->second, node);
  kilnrt::cuda::ContextGuard guard(0);
  backends::cuda::CudaPlan plan(one.g, 0);
  for (const auto& [name, t] : plan.tactics()) EXPECT_EQ(t, "cuda:" + tactic) << name;
}

TEST(CudaFloat64, SoftmaxAndLogSoftmaxMatchTheCpuReference) {
  KILNRT_SKIP_WITHOUT_GPU();
  struct Case {
    Shape shape;
    int64_t axis, opset;
  };
  // Rows (axis -1: one block per row, short and longer than the block), columns (axis 1 with trailing dims), and
  // opset 11's flattening from axis 1 on.
  const Case cases[] = {{{3, 7}, -1, 13},     {{4, 1500}, -1, 13}, {{1, 1}, -1, 13},  {{2, 5, 3}, 1, 13},
                        {{2, 300, 4}, 1, 13}, {{6, 2}, 1, 13},     {{2, 3, 4}, 1, 11}};
  uint32_t seed = 1;
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(op) + " " + shape_to_string(c.shape) + " axis " + std::to_string(c.axis) + " opset " +
                   std::to_string(c.opset));
      compare(Op(op, 1).i("axis", c.axis).node, {doubles(c.shape, seed++, -30.0, 30.0)}, c.opset, "kernel:softmax");
    }
}

// Masked entries (-inf) get probability 0; a row of only -inf, or holding NaN, is NaN as on the CPU reference; values
// far beyond float32's exp range are fine once the maximum is subtracted.
TEST(CudaFloat64, SoftmaxMaskedAndSpecialRows) {
  KILNRT_SKIP_WITHOUT_GPU();
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = Tensor::from_vector(std::vector<double>{0.5, -inf, 1.25, -inf,   //
                                                           -inf, -inf, -inf, -inf,  //
                                                           1.0, nan, 2.0, 3.0,      //
                                                           900.0, 899.0, -900.0, 901.5},
                                       DType::kFloat64, {4, 4});
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (int64_t axis : {int64_t{-1}, int64_t{0}}) {
      SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis));
      compare(Op(op, 1).i("axis", axis).node, {x}, 13, "kernel:softmax");
    }
}

TEST(CudaFloat64, MatMulMatchesTheCpuReference) {
  KILNRT_SKIP_WITHOUT_GPU();
  // 2-D (one tile, several partial tiles), batched with every broadcasting form, 1-D operands, K = 1.
  const std::vector<std::pair<Shape, Shape>> shapes = {{{5, 7}, {7, 3}},
                                                       {{70, 33}, {33, 129}},
                                                       {{3, 4, 6}, {3, 6, 5}},
                                                       {{3, 4, 6}, {6, 5}},
                                                       {{4, 6}, {2, 6, 5}},
                                                       {{2, 1, 4, 6}, {3, 6, 5}},
                                                       {{6}, {6, 4}},
                                                       {{4, 6}, {6}},
                                                       {{2, 4, 6}, {6}},
                                                       {{6}, {3, 6, 2}},
                                                       {{9}, {9}},
                                                       {{65, 1}, {1, 70}},
                                                       {{2, 3, 1, 7, 8}, {1, 3, 4, 8, 2}}};
  uint32_t seed = 100;
  for (const auto& [sa, sb] : shapes) {
    SCOPED_TRACE(shape_to_string(sa) + " x " + shape_to_string(sb));
    compare(Op("MatMul", 2).node, {doubles(sa, seed, -2.0, 2.0), doubles(sb, seed + 1, -2.0, 2.0)}, 13,
            "kernel:matmul-f64");
    seed += 2;
  }
}

// ---- support checks (run everywhere)
// ---------------------------------------------------------------------------------

std::vector<OneNode> float64_graphs() {
  std::vector<OneNode> nets;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    nets.emplace_back(Op(op, 1).node, std::vector<Tensor>{doubles({2, 3}, 1)}, std::vector<bool>{}, 13);
    nets.emplace_back(Op(op, 1).i("axis", 1).node, std::vector<Tensor>{doubles({2, 3, 4}, 2)}, std::vector<bool>{}, 13);
    nets.emplace_back(Op(op, 1).node, std::vector<Tensor>{doubles({2, 3, 4}, 3)}, std::vector<bool>{}, 11);
  }
  nets.emplace_back(Op("MatMul", 2).node, std::vector<Tensor>{doubles({2, 1, 4, 6}, 4), doubles({3, 6, 5}, 5)},
                    std::vector<bool>{}, 13);
  nets.emplace_back(Op("MatMul", 2).node, std::vector<Tensor>{doubles({6}, 6), doubles({6, 4}, 7)}, std::vector<bool>{},
                    13);
  return nets;
}

TEST(CudaFloat64, SupportCheckAcceptsFloat64Graphs) {
  for (const OneNode& net : float64_graphs()) {
    SCOPED_TRACE(net.g.nodes.back().op_type);
    EXPECT_EQ(backends::cuda::cuda_supports(net.g.nodes.back(), net.g), "");
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(net.g));
    const auto want = run_cpu(net.g, net.feeds);  // the reference the GPU tests compare with runs them too
    ASSERT_EQ(want.size(), 1u);
    EXPECT_EQ(want.begin()->second.dtype(), DType::kFloat64);
  }
}

// A float64 MatMul whose B or Y is not float64 (as a malformed model would declare it) is refused, naming the reason;
// float64 Gemm still is (no float64 layer).
TEST(CudaFloat64, SupportCheckRefusesMixedDtypes) {
  OneNode mm(Op("MatMul", 2).node, {doubles({2, 3}, 8), doubles({3, 4}, 9)}, {}, 13);
  mm.g.types["in1"].dtype = DType::kFloat32;
  EXPECT_NE(backends::cuda::cuda_supports(mm.g.nodes[0], mm.g).find("float64"), std::string::npos);
  OneNode out(Op("MatMul", 2).node, {doubles({2, 3}, 10), doubles({3, 4}, 11)}, {}, 13);
  out.g.types["out0"].dtype = DType::kFloat32;
  EXPECT_NE(backends::cuda::cuda_supports(out.g.nodes[0], out.g).find("float64"), std::string::npos);
  OneNode gemm(Op("Gemm", 2).node, {doubles({2, 3}, 12), doubles({3, 4}, 13)}, {}, 13);
  EXPECT_NE(backends::cuda::cuda_supports(gemm.g.nodes[0], gemm.g).find("float64"), std::string::npos);
}

}  // namespace
}  // namespace kilnrt::cudatest
