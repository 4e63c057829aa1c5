// Storage layout of 4-D activations in 16-bit CUDA engines (docs/architecture.md: layout is an attribute of the plan,
// not a graph pass). Pure host logic, used by CudaPlan (KILNRT_CUDA_NHWC=1 forces it on, =0 off; unset: on where
// predict_nhwc_win says so).
//
// Slots: a 4-D value is "layout-free" when its NCHW and NHWC storage coincide (C == 1, or H == W == 1, e.g. the
// [N,C,1,1] of a global pooling): it is never stored NHWC, never reformatted, and any step may read it. Lower-rank
// values that are layout-free once padded to 4-D with leading 1s ([C,1,1], [W], scalars) may be operands of an
// NHWC elementwise step.
//
// Steps, in graph order (one forward pass; `must_nchw` is decided first: graph I/O, constants, host values and
// values read by a view or a float32 island):
//  - kProducer (CudaLayer::supports_nhwc: cuDNN convolutions, FusedConv, 2-D pooling): runs NHWC iff its output 0
//    is a 4-D, not layout-free, not must_nchw value; it then wants inputs 0 and 3 (X, FusedConv's residual) NHWC.
//  - kElementwise (unary / broadcasting binary ops): runs NHWC iff some 4-D input is already NHWC, its output may be
//    NHWC and every operand is 4-D or layout-free; the layer then sees permuted logical shapes ([N,H,W,C], operands
//    padded to 4-D and permuted the same way: same memory), so the layout-agnostic kernels need no NHWC mode.
//  - kReader (reductions whose result is layout-free or keeps the order of its kept dims, GlobalAveragePool): reads
//    input 0 in whatever layout it has (LayerTensor::nhwc), writes NCHW.
//  - kToNhwcView (Transpose perm 0,3,1,2 of a 4-D value): when its input is stored plainly, the output is that
//    memory read as NHWC: a view, no copy. kFromNhwcView (perm 0,2,3,1): when its input is NHWC, the output is
//    that memory read as plain [N,H,W,C]: a view.
//  - kFixed: every 4-D input NCHW.
// Where a step wants another layout than the value has, the plan reformats the value into per-step scratch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/kernels/kernels.h"
#include "kilnrt/tensor.h"

namespace kilnrt::backends::cuda {

enum class LayoutKind : uint8_t { kFixed, kProducer, kElementwise, kReader, kToNhwcView, kFromNhwcView };

struct LayoutStep {
  bool device = false;          // false: a host shape computation (reads host values only)
  bool nhwc_capable = false;    // CudaLayer::supports_nhwc() (same as kind kProducer)
  bool alias = false;           // CudaLayer::is_alias()
  bool island = false;          // float32 island of a 16-bit engine
  bool depthwise = false;       // a depthwise convolution (group == C == K > 1)
  bool depthwise_fast = false;  // ... measured faster in NHWC than cuDNN's NCHW (depthwise_nhwc_fast)
  LayoutKind kind = LayoutKind::kFixed;
  std::vector<int> inputs, outputs;  // slots, -1 omitted
};

struct LayoutProblem {
  std::vector<uint8_t> rank4;        // per slot: the value is 4-D
  std::vector<uint8_t> pinned_nchw;  // per slot: graph input / output, constant or host value
  std::vector<uint8_t> layout_free;  // per slot (may be empty: none): NCHW storage == NHWC storage (see above)
  std::vector<LayoutStep> steps;
};

struct LayoutDecision {
  std::vector<uint8_t> nhwc_slot;             // per slot: stored NHWC
  std::vector<uint8_t> step_nhwc;             // per step: runs NHWC (elementwise: on permuted logical shapes)
  std::vector<uint8_t> view;                  // per step: a Transpose that became a view of its input
  std::vector<std::vector<int8_t>> reformat;  // per step, per input: +1 NCHW -> NHWC, -1 NHWC -> NCHW, 0 none
  size_t reformats = 0;                       // number of reformatted step inputs
  size_t nhwc_steps = 0;                      // steps that run NHWC (views included)
  size_t nhwc_depthwise = 0;                  // depthwise convolutions among them
  size_t nhwc_depthwise_slow = 0;             // ... of those, the ones not depthwise_fast
};

LayoutDecision decide_layouts(const LayoutProblem& p);

// Default policy when KILNRT_CUDA_NHWC is unset: NHWC only when the reformats are few compared with the work that
// runs NHWC (each reformat is a full read + write of an activation; the first H100 probe showed models with a
// reformat around every block losing 2-3x while a ResNet with 5 won 20%) and no depthwise convolution runs NHWC on
// the scalar kernel (H100, fp16 b32: 1.0 ms where cuDNN's NCHW one takes 0.36 ms for convnext's 7x7 stage-1
// layers, so those models lost 35-55% in NHWC). Depthwise convs the 8-channel kernel takes (C % 8 == 0) are fine
// (H100, 2026-11-22; bench/results/README.md, docs/conv-fusion.md).
bool predict_nhwc_win(const LayoutDecision& d);

// The logical shape an NHWC elementwise step presents to its layer for an operand of logical shape `s` (rank <= 4):
// padded to 4-D with leading 1s, then ordered (N, H, W, C). Same element order as the NHWC storage.
Shape nhwc_logical_shape(const Shape& s);

// The strided_copy description of that reformat (dst[sum i_d*out_strides_d] = src[sum i_d*in_strides_d] over the
// logical index (n, c, h, w)).
kilnrt::cuda::kernels::Strided reformat_strides(const Shape& nchw, bool to_nhwc);
// Copies a 4-D tensor of logical shape `nchw` (N, C, H, W) from NCHW to NHWC storage (to_nhwc) or back, on
// `stream`; returns the launch status like the kernels. elem_size 2 or 4.
int reformat_4d(const void* src, void* dst, const Shape& nchw, size_t elem_size, bool to_nhwc,
                kilnrt::cuda::kernels::StreamT stream);

}  // namespace kilnrt::backends::cuda

// ---- graph side (layout_plan_graph.cc) --------------------------------------------------------------------------
namespace kilnrt::ir {
struct Graph;
struct Node;
struct TensorType;
}  // namespace kilnrt::ir

namespace kilnrt::backends::cuda {

// The layout kind of a node that is not a float32 island, alias or NHWC-capable layer (those the plan knows from
// the layer): kElementwise, kReader, kToNhwcView, kFromNhwcView or kFixed.
LayoutKind layout_kind_of(const ir::Node& node, const ir::Graph& graph);
// True for a Conv / FusedConv with constant weights [K, 1, ...] and group == K > 1.
bool depthwise_conv(const ir::Node& node, const ir::Graph& graph);
// True for a depthwise_conv measured faster in NHWC (H100 fp16, the 8-channel kernel) than cuDNN's NCHW kernels:
// K % 8 == 0 (the 8-channel kernel takes it; activations and weights are 256-byte aligned device allocations), the
// kernel not disabled (KILNRT_CUDA_DW_VEC=0), and a static batch (dim 0 of X) of at least kFastDepthwiseMinBatch:
// at batch 1 the kernel is slower than cuDNN's NCHW one, and a dynamic batch may be 1. So engines with a dynamic
// batch keep NCHW for depthwise models unless KILNRT_CUDA_NHWC=1.
constexpr int64_t kFastDepthwiseMinBatch = 8;
bool depthwise_nhwc_fast(const ir::Node& node, const ir::Graph& graph);
// True when a value of this type (rank <= 4, padded with leading 1s) has C == 1 or H == W == 1 (static dims).
bool layout_free_type(const ir::TensorType* t);

}  // namespace kilnrt::backends::cuda
