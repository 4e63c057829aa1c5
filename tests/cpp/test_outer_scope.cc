// Values that If/Loop/Scan bodies read from the enclosing graph are dependencies of the control-flow node: topological
// order, dead-code elimination, constant folding and the CPU executor all keep them.
#include <gtest/gtest.h>

#include <memory>

#include "backends/cpu/cpu_executor.h"
#include "ir/graph.h"
#include "passes/optimize.h"

using namespace kilnrt;

namespace {

std::shared_ptr<ir::Graph> branch(const std::string& op, const std::string& out) {
  auto g = std::make_shared<ir::Graph>();
  g->name = out;
  g->opsets[""] = 17;  // the importer gives subgraphs the model's opsets
  g->nodes.push_back(ir::Node{out + "_node", op, "", {"x2"}, {out}, {}});
  g->outputs = {out};
  ir::TensorType t;
  t.dtype = DType::kFloat32;
  t.has_shape = true;
  t.shape = {ir::Dim(3)};
  g->types[out] = t;
  return g;
}

ir::Graph if_reading_an_intermediate() {
  ir::Graph g;
  g.name = "outer";
  g.opsets[""] = 17;
  g.inputs = {"x", "cond"};
  g.outputs = {"y"};
  ir::TensorType tx;
  tx.dtype = DType::kFloat32;
  tx.has_shape = true;
  tx.shape = {ir::Dim(3)};
  g.types["x"] = tx;
  ir::TensorType tc;
  tc.dtype = DType::kBool;
  tc.has_shape = true;
  g.types["cond"] = tc;
  ir::Node iff{"if", "If", "", {"cond"}, {"y"}, {}};
  ir::Attribute then_a, else_a;
  then_a.kind = else_a.kind = ir::Attribute::Kind::kGraph;
  then_a.g = branch("Identity", "t_out");
  else_a.g = branch("Neg", "e_out");
  iff.attrs["then_branch"] = then_a;
  iff.attrs["else_branch"] = else_a;
  // Listed before the node that produces x2, which only the branches read.
  g.nodes.push_back(iff);
  g.nodes.push_back(ir::Node{"add", "Add", "", {"x", "x"}, {"x2"}, {}});
  return g;
}

}  // namespace

TEST(OuterScope, ReadsAreDependencies) {
  ir::Graph g = if_reading_an_intermediate();
  EXPECT_EQ(ir::outer_scope_reads(g.nodes[0]), std::vector<std::string>{"x2"});
  g.topo_sort();
  EXPECT_EQ(g.nodes[0].name, "add") << "the producer of an outer-scope read must come first";
  passes::optimize_graph(g);
  ASSERT_EQ(g.nodes.size(), 2u) << "dead-code elimination removed the producer of an outer-scope read";
  backends::cpu::CpuPlan plan(g);
  const float xs[3] = {1.f, -2.f, 3.f};
  for (bool c : {true, false}) {
    auto out = plan.run(
        {{"x", Tensor::from_data(xs, DType::kFloat32, {3})}, {"cond", Tensor::from_data(&c, DType::kBool, {})}});
    const Tensor& y = out.at("y");
    ASSERT_EQ(y.numel(), 3);
    for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], (c ? 2.f : -2.f) * xs[i]);
  }
}
