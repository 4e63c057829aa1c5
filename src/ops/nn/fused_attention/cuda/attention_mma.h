// FlashAttention-2-style fused attention for 16-bit storage (attention_mma.cu): mma.sync m16n8k16 tensor
// cores (sm_80+), float32 accumulation, scores and online softmax in registers. attention() (attention.h) takes this
// path whenever attention_uses_mma() holds and falls back to the WMMA / SIMT kernels otherwise.
#pragma once
#include "ops/nn/fused_attention/cuda/attention.h"

namespace kilnrt::cuda::kernels {

// Preconditions: float16 / bfloat16 storage, D == Dv in {32, 64, 128}, Q / K / V rows movable with 16-byte loads
// (unit element stride, every row start 16-byte aligned), batch dims within the grid's y / z limits. The mask and
// the output may have any strides.
bool attention_uses_mma(const AttentionArgs& a);
// Launches the kernel attention_mma_pick() names (callers check attention_uses_mma first). Returns the launch status.
int attention_mma(const AttentionArgs& a, StreamT stream);

// Kernel variants: 0 = "v1", the first kernel (attention_mma.cu: one 16-row m-tile per warp, 64 rows per block,
// every warp walks every key tile); 1.. = the configurations of the second (attention_fa2.cuh), named
// m<m-tiles per warp>r<row-group warps>s<warps splitting the keys>[c: registers capped at 128], e.g. "m1r4s1"; then
// "lean4" / "lean8", the third kernel (attention_fa2_lean.cuh, 4 / 8 warps per block) for D = 64 with no mask, a
// key mask (query stride 0) or 16-byte mask rows; forced where it does not apply, it runs m1r4s1; "short4", the
// fourth (attention_short.cuh: the whole key range at once for 97-128, 177-208 or 225-256 keys, D = 64, no mask or
// a key mask; forced elsewhere, it runs the lean kernel's pick); "wg" / "wg2", the same scheme on Hopper's wgmma
// with one / two 64-row tiles per block, and "wgs", up to four tiles of one (b0, b1) entry per block with Q streamed
// through two buffers (attention_wgmma.cuh; sm_90a builds on compute capability 9.0 devices, elsewhere they run as
// short4).
int attention_mma_variant_count();
const char* attention_mma_variant_name(int variant);  // "" when out of range
// The variant attention_mma() runs: KILNRT_ATTENTION_KERNEL=<name> (read at every call) forces one, else a rule
// on the shape (grid size, Sk) picks it.
int attention_mma_pick(const AttentionArgs& a);
// Whether the wgmma variant runs on the current device (an sm_90a build and a compute capability 9.0 device).
bool attention_wgmma_runs_here();
// Launches one variant (invalid value when attention_uses_mma() does not hold or the variant is out of range).
int attention_mma_variant(const AttentionArgs& a, int variant, StreamT stream);

}  // namespace kilnrt::cuda::kernels
