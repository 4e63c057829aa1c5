// Core: errors, dtypes and fp16/bf16 conversion, tensors, .npy I/O, graph topo sort.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "ir/graph.h"
#include "kilnrt/dtype.h"
#include "kilnrt/error.h"
#include "kilnrt/npy.h"
#include "kilnrt/tensor.h"

using namespace kilnrt;

TEST(Core, ErrorCarriesLocationAndWhere) {
  try {
    KILNRT_CHECK(1 == 2, kInvalidModel, "Conv 'c1'", "bad thing " << 42);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_EQ(e.where(), "Conv 'c1'");
    EXPECT_EQ(e.expression(), "1 == 2");
    EXPECT_GT(e.line(), 0);
    std::string what = e.what();
    EXPECT_NE(what.find("bad thing 42"), std::string::npos);
    EXPECT_NE(what.find("Conv 'c1'"), std::string::npos);
    // The source location is in detail() (what() carries it only with KILNRT_LOG_LEVEL=debug).
    EXPECT_NE(e.detail().find("test_core.cc"), std::string::npos) << e.detail();
  }
}

TEST(Core, HalfConversionExactValues) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // rounds to inf
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  EXPECT_EQ(float_to_half(5.960464477539063e-08f), 0x0001);   // smallest subnormal
  EXPECT_EQ(float_to_half(3.0e-08f), 0x0001);                 // above half of it rounds up
  EXPECT_EQ(float_to_half(2.9802322387695312e-08f), 0x0000);  // exactly half: ties to even (0)
  EXPECT_EQ(half_to_float(0x0001), 5.960464477539063e-08f);
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
}

TEST(Core, HalfRoundTripAllFinite) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(Core, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly between 1 and 1 + 2^-7: ties to even (1.0)
  EXPECT_EQ(float_to_bfloat16(1.00390625f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(1.01171875f), 0x3f82);  // 1 + 3*2^-8 -> ties to even upward
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
}

TEST(Core, DTypeNames) {
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt64, DType::kInt32, DType::kInt8,
                  DType::kUInt8, DType::kBool})
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_FALSE(dtype_is_valid(8));  // ONNX string
}

TEST(Core, TensorBasics) {
  Tensor t = Tensor::zeros(DType::kFloat32, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  Tensor r = t.reshaped({3, 2});
  EXPECT_EQ(r.raw(), t.raw());
  EXPECT_THROW(t.reshaped({4}), Error);
  EXPECT_THROW(Tensor::empty(DType::kFloat32, {-1, 2}), Error);
  Tensor e = Tensor::empty(DType::kFloat32, {0, 5});
  EXPECT_EQ(e.numel(), 0);
}

TEST(Core, NpyRoundTrip) {
  std::string path = testing::TempDir() + "/kilnrt_npy_roundtrip.npy";
  for (DType dt : {DType::kFloat32, DType::kInt64, DType::kFloat16, DType::kBool}) {
    Tensor t = Tensor::empty(dt, {2, 3, 1});
    for (size_t i = 0; i < t.nbytes(); ++i) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(i % 2);
    save_npy(path, t);
    Tensor u = load_npy(path);
    EXPECT_EQ(u.dtype(), dt);
    EXPECT_EQ(u.shape(), t.shape());
    EXPECT_EQ(0, std::memcmp(u.raw(), t.raw(), t.nbytes()));
  }
  Tensor s = Tensor::zeros(DType::kFloat32, {});
  save_npy(path, s);
  EXPECT_EQ(load_npy(path).rank(), 0);
  EXPECT_THROW(load_npy(path + ".missing"), Error);
  std::remove(path.c_str());
}

// A .npy file with the given shape text and `data_bytes` bytes of float32 data after the header.
std::string write_npy_with_shape(const std::string& name, const std::string& shape, size_t data_bytes) {
  const std::string path = testing::TempDir() + "/" + name;
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  f.write(len, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  const std::string data(data_bytes, '\0');
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  return path;
}

TEST(Core, NpyShapeIsParsedStrictly) {
  struct Case {
    std::string shape;
    size_t data_bytes;
    std::string message;
  };
  const std::vector<Case> bad = {
      {"(99999999999999999999, 4)", 32, "shape"},  // 20 digits: past int64
      {"(-2, 4)", 32, "shape"},
      {"(2.5e0, 4)", 32, "shape"},
      {"(2, 4, 'x')", 32, "shape"},
      {"(2 4)", 32, "shape"},
      {"(2,, 4)", 32, "shape"},
      {"(4294967296, 4294967296)", 32, "shape"},  // the element count overflows
      {"(3037000500, 3037000500)", 32, "shape"},  // the byte count overflows
      {"(2, 4)", 33, "data"},                     // a trailing byte
      {"(2, 4)", 31, "data"},                     // truncated
      {"(1000000000, 1000)", 32, "data"},         // far more than the file holds: refused before allocating
  };
  for (const Case& c : bad) {
    const std::string path = write_npy_with_shape("kilnrt_npy_strict.npy", c.shape, c.data_bytes);
    try {
      load_npy(path);
      ADD_FAILURE() << c.shape << " with " << c.data_bytes << " bytes was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << c.shape << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.shape << ": not a kilnrt::Error: " << e.what();
    }
    std::remove(path.c_str());
  }
  const std::vector<std::pair<std::string, Shape>> good = {{"(2, 4)", {2, 4}},     {"(8,)", {8}},
                                                           {"( 2 ,4 , )", {2, 4}}, {"()", {}},
                                                           {"(0, 3)", {0, 3}},     {"(1,1,8)", {1, 1, 8}}};
  for (const auto& [text, shape] : good) {
    const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<int64_t>());
    const std::string path = write_npy_with_shape("kilnrt_npy_strict.npy", text, size_t(n) * 4);
    EXPECT_EQ(load_npy(path).shape(), shape) << text;
    std::remove(path.c_str());
  }
}

TEST(Core, TopoSortOrdersAndDetectsProblems) {
  ir::Graph g;
  g.inputs = {"x"};
  g.outputs = {"z"};
  ir::Node b{"b", "Relu", "", {"y"}, {"z"}, {}};
  ir::Node a{"a", "Relu", "", {"x"}, {"y"}, {}};
  g.nodes = {b, a};
  g.topo_sort();
  EXPECT_EQ(g.nodes[0].name, "a");
  ir::Graph bad = g;
  bad.nodes[0].inputs = {"missing"};
  try {
    bad.topo_sort();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos);
  }
  ir::Graph cyc = g;
  cyc.nodes[0].inputs = {"z"};
  EXPECT_THROW(cyc.topo_sort(), Error);
}
