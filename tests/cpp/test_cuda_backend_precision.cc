// fp16 / bf16 per-op CUDA vs CPU-reference comparisons (docs/cuda-backend.md, "Precision"): every node carries
// kilnrt_precision "fp16" / "bf16" as the builder sets it for --fp16 / --bf16, so activations are stored in 16 bits
// between layers and graph I/O stays float32. Inputs are pre-rounded to the 16-bit dtype on the host so that the
// float32 CPU reference sees exactly what the GPU sees; what is left is the kernels' own error (float32 math inside,
// one 16-bit rounding of each output). Tolerances derive from the dtype's unit roundoff u (fp16 2^-11, bf16 2^-8):
// rtol = 16u (fp16 ~8e-3, bf16 ~6e-2), atol = 2u x the output's scale x sqrt(reduction length).
// Also: NaN / inf propagation through 16-bit elementwise kernels, attention-mask constants outside the fp16 range
// (clamped; fully masked softmax rows are uniform, never NaN) and LayerNorm on values whose squares overflow fp16.
// GPU tests skip cleanly without a GPU.
#include <cmath>
#include <limits>

#include "cuda_backend_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Prec {
  const char* name;  // kilnrt_precision value
  DType dt;          // storage dtype of float activations
  double u;          // unit roundoff
};
const Prec kPrecs[] = {{"fp16", DType::kFloat16, 1.0 / 2048}, {"bf16", DType::kBFloat16, 1.0 / 256}};

float round_to(float v, DType dt) {
  return dt == DType::kFloat16 ? half_to_float(float_to_half(v)) : bfloat16_to_float(float_to_bfloat16(v));
}
// A float32 tensor's values rounded to the 16-bit dtype (NaN / inf kept); other dtypes unchanged.
Tensor rounded(const Tensor& t, DType dt) {
  if (t.dtype() != DType::kFloat32) return t;
  Tensor r = Tensor::from_data(t.raw(), t.dtype(), t.shape());
  for (int64_t i = 0; i < r.numel(); ++i) r.data<float>()[i] = round_to(r.data<float>()[i], dt);
  return r;
}

struct Tol {
  double atol, rtol;
};
// scale: typical magnitude of the output; k: reduction length (elements accumulated per output).
Tol tol_for(const Prec& p, double scale = 1.0, int64_t k = 1) {
  return {2.0 * p.u * scale * std::sqrt(double(std::max<int64_t>(k, 1))), 16.0 * p.u};
}

Tensor f32(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, DType::kFloat32, s); }
Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }
Tensor with_specials(Tensor t, bool infs) {  // NaN every 7th element; +inf / -inf at other positions
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i % 7 == 0)
      p[i] = kNaN;
    else if (infs && i % 11 == 3)
      p[i] = kInf;
    else if (infs && i % 13 == 5)
      p[i] = -kInf;
  }
  return t;
}

// Every float32 output of a 16-bit plan went through 16-bit storage: it must be representable in the dtype.
void expect_representable(const Tensor& t, const Prec& p) {
  if (t.dtype() != DType::kFloat32) return;
  int bad = 0;
  for (int64_t i = 0; i < t.numel() && bad < 3; ++i) {
    const float v = t.data<float>()[i];
    if (!std::isnan(v) && round_to(v, p.dt) != v) {
      ++bad;
      ADD_FAILURE() << "element " << i << " = " << v << " is not a " << p.name << " value (activations not 16-bit?)";
    }
  }
}

// A small graph (several nodes): graph inputs from `feeds`, constants from `consts`.
struct SmallGraph {
  ir::Graph g;
  std::map<std::string, Tensor> feeds;
  SmallGraph(std::vector<ir::Node> nodes, const std::map<std::string, Tensor>& inputs,
             const std::map<std::string, Tensor>& consts, const std::vector<std::string>& outputs) {
    g.name = "small";
    g.opsets[""] = 17;
    g.nodes = std::move(nodes);
    for (const auto& [name, t] : inputs) {
      g.inputs.push_back(name);
      ir::TensorType tt;
      tt.dtype = t.dtype();
      tt.has_shape = true;
      tt.shape = ir::shape_to_sym(t.shape());
      g.types[name] = tt;
      feeds[name] = t;
    }
    for (const auto& [name, t] : consts) g.constants[name] = t;
    g.outputs = outputs;
    passes::infer_shapes(g);
  }
};

ir::Node with_precision(ir::Node n, const Prec& p) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = p.name;
  n.attrs["kilnrt_precision"] = a;
  return n;
}

// Runs `node` with precision p on the GPU and in float32 on the CPU (same pre-rounded inputs) and compares.
// Returns the GPU outputs for extra checks.
std::map<std::string, Tensor> compare16(const Prec& p, const ir::Node& node, const std::vector<Tensor>& inputs,
                                        const std::vector<bool>& constant, int64_t opset, Tol tol) {
  std::vector<Tensor> ins;
  for (const Tensor& t : inputs) ins.push_back(rounded(t, p.dt));
  OneNode one(with_precision(node, p), ins, constant, opset);
  const auto want = run_cpu(one.g, one.feeds);
  const auto got = run_cuda(one.g, one.feeds);
  for (const auto& [name, t] : want) {
    SCOPED_TRACE(std::string(p.name) + " " + node.op_type + " output " + name);
    expect_tensors_close(got.at(name), t, tol.atol, tol.rtol);
    expect_representable(got.at(name), p);
  }
  return got;
}

// ---- table-driven cases ------------------------------------------------------------------------------------------

struct Case {
  const char* label;
  Op op;
  std::vector<Tensor> inputs;
  std::vector<bool> constant;  // per input
  double scale = 1.0;          // output magnitude
  int64_t k = 1;               // reduction length
  int64_t opset = 17;
};

void run_cases(const std::vector<Case>& cases) {
  for (const Prec& p : kPrecs) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(p.name) + " " + c.label);
      compare16(p, c.op.node, c.inputs, c.constant, c.opset, tol_for(p, c.scale, c.k));
    }
  }
}

TEST(CudaBackendPrecision, UnaryActivationsWithNaN) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = with_specials(random_tensor({3, 5, 7}, 1, -4.f, 4.f), false);
  const Tensor pos = with_specials(random_tensor({100}, 2, 0.1f, 9.f), false);
  const Tensor mixed = random_tensor({100}, 3, -1.f, 9.f);  // Sqrt / Log of negatives: NaN on both sides
  std::vector<Case> cases;
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Erf", "HardSwish", "Abs", "Neg"})
    cases.push_back({op, Op(op, 1), {x}, {}, 4.0});
  cases.push_back({"Exp", Op("Exp", 1), {x}, {}, 1.0});
  cases.push_back({"HardSigmoid", Op("HardSigmoid", 1).f("alpha", 0.3f).f("beta", 0.4f), {x}, {}});
  cases.push_back({"Gelu", Op("Gelu", 1), {x}, {}, 4.0, 1, 20});
  cases.push_back({"Gelu tanh", Op("Gelu", 1).s("approximate", "tanh"), {x}, {}, 4.0, 1, 20});
  cases.push_back({"Log", Op("Log", 1), {pos}, {}, 2.0});
  cases.push_back({"Sqrt", Op("Sqrt", 1), {pos}, {}, 3.0});
  cases.push_back({"Log mixed", Op("Log", 1), {mixed}, {}, 2.0});
  cases.push_back({"Sqrt mixed", Op("Sqrt", 1), {mixed}, {}, 3.0});
  cases.push_back({"Clip", Op("Clip", 3), {x, f32({-0.5f}, {}), f32({0.7f}, {})}, {false, true, true}});
  cases.push_back({"Clip min only", Op("Clip", 2), {x, f32({0.25f}, {})}, {false, true}, 4.0});
  run_cases(cases);
}

// 16-bit storage keeps +/-inf and NaN (graph inputs are converted, not clamped): NaN in -> NaN out at the same
// positions, +inf through Relu stays +inf, saturating ops give their limits.
TEST(CudaBackendPrecision, NaNAndInfPropagation) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = with_specials(random_tensor({4, 50}, 4, -4.f, 4.f), true);
  const Tensor b = random_tensor({50}, 5, 0.5f, 3.f);
  std::vector<Case> cases;
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Abs", "Neg"})
    cases.push_back({op, Op(op, 1), {x}, {}, 4.0});
  cases.push_back({"HardSigmoid", Op("HardSigmoid", 1).f("alpha", 0.2f).f("beta", 0.5f), {x}, {}});
  cases.push_back({"Clip", Op("Clip", 3), {x, f32({-1.f}, {}), f32({2.f}, {})}, {false, true, true}, 2.0});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) cases.push_back({op, Op(op, 2), {x, b}, {}, 4.0});
  run_cases(cases);
  for (const Prec& p : kPrecs) {
    SCOPED_TRACE(p.name);
    const auto got = compare16(p, Op("Relu", 1).node, {x}, {}, 17, tol_for(p, 4.0)).at("out0");
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float in = x.data<float>()[i], out = got.data<float>()[i];
      if (std::isnan(in))
        EXPECT_TRUE(std::isnan(out)) << i;
      else
        EXPECT_FALSE(std::isnan(out)) << i;
      if (in == kInf) EXPECT_EQ(out, kInf) << i;
      if (in == -kInf) EXPECT_EQ(out, 0.f) << i;
    }
  }
}

TEST(CudaBackendPrecision, BinaryBroadcasting) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor a = with_specials(random_tensor({2, 3, 4, 5}, 6, -3.f, 3.f), false);
  const Tensor b = random_tensor({3, 1, 5}, 7, 0.5f, 3.f);
  const Tensor c = random_tensor({1}, 8, 0.5f, 2.f);
  const Tensor full = random_tensor({2, 3, 4, 5}, 9, -3.f, 3.f);
  std::vector<Case> cases;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    const double scale = std::string(op) == "Div" ? 6.0 : 9.0;
    cases.push_back({op, Op(op, 2), {a, b}, {}, scale});
    cases.push_back({op, Op(op, 2), {b, a}, {}, scale});
    cases.push_back({op, Op(op, 2), {a, c}, {false, true}, scale});  // constant operand: converted at load
    if (std::string(op) != "Div") cases.push_back({op, Op(op, 2), {a, full}, {}, scale});
  }
  cases.push_back(
      {"Pow", Op("Pow", 2), {random_tensor({4, 5}, 10, 0.1f, 3.f), random_tensor({5}, 11, -2.f, 2.f)}, {}, 10.0});
  cases.push_back(
      {"Pow const", Op("Pow", 2), {random_tensor({3, 7}, 12, -3.f, 3.f), f32({2.f}, {})}, {false, true}, 9.0});
  cases.push_back({"Max3", Op("Max", 3), {a, b, c}, {}, 3.0});
  run_cases(cases);
}

TEST(CudaBackendPrecision, ComparisonsWhereCast) {
  KILNRT_SKIP_WITHOUT_GPU();
  // Values on a quarter grid: exact in both dtypes, many ties for Equal / LessOrEqual.
  auto grid = [](Tensor t) {
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::round(t.data<float>()[i] * 4.f) / 4.f;
    return t;
  };
  const Tensor a = with_specials(grid(random_tensor({2, 3, 4}, 13, -2.f, 2.f)), false);
  const Tensor b = grid(random_tensor({3, 1}, 14, -2.f, 2.f));
  Tensor cond = Tensor::empty(DType::kBool, {3, 1, 4});
  for (int i = 0; i < 12; ++i) cond.data<uint8_t>()[i] = (i * 5) % 3 == 0;
  Tensor flags = Tensor::empty(DType::kBool, {5});
  for (int i = 0; i < 5; ++i) flags.data<uint8_t>()[i] = i % 2;
  const Tensor big = random_tensor({2, 6}, 15, -50.f, 50.f);
  std::vector<Case> cases;
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    cases.push_back({op, Op(op, 2), {a, b}, {}});
  cases.push_back({"Where", Op("Where", 3), {cond, random_tensor({2, 3, 1, 4}, 16), random_tensor({4}, 17)}, {}});
  cases.push_back({"Where const",
                   Op("Where", 3),
                   {cond, with_specials(random_tensor({2, 3, 1, 4}, 16), false), f32({-1e9f}, {})},
                   {false, false, true},
                   65504.0});
  cases.push_back({"Cast->int64", Op("Cast", 1).i("to", int64_t(DType::kInt64)), {big}, {}});
  cases.push_back({"Cast->int32", Op("Cast", 1).i("to", int64_t(DType::kInt32)), {big}, {}});
  cases.push_back({"Cast->bool", Op("Cast", 1).i("to", int64_t(DType::kBool)), {a}, {}});
  cases.push_back({"Cast int64->float",
                   Op("Cast", 1).i("to", int64_t(DType::kFloat32)),
                   {i64({1, -2, 3, 255, 2048, -7}, {6})},
                   {},
                   2048.0});
  cases.push_back({"Cast bool->float", Op("Cast", 1).i("to", int64_t(DType::kFloat32)), {flags}, {}});
  cases.push_back({"Cast float->float", Op("Cast", 1).i("to", int64_t(DType::kFloat32)), {big}, {}, 50.0});
  for (const Prec& p : kPrecs) {
    for (Case c : cases) {
      SCOPED_TRACE(std::string(p.name) + " " + c.label);
      // A -1e9 constant is clamped to the dtype's finite range (fp16: -65504), so compare Where with the clamp.
      if (std::string(c.label) == "Where const" && p.dt == DType::kFloat16) c.inputs[2] = f32({-65504.f}, {});
      compare16(p, c.op.node, c.inputs, c.constant, c.opset, tol_for(p, c.scale, c.k));
    }
  }
}

TEST(CudaBackendPrecision, PoolingAndReductions) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = with_specials(random_tensor({2, 3, 9, 8}, 18), false);
  const Tensor y = random_tensor({2, 3, 9, 8}, 19);
  const Tensor big = random_tensor({2, 3, 9, 8}, 20, -100.f, 100.f);  // sums up to ~1e3, mean ~10
  std::vector<Case> cases = {
      {"MaxPool NaN",
       Op("MaxPool", 1).ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1}),
       {x},
       {}},
      {"MaxPool ceil",
       Op("MaxPool", 1).ints("kernel_shape", {2, 3}).i("ceil_mode", 1).ints("strides", {2, 2}),
       {y},
       {}},
      {"AveragePool", Op("AveragePool", 1).ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 1, 1}), {y}, {}, 1.0, 9},
      {"AveragePool incl pad",
       Op("AveragePool", 1)
           .ints("kernel_shape", {3, 3})
           .ints("pads", {1, 1, 1, 1})
           .i("count_include_pad", 1)
           .i("ceil_mode", 1)
           .ints("strides", {2, 2}),
       {y},
       {},
       1.0,
       9},
      {"GlobalAveragePool", Op("GlobalAveragePool", 1), {y}, {}, 1.0, 72},
      {"GlobalAveragePool big", Op("GlobalAveragePool", 1), {big}, {}, 10.0, 72},
      {"GlobalMaxPool NaN", Op("GlobalMaxPool", 1), {x}, {}},
      {"ReduceMean 2,3", Op("ReduceMean", 1).ints("axes", {2, 3}).i("keepdims", 1), {y}, {}, 1.0, 72},
      {"ReduceMean 0,2", Op("ReduceMean", 1).ints("axes", {0, 2}).i("keepdims", 0), {y}, {}, 1.0, 18},
      {"ReduceMean NaN", Op("ReduceMean", 1).ints("axes", {3}), {x}, {}, 1.0, 8},
      {"ReduceSum last", Op("ReduceSum", 2), {y, i64({-1}, {1})}, {false, true}, 1.0, 8},
      {"ReduceSum all", Op("ReduceSum", 1), {y}, {}, 1.0, 432},
      {"ReduceSum big", Op("ReduceSum", 2), {big, i64({1, 2}, {2})}, {false, true}, 100.0, 27},
      {"ReduceMax", Op("ReduceMax", 1).ints("axes", {1}), {y}, {}},
      {"ReduceMax NaN", Op("ReduceMax", 1).ints("axes", {1}), {x}, {}},
  };
  run_cases(cases);
}

TEST(CudaBackendPrecision, SoftmaxAndLogSoftmax) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor y = random_tensor({2, 3, 9, 8}, 21, -3.f, 3.f);
  const Tensor wide = random_tensor({4, 1000}, 22, -10.f, 10.f);
  std::vector<Case> cases = {
      {"Softmax axis 1", Op("Softmax", 1).i("axis", 1), {y}, {}},
      {"Softmax last", Op("Softmax", 1), {y}, {}},
      {"Softmax wide", Op("Softmax", 1), {wide}, {}, 0.05},
      {"Softmax opset 11", Op("Softmax", 1).i("axis", 1), {y}, {}, 1.0, 1, 11},
      {"Softmax NaN", Op("Softmax", 1), {with_specials(random_tensor({3, 10}, 23), false)}, {}},
      {"LogSoftmax", Op("LogSoftmax", 1), {y}, {}, 8.0},
      {"LogSoftmax axis 1", Op("LogSoftmax", 1).i("axis", 1), {y}, {}, 8.0},
      {"LogSoftmax wide", Op("LogSoftmax", 1), {wide}, {}, 20.0},
  };
  run_cases(cases);
}

// Additive attention masks: Add(scores, mask) -> Softmax. Rows: 0 unmasked, 1 half masked, 2 fully masked,
// 3 all but one masked. Mask values -1e9 and -inf, as a constant (clamped to the dtype's finite range at load) and as
// a graph input (converted on the GPU: -1e9 and -inf become -inf in fp16). Fully masked rows must be uniform (never
// NaN); the others match the float32 CPU reference (where a -inf fully masked row is NaN, so row 2 is checked alone).
TEST(CudaBackendPrecision, MaskedSoftmaxRows) {
  KILNRT_SKIP_WITHOUT_GPU();
  constexpr int kRows = 4, kCols = 6;
  const Tensor scores = random_tensor({2, kRows, kCols}, 24, -4.f, 4.f);
  for (const Prec& p : kPrecs) {
    for (const float m : {-1e9f, -kInf}) {
      for (const bool as_constant : {true, false}) {
        SCOPED_TRACE(std::string(p.name) + " mask " + std::to_string(m) + (as_constant ? " constant" : " input"));
        std::vector<float> mv(kRows * kCols, 0.f);
        for (int c = 0; c < kCols; ++c) {
          if (c >= 3) mv[1 * kCols + c] = m;
          mv[2 * kCols + c] = m;
          if (c != 2) mv[3 * kCols + c] = m;
        }
        const Tensor mask = f32(mv, {kRows, kCols});
        ir::Node add = with_precision(Op("Add", 2, 1, "add").node, p);
        add.inputs = {"scores", "mask"};
        add.outputs = {"masked"};
        ir::Node sm = with_precision(Op("Softmax", 1, 1, "softmax").i("axis", -1).node, p);
        sm.inputs = {"masked"};
        sm.outputs = {"probs"};
        std::map<std::string, Tensor> inputs = {{"scores", rounded(scores, p.dt)}}, consts;
        (as_constant ? consts : inputs)["mask"] = mask;
        SmallGraph sg({add, sm}, inputs, consts, {"probs"});
        const Tensor want = run_cpu(sg.g, sg.feeds).at("probs");
        const Tensor got = run_cuda(sg.g, sg.feeds).at("probs");
        ASSERT_EQ(got.shape(), want.shape());
        const Tol tol = tol_for(p);
        for (int64_t b = 0; b < 2; ++b) {
          for (int r = 0; r < kRows; ++r) {
            double sum = 0;
            for (int c = 0; c < kCols; ++c) {
              const int64_t i = (b * kRows + r) * kCols + c;
              const float g = got.data<float>()[i], w = want.data<float>()[i];
              ASSERT_TRUE(std::isfinite(g)) << "batch " << b << " row " << r << " col " << c << ": " << g;
              sum += g;
              const double expect = r == 2 ? 1.0 / kCols : double(w);
              EXPECT_NEAR(g, expect, tol.atol + tol.rtol * std::fabs(expect))
                  << "batch " << b << " row " << r << " col " << c;
              if (r != 2 && mv[r * kCols + c] != 0.f) EXPECT_EQ(g, 0.f) << "masked entry, row " << r << " col " << c;
            }
            EXPECT_NEAR(sum, 1.0, kCols * tol.atol + tol.rtol) << "batch " << b << " row " << r;
          }
        }
        expect_representable(got, p);
      }
    }
    // A row that is -inf everywhere in the softmax's own input is uniform too.
    SCOPED_TRACE(std::string(p.name) + " -inf row");
    Tensor s = random_tensor({3, 5}, 25);
    for (int c = 0; c < 5; ++c) s.data<float>()[5 + c] = -kInf;
    OneNode one(with_precision(Op("Softmax", 1).node, p), {rounded(s, p.dt)});
    const Tensor got = run_cuda(one.g, one.feeds).at("out0");
    const Tensor want = run_cpu(one.g, one.feeds).at("out0");
    for (int64_t i = 0; i < 15; ++i) {
      const float g = got.data<float>()[i];
      const double expect = (i / 5 == 1) ? 0.2 : double(want.data<float>()[i]);
      EXPECT_NEAR(g, expect, tol_for(p).atol + tol_for(p).rtol * expect) << i;
    }
  }
}

TEST(CudaBackendPrecision, LayerNormAndBatchNorm) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor y = random_tensor({2, 3, 9, 8}, 26);
  const Tensor gamma = random_tensor({64}, 27, 0.5f, 1.5f), beta = random_tensor({64}, 28);
  std::vector<Case> cases = {
      {"LayerNorm",
       Op("LayerNormalization", 3).i("axis", -1).f("epsilon", 1e-5f),
       {random_tensor({2, 16, 64}, 29, -3.f, 3.f), gamma, beta},
       {false, true, true},
       3.0},
      {"LayerNorm axis 1",
       Op("LayerNormalization", 2).i("axis", 1),
       {y, random_tensor({3, 9, 8}, 30)},
       {false, true},
       2.0},
      {"BatchNorm",
       Op("BatchNormalization", 5),
       {y, random_tensor({3}, 31), random_tensor({3}, 32), random_tensor({3}, 33), random_tensor({3}, 34, 0.5f, 2.f)},
       {false, true, true, true, true},
       3.0},
      {"BatchNorm big",
       Op("BatchNormalization", 5),
       {random_tensor({2, 3, 5, 5}, 35, 200.f, 400.f), random_tensor({3}, 36), random_tensor({3}, 37, -5.f, 5.f),
        f32({300.f, 250.f, 350.f}, {3}), f32({3000.f, 900.f, 2500.f}, {3})},
       {false, true, true, true, true},
       3.0},
  };
  run_cases(cases);
}

// Values ~300 (x^2 ~ 9e4 > 65504): float32 mean / variance inside the kernel keep the result finite and correct.
TEST(CudaBackendPrecision, LayerNormDoesNotOverflowFp16) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor gamma = random_tensor({64}, 38, 0.5f, 1.5f), beta = random_tensor({64}, 39);
  const std::vector<Tensor> xs = {
      random_tensor({2, 8, 64}, 40, 250.f, 350.f),   // large mean, modest spread
      random_tensor({2, 8, 64}, 41, -300.f, 300.f),  // large spread: sum of squares ~2e6
      random_tensor({2, 8, 64}, 42, 299.f, 301.f),   // tiny spread on a large mean
  };
  for (const Prec& p : kPrecs) {
    for (size_t v = 0; v < xs.size(); ++v) {
      SCOPED_TRACE(std::string(p.name) + " input set " + std::to_string(v));
      // Reference normalised values are O(1) (|x-mean|/std <= ~1.8): scale 3, reduction length 64.
      const auto got = compare16(p, Op("LayerNormalization", 3).i("axis", -1).f("epsilon", 1e-5f).node,
                                 {xs[v], gamma, beta}, {false, true, true}, 17, tol_for(p, 3.0, 64));
      const Tensor& out = got.at("out0");
      for (int64_t i = 0; i < out.numel(); ++i) {
        ASSERT_TRUE(std::isfinite(out.data<float>()[i])) << "element " << i << " = " << out.data<float>()[i];
        ASSERT_LT(std::fabs(out.data<float>()[i]), 10.f) << "element " << i;
      }
    }
  }
}

TEST(CudaBackendPrecision, ConvolutionCudnn16) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 4, 11, 9}, 43);
  auto conv = [&](const char* label, Op op, const Tensor& w, bool bias, int64_t group = 1) {
    std::vector<Tensor> ins = {x, w};
    if (bias) ins.push_back(random_tensor({w.shape()[0]}, 44));
    const int64_t k = (4 / group) * w.shape()[2] * w.shape()[3];
    return Case{label, op, ins, {false, true, true}, 1.0, k};
  };
  std::vector<Case> cases = {
      conv("3x3 pad", Op("Conv", 3).ints("pads", {1, 1, 1, 1}), random_tensor({6, 4, 3, 3}, 45), true),
      conv("stride dilation",
           Op("Conv", 3).ints("strides", {2, 2}).ints("dilations", {2, 1}).ints("pads", {2, 1, 2, 1}),
           random_tensor({8, 4, 3, 3}, 46), true),
      conv("grouped", Op("Conv", 3).i("group", 2).ints("strides", {2, 1}), random_tensor({6, 2, 3, 1}, 47), true, 2),
      conv("depthwise", Op("Conv", 3).i("group", 4).ints("pads", {2, 2, 2, 2}), random_tensor({4, 1, 5, 5}, 48), true,
           4),
      conv("asymmetric (direct)", Op("Conv", 2).ints("pads", {0, 1, 1, 0}), random_tensor({3, 4, 2, 2}, 49), false),
      conv("SAME_UPPER", Op("Conv", 2).s("auto_pad", "SAME_UPPER").ints("strides", {2, 2}),
           random_tensor({3, 4, 3, 3}, 50), false),
      {"1-D",
       Op("Conv", 3).ints("pads", {1, 1}),
       {random_tensor({2, 3, 17}, 51), random_tensor({5, 3, 3}, 52), random_tensor({5}, 53)},
       {false, true, true},
       1.0,
       9},
      {"wide K",
       Op("Conv", 3).ints("pads", {1, 1, 1, 1}),
       {random_tensor({1, 64, 8, 8}, 54), random_tensor({16, 64, 3, 3}, 55), random_tensor({16}, 56)},
       {false, true, true},
       1.0,
       576},
  };
  run_cases(cases);
}

TEST(CudaBackendPrecision, MatMulAndGemm) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor a = random_tensor({7, 90}, 57), at = random_tensor({90, 7}, 58);
  const Tensor b = random_tensor({90, 11}, 59), bt = random_tensor({11, 90}, 60);
  std::vector<Case> cases = {
      {"MatMul const B",
       Op("MatMul", 2),
       {random_tensor({37, 129}, 61), random_tensor({129, 65}, 62)},
       {false, true},
       1.0,
       129},
      {"MatMul batched", Op("MatMul", 2), {random_tensor({3, 4, 50}, 63), random_tensor({3, 50, 6}, 64)}, {}, 1.0, 50},
      {"MatMul broadcast",
       Op("MatMul", 2),
       {random_tensor({2, 1, 4, 50}, 65), random_tensor({3, 50, 6}, 66)},
       {},
       1.0,
       50},
      {"MatMul vec", Op("MatMul", 2), {random_tensor({40}, 67), random_tensor({40, 6}, 68)}, {}, 1.0, 40},
      {"MatMul NaN",
       Op("MatMul", 2),
       {with_specials(random_tensor({9, 16}, 69), false), random_tensor({16, 5}, 70)},
       {false, true},
       1.0,
       16},
      {"Gemm bias", Op("Gemm", 3), {a, b, random_tensor({11}, 71)}, {false, true, true}, 1.0, 90},
      {"Gemm trans alpha beta",
       Op("Gemm", 3).i("transA", 1).i("transB", 1).f("alpha", 0.5f).f("beta", 2.f),
       {at, bt, random_tensor({7, 1}, 72)},
       {false, true, true},
       2.0,
       90},
      {"Gemm full C", Op("Gemm", 3).i("transB", 1), {a, bt, random_tensor({7, 11}, 73)}, {}, 1.0, 90},
      {"Gemm no C", Op("Gemm", 2).i("transA", 1), {at, b}, {}, 1.0, 90},
  };
  run_cases(cases);
}

TEST(CudaBackendPrecision, ToleranceModel) {
  // No GPU needed: the helpers this suite relies on.
  EXPECT_EQ(round_to(1.f + 1.f / 4096, DType::kFloat16), 1.f);
  EXPECT_EQ(round_to(300.1f, DType::kFloat16), 300.f);
  EXPECT_EQ(round_to(300.1f, DType::kBFloat16), 300.f);
  EXPECT_TRUE(std::isnan(round_to(kNaN, DType::kBFloat16)));
  EXPECT_EQ(round_to(kInf, DType::kFloat16), kInf);
  const Tol h = tol_for(kPrecs[0]), bf = tol_for(kPrecs[1], 1.0, 64);
  EXPECT_NEAR(h.rtol, 1e-2, 3e-3);
  EXPECT_NEAR(h.atol, 1e-3, 1e-4);
  EXPECT_NEAR(bf.rtol, 6.25e-2, 1e-9);
  EXPECT_NEAR(bf.atol, 8 * 2.0 / 256, 1e-9);
}

}  // namespace
}  // namespace kilnrt::cudatest
