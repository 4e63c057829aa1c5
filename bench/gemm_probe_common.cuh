// Shared by the standalone cuBLASLt probes (gemm_data_power_probe.cu, gemm_enumerate_probe.cu,
// gemm_layernorm_probe.cu): the GEMM as kilnrt's FusedMatMul issues it for Y [M, N] = A [M, K] x W [K, N] + bias
// [-> GELU], fp16 storage, float32 compute; the CUDA-graph timing loop; pseudo-random normal operands and a transpose
// (gemm_layernorm_probe.cu, hopper_gemm_probe.cu).
#pragma once
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "probe_check.cuh"

struct ProbeGemm {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;  // column-major D^T = W^T x A^T: la for W, lb for A, lc for C and D
  cublasLtMatmulPreference_t pref;
};

// The descriptor (bias or GELU+bias epilogue reading `bias`), layouts and a preference allowing `workspace` bytes.
inline ProbeGemm make_probe_gemm(int M, int N, int K, bool gelu, const half* bias, uint64_t workspace) {
  ProbeGemm g;
  cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasOperation_t n = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &n, sizeof(n));
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n));
  cublasLtEpilogue_t epi = gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  cublasLtMatrixLayoutCreate(&g.la, CUDA_R_16F, N, K, N);
  cublasLtMatrixLayoutCreate(&g.lb, CUDA_R_16F, K, M, K);
  cublasLtMatrixLayoutCreate(&g.lc, CUDA_R_16F, N, M, N);
  cublasLtMatmulPreferenceCreate(&g.pref);
  cublasLtMatmulPreferenceSetAttribute(g.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace));
  return g;
}

// What a probe's main() starts with: a cuBLASLt handle, a stream, 32 MiB of cuBLASLt workspace; prints the GPU.
struct ProbeSetup {
  cublasLtHandle_t lt;
  cudaStream_t stream;
  void* workspace;
  size_t workspace_bytes;
};
inline ProbeSetup probe_setup() {
  ProbeSetup s{};
  cublasLtCreate(&s.lt);
  CK(cudaStreamCreate(&s.stream));
  s.workspace_bytes = size_t(32) << 20;
  CK(cudaMalloc(&s.workspace, s.workspace_bytes));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  return s;
}

// Milliseconds per launch: `reps` calls of body() captured in one CUDA graph on `s`, replayed `replays` times; the
// median of the replays after the first `skip`. -1 when a call returned false or a CUDA call failed.
inline double probe_graph_ms(cudaStream_t s, const std::function<bool()>& body, int reps, int replays, int skip) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return -1;
  bool ok = true;
  for (int i = 0; i < reps; ++i) ok &= body();
  if (cudaStreamEndCapture(s, &g) != cudaSuccess) return -1;
  if (!ok || cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) {
    cudaGraphDestroy(g);
    return -1;
  }
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<double> v;
  for (int r = 0; r < replays && ok; ++r) {
    cudaEventRecord(a, s);
    cudaGraphLaunch(ge, s);
    cudaEventRecord(b, s);
    float ms = 0;
    ok = cudaEventSynchronize(b) == cudaSuccess && cudaEventElapsedTime(&ms, a, b) == cudaSuccess;
    if (r >= skip) v.push_back(ms / reps);
  }
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  if (!ok || v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// p[i] = offset + scale * a standard normal value from a hash of (i, seed) (Box-Muller), rounded to fp16.
__global__ void fill_rand(half* p, size_t n, uint32_t seed, float scale, float offset) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    h *= 3266489917u;
    h ^= h >> 16;
    uint32_t h2 = h * 747796405u + 2891336453u;
    float u1 = (h & 0xffffff) / 16777216.f + 1e-7f, u2 = (h2 & 0xffffff) / 16777216.f;
    p[i] = __float2half(offset + scale * sqrtf(-2.f * logf(u1)) * cospif(2.f * u2));
  }
}
__global__ void transpose(const half* in, half* out, int rows, int cols) {  // out[c, r] = in[r, c]
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < size_t(rows) * cols;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t r = i / cols, c = i % cols;
    out[c * rows + r] = in[i];
  }
}
