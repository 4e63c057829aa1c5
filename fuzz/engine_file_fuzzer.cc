// libFuzzer harness: engine-file loading (CPU engines). Each input is an engine file; it goes through the whole
// loader (Engine::from_bytes: header, section table, checksums, metadata, graph, weights, structure checks, then the
// CPU plan) and, when it loads, through describe() and create_context(). The only acceptable failure is a
// kilnrt::Error: anything else (another exception type, a crash, a sanitizer report, a leak) is a finding.
//
// The structure-aware mutator (engine_file_mutator.h) keeps most mutants well-formed enough to pass the checksum and
// size checks, so that fuzzing reaches the section parsers instead of stopping at "checksum mismatch".
#include <cstddef>
#include <cstdint>

#include "core/failure_injection.h"
#include "core/logging.h"
#include "engine/api_boundary.h"
#include "engine_file_mutator.h"
#include "kilnrt/engine.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // A std::exception escaping the library is a finding: keep it raw (not a kInternal kilnrt::Error).
  kilnrt::engine::set_exception_translation(false);
  // A hostile file must not make the loader allocate much more than its own size: cap single allocations.
  kilnrt::failure_injection::set_host_allocation_limit(size_t(64) << 20);
  kilnrt::set_log_level(kilnrt::LogLevel::kError);  // opset / precision warnings would flood the output
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto engine = kilnrt::Engine::from_bytes(data, size, "<fuzz>", -1);
    (void)engine->describe();
    (void)engine->layers();
    auto ctx = engine->create_context();
  } catch (const kilnrt::Error&) {
  }
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  return kilnrt::fuzz::mutate_engine_file(data, size, max_size, seed);
}
