// Squeeze-excite fusion (passes/fuse_squeeze_excite) and the com.kilnrt:SqueezeExcite CPU op: the whole
// optimize pipeline turns EfficientNet / MobileNetV3 blocks into one node and the outputs match the unfused graph;
// blocks the pass must not touch stay as they are; the op rejects weights that do not fit.
#include <gtest/gtest.h>

#include <cstdlib>

#include "ops/nn/squeeze_excite/squeeze_excite.h"
#include "passes/fuse_squeeze_excite.h"
#include "passes/optimize.h"
#include "squeeze_excite_test_util.h"

using namespace kilnrt;
using namespace kilnrt::testing_conv;

namespace {

std::map<std::string, Tensor> feeds_for(const ir::Graph& g, uint32_t seed = 5) {
  return random_feeds(g, seed, -2.f, 2.f);
}

// Optimizes a copy of `g`, expects `fused` SqueezeExcite nodes and the same outputs as the plain graph.
ir::Graph check_pipeline(const ir::Graph& g, size_t fused, double tol = 2e-5) {
  ir::Graph after = g;
  passes::optimize_graph(after);
  EXPECT_EQ(count_ops(after, "SqueezeExcite"), fused) << after.to_string(false);
  const auto in = feeds_for(g);
  const auto ref = run_cpu(g, in), got = run_cpu(after, in);
  for (const std::string& o : g.outputs) EXPECT_LE(max_rel_diff(got.at(o), ref.at(o)), tol) << "output " << o;
  return after;
}

// The pass is on by default; OptIn keeps the tests independent of a KILNRT_SQUEEZE_EXCITE=0 in the environment.
struct OptIn {
  OptIn() { setenv("KILNRT_SQUEEZE_EXCITE", "1", 1); }
  ~OptIn() { unsetenv("KILNRT_SQUEEZE_EXCITE"); }
};

struct NoFusion {
  explicit NoFusion(const char* v) { setenv("KILNRT_NO_FUSION", v, 1); }
  ~NoFusion() { unsetenv("KILNRT_NO_FUSION"); }
};

}  // namespace

TEST(SqueezeExciteFusion, EfficientNetAndMobileNetBlocks) {
  OptIn opt_in;
  for (bool mobilenet : {false, true}) {
    for (bool reduce_mean : {false, true}) {
      for (bool scale_first : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "mobilenet " << mobilenet << " reduce_mean " << reduce_mean << " scale_first " << scale_first);
        SeBlock s;
        s.mobilenet = mobilenet;
        s.reduce_mean = reduce_mean;
        s.scale_first = scale_first;
        const ir::Graph after = check_pipeline(se_block_graph(s), 1);
        EXPECT_EQ(count_ops(after, "GlobalAveragePool") + count_ops(after, "ReduceMean"), 0u);
        EXPECT_EQ(count_ops(after, "Mul"), 0u);
        // depthwise conv, projection conv and the SE node
        EXPECT_EQ(after.nodes.size(), 3u) << after.to_string(false);
        for (const ir::Node& n : after.nodes) {
          if (n.op_type != ops::nn::kSqueezeExciteOp) continue;
          const ops::nn::SqueezeExciteParams p = ops::nn::read_squeeze_excite(n);
          EXPECT_EQ(p.act.act, mobilenet ? ops::nn::FusedActivation::kRelu : ops::nn::FusedActivation::kSilu);
          EXPECT_EQ(p.gate.act,
                    mobilenet ? ops::nn::FusedActivation::kHardSigmoid : ops::nn::FusedActivation::kSigmoid);
        }
      }
    }
  }
}

TEST(SqueezeExciteFusion, WithoutBiasesOddSizesAndWideSqueeze) {
  OptIn opt_in;
  SeBlock s;
  s.bias = false;
  s.x = {3, 12, 5, 7};
  s.cs = 3;
  check_pipeline(se_block_graph(s), 1);
  s.bias = true;
  s.x = {1, 24, 4, 4};
  s.cs = 40;  // more squeezed than input channels: still a valid block
  check_pipeline(se_block_graph(s), 1);
}

TEST(SqueezeExciteFusion, OnByDefaultOffWithItsSwitchOrNoFusion) {
  {
    const ir::Graph after = check_pipeline(se_block_graph(SeBlock{}), 1);
    EXPECT_EQ(count_ops(after, "GlobalAveragePool"), 0u);
  }
  {
    setenv("KILNRT_SQUEEZE_EXCITE", "0", 1);
    const ir::Graph after = check_pipeline(se_block_graph(SeBlock{}), 0);
    unsetenv("KILNRT_SQUEEZE_EXCITE");
    EXPECT_EQ(count_ops(after, "GlobalAveragePool"), 1u);
  }
  NoFusion off("squeeze-excite");
  const ir::Graph after = check_pipeline(se_block_graph(SeBlock{}), 0);
  EXPECT_EQ(count_ops(after, "GlobalAveragePool"), 1u);
}

TEST(SqueezeExciteFusion, RefusesBlocksThatAreNotSqueezeExcite) {
  OptIn opt_in;
  {  // the Mul scales another tensor than the one pooled
    SeBlock s;
    ir::Graph g = se_block_graph(s);
    for (ir::Node& n : g.nodes)
      if (n.op_type == "Mul" && n.outputs[0] == "m") n.inputs = {"s", "dw"};
    passes::infer_shapes(g);
    check_pipeline(g, 0);
  }
  {  // the gate is also a graph output
    ir::Graph g = se_block_graph(SeBlock{});
    g.outputs.push_back("s");
    check_pipeline(g, 0);
  }
  {  // ReduceMean without keepdims / over one axis only
    for (int variant = 0; variant < 2; ++variant) {
      SeBlock s;
      s.reduce_mean = true;
      ir::Graph g = se_block_graph(s);
      for (ir::Node& n : g.nodes) {
        if (n.op_type != "ReduceMean") continue;
        if (variant == 0)
          n.attrs["keepdims"] = int_attr(0);
        else
          n.attrs["axes"] = ints_attr({3});
      }
      // keepdims 0 gives [N, C]: the 1x1 conv no longer applies; make the graph valid with a Reshape back.
      if (variant == 0) {
        const std::string shape = "g_shape";
        g.constants[shape] = Tensor::from_vector<int64_t>({2, 16, 1, 1}, DType::kInt64, {4});
        for (ir::Node& n : g.nodes)
          if (n.op_type == "ReduceMean") n.outputs[0] = "g_flat";
        ir::Node r;
        r.name = "reshape_back";
        r.op_type = "Reshape";
        r.inputs = {"g_flat", shape};
        r.outputs = {"g"};
        g.nodes.push_back(r);
        g.topo_sort();
      }  // variant 1: the mean over W only; the 1x1 convs then see [N, C, H, 1]
      passes::infer_shapes(g);
      check_pipeline(g, 0);
    }
  }
  {  // a grouped 1x1 conv in the excitation
    ir::Graph g = se_block_graph(SeBlock{});
    for (ir::Node& n : g.nodes)
      if (n.op_type == "Conv" && n.outputs[0] == "e1") n.attrs["group"] = int_attr(2);
    for (auto& [name, t] : g.constants)
      if (name == "e1_W") t = random_tensor({4, 8, 1, 1}, 3);
    passes::infer_shapes(g);
    check_pipeline(g, 0);
  }
}

TEST(SqueezeExciteOp, RejectsWeightsThatDoNotFit) {
  OptIn opt_in;
  ir::Graph g = se_block_graph(SeBlock{});
  passes::optimize_graph(g);
  ASSERT_EQ(count_ops(g, ops::nn::kSqueezeExciteOp), 1u);
  for (ir::Node& n : g.nodes) {
    if (n.op_type != ops::nn::kSqueezeExciteOp) continue;
    g.constants[n.inputs[3]] = random_tensor({16, 5, 1, 1}, 9);  // W2 for 5 squeezed channels, W1 has 4
    try {
      run_cpu(g, feeds_for(g));
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("W2"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(n.name), std::string::npos) << e.what();
    }
  }
}

TEST(SqueezeExciteOp, UnknownGateIsAnInvalidModel) {
  OptIn opt_in;
  ir::Graph g = se_block_graph(SeBlock{});
  passes::optimize_graph(g);
  for (ir::Node& n : g.nodes)
    if (n.op_type == ops::nn::kSqueezeExciteOp) n.attrs["gate"] = string_attr("Swoosh");
  EXPECT_THROW(run_cpu(g, feeds_for(g)), Error);
}
