#include "passes/fuse_gemm_epilogue.h"

#include "core/logging.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

bool is_float(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

using Match = FusionMatch;

// A constant of n elements laid out along the last dim only ([N], [1, N], [1, 1, N] ...).
bool bias_vector(const ir::Graph& g, const std::string& v, int64_t n, DType dt) {
  auto it = g.constants.find(v);
  if (it == g.constants.end() || it->second.dtype() != dt || it->second.numel() != n) return false;
  const Shape& s = it->second.shape();
  return !s.empty() && s.back() == n;
}

bool match(const ir::Graph& g, const GraphIndex& ix, const ir::Node& mm, Match* m) {
  if (!mm.domain.empty() || mm.outputs.size() != 1) return false;
  const bool gemm = mm.op_type == "Gemm";
  if (mm.op_type != "MatMul" && !gemm) return false;
  if (mm.inputs.size() < 2 || !g.is_constant(mm.inputs[1])) return false;
  const Tensor& w = g.constants.at(mm.inputs[1]);
  const ir::TensorType* at = g.type_of(mm.inputs[0]);
  if (w.rank() != 2 || !at || !at->has_shape || at->shape.size() < 2 || !is_float(at->dtype) || w.dtype() != at->dtype)
    return false;
  bool trans_b = false;
  std::string bias;
  std::vector<std::string> erase = {mm.name};
  std::string out = mm.outputs[0];
  if (gemm) {
    if (mm.attr_int("transA", 0) != 0 || mm.attr_float("alpha", 1.f) != 1.f) return false;
    trans_b = mm.attr_int("transB", 0) != 0;
    if (mm.inputs.size() > 2 && !mm.inputs[2].empty()) {
      if (mm.attr_float("beta", 1.f) != 1.f) return false;
      bias = mm.inputs[2];
    }
  }
  const int64_t n = trans_b ? w.shape()[0] : w.shape()[1];
  if (!bias.empty() && !bias_vector(g, bias, n, at->dtype)) return false;
  // MatMul + Add(bias)
  if (!gemm) {
    const ir::Node* add = ix.sole_consumer(out);
    if (add && add->domain.empty() && add->op_type == "Add" && add->inputs.size() == 2) {
      const std::string other = add->inputs[0] == out ? add->inputs[1] : add->inputs[0];
      if (bias_vector(g, other, n, at->dtype) && g.constants.at(other).rank() <= static_cast<int>(at->shape.size())) {
        bias = other;
        erase.push_back(add->name);
        out = add->outputs[0];
      }
    }
  }
  std::string activation = "none", approximate = "none";
  const ir::Node* act = ix.sole_consumer(out);
  // com.kilnrt:Gelu (fuse_gelu's) or ONNX Gelu-20 (what torch 2.x dynamo writes for nn.GELU at opset >= 20); both
  // have the attribute approximate ("none" / "tanh").
  if (act && (act->domain == ops::nn::kKilnrtDomain || act->domain.empty()) && act->op_type == "Gelu" &&
      act->inputs.size() == 1 && act->outputs.size() == 1) {
    activation = "gelu";
    approximate = act->attr_string("approximate", std::string("none"));
    erase.push_back(act->name);
    out = act->outputs[0];
  }
  // A skip connection after a linear layer without activation: Add(Y, R) with R of Y's exact shape and dtype -> the
  // GEMM's C operand (beta = 1). Not after an activation (the epilogue would apply it to the sum).
  std::string residual;
  if (activation == "none") {
    const ir::Node* add = ix.sole_consumer(out);
    if (add && add->domain.empty() && add->op_type == "Add" && add->inputs.size() == 2 && add->outputs.size() == 1 &&
        add->inputs[0] != add->inputs[1]) {
      const std::string other = add->inputs[0] == out ? add->inputs[1] : add->inputs[0];
      const ir::TensorType* yt = g.type_of(out);
      const ir::TensorType* rt = g.type_of(other);
      const ir::TensorType* st = g.type_of(add->outputs[0]);
      bool same = yt && rt && st && yt->has_shape && rt->has_shape && st->has_shape && rt->dtype == at->dtype &&
                  rt->shape.size() == yt->shape.size() && st->shape.size() == yt->shape.size();
      for (size_t i = 0; same && i < yt->shape.size(); ++i) {
        const ir::Dim& d = yt->shape[i];
        same = (d.known() || !d.param.empty()) && rt->shape[i] == d && st->shape[i] == d;
      }
      if (same) {
        residual = other;
        erase.push_back(add->name);
        out = add->outputs[0];
      }
    }
  }
  if (bias.empty() && activation == "none" && residual.empty()) return false;  // nothing to fuse
  ir::Node& f = m->fused;
  f.name = mm.name + "/fused_matmul";
  f.op_type = "FusedMatMul";
  f.domain = ops::nn::kKilnrtDomain;
  f.inputs = {mm.inputs[0], mm.inputs[1]};
  if (!bias.empty() || !residual.empty()) f.inputs.push_back(bias);
  if (!residual.empty()) f.inputs.push_back(residual);
  f.outputs = {out};
  ir::Attribute tb;
  tb.kind = ir::Attribute::Kind::kInt;
  tb.i = trans_b ? 1 : 0;
  f.attrs["trans_b"] = tb;
  ir::Attribute a, ap;
  a.kind = ap.kind = ir::Attribute::Kind::kString;
  a.s = activation;
  ap.s = approximate;
  f.attrs["activation"] = a;
  f.attrs["approximate"] = ap;
  m->erase = std::move(erase);
  return true;
}

}  // namespace

size_t fuse_gemm_epilogues(ir::Graph& graph) {
  if (!fusion_enabled("gemm-epilogue")) return 0;
  return apply_fusions(graph, match, "GEMM epilogue(s)");
}

}  // namespace kilnrt::passes
