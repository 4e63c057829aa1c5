// Unique with NaN on the CPU reference, against numpy.unique (what ONNX's reference implementation calls):
// flattened, NaNs are one value sorted after every number; along an axis, slices holding a NaN are each distinct
// (numpy compares them as records) and sort after equal prefixes. sorted=0 keeps the order of first occurrence.
#include <cmath>

#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

constexpr double kNaN = NAN;

struct UniqueOut {
  std::vector<double> y;
  std::vector<int64_t> indices, inverse, counts;
};

UniqueOut unique(const Tensor& x, int sorted, const int64_t* axis = nullptr) {
  Node n("Unique", 1, 4);
  n.i("sorted", sorted);
  if (axis) n.i("axis", *axis);
  std::vector<Tensor> out = run(n.node, {&x}, 11);
  return {values(out[0]), ints_of(out[1]), ints_of(out[2]), ints_of(out[3])};
}

void expect_same(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << i;
    else
      EXPECT_EQ(got[i], want[i]) << i;
  }
}

TEST(Unique, NaNFirstIsOneValueSortedLast) {
  for (DType dt : {DType::kFloat32, DType::kFloat64}) {
    Tensor x = dt == DType::kFloat32 ? f32({kNaN, 3, 1, 2, 1}) : f64({kNaN, 3, 1, 2, 1}, {5});
    UniqueOut u = unique(x, 1);
    expect_same(u.y, {1, 2, 3, kNaN});
    EXPECT_EQ(u.indices, (std::vector<int64_t>{2, 3, 1, 0}));
    EXPECT_EQ(u.inverse, (std::vector<int64_t>{3, 2, 0, 1, 0}));
    EXPECT_EQ(u.counts, (std::vector<int64_t>{2, 1, 1, 1}));
  }
}

TEST(Unique, NaNInTheMiddleIsKept) {
  Tensor x = f32({3, 1, kNaN, 2, 1});
  UniqueOut u = unique(x, 1);
  expect_same(u.y, {1, 2, 3, kNaN});
  EXPECT_EQ(u.indices, (std::vector<int64_t>{1, 3, 0, 2}));
  EXPECT_EQ(u.inverse, (std::vector<int64_t>{2, 0, 3, 1, 0}));
  EXPECT_EQ(u.counts, (std::vector<int64_t>{2, 1, 1, 1}));
}

TEST(Unique, SeveralNaNsCollapseFlattened) {
  Tensor x = f32({kNaN, 2, kNaN, 1, kNaN});
  UniqueOut u = unique(x, 1);
  expect_same(u.y, {1, 2, kNaN});
  EXPECT_EQ(u.indices, (std::vector<int64_t>{3, 1, 0}));
  EXPECT_EQ(u.inverse, (std::vector<int64_t>{2, 1, 2, 0, 2}));
  EXPECT_EQ(u.counts, (std::vector<int64_t>{1, 1, 3}));
  UniqueOut o = unique(x, 0);  // first-occurrence order
  expect_same(o.y, {kNaN, 2, 1});
  EXPECT_EQ(o.indices, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(o.inverse, (std::vector<int64_t>{0, 1, 0, 2, 0}));
  EXPECT_EQ(o.counts, (std::vector<int64_t>{3, 1, 1}));
}

TEST(Unique, NaNSlicesAlongAnAxisAreDistinct) {
  // numpy.unique([[1, nan], [0, 1], [1, nan], [0, 1]], axis=0)
  Tensor x = f32({1, kNaN, 0, 1, 1, kNaN, 0, 1}, {4, 2});
  const int64_t axis = 0;
  UniqueOut u = unique(x, 1, &axis);
  expect_same(u.y, {0, 1, 1, kNaN, 1, kNaN});
  EXPECT_EQ(u.indices, (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(u.inverse, (std::vector<int64_t>{1, 0, 2, 0}));
  EXPECT_EQ(u.counts, (std::vector<int64_t>{2, 1, 1}));
  // A 1-D input along axis 0: each NaN on its own, after the numbers.
  Tensor v = f32({kNaN, kNaN, 1});
  UniqueOut w = unique(v, 1, &axis);
  expect_same(w.y, {1, kNaN, kNaN});
  EXPECT_EQ(w.indices, (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(w.inverse, (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(w.counts, (std::vector<int64_t>{1, 1, 1}));
}

}  // namespace
}  // namespace kilnrt::ops::optest
