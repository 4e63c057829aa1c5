// The build-time choice of FusedMatMul weight layouts (ops/nn/gemm/cuda/gemm_weight_layout.h): a flipped W
// ([K, N] <-> [N, K] with trans_b flipped) computes the same product on the CPU reference; on the GPU a forced flip
// matches the CPU reference of the unflipped graph for every epilogue and precision; timing considers only
// float32-constant weights read by one node, records the decision in the timing cache (a second choice times
// nothing) and never changes the result. GPU tests skip with a message without a GPU.
#include <cstdlib>

#include "attention_test_util.h"
#include "ops/cuda/tactic_timing.h"
#include "ops/nn/gemm/cuda/gemm_weight_layout.h"
#include "conv_fusion_test_util.h"
#include "cuda_backend_test_util.h"

namespace kilnrt::cudatest {
namespace {

namespace bc = kilnrt::backends::cuda;
using attntest::random_tensor;
using testing_conv::int_attr;
using testing_conv::string_attr;

struct EnvVar {  // sets a variable for one scope
  std::string name;
  EnvVar(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~EnvVar() { unsetenv(name.c_str()); }
};

struct Case {
  ir::Graph g;
  std::map<std::string, Tensor> feeds;
};

// y = FusedMatMul(a [2, 37, 64], w, bias [, res]) with W [64, 80] (or [80, 64] with trans_b); `shared`: a second
// FusedMatMul reads the same W.
Case make_case(const std::string& epilogue, bool trans_b, const char* precision, bool shared = false) {
  attntest::Builder b;
  b.input("a", {2, 37, 64});
  b.constant("w", trans_b ? random_tensor({80, 64}, 21, -0.25f, 0.25f) : random_tensor({64, 80}, 21, -0.25f, 0.25f));
  b.constant("bias", random_tensor({80}, 22));
  std::vector<std::string> ins = {"a", "w", "bias"};
  if (epilogue == "residual") ins.push_back(b.input("res", {2, 37, 80}));
  auto add = [&](const std::vector<std::string>& in, const std::string& out) {
    ir::Node& n = b.node("FusedMatMul", in, out);
    n.domain = "com.kilnrt";
    n.attrs["activation"] = string_attr(epilogue == "gelu" ? "gelu" : "none");
    if (trans_b) n.attrs["trans_b"] = int_attr(1);
  };
  add(ins, "y");
  if (shared) add({"a", "w", "bias"}, "y2");
  b.g.opsets["com.kilnrt"] = 1;
  b.output("y");
  if (shared) b.output("y2");
  Case c{b.finish(), b.feeds};
  if (*precision)
    for (ir::Node& x : c.g.nodes) x.attrs["kilnrt_precision"] = string_attr(precision);
  return c;
}

ir::Node& fused_node(ir::Graph& g) {
  for (ir::Node& n : g.nodes)
    if (n.op_type == "FusedMatMul") return n;
  throw std::runtime_error("no FusedMatMul");
}

TEST(CudaGemmWeightLayout, FlipKeepsTheProductOnCpu) {  // host only
  for (bool trans_b : {false, true}) {
    SCOPED_TRACE(trans_b ? "W [N, K]" : "W [K, N]");
    Case c = make_case("bias", trans_b, "");
    const Tensor want = run_cpu(c.g, c.feeds).at("y");
    ir::Graph g = c.g;
    ir::Node& n = fused_node(g);
    bc::flip_fused_matmul_weight(g, n);
    EXPECT_EQ(n.attr_int("trans_b", 0), trans_b ? 0 : 1);
    const Shape ws = g.constants.at("w").shape();
    EXPECT_EQ(ws, (trans_b ? Shape{64, 80} : Shape{80, 64}));
    const Tensor& w0 = c.g.constants.at("w");
    const Tensor& w1 = g.constants.at("w");
    const int64_t r = w0.shape()[0], cols = w0.shape()[1];
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < cols; ++j) ASSERT_EQ(w1.data<float>()[j * r + i], w0.data<float>()[i * cols + j]);
    expect_tensors_close(run_cpu(g, c.feeds).at("y"), want, 1e-5, 1e-5);
    bc::flip_fused_matmul_weight(g, n);  // twice: as before
    EXPECT_EQ(n.attr_int("trans_b", 0), trans_b ? 1 : 0);
    EXPECT_EQ(g.constants.at("w").shape(), w0.shape());
  }
}

// Forced flips (KILNRT_GEMM_WEIGHT_LAYOUT=transposed) run every epilogue and precision on the GPU as the CPU
// reference computes the unflipped graph.
TEST(CudaGemmWeightLayout, FlippedWeightsMatchCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  EnvVar force("KILNRT_GEMM_WEIGHT_LAYOUT", "transposed");
  for (const char* epilogue : {"bias", "gelu", "residual"})
    for (bool trans_b : {false, true})
      for (const char* precision : {"", "fp16", "bf16"}) {
        SCOPED_TRACE(std::string(epilogue) + (trans_b ? " W [N, K] " : " W [K, N] ") +
                     (*precision ? precision : "fp32"));
        Case c = make_case(epilogue, trans_b, precision);
        const Tensor want = run_cpu(c.g, c.feeds).at("y");
        ir::Graph g = c.g;
        const bc::GemmLayoutResult r = bc::choose_gemm_weight_layouts(g, 0);
        EXPECT_EQ(r.considered, 1);
        EXPECT_EQ(r.flipped, 1);
        EXPECT_EQ(fused_node(g).attr_int("trans_b", 0), trans_b ? 0 : 1);
        const double tol = *precision == 0 ? 5e-5 : std::string(precision) == "fp16" ? 8.0 / 2048 : 8.0 / 256;
        expect_tensors_close(run_cuda(g, c.feeds).at("y"), want, tol * 4, tol * 4);
      }
}

// Timing: one decision per problem (the timing cache answers the second), the result unchanged either way; a W
// that two nodes read is left alone; KILNRT_GEMM_WEIGHT_LAYOUT=0 considers nothing.
TEST(CudaGemmWeightLayout, TimedChoiceIsCachedAndKeepsResults) {
  KILNRT_SKIP_WITHOUT_GPU();
  bc::timing_cache_clear();
  Case c = make_case("bias", false, "fp16");
  const Tensor want = run_cpu(c.g, c.feeds).at("y");
  ir::Graph g = c.g;
  const bc::GemmLayoutResult r = bc::choose_gemm_weight_layouts(g, 0);
  EXPECT_EQ(r.considered, 1);
  EXPECT_EQ(r.timed, 1);
  EXPECT_NE(r.note.find("1 timed"), std::string::npos) << r.note;
  expect_tensors_close(run_cuda(g, c.feeds).at("y"), want, 4 * 8.0 / 2048, 4 * 8.0 / 2048);
  ir::Graph again = c.g;
  const bc::GemmLayoutResult r2 = bc::choose_gemm_weight_layouts(again, 0);
  EXPECT_EQ(r2.considered, 1);
  EXPECT_EQ(r2.timed, 0) << "the timing cache answers";
  EXPECT_EQ(r2.flipped, r.flipped) << "the same decision";

  Case shared = make_case("bias", false, "fp16", /*shared=*/true);
  EXPECT_EQ(bc::choose_gemm_weight_layouts(shared.g, 0).considered, 0) << "W read by two nodes";
  {
    EnvVar off("KILNRT_GEMM_WEIGHT_LAYOUT", "0");
    ir::Graph g0 = c.g;
    const bc::GemmLayoutResult r0 = bc::choose_gemm_weight_layouts(g0, 0);
    EXPECT_EQ(r0.considered, 0);
    EXPECT_NE(r0.note.find("not timed"), std::string::npos);
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
