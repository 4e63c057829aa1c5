// cuDNN's fused scaled-dot-product attention (cuDNN 9 graph / backend API) as a tactic of the CUDA FusedAttention
// layer (layers_attention.cc), issue 7.
//
// The layer's problem — Q [b0, b1, Sq, D], K [b0, b1, Sk, D], V [b0, b1, Sk, Dv] read through their element strides
// (the packed Q | K | V projection in place: no copy), the optional additive mask broadcast over (b0, b1, Sq, Sk),
// O [b0, b1, Sq, Dv] written through its strides — is described to cuDNN as one operation graph:
//   S = matmul(Q, K^T)  ->  S * scale (a by-value scalar)  ->  [+ mask]  ->  softmax (reduce max, sub, exp,
//   reduce sum, div)  ->  O = matmul(P, V)
// with float32 virtual intermediates (the pattern cuDNN's flash attention fprop engines take). The graph, the engine
// (cuDNN's heuristic list, first one that finalizes) and the execution plan are built once per (cuDNN handle, shape)
// at the first run of that shape (the engine's warm-up run: never inside a capture) and kept on the layer; a run
// makes a variant pack and calls cudnnBackendExecute on the caller's stream (capturable). The workspace cuDNN asks
// for comes from the context workspace (LayerLaunch::workspace): a plan needing more is refused.
//
// Only where cuDNN is known to apply is it tried: 16-bit storage (fp16 / bf16), D == Dv in {64, 128}, unit inner
// strides, 16-byte aligned operands, a mask with unit key stride. Everything else keeps the kernel.
//
// Choice at build: under the builder's tuning scope (conv_tactics.h: same timing machinery, CUDA-graph replays,
// timing cache) a FusedAttention layer with static shapes times the kernel (incumbent) against cuDNN and stores the
// winner as the node's string attribute kAttentionTacticAttr = "<GPU>|sm_XY#cudnn" (or "#kernel"); loading reads it
// and never times. cuDNN missing, too old, or refusing the graph makes the cuDNN candidate fail: the kernel stays,
// silently (debug log). A stored "cudnn" that cannot be planned at run (another cuDNN) falls back to the kernel with
// one warning (tuning_stats().fallbacks counts it).
//
// Fully masked rows (every key -inf): the kernel gives uniform weights, or zeros with zero_masked_rows = 1 (dynamo's
// NaN guard, BERT's exports); cuDNN's flash kernels give zeros. So with a mask cuDNN is a candidate only for
// zero_masked_rows = 1 nodes (tests/cpp/test_cuda_cudnn_attention.cc checks the zeros); without a mask no row is
// fully masked.
//
// KILNRT_CUDNN_ATTENTION: "0" = never (build times nothing, a stored "cudnn" runs the kernel: before/after on one
// engine file), "force" = at build choose cuDNN whenever it plans and runs (tests), unset / other = timed.
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backends/cuda/cuda_layer.h"
#include "backends/cuda/kernels/attention.h"

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
// Why cuDNN refused the last problem it could not plan (status codes and cudnnGetLastErrorString per graph variant
// and engine), "" when none was refused (tests and the results file).
std::string cudnn_attention_last_refusal();

struct CudnnSdpaPlan;  // descriptors of one planned problem (cudnn_attention.cc)

class CudnnAttention {
 public:
  CudnnAttention();
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // Called once the layer exists: reads a stored choice, or times kernel vs cuDNN under an open tuning scope.
  // `enqueue(l)` runs the whole layer (which calls run() below).
  void setup(const LayerCreateArgs& a, bool zero_masked_rows, const std::function<void(LayerLaunch&)>& enqueue);
  bool uses_cudnn() const { return forced_ == 1 || (chosen_ && forced_ < 0 && !failed_.load()); }
  // True when cuDNN ran the attention on l.stream; false: the caller runs its kernel. Throws naming `node` when a
  // forced (timing) run cannot plan, or when cuDNN fails at execution.
  bool run(const kilnrt::cuda::kernels::AttentionArgs& a, LayerLaunch& l, const std::string& node);

 private:
  std::shared_ptr<CudnnSdpaPlan> plan_for(const kilnrt::cuda::kernels::AttentionArgs& a, LayerLaunch& l,
                                          const std::string& node);
  bool chosen_ = false;            // the node's choice is cuDNN
  int forced_ = -1;                // timing: 0 kernel, 1 cuDNN, -1 as chosen
  bool zero_masked_rows_ = false;
  std::atomic<bool> failed_{false};  // a chosen cuDNN plan could not be built here: kernel from then on
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<CudnnSdpaPlan>> plans_;  // (handle, problem) -> plan (null: refused)
  std::map<std::string, std::string> failure_;                   // why cuDNN refused (null plans)
};

}  // namespace kilnrt::backends::cuda
