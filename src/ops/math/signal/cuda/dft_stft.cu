// Kernels of DFT and STFT (signal_kernels.h): one thread per output bin, a direct O(n^2) sum in double with the
// twiddle angle reduced as (k * t) mod n, like the CPU reference (src/ops/math/signal/signal.cc).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/math/signal/cuda/signal_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;

constexpr double kTwoPi = 6.283185307179586476925286766559;

__global__ void dft_kernel(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, int comp, int64_t n,
                           int64_t out_len, bool inverse) {
  const int64_t total = outer * out_len * inner;
  const double sign = inverse ? 1.0 : -1.0;
  KILNRT_GRID_LOOP(e, total) {
    const int64_t i = e % inner;
    const int64_t k = (e / inner) % out_len;
    const int64_t o = e / (inner * out_len);
    const int64_t upto = n < len ? n : len;  // samples past len are the zero padding
    double sr = 0, si = 0;
    for (int64_t t = 0; t < upto; ++t) {
      const int64_t base = ((o * len + t) * inner + i) * comp;
      const double re = x[base], im = comp == 2 ? static_cast<double>(x[base + 1]) : 0.0;
      double s, c;
      sincos(sign * kTwoPi * static_cast<double>((k * t) % n) / static_cast<double>(n), &s, &c);
      sr += re * c - im * s;
      si += re * s + im * c;
    }
    if (inverse) {
      sr /= static_cast<double>(n);
      si /= static_cast<double>(n);
    }
    y[2 * e] = static_cast<float>(sr);
    y[2 * e + 1] = static_cast<float>(si);
  }
}

__global__ void stft_kernel(const float* x, const float* window, float* y, int64_t b, int64_t l, int comp, int64_t step,
                            int64_t flen, int64_t frames, int64_t bins) {
  const int64_t total = b * frames * bins;
  KILNRT_GRID_LOOP(e, total) {
    const int64_t k = e % bins;
    const int64_t f = (e / bins) % frames;
    const int64_t bi = e / (bins * frames);
    double sr = 0, si = 0;
    for (int64_t t = 0; t < flen; ++t) {
      const int64_t base = (bi * l + f * step + t) * comp;
      const double w = window ? static_cast<double>(window[t]) : 1.0;
      const double re = x[base] * w, im = comp == 2 ? x[base + 1] * w : 0.0;
      double s, c;
      sincos(-kTwoPi * static_cast<double>((k * t) % flen) / static_cast<double>(flen), &s, &c);
      sr += re * c - im * s;
      si += re * s + im * c;
    }
    y[2 * e] = static_cast<float>(sr);
    y[2 * e + 1] = static_cast<float>(si);
  }
}

}  // namespace

int dft_f32(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, int comp, int64_t n, int64_t out_len,
            bool inverse, StreamT stream) {
  const int64_t total = outer * out_len * inner;
  if (total <= 0 || n <= 0) return 0;
  dft_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, outer, len, inner, comp, n, out_len, inverse);
  return launch_status();
}

int stft_f32(const float* x, const float* window, float* y, int64_t b, int64_t l, int comp, int64_t step, int64_t flen,
             int64_t frames, int64_t bins, StreamT stream) {
  const int64_t total = b * frames * bins;
  if (total <= 0 || flen <= 0) return 0;
  stft_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, window, y, b, l, comp, step, flen, frames, bins);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels
