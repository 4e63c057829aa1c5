// Activation memory of CUDA engines at the profiles' max shapes: which shapes those are, and how the figures are
// stored in the engine file (blob "activation_memory", see docs/engine-format.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kilnrt/engine.h"

namespace kilnrt::engine {

constexpr const char* kActivationMemoryBlob = "activation_memory";

// The input shapes (in input order) at each profile's max: one entry per profile, or one for an engine without
// profiles. `bounded[i]` is false where an input keeps a dynamic dim that the profile does not bound.
struct MaxShapes {
  std::vector<std::vector<Shape>> shapes;
  std::vector<bool> bounded;
};
MaxShapes profile_max_shapes(const std::vector<TensorInfo>& inputs,
                             const std::vector<std::vector<InputProfile>>& profiles);

// Blob payload: u64 count, then count x i64 bytes (-1: unbounded), little-endian.
std::vector<uint8_t> encode_activation_memory(const std::vector<int64_t>& bytes);
// Throws kInvalidEngine naming `label` when the payload is malformed.
std::vector<int64_t> decode_activation_memory(const std::vector<uint8_t>& blob, const std::string& label);

}  // namespace kilnrt::engine
