// Build-time choice of the storage layout by timing the whole plan in both layouts (layout_timing.h).
#include "backends/cuda/layout_timing.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <vector>

#include "ops/cuda/tactic_timing.h"
#include "ops/cuda/cuda_layer.h"
#include "backends/cuda/cuda_plan.h"
#include "core/logging.h"
#include "cuda/context_guard.h"
#include "ir/graph.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "ops/nn/fused_conv/fused_conv.h"

namespace kilnrt::backends::cuda {
namespace {

namespace kc = kilnrt::cuda;

bool is_conv(const ir::Node& n) {
  return (n.domain.empty() && n.op_type == "Conv") ||
         (n.domain == ops::nn::kFusedConvDomain && n.op_type == ops::nn::kFusedConvOp);
}

// Whole-plan timing: a few warm-up runs (the first direct, the second captures the CUDA graph), then kRounds rounds
// of kRuns replays per plan, the plans interleaved so that clock changes hit both alike.
constexpr int kWarmup = 3;
constexpr int kRounds = 7;
constexpr int kRuns = 10;

// One plan under timing: its runner and random inputs / output buffers at the graph's static shapes.
struct TimedPlan {
  std::string layout;
  std::shared_ptr<CudaPlan> plan;
  std::unique_ptr<CudaRunner> runner;
  std::vector<kc::DeviceBuffer> buffers;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  std::vector<double> ms;
  bool nhwc_layers = false;  // some layer runs NHWC (else both plans are the same)
};

// Random bytes for an input of `dtype`: floats in +-[0.5, 1), integers and booleans 0 (indices stay in range).
std::vector<uint8_t> random_bytes(DType dtype, int64_t numel, std::mt19937& rng) {
  std::vector<uint8_t> bytes(size_t(numel) * dtype_size(dtype), 0);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  if (dtype == DType::kFloat32) {
    float* p = reinterpret_cast<float*>(bytes.data());
    for (int64_t i = 0; i < numel; ++i) p[i] = dist(rng);
  } else if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
    uint16_t* p = reinterpret_cast<uint16_t*>(bytes.data());
    for (int64_t i = 0; i < numel; ++i) {
      const uint32_t r = rng();
      p[i] = dtype == DType::kFloat16 ? uint16_t(((r >> 16) & 0x8000u) | (14u << 10) | (r & 0x3ffu))
                                      : uint16_t(((r >> 16) & 0x8000u) | (126u << 7) | (r & 0x7fu));
    }
  }
  return bytes;
}

std::unique_ptr<TimedPlan> make_timed_plan(const ir::Graph& graph, int device, const std::string& layout,
                                           std::map<std::string, std::string>* timed, kc::Stream& stream) {
  auto t = std::make_unique<TimedPlan>();
  t->layout = layout;
  {
    std::unique_ptr<TacticTimingScope> tuning;
    if (timed) tuning = std::make_unique<TacticTimingScope>(device, timed);
    t->plan = std::make_shared<CudaPlan>(graph, device);
  }
  for (const auto& [node, tactic] : t->plan->tactics()) t->nhwc_layers |= tactic.find("+nhwc") != std::string::npos;
  if (t->plan->sync_points() > 0) return t;  // segmented runs: never timed (the caller checks)
  t->runner = std::make_unique<CudaRunner>(*t->plan);
  std::vector<Shape> shapes;
  for (const std::string& in : graph.inputs) shapes.push_back(ir::sym_shape_to_shape(graph.type_of(in)->shape));
  t->runner->prepare(shapes, stream.get());
  std::mt19937 rng(7);
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const DType dt = graph.type_of(graph.inputs[i])->dtype;
    int64_t numel = 1;
    for (int64_t d : shapes[i]) numel *= d;
    const std::vector<uint8_t> host = random_bytes(dt, numel, rng);
    t->buffers.emplace_back(device, std::max<size_t>(host.size(), 1));
    if (!host.empty()) t->buffers.back().copy_from_host_async(host.data(), host.size(), stream.get());
    t->inputs.push_back(t->buffers.back().data());
  }
  const std::vector<Shape> out_shapes = t->runner->output_shapes();
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    int64_t numel = 1;
    for (int64_t d : out_shapes.at(i)) numel *= d;
    const size_t bytes = size_t(numel) * dtype_size(graph.type_of(graph.outputs[i])->dtype);
    t->buffers.emplace_back(device, std::max<size_t>(bytes, 1));
    t->outputs.push_back(t->buffers.back().data());
  }
  stream.synchronize();
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

LayoutPolicy layout_policy(const char* env, const std::string& record, bool sync_points) {
  LayoutPolicy p;
  if (sync_points) {
    p.source = "sync-points";
    return p;
  }
  const std::string e = env ? env : "";
  if (e == "0" || e == "1") {
    p.plan = e == "1";
    p.forced = e == "1";
    p.source = "env";
    return p;
  }
  if (record == "nhwc" || record == "nchw") {
    p.plan = record == "nhwc";
    p.forced = record == "nhwc";
    p.source = "record";
    return p;
  }
  p.plan = true;
  return p;
}

std::string recorded_layout(const ir::Graph& graph) {
  for (const ir::Node& n : graph.nodes) {
    auto it = n.attrs.find(kLayoutAttr);
    if (it == n.attrs.end() || it->second.kind != ir::Attribute::Kind::kString) continue;
    if (it->second.s == "nhwc" || it->second.s == "nchw") return it->second.s;
  }
  return "";
}

void set_recorded_layout(ir::Graph& graph, const std::string& layout) {
  for (ir::Node& n : graph.nodes) {
    if (!is_conv(n)) continue;
    if (layout.empty()) {
      n.attrs.erase(kLayoutAttr);
      continue;
    }
    ir::Attribute& a = n.attrs[kLayoutAttr];
    a.kind = ir::Attribute::Kind::kString;
    a.s = layout;
  }
}

std::string layout_timing_skip_reason(const ir::Graph& graph) {
  const char* env = std::getenv("KILNRT_CUDA_NHWC");
  if (env && (std::string(env) == "0" || std::string(env) == "1"))
    return std::string("KILNRT_CUDA_NHWC=") + env + " forces the layout";
  const char* off = std::getenv("KILNRT_CUDA_LAYOUT_TIMING");
  if (off && std::string(off) == "0") return "KILNRT_CUDA_LAYOUT_TIMING=0";
  bool conv = false, p16 = false;
  for (const ir::Node& n : graph.nodes) {
    conv |= is_conv(n);
    const Precision p = node_precision(n);
    p16 |= p == Precision::kFp16 || p == Precision::kBf16;
  }
  if (!conv) return "no convolution";
  if (!p16) return "no 16-bit precision (NHWC storage is for 16-bit engines)";
  for (const std::vector<std::string>* io : {&graph.inputs, &graph.outputs}) {
    for (const std::string& v : *io) {
      const ir::TensorType* t = graph.type_of(v);
      if (!t || t->is_sequence || !t->has_shape || t->dtype == DType::kUndefined)
        return "'" + v + "' is not a tensor of known shape";
    }
  }
  for (const std::string& in : graph.inputs)
    for (const ir::Dim& d : graph.type_of(in)->shape)
      if (!d.known()) return "dynamic shape of input '" + in + "' (the prediction decides at load)";
  return "";
}

LayoutTimingResult choose_layout_by_timing(ir::Graph& graph, int device, std::map<std::string, std::string>* timed) {
  LayoutTimingResult r;
  const std::string skip = layout_timing_skip_reason(graph);
  if (!skip.empty()) {
    r.note = "layout not timed: " + skip;
    return r;
  }
  kc::ContextGuard guard(device);
  kc::Stream stream(device);
  // NHWC first: when no layer runs NHWC even when forced, both plans are the same and nothing is timed.
  set_recorded_layout(graph, "nhwc");
  std::unique_ptr<TimedPlan> nhwc;
  try {
    nhwc = make_timed_plan(graph, device, "nhwc", timed, stream);
  } catch (const Error& e) {  // an NHWC-only failure: NCHW is what the engine runs then
    stream.synchronize();
    set_recorded_layout(graph, "nchw");
    r.layout = "nchw";
    r.note = std::string("NHWC plan failed (") + e.what() + "): nchw";
    KILNRT_LOG(kWarning, r.note);
    return r;
  }
  if (nhwc->plan->sync_points() > 0 || !nhwc->nhwc_layers) {
    set_recorded_layout(graph, "nchw");
    r.layout = "nchw";
    r.note = nhwc->plan->sync_points() > 0 ? "plan with sync points: nchw" : "no layer can run NHWC: nchw";
    return r;
  }
  set_recorded_layout(graph, "nchw");
  std::unique_ptr<TimedPlan> nchw;
  try {
    nchw = make_timed_plan(graph, device, "nchw", timed, stream);
    kc::Event start(device, /*timing=*/true), stop(device, /*timing=*/true);
    TimedPlan* both[2] = {nhwc.get(), nchw.get()};
    for (TimedPlan* t : both)
      for (int i = 0; i < kWarmup; ++i) t->runner->enqueue(t->inputs, t->outputs, stream.get());
    stream.synchronize();
    for (int round = 0; round < kRounds; ++round) {
      for (TimedPlan* t : both) {
        start.record(stream);
        for (int i = 0; i < kRuns; ++i) t->runner->enqueue(t->inputs, t->outputs, stream.get());
        stop.record(stream);
        stop.synchronize();
        t->ms.push_back(double(kc::Event::elapsed_ms(start, stop)) / kRuns);
      }
    }
  } catch (const Error& e) {  // the builder's own plan reports a real problem; the engine keeps the prediction
    stream.synchronize();
    set_recorded_layout(graph, "");
    r.note = std::string("layout timing failed (") + e.what() + "): the prediction decides at load";
    KILNRT_LOG(kWarning, r.note);
    return r;
  }
  r.nhwc_ms = median(nhwc->ms);
  r.nchw_ms = median(nchw->ms);
  r.layout = r.nhwc_ms < r.nchw_ms ? "nhwc" : "nchw";  // a tie keeps NCHW (no reformats to go wrong)
  set_recorded_layout(graph, r.layout);
  std::ostringstream os;
  os.precision(4);
  os << "layout timed on the GPU: nhwc " << r.nhwc_ms << " ms, nchw " << r.nchw_ms << " ms (median of " << kRounds
     << " x " << kRuns << " graph replays): " << r.layout;
  r.note = os.str();
  return r;
}

}  // namespace kilnrt::backends::cuda
