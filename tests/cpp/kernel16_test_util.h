// Helpers for the tests that launch one CUDA kernel on 16-bit data (ops/nn/conv/cuda's
// nhwc_depthwise_*_test.cc, test_cuda_input_activation.cc, test_cuda_pool_vec.cc): device 0 with a private stream,
// float16 / bfloat16 conversions by the kernels' dtype code (1 float16, 2 bfloat16) and random 16-bit vectors.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "cuda_backend_test_util.h"

namespace kilnrt::cudatest {

// Device 0 (current while this lives) and a stream on it. Construct after KILNRT_SKIP_WITHOUT_GPU().
struct GpuStream {
  const int dev = 0;
  kilnrt::cuda::ContextGuard guard{0};
  kilnrt::cuda::Stream stream{0};
};

// A 16-bit value of dtype code dt (1 float16, 2 bfloat16) as float, and a float rounded to it.
inline float from_16bit(int dt, uint16_t v) { return dt == 1 ? half_to_float(v) : bfloat16_to_float(v); }
inline uint16_t to_16bit(int dt, float v) { return dt == 1 ? float_to_half(v) : float_to_bfloat16(v); }

// `count` draws of dist(rng), each rounded to dtype code dt.
template <class Dist>
std::vector<uint16_t> random_16bit(int dt, int64_t count, std::mt19937& rng, Dist& dist) {
  std::vector<uint16_t> v(static_cast<size_t>(count));
  for (auto& e : v) e = to_16bit(dt, dist(rng));
  return v;
}

}  // namespace kilnrt::cudatest
