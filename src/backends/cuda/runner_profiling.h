// Per-layer GPU timing of a CudaRunner (ExecutionContext::set_profiling / layer_timings on CUDA engines).
//
// One pair of timing events per layer, created once (on the layer's first profiled launch) and recorded around the
// layer's launch on the caller's stream, plus one origin event recorded at the first profiled run: start offsets
// are measured from it on the GPU timeline. Events are re-recorded by every run, so the previous run's events are
// read (waiting for those events only, never the device or the stream) before a new run records them again, and
// when timings are asked for. While profiling is on, the runner launches layers directly (no CUDA graphs: events
// inside a replayed graph would time the replay, not the layers); runs inside a caller's stream capture and private
// warm-ups are not timed.
//
// The gate: launched one by one, layers whose host-side launch takes longer than their GPU work leave the GPU
// waiting for the host, and each layer's events would measure that wait. So each profiled run (but the first of a
// shape tuple, whose launches may load modules) starts with a one-thread gate kernel that holds the stream until
// the host has enqueued the whole run (a generation number in page-locked memory); the events then time the layers
// back to back on the GPU. The gate opens by itself after kGateTimeoutNs (a host that blocks on a full launch queue,
// or work that waits for the stream) — then a warning says that layer times include host launch time.
// KILNRT_PROFILE_GATE=0 in the environment turns the gate off.
#pragma once
#include <cstddef>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/engine.h"

namespace kilnrt::backends::cuda {

class LayerProfiler {
 public:
  // `layers`: one entry per plan step (name / op type / tactic filled by the runner; calls 0).
  LayerProfiler(int device, std::vector<LayerTiming> layers);

  static constexpr uint64_t kGateTimeoutNs = 1000000000ull;

  // Arms recording for one direct launch of the layers on `stream`; reads the previous run's events first. `gate`:
  // hold the stream until finish_run() (not for a shape tuple's first run).
  void start_run(StreamT stream, bool gate);
  // Disarms recording and opens the gate (the run's events are read later).
  void finish_run();
  ~LayerProfiler();
  bool armed() const { return armed_; }
  // Records the layer's start / end events on `stream` (only while armed).
  void begin(size_t step, StreamT stream);
  void end(size_t step, StreamT stream);

  // Reads every recorded but unread event pair into the totals (waits for those events only) and returns the
  // accumulated timings, one entry per plan step (calls == 0 for steps that never ran on the device).
  const std::vector<LayerTiming>& collect();

 private:
  int device_;
  bool gate_enabled_ = true;
  kilnrt::cuda::PinnedBuffer gate_mem_;  // uint32 [0]: open generation, [1]: last generation that timed out
  kilnrt::cuda::Event gate_done_;        // recorded after the last gate kernel
  bool gate_launched_ = false;
  uint32_t generation_ = 0, warned_timeout_ = 0;
  kilnrt::cuda::Event origin_;
  bool has_origin_ = false;
  bool armed_ = false;
  std::vector<kilnrt::cuda::Event> begin_, end_;  // per step, created on first use
  std::vector<size_t> pending_;                   // steps recorded by the last run, not read yet
  std::vector<LayerTiming> layers_;
};

}  // namespace kilnrt::backends::cuda
