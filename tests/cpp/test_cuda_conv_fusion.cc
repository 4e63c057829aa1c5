// CUDA FusedConv layer: fused convolutions (bias + residual + activation in one epilogue kernel after
// cuDNN) against the CPU reference of the same fused graph, in fp32 / fp16 / bf16 storage, NCHW, with spatial sizes
// that take both the vectorised (H*W % 4 == 0) and the scalar epilogue. Skips with a message without a GPU.
#include <gtest/gtest.h>

#include "backends/cuda/cuda_plan.h"
#include "conv_fusion_test_util.h"
#include "cuda_backend_test_util.h"
#include "passes/fuse_conv_epilogue.h"
#include "passes/optimize.h"

using namespace kilnrt;
using namespace kilnrt::testing_conv;

namespace {

struct Prec {
  const char* name;  // kilnrt_precision value ("" = strict fp32)
  double atol, rtol;
};
const Prec kPrecs[] = {{"", 2e-4, 2e-4}, {"fp16", 3e-2, 1e-2}, {"bf16", 2e-1, 5e-2}};

void set_precision(ir::Graph& g, const char* p) {
  if (!*p) return;
  for (ir::Node& n : g.nodes) n.attrs["kilnrt_precision"] = string_attr(p);
}

std::map<std::string, Tensor> feeds_for(const ir::Graph& g) { return random_feeds(g, 7, -2.f, 2.f); }

// The tactic strings of the plan's layers, joined.
std::string tactics_of(const ir::Graph& g) {
  kilnrt::cuda::ContextGuard guard(0);
  backends::cuda::CudaPlan plan(g, 0);
  std::string s;
  for (const auto& [node, t] : plan.tactics()) s += node + "=" + t + " ";
  return s;
}

// Fuses `g`, checks one FusedConv was made, then compares CUDA with the CPU reference of the fused graph.
void check_on_gpu(ir::Graph g, const Prec& p, const std::string& expect_tactic) {
  ASSERT_GE(passes::fuse_conv_epilogues(g), 1u);
  passes::infer_shapes(g);
  set_precision(g, p.name);
  const auto feeds = feeds_for(g);
  const auto want = cudatest::run_cpu(g, feeds);
  const auto got = cudatest::run_cuda(g, feeds);
  for (const std::string& o : g.outputs) cudatest::expect_tensors_close(got.at(o), want.at(o), p.atol, p.rtol);
  const std::string tactics = tactics_of(g);
  EXPECT_NE(tactics.find(expect_tactic), std::string::npos) << tactics;
}

ir::Graph chain(const Shape& x, int64_t m, int64_t k, int64_t group, bool bias, bool residual, const std::string& act) {
  GraphBuilder b(20);
  b.input("x", x);
  const int64_t stride = 1;
  b.conv("x", "c", x[1], m, k, group, bias, stride);
  std::string cur = "c";
  if (residual) {
    b.input("z", {x[0], m, x[2], x[3]});
    b.node("Add", {cur, "z"}, {"s"});
    cur = "s";
  }
  if (act == "Silu") {
    b.node("Sigmoid", {cur}, {"sig"});
    b.node("Mul", {cur, "sig"}, {"a"});
    cur = "a";
  } else if (act == "Clip") {
    b.constant("lo", Tensor::from_vector(std::vector<float>{0.f}, DType::kFloat32, {}));
    b.constant("hi", Tensor::from_vector(std::vector<float>{1.f}, DType::kFloat32, {}));
    b.node("Clip", {cur, "lo", "hi"}, {"a"});
    cur = "a";
  } else if (!act.empty()) {
    b.node(act, {cur}, {"a"});
    cur = "a";
  }
  b.output(cur);
  return b.finish();
}

}  // namespace

TEST(CudaConvFusion, EveryActivationAndPrecision) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const Prec& p : kPrecs) {
    for (const char* act : {"", "Relu", "Clip", "HardSigmoid", "HardSwish", "Sigmoid", "Silu", "Gelu", "LeakyRelu"}) {
      for (int64_t hw : {8, 7}) {  // 64 (vectorised 16-bit epilogue) and 49 (scalar) output positions per channel
        const bool residual = hw == 8 || std::string(act).empty();
        SCOPED_TRACE(std::string(p.name) + " act '" + act + "' hw " + std::to_string(hw));
        std::string lower = act;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const std::string epi = std::string("bias") + (residual ? "+add" : "") + (lower.empty() ? "" : "+" + lower);
        check_on_gpu(chain({2, 16, hw, hw}, 32, 3, 1, true, residual, act), p, "conv-epilogue(" + epi + ")");
      }
    }
  }
}

TEST(CudaConvFusion, DepthwiseGroupedNoBiasPointwise) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const Prec& p : kPrecs) {
    SCOPED_TRACE(p.name);
    check_on_gpu(chain({2, 32, 14, 14}, 32, 3, 32, true, false, "HardSwish"), p, "conv-epilogue(bias+hardswish)");
    check_on_gpu(chain({2, 32, 9, 9}, 64, 3, 4, false, true, "Relu"), p, "conv-epilogue(add+relu)");
    check_on_gpu(chain({4, 64, 7, 7}, 128, 1, 1, true, true, "Relu"), p, "conv-epilogue(bias+add+relu)");
  }
}

TEST(CudaConvFusion, ResNetBlockThroughPassPipeline) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const Prec& p : kPrecs) {
    SCOPED_TRACE(p.name);
    GraphBuilder b;
    b.input("x", {2, 32, 16, 16});
    b.conv("x", "c1", 32, 32, 3, 1, false);
    b.batchnorm("c1", "b1", 32);
    b.node("Relu", {"b1"}, {"r1"});
    b.conv("r1", "c2", 32, 32, 3, 1, false);
    b.batchnorm("c2", "b2", 32);
    b.node("Add", {"b2", "x"}, {"s"});
    b.node("Relu", {"s"}, {"y"});
    b.output("y");
    ir::Graph original = b.finish();
    ir::Graph g = original;
    passes::optimize_graph(g);
    ASSERT_EQ(count_ops(g, "FusedConv"), 2u) << g.to_string();
    set_precision(g, p.name);
    const auto feeds = feeds_for(g);
    const auto want = cudatest::run_cpu(original, feeds);  // the unfused, unfolded graph
    const auto got = cudatest::run_cuda(g, feeds);
    // Two convolutions deep: twice the single-layer tolerance.
    cudatest::expect_tensors_close(got.at("y"), want.at("y"), 2 * p.atol, 2 * p.rtol);
  }
}

// ---- NHWC storage (KILNRT_CUDA_NHWC=1, opt-in; backends/cuda/layout_plan.h) -------------------------------------
namespace {

struct NhwcOptIn {
  NhwcOptIn() { setenv("KILNRT_CUDA_NHWC", "1", 1); }
  ~NhwcOptIn() { unsetenv("KILNRT_CUDA_NHWC"); }
};

// stem conv+relu -> MaxPool -> conv-bn-relu -> conv-bn + pooled residual -> relu -> squeeze-excite (GAP, 1x1 conv,
// HardSigmoid, Mul) -> 1x1 conv to 6 channels -> 3x3 conv -> y. Reformats in both directions, residual reformat,
// NHWC epilogues with 16 and with 6 channels.
ir::Graph nhwc_model() {
  GraphBuilder b;
  b.input("x", {2, 8, 16, 16});
  b.conv("x", "c0", 8, 16, 3, 1, true);
  b.node("Relu", {"c0"}, {"r0"});
  ir::Node& pool = b.node("MaxPool", {"r0"}, {"p"});
  pool.attrs["kernel_shape"] = ints_attr({2, 2});
  pool.attrs["strides"] = ints_attr({2, 2});
  b.conv("p", "c1", 16, 16, 3, 1, false);
  b.batchnorm("c1", "b1", 16);
  b.node("Relu", {"b1"}, {"r1"});
  b.conv("r1", "c2", 16, 16, 3, 1, false);
  b.batchnorm("c2", "b2", 16);
  b.node("Add", {"b2", "p"}, {"s"});
  b.node("Relu", {"s"}, {"y1"});
  b.node("GlobalAveragePool", {"y1"}, {"g"});
  b.conv("g", "e", 16, 16, 1, 1, true);
  b.node("HardSigmoid", {"e"}, {"hs"});
  b.node("Mul", {"y1", "hs"}, {"m"});
  b.conv("m", "c3", 16, 6, 1, 1, true);
  b.node("Relu", {"c3"}, {"r3"});
  b.conv("r3", "y", 6, 4, 3, 1, true);
  b.output("y");
  return b.finish();
}

}  // namespace

TEST(CudaConvFusion, NhwcStorageMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  NhwcOptIn opt_in;
  for (const Prec& p : kPrecs) {
    if (!*p.name) continue;  // float32 engines stay NCHW
    SCOPED_TRACE(p.name);
    const ir::Graph original = nhwc_model();
    ir::Graph g = original;
    passes::optimize_graph(g);
    set_precision(g, p.name);
    const auto feeds = feeds_for(g);
    const auto want = cudatest::run_cpu(original, feeds);
    const auto got = cudatest::run_cuda(g, feeds);
    // Five convolutions deep.
    cudatest::expect_tensors_close(got.at("y"), want.at("y"), 4 * p.atol, 4 * p.rtol);
    const std::string tactics = tactics_of(g);
    EXPECT_NE(tactics.find("+nhwc"), std::string::npos) << tactics;
    EXPECT_NE(tactics.find("+reformat"), std::string::npos) << tactics;
  }
  // KILNRT_CUDA_NHWC=0: nothing is NHWC. Unset: the plan's prediction (2 reformats for 7 NHWC layers: a win).
  setenv("KILNRT_CUDA_NHWC", "0", 1);
  ir::Graph g = nhwc_model();
  passes::optimize_graph(g);
  set_precision(g, "fp16");
  EXPECT_EQ(tactics_of(g).find("nhwc"), std::string::npos);
  unsetenv("KILNRT_CUDA_NHWC");
  EXPECT_NE(tactics_of(g).find("+nhwc"), std::string::npos);
}

namespace {

// Pooling, depthwise conv, squeeze-excite (ReduceMean over H,W, 1x1 convs, Sigmoid, Mul), a ConvNeXt-style
// Transpose(0,2,3,1) -> per-channel Mul -> Transpose(0,3,1,2), a [C,1,1] layer scale and a residual Add, then three
// heads: a conv, ReduceMean without keepdims, GlobalAveragePool.
ir::Graph nhwc_cnn_model() {
  GraphBuilder b;
  b.input("x", {2, 8, 16, 16});
  b.conv("x", "c0", 8, 16, 3, 1, true);
  b.node("Relu", {"c0"}, {"r0"});
  ir::Node& mp = b.node("MaxPool", {"r0"}, {"p"});
  mp.attrs["kernel_shape"] = ints_attr({3, 3});
  mp.attrs["strides"] = ints_attr({2, 2});
  mp.attrs["pads"] = ints_attr({1, 1, 1, 1});
  b.conv("p", "dw", 16, 16, 3, 16, true);
  b.node("Sigmoid", {"dw"}, {"dws"});
  b.node("Mul", {"dw", "dws"}, {"d"});
  ir::Node& mean = b.node("ReduceMean", {"d"}, {"m"});
  mean.attrs["axes"] = ints_attr({2, 3});
  b.conv("m", "e1", 16, 4, 1, 1, true);
  b.node("Relu", {"e1"}, {"e1r"});
  b.conv("e1r", "e2", 4, 16, 1, 1, true);
  b.node("Sigmoid", {"e2"}, {"s"});
  b.node("Mul", {"d", "s"}, {"se"});
  ir::Node& ap = b.node("AveragePool", {"se"}, {"a"});
  ap.attrs["kernel_shape"] = ints_attr({2, 2});
  ap.attrs["strides"] = ints_attr({2, 2});
  b.node("Transpose", {"a"}, {"t1"}).attrs["perm"] = ints_attr({0, 2, 3, 1});
  b.node("Mul", {"t1", b.random_constant("gamma", {16})}, {"t2"});
  b.node("Transpose", {"t2"}, {"t3"}).attrs["perm"] = ints_attr({0, 3, 1, 2});
  b.node("Mul", {"t3", b.random_constant("scale", {16, 1, 1})}, {"t4"});
  b.node("Add", {"t4", "a"}, {"t5"});
  b.conv("t5", "y", 16, 8, 3, 1, true);
  ir::Node& m2 = b.node("ReduceMean", {"t5"}, {"y2"});
  m2.attrs["axes"] = ints_attr({2, 3});
  m2.attrs["keepdims"] = int_attr(0);
  b.node("GlobalAveragePool", {"t5"}, {"y3"});
  b.output("y");
  b.output("y2");
  b.output("y3");
  return b.finish();
}

// The tactics of the plan's nodes of one op type, joined.
std::string tactics_of_op(const ir::Graph& g, const std::string& op) {
  kilnrt::cuda::ContextGuard guard(0);
  backends::cuda::CudaPlan plan(g, 0);
  std::map<std::string, std::string> op_of;
  for (const ir::Node& n : g.nodes) op_of[n.name] = n.op_type;
  std::string s;
  for (const auto& [node, t] : plan.tactics())
    if (op_of[node] == op) s += t + " ";
  return s;
}

}  // namespace

TEST(CudaConvFusion, NhwcPoolingReductionsSqueezeExciteAndTransposesMatchCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  NhwcOptIn opt_in;
  for (const Prec& p : kPrecs) {
    if (!*p.name) continue;
    SCOPED_TRACE(p.name);
    const ir::Graph original = nhwc_cnn_model();
    ir::Graph g = original;
    passes::optimize_graph(g);
    set_precision(g, p.name);
    const auto feeds = feeds_for(g);
    const auto want = cudatest::run_cpu(original, feeds);
    const auto got = cudatest::run_cuda(g, feeds);
    for (const char* o : {"y", "y2", "y3"}) {
      SCOPED_TRACE(o);
      cudatest::expect_tensors_close(got.at(o), want.at(o), 4 * p.atol, 4 * p.rtol);
    }
    EXPECT_NE(tactics_of_op(g, "MaxPool").find("+nhwc"), std::string::npos) << tactics_of(g);
    EXPECT_NE(tactics_of_op(g, "AveragePool").find("+nhwc"), std::string::npos) << tactics_of(g);
    EXPECT_NE(tactics_of_op(g, "ReduceMean").find("+nhwc"), std::string::npos) << tactics_of(g);
    EXPECT_NE(tactics_of_op(g, "GlobalAveragePool").find("+nhwc"), std::string::npos) << tactics_of(g);
    const std::string tr = tactics_of_op(g, "Transpose");
    const size_t first_view = tr.find("+nhwc-view");
    ASSERT_NE(first_view, std::string::npos) << tr;
    EXPECT_NE(tr.find("+nhwc-view", first_view + 1), std::string::npos) << "both Transposes are views: " << tr;
    EXPECT_NE(tactics_of_op(g, "Add").find("+nhwc"), std::string::npos) << tactics_of(g);
  }
}

namespace {

// Spatial reductions of a wide NHWC value (40 channels, 16 x 16): the [N, H*W, C] kernel of
// ops/reduce/reductions/cuda/reduce_nhwc.cu (mean, max, sum), 40 channels leaving a partial 32-channel tile.
ir::Graph nhwc_reduction_model() {
  GraphBuilder b;
  b.input("x", {3, 8, 16, 16});
  b.conv("x", "c", 8, 40, 3, 1, true);
  b.node("Relu", {"c"}, {"r"});
  b.node("ReduceMean", {"r"}, {"mean"}).attrs["axes"] = ints_attr({2, 3});
  b.node("GlobalMaxPool", {"r"}, {"max"});
  const std::string axes = b.constant("axes", Tensor::from_vector(std::vector<int64_t>{-1, -2}, DType::kInt64, {2}));
  b.node("ReduceSum", {"r", axes}, {"sum"}).attrs["keepdims"] = int_attr(0);
  for (const char* o : {"mean", "max", "sum"}) b.output(o);
  return b.finish();
}

}  // namespace

TEST(CudaConvFusion, NhwcWideSpatialReductionsMatchCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  NhwcOptIn opt_in;
  for (const Prec& p : kPrecs) {
    if (!*p.name) continue;
    SCOPED_TRACE(p.name);
    const ir::Graph original = nhwc_reduction_model();
    ir::Graph g = original;
    passes::optimize_graph(g);
    set_precision(g, p.name);
    const auto feeds = feeds_for(g);
    const auto want = cudatest::run_cpu(original, feeds);
    const auto got = cudatest::run_cuda(g, feeds);
    for (const char* o : {"mean", "max", "sum"}) {
      SCOPED_TRACE(o);
      cudatest::expect_tensors_close(got.at(o), want.at(o), 4 * p.atol, 4 * p.rtol);
    }
    for (const char* op : {"ReduceMean", "GlobalMaxPool", "ReduceSum"})
      EXPECT_NE(tactics_of_op(g, op).find("+nhwc"), std::string::npos) << op << ": " << tactics_of(g);
  }
}
