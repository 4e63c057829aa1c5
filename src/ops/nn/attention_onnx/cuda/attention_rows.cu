// Kernels of ONNX Attention and FlexAttention (attention_rows.h): one block per attention query row (scores in a
// global scratch row, block reductions for max / visibility / sum, then the weighted sum of V), and the elementwise
// KV-cache concatenation of Attention's present outputs.
#include <cuda_runtime.h>

#include <cmath>

#include "ops/nn/attention_onnx/cuda/attention_rows.h"
#include "cuda/kernels/launch_common.cuh"

namespace kilnrt::cuda::kernels::attention_rows {
namespace {

using namespace launch_common;

constexpr int kRowThreads = 128;

__device__ __forceinline__ int64_t qkv_index(bool three_d, int64_t heads, int64_t seq, int64_t size, int64_t b,
                                             int64_t h, int64_t t, int64_t d) {
  return three_d ? ((b * seq + t) * heads + h) * size + d : ((b * heads + h) * seq + t) * size + d;
}

// Element (b, kh, j, x) of the concatenated [past, new] keys or values.
template <typename T>
__device__ __forceinline__ double kv_at(const AttnArgs& a, const T* past, const T* cur, int64_t size, int64_t b,
                                        int64_t kh, int64_t j, int64_t x) {
  if (j < a.past) return static_cast<double>(past[((b * a.kv_heads + kh) * a.past + j) * size + x]);
  return static_cast<double>(cur[qkv_index(a.three_d, a.kv_heads, a.kv_seq, size, b, kh, j - a.past, x)]);
}

__device__ __forceinline__ double mask_at(const AttnArgs& a, int64_t b, int64_t h, int64_t i, int64_t j) {
  if (!a.has_mask) return 0.0;
  if (j >= a.mask_dims[3]) return -INFINITY;
  const int64_t idx[4] = {b, h, i, j};
  int64_t off = 0;
  for (int k = 0; k < 4; ++k) off += (a.mask_dims[k] == 1 ? 0 : idx[k]) * a.mask_strides[k];
  if (a.mask_bool) return static_cast<const uint8_t*>(a.mask)[off] ? 0.0 : -INFINITY;
  return static_cast<double>(static_cast<const float*>(a.mask)[off]);
}

// Block-wide reduction of one double (op 0: max, 1: sum); every thread gets the result.
__device__ double block_reduce(double v, int op, double* shared) {
  for (int o = 16; o > 0; o >>= 1) {
    const double w = __shfl_down_sync(0xffffffffu, v, o);
    v = op == 0 ? fmax(v, w) : v + w;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();  // shared may still be read by the previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  double r = shared[0];
  for (int w = 1; w < warps; ++w) r = op == 0 ? fmax(r, shared[w]) : r + shared[w];
  return r;
}

template <typename T>
__global__ void attention_rows(AttnArgs a) {
  __shared__ double red[kRowThreads / 32];
  const T* q = static_cast<const T*>(a.q);
  const T* k = static_cast<const T*>(a.k);
  const T* v = static_cast<const T*>(a.v);
  const T* pk = static_cast<const T*>(a.past_k);
  const T* pv = static_cast<const T*>(a.past_v);
  T* y = static_cast<T*>(a.y);
  T* qk = static_cast<T*>(a.qk_out);
  const int64_t total = a.past + a.kv_seq, group = a.q_heads / a.kv_heads;
  const int64_t rows = a.batch * a.q_heads * a.q_seq;
  double* sc = a.scratch + static_cast<int64_t>(blockIdx.x) * (total > 0 ? total : 1);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t i = row % a.q_seq, h = (row / a.q_seq) % a.q_heads, b = row / (a.q_seq * a.q_heads);
    const int64_t kh = h / group;
    const int64_t offset = a.nonpad ? a.nonpad[b] - a.q_seq : a.past;
    const int64_t nonpad = a.nonpad ? a.nonpad[b] : 0;
    T* qk_row = qk ? qk + row * total : nullptr;
    double mx = -INFINITY, visible = 0.0;
    for (int64_t j = threadIdx.x; j < total; j += blockDim.x) {
      double s = 0.0;
      for (int64_t x = 0; x < a.head; ++x)
        s += static_cast<double>(q[qkv_index(a.three_d, a.q_heads, a.q_seq, a.head, b, h, i, x)]) *
             kv_at(a, pk, k, a.head, b, kh, j, x);
      s *= a.scale;
      if (a.softcap > 0) s = a.softcap * tanh(s / a.softcap);
      double bj = mask_at(a, b, h, i, j);
      if (a.causal && j > i + offset) bj = -INFINITY;
      const int64_t diff = i + offset - j;
      if ((a.left >= 0 && diff > a.left) || (a.right >= 0 && -diff > a.right)) bj = -INFINITY;
      if (a.nonpad && j >= nonpad) bj = -INFINITY;
      if (bj != -INFINITY) visible = 1.0;
      if (qk_row && a.mode <= 1) qk_row[j] = static_cast<T>(s);
      s += bj;
      if (qk_row && a.mode == 2) qk_row[j] = static_cast<T>(s);
      sc[j] = s;
      mx = fmax(mx, s);
    }
    mx = block_reduce(mx, 0, red);
    visible = block_reduce(visible, 0, red);
    const bool none = visible == 0.0 || mx == -INFINITY;
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < total; j += blockDim.x) {
      const double p = none ? 0.0 : exp(sc[j] - mx);
      sc[j] = p;
      sum += p;
    }
    sum = block_reduce(sum, 1, red);
    for (int64_t j = threadIdx.x; j < total; j += blockDim.x) {
      const double p = sum > 0 ? sc[j] / sum : 0.0;
      sc[j] = p;
      if (qk_row && a.mode == 3) qk_row[j] = static_cast<T>(p);
    }
    __syncthreads();  // every probability of the row is written
    for (int64_t x = threadIdx.x; x < a.v_head; x += blockDim.x) {
      double acc = 0.0;
      for (int64_t j = 0; j < total; ++j) {
        const double p = sc[j];
        if (p != 0.0) acc += p * kv_at(a, pv, v, a.v_head, b, kh, j, x);
      }
      y[qkv_index(a.three_d, a.q_heads, a.q_seq, a.v_head, b, h, i, x)] = static_cast<T>(acc);
    }
    __syncthreads();  // the scratch row is reused by the next row of this block
  }
}

template <typename T>
__global__ void concat_kernel(const T* past, const T* cur, T* out, int64_t batch, int64_t heads, int64_t past_len,
                              int64_t seq, int64_t size, bool three_d) {
  const int64_t total = past_len + seq, n = batch * heads * total * size;
  KILNRT_GRID_LOOP(e, n) {
    const int64_t x = e % size, t = (e / size) % total, h = (e / (size * total)) % heads,
                  b = e / (size * total * heads);
    out[e] = t < past_len ? past[((b * heads + h) * past_len + t) * size + x]
                          : cur[qkv_index(three_d, heads, seq, size, b, h, t - past_len, x)];
  }
}

}  // namespace

int attention(const AttnArgs& a, StreamT stream) {
  const int64_t rows = a.batch * a.q_heads * a.q_seq;
  if (rows <= 0 || a.v_head <= 0) return 0;
  if (a.kv_heads <= 0 || a.scratch_rows <= 0) return static_cast<int>(cudaErrorInvalidValue);
  int64_t blocks = rows < a.scratch_rows ? rows : a.scratch_rows;
  if (blocks > 65535LL * 32) blocks = 65535LL * 32;
  if (a.f64)
    attention_rows<double><<<static_cast<unsigned>(blocks), kRowThreads, 0, stream>>>(a);
  else
    attention_rows<float><<<static_cast<unsigned>(blocks), kRowThreads, 0, stream>>>(a);
  return launch_status();
}

int present_concat(const void* past, const void* cur, void* out, int64_t batch, int64_t heads, int64_t past_len,
                   int64_t seq, int64_t size, bool three_d, bool f64, StreamT stream) {
  const int64_t n = batch * heads * (past_len + seq) * size;
  if (n <= 0) return 0;
  if (f64)
    concat_kernel<double>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const double*>(past), static_cast<const double*>(cur),
                                                 static_cast<double*>(out), batch, heads, past_len, seq, size, three_d);
  else
    concat_kernel<float>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(past), static_cast<const float*>(cur),
                                                 static_cast<float*>(out), batch, heads, past_len, seq, size, three_d);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::attention_rows
