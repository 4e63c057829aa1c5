// Custom ops (include/kilnrt/custom_op.h): registration into the op registry (shape function and CPU kernel
// adapters around the user's callbacks) and a registry of the CustomOp definitions for the CUDA backend.
#include <algorithm>
#include <deque>
#include <mutex>

#include "core/check.h"
#include "ops/custom/custom_registry.h"
#include "ops/op_registry.h"

namespace kilnrt {
namespace {

const ir::Node& as_node(const void* p) { return *static_cast<const ir::Node*>(p); }

struct CustomRegistry {
  std::mutex mutex;
  std::deque<CustomOp> ops;  // never shrinks, elements never move
};

CustomRegistry& custom_registry() {
  static CustomRegistry* r = new CustomRegistry;  // leaked: ops may be registered during static initialisation
  return *r;
}

CustomTensorType to_custom_type(const ir::TensorType* t) {
  CustomTensorType c;
  if (!t) {
    c.present = false;
    c.has_shape = false;
    return c;
  }
  c.dtype = t->dtype;
  c.has_shape = t->has_shape;
  for (const ir::Dim& d : t->shape) c.shape.push_back(d.known() ? d.value : -1);
  return c;
}

// The user's output type as an ir::TensorType; dims equal to an input's dims take that input's symbolic dims.
ir::TensorType from_custom_type(const CustomTensorType& c, const ops::ShapeContext& ctx, size_t index) {
  ir::TensorType t;
  t.dtype = c.dtype;
  KILNRT_CHECK(c.dtype != DType::kUndefined, kInvalidModel, ctx.node.describe(),
               "custom op shape function left the dtype of output " << index << " undefined");
  t.has_shape = c.has_shape;
  if (!c.has_shape) return t;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const ir::TensorType* in = ctx.inputs[i];
    if (!in || !in->has_shape || in->shape.size() != c.shape.size()) continue;
    bool same = true;
    for (size_t d = 0; d < c.shape.size(); ++d) same &= (in->shape[d].known() ? in->shape[d].value : -1) == c.shape[d];
    if (same) {
      t.shape = in->shape;
      return t;
    }
  }
  for (int64_t d : c.shape) {
    KILNRT_CHECK(d >= -1, kInvalidModel, ctx.node.describe(),
                 "custom op shape function gave output " << index << " the dim " << d);
    t.shape.push_back(d < 0 ? ir::Dim() : ir::Dim(d));
  }
  return t;
}

// Runs a user callback; anything it throws becomes a kilnrt::Error naming the node (kilnrt::Errors keep their code).
template <class F>
void call_user(const ir::Node& node, const char* what, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.where().find(node.name) != std::string::npos) throw;
    throw e.with_context(node.describe());
  } catch (const std::exception& e) {
    KILNRT_THROW(kInvalidArgument, node.describe(), "custom op " << what << " failed: " << e.what());
  }
}

ops::OpSchema make_schema(const CustomOp& op) {
  ops::OpSchema s;
  s.domain = op.domain;
  s.op_type = op.name;
  s.since_version = op.since_version;
  s.until_version = op.until_version;
  s.dtypes = op.dtypes;
  s.doc = op.doc.empty() ? "custom op" : "custom op: " + op.doc;
  CustomShapeFn shape = op.shape;
  s.infer = [shape](ops::ShapeContext& ctx) {
    if (!shape) {  // default: every output like input 0
      const ir::TensorType& x = ctx.input(0);
      for (size_t i = 0; i < ctx.outputs.size(); ++i) ctx.outputs[i] = x;
      return;
    }
    CustomShapeContext c{CustomOpNode(&ctx.node), ctx.opset, {}, {}, {}};
    for (const ir::TensorType* t : ctx.inputs) c.inputs.push_back(to_custom_type(t));
    c.values.assign(ctx.values.begin(), ctx.values.end());
    c.values.resize(c.inputs.size(), nullptr);
    c.outputs.resize(ctx.outputs.size());
    call_user(ctx.node, "shape function", [&] { shape(c); });
    KILNRT_CHECK(
        c.outputs.size() == ctx.outputs.size(), kInvalidModel, ctx.node.describe(),
        "custom op shape function returned " << c.outputs.size() << " outputs, the node has " << ctx.outputs.size());
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      if (i < ctx.node.outputs.size() && ctx.node.outputs[i].empty()) continue;
      ctx.outputs[i] = from_custom_type(c.outputs[i], ctx, i);
    }
  };
  CustomCpuFn cpu = op.cpu;
  s.cpu = [cpu](ops::CpuContext& ctx) {
    CustomCpuContext c{CustomOpNode(&ctx.node), ctx.opset, {}, {}};
    for (size_t i = 0; i < ctx.inputs.size(); ++i) c.inputs.push_back(ctx.has_input(i) ? ctx.inputs[i] : nullptr);
    c.outputs.resize(ctx.outputs.size());
    call_user(ctx.node, "CPU function", [&] { cpu(c); });
    KILNRT_CHECK(c.outputs.size() == ctx.outputs.size(), kInvalidModel, ctx.node.describe(),
                 "custom op CPU function resized its outputs to " << c.outputs.size());
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      if (!ctx.wants_output(i)) continue;
      KILNRT_CHECK(c.outputs[i].defined(), kInvalidModel, ctx.node.describe(),
                   "custom op CPU function did not set output " << i << " ('" << ctx.node.outputs[i] << "')");
      ctx.outputs[i] = std::move(c.outputs[i]);
    }
  };
  return s;
}

}  // namespace

const std::string& CustomOpNode::name() const { return as_node(node_).name; }
const std::string& CustomOpNode::domain() const { return as_node(node_).domain; }
const std::string& CustomOpNode::op_type() const { return as_node(node_).op_type; }
size_t CustomOpNode::num_inputs() const { return as_node(node_).inputs.size(); }
size_t CustomOpNode::num_outputs() const { return as_node(node_).outputs.size(); }
bool CustomOpNode::has_attr(const std::string& key) const { return as_node(node_).has_attr(key); }
int64_t CustomOpNode::attr_int(const std::string& key, int64_t def) const { return as_node(node_).attr_int(key, def); }
float CustomOpNode::attr_float(const std::string& key, float def) const { return as_node(node_).attr_float(key, def); }
std::string CustomOpNode::attr_string(const std::string& key, const std::string& def) const {
  return as_node(node_).attr_string(key, def);
}
std::vector<int64_t> CustomOpNode::attr_ints(const std::string& key) const {
  return as_node(node_).attr_ints(key, std::vector<int64_t>{});
}
std::vector<float> CustomOpNode::attr_floats(const std::string& key) const {
  return as_node(node_).attr_floats(key, std::vector<float>{});
}
std::vector<std::string> CustomOpNode::attr_strings(const std::string& key) const {
  const ir::Node& n = as_node(node_);
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) return {};
  KILNRT_CHECK(it->second.kind == ir::Attribute::Kind::kStrings, kInvalidModel, n.describe(),
               "attribute '" << key << "' is not a list of strings");
  return it->second.strings;
}
std::string CustomOpNode::attr_kind(const std::string& key) const {
  const ir::Node& n = as_node(node_);
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) return "";
  switch (it->second.kind) {
    case ir::Attribute::Kind::kInt: return "int";
    case ir::Attribute::Kind::kFloat: return "float";
    case ir::Attribute::Kind::kString: return "string";
    case ir::Attribute::Kind::kInts: return "ints";
    case ir::Attribute::Kind::kFloats: return "floats";
    case ir::Attribute::Kind::kStrings: return "strings";
    case ir::Attribute::Kind::kTensor: return "tensor";
    case ir::Attribute::Kind::kGraph: return "graph";
  }
  return "";
}
std::vector<std::string> CustomOpNode::attr_names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : as_node(node_).attrs) out.push_back(k);
  return out;
}

void register_custom_op(CustomOp op) {
  const std::string what = "custom op " + ops::custom::qualified_name(op.domain, op.name);
  KILNRT_CHECK(!op.domain.empty() && op.domain != "ai.onnx", kInvalidArgument, what,
               "custom ops need their own domain: '" << op.domain << "' is ONNX's");
  KILNRT_CHECK(!op.name.empty(), kInvalidArgument, what, "custom op without a name");
  KILNRT_CHECK(static_cast<bool>(op.cpu), kInvalidArgument, what,
               "a CPU function is required (it is the reference and runs CPU engines)");
  KILNRT_CHECK(op.since_version >= 1 && op.since_version <= op.until_version, kInvalidArgument, what,
               "bad opset range " << op.since_version << ".." << op.until_version);
  CustomRegistry& r = custom_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const CustomOp& o : r.ops)
    KILNRT_CHECK(!(o.domain == op.domain && o.name == op.name && o.since_version <= op.until_version &&
                   op.since_version <= o.until_version),
                 kInvalidArgument, what,
                 "is already registered for opsets " << o.since_version << ".." << o.until_version
                                                     << " (an op stays registered for the life of the process)");
  ops::OpRegistry::instance().add(make_schema(op));
  r.ops.push_back(std::move(op));
}

bool is_custom_op_registered(const std::string& domain, const std::string& name) {
  CustomRegistry& r = custom_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return std::any_of(r.ops.begin(), r.ops.end(),
                     [&](const CustomOp& o) { return o.domain == domain && o.name == name; });
}

std::vector<std::string> registered_custom_ops() {
  CustomRegistry& r = custom_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> out;
  for (const CustomOp& o : r.ops) out.push_back(ops::custom::qualified_name(o.domain, o.name));
  return out;
}

namespace ops::custom {

const CustomOp* find_custom_op(const std::string& domain, const std::string& name, int64_t opset) {
  CustomRegistry& r = custom_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const CustomOp& o : r.ops)
    if (o.domain == domain && o.name == name && opset >= o.since_version && opset <= o.until_version) return &o;
  return nullptr;
}

std::string qualified_name(const std::string& domain, const std::string& name) { return domain + ":" + name; }

}  // namespace ops::custom

#ifndef KILNRT_HAVE_CUDA
NvrtcCustomKernel nvrtc_custom_kernel(const std::string& source, const std::string& kernel_name, CustomLaunchFn launch,
                                      std::vector<std::pair<std::string, float>> float_attrs,
                                      std::vector<std::string> nvrtc_options) {
  NvrtcCustomKernel k;
  auto fail = [kernel_name](int) {
    KILNRT_THROW(kUnsupported, "kernel " + kernel_name, "this kilnrt was built without CUDA: no NVRTC custom kernels");
  };
  k.prepare = fail;
  k.cuda = [fail](CustomCudaContext&) { fail(0); };
  return k;
}
#endif

}  // namespace kilnrt
