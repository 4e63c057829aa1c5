// The second mma.sync attention kernel (attention_fa2.cuh) for bfloat16 storage: D = 32 and 128 here, D = 64 in
// attention_fa2_bf16_d64.cu.
#include "ops/nn/fused_attention/cuda/attention_fa2.cuh"

namespace kilnrt::cuda::kernels::attention_mma_detail {

int fa2_launch_bf16(const AttentionArgs& a, int config, StreamT stream) {
  switch (a.d) {
    case 32: return fa2_launch_d<__nv_bfloat16, 32>(a, config, stream);
    case 64: return fa2_launch_bf16_d64(a, config, stream);
    case 128: return fa2_launch_d<__nv_bfloat16, 128>(a, config, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace kilnrt::cuda::kernels::attention_mma_detail
