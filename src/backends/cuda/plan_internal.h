// Internals shared by the CUDA runner's files (cuda_plan.cc, runner_layout.cc, runner_segments.cc): small host
// helpers and the per-shape-tuple state. Not a public header.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/control_flow/control_flow_layer.h"
#include "backends/cuda/cuda_plan.h"
#include "backends/cuda/control_flow/sequence_steps.h"
#include "cuda/context_guard.h"

namespace kilnrt::backends::cuda::plan_detail {

constexpr size_t kAlign = 256;
inline size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
inline CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

inline bool always_host(const std::string& op) { return op == "Shape" || op == "Size"; }

// Shape / Size on the host from the input's shape alone.
inline Tensor shape_value(const ir::Node& node, const Shape& in, int64_t opset) {
  if (node.op_type == "Size") return Tensor::from_vector(std::vector<int64_t>{shape_numel(in)}, DType::kInt64, {});
  const int64_t r = static_cast<int64_t>(in.size());
  int64_t start = opset >= 15 ? node.attr_int("start", 0) : 0;
  int64_t end = opset >= 15 ? node.attr_int("end", r) : r;
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  std::vector<int64_t> v(in.begin() + start, in.begin() + end);
  return Tensor::from_vector(v, DType::kInt64, {static_cast<int64_t>(v.size())});
}

inline bool is_16(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

// float32 host values -> 16-bit (round to nearest even). Infinite and out-of-range values are clamped to the
// dtype's finite range (NaN kept): attention-mask constants (-inf, -1e9) become the finite minimum, so that a fully
// masked softmax row stays finite instead of turning into NaN.
inline void convert_16(const float* src, uint16_t* dst, int64_t n, DType t) {
  const float lim = t == DType::kFloat16 ? 65504.f : 3.3895313892515355e38f;
  for (int64_t i = 0; i < n; ++i) {
    float v = src[i];
    if (v == v) v = std::min(std::max(v, -lim), lim);
    dst[i] = t == DType::kFloat16 ? float_to_half(v) : float_to_bfloat16(v);
  }
}
inline Tensor to_16(const Tensor& t, DType d) {
  Tensor h = Tensor::empty(d, t.shape());
  convert_16(t.data<float>(), static_cast<uint16_t*>(h.raw()), t.numel(), d);
  return h;
}

}  // namespace kilnrt::backends::cuda::plan_detail

namespace kilnrt::backends::cuda {

struct CudaRunner::ShapeState {
  std::vector<Shape> shapes;   // per slot
  std::vector<DType> dtypes;   // per slot (the graph's)
  std::vector<DType> storage;  // per slot: device storage dtype (16-bit for float values in 16-bit engines)
  std::vector<int64_t> in32_offset, out32_offset;  // per graph input / output: float32 staging, -1 none
  std::vector<std::vector<int64_t>> scratch;       // per step (islands): float32 copies of inputs then outputs
  std::vector<Tensor> host_values;                 // per slot (host slots)
  std::vector<int64_t> arena_offset;               // per slot: offset of its storage in the arena, -1 none
  size_t arena_bytes = 0;
  kilnrt::cuda::DeviceBuffer uploads;  // host values read on the device
  std::vector<int64_t> upload_offset;  // per slot, -1 none
  // CUDA graph of this shape tuple (inputs / outputs in the arena), captured on the second call.
  std::string label;  // "[1x3x224x224]" for logs
  uint64_t calls = 0;
  int capture_failures = 0;
  bool graph_failed() const { return capture_failures >= kMaxCaptureAttempts; }
  std::unique_ptr<kilnrt::cuda::CudaGraph> graph;
  // A second graph launched on the caller's own input / output memory (no copies in or out of the arena): captured
  // when a call brings the same pointers as the call before it, launched while they stay the same (static bindings,
  // as most callers keep them). Dropped with `graph`.
  std::unique_ptr<kilnrt::cuda::CudaGraph> direct_graph;
  std::vector<const void*> direct_in, last_in;  // the pointers direct_graph addresses / the previous call's
  std::vector<void*> direct_out, last_out;
  bool direct_failed = false;  // a capture on the caller's pointers failed once: the copying graph only
  void drop_graphs() noexcept {
    graph.reset();
    direct_graph.reset();
  }
};

// State of a plan with sync points (runner_segments.cc): the values of the last run, sized while it ran.
struct CudaRunner::Segmented {
  std::vector<Shape> input_shapes;                 // of the last prepare()
  std::vector<kilnrt::cuda::DeviceBuffer> staged;  // per graph input: input_device_ptr() (run() stages there)
  std::vector<Shape> shapes;                       // per slot, this run
  std::vector<DType> dtypes;
  std::vector<Tensor> host_values;  // per slot: shape computations and values read at sync points
  std::vector<Shape> out_shapes;    // graph outputs of the last run
  bool ran = false;
  uint64_t syncs = 0;
  // Value pool: chunks kept across runs and bump-allocated from the start at each run, so that a run like an
  // earlier one allocates nothing; a run needing more adds a chunk (cuMemAlloc mid-run, never a free).
  std::vector<kilnrt::cuda::DeviceBuffer> chunks;
  size_t chunk = 0, used = 0;
  void* alloc(int device, size_t bytes);
  std::vector<std::unique_ptr<ControlFlowState>> control_flow;  // per step: If / Loop / Scan body runners (lazy)
  std::vector<DeviceSequence> sequences;  // per slot, this run: sequence values (sequence_steps.h)
  std::vector<uint8_t> is_sequence;       // per slot, this run: 1 when the slot holds a sequence
};

}  // namespace kilnrt::backends::cuda
