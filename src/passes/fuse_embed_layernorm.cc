#include "passes/fuse_embed_layernorm.h"

#include "ops/nn/embed_layernorm/embed_layernorm.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

bool match(const ir::Graph& g, const GraphIndex& ix, const ir::Node& gather, FusionMatch* m) {
  if (!is_op(&gather, "Gather") || gather.inputs.size() != 2 || gather.outputs.size() != 1) return false;
  if (gather.attr_int("axis", 0) != 0) return false;
  const std::string& table = gather.inputs[0];
  const std::string& ids = gather.inputs[1];
  auto tc = g.constants.find(table);
  if (tc == g.constants.end() || tc->second.rank() != 2 || !dtype_is_float(tc->second.dtype()) ||
      tc->second.dtype() == DType::kFloat64)
    return false;
  const ir::TensorType* it = g.type_of(ids);
  if (!it || (it->dtype != DType::kInt64 && it->dtype != DType::kInt32) || g.is_constant(ids)) return false;
  const int64_t h = tc->second.shape()[1];
  if (h <= 0) return false;  // nothing to normalise: the three ops give the empty result as they are
  const ir::Node* add = ix.sole_consumer(gather.outputs[0]);
  if (!is_op(add, "Add") || add->inputs.size() != 2 || add->outputs.size() != 1) return false;
  const std::string& addend = add->inputs[0] == gather.outputs[0] ? add->inputs[1] : add->inputs[0];
  if (addend == gather.outputs[0]) return false;  // x + x
  auto ac = g.constants.find(addend);
  if (ac == g.constants.end() || ac->second.dtype() != tc->second.dtype()) return false;
  const ir::SymShape* out = shape_of(g, add->outputs[0]);
  const ir::SymShape* gathered = shape_of(g, gather.outputs[0]);
  if (!out || !gathered || *out != *gathered || out->empty() || !out->back().known() || out->back().value != h)
    return false;  // the Add must not broadcast the gathered rows
  if (!ops::nn::addend_broadcasts_along_leading_dims(ac->second.shape(), *out)) return false;
  const ir::Node* ln = ix.sole_consumer(add->outputs[0]);
  if (!ln || ln->op_type != "LayerNormalization" || !(ln->domain.empty() || ln->domain == "com.kilnrt")) return false;
  if (ln->inputs.size() < 2 || ln->inputs[0] != add->outputs[0]) return false;
  for (size_t o = 1; o < ln->outputs.size(); ++o)
    if (!ln->outputs[o].empty() && ix.uses(ln->outputs[o]) > 0) return false;  // Mean / InvStdDev read
  const int64_t rank = static_cast<int64_t>(out->size());
  int64_t axis = ln->attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis != rank - 1) return false;
  auto is_vector = [&](const std::string& v) {
    auto c = g.constants.find(v);
    return c != g.constants.end() && c->second.numel() == h && c->second.shape().back() == h &&
           c->second.dtype() == tc->second.dtype();
  };
  const std::string scale = ln->inputs[1];
  const std::string bias = ln->inputs.size() > 2 ? ln->inputs[2] : std::string();
  if (!is_vector(scale) || (!bias.empty() && !is_vector(bias))) return false;
  ir::Node f;
  f.name = ln->name + "/embed_layernorm";
  f.op_type = "EmbedLayerNorm";
  f.domain = "com.kilnrt";
  f.inputs = {ids, table, addend, scale};
  if (!bias.empty()) f.inputs.push_back(bias);
  f.outputs = {ln->outputs[0]};
  ir::Attribute eps;
  eps.kind = ir::Attribute::Kind::kFloat;
  eps.f = ln->attr_float("epsilon", 1e-5f);
  f.attrs["epsilon"] = eps;
  if (ln->has_attr("kilnrt_precision")) f.attrs["kilnrt_precision"] = ln->attrs.at("kilnrt_precision");
  m->fused = std::move(f);
  m->erase = {gather.name, add->name, ln->name};
  return true;
}

}  // namespace

size_t fuse_embed_layernorm(ir::Graph& graph) {
  if (!fusion_enabled("embed-layernorm")) return 0;
  return apply_fusions(graph, match, "embedding LayerNorm(s)");
}

}  // namespace kilnrt::passes
