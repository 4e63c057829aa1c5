// The CUDA driver API as one table of function pointers, filled on first GPU use (never at load or static init)
// through cudaGetDriverEntryPointByVersion of the statically linked cudart at a pinned ABI version: no -lcuda, no
// dlsym of unversioned names. Tests replace the table with a fake (set_driver_api_for_testing) so that the context
// guard and the RAII wrappers are unit-testable without a GPU.
//
// Fork and exit safety live here too: a child forked after the parent initialised CUDA refuses every GPU entry with
// a clear error, and destructors ask cleanup_allowed() before calling into the driver (false once exit() began or in
// such a child), leaking instead of touching a runtime that may be gone.
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

#include "kilnrt/error.h"

namespace kilnrt::cuda {

// The ABI version every entry point is requested at. The PFN types below are the ones that version resolves to.
constexpr unsigned kDriverAbiVersion = 12000;

// X(member, driver symbol, function-pointer type at kDriverAbiVersion)
#define KILNRT_CUDA_DRIVER_FUNCTIONS(X)                                                                               \
  X(Init, cuInit, PFN_cuInit_v2000)                                                                                   \
  X(DriverGetVersion, cuDriverGetVersion, PFN_cuDriverGetVersion_v2020)                                               \
  X(GetErrorName, cuGetErrorName, PFN_cuGetErrorName_v6000)                                                           \
  X(GetErrorString, cuGetErrorString, PFN_cuGetErrorString_v6000)                                                     \
  X(DeviceGet, cuDeviceGet, PFN_cuDeviceGet_v2000)                                                                    \
  X(DeviceGetCount, cuDeviceGetCount, PFN_cuDeviceGetCount_v2000)                                                     \
  X(DeviceGetName, cuDeviceGetName, PFN_cuDeviceGetName_v2000)                                                        \
  X(DeviceGetAttribute, cuDeviceGetAttribute, PFN_cuDeviceGetAttribute_v2000)                                         \
  X(DeviceTotalMem, cuDeviceTotalMem, PFN_cuDeviceTotalMem_v3020)                                                     \
  X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000)                             \
  X(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, PFN_cuDevicePrimaryCtxRelease_v11000)                         \
  X(DevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState, PFN_cuDevicePrimaryCtxGetState_v7000)                       \
  X(CtxGetCurrent, cuCtxGetCurrent, PFN_cuCtxGetCurrent_v4000)                                                        \
  X(CtxSetCurrent, cuCtxSetCurrent, PFN_cuCtxSetCurrent_v4000)                                                        \
  X(CtxPushCurrent, cuCtxPushCurrent, PFN_cuCtxPushCurrent_v4000)                                                     \
  X(CtxPopCurrent, cuCtxPopCurrent, PFN_cuCtxPopCurrent_v4000)                                                        \
  X(CtxGetDevice, cuCtxGetDevice, PFN_cuCtxGetDevice_v2000)                                                           \
  X(PointerGetAttributes, cuPointerGetAttributes, PFN_cuPointerGetAttributes_v7000)                                   \
  X(MemGetInfo, cuMemGetInfo, PFN_cuMemGetInfo_v3020)                                                                 \
  X(MemAlloc, cuMemAlloc, PFN_cuMemAlloc_v3020)                                                                       \
  X(MemFree, cuMemFree, PFN_cuMemFree_v3020)                                                                          \
  X(MemHostAlloc, cuMemHostAlloc, PFN_cuMemHostAlloc_v2020)                                                           \
  X(MemFreeHost, cuMemFreeHost, PFN_cuMemFreeHost_v2000)                                                              \
  X(MemcpyHtoDAsync, cuMemcpyHtoDAsync, PFN_cuMemcpyHtoDAsync_v3020)                                                  \
  X(MemcpyDtoHAsync, cuMemcpyDtoHAsync, PFN_cuMemcpyDtoHAsync_v3020)                                                  \
  X(MemcpyDtoDAsync, cuMemcpyDtoDAsync, PFN_cuMemcpyDtoDAsync_v3020)                                                  \
  X(MemsetD8Async, cuMemsetD8Async, PFN_cuMemsetD8Async_v3020)                                                        \
  X(StreamCreate, cuStreamCreate, PFN_cuStreamCreate_v2000)                                                           \
  X(StreamCreateWithPriority, cuStreamCreateWithPriority, PFN_cuStreamCreateWithPriority_v5050)                       \
  X(StreamDestroy, cuStreamDestroy, PFN_cuStreamDestroy_v4000)                                                        \
  X(StreamSynchronize, cuStreamSynchronize, PFN_cuStreamSynchronize_v2000)                                            \
  X(StreamQuery, cuStreamQuery, PFN_cuStreamQuery_v2000)                                                              \
  X(StreamWaitEvent, cuStreamWaitEvent, PFN_cuStreamWaitEvent_v3020)                                                  \
  X(StreamGetCtx, cuStreamGetCtx, PFN_cuStreamGetCtx_v9020)                                                           \
  X(StreamGetFlags, cuStreamGetFlags, PFN_cuStreamGetFlags_v5050)                                                     \
  X(StreamIsCapturing, cuStreamIsCapturing, PFN_cuStreamIsCapturing_v10000)                                           \
  X(EventCreate, cuEventCreate, PFN_cuEventCreate_v2000)                                                              \
  X(EventDestroy, cuEventDestroy, PFN_cuEventDestroy_v4000)                                                           \
  X(EventRecord, cuEventRecord, PFN_cuEventRecord_v2000)                                                              \
  X(EventSynchronize, cuEventSynchronize, PFN_cuEventSynchronize_v2000)                                               \
  X(EventQuery, cuEventQuery, PFN_cuEventQuery_v2000)                                                                 \
  X(EventElapsedTime, cuEventElapsedTime, PFN_cuEventElapsedTime_v2000)                                               \
  X(ModuleLoadData, cuModuleLoadData, PFN_cuModuleLoadData_v2000)                                                     \
  X(ModuleGetFunction, cuModuleGetFunction, PFN_cuModuleGetFunction_v2000)                                            \
  X(ModuleUnload, cuModuleUnload, PFN_cuModuleUnload_v2000)                                                           \
  X(LaunchKernel, cuLaunchKernel, PFN_cuLaunchKernel_v4000)                                                           \
  X(FuncGetAttribute, cuFuncGetAttribute, PFN_cuFuncGetAttribute_v2020)                                               \
  X(FuncSetAttribute, cuFuncSetAttribute, PFN_cuFuncSetAttribute_v9000)                                               \
  X(MemAllocAsync, cuMemAllocAsync, PFN_cuMemAllocAsync_v11020)                                                       \
  X(MemFreeAsync, cuMemFreeAsync, PFN_cuMemFreeAsync_v11020)                                                          \
  X(StreamBeginCapture, cuStreamBeginCapture, PFN_cuStreamBeginCapture_v10010)                                        \
  X(StreamEndCapture, cuStreamEndCapture, PFN_cuStreamEndCapture_v10000)                                              \
  X(StreamGetCaptureInfo, cuStreamGetCaptureInfo, PFN_cuStreamGetCaptureInfo_v11030)                                  \
  X(ThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, PFN_cuThreadExchangeStreamCaptureMode_v10010) \
  X(GraphInstantiateWithFlags, cuGraphInstantiateWithFlags, PFN_cuGraphInstantiateWithFlags_v11040)                   \
  X(GraphLaunch, cuGraphLaunch, PFN_cuGraphLaunch_v10000)                                                             \
  X(LaunchKernelEx, cuLaunchKernelEx, PFN_cuLaunchKernelEx_v11060)                                                    \
  X(GraphDestroy, cuGraphDestroy, PFN_cuGraphDestroy_v10000)                                                          \
  X(GraphExecDestroy, cuGraphExecDestroy, PFN_cuGraphExecDestroy_v10000)                                              \
  X(GraphExecUpdate, cuGraphExecUpdate, PFN_cuGraphExecUpdate_v12000)                                                 \
  X(GraphGetNodes, cuGraphGetNodes, PFN_cuGraphGetNodes_v10000)                                                       \
  X(GraphGetEdges, cuGraphGetEdges, PFN_cuGraphGetEdges_v10000)                                                       \
  X(GraphNodeGetType, cuGraphNodeGetType, PFN_cuGraphNodeGetType_v10000)                                              \
  X(GraphKernelNodeGetParams, cuGraphKernelNodeGetParams, PFN_cuGraphKernelNodeGetParams_v12000)                      \
  X(GraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams, PFN_cuGraphExecKernelNodeSetParams_v12000)

// Entry points newer than kDriverAbiVersion, each loaded at its own ABI version (last field). Optional: nullptr when
// the driver lacks them, and callers fall back to an older entry point.
//   GraphGetEdgesWithData: cuGraphGetEdges_v2, which also returns edge data. The older call fails with
//   CUDA_ERROR_LOSSY_QUERY on graphs with programmatic (launch-completion / PDL) edges, such as cuBLASLt captures.
#define KILNRT_CUDA_DRIVER_OPTIONAL_FUNCTIONS(X) \
  X(GraphGetEdgesWithData, cuGraphGetEdges, PFN_cuGraphGetEdges_v12030, 12030)

// One function pointer per driver entry point. A fake for tests may leave entries it does not model as nullptr:
// calling through them is a bug in the test.
struct DriverApi {
#define KILNRT_CUDA_DRIVER_MEMBER(member, symbol, type) type member = nullptr;
  KILNRT_CUDA_DRIVER_FUNCTIONS(KILNRT_CUDA_DRIVER_MEMBER)
#undef KILNRT_CUDA_DRIVER_MEMBER
#define KILNRT_CUDA_DRIVER_OPTIONAL_MEMBER(member, symbol, type, version) type member = nullptr;
  KILNRT_CUDA_DRIVER_OPTIONAL_FUNCTIONS(KILNRT_CUDA_DRIVER_OPTIONAL_MEMBER)
#undef KILNRT_CUDA_DRIVER_OPTIONAL_MEMBER
};

// The active table: the injected fake, or the real one (loaded and cuInit'ed on the first call). Throws
// kilnrt::Error (kCuda) with the remembered reason when there is no usable driver, and in a child forked after CUDA
// was initialised in the parent.
const DriverApi& driver_api();

// Non-throwing variant: nullptr and `why_not` set when unavailable.
const DriverApi* try_driver_api(std::string* why_not);

// Replaces the table (nullptr restores the real one). For tests: the caller keeps `api` alive while installed.
void set_driver_api_for_testing(const DriverApi* api);

// True once CUDA was initialised in this process (the real driver's cuInit succeeded, or a test said so).
bool cuda_initialised();
// True in a child forked after the parent had initialised CUDA: every GPU entry then fails.
bool forked_after_cuda_init();
// True once exit() began (atexit handler) — static destructors must not call the driver then.
bool process_exiting();
// Whether destructors may call into the driver now (not exiting, not a forked child).
bool cleanup_allowed();

// Records that CUDA is initialised and installs the fork/exit handlers (idempotent). The real loader calls it;
// tests call it to exercise the fork handling with a fake table.
void note_cuda_initialised();
// Tests only: overrides the initialised / forked-child flags.
void set_cuda_state_for_testing(bool initialised, bool forked_child);

// The message for the forked-child error (shared by the error and doctor).
const char* forked_child_message();

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" — works with any table, falls back to the number.
std::string driver_error_string(const DriverApi& api, CUresult result);

// Throws kilnrt::Error for a failed driver call: kOutOfMemory for CUDA_ERROR_OUT_OF_MEMORY, kCuda otherwise.
[[noreturn]] void throw_driver_error(const DriverApi& api, CUresult result, const char* expression,
                                     const std::string& where, const char* file, int line);

}  // namespace kilnrt::cuda

// KILNRT_CU_CHECK(api, api.MemAlloc(&p, n), "DeviceBuffer") — checks a driver call's status where it is returned.
#define KILNRT_CU_CHECK(api, call, where)                                                               \
  do {                                                                                                  \
    CUresult kilnrt_cu_result_ = (call);                                                                \
    if (kilnrt_cu_result_ != CUDA_SUCCESS)                                                              \
      ::kilnrt::cuda::throw_driver_error((api), kilnrt_cu_result_, #call, (where), __FILE__, __LINE__); \
  } while (0)
