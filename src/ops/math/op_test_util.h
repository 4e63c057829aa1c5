// Test helpers for the math / shape / reduce op tests (tests/cpp/test_ops_{math,shape,reduce}.cc): build a node,
// run its registered CPU kernel or shape function, make tensors of any dtype and read them back.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kilnrt/dtype.h"
#include "kilnrt/error.h"
#include "kilnrt/tensor.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::optest {

// Fluent node builder: Node("Slice", 5).i("axis", 1).node
struct Node {
  ir::Node node;
  Node(const std::string& op_type, size_t num_inputs, size_t num_outputs = 1, const std::string& name = "") {
    node.name = name.empty() ? "my_" + op_type : name;
    node.op_type = op_type;
    for (size_t k = 0; k < num_inputs; ++k) node.inputs.push_back(node.name + "_in" + std::to_string(k));
    for (size_t k = 0; k < num_outputs; ++k) node.outputs.push_back(node.name + "_out" + std::to_string(k));
  }
  Node& attr(const std::string& k, ir::Attribute a) {
    node.attrs[k] = std::move(a);
    return *this;
  }
  Node& i(const std::string& k, int64_t v) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kInt;
    a.i = v;
    return attr(k, a);
  }
  Node& f(const std::string& k, float v) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kFloat;
    a.f = v;
    return attr(k, a);
  }
  Node& s(const std::string& k, const std::string& v) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kString;
    a.s = v;
    return attr(k, a);
  }
  Node& ints(const std::string& k, std::vector<int64_t> v) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kInts;
    a.ints = std::move(v);
    return attr(k, a);
  }
  Node& floats(const std::string& k, std::vector<float> v) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kFloats;
    a.floats = std::move(v);
    return attr(k, a);
  }
  Node& t(const std::string& k, Tensor v) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kTensor;
    a.t = std::move(v);
    return attr(k, a);
  }
  Node& omit_output(size_t k) {
    node.outputs[k] = "";
    return *this;
  }
};

inline const OpSchema& schema_of(const ir::Node& node, int64_t opset) {
  const OpSchema* s = OpRegistry::instance().find(node.domain, node.op_type, opset);
  if (!s) throw std::runtime_error("no schema for " + node.op_type + " at opset " + std::to_string(opset));
  return *s;
}

// Runs the CPU kernel; nullptr inputs are omitted optional inputs.
inline std::vector<Tensor> run(const ir::Node& node, std::vector<const Tensor*> inputs, int64_t opset = 20) {
  const OpSchema& schema = schema_of(node, opset);
  CpuContext ctx{node, opset, std::move(inputs), std::vector<Tensor>(node.outputs.size())};
  schema.cpu(ctx);
  return ctx.outputs;
}
inline Tensor run1(const ir::Node& node, std::vector<const Tensor*> inputs, int64_t opset = 20) {
  return run(node, std::move(inputs), opset)[0];
}

// Runs the shape function. `values` (optional, per input) are constant inputs.
inline std::vector<ir::TensorType> infer(const ir::Node& node, std::vector<const ir::TensorType*> inputs,
                                         std::vector<const Tensor*> values = {}, int64_t opset = 20) {
  const OpSchema& schema = schema_of(node, opset);
  values.resize(inputs.size(), nullptr);
  ShapeContext ctx{node, opset, std::move(inputs), std::move(values), std::vector<ir::TensorType>(node.outputs.size())};
  schema.infer(ctx);
  return ctx.outputs;
}

inline ir::TensorType ttype(DType dtype, ir::SymShape shape) {
  ir::TensorType t;
  t.dtype = dtype;
  t.has_shape = true;
  t.shape = std::move(shape);
  return t;
}

// ---- tensors ----------------------------------------------------------------------------------------------
inline Tensor f32(const std::vector<float>& v, const Shape& s) {
  return Tensor::from_data(v.data(), DType::kFloat32, s);
}
inline Tensor f32(const std::vector<float>& v) { return f32(v, {static_cast<int64_t>(v.size())}); }
inline Tensor f64(const std::vector<double>& v, const Shape& s) {
  return Tensor::from_data(v.data(), DType::kFloat64, s);
}
inline Tensor i64(const std::vector<int64_t>& v, const Shape& s) {
  return Tensor::from_data(v.data(), DType::kInt64, s);
}
inline Tensor i64(const std::vector<int64_t>& v) { return i64(v, {static_cast<int64_t>(v.size())}); }
inline Tensor i64_scalar(int64_t v) { return i64({v}, {}); }
inline Tensor i32(const std::vector<int32_t>& v, const Shape& s) {
  return Tensor::from_data(v.data(), DType::kInt32, s);
}
inline Tensor i8(const std::vector<int8_t>& v, const Shape& s) { return Tensor::from_data(v.data(), DType::kInt8, s); }
inline Tensor u8(const std::vector<uint8_t>& v, const Shape& s) {
  return Tensor::from_data(v.data(), DType::kUInt8, s);
}
inline Tensor boolean(const std::vector<int>& v, const Shape& s) {
  std::vector<uint8_t> b(v.begin(), v.end());
  return Tensor::from_data(b.data(), DType::kBool, s);
}
inline Tensor f16(const std::vector<float>& v, const Shape& s) {
  std::vector<uint16_t> h;
  for (float x : v) h.push_back(float_to_half(x));
  return Tensor::from_data(h.data(), DType::kFloat16, s);
}
inline Tensor bf16(const std::vector<float>& v, const Shape& s) {
  std::vector<uint16_t> h;
  for (float x : v) h.push_back(float_to_bfloat16(x));
  return Tensor::from_data(h.data(), DType::kBFloat16, s);
}
// Deterministic pseudo-random floats in [lo, hi).
inline Tensor ramp(const Shape& s, float lo = -3.f, float hi = 3.f, uint32_t seed = 1) {
  Tensor t = Tensor::empty(DType::kFloat32, s);
  uint32_t x = seed * 2654435761u + 12345u;
  for (int64_t k = 0; k < t.numel(); ++k) {
    x = x * 1664525u + 1013904223u;
    t.data<float>()[k] = lo + (hi - lo) * static_cast<float>(x >> 8) / static_cast<float>(1u << 24);
  }
  return t;
}

// Any numeric tensor's elements as double.
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  for (int64_t k = 0; k < t.numel(); ++k) {
    switch (t.dtype()) {
      case DType::kFloat32: out.push_back(t.data<float>()[k]); break;
      case DType::kFloat64: out.push_back(t.data<double>()[k]); break;
      case DType::kFloat16: out.push_back(half_to_float(t.data<uint16_t>()[k])); break;
      case DType::kBFloat16: out.push_back(bfloat16_to_float(t.data<uint16_t>()[k])); break;
      case DType::kInt64: out.push_back(static_cast<double>(t.data<int64_t>()[k])); break;
      case DType::kInt32: out.push_back(t.data<int32_t>()[k]); break;
      case DType::kInt8: out.push_back(t.data<int8_t>()[k]); break;
      case DType::kUInt8: out.push_back(t.data<uint8_t>()[k]); break;
      case DType::kBool: out.push_back(t.data<uint8_t>()[k] ? 1.0 : 0.0); break;
      case DType::kInt16: out.push_back(t.data<int16_t>()[k]); break;
      case DType::kUInt16: out.push_back(t.data<uint16_t>()[k]); break;
      case DType::kUInt32: out.push_back(t.data<uint32_t>()[k]); break;
      case DType::kUInt64: out.push_back(static_cast<double>(t.data<uint64_t>()[k])); break;
      default: throw std::runtime_error("values(): unsupported dtype");
    }
  }
  return out;
}
inline std::vector<int64_t> ints_of(const Tensor& t) {
  if (t.dtype() == DType::kInt64) return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
  std::vector<int64_t> out;
  for (double d : values(t)) out.push_back(static_cast<int64_t>(d));
  return out;
}

// Elementwise comparison with NaN == NaN.
inline void expect_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-6,
                          const std::string& what = "") {
  std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    if (std::isnan(expected[k])) {
      EXPECT_TRUE(std::isnan(got[k])) << what << " element " << k << " = " << got[k] << ", expected NaN";
    } else if (std::isinf(expected[k])) {
      EXPECT_EQ(got[k], expected[k]) << what << " element " << k;
    } else {
      EXPECT_NEAR(got[k], expected[k], tol * std::max(1.0, std::fabs(expected[k]))) << what << " element " << k;
    }
  }
}

// Expects a kilnrt::Error with `code` whose where() mentions the node's name.
template <class F>
void expect_error_naming(F f, const ir::Node& node, ErrorCode code, const std::string& message_part = "") {
  try {
    f();
    ADD_FAILURE() << "expected a kilnrt::Error naming " << node.name;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(e.where().find(node.name), std::string::npos) << "where() = '" << e.where() << "'";
    if (!message_part.empty()) EXPECT_NE(std::string(e.what()).find(message_part), std::string::npos) << e.what();
  }
}

inline ir::Dim sym(const std::string& name) { return ir::Dim::symbol(name); }

}  // namespace kilnrt::ops::optest
