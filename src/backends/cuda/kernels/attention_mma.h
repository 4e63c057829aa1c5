// FlashAttention-2-style fused attention for 16-bit storage (kernels/attention_mma.cu): mma.sync m16n8k16 tensor
// cores (sm_80+), float32 accumulation, scores and online softmax in registers. attention() (attention.h) takes this
// path whenever attention_uses_mma() holds and falls back to the WMMA / SIMT kernels otherwise.
#pragma once
#include "backends/cuda/kernels/attention.h"

namespace kilnrt::cuda::kernels {

// Preconditions: float16 / bfloat16 storage, D == Dv in {32, 64, 128}, Q / K / V rows movable with 16-byte loads
// (unit element stride, every row start 16-byte aligned), batch dims within the grid's y / z limits. The mask and
// the output may have any strides.
bool attention_uses_mma(const AttentionArgs& a);
// Launches the kernel (callers check attention_uses_mma first). Returns the launch status.
int attention_mma(const AttentionArgs& a, StreamT stream);

}  // namespace kilnrt::cuda::kernels
