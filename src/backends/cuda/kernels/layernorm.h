// Vectorized LayerNormalization kernel (issue 7): rows whose length and pointers allow 16-byte loads. A group of
// G = 1..32 lanes of one warp normalizes one row held in registers (one global read, one write): narrow rows
// (ConvNeXt's C = 96 channels) pack several rows per warp, wide rows (BERT / ViT's 768) take a full warp.
#pragma once

#include <cstdint>

#include "backends/cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// Rows of n values (dt: 0 float32, 1 float16, 2 bfloat16); scale / bias (may be null) have n values of x's dtype;
// mean / inv_std (may be null) get one float32 per row. Returns -1 without launching anything when this path does
// not apply (n not a multiple of 16 bytes' worth of values, a pointer not 16-byte aligned, or n above
// kLayerNormVecMaxBytes of storage); otherwise the launch status (0 = launched).
constexpr int64_t kLayerNormVecMaxBytes = 32 * 8 * 16;  // 32 lanes x 8 vectors x 16 bytes: 2048 halves, 1024 floats
int layernorm_vec(int dt, const void* x, const void* scale, const void* bias, void* y, float* mean, float* inv_std,
                  int64_t rows, int64_t n, float eps, StreamT stream);

}  // namespace kilnrt::cuda::kernels
