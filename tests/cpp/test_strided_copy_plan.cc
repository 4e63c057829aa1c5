// The strided-copy fast path's host planning (strided_copy_plan.h), checked without a GPU: for random transposes,
// slices, broadcasts and offsets, the units the kernel copies (vectorised or not) map every destination element to
// the same source element as the generic 64-bit mapping.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "cuda/kernels/gather_plan.h"
#include "cuda/kernels/strided_copy_plan.h"

namespace k = kilnrt::cuda::kernels;

TEST(StridedCopyPlan, MatchesTheGenericMapping) {
  std::mt19937 rng(1);
  int vectorised = 0, tiled = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    const int r = 1 + static_cast<int>(rng() % 5);
    const size_t es = size_t(1) << (rng() % 4);
    int64_t d[8], pad[8], sst[8], od[8], ost[8];
    for (int i = 0; i < r; ++i) d[i] = 1 + rng() % 5;
    if (rng() % 3 == 0) d[rng() % r] = 8 + rng() % 24;  // large enough for the tiled transpose
    if (rng() % 4 == 0) d[rng() % r] = 8 + rng() % 8;
    if (rng() % 3 == 0) d[r - 1] = 8 * (1 + rng() % 3);
    std::vector<int> perm(r);
    for (int i = 0; i < r; ++i) perm[i] = i;
    if (rng() % 2) std::shuffle(perm.begin(), perm.end(), rng);
    for (int i = 0; i < r; ++i) pad[i] = d[i] + (rng() % 4 == 0 ? rng() % 3 : 0);  // a slice of a larger tensor
    sst[r - 1] = 1;
    for (int i = r - 2; i >= 0; --i) sst[i] = sst[i + 1] * pad[i + 1];
    for (int i = 0; i < r; ++i) od[i] = d[perm[i]];
    ost[r - 1] = 1;
    for (int i = r - 2; i >= 0; --i) ost[i] = ost[i + 1] * od[i + 1];
    k::Strided s;
    s.rank = r;
    for (int i = 0; i < r; ++i) {
      s.dims[i] = od[i];
      s.out_strides[i] = ost[i];
      s.in_strides[i] = sst[perm[i]];
    }
    if (rng() % 4 == 0) s.in_strides[rng() % r] = 0;  // Expand
    s.in_offset = rng() % 3 == 0 ? (rng() % 4) * 8 : 0;
    s.out_offset = rng() % 3 == 0 ? (rng() % 4) * 8 : 0;
    std::map<int64_t, int64_t> want, got;
    int64_t n = 1;
    for (int i = 0; i < r; ++i) n *= s.dims[i];
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, o = s.out_offset, in = s.in_offset;
      for (int q = r - 1; q >= 0; --q) {
        const int64_t idx = rem % s.dims[q];
        rem /= s.dims[q];
        o += idx * s.out_strides[q];
        in += idx * s.in_strides[q];
      }
      want[o] = in;
    }
    const uintptr_t dst = rng() % 2 ? 4096 : 4096 + es, src = 8192;
    k::StridedCopyPlan p;
    ASSERT_TRUE(k::plan_strided_copy(s, es, dst, src, &p)) << "iteration " << iter;
    const int64_t v = static_cast<int64_t>(p.unit / es);
    vectorised += p.unit == 16;
    for (uint32_t i = 0; i < p.n; ++i) {
      int32_t o = 0, in = 0;
      k::strided_copy_unit(p.s, i, &o, &in);
      for (int64_t e = 0; e < v; ++e) got[int64_t(o) * v + e] = int64_t(in) * v + e;
    }
    ASSERT_EQ(got, want) << "iteration " << iter << ", rank " << r << ", element size " << es << ", unit " << p.unit;
    if (p.tiled) {  // what the tiled transpose kernel copies: (batch, a, b) over the whole index space
      ++tiled;
      std::map<int64_t, int64_t> t;
      for (uint32_t bi = 0; bi < p.t.batches; ++bi) {
        int32_t ob = 0, ib = 0;
        k::tiled_transpose_batch(p.t.batch, bi, &ob, &ib);
        for (uint32_t a = 0; a < p.t.a; ++a)
          for (uint32_t b = 0; b < p.t.b; ++b)
            t[int64_t(ob) + int64_t(a) * p.t.out_a_stride + b] = int64_t(ib) + a + int64_t(b) * p.t.in_b_stride;
      }
      ASSERT_EQ(t, want) << "tiled, iteration " << iter << ", rank " << r;
    }
  }
  EXPECT_GT(vectorised, 100) << "the 16-byte path is exercised";
  EXPECT_GT(tiled, 50) << "the tiled transpose is exercised";
}

TEST(StridedCopyPlan, RefusesWhatDoesNotFit32Bits) {
  k::Strided s;
  s.rank = 2;
  s.dims[0] = 3;
  s.dims[1] = 1 << 20;
  s.out_strides[0] = 1;
  s.out_strides[1] = 3;
  s.in_strides[0] = int64_t(1) << 40;  // offsets beyond 2^31
  s.in_strides[1] = 1;
  k::StridedCopyPlan p;
  EXPECT_FALSE(k::plan_strided_copy(s, 4, 0, 0, &p));
  s.dims[1] = 0;  // empty: nothing to copy, handled by the fast path
  EXPECT_TRUE(k::plan_strided_copy(s, 4, 0, 0, &p));
  EXPECT_EQ(p.n, 0u);
}

namespace {
k::Strided transpose_of(const std::vector<int64_t>& in, const std::vector<int>& perm) {
  const int r = static_cast<int>(in.size());
  std::vector<int64_t> ist(r, 1), od(r), ost(r, 1);
  for (int i = r - 2; i >= 0; --i) ist[i] = ist[i + 1] * in[i + 1];
  for (int i = 0; i < r; ++i) od[i] = in[perm[i]];
  for (int i = r - 2; i >= 0; --i) ost[i] = ost[i + 1] * od[i + 1];
  k::Strided s;
  s.rank = r;
  for (int i = 0; i < r; ++i) {
    s.dims[i] = od[i];
    s.in_strides[i] = ist[perm[i]];
    s.out_strides[i] = ost[i];
  }
  return s;
}
}  // namespace

// The profiled transposes take the intended path: attention's head split [B,S,H,D] -> [B,H,S,D] copies rows of D as
// 16-byte vectors; K^T (last two swapped) and NCHW <-> NHWC run as tiled transposes.
TEST(StridedCopyPlan, ProfiledTransposesTakeTheFastKernels) {
  k::StridedCopyPlan p;
  ASSERT_TRUE(k::plan_strided_copy(transpose_of({32, 128, 12, 64}, {0, 2, 1, 3}), 2, 4096, 8192, &p));
  EXPECT_EQ(p.unit, 16u);
  EXPECT_FALSE(p.tiled);
  EXPECT_EQ(p.n, 32u * 128 * 12 * 64 / 8);
  ASSERT_TRUE(k::plan_strided_copy(transpose_of({32, 12, 128, 64}, {0, 1, 3, 2}), 2, 4096, 8192, &p));
  ASSERT_TRUE(p.tiled);
  EXPECT_EQ(p.t.a, 64u);
  EXPECT_EQ(p.t.b, 128u);
  EXPECT_EQ(p.t.batches, 32u * 12);
  EXPECT_EQ(p.t.in_b_stride, 64);
  EXPECT_EQ(p.t.out_a_stride, 128);
  ASSERT_TRUE(k::plan_strided_copy(transpose_of({32, 96, 56, 56}, {0, 2, 3, 1}), 2, 4096, 8192, &p));  // -> NHWC
  ASSERT_TRUE(p.tiled);
  EXPECT_EQ(p.t.a, 56u * 56);
  EXPECT_EQ(p.t.b, 96u);
  EXPECT_EQ(p.t.batches, 32u);
  ASSERT_TRUE(k::plan_strided_copy(transpose_of({32, 56, 56, 96}, {0, 3, 1, 2}), 2, 4096, 8192, &p));  // -> NCHW
  ASSERT_TRUE(p.tiled);
  EXPECT_EQ(p.t.a, 96u);
  EXPECT_EQ(p.t.b, 56u * 56);
  // ViT's [B,S,3,E] -> [3,B,S,E] moves rows of E: vectors, not tiles.
  ASSERT_TRUE(k::plan_strided_copy(transpose_of({32, 197, 3, 768}, {2, 0, 1, 3}), 2, 4096, 8192, &p));
  EXPECT_EQ(p.unit, 16u);
  EXPECT_FALSE(p.tiled);
  // A 2-D transpose too narrow for tiles copies element by element.
  ASSERT_TRUE(k::plan_strided_copy(transpose_of({4, 1000}, {1, 0}), 4, 4096, 8192, &p));
  EXPECT_FALSE(p.tiled);
}

// kernels::gather's fast path (gather_plan.h): for random shapes, element sizes, alignments and indices (negative
// and out of range included), the units map every output element to the generic kernel's source element (or zero).
TEST(GatherPlan, MatchesTheGenericMapping) {
  std::mt19937 rng(3);
  int vectorised = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    const int64_t outer = 1 + rng() % 4, axis = 1 + rng() % 6, n_idx = 1 + rng() % 5;
    const int64_t inner = rng() % 2 ? 8 * (1 + rng() % 6) : 1 + rng() % 13;
    const size_t es = size_t(1) << (rng() % 4);
    std::vector<int64_t> idx(n_idx);
    for (auto& k : idx) k = static_cast<int64_t>(rng() % (2 * axis + 2)) - axis - 1;  // [-axis-1, axis]
    const uintptr_t x = rng() % 4 ? 4096 : 4096 + es, y = 8192;
    k::GatherPlan p;
    ASSERT_TRUE(k::plan_gather(outer, axis, n_idx, inner, es, x, y, &p));
    const int64_t v = static_cast<int64_t>(p.unit / es);
    vectorised += p.unit == 16;
    ASSERT_EQ(int64_t(p.units) * v, outer * n_idx * inner) << "iteration " << iter;
    for (uint32_t u = 0; u < p.units; ++u) {
      int64_t kk = idx[k::gather_index_position(p, u)];
      if (kk < 0) kk += axis;
      const bool valid = kk >= 0 && kk < axis;
      for (int64_t e = 0; e < v; ++e) {
        const int64_t i = int64_t(u) * v + e;  // output element
        const int64_t in = i % inner, j = (i / inner) % n_idx, o = i / (inner * n_idx);
        int64_t want_k = idx[j];
        if (want_k < 0) want_k += axis;
        const bool want_valid = want_k >= 0 && want_k < axis;
        ASSERT_EQ(valid, want_valid) << "iteration " << iter << " element " << i;
        if (valid) {
          ASSERT_EQ(int64_t(k::gather_source_unit(p, u, uint32_t(kk))) * v + e, (o * axis + want_k) * inner + in)
              << "iteration " << iter << " element " << i;
        }
      }
    }
  }
  EXPECT_GT(vectorised, 200) << "the 16-byte path is exercised";
  k::GatherPlan p;
  EXPECT_FALSE(k::plan_gather(1, int64_t(1) << 20, 1, (int64_t(1) << 12) + 1, 2, 0, 0, &p))
      << "source beyond 2^31 units";
  // ViT's select (q / k / v from [3, S, B, E]): one 16-byte unit per 8 halves, 32-bit.
  ASSERT_TRUE(k::plan_gather(1, 3, 1, 197 * 32 * 768, 2, 4096, 8192, &p));
  EXPECT_EQ(p.unit, 16u);
  EXPECT_EQ(p.units, 197u * 32 * 768 / 8);
}
