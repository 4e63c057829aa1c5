// CUDA vs CPU-reference comparison of RoiAlign in avg and max mode: output sizes, sampling_ratio, spatial_scale,
// rois partly outside the image, and both coordinate modes (opset 16 half_pixel, opset 10). Skips with a message
// without a GPU.
#include "cuda_one_op_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

TEST(CudaRoiAlign, AvgAndMaxModesMatchCpu) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 3, 8, 8}, 104);
  const Tensor rois = f32({0, 0, 4, 4, 2, 1, 7, 6, 0.5f, 1.5f, 3.2f, 7.9f, -1, -1, 9, 9}, {4, 4});
  const Tensor bidx = i64({0, 1, 1, 0}, {4});
  for (const char* mode : {"avg", "max"}) {
    SCOPED_TRACE(mode);
    compare_node(Op("RoiAlign", 3).s("mode", mode).i("output_height", 3).i("output_width", 2).node, {x, rois, bidx}, {},
                 16, 1e-5, 1e-4);
    compare_node(Op("RoiAlign", 3).s("mode", mode).i("sampling_ratio", 2).f("spatial_scale", 0.5f).node,
                 {x, rois, bidx}, {}, 16, 1e-5, 1e-4);
    compare_node(Op("RoiAlign", 3).s("mode", mode).i("output_height", 2).i("output_width", 4).node, {x, rois, bidx}, {},
                 10, 1e-5, 1e-4);
  }
}

}  // namespace
}  // namespace kilnrt::cudatest
