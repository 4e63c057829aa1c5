// CUDA vs CPU-reference comparisons of the bit op, BitCast, Optional*, bool reduction and general quantize layers
// for the onnx 1.23 node cases: BitwiseAnd / Or / Xor (broadcasting) and BitwiseNot on every integer dtype,
// BitShift on signed integers (opset 28: arithmetic right shifts, negative and too-wide shift amounts), BitCast,
// OptionalGetElement / OptionalHasElement, ReduceMax / ReduceMin of bool, QuantizeLinear / DequantizeLinear with
// blocked parameters, 16-bit integers and output_dtype, DFT inverse + onesided (the inverse real FFT), Resize
// half_pixel_symmetric and Resize antialias=1. Integer and bool outputs must match the CPU reference bit for bit.
// Every layer must be placed on CUDA (tactic "cuda:..."). GPU tests skip with a message without a GPU; the host
// test runs every case's graph on the CPU reference and through the CUDA support check, everywhere.
#include <cstring>
#include <random>

#include "ops/cuda/cuda_layer.h"
#include "cuda_backend_test_util.h"
#include "ops/common/double_io.h"
#include "ops/nn/nn_test_util.h"

using kilnrt::ops::nn::testing::Op;
using kilnrt::ops::nn::testing::random_tensor;
namespace kilnrt::cudatest {
namespace {

const DType kInts[] = {DType::kInt8,  DType::kUInt8,  DType::kInt16, DType::kUInt16,
                       DType::kInt32, DType::kUInt32, DType::kInt64, DType::kUInt64};

Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }
Tensor f32(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, DType::kFloat32, s); }

// Random integers in [lo, hi] stored as dtype `dt` (two's complement wrap for narrow types).
Tensor ints(DType dt, const Shape& s, uint32_t seed, int64_t lo, int64_t hi) {
  Tensor t = Tensor::empty(dt, s);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  const size_t es = dtype_size(dt);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t v = dist(rng);
    std::memcpy(static_cast<char*>(t.raw()) + i * es, &v, es);  // little endian: the low bytes
  }
  return t;
}

Tensor bools(const Shape& s, uint32_t seed, double p_true) {
  Tensor t = Tensor::empty(DType::kBool, s);
  std::mt19937 rng(seed);
  std::bernoulli_distribution dist(p_true);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = dist(rng) ? 1 : 0;
  return t;
}

// Runs the node on the CPU reference and on CUDA, compares every output (integer / bool outputs bit for bit, float
// outputs within atol + rtol * |want|) and checks the placement.
// Host mode (no GPU needed): the CPU reference runs the case and CudaPlan::check_supported accepts its graph.
bool g_host_mode = false;
void compare(const ir::Node& node, const std::vector<Tensor>& inputs, const std::vector<bool>& constant, int64_t opset,
             double atol = 0, double rtol = 0) {
  if (g_host_mode) {
    OneNode net(node, inputs, constant, opset);
    const auto want = run_cpu(net.g, net.feeds);
    EXPECT_FALSE(want.empty());
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(net.g)) << node.op_type;
    return;
  }
  compare_on_cuda(node, inputs, constant, opset, atol, rtol, {17, Placement::kGpuOrHostShape, IntCompare::kBitExact});
}

// ---- Bitwise* -------------------------------------------------------------------------------------------------------
void BitwiseBinaryEveryIntegerDtypeWithBroadcastingCases() {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}}, {{3, 1}, {1, 4}}, {{}, {2, 5}}, {{2, 1, 3, 2}, {4, 1, 2}}};
  uint32_t seed = 1;
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    for (DType dt : kInts)
      for (const auto& [sa, sb] : shapes) {
        SCOPED_TRACE(std::string(op) + " " + dtype_name(dt) + " " + shape_to_string(sa) + " " + shape_to_string(sb));
        compare(Op(op, 2).node, {ints(dt, sa, seed, -1000000, 1000000), ints(dt, sb, seed + 1, -1000000, 1000000)}, {},
                18);
        seed += 2;
      }
}

void BitwiseNotEveryIntegerDtypeCases() {
  uint32_t seed = 100;
  for (DType dt : kInts)
    for (const Shape& s : {Shape{3, 4}, Shape{}, Shape{1000}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_to_string(s));
      compare(Op("BitwiseNot", 1).node, {ints(dt, s, seed++, -100000, 100000)}, {}, 18);
    }
}

// ---- BitShift (opset 28: signed too) --------------------------------------------------------------------------------
void BitShiftSignedAndUnsignedCases() {
  uint32_t seed = 200;
  for (const char* dir : {"LEFT", "RIGHT"})
    for (DType dt : kInts) {
      SCOPED_TRACE(std::string(dir) + " " + dtype_name(dt));
      const int64_t width = static_cast<int64_t>(dtype_size(dt)) * 8;
      // Values of every sign; shift amounts from negative (signed types) through beyond the width.
      const Tensor x = ints(dt, {4, 16}, seed++, -300, 300);
      const Tensor y = ints(dt, {4, 16}, seed++, -3, width + 3);
      compare(Op("BitShift", 2).s("direction", dir).node, {x, y}, {}, 28);
      compare(Op("BitShift", 2).s("direction", dir).node, {x, ints(dt, {16}, seed++, 0, width - 1)}, {}, 28);
      compare(Op("BitShift", 2).s("direction", dir).node, {ints(dt, {}, seed++, -5, 5), y}, {true, false}, 28);
    }
  // Unsigned at the old opset still runs.
  compare(Op("BitShift", 2).s("direction", "RIGHT").node,
          {ints(DType::kUInt32, {7}, 250, 0, 1 << 30), ints(DType::kUInt32, {7}, 251, 0, 40)}, {}, 11);
}

// ---- BitCast --------------------------------------------------------------------------------------------------------
void BitCastSameWidthDtypesCases() {
  struct Case {
    DType from, to;
    Shape shape;
  };
  const Case cases[] = {{DType::kFloat32, DType::kInt32, {3, 4}}, {DType::kInt32, DType::kFloat32, {5}},
                        {DType::kFloat64, DType::kInt64, {2, 3}}, {DType::kInt64, DType::kFloat64, {4}},
                        {DType::kBool, DType::kUInt8, {6}},       {DType::kInt8, DType::kUInt8, {2, 5}},
                        {DType::kUInt16, DType::kInt16, {9}},     {DType::kUInt32, DType::kInt32, {3, 3}},
                        {DType::kFloat32, DType::kUInt32, {}},    {DType::kFloat16, DType::kInt16, {8}}};
  uint32_t seed = 300;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.from)) + " -> " + dtype_name(c.to));
    Tensor x;
    if (c.from == DType::kFloat32)
      x = random_tensor(c.shape, seed++, -100.f, 100.f);
    else if (c.from == DType::kFloat64 || c.from == DType::kFloat16) {
      // Finite values of the float type: from float32 values.
      const Tensor f = random_tensor(c.shape, seed++, -100.f, 100.f);
      x = ops::tensor_from_doubles(ops::tensor_to_doubles(f, Op("BitCast", 1).node), c.from, c.shape);
    } else if (c.from == DType::kBool)
      x = bools(c.shape, seed++, 0.5);
    else if (c.to == DType::kFloat32 || c.to == DType::kFloat64)
      // Bit patterns of finite floats (exponent below all ones): small magnitudes.
      x = ints(c.from, c.shape, seed++, -(int64_t{1} << 29), int64_t{1} << 29);
    else
      x = ints(c.from, c.shape, seed++, -70000, 70000);
    compare(Op("BitCast", 1).i("to", static_cast<int64_t>(c.to)).node, {x}, {}, 26);
  }
}

// ---- Optional* on plain tensors
// ---------------------------------------------------------------------------------------
void OptionalGetAndHasElementCases() {
  compare(Op("OptionalGetElement", 1).node, {random_tensor({2, 3}, 400)}, {}, 18);
  compare(Op("OptionalGetElement", 1).node, {i64({4, -5, 6}, {3})}, {}, 18);
  compare(Op("OptionalHasElement", 1).node, {random_tensor({4}, 401)}, {}, 18);
}

// ---- ReduceMax / ReduceMin of bool
// ------------------------------------------------------------------------------------
void ReduceMaxMinBoolCases() {
  uint32_t seed = 500;
  for (const char* op : {"ReduceMax", "ReduceMin"})
    for (double p : {0.1, 0.5, 0.9}) {
      SCOPED_TRACE(std::string(op) + " p=" + std::to_string(p));
      const Tensor x = bools({3, 4, 5}, seed++, p);
      for (int64_t keep : {0, 1}) {
        compare(Op(op, 2).i("keepdims", keep).node, {x, i64({1}, {1})}, {false, true}, 20);
        compare(Op(op, 2).i("keepdims", keep).node, {x, i64({-1, 0}, {2})}, {false, true}, 20);  // negative axis
        compare(Op(op, 1).i("keepdims", keep).node, {x}, {}, 20);                                // every axis
        compare(Op(op, 1).i("keepdims", keep).ints("axes", {2}).node, {x}, {}, 13);              // axes attribute
      }
      compare(Op(op, 2).i("noop_with_empty_axes", 1).node, {x, i64({}, {0})}, {false, true}, 20);  // identity
    }
}

// ---- QuantizeLinear / DequantizeLinear
// -------------------------------------------------------------------------------
void QuantizeBlockedAnd16BitCases() {
  // x values at the rounding ties of the scale (0.5 steps) and beyond the saturation limits.
  Tensor x = random_tensor({3, 6}, 600, -300.f, 300.f);
  for (int64_t i = 0; i < 6; ++i) x.data<float>()[i] = 0.5f * static_cast<float>(2 * i - 5);
  const Tensor scale_blk = random_tensor({3, 2}, 601, 0.5f, 2.f);   // axis 1, block 3
  const Tensor scale_blk4 = random_tensor({3, 2}, 602, 0.5f, 2.f);  // axis 1, block 4: ceil(6 / 4) = 2
  Op blk("QuantizeLinear", 3);
  blk.i("axis", 1).i("block_size", 3);
  compare(blk.node, {x, scale_blk, ints(DType::kInt8, {3, 2}, 603, -20, 20)}, {}, 21);
  compare(blk.node, {x, scale_blk, ints(DType::kUInt8, {3, 2}, 604, 0, 255)}, {}, 21);
  Op blk4("QuantizeLinear", 2);
  blk4.i("axis", -1).i("block_size", 4);
  compare(blk4.node, {x, scale_blk4}, {}, 21);  // no zero point: uint8
  Op blk0("QuantizeLinear", 3);
  blk0.i("axis", 0).i("block_size", 2);  // ceil(3 / 2) = 2 along axis 0
  compare(blk0.node, {x, random_tensor({2, 6}, 605, 0.1f, 1.f), ints(DType::kInt16, {2, 6}, 606, -50, 50)}, {}, 21);
  // 16-bit zero points (per tensor, per axis), output_dtype without a zero point.
  for (DType dt : {DType::kInt16, DType::kUInt16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor xs = random_tensor({3, 6}, 607, -40000.f, 40000.f);
    compare(Op("QuantizeLinear", 3).node, {xs, f32({0.75f}, {}), ints(dt, {}, 608, 0, 1000)}, {}, 21);
    compare(Op("QuantizeLinear", 3).i("axis", 1).node,
            {xs, random_tensor({6}, 609, 0.2f, 2.f), ints(dt, {}, 610, 0, 99)}, {},
            21);  // per-axis scale, scalar zero point
    compare(Op("QuantizeLinear", 2).i("output_dtype", static_cast<int64_t>(dt)).node, {xs, f32({0.5f}, {})}, {}, 21);
  }
  compare(Op("QuantizeLinear", 2).i("output_dtype", static_cast<int64_t>(DType::kInt8)).node, {x, f32({0.5f}, {})}, {},
          21);
}

void DequantizeBlockedCases() {
  for (DType dt : {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kInt32}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = ints(dt, {2, 3, 5}, 700, dt == DType::kUInt8 || dt == DType::kUInt16 ? 0 : -100, 120);
    Op blk("DequantizeLinear", 3);
    blk.i("axis", 2).i("block_size", 2);  // ceil(5 / 2) = 3
    compare(blk.node, {x, random_tensor({2, 3, 3}, 701, 0.1f, 2.f), ints(dt, {2, 3, 3}, 702, 0, 10)}, {}, 21, 0, 0);
    Op blk2("DequantizeLinear", 2);
    blk2.i("axis", -2).i("block_size", 3);  // ceil(3 / 3) = 1 along axis 1
    compare(blk2.node, {x, random_tensor({2, 1, 5}, 703, 0.1f, 2.f)}, {}, 21, 0, 0);
  }
}

// ---- DFT inverse + onesided -----------------------------------------------------------------------------------------
void DftInverseRealFftCases() {
  const Tensor x = random_tensor({2, 5, 3, 2}, 800);  // 5 bins along axis 1, inner 3
  Op def("DFT", 3);
  def.i("inverse", 1).i("onesided", 1).omit_input(1);
  compare(def.node, {x, Tensor(), i64({1}, {})}, {false, false, true}, 20, 1e-5, 1e-5);  // length 2 * (5 - 1) = 8
  for (int64_t n : {9, 7, 3, 1}) {
    SCOPED_TRACE("dft_length " + std::to_string(n));
    Op len("DFT", 3);
    len.i("inverse", 1).i("onesided", 1);
    compare(len.node, {x, i64({n}, {}), i64({-3}, {})}, {false, true, true}, 20, 1e-5, 1e-5);
  }
  // Real input, opset 17 (the axis attribute).
  compare(Op("DFT", 1).i("inverse", 1).i("onesided", 1).i("axis", 1).node, {random_tensor({1, 6, 1}, 801)}, {}, 17,
          1e-5, 1e-5);
}

// ---- Resize half_pixel_symmetric
// --------------------------------------------------------------------------------------
void ResizeHalfPixelSymmetricCases() {
  const Tensor x = random_tensor({1, 2, 4, 5}, 900);
  const Tensor none = Tensor::empty(DType::kFloat32, {0});
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const std::vector<float>& sc : {std::vector<float>{1, 1, 0.6f, 0.6f}, std::vector<float>{1, 1, 2.3f, 1.7f},
                                         std::vector<float>{1, 1, 1.f, 0.5f}}) {
      SCOPED_TRACE(std::string(mode) + " scales " + std::to_string(sc[2]) + "x" + std::to_string(sc[3]));
      Op op("Resize", 3);
      op.s("mode", mode).s("coordinate_transformation_mode", "half_pixel_symmetric").omit_input(1);
      compare(op.node, {x, none, f32(sc, {4})}, {false, true, true}, 19, 1e-5, 1e-5);
    }
  Op sizes("Resize", 4);
  sizes.s("mode", "linear").s("coordinate_transformation_mode", "half_pixel_symmetric").omit_input(1).omit_input(2);
  compare(sizes.node, {x, none, none, i64({1, 2, 3, 7}, {4})}, {false, true, true, true}, 19, 1e-5, 1e-5);
}

// ---- empty tensors (where the CPU reference accepts them)
// -------------------------------------------------------------
void EmptyTensorsCases() {
  for (DType dt : {DType::kInt8, DType::kUInt64}) {
    SCOPED_TRACE(dtype_name(dt));
    compare(Op("BitwiseXor", 2).node, {ints(dt, {0, 3}, 560, -9, 9), ints(dt, {3}, 561, -9, 9)}, {}, 18);
    compare(Op("BitwiseNot", 1).node, {ints(dt, {2, 0, 3}, 562, -9, 9)}, {}, 18);
    compare(Op("BitShift", 2).s("direction", "LEFT").node, {ints(dt, {0}, 563, 0, 3), ints(dt, {0}, 564, 0, 3)}, {},
            28);
  }
  compare(Op("BitCast", 1).i("to", static_cast<int64_t>(DType::kFloat32)).node,
          {ints(DType::kInt32, {0, 2}, 565, 0, 9)}, {}, 26);
  // An empty reduced axis (test_reduce_max_empty_set_bool): max (any) is false, min (all) is true.
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    SCOPED_TRACE(std::string(op) + " empty set");
    compare(Op(op, 2).i("keepdims", 1).node, {bools({2, 0, 4}, 550, 0.5), i64({1}, {1})}, {false, true}, 20);
    compare(Op(op, 2).i("keepdims", 0).node, {bools({2, 0, 4}, 551, 0.5), i64({0}, {1})}, {false, true}, 20);
  }
  Op blk("QuantizeLinear", 3);
  blk.i("axis", 1).i("block_size", 3);
  compare(blk.node,
          {random_tensor({0, 6}, 611), random_tensor({0, 2}, 612, 0.5f, 1.f), ints(DType::kInt8, {0, 2}, 613, 0, 1)},
          {}, 21);
}

// ---- Resize antialias=1 (linear / cubic)
// ------------------------------------------------------------------------------
void ResizeAntialiasCases() {
  const Tensor x = random_tensor({1, 2, 9, 11}, 950);
  const Tensor none = Tensor::empty(DType::kFloat32, {0});
  for (const char* mode : {"linear", "cubic"})
    for (const char* coord : {"half_pixel", "align_corners", "half_pixel_symmetric", "asymmetric"})
      for (int64_t exclude : {0, 1})
        for (const std::vector<float>& sc : {std::vector<float>{1, 1, 0.6f, 0.6f}, std::vector<float>{1, 1, 0.3f, 1.5f},
                                             std::vector<float>{1, 1, 1.f, 0.25f}}) {
          SCOPED_TRACE(std::string(mode) + " " + coord + " exclude_outside " + std::to_string(exclude) + " scales " +
                       std::to_string(sc[2]) + "x" + std::to_string(sc[3]));
          Op op("Resize", 3);
          op.s("mode", mode).s("coordinate_transformation_mode", coord).i("antialias", 1).i("exclude_outside", exclude);
          op.omit_input(1);
          compare(op.node, {x, none, f32(sc, {4})}, {false, true, true}, 18, 1e-5, 1e-5);
        }
  // sizes, with the axes attribute (the last two axes), and a 3-D input
  Op sizes("Resize", 4);
  sizes.s("mode", "linear").i("antialias", 1).ints("axes", {2, 3}).omit_input(1).omit_input(2);
  compare(sizes.node, {x, none, none, i64({4, 5}, {2})}, {false, true, true, true}, 18, 1e-5, 1e-5);
  Op cubic3("Resize", 3);
  cubic3.s("mode", "cubic").i("antialias", 1).omit_input(1);
  compare(cubic3.node, {random_tensor({2, 7, 8}, 951), none, f32({1.f, 0.5f, 0.4f}, {3})}, {false, true, true}, 18,
          1e-5, 1e-5);
}

// ---- 16-bit engines: the float layers run as float32 islands
// --------------------------------------------------------- The node as a --fp16 / --bf16 engine builds it
// (kilnrt_precision), inputs pre-rounded to the 16-bit type; compared with the float32 CPU reference on the same
// inputs: |got - want| <= 16u * (scale + |want|).
void compare16(const ir::Node& node, const std::vector<Tensor>& inputs, const std::vector<bool>& constant,
               int64_t opset, double scale) {
  struct Prec {
    const char* name;
    DType dt;
    double u;
  };
  for (const Prec& p : {Prec{"fp16", DType::kFloat16, 1.0 / 2048}, Prec{"bf16", DType::kBFloat16, 1.0 / 256}}) {
    SCOPED_TRACE(p.name);
    ir::Node n = node;
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kString;
    a.s = p.name;
    n.attrs[backends::cuda::kPrecisionAttr] = a;
    std::vector<Tensor> ins;
    for (const Tensor& t : inputs) {
      if (t.dtype() != DType::kFloat32) {
        ins.push_back(t);
        continue;
      }
      Tensor r = Tensor::from_data(t.raw(), t.dtype(), t.shape());
      for (int64_t i = 0; i < r.numel(); ++i) {
        const float v = r.data<float>()[i];
        r.data<float>()[i] =
            p.dt == DType::kFloat16 ? half_to_float(float_to_half(v)) : bfloat16_to_float(float_to_bfloat16(v));
      }
      ins.push_back(r);
    }
    compare(n, ins, constant, opset, 16 * p.u * scale, 16 * p.u);
  }
}

void SixteenBitEnginesCases() {
  const Tensor none = Tensor::empty(DType::kFloat32, {0});
  for (const char* mode : {"linear", "cubic"}) {
    SCOPED_TRACE(mode);
    Op op("Resize", 3);
    op.s("mode", mode).i("antialias", 1).omit_input(1);
    compare16(op.node, {random_tensor({1, 2, 9, 11}, 960), none, f32({1, 1, 0.6f, 0.4f}, {4})}, {false, true, true}, 18,
              1.0);
  }
  Op irfft("DFT", 3);
  irfft.i("inverse", 1).i("onesided", 1).omit_input(1);
  compare16(irfft.node, {random_tensor({2, 5, 3, 2}, 961), Tensor(), i64({1}, {})}, {false, false, true}, 20, 1.0);
  compare16(Op("QuantizeLinear", 3).i("axis", 1).i("block_size", 3).node,
            {random_tensor({3, 6}, 962, -3.f, 3.f), f32({1.f, 0.5f, 2.f, 1.f, 0.25f, 1.f}, {3, 2}),
             ints(DType::kInt16, {3, 2}, 963, -20, 20)},
            {}, 21, 1.0);  // integer outputs: exact (the rounded inputs are exact in float32 too)
  compare16(Op("DequantizeLinear", 2).i("axis", 1).i("block_size", 2).node,
            {ints(DType::kInt8, {2, 4}, 964, -100, 100), f32({0.5f, 0.25f, 1.f, 2.f}, {2, 2})}, {}, 21, 1.0);
}

// ---- the GPU runs of the cases above, and their host check -------------------------------------------------------
TEST(CudaBits, BitwiseBinaryEveryIntegerDtypeWithBroadcasting) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  BitwiseBinaryEveryIntegerDtypeWithBroadcastingCases();
}
TEST(CudaBits, BitwiseNotEveryIntegerDtype) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  BitwiseNotEveryIntegerDtypeCases();
}
TEST(CudaBits, BitShiftSignedAndUnsigned) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  BitShiftSignedAndUnsignedCases();
}
TEST(CudaBits, BitCastSameWidthDtypes) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  BitCastSameWidthDtypesCases();
}
TEST(CudaBits, OptionalGetAndHasElement) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  OptionalGetAndHasElementCases();
}
TEST(CudaBits, ReduceMaxMinBool) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  ReduceMaxMinBoolCases();
}
TEST(CudaBits, QuantizeBlockedAnd16Bit) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  QuantizeBlockedAnd16BitCases();
}
TEST(CudaBits, DequantizeBlocked) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  DequantizeBlockedCases();
}
TEST(CudaBits, DftInverseRealFft) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  DftInverseRealFftCases();
}
TEST(CudaBits, ResizeHalfPixelSymmetric) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  ResizeHalfPixelSymmetricCases();
}

// Without a GPU: every case's graph runs on the CPU reference and passes the CUDA support check.
TEST(CudaBits, ResizeAntialias) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  ResizeAntialiasCases();
}

TEST(CudaBits, SixteenBitEnginesAsFloat32Islands) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  SixteenBitEnginesCases();
}

TEST(CudaBits, EmptyTensors) {
  KILNRT_SKIP_WITHOUT_GPU();
  g_host_mode = false;
  EmptyTensorsCases();
}

TEST(CudaBits, HostEveryCaseRunsOnCpuAndIsSupported) {
  g_host_mode = true;
  {
    SCOPED_TRACE("ResizeAntialias");
    ResizeAntialiasCases();
  }
  {
    SCOPED_TRACE("EmptyTensors");
    EmptyTensorsCases();
  }
  {
    SCOPED_TRACE("SixteenBitEngines");
    SixteenBitEnginesCases();
  }
  {
    SCOPED_TRACE("BitwiseBinaryEveryIntegerDtypeWithBroadcasting");
    BitwiseBinaryEveryIntegerDtypeWithBroadcastingCases();
  }
  {
    SCOPED_TRACE("BitwiseNotEveryIntegerDtype");
    BitwiseNotEveryIntegerDtypeCases();
  }
  {
    SCOPED_TRACE("BitShiftSignedAndUnsigned");
    BitShiftSignedAndUnsignedCases();
  }
  {
    SCOPED_TRACE("BitCastSameWidthDtypes");
    BitCastSameWidthDtypesCases();
  }
  {
    SCOPED_TRACE("OptionalGetAndHasElement");
    OptionalGetAndHasElementCases();
  }
  {
    SCOPED_TRACE("ReduceMaxMinBool");
    ReduceMaxMinBoolCases();
  }
  {
    SCOPED_TRACE("QuantizeBlockedAnd16Bit");
    QuantizeBlockedAnd16BitCases();
  }
  {
    SCOPED_TRACE("DequantizeBlocked");
    DequantizeBlockedCases();
  }
  {
    SCOPED_TRACE("DftInverseRealFft");
    DftInverseRealFftCases();
  }
  {
    SCOPED_TRACE("ResizeHalfPixelSymmetric");
    ResizeHalfPixelSymmetricCases();
  }
  g_host_mode = false;
}

// ---- support checks (run everywhere)
// ---------------------------------------------------------------------------------
std::vector<OneNode> supported_nets() {
  std::vector<OneNode> nets;
  const Tensor a = ints(DType::kInt16, {2, 3}, 1000, -9, 9), b = ints(DType::kInt16, {3}, 1001, -9, 9);
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    nets.emplace_back(Op(op, 2).node, std::vector<Tensor>{a, b}, std::vector<bool>{}, 18);
  nets.emplace_back(Op("BitwiseNot", 1).node, std::vector<Tensor>{a}, std::vector<bool>{}, 18);
  nets.emplace_back(Op("BitShift", 2).s("direction", "RIGHT").node, std::vector<Tensor>{a, b}, std::vector<bool>{}, 28);
  nets.emplace_back(Op("BitCast", 1).i("to", static_cast<int64_t>(DType::kUInt16)).node, std::vector<Tensor>{a},
                    std::vector<bool>{}, 26);
  nets.emplace_back(Op("OptionalGetElement", 1).node, std::vector<Tensor>{f32({1.f}, {1})}, std::vector<bool>{}, 18);
  nets.emplace_back(Op("OptionalHasElement", 1).node, std::vector<Tensor>{f32({1.f}, {1})}, std::vector<bool>{}, 18);
  for (const char* op : {"ReduceMax", "ReduceMin"})
    nets.emplace_back(Op(op, 2).node, std::vector<Tensor>{bools({2, 3}, 1002, 0.5), i64({1}, {1})},
                      std::vector<bool>{false, true}, 20);
  const Tensor x = f32({1, 2, 3, 4}, {1, 4});
  nets.emplace_back(Op("QuantizeLinear", 3).i("axis", 1).i("block_size", 2).node,
                    std::vector<Tensor>{x, f32({1, 2}, {1, 2}), ints(DType::kInt8, {1, 2}, 1003, 0, 1)},
                    std::vector<bool>{}, 21);
  nets.emplace_back(Op("QuantizeLinear", 3).node,
                    std::vector<Tensor>{x, f32({1}, {}), ints(DType::kUInt16, {}, 1004, 0, 1)}, std::vector<bool>{},
                    21);
  nets.emplace_back(Op("QuantizeLinear", 2).i("output_dtype", static_cast<int64_t>(DType::kInt16)).node,
                    std::vector<Tensor>{x, f32({1}, {})}, std::vector<bool>{}, 21);
  nets.emplace_back(Op("DequantizeLinear", 2).i("axis", 1).i("block_size", 2).node,
                    std::vector<Tensor>{ints(DType::kInt8, {1, 4}, 1005, -3, 3), f32({1, 2}, {1, 2})},
                    std::vector<bool>{}, 21);
  nets.emplace_back(Op("DFT", 1).i("inverse", 1).i("onesided", 1).node,
                    std::vector<Tensor>{f32({1, 0, 2, 0, 3, 0}, {1, 3, 2})}, std::vector<bool>{}, 17);
  return nets;
}

TEST(CudaBits, SupportCheckAcceptsTheNewGraphs) {
  for (const OneNode& net : supported_nets()) {
    SCOPED_TRACE(net.g.nodes.back().op_type);
    EXPECT_EQ(backends::cuda::cuda_supports(net.g.nodes.back(), net.g), "");
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(net.g));
  }
}

// ... and still refuses what neither backend runs, naming the reason: signed BitShift before opset 28, a BitCast
// between widths, a float BitwiseAnd.
TEST(CudaBits, SupportCheckRefuses) {
  const Tensor a = ints(DType::kInt32, {3}, 1100, -9, 9);
  OneNode shift(Op("BitShift", 2).s("direction", "LEFT").node, {a, a}, {}, 28);
  shift.g.opsets[""] = 27;
  EXPECT_NE(backends::cuda::cuda_supports(shift.g.nodes[0], shift.g).find("opset 28"), std::string::npos);
  OneNode cast(Op("BitCast", 1).i("to", static_cast<int64_t>(DType::kInt32)).node, {a}, {}, 26);
  cast.g.types["out0"].dtype = DType::kInt64;  // as a malformed model would declare it
  EXPECT_NE(backends::cuda::cuda_supports(cast.g.nodes[0], cast.g).find("widths"), std::string::npos);
  ir::Graph g;
  g.opsets[""] = 18;
  ir::TensorType t;
  t.dtype = DType::kFloat32;
  g.types["in0"] = t;
  g.types["in1"] = t;
  EXPECT_NE(backends::cuda::cuda_supports(Op("BitwiseAnd", 2).node, g).find("float32"), std::string::npos);
}

}  // namespace
}  // namespace kilnrt::cudatest
