// The wgmma attention kernel (ops/nn/fused_attention/cuda/attention_wgmma.cuh) against the short mma.sync kernel
// (attention_short.cuh), standalone (H100). For BERT / ViT shapes at batch 1 / 32 and two others, fp16: every
// output element of wg (WG_TILES 64-row tiles per block) against short4, and a float64 CPU reference on two heads;
// then back-to-back launch times (200 launches, 3 rounds) of short4, wg and wg2. The persistent prefetching variant
// (attention_wgp.cuh), where it applies (128 / 256 keys): its outputs checked the same way in three configurations
// (stages x blocks per SM: 2 x as many as fit, 2 x 1, 3 x 1), timed beside the others, and its ablations
// (attention_wgp.cuh: no softmax / no wgmma / no copies / no stores, and combinations) timed for the differences.
// The streamed-Q variant (attention_wgs: up to 4 tiles of one entry per block, Q double-buffered), checked and timed
// at every shape. H100 figures: bench/results/attention_short_wgmma_h100_2026-11-23.md,
// attention_wgp_gemm_weight_layout_h100_2026-11-23.md, launch_overhead_attention_wgs_layernorm_h100_2026-11-23.md.
// Exit status 1 on a mismatch. Build (sm_90a for wgmma; the kernels are header templates, cudart static):
//   nvcc -std=c++17 -O3 -arch=sm_90a -DWG_TILES=1 -Isrc -Iinclude -o attention_wgmma_probe \
//       bench/attention_wgmma_probe.cu
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ops/nn/fused_attention/cuda/attention_wgmma.cuh"
#include "attention_wgp.cuh"
#include "probe_check.cuh"

#ifndef WG_TILES
#define WG_TILES 1  // tiles per block of the wg run whose outputs are checked
#endif

using namespace kilnrt::cuda::kernels;
using namespace kilnrt::cuda::kernels::attention_mma_detail;

static float h2f(uint16_t h) {
  __half x;
  *reinterpret_cast<uint16_t*>(&x) = h;
  return __half2float(x);
}
static uint16_t f2h(float f) {
  const __half x = __float2half(f);
  return *reinterpret_cast<const uint16_t*>(&x);
}

struct Shape {
  const char* name;
  int b, h, s;
  bool mask;       // a [B, 1, 1, S] key mask
  bool seq_first;  // [S, B, H, D] (ViT) or [B, S, H, D] (BERT)
};

// Max |got - reference| over heads (0, 0) and (B - 1, H - 1), float64 softmax(0.125 Q K^T + mask) V.
static double cpu_check(const Shape& sh, const int64_t (&st)[4], const std::vector<uint16_t>& q,
                        const std::vector<uint16_t>& k, const std::vector<uint16_t>& v, const std::vector<uint16_t>& m,
                        const std::vector<uint16_t>& got) {
  const int S = sh.s, D = 64;
  double worst = 0;
  for (int which = 0; which < 2; ++which) {
    const int64_t base = (which ? sh.b - 1 : 0) * st[0] + (which ? sh.h - 1 : 0) * st[1];
    const int bb = which ? sh.b - 1 : 0;
    for (int i = 0; i < S; ++i) {
      std::vector<double> sc(S);
      double mx = -1e300;
      for (int j = 0; j < S; ++j) {
        double acc = 0;
        for (int d = 0; d < D; ++d) acc += double(h2f(q[base + i * st[2] + d])) * h2f(k[base + j * st[2] + d]);
        acc *= 0.125;
        if (sh.mask) acc += h2f(m[bb * S + j]);
        sc[j] = acc;
        mx = std::max(mx, acc);
      }
      double sum = 0;
      for (int j = 0; j < S; ++j) sum += sc[j] = std::exp(sc[j] - mx);
      for (int d = 0; d < D; ++d) {
        double acc = 0;
        for (int j = 0; j < S; ++j) acc += sc[j] * h2f(v[base + j * st[2] + d]);
        worst = std::max(worst, std::fabs(acc / sum - h2f(got[base + i * st[2] + d])));
      }
    }
  }
  return worst;
}

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // a hang still shows how far the probe got
  const Shape shapes[] = {{"vit-b32", 32, 12, 197, false, true},     {"bert-b32", 32, 12, 128, true, false},
                          {"vit-b1", 1, 12, 197, false, true},       {"bert-b1", 1, 12, 128, true, false},
                          {"s256-b4-mask", 4, 12, 256, true, false}, {"s180-b4", 4, 12, 180, false, true}};
  int fails = 0;
  for (const Shape& sh : shapes) {
    const int B = sh.b, H = sh.h, S = sh.s, D = 64;
    const size_t n = size_t(B) * H * S * D;
    std::vector<uint16_t> hq(n), hk(n), hv(n), hm(size_t(B) * S);
    uint32_t seed = 1234567u + S;
    auto rnd = [&] {
      seed = seed * 1664525u + 1013904223u;
      return ((seed >> 8) & 0xffff) / 32768.f - 1.f;
    };
    for (auto* t : {&hq, &hk, &hv})
      for (auto& x : *t) x = f2h(rnd() * 2.f);
    // Masked keys: every 7th, and the second half of batch entry 0's keys.
    for (size_t i = 0; i < hm.size(); ++i)
      hm[i] = f2h((i % S) % 7 == 3 || (i / S == 0 && int(i % S) > S / 2) ? -10000.f : 0.f);
    void *q, *k, *v, *m, *o_short, *o_wg;
    CK(cudaMalloc(&q, n * 2));
    CK(cudaMalloc(&k, n * 2));
    CK(cudaMalloc(&v, n * 2));
    CK(cudaMalloc(&m, hm.size() * 2));
    CK(cudaMalloc(&o_short, n * 2));
    CK(cudaMalloc(&o_wg, n * 2));
    CK(cudaMemcpy(q, hq.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(k, hk.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(v, hv.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(m, hm.data(), hm.size() * 2, cudaMemcpyHostToDevice));
    AttentionArgs a;
    a.dt = 1;
    a.q = q;
    a.k = k;
    a.v = v;
    a.o = o_short;
    a.mask = sh.mask ? m : nullptr;
    a.b0 = B;
    a.b1 = H;
    a.sq = a.sk = S;
    a.d = a.dv = D;
    a.scale = 0.125f;
    const int64_t st[4] = {sh.seq_first ? int64_t(H) * D : int64_t(S) * H * D, D,
                           sh.seq_first ? int64_t(B) * H * D : int64_t(H) * D, 1};
    for (int i = 0; i < 4; ++i) a.qs[i] = a.ks[i] = a.vs[i] = a.os[i] = st[i];
    if (sh.mask) {
      a.ms[0] = S;
      a.ms[3] = 1;
    }
    if (!short_supports(a)) {
      std::printf("%s: the short kernel does not take it\n", sh.name);
      continue;
    }
    AttentionArgs aw = a;
    aw.o = o_wg;
    CK(launch_short<__half, 4>(a, nullptr));
    CK(launch_wg<__half, WG_TILES>(aw, nullptr));
    CK(cudaDeviceSynchronize());
    std::vector<uint16_t> r_short(n), r_wg(n);
    CK(cudaMemcpy(r_short.data(), o_short, n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(r_wg.data(), o_wg, n * 2, cudaMemcpyDeviceToHost));
    double diff = 0;
    for (size_t i = 0; i < n; ++i) diff = std::max(diff, double(std::fabs(h2f(r_short[i]) - h2f(r_wg[i]))));
    const double ref = cpu_check(sh, st, hq, hk, hv, hm, r_wg);
    const bool ok = diff < 2e-2 && ref < 2e-2;  // NaN fails
    fails += !ok;
    std::printf("%-14s max|wg - short4| %.3e  max|wg - cpu f64| %.3e  %s\n", sh.name, diff, ref,
                ok ? "ok" : "MISMATCH");
    // Every output element of a variant (launched into o_wg after zeroing it) against short4 and the reference.
    auto check = [&](const char* label, int launch_status) {
      CK(launch_status);
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(r_wg.data(), o_wg, n * 2, cudaMemcpyDeviceToHost));
      double d = 0;
      for (size_t i = 0; i < n; ++i) d = std::max(d, double(std::fabs(h2f(r_short[i]) - h2f(r_wg[i]))));
      const double rf = cpu_check(sh, st, hq, hk, hv, hm, r_wg);
      const bool good = d < 2e-2 && rf < 2e-2;
      fails += !good;
      std::printf("%-14s %s: max|got - short4| %.3e  max|got - cpu f64| %.3e  %s\n", sh.name, label, d, rf,
                  good ? "ok" : "MISMATCH");
    };
    // The streamed-Q variant (attention_wgs).
    CK(cudaMemset(o_wg, 0, n * 2));
    check("wgs", launch_wg<__half, 0>(aw, nullptr));
    // The persistent prefetching variant (attention_wgp.cuh): outputs in three configurations.
    const bool wgp = wgp_supports(aw);
    if (wgp) {
      for (int cfg = 0; cfg < 3; ++cfg) {
        const char* cfg_name = cfg == 0   ? "2 stages, blocks that fit"
                               : cfg == 1 ? "2 stages, 1 block/SM"
                                          : "3 stages, 1 block/SM";
        CK(cudaMemset(o_wg, 0, n * 2));
        const int st_launch = cfg == 0   ? launch_wgp<__half, 2>(aw, 0, nullptr)
                              : cfg == 1 ? launch_wgp<__half, 2>(aw, 1, nullptr)
                                         : launch_wgp<__half, 3>(aw, 1, nullptr);
        if (st_launch == int(cudaErrorInvalidConfiguration)) {
          std::printf("%-14s wgp %s: does not fit in shared memory\n", sh.name, cfg_name);
          continue;
        }
        check((std::string("wgp ") + cfg_name).c_str(), st_launch);
      }
    } else {
      std::printf("%-14s wgp: not applicable (key range or mask layout)\n", sh.name);
    }
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    // Kinds: 0 short4, 1 wg, 2 wg2, then wgp: 3 (2 stages, blocks that fit), 4 (2 stages, 1 block/SM), 5 (3 stages,
    // 1 block/SM); ablations of kind 3: 6 no softmax, 7 no wgmma, 8 no copies, 9 no stores, 10 copies + stores only
    // (no softmax, no wgmma), 11 math only (no copies, no stores), 12 nothing (the persistent loop and barriers).
    const char* names[] = {"short4", "wg",      "wg2",     "wgp2",       "wgp2x1",    "wgp3x1",   "-softmax",
                           "-wgmma", "-copies", "-stores", "copy+store", "math only", "skeleton", "wgs"};
    // Timed kinds: short4, wg, wg2, wgs, then the wgp kinds where wgp applies.
    std::vector<int> kinds = {0, 1, 2, 13};
    for (int kind = 3; wgp && kind < 13; ++kind) kinds.push_back(kind);
    auto run = [&](int kind) -> int {
      switch (kind) {
        case 13: return launch_wg<__half, 0>(aw, nullptr);
        case 0: return launch_short<__half, 4>(a, nullptr);
        case 1: return launch_wg<__half, 1>(aw, nullptr);
        case 2: return launch_wg<__half, 2>(aw, nullptr);
        case 3: return launch_wgp<__half, 2>(aw, 0, nullptr);
        case 4: return launch_wgp<__half, 2>(aw, 1, nullptr);
        case 5: return launch_wgp<__half, 3>(aw, 1, nullptr);
        case 6: return launch_wgp<__half, 2, 1>(aw, 0, nullptr);
        case 7: return launch_wgp<__half, 2, 2>(aw, 0, nullptr);
        case 8: return launch_wgp<__half, 2, 4>(aw, 0, nullptr);
        case 9: return launch_wgp<__half, 2, 8>(aw, 0, nullptr);
        case 10: return launch_wgp<__half, 2, 3>(aw, 0, nullptr);
        case 11: return launch_wgp<__half, 2, 12>(aw, 0, nullptr);
        default: return launch_wgp<__half, 2, 15>(aw, 0, nullptr);
      }
    };
    for (int round = 0; round < 3; ++round) {
      std::printf("  round %d:", round);
      for (int kind : kinds) {
        float ms = 0.f;
        const int first = run(kind);
        if (first == int(cudaErrorInvalidConfiguration)) {
          std::printf("  %s n/a", names[kind]);
          continue;
        }
        CK(first);
        for (int w = 0; w < 20; ++w) CK(run(kind));
        CK(cudaEventRecord(e0));
        for (int it = 0; it < 200; ++it) run(kind);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        std::printf("  %s %.2f", names[kind], ms * 5.f);
      }
      std::printf("  (us)\n");
    }
    CK(cudaGetLastError());
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    for (void* p : {q, k, v, m, o_short, o_wg}) CK(cudaFree(p));
  }
  std::printf("%s\n", fails ? "FAILED" : "ALL OK");
  return fails ? 1 : 0;
}
