// What a CUDA plan's build-time timing records (ops/cuda/tactic_timing.h: TacticTimingScope), for the tests of
// timed tactics (src/ops/nn/fused_attention/cuda/cudnn_attention_test.cc,
// src/ops/nn/gemm/cuda/gemm_tactics_test.cc).
#pragma once
#include <map>
#include <string>

#include "ops/cuda/tactic_timing.h"
#include "backends/cuda/cuda_plan.h"
#include "cuda/context_guard.h"

namespace kilnrt::cudatest {

// Plans `g` on device 0 under a tuning scope (as build_engine does); returns what the scope recorded.
inline std::map<std::string, std::string> tune(const ir::Graph& g) {
  std::map<std::string, std::string> rec;
  kilnrt::cuda::ContextGuard guard(0);
  backends::cuda::TacticTimingScope scope(0, &rec);
  backends::cuda::CudaPlan plan(g, 0);
  return rec;
}

}  // namespace kilnrt::cudatest
