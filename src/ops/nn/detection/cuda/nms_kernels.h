// Host entry points of the NonMaxSuppression kernels (nms.cu), run by the data-dependent layer nms_layer.cc. Plain
// C++ like kernels.h; each returns the CUDA status (0 = success). copy_counts is the one that reads device memory
// on the host (the layer's sync point).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::un {

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
