// com.kilnrt:FusedConv, the CPU reference (see fused_conv.h): the registered Conv kernel, then residual add and
// activation in place, in float32 (16-bit tensors are converted like the other nn kernels).
#include "ops/nn/fused_conv/fused_conv.h"

#include <cmath>

#include "core/check.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

constexpr int64_t kConvOpset = 11;  // the Conv schema covers every opset; its semantics do not change

struct ActivationInfo {
  FusedActivation act;
  const char* name;
  size_t params;
};
constexpr ActivationInfo kActivations[] = {
    {FusedActivation::kNone, "", 0},
    {FusedActivation::kRelu, "Relu", 0},
    {FusedActivation::kClip, "Clip", 2},
    {FusedActivation::kLeakyRelu, "LeakyRelu", 1},
    {FusedActivation::kHardSigmoid, "HardSigmoid", 2},
    {FusedActivation::kHardSwish, "HardSwish", 0},
    {FusedActivation::kSigmoid, "Sigmoid", 0},
    {FusedActivation::kSilu, "Silu", 0},
    {FusedActivation::kGelu, "Gelu", 0},
    {FusedActivation::kGeluTanh, "GeluTanh", 0},
};

const OpSchema& conv_schema() {
  const OpSchema* s = OpRegistry::instance().find("", "Conv", kConvOpset);
  KILNRT_CHECK(s != nullptr, kInternal, "FusedConv", "the Conv op is not registered");
  return *s;
}

void infer_fused_conv(ShapeContext& ctx) {
  read_fused_epilogue(ctx.node);  // validates the attributes
  const ir::Node conv = conv_part_of(ctx.node);
  ShapeContext inner{conv, kConvOpset, {}, {}, {}};
  for (size_t i = 0; i < 3; ++i) {
    inner.inputs.push_back(ctx.has_input(i) ? ctx.inputs[i] : nullptr);
    inner.values.push_back(ctx.value(i));
  }
  inner.outputs.resize(1);
  conv_schema().infer(inner);
  ir::TensorType out = inner.outputs[0];
  if (ctx.has_input(3)) {
    const ir::TensorType& z = ctx.input(3);
    KILNRT_CHECK(z.dtype == out.dtype, kInvalidModel, ctx.node.describe(),
                 "residual Z has dtype " << dtype_name(z.dtype) << ", the convolution gives " << dtype_name(out.dtype));
    if (z.has_shape && out.has_shape) {
      bool same = z.shape.size() == out.shape.size();
      for (size_t i = 0; same && i < z.shape.size(); ++i)
        same = !z.shape[i].known() || !out.shape[i].known() || z.shape[i].value == out.shape[i].value;
      KILNRT_CHECK(same, kInvalidModel, ctx.node.describe(),
                   "residual Z of shape " << ir::sym_shape_to_string(z.shape) << " must have the convolution's shape "
                                          << ir::sym_shape_to_string(out.shape) << " (no broadcasting)");
    }
  }
  ctx.outputs[0] = out;
}

// One tight loop per activation (the switch outside, so that the compiler vectorises the simple ones).
template <class F>
void map_inplace(float* y, int64_t n, F f) {
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) y[i] = f(y[i]);
}

void apply_activation_inplace(const FusedEpilogue& e, float* y, int64_t n) {
  const float a = e.a, b = e.b;
  switch (e.act) {
    case FusedActivation::kNone: return;
    case FusedActivation::kRelu: return map_inplace(y, n, [](float x) { return x < 0.f ? 0.f : x; });
    case FusedActivation::kClip: return map_inplace(y, n, [a, b](float x) { return x < a ? a : (x > b ? b : x); });
    case FusedActivation::kLeakyRelu: return map_inplace(y, n, [a](float x) { return x < 0.f ? a * x : x; });
    case FusedActivation::kHardSigmoid:
      return map_inplace(y, n, [a, b](float x) {
        const float v = a * x + b;
        return v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
      });
    case FusedActivation::kHardSwish:
      return map_inplace(y, n, [](float x) {
        const float v = x * (1.f / 6.f) + 0.5f;
        return x * (v < 0.f ? 0.f : (v > 1.f ? 1.f : v));
      });
    default: return map_inplace(y, n, [&e](float x) { return apply_fused_activation(e, x); });
  }
}

void fused_conv_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const FusedEpilogue e = read_fused_epilogue(node);
  const ir::Node conv = conv_part_of(node);
  CpuContext inner{conv, kConvOpset, {}, {}};
  for (size_t i = 0; i < 3; ++i) inner.inputs.push_back(ctx.has_input(i) ? ctx.inputs[i] : nullptr);
  Tensor x_act;  // input_activation: the convolution reads in_act(X) (its zero padding stays zero)
  if (e.in_act != FusedActivation::kNone) {
    const Tensor& x_in = ctx.input(0);
    x_act = to_float32(x_in, node, "X");
    if (x_act.data<float>() == x_in.data<float>()) x_act = x_act.clone();
    FusedEpilogue in;
    in.act = e.in_act, in.a = e.in_a, in.b = e.in_b;
    apply_activation_inplace(in, x_act.data<float>(), x_act.numel());
    if (x_in.dtype() != DType::kFloat32) x_act = from_float32(x_act, x_in.dtype());  // rounded like the input
    inner.inputs[0] = &x_act;
  }
  inner.outputs.resize(1);
  try {
    conv_schema().cpu(inner);
  } catch (const Error& err) {
    if (err.where().find(node.name) != std::string::npos) throw;
    throw err.with_context(node.describe());
  }
  const DType dtype = inner.outputs[0].dtype();
  Tensor y = dtype == DType::kFloat32 ? inner.outputs[0] : to_float32(inner.outputs[0], node, "Y");
  float* yp = y.data<float>();
  const int64_t n = y.numel();
  if (ctx.has_input(3)) {
    const Tensor& z_in = ctx.input(3);
    KILNRT_CHECK(z_in.shape() == y.shape(), kInvalidArgument, node.describe(),
                 "residual Z of shape " << shape_to_string(z_in.shape()) << " must have the convolution's shape "
                                        << shape_to_string(y.shape()) << " (no broadcasting)");
    Tensor z = to_float32(z_in, node, "Z");
    const float* zp = z.data<float>();
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) yp[i] += zp[i];
  }
  apply_activation_inplace(e, yp, n);
  ctx.outputs[0] = dtype == DType::kFloat32 ? y : from_float32(y, dtype);
}

KILNRT_REGISTER_OP(OpSchema{kFusedConvDomain, kFusedConvOp, 1, 1000, infer_fused_conv, fused_conv_cpu, float_dtypes(),
                            "Conv + bias + residual add (Z, same shape) + activation in one node (made by the "
                            "conv epilogue fusion pass)"});

}  // namespace

const char* fused_activation_name(FusedActivation a) {
  for (const ActivationInfo& i : kActivations)
    if (i.act == a) return i.name;
  return "?";
}

namespace {

// The activation named by attribute `key` with its `params_key` floats; throws kInvalidModel naming the node.
void read_activation(const ir::Node& node, const char* key, const char* params_key, FusedActivation* act, float* a,
                     float* b) {
  const std::string name = node.attr_string(key, std::string());
  const std::vector<float> params = node.attr_floats(params_key, std::vector<float>());
  const ActivationInfo* found = nullptr;
  for (const ActivationInfo& i : kActivations)
    if (name == i.name) found = &i;
  KILNRT_CHECK(found != nullptr, kInvalidModel, node.describe(), "unknown FusedConv " << key << " '" << name << "'");
  KILNRT_CHECK(params.size() == found->params, kInvalidModel, node.describe(),
               "FusedConv " << key << " '" << name << "' takes " << found->params << " " << params_key << ", got "
                            << params.size());
  *act = found->act;
  if (!params.empty()) *a = params[0];
  if (params.size() > 1) *b = params[1];
}

}  // namespace

FusedEpilogue read_fused_epilogue(const ir::Node& node) {
  FusedEpilogue e;
  read_activation(node, "activation", "activation_params", &e.act, &e.a, &e.b);
  read_activation(node, "input_activation", "input_activation_params", &e.in_act, &e.in_a, &e.in_b);
  e.has_bias = node.inputs.size() > 2 && !node.inputs[2].empty();
  e.has_residual = node.inputs.size() > 3 && !node.inputs[3].empty();
  return e;
}

void check_input_activation_reader(const ir::Node& node, const ir::Graph& graph) {
  if (!node.has_attr("input_activation") || node.inputs.empty() || node.inputs[0].empty()) return;
  const std::string& x = node.inputs[0];
  int reads = 0;
  for (const ir::Node& n : graph.nodes)
    for (const std::string& in : n.inputs) reads += in == x;
  for (const std::string& out : graph.outputs) reads += out == x;
  KILNRT_CHECK(reads == 1, kUnsupported, node.describe(),
               "input_activation needs its input '" << x << "' read by this node only and no graph output (" << reads
                                                    << " reads)");
}

ir::Node conv_part_of(const ir::Node& fused) {
  ir::Node conv;
  conv.name = fused.name;
  conv.op_type = "Conv";
  conv.inputs.assign(fused.inputs.begin(), fused.inputs.begin() + std::min<size_t>(fused.inputs.size(), 3));
  while (!conv.inputs.empty() && conv.inputs.back().empty()) conv.inputs.pop_back();
  conv.outputs = fused.outputs;
  for (const auto& [k, v] : fused.attrs)
    if (k != "activation" && k != "activation_params" && k != "input_activation" && k != "input_activation_params")
      conv.attrs[k] = v;
  return conv;
}

std::string describe_epilogue(const FusedEpilogue& e) {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : "+") + part; };
  auto lower = [](FusedActivation act) {
    std::string a = fused_activation_name(act);
    for (char& c : a) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return a;
  };
  if (e.in_act != FusedActivation::kNone) add("in-" + lower(e.in_act));
  if (e.has_bias) add("bias");
  if (e.has_residual) add("add");
  if (e.act != FusedActivation::kNone) add(lower(e.act));
  return s.empty() ? "none" : s;
}

float apply_fused_activation(const FusedEpilogue& e, float x) {
  switch (e.act) {
    case FusedActivation::kNone: return x;
    case FusedActivation::kRelu: return x < 0.f ? 0.f : x;
    case FusedActivation::kClip: return x < e.a ? e.a : (x > e.b ? e.b : x);
    case FusedActivation::kLeakyRelu: return x < 0.f ? e.a * x : x;
    case FusedActivation::kHardSigmoid: return std::fmin(1.f, std::fmax(0.f, e.a * x + e.b));
    case FusedActivation::kHardSwish: return x * std::fmin(1.f, std::fmax(0.f, x * (1.f / 6.f) + 0.5f));
    case FusedActivation::kSigmoid: return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x))));
    case FusedActivation::kSilu: return static_cast<float>(x / (1.0 + std::exp(-static_cast<double>(x))));
    case FusedActivation::kGelu:
      return static_cast<float>(0.5 * x * (1.0 + std::erf(static_cast<double>(x) * 0.70710678118654752440)));
    case FusedActivation::kGeluTanh: {
      const double d = x, k = 0.79788456080286535588;  // sqrt(2/pi)
      return static_cast<float>(0.5 * d * (1.0 + std::tanh(k * (d + 0.044715 * d * d * d))));
    }
  }
  return x;
}

}  // namespace kilnrt::ops::nn
