// See simplify_constants.h.
#include "passes/simplify_constants.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/logging.h"
#include "passes/constant_folding.h"
#include "passes/fusion_control.h"
#include "passes/pattern_util.h"

namespace kilnrt::passes {
namespace {

bool float_type(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat64;
}

// `t` seen along `axis` as [outer][n][inner bytes].
struct SliceLayout {
  size_t outer = 1, n = 1, inner = 1;
};
SliceLayout slice_layout(const Tensor& t, size_t axis) {
  const Shape& s = t.shape();
  SliceLayout l;
  l.inner = dtype_size(t.dtype());
  for (size_t d = axis + 1; d < s.size(); ++d) l.inner *= static_cast<size_t>(s[d]);
  for (size_t d = 0; d < axis; ++d) l.outer *= static_cast<size_t>(s[d]);
  l.n = static_cast<size_t>(s[axis]);
  return l;
}

// Whether every slice of `t` along `axis` equals slice 0 (bytewise).
bool equal_along(const Tensor& t, size_t axis) {
  const SliceLayout l = slice_layout(t, axis);
  const auto* p = static_cast<const unsigned char*>(t.raw());
  for (size_t o = 0; o < l.outer; ++o) {
    const unsigned char* first = p + o * l.n * l.inner;
    for (size_t i = 1; i < l.n; ++i)
      if (std::memcmp(first, first + i * l.inner, l.inner) != 0) return false;
  }
  return true;
}

// Slice 0 of `t` along `axis` (the axis kept with size 1).
Tensor first_slice(const Tensor& t, size_t axis) {
  const SliceLayout l = slice_layout(t, axis);
  Shape s = t.shape();
  s[axis] = 1;
  Tensor out = Tensor::empty(t.dtype(), s);
  const auto* src = static_cast<const unsigned char*>(t.raw());
  auto* dst = static_cast<unsigned char*>(out.raw());
  for (size_t o = 0; o < l.outer; ++o) std::memcpy(dst + o * l.inner, src + o * l.n * l.inner, l.inner);
  return out;
}

bool binary_arith(const ir::Node& n) {
  return n.domain.empty() && n.inputs.size() == 2 && n.outputs.size() == 1 &&
         (n.op_type == "Add" || n.op_type == "Sub" || n.op_type == "Mul" || n.op_type == "Div");
}

}  // namespace

size_t narrow_broadcast_constants(ir::Graph& graph) {
  if (!fusion_enabled("constants")) return 0;
  size_t changed = 0;
  for (ir::Node& n : graph.nodes) {
    if (!binary_arith(n)) continue;
    for (int side = 0; side < 2; ++side) {
      const std::string& c = n.inputs[side];
      const std::string& other = n.inputs[1 - side];
      auto it = graph.constants.find(c);
      if (it == graph.constants.end() || graph.is_constant(other) || !float_type(it->second.dtype())) continue;
      const Tensor& t = it->second;
      const ir::SymShape* os = shape_of(graph, other);
      if (!os || t.shape().size() < 2 || t.numel() < 2) continue;
      const size_t rank = std::max(t.shape().size(), os->size());
      const size_t cpad = rank - t.shape().size(), opad = rank - os->size();
      Tensor narrowed;
      const Tensor* cur = &t;
      // Leading axes only: vectors along the last axis (LayerNorm scales, biases) keep their shape for the patterns.
      for (size_t a = 0; a + 1 < t.shape().size(); ++a) {
        const int64_t dim = cur->shape()[a];
        if (dim < 2) continue;
        const size_t ra = a + cpad;  // the axis in the broadcast result
        if (ra < opad) continue;     // the other operand lacks it: size 1 here would shrink the result
        const ir::Dim& od = (*os)[ra - opad];
        if (!od.known() || od.value != dim || !equal_along(*cur, a)) continue;
        narrowed = first_slice(*cur, a);
        cur = &narrowed;
      }
      if (cur == &t) continue;
      KILNRT_LOG(kDebug, "constant '" << c << "' of " << n.describe() << " narrowed to "
                                      << shape_to_string(narrowed.shape()) << " (equal slices)");
      n.inputs[side] = add_constant(graph, c + "/narrowed", std::move(narrowed));
      ++changed;
    }
  }
  return changed;
}

size_t combine_constant_adds(ir::Graph& graph) {
  if (!fusion_enabled("constants")) return 0;
  std::vector<ir::Node> added;
  size_t changed = 0;
  {
    const GraphIndex ix(graph);
    for (ir::Node& outer : graph.nodes) {
      if (!binary_arith(outer) || outer.op_type != "Add") continue;
      for (int side = 0; side < 2; ++side) {
        const std::string c2 = outer.inputs[1 - side];
        const ir::Node* inner = ix.producer(outer.inputs[side]);
        if (!graph.is_constant(c2) || !inner || !binary_arith(*inner) || inner->op_type != "Add" ||
            ix.sole_consumer(inner->outputs[0]) != &outer)
          continue;
        int ci = graph.is_constant(inner->inputs[0]) ? 0 : graph.is_constant(inner->inputs[1]) ? 1 : -1;
        if (ci < 0 || graph.is_constant(inner->inputs[1 - ci])) continue;
        const Tensor& t1 = graph.constants.at(inner->inputs[ci]);
        const Tensor& t2 = graph.constants.at(c2);
        if (t1.dtype() != t2.dtype() || !float_type(t1.dtype())) continue;
        const std::string x = inner->inputs[1 - ci];
        ir::Node sum =
            make_node(outer.name + "/constant_sum", "Add", {inner->inputs[ci], c2}, outer.name + "/constant_sum");
        outer.inputs = {x, sum.outputs[0]};
        added.push_back(std::move(sum));
        ++changed;
        break;
      }
    }
  }
  if (changed == 0) return 0;
  for (ir::Node& n : added) graph.nodes.push_back(std::move(n));
  graph.topo_sort();
  return changed;
}

size_t gathernd_identity_to_reshape(ir::Graph& graph) {
  if (!fusion_enabled("constants")) return 0;
  size_t changed = 0;
  for (ir::Node& n : graph.nodes) {
    if (!is_op(&n, "GatherND") || n.inputs.size() != 2 || n.attr_int("batch_dims", 0) != 0) continue;
    const ir::SymShape* ds = shape_of(graph, n.inputs[0]);
    auto it = graph.constants.find(n.inputs[1]);
    if (!ds || !ir::sym_shape_known(*ds) || ds->empty() || it == graph.constants.end()) continue;
    const Shape& is = it->second.shape();
    const std::optional<std::vector<int64_t>> idx = int_constant(graph, n.inputs[1]);
    const size_t r = ds->size();
    if (!idx || is.empty() || is.back() != static_cast<int64_t>(r)) continue;
    const Shape data_shape = ir::sym_shape_to_shape(*ds);
    int64_t numel = 1;
    for (int64_t d : data_shape) numel *= d;
    if (numel == 0 || static_cast<int64_t>(idx->size()) != numel * static_cast<int64_t>(r)) continue;
    // Tuple k must be the row-major coordinates of element k.
    bool identity = true;
    std::vector<int64_t> coord(r, 0);
    for (int64_t k = 0; k < numel && identity; ++k) {
      for (size_t d = 0; d < r; ++d) identity &= (*idx)[static_cast<size_t>(k) * r + d] == coord[d];
      for (size_t d = r; d-- > 0;) {
        if (++coord[d] < data_shape[d]) break;
        coord[d] = 0;
      }
    }
    if (!identity) continue;
    const std::vector<int64_t> out_shape(is.begin(), is.end() - 1);
    const Shape rank{static_cast<int64_t>(out_shape.size())};
    const std::string shape_name =
        add_constant(graph, n.name + "/shape", Tensor::from_vector(out_shape, DType::kInt64, rank));
    KILNRT_LOG(kDebug, n.describe() << " lists its data in order: a Reshape");
    n.op_type = "Reshape";
    n.attrs.clear();
    n.inputs[1] = shape_name;
    ++changed;
  }
  return changed;
}

size_t simplify_constants(ir::Graph& graph) {
  const size_t narrowed = narrow_broadcast_constants(graph);
  const size_t combined = combine_constant_adds(graph);
  const size_t reshaped = gathernd_identity_to_reshape(graph);
  if (combined > 0) fold_constants(graph);  // the sums
  const size_t narrowed_sums = combined > 0 ? narrow_broadcast_constants(graph) : 0;
  const size_t total = narrowed + combined + reshaped + narrowed_sums;
  if (total > 0)
    KILNRT_LOG(kInfo, "constants: " << narrowed + narrowed_sums << " narrowed to their distinct slices, " << combined
                                    << " constant add(s) combined, " << reshaped << " identity GatherND(s) -> Reshape");
  return total;
}

}  // namespace kilnrt::passes
