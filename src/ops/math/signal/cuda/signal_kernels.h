// Host entry points of the signal kernels: DFT and STFT (dft_stft.cu), the inverse real FFT of DFT inverse +
// onesided (irfft.cu). Plain C++ like kernels.h; each launcher returns the launch status (0 = success).
#pragma once
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// DFT of float32 x [outer, len, inner, comp] (comp 1 real / 2 complex) along len, zero-padded or cut to n points,
// out_len bins (onesided: n / 2 + 1) -> y [outer, out_len, inner, 2]. Direct O(n^2) sum in double.
int dft_f32(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, int comp, int64_t n, int64_t out_len,
            bool inverse, StreamT stream);
// STFT of float32 x [b, l, comp] with frames of flen samples every `step` (window float32 [flen] or null = ones)
// -> y [b, frames, bins, 2].
int stft_f32(const float* x, const float* window, float* y, int64_t b, int64_t l, int comp, int64_t step, int64_t flen,
             int64_t frames, int64_t bins, StreamT stream);

// DFT inverse + onesided, the inverse real FFT:
// x: [outer, len, inner, comp] (comp 1 real, 2 complex) holding bins of a Hermitian spectrum of length n; bins at
// t >= len are conj(x[n - t]) (0 where n - t >= len too); y: [outer, n, inner, 1] real, the inverse transform in
// double divided by n (src/ops/math/signal/signal.cc dft_cpu).
int irfft_f32(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, int comp, int64_t n, StreamT stream);

}  // namespace kilnrt::cuda::kernels
