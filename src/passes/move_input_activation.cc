#include "passes/move_input_activation.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "core/logging.h"
#include "kilnrt/error.h"
#include "ops/nn/fused_conv/fused_conv.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

using ops::nn::FusedActivation;

bool is_fused_conv(const ir::Node& n) {
  return n.op_type == ops::nn::kFusedConvOp && n.domain == ops::nn::kFusedConvDomain;
}

// The constant 4-D float weight of a convolution node, or nullptr.
const Tensor* conv_weight(const ir::Graph& g, const ir::Node& n) {
  if (n.inputs.size() < 2) return nullptr;
  auto it = g.constants.find(n.inputs[1]);
  if (it == g.constants.end() || it->second.rank() != 4) return nullptr;
  return &it->second;
}

// A 1x1 group-1 FusedConv with an activation the GEMM epilogue does not apply (not none, not Relu).
bool moving_producer(const ir::Graph& g, const ir::Node& n) {
  if (!is_fused_conv(n) || n.outputs.size() != 1 || n.attr_int("group", 1) != 1) return false;
  const Tensor* w = conv_weight(g, n);
  if (!w || w->dim(2) != 1 || w->dim(3) != 1) return false;
  ops::nn::FusedEpilogue e;
  try {
    e = ops::nn::read_fused_epilogue(n);
  } catch (const Error&) {
    return false;
  }
  return e.act != FusedActivation::kNone && e.act != FusedActivation::kRelu && e.in_act == FusedActivation::kNone;
}

// KILNRT_INPUT_ACT: unset / "0" off (the default until an H100 run shows the move faster, see the header), "1" on,
// "stride1" only into stride-1 depthwise convolutions (a stride-2 layer activates ~4 input elements per output).
std::string mode() {
  const char* env = std::getenv("KILNRT_INPUT_ACT");
  return env ? std::string(env) : std::string();
}
bool stride1_only() { return mode() == "stride1"; }

// A 2-D depthwise Conv / FusedConv reading `x` (C channels) as its input X: weight [C, 1, KH, KW], group C, and no
// input activation yet.
bool depthwise_consumer(const ir::Graph& g, const ir::Node& n, const std::string& x) {
  const bool plain = n.op_type == "Conv" && n.domain.empty();
  if (!(plain || is_fused_conv(n)) || n.inputs.empty() || n.inputs[0] != x || n.outputs.size() != 1) return false;
  if (n.has_attr("input_activation")) return false;
  const Tensor* w = conv_weight(g, n);
  const ir::SymShape* xs = shape_of(g, x);
  if (!w || !xs || xs->size() != 4 || !(*xs)[1].known()) return false;
  const int64_t c = (*xs)[1].value;
  if (stride1_only()) {
    for (int64_t s : n.attr_ints("strides", std::vector<int64_t>{}))
      if (s != 1) return false;
  }
  return w->dim(0) == c && w->dim(1) == 1 && n.attr_int("group", 1) == c;
}

}  // namespace

size_t move_input_activations(ir::Graph& graph) {
  const std::string m = mode();
  if ((m != "1" && m != "stride1") || !fusion_enabled("input-act")) return 0;
  std::vector<std::pair<size_t, size_t>> moves;  // (producer, consumer) node indices
  {
    const GraphIndex ix(graph);
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const ir::Node& p = graph.nodes[i];
      if (!moving_producer(graph, p)) continue;
      const ir::Node* d = ix.sole_consumer(p.outputs[0]);
      if (!d || !depthwise_consumer(graph, *d, p.outputs[0])) continue;
      moves.emplace_back(i, static_cast<size_t>(d - graph.nodes.data()));
    }
  }
  for (const auto& [pi, di] : moves) {
    ir::Node& p = graph.nodes[pi];
    ir::Node& d = graph.nodes[di];
    d.attrs["input_activation"] = p.attrs.at("activation");
    auto params = p.attrs.find("activation_params");
    if (params != p.attrs.end()) d.attrs["input_activation_params"] = params->second;
    p.attrs.erase("activation");
    p.attrs.erase("activation_params");
    if (!is_fused_conv(d)) {  // a plain depthwise Conv: the same node as a FusedConv without epilogue
      d.op_type = ops::nn::kFusedConvOp;
      d.domain = ops::nn::kFusedConvDomain;
    }
  }
  if (!moves.empty()) {
    use_kilnrt_domain(graph);
    KILNRT_LOG(kInfo, "graph '" << graph.name << "': " << moves.size()
                                << " activation(s) moved into the depthwise convolution reading them");
  }
  return moves.size();
}

}  // namespace kilnrt::passes
