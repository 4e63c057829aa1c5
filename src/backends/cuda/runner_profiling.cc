// LayerProfiler and CudaRunner's profiling / memory-report entry points.
#include "backends/cuda/runner_profiling.h"

#include "backends/cuda/cuda_plan.h"
#include "core/check.h"
#include "cuda/context_guard.h"

namespace kilnrt::backends::cuda {

namespace kc = kilnrt::cuda;

LayerProfiler::LayerProfiler(int device, std::vector<LayerTiming> layers)
    : device_(device), begin_(layers.size()), end_(layers.size()), layers_(std::move(layers)) {}

void LayerProfiler::start_run(StreamT stream) {
  collect();  // the events are about to be recorded again
  if (!has_origin_) {
    origin_ = kc::Event(device_, /*timing=*/true);
    origin_.record(reinterpret_cast<kc::StreamHandle>(stream));
    has_origin_ = true;
  }
  armed_ = true;
}

void LayerProfiler::begin(size_t step, StreamT stream) {
  if (!armed_ || step >= begin_.size()) return;
  if (!begin_[step]) {
    begin_[step] = kc::Event(device_, /*timing=*/true);
    end_[step] = kc::Event(device_, /*timing=*/true);
  }
  begin_[step].record(reinterpret_cast<kc::StreamHandle>(stream));
}

void LayerProfiler::end(size_t step, StreamT stream) {
  if (!armed_ || step >= end_.size() || !end_[step]) return;
  end_[step].record(reinterpret_cast<kc::StreamHandle>(stream));
  pending_.push_back(step);
}

const std::vector<LayerTiming>& LayerProfiler::collect() {
  if (pending_.empty()) return layers_;
  // The last recorded event completes after all earlier ones of the run (one stream): wait for it alone.
  end_[pending_.back()].synchronize();
  for (size_t step : pending_) {
    LayerTiming& t = layers_[step];
    const double ms = kc::Event::elapsed_ms(begin_[step], end_[step]);
    t.start_ms.push_back(kc::Event::elapsed_ms(origin_, begin_[step]));
    t.duration_ms.push_back(ms);
    ++t.calls;
    t.total_ms += ms;
    t.mean_ms = t.total_ms / static_cast<double>(t.calls);
  }
  pending_.clear();
  return layers_;
}

void CudaRunner::set_profiling(bool on) {
  if (!on) {
    profiler_.reset();
    return;
  }
  std::vector<LayerTiming> layers(plan_.steps_.size());
  for (size_t i = 0; i < plan_.steps_.size(); ++i) {
    const CudaPlan::Step& s = plan_.steps_[i];
    layers[i].name = s.node->name;
    layers[i].op_type = s.node->op_type;
    layers[i].tactic = s.host ? "host:shape-computation" : "cuda:" + s.layer->tactic();
  }
  profiler_ = std::make_unique<LayerProfiler>(plan_.device_, std::move(layers));
}

std::vector<LayerTiming> CudaRunner::layer_timings() {
  if (!profiler_) return {};
  kc::ContextGuard guard(plan_.device_);
  return profiler_->collect();
}

size_t CudaRunner::device_memory_bytes() const {
  size_t bytes = arena_.size() + workspace_.size();
  for (const auto& b : retained_) bytes += b.size();
  return bytes;
}

}  // namespace kilnrt::backends::cuda
