// Host entry points of the kernels behind layers_linatt.cc (CUDA layers for ops of the onnx 1.23 node
// cases): LinearAttention, CausalConvWithState, RMSNormalization, LpNormalization and
// CumProd. Each follows its CPU reference's arithmetic (src/ops/nn/linear_attention/linear_attention.cc, causal_conv_state.cc,
// normalization.cc, src/ops/reduce/arg_cumsum/arg_cumsum.cc): double accumulation in the same order, float32 I/O (16-bit
// tensors run as float32 islands). Plain C++ like kernels.h; each launcher returns the launch status (0 = success).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::linatt {

// ---- LinearAttention -------------------------------------------------------------------------------------------------
// q [B, T, hq*dk], k [B, T, hkv*dk], v [B, T, hkv*dv], past [B, hkv, dk, dv] (null: zeros), decay [B, T, decay_last]
// (null unless gated), beta [B, T, beta_last] (null unless delta); y [B, T, hq*dv], present [B, hkv, dk, dv] (null:
// not wanted). One thread per (batch, kv head, state column); the state of the pairs [pair_begin, pair_end) (pair =
// b * hkv + h) is kept in double in `state` (dk * dv doubles per pair).
struct LinearAttentionArgs {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* past = nullptr;
  const float* decay = nullptr;
  const float* beta = nullptr;
  float* y = nullptr;
  float* present = nullptr;
  double* state = nullptr;
  int64_t batch = 0, steps = 0, hq = 0, hkv = 0, dk = 0, dv = 0, decay_last = 0, beta_last = 0;
  double scale = 1.0;
};
int linear_attention(const LinearAttentionArgs& a, int64_t pair_begin, int64_t pair_end, StreamT stream);

// ---- CausalConvWithState -----------------------------------------------------------------------------------------------
// x [B, C, L], w [C, 1, K], bias [C] (null: 0), past [B, C, K-1] (null: zeros); y [B, C, L], present [B, C, K-1]
// (null: not wanted). silu: y * sigmoid(y).
struct CausalConvArgs {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  const float* past = nullptr;
  float* y = nullptr;
  float* present = nullptr;
  int64_t batch = 0, channels = 0, length = 0, kernel = 1;
  bool silu = false;
};
int causal_conv(const CausalConvArgs& a, StreamT stream);

// ---- RMSNormalization --------------------------------------------------------------------------------------------------
// x [rows, len] (len = product of the normalized dims); scale indexed through norm dims / strides (0 = broadcast).
constexpr int kMaxNormDims = 8;
struct RmsNormArgs {
  const float* x = nullptr;
  const float* scale = nullptr;
  float* y = nullptr;
  int64_t rows = 0, len = 0;
  int norm_rank = 0;
  int64_t norm_dims[kMaxNormDims] = {};
  int64_t scale_strides[kMaxNormDims] = {};
  double eps = 1e-5;
};
int rms_norm(const RmsNormArgs& a, StreamT stream);

// ---- LpNormalization ---------------------------------------------------------------------------------------------------
// x [outer, dim, inner], p 1 or 2; a zero norm gives 0.
int lp_norm(const float* x, float* y, int64_t outer, int64_t dim, int64_t inner, int p, StreamT stream);

// ---- CumProd -----------------------------------------------------------------------------------------------------------
// x of shape dims[0..rank) (rank <= kMaxNormDims), dtype code 0 float32, 1 int64, 2 int32, 6 float64, along the axis
// read from axis_dev (int64 when axis_is_64 else int32, negative counts from the end; out of range: nothing written,
// the layer checks a known axis on the host). Floats multiply in double, integers wrap (uint64 arithmetic);
// exclusive starts from 1. The axis stays on the device: no host read, graph-capture safe.
int cumprod(const void* x, void* y, const void* axis_dev, bool axis_is_64, int rank, const int64_t* dims,
            bool exclusive, bool reverse, int dtype, StreamT stream);

}  // namespace kilnrt::cuda::kernels::linatt
