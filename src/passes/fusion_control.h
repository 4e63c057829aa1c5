// KILNRT_NO_FUSION: a comma-separated list of fusions to skip ("attention", "attention-mask", "gelu",
// "gemm-epilogue", "layernorm", "embed-layernorm", "constants", ...) or "all";
// for comparing fused and unfused engines (benchmarks, bisecting an accuracy problem).
#pragma once
#include <cstdlib>
#include <string>

namespace kilnrt::passes {
inline bool fusion_enabled(const std::string& name) {
  const char* env = std::getenv("KILNRT_NO_FUSION");
  if (!env || !*env) return true;
  const std::string list = std::string(",") + env + ",";
  return list.find(",all,") == std::string::npos && list.find("," + name + ",") == std::string::npos;
}
}  // namespace kilnrt::passes
