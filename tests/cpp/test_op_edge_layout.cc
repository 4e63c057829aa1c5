// Edge cases of the layout ops DepthToSpace / SpaceToDepth against element-by-element references written from the
// ONNX spec's reshape-transpose-reshape definitions (DCR and CRD for both; SpaceToDepth's mode is newer), plus
// bad attributes that must be clear errors naming the node.
#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

// ONNX DepthToSpace: DCR reshapes C as (bs, bs, C'), CRD as (C', bs, bs). y[n, c, h*bs+i, w*bs+j].
std::vector<double> depth_to_space_ref(const Tensor& x, int64_t bs, bool crd) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), oc = c / (bs * bs);
  std::vector<double> xv = values(x), y(static_cast<size_t>(x.numel()));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < oc; ++k)
      for (int64_t yy = 0; yy < h * bs; ++yy)
        for (int64_t xx = 0; xx < w * bs; ++xx) {
          const int64_t i = yy % bs, j = xx % bs;
          const int64_t ic = crd ? k * bs * bs + i * bs + j : (i * bs + j) * oc + k;
          y[((b * oc + k) * h * bs + yy) * w * bs + xx] = xv[((b * c + ic) * h + yy / bs) * w + xx / bs];
        }
  return y;
}

// ONNX SpaceToDepth: y[n, (i*bs + j)*C + c, h, w] = x[n, c, h*bs+i, w*bs+j].
std::vector<double> space_to_depth_ref(const Tensor& x, int64_t bs) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2) / bs, w = x.dim(3) / bs;
  std::vector<double> xv = values(x), y(static_cast<size_t>(x.numel()));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < bs; ++i)
      for (int64_t j = 0; j < bs; ++j)
        for (int64_t k = 0; k < c; ++k)
          for (int64_t yy = 0; yy < h; ++yy)
            for (int64_t xx = 0; xx < w; ++xx)
              y[(((b * bs * bs * c) + (i * bs + j) * c + k) * h + yy) * w + xx] =
                  xv[((b * c + k) * x.dim(2) + yy * bs + i) * x.dim(3) + xx * bs + j];
  return y;
}

struct LayoutCase {
  Shape x;
  int64_t bs;
};

TEST(OpEdgeLayout, DepthToSpaceBothModesMatchSpec) {
  const LayoutCase cases[] = {{{1, 4, 1, 1}, 2}, {{2, 8, 2, 3}, 2}, {{1, 18, 2, 2}, 3}, {{1, 3, 2, 2}, 1}};
  uint32_t seed = 1;
  for (const LayoutCase& c : cases) {
    Tensor x = ramp(c.x, -3.f, 3.f, seed++);
    for (const char* mode : {"DCR", "CRD"}) {
      Node d2s("DepthToSpace", 1);
      d2s.i("blocksize", c.bs).s("mode", mode);
      Tensor y = run1(d2s.node, {&x});
      EXPECT_EQ(y.shape(), (Shape{c.x[0], c.x[1] / (c.bs * c.bs), c.x[2] * c.bs, c.x[3] * c.bs}));
      expect_values(y, depth_to_space_ref(x, c.bs, std::string(mode) == "CRD"));
    }
  }
  // DCR is the default; the two modes differ once C' > 1 and bs > 1.
  Tensor x = ramp({1, 8, 1, 1});
  Node dflt("DepthToSpace", 1), crd("DepthToSpace", 1);
  dflt.i("blocksize", 2);
  crd.i("blocksize", 2).s("mode", "CRD");
  expect_values(run1(dflt.node, {&x}), depth_to_space_ref(x, 2, false));
  EXPECT_NE(values(run1(dflt.node, {&x})), values(run1(crd.node, {&x})));
}

TEST(OpEdgeLayout, SpaceToDepthMatchesSpecAndKeepsDtype) {
  const LayoutCase cases[] = {{{1, 1, 2, 2}, 2}, {{2, 3, 4, 6}, 2}, {{1, 2, 6, 3}, 3}};
  uint32_t seed = 7;
  for (const LayoutCase& c : cases) {
    Tensor x = ramp(c.x, -3.f, 3.f, seed++);
    Node s2d("SpaceToDepth", 1);
    s2d.i("blocksize", c.bs);
    Tensor y = run1(s2d.node, {&x});
    EXPECT_EQ(y.shape(), (Shape{c.x[0], c.x[1] * c.bs * c.bs, c.x[2] / c.bs, c.x[3] / c.bs}));
    expect_values(y, space_to_depth_ref(x, c.bs));
    // DepthToSpace DCR inverts it.
    Node d2s("DepthToSpace", 1);
    d2s.i("blocksize", c.bs);
    expect_values(run1(d2s.node, {&y}), values(x));
  }
  // int64 extremes are copied bit for bit; an empty batch stays empty.
  Tensor big = i64({INT64_MIN, INT64_MAX, -1, 0}, {1, 1, 2, 2});
  Node s2d("SpaceToDepth", 1);
  s2d.i("blocksize", 2);
  Tensor yb = run1(s2d.node, {&big});
  ASSERT_EQ(yb.dtype(), DType::kInt64);
  EXPECT_EQ(std::vector<int64_t>(yb.data<int64_t>(), yb.data<int64_t>() + 4),
            (std::vector<int64_t>{INT64_MIN, INT64_MAX, -1, 0}));
  Tensor empty = Tensor::empty(DType::kFloat32, {0, 2, 4, 4});
  EXPECT_EQ(run1(s2d.node, {&empty}).shape(), (Shape{0, 8, 2, 2}));
}

// SpaceToDepth with mode CRD (newer ONNX; onnx 1.23's test_spacetodepth_crd_mode_example): the output channel is
// c * bs * bs + i * bs + j, so DepthToSpace CRD inverts it; DCR (explicit) equals the default.
TEST(OpEdgeLayout, SpaceToDepthCrdModeInvertsDepthToSpaceCrd) {
  Tensor x = ramp({2, 3, 4, 6}, -3.f, 3.f, 11);
  Node crd("SpaceToDepth", 1), dcr("SpaceToDepth", 1), dflt("SpaceToDepth", 1);
  crd.i("blocksize", 2).s("mode", "CRD");
  dcr.i("blocksize", 2).s("mode", "DCR");
  dflt.i("blocksize", 2);
  Tensor y = run1(crd.node, {&x});
  ASSERT_EQ(y.shape(), (Shape{2, 12, 2, 3}));
  const std::vector<double> xv = values(x), yv = values(y);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j)
          for (int64_t h = 0; h < 2; ++h)
            for (int64_t w = 0; w < 3; ++w)
              ASSERT_EQ(yv[(((b * 12) + c * 4 + i * 2 + j) * 2 + h) * 3 + w],
                        xv[((b * 3 + c) * 4 + h * 2 + i) * 6 + w * 2 + j]);
  Node d2s("DepthToSpace", 1);
  d2s.i("blocksize", 2).s("mode", "CRD");
  expect_values(run1(d2s.node, {&y}), xv);
  expect_values(run1(dcr.node, {&x}), values(run1(dflt.node, {&x})));
  EXPECT_NE(values(run1(dcr.node, {&x})), yv);
}

// Fuzz finding (CI's 45 s onnx_build run, 2026-11-22): a Reshape whose shape multiplies past int64 (UBSan: signed
// overflow in reshape_ops.cc) is now a clear error naming the node.
TEST(OpEdgeLayout, ReshapeWithAnOverflowingShapeIsAnError) {
  Tensor x = ramp({2, 3});
  Tensor shape = i64({int64_t(1) << 40, int64_t(1) << 40, -1}, {3});
  Node r("Reshape", 14, 1, "huge_reshape");
  try {
    run1(r.node, {&x, &shape});
    ADD_FAILURE() << "an overflowing Reshape shape was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("huge_reshape"), std::string::npos) << e.what();
  }
}

// Fuzz finding (onnx_build, 2026-11-22): ScatterND with fewer updates than its indices address read past the end of
// updates (ASan heap-buffer-overflow); now a clear error naming the node. ScatterElements' index dims are checked too.
TEST(OpEdgeLayout, ScatterWithTooFewUpdatesIsAnError) {
  Tensor data = ramp({4, 3});
  Tensor idx = i64({0, 2}, {2, 1});
  Tensor upd = ramp({1, 3});  // needs {2, 3}
  Node nd("ScatterND", 18, 1, "short_updates");
  nd.s("reduction", "mul");
  EXPECT_THROW(run1(nd.node, {&data, &idx, &upd}), Error);
  Tensor upd_ok = ramp({2, 3});
  EXPECT_EQ(run1(nd.node, {&data, &idx, &upd_ok}).shape(), (Shape{4, 3}));
  Tensor eidx = i64({0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {2, 5});  // dim 1 (5) exceeds data's (3)
  Tensor eupd = ramp({2, 5});
  Node el("ScatterElements", 18, 1, "wide_indices");
  el.i("axis", 0);
  EXPECT_THROW(run1(el.node, {&data, &eidx, &eupd}), Error);
}

// Fuzz finding (onnx_build 1M-run, 2026-11-22): MaxUnpool with fewer indices than X read past them (UBSan);
// input tests/fixtures/fuzz/onnx_build/maxunpool_short_indices.
TEST(OpEdgeLayout, MaxUnpoolWithMismatchedIndicesIsAnError) {
  Tensor x = ramp({1, 1, 2, 2});
  Tensor short_idx = i64({0, 1}, {1, 1, 1, 2});
  Node u("MaxUnpool", 11, 1, "short_indices");
  u.ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  EXPECT_THROW(run1(u.node, {&x, &short_idx}), Error);
  Tensor idx = i64({0, 3, 10, 15}, {1, 1, 2, 2});
  EXPECT_EQ(run1(u.node, {&x, &idx}).shape(), (Shape{1, 1, 4, 4}));
}

TEST(OpEdgeLayout, BadBlocksizeAndModeAreErrors) {
  Tensor x = ramp({1, 4, 2, 2});
  for (int64_t bs : {0, -2}) {
    for (const char* op : {"DepthToSpace", "SpaceToDepth"}) {
      Node n(op, 1, 1, std::string("bad_bs_") + op);
      n.i("blocksize", bs);
      try {
        run1(n.node, {&x});
        ADD_FAILURE() << op << " accepted blocksize " << bs;
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
        EXPECT_NE(std::string(e.what()).find(n.node.name), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("blocksize"), std::string::npos) << e.what();
      }
      ir::TensorType t = ttype(DType::kFloat32, {1, 4, 2, 2});
      EXPECT_THROW(infer(n.node, {&t}), Error);
    }
  }
  Node bad("DepthToSpace", 1, 1, "bad_mode");
  bad.i("blocksize", 2).s("mode", "RCD");
  try {
    run1(bad.node, {&x});
    ADD_FAILURE() << "mode RCD accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad_mode"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("RCD"), std::string::npos) << e.what();
  }
  Node odd("SpaceToDepth", 1, 1, "odd_hw");
  odd.i("blocksize", 2);
  Tensor x3 = ramp({1, 1, 3, 4});
  EXPECT_THROW(run1(odd.node, {&x3}), Error);
}

}  // namespace
}  // namespace kilnrt::ops::optest
