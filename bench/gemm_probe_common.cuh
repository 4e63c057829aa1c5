// Shared by the standalone cuBLASLt probes (gemm_data_power_probe.cu, gemm_enumerate_probe.cu): the GEMM as kilnrt's
// FusedMatMul issues it for Y [M, N] = A [M, K] x W [K, N] + bias [-> GELU], fp16 storage, float32 compute.
#pragma once
#include <cublasLt.h>
#include <cuda_fp16.h>

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
  cublasLtMatmulPreferenceSetAttribute(g.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                       sizeof(workspace));
  return g;
}
