#include "passes/batch_first_attention.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

#include "core/logging.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

bool named_or_known(const ir::Dim& d) { return d.known() || !d.param.empty(); }

bool is_swap(const ir::Node& t) {
  return is_op(&t, "Transpose") && t.outputs.size() == 1 &&
         t.attr_ints("perm", std::vector<int64_t>{}) == std::vector<int64_t>{1, 0, 2};
}

// Composes a FusedAttention perm with the swap of physical axes 0 and 1.
std::vector<int64_t> swapped_in(std::vector<int64_t> p) {
  for (int64_t& a : p) a = a == 0 ? 1 : a == 1 ? 0 : a;
  return p;
}
std::vector<int64_t> swapped_out(const std::vector<int64_t>& p) {
  std::vector<int64_t> q = p;
  std::swap(q[0], q[1]);
  return q;
}

struct Plan {
  std::string t1, x;                  // entry Transpose node, its input [B, S, E]
  std::vector<std::string> matmuls;   // region MatMuls reading the entry
  std::vector<std::string> reshapes;  // region Reshapes (axes 0 / 1 swap)
  std::string attention;              // FusedAttention node
  std::string r1, gemm, r2, t2;       // exit chain nodes
  std::string o, t2_out;              // attention output, exit value
  std::vector<std::string> values;    // region values whose axes 0 / 1 swap (their types are dropped)
  int64_t e = 0;                      // attention output's last-axes size (H * D)
};

// The region from the entry Transpose: row-wise nodes up to one FusedAttention (all of its q / k / v).
bool plan_region(const ir::Graph& g, const GraphIndex& ix, const ir::Node& t1, Plan* p) {
  if (!is_swap(t1) || t1.inputs.size() != 1) return false;
  const ir::SymShape* xs = shape_of(g, t1.inputs[0]);
  if (!xs || xs->size() != 3 || !named_or_known((*xs)[0]) || !named_or_known((*xs)[1])) return false;
  const ir::Dim b = (*xs)[0], s = (*xs)[1];
  if (b == s) return false;  // the rewrite swaps axes that shapes alone must tell apart
  p->t1 = t1.name;
  p->x = t1.inputs[0];
  std::vector<std::string> frontier = {t1.outputs[0]};
  std::set<std::string> seen;
  const ir::Node* att = nullptr;
  int att_inputs = 0;
  while (!frontier.empty()) {
    const std::string v = frontier.back();
    frontier.pop_back();
    if (!seen.insert(v).second) continue;
    if (std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end()) return false;
    for (const ir::Node& n : g.nodes) {
      const auto it = std::find(n.inputs.begin(), n.inputs.end(), v);
      if (it == n.inputs.end()) continue;
      const size_t slot = static_cast<size_t>(it - n.inputs.begin());
      if (n.op_type == "FusedAttention" && n.domain == ops::nn::kKilnrtDomain) {
        if (att && att != &n) return false;
        att = &n;
        for (size_t i = 0; i < 3 && i < n.inputs.size(); ++i) att_inputs += n.inputs[i] == v;
        if (slot > 2 || std::count(n.inputs.begin(), n.inputs.end(), v) != 1) return false;
        continue;
      }
      if (n.outputs.size() != 1 || (v == t1.outputs[0] && !is_op(&n, "MatMul"))) return false;
      const ir::SymShape* os = shape_of(g, n.outputs[0]);
      if (!os || os->size() < 3 || !((*os)[0] == s) || !((*os)[1] == b)) return false;  // still [S, B, ...]
      if (is_op(&n, "MatMul") && slot == 0 && n.inputs.size() == 2 && g.is_constant(n.inputs[1]) &&
          g.constants.at(n.inputs[1]).rank() == 2) {
        if (v == t1.outputs[0])
          p->matmuls.push_back(n.name);
        else
          return false;  // only the entry feeds GEMMs
      } else if (is_op(&n, "Add") && n.inputs.size() == 2 && g.is_constant(n.inputs[1 - slot]) &&
                 g.constants.at(n.inputs[1 - slot]).rank() <= 1) {
        // a bias along the last axis
      } else if (is_op(&n, "Reshape") && slot == 0 && n.inputs.size() == 2) {
        const auto shape = int_constant(g, n.inputs[1]);
        if (!shape || shape->size() < 2 || n.attr_int("allowzero", 0) != 0) return false;
        p->reshapes.push_back(n.name);
      } else {
        return false;
      }
      frontier.push_back(n.outputs[0]);
    }
  }
  if (!att || att_inputs != 3 || p->matmuls.empty()) return false;
  for (size_t i = 0; i < 3; ++i)
    if (!seen.count(att->inputs[i])) return false;
  // Every region value's readers are in the region (checked above: any other reader refused). The exit chain:
  // O -> Reshape [S*B, E] -> Gemm / MatMul (const W) -> Reshape [S, B, N] -> Transpose (1, 0, 2).
  p->attention = att->name;
  p->o = att->outputs[0];
  p->values.assign(seen.begin(), seen.end());
  p->values.push_back(p->o);
  const ir::SymShape* os = shape_of(g, p->o);
  if (!os || os->size() < 3 || !((*os)[0] == s) || !((*os)[1] == b)) return false;
  int64_t e = 1;
  for (size_t i = 2; i < os->size(); ++i) {
    if (!(*os)[i].known()) return false;
    e *= (*os)[i].value;
  }
  p->e = e;
  const ir::Node* r1 = ix.sole_consumer(p->o);
  if (!is_op(r1, "Reshape") || r1->inputs[0] != p->o) return false;
  const ir::SymShape* r1s = shape_of(g, r1->outputs[0]);
  if (!r1s || r1s->size() != 2 || !((*r1s)[1] == ir::Dim(e))) return false;
  const ir::Node* mm = ix.sole_consumer(r1->outputs[0]);
  if (!mm || !mm->domain.empty() || (mm->op_type != "Gemm" && mm->op_type != "MatMul") || mm->inputs.size() < 2 ||
      mm->inputs[0] != r1->outputs[0] || !g.is_constant(mm->inputs[1]) || g.constants.at(mm->inputs[1]).rank() != 2)
    return false;
  if (mm->op_type == "Gemm") {
    if (mm->attr_int("transA", 0) != 0 || mm->attr_float("alpha", 1.f) != 1.f) return false;
    if (mm->inputs.size() > 2 && !mm->inputs[2].empty() &&
        (mm->attr_float("beta", 1.f) != 1.f || !g.is_constant(mm->inputs[2]) ||
         g.constants.at(mm->inputs[2]).rank() > 1))
      return false;
  }
  const ir::Node* r2 = ix.sole_consumer(mm->outputs[0]);
  if (!is_op(r2, "Reshape") || r2->inputs[0] != mm->outputs[0]) return false;
  const ir::SymShape* r2s = shape_of(g, r2->outputs[0]);
  if (!r2s || r2s->size() != 3 || !((*r2s)[0] == s) || !((*r2s)[1] == b)) return false;
  const ir::Node* t2 = ix.sole_consumer(r2->outputs[0]);
  if (!t2 || !is_swap(*t2)) return false;
  p->r1 = r1->name;
  p->gemm = mm->name;
  p->r2 = r2->name;
  p->t2 = t2->name;
  p->t2_out = t2->outputs[0];
  return true;
}

ir::Node* find(ir::Graph& g, const std::string& name) {
  for (ir::Node& n : g.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

Tensor transposed(const Tensor& w) {  // [R, C] -> [C, R], any element size
  const int64_t r = w.shape()[0], c = w.shape()[1];
  Tensor t = Tensor::empty(w.dtype(), {c, r});
  const size_t es = dtype_size(w.dtype());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j)
      std::memcpy(static_cast<unsigned char*>(t.raw()) + (j * r + i) * es,
                  static_cast<const unsigned char*>(w.raw()) + (i * c + j) * es, es);
  return t;
}

void set_perm(ir::Node& n, const char* attr, std::vector<int64_t> p) {
  n.attrs[attr].kind = ir::Attribute::Kind::kInts;
  n.attrs[attr].ints = std::move(p);
}

}  // namespace

size_t drop_batch_first_transposes(ir::Graph& graph) {
  std::vector<Plan> plans;
  {
    const GraphIndex ix(graph);
    std::set<std::string> used;
    for (const ir::Node& n : graph.nodes) {
      Plan p;
      if (plan_region(graph, ix, n, &p) && used.insert(p.attention).second) plans.push_back(std::move(p));
    }
  }
  std::vector<std::string> erase;
  for (const Plan& p : plans) {
    for (const std::string& m : p.matmuls) {
      ir::Node* n = find(graph, m);
      for (std::string& in : n->inputs)
        if (in == find(graph, p.t1)->outputs[0]) in = p.x;
    }
    for (const std::string& r : p.reshapes) {
      ir::Node* n = find(graph, r);
      std::vector<int64_t> shape = *int_constant(graph, n->inputs[1]);
      std::swap(shape[0], shape[1]);
      const std::string c = n->name + "/batch_first_shape";
      graph.constants[c] = Tensor::from_vector(shape, DType::kInt64, {static_cast<int64_t>(shape.size())});
      n->inputs[1] = c;
    }
    ir::Node* att = find(graph, p.attention);
    const char* perms[3] = {"q_perm", "k_perm", "v_perm"};
    for (size_t i = 0; i < 3; ++i) {
      const size_t rank = shape_of(graph, att->inputs[i])->size();
      set_perm(*att, perms[i], swapped_in(ops::nn::attention_perm(*att, perms[i], rank)));
    }
    set_perm(*att, "out_perm", swapped_out(ops::nn::attention_perm(*att, "out_perm", shape_of(graph, p.o)->size())));
    // Exit: Reshape(O, [0, 0, E]) -> MatMul(W as [K, N]) [-> Add(bias)] named as the old exit Transpose's output.
    const ir::Node* gemm = find(graph, p.gemm);
    std::string w = gemm->inputs[1];
    if (gemm->op_type == "Gemm" && gemm->attr_int("transB", 0) != 0) {
      graph.constants[p.gemm + "/batch_first_w"] = transposed(graph.constants.at(w));
      w = p.gemm + "/batch_first_w";
    }
    const std::string bias = gemm->op_type == "Gemm" && gemm->inputs.size() > 2 ? gemm->inputs[2] : "";
    const std::string pre = p.gemm + "/batch_first";
    graph.constants[pre + "_shape"] = Tensor::from_vector(std::vector<int64_t>{0, 0, p.e}, DType::kInt64, {3});
    ir::Node r;
    r.name = pre + "_reshape";
    r.op_type = "Reshape";
    r.inputs = {p.o, pre + "_shape"};
    r.outputs = {pre + "_rows"};
    ir::Node mm;
    mm.name = pre + "_matmul";
    mm.op_type = "MatMul";
    mm.inputs = {pre + "_rows", w};
    mm.outputs = {bias.empty() ? p.t2_out : pre + "_linear"};
    erase.insert(erase.end(), {p.t1, p.r1, p.gemm, p.r2, p.t2});
    // Inferred types must not merge with the old [S, B, ...] ones (a declared known dim would win over "batch").
    for (const std::string& v : p.values) graph.types.erase(v);
    graph.types.erase(p.t2_out);
    graph.nodes.push_back(std::move(r));
    graph.nodes.push_back(std::move(mm));
    if (!bias.empty()) {
      ir::Node add;
      add.name = pre + "_bias";
      add.op_type = "Add";
      add.inputs = {pre + "_linear", bias};
      add.outputs = {p.t2_out};
      graph.nodes.push_back(std::move(add));
    }
  }
  if (plans.empty()) return 0;
  erase_nodes(graph, erase);
  graph.topo_sort();
  KILNRT_LOG(kDebug, "dropped the batch-first transposes of " << plans.size() << " attention block(s)");
  return plans.size();
}

}  // namespace kilnrt::passes
