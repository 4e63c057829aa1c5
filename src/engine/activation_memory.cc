#include "engine/activation_memory.h"

#include "core/check.h"

namespace kilnrt::engine {

MaxShapes profile_max_shapes(const std::vector<TensorInfo>& inputs,
                             const std::vector<std::vector<InputProfile>>& profiles) {
  MaxShapes out;
  const size_t count = profiles.empty() ? 1 : profiles.size();
  for (size_t p = 0; p < count; ++p) {
    std::vector<Shape> shapes;
    bool bounded = true;
    for (const TensorInfo& info : inputs) {
      const InputProfile* range = nullptr;
      if (!profiles.empty())
        for (const InputProfile& r : profiles[p])
          if (r.name == info.name) range = &r;
      Shape s = range ? range->max : info.shape;
      for (int64_t d : s) bounded &= d >= 0;
      shapes.push_back(std::move(s));
    }
    out.shapes.push_back(std::move(shapes));
    out.bounded.push_back(bounded);
  }
  return out;
}

std::vector<uint8_t> encode_activation_memory(const std::vector<int64_t>& bytes) {
  std::vector<uint8_t> out;
  auto put = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  put(bytes.size());
  for (int64_t b : bytes) put(static_cast<uint64_t>(b));
  return out;
}

std::vector<int64_t> decode_activation_memory(const std::vector<uint8_t>& blob, const std::string& label) {
  auto get = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(blob[at + i]) << (8 * i);
    return v;
  };
  KILNRT_CHECK(blob.size() >= 8, kInvalidEngine, label,
               "blob '" << kActivationMemoryBlob << "' is " << blob.size() << " bytes, shorter than its count");
  const uint64_t n = get(0);
  KILNRT_CHECK(n <= (blob.size() - 8) / 8 && blob.size() == 8 + 8 * n, kInvalidEngine, label,
               "blob '" << kActivationMemoryBlob << "' says " << n << " entries but holds " << blob.size() << " bytes");
  std::vector<int64_t> out;
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t v = static_cast<int64_t>(get(8 + 8 * i));
    KILNRT_CHECK(v >= -1, kInvalidEngine, label,
                 "blob '" << kActivationMemoryBlob << "': entry " << i << " is " << v << " bytes");
    out.push_back(v);
  }
  return out;
}

}  // namespace kilnrt::engine
