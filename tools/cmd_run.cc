// `kilnrt run ENGINE [--input NAME=FILE.npy]... [--save-outputs DIR] [--iterations N] [--seed N]
// [--device cpu|cuda|cuda:N]`: runs an engine on given or random inputs and prints each output (name, shape, dtype,
// value summary) and the run time.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli_common.h"

namespace kilnrt_cli {
namespace {

struct RunArgs {
  std::string engine;
  std::vector<std::string> inputs;
  std::string save_dir;
  std::string device;
  int iterations = 1;
  unsigned seed = 0;
};

// Shape for a random input: fixed dims as declared, dynamic dims from the first profile's opt shape, else 1.
kilnrt::Shape random_input_shape(const kilnrt::Engine& engine, const kilnrt::TensorInfo& info) {
  for (const auto& profile : engine.profiles()) {
    for (const auto& range : profile) {
      if (range.name == info.name && range.opt.size() == info.shape.size()) return range.opt;
    }
    break;  // only the first profile
  }
  kilnrt::Shape shape = info.shape;
  for (int64_t& d : shape) {
    if (d < 0) d = 1;
  }
  return shape;
}

void make_directories(const std::string& dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!partial.empty() && ::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
        throw kilnrt::Error(kilnrt::ErrorCode::kIo, std::string("cannot create directory: ") + std::strerror(errno),
                            partial);
    }
    if (i < dir.size()) partial += dir[i];
  }
}

void run_engine(const RunArgs& args) {
  auto engine = load_engine_for(args.engine, args.device);

  std::map<std::string, kilnrt::Tensor> feeds;
  for (const std::string& item : args.inputs) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, "expected --input NAME=FILE.npy", item);
    const std::string name = item.substr(0, eq);
    bool known = false;
    for (const auto& info : engine->inputs()) known = known || info.name == name;
    if (!known) {
      std::string names;
      for (const auto& info : engine->inputs()) names += (names.empty() ? "" : ", ") + info.name;
      throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument,
                          "the engine has no input named '" + name + "' (inputs: " + names + ")", item);
    }
    feeds[name] = kilnrt::load_npy(item.substr(eq + 1));
  }
  unsigned seed = args.seed;
  for (const auto& info : engine->inputs()) {
    if (feeds.count(info.name)) {
      std::cout << "input  " << info.name << " " << kilnrt::shape_to_string(feeds[info.name].shape()) << " "
                << kilnrt::dtype_name(feeds[info.name].dtype()) << " (from file)\n";
      continue;
    }
    kilnrt::Shape shape = random_input_shape(*engine, info);
    feeds[info.name] = random_tensor(info.dtype, shape, seed++);
    std::cout << "input  " << info.name << " " << kilnrt::shape_to_string(shape) << " "
              << kilnrt::dtype_name(info.dtype) << " (random)\n";
  }

  auto context = engine->create_context();
  for (const auto& [name, tensor] : feeds) context->set_input_shape(name, tensor.shape());
  std::map<std::string, kilnrt::Tensor> outputs;
  double first_ms = 0.0, total_ms = 0.0;
  for (int i = 0; i < args.iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    outputs = context->run(feeds);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i == 0)
      first_ms = ms;
    else
      total_ms += ms;
  }

  if (!args.save_dir.empty()) make_directories(args.save_dir);
  for (const auto& info : engine->outputs()) {
    auto it = outputs.find(info.name);
    if (it == outputs.end())
      throw kilnrt::Error(kilnrt::ErrorCode::kInternal, "the engine did not produce this output", info.name);
    const kilnrt::Tensor& t = it->second;
    std::cout << "output " << info.name << " " << kilnrt::shape_to_string(t.shape()) << " "
              << kilnrt::dtype_name(t.dtype()) << ": " << summarize_values(t) << "\n";
    if (!args.save_dir.empty()) {
      const std::string path = join_path(args.save_dir, sanitize_file_name(info.name) + ".npy");
      kilnrt::save_npy(path, t);
      if (!global_options().quiet) std::cout << "       saved to " << path << "\n";
    }
  }
  std::cout << std::fixed << std::setprecision(3) << "run time: " << first_ms << " ms (first run, "
            << engine->header().target << ")";
  if (args.iterations > 1)
    std::cout << ", mean of the next " << plural(args.iterations - 1, "run") << ": " << total_ms / (args.iterations - 1)
              << " ms";
  std::cout << "\n";
}

}  // namespace

void add_run_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("run", "Run an engine on inputs from .npy files or on random inputs");
  auto args = std::make_shared<RunArgs>();
  cmd->add_option("engine", args->engine, "Engine file")->required();
  cmd->add_option("--input", args->inputs, "NAME=FILE.npy (repeat per input); missing inputs get random values")
      ->allow_extra_args(false);
  cmd->add_option("--save-outputs", args->save_dir, "Write each output to DIR/<output name>.npy");
  cmd->add_option("--iterations", args->iterations, "Run this many times and report the mean after the first")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--device", args->device,
                  "cpu, cuda or cuda:N (the GPU a CUDA engine runs on; default: the engine's own device, GPU 0)")
      ->check(device_check());
  cmd->add_option("--seed", args->seed, "Seed of the random inputs")->capture_default_str();
  cmd->callback([args]() { run_engine(*args); });
}

}  // namespace kilnrt_cli
