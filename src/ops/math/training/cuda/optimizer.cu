// The ai.onnx.preview.training optimizer kernels (optimizer_kernels.h): the CPU reference's arithmetic (order of
// operations and the float / double roundings), so that results match it to the last bit or nearly.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/math/training/cuda/optimizer_kernels.h"

namespace kilnrt::cuda::kernels::optimizer {
namespace {

using namespace launch_common;

// ---- optimizers --------------------------------------------------------------------------------------------------
__device__ __forceinline__ double load_r(const OptScalars& s) {
  return s.r_f64 ? *static_cast<const double*>(s.r) : static_cast<double>(*static_cast<const float*>(s.r));
}

template <typename T>
__global__ void adagrad_kernel(OptScalars s, OptTensor t, OptAttrs a) {
  const double r = load_r(s), step = static_cast<double>(*s.t);
  const double lr = r / (1 + step * a.decay);
  const T* x = static_cast<const T*>(t.x);
  const T* g = static_cast<const T*>(t.g);
  const T* h = static_cast<const T*>(t.s1);
  KILNRT_GRID_LOOP(i, t.n) {
    const double xv = x[i];
    const double gr = a.norm * xv + static_cast<double>(g[i]);
    const double hn = static_cast<double>(h[i]) + gr * gr;
    if (t.x_out) static_cast<T*>(t.x_out)[i] = static_cast<T>(xv - lr * gr / (sqrt(hn) + a.eps));
    if (t.s1_out) static_cast<T*>(t.s1_out)[i] = static_cast<T>(hn);
  }
}

template <typename T>
__global__ void momentum_kernel(OptScalars s, OptTensor t, OptAttrs a) {
  const double r = load_r(s);
  const double b = *s.t > 0 ? a.beta : 1.0;
  const T* x = static_cast<const T*>(t.x);
  const T* g = static_cast<const T*>(t.g);
  const T* v = static_cast<const T*>(t.s1);
  KILNRT_GRID_LOOP(i, t.n) {
    const double xv = x[i];
    const double gr = a.norm * xv + static_cast<double>(g[i]);
    const double vn = a.alpha * static_cast<double>(v[i]) + b * gr;
    if (t.x_out) static_cast<T*>(t.x_out)[i] = static_cast<T>(a.nesterov ? xv - r * (gr + a.alpha * vn) : xv - r * vn);
    if (t.s1_out) static_cast<T*>(t.s1_out)[i] = static_cast<T>(vn);
  }
}

template <typename T>
__global__ void adam_kernel(OptScalars s, OptTensor t, OptAttrs a) {
  const double r = load_r(s);
  const int64_t step = *s.t;
  const double td = static_cast<double>(step);
  const double lr = step > 0 ? r * sqrt(1 - pow(a.beta, td)) / (1 - pow(a.alpha, td)) : r;
  const T* x = static_cast<const T*>(t.x);
  const T* g = static_cast<const T*>(t.g);
  const T* v = static_cast<const T*>(t.s1);
  const T* h = static_cast<const T*>(t.s2);
  KILNRT_GRID_LOOP(i, t.n) {
    const double xv = x[i];
    const double gr = a.norm * xv + static_cast<double>(g[i]);
    const double vn = a.alpha * static_cast<double>(v[i]) + (1 - a.alpha) * gr;
    const double hn = a.beta * static_cast<double>(h[i]) + (1 - a.beta) * gr * gr;
    if (t.x_out) static_cast<T*>(t.x_out)[i] = static_cast<T>((1 - a.norm_post) * (xv - lr * vn / (sqrt(hn) + a.eps)));
    if (t.s1_out) static_cast<T*>(t.s1_out)[i] = static_cast<T>(vn);
    if (t.s2_out) static_cast<T*>(t.s2_out)[i] = static_cast<T>(hn);
  }
}

}  // namespace

int adagrad(const OptScalars& s, const OptTensor& t, const OptAttrs& a, StreamT stream) {
  if (t.n <= 0) return 0;
  if (t.f64)
    adagrad_kernel<double><<<blocks_for(t.n), kThreads, 0, stream>>>(s, t, a);
  else
    adagrad_kernel<float><<<blocks_for(t.n), kThreads, 0, stream>>>(s, t, a);
  return launch_status();
}

int momentum(const OptScalars& s, const OptTensor& t, const OptAttrs& a, StreamT stream) {
  if (t.n <= 0) return 0;
  if (t.f64)
    momentum_kernel<double><<<blocks_for(t.n), kThreads, 0, stream>>>(s, t, a);
  else
    momentum_kernel<float><<<blocks_for(t.n), kThreads, 0, stream>>>(s, t, a);
  return launch_status();
}

int adam(const OptScalars& s, const OptTensor& t, const OptAttrs& a, StreamT stream) {
  if (t.n <= 0) return 0;
  if (t.f64)
    adam_kernel<double><<<blocks_for(t.n), kThreads, 0, stream>>>(s, t, a);
  else
    adam_kernel<float><<<blocks_for(t.n), kThreads, 0, stream>>>(s, t, a);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::optimizer
