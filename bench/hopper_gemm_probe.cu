// kilnrt's Hopper GEMM (bench/hopper_gemm_kernel.cuh) against cuBLASLt at the zoo transformers' shapes
// (standalone, GPU machine): for each problem, the fastest of cuBLASLt's heuristic candidates (the epilogue
// kilnrt's FusedMatMul uses: BIAS or GELU_BIAS, the residual as C with beta 1), then every tile / cluster / W layout
// of the kernel, checked against cuBLASLt's output and timed sustained (200 launches per CUDA-graph replay, median).
// PROBE_ONLY=<name part> picks problems, PROBE_BN / PROBE_CLUSTER configurations; PROBE_NCU=1 launches each once,
// untimed (for ncu: cuBLASLt's first candidate, then the kernel); PROBE_NO_MULTICAST (set, to any value) launches
// clusters without the A multicast. PROBE_NEIGHBOUR=1 times each GEMM followed by a memory-bound kernel launched
// without programmatic dependence (as in the engine, where a LayerNorm or attention kernel sits between GEMMs) and
// subtracts that kernel's time; otherwise the GEMMs run back to back. Exit status 2 when an output mismatches.
// Build: nvcc -std=c++17 -O3 -arch=sm_90a -Isrc -Ibench -o hopper_gemm_probe bench/hopper_gemm_probe.cu -lcublasLt
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

#include "hopper_gemm_pingpong.cuh"
#include "gemm_probe_common.cuh"

namespace hg = kilnrt::bench_hopper_gemm;
static cudaStream_t S;

// The engine's neighbour of a GEMM: a memory-bound kernel without programmatic launch (as kilnrt's LayerNorm), so
// the GEMMs do not run back to back. `gap` mode times GEMM + neighbour and subtracts the neighbour alone.
__global__ void neighbour(uint4* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint4 v = p[i];
    v.x ^= 0x3c00u;
    p[i] = v;
  }
}
static uint4* NB;
static const size_t kNb = (4096 * 768 * 2) / 16;
static bool with_neighbour = false;
static double graph_us(const std::function<bool()>& body, int reps) {
  if (!with_neighbour) {
    const double ms = probe_graph_ms(S, body, reps, 5, 2);
    return ms < 0 ? -1 : ms * 1e3;
  }
  auto nb = [] {
    neighbour<<<528, 256, 0, S>>>(NB, kNb);
    return cudaGetLastError() == cudaSuccess;
  };
  const double both = probe_graph_ms(
      S, [&] { return body() && nb(); }, reps, 5, 2);
  const double alone = probe_graph_ms(S, nb, reps, 5, 2);
  return both < 0 || alone < 0 ? -1 : (both - alone) * 1e3;
}

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);  // what ran survives a timeout
  const ProbeSetup ps = probe_setup();
  cublasLtHandle_t H = ps.lt;
  S = ps.stream;
  void* ws = ps.workspace;
  const size_t wsb = ps.workspace_bytes;
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
  if (!fn) {
    printf("no cuTensorMapEncodeTiled\n");
    return 1;
  }
  const auto enc = reinterpret_cast<hg::EncodeTiledFn>(fn);
  CK(cudaMalloc(&NB, kNb * 16));
  CK(cudaMemset(NB, 0, kNb * 16));
  with_neighbour = getenv("PROBE_NEIGHBOUR") != nullptr;
  printf("timing: %s\n",
         with_neighbour ? "each GEMM followed by a memory-bound kernel (its time subtracted)" : "GEMMs back to back");
  struct P {
    const char* name;
    int M, N, K;
    bool res, gelu;
  } probs[] = {{"bert b32 qkv", 4096, 2304, 768, false, false},
               {"bert b32 out-proj", 4096, 768, 768, true, false},
               {"bert b32 fc1", 4096, 3072, 768, false, true},
               {"bert b32 fc2", 4096, 768, 3072, true, false},
               {"vit b32 qkv", 6304, 2304, 768, false, false},
               {"vit b32 out-proj", 6304, 768, 768, true, false},
               {"vit b32 fc1", 6304, 3072, 768, false, true},
               {"vit b32 fc2", 6304, 768, 3072, true, false},
               {"bert b1 out-proj", 128, 768, 768, true, false},
               {"bert b1 fc1", 128, 3072, 768, false, true},
               {"ragged", 1000, 520, 200, true, true}};
  int failures = 0;
  for (const P& p : probs) {
    if (getenv("PROBE_ONLY") && !strstr(p.name, getenv("PROBE_ONLY"))) continue;
    const int M = p.M, N = p.N, K = p.K;
    half *A, *W, *Wt, *B, *R, *Y0, *Y1;
    CK(cudaMalloc(&A, size_t(M) * K * 2));
    CK(cudaMalloc(&W, size_t(K) * N * 2));
    CK(cudaMalloc(&Wt, size_t(K) * N * 2));
    CK(cudaMalloc(&B, N * 2));
    CK(cudaMalloc(&R, size_t(M) * N * 2));
    CK(cudaMalloc(&Y0, size_t(M) * N * 2));
    CK(cudaMalloc(&Y1, size_t(M) * N * 2));
    fill_rand<<<512, 256>>>(A, size_t(M) * K, 1, 1.f, 0.f);
    fill_rand<<<512, 256>>>(W, size_t(K) * N, 2, 1.f / sqrtf(float(K)), 0.f);
    fill_rand<<<64, 256>>>(B, N, 3, 0.1f, 0.f);
    fill_rand<<<512, 256>>>(R, size_t(M) * N, 4, 1.f, 0.5f);
    transpose<<<512, 256>>>(W, Wt, K, N);
    CK(cudaDeviceSynchronize());

    const ProbeGemm pg = make_probe_gemm(M, N, K, p.gelu, B, wsb);
    cublasLtMatmulHeuristicResult_t res[12];
    int ret = 0;
    cublasLtMatmulAlgoGetHeuristic(H, pg.desc, pg.la, pg.lb, pg.lc, pg.lc, pg.pref, 12, res, &ret);
    const float one = 1.f, zero = 0.f;
    auto lib = [&](const cublasLtMatmulAlgo_t* algo) {
      return cublasLtMatmul(H, pg.desc, &one, W, pg.la, A, pg.lb, p.res ? &one : &zero, p.res ? R : Y0, pg.lc, Y0,
                            pg.lc, algo, ws, wsb, S) == CUBLAS_STATUS_SUCCESS;
    };
    double lib_us = 1e30, first_us = -1;
    int best = -1;
    for (int i = 0; i < ret; ++i) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const double us = getenv("PROBE_NCU") ? (i == 0 ? 1 : 2) : graph_us([&] { return lib(&res[i].algo); }, 200);
      if (i == 0) first_us = us;
      if (us > 0 && us < lib_us) lib_us = us, best = i;
    }
    if (best < 0) {
      printf("%s: no cuBLASLt candidate\n", p.name);
      continue;
    }
    lib(&res[best].algo);
    CK(cudaStreamSynchronize(S));
    std::vector<half> ref(size_t(M) * N), got(size_t(M) * N);
    CK(cudaMemcpy(ref.data(), Y0, ref.size() * 2, cudaMemcpyDeviceToHost));
    const double flops = 2.0 * M * N * K;
    printf("%-17s %5dx%4dx%4d%s%s | cuBLASLt best %7.2f us (%4.0f TFLOPS, candidate %d of %d; first %.2f)\n", p.name, M,
           N, K, p.res ? " +res" : "", p.gelu ? " +gelu" : "", lib_us, flops / lib_us * 1e-6, best, ret, first_us);
    double best_own = 1e30;
    for (int wnk : {0, 1})
      for (int bn : {128, 192, 256})
        for (int cl : {1, 2})
          for (int pdl : {1, 0})
            for (int pp : {0, 1})
              for (int bm : {128, 192}) {
                if (pdl == 0 && (bn != 192 || cl != 1 || pp || bm != 128)) continue;
                if (bm == 192 && (bn != 192 || pp)) continue;  // 192 x 192: three consumer warpgroups
                if (pp && (bn != 128 || cl != 1)) continue;    // the ping-pong kernel: 128 x 128 tiles, no cluster
                if (getenv("PROBE_BN") && bn != atoi(getenv("PROBE_BN"))) continue;
                if (getenv("PROBE_CLUSTER") && cl != atoi(getenv("PROBE_CLUSTER"))) continue;
                if (getenv("PROBE_NCU") && (!pdl || wnk)) continue;
                hg::Problem g;
                g.w_nk = wnk;
                g.a = A;
                g.w = wnk ? Wt : W;
                g.bias = B;
                g.residual = p.res ? R : nullptr;
                g.y = Y1;
                g.m = M;
                g.n = N;
                g.k = K;
                g.gelu = p.gelu;
                g.bn = bn;
                g.cluster = cl;
                g.pdl = pdl;
                g.multicast = !getenv("PROBE_NO_MULTICAST");
                g.bm = bm;
                if (*hg::unsupported(g)) continue;
                CK(cudaMemset(Y1, 0, size_t(M) * N * 2));
                auto run = [&] { return pp ? hg::launch_pingpong(g, enc, S) : hg::launch(g, enc, S); };
                const int st = run();
                if (st != 0) {
                  printf("   W%s %3d c%d: launch status %d%s\n", wnk ? "[N,K]" : "[K,N]", bn, cl, st,
                         st > 0 ? cudaGetErrorString(cudaError_t(st)) : "");
                  ++failures;
                  continue;
                }
                const cudaError_t e = cudaStreamSynchronize(S);
                if (e != cudaSuccess) {
                  printf("   W%s %3d c%d: %s\n", wnk ? "[N,K]" : "[K,N]", bn, cl, cudaGetErrorString(e));
                  return 1;
                }
                CK(cudaMemcpy(got.data(), Y1, got.size() * 2, cudaMemcpyDeviceToHost));
                double maxd = 0, sumd = 0;
                size_t bad = 0;
                for (size_t i = 0; i < ref.size(); ++i) {
                  const double r = __half2float(ref[i]), d = std::fabs(r - double(__half2float(got[i])));
                  if (!(d <= 1e9)) {
                    maxd = INFINITY;
                    ++bad;
                    continue;
                  }
                  maxd = std::max(maxd, d);
                  sumd += d;
                  if (d > 0.02 + 0.01 * std::fabs(r)) ++bad;
                }
                failures += bad != 0;
                const double us = getenv("PROBE_NCU") ? 1 : graph_us([&] { return run() == 0; }, 200);
                if (us > 0) best_own = std::min(best_own, us);
                printf(
                    "   W%s tile %dx%3d cluster %d%s%s (%3d resident): %7.2f us (%.3fx cuBLASLt, %4.0f TFLOPS) | max "
                    "|diff| %.4f mean %.2e %s\n",
                    wnk ? "[N,K]" : "[K,N]", bm, bn, cl, pdl ? "" : " no-pdl", pp ? " PINGPONG" : "",
                    hg::last_grid_blocks(), us, us / lib_us, flops / us * 1e-6, maxd, sumd / ref.size(),
                    bad ? "MISMATCH" : "ok");
              }
    printf("   => best own %.2f us = %.3fx cuBLASLt\n", best_own, best_own / lib_us);
    cudaFree(A);
    cudaFree(W);
    cudaFree(Wt);
    cudaFree(B);
    cudaFree(R);
    cudaFree(Y0);
    cudaFree(Y1);
  }
  printf("failures: %d\n", failures);
  return failures ? 2 : 0;
}
