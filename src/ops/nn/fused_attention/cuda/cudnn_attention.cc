// cuDNN SDPA tactic of the FusedAttention layer (cudnn_attention.h): the backend operation graph, engine search,
// execution plans per shape, the build-time choice and the run.
#include "ops/nn/fused_attention/cuda/cudnn_attention.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "ops/cuda/tactic_timing.h"
#include "cuda/cuda_libs.h"
#include "ops/nn/gemm/cuda/gemm_tactics.h"
#include "core/logging.h"
#include "cuda/capture_safety.h"
#include "cuda/driver_api.h"

namespace kilnrt::backends::cuda {

namespace k = kilnrt::cuda::kernels;

namespace {

using Dims = std::array<int64_t, 4>;

// Tensor ids in the variant pack.
enum : int64_t { kUidQ = 1, kUidK, kUidV, kUidO, kUidMask, kUidScale, kUidStats, kUidVirtual = 100 };

// One backend descriptor, destroyed with its owner (leaked at exit / in a forked child, like the handles).
struct Desc {
  const CudnnGraphApi* api = nullptr;
  cudnnBackendDescriptor_t d = nullptr;
  Desc() = default;
  Desc(Desc&& o) noexcept : api(o.api), d(std::exchange(o.d, nullptr)) {}
  Desc& operator=(Desc&& o) noexcept {
    std::swap(api, o.api);
    std::swap(d, o.d);
    return *this;
  }
  ~Desc() {
    if (d && api && kilnrt::cuda::cleanup_allowed()) api->cudnnBackendDestroyDescriptor(d);
  }
};

// Throws kUnsupported naming the node and the step, with cuDNN's status and its last error message.
void check_status(cudnnStatus_t st, const char* step, const std::string& node) {
  if (st == CUDNN_STATUS_SUCCESS) return;
  const CudnnApi& c = cudnn_api();
  const CudnnGraphApi& g = cudnn_graph_api();
  char last[1024] = {};
  g.cudnnGetLastErrorString(last, sizeof(last) - 1);
  std::ostringstream os;
  os << "cuDNN SDPA: " << step << " failed: " << c.cudnnGetErrorString(st) << " (" << int(st) << ")";
  if (last[0]) os << ": " << last;
  throw Error(ErrorCode::kUnsupported, os.str(), node);
}

// Builds one operation graph; every call checks its status.
class GraphBuilder {
 public:
  GraphBuilder(const std::string& node) : g_(cudnn_graph_api()), node_(node) {}

  Desc make(cudnnBackendDescriptorType_t t, const char* what) {
    Desc d;
    d.api = &g_;
    check_status(g_.cudnnBackendCreateDescriptor(t, &d.d), what, node_);
    return d;
  }
  void set(Desc& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n, const void* v,
           const char* what) {
    check_status(g_.cudnnBackendSetAttribute(d.d, name, type, n, v), what, node_);
  }
  void set_desc(Desc& d, cudnnBackendAttributeName_t name, const Desc& v, const char* what) {
    set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v.d, what);
  }
  void finalize(Desc& d, const char* what) { check_status(g_.cudnnBackendFinalize(d.d), what, node_); }

  // A tensor; dims of extent 1 get the packed stride (cuDNN reads size-1 dims as broadcasts in the bias).
  const Desc& tensor(int64_t uid, cudnnDataType_t dt, Dims dims, Dims strides, bool is_virtual, bool by_value = false) {
    for (int i = 3; i >= 0; --i)
      if (dims[size_t(i)] == 1) strides[size_t(i)] = i == 3 ? 1 : strides[size_t(i + 1)] * dims[size_t(i + 1)];
    Desc d = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor descriptor");
    const int64_t align = 16;
    const bool virt = is_virtual, byv = by_value;
    set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor data type");
    set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data(), "tensor dims");
    set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(), "tensor strides");
    set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor uid");
    set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
    set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt, "tensor virtual");
    if (byv) set(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byv, "tensor by value");
    finalize(d, "tensor descriptor");
    keep_.push_back(std::move(d));
    return keep_.back();
  }
  const Desc& virt(cudnnDataType_t dt, Dims dims) {
    const Dims strides{dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    return tensor(kUidVirtual + int64_t(keep_.size()), dt, dims, strides, true);
  }

  void matmul(const Desc& a, const Desc& b, const Desc& c) {
    Desc m = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul descriptor");
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    set(m, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, "matmul compute type");
    finalize(m, "matmul descriptor");
    Desc op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul operation");
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a, "matmul A");
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b, "matmul B");
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c, "matmul C");
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, m, "matmul desc");
    finalize(op, "matmul operation");
    keep_.push_back(std::move(m));
    add_op(std::move(op));
  }
  void pointwise(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Desc& y) {
    Desc pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise descriptor");
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f32, "pointwise precision");
    finalize(pw, "pointwise descriptor");
    Desc op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise operation");
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw, "pointwise desc");
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, "pointwise X");
    if (b) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b, "pointwise B");
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, "pointwise Y");
    finalize(op, "pointwise operation");
    keep_.push_back(std::move(pw));
    add_op(std::move(op));
  }
  void reduce(cudnnReduceTensorOp_t mode, const Desc& x, const Desc& y) {
    Desc r = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction descriptor");
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode, "reduction operator");
    set(r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, "reduction compute type");
    finalize(r, "reduction descriptor");
    Desc op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction operation");
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x, "reduction X");
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y, "reduction Y");
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, r, "reduction desc");
    finalize(op, "reduction operation");
    keep_.push_back(std::move(r));
    add_op(std::move(op));
  }

  Desc operation_graph(cudnnHandle_t h) {
    Desc og = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
    std::vector<cudnnBackendDescriptor_t> ops;
    for (const Desc& o : ops_) ops.push_back(o.d);
    set(og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, "graph handle");
    set(og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()), ops.data(),
        "graph operations");
    finalize(og, "operation graph");
    return og;
  }

  std::vector<Desc> take_all() {
    std::vector<Desc> all;
    for (Desc& d : keep_) all.push_back(std::move(d));
    for (Desc& o : ops_) all.push_back(std::move(o));
    keep_.clear();
    ops_.clear();
    return all;
  }

 private:
  void add_op(Desc op) { ops_.push_back(std::move(op)); }
  const CudnnGraphApi& g_;
  std::string node_;
  std::deque<Desc> keep_;  // tensors and op descriptors (stable addresses)
  std::vector<Desc> ops_;
};

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

std::atomic<int64_t> g_runs{0};

}  // namespace

// One operation graph (one variant) and the execution plans made from its engine configurations.
struct SdpaGraph {
  std::vector<Desc> descs;  // tensors and operations the graph refers to
  Desc graph;
  bool mask = false;
  int64_t stats_bytes = 0;  // the softmax statistics output (graphs that need it), at the workspace's start
  std::string variant;
};

struct CudnnSdpaPlan {
  std::shared_ptr<SdpaGraph> graph;
  Desc config, plan;
  int64_t workspace = 0;  // cuDNN's request
  std::string label;      // variant and engine configuration
};

namespace {

// Per cuDNN handle (LibraryHandles::cudnn_plans): problem -> the finalizable plans found (in heuristic order) and
// why the others were refused.
struct PlanEntry {
  std::vector<std::shared_ptr<CudnnSdpaPlan>> plans;
  int searched = 0;  // the most plans asked for so far (a search for more starts again)
  std::string errors;
};
struct PlanCache {
  std::mutex mu;
  std::map<std::string, PlanEntry> entries;
};

PlanCache& plan_cache(LibraryHandles& libs) {
  if (!libs.cudnn_plans) libs.cudnn_plans = std::make_shared<PlanCache>();
  return *static_cast<PlanCache*>(libs.cudnn_plans.get());
}

std::mutex g_report_mu;
std::string& last_report() {
  static std::string* s = new std::string;  // leaked: read at exit
  return *s;
}

}  // namespace

int64_t cudnn_attention_runs() { return g_runs.load(); }

std::string cudnn_attention_last_report() {
  std::lock_guard<std::mutex> lock(g_report_mu);
  return last_report();
}

int cudnn_attention_mode() {
  if (env_is("KILNRT_CUDNN_ATTENTION", "0")) return 0;
  if (env_is("KILNRT_CUDNN_ATTENTION", "force")) return 2;
  return 1;
}

std::string attention_device_part(const std::string& device_key) {
  // "<GPU>|sm_XY|cudnn V|cublaslt V" -> "<GPU>|sm_XY"
  const size_t first = device_key.find('|');
  if (first == std::string::npos) return device_key;
  const size_t second = device_key.find('|', first + 1);
  return second == std::string::npos ? device_key : device_key.substr(0, second);
}

std::string sdpa_precheck(const k::AttentionArgs& a, bool zero_masked_rows) {
  if (a.dt != 1 && a.dt != 2) return "cuDNN SDPA takes float16 / bfloat16 storage only";
  if (a.d != a.dv || (a.d != 64 && a.d != 128)) return "cuDNN SDPA is tried for head sizes 64 and 128 (D == Dv) only";
  if (a.qs[3] != 1 || a.ks[3] != 1 || a.vs[3] != 1 || a.os[3] != 1) return "head rows must be contiguous";
  for (const int64_t* s : {a.qs, a.ks, a.vs, a.os})
    for (int i = 0; i < 3; ++i)
      if (s[i] % 8 != 0 && !(i == 0 && a.b0 == 1) && !(i == 1 && a.b1 == 1)) return "strides must be multiples of 8";
  if (a.mask) {
    if (!zero_masked_rows) return "a mask needs zero_masked_rows = 1 (fully masked rows: cuDNN gives zeros)";
    if (a.ms[3] != 1) return "the mask's key stride must be 1";
  }
  return "";
}

std::string sdpa_problem_key(const k::AttentionArgs& a) {
  std::ostringstream os;
  os << "dt" << a.dt << " b" << a.b0 << "x" << a.b1 << " s" << a.sq << "x" << a.sk << " d" << a.d << "x" << a.dv;
  for (const int64_t* s : {a.qs, a.ks, a.vs, a.os, a.ms})
    os << " " << s[0] << "," << s[1] << "," << s[2] << "," << s[3];
  os << " m" << (a.mask ? 1 : 0) << " scale" << a.scale;
  return os.str();
}

namespace {

// The graph of `a` in one variant: the softmax statistics (log-sum-exp per row) as an output or not, P in the
// storage dtype or float32. cuDNN 9.14 on the H100 plans the first (statistics, 16-bit P) only; the others stay
// as fallbacks for other versions.
std::shared_ptr<SdpaGraph> build_graph(const k::AttentionArgs& a, cudnnHandle_t h, bool stats, bool p_storage,
                                       const std::string& node) {
  GraphBuilder b(node);
  const cudnnDataType_t io = a.dt == 1 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const int64_t B = a.b0, H = a.b1, Sq = a.sq, Sk = a.sk, D = a.d, Dv = a.dv;
  const Desc& q = b.tensor(kUidQ, io, {B, H, Sq, D}, {a.qs[0], a.qs[1], a.qs[2], a.qs[3]}, false);
  const Desc& kt = b.tensor(kUidK, io, {B, H, D, Sk}, {a.ks[0], a.ks[1], a.ks[3], a.ks[2]}, false);  // K^T
  const Desc& v = b.tensor(kUidV, io, {B, H, Sk, Dv}, {a.vs[0], a.vs[1], a.vs[2], a.vs[3]}, false);
  const Desc& o = b.tensor(kUidO, io, {B, H, Sq, Dv}, {a.os[0], a.os[1], a.os[2], a.os[3]}, false);
  const Desc& scale = b.tensor(kUidScale, f32, {1, 1, 1, 1}, {1, 1, 1, 1}, false, /*by_value=*/true);
  const Dims sdims{B, H, Sq, Sk}, rdims{B, H, Sq, 1};
  const Desc& s = b.virt(f32, sdims);
  b.matmul(q, kt, s);
  const Desc& scaled = b.virt(f32, sdims);
  b.pointwise(CUDNN_POINTWISE_MUL, s, &scale, scaled);
  const Desc* logits = &scaled;
  if (a.mask) {
    const Dims mdims{a.ms[0] ? B : 1, a.ms[1] ? H : 1, a.ms[2] ? Sq : 1, Sk};
    const Desc& mask = b.tensor(kUidMask, io, mdims, {a.ms[0], a.ms[1], a.ms[2], a.ms[3]}, false);
    const Desc& biased = b.virt(f32, sdims);
    b.pointwise(CUDNN_POINTWISE_ADD, scaled, &mask, biased);
    logits = &biased;
  }
  const Desc& mx = b.virt(f32, rdims);
  b.reduce(CUDNN_REDUCE_TENSOR_MAX, *logits, mx);
  const Desc& centered = b.virt(f32, sdims);
  b.pointwise(CUDNN_POINTWISE_SUB, *logits, &mx, centered);
  const Desc& e = b.virt(f32, sdims);
  b.pointwise(CUDNN_POINTWISE_EXP, centered, nullptr, e);
  const Desc& sum = b.virt(f32, rdims);
  b.reduce(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  if (stats) {
    const Desc& lg = b.virt(f32, rdims);
    b.pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, lg);
    const Desc& st = b.tensor(kUidStats, f32, rdims, {H * Sq, Sq, 1, 1}, false);
    b.pointwise(CUDNN_POINTWISE_ADD, mx, &lg, st);
  }
  const Desc& p = b.virt(p_storage ? io : f32, sdims);
  b.pointwise(CUDNN_POINTWISE_DIV, e, &sum, p);
  b.matmul(p, v, o);
  auto g = std::make_shared<SdpaGraph>();
  g->graph = b.operation_graph(h);
  g->descs = b.take_all();
  g->mask = a.mask != nullptr;
  g->stats_bytes = stats ? align_up(B * H * Sq * 4, 256) : 0;
  g->variant = std::string(stats ? "stats" : "no stats") + (p_storage ? ", 16-bit P" : ", float32 P");
  return g;
}

// Up to `want` execution plans of `a`: the engine configurations of cuDNN's heuristic list (mode A; the fallback
// list when A has none) whose plans finalize, in the list's order, from the first graph variant that has any.
// `errors` gets what was refused, with cuDNN's status and last error message.
std::vector<std::shared_ptr<CudnnSdpaPlan>> build_plans(const k::AttentionArgs& a, cudnnHandle_t h, int want,
                                                        const std::string& node, std::string* errors) {
  const CudnnGraphApi& api = cudnn_graph_api();
  std::vector<std::shared_ptr<CudnnSdpaPlan>> out;
  for (const auto& [stats, p16] : {std::pair<bool, bool>{true, true}, {false, true}, {true, false}, {false, false}}) {
    std::shared_ptr<SdpaGraph> g;
    try {
      g = build_graph(a, h, stats, p16, node);
    } catch (const Error& e) {
      *errors += std::string("\n  [") + (stats ? "stats" : "no stats") + (p16 ? ", 16-bit P" : ", float32 P") +
                 "] graph: " + e.message();
      continue;
    }
    GraphBuilder b(node);
    for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      const std::string mname = mode == CUDNN_HEUR_MODE_A ? "heuristic A" : "fallback list";
      try {
        Desc heur = b.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristic");
        b.set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, g->graph, "heuristic graph");
        b.set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristic mode");
        b.finalize(heur, "engine heuristic");
        int64_t count = 0;
        check_status(api.cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                                  0, &count, nullptr),
                     "heuristic result count", node);
        std::vector<Desc> cfgs;
        std::vector<cudnnBackendDescriptor_t> raw;
        for (int64_t i = 0; i < count; ++i) {
          cfgs.push_back(b.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config"));
          raw.push_back(cfgs.back().d);
        }
        int64_t got = 0;
        if (count > 0)
          check_status(api.cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
                       "heuristic results", node);
        if (got <= 0) *errors += "\n  [" + g->variant + ", " + mname + "] no engine configuration";
        for (int64_t i = 0; i < got && i < count && int(out.size()) < want; ++i) {
          const std::string label = g->variant + ", " + mname + " #" + std::to_string(i);
          try {
            Desc ep = b.make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
            b.set(ep, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, "plan handle");
            b.set_desc(ep, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfgs[size_t(i)], "plan engine config");
            b.finalize(ep, "execution plan");
            int64_t ws = 0, n = 0;
            check_status(api.cudnnBackendGetAttribute(ep.d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                                      1, &n, &ws),
                         "plan workspace size", node);
            auto plan = std::make_shared<CudnnSdpaPlan>();
            plan->graph = g;
            plan->config = std::move(cfgs[size_t(i)]);
            plan->plan = std::move(ep);
            plan->workspace = ws;
            plan->label = label;
            out.push_back(std::move(plan));
          } catch (const Error& e) {
            *errors += "\n  [" + label + "] " + e.message();
          }
        }
      } catch (const Error& e) {
        *errors += "\n  [" + g->variant + ", " + mname + "] " + e.message();
      }
      if (!out.empty()) return out;  // the fallback list only when heuristic A gave nothing
    }
  }
  return out;
}

}  // namespace

CudnnAttention::CudnnAttention() = default;
CudnnAttention::~CudnnAttention() = default;

std::shared_ptr<CudnnSdpaPlan> CudnnAttention::plan_for(const k::AttentionArgs& a, LayerLaunch& l, int index,
                                                        const std::string& node, int* available) {
  cudnnHandle_t h = l.libs->get_cudnn();
  PlanCache& cache = plan_cache(*l.libs);
  const std::string key = sdpa_problem_key(a);
  std::lock_guard<std::mutex> lock(cache.mu);
  PlanEntry& e = cache.entries[key];
  const int want = std::max(index + 1, available ? kCudnnAttentionMaxConfigs : 1);
  if (e.searched < want && int(e.plans.size()) == e.searched) {  // more may exist: search again for `want`
    // Planning may compile and load kernels: never inside a capture (the warm-up run plans), and exclusive.
    kilnrt::cuda::RelaxedCaptureMode relaxed;
    kilnrt::cuda::CaptureGate gate(l.libs->device, kilnrt::cuda::CaptureGate::Kind::kExclusive);
    const auto t0 = std::chrono::steady_clock::now();
    std::string errors;
    e.plans = build_plans(a, h, want, node, &errors);
    e.searched = want;
    e.errors = errors;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::ostringstream rep;
    rep << node << " (" << key << "): " << e.plans.size() << " plan(s) in " << ms << " ms";
    for (const auto& p : e.plans) rep << "\n  plan: " << p->label << ", workspace " << p->workspace << " bytes";
    if (!errors.empty()) rep << "\n  refused:" << errors;
    KILNRT_LOG(kDebug, "cuDNN SDPA: " << rep.str());
    std::lock_guard<std::mutex> rl(g_report_mu);
    last_report() = rep.str();
  }
  if (available) *available = int(e.plans.size());
  KILNRT_CHECK(index < int(e.plans.size()), kUnsupported, node,
               "cuDNN has no engine configuration #" << index << " for this attention (" << e.plans.size()
                                                     << " found):" << e.errors);
  return e.plans[size_t(index)];
}

bool CudnnAttention::run(const k::AttentionArgs& a, LayerLaunch& l, const std::string& node) {
  if (forced_ == kForceKernel) return false;
  const bool listing = forced_ == kList, forced = forced_ >= 0;
  if (!listing && !forced && (config_ < 0 || failed_.load())) return false;
  const int index = forced ? forced_ : config_;
  std::string why = l.libs ? sdpa_precheck(a, zero_masked_rows_) : "no library handles";
  for (const void* p : {a.q, a.k, a.v, a.mask, static_cast<const void*>(a.o)})
    if (why.empty() && reinterpret_cast<uintptr_t>(p) % 16 != 0) why = "an operand is not 16-byte aligned";
  if (listing) {  // count the configurations; nothing runs
    listed_ = 0;
    if (why.empty()) {
      try {
        plan_for(a, l, 0, node, &listed_);
      } catch (const Error& e) {
        KILNRT_LOG(kDebug, node << ": " << e.message());
      }
    } else {
      KILNRT_LOG(kDebug, node << ": cuDNN SDPA not tried: " << why);
    }
    return true;
  }
  if (!why.empty()) {
    KILNRT_CHECK(!forced, kUnsupported, node, why);
    return false;  // this call's shapes / pointers: the kernel
  }
  std::shared_ptr<CudnnSdpaPlan> plan;
  int64_t need = 0;
  try {
    plan = plan_for(a, l, index, node, nullptr);
    need = plan->workspace + plan->graph->stats_bytes;
    KILNRT_CHECK(need <= int64_t(l.workspace_bytes) && (l.workspace || need == 0), kUnsupported, node,
                 "cuDNN SDPA needs " << need << " bytes of workspace, the layer has " << l.workspace_bytes);
  } catch (const Error& e) {
    if (forced) throw;
    if (!failed_.exchange(true)) {
      KILNRT_LOG(kWarning, node << ": the engine chose cuDNN's attention, which does not plan here; the kernel runs "
                                   "instead (rebuild the engine to time again): "
                                << e.message());
      note_tactic_fallback();
    }
    return false;
  }
  const CudnnApi& api = cudnn_api();
  const CudnnGraphApi& g = cudnn_graph_api();
  cudnnHandle_t h = l.libs->get_cudnn();
  KILNRT_CUDNN_CHECK(api, api.cudnnSetStream(h, reinterpret_cast<cudaStream_t>(l.stream)), node);
  float scale = a.scale;
  char* ws = static_cast<char*>(l.workspace);
  std::vector<int64_t> uids{kUidQ, kUidK, kUidV, kUidO, kUidScale};
  std::vector<void*> ptrs{const_cast<void*>(a.q), const_cast<void*>(a.k), const_cast<void*>(a.v), a.o, &scale};
  if (plan->graph->mask) {
    uids.push_back(kUidMask);
    ptrs.push_back(const_cast<void*>(a.mask));
  }
  if (plan->graph->stats_bytes) {
    uids.push_back(kUidStats);
    ptrs.push_back(ws);
  }
  void* cudnn_ws = plan->workspace ? ws + plan->graph->stats_bytes : nullptr;
  GraphBuilder b(node);
  Desc vp = b.make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
  b.set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()), uids.data(), "variant uids");
  b.set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(ptrs.size()), ptrs.data(),
        "variant pointers");
  b.set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &cudnn_ws, "variant workspace");
  b.finalize(vp, "variant pack");
  const cudnnStatus_t st = g.cudnnBackendExecute(h, plan->plan.d, vp.d);
  if (st != CUDNN_STATUS_SUCCESS) {
    try {
      check_status(st, "execute", node);
    } catch (const Error& e) {
      throw Error(ErrorCode::kCuda, e.message(), node);
    }
  }
  g_runs.fetch_add(1);
  return true;
}

namespace {

// The timing-cache key of a FusedAttention node: storage, every input's shape, the layout attributes.
std::string attention_key(const ir::Node& node, const ir::Graph& graph, DType storage, LayerLaunch* l) {
  std::ostringstream os;
  os << "attn " << dtype_name(storage);
  l->inputs.clear();
  for (const std::string& in : node.inputs) {
    LayerTensor t;
    t.dtype = storage;
    t.present = !in.empty();
    if (t.present) {
      const ir::TensorType* ty = graph.type_of(in);
      if (!ty || !ty->has_shape) return "";
      t.shape = ir::sym_shape_to_shape(ty->shape);
      for (int64_t d : t.shape)
        if (d <= 0) return "";
    }
    os << " [";
    for (int64_t d : t.shape) os << d << ",";
    os << "]";
    l->inputs.push_back(t);
  }
  if (node.outputs.empty()) return "";
  const ir::TensorType* yt = graph.type_of(node.outputs[0]);
  if (!yt || !yt->has_shape) return "";
  LayerOutput y;
  y.dtype = storage;
  y.present = true;
  y.shape = ir::sym_shape_to_shape(yt->shape);
  for (int64_t d : y.shape)
    if (d <= 0) return "";
  l->outputs = {y};
  for (const char* attr : {"q_perm", "k_perm", "v_perm", "out_perm", "q_part", "k_part", "v_part"})
    if (node.has_attr(attr)) {
      os << " " << attr << "=";
      for (int64_t v : node.attrs.at(attr).ints) os << v << ",";
    }
  os << " scale=" << node.attr_float("scale", 1.f) << " zmr=" << node.attr_int("zero_masked_rows", 0);
  return os.str();
}

}  // namespace

namespace {

// kAttentionTacticAttr / timing-cache values: "kernel", "cudnn" (configuration 0), "cudnn:<i>".
std::string choice_name(int config) {
  return config < 0 ? "kernel" : config == 0 ? "cudnn" : "cudnn:" + std::to_string(config);
}
bool parse_choice_name(const std::string& s, int* config) {
  if (s == "kernel") return *config = -1, true;
  if (s == "cudnn") return *config = 0, true;
  if (s.rfind("cudnn:", 0) != 0 || s.size() == 6 || s.size() > 8) return false;
  for (size_t i = 6; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  *config = std::stoi(s.substr(6));
  return true;
}

}  // namespace

void CudnnAttention::setup(const LayerCreateArgs& a, bool zero_masked_rows,
                           const std::function<void(LayerLaunch&)>& enqueue) {
  zero_masked_rows_ = zero_masked_rows;
  const int mode = cudnn_attention_mode();
  if (mode == 0) return;
  const std::string name = a.node.describe();
  if (a.node.has_attr(kAttentionTacticAttr)) {  // a built engine: the stored choice, never timed again
    const std::string v = a.node.attr_string(kAttentionTacticAttr, std::string());
    const size_t hash = v.rfind('#');
    int config = -1;
    if (hash == std::string::npos || !parse_choice_name(v.substr(hash + 1), &config)) {
      KILNRT_LOG(kWarning, name << ": malformed " << kAttentionTacticAttr << " attribute '" << v
                                << "'; the attention kernel runs");
      note_tactic_fallback();
    } else if (config >= 0) {
      const std::string here = attention_device_part(tuning_device_key(a.device));
      if (v.substr(0, hash) == here) {
        config_ = config;
      } else {
        KILNRT_LOG(kWarning, name << ": cuDNN's attention was chosen on '" << v.substr(0, hash) << "', this is '"
                                  << here << "'; the attention kernel runs (rebuild the engine here to time again)");
        note_tactic_fallback();
      }
    }
    return;
  }
  TacticTimingScope* scope = TacticTimingScope::open_scope();
  if (!scope || a.node.inputs.empty()) return;
  DType storage = value_dtype(a.graph, a.node.inputs[0]);
  if (storage == DType::kFloat32) storage = gemm_storage(node_precision(a.node));
  if (storage != DType::kFloat16 && storage != DType::kBFloat16) return;  // cuDNN's SDPA: 16-bit only
  LayerLaunch l;
  const std::string problem = attention_key(a.node, a.graph, storage, &l);
  if (problem.empty()) return;
  const std::string dev = tuning_device_key(a.device);
  const std::string here = attention_device_part(dev);
  const std::string key = dev + "|" + problem + (mode == 2 ? " force" : "");
  std::string cached;
  int config = -1;
  if (timing_cache_find_raw(key, &cached) && parse_choice_name(cached, &config)) {
    config_ = config;
    scope->record(a.node.name, kAttentionTacticAttr, here + "#" + cached);
    return;
  }
  int winner = -1, listed = 0;
  try {
    scope->bind(l);
    auto with_forced = [&](int f, LayerLaunch& ll) {
      forced_ = f;
      try {
        enqueue(ll);
      } catch (...) {
        forced_ = kNone;
        throw;
      }
      forced_ = kNone;
    };
    with_forced(kList, l);  // plans cuDNN's configurations on the tuner's handle; runs nothing
    listed = listed_;
    if (mode == 2) {  // force: the fastest cuDNN configuration whenever one plans and runs
      winner = scope->time_candidates(
          l, listed, [&](int i, LayerLaunch& ll) { with_forced(i, ll); },
          [](int i) { return "cudnn-sdpa#" + std::to_string(i); }, name, problem);
      winner = winner < 0 ? 0 : winner + 1;
    } else {  // candidate 0: the kernel (incumbent); i >= 1: cuDNN configuration i - 1
      // cuDNN must be 10% faster alone to be taken: on the H100 its configuration timed 2% ahead of the lean kernel
      // alone at ViT b32 but lost by 4% per layer inside the engine (2.458 vs 2.418 ms, s6_attn), and its plan costs
      // 0.2-2 s at the first run.
      constexpr double kCudnnMargin = 0.90;
      winner = scope->time_candidates(
          l, 1 + listed, [&](int i, LayerLaunch& ll) { with_forced(i == 0 ? kForceKernel : i - 1, ll); },
          [](int i) { return i == 0 ? std::string("kernel") : "cudnn-sdpa#" + std::to_string(i - 1); }, name, problem,
          kCudnnMargin);
    }
  } catch (const Error& e) {
    KILNRT_LOG(kDebug, name << ": attention tactics not timed: " << e.what());
    winner = -1;
  }
  forced_ = kNone;
  if (winner < 0) return;
  config_ = winner - 1;  // -1: the kernel
  const std::string choice = choice_name(config_);
  timing_cache_store_raw(key, choice);
  scope->record(a.node.name, kAttentionTacticAttr, here + "#" + choice);
}

}  // namespace kilnrt::backends::cuda
