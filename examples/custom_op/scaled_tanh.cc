// C++ custom-op example: registers "my.domain:ScaledTanh" (y = alpha * tanh(x)) with a CPU reference and a CUDA
// implementation (CUDA C compiled with NVRTC through kilnrt::cuda::Kernel), then builds and runs a model using it
// on the CPU, and on the GPU when one is usable, checking both against the formula.
//
//   python examples/custom_op/scaled_tanh.py --dir /tmp/st     # writes /tmp/st/scaled_tanh_only.onnx (alpha 1.5)
//   ./scaled_tanh_example /tmp/st/scaled_tanh_only.onnx 1.5
//
// Build: see CMakeLists.txt next to this file (find_package(kilnrt)), or
//   g++ -std=c++17 scaled_tanh.cc -I<repo>/include -L<build> -lkilnrt -Wl,-rpath,<build>
#include <kilnrt/custom_op.h>
#include <kilnrt/doctor.h>
#include <kilnrt/kilnrt.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

const char* kCudaSource = R"(
extern "C" __global__ void scaled_tanh(const float* x, float* y, long long n, float alpha) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * tanhf(x[i]);
})";

void register_scaled_tanh() {
  kilnrt::CustomOp op;
  op.domain = "my.domain";
  op.name = "ScaledTanh";
  op.dtypes = {kilnrt::DType::kFloat32};
  op.doc = "alpha * tanh(x)";
  // No shape function: the output is shaped and typed like input 0.
  op.cpu = [](kilnrt::CustomCpuContext& c) {
    const kilnrt::Tensor& x = *c.inputs.at(0);
    if (x.dtype() != kilnrt::DType::kFloat32)
      throw kilnrt::Error(kilnrt::ErrorCode::kUnsupported, "ScaledTanh takes float32", c.node.name());
    const float alpha = c.node.attr_float("alpha", 1.f);
    kilnrt::Tensor y = kilnrt::Tensor::empty(x.dtype(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = alpha * std::tanh(x.data<float>()[i]);
    c.outputs[0] = y;
  };
  // CUDA: the elementwise convention (256 threads per block), alpha passed as the kernel's float argument.
  kilnrt::NvrtcCustomKernel k = kilnrt::nvrtc_custom_kernel(kCudaSource, "scaled_tanh", nullptr, {{"alpha", 1.f}});
  op.cuda = k.cuda;
  op.cuda_prepare = k.prepare;
  kilnrt::register_custom_op(op);
}

double run_and_check(const std::string& model, const std::string& device, float alpha) {
  kilnrt::BuildOptions opt;
  opt.device = device;
  opt.profiles = {{{"x", {1, 8}, {4, 8}, {16, 8}}}};
  std::vector<uint8_t> bytes = kilnrt::build_engine(model, opt);
  auto engine = kilnrt::Engine::from_bytes(bytes.data(), bytes.size(), "scaled_tanh_" + device + ".engine");
  double worst = 0;
  for (int64_t batch : {1, 4, 16, 4}) {
    kilnrt::Tensor x = kilnrt::Tensor::empty(kilnrt::DType::kFloat32, {batch, 8});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.37f * static_cast<float>(i + batch));
    kilnrt::Tensor y = engine->run({{"x", x}}).at("y");
    for (int64_t i = 0; i < x.numel(); ++i)
      worst = std::max(worst, std::fabs(static_cast<double>(y.data<float>()[i]) -
                                        alpha * std::tanh(static_cast<double>(x.data<float>()[i]))));
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s scaled_tanh_only.onnx [alpha]\n", argv[0]);
    return 2;
  }
  const float alpha = argc > 2 ? std::strtof(argv[2], nullptr) : 1.5f;
  try {
    register_scaled_tanh();
    bool ok = true;
    std::string why;
    for (const std::string device : {"cpu", "cuda"}) {
      if (device == "cuda" && !kilnrt::cuda_available(&why)) {
        std::printf("cuda: skipped (%s)\n", why.c_str());
        continue;
      }
      const double err = run_and_check(argv[1], device, alpha);
      const bool good = err <= 1e-5;
      ok &= good;
      std::printf("%s: max abs error %.3g %s\n", device.c_str(), err, good ? "ok" : "TOO LARGE");
    }
    return ok ? 0 : 1;
  } catch (const kilnrt::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
