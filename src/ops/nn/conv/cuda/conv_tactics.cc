// Convolution tactic strings, their timing-cache entries, the candidates and their timing (conv_tactics.h).
#include "ops/nn/conv/cuda/conv_tactics.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "cuda/cuda_libs.h"
#include "ops/nn/conv/cuda/pointwise_conv.h"
#include "core/check.h"
#include "core/env_switch.h"
#include "cuda/context_guard.h"

namespace kilnrt::backends::cuda {
namespace {

namespace kc = kilnrt::cuda;
namespace kc_kernels = kilnrt::cuda::kernels;

}  // namespace

std::string choice_to_string(const ConvChoice& c) {
  switch (c.path) {
    case ConvPath::kCudnn: return "cudnn:" + std::to_string(c.algo);
    case ConvPath::kCudnnFused: return "cudnn-fused:" + std::to_string(c.algo);
    case ConvPath::kCublasLt: return "cublaslt:" + std::to_string(c.algo);
    case ConvPath::kPwKernel: return "pw-mma:" + std::to_string(c.algo);
    case ConvPath::kHeuristic: break;
  }
  return "heuristic";
}

bool parse_choice(const std::string& s, ConvChoice* out) {
  if (s == "heuristic") {
    *out = ConvChoice{};
    return true;
  }
  const size_t colon = s.find(':');
  if (colon == std::string::npos || colon + 1 >= s.size() || s.size() - colon > 4) return false;
  const std::string kind = s.substr(0, colon), num = s.substr(colon + 1);
  if (!std::all_of(num.begin(), num.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) return false;
  ConvChoice c;
  c.algo = std::stoi(num);
  if (kind == "cudnn")
    c.path = ConvPath::kCudnn;
  else if (kind == "cudnn-fused")
    c.path = ConvPath::kCudnnFused;
  else if (kind == "cublaslt")
    c.path = ConvPath::kCublasLt;
  else if (kind == "pw-mma")
    c.path = ConvPath::kPwKernel;
  else
    return false;
  const int limit = c.path == ConvPath::kCublasLt   ? 8
                    : c.path == ConvPath::kPwKernel ? kc_kernels::kPointwiseConvVariants
                                                    : int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  if (c.algo >= limit) return false;
  *out = c;
  return true;
}

std::map<std::string, ConvChoice> parse_tactic_attr(const std::string& s) {
  std::map<std::string, ConvChoice> m;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ';')) {
    const size_t eq = item.find('=');
    ConvChoice c;
    if (eq == std::string::npos || eq == 0 || !parse_choice(item.substr(eq + 1), &c)) continue;
    m[item.substr(0, eq)] = c;
  }
  return m;
}

std::string format_tactic_attr(const std::map<std::string, ConvChoice>& m) {
  std::string s;
  for (const auto& [label, c] : m) s += (s.empty() ? "" : ";") + label + "=" + choice_to_string(c);
  return s;
}

bool timing_cache_find(const std::string& key, ConvChoice* out) {
  std::string value;
  return timing_cache_find_raw(key, &value) && parse_choice(value, out);
}

void timing_cache_store(const std::string& key, const ConvChoice& ch) {
  timing_cache_store_raw(key, choice_to_string(ch));
}

bool conv_lt_nchw_enabled() {
  const char* env = std::getenv("KILNRT_CONV_LT_NCHW");
  return env && std::string(env) == "1";
}

bool pw_kernel_enabled() { return !env_switched_off("KILNRT_CONV_PW_KERNEL"); }

// ---- candidates ------------------------------------------------------------------------------------------------
std::vector<ConvTuneRequest> conv_tune_requests(const ir::Node& node, const ir::Graph& graph,
                                                const ConvTuneInfo& info) {
  auto static_shape = [&](const std::string& v, Shape* out) {
    const ir::TensorType* t = v.empty() ? nullptr : graph.type_of(v);
    if (!t || !t->has_shape) return false;
    *out = ir::sym_shape_to_shape(t->shape);
    return out->size() == 4 && std::all_of(out->begin(), out->end(), [](int64_t d) { return d > 0; });
  };
  Shape xs, ws, ys;
  if (node.inputs.size() < 2 || node.outputs.empty() || !static_shape(node.inputs[0], &xs) ||
      !static_shape(node.inputs[1], &ws) || !static_shape(node.outputs[0], &ys))
    return {};
  const bool has_bias = node.inputs.size() > 2 && !node.inputs[2].empty();
  const bool has_z = node.inputs.size() > 3 && !node.inputs[3].empty();
  const std::vector<int64_t> ones{1, 1}, zeros{0, 0, 0, 0};
  const auto strides = node.attr_ints("strides", ones), dil = node.attr_ints("dilations", ones);
  const auto pads = node.attr_ints("pads", zeros);
  const int64_t group = node.attr_int("group", 1);
  const std::string auto_pad = node.attr_string("auto_pad", std::string("NOTSET"));
  auto all_equal = [](const std::vector<int64_t>& v, int64_t x) {
    return std::all_of(v.begin(), v.end(), [x](int64_t d) { return d == x; });
  };
  const bool pointwise = ws[2] == 1 && ws[3] == 1 && group == 1 && auto_pad != "SAME_UPPER" &&
                         auto_pad != "SAME_LOWER" && all_equal(strides, 1) && all_equal(pads, 0);
  auto ints = [](const std::vector<int64_t>& v) {
    std::string s;
    for (int64_t d : v) s += std::to_string(d) + ",";
    return s;
  };
  const bool st16 = info.storage == DType::kFloat16 || info.storage == DType::kBFloat16;
  std::vector<ConvTuneRequest> out;
  for (int nhwc = 0; nhwc < 2; ++nhwc) {
    if (nhwc && (!info.nhwc || info.nhwc_own_kernel)) continue;
    ConvTuneRequest r;
    r.label = layout_label(nhwc != 0, info.storage);
    r.key = "conv x" + ints(xs) + " w" + ints(ws) + " s" + ints(strides) + " p" + ints(pads) + " d" + ints(dil) + " g" +
            std::to_string(group) + " " + auto_pad + " " + r.label + " " +
            (info.fused ? "fused(" + info.epilogue + ")" : "plain") + (has_bias ? "+bias" : "");
    auto tensor = [&](const Shape& sh, bool present) {
      LayerTensor t;
      t.shape = sh;
      t.dtype = info.storage;
      t.present = present;
      t.nhwc = nhwc && sh.size() == 4;
      return t;
    };
    r.launch.inputs = {tensor(xs, true), tensor(ws, true), tensor({ws[0]}, has_bias), tensor(ys, has_z)};
    r.launch.inputs[1].nhwc = false;
    r.launch.inputs.resize(node.inputs.size());
    LayerOutput y;
    y.shape = ys;
    y.dtype = info.storage;
    y.present = true;
    y.nhwc = nhwc != 0;
    r.launch.outputs = {y};
    r.candidates.push_back({ConvPath::kHeuristic, 0});  // the baseline: what an untimed engine runs
    // Legacy algorithms (FFT and non-fused Winograd excluded: they trade accuracy for speed).
    for (int a :
         {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
          CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD})
      r.candidates.push_back({ConvPath::kCudnn, a});
    // Conv + bias + residual + ReLU / identity in one cuDNN call (identity: implicit precomputed GEMM only).
    const bool relu = info.act == 1, none = info.act == 0;
    if (has_bias && (relu || none)) {
      for (int a : {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                    CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD})
        if (relu || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
          r.candidates.push_back({ConvPath::kCudnnFused, a});
    }
    const bool layout_free = xs[2] * xs[3] == 1 && ys[2] * ys[3] == 1;
    if ((nhwc || (layout_free && conv_lt_nchw_enabled())) && st16 && pointwise) {
      for (int i = 0; i < 4; ++i) r.candidates.push_back({ConvPath::kCublasLt, i});
      if (!nhwc) r.key += " lt-nchw";                                 // other candidates: another cache entry
      if (ws[0] % 8 == 0 && ws[1] % 8 == 0 && pw_kernel_enabled()) {  // own GEMM + fused epilogue
        for (int v = 0; v < kc_kernels::kPointwiseConvVariants; ++v) r.candidates.push_back({ConvPath::kPwKernel, v});
        r.key += " pw1";  // entries timed without these candidates stay apart
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

// ---- tuning ----------------------------------------------------------------------------------------------------
ConvChoice tune_conv_request(TacticTimingScope& scope, ConvTuneRequest& req,
                             const std::function<void(const ConvChoice&, LayerLaunch&)>& run, const std::string& node) {
  kc::ContextGuard guard(scope.device());
  const std::string key = tuning_device_key(scope.device()) + "|" + req.key;
  ConvChoice best;
  if (timing_cache_find(key, &best)) {
    note_conv_tuning(/*cache_hit=*/true);
    return best;
  }
  scope.bind(req.launch);
  const int w = scope.time_candidates(
      req.launch, int(req.candidates.size()), [&](int i, LayerLaunch& l) { run(req.candidates[size_t(i)], l); },
      [&](int i) { return choice_to_string(req.candidates[size_t(i)]); }, node, req.label);
  if (w >= 0) best = req.candidates[size_t(w)];
  note_conv_tuning(/*cache_hit=*/false);
  if (w >= 0) timing_cache_store(key, best);  // the heuristic too: a hit skips the timing
  return best;
}

}  // namespace kilnrt::backends::cuda
