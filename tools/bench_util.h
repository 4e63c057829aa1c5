// What `kilnrt bench` and `kilnrt profile` share: input shapes from --batch / --shapes, one timed inference
// (BenchRunner), latency statistics, a progress display and JSON text helpers. Public API only.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kilnrt/kilnrt.h"

namespace kilnrt_cli {

// Random inputs for a benchmark. Each input's shape: the engine's first profile's opt shape (fixed dims as
// declared, other dynamic dims 1), then dim 0 set to `batch` when batch > 0 (an error for inputs whose dim 0 is
// fixed to another size), then any "NAME:DIMS" of `shape_specs` (min/opt/max specs use opt). Throws
// kInvalidArgument naming the input or spec.
std::map<std::string, kilnrt::Tensor> make_bench_inputs(const kilnrt::Engine& engine, int batch,
                                                        const std::vector<std::string>& shape_specs, unsigned seed);
// The batch size of a set of inputs: dim 0 of the first input of rank >= 1 (1 otherwise).
int64_t batch_of(const kilnrt::Engine& engine, const std::map<std::string, kilnrt::Tensor>& inputs);

// Summary statistics of latency samples (ms). Percentiles by linear interpolation between closest ranks.
struct LatencyStats {
  size_t count = 0;
  double min = 0, mean = 0, median = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};
LatencyStats compute_stats(std::vector<double> samples);
// {"count": .., "min": .., ...} (ms).
std::string stats_json(const LatencyStats& s);

// One inference with timing. CUDA engines: on a private stream of the engine's device with device-resident input
// and output buffers (random inputs uploaded once); with `transfers`, each iteration copies the inputs from pinned
// host memory (H2D), enqueues the engine and copies the outputs back (D2H), with CUDA timing events between the
// phases; without, it enqueues only. CPU engines: ExecutionContext::run on host tensors, steady_clock.
class BenchRunner {
 public:
  struct Sample {
    double total_ms = 0;    // whole iteration: CUDA events (GPU timeline), CPU: wall time
    double h2d_ms = 0;      // CUDA with transfers only
    double compute_ms = 0;  // enqueue to completion (CUDA events) / run() (CPU)
    double d2h_ms = 0;      // CUDA with transfers only
    double wall_ms = 0;     // host wall time of the iteration, synchronisation included
  };
  BenchRunner(const kilnrt::Engine& engine, kilnrt::ExecutionContext& context,
              const std::map<std::string, kilnrt::Tensor>& inputs, bool transfers);
  ~BenchRunner();
  BenchRunner(const BenchRunner&) = delete;
  BenchRunner& operator=(const BenchRunner&) = delete;

  Sample run_once();
  bool cuda() const { return cuda_; }
  bool transfers() const { return transfers_; }
  size_t input_bytes() const { return input_bytes_; }
  size_t output_bytes() const { return output_bytes_; }

 private:
  struct CudaState;
  kilnrt::ExecutionContext& context_;
  std::map<std::string, kilnrt::Tensor> inputs_;
  bool cuda_ = false, transfers_ = false;
  size_t input_bytes_ = 0, output_bytes_ = 0;
  std::unique_ptr<CudaState> cuda_state_;
};

// Progress of a timed loop on stderr: a redrawn bar when stderr is a terminal, else a plain line about every 10%.
class Progress {
 public:
  // `iterations` and `seconds` (0: no time goal): the loop ends when both are reached.
  Progress(const std::string& label, int iterations, double seconds);
  // Reports `done` iterations so far and returns true while the loop should go on.
  bool update(int done);
  // Ends the display (a newline after a bar).
  void finish();
  double elapsed_s() const;

 private:
  std::string label_;
  int iterations_;
  double seconds_;
  bool tty_;
  int last_decile_ = -1;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// A JSON string literal for `s` (quotes included).
std::string json_string(const std::string& s);
// A JSON number (finite; non-finite values become null).
std::string json_number(double v);
// "1x3x224x224" -> "[1, 3, 224, 224]".
std::string json_shape(const kilnrt::Shape& shape);

}  // namespace kilnrt_cli
