// Kernels of the small-input-channel convolution paths (conv_small_c_kernels.h): an im2col (one thread per 8 column
// entries, one 16-byte store; a pure rearrangement for patchify geometries) and a channel pack to 4 / 8 channels (one
// thread per pixel, one 8- / 16-byte store). Both only move 16-bit values; index math in 32 bits except the image
// offsets.
#include <cuda_runtime.h>

#include "ops/nn/conv/cuda/conv_small_c_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using launch_common::kThreads;

// Thread i: column row r = i / groups (patch), entries [8*(i % groups), +8).
struct Im2colGeo {
  int c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, kc, groups, total;
};

__global__ void im2col_kernel(const uint16_t* __restrict__ x, bool nhwc, uint4* __restrict__ col, Im2colGeo q) {
  const int c = q.c, h = q.h, w = q.w, kw = q.kw, ow = q.ow, oh = q.oh, kc = q.kc, groups = q.groups;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= q.total) return;
  const int g = i % groups;
  const int r = i / groups;
  const int ox = r % ow;
  const int oy = (r / ow) % oh;
  const int b = r / (ow * oh);
  const uint16_t* img = x + int64_t(b) * c * h * w;
  uint16_t v[8];
  const int kk = q.kh * kw;
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const int j = g * 8 + e;
    uint16_t val = 0;
    if (j < kc) {
      const int ci = j / kk;
      const int t = j - ci * kk;
      const int ky = t / kw;
      const int kx = t - ky * kw;
      const int iy = oy * q.sh - q.ph + ky * q.dh, ix = ox * q.sw - q.pw + kx * q.dw;
      if (iy >= 0 && iy < h && ix >= 0 && ix < w)
        val = nhwc ? img[(int64_t(iy) * w + ix) * c + ci] : img[(int64_t(ci) * h + iy) * w + ix];
    }
    v[e] = val;
  }
  uint4 u;
  u.x = v[0] | (uint32_t(v[1]) << 16);
  u.y = v[2] | (uint32_t(v[3]) << 16);
  u.z = v[4] | (uint32_t(v[5]) << 16);
  u.w = v[6] | (uint32_t(v[7]) << 16);
  col[i] = u;
}

template <int kCp>
__global__ void pack_kernel(const uint16_t* __restrict__ x, bool nhwc, uint16_t* __restrict__ out, int c, int hw,
                            int total) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;  // pixel of the chunk
  if (i >= total) return;
  const int b = i / hw;
  const int s = i - b * hw;
  const uint16_t* img = x + int64_t(b) * c * hw;
  uint16_t v[kCp];
#pragma unroll
  for (int e = 0; e < kCp; ++e) v[e] = e < c ? (nhwc ? img[int64_t(s) * c + e] : img[int64_t(e) * hw + s]) : 0;
  uint32_t wv[kCp / 2];
#pragma unroll
  for (int e = 0; e < kCp / 2; ++e) wv[e] = v[2 * e] | (uint32_t(v[2 * e + 1]) << 16);
  if constexpr (kCp == 8) {
    reinterpret_cast<uint4*>(out)[i] = make_uint4(wv[0], wv[1], wv[2], wv[3]);
  } else {
    reinterpret_cast<uint2*>(out)[i] = make_uint2(wv[0], wv[1]);
  }
}

bool fits_int(int64_t v) { return v >= 0 && v < (int64_t(1) << 31); }

}  // namespace

int im2col16(const void* x, bool x_nhwc, void* col, const Conv2d& p, int64_t n0, int64_t count, int64_t kc_pad,
             StreamT stream) {
  const int64_t kc = p.c * p.kh * p.kw;
  if (kc_pad % 8 != 0 || kc_pad < kc || (reinterpret_cast<uintptr_t>(col) & 15) != 0)
    return static_cast<int>(cudaErrorInvalidValue);
  const int64_t groups = kc_pad / 8, total = count * p.oh * p.ow * groups;
  if (total == 0) return 0;
  if (!fits_int(total) || !fits_int(p.c * p.h * p.w)) return static_cast<int>(cudaErrorInvalidValue);
  const uint16_t* xb = static_cast<const uint16_t*>(x) + n0 * p.c * p.h * p.w;
  const unsigned blocks = static_cast<unsigned>((total + kThreads - 1) / kThreads);
  const Im2colGeo q{int(p.c), int(p.h), int(p.w), p.kh,      p.kw,      p.sh,    p.sw,        p.ph,
                    p.pw,     p.dh,     p.dw,     int(p.oh), int(p.ow), int(kc), int(groups), int(total)};
  im2col_kernel<<<blocks, kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(xb, x_nhwc, static_cast<uint4*>(col),
                                                                                 q);
  return launch_common::launch_status();
}

int pack_channels16(const void* x, bool x_nhwc, void* out, const Conv2d& p, int64_t n0, int64_t count, int cp,
                    StreamT stream) {
  if ((cp != 4 && cp != 8) || p.c >= cp || (reinterpret_cast<uintptr_t>(out) & (cp * 2 - 1)) != 0)
    return static_cast<int>(cudaErrorInvalidValue);
  const int64_t hw = p.h * p.w, total = count * hw;
  if (total == 0) return 0;
  if (!fits_int(total) || !fits_int(p.c * hw)) return static_cast<int>(cudaErrorInvalidValue);
  const uint16_t* xb = static_cast<const uint16_t*>(x) + n0 * p.c * hw;
  const unsigned blocks = static_cast<unsigned>((total + kThreads - 1) / kThreads);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  if (cp == 8)
    pack_kernel<8><<<blocks, kThreads, 0, s>>>(xb, x_nhwc, static_cast<uint16_t*>(out), int(p.c), int(hw), int(total));
  else
    pack_kernel<4><<<blocks, kThreads, 0, s>>>(xb, x_nhwc, static_cast<uint16_t*>(out), int(p.c), int(hw), int(total));
  return launch_common::launch_status();
}

}  // namespace kilnrt::cuda::kernels
