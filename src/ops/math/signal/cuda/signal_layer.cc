// CUDA layers for the signal ops: DFT (dft_length a host value) and STFT (frame_step / frame_length
// host values, the window on the device), float32 (16-bit engines run them as float32 islands). Kernels:
// dft_stft.cu, irfft.cu. DFT's axis input (opset 20) is read on the host too. The window functions and MelWeightMatrix
// take only scalars: with constant (or shape-computed) inputs they run on the host at prepare (the plan's host
// placement); with device inputs a host-source layer reads them at a sync point (ops/cuda/data_dependent_layer.h).
#include "ops/cuda/cuda_layer.h"
#include "ops/math/signal/cuda/signal_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace m = kilnrt::cuda::kernels;

int64_t host_scalar(const LayerTensor& t, const std::string& node, const char* what) {
  KILNRT_CHECK(t.host != nullptr, kUnsupported, node, what << " must be a constant or computed from shapes");
  const std::vector<int64_t> v = ops::tensor_to_int64s(*t.host);
  KILNRT_CHECK(v.size() == 1, kInvalidArgument, node, what << " must be a scalar, got " << v.size() << " values");
  return v[0];
}

class DftLayer final : public CudaLayer {
 public:
  DftLayer(const ir::Node& n, int64_t opset)
      : node_(n),
        name_(n.describe()),
        opset_(opset),
        axis_(n.attr_int("axis", 1)),
        inverse_(n.attr_int("inverse", 0) != 0),
        onesided_(n.attr_int("onesided", 0) != 0) {}
  std::string tactic() const override { return "kernel:dft-direct"; }
  std::vector<int> host_inputs() const override { return {1, 2}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& s = l.inputs[0].shape;
    KILNRT_CHECK(s.size() >= 2 && (s.back() == 1 || s.back() == 2), kInvalidArgument, name_,
                 "input must end in a dimension of 1 (real) or 2 (complex)");
    const int64_t r = static_cast<int64_t>(s.size());
    int64_t axis = 0;
    if (opset_ >= 20) {
      // Opset 20: the axis input (default -2) counts over all r dims, the last (real / complex) one excluded: the
      // same rule as the CPU reference (src/ops/math/signal/signal.cc, dft_axis).
      const bool has_axis = l.inputs.size() > 2 && l.inputs[2].present;
      axis = has_axis ? host_scalar(l.inputs[2], name_, "axis") : -2;
      KILNRT_CHECK(axis >= -r && axis <= r - 2, kInvalidArgument, name_,
                   "axis " << axis << " is out of range [" << -r << ", " << r - 2 << "] for an input of rank " << r);
      if (axis < 0) axis += r;
      KILNRT_CHECK(axis <= r - 2, kInvalidArgument, name_, "axis " << axis << " is the real / complex dimension");
    } else {
      axis = ops::normalize_axis(axis_, r - 1, node_);
    }
    const int64_t len = s[static_cast<size_t>(axis)];
    const bool has_n = l.inputs.size() > 1 && l.inputs[1].present;
    const bool irfft = inverse_ && onesided_;  // the inverse real FFT: irfft.cu
    const int64_t n = has_n ? host_scalar(l.inputs[1], name_, "dft_length") : irfft ? 2 * (len - 1) : len;
    KILNRT_CHECK(n > 0, kInvalidArgument, name_, "dft_length must be positive, got " << n);
    const int64_t out_len = onesided_ ? n / 2 + 1 : n;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(axis) + 1; d + 1 < s.size(); ++d) inner *= s[d];
    if (irfft) {
      check_launch(kilnrt::cuda::kernels::irfft_f32(static_cast<const float*>(l.inputs[0].data),
                                                    static_cast<float*>(l.outputs[0].data), outer, len, inner,
                                                    static_cast<int>(s.back()), n, l.stream),
                   name_, "irfft");
      return;
    }
    check_launch(m::dft_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data), outer,
                            len, inner, static_cast<int>(s.back()), n, out_len, inverse_, l.stream),
                 name_, "dft");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t opset_, axis_;
  bool inverse_, onesided_;
};

class StftLayer final : public CudaLayer {
 public:
  explicit StftLayer(const ir::Node& n) : name_(n.describe()), onesided_(n.attr_int("onesided", 1) != 0) {}
  std::string tactic() const override { return "kernel:stft-direct"; }
  std::vector<int> host_inputs() const override { return {1, 3}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& s = l.inputs[0].shape;
    KILNRT_CHECK(s.size() == 3 && (s[2] == 1 || s[2] == 2), kInvalidArgument, name_,
                 "signal must be [batch, length, 1 or 2]");
    const int64_t step = host_scalar(l.inputs[1], name_, "frame_step");
    const bool has_window = l.inputs.size() > 2 && l.inputs[2].present;
    const bool has_len = l.inputs.size() > 3 && l.inputs[3].present;
    KILNRT_CHECK(has_window || has_len, kInvalidArgument, name_, "needs a window or a frame_length");
    const int64_t flen = has_len ? host_scalar(l.inputs[3], name_, "frame_length") : l.inputs[2].numel();
    KILNRT_CHECK(flen > 0 && step > 0 && flen <= s[1], kInvalidArgument, name_,
                 "frame_length " << flen << " / frame_step " << step << " do not fit a signal of " << s[1]);
    KILNRT_CHECK(!has_window || l.inputs[2].numel() == flen, kInvalidArgument, name_,
                 "window has " << l.inputs[2].numel() << " values for frames of " << flen);
    const int64_t frames = 1 + (s[1] - flen) / step, bins = onesided_ ? flen / 2 + 1 : flen;
    check_launch(m::stft_f32(static_cast<const float*>(l.inputs[0].data),
                             has_window ? static_cast<const float*>(l.inputs[2].data) : nullptr,
                             static_cast<float*>(l.outputs[0].data), s[0], s[1], static_cast<int>(s[2]), step, flen,
                             frames, bins, l.stream),
                 name_, "stft");
  }

 private:
  std::string name_;
  bool onesided_;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"DFT"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      return value_dtype(g, n.inputs.at(0)) == DType::kFloat32 ? "" : "the CUDA DFT takes float32";
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<DftLayer>(a.node, a.opset); });
KILNRT_REGISTER_CUDA_LAYER(
    {"STFT"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (value_dtype(g, n.inputs.at(0)) != DType::kFloat32) return "the CUDA STFT takes float32";
      if (n.inputs.size() > 2 && !n.inputs[2].empty() && value_dtype(g, n.inputs[2]) != DType::kFloat32)
        return "the window must be float32";
      return "";
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<StftLayer>(a.node); });

}  // namespace
}  // namespace kilnrt::backends::cuda
