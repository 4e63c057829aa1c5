// Test helpers for the nn op tests (src/ops/nn/*_test.cc, tests/cpp/test_ops_nn.cc): build an ir::Node, run its
// registered CPU kernel or shape function directly, random tensors and comparisons.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kilnrt/error.h"
#include "kilnrt/tensor.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn::testing {

// Fluent node builder: Op("Conv", 3).ints("pads", {1, 1, 1, 1}).i("group", 2).node
struct Op {
  ir::Node node;
  Op(const std::string& op_type, size_t num_inputs, size_t num_outputs = 1, const std::string& name = "node0") {
    node.name = name;
    node.op_type = op_type;
    for (size_t i = 0; i < num_inputs; ++i) node.inputs.push_back("in" + std::to_string(i));
    for (size_t i = 0; i < num_outputs; ++i) node.outputs.push_back("out" + std::to_string(i));
  }
  Op& i(const std::string& k, int64_t v) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kInt;
    a.i = v;
    node.attrs[k] = a;
    return *this;
  }
  Op& f(const std::string& k, float v) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kFloat;
    a.f = v;
    node.attrs[k] = a;
    return *this;
  }
  Op& ints(const std::string& k, std::vector<int64_t> v) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kInts;
    a.ints = std::move(v);
    node.attrs[k] = a;
    return *this;
  }
  Op& s(const std::string& k, const std::string& v) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kString;
    a.s = v;
    node.attrs[k] = a;
    return *this;
  }
  // Marks input / output i as omitted ("").
  Op& omit_input(size_t idx) {
    node.inputs[idx] = "";
    return *this;
  }
  Op& omit_output(size_t idx) {
    node.outputs[idx] = "";
    return *this;
  }
};

inline const OpSchema& schema_for(const ir::Node& node, int64_t opset) {
  const OpSchema* s = OpRegistry::instance().find(node.domain, node.op_type, opset);
  if (!s) throw std::runtime_error("no schema for " + node.op_type + " at opset " + std::to_string(opset));
  return *s;
}

// Runs the node's CPU kernel; nullptr inputs are omitted optional inputs.
inline std::vector<Tensor> run(const ir::Node& node, std::vector<const Tensor*> inputs, int64_t opset = 13) {
  const OpSchema& schema = schema_for(node, opset);
  CpuContext ctx{node, opset, std::move(inputs), std::vector<Tensor>(node.outputs.size())};
  schema.cpu(ctx);
  return ctx.outputs;
}
inline Tensor run1(const ir::Node& node, std::vector<const Tensor*> inputs, int64_t opset = 13) {
  return run(node, std::move(inputs), opset).at(0);
}

inline ir::TensorType ttype(DType dt, ir::SymShape shape) {
  ir::TensorType t;
  t.dtype = dt;
  t.has_shape = true;
  t.shape = std::move(shape);
  return t;
}

// Runs the node's shape function; an input TensorType with dtype kUndefined is an omitted input.
inline std::vector<ir::TensorType> infer(const ir::Node& node, const std::vector<ir::TensorType>& inputs,
                                         int64_t opset = 13) {
  const OpSchema& schema = schema_for(node, opset);
  std::vector<const ir::TensorType*> ptrs;
  for (const ir::TensorType& t : inputs) ptrs.push_back(t.dtype == DType::kUndefined ? nullptr : &t);
  ShapeContext ctx{node, opset, ptrs, std::vector<const Tensor*>(inputs.size(), nullptr),
                   std::vector<ir::TensorType>(node.outputs.size())};
  schema.infer(ctx);
  return ctx.outputs;
}

inline Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t = Tensor::empty(DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

inline Tensor make(const Shape& shape, const std::vector<float>& values) {
  return Tensor::from_vector(values, DType::kFloat32, shape);
}

inline std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// Expects same shape and |a - e| <= atol + rtol * |e| everywhere (NaN matches NaN).
inline void expect_close(const Tensor& actual, const Tensor& expected, float atol = 1e-4f, float rtol = 1e-4f) {
  ASSERT_EQ(shape_to_string(actual.shape()), shape_to_string(expected.shape()));
  ASSERT_EQ(actual.dtype(), DType::kFloat32);
  int failures = 0;
  for (int64_t i = 0; i < actual.numel() && failures < 5; ++i) {
    const float a = actual.data<float>()[i], e = expected.data<float>()[i];
    if (std::isnan(e) && std::isnan(a)) continue;
    if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e))) {
      ADD_FAILURE() << "element " << i << ": got " << a << ", expected " << e;
      ++failures;
    }
  }
}

inline std::string dims_string(const ir::SymShape& s) { return ir::sym_shape_to_string(s); }

// Runs `fn`, expects a kilnrt::Error of `code` whose where() names the node and whose message contains `needle`.
template <typename Fn>
void expect_error(Fn fn, ErrorCode code, const std::string& node_name, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected a kilnrt::Error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(e.where().find(node_name), std::string::npos) << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.what();
  }
}

}  // namespace kilnrt::ops::nn::testing
