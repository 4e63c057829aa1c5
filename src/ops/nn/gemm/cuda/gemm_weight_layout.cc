// Build-time choice of the stored layout of FusedMatMul weights (gemm_weight_layout.h).
#include "ops/nn/gemm/cuda/gemm_weight_layout.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "ops/cuda/tactic_timing.h"
#include "ops/nn/gemm/cuda/gemm_tactics.h"
#include "ops/nn/gemm/cuda/fused_matmul_layer.h"
#include "core/env_switch.h"
#include "core/logging.h"
#include "cuda/context_guard.h"
#include "ir/graph.h"
#include "passes/value_uses.h"

namespace kilnrt::backends::cuda {
namespace {

namespace kc = kilnrt::cuda;

struct Problem {
  std::string name;
  bool trans_b = false;
  bool lt_gelu = false;
  Precision precision = Precision::kFp32;
};

// One form's GemmArgs on `l`, run forcing `algo`, or (algo null) cuBLASLt's candidates listed into t.listed.
void run_form(const Problem& p, LayerLaunch& l, bool trans_b, GemmTactic& t, const cublasLtMatmulAlgo_t* algo) {
  GemmArgs g = fused_matmul_args(l, trans_b, p.lt_gelu, p.precision, p.name);
  if (algo) {
    t.mode = GemmTactic::Mode::kForce;
    t.algo = *algo;
  } else {
    t.mode = GemmTactic::Mode::kList;
  }
  g.tactic = &t;
  lt_gemm(g, l, p.name);
}

LayerLaunch flipped_launch(const LayerLaunch& l) {
  LayerLaunch f = l;
  Shape& s = f.inputs[1].shape;
  std::swap(s[0], s[1]);
  return f;
}

// True when W stored the other way round is at least kGemmLayoutMargin faster. `l`: the node's shapes (bound to
// scratch buffers here).
bool time_flip(TacticTimingScope& scope, const Problem& p, LayerLaunch& l) {
  scope.bind(l);
  LayerLaunch lf = flipped_launch(l);
  GemmTactic t;
  t.name = p.name;
  run_form(p, l, p.trans_b, t, nullptr);
  const std::vector<cublasLtMatmulAlgo_t> keep = t.listed;
  run_form(p, lf, !p.trans_b, t, nullptr);
  const std::vector<cublasLtMatmulAlgo_t> flip = t.listed;
  if (keep.empty() || flip.empty()) return false;
  // Round 1: every candidate of both forms.
  const int nk = int(keep.size());
  std::vector<cublasLtMatmulAlgo_t> all = keep;
  all.insert(all.end(), flip.begin(), flip.end());
  // Candidate i of `algos` runs W the other way round from index `first_flipped` on.
  auto run = [&](const std::vector<cublasLtMatmulAlgo_t>& algos, int first_flipped) {
    return [&algos, first_flipped, &p, &t](int i, LayerLaunch& ll) {
      if (i >= first_flipped) {
        LayerLaunch f = flipped_launch(ll);
        run_form(p, f, !p.trans_b, t, &algos[size_t(i)]);
      } else {
        run_form(p, ll, p.trans_b, t, &algos[size_t(i)]);
      }
    };
  };
  std::vector<double> ms;
  scope.time_candidates(
      l, int(all.size()), run(all, nk),
      [nk](int i) { return (i < nk ? "kn:" : "nk:") + std::to_string(i < nk ? i : i - nk); }, p.name, "weight layout",
      0.97, &ms);
  int best_keep = -1, best_flip = -1;
  for (int i = 0; i < int(all.size()); ++i) {
    if (ms[size_t(i)] <= 0) continue;
    int& best = i < nk ? best_keep : best_flip;
    if (best < 0 || ms[size_t(i)] < ms[size_t(best)]) best = i;
  }
  if (best_flip < 0) return false;
  if (best_keep < 0) return true;  // only the other form runs
  // Round 2: the two finalists, three more interleaved timings each.
  const std::vector<cublasLtMatmulAlgo_t> finalists = {all[size_t(best_keep)], all[size_t(best_flip)]};
  double sum_keep = 0, sum_flip = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<double> m2;
    scope.time_candidates(
        l, 2, run(finalists, 1), [](int i) { return i ? "nk" : "kn"; }, p.name, "weight layout finalists", 0.97, &m2);
    if (m2[0] <= 0 || m2[1] <= 0) return false;
    sum_keep += m2[0];
    sum_flip += m2[1];
  }
  KILNRT_LOG(kDebug, p.name << ": W " << (p.trans_b ? "[N, K]" : "[K, N]") << " " << sum_keep / 3
                            << " ms, the other way " << sum_flip / 3 << " ms");
  return sum_flip < sum_keep * kGemmLayoutMargin;
}

}  // namespace

void flip_fused_matmul_weight(ir::Graph& graph, ir::Node& node) {
  const std::string& w = node.inputs.at(1);
  const Tensor& src = graph.constants.at(w);
  KILNRT_CHECK(src.dtype() == DType::kFloat32 && src.rank() == 2, kInternal, node.describe(),
               "only a float32 rank-2 W can be stored transposed");
  const int64_t r = src.shape()[0], c = src.shape()[1];
  Tensor dst = Tensor::empty(DType::kFloat32, {c, r});
  const float* s = src.data<float>();
  float* d = dst.data<float>();
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) d[j * r + i] = s[i * c + j];
  graph.constants[w] = std::move(dst);
  auto t = graph.types.find(w);
  if (t != graph.types.end() && t->second.has_shape) t->second.shape = ir::shape_to_sym({c, r});
  ir::Attribute& a = node.attrs["trans_b"];
  const bool was = a.kind == ir::Attribute::Kind::kInt && a.i != 0;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = was ? 0 : 1;
}

GemmLayoutResult choose_gemm_weight_layouts(ir::Graph& graph, int device) {
  GemmLayoutResult r;
  if (!gemm_tuning_enabled() || env_switched_off("KILNRT_GEMM_WEIGHT_LAYOUT")) {
    r.note = "GEMM weight layouts: not timed (KILNRT_GEMM_WEIGHT_LAYOUT=0 or KILNRT_GEMM_TUNING=0)";
    return r;
  }
  const char* env = std::getenv("KILNRT_GEMM_WEIGHT_LAYOUT");
  const bool force = env && std::string(env) == "transposed";  // every qualifying W flipped, nothing timed
  const auto uses = passes::count_value_uses(graph);
  kc::ContextGuard guard(device);
  std::map<std::string, std::string> unused;  // the scope records nothing here
  std::unique_ptr<TacticTimingScope> scope;
  std::string dev;
  for (ir::Node& n : graph.nodes) {
    if (n.domain != "com.kilnrt" || n.op_type != "FusedMatMul" || n.inputs.size() < 2) continue;
    const std::string& w = n.inputs[1];
    auto c = graph.constants.find(w);
    if (c == graph.constants.end() || c->second.dtype() != DType::kFloat32 || c->second.rank() != 2) continue;
    auto u = uses.find(w);
    if (u == uses.end() || u->second != 1) continue;  // shared with another node or a graph output: as stored
    Problem p;
    p.name = n.describe();
    p.precision = node_precision(n);
    p.trans_b = n.attr_int("trans_b", 0) != 0;
    const DType storage = gemm_storage(p.precision);
    const bool gelu = n.attr_string("activation", std::string("none")) == "gelu";
    const bool tanh = n.attr_string("approximate", std::string("none")) == "tanh";
    p.lt_gelu = gelu && (tanh || storage != DType::kFloat32);
    LayerLaunch l;
    const std::string problem = gemm_problem_key(n, graph, storage, &l);
    if (problem.empty()) continue;
    ++r.considered;
    if (dev.empty()) dev = tuning_device_key(device);
    const std::string key = dev + "|wlayout|" + problem;
    std::string cached;
    bool flip = false;
    if (force) {
      flip = true;
    } else if (timing_cache_find_raw(key, &cached) && (cached == "flip" || cached == "keep")) {
      flip = cached == "flip";
    } else {
      if (!scope) scope = std::make_unique<TacticTimingScope>(device, &unused);
      try {
        flip = time_flip(*scope, p, l);
      } catch (const Error& e) {  // a form cuBLASLt refuses: keep W as it is
        KILNRT_LOG(kDebug, p.name << ": weight layout not timed: " << e.what());
        continue;
      }
      ++r.timed;
      timing_cache_store_raw(key, flip ? "flip" : "keep");
    }
    if (!flip) continue;
    flip_fused_matmul_weight(graph, n);
    ++r.flipped;
  }
  std::ostringstream os;
  os << "GEMM weight layouts: " << r.considered << " FusedMatMul weights, " << r.timed << " timed, " << r.flipped
     << " stored transposed";
  r.note = os.str();
  return r;
}

}  // namespace kilnrt::backends::cuda
