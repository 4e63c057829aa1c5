// The short-key-range mma.sync attention kernel (attention_short.cuh) for float16 and bfloat16 storage.
#include "ops/nn/fused_attention/cuda/attention_short.cuh"

namespace kilnrt::cuda::kernels::attention_mma_detail {

int short_launch_f16(const AttentionArgs& a, StreamT stream) { return launch_short<__half, 4>(a, stream); }

int short_launch_bf16(const AttentionArgs& a, StreamT stream) { return launch_short<__nv_bfloat16, 4>(a, stream); }

}  // namespace kilnrt::cuda::kernels::attention_mma_detail
