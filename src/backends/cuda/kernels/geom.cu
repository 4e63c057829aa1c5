// Kernels of geom.h: LpPool, CenterCropPad, Col2Im, AffineGrid, DeformConv, TensorScatter. One thread per output
// element (grid-stride loops); each follows its CPU reference's order of sums and roundings.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/kernels/geom.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels::geom {
namespace {

using namespace launch_common;

// ---- LpPool --------------------------------------------------------------------------------------------------------
__global__ void lp_pool3_kernel(const float* x, float* y, LpPool3 g) {
  const int64_t out_size = g.out[0] * g.out[1] * g.out[2], in_size = g.in[0] * g.in[1] * g.in[2];
  const int64_t total = g.planes * out_size;
  KILNRT_GRID_LOOP(i, total) {
    const int64_t plane = i / out_size;
    int64_t r = i % out_size;
    const int64_t ow = r % g.out[2];
    r /= g.out[2];
    const int64_t oh = r % g.out[1], od = r / g.out[1];
    const float* xc = x + plane * in_size;
    double acc = 0.0;
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t id = od * g.s[0] - g.pad[0] + kd * g.d[0];
      if (id < 0 || id >= g.in[0]) continue;
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        const int64_t ih = oh * g.s[1] - g.pad[1] + kh * g.d[1];
        if (ih < 0 || ih >= g.in[1]) continue;
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          const int64_t iw = ow * g.s[2] - g.pad[2] + kw * g.d[2];
          if (iw < 0 || iw >= g.in[2]) continue;
          const double v = fabs(static_cast<double>(xc[(id * g.in[1] + ih) * g.in[2] + iw]));
          acc += g.p == 2 ? v * v : g.p == 1 ? v : pow(v, g.p);
        }
      }
    }
    y[i] = static_cast<float>(g.p == 2 ? sqrt(acc) : g.p == 1 ? acc : pow(acc, 1.0 / g.p));
  }
}

// ---- CenterCropPad -------------------------------------------------------------------------------------------------
template <typename T>
__global__ void crop_pad_kernel(const T* x, T* y, CropPad c, int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    int64_t r = i, src = 0, mul = 1;
    bool inside = true;
    for (int a = c.rank - 1; a >= 0; --a) {
      const int64_t o = r % c.out[a];
      r /= c.out[a];
      const int64_t rel = o - c.dst0[a];
      if (rel < 0 || rel >= c.len[a]) {
        inside = false;
        break;
      }
      src += (c.src0[a] + rel) * mul;
      mul *= c.in[a];
    }
    y[i] = inside ? x[src] : T(0);
  }
}

// ---- Col2Im --------------------------------------------------------------------------------------------------------
__global__ void col2im_kernel(const float* x, float* y, Col2ImGeom g, int64_t image_size, int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    const int64_t plane = i / image_size;  // n * channels + c
    int64_t pix[kMaxRank];
    for (int64_t d = g.nd - 1, r = i % image_size; d >= 0; --d) {
      pix[d] = r % g.image[d];
      r /= g.image[d];
    }
    const float* col = x + plane * g.k_size * g.l_size;
    float acc = 0.f;
    for (int64_t k = 0; k < g.k_size; ++k) {
      int64_t kr = k, l = 0, lmul = 1;
      bool hit = true;
      for (int d = g.nd - 1; d >= 0; --d) {
        const int64_t kd = kr % g.block[d];
        kr /= g.block[d];
        const int64_t t = pix[d] + g.pad[d] - kd * g.dil[d];  // = block position * stride
        if (t < 0 || t % g.stride[d] != 0 || t / g.stride[d] >= g.blocks[d]) {
          hit = false;
          break;
        }
        l += (t / g.stride[d]) * lmul;
        lmul *= g.blocks[d];
      }
      if (hit) acc += col[k * g.l_size + l];
    }
    y[i] = acc;
  }
}

// ---- AffineGrid ----------------------------------------------------------------------------------------------------
__device__ __forceinline__ double grid_coord(int64_t i, int64_t n, bool align) {
  if (align) return n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) : -1.0;
  return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n);
}

__global__ void affine_grid_kernel(const float* theta, float* grid, AffineGridGeom g, int64_t points) {
  const int nd = g.nd;
  KILNRT_GRID_LOOP(i, points) {
    int64_t r = i;
    const int64_t x = r % g.width;
    r /= g.width;
    const int64_t yy = r % g.height;
    r /= g.height;
    const int64_t z = r % g.depth, b = r / g.depth;
    const double p[4] = {grid_coord(x, g.width, g.align_corners), grid_coord(yy, g.height, g.align_corners),
                         nd == 3 ? grid_coord(z, g.depth, g.align_corners) : 1.0, 1.0};
    const float* t = theta + b * nd * (nd + 1);
    for (int row = 0; row < nd; ++row) {
      double acc = 0.0;
      for (int c = 0; c <= nd; ++c) acc += static_cast<double>(t[row * (nd + 1) + c]) * p[c == nd ? 3 : c];
      grid[i * nd + row] = static_cast<float>(acc);
    }
  }
}

// ---- DeformConv ----------------------------------------------------------------------------------------------------
__device__ double bilinear_zero_pad(const float* plane, int64_t h, int64_t w, double y, double x) {
  const double y0f = floor(y), x0f = floor(x);
  const auto y0 = static_cast<int64_t>(y0f), x0 = static_cast<int64_t>(x0f);
  const double fy = y - y0f, fx = x - x0f;
  double acc = 0.0;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const int64_t yy = y0 + dy, xx = x0 + dx;
      if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
      const double wt = (dy ? fy : 1 - fy) * (dx ? fx : 1 - fx);
      if (wt != 0.0) acc += wt * static_cast<double>(plane[yy * w + xx]);
    }
  return acc;
}

__global__ void deform_conv2d_kernel(DeformConvArgs a, int64_t total) {
  const int64_t icg = a.c / a.group, ocg = a.oc / a.group, ic_per_og = a.c / a.offset_group;
  const int64_t taps = a.kh * a.kw, opix = a.oh * a.ow;
  KILNRT_GRID_LOOP(idx, total) {
    const int64_t p = idx % opix;
    const int64_t o = (idx / opix) % a.oc, b = idx / (opix * a.oc);
    const int64_t i = p / a.ow, j = p % a.ow;
    const int64_t g = o / ocg;
    double acc = a.bias ? static_cast<double>(a.bias[o]) : 0.0;
    for (int64_t cl = 0; cl < icg; ++cl) {
      const int64_t ci = g * icg + cl;
      const int64_t og = ci / ic_per_og;
      const float* plane = a.x + (b * a.c + ci) * a.h * a.w;
      for (int64_t k = 0; k < taps; ++k) {
        const int64_t ka = k / a.kw, ke = k % a.kw;
        const int64_t tap = og * taps + k;
        const float* dh = a.offset + ((b * a.offset_group * taps + tap) * 2) * opix;
        const double yy = static_cast<double>(i * a.stride[0] - a.pad[0] + ka * a.dil[0]) + static_cast<double>(dh[p]);
        const double xx =
            static_cast<double>(j * a.stride[1] - a.pad[1] + ke * a.dil[1]) + static_cast<double>(dh[opix + p]);
        double v = bilinear_zero_pad(plane, a.h, a.w, yy, xx);
        if (a.mask) v *= static_cast<double>(a.mask[(b * a.offset_group * taps + tap) * opix + p]);
        acc += static_cast<double>(a.weight[(o * icg + cl) * taps + k]) * v;
      }
    }
    a.y[idx] = static_cast<float>(acc);
  }
}

// ---- TensorScatter -------------------------------------------------------------------------------------------------
template <typename T>
__global__ void tensor_scatter_kernel(const T* cache, const T* update, const int64_t* write_indices, T* y,
                                      ScatterGeom g, int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    const int64_t in = i % g.inner;
    int64_t r = i / g.inner;
    const int64_t pos = r % g.max_len;
    r /= g.max_len;  // b * prefix + p
    const int64_t b = r / g.prefix;
    const int64_t start = write_indices ? write_indices[b] : 0;
    int64_t s = pos - start;
    if (g.circular) s = ((s % g.max_len) + g.max_len) % g.max_len;
    y[i] = s >= 0 && s < g.len ? update[(r * g.len + s) * g.inner + in] : cache[i];
  }
}

}  // namespace

int lp_pool3(const float* x, float* y, const LpPool3& g, StreamT stream) {
  const int64_t total = g.planes * g.out[0] * g.out[1] * g.out[2];
  if (total <= 0) return 0;
  lp_pool3_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, g);
  return launch_status();
}

int center_crop_pad(const void* x, void* y, size_t elem_size, const CropPad& c, StreamT stream) {
  if (c.rank < 1 || c.rank > kMaxRank) return static_cast<int>(cudaErrorInvalidValue);
  int64_t total = 1;
  for (int a = 0; a < c.rank; ++a) total *= c.out[a];
  if (total <= 0) return 0;
  const unsigned blocks = blocks_for(total);
  switch (elem_size) {
#define KILNRT_CROP_PAD(S)                                                                                       \
  case S:                                                                                                        \
    crop_pad_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(x), static_cast<Bytes<S>::T*>(y), \
                                                     c, total);                                                  \
    break;
    KILNRT_CROP_PAD(1) KILNRT_CROP_PAD(2) KILNRT_CROP_PAD(4) KILNRT_CROP_PAD(8)
#undef KILNRT_CROP_PAD
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int col2im(const float* x, float* y, const Col2ImGeom& g, StreamT stream) {
  if (g.nd < 1 || g.nd > kMaxRank) return static_cast<int>(cudaErrorInvalidValue);
  int64_t image_size = 1;
  for (int d = 0; d < g.nd; ++d) image_size *= g.image[d];
  const int64_t total = g.batch * g.channels * image_size;
  if (total <= 0) return 0;
  col2im_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, g, image_size, total);
  return launch_status();
}

int affine_grid(const float* theta, float* grid, const AffineGridGeom& g, StreamT stream) {
  if (g.nd != 2 && g.nd != 3) return static_cast<int>(cudaErrorInvalidValue);
  const int64_t points = g.n * g.depth * g.height * g.width;
  if (points <= 0) return 0;
  affine_grid_kernel<<<blocks_for(points), kThreads, 0, stream>>>(theta, grid, g, points);
  return launch_status();
}

int deform_conv2d(const DeformConvArgs& a, StreamT stream) {
  const int64_t total = a.n * a.oc * a.oh * a.ow;
  if (total <= 0) return 0;
  deform_conv2d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(a, total);
  return launch_status();
}

int tensor_scatter(const void* cache, const void* update, const int64_t* write_indices, void* y, size_t elem_size,
                   const ScatterGeom& g, StreamT stream) {
  const int64_t total = g.batch * g.prefix * g.max_len * g.inner;
  if (total <= 0) return 0;
  const unsigned blocks = blocks_for(total);
  switch (elem_size) {
#define KILNRT_SCATTER(S)                                                                                      \
  case S:                                                                                                      \
    tensor_scatter_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(cache),             \
                                                           static_cast<const Bytes<S>::T*>(update), write_indices, \
                                                           static_cast<Bytes<S>::T*>(y), g, total);            \
    break;
    KILNRT_SCATTER(1) KILNRT_SCATTER(2) KILNRT_SCATTER(4) KILNRT_SCATTER(8)
#undef KILNRT_SCATTER
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::geom
