// CUDA vs CPU-reference comparisons for the geometry layers (their op units' cuda/ folders): LpPool, CenterCropPad,
// Col2Im (1-D..3-D), AffineGrid (2-D / 3-D, align_corners), DeformConv (2-D: padding, strides, dilations, mask, bias,
// groups, offset groups) and TensorScatter (linear / circular, axes, omitted write_indices). Shape inputs are tried
// as constants and as graph inputs (sync points). Every layer must be placed on CUDA; 16-bit engines run the float
// cases (float32 islands, or native moves for CenterCropPad / TensorScatter). GPU tests skip with a message without a
// GPU; the support checks at the end run everywhere.
#include <random>

#include "backends/cuda/float32_island.h"
#include "cuda_backend_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }
Tensor f32(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, DType::kFloat32, s); }
template <typename T>
Tensor ints(DType dt, const Shape& s, uint32_t seed, int lo, int hi) {
  Tensor t = Tensor::empty(dt, s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) static_cast<T*>(t.raw())[i] = static_cast<T>(dist(rng));
  return t;
}
Tensor halves(const Tensor& t) {  // float32 -> float16 (rounded)
  Tensor h = Tensor::empty(DType::kFloat16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) h.data<uint16_t>()[i] = float_to_half(t.data<float>()[i]);
  return h;
}

// ---- LpPool --------------------------------------------------------------------------------------------------------
TEST(CudaGeom, LpPool) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x1 = random_tensor({2, 3, 9}, 1, -2.f, 2.f);
  const Tensor x2 = random_tensor({2, 3, 7, 8}, 2, -2.f, 2.f);
  const Tensor x3 = random_tensor({1, 2, 4, 5, 6}, 3, -2.f, 2.f);
  for (int64_t p : {1, 2, 3}) {
    SCOPED_TRACE("p=" + std::to_string(p));
    compare_on_cuda(Op("LpPool", 1).i("p", p).ints("kernel_shape", {3}).node, {x1}, {}, 18);
    compare_on_cuda(
        Op("LpPool", 1).i("p", p).ints("kernel_shape", {3, 2}).ints("pads", {1, 0, 1, 1}).ints("strides", {2, 1}).node,
        {x2}, {}, 18);
    compare_on_cuda(Op("LpPool", 1).i("p", p).ints("kernel_shape", {2, 2, 3}).node, {x3}, {}, 18);
  }
  compare_on_cuda(Op("LpPool", 1).ints("kernel_shape", {2, 2}).ints("dilations", {2, 2}).node, {x2}, {}, 18);
  compare_on_cuda(Op("LpPool", 1).ints("kernel_shape", {2, 3}).s("auto_pad", "SAME_UPPER").node, {x2}, {}, 18);
  compare_on_cuda(Op("LpPool", 1).ints("kernel_shape", {2, 3}).s("auto_pad", "SAME_LOWER").node, {x2}, {}, 18);
  compare_on_cuda(Op("LpPool", 1).ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).i("ceil_mode", 1).node, {x2}, {},
                  18);
  compare16_on_cuda(Op("LpPool", 1).ints("kernel_shape", {3, 2}).ints("pads", {1, 1, 0, 0}).node, {x2}, {}, 18, 4.0);
}

// ---- CenterCropPad -------------------------------------------------------------------------------------------------
TEST(CudaGeom, CenterCropPad) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({5, 7, 3}, 10);
  for (bool constant : {true, false}) {  // shape a constant, or a graph input read at a sync point
    SCOPED_TRACE(constant ? "constant shape" : "shape input");
    const std::vector<bool> c{false, constant};
    compare_on_cuda(Op("CenterCropPad", 2).node, {x, i64({3, 4, 3}, {3})}, c, 18);   // crop
    compare_on_cuda(Op("CenterCropPad", 2).node, {x, i64({8, 10, 3}, {3})}, c, 18);  // pad
    compare_on_cuda(Op("CenterCropPad", 2).node, {x, i64({2, 10, 4}, {3})}, c, 18);  // crop and pad
    compare_on_cuda(Op("CenterCropPad", 2).ints("axes", {0, 1}).node, {x, i64({4, 9}, {2})}, c, 18);
    compare_on_cuda(Op("CenterCropPad", 2).ints("axes", {-3, -2}).node, {x, i64({6, 2}, {2})}, c, 18);  // negative axes
    compare_on_cuda(Op("CenterCropPad", 2).ints("axes", {1}).node, {x, i64({0}, {1})}, c, 18);          // empty output
  }
  compare_on_cuda(Op("CenterCropPad", 2).node, {ints<int64_t>(DType::kInt64, {4, 5}, 11, -99, 99), i64({6, 3}, {2})},
                  {false, true}, 18);
  compare_on_cuda(Op("CenterCropPad", 2).node, {ints<uint8_t>(DType::kUInt8, {3, 6}, 12, 0, 255), i64({1, 9}, {2})},
                  {false, true}, 18);
  compare_on_cuda(Op("CenterCropPad", 2).node, {halves(random_tensor({4, 4}, 13)), i64({3, 7}, {2})}, {false, true},
                  18);
  compare_on_cuda(Op("CenterCropPad", 2).node, {Tensor::empty(DType::kFloat32, {0, 4}), i64({2, 2}, {2})},
                  {false, true}, 18);
  compare16_on_cuda(Op("CenterCropPad", 2).node, {x, i64({4, 9, 2}, {3})}, {false, true}, 18, 1.0);
}

// ---- Col2Im --------------------------------------------------------------------------------------------------------
TEST(CudaGeom, Col2Im) {
  KILNRT_SKIP_WITHOUT_GPU();
  // 2-D: image 5x5, block 1x5 -> L = 5 (the onnx example's geometry), channels 1 and 2.
  compare_on_cuda(Op("Col2Im", 3).node, {random_tensor({1, 5, 5}, 20), i64({5, 5}, {2}), i64({1, 5}, {2})},
                  {false, true, true}, 18);
  for (bool constant : {true, false}) {
    SCOPED_TRACE(constant ? "constant shapes" : "shape inputs");
    const std::vector<bool> c{false, constant, constant};
    // image 6x5, block 2x3, pads, strides, dilations: blocks ((6+1+0-3)/2+1 = 3) x ((5+1+1-3)/1+1 = 5) = 15.
    compare_on_cuda(Op("Col2Im", 3).ints("pads", {1, 1, 0, 1}).ints("strides", {2, 1}).ints("dilations", {2, 1}).node,
                    {random_tensor({2, 2 * 6, 15}, 21), i64({6, 5}, {2}), i64({2, 3}, {2})}, c, 18);
  }
  // 3-D (the 5d case's kind): image 3x4x5, block 1x2x2 -> 3*3*4 = 36 positions.
  compare_on_cuda(Op("Col2Im", 3).node, {random_tensor({1, 2 * 4, 36}, 22), i64({3, 4, 5}, {3}), i64({1, 2, 2}, {3})},
                  {false, true, true}, 18);
  // 1-D with stride 3 (gaps) and pads that drop values.
  compare_on_cuda(Op("Col2Im", 3).ints("strides", {3}).ints("pads", {2, 2}).node,
                  {random_tensor({2, 3 * 2, 4}, 23), i64({8}, {1}), i64({2}, {1})}, {false, true, true}, 18);
  // Empty batch.
  compare_on_cuda(Op("Col2Im", 3).node, {Tensor::empty(DType::kFloat32, {0, 4, 4}), i64({3, 3}, {2}), i64({2, 2}, {2})},
                  {false, true, true}, 18);
  compare16_on_cuda(Op("Col2Im", 3).ints("strides", {1, 2}).node,
                    {random_tensor({1, 4, 6}, 24), i64({3, 6}, {2}), i64({2, 2}, {2})}, {false, true, true}, 18, 4.0);
}

// ---- AffineGrid ----------------------------------------------------------------------------------------------------
TEST(CudaGeom, AffineGrid) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (int64_t align : {0, 1}) {
    SCOPED_TRACE("align_corners=" + std::to_string(align));
    compare_on_cuda(Op("AffineGrid", 2).i("align_corners", align).node,
                    {random_tensor({2, 2, 3}, 30), i64({2, 3, 5, 6}, {4})}, {false, true}, 20);
    compare_on_cuda(Op("AffineGrid", 2).i("align_corners", align).node,
                    {random_tensor({2, 3, 4}, 31), i64({2, 1, 3, 4, 5}, {5})}, {false, true}, 20);
    compare_on_cuda(Op("AffineGrid", 2).i("align_corners", align).node,
                    {random_tensor({1, 2, 3}, 32), i64({1, 1, 1, 4}, {4})}, {false, false},
                    20);  // height 1; size a graph input (sync point)
  }
  compare_on_cuda(Op("AffineGrid", 2).node, {Tensor::empty(DType::kFloat32, {0, 2, 3}), i64({0, 1, 3, 3}, {4})},
                  {false, true}, 20);
  compare16_on_cuda(Op("AffineGrid", 2).node, {random_tensor({2, 2, 3}, 33), i64({2, 3, 4, 4}, {4})}, {false, true}, 20,
                    3.0);
}

// ---- DeformConv ----------------------------------------------------------------------------------------------------
TEST(CudaGeom, DeformConv) {
  KILNRT_SKIP_WITHOUT_GPU();
  // Offsets up to +-2.5 pixels move taps outside the image (zero there) and between pixels.
  {
    const Tensor x = random_tensor({2, 3, 5, 6}, 40), w = random_tensor({4, 3, 2, 2}, 41);
    compare_on_cuda(Op("DeformConv", 3).node, {x, w, random_tensor({2, 8, 4, 5}, 42, -2.5f, 2.5f)}, {}, 19);
    compare_on_cuda(Op("DeformConv", 3).ints("pads", {1, 1, 1, 1}).node,
                    {x, w, random_tensor({2, 8, 6, 7}, 43, -2.5f, 2.5f)}, {}, 19);
    // bias and mask, strides and dilations: oh = (5+1+0-3)/2+1 = 2, ow = (6+0+1-3)/1+1 = 5.
    compare_on_cuda(
        Op("DeformConv", 5).ints("pads", {1, 0, 0, 1}).ints("strides", {2, 1}).ints("dilations", {2, 2}).node,
        {x, w, random_tensor({2, 8, 2, 5}, 44, -2.5f, 2.5f), random_tensor({4}, 45), random_tensor({2, 4, 2, 5}, 46)},
        {false, true, false, true, false}, 19);
    // Mask without bias (B omitted).
    compare_on_cuda(Op("DeformConv", 5).omit_input(3).node,
                    {x, w, random_tensor({2, 8, 4, 5}, 47, -2.5f, 2.5f), Tensor(), random_tensor({2, 4, 4, 5}, 48)}, {},
                    19);
  }
  {  // groups 2 and offset groups 2 (and offset groups 4 over 4 channels)
    const Tensor x = random_tensor({1, 4, 6, 5}, 50);
    compare_on_cuda(
        Op("DeformConv", 4).i("group", 2).i("offset_group", 2).node,
        {x, random_tensor({6, 2, 3, 3}, 51), random_tensor({1, 36, 4, 3}, 52, -2.f, 2.f), random_tensor({6}, 53)}, {},
        19);
    compare_on_cuda(Op("DeformConv", 3).i("offset_group", 4).node,
                    {x, random_tensor({2, 4, 2, 2}, 54), random_tensor({1, 32, 5, 4}, 55, -1.5f, 1.5f)}, {}, 19);
    // Integer offsets (the taps land on pixels exactly).
    Tensor off = ints<float>(DType::kFloat32, {1, 8, 5, 4}, 56, -2, 2);
    compare_on_cuda(Op("DeformConv", 3).node, {x, random_tensor({3, 4, 2, 2}, 57), off}, {}, 19);
  }
  compare16_on_cuda(
      Op("DeformConv", 3).node,
      {random_tensor({1, 2, 4, 4}, 58), random_tensor({2, 2, 2, 2}, 59), random_tensor({1, 8, 3, 3}, 60, -1.f, 1.f)},
      {}, 19, 8.0);
}

// ---- TensorScatter -------------------------------------------------------------------------------------------------
TEST(CudaGeom, TensorScatter) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor cache = random_tensor({2, 3, 6, 4}, 70), update = random_tensor({2, 3, 2, 4}, 71);
  // linear (default axis -2), write_indices a graph input and a constant.
  compare_on_cuda(Op("TensorScatter", 3).node, {cache, update, i64({1, 4}, {2})}, {}, 24);
  compare_on_cuda(Op("TensorScatter", 3).node, {cache, update, i64({0, 3}, {2})}, {false, false, true}, 24);
  // circular: positions wrap (5, 6 -> 5, 0) and a negative start.
  const Op circular = Op("TensorScatter", 3).s("mode", "circular");
  const Tensor got =
      compare_on_cuda(circular.node, {cache, update, i64({5, -1}, {2})}, {}, 24).at(circular.node.outputs[0]);
  EXPECT_EQ(got.data<float>()[0], update.data<float>()[4]);  // batch 0, row 0 of the cache <- update row 1
  // write_indices omitted (zeros), axis 1 of a 3-D cache, the whole length.
  compare_on_cuda(Op("TensorScatter", 2).i("axis", 1).node,
                  {random_tensor({2, 5, 3}, 72), random_tensor({2, 5, 3}, 73)}, {}, 24);
  compare_on_cuda(Op("TensorScatter", 3).i("axis", -1).s("mode", "circular").node,
                  {random_tensor({3, 2, 4}, 74), random_tensor({3, 2, 3}, 75), i64({2, 3, 0}, {3})}, {}, 24);
  // Other dtypes: int64, float16 (moved natively), an empty update.
  compare_on_cuda(Op("TensorScatter", 3).node,
                  {ints<int64_t>(DType::kInt64, {2, 4, 3}, 76, -50, 50),
                   ints<int64_t>(DType::kInt64, {2, 1, 3}, 77, -50, 50), i64({3, 0}, {2})},
                  {}, 24);
  compare_on_cuda(Op("TensorScatter", 3).node, {halves(cache), halves(update), i64({2, 0}, {2})}, {}, 24);
  compare_on_cuda(Op("TensorScatter", 3).node, {cache, Tensor::empty(DType::kFloat32, {2, 3, 0, 4}), i64({6, 6}, {2})},
                  {}, 24);
  compare16_on_cuda(Op("TensorScatter", 3).node, {cache, update, i64({1, 4}, {2})}, {}, 24, 1.0);
  // A constant linear-mode position past the cache is refused like the CPU reference does.
  OneNode bad(Op("TensorScatter", 3).node, {cache, update, i64({0, 5}, {2})}, {false, false, true}, 24);
  EXPECT_THROW(run_cpu(bad.g, bad.feeds), Error);
  try {
    run_cuda(bad.g, bad.feeds);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside the cache length"), std::string::npos) << e.what();
  }
}

// ---- support checks (no GPU needed) --------------------------------------------------------------------------------
TEST(CudaGeom, SupportCheckAccepts) {
  std::vector<OneNode> nets;
  const Tensor x = random_tensor({1, 2, 4, 4}, 80);
  nets.emplace_back(Op("LpPool", 1).ints("kernel_shape", {2, 2}).node, std::vector<Tensor>{x}, std::vector<bool>{}, 18);
  nets.emplace_back(Op("LpPool", 1).ints("kernel_shape", {2, 2}).node, std::vector<Tensor>{halves(x)},
                    std::vector<bool>{}, 18);  // float16: a float32 island
  nets.emplace_back(Op("CenterCropPad", 2).node, std::vector<Tensor>{x, i64({1, 2, 3, 5}, {4})}, std::vector<bool>{},
                    18);
  nets.emplace_back(Op("Col2Im", 3).node, std::vector<Tensor>{random_tensor({1, 4, 9}, 81), i64({4, 4}, {2}),
                                                              i64({2, 2}, {2})},
                    std::vector<bool>{false, true, true}, 18);
  nets.emplace_back(Op("AffineGrid", 2).node, std::vector<Tensor>{random_tensor({1, 2, 3}, 82), i64({1, 1, 3, 3}, {4})},
                    std::vector<bool>{false, true}, 20);
  nets.emplace_back(Op("DeformConv", 5).node,
                    std::vector<Tensor>{x, random_tensor({2, 2, 2, 2}, 83), random_tensor({1, 8, 3, 3}, 84),
                                        random_tensor({2}, 85), random_tensor({1, 4, 3, 3}, 86)},
                    std::vector<bool>{}, 19);
  nets.emplace_back(Op("TensorScatter", 3).node,
                    std::vector<Tensor>{random_tensor({1, 2, 4, 2}, 87), random_tensor({1, 2, 1, 2}, 88), i64({1}, {1})},
                    std::vector<bool>{}, 24);
  for (const OneNode& net : nets) {
    SCOPED_TRACE(net.g.nodes.back().op_type);
    EXPECT_EQ(backends::cuda::cuda_supports_or_island(net.g.nodes.back(), net.g), "");
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(net.g));
  }
}

// ... and refuses dtypes no layer runs, saying why.
TEST(CudaGeom, SupportCheckRefuses) {
  OneNode scatter(Op("TensorScatter", 3).node,
                  {random_tensor({1, 2, 4, 2}, 90), random_tensor({1, 2, 1, 2}, 91),
                   ints<int32_t>(DType::kInt32, {1}, 92, 0, 2)},
                  {}, 24);
  EXPECT_NE(backends::cuda::cuda_supports(scatter.g.nodes.back(), scatter.g).find("int64"), std::string::npos);
  OneNode pool(Op("LpPool", 1).ints("kernel_shape", {2}).node, {ints<int32_t>(DType::kInt32, {1, 1, 4}, 93, 0, 9)},
               {}, 18);
  EXPECT_NE(backends::cuda::cuda_supports(pool.g.nodes.back(), pool.g).find("float32"), std::string::npos);
}

}  // namespace
}  // namespace kilnrt::cudatest
