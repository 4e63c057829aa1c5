// Storage layout of 16-bit CUDA engines chosen at BUILD time by timing the whole plan on the target GPU.
//
// The NCHW / NHWC storage of 4-D activations (layout_plan.h) is not left to the cost prediction at load
// (predict_nhwc_win): the prediction was wrong on measured models (convnext_tiny b1 paid 46 reformat Transposes in
// NCHW), so the builder measures instead, for engines with static shapes, a Conv / FusedConv and a
// 16-bit precision: it plans the graph once with NHWC storage and once with NCHW, times each whole plan (CUDA-graph
// replays of a CudaRunner on random inputs, interleaved, median of a few rounds), and records the faster one as the
// string attribute kLayoutAttr ("nhwc" / "nchw") of every Conv / FusedConv node. The engine file stores it with the
// nodes; CudaPlan reads it at load and never times.
//
// Conv tactic timing (conv_tactics.h) happens while a plan's layers are created, for both layouts a conv can run
// in, so both timed plans already run the timed tactics of their layout (the second plan is answered by the timing
// cache).
//
// At load, in order: KILNRT_CUDA_NHWC=0 / =1 forces NCHW / NHWC; else the recorded kLayoutAttr; else (engines built
// before this, dynamic shapes, no 16-bit precision) the prediction. Plans with sync points keep NCHW.
// Dynamic-shape engines are not timed (their shape at run is unknown): they keep the prediction.
// At build: KILNRT_CUDA_NHWC=0/1 set, or KILNRT_CUDA_LAYOUT_TIMING=0: no timing, nothing recorded.
#pragma once
#include <map>
#include <string>

namespace kilnrt::ir {
struct Graph;
}

namespace kilnrt::backends::cuda {

constexpr const char* kLayoutAttr = "kilnrt_layout";

// What the plan does with its 4-D activations.
struct LayoutPolicy {
  bool plan = false;                  // run plan_layouts at all (false: everything NCHW)
  bool forced = false;                // NHWC wherever possible, without asking the prediction
  const char* source = "prediction";  // "env", "record", "prediction", "sync-points"
};
// `env`: KILNRT_CUDA_NHWC (nullptr when unset; values other than "0" / "1" count as unset); `record`: the recorded
// layout ("" when none, or an unknown value); `sync_points`: the plan has sync points (segmented runs).
LayoutPolicy layout_policy(const char* env, const std::string& record, bool sync_points);

// The layout recorded in a graph ("nhwc" / "nchw"), "" when no node carries a valid kLayoutAttr.
std::string recorded_layout(const ir::Graph& graph);
// Writes kLayoutAttr = layout on every Conv / FusedConv node ("" erases it).
void set_recorded_layout(ir::Graph& graph, const std::string& layout);

// "" when the builder should time both layouts of `graph`, else why not (a static-shape, 16-bit graph with a conv,
// and neither KILNRT_CUDA_NHWC nor KILNRT_CUDA_LAYOUT_TIMING=0 set).
std::string layout_timing_skip_reason(const ir::Graph& graph);

struct LayoutTimingResult {
  std::string layout;                 // recorded: "nhwc" / "nchw"; "" when not timed (see note)
  double nhwc_ms = -1, nchw_ms = -1;  // median whole-plan time of one run (-1: not measured)
  std::string note;                   // human-readable summary (logged at info level by the builder)
};
// Times both layouts of `graph` on `device` and records the faster (set_recorded_layout). `timed`: the builder's
// map of timed tactics (ops/cuda/tactic_timing.h: TacticTimingScope), filled as in engine::make_cuda_plan (may be
// null: no tactic timing). Needs a GPU; the caller holds a ContextGuard or not (one is taken here).
LayoutTimingResult choose_layout_by_timing(ir::Graph& graph, int device, std::map<std::string, std::string>* timed);

}  // namespace kilnrt::backends::cuda
