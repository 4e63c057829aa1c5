// Does the weight layout or the matrix order open faster cuBLASLt kernels? (standalone, GPU machine)
// kilnrt's FusedMatMul issues Y [M, N] = A [M, K] x W [K, N] (+ bias [-> GELU], + residual as C with beta = 1) as
// the column-major D^T = W^T x A^T with both operands untransposed ("as engine"). The builder could store W
// transposed, or describe the row-major matrices with CUBLASLT_ORDER_ROW; cuBLASLt's heuristic may then offer other
// kernels. For each of BERT b32's and ViT b32's GEMMs and each formulation this times every heuristic candidate (up
// to 16) as kilnrt's tuner does (8 launches in a CUDA graph, median of 4 replays), re-times the 4 fastest sustained
// (200 launches per replay), and checks the best candidate's output against the engine formulation's (column-major
// forms only: with CUBLASLT_ORDER_ROW cuBLASLt adds the bias along D's rows, so there it is timing only).
// Build: nvcc -std=c++17 -O2 -arch=sm_90 -Ibench -o gemm_layout bench/gemm_layout_probe.cu -lcublasLt
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "gemm_probe_common.cuh"

namespace {

struct Problem {
  const char* name;
  int M, N, K;
  bool gelu, resid;
};

// The four formulations: W [K, N] or [N, K] (stored transposed, op T), column-major D^T or CUBLASLT_ORDER_ROW.
struct Form {
  const char* name;
  bool w_nk, row_order;
};

struct Gemm {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t lw, la, lc;
  bool swap;  // row order: cuBLASLt's A is the activation, B the weight
};

void set_order(cublasLtMatrixLayout_t l) {
  const cublasLtOrder_t o = CUBLASLT_ORDER_ROW;
  cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &o, sizeof(o));
}

Gemm make(const Problem& p, const Form& f, const half* bias) {
  Gemm g{};
  cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  const cublasOperation_t n = CUBLAS_OP_N, t = CUBLAS_OP_T;
  cublasLtEpilogue_t epi = p.gelu ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
  cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  const int M = p.M, N = p.N, K = p.K;
  if (!f.row_order) {
    // D^T [N, M] (col-major, ld N) = op(W)^T-stored x A^T [K, M] (col-major, ld K).
    cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, f.w_nk ? &t : &n, sizeof(n));
    cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n));
    if (f.w_nk)
      cublasLtMatrixLayoutCreate(&g.lw, CUDA_R_16F, K, N, K);  // W [N, K] row-major = col-major K x N
    else
      cublasLtMatrixLayoutCreate(&g.lw, CUDA_R_16F, N, K, N);  // W [K, N] row-major = col-major N x K
    cublasLtMatrixLayoutCreate(&g.la, CUDA_R_16F, K, M, K);
    cublasLtMatrixLayoutCreate(&g.lc, CUDA_R_16F, N, M, N);
  } else {
    // Row order: D [M, N] = A [M, K] x op(W).
    g.swap = true;
    cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &n, sizeof(n));
    cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, f.w_nk ? &t : &n, sizeof(n));
    cublasLtMatrixLayoutCreate(&g.la, CUDA_R_16F, M, K, K);
    if (f.w_nk)
      cublasLtMatrixLayoutCreate(&g.lw, CUDA_R_16F, N, K, K);
    else
      cublasLtMatrixLayoutCreate(&g.lw, CUDA_R_16F, K, N, N);
    cublasLtMatrixLayoutCreate(&g.lc, CUDA_R_16F, M, N, N);
    set_order(g.la), set_order(g.lw), set_order(g.lc);
  }
  return g;
}

__global__ void max_abs_diff(const half* x, const half* y, size_t n, float* out) {
  float m = 0.f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    m = fmaxf(m, fabsf(__half2float(x[i]) - __half2float(y[i])));
  for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) atomicMax(reinterpret_cast<int*>(out), __float_as_int(m));
}

}  // namespace

int main() {
  ProbeSetup su = probe_setup();
  const Problem probs[] = {
      {"bert out+res", 4096, 768, 768, false, true}, {"bert fc2+res", 4096, 768, 3072, false, true},
      {"bert qkv", 4096, 2304, 768, false, false},   {"bert fc1+gelu", 4096, 3072, 768, true, false},
      {"vit qkv", 6304, 2304, 768, false, false},    {"vit fc1+gelu", 6304, 3072, 768, true, false},
      {"vit fc2+res", 6304, 768, 3072, false, true}};
  const Form forms[] = {{"as engine: W[K,N], col-major", false, false},
                        {"W[N,K] op T, col-major", true, false},
                        {"W[K,N], ORDER_ROW", false, true},
                        {"W[N,K] op T, ORDER_ROW", true, true}};
  float* dmax;
  CK(cudaMalloc(&dmax, sizeof(float)));
  for (const Problem& p : probs) {
    const int M = p.M, N = p.N, K = p.K;
    half *A, *W, *Wt, *B, *C, *D0, *D;
    CK(cudaMalloc(&A, size_t(M) * K * 2));
    CK(cudaMalloc(&W, size_t(K) * N * 2));
    CK(cudaMalloc(&Wt, size_t(K) * N * 2));
    CK(cudaMalloc(&B, size_t(std::max(M, N)) * 2));  // ORDER_ROW: cuBLASLt's bias runs along D's rows (M)
    CK(cudaMalloc(&C, size_t(M) * N * 2));
    CK(cudaMalloc(&D0, size_t(M) * N * 2));
    CK(cudaMalloc(&D, size_t(M) * N * 2));
    fill_rand<<<512, 256>>>(A, size_t(M) * K, 1, 1.f, 0.f);
    fill_rand<<<512, 256>>>(W, size_t(K) * N, 2, 0.036f, 0.f);
    transpose<<<512, 256>>>(W, Wt, K, N);  // Wt [N, K]
    fill_rand<<<64, 256>>>(B, std::max(M, N), 3, 0.1f, 0.f);
    fill_rand<<<512, 256>>>(C, size_t(M) * N, 4, 1.f, 0.f);
    CK(cudaDeviceSynchronize());
    const double tflop = 2.0 * M * N * K * 1e-12;
    printf("%s %dx%dx%d\n", p.name, M, N, K);
    double engine_best = -1;
    for (int fi = 0; fi < 4; ++fi) {
      const Form& f = forms[fi];
      Gemm g = make(p, f, B);
      const half* w = f.w_nk ? Wt : W;
      float one = 1.f, beta = p.resid ? 1.f : 0.f;
      half* out = fi == 0 ? D0 : D;
      const void* cin = p.resid ? static_cast<const void*>(C) : static_cast<const void*>(out);
      cublasLtMatmulPreference_t pref;
      cublasLtMatmulPreferenceCreate(&pref);
      uint64_t ws = su.workspace_bytes;
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
      cublasLtMatmulHeuristicResult_t res[16];
      int ret = 0;
      const cublasLtMatrixLayout_t l1 = g.swap ? g.la : g.lw, l2 = g.swap ? g.lw : g.la;
      const void* o1 = g.swap ? static_cast<const void*>(A) : static_cast<const void*>(w);
      const void* o2 = g.swap ? static_cast<const void*>(w) : static_cast<const void*>(A);
      const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(su.lt, g.desc, l1, l2, g.lc, g.lc, pref, 16, res, &ret);
      if (hs != CUBLAS_STATUS_SUCCESS || ret == 0) {
        printf("   %-30s no algorithm (status %d)\n", f.name, int(hs));
        continue;
      }
      struct T {
        int idx;
        double short_ms, sus_ms;
      };
      std::vector<T> ts;
      for (int i = 0; i < ret; ++i) {
        auto gemm = [&] {
          return cublasLtMatmul(su.lt, g.desc, &one, o1, l1, o2, l2, &beta, cin, g.lc, out, g.lc, &res[i].algo,
                                su.workspace, su.workspace_bytes, su.stream) == CUBLAS_STATUS_SUCCESS;
        };
        if (!gemm() || cudaStreamSynchronize(su.stream) != cudaSuccess) continue;
        ts.push_back(T{i, probe_graph_ms(su.stream, gemm, 8, 5, 1), -1});
      }
      std::sort(ts.begin(), ts.end(), [](const T& x, const T& y) { return x.short_ms < y.short_ms; });
      double best = 1e9;
      int best_idx = -1;
      for (size_t j = 0; j < ts.size() && j < 4; ++j) {
        const int i = ts[j].idx;
        auto gemm = [&] {
          return cublasLtMatmul(su.lt, g.desc, &one, o1, l1, o2, l2, &beta, cin, g.lc, out, g.lc, &res[i].algo,
                                su.workspace, su.workspace_bytes, su.stream) == CUBLAS_STATUS_SUCCESS;
        };
        ts[j].sus_ms = probe_graph_ms(su.stream, gemm, 200, 5, 2);
        if (ts[j].sus_ms > 0 && ts[j].sus_ms < best) best = ts[j].sus_ms, best_idx = i;
      }
      if (best_idx < 0) {
        printf("   %-30s every candidate failed\n", f.name);
        continue;
      }
      // The best candidate's output, against the engine formulation's best.
      cublasLtMatmul(su.lt, g.desc, &one, o1, l1, o2, l2, &beta, cin, g.lc, out, g.lc, &res[best_idx].algo,
                     su.workspace, su.workspace_bytes, su.stream);
      float diff = 0.f;
      if (fi > 0 && !f.row_order) {  // row order adds the bias per row of D: another result, timing only
        CK(cudaMemsetAsync(dmax, 0, sizeof(float), su.stream));
        max_abs_diff<<<264, 256, 0, su.stream>>>(D0, D, size_t(M) * N, dmax);
        CK(cudaMemcpyAsync(&diff, dmax, sizeof(float), cudaMemcpyDeviceToHost, su.stream));
      }
      CK(cudaStreamSynchronize(su.stream));
      if (fi == 0) engine_best = best;
      printf(
          "   %-30s %2d candidates, first-8 short %.2f us, best sustained %.2f us (%.0f TFLOPS, candidate %d) "
          "%.3fx engine form, max|diff| %.4f\n",
          f.name, ret, ts.empty() ? -1.0 : ts[0].short_ms * 1e3, best * 1e3, tflop / (best * 1e-3), best_idx,
          engine_best > 0 ? best / engine_best : 0.0, diff);
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatrixLayoutDestroy(g.lw), cublasLtMatrixLayoutDestroy(g.la), cublasLtMatrixLayoutDestroy(g.lc);
      cublasLtMatmulDescDestroy(g.desc);
    }
    cudaFree(A), cudaFree(W), cudaFree(Wt), cudaFree(B), cudaFree(C), cudaFree(D0), cudaFree(D);
  }
  return 0;
}
