// float64 MatMul kernel behind the float64 branch of the CUDA MatMul layer (see matmul_f64.h).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/launch_common.cuh"
#include "ops/nn/gemm/cuda/matmul_f64.h"

namespace kilnrt::cuda::kernels::f64 {
namespace {

using namespace launch_common;

constexpr int kTile = 64;   // outputs per block side
constexpr int kSlice = 16;  // k per shared-memory slice
constexpr int kSide = 16;   // threads per block side (16 x 16 threads, 4 x 4 outputs each)
constexpr int kMicro = kTile / kSide;

__global__ void __launch_bounds__(kSide* kSide)
    matmul_kernel(const double* a, const double* b, double* c, int64_t m, int64_t n, int64_t k, MatMulBatch bt,
                  int64_t batches, int64_t row_tiles) {
  __shared__ double as[kSlice][kTile + 1];  // as[kk][row]
  __shared__ double bs[kSlice][kTile + 1];  // bs[kk][col]
  const int tid = threadIdx.x, tx = tid % kSide, ty = tid / kSide;
  const int64_t col0 = int64_t(blockIdx.x) * kTile;
  for (int64_t z = blockIdx.z; z < batches; z += gridDim.z) {
    int64_t rem = z, oa = 0, ob = 0;
    for (int d = bt.rank - 1; d >= 0; --d) {
      const int64_t idx = rem % bt.dims[d];
      rem /= bt.dims[d];
      oa += idx * bt.a_strides[d];
      ob += idx * bt.b_strides[d];
    }
    const double* ap = a + oa;
    const double* bp = b + ob;
    double* cp = c + z * m * n;
    for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
      const int64_t row0 = rt * kTile;
      double acc[kMicro][kMicro];
#pragma unroll
      for (int i = 0; i < kMicro; ++i)
#pragma unroll
        for (int j = 0; j < kMicro; ++j) acc[i][j] = 0.0;
      for (int64_t k0 = 0; k0 < k; k0 += kSlice) {
        for (int e = tid; e < kTile * kSlice; e += kSide * kSide) {
          const int r = e / kSlice, kk = e % kSlice;  // neighbouring threads: neighbouring k of one A row
          const int64_t gr = row0 + r, gk = k0 + kk;
          as[kk][r] = (gr < m && gk < k) ? ap[gr * k + gk] : 0.0;
        }
        for (int e = tid; e < kTile * kSlice; e += kSide * kSide) {
          const int kk = e / kTile, cc = e % kTile;  // neighbouring threads: neighbouring columns of one B row
          const int64_t gk = k0 + kk, gc = col0 + cc;
          bs[kk][cc] = (gk < k && gc < n) ? bp[gk * n + gc] : 0.0;
        }
        __syncthreads();
        const int depth = k - k0 < kSlice ? static_cast<int>(k - k0) : kSlice;
        for (int kk = 0; kk < depth; ++kk) {
          double av[kMicro], bv[kMicro];
#pragma unroll
          for (int i = 0; i < kMicro; ++i) av[i] = as[kk][ty + kSide * i];
#pragma unroll
          for (int j = 0; j < kMicro; ++j) bv[j] = bs[kk][tx + kSide * j];
#pragma unroll
          for (int i = 0; i < kMicro; ++i)
#pragma unroll
            for (int j = 0; j < kMicro; ++j) acc[i][j] += av[i] * bv[j];
        }
        __syncthreads();
      }
#pragma unroll
      for (int i = 0; i < kMicro; ++i)
#pragma unroll
        for (int j = 0; j < kMicro; ++j) {
          const int64_t r = row0 + ty + kSide * i, cc = col0 + tx + kSide * j;
          if (r < m && cc < n) cp[r * n + cc] = acc[i][j];
        }
    }
  }
}

}  // namespace

int matmul(const double* a, const double* b, double* c, int64_t m, int64_t n, int64_t k, const MatMulBatch& batch,
           StreamT stream) {
  if (batch.rank < 0 || batch.rank > kMaxDims) return static_cast<int>(cudaErrorInvalidValue);
  int64_t batches = 1;
  for (int d = 0; d < batch.rank; ++d) batches *= batch.dims[d];
  if (batches * m * n == 0) return 0;
  const int64_t col_tiles = (n + kTile - 1) / kTile, row_tiles = (m + kTile - 1) / kTile;
  if (col_tiles > 2147483647LL) return static_cast<int>(cudaErrorInvalidValue);
  const dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(row_tiles < 65535 ? row_tiles : 65535),
                  static_cast<unsigned>(batches < 65535 ? batches : 65535));
  matmul_kernel<<<grid, kSide * kSide, 0, reinterpret_cast<cudaStream_t>(stream)>>>(a, b, c, m, n, k, batch, batches,
                                                                                    row_tiles);
  return launch_status();
}

}  // namespace kilnrt::cuda::kernels::f64
