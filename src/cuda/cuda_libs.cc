#include "cuda/cuda_libs.h"

#include <utility>

#include <mutex>

#include "core/check.h"
#include "core/logging.h"
#include "cuda/call_injection.h"
#include "cuda/capture_safety.h"
#include "cuda/context_guard.h"

namespace kilnrt::backends::cuda {
namespace {

using kilnrt::cuda::Library;

template <class Api, class Fill>
const Api& resolve_once(Library lib, Fill fill) {
  // Leaked on purpose: destructors at exit must not depend on it (see docs/cuda-safety.md).
  static std::once_flag* once = new std::once_flag;
  static Api* api = new Api;
  static std::string* error = new std::string;
  std::call_once(*once, [&] {
    try {
      fill(*api);
    } catch (const Error& e) {
      *error = e.what();
    }
  });
  KILNRT_CHECK(error->empty(), kUnsupported, kilnrt::cuda::library_name(lib), *error);
  return *api;
}

}  // namespace

const CublasLtApi& cublaslt_api() {
  return resolve_once<CublasLtApi>(Library::kCublasLt, [](CublasLtApi& a) {
#define KILNRT_RESOLVE(f)       \
  a.f = KILNRT_INJECTABLE_CALL( \
      #f, reinterpret_cast<decltype(a.f)>(kilnrt::cuda::require_library_symbol(Library::kCublasLt, #f)));
    KILNRT_CUBLASLT_FUNCTIONS(KILNRT_RESOLVE)
#undef KILNRT_RESOLVE
  });
}

const CudnnApi& cudnn_api() {
  return resolve_once<CudnnApi>(Library::kCudnn, [](CudnnApi& a) {
#define KILNRT_RESOLVE(f)       \
  a.f = KILNRT_INJECTABLE_CALL( \
      #f, reinterpret_cast<decltype(a.f)>(kilnrt::cuda::require_library_symbol(Library::kCudnn, #f)));
    KILNRT_CUDNN_FUNCTIONS(KILNRT_RESOLVE)
#undef KILNRT_RESOLVE
  });
}

const CudnnGraphApi& cudnn_graph_api() {
  return resolve_once<CudnnGraphApi>(Library::kCudnn, [](CudnnGraphApi& a) {
#define KILNRT_RESOLVE(f)       \
  a.f = KILNRT_INJECTABLE_CALL( \
      #f, reinterpret_cast<decltype(a.f)>(kilnrt::cuda::require_library_symbol(Library::kCudnn, #f)));
    KILNRT_CUDNN_GRAPH_FUNCTIONS(KILNRT_RESOLVE)
#undef KILNRT_RESOLVE
  });
}

bool cudnn_usable(std::string* why) {
  try {
    cudnn_api();
    return true;
  } catch (const Error& e) {
    if (why) *why = e.what();
    return false;
  }
}

cublasLtHandle_t LibraryHandles::get_cublaslt() {
  if (!cublaslt) {
    const CublasLtApi& api = cublaslt_api();
    kilnrt::cuda::CaptureGate gate(device, kilnrt::cuda::CaptureGate::Kind::kExclusive);
    kilnrt::cuda::ContextGuard guard(device);
    KILNRT_CUBLASLT_CHECK(api.cublasLtCreate(&cublaslt), "cuBLASLt handle");
  }
  return cublaslt;
}

cudnnHandle_t LibraryHandles::get_cudnn() {
  if (!cudnn) {
    const CudnnApi& api = cudnn_api();
    kilnrt::cuda::CaptureGate gate(device, kilnrt::cuda::CaptureGate::Kind::kExclusive);
    kilnrt::cuda::ContextGuard guard(device);
    KILNRT_CUDNN_CHECK(api, api.cudnnCreate(&cudnn), "cuDNN handle");
  }
  return cudnn;
}

void LibraryHandles::reset() noexcept {
  cublasLtHandle_t lt = std::exchange(cublaslt, nullptr);
  cudnn_plans.reset();  // plans made with the handle go first
  cudnnHandle_t dnn = std::exchange(cudnn, nullptr);
  if (!kilnrt::cuda::cleanup_allowed()) return;  // leak at exit / in a forked child
  try {
    if (lt || dnn) {
      kilnrt::cuda::CaptureGate gate(device, kilnrt::cuda::CaptureGate::Kind::kExclusive);
      kilnrt::cuda::ContextGuard guard(device);
      if (lt) cublaslt_api().cublasLtDestroy(lt);
      if (dnn) cudnn_api().cudnnDestroy(dnn);
    }
  } catch (const std::exception& e) {
    KILNRT_LOG(kWarning, "releasing cuBLASLt/cuDNN handles failed: " << e.what());
  }
}

LibraryHandles::~LibraryHandles() { reset(); }

}  // namespace kilnrt::backends::cuda
