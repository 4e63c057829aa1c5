// The wgmma attention kernels (attention_wgmma.cuh) for float16 and bfloat16 storage. CMake compiles this file for
// sm_90a alone when 90 is among KILNRT_CUDA_ARCHS (KILNRT_WGMMA_SM90A=1); otherwise its kernels are empty and
// wg_built() says so, so that the dispatch never picks them.
#include "ops/nn/fused_attention/cuda/attention_wgmma.cuh"

namespace kilnrt::cuda::kernels::attention_mma_detail {

bool wg_built() {
#if defined(KILNRT_WGMMA_SM90A) && KILNRT_WGMMA_SM90A
  return true;
#else
  return false;
#endif
}

int wg_launch_f16(const AttentionArgs& a, int m_tiles, StreamT stream) {
  return m_tiles == 0   ? launch_wg<__half, 0>(a, stream)
         : m_tiles == 2 ? launch_wg<__half, 2>(a, stream)
                        : launch_wg<__half, 1>(a, stream);
}

int wg_launch_bf16(const AttentionArgs& a, int m_tiles, StreamT stream) {
  return m_tiles == 0   ? launch_wg<__nv_bfloat16, 0>(a, stream)
         : m_tiles == 2 ? launch_wg<__nv_bfloat16, 2>(a, stream)
                        : launch_wg<__nv_bfloat16, 1>(a, stream);
}

}  // namespace kilnrt::cuda::kernels::attention_mma_detail
