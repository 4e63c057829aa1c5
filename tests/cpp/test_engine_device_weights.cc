// Engine format v2's stored device weights (engine/device_weights.h, docs/engine-format.md): the image round-trips
// byte for byte, device-only constants carry no host data, old / inconsistent files fail with named errors, mutated
// files only ever end in kilnrt::Error. Then, on a GPU (skipped with a message without one): fp16 and fp32 CUDA
// engines of a real model store their weights in device form and load to the same results as the CPU engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/engine_file.h"
#include "engine/file_bytes.h"
#include "kilnrt/doctor.h"
#include "kilnrt/engine.h"
#include "kilnrt/error.h"

namespace kilnrt::engine {
namespace {

const std::string kLabel = "dw.engine";

Tensor pattern_f32(const Shape& s, float base) {
  Tensor t = Tensor::empty(DType::kFloat32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = base + 0.25f * static_cast<float>(i % 97);
  return t;
}
Tensor as_f16(const Tensor& t) {
  Tensor h = Tensor::empty(DType::kFloat16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) h.data<uint16_t>()[i] = float_to_half(t.data<float>()[i]);
  return h;
}

// y = MatMul(x, W) + b: W big enough (128 KiB) to be device-only, b small.
struct Model {
  ir::Graph g;
  EngineMetadata meta;
  DeviceWeightImage image;
  Model(const std::string& target = "sm_90") {
    g.name = "mlp";
    g.opsets[""] = 17;
    g.inputs = {"x"};
    g.outputs = {"y"};
    ir::TensorType& xt = g.types["x"];
    xt.dtype = DType::kFloat32;
    xt.has_shape = true;
    xt.shape = {ir::Dim::symbol("n"), ir::Dim(128)};
    ir::Node mm;
    mm.name = "mm";
    mm.op_type = "MatMul";
    mm.inputs = {"x", "W"};
    mm.outputs = {"h"};
    ir::Node add;
    add.name = "add";
    add.op_type = "Add";
    add.inputs = {"h", "b"};
    add.outputs = {"y"};
    g.nodes = {mm, add};
    g.constants["W"] = pattern_f32({128, 256}, 3000.f);
    g.constants["b"] = pattern_f32({256}, -7.f);
    meta.target = target;
    meta.inputs = {{"x", DType::kFloat32, {-1, 128}, {"n", ""}}};
    meta.outputs = {{"y", DType::kFloat32, {-1, 256}, {"n", ""}}};
    DeviceWeightImageBuilder b;
    b.add("W", as_f16(g.constants["W"]));
    b.add("b", as_f16(g.constants["b"]));
    b.add("W#fp16", as_f16(g.constants["W"]));  // same bytes as "W": stored once
    b.add("mm/nhwc_W", as_f16(pattern_f32({256, 128}, 11.f)));
    image = b.finish();
    image.device_only = {"W"};
  }
  std::vector<uint8_t> bytes() const { return serialize_engine(g, meta, &image); }
};

std::string load_error(const std::vector<uint8_t>& bytes) {
  try {
    deserialize_engine(bytes.data(), bytes.size(), kLabel);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidEngine) << e.message();
    return e.message();
  }
  return "";
}

size_t find_bytes(const std::vector<uint8_t>& hay, const void* needle, size_t n) {
  const auto* p = static_cast<const uint8_t*>(needle);
  auto it = std::search(hay.begin(), hay.end(), p, p + n);
  return it == hay.end() ? std::string::npos : static_cast<size_t>(it - hay.begin());
}
void put_u32(std::vector<uint8_t>& b, size_t pos, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[pos + i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(std::vector<uint8_t>& b, size_t pos, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[pos + i] = static_cast<uint8_t>(v >> (8 * i));
}

TEST(DeviceWeightImage, BuilderAlignsAndSharesIdenticalBuffers) {
  const Model m;
  ASSERT_EQ(m.image.entries.size(), 4u);
  const DeviceWeight* w = m.image.find("W");
  const DeviceWeight* w16 = m.image.find("W#fp16");
  const DeviceWeight* b = m.image.find("b");
  const DeviceWeight* nhwc = m.image.find("mm/nhwc_W");
  ASSERT_TRUE(w && w16 && b && nhwc);
  EXPECT_EQ(m.image.find("nope"), nullptr);
  EXPECT_EQ(w16->offset, w->offset);  // shared
  EXPECT_EQ(w->nbytes, 128u * 256u * 2u);
  EXPECT_EQ(b->offset, w->nbytes);  // 65536: already a multiple of 256
  EXPECT_EQ(nhwc->offset % kDeviceWeightAlignment, 0u);
  EXPECT_GE(nhwc->offset, b->offset + b->nbytes);
  EXPECT_EQ(m.image.size, nhwc->offset + nhwc->nbytes);
  const Tensor h = as_f16(m.g.constants.at("W"));
  EXPECT_EQ(std::memcmp(m.image.data + w->offset, h.raw(), h.nbytes()), 0);
}

TEST(DeviceWeightImage, RoundTripsAndDropsHostDataOfDeviceOnlyConstants) {
  const Model m;
  const std::vector<uint8_t> bytes = m.bytes();
  // W's float32 data is not in the file (device-only); b's is; W's fp16 form is.
  const float w0 = m.g.constants.at("W").data<float>()[1], b0 = m.g.constants.at("b").data<float>()[1];
  EXPECT_EQ(find_bytes(bytes, &w0, 4), std::string::npos);
  EXPECT_NE(find_bytes(bytes, &b0, 4), std::string::npos);
  const Tensor w16 = as_f16(m.g.constants.at("W"));
  const size_t img_pos = find_bytes(bytes, w16.raw(), 64);
  ASSERT_NE(img_pos, std::string::npos);
  EXPECT_EQ(img_pos % kDeviceWeightAlignment, 0u);  // uploadable straight from the file's bytes

  const LoadedEngine e = deserialize_engine(bytes.data(), bytes.size(), kLabel);
  EXPECT_EQ(e.device_weights.device_only, std::set<std::string>{"W"});
  ASSERT_EQ(e.device_weights.entries.size(), m.image.entries.size());
  EXPECT_EQ(e.device_weights.size, m.image.size);
  for (size_t i = 0; i < m.image.entries.size(); ++i) {
    const DeviceWeight& a = m.image.entries[i];
    const DeviceWeight& b = e.device_weights.entries[i];
    EXPECT_EQ(a.key, b.key);
    EXPECT_EQ(a.dtype, b.dtype);
    EXPECT_EQ(a.shape, b.shape);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.nbytes, b.nbytes);
    EXPECT_EQ(std::memcmp(m.image.data + a.offset, e.device_weights.data + b.offset, a.nbytes), 0) << a.key;
  }
  EXPECT_EQ(e.device_weights.data, bytes.data() + img_pos);  // a view, not a copy
  // The device-only constant keeps dtype and shape; host constants keep their values.
  EXPECT_EQ(e.graph.constants.at("W").dtype(), DType::kFloat32);
  EXPECT_EQ(e.graph.constants.at("W").shape(), (Shape{128, 256}));
  const Tensor& b = e.graph.constants.at("b");
  EXPECT_EQ(std::memcmp(b.raw(), m.g.constants.at("b").raw(), b.nbytes()), 0);
  // Deterministic: writing the loaded engine again gives the same bytes.
  EXPECT_EQ(serialize_engine(e.graph, e.meta, &e.device_weights), bytes);
  // 128 KiB of float32 W replaced by 64 KiB of fp16 (+ the small rest).
  const std::vector<uint8_t> plain = serialize_engine(m.g, m.meta);
  EXPECT_LT(bytes.size() + 40000, plain.size() + m.image.size);
}

TEST(DeviceWeightImage, EngineWithoutImageHasEmptySection) {
  const Model m("cpu");
  const std::vector<uint8_t> bytes = serialize_engine(m.g, m.meta);
  const LoadedEngine e = deserialize_engine(bytes.data(), bytes.size(), kLabel);
  EXPECT_TRUE(e.device_weights.empty());
  EXPECT_EQ(e.device_weights.size, 0u);
  EXPECT_TRUE(e.device_weights.device_only.empty());
  EXPECT_EQ(std::memcmp(e.graph.constants.at("W").raw(), m.g.constants.at("W").raw(), 128 * 256 * 4), 0);
}

TEST(DeviceWeightImage, OlderFormatVersionSaysRebuild) {
  std::vector<uint8_t> bad = Model().bytes();
  put_u32(bad, 8, 1);
  reseal_engine_checksum(bad);
  const std::string expected = "engine format version 1 is older than this kilnrt supports (" +
                               std::to_string(kEngineFormatVersion) + "): rebuild the engine with this kilnrt";
  EXPECT_EQ(load_error(bad), expected);
  try {
    read_engine_header(bad.data(), bad.size(), kLabel);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), expected);
  }
}

TEST(DeviceWeightImage, InconsistenciesAreNamed) {
  {  // a CPU engine cannot have GPU-only weights
    Model m("cpu");
    EXPECT_NE(load_error(m.bytes()).find("weight 'W' is stored for the GPU only, but the engine targets cpu"),
              std::string::npos)
        << load_error(m.bytes());
  }
  {  // the writer refuses a device-only constant without an image entry
    Model m;
    m.image.device_only.insert("b2");
    try {
      m.bytes();
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInternal);
      EXPECT_NE(e.message().find("'b2'"), std::string::npos) << e.message();
    }
  }
  const std::vector<uint8_t> good = Model().bytes();
  // Image entry "W": key, then dtype i32, rank u64, 2 dims, nbytes u64, offset u64.
  const std::string key = std::string("\x01\x00\x00\x00W\x0a\x00\x00\x00", 9);
  const size_t rec = find_bytes(good, key.data(), key.size());  // dtype 10 (float16) after the name: the entry
  ASSERT_NE(rec, std::string::npos);
  const size_t dtype_pos = rec + 5, offset_pos = dtype_pos + 4 + 8 + 16 + 8;
  {  // renamed entry: the device-only weight has no entry any more
    std::vector<uint8_t> bad = good;
    bad[rec + 4] = 'V';
    reseal_engine_checksum(bad);
    EXPECT_NE(load_error(bad).find("device-only weight 'W' has no entry of its shape"), std::string::npos)
        << load_error(bad);
  }
  {  // entry outside the image
    std::vector<uint8_t> bad = good;
    put_u64(bad, offset_pos, uint64_t(1) << 20);
    reseal_engine_checksum(bad);
    EXPECT_NE(load_error(bad).find("misaligned or outside the image"), std::string::npos) << load_error(bad);
  }
  {  // misaligned entry
    std::vector<uint8_t> bad = good;
    put_u64(bad, offset_pos, 8);
    reseal_engine_checksum(bad);
    EXPECT_NE(load_error(bad).find("misaligned or outside the image"), std::string::npos) << load_error(bad);
  }
}

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
  }
  return false;
}

// A small image keeps the sweeps quick: W of 16 KiB + an 8-element derived buffer, W forced device-only.
std::vector<uint8_t> small_engine() {
  Model m;
  m.g.constants["W"] = pattern_f32({128, 32}, 1.f);
  m.g.constants["b"] = pattern_f32({32}, 2.f);
  m.meta.outputs = {{"y", DType::kFloat32, {-1, 32}, {"n", ""}}};
  DeviceWeightImageBuilder b;
  b.add("W", as_f16(m.g.constants["W"]));
  b.add("mm/x", as_f16(pattern_f32({8}, 5.f)));
  m.image = b.finish();
  m.image.device_only = {"W"};
  return m.bytes();
}

TEST(DeviceWeightImageMutation, FlipsTruncationsAndResealedEditsEndInErrors) {
  const std::vector<uint8_t> good = small_engine();
  ASSERT_TRUE(loads(good, "original"));
  for (size_t pos = 0; pos < good.size(); pos += 3) {
    std::vector<uint8_t> bad = good;
    bad[pos] ^= 0x5a;
    EXPECT_FALSE(loads(bad, "flip at " + std::to_string(pos))) << "flip at " << pos << " was not detected";
  }
  for (size_t len = 0; len < good.size(); len += 7) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_FALSE(loads(cut, "truncated to " + std::to_string(len)));
  }
  int accepted = 0, rejected = 0;
  for (size_t pos = 0; pos < good.size(); ++pos) {
    std::vector<uint8_t> bad = good;
    bad[pos] ^= 0x81;
    reseal_engine_checksum(bad);
    (loads(bad, "resealed flip at " + std::to_string(pos)) ? accepted : rejected)++;
  }
  EXPECT_GT(accepted, 0);  // flips inside the image data or names load
  EXPECT_GT(rejected, 0);
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::vector<uint8_t> bad = good;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 6); k < n; ++k)
      bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    reseal_engine_checksum(bad);
    loads(bad, "random mutation round " + std::to_string(round));
  }
}

// ---- Engine::load maps the file (engine/file_bytes.h) ------------------------------------------------------------
TEST(EngineLoadMapped, MappedFileLoadsLikeItsBytesAndErrorsStayNamed) {
  const Model m("cpu");
  const std::vector<uint8_t> bytes = serialize_engine(m.g, m.meta);
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/kilnrt_mapped.engine", empty = dir + "/kilnrt_empty.engine";
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    std::ofstream e(empty, std::ios::binary);
  }
  {
    const FileBytes fb(path);
    EXPECT_TRUE(fb.mapped());
    ASSERT_EQ(fb.size(), bytes.size());
    EXPECT_EQ(std::memcmp(fb.data(), bytes.data(), bytes.size()), 0);
  }
  Tensor x = pattern_f32({3, 128}, -0.5f);
  auto from_file = Engine::load(path)->run({{"x", x}});
  auto from_mem = Engine::from_bytes(bytes.data(), bytes.size(), "<memory>")->run({{"x", x}});
  const Tensor& a = from_file.at("y");
  const Tensor& b = from_mem.at("y");
  ASSERT_EQ(a.shape(), (Shape{3, 256}));
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
  {
    const FileBytes fb(empty);  // nothing to map: read, 0 bytes
    EXPECT_FALSE(fb.mapped());
    EXPECT_EQ(fb.size(), 0u);
  }
  try {
    Engine::load(empty);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidEngine);
    EXPECT_NE(e.message().find("file is 0 bytes"), std::string::npos) << e.message();
  }
  try {
    FileBytes missing(dir + "/kilnrt_no_such.engine");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(e.where().find("kilnrt_no_such.engine"), std::string::npos) << e.where();
  }
  std::remove(path.c_str());
  std::remove(empty.c_str());
}

// ---- on the GPU ---------------------------------------------------------------------------------------------------
#ifndef KILNRT_SOURCE_DIR
#define KILNRT_SOURCE_DIR "."
#endif

std::vector<float> run_engine(const std::vector<uint8_t>& bytes, const Tensor& x, int device) {
  auto engine = Engine::from_bytes(bytes.data(), bytes.size(), "<memory>", device);
  const auto out = engine->run({{engine->inputs()[0].name, x}});
  const Tensor& y = out.begin()->second;
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

TEST(DeviceWeightsGpu, CudaEnginesStoreDeviceFormAndMatchTheCpuEngine) {
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << "no usable CUDA GPU: " << why;
  const std::string onnx = std::string(KILNRT_SOURCE_DIR) + "/tests/fixtures/dynamo/mobilenet_v3_small.onnx";
  BuildOptions cpu_opts;
  cpu_opts.device = "cpu";
  cpu_opts.profiles = {{{"x", {1, 3, 224, 224}, {2, 3, 224, 224}, {2, 3, 224, 224}}}};
  const std::vector<uint8_t> cpu_bytes = build_engine(onnx, cpu_opts);
  Tensor x = Tensor::empty(DType::kFloat32, {2, 3, 224, 224});
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng);
  const std::vector<float> ref = run_engine(cpu_bytes, x, 0);
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16" : "fp32");
    BuildOptions o = cpu_opts;
    o.device = "cuda";
    o.fp16 = fp16;
    const std::vector<uint8_t> bytes = build_engine(onnx, o);
    const LoadedEngine e = deserialize_engine(bytes.data(), bytes.size(), "gpu");
    ASSERT_FALSE(e.device_weights.empty());
    ASSERT_FALSE(e.device_weights.device_only.empty());
    for (const std::string& name : e.device_weights.device_only) {
      const DeviceWeight* w = e.device_weights.find(name);
      ASSERT_TRUE(w) << name;
      EXPECT_EQ(w->dtype, fp16 ? DType::kFloat16 : DType::kFloat32) << name;
    }
    // fp16: the file holds the 16-bit form, not float32 + a copy (the CPU engine holds float32 weights).
    if (fp16) EXPECT_LT(bytes.size(), cpu_bytes.size() * 7 / 10) << bytes.size() << " vs " << cpu_bytes.size();
    const std::vector<float> got = run_engine(bytes, x, 0);
    ASSERT_EQ(got.size(), ref.size());
    double dot = 0, na = 0, nb = 0, max_err = 0, scale = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      dot += double(ref[i]) * got[i];
      na += double(ref[i]) * ref[i];
      nb += double(got[i]) * got[i];
      max_err = std::max(max_err, std::abs(double(ref[i]) - got[i]));
      scale = std::max(scale, std::abs(double(ref[i])));
    }
    const double cosine = dot / std::sqrt(na * nb);
    EXPECT_GT(cosine, fp16 ? 0.999 : 0.99999) << "max err " << max_err << " of " << scale;
    EXPECT_LT(max_err, (fp16 ? 0.05 : 1e-3) * scale);
  }
}

}  // namespace
}  // namespace kilnrt::engine
