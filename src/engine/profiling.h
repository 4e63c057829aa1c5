// Helpers of ExecutionContext::layer_timings() shared by the CPU and CUDA execution contexts.
#pragma once
#include <vector>

#include "kilnrt/engine.h"

namespace kilnrt::engine {

// Keeps the layers that ran at least once (in execution order) and fills each one's tactic ("placement:tactic", as
// `kilnrt inspect` shows it) from the engine's layer list.
std::vector<LayerTiming> finish_layer_timings(const Engine& engine, std::vector<LayerTiming> timings);

}  // namespace kilnrt::engine
