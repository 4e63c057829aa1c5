// Helpers shared by the graph-pass tests (conv / attention / GELU fusions, CPU and CUDA): seeded random float32
// tensors, op counts, a CPU run of a graph, and a relative difference of two float32 tensors.
#pragma once
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "ir/graph.h"

namespace kilnrt::passtest {

inline Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Tensor t = Tensor::empty(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// Declares `name` a float32 graph input of shape s.
inline void add_float32_input(ir::Graph& g, const std::string& name, const Shape& s) {
  g.inputs.push_back(name);
  ir::TensorType t;
  t.dtype = DType::kFloat32;
  t.has_shape = true;
  t.shape = ir::shape_to_sym(s);
  g.types[name] = t;
}

// random_tensor for every input of `g` (float32, its static shape), the seed counting up from `first_seed`.
inline std::map<std::string, Tensor> random_feeds(const ir::Graph& g, uint32_t first_seed, float lo = -1.f,
                                                  float hi = 1.f) {
  std::map<std::string, Tensor> in;
  uint32_t seed = first_seed;
  for (const std::string& name : g.inputs)
    in[name] = random_tensor(ir::sym_shape_to_shape(g.type_of(name)->shape), seed++, lo, hi);
  return in;
}

inline size_t count_ops(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const ir::Node& node : g.nodes) n += node.op_type == op;
  return n;
}

inline std::map<std::string, Tensor> run_cpu(const ir::Graph& g, const std::map<std::string, Tensor>& inputs) {
  backends::cpu::CpuPlan plan(g);
  return plan.run(inputs);
}

// Max |a - b| / (1 + |b|); +inf on a shape / dtype mismatch or a NaN in only one of them.
inline double max_rel_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != DType::kFloat32 || b.dtype() != DType::kFloat32) return INFINITY;
  double m = 0.0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    if (std::isnan(x) != std::isnan(y)) return INFINITY;
    if (!std::isnan(x)) m = std::max(m, std::fabs(x - y) / (1.0 + std::fabs(y)));
  }
  return m;
}

}  // namespace kilnrt::passtest
