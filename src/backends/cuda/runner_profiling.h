// Per-layer GPU timing of a CudaRunner (ExecutionContext::set_profiling / layer_timings on CUDA engines).
//
// One pair of timing events per layer, created once (on the layer's first profiled launch) and recorded around the
// layer's launch on the caller's stream, plus one origin event recorded at the first profiled run: start offsets
// are measured from it on the GPU timeline. Events are re-recorded by every run, so the previous run's events are
// read (waiting for those events only, never the device or the stream) before a new run records them again, and
// when timings are asked for. While profiling is on, the runner launches layers directly (no CUDA graphs: events
// inside a replayed graph would time the replay, not the layers); runs inside a caller's stream capture and private
// warm-ups are not timed.
#pragma once
#include <cstddef>
#include <vector>

#include "backends/cuda/cuda_layer.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/engine.h"

namespace kilnrt::backends::cuda {

class LayerProfiler {
 public:
  // `layers`: one entry per plan step (name / op type / tactic filled by the runner; calls 0).
  LayerProfiler(int device, std::vector<LayerTiming> layers);

  // Arms recording for one direct launch of the layers on `stream`; reads the previous run's events first.
  void start_run(StreamT stream);
  // Disarms recording (the run's events are read later).
  void finish_run() { armed_ = false; }
  bool armed() const { return armed_; }
  // Records the layer's start / end events on `stream` (only while armed).
  void begin(size_t step, StreamT stream);
  void end(size_t step, StreamT stream);

  // Reads every recorded but unread event pair into the totals (waits for those events only) and returns the
  // accumulated timings, one entry per plan step (calls == 0 for steps that never ran on the device).
  const std::vector<LayerTiming>& collect();

 private:
  int device_;
  kilnrt::cuda::Event origin_;
  bool has_origin_ = false;
  bool armed_ = false;
  std::vector<kilnrt::cuda::Event> begin_, end_;  // per step, created on first use
  std::vector<size_t> pending_;                   // steps recorded by the last run, not read yet
  std::vector<LayerTiming> layers_;
};

}  // namespace kilnrt::backends::cuda
