// Unique kernels (unique_kernels.h): slices compared pairwise (first occurrence by a scan of the earlier slices,
// sorted rank by counting the smaller ones): O(n^2) slice comparisons, simple and exact, meant for the small tensors
// Unique sees in models.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "cuda/kernels/launch_common.cuh"
#include "ops/shape/unique/cuda/unique_kernels.h"

namespace kilnrt::cuda::kernels::un {
namespace {

using launch_common::blocks_for;
using launch_common::kThreads;
using launch_common::launch_status;

// 16-bit floats compared as the float values they hold (the output copies the stored bits: values stay exact).
struct Half16 {
  __half v;
  __device__ operator float() const { return __half2float(v); }
};
struct BFloat16 {
  __nv_bfloat16 v;
  __device__ operator float() const { return __bfloat162float(v); }
};
template <typename T>
__device__ T as_compared(T v) {
  return v;
}
__device__ float as_compared(Half16 v) { return float(v); }
__device__ float as_compared(BFloat16 v) { return float(v); }

template <typename T>
struct Slices {
  const T* x;
  int64_t outer, n, inner;
  __device__ T at(int64_t k, int64_t j) const { return x[((j / inner) * n + k) * inner + j % inner]; }
  // The CPU reference's order: the first differing element decides.
  __device__ bool less(int64_t a, int64_t b) const {
    const int64_t len = outer * inner;
    for (int64_t j = 0; j < len; ++j) {
      const auto ea = as_compared(at(a, j)), eb = as_compared(at(b, j));
      if (ea != eb) return ea < eb;
    }
    return false;
  }
  __device__ bool equal(int64_t a, int64_t b) const { return !less(a, b) && !less(b, a); }
};

template <typename T>
__global__ void first_kernel(Slices<T> s, int64_t* first, uint8_t* flags) {
  KILNRT_GRID_LOOP(k, s.n) {
    int64_t f = k;
    for (int64_t j = 0; j < k; ++j)
      if (s.equal(j, k)) {
        f = j;
        break;
      }
    first[k] = f;
    flags[k] = f == k ? 1 : 0;
  }
}

template <typename T>
__global__ void place_kernel(Slices<T> s, const int64_t* firsts, int64_t u, bool sorted, int64_t* pos, int64_t* slot_of,
                             int64_t* indices, int64_t* counts) {
  KILNRT_GRID_LOOP(k, u) {
    int64_t p = k;
    if (sorted) {
      p = 0;
      for (int64_t m = 0; m < u; ++m)
        if (s.less(firsts[m], firsts[k]) || (m < k && !s.less(firsts[k], firsts[m]))) ++p;
    }
    pos[k] = p;
    slot_of[firsts[k]] = k;
    indices[p] = firsts[k];
    counts[k] = 0;
  }
}

__global__ void inverse_kernel(int64_t n, const int64_t* first, const int64_t* pos, const int64_t* slot_of,
                               int64_t* inverse, int64_t* counts) {
  KILNRT_GRID_LOOP(k, n) {
    const int64_t p = pos[slot_of[first[k]]];
    inverse[k] = p;
    atomicAdd(reinterpret_cast<unsigned long long*>(counts + p), 1ull);
  }
}

template <typename F>
int with_type(const UniqueView& v, F&& f) {
  switch (v.code) {
    case 0: return f(static_cast<const float*>(nullptr));
    case 1: return f(static_cast<const int64_t*>(nullptr));
    case 2: return f(static_cast<const int32_t*>(nullptr));
    case 3: return f(static_cast<const uint8_t*>(nullptr));
    case 4: return f(static_cast<const int8_t*>(nullptr));
    case 5: return f(static_cast<const double*>(nullptr));
    case 6: return f(static_cast<const Half16*>(nullptr));
    case 7: return f(static_cast<const BFloat16*>(nullptr));
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace

int unique_first(const UniqueView& v, int64_t* first, uint8_t* flags, StreamT stream) {
  if (v.n == 0) return 0;
  return with_type(v, [&](auto tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    Slices<T> s{static_cast<const T*>(v.x), v.outer, v.n, v.inner};
    first_kernel<T><<<blocks_for(v.n), kThreads, 0, stream>>>(s, first, flags);
    return launch_status();
  });
}

int unique_place(const UniqueView& v, const int64_t* firsts, int64_t u, bool sorted, int64_t* pos, int64_t* slot_of,
                 int64_t* indices, int64_t* counts, StreamT stream) {
  if (u == 0) return 0;
  return with_type(v, [&](auto tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(tag)>>;
    Slices<T> s{static_cast<const T*>(v.x), v.outer, v.n, v.inner};
    place_kernel<T><<<blocks_for(u), kThreads, 0, stream>>>(s, firsts, u, sorted, pos, slot_of, indices, counts);
    return launch_status();
  });
}

int unique_inverse(int64_t n, const int64_t* first, const int64_t* pos, const int64_t* slot_of, int64_t* inverse,
                   int64_t* counts, StreamT stream) {
  if (n == 0) return 0;
  inverse_kernel<<<blocks_for(n), kThreads, 0, stream>>>(n, first, pos, slot_of, inverse, counts);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::un
