// Kernels of the CUDA layers for CPU parity, part 1 (extra_kernels.h; part 2: extra_sample.cu). One kernel per family;
// dtype switches at the entry points.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/kernels/extra_kernels.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels::extra {
namespace {

using namespace launch_common;

__global__ void xunary_kernel(XUnary op, const void* xv, void* yv, int64_t n, float a, float b) {
  KILNRT_GRID_LOOP(i, n) {
    if (op == XUnary::kNot) {
      static_cast<uint8_t*>(yv)[i] = static_cast<const uint8_t*>(xv)[i] ? 0 : 1;
      continue;
    }
    const float v = static_cast<const float*>(xv)[i];
    if (op == XUnary::kIsNaN) { static_cast<uint8_t*>(yv)[i] = v != v; continue; }
    if (op == XUnary::kIsInf) {
      static_cast<uint8_t*>(yv)[i] = (isinf(v) && ((v > 0.f && a != 0.f) || (v < 0.f && b != 0.f))) ? 1 : 0;
      continue;
    }
    float r;
    switch (op) {
      case XUnary::kTan: r = tanf(v); break;
      case XUnary::kAsin: r = asinf(v); break;
      case XUnary::kAcos: r = acosf(v); break;
      case XUnary::kAtan: r = atanf(v); break;
      case XUnary::kSinh: r = sinhf(v); break;
      case XUnary::kCosh: r = coshf(v); break;
      case XUnary::kAsinh: r = asinhf(v); break;
      case XUnary::kAcosh: r = acoshf(v); break;
      case XUnary::kAtanh: r = atanhf(v); break;
      case XUnary::kShrink: r = v < -a ? v + b : (v > a ? v - b : (v != v ? v : 0.f)); break;
      case XUnary::kScale: r = v * a; break;
      default: r = v; break;
    }
    static_cast<float*>(yv)[i] = r;
  }
}

__global__ void arg_reduce_kernel(const float* x, int64_t* y, int64_t outer, int64_t r, int64_t inner, bool is_max,
                                  bool last) {
  KILNRT_GRID_LOOP(i, outer * inner) {
    const int64_t o = i / inner, in = i % inner;
    const float* p = x + o * r * inner + in;
    int64_t best = 0;
    float bv = p[0];
    for (int64_t j = 1; j < r; ++j) {
      const float v = p[j * inner];
      if (bv != bv) break;  // NaN wins (first NaN, like the CPU reference's comparisons)
      const bool better = v != v || (is_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv));
      if (better) { bv = v; best = j; }
    }
    y[i] = best;
  }
}

__global__ void hardmax_kernel(const float* x, float* y, int64_t outer, int64_t n, int64_t inner) {
  KILNRT_GRID_LOOP(i, outer * inner) {
    const int64_t o = i / inner, in = i % inner;
    const float* p = x + o * n * inner + in;
    float* q = y + o * n * inner + in;
    int64_t best = 0;
    for (int64_t j = 1; j < n; ++j)
      if (p[j * inner] > p[best * inner]) best = j;
    for (int64_t j = 0; j < n; ++j) q[j * inner] = j == best ? 1.f : 0.f;
  }
}

template <typename T>
__global__ void trilu_kernel(const T* x, T* y, const int64_t* k_dev, int64_t total, int64_t rows, int64_t cols,
                             bool upper) {
  const int64_t k = k_dev ? *k_dev : 0;
  KILNRT_GRID_LOOP(i, total) {
    const int64_t c = i % cols, r = (i / cols) % rows;
    const bool keep = upper ? (c - r >= k) : (c - r <= k);
    y[i] = keep ? x[i] : T(0);
  }
}

template <typename T>
__global__ void cumsum_kernel(const T* x, T* y, const void* axis_dev, bool axis_is_64, Dims s, int64_t total,
                              bool exclusive, bool reverse) {
  int64_t axis = axis_is_64 ? *static_cast<const int64_t*>(axis_dev) : *static_cast<const int32_t*>(axis_dev);
  if (axis < 0) axis += s.rank;
  if (axis < 0 || axis >= s.rank) return;
  int64_t inner = 1;
  for (int d = s.rank - 1; d > axis; --d) inner *= s.d[d];
  const int64_t len = s.d[axis];
  KILNRT_GRID_LOOP(i, total) {
    const int64_t pos = (i / inner) % len;
    const int64_t base = i - pos * inner;
    T acc = T(0);
    if (!reverse) {
      const int64_t end = exclusive ? pos : pos + 1;
      for (int64_t j = 0; j < end; ++j) acc += x[base + j * inner];
    } else {
      for (int64_t j = exclusive ? pos + 1 : pos; j < len; ++j) acc += x[base + j * inner];
    }
    y[i] = acc;
  }
}

__device__ __forceinline__ int64_t load_index(const void* idx, bool is64, int64_t i) {
  return is64 ? static_cast<const int64_t*>(idx)[i] : static_cast<const int32_t*>(idx)[i];
}

// Offset in a contiguous tensor of shape `shape` of element i of a tensor of shape `by` (same rank), with the
// coordinate of `axis` replaced by `axis_coord`.
__device__ __forceinline__ int64_t remap_offset(const Dims& shape, const Dims& by, int64_t i, int axis,
                                                int64_t axis_coord) {
  int64_t off = 0, stride = 1;
  for (int d = by.rank - 1; d >= 0; --d) {
    int64_t c = i % by.d[d];
    i /= by.d[d];
    if (d == axis) c = axis_coord;
    off += c * stride;
    stride *= shape.d[d];
  }
  return off;
}

template <typename T>
__global__ void gather_elements_kernel(const T* x, Dims xs, const void* idx, bool is64, Dims is, int axis, T* y,
                                       int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    int64_t j = load_index(idx, is64, i);
    if (j < 0) j += xs.d[axis];
    if (j < 0 || j >= xs.d[axis]) { y[i] = T(0); continue; }
    y[i] = x[remap_offset(xs, is, i, axis, j)];
  }
}

template <typename T>
__device__ __forceinline__ T combine(int red, T a, T b) {
  switch (red) {
    case 1: return a + b;
    case 2: return a * b;
    case 3: return a > b ? a : b;
    case 4: return a < b ? a : b;
    default: return b;
  }
}

__device__ void apply_update(float* p, float v, int red) {
  if (red == 0) { *p = v; return; }
  unsigned int* a = reinterpret_cast<unsigned int*>(p);
  unsigned int old = *a, assumed;
  do {
    assumed = old;
    const float nv = combine<float>(red, __uint_as_float(assumed), v);
    old = atomicCAS(a, assumed, __float_as_uint(nv));
  } while (old != assumed);
}
__device__ void apply_update(int64_t* p, int64_t v, int red) {
  if (red == 0) { *p = v; return; }
  unsigned long long* a = reinterpret_cast<unsigned long long*>(p);
  unsigned long long old = *a, assumed;
  do {
    assumed = old;
    const int64_t nv = combine<int64_t>(red, static_cast<int64_t>(assumed), v);
    old = atomicCAS(a, assumed, static_cast<unsigned long long>(nv));
  } while (old != assumed);
}

template <typename T>
__global__ void scatter_elements_kernel(T* y, Dims ys, const void* idx, bool is64, const T* upd, Dims us, int axis,
                                        int red, int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    int64_t j = load_index(idx, is64, i);
    if (j < 0) j += ys.d[axis];
    if (j < 0 || j >= ys.d[axis]) continue;
    apply_update(y + remap_offset(ys, us, i, axis, j), upd[i], red);
  }
}

template <typename T>
__global__ void scatter_nd_kernel(T* y, Dims ys, const int64_t* idx, int k, const T* upd, int64_t slice, int red,
                                  int64_t total) {
  KILNRT_GRID_LOOP(i, total) {
    const int64_t u = i / slice, e = i % slice;
    int64_t off = 0;
    bool ok = true;
    for (int d = 0; d < k; ++d) {
      int64_t c = idx[u * k + d];
      if (c < 0) c += ys.d[d];
      ok &= c >= 0 && c < ys.d[d];
      off = off * ys.d[d] + c;
    }
    if (!ok) continue;
    apply_update(y + off * slice + e, upd[i], red);
  }
}

template <typename T>
__global__ void gather_nd_kernel(const T* x, Dims xs, const int64_t* idx, int k, int batch_dims, int64_t per_batch,
                                 int64_t slice, T* y, int64_t total) {
  int64_t batch_stride = 1;  // elements of x per batch block
  for (int d = batch_dims; d < xs.rank; ++d) batch_stride *= xs.d[d];
  KILNRT_GRID_LOOP(i, total) {
    const int64_t t = i / slice, e = i % slice;
    const int64_t b = t / per_batch;
    int64_t off = 0;
    bool ok = true;
    for (int d = 0; d < k; ++d) {
      const int64_t dim = xs.d[batch_dims + d];
      int64_t c = idx[t * k + d];
      if (c < 0) c += dim;
      ok &= c >= 0 && c < dim;
      off = off * dim + c;
    }
    y[i] = ok ? x[b * batch_stride + off * slice + e] : T(0);
  }
}

template <typename T>
__global__ void eye_kernel(T* y, int64_t rows, int64_t cols, int64_t k, T one) {
  KILNRT_GRID_LOOP(i, rows * cols) {
    const int64_t r = i / cols, c = i % cols;
    y[i] = c - r == k ? one : T(0);
  }
}

// One block per (n, group) row.
__global__ void group_norm_kernel(const float* x, const float* scale, const float* bias, float* y, int64_t channels,
                                  int64_t spatial, int64_t groups, bool per_channel, float eps) {
  const int64_t row = blockIdx.x;
  const int64_t cpg = channels / groups, len = cpg * spatial;
  const int64_t g = row % groups;
  const float* p = x + row * len;
  float* q = y + row * len;
  __shared__ float s_sum[kThreads], s_sq[kThreads];
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += p[j];
  s_sum[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) s_sum[threadIdx.x] += s_sum[threadIdx.x + s];
    __syncthreads();
  }
  const float mean = s_sum[0] / float(len);
  float sq = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const float d = p[j] - mean;
    sq += d * d;
  }
  s_sq[threadIdx.x] = sq;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) s_sq[threadIdx.x] += s_sq[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = rsqrtf(s_sq[0] / float(len) + eps);
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
    const int64_t ch = g * cpg + j / spatial;
    const int64_t si = per_channel ? ch : g;
    const float a = scale ? scale[si] : 1.f, b = bias ? bias[si] : 0.f;
    q[j] = (p[j] - mean) * inv * a + b;
  }
}

__global__ void lrn_kernel(const float* x, float* y, int64_t n, int64_t c, int64_t spatial, int size, float alpha,
                           float beta, float bias) {
  const int lo = (size - 1) / 2, hi = size - 1 - lo;
  KILNRT_GRID_LOOP(i, n * c * spatial) {
    const int64_t s = i % spatial, ch = (i / spatial) % c, b = i / (spatial * c);
    float sum = 0.f;
    for (int64_t cc = ch - lo; cc <= ch + hi; ++cc) {
      if (cc < 0 || cc >= c) continue;
      const float v = x[(b * c + cc) * spatial + s];
      sum += v * v;
    }
    y[i] = x[i] / powf(bias + alpha / float(size) * sum, beta);
  }
}

__global__ void conv_transpose2d_kernel(const float* x, const float* w, const float* bias, float* y, ConvT2d p) {
  const int64_t cpg = p.c / p.groups, kpg = p.k / p.groups;
  KILNRT_GRID_LOOP(i, p.n * p.k * p.oh * p.ow) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, ko = (i / (p.ow * p.oh)) % p.k, b = i / (p.ow * p.oh * p.k);
    const int64_t g = ko / kpg, kk = ko % kpg;
    float acc = bias ? bias[ko] : 0.f;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int64_t ty = oy + p.ph - int64_t(ky) * p.dh;
      if (ty < 0 || ty % p.sh) continue;
      const int64_t iy = ty / p.sh;
      if (iy >= p.h) continue;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int64_t tx = ox + p.pw - int64_t(kx) * p.dw;
        if (tx < 0 || tx % p.sw) continue;
        const int64_t ix = tx / p.sw;
        if (ix >= p.w) continue;
        for (int64_t ci = 0; ci < cpg; ++ci) {
          const int64_t c = g * cpg + ci;
          acc += x[((b * p.c + c) * p.h + iy) * p.w + ix] * w[((c * kpg + kk) * p.kh + ky) * p.kw + kx];
        }
      }
    }
    y[i] = acc;
  }
}

__device__ __forceinline__ float nll_term(const float* logp, const void* target, bool t64, const float* w, int64_t c,
                                          int64_t inner, bool has_ignore, int64_t ignore, int64_t i, float* wt) {
  const int64_t b = i / inner, d = i % inner;
  const int64_t t = load_index(target, t64, i);
  if (has_ignore && t == ignore) { *wt = 0.f; return 0.f; }
  if (t < 0 || t >= c) { *wt = 0.f; return __int_as_float(0x7fc00000); }
  *wt = w ? w[t] : 1.f;
  return -logp[(b * c + t) * inner + d] * *wt;
}

__global__ void nll_none_kernel(const float* logp, const void* target, bool t64, const float* w, float* y, int64_t n,
                                int64_t c, int64_t inner, bool has_ignore, int64_t ignore) {
  KILNRT_GRID_LOOP(i, n * inner) {
    float wt;
    y[i] = nll_term(logp, target, t64, w, c, inner, has_ignore, ignore, i, &wt);
  }
}

// One block: the whole reduction (losses are small tensors: batch x spatial).
__global__ void nll_reduce_kernel(const float* logp, const void* target, bool t64, const float* w, float* y, int64_t n,
                                  int64_t c, int64_t inner, bool has_ignore, int64_t ignore, bool mean) {
  __shared__ double s_loss[kThreads], s_w[kThreads];
  double loss = 0.0, wsum = 0.0;
  for (int64_t i = threadIdx.x; i < n * inner; i += blockDim.x) {
    float wt;
    loss += nll_term(logp, target, t64, w, c, inner, has_ignore, ignore, i, &wt);
    wsum += wt;
  }
  s_loss[threadIdx.x] = loss;
  s_w[threadIdx.x] = wsum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      s_loss[threadIdx.x] += s_loss[threadIdx.x + s];
      s_w[threadIdx.x] += s_w[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) y[0] = mean ? float(s_loss[0] / s_w[0]) : float(s_loss[0]);
}

int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int i = 0; i < d.rank; ++i) n *= d.d[i];
  return n;
}

}  // namespace

int xunary(XUnary op, const void* x, void* y, int64_t n, float a, float b, StreamT stream) {
  if (n <= 0) return 0;
  xunary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(op, x, y, n, a, b);
  return launch_status();
}

int arg_reduce_f32(const float* x, int64_t* y, int64_t outer, int64_t r, int64_t inner, bool is_max, bool last,
                   StreamT stream) {
  if (outer * inner <= 0 || r <= 0) return 0;
  arg_reduce_kernel<<<blocks_for(outer * inner), kThreads, 0, stream>>>(x, y, outer, r, inner, is_max, last);
  return launch_status();
}

int hardmax_f32(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, StreamT stream) {
  if (outer * inner <= 0 || n <= 0) return 0;
  hardmax_kernel<<<blocks_for(outer * inner), kThreads, 0, stream>>>(x, y, outer, n, inner);
  return launch_status();
}

int trilu(const void* x, void* y, const int64_t* k_dev, int64_t batch, int64_t rows, int64_t cols, bool upper,
          size_t elem_size, StreamT stream) {
  const int64_t total = batch * rows * cols;
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  switch (elem_size) {
#define KILNRT_TRILU(S)                                                                                        \
  case S:                                                                                                      \
    trilu_kernel<<<g, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(x), static_cast<Bytes<S>::T*>(y), \
                                             k_dev, total, rows, cols, upper);                                 \
    break;
    KILNRT_TRILU(1) KILNRT_TRILU(2) KILNRT_TRILU(4) KILNRT_TRILU(8)
#undef KILNRT_TRILU
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int cumsum(const void* x, void* y, const void* axis_dev, bool axis_is_64, const Dims& shape, bool exclusive,
           bool reverse, int dtype, StreamT stream) {
  const int64_t total = numel(shape);
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  switch (dtype) {
#define KILNRT_CUMSUM(C, T)                                                                                         \
  case C:                                                                                                           \
    cumsum_kernel<T><<<g, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), axis_dev, axis_is_64, \
                                                 shape, total, exclusive, reverse);                                 \
    break;
    KILNRT_CUMSUM(0, float) KILNRT_CUMSUM(1, int64_t) KILNRT_CUMSUM(2, int32_t) KILNRT_CUMSUM(6, double)
#undef KILNRT_CUMSUM
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int gather_elements(const void* x, const Dims& x_shape, const void* idx, bool idx_is_64, const Dims& idx_shape,
                    int axis, void* y, size_t elem_size, StreamT stream) {
  const int64_t total = numel(idx_shape);
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  switch (elem_size) {
#define KILNRT_GE(S)                                                                                                 \
  case S:                                                                                                            \
    gather_elements_kernel<<<g, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(x), x_shape, idx, idx_is_64, \
                                                       idx_shape, axis, static_cast<Bytes<S>::T*>(y), total);        \
    break;
    KILNRT_GE(1) KILNRT_GE(2) KILNRT_GE(4) KILNRT_GE(8)
#undef KILNRT_GE
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int scatter_elements(void* y, const Dims& y_shape, const void* idx, bool idx_is_64, const void* updates,
                     const Dims& upd_shape, int axis, int reduction, int dtype, StreamT stream) {
  const int64_t total = numel(upd_shape);
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  if (dtype == 0)
    scatter_elements_kernel<<<g, kThreads, 0, stream>>>(static_cast<float*>(y), y_shape, idx, idx_is_64,
                                                        static_cast<const float*>(updates), upd_shape, axis,
                                                        reduction, total);
  else if (dtype == 1)
    scatter_elements_kernel<<<g, kThreads, 0, stream>>>(static_cast<int64_t*>(y), y_shape, idx, idx_is_64,
                                                        static_cast<const int64_t*>(updates), upd_shape, axis,
                                                        reduction, total);
  else
    return static_cast<int>(cudaErrorInvalidValue);
  return launch_status();
}

int scatter_nd(void* y, const Dims& y_shape, const int64_t* idx, int64_t n_upd, int k, const void* updates,
               int64_t slice, int reduction, int dtype, StreamT stream) {
  const int64_t total = n_upd * slice;
  if (total <= 0) return 0;
  const unsigned g = blocks_for(total);
  if (dtype == 0)
    scatter_nd_kernel<<<g, kThreads, 0, stream>>>(static_cast<float*>(y), y_shape, idx, k,
                                                  static_cast<const float*>(updates), slice, reduction, total);
  else if (dtype == 1)
    scatter_nd_kernel<<<g, kThreads, 0, stream>>>(static_cast<int64_t*>(y), y_shape, idx, k,
                                                  static_cast<const int64_t*>(updates), slice, reduction, total);
  else
    return static_cast<int>(cudaErrorInvalidValue);
  return launch_status();
}

int gather_nd(const void* x, const Dims& x_shape, const int64_t* idx, int64_t n_idx, int k, int batch_dims,
              int64_t n_batch, int64_t slice, void* y, size_t elem_size, StreamT stream) {
  const int64_t total = n_idx * slice;
  if (total <= 0) return 0;
  const int64_t per_batch = n_batch > 0 ? n_idx / n_batch : n_idx;
  const unsigned g = blocks_for(total);
  switch (elem_size) {
#define KILNRT_GND(S)                                                                                            \
  case S:                                                                                                        \
    gather_nd_kernel<<<g, kThreads, 0, stream>>>(static_cast<const Bytes<S>::T*>(x), x_shape, idx, k, batch_dims, \
                                                 per_batch, slice, static_cast<Bytes<S>::T*>(y), total);         \
    break;
    KILNRT_GND(1) KILNRT_GND(2) KILNRT_GND(4) KILNRT_GND(8)
#undef KILNRT_GND
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int eye_like(void* y, int64_t rows, int64_t cols, int64_t k, uint64_t one_bits, size_t elem_size, StreamT stream) {
  if (rows * cols <= 0) return 0;
  const unsigned g = blocks_for(rows * cols);
  switch (elem_size) {
#define KILNRT_EYE(S)                                                                                              \
  case S:                                                                                                          \
    eye_kernel<<<g, kThreads, 0, stream>>>(static_cast<Bytes<S>::T*>(y), rows, cols, k,                            \
                                           static_cast<Bytes<S>::T>(one_bits));                                    \
    break;
    KILNRT_EYE(1) KILNRT_EYE(2) KILNRT_EYE(4) KILNRT_EYE(8)
#undef KILNRT_EYE
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return launch_status();
}

int group_norm_f32(const float* x, const float* scale, const float* bias, float* y, int64_t n, int64_t channels,
                   int64_t spatial, int64_t groups, bool per_channel, float eps, StreamT stream) {
  if (n * channels * spatial <= 0) return 0;
  if (groups <= 0 || channels % groups != 0 || n * groups > 0x7fffffffLL) return static_cast<int>(cudaErrorInvalidValue);
  group_norm_kernel<<<static_cast<unsigned>(n * groups), kThreads, 0, stream>>>(x, scale, bias, y, channels, spatial,
                                                                               groups, per_channel, eps);
  return launch_status();
}

int lrn_f32(const float* x, float* y, int64_t n, int64_t c, int64_t spatial, int size, float alpha, float beta,
            float bias, StreamT stream) {
  const int64_t total = n * c * spatial;
  if (total <= 0) return 0;
  lrn_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, n, c, spatial, size, alpha, beta, bias);
  return launch_status();
}


int nll_loss_f32(const float* logp, const void* target, bool target_is_64, const float* weight, float* y, int64_t n,
                 int64_t c, int64_t inner, bool has_ignore, int64_t ignore_index, int reduction, StreamT stream) {
  if (reduction == 0) {
    if (n * inner <= 0) return 0;
    nll_none_kernel<<<blocks_for(n * inner), kThreads, 0, stream>>>(logp, target, target_is_64, weight, y, n, c, inner,
                                                                    has_ignore, ignore_index);
  } else {
    nll_reduce_kernel<<<1, kThreads, 0, stream>>>(logp, target, target_is_64, weight, y, n, c, inner, has_ignore,
                                                  ignore_index, reduction == 2);
  }
  return launch_status();
}

int conv_transpose2d_f32(const float* x, const float* w, const float* bias, float* y, const ConvT2d& p,
                         StreamT stream) {
  const int64_t total = p.n * p.k * p.oh * p.ow;
  if (total <= 0) return 0;
  conv_transpose2d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, w, bias, y, p);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::extra
