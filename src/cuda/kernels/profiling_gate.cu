// The profiling gate (profiling_gate.h).
#include "cuda/kernels/launch_common.cuh"
#include "cuda/kernels/profiling_gate.h"

namespace kilnrt::cuda::kernels {
namespace {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void gate_kernel(const volatile uint32_t* open, uint32_t generation, volatile uint32_t* timed_out,
                            uint64_t timeout_ns) {
  const uint64_t start = global_ns();
  while (static_cast<int32_t>(*open - generation) < 0) {
    if (global_ns() - start > timeout_ns) {
      *timed_out = generation;
      __threadfence_system();
      return;
    }
    __nanosleep(2000);
  }
}

}  // namespace

int profiling_gate(const volatile uint32_t* open, uint32_t generation, volatile uint32_t* timed_out,
                   uint64_t timeout_ns, StreamT stream) {
  gate_kernel<<<1, 1, 0, stream>>>(open, generation, timed_out, timeout_ns);
  return launch_common::launch_status();
}

}  // namespace kilnrt::cuda::kernels
