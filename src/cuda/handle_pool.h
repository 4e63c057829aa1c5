// Per-device pools of cuBLASLt and cuDNN handles and of device workspaces. An execution context checks handles out
// (RAII leases) and they return to the pool when the lease ends, so creating contexts does not create handles every
// time. cuDNN and cuBLASLt are reached through dlsym on the handles library_loader found (no -lcudnn/-lcublasLt);
// when one is missing, acquiring its handle throws kilnrt::Error (kUnsupported) naming the library and what to
// install. Handles are created under the context guard; pools live for the process (idle handles are never
// destroyed at exit, when the libraries may be gone — trim() frees them earlier).
#pragma once
#include <cstddef>
#include <mutex>
#include <vector>

#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"

struct cublasLtContext;
struct cudnnContext;

namespace kilnrt::cuda {

struct DriverApi;

using CublasLtHandle = cublasLtContext*;  // == cublasLtHandle_t
using CudnnHandle = cudnnContext*;        // == cudnnHandle_t

// The library entry points the pools use (statuses are the libraries' enums, as int). Tests may inject fakes.
struct HandleLibraryApi {
  int (*cublasLtCreate)(CublasLtHandle*) = nullptr;
  int (*cublasLtDestroy)(CublasLtHandle) = nullptr;
  const char* (*cublasLtGetStatusString)(int) = nullptr;
  int (*cudnnCreate)(CudnnHandle*) = nullptr;
  int (*cudnnDestroy)(CudnnHandle) = nullptr;
  int (*cudnnSetStream)(CudnnHandle, StreamHandle) = nullptr;
  const char* (*cudnnGetErrorString)(int) = nullptr;
  const char* cublaslt_missing = nullptr;  // why cuBLASLt is unavailable (nullptr: available)
  const char* cudnn_missing = nullptr;     // why cuDNN is unavailable
};

// The real entry points, resolved on first use (never throws: a missing library is described in *_missing).
const HandleLibraryApi& handle_library_api();
// Replaces the entry points (nullptr restores the real ones). The caller keeps `api` alive while installed.
void set_handle_library_api_for_testing(const HandleLibraryApi* api);

class HandlePool;

class CublasLtLease {
 public:
  CublasLtLease() noexcept = default;
  ~CublasLtLease();
  CublasLtLease(CublasLtLease&& other) noexcept;
  CublasLtLease& operator=(CublasLtLease&& other) noexcept;
  CublasLtLease(const CublasLtLease&) = delete;
  CublasLtLease& operator=(const CublasLtLease&) = delete;
  CublasLtHandle get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  void release() noexcept;  // returns the handle to the pool now

 private:
  friend class HandlePool;
  HandlePool* pool_ = nullptr;
  CublasLtHandle handle_ = nullptr;
  unsigned long generation_ = 0;
};

class CudnnLease {
 public:
  CudnnLease() noexcept = default;
  ~CudnnLease();
  CudnnLease(CudnnLease&& other) noexcept;
  CudnnLease& operator=(CudnnLease&& other) noexcept;
  CudnnLease(const CudnnLease&) = delete;
  CudnnLease& operator=(const CudnnLease&) = delete;
  CudnnHandle get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  // cudnnSetStream under the guard: the handle's work goes on `stream` (a stream of the pool's device).
  void set_stream(StreamHandle stream) const;
  void release() noexcept;

 private:
  friend class HandlePool;
  HandlePool* pool_ = nullptr;
  CudnnHandle handle_ = nullptr;
  unsigned long generation_ = 0;
};

class WorkspaceLease {
 public:
  WorkspaceLease() noexcept = default;
  ~WorkspaceLease();
  WorkspaceLease(WorkspaceLease&& other) noexcept;
  WorkspaceLease& operator=(WorkspaceLease&& other) noexcept;
  WorkspaceLease(const WorkspaceLease&) = delete;
  WorkspaceLease& operator=(const WorkspaceLease&) = delete;
  void* data() const noexcept { return buffer_.data(); }
  size_t size() const noexcept { return buffer_.size(); }
  void release() noexcept;

 private:
  friend class HandlePool;
  HandlePool* pool_ = nullptr;
  DeviceBuffer buffer_;
  unsigned long generation_ = 0;
};

class HandlePool {
 public:
  // The pool of `device` (created on first use, kept for the process).
  static HandlePool& for_device(int device);

  // An idle handle, or a new one created under the guard. Throws kUnsupported when the library is missing, kCuda
  // when creation fails (with the library's status string).
  CublasLtLease acquire_cublaslt();
  // Also binds the handle to `stream` (cudnnSetStream).
  CudnnLease acquire_cudnn(StreamHandle stream);
  // A device buffer of at least `bytes` (the smallest idle one that fits, else a new one). Allocation may
  // synchronise: acquire workspaces when a context is created, not per enqueue.
  WorkspaceLease acquire_workspace(size_t bytes);

  int device() const noexcept { return device_; }
  size_t idle_cublaslt() const;
  size_t idle_cudnn() const;
  size_t idle_workspaces() const;
  size_t created_cublaslt() const;
  size_t created_cudnn() const;
  // Destroys idle handles and frees idle workspaces (under the guard). Never throws.
  void trim() noexcept;

 private:
  friend class CublasLtLease;
  friend class CudnnLease;
  friend class WorkspaceLease;
  explicit HandlePool(int device) : device_(device) {}
  // Forgets (leaks) idle resources made through another driver table / library table (tests swap them).
  void check_epoch_locked(const DriverApi* driver, const HandleLibraryApi* libs);
  void give_back(CublasLtHandle h, unsigned long generation) noexcept;
  void give_back(CudnnHandle h, unsigned long generation) noexcept;
  void give_back(DeviceBuffer&& b, unsigned long generation) noexcept;

  int device_;
  mutable std::mutex mutex_;
  const DriverApi* driver_ = nullptr;
  const HandleLibraryApi* libs_ = nullptr;
  unsigned long generation_ = 0;  // bumped when the tables change: leases of an older generation are dropped
  std::vector<CublasLtHandle> idle_cublaslt_;
  std::vector<CudnnHandle> idle_cudnn_;
  std::vector<DeviceBuffer> idle_workspaces_;
  size_t created_cublaslt_ = 0, created_cudnn_ = 0;
};

}  // namespace kilnrt::cuda
