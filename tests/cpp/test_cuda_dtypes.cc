// CUDA dtype coverage: broadcasting arithmetic / comparisons / Max / Min / Mod / Pow on the narrow and
// unsigned integers and float64, Pow with mixed base / exponent dtypes, Clip on integers — each against the CPU
// reference, exact for integers. GPU tests skip with a message without a GPU.
#include <cstring>
#include <limits>
#include <type_traits>

#include "cuda_backend_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
namespace kilnrt::cudatest {
namespace {

// Values 0..n-1 mapped through a pattern with negatives (signed types), large integers (a third of the type's
// range, to exercise wrapping) and never a zero when `nonzero` (divisors). `small`: -1..3 (exponents: 1..3).
template <typename T>
Tensor pattern(DType dt, const Shape& s, int seed, bool nonzero, bool small = false) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = (i * 7 + seed * 13) % 23 - (std::is_signed<T>::value ? 11 : 0);
    if (!small && !std::is_floating_point<T>::value && i % 5 == 3)
      k = static_cast<int64_t>(std::numeric_limits<T>::max() / 3) + i;  // wraps on Add / Mul
    if (small) k = (i + seed) % 4 + (std::is_signed<T>::value && !nonzero && i % 3 == 1 ? -1 : 0);
    if (nonzero && k == 0) k = 3;
    v[static_cast<size_t>(i)] = std::is_floating_point<T>::value ? static_cast<T>(k) * T(0.75) : static_cast<T>(k);
  }
  return Tensor::from_vector(v, dt, s);
}

// Exact byte-for-byte comparison for integers / bool, relative 1e-12 for float64, 1e-5 for float32.
void expect_same(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  const size_t es = dtype_size(want.dtype());
  int failures = 0;
  for (int64_t i = 0; i < want.numel() && failures < 5; ++i) {
    const char* a = static_cast<const char*>(got.raw()) + i * es;
    const char* b = static_cast<const char*>(want.raw()) + i * es;
    bool ok;
    if (want.dtype() == DType::kFloat64 || want.dtype() == DType::kFloat32) {
      double x, y;
      if (want.dtype() == DType::kFloat64) {
        std::memcpy(&x, a, 8), std::memcpy(&y, b, 8);
      } else {
        float fx, fy;
        std::memcpy(&fx, a, 4), std::memcpy(&fy, b, 4);
        x = fx, y = fy;
      }
      const double tol = want.dtype() == DType::kFloat64 ? 1e-12 : 1e-5;
      ok = std::isnan(y) ? std::isnan(x) : (x == y || std::fabs(x - y) <= tol * (1 + std::fabs(y)));
    } else {
      ok = std::memcmp(a, b, es) == 0;
    }
    if (!ok) ADD_FAILURE() << "element " << i << " differs", ++failures;
  }
}

// Host-only mode (no GPU needed): the CPU reference runs and the CUDA backend accepts the node; the GPU tests then
// compare the outputs.
bool g_host_only = false;

Tensor f64(const std::vector<double>& v, const Shape& s) { return Tensor::from_vector(v, DType::kFloat64, s); }

void compare(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset = 17,
             const std::vector<bool>& constant = {}) {
  OneNode one(node, inputs, constant, opset);
  const auto want = run_cpu(one.g, one.feeds);
  EXPECT_EQ(backends::cuda::cuda_supports(one.g.nodes[0], one.g), "") << node.op_type;
  if (g_host_only) return;
  const auto got = run_cuda(one.g, one.feeds);
  for (const auto& [name, t] : want) expect_same(got.at(name), t);
}

template <typename T>
void binary_ops_for(DType dt) {
  SCOPED_TRACE(dtype_name(dt));
  const Tensor a = pattern<T>(dt, {2, 3, 5}, 1, false), b = pattern<T>(dt, {3, 1}, 2, true);
  for (const char* op :
       {"Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    SCOPED_TRACE(op);
    compare(Op(op, 2).node, {a, b});
    compare(Op(op, 2).node, {b, pattern<T>(dt, {3, 3}, 4, true)});
  }
  for (int fmod : {0, 1}) {
    if (!fmod && std::is_floating_point<T>::value) continue;  // float Mod needs fmod=1 in ONNX
    SCOPED_TRACE(fmod ? "Mod fmod=1" : "Mod fmod=0");
    compare(Op("Mod", 2).i("fmod", fmod).node, {a, b});
  }
  compare(Op("Max", 3).node, {a, b, pattern<T>(dt, {5}, 3, false)});
  compare(Op("Pow", 2).node,
          {pattern<T>(dt, {4, 3}, 5, false, true), pattern<T>(dt, {3}, 6, true, true)});  // exponents 1..3
}

void binary_all() {
  binary_ops_for<int8_t>(DType::kInt8);
  binary_ops_for<uint8_t>(DType::kUInt8);
  binary_ops_for<int16_t>(DType::kInt16);
  binary_ops_for<uint16_t>(DType::kUInt16);
  binary_ops_for<uint32_t>(DType::kUInt32);
  binary_ops_for<uint64_t>(DType::kUInt64);
  binary_ops_for<int32_t>(DType::kInt32);
  binary_ops_for<int64_t>(DType::kInt64);
  binary_ops_for<double>(DType::kFloat64);
}

void float_mod() {
  const Tensor a = Tensor::from_vector(std::vector<float>{-4.5f, 7.f, -3.f, 5.25f, 0.f, -1.f}, DType::kFloat32, {6});
  const Tensor b = Tensor::from_vector(std::vector<float>{2.f, -3.f, -2.f, 2.5f, 3.f, 4.f}, DType::kFloat32, {6});
  compare(Op("Mod", 2).i("fmod", 1).node, {a, b});
  const Tensor ad = pattern<double>(DType::kFloat64, {2, 6}, 3, false),
               bd = pattern<double>(DType::kFloat64, {6}, 4, true);
  compare(Op("Mod", 2).i("fmod", 1).node, {ad, bd});
}

void pow_mixed() {
  const Tensor f = Tensor::from_vector(std::vector<float>{1.5f, 2.f, -3.f, 0.5f, 4.f, 1.f}, DType::kFloat32, {2, 3});
  const Tensor i32 = Tensor::from_vector(std::vector<int32_t>{1, 2, 3, -1, 0, 2}, DType::kInt32, {2, 3});
  const Tensor i64 = Tensor::from_vector(std::vector<int64_t>{2, 3, 1}, DType::kInt64, {3});
  const Tensor u64 = Tensor::from_vector(std::vector<uint64_t>{2, 3, 1}, DType::kUInt64, {3});
  const Tensor fe = Tensor::from_vector(std::vector<float>{2.f, 0.5f, 3.f}, DType::kFloat32, {3});
  compare(Op("Pow", 2).node, {f, i32});
  compare(Op("Pow", 2).node, {f, i64});
  compare(Op("Pow", 2).node, {f, u64});
  compare(Op("Pow", 2).node, {Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4, 8, 5}, DType::kInt32, {2, 3}), fe});
  compare(Op("Pow", 2).node, {Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4, 8, 5}, DType::kInt64, {2, 3}), fe});
}

void clip_int() {
  const Tensor x = pattern<int8_t>(DType::kInt8, {3, 4}, 1, false);
  const Tensor lo = Tensor::from_vector(std::vector<int8_t>{-3}, DType::kInt8, {});
  const Tensor hi = Tensor::from_vector(std::vector<int8_t>{5}, DType::kInt8, {});
  compare(Op("Clip", 3).node, {x, lo, hi}, 13);
  compare(Op("Clip", 3).omit_input(1).node, {x, Tensor(), hi}, 13);
  compare(Op("Clip", 2).node, {x, lo}, 13);
  compare(Op("Clip", 1).node, {x}, 13);
  compare(Op("Clip", 3).node,
          {pattern<uint32_t>(DType::kUInt32, {7}, 2, false),
           Tensor::from_vector(std::vector<uint32_t>{2}, DType::kUInt32, {}),
           Tensor::from_vector(std::vector<uint32_t>{9}, DType::kUInt32, {})},
          13);
}

void float64_reductions_and_unary() {
  std::vector<double> v(60);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = 0.37 * double(i % 11) - 1.5 + (i % 7 == 2 ? 600.0 : 0.0);  // exp overflow
  const Tensor x = f64(v, {3, 4, 5});
  {  // the axes attribute is honoured (so the comparisons below reduce what they say)
    OneNode one(Op("ReduceSum", 1).ints("axes", {1}).node, {x}, {}, 11);
    EXPECT_EQ(run_cpu(one.g, one.feeds).begin()->second.shape(), (Shape{3, 1, 5}));
  }
  for (const char* op : {"ReduceLogSumExp", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2"}) {
    SCOPED_TRACE(op);
    compare(Op(op, 1).ints("axes", {1}).node, {x}, 11);  // opset 11: axes attribute everywhere
    compare(Op(op, 1).ints("axes", {2}).i("keepdims", 0).node, {x}, 11);
    compare(Op(op, 1).node, {x}, 11);
  }
  for (const char* op : {"Exp", "Log", "Sqrt", "Neg", "Abs", "Floor", "Tanh", "Sigmoid"}) {
    SCOPED_TRACE(op);
    compare(Op(op, 1).node, {f64({0.5, 1.25, 3.0, 7.5, 0.01, 2.0}, {2, 3})});
  }
}

// TopK on integers, many equal values (the lower index first), both directions, along a middle axis too.
void topk_int() {
  const Tensor k3 = Tensor::from_vector(std::vector<int64_t>{3}, DType::kInt64, {1});
  const Tensor same =
      Tensor::from_vector(std::vector<int64_t>{0, 0, 1, 1, 1, 0, 2, 2, 1, 1, 0, 0}, DType::kInt64, {3, 4});
  for (int largest : {0, 1}) {
    SCOPED_TRACE(largest ? "largest" : "smallest");
    compare(Op("TopK", 2, 2).i("largest", largest).node, {same, k3}, 11, {false, true});
    compare(Op("TopK", 2, 2).i("axis", 0).i("largest", largest).node,
            {same, Tensor::from_vector(std::vector<int64_t>{2}, DType::kInt64, {1})}, 11, {false, true});
    compare(
        Op("TopK", 2, 2).i("largest", largest).node,
        {Tensor::from_vector(std::vector<uint64_t>{0, ~0ull, 5, 5, 1ull << 63, 7, 7, 2}, DType::kUInt64, {2, 4}), k3},
        11, {false, true});
    compare(Op("TopK", 2, 2).i("largest", largest).node,
            {Tensor::from_vector(std::vector<int32_t>{-5, 3, 3, -5, 9, 0, 3, 3}, DType::kInt32, {2, 4}), k3}, 11,
            {false, true});
  }
}

// IsNaN / IsInf on float16 (bit patterns: NaN, +inf, -inf, 1, -2, 0), bfloat16 and float64.
void nan_inf_16_64() {
  const Tensor h =
      Tensor::from_vector(std::vector<uint16_t>{0x7E00, 0x7C00, 0xFC00, 0x3C00, 0xC000, 0}, DType::kFloat16, {2, 3});
  const Tensor bf =
      Tensor::from_vector(std::vector<uint16_t>{0x7FC0, 0x7F80, 0xFF80, 0x3F80, 0xC000, 0}, DType::kBFloat16, {6});
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor d = f64({std::nan(""), inf, -inf, 1.0, -2.0, 0.0}, {3, 2});
  for (const Tensor& x : {h, bf, d}) {
    SCOPED_TRACE(dtype_name(x.dtype()));
    compare(Op("IsNaN", 1).node, {x}, 20);
    compare(Op("IsInf", 1).node, {x}, 20);
    compare(Op("IsInf", 1).i("detect_negative", 0).node, {x}, 20);
    compare(Op("IsInf", 1).i("detect_positive", 0).node, {x}, 20);
  }
}

TEST(CudaDtypes, IsNaNIsInfOn16BitAndFloat64) {
  KILNRT_SKIP_WITHOUT_GPU();
  nan_inf_16_64();
}
TEST(CudaDtypes, TopKOnIntegersWithTies) {
  KILNRT_SKIP_WITHOUT_GPU();
  topk_int();
}
TEST(CudaDtypes, Float64ReductionsAndUnary) {
  KILNRT_SKIP_WITHOUT_GPU();
  float64_reductions_and_unary();
}
TEST(CudaDtypes, BinaryOpsOnNarrowUnsignedAndFloat64) {
  KILNRT_SKIP_WITHOUT_GPU();
  binary_all();
}
TEST(CudaDtypes, FloatModSignRules) {
  KILNRT_SKIP_WITHOUT_GPU();
  float_mod();
}
TEST(CudaDtypes, PowWithMixedDtypes) {
  KILNRT_SKIP_WITHOUT_GPU();
  pow_mixed();
}
TEST(CudaDtypes, ClipOnIntegers) {
  KILNRT_SKIP_WITHOUT_GPU();
  clip_int();
}
// Without a GPU: the CPU reference runs every case above and the CUDA backend's planner accepts each node.
TEST(CudaDtypesHost, CpuReferenceRunsAndCudaAcceptsEveryCase) {
  g_host_only = true;
  binary_all();
  float_mod();
  pow_mixed();
  clip_int();
  float64_reductions_and_unary();
  topk_int();
  nan_inf_16_64();
  g_host_only = false;
}

}  // namespace
}  // namespace kilnrt::cudatest
