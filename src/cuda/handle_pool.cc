// Per-device pools of cuBLASLt / cuDNN handles and workspaces (see handle_pool.h).
#include "cuda/handle_pool.h"

#include <atomic>
#include <utility>

#include "core/check.h"
#include "core/logging.h"
#include "cuda/context_guard.h"
#include "cuda/library_loader.h"

namespace kilnrt::cuda {
namespace {

constexpr int kMaxPoolDevices = 64;

std::atomic<const HandleLibraryApi*> g_lib_override{nullptr};
std::once_flag g_lib_once;
HandleLibraryApi* g_real_libs = nullptr;  // leaked
std::mutex g_pools_mutex;
HandlePool* g_pools[kMaxPoolDevices];  // leaked, constant-initialised

template <class Fn>
Fn sym(Library lib, const char* name) {
  return reinterpret_cast<Fn>(library_symbol(lib, name));
}

void load_real_libs() {
  auto* a = new HandleLibraryApi;
  const LibraryInfo& lt = library(Library::kCublasLt);
  if (lt.found) {
    a->cublasLtCreate = sym<decltype(a->cublasLtCreate)>(Library::kCublasLt, "cublasLtCreate");
    a->cublasLtDestroy = sym<decltype(a->cublasLtDestroy)>(Library::kCublasLt, "cublasLtDestroy");
    a->cublasLtGetStatusString =
        sym<decltype(a->cublasLtGetStatusString)>(Library::kCublasLt, "cublasLtGetStatusString");
    if (!a->cublasLtCreate || !a->cublasLtDestroy)
      a->cublaslt_missing =
          (new std::string("cuBLASLt at " + lt.path + " lacks cublasLtCreate / cublasLtDestroy"))->c_str();
  } else {
    a->cublaslt_missing = (new std::string(lt.why_missing))->c_str();
  }
  const LibraryInfo& dnn = library(Library::kCudnn);
  if (dnn.found) {
    a->cudnnCreate = sym<decltype(a->cudnnCreate)>(Library::kCudnn, "cudnnCreate");
    a->cudnnDestroy = sym<decltype(a->cudnnDestroy)>(Library::kCudnn, "cudnnDestroy");
    a->cudnnSetStream = sym<decltype(a->cudnnSetStream)>(Library::kCudnn, "cudnnSetStream");
    a->cudnnGetErrorString = sym<decltype(a->cudnnGetErrorString)>(Library::kCudnn, "cudnnGetErrorString");
    if (!a->cudnnCreate || !a->cudnnDestroy || !a->cudnnSetStream)
      a->cudnn_missing =
          (new std::string("cuDNN at " + dnn.path + " lacks cudnnCreate / cudnnDestroy / cudnnSetStream"))->c_str();
  } else {
    a->cudnn_missing = (new std::string(dnn.why_missing))->c_str();
  }
  g_real_libs = a;
}

std::string lt_status(const HandleLibraryApi& a, int s) {
  const char* t = a.cublasLtGetStatusString ? a.cublasLtGetStatusString(s) : nullptr;
  return t ? std::string(t) + " (" + std::to_string(s) + ")" : "cublasStatus_t " + std::to_string(s);
}
std::string dnn_status(const HandleLibraryApi& a, int s) {
  const char* t = a.cudnnGetErrorString ? a.cudnnGetErrorString(s) : nullptr;
  return t ? std::string(t) + " (" + std::to_string(s) + ")" : "cudnnStatus_t " + std::to_string(s);
}

// Moves resources somewhere they are never destroyed (they belong to a table that is no longer installed).
template <class T>
void leak(std::vector<T>& v) {
  if (v.empty()) return;
  new std::vector<T>(std::move(v));
  v.clear();
}

}  // namespace

const HandleLibraryApi& handle_library_api() {
  if (const HandleLibraryApi* o = g_lib_override.load(std::memory_order_acquire)) return *o;
  std::call_once(g_lib_once, [] {
    try {
      load_real_libs();
    } catch (...) {
      auto* a = new HandleLibraryApi;
      a->cublaslt_missing = a->cudnn_missing = "out of memory while loading cuBLASLt / cuDNN";
      g_real_libs = a;
    }
  });
  return *g_real_libs;
}

void set_handle_library_api_for_testing(const HandleLibraryApi* api) {
  g_lib_override.store(api, std::memory_order_release);
}

// ---- HandlePool --------------------------------------------------------------------------------------------
HandlePool& HandlePool::for_device(int device) {
  KILNRT_CHECK(device >= 0 && device < kMaxPoolDevices, kInvalidArgument, "device " + std::to_string(device),
               "CUDA device " << device << " is out of range");
  std::lock_guard<std::mutex> lock(g_pools_mutex);
  if (!g_pools[device]) g_pools[device] = new HandlePool(device);
  return *g_pools[device];
}

void HandlePool::check_epoch_locked(const DriverApi* driver, const HandleLibraryApi* libs) {
  if (driver == driver_ && libs == libs_) return;
  if (driver_ || libs_) {
    leak(idle_cublaslt_);
    leak(idle_cudnn_);
    leak(idle_workspaces_);
  }
  driver_ = driver;
  libs_ = libs;
  ++generation_;
}

CublasLtLease HandlePool::acquire_cublaslt() {
  const HandleLibraryApi& libs = handle_library_api();
  const std::string where = "cuBLASLt handle (device " + std::to_string(device_) + ")";
  KILNRT_CHECK(libs.cublaslt_missing == nullptr, kUnsupported, where,
               "cuBLASLt is not available: " << libs.cublaslt_missing);
  ContextGuard guard(device_);  // also refuses in a forked child, before an inherited handle is handed out
  CublasLtLease lease;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    check_epoch_locked(&guard.api(), &libs);
    lease.pool_ = this;
    lease.generation_ = generation_;
    if (!idle_cublaslt_.empty()) {
      lease.handle_ = idle_cublaslt_.back();
      idle_cublaslt_.pop_back();
      return lease;
    }
  }
  CublasLtHandle h = nullptr;
  int s = libs.cublasLtCreate(&h);
  KILNRT_CHECK(s == 0 && h != nullptr, kCuda, where, "cublasLtCreate failed: " << lt_status(libs, s));
  lease.handle_ = h;
  std::lock_guard<std::mutex> lock(mutex_);
  ++created_cublaslt_;
  return lease;
}

CudnnLease HandlePool::acquire_cudnn(StreamHandle stream) {
  const HandleLibraryApi& libs = handle_library_api();
  const std::string where = "cuDNN handle (device " + std::to_string(device_) + ")";
  KILNRT_CHECK(libs.cudnn_missing == nullptr, kUnsupported, where, "cuDNN is not available: " << libs.cudnn_missing);
  ContextGuard guard(device_);
  CudnnLease lease;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    check_epoch_locked(&guard.api(), &libs);
    lease.pool_ = this;
    lease.generation_ = generation_;
    if (!idle_cudnn_.empty()) {
      lease.handle_ = idle_cudnn_.back();
      idle_cudnn_.pop_back();
    }
  }
  if (!lease.handle_) {
    CudnnHandle h = nullptr;
    int s = libs.cudnnCreate(&h);
    KILNRT_CHECK(s == 0 && h != nullptr, kCuda, where,
                 "cudnnCreate failed: " << dnn_status(libs, s)
                                        << (s == 1 || s == 4001 ? " (cuDNN could not initialise the GPU: check the "
                                                                  "driver and that cuDNN matches the CUDA version)"
                                                                : ""));
    lease.handle_ = h;
    std::lock_guard<std::mutex> lock(mutex_);
    ++created_cudnn_;
  }
  lease.set_stream(stream);  // on failure the lease returns the handle to the pool
  return lease;
}

WorkspaceLease HandlePool::acquire_workspace(size_t bytes) {
  ContextGuard guard(device_);
  WorkspaceLease lease;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    check_epoch_locked(&guard.api(), &handle_library_api());
    lease.pool_ = this;
    lease.generation_ = generation_;
    size_t best = idle_workspaces_.size();
    for (size_t i = 0; i < idle_workspaces_.size(); ++i)
      if (idle_workspaces_[i].size() >= bytes &&
          (best == idle_workspaces_.size() || idle_workspaces_[i].size() < idle_workspaces_[best].size()))
        best = i;
    if (best < idle_workspaces_.size()) {
      lease.buffer_ = std::move(idle_workspaces_[best]);
      idle_workspaces_.erase(idle_workspaces_.begin() + static_cast<std::ptrdiff_t>(best));
      return lease;
    }
  }
  if (bytes > 0) lease.buffer_ = DeviceBuffer(device_, bytes);
  return lease;
}

void HandlePool::give_back(CublasLtHandle h, unsigned long generation) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation == generation_) idle_cublaslt_.push_back(h);  // else: of a replaced table, leaked
  } catch (...) {
  }
}
void HandlePool::give_back(CudnnHandle h, unsigned long generation) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation == generation_) idle_cudnn_.push_back(h);
  } catch (...) {
  }
}
void HandlePool::give_back(DeviceBuffer&& b, unsigned long generation) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation == generation_) {
      idle_workspaces_.push_back(std::move(b));
    } else {
      new DeviceBuffer(std::move(b));  // of a replaced driver table: leaked
    }
  } catch (...) {
  }
}

size_t HandlePool::idle_cublaslt() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_cublaslt_.size();
}
size_t HandlePool::idle_cudnn() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_cudnn_.size();
}
size_t HandlePool::idle_workspaces() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_workspaces_.size();
}
size_t HandlePool::created_cublaslt() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return created_cublaslt_;
}
size_t HandlePool::created_cudnn() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return created_cudnn_;
}

void HandlePool::trim() noexcept {
  if (!cleanup_allowed()) return;
  std::vector<CublasLtHandle> lt;
  std::vector<CudnnHandle> dnn;
  std::vector<DeviceBuffer> ws;
  const HandleLibraryApi* libs = nullptr;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string why;
    if (driver_ != try_driver_api(&why) || libs_ != &handle_library_api()) return;  // not ours to destroy
    lt.swap(idle_cublaslt_);
    dnn.swap(idle_cudnn_);
    ws.swap(idle_workspaces_);
    libs = libs_;
  } catch (...) {
    return;
  }
  if (!libs) return;
  for (CublasLtHandle h : lt)
    release_quietly(device_, "a cuBLASLt handle", [&](const DriverApi&) {
      return libs->cublasLtDestroy(h) == 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
    });
  for (CudnnHandle h : dnn)
    release_quietly(device_, "a cuDNN handle",
                    [&](const DriverApi&) { return libs->cudnnDestroy(h) == 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN; });
  ws.clear();  // DeviceBuffer frees under the guard
}

// ---- leases ------------------------------------------------------------------------------------------------
CublasLtLease::~CublasLtLease() { release(); }
CublasLtLease::CublasLtLease(CublasLtLease&& o) noexcept
    : pool_(std::exchange(o.pool_, nullptr)), handle_(std::exchange(o.handle_, nullptr)), generation_(o.generation_) {}
CublasLtLease& CublasLtLease::operator=(CublasLtLease&& o) noexcept {
  if (this != &o) {
    release();
    pool_ = std::exchange(o.pool_, nullptr);
    handle_ = std::exchange(o.handle_, nullptr);
    generation_ = o.generation_;
  }
  return *this;
}
void CublasLtLease::release() noexcept {
  if (pool_ && handle_) pool_->give_back(handle_, generation_);
  pool_ = nullptr;
  handle_ = nullptr;
}

CudnnLease::~CudnnLease() { release(); }
CudnnLease::CudnnLease(CudnnLease&& o) noexcept
    : pool_(std::exchange(o.pool_, nullptr)), handle_(std::exchange(o.handle_, nullptr)), generation_(o.generation_) {}
CudnnLease& CudnnLease::operator=(CudnnLease&& o) noexcept {
  if (this != &o) {
    release();
    pool_ = std::exchange(o.pool_, nullptr);
    handle_ = std::exchange(o.handle_, nullptr);
    generation_ = o.generation_;
  }
  return *this;
}
void CudnnLease::release() noexcept {
  if (pool_ && handle_) pool_->give_back(handle_, generation_);
  pool_ = nullptr;
  handle_ = nullptr;
}
void CudnnLease::set_stream(StreamHandle stream) const {
  KILNRT_CHECK(pool_ && handle_, kInvalidArgument, "cuDNN handle", "set_stream() on an empty lease");
  const HandleLibraryApi& libs = handle_library_api();
  ContextGuard guard(pool_->device());
  int s = libs.cudnnSetStream(handle_, stream);
  KILNRT_CHECK(s == 0, kCuda, "cuDNN handle (device " + std::to_string(pool_->device()) + ")",
               "cudnnSetStream failed: " << dnn_status(libs, s));
}

WorkspaceLease::~WorkspaceLease() { release(); }
WorkspaceLease::WorkspaceLease(WorkspaceLease&& o) noexcept
    : pool_(std::exchange(o.pool_, nullptr)), buffer_(std::move(o.buffer_)), generation_(o.generation_) {}
WorkspaceLease& WorkspaceLease::operator=(WorkspaceLease&& o) noexcept {
  if (this != &o) {
    release();
    pool_ = std::exchange(o.pool_, nullptr);
    buffer_ = std::move(o.buffer_);
    generation_ = o.generation_;
  }
  return *this;
}
void WorkspaceLease::release() noexcept {
  if (pool_ && buffer_) pool_->give_back(std::move(buffer_), generation_);
  pool_ = nullptr;
}

}  // namespace kilnrt::cuda
