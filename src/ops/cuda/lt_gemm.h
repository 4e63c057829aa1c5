// Row-major GEMMs on cuBLASLt for the CUDA layers (MatMul, Gemm, and 1x1 convolutions: conv tactic cublaslt:<i>,
// conv_tactics.h): float32 compute, optional bias / ReLU epilogue, C read with beta from the output or another buffer.
// Also the algorithm choice of one GEMM layer (GemmTactic) and how many heuristic results the GEMM tactic timing lists.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "cuda/cuda_libs.h"

namespace kilnrt::backends::cuda {

constexpr int kGemmCandidatesDefault = 12;  // heuristic results timed per GEMM problem
constexpr int kGemmCandidatesMax = 64;
// kGemmCandidatesDefault, or KILNRT_GEMM_CANDIDATES=N (1..kGemmCandidatesMax; another count is another timing-cache
// entry).
int gemm_candidate_count();

// The cuBLASLt algorithm of one GEMM layer. lt_gemm reads it through GemmArgs::tactic; the GEMM tactic timing
// (ops/nn/gemm/cuda/gemm_tactics.h) fills it.
struct GemmTactic {
  enum class Mode {
    kRun,    // the stored algorithm when has_algo (checked at every call, heuristic when refused), else heuristic
    kForce,  // tuning: exactly `algo` (throws when cuBLASLt refuses it)
    kList,   // tuning: lt_gemm fills `listed` with the heuristic's candidates and runs nothing
  };
  Mode mode = Mode::kRun;
  bool has_algo = false;
  cublasLtMatmulAlgo_t algo{};
  std::vector<cublasLtMatmulAlgo_t> listed;
  std::atomic<bool> warned{false};  // the stored algorithm was refused once (warning logged)
  std::string name;                 // the layer, for the warning
  // Appended to the layer's tactic(): "|timed-algo" while a stored algorithm is in use.
  std::string suffix() const { return has_algo ? "|timed-algo" : ""; }
};

struct GemmArgs {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;  // float32, or 16-bit (ab_type) for --fp16 / --bf16 layers
  const void* b = nullptr;
  void* c = nullptr;
  cudaDataType_t ab_type = CUDA_R_32F;
  cudaDataType_t c_type = CUDA_R_32F;                // 16-bit in --fp16 / --bf16 engines (activations stored 16-bit)
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;  // COMPUTE_32F_FAST_TF32 for --tf32 layers
  void* workspace = nullptr;                         // cuBLASLt workspace (what the 16-bit operands leave free)
  size_t workspace_bytes = 0;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  float alpha = 1.f, beta = 0.f;
  const void* bias = nullptr;    // n elements (c_type), added to every row
  const void* c_in = nullptr;    // C read with beta when not the output itself (a conv's residual)
  bool relu = false;             // RELU / RELU_BIAS epilogue (after beta * C and the bias)
  bool gelu = false;             // GELU / GELU_BIAS epilogue (cuBLASLt's tanh form; not with relu)
  int algo_index = 0;            // which of cuBLASLt's heuristic results (conv tactic cublaslt:<i>)
  GemmTactic* tactic = nullptr;  // a timed / stored algorithm, or the tuner's listing
};

// Row-major C[m,n] = alpha * op(A) op(B) + beta * C (+ bias) (ReLU), computed as column-major C^T = op(B)^T op(A)^T,
// on launch.stream with cuBLASLt's heuristic result number g.algo_index, or g.tactic's algorithm (checked first).
// Throws naming `name` on failure.
void lt_gemm(const GemmArgs& g, LayerLaunch& l, const std::string& name);

}  // namespace kilnrt::backends::cuda
