// CudaPlan / CudaRunner members about memory and precision that need no ShapeState: the per-layer precision report,
// the activation arena reserved at context creation, and caller-provided activation memory.
#include "backends/cuda/cuda_plan.h"
#include "cuda/capture_safety.h"

namespace kilnrt::backends::cuda {

std::vector<std::pair<std::string, std::string>> CudaPlan::precisions() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Step& s : steps_) {
    std::string p = "host";
    if (!s.host && act16_ != DType::kUndefined)
      p = s.island ? "fp32" : act16_ == DType::kFloat16 ? "fp16" : "bf16";
    else if (!s.host)
      p = precision_name(node_precision(*s.node));
    out.emplace_back(s.node->name, p);
  }
  return out;
}

void CudaRunner::reserve_arena(size_t bytes) {
  if (external_arena_ || arena_.size() >= bytes || bytes == 0) return;
  kilnrt::cuda::RelaxedCaptureMode relaxed;
  KILNRT_CHECK(!arena_used_, kInternal, "CudaRunner", "reserve_arena() after work was enqueued");
  arena_ = kilnrt::cuda::DeviceBuffer();
  arena_ = kilnrt::cuda::DeviceBuffer(plan_.device_, bytes);
}

void CudaRunner::use_external_workspace(void* data, size_t bytes) {
  if (data == external_workspace_ && bytes == external_workspace_bytes_) return;
  KILNRT_CHECK(data && bytes >= kWorkspaceBytes, kInternal, "CudaRunner",
               "an external workspace needs " << kWorkspaceBytes << " bytes, got " << bytes);
  if (arena_used_ && done_) done_.synchronize();  // work queued on the old workspace finishes first
  drop_graphs();                                  // captured graphs address the old workspace
  workspace_ = kilnrt::cuda::DeviceBuffer();
  external_workspace_ = data;
  external_workspace_bytes_ = bytes;
}

void CudaRunner::set_external_arena(void* data, size_t bytes) {
  if (external_arena_ && data == external_data_ && bytes == external_bytes_) return;
  // Work queued on the previous memory finishes before the graphs that address it are dropped.
  if (arena_used_ && done_) done_.synchronize();
  drop_graphs();
  if (arena_.data()) {
    if (arena_in_caller_capture_) retained_.push_back(std::move(arena_));
    arena_ = kilnrt::cuda::DeviceBuffer();
  }
  external_arena_ = true;
  external_data_ = data;
  external_bytes_ = bytes;
  arena_used_ = false;
  arena_in_caller_capture_ = false;
}

}  // namespace kilnrt::backends::cuda
