// Small-input-channel convolutions (conv_small_c.h): weight preparation at load, the im2col GEMM path on
// cuBLASLt and the channel-pack path on cuDNN NHWC.
#include "ops/nn/conv/cuda/conv_small_c.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cuda/cuda_libs.h"
#include "ops/nn/conv/cuda/conv_small_c_kernels.h"
#include "core/env_switch.h"
#include "cuda/driver_api.h"
#include "ops/nn/fused_conv/fused_conv.h"

namespace kilnrt::backends::cuda {

namespace k = kilnrt::cuda::kernels;

namespace {

constexpr int64_t kMaxSmallC = 4;
constexpr size_t kLibReserve = size_t(4) << 20;  // workspace left to cuBLASLt / cuDNN after the staged operand

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

// The largest power of two (<= 256) dividing the address: cuBLASLt's minimum-alignment preference.
uint32_t alignment_of(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && (a % al) != 0) al /= 2;
  return al;
}

// Images per chunk: the most (balanced over the chunks) whose staged bytes fit `budget`; 0 if one does not.
int64_t chunk_images(int64_t n, size_t per_image, size_t budget) {
  if (per_image == 0) return n;
  const int64_t fit = static_cast<int64_t>(budget / per_image);
  if (fit < 1) return 0;
  if (fit >= n) return n;
  const int64_t chunks = (n + fit - 1) / fit;
  return (n + chunks - 1) / chunks;
}

template <class T, class D>
struct LtObj {  // RAII for one cuBLASLt descriptor
  T h = nullptr;
  D destroy;
  ~LtObj() {
    if (h) destroy(h);
  }
};

// One column-major cuBLASLt matmul D[m x n] = op(A) op(B) (+ bias[m]) with 16-bit A, B, D and float32 compute;
// A is stored (ta ? k x m : m x k) with leading dim lda, B (tb ? n x k : k x n); strided batches when batch > 1.
struct LtCall {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_d = 0;
  const void* bias = nullptr;
  bool relu = false;
  cudaDataType_t type = CUDA_R_16F;
};

void lt_matmul(const LtCall& c, LayerLaunch& l, void* ws, size_t ws_bytes, const std::string& name) {
  const CublasLtApi& api = cublaslt_api();
  cublasLtHandle_t handle = l.libs->get_cublaslt();
  using Desc = LtObj<cublasLtMatmulDesc_t, decltype(api.cublasLtMatmulDescDestroy)>;
  using Layout = LtObj<cublasLtMatrixLayout_t, decltype(api.cublasLtMatrixLayoutDestroy)>;
  using Pref = LtObj<cublasLtMatmulPreference_t, decltype(api.cublasLtMatmulPreferenceDestroy)>;
  Desc desc{nullptr, api.cublasLtMatmulDescDestroy};
  KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulDescCreate(&desc.h, CUBLAS_COMPUTE_32F, CUDA_R_32F), name);
  const cublasOperation_t opa = c.ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = c.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)),
                        name);
  KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)),
                        name);
  if (c.bias || c.relu) {
    const cublasLtEpilogue_t epi =
        c.bias ? (c.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS) : CUBLASLT_EPILOGUE_RELU;
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)),
                          name);
    if (c.bias)
      KILNRT_CUBLASLT_CHECK(
          api.cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias, sizeof(c.bias)), name);
  }
  auto make = [&](Layout& lay, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatrixLayoutCreate(&lay.h, c.type, uint64_t(rows), uint64_t(cols), ld), name);
    if (c.batch > 1) {
      const int32_t count = static_cast<int32_t>(c.batch);
      KILNRT_CUBLASLT_CHECK(
          api.cublasLtMatrixLayoutSetAttribute(lay.h, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)), name);
      KILNRT_CUBLASLT_CHECK(api.cublasLtMatrixLayoutSetAttribute(lay.h, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                                 &stride, sizeof(stride)),
                            name);
    }
  };
  Layout la{nullptr, api.cublasLtMatrixLayoutDestroy}, lb{nullptr, api.cublasLtMatrixLayoutDestroy},
      ld{nullptr, api.cublasLtMatrixLayoutDestroy};
  if (c.ta)
    make(la, c.k, c.m, c.lda, c.stride_a);
  else
    make(la, c.m, c.k, c.lda, c.stride_a);
  if (c.tb)
    make(lb, c.n, c.k, c.ldb, c.stride_b);
  else
    make(lb, c.k, c.n, c.ldb, c.stride_b);
  make(ld, c.m, c.n, c.ldd, c.stride_d);
  Pref pref{nullptr, api.cublasLtMatmulPreferenceDestroy};
  KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulPreferenceCreate(&pref.h), name);
  const uint64_t wsb = ws_bytes;
  KILNRT_CUBLASLT_CHECK(
      api.cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)),
      name);
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const void*> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, c.a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, c.b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, c.d},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, c.d}};
  for (const auto& [attr, ptr] : aligns) {
    const uint32_t al = alignment_of(ptr);
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulPreferenceSetAttribute(pref.h, attr, &al, sizeof(al)), name);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  KILNRT_CUBLASLT_CHECK(
      api.cublasLtMatmulAlgoGetHeuristic(handle, desc.h, la.h, lb.h, ld.h, ld.h, pref.h, 1, &result, &returned), name);
  KILNRT_CHECK(returned > 0, kCuda, name,
               "cuBLASLt found no algorithm for the " << c.m << "x" << c.n << "x" << c.k << " im2col GEMM");
  const float one = 1.f, zero = 0.f;
  KILNRT_CUBLASLT_CHECK(api.cublasLtMatmul(handle, desc.h, &one, c.a, la.h, c.b, lb.h, &zero, c.d, ld.h, c.d, ld.h,
                                           &result.algo, ws, ws_bytes, reinterpret_cast<cudaStream_t>(l.stream)),
                        name);
}

bool env_is(const char* v, const char* want) { return v && std::strcmp(v, want) == 0; }

bool direct_kernel_enabled() { return !env_switched_off("KILNRT_CUDA_SMALL_C_DIRECT"); }
bool stem_kernel_enabled() { return !env_switched_off("KILNRT_CUDA_SMALL_C_STEM"); }

// The rule without the direct kernel: im2col GEMM for patchify geometries or without cuDNN, else pack8 + cuDNN.
SmallCPath fixed_rule_without_direct(const ir::Node& node, bool cudnn) {
  return SmallCConv::is_patchify(node) || !cudnn ? SmallCPath::kIm2colGemm : SmallCPath::kPack8Cudnn;
}

}  // namespace

const char* small_c_path_name(SmallCPath p) {
  switch (p) {
    case SmallCPath::kIm2colGemm: return "im2col-gemm";
    case SmallCPath::kPack4Cudnn: return "pack4-cudnn";
    case SmallCPath::kPack8Cudnn: return "pack8-cudnn";
    case SmallCPath::kDirectMma: return "direct-mma";
    case SmallCPath::kStemMma: return "stem-mma";
  }
  return "?";
}

struct SmallCConv::CudnnSet {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  size_t workspace = 0;
  bool ok = false;
  ~CudnnSet() {
    if (!kilnrt::cuda::cleanup_allowed()) return;
    try {
      const CudnnApi& api = cudnn_api();
      if (x) api.cudnnDestroyTensorDescriptor(x);
      if (y) api.cudnnDestroyTensorDescriptor(y);
      if (w) api.cudnnDestroyFilterDescriptor(w);
      if (conv) api.cudnnDestroyConvolutionDescriptor(conv);
    } catch (...) {
    }
  }
};

SmallCConv::SmallCConv(const ir::Node& node, bool bf16, bool cudnn)
    : node_(node), name_(node.describe()), bf16_(bf16), cudnn_(cudnn) {}
SmallCConv::~SmallCConv() = default;

bool SmallCConv::is_patchify(const ir::Node& n) {
  const auto ks = n.attr_ints("kernel_shape", std::vector<int64_t>{});
  const auto st = n.attr_ints("strides", std::vector<int64_t>(2, 1));
  const auto dil = n.attr_ints("dilations", std::vector<int64_t>(2, 1));
  const auto pads = n.attr_ints("pads", std::vector<int64_t>(4, 0));
  const std::string auto_pad = n.attr_string("auto_pad", std::string("NOTSET"));
  const bool no_pad = auto_pad == "VALID" ||
                      (auto_pad == "NOTSET" && std::all_of(pads.begin(), pads.end(), [](int64_t v) { return v == 0; }));
  return ks.size() == 2 && st == ks && dil == std::vector<int64_t>{1, 1} && no_pad;
}

bool SmallCConv::direct_shape_ok(const ir::Node& n, const Tensor& w) {
  k::Conv2d p;
  p.n = 1;
  p.k = w.dim(0);
  p.c = w.dim(1);
  p.kh = int(w.dim(2));
  p.kw = int(w.dim(3));
  p.h = p.w = p.oh = p.ow = 1;
  const auto dil = n.attr_ints("dilations", std::vector<int64_t>(2, 1));
  p.dh = int(dil.size() > 0 ? dil[0] : 1);
  p.dw = int(dil.size() > 1 ? dil[1] : 1);
  return k::small_c_direct_applies(p, (p.c * p.kh * p.kw + 15) / 16 * 16);
}

bool SmallCConv::stem_layout(const ir::Node& n, int64_t c, int kh, int kw, k::SmallCStemLayout* out) {
  const auto st = n.attr_ints("strides", std::vector<int64_t>(2, 1));
  const auto dil = n.attr_ints("dilations", std::vector<int64_t>(2, 1));
  const auto pads = n.attr_ints("pads", std::vector<int64_t>(4, 0));
  const std::string auto_pad = n.attr_string("auto_pad", std::string("NOTSET"));
  if (st.size() != 2 || dil != std::vector<int64_t>{1, 1} || pads.size() != 4) return false;
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return false;  // SAME_*: pads known only with the shapes
  const int64_t pw = auto_pad == "VALID" ? 0 : pads[1];
  if (pw > 64 || st[1] > 64) return false;
  return k::small_c_stem_layout(c, kh, kw, int(st[1]), int(pw), out);
}

std::vector<SmallCPath> SmallCConv::applicable_paths(const ir::Node& n, bool cudnn) {
  std::vector<SmallCPath> out = {SmallCPath::kIm2colGemm};
  if (cudnn) {
    out.push_back(SmallCPath::kPack8Cudnn);
    out.push_back(SmallCPath::kPack4Cudnn);
  }
  // The direct kernel: no residual input (K, C*KH*KW and the geometry are checked with the weights and at run).
  bool residual = false;
  if (n.op_type == ops::nn::kFusedConvOp) residual = ops::nn::read_fused_epilogue(n).has_residual;
  if (!residual && direct_kernel_enabled()) out.push_back(SmallCPath::kDirectMma);
  if (!residual) out.push_back(SmallCPath::kStemMma);
  return out;
}

SmallCPath SmallCConv::fixed_rule(const ir::Node& node, bool cudnn) {
  if (is_patchify(node)) return fixed_rule_without_direct(node, cudnn);
  // The direct kernel for small windows only (H100 fp16, engine.run: efficientnet_b0's 3x3 stem b32 1.559 -> 1.539 ms,
  // b1 0.513 -> 0.499; resnet50's 7x7 stem loses to pack8 + cuDNN: b32 1.377 -> 1.426 ms, b1 0.358 -> 0.375).
  const auto ks = node.attr_ints("kernel_shape", std::vector<int64_t>{});
  const auto paths = applicable_paths(node, cudnn);
  k::SmallCStemLayout stem;
  if (stem_kernel_enabled() && ks.size() == 2 && stem_layout(node, 1, int(ks[0]), int(ks[1]), &stem) &&
      std::find(paths.begin(), paths.end(), SmallCPath::kStemMma) != paths.end())
    return SmallCPath::kStemMma;
  const bool small_window = ks.size() == 2 && ks[0] * ks[1] <= 16;
  if (small_window && std::find(paths.begin(), paths.end(), SmallCPath::kDirectMma) != paths.end())
    return SmallCPath::kDirectMma;
  return fixed_rule_without_direct(node, cudnn);
}

std::unique_ptr<SmallCConv> SmallCConv::create(const LayerCreateArgs& a, bool cudnn) {
  const ir::Node& n = a.node;
  const Precision prec = node_precision(n);
  if (prec != Precision::kFp16 && prec != Precision::kBf16) return nullptr;
  const char* env = std::getenv("KILNRT_CUDA_SMALL_C");
  if (env_is(env, "0") || env_is(env, "off") || env_is(std::getenv("KILNRT_CUDA_CONV"), "direct")) return nullptr;
  if (n.inputs.size() < 2 || !a.graph.is_constant(n.inputs[1]) || n.attr_int("group", 1) != 1) return nullptr;
  const Tensor& w = a.graph.constants.at(n.inputs[1]);
  if (w.dtype() != DType::kFloat32 || w.rank() != 4 || w.dim(1) > kMaxSmallC || w.dim(1) < 1 || w.dim(0) < 1)
    return nullptr;
  SmallCPath want = fixed_rule(n, cudnn);
  if (env_is(env, "gemm")) want = SmallCPath::kIm2colGemm;
  if (env_is(env, "pack4")) want = SmallCPath::kPack4Cudnn;
  if (env_is(env, "pack8")) want = SmallCPath::kPack8Cudnn;
  if (env_is(env, "direct")) want = SmallCPath::kDirectMma;
  if (env_is(env, "stem")) want = SmallCPath::kStemMma;
  std::unique_ptr<SmallCConv> s(new SmallCConv(n, prec == Precision::kBf16, cudnn));
  if (n.op_type == ops::nn::kFusedConvOp) {
    const ops::nn::FusedEpilogue e = ops::nn::read_fused_epilogue(n);
    s->relu_only_ = e.act == ops::nn::FusedActivation::kRelu && !e.has_residual;
    s->act_ = static_cast<int>(e.act);
    s->act_a_ = e.a;
    s->act_b_ = e.b;
    s->residual_ = e.has_residual;
  }
  if (const char* mb = std::getenv("KILNRT_CUDA_SMALL_C_STEM_BLOCKS")) s->stem_max_blocks_ = std::max(0, std::atoi(mb));
  if (want == SmallCPath::kStemMma) {  // K and C with the weights
    const int64_t kk = w.dim(0);
    k::SmallCStemLayout l;
    if (!(kk == 16 || kk == 32 || kk == 48 || kk == 64) ||
        !stem_layout(n, w.dim(1), int(w.dim(2)), int(w.dim(3)), &l)) {
      const auto ks = n.attr_ints("kernel_shape", std::vector<int64_t>{});
      want = ks.size() == 2 && ks[0] * ks[1] <= 16 && direct_kernel_enabled() && !s->residual_
                 ? SmallCPath::kDirectMma
                 : fixed_rule_without_direct(n, cudnn);
    }
  }
  if (want == SmallCPath::kDirectMma && !direct_shape_ok(n, w)) want = fixed_rule_without_direct(n, cudnn);
  if (!s->set_path(want, a)) return nullptr;
  return s;
}

bool SmallCConv::set_path(SmallCPath p, const LayerCreateArgs& a) {
  const std::vector<SmallCPath> paths = applicable_paths(node_, cudnn_);
  if (std::find(paths.begin(), paths.end(), p) == paths.end()) return false;
  if (!upload_weights(p, a)) return false;
  path_ = p;
  return true;
}

bool SmallCConv::upload_weights(SmallCPath p, const LayerCreateArgs& a) {
  const std::string& wname = node_.inputs[1];
  const Tensor& w = a.graph.constants.at(wname);
  const int64_t kk = w.dim(0), c = w.dim(1), r = w.dim(2), s = w.dim(3);
  const DType dt = bf16_ ? DType::kBFloat16 : DType::kFloat16;
  auto to16 = [&](float v) { return bf16_ ? float_to_bfloat16(v) : float_to_half(v); };
  const std::string suffix = bf16_ ? "#bf16" : "#fp16";
  if (p == SmallCPath::kStemMma) {
    if (!stem_layout(node_, c, int(r), int(s), &stem_)) return false;
    const std::string key = node_.name + "/small_c_stem_W" + suffix;
    if ((stem_w_ = a.weights.find(key))) return true;
    if (!a.weights.has_host_data(wname)) return false;
    Tensor out = Tensor::empty(dt, {kk, stem_.kpad});
    uint16_t* d = out.data<uint16_t>();
    std::fill(d, d + kk * stem_.kpad, uint16_t(0));
    const float* src = w.data<float>();
    for (int64_t o = 0; o < kk; ++o)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t y = 0; y < r; ++y)
          for (int64_t x = 0; x < s; ++x)
            d[o * stem_.kpad + (ci * r + y) * stem_.kxp + stem_.lead + x] = to16(src[((o * c + ci) * r + y) * s + x]);
    stem_w_ = a.weights.upload(key, out);
    return stem_w_ != nullptr;
  }
  if (p == SmallCPath::kIm2colGemm || p == SmallCPath::kDirectMma) {
    const bool direct = p == SmallCPath::kDirectMma;
    kc_pad_ = direct ? (c * r * s + 15) / 16 * 16 : (c * r * s + 7) / 8 * 8;
    const std::string key = node_.name + (direct ? "/small_c_direct_W" : "/small_c_gemm_W") + suffix;
    if ((gemm_w_ = a.weights.find(key))) return true;
    if (!a.weights.has_host_data(wname)) return false;
    Tensor out = Tensor::empty(dt, {kk, kc_pad_});
    uint16_t* d = out.data<uint16_t>();
    std::fill(d, d + kk * kc_pad_, uint16_t(0));
    const float* src = w.data<float>();
    for (int64_t o = 0; o < kk; ++o)
      for (int64_t j = 0; j < c * r * s; ++j) d[o * kc_pad_ + j] = to16(src[o * c * r * s + j]);
    gemm_w_ = a.weights.upload(key, out);
    return gemm_w_ != nullptr;
  }
  pack_cp_ = p == SmallCPath::kPack4Cudnn ? 4 : 8;
  if (c >= pack_cp_) return false;
  const std::string key = node_.name + "/small_c_pack" + std::to_string(pack_cp_) + "_W" + suffix;
  if ((pack_w_ = a.weights.find(key))) return true;
  if (!a.weights.has_host_data(wname)) return false;
  Tensor out = Tensor::empty(dt, {kk, r, s, int64_t(pack_cp_)});
  uint16_t* d = out.data<uint16_t>();
  std::fill(d, d + kk * r * s * pack_cp_, uint16_t(0));
  const float* src = w.data<float>();
  for (int64_t o = 0; o < kk; ++o)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t y = 0; y < r; ++y)
        for (int64_t x = 0; x < s; ++x)
          d[((o * r + y) * s + x) * pack_cp_ + ci] = to16(src[((o * c + ci) * r + y) * s + x]);
  pack_w_ = a.weights.upload(key, out);
  return pack_w_ != nullptr;
}

std::string SmallCConv::tactic() const {
  // The library prefix makes the runner create the handle before a captured launch (CudaRunner::ensure_resources).
  if (path_ == SmallCPath::kDirectMma) return "kernel:small-c-direct-mma";
  if (path_ == SmallCPath::kStemMma) return "kernel:small-c-stem-mma";
  return path_ == SmallCPath::kIm2colGemm
             ? "cublaslt:small-c-im2col-gemm"
             : std::string("cudnn:small-c-") + (pack_cp_ == 4 ? "pack4" : "pack8") + "-nhwc|nchw:conv-fwd";
}

bool SmallCConv::run(LayerLaunch& l, const k::Conv2d& p, bool symmetric, const void** bias, bool* done) {
  *done = false;
  const DType want = bf16_ ? DType::kBFloat16 : DType::kFloat16;
  if (l.inputs[0].dtype != want || l.outputs[0].dtype != want || !symmetric || p.groups != 1 || p.c > kMaxSmallC)
    return false;
  if (l.inputs[0].shape.size() != 4 || p.n == 0 || p.k == 0 || p.oh == 0 || p.ow == 0) return false;
  if (path_ == SmallCPath::kIm2colGemm) return run_gemm(l, p, bias, done);
  if (path_ == SmallCPath::kDirectMma) return run_direct(l, p, bias, done);
  if (path_ == SmallCPath::kStemMma) return run_stem(l, p, bias, done);
  return run_pack(l, p);
}

bool SmallCConv::run_direct(LayerLaunch& l, const k::Conv2d& p, const void** bias, bool* done) {
  if (!gemm_w_ || residual_ || !k::small_c_direct_applies(p, kc_pad_)) return false;
  check_launch(k::small_c_direct16(bf16_, l.inputs[0].data, l.inputs[0].nhwc, gemm_w_, kc_pad_, *bias,
                                   l.outputs[0].data, l.outputs[0].nhwc, p, act_, act_a_, act_b_, l.stream),
               name_, "small_c_direct16");
  *bias = nullptr;
  *done = true;  // bias and activation applied
  return true;
}

bool SmallCConv::run_stem(LayerLaunch& l, const k::Conv2d& p, const void** bias, bool* done) {
  if (!stem_w_ || residual_ || !k::small_c_stem_applies(p, stem_) ||
      (reinterpret_cast<uintptr_t>(l.outputs[0].data) & 15) != 0)
    return false;
  check_launch(k::small_c_stem16(bf16_, l.inputs[0].data, l.inputs[0].nhwc, stem_w_, stem_, *bias, l.outputs[0].data,
                                 l.outputs[0].nhwc, p, act_, act_a_, act_b_, stem_max_blocks_, l.stream),
               name_, "small_c_stem16");
  *bias = nullptr;
  *done = true;  // bias and activation applied
  return true;
}

bool SmallCConv::run_gemm(LayerLaunch& l, const k::Conv2d& p, const void** bias, bool* done) {
  if (!gemm_w_) return false;
  const int64_t np = p.oh * p.ow;
  const size_t per_image = size_t(np) * size_t(kc_pad_) * 2;
  if (l.workspace_bytes <= kLibReserve) return false;
  const int64_t chunk = chunk_images(p.n, per_image, l.workspace_bytes - kLibReserve);
  if (chunk == 0) return false;
  const bool y_nhwc = l.outputs[0].nhwc;
  const cudaDataType_t type = bf16_ ? CUDA_R_16BF : CUDA_R_16F;
  char* ws = static_cast<char*>(l.workspace);
  const size_t col_bytes = align256(per_image * size_t(chunk));
  for (int64_t n0 = 0; n0 < p.n; n0 += chunk) {
    const int64_t cnt = std::min(chunk, p.n - n0);
    check_launch(k::im2col16(l.inputs[0].data, l.inputs[0].nhwc, ws, p, n0, cnt, kc_pad_, l.stream), name_, "im2col16");
    LtCall c;
    c.type = type;
    c.k = kc_pad_;
    void* y = static_cast<char*>(l.outputs[0].data) + size_t(n0 * np * p.k) * 2;
    if (y_nhwc) {  // column-major [K x cnt*P] = W (kc x K, transposed) * col (kc x cnt*P)
      c.ta = true;
      c.m = p.k;
      c.n = cnt * np;
      c.a = gemm_w_;
      c.lda = kc_pad_;
      c.b = ws;
      c.ldb = kc_pad_;
      c.d = y;
      c.ldd = p.k;
      c.bias = *bias;
      c.relu = relu_only_;
    } else {  // per image: column-major [P x K] (= row-major [K, P]) = col (kc x P, transposed) * W (kc x K)
      c.ta = true;
      c.m = np;
      c.n = p.k;
      c.a = ws;
      c.lda = kc_pad_;
      c.stride_a = np * kc_pad_;
      c.b = gemm_w_;
      c.ldb = kc_pad_;
      c.stride_b = 0;
      c.d = y;
      c.ldd = np;
      c.stride_d = np * p.k;
      c.batch = cnt;
    }
    lt_matmul(c, l, ws + col_bytes, l.workspace_bytes - col_bytes, name_);
  }
  if (y_nhwc) {  // the GEMM's epilogue added the bias (and applied relu_only_'s relu)
    *bias = nullptr;
    *done = relu_only_;
  }
  return true;
}

SmallCConv::CudnnSet* SmallCConv::cudnn_set(LayerLaunch& l, const k::Conv2d& p, int64_t count, size_t ws_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<int64_t> key = {count, p.c, p.h, p.w, p.oh, p.ow, int64_t(ws_bytes)};
  auto it = sets_.find(key);
  if (it != sets_.end()) return it->second.get();
  auto set = std::make_unique<CudnnSet>();
  CudnnSet& c = *set;
  const CudnnApi& api = cudnn_api();
  cudnnHandle_t h = l.libs->get_cudnn();
  auto i32 = [](int64_t v) { return static_cast<int>(v); };
  const cudnnDataType_t dt = bf16_ ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  KILNRT_CUDNN_CHECK(api, api.cudnnCreateTensorDescriptor(&c.x), name_);
  KILNRT_CUDNN_CHECK(api, api.cudnnCreateTensorDescriptor(&c.y), name_);
  KILNRT_CUDNN_CHECK(api, api.cudnnCreateFilterDescriptor(&c.w), name_);
  KILNRT_CUDNN_CHECK(api, api.cudnnCreateConvolutionDescriptor(&c.conv), name_);
  KILNRT_CUDNN_CHECK(
      api, api.cudnnSetTensor4dDescriptor(c.x, CUDNN_TENSOR_NHWC, dt, i32(count), pack_cp_, i32(p.h), i32(p.w)), name_);
  KILNRT_CUDNN_CHECK(
      api, api.cudnnSetTensor4dDescriptor(c.y, CUDNN_TENSOR_NHWC, dt, i32(count), i32(p.k), i32(p.oh), i32(p.ow)),
      name_);
  KILNRT_CUDNN_CHECK(api, api.cudnnSetFilter4dDescriptor(c.w, dt, CUDNN_TENSOR_NHWC, i32(p.k), pack_cp_, p.kh, p.kw),
                     name_);
  KILNRT_CUDNN_CHECK(api,
                     api.cudnnSetConvolution2dDescriptor(c.conv, p.ph, p.pw, p.sh, p.sw, p.dh, p.dw,
                                                         CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                     name_);
  KILNRT_CUDNN_CHECK(api, api.cudnnSetConvolutionMathType(c.conv, CUDNN_TENSOR_OP_MATH), name_);
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  KILNRT_CUDNN_CHECK(api,
                     api.cudnnGetConvolutionForwardAlgorithm_v7(h, c.x, c.w, c.conv, c.y,
                                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
                     name_);
  for (int i = 0; i < returned && !c.ok; ++i) {
    const cudnnConvolutionFwdAlgo_t algo = perf[i].algo;
    if (perf[i].status != CUDNN_STATUS_SUCCESS || algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
        algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING || algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED)
      continue;
    size_t need = 0;
    if (api.cudnnGetConvolutionForwardWorkspaceSize(h, c.x, c.w, c.conv, c.y, algo, &need) != CUDNN_STATUS_SUCCESS)
      continue;
    if (need > ws_bytes) continue;
    c.algo = algo;
    c.workspace = need;
    c.ok = true;
  }
  CudnnSet* raw = set.get();
  sets_[key] = std::move(set);
  return raw;
}

bool SmallCConv::run_pack(LayerLaunch& l, const k::Conv2d& p) {
  if (!pack_w_ || !cudnn_ || !l.outputs[0].nhwc || p.c >= pack_cp_) return false;
  const size_t per_image = size_t(p.h * p.w) * size_t(pack_cp_) * 2;
  if (l.workspace_bytes <= kLibReserve) return false;
  const int64_t chunk = chunk_images(p.n, per_image, l.workspace_bytes - kLibReserve);
  if (chunk == 0) return false;
  const size_t packed = align256(per_image * size_t(chunk));
  const size_t rest = l.workspace_bytes - packed;
  // Descriptors and algorithms for every chunk size first: nothing is enqueued unless all of them have one.
  CudnnSet* full = cudnn_set(l, p, chunk, rest);
  const int64_t tail = p.n % chunk;
  CudnnSet* last = tail ? cudnn_set(l, p, tail, rest) : full;
  if (!full->ok || !last->ok) return false;
  const CudnnApi& api = cudnn_api();
  cudnnHandle_t h = l.libs->get_cudnn();
  KILNRT_CUDNN_CHECK(api, api.cudnnSetStream(h, reinterpret_cast<cudaStream_t>(l.stream)), name_);
  char* ws = static_cast<char*>(l.workspace);
  const float one = 1.f, zero = 0.f;
  for (int64_t n0 = 0; n0 < p.n; n0 += chunk) {
    const int64_t cnt = std::min(chunk, p.n - n0);
    CudnnSet* s = cnt == chunk ? full : last;
    check_launch(k::pack_channels16(l.inputs[0].data, l.inputs[0].nhwc, ws, p, n0, cnt, pack_cp_, l.stream), name_,
                 "pack_channels16");
    void* y = static_cast<char*>(l.outputs[0].data) + size_t(n0 * p.k * p.oh * p.ow) * 2;
    KILNRT_CUDNN_CHECK(api,
                       api.cudnnConvolutionForward(h, &one, s->x, ws, s->w, pack_w_, s->conv, s->algo, ws + packed,
                                                   s->workspace, &zero, s->y, y),
                       name_);
  }
  return true;
}

}  // namespace kilnrt::backends::cuda
