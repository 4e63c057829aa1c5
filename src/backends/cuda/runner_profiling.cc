// LayerProfiler and CudaRunner's profiling / memory-report entry points.
#include "backends/cuda/runner_profiling.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/cuda/cuda_plan.h"
#include "cuda/kernels/profiling_gate.h"
#include "core/check.h"
#include "core/logging.h"
#include "cuda/context_guard.h"

namespace kilnrt::backends::cuda {

namespace kc = kilnrt::cuda;

namespace {
volatile uint32_t* gate_word(const kc::PinnedBuffer& mem, int i) {
  return static_cast<volatile uint32_t*>(mem.data()) + i;
}
}  // namespace

LayerProfiler::LayerProfiler(int device, std::vector<LayerTiming> layers)
    : device_(device), begin_(layers.size()), end_(layers.size()), layers_(std::move(layers)) {
  const char* env = std::getenv("KILNRT_PROFILE_GATE");
  gate_enabled_ = !(env && (std::string(env) == "0" || std::string(env) == "off" || std::string(env) == "false"));
}

LayerProfiler::~LayerProfiler() {
  // Open the gate and let the gate kernel finish before its page-locked words are freed.
  try {
    finish_run();
    if (gate_launched_) gate_done_.synchronize();
  } catch (...) {
    // Never free page-locked words a gate kernel may still read: leak them instead.
    if (gate_mem_) new kc::PinnedBuffer(std::move(gate_mem_));  // NOLINT: intentional leak
  }
}

void LayerProfiler::start_run(StreamT stream, bool gate) {
  collect();     // the events are about to be recorded again
  finish_run();  // a run that ended with an error left its gate closed
  if (gate && gate_enabled_) {
    if (!gate_mem_) {
      gate_mem_ = kc::PinnedBuffer(device_, 64);
      std::memset(gate_mem_.data(), 0, 64);
      gate_done_ = kc::Event(device_);
    }
    ++generation_;
    const int status = kc::kernels::profiling_gate(gate_word(gate_mem_, 0), generation_, gate_word(gate_mem_, 1),
                                                   kGateTimeoutNs, stream);
    if (status != 0) {
      gate_enabled_ = false;
      KILNRT_LOG(kWarning, "profiling: the gate kernel did not launch (CUDA error "
                               << status
                               << "); layer times may include host "
                                  "launch time");
    } else {
      gate_done_.record(stream);
      gate_launched_ = true;
    }
  }
  if (!has_origin_) {
    origin_ = kc::Event(device_, /*timing=*/true);
    origin_.record(stream);
    has_origin_ = true;
  }
  armed_ = true;
}

void LayerProfiler::finish_run() {
  armed_ = false;
  if (gate_mem_) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *gate_word(gate_mem_, 0) = generation_;
  }
}

void LayerProfiler::begin(size_t step, StreamT stream) {
  if (!armed_ || step >= begin_.size()) return;
  if (!begin_[step]) {
    begin_[step] = kc::Event(device_, /*timing=*/true);
    end_[step] = kc::Event(device_, /*timing=*/true);
  }
  begin_[step].record(stream);
}

void LayerProfiler::end(size_t step, StreamT stream) {
  if (!armed_ || step >= end_.size() || !end_[step]) return;
  end_[step].record(stream);
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
  if (gate_mem_) {
    const uint32_t timed_out = *gate_word(gate_mem_, 1);
    if (timed_out != warned_timeout_) {
      warned_timeout_ = timed_out;
      KILNRT_LOG(kWarning,
                 "profiling: the host took more than "
                     << kGateTimeoutNs / 1000000
                     << " ms to enqueue a "
                        "profiled run (or work waited for the stream), so the gate opened early: layer times of "
                        "that run include host launch time");
    }
  }
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
  bytes += segmented_memory_bytes();  // plans with sync points (runner_segments.cc)
  return bytes;
}

}  // namespace kilnrt::backends::cuda
