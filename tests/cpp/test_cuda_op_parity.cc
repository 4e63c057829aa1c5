// CUDA vs CPU-reference one-node comparisons of the less common ops' CUDA layers (math unary, predicates, Mean,
// ArgMax/ArgMin, Hardmax, Trilu, CumSum, Gather/Scatter families, DepthToSpace/SpaceToDepth, EyeLike,
// Instance/GroupNormalization, LRN, ConvTranspose, losses, Einsum, Pad/Tile, GridSample, CastLike, Resize, TopK,
// QuantizeLinear / DequantizeLinear, ReverseSequence, Det, RNN / GRU / LSTM, BitShift). GPU tests skip cleanly
// without a GPU.
#include <limits>

#include "cuda_backend_test_util.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }
Tensor i32(const std::vector<int32_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt32, s); }
Tensor f32(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, DType::kFloat32, s); }

TEST(CudaOpParity, MathUnaryAndPredicates) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({3, 4, 5}, 31, -0.95f, 0.95f);
  for (const char* op : {"Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Atanh", "IsNaN"}) {
    SCOPED_TRACE(op);
    compare_node(Op(op, 1).node, {x}, {}, 17, 1e-5, 1e-4);
  }
  compare_node(Op("Acosh", 1).node, {random_tensor({40}, 32, 1.f, 9.f)}, {}, 17, 1e-5, 1e-4);
  compare_node(Op("Shrink", 1).f("lambd", 0.3f).f("bias", 0.1f).node, {x});
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor special = f32({1.f, inf, -inf, nan, 0.f, -2.f}, {6});
  compare_node(Op("IsNaN", 1).node, {special});
  compare_node(Op("IsInf", 1).node, {special}, {}, 20);
  compare_node(Op("IsInf", 1).i("detect_negative", 0).node, {special}, {}, 20);
  compare_node(Op("IsInf", 1).i("detect_positive", 0).node, {special}, {}, 20);
  Tensor b = Tensor::empty(DType::kBool, {2, 3});
  for (int i = 0; i < 6; ++i) b.data<uint8_t>()[i] = i % 2;
  compare_node(Op("Not", 1).node, {b});
}

TEST(CudaOpParity, MeanArgHardmax) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor a = random_tensor({2, 3, 4}, 33), b = random_tensor({3, 1}, 34), c = random_tensor({4}, 35);
  compare_node(Op("Mean", 3).node, {a, b, c});
  compare_node(Op("Mean", 1).node, {a});
  for (const char* op : {"ArgMax", "ArgMin"}) {
    SCOPED_TRACE(op);
    compare_node(Op(op, 1).i("axis", 1).node, {a});
    compare_node(Op(op, 1).i("axis", -1).i("keepdims", 0).node, {a});
    compare_node(Op(op, 1).i("axis", 0).i("select_last_index", 1).node, {f32({1, 3, 3, 0, 3, 0}, {3, 2})});
  }
  compare_node(Op("Hardmax", 1).node, {a}, {}, 13);
  compare_node(Op("Hardmax", 1).i("axis", 1).node, {a}, {}, 13);
  compare_node(Op("Hardmax", 1).i("axis", 1).node, {a}, {}, 11);
}

TEST(CudaOpParity, TriluAndCumSum) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 4, 5}, 36);
  for (int64_t upper : {0, 1})
    for (int64_t k : {-2, 0, 1, 7}) {
      compare_node(Op("Trilu", 2).i("upper", upper).node, {x, i64({k}, {})}, {}, 14);
      compare_node(Op("Trilu", 2).i("upper", upper).node, {x, i64({k}, {})}, {false, true}, 14);
    }
  compare_node(Op("Trilu", 1).node, {i64({1, 2, 3, 4, 5, 6}, {2, 3})}, {}, 14);
  const Tensor y = random_tensor({3, 4, 2}, 37);
  for (int64_t exclusive : {0, 1})
    for (int64_t reverse : {0, 1})
      for (int64_t axis : {0, 1, -1}) {
        compare_node(Op("CumSum", 2).i("exclusive", exclusive).i("reverse", reverse).node, {y, i64({axis}, {})}, {},
                     14);
        compare_node(Op("CumSum", 2).i("exclusive", exclusive).i("reverse", reverse).node,
                     {y, i32({int32_t(axis)}, {})}, {false, true}, 14);
      }
  compare_node(Op("CumSum", 2).node, {i64({1, 2, 3, 4, 5}, {5}), i64({0}, {})}, {}, 14);
}

TEST(CudaOpParity, GatherScatter) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor data = random_tensor({3, 4}, 38);
  compare_node(Op("GatherElements", 2).i("axis", 1).node, {data, i64({0, 3, -1, 2, 1, 1}, {3, 2})});
  compare_node(Op("GatherElements", 2).i("axis", 0).node, {data, i32({0, 2, 1, 1, 2, 0, 0, 1}, {2, 4})});
  const Tensor upd = random_tensor({2, 3}, 39);
  const Tensor idx = i64({1, 0, 3, 2, -1, 0}, {2, 3});
  compare_node(Op("ScatterElements", 3).i("axis", 1).node, {data, idx, upd}, {}, 18);
  for (const char* red : {"add", "mul", "max", "min"}) {
    SCOPED_TRACE(red);
    compare_node(Op("ScatterElements", 3).i("axis", 1).s("reduction", red).node,
                 {data, i64({1, 1, 3, 2, 2, 2}, {2, 3}), upd}, {}, 18);
  }
  const Tensor d3 = random_tensor({4, 3, 2}, 40);
  compare_node(Op("ScatterND", 3).node, {d3, i64({2, 0}, {2, 1}), random_tensor({2, 3, 2}, 41)}, {}, 18);
  compare_node(Op("ScatterND", 3).s("reduction", "add").node,
               {d3, i64({1, 2, 1, 2, 3, 0}, {3, 2}), random_tensor({3, 2}, 42)}, {}, 18);
  compare_node(Op("GatherND", 2).node, {d3, i64({1, 2, 3, 0}, {2, 2})}, {}, 13);
  compare_node(Op("GatherND", 2).node, {d3, i64({3, 1}, {2, 1})}, {}, 13);
  compare_node(Op("GatherND", 2).i("batch_dims", 1).node, {d3, i64({1, 2, 0, 1}, {4, 1})}, {}, 13);
}

TEST(CudaOpParity, LayoutAndEye) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 8, 3, 2}, 43);
  compare_node(Op("DepthToSpace", 1).i("blocksize", 2).node, {x});
  compare_node(Op("DepthToSpace", 1).i("blocksize", 2).s("mode", "CRD").node, {x});
  compare_node(Op("SpaceToDepth", 1).i("blocksize", 2).node, {random_tensor({2, 3, 4, 6}, 44)});
  compare_node(Op("EyeLike", 1).node, {random_tensor({3, 5}, 45)});
  compare_node(Op("EyeLike", 1).i("k", -1).i("dtype", int64_t(DType::kInt64)).node, {random_tensor({4, 3}, 46)});
}

TEST(CudaOpParity, NormalizationAndLrn) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 6, 5, 7}, 47, -3.f, 3.f);
  compare_node(Op("InstanceNormalization", 3).f("epsilon", 1e-3f).node,
               {x, random_tensor({6}, 48), random_tensor({6}, 49)}, {}, 17, 1e-4, 1e-4);
  compare_node(Op("GroupNormalization", 3).i("num_groups", 3).node, {x, random_tensor({6}, 50), random_tensor({6}, 51)},
               {}, 21, 1e-4, 1e-4);
  compare_node(Op("GroupNormalization", 3).i("num_groups", 2).node, {x, random_tensor({2}, 52), random_tensor({2}, 53)},
               {}, 18, 1e-4, 1e-4);
  compare_node(Op("LRN", 1).i("size", 3).f("alpha", 0.01f).node, {x}, {}, 17, 1e-5, 1e-4);
  compare_node(Op("LRN", 1).i("size", 4).node, {x}, {}, 17, 1e-5, 1e-4);
}

TEST(CudaOpParity, ConvTranspose) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 4, 5, 6}, 54);
  const Tensor w = random_tensor({4, 3, 3, 3}, 55), bias = random_tensor({3}, 56);
  compare_node(Op("ConvTranspose", 3).node, {x, w, bias}, {false, true, true}, 17, 1e-4, 1e-4);
  compare_node(Op("ConvTranspose", 2).ints("strides", {2, 2}).ints("pads", {1, 0, 1, 1}).node, {x, w}, {}, 17, 1e-4,
               1e-4);
  compare_node(
      Op("ConvTranspose", 2).ints("strides", {2, 3}).ints("dilations", {2, 1}).ints("output_padding", {1, 1}).node,
      {x, w}, {}, 17, 1e-4, 1e-4);
  compare_node(Op("ConvTranspose", 2).ints("strides", {2, 2}).ints("output_shape", {11, 13}).node, {x, w}, {}, 17, 1e-4,
               1e-4);
  compare_node(Op("ConvTranspose", 2).ints("strides", {2, 2}).s("auto_pad", "SAME_UPPER").node, {x, w}, {}, 17, 1e-4,
               1e-4);
  compare_node(Op("ConvTranspose", 2).i("group", 2).node, {x, random_tensor({4, 2, 2, 3}, 57)}, {}, 17, 1e-4, 1e-4);
  compare_node(Op("ConvTranspose", 2).ints("strides", {3}).node,
               {random_tensor({1, 2, 7}, 58), random_tensor({2, 3, 4}, 59)}, {}, 17, 1e-4, 1e-4);
}

TEST(CudaOpParity, Losses) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor scores = random_tensor({3, 5, 2}, 60, -2.f, 2.f);
  const Tensor target = i64({0, 4, 2, 2, 1, 3}, {3, 2}), w = random_tensor({5}, 61, 0.1f, 1.f);
  for (const char* red : {"none", "sum", "mean"}) {
    SCOPED_TRACE(red);
    compare_node(Op("NegativeLogLikelihoodLoss", 2).s("reduction", red).node, {scores, target}, {}, 13, 1e-5, 1e-4);
    compare_node(Op("NegativeLogLikelihoodLoss", 3).s("reduction", red).i("ignore_index", 2).node, {scores, target, w},
                 {}, 13, 1e-5, 1e-4);
    compare_node(Op("SoftmaxCrossEntropyLoss", 2).s("reduction", red).node, {scores, target}, {}, 13, 1e-5, 1e-4);
    compare_node(Op("SoftmaxCrossEntropyLoss", 3, 2).s("reduction", red).i("ignore_index", 4).node, {scores, target, w},
                 {}, 13, 1e-5, 1e-4);
  }
  compare_node(Op("SoftmaxCrossEntropyLoss", 2).node, {random_tensor({4, 6}, 62), i32({5, 0, 3, 1}, {4})}, {}, 13, 1e-5,
               1e-4);
}

TEST(CudaOpParity, EinsumPadTile) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor a = random_tensor({2, 3, 4}, 63), b = random_tensor({2, 4, 5}, 64);
  compare_node(Op("Einsum", 2).s("equation", "bij,bjk->bik").node, {a, b}, {}, 12, 1e-5, 1e-4);
  compare_node(Op("Einsum", 1).s("equation", "ijk->kji").node, {a}, {}, 12);
  compare_node(Op("Einsum", 1).s("equation", "ijk").node, {a}, {}, 12);
  compare_node(Op("Einsum", 1).s("equation", "...ii->...i").node, {random_tensor({2, 3, 3}, 65)}, {}, 12);
  compare_node(Op("Einsum", 1).s("equation", "ij->").node, {random_tensor({3, 4}, 66)}, {}, 12, 1e-5, 1e-4);
  compare_node(Op("Einsum", 2).s("equation", "i,i").node, {random_tensor({7}, 67), random_tensor({7}, 68)}, {}, 12,
               1e-5, 1e-4);
  compare_node(Op("Einsum", 3).s("equation", "ij,jk,kl->il").node,
               {random_tensor({2, 3}, 69), random_tensor({3, 4}, 70), random_tensor({4, 2}, 71)}, {}, 12, 1e-5, 1e-4);
  const Tensor x = random_tensor({2, 3, 4}, 72);
  const Tensor pads = i64({0, 1, 2, 1, 2, -1}, {6});
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    SCOPED_TRACE(mode);
    compare_node(Op("Pad", 2).s("mode", mode).node, {x, pads}, {false, true}, 13);
  }
  compare_node(Op("Pad", 3).node, {x, pads, f32({2.5f}, {})}, {false, true, true}, 13);
  compare_node(Op("Pad", 4).s("mode", "reflect").node, {x, i64({2, 3, 1, 3}, {4}), f32({0.f}, {}), i64({-1, 1}, {2})},
               {false, true, true, true}, 18);
  compare_node(Op("Pad", 1).ints("pads", {1, 0, 0, 0, 1, 2}).f("value", -1.f).node, {x}, {}, 2);
  compare_node(Op("Pad", 2).node, {i64({1, 2, 3, 4}, {2, 2}), i64({1, 1, 0, 2}, {4})}, {false, true}, 13);
  compare_node(Op("Tile", 2).node, {x, i64({2, 1, 3}, {3})}, {false, true}, 13);
  compare_node(Op("Tile", 2).node, {i64({1, 2, 3}, {3}), i64({4}, {1})}, {false, true}, 13);
}

TEST(CudaOpParity, GridSampleCastLike) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 3, 5, 6}, 73), grid = random_tensor({2, 4, 7, 2}, 74, -1.2f, 1.2f);
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* pad : {"zeros", "border", "reflection"})
      for (int64_t align : {0, 1}) {
        SCOPED_TRACE(std::string(mode) + " " + pad + " " + std::to_string(align));
        compare_node(Op("GridSample", 2).s("mode", mode).s("padding_mode", pad).i("align_corners", align).node,
                     {x, grid}, {}, 16, 1e-5, 1e-4);
      }
  compare_node(Op("CastLike", 2).node, {random_tensor({3, 4}, 75, -9.f, 9.f), i64({0}, {1})}, {}, 15);
  compare_node(Op("CastLike", 2).node, {i64({1, -2, 3}, {3}), f32({0.f}, {1})}, {}, 15);
}

TEST(CudaOpParity, Resize) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({1, 2, 4, 5}, 76);
  const Tensor up = f32({1.f, 1.f, 2.f, 1.5f}, {4}), down = f32({1.f, 1.f, 0.6f, 0.5f}, {4});
  const Tensor empty = f32({}, {0});
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const char* coord : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                              "tf_half_pixel_for_nearest", "half_pixel_symmetric"})
      for (const Tensor* sc : {&up, &down}) {
        SCOPED_TRACE(std::string(mode) + " " + coord);
        compare_node(Op("Resize", 3).s("mode", mode).s("coordinate_transformation_mode", coord).node, {x, empty, *sc},
                     {false, true, true}, 19, 1e-5, 1e-4);
      }
  for (const char* nm : {"round_prefer_ceil", "floor", "ceil"})
    compare_node(Op("Resize", 3).s("nearest_mode", nm).node, {x, empty, up}, {false, true, true}, 13);
  compare_node(Op("Resize", 4).s("mode", "linear").node, {x, empty, empty, i64({1, 2, 7, 3}, {4})},
               {false, true, true, true}, 13, 1e-5, 1e-4);
  compare_node(Op("Resize", 4).s("mode", "cubic").i("exclude_outside", 1).node,
               {x, empty, empty, i64({1, 2, 7, 3}, {4})}, {false, true, true, true}, 13, 1e-5, 1e-4);
  compare_node(Op("Resize", 4)
                   .s("mode", "linear")
                   .s("coordinate_transformation_mode", "tf_crop_and_resize")
                   .f("extrapolation_value", 3.f)
                   .node,
               {x, f32({0, 0, 0.2f, -0.3f, 1, 1, 0.9f, 1.2f}, {8}), empty, i64({1, 2, 5, 6}, {4})},
               {false, true, true, true}, 13, 1e-5, 1e-4);
  compare_node(Op("Upsample", 2).s("mode", "nearest").node, {x, f32({1.f, 1.f, 2.f, 3.f}, {4})}, {false, true}, 9);
}

TEST(CudaOpParity, TopK) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({3, 7, 4}, 77);
  compare_node(Op("TopK", 2, 2).i("axis", 1).node, {x, i64({3}, {1})}, {false, true}, 11);
  compare_node(Op("TopK", 2, 2).i("largest", 0).node, {x, i64({4}, {1})}, {false, true}, 11);
  compare_node(Op("TopK", 2, 2).i("axis", 0).node, {f32({1, 2, 2, 1, 2, 0, 2, 2, 1}, {9}), i64({5}, {1})},
               {false, true}, 11);
  compare_node(Op("TopK", 1, 2).i("k", 2).i("axis", 1).node, {x}, {}, 1);
}

TEST(CudaOpParity, QuantizeReverseDet) {
  KILNRT_SKIP_WITHOUT_GPU();
  const Tensor x = random_tensor({2, 3, 4}, 78, -40.f, 40.f);
  Tensor zp_u8 = Tensor::empty(DType::kUInt8, {}), zp_i8 = Tensor::empty(DType::kInt8, {3});
  zp_u8.data<uint8_t>()[0] = 128;
  for (int i = 0; i < 3; ++i) zp_i8.data<int8_t>()[i] = int8_t(i * 7 - 5);
  compare_node(Op("QuantizeLinear", 3).node, {x, f32({0.25f}, {}), zp_u8}, {}, 13);
  Tensor zp_u8x3 = Tensor::empty(DType::kUInt8, {3});  // (int8 outputs: the comparison helper reads uint8 / bool)
  for (int i = 0; i < 3; ++i) zp_u8x3.data<uint8_t>()[i] = uint8_t(100 + 20 * i);
  compare_node(Op("QuantizeLinear", 3).i("axis", 1).node, {x, f32({0.2f, 0.5f, 0.3f}, {3}), zp_u8x3}, {}, 13);
  compare_node(Op("QuantizeLinear", 2).node, {x, f32({0.1f}, {})}, {}, 13);
  Tensor q = Tensor::empty(DType::kInt8, {2, 3, 4});
  for (int i = 0; i < 24; ++i) q.data<int8_t>()[i] = int8_t(i * 11 - 128);
  compare_node(Op("DequantizeLinear", 3).i("axis", 1).node, {q, f32({0.2f, 0.5f, 0.3f}, {3}), zp_i8}, {}, 13);
  compare_node(Op("DequantizeLinear", 2).node, {i32({5, -7, 100000}, {3}), f32({0.5f}, {})}, {}, 13);
  const Tensor seq = random_tensor({4, 3, 2}, 79);
  compare_node(Op("ReverseSequence", 2).node, {seq, i64({4, 1, 2}, {3})}, {}, 10);
  compare_node(Op("ReverseSequence", 2).i("batch_axis", 0).i("time_axis", 1).node,
               {random_tensor({3, 4}, 80), i64({2, 4, 3}, {3})}, {}, 10);
  compare_node(Op("Det", 1).node, {random_tensor({2, 3, 4, 4}, 81)}, {}, 11, 1e-5, 1e-4);
  compare_node(Op("Det", 1).node, {f32({1, 2, 2, 4}, {2, 2})}, {}, 11);
}

TEST(CudaOpParity, RnnGruLstm) {
  KILNRT_SKIP_WITHOUT_GPU();
  const int64_t seq = 5, batch = 3, in = 4, hid = 6;
  const Tensor x = random_tensor({seq, batch, in}, 82), xb = random_tensor({batch, seq, in}, 83);
  const Tensor none = f32({0.f}, {1});
  const Tensor lens = i32({5, 2, 0}, {3});
  // RNN: forward, bias, initial state, every output.
  compare_node(Op("RNN", 6, 2).i("hidden_size", hid).omit_input(4).node,
               {x, random_tensor({1, hid, in}, 84), random_tensor({1, hid, hid}, 85), random_tensor({1, 2 * hid}, 86),
                none, random_tensor({1, batch, hid}, 87)},
               {}, 14, 1e-5, 1e-4);
  // RNN: reverse, sequence_lens, custom activation with alpha.
  Op rnn("RNN", 5, 2);
  rnn.i("hidden_size", hid).s("direction", "reverse").f("clip", 0.7f);
  ir::Attribute acts;
  acts.kind = ir::Attribute::Kind::kStrings;
  acts.strings = {"LeakyRelu"};
  rnn.node.attrs["activations"] = acts;
  compare_node(
      rnn.node,
      {x, random_tensor({1, hid, in}, 88), random_tensor({1, hid, hid}, 89), random_tensor({1, 2 * hid}, 90), lens}, {},
      14, 1e-5, 1e-4);
  // GRU: bidirectional, layout 1, both linear_before_reset values (more in test_cuda_float32_islands_pool3d_gru.cc).
  for (int64_t lbr : {0, 1}) {
    SCOPED_TRACE(lbr);
    compare_node(
        Op("GRU", 5, 2).i("hidden_size", hid).s("direction", "bidirectional").i("linear_before_reset", lbr).node,
        {x, random_tensor({2, 3 * hid, in}, 91), random_tensor({2, 3 * hid, hid}, 92), random_tensor({2, 6 * hid}, 93),
         lens},
        {}, 14, 1e-5, 1e-4);
    compare_node(Op("GRU", 3, 2).i("hidden_size", hid).i("layout", 1).i("linear_before_reset", lbr).node,
                 {xb, random_tensor({1, 3 * hid, in}, 94), random_tensor({1, 3 * hid, hid}, 95)}, {}, 14, 1e-5, 1e-4);
  }
  // LSTM: peepholes, initial h / c, sequence_lens, three outputs; input_forget; bidirectional layout 1.
  compare_node(
      Op("LSTM", 8, 3).i("hidden_size", hid).node,
      {x, random_tensor({1, 4 * hid, in}, 96), random_tensor({1, 4 * hid, hid}, 97), random_tensor({1, 8 * hid}, 98),
       lens, random_tensor({1, batch, hid}, 99), random_tensor({1, batch, hid}, 100), random_tensor({1, 3 * hid}, 101)},
      {}, 14, 1e-5, 1e-4);
  compare_node(Op("LSTM", 3, 3).i("hidden_size", hid).i("input_forget", 1).node,
               {x, random_tensor({1, 4 * hid, in}, 102), random_tensor({1, 4 * hid, hid}, 103)}, {}, 14, 1e-5, 1e-4);
  compare_node(Op("LSTM", 3, 3).i("hidden_size", hid).i("layout", 1).s("direction", "bidirectional").node,
               {xb, random_tensor({2, 4 * hid, in}, 104), random_tensor({2, 4 * hid, hid}, 105)}, {}, 14, 1e-5, 1e-4);
}

TEST(CudaOpParity, BitShift) {
  KILNRT_SKIP_WITHOUT_GPU();
  Tensor a = Tensor::empty(DType::kUInt8, {2, 3}), b = Tensor::empty(DType::kUInt8, {3});
  for (int i = 0; i < 6; ++i) a.data<uint8_t>()[i] = uint8_t(37 * i + 5);
  for (int i = 0; i < 3; ++i) b.data<uint8_t>()[i] = uint8_t(i + 1);
  compare_node(Op("BitShift", 2).s("direction", "LEFT").node, {a, b});
  compare_node(Op("BitShift", 2).s("direction", "RIGHT").node, {a, b});
}

}  // namespace
}  // namespace kilnrt::cudatest
