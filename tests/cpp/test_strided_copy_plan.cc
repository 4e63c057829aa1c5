// The strided-copy fast path's host planning (strided_copy_plan.h), checked without a GPU: for random transposes,
// slices, broadcasts and offsets, the units the kernel copies (vectorised or not) map every destination element to
// the same source element as the generic 64-bit mapping.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "backends/cuda/kernels/strided_copy_plan.h"

namespace k = kilnrt::cuda::kernels;

TEST(StridedCopyPlan, MatchesTheGenericMapping) {
  std::mt19937 rng(1);
  int vectorised = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    const int r = 1 + static_cast<int>(rng() % 5);
    const size_t es = size_t(1) << (rng() % 4);
    int64_t d[8], pad[8], sst[8], od[8], ost[8];
    for (int i = 0; i < r; ++i) d[i] = 1 + rng() % 5;
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
  }
  EXPECT_GT(vectorised, 100) << "the 16-byte path is exercised";
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
