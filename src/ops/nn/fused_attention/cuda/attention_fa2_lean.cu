// The lean mma.sync attention kernel (attention_fa2_lean.cuh) for float16 and bfloat16 storage, 4 or 8 warps.
#include "ops/nn/fused_attention/cuda/attention_fa2_lean.cuh"

namespace kilnrt::cuda::kernels::attention_mma_detail {

int lean_launch_f16(const AttentionArgs& a, int warps, StreamT stream) {
  return warps == 8 ? launch_lean<__half, 8>(a, stream) : launch_lean<__half, 4>(a, stream);
}

int lean_launch_bf16(const AttentionArgs& a, int warps, StreamT stream) {
  return warps == 8 ? launch_lean<__nv_bfloat16, 8>(a, stream) : launch_lean<__nv_bfloat16, 4>(a, stream);
}

}  // namespace kilnrt::cuda::kernels::attention_mma_detail
