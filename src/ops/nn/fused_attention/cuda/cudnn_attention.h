// cuDNN's fused scaled-dot-product attention (cuDNN 9 graph / backend API) as a tactic of the CUDA FusedAttention
// layer (fused_attention_layer.cc).
//
// The layer's problem — Q [b0, b1, Sq, D], K [b0, b1, Sk, D], V [b0, b1, Sk, Dv] read through their element strides
// (the packed Q | K | V projection in place: no copy), the optional additive mask broadcast over (b0, b1, Sq, Sk),
// O [b0, b1, Sq, Dv] written through its strides — is described to cuDNN as one operation graph:
//   S = matmul(Q, K^T)  ->  S * scale (a by-value scalar)  ->  [+ mask]  ->  softmax (reduce max, sub, exp,
//   reduce sum, div)  ->  O = matmul(P, V)
// with float32 virtual intermediates and the softmax statistics (log-sum-exp per row) as an output in the workspace
// (cuDNN 9.14's flash attention fprop engine on the H100 takes only this form, with P in 16 bits; the other forms
// are tried after it). The engine configurations come from cuDNN's heuristic list (mode A); their execution plans are
// built once per cuDNN handle and shape at the first run of that shape (the engine's warm-up run: never inside a
// capture) and cached with the handle (LibraryHandles::cudnn_plans, released before it). A run makes a variant pack
// and calls cudnnBackendExecute on the caller's stream (CUDA-graph capturable). The statistics and cuDNN's workspace
// come from the context workspace (LayerLaunch::workspace): a plan needing more is refused.
//
// Only where cuDNN is known to apply is it tried: 16-bit storage (fp16 / bf16), D == Dv in {64, 128}, unit inner
// strides, 16-byte aligned operands, a mask with unit key stride. Everything else keeps the kernel.
//
// Choice at build: under the builder's TacticTimingScope (ops/cuda/tactic_timing.h: CUDA-graph replays, timing
// cache) a FusedAttention layer with static shapes and 16-bit storage times the kernel (incumbent) against up
// to kCudnnAttentionMaxConfigs of cuDNN's configurations and stores the winner as the node's string attribute
// kAttentionTacticAttr = "<GPU>|sm_XY#kernel", "...#cudnn" (configuration 0) or "...#cudnn:<i>"; loading reads it
// and never times (<i> indexes the heuristic list of the cuDNN the engine runs with: under another cuDNN version it
// may name another configuration, still correct). cuDNN missing, too old, or refusing the graph leaves no cuDNN
// candidate: the kernel stays, silently (debug log). A stored cuDNN choice that cannot be planned at run (another
// cuDNN) falls back to the kernel with one warning (tuning_stats().fallbacks counts it).
//
// Fully masked rows (every key -inf): the kernel gives uniform weights, or zeros with zero_masked_rows = 1 (dynamo's
// NaN guard, BERT's exports); cuDNN's flash kernels give zeros. So with a mask cuDNN is a candidate only for
// zero_masked_rows = 1 nodes (cudnn_attention_test.cc checks the zeros); without a mask no row is
// fully masked.
//
// KILNRT_CUDNN_ATTENTION: "0" = never (build times nothing, a stored cuDNN choice runs the kernel: before/after on
// one engine file), "force" = at build the fastest cuDNN configuration whenever one plans and runs (tests), unset /
// other = timed.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/fused_attention/cuda/attention.h"

namespace kilnrt::backends::cuda {

constexpr const char* kAttentionTacticAttr = "kilnrt_attention_tactic";

// "" when cuDNN's SDPA may be tried for these arguments (the layer's kernel arguments), else why not.
std::string sdpa_precheck(const kilnrt::cuda::kernels::AttentionArgs& a, bool zero_masked_rows);
// The shape part of a plan's cache key: dtype, dims, strides, mask strides, scale.
std::string sdpa_problem_key(const kilnrt::cuda::kernels::AttentionArgs& a);
// "<GPU>|sm_XY" of a tuning_device_key(): what a stored choice depends on (not the cuDNN version: a plan that no
// longer builds falls back at run).
std::string attention_device_part(const std::string& device_key);
// KILNRT_CUDNN_ATTENTION: 0 off, 1 timed (default), 2 force.
int cudnn_attention_mode();

// Attention calls cuDNN ran in this process (tests: proves the tactic ran, not the kernel after a silent fallback).
int64_t cudnn_attention_runs();
// What the last search for plans found: the plans (graph variant, engine configuration, workspace), the time it took
// and what cuDNN refused (status, cudnnGetLastErrorString); "" before any search (tests, the results file).
std::string cudnn_attention_last_report();

constexpr int kCudnnAttentionMaxConfigs = 4;  // engine configurations of cuDNN's heuristic list timed at build

struct CudnnSdpaPlan;  // one execution plan (cudnn_attention.cc); cached per cuDNN handle (LibraryHandles)

class CudnnAttention {
 public:
  CudnnAttention();
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // Called once the layer exists: reads a stored choice, or times the kernel against cuDNN's engine configurations
  // under an open tuning scope. `enqueue(l)` runs the whole layer (which calls run() below).
  void setup(const LayerCreateArgs& a, bool zero_masked_rows, const std::function<void(LayerLaunch&)>& enqueue);
  bool uses_cudnn() const { return forced_ >= 0 || (forced_ == kNone && config_ >= 0 && !failed_.load()); }
  // True when cuDNN ran the attention on l.stream (or, while listing at build, nothing must run); false: the caller
  // runs its kernel. Throws naming `node` when a forced (timing) configuration cannot plan, or when cuDNN fails at
  // execution.
  bool run(const kilnrt::cuda::kernels::AttentionArgs& a, LayerLaunch& l, const std::string& node);

 private:
  static constexpr int kNone = -3, kList = -2, kForceKernel = -1;
  // Plan `index` of the problem on l's cuDNN handle (searched once per handle and problem); `available` (listing):
  // searches for up to kCudnnAttentionMaxConfigs and returns how many plan. Throws kUnsupported with cuDNN's reasons.
  std::shared_ptr<CudnnSdpaPlan> plan_for(const kilnrt::cuda::kernels::AttentionArgs& a, LayerLaunch& l, int index,
                                          const std::string& node, int* available);
  int config_ = -1;     // the node's choice: -1 the kernel, else cuDNN's engine configuration (heuristic order)
  int forced_ = kNone;  // at build: kList, kForceKernel or a configuration to time
  int listed_ = 0;      // configurations found by the last listing
  bool zero_masked_rows_ = false;
  std::atomic<bool> failed_{false};  // the chosen plan could not be built here: the kernel from then on
};

}  // namespace kilnrt::backends::cuda
