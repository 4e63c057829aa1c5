// FusedConv's input activation on the CUDA backend (passes/move_input_activation.h). The tiled NHWC
// depthwise kernel applying it on load (ops/nn/conv/cuda/nhwc_depthwise.h) against a CPU reference computed here (the
// input activated and rounded to 16 bits, double accumulation), HardSigmoid / Sigmoid included (act(0) != 0: the zero
// padding must stay zero); then efficientnet-style blocks (expand 1x1 + SiLU / HardSwish -> depthwise -> squeeze-
// excite -> project + residual) through optimize_graph and the CUDA layers against the CPU reference of the original
// graph, on every path the depthwise layer can take: the tiled kernel (fp16 / bf16 NHWC), the in-place activation
// before cuDNN (fp32, fp16 NCHW), before the 8-channel kernel (dilation 2) and before the scalar one (C % 8 != 0).
// GPU tests skip with a message without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "backends/cuda/cuda_plan.h"
#include "ops/nn/conv/cuda/nhwc_depthwise.h"
#include "conv_fusion_test_util.h"
#include "cuda_backend_test_util.h"
#include "depthwise_test_util.h"
#include "passes/optimize.h"

namespace kilnrt::cudatest {
namespace {

namespace k = kilnrt::cuda::kernels;
namespace tc = kilnrt::testing_conv;

TEST(CudaInputActivation, TiledDepthwiseKernelActivatesTheInputOnLoad) {
  KILNRT_SKIP_WITHOUT_GPU();
  GpuStream gpu;
  struct Case {
    int64_t n, c, h, w;
    int ks, s, pad, pad_end;
    bool residual;
    int in_act;
    float in_a, in_b;
    int act;
  };
  const Case cases[] = {
      {4, 96, 24, 24, 3, 2, 1, 1, false, 7, 0, 0, 7},          // efficientnet: silu in, silu out, stride 2
      {2, 144, 29, 30, 5, 2, 2, 2, false, 5, 0, 0, 5},         // mobilenet: hardswish in / out, 5x5 odd / even
      {1, 40, 20, 19, 3, 2, 1, 0, false, 4, 0.2f, 0.5f, 0},    // hard sigmoid (0.5 at 0), end pad differs
      {2, 16, 15, 17, 7, 1, 3, 3, false, 6, 0, 0, 1},          // sigmoid in, 7x7, relu out
      {3, 8, 9, 11, 3, 1, 1, 1, true, 8, 0, 0, 1},             // gelu in, residual + relu, C = 8
      {1, 200, 10, 13, 5, 1, 2, 2, false, 2, -0.5f, 0.5f, 0},  // clip in, 25 groups (uneven CTA chunks)
      {1, 72, 1, 1, 3, 1, 1, 1, false, 4, 0.2f, 0.5f, 7},      // 1x1 image: only the centre tap is in the image
  };
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  for (int dt : {1, 2}) {
    auto to_f = [&](uint16_t v) { return from_16bit(dt, v); };
    auto to_16 = [&](float v) { return to_16bit(dt, v); };
    for (const Case& cs : cases) {
      const k::Conv2d p = depthwise_geometry(cs.n, cs.c, cs.h, cs.w, cs.ks, cs.s, cs.pad, cs.pad_end);
      ASSERT_TRUE(k::depthwise_nhwc_tile_geometry(p));
      const DepthwiseOperands16 o = random_depthwise_operands(dt, p, rng, dist);
      std::vector<double> xa(o.x.size());  // in_act(x), rounded to 16 bits as the kernel's shared copy
      for (size_t i = 0; i < o.x.size(); ++i)
        xa[i] = to_f(to_16(static_cast<float>(activate(cs.in_act, to_f(o.x[i]), cs.in_a, cs.in_b))));
      // The reference pads with 0, not in_act(0).
      const std::vector<double> bias_d = doubles_16bit(dt, o.bias), z_d = doubles_16bit(dt, o.z);
      const std::vector<double> ref =
          depthwise_reference(p, xa, doubles_16bit(dt, o.w), &bias_d, cs.residual ? &z_d : nullptr, cs.act, 0, 0);
      k::DepthwiseEpilogue e;
      e.act = cs.act;
      e.in_act = cs.in_act;
      e.in_a = cs.in_a;
      e.in_b = cs.in_b;
      const double tol = dt == 1 ? 4e-3 : 2.4e-2;  // the output's rounding, float32 vs double math
      ASSERT_NO_FATAL_FAILURE(expect_tile_kernel_matches(
          gpu, dt, p, o, e, true, cs.residual, ref, tol,
          (::testing::Message() << (dt == 1 ? "fp16" : "bf16") << " n " << cs.n << " c " << cs.c << " " << cs.h << "x"
                                << cs.w << " k " << cs.ks << " s " << cs.s << " in_act " << cs.in_act << " act "
                                << cs.act)
              .GetString()));
    }
  }
}

// ---- whole blocks through optimize_graph and the CUDA layers ----------------------------------------------------

struct EnvVar {
  const char* name;
  EnvVar(const char* n, const char* v) : name(n) {
    if (v)
      setenv(n, v, 1);
    else
      unsetenv(n);
  }
  ~EnvVar() { unsetenv(name); }
};

// x [2, c, 12, 12] -> expand 1x1 to 4c + bias + act -> depthwise k x k (dilation d, stride s) + bias + SiLU ->
// squeeze-excite (mean, 1x1 + SiLU, 1x1 + Sigmoid, Mul) -> project 1x1 to c (+ x when stride 1).
ir::Graph block(const std::string& act, int64_t c, int64_t k, int64_t stride, int64_t dil) {
  tc::GraphBuilder b;  // opset 17: ReduceMean's axes an attribute
  b.input("x", {2, c, 12, 12});
  const int64_t e = 4 * c;
  b.conv("x", "ex", c, e, 1, 1, true);
  std::string ea = "ea";
  if (act == "Silu") {
    b.node("Sigmoid", {"ex"}, {"exs"});
    b.node("Mul", {"ex", "exs"}, {"ea"});
  } else {
    ir::Node& n = b.node(act, {"ex"}, {"ea"});
    if (act == "HardSigmoid") n.attrs["alpha"] = tc::float_attr(0.25f);
  }
  ir::Node& dw = b.conv(ea, "dw", e, e, k, e, true, stride);
  dw.attrs["dilations"] = tc::ints_attr({dil, dil});
  dw.attrs["pads"] = tc::ints_attr({dil * (k / 2), dil * (k / 2), dil * (k / 2), dil * (k / 2)});
  b.node("Sigmoid", {"dw"}, {"dws"});
  b.node("Mul", {"dw", "dws"}, {"da"});
  b.node("ReduceMean", {"da"}, {"gap"}).attrs["axes"] = tc::ints_attr({2, 3});
  b.conv("gap", "s1", e, 8, 1, 1, true);
  b.node("Sigmoid", {"s1"}, {"s1s"});
  b.node("Mul", {"s1", "s1s"}, {"s1a"});
  b.conv("s1a", "s2", 8, e, 1, 1, true);
  b.node("Sigmoid", {"s2"}, {"gate"});
  b.node("Mul", {"da", "gate"}, {"se"});
  return tc::finish_block(b, "se", e, c, stride);
}

struct Config {
  const char* what;
  const char* act;
  int64_t c, k, stride, dil;
  const char* precision;  // "" = strict fp32
  const char* nhwc;       // KILNRT_CUDA_NHWC: "1", "0"
  const char* dw_tactic;  // expected in the depthwise layer's tactic
};

void check_block(const Config& cfg) {
  SCOPED_TRACE(::testing::Message() << cfg.what << ": " << cfg.act << " c " << cfg.c << " k " << cfg.k << " s "
                                    << cfg.stride << " dil " << cfg.dil << " '" << cfg.precision << "' nhwc "
                                    << cfg.nhwc);
  EnvVar nhwc("KILNRT_CUDA_NHWC", cfg.nhwc);
  EnvVar on("KILNRT_INPUT_ACT", "1");  // the move is opt-in
  const ir::Graph original = block(cfg.act, cfg.c, cfg.k, cfg.stride, cfg.dil);
  ir::Graph g = original;
  passes::optimize_graph(g);
  std::string dw_name;
  for (const ir::Node& n : g.nodes)
    if (n.has_attr("input_activation")) dw_name = n.name;
  ASSERT_FALSE(dw_name.empty()) << "the expand activation was not moved: " << g.to_string();
  if (*cfg.precision)
    for (ir::Node& n : g.nodes) n.attrs["kilnrt_precision"] = tc::string_attr(cfg.precision);
  std::map<std::string, Tensor> feeds;
  feeds["x"] = tc::random_tensor({2, cfg.c, 12, 12}, 21, -2.f, 2.f);
  const auto want = run_cpu(original, feeds);
  const auto got = run_cuda(g, feeds);
  const std::string out = cfg.stride == 1 ? "y" : "pr";
  const std::string p = cfg.precision;
  // Four convolutions and the squeeze-excite deep (fp32: float32 accumulation orders only).
  const double atol = p.empty() ? 1e-3 : p == "fp16" ? 0.12 : 0.8, rtol = p.empty() ? 1e-3 : p == "fp16" ? 0.04 : 0.2;
  expect_tensors_close(got.at(out), want.at(out), atol, rtol);
  kilnrt::cuda::ContextGuard guard(0);
  backends::cuda::CudaPlan plan(g, 0);
  std::string dw_tactic, all;
  for (const auto& [node, t] : plan.tactics()) {
    all += node + "=" + t + " ";
    if (node == dw_name) dw_tactic = t;
  }
  EXPECT_NE(dw_tactic.find(cfg.dw_tactic), std::string::npos) << dw_tactic << "\nall: " << all;
}

TEST(CudaInputActivation, EfficientnetBlockOnTheTiledKernelMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (const char* prec : {"fp16", "bf16"}) {
    check_block({"tile", "Silu", 8, 3, 1, 1, prec, "1", "depthwise-tile+kernel:conv-epilogue(in-silu+bias+silu)"});
    check_block({"tile", "Silu", 16, 5, 2, 1, prec, "1", "depthwise-tile+kernel:conv-epilogue(in-silu+bias+silu)"});
    check_block({"tile", "HardSwish", 8, 3, 2, 1, prec, "1", "depthwise-tile+kernel:conv-epilogue(in-hardswish"});
    check_block({"tile", "HardSigmoid", 8, 3, 1, 1, prec, "1", "depthwise-tile+kernel:conv-epilogue(in-hardsigmoid"});
  }
}

TEST(CudaInputActivation, InPlaceActivationOnTheOtherPathsMatchesCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  // float32 engines: cuDNN NCHW.
  check_block({"fp32", "Silu", 8, 3, 1, 1, "", "1", "cudnn:conv-fwd-fp32+kernel:conv-epilogue(in-silu+bias+silu)"});
  check_block({"fp32", "HardSigmoid", 8, 5, 2, 1, "", "1", "conv-epilogue(in-hardsigmoid"});
  for (const char* prec : {"fp16", "bf16"}) {
    // NCHW 16-bit: cuDNN.
    check_block({"nchw", "Silu", 8, 3, 1, 1, prec, "0", "-acc32+kernel:conv-epilogue(in-silu+bias+silu)"});
    // NHWC, dilation 2: the 8-channel kernel; 3 -> 12 channels: the scalar kernel (C % 8 != 0).
    check_block({"vec8", "Silu", 8, 3, 1, 2, prec, "1", "nhwc:kernel:depthwise+kernel:conv-epilogue(in-silu"});
    check_block({"scalar", "HardSwish", 3, 3, 1, 1, prec, "1", "conv-epilogue(in-hardswish+bias+silu)"});
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
