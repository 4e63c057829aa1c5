// Storage layout of 4-D activations in 16-bit CUDA engines (DESIGN.md: layout is an attribute of the plan, not a
// graph pass). Pure host logic, used by CudaPlan when KILNRT_CUDA_NHWC=1 (opt-in until validated on a GPU).
//
// Rules: a value is stored NHWC when it is 4-D, produced as output 0 by a device layer that supports NHWC
// (CudaLayer::supports_nhwc: the cuDNN convolutions, FusedConv) that is not a float32 island, is neither a graph
// input / output nor a constant / host value, and no reader is an alias layer (a view cannot change layout) or a
// float32 island. An NHWC-capable step runs NHWC iff its output 0 is stored NHWC; it then wants inputs 0 and 3 (X
// and FusedConv's residual Z) NHWC. Every other step wants every input NCHW. Where a step wants another layout than
// the value has, the plan reformats the value into per-step scratch before the step ("reformat at boundaries").
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cuda/kernels/kernels.h"
#include "kilnrt/tensor.h"

namespace kilnrt::backends::cuda {

struct LayoutStep {
  bool device = false;        // false: a host shape computation (reads host values only)
  bool nhwc_capable = false;  // CudaLayer::supports_nhwc()
  bool alias = false;         // CudaLayer::is_alias()
  bool island = false;        // float32 island of a 16-bit engine
  std::vector<int> inputs, outputs;  // slots, -1 omitted
};

struct LayoutProblem {
  std::vector<uint8_t> rank4;         // per slot: the value is 4-D
  std::vector<uint8_t> pinned_nchw;   // per slot: graph input / output, constant or host value
  std::vector<LayoutStep> steps;
};

struct LayoutDecision {
  std::vector<uint8_t> nhwc_slot;            // per slot: stored NHWC
  std::vector<uint8_t> step_nhwc;            // per step: runs NHWC
  std::vector<std::vector<int8_t>> reformat;  // per step, per input: +1 NCHW -> NHWC, -1 NHWC -> NCHW, 0 none
  size_t reformats = 0;                      // number of reformatted step inputs
};

LayoutDecision decide_layouts(const LayoutProblem& p);

// The strided_copy description of that reformat (dst[sum i_d*out_strides_d] = src[sum i_d*in_strides_d] over the
// logical index (n, c, h, w)).
kilnrt::cuda::kernels::Strided reformat_strides(const Shape& nchw, bool to_nhwc);
// Copies a 4-D tensor of logical shape `nchw` (N, C, H, W) from NCHW to NHWC storage (to_nhwc) or back, on
// `stream`; returns the launch status like the kernels. elem_size 2 or 4.
int reformat_4d(const void* src, void* dst, const Shape& nchw, size_t elem_size, bool to_nhwc,
                kilnrt::cuda::kernels::StreamT stream);

}  // namespace kilnrt::backends::cuda
