// The profiling gate of LayerProfiler (runner_profiling.h): one GPU thread that holds its stream until the host has
// enqueued a whole profiled run, so that the per-layer timing events measure the layers back to back on the GPU
// rather than the GPU waiting for the host to launch each layer. Plain C++ (no CUDA headers).
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Enqueues a single-thread kernel on `stream` that returns once `*open` (page-locked host memory, read through
// unified addressing) reaches `generation` (wrap-safe comparison), or after `timeout_ns`, in which case it writes
// `generation` to `*timed_out` (page-locked host memory too). Returns the launch status.
int profiling_gate(const volatile uint32_t* open, uint32_t generation, volatile uint32_t* timed_out,
                   uint64_t timeout_ns, StreamT stream);

}  // namespace kilnrt::cuda::kernels
