// CUDA vs CPU-reference comparisons for the CUDA layer of CumProd (exclusive / reverse, negative and int32 axes, axis
// as a graph input, float32 / float64 / int32 / int64 with wrapping). float16 / bfloat16 models run as float32 islands
// and are compared with the CPU reference too. The node must be placed on CUDA; GPU tests skip with a message without a
// GPU; the support checks at the end run everywhere.
#include <cmath>
#include <cstring>
#include <random>

#include "cuda_one_op_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

// ---- CumProd
// ---------------------------------------------------------------------------------------------------------------
TEST(CudaCumProd, CumProd) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({3, 4, 5}, 700, 0.5f, 1.5f);
  for (int flags = 0; flags < 4; ++flags) {
    Op op("CumProd", 2);
    op.i("exclusive", flags & 1).i("reverse", (flags >> 1) & 1);
    for (int64_t axis : {-3, -1, 0, 1, 2}) {
      SCOPED_TRACE("flags " + std::to_string(flags) + " axis " + std::to_string(axis));
      compare_on_cuda(op.node, {x, i64({axis}, {})}, {}, 26);  // axis a graph input (read on the device)
      compare_on_cuda(op.node, {x, i32({static_cast<int32_t>(axis)}, {})}, {false, true}, 26);  // int32 constant axis
      compare_on_cuda(op.node, {to_dtype(x, DType::kFloat64), i64({axis}, {})}, {}, 26, 1e-12, 1e-12);
      compare_on_cuda(op.node, {ints<int32_t>(DType::kInt32, {3, 4, 5}, 701, -3, 3), i64({axis}, {})}, {}, 26, 0, 0);
      compare_on_cuda(op.node, {ints<int64_t>(DType::kInt64, {3, 4, 5}, 702, -5, 5), i64({axis}, {})}, {}, 26, 0, 0);
    }
  }
  // Integer overflow wraps like the CPU reference.
  compare_on_cuda(Op("CumProd", 2).node, {i64({int64_t(1) << 40, int64_t(1) << 40, 3}, {3}), i64({0}, {})}, {}, 26, 0,
                  0);
  compare_on_cuda(Op("CumProd", 2).node, {i32({1 << 20, 1 << 20, 7}, {3}), i64({0}, {})}, {}, 26, 0, 0);
  compare_on_cuda(Op("CumProd", 2).node, {random_tensor({0, 3}, 703), i64({1}, {})}, {}, 26);
  compare_16bit(Op("CumProd", 2).i("reverse", 1).node, {random_tensor({2, 6}, 704, 0.5f, 1.5f), i64({1}, {})}, 26);
}

// ---- support checks (no GPU needed)
// ----------------------------------------------------------------------------------
TEST(CudaCumProd, SupportCheckAccepts) {
  std::vector<OneNode> nets;
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    const Tensor x = dt == DType::kFloat32   ? random_tensor({2, 3}, 8)
                     : dt == DType::kFloat64 ? to_dtype(random_tensor({2, 3}, 8), dt)
                     : dt == DType::kInt32   ? ints<int32_t>(dt, {2, 3}, 9, 0, 3)
                                             : ints<int64_t>(dt, {2, 3}, 9, 0, 3);
    nets.emplace_back(Op("CumProd", 2).node, std::vector<Tensor>{x, i32({1}, {})}, std::vector<bool>{}, 26);
  }
  expect_supported(nets);
}

// ... and refuses what the kernel does not run, saying why.
TEST(CudaCumProd, SupportCheckRefuses) {
  OneNode u8(Op("CumProd", 2).node, {ints<uint8_t>(DType::kUInt8, {4}, 3, 0, 3), i64({0}, {})}, {}, 26);
  EXPECT_NE(backends::cuda::cuda_supports(u8.g.nodes[0], u8.g).find("uint8"), std::string::npos);
}

}  // namespace
}  // namespace kilnrt::cudatest
