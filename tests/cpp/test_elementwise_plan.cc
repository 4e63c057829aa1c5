// The fast elementwise kernels' host planning (src/cuda/kernels/elementwise_plan.h, elementwise_fast.h),
// checked without a GPU: for random shapes, broadcasts and pointer alignments, every output element reads, through
// the plan's units (vectorised or not) and scalar tail, the same input elements as the generic N-d broadcast mapping;
// and the cases of the BERT / ViT / SE-block profiles take the vectorised low-rank path.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "cuda/kernels/elementwise_fast.h"

namespace k = kilnrt::cuda::kernels;

namespace {

// Right-aligned broadcast strides of `in` over `out` (0 on broadcast dims), as make_broadcast computes them.
std::vector<int64_t> strides_of(const std::vector<int64_t>& out, const std::vector<int64_t>& in) {
  std::vector<int64_t> st(out.size(), 0);
  int64_t run = 1;
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    const int sd = d - static_cast<int>(out.size() - in.size());
    if (sd < 0) continue;
    st[d] = in[sd] == 1 ? 0 : run;
    run *= in[sd];
  }
  return st;
}

struct Case {
  std::vector<int64_t> out;
  std::vector<std::vector<int64_t>> ins;
};

bool plan_case(const Case& c, const std::vector<uintptr_t>& ptrs, size_t elem, k::ElementwisePlan* p) {
  int64_t st[k::kMaxElementwiseInputs][k::kMaxDims] = {};
  std::vector<size_t> elems(c.ins.size(), elem);
  for (size_t i = 0; i < c.ins.size(); ++i) {
    const auto s = strides_of(c.out, c.ins[i]);
    for (size_t d = 0; d < s.size(); ++d) st[i][d] = s[d];
  }
  return k::plan_elementwise(static_cast<int>(c.out.size()), c.out.data(), static_cast<int>(c.ins.size()), st,
                             ptrs.data(), elems.data(), 4096, elem, p);
}

// Checks that the plan maps output element i to input k's generic broadcast offset, for every i.
void expect_mapping(const Case& c, const k::ElementwisePlan& p, const std::string& label) {
  int64_t n = 1;
  for (int64_t d : c.out) n *= d;
  std::vector<std::vector<int64_t>> got(c.ins.size(), std::vector<int64_t>(n, -1));
  const int last = p.rank - 1;
  for (size_t kk = 0; kk < c.ins.size(); ++kk) {
    const int ki = static_cast<int>(kk);
    for (uint32_t u = 0; u < p.units; ++u) {
      const int32_t off = k::elementwise_unit_offset(p, ki, u);
      for (int v = 0; v < p.vec; ++v) got[kk][int64_t(u) * p.vec + v] = off + v * p.strides[ki][last];
    }
    for (uint32_t t = 0; t < p.tail; ++t) {
      const int64_t e = int64_t(p.units) * p.vec + t;
      got[kk][e] = e * p.strides[ki][0];
    }
  }
  for (size_t kk = 0; kk < c.ins.size(); ++kk) {
    const auto st = strides_of(c.out, c.ins[kk]);
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, want = 0;
      for (int d = static_cast<int>(c.out.size()) - 1; d >= 0; --d) {
        want += (rem % c.out[d]) * st[d];
        rem /= c.out[d];
      }
      ASSERT_EQ(got[kk][i], want) << label << ": input " << kk << ", element " << i << " (rank " << p.rank << ", vec "
                                  << p.vec << ", tail " << p.tail << ")";
    }
  }
}

}  // namespace

TEST(ElementwisePlan, MatchesTheGenericBroadcastMapping) {
  std::mt19937 rng(7);
  int vectorised = 0, with_tail = 0, low_rank = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Case c;
    const int r = 1 + static_cast<int>(rng() % 5);
    for (int d = 0; d < r; ++d) c.out.push_back(1 + rng() % 6);
    if (rng() % 2) c.out[r - 1] = 8 * (1 + rng() % 4) + (rng() % 4 == 0 ? rng() % 8 : 0);
    const int n_in = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n_in; ++i) {
      std::vector<int64_t> s = c.out;
      switch (rng() % 4) {
        case 0: break;                                             // same shape
        case 1: s = {1}; break;                                    // scalar
        case 2: s.erase(s.begin(), s.begin() + rng() % r); break;  // trailing dims (bias-like)
        default:
          for (auto& d : s)
            if (rng() % 2) d = 1;  // per-channel and friends
      }
      c.ins.push_back(s);
    }
    const size_t elem = size_t(1) << (rng() % 4);
    std::vector<uintptr_t> ptrs;
    for (int i = 0; i < n_in; ++i) ptrs.push_back(rng() % 5 == 0 ? 8192 + elem : 8192);
    k::ElementwisePlan p;
    ASSERT_TRUE(plan_case(c, ptrs, elem, &p)) << "iteration " << iter;
    vectorised += p.vec > 1;
    with_tail += p.tail > 0;
    low_rank += p.rank < r;
    expect_mapping(c, p, "iteration " + std::to_string(iter));
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(vectorised, 300) << "the 16-byte path is exercised";
  EXPECT_GT(with_tail, 30) << "the scalar tail is exercised";
  EXPECT_GT(low_rank, 300) << "dims get merged";
}

TEST(ElementwisePlan, ProfiledShapesTakeTheVectorisedLowRankPath) {
  k::ElementwisePlan p;
  // BERT residual Add, fp16 [32,128,768] + same: flat, 8 halves per unit.
  ASSERT_TRUE(plan_case({{32, 128, 768}, {{32, 128, 768}, {32, 128, 768}}}, {4096, 4096}, 2, &p));
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.vec, 8);
  EXPECT_EQ(p.units, 32u * 128 * 768 / 8);
  EXPECT_EQ(p.tail, 0u);
  // Attention-mask Add [32,12,128,128] + [32,1,1,128]: rank 3 [32, 1536, 128], mask strides [128, 0, 1].
  ASSERT_TRUE(plan_case({{32, 12, 128, 128}, {{32, 12, 128, 128}, {32, 1, 1, 128}}}, {4096, 4096}, 2, &p));
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.vec, 8);
  EXPECT_EQ(p.strides[1][0], 128);
  EXPECT_EQ(p.strides[1][1], 0);
  EXPECT_EQ(p.strides[1][2], 1);
  // Bias [.., C] + [C] in float32: rank 2, 4 floats per unit.
  ASSERT_TRUE(plan_case({{32, 197, 768}, {{32, 197, 768}, {768}}}, {4096, 4096}, 4, &p));
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.vec, 4);
  EXPECT_EQ(p.strides[1][0], 0);
  // SE scale [N,C,H,W] x [N,C,1,1]: rank 2 [N*C, HW], the scale splat along HW.
  ASSERT_TRUE(plan_case({{32, 96, 56, 56}, {{32, 96, 56, 56}, {32, 96, 1, 1}}}, {4096, 4096}, 2, &p));
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.vec, 8);
  EXPECT_EQ(p.strides[1][1], 0);
  // ... and [1,C,1,1]: rank 3 [N, C, HW].
  ASSERT_TRUE(plan_case({{32, 96, 56, 56}, {{32, 96, 56, 56}, {1, 96, 1, 1}}}, {4096, 4096}, 2, &p));
  EXPECT_EQ(p.rank, 3);
  // Where(cond [32,12,128,128], 0 scalar, x): flat, the condition read 8 bytes at a time.
  ASSERT_TRUE(
      plan_case({{32, 12, 128, 128}, {{32, 12, 128, 128}, {1}, {32, 12, 128, 128}}}, {4096, 4096, 4096}, 2, &p));
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.vec, 8);
  EXPECT_EQ(p.strides[1][0], 0);
  // Odd length: vectors plus a scalar tail; a misaligned operand: no vectors.
  ASSERT_TRUE(plan_case({{1001}, {{1001}, {1001}}}, {4096, 4096}, 2, &p));
  EXPECT_EQ(p.vec, 8);
  EXPECT_EQ(p.units, 125u);
  EXPECT_EQ(p.tail, 1u);
  ASSERT_TRUE(plan_case({{1024}, {{1024}, {1024}}}, {4096, 4098}, 2, &p));
  EXPECT_EQ(p.vec, 1);
  EXPECT_EQ(p.units, 1024u);
}

TEST(ElementwisePlan, RefusesWhatDoesNotFitAndOddOutputs) {
  k::ElementwisePlan p;
  EXPECT_FALSE(plan_case({{int64_t(1) << 31}, {{int64_t(1) << 31}}}, {4096}, 2, &p)) << "2^31 elements";
  ASSERT_TRUE(plan_case({{4, 0, 3}, {{4, 0, 3}}}, {4096}, 2, &p));
  EXPECT_EQ(p.units, 0u);
  EXPECT_EQ(p.tail, 0u);
  // Broadcast3 with a non-contiguous output description: refused (the generic kernel handles it).
  k::Broadcast3 bc;
  bc.rank = 2;
  bc.dims[0] = 4;
  bc.dims[1] = 8;
  bc.s0[0] = 1;
  bc.s0[1] = 4;
  bc.s1[0] = 8;
  bc.s1[1] = 1;
  bc.s2[1] = 1;
  const int inputs[2] = {1, 2};
  const uintptr_t ptrs[2] = {4096, 4096};
  const size_t elems[2] = {4, 4};
  EXPECT_FALSE(k::plan_broadcast3(bc, 32, inputs, 2, true, ptrs, elems, 4096, 4, &p));
  bc.s0[0] = 8;
  bc.s0[1] = 1;
  ASSERT_TRUE(k::plan_broadcast3(bc, 32, inputs, 2, true, ptrs, elems, 4096, 4, &p));
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.strides[1][0], 0);
  EXPECT_FALSE(k::plan_broadcast3(bc, 33, inputs, 2, true, ptrs, elems, 4096, 4, &p)) << "n disagrees with dims";
}
