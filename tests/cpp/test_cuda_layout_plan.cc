// Layout choice of 16-bit CUDA engines (backends/cuda/layout_plan.h): which values are stored NHWC and where the
// plan reformats. Pure host logic: runs without a GPU.
#include <gtest/gtest.h>

#include "backends/cuda/layout_plan.h"
#include "conv_fusion_test_util.h"

using namespace kilnrt::backends::cuda;
using kilnrt::Shape;

namespace {

// Steps are added with their slots; slots are numbered as they appear.
struct Problem {
  LayoutProblem p;
  void slots(size_t n, bool rank4 = true) {
    p.rank4.assign(n, rank4 ? 1 : 0);
    p.pinned_nchw.assign(n, 0);
  }
  size_t step(std::vector<int> in, std::vector<int> out, bool capable, bool alias = false, bool island = false) {
    LayoutStep s;
    s.device = true;
    s.nhwc_capable = capable;
    s.alias = alias;
    s.island = island;
    s.inputs = std::move(in);
    s.outputs = std::move(out);
    p.steps.push_back(s);
    return p.steps.size() - 1;
  }
  size_t kind(LayoutKind k, std::vector<int> in, std::vector<int> out) {
    const size_t i = step(std::move(in), std::move(out), false);
    p.steps[i].kind = k;
    return i;
  }
};

}  // namespace

TEST(CudaLayoutPlan, ResNetStemBlockAndHead) {
  // 0 x (input) -conv-> 1 -maxpool-> 2 -conv-> 3 -fusedconv(X=3, W=7, B=-1, Z=2)-> 4 -gap-> 5 -flatten(alias)-> 6
  Problem t;
  t.slots(8);
  t.p.pinned_nchw[0] = 1;  // graph input
  t.p.pinned_nchw[7] = 1;  // constant weights
  t.p.rank4[6] = 0;
  t.p.pinned_nchw[6] = 1;  // graph output
  const size_t stem = t.step({0, 7}, {1}, true);
  const size_t pool = t.step({1}, {2}, false);
  const size_t c2 = t.step({2, 7}, {3}, true);
  const size_t c3 = t.step({3, 7, -1, 2}, {4}, true);
  const size_t gap = t.step({4}, {5}, false);
  t.step({5}, {6}, false, /*alias=*/true);
  const LayoutDecision d = decide_layouts(t.p);
  EXPECT_EQ(d.nhwc_slot, (std::vector<uint8_t>{0, 1, 0, 1, 1, 0, 0, 0}));
  EXPECT_TRUE(d.step_nhwc[stem] && d.step_nhwc[c2] && d.step_nhwc[c3]);
  EXPECT_FALSE(d.step_nhwc[pool] || d.step_nhwc[gap]);
  EXPECT_EQ(d.reformat[stem], (std::vector<int8_t>{1, 0}));      // graph input -> NHWC
  EXPECT_EQ(d.reformat[pool], (std::vector<int8_t>{-1}));        // MaxPool reads NCHW
  EXPECT_EQ(d.reformat[c2], (std::vector<int8_t>{1, 0}));        // pooled value -> NHWC
  EXPECT_EQ(d.reformat[c3], (std::vector<int8_t>{0, 0, 0, 1}));  // the residual too; weights never
  EXPECT_EQ(d.reformat[gap], (std::vector<int8_t>{-1}));
  EXPECT_EQ(d.reformats, 5u);
}

TEST(CudaLayoutPlan, AliasIslandOutputsAndRanksStayNchw) {
  // 0 in -conv-> 1 -reshape(alias)-> 2 ; 0 -conv-> 3 -island-> 4 ; 0 -conv-> 5 (graph output) ; 6 (rank 3) -conv-> 7
  Problem t;
  t.slots(8);
  t.p.pinned_nchw[0] = t.p.pinned_nchw[5] = 1;
  t.p.rank4[6] = t.p.rank4[7] = 0;
  const size_t a = t.step({0}, {1}, true);
  t.step({1}, {2}, false, /*alias=*/true);
  const size_t b = t.step({0}, {3}, true);
  t.step({3}, {4}, false, false, /*island=*/true);
  const size_t c = t.step({0}, {5}, true);
  const size_t d1 = t.step({6}, {7}, true);
  const LayoutDecision d = decide_layouts(t.p);
  for (uint8_t v : d.nhwc_slot) EXPECT_EQ(v, 0);
  for (size_t s : {a, b, c, d1}) EXPECT_FALSE(d.step_nhwc[s]) << "step " << s;
  EXPECT_EQ(d.reformats, 0u) << "nothing is NHWC, so nothing is reformatted";
}

TEST(CudaLayoutPlan, ChainOfConvsNeedsReformatsOnlyAtTheEnds) {
  // in 0 -> conv -> 1 -> conv -> 2 -> conv -> 3 -> conv -> 4 (output)
  Problem t;
  t.slots(5);
  t.p.pinned_nchw[0] = t.p.pinned_nchw[4] = 1;
  for (int i = 0; i < 4; ++i) t.step({i}, {i + 1}, true);
  const LayoutDecision d = decide_layouts(t.p);
  EXPECT_EQ(d.nhwc_slot, (std::vector<uint8_t>{0, 1, 1, 1, 0}));
  EXPECT_EQ(d.reformats, 2u);
  EXPECT_EQ(d.reformat[0][0], 1);   // input -> NHWC
  EXPECT_EQ(d.reformat[3][0], -1);  // the last conv writes the NCHW output, so it runs NCHW on a reformatted input
  EXPECT_FALSE(d.step_nhwc[3]);
}

TEST(CudaLayoutPlan, SqueezeExciteStaysNhwcWithoutReformats) {
  // EfficientNet block: 0 in -conv-> 1 -ReduceMean(H,W)-> 2 [N,C,1,1] -conv-> 3 -conv+sigmoid-> 4 ; Mul(1, 4) -> 5
  // -conv-> 6 -conv-> 7 (output). The pooled values are layout-free: no reformat around the squeeze-excite.
  Problem t;
  t.slots(8);
  t.p.layout_free.assign(8, 0);
  t.p.layout_free[2] = t.p.layout_free[3] = t.p.layout_free[4] = 1;
  t.p.pinned_nchw[0] = t.p.pinned_nchw[7] = 1;
  const size_t stem = t.step({0}, {1}, true);
  const size_t mean = t.kind(LayoutKind::kReader, {1}, {2});
  const size_t se1 = t.step({2}, {3}, true);
  const size_t se2 = t.step({3}, {4}, true);
  const size_t mul = t.kind(LayoutKind::kElementwise, {1, 4}, {5});
  const size_t c6 = t.step({5}, {6}, true);
  t.step({6}, {7}, true);
  const LayoutDecision d = decide_layouts(t.p);
  EXPECT_EQ(d.nhwc_slot, (std::vector<uint8_t>{0, 1, 0, 0, 0, 1, 1, 0}));
  EXPECT_TRUE(d.step_nhwc[stem] && d.step_nhwc[mean] && d.step_nhwc[mul] && d.step_nhwc[c6]);
  EXPECT_FALSE(d.step_nhwc[se1] || d.step_nhwc[se2]) << "the 1x1 convs on [N,C,1,1] read plain storage";
  EXPECT_EQ(d.reformat[mean], (std::vector<int8_t>{0}));
  EXPECT_EQ(d.reformat[mul], (std::vector<int8_t>{0, 0}));
  EXPECT_EQ(d.reformats, 2u) << "graph input in, graph output out";
  EXPECT_TRUE(predict_nhwc_win(d));
}

TEST(CudaLayoutPlan, ProducerWithLayoutFreeOutputFollowsItsInput) {
  // 0 in -conv-> 1 (NHWC) -conv 7x7 valid-> 2 [N,K,1,1] -> 3 (output via a reshape view)
  Problem t;
  t.slots(4);
  t.p.layout_free.assign(4, 0);
  t.p.layout_free[2] = 1;
  t.p.rank4[3] = 0;
  t.p.pinned_nchw[0] = t.p.pinned_nchw[3] = 1;
  t.step({0}, {1}, true);
  const size_t last = t.step({1}, {2}, true);
  t.step({2}, {3}, false, /*alias=*/true);
  const LayoutDecision d = decide_layouts(t.p);
  EXPECT_TRUE(d.step_nhwc[last]) << "NHWC in, layout-free out: no reformat of the big input";
  EXPECT_EQ(d.nhwc_slot[2], 0) << "layout-free values are never marked NHWC";
  EXPECT_EQ(d.reformat[last], (std::vector<int8_t>{0}));
  EXPECT_EQ(d.reformats, 1u);
}

TEST(CudaLayoutPlan, ConvNextTransposesBecomeViews) {
  // 0 in -conv-> 1 ; Transpose(0,2,3,1) 1 -> 2 ; LayerNorm 2 -> 3 ; MatMul 3 -> 4 ; Transpose(0,3,1,2) 4 -> 5 ;
  // Mul(5, gamma 6 [C,1,1] constant) -> 7 ; Add(7, 1) -> 8 ; conv 8 -> 9 (output)
  Problem t;
  t.slots(10);
  t.p.layout_free.assign(10, 0);
  t.p.rank4[6] = 0;
  t.p.layout_free[6] = 1;
  t.p.pinned_nchw[0] = t.p.pinned_nchw[6] = t.p.pinned_nchw[9] = 1;
  t.step({0}, {1}, true);
  const size_t to_nhwc_order = t.kind(LayoutKind::kFromNhwcView, {1}, {2});
  const size_t ln = t.step({2}, {3}, false);
  t.step({3}, {4}, false);
  const size_t back = t.kind(LayoutKind::kToNhwcView, {4}, {5});
  const size_t mul = t.kind(LayoutKind::kElementwise, {5, 6}, {7});
  const size_t add = t.kind(LayoutKind::kElementwise, {7, 1}, {8});
  t.step({8}, {9}, true);
  const LayoutDecision d = decide_layouts(t.p);
  EXPECT_TRUE(d.view[to_nhwc_order] && d.view[back]);
  EXPECT_EQ(d.nhwc_slot, (std::vector<uint8_t>{0, 1, 0, 0, 0, 1, 0, 1, 1, 0}));
  EXPECT_EQ(d.reformat[ln], (std::vector<int8_t>{0})) << "LayerNorm reads the view's plain [N,H,W,C]";
  EXPECT_TRUE(d.step_nhwc[mul] && d.step_nhwc[add]);
  EXPECT_EQ(d.reformats, 2u);
}

TEST(CudaLayoutPlan, TransposesStayCopiesWhereAViewWouldBeWrong) {
  // Transpose(0,2,3,1) of an NCHW value: a copy. Transpose(0,3,1,2) whose output a reshape view reads, or of a
  // graph input: a copy.
  Problem t;
  t.slots(7);
  t.p.layout_free.assign(7, 0);
  t.p.pinned_nchw[0] = 1;
  t.p.rank4[6] = 0;
  const size_t a = t.kind(LayoutKind::kFromNhwcView, {0}, {1});
  const size_t b = t.kind(LayoutKind::kToNhwcView, {0}, {2});
  const size_t c = t.kind(LayoutKind::kToNhwcView, {1}, {3});
  t.step({3}, {6}, false, /*alias=*/true);
  const size_t e = t.kind(LayoutKind::kToNhwcView, {1}, {4});
  const LayoutDecision d = decide_layouts(t.p);
  EXPECT_FALSE(d.view[a] || d.view[b] || d.view[c]);
  EXPECT_TRUE(d.view[e]);
  EXPECT_EQ(d.nhwc_slot[4], 1);
  EXPECT_EQ(d.reformats, 0u);
}

TEST(CudaLayoutPlan, ElementwiseNeedsAnNhwcInputAndPermutableOperands) {
  // 0 in -conv-> 1 (NHWC) ; Add(1, 2 rank-2 [H,W] bias, not layout-free) -> 3 : runs NCHW, 1 reformatted back ;
  // Relu(0) -> 4 : NCHW (no NHWC input) ; Relu(1) -> 5 (NHWC) -> fixed op -> 6 : reformatted
  Problem t;
  t.slots(7);
  t.p.layout_free.assign(7, 0);
  t.p.rank4[2] = 0;
  t.p.pinned_nchw[0] = t.p.pinned_nchw[2] = 1;
  t.step({0}, {1}, true);
  const size_t add = t.kind(LayoutKind::kElementwise, {1, 2}, {3});
  const size_t relu0 = t.kind(LayoutKind::kElementwise, {0}, {4});
  const size_t relu1 = t.kind(LayoutKind::kElementwise, {1}, {5});
  const size_t fixed = t.step({5}, {6}, false);
  const LayoutDecision d = decide_layouts(t.p);
  EXPECT_FALSE(d.step_nhwc[add] || d.step_nhwc[relu0]);
  EXPECT_EQ(d.reformat[add], (std::vector<int8_t>{-1, 0}));
  EXPECT_TRUE(d.step_nhwc[relu1]);
  EXPECT_EQ(d.reformat[fixed], (std::vector<int8_t>{-1}));
  EXPECT_EQ(d.reformats, 3u);
}

TEST(CudaLayoutPlan, PredictedWinNeedsFewReformats) {
  LayoutDecision d;
  EXPECT_FALSE(predict_nhwc_win(d)) << "nothing NHWC";
  d.nhwc_steps = 50;
  d.reformats = 5;
  EXPECT_TRUE(predict_nhwc_win(d));
  d.reformats = 40;  // a reformat around every block (efficientnet under the first plan)
  EXPECT_FALSE(predict_nhwc_win(d));
  d.nhwc_steps = 4;
  d.reformats = 3;
  EXPECT_FALSE(predict_nhwc_win(d));
}

TEST(CudaLayoutPlan, ScalarKernelDepthwiseConvsInNhwcPredictALoss) {
  // MobileNet-like: 0 in -conv-> 1 -depthwise-> 2 -conv-> 3 -conv-> 4 (output). Planned NHWC (the forced mode);
  // the default only when the depthwise conv is depthwise_fast (layout_plan.h).
  Problem t;
  t.slots(5);
  t.p.pinned_nchw[0] = t.p.pinned_nchw[4] = 1;
  t.step({0}, {1}, true);
  const size_t dw = t.step({1}, {2}, true);
  t.p.steps[dw].depthwise = true;
  t.step({2}, {3}, true);
  t.step({3}, {4}, true);
  LayoutDecision d = decide_layouts(t.p);
  EXPECT_TRUE(d.step_nhwc[dw]);
  EXPECT_EQ(d.nhwc_depthwise, 1u);
  EXPECT_EQ(d.nhwc_depthwise_slow, 1u);
  EXPECT_EQ(d.reformats, 2u);
  EXPECT_FALSE(predict_nhwc_win(d));
  t.p.steps[dw].depthwise_fast = true;
  d = decide_layouts(t.p);
  EXPECT_EQ(d.nhwc_depthwise, 1u);
  EXPECT_EQ(d.nhwc_depthwise_slow, 0u);
  EXPECT_TRUE(predict_nhwc_win(d));
  t.p.steps[dw].depthwise = t.p.steps[dw].depthwise_fast = false;
  d = decide_layouts(t.p);
  EXPECT_EQ(d.nhwc_depthwise, 0u);
  EXPECT_TRUE(predict_nhwc_win(d));
}

TEST(CudaLayoutPlan, DepthwiseConvsAreFastInNhwcWithEightChannelGroupsAndAStaticBatchOfEight) {
  namespace tc = kilnrt::testing_conv;
  struct Case {
    int64_t k, batch;  // batch -1: symbolic (a dynamic-batch engine)
    bool fast;
  };
  for (const Case& c :
       {Case{16, 8, true}, Case{16, 32, true}, Case{12, 32, false}, Case{16, 1, false}, Case{16, -1, false}}) {
    tc::GraphBuilder b;
    b.input("x", {c.batch < 0 ? 1 : c.batch, c.k, 8, 8});
    if (c.batch < 0) b.g.types["x"].shape[0] = kilnrt::ir::Dim::symbol("N");
    const std::string w = b.random_constant("w", {c.k, 1, 3, 3});
    b.node("Conv", {"x", w}, {"y"}).attrs["group"] = tc::int_attr(c.k);
    b.output("y");
    const kilnrt::ir::Graph g = b.finish();
    SCOPED_TRACE(::testing::Message() << "K " << c.k << " batch " << c.batch);
    EXPECT_TRUE(depthwise_conv(g.nodes.at(0), g));
    // KILNRT_CUDA_DW_VEC=0 would make every case slow; the test runs with it unset.
    EXPECT_EQ(depthwise_nhwc_fast(g.nodes.at(0), g), c.fast);
  }
}

TEST(CudaLayoutPlan, NhwcLogicalShapesPadThenPermute) {
  EXPECT_EQ(nhwc_logical_shape({2, 3, 4, 5}), (Shape{2, 4, 5, 3}));
  EXPECT_EQ(nhwc_logical_shape({3, 1, 1}), (Shape{1, 1, 1, 3}));
  EXPECT_EQ(nhwc_logical_shape({2, 3, 1, 1}), (Shape{2, 1, 1, 3}));
  EXPECT_EQ(nhwc_logical_shape({7}), (Shape{1, 1, 7, 1}));
  EXPECT_EQ(nhwc_logical_shape(Shape{}), (Shape{1, 1, 1, 1}));
}

namespace {
// What strided_copy does, on the host.
std::vector<int> apply_strided(const kilnrt::cuda::kernels::Strided& s, const std::vector<int>& src) {
  std::vector<int> dst(src.size(), -1);
  for (int64_t a = 0; a < s.dims[0]; ++a)
    for (int64_t b = 0; b < s.dims[1]; ++b)
      for (int64_t c = 0; c < s.dims[2]; ++c)
        for (int64_t d = 0; d < s.dims[3]; ++d) {
          const int64_t o =
              s.out_offset + a * s.out_strides[0] + b * s.out_strides[1] + c * s.out_strides[2] + d * s.out_strides[3];
          const int64_t i =
              s.in_offset + a * s.in_strides[0] + b * s.in_strides[1] + c * s.in_strides[2] + d * s.in_strides[3];
          dst.at(o) = src.at(i);
        }
  return dst;
}
}  // namespace

TEST(CudaLayoutPlan, ReformatStridesTransposeAndRoundTrip) {
  const int64_t n = 2, c = 3, h = 4, w = 5;
  std::vector<int> nchw(n * c * h * w);
  for (size_t i = 0; i < nchw.size(); ++i) nchw[i] = static_cast<int>(i);
  const auto s = reformat_strides({n, c, h, w}, true);
  EXPECT_EQ(s.rank, 4);
  const std::vector<int> nhwc = apply_strided(s, nchw);
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          ASSERT_EQ(nhwc[((a * h + y) * w + x) * c + b], nchw[((a * c + b) * h + y) * w + x]);
  EXPECT_EQ(apply_strided(reformat_strides({n, c, h, w}, false), nhwc), nchw);
}
