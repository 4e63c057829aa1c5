// kilnrt::cuda::DeviceBuffer and PinnedBuffer: RAII device memory (cuMemAlloc) and page-locked host memory
// (cuMemHostAlloc, portable) in a device's primary context, allocated and freed under kilnrt's context guard.
// Non-copyable, movable; destructors never throw. Allocation can synchronise the device: keep it off the hot path.
#pragma once
#include <cstddef>

#include "kilnrt/cuda/stream.h"

namespace kilnrt::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() noexcept = default;
  // `bytes` == 0 gives an empty buffer (data() == nullptr). Throws kOutOfMemory when the device is full.
  DeviceBuffer(int device, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;

  void* data() const noexcept { return ptr_; }
  size_t size() const noexcept { return bytes_; }
  int device() const noexcept { return device_; }
  explicit operator bool() const noexcept { return ptr_ != nullptr; }

  // Asynchronous copies / memset on `stream` (of this device's primary context, or 0 for the legacy default
  // stream). `offset` + `bytes` must lie inside the buffer. Host memory should be pinned for true asynchrony.
  void copy_from_host_async(const void* src, size_t bytes, StreamHandle stream, size_t offset = 0);
  void copy_to_host_async(void* dst, size_t bytes, StreamHandle stream, size_t offset = 0) const;
  void copy_from_device_async(const void* src, size_t bytes, StreamHandle stream, size_t offset = 0);
  void memset_async(unsigned char value, StreamHandle stream);
  void reset() noexcept;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int device_ = -1;
};

class PinnedBuffer {
 public:
  PinnedBuffer() noexcept = default;
  PinnedBuffer(int device, size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;

  void* data() const noexcept { return ptr_; }
  size_t size() const noexcept { return bytes_; }
  int device() const noexcept { return device_; }
  explicit operator bool() const noexcept { return ptr_ != nullptr; }
  void reset() noexcept;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int device_ = -1;
};

}  // namespace kilnrt::cuda
