// RoiAlign on degenerate feature maps on the CPU reference.
#include "ops/math/op_test_util.h"

namespace kilnrt::ops::optest {
namespace {

TEST(RoiAlign, EmptyFeatureMapIsRefusedNamingTheNode) {
  Tensor rois = f32({0, 0, 1, 1}, {1, 4});
  Tensor bidx = i64({0});
  for (const Shape& s : {Shape{1, 1, 0, 4}, Shape{1, 1, 4, 0}, Shape{1, 2, 0, 0}}) {
    Tensor x = Tensor::empty(DType::kFloat32, s);
    for (const char* mode : {"avg", "max"}) {
      Node n("RoiAlign", 3);
      n.i("output_height", 2).i("output_width", 2).s("mode", mode);
      expect_error_naming(
          [&] {
            run1(n.node, {&x, &rois, &bidx}, 16);
          },
          n.node, ErrorCode::kInvalidArgument, "empty feature map");
    }
  }
}

TEST(RoiAlign, EmptyFeatureMapWithoutRoisGivesEmptyOutput) {
  Tensor x = Tensor::empty(DType::kFloat32, {1, 3, 0, 4});
  Tensor rois = Tensor::empty(DType::kFloat32, {0, 4});
  Tensor bidx = Tensor::empty(DType::kInt64, {0});
  Node n("RoiAlign", 3);
  n.i("output_height", 2).i("output_width", 2);
  Tensor y = run1(n.node, {&x, &rois, &bidx}, 16);
  EXPECT_EQ(y.shape(), (Shape{0, 3, 2, 2}));
}

TEST(RoiAlign, OnePixelMapStillWorks) {
  Tensor x = f32({5.f}, {1, 1, 1, 1});
  Tensor rois = f32({0, 0, 1, 1}, {1, 4});
  Tensor bidx = i64({0});
  Node n("RoiAlign", 3);
  n.i("output_height", 1).i("output_width", 1).i("sampling_ratio", 1);
  expect_values(run1(n.node, {&x, &rois, &bidx}, 16), {5.0});
}

}  // namespace
}  // namespace kilnrt::ops::optest
