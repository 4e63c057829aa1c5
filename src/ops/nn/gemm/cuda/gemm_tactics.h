// cuBLASLt algorithm timing at build for the GEMM layers of the CUDA backend: FusedMatMul, MatMul, Gemm.
//
// The algorithm a layer runs is its GemmTactic (ops/cuda/lt_gemm.h, with the candidate count gemm_candidate_count()).
// Without a choice a GEMM layer runs the first algorithm of cuBLASLt's heuristic (cublasLtMatmulAlgoGetHeuristic).
// At build, under the TacticTimingScope the builder opens (ops/cuda/tactic_timing.h: CUDA-graph replays, median,
// timing cache), a GEMM layer whose shapes are all static asks the heuristic for up to gemm_candidate_count()
// algorithms for its problem (with the workspace the layer gets), times each, and keeps the heuristic's first unless
// another is at least 3% faster. The winner, the heuristic's first included (cublasLtMatmulAlgo_t: 8 opaque uint64
// words) is stored as the node's string attribute kGemmAlgoAttr = "<device key>#<128 hex digits>", where the device key
// names the GPU, its SM and the cuDNN / cuBLASLt versions (tuning_device_key()). Loading reads it and never times; at
// run every call checks the stored algorithm with cublasLtMatmulAlgoCheck (and the workspace it needs): another GPU or
// library version, or a refused algorithm, falls back to the heuristic with one warning (tuning_stats().fallbacks
// counts it).
//
// Identical GEMM problems (same op, shapes, storage dtype, precision, epilogue attributes) are timed once per process
// through the timing cache (KILNRT_TIMING_CACHE=FILE keeps it across processes). KILNRT_GEMM_TUNING=0 turns the
// timing off (the heuristic, as engines built before it); KILNRT_CONV_TUNING does not affect it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ops/cuda/lt_gemm.h"
#include "ops/cuda/cuda_layer.h"

namespace kilnrt::backends::cuda {

constexpr const char* kGemmAlgoAttr = "kilnrt_gemm_algo";

std::string gemm_algo_to_hex(const cublasLtMatmulAlgo_t& a);                 // 128 lowercase hex digits
bool gemm_algo_from_hex(const std::string& hex, cublasLtMatmulAlgo_t* out);  // false when malformed
// kGemmAlgoAttr values: "<device key>#<hex>".
std::string encode_gemm_algo_attr(const std::string& device_key, const cublasLtMatmulAlgo_t& a);
bool decode_gemm_algo_attr(const std::string& s, std::string* device_key, cublasLtMatmulAlgo_t* out);
// The part of a tuning_device_key() a stored cuBLASLt algorithm depends on: GPU, compute capability, cuBLASLt version
// (the cuDNN version is dropped).
std::string gemm_device_part(const std::string& device_key);
bool gemm_tuning_enabled();  // KILNRT_GEMM_TUNING is not "0"

// The timing-cache key of a GEMM node's problem: op, every input's shape (or '-' when absent), storage, precision
// and the attributes that change the computation; fills `launch` with the inputs' and output's shapes and dtype
// `storage`. Empty when a tensor is not float32 or a shape is not static.
std::string gemm_problem_key(const ir::Node& node, const ir::Graph& graph, DType storage, LayerLaunch* launch);

// Called by a GEMM layer's constructor. A node with kGemmAlgoAttr: the stored algorithm when its device key is this
// device's (else a warning and the heuristic). Otherwise, under an open tuning scope with tuning enabled, a
// float32-typed node with static shapes only: times the candidates (enqueue(l) runs the layer, which passes `t` to
// lt_gemm) and records the winner with the scope. `storage`: the dtype the layer's float tensors are stored in.
void setup_gemm_tactic(const LayerCreateArgs& a, DType storage, GemmTactic& t,
                       const std::function<void(LayerLaunch&)>& enqueue);

// Tests: called on the building thread with each GEMM problem's candidates as they are listed for timing ([0]: the
// heuristic's first). An empty function removes it.
void set_gemm_candidates_observer(
    std::function<void(const std::string& node, const std::vector<cublasLtMatmulAlgo_t>& candidates)> f);

// The activation storage of a layer of precision `p` (16-bit for --fp16 / --bf16 layers).
DType gemm_storage(Precision p);

}  // namespace kilnrt::backends::cuda
