// GEMM timing on pseudo-random operands, short against sustained (standalone, GPU machine).
// For the zoo's BERT / ViT b32 GEMM shapes (fp16, float32 compute, bias / GELU+bias epilogue, optionally beta * C
// for a residual), every cuBLASLt heuristic candidate plus the split-K variants kilnrt's tuner adds is timed:
//   short     = 8 back-to-back launches in a CUDA graph, median of 5 replays (kilnrt's build-time timing)
//   sustained = 200 launches per replay, median of the last 3 of 5 replays (the GPU at its power cap)
// The H100 runs these GEMMs on random data at its 700 W cap (1.6-1.9 GHz); on zero / constant operands it draws far
// less. Build: nvcc -std=c++17 -O2 -arch=sm_90 -o gemm_probe bench/gemm_data_power_probe.cu -lcublasLt
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    h *= 3266489917u;
    h ^= h >> 16;
    uint32_t h2 = h * 747796405u + 2891336453u;
    float u1 = (h & 0xffffff) / 16777216.f + 1e-7f, u2 = (h2 & 0xffffff) / 16777216.f;
    p[i] = __float2half(scale * sqrtf(-2.f * logf(u1)) * cospif(2.f * u2));
  }
}

static double graph_ms(const std::function<void()>& body, int reps, int replays = 6, int skip = 1) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(S, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < reps; ++i) body();
  CK(cudaStreamEndCapture(S, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<double> v;
  for (int r = 0; r < replays; ++r) {
    cudaEventRecord(a, S);
    cudaGraphLaunch(ge, S);
    cudaEventRecord(b, S);
    CK(cudaEventSynchronize(b));
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    if (r >= skip) v.push_back(ms / reps);
  }
  std::sort(v.begin(), v.end());
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return v[v.size() / 2];
}

int main() {
  cublasLtCreate(&H);
  CK(cudaStreamCreate(&S));
  CK(cudaMalloc(&WS, WSB));
  struct P {
    const char* name;
    int M, N, K;
    bool gelu, resid;
  } probs[] = {{"bert qkv", 4096, 2304, 768, false, false}, {"bert out", 4096, 768, 768, false, false},
               {"bert fc1", 4096, 3072, 768, true, false},  {"bert fc2", 4096, 768, 3072, false, false},
               {"vit qkv", 6304, 2304, 768, false, false},  {"vit out+res", 6304, 768, 768, false, true},
               {"vit fc1", 6304, 3072, 768, true, false},   {"vit fc2+res", 6304, 768, 3072, false, true},
               {"vit out", 6304, 768, 768, false, false},   {"vit fc2", 6304, 768, 3072, false, false}};
  for (auto p : probs) {
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
    cublasLtMatmulHeuristicResult_t res[12];
    int ret = 0;
    cublasLtMatmulAlgoGetHeuristic(H, desc, la, lb, lc, lc, pref, 12, res, &ret);
    std::vector<cublasLtMatmulAlgo_t> cands;
    std::vector<int> splits;
    for (int i = 0; i < ret; ++i)
      if (res[i].state == CUBLAS_STATUS_SUCCESS) {
        cands.push_back(res[i].algo);
        splits.push_back(1);
      }
    // split-K variants of the first 3, as kilnrt's tuner lists them (lt_gemm.cc's add_split_k_variants: keep in step)
    size_t base_n = std::min<size_t>(3, cands.size());
    int added = 0;
    for (size_t i = 0; i < base_n; ++i) {
      int32_t sup = 0;
      uint32_t sch = 0;
      size_t w;
      cublasLtMatmulAlgoCapGetAttribute(&cands[i], CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &sup, sizeof(sup), &w);
      cublasLtMatmulAlgoCapGetAttribute(&cands[i], CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &sch, sizeof(sch), &w);
      if (!sup) continue;
      uint32_t scheme = 0;
      for (uint32_t want :
           {uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE), uint32_t(CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE),
            uint32_t(CUBLASLT_REDUCTION_SCHEME_INPLACE)})
        if (!scheme && (sch & want)) scheme = want;
      if (!scheme) continue;
      for (int32_t sp : {2, 3, 4, 6, 8, 12, 16}) {
        if (K / sp < 64 || added >= 12) break;
        cublasLtMatmulAlgo_t v = cands[i];
        cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sp, sizeof(sp));
        cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof(scheme));
        cublasLtMatmulHeuristicResult_t chk{};
        if (cublasLtMatmulAlgoCheck(H, desc, la, lb, lc, lc, &v, &chk) != CUBLAS_STATUS_SUCCESS ||
            chk.workspaceSize > WSB)
          continue;
        cands.push_back(v);
        splits.push_back(sp);
        ++added;
      }
    }
    float one = 1.f, beta = p.resid ? 1.f : 0.f;
    const void* cin = p.resid ? (const void*)C : (const void*)D;
    int best_short = -1, best_sus = -1;
    std::vector<double> short_ms(cands.size(), -1e-3), sus_ms(cands.size(), -1e-3);  // -1 us: did not run
    for (size_t c = 0; c < cands.size(); ++c) {
      auto gemm = [&] {
        return cublasLtMatmul(H, desc, &one, W, la, A, lb, &beta, cin, lc, D, lc, &cands[c], WS, WSB, S);
      };
      if (gemm() != CUBLAS_STATUS_SUCCESS) continue;
      CK(cudaStreamSynchronize(S));
      short_ms[c] = graph_ms([&] { gemm(); }, 8);
      sus_ms[c] = graph_ms([&] { gemm(); }, 200, 5, 2);
      if (best_short < 0 || short_ms[c] < short_ms[best_short]) best_short = int(c);
      if (best_sus < 0 || sus_ms[c] < sus_ms[best_sus]) best_sus = int(c);
    }
    if (best_short < 0) {
      printf("%-12s: no candidate ran\n", p.name);
    } else {
      const int a = best_short, b = best_sus;
      printf(
          "%-12s %dx%dx%d: %zu cands | short-best #%d(split %d) short %.2f sust %.2f | sust-best #%d(split %d) "
          "short %.2f sust %.2f | first short %.2f sust %.2f us | sustained gain %.1f%%\n",
          p.name, M, N, K, cands.size(), a, splits[a], short_ms[a] * 1e3, sus_ms[a] * 1e3, b, splits[b],
          short_ms[b] * 1e3, sus_ms[b] * 1e3, short_ms[0] * 1e3, sus_ms[0] * 1e3,
          100.0 * (sus_ms[a] - sus_ms[b]) / sus_ms[a]);
      printf("   all (short/sustained us):");
      for (size_t c = 0; c < cands.size(); ++c) printf(" %zu:%.1f/%.1f", c, short_ms[c] * 1e3, sus_ms[c] * 1e3);
      printf("\n");
    }
    cudaFree(A);
    cudaFree(W);
    cudaFree(B);
    cudaFree(D);
    cudaFree(C);
  }
  return 0;
}
