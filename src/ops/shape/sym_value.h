// Symbolic element values of small int64/int32 tensors (TensorType::sym_value) for shape subgraphs:
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape keeps "batch" as the name of the Reshape's output dim.
//
// Encoding in TensorType::sym_value (one ir::Dim per element; a scalar has one element):
//   known value v >= 0  -> Dim(v)
//   known value v < 0   -> Dim::symbol("<v>"), e.g. "-1" (Dim's value -1 means "unknown", so a literal -1 in a
//                          Reshape target would otherwise be lost); decoded back by these helpers
//   symbolic            -> Dim::symbol("batch"), or an expression name like "batch*8"
//   unknown             -> Dim() (value -1, no name)
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {

struct SymInt {
  bool known = false;
  int64_t value = 0;
  std::string name;  // when !known: the symbol ("" = anonymous unknown)

  static SymInt of(int64_t v) {
    SymInt s;
    s.known = true;
    s.value = v;
    return s;
  }
  static SymInt named(std::string n) {
    SymInt s;
    s.name = std::move(n);
    return s;
  }
  static SymInt unknown() { return SymInt{}; }
  bool operator==(const SymInt& o) const {
    return known == o.known && (known ? value == o.value : (!name.empty() && name == o.name));
  }
};
using SymInts = std::vector<SymInt>;

SymInt dim_to_sym_int(const ir::Dim& d);
ir::Dim sym_int_to_dim(const SymInt& s);        // for sym_value (negative literals encoded as names)
ir::Dim sym_int_to_shape_dim(const SymInt& s);  // for a shape: negative / unknown -> unknown dim
SymInt shape_dim_to_sym_int(const ir::Dim& d);

// Largest tensor whose element values are tracked.
constexpr int64_t kMaxSymValueElements = 64;

// Element values of input i: its constant value (int64/int32, at most kMaxSymValueElements elements), else its
// sym_value, else nullopt.
std::optional<SymInts> input_sym_ints(const ShapeContext& ctx, size_t i);
// Concrete values of input i when every element is known.
std::optional<std::vector<int64_t>> input_known_ints(const ShapeContext& ctx, size_t i);
std::optional<std::vector<int64_t>> sym_ints_known(const SymInts& v);
// Stores values as output i's sym_value (if output i is int64/int32 and small enough).
void set_output_sym_ints(ShapeContext& ctx, size_t i, const SymInts& v);

// Values of a constant int tensor as SymInts (nullopt when not an int tensor or too big).
std::optional<SymInts> tensor_sym_ints(const Tensor& t);

// Symbolic scalar arithmetic for Add/Sub/Mul/Div on shape values: exact when both known, simplified when one side is
// the identity (x*1, x+0, x-0, x/1), otherwise a named expression ("batch*8") or unknown.
// Products are kept canonical: symbol factors sorted, then the numeric coefficient ("batch*seq*8"), so that equal
// products built in different orders get equal names.
SymInt sym_binary(char op, const SymInt& a, const SymInt& b);

// Splits a name at top-level '*' ("batch*8" -> {"batch", "8"}); a name without '*' is its own only factor.
std::vector<std::string> sym_product_factors(const std::string& name);

}  // namespace kilnrt::ops
