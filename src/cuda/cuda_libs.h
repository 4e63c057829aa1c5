// The CUDA backend's own small function tables for cuBLASLt and cuDNN, resolved with dlsym on the handles that
// src/cuda/library_loader found (never linked), and the per-execution-context library handles.
#pragma once
#include <cublasLt.h>
#include <cudnn.h>

#include <memory>
#include <string>

#include "cuda/library_loader.h"

namespace kilnrt::backends::cuda {

#define KILNRT_CUBLASLT_FUNCTIONS(X)                                                                                   \
  X(cublasLtCreate)                                                                                                    \
  X(cublasLtDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute)        \
      X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)                 \
          X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) \
              X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul) X(cublasLtMatmulAlgoCheck)                           \
                  X(cublasLtMatmulAlgoCapGetAttribute) X(cublasLtMatmulAlgoConfigSetAttribute)                         \
                      X(cublasLtMatmulAlgoConfigGetAttribute)

#define KILNRT_CUDNN_FUNCTIONS(X)                                                                                      \
  X(cudnnCreate)                                                                                                       \
  X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor)                              \
      X(cudnnDestroyTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnCreateFilterDescriptor)                     \
          X(cudnnDestroyFilterDescriptor) X(cudnnSetFilter4dDescriptor) X(cudnnCreateConvolutionDescriptor)            \
              X(cudnnDestroyConvolutionDescriptor) X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionGroupCount) \
                  X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionForwardAlgorithm_v7)                             \
                      X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnConvolutionForward) X(cudnnAddTensor)          \
                          X(cudnnConvolutionBiasActivationForward) X(cudnnCreateActivationDescriptor)                  \
                              X(cudnnSetActivationDescriptor) X(cudnnDestroyActivationDescriptor)

// cuDNN's graph (backend) API: operation graphs, engines, execution plans (cudnn_attention.cc).
#define KILNRT_CUDNN_GRAPH_FUNCTIONS(X)                                                                            \
  X(cudnnBackendCreateDescriptor)                                                                                  \
  X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute) X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) \
      X(cudnnBackendExecute) X(cudnnGetLastErrorString) X(cudnnGetVersion)

struct CublasLtApi {
#define KILNRT_MEMBER(f) decltype(&::f) f = nullptr;
  KILNRT_CUBLASLT_FUNCTIONS(KILNRT_MEMBER)
#undef KILNRT_MEMBER
};
struct CudnnApi {
#define KILNRT_MEMBER(f) decltype(&::f) f = nullptr;
  KILNRT_CUDNN_FUNCTIONS(KILNRT_MEMBER)
#undef KILNRT_MEMBER
};

struct CudnnGraphApi {
#define KILNRT_MEMBER(f) decltype(&::f) f = nullptr;
  KILNRT_CUDNN_GRAPH_FUNCTIONS(KILNRT_MEMBER)
#undef KILNRT_MEMBER
};

// The tables, resolved on first call. Throw kUnsupported naming the library / symbol and what to install.
const CublasLtApi& cublaslt_api();
const CudnnApi& cudnn_api();
const CudnnGraphApi& cudnn_graph_api();
// Non-throwing: whether cuDNN's table resolves (for choosing the conv tactic); `why` gets the reason.
bool cudnn_usable(std::string* why);

// Handles of one execution context: created lazily under the context guard, destroyed with the context.
struct LibraryHandles {
  int device = 0;
  cublasLtHandle_t cublaslt = nullptr;
  cudnnHandle_t cudnn = nullptr;
  // cuDNN execution plans made with `cudnn` (cudnn_attention.cc's cache), released before the handle.
  std::shared_ptr<void> cudnn_plans;
  cublasLtHandle_t get_cublaslt();
  cudnnHandle_t get_cudnn();
  // Destroys the handles (they are created again on next use); used after a failed graph capture.
  void reset() noexcept;
  ~LibraryHandles();
};

}  // namespace kilnrt::backends::cuda

// Status checks naming the node.
#define KILNRT_CUBLASLT_CHECK(call, where)                                                                    \
  do {                                                                                                        \
    cublasStatus_t kilnrt_st_ = (call);                                                                       \
    if (kilnrt_st_ != CUBLAS_STATUS_SUCCESS)                                                                  \
      throw ::kilnrt::Error(::kilnrt::ErrorCode::kCuda,                                                       \
                            "cuBLASLt failed with status " + std::to_string(int(kilnrt_st_)), (where), #call, \
                            __FILE__, __LINE__);                                                              \
  } while (0)
#define KILNRT_CUDNN_CHECK(api, call, where)                                                                         \
  do {                                                                                                               \
    cudnnStatus_t kilnrt_st_ = (call);                                                                               \
    if (kilnrt_st_ != CUDNN_STATUS_SUCCESS)                                                                          \
      throw ::kilnrt::Error(                                                                                         \
          ::kilnrt::ErrorCode::kCuda,                                                                                \
          std::string("cuDNN failed: ") + ((api).cudnnGetErrorString ? (api).cudnnGetErrorString(kilnrt_st_) : "?"), \
          (where), #call, __FILE__, __LINE__);                                                                       \
  } while (0)
