// One broadcasting iteration helper for every n-ary elementwise CPU kernel (binary ops, Where, Clip, Expand ...).
//
// for_each_broadcast_row(out_shape, {&a_shape, &b_shape}, fn) splits the output into rows of contiguous elements and
// calls fn(out_offset, in_offsets, in_steps, count) for each: output elements out_offset .. out_offset+count-1 read
// input k at in_offsets[k] + j * in_steps[k] (in_steps is 1, or 0 for an operand broadcast along the row).
// Dimensions are first aligned (numpy rules), size-1 output dims dropped and adjacent dims merged where every input
// is either fully present or fully broadcast in both, so same-shape operands become one row and a scalar operand a
// row with step 0. Rows (or chunks of long rows) are spread over OpenMP threads when the output is big.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "kilnrt/tensor.h"

namespace kilnrt::ops {

// Below this many output elements a kernel runs on one thread.
constexpr int64_t kParallelThreshold = 1 << 15;
// Long rows are cut into chunks of this many elements so that one big row still uses every thread.
constexpr int64_t kRowChunk = 1 << 14;

template <size_t N>
struct BroadcastLayout {
  std::vector<int64_t> dims;                    // collapsed output dims, outermost first (last = row)
  std::array<std::vector<int64_t>, N> strides;  // per input, element strides for `dims` (0 = broadcast)
  int64_t numel = 0;
};

// Builds the collapsed layout. Input shapes must broadcast to out_shape (callers check with broadcast_shapes).
template <size_t N>
BroadcastLayout<N> make_broadcast_layout(const Shape& out_shape, const std::array<const Shape*, N>& in_shapes) {
  const size_t rank = out_shape.size();
  BroadcastLayout<N> layout;
  layout.numel = 1;
  for (int64_t d : out_shape) layout.numel *= d;
  // Aligned input dims (left-padded with 1) and their contiguous strides.
  std::array<std::vector<int64_t>, N> aligned;
  std::array<std::vector<int64_t>, N> full_strides;
  for (size_t k = 0; k < N; ++k) {
    const Shape& s = *in_shapes[k];
    aligned[k].assign(rank, 1);
    for (size_t i = 0; i < s.size(); ++i) aligned[k][rank - s.size() + i] = s[i];
    full_strides[k].assign(rank, 0);
    int64_t st = 1;
    for (size_t i = rank; i-- > 0;) {
      full_strides[k][i] = aligned[k][i] == 1 ? 0 : st;
      st *= aligned[k][i];
    }
  }
  // Keep output dims > 1, merging a dim into the previous kept one when every input agrees on contiguity.
  for (size_t i = 0; i < rank; ++i) {
    if (out_shape[i] == 1) continue;
    bool merge = !layout.dims.empty();
    if (merge) {
      for (size_t k = 0; k < N && merge; ++k) {
        int64_t prev_stride = layout.strides[k].back();
        int64_t cur_stride = full_strides[k][i];
        // Merging keeps addressing linear if both are broadcast, or prev stride == cur stride * cur dim.
        bool both_broadcast = prev_stride == 0 && cur_stride == 0;
        bool contiguous = cur_stride != 0 && prev_stride == cur_stride * out_shape[i];
        merge = both_broadcast || contiguous;
      }
    }
    if (merge) {
      layout.dims.back() *= out_shape[i];
      for (size_t k = 0; k < N; ++k) layout.strides[k].back() = full_strides[k][i];
    } else {
      layout.dims.push_back(out_shape[i]);
      for (size_t k = 0; k < N; ++k) layout.strides[k].push_back(full_strides[k][i]);
    }
  }
  if (layout.dims.empty()) {  // scalar output (or all dims 1)
    layout.dims.push_back(1);
    for (size_t k = 0; k < N; ++k) layout.strides[k].push_back(0);
  }
  return layout;
}

// RowFn: void(int64_t out_offset, const std::array<int64_t, N>& in_offsets, const std::array<int64_t, N>& in_steps,
//             int64_t count)
template <size_t N, class RowFn>
void for_each_broadcast_row(const Shape& out_shape, const std::array<const Shape*, N>& in_shapes, RowFn&& fn) {
  BroadcastLayout<N> L = make_broadcast_layout<N>(out_shape, in_shapes);
  if (L.numel == 0) return;
  const int nd = static_cast<int>(L.dims.size());
  const int64_t row_len = L.dims.back();
  const int64_t rows = L.numel / row_len;
  const int64_t chunks_per_row = (row_len + kRowChunk - 1) / kRowChunk;
  const int64_t tasks = rows * chunks_per_row;
  std::array<int64_t, N> steps;
  for (size_t k = 0; k < N; ++k) steps[k] = L.strides[k].back();
  const bool parallel = L.numel >= kParallelThreshold && tasks > 1;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t row = t / chunks_per_row;
    int64_t chunk = t % chunks_per_row;
    std::array<int64_t, N> offs{};
    int64_t rem = row;
    for (int d = nd - 2; d >= 0; --d) {
      int64_t idx = rem % L.dims[d];
      rem /= L.dims[d];
      for (size_t k = 0; k < N; ++k) offs[k] += idx * L.strides[k][d];
    }
    int64_t begin = chunk * kRowChunk;
    int64_t count = std::min(kRowChunk, row_len - begin);
    for (size_t k = 0; k < N; ++k) offs[k] += begin * steps[k];
    fn(row * row_len + begin, offs, steps, count);
  }
}

// Runs fn(begin, end) over [0, n) in chunks, in parallel when n is big. For plain same-shape elementwise loops.
template <class RangeFn>
void parallel_for_range(int64_t n, RangeFn&& fn) {
  if (n <= 0) return;
  const int64_t tasks = (n + kRowChunk - 1) / kRowChunk;
  const bool parallel = n >= kParallelThreshold && tasks > 1;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t begin = t * kRowChunk;
    fn(begin, std::min(n, begin + kRowChunk));
  }
}

}  // namespace kilnrt::ops
