// CUDA vs CPU-reference comparison of MeanVarianceNormalization (float32) over the default axes, one axis, all axes
// and a long last axis. Skips with a message without a GPU.
#include "cuda_one_op_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

TEST(CudaMeanVarianceNormalization, CompareWithCpuOverAxes) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 3, 4, 5}, 101, -2.f, 3.f);
  compare_node(Op("MeanVarianceNormalization", 1).node, {x}, {}, 13, 1e-5, 1e-4);
  compare_node(Op("MeanVarianceNormalization", 1).ints("axes", {1}).node, {x}, {}, 13, 1e-5, 1e-4);
  compare_node(Op("MeanVarianceNormalization", 1).ints("axes", {0, 1, 2, 3}).node, {x}, {}, 13, 1e-5, 1e-4);
  compare_node(Op("MeanVarianceNormalization", 1).ints("axes", {-1}).node, {random_tensor({3, 700}, 102)}, {}, 13, 1e-5,
               1e-4);
}

}  // namespace
}  // namespace kilnrt::cudatest
