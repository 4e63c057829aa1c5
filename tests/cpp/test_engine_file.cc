// Engine file format v2 and CRC-32C: round trips, the acceptance failures with their messages, and mutated files
// (every byte flipped, every truncation, mutations with checksums recomputed) that must always end in kilnrt::Error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/checksum.h"
#include "engine/engine_file.h"
#include "kilnrt/engine.h"
#include "kilnrt/error.h"

namespace kilnrt::engine {
namespace {

// ---- CRC-32C ----------------------------------------------------------------------------------------------------
using CrcFn = uint32_t (*)(const void*, size_t, uint32_t);

std::vector<CrcFn> crc_implementations() {
  std::vector<CrcFn> fns = {&crc32c, &crc32c_software};
  if (crc32c_hardware_available()) fns.push_back(&crc32c_hardware);
  return fns;
}

TEST(Crc32c, KnownVectors) {
  // "123456789" and the RFC 3720 (iSCSI) test vectors.
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<uint8_t>(i);
    dec[i] = static_cast<uint8_t>(31 - i);
  }
  for (CrcFn fn : crc_implementations()) {
    EXPECT_EQ(fn("123456789", 9, 0), 0xE3069283u);
    EXPECT_EQ(fn("", 0, 0), 0u);
    EXPECT_EQ(fn(zeros.data(), 32, 0), 0x8A9136AAu);
    EXPECT_EQ(fn(ones.data(), 32, 0), 0x62A8AB43u);
    EXPECT_EQ(fn(inc.data(), 32, 0), 0x46DD794Eu);
    EXPECT_EQ(fn(dec.data(), 32, 0), 0x113FDB5Cu);
  }
}

TEST(Crc32c, HardwareMatchesSoftwareOnRandomBuffers) {
  if (!crc32c_hardware_available()) GTEST_SKIP() << "CPU has no SSE4.2: only the software CRC-32C is tested";
  std::mt19937 rng(1234);
  std::vector<uint8_t> buf(3 * 8192 * 2 + 4096);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 800; ++n) lengths.push_back(n);
  for (size_t n : {1023u, 3 * 256u - 1, 3 * 256u + 1, 3 * 8192u - 1, 3 * 8192u, 3 * 8192u + 7, 2 * 3 * 8192u + 100})
    lengths.push_back(n);
  for (size_t n : lengths)
    for (size_t align = 0; align < 8; ++align) {
      ASSERT_LE(align + n, buf.size());
      const uint32_t seed = static_cast<uint32_t>(rng());
      ASSERT_EQ(crc32c_hardware(buf.data() + align, n, seed), crc32c_software(buf.data() + align, n, seed))
          << "length " << n << " alignment " << align;
    }
}

TEST(Crc32c, Composes) {
  std::mt19937 rng(99);
  std::vector<uint8_t> buf(70000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (CrcFn fn : crc_implementations()) {
    const uint32_t whole = fn(buf.data(), buf.size(), 0);
    for (size_t split : {0u, 1u, 7u, 100u, 24576u, 30001u, 70000u})
      EXPECT_EQ(fn(buf.data() + split, buf.size() - split, fn(buf.data(), split, 0)), whole) << "split " << split;
  }
}

TEST(Crc32c, Hash64) {
  const std::string a = "model bytes A", b = "model bytes B";
  EXPECT_EQ(hash64(a.data(), a.size()), hash64(a.data(), a.size()));
  EXPECT_NE(hash64(a.data(), a.size()), hash64(b.data(), b.size()));
  EXPECT_NE(hash64(a.data(), 5), hash64(a.data(), 6));
  const std::string hex = hash64_hex(a.data(), a.size());
  EXPECT_EQ(hex.size(), 16u);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
}

// ---- a graph exercising every feature --------------------------------------------------------------------------
ir::Attribute attr_float(float f) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloat;
  a.f = f;
  return a;
}
ir::Attribute attr_int(int64_t i) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = i;
  return a;
}
ir::Attribute attr_string(std::string s) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = std::move(s);
  return a;
}
ir::Attribute attr_tensor(Tensor t) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kTensor;
  a.t = t;
  return a;
}

Tensor float_tensor(const Shape& shape, float start) {
  Tensor t = Tensor::empty(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + 0.5f * static_cast<float>(i);
  return t;
}

ir::Graph make_subgraph() {
  ir::Graph g;
  g.name = "then_branch";
  g.outputs = {"sub_out"};
  ir::Node n;
  n.name = "sub_add";
  n.op_type = "Add";
  n.inputs = {"x", "sub_const"};  // "x" comes from the outer scope
  n.outputs = {"sub_out"};
  n.attrs["value"] = attr_tensor(Tensor::from_vector<int64_t>({5, -6}, DType::kInt64, {2}));
  g.nodes.push_back(n);
  g.constants["sub_const"] = float_tensor({3}, 7.f);
  g.types["sub_out"] = ir::TensorType{DType::kFloat32, true, {ir::Dim::symbol("batch"), 3}, std::nullopt};
  return g;
}

ir::Graph make_graph() {
  ir::Graph g;
  g.name = "main_graph";
  g.producer = "pytorch 2.11";
  g.opsets = {{"", 17}, {"com.microsoft", 1}};
  g.inputs = {"x", "flag"};
  g.outputs = {"y", "shape_out"};
  g.types["x"] = ir::TensorType{DType::kFloat32, true, {ir::Dim::symbol("batch"), 4}, std::nullopt};
  g.types["flag"] = ir::TensorType{DType::kBool, true, {}, std::nullopt};
  g.types["h"] = ir::TensorType{DType::kFloat32, true, {ir::Dim::symbol("batch"), ir::Dim()}, std::nullopt};
  g.types["y"] = ir::TensorType{DType::kFloat32, false, {}, std::nullopt};
  g.types["shape_out"] = ir::TensorType{DType::kInt64, true, {2}, ir::SymShape{ir::Dim::symbol("batch"), ir::Dim(5)}};

  ir::Node mm;
  mm.name = "unique_matmul_node_name";
  mm.op_type = "MatMul";
  mm.inputs = {"x", "unique_weight_name"};
  mm.outputs = {"h"};
  mm.attrs["alpha"] = attr_float(-1.25f);
  mm.attrs["axis"] = attr_int(-3);
  mm.attrs["mode"] = attr_string("nearest");
  Tensor half = Tensor::empty(DType::kFloat16, {2, 2});
  for (int i = 0; i < 4; ++i) half.data<uint16_t>()[i] = float_to_half(0.25f * static_cast<float>(i));
  mm.attrs["t"] = attr_tensor(half);
  mm.attrs["empty_t"] = attr_tensor(Tensor());
  ir::Attribute floats;
  floats.kind = ir::Attribute::Kind::kFloats;
  floats.floats = {1.f, -2.5f, 1e30f};
  mm.attrs["floats"] = floats;
  ir::Attribute ints;
  ints.kind = ir::Attribute::Kind::kInts;
  ints.ints = {0, -1, int64_t(1) << 40};
  mm.attrs["ints"] = ints;
  ir::Attribute strings;
  strings.kind = ir::Attribute::Kind::kStrings;
  strings.strings = {"a", "", "ccc"};
  mm.attrs["strings"] = strings;
  ir::Attribute empty_ints;
  empty_ints.kind = ir::Attribute::Kind::kInts;
  mm.attrs["empty_ints"] = empty_ints;
  g.nodes.push_back(mm);

  ir::Node branch;
  branch.name = "if_node";
  branch.op_type = "If";
  branch.inputs = {"flag"};
  branch.outputs = {"y"};
  ir::Attribute sub;
  sub.kind = ir::Attribute::Kind::kGraph;
  sub.g = std::make_shared<ir::Graph>(make_subgraph());
  branch.attrs["then_branch"] = sub;
  g.nodes.push_back(branch);

  ir::Node shape;
  shape.name = "shape_node";
  shape.op_type = "CustomShape";
  shape.domain = "com.microsoft";
  shape.inputs = {"h", "", "shape_const"};
  shape.outputs = {"shape_out", ""};
  g.nodes.push_back(shape);

  Tensor w = Tensor::empty(DType::kFloat32, {4, 5});
  for (int i = 0; i < 20; ++i) w.data<float>()[i] = 1000.f + static_cast<float>(i);  // distinctive bytes
  g.constants["unique_weight_name"] = w;
  Tensor w16 = Tensor::empty(DType::kFloat16, {3});
  for (int i = 0; i < 3; ++i) w16.data<uint16_t>()[i] = float_to_half(static_cast<float>(i) - 1.f);
  g.constants["w16"] = w16;
  g.constants["shape_const"] = Tensor::from_vector<int64_t>({-1, 5, int64_t(1) << 50}, DType::kInt64, {3});
  g.constants["mask"] = Tensor::from_vector<uint8_t>({1, 0, 0, 1}, DType::kBool, {2, 2});
  g.constants["scalar"] = float_tensor({}, 3.5f);
  g.constants["empty"] = Tensor::empty(DType::kFloat32, {0, 3});
  return g;
}

EngineMetadata make_metadata() {
  EngineMetadata m;
  m.kilnrt_version = "0.1.0";
  m.target = "sm_90";
  m.gpu_name = "NVIDIA H100 80GB HBM3";
  m.sm_count = 132;
  m.cuda_version = "13.0";
  m.cudnn_version = "9.10.0";
  m.cublaslt_version = "13.0.1";
  m.build_options = "device=cuda fp16=1";
  m.model_hash = "0123456789abcdef";
  m.profiles = {{{"x", {1, 4}, {8, 4}, {32, 4}}}, {{"x", {64, 4}, {64, 4}, {64, 4}}}};
  m.inputs = {{"x", DType::kFloat32, {-1, 4}, {"batch", ""}}, {"flag", DType::kBool, {}, {}}};
  m.outputs = {{"y", DType::kFloat32, {-1, 3}, {"batch", ""}}};
  m.layer_tactics = {{"unique_matmul_node_name", "cuda cublasLt algo=7"}, {"if_node", "cpu"}};
  m.blobs["cubin:fused_0"] = {0x7f, 'E', 'L', 'F', 0, 1, 2, 3};
  m.blobs["empty"] = {};
  return m;
}

// ---- comparisons ----------------------------------------------------------------------------------------------
void expect_tensor_eq(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (!a.defined()) return;
  EXPECT_EQ(a.dtype(), b.dtype()) << what;
  EXPECT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.nbytes(), b.nbytes()) << what;
  if (a.nbytes()) EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << what;
}

void expect_dims_eq(const ir::SymShape& a, const ir::SymShape& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].value, b[i].value) << what;
    EXPECT_EQ(a[i].param, b[i].param) << what;
  }
}

void expect_graph_eq(const ir::Graph& a, const ir::Graph& b);

void expect_attr_eq(const ir::Attribute& a, const ir::Attribute& b, const std::string& what) {
  ASSERT_EQ(a.kind, b.kind) << what;
  EXPECT_EQ(std::memcmp(&a.f, &b.f, sizeof(float)), 0) << what;
  EXPECT_EQ(a.i, b.i) << what;
  EXPECT_EQ(a.s, b.s) << what;
  expect_tensor_eq(a.t, b.t, what);
  EXPECT_EQ(a.floats, b.floats) << what;
  EXPECT_EQ(a.ints, b.ints) << what;
  EXPECT_EQ(a.strings, b.strings) << what;
  ASSERT_EQ(a.g != nullptr, b.g != nullptr) << what;
  if (a.g) expect_graph_eq(*a.g, *b.g);
}

void expect_graph_eq(const ir::Graph& a, const ir::Graph& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.producer, b.producer);
  EXPECT_EQ(a.opsets, b.opsets);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
  ASSERT_EQ(a.types.size(), b.types.size());
  for (const auto& [name, t] : a.types) {
    ASSERT_TRUE(b.types.count(name)) << name;
    const ir::TensorType& u = b.types.at(name);
    EXPECT_EQ(t.dtype, u.dtype) << name;
    EXPECT_EQ(t.has_shape, u.has_shape) << name;
    expect_dims_eq(t.shape, u.shape, name);
    ASSERT_EQ(t.sym_value.has_value(), u.sym_value.has_value()) << name;
    if (t.sym_value) expect_dims_eq(*t.sym_value, *u.sym_value, name + " sym_value");
  }
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const ir::Node &m = a.nodes[i], &n = b.nodes[i];
    EXPECT_EQ(m.name, n.name);
    EXPECT_EQ(m.op_type, n.op_type);
    EXPECT_EQ(m.domain, n.domain);
    EXPECT_EQ(m.inputs, n.inputs);
    EXPECT_EQ(m.outputs, n.outputs);
    ASSERT_EQ(m.attrs.size(), n.attrs.size()) << m.name;
    for (const auto& [key, attr] : m.attrs) {
      ASSERT_TRUE(n.attrs.count(key)) << m.name << "." << key;
      expect_attr_eq(attr, n.attrs.at(key), m.name + "." + key);
    }
  }
  ASSERT_EQ(a.constants.size(), b.constants.size());
  for (const auto& [name, t] : a.constants) {
    ASSERT_TRUE(b.constants.count(name)) << name;
    expect_tensor_eq(t, b.constants.at(name), name);
  }
}

void expect_shapes_eq(const std::vector<TensorInfo>& a, const std::vector<TensorInfo>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].dtype, b[i].dtype);
    EXPECT_EQ(a[i].shape, b[i].shape);
    EXPECT_EQ(a[i].dim_names, b[i].dim_names);
  }
}

void expect_metadata_eq(const EngineMetadata& a, const EngineMetadata& b, bool with_blobs) {
  EXPECT_EQ(b.format_version, kEngineFormatVersion);
  EXPECT_EQ(a.kilnrt_version, b.kilnrt_version);
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.gpu_name, b.gpu_name);
  EXPECT_EQ(a.sm_count, b.sm_count);
  EXPECT_EQ(a.cuda_version, b.cuda_version);
  EXPECT_EQ(a.cudnn_version, b.cudnn_version);
  EXPECT_EQ(a.cublaslt_version, b.cublaslt_version);
  EXPECT_EQ(a.build_options, b.build_options);
  EXPECT_EQ(a.model_hash, b.model_hash);
  ASSERT_EQ(a.profiles.size(), b.profiles.size());
  for (size_t i = 0; i < a.profiles.size(); ++i) {
    ASSERT_EQ(a.profiles[i].size(), b.profiles[i].size());
    for (size_t j = 0; j < a.profiles[i].size(); ++j) {
      EXPECT_EQ(a.profiles[i][j].name, b.profiles[i][j].name);
      EXPECT_EQ(a.profiles[i][j].min, b.profiles[i][j].min);
      EXPECT_EQ(a.profiles[i][j].opt, b.profiles[i][j].opt);
      EXPECT_EQ(a.profiles[i][j].max, b.profiles[i][j].max);
    }
  }
  expect_shapes_eq(a.inputs, b.inputs);
  expect_shapes_eq(a.outputs, b.outputs);
  EXPECT_EQ(a.layer_tactics, b.layer_tactics);
  if (with_blobs) EXPECT_EQ(a.blobs, b.blobs);
  EXPECT_GT(b.weights_bytes, 0u);
}

// ---- helpers for failure tests ----------------------------------------------------------------------------------
const std::string kLabel = "model.engine";

// The message of the kilnrt::Error that loading `bytes` throws ("" when it loads).
std::string load_error(const std::vector<uint8_t>& bytes) {
  try {
    deserialize_engine(bytes.data(), bytes.size(), kLabel);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidEngine) << e.message();
    EXPECT_EQ(e.where(), kLabel) << e.message();
    return e.message();
  }
  return "";
}

size_t find_bytes(const std::vector<uint8_t>& hay, const void* needle, size_t n) {
  const auto* p = static_cast<const uint8_t*>(needle);
  auto it = std::search(hay.begin(), hay.end(), p, p + n);
  return it == hay.end() ? std::string::npos : static_cast<size_t>(it - hay.begin());
}
size_t find_string(const std::vector<uint8_t>& hay, const std::string& s) {
  return find_bytes(hay, s.data(), s.size());
}

void put_u32(std::vector<uint8_t>& b, size_t pos, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[pos + i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(std::vector<uint8_t>& b, size_t pos, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[pos + i] = static_cast<uint8_t>(v >> (8 * i));
}

class EngineFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = make_graph();
    meta_ = make_metadata();
    bytes_ = serialize_engine(graph_, meta_);
  }
  ir::Graph graph_;
  EngineMetadata meta_;
  std::vector<uint8_t> bytes_;
};

// ---- round trip -------------------------------------------------------------------------------------------------
TEST_F(EngineFileTest, RoundTripKeepsEverything) {
  LoadedEngine e = deserialize_engine(bytes_.data(), bytes_.size(), kLabel);
  expect_graph_eq(graph_, e.graph);
  expect_metadata_eq(meta_, e.meta, /*with_blobs=*/true);
  // Deterministic: writing the loaded engine again gives the same bytes.
  EXPECT_EQ(serialize_engine(e.graph, e.meta), bytes_);
}

TEST_F(EngineFileTest, HeaderOnlyReadsMetadata) {
  const EngineMetadata m = read_engine_header(bytes_.data(), bytes_.size(), kLabel);
  expect_metadata_eq(meta_, m, /*with_blobs=*/false);
  EXPECT_TRUE(m.blobs.empty());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes_.data()), 8), "KILNRTEN");
}

TEST_F(EngineFileTest, WeightDataIsAlignedForUpload) {
  const float first = 1000.f;
  const size_t pos = find_bytes(bytes_, &first, sizeof first);
  ASSERT_NE(pos, std::string::npos);
  EXPECT_EQ(pos % kWeightAlignment, 0u);
}

TEST(EngineFile, EmptyGraphRoundTrips) {
  ir::Graph g;
  EngineMetadata m;
  m.target = "cpu";
  const auto bytes = serialize_engine(g, m);
  LoadedEngine e = deserialize_engine(bytes.data(), bytes.size(), "<memory>");
  EXPECT_TRUE(e.graph.nodes.empty());
  EXPECT_EQ(e.meta.target, "cpu");
}

TEST(EngineFile, SerializerRejectsInconsistentGraphs) {
  ir::Graph g = make_graph();
  g.nodes[0].inputs.push_back("never_defined");
  try {
    serialize_engine(g, make_metadata());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(e.message().find("never_defined"), std::string::npos) << e.message();
  }
  auto graph_attr = [](std::shared_ptr<ir::Graph> body) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kGraph;
    a.g = std::move(body);
    return a;
  };
  auto body = std::make_shared<ir::Graph>();
  for (int i = 0; i < 20; ++i) {
    auto outer = std::make_shared<ir::Graph>();
    ir::Node n;
    n.name = "nest" + std::to_string(i);
    n.op_type = "Loop";
    n.attrs["body"] = graph_attr(body);
    outer->nodes.push_back(n);
    body = outer;
  }
  ir::Graph deep = make_graph();
  deep.nodes[0].attrs["body"] = graph_attr(body);
  EXPECT_THROW(serialize_engine(deep, make_metadata()), Error);
}

// An engine whose I/O lists no dim names for a rank-2 shape with a dynamic dim (the reader accepts an empty list):
// loading gives one "" (unnamed) per dim, and describe() prints the dynamic dim as "?".
TEST(EngineFile, EmptyDimNameListReadsAsUnnamedDims) {
  ir::Graph g;
  g.name = "g";
  g.opsets[""] = 17;
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.types["x"] = ir::TensorType{DType::kFloat32, true, {ir::Dim::symbol("n"), 2}, std::nullopt};
  g.types["y"] = g.types["x"];
  ir::Node n;
  n.name = "add";
  n.op_type = "Add";
  n.inputs = {"x", "b"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  g.constants["b"] = float_tensor({2}, 1.f);
  EngineMetadata m;
  m.target = "cpu";
  m.profiles = {{{"x", {1, 2}, {2, 2}, {4, 2}}}};
  m.inputs = {{"x", DType::kFloat32, {-1, 2}, {}}};
  m.outputs = {{"y", DType::kFloat32, {-1, 2}, {}}};
  const std::vector<uint8_t> bytes = serialize_engine(g, m);
  const EngineMetadata h = read_engine_header(bytes.data(), bytes.size(), kLabel);
  EXPECT_EQ(h.inputs[0].dim_names, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(h.outputs[0].dim_names, (std::vector<std::string>{"", ""}));
  std::shared_ptr<Engine> e = Engine::from_bytes(bytes.data(), bytes.size(), kLabel);
  EXPECT_EQ(e->inputs()[0].dim_names, (std::vector<std::string>{"", ""}));
  const std::string d = e->describe();
  EXPECT_NE(d.find("x: float32[?x2]"), std::string::npos) << d;
  EXPECT_NE(d.find("y: float32[?x2]"), std::string::npos) << d;
}

// ---- the acceptance failures ---------------------------------------------------------------------------------------
TEST_F(EngineFileTest, TruncatedFilesNameTheSizes) {
  for (size_t len : {size_t(64), size_t(65), size_t(200), bytes_.size() / 2, bytes_.size() - 1}) {
    std::vector<uint8_t> cut(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_EQ(load_error(cut), "file is " + std::to_string(len) + " bytes but header says " +
                                   std::to_string(bytes_.size()) + ": truncated");
  }
  for (size_t len : {size_t(0), size_t(8), size_t(63)}) {
    std::vector<uint8_t> cut(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_NE(load_error(cut).find("smaller than the 64-byte engine header"), std::string::npos);
  }
  std::vector<uint8_t> longer = bytes_;
  longer.push_back(0);
  EXPECT_NE(load_error(longer).find("trailing bytes"), std::string::npos);
}

TEST_F(EngineFileTest, FlippedWeightByteIsACheckSumMismatch) {
  const float first = 1000.f;
  const size_t pos = find_bytes(bytes_, &first, sizeof first);
  ASSERT_NE(pos, std::string::npos);
  std::vector<uint8_t> bad = bytes_;
  bad[pos + 2] ^= 0x10;
  EXPECT_EQ(load_error(bad).rfind("checksum mismatch: file is damaged", 0), 0u) << load_error(bad);
  // The header and metadata are intact, so a quick inspect still works.
  EXPECT_EQ(read_engine_header(bad.data(), bad.size(), kLabel).target, "sm_90");
}

TEST_F(EngineFileTest, FlippedHeaderByteIsACheckSumMismatch) {
  for (size_t pos = 16; pos < kEngineHeaderSize; ++pos) {
    std::vector<uint8_t> bad = bytes_;
    bad[pos] ^= 0x04;
    EXPECT_EQ(load_error(bad).rfind("checksum mismatch: file is damaged", 0), 0u) << "byte " << pos;
  }
}

TEST_F(EngineFileTest, WrongMagicIsNotAnEngine) {
  std::vector<uint8_t> bad = bytes_;
  std::memcpy(bad.data(), "\x08\x07\x12\x07pyto", 8);  // what an ONNX file starts with
  EXPECT_EQ(load_error(bad).rfind("not a kilnrt engine file (magic '\\x08\\x07\\x12\\x07pyto'", 0), 0u)
      << load_error(bad);
  std::vector<uint8_t> text(100, 'a');
  EXPECT_EQ(load_error(text).rfind("not a kilnrt engine file", 0), 0u);
}

TEST_F(EngineFileTest, NewerFormatVersionSaysWhatToDo) {
  std::vector<uint8_t> bad = bytes_;
  put_u32(bad, 8, 7);
  const std::string expected = "engine format version 7 is newer than this kilnrt supports (" +
                               std::to_string(kEngineFormatVersion) + "): rebuild the engine or upgrade kilnrt";
  EXPECT_EQ(load_error(bad), expected);
  reseal_engine_checksum(bad);
  EXPECT_EQ(load_error(bad), expected);
  try {
    read_engine_header(bad.data(), bad.size(), kLabel);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), expected);
  }
}

// ---- inconsistencies behind a valid checksum ------------------------------------------------------------------------
TEST_F(EngineFileTest, ResealedInconsistenciesAreNamed) {
  const std::string node = "unique_matmul_node_name";
  const size_t node_pos = find_string(bytes_, node);
  ASSERT_NE(node_pos, std::string::npos);
  {  // string length past the end
    std::vector<uint8_t> bad = bytes_;
    put_u32(bad, node_pos - 4, 0x7fffff00u);
    reseal_engine_checksum(bad);
    EXPECT_NE(load_error(bad).find("runs past the end"), std::string::npos) << load_error(bad);
  }
  // Weight record: name, dtype i32, rank u64, dims, nbytes u64, offset u64. The name's last occurrence is the record.
  const std::string w = "unique_weight_name";
  size_t rec = std::string::npos;
  for (size_t p = find_string(bytes_, w); p != std::string::npos;) {
    rec = p;
    auto it = std::search(bytes_.begin() + static_cast<std::ptrdiff_t>(p + 1), bytes_.end(), w.begin(), w.end());
    p = it == bytes_.end() ? std::string::npos : static_cast<size_t>(it - bytes_.begin());
  }
  ASSERT_NE(rec, std::string::npos);
  const size_t dtype_pos = rec + w.size(), nbytes_pos = dtype_pos + 4 + 8 + 16, offset_pos = nbytes_pos + 8;
  ASSERT_EQ(bytes_[dtype_pos], 1);  // float32
  {
    std::vector<uint8_t> bad = bytes_;
    put_u32(bad, dtype_pos, 14);  // complex64: not a kilnrt dtype
    reseal_engine_checksum(bad);
    EXPECT_NE(load_error(bad).find("unknown dtype 14"), std::string::npos) << load_error(bad);
  }
  {
    std::vector<uint8_t> bad = bytes_;
    put_u64(bad, nbytes_pos, 81);
    reseal_engine_checksum(bad);
    EXPECT_NE(load_error(bad).find("does not match its dtype and shape"), std::string::npos) << load_error(bad);
  }
  {
    std::vector<uint8_t> bad = bytes_;
    put_u64(bad, offset_pos, uint64_t(1) << 40);
    reseal_engine_checksum(bad);
    EXPECT_NE(load_error(bad).find("outside the weights section"), std::string::npos) << load_error(bad);
  }
  {  // absurd dim count: rank of the weight
    std::vector<uint8_t> bad = bytes_;
    put_u64(bad, dtype_pos + 4, uint64_t(1) << 60);
    reseal_engine_checksum(bad);
    EXPECT_NE(load_error(bad).find("exceeds the limit"), std::string::npos) << load_error(bad);
  }
  {  // absurd element count: the opset count right after the producer string
    const std::string producer = "pytorch 2.11";
    const size_t pos = find_string(bytes_, producer);
    ASSERT_NE(pos, std::string::npos);
    std::vector<uint8_t> bad = bytes_;
    put_u64(bad, pos + producer.size(), uint64_t(1) << 61);
    reseal_engine_checksum(bad);
    EXPECT_NE(load_error(bad).find("opset count 2305843009213693952 is absurd"), std::string::npos) << load_error(bad);
  }
  {  // absurd section offset
    std::vector<uint8_t> bad = bytes_;
    put_u64(bad, kEngineHeaderSize + 8, uint64_t(1) << 62);
    reseal_engine_checksum(bad);
    EXPECT_NE(load_error(bad).find("lies outside the file"), std::string::npos) << load_error(bad);
  }
}

// ---- mutation sweeps
// -------------------------------------------------------------------------------------------------- A smaller engine
// keeps the sweeps quick.
std::vector<uint8_t> small_engine() {
  ir::Graph g;
  g.name = "g";
  g.opsets[""] = 17;
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.types["x"] = ir::TensorType{DType::kFloat32, true, {ir::Dim::symbol("n"), 2}, std::nullopt};
  ir::Node n;
  n.name = "add";
  n.op_type = "Add";
  n.inputs = {"x", "b"};
  n.outputs = {"y"};
  n.attrs["f"] = attr_float(1.f);
  n.attrs["t"] = attr_tensor(Tensor::from_vector<int64_t>({3}, DType::kInt64, {1}));
  ir::Attribute sub;
  sub.kind = ir::Attribute::Kind::kGraph;
  sub.g = std::make_shared<ir::Graph>(make_subgraph());
  n.attrs["g"] = sub;
  g.nodes.push_back(n);
  g.constants["b"] = float_tensor({2}, 1.f);
  EngineMetadata m;
  m.target = "cpu";
  m.profiles = {{{"x", {1, 2}, {2, 2}, {4, 2}}}};
  m.inputs = {{"x", DType::kFloat32, {-1, 2}, {"n", ""}}};
  m.outputs = {{"y", DType::kFloat32, {-1, 2}, {}}};
  m.blobs["b"] = {1, 2, 3};
  return serialize_engine(g, m);
}

// Loads `bytes`; returns true if it loaded, false on kilnrt::Error; any other exception fails the test.
bool loads(const std::vector<uint8_t>& bytes, const std::string& what) {
  try {
    deserialize_engine(bytes.data(), bytes.size(), kLabel);
    read_engine_header(bytes.data(), bytes.size(), kLabel);
    return true;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidEngine) << what << ": " << e.message();
    return false;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": non-kilnrt exception " << e.what();
  } catch (...) {
    ADD_FAILURE() << what << ": unknown exception";
  }
  return false;
}

TEST(EngineFileMutation, EveryFlippedByteIsRejected) {
  const auto good = small_engine();
  ASSERT_TRUE(loads(good, "original"));
  for (size_t pos = 0; pos < good.size(); ++pos) {
    std::vector<uint8_t> bad = good;
    bad[pos] ^= 0x5a;
    EXPECT_FALSE(loads(bad, "flip at " + std::to_string(pos))) << "flip at " << pos << " was not detected";
  }
}

TEST(EngineFileMutation, EveryTruncationIsRejected) {
  const auto good = small_engine();
  for (size_t len = 0; len < good.size(); ++len) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_FALSE(loads(cut, "truncated to " + std::to_string(len)));
  }
}

// With checksums recomputed, mutations reach the parser: it may accept (e.g. a changed float) or reject, but only
// ever with kilnrt::Error.
TEST(EngineFileMutation, ResealedMutationsNeverCrash) {
  const auto good = small_engine();
  int accepted = 0, rejected = 0;
  for (size_t pos = 0; pos < good.size(); ++pos)
    for (uint8_t x : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
      std::vector<uint8_t> bad = good;
      bad[pos] ^= x;
      reseal_engine_checksum(bad);
      (loads(bad, "resealed flip " + std::to_string(x) + " at " + std::to_string(pos)) ? accepted : rejected)++;
    }
  // Both outcomes occur: flips in float data or names load, flips in counts, offsets and tags are caught.
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
  std::cout << "[ resealed flips of a " << good.size() << "-byte engine: " << accepted << " loaded, " << rejected
            << " rejected ]\n";
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<uint8_t> bad = good;
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < edits; ++k) bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    if (round % 3 == 0) {  // truncate, keeping the header's file size consistent
      bad.resize(kEngineHeaderSize + rng() % (bad.size() - kEngineHeaderSize));
      put_u64(bad, 16, bad.size());
    }
    reseal_engine_checksum(bad);
    loads(bad, "random mutation round " + std::to_string(round));
  }
}

}  // namespace
}  // namespace kilnrt::engine
