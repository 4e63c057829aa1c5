// The CUDA layer of Einsum: a direct loop kernel (float32 / float64, 1 to 3 inputs, ellipsis and diagonals); the
// equation is parsed on the host into output / summed labels and per-input strides.
#include <algorithm>
#include <map>

#include "ops/cuda/cuda_layer.h"
#include "ops/math/einsum/cuda/einsum_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;
namespace x = kilnrt::cuda::kernels;

constexpr int kEllipsisLabel = 1000;  // ellipsis dims get labels 1000 + j (right-aligned)

class EinsumLayer final : public CudaLayer {
 public:
  explicit EinsumLayer(const ir::Node& n) : name_(n.describe()) {
    for (char c : n.attr_string("equation"))
      if (c != ' ') eq_ += c;
  }
  std::string tactic() const override { return "kernel:einsum-direct"; }
  void enqueue(LayerLaunch& l) override {
    const size_t arrow = eq_.find("->");
    const std::string lhs = eq_.substr(0, arrow);
    std::vector<std::string> terms(1);
    for (char c : lhs) {
      if (c == ',')
        terms.emplace_back();
      else
        terms.back() += c;
    }
    const int n_in = static_cast<int>(l.inputs.size());
    KILNRT_CHECK(
        static_cast<int>(terms.size()) == n_in && n_in >= 1 && n_in <= x::kEinsumInputs, kUnsupported, name_,
        "Einsum '" << eq_ << "' with " << n_in << " inputs (the CUDA layer takes 1 to " << x::kEinsumInputs << ")");
    // Ellipsis ranks first (they align right across inputs).
    int ell = 0;
    std::vector<int> ell_rank(n_in, 0);
    for (int i = 0; i < n_in; ++i) {
      const size_t dots = terms[i].find("...");
      const int letters = static_cast<int>(terms[i].size()) - (dots == std::string::npos ? 0 : 3);
      ell_rank[i] = dots == std::string::npos ? 0 : static_cast<int>(l.inputs[i].shape.size()) - letters;
      KILNRT_CHECK(
          ell_rank[i] >= 0 && (dots != std::string::npos || letters == static_cast<int>(l.inputs[i].shape.size())),
          kInvalidArgument, name_, "term '" << terms[i] << "' does not match input " << i << "'s rank");
      ell = std::max(ell, ell_rank[i]);
    }
    auto labels_of = [&](const std::string& t, int erank) {
      std::vector<int> out;
      for (size_t c = 0; c < t.size(); ++c) {
        if (t.compare(c, 3, "...") == 0) {
          for (int j = 0; j < erank; ++j) out.push_back(kEllipsisLabel + (ell - erank) + j);
          c += 2;
        } else {
          out.push_back(static_cast<unsigned char>(t[c]));
        }
      }
      return out;
    };
    std::vector<std::vector<int>> in_labels(n_in);
    std::map<int, int64_t> dim;
    std::map<int, int> count;
    for (int i = 0; i < n_in; ++i) {
      in_labels[i] = labels_of(terms[i], ell_rank[i]);
      for (size_t a = 0; a < in_labels[i].size(); ++a) {
        const int64_t d = l.inputs[i].shape[a];
        int64_t& cur = dim.emplace(in_labels[i][a], d).first->second;
        if (cur == 1) cur = d;
        ++count[in_labels[i][a]];
      }
    }
    std::vector<int> out_labels;
    if (arrow != std::string::npos) {
      out_labels = labels_of(eq_.substr(arrow + 2), ell);
    } else {
      for (int j = 0; j < ell; ++j) out_labels.push_back(kEllipsisLabel + j);
      for (const auto& [lab, c] : count)
        if (lab < kEllipsisLabel && c == 1) out_labels.push_back(lab);
    }
    std::vector<int> sum_labels;
    for (const auto& [lab, d] : dim)
      if (std::find(out_labels.begin(), out_labels.end(), lab) == out_labels.end()) sum_labels.push_back(lab);
    KILNRT_CHECK(
        out_labels.size() <= static_cast<size_t>(k::kMaxDims) && sum_labels.size() <= static_cast<size_t>(k::kMaxDims),
        kUnsupported, name_, "Einsum '" << eq_ << "' has too many labels for the CUDA layer");
    x::EinsumPlan p;
    p.n_inputs = n_in;
    p.out_rank = static_cast<int>(out_labels.size());
    p.sum_rank = static_cast<int>(sum_labels.size());
    for (int d = 0; d < p.out_rank; ++d) {
      KILNRT_CHECK(dim.count(out_labels[d]), kInvalidArgument, name_, "output label not in any input");
      p.out_dims[d] = dim[out_labels[d]];
    }
    for (int d = 0; d < p.sum_rank; ++d) p.sum_dims[d] = dim[sum_labels[d]];
    const void* ptrs[x::kEinsumInputs] = {};
    for (int i = 0; i < n_in; ++i) {
      ptrs[i] = l.inputs[i].data;
      const Shape& s = l.inputs[i].shape;
      int64_t stride = 1;
      for (int a = static_cast<int>(s.size()) - 1; a >= 0; --a) {
        const int lab = in_labels[i][a];
        const int64_t st = (s[a] == 1 && dim[lab] != 1) ? 0 : stride;
        const auto o = std::find(out_labels.begin(), out_labels.end(), lab);
        if (o != out_labels.end())
          p.out_strides[i][o - out_labels.begin()] += st;
        else
          p.sum_strides[i][std::find(sum_labels.begin(), sum_labels.end(), lab) - sum_labels.begin()] += st;
        stride *= s[a];
      }
    }
    const int code = l.outputs[0].dtype == DType::kFloat64 ? 6 : 0;
    check_launch(x::einsum(ptrs, l.outputs[0].data, p, code, l.stream), name_, "einsum");
  }

 private:
  std::string name_;
  std::string eq_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

KILNRT_REGISTER_CUDA_LAYER(
    {"Einsum"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (n.inputs.empty() || n.inputs.size() > static_cast<size_t>(x::kEinsumInputs))
        return "the CUDA Einsum takes 1 to 3 inputs";
      const DType t = value_dtype(g, n.inputs[0]);
      if (t != DType::kFloat32 && t != DType::kFloat64) return "the CUDA Einsum takes float32 / float64";
      for (const std::string& in : n.inputs)
        if (value_dtype(g, in) != t) return "mixed input dtypes";
      return "";
    },
    factory<EinsumLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
