// Host entry points of the Unique and NonMaxSuppression kernels (kernels/unique_nms.cu), data-dependent layers of
// layers_unique_nms.cc. Plain C++ like kernels.h; each returns the CUDA status (0 = success). Nothing here reads
// device memory on the host: the layers read their counts with nonzero_flat (data_dependent.h) or copy_count.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::un {

// Element codes of Unique: 0 float32, 1 int64, 2 int32, 3 uint8 / bool, 4 int8, 5 float64, 6 float16, 7 bfloat16
// (compared as the float values they hold; -1: other).
// Slices of x viewed as [outer, n, inner]: slice k = x[o, k, i] for all (o, i), compared lexicographically in (o, i)
// order with the CPU reference's rule (first differing element decides).
struct UniqueView {
  const void* x = nullptr;
  int code = 0;
  int64_t outer = 1, n = 0, inner = 1;
};
// first[k] = the smallest j <= k whose slice equals slice k; flags[k] = first[k] == k.
int unique_first(const UniqueView& v, int64_t* first, uint8_t* flags, StreamT stream);
// For the u first occurrences firsts[0..u) (in order of occurrence): pos[k] = output slot (sorted: lexicographic
// rank, stable; else k), slot_of[firsts[k]] = k, indices[pos[k]] = firsts[k], counts[0..u) = 0.
int unique_place(const UniqueView& v, const int64_t* firsts, int64_t u, bool sorted, int64_t* pos, int64_t* slot_of,
                 int64_t* indices, int64_t* counts, StreamT stream);
// inverse[k] = pos[slot_of[first[k]]] and counts[inverse[k]] += 1 for every k < n.
int unique_inverse(int64_t n, const int64_t* first, const int64_t* pos, const int64_t* slot_of, int64_t* inverse,
                   int64_t* counts, StreamT stream);

// NonMaxSuppression over float32 boxes [B, N, 4] and scores [B, C, N]: one block per (b, c) selects at most `keep`
// boxes (greedy by descending score, stable, IoU computed in double; scores <= score_threshold dropped when
// has_score_threshold) into selected[(b * C + c) * keep + r] and their number into counts[b * C + c].
// Scratch: order (B*C*N int64) and suppressed (B*C*N bytes).
int nms_select(const float* boxes, const float* scores, int64_t B, int64_t C, int64_t N, bool center, int64_t keep,
               double iou_threshold, bool has_score_threshold, double score_threshold, int64_t* order,
               uint8_t* suppressed, int64_t* selected, int64_t* counts, StreamT stream);
// Copies the B*C counts to the host and synchronises the stream (the layer's sync point).
int copy_counts(const int64_t* counts_dev, int64_t n, int64_t* counts_host, StreamT stream);
// selected_indices [total, 3] (batch, class, box) in (b, c, selection) order from the per-(b, c) selections.
int nms_compact(const int64_t* selected, const int64_t* counts, int64_t B, int64_t C, int64_t keep, int64_t* out,
                StreamT stream);

}  // namespace kilnrt::cuda::kernels::un
