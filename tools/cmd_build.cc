// `kilnrt build MODEL.onnx -o ENGINE [--device cpu|cuda|cuda:N] [--fp16|--bf16] [--tf32] [--io16]
//  [--shapes NAME:D0xD1x...|NAME:MIN/OPT/MAX]... [--layer-precision PATTERN=fp32|fp16|bf16]... [--mark-all-outputs]`
#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "cli_common.h"

namespace kilnrt_cli {
namespace {

struct BuildArgs {
  std::string model, output, device = "cpu";
  bool fp16 = false, bf16 = false, tf32 = false, mark_all_outputs = false, io16 = false;
  std::vector<std::string> shapes, layer_precisions;
};

// Flags that contradict each other: refused before anything is read (exit status 2).
void check_flags(const BuildArgs& args) {
  const bool cuda = parse_device_choice(args.device).cuda;
  if (!cuda) {
    const std::vector<std::pair<bool, std::string>> cuda_flags = {
        {args.fp16, "--fp16"}, {args.bf16, "--bf16"}, {args.tf32, "--tf32"}, {args.io16, "--io16"}};
    for (const auto& [on, flag] : cuda_flags)
      if (on)
        throw UsageError(flag +
                         " is a CUDA build option (--fp16, --bf16, --tf32 and --io16 apply to CUDA engines only; CPU "
                         "engines compute in float32): build with --device cuda or cuda:N, or drop " +
                         flag);
  }
  if (args.fp16 && args.bf16) throw UsageError("--fp16 and --bf16 exclude each other: an engine has one 16-bit type");
  if (args.io16 && !args.fp16 && !args.bf16) throw UsageError("--io16 needs --fp16 or --bf16 (16-bit engine I/O)");
}

void run_build(const BuildArgs& args) {
  check_flags(args);
  require_readable_file(args.model, "ONNX model");
  kilnrt::BuildOptions options;
  options.device = args.device;
  options.fp16 = args.fp16;
  options.bf16 = args.bf16;
  options.tf32 = args.tf32;
  options.mark_all_outputs = args.mark_all_outputs;
  options.io16 = args.io16;
  for (const std::string& spec : args.layer_precisions) {
    const size_t eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument,
                          "bad --layer-precision '" + spec + "': expected PATTERN=fp32|fp16|bf16", "--layer-precision");
    options.layer_precisions.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
  }
  if (!args.shapes.empty()) {
    std::vector<kilnrt::InputProfile> profile;
    for (const std::string& spec : args.shapes) profile.push_back(kilnrt::parse_shape_spec(spec));
    options.profiles.push_back(profile);
  }
  const auto start = std::chrono::steady_clock::now();
  kilnrt::build_engine_file(args.model, args.output, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream written(args.output, std::ios::binary | std::ios::ate);
  const auto size = written ? static_cast<unsigned long long>(written.tellg()) : 0ull;
  if (global_options().quiet) return;
  std::cout << "built " << args.output << " (" << human_bytes(size) << ", device " << args.device
            << (args.fp16 ? ", fp16" : "") << (args.bf16 ? ", bf16" : "") << (args.tf32 ? ", tf32" : "")
            << (args.io16 ? ", 16-bit I/O" : "") << ") from " << args.model << " in " << seconds_text(seconds) << "\n";
}

}  // namespace

void add_build_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("build", "Build an engine file from an ONNX model");
  auto args = std::make_shared<BuildArgs>();
  cmd->add_option("model", args->model, "ONNX model")->required();
  cmd->add_option("-o,--output", args->output, "Engine file to write")->required();
  cmd->add_option("--device", args->device, "Target device: cpu, cuda or cuda:N (GPU ordinal N)")
      ->check(device_check())
      ->capture_default_str();
  cmd->add_flag("--fp16", args->fp16, "CUDA: allow float16 kernels");
  cmd->add_flag("--bf16", args->bf16, "CUDA: allow bfloat16 kernels");
  cmd->add_flag("--tf32", args->tf32, "CUDA: allow TF32 tensor-core math for float32 GEMMs/convolutions");
  cmd->add_flag(
      "--io16", args->io16,
      "CUDA: bind the model's float32 inputs and outputs in the engine's 16-bit type (with --fp16 / --bf16): no "
      "conversion at the start and end of a run");
  cmd->add_option("--shapes", args->shapes,
                  "Input shape NAME:D0xD1x... (fixed) or NAME:MIN/OPT/MAX (dynamic range); repeat per input")
      ->check(shape_spec_check())
      ->allow_extra_args(false);
  cmd->add_option("--layer-precision", args->layer_precisions,
                  "Per-layer precision PATTERN=fp32|fp16|bf16 (PATTERN: layer name or op type, '*' wildcard); "
                  "repeatable, a later one wins. fp16/bf16 need --fp16/--bf16")
      ->allow_extra_args(false);
  cmd->add_flag("--mark-all-outputs", args->mark_all_outputs,
                "Debug: make every intermediate tensor an engine output (to compare engines layer by layer)");
  cmd->callback([args]() { run_build(*args); });
}

}  // namespace kilnrt_cli
