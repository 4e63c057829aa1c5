// The second mma.sync attention kernel (attention_fa2.cuh) for bfloat16 storage at D = 64, every configuration.
#include "ops/nn/fused_attention/cuda/attention_fa2.cuh"

namespace kilnrt::cuda::kernels::attention_mma_detail {

int fa2_launch_bf16_d64(const AttentionArgs& a, int config, StreamT stream) {
  return fa2_launch_d<__nv_bfloat16, 64>(a, config, stream);
}

}  // namespace kilnrt::cuda::kernels::attention_mma_detail
