// What an Engine holds once loaded: the optimized graph, its metadata and the backend plan.
#pragma once
#include <memory>

#include "backends/cpu/cpu_executor.h"
#include "engine/engine_file.h"
#include "ir/graph.h"
#include "kilnrt/engine.h"

namespace kilnrt {

struct EngineImpl {
  ir::Graph graph;
  engine::EngineMetadata meta;
  EngineHeaderInfo header;
  std::unique_ptr<backends::cpu::CpuPlan> cpu_plan;
};

namespace engine {
// Checks `shape` for input `info` against its declared dims and the engine's profiles; throws kInvalidArgument
// naming the input and the allowed range.
void validate_input_shape(const TensorInfo& info, const std::vector<std::vector<InputProfile>>& profiles,
                          const Shape& shape);
}  // namespace engine

}  // namespace kilnrt
