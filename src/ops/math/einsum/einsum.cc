// Einsum (opset 12): any number of operands, explicit ("ij,jk->ik") or implicit output (labels seen once, in
// alphabetical order), repeated labels within an operand (diagonals), and "..." (broadcast batch dims). A direct
// reference loop over every label's range, accumulated in double.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/common/double_io.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {
namespace {

struct Parsed {
  std::vector<std::string> inputs;  // one label per dim; ellipsis dims use labels 'A'.. (uppercase reserved below)
  std::string output;
};

std::string strip(const std::string& s) {
  std::string r;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) r += c;
  return r;
}

// Splits the equation; expands "..." into ellipsis labels given each operand's rank (nullptr ranks: count unknown).
Parsed parse(const ir::Node& node, const std::vector<int64_t>& ranks) {
  const std::string eq = strip(node.attr_string("equation"));
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  KILNRT_CHECK(terms.size() == ranks.size(), kInvalidModel, node.describe(),
               "equation '" << eq << "' has " << terms.size() << " operands, the node " << ranks.size());
  int64_t ell = 0;
  Parsed p;
  for (size_t i = 0; i < terms.size(); ++i) {
    const size_t dots = terms[i].find("...");
    const int64_t letters = static_cast<int64_t>(terms[i].size()) - (dots == std::string::npos ? 0 : 3);
    if (dots != std::string::npos) ell = std::max(ell, ranks[i] - letters);
  }
  KILNRT_CHECK(ell <= 26, kUnsupported, node.describe(), "too many ellipsis dims");
  auto expand = [&](const std::string& t, int64_t rank) {
    const size_t dots = t.find("...");
    if (dots == std::string::npos) return t;
    const int64_t n = rank - (static_cast<int64_t>(t.size()) - 3);
    std::string e;
    for (int64_t k = ell - n; k < ell; ++k) e += static_cast<char>('A' + k);
    return t.substr(0, dots) + e + t.substr(dots + 3);
  };
  for (size_t i = 0; i < terms.size(); ++i) {
    p.inputs.push_back(expand(terms[i], ranks[i]));
    KILNRT_CHECK(static_cast<int64_t>(p.inputs.back().size()) == ranks[i], kInvalidArgument, node.describe(),
                 "operand " << i << " has rank " << ranks[i] << ", the equation term '" << terms[i] << "' does not");
  }
  if (arrow != std::string::npos) {
    p.output = expand(eq.substr(arrow + 2), ell + static_cast<int64_t>(eq.size() - arrow - 2) -
                                                (eq.find("...", arrow) != std::string::npos ? 3 : 0));
  } else {
    std::map<char, int> count;
    for (const auto& t : p.inputs)
      for (char c : t) ++count[c];
    for (int64_t k = 0; k < ell; ++k) p.output += static_cast<char>('A' + k);
    for (const auto& [c, n] : count)
      if (n == 1 && std::islower(static_cast<unsigned char>(c))) p.output += c;
  }
  return p;
}

void einsum_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) ranks.push_back(ctx.input(i).rank());
  const Parsed p = parse(node, ranks);
  std::map<char, int64_t> size;
  for (size_t i = 0; i < p.inputs.size(); ++i)
    for (size_t d = 0; d < p.inputs[i].size(); ++d) {
      const char c = p.inputs[i][d];
      const int64_t s = ctx.input(i).shape()[d];
      auto it = size.find(c);
      if (it == size.end() || it->second == 1)
        size[c] = s;
      else
        KILNRT_CHECK(s == it->second || s == 1, kInvalidArgument, node.describe(),
                     "label '" << c << "' has sizes " << it->second << " and " << s);
    }
  std::vector<char> labels;
  for (const auto& [c, s] : size) labels.push_back(c);
  auto pos = [&](char c) { return static_cast<size_t>(std::find(labels.begin(), labels.end(), c) - labels.begin()); };
  // Strides of each operand per label (0 for broadcast size-1 dims; summed for repeated labels = diagonal).
  std::vector<std::vector<double>> vals;
  std::vector<std::vector<int64_t>> strides;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const Tensor& t = ctx.input(i);
    vals.push_back(tensor_to_doubles(t, node));
    std::vector<int64_t> st(labels.size(), 0);
    int64_t s = 1;
    for (size_t d = p.inputs[i].size(); d-- > 0;) {
      if (t.shape()[d] != 1) st[pos(p.inputs[i][d])] += s;
      s *= t.shape()[d];
    }
    strides.push_back(st);
  }
  Shape out_shape;
  std::vector<int64_t> out_st(labels.size(), 0);
  for (char c : p.output) {
    KILNRT_CHECK(size.count(c), kInvalidModel, node.describe(),
                 "Einsum: output label '" << c << "' does not appear in any input term");
    out_shape.push_back(size.at(c));
  }
  {
    int64_t s = 1;
    for (size_t d = p.output.size(); d-- > 0;) {
      out_st[pos(p.output[d])] = s;
      s *= out_shape[d];
    }
  }
  int64_t total = 1, out_total = 1;
  for (char c : labels) total *= size[c];
  for (int64_t d : out_shape) out_total *= d;
  std::vector<double> out(static_cast<size_t>(out_total), 0.0);
  std::vector<int64_t> idx(labels.size(), 0);
  for (int64_t it = 0; it < total; ++it) {
    double prod = 1;
    for (size_t i = 0; i < vals.size(); ++i) {
      int64_t off = 0;
      for (size_t l = 0; l < labels.size(); ++l) off += idx[l] * strides[i][l];
      prod *= vals[i][static_cast<size_t>(off)];
    }
    int64_t o = 0;
    for (size_t l = 0; l < labels.size(); ++l) o += idx[l] * out_st[l];
    out[static_cast<size_t>(o)] += prod;
    for (size_t l = labels.size(); l-- > 0;) {
      if (++idx[l] < size[labels[l]]) break;
      idx[l] = 0;
    }
  }
  ctx.outputs[0] = tensor_from_doubles(out, ctx.input(0).dtype(), out_shape);
}

void infer_einsum(ShapeContext& ctx) {
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.input(i).has_shape) {
      ctx.set_output_rank_unknown(0, ctx.input(0).dtype);
      return;
    }
    ranks.push_back(static_cast<int64_t>(ctx.input(i).shape.size()));
  }
  const Parsed p = parse(ctx.node, ranks);
  ir::SymShape out;
  for (char c : p.output) {
    ir::Dim d;
    for (size_t i = 0; i < p.inputs.size() && !d.known(); ++i)
      for (size_t k = 0; k < p.inputs[i].size(); ++k)
        if (p.inputs[i][k] == c && !(ctx.input(i).shape[k].known() && ctx.input(i).shape[k].value == 1 &&
                                     std::isupper(static_cast<unsigned char>(c))))
          d = ctx.input(i).shape[k];
    out.push_back(d);
  }
  ctx.set_output(0, ctx.input(0).dtype, out);
}

KILNRT_REGISTER_OP(OpSchema{"",
                            "Einsum",
                            12,
                            1000,
                            infer_einsum,
                            einsum_cpu,
                            {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt32, DType::kInt64},
                            "Einstein summation: explicit/implicit output, diagonals, ellipsis"});

}  // namespace
}  // namespace kilnrt::ops
