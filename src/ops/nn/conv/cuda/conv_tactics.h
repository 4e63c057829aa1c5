// Convolution tactics of the CUDA backend and their timing at build time.
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
// Build-time timing: the builder opens a ConvTuningScope around the planning of a CUDA engine (engine/cuda_engine.cc).
// Each conv layer created under it with static shapes times its candidate tactics on the target GPU (private stream,
// CUDA events, median of a few runs) for each storage layout it can run in (NCHW, and NHWC when it has the K,R,S,C
// weight copy), and records the winners as the node's string attribute kConvTacticAttr ("nhwc-f16=cublaslt:0;
// nchw-f16=cudnn:1"), which the engine file stores with the node: loading reads it and never times. Engine files
// without the attribute (older ones, dynamic shapes) keep the heuristic.
//
// Timing cache: winners are also kept per process, keyed by GPU name + SM + cuDNN version + conv geometry + storage
// dtype + layout + epilogue, so building the same model twice does not time again. KILNRT_TIMING_CACHE=FILE also
// reads the cache from FILE (one "key<TAB>choice" per line) at first use and appends every new entry.
// KILNRT_CONV_TUNING=0 turns the timing off (the heuristic, as engines built before it).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

constexpr const char* kConvTacticAttr = "kilnrt_conv_tactic";

enum class ConvPath { kHeuristic, kCudnn, kCudnnFused, kCublasLt, kPwKernel };
struct ConvChoice {
  ConvPath path = ConvPath::kHeuristic;
  int algo = 0;  // cuDNN algorithm, or the index in cuBLASLt's heuristic list
  bool operator==(const ConvChoice& o) const { return path == o.path && algo == o.algo; }
};
std::string choice_to_string(const ConvChoice& c);  // "cudnn:1", "cudnn-fused:1", "cublaslt:0", "pw-mma:1"
bool parse_choice(const std::string& s, ConvChoice* out);            // false when malformed
// "nhwc-f16=cublaslt:0;nchw-f16=cudnn:1" <-> {layout-dtype label: choice}. Malformed entries are dropped.
std::map<std::string, ConvChoice> parse_tactic_attr(const std::string& s);
std::string format_tactic_attr(const std::map<std::string, ConvChoice>& m);
// The label of a storage layout + dtype: "nchw-f32", "nhwc-f16", "nchw-bf16".
std::string layout_label(bool nhwc, DType storage);

// ---- process-wide timing cache ----
bool timing_cache_find(const std::string& key, ConvChoice* out);
void timing_cache_store(const std::string& key, const ConvChoice& c);
// Any value (GEMM algorithms, gemm_tactics.h, store their own encoding); find checks nothing.
bool timing_cache_find_raw(const std::string& key, std::string* value);
void timing_cache_store_raw(const std::string& key, const std::string& value);
// GPU name + SM + cuDNN + cuBLASLt versions of `device` (the device part of every cache key), remembered per device.
std::string tuning_device_key(int device);
void timing_cache_clear();  // forgets the in-memory entries (tests); the file stays
struct TuningStats {
  int timed = 0;       // layouts timed (one per conv layer and layout)
  int cache_hits = 0;  // layouts answered by the timing cache
  int gemm_timed = 0;       // GEMM layers timed (gemm_tactics.h)
  int gemm_cache_hits = 0;  // GEMM layers answered by the timing cache
  int fallbacks = 0;   // stored choices that did not apply at run (heuristic used instead, with a warning)
};
TuningStats tuning_stats();
void note_tactic_fallback();
void note_gemm_tuning(bool cache_hit);
// KILNRT_CONV_LT_NCHW=1: the cuBLASLt tactic also for NCHW 1x1 convolutions on [N,C,1,1] values (squeeze-excite;
// the same bytes as NHWC). Off by default until measured on the GPU.
bool conv_lt_nchw_enabled();
// KILNRT_CONV_PW_KERNEL=0: no pw-mma candidates (kilnrt's own 1x1-conv GEMM) in the timing.
bool pw_kernel_enabled();

// What a conv layer asks the tuner to time for one layout.
struct ConvTuneRequest {
  std::string label;      // layout_label()
  std::string key;        // geometry + dtype + layout + epilogue (the device part is added by the scope)
  LayerLaunch launch;     // shapes, dtypes and layout flags; the tuner fills pointers, stream, handles, workspace
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

class ConvTuningScope {
 public:
  // `out`: node name -> kConvTacticAttr value, filled by the layers created while the scope is open on this thread.
  ConvTuningScope(int device, std::map<std::string, std::string>* out);
  ~ConvTuningScope();
  ConvTuningScope(const ConvTuningScope&) = delete;
  ConvTuningScope& operator=(const ConvTuningScope&) = delete;
  static ConvTuningScope* current();  // the scope open on this thread, or nullptr (also when KILNRT_CONV_TUNING=0)
  static ConvTuningScope* open_scope();  // the scope open on this thread whatever KILNRT_CONV_TUNING says

  // Times every candidate of `req` (run(choice, launch) enqueues the layer with that choice on launch.stream); the
  // fastest that ran without error wins (a timing-cache hit skips the timing). Returns kHeuristic when none ran.
  ConvChoice tune(ConvTuneRequest& req, const std::function<void(const ConvChoice&, LayerLaunch&)>& run,
                  const std::string& node);
  void record(const std::string& node, const std::string& attr_value);
  // Another attribute than kConvTacticAttr (GEMM layers: kGemmAlgoAttr): stored under "node<TAB>attr" in `out`.
  void record(const std::string& node, const std::string& attr, const std::string& value);

  // The machinery under tune(), for other layers: bind() points the present tensors of `l` at zero-filled scratch
  // buffers and sets stream, library handles and workspace; time_candidates() then runs run(i, l) for each
  // i < count (0 is the incumbent, kept unless another is faster by the factor `margin`: 0.97 = 3%) as tune() does
  // and returns the winner, or -1 when none ran. `label(i)` names candidate i in the debug log. `times` (optional):
  // each candidate's milliseconds per run (-1: it did not run; a candidate dropped after one replay keeps that one).
  void bind(LayerLaunch& l);
  int time_candidates(LayerLaunch& l, int count, const std::function<void(int, LayerLaunch&)>& run,
                      const std::function<std::string(int)>& label, const std::string& node, const std::string& what,
                      double margin = 0.97, std::vector<double>* times = nullptr);

 private:
  struct Resources;
  int device_;
  std::map<std::string, std::string>* out_;
  std::string device_key_;
  std::unique_ptr<Resources> res_;
  ConvTuningScope* previous_;
};

}  // namespace kilnrt::backends::cuda
