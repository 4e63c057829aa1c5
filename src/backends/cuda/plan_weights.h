// CudaPlan's device weights (included by cuda_plan.cc and plan_weights.cc only).
//
// Three ways a plan gets its weights to the device:
//  - loading a v2 engine with a device weight image (engine/device_weights.h): ONE device allocation and ONE
//    host-to-device copy of the whole image at construction; find() / upload() / get() then return pointers into
//    it, and layers skip making host tensors for what is stored;
//  - recording (the builder): every upload is made one by one and its host bytes kept, for device_weight_image();
//  - neither (tests, engines without an image): uploaded one by one.
// An upload whose key is not in the image (a layer that made a buffer the builder did not see: other
// KILNRT_CUDA_NHWC / KILNRT_CUDA_CONV settings at load) is uploaded on its own.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cuda/cuda_plan.h"
#include "engine/device_weights.h"
#include "kilnrt/cuda/memory.h"

namespace kilnrt::backends::cuda {

class CudaPlan::Weights final : public DeviceWeights {
 public:
  Weights(int device, const engine::DeviceWeightImage* image, bool record);
  const void* find(const std::string& key) const override;
  const void* get(const std::string& name) const override;
  const void* upload(const std::string& key, const Tensor& host) override;
  bool has_host_data(const std::string& constant) const override {
    return device_only_.find(constant) == device_only_.end();
  }
  // Recording mode: the uploads so far as an image (entries in upload order, identical buffers shared).
  engine::DeviceWeightImage recorded_image();
  size_t image_bytes() const { return image_.size(); }
  size_t separate_uploads() const { return buffers_.size(); }

 private:
  int device_;
  kilnrt::cuda::DeviceBuffer image_;                        // the stored image, on the device
  std::unordered_map<std::string, uint64_t> image_offset_;  // key -> offset in image_
  std::set<std::string> device_only_;
  std::map<std::string, const void*> ptrs_;  // uploaded one by one
  std::vector<kilnrt::cuda::DeviceBuffer> buffers_;
  std::unique_ptr<engine::DeviceWeightImageBuilder> recorder_;
};

}  // namespace kilnrt::backends::cuda
