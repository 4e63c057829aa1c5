// The acceptance metric shared by the end-to-end tests: max abs error <= rel_tol x the reference's max magnitude,
// and cosine similarity of the mean-centred outputs >= min_cos.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "kilnrt/tensor.h"

namespace kilnrt::testing_util {

inline void expect_close(const Tensor& got, const Tensor& want, double rel_tol = 1e-4, double min_cos = 0.99999,
                         bool print = false) {
  ASSERT_EQ(got.dtype(), DType::kFloat32);
  ASSERT_EQ(got.shape(), want.shape());
  const float* a = got.data<float>();
  const float* b = want.data<float>();
  const int64_t n = got.numel();
  double max_mag = 0, max_err = 0, mean_a = 0, mean_b = 0;
  for (int64_t i = 0; i < n; ++i) {
    max_mag = std::max(max_mag, std::fabs(double(b[i])));
    max_err = std::max(max_err, std::fabs(double(a[i]) - b[i]));
    mean_a += a[i];
    mean_b += b[i];
  }
  mean_a /= n;
  mean_b /= n;
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = a[i] - mean_a, y = b[i] - mean_b;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  const double cos = dot / std::sqrt(na * nb + 1e-300);
  EXPECT_LE(max_err, rel_tol * max_mag) << "max abs error " << max_err << " vs max magnitude " << max_mag;
  EXPECT_GE(cos, min_cos);
  if (print) std::printf("    max_err/max_mag = %.3g, cosine = %.9f\n", max_err / (max_mag + 1e-300), cos);
}

}  // namespace kilnrt::testing_util
