// Convolution tactics of the CUDA backend: the tactic strings, the kConvTacticAttr attribute, the candidates a conv
// layer times at build, and their timing through the shared tactic timing (ops/cuda/tactic_timing.h).
//
// A Conv / FusedConv layer can run one of several tactics (ConvChoice):
//   cudnn:<algo>        legacy cudnnConvolutionForward with cuDNN algorithm <algo>, then the bias / residual /
//                       activation epilogue kernel (or cudnnAddTensor for a plain NCHW bias);
//   cudnn-fused:<algo>  cudnnConvolutionBiasActivationForward: conv + bias + residual (z, alpha2 = 1) + ReLU or
//                       identity in one call (only with a bias and activation none / relu);
//   cublaslt:<i>        1x1, stride 1, no padding, group 1 convolutions on 16-bit NHWC storage as one GEMM
//                       [N*H*W, C] x [K, C]^T with cuBLASLt's BIAS / RELU_BIAS epilogue and the residual as C
//                       (beta = 1); <i> indexes cuBLASLt's heuristic list. Other activations: one activation-only
//                       pass after the GEMM.
//   pw-mma:<v>          the same 1x1 convolutions (C and K multiples of 8) on kilnrt's own tensor-core GEMM with
//                       bias, residual and any activation fused (pointwise_conv.h); <v> is its tile variant.
// Without a choice the layer keeps the heuristic (cudnnGetConvolutionForwardAlgorithm_v7). The heuristic's algorithm
// is itself a candidate: another tactic is recorded only when it is at least 3% faster, so timing never picks
// something slower than what the engine ran before (as measured).
//
// Build-time timing: each conv layer created under the builder's TacticTimingScope (KILNRT_CONV_TUNING not "0") with
// static shapes times its candidate tactics (tune_conv_request) for each storage layout it can run in (NCHW, and NHWC
// when it has the K,R,S,C weight copy), and records the winners as the node's string attribute kConvTacticAttr
// ("nhwc-f16=cublaslt:0;nchw-f16=cudnn:1"), which the engine file stores with the node: loading reads it and never
// times. Engine files without the attribute (older ones, dynamic shapes) keep the heuristic.
//
// Timing cache (cuda/timing_cache.h): winners are stored as choice_to_string() under "<tuning_device_key()>|conv
// <geometry> <layout-dtype> <epilogue>", so building the same model twice does not time again.
// KILNRT_CONV_TUNING=0 turns the timing off (the heuristic, as engines built before it).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/tactic_timing.h"

namespace kilnrt::backends::cuda {

constexpr const char* kConvTacticAttr = "kilnrt_conv_tactic";

enum class ConvPath { kHeuristic, kCudnn, kCudnnFused, kCublasLt, kPwKernel };
struct ConvChoice {
  ConvPath path = ConvPath::kHeuristic;
  int algo = 0;  // cuDNN algorithm, or the index in cuBLASLt's heuristic list
  bool operator==(const ConvChoice& o) const { return path == o.path && algo == o.algo; }
};
std::string choice_to_string(const ConvChoice& c);         // "cudnn:1", "cudnn-fused:1", "cublaslt:0", "pw-mma:1"
bool parse_choice(const std::string& s, ConvChoice* out);  // false when malformed
// "nhwc-f16=cublaslt:0;nchw-f16=cudnn:1" <-> {layout-dtype label: choice}. Malformed entries are dropped.
std::map<std::string, ConvChoice> parse_tactic_attr(const std::string& s);
std::string format_tactic_attr(const std::map<std::string, ConvChoice>& m);

// ---- conv entries of the timing cache (cuda/timing_cache.h): ConvChoice values ----
bool timing_cache_find(const std::string& key, ConvChoice* out);  // false when absent or malformed
void timing_cache_store(const std::string& key, const ConvChoice& c);

// KILNRT_CONV_LT_NCHW=1: the cuBLASLt tactic also for NCHW 1x1 convolutions on [N,C,1,1] values (squeeze-excite;
// the same bytes as NHWC). Off by default until measured on the GPU.
bool conv_lt_nchw_enabled();
// KILNRT_CONV_PW_KERNEL=0: no pw-mma candidates (kilnrt's own 1x1-conv GEMM) in the timing.
bool pw_kernel_enabled();

// What a conv layer asks the tuner to time for one layout.
struct ConvTuneRequest {
  std::string label;   // layout_label() (tactic_timing.h)
  std::string key;     // geometry + dtype + layout + epilogue (tune_conv_request adds the device part)
  LayerLaunch launch;  // shapes, dtypes and layout flags; the tuner fills pointers, stream, handles, workspace
  std::vector<ConvChoice> candidates;
};

// What the tuner needs to know of a conv layer besides its node.
struct ConvTuneInfo {
  DType storage = DType::kFloat32;  // activation storage of the engine (16-bit in --fp16 / --bf16 engines)
  bool nhwc = false;                // the layer can run NHWC (it has the K,R,S,C weight copy)
  bool nhwc_own_kernel = false;     // NHWC runs an own kernel (depthwise): nothing to time there
  bool fused = false;               // FusedConv
  int act = 0;                      // ops::nn::FusedActivation
  std::string epilogue;             // describe_epilogue() ("bias+add+relu"), part of the cache key
};
// One request per layout the layer can run in, with its candidates; empty when a shape is not static.
std::vector<ConvTuneRequest> conv_tune_requests(const ir::Node& node, const ir::Graph& graph, const ConvTuneInfo& info);

// Times every candidate of `req` under `scope` (run(choice, launch) enqueues the layer with that choice on
// launch.stream); the fastest that ran without error wins (a timing-cache hit skips the timing). Returns kHeuristic
// when none ran. Counted in tuning_stats().timed / cache_hits.
ConvChoice tune_conv_request(TacticTimingScope& scope, ConvTuneRequest& req,
                             const std::function<void(const ConvChoice&, LayerLaunch&)>& run, const std::string& node);

}  // namespace kilnrt::backends::cuda
