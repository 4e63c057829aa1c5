// cuBLASLt GEMM helper (lt_gemm.h).
#include "ops/cuda/lt_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ops/cuda/tactic_timing.h"
#include "core/env_switch.h"
#include "core/logging.h"

namespace kilnrt::backends::cuda {
namespace {

bool split_k_candidates_enabled() { return !env_switched_off("KILNRT_GEMM_SPLITK"); }

template <class T, class D>
struct LtHandle {  // RAII for one cuBLASLt descriptor
  T h = nullptr;
  D destroy;
  ~LtHandle() {
    if (h) destroy(h);
  }
};

// Split-K variants of the heuristic's first algorithms (the tuner's extra candidates): a GEMM with few output tiles
// (batch 1 transformers: M = 128..197 rows) leaves most SMs idle, and cuBLASLt's heuristic seldom offers split-K
// there. Each variant is checked with cublasLtMatmulAlgoCheck and must fit the workspace.
void add_split_k_variants(const CublasLtApi& api, cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                          cublasLtMatrixLayout_t lp, cublasLtMatrixLayout_t lq, cublasLtMatrixLayout_t lc,
                          const GemmArgs& g, std::vector<cublasLtMatmulAlgo_t>& listed) {
  constexpr size_t kBases = 3, kMaxExtra = 12;
  const size_t bases = std::min(kBases, listed.size());
  size_t added = 0;
  auto known = [&](const cublasLtMatmulAlgo_t& a) {
    for (const auto& b : listed)
      if (std::memcmp(&a, &b, sizeof(a)) == 0) return true;
    return false;
  };
  for (size_t i = 0; i < bases && added < kMaxExtra; ++i) {
    const cublasLtMatmulAlgo_t base = listed[i];
    int32_t support = 0;
    uint32_t schemes = 0;
    size_t written = 0;
    if (api.cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &support, sizeof(support),
                                              &written) != CUBLAS_STATUS_SUCCESS ||
        !support)
      continue;
    if (api.cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes, sizeof(schemes),
                                              &written) != CUBLAS_STATUS_SUCCESS)
      continue;
    uint32_t scheme = 0;
    for (uint32_t want : {uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE),
                          uint32_t(CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE), uint32_t(CUBLASLT_REDUCTION_SCHEME_INPLACE)})
      if (!scheme && (schemes & want)) scheme = want;
    if (!scheme) continue;
    for (int32_t split : {2, 3, 4, 6, 8, 12, 16}) {
      if (g.k / split < 64 || added >= kMaxExtra) break;
      cublasLtMatmulAlgo_t v = base;
      if (api.cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof(split)) !=
              CUBLAS_STATUS_SUCCESS ||
          api.cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                                   sizeof(scheme)) != CUBLAS_STATUS_SUCCESS)
        continue;
      cublasLtMatmulHeuristicResult_t checked{};
      if (api.cublasLtMatmulAlgoCheck(handle, desc, lp, lq, lc, lc, &v, &checked) != CUBLAS_STATUS_SUCCESS ||
          checked.workspaceSize > g.workspace_bytes || known(v))
        continue;
      listed.push_back(v);
      ++added;
    }
  }
}

}  // namespace

int gemm_candidate_count() {
  const char* env = std::getenv("KILNRT_GEMM_CANDIDATES");
  const int n = env ? std::atoi(env) : 0;
  return n >= 1 && n <= kGemmCandidatesMax ? n : kGemmCandidatesDefault;
}

void lt_gemm(const GemmArgs& g, LayerLaunch& l, const std::string& name) {
  if (g.m == 0 || g.n == 0) return;
  const CublasLtApi& api = cublaslt_api();
  cublasLtHandle_t handle = l.libs->get_cublaslt();
  using Desc = LtHandle<cublasLtMatmulDesc_t, decltype(api.cublasLtMatmulDescDestroy)>;
  using Layout = LtHandle<cublasLtMatrixLayout_t, decltype(api.cublasLtMatrixLayoutDestroy)>;
  using Pref = LtHandle<cublasLtMatmulPreference_t, decltype(api.cublasLtMatmulPreferenceDestroy)>;
  Desc desc{nullptr, api.cublasLtMatmulDescDestroy};
  KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulDescCreate(&desc.h, g.compute, CUDA_R_32F), name);
  const cublasOperation_t op_p = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // P = op(B)^T, stored B
  const cublasOperation_t op_q = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // Q = op(A)^T, stored A
  KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSA, &op_p, sizeof(op_p)),
                        name);
  KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSB, &op_q, sizeof(op_q)),
                        name);
  if (g.bias || g.relu || g.gelu) {
    const cublasLtEpilogue_t epi = g.gelu   ? (g.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
                                   : g.bias ? (g.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                            : CUBLASLT_EPILOGUE_RELU;
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)),
                          name);
    if (g.bias)
      KILNRT_CUBLASLT_CHECK(
          api.cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)), name);
  }
  auto make_layout = [&](Layout& lay, uint64_t rows, uint64_t cols, int64_t ld, int64_t stride, cudaDataType_t t) {
    KILNRT_CUBLASLT_CHECK(api.cublasLtMatrixLayoutCreate(&lay.h, t, rows, cols, ld), name);
    if (g.batch > 1) {
      const int32_t count = static_cast<int32_t>(g.batch);
      KILNRT_CUBLASLT_CHECK(
          api.cublasLtMatrixLayoutSetAttribute(lay.h, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)), name);
      KILNRT_CUBLASLT_CHECK(api.cublasLtMatrixLayoutSetAttribute(lay.h, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                                 &stride, sizeof(stride)),
                            name);
    }
  };
  Layout lp{nullptr, api.cublasLtMatrixLayoutDestroy}, lq{nullptr, api.cublasLtMatrixLayoutDestroy},
      lc{nullptr, api.cublasLtMatrixLayoutDestroy};
  // Stored B: row-major k x n (ld n) is column-major n x k; transposed: row-major n x k is column-major k x n.
  if (g.trans_b)
    make_layout(lp, g.k, g.n, g.k, g.stride_b, g.ab_type);
  else
    make_layout(lp, g.n, g.k, g.n, g.stride_b, g.ab_type);
  if (g.trans_a)
    make_layout(lq, g.m, g.k, g.m, g.stride_a, g.ab_type);
  else
    make_layout(lq, g.k, g.m, g.k, g.stride_a, g.ab_type);
  make_layout(lc, g.n, g.m, g.n, g.stride_c, g.c_type);
  Pref pref{nullptr, api.cublasLtMatmulPreferenceDestroy};
  KILNRT_CUBLASLT_CHECK(api.cublasLtMatmulPreferenceCreate(&pref.h), name);
  const uint64_t ws = g.workspace_bytes;
  KILNRT_CUBLASLT_CHECK(
      api.cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
      name);
  GemmTactic* t = g.tactic;
  const cublasLtMatmulAlgo_t* algo = nullptr;
  if (t && t->mode != GemmTactic::Mode::kList && (t->mode == GemmTactic::Mode::kForce || t->has_algo)) {
    // A stored / forced algorithm: cuBLASLt checks it against this problem, and it must fit the workspace.
    cublasLtMatmulHeuristicResult_t checked{};
    const cublasStatus_t st = api.cublasLtMatmulAlgoCheck(handle, desc.h, lp.h, lq.h, lc.h, lc.h, &t->algo, &checked);
    const bool fits = st == CUBLAS_STATUS_SUCCESS && checked.workspaceSize <= g.workspace_bytes;
    if (fits) {
      algo = &t->algo;
    } else if (t->mode == GemmTactic::Mode::kForce) {
      KILNRT_CHECK(false, kUnsupported, name, "cuBLASLt refuses this algorithm (status " << int(st) << ")");
    } else if (!t->warned.exchange(true)) {
      KILNRT_LOG(kWarning, name << ": cuBLASLt refuses the stored GEMM algorithm (status " << int(st) << ", workspace "
                                << checked.workspaceSize << " of " << g.workspace_bytes
                                << " bytes); cuBLASLt's heuristic is used");
      note_tactic_fallback();
    }
  }
  constexpr int kMaxResults = std::max(8, kGemmCandidatesMax);
  cublasLtMatmulHeuristicResult_t results[kMaxResults] = {};
  if (!algo) {
    const bool listing = t && t->mode == GemmTactic::Mode::kList;
    int returned = 0;
    const int want = listing ? gemm_candidate_count() : std::min(8, std::max(1, g.algo_index + 1));
    KILNRT_CUBLASLT_CHECK(
        api.cublasLtMatmulAlgoGetHeuristic(handle, desc.h, lp.h, lq.h, lc.h, lc.h, pref.h, want, results, &returned),
        name);
    KILNRT_CHECK(returned > 0, kCuda, name,
                 "cuBLASLt found no algorithm for a " << g.m << "x" << g.n << "x" << g.k << " GEMM");
    if (listing) {  // the tuner's candidates; nothing runs
      t->listed.clear();
      for (int i = 0; i < returned; ++i)
        if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= g.workspace_bytes)
          t->listed.push_back(results[i].algo);
      if (split_k_candidates_enabled()) add_split_k_variants(api, handle, desc.h, lp.h, lq.h, lc.h, g, t->listed);
      return;
    }
    algo = &results[std::min(g.algo_index, returned - 1)].algo;
  }
  KILNRT_CUBLASLT_CHECK(
      api.cublasLtMatmul(handle, desc.h, &g.alpha, g.b, lp.h, g.a, lq.h, &g.beta, g.c_in ? g.c_in : g.c, lc.h, g.c,
                         lc.h, algo, g.workspace, g.workspace_bytes, reinterpret_cast<cudaStream_t>(l.stream)),
      name);
}

}  // namespace kilnrt::backends::cuda
