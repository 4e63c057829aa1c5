#include "passes/split_packed_projection.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/logging.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

bool float_type(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

struct Part {
  std::string slice, out;  // Slice node, its output
  int64_t index = 0;
};

struct Split {
  std::string matmul, add, reshape;  // nodes replaced ("" add: no bias)
  std::string a, w, bias;            // values
  int64_t rank = 0, e = 0;           // the Reshape output's rank, part width
  std::vector<Part> parts;
};

// The part index of `s` when it is Slice(base, [c], [c + 1], [axis]) with unit steps, else -1.
int64_t slice_part(const ir::Graph& g, const ir::Node& s, const std::string& base, int64_t axis, int64_t rank,
                   int64_t parts) {
  if (!is_op(&s, "Slice") || s.inputs.size() < 4 || s.inputs[0] != base || s.outputs.size() != 1) return -1;
  const auto st = int_constant(g, s.inputs[1]), en = int_constant(g, s.inputs[2]), ax = int_constant(g, s.inputs[3]);
  if (!st || !en || !ax || st->size() != 1 || en->size() != 1 || ax->size() != 1) return -1;
  if (s.inputs.size() > 4 && !s.inputs[4].empty()) {
    const auto steps = int_constant(g, s.inputs[4]);
    if (!steps || steps->size() != 1 || (*steps)[0] != 1) return -1;
  }
  const int64_t a = (*ax)[0] < 0 ? (*ax)[0] + rank : (*ax)[0];
  const int64_t c = (*st)[0];
  if (a != axis || c < 0 || c >= parts || (*en)[0] != c + 1) return -1;
  return c;
}

bool match_at(const ir::Graph& g, const GraphIndex& ix, const ir::Node& r, Split* sp) {
  if (!is_op(&r, "Reshape") || r.inputs.size() != 2 || r.outputs.size() != 1) return false;
  const std::string& base = r.outputs[0];
  const std::string& lin = r.inputs[0];
  const ir::SymShape* bs = shape_of(g, base);
  const ir::SymShape* ls = shape_of(g, lin);
  if (!bs || !ls || bs->size() < 3 || bs->size() != ls->size() + 1) return false;
  const int64_t rank = static_cast<int64_t>(bs->size());
  const ir::Dim& pd = (*bs)[rank - 2];
  const ir::Dim& ed = (*bs)[rank - 1];
  int64_t packed = 0;  // P * E without signed overflow (any value may come from a malformed model)
  if (!pd.known() || !ed.known() || pd.value < 2 || !ls->back().known() ||
      __builtin_mul_overflow(pd.value, ed.value, &packed) || ls->back().value != packed)
    return false;
  for (int64_t i = 0; i + 2 < rank; ++i)  // leading dims kept (0 in the new Reshapes copies them)
    if (!((*bs)[i] == (*ls)[i]) || (!(*bs)[i].known() && (*bs)[i].param.empty())) return false;
  // lin = [Add(] MatMul(A, W const [K, P*E]) [, bias const [P*E])], each read only by the next step.
  const ir::Node* p = ix.producer(lin);
  if (ix.uses(lin) != 1 || !p || p->outputs.size() != 1) return false;
  std::string bias, add;
  const ir::Node* mm = p;
  if (is_op(p, "Add") && p->inputs.size() == 2) {
    for (int i = 0; i < 2 && bias.empty(); ++i) {
      const ir::Node* q = ix.producer(p->inputs[1 - i]);
      if (g.is_constant(p->inputs[i]) && is_op(q, "MatMul")) {
        bias = p->inputs[i];
        mm = q;
      }
    }
    if (bias.empty()) return false;
    const Tensor& bt = g.constants.at(bias);
    if (bt.rank() != 1 || bt.numel() != ls->back().value) return false;
    add = p->name;
    if (ix.uses(mm->outputs[0]) != 1) return false;
  }
  if (!is_op(mm, "MatMul") || mm->inputs.size() != 2 || mm->outputs.size() != 1 || !g.is_constant(mm->inputs[1]))
    return false;
  const Tensor& wt = g.constants.at(mm->inputs[1]);
  if (wt.rank() != 2 || wt.shape()[1] != ls->back().value || !float_type(wt.dtype())) return false;
  if (!bias.empty() && g.constants.at(bias).dtype() != wt.dtype()) return false;
  // Every reader of the base: a Slice of one part.
  sp->parts.clear();
  std::vector<bool> seen(static_cast<size_t>(pd.value), false);
  for (const ir::Node& s : g.nodes) {
    if (std::find(s.inputs.begin(), s.inputs.end(), base) == s.inputs.end()) continue;
    const int64_t c = slice_part(g, s, base, rank - 2, rank, pd.value);
    if (c < 0 || seen[static_cast<size_t>(c)]) return false;
    seen[static_cast<size_t>(c)] = true;
    sp->parts.push_back({s.name, s.outputs[0], c});
  }
  if (sp->parts.empty() || static_cast<int>(sp->parts.size()) != ix.uses(base)) return false;  // no graph output
  sp->matmul = mm->name;
  sp->add = add;
  sp->reshape = r.name;
  sp->a = mm->inputs[0];
  sp->w = mm->inputs[1];
  sp->bias = bias;
  sp->rank = rank;
  sp->e = ed.value;
  return true;
}

// Columns [c0, c0 + n) of a row-major [rows, cols] tensor (any element size); a 1-D tensor is one row.
Tensor columns(const Tensor& t, int64_t c0, int64_t n) {
  const int64_t rows = t.rank() == 2 ? t.shape()[0] : 1, cols = t.rank() == 2 ? t.shape()[1] : t.shape()[0];
  Tensor out = Tensor::empty(t.dtype(), t.rank() == 2 ? Shape{rows, n} : Shape{n});
  const size_t es = dtype_size(t.dtype());
  for (int64_t i = 0; i < rows; ++i)
    std::memcpy(static_cast<unsigned char*>(out.raw()) + i * n * es,
                static_cast<const unsigned char*>(t.raw()) + (i * cols + c0) * es, static_cast<size_t>(n) * es);
  return out;
}

}  // namespace

size_t split_packed_projection(ir::Graph& graph) {
  std::vector<Split> splits;
  {
    const GraphIndex ix(graph);
    for (const ir::Node& n : graph.nodes) {
      Split s;
      if (match_at(graph, ix, n, &s)) splits.push_back(std::move(s));
    }
  }
  if (splits.empty()) return 0;
  std::vector<std::string> erase;
  for (const Split& s : splits) {
    erase.push_back(s.matmul);
    if (!s.add.empty()) erase.push_back(s.add);
    erase.push_back(s.reshape);
    std::vector<int64_t> shape(static_cast<size_t>(s.rank - 2), 0);
    shape.push_back(1);
    shape.push_back(s.e);
    for (const Part& part : s.parts) {
      erase.push_back(part.slice);
      const std::string p = part.out + "/part";
      graph.constants[p + "_w"] = columns(graph.constants.at(s.w), part.index * s.e, s.e);
      graph.constants[p + "_shape"] = Tensor::from_vector(shape, DType::kInt64, {static_cast<int64_t>(shape.size())});
      const std::string mm = s.bias.empty() ? p + "_linear" : p + "_matmul";
      graph.nodes.push_back(make_node(p + "_matmul", "MatMul", {s.a, p + "_w"}, mm));
      if (!s.bias.empty()) {
        graph.constants[p + "_bias"] = columns(graph.constants.at(s.bias), part.index * s.e, s.e);
        graph.nodes.push_back(make_node(p + "_bias", "Add", {mm, p + "_bias"}, p + "_linear"));
      }
      graph.nodes.push_back(make_node(p + "_reshape", "Reshape", {p + "_linear", p + "_shape"}, part.out));
    }
  }
  erase_nodes(graph, erase);
  graph.topo_sort();
  KILNRT_LOG(kDebug, "split " << splits.size() << " packed projection(s) into one GEMM per part");
  return splits.size();
}

}  // namespace kilnrt::passes
