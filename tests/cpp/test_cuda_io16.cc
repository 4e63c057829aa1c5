// 16-bit inputs and outputs (BuildOptions::io16): an fp16 / bf16 CUDA engine built with io16 reports its
// float32 model I/O in the 16-bit type, reads and writes it in place (no float32 staging: less activation memory)
// and computes what the engine without io16 computes from the same 16-bit values; a mismatched dtype is a clear
// error; io16 without a 16-bit CUDA engine is refused naming the option. GPU tests skip with a message without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cuda_backend_test_util.h"
#include "engine_features_model.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/doctor.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/engine.h"

using namespace kilnrt;
using namespace kilnrt::enginetest;
namespace kc = kilnrt::cuda;

namespace {

// A wide input and a narrow hidden layer: the float32 staging of x (live with its 16-bit copy at the conversion) is
// the plain engine's peak, so that io16's smaller activation memory shows whatever the planner overlaps (with 64 /
// 256 / 32 both engines peaked at the hidden layer: 73728 bytes each, H100, 2026-11-23).
constexpr int64_t kIn = 1024, kHidden = 32, kOut = 32;

std::string model_file() {
  return write_model(testing::TempDir() + "/kilnrt_io16_mlp.onnx", mlp_model(kIn, kHidden, kOut, {"y"}));
}

std::shared_ptr<Engine> build(const BuildOptions& o) {
  const std::vector<uint8_t> bytes = build_engine(model_file(), o);
  return Engine::from_bytes(bytes.data(), bytes.size());
}

BuildOptions options(bool io16, bool bf16 = false) {
  BuildOptions o;
  o.device = "cuda";
  o.fp16 = !bf16;
  o.bf16 = bf16;
  o.io16 = io16;
  o.profiles = {{InputProfile{"x", {1, kIn}, {16, kIn}, {64, kIn}}}};
  return o;
}

uint16_t to16(float v, bool bf16) { return bf16 ? float_to_bfloat16(v) : float_to_half(v); }
float from16(uint16_t v, bool bf16) { return bf16 ? bfloat16_to_float(v) : half_to_float(v); }

// x rounded to the 16-bit type (as a float32 tensor and as the 16-bit tensor).
std::pair<Tensor, Tensor> input_pair(int64_t batch, bool bf16) {
  Tensor x = random_input(batch, kIn, 9);
  Tensor x16 = Tensor::empty(bf16 ? DType::kBFloat16 : DType::kFloat16, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    x16.data<uint16_t>()[i] = to16(x.data<float>()[i], bf16);
    x.data<float>()[i] = from16(x16.data<uint16_t>()[i], bf16);
  }
  return {x, x16};
}

Tensor widen(const Tensor& t16, bool bf16) {
  Tensor t = Tensor::empty(DType::kFloat32, t16.shape());
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = from16(t16.data<uint16_t>()[i], bf16);
  return t;
}

}  // namespace

TEST(Io16, RefusedWithoutA16BitCudaEngine) {  // host only: a CPU build
  BuildOptions o;
  o.io16 = true;
  expect_error([&] { build_engine(model_file(), o); }, ErrorCode::kInvalidArgument, "io16");
}

TEST(CudaIo16, RefusedWithoutFp16OrBf16) {
  KILNRT_SKIP_WITHOUT_GPU();
  BuildOptions o = options(true);
  o.fp16 = false;
  expect_error([&] { build_engine(model_file(), o); }, ErrorCode::kInvalidArgument, "fp16 or bf16");
}

TEST(CudaIo16, SixteenBitIoComputesWhatTheEngineComputes) {
  KILNRT_SKIP_WITHOUT_GPU();
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "fp16");
    const DType d16 = bf16 ? DType::kBFloat16 : DType::kFloat16;
    auto plain = build(options(false, bf16));
    auto io = build(options(true, bf16));
    ASSERT_EQ(io->inputs().size(), 1u);
    EXPECT_EQ(io->inputs()[0].dtype, d16);
    EXPECT_EQ(io->outputs()[0].dtype, d16);
    EXPECT_EQ(plain->inputs()[0].dtype, DType::kFloat32);
    EXPECT_LT(io->activation_memory_size(), plain->activation_memory_size()) << "no float32 staging";
    for (int64_t batch : {1, 7, 64}) {
      SCOPED_TRACE("batch " + std::to_string(batch));
      const auto [x, x16] = input_pair(batch, bf16);
      const Tensor want = plain->create_context()->run({{"x", x}}).at("y");
      // Host run: 16-bit tensors in and out.
      auto ctx = io->create_context();
      const Tensor y16 = ctx->run({{"x", x16}}).at("y");
      ASSERT_EQ(y16.dtype(), d16);
      const Tensor y = widen(y16, bf16);
      EXPECT_LT(relative_error(y, want), bf16 ? 1e-2 : 2e-3);
      // Device run: the caller's 16-bit buffers, read and written in place.
      kc::Stream s(0);
      kc::DeviceBuffer dx(0, size_t(x16.nbytes())), dy(0, size_t(batch * kOut * 2));
      dx.copy_from_host_async(x16.raw(), x16.nbytes(), s.get());
      ctx->enqueue({{"x", DeviceTensor{dx.data(), d16, {batch, kIn}, 0}}},
                   {{"y", DeviceTensor{dy.data(), d16, {batch, kOut}, 0}}}, s.get());
      Tensor got16 = Tensor::empty(d16, {batch, kOut});
      dy.copy_to_host_async(got16.raw(), got16.nbytes(), s.get());
      s.synchronize();
      EXPECT_EQ(std::memcmp(got16.raw(), y16.raw(), y16.nbytes()), 0) << "enqueue and run agree bit for bit";
      expect_error(
          [&] {
            ctx->enqueue({{"x", DeviceTensor{dx.data(), DType::kFloat32, {batch, kIn}, 0}}},
                         {{"y", DeviceTensor{dy.data(), d16, {batch, kOut}, 0}}}, s.get());
          },
          ErrorCode::kInvalidArgument, "expected dtype");
    }
  }
}
