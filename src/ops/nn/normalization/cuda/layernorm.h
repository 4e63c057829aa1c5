// Vectorized LayerNormalization kernel: rows whose length and pointers allow 16-byte loads. A group of
// G = 1..32 lanes of one warp normalizes one row held in registers (one global read, one write): narrow rows
// (ConvNeXt's C = 96 channels) pack several rows per warp, wide rows (BERT / ViT's 768) take a full warp; 16-bit
// rows of 768 or 1024 values with scale and bias run on persistent warps that prefetch their next row (layernorm.cu).
// Also the general LayerNormalization entry point (layernorm_rows.cu).
#pragma once

#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// LayerNormalization over rows of length n (layernorm_rows.cu; dt: 0 float32, 1 float16, 2 bfloat16, statistics in
// float32): layernorm_vec below where it applies, else a warp or a block per row. scale / bias (may be null) have n
// elements of x's storage type; mean / inv_std may be null.
int layernorm(int dt, const void* x, const void* scale, const void* bias, void* y, float* mean, float* inv_std,
              int64_t rows, int64_t n, float eps, StreamT stream);

// Rows of n values (dt: 0 float32, 1 float16, 2 bfloat16); scale / bias (may be null) have n values of x's dtype;
// mean / inv_std (may be null) get one float32 per row. Returns -1 without launching anything when this path does
// not apply (n not a multiple of 16 bytes' worth of values, a pointer not 16-byte aligned, or n above
// kLayerNormVecMaxBytes of storage); otherwise the launch status (0 = launched).
constexpr int64_t kLayerNormVecMaxBytes = 32 * 8 * 16;  // 32 lanes x 8 vectors x 16 bytes: 2048 halves, 1024 floats
int layernorm_vec(int dt, const void* x, const void* scale, const void* bias, void* y, float* mean, float* inv_std,
                  int64_t rows, int64_t n, float eps, StreamT stream);

// EmbedLayerNorm's rows (com.kilnrt:EmbedLayerNorm): row r of x is the table row ids[r] (int64 when ids64, else
// int32; negative ids count from the end; out of range: zeros, as the Gather kernel), plus row r % period of addend
// when addend is given (x's dtype, n values a row).
struct LayerNormEmbed {
  const void* ids = nullptr;
  int ids64 = 1;
  int64_t vocab = 0;
  const void* addend = nullptr;
  int64_t period = 1;
};
// layernorm_vec with e applied (e.ids null: plain layernorm_vec). -1 (nothing launched) also when e.ids is set and x
// is y, or addend is not 16-byte aligned.
int embed_layernorm_vec(int dt, const LayerNormEmbed& e, const void* x, const void* scale, const void* bias, void* y,
                        float* mean, float* inv_std, int64_t rows, int64_t n, float eps, StreamT stream);
// The fallback's first step: y [rows, n] = table rows picked by e + e.addend rows (then a LayerNorm in place). -1
// when e has no ids.
int embed_rows(int dt, const LayerNormEmbed& e, const void* table, void* y, int64_t rows, int64_t n, StreamT stream);

}  // namespace kilnrt::cuda::kernels
