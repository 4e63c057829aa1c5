// Glue between the engine and the CUDA backend. Defined in cuda_engine.cc; in builds without CUDA every function
// throws kUnsupported ("this kilnrt build has no CUDA backend").
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/device_weights.h"
#include "ir/graph.h"
#include "kilnrt/engine.h"

namespace kilnrt::backends::cuda {
class CudaPlan;
}

namespace kilnrt::engine {

struct CudaTarget {
  int device = 0;
  std::string target;  // "sm_90"
  std::string gpu_name;
  int sm_count = 0;
};

// Needs a usable GPU: throws kCuda "no usable CUDA GPU: <reason>" otherwise, and kUnsupported when this build's CUDA
// kernels do not cover the GPU's architecture (cuda/arch_coverage.h: the message names the rebuild). Engine builds and
// loads both start here.
CudaTarget cuda_target(int device);
// Builds the plan (uploads weights) — throws kUnsupported naming an unsupported node. `image`: the engine's stored
// device weights (one allocation + one copy); `record`: the builder's plan, for cuda_device_weights(). `timed`
// (the builder): layers time their tactics on the GPU under a TacticTimingScope (ops/cuda/tactic_timing.h) and put
// node name -> kilnrt_conv_tactic value (other attributes: "node<TAB>attr" -> value) there.
std::shared_ptr<backends::cuda::CudaPlan> make_cuda_plan(const ir::Graph& graph, int device,
                                                         const DeviceWeightImage* image = nullptr, bool record = false,
                                                         std::map<std::string, std::string>* timed = nullptr);
// The device weight image of a recording plan (the builder stores it: engine format v2).
DeviceWeightImage cuda_device_weights(backends::cuda::CudaPlan& plan);
std::vector<std::pair<std::string, std::string>> cuda_tactics(const backends::cuda::CudaPlan& plan);
// Library versions for the engine header ("" when not loaded).
std::string cuda_library_version(int which);  // 0 CUDA runtime, 1 cuDNN, 2 cuBLASLt
std::unique_ptr<ExecutionContext> make_cuda_context(std::shared_ptr<const Engine> engine,
                                                    const ContextOptions& options = {});
// Activation arena bytes at each profile's max shapes (host only: the plan's layout, no CUDA call); -1 where a
// dynamic dim is unbounded. Throws naming the profile when the shapes cannot be planned.
// `inputs` / `outputs`: the engine's I/O (their dtypes say which float32 values are bound in 16 bits: io16).
std::vector<int64_t> cuda_activation_bytes(const backends::cuda::CudaPlan& plan, const std::vector<TensorInfo>& inputs,
                                           const std::vector<TensorInfo>& outputs,
                                           const std::vector<std::vector<InputProfile>>& profiles);
// Sync points of the plan (data-dependent shapes: segmented runs).
int cuda_sync_points(const backends::cuda::CudaPlan& plan);
// node name -> effective precision ("fp32", "tf32", "fp16", "bf16", "host").
std::vector<std::pair<std::string, std::string>> cuda_layer_precisions(const backends::cuda::CudaPlan& plan);

}  // namespace kilnrt::engine
