// `kilnrt bench ENGINE [--batch N] [--shapes NAME:DIMS]... [--iterations N] [--duration S] [--warmup N]
// [--no-transfers] [--json FILE|-] [--device-memory] [--device cpu|cuda|cuda:N]`: times an engine on random inputs.
// CUDA engines: each iteration is H2D (pinned) + enqueue + D2H on one stream, each phase timed with CUDA events
// (--no-transfers: device-resident inputs, the enqueue alone); CPU engines: wall time of ExecutionContext::run. Prints
// latency statistics and the throughput (batch / mean latency); --json writes every figure with engine and GPU
// information.
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "cli_common.h"

namespace kilnrt_cli {
namespace {

struct BenchArgs {
  std::string engine;
  int batch = 0;
  std::vector<std::string> shapes;
  int iterations = 100;
  double duration = 0.0;
  int warmup = 10;
  bool no_transfers = false;
  std::string json;
  std::string device;
  bool device_memory = false;
  unsigned seed = 0;
};

void print_row(std::ostream& os, const std::string& name, const LatencyStats& s) {
  os << "  " << std::left << std::setw(10) << name << std::right << std::fixed << std::setprecision(4);
  for (double v : {s.min, s.mean, s.median, s.p90, s.p95, s.p99, s.max}) os << std::setw(10) << v;
  os << "\n";
}

std::string inputs_json(const std::map<std::string, kilnrt::Tensor>& inputs) {
  std::string out = "[";
  bool first = true;
  for (const auto& [name, t] : inputs) {
    out += std::string(first ? "" : ", ") + "{\"name\": " + json_string(name) +
           ", \"shape\": " + json_shape(t.shape()) + ", \"dtype\": " + json_string(kilnrt::dtype_name(t.dtype())) + "}";
    first = false;
  }
  return out + "]";
}

void bench_engine(const BenchArgs& args) {
  auto engine = load_engine_for(args.engine, args.device);
  const auto inputs = make_bench_inputs(*engine, args.batch, args.shapes, args.seed);
  const int64_t batch = batch_of(*engine, inputs);
  auto context = engine->create_context();
  BenchRunner runner(*engine, *context, inputs, !args.no_transfers);
  const bool cuda = runner.cuda();

  for (int i = 0; i < args.warmup; ++i) runner.run_once();
  std::vector<double> total, h2d, compute, d2h, wall;
  Progress progress("bench", args.iterations, args.duration);
  int done = 0;
  do {
    const BenchRunner::Sample s = runner.run_once();
    total.push_back(s.total_ms);
    h2d.push_back(s.h2d_ms);
    compute.push_back(s.compute_ms);
    d2h.push_back(s.d2h_ms);
    wall.push_back(s.wall_ms);
    ++done;
  } while (progress.update(done));
  progress.finish();
  const double seconds = progress.elapsed_s();
  const std::string mode = context->last_execution_mode();

  const LatencyStats st_total = compute_stats(total), st_compute = compute_stats(compute), st_h2d = compute_stats(h2d),
                     st_d2h = compute_stats(d2h), st_wall = compute_stats(wall);
  const double throughput = st_total.mean > 0 ? static_cast<double>(batch) * 1000.0 / st_total.mean : 0.0;
  const kilnrt::EngineHeaderInfo& h = engine->header();

  std::ostringstream os;
  os << "engine: " << args.engine << " (" << h.target << (h.gpu_name.empty() ? "" : ", " + h.gpu_name)
     << "; build: " << h.build_options << ")\n";
  for (const auto& [name, t] : inputs)
    os << "input  " << name << " " << kilnrt::shape_to_string(t.shape()) << " " << kilnrt::dtype_name(t.dtype())
       << " (random)\n";
  os << "warm-up " << args.warmup << ", timed " << plural(done, "iteration") << " in " << std::fixed
     << std::setprecision(3) << seconds << " s";
  if (cuda) os << ", execution: " << (mode.empty() ? "?" : mode);
  os << (cuda ? (runner.transfers() ? ", transfers: H2D pinned + D2H per iteration" : ", inputs device-resident")
              : ", CPU wall time")
     << "\n";
  os << "latency (ms)      min      mean    median       p90       p95       p99       max\n";
  print_row(os, "total", st_total);
  if (cuda && runner.transfers()) {
    print_row(os, "h2d", st_h2d);
    print_row(os, "compute", st_compute);
    print_row(os, "d2h", st_d2h);
  }
  if (cuda) print_row(os, "host wall", st_wall);
  os << std::setprecision(1) << "throughput: " << throughput << " inferences/s (batch " << batch << ", mean "
     << std::setprecision(4) << st_total.mean << " ms)\n";
  if (args.device_memory) {
    os << "memory: weights " << human_bytes(h.weights_bytes) << ", context "
       << human_bytes(context->device_memory_bytes())
       << (cuda ? " of device memory (activation arena + workspace)" : " (CPU engine: no device memory)") << ", inputs "
       << human_bytes(runner.input_bytes()) << ", outputs " << human_bytes(runner.output_bytes()) << "\n";
  }
  if (args.json != "-") std::cout << os.str();  // `--json -`: standard output carries the JSON alone

  if (!args.json.empty()) {
    std::ostringstream js;
    js << "{\n  \"engine\": " << json_string(args.engine)
       << ",\n  \"kilnrt_version\": " << json_string(kilnrt::version()) << ",\n  \"target\": " << json_string(h.target)
       << ",\n  \"device\": " << json_string(cuda ? "cuda:" + std::to_string(engine->device()) : "cpu")
       << ",\n  \"gpu\": " << json_string(h.gpu_name) << ",\n  \"build_options\": " << json_string(h.build_options)
       << ",\n  \"batch\": " << batch << ",\n  \"inputs\": " << inputs_json(inputs)
       << ",\n  \"warmup\": " << args.warmup << ",\n  \"iterations\": " << done
       << ",\n  \"duration_s\": " << json_number(seconds)
       << ",\n  \"transfers\": " << (runner.transfers() ? "true" : "false")
       << ",\n  \"execution_mode\": " << json_string(mode)
       << ",\n  \"timing\": " << json_string(cuda ? "cuda-events" : "wall-clock")
       << ",\n  \"latency_ms\": " << stats_json(st_total) << ",\n  \"compute_ms\": " << stats_json(st_compute);
    if (cuda && runner.transfers())
      js << ",\n  \"h2d_ms\": " << stats_json(st_h2d) << ",\n  \"d2h_ms\": " << stats_json(st_d2h);
    js << ",\n  \"wall_ms\": " << stats_json(st_wall)
       << ",\n  \"throughput_inferences_per_s\": " << json_number(throughput)
       << ",\n  \"memory\": {\"weights_bytes\": " << h.weights_bytes
       << ", \"context_device_bytes\": " << context->device_memory_bytes()
       << ", \"input_bytes\": " << runner.input_bytes() << ", \"output_bytes\": " << runner.output_bytes() << "}\n}\n";
    write_json(args.json, js.str());
    if (args.json != "-" && !global_options().quiet) std::cout << "json: " << args.json << "\n";
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bench", "Time an engine on random inputs (latency percentiles, throughput)");
  auto args = std::make_shared<BenchArgs>();
  cmd->add_option("engine", args->engine, "Engine file")->required();
  cmd->add_option("--batch", args->batch, "Batch size: dimension 0 of every input (default: the profile's opt)")
      ->check(at_least(1));
  cmd->add_option("--shapes", args->shapes, "NAME:DIMS input shape (repeat per input), e.g. x:8x3x224x224")
      ->check(shape_spec_check())
      ->allow_extra_args(false);
  cmd->add_option("--iterations", args->iterations, "Timed iterations (at least)")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--duration", args->duration, "Time for at least this many seconds")
      ->check(non_negative_number())
      ->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed iterations first")->check(at_least(0))->capture_default_str();
  cmd->add_flag("--no-transfers", args->no_transfers,
                "CUDA engines: device-resident inputs and outputs, time the enqueue alone");
  cmd->add_option("--json", args->json,
                  "Write every figure, with engine and GPU information, to this JSON file ('-': standard output "
                  "only)");
  cmd->add_option("--device", args->device,
                  "cpu, cuda or cuda:N (the GPU a CUDA engine runs on; default: the engine's own device, GPU 0)")
      ->check(device_check());
  cmd->add_flag("--device-memory", args->device_memory, "Report weights and the context's device memory");
  cmd->add_option("--seed", args->seed, "Seed of the random inputs")->capture_default_str();
  cmd->callback([args]() { bench_engine(*args); });
}

}  // namespace kilnrt_cli
