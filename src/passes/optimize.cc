#include "passes/optimize.h"

#include "core/logging.h"
#include "passes/constant_folding.h"
#include "passes/dead_code.h"
#include "passes/fuse_attention.h"
#include "passes/fuse_gelu.h"
#include "passes/fuse_gemm_epilogue.h"
#include "passes/fuse_embed_layernorm.h"
#include "passes/fuse_layernorm.h"
#include "passes/fuse_pointwise.h"
#include "passes/fuse_squeeze_excite.h"
#include "passes/fold_conv_bn.h"
#include "passes/fold_layer_scale.h"
#include "passes/fuse_conv_epilogue.h"
#include "passes/hoist_gather.h"
#include "passes/move_input_activation.h"
#include "passes/patchify_conv.h"
#include "passes/shape_inference.h"
#include "passes/simplify_constants.h"

namespace kilnrt::passes {

std::string OptimizeReport::summary() const {
  return std::to_string(nodes_before) + " -> " + std::to_string(nodes_after) + " nodes (" + std::to_string(folded) +
         " folded, " + std::to_string(removed) + " dead)";
}

OptimizeReport optimize_graph(ir::Graph& graph, const OptimizeOptions& options) {
  OptimizeReport r;
  r.nodes_before = graph.nodes.size();
  infer_shapes(graph);
  for (int round = 0; round < 16; ++round) {
    const size_t n = fold_constants(graph);
    r.folded += n;
    infer_shapes(graph);  // folded Shape nodes make more shapes (and constants) known
    if (n == 0) break;
  }
  // Folded constants narrowed to what differs, constant adds combined, identity GatherNDs as Reshapes.
  if (simplify_constants(graph) > 0) infer_shapes(graph);
  // Patch-embedding convolutions read as tokens (ViT) become one copy + a GEMM (before the GEMM epilogues).
  if (patchify_conv(graph) > 0) infer_shapes(graph);
  // Conv+BN folding, then conv epilogue fusion (bias / residual add / activation -> com.kilnrt:FusedConv; its CPU
  // reference is the Conv kernel plus an in-place epilogue, so CPU engines get it too).
  const size_t bn_folded = fold_conv_batchnorm(graph);
  const size_t conv_fused = fuse_conv_epilogues(graph);
  if (bn_folded + conv_fused > 0) {
    KILNRT_LOG(kInfo, "graph '" << graph.name << "': " << bn_folded << " BatchNormalization folded into convolutions, "
                                << conv_fused << " convolution epilogues fused");
    infer_shapes(graph);
  }
  // Layer scales (ConvNeXt) into the Linear's weights, the skip connection moved next to it (before the GEMM
  // epilogues, which then take it as the GEMM's C operand).
  if (fold_layer_scale(graph) > 0) infer_shapes(graph);
  // Pattern fusions, on folded constants (scales, epsilons) and known ranks.
  const size_t attention = options.fuse_attention ? fuse_attention(graph) : 0;
  if (attention > 0) infer_shapes(graph);
  // Row selections (ViT's x[:, 0]) above the row-wise ops feeding them: after the attention's batch-first
  // rewrite, which leaves its out-projection row-wise, and before the fusions that then take the smaller ops.
  hoist_gathers(graph);
  const size_t gelu = fuse_gelu(graph), gemm = fuse_gemm_epilogues(graph), layernorm = fuse_layernorm(graph);
  // Embedding Gather + Add + LayerNorm (BERT's first rows) -> one com.kilnrt:EmbedLayerNorm.
  const size_t embed = fuse_embed_layernorm(graph);
  if (attention + gelu + gemm + layernorm + embed > 0) {
    infer_shapes(graph);
    KILNRT_LOG(kInfo, "fused " << attention << " attention block(s), " << gelu << " GELU(s), " << gemm
                               << " GEMM epilogue(s), " << layernorm << " LayerNorm(s), " << embed
                               << " embedding LayerNorm(s)");
  }
  // 1x1 convolutions' SiLU / HardSwish / ... into the depthwise convolution reading them (opt-in,
  // KILNRT_INPUT_ACT=1).
  move_input_activations(graph);
  // Squeeze-excite blocks (their two 1x1 FusedConvs made above) -> one com.kilnrt:SqueezeExcite.
  if (fuse_squeeze_excite(graph) > 0) infer_shapes(graph);
  // Pointwise chains last, so that the pattern fusions above keep theirs.
  if (options.fuse_pointwise) {
    const size_t pointwise = fuse_pointwise(graph);
    if (pointwise > 0) {
      infer_shapes(graph);
      KILNRT_LOG(kInfo, "fused " << pointwise << " pointwise chain(s)");
    }
  }
  r.removed = eliminate_dead_code(graph);
  r.nodes_after = graph.nodes.size();
  KILNRT_LOG(kInfo, "optimized graph '" << graph.name << "': " << r.summary());
  return r;
}

}  // namespace kilnrt::passes
