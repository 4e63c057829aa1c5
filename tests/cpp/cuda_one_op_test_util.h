// Helpers for the one-node CUDA vs CPU-reference tests of the less common ops (LpPool, CenterCropPad, Col2Im,
// AffineGrid, DeformConv, TensorScatter, LinearAttention, CausalConvWithState, RMSNormalization, LpNormalization,
// CumProd; their op folders' cuda/*_test.cc): small typed tensors, dtype conversions, the same node compared in float16
// and bfloat16 (float32 islands), and the support check of a list of one-node graphs.
#pragma once
#include <random>
#include <vector>

#include "backends/cuda/float32_island.h"
#include "cuda_backend_test_util.h"

namespace kilnrt::cudatest {

inline Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt64, s); }
inline Tensor i32(const std::vector<int32_t>& v, const Shape& s) { return Tensor::from_vector(v, DType::kInt32, s); }
inline Tensor f32(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, DType::kFloat32, s); }
inline Tensor to_dtype(const Tensor& t, DType dt) {  // float32 -> float64 / float16 / bfloat16 (nearest)
  Tensor d = Tensor::empty(dt, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = t.data<float>()[i];
    if (dt == DType::kFloat64)
      d.data<double>()[i] = v;
    else if (dt == DType::kFloat16)
      d.data<uint16_t>()[i] = float_to_half(v);
    else
      d.data<uint16_t>()[i] = float_to_bfloat16(v);
  }
  return d;
}
template <typename T>
Tensor ints(DType dt, const Shape& s, uint32_t seed, int lo, int hi) {
  Tensor t = Tensor::empty(dt, s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) static_cast<T*>(t.raw())[i] = static_cast<T>(dist(rng));
  return t;
}
inline Tensor halves(const Tensor& t) {  // float32 -> float16 (rounded)
  Tensor h = Tensor::empty(DType::kFloat16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) h.data<uint16_t>()[i] = float_to_half(t.data<float>()[i]);
  return h;
}

// The same node with its float32 inputs given as float16 and bfloat16 (a float32 island on CUDA).
inline void compare_16bit(const ir::Node& node, const std::vector<Tensor>& inputs, int64_t opset) {
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    std::vector<Tensor> ins;
    for (const Tensor& t : inputs) ins.push_back(t.defined() && t.dtype() == DType::kFloat32 ? to_dtype(t, dt) : t);
    // Both round the same float32 result: equal, or one 16-bit step apart where the float32 results differ.
    compare_on_cuda(node, ins, {}, opset, 1e-3, dt == DType::kFloat16 ? 1e-3 : 8e-3);
  }
}

// Every net's node is placed on CUDA (a layer, or a float32 island), with no GPU needed.
inline void expect_supported(const std::vector<OneNode>& nets) {
  for (const OneNode& net : nets) {
    SCOPED_TRACE(net.g.nodes.back().op_type);
    EXPECT_EQ(backends::cuda::cuda_supports_or_island(net.g.nodes.back(), net.g), "");
    EXPECT_NO_THROW(backends::cuda::CudaPlan::check_supported(net.g));
  }
}

}  // namespace kilnrt::cudatest
