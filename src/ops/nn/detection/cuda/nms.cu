// NonMaxSuppression kernels (nms_kernels.h): one block per (batch, class): a stable descending rank of the scores,
// then the greedy selection with the suppression of the later boxes in parallel.
#include <cuda_runtime.h>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/detection/cuda/nms_kernels.h"

namespace kilnrt::cuda::kernels::un {
namespace {

using launch_common::kThreads;
using launch_common::launch_status;

struct Box {
  double y1, x1, y2, x2;
};
__device__ Box read_box(const float* b, bool center) {
  const double b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3];
  if (center) return {b1 - b3 / 2, b0 - b2 / 2, b1 + b3 / 2, b0 + b2 / 2};
  return {fmin(b0, b2), fmin(b1, b3), fmax(b0, b2), fmax(b1, b3)};
}
__device__ double iou(const Box& a, const Box& b) {
  const double ih = fmax(0.0, fmin(a.y2, b.y2) - fmax(a.y1, b.y1));
  const double iw = fmax(0.0, fmin(a.x2, b.x2) - fmax(a.x1, b.x1));
  const double inter = ih * iw;
  const double uni = (a.y2 - a.y1) * (a.x2 - a.x1) + (b.y2 - b.y1) * (b.x2 - b.x1) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

__global__ void nms_kernel(const float* boxes, const float* scores, int64_t C, int64_t N, bool center, int64_t keep,
                           double iou_th, bool has_score_th, double score_th, int64_t* order_all, uint8_t* supp_all,
                           int64_t* selected, int64_t* counts) {
  const int64_t bc = blockIdx.x;
  const int64_t b = bc / C;
  const float* sc = scores + bc * N;
  const float* bx = boxes + b * N * 4;
  int64_t* order = order_all + bc * N;
  uint8_t* supp = supp_all + bc * N;
  __shared__ unsigned long long passed;
  __shared__ long long count;
  __shared__ bool take;
  if (threadIdx.x == 0) {
    passed = 0;
    count = 0;
  }
  __syncthreads();
  // Stable descending rank among the candidates above the score threshold.
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
    const double si = sc[i];
    if (has_score_th && !(si > score_th)) continue;
    atomicAdd(&passed, 1ull);
    int64_t r = 0;
    for (int64_t j = 0; j < N; ++j) {
      const double sj = sc[j];
      if (has_score_th && !(sj > score_th)) continue;
      if (sj > si || (sj == si && j < i)) ++r;
    }
    order[r] = i;
  }
  __syncthreads();
  const int64_t m = static_cast<int64_t>(passed);
  for (int64_t k = threadIdx.x; k < m; k += blockDim.x) supp[k] = 0;
  __syncthreads();
  for (int64_t k = 0; k < m; ++k) {
    if (threadIdx.x == 0) {
      take = supp[k] == 0 && count < keep;
      if (take) selected[bc * keep + count++] = order[k];
    }
    __syncthreads();
    if (count >= keep) break;  // uniform: read after the barrier
    if (take) {
      const Box a = read_box(bx + order[k] * 4, center);
      for (int64_t j = k + 1 + threadIdx.x; j < m; j += blockDim.x)
        if (!supp[j] && iou(a, read_box(bx + order[j] * 4, center)) > iou_th) supp[j] = 1;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) counts[bc] = count;
}

__global__ void compact_kernel(const int64_t* selected, const int64_t* counts, int64_t C, int64_t keep, int64_t* out) {
  const int64_t bc = blockIdx.x;
  __shared__ long long offset;
  if (threadIdx.x == 0) {
    long long off = 0;
    for (int64_t p = 0; p < bc; ++p) off += counts[p];
    offset = off;
  }
  __syncthreads();
  for (int64_t r = threadIdx.x; r < counts[bc]; r += blockDim.x) {
    int64_t* row = out + (offset + r) * 3;
    row[0] = bc / C;
    row[1] = bc % C;
    row[2] = selected[bc * keep + r];
  }
}

}  // namespace

int nms_select(const float* boxes, const float* scores, int64_t B, int64_t C, int64_t N, bool center, int64_t keep,
               double iou_threshold, bool has_score_threshold, double score_threshold, int64_t* order,
               uint8_t* suppressed, int64_t* selected, int64_t* counts, StreamT stream) {
  if (B * C == 0) return 0;
  nms_kernel<<<static_cast<unsigned>(B * C), kThreads, 0, stream>>>(boxes, scores, C, N, center, keep, iou_threshold,
                                                                    has_score_threshold, score_threshold, order,
                                                                    suppressed, selected, counts);
  return launch_status();
}

int copy_counts(const int64_t* counts_dev, int64_t n, int64_t* counts_host, StreamT stream) {
  if (n == 0) return 0;
  const int status =
      static_cast<int>(cudaMemcpyAsync(counts_host, counts_dev, sizeof(int64_t) * n, cudaMemcpyDeviceToHost, stream));
  if (status != 0) return status;
  return static_cast<int>(cudaStreamSynchronize(stream));
}

int nms_compact(const int64_t* selected, const int64_t* counts, int64_t B, int64_t C, int64_t keep, int64_t* out,
                StreamT stream) {
  if (B * C == 0 || keep == 0) return 0;
  compact_kernel<<<static_cast<unsigned>(B * C), kThreads, 0, stream>>>(selected, counts, C, keep, out);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::un
