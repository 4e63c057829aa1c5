// passes::type_control_flow_outputs through infer_shapes: If / Loop / Scan outputs whose bodies leave
// them undeclared (as ONNX function-expanded bodies do) get their dtype from the bodies inferred on their own, so the
// consumers are typed too; branches that disagree and sequence results stay untyped.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/shape_inference.h"

namespace kilnrt {
namespace {

ir::TensorType typed(DType dt, ir::SymShape s) {
  ir::TensorType t;
  t.dtype = dt;
  t.has_shape = true;
  t.shape = std::move(s);
  return t;
}
ir::Node& add(ir::Graph& g, const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
  ir::Node n;
  n.op_type = op;
  n.name = op + "_" + std::to_string(g.nodes.size());
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  g.nodes.push_back(std::move(n));
  return g.nodes.back();
}
void body(ir::Node& n, const std::string& attr, ir::Graph b) {
  b.opsets[""] = 17;
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kGraph;
  a.g = std::make_shared<ir::Graph>(std::move(b));
  n.attrs[attr] = a;
}
DType dtype(const ir::Graph& g, const std::string& v) {
  const ir::TensorType* t = g.type_of(v);
  return t ? t->dtype : DType::kUndefined;
}

// y = If(c) { x + x } else { Neg(x) }, both branch results undeclared; z = Transpose(y).
ir::Graph if_graph(const std::string& else_op) {
  ir::Graph g;
  g.opsets[""] = 17;
  g.inputs = {"c", "x"};
  g.types["c"] = typed(DType::kBool, {});
  g.types["x"] = typed(DType::kFloat16, {ir::Dim(2), ir::Dim(3)});
  ir::Graph then_b, else_b;
  add(then_b, "Add", {"x", "x"}, {"t"});
  then_b.outputs = {"t"};
  if (else_op == "Cast") {
    ir::Node& cast = add(else_b, "Cast", {"x"}, {"e"});
    ir::Attribute to;
    to.i = static_cast<int64_t>(7);  // int64: the branches disagree
    cast.attrs["to"] = to;
  } else {
    add(else_b, else_op, {"x"}, {"e"});
  }
  else_b.outputs = {"e"};
  ir::Node& n = add(g, "If", {"c"}, {"y"});
  body(n, "then_branch", then_b);
  body(n, "else_branch", else_b);
  add(g, "Transpose", {"y"}, {"z"});
  g.outputs = {"z"};
  return g;
}

TEST(ControlFlowTypes, IfOutputsTypedFromUndeclaredBranches) {
  ir::Graph g = if_graph("Neg");
  passes::infer_shapes(g);
  EXPECT_EQ(dtype(g, "y"), DType::kFloat16);
  EXPECT_EQ(dtype(g, "z"), DType::kFloat16);
  // The node's bodies stay as imported.
  EXPECT_EQ(g.nodes[0].attrs.at("then_branch").g->type_of("t"), nullptr);
}

TEST(ControlFlowTypes, BodyThatCannotBeInferredLeavesTheOutputUntyped) {
  ir::Graph g = if_graph("Neg");
  g.nodes[0].attrs.at("else_branch").g->nodes[0].op_type = "NoSuchOp";  // unknown op in one branch
  EXPECT_NO_THROW(passes::infer_shapes(g));
  EXPECT_EQ(dtype(g, "y"), DType::kFloat16);  // the other branch still tells
  g.nodes[0].attrs.at("then_branch").g->nodes[0].op_type = "NoSuchOp";
  EXPECT_NO_THROW(passes::infer_shapes(g));
}

TEST(ControlFlowTypes, IfBranchesThatDisagreeStayUntyped) {
  ir::Graph g = if_graph("Cast");
  passes::infer_shapes(g);
  EXPECT_EQ(dtype(g, "y"), DType::kUndefined);
}

// Loop(M, cond, v0) with a body whose formal inputs and outputs are all undeclared: v = v + s (s outer scope),
// scan output k = Cast<int32>(v).
TEST(ControlFlowTypes, LoopCarriedAndScanOutputsTyped) {
  ir::Graph g;
  g.opsets[""] = 17;
  g.inputs = {"m", "v0", "s"};
  g.types["m"] = typed(DType::kInt64, {});
  g.types["v0"] = typed(DType::kBFloat16, {ir::Dim(4)});
  g.types["s"] = typed(DType::kBFloat16, {ir::Dim(4)});
  ir::Graph b;
  b.inputs = {"i", "cond_in", "v_in"};
  add(b, "Identity", {"cond_in"}, {"cond_out"});
  add(b, "Add", {"v_in", "s"}, {"v_out"});
  ir::Node& cast = add(b, "Cast", {"v_out"}, {"k"});
  ir::Attribute to;
  to.i = 6;  // int32
  cast.attrs["to"] = to;
  b.outputs = {"cond_out", "v_out", "k"};
  ir::Node& loop = add(g, "Loop", {"m", "", "v0"}, {"v", "ks"});
  body(loop, "body", b);
  add(g, "Neg", {"ks"}, {"nk"});
  g.outputs = {"v", "nk"};
  passes::infer_shapes(g);
  EXPECT_EQ(dtype(g, "v"), DType::kBFloat16);
  EXPECT_EQ(dtype(g, "ks"), DType::kInt32);
  EXPECT_EQ(dtype(g, "nk"), DType::kInt32);
}

// Scan(state, xs) with undeclared body inputs/outputs: state' = state * x (float16), y = Relu(state').
TEST(ControlFlowTypes, ScanOutputsTyped) {
  ir::Graph g;
  g.opsets[""] = 17;
  g.inputs = {"h0", "xs"};
  g.types["h0"] = typed(DType::kFloat16, {ir::Dim(3)});
  g.types["xs"] = typed(DType::kFloat16, {ir::Dim(5), ir::Dim(3)});
  ir::Graph b;
  b.inputs = {"h", "x"};
  add(b, "Mul", {"h", "x"}, {"h2"});
  add(b, "Relu", {"h2"}, {"y"});
  b.outputs = {"h2", "y"};
  ir::Node& scan = add(g, "Scan", {"h0", "xs"}, {"h", "ys"});
  ir::Attribute n;
  n.i = 1;
  scan.attrs["num_scan_inputs"] = n;
  body(scan, "body", b);
  add(g, "Transpose", {"ys"}, {"t"});
  g.outputs = {"h", "t"};
  passes::infer_shapes(g);
  EXPECT_EQ(dtype(g, "ys"), DType::kFloat16);
  EXPECT_EQ(dtype(g, "t"), DType::kFloat16);
}

}  // namespace
}  // namespace kilnrt
