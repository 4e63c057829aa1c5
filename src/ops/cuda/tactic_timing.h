// Build-time tactic timing of the CUDA layers, shared by every op that times tactics (Conv: conv_tactics.h, GEMM:
// gemm_tactics.h and gemm_weight_layout.h, cuDNN attention: cudnn_attention.h) and by the executor's layout timing
// (backends/cuda/layout_timing.h).
//
// The builder opens a TacticTimingScope around the planning of a CUDA engine (engine/cuda_engine.cc). A layer created
// under it with static shapes times its candidate tactics on the target GPU (private stream, zero-filled scratch
// operands, kReps launches captured into one CUDA graph, median of replays) and records the winner with the scope as
// a node attribute, which the engine file stores with the node: loading reads it and never times. Winners are also
// kept in the process-wide timing cache (cuda/timing_cache.h; KILNRT_TIMING_CACHE=FILE keeps it across processes).
//
// KILNRT_CONV_TUNING=0: current(), which Conv layers ask, answers nullptr (no conv timing); open_scope(), which the
// other timed layers ask, answers the scope whatever it says (GEMM layers have KILNRT_GEMM_TUNING).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/timing_cache.h"
#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

// The timing cache (cuda/timing_cache.h), for the layers in this namespace.
using kilnrt::cuda::timing_cache_clear;
using kilnrt::cuda::timing_cache_find_raw;
using kilnrt::cuda::timing_cache_store_raw;
using kilnrt::cuda::tuning_device_key;

// The label of a storage layout + dtype, part of timing-cache keys and tactic attributes: "nchw-f32", "nhwc-f16",
// "nchw-bf16".
std::string layout_label(bool nhwc, DType storage);

// Process-wide counts of the tactic timing (tests).
struct TuningStats {
  int timed = 0;            // conv layouts timed (one per conv layer and layout)
  int cache_hits = 0;       // conv layouts answered by the timing cache
  int gemm_timed = 0;       // GEMM layers timed (gemm_tactics.h)
  int gemm_cache_hits = 0;  // GEMM layers answered by the timing cache
  int fallbacks = 0;        // stored choices that did not apply at run (heuristic used instead, with a warning)
};
TuningStats tuning_stats();
void note_tactic_fallback();
void note_conv_tuning(bool cache_hit);
void note_gemm_tuning(bool cache_hit);

class TacticTimingScope {
 public:
  // `out`: node name -> recorded attribute value, filled by the layers created while the scope is open on this thread.
  TacticTimingScope(int device, std::map<std::string, std::string>* out);
  ~TacticTimingScope();
  TacticTimingScope(const TacticTimingScope&) = delete;
  TacticTimingScope& operator=(const TacticTimingScope&) = delete;
  static TacticTimingScope* current();     // the scope open on this thread, or nullptr (also when KILNRT_CONV_TUNING=0)
  static TacticTimingScope* open_scope();  // the scope open on this thread whatever KILNRT_CONV_TUNING says

  int device() const { return device_; }
  // Conv layers: kConvTacticAttr (conv_tactics.h), stored under "node" in `out`.
  void record(const std::string& node, const std::string& attr_value);
  // Another attribute (GEMM layers: kGemmAlgoAttr): stored under "node<TAB>attr" in `out`.
  void record(const std::string& node, const std::string& attr, const std::string& value);

  // bind() points the present tensors of `l` at zero-filled scratch buffers and sets stream, library handles and
  // workspace; time_candidates() then runs run(i, l) for each i < count (0 is the incumbent, kept unless another is
  // faster by the factor `margin`: 0.97 = 3%) and returns the winner, or -1 when none ran. `label(i)` names candidate
  // i in the debug log. `times` (optional): each candidate's milliseconds per run (-1: it did not run; a candidate
  // dropped after one replay keeps that one).
  void bind(LayerLaunch& l);
  int time_candidates(LayerLaunch& l, int count, const std::function<void(int, LayerLaunch&)>& run,
                      const std::function<std::string(int)>& label, const std::string& node, const std::string& what,
                      double margin = 0.97, std::vector<double>* times = nullptr);

 private:
  struct Resources;
  int device_;
  std::map<std::string, std::string>* out_;
  std::unique_ptr<Resources> res_;
  TacticTimingScope* previous_;
};

}  // namespace kilnrt::backends::cuda
