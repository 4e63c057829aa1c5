// The LayerNorm kernels (src/ops/nn/normalization/cuda/layernorm.cu) at BERT / ViT b32's rows against copies of the
// same bytes, standalone (H100): is LayerNorm at the memory floor? For 4096 x 768 and 6304 x 768 float16 rows: the
// engine's dispatch (the persistent warps of layernorm_rows_kernel), the one-row-per-warp kernel
// (layernorm_vec_kernel: G 32 lanes per row, 3 vectors a lane; also G 16 x 6 and 8 x 12), a 16-byte copy kernel and
// cudaMemcpyAsync (device to device) of the rows. H100 figures (2026-11-23):
// bench/results/launch_overhead_attention_wgs_layernorm_h100_2026-11-23.md, raw output
// bench/results/layernorm_probe_h100_2026-11-23_raw.txt (whose "pers x2/x3/x4" rows are the persistent kernel with
// x / y __restrict__ on 2-4 blocks per SM; the probe does not build that form).
// µs per call: 200 launches back to back, 3 rounds; TB/s counts the bytes read and written. Every variant's output is
// compared with the dispatch's (exit status 1 on a mismatch). Build:
//   nvcc -std=c++17 -O3 -arch=sm_90 -Isrc -Iinclude -o layernorm_probe bench/layernorm_probe.cu
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ops/nn/normalization/cuda/layernorm.cu"
#include "probe_check.cuh"

__global__ void copy16(const uint4* __restrict__ x, uint4* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = x[i];
}

int main() {
  using namespace kilnrt::cuda::kernels;
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  const int64_t shapes[][2] = {{4096, 768}, {6304, 768}};
  int fails = 0;
  for (const auto& sh : shapes) {
    const int64_t rows = sh[0], n = sh[1], count = rows * n, bytes = count * 2;
    const int nvec = static_cast<int>(n * 2 / 16);
    std::vector<__half> hx(count), hs(n), hb(n);
    uint32_t seed = 7u;
    auto rnd = [&] {
      seed = seed * 1664525u + 1013904223u;
      return ((seed >> 8) & 0xffff) / 32768.f - 1.f;
    };
    for (auto& v : hx) v = __float2half(rnd() * 3.f);
    for (int64_t i = 0; i < n; ++i) {
      hs[i] = __float2half(1.f + 0.1f * rnd());
      hb[i] = __float2half(0.1f * rnd());
    }
    void *x, *y, *y2, *sc, *bi;
    CK(cudaMalloc(&x, bytes));
    CK(cudaMalloc(&y, bytes));
    CK(cudaMalloc(&y2, bytes));
    CK(cudaMalloc(&sc, n * 2));
    CK(cudaMalloc(&bi, n * 2));
    CK(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(sc, hs.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(bi, hb.data(), n * 2, cudaMemcpyHostToDevice));
    const LayerNormEmbed e{};
    const char* names[] = {"dispatch", "g16x6", "g8x12", "copy16", "memcpy", "vec g32x3"};
    auto run = [&](int kind, void* out) -> int {
      switch (kind) {
        case 0: return layernorm_vec(1, x, sc, bi, out, nullptr, nullptr, rows, n, 1e-12f, nullptr);
        case 1: return launch<__half, 16, 6>(x, sc, bi, out, nullptr, nullptr, rows, nvec, 1e-12f, e, nullptr);
        case 2: return launch<__half, 8, 12>(x, sc, bi, out, nullptr, nullptr, rows, nvec, 1e-12f, e, nullptr);
        case 3:
          copy16<<<132 * 8, 256>>>(static_cast<const uint4*>(x), static_cast<uint4*>(out), bytes / 16);
          return static_cast<int>(cudaGetLastError());
        case 4: return static_cast<int>(cudaMemcpyAsync(out, x, bytes, cudaMemcpyDeviceToDevice));
        default: return launch<__half, 32, 3>(x, sc, bi, out, nullptr, nullptr, rows, nvec, 1e-12f, e, nullptr);
      }
    };
    CK(run(0, y));
    std::vector<__half> ref(count), got(count);
    CK(cudaMemcpy(ref.data(), y, bytes, cudaMemcpyDeviceToHost));
    for (int kind : {1, 2, 5}) {
      CK(cudaMemset(y2, 0, bytes));
      CK(run(kind, y2));
      CK(cudaMemcpy(got.data(), y2, bytes, cudaMemcpyDeviceToHost));
      float worst = 0.f;
      for (int64_t i = 0; i < count; ++i)
        worst = std::max(worst, std::fabs(__half2float(ref[i]) - __half2float(got[i])));
      const bool ok = worst <= 2e-3f;
      fails += !ok;
      std::printf("%lldx%lld %s: max |diff| against the dispatch %.3e %s\n", (long long)rows, (long long)n, names[kind],
                  worst, ok ? "ok" : "MISMATCH");
    }
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int round = 0; round < 3; ++round) {
      std::printf("%lldx%lld round %d:", (long long)rows, (long long)n, round);
      for (int kind = 0; kind < 6; ++kind) {
        for (int w = 0; w < 20; ++w) CK(run(kind, y));
        CK(cudaEventRecord(e0));
        for (int it = 0; it < 200; ++it) run(kind, y);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0.f;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        const double us = ms * 5.0;
        std::printf("  %s %.2f us (%.2f TB/s)", names[kind], us, 2.0 * bytes / (us * 1e-6) / 1e12);
      }
      std::printf("\n");
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    for (void* p : {x, y, y2, sc, bi}) CK(cudaFree(p));
  }
  std::printf("%s\n", fails ? "FAILED" : "ALL OK");
  return fails ? 1 : 0;
}
