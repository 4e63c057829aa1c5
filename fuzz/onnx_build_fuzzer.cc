// libFuzzer harness: ONNX import + build on the CPU backend, then (when the build succeeds) loading the engine and one
// inference on all-zero inputs. Each input is an ONNX model (protobuf bytes). The only acceptable failure is a
// kilnrt::Error; anything else (another exception type, a crash, a sanitizer report, a leak, a hang) is a finding.
//
// Caps, so that one input cannot take seconds or gigabytes:
//   - single host allocations above 32 MiB fail with kOutOfMemory (failure_injection::set_host_allocation_limit):
//     a model may legitimately ask for more, but here it only slows fuzzing down;
//   - ONNX Loop stops with an error after 100000 iterations (failure_injection::set_loop_iteration_limit);
//   - inference runs only when every input has a fixed shape with at most 64 Ki elements in total, and with
//     dynamic dims set to 1 (at most 4 dims dynamic).
// The model is written to a private temporary directory and built through the public API (build_engine on a path),
// so external-data references resolve inside that directory only.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "core/failure_injection.h"
#include "core/logging.h"
#include "engine/api_boundary.h"
#include "kilnrt/engine.h"

namespace {

std::string model_path;

kilnrt::Tensor zeros_for(const kilnrt::TensorInfo& info, int64_t* budget) {
  kilnrt::Shape shape;
  for (int64_t d : info.shape) shape.push_back(d < 0 ? 1 : d);
  const int64_t n = kilnrt::shape_numel(shape);
  if (n > *budget) throw kilnrt::Error(kilnrt::ErrorCode::kInvalidArgument, "input too large for the fuzzer");
  *budget -= n;
  return kilnrt::Tensor::zeros(info.dtype, shape);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // A std::exception escaping the library is a finding: keep it raw (not a kInternal kilnrt::Error).
  kilnrt::engine::set_exception_translation(false);
  kilnrt::failure_injection::set_host_allocation_limit(size_t(32) << 20);
  kilnrt::failure_injection::set_loop_iteration_limit(100000);  // a trip count of 2^62 must not hang
  kilnrt::set_log_level(kilnrt::LogLevel::kError);              // opset / precision warnings would flood the output
  const auto dir = std::filesystem::temp_directory_path() / ("kilnrt-onnx-fuzz-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  model_path = (dir / "model.onnx").string();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream f(model_path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    kilnrt::BuildOptions options;
    options.device = "cpu";
    const std::vector<uint8_t> bytes = kilnrt::build_engine(model_path, options);
    auto engine = kilnrt::Engine::from_bytes(bytes.data(), bytes.size(), "<fuzz engine>");
    std::map<std::string, kilnrt::Tensor> inputs;
    int64_t budget = 64 * 1024;
    int dynamic = 0;
    for (const kilnrt::TensorInfo& in : engine->inputs())
      for (int64_t d : in.shape) dynamic += d < 0;
    if (dynamic > 4) return 0;
    for (const kilnrt::TensorInfo& in : engine->inputs()) inputs[in.name] = zeros_for(in, &budget);
    auto ctx = engine->create_context();
    (void)ctx->run(inputs);
  } catch (const kilnrt::Error& e) {
    // kInternal is a bug in kilnrt caught by a safety net (e.g. a kernel's std::exception turned into an error by
    // the CPU executor): not a crash, but worth a look. The first distinct ones are printed.
    static std::set<std::string> seen;
    if (e.code() == kilnrt::ErrorCode::kInternal && seen.size() < 50 && seen.insert(e.message()).second)
      std::fprintf(stderr, "[fuzz] kInternal error: %s\n", e.what());
  }
  return 0;
}
