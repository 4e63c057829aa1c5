#include "passes/fuse_gelu.h"

#include <cmath>

#include "core/logging.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

// When `v` is produced by `op`(x, c) (either order; for Div only x / c) with scalar constant c near `want`, returns x.
const ir::Node* scalar_op(const ir::Graph& g, const GraphIndex& ix, const std::string& v, const char* op, double want,
                          std::string* x) {
  const ir::Node* p = ix.producer(v);
  double c = 0;
  int other = 0;
  if (!is_op(p, op) || !binary_with_scalar(g, *p, &c, &other) || !near(c, want)) return nullptr;
  if (std::string(op) == "Div" && other != 0) return nullptr;
  *x = p->inputs[other];
  return p;
}

struct Match {
  std::string x, out, approximate;
  std::vector<std::string> erase;
};

// The tail shared by both forms: u = 1 + f(x) (node `add`), out = 0.5 * x * u in one of three arrangements.
bool match_tail(const ir::Graph& g, const GraphIndex& ix, const std::string& x, const ir::Node& add, Match* m) {
  const ir::Node* m1 = ix.sole_consumer(add.outputs[0]);
  if (!is_op(m1, "Mul") || m1->inputs.size() != 2) return false;
  const std::string other = m1->inputs[0] == add.outputs[0] ? m1->inputs[1] : m1->inputs[0];
  std::string h;
  double c = 0;
  int oi = 0;
  if (other == x) {  // (x * u) * 0.5
    const ir::Node* m2 = ix.sole_consumer(m1->outputs[0]);
    if (!is_op(m2, "Mul") || !binary_with_scalar(g, *m2, &c, &oi) || !near(c, 0.5)) return false;
    m->out = m2->outputs[0];
    m->erase = {add.name, m1->name, m2->name};
    return true;
  }
  if (const ir::Node* half = scalar_op(g, ix, other, "Mul", 0.5, &h); half && h == x && ix.uses(other) == 1) {
    m->out = m1->outputs[0];  // (x * 0.5) * u
    m->erase = {add.name, m1->name, half->name};
    return true;
  }
  if (binary_with_scalar(g, *m1, &c, &oi) && near(c, 0.5)) {  // (u * 0.5) * x
    const ir::Node* m2 = ix.sole_consumer(m1->outputs[0]);
    if (!is_op(m2, "Mul") || m2->inputs.size() != 2) return false;
    const std::string o2 = m2->inputs[0] == m1->outputs[0] ? m2->inputs[1] : m2->inputs[0];
    if (o2 != x) return false;
    m->out = m2->outputs[0];
    m->erase = {add.name, m1->name, m2->name};
    return true;
  }
  return false;
}

bool match_erf(const ir::Graph& g, const GraphIndex& ix, const ir::Node& e, Match* m) {
  if (!is_op(&e, "Erf") || ix.uses(e.inputs[0]) != 1) return false;
  std::string x;
  const ir::Node* sc = scalar_op(g, ix, e.inputs[0], "Div", std::sqrt(2.0), &x);
  if (!sc) sc = scalar_op(g, ix, e.inputs[0], "Mul", 1.0 / std::sqrt(2.0), &x);
  if (!sc) return false;
  const ir::Node* add = ix.sole_consumer(e.outputs[0]);
  double c = 0;
  int oi = 0;
  if (!is_op(add, "Add") || !binary_with_scalar(g, *add, &c, &oi) || !near(c, 1.0)) return false;
  if (!match_tail(g, ix, x, *add, m)) return false;
  m->x = x;
  m->approximate = "none";
  m->erase.push_back(sc->name);
  m->erase.push_back(e.name);
  return true;
}

// x^3 as Pow(x, 3) or Mul(x, Mul(x, x)) (either order).
bool is_cube(const ir::Graph& g, const GraphIndex& ix, const std::string& v, const std::string& x,
             std::vector<std::string>* names) {
  const ir::Node* p = ix.producer(v);
  if (ix.uses(v) != 1) return false;
  if (is_op(p, "Pow") && p->inputs.size() == 2 && p->inputs[0] == x) {
    auto e = scalar_constant(g, p->inputs[1]);
    if (!e || *e != 3.0) return false;
    names->push_back(p->name);
    return true;
  }
  if (!is_op(p, "Mul") || p->inputs.size() != 2) return false;
  for (int i = 0; i < 2; ++i) {
    const ir::Node* sq = ix.producer(p->inputs[1 - i]);
    if (p->inputs[i] == x && is_op(sq, "Mul") && sq->inputs[0] == x && sq->inputs[1] == x &&
        ix.uses(p->inputs[1 - i]) == 1) {
      names->push_back(p->name);
      names->push_back(sq->name);
      return true;
    }
  }
  return false;
}

bool match_tanh(const ir::Graph& g, const GraphIndex& ix, const ir::Node& t, Match* m) {
  if (!is_op(&t, "Tanh") || ix.uses(t.inputs[0]) != 1) return false;
  std::vector<std::string> names = {t.name};
  std::string inner;  // x + 0.044715 x^3
  const ir::Node* k = scalar_op(g, ix, t.inputs[0], "Mul", std::sqrt(2.0 / M_PI), &inner);
  if (!k || ix.uses(inner) != 1) return false;
  names.push_back(k->name);
  const ir::Node* a = ix.producer(inner);
  if (!is_op(a, "Add") || a->inputs.size() != 2) return false;
  names.push_back(a->name);
  for (int i = 0; i < 2; ++i) {
    const std::string x = a->inputs[i];
    std::string cube;
    const ir::Node* c = scalar_op(g, ix, a->inputs[1 - i], "Mul", 0.044715, &cube);
    if (!c || ix.uses(a->inputs[1 - i]) != 1) continue;
    std::vector<std::string> cn = names;
    cn.push_back(c->name);
    if (!is_cube(g, ix, cube, x, &cn)) continue;
    const ir::Node* add = ix.sole_consumer(t.outputs[0]);
    double one = 0;
    int oi = 0;
    if (!is_op(add, "Add") || !binary_with_scalar(g, *add, &one, &oi) || !near(one, 1.0)) return false;
    if (!match_tail(g, ix, x, *add, m)) return false;
    m->x = x;
    m->approximate = "tanh";
    m->erase.insert(m->erase.end(), cn.begin(), cn.end());
    return true;
  }
  return false;
}

}  // namespace

size_t fuse_gelu(ir::Graph& graph) {
  if (!fusion_enabled("gelu")) return 0;
  std::vector<Match> matches;
  {
    const GraphIndex ix(graph);
    for (const ir::Node& n : graph.nodes) {
      Match m;
      if (match_erf(graph, ix, n, &m) || match_tanh(graph, ix, n, &m)) matches.push_back(std::move(m));
    }
  }
  if (matches.empty()) return 0;
  std::vector<std::string> erase;
  std::vector<ir::Node> fused;
  for (Match& m : matches) {
    erase.insert(erase.end(), m.erase.begin(), m.erase.end());
    ir::Node n;
    n.name = m.erase.front() + "/fused_gelu";
    n.op_type = "Gelu";
    n.domain = ops::nn::kKilnrtDomain;
    n.inputs = {m.x};
    n.outputs = {m.out};
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kString;
    a.s = m.approximate;
    n.attrs["approximate"] = a;
    fused.push_back(std::move(n));
  }
  erase_nodes(graph, erase);
  for (ir::Node& n : fused) graph.nodes.push_back(std::move(n));
  use_kilnrt_domain(graph);
  graph.topo_sort();
  KILNRT_LOG(kDebug, "fused " << matches.size() << " GELU(s)");
  return matches.size();
}

}  // namespace kilnrt::passes
