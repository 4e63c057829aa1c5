// End to end on the CPU backend: committed dynamo-exported fixtures -> engine bytes -> load -> run, compared with
// torch 2.11's outputs; dynamic batch through one engine; damaged engines and unsupported ops fail clearly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "accuracy_check.h"
#include "kilnrt/engine.h"
#include "kilnrt/npy.h"

using namespace kilnrt;
using kilnrt::testing_util::expect_close;

namespace {

std::string fixture(const std::string& name) {
  return std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/" + name;
}

Tensor slice_batch(const Tensor& t, int64_t begin, int64_t count) {
  Shape s = t.shape();
  const int64_t per = t.numel() / s[0];
  s[0] = count;
  return Tensor::from_data(t.data<float>() + begin * per, t.dtype(), s);
}

class DynamoFixture : public testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(DynamoFixture, MatchesTorchThroughEngineBytes) {
  const std::string name = GetParam();
  std::vector<uint8_t> bytes = build_engine(fixture(name + ".onnx"));
  auto engine = Engine::from_bytes(bytes.data(), bytes.size());
  ASSERT_EQ(engine->inputs().size(), 1u);
  EXPECT_EQ(engine->inputs()[0].name, "x");
  EXPECT_EQ(engine->inputs()[0].shape[0], -1) << "batch dim must stay dynamic";
  EXPECT_EQ(engine->inputs()[0].dim_names[0], "batch");
  ASSERT_EQ(engine->outputs().size(), 1u);
  EXPECT_EQ(engine->outputs()[0].shape[0], -1);
  const Tensor x = load_npy(fixture(name + ".input.npy"));
  const Tensor y = load_npy(fixture(name + ".expected.npy"));
  auto out = engine->run({{"x", x}});
  expect_close(out.at("y"), y);
  // Batch 1 and a batch of 4 (the fixture's two samples twice) through the same engine.
  auto ctx = engine->create_context();
  auto one = ctx->run({{"x", slice_batch(x, 1, 1)}});
  expect_close(one.at("y"), slice_batch(y, 1, 1));
  Tensor x4 = Tensor::empty(DType::kFloat32, [&] {
    Shape s = x.shape();
    s[0] = 4;
    return s;
  }());
  std::memcpy(x4.raw(), x.raw(), x.nbytes());
  std::memcpy(static_cast<char*>(x4.raw()) + x.nbytes(), x.raw(), x.nbytes());
  auto four = ctx->run({{"x", x4}});
  expect_close(slice_batch(four.at("y"), 2, 2), y);
}

INSTANTIATE_TEST_SUITE_P(EndToEnd, DynamoFixture, testing::Values("mobilenet_v3_small", "transformer_encoder_layer"));

TEST(EndToEnd, WrongInputsAreClearErrors) {
  std::vector<uint8_t> bytes = build_engine(fixture("transformer_encoder_layer.onnx"));
  auto engine = Engine::from_bytes(bytes.data(), bytes.size());
  auto expect_error = [&](const std::map<std::string, Tensor>& in, const std::string& needle) {
    try {
      engine->run(in);
      ADD_FAILURE() << "no error, expected: " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({}, "missing input 'x'");
  expect_error({{"x", Tensor::zeros(DType::kFloat32, {2, 16, 64})}, {"extra", Tensor::zeros(DType::kFloat32, {1})}},
               "no input named 'extra'");
  expect_error({{"x", Tensor::zeros(DType::kInt64, {2, 16, 64})}}, "expected dtype float32");
  expect_error({{"x", Tensor::zeros(DType::kFloat32, {2, 16})}}, "expected rank 3");
  expect_error({{"x", Tensor::zeros(DType::kFloat32, {2, 15, 64})}}, "dimension 1 must be 16");
}

TEST(EndToEnd, ProfilesBoundTheBatch) {
  BuildOptions opt;
  opt.profiles = {{parse_shape_spec("x:1x16x64/2x16x64/4x16x64")}};
  std::vector<uint8_t> bytes = build_engine(fixture("transformer_encoder_layer.onnx"), opt);
  auto engine = Engine::from_bytes(bytes.data(), bytes.size());
  auto ctx = engine->create_context();
  ctx->set_input_shape("x", {3, 16, 64});
  try {
    ctx->set_input_shape("x", {5, 16, 64});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside the engine's profiles"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_shape_spec("x:1x2/3"), Error);
  EXPECT_THROW(parse_shape_spec("noshape"), Error);
  BuildOptions fixed;
  fixed.profiles = {{parse_shape_spec("x:2x16x64")}};
  const std::vector<uint8_t> fixed_bytes = build_engine(fixture("transformer_encoder_layer.onnx"), fixed);
  auto fixed_engine = Engine::from_bytes(fixed_bytes.data(), fixed_bytes.size());
  EXPECT_EQ(fixed_engine->inputs()[0].shape, (Shape{2, 16, 64}));
}

TEST(EndToEnd, DamagedEnginesNameTheProblem) {
  std::vector<uint8_t> good = build_engine(fixture("transformer_encoder_layer.onnx"));
  auto expect_load_error = [](std::vector<uint8_t> bytes, const std::string& needle) {
    try {
      Engine::from_bytes(bytes.data(), bytes.size(), "damaged.engine");
      ADD_FAILURE() << "loaded a damaged engine; expected: " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidEngine) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("damaged.engine"), std::string::npos) << e.what();
    }
  };
  expect_load_error(std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 2), "truncated");
  auto flipped = good;
  flipped[flipped.size() - 100] ^= 0x10;
  expect_load_error(flipped, "checksum");
  auto magic = good;
  magic[0] = 'X';
  expect_load_error(magic, "magic");
  auto newer = good;
  newer[8] = 99;  // format version (u32 little-endian right after the 8-byte magic)
  expect_load_error(newer, "newer");
}

TEST(EndToEnd, UnsupportedOpNamesTheNode) {
  // A model with an op nobody implements: build must fail naming node and op.
  const std::string path = testing::TempDir() + "/kilnrt_unknown_op.onnx";
  // Minimal ModelProto written by hand: ir_version 8, opset 17, graph with one node "FrobnicateOp" named "frob1".
  auto varint = [](std::string& s, uint64_t v) {
    while (v >= 0x80) {
      s += char((v & 0x7f) | 0x80);
      v >>= 7;
    }
    s += char(v);
  };
  auto field = [&](std::string& s, int num, const std::string& payload) {
    varint(s, (uint64_t(num) << 3) | 2);
    varint(s, payload.size());
    s += payload;
  };
  auto tensor_type_vi = [&](const std::string& name) {
    std::string dim, shape, tt, type, vi;
    varint(dim, (1 << 3) | 0);
    varint(dim, 4);        // dim_value 4
    field(shape, 1, dim);  // TensorShapeProto.dim
    varint(tt, (1 << 3) | 0);
    varint(tt, 1);  // elem_type FLOAT
    field(tt, 2, shape);
    field(type, 1, tt);  // TypeProto.tensor_type
    field(vi, 1, name);
    field(vi, 2, type);
    return vi;
  };
  std::string node, graph, opset, model;
  field(node, 1, "a");
  field(node, 2, "b");
  field(node, 3, "frob1");
  field(node, 4, "FrobnicateOp");
  field(graph, 1, node);
  field(graph, 2, "g");
  field(graph, 11, tensor_type_vi("a"));
  field(graph, 12, tensor_type_vi("b"));
  varint(opset, (2 << 3) | 0);
  varint(opset, 17);
  varint(model, (1 << 3) | 0);
  varint(model, 8);
  field(model, 7, graph);
  field(model, 8, opset);
  std::ofstream(path, std::ios::binary) << model;
  try {
    build_engine(path);
    FAIL() << "built a model with an unknown op";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("frob1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("FrobnicateOp"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(EndToEnd, DeviceNamesAreChecked) {
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1234567"}) {
    BuildOptions opt;
    opt.device = bad;
    try {
      build_engine(fixture("transformer_encoder_layer.onnx"), opt);
      ADD_FAILURE() << "accepted device '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find("unknown device"), std::string::npos) << e.what();
    }
  }
  std::vector<uint8_t> bytes = build_engine(fixture("transformer_encoder_layer.onnx"));
  EXPECT_EQ(Engine::from_bytes(bytes.data(), bytes.size())->device(), -1);  // CPU engine
}
