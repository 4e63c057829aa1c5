// `kilnrt build MODEL.onnx -o ENGINE [--device cpu|cuda] [--fp16] [--shapes NAME:D0xD1x...|NAME:MIN/OPT/MAX]...
//  [--layer-precision PATTERN=fp32|fp16|bf16]... [--mark-all-outputs]`
#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "cli_common.h"

namespace kilnrt_cli {
namespace {

struct BuildArgs {
  std::string model, output, device = "cpu";
  bool fp16 = false, bf16 = false, tf32 = false, mark_all_outputs = false, io16 = false;
  std::vector<std::string> shapes, layer_precisions;
};

void run_build(const BuildArgs& args) {
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
  std::cout << "built " << args.output << " (" << human_bytes(size) << ", device " << args.device
            << (args.fp16 ? ", fp16" : "") << (args.bf16 ? ", bf16" : "") << (args.tf32 ? ", tf32" : "")
            << (args.io16 ? ", 16-bit I/O" : "") << ") from " << args.model << " in " << seconds << " s\n";
}

}  // namespace

void add_build_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("build", "Build an engine file from an ONNX model");
  auto args = std::make_shared<BuildArgs>();
  cmd->add_option("model", args->model, "ONNX model")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", args->output, "Engine file to write")->required();
  cmd->add_option("--device", args->device, "Target device: cpu, cuda or cuda:N (GPU ordinal N)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (value == "cpu" || value == "cuda") return "";
            if (value.rfind("cuda:", 0) == 0 && value.size() > 5 &&
                value.find_first_not_of("0123456789", 5) == std::string::npos)
              return "";
            return "expected cpu, cuda or cuda:N, got '" + value + "'";
          },
          "cpu|cuda|cuda:N"))
      ->capture_default_str();
  cmd->add_flag("--fp16", args->fp16, "Allow float16 kernels");
  cmd->add_flag("--bf16", args->bf16, "Allow bfloat16 kernels");
  cmd->add_flag("--tf32", args->tf32, "Allow TF32 tensor-core math for float32 GEMMs/convolutions");
  cmd->add_flag("--io16", args->io16,
                "Bind the model's float32 inputs and outputs in the engine's 16-bit type (with --fp16 / --bf16): no "
                "conversion at the start and end of a run");
  cmd->add_option("--shapes", args->shapes,
                  "Input shape NAME:D0xD1x... (fixed) or NAME:MIN/OPT/MAX (dynamic range); repeat per input")
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
