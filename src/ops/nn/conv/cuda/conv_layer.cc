// The CUDA Conv layer, also serving com.kilnrt:FusedConv (ops/nn/fused_conv/cuda): Conv on cuDNN (legacy convolution
// API, FMA math — no TF32 —, algorithm from cudnnGetConvolutionForwardAlgorithm_v7 per input shape, cached) with an own
// direct kernel as fallback (no cuDNN, asymmetric padding, or KILNRT_CUDA_CONV=direct). com.kilnrt:FusedConv
// (passes/fuse_conv_epilogue) is the same layer followed by one epilogue kernel (bias + residual + activation in a
// single pass over the output).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include "ops/nn/conv/cuda/conv_layer.h"
#include "ops/nn/conv/cuda/conv_tactics.h"
#include "ops/nn/conv/cuda/conv_small_c.h"
#include "ops/cuda/cuda_layer.h"
#include "cuda/cuda_libs.h"
#include "ops/nn/conv/cuda/conv_kernels.h"
#include "ops/nn/conv/cuda/conv2d_direct_kernels.h"
#include "ops/nn/conv/cuda/nhwc_depthwise.h"
#include "ops/nn/conv/cuda/pointwise_conv.h"
#include "ops/cuda/float32_layer_inputs.h"
#include "ops/cuda/lt_gemm.h"
#include "core/logging.h"
#include "cuda/driver_api.h"
#include "ops/nn/fused_conv/fused_conv.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

// ---- Conv ------------------------------------------------------------------------------------------------------
struct ConvGeometry {
  k::Conv2d p;
  int pad_end_h = 0, pad_end_w = 0;
};

class ConvLayer final : public CudaLayer {
 public:
  explicit ConvLayer(const LayerCreateArgs& a)
      : node_(a.node),
        name_(a.node.describe()),
        precision_(node_precision(a.node)),
        tf32_(precision_ == Precision::kTf32),
        p16_(precision_ == Precision::kFp16 || precision_ == Precision::kBf16),
        fused_(a.node.op_type == ops::nn::kFusedConvOp) {
    if (fused_) epilogue_ = ops::nn::read_fused_epilogue(a.node);
    if (fused_) ops::nn::check_input_activation_reader(a.node, a.graph);  // X may be activated in place (enqueue)
    const char* env = std::getenv("KILNRT_CUDA_CONV");
    std::string why;
    use_cudnn_ = !(env && std::string(env) == "direct") && cudnn_usable(&why);
    const char* nhwc = std::getenv("KILNRT_CUDA_NHWC");  // NHWC storage unless =0 (layout_plan.h decides)
    if (use_cudnn_ && p16_ && !(nhwc && std::string(nhwc) == "0")) upload_nhwc_weights(a);
    small_c_ = SmallCConv::create(a, use_cudnn_);  // C <= 4 (stems, patchify): conv_small_c.h
    // Tactics chosen by timing at build (conv_tactics.h): stored with the node, or timed now under the builder's scope.
    if (use_cudnn_ && a.node.has_attr(kConvTacticAttr))
      choices_ = parse_tactic_attr(a.node.attr_string(kConvTacticAttr));
    else if (use_cudnn_ && !small_c_ && TacticTimingScope::current())
      tune(a, *TacticTimingScope::current());
  }
  ~ConvLayer() override { clear_cache(); }
  std::string tactic() const override {
    const std::string epi = (fused_ ? "+kernel:conv-epilogue(" + ops::nn::describe_epilogue(epilogue_) + ")" : "") +
                            (choices_.empty() ? "" : " [timed " + format_tactic_attr(choices_) + "]");
    if (small_c_) return small_c_->tactic() + epi;
    if (!use_cudnn_) return "kernel:conv2d-direct" + epi;
    if (p16_ && dw_w_)  // NHWC: the tiled kernel applies the epilogue itself (nhwc_depthwise.h)
      return std::string("cudnn:conv-fwd-") + precision_name(precision_) + "-acc32|nhwc:kernel:depthwise" +
             (dw_tile_ ? "-tile" : "") + epi;
    if (p16_) return std::string("cudnn:conv-fwd-") + precision_name(precision_) + "-acc32" + epi;
    return (tf32_ ? "cudnn:conv-fwd-tf32" : "cudnn:conv-fwd-fp32") + epi;
  }
  bool supports_16bit() const override { return true; }
  bool supports_nhwc() const override { return nhwc_w_ != nullptr; }

  void enqueue(LayerLaunch& l) override {
    const ConvGeometry geo = geometry(l);
    const bool nhwc = l.inputs[0].nhwc;
    KILNRT_CHECK(nhwc == l.outputs[0].nhwc && (!nhwc || nhwc_w_), kInternal, name_,
                 "NHWC convolution with input " << (nhwc ? "NHWC" : "NCHW") << " and output "
                                                << (l.outputs[0].nhwc ? "NHWC" : "NCHW"));
    const void* bias = l.inputs.size() > 2 && l.inputs[2].present ? l.inputs[2].data : nullptr;
    if (fused_) check_epilogue_operands(l);
    if (epilogue_.in_act != ops::nn::FusedActivation::kNone && !dw_tile_run(l, geo)) {
      // FusedConv's input activation (passes/move_input_activation) outside the tiled depthwise kernel: in place on
      // X, which only this node reads (check_input_activation_reader), then the convolution as usual.
      check_launch(k::conv_epilogue(float_code(l.inputs[0].dtype), const_cast<void*>(l.inputs[0].data), nullptr,
                                    nullptr, l.inputs[0].numel(), 1, 1, static_cast<int>(epilogue_.in_act),
                                    epilogue_.in_a, epilogue_.in_b, l.stream),
                   name_, "conv_epilogue(input activation)");
    }
    const bool symmetric = geo.pad_end_h == geo.p.ph && geo.pad_end_w == geo.p.pw;
    bool small_c_done = false;  // few input channels (conv_small_c.h): own path first
    if (small_c_ && small_c_->run(l, geo.p, symmetric, &bias, &small_c_done)) {
      if (!small_c_done) run_epilogue(l, geo, bias);
      return;
    }
    if (nhwc && dw_w_ && geo.p.groups == geo.p.c && geo.p.k == geo.p.c && l.inputs[0].dtype != DType::kFloat32) {
      // Own NHWC depthwise kernels: the tiled one with bias / residual / activation fused (nhwc_depthwise.h)
      // where it applies, else nhwc_depthwise.cu, then the epilogue pass.
      k::DepthwiseEpilogue e;
      e.bias = bias;
      e.z = l.inputs.size() > 3 && l.inputs[3].present ? l.inputs[3].data : nullptr;
      e.act = static_cast<int>(epilogue_.act);
      e.a = epilogue_.a;
      e.b = epilogue_.b;
      e.in_act = static_cast<int>(epilogue_.in_act), e.in_a = epilogue_.in_a, e.in_b = epilogue_.in_b;
      if (dw_tile_run(l, geo)) {
        check_launch(k::depthwise_conv2d_nhwc_tile(float_code(l.inputs[0].dtype), l.inputs[0].data, dw_w_,
                                                   l.outputs[0].data, geo.p, e, l.stream),
                     name_, "depthwise_conv2d_nhwc_tile");
        return;
      }
      check_launch(k::depthwise_conv2d_nhwc(float_code(l.inputs[0].dtype), l.inputs[0].data, dw_w_, l.outputs[0].data,
                                            geo.p, l.stream),
                   name_, "depthwise_conv2d_nhwc");
      run_epilogue(l, geo, bias);
      return;
    }
    if (use_cudnn_ && symmetric) {
      Cached* c = cached(l, geo, nhwc);
      if (c->ok && c->choice.path == ConvPath::kCublasLt) {
        conv_gemm(l, geo, c->choice.algo, bias);
        return;
      }
      if (c->ok && c->choice.path == ConvPath::kPwKernel) {
        pointwise_gemm(l, geo, c->choice.algo, bias);
        return;
      }
      if (c->ok) {
        const CudnnApi& api = cudnn_api();
        cudnnHandle_t h = l.libs->get_cudnn();
        KILNRT_CUDNN_CHECK(api, api.cudnnSetStream(h, reinterpret_cast<cudaStream_t>(l.stream)), name_);
        const float one = 1.f, zero = 0.f;
        if (c->choice.path == ConvPath::kCudnnFused) {  // conv + bias + z + relu/identity in one call
          const bool has_z = l.inputs.size() > 3 && l.inputs[3].present;
          const float alpha2 = has_z ? 1.f : 0.f;
          KILNRT_CUDNN_CHECK(
              api,
              api.cudnnConvolutionBiasActivationForward(
                  h, &one, c->x, l.inputs[0].data, c->w, nhwc ? nhwc_w_ : l.inputs[1].data, c->conv, c->algo,
                  l.workspace, c->workspace, &alpha2, c->y, has_z ? l.inputs[3].data : l.outputs[0].data, c->bias, bias,
                  c->act, c->y, l.outputs[0].data),
              name_);
          return;
        }
        KILNRT_CUDNN_CHECK(
            api,
            api.cudnnConvolutionForward(h, &one, c->x, l.inputs[0].data, c->w, nhwc ? nhwc_w_ : l.inputs[1].data,
                                        c->conv, c->algo, l.workspace, c->workspace, &zero, c->y, l.outputs[0].data),
            name_);
        if (fused_ || nhwc) {  // NHWC: the bias through the epilogue kernel too (channel = innermost index)
          run_epilogue(l, geo, bias);
        } else if (bias) {
          KILNRT_CUDNN_CHECK(api, api.cudnnAddTensor(h, &one, c->bias, bias, &one, c->y, l.outputs[0].data), name_);
        }
        return;
      }
    }
    KILNRT_CHECK(!nhwc, kUnsupported, name_,
                 "no cuDNN algorithm for this NHWC convolution (the direct kernels are NCHW): build without "
                 "KILNRT_CUDA_NHWC=1");
    if (l.inputs[0].dtype != DType::kFloat32) {
      direct_16(l, geo, bias);
    } else {
      check_launch(k::conv2d_direct_f32(static_cast<const float*>(l.inputs[0].data),
                                        static_cast<const float*>(l.inputs[1].data), static_cast<const float*>(bias),
                                        static_cast<float*>(l.outputs[0].data), geo.p, l.stream),
                   name_, "conv2d_direct");
    }
    if (fused_) run_epilogue(l, geo, nullptr);  // the direct kernels added the bias already
  }

 private:
  struct Cached {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    cudnnActivationDescriptor_t act = nullptr;  // cudnn-fused tactic only
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    size_t workspace = 0;
    bool ok = false;
    ConvChoice choice;  // kHeuristic: algo from cudnnGetConvolutionForwardAlgorithm_v7
    cudnnConvolutionFwdAlgo_t heur_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;  // the heuristic's, kept
    size_t heur_workspace = 0;
    bool heur_ok = false;
    bool forced_valid = false;  // tuning: `forced` is applied
    ConvChoice forced;
  };

  void clear_cache() {
    if (!kilnrt::cuda::cleanup_allowed()) return;
    try {
      const CudnnApi& api = cudnn_api();
      for (auto& [shape, c] : cache_) {
        if (c.x) api.cudnnDestroyTensorDescriptor(c.x);
        if (c.y) api.cudnnDestroyTensorDescriptor(c.y);
        if (c.bias) api.cudnnDestroyTensorDescriptor(c.bias);
        if (c.w) api.cudnnDestroyFilterDescriptor(c.w);
        if (c.conv) api.cudnnDestroyConvolutionDescriptor(c.conv);
        if (c.act) api.cudnnDestroyActivationDescriptor(c.act);
      }
    } catch (...) {
    }
    cache_.clear();
  }

  // Build-time timing of the candidate tactics of each layout (conv_tactics.h); the winners go into the node's
  // kConvTacticAttr (the builder stores them) and choices_.
  void tune(const LayerCreateArgs& a, TacticTimingScope& scope) {
    ConvTuneInfo info;
    info.storage = !p16_ ? DType::kFloat32 : precision_ == Precision::kBf16 ? DType::kBFloat16 : DType::kFloat16;
    info.nhwc = nhwc_w_ != nullptr;
    info.nhwc_own_kernel = dw_w_ != nullptr;
    info.fused = fused_;
    info.act = fused_ ? static_cast<int>(epilogue_.act) : 0;
    info.epilogue = fused_ ? ops::nn::describe_epilogue(epilogue_) : "";
    for (ConvTuneRequest& req : conv_tune_requests(a.node, a.graph, info)) {
      const ConvChoice best = tune_conv_request(
          scope, req,
          [this](const ConvChoice& c, LayerLaunch& l) {
            forced_ = c;
            forcing_ = true;
            enqueue(l);
          },
          name_);
      if (best.path != ConvPath::kHeuristic) choices_[req.label] = best;
    }
    forcing_ = false;
    clear_cache();  // descriptors of the tuning launches
    if (!choices_.empty()) scope.record(a.node.name, format_tactic_attr(choices_));
  }

  // Applies the timed choice for this launch's layout (or, while tuning, the forced one) to `c`. A stored choice
  // that no longer applies (other cuDNN, workspace) falls back to the heuristic with a warning; a forced one throws.
  void apply_choice(Cached& c, const LayerLaunch& l, const ConvGeometry& geo, bool nhwc) {
    ConvChoice want;
    if (forcing_) {
      want = forced_;
    } else {
      auto it = choices_.find(layout_label(nhwc, l.inputs[0].dtype));
      if (it == choices_.end()) return;
      want = it->second;
    }
    std::string why;
    const k::Conv2d& p = geo.p;
    if (want.path == ConvPath::kHeuristic) {  // tuning: the heuristic's algorithm as a candidate
      c.algo = c.heur_algo;
      c.workspace = c.heur_workspace;
      c.ok = c.heur_ok;
      c.choice = want;
      return;
    }
    if (want.path == ConvPath::kCublasLt || want.path == ConvPath::kPwKernel) {
      // NCHW only where the bytes are NHWC's too (H = W = 1: squeeze-excite convs), behind conv_lt_nchw_enabled().
      const bool layout_ok = nhwc || (p.h * p.w == 1 && p.oh * p.ow == 1 && conv_lt_nchw_enabled());
      if (!layout_ok || l.inputs[0].dtype == DType::kFloat32 || p.kh != 1 || p.kw != 1 || p.sh != 1 || p.sw != 1 ||
          p.ph != 0 || p.pw != 0 || p.groups != 1)
        why = "not a 16-bit NHWC 1x1 stride-1 convolution";
      if (want.path == ConvPath::kPwKernel && (p.c % 8 != 0 || p.k % 8 != 0))
        why = "pw-mma needs channel counts that are multiples of 8";
    } else if (want.path != ConvPath::kHeuristic) {
      const auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(want.algo);
      size_t ws = 0;
      const CudnnApi& api = cudnn_api();
      if (api.cudnnGetConvolutionForwardWorkspaceSize(l.libs->get_cudnn(), c.x, c.w, c.conv, c.y, algo, &ws) !=
              CUDNN_STATUS_SUCCESS ||
          ws > l.workspace_bytes)
        why = "cuDNN algorithm " + std::to_string(want.algo) + " unavailable";
      const bool relu = fused_ && epilogue_.act == ops::nn::FusedActivation::kRelu;
      const bool none = !fused_ || epilogue_.act == ops::nn::FusedActivation::kNone;
      const bool has_bias = l.inputs.size() > 2 && l.inputs[2].present;
      if (want.path == ConvPath::kCudnnFused && (!has_bias || !(relu || none)))
        why = "cudnn-fused needs a bias and activation none / relu";
      if (why.empty()) {
        if (want.path == ConvPath::kCudnnFused && !c.act) {
          KILNRT_CUDNN_CHECK(api, api.cudnnCreateActivationDescriptor(&c.act), name_);
          KILNRT_CUDNN_CHECK(
              api,
              api.cudnnSetActivationDescriptor(c.act, relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                               CUDNN_NOT_PROPAGATE_NAN, 0.0),
              name_);
        }
        c.algo = algo;
        c.workspace = ws;
      }
    }
    if (!why.empty()) {
      KILNRT_CHECK(!forcing_, kUnsupported, name_, "tactic " << choice_to_string(want) << ": " << why);
      KILNRT_LOG(kWarning, name_ << ": timed tactic " << choice_to_string(want) << " not usable (" << why
                                 << "), using cuDNN's heuristic");
      note_tactic_fallback();
      return;
    }
    c.choice = want;
    c.ok = true;
  }

  // 1x1 stride-1 convolution on 16-bit NHWC storage as one cuBLASLt GEMM Y[NHW, K] = X[NHW, C] W[K, C]^T with the
  // bias / ReLU epilogue and the residual as C (beta = 1); other activations in one pass afterwards.
  void conv_gemm(LayerLaunch& l, const ConvGeometry& geo, int algo_index, const void* bias) {
    GemmArgs g;
    g.trans_b = true;
    g.m = geo.p.n * geo.p.oh * geo.p.ow;
    g.n = geo.p.k;
    g.k = geo.p.c;
    g.a = l.inputs[0].data;
    g.b = l.inputs[0].nhwc ? nhwc_w_ : l.inputs[1].data;  // 1x1: K,C,1,1 and K,1,1,C are the same bytes
    g.c = l.outputs[0].data;
    g.ab_type = g.c_type = l.inputs[0].dtype == DType::kFloat16 ? CUDA_R_16F : CUDA_R_16BF;
    g.workspace = l.workspace;
    g.workspace_bytes = l.workspace_bytes;
    g.bias = bias;
    const bool has_z = l.inputs.size() > 3 && l.inputs[3].present;
    g.c_in = has_z ? l.inputs[3].data : nullptr;
    g.beta = has_z ? 1.f : 0.f;
    g.relu = fused_ && epilogue_.act == ops::nn::FusedActivation::kRelu;
    g.algo_index = algo_index;
    lt_gemm(g, l, name_);
    if (fused_ && !g.relu && epilogue_.act != ops::nn::FusedActivation::kNone) {
      const LayerOutput& y = l.outputs[0];
      check_launch(k::conv_epilogue(float_code(y.dtype), y.data, nullptr, nullptr, y.numel(), 1, geo.p.k,
                                    static_cast<int>(epilogue_.act), epilogue_.a, epilogue_.b, l.stream),
                   name_, "conv_epilogue");
    }
  }

  // The same GEMM on kilnrt's own kernel (pointwise_conv.h) with bias, residual and activation fused; where
  // its alignment rules do not hold (views into other buffers), cuBLASLt's first algorithm instead.
  void pointwise_gemm(LayerLaunch& l, const ConvGeometry& geo, int variant, const void* bias) {
    k::PointwiseConvArgs g;
    g.dt = l.inputs[0].dtype == DType::kFloat16 ? 1 : 2;
    g.x = l.inputs[0].data;
    g.w = l.inputs[0].nhwc ? nhwc_w_ : l.inputs[1].data;  // 1x1: K,C,1,1 and K,1,1,C are the same bytes
    g.bias = bias;
    g.z = l.inputs.size() > 3 && l.inputs[3].present ? l.inputs[3].data : nullptr;
    g.y = l.outputs[0].data;
    g.m = geo.p.n * geo.p.oh * geo.p.ow;
    g.c = geo.p.c;
    g.n = geo.p.k;
    g.act = fused_ ? static_cast<int>(epilogue_.act) : 0;
    g.a = epilogue_.a;
    g.b = epilogue_.b;
    if (!k::pointwise_conv_applies(g)) {
      KILNRT_CHECK(!forcing_, kUnsupported, name_, "tactic pw-mma: operands not 16-byte aligned");
      conv_gemm(l, geo, 0, bias);
      return;
    }
    check_launch(k::pointwise_conv(g, variant, l.stream), name_, "pointwise_conv");
  }

  // True when this launch runs the tiled NHWC depthwise kernel (enqueue's first own-kernel branch).
  bool dw_tile_run(const LayerLaunch& l, const ConvGeometry& geo) const {
    const void* z = l.inputs.size() > 3 && l.inputs[3].present ? l.inputs[3].data : nullptr;
    return l.inputs[0].nhwc && dw_w_ && geo.p.groups == geo.p.c && geo.p.k == geo.p.c &&
           l.inputs[0].dtype != DType::kFloat32 &&
           k::depthwise_nhwc_tile_applies(l.inputs[0].data, dw_w_, l.outputs[0].data, z, geo.p);
  }

  // True when the tiled NHWC depthwise kernel takes this conv's kernel size, strides and dilations (for the tactic
  // string; the layer checks the whole geometry at run).
  static bool dw_tile_geometry(const ir::Node& n, int64_t c, int64_t r, int64_t s) {
    const std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>{1, 1});
    const std::vector<int64_t> dil = n.attr_ints("dilations", std::vector<int64_t>{1, 1});
    if (strides.size() != 2 || dil.size() != 2) return false;
    k::Conv2d p;
    p.n = p.h = p.w = p.oh = p.ow = 1;
    p.c = p.k = c;
    p.groups = static_cast<int>(c);
    p.kh = static_cast<int>(r), p.kw = static_cast<int>(s);
    p.sh = static_cast<int>(strides[0]), p.sw = static_cast<int>(strides[1]);
    p.dh = static_cast<int>(dil[0]), p.dw = static_cast<int>(dil[1]);
    return k::depthwise_nhwc_tile_enabled() && k::depthwise_nhwc_tile_geometry(p);
  }

  // KILNRT_CUDA_NHWC=1: a K,R,S,C copy of constant 2-D weights in the engine's 16-bit type, for cuDNN NHWC
  // convolutions. Left null (NCHW only) for what NHWC does not cover: non-constant or non-float32 weights, 1-D
  // convolutions, auto_pad SAME_* or asymmetric pads.
  void upload_nhwc_weights(const LayerCreateArgs& a) {
    const ir::Node& n = a.node;
    if (n.inputs.size() < 2 || !a.graph.is_constant(n.inputs[1])) return;
    const Tensor& w = a.graph.constants.at(n.inputs[1]);
    if (w.dtype() != DType::kFloat32 || w.rank() != 4) return;
    const std::string auto_pad = n.attr_string("auto_pad", std::string("NOTSET"));
    const std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(4, 0));
    if ((auto_pad != "NOTSET" && auto_pad != "VALID") || pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3])
      return;
    const int64_t kk = w.dim(0), cg = w.dim(1), r = w.dim(2), sdim = w.dim(3);
    const bool bf = precision_ == Precision::kBf16;
    const bool depthwise = cg == 1 && n.attr_int("group", 1) == kk && r > 0;
    if (depthwise) dw_tile_ = dw_tile_geometry(n, kk, r, sdim);
    if ((nhwc_w_ = a.weights.find(n.name + "/nhwc_W"))) {  // stored in the engine (format v2)
      if (depthwise) dw_w_ = a.weights.find(n.name + "/nhwc_dw_W");
      return;
    }
    if (!a.weights.has_host_data(n.inputs[1])) return;  // GPU-only weights without a stored NHWC copy: NCHW only
    Tensor out = Tensor::empty(bf ? DType::kBFloat16 : DType::kFloat16, w.shape());
    const float* src = w.data<float>();
    uint16_t* dst = out.data<uint16_t>();
    for (int64_t o = 0; o < kk; ++o)
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t y = 0; y < r; ++y)
          for (int64_t x = 0; x < sdim; ++x) {
            const float v = src[((o * cg + c) * r + y) * sdim + x];
            dst[((o * r + y) * sdim + x) * cg + c] = bf ? float_to_bfloat16(v) : float_to_half(v);
          }
    nhwc_w_ = a.weights.upload(n.name + "/nhwc_W", out);
    // Depthwise (group == C == K, one input channel per group): also [KH][KW][C] for the own NHWC kernel.
    if (depthwise) {
      Tensor dw = Tensor::empty(out.dtype(), {r, sdim, kk});
      uint16_t* d = dw.data<uint16_t>();
      for (int64_t o = 0; o < kk; ++o)
        for (int64_t t = 0; t < r * sdim; ++t) d[t * kk + o] = dst[o * r * sdim + t];
      dw_w_ = a.weights.upload(n.name + "/nhwc_dw_W", dw);
    }
  }

  // FusedConv: the residual (input 3) and bias have the output's storage dtype and the residual its shape.
  void check_epilogue_operands(const LayerLaunch& l) const {
    const LayerOutput& y = l.outputs[0];
    for (size_t i : {size_t(2), size_t(3)}) {
      if (i >= l.inputs.size() || !l.inputs[i].present) continue;
      KILNRT_CHECK(l.inputs[i].dtype == y.dtype, kUnsupported, name_,
                   (i == 2 ? "bias" : "residual") << " has storage dtype " << dtype_name(l.inputs[i].dtype)
                                                  << ", the output " << dtype_name(y.dtype));
    }
    if (l.inputs.size() > 3 && l.inputs[3].present)
      KILNRT_CHECK(l.inputs[3].shape == y.shape, kInvalidArgument, name_,
                   "residual of shape " << shape_to_string(l.inputs[3].shape) << " must have the output's shape "
                                        << shape_to_string(y.shape));
  }

  // One pass over the output: + bias[c] + residual, then the activation.
  void run_epilogue(LayerLaunch& l, const ConvGeometry& geo, const void* bias) {
    const void* z = l.inputs.size() > 3 && l.inputs[3].present ? l.inputs[3].data : nullptr;
    if (!bias && !z && epilogue_.act == ops::nn::FusedActivation::kNone) return;
    const LayerOutput& y = l.outputs[0];
    check_launch(k::conv_epilogue(float_code(y.dtype), y.data, bias, z, y.numel(),
                                  l.outputs[0].nhwc ? 1 : int64_t(geo.p.oh) * geo.p.ow, geo.p.k,
                                  static_cast<int>(epilogue_.act), epilogue_.a, epilogue_.b, l.stream),
                 name_, "conv_epilogue");
  }

  // 16-bit storage without cuDNN (or asymmetric padding): the direct float32 kernel on float32 copies in the
  // workspace. Slow fallback; an error when the copies do not fit.
  void direct_16(LayerLaunch& l, const ConvGeometry& geo, const void* bias) {
    const int bf = l.inputs[0].dtype == DType::kBFloat16 ? 1 : 0;
    auto al = [](size_t n) { return (n + 63) / 64 * 64; };
    const int64_t nx = l.inputs[0].numel(), nw = l.inputs[1].numel(), ny = l.outputs[0].numel();
    const int64_t nb = bias ? l.inputs[2].numel() : 0;
    const size_t need = (al(nx) + al(nw) + al(nb) + al(ny)) * sizeof(float);
    KILNRT_CHECK(need <= l.workspace_bytes, kUnsupported, name_,
                 "16-bit direct convolution (no cuDNN / asymmetric padding) larger than the workspace");
    float* x = static_cast<float*>(l.workspace);
    float* w = x + al(nx);
    float* b = w + al(nw);
    float* y = b + al(nb);
    check_launch(k::f16_to_32(l.inputs[0].data, x, nx, bf, l.stream), name_, "f16_to_32");
    check_launch(k::f16_to_32(l.inputs[1].data, w, nw, bf, l.stream), name_, "f16_to_32");
    if (bias) check_launch(k::f16_to_32(bias, b, nb, bf, l.stream), name_, "f16_to_32");
    check_launch(k::conv2d_direct_f32(x, w, bias ? b : nullptr, y, geo.p, l.stream), name_, "conv2d_direct");
    check_launch(k::f32_to_16(y, l.outputs[0].data, ny, bf, l.stream), name_, "f32_to_16");
  }

  ConvGeometry geometry(const LayerLaunch& l) const {
    const Shape& xs = l.inputs[0].shape;
    const Shape& ws = l.inputs[1].shape;
    const Shape& ys = l.outputs[0].shape;
    const bool one_d = xs.size() == 3;
    ConvGeometry g;
    k::Conv2d& p = g.p;
    p.n = xs[0];
    p.c = xs[1];
    p.h = one_d ? 1 : xs[2];
    p.w = xs.back();
    p.k = ws[0];
    p.oh = one_d ? 1 : ys[2];
    p.ow = ys.back();
    p.kh = one_d ? 1 : static_cast<int>(ws[2]);
    p.kw = static_cast<int>(ws.back());
    p.groups = static_cast<int>(node_.attr_int("group", 1));
    const size_t sd = xs.size() - 2;
    const auto strides = node_.attr_ints("strides", std::vector<int64_t>(sd, 1));
    const auto dil = node_.attr_ints("dilations", std::vector<int64_t>(sd, 1));
    std::vector<int64_t> pads = node_.attr_ints("pads", std::vector<int64_t>(2 * sd, 0));
    const std::string auto_pad = node_.attr_string("auto_pad", std::string("NOTSET"));
    const int64_t in_dims[2] = {p.h, p.w}, out_dims[2] = {p.oh, p.ow}, kdims[2] = {p.kh, p.kw};
    if (auto_pad == "VALID") pads.assign(2 * sd, 0);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      for (size_t d = 0; d < sd; ++d) {
        const int i = one_d ? 1 : static_cast<int>(d);
        const int64_t total =
            std::max<int64_t>(0, (out_dims[i] - 1) * strides[d] + (kdims[i] - 1) * dil[d] + 1 - in_dims[i]);
        pads[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pads[d + sd] = total - pads[d];
      }
    }
    if (one_d) {
      p.sw = static_cast<int>(strides[0]);
      p.dw = static_cast<int>(dil[0]);
      p.pw = static_cast<int>(pads[0]);
      g.pad_end_w = static_cast<int>(pads[1]);
      g.pad_end_h = 0;
    } else {
      p.sh = static_cast<int>(strides[0]);
      p.sw = static_cast<int>(strides[1]);
      p.dh = static_cast<int>(dil[0]);
      p.dw = static_cast<int>(dil[1]);
      p.ph = static_cast<int>(pads[0]);
      p.pw = static_cast<int>(pads[1]);
      g.pad_end_h = static_cast<int>(pads[2]);
      g.pad_end_w = static_cast<int>(pads[3]);
    }
    return g;
  }

  Cached* cached(LayerLaunch& l, const ConvGeometry& geo, bool nhwc) {
    std::lock_guard<std::mutex> lock(mu_);
    Shape key = l.inputs[0].shape;
    if (nhwc) key.push_back(-1);  // NHWC descriptors
    auto it = cache_.find(key);
    if (it != cache_.end() && forcing_ && !(it->second.forced_valid && it->second.forced == forced_)) {
      it->second.forced_valid = false;  // tuning: the next candidate on the same descriptors
      it->second.choice = ConvChoice{};
      apply_choice(it->second, l, geo, nhwc);
      it->second.forced = forced_;
      it->second.forced_valid = true;
    }
    if (it != cache_.end()) return &it->second;
    Cached& c = cache_[key];
    const CudnnApi& api = cudnn_api();
    cudnnHandle_t h = l.libs->get_cudnn();
    const k::Conv2d& p = geo.p;
    auto i32 = [](int64_t v) { return static_cast<int>(v); };
    const cudnnTensorFormat_t fmt = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    KILNRT_CUDNN_CHECK(api, api.cudnnCreateTensorDescriptor(&c.x), name_);
    KILNRT_CUDNN_CHECK(api, api.cudnnCreateTensorDescriptor(&c.y), name_);
    KILNRT_CUDNN_CHECK(api, api.cudnnCreateTensorDescriptor(&c.bias), name_);
    KILNRT_CUDNN_CHECK(api, api.cudnnCreateFilterDescriptor(&c.w), name_);
    KILNRT_CUDNN_CHECK(api, api.cudnnCreateConvolutionDescriptor(&c.conv), name_);
    // 16-bit storage (--fp16 / --bf16 engines): half / bfloat16 tensors with float32 compute, tensor cores allowed.
    const DType sd = l.inputs[0].dtype;
    const bool h16 = sd == DType::kFloat16 || sd == DType::kBFloat16;
    const cudnnDataType_t dt = sd == DType::kFloat16    ? CUDNN_DATA_HALF
                               : sd == DType::kBFloat16 ? CUDNN_DATA_BFLOAT16
                                                        : CUDNN_DATA_FLOAT;
    KILNRT_CUDNN_CHECK(api, api.cudnnSetTensor4dDescriptor(c.x, fmt, dt, i32(p.n), i32(p.c), i32(p.h), i32(p.w)),
                       name_);
    KILNRT_CUDNN_CHECK(api, api.cudnnSetTensor4dDescriptor(c.y, fmt, dt, i32(p.n), i32(p.k), i32(p.oh), i32(p.ow)),
                       name_);
    KILNRT_CUDNN_CHECK(api, api.cudnnSetTensor4dDescriptor(c.bias, CUDNN_TENSOR_NCHW, dt, 1, i32(p.k), 1, 1), name_);
    KILNRT_CUDNN_CHECK(api, api.cudnnSetFilter4dDescriptor(c.w, dt, fmt, i32(p.k), i32(p.c / p.groups), p.kh, p.kw),
                       name_);
    KILNRT_CUDNN_CHECK(api,
                       api.cudnnSetConvolution2dDescriptor(c.conv, p.ph, p.pw, p.sh, p.sw, p.dh, p.dw,
                                                           CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                       name_);
    KILNRT_CUDNN_CHECK(api, api.cudnnSetConvolutionGroupCount(c.conv, p.groups), name_);
    // Strict fp32: FMA math forbids TF32 tensor-core paths (DEFAULT_MATH would allow TF32 on Ampere and newer).
    // --tf32: DEFAULT_MATH lets cuDNN use TF32 tensor cores for float32 data.
    KILNRT_CUDNN_CHECK(api,
                       api.cudnnSetConvolutionMathType(c.conv, h16     ? CUDNN_TENSOR_OP_MATH
                                                               : tf32_ ? CUDNN_DEFAULT_MATH
                                                                       : CUDNN_FMA_MATH),
                       name_);
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    KILNRT_CUDNN_CHECK(api,
                       api.cudnnGetConvolutionForwardAlgorithm_v7(h, c.x, c.w, c.conv, c.y,
                                                                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
                       name_);
    for (int i = 0; i < returned && !c.ok; ++i) {
      const cudnnConvolutionFwdAlgo_t algo = perf[i].algo;
      // FFT variants trade accuracy for speed: excluded from strict fp32.
      if (perf[i].status != CUDNN_STATUS_SUCCESS || algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
          algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING || algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED)
        continue;
      size_t ws = 0;
      if (api.cudnnGetConvolutionForwardWorkspaceSize(h, c.x, c.w, c.conv, c.y, algo, &ws) != CUDNN_STATUS_SUCCESS)
        continue;
      if (ws > l.workspace_bytes) continue;
      c.algo = algo;
      c.workspace = ws;
      c.ok = true;
    }
    c.heur_algo = c.algo;
    c.heur_workspace = c.workspace;
    c.heur_ok = c.ok;
    apply_choice(c, l, geo, nhwc);
    if (forcing_) {
      c.forced = forced_;
      c.forced_valid = true;
    }
    return &c;
  }

  const ir::Node& node_;
  std::string name_;
  Precision precision_ = Precision::kFp32;
  bool tf32_ = false;
  bool p16_ = false;
  bool use_cudnn_ = false;
  const void* nhwc_w_ = nullptr;         // 16-bit weights in K,R,S,C order for NHWC convolutions (null: NCHW only)
  const void* dw_w_ = nullptr;           // depthwise only: 16-bit weights [R,S,K] for nhwc_depthwise.cu
  bool dw_tile_ = false;                 // ... and the tiled kernel takes its kernel size / strides (dw_tile_geometry)
  std::unique_ptr<SmallCConv> small_c_;  // few input channels: own path first (null: none)
  bool fused_ = false;
  ops::nn::FusedEpilogue epilogue_;
  std::mutex mu_;
  std::map<Shape, Cached> cache_;
  std::map<std::string, ConvChoice> choices_;  // layout_label() -> timed tactic (kConvTacticAttr)
  ConvChoice forced_;                          // the candidate being timed (tune())
  bool forcing_ = false;
};

}  // namespace

std::unique_ptr<CudaLayer> make_conv_layer(const LayerCreateArgs& a) { return std::make_unique<ConvLayer>(a); }

std::string conv_rank_supported(const ir::Node& n, const ir::Graph& g) {
  const ir::TensorType* t = g.type_of(n.inputs.at(0));
  if (t && t->has_shape && t->shape.size() != 4 && t->shape.size() != 3) return "only 1-D and 2-D convolutions";
  return "";
}

KILNRT_REGISTER_CUDA_LAYER(
    {"Conv"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (std::string why = conv_rank_supported(n, g); !why.empty()) return why;
      return float32_layer_inputs(n, g);
    },
    make_conv_layer);

}  // namespace kilnrt::backends::cuda
