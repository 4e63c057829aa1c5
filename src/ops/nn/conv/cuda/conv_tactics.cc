// Convolution tactic strings, the process-wide timing cache and build-time tuning (conv_tactics.h).
#include "ops/nn/conv/cuda/conv_tactics.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "cuda/cuda_libs.h"
#include "ops/nn/conv/cuda/pointwise_conv.h"
#include "core/check.h"
#include "core/env_switch.h"
#include "core/logging.h"
#include "cuda/context_guard.h"
#include "cuda/driver_api.h"
#include "cuda/library_loader.h"
#include "kilnrt/cuda/graph.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"

namespace kilnrt::backends::cuda {
namespace {

namespace kc = kilnrt::cuda;
namespace kc_kernels = kilnrt::cuda::kernels;

thread_local ConvTuningScope* t_scope = nullptr;

struct Cache {
  std::mutex mu;
  std::map<std::string, std::string> entries;
  bool file_loaded = false;
  TuningStats stats;
};
Cache& cache() {
  static Cache* c = new Cache;  // leaked on purpose: used from destructors at exit
  return *c;
}

const char* cache_file() {
  const char* f = std::getenv("KILNRT_TIMING_CACHE");
  return f && *f ? f : nullptr;
}

void load_file_locked(Cache& c) {
  if (c.file_loaded) return;
  c.file_loaded = true;
  const char* path = cache_file();
  if (!path) return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0 || tab + 1 >= line.size()) continue;  // values are parsed at find
    c.entries[line.substr(0, tab)] = line.substr(tab + 1);
  }
}

std::string query_device_key(int device) {
  kc::ContextGuard guard(device);
  const kc::DriverApi& api = guard.api();
  CUdevice dev = 0;
  KILNRT_CU_CHECK(api, api.DeviceGet(&dev, device), "conv tuning");
  int major = 0, minor = 0;
  const char* where = "conv tuning";
  KILNRT_CU_CHECK(api, api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), where);
  KILNRT_CU_CHECK(api, api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), where);
  char name[256] = {};
  KILNRT_CU_CHECK(api, api.DeviceGetName(name, sizeof(name) - 1, dev), "conv tuning");
  const kc::LibraryInfo& dnn = kc::library(kc::Library::kCudnn);
  const kc::LibraryInfo& lt = kc::library(kc::Library::kCublasLt);
  return std::string(name) + "|sm_" + std::to_string(major * 10 + minor) + "|cudnn " +
         (dnn.found ? dnn.version_string : "-") + "|cublaslt " + (lt.found ? lt.version_string : "-");
}

}  // namespace

std::string tuning_device_key(int device) {
  static std::mutex mu;
  static std::map<int, std::string>* keys = new std::map<int, std::string>;  // leaked: used at exit
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = keys->find(device);
    if (it != keys->end()) return it->second;
  }
  const std::string key = query_device_key(device);
  std::lock_guard<std::mutex> lock(mu);
  return (*keys)[device] = key;
}

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
  if (kind == "cudnn") c.path = ConvPath::kCudnn;
  else if (kind == "cudnn-fused") c.path = ConvPath::kCudnnFused;
  else if (kind == "cublaslt") c.path = ConvPath::kCublasLt;
  else if (kind == "pw-mma") c.path = ConvPath::kPwKernel;
  else return false;
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

std::string layout_label(bool nhwc, DType storage) {
  const char* d = storage == DType::kFloat16 ? "f16" : storage == DType::kBFloat16 ? "bf16" : "f32";
  return std::string(nhwc ? "nhwc-" : "nchw-") + d;
}

bool timing_cache_find(const std::string& key, ConvChoice* out) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  load_file_locked(c);
  auto it = c.entries.find(key);
  return it != c.entries.end() && parse_choice(it->second, out);
}

void timing_cache_store(const std::string& key, const ConvChoice& ch) { timing_cache_store_raw(key, choice_to_string(ch)); }

bool timing_cache_find_raw(const std::string& key, std::string* value) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  load_file_locked(c);
  auto it = c.entries.find(key);
  if (it == c.entries.end()) return false;
  *value = it->second;
  return true;
}

void timing_cache_store_raw(const std::string& key, const std::string& v) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  load_file_locked(c);
  c.entries[key] = v;
  if (const char* path = cache_file()) {
    std::ofstream f(path, std::ios::app);
    if (f) f << key << '\t' << v << '\n';
    if (!f) KILNRT_LOG(kWarning, "cannot append to the timing cache " << path);
  }
}

void timing_cache_clear() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.entries.clear();
  c.file_loaded = false;
}

bool conv_lt_nchw_enabled() {
  const char* env = std::getenv("KILNRT_CONV_LT_NCHW");
  return env && std::string(env) == "1";
}

bool pw_kernel_enabled() { return !env_switched_off("KILNRT_CONV_PW_KERNEL"); }

void note_tactic_fallback() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.stats.fallbacks++;
}

void note_gemm_tuning(bool cache_hit) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  (cache_hit ? c.stats.gemm_cache_hits : c.stats.gemm_timed)++;
}

TuningStats tuning_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.stats;
}

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
            (info.fused ? "fused(" + info.epilogue + ")" : "plain") +
            (has_bias ? "+bias" : "");
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
    for (int a : {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                  CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
                  CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD})
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
      if (!nhwc) r.key += " lt-nchw";  // other candidates: another cache entry
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
struct ConvTuningScope::Resources {
  kc::Stream stream;
  LibraryHandles libs;
  kc::DeviceBuffer workspace;
  std::vector<kc::DeviceBuffer> slots;  // zero-filled operands, grown as needed
  kc::Event start, stop;

  void* slot(int device, size_t i, size_t bytes) {
    if (slots.size() <= i) slots.resize(i + 1);
    bytes = std::max<size_t>(bytes, 256);
    if (slots[i].size() < bytes) {
      stream.synchronize();  // the old buffer may still be read by queued work
      slots[i] = kc::DeviceBuffer(device, bytes);
      slots[i].memset_async(0, stream.get());
    }
    return slots[i].data();
  }
};

ConvTuningScope::ConvTuningScope(int device, std::map<std::string, std::string>* out)
    : device_(device), out_(out), previous_(t_scope) {
  t_scope = this;
}

ConvTuningScope::~ConvTuningScope() {
  t_scope = previous_;
  if (res_ && kc::cleanup_allowed()) {
    try {
      kc::ContextGuard guard(device_);
      res_->stream.synchronize();
      res_.reset();
    } catch (...) {
    }
  }
}

ConvTuningScope* ConvTuningScope::current() {
  // KILNRT_CONV_TUNING=0: no timing, cuDNN's heuristic alone.
  return env_switched_off("KILNRT_CONV_TUNING") ? nullptr : t_scope;
}

ConvTuningScope* ConvTuningScope::open_scope() { return t_scope; }

void ConvTuningScope::record(const std::string& node, const std::string& attr_value) {
  if (out_) (*out_)[node] = attr_value;
}

void ConvTuningScope::record(const std::string& node, const std::string& attr, const std::string& value) {
  if (out_) (*out_)[node + "\t" + attr] = value;
}

ConvChoice ConvTuningScope::tune(ConvTuneRequest& req,
                                 const std::function<void(const ConvChoice&, LayerLaunch&)>& run,
                                 const std::string& node) {
  kc::ContextGuard guard(device_);
  if (device_key_.empty()) device_key_ = tuning_device_key(device_);
  const std::string key = device_key_ + "|" + req.key;
  ConvChoice best;
  if (timing_cache_find(key, &best)) {
    std::lock_guard<std::mutex> lock(cache().mu);
    cache().stats.cache_hits++;
    return best;
  }
  bind(req.launch);
  const int w = time_candidates(
      req.launch, int(req.candidates.size()),
      [&](int i, LayerLaunch& l) { run(req.candidates[size_t(i)], l); },
      [&](int i) { return choice_to_string(req.candidates[size_t(i)]); }, node, req.label);
  if (w >= 0) best = req.candidates[size_t(w)];
  {
    std::lock_guard<std::mutex> lock(cache().mu);
    cache().stats.timed++;
  }
  if (w >= 0) timing_cache_store(key, best);  // the heuristic too: a hit skips the timing
  return best;
}

void ConvTuningScope::bind(LayerLaunch& l) {
  kc::ContextGuard guard(device_);
  if (!res_) {
    res_ = std::make_unique<Resources>();
    res_->stream = kc::Stream(device_);
    res_->libs.device = device_;
    res_->workspace = kc::DeviceBuffer(device_, kWorkspaceBytes);
    res_->start = kc::Event(device_, /*timing=*/true);
    res_->stop = kc::Event(device_, /*timing=*/true);
  }
  Resources& r = *res_;
  size_t slot = 0;
  for (LayerTensor& t : l.inputs)
    if (t.present) t.data = r.slot(device_, slot++, size_t(t.numel()) * dtype_size(t.dtype));
  for (LayerOutput& o : l.outputs)
    if (o.present) o.data = r.slot(device_, slot++, size_t(o.numel()) * dtype_size(o.dtype));
  l.stream = r.stream.get();
  l.libs = &r.libs;
  l.workspace = r.workspace.data();
  l.workspace_bytes = r.workspace.size();
  r.stream.synchronize();
}

int ConvTuningScope::time_candidates(LayerLaunch& l, int count, const std::function<void(int, LayerLaunch&)>& run,
                                     const std::function<std::string(int)>& label, const std::string& node,
                                     const std::string& what, double margin, std::vector<double>* times) {
  kc::ContextGuard guard(device_);
  if (times) times->assign(size_t(std::max(count, 0)), -1.0);
  KILNRT_CHECK(res_ != nullptr, kInternal, node, "tactic timing before bind()");
  Resources& r = *res_;
  // GPU time as the engine runs it (one CUDA graph, no host gaps: the legacy cuDNN API spends up to a millisecond
  // of host time per call): kReps launches captured into one graph; the first replay drops candidates 3x slower than
  // the best so far, the others get the median of 3 more. A direct launch first checks that the tactic applies.
  constexpr int kReps = 8;
  double best_ms = -1.0, best_score = -1.0;
  int best = -1;
  std::string report;
  for (int c = 0; c < count; ++c) {
    try {
      run(c, l);  // a tactic that does not apply throws here
      r.stream.synchronize();
    } catch (const Error& e) {
      r.stream.synchronize();  // a real device fault is sticky and throws here
      KILNRT_LOG(kDebug, node << ": tactic " << label(c) << " skipped: " << e.what());
      continue;
    }
    double med = 0;
    bool dropped = false;
    try {
      kc::CudaGraph graph(device_);
      graph.capture([&](kc::StreamHandle s) {
        LayerLaunch lc = l;
        lc.stream = s;
        for (int i = 0; i < kReps; ++i) run(c, lc);
      });
      auto replay = [&] {
        r.start.record(r.stream);
        graph.launch(r.stream.get());
        r.stop.record(r.stream);
        r.stop.synchronize();
        return double(kc::Event::elapsed_ms(r.start, r.stop)) / kReps;
      };
      const double first = replay();
      if (best_ms >= 0 && first > 3 * best_ms + 0.005) {
        med = first;
        dropped = true;
      } else {
        std::vector<double> ms{replay(), replay(), replay()};
        std::sort(ms.begin(), ms.end());
        med = ms[1];
      }
    } catch (const Error& e) {
      r.stream.synchronize();
      KILNRT_LOG(kDebug, node << ": tactic " << label(c) << " not capturable: " << e.what());
      continue;
    }
    report += " " + label(c) + (dropped ? ">" : "=") + std::to_string(med).substr(0, 6);
    if (times) (*times)[size_t(c)] = med;
    if (dropped) continue;
    const double score = c == 0 ? med : med / margin;  // beat the incumbent by the margin
    if (best_ms < 0 || med < best_ms) best_ms = med;
    if (best_score < 0 || score < best_score) {
      best_score = score;
      best = c;
    }
  }
  KILNRT_LOG(kDebug, node << " [" << what << "] timed (ms):" << report << " -> " << (best >= 0 ? label(best) : "-"));
  return best;
}

}  // namespace kilnrt::backends::cuda
