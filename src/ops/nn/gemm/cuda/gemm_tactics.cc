// cuBLASLt algorithm timing for GEMM layers (gemm_tactics.h).
#include "ops/nn/gemm/cuda/gemm_tactics.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "ops/cuda/tactic_timing.h"
#include "core/env_switch.h"
#include "core/logging.h"

namespace kilnrt::backends::cuda {
namespace {

static_assert(sizeof(cublasLtMatmulAlgo_t) == 8 * sizeof(uint64_t), "cublasLtMatmulAlgo_t is 8 x uint64");

using CandidatesObserver = std::function<void(const std::string&, const std::vector<cublasLtMatmulAlgo_t>&)>;
CandidatesObserver& observer() {
  static CandidatesObserver* f = new CandidatesObserver;
  return *f;
}

}  // namespace

// The timing-cache key of a GEMM problem: op, every input's shape (or '-' when absent), storage, precision and the
// attributes that change the computation. Empty when a tensor is not float32 or a shape is not static.
std::string gemm_problem_key(const ir::Node& node, const ir::Graph& graph, DType storage, LayerLaunch* launch) {
  auto tensor_of = [&](const std::string& v, Shape* shape) {
    const ir::TensorType* t = graph.type_of(v);
    if (graph.is_constant(v) && !t) {
      const Tensor& c = graph.constants.at(v);
      if (c.dtype() != DType::kFloat32) return false;
      *shape = c.shape();
    } else {
      if (!t || !t->has_shape || t->dtype != DType::kFloat32) return false;
      *shape = ir::sym_shape_to_shape(t->shape);
    }
    return std::all_of(shape->begin(), shape->end(), [](int64_t d) { return d > 0; });
  };
  std::string key = "gemm " + node.op_type + " " + layout_label(false, storage).substr(5) + " " +
                    precision_name(node_precision(node));
  auto dims = [](const Shape& s) {
    std::string r = "[";
    for (int64_t d : s) r += std::to_string(d) + ",";
    return r + "]";
  };
  launch->inputs.clear();
  for (const std::string& in : node.inputs) {
    LayerTensor t;
    t.dtype = storage;
    t.present = !in.empty();
    if (t.present && !tensor_of(in, &t.shape)) return "";
    key += " " + (t.present ? dims(t.shape) : std::string("-"));
    launch->inputs.push_back(t);
  }
  if (node.outputs.empty()) return "";
  LayerOutput y;
  y.dtype = storage;
  y.present = true;
  if (!tensor_of(node.outputs[0], &y.shape)) return "";
  launch->outputs = {y};
  for (const char* a : {"trans_b", "transA", "transB"})
    if (node.has_attr(a)) key += std::string(" ") + a + "=" + std::to_string(node.attr_int(a, 0));
  for (const char* a : {"alpha", "beta"})
    if (node.has_attr(a)) key += std::string(" ") + a + "=" + std::to_string(node.attr_float(a, 1.f));
  for (const char* a : {"activation", "approximate"})
    if (node.has_attr(a)) key += std::string(" ") + a + "=" + node.attr_string(a, std::string());
  return key;
}

void set_gemm_candidates_observer(
    std::function<void(const std::string& node, const std::vector<cublasLtMatmulAlgo_t>& candidates)> f) {
  observer() = std::move(f);
}

std::string gemm_algo_to_hex(const cublasLtMatmulAlgo_t& a) {
  static const char* digits = "0123456789abcdef";
  const auto* b = reinterpret_cast<const unsigned char*>(&a);
  std::string s;
  for (size_t i = 0; i < sizeof(a); ++i) {
    s += digits[b[i] >> 4];
    s += digits[b[i] & 15];
  }
  return s;
}

bool gemm_algo_from_hex(const std::string& hex, cublasLtMatmulAlgo_t* out) {
  if (hex.size() != 2 * sizeof(cublasLtMatmulAlgo_t)) return false;
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  cublasLtMatmulAlgo_t a{};
  auto* b = reinterpret_cast<unsigned char*>(&a);
  for (size_t i = 0; i < sizeof(a); ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    b[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  *out = a;
  return true;
}

std::string encode_gemm_algo_attr(const std::string& device_key, const cublasLtMatmulAlgo_t& a) {
  return device_key + "#" + gemm_algo_to_hex(a);
}

bool decode_gemm_algo_attr(const std::string& s, std::string* device_key, cublasLtMatmulAlgo_t* out) {
  const size_t hash = s.rfind('#');
  if (hash == std::string::npos || !gemm_algo_from_hex(s.substr(hash + 1), out)) return false;
  *device_key = s.substr(0, hash);
  return true;
}

std::string gemm_device_part(const std::string& device_key) {
  // "<GPU>|sm_XY|cudnn V|cublaslt V": a cuBLASLt algorithm depends on the GPU and cuBLASLt, not on cuDNN (an engine
  // built in a process where torch loaded its own cuDNN runs its GEMMs as timed under the system cuDNN).
  const size_t at = device_key.find("|cudnn ");
  if (at == std::string::npos) return device_key;
  const size_t end = device_key.find('|', at + 1);
  return device_key.substr(0, at) + (end == std::string::npos ? std::string() : device_key.substr(end));
}

bool gemm_tuning_enabled() { return !env_switched_off("KILNRT_GEMM_TUNING"); }

DType gemm_storage(Precision p) {
  return p == Precision::kFp16 ? DType::kFloat16 : p == Precision::kBf16 ? DType::kBFloat16 : DType::kFloat32;
}

void setup_gemm_tactic(const LayerCreateArgs& a, DType storage, GemmTactic& t,
                       const std::function<void(LayerLaunch&)>& enqueue) {
  const std::string name = a.node.describe();
  t.name = name;
  if (a.node.has_attr(kGemmAlgoAttr)) {  // a built engine: the stored choice, never timed again
    std::string dev;
    cublasLtMatmulAlgo_t algo{};
    const std::string here = tuning_device_key(a.device);
    if (!decode_gemm_algo_attr(a.node.attr_string(kGemmAlgoAttr, std::string()), &dev, &algo)) {
      KILNRT_LOG(kWarning, name << ": malformed " << kGemmAlgoAttr << " attribute; cuBLASLt's heuristic is used");
      note_tactic_fallback();
    } else if (gemm_device_part(dev) != gemm_device_part(here)) {
      KILNRT_LOG(kWarning, name << ": the stored cuBLASLt algorithm was timed on '" << dev << "', this is '" << here
                                << "'; cuBLASLt's heuristic is used (rebuild the engine here to time again)");
      note_tactic_fallback();
    } else {
      t.algo = algo;
      t.has_algo = true;
    }
    return;
  }
  TacticTimingScope* scope = TacticTimingScope::open_scope();
  if (!scope || !gemm_tuning_enabled()) return;
  LayerLaunch l;
  const std::string problem = gemm_problem_key(a.node, a.graph, storage, &l);
  if (problem.empty()) return;
  const std::string dev = tuning_device_key(a.device);
  const int count = gemm_candidate_count();
  const std::string key =
      dev + "|" + problem + (count == kGemmCandidatesDefault ? "" : "|cand" + std::to_string(count));
  std::string cached;
  if (timing_cache_find_raw(key, &cached)) {
    note_gemm_tuning(/*cache_hit=*/true);
    if (gemm_algo_from_hex(cached, &t.algo)) {
      t.has_algo = true;
      scope->record(a.node.name, kGemmAlgoAttr, encode_gemm_algo_attr(dev, t.algo));
    }
    return;
  }
  scope->bind(l);
  int winner = -1;
  try {
    t.mode = GemmTactic::Mode::kList;
    enqueue(l);
    std::vector<cublasLtMatmulAlgo_t> cands = t.listed;
    t.listed.clear();
    t.mode = GemmTactic::Mode::kRun;
    if (CandidatesObserver& obs = observer()) obs(a.node.name, cands);
    // Candidate 0: the layer as it runs untimed (the heuristic's first); the others forced.
    winner = scope->time_candidates(
        l, int(cands.size()),
        [&](int i, LayerLaunch& ll) {
          t.mode = i == 0 ? GemmTactic::Mode::kRun : GemmTactic::Mode::kForce;
          t.algo = cands[size_t(i)];
          enqueue(ll);
        },
        [](int i) { return "lt:" + std::to_string(i); }, name, problem);
    t.mode = GemmTactic::Mode::kRun;
    t.has_algo = winner >= 0;  // the heuristic's first too: stored, so loading skips the heuristic
    if (t.has_algo) t.algo = cands[size_t(winner)];
  } catch (const Error& e) {  // listing failed: keep the heuristic, time nothing
    t.mode = GemmTactic::Mode::kRun;
    t.has_algo = false;
    KILNRT_LOG(kDebug, name << ": GEMM algorithms not timed: " << e.what());
    return;
  }
  note_gemm_tuning(/*cache_hit=*/false);
  if (winner < 0) return;
  timing_cache_store_raw(key, gemm_algo_to_hex(t.algo));
  scope->record(a.node.name, kGemmAlgoAttr, encode_gemm_algo_attr(dev, t.algo));
}

}  // namespace kilnrt::backends::cuda
