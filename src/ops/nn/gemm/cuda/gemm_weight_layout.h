// Build-time choice of the stored layout of FusedMatMul weights.
//
// A FusedMatMul's constant W can be stored [K, N] (trans_b = 0) or transposed, [N, K] (trans_b = 1). cuBLASLt runs
// the two forms of the column-major product D^T = op(W)^T A^T with different kernels, and on the H100 neither wins
// everywhere: BERT b32's QKV and out-projection ran 2.6 % faster with W [N, K], its fc2 10 % slower (2026-11-23,
// bench/gemm_layout_probe.cu). So the builder, before planning, times both forms of each FusedMatMul whose W is a
// float32 constant read by that node only and whose shapes are static: every cuBLASLt heuristic candidate of each form
// on scratch operands (the GEMM tuner's timing, ops/cuda/tactic_timing.h), then the best of each form again,
// interleaved. When the other form is at least 1 % faster, W is transposed in the graph and trans_b flipped:
// the engine stores W that way, and the GEMM tuner (gemm_tactics.h) then times that form's algorithms as usual.
// Decisions are kept in the timing cache ("<device>|wlayout|<problem>" -> "flip" / "keep").
// KILNRT_GEMM_WEIGHT_LAYOUT=0 or KILNRT_GEMM_TUNING=0 turns it off; KILNRT_GEMM_WEIGHT_LAYOUT=transposed flips every
// qualifying W without timing (tests, A/B runs).
#pragma once
#include <string>

namespace kilnrt::ir {
struct Graph;
struct Node;
}  // namespace kilnrt::ir

namespace kilnrt::backends::cuda {

constexpr double kGemmLayoutMargin = 0.99;  // the other form must take at most this fraction of the time

struct GemmLayoutResult {
  int considered = 0;  // FusedMatMul nodes that qualify
  int timed = 0;       // of those, timed on the GPU (the others answered by the timing cache)
  int flipped = 0;     // W transposed
  std::string note;    // one line for the build log
};

// Times and flips as described above, on `device` (a ContextGuard is taken here).
GemmLayoutResult choose_gemm_weight_layouts(ir::Graph& graph, int device);

// W [R, C] -> [C, R] in `graph` (constant and recorded type) and trans_b flipped on `node`: what a flip does (tests).
void flip_fused_matmul_weight(ir::Graph& graph, ir::Node& node);

}  // namespace kilnrt::backends::cuda
