// `kilnrt profile ENGINE [--batch N] [--shapes NAME:DIMS]... [--iterations N] [--warmup N] [--top N] [--wide]
// [--trace FILE.json] [--json FILE|-] [--device cpu|cuda|cuda:N]`: per-layer time of an engine on random inputs
// (ExecutionContext::set_profiling: CUDA events around each layer on CUDA engines, steady_clock per node on CPU
// engines). Prints a table sorted by time (the top N layers, then "others"), the sum of the layers against the whole
// engine's time with profiling off (CUDA graphs replayed where the engine uses them), writes a Chrome trace
// (chrome://tracing, https://ui.perfetto.dev) and, with
// --json, every layer's figures.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cli_common.h"

namespace kilnrt_cli {
namespace {

struct ProfileArgs {
  std::string engine;
  int batch = 0;
  std::vector<std::string> shapes;
  int iterations = 20;
  int warmup = 5;
  int top = 25;
  std::string trace;
  std::string json;
  std::string device;
  unsigned seed = 0;
  bool wide = false;  // full layer names and tactics (the timed conv / GEMM choices are long)
};

std::string fit(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return s.substr(0, width - 3) + "...";
}

// Microseconds with a fixed three decimals (trace timestamps need more digits than json_number keeps).
std::string micros(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", ms * 1000.0);
  return buf;
}

void write_trace(const std::string& path, const std::string& engine_path, const std::string& track,
                 const std::vector<kilnrt::LayerTiming>& layers) {
  std::ostringstream os;
  os << "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"engine\": " << json_string(engine_path)
     << ", \"kilnrt_version\": " << json_string(kilnrt::version()) << "},\n\"traceEvents\": [\n";
  os << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": "
     << json_string("kilnrt " + engine_path) << "}},\n";
  os << "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": " << json_string(track)
     << "}}";
  // Events in time order: viewers draw nested / overlapping slices correctly either way, but sorted is readable.
  struct Ev {
    double start, dur;
    size_t layer, call;
  };
  std::vector<Ev> events;
  for (size_t l = 0; l < layers.size(); ++l)
    for (size_t c = 0; c < layers[l].start_ms.size() && c < layers[l].duration_ms.size(); ++c)
      events.push_back({layers[l].start_ms[c], layers[l].duration_ms[c], l, c});
  std::sort(events.begin(), events.end(), [](const Ev& a, const Ev& b) { return a.start < b.start; });
  for (const Ev& e : events) {
    const kilnrt::LayerTiming& t = layers[e.layer];
    os << ",\n{\"name\": " << json_string(t.name) << ", \"cat\": " << json_string(t.op_type)
       << ", \"ph\": \"X\", \"ts\": " << micros(e.start) << ", \"dur\": " << micros(e.dur)
       << ", \"pid\": 1, \"tid\": 1, \"args\": {\"op\": " << json_string(t.op_type)
       << ", \"tactic\": " << json_string(t.tactic) << ", \"iteration\": " << e.call << "}}";
  }
  os << "\n]}\n";
  std::ofstream f(path);
  f << os.str();
  if (!f) throw kilnrt::Error(kilnrt::ErrorCode::kIo, "cannot write the trace", path);
}

void profile_engine(const ProfileArgs& args) {
  auto engine = load_engine_for(args.engine, args.device);
  const auto inputs = make_bench_inputs(*engine, args.batch, args.shapes, args.seed);
  auto context = engine->create_context();
  BenchRunner runner(*engine, *context, inputs, /*transfers=*/false);
  const bool cuda = runner.cuda();
  for (int i = 0; i < args.warmup; ++i) runner.run_once();

  // Profiled runs (CUDA: direct launches with a pair of events per layer).
  context->set_profiling(true);
  std::vector<double> profiled;
  Progress progress("profile", args.iterations, 0.0);
  int done = 0;
  do {
    profiled.push_back(runner.run_once().compute_ms);
    ++done;
  } while (progress.update(done));
  progress.finish();
  std::vector<kilnrt::LayerTiming> layers = context->layer_timings();
  context->set_profiling(false);

  // The whole engine as it normally runs (CUDA graphs where the engine uses them).
  for (int i = 0; i < std::min(args.warmup, 3); ++i) runner.run_once();
  std::vector<double> whole;
  for (int i = 0; i < args.iterations; ++i) whole.push_back(runner.run_once().compute_ms);
  const std::string mode = context->last_execution_mode();

  double sum_mean = 0;
  for (const auto& l : layers) sum_mean += l.mean_ms;
  std::vector<size_t> order(layers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return layers[a].mean_ms > layers[b].mean_ms; });

  std::ostringstream os;
  const kilnrt::EngineHeaderInfo& h = engine->header();
  os << "engine: " << args.engine << " (" << h.target << (h.gpu_name.empty() ? "" : ", " + h.gpu_name) << ")\n";
  for (const auto& [name, t] : inputs)
    os << "input  " << name << " " << kilnrt::shape_to_string(t.shape()) << " " << kilnrt::dtype_name(t.dtype())
       << " (random)\n";
  os << plural(static_cast<int64_t>(layers.size()), "layer") << ", " << plural(done, "profiled iteration") << " ("
     << (cuda ? "GPU time: CUDA events around each layer, direct launches" : "CPU wall time per node") << ")\n";
  os << std::setw(4) << "#"
     << "  " << std::left << std::setw(44) << "layer" << std::setw(22) << "op" << std::setw(34) << "tactic"
     << std::right << std::setw(11) << "mean ms" << std::setw(8) << "%"
     << "\n";
  auto pct = [&](double ms) { return sum_mean > 0 ? 100.0 * ms / sum_mean : 0.0; };
  const size_t shown = std::min(order.size(), static_cast<size_t>(args.top));
  os << std::fixed;
  for (size_t r = 0; r < shown; ++r) {
    const kilnrt::LayerTiming& l = layers[order[r]];
    // --wide: whole names (a cell longer than its column pushes the rest of the row right, one space apart)
    auto cell = [&](const std::string& v, size_t width) { return args.wide ? v + " " : fit(v, width - 1); };
    os << std::setw(4) << r + 1 << "  " << std::left << std::setw(44) << cell(l.name, 44) << std::setw(22)
       << cell(l.op_type, 22) << std::setw(34) << cell(l.tactic, 34) << std::right << std::setprecision(4)
       << std::setw(11) << l.mean_ms << std::setprecision(1) << std::setw(8) << pct(l.mean_ms) << "\n";
  }
  if (order.size() > shown) {
    double rest = 0;
    for (size_t r = shown; r < order.size(); ++r) rest += layers[order[r]].mean_ms;
    os << std::setw(4) << ""
       << "  " << std::left << std::setw(100)
       << ("others (" + plural(static_cast<int64_t>(order.size() - shown), "layer") + ")") << std::right
       << std::setprecision(4) << std::setw(11) << rest << std::setprecision(1) << std::setw(8) << pct(rest) << "\n";
  }
  const LatencyStats st_profiled = compute_stats(profiled), st_whole = compute_stats(whole);
  os << std::setprecision(4) << "sum of layer means: " << sum_mean << " ms\n";
  os << "profiled run: median " << st_profiled.median << " ms (" << (cuda ? "direct launches, events on" : "timers on")
     << ")\n";
  os << "whole engine: median " << st_whole.median << " ms, min " << st_whole.min << " ms over "
     << plural(static_cast<int64_t>(whole.size()), "iteration") << " (profiling off"
     << (cuda ? ", execution: " + (mode.empty() ? std::string("?") : mode) : "") << ")\n";
  if (!args.trace.empty()) {
    write_trace(args.trace, args.engine,
                cuda ? "cuda:" + std::to_string(engine->device()) + " stream (layers)" : "cpu (layers)", layers);
    if (!global_options().quiet)
      os << "trace: " << args.trace << " (open in https://ui.perfetto.dev or chrome://tracing)\n";
  }
  if (args.json != "-") std::cout << os.str();  // `--json -`: standard output carries the JSON alone
  if (!args.json.empty()) {
    std::ostringstream js;
    js << "{\n  \"engine\": " << json_string(args.engine)
       << ",\n  \"kilnrt_version\": " << json_string(kilnrt::version()) << ",\n  \"target\": " << json_string(h.target)
       << ",\n  \"device\": " << json_string(cuda ? "cuda:" + std::to_string(engine->device()) : "cpu")
       << ",\n  \"gpu\": " << json_string(h.gpu_name) << ",\n  \"inputs\": [";
    bool first = true;
    for (const auto& [name, t] : inputs) {
      js << (first ? "" : ", ") << "{\"name\": " << json_string(name) << ", \"shape\": " << json_shape(t.shape())
         << ", \"dtype\": " << json_string(kilnrt::dtype_name(t.dtype())) << "}";
      first = false;
    }
    js << "],\n  \"warmup\": " << args.warmup << ",\n  \"iterations\": " << done
       << ",\n  \"timing\": " << json_string(cuda ? "cuda-events" : "wall-clock")
       << ",\n  \"execution_mode\": " << json_string(mode)
       << ",\n  \"sum_of_layer_means_ms\": " << json_number(sum_mean)
       << ",\n  \"profiled_ms\": " << stats_json(st_profiled) << ",\n  \"whole_engine_ms\": " << stats_json(st_whole)
       << ",\n  \"layers\": [";
    for (size_t r = 0; r < order.size(); ++r) {
      const kilnrt::LayerTiming& l = layers[order[r]];
      js << (r ? "," : "") << "\n    {\"name\": " << json_string(l.name) << ", \"op\": " << json_string(l.op_type)
         << ", \"tactic\": " << json_string(l.tactic) << ", \"calls\": " << l.calls
         << ", \"total_ms\": " << json_number(l.total_ms) << ", \"mean_ms\": " << json_number(l.mean_ms)
         << ", \"percent\": " << json_number(pct(l.mean_ms)) << "}";
    }
    js << (order.empty() ? "]" : "\n  ]") << "\n}\n";
    write_json(args.json, js.str());
    if (args.json != "-" && !global_options().quiet) std::cout << "json: " << args.json << "\n";
  }
}

}  // namespace

void add_profile_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("profile", "Per-layer time of an engine on random inputs, and a Chrome trace");
  auto args = std::make_shared<ProfileArgs>();
  cmd->add_option("engine", args->engine, "Engine file")->required();
  cmd->add_option("--batch", args->batch, "Batch size: dimension 0 of every input (default: the profile's opt)")
      ->check(at_least(1));
  cmd->add_option("--shapes", args->shapes, "NAME:DIMS input shape (repeat per input), e.g. x:8x3x224x224")
      ->check(shape_spec_check())
      ->allow_extra_args(false);
  cmd->add_option("--iterations", args->iterations, "Profiled iterations")->check(at_least(1))->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Unprofiled iterations first")->check(at_least(0))->capture_default_str();
  cmd->add_option("--top", args->top, "Layers listed before \"others\"")->check(at_least(1))->capture_default_str();
  cmd->add_flag("--wide", args->wide, "Whole layer names and tactics (e.g. the conv / GEMM choices timed at build)");
  cmd->add_option("--trace", args->trace, "Write a Chrome trace JSON (one event per layer per iteration)");
  cmd->add_option("--json", args->json, "Write the per-layer figures to this JSON file ('-': standard output only)");
  cmd->add_option("--device", args->device,
                  "cpu, cuda or cuda:N (the GPU a CUDA engine runs on; default: the engine's own device, GPU 0)")
      ->check(device_check());
  cmd->add_option("--seed", args->seed, "Seed of the random inputs")->capture_default_str();
  cmd->callback([args]() { profile_engine(*args); });
}

}  // namespace kilnrt_cli
