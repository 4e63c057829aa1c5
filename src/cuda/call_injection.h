// Failure injection for CUDA calls: every entry point of the driver table (driver_api.h), the cuDNN / cuBLASLt
// tables (cuda/cuda_libs.h) and the NVRTC table (nvrtc_compiler.h) is resolved through
// KILNRT_INJECTABLE_CALL, which returns a trampoline that asks core/failure_injection.h whether this call must fail
// (the n-th call overall, or the k-th call of a named entry point such as "cuMemAlloc" or "cudnnConvolutionForward")
// and then returns a failure status instead of calling the library: out-of-memory for allocating / creating entry
// points, an internal / unknown error for the others. Nothing is armed in production: the cost is one relaxed atomic
// load per call.
//
// Release entry points (free, destroy, unload, pop, primary-context release) and error-string getters are never
// wrapped: a failing release cannot be recovered from by design (it leaks), and error reporting must keep working.
#pragma once
#include <cublasLt.h>
#include <cuda.h>
#include <cudnn.h>
#include <nvrtc.h>

#include <cstring>

#include "core/failure_injection.h"

namespace kilnrt::cuda::injection {

// False for release / error-string / init-time entry points (see above).
bool injectable(const char* name);
// Whether `name` allocates or creates something (its injected failure is then an out-of-memory status).
bool allocating(const char* name);

inline CUresult failure_status(CUresult*, const char* name) {
  return allocating(name) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_UNKNOWN;
}
inline cudnnStatus_t failure_status(cudnnStatus_t*, const char* name) {
  return allocating(name) ? CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED : CUDNN_STATUS_INTERNAL_ERROR;
}
inline cublasStatus_t failure_status(cublasStatus_t*, const char* name) {
  return allocating(name) ? CUBLAS_STATUS_ALLOC_FAILED : CUBLAS_STATUS_INTERNAL_ERROR;
}
inline nvrtcResult failure_status(nvrtcResult*, const char* name) {
  return allocating(name) ? NVRTC_ERROR_OUT_OF_MEMORY : NVRTC_ERROR_INTERNAL_ERROR;
}

// Entry points of other return types are never injected (injectable() is false for them); this only makes the
// trampoline compile.
template <typename R>
R failure_status(R*, const char*) {
  return R();
}

template <typename Tag, typename F>
struct Trampoline;
template <typename Tag, typename R, typename... A>
struct Trampoline<Tag, R (*)(A...)> {
  static inline R (*real)(A...) = nullptr;
  static R call(A... args) {
    if (failure_injection::should_fail_call(Tag::site_name()))
      return failure_status(static_cast<R*>(nullptr), Tag::site_name());
    return real(args...);
  }
};

}  // namespace kilnrt::cuda::injection

// `ptr` wrapped for failure injection (or unchanged when null or not injectable). `site` is a string literal.
// Each expansion defines its own tag type, so every entry point gets its own trampoline.
#define KILNRT_INJECTABLE_CALL(site, ptr)                              \
  ([](auto p) {                                                        \
    struct Tag {                                                       \
      static const char* site_name() { return site; }                  \
    };                                                                 \
    using W = ::kilnrt::cuda::injection::Trampoline<Tag, decltype(p)>; \
    if (!p || !::kilnrt::cuda::injection::injectable(site)) return p;  \
    W::real = p;                                                       \
    return static_cast<decltype(p)>(&W::call);                         \
  }(ptr))
