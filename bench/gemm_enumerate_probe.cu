// Does cuBLASLt have faster configurations than its heuristic offers? (standalone, GPU machine)
// For the zoo's BERT b32 GEMMs (fp16, float32 compute, bias / GELU+bias epilogue, beta * C for a residual) this times
//   heuristic:  every cuBLASLt heuristic result (up to 64), as kilnrt's tuner lists them (without split-K variants);
//   enumerated: every algorithm id x tile x stages x cluster shape x CTA swizzle x custom option that
//               cublasLtMatmulAlgoCheck accepts (capped per shape),
// each 8 launches in a CUDA graph (kilnrt's build-time timing, median of 4 replays), then re-times the 6 fastest of
// each list sustained (200 launches per replay: the GPU at its power cap) on pseudo-random operands.
// Build: nvcc -std=c++17 -O2 -arch=sm_90 -o gemm_enum bench/gemm_enumerate_probe.cu -lcublasLt
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "gemm_probe_common.cuh"

static cublasLtHandle_t H;
static void* WS;
static const size_t WSB = 32 << 20;
static cudaStream_t S;

__global__ void fill_rand(half* p, size_t n, uint32_t seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    const float u = (h & 0xffffff) / 16777216.f - 0.5f;
    p[i] = __float2half(scale * 3.4f * u);
  }
}

static double graph_ms(const std::function<bool()>& body, int reps, int replays, int skip) {
  return probe_graph_ms(S, body, reps, replays, skip);
}

template <class T>
static std::vector<T> cap_array(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0)
    return {};
  std::vector<T> v(bytes / sizeof(T));
  cublasLtMatmulAlgoCapGetAttribute(&algo, attr, v.data(), bytes, &bytes);
  return v;
}

struct Cand {
  cublasLtMatmulAlgo_t algo;
  int id, tile, stages, cluster, swizzle, custom;
  double short_ms = -1, sus_ms = -1;
};

int main(int argc, char** argv) {
  const size_t cap = argc > 1 ? size_t(atoi(argv[1])) : 4000;
  cublasLtCreate(&H);
  CK(cudaStreamCreate(&S));
  CK(cudaMalloc(&WS, WSB));
  struct P {
    const char* name;
    int M, N, K;
    bool gelu, resid;
  } probs[] = {{"bert out+res", 4096, 768, 768, false, true},
               {"bert fc2+res", 4096, 768, 3072, false, true},
               {"bert qkv", 4096, 2304, 768, false, false},
               {"bert fc1+gelu", 4096, 3072, 768, true, false}};
  for (const P& p : probs) {
    const int M = p.M, N = p.N, K = p.K;
    half *A, *W, *B, *D, *C;
    CK(cudaMalloc(&A, size_t(M) * K * 2));
    CK(cudaMalloc(&W, size_t(K) * N * 2));
    CK(cudaMalloc(&B, N * 2));
    CK(cudaMalloc(&D, size_t(M) * N * 2));
    CK(cudaMalloc(&C, size_t(M) * N * 2));
    fill_rand<<<512, 256>>>(A, size_t(M) * K, 1, 1.f);
    fill_rand<<<512, 256>>>(W, size_t(K) * N, 2, 0.036f);
    fill_rand<<<64, 256>>>(B, N, 3, 0.1f);
    fill_rand<<<512, 256>>>(C, size_t(M) * N, 4, 1.f);
    CK(cudaDeviceSynchronize());
    const ProbeGemm pg = make_probe_gemm(M, N, K, p.gelu, B, WSB);
    cublasLtMatmulDesc_t desc = pg.desc;
    cublasLtMatrixLayout_t la = pg.la, lb = pg.lb, lc = pg.lc;
    cublasLtMatmulPreference_t pref = pg.pref;
    float one = 1.f, beta = p.resid ? 1.f : 0.f;
    const void* cin = p.resid ? (const void*)C : (const void*)D;

    std::vector<Cand> heur, enumerated;
    cublasLtMatmulHeuristicResult_t res[64];
    int ret = 0;
    cublasLtMatmulAlgoGetHeuristic(H, desc, la, lb, lc, lc, pref, 64, res, &ret);
    for (int i = 0; i < ret; ++i)
      if (res[i].state == CUBLAS_STATUS_SUCCESS) heur.push_back(Cand{res[i].algo, -1, 0, 0, 0, 0, 0});

    int ids[256], nids = 0;
    cublasLtMatmulAlgoGetIds(H, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, 256,
                             ids, &nids);
    size_t tried = 0;
    for (int a = 0; a < nids && enumerated.size() < cap; ++a) {
      cublasLtMatmulAlgo_t base;
      if (cublasLtMatmulAlgoInit(H, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                                 ids[a], &base) != CUBLAS_STATUS_SUCCESS)
        continue;
      std::vector<uint32_t> tiles = cap_array<uint32_t>(base, CUBLASLT_ALGO_CAP_TILE_IDS);
      std::vector<uint32_t> stages = cap_array<uint32_t>(base, CUBLASLT_ALGO_CAP_STAGES_IDS);
      // No capability lists the cluster shapes: the usual ones, cublasLtMatmulAlgoCheck refuses the others.
      std::vector<uint32_t> clusters = {CUBLASLT_CLUSTER_SHAPE_AUTO, CUBLASLT_CLUSTER_SHAPE_1x1x1,
                                        CUBLASLT_CLUSTER_SHAPE_2x1x1, CUBLASLT_CLUSTER_SHAPE_1x2x1,
                                        CUBLASLT_CLUSTER_SHAPE_2x2x1};
      if (tiles.empty()) tiles = {CUBLASLT_MATMUL_TILE_UNDEFINED};
      if (stages.empty()) stages = {CUBLASLT_MATMUL_STAGES_UNDEFINED};
      int32_t swz = 0, custom_max = 0;
      size_t w;
      cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swz, sizeof(swz), &w);
      cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &custom_max, sizeof(custom_max),
                                        &w);
      custom_max = std::min(custom_max, 3);
      for (uint32_t t : tiles)
        for (uint32_t s : stages)
          for (uint32_t c : clusters)
            for (uint32_t z = 0; z <= uint32_t(swz ? 1 : 0); ++z)
              for (int32_t o = 0; o <= custom_max; ++o) {
                if (enumerated.size() >= cap) break;
                cublasLtMatmulAlgo_t v = base;
                cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_TILE_ID, &t, sizeof(t));
                cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_STAGES_ID, &s, sizeof(s));
                cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &c, sizeof(c));
                cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &z, sizeof(z));
                cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &o, sizeof(o));
                ++tried;
                cublasLtMatmulHeuristicResult_t chk{};
                if (cublasLtMatmulAlgoCheck(H, desc, la, lb, lc, lc, &v, &chk) != CUBLAS_STATUS_SUCCESS ||
                    chk.workspaceSize > WSB)
                  continue;
                enumerated.push_back(Cand{v, ids[a], int(t), int(s), int(c), int(z), o});
              }
    }
    auto time_all = [&](std::vector<Cand>& cs) {
      for (Cand& c : cs) {
        auto gemm = [&] {
          return cublasLtMatmul(H, desc, &one, W, la, A, lb, &beta, cin, lc, D, lc, &c.algo, WS, WSB, S) ==
                 CUBLAS_STATUS_SUCCESS;
        };
        if (!gemm()) continue;
        if (cudaStreamSynchronize(S) != cudaSuccess) {
          printf("candidate failed\n");
          exit(1);
        }
        c.short_ms = graph_ms(gemm, 8, 5, 1);
      }
      std::sort(cs.begin(), cs.end(), [](const Cand& x, const Cand& y) {
        return (x.short_ms > 0 ? x.short_ms : 1e9) < (y.short_ms > 0 ? y.short_ms : 1e9);
      });
      for (size_t i = 0; i < cs.size() && i < 6; ++i) {
        Cand& c = cs[i];
        if (c.short_ms <= 0) continue;
        auto gemm = [&] {
          return cublasLtMatmul(H, desc, &one, W, la, A, lb, &beta, cin, lc, D, lc, &c.algo, WS, WSB, S) ==
                 CUBLAS_STATUS_SUCCESS;
        };
        c.sus_ms = graph_ms(gemm, 200, 5, 2);
      }
    };
    const double h0_short = [&] {
      std::vector<Cand> first(heur.begin(), heur.begin() + std::min<size_t>(1, heur.size()));
      time_all(first);
      return first.empty() ? -1.0 : first[0].sus_ms;
    }();
    time_all(heur);
    time_all(enumerated);
    double best_h = 1e9, best_e = 1e9;
    for (const Cand& c : heur)
      if (c.sus_ms > 0) best_h = std::min(best_h, c.sus_ms);
    for (const Cand& c : enumerated)
      if (c.sus_ms > 0) best_e = std::min(best_e, c.sus_ms);
    const double tflop = 2.0 * M * N * K * 1e-12;
    printf("%-14s %dx%dx%d: heuristic %zu, algo ids %d, configs tried %zu, accepted %zu\n", p.name, M, N, K,
           heur.size(), nids, tried, enumerated.size());
    printf(
        "   heuristic first sustained %.2f us | best heuristic sustained %.2f us (%.0f TFLOPS) | best enumerated "
        "sustained %.2f us (%.0f TFLOPS) | gain %.1f%%\n",
        h0_short * 1e3, best_h * 1e3, tflop / (best_h * 1e-3), best_e * 1e3, tflop / (best_e * 1e-3),
        100.0 * (best_h - best_e) / best_h);
    for (size_t i = 0; i < enumerated.size() && i < 6; ++i) {
      const Cand& c = enumerated[i];
      printf("   enum #%zu id %d tile %d stages %d cluster %d swizzle %d custom %d: short %.2f sustained %.2f us\n", i,
             c.id, c.tile, c.stages, c.cluster, c.swizzle, c.custom, c.short_ms * 1e3, c.sus_ms * 1e3);
    }
    cudaFree(A), cudaFree(W), cudaFree(B), cudaFree(D), cudaFree(C);
  }
  return 0;
}
