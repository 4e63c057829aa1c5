// ONNX import: committed dynamo fixtures, models built with onnx_test_writer.h, and malformed input (truncation at
// every byte, byte flips, escaping external-data paths, wrong sizes) that must give kilnrt::Error, never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <unordered_set>

#include <unistd.h>

#include "ir/onnx_import.h"
#include "ir/protobuf_reader.h"
#include "core/logging.h"
#include "kilnrt/error.h"
#include "onnx_test_writer.h"

namespace {

using namespace kilnrt::onnx_test;  // NOLINT
using kilnrt::DType;
using kilnrt::Error;
using kilnrt::ErrorCode;
using kilnrt::ir::Graph;
namespace fs = std::filesystem;

Graph import_string(const std::string& bytes, const std::string& base_dir = "") {
  return kilnrt::ir::import_onnx_bytes(bytes.data(), bytes.size(), base_dir, "test.onnx");
}

// Runs `f`, expects a kilnrt::Error and returns it.
Error expect_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected kilnrt::Error, got std::exception: " << e.what();
    return Error(ErrorCode::kInternal, "wrong exception");
  }
  ADD_FAILURE() << "expected kilnrt::Error, nothing was thrown";
  return Error(ErrorCode::kInternal, "no exception");
}

std::string err_text(const Error& e) { return e.where() + " | " + e.message(); }

std::string fixture(const std::string& name) {
  return std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/" + name;
}

// Each node input is a graph input, a constant, "" or an output of an earlier node.
void expect_topologically_sorted(const Graph& g) {
  std::unordered_set<std::string> known(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, t] : g.constants) known.insert(name);
  for (const auto& n : g.nodes) {
    for (const auto& in : n.inputs) EXPECT_TRUE(in.empty() || known.count(in)) << n.name << " reads " << in;
    for (const auto& out : n.outputs) known.insert(out);
  }
}

size_t count_op(const Graph& g, const std::string& op) {
  size_t c = 0;
  for (const auto& n : g.nodes) c += n.op_type == op;
  return c;
}

const kilnrt::ir::Node* find_node(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

// A small valid model: x[batch,4] + w -> Relu -> y, with a named Add and an unnamed Relu.
ModelSpec small_model() {
  ModelSpec m;
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {DimSpec::named("batch"), 4}));
  m.graph.initializers.push_back(TensorSpec::float_raw("w", {4}, {1.f, -2.f, 3.f, -4.f}));
  m.graph.nodes.push_back(NodeSpec{"Add", {"x", "w"}, {"sum"}, {}, "add0"});
  m.graph.nodes.push_back(NodeSpec{"Relu", {"sum"}, {"y"}});
  m.graph.outputs.push_back(ValueInfoSpec::tensor("y", kFloat, {DimSpec::named("batch"), 4}));
  return m;
}

// ---- fixtures ----------------------------------------------------------------------------------------------

TEST(OnnxImportFixtures, MobileNetV3Small) {
  Graph g = kilnrt::ir::import_onnx_file(fixture("mobilenet_v3_small.onnx"));
  EXPECT_EQ(g.nodes.size(), 122u);
  EXPECT_EQ(count_op(g, "Conv"), 52u);
  EXPECT_EQ(count_op(g, "HardSwish"), 19u);
  EXPECT_EQ(count_op(g, "Gemm"), 2u);
  EXPECT_EQ(g.opset(), 20);
  EXPECT_EQ(g.producer, "pytorch 2.11.0+cu130");
  ASSERT_EQ(g.inputs, std::vector<std::string>{"x"});
  ASSERT_EQ(g.outputs, std::vector<std::string>{"y"});
  const auto* tx = g.type_of("x");
  ASSERT_NE(tx, nullptr);
  EXPECT_EQ(tx->dtype, DType::kFloat32);
  ASSERT_TRUE(tx->has_shape);
  ASSERT_EQ(tx->shape.size(), 4u);
  EXPECT_FALSE(tx->shape[0].known());
  EXPECT_EQ(tx->shape[0].param, "batch");
  EXPECT_EQ(tx->shape[1].value, 3);
  EXPECT_EQ(tx->shape[3].value, 224);
  const auto* ty = g.type_of("y");
  ASSERT_NE(ty, nullptr);
  ASSERT_EQ(ty->shape.size(), 2u);
  EXPECT_EQ(ty->shape[0].param, "batch");
  EXPECT_EQ(ty->shape[1].value, 1000);

  EXPECT_EQ(g.constants.size(), 90u);
  const kilnrt::Tensor& w = g.constants.at("features.0.0.weight");
  EXPECT_EQ(w.dtype(), DType::kFloat32);
  EXPECT_EQ(w.shape(), (kilnrt::Shape{16, 3, 3, 3}));
  EXPECT_FLOAT_EQ(w.data<float>()[0], -0.1438998281955719f);
  EXPECT_FLOAT_EQ(w.data<float>()[1], 0.08707372099161148f);
  EXPECT_FLOAT_EQ(w.data<float>()[w.numel() - 1], -0.11737396568059921f);
  const kilnrt::Tensor& shape_const = g.constants.at("val_403");
  EXPECT_EQ(shape_const.dtype(), DType::kInt64);
  ASSERT_EQ(shape_const.numel(), 2);
  EXPECT_EQ(shape_const.data<int64_t>()[0], -1);
  EXPECT_EQ(shape_const.data<int64_t>()[1], 576);

  const auto* conv = find_node(g, "node_Conv_506");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->attr_int("group"), 1);
  EXPECT_EQ(conv->attr_ints("kernel_shape"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(conv->attr_ints("strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(conv->attr_string("auto_pad"), "NOTSET");
  expect_topologically_sorted(g);
}

TEST(OnnxImportFixtures, TransformerEncoderLayer) {
  Graph g = kilnrt::ir::import_onnx_file(fixture("transformer_encoder_layer.onnx"));
  EXPECT_EQ(g.nodes.size(), 47u);
  EXPECT_EQ(count_op(g, "Reshape"), 11u);
  EXPECT_EQ(count_op(g, "MatMul"), 5u);
  EXPECT_EQ(count_op(g, "LayerNormalization"), 2u);
  EXPECT_EQ(count_op(g, "Shape"), 1u);
  EXPECT_EQ(g.constants.size(), 23u);
  ASSERT_EQ(g.inputs, std::vector<std::string>{"x"});
  const auto* tx = g.type_of("x");
  ASSERT_NE(tx, nullptr);
  ASSERT_EQ(tx->shape.size(), 3u);
  EXPECT_EQ(tx->shape[0].param, "batch");
  EXPECT_EQ(tx->shape[1].value, 16);
  EXPECT_EQ(tx->shape[2].value, 64);
  EXPECT_EQ(g.constants.at("layer.self_attn.in_proj_bias").shape(), (kilnrt::Shape{192}));
  EXPECT_EQ(g.constants.at("val_1").shape(), kilnrt::Shape{});  // int64 scalar
  const auto* ln = find_node(g, "node_layer_norm");
  ASSERT_NE(ln, nullptr);
  EXPECT_NEAR(ln->attr_float("epsilon"), 1e-5f, 1e-9f);
  EXPECT_EQ(ln->attr_int("axis"), -1);
  expect_topologically_sorted(g);
}

// ---- models built with the writer --------------------------------------------------------------------------

TEST(OnnxImport, SmallModelMapping) {
  ModelSpec m = small_model();
  m.opsets.push_back({"ai.onnx", 17});
  m.opsets.push_back({"com.microsoft", 1});
  m.graph.inputs.push_back(ValueInfoSpec::tensor("w", kFloat, {4}));  // initializer listed as input: not an input
  m.graph.value_infos.push_back(ValueInfoSpec::tensor("sum", kFloat, {DimSpec::named("batch"), DimSpec::unknown()}));
  Graph g = import_string(m.serialize());
  EXPECT_EQ(g.name, "test_graph");
  EXPECT_EQ(g.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(g.outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(g.producer, "kilnrt-test 1.0");
  EXPECT_EQ(g.opsets.size(), 2u);
  EXPECT_EQ(g.opset(""), 17);
  EXPECT_EQ(g.opset("com.microsoft"), 1);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].name, "add0");
  EXPECT_EQ(g.nodes[1].name, "Relu_1");
  ASSERT_TRUE(g.is_constant("w"));
  EXPECT_EQ(g.constants.at("w").data<float>()[3], -4.f);
  const auto* ts = g.type_of("sum");
  ASSERT_NE(ts, nullptr);
  ASSERT_EQ(ts->shape.size(), 2u);
  EXPECT_EQ(ts->shape[0].param, "batch");
  EXPECT_FALSE(ts->shape[1].known());
  EXPECT_TRUE(ts->shape[1].param.empty());
  const auto* tw = g.type_of("w");
  ASSERT_NE(tw, nullptr);
  EXPECT_EQ(tw->dtype, DType::kFloat32);
}

TEST(OnnxImport, UniqueNodeNames) {
  ModelSpec m;
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {2}));
  m.graph.nodes.push_back(NodeSpec{"Relu", {"x"}, {"a"}, {}, "Relu_1"});  // collides with the generated name
  m.graph.nodes.push_back(NodeSpec{"Relu", {"a"}, {"b"}});
  m.graph.nodes.push_back(NodeSpec{"Neg", {"b"}, {"c"}, {}, "dup"});
  m.graph.nodes.push_back(NodeSpec{"Neg", {"c"}, {"d"}, {}, "dup"});
  m.graph.outputs.push_back(ValueInfoSpec::tensor("d", kFloat, {2}));
  Graph g = import_string(m.serialize());
  std::set<std::string> names;
  for (const auto& n : g.nodes) names.insert(n.name);
  EXPECT_EQ(names.size(), 4u);
  EXPECT_TRUE(names.count("Relu_1"));
  EXPECT_TRUE(names.count("dup"));
}

TEST(OnnxImport, RawAndTypedDataAgree) {
  const std::vector<float> vals = {0.5f, -1.25f, 3.f, 1e-3f, -7.f, 42.f};
  for (bool packed : {true, false}) {
    ModelSpec m = small_model();
    m.graph.initializers.push_back(TensorSpec::float_raw("raw", {2, 3}, vals));
    TensorSpec typed = TensorSpec::float_typed("typed", {2, 3}, vals);
    typed.packed = packed;
    m.graph.initializers.push_back(typed);
    TensorSpec i64 = TensorSpec::int64_typed("i64", {3}, {-1, 0, 1LL << 40});
    i64.packed = packed;
    m.graph.initializers.push_back(i64);
    TensorSpec dbl;
    dbl.name = "dbl";
    dbl.data_type = kDouble;
    dbl.dims = {2};
    dbl.double_data = {1.5, -2.25};
    dbl.packed = packed;
    m.graph.initializers.push_back(dbl);
    TensorSpec i32;
    i32.name = "i32";
    i32.data_type = kInt32;
    i32.dims = {2};
    i32.int32_data = {-70000, 70000};
    i32.packed = packed;
    m.graph.initializers.push_back(i32);
    TensorSpec i8 = i32;
    i8.name = "i8";
    i8.data_type = kInt8;
    i8.int32_data = {-128, 127};
    m.graph.initializers.push_back(i8);
    TensorSpec b = i32;
    b.name = "b";
    b.data_type = kBool;
    b.int32_data = {1, 0};
    m.graph.initializers.push_back(b);
    TensorSpec scalar = TensorSpec::float_typed("scalar", {}, {2.5f});
    m.graph.initializers.push_back(scalar);
    TensorSpec empty = TensorSpec::float_typed("empty", {0, 3}, {});
    m.graph.initializers.push_back(empty);

    Graph g = import_string(m.serialize());
    const auto& r = g.constants.at("raw");
    const auto& t = g.constants.at("typed");
    ASSERT_EQ(r.shape(), (kilnrt::Shape{2, 3}));
    ASSERT_EQ(t.shape(), (kilnrt::Shape{2, 3}));
    for (size_t i = 0; i < vals.size(); ++i) {
      EXPECT_EQ(r.data<float>()[i], vals[i]);
      EXPECT_EQ(t.data<float>()[i], vals[i]);
    }
    EXPECT_EQ(g.constants.at("i64").data<int64_t>()[2], 1LL << 40);
    EXPECT_EQ(g.constants.at("i64").data<int64_t>()[0], -1);
    EXPECT_EQ(g.constants.at("dbl").dtype(), DType::kFloat64);
    EXPECT_EQ(g.constants.at("dbl").data<double>()[1], -2.25);
    EXPECT_EQ(g.constants.at("i32").data<int32_t>()[0], -70000);
    EXPECT_EQ(g.constants.at("i8").data<int8_t>()[0], -128);
    EXPECT_EQ(g.constants.at("b").dtype(), DType::kBool);
    EXPECT_EQ(g.constants.at("b").data<uint8_t>()[0], 1);
    EXPECT_EQ(g.constants.at("scalar").rank(), 0);
    EXPECT_EQ(g.constants.at("scalar").data<float>()[0], 2.5f);
    EXPECT_EQ(g.constants.at("empty").numel(), 0);
  }
}

TEST(OnnxImport, Float16AndBFloat16Initializers) {
  const std::vector<float> vals = {1.f, -2.5f, 0.099975586f, 65504.f};
  std::vector<uint16_t> half_bits, bf_bits;
  std::vector<int64_t> half_as_int32;
  for (float v : vals) {
    half_bits.push_back(kilnrt::float_to_half(v));
    bf_bits.push_back(kilnrt::float_to_bfloat16(v));
    half_as_int32.push_back(half_bits.back());
  }
  ModelSpec m = small_model();
  m.graph.initializers.push_back(TensorSpec::raw("h_raw", kFloat16, {4}, to_raw_bytes(half_bits)));
  TensorSpec h_typed;
  h_typed.name = "h_typed";
  h_typed.data_type = kFloat16;
  h_typed.dims = {4};
  h_typed.int32_data = half_as_int32;
  m.graph.initializers.push_back(h_typed);
  m.graph.initializers.push_back(TensorSpec::raw("bf", kBFloat16, {2, 2}, to_raw_bytes(bf_bits)));
  Graph g = import_string(m.serialize());
  for (const char* name : {"h_raw", "h_typed"}) {
    const auto& t = g.constants.at(name);
    ASSERT_EQ(t.dtype(), DType::kFloat16) << name;
    for (size_t i = 0; i < vals.size(); ++i) {
      EXPECT_NEAR(kilnrt::half_to_float(t.data<uint16_t>()[i]), vals[i], std::fabs(vals[i]) * 1e-3) << name;
    }
  }
  const auto& bf = g.constants.at("bf");
  EXPECT_EQ(bf.dtype(), DType::kBFloat16);
  EXPECT_EQ(bf.data<uint16_t>()[1], bf_bits[1]);
}

TEST(OnnxImport, AttributeKinds) {
  ModelSpec m = small_model();
  NodeSpec& add = m.graph.nodes[0];
  add.attrs = {AttrSpec::Int("i", -5),
               AttrSpec::Float("f", 0.25f),
               AttrSpec::String("s", "hello"),
               AttrSpec::Ints("is", {1, -2, 1LL << 33}),
               AttrSpec::Floats("fs", {1.5f, -0.5f}),
               AttrSpec::Strings("ss", {"a", "", "c"}),
               AttrSpec::Tensor("t", TensorSpec::int64_typed("", {2}, {7, 8})),
               AttrSpec::Ints("empty_ints", {})};
  AttrSpec untyped = AttrSpec::Int("no_type", 9);
  untyped.type = 0;  // older writers omit the type: inferred from the single value present
  add.attrs.push_back(untyped);
  Graph g = import_string(m.serialize());
  const auto& n = g.nodes[0];
  EXPECT_EQ(n.attr_int("i"), -5);
  EXPECT_EQ(n.attr_float("f"), 0.25f);
  EXPECT_EQ(n.attr_string("s"), "hello");
  EXPECT_EQ(n.attr_ints("is"), (std::vector<int64_t>{1, -2, 1LL << 33}));
  EXPECT_EQ(n.attr_floats("fs"), (std::vector<float>{1.5f, -0.5f}));
  EXPECT_EQ(n.attrs.at("ss").kind, kilnrt::ir::Attribute::Kind::kStrings);
  EXPECT_EQ(n.attrs.at("ss").strings, (std::vector<std::string>{"a", "", "c"}));
  EXPECT_EQ(n.attrs.at("empty_ints").kind, kilnrt::ir::Attribute::Kind::kInts);
  EXPECT_TRUE(n.attrs.at("empty_ints").ints.empty());
  const kilnrt::Tensor& t = n.attr_tensor("t");
  EXPECT_EQ(t.dtype(), DType::kInt64);
  EXPECT_EQ(t.data<int64_t>()[1], 8);
  EXPECT_EQ(n.attr_int("no_type"), 9);
}

TEST(OnnxImport, SubgraphAttributes) {
  // If(cond) then: y = Neg(x) (x from the outer scope); else: y = nested If whose branch reads x too.
  GraphSpec inner_then;
  inner_then.name = "inner";
  inner_then.nodes.push_back(NodeSpec{"Identity", {"x"}, {"inner_out"}});
  inner_then.outputs.push_back(ValueInfoSpec::rank_unknown("inner_out", kFloat));
  GraphSpec then_g;
  then_g.name = "then";
  then_g.nodes.push_back(NodeSpec{"Neg", {"x"}, {"then_out"}});
  then_g.outputs.push_back(ValueInfoSpec::tensor("then_out", kFloat, {DimSpec::named("batch"), 4}));
  GraphSpec else_g;
  else_g.name = "else";
  else_g.initializers.push_back(TensorSpec::float_typed("k", {1}, {2.f}));
  else_g.nodes.push_back(
      NodeSpec{"If",
               {"cond"},
               {"else_out"},
               {AttrSpec::Graph("then_branch", inner_then), AttrSpec::Graph("else_branch", inner_then)}});
  else_g.outputs.push_back(ValueInfoSpec::rank_unknown("else_out", kFloat));

  ModelSpec m;
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {DimSpec::named("batch"), 4}));
  m.graph.inputs.push_back(ValueInfoSpec::tensor("cond", kBool, {}));
  m.graph.nodes.push_back(NodeSpec{
      "If", {"cond"}, {"y"}, {AttrSpec::Graph("then_branch", then_g), AttrSpec::Graph("else_branch", else_g)}});
  m.graph.outputs.push_back(ValueInfoSpec::rank_unknown("y", kFloat));
  Graph g = import_string(m.serialize());
  ASSERT_EQ(g.nodes.size(), 1u);
  const auto& attr = g.nodes[0].attrs.at("then_branch");
  ASSERT_EQ(attr.kind, kilnrt::ir::Attribute::Kind::kGraph);
  ASSERT_NE(attr.g, nullptr);
  EXPECT_EQ(attr.g->name, "then");
  ASSERT_EQ(attr.g->nodes.size(), 1u);
  EXPECT_EQ(attr.g->nodes[0].op_type, "Neg");
  EXPECT_EQ(attr.g->outputs, std::vector<std::string>{"then_out"});
  EXPECT_EQ(attr.g->opset(), 17);
  const auto& else_attr = g.nodes[0].attrs.at("else_branch");
  ASSERT_NE(else_attr.g, nullptr);
  EXPECT_TRUE(else_attr.g->is_constant("k"));
  const auto& nested = else_attr.g->nodes.at(0).attrs.at("then_branch");
  ASSERT_NE(nested.g, nullptr);
  EXPECT_EQ(nested.g->name, "inner");
  EXPECT_EQ(nested.g->nodes.at(0).op_type, "Identity");
  EXPECT_FALSE(g.type_of("y")->has_shape);
}

// ---- external data -----------------------------------------------------------------------------------------

class OnnxExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("kilnrt_onnx_ext_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "weights");
    // weights/w.bin: 16 bytes of padding, then 6 floats, then 2 int64.
    std::ofstream f(dir_ / "weights" / "w.bin", std::ios::binary);
    const std::string pad(16, '\x7f');
    f.write(pad.data(), pad.size());
    f.write(reinterpret_cast<const char*>(floats_.data()), floats_.size() * 4);
    const int64_t ints[2] = {-3, 1LL << 50};
    f.write(reinterpret_cast<const char*>(ints), sizeof(ints));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the model next to weights/ and imports it from the file.
  Graph import_with(const std::vector<TensorSpec>& inits) {
    ModelSpec m = small_model();
    for (const auto& t : inits) m.graph.initializers.push_back(t);
    const fs::path p = dir_ / "model.onnx";
    std::ofstream(p, std::ios::binary) << m.serialize();
    return kilnrt::ir::import_onnx_file(p.string());
  }

  fs::path dir_;
  std::vector<float> floats_ = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
};

TEST_F(OnnxExternalData, ReadsOffsetsAndLengths) {
  Graph g = import_with({TensorSpec::external_file("ef", kFloat, {2, 3}, "weights/w.bin", 16, 24),
                         TensorSpec::external_file("ei", kInt64, {2}, "weights/w.bin", 40)});  // to end of file
  const auto& ef = g.constants.at("ef");
  ASSERT_EQ(ef.shape(), (kilnrt::Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(ef.data<float>()[i], floats_[i]);
  EXPECT_EQ(g.constants.at("ei").data<int64_t>()[1], 1LL << 50);
}

TEST_F(OnnxExternalData, RejectsEscapingPaths) {
  std::ofstream(dir_.parent_path() / "kilnrt_outside.bin", std::ios::binary) << std::string(24, '\0');
  for (const std::string loc : {"../kilnrt_outside.bin", "weights/../../kilnrt_outside.bin", "/etc/passwd",
                                "..\\kilnrt_outside.bin", "C:\\w.bin", ""}) {
    Error e = expect_error([&] { import_with({TensorSpec::external_file("ef", kFloat, {2, 3}, loc)}); });
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << loc << ": " << err_text(e);
    EXPECT_NE(e.where().find("ef"), std::string::npos) << err_text(e);
  }
  fs::remove(dir_.parent_path() / "kilnrt_outside.bin");
}

TEST_F(OnnxExternalData, RejectsWrongSizesAndMissingFiles) {
  Error e = expect_error([&] {
    import_with({TensorSpec::external_file("ef", kFloat, {2, 3}, "weights/w.bin", 16, 20)});
  });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << err_text(e);
  e = expect_error([&] { import_with({TensorSpec::external_file("ef", kFloat, {2, 3}, "weights/w.bin", 40, 24)}); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << err_text(e);  // runs past the end
  e = expect_error([&] { import_with({TensorSpec::external_file("ef", kFloat, {2, 3}, "weights/w.bin", 1000)}); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << err_text(e);  // offset past the end
  e = expect_error([&] { import_with({TensorSpec::external_file("ef", kFloat, {2, 3}, "weights/nope.bin")}); });
  EXPECT_EQ(e.code(), ErrorCode::kIo) << err_text(e);
  TensorSpec bad_offset = TensorSpec::external_file("ef", kFloat, {2, 3}, "weights/w.bin");
  bad_offset.external_data.emplace_back("offset", "-16");
  e = expect_error([&] { import_with({bad_offset}); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << err_text(e);
  // From bytes without a base directory, external data cannot be resolved.
  ModelSpec m = small_model();
  m.graph.initializers.push_back(TensorSpec::external_file("ef", kFloat, {2, 3}, "weights/w.bin", 16));
  e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_NE(e.message().find("base directory"), std::string::npos) << err_text(e);
}

// ---- semantic validation -----------------------------------------------------------------------------------

TEST(OnnxImportErrors, ModelLevel) {
  ModelSpec m = small_model();
  m.has_graph = false;
  Error e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_NE(e.message().find("no graph"), std::string::npos) << err_text(e);

  m = small_model();
  m.ir_version = 2;
  e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_NE(e.message().find("ir_version"), std::string::npos) << err_text(e);

  m = small_model();
  m.opsets = {{"", 6}};  // opsets 1..12 import with a warning (see kMinOnnxOpset)
  EXPECT_EQ(import_string(m.serialize()).opset(), 6);
  m.opsets = {{"", 1}};
  m.graph.nodes[0].attrs = {AttrSpec::Int("broadcast", 1)};  // legacy trailing alignment = numpy: accepted
  EXPECT_EQ(import_string(m.serialize()).opset(), 1);
  m.graph.nodes[0].attrs = {AttrSpec::Int("broadcast", 1), AttrSpec::Int("axis", 0)};  // axis alignment: rejected
  e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_NE(e.message().find("legacy"), std::string::npos) << err_text(e);
  EXPECT_NE(e.message().find("opset_version>=7"), std::string::npos) << err_text(e);
  m = small_model();
  m.opsets = {{"", 0}};
  e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_NE(e.message().find("opset 1 or newer required"), std::string::npos) << err_text(e);
  EXPECT_EQ(e.where(), "test.onnx");

  m.opsets = {{"com.microsoft", 1}};  // no default domain at all
  e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);

  m.opsets = {{"", 26}};  // newer than tested: a warning, not an error
  EXPECT_EQ(import_string(m.serialize()).opset(), 26);

  e = expect_error([&] { import_string(""); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  e = expect_error([&] { kilnrt::ir::import_onnx_file("/nonexistent/kilnrt/model.onnx"); });
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  EXPECT_EQ(e.where(), "/nonexistent/kilnrt/model.onnx");
  e = expect_error([&] { kilnrt::ir::import_onnx_file(fs::temp_directory_path().string()); });
  EXPECT_EQ(e.code(), ErrorCode::kIo);
}

TEST(OnnxImportErrors, TensorProblemsNameTheTensor) {
  struct Case {
    TensorSpec t;
    ErrorCode code;
  };
  std::vector<Case> cases;
  cases.push_back({TensorSpec::float_raw("bad_size", {2, 3}, {1.f, 2.f}), ErrorCode::kInvalidModel});
  cases.push_back({TensorSpec::float_typed("bad_count", {4}, {1.f}), ErrorCode::kInvalidModel});
  cases.push_back({TensorSpec::float_raw("huge", {1LL << 40, 1LL << 20}, {1.f}), ErrorCode::kInvalidModel});
  cases.push_back({TensorSpec::float_raw("negative_dim", {-1, 2}, {1.f, 2.f}), ErrorCode::kInvalidModel});
  TensorSpec unknown_type = TensorSpec::raw("unknown_type", 99, {1}, "abcd");
  cases.push_back({unknown_type, ErrorCode::kInvalidModel});
  cases.push_back({TensorSpec::raw("no_type", 0, {1}, "abcd"), ErrorCode::kInvalidModel});
  cases.push_back({TensorSpec::raw("complex64", 14, {1}, "abcdefgh"), ErrorCode::kUnsupported});
  TensorSpec wrong_field = TensorSpec::int64_typed("wrong_field", {2}, {1, 2});
  wrong_field.data_type = kFloat;
  cases.push_back({wrong_field, ErrorCode::kInvalidModel});
  TensorSpec both = TensorSpec::float_raw("both", {1}, {1.f});
  both.float_data = {1.f};
  cases.push_back({both, ErrorCode::kInvalidModel});
  TensorSpec out_of_range;
  out_of_range.name = "u8_range";
  out_of_range.data_type = kUInt8;
  out_of_range.dims = {1};
  out_of_range.int32_data = {300};
  cases.push_back({out_of_range, ErrorCode::kInvalidModel});
  for (const Case& c : cases) {
    ModelSpec m = small_model();
    m.graph.initializers.push_back(c.t);
    Error e = expect_error([&] { import_string(m.serialize()); });
    EXPECT_EQ(e.code(), c.code) << c.t.name << ": " << err_text(e);
    EXPECT_NE(e.where().find(c.t.name), std::string::npos) << err_text(e);
    EXPECT_NE(e.where().find("test.onnx"), std::string::npos) << err_text(e);
  }
}

TEST(OnnxImportErrors, GraphProblems) {
  ModelSpec m = small_model();
  m.graph.nodes.push_back(NodeSpec{"Neg", {"x"}, {"sum"}, {}, "second_producer"});
  Error e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_NE(e.message().find("produced twice"), std::string::npos) << err_text(e);
  EXPECT_NE(e.message().find("second_producer"), std::string::npos) << err_text(e);

  m = small_model();
  m.graph.nodes.push_back(NodeSpec{"Neg", {"x"}, {"w"}});  // overwrites an initializer
  EXPECT_EQ(expect_error([&] { import_string(m.serialize()); }).code(), ErrorCode::kInvalidModel);

  m = small_model();
  m.graph.nodes[1].inputs = {"never_produced"};
  e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << err_text(e);

  m = small_model();
  m.graph.outputs.push_back(ValueInfoSpec::tensor("ghost", kFloat, {1}));
  e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_EQ(e.where(), "ghost");

  m = small_model();
  m.graph.inputs[0].elem_type = kString;
  EXPECT_EQ(expect_error([&] { import_string(m.serialize()); }).code(), ErrorCode::kUnsupported);

  m = small_model();
  m.graph.inputs[0].has_type = false;
  EXPECT_EQ(expect_error([&] { import_string(m.serialize()); }).code(), ErrorCode::kInvalidModel);

  m = small_model();
  m.graph.nodes[1].op_type = "";
  EXPECT_EQ(expect_error([&] { import_string(m.serialize()); }).code(), ErrorCode::kInvalidModel);

  m = small_model();
  ProtoWriter sparse;
  sparse.message_field(15, std::string());
  m.graph.extra = sparse.bytes();
  e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_NE(e.where().find("graph.sparse_initializer"), std::string::npos) << err_text(e);
}

TEST(OnnxImportErrors, AttributeProblems) {
  ModelSpec m = small_model();
  AttrSpec ref = AttrSpec::Int("alpha", 0);
  ref.ref_attr_name = "outer_alpha";
  m.graph.nodes[0].attrs = {ref};
  Error e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_NE(e.message().find("ref_attr_name"), std::string::npos) << err_text(e);
  EXPECT_NE(e.where().find("add0"), std::string::npos) << err_text(e);
  EXPECT_NE(e.where().find("graph.node[0].attribute[0]"), std::string::npos) << err_text(e);

  m.graph.nodes[0].attrs = {AttrSpec::Int("a", 1), AttrSpec::Int("a", 2)};
  EXPECT_EQ(expect_error([&] { import_string(m.serialize()); }).code(), ErrorCode::kInvalidModel);

  AttrSpec tensors = AttrSpec::Int("ts", 0);
  tensors.type = 9;  // TENSORS
  m.graph.nodes[0].attrs = {tensors};
  EXPECT_EQ(expect_error([&] { import_string(m.serialize()); }).code(), ErrorCode::kUnsupported);

  AttrSpec bad_type = AttrSpec::Int("bt", 0);
  bad_type.type = 77;
  m.graph.nodes[0].attrs = {bad_type};
  EXPECT_EQ(expect_error([&] { import_string(m.serialize()); }).code(), ErrorCode::kInvalidModel);

  // A malformed attribute deep in the graph: the error names the field path.
  m.graph.nodes[0].attrs = {AttrSpec::Int("ok", 1)};
  m.graph.nodes[1].attrs = {AttrSpec::Int("ok", 1), AttrSpec::Tensor("t", TensorSpec::float_raw("", {3}, {1.f}))};
  e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_NE(e.where().find("graph.node[1].attribute[1].t"), std::string::npos) << err_text(e);
}

// ---- the wire format ---------------------------------------------------------------------------------------

// Decodes every field of a message recursively as if it were a nested message, to exercise the reader.
void walk(kilnrt::ir::pb::Reader r) {
  while (r.next()) {
    if (r.wire_type() == kilnrt::ir::pb::WireType::kLengthDelimited && r.field() == 1) {
      kilnrt::ir::pb::FieldPath p(r.path(), "child");
      walk(r.read_message(&p));
    } else {
      r.skip();
    }
  }
}

Error wire_error(const std::string& bytes) {
  kilnrt::ir::pb::Source src{"wire.bin", reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
  return expect_error([&] { walk(kilnrt::ir::pb::Reader(src)); });
}

TEST(ProtobufReader, MalformedWireFormat) {
  EXPECT_NE(wire_error("\x08").message().find("truncated varint"), std::string::npos);  // value missing
  EXPECT_NE(wire_error("\x08\x80\x80").message().find("truncated varint"), std::string::npos);
  EXPECT_NE(wire_error(std::string("\x08") + std::string(10, '\xff') + "\x01").message().find("64 bits"),
            std::string::npos);
  EXPECT_NE(wire_error(std::string("\x00\x01", 2)).message().find("field number 0"), std::string::npos);
  EXPECT_NE(wire_error("\x0e\x01").message().find("wire type 6"), std::string::npos);
  EXPECT_NE(wire_error("\x0f\x01").message().find("wire type 7"), std::string::npos);
  EXPECT_NE(wire_error("\x12\x05\x01").message().find("runs past the end"), std::string::npos);
  EXPECT_NE(wire_error("\x12\xff\xff\xff\xff\x0f").message().find("runs past the end"), std::string::npos);
  EXPECT_NE(wire_error("\x0d\x01\x02").message().find("truncated 32-bit"), std::string::npos);
  EXPECT_NE(wire_error("\x09\x01\x02").message().find("truncated 64-bit"), std::string::npos);
  EXPECT_NE(wire_error("\x0c").message().find("end-group"), std::string::npos);
  EXPECT_NE(wire_error("\x0b\x10\x01").message().find("unterminated group"), std::string::npos);
  EXPECT_NE(wire_error("\x0b\x14").message().find("closes group"), std::string::npos);
  for (const char* bad : {"\x08", "\x12\x05\x01"}) EXPECT_EQ(wire_error(bad).code(), ErrorCode::kInvalidModel);
  // Nesting deeper than the limit: an error, not a stack overflow.
  std::string nested;
  for (int i = 0; i < 5000; ++i) {
    ProtoWriter w;
    w.bytes_field(1, nested);
    nested = w.bytes();
  }
  Error e = wire_error(nested);
  EXPECT_NE(e.message().find("nested deeper"), std::string::npos) << err_text(e);
  EXPECT_NE(e.where().find("wire.bin: child.child.child"), std::string::npos) << e.where().substr(0, 100);
}

TEST(ProtobufReader, GroupsAndPackedScalars) {
  // field 3: a group holding a nested group and a varint, skipped; then field 2 packed, field 2 unpacked.
  ProtoWriter w;
  w.tag(3, 3);
  w.int_field(1, 5);
  w.tag(4, 3);
  w.float_field(9, 1.f);
  w.tag(4, 4);
  w.tag(3, 4);
  w.packed_varints(2, {1, -1, 300});
  w.int_field(2, 7);
  const std::string bytes = w.bytes();
  kilnrt::ir::pb::Source src{"groups.bin", reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
  kilnrt::ir::pb::Reader r(src);
  std::vector<int64_t> ints;
  while (r.next()) {
    if (r.field() == 2)
      r.read_repeated_varint(&ints);
    else
      r.skip();
  }
  EXPECT_EQ(ints, (std::vector<int64_t>{1, -1, 300, 7}));
  // Nested empty groups are valid and skipped.
  const std::string groups = "\x1b\x23\x24\x1c";
  kilnrt::ir::pb::Source gsrc{"g.bin", reinterpret_cast<const uint8_t*>(groups.data()), groups.size()};
  EXPECT_NO_THROW(walk(kilnrt::ir::pb::Reader(gsrc)));
}

TEST(OnnxImportErrors, DeeplyNestedSubgraphsAreRejected) {
  GraphSpec g;
  g.nodes.push_back(NodeSpec{"Identity", {"x"}, {"o"}});
  g.outputs.push_back(ValueInfoSpec::rank_unknown("o", kFloat));
  for (int i = 0; i < 60; ++i) {
    GraphSpec outer;
    outer.nodes.push_back(NodeSpec{"If", {"cond"}, {"o"}, {AttrSpec::Graph("then_branch", g)}});
    outer.outputs.push_back(ValueInfoSpec::rank_unknown("o", kFloat));
    g = outer;
  }
  ModelSpec m;
  m.graph = g;
  m.graph.inputs.push_back(ValueInfoSpec::tensor("x", kFloat, {1}));
  m.graph.inputs.push_back(ValueInfoSpec::tensor("cond", kBool, {}));
  Error e = expect_error([&] { import_string(m.serialize()); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_NE(e.message().find("nested deeper"), std::string::npos) << err_text(e);
}

// ---- fuzzing: truncation at every offset and random byte flips ---------------------------------------------

ModelSpec fuzz_model() {
  ModelSpec m = small_model();
  m.graph.nodes[0].attrs = {AttrSpec::Ints("axes", {0, 1}), AttrSpec::Float("alpha", 0.5f),
                            AttrSpec::Tensor("value", TensorSpec::float_typed("", {2}, {1.f, 2.f}))};
  GraphSpec body;
  body.nodes.push_back(NodeSpec{"Identity", {"x"}, {"b"}});
  body.outputs.push_back(ValueInfoSpec::rank_unknown("b", kFloat));
  m.graph.nodes.push_back(NodeSpec{"If", {"cond"}, {"z"}, {AttrSpec::Graph("then_branch", body)}});
  m.graph.inputs.push_back(ValueInfoSpec::tensor("cond", kBool, {}));
  m.graph.initializers.push_back(TensorSpec::int64_typed("shape", {2}, {-1, 4}));
  m.graph.outputs.push_back(ValueInfoSpec::rank_unknown("z", kFloat));
  return m;
}

// Import must either succeed or throw kilnrt::Error; anything else fails the test (a crash fails the binary).
void import_survives(const std::string& bytes, const std::string& what) {
  try {
    import_string(bytes);
  } catch (const Error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": non-kilnrt exception " << e.what();
  }
}

// Silences the "newer opset" warnings that flipped opset bytes produce.
class QuietLogs {
 public:
  QuietLogs() : saved_(kilnrt::log_level()) { kilnrt::set_log_level(kilnrt::LogLevel::kError); }
  ~QuietLogs() { kilnrt::set_log_level(saved_); }

 private:
  kilnrt::LogLevel saved_;
};

TEST(OnnxImportFuzz, TruncatedAtEveryByte) {
  QuietLogs quiet;
  const std::string full = fuzz_model().serialize();
  ASSERT_NO_THROW(import_string(full));
  size_t errors = 0;
  for (size_t n = 0; n < full.size(); ++n) {
    const std::string cut = full.substr(0, n);
    try {
      import_string(cut);
    } catch (const Error& e) {
      ++errors;
      EXPECT_NE(e.where().find("test.onnx"), std::string::npos) << err_text(e);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "truncated at " << n << ": non-kilnrt exception " << e.what();
    }
  }
  EXPECT_GT(errors, full.size() / 2);  // most prefixes are invalid models
}

TEST(OnnxImportFuzz, RandomByteFlips) {
  QuietLogs quiet;
  const std::string full = fuzz_model().serialize();
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string bytes = full;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const size_t pos = rng() % bytes.size();
      bytes[pos] = static_cast<char>(rng() % 3 == 0 ? (bytes[pos] ^ (1 << (rng() % 8))) : rng());
    }
    import_survives(bytes, "iteration " + std::to_string(iter));
  }
}

}  // namespace
