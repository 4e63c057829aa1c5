#include "ops/shape/sym_value.h"

#include <algorithm>
#include <cstdlib>

#include "core/int_div.h"

namespace kilnrt::ops {
namespace {

bool parse_int(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  size_t i = (s[0] == '-') ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t k = i; k < s.size(); ++k)
    if (s[k] < '0' || s[k] > '9') return false;
  if (s.size() > 20) return false;
  *out = std::strtoll(s.c_str(), nullptr, 10);
  return true;
}

bool is_simple_name(const std::string& s) {
  for (char c : s)
    if (c == '+' || c == '-' || c == '*' || c == '/') return false;
  return true;
}

std::string operand_name(const SymInt& s) {
  if (s.known) return std::to_string(s.value);
  return is_simple_name(s.name) ? s.name : "(" + s.name + ")";
}

// a*b with factors sorted: symbols alphabetically, the numeric coefficient last.
SymInt canonical_product(const SymInt& a, const SymInt& b);

}  // namespace

SymInt dim_to_sym_int(const ir::Dim& d) {
  if (d.known()) return SymInt::of(d.value);
  int64_t v = 0;
  if (parse_int(d.param, &v)) return SymInt::of(v);
  return d.param.empty() ? SymInt::unknown() : SymInt::named(d.param);
}

ir::Dim sym_int_to_dim(const SymInt& s) {
  if (s.known) return s.value >= 0 ? ir::Dim(s.value) : ir::Dim::symbol(std::to_string(s.value));
  return s.name.empty() ? ir::Dim() : ir::Dim::symbol(s.name);
}

ir::Dim sym_int_to_shape_dim(const SymInt& s) {
  if (s.known) return s.value >= 0 ? ir::Dim(s.value) : ir::Dim();
  return s.name.empty() ? ir::Dim() : ir::Dim::symbol(s.name);
}

SymInt shape_dim_to_sym_int(const ir::Dim& d) {
  if (d.known()) return SymInt::of(d.value);
  return d.param.empty() ? SymInt::unknown() : SymInt::named(d.param);
}

std::optional<SymInts> tensor_sym_ints(const Tensor& t) {
  if (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32) return std::nullopt;
  if (t.rank() > 1 || t.numel() > kMaxSymValueElements) return std::nullopt;
  SymInts out;
  for (int64_t v : tensor_to_int64s(t)) out.push_back(SymInt::of(v));
  return out;
}

std::optional<SymInts> input_sym_ints(const ShapeContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  if (const Tensor* t = ctx.value(i)) return tensor_sym_ints(*t);
  const ir::TensorType& ty = *ctx.inputs[i];
  if (!ty.sym_value) return std::nullopt;
  SymInts out;
  for (const ir::Dim& d : *ty.sym_value) out.push_back(dim_to_sym_int(d));
  return out;
}

std::optional<std::vector<int64_t>> sym_ints_known(const SymInts& v) {
  std::vector<int64_t> out;
  for (const SymInt& s : v) {
    if (!s.known) return std::nullopt;
    out.push_back(s.value);
  }
  return out;
}

std::optional<std::vector<int64_t>> input_known_ints(const ShapeContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  if (const Tensor* t = ctx.value(i)) {
    if (t->dtype() != DType::kInt64 && t->dtype() != DType::kInt32) return std::nullopt;
    return tensor_to_int64s(*t);
  }
  auto s = input_sym_ints(ctx, i);
  if (!s) return std::nullopt;
  return sym_ints_known(*s);
}

void set_output_sym_ints(ShapeContext& ctx, size_t i, const SymInts& v) {
  if (i >= ctx.outputs.size()) return;
  ir::TensorType& ty = ctx.outputs[i];
  if (ty.dtype != DType::kInt64 && ty.dtype != DType::kInt32) return;
  if (static_cast<int64_t>(v.size()) > kMaxSymValueElements) return;
  ir::SymShape dims;
  bool any_info = false;
  for (const SymInt& s : v) {
    dims.push_back(sym_int_to_dim(s));
    any_info = any_info || s.known || !s.name.empty();
  }
  if (any_info || v.empty()) ty.sym_value = std::move(dims);
}

SymInt sym_binary(char op, const SymInt& a, const SymInt& b) {
  if (a.known && b.known) {
    switch (op) {
      case '+': return SymInt::of(a.value + b.value);
      case '-': return SymInt::of(a.value - b.value);
      case '*': return SymInt::of(a.value * b.value);
      case '/':
        if (b.value == 0) return SymInt::unknown();
        // ONNX integer Div truncates toward zero; INT64_MIN / -1 wraps as the kernel's does.
        return SymInt::of(int_div(a.value, b.value));
      default: return SymInt::unknown();
    }
  }
  // Identities.
  if (op == '*' && b.known && b.value == 1) return a;
  if (op == '*' && a.known && a.value == 1) return b;
  if (op == '*' && ((a.known && a.value == 0) || (b.known && b.value == 0))) return SymInt::of(0);
  if (op == '+' && b.known && b.value == 0) return a;
  if (op == '+' && a.known && a.value == 0) return b;
  if (op == '-' && b.known && b.value == 0) return a;
  if (op == '/' && b.known && b.value == 1) return a;
  if (op == '-' && !a.known && a == b) return SymInt::of(0);
  if (op == '/' && !a.known && a == b) return SymInt::of(1);
  bool a_named = a.known || !a.name.empty();
  bool b_named = b.known || !b.name.empty();
  if (!a_named || !b_named) return SymInt::unknown();
  if (a.known && a.value < 0) return SymInt::unknown();
  if (b.known && b.value < 0) return SymInt::unknown();
  if (op == '*') return canonical_product(a, b);
  return SymInt::named(operand_name(a) + op + operand_name(b));
}

std::vector<std::string> sym_product_factors(const std::string& name) {
  std::vector<std::string> out;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '(') ++depth;
    if (name[i] == ')') --depth;
    if (name[i] == '*' && depth == 0) {
      out.push_back(name.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  out.push_back(name.substr(begin));
  return out;
}

namespace {
SymInt canonical_product(const SymInt& a, const SymInt& b) {
  int64_t coefficient = 1;
  std::vector<std::string> names;
  for (const SymInt* s : {&a, &b}) {
    if (s->known) {
      coefficient *= s->value;
      continue;
    }
    for (const std::string& f : sym_product_factors(s->name)) {
      int64_t v = 0;
      if (parse_int(f, &v))
        coefficient *= v;
      else
        names.push_back(is_simple_name(f) || f.front() == '(' ? f : "(" + f + ")");
    }
  }
  if (coefficient == 0) return SymInt::of(0);
  if (names.empty()) return SymInt::of(coefficient);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : "*") + n;
  if (coefficient != 1) out += "*" + std::to_string(coefficient);
  return SymInt::named(out);
}
}  // namespace

}  // namespace kilnrt::ops
