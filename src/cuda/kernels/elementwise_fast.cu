// Fast elementwise kernels: one unit = V consecutive output elements (16 bytes when the plan vectorises,
// else 1), unit offsets from merged dims in 32-bit math, inputs either loaded as vectors (innermost stride 1) or
// splat (innermost stride 0: scalars, bias, per-channel scales). Math shared with the generic kernels
// (elementwise_math.cuh). Few instantiations: 3 float types x 2 widths (binary, unary), 4 sizes x 2 widths (where).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/elementwise_fast.h"
#include "cuda/kernels/elementwise_math.cuh"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels {
namespace {

using namespace launch_common;
using namespace elementwise_math;

template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// Element offsets of the first element of unit u for inputs 0..N-1.
template <int N, int V>
__device__ __forceinline__ void unit_offsets(const ElementwisePlan& p, uint32_t u, int32_t* off) {
  const int last = p.rank - 1;
  uint32_t rem = u;
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
    // Fixed bound + rank guard (unrolled: constant indices into the plan; a runtime-rank loop can make nvcc copy the
    // plan into per-thread local memory, as it did for the strided copy).
#pragma unroll
  for (int d = kMaxDims - 1; d > 0; --d) {
    if (d <= last) {
      const uint32_t q = rem / p.dims[d];
      const int32_t idx = int32_t(rem - q * p.dims[d]) * (d == last ? V : 1);
      rem = q;
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += idx * p.strides[k][d];
    }
  }
  const int32_t idx0 = int32_t(rem) * (last == 0 ? V : 1);
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] += idx0 * p.strides[k][0];
}

// V values of a float-typed input at `off` (vector when its innermost stride is 1, else one value repeated).
template <typename T, int V>
__device__ __forceinline__ void load_floats(const T* x, int32_t off, int32_t inner_stride, float* out) {
  if (V > 1 && inner_stride == 1) {
    const Vec<T, V> v = *reinterpret_cast<const Vec<T, V>*>(x + off);
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = to_float(v.v[i]);
  } else {
    const float s = to_float(x[off]);
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = s;
  }
}

template <typename T, int V>
__global__ void binary_fast_kernel(BinaryOp op, const T* a, const T* b, T* y, ElementwisePlan p) {
  const int last = p.rank - 1;
  for (uint32_t u = blockIdx.x * blockDim.x + threadIdx.x; u < p.units; u += gridDim.x * blockDim.x) {
    int32_t off[2];
    unit_offsets<2, V>(p, u, off);
    float x[V], z[V];
    load_floats<T, V>(a, off[0], p.strides[0][last], x);
    load_floats<T, V>(b, off[1], p.strides[1][last], z);
    Vec<T, V> r;
#pragma unroll
    for (int i = 0; i < V; ++i) r.v[i] = from_float<T>(binary_math(op, x[i], z[i]));
    *reinterpret_cast<Vec<T, V>*>(y + size_t(u) * V) = r;
  }
  if (blockIdx.x == 0 && threadIdx.x < p.tail) {  // rank 1: the last elements one by one
    const int32_t e = int32_t(p.units) * V + int32_t(threadIdx.x);
    y[e] = from_float<T>(binary_math(op, to_float(a[e * p.strides[0][0]]), to_float(b[e * p.strides[1][0]])));
  }
}

template <typename T, int V>
__global__ void unary_fast_kernel(UnaryOp op, const T* x, T* y, ElementwisePlan p, float pa, float pb) {
  for (uint32_t u = blockIdx.x * blockDim.x + threadIdx.x; u < p.units; u += gridDim.x * blockDim.x) {
    float v[V];
    load_floats<T, V>(x, int32_t(u) * V, 1, v);
    Vec<T, V> r;
#pragma unroll
    for (int i = 0; i < V; ++i) r.v[i] = from_float<T>(unary_math(op, v[i], pa, pb));
    *reinterpret_cast<Vec<T, V>*>(y + size_t(u) * V) = r;
  }
  if (blockIdx.x == 0 && threadIdx.x < p.tail) {
    const int32_t e = int32_t(p.units) * V + int32_t(threadIdx.x);
    y[e] = from_float<T>(unary_math(op, to_float(x[e]), pa, pb));
  }
}

template <typename T, int V>
__device__ __forceinline__ Vec<T, V> load_vec(const T* x, int32_t off, int32_t inner_stride) {
  if (V > 1 && inner_stride == 1) return *reinterpret_cast<const Vec<T, V>*>(x + off);
  Vec<T, V> r;
  const T s = x[off];
#pragma unroll
  for (int i = 0; i < V; ++i) r.v[i] = s;
  return r;
}

// Where: input 0 the condition (bytes), 1 / 2 the values (moved as ES-byte integers).
template <int ES, int V>
__global__ void where_fast_kernel(const uint8_t* c, const void* xv, const void* zv, void* yv, ElementwisePlan p) {
  using T = typename Bytes<ES>::T;
  const T* x = static_cast<const T*>(xv);
  const T* z = static_cast<const T*>(zv);
  T* y = static_cast<T*>(yv);
  const int last = p.rank - 1;
  for (uint32_t u = blockIdx.x * blockDim.x + threadIdx.x; u < p.units; u += gridDim.x * blockDim.x) {
    int32_t off[3];
    unit_offsets<3, V>(p, u, off);
    const Vec<uint8_t, V> cv = load_vec<uint8_t, V>(c, off[0], p.strides[0][last]);
    const Vec<T, V> a = load_vec<T, V>(x, off[1], p.strides[1][last]);
    const Vec<T, V> b = load_vec<T, V>(z, off[2], p.strides[2][last]);
    Vec<T, V> r;
#pragma unroll
    for (int i = 0; i < V; ++i) r.v[i] = cv.v[i] ? a.v[i] : b.v[i];
    *reinterpret_cast<Vec<T, V>*>(y + size_t(u) * V) = r;
  }
  if (blockIdx.x == 0 && threadIdx.x < p.tail) {
    const int32_t e = int32_t(p.units) * V + int32_t(threadIdx.x);
    y[e] = c[e * p.strides[0][0]] ? x[e * p.strides[1][0]] : z[e * p.strides[2][0]];
  }
}

unsigned grid_for(const ElementwisePlan& p) { return blocks_for(p.units); }

template <typename T>
int launch_binary(BinaryOp op, const void* a, const void* b, void* y, const ElementwisePlan& p, cudaStream_t st) {
  constexpr int kV = 16 / sizeof(T);
  if (p.vec == kV)
    binary_fast_kernel<T, kV><<<grid_for(p), kThreads, 0, st>>>(op, (const T*)a, (const T*)b, (T*)y, p);
  else
    binary_fast_kernel<T, 1><<<grid_for(p), kThreads, 0, st>>>(op, (const T*)a, (const T*)b, (T*)y, p);
  return launch_status();
}

template <typename T>
int launch_unary(UnaryOp op, const void* x, void* y, const ElementwisePlan& p, float a, float b, cudaStream_t st) {
  constexpr int kV = 16 / sizeof(T);
  if (p.vec == kV)
    unary_fast_kernel<T, kV><<<grid_for(p), kThreads, 0, st>>>(op, (const T*)x, (T*)y, p, a, b);
  else
    unary_fast_kernel<T, 1><<<grid_for(p), kThreads, 0, st>>>(op, (const T*)x, (T*)y, p, a, b);
  return launch_status();
}

template <int ES>
int launch_where(const uint8_t* c, const void* x, const void* z, void* y, const ElementwisePlan& p, cudaStream_t st) {
  constexpr int kV = 16 / ES;
  if (p.vec == kV)
    where_fast_kernel<ES, kV><<<grid_for(p), kThreads, 0, st>>>(c, x, z, y, p);
  else
    where_fast_kernel<ES, 1><<<grid_for(p), kThreads, 0, st>>>(c, x, z, y, p);
  return launch_status();
}

}  // namespace

int binary_fast(BinaryOp op, int dtype, const void* a, const void* b, void* y, int64_t n, const Broadcast3& bc,
                StreamT stream) {
  if (op >= BinaryOp::kEqual || (dtype != 0 && dtype != 4 && dtype != 5)) return -1;
  const size_t es = dtype == 0 ? 4 : 2;
  const int inputs[2] = {1, 2};
  const uintptr_t ptrs[2] = {reinterpret_cast<uintptr_t>(a), reinterpret_cast<uintptr_t>(b)};
  const size_t elems[2] = {es, es};
  ElementwisePlan p;
  if (!plan_broadcast3(bc, n, inputs, 2, true, ptrs, elems, reinterpret_cast<uintptr_t>(y), es, &p)) return -1;
  if (p.units == 0 && p.tail == 0) return 0;
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (dtype) {
    case 0: return launch_binary<float>(op, a, b, y, p, st);
    case 4: return launch_binary<__half>(op, a, b, y, p, st);
    default: return launch_binary<__nv_bfloat16>(op, a, b, y, p, st);
  }
}

int where_fast(const uint8_t* cond, const void* x, const void* z, void* y, int64_t n, const Broadcast3& bc,
               size_t elem_size, StreamT stream) {
  if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8) return -1;
  const int inputs[3] = {0, 1, 2};
  const uintptr_t ptrs[3] = {reinterpret_cast<uintptr_t>(cond), reinterpret_cast<uintptr_t>(x),
                             reinterpret_cast<uintptr_t>(z)};
  const size_t elems[3] = {1, elem_size, elem_size};
  ElementwisePlan p;
  if (!plan_broadcast3(bc, n, inputs, 3, false, ptrs, elems, reinterpret_cast<uintptr_t>(y), elem_size, &p)) return -1;
  if (p.units == 0 && p.tail == 0) return 0;
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (elem_size) {
    case 1: return launch_where<1>(cond, x, z, y, p, st);
    case 2: return launch_where<2>(cond, x, z, y, p, st);
    case 4: return launch_where<4>(cond, x, z, y, p, st);
    default: return launch_where<8>(cond, x, z, y, p, st);
  }
}

int unary_fast(UnaryOp op, int dt, const void* x, void* y, int64_t n, float a, float b, StreamT stream) {
  if (dt < 0 || dt > 2) return -1;
  const size_t es = dt == 0 ? 4 : 2;
  const int64_t dims[1] = {n};
  const int64_t strides[kMaxElementwiseInputs][kMaxDims] = {{1}};
  const uintptr_t ptr = reinterpret_cast<uintptr_t>(x);
  ElementwisePlan p;
  if (!plan_elementwise(1, dims, 1, strides, &ptr, &es, reinterpret_cast<uintptr_t>(y), es, &p)) return -1;
  if (p.units == 0 && p.tail == 0) return 0;
  cudaStream_t st = reinterpret_cast<cudaStream_t>(stream);
  switch (dt) {
    case 0: return launch_unary<float>(op, x, y, p, a, b, st);
    case 1: return launch_unary<__half>(op, x, y, p, a, b, st);
    default: return launch_unary<__nv_bfloat16>(op, x, y, p, a, b, st);
  }
}

}  // namespace kilnrt::cuda::kernels
