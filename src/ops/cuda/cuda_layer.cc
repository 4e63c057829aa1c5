#include "ops/cuda/cuda_layer.h"

#include "ops/custom/custom_registry.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {

namespace {

std::string canonical_domain(const std::string& d) { return d == "ai.onnx" ? std::string() : d; }

}  // namespace

LayerRegistry& LayerRegistry::instance() {
  static LayerRegistry* r = new LayerRegistry;  // leaked: registrars run during static init of this library
  return *r;
}

void LayerRegistry::add(LayerEntry entry) {
  entry.domain = canonical_domain(entry.domain);
  auto key = std::make_pair(entry.domain, entry.op_type);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    conflicts_ += "CUDA layer " + (entry.domain.empty() ? "" : entry.domain + ":") + entry.op_type +
                  " registered twice: in " + it->second.source + " and in " + entry.source + "\n";
    return;
  }
  entries_.emplace(std::move(key), std::move(entry));
}

const LayerEntry* LayerRegistry::find(const std::string& domain, const std::string& op_type) const {
  KILNRT_CHECK(conflicts_.empty(), kInternal, op_type, "the CUDA layer registry is inconsistent: " << conflicts_);
  auto it = entries_.find(std::make_pair(canonical_domain(domain), op_type));
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<const LayerEntry*> LayerRegistry::all() const {
  std::vector<const LayerEntry*> out;
  for (const auto& [k, v] : entries_) out.push_back(&v);
  return out;
}

std::string LayerRegistry::conflicts() const { return conflicts_; }

LayerRegistrar::LayerRegistrar(const char* file, std::initializer_list<const char*> ops, LayerSupports supports,
                               LayerFactory create) {
  for (const char* name : ops) {
    LayerEntry e;
    const std::string n = name;
    const size_t colon = n.rfind(':');
    if (colon != std::string::npos) {
      e.domain = n.substr(0, colon);
      e.op_type = n.substr(colon + 1);
    } else {
      e.op_type = n;
    }
    e.supports = supports;
    e.create = create;
    e.source = ops::source_path_in_tree(file);
    LayerRegistry::instance().add(std::move(e));
  }
}

const LayerEntry* find_layer(const ir::Node& node, const ir::Graph& graph) {
  if (!node.domain.empty() && ops::custom::find_custom_op(node.domain, node.op_type, graph.opset(node.domain)))
    return LayerRegistry::instance().find(kCustomLayerDomain, "custom_op");
  return LayerRegistry::instance().find(node.domain, node.op_type);
}

std::string cuda_supports(const ir::Node& node, const ir::Graph& graph) {
  if (!node.domain.empty() && ops::custom::find_custom_op(node.domain, node.op_type, graph.opset(node.domain))) {
    const LayerEntry* c = find_layer(node, graph);
    return c ? c->supports(node, graph) : "no CUDA layer for custom ops in this build";
  }
  const LayerEntry* e = LayerRegistry::instance().find(node.domain, node.op_type);
  if (!e) {
    const std::string d = canonical_domain(node.domain);
    return "no CUDA layer for op " + (d.empty() ? "" : d + ":") + node.op_type;
  }
  return e->supports ? e->supports(node, graph) : std::string();
}

void check_launch(int status, const std::string& node, const char* kernel) {
  if (status != 0)
    throw Error(ErrorCode::kCuda,
                std::string("kernel ") + kernel + " failed to launch: " + kilnrt::cuda::kernels::error_string(status),
                node, kernel, __FILE__, __LINE__);
}

kilnrt::cuda::kernels::Broadcast3 make_broadcast(const Shape& out, const std::vector<Shape>& ins) {
  kilnrt::cuda::kernels::Broadcast3 bc;
  bool same = true;
  for (const Shape& s : ins) same &= s == out;
  bc.contiguous_same = same;
  if (same) return bc;
  // Merge nothing: plain right-aligned broadcasting over at most kMaxDims dims.
  const int rank = static_cast<int>(out.size());
  KILNRT_CHECK(rank <= kilnrt::cuda::kernels::kMaxDims, kUnsupported, "broadcast",
               "rank " << rank << " exceeds " << kilnrt::cuda::kernels::kMaxDims);
  bc.rank = rank;
  int64_t* strides[3] = {bc.s0, bc.s1, bc.s2};
  for (int d = 0; d < rank; ++d) bc.dims[d] = out[d];
  // s0 is the output (contiguous); s1, s2 the first two operands — callers with 3 operands (Where) pass
  // {cond, x, z} and use s0 for cond: see layers. Here: strides for up to 3 operands in order.
  for (size_t k = 0; k < ins.size() && k < 3; ++k) {
    const Shape& s = ins[k];
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int sd = d - (rank - static_cast<int>(s.size()));
      int64_t v = 0;
      if (sd >= 0) {
        v = s[sd] == 1 ? 0 : stride;
        stride *= s[sd];
      }
      strides[k][d] = v;
    }
  }
  return bc;
}

int kernel_dtype_code(DType t) {
  switch (t) {
    case DType::kFloat32: return 0;
    case DType::kInt64: return 1;
    case DType::kInt32: return 2;
    case DType::kBool: return 3;
    case DType::kFloat16: return 4;
    case DType::kBFloat16: return 5;
    default: return -1;
  }
}

int float_code(DType t) {
  switch (t) {
    case DType::kFloat32: return 0;
    case DType::kFloat16: return 1;
    case DType::kBFloat16: return 2;
    default: return -1;
  }
}

int cast_dtype_code(DType t) {
  switch (t) {
    case DType::kFloat32: return 0;
    case DType::kInt64: return 1;
    case DType::kInt32: return 2;
    case DType::kBool: return 3;
    case DType::kInt8: return 4;
    case DType::kUInt8: return 5;
    case DType::kFloat64: return 6;
    case DType::kFloat16: return 7;
    case DType::kBFloat16: return 8;
    default: return -1;
  }
}

DType value_dtype(const ir::Graph& g, const std::string& name) {
  const ir::TensorType* t = g.type_of(name);
  return t ? t->dtype : DType::kUndefined;
}

Precision node_precision(const ir::Node& node) {
  if (!node.has_attr(kPrecisionAttr)) return Precision::kFp32;
  const std::string p = node.attr_string(kPrecisionAttr);
  if (p == "fp16") return Precision::kFp16;
  if (p == "bf16") return Precision::kBf16;
  if (p == "tf32") return Precision::kTf32;
  KILNRT_CHECK(p == "fp32", kInvalidModel, node.describe(), "unknown precision '" << p << "'");
  return Precision::kFp32;
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
  }
  return "?";
}

}  // namespace kilnrt::backends::cuda
