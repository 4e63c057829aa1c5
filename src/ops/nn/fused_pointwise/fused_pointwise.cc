// com.kilnrt:FusedPointwise, the CPU reference (see fused_pointwise.h): the inputs broadcast to the output shape,
// the register program evaluated per element in float32.
#include "ops/nn/fused_pointwise/fused_pointwise.h"

#include <cmath>
#include <sstream>

#include "core/check.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::ops::nn {
namespace {

struct OpInfo {
  int op;
  const char* name;
  int arity;
};
constexpr OpInfo kOps[] = {
    {kPwConst, "Const", 0},
    {kPwNeg, "Neg", 1},
    {kPwAbs, "Abs", 1},
    {kPwExp, "Exp", 1},
    {kPwLog, "Log", 1},
    {kPwSqrt, "Sqrt", 1},
    {kPwReciprocal, "Reciprocal", 1},
    {kPwSigmoid, "Sigmoid", 1},
    {kPwTanh, "Tanh", 1},
    {kPwErf, "Erf", 1},
    {kPwRelu, "Relu", 1},
    {kPwFloor, "Floor", 1},
    {kPwCeil, "Ceil", 1},
    {kPwSin, "Sin", 1},
    {kPwCos, "Cos", 1},
    {kPwSoftplus, "Softplus", 1},
    {kPwSoftsign, "Softsign", 1},
    {kPwHardSwish, "HardSwish", 1},
    {kPwIdentity, "Identity", 1},
    {kPwMish, "Mish", 1},
    {kPwLeakyRelu, "LeakyRelu", 1},
    {kPwElu, "Elu", 1},
    {kPwHardSigmoid, "HardSigmoid", 1},
    {kPwClip, "Clip", 1},
    {kPwPowScalar, "Pow", 1},
    {kPwSelu, "Selu", 1},
    {kPwCelu, "Celu", 1},
    {kPwThresholdedRelu, "ThresholdedRelu", 1},
    {kPwGelu, "Gelu", 1},
    {kPwCast, "Cast", 1},
    {kPwAdd, "Add", 2},
    {kPwSub, "Sub", 2},
    {kPwMul, "Mul", 2},
    {kPwDiv, "Div", 2},
    {kPwPow, "Pow", 2},
    {kPwMax, "Max", 2},
    {kPwMin, "Min", 2},
    {kPwPRelu, "PRelu", 2},
    {kPwWhere, "Where", 3},
};

const OpInfo* find_op(int op) {
  for (const OpInfo& i : kOps)
    if (i.op == op) return &i;
  return nullptr;
}

DType cast_target(float code) {
  return code == 1.f ? DType::kFloat16 : (code == 2.f ? DType::kBFloat16 : DType::kFloat32);
}

bool is_float(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

void infer_fused_pointwise(ShapeContext& ctx) {
  const PwProgram p = read_pointwise_program(ctx.node);
  std::vector<DType> dtypes;
  ir::SymShape out;
  bool all_shapes = true;
  for (int i = 0; i < p.num_inputs; ++i) {
    const ir::TensorType& t = ctx.input(static_cast<size_t>(i));
    dtypes.push_back(t.dtype);
    if (!t.has_shape)
      all_shapes = false;
    else if (all_shapes)
      out = broadcast_sym_shapes(out, t.shape, ctx.node);
  }
  const DType dtype = pointwise_register_dtypes(p, dtypes, ctx.node).back();
  if (all_shapes)
    ctx.set_output(0, dtype, out);
  else
    ctx.set_output_rank_unknown(0, dtype);
}

// An input as float32 values (bool as 0 / 1).
Tensor input_as_float(const Tensor& t, const ir::Node& node, int index) {
  if (t.dtype() != DType::kBool) return to_float32(t, node, ("input " + std::to_string(index)).c_str());
  Tensor f = Tensor::empty(DType::kFloat32, t.shape());
  const uint8_t* b = t.data<uint8_t>();
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = b[i] ? 1.f : 0.f;
  return f;
}

void fused_pointwise_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const PwProgram p = read_pointwise_program(node);
  std::vector<Tensor> ins;
  std::vector<DType> dtypes;
  Shape out_shape;
  for (int i = 0; i < p.num_inputs; ++i) {
    const Tensor& t = ctx.input(static_cast<size_t>(i));
    dtypes.push_back(t.dtype());
    out_shape = broadcast_shapes(out_shape, t.shape(), node);
  }
  const DType out_dtype = pointwise_register_dtypes(p, dtypes, node).back();
  for (int i = 0; i < p.num_inputs; ++i) ins.push_back(input_as_float(ctx.input(static_cast<size_t>(i)), node, i));
  const size_t rank = out_shape.size();
  // Element strides of each input over the output's dims (0 on broadcast dims).
  std::vector<std::vector<int64_t>> strides(ins.size(), std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < ins.size(); ++k) {
    const Shape& s = ins[k].shape();
    int64_t st = 1;
    for (size_t j = 0; j < s.size(); ++j) {
      const size_t d = s.size() - 1 - j, od = rank - 1 - j;
      strides[k][od] = s[d] == 1 ? 0 : st;
      st *= s[d];
    }
  }
  Tensor y = Tensor::empty(DType::kFloat32, out_shape);
  float* yp = y.data<float>();
  const int64_t n = y.numel();
  std::vector<int64_t> coord(rank, 0), off(ins.size(), 0);
  std::vector<float> regs(static_cast<size_t>(p.num_inputs) + p.code.size(), 0.f);
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < ins.size(); ++k) regs[k] = ins[k].data<float>()[off[k]];
    size_t r = ins.size();
    for (const PwInstr& in : p.code) {
      const float a = in.a >= 0 ? regs[in.a] : 0.f, b = in.b >= 0 ? regs[in.b] : 0.f, c = in.c >= 0 ? regs[in.c] : 0.f;
      regs[r++] = pointwise_apply(in, a, b, c);
    }
    yp[i] = regs.back();
    for (size_t d = rank; d-- > 0;) {  // odometer step, offsets updated incrementally
      ++coord[d];
      for (size_t k = 0; k < ins.size(); ++k) off[k] += strides[k][d];
      if (coord[d] < out_shape[d]) break;
      for (size_t k = 0; k < ins.size(); ++k) off[k] -= strides[k][d] * coord[d];
      coord[d] = 0;
    }
  }
  ctx.outputs[0] = out_dtype == DType::kFloat32 ? y : from_float32(y, out_dtype);
}

KILNRT_REGISTER_OP(OpSchema{kKilnrtDomain, kFusedPointwiseOp, 1, 1000, infer_fused_pointwise, fused_pointwise_cpu,
                            float_dtypes(),
                            "a chain of pointwise ops (numpy broadcasting) as one register program (made by the "
                            "pointwise fusion pass; CUDA: one NVRTC kernel stored in the engine)"});

}  // namespace

int pointwise_arity(int op) {
  const OpInfo* i = find_op(op);
  return i ? i->arity : -1;
}

const char* pointwise_op_name(int op) {
  const OpInfo* i = find_op(op);
  return i ? i->name : "?";
}

PwProgram read_pointwise_program(const ir::Node& node) {
  const std::vector<int64_t> code = node.attr_ints("program", std::vector<int64_t>());
  const std::vector<float> params = node.attr_floats("params", std::vector<float>());
  KILNRT_CHECK(!code.empty() && code.size() % 4 == 0, kInvalidModel, node.describe(),
               "FusedPointwise needs a non-empty 'program' of 4 ints per instruction, got " << code.size() << " ints");
  const size_t n = code.size() / 4;
  KILNRT_CHECK(params.size() == 2 * n, kInvalidModel, node.describe(),
               "FusedPointwise 'params' must hold 2 floats per instruction (" << 2 * n << "), got " << params.size());
  PwProgram p;
  p.num_inputs = static_cast<int>(node.inputs.size());
  for (const std::string& in : node.inputs)
    KILNRT_CHECK(!in.empty(), kInvalidModel, node.describe(), "FusedPointwise inputs cannot be omitted");
  for (size_t k = 0; k < n; ++k) {
    PwInstr in;
    in.op = static_cast<int>(code[4 * k]);
    const int arity = pointwise_arity(in.op);
    KILNRT_CHECK(arity >= 0, kInvalidModel, node.describe(),
                 "FusedPointwise instruction " << k << " has unknown opcode " << code[4 * k]);
    const int64_t defined = p.num_inputs + static_cast<int64_t>(k);  // registers readable by instruction k
    int* ops[3] = {&in.a, &in.b, &in.c};
    for (int j = 0; j < 3; ++j) {
      const int64_t r = code[4 * k + 1 + j];
      if (j < arity) {
        KILNRT_CHECK(r >= 0 && r < defined, kInvalidModel, node.describe(),
                     "FusedPointwise instruction " << k << " (" << pointwise_op_name(in.op) << ") reads register " << r
                                                   << ", only 0.." << defined - 1 << " are defined");
        *ops[j] = static_cast<int>(r);
      } else {
        KILNRT_CHECK(r == -1, kInvalidModel, node.describe(),
                     "FusedPointwise instruction " << k << " (" << pointwise_op_name(in.op) << ") takes " << arity
                                                   << " operand(s), operand " << j << " must be -1");
      }
    }
    in.p0 = params[2 * k];
    in.p1 = params[2 * k + 1];
    KILNRT_CHECK(in.op != kPwCast || in.p0 == 0.f || in.p0 == 1.f || in.p0 == 2.f, kInvalidModel, node.describe(),
                 "FusedPointwise Cast target code must be 0, 1 or 2, got " << in.p0);
    p.code.push_back(in);
  }
  return p;
}

void write_pointwise_program(const PwProgram& p, ir::Node* node) {
  ir::Attribute prog, params;
  prog.kind = ir::Attribute::Kind::kInts;
  params.kind = ir::Attribute::Kind::kFloats;
  for (const PwInstr& in : p.code) {
    prog.ints.insert(prog.ints.end(), {in.op, in.a, in.b, in.c});
    params.floats.insert(params.floats.end(), {in.p0, in.p1});
  }
  node->attrs["program"] = prog;
  node->attrs["params"] = params;
}

std::vector<DType> pointwise_register_dtypes(const PwProgram& p, const std::vector<DType>& inputs,
                                             const ir::Node& node) {
  std::vector<DType> t = inputs;
  DType first_float = DType::kFloat32;
  for (DType d : inputs)
    if (is_float(d)) {
      first_float = d;
      break;
    }
  for (size_t k = 0; k < p.code.size(); ++k) {
    const PwInstr& in = p.code[k];
    auto need_float = [&](int r) {
      KILNRT_CHECK(is_float(t[r]), kInvalidModel, node.describe(),
                   "FusedPointwise instruction " << k << " (" << pointwise_op_name(in.op) << ") reads register " << r
                                                 << " of dtype " << dtype_name(t[r]) << ", a float type is needed");
    };
    switch (pointwise_arity(in.op)) {
      case 0: t.push_back(first_float); break;
      case 1:
        need_float(in.a);
        t.push_back(in.op == kPwCast ? cast_target(in.p0) : t[in.a]);
        break;
      case 2:
        need_float(in.a);
        need_float(in.b);
        t.push_back(t[in.a]);
        break;
      default:
        KILNRT_CHECK(t[in.a] == DType::kBool, kInvalidModel, node.describe(),
                     "FusedPointwise instruction " << k << " (Where) needs a bool condition, register " << in.a
                                                   << " is " << dtype_name(t[in.a]));
        need_float(in.b);
        need_float(in.c);
        t.push_back(t[in.b]);
    }
  }
  return t;
}

float pointwise_apply(const PwInstr& in, float a, float b, float c) {
  switch (in.op) {
    case kPwConst: return in.p0;
    case kPwNeg: return -a;
    case kPwAbs: return std::fabs(a);
    case kPwExp: return std::exp(a);
    case kPwLog: return std::log(a);
    case kPwSqrt: return std::sqrt(a);
    case kPwReciprocal: return 1.f / a;
    case kPwSigmoid: return 1.f / (1.f + std::exp(-a));
    case kPwTanh: return std::tanh(a);
    case kPwErf: return std::erf(a);
    case kPwRelu: return a < 0.f ? 0.f : a;
    case kPwFloor: return std::floor(a);
    case kPwCeil: return std::ceil(a);
    case kPwSin: return std::sin(a);
    case kPwCos: return std::cos(a);
    case kPwSoftplus: return a > 20.f ? a : std::log1p(std::exp(a));
    case kPwSoftsign: return a / (1.f + std::fabs(a));
    case kPwHardSwish: return a * std::fmin(1.f, std::fmax(0.f, a * (1.f / 6.f) + 0.5f));
    case kPwIdentity: return a;
    case kPwMish: return a * std::tanh(a > 20.f ? a : std::log1p(std::exp(a)));
    case kPwLeakyRelu: return a < 0.f ? in.p0 * a : a;
    case kPwElu: return a < 0.f ? in.p0 * (std::exp(a) - 1.f) : a;
    case kPwHardSigmoid: return std::fmin(1.f, std::fmax(0.f, in.p0 * a + in.p1));
    case kPwClip: return a < in.p0 ? in.p0 : (a > in.p1 ? in.p1 : a);
    case kPwPowScalar: return std::pow(a, in.p0);
    case kPwSelu: return in.p1 * (a <= 0.f ? in.p0 * (std::exp(a) - 1.f) : a);
    case kPwCelu: return std::fmax(0.f, a) + std::fmin(0.f, in.p0 * (std::exp(a / in.p0) - 1.f));
    case kPwThresholdedRelu: return a > in.p0 ? a : 0.f;
    case kPwGelu:
      if (in.p0 != 0.f) {
        const double d = a;
        return static_cast<float>(0.5 * d * (1.0 + std::tanh(0.79788456080286535588 * (d + 0.044715 * d * d * d))));
      }
      return static_cast<float>(0.5 * a * (1.0 + std::erf(static_cast<double>(a) * 0.70710678118654752440)));
    case kPwCast:
      if (in.p0 == 1.f) return half_to_float(float_to_half(a));
      if (in.p0 == 2.f) return bfloat16_to_float(float_to_bfloat16(a));
      return a;
    case kPwAdd: return a + b;
    case kPwSub: return a - b;
    case kPwMul: return a * b;
    case kPwDiv: return a / b;
    case kPwPow: return std::pow(a, b);
    case kPwMax: return std::isnan(a) || std::isnan(b) ? NAN : std::fmax(a, b);
    case kPwMin: return std::isnan(a) || std::isnan(b) ? NAN : std::fmin(a, b);
    case kPwPRelu: return a < 0.f ? b * a : a;
    case kPwWhere: return a != 0.f ? b : c;
    default: return NAN;
  }
}

std::string describe_pointwise(const PwProgram& p) {
  std::string s;
  for (const PwInstr& in : p.code) {
    if (in.op == kPwConst) continue;
    std::string name = pointwise_op_name(in.op);
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    s += (s.empty() ? "" : "+") + name;
  }
  return s.empty() ? "const" : s;
}

}  // namespace kilnrt::ops::nn
