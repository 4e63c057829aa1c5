// What an Engine holds once loaded: the optimized graph, its metadata and the backend plan.
#pragma once
#include <memory>

#include "backends/cpu/cpu_executor.h"
#include "engine/engine_file.h"
#include "ir/graph.h"
#include "kilnrt/engine.h"

namespace kilnrt {
namespace backends::cuda {
class CudaPlan;
}

struct EngineImpl {
  ir::Graph graph;
  engine::EngineMetadata meta;
  EngineHeaderInfo header;
  std::unique_ptr<backends::cpu::CpuPlan> cpu_plan;
  // CUDA engines: the plan on the device chosen at load (layers, uploaded weights). shared_ptr: the type is
  // incomplete in CPU-only builds.
  std::shared_ptr<backends::cuda::CudaPlan> cuda_plan;
  int cuda_device = -1;  // the device ordinal cuda_plan lives on
  // CUDA engines: activation memory per profile at its max shapes (Engine::activation_memory_sizes()); -1 unbounded.
  std::vector<int64_t> activation_bytes;
};

namespace engine {
// Checks `shape` for input `info` against its declared dims and the engine's profiles; throws kInvalidArgument
// naming the input and the allowed range.
void validate_input_shape(const TensorInfo& info, const std::vector<std::vector<InputProfile>>& profiles,
                          const Shape& shape);
// Checks run() inputs: every engine input present (and no unknown names), defined, of the right dtype, shapes valid
// and equal to those set with set_input_shape (`set_shapes`). Throws kInvalidArgument naming the input.
void validate_run_inputs(const Engine& engine, const std::map<std::string, Tensor>& inputs,
                         const std::map<std::string, Shape>& set_shapes);
}  // namespace engine

}  // namespace kilnrt
