// Shape-manipulation ops on the CPU reference backend (Reshape, Transpose, Squeeze/Unsqueeze, Concat, Split, Slice,
// Gather, GatherElements, Expand, Tile, Range, Pad, Trilu, Constant*, Shape, Size, Identity) and symbolic shape
// propagation through Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains.
#include <limits>
#include <string>

#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

std::vector<double> iota(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i));
  return v;
}
Tensor iota_f32(const Shape& s) {
  Tensor t = Tensor::empty(DType::kFloat32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

TEST(OpsShapeRegistry, EveryOpHasKernelAndShapeFunction) {
  const char* ops[] = {"Identity",  "Constant", "ConstantOfShape", "Shape", "Size",  "Reshape", "Transpose",
                       "Unsqueeze", "Squeeze",  "Concat",          "Split", "Slice", "Gather",  "GatherElements",
                       "Expand",    "Tile",     "Range",           "Pad",   "Trilu"};
  for (const char* op : ops)
    for (int64_t opset : {13, 17, 18, 20, 21}) {
      if (std::string(op) == "Trilu" && opset < 14) continue;  // introduced in opset 14
      const OpSchema* s = OpRegistry::instance().find("", op, opset);
      ASSERT_NE(s, nullptr) << op << " at opset " << opset;
      EXPECT_TRUE(static_cast<bool>(s->cpu) && static_cast<bool>(s->infer)) << op;
    }
}

// ---- Reshape / Squeeze / Unsqueeze ----------------------------------------------------------------------------
TEST(OpsShapeReshape, ZeroMinusOneAllowzeroAndView) {
  Tensor x = iota_f32({2, 3, 4});
  Tensor spec = i64({0, -1});
  Tensor y = run1(Node("Reshape", 2).node, {&x, &spec});
  EXPECT_EQ(y.shape(), (Shape{2, 12}));
  EXPECT_EQ(y.raw(), x.raw());  // a view sharing the buffer
  Tensor spec2 = i64({-1, 4, 1});
  EXPECT_EQ(run1(Node("Reshape", 2).node, {&x, &spec2}).shape(), (Shape{6, 4, 1}));
  // allowzero: 0 is a real zero-size dim.
  Tensor e = Tensor::empty(DType::kFloat32, {0, 3});
  Tensor spec3 = i64({3, 0});
  EXPECT_EQ(run1(Node("Reshape", 2).i("allowzero", 1).node, {&e, &spec3}).shape(), (Shape{3, 0}));
  Node bad("Reshape", 2);
  Tensor spec4 = i64({5, -1});
  expect_error_naming([&] { run1(bad.node, {&x, &spec4}); }, bad.node, ErrorCode::kInvalidArgument, "2x3x4");
  Tensor spec5 = i64({-1, -1});
  expect_error_naming([&] { run1(bad.node, {&x, &spec5}); }, bad.node, ErrorCode::kInvalidModel);
}

TEST(OpsShapeReshape, SqueezeUnsqueezeAxesInputAndAttribute) {
  Tensor x = iota_f32({3, 1, 4});
  Tensor axes = i64({-1, 0});
  Tensor u = run1(Node("Unsqueeze", 2).node, {&x, &axes});
  EXPECT_EQ(u.shape(), (Shape{1, 3, 1, 4, 1}));
  EXPECT_EQ(run1(Node("Unsqueeze", 1).ints("axes", {1}).node, {&x}, 11).shape(), (Shape{3, 1, 1, 4}));
  Tensor ax1 = i64({-2});
  EXPECT_EQ(run1(Node("Squeeze", 2).node, {&x, &ax1}).shape(), (Shape{3, 4}));
  Tensor all = iota_f32({1, 3, 1});
  EXPECT_EQ(run1(Node("Squeeze", 1).node, {&all}).shape(), (Shape{3}));
  EXPECT_EQ(run1(Node("Squeeze", 1).ints("axes", {0}).node, {&all}, 11).shape(), (Shape{3, 1}));
  Node bad("Squeeze", 2);
  Tensor ax0 = i64({0});
  expect_error_naming([&] { run1(bad.node, {&x, &ax0}); }, bad.node, ErrorCode::kInvalidArgument);
  Tensor ax9 = i64({9});
  expect_error_naming([&] { run1(bad.node, {&x, &ax9}); }, bad.node, ErrorCode::kInvalidModel);
  // Scalar <-> [1]
  Tensor s = i64_scalar(5);
  Tensor z = i64({0});
  EXPECT_EQ(run1(Node("Unsqueeze", 2).node, {&s, &z}).shape(), (Shape{1}));
}

TEST(OpsShapeTranspose, PermAndDefault) {
  Tensor x = iota_f32({2, 3, 4});
  Tensor y = run1(Node("Transpose", 1).ints("perm", {2, 0, 1}).node, {&x});
  ASSERT_EQ(y.shape(), (Shape{4, 2, 3}));
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(y.data<float>()[(a * 2 + b) * 3 + c], (b * 3 + c) * 4 + a);
  Tensor r = run1(Node("Transpose", 1).node, {&x});
  ASSERT_EQ(r.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(r.data<float>()[1], 12.f);
  // Big int64 transpose through the parallel path.
  Tensor big = Tensor::empty(DType::kInt64, {256, 300});
  for (int64_t i = 0; i < big.numel(); ++i) big.data<int64_t>()[i] = i;
  Tensor bt = run1(Node("Transpose", 1).node, {&big});
  int64_t bad = 0;
  for (int64_t i = 0; i < 300; ++i)
    for (int64_t j = 0; j < 256; ++j) bad += bt.data<int64_t>()[i * 256 + j] != j * 300 + i;
  EXPECT_EQ(bad, 0);
}

// ---- Concat / Split -----------------------------------------------------------------------------------------
TEST(OpsShapeConcatSplit, ConcatNegativeAxisAndEmptyInput) {
  Tensor a = iota_f32({2, 2});
  Tensor b = f32({10, 11, 12, 13, 14, 15}, {2, 3});
  Tensor e = Tensor::empty(DType::kFloat32, {2, 0});
  Tensor y = run1(Node("Concat", 3).i("axis", -1).node, {&a, &e, &b});
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  expect_values(y, {0, 1, 10, 11, 12, 2, 3, 13, 14, 15});
  Node bad("Concat", 2);
  bad.i("axis", 0);
  expect_error_naming([&] { run1(bad.node, {&a, &b}); }, bad.node, ErrorCode::kInvalidArgument);
}

TEST(OpsShapeConcatSplit, SplitSizesNumOutputsAndEqual) {
  Tensor x = iota_f32({2, 5});
  Tensor sizes = i64({2, 3});
  auto parts = run(Node("Split", 2, 2).i("axis", 1).node, {&x, &sizes});
  EXPECT_EQ(parts[0].shape(), (Shape{2, 2}));
  expect_values(parts[0], {0, 1, 5, 6});
  expect_values(parts[1], {2, 3, 4, 7, 8, 9});
  auto chunks = run(Node("Split", 1, 3).i("axis", -1).i("num_outputs", 3).node, {&x}, 18);
  EXPECT_EQ(chunks[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(chunks[2].shape(), (Shape{2, 1}));
  expect_values(chunks[2], {4, 9});
  auto halves = run(Node("Split", 1, 2).ints("split", {1, 1}).node, {&x}, 11);
  expect_values(halves[1], {5, 6, 7, 8, 9});
  Node bad("Split", 1, 2);
  bad.i("axis", 1);
  expect_error_naming([&] { run(bad.node, {&x}, 13); }, bad.node, ErrorCode::kInvalidArgument, "evenly");
}

// ---- Slice --------------------------------------------------------------------------------------------------
TEST(OpsShapeSlice, NegativeOverflowingAndSteps) {
  Tensor x = iota_f32({10});
  auto slice = [&](std::vector<int64_t> st, std::vector<int64_t> en, std::vector<int64_t> steps) {
    Tensor s = i64(st), e = i64(en), ax = i64({0}), p = i64(steps);
    return run1(Node("Slice", 5).node, {&x, &s, &e, &ax, &p});
  };
  expect_values(slice({2}, {kMax}, {1}), {2, 3, 4, 5, 6, 7, 8, 9});
  expect_values(slice({-3}, {kMax}, {1}), {7, 8, 9});
  expect_values(slice({kMin}, {3}, {1}), {0, 1, 2});
  expect_values(slice({1}, {-1}, {3}), {1, 4, 7});
  expect_values(slice({-1}, {kMin}, {-1}), {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});  // full reverse
  expect_values(slice({kMax}, {kMin}, {-3}), {9, 6, 3, 0});
  expect_values(slice({8}, {2}, {-2}), {8, 6, 4});
  EXPECT_EQ(slice({5}, {2}, {1}).numel(), 0);
  EXPECT_EQ(slice({20}, {30}, {1}).numel(), 0);
  expect_values(slice({0}, {kMax}, {kMax}), {0});
  Node bad("Slice", 5);
  Tensor s = i64({0}), e = i64({3}), ax = i64({0}), zero = i64({0});
  expect_error_naming([&] { run1(bad.node, {&x, &s, &e, &ax, &zero}); }, bad.node, ErrorCode::kInvalidModel, "step");
}

TEST(OpsShapeSlice, AxesSubsetAndOldAttributes) {
  Tensor x = iota_f32({3, 4, 5});
  Tensor s = i64({1, -2}), e = i64({kMax, kMax}), ax = i64({-1, 1});
  Tensor y = run1(Node("Slice", 4).node, {&x, &s, &e, &ax});
  ASSERT_EQ(y.shape(), (Shape{3, 2, 4}));
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(y.data<float>()[(a * 2 + b) * 4 + c], (a * 4 + b + 2) * 5 + c + 1);
  Tensor old = run1(Node("Slice", 1).ints("starts", {1}).ints("ends", {2}).ints("axes", {0}).node, {&x}, 9);
  EXPECT_EQ(old.shape(), (Shape{1, 4, 5}));
  EXPECT_EQ(old.data<float>()[0], 20.f);
}

// ---- Gather / GatherElements --------------------------------------------------------------------------------
TEST(OpsShapeGather, NegativeIndicesAnyAxisAndErrors) {
  Tensor x = iota_f32({3, 4});
  Tensor idx = i64({-1, 0});
  Tensor g0 = run1(Node("Gather", 2).node, {&x, &idx});
  EXPECT_EQ(g0.shape(), (Shape{2, 4}));
  expect_values(g0, {8, 9, 10, 11, 0, 1, 2, 3});
  Tensor idx2 = i32({3, -4, 1, 1}, {2, 2});
  Tensor g1 = run1(Node("Gather", 2).i("axis", -1).node, {&x, &idx2});
  EXPECT_EQ(g1.shape(), (Shape{3, 2, 2}));
  expect_values(g1, {3, 0, 1, 1, 7, 4, 5, 5, 11, 8, 9, 9});
  Tensor scalar = i64_scalar(-2);
  Tensor g2 = run1(Node("Gather", 2).node, {&x, &scalar});
  EXPECT_EQ(g2.shape(), (Shape{4}));
  expect_values(g2, {4, 5, 6, 7});
  Node bad("Gather", 2);
  Tensor oob = i64({3});
  expect_error_naming([&] { run1(bad.node, {&x, &oob}); }, bad.node, ErrorCode::kInvalidArgument, "out of range");
  Tensor huge = i64({kMin});
  expect_error_naming([&] { run1(bad.node, {&x, &huge}); }, bad.node, ErrorCode::kInvalidArgument);
}

TEST(OpsShapeGather, GatherElementsAlongAxis) {
  Tensor x = f32({1, 2, 3, 4}, {2, 2});
  Tensor idx = i64({0, 0, 1, 0}, {2, 2});
  expect_values(run1(Node("GatherElements", 2).i("axis", 1).node, {&x, &idx}), {1, 1, 4, 3});
  Tensor idx0 = i64({1, -2, 0, 1}, {2, 2});
  expect_values(run1(Node("GatherElements", 2).node, {&x, &idx0}), {3, 2, 1, 4});
  Node bad("GatherElements", 2);
  Tensor oob = i64({2, 0, 0, 0}, {2, 2});
  expect_error_naming([&] { run1(bad.node, {&x, &oob}); }, bad.node, ErrorCode::kInvalidArgument);
}

// ---- Expand / Tile / Range / Pad / Trilu ----------------------------------------------------------------------
TEST(OpsShapeExpandTile, ExpandBidirectionalAndTile) {
  Tensor x = f32({1, 2, 3}, {3, 1});
  Tensor shape = i64({2, 1, 2});
  Tensor y = run1(Node("Expand", 2).node, {&x, &shape});
  EXPECT_EQ(y.shape(), (Shape{2, 3, 2}));
  expect_values(y, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  Tensor b = boolean({1, 0}, {2});
  Tensor s2 = i64({2, 2});
  expect_values(run1(Node("Expand", 2).node, {&b, &s2}), {1, 0, 1, 0});
  Tensor t = f32({1, 2, 3, 4}, {2, 2});
  Tensor reps = i64({1, 2});
  Tensor tt = run1(Node("Tile", 2).node, {&t, &reps});
  EXPECT_EQ(tt.shape(), (Shape{2, 4}));
  expect_values(tt, {1, 2, 1, 2, 3, 4, 3, 4});
  Tensor reps0 = i64({0, 1});
  EXPECT_EQ(run1(Node("Tile", 2).node, {&t, &reps0}).shape(), (Shape{0, 2}));
}

TEST(OpsShapeRange, IntegerAndFloat) {
  Tensor a = i64_scalar(10), b = i64_scalar(1), c = i64_scalar(-3);
  expect_values(run1(Node("Range", 3).node, {&a, &b, &c}), {10, 7, 4});
  Tensor fa = f32({0.f}, {}), fb = f32({1.f}, {}), fc = f32({0.25f}, {});
  expect_values(run1(Node("Range", 3).node, {&fa, &fb, &fc}), {0, 0.25, 0.5, 0.75});
  Tensor empty = run1(Node("Range", 3).node, {&b, &a, &c});
  EXPECT_EQ(empty.shape(), (Shape{0}));
  Tensor zero = i64_scalar(0);
  Node bad("Range", 3);
  expect_error_naming([&] { run1(bad.node, {&a, &b, &zero}); }, bad.node, ErrorCode::kInvalidArgument);
}

TEST(OpsShapePad, ConstantReflectEdgeAxesAndCrop) {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor pads = i64({0, 2, 1, 1});  // begin: dim0 0, dim1 2; end: dim0 1, dim1 1
  Tensor val = f32({9.f}, {});
  Tensor c = run1(Node("Pad", 3).node, {&x, &pads, &val});
  EXPECT_EQ(c.shape(), (Shape{3, 6}));
  expect_values(c, {9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9, 9, 9, 9, 9, 9});
  Tensor r = run1(Node("Pad", 2).s("mode", "reflect").node, {&x, &pads});
  expect_values(r, {3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2});
  Tensor e = run1(Node("Pad", 2).s("mode", "edge").node, {&x, &pads});
  expect_values(e, {1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6, 4, 4, 4, 5, 6, 6});
  Tensor w = run1(Node("Pad", 2).s("mode", "wrap").node, {&x, &pads}, 19);
  expect_values(w, {2, 3, 1, 2, 3, 1, 5, 6, 4, 5, 6, 4, 2, 3, 1, 2, 3, 1});
  // axes input (opset 18): pad only the last axis; negative pads crop.
  Tensor p2 = i64({-1, 1});
  Tensor axes = i64({-1});
  Tensor crop = run1(Node("Pad", 4).node, {&x, &p2, nullptr, &axes});
  EXPECT_EQ(crop.shape(), (Shape{2, 3}));
  expect_values(crop, {2, 3, 0, 5, 6, 0});
  Tensor old = run1(Node("Pad", 1).ints("pads", {1, 0, 0, 0}).f("value", -1.f).node, {&x}, 2);
  expect_values(old, {-1, -1, -1, 1, 2, 3, 4, 5, 6});
  Node bad("Pad", 2);
  Tensor short_pads = i64({1, 1});
  expect_error_naming([&] { run1(bad.node, {&x, &short_pads}); }, bad.node, ErrorCode::kInvalidModel);
}

TEST(OpsShapeTrilu, UpperLowerWithOffset) {
  Tensor x = f32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  expect_values(run1(Node("Trilu", 1).node, {&x}), {1, 2, 3, 0, 5, 6, 0, 0, 9});
  Tensor k = i64_scalar(-1);
  expect_values(run1(Node("Trilu", 2).i("upper", 0).node, {&x, &k}), {0, 0, 0, 4, 0, 0, 7, 8, 0});
  Tensor k1 = i64_scalar(1);
  expect_values(run1(Node("Trilu", 2).node, {&x, &k1}), {0, 2, 3, 0, 0, 6, 0, 0, 0});
}

// ---- Constant / ConstantOfShape / Shape / Size / Identity ------------------------------------------------------
TEST(OpsShapeConstants, ConstantForms) {
  expect_values(run1(Node("Constant", 0).ints("value_ints", {3, -1}).node, {}), {3, -1});
  Tensor f = run1(Node("Constant", 0).f("value_float", 2.5f).node, {});
  EXPECT_EQ(f.rank(), 0);
  expect_values(f, {2.5});
  Tensor t = f32({1, 2}, {1, 2});
  EXPECT_EQ(run1(Node("Constant", 0).t("value", t).node, {}).shape(), (Shape{1, 2}));
  Node bad("Constant", 0);
  expect_error_naming([&] { run1(bad.node, {}); }, bad.node, ErrorCode::kUnsupported);
  Tensor shape = i64({2, 3});
  Tensor z = run1(Node("ConstantOfShape", 1).node, {&shape});
  EXPECT_EQ(z.dtype(), DType::kFloat32);
  expect_values(z, {0, 0, 0, 0, 0, 0});
  Tensor seven = i64({7}, {1});
  Tensor s = run1(Node("ConstantOfShape", 1).t("value", seven).node, {&shape});
  EXPECT_EQ(s.dtype(), DType::kInt64);
  expect_values(s, {7, 7, 7, 7, 7, 7});
  Tensor x = iota_f32({2, 3, 4});
  expect_values(run1(Node("Shape", 1).node, {&x}), {2, 3, 4});
  expect_values(run1(Node("Shape", 1).i("start", 1).node, {&x}), {3, 4});
  expect_values(run1(Node("Shape", 1).i("start", -2).i("end", -1).node, {&x}), {3});
  EXPECT_EQ(run1(Node("Shape", 1).i("start", 5).node, {&x}).numel(), 0);
  Tensor n = run1(Node("Size", 1).node, {&x});
  EXPECT_EQ(n.rank(), 0);
  expect_values(n, {24});
  EXPECT_EQ(run1(Node("Identity", 1).node, {&x}).raw(), x.raw());
}

// ---- symbolic shape propagation -------------------------------------------------------------------------------
// Runs `node`'s shape function with its inputs' types, constants where given.
ir::TensorType infer_one(const ir::Node& node, std::vector<const ir::TensorType*> in,
                         std::vector<const Tensor*> values = {}) {
  return infer(node, std::move(in), std::move(values))[0];
}

// Fuzz finding (onnx_build, session-3 final run, at 539,671): a rank-0 Concat input indexed its empty shape at the
// axis in the shape function (UBSan); input tests/fixtures/fuzz/onnx_build/concat_scalar_input. Both the shape
// function and the kernel now refuse scalars naming the node.
TEST(OpsShapeConcatSplit, ConcatOfScalarsIsAnError) {
  Node n("Concat", 2);
  n.i("axis", 0);
  Tensor s1 = f32({1}, {}), s2 = f32({2}, {});
  expect_error_naming([&] { run1(n.node, {&s1, &s2}); }, n.node, ErrorCode::kInvalidArgument);
  ir::TensorType scalar = ttype(DType::kFloat32, {});
  expect_error_naming([&] { infer_one(n.node, {&scalar, &scalar}); }, n.node, ErrorCode::kInvalidModel);
}

TEST(OpsShapeSymbolic, ShapeGatherUnsqueezeConcatReshapeKeepsBatch) {
  // x: [batch, 3, 4] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [12])) -> [batch, 12]
  ir::TensorType x = ttype(DType::kFloat32, {sym("batch"), 3, 4});
  ir::TensorType shape = infer_one(Node("Shape", 1).node, {&x});
  EXPECT_EQ(ir::sym_shape_to_string(shape.shape), "3");
  ASSERT_TRUE(shape.sym_value.has_value());
  Tensor zero = i64_scalar(0);
  ir::TensorType idx = ttype(DType::kInt64, {});
  ir::TensorType dim0 = infer_one(Node("Gather", 2).node, {&shape, &idx}, {nullptr, &zero});
  EXPECT_EQ(dim0.shape.size(), 0u);
  ASSERT_TRUE(dim0.sym_value.has_value());
  EXPECT_EQ((*dim0.sym_value)[0].param, "batch");
  Tensor axes = i64({0});
  ir::TensorType axes_t = ttype(DType::kInt64, {1});
  ir::TensorType unsq = infer_one(Node("Unsqueeze", 2).node, {&dim0, &axes_t}, {nullptr, &axes});
  EXPECT_EQ(unsq.shape, (ir::SymShape{1}));
  Tensor twelve = i64({12});
  ir::TensorType twelve_t = ttype(DType::kInt64, {1});
  ir::TensorType cat = infer_one(Node("Concat", 2).i("axis", 0).node, {&unsq, &twelve_t}, {nullptr, &twelve});
  EXPECT_EQ(cat.shape, (ir::SymShape{2}));
  ir::TensorType y = infer_one(Node("Reshape", 2).node, {&x, &cat});
  EXPECT_EQ(ir::sym_shape_to_string(y.shape), "batchx12");
  // The same with a literal -1 (encoded so that it survives as a value) and a Cast in between.
  Tensor minus1 = i64({-1});
  ir::TensorType cat2 = infer_one(Node("Concat", 2).i("axis", 0).node, {&unsq, &twelve_t}, {nullptr, &minus1});
  ir::TensorType cast = infer_one(Node("Cast", 1).i("to", 7).node, {&cat2});
  ir::TensorType y2 = infer_one(Node("Reshape", 2).node, {&x, &cast});
  EXPECT_EQ(ir::sym_shape_to_string(y2.shape), "batchx12");
  // [batch, 3, 4] -> [-1, 2, 6] cancels nothing symbolic: -1 = batch.
  Tensor spec = i64({-1, 2, 6});
  ir::TensorType spec_t = ttype(DType::kInt64, {3});
  EXPECT_EQ(ir::sym_shape_to_string(infer_one(Node("Reshape", 2).node, {&x, &spec_t}, {nullptr, &spec}).shape),
            "batchx2x6");
}

TEST(OpsShapeSymbolic, TransformerStyleHeadsSplit) {
  // q: [seq, batch, 64]; Reshape to [seq, batch*8, 8] built from Shape/Gather/Mul/Concat.
  ir::TensorType q = ttype(DType::kFloat32, {sym("seq"), sym("batch"), 64});
  ir::TensorType shape = infer_one(Node("Shape", 1).node, {&q});
  ir::TensorType scalar = ttype(DType::kInt64, {});
  Tensor one = i64_scalar(1), eight = i64_scalar(8);
  ir::TensorType b = infer_one(Node("Gather", 2).node, {&shape, &scalar}, {nullptr, &one});
  ir::TensorType bh = infer_one(Node("Mul", 2).node, {&b, &scalar}, {nullptr, &eight});
  Tensor ax = i64({0});
  ir::TensorType ax_t = ttype(DType::kInt64, {1});
  ir::TensorType bh1 = infer_one(Node("Unsqueeze", 2).node, {&bh, &ax_t}, {nullptr, &ax});
  // Slice(shape, 0, 1) -> [seq]
  Tensor s0 = i64({0}), e1 = i64({1});
  ir::TensorType seq = infer_one(Node("Slice", 3).node, {&shape, &ax_t, &ax_t}, {nullptr, &s0, &e1});
  ASSERT_TRUE(seq.sym_value.has_value());
  EXPECT_EQ((*seq.sym_value)[0].param, "seq");
  Tensor last = i64({8});
  ir::TensorType cat = infer_one(Node("Concat", 3).i("axis", 0).node, {&seq, &bh1, &ax_t}, {nullptr, nullptr, &last});
  ir::TensorType y = infer_one(Node("Reshape", 2).node, {&q, &cat});
  EXPECT_EQ(ir::sym_shape_to_string(y.shape), "seqxbatch*8x8");
  // Reshape back with -1: [seq, batch*8, 8] -> [seq, -1, 64] gives batch.
  Tensor back = i64({0, -1, 64});
  ir::TensorType back_t = ttype(DType::kInt64, {3});
  EXPECT_EQ(ir::sym_shape_to_string(infer_one(Node("Reshape", 2).node, {&y, &back_t}, {nullptr, &back}).shape),
            "seqxbatchx64");
}

TEST(OpsShapeSymbolic, ExpandConstantOfShapeRangeTileAndUnknowns) {
  ir::TensorType x = ttype(DType::kFloat32, {sym("batch"), 1, 16});
  ir::TensorType shape = infer_one(Node("Shape", 1).node, {&x});
  ir::TensorType small = ttype(DType::kFloat32, {1, 16});
  EXPECT_EQ(ir::sym_shape_to_string(infer_one(Node("Expand", 2).node, {&small, &shape}).shape), "batchx1x16");
  ir::TensorType c = infer_one(Node("ConstantOfShape", 1).node, {&shape});
  EXPECT_EQ(ir::sym_shape_to_string(c.shape), "batchx1x16");
  ir::TensorType scalar = ttype(DType::kInt64, {});
  Tensor zero = i64_scalar(0), one = i64_scalar(1);
  ir::TensorType b = infer_one(Node("Gather", 2).node, {&shape, &scalar}, {nullptr, &zero});
  ir::TensorType r = infer_one(Node("Range", 3).node, {&scalar, &b, &scalar}, {&zero, nullptr, &one});
  EXPECT_EQ(ir::sym_shape_to_string(r.shape), "batch");
  Tensor reps = i64({2, 3, 1});
  ir::TensorType reps_t = ttype(DType::kInt64, {3});
  EXPECT_EQ(ir::sym_shape_to_string(infer_one(Node("Tile", 2).node, {&x, &reps_t}, {nullptr, &reps}).shape),
            "batch*2x3x16");
  ir::TensorType size = infer_one(Node("Size", 1).node, {&x});
  EXPECT_EQ((*size.sym_value)[0].param, "batch*16");
  // A Reshape whose target is unknown keeps the rank when the target's length is known.
  ir::TensorType dyn = ttype(DType::kInt64, {2});
  ir::TensorType y = infer_one(Node("Reshape", 2).node, {&x, &dyn});
  ASSERT_TRUE(y.has_shape);
  EXPECT_EQ(y.shape.size(), 2u);
  EXPECT_FALSE(y.shape[0].known());
  // Slicing a symbolic dim over its whole range keeps its name; a partial slice does not.
  Tensor s = i64({0}), e = i64({kMax}), e2 = i64({1}), ax = i64({0});
  ir::TensorType one_t = ttype(DType::kInt64, {1});
  EXPECT_EQ(ir::sym_shape_to_string(
                infer_one(Node("Slice", 4).node, {&x, &one_t, &one_t, &one_t}, {nullptr, &s, &e, &ax}).shape),
            "batchx1x16");
  EXPECT_EQ(ir::sym_shape_to_string(
                infer_one(Node("Slice", 4).node, {&x, &one_t, &one_t, &one_t}, {nullptr, &s, &e2, &ax}).shape),
            "?x1x16");
  // Transpose / Squeeze / Unsqueeze / Concat / Split / Pad shapes.
  EXPECT_EQ(ir::sym_shape_to_string(infer_one(Node("Transpose", 1).ints("perm", {2, 0, 1}).node, {&x}).shape),
            "16xbatchx1");
  Tensor ax1 = i64({1});
  EXPECT_EQ(ir::sym_shape_to_string(infer_one(Node("Squeeze", 2).node, {&x, &one_t}, {nullptr, &ax1}).shape),
            "batchx16");
  EXPECT_FALSE(infer_one(Node("Squeeze", 1).node, {&x}).has_shape);  // batch might be 1
  ir::TensorType x2 = ttype(DType::kFloat32, {sym("batch"), 3, 16});
  EXPECT_EQ(ir::sym_shape_to_string(infer_one(Node("Concat", 2).i("axis", 1).node, {&x, &x2}).shape), "batchx4x16");
  auto parts = infer(Node("Split", 1, 2).i("axis", 2).node, {&x});
  EXPECT_EQ(ir::sym_shape_to_string(parts[1].shape), "batchx1x8");
  Tensor pads = i64({0, 1, 2, 0, 0, 3});
  ir::TensorType pads_t = ttype(DType::kInt64, {6});
  EXPECT_EQ(ir::sym_shape_to_string(infer_one(Node("Pad", 2).node, {&x, &pads_t}, {nullptr, &pads}).shape),
            "batchx2x21");
  Tensor idx2 = i64({0, 1}, {2});
  ir::TensorType idx2_t = ttype(DType::kInt64, {2});
  EXPECT_EQ(
      ir::sym_shape_to_string(infer_one(Node("Gather", 2).i("axis", 2).node, {&x, &idx2_t}, {nullptr, &idx2}).shape),
      "batchx1x2");
}

TEST(OpsShapeSymbolic, ErrorsNameTheNode) {
  ir::TensorType x = ttype(DType::kFloat32, {sym("batch"), 3});
  Node t("Transpose", 1);
  t.ints("perm", {0, 0});
  expect_error_naming([&] { infer(t.node, {&x}); }, t.node, ErrorCode::kInvalidModel);
  ir::TensorType shape = infer_one(Node("Shape", 1).node, {&x});
  Node g("Gather", 2);
  ir::TensorType scalar = ttype(DType::kInt64, {});
  Tensor five = i64_scalar(5);
  expect_error_naming([&] { infer(g.node, {&shape, &scalar}, {nullptr, &five}); }, g.node, ErrorCode::kInvalidModel);
}

}  // namespace
}  // namespace kilnrt::ops::optest
