// CUDA com.kilnrt:SqueezeExcite layer (ops/nn/squeeze_excite/cuda) against the CPU reference of the unfused
// block: fp32 / fp16 / bf16, NCHW and NHWC storage, one and several partial-sum CTAs / channel tiles / position
// strips per sample, vectorised (C or H*W a multiple of 8) and scalar loads, with and without biases.
// Skips with a message without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/cuda/cuda_plan.h"
#include "cuda_backend_test_util.h"
#include "ops/nn/squeeze_excite/squeeze_excite.h"
#include "passes/optimize.h"
#include "squeeze_excite_test_util.h"

using namespace kilnrt;
using namespace kilnrt::testing_conv;

namespace {

struct Prec {
  const char* name;  // kilnrt_precision value ("" = strict fp32)
  double atol, rtol;
};
const Prec kPrecs[] = {{"", 2e-4, 2e-4}, {"fp16", 6e-2, 3e-2}, {"bf16", 4e-1, 1e-1}};

struct Env {
  Env(const char* k, const char* v) : key(k) { setenv(k, v, 1); }
  ~Env() { unsetenv(key); }
  const char* key;
};

std::map<std::string, Tensor> feeds_for(const ir::Graph& g) { return random_feeds(g, 11, -2.f, 2.f); }

std::string se_tactic(const ir::Graph& g) {
  kilnrt::cuda::ContextGuard guard(0);
  backends::cuda::CudaPlan plan(g, 0);
  std::map<std::string, std::string> op_of;
  for (const ir::Node& n : g.nodes) op_of[n.name] = n.op_type;
  std::string s;
  for (const auto& [node, t] : plan.tactics())
    if (op_of[node] == ops::nn::kSqueezeExciteOp) s += t + " ";
  return s;
}

// Optimizes the block (one SqueezeExcite expected), runs it on CUDA in every precision and layout, and compares with
// the CPU run of the unfused block.
void check_block(const SeBlock& s) {
  const ir::Graph original = se_block_graph(s);
  Env opt_in("KILNRT_SQUEEZE_EXCITE", "1");  // the pass is opt-in for now
  for (const char* nhwc : {"0", "1"}) {
    Env layout("KILNRT_CUDA_NHWC", nhwc);
    for (const Prec& p : kPrecs) {
      if (*nhwc == '1' && !*p.name) continue;  // float32 engines stay NCHW
      SCOPED_TRACE(::testing::Message() << "nhwc " << nhwc << " precision '" << p.name << "'");
      ir::Graph g = original;
      passes::optimize_graph(g);
      ASSERT_EQ(count_ops(g, ops::nn::kSqueezeExciteOp), 1u);
      if (*p.name)
        for (ir::Node& n : g.nodes) n.attrs["kilnrt_precision"] = string_attr(p.name);
      const auto feeds = feeds_for(g);
      const auto want = cudatest::run_cpu(original, feeds);
      const auto got = cudatest::run_cuda(g, feeds);
      cudatest::expect_tensors_close(got.at("y"), want.at("y"), p.atol, p.rtol);
      const std::string tactic = se_tactic(g);
      EXPECT_NE(tactic.find("kernel:squeeze-excite"), std::string::npos) << tactic;
      EXPECT_EQ(tactic.find("+nhwc") != std::string::npos, *nhwc == '1') << tactic;
      EXPECT_EQ(tactic.find("+reformat"), std::string::npos) << tactic;
    }
  }
}

}  // namespace

TEST(CudaSqueezeExcite, SmallBlocksMatchCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (bool mobilenet : {false, true}) {
    SeBlock s;
    s.mobilenet = mobilenet;
    s.x = {3, 16, 9, 9};  // C % 8 == 0 (NHWC vectors), H*W odd (NCHW scalar)
    check_block(s);
    s.x = {2, 12, 8, 8};  // C % 8 != 0 (NHWC scalar), H*W % 8 == 0 (NCHW vectors)
    s.cs = 3;
    s.bias = false;
    check_block(s);
  }
}

TEST(CudaSqueezeExcite, SeveralCtasPerSampleMatchCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  SeBlock s;
  s.x = {2, 16, 40, 40};  // 25600 values per sample: two NHWC partial-sum CTAs and two position strips per sample
  s.reduce_mean = true;
  check_block(s);
  s.x = {2, 136, 7, 7};  // three channel tiles (the last partial); wide squeeze: 16-byte W2 rows, lanes per row
  s.cs = 16;
  s.mobilenet = true;
  check_block(s);
  s.x = {1, 300, 3, 5};  // more channels than threads in the NHWC sums; several CTAs of W1 rows
  s.cs = 72;
  check_block(s);
}

TEST(CudaSqueezeExcite, LargeSampleMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  SeBlock s;
  s.x = {2, 32, 48, 48};  // 73728 values per sample: 5 partial-sum CTAs (NCHW: 2 position chunks), 5 strips
  s.cs = 8;
  check_block(s);
  s.x = {1, 8, 47, 47};  // odd H*W > 2048: two NCHW position chunks with scalar loads
  s.cs = 2;
  check_block(s);
}
