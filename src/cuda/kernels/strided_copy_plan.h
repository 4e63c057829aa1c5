// Host-side planning of kernels::strided_copy's fast path (strided_copy_fast.cu), header-only so that the CPU tests
// check it without a GPU (tests/cpp/test_strided_copy_plan.cc): size-1 dims dropped, dims contiguous on both sides
// merged, 16-byte vectors along a contiguous aligned innermost run, 32-bit indices when everything fits.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

#ifndef KILNRT_HOST_DEVICE
#if defined(__CUDACC__)
#define KILNRT_HOST_DEVICE __host__ __device__
#else
#define KILNRT_HOST_DEVICE
#endif
#endif

namespace kilnrt::cuda::kernels {

struct Strided32 {
  int rank = 0;
  uint32_t dims[kMaxDims] = {};
  int32_t out_strides[kMaxDims] = {}, in_strides[kMaxDims] = {};
  int32_t out_offset = 0, in_offset = 0;
};

// A batch of 2-D transposes, for copies whose innermost source dim is not the innermost destination dim (true
// transposes such as K^T [0,1,3,2] or NCHW <-> NHWC): 32x32 tiles through shared memory, so that both the reads
// (along a, contiguous in the source) and the writes (along b, contiguous in the destination) are coalesced.
// Element (batch, a, b): src[in_offset + batch_in + a + b * in_b_stride] -> dst[out_offset + batch_out + a *
// out_a_stride + b], batch_in / batch_out from `batch` (dims and strides of the remaining dims; rank 0: one batch).
struct TiledTransposePlan {
  uint32_t a = 0, b = 0;  // sizes of the source-contiguous and destination-contiguous dims
  int32_t out_a_stride = 0, in_b_stride = 0;
  Strided32 batch;  // the other dims (rank may be 0); offsets here are the copy's offsets
  uint32_t batches = 1;
};

struct StridedCopyPlan {
  Strided32 s;         // in units of `unit` bytes
  size_t unit = 0;     // 1, 2, 4, 8 or 16 (vectorised)
  uint32_t n = 0;      // units to copy (0: nothing to do)
  bool tiled = false;  // run as tiled transposes (`t`), unit = element size
  TiledTransposePlan t;
};

// Minimum sizes of both transposed dims for the tiled kernel (smaller ones copy element by element).
constexpr int64_t kMinTiledTransposeDim = 8;

// Fills `plan` and returns true when the fast path applies (element size 1/2/4/8, indices within 32 bits).
inline bool plan_strided_copy(const Strided& in, size_t elem_size, uintptr_t dst, uintptr_t src,
                              StridedCopyPlan* plan) {
  if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8) return false;
  Strided s;
  for (int d = 0; d < in.rank; ++d) {
    if (in.dims[d] == 1) continue;
    if (in.dims[d] == 0) {
      plan->n = 0;
      plan->tiled = false;
      return true;
    }
    if (s.rank > 0) {
      const int p = s.rank - 1;
      if (s.out_strides[p] == in.out_strides[d] * in.dims[d] && s.in_strides[p] == in.in_strides[d] * in.dims[d]) {
        s.dims[p] *= in.dims[d];
        s.out_strides[p] = in.out_strides[d];
        s.in_strides[p] = in.in_strides[d];
        continue;
      }
    }
    s.dims[s.rank] = in.dims[d];
    s.out_strides[s.rank] = in.out_strides[d];
    s.in_strides[s.rank] = in.in_strides[d];
    ++s.rank;
  }
  s.out_offset = in.out_offset;
  s.in_offset = in.in_offset;
  if (s.rank == 0) {  // one element
    s.rank = 1;
    s.dims[0] = 1;
    s.out_strides[0] = s.in_strides[0] = 1;
  }
  size_t unit = elem_size;
  const int last = s.rank - 1;
  const int64_t v = static_cast<int64_t>(16 / elem_size);
  bool vec = s.out_strides[last] == 1 && s.in_strides[last] == 1 && s.dims[last] % v == 0 && s.out_offset % v == 0 &&
             s.in_offset % v == 0 && (dst & 15u) == 0 && (src & 15u) == 0;
  for (int d = 0; d < last && vec; ++d) vec = s.out_strides[d] % v == 0 && s.in_strides[d] % v == 0;
  if (vec) {
    s.dims[last] /= v;
    for (int d = 0; d < last; ++d) {
      s.out_strides[d] /= v;
      s.in_strides[d] /= v;
    }
    s.out_offset /= v;
    s.in_offset /= v;
    unit = 16;
  }
  int64_t n = 1, out_hi = s.out_offset, in_hi = s.in_offset, out_lo = s.out_offset, in_lo = s.in_offset;
  for (int d = 0; d < s.rank; ++d) {
    n *= s.dims[d];
    const int64_t so = (s.dims[d] - 1) * s.out_strides[d], si = (s.dims[d] - 1) * s.in_strides[d];
    (so > 0 ? out_hi : out_lo) += so;
    (si > 0 ? in_hi : in_lo) += si;
  }
  constexpr int64_t kMax = 2147483647LL;
  if (n > kMax || out_hi > kMax || in_hi > kMax || out_lo < -kMax || in_lo < -kMax) return false;
  Strided32& t = plan->s;
  t = Strided32{};
  t.rank = s.rank;
  for (int d = 0; d < s.rank; ++d) {
    t.dims[d] = static_cast<uint32_t>(s.dims[d]);
    t.out_strides[d] = static_cast<int32_t>(s.out_strides[d]);
    t.in_strides[d] = static_cast<int32_t>(s.in_strides[d]);
  }
  t.out_offset = static_cast<int32_t>(s.out_offset);
  t.in_offset = static_cast<int32_t>(s.in_offset);
  plan->unit = unit;
  plan->n = static_cast<uint32_t>(n);
  plan->tiled = false;
  // True transpose: the destination's innermost dim is strided in the source and another dim is the source's
  // contiguous one.
  if (unit == elem_size && t.rank >= 2 && t.out_strides[last] == 1 && t.in_strides[last] > 1 &&
      t.dims[last] >= kMinTiledTransposeDim) {
    int a = -1;
    for (int d = 0; d < last; ++d)
      if (t.in_strides[d] == 1 && t.out_strides[d] > 1 && t.dims[d] >= kMinTiledTransposeDim) a = d;
    if (a >= 0) {
      TiledTransposePlan& tp = plan->t;
      tp = TiledTransposePlan{};
      tp.a = t.dims[a];
      tp.b = t.dims[last];
      tp.out_a_stride = t.out_strides[a];
      tp.in_b_stride = t.in_strides[last];
      tp.batch.out_offset = t.out_offset;
      tp.batch.in_offset = t.in_offset;
      for (int d = 0; d < last; ++d) {
        if (d == a) continue;
        const int q = tp.batch.rank++;
        tp.batch.dims[q] = t.dims[d];
        tp.batch.out_strides[q] = t.out_strides[d];
        tp.batch.in_strides[q] = t.in_strides[d];
        tp.batches *= t.dims[d];
      }
      plan->tiled = true;
    }
  }
  return true;
}

// The (destination, source) unit offsets of unit i of a plan: what the kernel computes per thread (it calls this).
// Fixed bound + rank guard: unrolled on the GPU, so the plan is indexed with constants. A loop bounded by the
// runtime rank made nvcc copy the whole plan into per-thread local memory (112-byte stack frame), which held the
// copies to ~0.7 TB/s on the H100.
KILNRT_HOST_DEVICE inline void strided_copy_unit(const Strided32& s, uint32_t i, int32_t* out, int32_t* in) {
  uint32_t rem = i;
  int32_t o = s.out_offset, x = s.in_offset;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int d = kMaxDims - 1; d > 0; --d) {
    if (d < s.rank) {
      const uint32_t q = rem / s.dims[d];
      const uint32_t idx = rem - q * s.dims[d];
      rem = q;
      o += int32_t(idx) * s.out_strides[d];
      x += int32_t(idx) * s.in_strides[d];
    }
  }
  *out = o + int32_t(rem) * s.out_strides[0];
  *in = x + int32_t(rem) * s.in_strides[0];
}

// (destination, source) batch offsets of batch index i of a tiled plan: what the kernel computes per block.
KILNRT_HOST_DEVICE inline void tiled_transpose_batch(const Strided32& s, uint32_t i, int32_t* out, int32_t* in) {
  int32_t o = s.out_offset, x = s.in_offset;
  uint32_t rem = i;
  // Fixed bound + rank guard: unrolled on the GPU, so the plan is indexed with constants (no local-memory copy).
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int d = kMaxDims - 1; d >= 0; --d) {
    if (d < s.rank) {
      const uint32_t q = rem / s.dims[d];
      const uint32_t idx = rem - q * s.dims[d];
      rem = q;
      o += int32_t(idx) * s.out_strides[d];
      x += int32_t(idx) * s.in_strides[d];
    }
  }
  *out = o;
  *in = x;
}

}  // namespace kilnrt::cuda::kernels
