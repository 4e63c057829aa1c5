// DeviceBuffer and PinnedBuffer: allocated and freed under the primary-context guard, through the one driver table.
#include "kilnrt/cuda/memory.h"

#include <cstdint>
#include <utility>

#include "core/check.h"
#include "cuda/capture_safety.h"
#include "cuda/context_guard.h"

namespace kilnrt::cuda {
namespace {

CUdeviceptr to_dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }
void* from_dptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

void check_range(const DeviceBuffer& b, size_t offset, size_t bytes, const char* what) {
  KILNRT_CHECK(b.data() != nullptr || bytes == 0, kInvalidArgument, "DeviceBuffer", what << " on an empty buffer");
  KILNRT_CHECK(
      offset <= b.size() && bytes <= b.size() - offset, kInvalidArgument, "DeviceBuffer",
      what << ": offset " << offset << " + " << bytes << " bytes exceeds the buffer's " << b.size() << " bytes");
}

}  // namespace

// ---- DeviceBuffer ------------------------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(int device, size_t bytes) : device_(device) {
  if (bytes == 0) return;
  CaptureGate gate(device, CaptureGate::Kind::kExclusive);  // allocation may synchronise the context
  ContextGuard guard(device);
  CUdeviceptr p = 0;
  KILNRT_CU_CHECK(guard.api(), guard.api().MemAlloc(&p, bytes),
                  "DeviceBuffer(device " + std::to_string(device) + ", " + std::to_string(bytes) + " bytes)");
  ptr_ = from_dptr(p);
  bytes_ = bytes;
}

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      device_(std::exchange(other.device_, -1)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void DeviceBuffer::reset() noexcept {
  bytes_ = 0;
  if (!ptr_) return;
  CUdeviceptr p = to_dptr(std::exchange(ptr_, nullptr));
  CaptureGate gate(device_, CaptureGate::Kind::kExclusive);  // cuMemFree synchronises the context
  release_quietly(device_, "device memory", [p](const DriverApi& api) { return api.MemFree(p); });
}

void DeviceBuffer::copy_from_host_async(const void* src, size_t bytes, StreamHandle stream, size_t offset) {
  check_range(*this, offset, bytes, "copy_from_host_async");
  if (bytes == 0) return;
  KILNRT_CHECK(src != nullptr, kInvalidArgument, "DeviceBuffer", "copy_from_host_async from a null pointer");
  ContextGuard guard(device_);
  KILNRT_CU_CHECK(guard.api(), guard.api().MemcpyHtoDAsync(to_dptr(ptr_) + offset, src, bytes, stream),
                  "DeviceBuffer::copy_from_host_async");
}

void DeviceBuffer::copy_to_host_async(void* dst, size_t bytes, StreamHandle stream, size_t offset) const {
  check_range(*this, offset, bytes, "copy_to_host_async");
  if (bytes == 0) return;
  KILNRT_CHECK(dst != nullptr, kInvalidArgument, "DeviceBuffer", "copy_to_host_async to a null pointer");
  ContextGuard guard(device_);
  KILNRT_CU_CHECK(guard.api(), guard.api().MemcpyDtoHAsync(dst, to_dptr(ptr_) + offset, bytes, stream),
                  "DeviceBuffer::copy_to_host_async");
}

void DeviceBuffer::copy_from_device_async(const void* src, size_t bytes, StreamHandle stream, size_t offset) {
  check_range(*this, offset, bytes, "copy_from_device_async");
  if (bytes == 0) return;
  KILNRT_CHECK(src != nullptr, kInvalidArgument, "DeviceBuffer", "copy_from_device_async from a null pointer");
  ContextGuard guard(device_);
  KILNRT_CU_CHECK(guard.api(), guard.api().MemcpyDtoDAsync(to_dptr(ptr_) + offset, to_dptr(src), bytes, stream),
                  "DeviceBuffer::copy_from_device_async");
}

void DeviceBuffer::memset_async(unsigned char value, StreamHandle stream) {
  if (!ptr_) return;
  ContextGuard guard(device_);
  KILNRT_CU_CHECK(guard.api(), guard.api().MemsetD8Async(to_dptr(ptr_), value, bytes_, stream),
                  "DeviceBuffer::memset_async");
}

// ---- PinnedBuffer ------------------------------------------------------------------------------------------

PinnedBuffer::PinnedBuffer(int device, size_t bytes) : device_(device) {
  if (bytes == 0) return;
  CaptureGate gate(device, CaptureGate::Kind::kExclusive);
  ContextGuard guard(device);
  void* p = nullptr;
  KILNRT_CU_CHECK(guard.api(), guard.api().MemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE),
                  "PinnedBuffer(device " + std::to_string(device) + ", " + std::to_string(bytes) + " bytes)");
  ptr_ = p;
  bytes_ = bytes;
}

PinnedBuffer::~PinnedBuffer() { reset(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      device_(std::exchange(other.device_, -1)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void PinnedBuffer::reset() noexcept {
  bytes_ = 0;
  if (!ptr_) return;
  void* p = std::exchange(ptr_, nullptr);
  CaptureGate gate(device_, CaptureGate::Kind::kExclusive);  // cuMemFreeHost synchronises the context
  release_quietly(device_, "pinned host memory", [p](const DriverApi& api) { return api.MemFreeHost(p); });
}

}  // namespace kilnrt::cuda
