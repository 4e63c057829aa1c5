// GEMM + bias + residual + LayerNorm: the fused sm_90a kernel of bench/gemm_layernorm_kernel.cuh against the
// unfused path the engine runs otherwise (the fastest of cuBLASLt's heuristic candidates with the BIAS epilogue and
// the residual as C, then kilnrt's LayerNorm kernel in place), on pseudo-random fp16 operands (standalone, GPU
// machine). Checks the fused output against the unfused one and times both sustained (200 launches per CUDA
// graph replay, median of the last replays: the GPU at its power cap). PROBE_ONLY=<name part> picks problems;
// PROBE_MODES=1 also times the kernel with parts left out (GemmLayerNormArgs::probe_mode).
// Build: nvcc -std=c++17 -O2 -arch=sm_90a -Isrc -Ibench -o gemm_ln_probe bench/gemm_layernorm_probe.cu
//        src/ops/nn/normalization/cuda/layernorm.cu -lcublasLt
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "ops/nn/normalization/cuda/layernorm.h"
#include "gemm_layernorm_kernel.cuh"
#include "gemm_probe_common.cuh"

namespace k = kilnrt::cuda::kernels;
namespace f = kilnrt::bench_gemm_ln;
static cudaStream_t S;

static double graph_us(const std::function<void()>& body, int reps) {
  const double ms = probe_graph_ms(
      S,
      [&] {
        body();
        return true;
      },
      reps, 5, 2);
  if (ms < 0) {
    printf("CUDA graph timing failed\n");
    exit(1);
  }
  return ms * 1e3;
}

int main() {
  const ProbeSetup ps = probe_setup();
  cublasLtHandle_t H = ps.lt;
  S = ps.stream;
  void* ws = ps.workspace;
  const size_t wsb = ps.workspace_bytes;
  struct P {
    const char* name;
    int M, N, K;
  } probs[] = {{"bert b32 out-proj", 4096, 768, 768},
               {"bert b32 fc2", 4096, 768, 3072},
               {"bert b1 out-proj", 128, 768, 768},
               {"bert b1 fc2", 128, 768, 3072},
               {"vit b32 out-proj", 6304, 768, 768},
               {"n1024", 4096, 1024, 1024},
               {"n384", 4096, 384, 1536},
               {"n512 ragged m", 1000, 512, 512}};
  for (const P& p : probs) {
    if (getenv("PROBE_ONLY") && !strstr(p.name, getenv("PROBE_ONLY"))) continue;
    const int M = p.M, N = p.N, K = p.K;
    half *A, *W, *Wt, *B, *R, *G, *Be, *Y0, *Y1;
    CK(cudaMalloc(&A, size_t(M) * K * 2));
    CK(cudaMalloc(&W, size_t(K) * N * 2));
    CK(cudaMalloc(&Wt, size_t(K) * N * 2));
    CK(cudaMalloc(&B, N * 2));
    CK(cudaMalloc(&G, N * 2));
    CK(cudaMalloc(&Be, N * 2));
    CK(cudaMalloc(&R, size_t(M) * N * 2));
    CK(cudaMalloc(&Y0, size_t(M) * N * 2));
    CK(cudaMalloc(&Y1, size_t(M) * N * 2));
    fill_rand<<<512, 256>>>(A, size_t(M) * K, 1, 1.f, 0.f);
    fill_rand<<<512, 256>>>(W, size_t(K) * N, 2, 1.f / sqrtf(float(K)), 0.f);
    fill_rand<<<64, 256>>>(B, N, 3, 0.1f, 0.f);
    fill_rand<<<64, 256>>>(G, N, 5, 0.2f, 1.f);
    fill_rand<<<64, 256>>>(Be, N, 6, 0.1f, 0.f);
    fill_rand<<<512, 256>>>(R, size_t(M) * N, 4, 1.f, 0.5f);
    transpose<<<512, 256>>>(W, Wt, K, N);
    CK(cudaDeviceSynchronize());

    // The unfused path: the fastest heuristic candidate, then LayerNorm in place.
    const ProbeGemm pg = make_probe_gemm(M, N, K, false, B, wsb);
    cublasLtMatmulHeuristicResult_t res[12];
    int ret = 0;
    cublasLtMatmulAlgoGetHeuristic(H, pg.desc, pg.la, pg.lb, pg.lc, pg.lc, pg.pref, 12, res, &ret);
    const float one = 1.f;
    const float eps = 1e-12f;
    auto unfused = [&](const cublasLtMatmulAlgo_t* algo) {
      cublasLtMatmul(H, pg.desc, &one, W, pg.la, A, pg.lb, &one, R, pg.lc, Y0, pg.lc, algo, ws, wsb, S);
      k::layernorm_vec(1, Y0, G, Be, Y0, nullptr, nullptr, M, N, eps, reinterpret_cast<k::StreamT>(S));
    };
    double lib_us = 1e30, gemm_us = 1e30;
    int best = -1;
    for (int i = 0; i < ret; ++i) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const double us = graph_us([&] { unfused(&res[i].algo); }, 200);
      if (us < lib_us) lib_us = us, best = i;
    }
    if (best < 0) {
      printf("%s: no cuBLASLt candidate\n", p.name);
      continue;
    }
    gemm_us = graph_us(
        [&] {
          cublasLtMatmul(H, pg.desc, &one, W, pg.la, A, pg.lb, &one, R, pg.lc, Y0, pg.lc, &res[best].algo, ws, wsb, S);
        },
        200);
    unfused(&res[best].algo);
    CK(cudaStreamSynchronize(S));
    std::vector<half> ref(size_t(M) * N), got(size_t(M) * N);
    CK(cudaMemcpy(ref.data(), Y0, ref.size() * 2, cudaMemcpyDeviceToHost));
    const double flops = 2.0 * M * N * K;
    printf("%-18s %5dx%4dx%4d | cuBLASLt+LN %7.2f us (GEMM alone %7.2f, %5.0f TFLOPS)\n", p.name, M, N, K, lib_us,
           gemm_us, flops / gemm_us * 1e-6);
    for (int trans : {0, 1})
      for (int rows : {64, 128})
        for (int cols : {128, 192, 256}) {
          if (N % cols != 0 || N / cols > 8) continue;
          f::GemmLayerNormArgs a;
          a.dt = 1;
          a.trans_b = trans;
          a.a = A;
          a.w = trans ? Wt : W;
          a.bias = B;
          a.residual = R;
          a.gamma = G;
          a.beta = Be;
          a.y = Y1;
          a.m = M;
          a.n = N;
          a.k = K;
          a.eps = eps;
          a.rows_per_block = rows;
          a.columns_per_block = cols;
          CK(cudaMemset(Y1, 0, size_t(M) * N * 2));
          const int st = f::gemm_layernorm(a, S);
          if (st != 0) {
            printf("   fused W%s rows %d: launch status %d (%s)\n", trans ? "[N,K]" : "[K,N]", rows, st,
                   st > 0 ? cudaGetErrorString(cudaError_t(st)) : f::gemm_layernorm_unsupported(a));
            continue;
          }
          const cudaError_t e = cudaStreamSynchronize(S);
          if (e != cudaSuccess) {
            printf("   fused: %s\n", cudaGetErrorString(e));
            return 1;
          }
          CK(cudaMemcpy(got.data(), Y1, got.size() * 2, cudaMemcpyDeviceToHost));
          double maxd = 0, sumd = 0;
          size_t bad = 0;
          for (size_t i = 0; i < ref.size(); ++i) {
            const double d = std::fabs(double(__half2float(ref[i])) - double(__half2float(got[i])));
            if (!(d <= 1e9)) {
              maxd = INFINITY;
              ++bad;
              continue;
            }
            maxd = std::max(maxd, d);
            sumd += d;
            if (d > 0.05) ++bad;
          }
          const double us = graph_us([&] { f::gemm_layernorm(a, S); }, 200);
          double mode_us[8] = {us, 0, 0, 0, 0, 0, 0, 0};
          if (getenv("PROBE_MODES"))
            for (int md = 2; md <= 7; ++md) {
              a.probe_mode = md;
              mode_us[md] = graph_us([&] { f::gemm_layernorm(a, S); }, 200);
              a.probe_mode = 0;
            }
          printf("   fused W%s block %3dx%3d: %7.2f us (%.2fx of unfused) | max |diff| %.4f mean %.2e, >0.05: %zu %s\n",
                 trans ? "[N,K]" : "[K,N]", rows, cols, us, us / lib_us, maxd, sumd / ref.size(), bad,
                 bad ? "MISMATCH" : "ok");
          if (getenv("PROBE_MODES"))
            printf(
                "      no K-loop copies %.2f us, no epilogue %.2f us, no cluster exchange %.2f, no "
                "staging %.2f, no stores %.2f, deep copies %.2f\n",
                mode_us[2], mode_us[3], mode_us[4], mode_us[5], mode_us[6], mode_us[7]);
        }
    cudaFree(A);
    cudaFree(W);
    cudaFree(Wt);
    cudaFree(B);
    cudaFree(G);
    cudaFree(Be);
    cudaFree(R);
    cudaFree(Y0);
    cudaFree(Y1);
  }
  return 0;
}
