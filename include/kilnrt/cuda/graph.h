// CUDA graph helper (docs/architecture.md, invariant 4). CudaGraph captures a callable's work on a private stream of
// the device's primary context in thread-local capture mode (other threads' CUDA calls are unaffected), instantiates
// it, and launches it on the caller's stream. Re-capturing reuses the executable graph through cuGraphExecUpdate when
// the topology allows it; kernel arguments (bound addresses that change every call) are replaced in place with
// set_kernel_args() — never re-capture per call.
//
// When the caller's stream is itself capturing (torch.cuda.graph, torch.compile's reduce-overhead), engines should
// not replay a graph of their own but enqueue their kernels directly so the caller's graph records them:
// stream_capture_status() / stream_is_capturing() tell.
#pragma once
#include <cstddef>
#include <functional>
#include <type_traits>
#include <vector>

#include "kilnrt/cuda/kernel.h"
#include "kilnrt/cuda/stream.h"

struct CUgraph_st;
struct CUgraphExec_st;
struct CUgraphNode_st;

namespace kilnrt::cuda {

enum class CaptureStatus { kNone, kActive, kInvalidated };

// Capture status of `stream` (a stream of `device`'s primary context, 0 or the per-thread default stream), read
// with cuStreamGetCaptureInfo under the guard. Does not disturb the capture.
CaptureStatus stream_capture_status(StreamHandle stream, int device);
// True while `stream` is capturing (active or already invalidated): enqueue directly instead of replaying a graph.
inline bool stream_is_capturing(StreamHandle stream, int device) {
  return stream_capture_status(stream, device) != CaptureStatus::kNone;
}

class CudaGraph {
 public:
  enum class CaptureResult { kInstantiated, kUpdated };

  CudaGraph() noexcept = default;
  explicit CudaGraph(int device);  // creates the private capture stream
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  CudaGraph(CudaGraph&& other) noexcept;
  CudaGraph& operator=(CudaGraph&& other) noexcept;

  // Runs `work(capture_stream)` while capturing (thread-local mode) and makes the result the graph to launch. The
  // work must enqueue everything on capture_stream (or on streams it joins back into it) and must not synchronise
  // or allocate with cudaMalloc. If an executable graph exists already, it is updated in place when possible
  // (kUpdated), else re-instantiated (kInstantiated). If `work` throws, the capture is ended and discarded.
  template <class Work>
  CaptureResult capture(Work&& work) {
    return capture_impl(std::function<void(StreamHandle)>(std::forward<Work>(work)));
  }

  // Enqueues the executable graph on `stream` (of the same device's primary context, or 0).
  void launch(StreamHandle stream) const;

  // Kernel nodes of the captured graph, in capture (topological) order.
  size_t kernel_count() const noexcept { return kernels_.size(); }

  // Replaces the arguments of kernel node `index` in the executable graph (grid, block and shared memory are kept).
  // Types must match the kernel's parameters exactly, as for Kernel::launch.
  template <class... Args>
  void set_kernel_args(size_t index, const Args&... args) {
    static_assert((std::is_trivially_copyable<Args>::value && ...), "kernel arguments must be trivially copyable");
    void* params[] = {const_cast<void*>(static_cast<const void*>(&args))..., nullptr};
    set_kernel_params(index, params);
  }
  void set_kernel_params(size_t index, void** params);
  // Also changes the launch shape of kernel node `index`.
  void set_kernel_launch(size_t index, Dim3 grid, Dim3 block, unsigned shared_mem_bytes, void** params);

  bool instantiated() const noexcept { return exec_ != nullptr; }
  int device() const noexcept { return device_; }
  StreamHandle capture_stream() const noexcept { return stream_.get(); }
  // Destroys the graphs (keeps the capture stream).
  void reset() noexcept;

 private:
  struct KernelNode {
    CUgraphNode_st* node = nullptr;  // node of graph_ (the graph exec_ was instantiated from)
    CUfunc_st* function = nullptr;
    Dim3 grid, block;
    unsigned shared_mem_bytes = 0;
  };
  CaptureResult capture_impl(const std::function<void(StreamHandle)>& work);

  int device_ = -1;
  Stream stream_;
  CUgraph_st* graph_ = nullptr;  // the graph exec_ was instantiated from (its nodes address exec_'s nodes)
  CUgraphExec_st* exec_ = nullptr;
  std::vector<KernelNode> kernels_;
};

}  // namespace kilnrt::cuda
