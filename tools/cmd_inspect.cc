// `kilnrt inspect FILE`: describes an engine file (I/O, layers, target, sizes) or an ONNX model (I/O, nodes).
#include <fstream>
#include <iostream>
#include <string>

#include "cli_common.h"

namespace kilnrt_cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// An ONNX ModelProto starts with field 1 (ir_version, varint): tag byte 0x08. Engine files start with their magic.
bool looks_like_onnx(const std::string& path) {
  if (ends_with(path, ".onnx")) return true;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw kilnrt::Error(kilnrt::ErrorCode::kIo, "cannot open file", path);
  char first = 0;
  in.get(first);
  return in && first == 0x08;
}

void inspect(const std::string& path) {
  if (looks_like_onnx(path)) {
    std::cout << kilnrt::describe_onnx_model(path);  // starts with "ONNX model <path>"
  } else {
    auto engine = kilnrt::Engine::load(path);
    std::cout << "engine " << path << "\n" << engine->describe();
  }
  std::cout.flush();
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("inspect", "Describe an engine file or an ONNX model");
  auto file = std::make_shared<std::string>();
  cmd->add_option("file", *file, "Engine file or ONNX model")->required()->check(CLI::ExistingFile);
  cmd->callback([file]() { inspect(*file); });
}

}  // namespace kilnrt_cli
