// The device weight image of a CUDA engine (engine format v2, docs/engine-format.md, "Device weights section"):
// every buffer the CUDA plan uploads at load (constants in the engine's storage dtype — 16-bit in --fp16 / --bf16
// engines —, NHWC / 16-bit copies the layers make, folded parameters), already in device form and packed
// back to back at 256-byte offsets, so that loading is one device allocation and one host-to-device copy.
//
// The builder records the image while it plans the engine on the GPU (CudaPlan in recording mode) and stores it in
// the file; constants that only device layers read (and that are in the image under their own name) are then
// stored without host data ("device-only"): the loaded graph keeps their dtype and shape, not their values.
// Pure host code: usable (and tested) in builds without CUDA.
#pragma once
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kilnrt/tensor.h"

namespace kilnrt::engine {

// Image offsets are multiples of this (device buffers keep the alignment cudaMalloc would give them).
constexpr uint64_t kDeviceWeightAlignment = 256;

struct DeviceWeight {
  std::string key;  // a constant's name, or a layer's derived buffer ("node/nhwc_W", "W#fp16", ...)
  DType dtype = DType::kUndefined;
  Shape shape;
  uint64_t offset = 0;  // from the image start, a multiple of kDeviceWeightAlignment
  uint64_t nbytes = 0;  // numel(shape) * dtype_size(dtype)
};

struct DeviceWeightImage {
  std::vector<DeviceWeight> entries;  // keys unique; entries with identical bytes may share one offset
  // The image bytes: a view into the engine file's bytes after loading (valid while they are, i.e. during
  // Engine::from_bytes), or `owned`'s data when the builder made it.
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  std::shared_ptr<std::vector<uint8_t>> owned;
  // Constants stored without host data (their graph tensors hold no meaningful values).
  std::set<std::string> device_only;

  bool empty() const { return entries.empty(); }
  // The entry named `key`, or nullptr.
  const DeviceWeight* find(const std::string& key) const;
};

// Builds an image from host tensors in upload order (identical buffers are stored once).
class DeviceWeightImageBuilder {
 public:
  void add(const std::string& key, const Tensor& host);
  bool contains(const std::string& key) const;
  DeviceWeightImage finish();  // entries + owned bytes (device_only left empty)

 private:
  struct Item {
    DeviceWeight w;
    Tensor host;
    uint32_t crc = 0;
  };
  std::vector<Item> items_;
  uint64_t size_ = 0;
};

}  // namespace kilnrt::engine
