// Microbenchmark of the mma.sync attention kernels, not a test: DISABLED_, run on a GPU machine with
//   kilnrt_tests --gtest_also_run_disabled_tests --gtest_filter='CudaAttentionMmaBench.*'
// For the zoo's attention shapes (BERT-base seq 128 with its [B, 1, 1, S] key mask, Q/K/V/O read in place as
// [B, S, H, D]; ViT-B/16 with 197 tokens as [S, B*H, D]; batch 1 / 8 / 32; one D = 128 shape; BERT / ViT b32 with
// contiguous [B, H, S, D] operands, the layout torch's SDPA is timed with, to show the layout's share; BERT with its
// mask as the export materialises it, [B, 1, S, S]) it times every
// variant of attention_mma (the first kernel "v1" and each configuration of the second) in float16: 10 launches
// captured in one CUDA graph (as an engine replays them), CUDA events around each replay, the median over 21
// replays / 10, L2-warm inputs. Each variant's output is compared with
// v1's (max |difference|; outputs are NaN-filled before each variant, so an unwritten element shows as NaN). Prints
// one line per shape and variant and the variant the shape rule picks. KILNRT_ATTENTION_BENCH_SHAPES and
// KILNRT_ATTENTION_TEST_VARIANTS (comma-separated names) narrow the shapes / variants, e.g. under ncu.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ops/nn/fused_attention/cuda/attention_mma.h"
#include "cuda_backend_test_util.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"

namespace kilnrt::cudatest {
namespace {

namespace k = kilnrt::cuda::kernels;

enum class Layout { kBSHD, kSBHD, kBHSD };  // BERT's in-place heads, ViT's sequence-first heads, contiguous heads

struct BenchShape {
  const char* name;
  int b, h, s, d;
  bool mask;  // a [B, 1, 1, S] key mask (BERT)
  Layout layout;
  bool row_mask = false;  // the mask as BERT's export gives it: [B, 1, S, S] (a row per query, equal rows)
};

// Whether `name` is in the comma-separated list in environment variable `var` (true when the variable is unset).
bool selected(const char* var, const std::string& name) {
  const char* env = std::getenv(var);
  if (!env || !*env) return true;
  const std::string list = std::string(",") + env + ",";
  return list.find("," + name + ",") != std::string::npos;
}

TEST(CudaAttentionMmaBench, DISABLED_KernelTimes) {
  KILNRT_SKIP_WITHOUT_GPU();
  using L = Layout;
  const BenchShape shapes[] = {{"bert-b32", 32, 12, 128, 64, true, L::kBSHD},
                               {"bert-b8", 8, 12, 128, 64, true, L::kBSHD},
                               {"bert-b1", 1, 12, 128, 64, true, L::kBSHD},
                               {"vit-b32", 32, 12, 197, 64, false, L::kSBHD},
                               {"vit-b8", 8, 12, 197, 64, false, L::kSBHD},
                               {"vit-b1", 1, 12, 197, 64, false, L::kSBHD},
                               {"d128-b8-h16-s512", 8, 16, 512, 128, false, L::kSBHD},
                               {"bert-b32-bhsd", 32, 12, 128, 64, true, L::kBHSD},
                               {"vit-b32-bhsd", 32, 12, 197, 64, false, L::kBHSD},
                               {"bert-b32-rowmask", 32, 12, 128, 64, true, L::kBSHD, true},
                               {"bert-b1-rowmask", 1, 12, 128, 64, true, L::kBSHD, true}};
  kilnrt::cuda::ContextGuard guard(0);
  kilnrt::cuda::Stream stream(0);
  kilnrt::cuda::Event e0(0, true), e1(0, true);
  const auto st = reinterpret_cast<k::StreamT>(stream.get());
  for (const BenchShape& sh : shapes) {
    if (!selected("KILNRT_ATTENTION_BENCH_SHAPES", sh.name)) continue;
    const size_t n = size_t(sh.b) * sh.h * sh.s * sh.d;
    std::vector<uint16_t> host(n), mask(size_t(sh.b) * sh.s * (sh.row_mask ? sh.s : 1));
    uint32_t seed = 12345;
    auto frand = [&] {
      seed = seed * 1664525u + 1013904223u;
      return ((seed >> 8) & 0xffff) / 32768.f - 1.f;
    };
    kilnrt::cuda::DeviceBuffer q(0, n * 2), kk(0, n * 2), v(0, n * 2), o(0, n * 2), o_ref(0, n * 2),
        m(0, mask.size() * 2);
    for (kilnrt::cuda::DeviceBuffer* buf : {&q, &kk, &v}) {
      for (auto& x : host) x = float_to_half(frand());
      buf->copy_from_host_async(host.data(), n * 2, stream.get());
      stream.synchronize();
    }
    for (size_t i = 0; i < mask.size(); ++i) mask[i] = float_to_half(i % sh.s % 7 == 3 ? -10000.f : 0.f);
    m.copy_from_host_async(mask.data(), mask.size() * 2, stream.get());
    k::AttentionArgs a;
    a.dt = 1;
    a.q = q.data();
    a.k = kk.data();
    a.v = v.data();
    a.o = o.data();
    a.mask = sh.mask ? m.data() : nullptr;
    a.b0 = sh.b;
    a.b1 = sh.h;
    a.sq = a.sk = sh.s;
    a.d = a.dv = sh.d;
    a.scale = 1.f / std::sqrt(float(sh.d));
    const int64_t e = int64_t(sh.h) * sh.d;
    const int64_t bshd[4] = {int64_t(sh.s) * e, sh.d, e, 1}, sbhd[4] = {e, sh.d, int64_t(sh.b) * e, 1},
                  bhsd[4] = {int64_t(sh.s) * e, int64_t(sh.s) * sh.d, sh.d, 1};
    const int64_t* strides = sh.layout == L::kBSHD ? bshd : sh.layout == L::kSBHD ? sbhd : bhsd;
    for (int i = 0; i < 4; ++i) a.qs[i] = a.ks[i] = a.vs[i] = a.os[i] = strides[i];
    a.ms[0] = int64_t(sh.s) * (sh.row_mask ? sh.s : 1);
    a.ms[1] = 0;
    a.ms[2] = sh.row_mask ? sh.s : 0;
    a.ms[3] = 1;
    ASSERT_TRUE(k::attention_uses_mma(a)) << sh.name;

    std::vector<uint16_t> ref(n), got(n);
    const int variants = k::attention_mma_variant_count();
    for (int var = 0; var < variants; ++var) {
      if (var > 0 && !selected("KILNRT_ATTENTION_TEST_VARIANTS", k::attention_mma_variant_name(var))) continue;
      k::AttentionArgs b = a;
      b.o = var == 0 ? o_ref.data() : o.data();
      (var == 0 ? o_ref : o).memset_async(0xff, stream.get());  // NaN
      ASSERT_EQ(k::attention_mma_variant(b, var, st), 0) << sh.name << " " << k::attention_mma_variant_name(var);
      const auto& api = guard.api();
      CUgraph graph = nullptr;
      CUgraphExec exec = nullptr;
      ASSERT_EQ(api.StreamBeginCapture(stream.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
      for (int i = 0; i < 10; ++i) k::attention_mma_variant(b, var, st);
      ASSERT_EQ(api.StreamEndCapture(stream.get(), &graph), CUDA_SUCCESS);
      ASSERT_EQ(api.GraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
      std::vector<float> samples;
      for (int rep = 0; rep < 22; ++rep) {
        e0.record(stream);
        api.GraphLaunch(exec, stream.get());
        e1.record(stream);
        e1.synchronize();
        if (rep > 0) samples.push_back(1000.f * kilnrt::cuda::Event::elapsed_ms(e0, e1) / 10.f);
      }
      api.GraphExecDestroy(exec);
      api.GraphDestroy(graph);
      std::sort(samples.begin(), samples.end());
      (var == 0 ? o_ref : o).copy_to_host_async(var == 0 ? ref.data() : got.data(), n * 2, stream.get());
      stream.synchronize();
      double md = 0;
      if (var > 0) {
        for (size_t i = 0; i < n; ++i) {
          const double d = std::fabs(double(half_to_float(got[i])) - double(half_to_float(ref[i])));
          md = std::isnan(d) ? INFINITY : std::max(md, d);
        }
      }
      std::printf("BENCH %-18s %-8s %8.2f us  max|diff vs v1| %.2e\n", sh.name, k::attention_mma_variant_name(var),
                  samples[samples.size() / 2], md);
      if (var > 0) {
        EXPECT_LT(md, 4e-3) << sh.name << " " << k::attention_mma_variant_name(var);
      }
    }
    std::printf("BENCH %-18s picked %s\n", sh.name, k::attention_mma_variant_name(k::attention_mma_pick(a)));
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
