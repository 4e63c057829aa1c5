#include "ops/op_registry.h"

#include <algorithm>

#include "core/check.h"

namespace kilnrt::ops {

const ir::TensorType& ShapeContext::input(size_t i) const {
  KILNRT_CHECK(has_input(i), kInvalidModel, node.describe(), "input " << i << " is missing");
  return *inputs[i];
}

void ShapeContext::set_output(size_t i, DType dtype, ir::SymShape shape) {
  KILNRT_CHECK(i < outputs.size(), kInvalidModel, node.describe(),
               "the node has " << outputs.size() << " output(s); " << node.op_type << " defines output " << i);
  outputs[i].dtype = dtype;
  outputs[i].has_shape = true;
  outputs[i].shape = std::move(shape);
}

void ShapeContext::set_output_rank_unknown(size_t i, DType dtype) {
  KILNRT_CHECK(i < outputs.size(), kInvalidModel, node.describe(),
               "the node has " << outputs.size() << " output(s); " << node.op_type << " defines output " << i);
  outputs[i].dtype = dtype;
  outputs[i].has_shape = false;
  outputs[i].shape.clear();
}

const Tensor& CpuContext::input(size_t i) const {
  KILNRT_CHECK(has_input(i), kInvalidArgument, node.describe(), "input " << i << " is missing");
  return *inputs[i];
}

std::string source_path_in_tree(const char* file) {
  std::string f = file ? file : "";
  for (char& c : f)
    if (c == '\\') c = '/';
  const size_t at = f.rfind("/src/");
  if (at != std::string::npos) return f.substr(at + 5);
  return f.rfind("src/", 0) == 0 ? f.substr(4) : f;
}

OpRegistry& OpRegistry::instance() {
  static OpRegistry registry;
  return registry;
}

void OpRegistry::add(OpSchema schema) {
  std::lock_guard<std::mutex> lock(mutex_);
  schemas_.push_back(std::move(schema));
}

const OpSchema* OpRegistry::find(const std::string& domain, const std::string& op_type, int64_t opset) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const OpSchema* best = nullptr;
  for (const OpSchema& s : schemas_) {
    if (s.op_type != op_type || s.domain != domain) continue;
    if (opset < s.since_version || opset > s.until_version) continue;
    if (!best || s.since_version > best->since_version) best = &s;
  }
  return best;
}

const OpSchema& OpRegistry::get(const ir::Node& node, int64_t opset) const {
  const OpSchema* s = find(node.domain, node.op_type, opset);
  if (s) return *s;
  bool any_version = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const OpSchema& x : schemas_) any_version |= x.op_type == node.op_type && x.domain == node.domain;
  }
  if (!node.domain.empty() && !any_version)
    KILNRT_THROW(kUnsupported, node.describe(),
                 "custom op '" << node.domain << ":" << node.op_type << "' is not registered in this process: "
                               << "register it (kilnrt::register_custom_op in C++, kilnrt.register_op in Python) "
                               << "before building or loading a model or engine that uses it");
  if (any_version)
    KILNRT_THROW(kUnsupported, node.describe(),
                 "op " << node.op_type << " is not supported at opset " << opset << " (other versions are)");
  KILNRT_THROW(kUnsupported, node.describe(),
               "unsupported op '" << (node.domain.empty() ? "" : node.domain + ".") << node.op_type
                                  << "': kilnrt has no implementation of it");
}

std::vector<const OpSchema*> OpRegistry::all() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const OpSchema*> out;
  for (const OpSchema& s : schemas_) out.push_back(&s);
  std::sort(out.begin(), out.end(), [](const OpSchema* a, const OpSchema* b) {
    return std::tie(a->domain, a->op_type, a->since_version) < std::tie(b->domain, b->op_type, b->since_version);
  });
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const ir::Node& node) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    KILNRT_CHECK(da == db || da == 1 || db == 1, kInvalidArgument, node.describe(),
                 "shapes " << shape_to_string(a) << " and " << shape_to_string(b) << " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

ir::SymShape broadcast_sym_shapes(const ir::SymShape& a, const ir::SymShape& b, const ir::Node& node) {
  const size_t r = std::max(a.size(), b.size());
  ir::SymShape out(r);
  for (size_t i = 0; i < r; ++i) {
    const ir::Dim da = i < r - a.size() ? ir::Dim(1) : a[i - (r - a.size())];
    const ir::Dim db = i < r - b.size() ? ir::Dim(1) : b[i - (r - b.size())];
    if (da.known() && db.known()) {
      KILNRT_CHECK(
          da.value == db.value || da.value == 1 || db.value == 1, kInvalidModel, node.describe(),
          "shapes " << ir::sym_shape_to_string(a) << " and " << ir::sym_shape_to_string(b) << " cannot be broadcast");
      out[i] = da.value == 1 ? db : da;
    } else if (da.known()) {
      out[i] = da.value == 1 ? db : da;
    } else if (db.known()) {
      out[i] = db.value == 1 ? da : db;
    } else {
      out[i] = (da == db) ? da : ir::Dim();
    }
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const ir::Node& node) {
  KILNRT_CHECK(axis >= -rank && axis < std::max<int64_t>(rank, 1), kInvalidModel, node.describe(),
               "axis " << axis << " is out of range for rank " << rank);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> tensor_to_int64s(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kInt64) {
    std::copy(t.data<int64_t>(), t.data<int64_t>() + t.numel(), v.begin());
  } else if (t.dtype() == DType::kInt32) {
    std::copy(t.data<int32_t>(), t.data<int32_t>() + t.numel(), v.begin());
  } else {
    KILNRT_THROW(kInvalidModel, "", "expected an int64 or int32 tensor, got " << dtype_name(t.dtype()));
  }
  return v;
}

}  // namespace kilnrt::ops
